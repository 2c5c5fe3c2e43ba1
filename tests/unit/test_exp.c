/* Unit tests of lib/exp: every shipped document, broken documents, results directories. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "psb_exp.h"

static const char *const cols[] = { "worker", "goodput_gbps", "note", NULL };

static int
load_text(struct psb_exp_conf *c, const char *text, bool need_node, char *err, size_t len)
{
	json_error_t je;
	json_t *doc = json_loads(text, 0, &je);
	int rc;

	if (doc == NULL)
		fail_msg("test document does not parse: %s: %s", text, je.text);
	rc = psb_exp_load(c, doc, need_node, err, len);
	json_decref(doc);
	return rc;
}

/* Every document under config/ loads as one psb can start from, and dumps back the same. */
static void
test_shipped_configs(void **state)
{
	const char *dir = getenv("PSB_CONFIG_DIR");
	struct psb_exp_conf *c = calloc(1, sizeof(*c)), *back = calloc(1, sizeof(*back));
	char path[1024], err[1024];
	struct dirent *de;
	unsigned int n = 0, kinds = 0;
	bool appliance;
	json_t *dump;
	DIR *d;

	(void)state;
	assert_non_null(dir);
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);

		if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		/* sweeps of documents, not documents: psb-sweep's tests read them */
		if (strncmp(de->d_name, "sweep-", 6) == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		/* psb-stale's staleness documents give no appliance settings (node.ports) */
		if (psb_exp_load_file(c, path, PSB_EXP_FILE_MAX, false, err, sizeof(err)) != 0)
			fail_msg("%s: %s", path, err);
		appliance = c->kind != PSB_EXP_STALENESS || c->node.ports.n != 0;
		if (appliance &&
		    psb_exp_load_file(c, path, PSB_EXP_FILE_MAX, true, err, sizeof(err)) != 0)
			fail_msg("%s: %s", path, err);
		assert_true(appliance ? c->node.ports.n >= 1 : c->node.ip != 0);
		kinds |= 1u << c->kind;
		dump = psb_exp_dump(c);
		assert_non_null(dump);
		if (psb_exp_load(back, dump, appliance, err, sizeof(err)) != 0)
			fail_msg("%s: dump does not load back: %s", path, err);
		assert_memory_equal(c, back, sizeof(*c));
		json_decref(dump);
		n++;
	}
	closedir(d);
	assert_true(n >= 2);
	/* a shipped example for every kind */
	assert_int_equal(kinds, (1u << PSB_EXP_KIND_MAX) - 1);
	free(c);
	free(back);
}

/* the appliance as a staleness worker */
#define STALE_R(role, node, st) "{\"name\": \"a\", \"kind\": \"staleness\", \"node\": " \
	"{\"role\": \"" role "\", \"ports\": [\"null\"], \"ip\": \"198.18.0.2\"" node "}, " \
	"\"staleness\": {\"trainer\": \"198.18.0.1\"" st "}}"
#define STALE_W(node, st) STALE_R("worker", node, st)
/* a trainer's document: node.ip is the trainer */
#define STALE_T(node, st) "{\"name\": \"a\", \"kind\": \"staleness\", \"node\": " \
	"{\"role\": \"trainer\", \"ports\": [\"null\"], \"ip\": \"198.18.0.1\"" node "}, " \
	"\"staleness\": {\"data_size\": 10" st "}}"

#define NODE_W "\"node\": {\"role\": \"worker\", \"ports\": [\"null\"], \"ip\": \"198.18.0.2\", " \
	"\"server\": \"198.18.0.1\"}"

static const struct {
	const char *doc;
	bool need_node;
	const char *want;	/* the message starts with this path, then says this */
	const char *also;
} broken[] = {
	{ "{\"kind\": \"pushpull\"}", false, "name:", "required" },
	{ "{\"name\": \"a\"}", false, "kind:", "required" },
	{ "{\"name\": \"a\", \"kind\": \"pushpul\"}", false, "kind:", "pushpull, serve, staleness" },
	{ "{\"name\": \"a\", \"kind\": \"staleness\", \"staleness\": {\"group\": "
	  "\"10.0.0.1\"}}", false, "staleness.group:", "multicast address" },
	{ "{\"name\": \"a\", \"kind\": \"staleness\", \"staleness\": {\"mode\": \"epgm\", "
	  "\"group\": \"240.0.0.1\"}}", false, "staleness.group:", "multicast address" },
	{ "{\"name\": \"a\", \"kind\": \"staleness\", \"staleness\": {\"mode\": \"bcast\"}}",
	  false, "staleness.mode:", "multicast, pull, filesystem, epgm" },
	{ "{\"name\": \"a\", \"kind\": \"staleness\", \"staleness\": {\"step_frequency\": "
	  "\"3s\"}}", false, "staleness.step_frequency:", "post_frequency" },
	{ "{\"name\": \"a\", \"kind\": \"staleness\", \"staleness\": {\"workers\": 2, "
	  "\"workers_per_node\": 3}}", false, "staleness.workers_per_node:", "more than" },
	{ "{\"name\": \"a\", \"kind\": \"staleness\", \"staleness\": {\"mode\": "
	  "\"filesystem\", \"dir\": \"../x\"}}", false, "staleness.dir:", "inside" },
	{ "{\"name\": \"a\", \"kind\": \"staleness\", \"staleness\": {\"mode\": "
	  "\"filesystem\", \"dir\": \"\"}}", false, "staleness.dir:", "directory" },
	{ "{\"name\": \"a\", \"kind\": \"staleness\", \"staleness\": {\"data_size\": -1}}",
	  false, "staleness.data_size:", "in [" },
	{ "{\"name\": \"a\", \"kind\": \"staleness\", \"staleness\": {\"push_frequency\": "
	  "\"0.1ms\"}}", false, "staleness.push_frequency:", "in [" },
	{ "{\"name\": \"a\", \"kind\": \"serve\", \"staleness\": {}}", false, "staleness:",
	  "kind staleness" },
	{ "{\"name\": \"a\", \"kind\": \"serve\", \"nmae\": 1}", false, "nmae:", "unknown key" },
	{ "{\"name\": \"../up\", \"kind\": \"serve\"}", false, "name:", "directory" },
	{ "{\"name\": \"\", \"kind\": \"serve\"}", false, "name:", "letters" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"pushpull\": {\"len\": \"abc\"}}", false,
	  "pushpull.len:", "size" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"pushpull\": {\"len\": 1023}}", false,
	  "pushpull.len:", "multiple of 4" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"pushpull\": {\"len\": \"2GB\"}}", false,
	  "pushpull.len:", "in [" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"pushpull\": {\"len\": \"128MB\"}}", false,
	  "pushpull.len:", "node.max_value" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"pushpull\": {\"timeout\": \"1us\"}}", false,
	  "pushpull.timeout:", "duration" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"pushpull\": {\"rate\": -1}}", false,
	  "pushpull.rate:", "rate" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"pushpull\": {\"mode\": 7}}", false,
	  "pushpull.mode:", "PUSH_PULL" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"pushpull\": {\"verify\": \"yes\"}}", false,
	  "pushpull.verify:", "true or false" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"pushpull\": {\"keyz\": 3}}", false,
	  "pushpull.keyz:", "unknown key" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"serve\": {}}", false, "serve:",
	  "kind serve" },
	{ "{\"name\": \"a\", \"kind\": \"serve\", \"store\": {\"resend_rate\": \"fast\"}}", false,
	  "store.resend_rate:", "rate like" },
	{ "{\"name\": \"a\", \"kind\": \"serve\", \"store\": {\"resend_rate\": \"500Gbps\"}}",
	  false, "store.resend_rate:", "in [" },
	{ "{\"name\": \"a\", \"kind\": \"serve\", \"store\": {\"resend_burst\": -1}}", false,
	  "store.resend_burst:", "size" },
	{ "{\"name\": \"a\", \"kind\": \"serve\", \"output\": {\"counters_every\": \"1ms\"}}", false,
	  "output.counters_every:", "in [" },
	{ "{\"name\": \"a\", \"kind\": \"serve\", \"output\": {\"dir\": \"\"}}", false,
	  "output.dir:", "directory" },
	{ "{\"name\": \"a\", \"kind\": \"serve\", \"output\": {\"counters_max\": \"1KiB\"}}",
	  false, "output.counters_max:", "at least 64KiB, got 1024 B" },
	/* a document's paths stay inside psb's results directory */
	{ "{\"name\": \"a\", \"kind\": \"serve\", \"output\": {\"dir\": \"/etc\"}}", false,
	  "output.dir:", "must be relative and inside the results directory, got \"/etc\"" },
	{ "{\"name\": \"a\", \"kind\": \"serve\", \"output\": {\"dir\": \"r/../../x\"}}", false,
	  "output.dir:", "no \"..\"" },
	{ "{\"name\": \"a\", \"kind\": \"serve\", \"output\": {\"dir\": \"..\"}}", false,
	  "output.dir:", "\"..\"" },
	{ "{\"name\": \"a\", \"kind\": \"serve\", \"output\": {\"counters_file\": "
	  "\"/tmp/c.jsonl\"}}", false, "output.counters_file:", "must be relative" },
	{ "{\"name\": \"a\", \"kind\": \"serve\", \"output\": {\"counters_file\": "
	  "\"../c.jsonl\"}}", false, "output.counters_file:", "\"..\"" },
	/* the file prefix names a directory psb cleans up: a name, never a path */
	{ "{\"name\": \"a\", \"kind\": \"serve\", \"node\": {\"file_prefix\": \"../x\"}}",
	  false, "node.file_prefix:", "letters" },
	{ "{\"name\": \"a\", \"kind\": \"serve\", \"node\": {\"file_prefix\": \"a/b\"}}",
	  false, "node.file_prefix:", "letters" },
	{ "{\"name\": \"a\", \"kind\": \"serve\", \"node\": {\"file_prefix\": \".hidden\"}}",
	  false, "node.file_prefix:", "not first" },
	{ "{\"name\": \"a\", \"kind\": \"serve\", \"node\": {\"file_prefix\": "
	  "\"abcdefghijabcdefghijabcdefghijabcdefghijk\"}}", false, "node.file_prefix:",
	  "at most 40" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\"}", true, "node:", "appliance" },
	{ STALE_R("server", "", ""), true, "node.role:", "the trainer (node.role trainer) or a "
	  "worker" },
	{ STALE_R("scheduler", "", ""), true, "node.role:", "got \"scheduler\"" },
	{ STALE_T("", ", \"trainer\": \"198.18.0.7\""), true, "staleness.trainer:",
	  "this node" },
	{ STALE_T("", ", \"mode\": \"filesystem\""), true, "staleness.mode:", "psb-stale trainer" },
	{ STALE_T("", ", \"mode\": \"epgm\""), true, "staleness.mode:", "multicast or pull" },
	{ STALE_T(", \"udp_port\": 7001", ""), true, "staleness.port:", "node.udp_port" },
	{ STALE_T("", ", \"budget\": \"15MB\""), true, "staleness.budget:",
	  "fewer than 2 versions of 10000000 B" },
	{ "{\"name\": \"a\", \"kind\": \"serve\", \"node\": {\"role\": \"trainer\", "
	  "\"ports\": [\"null\"], \"ip\": \"198.18.0.1\"}}", true, "node.role:",
	  "a trainer runs kind staleness" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"node\": {\"role\": \"trainer\", "
	  "\"ports\": [\"null\"], \"ip\": \"198.18.0.1\"}}", true, "node.role:",
	  "runs on a worker" },
	{ "{\"name\": \"a\", \"kind\": \"staleness\", \"node\": {\"role\": \"worker\", "
	  "\"ports\": [\"null\"], \"ip\": \"198.18.0.2\"}}", true, "staleness.trainer:",
	  "trainer's address" },
	{ STALE_W("", ", \"mode\": \"filesystem\""), true, "staleness.mode:", "psb-stale worker" },
	{ STALE_W("", ", \"mode\": \"epgm\""), true, "staleness.mode:", "multicast or pull" },
	{ STALE_W(", \"rank\": 4", ""), true, "node.rank:", "ids 0 to 3" },
	{ STALE_W(", \"udp_port\": 7000", ""), true, "staleness.group_port:", "node.udp_port" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"node\": {\"ip\": \"198.18.0.2\"}}", true,
	  "node.ports:", "at least one" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"node\": {\"ports\": 5}}", true,
	  "node.ports:", "array of strings" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"node\": {\"ports\": [\"null\", 1]}}", true,
	  "node.ports[1]:", "a string" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"node\": {\"ports\": [\"a\",\"b\",\"c\",\"d\","
	  "\"e\",\"f\",\"g\",\"h\",\"i\"]}}", true, "node.ports:", "at most 8" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"node\": {\"ports\": [\"null\"], \"ip\": "
	  "\"198.18.0\"}}", true, "node.ip:", "IPv4" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"node\": {\"ports\": [\"null\"], \"ip\": "
	  "\"198.18.0.2\"}}", true, "node.server:", "node.scheduler" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"node\": {\"role\": \"boss\"}}", true,
	  "node.role:", "server, worker, scheduler, trainer" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"node\": {\"role\": \"server\", \"ports\": "
	  "[\"null\"], \"ip\": \"198.18.0.1\"}}", true, "node.role:", "worker" },
	{ "{\"name\": \"a\", \"kind\": \"serve\", " NODE_W "}", true, "node.role:", "server" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"node\": {\"role\": \"worker\", \"ports\": "
	  "[\"null\"], \"ip\": \"198.18.0.2\", \"server\": \"198.18.0.1\", \"rank\": 1}}", true,
	  "node.rank:", "num_workers" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"node\": {\"num_workers\": 0}}", false,
	  "node.num_workers:", "in [" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"node\": {\"yield\": \"2s\"}}", false,
	  "node.yield:", "in [" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"node\": {\"ctl_share_pct\": 0}}", false,
	  "node.ctl_share_pct:", "in [" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"node\": {\"ctl_reply_max\": \"1KiB\"}}",
	  false, "node.ctl_reply_max:", "in [" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"node\": {\"file_max\": -1}}", false,
	  "node.file_max:", "size" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"node\": {\"prometheus_timeout\": "
	  "\"1ms\"}}", false, "node.prometheus_timeout:", "in [" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"node\": {\"sync_value\": \"each\"}}",
	  false, "node.sync_value:", "total, round" },
	{ "{\"name\": \"a\", \"kind\": \"pushpull\", \"node\": {\"ports\": [\"null\"], "
	  "\"ip\": \"198.18.0.1\", \"sync\": false, \"sync_value\": \"round\"}}", true,
	  "node.sync_value:", "synchronous" },
	{ "[1, 2]", false, "expected a JSON object", NULL },
};

/* Each broken document is refused by the path of what is wrong, and changes nothing. */
static void
test_broken_documents(void **state)
{
	struct psb_exp_conf *c = calloc(1, sizeof(*c)), *before = calloc(1, sizeof(*before));
	char err[1024];
	size_t i;

	(void)state;
	assert_int_equal(load_text(c, "{\"name\": \"keep\", \"kind\": \"pushpull\", " NODE_W "}",
				   true, err, sizeof(err)), 0);
	memcpy(before, c, sizeof(*c));
	for (i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
		err[0] = '\0';
		if (load_text(c, broken[i].doc, broken[i].need_node, err, sizeof(err)) == 0)
			fail_msg("accepted: %s", broken[i].doc);
		if (strncmp(err, broken[i].want, strlen(broken[i].want)) != 0 ||
		    (broken[i].also != NULL && strstr(err, broken[i].also) == NULL))
			fail_msg("%s\n  gave: %s\n  want: %s ... %s", broken[i].doc, err,
				 broken[i].want, broken[i].also != NULL ? broken[i].also : "");
		assert_memory_equal(c, before, sizeof(*c));
	}
	free(c);
	free(before);
}

static void
test_syntax_error_names_line(void **state)
{
	char path[] = "/tmp/psb-test-exp-XXXXXX", err[512];
	struct psb_exp_conf c;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\n  \"name\": \"a\",\n  \"kind\" \"serve\"\n}\n", 36), 36);
	close(fd);
	assert_int_equal(psb_exp_load_file(&c, path, PSB_EXP_FILE_MAX, false, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, ":3:"));
	unlink(path);
	assert_int_equal(psb_exp_load_file(&c, "/nonexistent/x.json", PSB_EXP_FILE_MAX, false, err,
					   sizeof(err)),
			 -ENOENT);
}

static void
test_node_diff_and_settable(void **state)
{
	struct psb_exp_conf a, b;
	char err[512], buf[64];
	json_t *both = json_pack("{s:{},s:{}}", "node", "store"), *none = json_object();

	(void)state;
	assert_int_equal(load_text(&a, "{\"name\": \"a\", \"kind\": \"pushpull\", " NODE_W "}", true,
				   err, sizeof(err)), 0);
	b = a;
	assert_null(psb_exp_fixed_diff(&a, &b, both, buf, sizeof(buf)));
	snprintf(b.node.ports.v[0], sizeof(b.node.ports.v[0]), "ring");
	assert_string_equal(psb_exp_fixed_diff(&a, &b, both, buf, sizeof(buf)), "node.ports");
	/* a section the document leaves out is the running appliance's: not compared */
	assert_null(psb_exp_fixed_diff(&a, &b, none, buf, sizeof(buf)));
	b = a;
	b.node.sync = !a.node.sync;
	assert_string_equal(psb_exp_fixed_diff(&a, &b, both, buf, sizeof(buf)), "node.sync");
	b = a;
	b.store.max_keys = 7;
	assert_string_equal(psb_exp_fixed_diff(&a, &b, both, buf, sizeof(buf)), "store.max_keys");
	assert_true(psb_exp_fixed_path("store.max_keys"));
	assert_true(psb_exp_fixed_path("node.ip"));
	assert_false(psb_exp_fixed_path("pushpull.rate"));
	json_decref(both);
	json_decref(none);
	assert_true(psb_exp_settable("pushpull.rate"));
	assert_true(psb_exp_settable("output.log_every"));
	assert_false(psb_exp_settable("pushpull.len"));
	assert_false(psb_exp_settable("node.ip"));
	/* set by path is checked like a document */
	assert_int_equal(psb_conf_set(psb_exp_table, &a, "pushpull.rate", "2Gbps", err,
				      sizeof(err)), 0);
	assert_int_equal(a.pushpull.rate, 2000000000ull);
	assert_int_not_equal(psb_conf_set(psb_exp_table, &a, "pushpull.rate", "fast", err,
					  sizeof(err)), 0);
	assert_int_equal(strncmp(err, "pushpull.rate:", 14), 0);
	assert_int_equal(psb_conf_set(psb_exp_table, &a, "node.ports", "memif:server:/x.sock", err,
				      sizeof(err)), 0);
	assert_int_equal(a.node.ports.n, 1);
	assert_string_equal(a.node.ports.v[0], "memif:server:/x.sock");
}

static int
count_entries(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

static char *
slurp(const char *path)
{
	static char buf[8192];
	FILE *f = fopen(path, "r");
	size_t n;

	if (f == NULL)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* Results appear whole in DIR/name; a second run never replaces them unless asked to. */
/* The extra files of a results directory: both of them (arg non-NULL), or a failure. */
static int
series_extra(const char *dir, void *arg)
{
	char p[1200];

	if (arg == NULL)
		return -EIO;
	snprintf(p, sizeof(p), "%s/staleness.csv", dir);
	fclose(fopen(p, "w"));
	snprintf(p, sizeof(p), "%s/staleness.svg", dir);
	fclose(fopen(p, "w"));
	return 0;
}

static void
test_results_directory(void **state)
{
	char tmpl[] = "/tmp/psb-test-res-XXXXXX", where[1024], err[512], p[1200], *text;
	struct psb_exp_conf c;
	json_t *rows, *doc;

	(void)state;
	assert_non_null(mkdtemp(tmpl));
	assert_int_equal(load_text(&c, "{\"name\": \"trial-1\", \"kind\": \"serve\"}", false, err,
				   sizeof(err)), 0);
	snprintf(c.output.dir, sizeof(c.output.dir), "res/./deeper");
	rows = json_pack("[{s:s,s:f,s:s},{s:s,s:f,s:s}]", "worker", "0", "goodput_gbps", 12.5,
			 "note", "a,b", "worker", "all", "goodput_gbps", 25.0, "note", "say \"hi\"");
	doc = json_pack("{s:s}", "state", "done");
	assert_int_equal(psb_exp_results_claim(tmpl, &c, err, sizeof(err)), 0);
	assert_int_equal(psb_exp_results_write(tmpl, &c, doc, rows, cols, where, sizeof(where), err,
					       sizeof(err)), 0);
	snprintf(p, sizeof(p), "%s/res/./deeper/trial-1", tmpl);
	assert_string_equal(where, p);
	assert_int_equal(count_entries(p), 3);
	snprintf(p, sizeof(p), "%s/res/deeper/trial-1/result.csv", tmpl);
	text = slurp(p);
	assert_non_null(text);
	assert_string_equal(text, "worker,goodput_gbps,note\n0,12.5,\"a,b\"\nall,25,\"say \"\"hi\"\"\"\n");
	snprintf(p, sizeof(p), "%s/res/deeper/trial-1/result.txt", tmpl);
	text = slurp(p);
	assert_non_null(strstr(text, "worker  goodput_gbps"));
	snprintf(p, sizeof(p), "%s/res/deeper/trial-1/result.json", tmpl);
	assert_non_null(strstr(slurp(p), "\"done\""));

	/* the name is taken now: refused up front, and kept apart if it appears meanwhile */
	assert_int_equal(psb_exp_results_claim(tmpl, &c, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "already exist"));
	assert_int_equal(psb_exp_results_write(tmpl, &c, doc, rows, cols, where, sizeof(where), err,
					       sizeof(err)), 0);
	snprintf(p, sizeof(p), "%s/res/./deeper/trial-1.2", tmpl);
	assert_string_equal(where, p);
	/* overwrite replaces, and leaves no temporary directories behind */
	c.output.overwrite = true;
	assert_int_equal(psb_exp_results_claim(tmpl, &c, err, sizeof(err)), 0);
	json_object_set_new(doc, "state", json_string("again"));
	assert_int_equal(psb_exp_results_write(tmpl, &c, doc, rows, cols, where, sizeof(where), err,
					       sizeof(err)), 0);
	snprintf(p, sizeof(p), "%s/res/deeper/trial-1/result.json", tmpl);
	assert_non_null(strstr(slurp(p), "\"again\""));
	snprintf(p, sizeof(p), "%s/res/deeper", tmpl);
	assert_int_equal(count_entries(p), 2);

	/* more files with the results (a trainer's series): moved in with them, psb's own */
	assert_int_equal(psb_exp_results_write_with(tmpl, &c, doc, rows, cols, series_extra,
						    (void *)"1", where, sizeof(where), err,
						    sizeof(err)), 0);
	snprintf(p, sizeof(p), "%s/res/deeper/trial-1", tmpl);
	assert_int_equal(count_entries(p), 5);
	assert_int_equal(psb_exp_results_claim(tmpl, &c, err, sizeof(err)), 0);
	/* ... and when they cannot be written, nothing is moved: the last results stay */
	json_object_set_new(doc, "state", json_string("not this"));
	assert_int_equal(psb_exp_results_write_with(tmpl, &c, doc, rows, cols, series_extra,
						    NULL, where, sizeof(where), err,
						    sizeof(err)), -EIO);
	snprintf(p, sizeof(p), "%s/res/deeper/trial-1/result.json", tmpl);
	assert_non_null(strstr(slurp(p), "\"again\""));
	snprintf(p, sizeof(p), "%s/res/deeper", tmpl);
	assert_int_equal(count_entries(p), 2);

	/* overwrite replaces psb's own results only: a file it did not write stops it */
	snprintf(p, sizeof(p), "%s/res/deeper/trial-1/notes.txt", tmpl);
	fclose(fopen(p, "w"));
	assert_int_equal(psb_exp_results_claim(tmpl, &c, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "\"notes.txt\", which psb did not write"));
	assert_int_equal(psb_exp_results_write(tmpl, &c, doc, rows, cols, where, sizeof(where),
					       err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "this run's results are in"));
	assert_non_null(slurp(p));
	snprintf(p, sizeof(p), "%s/res/deeper/trial-1/result.json", tmpl);
	assert_non_null(strstr(slurp(p), "\"again\""));

	/* a symbolic link inside the results directory does not lead results out of it */
	snprintf(p, sizeof(p), "%s/res/out", tmpl);
	assert_int_equal(symlink("/tmp", p), 0);
	snprintf(c.output.dir, sizeof(c.output.dir), "res/out");
	assert_int_equal(psb_exp_results_write(tmpl, &c, doc, rows, cols, where, sizeof(where),
					       err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "outside the results directory"));
	json_decref(rows);
	json_decref(doc);
	snprintf(p, sizeof(p), "rm -rf '%s'", tmpl);
	assert_int_equal(system(p), 0);
}

/*
 * Only regular files of at most max bytes are read, and never by waiting: a FIFO with no
 * writer, /dev/zero, a directory, a file over the limit are refused at once, by name.
 */
static void
test_read_file_limits(void **state)
{
	char dir[] = "/tmp/psb-test-file-XXXXXX", p[256], link[256], err[512], *buf;
	struct psb_exp_conf c;
	size_t len;
	int rc, fd;
	json_t *j;

	(void)state;
	assert_non_null(mkdtemp(dir));
	/* a FIFO nobody writes: open(2) without O_NONBLOCK would wait forever */
	snprintf(p, sizeof(p), "%s/fifo", dir);
	assert_int_equal(mkfifo(p, 0600), 0);
	assert_int_equal(psb_exp_read_file(p, 1024, &buf, &len, err, sizeof(err)), -EPERM);
	assert_int_equal(strncmp(err, p, strlen(p)), 0);
	assert_non_null(strstr(err, "is a FIFO, not a regular file"));
	assert_int_equal(psb_exp_load_file(&c, p, PSB_EXP_FILE_MAX, false, err, sizeof(err)),
			 -EPERM);
	assert_non_null(strstr(err, "is a FIFO"));
	/* a character device that never ends */
	assert_int_equal(psb_exp_read_file("/dev/zero", 1024, &buf, &len, err, sizeof(err)),
			 -EPERM);
	assert_string_equal(err, "/dev/zero: is a character device, not a regular file (psb reads "
			    "documents and command files from regular files only)");
	assert_int_equal(psb_exp_open_file(dir, 1024, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "is a directory"));
	assert_int_equal(psb_exp_open_file("/nonexistent/x", 1024, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "/nonexistent/x: No such file or directory");
	/* exactly max bytes is fine, one more is not */
	snprintf(p, sizeof(p), "%s/doc.json", dir);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\"name\": \"a\", \"kind\": \"serve\"}\n", 31), 31);
	close(fd);
	assert_int_equal(psb_exp_read_file(p, 31, &buf, &len, err, sizeof(err)), 0);
	assert_int_equal(len, 31);
	assert_int_equal(buf[31], '\0');
	free(buf);
	assert_int_equal(psb_exp_read_file(p, 30, &buf, &len, err, sizeof(err)), -EFBIG);
	assert_non_null(strstr(err, ": 31 bytes, over the limit of 30B for files psb reads "
				"(node.file_max, --file-max)"));
	j = psb_exp_read_json(p, 30, &rc, err, sizeof(err));
	assert_null(j);
	assert_int_equal(rc, -EFBIG);
	j = psb_exp_read_json(p, 1024, &rc, err, sizeof(err));
	assert_non_null(j);
	json_decref(j);
	/* a link to a regular file is that file */
	snprintf(link, sizeof(link), "%s/link.json", dir);
	assert_int_equal(symlink(p, link), 0);
	assert_int_equal(psb_exp_load_file(&c, link, 1024, false, err, sizeof(err)), 0);
	assert_string_equal(c.name, "a");
	/* a regular file whose size stat does not tell: read up to the limit, then refused */
	assert_int_equal(psb_exp_read_file("/proc/self/maps", 64, &buf, &len, err, sizeof(err)),
			 -EFBIG);
	assert_non_null(strstr(err, "/proc/self/maps: more than 64 bytes, over the limit of 64B"));
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	assert_int_equal(system(p), 0);
}

/* dir/name/file with text, its time set back `age` seconds from now. */
static void
put_file(const char *dir, const char *name, const char *file, time_t now, time_t age)
{
	char path[512];
	struct timespec ts[2];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", dir, name, file);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{}\n", f);
	fclose(f);
	ts[0].tv_sec = ts[1].tv_sec = now - age;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static int
there(const char *dir, const char *name)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return lstat(path, &st) == 0;
}

struct prune_seen {
	char names[16][32];
	bool removed[16];
	bool foreign[16];
	unsigned int n;
};

static void
prune_cb(void *arg, const struct psb_exp_pruned *p)
{
	struct prune_seen *s = arg;

	assert_true(s->n < 16);
	snprintf(s->names[s->n], sizeof(s->names[0]), "%s", p->name);
	/* kept for a file psb did not write, or for a reason of its own: one or the other */
	assert_true(p->removed || (p->foreign != NULL) != (p->why != NULL));
	s->foreign[s->n] = p->foreign != NULL;
	s->removed[s->n++] = p->removed;
}

/*
 * psb_exp_prune: psb's results past the newest N or older than an age go; directories with
 * other files, results being written (dot names), symbolic links and files stay.
 */
static void
test_prune(void **state)
{
	char dir[] = "/tmp/psb-prune-XXXXXX", path[512];
	time_t now = time(NULL);
	struct prune_seen seen;

	(void)state;
	assert_non_null(mkdtemp(dir));
	put_file(dir, "new", "result.json", now, 10);
	put_file(dir, "mid", "result.json", now, 3600);
	put_file(dir, "mid", "result.csv", now, 3600);
	put_file(dir, "old", "result.json", now, 86400);
	put_file(dir, "mine", "result.json", now, 90000);
	put_file(dir, "mine", "notes.txt", now, 90000);	/* not psb's: never removed */
	put_file(dir, ".tmp.run", "result.json", now, 90000);	/* being written */
	snprintf(path, sizeof(path), "%s/link", dir);
	assert_int_equal(symlink("old", path), 0);

	assert_int_equal(psb_exp_prune(dir, -1, 0, now, false, NULL, NULL), -EINVAL);
	snprintf(path, sizeof(path), "%s/none", dir);
	assert_int_equal(psb_exp_prune(path, 1, 0, now, false, NULL, NULL), -ENOENT);

	/* a dry run removes nothing, and says so newest first */
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(psb_exp_prune(dir, 1, 0, now, true, prune_cb, &seen), 2);
	assert_int_equal(seen.n, 4);
	assert_string_equal(seen.names[0], "new");
	assert_false(seen.removed[0]);
	assert_string_equal(seen.names[1], "mid");
	assert_true(seen.removed[1]);
	assert_string_equal(seen.names[2], "old");
	assert_true(seen.removed[2]);
	assert_string_equal(seen.names[3], "mine");
	assert_false(seen.removed[3]);
	assert_true(seen.foreign[3]);
	assert_false(seen.foreign[0] || seen.foreign[1] || seen.foreign[2]);
	assert_true(there(dir, "mid") && there(dir, "old"));

	/* older than 2 h: old alone (mine is not psb's alone) */
	assert_int_equal(psb_exp_prune(dir, -1, 7200, now, false, NULL, NULL), 1);
	assert_false(there(dir, "old"));
	assert_true(there(dir, "mid") && there(dir, "new") && there(dir, "mine"));
	/* the newest one kept: mid goes */
	assert_int_equal(psb_exp_prune(dir, 1, 0, now, false, NULL, NULL), 1);
	assert_false(there(dir, "mid"));
	assert_true(there(dir, "new") && there(dir, "mine") && there(dir, ".tmp.run") &&
		    there(dir, "link"));
	/* both bounds: new is younger than a minute, so it stays */
	assert_int_equal(psb_exp_prune(dir, 0, 60, now, false, NULL, NULL), 0);
	assert_true(there(dir, "new"));

	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

/* Kind staleness: the benchmark's flags as a section, their units, what each mode needs. */
static void
test_staleness_kind(void **state)
{
	struct psb_exp_conf *c = calloc(1, sizeof(*c));
	char err[512];

	(void)state;
	assert_int_equal(load_text(c, "{\"name\": \"s\", \"kind\": \"staleness\", \"node\": "
		"{\"ip\": \"198.19.0.10\"}, \"staleness\": {\"push_frequency\": 0.05, "
		"\"data_size\": 2.5, \"workers\": 8, \"workers_per_node\": 2, \"mode\": "
		"\"epgm\", \"rate\": \"1Gbps\"}}", false, err, sizeof(err)), 0);
	assert_int_equal(c->kind, PSB_EXP_STALENESS);
	assert_int_equal(c->staleness.push_frequency, 50000000);
	assert_true(c->staleness.data_size == 2.5);
	assert_int_equal(c->staleness.mode, PSB_EXP_STALE_EPGM);
	assert_int_equal(c->staleness.rate, 1000000000);
	assert_int_equal(c->staleness.post_frequency, 2000000000);	/* the default */
	assert_int_equal(c->staleness.group, 0xef120001);
	/* pull and filesystem modes need no group */
	assert_int_equal(load_text(c, "{\"name\": \"s\", \"kind\": \"staleness\", "
		"\"staleness\": {\"mode\": \"pull\", \"group\": \"10.0.0.1\"}}", false, err,
		sizeof(err)), 0);
	/* the appliance as the trainer: its own address, or none, as staleness.trainer */
	assert_int_equal(load_text(c, STALE_T("", ""), true, err, sizeof(err)), 0);
	assert_int_equal(c->node.role, PSB_EXP_ROLE_TRAINER);
	assert_int_equal(load_text(c, STALE_T("", ", \"trainer\": \"198.18.0.1\", \"mode\": "
		"\"pull\", \"budget\": \"20MB\""), true, err, sizeof(err)), 0);
	free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shipped_configs),
		cmocka_unit_test(test_staleness_kind),
		cmocka_unit_test(test_broken_documents),
		cmocka_unit_test(test_syntax_error_names_line),
		cmocka_unit_test(test_node_diff_and_settable),
		cmocka_unit_test(test_results_directory),
		cmocka_unit_test(test_read_file_limits),
		cmocka_unit_test(test_prune),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
