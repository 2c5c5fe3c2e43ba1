/*
 * Port lifecycle on the main lcore: links watched (ports paused while down, after a peer's
 * BYE or a fault under a leaving memif peer), counters carried across a driver's resets,
 * BYEs sent and traffic let settle before the ports close.
 */
#include <pthread.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "psb_app.h"
#include "psb_cli.h"
#include "psb_ethdev.h"
#include "psb_flow_rules.h"
#include "psb_guard.h"
#include "psb_log.h"
#include "psb_ports.h"

/*
 * Pause ports whose link is down, and keep a memif port paused after its peer's BYE
 * until the link went down and came back, so that the data plane never polls a port
 * while its driver connects or disconnects it; but never longer than PSB_BYE_PAUSE_NS
 * while the link stays up, for then the peer did not leave.
 */
void
psb_ports_watch(struct psb_app *app)
{
	struct rte_eth_link link;
	uint64_t now = psb_now_ns(app);
	uint16_t i;

	for (i = 0; i < app->nports; i++) {
		uint16_t pid = app->port_ids[i];

		if (rte_eth_link_get_nowait(pid, &link) != 0)
			continue;
		if (link.link_status == RTE_ETH_LINK_DOWN) {
			app->port_was_down[pid] = 1;
			app->port_paused[pid] = 1;
			continue;
		}
		if (!app->port_paused[pid])
			continue;
		rte_smp_rmb();
		/* a fault under a leaving peer: until the link went down and came back */
		if (app->port_fault[pid] && !app->port_was_down[pid])
			continue;
		if (app->port_bye[pid] && !app->port_was_down[pid]) {
			if (now < app->bye[pid].until_ns)
				continue;
			app->bye[pid].expiries++;
			PSB_NOTICE(port, "port %u (%s): its peer said BYE but the link stayed up for "
				"%.0f s; polling it again", pid, app->specs[i].spec, PSB_BYE_PAUSE_NS / 1e9);
		}
		app->port_bye[pid] = 0;
		app->port_fault[pid] = 0;
		app->port_was_down[pid] = 0;
		rte_smp_wmb();
		app->port_paused[pid] = 0;
		PSB_DEBUG(port, "port %u: link up", pid);
	}
}

/*
 * The ports' counters, read on the main lcore: DPDK's every 10 ms (a memif port's read 0 as
 * soon as its peer has gone, killed or not, and psb_port_stats carries what they had at the
 * last reading), the kernel's counts of af_packet sockets every second (before their 32-bit
 * counters can wrap).
 */
void
psb_ports_read_counters(struct psb_app *app, uint64_t now)
{
	static uint64_t next_ns, next_afp_ns;
	struct rte_eth_stats ps;
	uint16_t i;

	if (now < next_ns)
		return;
	next_ns = now + 10000000ull;
	for (i = 0; i < app->nports; i++)
		(void)psb_port_stats(app, i, &ps);
	if (now < next_afp_ns)
		return;
	next_afp_ns = now + 1000000000ull;
	for (i = 0; i < app->nports; i++)
		psb_afp_stats_update(&app->afp[i]);
}

/* Report ports whose link is still down a while after start (e.g. no memif peer). */
void
psb_ports_check(struct psb_app *app, uint64_t now)
{
	static uint64_t next_ns = 3000000000ull;
	struct rte_eth_link link;
	uint16_t i;

	if (now < next_ns)
		return;
	next_ns = now + 10000000000ull;
	for (i = 0; i < app->nports; i++) {
		if (rte_eth_link_get_nowait(app->port_ids[i], &link) != 0 ||
		    link.link_status != RTE_ETH_LINK_DOWN)
			continue;
		if (app->specs[i].kind != PSB_PORT_MEMIF)
			PSB_NOTICE(port, "port %u (%s): link is down", app->port_ids[i],
				app->specs[i].spec);
		else if (app->specs[i].memif_server)
			PSB_NOTICE(port, "port %u (%s): link is down (memif peer not connected)",
				app->port_ids[i], app->specs[i].spec);
		else	/* DPDK's memif client connects once, when its port starts */
			PSB_NOTICE(port, "port %u (%s): link is down: the memif server left or "
				"turned this client away, and a memif client does not connect "
				"again; start this psb again once the server's port runs",
				app->port_ids[i], app->specs[i].spec);
	}
}

/*
 * Let traffic in flight settle before closing ports: a memif peer that is
 * still copying from shared memory when this side disconnects can fault in
 * the PMD. Discard what arrives until the ports are quiet for 20 ms (PSB_QUIESCE_NS at
 * most: the peer's pause after this node's BYE outlasts it).
 */
void
psb_ports_quiesce(const struct psb_app *app)
{
	struct rte_mbuf *pkts[PSB_BURST];
	uint64_t hz = rte_get_tsc_hz(), start = rte_get_tsc_cycles(), last = start;
	uint64_t most = (uint64_t)((double)PSB_QUIESCE_NS * 1e-9 * (double)hz);
	uint16_t i, n;

	while (rte_get_tsc_cycles() - last < hz / 50 && rte_get_tsc_cycles() - start < most) {
		psb_ports_watch((struct psb_app *)app);
		for (i = 0; i < app->nports; i++) {
			if (app->port_paused[app->port_ids[i]])
				continue;
			n = app->port_shared[app->port_ids[i]] ?
				psb_guard_rx(app->port_ids[i], pkts, PSB_BURST) :
				rte_eth_rx_burst(app->port_ids[i], 0, pkts, PSB_BURST);
			if (n == PSB_GUARD_FAULT) {
				psb_port_faulted((struct psb_app *)app, app->port_ids[i]);
				continue;
			}
			if (n != 0) {
				rte_pktmbuf_free_bulk(pkts, n);
				last = rte_get_tsc_cycles();
			}
		}
	}
}

void
psb_port_faulted(struct psb_app *app, uint16_t pid)
{
	app->port_fault[pid] = 1;
	app->port_paused[pid] = 1;
	app->port_faults[pid]++;
	PSB_NOTICE(port, "port %u: the driver faulted on memory its peer shared (the peer left); "
		"port paused until its link comes back", pid);
}

void
psb_send_bye(struct psb_app *app)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	struct psb_addr dst;
	struct psb_hdr h;
	uint16_t i, n;

	memset(&dst, 0, sizeof(dst));
	memcpy(dst.mac, bcast, 6);
	dst.ip = 0xffffffffu;
	/* the peer's data port: the nodes of one job share it */
	dst.port = app->me.port;
	psb_hdr_init(&h, PSB_MSG_BYE);
	for (i = 0; i < app->nports; i++) {
		uint16_t pid = app->port_ids[i];
		struct rte_mbuf *m;
		uint8_t *p;

		/* Only memif has a peer that polls shared memory; elsewhere BYE is noise. */
		if (app->port_paused[pid] || app->specs[i].kind != PSB_PORT_MEMIF ||
		    psb_port_is_exc(app, i))
			continue;
		m = rte_pktmbuf_alloc(app->pool);
		if (m == NULL)
			return;
		p = (uint8_t *)rte_pktmbuf_append(m, PSB_FRAME_HLEN);
		psb_frame_write_headers(p, &app->me, &dst, &h, 0);
		n = app->port_shared[pid] ? psb_guard_tx(pid, &m, 1) : rte_eth_tx_burst(pid, 0, &m, 1);
		if (n == PSB_GUARD_FAULT)
			psb_port_faulted(app, pid);
		else if (n != 1)
			rte_pktmbuf_free(m);
	}
}

/* The counters of struct rte_eth_stats that psb_port_stats carries. */
static const size_t port_ctr_off[] = {
	offsetof(struct rte_eth_stats, ipackets), offsetof(struct rte_eth_stats, opackets),
	offsetof(struct rte_eth_stats, ibytes), offsetof(struct rte_eth_stats, obytes),
	offsetof(struct rte_eth_stats, imissed), offsetof(struct rte_eth_stats, ierrors),
	offsetof(struct rte_eth_stats, oerrors), offsetof(struct rte_eth_stats, rx_nombuf),
};
#define PORT_NCTR	RTE_DIM(port_ctr_off)

/* A port's counts as psb reports them (sum), and the PMD's at the last reading (last). */
static struct {
	uint64_t sum[PORT_NCTR];
	uint64_t last[PORT_NCTR];
} port_tot[PSB_MAX_PORTS];
static pthread_mutex_t port_tot_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t *
port_ctr(struct rte_eth_stats *s, unsigned int k)
{
	return (uint64_t *)(void *)((char *)s + port_ctr_off[k]);
}

int
psb_port_stats(const struct psb_app *app, unsigned int i, struct rte_eth_stats *out)
{
	struct rte_eth_stats now;
	int rc, blank = 1, back = 0;
	unsigned int k;

	memset(out, 0, sizeof(*out));
	if (i >= PSB_MAX_PORTS || i >= app->nports)
		return -EINVAL;
	rc = rte_eth_stats_get(app->port_ids[i], &now);
	if (rc != 0)
		memset(&now, 0, sizeof(now));
	pthread_mutex_lock(&port_tot_lock);
	for (k = 0; k < PORT_NCTR; k++) {
		blank &= *port_ctr(&now, k) == 0;
		back |= *port_ctr(&now, k) < port_tot[i].last[k];
	}
	/*
	 * All 0: no peer (memif), or counts started again with nothing yet: nothing to add.
	 * Lower than last time: the PMD counts from 0 again, all it has is new. Otherwise
	 * what it counted since the last reading is new.
	 */
	for (k = 0; k < PORT_NCTR && !blank; k++) {
		port_tot[i].sum[k] += *port_ctr(&now, k) - (back ? 0 : port_tot[i].last[k]);
		port_tot[i].last[k] = *port_ctr(&now, k);
	}
	for (k = 0; k < PORT_NCTR; k++)
		*port_ctr(out, k) = port_tot[i].sum[k];
	pthread_mutex_unlock(&port_tot_lock);
	return rc;
}

/*
 * The sums start again from 0; the PMD's last reading stays, as what comes next is counted
 * from it: memif's counters of a port without a peer are not reset by rte_eth_stats_reset,
 * and resume at their old values when a peer comes.
 */
void
psb_port_stats_clear(unsigned int i)
{
	if (i >= PSB_MAX_PORTS)
		return;
	pthread_mutex_lock(&port_tot_lock);
	memset(port_tot[i].sum, 0, sizeof(port_tot[i].sum));
	pthread_mutex_unlock(&port_tot_lock);
}

/* What this node receives, for the rules of isolated mode. */
static void
flow_in(const struct psb_app *app, struct psb_flow_in *in)
{
	const struct psb_exp_staleness *st = &app->conf.staleness;

	memset(in, 0, sizeof(*in));
	in->ip = app->me.ip;
#define FLOW_PORT(l, h, g, w) do { \
		in->ports[in->nports].lo = (uint16_t)(l); \
		in->ports[in->nports].hi = (uint16_t)(h); \
		in->ports[in->nports].group = (g); \
		snprintf(in->ports[in->nports].what, sizeof(in->ports[0].what), "%s", w); \
		in->nports++; \
	} while (0)
	FLOW_PORT(app->me.port, app->me.port, 0, "psb's data port");
	if (app->host_sched && app->sched_port != app->me.port)
		FLOW_PORT(app->sched_port, app->sched_port, 0, "the scheduler's port");
	if (app->nlocal_workers != 0)
		FLOW_PORT(app->worker_port_base, app->worker_port_base + app->nlocal_workers - 1, 0,
			  "the workers' ports");
	if (app->trainer)
		FLOW_PORT(st->port, st->port, 0, "the trainer's port");
	if (app->stale) {
		FLOW_PORT(st->group_port, st->group_port, 0, "the staleness worker's port");
		if (st->group != 0)
			FLOW_PORT(st->group_port, st->group_port, st->group, "the staleness group");
	}
#undef FLOW_PORT
}

int
psb_ports_isolate_rules(struct psb_app *app, struct psb_flow_rule *rules)
{
	struct psb_flow_in in;
	char err[256];
	int n;

	flow_in(app, &in);
	n = psb_flow_rules_build(&in, rules, err, sizeof(err));
	if (n < 0)
		psb_die("node.isolate: %s", err);
	return n;
}

void
psb_ports_isolate_said(struct psb_app *app, const struct psb_ethdev_isolate *iso)
{
	app->isolated = iso->isolated;
	if (iso->isolated)
		PSB_INFO(port, "port '%s' isolated: %d rules steer psb's own traffic to psb (ARP "
			 "and ping for its address, its UDP ports); the rest, RoCE included, stays "
			 "with the kernel", app->specs[0].spec, iso->n);
	else
		PSB_NOTICE(port, "port '%s': no isolated mode: %s. psb passes the host's traffic "
			   "itself, through the exception port '%s'", app->specs[0].spec, iso->why,
			   app->specs[app->exc_idx].spec);
}
