/* Per-QP accounting of RoCE traffic: a bounded hash table, least recently seen evicted. */
#include <stdlib.h>
#include <string.h>

#include "psb_roce_qp.h"

#define NIL		UINT32_MAX
#define PSN_MASK	0xffffffu
#define PSN_HALF	0x800000u

struct psb_roce_qptab {
	uint32_t cap, n, mask;
	uint32_t k[10];			/* the hash's secret words, from the seed */
	uint32_t hand;			/* the clock: where the next eviction looks first */
	uint32_t *buckets;
	struct psb_roce_qp *e;
	struct psb_roce_totals tot;
};

struct psb_roce_qptab *
psb_roce_qptab_create(uint32_t cap, uint64_t seed)
{
	struct psb_roce_qptab *t;
	uint32_t nb = 1, i;

	if (cap == 0 || cap > PSB_ROCE_QP_MAX)
		return NULL;
	while (nb < 2 * cap)
		nb <<= 1;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->buckets = malloc(sizeof(*t->buckets) * nb);
	t->e = aligned_alloc(64, sizeof(*t->e) * cap);
	if (t->buckets == NULL || t->e == NULL) {
		psb_roce_qptab_free(t);
		return NULL;
	}
	t->cap = cap;
	t->mask = nb - 1;
	for (i = 0; i < 10; i++) {
		/* splitmix64 */
		uint64_t z = (seed += 0x9e3779b97f4a7c15ull);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		t->k[i] = (uint32_t)(z ^ (z >> 31));
	}
	psb_roce_qptab_reset(t);
	return t;
}

void
psb_roce_qptab_free(struct psb_roce_qptab *t)
{
	if (t == NULL)
		return;
	free(t->buckets);
	free(t->e);
	free(t);
}

uint32_t
psb_roce_qptab_cap(const struct psb_roce_qptab *t)
{
	return t->cap;
}

void
psb_roce_qptab_reset(struct psb_roce_qptab *t)
{
	memset(t->buckets, 0xff, sizeof(*t->buckets) * (t->mask + 1));
	t->n = 0;
	t->hand = 0;
	memset(&t->tot, 0, sizeof(t->tot));
}

/*
 * The hash of a key given as its words: kind and QP, then the addresses, as ten 32-bit
 * words added to the table's secret words and multiplied in pairs (NH, as in UMAC: two keys
 * collide in the 64-bit sum with a chance of 2^-32 whatever a peer chooses), then mixed so
 * that the bucket, taken from the low bits, depends on all of it. The five products do not
 * wait on each other.
 */
static inline uint64_t
nh(uint64_t w, const uint32_t *k)
{
	return (uint64_t)((uint32_t)w + k[0]) * (uint32_t)((uint32_t)(w >> 32) + k[1]);
}

static inline uint32_t
hash_words(const struct psb_roce_qptab *t, uint64_t w0, const uint8_t src[16],
	   const uint8_t dst[16])
{
	uint64_t w[4], h;

	memcpy(&w[0], src, 16);
	memcpy(&w[2], dst, 16);
	h = nh(w0, &t->k[0]) + nh(w[0], &t->k[2]) + nh(w[1], &t->k[4]) + nh(w[2], &t->k[6]) +
	    nh(w[3], &t->k[8]);
	h ^= h >> 32;
	h *= 0x9e3779b97f4a7c15ull;
	return (uint32_t)(h >> 32);
}

static inline uint64_t
word0(uint8_t kind, uint32_t dqpn)
{
	return (uint64_t)kind | (uint64_t)dqpn << 32;
}

static uint32_t
key_hash(const struct psb_roce_qptab *t, const struct psb_roce_qp_key *k)
{
	return hash_words(t, word0(k->kind, k->dqpn), k->src, k->dst);
}

_Static_assert(sizeof(struct psb_roce_qp_key) == 40, "the key is hashed as 5 words");

/* The entry of the QP of kind, dqpn, src and dst, hashed h; NIL if none. */
static inline uint32_t
lookup_of(const struct psb_roce_qptab *t, uint8_t kind, uint32_t dqpn, const uint8_t *src,
	  const uint8_t *dst, uint32_t h)
{
	uint32_t i;

	for (i = t->buckets[h & t->mask]; i != NIL; i = t->e[i].hnext) {
		const struct psb_roce_qp_key *k = &t->e[i].key;

		if (t->e[i].hash == h && k->dqpn == dqpn && k->kind == kind &&
		    memcmp(k->src, src, 16) == 0 && memcmp(k->dst, dst, 16) == 0)
			return i;
	}
	return NIL;
}

static void
chain_remove(struct psb_roce_qptab *t, uint32_t i)
{
	uint32_t *link = &t->buckets[t->e[i].hash & t->mask];

	while (*link != i)
		link = &t->e[*link].hnext;
	*link = t->e[i].hnext;
}

/*
 * A new entry for k: a free one, or one not seen since the clock last passed it (second
 * chance: a QP seen since keeps its place, and is passed over once).
 */
static uint32_t
insert(struct psb_roce_qptab *t, const struct psb_roce_qp_key *k, uint32_t h)
{
	uint32_t i;

	if (t->n < t->cap) {
		i = t->n++;
		t->tot.qp_tracked = t->n;
	} else {
		/* at most two turns: the first clears every mark it passes */
		while (t->e[t->hand].seen) {
			t->e[t->hand].seen = 0;
			t->hand = t->hand + 1 == t->cap ? 0 : t->hand + 1;
		}
		i = t->hand;
		t->hand = t->hand + 1 == t->cap ? 0 : t->hand + 1;
		chain_remove(t, i);
		t->tot.qp_evicted++;
	}
	memset(&t->e[i], 0, sizeof(t->e[i]));
	t->e[i].key = *k;
	t->e[i].hash = h;
	t->e[i].hnext = t->buckets[h & t->mask];
	t->buckets[h & t->mask] = i;
	t->tot.qp_new++;
	return i;
}

static void
key_of(struct psb_roce_qp_key *k, const struct psb_roce_pkt *p)
{
	memset(k, 0, sizeof(*k));
	k->kind = p->kind;
	k->dqpn = p->dqpn;
	memcpy(k->src, p->src, 16);
	memcpy(k->dst, p->dst, 16);
}

/* PSNs between the expected one and psn, or the duplicate it is (returned as -1). */
static int64_t
psn_ahead(uint32_t psn, uint32_t expect)
{
	uint32_t d = (psn - expect) & PSN_MASK;

	return d < PSN_HALF ? (int64_t)d : -1;
}

static void
follow_psn(struct psb_roce_qp *q, const struct psb_roce_pkt *p, uint64_t *missing,
	   uint64_t *dup)
{
	uint8_t op = p->opcode & 0x1f;
	int64_t d;

	if (p->cls == PSB_ROCE_CNP || p->cls == PSB_ROCE_OTHER)
		return;
	if (p->has_aeth || op == 0x0e) {
		/* responses: ACKs, NAKs, atomic ACKs, READ responses */
		if (!q->resp_seen) {
			q->resp_seen = 1;
			q->resp_top = p->psn;
			return;
		}
		d = psn_ahead(p->psn, q->resp_top);
		if (d <= 0) {
			(*dup)++;
			return;
		}
		if ((op == 0x0e || op == 0x0f) && d > 1)	/* MIDDLE, LAST */
			*missing += (uint64_t)d - 1;
		q->resp_top = p->psn;
		return;
	}
	if (q->req_seen) {
		d = psn_ahead(p->psn, q->req_next);
		if (d < 0) {
			(*dup)++;
			return;
		}
		if (!q->after_read)
			*missing += (uint64_t)d;
	}
	q->req_seen = 1;
	q->req_next = (p->psn + 1) & PSN_MASK;
	q->after_read = op == 0x0c;
}

static inline uint32_t
pkt_hash(const struct psb_roce_qptab *t, const struct psb_roce_pkt *p)
{
	return hash_words(t, word0(p->kind, p->dqpn), p->src, p->dst);
}

static void account(struct psb_roce_qptab *t, const struct psb_roce_pkt *p, uint32_t len,
		    int icrc_ok, uint64_t now_ns, uint32_t h);

void
psb_roce_qptab_account(struct psb_roce_qptab *t, const struct psb_roce_pkt *p, uint32_t len,
		       int icrc_ok, uint64_t now_ns)
{
	account(t, p, len, icrc_ok, now_ns, pkt_hash(t, p));
}

/* A packet's frame counted, h the hash of its QP */
static void
account(struct psb_roce_qptab *t, const struct psb_roce_pkt *p, uint32_t len, int icrc_ok,
	uint64_t now_ns, uint32_t h)
{
	struct psb_roce_totals *tot = &t->tot;
	struct psb_roce_qp_key k;
	struct psb_roce_qp *q;
	uint64_t missing = 0, dup = 0;
	int nak = p->has_aeth ? psb_roce_nak_of(p->syndrome) : -1;
	uint32_t i;

	tot->frames[p->kind < PSB_ROCE_KINDS ? p->kind : PSB_ROCE_NONE]++;
	tot->bytes += len;
	/* the packet's fields as they are: the key is written out only for a new entry */
	i = lookup_of(t, p->kind, p->dqpn, p->src, p->dst, h);
	if (!icrc_ok) {
		tot->icrc_bad++;
		if (i != NIL) {
			t->e[i].st.icrc_bad++;
			t->e[i].st.pkts++;
			t->e[i].st.bytes += len;
		}
		return;
	}
	if (i == NIL) {
		key_of(&k, p);
		i = insert(t, &k, h);
	} else
		t->e[i].seen = 1;
	q = &t->e[i];
	if (q->st.pkts == 0)
		q->st.first_ns = now_ns;
	q->st.last_ns = now_ns;
	q->st.pkts++;
	q->st.bytes += len;
	q->st.ops[p->cls]++;
	tot->ops[p->cls]++;
	if (nak >= 0) {
		q->st.naks[nak]++;
		tot->naks[nak]++;
	}
	if (p->ecn == 3) {
		q->st.ecn_ce++;
		tot->ecn_ce++;
	}
	if (p->becn) {
		q->st.becn++;
		tot->becn++;
	}
	follow_psn(q, p, &missing, &dup);
	q->st.psn_missing += missing;
	q->st.psn_dup += dup;
	tot->psn_missing += missing;
	tot->psn_dup += dup;
}

void
psb_roce_qptab_malformed(struct psb_roce_qptab *t)
{
	t->tot.malformed++;
}

uint32_t
psb_roce_qptab_frames(struct psb_roce_qptab *t, const uint8_t *const *data, const uint32_t *seg,
		      const uint32_t *len, uint32_t n, uint64_t now_ns)
{
	struct psb_roce_pkt p[PSB_ROCE_PASS];
	int rc[PSB_ROCE_PASS], ok[PSB_ROCE_PASS];
	uint32_t h[PSB_ROCE_PASS], i, m, b, not_roce = 0;

	for (; n > 0; data += m, seg += m, len += m, n -= m) {
		m = n < PSB_ROCE_PASS ? n : PSB_ROCE_PASS;
		/* parsed, their buckets fetched ahead */
		for (i = 0; i < m; i++) {
			rc[i] = psb_roce_parse(data[i], seg[i], &p[i]);
			if (rc[i] == 1) {
				h[i] = pkt_hash(t, &p[i]);
				__builtin_prefetch(&t->buckets[h[i] & t->mask]);
			}
		}
		/* checked, their entries fetched ahead */
		for (i = 0; i < m; i++) {
			if (rc[i] != 1)
				continue;
			ok[i] = psb_roce_icrc_ok(data[i], &p[i]);
			b = t->buckets[h[i] & t->mask];
			if (b != NIL)
				__builtin_prefetch(&t->e[b]);
		}
		for (i = 0; i < m; i++) {
			if (rc[i] == 1)
				account(t, &p[i], len[i], ok[i], now_ns, h[i]);
			else if (rc[i] < 0)
				psb_roce_qptab_malformed(t);
			else
				not_roce++;
		}
	}
	return not_roce;
}

const struct psb_roce_totals *
psb_roce_qptab_totals(const struct psb_roce_qptab *t)
{
	return &t->tot;
}

const struct psb_roce_qp *
psb_roce_qptab_find(const struct psb_roce_qptab *t, const struct psb_roce_qp_key *k)
{
	uint32_t i = lookup_of(t, k->kind, k->dqpn, k->src, k->dst, key_hash(t, k));

	return i == NIL ? NULL : &t->e[i];
}

static int
by_pkts(const void *a, const void *b)
{
	const struct psb_roce_qp *x = a, *y = b;

	if (x->st.pkts != y->st.pkts)
		return x->st.pkts > y->st.pkts ? -1 : 1;
	if (x->key.dqpn != y->key.dqpn)
		return x->key.dqpn < y->key.dqpn ? -1 : 1;
	return memcmp(&x->key, &y->key, sizeof(x->key));
}

void
psb_roce_qp_sort(struct psb_roce_qp *rows, uint32_t n)
{
	qsort(rows, n, sizeof(*rows), by_pkts);
}

uint32_t
psb_roce_qptab_entries(const struct psb_roce_qptab *t, struct psb_roce_qp *out, uint32_t max)
{
	uint32_t n = t->n < max ? t->n : max;

	memcpy(out, t->e, sizeof(*out) * n);
	return n;
}

uint32_t
psb_roce_qptab_rows(const struct psb_roce_qptab *t, struct psb_roce_qp *rows, uint32_t max)
{
	struct psb_roce_qp *all;
	uint32_t n;

	if (max == 0 || t->n == 0)
		return 0;
	if (max >= t->n) {
		n = psb_roce_qptab_entries(t, rows, max);
		psb_roce_qp_sort(rows, n);
		return n;
	}
	all = malloc(sizeof(*all) * t->n);
	if (all == NULL) {
		/* no room to sort them all: the first max as they are */
		return psb_roce_qptab_entries(t, rows, max);
	}
	psb_roce_qp_sort(all, psb_roce_qptab_entries(t, all, t->n));
	memcpy(rows, all, sizeof(*rows) * max);
	free(all);
	return max;
}
