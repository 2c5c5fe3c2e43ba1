/* Idle lcores: the back-off policy, the choice of mode, and the counts of sleeps. */
#include <stdio.h>
#include <string.h>

#include "psb_idle.h"

const char *const psb_idle_wake_names[PSB_IDLE_WAKES] = { "timeout", "traffic", "kick" };
const char *const psb_idle_late_names[PSB_IDLE_LATE_BUCKETS] = {
	"5us", "10us", "20us", "50us", "100us", "200us", "500us", "more",
};

static const uint64_t late_le_ns[PSB_IDLE_LATE_BUCKETS - 1] = {
	5000, 10000, 20000, 50000, 100000, 200000, 500000,
};

void
psb_idle_policy_default(struct psb_idle_policy *pol, uint64_t cap_ns)
{
	pol->run_rounds = 2;
	pol->pause_rounds = 2;
	pol->yield_rounds = 2;
	pol->sleep_max_ns = cap_ns != 0 ? cap_ns : PSB_IDLE_SLEEP_MAX_NS;
	pol->sleep_min_ns = PSB_IDLE_SLEEP_MIN_NS < pol->sleep_max_ns ? PSB_IDLE_SLEEP_MIN_NS :
		pol->sleep_max_ns;
}

void
psb_idle_init(struct psb_idle *id, const struct psb_idle_policy *pol)
{
	memset(id, 0, sizeof(*id));
	id->pol = *pol;
	if (id->pol.sleep_min_ns == 0)
		id->pol.sleep_min_ns = 1;
	if (id->pol.sleep_max_ns < id->pol.sleep_min_ns)
		id->pol.sleep_max_ns = id->pol.sleep_min_ns;
	id->next_ns = id->pol.sleep_min_ns;
}

enum psb_idle_act
psb_idle_step(struct psb_idle *id, int work, uint64_t *ns)
{
	const struct psb_idle_policy *p = &id->pol;
	uint32_t e;

	if (work > 0) {
		id->empty = 0;
		id->next_ns = p->sleep_min_ns;
		return PSB_IDLE_RUN;
	}
	e = id->empty;
	if (e < UINT32_MAX)
		id->empty++;
	if (e < p->run_rounds)
		return PSB_IDLE_RUN;
	e -= p->run_rounds;
	if (e < p->pause_rounds)
		return PSB_IDLE_PAUSE;
	e -= p->pause_rounds;
	if (e < p->yield_rounds)
		return PSB_IDLE_YIELD;
	/*
	 * Traffic that stops for a moment (a round trip, a barrier) finds the lcore in a
	 * short sleep; only a long silence reaches the cap, where a sleep costs one wake-up
	 * per cap.
	 */
	*ns = id->next_ns;
	id->next_ns = id->next_ns * 2 > p->sleep_max_ns ? p->sleep_max_ns : id->next_ns * 2;
	return PSB_IDLE_WAIT;
}

unsigned int
psb_idle_late_bucket(uint64_t late_ns)
{
	unsigned int b;

	for (b = 0; b < PSB_IDLE_LATE_BUCKETS - 1; b++)
		if (late_ns <= late_le_ns[b])
			return b;
	return PSB_IDLE_LATE_BUCKETS - 1;
}

void
psb_idle_count(struct psb_idle_stats *st, uint64_t asked_ns, uint64_t slept_ns,
		enum psb_idle_wake how)
{
	uint64_t late;

	st->sleeps++;
	st->slept_ns += slept_ns;
	st->wakes[how < PSB_IDLE_WAKES ? how : PSB_IDLE_WOKE_TIMEOUT]++;
	if (how != PSB_IDLE_WOKE_TIMEOUT)
		return;		/* woken early: nothing asked for was late */
	late = slept_ns > asked_ns ? slept_ns - asked_ns : 0;
	st->late_ns_sum += late;
	if (late > st->late_ns_max)
		st->late_ns_max = late;
	st->late[psb_idle_late_bucket(late)]++;
}

void
psb_idle_stats_add(struct psb_idle_stats *to, const struct psb_idle_stats *from)
{
	unsigned int i;

	to->sleeps += from->sleeps;
	to->slept_ns += from->slept_ns;
	for (i = 0; i < PSB_IDLE_WAKES; i++)
		to->wakes[i] += from->wakes[i];
	to->late_ns_sum += from->late_ns_sum;
	if (from->late_ns_max > to->late_ns_max)
		to->late_ns_max = from->late_ns_max;
	for (i = 0; i < PSB_IDLE_LATE_BUCKETS; i++)
		to->late[i] += from->late[i];
}

static const char *
plural(unsigned int n)
{
	return n == 1 ? "" : "s";
}

enum psb_idle_mode
psb_idle_choose(enum psb_idle_mode mode, const struct psb_idle_host *h, char *why, size_t len)
{
	int n;

	if (mode != PSB_IDLE_AUTO) {
		snprintf(why, len, "node.idle %s", mode == PSB_IDLE_POLL ? "poll" : "sleep");
		return mode;
	}
	if (h->control_only) {
		snprintf(why, len, "control traffic only, leaving the CPUs to the data");
		return PSB_IDLE_SLEEP;
	}
	n = snprintf(why, len, "%u lcore%s on %u CPU%s", h->lcores, plural(h->lcores), h->cpus,
		plural(h->cpus));
	if (n < 0 || (size_t)n >= len)
		n = 0;
	if (h->shared_cpus != 0 && h->other_pid != 0)
		snprintf(why + n, len - (size_t)n,
			", %u of them polled by another psb too (pid %ld)", h->shared_cpus,
			h->other_pid);
	else if (h->shared_cpus != 0)
		snprintf(why + n, len - (size_t)n, ", %u of them polled by another psb too",
			h->shared_cpus);
	else if (h->lcores > h->cpus)
		;	/* the lcores take turns on a CPU: that is sharing enough */
	else if (h->sleep_asked)
		snprintf(why + n, len - (size_t)n, ", node.idle_sleep set");
	else {
		snprintf(why + n, len - (size_t)n, " no other psb polls");
		return PSB_IDLE_POLL;
	}
	return PSB_IDLE_SLEEP;
}
