// A ps-lite program whose servers do more than sum, as a synchronous parameter server
// writes its handler: a push is held (not answered) until every worker pushed into the
// key's round; the round's value is then the mean of the pushes, and every held push is
// answered at once. Pulls read the last round's mean. Written against ps-lite's API only:
// requests of several keys, with lens, are handled as ps-lite delivers them.
//
// Each worker pushes keys of three lengths for several rounds, pulls after each and checks
// the mean exactly; the process exits non-zero when it is wrong. scripts/local.sh --handler
// runs it (tests/pslite/test_pslite.sh). With the argument "late" a server sets its handle a
// second after Start: the requests that came before wait for it.
#include <cmath>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ps/ps.h"

using namespace ps;

struct MeanServer {
	struct Round {
		std::vector<float> sum, mean;
		int pushed = 0;
		unsigned long done = 0;		// rounds closed
	};
	struct Held {
		KVMeta meta;
		std::vector<Key> keys;
		std::vector<unsigned long> round;	// the round each key waits to close
	};
	std::unordered_map<Key, Round> keys;
	std::vector<Held> held;
	long requests = 0;

	void operator()(const KVMeta &meta, const KVPairs<float> &data, KVServer<float> *server)
	{
		size_t n = data.keys.size(), off = 0;

		requests++;
		if (meta.push) {
			Held h;

			h.meta = meta;
			for (size_t i = 0; i < n; ++i) {
				size_t len = data.lens.empty() ? data.vals.size() / n :
					static_cast<size_t>(data.lens[i]);
				Round &r = keys[data.keys[i]];

				if (r.sum.empty())
					r.sum.assign(len, 0.0f);
				CHECK_EQ(r.sum.size(), len) << "key " << data.keys[i];
				for (size_t j = 0; j < len; ++j)
					r.sum[j] += data.vals[off + j];
				off += len;
				h.keys.push_back(data.keys[i]);
				h.round.push_back(r.done);
				if (++r.pushed == NumWorkers()) {
					r.mean = r.sum;
					for (float &v : r.mean)
						v /= static_cast<float>(NumWorkers());
					std::fill(r.sum.begin(), r.sum.end(), 0.0f);
					r.pushed = 0;
					r.done++;
				}
			}
			held.push_back(h);
			AnswerClosed(server);
			return;
		}
		KVPairs<float> res;

		res.keys = data.keys;
		for (size_t i = 0; i < n; ++i) {
			const std::vector<float> &m = keys[data.keys[i]].mean;

			for (float v : m)
				res.vals.push_back(v);
			res.lens.push_back(static_cast<int>(m.size()));
		}
		server->Response(meta, res);
	}

	// Every held push whose keys' rounds all closed is answered.
	void AnswerClosed(KVServer<float> *server)
	{
		for (size_t i = 0; i < held.size();) {
			bool closed = true;

			for (size_t k = 0; k < held[i].keys.size(); ++k)
				closed = closed && keys[held[i].keys[k]].done > held[i].round[k];
			if (!closed) {
				++i;
				continue;
			}
			server->Response(held[i].meta);
			held.erase(held.begin() + static_cast<long>(i));
		}
	}
};

static int
RunWorker()
{
	if (!IsWorker())
		return 0;
	KVWorker<float> kv(0, 0);
	const int rounds = 5;
	const std::vector<Key> keys = { 3, kMaxKey / 2 + 1, kMaxKey / 2 + 7 };
	const std::vector<int> lens = { 1, 300, 5000 };
	int rank = MyRank(), nw = NumWorkers(), total = 0, wrong = 0;

	for (int l : lens)
		total += l;
	for (int r = 0; r < rounds; ++r) {
		std::vector<float> vals(total), got;
		std::vector<int> glens;

		for (int j = 0; j < total; ++j)
			vals[j] = static_cast<float>((rank + 1) * (j % 97 + 1) + r);
		// the push returns once every worker pushed this round
		kv.Wait(kv.Push(keys, vals, lens));
		kv.Wait(kv.Pull(keys, &got, &glens));
		CHECK_EQ(got.size(), static_cast<size_t>(total));
		CHECK_EQ(glens.size(), lens.size());
		for (size_t k = 0; k < lens.size(); ++k)
			CHECK_EQ(glens[k], lens[k]);
		// the mean over ranks 1..nw of (rank * x + r): x (nw + 1) / 2 + r
		for (int j = 0; j < total; ++j) {
			float want = static_cast<float>(j % 97 + 1) * static_cast<float>(nw + 1) / 2.0f +
				     static_cast<float>(r);
			if (std::fabs(got[j] - want) > 1e-3f * want)
				wrong++;
		}
	}
	LL << "worker " << rank << " of " << nw << ": " << rounds << " rounds, " << wrong
	   << " wrong means";
	return wrong == 0 ? 0 : 1;
}

int
main(int argc, char *argv[])
{
	bool late = argc > 1 && std::strcmp(argv[1], "late") == 0;

	Start(0);
	KVServer<float> *server = nullptr;
	MeanServer *handle = nullptr;

	if (IsServer()) {
		server = new KVServer<float>(0);
		handle = new MeanServer();
		if (late)
			std::this_thread::sleep_for(std::chrono::seconds(1));
		server->set_request_handle([handle](const KVMeta &m, const KVPairs<float> &d,
						    KVServer<float> *s) { (*handle)(m, d, s); });
		RegisterExitCallback([server, handle]() {
			LL << "server " << MyRank() << ": " << handle->requests << " requests, "
			   << handle->held.size() << " held at the end";
			delete server;
			delete handle;
		});
	}
	int rc = RunWorker();
	Finalize(0, true);
	return rc;
}
