/* Bring up a DPDK port for psb: queues, MTU (jumbo where allowed), offloads. */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_flow.h>
#include <rte_mbuf.h>

#include "psb_ethdev.h"
#include "psb_flow_rules.h"

#define ETH_OVERHEAD	(RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN + 4)

/*
 * "port P (driver): STEP failed: reason". Many drivers fail with a bare -1, which
 * rte_strerror calls "Operation not permitted": no reason then; the caller quotes the
 * driver's log.
 */
static int
step_failed(char *err, size_t errlen, uint16_t port_id, const char *driver, const char *step,
		int rc)
{
	snprintf(err, errlen, "port %u (%s): %s failed%s%s", port_id, driver, step,
		 rc == -1 ? "" : ": ", rc == -1 ? "" : rte_strerror(-rc));
	return rc;
}

/* rte_flow's own words when it has some, else errno's. */
static const char *
flow_why(const struct rte_flow_error *fe, int rc)
{
	if (fe->message != NULL && fe->message[0] != '\0')
		return fe->message;
	return rte_strerror(rc < 0 ? -rc : rc);
}

/* One rule's pattern: Ethernet, then ARP, or IPv4 with ICMP or a UDP port range. */
struct flow_pat {
	struct rte_flow_item items[4];
	struct rte_flow_item_eth eth, eth_m;
	struct rte_flow_item_arp_eth_ipv4 arp, arp_m;
	struct rte_flow_item_ipv4 ip, ip_m;
	struct rte_flow_item_udp udp, udp_last, udp_m;
};

static void
flow_pattern(struct flow_pat *p, const struct psb_flow_rule *r)
{
	memset(p, 0, sizeof(*p));
	p->items[0].type = RTE_FLOW_ITEM_TYPE_ETH;
	p->items[0].spec = &p->eth;
	p->items[0].mask = &p->eth_m;
	p->eth_m.hdr.ether_type = 0xffff;
	if (r->kind == PSB_FLOW_ARP) {
		p->eth.hdr.ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
		p->items[1].type = RTE_FLOW_ITEM_TYPE_ARP_ETH_IPV4;
		p->items[1].spec = &p->arp;
		p->items[1].mask = &p->arp_m;
		p->arp.tpa = rte_cpu_to_be_32(r->arp_tpa);
		p->arp_m.tpa = 0xffffffff;
		p->items[2].type = RTE_FLOW_ITEM_TYPE_END;
		return;
	}
	p->eth.hdr.ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	p->items[1].type = RTE_FLOW_ITEM_TYPE_IPV4;
	p->items[1].spec = &p->ip;
	p->items[1].mask = &p->ip_m;
	p->ip.hdr.dst_addr = rte_cpu_to_be_32(r->ip_dst);
	p->ip_m.hdr.dst_addr = 0xffffffff;
	p->ip.hdr.next_proto_id = r->kind == PSB_FLOW_ICMP ? IPPROTO_ICMP : IPPROTO_UDP;
	p->ip_m.hdr.next_proto_id = 0xff;
	if (r->kind == PSB_FLOW_ICMP) {
		p->items[2].type = RTE_FLOW_ITEM_TYPE_END;
		return;
	}
	p->items[2].type = RTE_FLOW_ITEM_TYPE_UDP;
	p->items[2].spec = &p->udp;
	p->items[2].mask = &p->udp_m;
	p->udp.hdr.dst_port = rte_cpu_to_be_16(r->port_lo);
	p->udp_m.hdr.dst_port = 0xffff;
	if (r->port_hi != r->port_lo) {
		p->udp_last.hdr.dst_port = rte_cpu_to_be_16(r->port_hi);
		p->items[2].last = &p->udp_last;
	}
	p->items[3].type = RTE_FLOW_ITEM_TYPE_END;
}

static const struct rte_flow_attr flow_attr = { .ingress = 1 };

/* Each rule checked (create 0) or made (create 1); the first refused named in err. */
static int
flow_rules(uint16_t port_id, const struct psb_flow_rule *rules, int n, int create, char *err,
	   size_t errlen)
{
	const struct rte_flow_action_queue q0 = { .index = 0 };
	const struct rte_flow_action actions[] = {
		{ .type = RTE_FLOW_ACTION_TYPE_QUEUE, .conf = &q0 },
		{ .type = RTE_FLOW_ACTION_TYPE_END },
	};
	struct rte_flow_error fe;
	struct flow_pat p;
	char what[160];
	int i, rc;

	for (i = 0; i < n; i++) {
		flow_pattern(&p, &rules[i]);
		memset(&fe, 0, sizeof(fe));
		if (!create)
			rc = rte_flow_validate(port_id, &flow_attr, p.items, actions, &fe);
		else
			rc = rte_flow_create(port_id, &flow_attr, p.items, actions, &fe) != NULL ?
			     0 : -rte_errno;
		if (rc != 0) {
			psb_flow_rule_str(&rules[i], what, sizeof(what));
			snprintf(err, errlen, "rule %d of %d, %s, refused: %s", i + 1, n, what,
				 flow_why(&fe, rc));
			return rc;
		}
	}
	return 0;
}

/*
 * Isolation, between the port's configuration and its start: the rules checked first, so
 * that a port that cannot hold them is never left isolated without them; then isolated mode.
 * 1 isolated, 0 not (iso->why says what was refused).
 */
static int
isolate_before_start(uint16_t port_id, struct psb_ethdev_isolate *iso)
{
	struct rte_flow_error fe;
	int rc;

	if (flow_rules(port_id, iso->rules, iso->n, 0, iso->why, sizeof(iso->why)) != 0)
		return 0;
	memset(&fe, 0, sizeof(fe));
	rc = rte_flow_isolate(port_id, 1, &fe);
	if (rc != 0) {
		snprintf(iso->why, sizeof(iso->why), "rte_flow_isolate(port %u, on) refused: %s",
			 port_id, flow_why(&fe, rc));
		return 0;
	}
	return 1;
}

/* The rules made once the port started; refused, the port leaves isolation (0) or not (<0). */
static int
isolate_after_start(uint16_t port_id, struct psb_ethdev_isolate *iso)
{
	struct rte_flow_error fe;
	size_t used;
	int rc;

	if (flow_rules(port_id, iso->rules, iso->n, 1, iso->why, sizeof(iso->why)) == 0)
		return 1;
	memset(&fe, 0, sizeof(fe));
	rte_flow_flush(port_id, &fe);
	rc = rte_eth_dev_stop(port_id);
	if (rc == 0)
		rc = rte_flow_isolate(port_id, 0, &fe);
	if (rc == 0)
		rc = rte_eth_dev_start(port_id);
	if (rc == 0)
		return 0;
	used = strlen(iso->why);
	snprintf(iso->why + used, sizeof(iso->why) - used, "; and rte_flow_isolate(port %u, off) "
		 "refused: %s", port_id, flow_why(&fe, rc));
	return -1;
}

int
psb_ethdev_setup(uint16_t port_id, uint16_t mtu_want, unsigned int flags, uint16_t nb_desc,
		struct rte_mempool *pool, struct psb_ethdev_isolate *iso,
		struct psb_ethdev_info *info, char *err, size_t errlen)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info di;
	struct rte_eth_rxconf rxq;
	struct rte_eth_txconf txq;
	uint16_t nb_rxd = nb_desc, nb_txd = nb_desc;
	uint32_t room = rte_pktmbuf_data_room_size(pool) - RTE_PKTMBUF_HEADROOM;
	uint32_t mtu = mtu_want;
	int rc, memif = 0;

	memset(info, 0, sizeof(*info));
	memset(&conf, 0, sizeof(conf));
	rc = rte_eth_dev_info_get(port_id, &di);
	if (rc != 0) {
		snprintf(err, errlen, "port %u: cannot read device info: %s", port_id,
			rte_strerror(-rc));
		return rc;
	}
	snprintf(info->driver, sizeof(info->driver), "%s", di.driver_name);
	/*
	 * memif advertises a 1518-byte frame limit but chains descriptors and
	 * never checks it; psb sets 9216-byte buffers (psb_port.c), so both psb
	 * ends of a memif link can carry jumbo frames.
	 */
	if (strcmp(di.driver_name, "net_memif") == 0) {
		memif = 1;
		di.max_mtu = 9216 - ETH_OVERHEAD;
		di.max_rx_pktlen = 9216;
	}
	if (flags & PSB_ETHDEV_XDP)
		room -= PSB_ETHDEV_XDP_HEADROOM;
	if (flags & PSB_ETHDEV_FRAMES_SIZED) {
		di.max_mtu = (uint16_t)mtu;
		di.max_rx_pktlen = mtu + ETH_OVERHEAD;
	}
	if (di.max_mtu != 0 && mtu > di.max_mtu)
		mtu = di.max_mtu;
	if (di.max_rx_pktlen != 0 && mtu + ETH_OVERHEAD > di.max_rx_pktlen)
		mtu = di.max_rx_pktlen - ETH_OVERHEAD;
	if (mtu + ETH_OVERHEAD > room) {
		if (di.rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER) {
			conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
			info->scatter = 1;
		} else {
			mtu = room - ETH_OVERHEAD;
		}
	}
	if (di.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) {
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
		info->multi_seg_tx = 1;
	}
	if (mtu < 576) {
		snprintf(err, errlen, "port %u (%s): usable MTU %u is too small for psb", port_id,
			di.driver_name, mtu);
		return -EINVAL;
	}
	conf.rxmode.mtu = memif ? 0 : mtu;
	rc = rte_eth_dev_configure(port_id, 1, 1, &conf);
	if (rc != 0) {
		/* Some virtual ports reject an MTU in configure; retry with their default. */
		conf.rxmode.mtu = 0;
		rc = rte_eth_dev_configure(port_id, 1, 1, &conf);
	}
	if (rc != 0)
		return step_failed(err, errlen, port_id, di.driver_name, "configure", rc);
	rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &nb_rxd, &nb_txd);
	rxq = di.default_rxconf;
	rxq.offloads = conf.rxmode.offloads;
	rc = rte_eth_rx_queue_setup(port_id, 0, nb_rxd, rte_eth_dev_socket_id(port_id), &rxq, pool);
	if (rc == 0) {
		txq = di.default_txconf;
		txq.offloads = conf.txmode.offloads;
		rc = rte_eth_tx_queue_setup(port_id, 0, nb_txd, rte_eth_dev_socket_id(port_id), &txq);
	}
	if (rc != 0)
		return step_failed(err, errlen, port_id, di.driver_name, "queue setup", rc);
	/*
	 * Not every virtual port implements set_mtu; the configured value then stands. On
	 * af_packet and tap it is the kernel interface's MTU: changed only when asked.
	 */
	rc = memif || (flags & PSB_ETHDEV_KEEP_MTU) ? 0 : rte_eth_dev_set_mtu(port_id,
		(uint16_t)mtu);
	if (rc != 0 && rc != -ENOTSUP)
		mtu = conf.rxmode.mtu != 0 ? conf.rxmode.mtu : RTE_ETHER_MTU;
	if (iso != NULL)
		iso->isolated = isolate_before_start(port_id, iso);
	rc = rte_eth_dev_start(port_id);
	if (rc != 0)
		return step_failed(err, errlen, port_id, di.driver_name, "start", rc);
	if (iso != NULL && iso->isolated) {
		iso->isolated = isolate_after_start(port_id, iso);
		if (iso->isolated < 0) {
			snprintf(err, errlen, "port %u (%s): isolated mode: %s", port_id,
				 di.driver_name, iso->why);
			return -EIO;
		}
	}
	rte_eth_promiscuous_enable(port_id);
	info->mtu = (uint16_t)mtu;
	return 0;
}

void
psb_ethdev_close(uint16_t port_id)
{
	rte_eth_dev_stop(port_id);
	rte_eth_dev_close(port_id);
}

