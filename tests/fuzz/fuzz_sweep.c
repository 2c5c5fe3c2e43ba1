/*
 * Fuzzing of psb-sweep's sweep files: every input is read as JSON (duplicate keys refused,
 * as psb reads files), loaded as a sweep and, when taken, expanded into at most 64 jobs,
 * whose trial documents are built and checked. Nothing may crash or leak, a sweep taken
 * expands or is refused with a message, and an expansion's jobs are all different. Built
 * as a libFuzzer target (fuzz_sweep, -Dfuzz=true) and as a deterministic replay over mutated
 * seed sweeps (fuzz_sweep_replay).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "psb_sweep.h"
#include "fuzz_check.h"

static unsigned long g_taken, g_refused, g_jobs;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct psb_sweep s;
	struct psb_sweep_job *jobs;
	json_error_t je;
	size_t n, i;
	char err[1024];
	json_t *doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);

	if (doc == NULL)
		return 0;
	err[0] = '\0';
	if (psb_sweep_load_doc(&s, doc, "/nonexistent/fuzz.json", -1, -1, -1, err,
			       sizeof(err)) != 0) {
		CHECK(err[0] != '\0');
		g_refused++;
		json_decref(doc);
		return 0;
	}
	if (psb_sweep_expand(&s, 64, &jobs, &n, err, sizeof(err)) == 0) {
		g_taken++;
		g_jobs += n;
		CHECK(n >= 1 && n <= 64);
		for (i = 1; i < n; i++)
			CHECK(strcmp(jobs[i].id, jobs[i - 1].id) != 0);
		psb_sweep_jobs_free(jobs, n);
	} else {
		CHECK(err[0] != '\0');
		g_refused++;
	}
	psb_sweep_free(&s);
	json_decref(doc);
	return 0;
}

#ifndef PSB_LIBFUZZER
/* Seeds: sweeps with inline documents (the fuzz input names no file it could read). */
#define SRV	"\"server\": {\"name\": \"s\", \"kind\": \"serve\", \"node\": {\"role\": " \
		"\"server\", \"ports\": [\"null\"], \"ip\": \"198.18.0.1\"}}"
#define WRK	"\"worker\": {\"name\": \"w\", \"kind\": \"pushpull\", \"node\": {\"role\": " \
		"\"worker\", \"ports\": [\"null\"], \"ip\": \"198.18.0.2\", \"server\": " \
		"\"198.18.0.1\"}, \"pushpull\": {\"len\": \"4KiB\", \"repeat\": 10}}"
static const char *const seeds[] = {
	"{\"name\": \"a\", " SRV ", " WRK ", \"grid\": {\"pushpull.len\": [\"4KiB\", 8192], "
	"\"workers\": [1, 2]}, \"trials\": 2}",
	"{\"name\": \"b\", " SRV ", " WRK ", \"random\": {\"pushpull.keys\": {\"default\": 4, "
	"\"int\": [1, 64]}, \"pushpull.window\": {\"default\": 8192, \"pow2\": [4096, 65536]}}, "
	"\"hparams\": 5, \"seed\": 9}",
	"{\"name\": \"c\", " SRV ", " WRK ", \"set\": {\"node.sync\": false, \"server:store."
	"max_keys\": 100}, \"grid\": {\"worker:pushpull.mode\": [\"PUSH_PULL\", \"PULL_ONLY\"]}, "
	"\"random\": {\"pushpull.rate\": {\"default\": \"1Gbps\", \"choice\": [\"1Gbps\", "
	"\"2Gbps\"]}}, \"timeout\": \"5s\", \"figures\": [\"goodput_gbps\", \"rtt_p50_us\"], "
	"\"figure\": \"rtt_p50_us\", \"better\": \"lower\"}",
	"{\"name\": \"d\", " SRV ", " WRK ", \"grid\": {\"pushpull.len\": [\"3GB\"]}}",
	"{\"name\": \"e\", " SRV ", " WRK ", \"random\": {\"staleness.data_size\": {\"default\": "
	"1, \"log_uniform\": [0.5, 100]}}}",
};

static uint32_t g_rng = 0x9e3779b9u;

static uint32_t
rnd(void)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 17;
	g_rng ^= g_rng << 5;
	return g_rng;
}

/* fuzz_sweep_replay --corpus DIR: the seed sweeps as files, to start libFuzzer from */
static int
write_corpus(const char *dir)
{
	char path[4096];
	size_t k;
	FILE *f;

	for (k = 0; k < sizeof(seeds) / sizeof(seeds[0]); k++) {
		snprintf(path, sizeof(path), "%s/seed-%zu.json", dir, k);
		f = fopen(path, "w");
		CHECK(f != NULL);
		fputs(seeds[k], f);
		CHECK(fclose(f) == 0);
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static const char *const tokens[] = {
		"\"workers\"", "[]", "{}", "null", "-1", "1e308", "\"..\"", "\"node.ports\"", "0",
		"\"server:\"", "\"worker:x\"", "[1,2,3]", "\"pow2\"", "true", "\"9999999999\"",
	};
	unsigned long inputs = 0;
	char buf[4096];
	size_t k, i, len;

	if (argc == 3 && strcmp(argv[1], "--corpus") == 0)
		return write_corpus(argv[2]);
	for (k = 0; k < sizeof(seeds) / sizeof(seeds[0]); k++) {
		const char *seed = seeds[k];

		len = strlen(seed);
		CHECK(len < sizeof(buf) / 2);
		LLVMFuzzerTestOneInput((const uint8_t *)seed, len);
		for (i = 0; i < len; i++, inputs++)
			LLVMFuzzerTestOneInput((const uint8_t *)seed, i);
		for (i = 0; i < 3000; i++, inputs++) {
			size_t at = rnd() % len, l = len;

			memcpy(buf, seed, len);
			switch (rnd() % 3) {
			case 0:		/* a byte */
				buf[at] = (char)(rnd() % 2 ? "0123456789\"{}[],:-.eE"[rnd() % 21] :
						 (char)rnd());
				break;
			case 1: {	/* a token in place of whatever is there */
				const char *t = tokens[rnd() % (sizeof(tokens) / sizeof(tokens[0]))];
				size_t tl = strlen(t), cut = rnd() % 12;

				if (at + cut > len)
					cut = len - at;
				memmove(buf + at + tl, seed + at + cut, len - at - cut);
				memcpy(buf + at, t, tl);
				l = len - cut + tl;
				break;
			}
			default:	/* a digit string grown */
				memmove(buf + at + 1, seed + at, len - at);
				buf[at] = (char)('0' + rnd() % 10);
				l = len + 1;
				break;
			}
			LLVMFuzzerTestOneInput((const uint8_t *)buf, l);
		}
	}
	printf("fuzz_sweep_replay: %lu inputs from %zu seed sweeps, %lu taken (%lu jobs), %lu "
	       "refused with a reason\n", inputs, sizeof(seeds) / sizeof(seeds[0]), g_taken,
	       g_jobs, g_refused);
	CHECK(g_taken > 100 && g_refused > 1000);
	return 0;
}
#endif
