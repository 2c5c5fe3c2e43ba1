/*
 * The node a ps-lite program is (ps-lite's Postoffice), over psb: DMLC_ROLE says which.
 *
 * worker     registers with the job's scheduler (DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT)
 *            through a libpsb session, which gives its rank, the servers and their key
 *            ranges. Every KVWorker of the process sends through that one session (one
 *            rank, as ps-lite's one van), under one lock; a thread of the node moves its
 *            requests along and runs their callbacks, as ps-lite's receiving thread does.
 * server     psb's servers hold the store and sum as ps-lite's default handler does: this
 *            process starts psb-ksrv registered with the scheduler and waits for it in
 *            Finalize (the job's end ends it). With PSB_SERVER_HANDLER=1 (scripts/local.sh
 *            --handler) the process is the server itself, over libpsb's server API
 *            (psb/server.h): every request goes to the KVServer's request handle, run on a
 *            thread of the node as ps-lite runs it, and is answered by its Response.
 * scheduler  starts psb's scheduler (psb-ksrv --scheduler-only) on DMLC_PS_ROOT_URI:PORT
 *            for DMLC_NUM_SERVER servers and DMLC_NUM_WORKER workers, and waits for the job's
 *            end in Finalize.
 *
 * psb-ksrv is PSB_KSRV, or the one installed with this header, or psb-ksrv on the PATH.
 */
#ifndef PSB_PSLITE_POSTOFFICE_H
#define PSB_PSLITE_POSTOFFICE_H

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <string>
#include <unordered_map>
#include <vector>

#include <psb/client.h>
#include <psb/server.h>

#include "ps/base.h"
#include "ps/internal/psb_config.h"
#include "ps/range.h"

namespace ps {

/* ps-lite's node roles (BytePS's line adds JOINT: a worker and a server in one process). */
struct Node {
	enum Role { SERVER, WORKER, SCHEDULER, JOINT };
};

/* The environment, with values a program may set before Start (Environment::Init). */
class Environment {
public:
	static Environment *Get() { return instance(nullptr); }
	static Environment *Init(const std::unordered_map<std::string, std::string> &envs)
	{
		return instance(&envs);
	}
	/* A variable's value, or nullptr. */
	const char *find(const char *k)
	{
		std::string key(k);
		auto it = kvs_.find(key);

		return it == kvs_.end() ? std::getenv(k) : it->second.c_str();
	}
	void set(const char *k, const std::string &v) { kvs_[k] = v; }
private:
	static Environment *instance(const std::unordered_map<std::string, std::string> *envs)
	{
		static Environment e;

		if (envs != nullptr)
			e.kvs_ = *envs;
		return &e;
	}
	std::unordered_map<std::string, std::string> kvs_;
};

inline Node::Role
GetRole(const std::string &role)
{
	if (role == "worker")
		return Node::WORKER;
	if (role == "server")
		return Node::SERVER;
	if (role == "scheduler")
		return Node::SCHEDULER;
	if (role == "joint")
		return Node::JOINT;
	LOG(FATAL) << "DMLC_ROLE '" << role << "': expected worker, server or scheduler";
	return Node::WORKER;
}

class Postoffice {
public:
	/* The process's node. */
	static Postoffice *Get() { static Postoffice po; return &po; }
	/* BytePS's line: one node a role and instance; psb has one a process. */
	static Postoffice *GetWorker(int index = 0) { (void)index; return Get(); }
	static Postoffice *GetServer(int index = 0) { (void)index; return Get(); }
	static Postoffice *GetScheduler() { return Get(); }
	static void Init(Node::Role role) { Get()->set_role(role); }

	/* ps-lite's node ids: the scheduler 1, server r 8 + 2r, worker r 9 + 2r. */
	static int WorkerRankToID(int rank) { return rank * 2 + 9; }
	static int ServerRankToID(int rank) { return rank * 2 + 8; }
	static int IDtoRank(int id) { return std::max((id - 8) / 2, 0); }

	/* ps-lite's Start: the role from DMLC_ROLE. */
	void Start(int customer_id, const char *argv0, bool do_barrier)
	{
		const char *r = Environment::Get()->find("DMLC_ROLE");

		CHECK(r != nullptr) << "DMLC_ROLE is not set: worker, server or scheduler "
				       "(scripts/local.sh sets it)";
		Start(customer_id, GetRole(r), -1, do_barrier, argv0);
	}
	/* BytePS's: the role given; rank is the scheduler's to give (ignored). */
	void Start(int customer_id, Node::Role role, int rank, bool do_barrier, const char *argv0)
	{
		std::lock_guard<std::recursive_mutex> lk(mu_);

		(void)rank;
		(void)argv0;
		customers_.push_back(customer_id);
		if (started_)
			return;
		started_ = true;
		set_role(role);
		read_env();
		if (is_worker_)
			start_worker(do_barrier);
		if (is_server_ && handler_mode_)
			start_handler_server();
		else if (is_server_)
			start_child("server");
		if (is_scheduler_)
			start_child("scheduler");
	}
	/* ps-lite's Finalize: a worker tells the scheduler it finished; others wait for the end. */
	void Finalize(int customer_id, bool do_barrier = true)
	{
		std::unique_lock<std::recursive_mutex> lk(mu_);

		(void)do_barrier;
		customers_.erase(std::remove(customers_.begin(), customers_.end(), customer_id),
				 customers_.end());
		if (!customers_.empty() || !started_)
			return;
		if (session_ != nullptr) {
			int rc;

			stop_progress(lk);
			rc = psbc_wait_all(session_);
			if (rc != 0)
				LOG(WARNING) << "psb: Finalize: a request failed: " << psbc_errmsg(session_);
			rc = psbc_finalize(session_);

			if (rc != 0)
				LOG(WARNING) << "psb: Finalize: " << psbc_errmsg(session_);
			psbc_close(session_);
			session_ = nullptr;
		}
		/* the job's end (the scheduler says every worker finished) ends the server */
		stop_server(lk, false);
		if (child_ > 0) {
			int st = 0;

			lk.unlock();
			waitpid(child_, &st, 0);
			lk.lock();
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
				LOG(ERROR) << "psb: " << child_what_ << " (psb-ksrv) ended with status "
					   << st;
			child_ = 0;
		}
		for (auto it = exit_cbs_.rbegin(); it != exit_cbs_.rend(); ++it)
			(*it)();
		exit_cbs_.clear();
		started_ = false;
	}
	void RegisterExitCallback(const std::function<void()> &cb)
	{
		std::lock_guard<std::recursive_mutex> lk(mu_);

		exit_cbs_.push_back(cb);
	}
	/* ps-lite's arithmetic: server i holds [kMaxKey / n * i, kMaxKey / n * (i + 1)). */
	const std::vector<Range> &GetServerKeyRanges()
	{
		std::lock_guard<std::recursive_mutex> lk(mu_);

		if (ranges_.empty()) {
			int n = num_servers_ > 0 ? num_servers_ : 1;

			for (int i = 0; i < n; ++i)
				ranges_.push_back(Range(kMaxKey / n * i, kMaxKey / n * (i + 1)));
		}
		return ranges_;
	}
	/* A barrier of the workers (psb's servers and scheduler take part in none). */
	void Barrier(int customer_id, int node_group)
	{
		std::lock_guard<std::recursive_mutex> lk(mu_);

		(void)customer_id;
		if (!is_worker_ || session_ == nullptr || (node_group & kWorkerGroup) == 0)
			return;
		int rc = psbc_barrier(session_, kWorkerGroup);

		CHECK_EQ(rc, 0) << "psb: barrier: " << psbc_errmsg(session_);
	}

	int num_workers() const { return num_workers_; }
	int num_servers() const { return num_servers_; }
	int my_rank() const { return my_rank_; }
	int group_size() const { return group_size_; }
	int num_worker_instances() const { return num_workers_ * group_size_; }
	int num_server_instances() const { return num_servers_ * group_size_; }
	bool is_worker() const { return is_worker_; }
	bool is_server() const { return is_server_; }
	bool is_scheduler() const { return is_scheduler_; }
	int verbose() const { return internal::verbose_level(); }
	std::string role_str() const
	{
		return is_worker_ ? "worker" : is_server_ ? "server" : "scheduler";
	}

	/* psb: the worker's session, the lock every use of it takes, and its thread. */
	psbc_t *psb_session() const { return session_; }
	std::recursive_mutex &psb_lock() { return mu_; }
	/* Completions are announced here (with the lock held while they change state). */
	std::condition_variable_any &psb_done() { return done_; }
	/* An operation started (the lock held): the thread moves it along. */
	void psb_started()
	{
		inflight_++;
		if (!progress_.joinable()) {
			stop_ = false;
			progress_ = std::thread([this] { progress_loop(); });
		}
		wake_.notify_all();
	}
	/* An operation ended (the lock held, from its callback). */
	void psb_ended()
	{
		inflight_--;
		done_.notify_all();
	}
	const std::string &psb_servers() const { return servers_; }
	bool psb_sync() const { return sync_; }

	/* psb, handler mode: the node's server, and the one handler its requests go to. */
	using PsbHandler = std::function<void(const psbs_request &r)>;
	bool psb_handler_mode() const { return handler_mode_ && is_server_; }
	psbs_t *psb_server() const { return server_; }
	/* The KVServer's handler (empty: none now); requests that came before wait for it. */
	void psb_set_handler(const void *owner, const PsbHandler &h)
	{
		std::lock_guard<std::mutex> lk(srv_mu_);

		CHECK(!h || handler_owner_ == nullptr || handler_owner_ == owner)
			<< "psb: a second KVServer with a request handle in this process; psb runs "
			   "one a server process";
		if (!h && handler_owner_ != owner)
			return;
		handler_ = h;
		handler_owner_ = h ? owner : nullptr;
	}

	~Postoffice()
	{
		std::unique_lock<std::recursive_mutex> lk(mu_);

		stop_progress(lk);
		if (session_ != nullptr)
			psbc_close(session_);
		session_ = nullptr;
		/* a server process that never called Finalize: stop receiving, close */
		stop_server(lk, true);
	}

private:
	Postoffice() {}

	void set_role(Node::Role role)
	{
		is_worker_ = role == Node::WORKER || role == Node::JOINT;
		is_server_ = role == Node::SERVER || role == Node::JOINT;
		is_scheduler_ = role == Node::SCHEDULER;
	}

	static int env_int(const char *name, int def)
	{
		const char *v = Environment::Get()->find(name);

		return v != nullptr && *v != '\0' ? std::atoi(v) : def;
	}

	void read_env()
	{
		num_workers_ = env_int("DMLC_NUM_WORKER", 0);
		num_servers_ = env_int("DMLC_NUM_SERVER", 0);
		group_size_ = env_int("DMLC_GROUP_SIZE", 1);
		CHECK_EQ(group_size_, 1) << "psb: DMLC_GROUP_SIZE " << group_size_
					 << ": one worker instance a process (use one process each)";
		const char *s = Environment::Get()->find("PSB_SYNC");

		sync_ = s != nullptr && std::atoi(s) != 0;
		s = Environment::Get()->find("PSB_SERVER_HANDLER");
		handler_mode_ = s != nullptr && std::atoi(s) != 0;
	}

	/*
	 * Handler mode: this process is a server of the job, registered with the scheduler
	 * through libpsb; a thread receives until the job ends, handing each request to the
	 * KVServer's handler.
	 */
	void start_handler_server()
	{
		struct psbs_opts o;
		char err[512];

		psbs_opts_init(&o);
		o.connect_timeout_ms = static_cast<unsigned int>(env_int("PSB_CONNECT_TIMEOUT_MS", 0));
		int rc = psbs_open(&server_, &o, on_psb_request, this, err, sizeof(err));

		CHECK_EQ(rc, 0) << "psb: this server cannot join the job: " << err;
		my_rank_ = psbs_rank(server_);
		num_workers_ = psbs_num_workers(server_);
		num_servers_ = psbs_num_servers(server_);
		PS_VLOG(1) << "psb: server rank " << my_rank_ << " of " << num_servers_
			   << ", its requests to this program's handler, port " << psbs_port(server_);
		server_thread_ = std::thread([this] { serve_loop(); });
	}

	/* A request whole: to the handler, or kept (copied) until there is one. */
	static void on_psb_request(psbs_t *s, const psbs_request *r, void *arg)
	{
		Postoffice *po = static_cast<Postoffice *>(arg);
		PsbHandler h;

		(void)s;
		{
			std::lock_guard<std::mutex> lk(po->srv_mu_);

			if (!po->handler_ || !po->early_.empty()) {
				/* bounded: the server's budgets do not cover these copies */
				if (po->early_.size() >= kEarlyMax ||
				    po->early_bytes_ + r->nvals * sizeof(float) > kEarlyBytes) {
					if (po->early_dropped_++ == 0)
						LOG(WARNING) << "psb: more than " << kEarlyMax
							<< " requests or " << (kEarlyBytes >> 20)
							<< " MiB before the server's KVServer set a request "
							   "handle: the rest are not kept (their workers "
							   "time out)";
					return;
				}
				po->early_bytes_ += r->nvals * sizeof(float);
				po->early_.emplace_back(*r, std::vector<float>(r->vals,
								r->vals + r->nvals));
				po->early_.back().first.vals = po->early_.back().second.data();
				return;
			}
			h = po->handler_;
		}
		h(*r);
	}

	/* Handler mode: the server's thread ended (now, or with the job), the server closed. */
	void stop_server(std::unique_lock<std::recursive_mutex> &lk, bool now)
	{
		if (server_ == nullptr)
			return;
		if (now)
			srv_stop_ = true;
		lk.unlock();
		if (server_thread_.joinable())
			server_thread_.join();
		lk.lock();
		psbs_close(server_);
		server_ = nullptr;
	}

	void serve_loop()
	{
		int rc;

		do {
			rc = psbs_poll(server_, 20);
			for (;;) {
				std::pair<psbs_request, std::vector<float>> e;
				PsbHandler h;
				{
					std::lock_guard<std::mutex> lk(srv_mu_);

					if (!handler_ || early_.empty())
						break;
					e = std::move(early_.front());
					early_.pop_front();
					early_bytes_ -= e.second.size() * sizeof(float);
					h = handler_;
				}
				e.first.vals = e.second.data();
				h(e.first);
			}
		} while (rc > 0 && !srv_stop_);
		if (rc < 0)
			LOG(ERROR) << "psb: the server stopped: " << psb_strerror(rc);
		std::lock_guard<std::mutex> lk(srv_mu_);

		if (!early_.empty())
			LOG(WARNING) << "psb: " << early_.size() << " request(s) never reached a "
				     << "request handle (no KVServer set one)";
	}

	void start_worker(bool do_barrier)
	{
		struct psbc_opts o;
		char err[512], addr[40];
		int rc, i, n;

		psbc_opts_init(&o);
		o.sync = sync_;
		o.connect_timeout_ms = static_cast<unsigned int>(env_int("PSB_CONNECT_TIMEOUT_MS", 0));
		rc = psbc_open(&session_, &o, err, sizeof(err));
		CHECK_EQ(rc, 0) << "psb: a worker cannot join the job: " << err;
		my_rank_ = psbc_rank(session_);
		num_workers_ = psbc_num_workers(session_);
		n = psbc_num_servers(session_);
		num_servers_ = n;
		servers_.clear();
		for (i = 0; i < n; ++i) {
			CHECK_EQ(psbc_server_address(session_, i, addr, sizeof(addr)), 0);
			servers_ += (i != 0 ? "," : "") + std::string(addr);
		}
		PS_VLOG(1) << "psb: worker rank " << my_rank_ << " of " << num_workers_ << ", "
			   << n << " server(s): " << servers_;
		if (do_barrier)
			Barrier(0, kWorkerGroup);
	}

	/* The address this node announces: DMLC_NODE_HOST, else the route's to the scheduler. */
	static std::string node_host(const char *uri, int port)
	{
		const char *h = Environment::Get()->find("DMLC_NODE_HOST");
		struct sockaddr_in sa, me;
		socklen_t len = sizeof(me);
		char buf[INET_ADDRSTRLEN] = "127.0.0.1";
		int fd;

		if (h != nullptr && *h != '\0')
			return h;
		std::memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		sa.sin_port = htons(static_cast<uint16_t>(port));
		if (inet_pton(AF_INET, uri, &sa.sin_addr) != 1)
			return buf;
		fd = socket(AF_INET, SOCK_DGRAM, 0);
		if (fd >= 0 && connect(fd, reinterpret_cast<struct sockaddr *>(&sa), sizeof(sa)) == 0 &&
		    getsockname(fd, reinterpret_cast<struct sockaddr *>(&me), &len) == 0)
			inet_ntop(AF_INET, &me.sin_addr, buf, sizeof(buf));
		if (fd >= 0)
			close(fd);
		return buf;
	}

	/* psb-ksrv as this node's server or scheduler, ended with the job. */
	void start_child(const char *what)
	{
		const char *uri = Environment::Get()->find("DMLC_PS_ROOT_URI");
		const char *port = Environment::Get()->find("DMLC_PS_ROOT_PORT");
		const char *ksrv = Environment::Get()->find("PSB_KSRV");
		std::vector<std::string> args;

		CHECK(uri != nullptr && port != nullptr)
			<< "psb: DMLC_PS_ROOT_URI and DMLC_PS_ROOT_PORT name the scheduler; not set";
		if (ksrv == nullptr || *ksrv == '\0')
			ksrv = access(PSB_PSLITE_KSRV, X_OK) == 0 ? PSB_PSLITE_KSRV : "psb-ksrv";
		args.push_back(ksrv);
		if (std::strcmp(what, "scheduler") == 0) {
			CHECK(num_workers_ > 0 && num_servers_ > 0)
				<< "psb: the scheduler needs DMLC_NUM_WORKER and DMLC_NUM_SERVER";
			args.insert(args.end(), { "--ip", uri, "--port", "0", "--scheduler-port", port,
				"--scheduler-only", "--num-servers", std::to_string(num_servers_),
				"--num-workers", std::to_string(num_workers_) });
		} else {
			args.insert(args.end(), { "--ip", node_host(uri, std::atoi(port)), "--port", "0",
				"--scheduler", std::string(uri) + ":" + port,
				sync_ ? "--sync" : "--async" });
		}
		if (internal::verbose_level() == 0)
			args.push_back("-q");
		child_what_ = what;
		child_ = fork();
		CHECK_GE(child_, 0) << "psb: fork: " << std::strerror(errno);
		if (child_ == 0) {
			std::vector<char *> argv;

			prctl(PR_SET_PDEATHSIG, SIGTERM);
			for (auto &a : args)
				argv.push_back(const_cast<char *>(a.c_str()));
			argv.push_back(nullptr);
			execvp(argv[0], argv.data());
			std::fprintf(stderr, "psb: cannot run %s for this %s: %s (set PSB_KSRV)\n",
				argv[0], what, std::strerror(errno));
			_exit(127);
		}
		PS_VLOG(1) << "psb: this " << what << " is psb-ksrv, pid " << child_;
	}

	/*
	 * Moves the session's requests along while any are in flight; between turns waits on
	 * what the session waits on (its socket, its servers' shared-memory rings).
	 */
	void progress_loop()
	{
		std::unique_lock<std::recursive_mutex> lk(mu_);

		while (!stop_) {
			if (inflight_ == 0) {
				wake_.wait(lk);
				continue;
			}
			psbc_progress(session_);
			pfd_.resize(1 + 2 * (size_t)std::max(psbc_num_servers(session_), 0));
			int ms = 1, n = psbc_wait_fds(session_, pfd_.data(), (int)pfd_.size(), &ms);

			if (n == 0)
				continue;	/* work there already */
			lk.unlock();
			if (n > 0)
				::poll(pfd_.data(), (nfds_t)n, ms);
			else
				::poll(nullptr, 0, 1);
			lk.lock();
		}
	}
	void stop_progress(std::unique_lock<std::recursive_mutex> &lk)
	{
		if (!progress_.joinable())
			return;
		stop_ = true;
		wake_.notify_all();
		lk.unlock();
		progress_.join();
		lk.lock();
	}

	std::recursive_mutex mu_;
	std::condition_variable_any wake_, done_;
	std::thread progress_;
	bool stop_ = false;
	long inflight_ = 0;
	bool started_ = false;
	bool is_worker_ = false, is_server_ = false, is_scheduler_ = false;
	bool sync_ = false;
	int num_workers_ = 0, num_servers_ = 0, my_rank_ = 0, group_size_ = 1;
	std::vector<int> customers_;
	std::vector<Range> ranges_;
	std::vector<std::function<void()>> exit_cbs_;
	psbc_t *session_ = nullptr;
	std::vector<struct pollfd> pfd_;	/* progress_loop's, for psbc_wait_fds */
	std::string servers_;
	bool handler_mode_ = false;
	psbs_t *server_ = nullptr;
	std::thread server_thread_;
	std::atomic<bool> srv_stop_{false};
	std::mutex srv_mu_;
	PsbHandler handler_;
	const void *handler_owner_ = nullptr;
	/* requests before a handle was set, kept at most this many and bytes */
	static constexpr size_t kEarlyMax = 65536;
	static constexpr size_t kEarlyBytes = size_t(256) << 20;
	std::deque<std::pair<psbs_request, std::vector<float>>> early_;
	size_t early_bytes_ = 0;
	unsigned long early_dropped_ = 0;
	pid_t child_ = 0;
	std::string child_what_;
};

} /* namespace ps */

#endif /* PSB_PSLITE_POSTOFFICE_H */
