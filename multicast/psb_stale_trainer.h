/*
 * The trainer's part of the staleness experiment, whatever carries its versions: waiting
 * (bounded) for every worker to join, publishing a version every push period until
 * max_version or max_time, taking posts into its accounting (psb_stale_acct) and answering
 * them, the end (ACKs with END until every worker holds the final version, bounded), the
 * report every 5 s and the figures at the end. EAL-free: psb-stale's trainer drives it over
 * kernel sockets, and an appliance's trainer role can with mbufs; the caller makes and sends
 * the versions (its publish callback), feeds it the POSTs and PULLs that arrive, and calls
 * psb_stale_trainer_step when psb_stale_trainer_next_ns says.
 *
 *   joining   every worker must join (with the key) within join_ns; failed otherwise,
 *             naming the ones that did not
 *   running   a version every push_ns (late pushes counted, never bunched), a report line
 *             every 5 s, a warning for a worker silent for 3 post periods and 1 s
 *   ending    from max_version or max_time: ACKs with END every 100 ms to the workers not
 *             holding the final version yet; done once all hold it, failed after end_ns
 *             naming each that does not, with the version it holds
 */
#ifndef PSB_STALE_TRAINER_H
#define PSB_STALE_TRAINER_H

#include <stddef.h>
#include <stdint.h>

#include "psb_stale.h"

#define PSB_STALE_REPORT_NS	5000000000ull	/* the report's period */

struct psb_stale_trainer_cfg {
	uint32_t session;
	uint64_t key;
	uint32_t workers;
	uint64_t push_ns, post_ns;
	uint64_t step_ns;		/* between a worker's samples, as the workers take them */
	uint32_t max_version;
	uint64_t max_time_ns;
	uint64_t join_ns, end_ns;
	/*
	 * Make version vid the newest and send it: 0 with *done_ns the time it was handed
	 * over, read before any worker could take it (it counts as the newest from then), 1
	 * when it was skipped (no memory for it now: counted, the next push tries again), -1
	 * when it could not be (the run fails), 2 when it is being made, to be handed over
	 * later (psb_stale_trainer_made says when; until then no other push is asked for, and
	 * pushes due are counted late).
	 */
	int (*publish)(void *arg, uint32_t vid, uint64_t now_ns, uint64_t *done_ns);
	/* A message to a worker at ip:port. */
	void (*send)(void *arg, uint32_t ip, uint16_t port, const uint8_t *buf, size_t len);
	/* A post's figures (a line of results), NULL: none wanted. */
	void (*point)(void *arg, const struct psb_stale_point *pt);
	/* A line for the log at level (psb_cli_log_level numbering), NULL: none. */
	void (*log)(void *arg, int level, const char *line);
	void *arg;
};

enum psb_stale_trainer_phase {
	PSB_STALE_TR_JOINING,
	PSB_STALE_TR_RUNNING,
	PSB_STALE_TR_ENDING,
	PSB_STALE_TR_DONE,
	PSB_STALE_TR_FAILED,		/* failure says why */
};

struct psb_stale_trainer {
	struct psb_stale_trainer_cfg cfg;
	struct psb_stale_acct *acct;
	int phase;			/* enum psb_stale_trainer_phase */
	int ran;			/* publishing began */
	uint32_t vid;			/* the newest version published */
	uint32_t making;		/* the version being made (publish said 2), 0 none */
	uint64_t making_since;
	uint64_t t0;			/* publishing began (the join, until then) */
	uint64_t deadline;		/* joining, ending: the wait's end */
	uint64_t next_push, next_report, next_end_ack;
	uint8_t *done;			/* [workers]: holds the final version */
	uint8_t *warned;		/* [workers]: said to be silent */
	uint64_t pushes, push_sum_ns, push_max_ns, late_pushes, skipped;
	uint64_t report_posts;
	double report_diff, report_window;	/* of the posts since the last report */
	uint64_t unexpected;		/* well-formed messages a trainer takes none of (ACKs) */
	char failure[512];
};

/* 0, or -EINVAL (settings) / -ENOMEM. */
int psb_stale_trainer_init(struct psb_stale_trainer *t, const struct psb_stale_trainer_cfg *cfg,
		uint64_t now_ns);
void psb_stale_trainer_fini(struct psb_stale_trainer *t);

/*
 * A control message from ip:port (not a NACK: the versions' transport takes those).
 * Returns PSB_STALE_PULL with *m filled when it was a PULL from the address its worker
 * joined from (the caller gives that worker the newest version), else 0.
 */
int psb_stale_trainer_input(struct psb_stale_trainer *t, const uint8_t *buf, size_t len,
		uint32_t ip, uint16_t port, uint64_t now_ns, struct psb_stale_msg *m);

/*
 * Version vid, being made since publish said 2, handed over at done_ns (rc 0; read before
 * the hand-over, as publish's), or not to be (rc -1: the run fails). Ignored for any other
 * version, and once the run stopped publishing (the caller gives up a version still being
 * made then: the run's final version is the newest one handed over).
 */
void psb_stale_trainer_made(struct psb_stale_trainer *t, uint32_t vid, int rc,
		uint64_t done_ns);

/* Whatever is due by now: the phases, pushes, reports, END ACKs, the waits. */
void psb_stale_trainer_step(struct psb_stale_trainer *t, uint64_t now_ns);
/* When step has something to do next. */
uint64_t psb_stale_trainer_next_ns(const struct psb_stale_trainer *t);

static inline int
psb_stale_trainer_over(const struct psb_stale_trainer *t)
{
	return t->phase == PSB_STALE_TR_DONE || t->phase == PSB_STALE_TR_FAILED;
}

/* Workers holding the final version. */
uint32_t psb_stale_trainer_ndone(const struct psb_stale_trainer *t);

/*
 * Whether ip is a joined worker's address: only workers may NACK the trainer's versions,
 * so that no other host on the group can draw repairs from it.
 */
int psb_stale_trainer_is_worker(const struct psb_stale_trainer *t, uint32_t ip);

#endif /* PSB_STALE_TRAINER_H */
