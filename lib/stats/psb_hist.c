/* psb statistics: histogram reading and merging, and the Welford summary. */
#include <math.h>
#include <string.h>

#include "psb_hist.h"

/* log2 of the width of bucket idx: the low buckets hold one value each. */
static unsigned int
bucket_shift(unsigned int idx)
{
	return idx < 2 * PSB_HIST_SUB_COUNT ? 0 : (idx >> PSB_HIST_SUB_BITS) - 1;
}

uint64_t
psb_hist_bucket_lo(unsigned int idx)
{
	unsigned int s = bucket_shift(idx);

	/* inverse of psb_hist_index(): idx = (s << SUB_BITS) + m, m in [SUB_COUNT, 2 * SUB_COUNT) */
	return (uint64_t)(idx - (s << PSB_HIST_SUB_BITS)) << s;
}

uint64_t
psb_hist_bucket_hi(unsigned int idx)
{
	return psb_hist_bucket_lo(idx) + ((UINT64_C(1) << bucket_shift(idx)) - 1);
}

void
psb_hist_reset(struct psb_hist *h)
{
	memset(h, 0, sizeof(*h));
	/* so that the first psb_hist_add() sets it without a special case */
	h->min = UINT64_MAX;
}

void
psb_hist_init(struct psb_hist *h)
{
	psb_hist_reset(h);
}

void
psb_hist_merge(struct psb_hist *dst, const struct psb_hist *src)
{
	unsigned int i;

	dst->count += src->count;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	dst->sum += src->sum;
	dst->sumsq += src->sumsq;
	for (i = 0; i < PSB_HIST_NBUCKETS; i++)
		dst->bucket[i] += src->bucket[i];
}

uint64_t
psb_hist_percentile(const struct psb_hist *h, double p)
{
	uint64_t total = 0, cum = 0, rank, v;
	unsigned int i;

	/* rank against the buckets, not count: a snapshot taken while the writer runs may have
	 * them a few apart, and the scan below must always find its bucket */
	for (i = 0; i < PSB_HIST_NBUCKETS; i++)
		total += h->bucket[i];
	if (total == 0)
		return 0;
	if (!(p > 0))		/* also NaN */
		return h->min;
	if (p >= 100)
		return h->max;

	/* p * total first: for integral p it is exact, where p / 100 would round */
	rank = (uint64_t)ceil(p * (double)total / 100.0);
	if (rank < 1)
		rank = 1;
	if (rank > total)
		rank = total;
	for (i = 0; i < PSB_HIST_NBUCKETS - 1; i++) {
		cum += h->bucket[i];
		if (cum >= rank)
			break;
	}

	v = psb_hist_bucket_lo(i) + (psb_hist_bucket_hi(i) - psb_hist_bucket_lo(i)) / 2;
	if (v < h->min)
		v = h->min;
	if (v > h->max)
		v = h->max;
	return v;
}

uint64_t
psb_hist_cumulative(const struct psb_hist *h, const uint64_t *le, unsigned int n, uint64_t *out)
{
	uint64_t cum = 0, hi;
	unsigned int i, j = 0;

	for (i = 0; i < PSB_HIST_NBUCKETS; i++) {
		if (h->bucket[i] == 0)
			continue;
		/* bounds below this bucket's top take what came before it; the last bucket
		 * also holds everything above its nominal top */
		hi = i == PSB_HIST_NBUCKETS - 1 ? UINT64_MAX : psb_hist_bucket_hi(i);
		while (j < n && hi > le[j])
			out[j++] = cum;
		cum += h->bucket[i];
	}
	while (j < n)
		out[j++] = cum;
	return cum;
}

double
psb_hist_mean(const struct psb_hist *h)
{
	return h->count != 0 ? h->sum / (double)h->count : 0.0;
}

double
psb_hist_variance(const struct psb_hist *h)
{
	double mean, var;

	if (h->count == 0)
		return 0.0;
	mean = h->sum / (double)h->count;
	var = h->sumsq / (double)h->count - mean * mean;
	return var > 0.0 ? var : 0.0;
}

double
psb_hist_stdev(const struct psb_hist *h)
{
	return sqrt(psb_hist_variance(h));
}

void
psb_summary_init(struct psb_summary *s)
{
	s->n = 0;
	/* identities of min and max, so merge and add need no empty case for them */
	s->min = INFINITY;
	s->max = -INFINITY;
	s->mean = 0.0;
	s->m2 = 0.0;
}

void
psb_summary_add(struct psb_summary *s, double x)
{
	double d = x - s->mean;

	s->n++;
	if (x < s->min)
		s->min = x;
	if (x > s->max)
		s->max = x;
	s->mean += d / (double)s->n;
	/* d * (x - new mean), not d * d * (n-1)/n: the product of the old and new deviations is
	 * Welford's form and needs no division */
	s->m2 += d * (x - s->mean);
}

void
psb_summary_merge(struct psb_summary *dst, const struct psb_summary *src)
{
	/* copied first so that merging a summary into itself works */
	struct psb_summary b = *src;
	double na, nb, n, d;

	if (b.n == 0)
		return;
	if (dst->n == 0) {
		*dst = b;
		return;
	}
	na = (double)dst->n;
	nb = (double)b.n;
	n = na + nb;
	d = b.mean - dst->mean;

	dst->n += b.n;
	if (b.min < dst->min)
		dst->min = b.min;
	if (b.max > dst->max)
		dst->max = b.max;
	dst->mean += d * (nb / n);
	dst->m2 += b.m2 + d * d * (na * nb / n);
}

double
psb_summary_variance(const struct psb_summary *s)
{
	if (s->n < 2)
		return 0.0;
	return s->m2 / (double)s->n;
}

double
psb_summary_stdev(const struct psb_summary *s)
{
	return sqrt(psb_summary_variance(s));
}
