/*
 * Unit tests of lib/conf: unit parsers, table-driven parsing, error messages, set, dump,
 * and files appended to for a long time (psb_logfile).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "psb_conf.h"
#include "psb_logfile.h"
#include "psb_text.h"

enum kind { KIND_PUSHPULL, KIND_STALENESS };

struct mcast {
	uint64_t rate;
	uint32_t group;
};

struct experiment {
	char trial_name[32];
	int kind;
	uint64_t data_size;
	uint64_t push_frequency;
	uint64_t rate;
	uint64_t workers;
	bool verify;
	uint32_t server;
	int64_t offset;
	double ratio;
	struct mcast multicast;
	uint32_t not_in_table;	/* outside the tables: parsing must never touch it */
};

static const char *const kind_names[] = { "pushpull", "staleness", NULL };

static const struct psb_conf_field mcast_table[] = {
	{ .key = "rate", .type = PSB_CONF_RATE, .offset = offsetof(struct mcast, rate),
	  .def = "2Gbps", .min = 1, .max = 100e9, .help = "multicast send rate" },
	{ .key = "group", .type = PSB_CONF_IP, .offset = offsetof(struct mcast, group),
	  .def = "239.1.1.1", .help = "multicast group" },
	{ .key = NULL },
};

static const struct psb_conf_field exp_table[] = {
	{ .key = "trial_name", .type = PSB_CONF_STRING,
	  .offset = offsetof(struct experiment, trial_name),
	  .size = sizeof(((struct experiment *)0)->trial_name), .required = 1,
	  .help = "name of the trial" },
	{ .key = "kind", .type = PSB_CONF_ENUM, .offset = offsetof(struct experiment, kind),
	  .def = "pushpull", .names = kind_names, .help = "experiment kind" },
	{ .key = "data_size", .type = PSB_CONF_SIZE, .offset = offsetof(struct experiment, data_size),
	  .def = "10MB", .min = 1, .max = 1073741824.0, .help = "model size" },
	{ .key = "push_frequency", .type = PSB_CONF_DURATION,
	  .offset = offsetof(struct experiment, push_frequency), .def = "0.2s",
	  .help = "push period" },
	{ .key = "rate", .type = PSB_CONF_RATE, .offset = offsetof(struct experiment, rate),
	  .help = "send rate" },
	{ .key = "workers", .type = PSB_CONF_UINT, .offset = offsetof(struct experiment, workers),
	  .def = "4", .min = 1, .max = 1024, .help = "number of workers" },
	{ .key = "verify", .type = PSB_CONF_BOOL, .offset = offsetof(struct experiment, verify),
	  .help = "check the aggregate" },
	{ .key = "server", .type = PSB_CONF_IP, .offset = offsetof(struct experiment, server),
	  .def = "198.18.0.1", .help = "server address" },
	{ .key = "offset", .type = PSB_CONF_INT, .offset = offsetof(struct experiment, offset),
	  .def = "-5", .min = -100, .max = 100, .help = "signed knob" },
	{ .key = "ratio", .type = PSB_CONF_DOUBLE, .offset = offsetof(struct experiment, ratio),
	  .def = "0.5", .min = 0, .max = 1, .help = "fraction" },
	{ .key = "multicast", .type = PSB_CONF_OBJECT,
	  .offset = offsetof(struct experiment, multicast), .sub = mcast_table,
	  .help = "multicast settings" },
	{ .key = NULL },
};

static char err[512];

static int
parse(struct experiment *e, const char *text)
{
	err[0] = '\0';
	return psb_conf_parse_string(exp_table, e, text, "experiment", err, sizeof(err));
}

/* The parse fails with -EINVAL, leaves *e as it was, and the message has every needle. */
static void
expect_reject(const char *text, const char *path, const char *what)
{
	struct experiment e, before;
	int rc;

	memset(&e, 0xa5, sizeof(e));
	before = e;
	rc = parse(&e, text);
	if (rc != -EINVAL || strstr(err, path) == NULL || (what != NULL && strstr(err, what) == NULL))
		print_error("doc %s\n  rc %d msg '%s'\n  want '%s' and '%s'\n", text, rc, err, path,
				what != NULL ? what : "");
	assert_int_equal(rc, -EINVAL);
	assert_non_null(strstr(err, path));
	if (what != NULL)
		assert_non_null(strstr(err, what));
	assert_memory_equal(&e, &before, sizeof(e));
}

static void
test_size_units(void **state)
{
	static const struct { const char *s; uint64_t v; } ok[] = {
		{ "0", 0 }, { "1024", 1024 }, { "1B", 1 }, { "10MB", 10000000 }, { "10 MB", 10000000 },
		{ "4KiB", 4096 }, { "4kib", 4096 }, { "1.5GB", 1500000000 }, { "1KB", 1000 },
		{ "2MiB", 2097152 }, { "1GiB", 1073741824 }, { "0.5KiB", 512 }, { "1.500GB", 1500000000 },
		{ "1TB", 1000000000000ull }, { "1TiB", 1099511627776ull }, { "3gb", 3000000000ull },
		{ "18446744073709551615", UINT64_MAX }, { "1.000000000000000000000GiB", 1073741824 },
	};
	static const char *const bad[] = {
		"", "-1", "+1", " 1", "1 ", "1.5B", "0.1KiB", "1.", ".5", "1XB", "10MB junk", "abc",
		"1  MB", "1e3", "MB", "1,5MB",
	};
	uint64_t v;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = 12345;
		assert_int_equal(psb_conf_parse_size(ok[i].s, &v), 0);
		assert_int_equal(v, ok[i].v);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (psb_conf_parse_size(bad[i], &v) != -EINVAL)
			print_error("accepted '%s'\n", bad[i]);
		assert_int_equal(psb_conf_parse_size(bad[i], &v), -EINVAL);
	}
	assert_int_equal(psb_conf_parse_size("18446744073709551616", &v), -ERANGE);
	assert_int_equal(psb_conf_parse_size("20000000000GB", &v), -ERANGE);
	assert_int_equal(psb_conf_parse_size("99999999999999999999999", &v), -ERANGE);
}

static void
test_duration_units(void **state)
{
	static const struct { const char *s; uint64_t v; } ok[] = {
		{ "0.2s", 200000000 }, { "150ms", 150000000 }, { "20us", 20000 }, { "5ns", 5 },
		{ "2", 2000000000 }, { "0.2", 200000000 }, { "1m", 60000000000ull }, { "1.5m", 90000000000ull },
		{ "1 s", 1000000000 }, { "0.000000001s", 1 }, { "0", 0 }, { "1MS", 1000000 },
	};
	static const char *const bad[] = { "-1s", "1.5ns", "0.0000000001s", "1h", "1sec", "s", "", "1s1" };
	uint64_t v;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(psb_conf_parse_duration(ok[i].s, &v), 0);
		assert_int_equal(v, ok[i].v);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(psb_conf_parse_duration(bad[i], &v), -EINVAL);
	assert_int_equal(psb_conf_parse_duration("1000000000000m", &v), -ERANGE);
}

static void
test_rate_units(void **state)
{
	static const struct { const char *s; uint64_t v; } ok[] = {
		{ "2Gbps", 2000000000 }, { "100Mbps", 100000000 }, { "10kbps", 10000 }, { "5bps", 5 },
		{ "1.5Gbps", 1500000000 }, { "7", 7 }, { "10 Gbps", 10000000000ull },
		{ "1Tbps", 1000000000000ull },
	};
	static const char *const bad[] = { "-1Gbps", "1.5bps", "2GB", "2G", "Gbps", "2 Gbps/s" };
	uint64_t v;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(psb_conf_parse_rate(ok[i].s, &v), 0);
		assert_int_equal(v, ok[i].v);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(psb_conf_parse_rate(bad[i], &v), -EINVAL);
}

/* The formatted form is in the largest exact unit and parses back to the same value. */
static void
test_format_units(void **state)
{
	static const uint64_t vals[] = { 0, 1, 999, 1000, 1024, 1500, 10000000, 2048000, 1073741824,
		UINT64_MAX, 60000000000ull, 200000000, 90000000000ull };
	char buf[64];
	uint64_t v;
	size_t i;

	psb_conf_format_size(buf, sizeof(buf), 10000000);
	assert_string_equal(buf, "10MB");
	psb_conf_format_size(buf, sizeof(buf), 4096);
	assert_string_equal(buf, "4KiB");
	psb_conf_format_duration(buf, sizeof(buf), 200000000);
	assert_string_equal(buf, "200ms");
	psb_conf_format_rate(buf, sizeof(buf), 2000000000);
	assert_string_equal(buf, "2Gbps");
	psb_conf_format_size(buf, sizeof(buf), 0);
	assert_string_equal(buf, "0B");
	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		psb_conf_format_size(buf, sizeof(buf), vals[i]);
		assert_int_equal(psb_conf_parse_size(buf, &v), 0);
		assert_int_equal(v, vals[i]);
		psb_conf_format_duration(buf, sizeof(buf), vals[i]);
		assert_int_equal(psb_conf_parse_duration(buf, &v), 0);
		assert_int_equal(v, vals[i]);
		psb_conf_format_rate(buf, sizeof(buf), vals[i]);
		assert_int_equal(psb_conf_parse_rate(buf, &v), 0);
		assert_int_equal(v, vals[i]);
	}
}

static void
test_defaults(void **state)
{
	struct experiment e;

	memset(&e, 0xa5, sizeof(e));
	assert_int_equal(parse(&e, "{\"trial_name\": \"t1\"}"), 0);
	assert_string_equal(e.trial_name, "t1");
	assert_int_equal(e.kind, KIND_PUSHPULL);
	assert_int_equal(e.data_size, 10000000);
	assert_int_equal(e.push_frequency, 200000000);
	assert_int_equal(e.rate, 0);
	assert_int_equal(e.workers, 4);
	assert_false(e.verify);
	assert_int_equal(e.server, 0xc6120001);
	assert_int_equal(e.offset, -5);
	assert_true(e.ratio == 0.5);
	assert_int_equal(e.multicast.rate, 2000000000);
	assert_int_equal(e.multicast.group, 0xef010101);
	assert_int_equal(e.not_in_table, 0xa5a5a5a5);
}

static void
test_all_fields(void **state)
{
	struct experiment e;

	memset(&e, 0, sizeof(e));
	assert_int_equal(parse(&e, "{\"trial_name\": \"full\", \"kind\": \"staleness\","
			" \"data_size\": \"4KiB\", \"push_frequency\": \"150ms\", \"rate\": \"100Mbps\","
			" \"workers\": 1024, \"verify\": true, \"server\": \"10.0.0.2\", \"offset\": 100,"
			" \"ratio\": 1, \"multicast\": {\"rate\": \"10kbps\", \"group\": \"239.0.0.9\"}}"), 0);
	assert_string_equal(e.trial_name, "full");
	assert_int_equal(e.kind, KIND_STALENESS);
	assert_int_equal(e.data_size, 4096);
	assert_int_equal(e.push_frequency, 150000000);
	assert_int_equal(e.rate, 100000000);
	assert_int_equal(e.workers, 1024);
	assert_true(e.verify);
	assert_int_equal(e.server, 0x0a000002);
	assert_int_equal(e.offset, 100);
	assert_true(e.ratio == 1.0);
	assert_int_equal(e.multicast.rate, 10000);
	assert_int_equal(e.multicast.group, 0xef000009);

	/* JSON numbers: bytes, seconds, bits/s; integral reals are accepted where whole */
	assert_int_equal(parse(&e, "{\"trial_name\": \"n\", \"data_size\": 1024,"
			" \"push_frequency\": 0.2, \"rate\": 1e9, \"workers\": 2.0,"
			" \"multicast\": {\"rate\": 5}}"), 0);
	assert_int_equal(e.data_size, 1024);
	assert_int_equal(e.push_frequency, 200000000);
	assert_int_equal(e.rate, 1000000000);
	assert_int_equal(e.workers, 2);
	assert_int_equal(e.multicast.rate, 5);
	/* an empty nested object still gets the nested defaults */
	assert_int_equal(parse(&e, "{\"trial_name\": \"n\", \"multicast\": {}}"), 0);
	assert_int_equal(e.multicast.rate, 2000000000);
	/* the longest string that fits */
	assert_int_equal(parse(&e, "{\"trial_name\": \"0123456789012345678901234567890\"}"), 0);
	assert_int_equal(strlen(e.trial_name), 31);
}

static void
test_wrong_types(void **state)
{
	expect_reject("{\"trial_name\": 3}", "experiment.trial_name:", "expected a string, got 3");
	expect_reject("{\"trial_name\": \"t\", \"kind\": 1}", "experiment.kind:",
			"expected one of: pushpull, staleness, got 1");
	expect_reject("{\"trial_name\": \"t\", \"kind\": \"push\"}", "experiment.kind:",
			"got \"push\"");
	expect_reject("{\"trial_name\": \"t\", \"data_size\": true}", "experiment.data_size:",
			"expected a size like \"10MB\" or \"4KiB\", got true");
	expect_reject("{\"trial_name\": \"t\", \"data_size\": \"10 megabytes\"}",
			"experiment.data_size:", "got \"10 megabytes\"");
	expect_reject("{\"trial_name\": \"t\", \"data_size\": -5}", "experiment.data_size:",
			"got -5");
	expect_reject("{\"trial_name\": \"t\", \"data_size\": 1.5}", "experiment.data_size:",
			"expected a size");
	expect_reject("{\"trial_name\": \"t\", \"push_frequency\": \"-1s\"}",
			"experiment.push_frequency:", "expected a duration like \"150ms\"");
	expect_reject("{\"trial_name\": \"t\", \"push_frequency\": [1]}",
			"experiment.push_frequency:", "got [1]");
	expect_reject("{\"trial_name\": \"t\", \"rate\": \"2GB\"}", "experiment.rate:",
			"expected a rate like \"2Gbps\", got \"2GB\"");
	expect_reject("{\"trial_name\": \"t\", \"workers\": \"3\"}", "experiment.workers:",
			"expected a non-negative integer, got \"3\" (a JSON number, not a string)");
	expect_reject("{\"trial_name\": \"t\", \"workers\": 2.5}", "experiment.workers:",
			"expected a non-negative integer, got 2.5");
	expect_reject("{\"trial_name\": \"t\", \"workers\": -1}", "experiment.workers:",
			"got -1");
	expect_reject("{\"trial_name\": \"t\", \"offset\": \"3\"}", "experiment.offset:",
			"expected an integer, got \"3\" (a JSON number, not a string)");
	expect_reject("{\"trial_name\": \"t\", \"offset\": null}", "experiment.offset:",
			"expected an integer, got null");
	expect_reject("{\"trial_name\": \"t\", \"ratio\": \"0.5\"}", "experiment.ratio:",
			"expected a number, got \"0.5\"");
	expect_reject("{\"trial_name\": \"t\", \"verify\": 1}", "experiment.verify:",
			"expected true or false, got 1");
	expect_reject("{\"trial_name\": \"t\", \"verify\": \"true\"}", "experiment.verify:",
			"expected true or false, got \"true\"");
	expect_reject("{\"trial_name\": \"t\", \"server\": \"198.18.0.256\"}", "experiment.server:",
			"expected an IPv4 address like \"198.18.0.1\", got \"198.18.0.256\"");
	expect_reject("{\"trial_name\": \"t\", \"server\": 3323068417}", "experiment.server:",
			"expected an IPv4 address");
	expect_reject("{\"trial_name\": \"t\", \"multicast\": \"on\"}", "experiment.multicast:",
			"expected an object, got \"on\"");
	expect_reject("{\"trial_name\": \"t\", \"multicast\": {\"rate\": -1}}",
			"experiment.multicast.rate:", "expected a rate like \"2Gbps\", got -1");
	expect_reject("{\"trial_name\": \"t\", \"multicast\": {\"group\": \"x\"}}",
			"experiment.multicast.group:", "expected an IPv4 address");
	expect_reject("[1, 2]", "experiment:", "expected an object, got [1,2]");
	/* a long offending value is cut short */
	expect_reject("{\"trial_name\": \"t\", \"verify\": [1111111111, 2222222222, 3333333333,"
			" 4444444444, 5555555555]}", "experiment.verify:", "...");
	assert_true(strlen(err) < 160);
	/* and the help of the field is appended */
	expect_reject("{\"trial_name\": \"t\", \"verify\": 1}", "experiment.verify:",
			"-- check the aggregate");
}

static void
test_ranges(void **state)
{
	expect_reject("{\"trial_name\": \"t\", \"workers\": 0}", "experiment.workers:",
			"expected a non-negative integer in [1, 1024], got 0");
	expect_reject("{\"trial_name\": \"t\", \"workers\": 1025}", "experiment.workers:",
			"in [1, 1024], got 1025");
	expect_reject("{\"trial_name\": \"t\", \"data_size\": \"2GiB\"}", "experiment.data_size:",
			"expected a size like \"10MB\" or \"4KiB\" in [1B, 1GiB], got \"2GiB\"");
	expect_reject("{\"trial_name\": \"t\", \"data_size\": 0}", "experiment.data_size:",
			"in [1B, 1GiB], got 0");
	expect_reject("{\"trial_name\": \"t\", \"data_size\": \"99999999999999GiB\"}",
			"experiment.data_size:", "(too large)");
	expect_reject("{\"trial_name\": \"t\", \"offset\": -101}", "experiment.offset:",
			"in [-100, 100], got -101");
	expect_reject("{\"trial_name\": \"t\", \"ratio\": 1.5}", "experiment.ratio:",
			"in [0, 1], got 1.5");
	expect_reject("{\"trial_name\": \"t\", \"multicast\": {\"rate\": \"200Gbps\"}}",
			"experiment.multicast.rate:", "in [1bps, 100Gbps], got \"200Gbps\"");
	expect_reject("{\"trial_name\": \"01234567890123456789012345678901\"}",
			"experiment.trial_name:", "at most 31 bytes");
	/* jansson refuses \u0000 in text, but a document built in code can carry one */
	{
		struct experiment e, before;
		json_t *doc = json_object();

		assert_int_equal(json_object_set_new(doc, "trial_name", json_stringn("a\0b", 3)), 0);
		memset(&e, 0, sizeof(e));
		before = e;
		assert_int_equal(psb_conf_parse(exp_table, &e, doc, "experiment", err, sizeof(err)),
				-EINVAL);
		assert_non_null(strstr(err, "experiment.trial_name: expected a string of at most 31"
				" bytes without NUL"));
		assert_memory_equal(&e, &before, sizeof(e));
		json_decref(doc);
	}
}

static void
test_keys(void **state)
{
	expect_reject("{}", "experiment.trial_name:", "required -- name of the trial");
	expect_reject("{\"kind\": \"pushpull\"}", "experiment.trial_name: required", NULL);
	expect_reject("{\"trial_name\": \"t\", \"wokers\": 3}", "experiment.wokers:",
			"unknown key (expected one of: trial_name, kind, data_size, push_frequency, rate,"
			" workers, verify, server, offset, ratio, multicast)");
	expect_reject("{\"trial_name\": \"t\", \"multicast\": {\"rate\": \"1Gbps\", \"port\": 5}}",
			"experiment.multicast.port:", "unknown key (expected one of: rate, group)");
	/* a misspelt required key is reported as unknown, the more useful of the two */
	expect_reject("{\"trial_nam\": \"t\"}", "experiment.trial_nam:", "unknown key");
	expect_reject("{\"trial_name\": \"t\", \"trial_name\": \"u\"}", "<string>:1:",
			"duplicate");
}

/* A failed parse leaves the destination exactly as it was, even after fields were parsed. */
static void
test_atomic(void **state)
{
	struct experiment e, before;

	memset(&e, 0, sizeof(e));
	assert_int_equal(parse(&e, "{\"trial_name\": \"good\", \"workers\": 8}"), 0);
	before = e;
	/* trial_name and workers come before the bad key in table order */
	assert_int_equal(parse(&e, "{\"trial_name\": \"bad\", \"workers\": 9,"
			" \"multicast\": {\"rate\": \"fast\"}}"), -EINVAL);
	assert_memory_equal(&e, &before, sizeof(e));
	assert_string_equal(e.trial_name, "good");
}

static void
test_file(void **state)
{
	char path[] = "/tmp/test_conf_XXXXXX";
	struct experiment e, before;
	FILE *f;
	int fd;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs("{\n  \"trial_name\": \"file\",\n  \"workers\": 3,\n  \"verify\": tru\n}\n", f);
	fclose(f);
	memset(&e, 0x5a, sizeof(e));
	before = e;
	assert_int_equal(psb_conf_parse_file(exp_table, &e, path, "experiment", err, sizeof(err)),
			-EINVAL);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, ":4:"));	/* line 4, with a column after it */
	assert_memory_equal(&e, &before, sizeof(e));

	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"trial_name\": \"file\", \"workers\": 3, \"verify\": true}\n", f);
	fclose(f);
	assert_int_equal(psb_conf_parse_file(exp_table, &e, path, "experiment", err, sizeof(err)), 0);
	assert_int_equal(e.workers, 3);
	assert_true(e.verify);
	unlink(path);

	assert_int_equal(psb_conf_parse_file(exp_table, &e, path, "experiment", err, sizeof(err)),
			-ENOENT);
	assert_non_null(strstr(err, path));
	assert_int_equal(parse(&e, "{\"trial_name\": \"x\",\n\"workers\": }"), -EINVAL);
	assert_non_null(strstr(err, "<string>:2:"));
}

static void
test_set(void **state)
{
	struct experiment e, before;
	char small[16];

	memset(&e, 0, sizeof(e));
	assert_int_equal(parse(&e, "{\"trial_name\": \"s\"}"), 0);
	assert_int_equal(psb_conf_set(exp_table, &e, "multicast.rate", "3Gbps", err, sizeof(err)), 0);
	assert_int_equal(e.multicast.rate, 3000000000ull);
	assert_int_equal(psb_conf_set(exp_table, &e, "multicast.group", "239.9.9.9", err,
			sizeof(err)), 0);
	assert_int_equal(e.multicast.group, 0xef090909);
	assert_int_equal(psb_conf_set(exp_table, &e, "workers", "8", err, sizeof(err)), 0);
	assert_int_equal(e.workers, 8);
	assert_int_equal(psb_conf_set(exp_table, &e, "verify", "true", err, sizeof(err)), 0);
	assert_true(e.verify);
	assert_int_equal(psb_conf_set(exp_table, &e, "trial_name", "123", err, sizeof(err)), 0);
	assert_string_equal(e.trial_name, "123");
	assert_int_equal(psb_conf_set(exp_table, &e, "kind", "staleness", err, sizeof(err)), 0);
	assert_int_equal(e.kind, KIND_STALENESS);
	assert_int_equal(psb_conf_set(exp_table, &e, "push_frequency", "20us", err, sizeof(err)), 0);
	assert_int_equal(e.push_frequency, 20000);
	assert_int_equal(psb_conf_set(exp_table, &e, "ratio", "0.25", err, sizeof(err)), 0);
	assert_true(e.ratio == 0.25);

	before = e;
	assert_int_equal(psb_conf_set(exp_table, &e, "multicast.rate", "-1", err, sizeof(err)),
			-EINVAL);
	assert_non_null(strstr(err, "multicast.rate: expected a rate like \"2Gbps\", got -1"));
	assert_int_equal(psb_conf_set(exp_table, &e, "workers", "0", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "workers: expected a non-negative integer in [1, 1024]"));
	assert_int_equal(psb_conf_set(exp_table, &e, "workers", "lots", err, sizeof(err)), -EINVAL);
	assert_int_equal(psb_conf_set(exp_table, &e, "kind", "other", err, sizeof(err)), -EINVAL);
	assert_int_equal(psb_conf_set(exp_table, &e, "trial_name",
			"this name is far too long for the buffer", err, sizeof(err)), -EINVAL);
	assert_int_equal(psb_conf_set(exp_table, &e, "verify", "yes", err, sizeof(err)), -EINVAL);
	assert_int_equal(psb_conf_set(exp_table, &e, "multicast", "{}", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "set one of its keys: rate, group"));
	assert_memory_equal(&e, &before, sizeof(e));

	assert_int_equal(psb_conf_set(exp_table, &e, "multicast.port", "1", err, sizeof(err)),
			-ENOENT);
	assert_non_null(strstr(err, "multicast.port: unknown key \"port\" (expected one of: rate, group)"));
	assert_int_equal(psb_conf_set(exp_table, &e, "nope", "1", err, sizeof(err)), -ENOENT);
	assert_int_equal(psb_conf_set(exp_table, &e, "workers.x", "1", err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "is not an object"));
	assert_int_equal(psb_conf_set(exp_table, &e, "", "1", err, sizeof(err)), -ENOENT);
	assert_int_equal(psb_conf_set(exp_table, &e, "multicast.", "1", err, sizeof(err)), -ENOENT);
	assert_memory_equal(&e, &before, sizeof(e));

	/* a tiny error buffer is truncated, never overrun */
	assert_int_equal(psb_conf_set(exp_table, &e, "workers", "0", small, sizeof(small)), -EINVAL);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_int_equal(psb_conf_set(exp_table, &e, "workers", "0", NULL, 0), -EINVAL);
}

static void
roundtrip(const char *text)
{
	struct experiment a, b;
	json_t *d;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	if (parse(&a, text) != 0)
		print_error("%s\n", err);
	assert_int_equal(parse(&a, text), 0);
	d = psb_conf_dump(exp_table, &a);
	assert_non_null(d);
	if (psb_conf_parse(exp_table, &b, d, "dump", err, sizeof(err)) != 0)
		print_error("%s\n", err);
	assert_int_equal(psb_conf_parse(exp_table, &b, d, "dump", err, sizeof(err)), 0);
	json_decref(d);
	assert_memory_equal(&a, &b, sizeof(a));
}

static void
test_dump(void **state)
{
	struct experiment e;
	json_t *d;
	char *s;

	memset(&e, 0, sizeof(e));
	assert_int_equal(parse(&e, "{\"trial_name\": \"d\", \"data_size\": 2048000,"
			" \"rate\": \"1.5Gbps\"}"), 0);
	d = psb_conf_dump(exp_table, &e);
	assert_non_null(d);
	s = json_dumps(d, JSON_COMPACT);
	assert_non_null(s);
	assert_string_equal(s, "{\"trial_name\":\"d\",\"kind\":\"pushpull\",\"data_size\":\"2000KiB\","
			"\"push_frequency\":\"200ms\",\"rate\":\"1500Mbps\",\"workers\":4,\"verify\":false,"
			"\"server\":\"198.18.0.1\",\"offset\":-5,\"ratio\":0.5,"
			"\"multicast\":{\"rate\":\"2Gbps\",\"group\":\"239.1.1.1\"}}");
	free(s);
	json_decref(d);

	roundtrip("{\"trial_name\": \"t\"}");
	roundtrip("{\"trial_name\": \"full\", \"kind\": \"staleness\", \"data_size\": \"0.75GB\","
			" \"push_frequency\": 0.123456789, \"rate\": 12345, \"workers\": 77,"
			" \"verify\": true, \"server\": \"255.255.255.255\", \"offset\": -100,"
			" \"ratio\": 0.1, \"multicast\": {\"rate\": \"7bps\", \"group\": \"0.0.0.0\"}}");
}

static void
test_help(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	psb_conf_help(f, exp_table, "experiment");
	fclose(f);
	assert_non_null(strstr(buf, "experiment.multicast.rate"));
	assert_non_null(strstr(buf, "default 10MB [1B, 1GiB]  model size"));
	assert_non_null(strstr(buf, "{pushpull|staleness}"));
	assert_non_null(strstr(buf, "required"));
	free(buf);
}

struct with_list {
	struct psb_conf_strlist ports;
	uint64_t n;
};

static const struct psb_conf_field list_table[] = {
	{ .key = "ports", .type = PSB_CONF_STRLIST, .offset = offsetof(struct with_list, ports),
	  .def = "[\"null\"]", .max = 3, .help = "port specs" },
	{ .key = "n", .type = PSB_CONF_UINT, .offset = offsetof(struct with_list, n), .def = "1" },
	{ .key = NULL },
};

/* String lists: arrays or a lone string, a cap on the count, items named by index. */
static void
test_strlist(void **state)
{
	struct with_list w, before;
	char err[512];
	json_t *j;

	(void)state;
	assert_int_equal(psb_conf_parse_string(list_table, &w, "{}", "node", err, sizeof(err)), 0);
	assert_int_equal(w.ports.n, 1);
	assert_string_equal(w.ports.v[0], "null");
	assert_int_equal(psb_conf_parse_string(list_table, &w, "{\"ports\": [\"a\", \"b\"]}",
					       "node", err, sizeof(err)), 0);
	assert_int_equal(w.ports.n, 2);
	assert_string_equal(w.ports.v[1], "b");
	assert_int_equal(psb_conf_parse_string(list_table, &w, "{\"ports\": \"one\"}", "node",
					       err, sizeof(err)), 0);
	assert_int_equal(w.ports.n, 1);
	assert_string_equal(w.ports.v[0], "one");
	assert_int_equal(psb_conf_parse_string(list_table, &w, "{\"ports\": []}", "node", err,
					       sizeof(err)), 0);
	assert_int_equal(w.ports.n, 0);

	memcpy(&before, &w, sizeof(w));
	assert_int_equal(psb_conf_parse_string(list_table, &w, "{\"ports\": [\"a\", 2]}", "node",
					       err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "node.ports[1]: expected a string, got 2");
	assert_int_equal(psb_conf_parse_string(list_table, &w,
					       "{\"ports\": [\"a\", \"b\", \"c\", \"d\"]}",
					       "node", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "node.ports: expected at most 3 items, got 4"));
	assert_int_equal(psb_conf_parse_string(list_table, &w, "{\"ports\": {}}", "node", err,
					       sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "node.ports: expected a string or an array of strings"));
	assert_memory_equal(&w, &before, sizeof(w));

	/* set takes a JSON array or plain text; dump gives an array back */
	assert_int_equal(psb_conf_set(list_table, &w, "ports", "[\"x\", \"y\"]", err,
				      sizeof(err)), 0);
	assert_int_equal(w.ports.n, 2);
	assert_int_equal(psb_conf_set(list_table, &w, "ports", "memif:server:/a.sock", err,
				      sizeof(err)), 0);
	assert_int_equal(w.ports.n, 1);
	assert_string_equal(w.ports.v[0], "memif:server:/a.sock");
	j = psb_conf_dump(list_table, &w);
	assert_non_null(j);
	assert_true(json_is_array(json_object_get(j, "ports")));
	assert_string_equal(json_string_value(json_array_get(json_object_get(j, "ports"), 0)),
			    "memif:server:/a.sock");
	json_decref(j);
}

/* psb_text_json writes what json_dumps(JSON_COMPACT) writes. */
static void
assert_same_text(const json_t *v)
{
	struct psb_text t = { 0 };
	char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

	assert_non_null(want);
	psb_text_json(&t, v);
	assert_false(t.oom);
	assert_non_null(t.s);
	assert_string_equal(t.s, want);
	assert_int_equal(t.len, strlen(want));
	free(want);
	free(t.s);
}

static void
test_text_json_cases(void **state)
{
	static const double reals[] = {
		0.0, -0.0, 0.1, -2.5, 3.0, 1e20, 1e-5, 1.5e300, 2.5e-300, 123456789.125,
		1e16, 12345678901234567890.0, 0.30000000000000004, -1e-310,
	};
	static const long long ints[] = {
		0, 1, -1, 9, 10, 99, 100, 4294967296ll, -9223372036854775807ll - 1,
		9223372036854775807ll,
	};
	static const char *const strs[] = {
		"", "plain", "quote\"q", "back\\slash", "nl\ncr\rtab\tbs\bff\f", "\x01\x1f\x7f",
		"/slash/", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
	};
	json_t *o = json_object(), *a = json_array(), *v;
	unsigned int i;
	char key[16];

	for (i = 0; i < sizeof(reals) / sizeof(reals[0]); i++) {
		v = json_real(reals[i]);
		assert_same_text(v);
		snprintf(key, sizeof(key), "r%u", i);
		json_object_set_new(o, key, v);
	}
	for (i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		v = json_integer(ints[i]);
		assert_same_text(v);
		json_array_append_new(a, v);
	}
	for (i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		v = json_string(strs[i]);
		assert_non_null(v);
		assert_same_text(v);
		json_object_set_new(o, strs[i], v);	/* keys are escaped the same way */
	}
	json_array_append_new(a, json_true());
	json_array_append_new(a, json_false());
	json_array_append_new(a, json_null());
	json_array_append_new(a, json_object());
	json_array_append_new(a, json_array());
	json_object_set_new(o, "list", a);
	json_object_set_new(o, "nested", json_pack("{s:{s:[i,{s:f}]}}", "a", "b", 1, "c", 0.5));
	assert_same_text(o);
	json_decref(o);
}

/* Random trees, seeded: objects, arrays, numbers of every size, strings of any byte < 128. */
static json_t *
random_json(unsigned int *seed, int depth)
{
	json_t *v;
	char s[24];
	int i, n, kind = rand_r(seed) % (depth > 0 ? 8 : 6);

	switch (kind) {
	case 0:
		return json_integer((json_int_t)rand_r(seed) * rand_r(seed) * (rand_r(seed) % 3 - 1));
	case 1:
		return json_real((double)rand_r(seed) / (rand_r(seed) + 1) *
				 (rand_r(seed) % 2 ? 1e-9 : 1e12));
	case 2:
		n = rand_r(seed) % (int)sizeof(s);
		for (i = 0; i < n; i++)
			s[i] = (char)(1 + rand_r(seed) % 127);
		s[n] = '\0';
		return json_string(s);
	case 3:
		return json_boolean(rand_r(seed) % 2);
	case 4:
		return json_null();
	case 5:
		return json_integer(rand_r(seed) % 1000);
	case 6:
		v = json_array();
		for (n = rand_r(seed) % 6; n > 0; n--)
			json_array_append_new(v, random_json(seed, depth - 1));
		return v;
	default:
		v = json_object();
		for (n = rand_r(seed) % 6; n > 0; n--) {
			snprintf(s, sizeof(s), "k%d\t%d", rand_r(seed) % 100, n);
			json_object_set_new(v, s, random_json(seed, depth - 1));
		}
		return v;
	}
}

static void
test_text_json_random(void **state)
{
	unsigned int seed = 12345, i;
	json_t *v;

	for (i = 0; i < 2000; i++) {
		v = random_json(&seed, 4);
		assert_non_null(v);
		assert_same_text(v);
		json_decref(v);
	}
}

/* One sequence of calls, both ways: the text is what the tree writes as. */
static void
emit_doc(struct psb_emit *e)
{
	psb_emit_open(e, NULL);
	psb_emit_int(e, "a", 1);
	psb_emit_int(e, "neg", -9223372036854775807ll - 1);
	psb_emit_real(e, "r", 0.1);
	psb_emit_real(e, "whole", 3.0);
	psb_emit_real(e, "nan", 0.0 / 0.0);		/* left out */
	psb_emit_real(e, "inf", 1.0 / 0.0);		/* left out */
	psb_emit_bool(e, "yes", 1);
	psb_emit_bool(e, "no", 0);
	psb_emit_str(e, "s", "tab\tquote\"");
	psb_emit_str(e, "null", NULL);			/* left out */
	psb_emit_str(e, "latin1", "caf\xe9");		/* not UTF-8: left out */
	psb_emit_open(e, "inner");
	psb_emit_open(e, "empty");
	psb_emit_close(e);
	psb_emit_int(e, "b", 2);
	psb_emit_open(e, "deeper");
	psb_emit_str(e, "k\"ey", "v");
	psb_emit_close(e);
	psb_emit_close(e);
	psb_emit_json(e, "raw", json_pack("[i,{s:b}]", 7, "x", 1));
	psb_emit_json(e, "none", NULL);			/* nothing */
	psb_emit_int(e, "last", 42);
	psb_emit_close(e);
}

static void
test_emit(void **state)
{
	struct psb_text t = { 0 }, want = { 0 };
	struct psb_emit e;
	json_t *tree;

	psb_emit_tree(&e);
	emit_doc(&e);
	tree = psb_emit_done(&e);
	assert_non_null(tree);
	assert_int_equal(json_object_size(tree), 10);
	assert_null(json_object_get(tree, "nan"));
	assert_null(json_object_get(tree, "latin1"));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(tree, "inner"), "b")),
			 2);
	psb_text_json(&want, tree);
	json_decref(tree);

	psb_emit_text(&e, &t);
	emit_doc(&e);
	assert_null(psb_emit_done(&e));
	assert_false(e.oom);
	assert_string_equal(t.s, want.s);
	free(t.s);
	free(want.s);

	/* misuse is refused, not written: a leaf outside an object, a close too many */
	memset(&t, 0, sizeof(t));
	psb_emit_text(&e, &t);
	psb_emit_int(&e, "outside", 1);
	psb_emit_close(&e);
	assert_true(e.oom);
	assert_null(t.s);
	psb_emit_text(&e, &t);
	psb_emit_open(&e, NULL);
	psb_emit_open(&e, NULL);	/* an object without a key: dropped whole */
	psb_emit_int(&e, "x", 1);
	psb_emit_open(&e, "inside");
	psb_emit_close(&e);
	psb_emit_close(&e);
	psb_emit_int(&e, "y", 2);
	psb_emit_close(&e);
	assert_true(e.oom);
	assert_string_equal(t.s, "{\"y\":2}");
	free(t.s);
	psb_emit_tree(&e);
	psb_emit_open(&e, NULL);
	psb_emit_open(&e, NULL);
	psb_emit_int(&e, "x", 1);
	psb_emit_close(&e);
	psb_emit_close(&e);
	assert_null(psb_emit_done(&e));
}

/* The whole content of a file, or "" if there is none. */
static const char *
slurp(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n = 0;

	buf[0] = '\0';
	if (f == NULL)
		return buf;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* psb_logfile: appends; opened again after a rename or a removal; rotated to .1 by size. */
static void
test_logfile(void **state)
{
	char dir[] = "/tmp/psb-logfile-XXXXXX", path[128], old[128], one[128];
	char line[160];
	struct psb_logfile lf;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/c.jsonl", dir);
	snprintf(old, sizeof(old), "%s/c.jsonl.old", dir);
	snprintf(one, sizeof(one), "%s/c.jsonl.1", dir);

	/* appended to what the file held */
	assert_int_equal(psb_logfile_open(&lf, path, 0), 0);
	assert_int_equal(psb_logfile_write(&lf, "a\n", 2), 0);
	psb_logfile_close(&lf);
	assert_int_equal(psb_logfile_open(&lf, path, 0), 0);
	assert_int_equal(lf.size, 2);
	assert_int_equal(psb_logfile_write(&lf, "b\n", 2), 0);
	assert_string_equal(slurp(path), "a\nb\n");

	/* renamed away (logrotate): the next line starts the path again, the old one stays */
	assert_int_equal(rename(path, old), 0);
	assert_int_equal(psb_logfile_write(&lf, "c\n", 2), 0);
	assert_string_equal(slurp(path), "c\n");
	assert_string_equal(slurp(old), "a\nb\n");
	assert_int_equal(lf.reopens, 1);
	/* removed: made again */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(psb_logfile_write(&lf, "d\n", 2), 0);
	assert_string_equal(slurp(path), "d\n");
	assert_int_equal(lf.reopens, 2);
	/* the same file again: nothing reopened */
	assert_int_equal(psb_logfile_write(&lf, "e\n", 2), 0);
	assert_int_equal(lf.reopens, 2);
	psb_logfile_close(&lf);
	unlink(path);
	unlink(old);

	/* by size: a line that would pass 100 bytes goes to a new file, the full one to .1 */
	memset(line, 'x', sizeof(line));
	line[39] = '\n';
	assert_int_equal(psb_logfile_open(&lf, path, 100), 0);
	assert_int_equal(psb_logfile_write(&lf, line, 40), 0);
	assert_int_equal(psb_logfile_write(&lf, line, 40), 0);
	assert_int_equal(lf.rotations, 0);
	assert_int_equal(psb_logfile_write(&lf, line, 40), 0);
	assert_int_equal(lf.rotations, 1);
	assert_int_equal(strlen(slurp(one)), 80);
	assert_int_equal(strlen(slurp(path)), 40);
	/* a line longer than the limit: alone in a file of its own */
	line[149] = '\n';
	assert_int_equal(psb_logfile_write(&lf, line, 150), 0);
	assert_int_equal(lf.rotations, 2);
	assert_int_equal(strlen(slurp(one)), 40);
	assert_int_equal(strlen(slurp(path)), 150);
	assert_int_equal(psb_logfile_write(&lf, line, 40), 0);
	assert_int_equal(lf.rotations, 3);
	assert_int_equal(strlen(slurp(one)), 150);
	assert_int_equal(strlen(slurp(path)), 40);
	assert_int_equal(lf.reopens, 0);
	psb_logfile_close(&lf);
	unlink(path);
	unlink(one);

	/* a directory that is not there: the error, and nothing written later either */
	snprintf(path, sizeof(path), "%s/no/c.jsonl", dir);
	assert_int_equal(psb_logfile_open(&lf, path, 0), -ENOENT);
	assert_int_equal(psb_logfile_write(&lf, "x\n", 2), -ENOENT);
	psb_logfile_close(&lf);
	assert_int_equal(rmdir(dir), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size_units),
		cmocka_unit_test(test_duration_units),
		cmocka_unit_test(test_rate_units),
		cmocka_unit_test(test_format_units),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_all_fields),
		cmocka_unit_test(test_wrong_types),
		cmocka_unit_test(test_ranges),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_atomic),
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_set),
		cmocka_unit_test(test_dump),
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_strlist),
		cmocka_unit_test(test_text_json_cases),
		cmocka_unit_test(test_text_json_random),
		cmocka_unit_test(test_emit),
		cmocka_unit_test(test_logfile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
