/*
 * The application: the process's one struct psb_app (the node as its document says, ports,
 * pools, role instances, routes), the experiment run, what the control plane costs, and the
 * bring-up. Roles reach their node through it; psb.h is their fast path.
 */
#ifndef PSB_APP_H
#define PSB_APP_H

#include <limits.h>
#include <pthread.h>

#include "psb.h"
#include "psb_afp.h"
#include "psb_exp.h"
#include "psb_idle.h"
#include "psb_lcore.h"
#include "psb_logfile.h"
#include "psb_port.h"
#include "psb_ports.h"
#include "psb_sched.h"

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
	PSB_NODE_TRAINER,	/* a staleness trainer: the trainer role, no benchmark */
};

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
	/* serve (fixed storage in psb_run.c; NULL: none) */
	struct psb_serve_snap *serve_base;	/* each shard's figures at the window's start */
	struct psb_serve_snap *serve_final;	/* once ended: the window's figures */
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
	int sync_round;			/* node.sync_value round */
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
		uint64_t resend_burst;	/* per sender and shard */
		uint64_t resend_bps;
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
	int log_time;			/* --log-time */
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
	/*
	 * Passthrough (roles/passthrough.c): the exception port toward the host's kernel is the
	 * last of the ports (index exc_idx) when has_exc. The rx role does not poll it and psb
	 * sends nothing of its own there; the passthrough role alone uses it.
	 */
	int has_exc;
	uint16_t exc_idx;
	/* Shared-memory client slots (node.shm_clients): the last nshm ports. */
	char shm_lock[PATH_MAX];	/* the slots' lock file, removed at exit ("": none) */
	uint16_t nshm;
	uint16_t exc_mtu;		/* the exception port's MTU in effect */
	uint32_t roce_qps;		/* queue pairs counted at once */
	uint32_t exc_queue;		/* the passthrough role's ring: frames for the host */
	int roce_accounting;
	int isolate;			/* asked for; isolated: the port took the rules */
	int isolated;

	/* Runtime. */
	struct rte_mempool *pool;
	struct rte_mempool *xdp_pool;	/* af_xdp ports receive into it (their umem); NULL: none */
	struct rte_ring *tx_ring;	/* the tx role's ring: every role sends into it */
	struct rte_ring *pt_ring;	/* the passthrough role's: frames for the host (NULL: none) */
	/*
	 * Dispatch: every role that claims traffic, in table order, and its first instance
	 * (NULL: this node does not run it).
	 */
	unsigned int nroutes;
	struct psb_route {
		const struct psb_role *role;
		struct psb_role_inst *first;
		uint16_t port_lo, port_hi;	/* its role's ports() */
		uint64_t types[4];		/* bit t: its claim may take type t */
		int udp;			/* takes PSB_FRAME_UDP, not psb messages */
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
	int stale;			/* a staleness worker: the receiver role, no benchmark */
	int trainer;			/* a staleness trainer: the trainer role */
	/*
	 * Idle lcores (lib/idle, psb_lcore.c): idle_mode as asked (node.idle), idle_on whether
	 * they back off to sleeping now (auto follows the sharing of the CPUs), each sleep
	 * idle_sleep_ns at most (0: PSB_IDLE_SLEEP_MAX_NS).
	 */
	int idle_mode;			/* enum psb_idle_mode */
	int idle_sleep_asked;		/* node.idle_sleep set (or a staleness node) */
	volatile int idle_on;
	struct psb_idle_host idle_host;	/* what auto looks at (psb_host_cpus) */
	uint64_t idle_sleep_ns;
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
	/*
	 * Shared-memory client slots: what the client's ring does not take is dropped (the
	 * client resends), never kept back where it would hold every other port's traffic.
	 */
	uint8_t port_drop_full[RTE_MAX_ETHPORTS];
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

/* ports[i] is the exception port. */
static inline int
psb_port_is_exc(const struct psb_app *app, uint16_t i)
{
	return app->has_exc && i == app->exc_idx;
}

static inline uint64_t
psb_now_ns(const struct psb_app *app)
{
	return (uint64_t)((double)(rte_get_tsc_cycles() - app->start_tsc) * app->ns_per_tsc);
}

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
	uint16_t d = f->dst.port;
	uint8_t t = f->hdr.type;
	unsigned int i;
	int idx;

	for (i = 0; i < app->nroutes; i++) {
		const struct psb_route *r = &app->routes[i];

		/* outside its ports and types the claim says no: not asked */
		if (d < r->port_lo || d > r->port_hi || r->udp != (f->kind == PSB_FRAME_UDP) ||
		    (!r->udp && !((r->types[t >> 6] >> (t & 63)) & 1)))
			continue;
		idx = r->role->claim(app, f);
		if (idx == -1)
			continue;
		*rt = r;
		return r->first != NULL ? idx : PSB_ROUTE_NOT_HERE;
	}
	return -1;
}

/*
 * The rx classifier (psb_classify.c). Frames for the host wait in the rx role's hostbuf
 * until psb_host_flush hands them to the passthrough role's ring, a burst at a time.
 */
void psb_dispatch(struct psb_role_inst *ri, struct rte_mbuf *m);
void psb_host_flush(struct psb_role_inst *ri);
/* server: a BATCH whose records belong to several shards, split among them */
int psb_dispatch_batch(struct psb_role_inst *rx, struct rte_mbuf *m, const struct psb_frame *f);
void psb_neigh_learn(struct psb_app *app, uint32_t ip, const uint8_t *mac, uint16_t port);

/* Where worker rank's --results go: FILE, or FILE.<rank> with several local workers. */
void psb_worker_results_file(const struct psb_app *app, unsigned int rank, char *out, size_t len);

/*
 * Bring-up that touches the host (psb_bringup.c). psb_log_capture, once before anything is
 * logged, keeps the EAL's and the drivers' error lines (still written to stderr, each line
 * begun with the time of day after psb_log_stamp(1)); psb_log_quote gives the first
 * specific one since psb_log_mark, preferring one that holds about. psb_eal_init: rte_eal_init, and
 * on failure the EAL's own reason in err.
 * psb_host_prepare, before the EAL: undoes what killed psbs left on interfaces (and puts
 * interfaces back at exit and on a crash), checks that af_packet interfaces exist and that
 * memif servers' sockets are free (a stale one psb left is removed), waits for memif
 * clients' servers (--connect-timeout at most, then psb_run_fail_early: from_doc says where
 * the results go); dies with the reason. psb_host_port_mtu, before port i is set up: the
 * MTU to ask for and ethdev flags (a kernel interface keeps its MTU unless one was asked
 * for), its state recorded first. psb_host_ports_up, after the EAL, records the memif
 * sockets psb bound; psb_host_memif_ready, once its ports are started, records them as
 * taking clients. psb_host_memif_wait, right before memif client port i starts (it connects
 * then), waits for its server again: a psb server records its socket a moment after making
 * it. psb_host_restore, at exit, puts interfaces back.
 * psb_host_cpus: without -l (*lcores NULL or ""), the first CPU this process may use that
 * no other psb polls, claimed for the process's life and written to buf (*lcores points
 * there); with -l, its CPUs claimed too and a CPU another psb polls said at start.
 * psb_host_huge_lock: psb processes starting together look at free hugepages and take
 * them one at a time (a descriptor for psb_host_unlock after the EAL, or -1).
 */
void psb_log_capture(void);
void psb_log_stamp(int on);
uint64_t psb_log_mark(void);
int psb_log_quote(uint64_t mark, const char *about, char *out, size_t len);
int psb_eal_init(int argc, char **argv, char *err, size_t len);
void psb_host_prepare(struct psb_app *app, int from_doc);
uint16_t psb_host_port_mtu(struct psb_app *app, unsigned int i, unsigned int *flags);
void psb_host_ports_up(struct psb_app *app);
void psb_host_memif_wait(struct psb_app *app, unsigned int i, int from_doc);
void psb_host_memif_ready(struct psb_app *app);
/* An af_xdp port i that did not come up (err, the driver's line quote): says why, dies. */
void psb_host_xdp_failed(struct psb_app *app, unsigned int i, const char *err,
		const char *quote);
void psb_host_restore(struct psb_app *app);
void psb_host_cpus(struct psb_app *app, const char **lcores, char *buf, size_t len);
/* node.idle auto: every second, whether another psb came to poll a CPU this one claimed. */
void psb_host_cpus_watch(struct psb_app *app, uint64_t now);
int psb_host_huge_lock(struct psb_app *app, int no_huge);

#endif /* PSB_APP_H */
