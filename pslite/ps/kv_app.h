/*
 * ps-lite's key-value applications over psb: KVWorker pushes and pulls through the node's
 * libpsb session (ps/internal/postoffice.h); KVServer and KVServerDefaultHandle are there
 * for programs that make their servers, whose store psb's servers hold instead.
 *
 * Values: psb stores and sums float32. Val float goes as it is; Val of one byte (char,
 * int8_t, uint8_t) goes as the float32 its bytes make, so every length in those is a
 * multiple of 4 bytes (psb's servers sum them as floats). Other types are refused when a
 * KVWorker is made, with that said. lens count Val elements, as in ps-lite.
 *
 * Keys are sorted in ascending order, as ps-lite asks; psb splits them among the servers
 * by ps-lite's ranges (set_slicer's slicer is not used). cmd and priority reach no psb
 * server and are not used.
 *
 * A program's own KVServer request handle runs when the job asks for it (PSB_SERVER_HANDLER=1,
 * scripts/local.sh --handler): the program's server processes are then the servers, over
 * libpsb's server API. Each request it gets is one key (a worker's multi-key operation
 * reaches it key by key, in order), with that key's value in vals and its length in lens;
 * its Response, from the handler or later, from any thread, answers it.
 */
#ifndef PSB_PSLITE_KV_APP_H
#define PSB_PSLITE_KV_APP_H

#include <functional>
#include <memory>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <psb/client.h>

#include "ps/base.h"
#include "ps/internal/postoffice.h"
#include "ps/range.h"
#include "ps/sarray.h"

namespace ps {

template <typename Val>
struct KVPairs {
	SArray<Key> keys;
	SArray<Val> vals;
	SArray<int> lens;
	int priority = 0;
};

struct KVMeta {
	int cmd;
	bool push;
	bool pull;
	int sender;
	int timestamp;
	int customer_id;
	uint64_t key = 0;
	uint64_t addr = 0;
	int val_len = 0;
	int option = 0;
	psbs_request psb_req{};		/* psb: the request Response answers */
};

/* ps-lite's SimpleApp, the base both apps have: its app and customer ids. */
class SimpleApp {
public:
	SimpleApp() {}
	SimpleApp(int app_id, int customer_id) : app_id_(app_id), customer_id_(customer_id) {}
	virtual ~SimpleApp() {}
	int app_id() const { return app_id_; }
	int customer_id() const { return customer_id_; }
protected:
	int app_id_ = 0;
	int customer_id_ = 0;
};

template <typename Val>
class KVWorker : public SimpleApp {
public:
	using Callback = std::function<void()>;
	using SlicedKVs = std::vector<std::pair<bool, KVPairs<Val>>>;
	using Slicer = std::function<void(const KVPairs<Val> &send, const std::vector<Range> &ranges,
					  SlicedKVs *sliced)>;

	explicit KVWorker(int app_id, int customer_id, int instance_idx = 0)
		: SimpleApp(app_id, customer_id), instance_idx_(instance_idx),
		  po_(Postoffice::GetWorker(instance_idx))
	{
		static_assert(std::is_arithmetic<Val>::value, "psb: values are numbers");
		CHECK(std::is_floating_point<Val>::value ? sizeof(Val) == 4 : sizeof(Val) == 1)
			<< "psb: values are float32 (Val float) or bytes (Val char, int8_t, "
			   "uint8_t, lengths a multiple of 4 bytes); this Val has " << sizeof(Val)
			<< " bytes";
		CHECK(po_->is_worker()) << "psb: a KVWorker in a process that is not a worker "
					   "(DMLC_ROLE=" << po_->role_str() << "); call Start first";
		CHECK(po_->psb_session() != nullptr) << "psb: a KVWorker before Start";
	}
	virtual ~KVWorker()
	{
		std::unique_lock<std::recursive_mutex> lk(po_->psb_lock());

		po_->psb_done().wait(lk, [this] { return running_ == 0; });
		for (auto &kv : ops_)
			psbc_wait(po_->psb_session(), kv.second->psb_ts);
	}

	int Push(const std::vector<Key> &keys, const std::vector<Val> &vals,
		 const std::vector<int> &lens = {}, int cmd = 0, const Callback &cb = nullptr,
		 int priority = 0)
	{
		return ZPush(SArray<Key>(keys), SArray<Val>(vals), SArray<int>(lens), cmd, cb,
			     priority);
	}
	int Pull(const std::vector<Key> &keys, std::vector<Val> *vals, std::vector<int> *lens = nullptr,
		 int cmd = 0, const Callback &cb = nullptr, int priority = 0)
	{
		CHECK_NOTNULL(vals);
		auto out = std::make_shared<SArray<Val>>();
		auto olens = std::make_shared<SArray<int>>();

		if (!vals->empty())
			out->resize(vals->size());
		if (lens != nullptr && !lens->empty())
			olens->CopyFrom(lens->data(), lens->size());
		/* Into the vectors once it ended, before the callback. */
		return Start(PSBC_PULL, SArray<Key>(keys), SArray<Val>(), out.get(),
			     lens != nullptr ? olens.get() : nullptr, cmd, cb, priority,
			     [vals, lens, out, olens] {
				     vals->assign(out->begin(), out->end());
				     if (lens != nullptr)
					     lens->assign(olens->begin(), olens->end());
			     });
	}
	int PushPull(const std::vector<Key> &keys, const std::vector<Val> &vals,
		     std::vector<Val> *outs, std::vector<int> *lens = nullptr, int cmd = 0,
		     const Callback &cb = nullptr, int priority = 0)
	{
		CHECK_NOTNULL(outs);
		if (outs->empty())
			outs->resize(vals.size());
		else
			CHECK_EQ(vals.size(), outs->size());
		auto souts = std::make_shared<SArray<Val>>(outs->data(), outs->size());
		auto slens = std::make_shared<SArray<int>>();

		if (lens != nullptr)
			slens->CopyFrom(lens->data(), lens->size());
		return Start(PSBC_PUSHPULL, SArray<Key>(keys), SArray<Val>(vals), souts.get(),
			     lens != nullptr ? slens.get() : nullptr, cmd, cb, priority,
			     [souts, slens, lens] {
				     if (lens != nullptr)
					     lens->assign(slens->begin(), slens->end());
			     });
	}
	void Wait(int timestamp)
	{
		std::unique_lock<std::recursive_mutex> lk(po_->psb_lock());
		auto it = ops_.find(timestamp);

		if (it == ops_.end())
			return;	/* waited for already, or never given: as ps-lite, nothing to wait */
		std::shared_ptr<Op> op = it->second;

		po_->psb_done().wait(lk, [&op] { return op->ended; });
		psbc_wait(po_->psb_session(), op->psb_ts);
		ops_.erase(timestamp);
	}
	int ZPush(const SArray<Key> &keys, const SArray<Val> &vals, const SArray<int> &lens = {},
		  int cmd = 0, const Callback &cb = nullptr, int priority = 0)
	{
		return Start(PSBC_PUSH, keys, vals, nullptr, lens.empty() ? nullptr : &lens, cmd, cb,
			     priority, nullptr);
	}
	int ZPull(const SArray<Key> &keys, SArray<Val> *vals, SArray<int> *lens = nullptr,
		  int cmd = 0, const Callback &cb = nullptr, int priority = 0)
	{
		CHECK_NOTNULL(vals);
		return Start(PSBC_PULL, keys, SArray<Val>(), vals, lens, cmd, cb, priority, nullptr);
	}
	int ZPushPull(const SArray<Key> &keys, const SArray<Val> &vals, SArray<Val> *outs,
		      SArray<int> *lens = nullptr, int cmd = 0, const Callback &cb = nullptr,
		      int priority = 0)
	{
		CHECK_NOTNULL(outs);
		if (outs->empty())
			outs->resize(vals.size());
		return Start(PSBC_PUSHPULL, keys, vals, outs, lens, cmd, cb, priority, nullptr);
	}
	/* psb splits keys by the servers' ranges; a slicer of the program's is not used. */
	void set_slicer(const Slicer &slicer)
	{
		CHECK(slicer);
		LOG(WARNING) << "psb: set_slicer: keys go to the server whose ps-lite range holds "
				"them; this slicer is not used";
	}

	int instance_idx_ = 0;

private:
	enum Kind { PSBC_PUSH, PSBC_PULL, PSBC_PUSHPULL };

	/* One operation: what it reads and writes stays alive with it. */
	struct Op {
		KVWorker *w;
		int ts;
		int64_t psb_ts = -1;
		bool ended = false;
		int status = 0;
		SArray<Key> keys;
		SArray<Val> vals;
		SArray<Val> *outs = nullptr;
		SArray<int> *lens = nullptr;
		std::vector<uint32_t> flens;	/* floats a key */
		Callback cb;
		std::function<void()> finish;
	};

	static constexpr size_t per_float() { return sizeof(float) / sizeof(Val); }

	/* A key's length in Val units as psb's floats; bytes must make whole floats. */
	uint32_t to_floats(size_t n, Key key) const
	{
		CHECK_EQ(n % per_float(), 0u) << "psb: key " << key << ": " << n << " values of "
			<< sizeof(Val) << " byte(s), not a whole number of float32 (4 bytes)";
		return static_cast<uint32_t>(n / per_float());
	}

	/* The lengths of keys not known here: a pull with room for one float tells each. */
	void learn_lengths(const SArray<Key> &keys)
	{
		std::vector<Key> unknown;
		std::vector<uint32_t> room;
		std::vector<float> scratch;

		for (size_t i = 0; i < keys.size(); ++i)
			if (known_.find(keys[i]) == known_.end())
				unknown.push_back(keys[i]);
		if (unknown.empty())
			return;
		room.assign(unknown.size(), 1);
		scratch.resize(unknown.size());
		int64_t t = psbc_pull(po_->psb_session(), unknown.data(), unknown.size(),
				      scratch.data(), scratch.size(), room.data(), nullptr, nullptr);
		CHECK_GE(t, 0) << "psb: pull: " << psbc_errmsg(po_->psb_session());
		int rc = psbc_wait(po_->psb_session(), t);

		CHECK(rc == 0 || rc == PSBC_E_LEN_MISMATCH)
			<< "psb: pull of keys no push of this worker sized: "
			<< psbc_errmsg(po_->psb_session());
		for (size_t i = 0; i < unknown.size(); ++i)
			known_[unknown[i]] = room[i];
	}

	static void on_end(psbc_t *s, int64_t psb_ts, int status, void *arg)
	{
		Op *op = static_cast<Op *>(arg);
		KVWorker *w = op->w;

		(void)s;
		(void)psb_ts;
		CHECK_EQ(status, 0) << "psb: " << (op->outs != nullptr ? "pull" : "push")
				    << " of " << op->keys.size() << " key(s) failed: "
				    << psbc_errmsg(w->po_->psb_session());
		if (op->lens != nullptr && op->outs != nullptr) {
			for (size_t i = 0; i < op->keys.size(); ++i)
				(*op->lens)[i] = static_cast<int>(op->flens[i] * per_float());
		}
		op->status = status;
		if (op->finish)
			op->finish();
		/* what it held goes now: a program that never waits keeps only this record */
		op->keys = SArray<Key>();
		op->vals = SArray<Val>();
		op->finish = nullptr;
		std::vector<uint32_t>().swap(op->flens);
		op->ended = true;
		w->running_--;
		w->po_->psb_ended();
		if (op->cb)
			op->cb();
	}

	int Start(Kind kind, const SArray<Key> &keys, const SArray<Val> &vals, SArray<Val> *outs,
		  const SArray<int> *lens, int cmd, const Callback &cb, int priority,
		  std::function<void()> finish)
	{
		std::unique_lock<std::recursive_mutex> lk(po_->psb_lock());
		psbc_t *s = po_->psb_session();
		auto op = std::make_shared<Op>();
		size_t n = keys.size(), total = 0, i;
		int64_t t;

		(void)priority;
		if (cmd != 0 && !warned_cmd_) {
			warned_cmd_ = true;
			LOG(WARNING) << "psb: cmd " << cmd << ": psb's servers take no cmd; not used";
		}
		op->w = this;
		op->ts = next_ts_++;
		op->keys = keys;
		op->vals = vals;
		op->outs = outs;
		op->cb = cb;
		op->finish = std::move(finish);
		op->flens.resize(n);
		if (kind == PSBC_PULL && (lens == nullptr || lens->empty()) &&
		    (outs->empty() || outs->size() % std::max<size_t>(n, 1) != 0)) {
			/* the lengths come from the pushes here, or are asked for */
			learn_lengths(keys);
			for (i = 0; i < n; ++i)
				total += (op->flens[i] = known_[keys[i]]);
			outs->resize(total * per_float());
		} else {
			const size_t nv = kind == PSBC_PULL ? outs->size() : vals.size();

			if (lens != nullptr && !lens->empty()) {
				CHECK_EQ(lens->size(), n) << "psb: lens has " << lens->size()
					<< " entries for " << n << " keys";
				for (i = 0; i < n; ++i)
					op->flens[i] = to_floats(static_cast<size_t>((*lens)[i]), keys[i]);
			} else {
				CHECK(n != 0 && nv % n == 0) << "psb: " << nv << " values do not divide "
					"among " << n << " keys (give lens)";
				for (i = 0; i < n; ++i)
					op->flens[i] = to_floats(nv / n, keys[i]);
			}
			if (kind == PSBC_PULL) {
				for (i = 0; i < n; ++i)
					total += op->flens[i];
				if (outs->size() < total * per_float())
					outs->resize(total * per_float());
			}
		}
		if (kind != PSBC_PUSH && lens != nullptr) {
			op->lens = const_cast<SArray<int> *>(lens);
			if (op->lens->size() != n)
				op->lens->resize(n);
		}
		for (i = 0, total = 0; i < n; ++i) {
			total += op->flens[i];
			if (kind != PSBC_PULL)
				known_[keys[i]] = op->flens[i];
		}
		const float *in = reinterpret_cast<const float *>(vals.data());
		float *out = outs != nullptr ? reinterpret_cast<float *>(outs->data()) : nullptr;

		if (kind == PSBC_PUSH)
			t = psbc_push(s, keys.data(), n, in, total, op->flens.data(), on_end, op.get());
		else if (kind == PSBC_PULL)
			t = psbc_pull(s, keys.data(), n, out, total, op->flens.data(), on_end, op.get());
		else
			t = psbc_pushpull(s, keys.data(), n, in, out, total, op->flens.data(), on_end,
					  op.get());
		CHECK_GE(t, 0) << "psb: " << psbc_errmsg(s);
		op->psb_ts = t;
		ops_[op->ts] = op;
		running_++;
		po_->psb_started();
		return op->ts;
	}

	Postoffice *po_;
	int next_ts_ = 0;
	long running_ = 0;
	bool warned_cmd_ = false;
	std::unordered_map<int, std::shared_ptr<Op>> ops_;
	std::unordered_map<Key, uint32_t> known_;	/* each key's length in floats, as seen */
};

/*
 * ps-lite's KVServer. By default psb's servers (psb-ksrv, or psb itself) hold the store and
 * answer; a server process of a program runs one of them (Start), so the request handle
 * given here is kept but not run: they sum as KVServerDefaultHandle does. In handler mode
 * (PSB_SERVER_HANDLER=1) the process is the server and the request handle runs.
 */
template <typename Val>
class KVServer : public SimpleApp {
public:
	using ReqHandle = std::function<void(const KVMeta &req_meta, const KVPairs<Val> &req_data,
					     KVServer *server)>;

	explicit KVServer(int app_id, bool is_scheduler = false, int instance_idx = 0)
		: SimpleApp(app_id, app_id), instance_idx_(instance_idx),
		  po_(Postoffice::GetServer(instance_idx))
	{
		(void)is_scheduler;
	}
	virtual ~KVServer() { po_->psb_set_handler(this, nullptr); }
	void set_request_handle(const ReqHandle &request_handle)
	{
		CHECK(request_handle) << "invalid request handle";
		request_handle_ = request_handle;
		if (!po_->psb_handler_mode()) {
			PS_VLOG(1) << "psb: the servers are psb's, summing as ps-lite's default "
				      "handler; this request handle is not run (PSB_SERVER_HANDLER=1 "
				      "runs it)";
			return;
		}
		CHECK(sizeof(Val) == 1 || (std::is_floating_point<Val>::value && sizeof(Val) == 4))
			<< "psb: values are float32 or bytes; this Val has " << sizeof(Val)
			<< " bytes";
		po_->psb_set_handler(this, [this](const psbs_request &r) { Handle(r); });
	}
	void Response(const KVMeta &req, const KVPairs<Val> &res = KVPairs<Val>())
	{
		psbs_t *s = po_->psb_server();

		if (s == nullptr)
			return;		/* psb's servers answer: nothing to do */
		size_t bytes = res.vals.size() * sizeof(Val);

		CHECK_EQ(bytes % sizeof(float), 0u) << "psb: key " << req.key << ": an answer of "
			<< res.vals.size() << " values of " << sizeof(Val) << " byte(s), not a whole "
			"number of float32 (4 bytes)";
		int rc = psbs_respond(s, &req.psb_req,
				      reinterpret_cast<const float *>(res.vals.data()),
				      bytes / sizeof(float));
		if (rc == PSBC_E_NOT_OPEN)
			PS_VLOG(1) << "psb: " << psbs_errmsg(s);
		else if (rc != 0)
			LOG(WARNING) << "psb: Response: " << psbs_errmsg(s);
	}
	/* BytePS's line: buffers a server receives into. psb's servers keep their own. */
	void RegisterRecvBuffer(int worker_id, SArray<Key> &keys, const SArray<Val> &vals,
				const SArray<int> &lens = {}, int cmd = 0)
	{
		(void)worker_id, (void)keys, (void)vals, (void)lens, (void)cmd;
	}
	void RegisterRecvBufferWithRank(int worker_rank, SArray<Key> &keys, const SArray<Val> &vals,
					const SArray<int> &lens = {}, int cmd = 0)
	{
		(void)worker_rank, (void)keys, (void)vals, (void)lens, (void)cmd;
	}

	int instance_idx_ = 0;

private:
	/* A request of psb's server as ps-lite's handler sees one: one key, its value. */
	void Handle(const psbs_request &r)
	{
		KVMeta meta;
		KVPairs<Val> data;
		size_t n = r.nvals * sizeof(float) / sizeof(Val);

		meta.cmd = 0;
		meta.push = r.op != PSBS_PULL;
		meta.pull = r.op != PSBS_PUSH;
		meta.sender = Postoffice::WorkerRankToID(r.sender);
		meta.timestamp = static_cast<int>(r.id[0]);
		meta.customer_id = customer_id_;
		meta.key = r.key;
		meta.val_len = static_cast<int>(n);
		meta.psb_req = r;
		meta.psb_req.vals = nullptr;
		data.keys.push_back(r.key);
		if (meta.push) {
			data.vals.CopyFrom(reinterpret_cast<const Val *>(r.vals), n);
			data.lens.push_back(static_cast<int>(n));
		}
		request_handle_(meta, data, this);
	}

	ReqHandle request_handle_;
	Postoffice *po_;
};

/* ps-lite's default handler: a sum per key. psb's servers do this themselves. */
template <typename Val>
struct KVServerDefaultHandle {
	void operator()(const KVMeta &req_meta, const KVPairs<Val> &req_data, KVServer<Val> *server)
	{
		size_t n = req_data.keys.size();
		KVPairs<Val> res;

		if (req_meta.pull) {
			res.keys = req_data.keys;
			res.vals.resize(n);
		}
		for (size_t i = 0; i < n; ++i) {
			Key key = req_data.keys[i];

			if (req_meta.push)
				store[key] += req_data.vals[i];
			if (req_meta.pull)
				res.vals[i] = store[key];
		}
		server->Response(req_meta, res);
	}
	std::unordered_map<Key, Val> store;
};

} /* namespace ps */

#endif /* PSB_PSLITE_KV_APP_H */
