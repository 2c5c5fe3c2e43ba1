/*
 * The blocks of figures every export reads, gathered at one moment (a snapshot), and their
 * descriptor tables (psb_metric.h). Role instances, ports and shards write their own
 * counters on their lcores; psb_snap_take sums and copies them under ctl_lock, and every
 * export (control socket, counters file, console, psbctl, Prometheus, telemetry) walks the
 * tables over the snapshot.
 */
#ifndef PSB_COUNTERS_H
#define PSB_COUNTERS_H

#include <stdint.h>

#include "psb_app.h"
#include "psb_bench.h"
#include "psb_idle.h"
#include "psb_kv.h"
#include "psb_mc_recv.h"
#include "psb_mc_send.h"
#include "psb_metric.h"
#include "psb_passthrough.h"
#include "psb_sched.h"

struct rte_eth_xstat;
struct rte_eth_xstat_name;

/* node */
struct psb_node_snap {
	double uptime_s;
	uint64_t lcores;
	uint64_t roles;
	char role[16];		/* server, worker, scheduler */
	char ip[16];
};

/* roles.NAME: one role instance */
struct psb_role_snap {
	struct psb_counters c;	/* first: its figures are at the same offsets as here */
	uint64_t lcore;
	double busy_pct;
	char name[32];		/* "rx0" */
	const char *role;	/* "rx" */
	int idx;
};

/* ports.N */
struct psb_port_snap {
	uint64_t port;
	uint64_t ipackets, opackets, ibytes, obytes, imissed, ierrors, oerrors, rx_nombuf;
	uint64_t bye_pauses, bye_pause_expiries, faults;
	uint64_t kernel_packets, kernel_drops;
	uint8_t paused;
	uint8_t afp;		/* an af_packet port: the kernel's counts are there */
	const char *spec;
	unsigned int idx;	/* index into the app's ports */
};

/* store: the parameter store summed over shards */
struct psb_store_limits_snap {
	uint64_t max_bytes, max_keys, reasm_bytes, reasm_sender_bytes;
	double reasm_timeout_s;
	uint64_t hold_max;
	uint64_t resend_burst;
	double resend_rate_gbps;
};

struct psb_store_snap {
	struct psb_kv_stats st;
	uint64_t keys, bytes, mem, staged, staged_bytes, held;
	struct psb_store_limits_snap limits;
};

/* control.idle: the sleeps of idle lcores (node.idle), every lcore's summed */
struct psb_idle_snap {
	struct psb_idle_stats st;
	double late_mean_us, late_max_us;
	uint8_t sleeping;
};

/* control: what serving the exports cost, and the limits clients hit */
struct psb_control_snap {
	uint64_t main_cycles, telemetry_cpu_ns, tsc_hz;
	uint64_t socket_requests, telemetry_requests, prometheus_requests, file_lines;
	uint64_t yields, yield_cycles;
	struct psb_cp_stats cp;
	struct psb_idle_snap idle;
};

/* experiment.pushpull: the figures of this node's workers, merged */
struct psb_pp_snap {
	struct psb_bench_result all;
	uint64_t repeat, workers, workers_done;
	uint8_t warming;
	double rtt_p50_us, rtt_p99_us, rtt_mean_us, staleness_mean;
	uint64_t staleness_p99, staleness_max;
};

/* experiment.serve: the store's figures over the experiment's window (of one shard, or all) */
struct psb_serve_snap {
	double elapsed_s, run_s;
	uint64_t resets, push, pull, pushpull, rounds_closed, bytes_summed, bytes_sent;
	uint64_t rx_pkts, tx_pkts, stale;
	char shard[16];
};

/* experiment.staleness: a staleness worker's run (the receiver role) */
struct psb_stale_snap {
	uint64_t worker, session, held, final_version, versions, verify_fail, posts, acks;
	uint64_t stray, early, unresolved;
	uint8_t joined, running, ended;
	struct psb_mc_recv_stats mc;	/* its multicast receiver's, every one */
};

/* experiment.trainer: a staleness trainer's run (the trainer role) */
#define PSB_TRN_NACKERS	4
struct psb_trainer_snap {
	uint64_t session, workers, joined, holding_final, version, pushes, late_pushes, skipped;
	uint8_t running, ended;
	double push_ms_mean, push_ms_max;
	uint64_t posts, joins, duplicates;
	double version_difference;	/* the old benchmark's measure, mean over the posts */
	double window_staleness, window_staleness_max;	/* psb's, mean and largest */
	uint64_t refused, malformed, unexpected, stray_nacks, unresolved, pulls, held_bytes;
	uint64_t series_dropped;
	/* its sender's, every one (psb_mc_send; in pull mode, every worker's summed) */
	struct psb_mc_send_stats mc;
	/* the busiest hosts NACKing it (psb_mc_send_nackers), by rank: 0 where none */
	uint32_t nacker_addr[PSB_TRN_NACKERS], nacker_ids[PSB_TRN_NACKERS];
	uint32_t nacker_id[PSB_TRN_NACKERS];
	uint64_t nacker_nacks[PSB_TRN_NACKERS], nacker_over_budget[PSB_TRN_NACKERS];
	uint64_t nacker_repair_bytes[PSB_TRN_NACKERS];
};

/* passthrough: the host's traffic through the node, RoCE among it counted (a snapshot of
 * what the passthrough role published) */
struct psb_pt_snap {
	struct psb_pt_stats st;
	struct psb_roce_totals tot;
};

/* experiment: the running or last one */
struct psb_exp_snap {
	uint64_t id;
	double elapsed_s;
	const char *kind, *state;
	char name[128];
	char results[4096];
	char error[512];
	uint8_t has_pp, has_serve, has_stale, has_trainer;
	struct psb_pp_snap pp;
	struct psb_serve_snap serve;
	struct psb_stale_snap stale;
	struct psb_trainer_snap trainer;
};

struct psb_snap {
	struct psb_node_snap node;
	unsigned int nports, nroles;
	struct psb_port_snap ports[PSB_MAX_PORTS];
	struct psb_role_snap roles[PSB_MAX_ROLES];
	uint8_t has_store, has_sched, has_pt;
	struct psb_store_snap store;
	struct psb_sched_stats sched;
	struct psb_pt_snap pt;
	struct psb_control_snap control;
	struct psb_exp_snap exp;
};

/* The tables: one line per figure. */
extern const struct psb_metric_block psb_node_block, psb_role_block, psb_port_block,
	psb_store_block, psb_sched_block, psb_control_block, psb_exp_block, psb_pp_block,
	psb_serve_block, psb_stale_block, psb_trainer_block, psb_pt_block;
/* A queue pair's figures (struct psb_roce_qp), for Prometheus; not a section of the counters */
extern const struct psb_metric_block psb_roce_qp_block;
/* Every table, for listing and checking them (NULL-terminated). */
extern const struct psb_metric_block *const psb_blocks[];

/*
 * Every figure of the tables: its path in the counters ("roles.NAME.rx_pkts"), kind, unit,
 * JSON type, Prometheus name ("" if none), label of its elements, whether it is left out of
 * short replies (detail) or only there on some nodes or ports (conditional), help.
 */
json_t *psb_metrics_json(void);
/*
 * Totals over role instances, in two steps: from zeros, _add each instance's counters, then
 * _io each again with its role's name (received packets and bytes are the rx role's, sent
 * ones the tx role's; other roles count them again as they pass through).
 */
void psb_totals_add(struct psb_counters *tot, const struct psb_counters *c);
void psb_totals_io(struct psb_counters *tot, const struct psb_counters *c, const char *role);
/*
 * Where the experiment's part of a snapshot comes from (psb_run.c's psb_snap_exp): the run
 * sits above the counters, so it is told to them rather than called by name.
 */
typedef void psb_snap_exp_fn(struct psb_app *app, struct psb_exp_snap *x);
void psb_snap_exp_source(psb_snap_exp_fn *fn);
/* A snapshot (free() it), NULL if memory ran out. Under ctl_lock. */
struct psb_snap *psb_snap_take(struct psb_app *app);
/*
 * Only some parts of it (the node's always): a reader of one section need not copy the
 * others (the experiment's histograms, every port's statistics), nor hold ctl_lock that
 * long. The parts left out are empty (no ports, no roles, has_* 0).
 */
#define PSB_SNAP_PORTS		(1u << 0)
#define PSB_SNAP_ROLES		(1u << 1)
#define PSB_SNAP_STORE		(1u << 2)
#define PSB_SNAP_SCHED		(1u << 3)
#define PSB_SNAP_CONTROL	(1u << 4)
#define PSB_SNAP_EXP		(1u << 5)
#define PSB_SNAP_PT		(1u << 6)
#define PSB_SNAP_ALL		0x7fu
struct psb_snap *psb_snap_take_parts(struct psb_app *app, unsigned int parts);
/* The experiment part as the object under key (NULL: the document); detail adds histograms. */
void psb_snap_exp_emit(struct psb_emit *e, const struct psb_exp_snap *x, const char *key,
		int detail);
/* A port's part as the entries of the object open in e; xstats (read now) with xstats. */
void psb_snap_port_emit(struct psb_emit *e, struct psb_app *app, const struct psb_port_snap *p,
		int xstats);
/* A budget as the store's counters name it: "max_keys", ...; "allocation" for none. */
const char *psb_store_budget_label(unsigned int k);
/* Why unfinished pushes were discarded, what resends were not sent: "timeout", "segment", ... */
const char *psb_store_discard_label(unsigned int k);
const char *psb_store_resend_label(unsigned int k);
/* The store summed over this node's shards, now. */
void psb_snap_store(const struct psb_app *app, struct psb_store_snap *t);
/* The scheduler's figures: 1, or 0 if this node runs none. */
int psb_snap_sched(const struct psb_app *app, struct psb_sched_stats *st);
/*
 * The queue pairs the passthrough tracks, most packets first, at most max of them, as
 * {"accounting", "tracked", "cap", "totals", "qps": [...]} (psb_roce_json's keys); NULL when
 * the node passes nothing through.
 */
json_t *psb_roce_qp_reply(const struct psb_app *app, uint32_t max);
/* The passthrough role's figures as it published them last: 1, or 0 if none runs. */
int psb_snap_pt(struct psb_pt_snap *pt);
/* The port i of app, now. */
void psb_snap_port(struct psb_app *app, unsigned int i, struct psb_port_snap *p);
/* The counters of the role instances added up, as psb_report_totals adds them. */
void psb_snap_totals(const struct psb_snap *s, struct psb_counters *tot);
/* The whole document, as psb_counters_json gives it. */
void psb_snap_emit(struct psb_emit *e, struct psb_app *app, const struct psb_snap *s);

/*
 * The extended statistics of port i, read now: n names and values (cached between calls;
 * under ctl_lock). <0: -errno.
 */
int psb_port_xstats(struct psb_app *app, unsigned int i, const struct rte_eth_xstat_name **names,
		const struct rte_eth_xstat **vals);

#endif /* PSB_COUNTERS_H */
