/*
 * Port lifecycle on the main lcore: links watched (ports paused while down, after a peer's
 * BYE or a fault under a leaving memif peer), counters carried across a driver's resets,
 * BYEs sent and traffic let settle before the ports close.
 */
#include <pthread.h>
#include <string.h>

#include <jansson.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "psb_app.h"
#include "psb_cli.h"
#include "psb_ethdev.h"
#include "psb_flow_rules.h"
#include "psb_guard.h"
#include "psb_log.h"
#include "psb_ports.h"

/* A link speed as testpmd writes it: "None", "100 Mbps", "10 Gbps", "2.5 Gbps", "Unknown". */
static const char *
speed_str(uint32_t mbps, char *buf, size_t len)
{
	if (mbps == RTE_ETH_SPEED_NUM_NONE)
		snprintf(buf, len, "None");
	else if (mbps == RTE_ETH_SPEED_NUM_UNKNOWN)
		snprintf(buf, len, "Unknown");
	else if (mbps < 1000)
		snprintf(buf, len, "%u Mbps", mbps);
	else if (mbps % 1000 == 0)
		snprintf(buf, len, "%u Gbps", mbps / 1000);
	else
		snprintf(buf, len, "%.1f Gbps", mbps / 1000.0);
	return buf;
}

/* The names of a device's capabilities (RTE_ETH_DEV_CAPA_*), as ethdev spells them. */
static json_t *
capa_names(uint64_t capa)
{
	static const struct {
		uint64_t bit;
		const char *name;
	} names[] = {
		{ RTE_ETH_DEV_CAPA_RUNTIME_RX_QUEUE_SETUP, "RUNTIME_RX_QUEUE_SETUP" },
		{ RTE_ETH_DEV_CAPA_RUNTIME_TX_QUEUE_SETUP, "RUNTIME_TX_QUEUE_SETUP" },
		{ RTE_ETH_DEV_CAPA_RXQ_SHARE, "RXQ_SHARE" },
		{ RTE_ETH_DEV_CAPA_FLOW_RULE_KEEP, "FLOW_RULE_KEEP" },
		{ RTE_ETH_DEV_CAPA_FLOW_SHARED_OBJECT_KEEP, "FLOW_SHARED_OBJECT_KEEP" },
	};
	json_t *a = json_array();
	uint64_t bit;
	size_t k;

	for (bit = 1; bit != 0 && a != NULL; bit <<= 1) {
		if ((capa & bit) == 0)
			continue;
		for (k = 0; k < RTE_DIM(names) && names[k].bit != bit; k++)
			;
		json_array_append_new(a, json_string(k < RTE_DIM(names) ? names[k].name :
						       "UNKNOWN"));
	}
	return a;
}

json_t *
psb_port_info_json(const struct psb_app *app, unsigned int i)
{
	static const char *const err_modes[] = {
		[RTE_ETH_ERROR_HANDLE_MODE_NONE] = "none",
		[RTE_ETH_ERROR_HANDLE_MODE_PASSIVE] = "passive",
		[RTE_ETH_ERROR_HANDLE_MODE_PROACTIVE] = "proactive",
	};
	uint16_t pid = app->port_ids[i], mtu;
	const struct rte_devargs *da;
	struct rte_eth_dev_info di;
	struct rte_ether_addr mac;
	struct rte_eth_link link;
	char name[RTE_ETH_NAME_MAX_LEN], fw[128], macs[RTE_ETHER_ADDR_FMT_SIZE], speed[32];
	json_t *o;
	int vlan;

	if (rte_eth_dev_info_get(pid, &di) != 0)
		return NULL;
	if (rte_eth_macaddr_get(pid, &mac) != 0)
		memset(&mac, 0, sizeof(mac));
	rte_ether_format_addr(macs, sizeof(macs), &mac);
	if (rte_eth_dev_get_name_by_port(pid, name) != 0)
		name[0] = '\0';
	if (rte_eth_link_get_nowait(pid, &link) != 0)
		memset(&link, 0, sizeof(link));
	if (rte_eth_dev_get_mtu(pid, &mtu) != 0)
		mtu = 0;
	vlan = rte_eth_dev_get_vlan_offload(pid);
	da = di.device != NULL ? rte_dev_devargs(di.device) : NULL;
	o = json_pack("{s:i, s:s, s:s, s:s, s:s, s:o, s:o, s:i, s:i}",
		"port", (int)pid, "spec", app->specs[i].spec, "mac_address", macs,
		"device_name", name, "driver_name", di.driver_name != NULL ? di.driver_name : "",
		"firmware_version", rte_eth_dev_fw_version_get(pid, fw, sizeof(fw)) == 0 ?
			json_string(fw) : json_null(),
		"devargs", da != NULL && da->args != NULL ? json_string(da->args) : json_null(),
		"socket", rte_eth_dev_socket_id(pid), "pool_socket", app->pool->socket_id);
	if (o == NULL)
		return NULL;
	json_object_update_new(o, json_pack("{s:s, s:s, s:s, s:s, s:I, s:b, s:b}",
		"link_status", link.link_status ? "up" : "down",
		"link_speed", speed_str(link.link_speed, speed, sizeof(speed)),
		"link_duplex", link.link_duplex == RTE_ETH_LINK_FULL_DUPLEX ? "full-duplex" :
			"half-duplex",
		"autoneg_status", link.link_autoneg == RTE_ETH_LINK_AUTONEG ? "On" : "Off",
		"mtu", (json_int_t)mtu, "promiscuous", rte_eth_promiscuous_get(pid) == 1,
		"allmulticast", rte_eth_allmulticast_get(pid) == 1));
	json_object_update_new(o, json_pack("{s:I, s:I, s:{s:b, s:b, s:b, s:b}, s:I}",
		"max_mac_addrs", (json_int_t)di.max_mac_addrs,
		"max_hash_mac_addrs", (json_int_t)di.max_hash_mac_addrs, "vlan_offload",
		"strip", vlan > 0 && (vlan & RTE_ETH_VLAN_STRIP_OFFLOAD) != 0,
		"filter", vlan > 0 && (vlan & RTE_ETH_VLAN_FILTER_OFFLOAD) != 0,
		"extend", vlan > 0 && (vlan & RTE_ETH_VLAN_EXTEND_OFFLOAD) != 0,
		"qinq_strip", vlan > 0 && (vlan & RTE_ETH_QINQ_STRIP_OFFLOAD) != 0,
		"reta_size", (json_int_t)di.reta_size));
	json_object_update_new(o, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"min_rx_bufsize", (json_int_t)di.min_rx_bufsize,
		"max_rx_pktlen", (json_int_t)di.max_rx_pktlen,
		"max_lro_pkt_size", (json_int_t)di.max_lro_pkt_size,
		"rx_queues", (json_int_t)di.nb_rx_queues,
		"max_rx_queues", (json_int_t)di.max_rx_queues,
		"rx_desc_max", (json_int_t)di.rx_desc_lim.nb_max,
		"rx_desc_min", (json_int_t)di.rx_desc_lim.nb_min,
		"rx_desc_align", (json_int_t)di.rx_desc_lim.nb_align));
	json_object_update_new(o, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:s}",
		"tx_queues", (json_int_t)di.nb_tx_queues,
		"max_tx_queues", (json_int_t)di.max_tx_queues,
		"tx_desc_max", (json_int_t)di.tx_desc_lim.nb_max,
		"tx_desc_min", (json_int_t)di.tx_desc_lim.nb_min,
		"tx_desc_align", (json_int_t)di.tx_desc_lim.nb_align,
		"max_segs_per_packet", (json_int_t)di.tx_desc_lim.nb_seg_max,
		"max_segs_per_mtu", (json_int_t)di.tx_desc_lim.nb_mtu_seg_max,
		"dev_capa", (json_int_t)di.dev_capa, "dev_capa_names", capa_names(di.dev_capa),
		"err_handle_mode", (size_t)di.err_handle_mode < RTE_DIM(err_modes) &&
			err_modes[di.err_handle_mode] != NULL ? err_modes[di.err_handle_mode] :
			"unknown"));
	return o;
}

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
		/* a shared-memory slot waits for a client: down is its rest */
		if (app->specs[i].shm_slot != 0 ||
		    rte_eth_link_get_nowait(app->port_ids[i], &link) != 0 ||
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

	psb_guard_enter();
	while (rte_get_tsc_cycles() - last < hz / 50 && rte_get_tsc_cycles() - start < most) {
		psb_guard_quiescent();
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
	psb_guard_leave();
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
	psb_guard_enter();
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
			break;
		p = (uint8_t *)rte_pktmbuf_append(m, PSB_FRAME_HLEN);
		psb_frame_write_headers(p, &app->me, &dst, &h, 0);
		n = app->port_shared[pid] ? psb_guard_tx(pid, &m, 1) : rte_eth_tx_burst(pid, 0, &m, 1);
		if (n == PSB_GUARD_FAULT)
			psb_port_faulted(app, pid);
		else if (n != 1)
			rte_pktmbuf_free(m);
	}
	psb_guard_leave();
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
psb_port_shown(const struct psb_app *app, unsigned int i)
{
	struct rte_eth_link link;
	struct rte_eth_stats st;

	if (app->specs[i].shm_slot == 0)
		return 1;
	if (rte_eth_link_get_nowait(app->port_ids[i], &link) == 0 &&
	    link.link_status == RTE_ETH_LINK_UP)
		return 1;
	return psb_port_stats(app, i, &st) == 0 && (st.ipackets | st.opackets | st.imissed) != 0;
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
