/*
 * psb-apibench: ps-lite's benchmark through the client API (psb/client.h), as a program of
 * a user's would run it: each iteration one psbc_pushpull (or push, or pull) of every key,
 * then psbc_wait; or one key's 64 B request at a time, for round trips. Prints a line and,
 * with --results, a JSON object: what scripts/bench/client.sh compares with psb-kbench.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "psb/client.h"
#include "psb_cli.h"

enum { MODE_PUSH_PULL = 1, MODE_PUSH_ONLY = 2, MODE_PULL_ONLY = 3, MODE_RTT = 4 };

static void
usage(FILE *out)
{
	fprintf(out,
"usage: psb-apibench --servers IP[:PORT][,...] [options] [len [repeat [mode]]]\n"
"\n"
"ps-lite's benchmark through libpsb's client API, against psb or psb-ksrv.\n"
"\n"
"  --servers LIST     the servers (port default 9430); or --scheduler IP[:PORT]\n"
"  --scheduler ADDR   join a job through its scheduler instead\n"
"  --rank R           this worker's rank (default 0)\n"
"  --keys N           keys (default 40)\n"
"  --seconds S        run S seconds instead of repeat iterations\n"
"  --results FILE     the result as JSON\n"
"  --version, -h, --help\n"
"\n"
"  len     value bytes a key, a multiple of 4 (default 1048576)\n"
"  repeat  iterations (default 10)\n"
"  mode    1 PUSH_PULL, 2 PUSH_ONLY, 3 PULL_ONLY, 4 one key's request at a time (round\n"
"          trips) (default 1)\n");
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

enum { OPT_SERVERS = 256, OPT_SCHED, OPT_RANK, OPT_KEYS, OPT_SECONDS, OPT_RESULTS };

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "servers", required_argument, NULL, OPT_SERVERS },
		{ "scheduler", required_argument, NULL, OPT_SCHED },
		{ "rank", required_argument, NULL, OPT_RANK },
		{ "keys", required_argument, NULL, OPT_KEYS },
		{ "seconds", required_argument, NULL, OPT_SECONDS },
		{ "results", required_argument, NULL, OPT_RESULTS },
		{ "help", no_argument, NULL, 'h' },
		PSB_CLI_VERSION_OPTION,
		{ NULL, 0, NULL, 0 },
	};
	const char *results = NULL;
	struct psbc_opts o;
	uint32_t nkeys = 40, len = 1048576, mode = MODE_PUSH_PULL, k;
	uint64_t repeat = 10, it, seconds_ns = 0;
	uint64_t *keys;
	float *vals, *outs;
	double *rtt = NULL, t0, t, elapsed;
	size_t nvals, nrtt = 0, cap = 0;
	char err[512];
	psbc_t *s;
	int c, rc;

	psb_cli_prog("psb-apibench");
	psbc_opts_init(&o);
	while ((c = psb_cli_getopt(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_SERVERS: o.servers = optarg; break;
		case OPT_SCHED: o.scheduler = optarg; break;
		case OPT_RANK: o.rank = (int)psb_cli_u64("--rank", optarg, 0, 65535); break;
		case OPT_KEYS: nkeys = (uint32_t)psb_cli_u64("--keys", optarg, 1, 1u << 20); break;
		case OPT_SECONDS: seconds_ns = psb_cli_seconds_ns("--seconds", optarg); break;
		case OPT_RESULTS: results = optarg; break;
		case 'h': usage(stdout); return 0;
		}
	}
	if (optind < argc)
		len = (uint32_t)psb_cli_u64("len", argv[optind++], 4, 1u << 30);
	if (optind < argc)
		repeat = psb_cli_u64("repeat", argv[optind++], 1, UINT64_MAX);
	if (optind < argc)
		mode = (uint32_t)psb_cli_u64("mode", argv[optind++], 1, 4);
	if (optind < argc)
		psb_cli_usage_error("unexpected argument '%s'", argv[optind]);
	if (len % 4 != 0)
		psb_cli_usage_error("len %u: a multiple of 4 bytes", len);
	if (o.servers == NULL && o.scheduler == NULL && getenv("DMLC_PS_ROOT_URI") == NULL)
		psb_cli_usage_error("--servers or --scheduler is needed");
	if (mode == MODE_RTT)
		nkeys = 1;
	rc = psbc_open(&s, &o, err, sizeof(err));
	if (rc != 0)
		psb_die("%s: %s", psb_strerror(rc), err);
	nvals = (size_t)nkeys * (len / 4);
	keys = calloc(nkeys, sizeof(*keys));
	vals = malloc(nvals * sizeof(float));
	outs = malloc(nvals * sizeof(float));
	if (keys == NULL || vals == NULL || outs == NULL)
		psb_die("out of memory for %u keys of %u B", nkeys, len);
	/* keys of this rank and length: runs of other lengths against the same store coexist */
	for (k = 0; k < nkeys; k++)
		keys[k] = ((uint64_t)(psbc_rank(s) + 1) << 56) | ((uint64_t)len << 20) | k;
	for (size_t i = 0; i < nvals; i++)
		vals[i] = 1.0f;
	/* the keys exist before a pull-only run (not timed) */
	if (mode == MODE_PULL_ONLY &&
	    (rc = psbc_wait(s, psbc_push(s, keys, nkeys, vals, nvals, NULL, NULL, NULL))) != 0)
		psb_die("the first push: %s", psbc_errmsg(s));
	t0 = now_s();
	for (it = 0; seconds_ns != 0 ? (now_s() - t0) * 1e9 < (double)seconds_ns : it < repeat;
	     it++) {
		int64_t ts;

		t = now_s();
		if (mode == MODE_PUSH_ONLY)
			ts = psbc_push(s, keys, nkeys, vals, nvals, NULL, NULL, NULL);
		else if (mode == MODE_PULL_ONLY)
			ts = psbc_pull(s, keys, nkeys, outs, nvals, NULL, NULL, NULL);
		else
			ts = psbc_pushpull(s, keys, nkeys, vals, outs, nvals, NULL, NULL, NULL);
		rc = ts < 0 ? (int)ts : psbc_wait(s, ts);
		if (rc != 0)
			psb_die("iteration %llu: %s", (unsigned long long)it, psbc_errmsg(s));
		if (mode == MODE_RTT) {
			if (nrtt == cap) {
				cap = cap != 0 ? 2 * cap : 4096;
				rtt = realloc(rtt, cap * sizeof(*rtt));
				if (rtt == NULL)
					psb_die("out of memory");
			}
			rtt[nrtt++] = (now_s() - t) * 1e6;
		}
	}
	elapsed = now_s() - t0;
	{
		double gbps = 8.0 * len * nkeys * (double)it / elapsed / 1e9;
		double p50 = 0, p99 = 0;
		FILE *f;

		if (nrtt != 0) {
			qsort(rtt, nrtt, sizeof(*rtt), cmp_double);
			p50 = rtt[nrtt / 2];
			p99 = rtt[(size_t)((double)nrtt * 0.99)];
		}
		printf("psb-apibench: mode %u, len %u B, %u keys, %llu iterations in %.3f s: "
		       "goodput %.3f Gbps", mode, len, nkeys, (unsigned long long)it, elapsed, gbps);
		if (nrtt != 0)
			printf(", round trip p50 %.2f us p99 %.2f us", p50, p99);
		printf("\n");
		if (results != NULL) {
			f = fopen(results, "w");
			if (f == NULL)
				psb_die("--results %s: %s", results, strerror(errno));
			fprintf(f, "{\"tool\": \"capi\", \"mode\": %u, \"len\": %u, \"keys\": %u, "
				"\"iterations\": %llu, \"elapsed_s\": %.6f, \"goodput_gbps\": %.6f, "
				"\"rtt_p50_us\": %.3f, \"rtt_p99_us\": %.3f, \"version\": \"%s\"}\n",
				mode, len, nkeys, (unsigned long long)it, elapsed, gbps, p50, p99,
				psb_version());
			if (fclose(f) != 0)
				psb_die("--results %s: %s", results, strerror(errno));
		}
	}
	psbc_close(s);
	free(keys);
	free(vals);
	free(outs);
	free(rtt);
	return 0;
}
