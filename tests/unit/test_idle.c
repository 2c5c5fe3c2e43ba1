/* cmocka tests of idle lcores: the back-off, the sleeps' counts, the choice of mode (lib/idle). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "psb_idle.h"

static enum psb_idle_act
step(struct psb_idle *id, int work, uint64_t *ns)
{
	*ns = 0;
	return psb_idle_step(id, work, ns);
}

/* Empty rounds go run, run, pause, pause, yield, yield, then sleeps doubling to the cap. */
static void
backoff_order(void **state)
{
	static const uint64_t want[] = { 4000, 8000, 16000, 32000, 64000, 128000, 256000, 512000,
		1000000, 1000000, 1000000 };
	struct psb_idle_policy pol;
	struct psb_idle id;
	unsigned int i;
	uint64_t ns;

	(void)state;
	psb_idle_policy_default(&pol, 0);
	psb_idle_init(&id, &pol);
	assert_int_equal(step(&id, 0, &ns), PSB_IDLE_RUN);
	assert_int_equal(step(&id, 0, &ns), PSB_IDLE_RUN);
	assert_int_equal(step(&id, 0, &ns), PSB_IDLE_PAUSE);
	assert_int_equal(step(&id, 0, &ns), PSB_IDLE_PAUSE);
	assert_int_equal(step(&id, 0, &ns), PSB_IDLE_YIELD);
	assert_int_equal(step(&id, 0, &ns), PSB_IDLE_YIELD);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(step(&id, 0, &ns), PSB_IDLE_WAIT);
		assert_int_equal(ns, want[i]);
	}
}

/* One round with work starts it over: polling again, and the next sleep is short again. */
static void
backoff_work_resets(void **state)
{
	struct psb_idle_policy pol;
	struct psb_idle id;
	unsigned int i;
	uint64_t ns;

	(void)state;
	psb_idle_policy_default(&pol, 0);
	psb_idle_init(&id, &pol);
	for (i = 0; i < 20; i++)
		step(&id, 0, &ns);
	assert_int_equal(ns, PSB_IDLE_SLEEP_MAX_NS);
	assert_int_equal(step(&id, 3, &ns), PSB_IDLE_RUN);
	for (i = 0; i < 6; i++)
		assert_int_not_equal(step(&id, 0, &ns), PSB_IDLE_WAIT);
	assert_int_equal(step(&id, 0, &ns), PSB_IDLE_WAIT);
	assert_int_equal(ns, PSB_IDLE_SLEEP_MIN_NS);
}

/* node.idle_sleep is the cap: below the first sleep, every sleep is the cap. */
static void
backoff_cap(void **state)
{
	struct psb_idle_policy pol;
	struct psb_idle id;
	unsigned int i;
	uint64_t ns, last = 0;

	(void)state;
	psb_idle_policy_default(&pol, 100000);
	psb_idle_init(&id, &pol);
	for (i = 0; i < 30; i++)
		if (step(&id, 0, &ns) == PSB_IDLE_WAIT) {
			assert_true(ns <= 100000);
			assert_true(ns >= last);
			last = ns;
		}
	assert_int_equal(last, 100000);
	psb_idle_policy_default(&pol, 1000);
	assert_int_equal(pol.sleep_min_ns, 1000);
	psb_idle_init(&id, &pol);
	for (i = 0; i < 10; i++)
		if (step(&id, 0, &ns) == PSB_IDLE_WAIT)
			assert_int_equal(ns, 1000);
	/* a policy with no pause or yield sleeps on the first empty round past run_rounds */
	memset(&pol, 0, sizeof(pol));
	pol.sleep_min_ns = 10;
	pol.sleep_max_ns = 5;
	psb_idle_init(&id, &pol);
	assert_int_equal(step(&id, 0, &ns), PSB_IDLE_WAIT);
	assert_int_equal(ns, 10);
}

/* Lateness counts only sleeps that ran their time; the buckets' edges are inclusive. */
static void
counts(void **state)
{
	struct psb_idle_stats a, b;

	(void)state;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	assert_int_equal(psb_idle_late_bucket(0), 0);
	assert_int_equal(psb_idle_late_bucket(5000), 0);
	assert_int_equal(psb_idle_late_bucket(5001), 1);
	assert_int_equal(psb_idle_late_bucket(500000), 6);
	assert_int_equal(psb_idle_late_bucket(500001), 7);
	psb_idle_count(&a, 100000, 112000, PSB_IDLE_WOKE_TIMEOUT);	/* 12 us late */
	psb_idle_count(&a, 100000, 90000, PSB_IDLE_WOKE_TIMEOUT);	/* early: 0 late */
	psb_idle_count(&a, 100000, 3000, PSB_IDLE_WOKE_TRAFFIC);
	psb_idle_count(&a, 100000, 1000, PSB_IDLE_WOKE_KICK);
	assert_int_equal(a.sleeps, 4);
	assert_int_equal(a.slept_ns, 206000);
	assert_int_equal(a.wakes[PSB_IDLE_WOKE_TIMEOUT], 2);
	assert_int_equal(a.wakes[PSB_IDLE_WOKE_TRAFFIC], 1);
	assert_int_equal(a.wakes[PSB_IDLE_WOKE_KICK], 1);
	assert_int_equal(a.late_ns_sum, 12000);
	assert_int_equal(a.late_ns_max, 12000);
	assert_int_equal(a.late[0], 1);
	assert_int_equal(a.late[2], 1);
	psb_idle_count(&b, 1000, 700000, PSB_IDLE_WOKE_TIMEOUT);
	psb_idle_stats_add(&b, &a);
	assert_int_equal(b.sleeps, 5);
	assert_int_equal(b.late_ns_max, 699000);
	assert_int_equal(b.late[7], 1);
	assert_int_equal(b.wakes[PSB_IDLE_WOKE_TIMEOUT], 3);
}

/* auto sleeps where a CPU is shared, by lcores or by another psb, and says why. */
static void
choose(void **state)
{
	struct psb_idle_host h = { .lcores = 1, .cpus = 1 };
	char why[128];

	(void)state;
	assert_int_equal(psb_idle_choose(PSB_IDLE_AUTO, &h, why, sizeof(why)), PSB_IDLE_POLL);
	assert_string_equal(why, "1 lcore on 1 CPU no other psb polls");
	assert_int_equal(psb_idle_choose(PSB_IDLE_SLEEP, &h, why, sizeof(why)), PSB_IDLE_SLEEP);
	assert_string_equal(why, "node.idle sleep");
	h.shared_cpus = 1;
	h.other_pid = 1234;
	assert_int_equal(psb_idle_choose(PSB_IDLE_AUTO, &h, why, sizeof(why)), PSB_IDLE_SLEEP);
	assert_string_equal(why,
		"1 lcore on 1 CPU, 1 of them polled by another psb too (pid 1234)");
	assert_int_equal(psb_idle_choose(PSB_IDLE_POLL, &h, why, sizeof(why)), PSB_IDLE_POLL);
	h = (struct psb_idle_host){ .lcores = 4, .cpus = 2 };
	assert_int_equal(psb_idle_choose(PSB_IDLE_AUTO, &h, why, sizeof(why)), PSB_IDLE_SLEEP);
	assert_string_equal(why, "4 lcores on 2 CPUs");
	h = (struct psb_idle_host){ .lcores = 2, .cpus = 2, .sleep_asked = 1 };
	assert_int_equal(psb_idle_choose(PSB_IDLE_AUTO, &h, why, sizeof(why)), PSB_IDLE_SLEEP);
	assert_string_equal(why, "2 lcores on 2 CPUs, node.idle_sleep set");
	/* a scheduler sleeps whatever else is true, unless told to poll */
	h = (struct psb_idle_host){ .lcores = 1, .cpus = 1, .control_only = 1 };
	assert_int_equal(psb_idle_choose(PSB_IDLE_AUTO, &h, why, sizeof(why)), PSB_IDLE_SLEEP);
	assert_string_equal(why, "control traffic only, leaving the CPUs to the data");
	assert_int_equal(psb_idle_choose(PSB_IDLE_POLL, &h, why, sizeof(why)), PSB_IDLE_POLL);
	/* a short buffer is cut, never overrun */
	h = (struct psb_idle_host){ .lcores = 2, .cpus = 2 };
	assert_int_equal(psb_idle_choose(PSB_IDLE_AUTO, &h, why, 4), PSB_IDLE_POLL);
	assert_true(strlen(why) < 4);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(backoff_order),
		cmocka_unit_test(backoff_work_resets),
		cmocka_unit_test(backoff_cap),
		cmocka_unit_test(counts),
		cmocka_unit_test(choose),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
