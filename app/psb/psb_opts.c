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

static void
usage(FILE *out)
{
	fprintf(out,
"usage: psb [options] [len [repeat [mode]]] [-- EAL options]\n"
"\n"
"Node:\n"
"  --role server|worker|scheduler  what this process is (env DMLC_ROLE)\n"
"  --port SPEC          a port; repeat for more. SPEC is one of\n"
"                       memif:server|client:/abs/path.sock[:id] (client: zero-copy)\n"
"                       af_packet:IFNAME\n"
"                       tap:IFNAME  pcap:IN.pcap:OUT.pcap  ring  null  pci:DDDD:BB:DD.F\n"
"                       (env DMLC_INTERFACE=IF means af_packet:IF)\n"
"  --ip A.B.C.D         this node's address (env DMLC_NODE_HOST)\n"
"  --mac XX:XX:..       this node's MAC (default: the first port's)\n"
"  --udp-port N         data port (default %u)\n"
"  --scheduler IP[:PORT] the scheduler (env DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT);\n"
"                       a server whose --ip equals it hosts the scheduler\n"
"  --server IP          worker without scheduler: the one server\n"
"  --num-workers N      workers in the job (env DMLC_NUM_WORKER, default 1)\n"
"  --num-servers N      servers in the job (env DMLC_NUM_SERVER, default 1)\n"
"  --rank N             rank of this worker when there is no scheduler (default 0)\n"
"  --sync | --async     synchronous rounds (default) or asynchronous updates\n"
"  --shards N           server shards, one role each (default 1)\n"
"  --workers N          worker roles in this process (default 1)\n"
"  --mtu N              wanted MTU, lowered to what the port allows (default: an af_packet\n"
"                       or tap interface's own, left unchanged; 9000 on other ports)\n"
"  --connect-timeout S  each wait of the setup at most: a memif server, ARP of the\n"
"                       scheduler and servers, REGISTER, BARRIER (default 60; 0: forever)\n"
"  --max-value BYTES    largest value a server accepts (default 64 MiB)\n"
"  --echo               answer psb ECHO requests at the data port (1 KiB, 1000 a second\n"
"                       at most; docs/PROTOCOL.md, Echo)\n"
"Store budgets (server; 0 or absent: derived from --mem or half the machine's memory):\n"
"  --store-max-bytes SIZE   memory of the store; pushes to new keys beyond it get\n"
"                       ERROR no_memory (store.max_bytes)\n"
"  --store-max-keys N   keys at most (store.max_keys)\n"
"  --reasm-bytes SIZE   pushes being reassembled, all senders; beyond it ERROR busy\n"
"                       (store.reasm_bytes)\n"
"  --reasm-sender-bytes SIZE  the same per sender (store.reasm_sender_bytes)\n"
"  --reasm-timeout S    discard a push whose next segment does not come within S\n"
"                       (default 2; store.reasm_timeout)\n"
"Benchmark (worker; ps-lite's test_benchmark):\n"
"  --len BYTES          value size per key (default 1024000)\n"
"  --repeat N           iterations (default 10)\n"
"  --mode M             0 PUSH_THEN_PULL, 1 PUSH_PULL, 2 PUSH_ONLY, 3 PULL_ONLY (default 1)\n"
"  --keys N             keys per server (default 40)\n"
"  --window-bytes N     value bytes in flight (default 32 MiB)\n"
"  --batch BYTES        send values up to BYTES as records of BATCH messages\n"
"                       (default 1024; 0: one message per request)\n"
"  --duration SECONDS   stop the benchmark after this long; servers: exit after it\n"
"  --keep-serving       scheduler, servers: stay when every worker of the job finished\n"
"                       (by default they end then, as ps-lite's Finalize ends a job)\n"
"  --heartbeat SECONDS  tell the scheduler this node is alive this often (default 0.5;\n"
"                       0: never; env PS_HEARTBEAT_INTERVAL)\n"
"  --dead-after SECONDS scheduler: a node silent this long is dead, and the workers are\n"
"                       told which server died (default 3; 0: never; env\n"
"                       PS_HEARTBEAT_TIMEOUT)\n"
"  --timeout-us N       resend a request unanswered this long (default 20000)\n"
"  --max-retries N      then fail it (default 50; 0 = forever); a timeout while the\n"
"                       port takes nothing counts as a try\n"
"  --verify             check every value read back, and every key after the run\n"
"                       (sync: exact sums; async: every worker's pushes counted apart;\n"
"                       every worker of the job must verify)\n"
"  --results FILE       write the result as JSON (FILE.<rank> with several workers)\n"
"  --log-every SECONDS  progress line period (default 1; 0 = none)\n"
"  --warmup N           iterations before the metrics are reset (default 0)\n"
"  --rate RATE          value bits/s each worker role sends at most, e.g. 2Gbps\n"
"                       (with --workers N, up to N times it in all; default 0: unlimited)\n"
"Experiments and control:\n"
"  --config FILE        run the experiment document FILE (config/*.json): node settings\n"
"                       and experiment from it, results into output.dir/<name>/; other\n"
"                       options override the document\n"
"  --output-dir DIR     results directory: documents' output paths are relative to it\n"
"                       and stay inside it (default: the working directory)\n"
"  --check-config FILE  check an experiment document and print it with its defaults\n"
"  --file-max BYTES     largest document or command file psb reads (default 1MiB;\n"
"                       node.file_max); other files are refused unless regular\n"
"  -i, --interactive    console on stdin (prompt psb> ); experiments start from it\n"
"  --cmdline-file FILE  run the console commands of FILE first\n"
"  --wait               start nothing; wait for commands (control socket) until quit\n"
"  --ctl PATH           control socket (default <DPDK runtime dir>/psb.ctl; none: off)\n"
"  --counters-file FILE append every counter as a JSON line to FILE periodically\n"
"  --counters-every S   its period (default 1)\n"
"  --counters-max SIZE  move FILE to FILE.1 before it passes SIZE (default 64MiB; 0:\n"
"                       never); FILE renamed or removed: a new one is started\n"
"  --prometheus [IP:]PORT  serve counters as Prometheus text on 127.0.0.1:PORT/metrics\n"
"Process:\n"
"  -l, --lcores LIST    lcores (default: a CPU no other psb on this host polls); roles\n"
"                       are spread one per lcore when there are enough, else they\n"
"                       share (all on one lcore: run to completion)\n"
"  --mem MB             memory of the process: DPDK's pools, then the store (default:\n"
"                       pools as needed; a server's store gets half the machine's memory)\n"
"  --mbufs N            mbufs in the pool (default from rings and ports)\n"
"  --huge | --no-huge   require hugepages / never use them (default: use if free)\n"
"  --yield US           a polling lcore lets waiting threads of its CPU run every US\n"
"                       microseconds (default 200; 0: never, for isolated cores)\n"
"  --file-prefix NAME   DPDK runtime prefix (default psb-PID): a name of letters, digits,\n"
"                       '_', '-', '.'; at exit psb removes from /var/run/dpdk/NAME the files\n"
"                       the EAL and psb made there, and the directory if psb made it\n"
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
"  -h, --help\n", PSB_UDP_PORT);
}

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
};

static const struct conf_opt conf_opts[] = {
	{ "role", 1, "node.role", NULL, NULL, "DMLC_ROLE" },
	{ "port", 1, "node.ports", NULL, NULL, "DMLC_INTERFACE" },
	{ "ip", 1, "node.ip", NULL, NULL, "DMLC_NODE_HOST" },
	{ "mac", 1, "node.mac", NULL, NULL, NULL },
	{ "udp-port", 1, "node.udp_port", NULL, NULL, NULL },
	{ "scheduler", 1, "node.scheduler", NULL, NULL, "DMLC_PS_ROOT_URI" },
	{ NULL, 1, "node.scheduler_port", NULL, NULL, "DMLC_PS_ROOT_PORT" },
	{ "server", 1, "node.server", NULL, NULL, NULL },
	{ "num-workers", 1, "node.num_workers", NULL, NULL, "DMLC_NUM_WORKER" },
	{ "num-servers", 1, "node.num_servers", NULL, NULL, "DMLC_NUM_SERVER" },
	{ "rank", 1, "node.rank", NULL, NULL, NULL },
	{ "sync", 0, "node.sync", "true", NULL, NULL },
	{ "async", 0, "node.sync", "false", NULL, NULL },
	{ "shards", 1, "node.shards", NULL, NULL, NULL },
	{ "workers", 1, "node.workers", NULL, NULL, NULL },
	{ "mtu", 1, "node.mtu", NULL, NULL, NULL },
	{ "max-value", 1, "node.max_value", NULL, NULL, NULL },
	{ "connect-timeout", 1, "node.connect_timeout", NULL, NULL, NULL },
	{ "keep-serving", 0, "node.keep_serving", "true", NULL, NULL },
	{ "echo", 0, "node.echo", "true", NULL, NULL },
	{ "heartbeat", 1, "node.heartbeat", NULL, NULL, "PS_HEARTBEAT_INTERVAL" },
	{ "dead-after", 1, "node.dead_after", NULL, NULL, "PS_HEARTBEAT_TIMEOUT" },
	{ "lcores", 1, "node.lcores", NULL, NULL, NULL },
	{ "mem", 1, "node.mem_mb", NULL, NULL, NULL },
	{ "mbufs", 1, "node.mbufs", NULL, NULL, NULL },
	{ "huge", 0, "node.huge", "yes", NULL, NULL },
	{ "no-huge", 0, "node.huge", "no", NULL, NULL },
	{ "yield", 1, "node.yield", NULL, "us", NULL },
	{ "file-prefix", 1, "node.file_prefix", NULL, NULL, NULL },
	{ "file-max", 1, "node.file_max", NULL, NULL, NULL },
	{ "store-max-bytes", 1, "store.max_bytes", NULL, NULL, NULL },
	{ "store-max-keys", 1, "store.max_keys", NULL, NULL, NULL },
	{ "reasm-bytes", 1, "store.reasm_bytes", NULL, NULL, NULL },
	{ "reasm-sender-bytes", 1, "store.reasm_sender_bytes", NULL, NULL, NULL },
	{ "reasm-timeout", 1, "store.reasm_timeout", NULL, NULL, NULL },
	{ "len", 1, "pushpull.len", NULL, NULL, NULL },
	{ "repeat", 1, "pushpull.repeat", NULL, NULL, NULL },
	{ "mode", 1, "pushpull.mode", NULL, NULL, NULL },
	{ "keys", 1, "pushpull.keys", NULL, NULL, NULL },
	{ "window-bytes", 1, "pushpull.window", NULL, NULL, NULL },
	{ "batch", 1, "pushpull.batch", NULL, NULL, NULL },
	{ "duration", 1, "pushpull.duration", NULL, NULL, NULL },
	{ "timeout-us", 1, "pushpull.timeout", NULL, "us", NULL },
	{ "max-retries", 1, "pushpull.max_retries", NULL, NULL, NULL },
	{ "verify", 0, "pushpull.verify", "true", NULL, NULL },
	{ "warmup", 1, "pushpull.warmup", NULL, NULL, NULL },
	{ "rate", 1, "pushpull.rate", NULL, NULL, NULL },
	{ "log-every", 1, "output.log_every", NULL, NULL, NULL },
};

#define NCONF_OPTS	(sizeof(conf_opts) / sizeof(conf_opts[0]))

/* The process's own options: index into app_opts + OPT_APP. */
enum {
	OPT_RESULTS = 1000, OPT_STATS_FILE, OPT_CONFIG, OPT_CHECK_CONFIG, OPT_INTERACTIVE,
	OPT_CMDLINE_FILE, OPT_WAIT, OPT_CTL, OPT_COUNTERS_FILE, OPT_COUNTERS_EVERY,
	OPT_COUNTERS_MAX, OPT_PROMETHEUS, OPT_OUTPUT_DIR, OPT_IDLE_EXIT, OPT_VERBOSE, OPT_QUIET,
	OPT_HELP, OPT_LOG_LEVEL,
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
	if (strcmp(o->path, "node.ports") == 0) {
		if (o->name == NULL || strcmp(who, o->env) == 0)
			snprintf(buf, sizeof(buf), "af_packet:%.200s", v);
		else
			snprintf(buf, sizeof(buf), "%s", v);
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
	case OPT_HELP: usage(stdout); exit(0);
	case OPT_LOG_LEVEL: {
		char err[256];

		if (psb_log_option(v, err, sizeof(err)) != 0)
			psb_die("--log-level: %s", err);
		break;
	}
	default: usage(stderr); exit(2);
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
	while ((opt = getopt_long(nargs, argv, "l:ivqh", long_opts, NULL)) != -1) {
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
				      NULL };

		if (npos >= 3)
			psb_die("unexpected argument '%s' (EAL options go after --)", v);
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
	app->nshards = (uint16_t)n->shards;
	app->sync = n->sync;
	app->mtu_want = (uint16_t)n->mtu;
	app->max_value = (uint32_t)n->max_value;
	app->store = c->store;
	app->yield_ns = n->yield;
	app->connect_timeout_ns = n->connect_timeout;
	app->heartbeat_ns = n->heartbeat;
	app->dead_after_ns = n->dead_after;
	app->keep_serving = n->keep_serving;
	app->echo = n->echo;
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
	file_max = file_max_opt(argc, argv);
	if ((cfg = find_opt(argc, argv, "--check-config")) != NULL)
		exit(check_config_file(cfg, file_max));
	/* the schema's defaults, then the document or ps-lite's variables, then the options */
	if (psb_conf_parse_string(psb_exp_table, c, "{\"name\": \"cli\", \"kind\": \"serve\", "
			"\"node\": {\"role\": \"server\"}}", "", err, sizeof(err)) != 0)
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
	/* what a node runs follows from its role */
	c->kind = c->node.role == PSB_EXP_ROLE_WORKER ? PSB_EXP_PUSHPULL : PSB_EXP_SERVE;
	/* ps-lite's scheduler is where DMLC_PS_ROOT_URI says: it needs no DMLC_NODE_HOST */
	if (c->node.ip == 0 && c->node.role == PSB_EXP_ROLE_SCHEDULER)
		c->node.ip = c->node.scheduler;
	if (psb_exp_check(c, true, err, sizeof(err)) != 0)
		conf_die(ro->config, err);
	derive(app, ro);
}
