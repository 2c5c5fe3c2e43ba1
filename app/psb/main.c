/* psb: options, EAL and port bring-up, role placement on lcores, run, report. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sched.h>
#include <sys/stat.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mempool.h>

#include "psb.h"
#include "psb_agg.h"
#include "psb_bench.h"
#include "psb_cli.h"
#include "psb_ctl.h"
#include "psb_ethdev.h"
#include "psb_guard.h"
#include "psb_host.h"
#include "psb_kv.h"
#include "psb_report.h"

#define MBUF_ROOM	(PSB_MAX_FRAME + RTE_PKTMBUF_HEADROOM)
#define MBUF_PRIV	RTE_ALIGN(sizeof(struct psb_meta), RTE_MBUF_PRIV_ALIGN)
#define NB_DESC		1024
#define HOLD_PER_SHARD	2048	/* packet buffers a server shard may keep for reassembly */
#define MiB		(1024ull * 1024)

static struct psb_app g_app;

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
"                       .console .export .run, a glob (psb.*) or DPDK's (pmd.net.memif);\n"
"                       none: psb.*. LEVEL: error warning notice info debug (or 1-8).\n"
"                       Default info; -q is psb.*:warning, -v debug but psb.rx (dropped\n"
"                       frames, a line a second), -vv all; --log-level overrides both\n"
"  -h, --help\n", PSB_UDP_PORT);
}

/* --heartbeat, --dead-after and their ps-lite variables: seconds, at most an hour. */
static uint64_t
liveness_ns(const char *opt, const char *v)
{
	uint64_t ns = psb_cli_seconds_ns(opt, v);

	if (ns > 3600ull * 1000000000)
		psb_die("%s: expected seconds in [0, 3600], got '%s'", opt, v);
	return ns;
}

static enum psb_node_role
parse_role(const char *opt, const char *v)
{
	if (strcmp(v, "server") == 0)
		return PSB_NODE_SERVER;
	if (strcmp(v, "worker") == 0)
		return PSB_NODE_WORKER;
	if (strcmp(v, "scheduler") == 0)
		return PSB_NODE_SCHEDULER;
	psb_die("%s: expected server, worker or scheduler, got '%s'", opt, v);
	return PSB_NODE_SERVER;
}

static void
add_port(struct psb_app *app, const char *spec)
{
	char err[256];

	if (app->nports >= PSB_MAX_PORTS)
		psb_die("--port: at most %d ports", PSB_MAX_PORTS);
	if (psb_port_parse(spec, app->nports, &app->specs[app->nports], err, sizeof(err)) != 0)
		psb_die("--port: %s", err);
	app->nports++;
}

enum {
	OPT_ROLE = 256, OPT_PORT, OPT_IP, OPT_MAC, OPT_UDP_PORT, OPT_SCHED, OPT_SERVER,
	OPT_NUM_WORKERS, OPT_NUM_SERVERS, OPT_RANK, OPT_SYNC, OPT_ASYNC, OPT_SHARDS, OPT_WORKERS,
	OPT_MTU, OPT_MAX_VALUE, OPT_LEN, OPT_REPEAT, OPT_MODE, OPT_KEYS, OPT_WINDOW, OPT_DURATION,
	OPT_TIMEOUT, OPT_RETRIES, OPT_VERIFY, OPT_RESULTS, OPT_LOG_EVERY, OPT_MEM, OPT_MBUFS,
	OPT_HUGE, OPT_NO_HUGE, OPT_PREFIX, OPT_IDLE_EXIT, OPT_STATS_FILE, OPT_BATCH,
	OPT_CONFIG, OPT_CHECK_CONFIG, OPT_CMDLINE_FILE, OPT_WAIT, OPT_CTL, OPT_COUNTERS_FILE,
	OPT_COUNTERS_EVERY, OPT_COUNTERS_MAX, OPT_PROMETHEUS, OPT_WARMUP, OPT_RATE, OPT_YIELD, OPT_STORE_BYTES,
	OPT_STORE_KEYS, OPT_REASM_BYTES, OPT_REASM_SENDER, OPT_REASM_TIMEOUT, OPT_FILE_MAX,
	OPT_OUTPUT_DIR, OPT_CONNECT_TIMEOUT, OPT_KEEP_SERVING, OPT_HEARTBEAT, OPT_DEAD_AFTER,
	OPT_LOG_LEVEL,
};

static const struct option long_opts[] = {
	{ "role", required_argument, NULL, OPT_ROLE },
	{ "port", required_argument, NULL, OPT_PORT },
	{ "ip", required_argument, NULL, OPT_IP },
	{ "mac", required_argument, NULL, OPT_MAC },
	{ "udp-port", required_argument, NULL, OPT_UDP_PORT },
	{ "scheduler", required_argument, NULL, OPT_SCHED },
	{ "server", required_argument, NULL, OPT_SERVER },
	{ "num-workers", required_argument, NULL, OPT_NUM_WORKERS },
	{ "num-servers", required_argument, NULL, OPT_NUM_SERVERS },
	{ "rank", required_argument, NULL, OPT_RANK },
	{ "sync", no_argument, NULL, OPT_SYNC },
	{ "async", no_argument, NULL, OPT_ASYNC },
	{ "shards", required_argument, NULL, OPT_SHARDS },
	{ "workers", required_argument, NULL, OPT_WORKERS },
	{ "mtu", required_argument, NULL, OPT_MTU },
	{ "max-value", required_argument, NULL, OPT_MAX_VALUE },
	{ "len", required_argument, NULL, OPT_LEN },
	{ "repeat", required_argument, NULL, OPT_REPEAT },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "keys", required_argument, NULL, OPT_KEYS },
	{ "window-bytes", required_argument, NULL, OPT_WINDOW },
	{ "batch", required_argument, NULL, OPT_BATCH },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "timeout-us", required_argument, NULL, OPT_TIMEOUT },
	{ "max-retries", required_argument, NULL, OPT_RETRIES },
	{ "verify", no_argument, NULL, OPT_VERIFY },
	{ "results", required_argument, NULL, OPT_RESULTS },
	{ "log-every", required_argument, NULL, OPT_LOG_EVERY },
	{ "lcores", required_argument, NULL, 'l' },
	{ "mem", required_argument, NULL, OPT_MEM },
	{ "mbufs", required_argument, NULL, OPT_MBUFS },
	{ "huge", no_argument, NULL, OPT_HUGE },
	{ "no-huge", no_argument, NULL, OPT_NO_HUGE },
	{ "file-prefix", required_argument, NULL, OPT_PREFIX },
	{ "idle-exit", required_argument, NULL, OPT_IDLE_EXIT },
	{ "stats-file", required_argument, NULL, OPT_STATS_FILE },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "check-config", required_argument, NULL, OPT_CHECK_CONFIG },
	{ "file-max", required_argument, NULL, OPT_FILE_MAX },
	{ "interactive", no_argument, NULL, 'i' },
	{ "cmdline-file", required_argument, NULL, OPT_CMDLINE_FILE },
	{ "wait", no_argument, NULL, OPT_WAIT },
	{ "keep-serving", no_argument, NULL, OPT_KEEP_SERVING },
	{ "heartbeat", required_argument, NULL, OPT_HEARTBEAT },
	{ "dead-after", required_argument, NULL, OPT_DEAD_AFTER },
	{ "ctl", required_argument, NULL, OPT_CTL },
	{ "counters-file", required_argument, NULL, OPT_COUNTERS_FILE },
	{ "counters-every", required_argument, NULL, OPT_COUNTERS_EVERY },
	{ "counters-max", required_argument, NULL, OPT_COUNTERS_MAX },
	{ "prometheus", required_argument, NULL, OPT_PROMETHEUS },
	{ "warmup", required_argument, NULL, OPT_WARMUP },
	{ "rate", required_argument, NULL, OPT_RATE },
	{ "yield", required_argument, NULL, OPT_YIELD },
	{ "store-max-bytes", required_argument, NULL, OPT_STORE_BYTES },
	{ "store-max-keys", required_argument, NULL, OPT_STORE_KEYS },
	{ "reasm-bytes", required_argument, NULL, OPT_REASM_BYTES },
	{ "reasm-sender-bytes", required_argument, NULL, OPT_REASM_SENDER },
	{ "reasm-timeout", required_argument, NULL, OPT_REASM_TIMEOUT },
	{ "output-dir", required_argument, NULL, OPT_OUTPUT_DIR },
	{ "connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "verbose", no_argument, NULL, 'v' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct run_opts {
	struct psb_eal_opts eal;
	uint64_t mbufs;
	int mem_given;
	const char *config;
	char lcores[64];
	char prefix[64];
};

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

/* ps-lite's environment first; command-line flags override it. */
static void
apply_env(struct psb_app *app)
{
	const char *v;

	if ((v = getenv("DMLC_ROLE")) != NULL && *v != '\0')
		app->node_role = parse_role("DMLC_ROLE", v);
	if ((v = getenv("DMLC_NUM_WORKER")) != NULL && *v != '\0')
		app->num_workers = (uint16_t)psb_cli_u64("DMLC_NUM_WORKER", v, 1, PSB_KV_MAX_WORKERS);
	if ((v = getenv("DMLC_NUM_SERVER")) != NULL && *v != '\0')
		app->num_servers = (uint16_t)psb_cli_u64("DMLC_NUM_SERVER", v, 1, 128);
	if ((v = getenv("DMLC_PS_ROOT_URI")) != NULL && *v != '\0')
		app->sched_ip = psb_cli_ip("DMLC_PS_ROOT_URI", v);
	if ((v = getenv("DMLC_PS_ROOT_PORT")) != NULL && *v != '\0')
		app->sched_port = (uint16_t)psb_cli_u64("DMLC_PS_ROOT_PORT", v, 1, 65535);
	if ((v = getenv("DMLC_NODE_HOST")) != NULL && *v != '\0')
		app->me.ip = psb_cli_ip("DMLC_NODE_HOST", v);
	if ((v = getenv("PS_HEARTBEAT_INTERVAL")) != NULL && *v != '\0')
		app->heartbeat_ns = liveness_ns("PS_HEARTBEAT_INTERVAL", v);
	if ((v = getenv("PS_HEARTBEAT_TIMEOUT")) != NULL && *v != '\0')
		app->dead_after_ns = liveness_ns("PS_HEARTBEAT_TIMEOUT", v);
	if ((v = getenv("PS_VERBOSE")) != NULL && *v != '\0')
		app->verbose = (int)psb_cli_u64("PS_VERBOSE", v, 0, 2);
	if ((v = getenv("DMLC_INTERFACE")) != NULL && *v != '\0') {
		char spec[128];

		snprintf(spec, sizeof(spec), "af_packet:%.100s", v);
		add_port(app, spec);
		app->nports = 1;	/* --port given later replaces it */
	}
}

static void
parse_args(struct psb_app *app, struct run_opts *ro, int argc, char **argv)
{
	int c, npos = 0, env_port = app->nports, nargs, duration_given = 0;
	uint64_t duration_ns = 0;
	char err[256];

	/* Everything after the first "--" goes to the EAL untouched. */
	for (nargs = 1; nargs < argc && strcmp(argv[nargs], "--") != 0; nargs++)
		;
	ro->eal.n_extra = nargs < argc ? argc - nargs - 1 : 0;
	ro->eal.extra = argv + nargs + 1;
	optind = 1;
	while ((c = getopt_long(nargs, argv, "l:ivqh", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_ROLE: app->node_role = parse_role("--role", optarg); break;
		case OPT_PORT:
			if (env_port) {
				app->nports = 0;
				env_port = 0;
			}
			add_port(app, optarg);
			break;
		case OPT_IP: app->me.ip = psb_cli_ip("--ip", optarg); break;
		case OPT_MAC:
			if (psb_parse_mac(optarg, app->me.mac) != 0)
				psb_die("--mac: expected XX:XX:XX:XX:XX:XX, got '%s'", optarg);
			app->mac_given = 1;
			break;
		case OPT_UDP_PORT: app->me.port = (uint16_t)psb_cli_u64("--udp-port", optarg, 1, 65535); break;
		case OPT_SCHED:
			psb_cli_host_port("--scheduler", optarg, &app->sched_ip, &app->sched_port);
			break;
		case OPT_SERVER: app->static_server_ip = psb_cli_ip("--server", optarg); break;
		case OPT_NUM_WORKERS:
			app->num_workers = (uint16_t)psb_cli_u64("--num-workers", optarg, 1,
				PSB_KV_MAX_WORKERS);
			break;
		case OPT_NUM_SERVERS:
			app->num_servers = (uint16_t)psb_cli_u64("--num-servers", optarg, 1, 128);
			break;
		case OPT_RANK: app->rank_base = (uint16_t)psb_cli_u64("--rank", optarg, 0, 1023); break;
		case OPT_SYNC: app->sync = 1; break;
		case OPT_ASYNC: app->sync = 0; break;
		case OPT_SHARDS:
			app->nshards = (uint16_t)psb_cli_u64("--shards", optarg, 1, PSB_MAX_SHARDS);
			break;
		case OPT_WORKERS:
			app->nlocal_workers = (uint16_t)psb_cli_u64("--workers", optarg, 1,
				PSB_MAX_LOCAL_WORKERS);
			break;
		case OPT_MTU: app->mtu_want = (uint16_t)psb_cli_u64("--mtu", optarg, 576, 9000); break;
		case OPT_MAX_VALUE: {
			uint64_t mv = psb_cli_size("--max-value", optarg);

			if (mv < 4 || mv > PSB_MAX_VALUE)
				psb_die("--max-value: expected 4 B to 1 GiB, got '%s'", optarg);
			app->max_value = (uint32_t)mv;
			break;
		}
		case OPT_LEN:
			app->bench.len = (uint32_t)psb_cli_u64("--len", optarg, 4, PSB_MAX_VALUE);
			break;
		case OPT_REPEAT: app->bench.repeat = psb_cli_u64("--repeat", optarg, 1, UINT64_MAX); break;
		case OPT_MODE:
			app->bench.mode = psb_bench_mode_parse(optarg);
			if (app->bench.mode < 0)
				psb_die("--mode: expected 0-3 or PUSH_THEN_PULL|PUSH_PULL|PUSH_ONLY|PULL_ONLY, "
					"got '%s'", optarg);
			break;
		case OPT_KEYS:
			app->bench.keys_per_server = (uint32_t)psb_cli_u64("--keys", optarg, 1, 1u << 20);
			break;
		case OPT_WINDOW:
			app->bench.window_bytes = psb_cli_u64("--window-bytes", optarg, 4, 1ull << 32);
			break;
		case OPT_BATCH:
			app->bench.batch = (uint32_t)psb_cli_u64("--batch", optarg, 0, 8192);
			break;
		case OPT_DURATION:
			duration_ns = psb_cli_seconds_ns("--duration", optarg);
			duration_given = 1;
			break;
		case OPT_TIMEOUT:
			app->bench.timeout_ns = psb_cli_u64("--timeout-us", optarg, 10, 60000000) * 1000;
			break;
		case OPT_RETRIES:
			app->bench.max_retries = (uint32_t)psb_cli_u64("--max-retries", optarg, 0, 1u << 30);
			break;
		case OPT_VERIFY: app->bench.verify = 1; break;
		case OPT_RESULTS: app->bench.results = optarg; break;
		case OPT_LOG_EVERY:
			app->bench.log_every_ns = psb_cli_seconds_ns("--log-every", optarg);
			break;
		case 'l': ro->eal.lcores = optarg; break;
		case OPT_MEM:
			ro->eal.mem_mb = psb_cli_u64("--mem", optarg, 16, 1u << 20);
			ro->mem_given = 1;
			break;
		case OPT_MBUFS: ro->mbufs = psb_cli_u64("--mbufs", optarg, 512, 1u << 24); break;
		case OPT_HUGE: ro->eal.force_huge = 1; break;
		case OPT_NO_HUGE: ro->eal.force_no_huge = 1; break;
		case OPT_PREFIX:
			/* psb removes its files from /var/run/dpdk/<prefix> at exit: a name, no path */
			if (psb_cli_name_check(optarg, PSB_PREFIX_MAX, err, sizeof(err)) != 0)
				psb_die("--file-prefix: %s", err);
			ro->eal.file_prefix = optarg;
			break;
		case OPT_OUTPUT_DIR: set_results_root(app, optarg); break;
		case OPT_CONNECT_TIMEOUT:
			app->connect_timeout_ns = psb_cli_seconds_ns("--connect-timeout", optarg);
			if (app->connect_timeout_ns > 3600ull * 1000000000)
				psb_die("--connect-timeout: expected seconds in [0, 3600], got '%s'",
					optarg);
			break;
		case OPT_IDLE_EXIT:
			app->idle_exit_ns = psb_cli_u64("--idle-exit", optarg, 1, 3600000) * 1000000;
			break;
		case OPT_STATS_FILE: app->stats_file = optarg; break;
		case OPT_CONFIG: break;		/* read before the other options */
		case OPT_CHECK_CONFIG: break;
		case OPT_FILE_MAX: break;	/* read before --config (file_max_opt) */
		case 'i': app->interactive = 1; break;
		case OPT_CMDLINE_FILE: app->cmdline_file = optarg; break;
		case OPT_WAIT: app->stay = 1; break;
		case OPT_KEEP_SERVING: app->keep_serving = 1; break;
		case OPT_HEARTBEAT:
			app->heartbeat_ns = liveness_ns("--heartbeat", optarg);
			break;
		case OPT_DEAD_AFTER:
			app->dead_after_ns = liveness_ns("--dead-after", optarg);
			break;
		case OPT_CTL: app->ctl_path = optarg; break;
		case OPT_COUNTERS_FILE: app->counters_file = optarg; break;
		case OPT_COUNTERS_EVERY:
			app->counters_every_ns = psb_cli_seconds_ns("--counters-every", optarg);
			if (app->counters_every_ns < 10000000)
				psb_die("--counters-every: at least 0.01 s, got '%s'", optarg);
			break;
		case OPT_COUNTERS_MAX:
			app->counters_max = psb_cli_size("--counters-max", optarg);
			if (app->counters_max != 0 && app->counters_max < PSB_EXP_COUNTERS_MAX_MIN)
				psb_die("--counters-max: 0 (never rotate) or at least 64KiB, got '%s'",
					optarg);
			break;
		case OPT_PROMETHEUS: app->prometheus = optarg; break;
		case OPT_YIELD:
			app->yield_ns = psb_cli_u64("--yield", optarg, 0, 1000000) * 1000;
			break;
		case OPT_STORE_BYTES:
			app->store.max_bytes = psb_cli_size("--store-max-bytes", optarg);
			break;
		case OPT_STORE_KEYS:
			app->store.max_keys = psb_cli_u64("--store-max-keys", optarg, 0, 1u << 31);
			break;
		case OPT_REASM_BYTES:
			app->store.reasm_bytes = psb_cli_size("--reasm-bytes", optarg);
			break;
		case OPT_REASM_SENDER:
			app->store.reasm_sender_bytes = psb_cli_size("--reasm-sender-bytes", optarg);
			break;
		case OPT_REASM_TIMEOUT:
			app->store.reasm_timeout = psb_cli_seconds_ns("--reasm-timeout", optarg);
			if (app->store.reasm_timeout < 1000000 || app->store.reasm_timeout > 3600e9)
				psb_die("--reasm-timeout: expected 0.001 to 3600 seconds, got '%s'",
					optarg);
			break;
		case OPT_WARMUP: app->bench.warmup = psb_cli_u64("--warmup", optarg, 0, 1ull << 50); break;
		case OPT_RATE:
			if (psb_conf_parse_rate(optarg, &app->bench.rate_bps) != 0)
				psb_die("--rate: expected a rate like 2Gbps or 500Mbps, got '%s'", optarg);
			break;
		case OPT_LOG_LEVEL:
			if (psb_log_option(optarg, err, sizeof(err)) != 0)
				psb_die("--log-level: %s", err);
			break;
		case 'v': app->verbose++; break;
		case 'q': app->quiet = 1; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	/* test_benchmark's positional arguments: [len] [repeat] [mode]. */
	while (optind < nargs) {
		const char *v = argv[optind++];

		switch (npos++) {
		case 0: app->bench.len = (uint32_t)psb_cli_u64("len", v, 4, PSB_MAX_VALUE); break;
		case 1: app->bench.repeat = psb_cli_u64("repeat", v, 1, UINT64_MAX); break;
		case 2:
			app->bench.mode = psb_bench_mode_parse(v);
			if (app->bench.mode < 0)
				psb_die("mode: expected 0-3, got '%s'", v);
			break;
		default: psb_die("unexpected argument '%s' (EAL options go after --)", v);
		}
	}
	/* given, --duration overrides the document's pushpull.duration / serve.duration */
	if (duration_given && app->node_role == PSB_NODE_WORKER)
		app->bench.max_time_ns = duration_ns;
	else if (duration_given)
		app->duration_ns = duration_ns;
	if ((app->bench.len & 3) != 0)
		psb_die("len: %u is not a multiple of 4 (values are float32 arrays)", app->bench.len);
	if (app->verbose >= 2)
		app->bench.log_every_ns = app->bench.log_every_ns ? app->bench.log_every_ns : 1000000000ull;
}

/* An experiment document's node and experiment into the options (before the command line). */
static void
conf_to_app(struct psb_app *app, struct run_opts *ro, const struct psb_exp_conf *c)
{
	const struct psb_exp_node *n = &c->node;
	char err[256];
	uint32_t i;

	app->node_role = (enum psb_node_role)n->role;
	app->nports = 0;
	for (i = 0; i < n->ports.n; i++) {
		if (psb_port_parse(n->ports.v[i], app->nports, &app->specs[app->nports], err,
				sizeof(err)) != 0)
			psb_die("node.ports[%u]: %s", i, err);
		app->nports++;
	}
	app->me.ip = n->ip;
	if (n->mac[0] != '\0') {
		if (psb_parse_mac(n->mac, app->me.mac) != 0)
			psb_die("node.mac: expected XX:XX:XX:XX:XX:XX, got \"%s\"", n->mac);
		app->mac_given = 1;
	}
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
	snprintf(ro->lcores, sizeof(ro->lcores), "%s", n->lcores);
	ro->eal.lcores = ro->lcores;
	if (n->mem_mb != 0) {
		ro->eal.mem_mb = n->mem_mb;
		ro->mem_given = 1;
	}
	ro->mbufs = n->mbufs;
	ro->eal.force_huge = n->huge == PSB_EXP_HUGE_YES;
	ro->eal.force_no_huge = n->huge == PSB_EXP_HUGE_NO;
	app->yield_ns = n->yield;
	app->connect_timeout_ns = n->connect_timeout;
	app->heartbeat_ns = n->heartbeat;
	app->dead_after_ns = n->dead_after;
	app->keep_serving = n->keep_serving;
	if (n->file_prefix[0] != '\0') {
		snprintf(ro->prefix, sizeof(ro->prefix), "%s", n->file_prefix);
		ro->eal.file_prefix = ro->prefix;
	}
	app->bench.len = (uint32_t)c->pushpull.len;
	app->bench.repeat = c->pushpull.repeat;
	app->bench.mode = c->pushpull.mode;
	app->bench.keys_per_server = (uint32_t)c->pushpull.keys;
	app->bench.window_bytes = c->pushpull.window;
	app->bench.batch = (uint32_t)c->pushpull.batch;
	app->bench.max_time_ns = c->pushpull.duration;
	app->bench.warmup = c->pushpull.warmup;
	app->bench.timeout_ns = c->pushpull.timeout;
	app->bench.max_retries = (uint32_t)c->pushpull.max_retries;
	app->bench.verify = c->pushpull.verify;
	app->bench.rate_bps = c->pushpull.rate;
	app->bench.log_every_ns = c->output.log_every;
}

/* The options in effect as an experiment document: what runs, and what results echo. */
static void
app_to_conf(const struct psb_app *app, const struct run_opts *ro, struct psb_exp_conf *c)
{
	struct psb_exp_node *n = &c->node;
	uint16_t i;

	n->role = (int)app->node_role;
	memset(&n->ports, 0, sizeof(n->ports));
	for (i = 0; i < app->nports && i < PSB_CONF_STRLIST_MAX; i++)
		snprintf(n->ports.v[i], sizeof(n->ports.v[i]), "%s", app->specs[i].spec);
	n->ports.n = app->nports;
	n->ip = app->me.ip;
	if (app->mac_given)
		snprintf(n->mac, sizeof(n->mac), "%02x:%02x:%02x:%02x:%02x:%02x", app->me.mac[0],
			 app->me.mac[1], app->me.mac[2], app->me.mac[3], app->me.mac[4],
			 app->me.mac[5]);
	n->udp_port = app->me.port;
	n->scheduler = app->sched_ip;
	n->scheduler_port = app->sched_port;
	n->server = app->static_server_ip;
	n->num_workers = app->num_workers;
	n->num_servers = app->num_servers;
	n->rank = app->rank_base;
	n->workers = app->nlocal_workers;
	n->shards = app->nshards;
	n->sync = app->sync;
	n->mtu = app->mtu_want;
	n->max_value = app->max_value;
	c->store = app->store;
	snprintf(n->lcores, sizeof(n->lcores), "%s", ro->eal.lcores != NULL ? ro->eal.lcores : "");
	n->mem_mb = ro->mem_given ? ro->eal.mem_mb : 0;
	n->mbufs = ro->mbufs;
	n->yield = app->yield_ns;
	n->connect_timeout = app->connect_timeout_ns;
	n->heartbeat = app->heartbeat_ns;
	n->dead_after = app->dead_after_ns;
	n->keep_serving = app->keep_serving;
	n->huge = ro->eal.force_huge ? PSB_EXP_HUGE_YES :
		ro->eal.force_no_huge ? PSB_EXP_HUGE_NO : PSB_EXP_HUGE_AUTO;
	snprintf(n->file_prefix, sizeof(n->file_prefix), "%s",
		 ro->eal.file_prefix != NULL ? ro->eal.file_prefix : "");
	c->kind = app->node_role == PSB_NODE_WORKER ? PSB_EXP_PUSHPULL : PSB_EXP_SERVE;
	c->pushpull.len = app->bench.len;
	c->pushpull.repeat = app->bench.repeat;
	c->pushpull.mode = app->bench.mode;
	c->pushpull.keys = app->bench.keys_per_server;
	c->pushpull.window = app->bench.window_bytes;
	c->pushpull.batch = app->bench.batch;
	c->pushpull.duration = app->bench.max_time_ns;
	c->pushpull.warmup = app->bench.warmup;
	c->pushpull.timeout = app->bench.timeout_ns;
	c->pushpull.max_retries = app->bench.max_retries;
	c->pushpull.verify = app->bench.verify;
	c->pushpull.rate = app->bench.rate_bps;
	c->output.log_every = app->bench.log_every_ns;
	/* --duration overrides the document's window; without it the document's stands */
	if (c->kind == PSB_EXP_SERVE && app->duration_ns != 0)
		c->serve.duration = app->duration_ns;
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

static void
check_config(struct psb_app *app)
{
	if (app->nports == 0)
		psb_die("no port given: use --port SPEC (e.g. --port memif:server:/run/psb.sock) "
			"or DMLC_INTERFACE");
	/* ps-lite's scheduler is where DMLC_PS_ROOT_URI says: it needs no DMLC_NODE_HOST */
	if (app->me.ip == 0 && app->node_role == PSB_NODE_SCHEDULER)
		app->me.ip = app->sched_ip;
	if (app->me.ip == 0)
		psb_die("no address given: use --ip A.B.C.D (or DMLC_NODE_HOST%s)",
			app->node_role == PSB_NODE_SCHEDULER ? ", or DMLC_PS_ROOT_URI for the "
			"scheduler" : "");
	if (app->node_role == PSB_NODE_WORKER && app->sched_ip == 0 && app->static_server_ip == 0)
		psb_die("worker: give --scheduler IP (DMLC_PS_ROOT_URI) or --server IP");
	if (app->node_role == PSB_NODE_SCHEDULER && app->sched_ip != 0 && app->sched_ip != app->me.ip)
		psb_die("scheduler: --scheduler %s differs from --ip; the scheduler runs where it is",
			"(DMLC_PS_ROOT_URI)");
	if (app->node_role == PSB_NODE_WORKER && app->rank_base + app->nlocal_workers >
	    app->num_workers && app->sched_ip == 0)
		psb_die("--rank %u with --workers %u exceeds --num-workers %u", app->rank_base,
			app->nlocal_workers, app->num_workers);
	if (app->bench.len > app->max_value && app->node_role == PSB_NODE_WORKER)
		psb_die("--len %u exceeds --max-value %u", app->bench.len, app->max_value);
}

/*
 * The store's budgets, from what the operator gave (0: derive) and the memory the process
 * may use: --mem less the pools, or else half the machine's memory less the pools. The
 * store gets three quarters, reassembly a quarter, every sender a fair share of that but
 * always room for one push of node.max_value; shards split the totals. Printed, because a
 * refused push must be explainable from the start-up lines.
 */
static void
derive_budget(struct psb_app *app, uint64_t mem_mb, uint64_t pools_mb,
		const struct psb_mem_info *mi)
{
	const struct psb_exp_store *g = &app->store;
	struct psb_store_budget *b = &app->budget;
	struct psb_kv_budget given = {
		.max_bytes = g->max_bytes, .max_keys = g->max_keys, .reasm_bytes = g->reasm_bytes,
		.reasm_sender_bytes = g->reasm_sender_bytes,
	}, eff;
	uint64_t base_mb = mem_mb != 0 ? mem_mb : mi->mem_total_mb / 2;
	const char *from = mem_mb != 0 ? "--mem " : "half the machine's ";
	char err[256], s1[32], s2[32], s3[32], s4[32];

	if (base_mb < pools_mb + 64) {
		if (mem_mb != 0)
			psb_die("--mem %llu MB leaves too little for the store after the packet "
				"pools (%llu MB): give at least %llu MB", (unsigned long long)mem_mb,
				(unsigned long long)pools_mb, (unsigned long long)(pools_mb + 64));
		base_mb = pools_mb + 64;
		from = "the packet pools plus 64 MiB: ";
	}
	/* senders may cut finer than this node's MTU: count bookkeeping at 1500 bytes */
	if (psb_kv_budget_derive(&eff, &given, (base_mb - pools_mb) * MiB, app->max_value,
			psb_seg_size_for_mtu(app->mtu_want < 1500 ? app->mtu_want : 1500),
			app->num_workers, app->nshards, err, sizeof(err)) != 0)
		psb_die("%s", err);
	b->max_bytes = eff.max_bytes;
	b->max_keys = (uint32_t)eff.max_keys;
	b->reasm_bytes = eff.reasm_bytes;
	b->reasm_sender_bytes = eff.reasm_sender_bytes;
	b->reasm_timeout_ns = g->reasm_timeout;
	if (b->max_bytes / app->nshards < (uint64_t)app->max_value * 2)
		PSB_NOTICE(main, "store.max_bytes %s holds fewer than two values of node.max_value "
			"per shard", psb_cli_fmt_size(b->max_bytes, s1, sizeof(s1)));
	PSB_INFO(main, "store budgets: %s in at most %u keys; reassembly %s, %s per sender, "
		"%.3g s to the next segment; %u packet buffers kept per shard (from %s%s)",
		psb_cli_fmt_size(b->max_bytes, s1, sizeof(s1)), b->max_keys,
		psb_cli_fmt_size(b->reasm_bytes, s2, sizeof(s2)),
		psb_cli_fmt_size(b->reasm_sender_bytes, s3, sizeof(s3)),
		b->reasm_timeout_ns / 1e9, b->hold_max,
		from, psb_cli_fmt_size(base_mb * MiB, s4, sizeof(s4)));
}

/*
 * Pause ports whose link is down, and keep a memif port paused after its peer's BYE
 * until the link went down and came back, so that the data plane never polls a port
 * while its driver connects or disconnects it; but never longer than PSB_BYE_PAUSE_NS
 * while the link stays up, for then the peer did not leave.
 */
static void
watch_links(struct psb_app *app)
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
static void
read_port_counters(struct psb_app *app, uint64_t now)
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
static void
check_links(struct psb_app *app, uint64_t now)
{
	static uint64_t next_ns = 3000000000ull;
	struct rte_eth_link link;
	uint16_t i;

	if (now < next_ns)
		return;
	next_ns = now + 10000000000ull;
	for (i = 0; i < app->nports; i++) {
		if (rte_eth_link_get_nowait(app->port_ids[i], &link) == 0 &&
		    link.link_status == RTE_ETH_LINK_DOWN)
			PSB_NOTICE(port, "port %u (%s): link is down%s", app->port_ids[i],
				app->specs[i].spec, app->specs[i].kind == PSB_PORT_MEMIF ?
				" (memif peer not connected)" : "");
	}
}

/*
 * Let traffic in flight settle before closing ports: a memif peer that is
 * still copying from shared memory when this side disconnects can fault in
 * the PMD. Discard what arrives until the ports are quiet for 20 ms (PSB_QUIESCE_NS at
 * most: the peer's pause after this node's BYE outlasts it).
 */
static void
quiesce_ports(const struct psb_app *app)
{
	struct rte_mbuf *pkts[PSB_BURST];
	uint64_t hz = rte_get_tsc_hz(), start = rte_get_tsc_cycles(), last = start;
	uint64_t most = (uint64_t)((double)PSB_QUIESCE_NS * 1e-9 * (double)hz);
	uint16_t i, n;

	while (rte_get_tsc_cycles() - last < hz / 50 && rte_get_tsc_cycles() - start < most) {
		watch_links((struct psb_app *)app);
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
}

/*
 * What the EAL (DPDK 22.11) and psb create in a runtime directory. At exit psb removes
 * these and nothing else, and the directory only when psb made it.
 */
static const char *const runtime_files[] = {
	"config", "fbarray_*", "hugepage_info", "hugepage_data", "mp_socket", "mp_socket_*",
	"dpdk_telemetry*", "psb.ctl", NULL,
};

/* <runtime base>/<prefix>: whether it exists before the EAL makes it, and not as a link. */
static void
runtime_dir_check(const char *prefix, char *dir, size_t len, int *existed)
{
	char base[PATH_MAX];
	struct stat st;

	psb_cli_runtime_base(base, sizeof(base));
	if ((size_t)snprintf(dir, len, "%s/%s", base, prefix) >= len)
		psb_die("--file-prefix: runtime directory path too long");
	*existed = lstat(dir, &st) == 0;
	if (*existed && !S_ISDIR(st.st_mode))
		psb_die("--file-prefix %s: %s is not a directory (a symbolic link?); psb will not "
			"use it", prefix, dir);
}

static void
runtime_dir_clean(const struct psb_app *app, const char *dir, int existed)
{
	char other[256];
	int rc = psb_rmdir_flat(dir, runtime_files, !existed, other, sizeof(other));

	if (rc == -ENOTEMPTY)
		PSB_NOTICE(host, "left %s in place: it holds \"%s\", which psb did not create", dir,
			other);
	else if (rc != 0)
		PSB_NOTICE(host, "cannot clean up %s: %s", dir, strerror(-rc));
	else if (existed)
		PSB_DEBUG(host, "left %s in place: it was there before psb started", dir);
}

/* Fault the pool's pages in now (without hugepages they are mapped lazily), not mid-run. */
static void
touch_mbuf(struct rte_mempool *mp, void *opaque, void *obj, unsigned int idx)
{
	struct rte_mbuf *m = obj;
	volatile uint8_t *p = m->buf_addr;
	uint32_t off;

	RTE_SET_USED(mp);
	RTE_SET_USED(opaque);
	RTE_SET_USED(idx);
	for (off = 0; off < m->buf_len; off += 4096)
		p[off] = 0;
}

static void
on_signal(int sig)
{
	(void)sig;
	g_app.quit = 1;
}

void
psb_app_fail(struct psb_app *app, const char *fmt, ...)
{
	va_list ap;

	if (__atomic_exchange_n(&app->failing, 1, __ATOMIC_ACQ_REL) != 0)
		return;		/* the first reason is the one that counts */
	va_start(ap, fmt);
	vsnprintf(app->fail_reason, sizeof(app->fail_reason), fmt, ap);
	va_end(ap);
	PSB_ERR(main, "%s", app->fail_reason);
	__atomic_store_n(&app->quit, 1, __ATOMIC_RELEASE);
}

/* The EAL's arguments, in one line (-v). */
static void
log_eal_argv(const struct psb_eal_argv *ea, int argc)
{
	char line[sizeof(ea->buf) + PSB_EAL_MAX_ARGS];
	size_t used = 0;
	int i;

	if (!PSB_LOG_ON(DEBUG, main))
		return;
	line[0] = '\0';
	for (i = 0; i < argc && used < sizeof(line); i++)
		used += (size_t)snprintf(line + used, sizeof(line) - used, " %s", ea->argv[i]);
	PSB_DEBUG(main, "EAL:%s", line);
}

/* The waits psb gives up on, and when: said at start so that a run that fails is no surprise. */
static void
log_bounds(const struct psb_app *app)
{
	uint64_t t = app->bench.timeout_ns, total = 0;
	char conn[32], req[160] = "";
	uint32_t i;

	if (app->connect_timeout_ns != 0)
		snprintf(conn, sizeof(conn), "%.1f s", app->connect_timeout_ns / 1e9);
	else
		snprintf(conn, sizeof(conn), "no limit");
	if (app->node_role == PSB_NODE_WORKER) {
		/*
		 * psb_wk: a try waits timeout << min(tries so far, 6), and at least the
		 * measured round trip, which counts up to PSB_WK_RTO_CAP times timeout
		 */
		for (i = 0; i <= app->bench.max_retries; i++)
			total += RTE_MAX(t << (i < 6 ? i : 6), PSB_WK_RTO_CAP * t);
		if (app->bench.max_retries != 0)
			snprintf(req, sizeof(req), "; a request %.0f ms doubling (at least the round "
				 "trip, up to %.0f ms), %u retries: %.1f s at most (--timeout-us, "
				 "--max-retries)", t / 1e6, PSB_WK_RTO_CAP * t / 1e6,
				 app->bench.max_retries, total / 1e9);
		else
			snprintf(req, sizeof(req), "; a request is retried forever (--max-retries 0)");
	}
	PSB_INFO(main, "waits: %s for each setup step (--connect-timeout)%s", conn, req);
	if (app->sched_ip == 0)
		return;
	if (app->node_role != PSB_NODE_SCHEDULER && app->heartbeat_ns == 0)
		PSB_INFO(main, "liveness: no heartbeats: the scheduler does not watch this node "
			"(--heartbeat 0)");
	else if (app->node_role != PSB_NODE_SCHEDULER)
		PSB_INFO(main, "liveness: a heartbeat to the scheduler every %.2f s (--heartbeat)",
			app->heartbeat_ns / 1e9);
	if (app->host_sched && app->dead_after_ns == 0)
		PSB_INFO(main, "liveness: the scheduler holds no node dead (--dead-after 0)");
	else if (app->host_sched)
		PSB_INFO(main, "liveness: a node whose heartbeats stop for %.1f s is dead "
			"(--dead-after); a dead or restarted server ends the job",
			app->dead_after_ns / 1e9);
	if (app->node_role == PSB_NODE_SERVER)
		PSB_INFO(main, "server epoch %08x: in every answer; a worker that sees it change "
			"fails the job", app->epoch);
}

/*
 * The pool a role needs. A scheduler: its descriptors and rings full at once and 4096 for
 * the per-lcore caches. Servers and workers: every ring a node could make full at once
 * (shards', workers' and two more), the caches, and the segments server shards keep until
 * their push is whole. The slack beyond their own rings matters to them: cut to its own
 * rings, a worker lost ~6 % of 1 MB PUSH_PULL goodput in paired runs.
 */
static uint64_t
role_mbufs(const struct psb_app *app)
{
	uint64_t n = (uint64_t)app->nports * 2 * NB_DESC + psb_role_ring(&psb_role_tx, app) + 4096;

	if (app->node_role == PSB_NODE_SCHEDULER)
		return n + psb_role_ring(&psb_role_scheduler, app);
	return n + (uint64_t)(app->nshards + app->nlocal_workers + 2) * PSB_ROLE_RING +
		(uint64_t)app->budget.hold_max * app->nshards;
}

static struct rte_ring *
make_ring(const char *name, int idx, unsigned int size, unsigned int flags)
{
	char n[RTE_RING_NAMESIZE];
	struct rte_ring *r;

	snprintf(n, sizeof(n), "psb_%s%d", name, idx);
	r = rte_ring_create(n, size, (int)rte_socket_id(), flags);
	if (r == NULL)
		psb_die("cannot create ring %s: %s", n, rte_strerror(rte_errno));
	return r;
}

/*
 * The roles this process runs: every role of psb_roles[] as many times as its count()
 * says, in table order, each with its input ring; the roles that claim traffic become
 * psb_dispatch's routes.
 */
static int
plan_roles(struct psb_app *app)
{
	const struct psb_role *const *rp;
	unsigned int n = 0, k;
	struct psb_role_inst *r;

	app->nroles = 0;
	for (rp = psb_roles; *rp != NULL; rp++)
		app->nroles += psb_role_count(*rp, app);
	if (app->nroles > PSB_MAX_ROLES)
		psb_die("%u roles planned, at most %d", app->nroles, PSB_MAX_ROLES);
	app->roles = rte_zmalloc("psb_roles", app->nroles * sizeof(*app->roles), RTE_CACHE_LINE_SIZE);
	if (app->roles == NULL)
		return -ENOMEM;
	r = app->roles;
	app->nroutes = 0;
	for (rp = psb_roles; *rp != NULL; rp++) {
		unsigned int count = psb_role_count(*rp, app);
		unsigned int ring = psb_role_ring(*rp, app);

		if (count == 0)
			continue;
		if ((*rp)->claim != NULL) {
			RTE_VERIFY(app->nroutes < PSB_ROLE_KINDS && ring != 0);
			app->routes[app->nroutes].role = *rp;
			app->routes[app->nroutes++].first = &r[n];
		}
		for (k = 0; k < count; k++, n++) {
			r[n].role = *rp;
			r[n].idx = (int)k;
			r[n].app = app;
			if (ring != 0)
				r[n].ring = make_ring((*rp)->name, (int)k, ring, RING_F_SC_DEQ);
		}
		if (*rp == &psb_role_tx)
			app->tx_ring = r[n - 1].ring;
	}
	app->host_sched = psb_role_count(&psb_role_scheduler, app) != 0;
	return 0;
}

/* Lcore body: poll the roles placed on this lcore until told to quit. */
struct lcore_plan {
	uint64_t pass;
	uint64_t last_yield;		/* TSC */
	uint64_t yields;
	uint64_t yield_cycles;
	unsigned int nroles;
	struct psb_role_inst *roles[PSB_MAX_ROLES];
};

static struct lcore_plan g_plan[RTE_MAX_LCORE];

/*
 * One pass over the roles of an lcore. Reading the TSC costs tens of cycles
 * on virtual machines, so busy/idle cycles are sampled: one pass in
 * CYCLE_SAMPLE is timed per role and counted CYCLE_SAMPLE times.
 */
#define CYCLE_SAMPLE	16

/* A control request waiting in a role's mailbox: carry it out on this lcore. */
static void
role_ctl(struct psb_role_inst *ri)
{
	struct psb_role_mbox *mb = &ri->mbox;
	uint32_t req = __atomic_load_n(&mb->req, __ATOMIC_ACQUIRE);

	if (mb->op == PSB_OP_RESET)
		memset(&ri->cnt, 0, sizeof(ri->cnt));
	mb->rc = ri->role->ctl != NULL ? ri->role->ctl(ri, mb->op, mb->arg) : 0;
	__atomic_store_n(&mb->ack, req, __ATOMIC_RELEASE);
}

static inline void
check_mboxes(struct lcore_plan *lp)
{
	unsigned int i;

	for (i = 0; i < lp->nroles; i++)
		if (unlikely(lp->roles[i]->mbox.req != lp->roles[i]->mbox.ack))
			role_ctl(lp->roles[i]);
}

static inline int
poll_once(struct lcore_plan *lp)
{
	unsigned int i;
	int work = 0;

	check_mboxes(lp);
	if (unlikely(++lp->pass % CYCLE_SAMPLE == 0)) {
		uint64_t t0 = rte_rdtsc(), t1;

		for (i = 0; i < lp->nroles; i++) {
			struct psb_role_inst *ri = lp->roles[i];
			int n = ri->role->poll(ri);

			t1 = rte_rdtsc();
			if (n > 0)
				ri->cnt.busy_cycles += (t1 - t0) * CYCLE_SAMPLE;
			else
				ri->cnt.idle_cycles += (t1 - t0) * CYCLE_SAMPLE;
			ri->cnt.polls++;
			t0 = t1;
			work += n;
		}
		return work;
	}
	for (i = 0; i < lp->nroles; i++) {
		struct psb_role_inst *ri = lp->roles[i];

		work += ri->role->poll(ri);
		ri->cnt.polls++;
	}
	return work;
}

/*
 * A poll-mode lcore never sleeps, so on a CPU it shares (with other lcores, psbctl, a
 * scraper, a shell) a thread that wakes up would wait for the kernel's next tick, up to
 * 4 ms at HZ=250, before it runs. Yielding every --yield lets it run at once; with nobody
 * waiting, sched_yield() returns straight away. The time a yield took beyond that is CPU
 * the lcore gave to others, and it is counted.
 */
static inline void
maybe_yield(struct lcore_plan *lp)
{
	uint64_t t0 = rte_rdtsc(), t1;

	if (g_app.yield_tsc == 0 || t0 - lp->last_yield < g_app.yield_tsc)
		return;
	sched_yield();
	t1 = rte_rdtsc();
	lp->last_yield = t1;
	lp->yields++;
	lp->yield_cycles += t1 - t0;
}

static int
lcore_main(void *arg)
{
	struct lcore_plan *lp = arg;
	unsigned int k;

	while (!g_app.stop_lcores) {
		for (k = 0; k < 64; k++)
			poll_once(lp);
		maybe_yield(lp);
	}
	return 0;
}

void
psb_lcores_yielded(uint64_t *yields, uint64_t *cycles)
{
	unsigned int i;

	*yields = 0;
	*cycles = 0;
	for (i = 0; i < RTE_MAX_LCORE; i++) {
		*yields += g_plan[i].yields;
		*cycles += g_plan[i].yield_cycles;
	}
}

void
psb_main_poll_roles(struct psb_app *app)
{
	unsigned int k;

	if (app->nworker_lcores == 0)
		for (k = 0; k < 64; k++)
			poll_once(&g_plan[rte_get_main_lcore()]);
}

int
psb_roles_call(struct psb_app *app, const struct psb_role *role, int op, const void *arg)
{
	uint64_t hz = rte_get_tsc_hz(), t0 = rte_get_tsc_cycles();
	uint16_t i, pending;
	int rc = 0;

	for (i = 0; i < app->nroles; i++) {
		struct psb_role_inst *ri = &app->roles[i];

		if (role != NULL && ri->role != role)
			continue;
		ri->mbox.op = op;
		ri->mbox.arg = arg;
		ri->mbox.rc = 0;
		__atomic_store_n(&ri->mbox.req, ri->mbox.req + 1, __ATOMIC_RELEASE);
	}
	do {
		pending = 0;
		for (i = 0; i < app->nroles; i++) {
			struct psb_role_inst *ri = &app->roles[i];

			if (role != NULL && ri->role != role)
				continue;
			if (__atomic_load_n(&ri->mbox.ack, __ATOMIC_ACQUIRE) != ri->mbox.req)
				pending++;
			else if (ri->mbox.rc != 0 && rc == 0)
				rc = ri->mbox.rc;
		}
		if (pending == 0)
			return rc;
		if (app->nworker_lcores == 0)
			check_mboxes(&g_plan[rte_get_main_lcore()]);
		else
			rte_delay_us_sleep(20);
	} while (rte_get_tsc_cycles() - t0 < 2 * hz);
	return -ETIMEDOUT;
}

static uint64_t
total_rx(const struct psb_app *app)
{
	uint64_t n = 0;
	uint16_t i;

	for (i = 0; i < app->nroles; i++)
		if (app->roles[i].role == &psb_role_rx)
			n += app->roles[i].cnt.rx_pkts;
	return n;
}

/* Housekeeping done by the main lcore: exit conditions. */
#define FINALIZE_WAIT_NS	2000000000ull

/*
 * A worker registered with a scheduler tells it, before it exits, that it finished (the
 * worker roles send FINALIZE until acknowledged): once every worker of the job did, the
 * scheduler ends the servers and itself. 1 while that goes on, FINALIZE_WAIT_NS at most.
 */
static int
finalize_pending(struct psb_app *app)
{
	uint64_t now;
	char ip[20];

	if (app->node_role != PSB_NODE_WORKER || app->sched_ip == 0 || app->finalize_done ||
	    __atomic_load_n(&app->wk_registered, __ATOMIC_ACQUIRE) == 0)
		return 0;
	now = psb_now_ns(app);
	if (!app->finalizing) {
		app->finalize_start_ns = now;
		__atomic_store_n(&app->finalizing, 1, __ATOMIC_RELEASE);
	}
	if (__atomic_load_n(&app->finalized, __ATOMIC_ACQUIRE) >=
	    __atomic_load_n(&app->wk_registered, __ATOMIC_ACQUIRE)) {
		app->finalize_done = 1;
		PSB_DEBUG(main, "scheduler %s:%u acknowledged that the worker(s) finished",
			psb_ip_str(app->sched_ip, ip), app->sched_port);
		return 0;
	}
	if (now - app->finalize_start_ns < FINALIZE_WAIT_NS)
		return 1;
	app->finalize_done = 1;
	PSB_NOTICE(main, "scheduler %s:%u did not acknowledge that the worker(s) finished (FINALIZE) "
		"within %.0f s; exiting all the same", psb_ip_str(app->sched_ip, ip),
		app->sched_port, FINALIZE_WAIT_NS / 1e9);
	return 0;
}

static void
check_exit(struct psb_app *app, int console_on, uint64_t now, uint64_t *last_rx,
		uint64_t *last_rx_ns)
{
	uint64_t rx = total_rx(app);

	/*
	 * psb given an experiment to run (a worker command line, --config, a command file)
	 * lives as long as it; one started to take commands stays until told to quit.
	 */
	if ((app->autostart || app->cmdline_file != NULL) && !app->stay && !app->interactive &&
	    !console_on && app->run.id != 0 && !psb_run_active(app))
		app->quit = 1;
	if (app->duration_ns != 0 && now >= app->duration_ns)
		app->quit = 1;
	if (app->idle_exit_ns != 0) {
		if (rx != *last_rx) {
			*last_rx = rx;
			*last_rx_ns = now;
		} else if (now - *last_rx_ns >= app->idle_exit_ns) {
			app->quit = 1;
		}
	}
}

int
main(int argc, char **argv)
{
	struct psb_app *app = &g_app;
	struct run_opts ro;
	struct psb_mem_info mi;
	struct psb_eal_argv ea;
	char err[512], rt_dir[PATH_MAX];
	uint64_t need_mb, nmbufs, last_rx = 0, last_rx_ns = 0, file_max;
	int console_on = 0, rt_existed = 0, huge_fd;
	char auto_lcores[16];
	uint64_t log_mark;
	unsigned int lcore, nworker_lcores = 0, i, k;
	unsigned int worker_lcores[RTE_MAX_LCORE];
	int rc, eal_argc, exit_code = 0;
	const char *cfg;

	memset(&ro, 0, sizeof(ro));
	app->node_role = PSB_NODE_SERVER;
	app->me.port = PSB_UDP_PORT;
	app->sched_port = PSB_SCHED_PORT;
	app->num_workers = 1;
	app->num_servers = 1;
	app->nshards = 1;
	app->nlocal_workers = 1;
	app->yield_ns = 200000;
	app->sync = 1;
	app->mtu_want = 0;	/* the port's own: see psb_host_port_mtu */
	app->connect_timeout_ns = 60ull * 1000000000;
	app->heartbeat_ns = 500ull * 1000000;
	app->dead_after_ns = 3ull * 1000000000;
	app->max_value = 64u << 20;
	app->bench.len = 1024000;
	app->bench.repeat = 10;
	app->bench.mode = PSB_BENCH_PUSH_PULL;
	app->bench.keys_per_server = 40;
	app->bench.batch = 1024;
	app->bench.timeout_ns = 20ull * 1000 * 1000;
	app->bench.max_retries = 50;
	app->bench.log_every_ns = 1000000000ull;
	app->counters_every_ns = 1000000000ull;
	app->counters_max = 64ull << 20;
	app->run.counters.fd = -1;
	if (getcwd(app->results_root, sizeof(app->results_root)) == NULL)
		app->results_root[0] = '\0';	/* then relative to wherever psb runs */
	pthread_mutex_init(&app->ctl_lock, NULL);
	file_max = file_max_opt(argc, argv);
	if ((cfg = find_opt(argc, argv, "--check-config")) != NULL)
		return check_config_file(cfg, file_max);
	/* defaults of a document, then the document, then the command line */
	if (psb_conf_parse_string(psb_exp_table, &app->conf, "{\"name\": \"cli\", \"kind\": "
			"\"pushpull\"}", "", err, sizeof(err)) != 0)
		psb_die("internal: %s", err);
	app->store = app->conf.store;
	if ((cfg = find_opt(argc, argv, "--config")) != NULL) {
		if (psb_exp_load_file(&app->conf, cfg, file_max, true, err, sizeof(err)) != 0)
			psb_die("%s%s%s", strncmp(err, cfg, strlen(cfg)) == 0 ? "" : cfg,
				strncmp(err, cfg, strlen(cfg)) == 0 ? "" : ": ", err);
		conf_to_app(app, &ro, &app->conf);
		ro.config = cfg;
	} else {
		apply_env(app);
	}
	parse_args(app, &ro, argc, argv);
	psb_log_start(app->quiet, app->verbose);
	if (find_opt(argc, argv, "--file-max") != NULL)
		app->conf.node.file_max = file_max;
	check_config(app);
	app_to_conf(app, &ro, &app->conf);
	if (app->node_role == PSB_NODE_SERVER)
		app->epoch = psb_epoch_new();
	if (psb_exp_check(&app->conf, true, err, sizeof(err)) != 0)
		psb_die("%s", err);
	/* a document runs at once unless a console or --wait is to start things */
	app->autostart = !app->interactive && app->cmdline_file == NULL && !app->stay &&
		(ro.config != NULL || app->node_role == PSB_NODE_WORKER);
	if (ro.config != NULL && app->autostart &&
	    psb_exp_results_claim(app->results_root, &app->conf, err, sizeof(err)) != 0)
		psb_die("%s: %s", cfg, err);
	app->worker_port_base = (uint16_t)(app->me.port + 2);
	if (app->sched_port >= app->worker_port_base &&
	    app->sched_port < app->worker_port_base + app->nlocal_workers)
		psb_die("scheduler port %u collides with worker ports %u-%u", app->sched_port,
			app->worker_port_base, app->worker_port_base + app->nlocal_workers - 1);

	/* Pool: what this role's rings, descriptors and held segments can hold (role_mbufs) */
	psb_mem_probe(&mi);
	if (app->node_role == PSB_NODE_SERVER)
		app->budget.hold_max = HOLD_PER_SHARD;
	nmbufs = ro.mbufs != 0 ? ro.mbufs : role_mbufs(app);
	if (ro.mbufs != 0 && app->budget.hold_max * app->nshards > nmbufs / 4)
		app->budget.hold_max = (uint32_t)(nmbufs / 4 / app->nshards);
	need_mb = (nmbufs * (MBUF_ROOM + MBUF_PRIV + 256) >> 20) + 16;
	if (ro.mem_given && ro.eal.mem_mb < need_mb)
		psb_die("--mem %llu MB cannot hold the packet pool: %llu mbufs of %u bytes need %llu MB "
			"(give more --mem, or fewer --mbufs)", (unsigned long long)ro.eal.mem_mb,
			(unsigned long long)nmbufs, (unsigned int)MBUF_ROOM,
			(unsigned long long)need_mb);
	if (app->node_role == PSB_NODE_SERVER)
		derive_budget(app, ro.mem_given ? ro.eal.mem_mb : 0, need_mb + 64, &mi);
	/* the EAL gets what its pools need; the rest of --mem is the store's */
	ro.eal.mem_mb = need_mb + 64;

	/* before the EAL: what can be checked is, and what a killed psb left is undone */
	psb_host_prepare(app, ro.config != NULL);
	psb_host_cpus(app, &ro.eal.lcores, auto_lcores, sizeof(auto_lcores));
	snprintf(app->conf.node.lcores, sizeof(app->conf.node.lcores), "%s", ro.eal.lcores);
	/* psb processes starting together: each sees the hugepages the ones before it took */
	huge_fd = psb_host_huge_lock(app, ro.eal.force_no_huge);
	psb_mem_probe(&mi);
	ro.eal.n_log_levels = psb_log_eal_args(&ro.eal.log_levels);
	eal_argc = psb_eal_build_argv(argv[0], &ro.eal, app->specs, app->nports, &mi, &ea, err,
		sizeof(err));
	if (eal_argc < 0)
		psb_die("%s", err);
	log_eal_argv(&ea, eal_argc);
	PSB_DEBUG(main, "%s, %llu MB for %llu mbufs", ea.use_huge ? "hugepages" : "no hugepages",
		(unsigned long long)ro.eal.mem_mb, (unsigned long long)nmbufs);
	runtime_dir_check(ea.prefix, rt_dir, sizeof(rt_dir), &rt_existed);
	log_mark = psb_log_mark();
	if (psb_eal_init(eal_argc, ea.argv, err, sizeof(err)) != 0)
		psb_die("EAL initialisation failed: %s (EAL arguments: psb -v shows them)", err);
	psb_host_unlock(huge_fd);
	psb_host_ports_up(app);

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);	/* its terminal went away: end as for Ctrl-C */
	signal(SIGPIPE, SIG_IGN);
	app->ns_per_tsc = 1e9 / (double)rte_get_tsc_hz();
	app->yield_tsc = (uint64_t)((double)app->yield_ns / app->ns_per_tsc);
	app->start_tsc = rte_get_tsc_cycles();
	psb_agg_add(NULL, NULL, 0);	/* pick the aggregation kernel now, not on the fast path */
	if ((rc = psb_guard_init()) != 0)
		psb_die("cannot install the fault handler of memif bursts: %s", strerror(-rc));

	app->pool = rte_pktmbuf_pool_create("psb_pool", (unsigned int)nmbufs, 256, MBUF_PRIV,
		MBUF_ROOM, (int)rte_socket_id());
	if (app->pool == NULL)
		psb_die("cannot create a pool of %llu mbufs (%llu MB): %s; give more --mem",
			(unsigned long long)nmbufs, (unsigned long long)need_mb, rte_strerror(rte_errno));

	rte_mempool_obj_iter(app->pool, touch_mbuf, NULL);

	for (i = 0; i < app->nports; i++) {
		struct psb_ethdev_info info;
		unsigned int flags;
		uint16_t pid, mtu;
		uint64_t mark;
		char why[320];

		if (rte_eth_dev_get_port_by_name(app->specs[i].name, &pid) != 0) {
			if (psb_log_quote(log_mark, app->specs[i].name, err, sizeof(err)) == 0)
				psb_die("port '%s': device %s did not come up: %s", app->specs[i].spec,
					app->specs[i].name, err);
			psb_die("port '%s': device %s did not come up (is its driver installed? "
				"see scripts/setup.sh)", app->specs[i].spec, app->specs[i].name);
		}
		mtu = psb_host_port_mtu(app, i, &flags);
		mark = psb_log_mark();
		if (psb_ethdev_setup(pid, mtu, flags, NB_DESC, app->pool, &info, err,
				sizeof(err)) != 0) {
			/* the driver's own line says why (e.g. no memif server on the socket) */
			if (psb_log_quote(mark, NULL, why, sizeof(why)) == 0)
				psb_die("port '%s': %s: %s", app->specs[i].spec, err, why);
			psb_die("port '%s': %s", app->specs[i].spec, err);
		}
		app->port_ids[i] = pid;
		app->port_shared[pid] = app->specs[i].kind == PSB_PORT_MEMIF;
		if (app->specs[i].kind == PSB_PORT_AF_PACKET &&
		    psb_afp_stats_open(&app->afp[i], strchr(app->specs[i].spec, ':') + 1, err,
				sizeof(err)) != 0)
			PSB_NOTICE(port, "port '%s': no kernel counts of its socket: %s",
				app->specs[i].spec, err);
		if (i == 0 || info.mtu < app->mtu)
			app->mtu = info.mtu;
		PSB_DEBUG(port, "port %u: %s (%s), MTU %u", pid, app->specs[i].spec, info.driver,
			info.mtu);
	}
	if (!app->mac_given) {
		struct rte_ether_addr ea0;

		rte_eth_macaddr_get(app->port_ids[0], &ea0);
		memcpy(app->me.mac, ea0.addr_bytes, 6);
	}
	app->seg_size = psb_seg_size_for_mtu(app->mtu);
	app->soft_ports = 1;
	for (i = 0; i < app->nports; i++)
		if (app->specs[i].kind == PSB_PORT_PCI)
			app->soft_ports = 0;
	app->parse.my_ip = app->me.ip;
	app->parse.psb_port = 0;	/* ports are routed in psb_dispatch */
	app->parse.check_ip_csum = 1;

	if (plan_roles(app) != 0)
		psb_die("out of memory");

	for (i = 0; i < app->nroles; i++) {
		struct psb_role_inst *ri = &app->roles[i];

		if (ri->role->init != NULL && (rc = ri->role->init(ri)) != 0)
			psb_die("role %s: init failed: %s%s", ri->role->name, strerror(-rc),
				rc == -ENOMEM ? " (DPDK's memory is short: give more --mem)" : "");
	}

	/* Placement: one role per worker lcore when there are enough, else share. */
	RTE_LCORE_FOREACH_WORKER(lcore)
		worker_lcores[nworker_lcores++] = lcore;
	for (i = 0; i < app->nroles; i++) {
		unsigned int lc = nworker_lcores == 0 ? rte_get_main_lcore() :
			worker_lcores[i % nworker_lcores];
		struct lcore_plan *lp = &g_plan[lc];

		app->roles[i].lcore = lc;
		lp->roles[lp->nroles++] = &app->roles[i];
	}
	PSB_INFO(main, "%s %s, %u role(s) on %u lcore(s)%s, MTU %u, segment %u B",
		app->node_role == PSB_NODE_SERVER ? "server" :
		app->node_role == PSB_NODE_WORKER ? "worker" : "scheduler",
		psb_ip_str(app->me.ip, err), app->nroles,
		nworker_lcores == 0 ? 1 : nworker_lcores,
		nworker_lcores == 0 ? " (run to completion)" : "", app->mtu, app->seg_size);
	log_bounds(app);
	/*
	 * The control socket appears once the ports run: scripts may take it as the sign that
	 * this node is ready (a memif client that connects to a server whose port has not
	 * started yet is not taken and does not try again).
	 */
	if (app->ctl_path == NULL || strcmp(app->ctl_path, "none") != 0) {
		char path[PATH_MAX];

		if (app->ctl_path == NULL)
			snprintf(path, sizeof(path), "%s/psb.ctl", rte_eal_get_runtime_dir());
		else
			snprintf(path, sizeof(path), "%s", app->ctl_path);
		if (psb_ctl_sock_init(app, path, err, sizeof(err)) != 0)
			psb_die("%s", err);
		PSB_DEBUG(ctl, "control socket %s", path);
	}
	app->nworker_lcores = nworker_lcores;
	watch_links(app);
	for (k = 0; k < nworker_lcores; k++)
		if (g_plan[worker_lcores[k]].nroles != 0)
			rte_eal_remote_launch(lcore_main, &g_plan[worker_lcores[k]], worker_lcores[k]);

	if (psb_export_init(app, err, sizeof(err)) != 0) {
		PSB_ERR(export, "%s", err);
		app->quit = 1;
		exit_code = 2;
	}
	if (!app->quit)
		psb_ctl_limits_log(app);
	if (!app->quit && app->autostart &&
	    psb_run_start(app, &app->conf, ro.config != NULL, err, sizeof(err)) != 0) {
		PSB_ERR(run, "%s", err);
		app->quit = 1;
		exit_code = 2;
	}
	if (!app->quit && (app->interactive || app->cmdline_file != NULL)) {
		if (psb_console_init(app, app->cmdline_file, app->interactive) != 0) {
			app->quit = 1;
			exit_code = 2;
		} else {
			console_on = 1;
		}
	}
	while (!app->quit || finalize_pending(app)) {
		uint64_t now = psb_now_ns(app), cp0;

		if (nworker_lcores == 0) {
			/*
			 * Run to completion: the main lcore polls all roles, and looks at the
			 * control plane every 200 us.
			 */
			struct lcore_plan *lp = &g_plan[rte_get_main_lcore()];
			uint64_t t0 = rte_rdtsc(), lim = rte_get_tsc_hz() / 5000;
			int work = 0;

			do {
				for (k = 0; k < 64; k++)
					work += poll_once(lp);
			} while (rte_rdtsc() - t0 < lim && !app->quit);
			maybe_yield(lp);
			/*
			 * A scheduler has a few messages per job to answer: idle, it sleeps up to
			 * 1 ms at a time (in the control sockets' poll) and leaves the CPU it
			 * shares to the servers and workers of its host.
			 */
			psb_ctl_sock_poll(app, app->node_role == PSB_NODE_SCHEDULER && work == 0);
		} else {
			psb_ctl_sock_poll(app, 1);
		}
		cp0 = rte_rdtsc();
		if (console_on && psb_console_poll(app)) {
			console_on = 0;
			if (app->interactive)
				app->quit = 1;
		}
		psb_run_poll(app, now);
		psb_export_poll(app, now);
		check_exit(app, console_on, now, &last_rx, &last_rx_ns);
		watch_links(app);
		check_links(app, now);
		read_port_counters(app, now);
		app->cp.main_cycles += rte_rdtsc() - cp0;
	}
	/* the experiment ends with the process: stopped, its results written */
	psb_run_fini(app);
	if (console_on)
		psb_console_fini(app);
	psb_export_fini(app);
	psb_ctl_sock_fini(app);
	psb_counters_fini();
	app->stop_lcores = 1;
	rte_eal_mp_wait_lcore();

	if ((app->run.state == PSB_RUN_FAILED || app->fail_reason[0] != '\0') && exit_code == 0)
		exit_code = 1;
	psb_report_print(app, stdout);
	if (app->stats_file != NULL && psb_report_write_json(app, app->stats_file) != 0) {
		PSB_NOTICE(main, "cannot write %s", app->stats_file);
		exit_code = 1;
	}
	for (i = 0; i < app->nroles; i++) {
		struct psb_role_inst *ri = &app->roles[i];

		if (ri->role->fini != NULL)
			ri->role->fini(ri);
	}
	psb_send_bye(app);
	quiesce_ports(app);
	for (i = 0; i < app->nports; i++)
		psb_ethdev_close(app->port_ids[i]);
	psb_host_restore(app);
	for (i = 0; i < app->nports; i++)
		if (app->specs[i].kind == PSB_PORT_MEMIF && app->specs[i].memif_server)
			unlink(app->specs[i].sock_path);
	/*
	 * The memif driver finishes a link's teardown on DPDK's interrupt thread, which may
	 * still be at it when its memory goes in rte_eal_cleanup(): give it a moment first.
	 */
	for (i = 0; i < app->nports; i++)
		if (app->specs[i].kind == PSB_PORT_MEMIF) {
			rte_delay_us_sleep(100000);
			break;
		}
	psb_guard_exiting(exit_code);
	snprintf(rt_dir, sizeof(rt_dir), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
	runtime_dir_clean(app, rt_dir, rt_existed);
	if (ea.use_huge && ea.single_file)
		psb_huge_cleanup(ea.prefix);
	return exit_code;
}
