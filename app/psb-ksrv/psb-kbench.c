/* psb-kbench: ps-lite's test_benchmark over the kernel-socket client (the baseline transport). */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "psb_cli.h"
#include "psb_client.h"
#include "psb_udp.h"

#define MAX_WORKERS	1024	/* as psb_kv: ranks 0..1023 */

struct opts {
	const char *server;
	const char *sched;
	const char *local_ip;
	uint16_t rank;
	int rank_given;
	uint16_t num_workers;
	int sync;
	uint32_t keys;
	uint16_t seg_size;
	int verify;
	const char *results;
	uint64_t window_bytes;
	uint32_t batch;
	uint64_t timeout_ns;		/* 0: from the bytes in flight */
	uint32_t max_retries;
	uint64_t duration_ns;
	uint64_t log_every_ns;
	uint64_t busy_poll_ns;
	int quiet;
	int check;			/* --check: pull and compare instead of benchmarking */
	float check_sum;
	int64_t check_version;		/* -1: not checked */
	uint32_t len;
	uint64_t repeat;
	int mode;
};

static void
usage(FILE *out)
{
	fprintf(out,
"usage: psb-kbench --server IP[:PORT] [options] [len [repeat [mode]]]\n"
"\n"
"ps-lite's test_benchmark against a psb server (psb or psb-ksrv) over kernel UDP\n"
"sockets, or shared memory to a psb on this host (PSB_TRANSPORT=auto|shm|udp);\n"
"prints the same result lines as psb --role worker.\n"
"\n"
"  --server IP[:PORT]    the server (port default %u)\n"
"  --scheduler IP[:PORT] register with a scheduler instead (rank and servers from it)\n"
"  --rank R              this worker's rank (default 0)\n"
"  --num-workers N       workers in the job, for checking sums (default 1)\n"
"  --sync | --async      synchronous rounds (default) or asynchronous updates\n"
"  --keys N              keys per server (default 40)\n"
"  --seg-size N          value bytes per datagram (default 1432 = MTU 1500)\n"
"  --verify              check every pulled value (sync: exact sums)\n"
"  --results FILE        write the result as JSON\n"
"  --window-bytes N      value bytes in flight (default 8 MiB)\n"
"  --batch BYTES         send values up to BYTES as records of BATCH messages\n"
"                        (default 1024, as psb's worker; 0: one datagram per request)\n"
"  --timeout-us N        resend a request unanswered this long (default: 20000, or\n"
"                        16 ns per byte in flight when more: kernel UDP is slow)\n"
"  --max-retries N       then fail it (default 50; 0 = forever)\n"
"  --duration SECONDS    stop after this long\n"
"  --log-every SECONDS   progress line period (default 1; 0 = none)\n"
"  --busy-poll-us N      spin this long before sleeping in poll() (default 50)\n"
"  --local-ip A.B.C.D    address to send from\n"
"  --check SUM           no benchmark: pull every key once (len bytes) and check that\n"
"                        every element equals SUM (e.g. after async PUSH_ONLY runs)\n"
"  --check-version N     with --check: also that the key's version (async: pushes\n"
"                        applied; sync: rounds closed) is N\n"
"  -q, --quiet           only results and errors\n"
"  --version             psb-kbench's version and the git revision it was built from\n"
"  -h, --help\n"
"\n"
"  len     value bytes per key, a multiple of 4 (default 1024000)\n"
"  repeat  iterations (default 10)\n"
"  mode    0 PUSH_THEN_PULL, 1 PUSH_PULL, 2 PUSH_ONLY, 3 PULL_ONLY (default 1)\n",
		PSB_UDP_PORT);
}

/* "IP[:PORT]" -> dotted quad in buf (>= 16 bytes) and port (left alone when absent). */
static void
split_host_port(const char *opt, const char *v, char *buf, uint16_t *port)
{
	uint32_t ip;

	psb_cli_host_port(opt, v, &ip, port);
	psb_ip_str(ip, buf);
}

enum {
	OPT_SERVER = 256, OPT_SCHED, OPT_RANK, OPT_NUM_WORKERS, OPT_SYNC, OPT_ASYNC, OPT_KEYS,
	OPT_SEG_SIZE, OPT_VERIFY, OPT_RESULTS, OPT_WINDOW, OPT_TIMEOUT, OPT_RETRIES, OPT_DURATION,
	OPT_LOG_EVERY, OPT_BUSY_POLL, OPT_LOCAL_IP, OPT_CHECK, OPT_CHECK_VERSION, OPT_BATCH,
};

static const struct option long_opts[] = {
	{ "server", required_argument, NULL, OPT_SERVER },
	{ "scheduler", required_argument, NULL, OPT_SCHED },
	{ "rank", required_argument, NULL, OPT_RANK },
	{ "num-workers", required_argument, NULL, OPT_NUM_WORKERS },
	{ "sync", no_argument, NULL, OPT_SYNC },
	{ "async", no_argument, NULL, OPT_ASYNC },
	{ "keys", required_argument, NULL, OPT_KEYS },
	{ "seg-size", required_argument, NULL, OPT_SEG_SIZE },
	{ "verify", no_argument, NULL, OPT_VERIFY },
	{ "results", required_argument, NULL, OPT_RESULTS },
	{ "window-bytes", required_argument, NULL, OPT_WINDOW },
	{ "batch", required_argument, NULL, OPT_BATCH },
	{ "timeout-us", required_argument, NULL, OPT_TIMEOUT },
	{ "max-retries", required_argument, NULL, OPT_RETRIES },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "log-every", required_argument, NULL, OPT_LOG_EVERY },
	{ "busy-poll-us", required_argument, NULL, OPT_BUSY_POLL },
	{ "local-ip", required_argument, NULL, OPT_LOCAL_IP },
	{ "check", required_argument, NULL, OPT_CHECK },
	{ "check-version", required_argument, NULL, OPT_CHECK_VERSION },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	PSB_CLI_VERSION_OPTION,
	{ NULL, 0, NULL, 0 },
};

static void
parse_args(struct opts *o, int argc, char **argv)
{
	int c, npos = 0;

	memset(o, 0, sizeof(*o));
	o->num_workers = 1;
	o->sync = 1;
	o->keys = 40;
	o->batch = 4096;	/* psb's default */
	o->seg_size = PSB_CLIENT_SEG_SIZE;
	o->max_retries = PSB_CLIENT_MAX_RETRIES;
	o->log_every_ns = 1000000000ull;
	o->busy_poll_ns = PSB_CLIENT_BUSY_POLL_NS;
	o->check_version = -1;
	o->len = 1024000;
	o->repeat = 10;
	o->mode = PSB_BENCH_PUSH_PULL;
	while ((c = psb_cli_getopt(argc, argv, "qh", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_SERVER: o->server = optarg; break;
		case OPT_SCHED: o->sched = optarg; break;
		case OPT_RANK:
			o->rank = (uint16_t)psb_cli_u64("--rank", optarg, 0, MAX_WORKERS - 1);
			o->rank_given = 1;
			break;
		case OPT_NUM_WORKERS:
			o->num_workers = (uint16_t)psb_cli_u64("--num-workers", optarg, 1,
				MAX_WORKERS);
			break;
		case OPT_SYNC: o->sync = 1; break;
		case OPT_ASYNC: o->sync = 0; break;
		case OPT_KEYS: o->keys = (uint32_t)psb_cli_u64("--keys", optarg, 1, 1u << 20); break;
		case OPT_SEG_SIZE:
			o->seg_size = (uint16_t)psb_cli_u64("--seg-size", optarg, 4, PSB_UDP_MAX_SEG);
			if ((o->seg_size & 3) != 0)
				psb_die("--seg-size: %u is not a multiple of 4", o->seg_size);
			break;
		case OPT_VERIFY: o->verify = 1; break;
		case OPT_RESULTS: o->results = optarg; break;
		case OPT_BATCH:
			o->batch = (uint32_t)psb_cli_u64("--batch", optarg, 0, 8192);
			break;
		case OPT_WINDOW:
			o->window_bytes = psb_cli_u64("--window-bytes", optarg, 4, 1ull << 32);
			break;
		case OPT_TIMEOUT:
			o->timeout_ns = psb_cli_u64("--timeout-us", optarg, 10, 60000000) * 1000;
			break;
		case OPT_RETRIES:
			o->max_retries = (uint32_t)psb_cli_u64("--max-retries", optarg, 0, 1u << 30);
			if (o->max_retries == 0)
				o->max_retries = PSB_CLIENT_RETRY_FOREVER;
			break;
		case OPT_DURATION: o->duration_ns = psb_cli_seconds_ns("--duration", optarg); break;
		case OPT_LOG_EVERY: o->log_every_ns = psb_cli_seconds_ns("--log-every", optarg); break;
		case OPT_BUSY_POLL:
			o->busy_poll_ns = psb_cli_u64("--busy-poll-us", optarg, 1, 60000000) * 1000;
			break;
		case OPT_LOCAL_IP: o->local_ip = optarg; break;
		case OPT_CHECK: {
			char *end;

			o->check = 1;
			o->check_sum = strtof(optarg, &end);
			if (end == optarg || *end != '\0')
				psb_die("--check: expected a number, got '%s'", optarg);
			break;
		}
		case OPT_CHECK_VERSION:
			o->check_version = (int64_t)psb_cli_u64("--check-version", optarg, 0, UINT32_MAX);
			break;
		case 'q': o->quiet = 1; break;
		case 'h': usage(stdout); exit(0);
		}
	}
	for (; optind < argc; optind++) {
		const char *v = argv[optind];

		switch (npos++) {
		case 0: o->len = (uint32_t)psb_cli_u64("len", v, 4, PSB_MAX_VALUE); break;
		case 1: o->repeat = psb_cli_u64("repeat", v, 1, UINT64_MAX); break;
		case 2:
			o->mode = psb_bench_mode_parse(v);
			if (o->mode < 0)
				psb_die("mode: expected 0-3 or PUSH_THEN_PULL|PUSH_PULL|PUSH_ONLY|PULL_ONLY, "
					"got '%s'", v);
			break;
		default: psb_cli_usage_error("unexpected argument '%s'", v);
		}
	}
	if (o->check_version >= 0 && !o->check)
		psb_die("--check-version needs --check SUM");
	if ((o->len & 3) != 0)
		psb_die("len: %u is not a multiple of 4 (values are float32 arrays)", o->len);
	if (o->server == NULL && o->sched == NULL)
		psb_die("no server given: use --server IP[:PORT] (or --scheduler IP[:PORT])");
	if (o->sched == NULL && o->rank >= o->num_workers)
		psb_die("--rank %u must be below --num-workers %u", o->rank, o->num_workers);
}

/* --check: pull each key once; 0 when every element and version is as expected. */
static int
check_keys(struct psb_client *c, const struct opts *o, const uint64_t *keys, uint32_t nkeys,
		const char *label)
{
	size_t n = o->len / sizeof(float), got, i;
	float *out = malloc(o->len);
	uint32_t k, bad = 0;
	int rc;

	if (out == NULL)
		psb_die("out of memory");
	for (k = 0; k < nkeys; k++) {
		rc = psb_client_pull(c, keys[k], out, n, &got, 0);
		if (rc != 0) {
			fprintf(stderr, "psb-kbench: %s: check: pull of key %llu failed: %s\n", label,
				(unsigned long long)keys[k], psb_client_strerror(rc));
			bad++;
			continue;
		}
		if (got != n) {
			fprintf(stderr, "psb-kbench: %s: check: key %llu holds %zu floats, want %zu\n",
				label, (unsigned long long)keys[k], got, n);
			bad++;
			continue;
		}
		for (i = 0; i < n && out[i] == o->check_sum; i++)
			;
		if (i < n) {
			fprintf(stderr, "psb-kbench: %s: check: key %llu element %zu is %.9g, want "
				"%.9g\n", label, (unsigned long long)keys[k], i, out[i],
				o->check_sum);
			bad++;
			continue;
		}
		if (o->check_version >= 0 && psb_client_last_round(c) != o->check_version) {
			fprintf(stderr, "psb-kbench: %s: check: key %llu has version %u, want %lld\n",
				label, (unsigned long long)keys[k], psb_client_last_round(c),
				(long long)o->check_version);
			bad++;
		}
	}
	free(out);
	printf("%s: check: %u of %u keys x %u B %s (every element %.9g", label, nkeys - bad, nkeys,
		o->len, bad == 0 ? "correct" : "correct, FAILED", o->check_sum);
	if (o->check_version >= 0)
		printf(", version %lld", (long long)o->check_version);
	printf(")\n");
	return bad == 0 ? 0 : -1;
}

/*
 * The engine resends a whole value when its answer is late, so a timeout
 * shorter than the time the window takes to cross makes every request go
 * twice and the link collapse. Kernel UDP moves about 1 Gbps per core:
 * allow 16 ns per byte in flight, and never less than the usual 20 ms.
 */
static uint64_t
auto_timeout(const struct opts *o)
{
	uint64_t cost = (uint64_t)o->len * (o->mode == PSB_BENCH_PUSH_PULL ? 2 : 1);
	uint64_t window = o->window_bytes != 0 ? o->window_bytes : 8ull << 20;
	uint64_t inflight = cost * o->keys;
	uint64_t t;

	if (inflight > window)
		inflight = window > cost ? window : cost;
	t = inflight * 16;
	return t > PSB_CLIENT_TIMEOUT_NS ? t : PSB_CLIENT_TIMEOUT_NS;
}

int
main(int argc, char **argv)
{
	struct opts o;
	struct psb_client_cfg cfg;
	struct psb_client *c;
	struct psb_sched_view *view = NULL;
	struct psb_bench_cfg bc;
	struct psb_bench_result res;
	struct psb_client_stats st;
	uint64_t *keys;
	uint32_t nkeys, k = 0, i;
	uint16_t s, nservers = 1, port = PSB_UDP_PORT, sched_port = PSB_SCHED_PORT;
	char server_ip[64], sched_ip[64], err[400], label[32];
	const char *transport;
	uint16_t nshm;
	int rc, wrc, exit_code = 0;

	psb_cli_prog("psb-kbench");
	parse_args(&o, argc, argv);
	if (o.timeout_ns == 0)
		o.timeout_ns = auto_timeout(&o);
	psb_client_cfg_init(&cfg);
	if (o.server != NULL)
		split_host_port("--server", o.server, server_ip, &port);
	if (o.sched != NULL)
		split_host_port("--scheduler", o.sched, sched_ip, &sched_port);
	/* With only a scheduler, the server comes from its view; until then aim at it. */
	cfg.server_ip = o.server != NULL ? server_ip : sched_ip;
	cfg.server_port = port;
	cfg.local_ip = o.local_ip;
	cfg.rank = o.rank;
	cfg.sync = o.sync;
	cfg.seg_size = o.seg_size;
	cfg.batch_max = (uint16_t)o.batch;
	cfg.timeout_ns = o.timeout_ns;
	cfg.max_retries = o.max_retries;
	cfg.busy_poll_ns = o.busy_poll_ns;
	c = psb_client_open(&cfg, err, sizeof(err));
	if (c == NULL)
		psb_die("%s", err);

	if (o.sched != NULL) {
		view = calloc(1, sizeof(*view));
		if (view == NULL)
			psb_die("out of memory");
		if (!o.quiet)
			printf("psb-kbench: registering with the scheduler %s:%u\n", sched_ip,
				sched_port);
		rc = psb_client_register(c, sched_ip, sched_port, &o.rank, view);
		if (rc != 0)
			psb_die("cannot register with the scheduler %s:%u: %s", sched_ip, sched_port,
				psb_client_strerror(rc));
		nservers = view->num_servers != 0 ? view->num_servers : 1;
		o.num_workers = view->num_workers;
	}

	nkeys = o.keys * nservers;
	keys = calloc(nkeys, sizeof(*keys));
	if (keys == NULL)
		psb_die("out of memory");
	/* ps-lite's benchmark: keys at the start of each server's key range. */
	for (s = 0; s < nservers; s++) {
		uint64_t begin = 0, end;

		if (view != NULL && view->num_servers != 0)
			begin = view->servers[s].key_begin;
		else
			psb_sched_key_range(s, nservers, &begin, &end);
		for (i = 0; i < o.keys; i++)
			keys[k++] = begin + i;
	}
	snprintf(label, sizeof(label), "worker %u", psb_client_rank(c));
	if (o.sched != NULL) {
		/* ps-lite starts the benchmark when every worker is up. */
		rc = psb_client_barrier(c, PSB_GROUP_WORKERS, 0);
		if (rc != 0)
			psb_die("%s: worker barrier failed: %s", label, psb_client_strerror(rc));
	}

	/* each server's transport now (PSB_TRANSPORT): a forced one that fails says why */
	for (s = 0, nshm = 0; s < nservers; s++) {
		rc = psb_client_transport(c, s, err, sizeof(err));
		if (rc < 0)
			psb_die("%s", err);
		nshm += rc == 1;
	}
	transport = nshm == 0 ? "kernel UDP" : nshm == nservers ? "shared memory" :
		"shared memory and kernel UDP";

	if (o.check) {
		exit_code = check_keys(c, &o, keys, nkeys, label) == 0 ? 0 : 1;
		psb_client_close(c);
		free(keys);
		free(view);
		return exit_code;
	}

	memset(&bc, 0, sizeof(bc));
	bc.len = o.len;
	bc.repeat = o.repeat;
	bc.mode = o.mode;
	bc.nkeys = nkeys;
	bc.keys = keys;
	bc.num_workers = o.num_workers;
	bc.verify = o.verify;
	bc.max_time_ns = o.duration_ns;
	bc.window_bytes = o.window_bytes;
	bc.log_every_ns = o.quiet ? 0 : o.log_every_ns;
	bc.log = stdout;
	bc.label = label;
	if (!o.quiet) {
		printf("%s: %s, %u B x %u keys on %u server(s), %llu iterations, %s, %s, "
			"timeout %.1f ms\n", label, psb_bench_mode_name(o.mode), o.len, nkeys,
			nservers, (unsigned long long)o.repeat, o.sync ? "sync" : "async",
			transport, o.timeout_ns / 1e6);
		fflush(stdout);
	}
	rc = psb_client_bench(c, &bc, &res);
	if (rc == -EINVAL)
		psb_die("%s: cannot start the benchmark (bad parameters or out of memory)", label);
	psb_bench_print(&res, label, stdout);
	fflush(stdout);
	if (o.results != NULL && (wrc = psb_bench_write_json(&res, label,
			rc < 0 || res.verify_errors != 0 ? "failed" : "done",
			res.first_error != 0 ? psb_bench_error_name(res.first_error) : NULL,
			o.results)) != 0) {
		fprintf(stderr, "psb-kbench: %s: cannot write results to %s: %s\n", label, o.results,
			strerror(-wrc));
		exit_code = 1;
	}
	psb_client_stats(c, &st);
	if (nshm != 0)
		printf("%s: shared memory to %u of %u server(s): %llu frames out, %llu in, ring full "
			"%llu, bad %llu\n", label, nshm, nservers,
			(unsigned long long)st.shm_tx_frames, (unsigned long long)st.shm_rx_frames,
			(unsigned long long)st.shm_ring_full, (unsigned long long)st.shm_bad);
	if (rc < 0 && st.error_replies != 0) {
		fprintf(stderr, "psb-kbench: %s: benchmark FAILED: %llu request(s) failed; the server "
			"answered: %s%s\n", label, (unsigned long long)res.failed,
			psb_client_strerror(st.last_error_status),
			st.last_error_status == PSB_ST_LEN_MISMATCH ?
			" (it holds these keys with another length: restart it)" : "");
		exit_code = 1;
	} else if (rc < 0 && res.first_error == -ESTALE) {
		fprintf(stderr, "psb-kbench: %s: benchmark FAILED: key %llu: %s\n", label,
			(unsigned long long)res.first_error_key, psb_client_strerror(-ESTALE));
		exit_code = 1;
	} else if (rc < 0) {
		fprintf(stderr, "psb-kbench: %s: benchmark FAILED: %llu request(s) got no answer after "
			"%u retries (is the server up at that address, and --sync/--async the same on "
			"both?)\n", label, (unsigned long long)res.failed, o.max_retries);
		exit_code = 1;
	} else if (res.verify_errors != 0) {
		fprintf(stderr, "psb-kbench: %s: benchmark FAILED: %llu pulled value(s) wrong\n",
			label, (unsigned long long)res.verify_errors);
		exit_code = 1;
	}
	/* ps-lite's Finalize: once every worker said so, the scheduler ends the job */
	if (o.sched != NULL && (rc = psb_client_finalize(c, 2000000000ull)) != 0)
		fprintf(stderr, "psb-kbench: %s: the scheduler did not acknowledge the end of this "
			"worker (FINALIZE) within 2 s: %s\n", label, psb_client_strerror(rc));
	psb_client_close(c);
	free(keys);
	free(view);
	return exit_code;
}
