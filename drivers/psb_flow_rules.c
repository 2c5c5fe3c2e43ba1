/* The rule set of rte_flow isolated mode: psb's traffic to psb, all else to the kernel. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "psb_flow_rules.h"

static void
ip_str(uint32_t ip, char *buf, size_t len)
{
	snprintf(buf, len, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 0xff, (ip >> 8) & 0xff,
		 ip & 0xff);
}

void
psb_flow_rule_str(const struct psb_flow_rule *r, char *buf, size_t len)
{
	char ip[16];

	switch (r->kind) {
	case PSB_FLOW_ARP:
		ip_str(r->arp_tpa, ip, sizeof(ip));
		snprintf(buf, len, "ARP for %s (%s)", ip, r->what);
		break;
	case PSB_FLOW_ICMP:
		ip_str(r->ip_dst, ip, sizeof(ip));
		snprintf(buf, len, "IPv4 %s ICMP (%s)", ip, r->what);
		break;
	default:
		ip_str(r->ip_dst, ip, sizeof(ip));
		if (r->port_lo == r->port_hi)
			snprintf(buf, len, "IPv4 %s UDP %u (%s)", ip, r->port_lo, r->what);
		else
			snprintf(buf, len, "IPv4 %s UDP %u-%u (%s)", ip, r->port_lo, r->port_hi,
				 r->what);
	}
}

static int
add(struct psb_flow_rule *out, int n, char *err, size_t errlen)
{
	if (n >= PSB_FLOW_MAX_RULES) {
		snprintf(err, errlen, "more than %d rules", PSB_FLOW_MAX_RULES);
		return -EINVAL;
	}
	return n + 1;
}

int
psb_flow_rules_build(const struct psb_flow_in *in, struct psb_flow_rule *out, char *err,
		     size_t errlen)
{
	int n = 0, i, j;
	unsigned int k;

	if (in->ip == 0) {
		snprintf(err, errlen, "no address: the rules steer what is for the node's address");
		return -EINVAL;
	}
	if (in->nports > PSB_FLOW_MAX_PORTS) {
		snprintf(err, errlen, "%u UDP port ranges, %d at most", in->nports,
			 PSB_FLOW_MAX_PORTS);
		return -EINVAL;
	}
	memset(out, 0, sizeof(*out) * PSB_FLOW_MAX_RULES);
	out[0].kind = PSB_FLOW_ARP;
	out[0].arp_tpa = in->ip;
	snprintf(out[0].what, sizeof(out[0].what), "psb answers ARP for its address");
	out[1].kind = PSB_FLOW_ICMP;
	out[1].ip_dst = in->ip;
	snprintf(out[1].what, sizeof(out[1].what), "psb answers ping");
	n = 2;
	for (k = 0; k < in->nports; k++) {
		uint32_t dst = in->ports[k].group != 0 ? in->ports[k].group : in->ip;
		struct psb_flow_rule *r;

		if (in->ports[k].lo > in->ports[k].hi || in->ports[k].lo == 0) {
			snprintf(err, errlen, "%s: UDP ports %u-%u are no range", in->ports[k].what,
				 in->ports[k].lo, in->ports[k].hi);
			return -EINVAL;
		}
		if (in->ports[k].group != 0 && (in->ports[k].group >> 28) != 0xe) {
			snprintf(err, errlen, "%s: %u.%u.%u.%u is not a multicast group",
				 in->ports[k].what, in->ports[k].group >> 24,
				 (in->ports[k].group >> 16) & 0xff, (in->ports[k].group >> 8) & 0xff,
				 in->ports[k].group & 0xff);
			return -EINVAL;
		}
		if ((n = add(out, n, err, errlen)) < 0)
			return n;
		r = &out[n - 1];
		r->kind = PSB_FLOW_UDP;
		r->ip_dst = dst;
		r->port_lo = in->ports[k].lo;
		r->port_hi = in->ports[k].hi;
		snprintf(r->what, sizeof(r->what), "%s", in->ports[k].what);
	}
	/* ranges to one address that overlap or touch: one rule, fewer for the NIC to hold */
	for (i = 2; i < n; i++) {
		for (j = i + 1; j < n; j++) {
			struct psb_flow_rule *a = &out[i], *b = &out[j];

			if (a->ip_dst != b->ip_dst || (uint32_t)b->port_lo > (uint32_t)a->port_hi + 1 ||
			    (uint32_t)a->port_lo > (uint32_t)b->port_hi + 1)
				continue;
			if (b->port_lo < a->port_lo)
				a->port_lo = b->port_lo;
			if (b->port_hi > a->port_hi)
				a->port_hi = b->port_hi;
			if (strlen(a->what) + strlen(b->what) + 3 < sizeof(a->what)) {
				strcat(a->what, ", ");
				strcat(a->what, b->what);
			}
			memmove(b, b + 1, sizeof(*b) * (size_t)(n - j - 1));
			n--;
			j = i;	/* a grew: look at the rest again */
		}
	}
	return n;
}
