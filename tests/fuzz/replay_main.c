/* Runs the frame fuzz target over a deterministic in-memory corpus (no libFuzzer needed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "psb_proto.h"
#include "fuzz_seeds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_SEEDS		64
/* Truncations: every length near either end of a seed, every 7th in between. */
#define TRUNC_DENSE		160
#define TRUNC_STRIDE		7
/* Bit flips cover the headers: Ethernet + VLAN tag + IPv4 with options + UDP + psb. */
#define FLIP_BYTES		(PSB_FRAME_HLEN + 8)
#define RANDOM_PER_SEED		100
#define RANDOM_RAW		1000
#define RANDOM_PREFIXED		500

struct seed {
	char name[32];
	uint8_t *data;
	size_t len;
};

struct corpus {
	struct seed seeds[MAX_SEEDS];
	unsigned int n;
};

static unsigned long inputs;
static uint32_t rng_state = 0x2545f491u;

static uint32_t
rng_next(void)
{
	return tf_xorshift32(&rng_state);
}

static void
collect(void *arg, const char *name, const uint8_t *frame, size_t len)
{
	struct corpus *c = arg;
	struct seed *s;

	if (c->n == MAX_SEEDS) {
		fprintf(stderr, "fuzz_frame_replay: more than %d seeds\n", MAX_SEEDS);
		exit(1);
	}
	s = &c->seeds[c->n++];
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->data = malloc(len);
	if (s->data == NULL) {
		perror("malloc");
		exit(1);
	}
	memcpy(s->data, frame, len);
	s->len = len;
}

/* Feed one input from an exact-size heap buffer, as libFuzzer does. */
static void
run(const uint8_t *data, size_t len)
{
	uint8_t *buf = malloc(len == 0 ? 1 : len);

	if (buf == NULL) {
		perror("malloc");
		exit(1);
	}
	memcpy(buf, data, len);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	inputs++;
}

static void
run_truncations(const struct seed *s)
{
	size_t cut;

	for (cut = 0; cut < s->len; cut++)
		if (cut <= TRUNC_DENSE || cut + TRUNC_DENSE >= s->len || cut % TRUNC_STRIDE == 0)
			run(s->data, cut);
}

static void
run_bit_flips(const struct seed *s, uint8_t *work)
{
	size_t i, n = s->len < FLIP_BYTES ? s->len : FLIP_BYTES;
	unsigned int b;

	memcpy(work, s->data, s->len);
	for (i = 0; i < n; i++) {
		for (b = 0; b < 8; b++) {
			work[i] ^= (uint8_t)(1u << b);
			run(work, s->len);
			work[i] ^= (uint8_t)(1u << b);
		}
	}
}

/* A few random bytes overwritten, mostly in the headers, sometimes cut or extended. */
static void
run_random_mutations(const struct seed *s, uint8_t *work)
{
	unsigned int k, j, nmut;
	size_t len, pos;

	for (k = 0; k < RANDOM_PER_SEED; k++) {
		memcpy(work, s->data, s->len);
		len = s->len;
		nmut = 1 + rng_next() % 4;
		for (j = 0; j < nmut; j++) {
			if (rng_next() % 2 == 0)
				pos = rng_next() % (len < FLIP_BYTES ? len : FLIP_BYTES);
			else
				pos = rng_next() % len;
			work[pos] = (uint8_t)rng_next();
		}
		switch (rng_next() % 8) {
		case 0:
		case 1:
			len = rng_next() % (len + 1);
			break;
		case 2:
			for (j = rng_next() % 16; j > 0 && len < FUZZ_SEED_MAX; j--)
				work[len++] = (uint8_t)rng_next();
			break;
		default:
			break;
		}
		run(work, len);
	}
}

static void
run_random_raw(const struct corpus *c, uint8_t *work)
{
	unsigned int k;
	size_t len, i, pre;

	for (k = 0; k < RANDOM_RAW; k++) {
		len = rng_next() % 128;
		for (i = 0; i < len; i++)
			work[i] = (uint8_t)rng_next();
		run(work, len);
	}
	/* Random bodies behind a real Ethernet + IPv4 + UDP prefix (of the first seed). */
	pre = PSB_ETH_HLEN + PSB_IP_HLEN + PSB_UDP_HLEN;
	for (k = 0; k < RANDOM_PREFIXED; k++) {
		len = pre + rng_next() % 200;
		memcpy(work, c->seeds[0].data, pre);
		for (i = pre; i < len; i++)
			work[i] = (uint8_t)rng_next();
		run(work, len);
	}
}

int
main(void)
{
	struct corpus c;
	struct timespec t0, t1;
	uint8_t *work;
	unsigned int i;
	double secs;

	memset(&c, 0, sizeof(c));
	work = malloc(FUZZ_SEED_MAX);
	if (work == NULL) {
		perror("malloc");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	fuzz_seeds_foreach(collect, &c);
	for (i = 0; i < c.n; i++) {
		run(c.seeds[i].data, c.seeds[i].len);
		run_truncations(&c.seeds[i]);
		run_bit_flips(&c.seeds[i], work);
		run_random_mutations(&c.seeds[i], work);
	}
	run_random_raw(&c, work);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("fuzz_frame_replay: %lu inputs from %u seeds in %.2f s\n", inputs, c.n, secs);

	for (i = 0; i < c.n; i++)
		free(c.seeds[i].data);
	free(work);
	return 0;
}
