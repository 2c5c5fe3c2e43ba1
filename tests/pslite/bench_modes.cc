// A ps-lite program as the benchmark of ps-lite's BytePS line writes one: KVWorker<char>,
// one SArray of keys, values and lens a key (made with reset and a deleter of its own), the
// keys placed by GetServerKeyRanges, and the four modes: 0 push then pull, 1 push-pull,
// 2 push only, 3 pull only. Each worker checks what it pulls (every worker pushes the
// same bytes, so a pulled value is the float sum of NUM_WORKER pushes a round in async
// order: it checks the count in whole pushes) and prints its goodput.
//
//   bench_modes LEN REPEAT MODE [NKEYS [SECONDS]]   (DMLC_* from scripts/local.sh)
//
// SECONDS: run that long instead of REPEAT iterations (scripts/bench/client.sh).
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ps/ps.h"

using namespace ps;

int
main(int argc, char *argv[])
{
	int len = argc > 1 ? atoi(argv[1]) : 4096;
	int repeat = argc > 2 ? atoi(argv[2]) : 10;
	int mode = argc > 3 ? atoi(argv[3]) : 1;
	const int nkeys = argc > 4 ? atoi(argv[4]) : 8;
	const double seconds = argc > 5 ? atof(argv[5]) : 0;

	CHECK(len > 0 && len % 4 == 0) << "LEN " << len << ": a multiple of 4 bytes";
	CHECK(mode >= 0 && mode <= 3) << "MODE " << mode;
	CHECK(nkeys > 0) << "NKEYS " << nkeys;
	Start(0);
	if (IsServer()) {
		auto server = new KVServer<char>(0, false, 0);
		server->set_request_handle(KVServerDefaultHandle<char>());
		RegisterExitCallback([server]() { delete server; });
	}
	if (IsWorker()) {
		KVWorker<char> kv(0, 0, 0);
		const std::vector<Range> &krs = Postoffice::Get()->GetServerKeyRanges();
		std::vector<SArray<Key>> keys(nkeys);
		std::vector<SArray<char>> vals(nkeys), outs(nkeys);
		std::vector<SArray<int>> lens(nkeys);
		std::vector<float> one(len / 4, 1.0f);

		CHECK_EQ(krs.size(), static_cast<size_t>(NumServers()));
		for (int k = 0; k < nkeys; ++k) {
			Key *kp = new Key(krs[k % krs.size()].begin() + k);
			char *vp = new char[len];
			int *lp = new int(len);

			keys[k].reset(kp, 1, [](Key *p) { delete p; });
			std::memcpy(vp, one.data(), len);
			vals[k].reset(vp, len, [](char *p) { delete[] p; }, CPU, -1, CPU, -1);
			lens[k].reset(lp, 1, [](int *p) { delete p; });
		}
		auto t0 = std::chrono::steady_clock::now();
		int pushes = 0;
		int it;
		for (it = 0; seconds > 0 ? std::chrono::duration<double>(
				std::chrono::steady_clock::now() - t0).count() < seconds : it < repeat;
		     ++it) {
			std::vector<int> ts;
			for (int k = 0; k < nkeys; ++k) {
				if (mode == 1) {
					ts.push_back(kv.ZPushPull(keys[k], vals[k], &outs[k], &lens[k]));
				} else if (mode == 3 && it != 0) {
					ts.push_back(kv.ZPull(keys[k], &outs[k], &lens[k]));
				} else {
					ts.push_back(kv.ZPush(keys[k], vals[k], lens[k]));
					if (mode == 0)
						kv.Wait(ts.back()), ts.back() = kv.ZPull(keys[k], &outs[k], &lens[k]);
				}
			}
			for (int t : ts)
				kv.Wait(t);
			if (mode != 3 || it == 0)
				pushes++;
			if (mode == 2 || (mode == 3 && it == 0))
				continue;
			for (int k = 0; k < nkeys; ++k) {
				CHECK_EQ(outs[k].size(), static_cast<size_t>(len)) << "key " << keys[k][0];
				CHECK_EQ(lens[k][0], len);
				float v;
				std::memcpy(&v, outs[k].data(), sizeof(v));
				// whole pushes of 1.0 from every worker: a whole number, at least ours
				CHECK(v >= pushes && v == std::floor(v)) << "key " << keys[k][0] << ": " << v;
			}
		}
		double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
		LL << "worker " << MyRank() << " mode " << mode << ": " << it << " x " << nkeys
		   << " keys of " << len << " B in " << s << " s, goodput "
		   << 8.0 * len * nkeys * it / s / 1e9 << " Gbps";
		PS_VLOG(1) << "first value: " << vals[0].DebugString();
	}
	Finalize(0, true);
	return 0;
}
