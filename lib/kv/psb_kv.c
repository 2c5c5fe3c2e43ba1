/* Parameter store: key -> float32 tensor, push sums, pull reads, sync rounds, idempotent retries. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "psb_agg.h"
#include "psb_kv.h"

const char *const psb_kv_discard_names[PSB_KV_DISCARD_MAX] = {
	[PSB_KV_DISCARD_TIMEOUT] = "timeout",
	[PSB_KV_DISCARD_BYE] = "bye",
	[PSB_KV_DISCARD_RESTART] = "restart",
	[PSB_KV_DISCARD_SUPERSEDED] = "superseded",
	[PSB_KV_DISCARD_NO_MEMORY] = "no_memory",
};

const char *const psb_kv_resend_names[PSB_KV_RESEND_MAX] = {
	[PSB_KV_RESEND_DUPLICATE] = "duplicate",
	[PSB_KV_RESEND_REPAIR] = "repair",
	[PSB_KV_RESEND_SEGMENT] = "segment",
	[PSB_KV_RESEND_REPAIR_RESP] = "repair_resp",
};

enum peer_state {
	PEER_IDLE = 0,		/* no request seen */
	PEER_ASSEMBLING,	/* push segments arriving (staged) */
	PEER_WAITING,		/* sync: applied, waiting for the round to close */
	PEER_DONE,		/* answered; repeats are answered again */
};

/* One worker's request state on one key: workers keep one request per key in flight. */
struct kv_peer {
	uint32_t epoch;		/* sender incarnation the ids below belong to */
	uint32_t req_id;
	uint32_t round;		/* sync push: round pushed into; pull: round needed */
	uint32_t err_aux;	/* type ERROR: the detail, to repeat on a retry */
	uint8_t type;
	uint8_t state;
	uint8_t flags;
	uint8_t err_status;
};

/* Handler mode: the answer a sender was given on a key, kept for its retries. */
struct kv_answer {
	float *val;
	uint32_t len;
	uint32_t round;		/* the key's answers so far when it was given: its version */
};

struct kv_entry {
	uint64_t key;
	uint32_t len;		/* bytes (handler mode: 0, the values are the caller's) */
	uint32_t round;		/* closed sync rounds, or applied pushes (async) */
	uint16_t pushed;	/* sync: pushes applied in the open round */
	float *val;
	float *acc;		/* sync: sum of the open round (as many as pushed: from the first) */
	struct kv_peer *peers;	/* [num_workers]; NULL: slot unused */
	struct kv_answer *ans;	/* handler mode: [num_workers] */
};

#define slot_used(e)	((e)->peers != NULL)

/* cfg.round_closed: a slot's open round, its first push whole and the time its adds took */
struct kv_rt {
	uint32_t first;		/* clock / 1024 */
	uint32_t sum;		/* ns / 1024 */
};

/* One sender's resend bucket, and what it was refused. */
struct kv_resend {
	double tokens;		/* bytes it may send again now */
	uint64_t last_ns;	/* tokens are as of then */
	uint64_t refused;	/* since the start */
	uint64_t win_refused;	/* since the last psb_kv_resend_busiest */
	uint64_t win_bytes;
};

/* A segment of a staged push: the caller's buffer (ref), or a copy of ours (ref NULL). */
struct kv_seg {
	void *ref;
	const uint8_t *data;
	uint32_t off;
	uint32_t len;
};

/* A push whose segments are arriving: nothing of it is in the store until it is whole. */
struct kv_stage {
	struct kv_stage *hnext;			/* bucket chain */
	struct kv_stage *lru_prev, *lru_next;	/* every stage, least recently fed first */
	struct kv_stage *s_prev, *s_next;	/* the stages of one sender */
	uint64_t key;
	uint64_t last_ns;
	uint64_t probed_ns;			/* last_ns when its tail was last named lost */
	uint64_t reserved;			/* budget it holds */
	uint64_t got;				/* value bytes arrived */
	struct kv_peer req;			/* the sender's state on the key, once stored */
	uint16_t sender;
	struct psb_reasm reasm;
	uint32_t nsegs, cap;
	struct kv_seg *segs;
};

struct psb_kv {
	struct psb_kv_cfg cfg;
	uint32_t cap0;			/* slots at creation: reset returns there */
	struct kv_entry *slots;
	struct kv_rt *rt;		/* [mask + 1] beside slots when rounds are timed, or NULL */
	uint32_t mask;
	uint32_t nkeys;
	uint64_t bytes;			/* value bytes */
	uint64_t mem;			/* what counts against max_bytes */
	struct psb_addr *addrs;		/* last address seen per sender */
	uint64_t last_in_ns;		/* the clock when the last request came in */
	uint32_t *epoch;		/* last epoch seen per sender */
	uint8_t *epoch_known;
	/* Staging. */
	struct kv_stage **buckets;
	uint32_t bmask;
	uint32_t nstages;
	struct kv_stage *lru_head, *lru_tail;
	struct kv_stage **by_sender;	/* [num_workers] list heads */
	uint64_t *sender_reserved;	/* [num_workers] */
	uint64_t reserved;
	struct kv_resend *resend;	/* [num_workers] */
	uint32_t held;
	uint64_t now_ns;
	struct psb_kv_stats st;
};

static inline uint32_t
key_hash(uint64_t key)
{
	key ^= key >> 31;
	key *= 0x9e3779b97f4a7c15ull;
	return (uint32_t)(key >> 32);
}

static inline size_t
value_size(uint32_t len)
{
	return ((size_t)len + 63) & ~(size_t)63;
}

static float *
value_alloc(uint32_t len)
{
	size_t sz = value_size(len);
	float *v = aligned_alloc(64, sz);

	if (v != NULL)
		memset(v, 0, sz);
	return v;
}

/* A stored value: value_headroom bytes in front of it are the caller's. */
static float *
stored_alloc(const struct psb_kv *kv, uint32_t len)
{
	size_t sz = value_size(len) + kv->cfg.value_headroom;
	uint8_t *p = aligned_alloc(64, sz);

	if (p == NULL)
		return NULL;
	memset(p, 0, sz);
	return (float *)(void *)(p + kv->cfg.value_headroom);
}

static void
stored_free(const struct psb_kv *kv, float *val)
{
	if (val == NULL)
		return;
	if (kv->cfg.value_free != NULL)
		kv->cfg.value_free(kv->cfg.release_arg, val);
	else
		free((uint8_t *)val - kv->cfg.value_headroom);
}

/*
 * e's value, ready to be added into: a copy of it when answers still read the stored one
 * (value_busy), which then goes to value_free. Without memory for the copy, in place.
 */
static float *
value_for_write(struct psb_kv *kv, struct kv_entry *e)
{
	float *nv;

	if (kv->cfg.value_busy == NULL || !kv->cfg.value_busy(kv->cfg.release_arg, e->val))
		return e->val;
	nv = stored_alloc(kv, e->len);
	if (nv == NULL)
		return e->val;
	memcpy(nv, e->val, e->len);
	stored_free(kv, e->val);
	e->val = nv;
	kv->st.values_copied++;
	return nv;
}

/* Memory a key of len bytes takes in the store. */
static inline uint64_t
entry_mem(const struct psb_kv *kv, uint32_t len)
{
	if (kv->cfg.request != NULL)
		return (uint64_t)kv->cfg.num_workers *
			(sizeof(struct kv_peer) + sizeof(struct kv_answer));
	return (uint64_t)value_size(len) * (kv->cfg.sync ? 2 : 1) +
		(uint64_t)kv->cfg.num_workers * sizeof(struct kv_peer);
}

/* Every sender's resend bucket full, nothing refused. */
static void
resend_fill(struct psb_kv *kv)
{
	uint16_t s;

	for (s = 0; s < kv->cfg.num_workers; s++) {
		memset(&kv->resend[s], 0, sizeof(kv->resend[s]));
		kv->resend[s].tokens = (double)kv->cfg.resend_burst;
		kv->resend[s].last_ns = kv->now_ns;
	}
}

/* What a slot of the table costs: the entry, and its round times when rounds are timed. */
static inline uint64_t
slot_bytes(const struct psb_kv *kv)
{
	return sizeof(struct kv_entry) + (kv->cfg.round_closed != NULL ? sizeof(struct kv_rt) : 0);
}

static int
slots_alloc(struct psb_kv *kv, uint32_t cap)
{
	kv->slots = calloc(cap, sizeof(*kv->slots));
	if (kv->slots == NULL)
		return -ENOMEM;
	if (kv->cfg.round_closed != NULL) {
		kv->rt = calloc(cap, sizeof(*kv->rt));
		if (kv->rt == NULL) {
			free(kv->slots);
			kv->slots = NULL;
			return -ENOMEM;
		}
	}
	kv->mask = cap - 1;
	kv->mem += (uint64_t)cap * slot_bytes(kv);
	return 0;
}

struct psb_kv *
psb_kv_create(const struct psb_kv_cfg *cfg)
{
	struct psb_kv *kv;
	uint32_t cap = 64;
	uint16_t nw = cfg->num_workers;

	if (nw == 0 || nw > PSB_KV_MAX_WORKERS || cfg->seg_size == 0 || (cfg->seg_size & 3) != 0 ||
	    (cfg->value_headroom & 63) != 0 || (cfg->round_closed == NULL) != (cfg->clock_ns == NULL))
		return NULL;
	while (cap < cfg->capacity && cap < (1u << 30))
		cap <<= 1;
	kv = calloc(1, sizeof(*kv));
	if (kv == NULL)
		return NULL;
	kv->cfg = *cfg;
	if (kv->cfg.epoch == 0)
		kv->cfg.epoch = psb_epoch_new();
	if (kv->cfg.max_value == 0 || kv->cfg.max_value > PSB_MAX_VALUE)
		kv->cfg.max_value = PSB_MAX_VALUE;
	if (kv->cfg.request != NULL)
		kv->cfg.sync = 0;	/* rounds are the handler's */
	kv->cap0 = cap;
	kv->addrs = calloc(nw, sizeof(*kv->addrs));
	kv->epoch = calloc(nw, sizeof(*kv->epoch));
	kv->epoch_known = calloc(nw, sizeof(*kv->epoch_known));
	kv->by_sender = calloc(nw, sizeof(*kv->by_sender));
	kv->sender_reserved = calloc(nw, sizeof(*kv->sender_reserved));
	kv->resend = calloc(nw, sizeof(*kv->resend));
	kv->buckets = calloc(64, sizeof(*kv->buckets));
	kv->bmask = 63;
	if (kv->addrs == NULL || kv->epoch == NULL || kv->epoch_known == NULL ||
	    kv->by_sender == NULL || kv->sender_reserved == NULL || kv->resend == NULL ||
	    kv->buckets == NULL || slots_alloc(kv, cap) != 0) {
		psb_kv_free(kv);
		return NULL;
	}
	resend_fill(kv);
	return kv;
}

/* Staging: find, create, free. */

static inline uint32_t
stage_hash(uint16_t sender, uint64_t key)
{
	return key_hash(key ^ ((uint64_t)sender << 48) ^ ((uint64_t)sender << 17));
}

static struct kv_stage *
stage_find(const struct psb_kv *kv, uint16_t sender, uint64_t key)
{
	struct kv_stage *st = kv->buckets[stage_hash(sender, key) & kv->bmask];

	for (; st != NULL; st = st->hnext)
		if (st->key == key && st->sender == sender)
			return st;
	return NULL;
}

static void
buckets_grow(struct psb_kv *kv)
{
	uint32_t n = (kv->bmask + 1) * 2, i;
	struct kv_stage **nb = calloc(n, sizeof(*nb));

	if (nb == NULL)
		return;		/* longer chains, still correct */
	for (i = 0; i <= kv->bmask; i++) {
		struct kv_stage *st = kv->buckets[i], *next;

		for (; st != NULL; st = next) {
			uint32_t b = stage_hash(st->sender, st->key) & (n - 1);

			next = st->hnext;
			st->hnext = nb[b];
			nb[b] = st;
		}
	}
	free(kv->buckets);
	kv->buckets = nb;
	kv->bmask = n - 1;
}

static void
lru_unlink(struct psb_kv *kv, struct kv_stage *st)
{
	if (st->lru_prev != NULL)
		st->lru_prev->lru_next = st->lru_next;
	else
		kv->lru_head = st->lru_next;
	if (st->lru_next != NULL)
		st->lru_next->lru_prev = st->lru_prev;
	else
		kv->lru_tail = st->lru_prev;
	st->lru_prev = st->lru_next = NULL;
}

static void
lru_append(struct psb_kv *kv, struct kv_stage *st)
{
	st->lru_next = NULL;
	st->lru_prev = kv->lru_tail;
	if (kv->lru_tail != NULL)
		kv->lru_tail->lru_next = st;
	else
		kv->lru_head = st;
	kv->lru_tail = st;
}

/* Budget a staged push holds: its announced bytes and the bookkeeping they may need. */
static inline uint64_t
stage_cost(uint32_t total_len, uint32_t nseg)
{
	return sizeof(struct kv_stage) + (uint64_t)total_len +
		(uint64_t)nseg * (sizeof(struct kv_seg) + 16) + ((uint64_t)nseg + 63) / 64 * 8;
}

uint64_t
psb_kv_push_cost(uint32_t len, uint16_t seg_size)
{
	return stage_cost(len, psb_seg_count(len, seg_size != 0 ? seg_size : 4));
}

uint64_t
psb_kv_resend_cost(uint32_t len, uint16_t seg_size)
{
	uint32_t n = len != 0 ? psb_seg_count(len, seg_size != 0 ? seg_size : 4) : 1;

	return (uint64_t)n * PSB_FRAME_HLEN + len;
}

int
psb_kv_budget_derive(struct psb_kv_budget *b, const struct psb_kv_budget *given,
		uint64_t avail, uint32_t max_value, uint16_t seg_size, uint16_t num_workers,
		uint16_t nshards, char *err, size_t errlen)
{
	uint64_t one = psb_kv_push_cost(max_value, seg_size);
	uint64_t two = 2 * one * (nshards != 0 ? nshards : 1);
	uint64_t answer = psb_kv_resend_cost(max_value, seg_size);
	uint64_t share;

	b->max_bytes = given->max_bytes != 0 ? given->max_bytes : avail / 4 * 3;
	b->max_keys = given->max_keys != 0 ? given->max_keys : 1u << 20;
	b->reasm_bytes = given->reasm_bytes != 0 ? given->reasm_bytes :
		avail / 4 > two ? avail / 4 : two;
	share = b->reasm_bytes / (num_workers != 0 ? num_workers : 1);
	b->reasm_sender_bytes = given->reasm_sender_bytes != 0 ? given->reasm_sender_bytes :
		share > one ? share : one;
	if (b->reasm_sender_bytes > b->reasm_bytes)
		b->reasm_sender_bytes = b->reasm_bytes;
	if (b->reasm_sender_bytes < one) {
		snprintf(err, errlen, "%s %llu B is less than one push of node.max_value %u B "
			 "(%llu B with its bookkeeping): raise it or lower node.max_value",
			 given->reasm_sender_bytes != 0 && b->reasm_sender_bytes ==
			 given->reasm_sender_bytes ? "store.reasm_sender_bytes" : "store.reasm_bytes",
			 (unsigned long long)b->reasm_sender_bytes, max_value,
			 (unsigned long long)one);
		return -EINVAL;
	}
	b->resend_burst = given->resend_burst != 0 ? given->resend_burst : 2 * answer;
	b->resend_bps = given->resend_bps != 0 ? given->resend_bps : PSB_KV_RESEND_BPS;
	if (b->resend_burst < answer) {
		snprintf(err, errlen, "store.resend_burst %llu B is less than one answer of "
			 "node.max_value %u B (%llu B with its headers): nothing that large could "
			 "be sent again; raise it or lower node.max_value",
			 (unsigned long long)b->resend_burst, max_value,
			 (unsigned long long)answer);
		return -EINVAL;
	}
	return 0;
}

/* Which budget a new stage of cost would break (PSB_BUDGET_NONE: none). */
static uint32_t
stage_over_budget(const struct psb_kv *kv, uint16_t sender, uint64_t cost)
{
	if (kv->cfg.reasm_sender_bytes != 0 &&
	    kv->sender_reserved[sender] + cost > kv->cfg.reasm_sender_bytes)
		return PSB_BUDGET_REASM_SENDER;
	if (kv->cfg.reasm_bytes != 0 && kv->reserved + cost > kv->cfg.reasm_bytes)
		return PSB_BUDGET_REASM;
	return PSB_BUDGET_NONE;
}

static void
peer_start(struct kv_peer *p, const struct psb_hdr *h, uint8_t state)
{
	p->epoch = h->aux;
	p->req_id = h->req_id;
	p->type = h->type;
	p->flags = h->flags;
	p->round = h->round;
	p->state = state;
}

static struct kv_stage *
stage_new(struct psb_kv *kv, const struct psb_hdr *h, uint64_t cost)
{
	struct kv_stage *st = calloc(1, sizeof(*st));
	uint32_t b;

	if (st == NULL)
		return NULL;
	if (psb_reasm_init(&st->reasm, h->total_len, h->seg_size) < 0) {
		free(st);
		return NULL;
	}
	st->key = h->key;
	st->sender = h->sender;
	peer_start(&st->req, h, PEER_ASSEMBLING);
	st->reserved = cost;
	st->last_ns = kv->now_ns;
	b = stage_hash(st->sender, st->key) & kv->bmask;
	st->hnext = kv->buckets[b];
	kv->buckets[b] = st;
	lru_append(kv, st);
	st->s_next = kv->by_sender[st->sender];
	if (st->s_next != NULL)
		st->s_next->s_prev = st;
	kv->by_sender[st->sender] = st;
	kv->sender_reserved[st->sender] += cost;
	kv->reserved += cost;
	if (++kv->nstages > kv->bmask + 1)
		buckets_grow(kv);
	return st;
}

static void
seg_release(struct psb_kv *kv, struct kv_seg *sg)
{
	if (sg->ref != NULL) {
		kv->cfg.release(kv->cfg.release_arg, sg->ref);
		kv->held--;
	} else {
		free((void *)(uintptr_t)sg->data);
	}
}

static struct kv_entry *lookup(const struct psb_kv *kv, uint64_t key);

/* Free a stage and everything it keeps; the request it belonged to is forgotten. */
static void
stage_free(struct psb_kv *kv, struct kv_stage *st)
{
	struct kv_stage **pp = &kv->buckets[stage_hash(st->sender, st->key) & kv->bmask];
	struct kv_entry *e;
	uint32_t i;

	for (i = 0; i < st->nsegs; i++)
		seg_release(kv, &st->segs[i]);
	free(st->segs);
	psb_reasm_fini(&st->reasm);
	while (*pp != st)
		pp = &(*pp)->hnext;
	*pp = st->hnext;
	lru_unlink(kv, st);
	if (st->s_prev != NULL)
		st->s_prev->s_next = st->s_next;
	else
		kv->by_sender[st->sender] = st->s_next;
	if (st->s_next != NULL)
		st->s_next->s_prev = st->s_prev;
	kv->sender_reserved[st->sender] -= st->reserved;
	kv->reserved -= st->reserved;
	kv->nstages--;
	/* The key's request state said "assembling" for this push: nothing is pending now. */
	e = lookup(kv, st->key);
	if (e != NULL) {
		struct kv_peer *p = &e->peers[st->sender];

		if (p->state == PEER_ASSEMBLING && p->req_id == st->req.req_id &&
		    p->epoch == st->req.epoch)
			p->state = PEER_IDLE;
	}
	free(st);
}

static void
stage_discard(struct psb_kv *kv, struct kv_stage *st, enum psb_kv_discard why)
{
	kv->st.discarded[why]++;
	kv->st.discarded_bytes += st->got;
	stage_free(kv, st);
}

/* Keep a segment of st until the push is whole: by reference when that is worth it. */
static int
stage_keep(struct psb_kv *kv, struct kv_stage *st, const struct psb_hdr *h, const void *payload,
		void *ref)
{
	struct kv_seg *sg;

	if (st->nsegs == st->cap) {
		uint32_t ncap = st->cap == 0 ? 8 : st->cap * 2;
		struct kv_seg *n;

		if (ncap > st->reasm.nseg)
			ncap = st->reasm.nseg;
		n = realloc(st->segs, ncap * sizeof(*n));
		if (n == NULL)
			return -ENOMEM;
		st->segs = n;
		st->cap = ncap;
	}
	sg = &st->segs[st->nsegs];
	sg->off = h->offset;
	sg->len = h->seg_len;
	if (ref != NULL && kv->cfg.release != NULL && kv->held < kv->cfg.hold_max &&
	    (uint64_t)h->seg_len * 4 >= (kv->cfg.hold_cost != 0 ? kv->cfg.hold_cost : h->seg_len)) {
		sg->ref = ref;
		sg->data = payload;
		kv->held++;
		kv->st.segs_held++;
	} else {
		uint8_t *c = malloc(h->seg_len);

		if (c == NULL)
			return -ENOMEM;
		memcpy(c, payload, h->seg_len);
		sg->ref = NULL;
		sg->data = c;
		kv->st.segs_copied++;
	}
	st->nsegs++;
	return sg->ref != NULL ? PSB_KV_HELD : 0;
}

/* Handler mode: forget the answer sender s was given on e. */
static void
answer_drop(struct psb_kv *kv, struct kv_entry *e, uint16_t s)
{
	struct kv_answer *a = &e->ans[s];

	if (a->val == NULL)
		return;
	kv->mem -= value_size(a->len);
	free(a->val);
	a->val = NULL;
	a->len = 0;
}

static void
entry_free(struct psb_kv *kv, struct kv_entry *e)
{
	uint16_t s;

	for (s = 0; e->ans != NULL && s < kv->cfg.num_workers; s++)
		answer_drop(kv, e, s);
	free(e->ans);
	free(e->peers);
	stored_free(kv, e->val);
	if (kv->cfg.sync_round)
		stored_free(kv, e->acc);	/* it takes the value's place at every close */
	else
		free(e->acc);
	memset(e, 0, sizeof(*e));
}

static void
drop_all(struct psb_kv *kv)
{
	uint32_t i;

	while (kv->lru_head != NULL)
		stage_free(kv, kv->lru_head);
	if (kv->slots != NULL)
		for (i = 0; i <= kv->mask; i++)
			if (slot_used(&kv->slots[i]))
				entry_free(kv, &kv->slots[i]);
	free(kv->slots);
	kv->slots = NULL;
	free(kv->rt);
	kv->rt = NULL;
	kv->nkeys = 0;
	kv->bytes = 0;
	kv->mem = 0;
}

void
psb_kv_free(struct psb_kv *kv)
{
	if (kv == NULL)
		return;
	drop_all(kv);
	free(kv->buckets);
	free(kv->addrs);
	free(kv->epoch);
	free(kv->epoch_known);
	free(kv->by_sender);
	free(kv->sender_reserved);
	free(kv->resend);
	free(kv);
}

static struct kv_entry *
lookup(const struct psb_kv *kv, uint64_t key)
{
	uint32_t i = key_hash(key) & kv->mask;

	for (;;) {
		struct kv_entry *e = &kv->slots[i];

		if (!slot_used(e))
			return NULL;
		if (e->key == key)
			return e;
		i = (i + 1) & kv->mask;
	}
}

static int
grow(struct psb_kv *kv)
{
	uint32_t ncap = (kv->mask + 1) * 2, i, j;
	uint64_t add = (uint64_t)(kv->mask + 1) * slot_bytes(kv);
	struct kv_entry *ns;
	struct kv_rt *nrt = NULL;

	if (kv->cfg.max_bytes != 0 && kv->mem + add > kv->cfg.max_bytes)
		return -ENOSPC;
	ns = calloc(ncap, sizeof(*ns));
	if (ns == NULL)
		return -ENOMEM;
	if (kv->rt != NULL && (nrt = calloc(ncap, sizeof(*nrt))) == NULL) {
		free(ns);
		return -ENOMEM;
	}
	for (i = 0; i <= kv->mask; i++) {
		if (!slot_used(&kv->slots[i]))
			continue;
		j = key_hash(kv->slots[i].key) & (ncap - 1);
		while (slot_used(&ns[j]))
			j = (j + 1) & (ncap - 1);
		ns[j] = kv->slots[i];
		if (nrt != NULL)
			nrt[j] = kv->rt[i];
	}
	free(kv->slots);
	kv->slots = ns;
	if (nrt != NULL) {
		free(kv->rt);
		kv->rt = nrt;
	}
	kv->mask = ncap - 1;
	kv->mem += add;
	return 0;
}

/* Which budget a new key of len bytes would break (PSB_BUDGET_NONE: none). */
static uint32_t
key_over_budget(const struct psb_kv *kv, uint32_t len)
{
	if (kv->cfg.max_keys != 0 && kv->nkeys >= kv->cfg.max_keys)
		return PSB_BUDGET_KEYS;
	if (kv->cfg.max_bytes != 0 && kv->mem + entry_mem(kv, len) > kv->cfg.max_bytes)
		return PSB_BUDGET_BYTES;
	return PSB_BUDGET_NONE;
}

/* A new key; NULL with *budget set when a budget or memory refuses it. */
static struct kv_entry *
insert(struct psb_kv *kv, uint64_t key, uint32_t len, uint32_t *budget)
{
	struct kv_entry *e;
	uint32_t i;
	int rc;

	*budget = key_over_budget(kv, len);
	if (*budget != PSB_BUDGET_NONE)
		return NULL;
	if ((kv->nkeys + 1) * 2 > kv->mask + 1 && (rc = grow(kv)) < 0) {
		*budget = rc == -ENOSPC ? PSB_BUDGET_BYTES : PSB_BUDGET_NONE;
		return NULL;
	}
	if (kv->cfg.max_bytes != 0 && kv->mem + entry_mem(kv, len) > kv->cfg.max_bytes) {
		*budget = PSB_BUDGET_BYTES;
		return NULL;
	}
	i = key_hash(key) & kv->mask;
	while (slot_used(&kv->slots[i]))
		i = (i + 1) & kv->mask;
	e = &kv->slots[i];
	e->peers = calloc(kv->cfg.num_workers, sizeof(*e->peers));
	if (kv->cfg.request != NULL) {
		/* the values are the handler's: the key keeps requests and answers only */
		len = 0;
		e->ans = calloc(kv->cfg.num_workers, sizeof(*e->ans));
		if (e->peers == NULL || e->ans == NULL) {
			entry_free(kv, e);
			return NULL;
		}
	} else {
		e->val = stored_alloc(kv, len);
		if (kv->cfg.sync)
			e->acc = kv->cfg.sync_round ? stored_alloc(kv, len) : value_alloc(len);
		if (e->val == NULL || e->peers == NULL || (kv->cfg.sync && e->acc == NULL)) {
			entry_free(kv, e);
			return NULL;
		}
	}
	e->key = key;
	e->len = len;
	if (kv->rt != NULL)
		kv->rt[e - kv->slots] = (struct kv_rt){ 0, 0 };
	kv->nkeys++;
	kv->bytes += len;
	kv->mem += entry_mem(kv, len);
	return e;
}

static void
fill_resp(struct psb_kv *kv, struct psb_hdr *r, uint8_t type, uint16_t sender, uint32_t req_id,
		uint8_t flags, uint64_t key)
{
	psb_hdr_init(r, type);
	r->flags = flags & PSB_F_SYNC;
	r->sender = sender;
	r->req_id = req_id;
	r->key = key;
	r->seg_size = kv->cfg.seg_size;
	r->aux = kv->cfg.epoch;
}

static void
send_error(struct psb_kv *kv, const struct psb_hdr *h, const struct psb_addr *to, uint8_t status,
		uint32_t aux, psb_kv_emit_fn emit, void *arg)
{
	struct psb_hdr r;

	fill_resp(kv, &r, PSB_MSG_ERROR, h->sender, h->req_id, h->flags, h->key);
	r.status = status;
	r.aux = aux;
	r.seg_size = 0;
	kv->st.errors[status < PSB_ST_MAX ? status : 0]++;
	emit(arg, to, &r, NULL);
}

/* A request refused by a budget: ERROR no_memory (the store is full) or busy (retry later). */
static void
refuse(struct psb_kv *kv, const struct psb_hdr *h, const struct psb_addr *to, uint32_t budget,
		psb_kv_emit_fn emit, void *arg)
{
	uint8_t status = budget == PSB_BUDGET_REASM || budget == PSB_BUDGET_REASM_SENDER ?
		PSB_ST_BUSY : PSB_ST_NO_MEM;

	kv->st.refused[budget < PSB_BUDGET_MAX ? budget : 0]++;
	send_error(kv, h, to, status, budget, emit, arg);
}

/*
 * Sender s's bucket pays a resend of cost bytes: 1, or 0 when it holds less (the resend is
 * then not sent, and counted under why). It first refills by the time since it was last
 * looked at.
 */
static int
resend_pay(struct psb_kv *kv, uint16_t s, uint64_t cost, enum psb_kv_resend why)
{
	struct kv_resend *r = &kv->resend[s];
	double burst = (double)kv->cfg.resend_burst;

	if (kv->cfg.resend_burst != 0) {
		if (kv->now_ns > r->last_ns) {
			r->tokens += (double)(kv->now_ns - r->last_ns) *
				(double)kv->cfg.resend_bps / 8e9;
			if (r->tokens > burst)
				r->tokens = burst;
			r->last_ns = kv->now_ns;
		}
		if (r->tokens < (double)cost) {
			kv->st.resend_over_budget[why]++;
			kv->st.resend_over_budget_bytes += cost;
			r->refused++;
			r->win_refused++;
			r->win_bytes += cost;
			return 0;
		}
		r->tokens -= (double)cost;
	}
	kv->st.resend_bytes += cost;
	return 1;
}

/* What sender s is answered on e: the stored value, or (handler mode) the answer it got. */
static inline const float *
answer_of(const struct kv_entry *e, uint16_t s, uint32_t *len, uint32_t *round)
{
	if (e->ans != NULL) {
		*len = e->ans[s].len;
		*round = e->ans[s].round;
		return e->ans[s].val;
	}
	*len = e->len;
	*round = e->round;
	return e->val;
}

/* Answer a finished request of peer p (sender s) on entry e. */
static void
answer(struct psb_kv *kv, struct kv_entry *e, uint16_t s, psb_kv_emit_fn emit, void *arg)
{
	struct kv_peer *p = &e->peers[s];
	struct psb_hdr r;
	const void *value = NULL;
	const float *val;
	uint32_t len;

	fill_resp(kv, &r, p->type | PSB_MSG_RESP, s, p->req_id, p->flags, e->key);
	val = answer_of(e, s, &len, &r.round);
	if (p->type != PSB_MSG_PUSH) {
		r.total_len = len;
		value = val;
		kv->st.bytes_sent += len;
	}
	p->state = PEER_DONE;
	emit(arg, &kv->addrs[s], &r, value);
}

/* Round timing (cfg.round_closed): the clock in units of 1024 ns, and such units in us. */
static inline uint32_t
rt_now(const struct psb_kv *kv)
{
	return (uint32_t)(kv->cfg.clock_ns() >> 10);
}

static inline uint32_t
rt_us(uint32_t units)
{
	return (uint32_t)(((uint64_t)units * 1024 + 500) / 1000);
}

/*
 * sync_round: the round's sum becomes the stored value, by swapping the two. The old value
 * is the next round's sum unless answers still read it (value_busy): it goes to value_free
 * then, and a new sum takes its place (without memory for one, the sum is copied into the
 * value in place, as value_for_write does).
 */
static void
round_sum_becomes_value(struct psb_kv *kv, struct kv_entry *e)
{
	float *old = e->val, *acc;

	if (kv->cfg.value_busy == NULL || !kv->cfg.value_busy(kv->cfg.release_arg, old)) {
		e->val = e->acc;
		e->acc = old;
		return;
	}
	acc = stored_alloc(kv, e->len);
	if (acc == NULL) {
		memcpy(old, e->acc, e->len);
		return;
	}
	e->val = e->acc;
	e->acc = acc;
	stored_free(kv, old);
	kv->st.values_copied++;
}

/* Sync: close the open round of e once every worker pushed into it. */
static void
maybe_close_round(struct psb_kv *kv, struct kv_entry *e, psb_kv_emit_fn emit, void *arg)
{
	uint16_t s, nw = kv->cfg.num_workers;
	uint32_t t0 = 0, t1 = 0;

	if (e->pushed < nw)
		return;
	if (kv->cfg.round_closed != NULL)
		t0 = rt_now(kv);
	/* the next round's first push overwrites acc: nothing to clear */
	if (kv->cfg.sync_round)
		round_sum_becomes_value(kv, e);
	else
		psb_agg_add(value_for_write(kv, e), e->acc, e->len / sizeof(float));
	if (kv->cfg.round_closed != NULL)
		t1 = rt_now(kv);
	e->pushed = 0;
	e->round++;
	kv->st.rounds_closed++;
	for (s = 0; s < nw; s++) {
		struct kv_peer *p = &e->peers[s];

		if (p->state != PEER_WAITING)
			continue;
		if (p->type == PSB_MSG_PULL && p->round > e->round)
			continue;
		answer(kv, e, s, emit, arg);
	}
	if (kv->cfg.round_closed != NULL) {
		struct kv_rt *rt = &kv->rt[e - kv->slots];
		struct psb_kv_round r = {
			.key = e->key, .round = e->round - 1, .len = e->len,
			.wait_us = rt_us(t0 - rt->first),
			.sum_us = rt_us(rt->sum + (t1 - t0)),
			.round_us = rt_us(rt_now(kv) - rt->first),
		};

		rt->sum = 0;
		kv->cfg.round_closed(kv->cfg.round_arg, &r);
	}
}

/* Serial-number comparison: is a newer than b? */
static inline int
req_newer(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

/*
 * Handler mode: request p of sender s on e is whole (value: a push's bytes, len of them; a
 * pull's room): it waits for the caller's answer. The answer s had on e is gone: s asks
 * something new.
 */
static void
hand_over(struct psb_kv *kv, struct kv_entry *e, uint16_t s, const void *value, uint32_t len)
{
	struct kv_peer *p = &e->peers[s];
	struct psb_kv_req r = {
		.key = e->key, .sender = s, .type = p->type, .flags = p->flags,
		.req_id = p->req_id, .epoch = p->epoch, .round = p->round, .value = value,
		.len = len, .from = kv->addrs[s],
	};

	kv->st.req[p->type]++;
	kv->st.handed++;
	answer_drop(kv, e, s);
	p->state = PEER_WAITING;
	kv->cfg.request(kv->cfg.request_arg, &r);
}

/* A pull (or a push, applied) is ready: answer now or wait for the round. */
static void
complete(struct psb_kv *kv, struct kv_entry *e, uint16_t s, psb_kv_emit_fn emit, void *arg)
{
	struct kv_peer *p = &e->peers[s];

	kv->st.req[p->type]++;
	if (!kv->cfg.sync) {
		if (p->type != PSB_MSG_PULL)
			e->round++;
		answer(kv, e, s, emit, arg);
		return;
	}
	p->state = PEER_WAITING;
	if (p->type == PSB_MSG_PULL) {
		if (p->round <= e->round)
			answer(kv, e, s, emit, arg);
		return;
	}
	e->pushed++;
	maybe_close_round(kv, e, emit, arg);
}

/*
 * A sender's epoch changes when it restarts: nothing it staged before can complete any
 * more (its request ids start over), so those pushes go now rather than at their timeout.
 */
static void
note_epoch(struct psb_kv *kv, uint16_t s, uint32_t epoch)
{
	struct kv_stage *st, *next;

	if (kv->epoch_known[s] && kv->epoch[s] == epoch)
		return;
	for (st = kv->by_sender[s]; st != NULL; st = next) {
		next = st->s_next;
		if (st->req.epoch != epoch)
			stage_discard(kv, st, PSB_KV_DISCARD_RESTART);
	}
	kv->epoch[s] = epoch;
	kv->epoch_known[s] = 1;
}

/*
 * Add the segments of a whole push into dst (copy: the first push of a round, into a sum
 * that holds nothing of it yet); they are released with the stage.
 */
static void
stage_apply(struct psb_kv *kv, const struct kv_stage *st, float *dst, psb_agg_add_fn apply)
{
	uint32_t i;

	for (i = 0; i < st->nsegs; i++) {
		const struct kv_seg *sg = &st->segs[i];

		apply(dst + sg->off / sizeof(float), sg->data, sg->len / sizeof(float));
		kv->st.bytes_summed += sg->len;
	}
}

/*
 * Handler mode: a push arrived whole (st: its staged segments, NULL for a one-segment
 * push): its value, in one piece, goes to the handler.
 */
static void
push_hand_over(struct psb_kv *kv, struct kv_entry *e, struct kv_stage *st,
		const struct psb_hdr *h, const void *payload, const struct psb_addr *from,
		psb_kv_emit_fn emit, void *arg)
{
	uint8_t *v;
	uint32_t i;

	if (st == NULL) {
		hand_over(kv, e, h->sender, payload, h->seg_len);
		return;
	}
	v = malloc(h->total_len);
	if (v == NULL) {
		stage_discard(kv, st, PSB_KV_DISCARD_NO_MEMORY);
		send_error(kv, h, from, PSB_ST_NO_MEM, PSB_BUDGET_NONE, emit, arg);
		return;
	}
	for (i = 0; i < st->nsegs; i++)
		memcpy(v + st->segs[i].off, st->segs[i].data, st->segs[i].len);
	memcpy(v + h->offset, payload, h->seg_len);
	stage_free(kv, st);
	hand_over(kv, e, h->sender, v, h->total_len);
	free(v);
}

/*
 * The last segment of a push arrived (st: its staged segments, NULL for a one-segment
 * push): apply it to the store at once and complete the request.
 */
static void
push_whole(struct psb_kv *kv, struct kv_entry *e, struct kv_stage *st, const struct psb_hdr *h,
		const void *payload, const struct psb_addr *from, psb_kv_emit_fn emit, void *arg)
{
	uint32_t budget = PSB_BUDGET_NONE, t0 = 0;
	psb_agg_add_fn apply = psb_agg_add;
	struct kv_peer *p;
	float *dst;
	int timed;

	if (e == NULL) {
		e = insert(kv, h->key, h->total_len, &budget);
		if (e == NULL) {
			if (st != NULL)
				stage_discard(kv, st, PSB_KV_DISCARD_NO_MEMORY);
			refuse(kv, h, from, budget, emit, arg);
			return;
		}
	}
	p = &e->peers[h->sender];
	if (st != NULL)
		*p = st->req;
	else
		peer_start(p, h, PEER_ASSEMBLING);
	if (kv->cfg.request != NULL) {
		push_hand_over(kv, e, st, h, payload, from, emit, arg);
		return;
	}
	timed = kv->cfg.sync && kv->cfg.round_closed != NULL;
	if (timed)
		t0 = rt_now(kv);
	dst = kv->cfg.sync ? e->acc : value_for_write(kv, e);
	/* A round's first push (whole, all of the key's bytes) is its sum so far: copied. */
	if (kv->cfg.sync && e->pushed == 0)
		apply = psb_agg_copy;
	if (st != NULL) {
		stage_apply(kv, st, dst, apply);
		stage_free(kv, st);
	}
	apply(dst + h->offset / sizeof(float), payload, h->seg_len / sizeof(float));
	kv->st.bytes_summed += h->seg_len;
	if (timed) {
		struct kv_rt *rt = &kv->rt[e - kv->slots];
		uint32_t t1 = rt_now(kv);

		rt->sum += t1 - t0;
		if (e->pushed == 0)
			rt->first = t1;
	}
	complete(kv, e, h->sender, emit, arg);
}

/*
 * REPAIR_RESP to a REPAIR h: the staged push's missing segments (st), or ALL (st NULL); a
 * resend the sender's bucket pays for.
 */
static void
send_nack(struct psb_kv *kv, const struct psb_hdr *h, const struct kv_stage *st,
		const struct psb_addr *to, psb_kv_emit_fn emit, void *arg)
{
	uint8_t buf[PSB_REPAIR_MAX_LEN];
	struct psb_repair rp = { .flags = st == NULL ? PSB_REPAIR_ALL : 0 };
	struct psb_hdr r;

	fill_resp(kv, &r, PSB_MSG_REPAIR_RESP, h->sender, h->req_id, h->flags, h->key);
	r.round = h->round;
	r.total_len = psb_reasm_repair(st != NULL ? &st->reasm : NULL, &rp, buf,
		kv->cfg.seg_size);
	r.seg_size = (uint16_t)r.total_len;
	if (!resend_pay(kv, h->sender, psb_kv_resend_cost(r.total_len, r.seg_size),
			PSB_KV_RESEND_REPAIR_RESP))
		return;
	kv->st.nacks++;
	emit(arg, to, &r, buf);
}

/*
 * The segments of e's answer to sender s that rp asks for, each as the sender's bucket
 * pays for it; how many were sent and, in *refused, how many not.
 */
static uint32_t
answer_segments(struct psb_kv *kv, struct kv_entry *e, uint16_t s, const struct psb_repair *rp,
		uint32_t *refused, psb_kv_emit_fn emit, void *arg)
{
	const struct kv_peer *p = &e->peers[s];
	uint32_t i, nseg, sent = 0, len;
	struct psb_hdr r;
	const float *val;

	*refused = 0;
	fill_resp(kv, &r, p->type | PSB_MSG_RESP, s, p->req_id, p->flags, e->key);
	val = answer_of(e, s, &len, &r.round);
	nseg = psb_seg_count(len, kv->cfg.seg_size);
	r.total_len = len;
	for (i = 0; i < rp->nbits && rp->base + i < nseg; i++) {
		uint32_t off = (rp->base + i) * kv->cfg.seg_size, left = len - off;

		if (!psb_repair_bit(rp, i))
			continue;
		r.offset = off;
		r.seg_len = (uint16_t)(left < kv->cfg.seg_size ? left : kv->cfg.seg_size);
		if (!resend_pay(kv, s, PSB_FRAME_HLEN + (uint64_t)r.seg_len,
				PSB_KV_RESEND_SEGMENT)) {
			(*refused)++;
			continue;
		}
		kv->st.repair_segs++;
		kv->st.bytes_sent += r.seg_len;
		sent++;
		emit(arg, &kv->addrs[s], &r, val);
	}
	return sent;
}

/*
 * A finished request asked for again: by a repeated request (rp NULL), or by a REPAIR
 * (rp). Its answer goes again as far as the sender's resend bucket pays for it: the
 * segments the REPAIR names when it began the version still stored, else all of it (a
 * PUSH's ACK, an ERROR), or nothing.
 */
static void
answer_again(struct psb_kv *kv, struct kv_entry *e, const struct psb_hdr *h,
		const struct psb_addr *from, const struct psb_repair *rp, psb_kv_emit_fn emit,
		void *arg)
{
	const struct kv_peer *p = &e->peers[h->sender];
	enum psb_kv_resend why = rp != NULL ? PSB_KV_RESEND_REPAIR : PSB_KV_RESEND_DUPLICATE;
	uint32_t refused, len, round;

	(void)answer_of(e, h->sender, &len, &round);
	if (p->type == PSB_MSG_ERROR) {
		if (resend_pay(kv, h->sender, psb_kv_resend_cost(0, 0), why)) {
			kv->st.retries_answered++;
			send_error(kv, h, from, p->err_status, p->err_aux, emit, arg);
		}
		return;
	}
	if (rp != NULL && p->type != PSB_MSG_PUSH && (rp->flags & PSB_REPAIR_ROUND) &&
	    rp->round == round && rp->nbits != 0) {
		if (answer_segments(kv, e, h->sender, rp, &refused, emit, arg) != 0 || refused == 0)
			kv->st.retries_answered++;
		return;
	}
	/* nothing begun, or begun on a version that is gone: the whole answer */
	if (resend_pay(kv, h->sender, psb_kv_resend_cost(p->type != PSB_MSG_PUSH ? len : 0,
			kv->cfg.seg_size), why)) {
		kv->st.retries_answered++;
		answer(kv, e, h->sender, emit, arg);
	}
}

/* A PULL: answered from the store, in order with the sender's other requests on the key. */
static void
handle_pull(struct psb_kv *kv, struct kv_entry *e, const struct psb_hdr *h,
		const struct psb_addr *from, psb_kv_emit_fn emit, void *arg)
{
	struct kv_stage *st = stage_find(kv, h->sender, h->key);
	struct kv_peer *p;

	/* The sender keeps one request per key: a newer one means it gave up the staged push. */
	if (st != NULL) {
		if (st->req.epoch == h->aux && !req_newer(h->req_id, st->req.req_id)) {
			kv->st.stale++;
			return;
		}
		stage_discard(kv, st, PSB_KV_DISCARD_SUPERSEDED);
	}
	if (e == NULL && kv->cfg.request != NULL) {
		/* handler mode: a key is whatever the handler answers for it */
		uint32_t budget = PSB_BUDGET_NONE;

		e = insert(kv, h->key, 0, &budget);
		if (e == NULL) {
			refuse(kv, h, from, budget, emit, arg);
			return;
		}
	}
	if (e == NULL) {
		send_error(kv, h, from, PSB_ST_NO_KEY, 0, emit, arg);
		return;
	}
	p = &e->peers[h->sender];
	if (p->state != PEER_IDLE && h->aux == p->epoch) {
		if (h->req_id == p->req_id) {
			if (p->state == PEER_DONE)
				answer_again(kv, e, h, from, NULL, emit, arg);
			return;		/* waiting for its round: answered when it closes */
		}
		if (!req_newer(h->req_id, p->req_id)) {
			kv->st.stale++;
			return;
		}
	}
	peer_start(p, h, PEER_ASSEMBLING);
	if (kv->cfg.request != NULL)
		hand_over(kv, e, h->sender, NULL, h->total_len);
	else
		complete(kv, e, h->sender, emit, arg);
}

/*
 * A REPAIR: the sender's request timed out. A push still being staged: which segments are
 * missing. A request answered: the answer again, the segments the sender lacks. One waiting
 * for its sync round: nothing (the round's close answers it). One never seen (all of it
 * lost, or its staged part discarded): ALL, send it again.
 */
static void
handle_repair(struct psb_kv *kv, struct kv_entry *e, const struct psb_hdr *h,
		const void *payload, const struct psb_addr *from, psb_kv_emit_fn emit, void *arg)
{
	struct kv_stage *st = stage_find(kv, h->sender, h->key);
	struct kv_peer *p = e != NULL ? &e->peers[h->sender] : NULL;
	struct psb_repair rp;

	if (psb_repair_decode(&rp, payload, h->seg_len) != 0 ||
	    !psb_msg_is_request(rp.req_type)) {
		kv->st.repair_bad++;
		return;
	}
	kv->st.repairs++;
	if (st != NULL && st->req.epoch == h->aux && st->req.req_id == h->req_id) {
		st->last_ns = kv->now_ns;
		send_nack(kv, h, st, from, emit, arg);
		return;
	}
	if (p != NULL && p->state != PEER_IDLE && p->epoch == h->aux) {
		if (p->req_id == h->req_id && p->state == PEER_DONE) {
			answer_again(kv, e, h, from, &rp, emit, arg);
			return;
		}
		if (p->req_id == h->req_id && p->state == PEER_WAITING)
			return;
		if (!req_newer(h->req_id, p->req_id)) {
			kv->st.stale++;
			return;
		}
	}
	send_nack(kv, h, NULL, from, emit, arg);
}

static int
handle_push(struct psb_kv *kv, struct kv_entry *e, const struct psb_hdr *h, const void *payload,
		void *ref, const struct psb_addr *from, psb_kv_emit_fn emit, void *arg)
{
	struct kv_peer *p = e != NULL ? &e->peers[h->sender] : NULL;
	uint32_t nseg = psb_seg_count(h->total_len, h->seg_size), budget, open_round;
	struct kv_stage *st = NULL;
	uint32_t cur_epoch = 0, cur_req = 0;
	int cur_state = PEER_IDLE, rc;

	if (h->total_len > kv->cfg.max_value) {
		send_error(kv, h, from, PSB_ST_TOO_LARGE, kv->cfg.max_value, emit, arg);
		return 0;
	}
	if ((h->total_len & 3) != 0 || h->total_len == 0 ||
	    (e != NULL && e->len != h->total_len && kv->cfg.request == NULL)) {
		send_error(kv, h, from, PSB_ST_LEN_MISMATCH, e != NULL ? e->len : 0, emit, arg);
		return 0;
	}
	/* Where this sender is on this key: a staged push, or the key's request state. */
	if (p == NULL || p->state == PEER_IDLE || p->state == PEER_ASSEMBLING)
		st = stage_find(kv, h->sender, h->key);
	if (st != NULL) {
		cur_state = PEER_ASSEMBLING;
		cur_epoch = st->req.epoch;
		cur_req = st->req.req_id;
	} else if (p != NULL && p->state != PEER_ASSEMBLING) {
		cur_state = p->state;
		cur_epoch = p->epoch;
		cur_req = p->req_id;
	}

	if (kv->cfg.sync && p != NULL && cur_state == PEER_WAITING && h->aux != cur_epoch &&
	    p->type != PSB_MSG_PULL && !req_newer(h->round, p->round)) {
		/*
		 * Restarted in the middle of a round it had already pushed: that push
		 * stands (a round takes one push per worker); the new request is
		 * answered with the round. Also when the new incarnation starts from an
		 * older round (a worker rejoining a job begins at 0 and would follow the
		 * round it is told): its push would be the round's second of that worker.
		 */
		peer_start(p, h, PEER_WAITING);
		kv->st.dup_segs++;
		return 0;
	}
	if (cur_state != PEER_IDLE && h->aux == cur_epoch && h->req_id == cur_req) {
		if (cur_state == PEER_DONE) {
			/* A retry of an answered request: answer again, once per retry. */
			if (h->offset == 0)
				answer_again(kv, e, h, from, NULL, emit, arg);
			else
				kv->st.dup_segs++;
			return 0;
		}
		if (cur_state == PEER_WAITING)
			return 0;
		/* PEER_ASSEMBLING: one more segment of the staged push */
	} else {
		if (cur_state != PEER_IDLE && h->aux == cur_epoch && !req_newer(h->req_id, cur_req)) {
			kv->st.stale++;
			return 0;
		}
		/* A new request: whatever the sender staged for this key is given up. */
		if (st != NULL) {
			stage_discard(kv, st, h->aux != cur_epoch ? PSB_KV_DISCARD_RESTART :
				PSB_KV_DISCARD_SUPERSEDED);
			st = NULL;
		}
		open_round = e != NULL ? e->round : 0;
		if (kv->cfg.sync && h->round != open_round) {
			/* The worker is out of step with this key's open round. */
			if (p != NULL) {
				peer_start(p, h, PEER_DONE);
				p->type = PSB_MSG_ERROR;
				p->err_status = PSB_ST_STALE;
				p->err_aux = open_round;
			}
			send_error(kv, h, from, PSB_ST_STALE, open_round, emit, arg);
			return 0;
		}
		if (e == NULL && (budget = key_over_budget(kv, h->total_len)) != PSB_BUDGET_NONE) {
			/* Nothing is recorded: a retry finds the store as it is then. */
			if (h->offset == 0)
				refuse(kv, h, from, budget, emit, arg);
			else
				kv->st.budget_drops++;
			return 0;
		}
		if (nseg > 1) {
			uint64_t cost = stage_cost(h->total_len, nseg);

			budget = stage_over_budget(kv, h->sender, cost);
			if (budget != PSB_BUDGET_NONE) {
				/* One answer per attempt (its first segment), not one per segment. */
				if (h->offset == 0)
					refuse(kv, h, from, budget, emit, arg);
				else
					kv->st.budget_drops++;
				return 0;
			}
			st = stage_new(kv, h, cost);
			if (st == NULL) {
				send_error(kv, h, from, PSB_ST_NO_MEM, PSB_BUDGET_NONE, emit, arg);
				return 0;
			}
			if (p != NULL)
				peer_start(p, h, PEER_ASSEMBLING);
		}
	}

	kv->st.segs_in++;
	if (st == NULL) {
		/* One segment: the whole push is here. */
		push_whole(kv, e, NULL, h, payload, from, emit, arg);
		return 0;
	}
	rc = psb_reasm_mark(&st->reasm, h);
	if (rc < 0) {
		send_error(kv, h, from, PSB_ST_LEN_MISMATCH, e != NULL ? e->len : st->reasm.total_len,
			emit, arg);
		return 0;
	}
	if (rc == PSB_REASM_DUP) {
		kv->st.dup_segs++;
		return 0;
	}
	st->got += h->seg_len;
	st->last_ns = kv->now_ns;
	lru_unlink(kv, st);
	lru_append(kv, st);
	if (rc == PSB_REASM_DONE) {
		push_whole(kv, e, st, h, payload, from, emit, arg);
		return 0;
	}
	rc = stage_keep(kv, st, h, payload, ref);
	if (rc < 0) {
		stage_discard(kv, st, PSB_KV_DISCARD_NO_MEMORY);
		send_error(kv, h, from, PSB_ST_NO_MEM, PSB_BUDGET_NONE, emit, arg);
		return 0;
	}
	/*
	 * The push's last segment came and some before it did not: a worker sends its segments
	 * in order on one path, so those were lost. Name them now (REPAIR_RESP, as to a
	 * REPAIR) rather than after the worker's timeout; a resend that completes the tail
	 * again names what is still missing.
	 */
	if ((uint32_t)h->offset + h->seg_len == h->total_len) {
		kv->st.early_nacks++;
		send_nack(kv, h, st, from, emit, arg);
	}
	return rc;
}

int
psb_kv_handle_ref(struct psb_kv *kv, const struct psb_hdr *h, const void *payload, void *ref,
		const struct psb_addr *from, psb_kv_emit_fn emit, void *arg)
{
	struct kv_entry *e;

	if (h->version != PSB_VERSION) {
		send_error(kv, h, from, PSB_ST_BAD_VERSION, PSB_VERSION, emit, arg);
		return 0;
	}
	if (!psb_msg_is_request(h->type) && h->type != PSB_MSG_REPAIR) {
		if (h->type & PSB_MSG_RESP)
			return -EINVAL;
		send_error(kv, h, from, PSB_ST_BAD_TYPE, 0, emit, arg);
		return 0;
	}
	if (h->sender >= kv->cfg.num_workers) {
		send_error(kv, h, from, PSB_ST_BAD_SENDER, kv->cfg.num_workers, emit, arg);
		return 0;
	}
	kv->addrs[h->sender] = *from;
	kv->last_in_ns = kv->now_ns;
	note_epoch(kv, h->sender, h->aux);
	/*
	 * PSB_PROBE_KEY is the workers' liveness probe, outside every ps-lite key range: any
	 * request on it is answered NO_KEY at once, and nothing is stored, staged or handed
	 * over for it, so nothing a peer sends can make a probe wait (a REPAIR of it finds
	 * nothing, and is told to send it all again).
	 */
	if (h->key == PSB_PROBE_KEY && h->type != PSB_MSG_REPAIR) {
		send_error(kv, h, from, PSB_ST_NO_KEY, 0, emit, arg);
		return 0;
	}
	e = lookup(kv, h->key);
	if (h->type == PSB_MSG_PULL) {
		handle_pull(kv, e, h, from, emit, arg);
		return 0;
	}
	if (h->type == PSB_MSG_REPAIR) {
		handle_repair(kv, e, h, payload, from, emit, arg);
		return 0;
	}
	return handle_push(kv, e, h, payload, ref, from, emit, arg);
}

int
psb_kv_handle(struct psb_kv *kv, const struct psb_hdr *h, const void *payload,
		const struct psb_addr *from, psb_kv_emit_fn emit, void *arg)
{
	int rc = psb_kv_handle_ref(kv, h, payload, NULL, from, emit, arg);

	return rc < 0 ? rc : 0;
}

unsigned int
psb_kv_tick(struct psb_kv *kv, uint64_t now_ns)
{
	unsigned int n = 0;

	kv->now_ns = now_ns;
	if (kv->cfg.reasm_timeout_ns == 0)
		return 0;
	while (kv->lru_head != NULL && now_ns - kv->lru_head->last_ns >= kv->cfg.reasm_timeout_ns &&
	       (int64_t)(now_ns - kv->lru_head->last_ns) >= 0) {
		stage_discard(kv, kv->lru_head, PSB_KV_DISCARD_TIMEOUT);
		n++;
	}
	return n;
}

unsigned int
psb_kv_probe_tails(struct psb_kv *kv, uint64_t quiet_ns, unsigned int max, psb_kv_emit_fn emit,
		void *arg)
{
	struct kv_stage *st, *next;
	unsigned int n = 0, seen = 0;
	struct psb_hdr h;

	/*
	 * Least recently fed first: the first fed within quiet_ns of the last request that
	 * came in ends the scan. Quiet counts while other requests come (a tail lost while
	 * traffic goes on), not while nothing comes at all (a server descheduled, a sender
	 * paused): then the sender's own timeout asks.
	 */
	for (st = kv->lru_head; st != NULL && n < max && seen < 4 * max; st = next) {
		next = st->lru_next;
		seen++;
		if ((int64_t)(kv->last_in_ns - st->last_ns) < (int64_t)quiet_ns)
			break;
		if (st->probed_ns == st->last_ns)
			continue;
		st->probed_ns = st->last_ns;
		if (kv->cfg.lossless != NULL &&
		    kv->cfg.lossless(kv->cfg.release_arg, &kv->addrs[st->sender]))
			continue;
		memset(&h, 0, sizeof(h));
		h.sender = st->sender;
		h.req_id = st->req.req_id;
		h.flags = st->req.flags;
		h.key = st->key;
		h.round = st->req.round;
		kv->st.tail_nacks++;
		send_nack(kv, &h, st, &kv->addrs[st->sender], emit, arg);
		n++;
	}
	return n;
}

int
psb_kv_respond(struct psb_kv *kv, const struct psb_kv_req *r, const void *value, uint32_t len,
		psb_kv_emit_fn emit, void *arg)
{
	struct kv_entry *e;
	struct kv_peer *p;
	struct kv_answer *a;

	if (kv->cfg.request == NULL)
		return -EPERM;
	e = r->sender < kv->cfg.num_workers ? lookup(kv, r->key) : NULL;
	p = e != NULL ? &e->peers[r->sender] : NULL;
	if (p == NULL || p->state != PEER_WAITING || p->req_id != r->req_id ||
	    p->epoch != r->epoch) {
		kv->st.answers_stale++;
		return -ESTALE;
	}
	if (p->type == PSB_MSG_PUSH)
		len = 0;
	if ((len & 3) != 0 || len > kv->cfg.max_value || (len != 0 && value == NULL))
		return -EINVAL;
	a = &e->ans[r->sender];
	if (len != 0) {
		if (kv->cfg.max_bytes != 0 && kv->mem + value_size(len) > kv->cfg.max_bytes) {
			struct psb_hdr h;

			/* the request ends in an error, repeated to its retries */
			kv->st.answers_refused++;
			psb_hdr_init(&h, p->type);
			h.sender = r->sender;
			h.req_id = p->req_id;
			h.flags = p->flags;
			h.key = e->key;
			p->state = PEER_DONE;
			p->type = PSB_MSG_ERROR;
			p->err_status = PSB_ST_NO_MEM;
			p->err_aux = PSB_BUDGET_BYTES;
			kv->st.refused[PSB_BUDGET_BYTES]++;
			send_error(kv, &h, &kv->addrs[r->sender], PSB_ST_NO_MEM, PSB_BUDGET_BYTES,
				emit, arg);
			return -ENOSPC;
		}
		a->val = value_alloc(len);
		if (a->val == NULL)
			return -ENOMEM;
		memcpy(a->val, value, len);
		a->len = len;
		kv->mem += value_size(len);
	}
	a->round = ++e->round;
	kv->st.answered++;
	answer(kv, e, r->sender, emit, arg);
	return 0;
}

unsigned int
psb_kv_peer_left(struct psb_kv *kv, uint32_t ip)
{
	unsigned int n = 0;
	uint16_t s;

	for (s = 0; s < kv->cfg.num_workers; s++) {
		if (kv->addrs[s].ip != ip)
			continue;
		while (kv->by_sender[s] != NULL) {
			stage_discard(kv, kv->by_sender[s], PSB_KV_DISCARD_BYE);
			n++;
		}
	}
	return n;
}

int
psb_kv_resend_busiest(struct psb_kv *kv, struct psb_kv_resend_peer *p)
{
	uint16_t s, top = 0, n = 0;

	for (s = 0; s < kv->cfg.num_workers; s++) {
		struct kv_resend *r = &kv->resend[s];

		if (r->win_refused == 0)
			continue;
		if (n++ == 0 || r->win_bytes > kv->resend[top].win_bytes)
			top = s;
	}
	if (n == 0)
		return 0;
	p->sender = top;
	p->senders = n;
	p->addr = kv->addrs[top];
	p->refused = kv->resend[top].win_refused;
	p->refused_bytes = kv->resend[top].win_bytes;
	p->total = kv->resend[top].refused;
	for (s = 0; s < kv->cfg.num_workers; s++)
		kv->resend[s].win_refused = kv->resend[s].win_bytes = 0;
	return 1;
}

struct batch_ctx {
	const struct psb_addr *from;
	uint16_t sender;
	uint8_t *out;
	size_t cap;
	size_t len;
	psb_kv_emit_fn emit;
	void *arg;
};

/* Answers to the batch's sender join the BATCH_RESP while they fit. */
static void
batch_emit(void *arg, const struct psb_addr *to, struct psb_hdr *h, const void *value)
{
	struct batch_ctx *b = arg;
	struct psb_rec r;

	if (h->sender != b->sender || to->ip != b->from->ip || to->port != b->from->port ||
	    h->total_len > UINT16_MAX ||
	    b->len + PSB_REC_HLEN + h->total_len > b->cap) {
		b->emit(b->arg, to, h, value);
		return;
	}
	memset(&r, 0, sizeof(r));
	r.type = h->type;
	r.status = h->status;
	r.len = (uint16_t)h->total_len;
	r.req_id = h->req_id;
	r.round = h->round;
	r.aux = h->aux;
	r.key = h->key;
	psb_rec_encode(b->out + b->len, &r);
	if (r.len != 0)
		memcpy(b->out + b->len + PSB_REC_HLEN, value, r.len);
	b->len += PSB_REC_HLEN + r.len;
}

int
psb_kv_handle_batch(struct psb_kv *kv, const struct psb_hdr *h, const uint8_t *payload,
		const struct psb_addr *from, uint8_t *out, size_t cap, size_t *out_len,
		psb_kv_emit_fn emit, void *arg)
{
	struct batch_ctx b = {
		.from = from, .sender = h->sender, .out = out, .cap = cap, .len = 0, .emit = emit,
		.arg = arg,
	};
	size_t off = 0;
	int n = 0;

	*out_len = 0;
	if (h->type != PSB_MSG_BATCH)
		return -EINVAL;
	kv->st.batches++;
	while (off < h->seg_len) {
		struct psb_rec r;
		struct psb_hdr sh;
		int used = psb_rec_decode(&r, payload + off, h->seg_len - off);

		if (used < 0 || !psb_msg_is_request(r.type)) {
			kv->st.bad_records++;
			break;
		}
		/* Each record is a one-segment request of the batch's sender and epoch. */
		sh = *h;
		sh.type = r.type;
		sh.status = 0;
		sh.req_id = r.req_id;
		sh.round = r.round;
		sh.key = r.key;
		sh.total_len = r.len;
		sh.offset = 0;
		sh.seg_len = r.len;
		sh.seg_size = r.len;
		psb_kv_handle(kv, &sh, payload + off + PSB_REC_HLEN, from, batch_emit, &b);
		off += (size_t)used;
		n++;
	}
	*out_len = b.len;
	return n;
}

const float *
psb_kv_get(const struct psb_kv *kv, uint64_t key, uint32_t *len, uint32_t *round)
{
	const struct kv_entry *e = lookup(kv, key);

	if (e == NULL)
		return NULL;
	if (len != NULL)
		*len = e->len;
	if (round != NULL)
		*round = e->round;
	return e->val;
}

void
psb_kv_reset(struct psb_kv *kv)
{
	drop_all(kv);
	/* a table as at creation: calloc of cap0 slots cannot fail where it did not before */
	if (slots_alloc(kv, kv->cap0) != 0 && slots_alloc(kv, 64) != 0) {
		kv->cap0 = 1;
		if (slots_alloc(kv, 1) != 0)
			abort();
	}
	memset(kv->epoch_known, 0, kv->cfg.num_workers);
	memset(&kv->st, 0, sizeof(kv->st));
	resend_fill(kv);
}

double
psb_kv_value_sum(const struct psb_kv *kv)
{
	double sum = 0;
	uint32_t i, j;

	for (i = 0; i <= kv->mask; i++) {
		const struct kv_entry *e = &kv->slots[i];

		for (j = 0; e->len != 0 && j < e->len / sizeof(float); j++)
			sum += e->val[j];
	}
	return sum;
}

uint32_t
psb_kv_digest(const struct psb_kv *kv, struct psb_kv_digest *out, uint32_t n)
{
	uint32_t i, j, k = 0;

	for (i = 0; i <= kv->mask && k < n; i++) {
		const struct kv_entry *e = &kv->slots[i];
		struct psb_kv_digest *d = &out[k];

		if (e->len == 0)
			continue;
		d->key = e->key;
		d->len = e->len;
		d->round = e->round;
		d->min = d->max = e->val[0];
		d->sum = 0;
		for (j = 0; j < e->len / sizeof(float); j++) {
			float v = e->val[j];

			if (v < d->min)
				d->min = v;
			if (v > d->max)
				d->max = v;
			d->sum += v;
		}
		k++;
	}
	return kv->nkeys;
}

void
psb_kv_dump(const struct psb_kv *kv, FILE *out)
{
	static const char *const st[] = { "idle", "assembling", "waiting", "done" };
	const struct kv_stage *sg;
	uint32_t i;
	uint16_t s;

	for (i = 0; i <= kv->mask; i++) {
		const struct kv_entry *e = &kv->slots[i];

		if (!slot_used(e))
			continue;
		fprintf(out, "key %llu: %u B, round %u, pushed %u\n", (unsigned long long)e->key,
			e->len, e->round, e->pushed);
		for (s = 0; s < kv->cfg.num_workers; s++) {
			const struct kv_peer *p = &e->peers[s];

			fprintf(out, "  sender %u: %s %s req %u round %u epoch %u\n", s,
				st[p->state], psb_msg_type_name(p->type), p->req_id, p->round, p->epoch);
		}
	}
	for (s = 0; s < kv->cfg.num_workers; s++)
		if (kv->resend[s].refused != 0)
			fprintf(out, "sender %u: %llu resends refused, %.0f B in its bucket\n", s,
				(unsigned long long)kv->resend[s].refused, kv->resend[s].tokens);
	for (sg = kv->lru_head; sg != NULL; sg = sg->lru_next)
		fprintf(out, "staged: key %llu sender %u %s req %u epoch %u segs %u/%u, %llu B "
			"reserved\n", (unsigned long long)sg->key, sg->sender,
			psb_msg_type_name(sg->req.type), sg->req.req_id, sg->req.epoch,
			sg->reasm.nrecv, sg->reasm.nseg, (unsigned long long)sg->reserved);
}

void
psb_kv_stats_add(struct psb_kv_stats *dst, const struct psb_kv_stats *src)
{
	uint64_t *d = (uint64_t *)dst;
	const uint64_t *s = (const uint64_t *)src;
	size_t i;

	for (i = 0; i < sizeof(*dst) / sizeof(uint64_t); i++)
		d[i] += s[i];
}

uint32_t
psb_kv_nkeys(const struct psb_kv *kv)
{
	return kv->nkeys;
}

uint32_t
psb_kv_epoch(const struct psb_kv *kv)
{
	return kv->cfg.epoch;
}

uint64_t
psb_kv_bytes(const struct psb_kv *kv)
{
	return kv->bytes;
}

uint64_t
psb_kv_mem(const struct psb_kv *kv)
{
	return kv->mem;
}

void
psb_kv_staged(const struct psb_kv *kv, uint32_t *n, uint64_t *bytes, uint32_t *held)
{
	if (n != NULL)
		*n = kv->nstages;
	if (bytes != NULL)
		*bytes = kv->reserved;
	if (held != NULL)
		*held = kv->held;
}

const struct psb_kv_stats *
psb_kv_stats(const struct psb_kv *kv)
{
	return &kv->st;
}
