/* The rule set of rte_flow isolated mode (drivers/psb_flow_rules): what psb steers to itself. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "psb_flow_rules.h"

#define IP	0xc6120001u	/* 198.18.0.1 */
#define GROUP	0xef010203u	/* 239.1.2.3 */

static void
port(struct psb_flow_in *in, uint16_t lo, uint16_t hi, uint32_t group, const char *what)
{
	in->ports[in->nports].lo = lo;
	in->ports[in->nports].hi = hi;
	in->ports[in->nports].group = group;
	strcpy(in->ports[in->nports].what, what);
	in->nports++;
}

static void
test_rules(void **state)
{
	struct psb_flow_rule r[PSB_FLOW_MAX_RULES];
	struct psb_flow_in in = { .ip = IP };
	char err[128], s[160];
	int n;

	(void)state;
	port(&in, 9430, 9430, 0, "psb's data port");
	port(&in, 7001, 7001, GROUP, "the staleness group");
	port(&in, 9432, 9435, 0, "worker ports");	/* apart from 9430: two rules */
	port(&in, 7001, 7001, 0, "the trainer's port");	/* to the node: not the group's rule */
	n = psb_flow_rules_build(&in, r, err, sizeof(err));
	assert_int_equal(n, 6);
	psb_flow_rule_str(&r[0], s, sizeof(s));
	assert_string_equal(s, "ARP for 198.18.0.1 (psb answers ARP for its address)");
	psb_flow_rule_str(&r[1], s, sizeof(s));
	assert_string_equal(s, "IPv4 198.18.0.1 ICMP (psb answers ping)");
	psb_flow_rule_str(&r[2], s, sizeof(s));
	assert_string_equal(s, "IPv4 198.18.0.1 UDP 9430 (psb's data port)");
	psb_flow_rule_str(&r[3], s, sizeof(s));
	assert_string_equal(s, "IPv4 239.1.2.3 UDP 7001 (the staleness group)");
	psb_flow_rule_str(&r[4], s, sizeof(s));
	assert_string_equal(s, "IPv4 198.18.0.1 UDP 9432-9435 (worker ports)");
	assert_int_equal(r[5].kind, PSB_FLOW_UDP);
	assert_int_equal(r[5].ip_dst, IP);
	assert_int_equal(r[5].port_lo, 7001);

	/* the scheduler's port 9431 touches both: one rule 9430-9435 */
	port(&in, 9431, 9431, 0, "the scheduler's port");
	n = psb_flow_rules_build(&in, r, err, sizeof(err));
	assert_int_equal(n, 5);
	psb_flow_rule_str(&r[2], s, sizeof(s));
	assert_string_equal(s, "IPv4 198.18.0.1 UDP 9430-9435 (psb's data port, the scheduler's "
			    "port, worker ports)");
	/* an overlap, and one inside another */
	memset(&in, 0, sizeof(in));
	in.ip = IP;
	port(&in, 100, 200, 0, "a");
	port(&in, 150, 300, 0, "b");
	port(&in, 120, 130, 0, "c");
	port(&in, 100, 300, GROUP, "d");
	n = psb_flow_rules_build(&in, r, err, sizeof(err));
	assert_int_equal(n, 4);
	assert_int_equal(r[2].port_lo, 100);
	assert_int_equal(r[2].port_hi, 300);
	assert_int_equal(r[3].ip_dst, GROUP);
}

static void
test_refused(void **state)
{
	struct psb_flow_rule r[PSB_FLOW_MAX_RULES];
	struct psb_flow_in in = { 0 };
	char err[128];
	unsigned int i;

	(void)state;
	assert_int_equal(psb_flow_rules_build(&in, r, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "no address"));
	in.ip = IP;
	port(&in, 20, 10, 0, "backwards");
	assert_int_equal(psb_flow_rules_build(&in, r, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "backwards: UDP ports 20-10 are no range");
	memset(&in, 0, sizeof(in));
	in.ip = IP;
	port(&in, 7001, 7001, 0xc6120009u, "not a group");
	assert_int_equal(psb_flow_rules_build(&in, r, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "not a group: 198.18.0.9 is not a multicast group");
	memset(&in, 0, sizeof(in));
	in.ip = IP;
	for (i = 0; i < PSB_FLOW_MAX_PORTS; i++)
		port(&in, (uint16_t)(1000 + 10 * i), (uint16_t)(1000 + 10 * i), 0, "p");
	assert_int_equal(psb_flow_rules_build(&in, r, err, sizeof(err)), 2 + PSB_FLOW_MAX_PORTS);
	in.nports = PSB_FLOW_MAX_PORTS + 1;
	assert_int_equal(psb_flow_rules_build(&in, r, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "at most"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
