/* Unit tests of lib/stats: histogram bucketing, percentile accuracy, merging, and the summary. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "psb_hist.h"

#define NSAMPLES	200000

static const double test_ps[] = {
	0, 0.001, 0.1, 1, 5, 10, 25, 33.3, 50, 66.6, 75, 90, 95, 99, 99.5, 99.9, 99.99, 100,
};

static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint64_t
rng64(void)
{
	/* xorshift64*: reproducible, so a failure can be replayed */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

/* uniform in (0, 1] */
static double
rng_unit(void)
{
	return ((double)(rng64() >> 11) + 1.0) / 9007199254740992.0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Nearest rank on the sorted samples, with the same rank arithmetic as the library. */
static uint64_t
true_percentile(const uint64_t *sorted, size_t n, double p)
{
	uint64_t rank;

	if (p <= 0)
		return sorted[0];
	if (p >= 100)
		return sorted[n - 1];
	rank = (uint64_t)ceil(p * (double)n / 100.0);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

static struct psb_hist *
hist_new(void)
{
	struct psb_hist *h = malloc(sizeof(*h));

	assert_non_null(h);
	/* garbage first, to show that init really resets everything */
	memset(h, 0xa5, sizeof(*h));
	psb_hist_init(h);
	return h;
}

/* Fill a histogram from v[0..n) and check every test percentile within max_rel of the truth
 * (exactly, for max_rel == 0). */
static void
check_percentiles(uint64_t *v, size_t n, double max_rel)
{
	struct psb_hist *h = hist_new();
	double worst = 0;
	size_t i, k;

	for (i = 0; i < n; i++)
		psb_hist_add(h, v[i]);
	qsort(v, n, sizeof(*v), cmp_u64);
	assert_int_equal(h->count, n);
	assert_int_equal(h->min, v[0]);
	assert_int_equal(h->max, v[n - 1]);
	assert_int_equal(psb_hist_percentile(h, 0), v[0]);
	assert_int_equal(psb_hist_percentile(h, 100), v[n - 1]);

	for (k = 0; k < sizeof(test_ps) / sizeof(test_ps[0]); k++) {
		double p = test_ps[k];
		uint64_t want = true_percentile(v, n, p);
		uint64_t got = psb_hist_percentile(h, p);
		double err = fabs((double)got - (double)want);

		if (want < 2 * PSB_HIST_SUB_COUNT) {
			assert_int_equal(got, want);
			continue;
		}
		err /= (double)want;
		if (err > worst)
			worst = err;
		if (err > max_rel)
			fail_msg("p%g: got %llu want %llu, relative error %g > %g", p,
				 (unsigned long long)got, (unsigned long long)want, err, max_rel);
	}
	print_message("  worst relative error %.3g over %zu samples\n", worst, n);
	free(h);
}

static void
test_index_and_bounds(void **state)
{
	uint64_t v;
	unsigned int i, k;

	assert_int_equal(PSB_HIST_NBUCKETS, 2240);
	for (v = 0; v < 2 * PSB_HIST_SUB_COUNT; v++) {
		assert_int_equal(psb_hist_index(v), v);
		assert_int_equal(psb_hist_bucket_lo((unsigned int)v), v);
		assert_int_equal(psb_hist_bucket_hi((unsigned int)v), v);
	}

	/* buckets tile [0, 2^MAX_BITS) with no gap or overlap, each narrower than 1/64 of lo */
	assert_int_equal(psb_hist_bucket_lo(0), 0);
	for (i = 0; i < PSB_HIST_NBUCKETS; i++) {
		uint64_t lo = psb_hist_bucket_lo(i), hi = psb_hist_bucket_hi(i);

		assert_true(lo <= hi);
		assert_int_equal(psb_hist_index(lo), i);
		assert_int_equal(psb_hist_index(hi), i);
		if (lo >= 2 * PSB_HIST_SUB_COUNT)
			assert_true(hi - lo + 1 <= lo >> PSB_HIST_SUB_BITS);
		if (i + 1 < PSB_HIST_NBUCKETS)
			assert_int_equal(psb_hist_bucket_lo(i + 1), hi + 1);
	}
	assert_int_equal(psb_hist_bucket_hi(PSB_HIST_NBUCKETS - 1),
			 (UINT64_C(1) << PSB_HIST_MAX_BITS) - 1);

	/* around every power of two, and values that do not fit: the last bucket */
	for (k = 0; k < 64; k++) {
		uint64_t p2 = UINT64_C(1) << k;
		uint64_t probe[] = { p2 - 1, p2, p2 + 1 };
		unsigned int j;

		for (j = 0; j < 3; j++) {
			unsigned int idx = psb_hist_index(probe[j]);

			assert_true(idx < PSB_HIST_NBUCKETS);
			if (probe[j] >> PSB_HIST_MAX_BITS)
				assert_int_equal(idx, PSB_HIST_NBUCKETS - 1);
			else
				assert_true(psb_hist_bucket_lo(idx) <= probe[j] &&
					    probe[j] <= psb_hist_bucket_hi(idx));
		}
	}
	assert_int_equal(psb_hist_index(UINT64_MAX), PSB_HIST_NBUCKETS - 1);
}

static void
test_exact_small(void **state)
{
	uint64_t *v = malloc(10000 * sizeof(*v));
	uint64_t x;
	size_t i;

	assert_non_null(v);
	/* one value alone, every value below 64 */
	for (x = 0; x < PSB_HIST_SUB_COUNT; x++) {
		struct psb_hist *h = hist_new();

		psb_hist_add(h, x);
		assert_int_equal(psb_hist_percentile(h, 50), x);
		assert_int_equal(h->bucket[x], 1);
		free(h);
	}
	/* many values below 64: every percentile exact */
	for (i = 0; i < 10000; i++)
		v[i] = rng64() % PSB_HIST_SUB_COUNT;
	check_percentiles(v, 10000, 0);
	free(v);
}

static void
test_percentile_uniform(void **state)
{
	uint64_t *v = malloc(NSAMPLES * sizeof(*v));
	size_t i;

	assert_non_null(v);
	for (i = 0; i < NSAMPLES; i++)
		v[i] = rng64() % 1000000000u;
	check_percentiles(v, NSAMPLES, 1.0 / PSB_HIST_SUB_COUNT);
	free(v);
}

static void
test_percentile_exponential(void **state)
{
	uint64_t *v = malloc(NSAMPLES * sizeof(*v));
	size_t i;

	assert_non_null(v);
	/* a latency-like shape: a floor of 2 us and an exponential tail with a 50 us mean */
	for (i = 0; i < NSAMPLES; i++)
		v[i] = 2000 + (uint64_t)(-log(rng_unit()) * 50000.0);
	check_percentiles(v, NSAMPLES, 1.0 / PSB_HIST_SUB_COUNT);
	free(v);
}

static void
test_percentile_log_uniform(void **state)
{
	uint64_t *v = malloc(NSAMPLES * sizeof(*v));
	size_t i;

	assert_non_null(v);
	/* every octave of the range equally, so every bucket width is exercised */
	for (i = 0; i < NSAMPLES; i++)
		v[i] = (uint64_t)exp2(rng_unit() * (PSB_HIST_MAX_BITS - 0.001));
	check_percentiles(v, NSAMPLES, 1.0 / PSB_HIST_SUB_COUNT);
	free(v);
}

static void
test_min_max_and_odd_p(void **state)
{
	struct psb_hist *h = hist_new();

	psb_hist_add(h, 1000003);
	psb_hist_add(h, 77);
	psb_hist_add(h, 5000000011ull);
	assert_int_equal(psb_hist_percentile(h, 0), 77);
	assert_int_equal(psb_hist_percentile(h, -5), 77);
	assert_int_equal(psb_hist_percentile(h, NAN), 77);
	assert_int_equal(psb_hist_percentile(h, 100), 5000000011ull);
	assert_int_equal(psb_hist_percentile(h, 1e9), 5000000011ull);
	/* a single sample: whatever the bucket width, clamping gives it back exactly */
	psb_hist_reset(h);
	psb_hist_add(h, 123456789);
	assert_int_equal(psb_hist_percentile(h, 50), 123456789);
	assert_int_equal(psb_hist_percentile(h, 99.9), 123456789);
	free(h);
}

static void
test_empty(void **state)
{
	struct psb_hist *h = hist_new();
	struct psb_hist *e = hist_new();
	unsigned int i;

	assert_int_equal(h->count, 0);
	assert_int_equal(h->min, UINT64_MAX);
	assert_int_equal(h->max, 0);
	for (i = 0; i < PSB_HIST_NBUCKETS; i++)
		assert_int_equal(h->bucket[i], 0);
	assert_int_equal(psb_hist_percentile(h, 0), 0);
	assert_int_equal(psb_hist_percentile(h, 50), 0);
	assert_int_equal(psb_hist_percentile(h, 100), 0);
	assert_true(psb_hist_mean(h) == 0.0);
	assert_true(psb_hist_variance(h) == 0.0);
	assert_true(psb_hist_stdev(h) == 0.0);

	/* merging empties stays empty; merging one into a full one changes nothing */
	psb_hist_merge(h, e);
	assert_memory_equal(h, e, sizeof(*h));
	psb_hist_add(h, 500);
	psb_hist_add(h, 9000);
	memcpy(e, h, sizeof(*h));
	psb_hist_reset(h);
	psb_hist_merge(h, e);
	assert_memory_equal(h, e, sizeof(*h));
	psb_hist_reset(e);
	psb_hist_merge(h, e);
	assert_int_equal(h->count, 2);
	assert_int_equal(h->min, 500);
	assert_int_equal(h->max, 9000);
	free(e);
	free(h);
}

static void
test_huge_values(void **state)
{
	const uint64_t big[] = {
		UINT64_C(1) << PSB_HIST_MAX_BITS, (UINT64_C(1) << PSB_HIST_MAX_BITS) + 12345,
		UINT64_C(1) << 50, UINT64_C(1) << 63, UINT64_MAX,
	};
	struct psb_hist *h = hist_new();
	uint64_t p;
	size_t i;

	for (i = 0; i < sizeof(big) / sizeof(big[0]); i++)
		psb_hist_add(h, big[i]);
	assert_int_equal(h->bucket[PSB_HIST_NBUCKETS - 1], sizeof(big) / sizeof(big[0]));
	assert_int_equal(h->min, big[0]);
	assert_int_equal(h->max, UINT64_MAX);
	assert_int_equal(psb_hist_percentile(h, 100), UINT64_MAX);
	assert_int_equal(psb_hist_percentile(h, 0), big[0]);
	p = psb_hist_percentile(h, 50);
	assert_true(p >= h->min && p <= h->max);
	assert_true(psb_hist_mean(h) > 0x1p62);
	assert_true(isfinite(psb_hist_stdev(h)));

	/* the largest value that still fits shares the last bucket with the overflow */
	psb_hist_reset(h);
	psb_hist_add(h, (UINT64_C(1) << PSB_HIST_MAX_BITS) - 1);
	assert_int_equal(h->bucket[PSB_HIST_NBUCKETS - 1], 1);
	free(h);
}

static void
test_merge_equals_add_all(void **state)
{
	struct psb_hist *all = hist_new();
	struct psb_hist *part[4];
	struct psb_hist *merged = hist_new();
	size_t i, k;

	for (k = 0; k < 4; k++)
		part[k] = hist_new();
	for (i = 0; i < NSAMPLES; i++) {
		uint64_t v = (uint64_t)(-log(rng_unit()) * 1e6);

		psb_hist_add(all, v);
		/* uneven split, and part 3 stays empty */
		psb_hist_add(part[(rng64() % 7) < 4 ? 0 : (i & 1) + 1], v);
	}
	for (k = 0; k < 4; k++)
		psb_hist_merge(merged, part[k]);

	assert_int_equal(merged->count, all->count);
	assert_int_equal(merged->min, all->min);
	assert_int_equal(merged->max, all->max);
	assert_memory_equal(merged->bucket, all->bucket, sizeof(all->bucket));
	/* the sums were added in another order */
	assert_true(fabs(merged->sum - all->sum) <= 1e-12 * all->sum);
	assert_true(fabs(merged->sumsq - all->sumsq) <= 1e-12 * all->sumsq);
	for (k = 0; k < sizeof(test_ps) / sizeof(test_ps[0]); k++)
		assert_int_equal(psb_hist_percentile(merged, test_ps[k]),
				 psb_hist_percentile(all, test_ps[k]));
	for (k = 0; k < 4; k++)
		free(part[k]);
	free(merged);
	free(all);
}

static void
two_pass(const double *x, size_t n, double *mean, double *var)
{
	double s = 0, ss = 0;
	size_t i;

	for (i = 0; i < n; i++)
		s += x[i];
	*mean = s / (double)n;
	for (i = 0; i < n; i++)
		ss += (x[i] - *mean) * (x[i] - *mean);
	*var = ss / (double)n;
}

static void
assert_close(double got, double want, double rel)
{
	if (fabs(got - want) > rel * fabs(want))
		fail_msg("got %.17g want %.17g (relative error %g > %g)", got, want,
			 fabs(got - want) / fabs(want), rel);
}

static void
test_hist_moments(void **state)
{
	double *x = malloc(NSAMPLES * sizeof(*x));
	struct psb_hist *h = hist_new();
	double mean, var;
	size_t i;

	assert_non_null(x);
	for (i = 0; i < NSAMPLES; i++) {
		uint64_t v = 10000 + rng64() % 100000;

		x[i] = (double)v;
		psb_hist_add(h, v);
	}
	two_pass(x, NSAMPLES, &mean, &var);
	assert_close(psb_hist_mean(h), mean, 1e-12);
	assert_close(psb_hist_variance(h), var, 1e-9);
	assert_close(psb_hist_stdev(h), sqrt(var), 1e-9);
	free(h);
	free(x);
}

static void
test_summary(void **state)
{
	double *x = malloc(NSAMPLES * sizeof(*x));
	struct psb_summary s, part[5], merged;
	double mean, var, mn = INFINITY, mx = -INFINITY;
	size_t i, k, cut[6] = { 0, 1, 1, 1000, 77777, NSAMPLES };

	assert_non_null(x);
	psb_summary_init(&s);
	assert_int_equal(s.n, 0);
	assert_true(psb_summary_variance(&s) == 0.0);
	assert_true(psb_summary_stdev(&s) == 0.0);

	/* a large offset and a small spread: where the naive sum of squares loses everything */
	for (i = 0; i < NSAMPLES; i++) {
		x[i] = 1e9 + rng_unit() * 10.0;
		if (x[i] < mn)
			mn = x[i];
		if (x[i] > mx)
			mx = x[i];
		psb_summary_add(&s, x[i]);
		if (i == 0) {
			assert_true(s.mean == x[0]);
			assert_true(psb_summary_variance(&s) == 0.0);
		}
	}
	two_pass(x, NSAMPLES, &mean, &var);
	assert_int_equal(s.n, NSAMPLES);
	assert_true(s.min == mn);
	assert_true(s.max == mx);
	assert_close(s.mean, mean, 1e-13);
	assert_close(psb_summary_variance(&s), var, 1e-6);
	assert_close(psb_summary_stdev(&s), sqrt(var), 1e-6);

	/* five parts of very different sizes, one of them empty, merged in order */
	psb_summary_init(&merged);
	for (k = 0; k < 5; k++) {
		psb_summary_init(&part[k]);
		for (i = cut[k]; i < cut[k + 1]; i++)
			psb_summary_add(&part[k], x[i]);
		psb_summary_merge(&merged, &part[k]);
	}
	assert_int_equal(part[1].n, 0);
	assert_int_equal(merged.n, s.n);
	assert_true(merged.min == s.min);
	assert_true(merged.max == s.max);
	assert_close(merged.mean, mean, 1e-13);
	assert_close(psb_summary_variance(&merged), var, 1e-6);

	/* into itself: the same samples twice have the same mean and population variance */
	psb_summary_merge(&merged, &merged);
	assert_int_equal(merged.n, 2 * s.n);
	assert_close(merged.mean, mean, 1e-13);
	assert_close(psb_summary_variance(&merged), var, 1e-6);
	free(x);
}

static void
test_summary_small(void **state)
{
	const double x[] = { 2, 4, 4, 4, 5, 5, 7, 9 };
	struct psb_summary s, a, b;
	size_t i;

	psb_summary_init(&s);
	psb_summary_init(&a);
	psb_summary_init(&b);
	for (i = 0; i < 8; i++) {
		psb_summary_add(&s, x[i]);
		psb_summary_add(i < 3 ? &a : &b, x[i]);
	}
	/* the textbook example: mean 5, population stdev exactly 2 */
	assert_true(s.mean == 5.0);
	assert_true(psb_summary_variance(&s) == 4.0);
	assert_true(psb_summary_stdev(&s) == 2.0);
	assert_true(s.min == 2.0 && s.max == 9.0);
	psb_summary_merge(&a, &b);
	assert_int_equal(a.n, 8);
	assert_close(a.mean, 5.0, 1e-15);
	assert_close(psb_summary_variance(&a), 4.0, 1e-15);
}

/* Count of samples <= v, from the sorted samples. */
static uint64_t
true_le(const uint64_t *sorted, size_t n, uint64_t v)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sorted[mid] <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void
test_cumulative(void **state)
{
	static const uint64_t le[] = {
		0, 1, 5, 127, 128, 129, 500, 1000, 2000, 5000, 10000, 100000, 1000000,
		10000000, 1000000000, UINT64_C(1) << 40, UINT64_C(1) << 45, UINT64_MAX,
	};
	enum { NLE = sizeof(le) / sizeof(le[0]) };
	struct psb_hist *h = malloc(sizeof(*h));
	uint64_t *x = malloc(NSAMPLES * sizeof(*x)), out[NLE], t;
	size_t i;

	(void)state;
	assert_non_null(h);
	assert_non_null(x);
	psb_hist_init(h);
	memset(out, 0xff, sizeof(out));
	assert_int_equal(psb_hist_cumulative(h, le, NLE, out), 0);
	for (i = 0; i < NLE; i++)
		assert_int_equal(out[i], 0);

	/* every value below 200 once: counts at small bounds are exact */
	for (i = 0; i < 200; i++)
		psb_hist_add(h, i);
	assert_int_equal(psb_hist_cumulative(h, le, 6, out), 200);
	assert_int_equal(out[0], 1);
	assert_int_equal(out[1], 2);
	assert_int_equal(out[2], 6);
	assert_int_equal(out[3], 128);
	/* 128 and 129 share a bucket: it counts at 129, not at 128 */
	assert_int_equal(out[4], 128);
	assert_int_equal(out[5], 130);

	/* log-uniform over 2^0..2^50, some beyond the last bucket: never a sample above le,
	 * never one more than 2^-SUB_BITS below it left out */
	psb_hist_reset(h);
	for (i = 0; i < NSAMPLES; i++) {
		x[i] = (uint64_t)exp2(rng_unit() * 50.0);
		psb_hist_add(h, x[i]);
	}
	qsort(x, NSAMPLES, sizeof(*x), cmp_u64);
	assert_int_equal(psb_hist_cumulative(h, le, NLE, out), NSAMPLES);
	for (i = 0; i < NLE; i++) {
		t = true_le(x, NSAMPLES, le[i]);
		assert_true(out[i] <= t);
		if (le[i] <= UINT64_C(1) << PSB_HIST_MAX_BITS)
			assert_true(out[i] >= true_le(x, NSAMPLES,
				le[i] - (le[i] >> PSB_HIST_SUB_BITS)));
		if (i > 0)
			assert_true(out[i] >= out[i - 1]);
	}
	/* the samples beyond 2^40 share the last bucket: counted at UINT64_MAX only */
	assert_true(out[NLE - 3] < NSAMPLES);
	assert_int_equal(out[NLE - 2], out[NLE - 3]);
	assert_int_equal(out[NLE - 1], NSAMPLES);
	free(x);
	free(h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_index_and_bounds),
		cmocka_unit_test(test_exact_small),
		cmocka_unit_test(test_percentile_uniform),
		cmocka_unit_test(test_percentile_exponential),
		cmocka_unit_test(test_percentile_log_uniform),
		cmocka_unit_test(test_min_max_and_odd_p),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_huge_values),
		cmocka_unit_test(test_merge_equals_add_all),
		cmocka_unit_test(test_hist_moments),
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_summary_small),
		cmocka_unit_test(test_cumulative),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
