/* psb: options, EAL and port bring-up, role placement on lcores, run, report. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sched.h>
#include <sys/stat.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mempool.h>

#include "psb_app.h"
#include "psb_flow_rules.h"
#include "psb_agg.h"
#include "psb_bench.h"
#include "psb_cli.h"
#include "psb_counters.h"
#include "psb_ctl.h"
#include "psb_ethdev.h"
#include "psb_guard.h"
#include "psb_host.h"
#include "psb_kv.h"
#include "psb_lcore.h"
#include "psb_ports.h"
#include "psb_opts.h"
#include "psb_report.h"

#define MBUF_ROOM	(PSB_MAX_FRAME + RTE_PKTMBUF_HEADROOM)
#define MBUF_PRIV	RTE_ALIGN(sizeof(struct psb_meta), RTE_MBUF_PRIV_ALIGN)
#define NB_DESC		1024
/*
 * An af_xdp port's rings: the kernel drops what its receive ring cannot take, and a window
 * of a worker's segments arrives at once (af_packet's kernel rings hold 64 MiB); 8192 frames
 * of a 3500-byte MTU hold 28 MiB.
 */
#define XDP_DESC	8192
#define HOLD_PER_SHARD	2048	/* packet buffers a server shard may keep for reassembly */
#define MiB		(1024ull * 1024)

static struct psb_app g_app;

/*
 * The store's budgets, from what the operator gave (0: derive) and the memory the process
 * may use: --mem less the pools, or else half the machine's memory less the pools. The
 * store gets three quarters, reassembly a quarter, every sender a fair share of that but
 * always room for one push of node.max_value; shards split the totals. Every sender may
 * have two answers of node.max_value sent again at once, and 1 Gbit/s, in each shard.
 * Printed, because a refused push or resend must be explainable from the start-up lines.
 */
static void
derive_budget(struct psb_app *app, uint64_t mem_mb, uint64_t pools_mb,
		const struct psb_mem_info *mi)
{
	const struct psb_exp_store *g = &app->store;
	struct psb_store_budget *b = &app->budget;
	struct psb_kv_budget given = {
		.max_bytes = g->max_bytes, .max_keys = g->max_keys, .reasm_bytes = g->reasm_bytes,
		.reasm_sender_bytes = g->reasm_sender_bytes, .resend_burst = g->resend_burst,
		.resend_bps = g->resend_rate,
	}, eff;
	uint64_t base_mb = mem_mb != 0 ? mem_mb : mi->mem_total_mb / 2;
	const char *from = mem_mb != 0 ? "--mem " : "half the machine's ";
	char err[256], s1[32], s2[32], s3[32], s4[32], s5[32];
	uint16_t seg;

	if (base_mb < pools_mb + 64) {
		if (mem_mb != 0)
			psb_die("--mem %llu MB leaves too little for the store after the packet "
				"pools (%llu MB): give at least %llu MB", (unsigned long long)mem_mb,
				(unsigned long long)pools_mb, (unsigned long long)(pools_mb + 64));
		base_mb = pools_mb + 64;
		from = "the packet pools plus 64 MiB: ";
	}
	/*
	 * Senders may cut finer than this node's MTU: bookkeeping and headers are counted at
	 * 1500 bytes, or at the MTU wanted when lower (0, the port's own: at 1500).
	 */
	seg = psb_seg_size_for_mtu(app->mtu_want != 0 && app->mtu_want < 1500 ? app->mtu_want :
		1500);
	if (psb_kv_budget_derive(&eff, &given, (base_mb - pools_mb) * MiB, app->max_value, seg,
			app->num_workers, app->nshards, err, sizeof(err)) != 0)
		psb_die("%s", err);
	b->max_bytes = eff.max_bytes;
	b->max_keys = (uint32_t)eff.max_keys;
	b->reasm_bytes = eff.reasm_bytes;
	b->reasm_sender_bytes = eff.reasm_sender_bytes;
	b->reasm_timeout_ns = g->reasm_timeout;
	b->resend_burst = eff.resend_burst;
	b->resend_bps = eff.resend_bps;
	if (b->max_bytes / app->nshards < (uint64_t)app->max_value * 2)
		PSB_NOTICE(main, "store.max_bytes %s holds fewer than two values of node.max_value "
			"per shard", psb_cli_fmt_size(b->max_bytes, s1, sizeof(s1)));
	PSB_INFO(main, "store budgets: %s in at most %u keys; reassembly %s, %s per sender, "
		"%.3g s to the next segment; %u packet buffers kept per shard (from %s%s)",
		psb_cli_fmt_size(b->max_bytes, s1, sizeof(s1)), b->max_keys,
		psb_cli_fmt_size(b->reasm_bytes, s2, sizeof(s2)),
		psb_cli_fmt_size(b->reasm_sender_bytes, s3, sizeof(s3)),
		b->reasm_timeout_ns / 1e9, b->hold_max,
		from, psb_cli_fmt_size(base_mb * MiB, s4, sizeof(s4)));
	PSB_INFO(main, "store resend budget: every sender %s at once, then %.4g Gbit/s, per shard "
		"(answers sent again for repeats and REPAIRs, REPAIR_RESPs; beyond it they wait for "
		"the worker's next try)", psb_cli_fmt_size(b->resend_burst, s5, sizeof(s5)),
		b->resend_bps / 1e9);
}

/*
 * What the EAL (DPDK 22.11) and psb create in a runtime directory. At exit psb removes
 * these and nothing else, and the directory only when psb made it.
 */
static const char *const runtime_files[] = {
	"config", "fbarray_*", "hugepage_info", "hugepage_data", "mp_socket", "mp_socket_*",
	"dpdk_telemetry*", "psb.ctl", NULL,
};

/* <runtime base>/<prefix>: whether it exists before the EAL makes it, and not as a link. */
static void
runtime_dir_check(const char *prefix, char *dir, size_t len, int *existed)
{
	char base[PATH_MAX];
	struct stat st;

	psb_cli_runtime_base(base, sizeof(base));
	if ((size_t)snprintf(dir, len, "%s/%s", base, prefix) >= len)
		psb_die("--file-prefix: runtime directory path too long");
	*existed = lstat(dir, &st) == 0;
	if (*existed && !S_ISDIR(st.st_mode))
		psb_die("--file-prefix %s: %s is not a directory (a symbolic link?); psb will not "
			"use it", prefix, dir);
}

static void
runtime_dir_clean(const struct psb_app *app, const char *dir, int existed)
{
	char other[256];
	int rc = psb_rmdir_flat(dir, runtime_files, !existed, other, sizeof(other));

	if (rc == -ENOTEMPTY)
		PSB_NOTICE(host, "left %s in place: it holds \"%s\", which psb did not create", dir,
			other);
	else if (rc != 0)
		PSB_NOTICE(host, "cannot clean up %s: %s", dir, strerror(-rc));
	else if (existed)
		PSB_DEBUG(host, "left %s in place: it was there before psb started", dir);
}

/*
 * What the EAL's start made, for psb's end whichever way it comes: set once the EAL is up
 * (up), the ports set up so far (ports), whether the runtime directory was there before
 * (existed), the hugepage files of a single-file layout to remove (huge_prefix).
 */
static struct {
	int up, existed;
	unsigned int ports;
	pthread_t main;
	char huge_prefix[64];
} g_eal;

/* Undo what the EAL and the ports made: ports closed, sockets and interfaces given back. */
static void
eal_end(struct psb_app *app, int exit_code)
{
	char rt_dir[PATH_MAX];
	unsigned int i;

	if (!g_eal.up)
		return;
	g_eal.up = 0;
	for (i = 0; i < g_eal.ports; i++)
		psb_ethdev_close(app->port_ids[i]);
	psb_host_restore(app);
	for (i = 0; i < app->nports; i++)
		if (app->specs[i].kind == PSB_PORT_MEMIF && app->specs[i].memif_server)
			unlink(app->specs[i].sock_path);
	if (app->shm_lock[0] != '\0')
		unlink(app->shm_lock);
	/*
	 * The memif driver finishes a link's teardown on DPDK's interrupt thread, which may
	 * still be at it when its memory goes in rte_eal_cleanup(): give it a moment first.
	 */
	for (i = 0; i < g_eal.ports; i++)
		if (app->specs[i].kind == PSB_PORT_MEMIF) {
			rte_delay_us_sleep(100000);
			break;
		}
	psb_guard_exiting(exit_code);
	snprintf(rt_dir, sizeof(rt_dir), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
	runtime_dir_clean(app, rt_dir, g_eal.existed);
	if (g_eal.huge_prefix[0] != '\0')
		psb_huge_cleanup(g_eal.huge_prefix);
}

/*
 * An exit before main's end, once the EAL is up (psb_die on a port that does not come up,
 * a wait that expired): the same undoing, so that no runtime directory, socket file or
 * hugepage file stays behind. Only from the main thread: another one exiting is a crash.
 */
static void
eal_end_at_exit(void)
{
	if (!g_eal.up || !pthread_equal(pthread_self(), g_eal.main))
		return;
	g_app.stop_lcores = 1;
	rte_eal_mp_wait_lcore();
	eal_end(&g_app, 2);
}

/* Fault the pool's pages in now (without hugepages they are mapped lazily), not mid-run. */
static void
touch_mbuf(struct rte_mempool *mp, void *opaque, void *obj, unsigned int idx)
{
	struct rte_mbuf *m = obj;
	volatile uint8_t *p = m->buf_addr;
	uint32_t off;

	RTE_SET_USED(mp);
	RTE_SET_USED(opaque);
	RTE_SET_USED(idx);
	for (off = 0; off < m->buf_len; off += 4096)
		p[off] = 0;
}

static volatile sig_atomic_t g_signal;	/* the signal that ended psb, said once out */

static void
on_signal(int sig)
{
	g_signal = sig;
	g_app.quit = 1;
}

/* The EAL's arguments, in one line (-v). */
static void
log_eal_argv(const struct psb_eal_argv *ea, int argc)
{
	char line[sizeof(ea->buf) + PSB_EAL_MAX_ARGS];
	size_t used = 0;
	int i;

	if (!PSB_LOG_ON(DEBUG, main))
		return;
	line[0] = '\0';
	for (i = 0; i < argc && used < sizeof(line); i++)
		used += (size_t)snprintf(line + used, sizeof(line) - used, " %s", ea->argv[i]);
	PSB_DEBUG(main, "EAL:%s", line);
}

/* The waits psb gives up on, and when: said at start so that a run that fails is no surprise. */
static void
log_bounds(const struct psb_app *app)
{
	uint64_t t = app->conf.pushpull.timeout, total = 0;
	char conn[32], req[160] = "";
	uint32_t i;

	if (app->connect_timeout_ns != 0)
		snprintf(conn, sizeof(conn), "%.1f s", app->connect_timeout_ns / 1e9);
	else
		snprintf(conn, sizeof(conn), "no limit");
	if (app->node_role == PSB_NODE_WORKER) {
		/*
		 * psb_wk: a try waits timeout << min(tries so far, 6), and at least the
		 * measured round trip, which counts up to PSB_WK_RTO_CAP times timeout
		 */
		for (i = 0; i <= app->conf.pushpull.max_retries; i++)
			total += RTE_MAX(t << (i < 6 ? i : 6), PSB_WK_RTO_CAP * t);
		if (app->conf.pushpull.max_retries != 0)
			snprintf(req, sizeof(req), "; a request %.0f ms doubling (at least the round "
				 "trip, up to %.0f ms), %u retries: %.1f s at most (--timeout-us, "
				 "--max-retries)", t / 1e6, PSB_WK_RTO_CAP * t / 1e6,
				 (unsigned int)app->conf.pushpull.max_retries, total / 1e9);
		else
			snprintf(req, sizeof(req), "; a request is retried forever (--max-retries 0)");
	}
	PSB_INFO(main, "waits: %s for each setup step (--connect-timeout)%s", conn, req);
	if (app->has_exc)
		PSB_INFO(main, "passthrough: exception port %s: frames not psb's go there "
			 "untouched, the host's out of port %s; %s at most %u RoCE queue pairs "
			 "(--roce-qps; then one not seen lately is evicted), ICRCs checked by %s, "
			 "%u frames queued for the host (--exception-queue); frames over its MTU %u "
			 "are dropped for the host (counted, host_dropped); the host's frames use "
			 "at most half of the transmit ring's %u places, the rest wait (host_held)",
			 app->specs[app->exc_idx].spec, app->specs[0].spec,
			 app->roce_accounting ? "counting" : "not counting (--no-roce-accounting),",
			 app->roce_qps, psb_roce_icrc_impl(), psb_role_ring(&psb_role_passthrough, app),
			 app->exc_mtu, psb_role_ring(&psb_role_tx, app));
	if (app->sched_ip == 0)
		return;
	if (app->node_role != PSB_NODE_SCHEDULER && app->heartbeat_ns == 0)
		PSB_INFO(main, "liveness: no heartbeats: the scheduler does not watch this node "
			"(--heartbeat 0)");
	else if (app->node_role != PSB_NODE_SCHEDULER)
		PSB_INFO(main, "liveness: a heartbeat to the scheduler every %.2f s (--heartbeat)",
			app->heartbeat_ns / 1e9);
	if (app->host_sched && app->dead_after_ns == 0)
		PSB_INFO(main, "liveness: the scheduler holds no node dead (--dead-after 0)");
	else if (app->host_sched)
		PSB_INFO(main, "liveness: a node whose heartbeats stop for %.1f s is dead "
			"(--dead-after); a dead or restarted server ends the job",
			app->dead_after_ns / 1e9);
	if (app->node_role == PSB_NODE_SERVER)
		PSB_INFO(main, "server epoch %08x: in every answer; a worker that sees it change "
			"fails the job", app->epoch);
}

/*
 * The pool this node needs: its descriptors and the rings of the roles it runs
 * (psb_roles[]) full at once, and 4096 for the per-lcore caches. Servers and workers also:
 * two rings more, and the segments server shards keep until their push is whole. That
 * slack matters to them: cut to its own rings, a worker lost ~6 % of 1 MB PUSH_PULL
 * goodput in paired runs.
 */
static uint64_t
role_mbufs(const struct psb_app *app)
{
	/* a shared-memory slot holds no mbufs: memif copies in and out at each burst */
	uint64_t n = (uint64_t)(app->nports - app->nshm) * 2 * NB_DESC + 4096;
	const struct psb_role *const *rp;

	for (rp = psb_roles; *rp != NULL; rp++)
		n += (uint64_t)psb_role_count(*rp, app) * psb_role_ring(*rp, app);
	if (app->node_role == PSB_NODE_SCHEDULER)
		return n;
	return n + 2 * PSB_ROLE_RING + (uint64_t)app->budget.hold_max * app->nshards;
}

/*
 * The packet pool of n mbufs in MB, laid out as the mempool lays it out on pages of page
 * bytes: no object across a page, so one larger than a page takes whole pages (on 4 KB
 * pages a jumbo mbuf takes 12 KB, not its 9.7 KB); 16 MB more for the pool's own parts.
 */
static uint64_t
pool_mb_of(uint64_t n, uint32_t room, uint64_t page)
{
	struct rte_mempool_objsz sz;
	uint64_t obj = rte_mempool_calc_obj_size(sizeof(struct rte_mbuf) + MBUF_PRIV + room, 0,
						 &sz);
	uint64_t bytes = obj > page ? n * RTE_ALIGN_CEIL(obj, page) : (n / (page / obj) + 1) * page;

	return (bytes >> 20) + 16;
}

static uint64_t
pool_mb(uint64_t n, uint64_t page)
{
	return pool_mb_of(n, MBUF_ROOM, page);
}

/*
 * The data room of an af_xdp port's mbufs: the most that keeps a whole mempool object
 * (its header, the mbuf, psb's private part, the room and the mempool's padding) within
 * one umem chunk. 0 when no af_xdp port needs one.
 */
static unsigned int
xdp_ports(const struct psb_app *app)
{
	unsigned int i, n = 0;

	for (i = 0; i < app->nports; i++)
		n += app->specs[i].kind == PSB_PORT_AF_XDP;
	return n;
}

static uint32_t
xdp_room(const struct psb_app *app)
{
	struct rte_mempool_objsz sz;
	uint32_t room = PSB_XDP_CHUNK;

	if (xdp_ports(app) == 0)
		return 0;
	while (room > RTE_PKTMBUF_HEADROOM + 1024 &&
	       rte_mempool_calc_obj_size(sizeof(struct rte_mbuf) + MBUF_PRIV + room, 0, &sz) >
	       PSB_XDP_CHUNK)
		room -= RTE_CACHE_LINE_SIZE;
	return room;
}

static uint64_t
total_rx(const struct psb_app *app)
{
	uint64_t n = 0;
	uint16_t i;

	for (i = 0; i < app->nroles; i++)
		if (app->roles[i].role == &psb_role_rx)
			n += app->roles[i].cnt.rx_pkts;
	return n;
}

/* Housekeeping done by the main lcore: exit conditions. */
#define FINALIZE_WAIT_NS	2000000000ull

/*
 * A worker registered with a scheduler tells it, before it exits, that it finished (the
 * worker roles send FINALIZE until acknowledged): once every worker of the job did, the
 * scheduler ends the servers and itself. 1 while that goes on, FINALIZE_WAIT_NS at most.
 */
static int
finalize_pending(struct psb_app *app)
{
	uint64_t now;
	char ip[20];

	if (app->node_role != PSB_NODE_WORKER || app->sched_ip == 0 || app->finalize_done ||
	    __atomic_load_n(&app->wk_registered, __ATOMIC_ACQUIRE) == 0)
		return 0;
	now = psb_now_ns(app);
	if (!app->finalizing) {
		app->finalize_start_ns = now;
		__atomic_store_n(&app->finalizing, 1, __ATOMIC_RELEASE);
	}
	if (__atomic_load_n(&app->finalized, __ATOMIC_ACQUIRE) >=
	    __atomic_load_n(&app->wk_registered, __ATOMIC_ACQUIRE)) {
		app->finalize_done = 1;
		PSB_DEBUG(main, "scheduler %s:%u acknowledged that the worker(s) finished",
			psb_ip_str(app->sched_ip, ip), app->sched_port);
		return 0;
	}
	if (now - app->finalize_start_ns < FINALIZE_WAIT_NS)
		return 1;
	app->finalize_done = 1;
	PSB_NOTICE(main, "scheduler %s:%u did not acknowledge that the worker(s) finished (FINALIZE) "
		"within %.0f s; exiting all the same", psb_ip_str(app->sched_ip, ip),
		app->sched_port, FINALIZE_WAIT_NS / 1e9);
	return 0;
}

static void
check_exit(struct psb_app *app, int console_on, uint64_t now, uint64_t *last_rx,
		uint64_t *last_rx_ns)
{
	uint64_t rx = total_rx(app);

	/*
	 * psb given an experiment to run (a worker command line, --config, a command file)
	 * lives as long as it; one started to take commands stays until told to quit.
	 */
	if ((app->autostart || app->cmdline_file != NULL) && !app->stay && !app->interactive &&
	    !console_on && app->run.id != 0 && !psb_run_active(app))
		app->quit = 1;
	if (app->duration_ns != 0 && now >= app->duration_ns)
		app->quit = 1;
	if (app->idle_exit_ns != 0) {
		if (rx != *last_rx) {
			*last_rx = rx;
			*last_rx_ns = now;
		} else if (now - *last_rx_ns >= app->idle_exit_ns) {
			app->quit = 1;
		}
	}
}

int
main(int argc, char **argv)
{
	struct psb_app *app = &g_app;
	struct psb_run_opts ro;
	struct psb_mem_info mi;
	struct psb_eal_argv ea;
	char err[512], rt_dir[PATH_MAX];
	uint64_t need_mb, nmbufs, xdp_n, xdp_mb, last_rx = 0, last_rx_ns = 0;
	uint32_t xroom;
	int console_on = 0, rt_existed = 0, huge_fd;
	char auto_lcores[16];
	uint64_t log_mark;
	unsigned int nworker_lcores = 0, i;
	int rc, eal_argc, exit_code = 0, cut_short;
	const char *cfg;

	memset(&ro, 0, sizeof(ro));
	app->counters_every_ns = 1000000000ull;
	app->counters_max = 64ull << 20;
	app->run.counters.fd = -1;
	if (getcwd(app->results_root, sizeof(app->results_root)) == NULL)
		app->results_root[0] = '\0';	/* then relative to wherever psb runs */
	pthread_mutex_init(&app->ctl_lock, NULL);
	psb_cli_heap_keep();	/* segments a server copies (not held as mbufs) until a push is whole */
	psb_opts_parse(app, &ro, argc, argv);
	psb_snap_exp_source(psb_snap_exp);
	psb_log_capture();
	psb_log_stamp(app->log_time);
	psb_log_start(app->quiet, app->verbose);
	cfg = ro.config;
	if (app->node_role == PSB_NODE_SERVER)
		app->epoch = psb_epoch_new();
	/* a document runs at once unless a console or --wait is to start things */
	app->autostart = !app->interactive && app->cmdline_file == NULL && !app->stay &&
		(ro.config != NULL || app->node_role == PSB_NODE_WORKER);
	if (ro.config != NULL && app->autostart &&
	    psb_exp_results_claim(app->results_root, &app->conf, err, sizeof(err)) != 0)
		psb_die("%s: %s", cfg, err);
	app->worker_port_base = (uint16_t)(app->me.port + 2);
	if (app->sched_port >= app->worker_port_base &&
	    app->sched_port < app->worker_port_base + app->nlocal_workers)
		psb_die("scheduler port %u collides with worker ports %u-%u", app->sched_port,
			app->worker_port_base, app->worker_port_base + app->nlocal_workers - 1);

	/* Pool: what this role's rings, descriptors and held segments can hold (role_mbufs) */
	psb_mem_probe(&mi);
	if (app->node_role == PSB_NODE_SERVER)
		app->budget.hold_max = HOLD_PER_SHARD;
	nmbufs = ro.mbufs != 0 ? ro.mbufs : role_mbufs(app);
	if (ro.mbufs != 0 && app->budget.hold_max * app->nshards > nmbufs / 4)
		app->budget.hold_max = (uint32_t)(nmbufs / 4 / app->nshards);
	/* on hugepages, or on 4 KB pages (--no-huge), which take more: checked against that */
	need_mb = pool_mb(nmbufs, 4096);
	/* af_xdp ports receive into a pool of their own, as many mbufs of one umem chunk */
	xroom = xdp_room(app);
	/* its rings full each way and what the roles hold, at least as many as the main pool */
	xdp_n = RTE_MAX(nmbufs, 3ull * XDP_DESC * xdp_ports(app));
	xdp_mb = xroom != 0 ? pool_mb_of(xdp_n, xroom, 4096) : 0;
	need_mb += xdp_mb;
	if (ro.mem_given && ro.eal.mem_mb < need_mb)
		psb_die("--mem %llu MB cannot hold the packet pool: %llu mbufs of %u bytes need %llu MB "
			"(give more --mem, or fewer --mbufs)", (unsigned long long)ro.eal.mem_mb,
			(unsigned long long)nmbufs, (unsigned int)MBUF_ROOM,
			(unsigned long long)need_mb);
	if (app->node_role == PSB_NODE_SERVER)
		derive_budget(app, ro.mem_given ? ro.eal.mem_mb : 0, need_mb + 64, &mi);
	/* the EAL gets what its pools need; the rest of --mem is the store's */
	ro.eal.mem_mb = pool_mb(nmbufs, RTE_PGSIZE_2M) + xdp_mb + 64;
	ro.eal.mem_mb_no_huge = need_mb + 64;

	/* before the EAL: what can be checked is, and what a killed psb left is undone */
	psb_host_prepare(app, ro.config != NULL);
	psb_host_cpus(app, &ro.eal.lcores, auto_lcores, sizeof(auto_lcores));
	snprintf(app->conf.node.lcores, sizeof(app->conf.node.lcores), "%s", ro.eal.lcores);
	/* psb processes starting together: each sees the hugepages the ones before it took */
	huge_fd = psb_host_huge_lock(app, ro.eal.force_no_huge);
	psb_mem_probe(&mi);
	ro.eal.n_log_levels = psb_log_eal_args(&ro.eal.log_levels);
	eal_argc = psb_eal_build_argv(argv[0], &ro.eal, app->specs, app->nports, &mi, &ea, err,
		sizeof(err));
	if (eal_argc < 0)
		psb_die("%s", err);
	log_eal_argv(&ea, eal_argc);
	PSB_DEBUG(main, "%s, %llu MB for %llu mbufs", ea.use_huge ? "hugepages" : "no hugepages",
		(unsigned long long)(ea.use_huge ? ro.eal.mem_mb : ro.eal.mem_mb_no_huge),
		(unsigned long long)nmbufs);
	runtime_dir_check(ea.prefix, rt_dir, sizeof(rt_dir), &rt_existed);
	log_mark = psb_log_mark();
	if (psb_eal_init(eal_argc, ea.argv, err, sizeof(err)) != 0) {
		/*
		 * What the EAL made before it gave up goes, nothing can use it; a directory that
		 * was there before may be another psb's (its prefix is taken): left alone.
		 */
		if (!rt_existed)
			runtime_dir_clean(app, rt_dir, 0);
		psb_die("EAL initialisation failed: %s (EAL arguments: psb -v shows them)", err);
	}
	g_eal.up = 1;
	g_eal.existed = rt_existed;
	g_eal.main = pthread_self();
	if (ea.use_huge && ea.single_file)
		snprintf(g_eal.huge_prefix, sizeof(g_eal.huge_prefix), "%s", ea.prefix);
	atexit(eal_end_at_exit);
	psb_host_unlock(huge_fd);
	psb_host_ports_up(app);

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);	/* its terminal went away: end as for Ctrl-C */
	signal(SIGPIPE, SIG_IGN);
	app->ns_per_tsc = 1e9 / (double)rte_get_tsc_hz();
	app->yield_tsc = (uint64_t)((double)app->yield_ns / app->ns_per_tsc);
	app->start_tsc = rte_get_tsc_cycles();
	psb_agg_add(NULL, NULL, 0);	/* pick the aggregation kernel now, not on the fast path */
	if ((rc = psb_guard_init()) != 0)
		psb_die("cannot install the fault handler of memif bursts: %s", strerror(-rc));
	psb_guard_grace_on();

	app->pool = rte_pktmbuf_pool_create("psb_pool", (unsigned int)nmbufs, 256, MBUF_PRIV,
		MBUF_ROOM, (int)rte_socket_id());
	if (app->pool == NULL)
		psb_die("cannot create a pool of %llu mbufs (%llu MB): %s; give more --mem",
			(unsigned long long)nmbufs, (unsigned long long)need_mb, rte_strerror(rte_errno));

	rte_mempool_obj_iter(app->pool, touch_mbuf, NULL);
	if (xroom != 0) {
		app->xdp_pool = rte_pktmbuf_pool_create("psb_xdp_pool", (unsigned int)xdp_n, 256,
			MBUF_PRIV, (uint16_t)xroom, (int)rte_socket_id());
		if (app->xdp_pool == NULL)
			psb_die("cannot create the af_xdp ports' pool of %llu mbufs (%llu MB): %s; "
				"give more --mem", (unsigned long long)xdp_n,
				(unsigned long long)xdp_mb, rte_strerror(rte_errno));
		rte_mempool_obj_iter(app->xdp_pool, touch_mbuf, NULL);
	}

	for (i = 0; i < app->nports; i++) {
		struct psb_ethdev_info info;
		unsigned int flags;
		uint16_t pid, mtu;
		struct psb_flow_rule rules[PSB_FLOW_MAX_RULES];
		struct psb_ethdev_isolate iso = { 0 };
		uint64_t mark;
		char why[320];

		if (rte_eth_dev_get_port_by_name(app->specs[i].name, &pid) != 0) {
			int quoted = psb_log_quote(log_mark, app->specs[i].name, err,
						   sizeof(err)) == 0;

			if (quoted && app->specs[i].kind == PSB_PORT_AF_PACKET &&
			    strstr(err, "PACKET_FANOUT") != NULL)
				psb_die("port '%s': device %s did not come up: %s. The driver names "
					"its fanout group after the process id (%d) and the interface's "
					"index: another AF_PACKET program in this network namespace holds "
					"the same group on another interface. Start psb again (another "
					"process id), or give it a network namespace of its own",
					app->specs[i].spec, app->specs[i].name, err, (int)getpid());
			if (quoted)
				psb_die("port '%s': device %s did not come up: %s", app->specs[i].spec,
					app->specs[i].name, err);
			psb_die("port '%s': device %s did not come up (is its driver installed? "
				"see scripts/setup.sh)", app->specs[i].spec, app->specs[i].name);
		}
		mtu = psb_host_port_mtu(app, i, &flags);
		if (app->specs[i].kind == PSB_PORT_MEMIF && !app->specs[i].memif_server)
			psb_host_memif_wait(app, i, ro.config != NULL);
		if (i == 0 && app->isolate) {
			iso.rules = rules;
			iso.n = psb_ports_isolate_rules(app, rules);
		}
		mark = psb_log_mark();
		if (psb_ethdev_setup(pid, mtu, flags,
				app->specs[i].kind == PSB_PORT_AF_XDP ? XDP_DESC : NB_DESC,
				app->specs[i].kind == PSB_PORT_AF_XDP ? app->xdp_pool : app->pool,
				i == 0 && app->isolate ? &iso : NULL, &info, err,
				sizeof(err)) != 0) {
			if (app->specs[i].kind == PSB_PORT_AF_XDP) {
				if (psb_log_quote(mark, "xsk", why, sizeof(why)) != 0)
					why[0] = '\0';
				psb_host_xdp_failed(app, i, err, why);
			}
			/* the driver's own line says why (e.g. no memif server on the socket) */
			if (psb_log_quote(mark, NULL, why, sizeof(why)) == 0)
				psb_die("port '%s': %s: %s", app->specs[i].spec, err, why);
			psb_die("port '%s': %s", app->specs[i].spec, err);
		}
		app->port_ids[i] = pid;
		g_eal.ports = i + 1;
		if (i == 0 && app->isolate)
			psb_ports_isolate_said(app, &iso);
		app->port_shared[pid] = app->specs[i].kind == PSB_PORT_MEMIF;
		app->port_drop_full[pid] = app->specs[i].shm_slot != 0;
		if (app->specs[i].kind == PSB_PORT_AF_PACKET &&
		    psb_afp_stats_open(&app->afp[i], strchr(app->specs[i].spec, ':') + 1, err,
				sizeof(err)) != 0)
			PSB_NOTICE(port, "port '%s': no kernel counts of its socket: %s",
				app->specs[i].spec, err);
		if (app->specs[i].kind == PSB_PORT_AF_XDP && info.mtu < mtu)
			PSB_NOTICE(port, "port '%s': AF_XDP carries frames of at most %u bytes of IP "
				"here (one %u-byte umem chunk each, no multi-buffer), %s has MTU %u: "
				"psb segments to %u, and larger frames from peers are not received",
				app->specs[i].spec, info.mtu, PSB_XDP_CHUNK, app->specs[i].ifname, mtu,
				info.mtu);
		/* the host's MTU behind the exception port is not psb's: it bounds what passes */
		if (psb_port_is_exc(app, i))
			app->exc_mtu = info.mtu;
		else if (i == 0 || info.mtu < app->mtu)
			app->mtu = info.mtu;
		PSB_DEBUG(port, "port %u: %s (%s), MTU %u", pid, app->specs[i].spec, info.driver,
			info.mtu);
	}
	psb_host_memif_ready(app);
	if (!app->mac_given) {
		struct rte_ether_addr ea0;

		rte_eth_macaddr_get(app->port_ids[0], &ea0);
		memcpy(app->me.mac, ea0.addr_bytes, 6);
	}
	app->seg_size = psb_seg_size_for_mtu(app->mtu);
	app->soft_ports = 1;
	for (i = 0; i < app->nports; i++)
		if (app->specs[i].kind == PSB_PORT_PCI)
			app->soft_ports = 0;
	app->parse.my_ip = app->me.ip;
	app->parse.psb_port = 0;	/* ports are routed in psb_dispatch */
	app->parse.check_ip_csum = 1;

	if (psb_lcore_plan(app) != 0)
		psb_die("out of memory");

	for (i = 0; i < app->nroles; i++) {
		struct psb_role_inst *ri = &app->roles[i];

		if (ri->role->init != NULL && (rc = ri->role->init(ri)) != 0)
			psb_die("role %s: init failed: %s%s", ri->role->name, strerror(-rc),
				rc == -ENOMEM ? " (DPDK's memory is short: give more --mem)" : "");
	}

	nworker_lcores = psb_lcore_place(app);
	PSB_INFO(main, "%s %s, %u role(s) on %u lcore(s)%s, MTU %u, segment %u B",
		psb_exp_role_names[app->node_role],
		psb_ip_str(app->me.ip, err), app->nroles,
		nworker_lcores == 0 ? 1 : nworker_lcores,
		nworker_lcores == 0 ? " (run to completion)" : "", app->mtu, app->seg_size);
	log_bounds(app);
	/*
	 * The control socket appears once the ports run: scripts may take it as the sign that
	 * this node is ready (a memif client that connects to a server whose port has not
	 * started yet is not taken and does not try again).
	 */
	if (app->ctl_path == NULL || strcmp(app->ctl_path, "none") != 0) {
		char path[PATH_MAX];

		if (app->ctl_path == NULL)
			snprintf(path, sizeof(path), "%s/psb.ctl", rte_eal_get_runtime_dir());
		else
			snprintf(path, sizeof(path), "%s", app->ctl_path);
		if (psb_ctl_sock_init(app, path, err, sizeof(err)) != 0)
			psb_die("%s", err);
		PSB_DEBUG(ctl, "control socket %s", path);
	}
	psb_ports_watch(app);
	psb_lcore_idle_start(app);
	psb_lcore_launch(app);

	if (psb_export_init(app, err, sizeof(err)) != 0) {
		PSB_ERR(export, "%s", err);
		app->quit = 1;
		exit_code = 2;
	}
	if (!app->quit)
		psb_ctl_limits_log(app);
	if (!app->quit && app->autostart &&
	    psb_run_start(app, &app->conf, ro.config != NULL, err, sizeof(err)) != 0) {
		PSB_ERR(run, "%s", err);
		app->quit = 1;
		exit_code = 2;
	}
	if (!app->quit && (app->interactive || app->cmdline_file != NULL)) {
		if (psb_console_init(app, app->cmdline_file, app->interactive) != 0) {
			app->quit = 1;
			exit_code = 2;
		} else {
			console_on = 1;
		}
	}
	while (!app->quit || finalize_pending(app)) {
		uint64_t now = psb_now_ns(app), cp0;

		if (nworker_lcores == 0) {
			/*
			 * Run to completion: the main lcore polls all roles, and looks at the
			 * control plane every 200 us.
			 */
			int work = psb_lcore_run_main(app, rte_get_tsc_hz() / 5000);

			/*
			 * A scheduler has a few messages per job to answer: idle, it sleeps up to
			 * 1 ms at a time (in the control sockets' poll) and leaves the CPU it
			 * shares to the servers and workers of its host.
			 */
			psb_ctl_sock_poll(app, app->node_role == PSB_NODE_SCHEDULER && work == 0 &&
				!app->idle_on);
			psb_lcore_main_idle(app, work);
		} else {
			psb_ctl_sock_poll(app, 1);
		}
		cp0 = rte_rdtsc();
		if (console_on && psb_console_poll(app)) {
			console_on = 0;
			if (app->interactive)
				app->quit = 1;
		}
		psb_run_poll(app, now);
		psb_export_poll(app, now);
		check_exit(app, console_on, now, &last_rx, &last_rx_ns);
		psb_ports_watch(app);
		psb_ports_check(app, now);
		psb_ports_read_counters(app, now);
		psb_host_cpus_watch(app, now);
		app->cp.main_cycles += rte_rdtsc() - cp0;
	}
	if (g_signal != 0)
		PSB_NOTICE(main, "ending on signal %d (%s)", (int)g_signal, strsignal(g_signal));
	/*
	 * The experiment ends with the process: stopped, its results written. When the signal
	 * cut short one that ends by itself (a benchmark, a staleness run, a serve with a
	 * duration), psb exits as a shell reports a death by that signal (130 for SIGINT):
	 * a script tells it from a finished run. Nothing running, or a serve that runs until
	 * stopped, is a normal end: 0.
	 */
	cut_short = g_signal != 0 && psb_run_active(app) && !psb_run_open_ended(app);
	psb_run_fini(app);
	if (console_on)
		psb_console_fini(app);
	psb_export_fini(app);
	psb_ctl_sock_fini(app);
	psb_counters_fini();
	app->stop_lcores = 1;
	rte_eal_mp_wait_lcore();
	/* no role reads what it was handed any more */
	free(app->run.handed);
	free(app->run.late);

	if ((app->run.state == PSB_RUN_FAILED || app->fail_reason[0] != '\0') && exit_code == 0)
		exit_code = 1;
	if (cut_short && exit_code == 0)
		exit_code = 128 + (int)g_signal;
	for (i = 0; i < app->nports; i++)	/* the kernel's last counts */
		psb_afp_stats_update(&app->afp[i]);
	psb_report_print(app, stdout);
	if (app->stats_file != NULL && psb_report_write_json(app, app->stats_file) != 0) {
		PSB_NOTICE(main, "cannot write %s", app->stats_file);
		exit_code = 1;
	}
	for (i = 0; i < app->nroles; i++) {
		struct psb_role_inst *ri = &app->roles[i];

		if (ri->role->fini != NULL)
			ri->role->fini(ri);
	}
	psb_send_bye(app);
	psb_ports_quiesce(app);
	eal_end(app, exit_code);
	return exit_code;
}
