// A ps-lite program as ps-lite's own KV test writes one: every worker pushes its values
// into keys of its own, spread over the key space, many times with a window of requests in
// flight, pulls them back, then push-pulls; the sums are checked, and the process exits
// non-zero when they are wrong. Run by scripts/local.sh (tests/pslite/test_pslite.sh).
#include <cmath>
#include <cstdlib>
#include <vector>

#include "ps/ps.h"

using namespace ps;

static void
StartServer()
{
	if (!IsServer())
		return;
	auto server = new KVServer<float>(0);
	server->set_request_handle(KVServerDefaultHandle<float>());
	RegisterExitCallback([server]() { delete server; });
}

static int
RunWorker()
{
	if (!IsWorker())
		return 0;
	KVWorker<float> kv(0, 0);
	const int num = 2000, repeat = 20;
	std::vector<Key> keys(num);
	std::vector<float> vals(num);
	int rank = MyRank();

	srand(rank + 7);
	for (int i = 0; i < num; ++i) {
		keys[i] = kMaxKey / num * i + rank;
		vals[i] = static_cast<float>(rand() % 1000);
	}
	std::vector<int> ts;
	for (int i = 0; i < repeat; ++i) {
		ts.push_back(kv.Push(keys, vals));
		if (i > 5)
			kv.Wait(ts[ts.size() - 5]);
	}
	for (int t : ts)
		kv.Wait(t);

	std::vector<float> rets;
	kv.Wait(kv.Pull(keys, &rets));
	std::vector<float> outs;
	for (int i = 0; i < repeat; ++i)
		kv.Wait(kv.PushPull(keys, vals, &outs));

	double err = 0, err2 = 0;
	for (int i = 0; i < num; ++i) {
		err += std::fabs(rets[i] - vals[i] * repeat);
		err2 += std::fabs(outs[i] - vals[i] * 2 * repeat);
	}
	LL << "worker " << rank << " of " << NumWorkers() << ", " << NumServers()
	   << " server(s): error " << err << ", " << err2;
	CHECK_EQ(rets.size(), static_cast<size_t>(num));
	CHECK_LT(err, 1e-5);
	CHECK_LT(err2, 1e-5);
	return 0;
}

int
main(int argc, char *argv[])
{
	(void)argc;
	(void)argv;
	Start(0);
	StartServer();
	int rc = RunWorker();
	Finalize(0, true);
	return rc;
}
