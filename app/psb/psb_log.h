/*
 * psb's log: rte_log types psb.<component>, each line "psb: ..." on stderr (rte_log adds
 * nothing to it). What a level means here, and what -q and -v make of it:
 *   ERR      a failure: psb gives up on something (shown with -q)
 *   WARNING  psb carried on, but someone should know (shown with -q)
 *   NOTICE   something unusual: a link down, a wait, a file it cannot write
 *   INFO     what psb does and with what (the default level of every type)
 *   DEBUG    more of it (-v: every type but psb.rx)
 * psb.rx says why received frames were dropped or ignored, and with -vv traces every
 * message; those are per packet, so at most one line a second per kind and lcore
 * (PSB_LOG_LIMITED), with how many were left out. Levels change with --log-level, the
 * console's "set log level" and the control socket's "log" (psb_log_set).
 */
#ifndef PSB_LOG_H
#define PSB_LOG_H

#include <stddef.h>
#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_log.h>
#include <rte_per_lcore.h>

struct psb_logtype {
	int id;			/* rte_log's */
	uint32_t level;		/* its level as last set: what the fast path reads */
};

extern struct psb_logtype psb_logtype_main, psb_logtype_host, psb_logtype_port, psb_logtype_rx,
	psb_logtype_worker, psb_logtype_scheduler, psb_logtype_agent, psb_logtype_ctl,
	psb_logtype_console, psb_logtype_export, psb_logtype_run, psb_logtype_echo,
	psb_logtype_receiver, psb_logtype_trainer, psb_logtype_passthrough, psb_logtype_server;

/* PSB_INFO(run, "experiment %u started", id): psb.run at INFO. */
#define PSB_LOG_AT(lvl, comp, fmt, ...) \
	rte_log(RTE_LOG_##lvl, psb_logtype_##comp.id, "psb: " fmt "\n", ##__VA_ARGS__)
#define PSB_ERR(comp, ...)	PSB_LOG_AT(ERR, comp, __VA_ARGS__)
#define PSB_WARN(comp, ...)	PSB_LOG_AT(WARNING, comp, __VA_ARGS__)
#define PSB_NOTICE(comp, ...)	PSB_LOG_AT(NOTICE, comp, __VA_ARGS__)
#define PSB_INFO(comp, ...)	PSB_LOG_AT(INFO, comp, __VA_ARGS__)
#define PSB_DEBUG(comp, ...)	PSB_LOG_AT(DEBUG, comp, __VA_ARGS__)

/* Whether comp logs at lvl: one load, for the fast path. */
#define PSB_LOG_ON(lvl, comp)	unlikely(psb_logtype_##comp.level >= RTE_LOG_##lvl)

/* Lines of one kind on one lcore: at most one a second, the others counted. */
struct psb_log_limit {
	uint64_t next_tsc;	/* no line before then */
	uint64_t held;		/* lines left out since the last one */
};

/*
 * 1 when a line may go out now, more then being "" or " (N more not shown)" for the lines
 * left out before it; 0 when it is left out (and counted).
 */
int psb_log_limit_pass(struct psb_log_limit *l, char *more, size_t len);

/* A line of comp at lvl within the limiter *lim (per lcore: the caller's). */
#define PSB_LOG_LIMITED_BY(lim, lvl, comp, fmt, ...) do {				\
	char psb_more_[48];								\
											\
	if (PSB_LOG_ON(lvl, comp) && psb_log_limit_pass(lim, psb_more_, sizeof(psb_more_)))\
		PSB_LOG_AT(lvl, comp, fmt "%s", ##__VA_ARGS__, psb_more_);		\
} while (0)

/* The same with a limiter of its own per lcore: for lines a packet or a peer can cause. */
#define PSB_LOG_LIMITED(lvl, comp, fmt, ...) do {					\
	static RTE_DEFINE_PER_LCORE(struct psb_log_limit, psb_limit_);			\
											\
	PSB_LOG_LIMITED_BY(&RTE_PER_LCORE(psb_limit_), lvl, comp, fmt, ##__VA_ARGS__);	\
} while (0)

/*
 * --log-level SPEC (psb_cli_log_spec): checked, kept for psb_log_start and for the EAL. A
 * type psb.* that names none of psb's types is refused. 0, or -EINVAL with why in err.
 */
int psb_log_option(const char *spec, char *err, size_t errlen);
/*
 * Before anything is logged: -v (every psb type but psb.rx at debug; -vv psb.rx too), then
 * -q (psb.*:warning), then the --log-level values in their order. The EAL is given the same
 * values (psb_log_eal_args), for the types drivers register as the EAL loads them.
 */
void psb_log_start(int quiet, int verbose);
/* The kept --log-level values as EAL arguments ("--log-level=psb.rx:debug"); how many. */
int psb_log_eal_args(const char *const **args);
/* After the EAL read its own --log-level: what the fast path reads follows. */
void psb_log_sync(void);

/*
 * Set every log type matching the glob type (psb's or DPDK's) to level; the names of those
 * set go to set(arg, name). 0, or -ENOENT when no type matches.
 */
int psb_log_set(const char *type, int level, void (*set)(void *arg, const char *name),
		void *arg);
/* psb's types in order: 0 with the name and level of the i-th, -ENOENT past the last. */
int psb_log_type(unsigned int i, const char **name, int *level);
/* Whether logtype (rte_log's) is one of psb's. */
int psb_log_own(int logtype);

#endif /* PSB_LOG_H */
