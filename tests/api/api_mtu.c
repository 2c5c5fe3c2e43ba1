/*
 * The client API over a route with a small MTU (tests/api/test_api_mtu.sh runs it in a
 * namespace): by default the segment size comes from the route, so a 1 MiB value goes
 * through; a segment size the route cannot carry fails the operation at once with
 * PSBC_E_MSGSIZE, not after a minute of retries.
 *
 *	api_mtu SERVER[:PORT] [msgsize]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "psb/client.h"

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
run(const char *server, unsigned int seg, int want)
{
	enum { LEN = 1 << 18 };
	const uint64_t keys[] = { 7, 8 };
	float *a = malloc(2 * LEN * sizeof(float)), *b = malloc(2 * LEN * sizeof(float));
	struct psbc_opts o;
	char err[512];
	psbc_t *s = NULL;
	double t0;
	int rc, i, bad = 0;

	if (a == NULL || b == NULL)
		return 1;
	psbc_opts_init(&o);
	o.servers = server;
	o.seg_size = seg;
	rc = psbc_open(&s, &o, err, sizeof(err));
	if (rc != 0) {
		fprintf(stderr, "api_mtu: open %s: %s: %s\n", server, psb_strerror(rc), err);
		return 1;
	}
	for (i = 0; i < 2 * LEN; i++)
		a[i] = (float)(i % 251);
	t0 = now_s();
	rc = psbc_wait(s, psbc_pushpull(s, keys, 2, a, b, 2 * LEN, NULL, NULL, NULL));
	printf("api_mtu: seg %u: pushpull of 2 x 1 MiB: %s after %.3f s%s%s\n", seg,
	       psb_strerror(rc), now_s() - t0, rc != 0 ? ": " : "", rc != 0 ? psbc_errmsg(s) : "");
	if (rc == 0)
		for (i = 0; i < 2 * LEN; i++)
			bad += b[i] != a[i];	/* a fresh server: the sum is this push */
	psbc_close(s);
	free(a);
	free(b);
	if (rc != want) {
		fprintf(stderr, "api_mtu: FAIL: expected %s\n", psb_strerror(want));
		return 1;
	}
	if (want == PSBC_E_MSGSIZE && now_s() - t0 > 2.0) {
		fprintf(stderr, "api_mtu: FAIL: the error came after more than 2 s\n");
		return 1;
	}
	if (bad != 0)
		fprintf(stderr, "api_mtu: FAIL: %d floats of the sums are wrong\n", bad);
	return bad != 0;
}

int
main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: api_mtu SERVER[:PORT] [msgsize]\n");
		return 2;
	}
	if (run(argv[1], 0, 0) != 0)
		return 1;
	if (argc > 2 && strcmp(argv[2], "msgsize") == 0 && run(argv[1], 8000, PSBC_E_MSGSIZE) != 0)
		return 1;
	return 0;
}
