/* Parameter store: key -> float32 tensor, push sums, pull reads, sync rounds, idempotent retries. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "psb_agg.h"
#include "psb_kv.h"

enum peer_state {
	PEER_IDLE = 0,		/* no request seen */
	PEER_ASSEMBLING,	/* push segments arriving */
	PEER_WAITING,		/* sync: complete, waiting for the round to close */
	PEER_DONE,		/* answered; repeats are answered again */
};

/* One worker's request state on one key: workers keep one request per key in flight. */
struct kv_peer {
	uint32_t epoch;		/* sender incarnation the ids below belong to */
	uint32_t req_id;
	uint8_t type;
	uint8_t state;
	uint8_t flags;
	uint32_t round;		/* sync push: round pushed into; pull: round needed */
	uint32_t err_aux;	/* type ERROR: the detail, to repeat on a retry */
	uint8_t err_status;
	struct psb_reasm reasm;
};

struct kv_entry {
	uint64_t key;
	uint32_t len;		/* bytes; 0 = slot unused */
	uint32_t round;		/* closed sync rounds, or applied pushes (async) */
	uint16_t pushed;	/* sync: pushes complete in the open round */
	float *val;
	float *acc;		/* sync: sum of the open round */
	struct kv_peer *peers;	/* [num_workers] */
};

struct psb_kv {
	struct psb_kv_cfg cfg;
	struct kv_entry *slots;
	uint32_t mask;
	uint32_t nkeys;
	uint64_t bytes;
	struct psb_addr *addrs;	/* last address seen per sender */
	struct psb_kv_stats st;
};

static inline uint32_t
key_hash(uint64_t key)
{
	key ^= key >> 31;
	key *= 0x9e3779b97f4a7c15ull;
	return (uint32_t)(key >> 32);
}

static float *
value_alloc(uint32_t len)
{
	size_t sz = ((size_t)len + 63) & ~(size_t)63;
	float *v = aligned_alloc(64, sz);

	if (v != NULL)
		memset(v, 0, sz);
	return v;
}

struct psb_kv *
psb_kv_create(const struct psb_kv_cfg *cfg)
{
	struct psb_kv *kv;
	uint32_t cap = 64;

	if (cfg->num_workers == 0 || cfg->num_workers > PSB_KV_MAX_WORKERS ||
	    cfg->seg_size == 0 || (cfg->seg_size & 3) != 0)
		return NULL;
	while (cap < cfg->capacity && cap < (1u << 30))
		cap <<= 1;
	kv = calloc(1, sizeof(*kv));
	if (kv == NULL)
		return NULL;
	kv->cfg = *cfg;
	if (kv->cfg.max_value == 0 || kv->cfg.max_value > PSB_MAX_VALUE)
		kv->cfg.max_value = PSB_MAX_VALUE;
	kv->slots = calloc(cap, sizeof(*kv->slots));
	kv->addrs = calloc(cfg->num_workers, sizeof(*kv->addrs));
	if (kv->slots == NULL || kv->addrs == NULL) {
		psb_kv_free(kv);
		return NULL;
	}
	kv->mask = cap - 1;
	return kv;
}

static void
entry_free(struct kv_entry *e, uint16_t nw)
{
	uint16_t i;

	if (e->peers != NULL) {
		for (i = 0; i < nw; i++)
			psb_reasm_fini(&e->peers[i].reasm);
		free(e->peers);
	}
	free(e->val);
	free(e->acc);
	memset(e, 0, sizeof(*e));
}

void
psb_kv_free(struct psb_kv *kv)
{
	uint32_t i;

	if (kv == NULL)
		return;
	if (kv->slots != NULL)
		for (i = 0; i <= kv->mask; i++)
			if (kv->slots[i].len != 0)
				entry_free(&kv->slots[i], kv->cfg.num_workers);
	free(kv->slots);
	free(kv->addrs);
	free(kv);
}

static struct kv_entry *
lookup(const struct psb_kv *kv, uint64_t key)
{
	uint32_t i = key_hash(key) & kv->mask;

	for (;;) {
		struct kv_entry *e = &kv->slots[i];

		if (e->len == 0)
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
	struct kv_entry *ns = calloc(ncap, sizeof(*ns));

	if (ns == NULL)
		return -ENOMEM;
	for (i = 0; i <= kv->mask; i++) {
		if (kv->slots[i].len == 0)
			continue;
		j = key_hash(kv->slots[i].key) & (ncap - 1);
		while (ns[j].len != 0)
			j = (j + 1) & (ncap - 1);
		ns[j] = kv->slots[i];
	}
	free(kv->slots);
	kv->slots = ns;
	kv->mask = ncap - 1;
	return 0;
}

static struct kv_entry *
insert(struct psb_kv *kv, uint64_t key, uint32_t len)
{
	struct kv_entry *e;
	uint32_t i;

	if ((kv->nkeys + 1) * 2 > kv->mask + 1 && grow(kv) < 0)
		return NULL;
	i = key_hash(key) & kv->mask;
	while (kv->slots[i].len != 0)
		i = (i + 1) & kv->mask;
	e = &kv->slots[i];
	e->val = value_alloc(len);
	e->peers = calloc(kv->cfg.num_workers, sizeof(*e->peers));
	if (kv->cfg.sync)
		e->acc = value_alloc(len);
	if (e->val == NULL || e->peers == NULL || (kv->cfg.sync && e->acc == NULL)) {
		free(e->val);
		free(e->peers);
		free(e->acc);
		memset(e, 0, sizeof(*e));
		return NULL;
	}
	e->key = key;
	e->len = len;
	kv->nkeys++;
	kv->bytes += len;
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

/* Answer a finished request of peer p (sender s) on entry e. */
static void
answer(struct psb_kv *kv, struct kv_entry *e, uint16_t s, psb_kv_emit_fn emit, void *arg)
{
	struct kv_peer *p = &e->peers[s];
	struct psb_hdr r;
	const void *value = NULL;

	fill_resp(kv, &r, p->type | PSB_MSG_RESP, s, p->req_id, p->flags, e->key);
	r.round = e->round;
	if (p->type != PSB_MSG_PUSH) {
		r.total_len = e->len;
		value = e->val;
		kv->st.bytes_sent += e->len;
	}
	p->state = PEER_DONE;
	emit(arg, &kv->addrs[s], &r, value);
}

/* Sync: close the open round of e once every worker pushed into it. */
static void
maybe_close_round(struct psb_kv *kv, struct kv_entry *e, psb_kv_emit_fn emit, void *arg)
{
	uint16_t s, nw = kv->cfg.num_workers;

	if (e->pushed < nw)
		return;
	psb_agg_add(e->val, e->acc, e->len / sizeof(float));
	memset(e->acc, 0, e->len);
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
}

/* Serial-number comparison: is a newer than b? */
static inline int
req_newer(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

static int
start_request(struct psb_kv *kv, struct kv_entry *e, const struct psb_hdr *h,
		const struct psb_addr *from, psb_kv_emit_fn emit, void *arg)
{
	struct kv_peer *p = &e->peers[h->sender];

	psb_reasm_fini(&p->reasm);
	p->epoch = h->aux;
	p->req_id = h->req_id;
	p->type = h->type;
	p->flags = h->flags;
	p->round = h->round;
	p->state = PEER_ASSEMBLING;
	if (h->type == PSB_MSG_PULL)
		return 0;
	if (kv->cfg.sync && h->round != e->round) {
		/* The worker is out of step with this key's open round. */
		p->state = PEER_DONE;
		p->type = PSB_MSG_ERROR;
		p->err_status = PSB_ST_STALE;
		p->err_aux = e->round;
		send_error(kv, h, from, PSB_ST_STALE, e->round, emit, arg);
		return -EAGAIN;
	}
	if (psb_reasm_init(&p->reasm, h->total_len, h->seg_size) < 0) {
		p->state = PEER_IDLE;
		send_error(kv, h, from, PSB_ST_NO_MEM, 0, emit, arg);
		return -ENOMEM;
	}
	return 0;
}

/* A pull (or the read half of a finished push) is ready: answer now or wait for the round. */
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

int
psb_kv_handle(struct psb_kv *kv, const struct psb_hdr *h, const void *payload,
		const struct psb_addr *from, psb_kv_emit_fn emit, void *arg)
{
	struct kv_entry *e;
	struct kv_peer *p;
	float *dst;
	int rc;

	if (h->version != PSB_VERSION) {
		send_error(kv, h, from, PSB_ST_BAD_VERSION, PSB_VERSION, emit, arg);
		return 0;
	}
	if (h->type != PSB_MSG_PUSH && h->type != PSB_MSG_PULL && h->type != PSB_MSG_PUSHPULL) {
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

	e = lookup(kv, h->key);
	if (h->type == PSB_MSG_PULL) {
		if (e == NULL) {
			send_error(kv, h, from, PSB_ST_NO_KEY, 0, emit, arg);
			return 0;
		}
	} else {
		if (h->total_len > kv->cfg.max_value) {
			send_error(kv, h, from, PSB_ST_TOO_LARGE, kv->cfg.max_value, emit, arg);
			return 0;
		}
		if ((h->total_len & 3) != 0 || h->total_len == 0) {
			send_error(kv, h, from, PSB_ST_LEN_MISMATCH, e != NULL ? e->len : 0, emit, arg);
			return 0;
		}
		if (e == NULL) {
			e = insert(kv, h->key, h->total_len);
			if (e == NULL) {
				send_error(kv, h, from, PSB_ST_NO_MEM, 0, emit, arg);
				return 0;
			}
		} else if (e->len != h->total_len) {
			send_error(kv, h, from, PSB_ST_LEN_MISMATCH, e->len, emit, arg);
			return 0;
		}
	}

	p = &e->peers[h->sender];
	if (kv->cfg.sync && p->state == PEER_WAITING && h->aux != p->epoch &&
	    p->type != PSB_MSG_PULL && h->type != PSB_MSG_PULL && h->round == p->round) {
		/*
		 * Restarted in the middle of a round it had already pushed: that push
		 * stands (a round takes one push per worker); the new request is
		 * answered with the round.
		 */
		p->epoch = h->aux;
		p->req_id = h->req_id;
		p->type = h->type;
		p->flags = h->flags;
		kv->st.dup_segs++;
		return 0;
	}
	if (p->state != PEER_IDLE && h->aux != p->epoch) {
		/* A restarted sender: its ids start over; nothing it sent before is pending. */
		if (start_request(kv, e, h, from, emit, arg) < 0)
			return 0;
	} else if (p->state != PEER_IDLE && h->req_id == p->req_id) {
		if (p->state == PEER_DONE) {
			/* A retry of an answered request: answer again, once per retry. */
			if (h->offset == 0 && p->type == PSB_MSG_ERROR) {
				kv->st.retries_answered++;
				send_error(kv, h, from, p->err_status, p->err_aux, emit, arg);
			} else if (h->offset == 0) {
				kv->st.retries_answered++;
				answer(kv, e, h->sender, emit, arg);
			} else {
				kv->st.dup_segs++;
			}
			return 0;
		}
		if (p->state == PEER_WAITING)
			return 0;
	} else {
		if (p->state != PEER_IDLE && !req_newer(h->req_id, p->req_id)) {
			kv->st.stale++;
			return 0;
		}
		if (start_request(kv, e, h, from, emit, arg) < 0)
			return 0;
	}

	if (h->type == PSB_MSG_PULL) {
		complete(kv, e, h->sender, emit, arg);
		return 0;
	}
	kv->st.segs_in++;
	rc = psb_reasm_mark(&p->reasm, h);
	if (rc < 0) {
		send_error(kv, h, from, PSB_ST_LEN_MISMATCH, e->len, emit, arg);
		return 0;
	}
	if (rc == PSB_REASM_DUP) {
		kv->st.dup_segs++;
		return 0;
	}
	dst = (kv->cfg.sync ? e->acc : e->val) + h->offset / sizeof(float);
	psb_agg_add(dst, payload, h->seg_len / sizeof(float));
	kv->st.bytes_summed += h->seg_len;
	if (rc == PSB_REASM_DONE) {
		psb_reasm_fini(&p->reasm);
		complete(kv, e, h->sender, emit, arg);
	}
	return 0;
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

		if (used < 0 || (r.type != PSB_MSG_PUSH && r.type != PSB_MSG_PULL &&
				r.type != PSB_MSG_PUSHPULL)) {
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
	uint32_t i;
	uint16_t s;

	for (i = 0; i <= kv->mask; i++) {
		struct kv_entry *e = &kv->slots[i];

		if (e->len == 0)
			continue;
		memset(e->val, 0, e->len);
		if (e->acc != NULL)
			memset(e->acc, 0, e->len);
		e->round = 0;
		e->pushed = 0;
		for (s = 0; s < kv->cfg.num_workers; s++) {
			psb_reasm_fini(&e->peers[s].reasm);
			memset(&e->peers[s], 0, sizeof(e->peers[s]));
		}
	}
	memset(&kv->st, 0, sizeof(kv->st));
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

void
psb_kv_dump(const struct psb_kv *kv, FILE *out)
{
	static const char *const st[] = { "idle", "assembling", "waiting", "done" };
	uint32_t i;
	uint16_t s;

	for (i = 0; i <= kv->mask; i++) {
		const struct kv_entry *e = &kv->slots[i];

		if (e->len == 0)
			continue;
		fprintf(out, "key %llu: %u B, round %u, pushed %u\n", (unsigned long long)e->key,
			e->len, e->round, e->pushed);
		for (s = 0; s < kv->cfg.num_workers; s++) {
			const struct kv_peer *p = &e->peers[s];

			fprintf(out, "  sender %u: %s %s req %u round %u epoch %u segs %u/%u\n", s,
				st[p->state], psb_msg_type_name(p->type), p->req_id, p->round, p->epoch,
				p->reasm.nrecv, p->reasm.nseg);
		}
	}
}

uint32_t
psb_kv_nkeys(const struct psb_kv *kv)
{
	return kv->nkeys;
}

uint64_t
psb_kv_bytes(const struct psb_kv *kv)
{
	return kv->bytes;
}

const struct psb_kv_stats *
psb_kv_stats(const struct psb_kv *kv)
{
	return &kv->st;
}

int
psb_kv_peer_left(struct psb_kv *kv, uint32_t ip)
{
	uint32_t i;
	uint16_t s;
	int n = 0;

	for (i = 0; i <= kv->mask; i++) {
		struct kv_entry *e = &kv->slots[i];

		for (s = 0; e->len != 0 && s < kv->cfg.num_workers; s++) {
			struct kv_peer *p = &e->peers[s];

			if (kv->addrs[s].ip != ip || p->state != PEER_ASSEMBLING)
				continue;
			psb_reasm_fini(&p->reasm);
			p->state = PEER_IDLE;
			n++;
		}
	}
	return n;
}
