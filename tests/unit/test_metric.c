/*
 * Unit tests of lib/metric: a block's table walked into JSON and read back, Prometheus names
 * (base units, _total), and pages in the text format 0.0.4 and in OpenMetrics.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "psb_metric.h"
#include "psb_prom.h"

struct sub {
	uint64_t max_bytes;
	double timeout_s;
};

struct blk {
	uint64_t rx_pkts;
	uint64_t bytes_summed;
	uint32_t keys;
	double rtt_us;
	uint8_t up;
	uint8_t afp;
	uint64_t drops[3];
	uint64_t kernel_drops;
	uint64_t lcore;
	struct psb_hist rtt;
	struct sub lim;
};

static const char *
reason(unsigned int k)
{
	static const char *const names[] = { "none", "bad_magic", "too \"long\"" };

	return names[k];
}

static const uint64_t le_ns[] = { 1000, 10000 };
static const char *const le_us[] = { "1", "10" };
static const struct psb_metric_bounds bounds = { le_ns, le_us, 2, 1000.0 };

static const struct psb_metric sub_figs[] = {
	{ .name = "max_bytes", .kind = PSB_METRIC_GAUGE, .type = PSB_MT_U64, .unit = PSB_MU_BYTES,
	  .off = offsetof(struct sub, max_bytes), .help = "Budget" },
	{ .name = "timeout_s", .kind = PSB_METRIC_GAUGE, .type = PSB_MT_DBL, .unit = PSB_MU_S,
	  .off = offsetof(struct sub, timeout_s), .prom = "timeout", .help = "Timeout" },
};
static const struct psb_metric_block sub_block = PSB_METRIC_BLOCK("limits", "x", sub_figs);

static const struct psb_metric figs[] = {
	{ .name = "rx_pkts", .kind = PSB_METRIC_COUNTER, .type = PSB_MT_U64,
	  .unit = PSB_MU_PACKETS, .off = offsetof(struct blk, rx_pkts), .prom = "rx",
	  .help = "Packets\nreceived \\ here" },
	{ .name = "bytes_summed", .kind = PSB_METRIC_COUNTER, .type = PSB_MT_U64,
	  .unit = PSB_MU_BYTES, .off = offsetof(struct blk, bytes_summed), .prom = "summed",
	  .help = "Bytes" },
	{ .name = "keys", .kind = PSB_METRIC_GAUGE, .type = PSB_MT_U32,
	  .off = offsetof(struct blk, keys), .help = "Keys" },
	{ .name = "rtt_us", .kind = PSB_METRIC_GAUGE, .type = PSB_MT_DBL, .unit = PSB_MU_US,
	  .off = offsetof(struct blk, rtt_us), .prom = "rtt", .help = "Round trip" },
	{ .name = "up", .kind = PSB_METRIC_GAUGE, .type = PSB_MT_BOOL, .unit = PSB_MU_BOOL,
	  .off = offsetof(struct blk, up), .help = "Up" },
	{ .name = "drops", .kind = PSB_METRIC_COUNTER, .type = PSB_MT_U64,
	  .off = offsetof(struct blk, drops), .n = 3, .first = 1, .label = "reason",
	  .label_of = reason, .help = "Drops, \"by\" reason" },
	{ .name = "kernel_drops", .kind = PSB_METRIC_COUNTER, .type = PSB_MT_U64,
	  .off = offsetof(struct blk, kernel_drops), .cond = offsetof(struct blk, afp) + 1,
	  .help = "Kernel drops" },
	{ .name = "lcore", .kind = PSB_METRIC_GAUGE, .type = PSB_MT_U64,
	  .off = offsetof(struct blk, lcore), .prom = "", .help = "A label" },
	{ .name = "rtt_hist_us", .kind = PSB_METRIC_HISTOGRAM, .type = PSB_MT_HIST,
	  .unit = PSB_MU_US, .detail = 1, .off = offsetof(struct blk, rtt), .prom = "rtt_hist",
	  .help = "Round trips", .bounds = &bounds },
	{ .name = "limits", .kind = PSB_METRIC_GROUP, .type = PSB_MT_BLOCK,
	  .off = offsetof(struct blk, lim), .prom = "limit", .help = "Limits", .sub = &sub_block },
};
static const struct psb_metric_block block = PSB_METRIC_BLOCK("t", "psb_t", figs);

static void
fill(struct blk *b)
{
	memset(b, 0, sizeof(*b));
	b->rx_pkts = (UINT64_C(1) << 53) + 1;	/* beyond a double: exact in every export */
	b->bytes_summed = 4096;
	b->keys = 40;
	b->rtt_us = 12.5;
	b->up = 1;
	b->drops[0] = 99;	/* not exported: first is 1 */
	b->drops[1] = 3;
	b->drops[2] = 4;
	b->kernel_drops = 7;
	b->lcore = 1;
	psb_hist_init(&b->rtt);
	psb_hist_add(&b->rtt, 500);
	psb_hist_add(&b->rtt, 5000);
	psb_hist_add(&b->rtt, 50000);
	b->lim.max_bytes = 1 << 20;
	b->lim.timeout_s = 2;
}

static json_t *
emit(const struct blk *b, int detail)
{
	struct psb_emit e;

	psb_emit_tree(&e);
	psb_emit_open(&e, NULL);
	psb_metric_emit(&e, &block, b, detail);
	return psb_emit_done(&e);
}

static void
test_json(void **state)
{
	struct blk b, back;
	json_t *o, *h;
	char *s;

	(void)state;
	fill(&b);
	o = emit(&b, 1);
	assert_non_null(o);
	s = json_dumps(o, JSON_COMPACT);
	assert_string_equal(s, "{\"rx_pkts\":9007199254740993,\"bytes_summed\":4096,\"keys\":40,"
		"\"rtt_us\":12.5,\"up\":true,\"drops\":{\"bad_magic\":3,\"too \\\"long\\\"\":4},\"lcore\":1,"
		"\"rtt_hist_us\":{\"le\":{\"1\":1,\"10\":2,\"+Inf\":3},\"count\":3,\"sum\":55.5},"
		"\"limits\":{\"max_bytes\":1048576,\"timeout_s\":2.0}}");
	free(s);
	/* the af_packet figure shows where the block has it */
	b.afp = 1;
	json_decref(o);
	o = emit(&b, 0);
	assert_int_equal(json_integer_value(json_object_get(o, "kernel_drops")), 7);
	assert_null(json_object_get(o, "rtt_hist_us"));	/* detail left out */
	memset(&back, 0, sizeof(back));
	psb_metric_read(&block, o, &back);
	assert_int_equal(back.bytes_summed, 4096);
	assert_int_equal(back.keys, 40);
	assert_true(back.rtt_us == 12.5);
	assert_int_equal(back.up, 1);
	assert_int_equal(back.lim.max_bytes, 1 << 20);
	assert_true(back.lim.timeout_s == 2);
	h = json_object_get(o, "drops");
	assert_int_equal(json_object_size(h), 2);
	json_decref(o);
}

static void
test_names(void **state)
{
	char name[128];
	double scale;
	unsigned int i;
	static const char *const want[] = {
		"psb_t_rx_packets_total", "psb_t_summed_bytes_total", "psb_t_keys",
		"psb_t_rtt_seconds", "psb_t_up", "psb_t_drops_total", "psb_t_kernel_drops_total", "",
		"psb_t_rtt_hist_seconds", "psb_t_limit",
	};

	(void)state;
	for (i = 0; i < block.n; i++) {
		psb_metric_prom_name(name, sizeof(name), "psb_t", &figs[i], &scale);
		assert_string_equal(name, want[i]);
	}
	psb_metric_prom_name(name, sizeof(name), "psb_t", &figs[3], &scale);
	assert_true(scale == 1e-6);
	/* a suffix already there is not doubled */
	psb_metric_prom_name(name, sizeof(name), "psb_x_limit", &sub_figs[0], &scale);
	assert_string_equal(name, "psb_x_limit_max_bytes");
	assert_string_equal(psb_metric_kind_name(PSB_METRIC_HISTOGRAM), "histogram");
	assert_string_equal(psb_metric_unit_name(PSB_MU_US), "us");
}

static char *
page(const struct blk *b, int om)
{
	struct psb_prom *p = psb_prom_new();
	struct psb_prom_labels l = { "" };
	char *s;

	assert_non_null(p);
	psb_prom_label(&l, "role", "rx");
	psb_prom_label(&l, "spec", "memif:a\"b\\c\nd");
	psb_prom_sample(p, "psb_t_info", PSB_METRIC_GAUGE, 1, "Info", &l, 1);
	psb_prom_block(p, &block, b, &l);
	/* a second instance's samples go under the same HELP and TYPE */
	l.s[0] = '\0';
	psb_prom_label(&l, "role", "tx");
	psb_prom_block(p, &block, b, &l);
	s = psb_prom_page(p, om);
	psb_prom_free(p);
	assert_non_null(s);
	return s;
}

static void
test_prom_text(void **state)
{
	struct blk b;
	char *s;

	(void)state;
	fill(&b);
	s = page(&b, 0);
	assert_non_null(strstr(s, "# HELP psb_t_rx_packets_total Packets\\nreceived \\\\ here\n"
		"# TYPE psb_t_rx_packets_total counter\n"
		"psb_t_rx_packets_total{role=\"rx\",spec=\"memif:a\\\"b\\\\c\\nd\"} "
		"9007199254740993\npsb_t_rx_packets_total{role=\"tx\"} 9007199254740993\n"));
	assert_non_null(strstr(s, "# TYPE psb_t_info gauge\n"));
	assert_non_null(strstr(s, "psb_t_rtt_seconds{role=\"tx\"} 1.25e-05\n"));
	assert_non_null(strstr(s, "psb_t_up{role=\"tx\"} 1\n"));
	assert_non_null(strstr(s, "psb_t_drops_total{role=\"tx\",reason=\"too \\\"long\\\"\"} 4\n"));
	assert_null(strstr(s, "reason=\"none\""));
	assert_null(strstr(s, "kernel_drops"));
	assert_null(strstr(s, "lcore"));
	assert_non_null(strstr(s, "# TYPE psb_t_rtt_hist_seconds histogram\n"));
	assert_non_null(strstr(s, "psb_t_rtt_hist_seconds_bucket{role=\"tx\",le=\"1e-06\"} 1\n"
		"psb_t_rtt_hist_seconds_bucket{role=\"tx\",le=\"1e-05\"} 2\n"
		"psb_t_rtt_hist_seconds_bucket{role=\"tx\",le=\"+Inf\"} 3\n"
		"psb_t_rtt_hist_seconds_sum{role=\"tx\"} 5.55e-05\n"
		"psb_t_rtt_hist_seconds_count{role=\"tx\"} 3\n"));
	assert_non_null(strstr(s, "psb_t_limit_max_bytes{role=\"tx\"} 1048576\n"));
	assert_non_null(strstr(s, "psb_t_limit_timeout_seconds{role=\"tx\"} 2\n"));
	assert_null(strstr(s, "# EOF"));
	free(s);
}

static void
test_prom_openmetrics(void **state)
{
	struct blk b;
	char *s;
	size_t n;

	(void)state;
	fill(&b);
	s = page(&b, 1);
	/* a counter family is named without _total, its samples with it */
	assert_non_null(strstr(s, "# TYPE psb_t_rx_packets counter\n"));
	assert_non_null(strstr(s, "\npsb_t_rx_packets_total{role=\"tx\"} "));
	assert_non_null(strstr(s, "# HELP psb_t_drops Drops, \\\"by\\\" reason\n"));
	assert_non_null(strstr(s, "# TYPE psb_t info\npsb_t_info{"));
	n = strlen(s);
	assert_true(n > 6 && strcmp(s + n - 6, "# EOF\n") == 0);
	free(s);
}


/* A group named "" sits inline; an address is a string in JSON, absent where 0, not in
 * Prometheus; both read back. */
struct inner {
	uint64_t hits;
	uint32_t peer[2];
};

struct outer {
	uint64_t own;
	struct inner in;
};

static const char *
rank(unsigned int k)
{
	static const char *const names[] = { "1", "2" };

	return names[k];
}

static const struct psb_metric inner_figs[] = {
	{ .name = "hits", .kind = PSB_METRIC_COUNTER, .type = PSB_MT_U64,
	  .off = offsetof(struct inner, hits), .help = "Hits" },
	{ .name = "peer", .kind = PSB_METRIC_GAUGE, .type = PSB_MT_IPV4,
	  .off = offsetof(struct inner, peer), .n = 2, .label = "rank", .label_of = rank,
	  .help = "Peers" },
};
static const struct psb_metric_block inner_block = PSB_METRIC_BLOCK("in", "", inner_figs);

static const struct psb_metric outer_figs[] = {
	{ .name = "own", .kind = PSB_METRIC_COUNTER, .type = PSB_MT_U64,
	  .off = offsetof(struct outer, own), .help = "Own" },
	{ .name = "", .kind = PSB_METRIC_GROUP, .type = PSB_MT_BLOCK,
	  .off = offsetof(struct outer, in), .prom = "in", .help = "Inline",
	  .sub = &inner_block },
};
static const struct psb_metric_block outer_block = PSB_METRIC_BLOCK("o", "psb_o", outer_figs);

static void
test_inline_ipv4(void **state)
{
	struct outer b = { .own = 1, .in = { .hits = 2, .peer = { 0xc6120009, 0 } } }, back;
	struct psb_prom *p = psb_prom_new();
	struct psb_prom_labels l = { "" };
	struct psb_emit e;
	char name[64], *s;
	json_t *o;

	(void)state;
	psb_emit_tree(&e);
	psb_emit_open(&e, NULL);
	psb_metric_emit(&e, &outer_block, &b, 1);
	o = psb_emit_done(&e);
	assert_non_null(o);
	s = json_dumps(o, JSON_COMPACT);
	assert_string_equal(s, "{\"own\":1,\"hits\":2,\"peer\":{\"1\":\"198.18.0.9\"}}");
	free(s);
	memset(&back, 0, sizeof(back));
	psb_metric_read(&outer_block, o, &back);
	assert_int_equal(back.own, 1);
	assert_int_equal(back.in.hits, 2);
	json_decref(o);
	/* a group's figures under its prefix; an address is no sample */
	psb_metric_prom_name(name, sizeof(name), "psb_o", &outer_figs[1], NULL);
	assert_string_equal(name, "psb_o_in");
	psb_metric_prom_name(name, sizeof(name), "psb_o_in", &inner_figs[1], NULL);
	assert_string_equal(name, "");
	assert_non_null(p);
	psb_prom_block(p, &outer_block, &b, &l);
	s = psb_prom_page(p, 0);
	assert_non_null(strstr(s, "psb_o_in_hits_total 2\n"));
	assert_null(strstr(s, "peer"));
	free(s);
	psb_prom_free(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_prom_text),
		cmocka_unit_test(test_prom_openmetrics),
		cmocka_unit_test(test_inline_ipv4),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
