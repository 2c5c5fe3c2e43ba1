/*
 * Idle lcores. An lcore whose CPU is its own polls without pause; one that shares its CPU
 * (with other psb processes, a trainer, the kernel's threads) gives it back while nothing
 * comes: after a run of empty rounds it pauses, then yields, then sleeps, each sleep longer
 * than the one before up to a cap, and is woken sooner by traffic where the port has a
 * descriptor to wait on. This library decides (what to do after each round, and which mode
 * a node runs in) and counts; it never sleeps itself. No EAL: the caller carries it out.
 */
#ifndef PSB_IDLE_H
#define PSB_IDLE_H

#include <stddef.h>
#include <stdint.h>

/* node.idle */
enum psb_idle_mode {
	PSB_IDLE_AUTO,		/* sleep where the CPUs are shared, else poll */
	PSB_IDLE_POLL,		/* never sleep: dedicated cores */
	PSB_IDLE_SLEEP,		/* back off to sleeping while idle */
};

/* What an lcore does after a round of passes. */
enum psb_idle_act {
	PSB_IDLE_RUN,		/* poll again at once: there was work, or it just stopped */
	PSB_IDLE_PAUSE,		/* spin a little (rte_pause), then poll */
	PSB_IDLE_YIELD,		/* sched_yield(), then poll */
	PSB_IDLE_WAIT,		/* sleep the time given, or until traffic comes */
};

struct psb_idle_policy {
	uint32_t run_rounds;	/* empty rounds polled on as if busy */
	uint32_t pause_rounds;	/* then rounds that pause */
	uint32_t yield_rounds;	/* then rounds that yield; after them every round sleeps */
	uint64_t sleep_min_ns;	/* the first sleep */
	uint64_t sleep_max_ns;	/* the cap: each sleep doubles up to it */
};

/* The defaults: 2 rounds polled, 2 paused, 2 yielded, sleeps of 4 us doubling to the cap. */
#define PSB_IDLE_SLEEP_MIN_NS	4000u
#define PSB_IDLE_SLEEP_MAX_NS	1000000u

struct psb_idle {
	struct psb_idle_policy pol;
	uint32_t empty;		/* empty rounds in a row */
	uint64_t next_ns;	/* the next sleep */
};

/* The default policy with the cap cap_ns (0: PSB_IDLE_SLEEP_MAX_NS). */
void psb_idle_policy_default(struct psb_idle_policy *pol, uint64_t cap_ns);

void psb_idle_init(struct psb_idle *id, const struct psb_idle_policy *pol);

/*
 * After a round that handled work items: what to do now. A round with work starts the
 * back-off over; *ns is set for PSB_IDLE_WAIT (how long to sleep at most).
 */
enum psb_idle_act psb_idle_step(struct psb_idle *id, int work, uint64_t *ns);

/* How a sleep ended. */
enum psb_idle_wake {
	PSB_IDLE_WOKE_TIMEOUT,	/* its time was up */
	PSB_IDLE_WOKE_TRAFFIC,	/* a port's descriptor became readable */
	PSB_IDLE_WOKE_KICK,	/* another lcore of the process gave it work (ring, request) */
	PSB_IDLE_WAKES,
};

/* Sleeps that ran their time, by how late they returned: up to 5, 10, 20, 50, 100, 200,
 * 500 us, and more. */
#define PSB_IDLE_LATE_BUCKETS	8

/* What sleeping cost and how late it woke: a block per lcore, written by its owner only. */
struct psb_idle_stats {
	uint64_t sleeps;
	uint64_t slept_ns;		/* time asleep, as measured */
	uint64_t wakes[PSB_IDLE_WAKES];
	uint64_t late_ns_sum;		/* over timeouts: returned beyond what was asked */
	uint64_t late_ns_max;
	uint64_t late[PSB_IDLE_LATE_BUCKETS];
};

extern const char *const psb_idle_wake_names[PSB_IDLE_WAKES];	/* "timeout", ... */
extern const char *const psb_idle_late_names[PSB_IDLE_LATE_BUCKETS];	/* "5us", ... "more" */

unsigned int psb_idle_late_bucket(uint64_t late_ns);

/* Count a sleep that asked for asked_ns, took slept_ns and ended as how. */
void psb_idle_count(struct psb_idle_stats *st, uint64_t asked_ns, uint64_t slept_ns,
		enum psb_idle_wake how);

/* to += from (late_ns_max: the larger). */
void psb_idle_stats_add(struct psb_idle_stats *to, const struct psb_idle_stats *from);

/* What node.idle = auto looks at: the process's lcores and CPUs, and whether another psb
 * polls one of its CPUs. */
struct psb_idle_host {
	unsigned int lcores;		/* lcores that poll (EAL lcores) */
	unsigned int cpus;		/* distinct CPUs they run on */
	unsigned int shared_cpus;	/* of them, CPUs another psb polls too */
	long other_pid;			/* one such psb (0: unknown) */
	int sleep_asked;		/* node.idle_sleep was set: an older way to ask for sleep */
	int control_only;		/* control traffic only (a scheduler): never worth a CPU */
};

/*
 * The mode a node runs in (PSB_IDLE_POLL or PSB_IDLE_SLEEP) for node.idle = mode on host h,
 * and why, in a few words for the start line ("4 lcores on 2 CPUs").
 */
enum psb_idle_mode psb_idle_choose(enum psb_idle_mode mode, const struct psb_idle_host *h,
		char *why, size_t len);

#endif /* PSB_IDLE_H */
