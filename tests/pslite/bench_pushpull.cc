// ps-lite's benchmark as a program written for either ps-lite line would run it, in the API
// both have (KVWorker(app, customer), ZPushPull/ZPush/ZPull with lens, SArray): each
// iteration one call of every key's float32 value, then Wait. Its servers sum each key's
// value (under psb, psb's servers do). scripts/bench/client.sh builds it against psb's header
// and, with --pslite, against ps-lite itself.
//
//   bench_pushpull LEN MODE NKEYS SECONDS [ITERATIONS]
//     MODE 1 PUSH_PULL, 2 PUSH_ONLY, 3 PULL_ONLY; with ITERATIONS (> 0) it runs that many
//     iterations instead of SECONDS
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "ps/ps.h"

using namespace ps;

// Each key's value summed; pulls answered with the sums.
struct SumHandler {
	std::unordered_map<Key, std::vector<float>> store;

	void operator()(const KVMeta &meta, const KVPairs<float> &req, KVServer<float> *server)
	{
		size_t n = req.keys.size(), off = 0, total = 0;
		KVPairs<float> res;

		for (size_t i = 0; i < n; ++i) {
			size_t len = req.lens.size() != 0 ? static_cast<size_t>(req.lens[i]) :
				(meta.push ? req.vals.size() / n : 0);
			std::vector<float> &v = store[req.keys[i]];

			if (meta.push) {
				v.resize(len, 0.0f);
				for (size_t j = 0; j < len; ++j)
					v[j] += req.vals[off + j];
				off += len;
			}
			if (meta.pull) {
				res.keys.push_back(req.keys[i]);
				res.lens.push_back(static_cast<int>(v.size()));
				total += v.size();
			}
		}
		if (meta.pull) {
			res.vals.resize(total);
			for (size_t i = 0, at = 0; i < n; ++i) {
				const std::vector<float> &v = store[req.keys[i]];

				std::memcpy(res.vals.data() + at, v.data(), v.size() * sizeof(float));
				at += v.size();
			}
		}
		server->Response(meta, res);
	}
};

int
main(int argc, char *argv[])
{
	int len = argc > 1 ? atoi(argv[1]) : 1048576;
	int mode = argc > 2 ? atoi(argv[2]) : 1;
	int nkeys = argc > 3 ? atoi(argv[3]) : 40;
	double seconds = argc > 4 ? atof(argv[4]) : 3;
	int iterations = argc > 5 ? atoi(argv[5]) : 0;

	CHECK(len > 0 && len % 4 == 0) << "LEN " << len << ": a multiple of 4 bytes";
	CHECK(mode >= 1 && mode <= 3) << "MODE " << mode;
	CHECK(iterations >= 0) << "ITERATIONS " << iterations;
	/*
	 * Start's barrier would let a worker's first request reach a server between its
	 * KVServer and its handler (ps-lite aborts on "request_handle_"): the barrier comes
	 * once the server can answer.
	 */
	StartAsync(0);
	if (IsServer()) {
		auto server = new KVServer<float>(0);
		server->set_request_handle(SumHandler());
		RegisterExitCallback([server]() { delete server; });
	}
	Postoffice::Get()->Barrier(0, kScheduler + kServerGroup + kWorkerGroup);
	if (IsWorker()) {
		KVWorker<float> kv(0, 0);
		const int n = len / 4;
		SArray<Key> keys(nkeys);
		SArray<float> vals(static_cast<size_t>(nkeys) * n, 1.0f), outs;
		SArray<int> lens(nkeys, n);

		for (int k = 0; k < nkeys; ++k)
			keys[k] = kMaxKey / 1024 * static_cast<Key>(k % 1024) + k / 1024 + 7;
		std::sort(keys.begin(), keys.end());
		if (mode == 3)
			kv.Wait(kv.ZPush(keys, vals, lens));
		auto t0 = std::chrono::steady_clock::now();
		double s = 0;
		int it = 0;
		for (; iterations > 0 ? it < iterations : s < seconds; ++it) {
			if (mode == 1)
				kv.Wait(kv.ZPushPull(keys, vals, &outs, &lens));
			else if (mode == 2)
				kv.Wait(kv.ZPush(keys, vals, lens));
			else
				kv.Wait(kv.ZPull(keys, &outs, &lens));
			s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
		}
		CHECK(mode == 2 || outs.size() == vals.size()) << "pulled " << outs.size() << " floats";
		LL << "worker " << MyRank() << " mode " << mode << ": " << it << " x " << nkeys
		   << " keys of " << len << " B in " << s << " s, goodput "
		   << 8.0 * len * nkeys * it / s / 1e9 << " Gbps";
	}
	Finalize(0, true);
	return 0;
}
