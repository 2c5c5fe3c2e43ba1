/*
 * Unit tests of the staleness experiment's parts (multicast/psb_stale*): its control
 * messages against every kind of malformed one, the flags, the trainer's accounting (the
 * staleness figure, hostile and replayed posts), the worker's sampling, and the filesystem
 * mode's files against damaged and foreign ones, and a worker's part of the run (joins,
 * posts, the end, every wait bounded) against a scripted trainer.
 */
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
#include <unistd.h>

#include <cmocka.h>

#include "psb_be.h"
#include "psb_mc_proto.h"
#include "psb_stale.h"
#include "psb_stale_client.h"
#include "psb_stale_trainer.h"
#include "psb_stale_fs.h"
#include "psb_stale_versions.h"

#define MS	1000000ull
#define SEC	1000000000ull

static void
test_msg_roundtrip(void **state)
{
	struct psb_stale_msg m = { .type = PSB_STALE_POST, .session = 7, .worker = 3, .held = 9,
		.samples = 400, .seq = 5, .sum = 3000, .window = 2 * SEC }, r;
	uint8_t b[PSB_STALE_LEN];

	(void)state;
	psb_stale_write(b, &m);
	assert_int_equal(psb_stale_parse(b, sizeof(b), &r), PSB_STALE_POST);
	/* field by field: the structs' padding is not part of the message */
	assert_int_equal(r.type, m.type);
	assert_int_equal(r.session, m.session);
	assert_int_equal(r.worker, m.worker);
	assert_int_equal(r.held, m.held);
	assert_int_equal(r.samples, m.samples);
	assert_int_equal(r.seq, m.seq);
	assert_int_equal(r.sum, m.sum);
	assert_int_equal(r.window, m.window);
	m = (struct psb_stale_msg){ .type = PSB_STALE_ACK, .session = 7, .worker = 3, .held = 12,
		.window = PSB_STALE_ACK_END };
	psb_stale_write(b, &m);
	assert_int_equal(psb_stale_parse(b, sizeof(b), &r), PSB_STALE_ACK);
	assert_int_equal(r.window, PSB_STALE_ACK_END);
	m = (struct psb_stale_msg){ .type = PSB_STALE_PULL, .session = 7, .worker = 1, .held = 4,
		.seq = 2 };
	psb_stale_write(b, &m);
	assert_int_equal(psb_stale_parse(b, sizeof(b), &r), PSB_STALE_PULL);
}

static int
parse_with(const struct psb_stale_msg *m)
{
	uint8_t b[PSB_STALE_LEN];
	struct psb_stale_msg r;

	psb_stale_write(b, m);
	return psb_stale_parse(b, sizeof(b), &r);
}

static void
test_msg_malformed(void **state)
{
	struct psb_stale_msg ok = { .type = PSB_STALE_POST, .session = 7, .worker = 3, .held = 9,
		.samples = 400, .seq = 5, .sum = 3000, .window = 2 * SEC }, m;
	uint8_t b[PSB_STALE_LEN + 1], r[sizeof(struct psb_stale_msg)];
	size_t len;

	(void)state;
	psb_stale_write(b, &ok);
	for (len = 0; len <= sizeof(b); len++)
		if (len != PSB_STALE_LEN)
			assert_int_equal(psb_stale_parse(b, len, (void *)r), -PSB_STALE_BAD_SHORT);
	b[0] ^= 1;
	assert_int_equal(psb_stale_parse(b, PSB_STALE_LEN, (void *)r), -PSB_STALE_BAD_MAGIC);
	b[0] ^= 1;
	b[2] = 2;
	assert_int_equal(psb_stale_parse(b, PSB_STALE_LEN, (void *)r), -PSB_STALE_BAD_MAGIC);
	b[2] = PSB_STALE_WIRE;
	b[47] = 1;	/* the reserved word */
	assert_int_equal(psb_stale_parse(b, PSB_STALE_LEN, (void *)r), -PSB_STALE_BAD_FIELD);
	for (int t = 0; t < 256; t++) {
		m = ok;
		m.type = (uint8_t)t;
		if (t < PSB_STALE_POST || t > PSB_STALE_ACK)
			assert_int_equal(parse_with(&m), -PSB_STALE_BAD_TYPE);
	}
	/* sums a worker's versions cannot make: more than samples x held */
	m = ok;
	m.sum = (uint64_t)m.samples * m.held + 1;
	assert_int_equal(parse_with(&m), -PSB_STALE_BAD_FIELD);
	m = ok;
	m.samples = 0xffffffffu;
	m.sum = 0;
	assert_int_equal(parse_with(&m), -PSB_STALE_BAD_FIELD);
	m = ok;
	m.window = 0;
	assert_int_equal(parse_with(&m), -PSB_STALE_BAD_FIELD);
	m = ok;
	m.window = 3601 * SEC;
	assert_int_equal(parse_with(&m), -PSB_STALE_BAD_FIELD);
	m = ok;
	m.samples = 0;		/* a join: its sum is the key, it has no window */
	assert_int_equal(parse_with(&m), -PSB_STALE_BAD_FIELD);
	m.window = 0;
	assert_int_equal(parse_with(&m), PSB_STALE_POST);
	m = (struct psb_stale_msg){ .type = PSB_STALE_ACK, .window = 8 };
	assert_int_equal(parse_with(&m), -PSB_STALE_BAD_FIELD);
	m = (struct psb_stale_msg){ .type = PSB_STALE_PULL, .sum = 1 };
	assert_int_equal(parse_with(&m), -PSB_STALE_BAD_FIELD);
}

static void
test_opts(void **state)
{
	struct psb_stale_opts o;
	char err[256];

	(void)state;
	psb_stale_opts_default(&o);
	assert_int_equal(psb_stale_opt(&o, "push_frequency", "0.05", err, sizeof(err)), 1);
	assert_int_equal(o.push_ns, 50 * MS);
	assert_int_equal(psb_stale_opt(&o, "push-frequency", "0.02", err, sizeof(err)), 1);
	assert_int_equal(o.push_ns, 20 * MS);
	assert_int_equal(psb_stale_opt(&o, "data_size", "10", err, sizeof(err)), 1);
	assert_int_equal(o.data_size, 10000000);
	assert_int_equal(psb_stale_opt(&o, "data_size", "0.5", err, sizeof(err)), 1);
	assert_int_equal(o.data_size, 500000);
	assert_int_equal(psb_stale_opt(&o, "data_size", "64KiB", err, sizeof(err)), 1);
	assert_int_equal(o.data_size, 65536);
	assert_int_equal(psb_stale_opt(&o, "nworkers-per-node", "2", err, sizeof(err)), 1);
	assert_int_equal(o.workers_per_node, 2);
	assert_int_equal(psb_stale_opt(&o, "workers_per_node", "3", err, sizeof(err)), 1);
	assert_int_equal(o.workers_per_node, 3);
	assert_int_equal(psb_stale_opt(&o, "LOGLEVEL", "debug", err, sizeof(err)), 1);
	assert_int_equal(o.loglevel, 8);
	assert_int_equal(psb_stale_opt(&o, "mode", "filesystem", err, sizeof(err)), 1);
	assert_int_equal(o.mode, PSB_STALE_FILESYSTEM);
	assert_int_equal(psb_stale_opt(&o, "trial_name", "0208-3", err, sizeof(err)), 1);
	assert_string_equal(o.trial_name, "0208-3");
	assert_int_equal(psb_stale_opt(&o, "rate", "1", err, sizeof(err)), 0);

	/* each wrong value names its flag, and leaves the setting as it was */
	assert_int_equal(psb_stale_opt(&o, "mode", "broadcast", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "--mode"));
	assert_int_equal(o.mode, PSB_STALE_FILESYSTEM);
	assert_int_equal(psb_stale_opt(&o, "push_frequency", "0.2s", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "--push_frequency"));
	assert_int_equal(psb_stale_opt(&o, "push_frequency", "-1", err, sizeof(err)), -EINVAL);
	assert_int_equal(psb_stale_opt(&o, "push_frequency", "nan", err, sizeof(err)), -EINVAL);
	assert_int_equal(o.push_ns, 20 * MS);
	assert_int_equal(psb_stale_opt(&o, "data_size", "10 MB", err, sizeof(err)), -EINVAL);
	assert_int_equal(psb_stale_opt(&o, "data_size", "1e12", err, sizeof(err)), -EINVAL);
	assert_int_equal(psb_stale_opt(&o, "data_size", "-3", err, sizeof(err)), -EINVAL);
	assert_int_equal(psb_stale_opt(&o, "workers", "0", err, sizeof(err)), -EINVAL);
	assert_int_equal(psb_stale_opt(&o, "workers", "4097", err, sizeof(err)), -EINVAL);
	assert_int_equal(psb_stale_opt(&o, "max_version", "12x", err, sizeof(err)), -EINVAL);
	assert_int_equal(psb_stale_opt(&o, "trial_name", "../x", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "--trial_name"));
	assert_int_equal(psb_stale_opt(&o, "trial_name", "a/b", err, sizeof(err)), -EINVAL);
	assert_int_equal(psb_stale_opt(&o, "LOGLEVEL", "LOUD", err, sizeof(err)), -EINVAL);
	assert_int_equal(psb_stale_opts_check(&o, err, sizeof(err)), 0);

	o.step_ns = 3 * SEC;
	o.post_ns = 2 * SEC;
	assert_int_equal(psb_stale_opts_check(&o, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "--step_frequency"));
	psb_stale_opts_default(&o);
	o.workers = 2;
	o.workers_per_node = 3;
	assert_int_equal(psb_stale_opts_check(&o, err, sizeof(err)), -EINVAL);
}

static void
test_fill_verify(void **state)
{
	uint8_t *b = malloc(100003);

	(void)state;
	psb_stale_fill(b, 100003, 7);
	assert_int_equal(psb_stale_verify(b, 100003, 7), -1);
	assert_int_not_equal(psb_stale_verify(b, 100003, 8), -1);
	b[50001] ^= 4;
	assert_int_equal(psb_stale_verify(b, 100003, 7), 50001);
	b[50001] ^= 4;
	b[100002] ^= 1;		/* the tail, shorter than a word */
	assert_int_equal(psb_stale_verify(b, 100003, 7), 100002);
	psb_stale_fill(b, 0, 1);
	assert_int_equal(psb_stale_verify(b, 0, 1), -1);
	/* made a range at a time, from any offset and of any length: the same bytes */
	{
		static const uint64_t cuts[] = { 0, 1, 3, 8, 13, 16, 17, 4099, 4100, 65541,
						 100000, 100001, 100003 };
		unsigned int k;

		memset(b, 0, 100003);
		for (k = 0; k + 1 < sizeof(cuts) / sizeof(cuts[0]); k++)
			psb_stale_fill_at(b, cuts[k], cuts[k + 1] - cuts[k], 9);
		assert_int_equal(psb_stale_verify(b, 100003, 9), -1);
		memset(b + 5, 0, 2);
		psb_stale_fill_at(b, 5, 2, 9);		/* within one word */
		psb_stale_fill_at(b, 7, 0, 1);		/* nothing */
		assert_int_equal(psb_stale_verify(b, 100003, 9), -1);
	}
	free(b);
}

static struct psb_stale_msg
post(uint32_t worker, uint32_t seq, uint32_t held, uint32_t samples, uint64_t sum,
		uint64_t window)
{
	return (struct psb_stale_msg){ .type = PSB_STALE_POST, .session = 42, .worker = worker,
		.held = held, .samples = samples, .seq = seq, .sum = sum, .window = window };
}

/* The sum of the versions newest at n instants step apart ending at end, one by one. */
static uint64_t
sampled_slow(const uint64_t *t, const uint32_t *vid, unsigned int nv, uint64_t end,
		uint64_t step, uint32_t n)
{
	uint64_t sum = 0;
	uint32_t k, v;
	unsigned int i;

	for (k = 0; k < n; k++) {
		uint64_t at = end - (uint64_t)(n - 1 - k) * step;

		for (v = 0, i = 0; i < nv && t[i] <= at; i++)
			v = vid[i];
		sum += v;
	}
	return sum;
}

static void
test_acct_sampled(void **state)
{
	struct psb_stale_acct *a;
	uint64_t sum, t[40], end, step;
	uint32_t vid[40], n, v;
	unsigned int i, round;

	(void)state;
	assert_int_equal(psb_stale_acct_create(42, 2, 0, 100 * MS, SEC, 10 * SEC, 100 * MS, &a), 0);
	/* version v from v x 100 ms on */
	for (v = 1; v <= 50; v++)
		psb_stale_acct_publish(a, v, v * 100 * MS);
	assert_int_equal(psb_stale_acct_current(a), 50);
	/* 10 instants 100 ms apart ending at 2 s: 1.1 .. 2.0 s, versions 11 .. 20 */
	assert_int_equal(psb_stale_acct_sampled(a, 2 * SEC, 100 * MS, 10, &sum), 0);
	assert_int_equal(sum, 155);
	/* an instant at a version's time holds it; 1 ns before, the one before */
	assert_int_equal(psb_stale_acct_sampled(a, 1150 * MS, 50 * MS, 2, &sum), 0);
	assert_int_equal(sum, 22);
	assert_int_equal(psb_stale_acct_sampled(a, 1100 * MS - 1, 50 * MS, 2, &sum), 0);
	assert_int_equal(sum, 20);
	/* before the first version: 0; after the last: it stays the newest; none: 0 */
	assert_int_equal(psb_stale_acct_sampled(a, 50 * MS, 10 * MS, 5, &sum), 0);
	assert_int_equal(sum, 0);
	assert_int_equal(psb_stale_acct_sampled(a, 7 * SEC, 100 * MS, 10, &sum), 0);
	assert_int_equal(sum, 500);
	assert_int_equal(psb_stale_acct_sampled(a, 7 * SEC, 100 * MS, 0, &sum), 0);
	assert_int_equal(sum, 0);
	/* older entries go (2 x (10 s / 100 ms + 2) kept): what a window needs past them is
	 * refused, never guessed */
	for (v = 51; v <= 300; v++)
		psb_stale_acct_publish(a, v, v * 100 * MS);
	assert_int_equal(psb_stale_acct_sampled(a, 21 * SEC, 100 * MS, 10, &sum), 0);
	assert_int_equal(sum, 2055);
	/* kept: 97 .. 300; 96 known as the newest from 9.6 s */
	assert_int_equal(psb_stale_acct_sampled(a, 10500 * MS, 100 * MS, 10, &sum), 0);
	assert_int_equal(sum, 1005);
	assert_int_equal(psb_stale_acct_sampled(a, 10500 * MS - 1, 100 * MS, 10, &sum), -ERANGE);
	psb_stale_acct_free(a);

	/* against the same sum taken one instant at a time, at random times and steps */
	srand(7);
	for (round = 0; round < 200; round++) {
		assert_int_equal(psb_stale_acct_create(1, 1, 0, MS, SEC, 10 * SEC, MS, &a), 0);
		for (i = 0, end = 0; i < 40; i++) {
			end += (uint64_t)(rand() % 3) * MS + (uint64_t)(rand() % 1000) * 1000;
			t[i] = end;
			vid[i] = i + 1 + (i > 20);	/* a version skipped: rises of 2 */
			psb_stale_acct_publish(a, vid[i], t[i]);
		}
		step = MS / 2 + (uint64_t)(rand() % 3000) * 1000;
		n = 1 + (uint32_t)(rand() % 40);
		end = (uint64_t)n * step + (uint64_t)(rand() % 100) * MS;
		assert_int_equal(psb_stale_acct_sampled(a, end, step, n, &sum), 0);
		assert_int_equal(sum, sampled_slow(t, vid, 40, end, step, n));
		psb_stale_acct_free(a);
	}
	assert_int_equal(psb_stale_acct_create(42, 0, 0, MS, SEC, SEC, MS, &a), -EINVAL);
	assert_int_equal(psb_stale_acct_create(42, 1, 0, 0, SEC, SEC, MS, &a), -EINVAL);
	assert_int_equal(psb_stale_acct_create(42, 1, 0, MS, SEC, 3600 * SEC, 1000, &a), -EINVAL);
}

static void
test_acct_posts(void **state)
{
	struct psb_stale_acct *a;
	struct psb_stale_point pt;
	struct psb_stale_msg m;
	const struct psb_stale_totals *tot;
	uint32_t ip = 0xc6130b01;

	(void)state;
	assert_int_equal(psb_stale_acct_create(42, 2, 0x5eed, 10 * MS, SEC, 3 * SEC, 100 * MS, &a),
			 0);
	tot = psb_stale_acct_totals(a);
	/* joins: session 0 is taken for a join alone; without the key, another host's join
	 * takes no worker id */
	m = post(0, 0, 0, 0, 0x5eec, 0);
	m.session = 0;
	assert_int_equal(psb_stale_acct_post(a, &m, ip + 9, 5000, 0, &pt), -1);
	assert_int_equal(tot->refused[PSB_STALE_REF_KEY], 1);
	assert_int_equal(psb_stale_acct_joined(a), 0);
	m.sum = 0x5eed;
	assert_int_equal(psb_stale_acct_post(a, &m, ip, 5000, 0, &pt), 0);
	assert_int_equal(psb_stale_acct_post(a, &m, ip, 5000, 0, &pt), 0);	/* again */
	assert_int_equal(psb_stale_acct_joined(a), 1);
	m.worker = 1;
	assert_int_equal(psb_stale_acct_post(a, &m, ip + 1, 5000, 0, &pt), 0);
	assert_int_equal(psb_stale_acct_joined(a), 2);

	for (uint32_t v = 1; v <= 30; v++)
		psb_stale_acct_publish(a, v, v * 100 * MS);
	/*
	 * worker 0 held each version 30 ms after it came, sampled every 10 ms over (1, 2] s:
	 * 3 samples in 10 a version behind. The trainer's versions at 1.01 .. 2.00 s sum to
	 * 9 x 10 + 10 x (11 + .. + 19) + 20 = 1460, the worker's to 2 x 9 + 10 x (10 + .. + 18)
	 * + 8 x 19 = 1430.
	 */
	m = post(0, 1, 19, 100, 1430, SEC);
	assert_int_equal(psb_stale_acct_post(a, &m, ip, 5000, 2 * SEC, &pt), 1);
	assert_float_equal(pt.window, 0.3, 1e-9);
	assert_float_equal(pt.trainer_mean, 14.6, 1e-9);
	assert_float_equal(pt.mean, 14.3, 1e-9);
	assert_float_equal(pt.version_diff, 30 - 14.3, 1e-9);	/* the newest: 30 */
	assert_int_equal(tot->posts, 1);

	/* the same post again (its ACK was lost): answered, not counted */
	assert_int_equal(psb_stale_acct_post(a, &m, ip, 5000, 2 * SEC, &pt), 0);
	assert_int_equal(tot->posts, 1);
	assert_int_equal(tot->duplicates, 1);
	/* an older seq, or the same one with other figures: a replay */
	m.sum -= 1;
	assert_int_equal(psb_stale_acct_post(a, &m, ip, 5000, 2 * SEC, &pt), -1);
	assert_int_equal(tot->refused[PSB_STALE_REF_REPLAY], 1);
	/* from another address than it joined from */
	m = post(0, 2, 20, 1, 20, SEC);
	assert_int_equal(psb_stale_acct_post(a, &m, ip, 5001, 2 * SEC, &pt), -1);
	assert_int_equal(tot->refused[PSB_STALE_REF_ADDRESS], 1);
	/* another session, an unknown worker, a version not published yet, a long window */
	m.session = 41;
	assert_int_equal(psb_stale_acct_post(a, &m, ip, 5000, 2 * SEC, &pt), -1);
	m = post(2, 1, 1, 1, 1, SEC);
	assert_int_equal(psb_stale_acct_post(a, &m, ip, 5000, 2 * SEC, &pt), -1);
	m = post(0, 2, 31, 1, 31, SEC);
	assert_int_equal(psb_stale_acct_post(a, &m, ip, 5000, 2 * SEC, &pt), -1);
	m = post(0, 2, 20, 1, 20, 4 * SEC);
	assert_int_equal(psb_stale_acct_post(a, &m, ip, 5000, 3 * SEC, &pt), -1);
	assert_int_equal(tot->refused[PSB_STALE_REF_SESSION], 1);
	assert_int_equal(tot->refused[PSB_STALE_REF_WORKER], 1);
	assert_int_equal(tot->refused[PSB_STALE_REF_FUTURE], 1);
	assert_int_equal(tot->refused[PSB_STALE_REF_WINDOW], 1);
	assert_int_equal(tot->posts, 1);
	/* none of that changed what worker 0 said */
	assert_int_equal(psb_stale_acct_worker(a, 0)->held, 19);
	assert_int_equal(psb_stale_acct_worker(a, 0)->posts, 1);

	/* a worker exactly up to date: 0 (29 at 2.91 .. 2.99 s, 30 at 3.00) */
	m = post(1, 1, 30, 10, 9 * 29 + 30, SEC);
	assert_int_equal(psb_stale_acct_post(a, &m, ip + 1, 5000, 3 * SEC, &pt), 1);
	assert_float_equal(pt.window, 0, 1e-9);
	/*
	 * a worker claiming versions before they were made (30 at every sample): refused, not
	 * a staleness below 0; nor samples closer than the experiment's step (101 in 1 s)
	 */
	m = post(1, 2, 30, 10, 300, SEC);
	assert_int_equal(psb_stale_acct_post(a, &m, ip + 1, 5000, 3 * SEC, &pt), -1);
	assert_int_equal(tot->refused[PSB_STALE_REF_AHEAD], 1);
	m = post(1, 2, 30, 101, 101 * 20, SEC);
	assert_int_equal(psb_stale_acct_post(a, &m, ip + 1, 5000, 3 * SEC, &pt), -1);
	assert_int_equal(tot->refused[PSB_STALE_REF_STEP], 1);
	assert_int_equal(psb_stale_acct_worker(a, 1)->posts, 1);
	/* PULLs: from where the worker joined only */
	m = (struct psb_stale_msg){ .type = PSB_STALE_PULL, .session = 42, .worker = 1 };
	assert_int_equal(psb_stale_acct_known(a, &m, ip + 1, 5000), 0);
	assert_int_equal(psb_stale_acct_known(a, &m, ip, 5000), -1);
	psb_stale_acct_bad(a, -PSB_STALE_BAD_MAGIC);
	assert_int_equal(tot->bad[PSB_STALE_BAD_MAGIC], 1);

	/* a worker posting as fast as it can: 4 at once (1 taken above), then 2 a second */
	for (uint32_t q = 2; q < 12; q++) {
		m = post(1, q, 29, 10, 245, SEC);	/* 3.0 s: versions 29 .. 30 */
		psb_stale_acct_post(a, &m, ip + 1, 5000, 3 * SEC, &pt);
	}
	assert_int_equal(psb_stale_acct_worker(a, 1)->posts, 4);
	assert_int_equal(tot->refused[PSB_STALE_REF_RATE], 7);
	m = post(1, 12, 29, 10, 245, SEC);
	assert_int_equal(psb_stale_acct_post(a, &m, ip + 1, 5000, 3 * SEC + SEC / 2, &pt), 1);
	m = post(1, 13, 29, 10, 245, SEC);
	assert_int_equal(psb_stale_acct_post(a, &m, ip + 1, 5000, 3 * SEC + SEC / 2, &pt), -1);
	/* the others post on */
	m = post(0, 3, 29, 10, 245, SEC);
	assert_int_equal(psb_stale_acct_post(a, &m, ip, 5000, 3 * SEC + SEC / 2, &pt), 1);
	psb_stale_acct_free(a);
}

static void
test_sampler(void **state)
{
	struct psb_stale_sampler s;
	struct psb_stale_msg m;
	uint64_t t;
	int posts = 0;

	(void)state;
	psb_stale_sampler_init(&s, 5 * MS, SEC, 0);
	/* held version t / 100 ms, ticked every millisecond for 2 s */
	for (t = MS; t <= 2 * SEC; t += MS) {
		if (psb_stale_sampler_tick(&s, (uint32_t)(t / (100 * MS)), t, &m)) {
			posts++;
			assert_int_equal(m.type, PSB_STALE_POST);
			assert_int_equal(m.samples, 200);
			assert_int_equal(m.window, SEC);
			assert_int_equal(m.seq, posts);
			assert_true(m.sum <= (uint64_t)m.samples * m.held);
		}
	}
	assert_int_equal(posts, 2);
	/* a worker late by a long time takes a bounded number of samples, and says so */
	assert_int_equal(psb_stale_sampler_tick(&s, 20, 3600 * SEC, &m), 1);
	assert_true(m.samples <= PSB_STALE_SAMPLES_MAX);
	assert_true(s.lost_steps > 0);
	assert_true(psb_stale_sampler_next_ns(&s) > 3600 * SEC);
	/* a flush carries one sample at least */
	psb_stale_sampler_flush(&s, 21, 3600 * SEC + 1, &m);
	assert_int_equal(m.samples, 1);
	assert_int_equal(m.sum, 21);

	/* samples due before a newer version was taken count the one before, however late
	 * they are taken: 10, 20, 30 ms held 1; 40 .. 100 ms held 2 */
	psb_stale_sampler_init(&s, 10 * MS, 100 * MS, 0);
	psb_stale_sampler_take(&s, 1, 35 * MS);
	assert_int_equal(psb_stale_sampler_tick(&s, 2, 100 * MS, &m), 1);
	assert_int_equal(m.samples, 10);
	assert_int_equal(m.sum, 3 * 1 + 7 * 2);
	/* a post falls on a sample: 10 ms posts at 3 ms steps come every 12 ms */
	psb_stale_sampler_init(&s, 3 * MS, 10 * MS, 0);
	assert_int_equal(psb_stale_sampler_tick(&s, 1, 10 * MS, &m), 0);
	assert_int_equal(psb_stale_sampler_tick(&s, 1, 12 * MS, &m), 1);
	assert_int_equal(m.samples, 4);
	assert_int_equal(psb_stale_sampler_next_ns(&s), 15 * MS);
}

static char g_dir[64];

/* A directory of its own for a test's files, removed by rm_dir */
static void
mk_dir(void)
{
	snprintf(g_dir, sizeof(g_dir), "/tmp/psb-stalefs-XXXXXX");
	assert_non_null(mkdtemp(g_dir));
}

static void
rm_dir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
	assert_int_equal(system(cmd), 0);
}

static void
test_fs(void **state)
{
	struct psb_stale_fs w, r;
	uint8_t *a = malloc(70000), *b = malloc(70000);
	char err[256], path[128];
	uint64_t len;
	uint32_t vid;
	int fd;

	(void)state;
	mk_dir();
	assert_int_equal(psb_stale_fs_open(&w, g_dir, 1, 2, err, sizeof(err)), 0);
	assert_int_equal(psb_stale_fs_open(&r, g_dir, 0, 0, err, sizeof(err)), 0);
	assert_int_equal(psb_stale_fs_latest(&r, &vid), -ENOENT);
	for (uint32_t v = 1; v <= 5; v++) {
		psb_stale_fill(a, 70000, v);
		assert_int_equal(psb_stale_fs_publish(&w, v, a, 70000, psb_mc_crc(0, a, 70000), err,
						      sizeof(err)), 0);
		assert_int_equal(psb_stale_fs_latest(&r, &vid), 0);
		assert_int_equal(vid, v);
		assert_int_equal(psb_stale_fs_read(&r, vid, b, 70000, &len, err, sizeof(err)), 0);
		assert_int_equal(len, 70000);
		assert_int_equal(psb_stale_verify(b, len, v), -1);
	}
	/* it keeps the newest two */
	assert_int_equal(psb_stale_fs_read(&r, 3, b, 70000, &len, err, sizeof(err)), -ENOENT);
	assert_int_equal(w.files_removed, 3);
	/* more than the reader holds */
	assert_int_equal(psb_stale_fs_read(&r, 5, b, 69999, &len, err, sizeof(err)), -EFBIG);
	/* a damaged byte, a cut file, a longer one: refused whole, counted */
	snprintf(path, sizeof(path), "%s/v0000000005.psbv", g_dir);
	fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "x", 1, 1000), 1);
	close(fd);
	assert_int_equal(psb_stale_fs_read(&r, 5, b, 70000, &len, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "CRC32C"));
	assert_int_equal(truncate(path, 50000), 0);
	assert_int_equal(psb_stale_fs_read(&r, 5, b, 70000, &len, err, sizeof(err)), -EBADMSG);
	snprintf(path, sizeof(path), "%s/v0000000004.psbv", g_dir);
	fd = open(path, O_WRONLY | O_APPEND);
	assert_int_equal(write(fd, "more", 4), 4);
	close(fd);
	assert_int_equal(psb_stale_fs_read(&r, 4, b, 70000, &len, err, sizeof(err)), -EBADMSG);
	assert_int_equal(r.bad_files, 3);
	/* a link to somewhere else, or a version file that is a link: not followed */
	snprintf(path, sizeof(path), "%s/latest", g_dir);
	unlink(path);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	assert_int_equal(psb_stale_fs_latest(&r, &vid), -EINVAL);
	unlink(path);
	assert_int_equal(symlink("../v0000000005.psbv", path), 0);
	assert_int_equal(psb_stale_fs_latest(&r, &vid), -EINVAL);
	snprintf(path, sizeof(path), "%s/v0000000009.psbv", g_dir);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	assert_int_equal(psb_stale_fs_read(&r, 9, b, 70000, &len, err, sizeof(err)), -ELOOP);
	psb_stale_fs_close(&w);
	psb_stale_fs_close(&r);
	rm_dir();
	free(a);
	free(b);
}

/* A version file made here, header field by field: "123456789" under the CRC given. */
static void
put_file(uint32_t vid, uint32_t crc, uint32_t format)
{
	uint8_t f[PSB_STALE_FS_HLEN + 9] = { 0 };
	char path[128];
	int fd;

	psb_wr32(f, 0x50534256);		/* "PSBV" */
	psb_wr32(f + 4, vid);
	psb_wr64(f + 8, 9);
	psb_wr32(f + 16, crc);
	psb_wr32(f + 20, format);
	memcpy(f + PSB_STALE_FS_HLEN, "123456789", 9);
	snprintf(path, sizeof(path), "%s/v%010u.psbv", g_dir, vid);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, f, sizeof(f)), sizeof(f));
	close(fd);
}

/*
 * The file header as PROTOCOL.md gives it: format 2, the data's CRC-32C (its check value
 * here, 0xe3069283, written by hand); a file of format 0, whose CRC was another, is refused
 * by its format, not taken for a damaged one; what psb writes says format 2.
 */
static void
test_fs_format(void **state)
{
	struct psb_stale_fs fs;
	uint8_t b[64], h[PSB_STALE_FS_HLEN];
	char err[256], path[128];
	uint64_t len;
	int fd;

	(void)state;
	mk_dir();
	assert_int_equal(psb_stale_fs_open(&fs, g_dir, 0, 4, err, sizeof(err)), 0);
	put_file(1, 0xe3069283, 2);
	assert_int_equal(psb_stale_fs_read(&fs, 1, b, sizeof(b), &len, err, sizeof(err)), 0);
	assert_int_equal(len, 9);
	assert_memory_equal(b, "123456789", 9);
	put_file(2, 0x58e3fa20, 0);
	assert_int_equal(psb_stale_fs_read(&fs, 2, b, sizeof(b), &len, err, sizeof(err)),
			 -EBADMSG);
	assert_string_equal(err, "v0000000002.psbv: format 0, this reader takes format 2");
	put_file(3, 0xe3069283, 3);
	assert_int_equal(psb_stale_fs_read(&fs, 3, b, sizeof(b), &len, err, sizeof(err)),
			 -EBADMSG);
	assert_non_null(strstr(err, "format 3"));
	assert_int_equal(fs.bad_files, 2);
	assert_int_equal(psb_stale_fs_publish(&fs, 4, "123456789", 9, psb_mc_crc(0, "123456789", 9),
					      err, sizeof(err)), 0);
	snprintf(path, sizeof(path), "%s/v0000000004.psbv", g_dir);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, h, sizeof(h)), sizeof(h));
	close(fd);
	assert_int_equal(psb_rd32(h + 16), 0xe3069283);
	assert_int_equal(psb_rd32(h + 20), 2);
	psb_stale_fs_close(&fs);
	rm_dir();
}

/* ------------------------------------------------------------ the worker's part ---- */

#define TR_IP	0xc6130010u	/* 198.19.0.16 */
#define TR_PORT	7001

static struct {
	struct psb_stale_msg sent[64];
	unsigned int n;
	unsigned int bad;
} g_cl;

static void
cl_send(void *arg, const uint8_t *buf, size_t len)
{
	(void)arg;
	if (psb_stale_parse(buf, len, &g_cl.sent[g_cl.n % 64]) < 0)
		g_cl.bad++;
	g_cl.n++;
}

static const struct psb_stale_msg *
cl_last(void)
{
	assert_true(g_cl.n > 0);
	return &g_cl.sent[(g_cl.n - 1) % 64];
}

static void
cl_ack(struct psb_stale_client *c, uint32_t session, uint32_t worker, uint32_t held,
		uint64_t flags, uint32_t ip, uint64_t now)
{
	struct psb_stale_msg a = { .type = PSB_STALE_ACK, .session = session, .worker = worker,
		.held = held, .window = flags };
	uint8_t b[PSB_STALE_LEN];

	psb_stale_write(b, &a);
	psb_stale_client_input(c, b, sizeof(b), ip, TR_PORT, now);
}

static void
cl_init(struct psb_stale_client *c, int mode)
{
	struct psb_stale_client_cfg cfg = {
		.id = 3, .key = 77, .mode = mode, .trainer_ip = TR_IP, .trainer_port = TR_PORT,
		.step_ns = 5 * MS, .post_ns = SEC, .pull_ns = 100 * MS, .join_ns = 2 * SEC,
		.end_ns = 2 * SEC, .data_size = 4096, .verify = 1, .send = cl_send,
		.recv = { .budget = 1 << 20, .max_version = 1 << 18, .backoff_ns = MS,
			  .retry_ns = 10 * MS, .reorder = 8, .vid_window = 1024,
			  .session_idle_ns = SEC, .seed = 1 },
	};

	memset(&g_cl, 0, sizeof(g_cl));
	assert_int_equal(psb_stale_client_init(c, &cfg, 0), 0);
}

static void
test_client_run(void **state)
{
	struct psb_stale_client c;
	uint8_t *v = malloc(4096);
	uint64_t t;
	unsigned int posts = 0;

	(void)state;
	assert_non_null(v);
	cl_init(&c, PSB_STALE_MULTICAST);
	/* joins with the key, every 200 ms */
	psb_stale_client_step(&c, 0);
	assert_int_equal(g_cl.n, 1);
	assert_int_equal(cl_last()->type, PSB_STALE_POST);
	assert_int_equal(cl_last()->samples, 0);
	assert_int_equal(cl_last()->sum, 77);
	assert_int_equal(cl_last()->worker, 3);
	psb_stale_client_step(&c, 100 * MS);
	assert_int_equal(g_cl.n, 1);
	assert_true(psb_stale_client_next_ns(&c) <= 200 * MS);
	psb_stale_client_step(&c, 200 * MS);
	assert_int_equal(g_cl.n, 2);
	/* from another address, for another worker: not taken */
	cl_ack(&c, 0xabc, 3, 0, PSB_STALE_ACK_WAITING, TR_IP + 1, 210 * MS);
	cl_ack(&c, 0xabc, 4, 0, PSB_STALE_ACK_WAITING, TR_IP, 210 * MS);
	assert_int_equal(c.stray, 2);
	assert_int_equal(c.state, PSB_STALE_CL_JOINING);
	/* the trainer waits for the others: joined, not running */
	cl_ack(&c, 0xabc, 3, 0, PSB_STALE_ACK_WAITING, TR_IP, 220 * MS);
	assert_int_equal(c.state, PSB_STALE_CL_WAITING);
	assert_int_equal(c.session, 0xabc);
	/* another session's ACK is stray */
	cl_ack(&c, 0xabd, 3, 0, 0, TR_IP, 230 * MS);
	assert_int_equal(c.stray, 3);
	cl_ack(&c, 0xabc, 3, 0, 0, TR_IP, 300 * MS);
	assert_int_equal(c.state, PSB_STALE_CL_RUNNING);
	/* versions: a wrong one is refused, a right one held */
	psb_stale_fill(v, 4096, 2);
	psb_stale_client_took(&c, 1, v, 4096, 300 * MS);
	assert_int_equal(c.verify_fail, 1);
	assert_int_equal(c.held, 0);
	psb_stale_client_took(&c, 2, v, 4096, 300 * MS);
	assert_int_equal(c.held, 2);
	psb_stale_client_took(&c, 2, v, 4096, 300 * MS);
	assert_int_equal(c.versions, 1);
	/* a post a second, of the version held; the trainer ACKs them */
	g_cl.n = 0;
	for (t = 300 * MS; t <= 2400 * MS; t += MS) {
		psb_stale_client_step(&c, t);
		if (g_cl.n > posts) {
			posts = g_cl.n;
			assert_int_equal(cl_last()->type, PSB_STALE_POST);
			assert_int_equal(cl_last()->held, 2);
			assert_int_equal(cl_last()->sum, 2ull * cl_last()->samples);
			assert_int_equal(cl_last()->session, 0xabc);
			cl_ack(&c, 0xabc, 3, 2, 0, TR_IP, t);
		}
	}
	assert_int_equal(posts, 2);
	assert_int_equal(c.posts, 2);
	/* the end at version 4: not held yet, no last post */
	cl_ack(&c, 0xabc, 3, 4, PSB_STALE_ACK_END, TR_IP, 2500 * MS);
	assert_int_equal(c.state, PSB_STALE_CL_ENDING);
	psb_stale_client_step(&c, 2600 * MS);
	assert_int_equal(g_cl.n, posts);
	psb_stale_fill(v, 4096, 4);
	psb_stale_client_took(&c, 4, v, 4096, 2650 * MS);
	psb_stale_client_step(&c, 2700 * MS);
	assert_int_equal(g_cl.n, posts + 1);
	assert_int_equal(cl_last()->held, 4);
	assert_true(cl_last()->samples >= 1);
	/* its ACK ends the worker's run */
	cl_ack(&c, 0xabc, 3, 4, PSB_STALE_ACK_END, TR_IP, 2710 * MS);
	assert_int_equal(c.state, PSB_STALE_CL_DONE);
	assert_int_equal(psb_stale_client_next_ns(&c), UINT64_MAX);
	assert_int_equal(g_cl.bad, 0);
	psb_stale_client_fini(&c);
	free(v);
}

/* Steps c as psb_stale_client_next_ns says from t until it is over: the time it ended. */
static uint64_t
cl_run(struct psb_stale_client *c, uint64_t t)
{
	for (;;) {
		psb_stale_client_step(c, t);
		if (psb_stale_client_over(c))
			return t;
		assert_true(psb_stale_client_next_ns(c) > t);
		t = psb_stale_client_next_ns(c);
	}
}

static void
test_client_waits(void **state)
{
	struct psb_stale_client c;
	uint64_t t;

	(void)state;
	/* no trainer: failed at join_ns, naming it */
	cl_init(&c, PSB_STALE_MULTICAST);
	t = cl_run(&c, 0);
	assert_int_equal(c.state, PSB_STALE_CL_FAILED);
	assert_int_equal(t, 2 * SEC);
	assert_non_null(strstr(c.failure, "198.19.0.16:7001 did not answer within 2.0 s"));
	assert_int_equal(g_cl.n, 10);	/* a join every 200 ms */
	psb_stale_client_fini(&c);

	/* a trainer gone silent while it runs: 3 post periods and 3 s */
	cl_init(&c, PSB_STALE_PULL_MODE);
	cl_ack(&c, 9, 3, 0, 0, TR_IP, SEC);
	assert_int_equal(c.state, PSB_STALE_CL_RUNNING);
	t = cl_run(&c, SEC);
	assert_int_equal(t, 7 * SEC);
	assert_non_null(strstr(c.failure, "did not answer for 6.0 s"));
	psb_stale_client_fini(&c);

	/* pull mode pulls every pull period, saying what it holds */
	cl_init(&c, PSB_STALE_PULL_MODE);
	cl_ack(&c, 9, 3, 0, 0, TR_IP, 0);
	for (t = 0; t < 1000 * MS; t += MS)
		psb_stale_client_step(&c, t);
	assert_int_equal(c.pull_seq, 10);
	psb_stale_client_fini(&c);

	/* the final version never comes: failed at end_ns, saying what it holds */
	cl_init(&c, PSB_STALE_MULTICAST);
	cl_ack(&c, 9, 3, 0, 0, TR_IP, 0);
	psb_stale_client_took(&c, 5, NULL, 0, 0);
	cl_ack(&c, 9, 3, 8, PSB_STALE_ACK_END, TR_IP, 100 * MS);
	t = cl_run(&c, 100 * MS);
	assert_int_equal(t, 2100 * MS);
	assert_non_null(strstr(c.failure, "holds version 5; the trainer ended at 8"));
	/* over: nothing more is taken or sent */
	g_cl.n = 0;
	psb_stale_client_step(&c, 3 * SEC);
	cl_ack(&c, 9, 3, 8, 0, TR_IP, 3 * SEC);
	assert_int_equal(g_cl.n, 0);
	assert_int_equal(c.state, PSB_STALE_CL_FAILED);
	psb_stale_client_fini(&c);

	/* settings that cannot run */
	{
		struct psb_stale_client_cfg bad = { .send = cl_send, .step_ns = 1, .post_ns = 1,
			.pull_ns = 1, .join_ns = 1, .end_ns = 1, .mode = PSB_STALE_FILESYSTEM,
			.id = PSB_STALE_WORKERS_MAX };

		assert_int_equal(psb_stale_client_init(&c, &bad, 0), -EINVAL);
		bad.id = 0;
		bad.send = NULL;
		assert_int_equal(psb_stale_client_init(&c, &bad, 0), -EINVAL);
		bad.send = cl_send;
		assert_int_equal(psb_stale_client_init(&c, &bad, 0), 0);
		assert_null(c.rx);
		assert_int_equal(psb_stale_client_step(&c, 0) & PSB_STALE_CL_CHECK, 0);
		psb_stale_client_fini(&c);
	}
}

/* ------------------------------------- the trainer's part, against real workers' ---- */

#define NW	3
#define W_IP(i)	(0x0a000001u + (i))
#define W_PORT	7000
#define T_IP	0x0a0000ffu
#define T_PORT	7001

/* A network of one trainer and NW workers: datagrams delivered on the next pass. */
static struct {
	struct psb_stale_trainer t;
	struct psb_stale_client c[NW];
	struct { uint8_t b[PSB_STALE_LEN]; uint32_t from, to; uint16_t fport; } q[256];
	unsigned int nq;
	int joins[NW];		/* worker i joins (0: never) */
	uint32_t cut[NW];	/* worker i takes no version past this (0: all) */
	int skip_every;		/* publish skips every n-th version (0: none) */
	int fail_at;		/* publish fails at this version (0: never) */
	uint64_t make_ns;	/* a version takes this long to make (0: made at once) */
	uint32_t pending;	/* the version being made */
	uint64_t pending_at;	/* when it is whole */
	uint64_t points;
} N;

static void
net_put(uint32_t from, uint16_t fport, uint32_t to, const uint8_t *buf, size_t len)
{
	assert_int_equal(len, PSB_STALE_LEN);
	assert_true(N.nq < 256);
	memcpy(N.q[N.nq].b, buf, len);
	N.q[N.nq].from = from;
	N.q[N.nq].fport = fport;
	N.q[N.nq++].to = to;
}

static void
tr_send(void *arg, uint32_t ip, uint16_t port, const uint8_t *buf, size_t len)
{
	(void)arg;
	assert_int_equal(port, W_PORT);
	net_put(T_IP, T_PORT, ip, buf, len);
}

static void
wk_send(void *arg, const uint8_t *buf, size_t len)
{
	net_put(W_IP((uint32_t)(uintptr_t)arg), W_PORT, T_IP, buf, len);
}

/* The versions' transport, perfect: every worker takes each version as it is made. */
static void
deliver(uint32_t vid, uint64_t now)
{
	unsigned int i;

	for (i = 0; i < NW; i++)
		if (N.cut[i] == 0 || vid <= N.cut[i])
			psb_stale_client_took(&N.c[i], vid, NULL, 0, now);
}

static int
tr_publish(void *arg, uint32_t vid, uint64_t now, uint64_t *done)
{
	(void)arg;
	if (N.fail_at != 0 && (int)vid >= N.fail_at)
		return -1;
	if (N.skip_every != 0 && vid % (uint32_t)N.skip_every == 0 && N.t.skipped < vid / 2)
		return 1;
	assert_int_equal(N.pending, 0);		/* never asked while one is being made */
	if (N.make_ns != 0) {
		N.pending = vid;
		N.pending_at = now + N.make_ns;
		return 2;
	}
	*done = now;
	deliver(vid, now);
	return 0;
}

static void
tr_point(void *arg, const struct psb_stale_point *pt)
{
	(void)arg;
	assert_true(pt->worker < NW);
	/* versions reach a worker the moment they are made: less than one behind */
	assert_true(pt->window >= 0);
	if (N.cut[pt->worker] == 0)
		assert_true(pt->window < 1.0);
	N.points++;
}

static void
net_init_for(uint32_t max_version, uint64_t max_time_ns)
{
	struct psb_stale_trainer_cfg tc = { .session = 0x77, .key = 5, .workers = NW,
		.push_ns = 100 * MS, .post_ns = 500 * MS, .step_ns = 5 * MS,
		.max_version = max_version,
		.max_time_ns = max_time_ns, .join_ns = 2 * SEC, .end_ns = 2 * SEC,
		.publish = tr_publish, .send = tr_send, .point = tr_point };
	unsigned int i;

	memset(&N, 0, sizeof(N));
	assert_int_equal(psb_stale_trainer_init(&N.t, &tc, 0), 0);
	for (i = 0; i < NW; i++) {
		struct psb_stale_client_cfg cc = { .id = i, .key = 5, .mode = PSB_STALE_FILESYSTEM,
			.trainer_ip = T_IP, .trainer_port = T_PORT, .step_ns = 5 * MS,
			.post_ns = 500 * MS, .pull_ns = 100 * MS, .join_ns = 3 * SEC,
			.end_ns = 3 * SEC, .send = wk_send, .arg = (void *)(uintptr_t)i };

		assert_int_equal(psb_stale_client_init(&N.c[i], &cc, 0), 0);
		N.joins[i] = 1;
	}
}

static void
net_init(uint32_t max_version)
{
	net_init_for(max_version, 60 * SEC);
}

/* Both sides in steps of 1 ms until the trainer's run is over, 30 s at most: its end. */
static uint64_t
net_run(void)
{
	uint64_t t;
	unsigned int i, k;

	for (t = 0; t < 30 * SEC; t += MS) {
		/* what was sent last pass arrives */
		unsigned int n = N.nq;

		for (k = 0; k < n; k++) {
			if (N.q[k].to == T_IP) {
				struct psb_stale_msg m;

				psb_stale_trainer_input(&N.t, N.q[k].b, PSB_STALE_LEN, N.q[k].from,
							N.q[k].fport, t, &m);
				continue;
			}
			for (i = 0; i < NW; i++)
				if (N.q[k].to == W_IP(i))
					psb_stale_client_input(&N.c[i], N.q[k].b, PSB_STALE_LEN,
							       N.q[k].from, N.q[k].fport, t);
		}
		memmove(N.q, N.q + n, (N.nq - n) * sizeof(N.q[0]));
		N.nq -= n;
		if (N.pending != 0 && t >= N.pending_at) {
			/* whole: handed over, unless the run stopped publishing meanwhile */
			uint32_t v = N.pending;

			N.pending = 0;
			if (N.t.making == v)
				deliver(v, t);
			psb_stale_trainer_made(&N.t, v, 0, t);
		}
		psb_stale_trainer_step(&N.t, t);
		for (i = 0; i < NW; i++)
			if (N.joins[i])
				psb_stale_client_step(&N.c[i], t);
		if (psb_stale_trainer_over(&N.t))
			return t;
	}
	fail_msg("the trainer's run did not end in 30 s");
	return 0;
}

static void
net_fini(void)
{
	unsigned int i;

	psb_stale_trainer_fini(&N.t);
	for (i = 0; i < NW; i++)
		psb_stale_client_fini(&N.c[i]);
}

static void
test_trainer_run(void **state)
{
	const struct psb_stale_totals *tot;
	unsigned int i;
	uint64_t end;

	(void)state;
	net_init(20);
	end = net_run();
	assert_int_equal(N.t.phase, PSB_STALE_TR_DONE);
	assert_int_equal(N.t.vid, 20);
	assert_int_equal(N.t.pushes, 20);
	assert_int_equal(N.t.late_pushes, 0);
	assert_int_equal(psb_stale_trainer_ndone(&N.t), NW);
	/* 20 versions 100 ms apart from the join, then the final posts */
	assert_true(end > 1900 * MS && end < 2500 * MS);
	tot = psb_stale_acct_totals(N.t.acct);
	assert_int_equal(tot->joins, NW);
	assert_true(tot->posts >= 3 * NW);
	assert_int_equal(N.points, tot->posts);
	assert_true(tot->window_sum / tot->posts < 0.5);
	assert_int_equal(tot->refused[PSB_STALE_REF_AHEAD], 0);
	for (i = 0; i < NW; i++) {
		assert_int_equal(N.c[i].held, 20);
		assert_int_equal(N.c[i].end_vid, 20);
		assert_true(N.c[i].state == PSB_STALE_CL_ENDING || N.c[i].state == PSB_STALE_CL_DONE);
	}
	net_fini();

	/* a version skipped for want of memory is counted, the run goes on to 20 */
	net_init(20);
	N.skip_every = 5;
	net_run();
	assert_int_equal(N.t.phase, PSB_STALE_TR_DONE);
	assert_int_equal(N.t.vid, 20);
	assert_true(N.t.skipped >= 1);
	net_fini();

	/* a version that cannot be made fails the run, saying which */
	net_init(20);
	N.fail_at = 7;
	net_run();
	assert_int_equal(N.t.phase, PSB_STALE_TR_FAILED);
	assert_non_null(strstr(N.t.failure, "version 7 could not be published"));
	net_fini();
}

/* A run to max_version with versions taking make_ms each to make: done, every push made */
static void
run_made(uint32_t max_version, uint64_t make_ms)
{
	net_init(max_version);
	N.make_ns = make_ms * MS;
	net_run();
	assert_int_equal(N.t.phase, PSB_STALE_TR_DONE);
	assert_int_equal(N.t.vid, max_version);
	assert_int_equal(N.t.pushes, max_version);
}

/*
 * Versions made over time (publish says 2, made says when each is whole): counted from
 * their push to then, no other asked for meanwhile, the pushes due meanwhile late.
 */
static void
test_trainer_making(void **state)
{
	const struct psb_stale_totals *tot;
	unsigned int i;

	(void)state;
	/* 30 ms to make, a push every 100 ms: on time, 30 ms a push */
	run_made(20, 30);
	assert_int_equal(N.t.late_pushes, 0);
	assert_int_equal(N.t.push_sum_ns, 20 * 30 * MS);
	/* a version counts from its hand-over, when the workers take it */
	tot = psb_stale_acct_totals(N.t.acct);
	assert_true(tot->posts >= 3 * NW);
	assert_true(tot->window_sum / tot->posts < 0.1);
	net_fini();

	/* 250 ms to make: a version every 300 ms, the 2 pushes due meanwhile late */
	run_made(10, 250);
	assert_int_equal(N.t.late_pushes, 20);
	assert_int_equal(N.t.push_max_ns, 250 * MS);
	net_fini();

	/* the run's time ends while one is being made: it is given up, the final version is
	 * the one handed over before, and every worker ends holding it */
	net_init_for(1000, 1000 * MS);
	N.make_ns = 250 * MS;
	net_run();
	assert_int_equal(N.t.phase, PSB_STALE_TR_DONE);
	assert_int_equal(N.t.vid, 3);		/* made at 250, 550, 850 ms; 4th given up */
	assert_int_equal(N.t.making, 0);
	for (i = 0; i < NW; i++)
		assert_int_equal(N.c[i].held, 3);
	net_fini();

	/* a version that cannot be handed over fails the run, naming it */
	net_init(20);
	N.make_ns = 30 * MS;
	psb_stale_trainer_step(&N.t, 0);
	N.t.phase = PSB_STALE_TR_RUNNING;	/* as if every worker had joined */
	N.t.t0 = N.t.next_push = 0;
	psb_stale_trainer_step(&N.t, 0);
	assert_int_equal(N.t.making, 1);
	psb_stale_trainer_made(&N.t, 2, 0, 10 * MS);	/* not the one being made: nothing */
	assert_int_equal(N.t.making, 1);
	psb_stale_trainer_made(&N.t, 1, -1, 30 * MS);
	assert_int_equal(N.t.phase, PSB_STALE_TR_FAILED);
	assert_non_null(strstr(N.t.failure, "version 1 could not be published"));
	N.pending = 0;
	net_fini();
}

static void
test_trainer_waits(void **state)
{
	uint64_t end;

	(void)state;
	/* worker 2 never joins: the run fails at join_ns, naming it, nothing published */
	net_init(20);
	N.joins[2] = 0;
	end = net_run();
	assert_int_equal(N.t.phase, PSB_STALE_TR_FAILED);
	assert_int_equal(end, 2 * SEC);
	assert_string_equal(N.t.failure, "workers did not join within 2.0 s: 2");
	assert_int_equal(N.t.vid, 0);
	/* the others were told to wait */
	assert_int_equal(N.c[0].state, PSB_STALE_CL_WAITING);
	net_fini();

	/* worker 1 takes nothing past version 12: the end fails end_ns later, naming it */
	net_init(20);
	N.cut[1] = 12;
	end = net_run();
	assert_int_equal(N.t.phase, PSB_STALE_TR_FAILED);
	assert_non_null(strstr(N.t.failure, "did not hold the final version 20 within 2.0 s: "
				       "1 (holds 12)"));
	assert_int_equal(psb_stale_trainer_ndone(&N.t), NW - 1);
	assert_true(end > 3 * SEC && end < 5 * SEC);
	net_fini();

	/* settings that cannot run */
	{
		struct psb_stale_trainer t;
		struct psb_stale_trainer_cfg bad = { .workers = 0, .push_ns = 1, .post_ns = 1,
			.max_version = 1, .join_ns = 1, .end_ns = 1, .publish = tr_publish,
			.send = tr_send };

		assert_int_equal(psb_stale_trainer_init(&t, &bad, 0), -EINVAL);
		bad.workers = 1;
		bad.publish = NULL;
		assert_int_equal(psb_stale_trainer_init(&t, &bad, 0), -EINVAL);
	}
}

/* ------------------------------------------- staleness under random timings ---- */

#define RW		4	/* workers */
#define RQ		4096	/* datagrams and versions in flight */

/*
 * A run of the trainer and RW workers at random timings: passes of random length, control
 * datagrams and versions delivered after random delays (versions possibly out of order or
 * after a newer one), versions made at once or over time, workers busy for a while now and
 * then (their samples taken late). The worker takes a version when it comes, whenever its
 * samples are due; the trainer takes a post when it comes.
 */
static struct {
	struct psb_stale_trainer t;
	struct psb_stale_client c[RW];
	struct {
		uint64_t at;		/* arrives */
		int kind;		/* 0: a datagram, 1: a version */
		uint32_t to, from, vid;	/* to: a worker, or RW: the trainer */
		uint8_t b[PSB_STALE_LEN];
	} q[RQ];
	unsigned int nq;
	uint64_t rng, now, make_ns, version_ns, net_ns, busy_ns;
	uint64_t busy_until[RW];	/* a worker busy (reading a version) steps no sooner */
	uint32_t pending;
	uint64_t pending_at;
	uint64_t points;
	double min_window, min_diff;
} R;

static uint64_t
r_rand(uint64_t n)
{
	R.rng ^= R.rng << 13;
	R.rng ^= R.rng >> 7;
	R.rng ^= R.rng << 17;
	return n ? R.rng % n : 0;
}

static void
r_put(int kind, uint32_t from, uint32_t to, uint32_t vid, const uint8_t *b, uint64_t delay)
{
	assert_true(R.nq < RQ);
	R.q[R.nq].at = R.now + r_rand(delay + 1);
	R.q[R.nq].kind = kind;
	R.q[R.nq].from = from;
	R.q[R.nq].to = to;
	R.q[R.nq].vid = vid;
	if (b != NULL)
		memcpy(R.q[R.nq].b, b, PSB_STALE_LEN);
	R.nq++;
}

static void
r_tr_send(void *arg, uint32_t ip, uint16_t port, const uint8_t *buf, size_t len)
{
	(void)arg;
	(void)port;
	assert_int_equal(len, PSB_STALE_LEN);
	r_put(0, RW, ip - W_IP(0), 0, buf, R.net_ns);
}

static void
r_wk_send(void *arg, const uint8_t *buf, size_t len)
{
	assert_int_equal(len, PSB_STALE_LEN);
	r_put(0, (uint32_t)(uintptr_t)arg, RW, 0, buf, R.net_ns);
}

/* a version handed over now: on its way to every worker */
static void
r_hand_over(uint32_t vid)
{
	for (uint32_t i = 0; i < RW; i++)
		r_put(1, RW, i, vid, NULL, R.version_ns);
}

static int
r_publish(void *arg, uint32_t vid, uint64_t now, uint64_t *done)
{
	(void)arg;
	if (R.make_ns != 0) {
		R.pending = vid;
		R.pending_at = now + r_rand(R.make_ns);
		return 2;
	}
	*done = now;
	r_hand_over(vid);
	return 0;
}

static void
r_point(void *arg, const struct psb_stale_point *pt)
{
	(void)arg;
	if (pt->window < R.min_window)
		R.min_window = pt->window;
	if (pt->version_diff < R.min_diff)
		R.min_diff = pt->version_diff;
	R.points++;
}

/* One run of seed's timings: ends with every worker holding the final version. */
static void
r_run(uint64_t seed)
{
	struct psb_stale_trainer_cfg tc = { .session = 9, .key = 3, .workers = RW,
		.max_version = 1000000, .join_ns = 5 * SEC, .end_ns = 5 * SEC,
		.publish = r_publish, .send = r_tr_send, .point = r_point };
	struct psb_stale_client_cfg cc = { .key = 3, .mode = PSB_STALE_FILESYSTEM,
		.trainer_ip = T_IP, .trainer_port = T_PORT, .pull_ns = SEC, .join_ns = 5 * SEC,
		.end_ns = 5 * SEC, .send = r_wk_send };
	const struct psb_stale_totals *tot;
	struct psb_stale_msg m;
	uint64_t pass_ns;
	uint32_t i, k;

	memset(&R, 0, sizeof(R));
	R.rng = seed * 0x9e3779b97f4a7c15ull | 1;
	tc.push_ns = (2 + r_rand(100)) * MS;
	cc.step_ns = tc.step_ns = 100000 + r_rand(10 * MS);
	cc.post_ns = tc.post_ns = tc.step_ns + r_rand(500 * MS);
	tc.max_time_ns = SEC + r_rand(2 * SEC);
	R.make_ns = r_rand(2) ? r_rand(tc.push_ns) : 0;
	R.version_ns = r_rand(30 * MS);
	R.net_ns = r_rand(5 * MS);
	pass_ns = 1000 + r_rand(r_rand(2) ? 5 * MS : 200000);
	R.busy_ns = r_rand(30 * MS);
	R.min_window = R.min_diff = 1e9;
	assert_int_equal(psb_stale_trainer_init(&R.t, &tc, 0), 0);
	for (i = 0; i < RW; i++) {
		cc.id = i;
		cc.arg = (void *)(uintptr_t)i;
		assert_int_equal(psb_stale_client_init(&R.c[i], &cc, 0), 0);
	}
	while (!psb_stale_trainer_over(&R.t)) {
		R.now += 1 + r_rand(pass_ns);
		assert_true(R.now < 60 * SEC);
		/* what arrived by now, in the order it came out of the queue */
		for (k = 0; k < R.nq;) {
			typeof(R.q[0]) q = R.q[k];

			if (q.at > R.now) {
				k++;
				continue;
			}
			R.q[k] = R.q[--R.nq];
			if (q.kind == 1)
				psb_stale_client_took(&R.c[q.to], q.vid, NULL, 0, R.now);
			else if (q.to == RW)
				psb_stale_trainer_input(&R.t, q.b, PSB_STALE_LEN, W_IP(q.from),
							W_PORT, R.now, &m);
			else
				psb_stale_client_input(&R.c[q.to], q.b, PSB_STALE_LEN, T_IP, T_PORT,
						       R.now);
		}
		if (R.pending != 0 && R.now >= R.pending_at) {
			uint32_t v = R.pending;

			R.pending = 0;
			if (R.t.making == v)
				r_hand_over(v);
			psb_stale_trainer_made(&R.t, v, 0, R.now);
		}
		/* the trainer and each worker, when due or at random */
		if (R.now >= psb_stale_trainer_next_ns(&R.t) || r_rand(2))
			psb_stale_trainer_step(&R.t, R.now);
		for (i = 0; i < RW; i++) {
			if (R.now < R.busy_until[i])
				continue;
			if (r_rand(20) == 0)
				R.busy_until[i] = R.now + r_rand(R.busy_ns);
			else if (R.now >= psb_stale_client_next_ns(&R.c[i]) || r_rand(2))
				psb_stale_client_step(&R.c[i], R.now);
		}
	}
	tot = psb_stale_acct_totals(R.t.acct);
	if (R.t.phase != PSB_STALE_TR_DONE || R.min_window < 0 || R.min_diff < 0 ||
	    tot->refused[PSB_STALE_REF_AHEAD] || tot->refused[PSB_STALE_REF_STEP] ||
	    tot->refused[PSB_STALE_REF_WINDOW])
		fail_msg("seed %llu: push %.1f ms, step %.2f ms, post %.1f ms, make %.1f ms, "
			 "versions %.1f ms, datagrams %.1f ms late at most, passes of %.2f ms, "
			 "busy %.1f ms: "
			 "%s; %llu posts, window staleness %.4f at least, version difference "
			 "%.4f; refused ahead %llu, step %llu, window %llu",
			 (unsigned long long)seed, tc.push_ns / 1e6, tc.step_ns / 1e6,
			 tc.post_ns / 1e6, R.make_ns / 1e6, R.version_ns / 1e6, R.net_ns / 1e6,
			 pass_ns / 1e6, R.busy_ns / 1e6,
			 R.t.phase == PSB_STALE_TR_DONE ? "done" : R.t.failure,
			 (unsigned long long)R.points, R.min_window, R.min_diff,
			 (unsigned long long)tot->refused[PSB_STALE_REF_AHEAD],
			 (unsigned long long)tot->refused[PSB_STALE_REF_STEP],
			 (unsigned long long)tot->refused[PSB_STALE_REF_WINDOW]);
	assert_true(R.points >= RW);
	psb_stale_trainer_fini(&R.t);
	for (i = 0; i < RW; i++)
		psb_stale_client_fini(&R.c[i]);
}

/*
 * Staleness is never below 0, at any timing: the trainer counts a version from before any
 * worker can take it, a worker's samples count it only from when it took it, however late
 * they are taken, and the trainer places them no earlier than they were taken.
 */
static void
test_stale_random(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 300; seed++)
		r_run(seed);
}

/*
 * The trainer's versions: made whole with their CRC within the budget, never in a buffer a
 * sender holds or in the newest one; when every buffer is held, none is made.
 */
static void
test_versions(void **state)
{
	struct psb_stale_versions vs;
	struct psb_stale_version *a, *b, *c;

	(void)state;
	assert_int_equal(psb_stale_versions_init(&vs, 1000, 1999), -EINVAL);
	assert_int_equal(psb_stale_versions_init(&vs, 1001, 3000), 0);
	assert_int_equal(vs.max, 2);
	assert_null(psb_stale_versions_newest(&vs));
	a = psb_stale_versions_make(&vs, 1);
	assert_non_null(a);
	assert_int_equal(psb_stale_verify(a->data, 1001, 1), -1);
	assert_int_equal(a->crc, psb_mc_crc(0, a->data, 1001));
	assert_ptr_equal(psb_stale_versions_newest(&vs), a);
	a->refs++;				/* a sender holds version 1 */
	b = psb_stale_versions_make(&vs, 2);	/* a second buffer */
	assert_non_null(b);
	assert_ptr_not_equal(b, a);
	assert_null(psb_stale_versions_make(&vs, 3));	/* 1 held, 2 the newest */
	assert_ptr_equal(psb_stale_versions_newest(&vs), b);
	psb_stale_versions_release(&vs, a->data);
	psb_stale_versions_release(&vs, a->data);	/* not held: nothing */
	assert_int_equal(a->refs, 0);
	c = psb_stale_versions_make(&vs, 3);	/* version 1's buffer again */
	assert_ptr_equal(c, a);
	assert_int_equal(c->vid, 3);
	assert_int_equal(psb_stale_verify(c->data, 1001, 3), -1);
	assert_int_equal(vs.n, 2);
	psb_stale_versions_fini(&vs);
	assert_null(psb_stale_versions_newest(&vs));

	/* made a slice at a time: the newest only once whole, one at a time, given up */
	assert_int_equal(psb_stale_versions_init(&vs, 100003, 300009), 0);
	a = psb_stale_versions_make(&vs, 1);
	assert_non_null(a);
	assert_int_equal(psb_stale_versions_begin(&vs, 2), 0);
	assert_int_equal(psb_stale_versions_begin(&vs, 3), -EBUSY);
	assert_null(psb_stale_versions_make(&vs, 3));
	for (b = NULL; b == NULL; )
		if ((b = psb_stale_versions_step(&vs, 4097)) == NULL)
			assert_ptr_equal(psb_stale_versions_newest(&vs), a);
	assert_ptr_equal(psb_stale_versions_newest(&vs), b);
	assert_int_equal(b->vid, 2);
	assert_int_equal(psb_stale_verify(b->data, 100003, 2), -1);
	assert_int_equal(b->crc, psb_mc_crc(0, b->data, 100003));
	assert_null(psb_stale_versions_step(&vs, 4097));	/* none being made */
	assert_int_equal(psb_stale_versions_begin(&vs, 3), 0);
	c = &vs.v[vs.making];
	assert_ptr_equal(c, a);				/* not 2, the newest */
	assert_null(psb_stale_versions_step(&vs, 1000));
	psb_stale_versions_abort(&vs);
	assert_null(psb_stale_versions_step(&vs, 1000000));
	assert_ptr_equal(psb_stale_versions_newest(&vs), b);
	c = psb_stale_versions_make(&vs, 4);		/* the buffer given up, again */
	assert_ptr_equal(c, a);
	assert_int_equal(psb_stale_verify(c->data, 100003, 4), -1);
	assert_int_equal(c->crc, psb_mc_crc(0, c->data, 100003));
	psb_stale_versions_fini(&vs);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_msg_roundtrip),
		cmocka_unit_test(test_msg_malformed),
		cmocka_unit_test(test_opts),
		cmocka_unit_test(test_fill_verify),
		cmocka_unit_test(test_versions),
		cmocka_unit_test(test_acct_sampled),
		cmocka_unit_test(test_acct_posts),
		cmocka_unit_test(test_sampler),
		cmocka_unit_test(test_fs),
		cmocka_unit_test(test_fs_format),
		cmocka_unit_test(test_client_run),
		cmocka_unit_test(test_client_waits),
		cmocka_unit_test(test_trainer_run),
		cmocka_unit_test(test_trainer_making),
		cmocka_unit_test(test_trainer_waits),
		cmocka_unit_test(test_stale_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
