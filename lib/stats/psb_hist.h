/* psb statistics: a fixed-size log-linear latency histogram and a running (Welford) summary. */
#ifndef PSB_HIST_H
#define PSB_HIST_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Log-linear histogram of uint64 values (nanoseconds), HDR-style. Values below
 * 2^(PSB_HIST_SUB_BITS + 1) each have their own bucket; above that every power of two
 * [2^k, 2^(k+1)) is split into 2^PSB_HIST_SUB_BITS equal buckets, so a bucket is narrower
 * than 2^-PSB_HIST_SUB_BITS of the values in it. Values of 2^PSB_HIST_MAX_BITS and more are
 * counted in the last bucket (and still reach min, max, sum and sumsq exactly).
 *
 * Fixed size, no allocation: it can live in per-lcore counter blocks, be written by one
 * thread and merged by readers. A reader racing with the writer gets a snapshot that may be
 * a few samples inconsistent between the fields, never a crash; percentiles use the bucket
 * counts and so stay internally consistent.
 */
#define PSB_HIST_SUB_BITS	6	/* 64 sub-buckets per power of two */
#define PSB_HIST_MAX_BITS	40	/* values up to ~2^40 ns (18 min); larger: last bucket */
#define PSB_HIST_SUB_COUNT	(1u << PSB_HIST_SUB_BITS)
/* Values below 2 * SUB_COUNT take one bucket each, then SUB_COUNT per power of two up to
 * 2^MAX_BITS: 2240 buckets, 17.5 KiB. */
#define PSB_HIST_NBUCKETS	((PSB_HIST_MAX_BITS - PSB_HIST_SUB_BITS + 1) * PSB_HIST_SUB_COUNT)

struct psb_hist {
	uint64_t count;
	uint64_t min;		/* UINT64_MAX while empty */
	uint64_t max;		/* 0 while empty */
	double sum;
	double sumsq;		/* sum of squares, for the variance */
	uint64_t bucket[PSB_HIST_NBUCKETS];
};

/* Bucket of v. With s = max(0, msb(v) - SUB_BITS), the bucket is (s << SUB_BITS) + (v >> s):
 * v >> s keeps the SUB_BITS + 1 leading bits of v, and those buckets run contiguously from
 * one power of two to the next. Branch-free apart from the clamp, which is a cmov. */
static inline unsigned int
psb_hist_index(uint64_t v)
{
	const uint64_t vmax = (UINT64_C(1) << PSB_HIST_MAX_BITS) - 1;
	unsigned int s;

	if (v > vmax)
		v = vmax;
	/* OR-ing in the low bits makes clz well defined for v == 0 and s >= 0 */
	s = (unsigned int)(63 - PSB_HIST_SUB_BITS) -
	    (unsigned int)__builtin_clzll(v | ((UINT64_C(2) << PSB_HIST_SUB_BITS) - 1));
	return (s << PSB_HIST_SUB_BITS) + (unsigned int)(v >> s);
}

/* Smallest and largest value counted in bucket idx (idx < PSB_HIST_NBUCKETS); the last
 * bucket also takes everything above its nominal upper bound. */
uint64_t psb_hist_bucket_lo(unsigned int idx);
uint64_t psb_hist_bucket_hi(unsigned int idx);

void psb_hist_init(struct psb_hist *h);		/* same as psb_hist_reset() */
void psb_hist_reset(struct psb_hist *h);

/* Inline because it runs per request on the data path. */
static inline void
psb_hist_add(struct psb_hist *h, uint64_t v)
{
	double d = (double)v;

	h->count++;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->sum += d;
	h->sumsq += d * d;
	h->bucket[psb_hist_index(v)]++;
}

/* dst += src. */
void psb_hist_merge(struct psb_hist *dst, const struct psb_hist *src);

/*
 * The p-th percentile, p in [0, 100] (clamped), by nearest rank: the midpoint of the bucket
 * holding the ceil(p/100 * count)-th smallest value, clamped to [min, max]. So p = 0 gives
 * min, p = 100 gives max, values below 2^(SUB_BITS+1) are exact, and otherwise the relative
 * error is below 2^-(SUB_BITS+1). 0 if the histogram is empty.
 */
uint64_t psb_hist_percentile(const struct psb_hist *h, double p);

/*
 * Cumulative counts at n ascending bounds, as a Prometheus histogram has them: out[i] is the
 * number of samples in the buckets that lie wholly at or below le[i]. Every sample counted
 * is <= le[i]; below 2^(SUB_BITS + 1) the counts are exact, above that samples less than
 * 2^-SUB_BITS under le[i] may fall to the next bound. Returns the number of samples in all
 * buckets, the +Inf count, consistent with out even for a snapshot taken while the writer
 * runs.
 */
uint64_t psb_hist_cumulative(const struct psb_hist *h, const uint64_t *le, unsigned int n,
		uint64_t *out);

/* 0 if empty. The variance is the population one, from sum and sumsq: its absolute error is
 * a few 2^-53 of mean^2, plenty for latencies; it is clamped at 0 against that rounding. */
double psb_hist_mean(const struct psb_hist *h);
double psb_hist_variance(const struct psb_hist *h);
double psb_hist_stdev(const struct psb_hist *h);

/* Running summary of doubles (Welford), for per-rank metric tables. min is +inf and max
 * -inf while n == 0. */
struct psb_summary {
	uint64_t n;
	double min, max, mean, m2;	/* m2: sum of squared deviations from the mean */
};

void psb_summary_init(struct psb_summary *s);
void psb_summary_add(struct psb_summary *s, double x);
/* dst += src, by Chan et al.'s pairwise update, which stays numerically stable where the
 * naive sum-of-squares merge would cancel. */
void psb_summary_merge(struct psb_summary *dst, const struct psb_summary *src);
/* Population variance; 0 when n < 2. */
double psb_summary_variance(const struct psb_summary *s);
double psb_summary_stdev(const struct psb_summary *s);

#ifdef __cplusplus
}
#endif

#endif /* PSB_HIST_H */
