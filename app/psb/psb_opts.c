/* The command line and ps-lite's environment, into the experiment document (psb_opts.h). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "psb_app.h"
#include "psb_bench.h"
#include "psb_cli.h"
#include "psb_conf.h"
#include "psb_exp.h"
#include "psb_log.h"
#include "psb_opts.h"

/* --output-dir: where documents' results go, from the root so that it never moves. */
static void
set_results_root(struct psb_app *app, const char *dir)
{
	char cwd[PATH_MAX];

	if (dir[0] == '\0')
		psb_die("--output-dir: expected a directory, got ''");
	if (dir[0] == '/')
		snprintf(cwd, sizeof(cwd), "%s", "");
	else if (getcwd(cwd, sizeof(cwd)) == NULL)
		psb_die("--output-dir: cannot read the working directory: %s", strerror(errno));
	if ((size_t)snprintf(app->results_root, sizeof(app->results_root), "%s%s%s", cwd,
			cwd[0] != '\0' ? "/" : "", dir) >= sizeof(app->results_root))
		psb_die("--output-dir: path too long");
}

/* The value of --config / --check-config, read before the other options. */
static const char *
find_opt(int argc, char **argv, const char *name)
{
	size_t len = strlen(name);
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], name) == 0)
			return i + 1 < argc ? argv[i + 1] : "";
		if (strncmp(argv[i], name, len) == 0 && argv[i][len] == '=')
			return argv[i] + len + 1;
	}
	return NULL;
}

/* --version, wherever it stands before "--": the version line, exit 0. */
static void
version_opt(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--version") == 0)
			psb_cli_version_exit();
}

/* --file-max, read before the document it bounds: what node.file_max is until then. */
static uint64_t
file_max_opt(int argc, char **argv)
{
	const char *v = find_opt(argc, argv, "--file-max");
	uint64_t b;

	if (v == NULL)
		return PSB_EXP_FILE_MAX;
	if (psb_conf_parse_size(v, &b) != 0 || b < 1024 || b > (1ull << 30))
		psb_die("--file-max: expected a size like 1MiB in [1KiB, 1GiB], got '%s'", v);
	return b;
}

/* --check-config FILE: the document with its defaults, or what is wrong with it. */
static int
check_config_file(const char *path, uint64_t file_max)
{
	struct psb_exp_conf *c = calloc(1, sizeof(*c));
	struct psb_port_spec spec;
	char err[1024];
	json_t *j;
	uint32_t i;

	if (c == NULL)
		psb_die("out of memory");
	if (psb_exp_load_file(c, path, file_max, true, err, sizeof(err)) != 0)
		psb_die("%s%s%s", strncmp(err, path, strlen(path)) == 0 ? "" : path,
			strncmp(err, path, strlen(path)) == 0 ? "" : ": ", err);
	for (i = 0; i < c->node.ports.n; i++)
		if (psb_port_parse(c->node.ports.v[i], (int)i, &spec, err, sizeof(err)) != 0)
			psb_die("%s: node.ports[%u]: %s", path, i, err);
	j = psb_exp_dump(c);
	if (j != NULL) {
		json_dumpf(j, stdout, JSON_INDENT(2));
		printf("\n");
	}
	json_decref(j);
	fprintf(stderr, "psb: %s: ok (%s experiment \"%s\")\n", path,
		psb_exp_kind_names[c->kind], c->name);
	free(c);
	return 0;
}

/*
 * Options and variables that set the experiment document: each names its dotted path; the
 * value is the argument (with unit appended: --timeout-us 500 is "500us"), or fixed for a
 * flag without one. A few are more than a path (set in conf_opt): --port adds to a list,
 * --scheduler takes IP[:PORT], --duration is the window of the node's kind, --mode takes
 * test_benchmark's numbers.
 */
struct conf_opt {
	const char *name;	/* long option, NULL: a variable only */
	int has_arg;
	const char *path;
	const char *fixed;	/* the value of a flag without argument */
	const char *unit;	/* appended to the argument */
	const char *env;	/* ps-lite's variable for the same path */
	const char *arg;	/* --help: what the argument is */
	const char *help;	/* --help: what it does; the default is the schema's */
};

#define N(nm, path, arg, help)		{ nm, 1, path, NULL, NULL, NULL, arg, help }
#define NE(nm, path, env, arg, help)	{ nm, 1, path, NULL, NULL, env, arg, help }
#define NU(nm, path, unit, arg, help)	{ nm, 1, path, NULL, unit, NULL, arg, help }
#define F(nm, path, val, help)		{ nm, 0, path, val, NULL, NULL, NULL, help }

static const struct conf_opt conf_opts[] = {
	NE("role", "node.role", "DMLC_ROLE", "server|worker|scheduler|trainer",
	   "what this process is (trainer: of a staleness document)"),
	NE("port", "node.ports", "DMLC_INTERFACE", "SPEC", "a port; repeat for more. SPEC is one "
	   "of\nmemif:server|client:/abs/path.sock[:id] (client: zero-copy),\n"
	   "af_packet:IFNAME, af_xdp:IFNAME[:QUEUE], tap:IFNAME,\n"
	   "virtio_user:IFNAME (vhost-net),\n"
	   "pcap:IN.pcap:OUT.pcap[:loop], ring, null,\n"
	   "null:sink (takes what is sent, receives nothing), pci:DDDD:BB:DD.F\n"
	   "(DMLC_INTERFACE=IF is af_packet:IF)"),
	NE("ip", "node.ip", "DMLC_NODE_HOST", "A.B.C.D", "this node's address"),
	N("mac", "node.mac", "XX:XX:..", "this node's MAC (\"\": the first port's)"),
	N("udp-port", "node.udp_port", "N", "data port"),
	NE("scheduler", "node.scheduler", "DMLC_PS_ROOT_URI", "IP[:PORT]", "the scheduler; a server "
	   "whose --ip it is hosts it"),
	{ NULL, 1, "node.scheduler_port", NULL, NULL, "DMLC_PS_ROOT_PORT", NULL, NULL },
	N("server", "node.server", "IP", "worker without scheduler: the one server"),
	NE("num-workers", "node.num_workers", "DMLC_NUM_WORKER", "N", "workers in the job"),
	NE("num-servers", "node.num_servers", "DMLC_NUM_SERVER", "N", "servers in the job"),
	N("rank", "node.rank", "N", "rank of this worker when there is no scheduler"),
	F("sync", "node.sync", "true", "synchronous rounds"),
	F("async", "node.sync", "false", "asynchronous updates"),
	N("shards", "node.shards", "N", "server shards, one role each"),
	N("workers", "node.workers", "N", "worker roles in this process"),
	N("mtu", "node.mtu", "N", "wanted MTU, lowered to what the port allows (0: an af_packet\n"
	  "or tap interface's own, left unchanged; 9000 on other ports)"),
	N("max-value", "node.max_value", "BYTES", "largest value a server accepts"),
	N("connect-timeout", "node.connect_timeout", "S", "each wait of the setup at most: a memif "
	  "server,\nARP of the scheduler and servers, REGISTER, BARRIER (0: forever)"),
	F("keep-serving", "node.keep_serving", "true", "scheduler, servers: stay when every worker "
	  "of the\njob finished (by default they end then, as ps-lite's Finalize\nends a job)"),
	F("echo", "node.echo", "true", "answer psb ECHO requests at the data port (1 KiB, 1000 a\n"
	  "second at most; docs/PROTOCOL.md, Echo)"),
	N("exception", "node.exception", "SPEC", "passthrough: the port toward the host's kernel "
	  "(tap:IFNAME):\nevery frame that is not psb's goes there bit for bit, what the\n"
	  "kernel sends goes out of the first port; RoCE is counted per QP"),
	N("roce-qps", "node.roce_qps", "N", "RoCE queue pairs counted at once (one not seen "
	  "lately\nmakes room for a new one, counted as evicted)"),
	F("no-roce-accounting", "node.roce_accounting", "false", "pass RoCE through uncounted"),
	N("shm-clients", "node.shm_clients", "N", "server: memif slots for client processes on "
	  "this host\n(shared memory instead of UDP; 0: none), on the socket\n"
	  "/var/run/psb/shm/IP-PORT.sock (PSB_SHM_DIR)"),
	N("exception-queue", "node.exception_queue", "N", "frames queued for the host at most (a "
	  "power of 2; past it\nthey are lost, counted as rx's ring_full)"),
	F("isolate", "node.isolate", "true", "rte_flow isolated mode on the first port: only "
	  "psb's ports\nand groups to psb, the rest to the kernel (needs --exception,\nused "
	  "where the port refuses)"),
	{ "heartbeat", 1, "node.heartbeat", NULL, NULL, "PS_HEARTBEAT_INTERVAL", "S",
	  "tell the scheduler this node is alive this often (0: never)" },
	{ "dead-after", 1, "node.dead_after", NULL, NULL, "PS_HEARTBEAT_TIMEOUT", "S",
	  "scheduler: a node silent this long is dead, and the workers are\ntold which server "
	  "died (0: never)" },
	N("lcores", "node.lcores", "LIST", "lcores, as -l (\"\": a CPU no other psb on this host "
	  "polls);\nroles are spread one per lcore when there are enough, else they\nshare (all "
	  "on one lcore: run to completion)"),
	N("mem", "node.mem_mb", "MB", "memory of the process: DPDK's pools, then the store (0:\n"
	  "pools as needed; a server's store gets half the machine's memory)"),
	N("mbufs", "node.mbufs", "N", "mbufs in the pool (0: from rings and ports)"),
	F("huge", "node.huge", "yes", "require hugepages (default: use them if free)"),
	F("no-huge", "node.huge", "no", "never use hugepages"),
	N("idle", "node.idle", "poll|sleep|auto", "while idle, poll on (dedicated cores) or back "
	  "off to sleeps\nwoken by traffic (auto: sleep where the CPUs are shared)"),
	N("idle-sleep", "node.idle_sleep", "S", "an idle lcore sleeps this long at most (0: 1ms)"),
	NU("yield", "node.yield", "us", "US", "a polling lcore lets waiting threads of its CPU run "
	   "every US\nmicroseconds (0: never, for isolated cores)"),
	N("file-prefix", "node.file_prefix", "NAME", "DPDK runtime prefix (\"\": psb-PID): a name "
	  "of letters,\ndigits, '_', '-', '.'; at exit psb removes from /var/run/dpdk/NAME\nthe "
	  "files the EAL and psb made there, and the directory if psb made it"),
	N("file-max", "node.file_max", "BYTES", "largest document or command file psb reads; "
	  "other files\nare refused unless regular"),
	N("store-max-bytes", "store.max_bytes", "SIZE", "memory of the store; pushes to new keys "
	  "beyond it get\nERROR no_memory (0: derived from --mem or half the machine's memory)"),
	N("store-max-keys", "store.max_keys", "N", "keys at most (0: derived)"),
	N("reasm-bytes", "store.reasm_bytes", "SIZE", "pushes being reassembled, all senders; "
	  "beyond it ERROR\nbusy (0: derived)"),
	N("reasm-sender-bytes", "store.reasm_sender_bytes", "SIZE", "the same per sender (0: "
	  "derived)"),
	N("reasm-timeout", "store.reasm_timeout", "S", "discard a push whose next segment does not "
	  "come within S"),
	N("resend-burst", "store.resend_burst", "SIZE", "what a sender can have sent again at once "
	  "(answers to its\nrepeats and REPAIRs, REPAIR_RESPs); beyond it and --resend-rate\n"
	  "nothing is (0: two answers of --max-value)"),
	N("resend-rate", "store.resend_rate", "RATE", "what a sender can have sent again, "
	  "e.g. 2Gbps (0: 1Gbps)"),
	N("len", "pushpull.len", "BYTES", "value size per key"),
	N("repeat", "pushpull.repeat", "N", "iterations"),
	N("mode", "pushpull.mode", "M", "0 PUSH_THEN_PULL, 1 PUSH_PULL, 2 PUSH_ONLY, 3 PULL_ONLY"),
	N("keys", "pushpull.keys", "N", "keys per server"),
	N("window-bytes", "pushpull.window", "N", "value bytes in flight"),
	N("batch", "pushpull.batch", "BYTES", "send values up to BYTES as records of BATCH messages\n"
	  "(0: one message per request)"),
	N("duration", "pushpull.duration", "S", "stop the benchmark after this long; servers: exit "
	  "after it\n(serve.duration)"),
	NU("timeout-us", "pushpull.timeout", "us", "N", "resend a request unanswered this long"),
	N("max-retries", "pushpull.max_retries", "N", "then fail it (0: forever); a timeout while "
	  "the port takes\nnothing counts as a try"),
	F("verify", "pushpull.verify", "true", "check every value read back, and every key after "
	  "the run\n(sync: exact sums; async: every worker's pushes counted apart;\nevery worker "
	  "of the job must verify)"),
	N("warmup", "pushpull.warmup", "N", "iterations before the metrics are reset"),
	N("rate", "pushpull.rate", "RATE", "value bits/s each worker role sends at most, e.g. "
	  "2Gbps\n(with --workers N, up to N times it in all; 0: unlimited)"),
	N("log-every", "output.log_every", "S", "progress line period (0: none)"),
};

#undef N
#undef NE
#undef NU
#undef F

#define NCONF_OPTS	(sizeof(conf_opts) / sizeof(conf_opts[0]))

/*
 * What a command line starts from: the schema's defaults, and a server (a document's node
 * is a worker unless it says otherwise; a command line's, a server).
 */
static const char cli_doc[] = "{\"name\": \"cli\", \"kind\": \"serve\", "
	"\"node\": {\"role\": \"server\"}}";

/* One option: its argument, what it does, the path it sets and its default there (defs). */
static void
usage_opt(FILE *out, const struct conf_opt *o, const json_t *defs)
{
	const json_t *d = defs;
	const char *h = o->help, *nl, *p = o->path, *dot;
	char lead[64], *text;
	int n;

	for (; d != NULL; p = dot + 1) {
		dot = strchr(p, '.');
		d = json_object_getn(d, p, dot != NULL ? (size_t)(dot - p) : strlen(p));
		if (dot == NULL)
			break;
	}

	n = snprintf(lead, sizeof(lead), "  --%s%s%s", o->name, o->arg != NULL ? " " : "",
		     o->arg != NULL ? o->arg : "");
	fprintf(out, "%s%*s", lead, n < 23 ? 23 - n : 1, "");
	while ((nl = strchr(h, '\n')) != NULL) {
		fprintf(out, "%.*s\n%23s", (int)(nl - h), h, "");
		h = nl + 1;
	}
	fprintf(out, "%s\n%23s[%s", h, "", o->path);
	text = d != NULL ? json_dumps(d, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
	if (o->fixed != NULL)
		fprintf(out, " %s", o->fixed);
	else if (text != NULL)
		fprintf(out, ", default %s", text);
	free(text);
	if (o->env != NULL)
		fprintf(out, "; env %s", o->env);
	fprintf(out, "]\n");
}

static void
usage(FILE *out)
{
	static const struct {
		const char *prefix, *title;
	} sections[] = {
		{ "node.", "Node (the document's node section):" },
		{ "store.", "Store budgets (servers; 0: derived from --mem or half the machine's "
		  "memory):" },
		{ "pushpull.", "Benchmark (workers; ps-lite's test_benchmark arguments [len [repeat "
		  "[mode]]]):" },
		{ "output.", "Output:" },
	};
	struct psb_exp_conf *c = calloc(1, sizeof(*c));
	json_t *defs = NULL;
	unsigned int s, i;

	if (c != NULL && psb_conf_parse_string(psb_exp_table, c, cli_doc, "", NULL, 0) == 0)
		defs = psb_conf_dump(psb_exp_table, c);
	free(c);
	fprintf(out, "usage: psb [options] [len [repeat [mode]]] [-- EAL options]\n\n"
		"Each option below sets a path of the experiment document, as a --config\n"
		"document would; a command line starts from the schema's defaults, with a\n"
		"server's node (shown in [ ]).\n");
	for (s = 0; s < sizeof(sections) / sizeof(sections[0]); s++) {
		fprintf(out, "%s\n", sections[s].title);
		for (i = 0; i < NCONF_OPTS; i++)
			if (conf_opts[i].name != NULL && strncmp(conf_opts[i].path, sections[s].prefix,
					strlen(sections[s].prefix)) == 0)
				usage_opt(out, &conf_opts[i], defs);
	}
	fputs(
"  --results FILE       write the worker's result as JSON (FILE.<rank> with several\n"
"                       workers)\n"
"Experiments and control:\n"
"  --config FILE        run the experiment document FILE (config/*.json): node settings\n"
"                       and experiment from it, results into output.dir/<name>/; other\n"
"                       options override the document\n"
"  --output-dir DIR     results directory: documents' output paths are relative to it\n"
"                       and stay inside it (default: the working directory)\n"
"  --check-config FILE  check an experiment document and print it with its defaults\n"
"  -i, --interactive    console on stdin (prompt psb> ); experiments start from it\n"
"  --cmdline-file FILE  run the console commands of FILE first\n"
"  --wait               start nothing; wait for commands (control socket) until quit\n"
"  --ctl PATH           control socket (default <DPDK runtime dir>/psb.ctl; none: off)\n"
"  --counters-file FILE append every counter as a JSON line to FILE periodically\n"
"  --counters-every S   its period (default 1)\n"
"  --counters-max SIZE  move FILE to FILE.1 before it passes SIZE (default 64MiB; 0:\n"
"                       never); FILE renamed or removed: a new one is started\n"
"  --prometheus [IP:]PORT  serve the counters to Prometheus on http://IP:PORT/metrics\n"
"                       (IP default 127.0.0.1)\n"
"Process:\n"
"  --idle-exit MS       exit once no packet arrived for MS ms (pcap replay)\n"
"  --stats-file FILE    write counters as JSON at exit\n"
"  -v, --verbose        more output (env PS_VERBOSE=1/2)\n"
"  -q, --quiet          only results and errors\n"
"  --log-level [TYPE:]LEVEL  a log type's level; repeat, the last that matches wins.\n"
"                       TYPE: psb.main .host .port .rx .worker .scheduler .agent .ctl\n"
"                       .console .export .run .echo, a glob (psb.*) or DPDK's\n"
"                       (pmd.net.memif); none: psb.*. LEVEL: error warning notice info\n"
"                       debug (or 1-8). Default info; -q is psb.*:warning, -v debug but\n"
"                       psb.rx (dropped frames, a line a second), -vv all; --log-level\n"
"                       overrides both\n"
"  --log-time           begin each log line with the time of day (HH:MM:SS.mmm)\n"
"  --version            psb's version and the git revision it was built from\n"
"  -h, --help\n", out);
	json_decref(defs);
}


/* The process's own options: index into app_opts + OPT_APP. */
enum {
	OPT_RESULTS = 1000, OPT_STATS_FILE, OPT_CONFIG, OPT_CHECK_CONFIG, OPT_INTERACTIVE,
	OPT_CMDLINE_FILE, OPT_WAIT, OPT_CTL, OPT_COUNTERS_FILE, OPT_COUNTERS_EVERY,
	OPT_COUNTERS_MAX, OPT_PROMETHEUS, OPT_OUTPUT_DIR, OPT_IDLE_EXIT, OPT_VERBOSE, OPT_QUIET,
	OPT_HELP, OPT_LOG_LEVEL, OPT_LOG_TIME,
};

static const struct option app_opts[] = {
	{ "results", required_argument, NULL, OPT_RESULTS },
	{ "stats-file", required_argument, NULL, OPT_STATS_FILE },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "check-config", required_argument, NULL, OPT_CHECK_CONFIG },
	{ "interactive", no_argument, NULL, OPT_INTERACTIVE },
	{ "cmdline-file", required_argument, NULL, OPT_CMDLINE_FILE },
	{ "wait", no_argument, NULL, OPT_WAIT },
	{ "ctl", required_argument, NULL, OPT_CTL },
	{ "counters-file", required_argument, NULL, OPT_COUNTERS_FILE },
	{ "counters-every", required_argument, NULL, OPT_COUNTERS_EVERY },
	{ "counters-max", required_argument, NULL, OPT_COUNTERS_MAX },
	{ "prometheus", required_argument, NULL, OPT_PROMETHEUS },
	{ "output-dir", required_argument, NULL, OPT_OUTPUT_DIR },
	{ "idle-exit", required_argument, NULL, OPT_IDLE_EXIT },
	{ "verbose", no_argument, NULL, OPT_VERBOSE },
	{ "quiet", no_argument, NULL, OPT_QUIET },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "log-time", no_argument, NULL, OPT_LOG_TIME },
	PSB_CLI_VERSION_OPTION,
};

#define NAPP_OPTS	(sizeof(app_opts) / sizeof(app_opts[0]))

/* " (--ip, DMLC_NODE_HOST)": where on the command line a document path is set, or "". */
static const char *
opt_hint(const char *msg, char *buf, size_t len)
{
	size_t n = 0, plen = strcspn(msg, ":[ ");
	unsigned int i;

	buf[0] = '\0';
	for (i = 0; i < NCONF_OPTS && n < len; i++) {
		const struct conf_opt *o = &conf_opts[i];

		if (strlen(o->path) != plen || strncmp(o->path, msg, plen) != 0)
			continue;
		if (o->name != NULL)
			n += (size_t)snprintf(buf + n, len - n, "%s--%s", n == 0 ? " (" : ", ",
					      o->name);
		if (o->env != NULL && n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n == 0 ? " (" : ", ", o->env);
	}
	if (n != 0 && n < len)
		snprintf(buf + n, len - n, ")");
	return buf;
}

/* A path of the document refused a value: exit naming both. */
static void __attribute__((noreturn))
conf_die(const char *who, const char *err)
{
	char hint[160];

	if (who != NULL)
		psb_die("%s: %s", who, err);
	psb_die("%s%s", err, opt_hint(err, hint, sizeof(hint)));
}

/* The specs --port gave so far: the first one replaces the document's or DMLC_INTERFACE's. */
struct port_list {
	json_t *specs;
};

static void
set_path(struct psb_exp_conf *c, const char *who, const char *path, const char *value)
{
	char err[512];

	if (psb_conf_set(psb_exp_table, c, path, value, err, sizeof(err)) != 0)
		conf_die(who, err);
}

/* One option or variable o, named who ("--len", "DMLC_ROLE"), with argument v. */
static void
conf_opt(struct psb_exp_conf *c, struct port_list *pl, const struct conf_opt *o,
		const char *who, const char *v, const char **duration)
{
	char buf[PSB_CONF_STRLIST_LEN + 16], err[256], *text;
	struct psb_port_spec spec;
	const char *colon;
	int mode;

	if (o->fixed != NULL)
		v = o->fixed;
	if (strlen(v) + 16 >= sizeof(buf))	/* never cut: a cut value could pass */
		psb_die("%s: %zu bytes, longer than any setting of %s takes", who, strlen(v),
			o->path);
	if (strcmp(o->path, "node.ports") == 0) {
		snprintf(buf, sizeof(buf), "%s%s", o->name == NULL || strcmp(who, o->env) == 0 ?
			 "af_packet:" : "", v);
		/* refused here, by the option, rather than later by the document's path */
		if (psb_port_parse(buf, (int)json_array_size(pl->specs), &spec, err,
				sizeof(err)) != 0)
			psb_die("%s: %s", who, err);
		json_array_append_new(pl->specs, json_string(buf));
		text = json_dumps(pl->specs, JSON_COMPACT);
		if (text == NULL)
			psb_die("out of memory");
		set_path(c, who, o->path, text);
		free(text);
		return;
	}
	if (strcmp(o->path, "node.scheduler") == 0 && o->name != NULL && strcmp(who, o->env) != 0 &&
	    (colon = strchr(v, ':')) != NULL) {
		snprintf(buf, sizeof(buf), "%.*s", (int)(colon - v), v);
		set_path(c, who, "node.scheduler", buf);
		set_path(c, who, "node.scheduler_port", colon + 1);
		return;
	}
	if (strcmp(o->path, "pushpull.duration") == 0) {
		*duration = v;		/* the window of the node's kind, once the role is known */
		return;
	}
	if (strcmp(o->path, "pushpull.mode") == 0 && (mode = psb_bench_mode_parse(v)) >= 0)
		v = psb_bench_mode_name(mode);		/* test_benchmark's 0-3 */
	snprintf(buf, sizeof(buf), "%s%s", v, o->unit != NULL ? o->unit : "");
	set_path(c, who, o->path, buf);
}

/* ps-lite's variables, before the command line, which overrides them. */
static void
apply_env(struct psb_app *app, struct port_list *pl)
{
	const char *v, *duration = NULL;
	unsigned int i;

	for (i = 0; i < NCONF_OPTS; i++)
		if (conf_opts[i].env != NULL && (v = getenv(conf_opts[i].env)) != NULL && *v != '\0')
			conf_opt(&app->conf, pl, &conf_opts[i], conf_opts[i].env, v, &duration);
	if ((v = getenv("PS_VERBOSE")) != NULL && *v != '\0')
		app->verbose = (int)psb_cli_u64("PS_VERBOSE", v, 0, 2);
}

/* The process's own option c (an OPT_ value) with argument v. */
static void
app_opt(struct psb_app *app, int c, const char *v)
{
	switch (c) {
	case OPT_RESULTS: app->results_file = v; break;
	case OPT_STATS_FILE: app->stats_file = v; break;
	case OPT_CONFIG: break;		/* read before the other options */
	case OPT_CHECK_CONFIG: break;
	case OPT_INTERACTIVE: app->interactive = 1; break;
	case OPT_CMDLINE_FILE: app->cmdline_file = v; break;
	case OPT_WAIT: app->stay = 1; break;
	case OPT_CTL: app->ctl_path = v; break;
	case OPT_COUNTERS_FILE: app->counters_file = v; break;
	case OPT_COUNTERS_EVERY:
		if (psb_conf_parse_duration(v, &app->counters_every_ns) != 0 ||
		    app->counters_every_ns < 10000000)
			psb_die("--counters-every: expected a period of at least 0.01 s (\"0.5\", "
				"\"500ms\"), got '%s'", v);
		break;
	case OPT_COUNTERS_MAX:
		app->counters_max = psb_cli_size("--counters-max", v);
		if (app->counters_max != 0 && app->counters_max < PSB_EXP_COUNTERS_MAX_MIN)
			psb_die("--counters-max: 0 (never rotate) or at least 64KiB, got '%s'", v);
		break;
	case OPT_PROMETHEUS: app->prometheus = v; break;
	case OPT_OUTPUT_DIR: set_results_root(app, v); break;
	case OPT_IDLE_EXIT: app->idle_exit_ns = psb_cli_u64("--idle-exit", v, 1, 3600000) * 1000000;
		break;
	case OPT_VERBOSE: app->verbose++; break;
	case OPT_QUIET: app->quiet = 1; break;
	case OPT_LOG_TIME: app->log_time = 1; break;
	case OPT_HELP: usage(stdout); exit(0);
	case OPT_LOG_LEVEL: {
		char err[256];

		if (psb_log_option(v, err, sizeof(err)) != 0)
			psb_die("--log-level: %s", err);
		break;
	}
	default: psb_cli_usage_error("internal: option %d has no handler", c);
	}
}

/* getopt_long's table: the document's options (index i: val i), then the process's own. */
static struct option long_opts[NCONF_OPTS + NAPP_OPTS + 1];

static void
build_long_opts(void)
{
	unsigned int i, n = 0;

	for (i = 0; i < NCONF_OPTS; i++) {
		if (conf_opts[i].name == NULL)
			continue;
		long_opts[n].name = conf_opts[i].name;
		long_opts[n].has_arg = conf_opts[i].has_arg ? required_argument : no_argument;
		long_opts[n].val = (int)i;
		n++;
	}
	memcpy(&long_opts[n], app_opts, sizeof(app_opts));
}

static const struct conf_opt *
conf_opt_by_name(const char *name)
{
	unsigned int i;

	for (i = 0; i < NCONF_OPTS; i++)
		if (conf_opts[i].name != NULL && strcmp(conf_opts[i].name, name) == 0)
			return &conf_opts[i];
	return NULL;
}

static void
parse_args(struct psb_app *app, struct psb_run_opts *ro, struct port_list *pl, int argc,
		char **argv)
{
	static const char *const positional[] = { "pushpull.len", "pushpull.repeat",
		"pushpull.mode" };
	static const char *const pos_names[] = { "len", "repeat", "mode" };
	const char *duration = NULL;
	struct psb_exp_conf *c = &app->conf;
	int opt, npos = 0, nargs, ports_given = 0;
	char who[64];

	/* Everything after the first "--" goes to the EAL untouched. */
	for (nargs = 1; nargs < argc && strcmp(argv[nargs], "--") != 0; nargs++)
		;
	ro->eal.n_extra = nargs < argc ? argc - nargs - 1 : 0;
	ro->eal.extra = argv + nargs + 1;
	build_long_opts();
	optind = 1;
	while ((opt = psb_cli_getopt(nargs, argv, "l:ivqh", long_opts, NULL)) != -1) {
		const struct conf_opt *o = NULL;

		if (opt >= 0 && opt < (int)NCONF_OPTS)
			o = &conf_opts[opt];
		else if (opt == 'l')
			o = conf_opt_by_name("lcores");
		if (o == NULL) {
			app_opt(app, opt == 'i' ? OPT_INTERACTIVE : opt == 'v' ? OPT_VERBOSE :
				opt == 'q' ? OPT_QUIET : opt == 'h' ? OPT_HELP : opt, optarg);
			continue;
		}
		if (strcmp(o->path, "node.ports") == 0 && !ports_given++)
			json_array_clear(pl->specs);
		snprintf(who, sizeof(who), "--%s", o->name);
		conf_opt(c, pl, o, who, optarg, &duration);
	}
	/* test_benchmark's positional arguments: [len] [repeat] [mode]. */
	while (optind < nargs) {
		const char *v = argv[optind++];
		struct conf_opt o = { pos_names[npos % 3], 1, positional[npos % 3], NULL, NULL,
				      NULL, NULL, NULL };

		if (npos >= 3)
			psb_cli_usage_error("unexpected argument '%s' (EAL options go after --)", v);
		npos++;
		conf_opt(c, pl, &o, o.name, v, &duration);
	}
	/* --duration: the worker's benchmark, or how long a server's experiment measures */
	if (duration != NULL)
		set_path(c, "--duration", c->node.role == PSB_EXP_ROLE_WORKER ?
			 "pushpull.duration" : "serve.duration", duration);
	if (app->verbose >= 2 && c->output.log_every == 0)
		set_path(c, "-vv", "output.log_every", "1s");
}

_Static_assert((int)PSB_NODE_TRAINER == (int)PSB_EXP_ROLE_TRAINER &&
	       (int)PSB_NODE_SCHEDULER == (int)PSB_EXP_ROLE_SCHEDULER,
	       "enum psb_node_role follows enum psb_exp_role");

/* Two port specs that name one device: one interface, socket or pair of files. */
static int
same_device(const struct psb_port_spec *a, const struct psb_port_spec *b)
{
	if (psb_port_is_kernel(a) && psb_port_is_kernel(b))
		return strcmp(a->ifname, b->ifname) == 0;
	if (a->kind == PSB_PORT_MEMIF && b->kind == PSB_PORT_MEMIF)
		return strcmp(a->sock_path, b->sock_path) == 0;
	return a->kind == b->kind && (a->kind == PSB_PORT_PCAP || a->kind == PSB_PORT_PCI) &&
	       strcmp(a->spec, b->spec) == 0;
}


/*
 * A server's shared-memory slots (node.shm_clients): memif server ports, ids 0..N-1, on one
 * socket named after the data address, after every other port. Client processes on this
 * host find it there (lib/client, psb_shm_sock_path) and take a free slot.
 */
static void
shm_ports(struct psb_app *app, const struct psb_exp_node *n)
{
	char dir[256], path[128], spec[PSB_DEVARGS_LEN], err[256];
	unsigned int k;

	app->nshm = 0;
	if (app->node_role != PSB_NODE_SERVER || n->shm_clients == 0)
		return;
	if (psb_shm_dir(dir, sizeof(dir)) != 0 ||
	    psb_shm_sock_name(dir, n->ip, (uint16_t)n->udp_port, path, sizeof(path)) != 0)
		psb_die("node.shm_clients: the socket's path in %s is too long for a unix socket "
			"(PSB_SHM_DIR)", dir);
	for (k = 0; k < n->shm_clients; k++) {
		struct psb_port_spec *p = &app->specs[app->nports];

		snprintf(spec, sizeof(spec), "memif:server:%s:%u", path, k);
		if (psb_port_parse(spec, app->nports, p, err, sizeof(err)) != 0)
			psb_die("node.shm_clients: %s", err);
		p->shm_slot = (int)k + 1;
		app->nports++;
		app->nshm++;
	}
}

/* The node's settings as the running node reads them, from app->conf alone. */
static void
derive(struct psb_app *app, struct psb_run_opts *ro)
{
	const struct psb_exp_conf *c = &app->conf;
	const struct psb_exp_node *n = &c->node;
	char err[256];
	uint32_t i;

	app->node_role = (enum psb_node_role)n->role;
	app->nports = 0;
	for (i = 0; i < n->ports.n; i++) {
		if (psb_port_parse(n->ports.v[i], app->nports, &app->specs[app->nports], err,
				sizeof(err)) != 0)
			psb_die("node.ports[%u]: %s (--port)", i, err);
		app->nports++;
	}
	app->me.ip = n->ip;
	app->mac_given = n->mac[0] != '\0';
	if (app->mac_given && psb_parse_mac(n->mac, app->me.mac) != 0)
		psb_die("node.mac: expected XX:XX:XX:XX:XX:XX, got \"%s\" (--mac)", n->mac);
	app->me.port = (uint16_t)n->udp_port;
	app->sched_ip = n->scheduler;
	app->sched_port = (uint16_t)n->scheduler_port;
	app->static_server_ip = n->server;
	app->num_workers = (uint16_t)n->num_workers;
	app->num_servers = (uint16_t)n->num_servers;
	app->rank_base = (uint16_t)n->rank;
	app->nlocal_workers = (uint16_t)n->workers;
	/*
	 * a staleness document's node runs the receiver role (a worker) or the trainer role in
	 * place of the benchmark's workers
	 */
	app->trainer = c->kind == PSB_EXP_STALENESS && n->role == PSB_EXP_ROLE_TRAINER;
	app->stale = c->kind == PSB_EXP_STALENESS && !app->trainer;
	if (c->kind == PSB_EXP_STALENESS)
		app->nlocal_workers = 0;
	/* node.idle_sleep (and a staleness node's 100 us) asked for sleeps before node.idle */
	app->idle_mode = n->idle;
	app->idle_sleep_asked = n->idle_sleep != 0 || c->kind == PSB_EXP_STALENESS;
	app->idle_sleep_ns = n->idle_sleep != 0 ? n->idle_sleep :
		c->kind == PSB_EXP_STALENESS ? 100000 : 0;
	app->nshards = (uint16_t)n->shards;
	app->sync = n->sync;
	app->sync_round = n->sync && n->sync_value == 1;
	app->mtu_want = (uint16_t)n->mtu;
	app->max_value = (uint32_t)n->max_value;
	app->store = c->store;
	app->yield_ns = n->yield;
	app->connect_timeout_ns = n->connect_timeout;
	app->heartbeat_ns = n->heartbeat;
	app->dead_after_ns = n->dead_after;
	app->keep_serving = n->keep_serving;
	app->echo = n->echo;
	app->has_exc = 0;
	if (n->exception[0] != '\0') {
		if (app->nports >= PSB_MAX_USER_PORTS)
			psb_die("node.exception: %u ports already, %d at most (--exception)",
				app->nports, PSB_MAX_USER_PORTS);
		if (psb_port_parse(n->exception, app->nports, &app->specs[app->nports], err,
				sizeof(err)) != 0)
			psb_die("node.exception: %s (--exception)", err);
		for (i = 0; i < app->nports; i++)
			if (same_device(&app->specs[i], &app->specs[app->nports]))
				psb_die("node.exception: \"%s\" is node.ports[%u]'s device too: the "
					"exception port is one of its own (--exception)", n->exception,
					i);
		if (app->nports == 0)
			psb_die("node.exception: no port to pass the host's traffic to: give "
				"node.ports (--port) too");
		app->exc_idx = app->nports++;
		app->has_exc = 1;
	}
	shm_ports(app, n);
	app->roce_qps = (uint32_t)n->roce_qps;
	app->exc_queue = (uint32_t)n->exception_queue;
	app->roce_accounting = n->roce_accounting;
	app->isolate = n->isolate;
	snprintf(ro->lcores, sizeof(ro->lcores), "%s", n->lcores);
	ro->eal.lcores = ro->lcores[0] != '\0' ? ro->lcores : NULL;
	ro->mem_given = n->mem_mb != 0;
	ro->eal.mem_mb = n->mem_mb;
	ro->mbufs = n->mbufs;
	ro->eal.force_huge = n->huge == PSB_EXP_HUGE_YES;
	ro->eal.force_no_huge = n->huge == PSB_EXP_HUGE_NO;
	snprintf(ro->prefix, sizeof(ro->prefix), "%s", n->file_prefix);
	ro->eal.file_prefix = ro->prefix[0] != '\0' ? ro->prefix : NULL;
	/* a server started from the command line alone leaves after --duration */
	app->duration_ns = ro->config == NULL && n->role != PSB_EXP_ROLE_WORKER ?
		c->serve.duration : 0;
}

void
psb_opts_parse(struct psb_app *app, struct psb_run_opts *ro, int argc, char **argv)
{
	struct psb_exp_conf *c = &app->conf;
	struct port_list pl = { json_array() };
	char err[1024];
	const char *cfg;
	uint64_t file_max;

	if (pl.specs == NULL)
		psb_die("out of memory");
	/* before anything that reads a file: --version answers whatever else is given */
	version_opt(argc, argv);
	file_max = file_max_opt(argc, argv);
	if ((cfg = find_opt(argc, argv, "--check-config")) != NULL)
		exit(check_config_file(cfg, file_max));
	/* the schema's defaults, then the document or ps-lite's variables, then the options */
	if (psb_conf_parse_string(psb_exp_table, c, cli_doc, "", err, sizeof(err)) != 0)
		psb_die("internal: %s", err);
	if ((cfg = find_opt(argc, argv, "--config")) != NULL) {
		if (psb_exp_load_file(c, cfg, file_max, true, err, sizeof(err)) != 0)
			psb_die("%s%s%s", strncmp(err, cfg, strlen(cfg)) == 0 ? "" : cfg,
				strncmp(err, cfg, strlen(cfg)) == 0 ? "" : ": ", err);
		ro->config = cfg;
	} else {
		apply_env(app, &pl);
	}
	parse_args(app, ro, &pl, argc, argv);
	json_decref(pl.specs);
	/* what a node runs follows from its role, or a staleness worker's document */
	if (c->kind != PSB_EXP_STALENESS)
		c->kind = c->node.role == PSB_EXP_ROLE_WORKER ? PSB_EXP_PUSHPULL : PSB_EXP_SERVE;
	/* ps-lite's scheduler is where DMLC_PS_ROOT_URI says: it needs no DMLC_NODE_HOST */
	if (c->node.ip == 0 && c->node.role == PSB_EXP_ROLE_SCHEDULER)
		c->node.ip = c->node.scheduler;
	if (psb_exp_check(c, true, err, sizeof(err)) != 0)
		conf_die(ro->config, err);
	derive(app, ro);
}
