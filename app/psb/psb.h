/* psb appliance: shared state of one process, role interface, counters. */
#ifndef PSB_H
#define PSB_H

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <pthread.h>

#include "psb_afp.h"
#include "psb_exp.h"
#include "psb_lcore.h"
#include "psb_ports.h"
#include "psb_log.h"
#include "psb_logfile.h"
#include "psb_port.h"
#include "psb_proto.h"
#include "psb_sched.h"

#define PSB_MAX_SHARDS		16
#define PSB_MAX_LOCAL_WORKERS	32
#define PSB_MAX_ROLES		(5 + PSB_MAX_SHARDS + PSB_MAX_LOCAL_WORKERS)
#define PSB_ROLE_KINDS		16	/* entries of psb_roles[] at most */
#define PSB_ROLE_RING		4096	/* input ring of a server shard or a worker */
#define PSB_BURST		32
#define PSB_OUT_BUF		64
#define PSB_NEIGH_MAX		256

/* Parsed request metadata kept in each mbuf's private area. */
struct psb_meta {
	struct psb_hdr hdr;
	struct psb_addr src;
	uint16_t payload_off;
	uint16_t in_port;
};

static inline struct psb_meta *
psb_meta(struct rte_mbuf *m)
{
	return (struct psb_meta *)rte_mbuf_to_priv(m);
}

/*
 * Counters of one role instance: written only by the lcore running it, summed by readers.
 * One line each in the descriptor table of psb_counters.c, which every export walks.
 *
 * Every frame the rx role takes from a port ends in exactly one of: a drop reason, handed,
 * not_served, ring_full, no_mbuf, arp_replies, arp_learned, icmp_replies, byes, bye_ignored.
 */
struct psb_counters {
	uint64_t rx_pkts;
	uint64_t rx_bytes;
	uint64_t tx_pkts;
	uint64_t tx_bytes;
	uint64_t drops[PSB_DROP_MAX];
	uint64_t handed;	/* received messages handed to the role serving them */
	uint64_t not_served;	/* valid psb frame for a role this node does not run */
	uint64_t ring_full;	/* received messages lost: the serving role's ring was full */
	uint64_t no_mbuf;	/* pool empty */
	uint64_t tx_ring_full;	/* packets built to send, lost: the transmit ring was full */
	uint64_t tx_backlog;	/* packets the port did not take at once */
	uint64_t paused_drops;	/* packets for a port that was paused */
	uint64_t byes;		/* BYEs accepted: from a known peer to the data port */
	uint64_t bye_ignored;	/* BYEs from unknown sources or to other ports: not acted upon */
	uint64_t bye_lost;	/* accepted BYEs a server shard could not be told of */
	uint64_t arp_replies;
	uint64_t arp_learned;	/* ARP replies received: their sender learnt, nothing sent */
	uint64_t icmp_replies;
	uint64_t refused;	/* requests the role would not serve: out of its bounds */
	uint64_t rate_limited;	/* requests the role dropped: its rate budget was spent */
	uint64_t busy_cycles;
	uint64_t idle_cycles;
	uint64_t polls;
} __rte_cache_aligned;

/*
 * A peer's BYE pauses a memif port (see psb_app.port_paused) until its link went down and
 * up again, or for this long at most. The leaving peer drains its ports for up to
 * PSB_QUIESCE_NS before it closes them, and its closing reaches this side's memif control
 * thread soon after; a link that stays up longer than that was not left, and its port
 * must not stay silent.
 */
#define PSB_QUIESCE_NS		1000000000ull
#define PSB_BYE_PAUSE_NS	(PSB_QUIESCE_NS + 2000000000ull)

/* What BYEs did to a port. The rx role writes pauses and until_ns, the main lcore expiries. */
struct psb_port_bye {
	uint64_t until_ns;	/* the pause ends by then if the link never goes down */
	uint64_t pauses;	/* accepted BYEs that paused the port (memif ports only) */
	uint64_t expiries;	/* pauses ended by time, the link having stayed up */
};

enum psb_node_role {
	PSB_NODE_SERVER,
	PSB_NODE_WORKER,
	PSB_NODE_SCHEDULER,
};

struct psb_neigh {
	uint32_t ip;
	uint8_t mac[6];
	uint16_t port;
	volatile int valid;
};

struct psb_role_inst;

/* Control requests to roles, carried out by the role on its own lcore. */
enum psb_role_op {
	PSB_OP_START = 1,	/* arg: the experiment (struct psb_exp_conf): the role copies it */
	PSB_OP_STOP,		/* end the running experiment now */
	PSB_OP_RESET,		/* zero metrics and state (the generic counters are zeroed for it) */
	PSB_OP_SET,		/* arg: the experiment with live parameters changed: copied too */
};

/*
 * A mailbox of one slot per role instance: the main lcore fills op/arg and bumps req;
 * the role's lcore notices req != ack between passes, carries the request out and
 * publishes ack. The fast path only ever reads one line that rarely changes.
 */
struct psb_role_mbox {
	volatile uint32_t req;
	volatile uint32_t ack;
	int op;
	const void *arg;
	int rc;
} __rte_cache_aligned;

struct psb_app;

/*
 * A role: what planning needs (how many instances this node runs, the size of each one's
 * input ring), which received traffic psb_dispatch hands it, and its life on an lcore.
 * Planning, ring creation and dispatch walk psb_roles[] (roles/roles.c).
 */
struct psb_role {
	const char *name;
	/* Instances this node runs (0: none), from its settings; NULL: one on every node. */
	unsigned int (*count)(const struct psb_app *app);
	/*
	 * Each instance's input ring, a power of two (0: none): ring, or ring_size() when
	 * it depends on the node.
	 */
	unsigned int ring;
	unsigned int (*ring_size)(const struct psb_app *app);
	/*
	 * Dispatch: the instance that takes the message f (parsed, for this node), -1 for none,
	 * or PSB_ROLE_DELIVER: deliver() hands it on itself (split, copied). Asked in table
	 * order, also on nodes that do not run the role; the first role that claims a message
	 * owns it: it gets it, or where it does not run the message is not served. NULL: no
	 * received traffic.
	 */
	int (*claim)(const struct psb_app *app, const struct psb_frame *f);
	/* For PSB_ROLE_DELIVER: 0 or -errno as for a ring (-ENOBUFS full, -ENOMEM). */
	int (*deliver)(struct psb_role_inst *rx, struct rte_mbuf *m, const struct psb_frame *f);
	int (*init)(struct psb_role_inst *ri);
	/* One pass; returns the number of packets/events handled (0: idle). */
	int (*poll)(struct psb_role_inst *ri);
	void (*fini)(struct psb_role_inst *ri);
	/* A control request (enum psb_role_op), on the role's lcore; 0 or -errno. May be NULL. */
	int (*ctl)(struct psb_role_inst *ri, int op, const void *arg);
};

#define PSB_ROLE_DELIVER	(-2)

struct psb_role_inst {
	struct psb_counters cnt;
	const struct psb_role *role;
	struct psb_app *app;
	int idx;		/* shard or local worker index */
	unsigned int lcore;
	void *priv;
	struct rte_ring *ring;	/* its input (psb_role_ring), or NULL */
	uint16_t ntx;
	struct rte_mbuf *txbuf[PSB_OUT_BUF];
	struct psb_role_mbox mbox;
} __rte_cache_aligned;

/* The experiment the appliance runs or ran last (psb_run.c; main lcore). */
enum psb_run_state {
	PSB_RUN_IDLE,		/* nothing started yet */
	PSB_RUN_RUNNING,
	PSB_RUN_DONE,		/* ran to its end */
	PSB_RUN_STOPPED,	/* stopped early; results written for what ran */
	PSB_RUN_FAILED,
};

#define PSB_RUN_HISTORY	16

struct psb_run_rec {
	uint32_t id;
	int state;
	char name[64];
	int kind;
	double elapsed_s;
	char results[PATH_MAX];
};

struct psb_run {
	struct psb_exp_conf conf;	/* the running (or last) experiment */
	struct psb_exp_conf loaded;	/* "load": the one "start" starts */
	struct psb_exp_conf *handed;	/* the copy the workers were handed last */
	struct psb_exp_conf *late;	/* one before, kept: a role had not taken it */
	int handed_late;
	int have_loaded;
	int from_doc;			/* started from a document: write a results directory */
	int state;			/* enum psb_run_state */
	uint32_t id;			/* 1, 2, ... */
	uint64_t start_ns;		/* the run's start: its duration counts from here */
	uint64_t end_ns;
	uint64_t window_ns;		/* serve: the measured window's start (reset_state) */
	uint32_t resets;		/* reset_state during the run */
	char results[PATH_MAX];		/* where the results went */
	char results_dir[PATH_MAX];	/* where they will go (absolute) */
	char error[320];
	struct psb_logfile counters;	/* output.counters_file; fd -1: none */
	uint64_t next_counters_ns;
	json_t *serve_base;		/* serve: counters at the window's start */
	json_t *serve_final;		/* serve, once ended: the window's figures */
	uint32_t nhist;
	struct psb_run_rec hist[PSB_RUN_HISTORY];
};

/*
 * What serving the control plane costs the process. The main lcore writes its fields; the
 * telemetry ones are added atomically by DPDK's telemetry threads (one per client).
 */
struct psb_cp_stats {
	uint64_t main_cycles;		/* main lcore busy with control work (not waiting) */
	uint64_t telemetry_cpu_ns;	/* CPU time of psb's telemetry callbacks */
	uint64_t socket_requests;
	uint64_t telemetry_requests;
	uint64_t prometheus_requests;
	uint64_t file_lines;		/* counters lines written (both kinds of file) */
	/* Limits hit (CONTROL.md, Limits): what clients were refused or had to wait for. */
	uint64_t throttled_passes;	/* passes without serving clients: their share was used */
	uint64_t socket_deferred;	/* passes that left requests to the next: pass budget */
	uint64_t socket_busy;		/* connections refused: ctl_clients reached */
	uint64_t socket_too_large;	/* clients dropped: a request over 64 KiB */
	uint64_t socket_overflows;	/* clients dropped: ctl_reply_max of replies unread */
	uint64_t socket_idle_closed;	/* clients dropped: no request for ctl_idle_timeout */
	uint64_t file_refused;		/* files not read: not regular, or over file_max */
	uint64_t prometheus_timeouts;	/* connections closed: no whole request in time */
	uint64_t prometheus_evicted;	/* connections closed to make room for a new one */
	uint64_t file_rotations;	/* counters files moved to .1: counters_max reached */
	uint64_t file_reopens;		/* counters files opened again: renamed or removed */
	uint64_t prometheus_refused;	/* connections refused: all others busy with requests */
	uint64_t prometheus_incomplete;	/* connections ended without a whole request */
};

struct psb_app {
	/*
	 * The node as app->conf.node says (psb_opts.c derives these views once at start; the
	 * document is the only store of settings), then what start-up found.
	 */
	enum psb_node_role node_role;
	struct psb_addr me;
	int mac_given;
	uint16_t sched_port;
	uint32_t sched_ip;		/* 0: no scheduler */
	int host_sched;			/* this process runs the scheduler role */
	uint16_t num_workers;		/* cluster-wide */
	uint16_t num_servers;
	uint16_t nshards;
	uint16_t nlocal_workers;
	uint16_t worker_port_base;	/* local worker i sends from this + i */
	uint16_t rank_base;		/* rank of local worker 0 when there is no scheduler */
	uint32_t static_server_ip;	/* worker without scheduler: the server */
	int sync;
	uint16_t mtu_want;
	uint16_t mtu;
	uint16_t seg_size;
	uint32_t max_value;
	struct psb_exp_store store;	/* the store's budgets as given (0: derive at start) */
	struct psb_store_budget {	/* ... and as in effect */
		uint64_t max_bytes;
		uint32_t max_keys;
		uint64_t reasm_bytes;
		uint64_t reasm_sender_bytes;
		uint64_t reasm_timeout_ns;
		uint32_t hold_max;	/* segments a shard keeps in packet buffers */
		uint32_t hold_cost;	/* memory one packet buffer pins */
	} budget;
	/* The process's own options. */
	const char *results_file;	/* --results: the worker's result as JSON */
	int verbose;
	uint64_t idle_exit_ns;
	uint64_t duration_ns;
	const char *stats_file;
	int quiet;
	char results_root[PATH_MAX];	/* --output-dir: documents' output paths are inside it */
	struct psb_exp_conf conf;	/* node and experiment as the process started */
	int autostart;			/* start conf's experiment once the roles are ready */
	int stay;			/* keep running after experiments end (until quit) */
	int interactive;		/* -i: console on stdin */
	const char *cmdline_file;
	const char *ctl_path;		/* control socket ("" none, NULL: the default) */
	const char *counters_file;	/* JSON lines of every counter */
	uint64_t counters_every_ns;
	uint64_t counters_max;		/* --counters-max: rotate to .1 at this size */
	const char *prometheus;		/* [ADDR:]PORT of the Prometheus endpoint, NULL none */
	uint64_t yield_ns;		/* lcores give waiting threads the CPU this often (0: never) */
	uint64_t connect_timeout_ns;	/* each wait for a peer while setting up (0: forever) */
	/*
	 * Liveness (ps-lite's heartbeats): a node registered with a scheduler tells it it is
	 * alive every heartbeat_ns (0: never, and it is not watched); the scheduler holds a
	 * watched node silent for dead_after_ns dead (0: never) and tells the workers.
	 */
	uint64_t heartbeat_ns;
	uint64_t dead_after_ns;
	uint32_t epoch;			/* server: this incarnation, in aux of its answers */
	uint64_t yield_tsc;

	/* Ports. */
	uint16_t nports;
	int soft_ports;			/* no port DMAs (no PCI device) */
	struct psb_port_spec specs[PSB_MAX_PORTS];
	uint16_t port_ids[PSB_MAX_PORTS];

	/* Runtime. */
	struct rte_mempool *pool;
	struct rte_ring *tx_ring;	/* the tx role's ring: every role sends into it */
	/*
	 * Dispatch: every role that claims traffic, in table order, and its first instance
	 * (NULL: this node does not run it).
	 */
	unsigned int nroutes;
	struct psb_route {
		const struct psb_role *role;
		struct psb_role_inst *first;
	} routes[PSB_ROLE_KINDS];
	struct psb_parse_cfg parse;
	struct psb_neigh neigh[PSB_NEIGH_MAX];
	double ns_per_tsc;
	uint64_t start_tsc;
	volatile int quit;
	volatile int stop_lcores;	/* after quit: the control plane is done with them */
	volatile int registered;	/* server: scheduler acknowledged us */
	/*
	 * The end of a job, as ps-lite's Finalize: a worker registered with a scheduler tells
	 * it that it finished before it exits (finalizing: main asks the worker roles to;
	 * finalized: how many the scheduler acknowledged); once every worker did, the
	 * scheduler ends the servers and itself, unless keep_serving.
	 */
	int keep_serving;
	int echo;			/* answer psb ECHO requests (roles/echo.c) */
	volatile int finalizing;
	volatile uint32_t finalized;
	volatile uint32_t wk_registered;	/* worker roles that registered, once each */
	uint64_t finalize_start_ns;
	int finalize_done;
	/*
	 * Ports are not polled while paused: until their link is up, and on a memif port
	 * from a known peer's BYE until the link went down and up again (or
	 * PSB_BYE_PAUSE_NS passed). Polling a memif port while its control thread tears
	 * the connection down can fault in the PMD.
	 */
	volatile uint8_t port_paused[RTE_MAX_ETHPORTS];
	volatile uint8_t port_bye[RTE_MAX_ETHPORTS];
	uint8_t port_was_down[RTE_MAX_ETHPORTS];
	/*
	 * Ports whose memory a peer shares (memif) are polled in guarded bursts
	 * (psb_guard.h); one that faulted stays paused until its link went down and up.
	 */
	uint8_t port_shared[RTE_MAX_ETHPORTS];
	volatile uint8_t port_fault[RTE_MAX_ETHPORTS];
	uint64_t port_faults[RTE_MAX_ETHPORTS];
	struct psb_port_bye bye[RTE_MAX_ETHPORTS];
	/* af_packet ports (by port index): the kernel's counts of their sockets */
	struct psb_afp_stats afp[PSB_MAX_PORTS];

	uint16_t nroles;
	struct psb_role_inst *roles;	/* [nroles], cache aligned */
	unsigned int nworker_lcores;	/* 0: everything runs on the main lcore */

	/* Control plane (main lcore; readers on other threads take ctl_lock). */
	pthread_mutex_t ctl_lock;
	struct psb_cp_stats cp;
	struct psb_run run;
	char ctl_sock[256];
	int failing;			/* psb_app_fail: taken by the first caller */
	char fail_reason[256];
};

static inline uint64_t
psb_now_ns(const struct psb_app *app)
{
	return (uint64_t)((double)(rte_get_tsc_cycles() - app->start_tsc) * app->ns_per_tsc);
}

/* The role table (roles/roles.c). */
extern const struct psb_role psb_role_rx;
extern const struct psb_role psb_role_tx;
extern const struct psb_role psb_role_server;
extern const struct psb_role psb_role_worker;
extern const struct psb_role psb_role_scheduler;
extern const struct psb_role psb_role_agent;
extern const struct psb_role psb_role_echo;
extern const struct psb_role *const psb_roles[];	/* NULL-terminated */

static inline unsigned int
psb_role_count(const struct psb_role *r, const struct psb_app *app)
{
	return r->count != NULL ? r->count(app) : 1;
}

static inline unsigned int
psb_role_ring(const struct psb_role *r, const struct psb_app *app)
{
	return r->ring_size != NULL ? r->ring_size(app) : r->ring;
}
/*
 * The route that owns a message f: the first role of psb_roles[] whose claim takes it. Its
 * instance's index, or PSB_ROLE_DELIVER (its deliver() hands it on), with *rt set; -1: no
 * role claims it; PSB_ROUTE_NOT_HERE: its role does not run on this node (and no later
 * role may take it).
 */
#define PSB_ROUTE_NOT_HERE	(-3)

static inline int
psb_route_find(const struct psb_app *app, const struct psb_frame *f, const struct psb_route **rt)
{
	unsigned int i;
	int idx;

	for (i = 0; i < app->nroutes; i++) {
		idx = app->routes[i].role->claim(app, f);
		if (idx == -1)
			continue;
		*rt = &app->routes[i];
		return app->routes[i].first != NULL ? idx : PSB_ROUTE_NOT_HERE;
	}
	return -1;
}

/* Queue m for the role reading r: 0, or -ENOENT (no such role here), -ENOBUFS (ring full). */
static inline int
psb_handoff(struct rte_ring *r, struct rte_mbuf *m)
{
	if (r == NULL) {
		rte_pktmbuf_free(m);
		return -ENOENT;
	}
	if (rte_ring_enqueue(r, m) != 0) {
		rte_pktmbuf_free(m);
		return -ENOBUFS;
	}
	return 0;
}

/* What became of a message handed on, counted once whatever it was split into. */
static inline void
psb_handoff_count(struct psb_role_inst *ri, int rc)
{
	if (rc == 0)
		ri->cnt.handed++;
	else if (rc == -ENOENT)
		ri->cnt.not_served++;
	else if (rc == -ENOBUFS)
		ri->cnt.ring_full++;
	else
		ri->cnt.no_mbuf++;
}

/* The rx classifier (psb_classify.c). */
void psb_dispatch(struct psb_role_inst *ri, struct rte_mbuf *m);
/* server: a BATCH whose records belong to several shards, split among them */
int psb_dispatch_batch(struct psb_role_inst *rx, struct rte_mbuf *m, const struct psb_frame *f);
void psb_neigh_learn(struct psb_app *app, uint32_t ip, const uint8_t *mac, uint16_t port);

/* The output path (psb_out.c). To dst_ip: the tx role, or a role of this process. */
int psb_out(struct psb_role_inst *ri, struct rte_mbuf *m, uint32_t dst_ip);
/* Count m and queue it for the transmitter, out of the port m->port names. */
void psb_out_port(struct psb_role_inst *ri, struct rte_mbuf *m);
void psb_out_flush(struct psb_role_inst *ri);
/* Room for n more packets toward the transmitter right now. */
int psb_out_room(struct psb_role_inst *ri, unsigned int n);
/* Build one psb message into a new mbuf; NULL when the pool is empty. */
struct rte_mbuf *psb_build(struct psb_role_inst *ri, const struct psb_addr *src,
		const struct psb_addr *dst, const struct psb_hdr *h, const void *payload);
const struct psb_neigh *psb_neigh_find(const struct psb_app *app, uint32_t ip);
/* Send an ARP request for ip out of every port. */
void psb_arp_resolve(struct psb_role_inst *ri, uint32_t ip);

/* Registration with the scheduler (roles/agent.c), used by servers and workers. */
enum psb_agent_state {
	PSB_AGENT_RESOLVE,	/* ARP for the scheduler */
	PSB_AGENT_REGISTER,	/* REGISTER until REGISTER_ACK */
	PSB_AGENT_BARRIER,	/* BARRIER until BARRIER_ACK */
	PSB_AGENT_READY,
};

struct psb_agent {
	enum psb_agent_state state;
	int server;
	uint16_t src_port;
	uint16_t rank;
	uint32_t barrier_group;
	uint64_t next_try_ns;
	uint64_t phase_ns;		/* the current wait began (0: at the next step) */
	uint32_t tries;
	uint32_t idle_passes;
	struct psb_sched_view view;
	int ended;			/* server: the scheduler said the job is over */
	int rejoin;			/* REGISTER_ACK said: this rank was in the job already */
	uint64_t end_ns;		/* then: quit at this time (0: not) */
	uint64_t beat_next_ns;		/* the next HEARTBEAT */
};

void psb_agent_init(struct psb_agent *ag, struct psb_app *app, int server, uint16_t src_port);
/* Drive registration; returns 1 once ready. */
int psb_agent_step(struct psb_agent *ag, struct psb_role_inst *ri, uint64_t now_ns);
/*
 * Send a scheduler message of this node (REGISTER, BARRIER, FINALIZE, FINALIZE_ACK,
 * HEARTBEAT). REGISTER carries the server's epoch, and says whether it sends HEARTBEATs.
 */
void psb_agent_send(struct psb_agent *ag, struct psb_role_inst *ri, uint8_t type);
/* Feed a REGISTER_ACK / BARRIER_ACK. */
void psb_agent_input(struct psb_agent *ag, struct psb_app *app, const struct psb_meta *meta,
		const uint8_t *payload);
/*
 * 1 when the current wait (ARP, REGISTER or BARRIER) has lasted --connect-timeout; what
 * then says who did not answer what, for how long. psb_agent_restart starts a new wait.
 */
int psb_agent_expired(const struct psb_agent *ag, const struct psb_app *app, uint64_t now_ns,
		char *what, size_t len);
void psb_agent_restart(struct psb_agent *ag);
/* Once registered: a HEARTBEAT to the scheduler every --heartbeat (none when 0). */
void psb_agent_beat(struct psb_agent *ag, struct psb_role_inst *ri, uint64_t now_ns);

struct psb_kv;
/* Store of a server shard role (roles/server.c). */
const struct psb_kv *psb_server_kv(const struct psb_role_inst *ri);
const struct psb_sched *psb_scheduler_sched(const struct psb_role_inst *ri);

/* Where worker rank's --results go: FILE, or FILE.<rank> with several local workers. */
void psb_worker_results_file(const struct psb_app *app, unsigned int rank, char *out, size_t len);
/* Live state a worker role publishes (roles/worker.c), read by the control plane. */
struct psb_bench_result;
struct psb_worker_pub {
	uint32_t exp_id;		/* experiment these figures belong to (0: none yet) */
	int running;
	int done;			/* exp_id finished: result is final */
	int rc;				/* 0, or <0 when it failed */
	uint64_t repeat;
	int warming;			/* still in the warm-up iterations */
	char reason[256];		/* rc < 0: what failed, naming who did not answer */
};
/* Consistent copy of worker ri's figures; 0, or -EAGAIN if it kept changing. */
int psb_worker_read(const struct psb_role_inst *ri, struct psb_worker_pub *pub,
		struct psb_bench_result *r);

/*
 * Bring-up that touches the host (psb_bringup.c). psb_log_capture keeps the EAL's and the
 * drivers' error lines (still written to stderr); psb_log_quote gives the first specific
 * one since psb_log_mark, preferring one that holds about. psb_eal_init: rte_eal_init, and
 * on failure the EAL's own reason in err.
 * psb_host_prepare, before the EAL: undoes what killed psbs left on interfaces (and puts
 * interfaces back at exit and on a crash), checks that af_packet interfaces exist and that
 * memif servers' sockets are free (a stale one psb left is removed), waits for memif
 * clients' servers (--connect-timeout at most, then psb_run_fail_early: from_doc says where
 * the results go); dies with the reason. psb_host_port_mtu, before port i is set up: the
 * MTU to ask for and ethdev flags (a kernel interface keeps its MTU unless one was asked
 * for), its state recorded first. psb_host_ports_up, after the EAL, records the memif
 * sockets psb bound. psb_host_restore, at exit, puts interfaces back.
 * psb_host_cpus: without -l (*lcores NULL or ""), the first CPU this process may use that
 * no other psb polls, claimed for the process's life and written to buf (*lcores points
 * there); with -l, its CPUs claimed too and a CPU another psb polls said at start.
 * psb_host_huge_lock: psb processes starting together look at free hugepages and take
 * them one at a time (a descriptor for psb_host_unlock after the EAL, or -1).
 */
void psb_log_capture(void);
uint64_t psb_log_mark(void);
int psb_log_quote(uint64_t mark, const char *about, char *out, size_t len);
int psb_eal_init(int argc, char **argv, char *err, size_t len);
void psb_host_prepare(struct psb_app *app, int from_doc);
uint16_t psb_host_port_mtu(struct psb_app *app, unsigned int i, unsigned int *flags);
void psb_host_ports_up(struct psb_app *app);
void psb_host_restore(struct psb_app *app);
void psb_host_cpus(struct psb_app *app, const char **lcores, char *buf, size_t len);
int psb_host_huge_lock(struct psb_app *app, int no_huge);

#endif /* PSB_H */
