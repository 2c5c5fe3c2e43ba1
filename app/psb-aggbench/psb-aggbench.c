/* psb-aggbench: how close psb_agg_add() gets to memory bandwidth, vs a plain loop and memcpy. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "psb_agg.h"
#include "psb_cli.h"
#include "psb_clock.h"

#define DEFAULT_MB	64
#define DEFAULT_RUNS	5
#define MAX_MB		65536	/* 64 GiB per array: a typo guard, not a real limit */
#define MAX_RUNS	10000
#define MISALIGN	2	/* bytes: where a payload sits after an odd-length header */
#define MAX_VARIANTS	(2 + 2 * PSB_AGG_IMPL_MAX)

enum variant_kind {
	V_PLAIN,
	V_MEMCPY,
	V_AGG,
};

struct variant {
	enum variant_kind kind;
	enum psb_agg_impl impl;		/* V_AGG only */
	size_t src_off;			/* bytes added to b */
	char label[48];			/* for the table */
	char key[32];			/* for JSON */
	double *secs;			/* one per run */
	double gbs_med, gbs_min, gbs_max;
};

static void
usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [--mb N] [--runs R] [--json FILE]\n"
		"  --mb N       size of each of the two float arrays, MiB (default %d)\n"
		"  --runs R     timed runs per variant; the median is reported (default %d)\n"
		"  --json FILE  also write the results as JSON to FILE\n"
		"  --version    psb-aggbench's version and the git revision it was built from\n",
		prog, DEFAULT_MB, DEFAULT_RUNS);
}

static int
parse_count(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (s[0] == '-')	/* strtoull would silently negate it */
		return -EINVAL;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v == 0 || v > max)
		return -EINVAL;
	*out = (unsigned long)v;
	return 0;
}

/*
 * The baseline: what the compiler makes of the obvious loop with the project's flags. noinline
 * so it is timed as a call like the others; its result lands in a, which main() reads back
 * into the checksum, so it cannot be optimised away.
 */
static __attribute__((noinline)) void
plain_add(float *a, const float *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		a[i] += b[i];
}

static void
run_variant(const struct variant *v, float *a, const float *b, size_t n)
{
	const void *src = (const char *)b + v->src_off;

	switch (v->kind) {
	case V_PLAIN:
		plain_add(a, b, n);
		break;
	case V_MEMCPY:
		memcpy(a, src, n * sizeof(float));
		break;
	case V_AGG:
		/* through the dispatcher, as the server calls it */
		psb_agg_select(v->impl);
		psb_agg_add(a, src, n);
		break;
	}
}

static int
cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

static void
summarize(struct variant *v, unsigned long runs, double bytes)
{
	double *t = malloc(runs * sizeof(*t));
	double med;

	if (t == NULL) {
		perror("malloc");
		exit(1);
	}
	memcpy(t, v->secs, runs * sizeof(*t));
	qsort(t, runs, sizeof(*t), cmp_double);
	med = runs % 2 != 0 ? t[runs / 2] : (t[runs / 2 - 1] + t[runs / 2]) / 2;
	v->gbs_med = bytes / med / 1e9;
	v->gbs_min = bytes / t[runs - 1] / 1e9;
	v->gbs_max = bytes / t[0] / 1e9;
	free(t);
}

/* The results as JSON, written whole or not at all (psb_cli_write_json); dies when it cannot. */
static void
write_json(const char *path, const struct variant *vs, int nv, unsigned long mb,
	   unsigned long runs, size_t n, double checksum)
{
	json_t *o, *results = json_array(), *secs;
	unsigned long r;
	int i;

	for (i = 0; i < nv && results != NULL; i++) {
		const struct variant *v = &vs[i];

		secs = json_array();
		for (r = 0; r < runs && secs != NULL; r++)
			json_array_append_new(secs, json_real(v->secs[r]));
		json_array_append_new(results, json_pack("{s:s, s:o, s:I, s:f, s:f, s:f, s:f, s:o}",
			"name", v->key,
			"impl", v->kind == V_AGG ? json_string(psb_agg_impl_name(v->impl)) :
				json_null(),
			"src_offset", (json_int_t)v->src_off, "gbps_median", v->gbs_med,
			"gbps_min", v->gbs_min, "gbps_max", v->gbs_max,
			"vs_plain", v->gbs_med / vs[0].gbs_med, "seconds", secs));
	}
	o = json_pack("{s:I, s:I, s:I, s:s, s:i, s:s, s:o, s:f}", "mb", (json_int_t)mb,
		"runs", (json_int_t)runs, "floats", (json_int_t)n,
		"best", psb_agg_impl_name(psb_agg_best()), "misalign_bytes", MISALIGN,
		"unit", "GB/s of src (1e9 bytes/s)", "results", results, "checksum", checksum);
	psb_cli_write_json(o, path);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mb", required_argument, NULL, 'm' },
		{ "runs", required_argument, NULL, 'r' },
		{ "json", required_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		PSB_CLI_VERSION_OPTION,
		{ NULL, 0, NULL, 0 },
	};
	unsigned long mb = DEFAULT_MB, runs = DEFAULT_RUNS, r;
	const char *json = NULL;
	struct variant vs[MAX_VARIANTS];
	size_t bytes, n, i;
	float *a, *b;
	double checksum = 0;
	int c, nv = 0, k, impl;

	psb_cli_prog("psb-aggbench");
	while ((c = psb_cli_getopt(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (parse_count(optarg, MAX_MB, &mb) != 0) {
				fprintf(stderr, "psb-aggbench: --mb wants 1..%d\n", MAX_MB);
				return 2;
			}
			break;
		case 'r':
			if (parse_count(optarg, MAX_RUNS, &runs) != 0) {
				fprintf(stderr, "psb-aggbench: --runs wants 1..%d\n", MAX_RUNS);
				return 2;
			}
			break;
		case 'j':
			json = optarg;
			break;
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		}
	}
	if (optind != argc)
		psb_cli_usage_error("unexpected argument '%s'", argv[optind]);

	if (mb > SIZE_MAX >> 21) {
		fprintf(stderr, "psb-aggbench: --mb %lu does not fit in memory\n", mb);
		return 2;
	}
	bytes = (size_t)mb << 20;
	n = bytes / sizeof(float);
	a = aligned_alloc(64, bytes);
	/* room for the misaligned view of b, still n floats long */
	b = aligned_alloc(64, bytes + 64);
	if (a == NULL || b == NULL) {
		fprintf(stderr, "psb-aggbench: cannot allocate 2 x %lu MiB\n", mb);
		return 1;
	}
	/* Touch every page before timing; values stay normal (no slow subnormals) and finite
	 * however many runs add them up. */
	for (i = 0; i < n; i++) {
		a[i] = 0.0f;
		b[i] = 0.5f + (float)(i & 1023) / 1024.0f;
	}
	memset(b + n, 0, 64);

	vs[nv++] = (struct variant){ .kind = V_PLAIN, .label = "plain loop a[i] += b[i]",
				     .key = "plain" };
	vs[nv++] = (struct variant){ .kind = V_MEMCPY, .label = "memcpy", .key = "memcpy" };
	for (k = 0; k < 2; k++) {
		for (impl = 0; impl < PSB_AGG_IMPL_MAX; impl++) {
			struct variant *v = &vs[nv];

			if (psb_agg_add_impl(impl) == NULL)
				continue;
			*v = (struct variant){ .kind = V_AGG, .impl = impl,
					       .src_off = k != 0 ? MISALIGN : 0 };
			snprintf(v->label, sizeof(v->label), "psb_agg_add %s%s",
				 psb_agg_impl_name(impl), k != 0 ? " src+2" : "");
			snprintf(v->key, sizeof(v->key), "agg_%s%s", psb_agg_impl_name(impl),
				 k != 0 ? "_src2" : "");
			nv++;
		}
	}
	for (k = 0; k < nv; k++) {
		vs[k].secs = calloc(runs, sizeof(double));
		if (vs[k].secs == NULL) {
			perror("calloc");
			return 1;
		}
	}

	/* Run 0 is a warm-up and not recorded. Variants take turns within a run so that slow
	 * drifts (frequency, a noisy neighbour) spread over all of them alike. */
	for (r = 0; r <= runs; r++) {
		for (k = 0; k < nv; k++) {
			uint64_t t0 = psb_clock_ns();

			run_variant(&vs[k], a, b, n);
			if (r != 0)
				vs[k].secs[r - 1] = (psb_clock_ns() - t0) / 1e9;
		}
	}
	psb_agg_select(psb_agg_best());

	for (i = 0; i < n; i += 4096)
		checksum += a[i];
	for (k = 0; k < nv; k++)
		summarize(&vs[k], runs, (double)bytes);

	printf("psb-aggbench: 2 x %lu MiB (%zu floats), %lu runs + 1 warm-up, median of runs\n",
	       mb, n, runs);
	printf("GB/s = 1e9 bytes of src (gradient input) per second; best impl here: %s\n\n",
	       psb_agg_impl_name(psb_agg_best()));
	printf("%-28s %9s %9s %9s %9s\n", "variant", "GB/s", "min", "max", "vs plain");
	for (k = 0; k < nv; k++)
		printf("%-28s %9.2f %9.2f %9.2f %9.2f\n", vs[k].label, vs[k].gbs_med,
		       vs[k].gbs_min, vs[k].gbs_max, vs[k].gbs_med / vs[0].gbs_med);
	/* printing it is what keeps the timed work observable */
	printf("\nchecksum %.9g\n", checksum);

	if (json != NULL)
		write_json(json, vs, nv, mb, runs, n, checksum);

	for (k = 0; k < nv; k++)
		free(vs[k].secs);
	free(b);
	free(a);
	return 0;
}
