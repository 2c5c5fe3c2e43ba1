/*
 * The rules that steer psb's own traffic to psb on a port in rte_flow isolated mode, all
 * else staying with the kernel (a bifurcated NIC: RoCE and the host's traffic never reach
 * psb). Built here without EAL, from what the node receives; psb_ethdev turns them into
 * rte_flow rules.
 */
#ifndef PSB_FLOW_RULES_H
#define PSB_FLOW_RULES_H

#include <stddef.h>
#include <stdint.h>

#define PSB_FLOW_MAX_RULES	16
#define PSB_FLOW_MAX_PORTS	8

/*
 * One rule: frames that match go to psb's queue 0. A rule matches the Ethertype and, where
 * not 0, the IPv4 destination, the IP protocol and a range of UDP destination ports (both
 * ends in), or the ARP target address.
 */
enum psb_flow_kind {
	PSB_FLOW_UDP,		/* IPv4 to ip_dst, UDP to [port_lo, port_hi] */
	PSB_FLOW_ICMP,		/* IPv4 to ip_dst, ICMP */
	PSB_FLOW_ARP,		/* ARP whose target is arp_tpa */
};

struct psb_flow_rule {
	int kind;		/* enum psb_flow_kind */
	uint32_t ip_dst;	/* host order; a multicast group for its UDP port */
	uint16_t port_lo, port_hi;
	uint32_t arp_tpa;
	char what[96];		/* what it is for, in messages: "psb's data port 9430" */
};

/* What the node receives: its address, and its UDP ports and multicast groups. */
struct psb_flow_in {
	uint32_t ip;			/* this node, host order */
	unsigned int nports;
	struct {
		uint16_t lo, hi;	/* UDP destination ports, both in */
		uint32_t group;		/* 0: to ip; else to this multicast group */
		char what[64];
	} ports[PSB_FLOW_MAX_PORTS];
};

/*
 * The rules for in: ARP for the node's address, ICMP to it, and one per UDP port range (to
 * the node or its group). Ranges that overlap or touch, to the same address, become one.
 * Returns how many, or -EINVAL with why in err: no address, a range upside down, a group
 * that is not multicast, more rules than PSB_FLOW_MAX_RULES.
 */
int psb_flow_rules_build(const struct psb_flow_in *in, struct psb_flow_rule *out,
			 char *err, size_t errlen);

/* One line for a rule: "IPv4 198.18.0.1 UDP 9430 (psb's data port)". */
void psb_flow_rule_str(const struct psb_flow_rule *r, char *buf, size_t len);

#endif /* PSB_FLOW_RULES_H */
