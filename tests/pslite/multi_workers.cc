// Two KVWorkers in one worker process, each in a thread with a customer of its own, as
// ps-lite's multi-worker test runs them: keys apart by customer, sums checked.
//
//   multi_workers worker|server|scheduler   (the role also from DMLC_ROLE)
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "ps/ps.h"

using namespace ps;

static int failures;

static void
RunWorker(int customer_id)
{
	Start(customer_id);
	if (!IsWorker())
		return;
	{
		KVWorker<float> kv(0, customer_id);
		const int num = 500, repeat = 10;
		std::vector<Key> keys(num);
		std::vector<float> vals(num), outs;

		for (int i = 0; i < num; ++i) {
			keys[i] = kMaxKey / num * i + 2 * MyRank() + customer_id;
			vals[i] = static_cast<float>(i % 13 + customer_id);
		}
		for (int i = 0; i < repeat; ++i)
			kv.Wait(kv.PushPull(keys, vals, &outs));
		for (int i = 0; i < num; ++i)
			if (std::fabs(outs[i] - vals[i] * repeat) > 1e-5)
				failures++;
		LL << "customer " << customer_id << " of worker " << MyRank() << ": "
		   << failures << " wrong sums";
	}
	Finalize(customer_id, true);
}

int
main(int argc, char *argv[])
{
	(void)argc;
	(void)argv;
	if (!IsWorker() && std::getenv("DMLC_ROLE") != nullptr &&
	    std::strcmp(std::getenv("DMLC_ROLE"), "worker") != 0) {
		Start(0);
		Finalize(0, true);
		return 0;
	}
	std::thread t0(RunWorker, 0), t1(RunWorker, 1);
	t0.join();
	t1.join();
	return failures != 0;
}
