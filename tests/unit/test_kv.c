/* cmocka tests of the parameter store and server request logic (lib/kv). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "psb_kv.h"
#include "psb_testcap.h"
#include "psb_testframe.h"

#define SEG		16	/* segment stride of every test: 4 floats */

/* Requests carry PSB_F_SYNC while a test drives a synchronous store. */
static int sync_flag;
/* The epoch of the store under test: every answer but ERROR carries it (aux). */
static uint32_t cur_epoch;

/* The address worker w sends from. */
static struct psb_addr
waddr(uint16_t w)
{
	return tf_addr((uint8_t)(w + 1), 0xc6120000u + w + 10,	/* 198.18.0.(10 + w) */
		(uint16_t)(PSB_UDP_PORT + 2 + w));
}

static struct psb_kv *
kv_new(uint16_t nw, int sync, uint32_t max_value, uint32_t capacity)
{
	static uint32_t seq;
	struct psb_kv_cfg cfg = {
		.num_workers = nw,
		.sync = sync,
		.max_value = max_value,
		.seg_size = SEG,
		.capacity = capacity,
		.epoch = 0x5eed0000u + ++seq,
	};
	struct psb_kv *kv = psb_kv_create(&cfg);

	assert_non_null(kv);
	assert_int_equal(psb_kv_epoch(kv), cfg.epoch);
	cur_epoch = cfg.epoch;
	return kv;
}

static struct psb_hdr
req_hdr(uint8_t type, uint16_t sender, uint32_t req_id, uint32_t round, uint64_t key,
		uint32_t total_len)
{
	struct psb_hdr h = tf_hdr(type, 0, sender, req_id, round, key);

	h.total_len = total_len;
	h.seg_size = total_len != 0 ? SEG : 0;
	return h;
}

/* Send segment idx of a push-type request carrying val (total_len bytes). */
static int
send_seg(struct psb_kv *kv, struct tf_cap *c, uint8_t type, uint16_t w, uint32_t req_id,
		uint32_t round, uint64_t key, const float *val, uint32_t total_len, uint32_t idx)
{
	struct psb_hdr h = req_hdr(type, w, req_id, round, key, total_len);
	struct psb_addr a = waddr(w);

	assert_true(idx * SEG < total_len);
	tf_seg(&h, total_len, idx * SEG, SEG);
	if (sync_flag)
		h.flags |= PSB_F_SYNC;
	return psb_kv_handle(kv, &h, (const uint8_t *)val + h.offset, &a, tf_cap_emit, c);
}

/* Send a whole push-type request, segments in order. */
static void
send_value(struct psb_kv *kv, struct tf_cap *c, uint8_t type, uint16_t w, uint32_t req_id,
		uint32_t round, uint64_t key, const float *val, uint32_t total_len)
{
	uint32_t i, nseg = psb_seg_count(total_len, SEG);

	for (i = 0; i < nseg; i++)
		assert_int_equal(send_seg(kv, c, type, w, req_id, round, key, val, total_len, i),
			0);
}

/* A PULL of worker w; its answers go to emit. */
static void
pull_via(struct psb_kv *kv, psb_kv_emit_fn emit, void *arg, uint16_t w, uint32_t req_id,
		uint32_t round, uint64_t key)
{
	struct psb_hdr h = req_hdr(PSB_MSG_PULL, w, req_id, round, key, 0);
	struct psb_addr a = waddr(w);

	if (sync_flag)
		h.flags |= PSB_F_SYNC;
	assert_int_equal(psb_kv_handle(kv, &h, NULL, &a, emit, arg), 0);
}

static void
send_pull(struct psb_kv *kv, struct tf_cap *c, uint16_t w, uint32_t req_id, uint32_t round,
		uint64_t key)
{
	pull_via(kv, tf_cap_emit, c, w, req_id, round, key);
}

/* Check response m: type, addressed to worker w, echoing req_id and key, with round. */
static void
check_resp(const struct tf_cap_msg *m, uint8_t type, uint16_t w, uint32_t req_id, uint64_t key,
		uint32_t round)
{
	struct psb_addr a = waddr(w);

	assert_int_equal(m->h.magic, PSB_MAGIC);
	assert_int_equal(m->h.version, PSB_VERSION);
	assert_int_equal(m->h.type, type);
	assert_int_equal(m->h.status, PSB_ST_OK);
	assert_int_equal(m->h.sender, w);
	assert_int_equal(m->h.req_id, req_id);
	assert_true(m->h.key == key);
	assert_int_equal(m->h.round, round);
	assert_int_equal(m->h.aux, cur_epoch);
	assert_int_equal(m->to.ip, a.ip);
	assert_int_equal(m->to.port, a.port);
	assert_memory_equal(m->to.mac, a.mac, 6);
	if (type == PSB_MSG_PUSH_ACK) {
		assert_int_equal(m->h.total_len, 0);
		assert_true(m->val_null);
	} else {
		assert_int_equal(m->h.seg_size, SEG);
	}
}

/* Check that m carries exactly the n floats of want. */
static void
check_val(const struct tf_cap_msg *m, const float *want, uint32_t n)
{
	uint32_t i;
	float got;

	assert_int_equal(m->h.total_len, n * sizeof(float));
	assert_non_null(m->val);
	for (i = 0; i < n; i++) {
		memcpy(&got, m->val + i * sizeof(float), sizeof(got));
		assert_true(got == want[i]);
	}
}

static void
check_error(const struct tf_cap_msg *m, uint8_t status, uint32_t aux, const struct psb_addr *to,
		uint16_t sender, uint32_t req_id, uint64_t key)
{
	assert_int_equal(m->h.type, PSB_MSG_ERROR);
	assert_int_equal(m->h.status, status);
	assert_int_equal(m->h.aux, aux);
	assert_int_equal(m->h.sender, sender);
	assert_int_equal(m->h.req_id, req_id);
	assert_true(m->h.key == key);
	assert_int_equal(m->h.total_len, 0);
	assert_true(m->val_null);
	assert_int_equal(m->to.ip, to->ip);
	assert_int_equal(m->to.port, to->port);
}

static void
check_stored(const struct psb_kv *kv, uint64_t key, const float *want, uint32_t n,
		uint32_t round)
{
	uint32_t len = 0, r = 0xdead, i;
	const float *v = psb_kv_get(kv, key, &len, &r);

	assert_non_null(v);
	assert_int_equal(len, n * sizeof(float));
	assert_int_equal(r, round);
	for (i = 0; i < n; i++)
		assert_true(v[i] == want[i]);
}

static void
test_async_push_pull(void **state)
{
	struct psb_kv *kv = kv_new(2, 0, 0, 0);
	struct tf_cap c = { .n = 0 };
	const float a[2] = { 1.5f, 2.25f }, b[2] = { 0.5f, -1.0f }, d[2] = { 1.0f, 1.0f };
	const float s1[2] = { 2.0f, 1.25f }, s2[2] = { 3.0f, 2.25f };
	const struct psb_kv_stats *st = psb_kv_stats(kv);

	(void)state;
	send_value(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 7, a, sizeof(a));
	assert_int_equal(c.n, 1);
	check_resp(&c.m[0], PSB_MSG_PUSH_ACK, 0, 1, 7, 1);
	send_value(kv, &c, PSB_MSG_PUSH, 1, 1, 0, 7, b, sizeof(b));
	assert_int_equal(c.n, 2);
	check_resp(&c.m[1], PSB_MSG_PUSH_ACK, 1, 1, 7, 2);
	check_stored(kv, 7, s1, 2, 2);
	assert_int_equal(psb_kv_nkeys(kv), 1);
	assert_int_equal(psb_kv_bytes(kv), 8);

	/* pull returns the sum */
	send_pull(kv, &c, 0, 2, 0, 7);
	assert_int_equal(c.n, 3);
	check_resp(&c.m[2], PSB_MSG_PULL_RESP, 0, 2, 7, 2);
	check_val(&c.m[2], s1, 2);

	/* pushpull returns the value including its own push */
	send_value(kv, &c, PSB_MSG_PUSHPULL, 1, 2, 0, 7, d, sizeof(d));
	assert_int_equal(c.n, 4);
	check_resp(&c.m[3], PSB_MSG_PUSHPULL_RESP, 1, 2, 7, 3);
	check_val(&c.m[3], s2, 2);
	check_stored(kv, 7, s2, 2, 3);

	/* a second key is independent */
	send_value(kv, &c, PSB_MSG_PUSHPULL, 0, 3, 0, 8, a, sizeof(a));
	assert_int_equal(c.n, 5);
	check_resp(&c.m[4], PSB_MSG_PUSHPULL_RESP, 0, 3, 8, 1);
	check_val(&c.m[4], a, 2);
	check_stored(kv, 7, s2, 2, 3);
	assert_int_equal(psb_kv_nkeys(kv), 2);
	assert_int_equal(psb_kv_bytes(kv), 16);

	assert_int_equal(st->req[PSB_MSG_PUSH], 2);
	assert_int_equal(st->req[PSB_MSG_PULL], 1);
	assert_int_equal(st->req[PSB_MSG_PUSHPULL], 2);
	assert_int_equal(st->segs_in, 4);
	assert_int_equal(st->bytes_summed, 32);
	assert_int_equal(st->bytes_sent, 24);
	assert_int_equal(st->dup_segs, 0);
	assert_int_equal(st->stale, 0);
	assert_true(psb_kv_get(kv, 9, NULL, NULL) == NULL);
	tf_cap_clear(&c);
	psb_kv_free(kv);
}

#define MS_N	10	/* floats: segments of 4, 4 and 2 */

static void
ms_value(float *v, float base)
{
	int i;

	for (i = 0; i < MS_N; i++)
		v[i] = base + (float)i * 0.25f;
}

/* The REPAIR_RESPs among c's messages (sent unasked when a push's tail came after gaps). */
static unsigned int
nacks_in(const struct tf_cap *c)
{
	unsigned int i, n = 0;

	for (i = 0; i < c->n; i++)
		n += c->m[i].h.type == PSB_MSG_REPAIR_RESP;
	return n;
}

/*
 * Deliver the segments of one push in the order seq; repeats carry junk, so
 * the stored sum is right only if duplicates are ignored. acks[i] is the
 * number of acks due after message i: the first comes exactly with the first
 * arrival of the last missing segment, later ones only for repeated offset 0.
 */
static void
ms_push(struct psb_kv *kv, uint64_t key, const uint32_t *seq, const unsigned int *acks,
		unsigned int n, uint32_t expect_dups)
{
	struct tf_cap c = { .n = 0 };
	float v[MS_N], junk[MS_N], twice[MS_N];
	const struct psb_kv_stats *st = psb_kv_stats(kv);
	uint64_t dup0 = st->dup_segs;
	uint8_t sent[3] = { 0, 0, 0 };
	unsigned int i;
	int k;

	ms_value(v, 1.0f);
	for (k = 0; k < MS_N; k++) {
		junk[k] = 1000.0f;
		twice[k] = v[k] + v[k];
	}
	for (i = 0; i < n; i++) {
		const float *src = sent[seq[i]] ? junk : v;

		sent[seq[i]] = 1;
		assert_int_equal(send_seg(kv, &c, PSB_MSG_PUSH, 0, 1, 0, key, src, sizeof(v),
			seq[i]), 0);
		assert_int_equal(c.n - nacks_in(&c), acks[i]);
	}
	for (i = 0; i < c.n; i++)
		if (c.m[i].h.type != PSB_MSG_REPAIR_RESP)
			check_resp(&c.m[i], PSB_MSG_PUSH_ACK, 0, 1, key, 1);
	assert_int_equal(st->dup_segs - dup0, expect_dups);
	check_stored(kv, key, v, MS_N, 1);
	tf_cap_clear(&c);

	/* a second push (other worker) adds, and a pull returns all three segments */
	send_value(kv, &c, PSB_MSG_PUSH, 1, 1, 0, key, v, sizeof(v));
	assert_int_equal(c.n, 1);
	check_stored(kv, key, twice, MS_N, 2);
	send_pull(kv, &c, 1, 2, 0, key);
	assert_int_equal(c.n, 2);
	check_resp(&c.m[1], PSB_MSG_PULL_RESP, 1, 2, key, 2);
	check_val(&c.m[1], twice, MS_N);
	tf_cap_clear(&c);
}

static void
test_multiseg(void **state)
{
	struct psb_kv *kv = kv_new(2, 0, 0, 0);
	static const uint32_t in_order[] = { 0, 1, 2 };
	static const unsigned int in_order_acks[] = { 0, 0, 1 };
	static const uint32_t reversed[] = { 2, 1, 0 };
	static const unsigned int reversed_acks[] = { 0, 0, 1 };
	static const uint32_t dups[] = { 1, 1, 0, 1, 0, 2 };
	static const unsigned int dups_acks[] = { 0, 0, 0, 0, 0, 1 };
	static const uint32_t after[] = { 2, 0, 1, 2, 0 };
	static const unsigned int after_acks[] = { 0, 0, 1, 1, 2 };

	(void)state;
	ms_push(kv, 100, in_order, in_order_acks, 3, 0);
	assert_int_equal(psb_kv_stats(kv)->early_nacks, 0);
	/* the last segment first: the two before it named at once, as lost */
	ms_push(kv, 101, reversed, reversed_acks, 3, 0);
	assert_int_equal(psb_kv_stats(kv)->early_nacks, 1);
	ms_push(kv, 102, dups, dups_acks, 6, 3);
	assert_int_equal(psb_kv_stats(kv)->retries_answered, 0);
	/* segments repeated after completion: answered (offset 0) or ignored, never added */
	ms_push(kv, 103, after, after_acks, 5, 1);
	assert_int_equal(psb_kv_stats(kv)->retries_answered, 1);
	assert_int_equal(psb_kv_stats(kv)->req[PSB_MSG_PUSH], 8);
	assert_int_equal(psb_kv_nkeys(kv), 4);
	psb_kv_free(kv);
}

/*
 * A REPAIR of worker w for request req_id on key: with ROUND (round), segments base + i
 * for the bits set in bits (nbits of them) are what the worker lacks of the answer.
 */
/* A REPAIR of worker w: its record says what the worker lacks; answers go to emit. */
static void
repair_via(struct psb_kv *kv, psb_kv_emit_fn emit, void *arg, uint16_t w, uint32_t req_id,
		uint64_t key, uint8_t req_type, int with_round, uint32_t round, uint32_t base,
		uint32_t nbits, uint32_t bits)
{
	/* bit i of byte i/8 */
	const uint8_t map[4] = { (uint8_t)bits, (uint8_t)(bits >> 8), (uint8_t)(bits >> 16),
		(uint8_t)(bits >> 24) };
	uint8_t buf[PSB_REPAIR_HLEN + 8];
	struct psb_repair rp = { .req_type = req_type, .flags = with_round ? PSB_REPAIR_ROUND : 0,
		.base = base, .nbits = nbits, .round = round, .bits = map };
	struct psb_hdr h = req_hdr(PSB_MSG_REPAIR, w, req_id, 0, key, 0);
	struct psb_addr a = waddr(w);

	assert_true(nbits <= 32);
	tf_whole(&h, (uint32_t)tf_repair(buf, &rp));
	if (sync_flag)
		h.flags |= PSB_F_SYNC;
	assert_int_equal(psb_hdr_check_segment(&h, h.seg_len), 0);
	assert_int_equal(psb_kv_handle(kv, &h, buf, &a, emit, arg), 0);
}

static void
send_repair(struct psb_kv *kv, struct tf_cap *c, uint16_t w, uint32_t req_id, uint64_t key,
		uint8_t req_type, int with_round, uint32_t round, uint32_t base, uint32_t nbits,
		uint32_t bits)
{
	repair_via(kv, tf_cap_emit, c, w, req_id, key, req_type, with_round, round, base, nbits,
		bits);
}

/* The REPAIR_RESP in m: its bitmap as a number (at most 32 bits), base and flags. */
static uint32_t
nack_bits(const struct tf_cap_msg *m, uint32_t *base, uint32_t *nbits, uint8_t *flags)
{
	struct psb_repair rp;
	uint32_t v = 0, i;

	assert_int_equal(m->h.type, PSB_MSG_REPAIR_RESP);
	assert_int_equal(m->h.aux, cur_epoch);
	assert_int_equal(m->h.seg_size, m->h.total_len);
	assert_int_equal(psb_repair_decode(&rp, m->val, m->h.total_len), 0);
	assert_true(rp.nbits <= 32);
	for (i = 0; i < rp.nbits; i++)
		v |= (uint32_t)psb_repair_bit(&rp, i) << i;
	*base = rp.base;
	*nbits = rp.nbits;
	*flags = rp.flags;
	return v;
}

/*
 * A push whose tail was lost: named to its sender once its segments stopped coming while
 * other requests came; not while nothing came at all.
 */
static void
test_tail_probe(void **state)
{
	struct psb_kv *kv = kv_new(1, 0, 0, 0);
	const struct psb_kv_stats *st = psb_kv_stats(kv);
	struct tf_cap c = { .n = 0 };
	uint64_t q = PSB_KV_TAIL_QUIET_NS;
	uint32_t base, nbits, i, req = 100;
	uint8_t flags;
	float v[20], one = 1.0f;

	(void)state;
	for (i = 0; i < 20; i++)
		v[i] = (float)i;
	psb_kv_tick(kv, 1000);
	send_seg(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 7, v, sizeof(v), 0);
	send_seg(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 7, v, sizeof(v), 1);
	send_seg(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 7, v, sizeof(v), 2);
	/* long quiet, but nothing else came either: nothing */
	psb_kv_tick(kv, 1000 + 10 * q);
	assert_int_equal(psb_kv_probe_tails(kv, q, 16, tf_cap_emit, &c), 0);
	assert_int_equal(c.n, 0);
	/* another key's push comes (acked) while key 7's has been quiet that long */
	send_value(kv, &c, PSB_MSG_PUSH, 0, req++, 0, 8, &one, 4);
	assert_int_equal(c.n, 1);
	psb_kv_tick(kv, 1000 + 11 * q - 1);
	assert_int_equal(psb_kv_probe_tails(kv, q, 16, tf_cap_emit, &c), 1);
	/* its tail was lost: 3 and 4 named, once */
	assert_int_equal(c.n, 2);
	assert_int_equal(nack_bits(&c.m[1], &base, &nbits, &flags), 0x3);
	assert_int_equal(base, 3);
	assert_int_equal(nbits, 2);
	assert_int_equal(c.m[1].h.req_id, 1);
	assert_true(c.m[1].h.key == 7);
	assert_int_equal(st->tail_nacks, 1);
	psb_kv_tick(kv, 1000 + 12 * q);
	send_value(kv, &c, PSB_MSG_PUSH, 0, req++, 0, 8, &one, 4);
	assert_int_equal(psb_kv_probe_tails(kv, q, 16, tf_cap_emit, &c), 0);
	assert_int_equal(c.n, 3);
	/* segment 3 comes; other traffic for less than q: nothing; then q: 4 named */
	send_seg(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 7, v, sizeof(v), 3);
	psb_kv_tick(kv, 1000 + 13 * q - 1);
	send_value(kv, &c, PSB_MSG_PUSH, 0, req++, 0, 8, &one, 4);
	assert_int_equal(psb_kv_probe_tails(kv, q, 16, tf_cap_emit, &c), 0);
	psb_kv_tick(kv, 1000 + 13 * q);
	send_value(kv, &c, PSB_MSG_PUSH, 0, req++, 0, 8, &one, 4);
	assert_int_equal(c.n, 5);
	assert_int_equal(psb_kv_probe_tails(kv, q, 16, tf_cap_emit, &c), 1);
	assert_int_equal(nack_bits(&c.m[5], &base, &nbits, &flags), 0x1);
	assert_int_equal(base, 4);
	/* the last: stored, acked, nothing left to probe */
	send_seg(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 7, v, sizeof(v), 4);
	check_resp(&c.m[6], PSB_MSG_PUSH_ACK, 0, 1, 7, 1);
	check_stored(kv, 7, v, 20, 1);
	psb_kv_tick(kv, 1000 + 20 * q);
	send_value(kv, &c, PSB_MSG_PUSH, 0, req++, 0, 8, &one, 4);
	assert_int_equal(psb_kv_probe_tails(kv, q, 16, tf_cap_emit, &c), 0);
	assert_int_equal(st->tail_nacks, 2);
	assert_int_equal(st->early_nacks, 0);
	tf_cap_clear(&c);
	psb_kv_free(kv);
}

/* Whether w's address is a lossless path (test_tail_probe_lossless): worker 1's is. */
static int
lossless_w1(void *arg, const struct psb_addr *from)
{
	struct psb_addr a = waddr(1);

	(void)arg;
	return from->ip == a.ip;
}

/*
 * A sender on a path that loses nothing (a shared-memory ring, cfg.lossless) is never
 * probed for a lost tail, however long its push is quiet: its segments are only late.
 * Another sender, over a lossy path, still is.
 */
static void
test_tail_probe_lossless(void **state)
{
	struct psb_kv_cfg cfg = {
		.num_workers = 2, .seg_size = SEG, .epoch = 0x5eedf11eu, .lossless = lossless_w1,
	};
	struct psb_kv *kv = psb_kv_create(&cfg);
	const struct psb_kv_stats *st;
	struct tf_cap c = { .n = 0 };
	uint64_t q = PSB_KV_TAIL_QUIET_NS;
	float v[20], one = 1.0f;
	uint32_t i, w;

	(void)state;
	assert_non_null(kv);
	cur_epoch = cfg.epoch;
	st = psb_kv_stats(kv);
	for (i = 0; i < 20; i++)
		v[i] = (float)i;
	psb_kv_tick(kv, 1000);
	for (w = 0; w < 2; w++)
		for (i = 0; i < 3; i++)
			send_seg(kv, &c, PSB_MSG_PUSH, (uint16_t)w, 1, 0, 7 + w, v, sizeof(v), i);
	psb_kv_tick(kv, 1000 + 11 * q);
	send_value(kv, &c, PSB_MSG_PUSH, 0, 2, 0, 9, &one, 4);
	assert_int_equal(c.n, 1);
	/* worker 0's push of key 7 is named, worker 1's of key 8 is not */
	assert_int_equal(psb_kv_probe_tails(kv, q, 16, tf_cap_emit, &c), 1);
	assert_int_equal(c.n, 2);
	assert_int_equal(c.m[1].h.sender, 0);
	assert_true(c.m[1].h.key == 7);
	assert_int_equal(psb_kv_probe_tails(kv, q, 16, tf_cap_emit, &c), 0);
	assert_int_equal(st->tail_nacks, 1);
	/* and it completes whenever its segments come */
	send_seg(kv, &c, PSB_MSG_PUSH, 1, 1, 0, 8, v, sizeof(v), 3);
	send_seg(kv, &c, PSB_MSG_PUSH, 1, 1, 0, 8, v, sizeof(v), 4);
	check_stored(kv, 8, v, 20, 1);
	tf_cap_clear(&c);
	psb_kv_free(kv);
}

static void
test_repair(void **state)
{
	struct psb_kv *kv = kv_new(1, 0, 0, 0);
	const struct psb_kv_stats *st = psb_kv_stats(kv);
	struct tf_cap c = { .n = 0 };
	float v[20], two[20];
	uint32_t base, nbits, i;
	uint8_t flags;

	(void)state;
	for (i = 0; i < 20; i++) {
		v[i] = (float)(i + 1);
		two[i] = 2 * v[i];
	}
	/* a push of 5 segments, 1 and 3 lost: the server names them */
	send_seg(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 7, v, sizeof(v), 0);
	send_seg(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 7, v, sizeof(v), 2);
	send_seg(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 7, v, sizeof(v), 4);
	/* the last came after gaps: 1 and 3 named at once, unasked */
	assert_int_equal(c.n, 1);
	assert_int_equal(nack_bits(&c.m[0], &base, &nbits, &flags), 0x5);
	assert_int_equal(base, 1);
	assert_int_equal(nbits, 4);
	assert_int_equal(c.m[0].h.req_id, 1);
	assert_int_equal(st->early_nacks, 1);
	assert_int_equal(st->repairs, 0);
	tf_cap_clear(&c);
	send_repair(kv, &c, 0, 1, 7, PSB_MSG_PUSH, 0, 0, 0, 0, 0);
	assert_int_equal(c.n, 1);
	assert_int_equal(nack_bits(&c.m[0], &base, &nbits, &flags), 0x5);
	assert_int_equal(base, 1);
	assert_int_equal(nbits, 4);	/* from the first missing to the value's end */
	assert_int_equal(flags, 0);
	assert_int_equal(c.m[0].h.req_id, 1);
	assert_int_equal(c.m[0].h.key, 7);
	assert_int_equal(st->repairs, 1);
	assert_int_equal(st->nacks, 2);
	/* those two complete it: applied once */
	send_seg(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 7, v, sizeof(v), 1);
	send_seg(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 7, v, sizeof(v), 3);
	assert_int_equal(c.n, 2);
	check_resp(&c.m[1], PSB_MSG_PUSH_ACK, 0, 1, 7, 1);
	check_stored(kv, 7, v, 20, 1);
	/* the ack was lost: a REPAIR is acked again, nothing added */
	send_repair(kv, &c, 0, 1, 7, PSB_MSG_PUSH, 0, 0, 0, 0, 0);
	assert_int_equal(c.n, 3);
	check_resp(&c.m[2], PSB_MSG_PUSH_ACK, 0, 1, 7, 1);
	assert_int_equal(st->retries_answered, 1);
	check_stored(kv, 7, v, 20, 1);

	/* a pushpull answered; the worker lacks segments 1 and 3 of version 2: only those */
	send_value(kv, &c, PSB_MSG_PUSHPULL, 0, 2, 0, 7, v, sizeof(v));
	assert_int_equal(c.n, 4);
	check_resp(&c.m[3], PSB_MSG_PUSHPULL_RESP, 0, 2, 7, 2);
	check_val(&c.m[3], two, 20);
	send_repair(kv, &c, 0, 2, 7, PSB_MSG_PUSHPULL, 1, 2, 1, 3, 0x5);
	assert_int_equal(c.n, 6);
	for (i = 4; i < 6; i++) {
		check_resp(&c.m[i], PSB_MSG_PUSHPULL_RESP, 0, 2, 7, 2);
		assert_int_equal(c.m[i].h.seg_len, SEG);
		assert_int_equal(c.m[i].h.total_len, sizeof(v));
	}
	assert_int_equal(c.m[4].h.offset, 1 * SEG);
	assert_int_equal(c.m[5].h.offset, 3 * SEG);
	assert_int_equal(st->repair_segs, 2);
	/* of a version that is gone (or none begun): the whole answer */
	send_repair(kv, &c, 0, 2, 7, PSB_MSG_PUSHPULL, 1, 1, 1, 3, 0x5);
	send_repair(kv, &c, 0, 2, 7, PSB_MSG_PUSHPULL, 0, 0, 0, 0, 0);
	assert_int_equal(c.n, 8);
	for (i = 6; i < 8; i++) {
		assert_int_equal(c.m[i].h.seg_len, 0);
		check_val(&c.m[i], two, 20);
	}
	assert_int_equal(st->repair_segs, 2);
	check_stored(kv, 7, two, 20, 2);

	/* a request the server never saw: ALL, send it again */
	send_repair(kv, &c, 0, 9, 7, PSB_MSG_PUSH, 0, 0, 0, 0, 0);
	assert_int_equal(c.n, 9);
	nack_bits(&c.m[8], &base, &nbits, &flags);
	assert_int_equal(flags, PSB_REPAIR_ALL);
	assert_int_equal(nbits, 0);
	/* an older one than the last answered: stale, nothing */
	send_repair(kv, &c, 0, 1, 7, PSB_MSG_PUSH, 0, 0, 0, 0, 0);
	assert_int_equal(c.n, 9);
	assert_int_equal(st->stale, 1);
	/* nonsense: a type that is no request, a bitmap longer than the message */
	send_repair(kv, &c, 0, 2, 7, PSB_MSG_BATCH, 0, 0, 0, 0, 0);
	{
		uint8_t buf[PSB_REPAIR_HLEN];
		struct psb_repair rp = { .req_type = PSB_MSG_PULL, .nbits = 64 };
		struct psb_hdr h = req_hdr(PSB_MSG_REPAIR, 0, 2, 0, 7, sizeof(buf));
		struct psb_addr a = waddr(0);

		psb_repair_encode(buf, &rp);
		h.seg_len = sizeof(buf);
		h.seg_size = sizeof(buf);
		assert_int_equal(psb_kv_handle(kv, &h, buf, &a, tf_cap_emit, &c), 0);
	}
	assert_int_equal(c.n, 9);
	assert_int_equal(st->repair_bad, 2);
	check_stored(kv, 7, two, 20, 2);
	tf_cap_clear(&c);
	psb_kv_free(kv);

	/* sync: a push waiting for its round is answered when the round closes, not before */
	kv = kv_new(2, 1, 0, 0);
	sync_flag = 1;
	send_value(kv, &c, PSB_MSG_PUSHPULL, 0, 1, 0, 3, v, sizeof(v));
	send_repair(kv, &c, 0, 1, 3, PSB_MSG_PUSHPULL, 0, 0, 0, 0, 0);
	assert_int_equal(c.n, 0);
	send_value(kv, &c, PSB_MSG_PUSHPULL, 1, 1, 0, 3, v, sizeof(v));
	assert_int_equal(c.n, 2);
	sync_flag = 0;
	tf_cap_clear(&c);
	psb_kv_free(kv);
}

static int busy_answer;
static unsigned int freed;
static float *freed_val;

static int
cow_busy(void *arg, const float *val)
{
	(void)arg;
	(void)val;
	return busy_answer;
}

static void
cow_free(void *arg, void *val)
{
	(void)arg;
	freed++;
	freed_val = val;
	free((uint8_t *)val - 64);
}

/*
 * A push into a value that answers still read goes into a copy: the answer keeps reading
 * the old version, whole, and the old value goes to value_free (with its headroom).
 */
static void
test_copy_on_write(void **state)
{
	struct psb_kv_cfg cfg = {
		.num_workers = 1, .seg_size = SEG, .value_headroom = 64,
		.value_busy = cow_busy, .value_free = cow_free,
	};
	struct psb_kv *kv;
	struct tf_cap c = { .n = 0 };
	float v[6] = { 1, 2, 3, 4, 5, 6 }, two[6], snap[6];
	const float *before, *after;
	uint32_t len, round, i;

	(void)state;
	cfg.value_headroom = 32;
	assert_null(psb_kv_create(&cfg));	/* the headroom keeps values 64-aligned */
	cfg.value_headroom = 64;
	kv = psb_kv_create(&cfg);
	assert_non_null(kv);
	cur_epoch = psb_kv_epoch(kv);
	for (i = 0; i < 6; i++)
		two[i] = 2 * v[i];
	send_value(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 42, v, sizeof(v));
	before = psb_kv_get(kv, 42, &len, &round);
	assert_non_null(before);
	assert_int_equal((uintptr_t)before & 63, 0);
	/* nothing reads it: added in place */
	busy_answer = 0;
	send_value(kv, &c, PSB_MSG_PUSH, 0, 2, 0, 42, v, sizeof(v));
	assert_ptr_equal(psb_kv_get(kv, 42, &len, &round), before);
	assert_int_equal(psb_kv_stats(kv)->values_copied, 0);
	/* an answer reads it: the push goes into a copy, the old version stays as it was */
	memcpy(snap, before, sizeof(snap));
	busy_answer = 1;
	send_value(kv, &c, PSB_MSG_PUSH, 0, 3, 0, 42, v, sizeof(v));
	after = psb_kv_get(kv, 42, &len, &round);
	assert_true(after != before);
	assert_int_equal(freed, 1);
	assert_ptr_equal(freed_val, before);
	assert_int_equal(psb_kv_stats(kv)->values_copied, 1);
	assert_int_equal(round, 3);
	for (i = 0; i < 6; i++) {
		assert_true(snap[i] == two[i]);
		assert_true(after[i] == 3 * v[i]);
	}
	busy_answer = 0;
	psb_kv_free(kv);
	assert_int_equal(freed, 2);
	tf_cap_clear(&c);
}

static void
test_retry(void **state)
{
	struct psb_kv *kv = kv_new(2, 0, 0, 0);
	struct tf_cap c = { .n = 0 };
	float v[6] = { 1, 2, 3, 4, 5, 6 };
	const struct psb_kv_stats *st = psb_kv_stats(kv);

	(void)state;
	send_value(kv, &c, PSB_MSG_PUSH, 0, 5, 0, 42, v, sizeof(v));
	assert_int_equal(c.n, 1);
	check_resp(&c.m[0], PSB_MSG_PUSH_ACK, 0, 5, 42, 1);

	/* the worker missed the ack and resends the whole push: acked again, not re-added */
	send_seg(kv, &c, PSB_MSG_PUSH, 0, 5, 0, 42, v, sizeof(v), 1);
	assert_int_equal(c.n, 1);	/* only the offset-0 segment answers */
	assert_int_equal(st->dup_segs, 1);
	send_seg(kv, &c, PSB_MSG_PUSH, 0, 5, 0, 42, v, sizeof(v), 0);
	assert_int_equal(c.n, 2);
	check_resp(&c.m[1], PSB_MSG_PUSH_ACK, 0, 5, 42, 1);
	assert_int_equal(st->retries_answered, 1);
	assert_int_equal(st->dup_segs, 1);
	assert_int_equal(st->req[PSB_MSG_PUSH], 1);
	assert_int_equal(st->bytes_summed, sizeof(v));
	check_stored(kv, 42, v, 6, 1);

	/* a pushpull retried: the value is answered again, and still added once */
	send_value(kv, &c, PSB_MSG_PUSHPULL, 1, 9, 0, 42, v, sizeof(v));
	assert_int_equal(c.n, 3);
	send_value(kv, &c, PSB_MSG_PUSHPULL, 1, 9, 0, 42, v, sizeof(v));
	assert_int_equal(c.n, 4);
	{
		const float two[6] = { 2, 4, 6, 8, 10, 12 };

		check_resp(&c.m[2], PSB_MSG_PUSHPULL_RESP, 1, 9, 42, 2);
		check_val(&c.m[2], two, 6);
		check_resp(&c.m[3], PSB_MSG_PUSHPULL_RESP, 1, 9, 42, 2);
		check_val(&c.m[3], two, 6);
		check_stored(kv, 42, two, 6, 2);
	}
	assert_int_equal(st->retries_answered, 2);
	assert_int_equal(st->dup_segs, 2);

	/* a retried pull is answered again */
	send_pull(kv, &c, 0, 6, 0, 42);
	send_pull(kv, &c, 0, 6, 0, 42);
	assert_int_equal(c.n, 6);
	check_resp(&c.m[5], PSB_MSG_PULL_RESP, 0, 6, 42, 2);
	assert_int_equal(st->retries_answered, 3);
	assert_int_equal(st->req[PSB_MSG_PULL], 1);

	/* stale: an older request of the same sender is ignored and counted */
	send_value(kv, &c, PSB_MSG_PUSH, 0, 4, 0, 42, v, sizeof(v));
	send_pull(kv, &c, 0, 3, 0, 42);
	assert_int_equal(c.n, 6);
	assert_int_equal(st->stale, 3);	/* two push segments, one pull */
	assert_int_equal(st->bytes_summed, 2 * sizeof(v));
	tf_cap_clear(&c);
	psb_kv_free(kv);
}

static void
test_req_id_wrap(void **state)
{
	struct psb_kv *kv = kv_new(1, 0, 0, 0);
	struct tf_cap c = { .n = 0 };
	const float one[1] = { 1.0f }, three[1] = { 3.0f };

	(void)state;
	/* req_id is compared as a serial number: 2 is newer than 0xfffffffe */
	send_value(kv, &c, PSB_MSG_PUSH, 0, 0xfffffffeu, 0, 5, one, sizeof(one));
	send_value(kv, &c, PSB_MSG_PUSH, 0, 2, 0, 5, one, sizeof(one));
	send_value(kv, &c, PSB_MSG_PUSHPULL, 0, 3, 0, 5, one, sizeof(one));
	assert_int_equal(c.n, 3);
	check_val(&c.m[2], three, 1);
	/* and 0xffffffff is older than 3 */
	send_value(kv, &c, PSB_MSG_PUSH, 0, 0xffffffffu, 0, 5, one, sizeof(one));
	assert_int_equal(c.n, 3);
	assert_int_equal(psb_kv_stats(kv)->stale, 1);
	check_stored(kv, 5, three, 1, 3);
	tf_cap_clear(&c);
	psb_kv_free(kv);
}

static void
test_sync_rounds(void **state)
{
	struct psb_kv *kv = kv_new(3, 1, 0, 0);
	struct tf_cap c = { .n = 0 };
	const struct psb_kv_stats *st = psb_kv_stats(kv);
	float v[3][6], r1[6], r2[6], r3[6], zero[6];
	unsigned int i, w;

	(void)state;
	sync_flag = 1;
	for (w = 0; w < 3; w++)
		for (i = 0; i < 6; i++)
			v[w][i] = (float)(w + 1) * (float)(i + 1) * 0.5f;
	for (i = 0; i < 6; i++) {
		r1[i] = v[0][i] + v[1][i] + v[2][i];
		r2[i] = r1[i] + r1[i];
		zero[i] = 0;
	}

	/* round 0: w0 push, w1 pushpull, w2 push; nothing answered before the third */
	send_value(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 9, v[0], sizeof(v[0]));
	assert_int_equal(c.n, 0);
	send_value(kv, &c, PSB_MSG_PUSHPULL, 1, 1, 0, 9, v[1], sizeof(v[1]));
	assert_int_equal(c.n, 0);
	/* the open round is not visible yet */
	check_stored(kv, 9, zero, 6, 0);
	/* a retry of a waiting request is neither answered nor re-added */
	send_value(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 9, v[0], sizeof(v[0]));
	assert_int_equal(c.n, 0);
	send_value(kv, &c, PSB_MSG_PUSH, 2, 1, 0, 9, v[2], sizeof(v[2]));
	assert_int_equal(c.n, 3);
	check_stored(kv, 9, r1, 6, 1);
	assert_int_equal(st->rounds_closed, 1);
	{
		int seen[3] = { 0, 0, 0 };

		for (i = 0; i < 3; i++) {
			const struct tf_cap_msg *m = &c.m[i];

			assert_true(m->h.sender < 3);
			seen[m->h.sender]++;
			assert_int_equal(m->h.flags & PSB_F_SYNC, PSB_F_SYNC);
			if (m->h.sender == 1) {
				check_resp(m, PSB_MSG_PUSHPULL_RESP, 1, 1, 9, 1);
				check_val(m, r1, 6);
			} else {
				check_resp(m, PSB_MSG_PUSH_ACK, m->h.sender, 1, 9, 1);
			}
		}
		assert_int_equal(seen[0] + seen[1] + seen[2], 3);
		assert_true(seen[0] == 1 && seen[1] == 1 && seen[2] == 1);
	}
	tf_cap_clear(&c);

	/* a pull for an already closed round is answered at once */
	send_pull(kv, &c, 0, 2, 1, 9);
	assert_int_equal(c.n, 1);
	check_resp(&c.m[0], PSB_MSG_PULL_RESP, 0, 2, 9, 1);
	check_val(&c.m[0], r1, 6);
	tf_cap_clear(&c);

	/* round 1: w2 pushes, then (newer request) pulls for round 3: it must wait */
	send_value(kv, &c, PSB_MSG_PUSH, 2, 2, 1, 9, v[2], sizeof(v[2]));
	send_pull(kv, &c, 2, 3, 3, 9);
	send_value(kv, &c, PSB_MSG_PUSH, 0, 3, 1, 9, v[0], sizeof(v[0]));
	assert_int_equal(c.n, 0);
	send_value(kv, &c, PSB_MSG_PUSH, 1, 2, 1, 9, v[1], sizeof(v[1]));
	/* round 1 closed: w0 and w1 acked with round 2, the pull for round 3 still waits */
	assert_int_equal(c.n, 2);
	for (i = 0; i < 2; i++) {
		assert_int_equal(c.m[i].h.type, PSB_MSG_PUSH_ACK);
		assert_int_equal(c.m[i].h.round, 2);
		assert_true(c.m[i].h.sender != 2);
	}
	check_stored(kv, 9, r2, 6, 2);
	tf_cap_clear(&c);

	/* a pull for round 2 (closed) is answered immediately */
	send_pull(kv, &c, 2, 4, 2, 9);
	assert_int_equal(c.n, 1);
	check_resp(&c.m[0], PSB_MSG_PULL_RESP, 2, 4, 9, 2);
	check_val(&c.m[0], r2, 6);
	tf_cap_clear(&c);

	/* round 2: w2 pushes and then pulls for round 3: answered when round 2 closes */
	send_value(kv, &c, PSB_MSG_PUSH, 2, 5, 2, 9, v[2], sizeof(v[2]));
	send_pull(kv, &c, 2, 6, 3, 9);
	send_value(kv, &c, PSB_MSG_PUSH, 0, 4, 2, 9, v[0], sizeof(v[0]));
	assert_int_equal(c.n, 0);
	send_value(kv, &c, PSB_MSG_PUSH, 1, 3, 2, 9, v[1], sizeof(v[1]));
	assert_int_equal(c.n, 3);
	assert_int_equal(st->rounds_closed, 3);
	for (i = 0; i < 6; i++)
		r3[i] = r2[i] + r1[i];
	for (i = 0; i < 3; i++) {
		const struct tf_cap_msg *m = &c.m[i];

		if (m->h.sender == 2) {
			check_resp(m, PSB_MSG_PULL_RESP, 2, 6, 9, 3);
			check_val(m, r3, 6);
		} else {
			check_resp(m, PSB_MSG_PUSH_ACK, m->h.sender, m->h.sender == 0 ? 4 : 3, 9,
				3);
		}
	}
	check_stored(kv, 9, r3, 6, 3);
	tf_cap_clear(&c);

	/* a push for the wrong round: STALE with the current round in aux */
	send_value(kv, &c, PSB_MSG_PUSH, 0, 5, 0, 9, v[0], sizeof(v[0]));
	assert_int_equal(c.n, 1);
	{
		struct psb_addr a0 = waddr(0);

		check_error(&c.m[0], PSB_ST_STALE, 3, &a0, 0, 5, 9);
	}
	send_value(kv, &c, PSB_MSG_PUSHPULL, 0, 6, 7, 9, v[0], sizeof(v[0]));
	assert_int_equal(c.n, 2);
	assert_int_equal(c.m[1].h.status, PSB_ST_STALE);
	assert_int_equal(c.m[1].h.aux, 3);
	assert_int_equal(st->errors[PSB_ST_STALE], 2);
	check_stored(kv, 9, r3, 6, 3);
	tf_cap_clear(&c);
	sync_flag = 0;
	psb_kv_free(kv);
}

/* Round 2 closes only with three pushes; the waiting pull of w2 comes out of that close. */
static void
test_sync_pull_waits(void **state)
{
	struct psb_kv *kv = kv_new(3, 1, 0, 0);
	struct tf_cap c = { .n = 0 };
	const float one[2] = { 1.0f, 2.0f }, three[2] = { 3.0f, 6.0f };

	(void)state;
	sync_flag = 1;
	/* w2 pushes round 0, then pulls round 1 (its one request per key moves on) */
	send_value(kv, &c, PSB_MSG_PUSH, 2, 1, 0, 3, one, sizeof(one));
	send_pull(kv, &c, 2, 2, 1, 3);
	send_value(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 3, one, sizeof(one));
	assert_int_equal(c.n, 0);
	send_value(kv, &c, PSB_MSG_PUSH, 1, 1, 0, 3, one, sizeof(one));
	assert_int_equal(c.n, 3);
	assert_int_equal(c.m[2].h.type, PSB_MSG_PULL_RESP);
	check_resp(&c.m[2], PSB_MSG_PULL_RESP, 2, 2, 3, 1);
	check_val(&c.m[2], three, 2);
	assert_int_equal(c.m[0].h.type, PSB_MSG_PUSH_ACK);
	assert_int_equal(c.m[1].h.type, PSB_MSG_PUSH_ACK);
	tf_cap_clear(&c);
	sync_flag = 0;
	psb_kv_free(kv);
}

/*
 * sync_round: every round's answers carry that round's sum alone, and the key holds it;
 * pushes of several segments, in any order, make it whole. A value answers still read
 * (value_busy) is left to them and handed to value_free; the sum is never mixed with it.
 */
static void
test_sync_round_sums(void **state)
{
	struct psb_kv_cfg cfg = {
		.num_workers = 2, .sync = 1, .sync_round = 1, .seg_size = SEG,
		.value_headroom = 64, .value_busy = cow_busy, .value_free = cow_free,
		.epoch = 0x5eedf00du,
	};
	struct psb_kv *kv;
	struct tf_cap c = { .n = 0 };
	float v[2][10], sum[10], snap[10];
	const float *held = NULL, *now;
	uint32_t len, round, r, i, k, w;
	unsigned int freed0 = freed;

	(void)state;
	kv = psb_kv_create(&cfg);
	assert_non_null(kv);
	cur_epoch = cfg.epoch;
	sync_flag = 1;
	for (r = 0; r < 4; r++) {
		for (w = 0; w < 2; w++)
			for (i = 0; i < 10; i++)
				v[w][i] = (float)((r + 1) * (w + 3)) * (float)(i + 1) - 0.25f * (float)r;
		for (i = 0; i < 10; i++)
			sum[i] = v[0][i] + v[1][i];
		/* round 2: an answer still reads the value of round 1 when round 2 closes */
		busy_answer = r == 2;
		if (r == 2) {
			held = psb_kv_get(kv, 5, &len, &round);
			memcpy(snap, held, sizeof(snap));
		}
		/* worker 1's segments out of order (the last one last: no gap named), worker
		 * 0's in order */
		for (k = 0; k < 3; k++)
			assert_int_equal(send_seg(kv, &c, PSB_MSG_PUSHPULL, 1, r + 1, r, 5, v[1],
				sizeof(v[1]), k == 2 ? 2 : 1 - k), 0);
		assert_int_equal(c.n, 0);
		send_value(kv, &c, PSB_MSG_PUSHPULL, 0, r + 1, r, 5, v[0], sizeof(v[0]));
		assert_int_equal(c.n, 2);
		for (k = 0; k < 2; k++) {
			check_resp(&c.m[k], PSB_MSG_PUSHPULL_RESP, c.m[k].h.sender, r + 1, 5, r + 1);
			check_val(&c.m[k], sum, 10);
		}
		check_stored(kv, 5, sum, 10, r + 1);
		if (r == 2) {
			now = psb_kv_get(kv, 5, &len, &round);
			assert_true(now != held);
			assert_int_equal(freed, freed0 + 1);
			assert_ptr_equal(freed_val, held);
			assert_int_equal(psb_kv_stats(kv)->values_copied, 1);
		}
		tf_cap_clear(&c);
	}
	busy_answer = 0;
	/* round 1's value was whole when answers read it: round 2's sum went elsewhere */
	for (i = 0; i < 10; i++)
		assert_true(snap[i] == (float)(2 * 3) * (float)(i + 1) - 0.25f +
			(float)(2 * 4) * (float)(i + 1) - 0.25f);
	assert_int_equal(psb_kv_stats(kv)->rounds_closed, 4);
	sync_flag = 0;
	psb_kv_free(kv);
}

static void
test_errors(void **state)
{
	struct psb_kv *kv = kv_new(2, 0, 64, 0);
	struct tf_cap c = { .n = 0 };
	const struct psb_kv_stats *st = psb_kv_stats(kv);
	struct psb_addr a = waddr(1);
	float v[32];
	struct psb_hdr h;
	unsigned int i;

	(void)state;
	for (i = 0; i < 32; i++)
		v[i] = (float)i;

	/* foreign version */
	h = req_hdr(PSB_MSG_PUSH, 1, 11, 0, 1, 8);
	h.seg_len = 8;
	h.version = PSB_VERSION + 1;
	assert_int_equal(psb_kv_handle(kv, &h, v, &a, tf_cap_emit, &c), 0);
	assert_int_equal(c.n, 1);
	check_error(&c.m[0], PSB_ST_BAD_VERSION, PSB_VERSION, &a, 1, 11, 1);

	/* unknown request type */
	h = req_hdr(0x06, 1, 12, 0, 1, 0);
	assert_int_equal(psb_kv_handle(kv, &h, NULL, &a, tf_cap_emit, &c), 0);
	h = req_hdr(PSB_MSG_REGISTER, 1, 13, 0, 1, 0);
	assert_int_equal(psb_kv_handle(kv, &h, NULL, &a, tf_cap_emit, &c), 0);
	assert_int_equal(c.n, 3);
	check_error(&c.m[1], PSB_ST_BAD_TYPE, 0, &a, 1, 12, 1);
	check_error(&c.m[2], PSB_ST_BAD_TYPE, 0, &a, 1, 13, 1);

	/* responses are not requests: -EINVAL, nothing emitted */
	h = req_hdr(PSB_MSG_PUSH_ACK, 1, 14, 0, 1, 0);
	assert_int_equal(psb_kv_handle(kv, &h, NULL, &a, tf_cap_emit, &c), -EINVAL);
	h = req_hdr(PSB_MSG_PULL_RESP, 1, 14, 0, 1, 8);
	h.seg_len = 8;
	assert_int_equal(psb_kv_handle(kv, &h, v, &a, tf_cap_emit, &c), -EINVAL);
	h = req_hdr(PSB_MSG_ERROR, 1, 14, 0, 1, 0);
	assert_int_equal(psb_kv_handle(kv, &h, NULL, &a, tf_cap_emit, &c), -EINVAL);
	assert_int_equal(c.n, 3);

	/* sender out of range */
	h = req_hdr(PSB_MSG_PUSH, 2, 15, 0, 1, 8);
	h.seg_len = 8;
	assert_int_equal(psb_kv_handle(kv, &h, v, &a, tf_cap_emit, &c), 0);
	assert_int_equal(c.n, 4);
	check_error(&c.m[3], PSB_ST_BAD_SENDER, 2, &a, 2, 15, 1);

	/* pull of a key never pushed */
	send_pull(kv, &c, 1, 16, 0, 77);
	assert_int_equal(c.n, 5);
	check_error(&c.m[4], PSB_ST_NO_KEY, 0, &a, 1, 16, 77);
	assert_int_equal(psb_kv_nkeys(kv), 0);

	/* length differs from the stored one */
	send_value(kv, &c, PSB_MSG_PUSH, 1, 17, 0, 2, v, 8);
	assert_int_equal(c.n, 6);
	assert_int_equal(c.m[5].h.type, PSB_MSG_PUSH_ACK);
	send_value(kv, &c, PSB_MSG_PUSH, 1, 18, 0, 2, v, 12);
	assert_int_equal(c.n, 7);
	check_error(&c.m[6], PSB_ST_LEN_MISMATCH, 8, &a, 1, 18, 2);
	send_value(kv, &c, PSB_MSG_PUSHPULL, 1, 19, 0, 2, v, 4);
	assert_int_equal(c.n, 8);
	check_error(&c.m[7], PSB_ST_LEN_MISMATCH, 8, &a, 1, 19, 2);

	/* larger than max_value */
	send_seg(kv, &c, PSB_MSG_PUSH, 1, 20, 0, 3, v, 128, 0);
	assert_int_equal(c.n, 9);
	check_error(&c.m[8], PSB_ST_TOO_LARGE, 64, &a, 1, 20, 3);
	/* max_value itself is fine */
	send_value(kv, &c, PSB_MSG_PUSH, 1, 21, 0, 3, v, 64);
	assert_int_equal(c.n, 10);
	assert_int_equal(c.m[9].h.type, PSB_MSG_PUSH_ACK);

	/* not a whole number of floats, or empty */
	h = req_hdr(PSB_MSG_PUSH, 1, 22, 0, 4, 6);
	h.seg_len = 6;
	assert_int_equal(psb_kv_handle(kv, &h, v, &a, tf_cap_emit, &c), 0);
	h = req_hdr(PSB_MSG_PUSH, 1, 23, 0, 4, 0);
	assert_int_equal(psb_kv_handle(kv, &h, NULL, &a, tf_cap_emit, &c), 0);
	assert_int_equal(c.n, 12);
	check_error(&c.m[10], PSB_ST_LEN_MISMATCH, 0, &a, 1, 22, 4);
	check_error(&c.m[11], PSB_ST_LEN_MISMATCH, 0, &a, 1, 23, 4);
	assert_true(psb_kv_get(kv, 4, NULL, NULL) == NULL);

	assert_int_equal(st->errors[PSB_ST_BAD_VERSION], 1);
	assert_int_equal(st->errors[PSB_ST_BAD_TYPE], 2);
	assert_int_equal(st->errors[PSB_ST_BAD_SENDER], 1);
	assert_int_equal(st->errors[PSB_ST_NO_KEY], 1);
	assert_int_equal(st->errors[PSB_ST_LEN_MISMATCH], 4);
	assert_int_equal(st->errors[PSB_ST_TOO_LARGE], 1);
	assert_int_equal(psb_kv_nkeys(kv), 2);
	{
		const float first[2] = { 0, 1 };

		check_stored(kv, 2, first, 2, 1);
	}
	tf_cap_clear(&c);
	psb_kv_free(kv);
}

static void
test_create_invalid(void **state)
{
	struct psb_kv_cfg cfg = { .num_workers = 1, .seg_size = SEG };

	(void)state;
	cfg.num_workers = 0;
	assert_null(psb_kv_create(&cfg));
	cfg.num_workers = PSB_KV_MAX_WORKERS + 1;
	assert_null(psb_kv_create(&cfg));
	cfg.num_workers = 1;
	cfg.seg_size = 0;
	assert_null(psb_kv_create(&cfg));
	cfg.seg_size = 18;
	assert_null(psb_kv_create(&cfg));
	cfg.seg_size = SEG;
	psb_kv_free(psb_kv_create(&cfg));
	psb_kv_free(NULL);
}

#define GROW_N	10000

static uint64_t
grow_key(uint32_t i)
{
	/* spread over the whole key space, including 0 and the last key below the probe's */
	if (i == 0)
		return 0;
	if (i == 1)
		return PSB_PROBE_KEY - 1;
	return (uint64_t)i * 0x9e3779b97f4a7c15ull;
}

static void
test_growth(void **state)
{
	struct psb_kv *kv = kv_new(1, 0, 0, 16);
	struct tf_cap c = { .n = 0 };
	uint32_t i;
	double want_sum = 0;

	(void)state;
	for (i = 0; i < GROW_N; i++) {
		float v[2] = { (float)i, (float)(i % 7) };

		send_value(kv, &c, PSB_MSG_PUSH, 0, i + 1, 0, grow_key(i), v, sizeof(v));
		assert_int_equal(c.n, 1);
		assert_int_equal(c.m[0].h.type, PSB_MSG_PUSH_ACK);
		assert_true(c.m[0].h.key == grow_key(i));
		tf_cap_clear(&c);
		want_sum += (double)i + (double)(i % 7);
	}
	assert_int_equal(psb_kv_nkeys(kv), GROW_N);
	assert_int_equal(psb_kv_bytes(kv), (uint64_t)GROW_N * 8);
	for (i = 0; i < GROW_N; i++) {
		float v[2] = { (float)i, (float)(i % 7) };

		check_stored(kv, grow_key(i), v, 2, 1);
	}
	assert_true(psb_kv_value_sum(kv) == want_sum);
	/* pulls after growth find their keys too (the request state moved along) */
	for (i = 0; i < GROW_N; i += 997) {
		float v[2] = { (float)i, (float)(i % 7) };

		send_pull(kv, &c, 0, GROW_N + 1 + i, 0, grow_key(i));
		assert_int_equal(c.n, 1);
		check_resp(&c.m[0], PSB_MSG_PULL_RESP, 0, GROW_N + 1 + i, grow_key(i), 1);
		check_val(&c.m[0], v, 2);
		tf_cap_clear(&c);
	}
	assert_null(psb_kv_get(kv, 12345, NULL, NULL));
	psb_kv_free(kv);
}

static void
test_reset_and_sum(void **state)
{
	struct psb_kv *kv = kv_new(2, 1, 0, 0);
	struct tf_cap c = { .n = 0 };
	const float a[3] = { 1.0f, 2.0f, 3.0f }, b[1] = { 0.5f };
	const float sa[3] = { 2.0f, 4.0f, 6.0f }, sb[1] = { 1.0f };
	uint64_t mem0 = psb_kv_mem(kv);
	uint32_t len, round;

	(void)state;
	sync_flag = 1;
	assert_true(psb_kv_value_sum(kv) == 0.0);
	send_value(kv, &c, PSB_MSG_PUSH, 0, 10, 0, 1, a, sizeof(a));
	send_value(kv, &c, PSB_MSG_PUSH, 1, 10, 0, 1, a, sizeof(a));
	send_value(kv, &c, PSB_MSG_PUSH, 0, 11, 0, 2, b, sizeof(b));
	send_value(kv, &c, PSB_MSG_PUSH, 1, 11, 0, 2, b, sizeof(b));
	assert_int_equal(c.n, 4);
	tf_cap_clear(&c);
	check_stored(kv, 1, sa, 3, 1);
	check_stored(kv, 2, sb, 1, 1);
	assert_true(psb_kv_value_sum(kv) == 13.0);
	/* half a round open when we reset */
	send_value(kv, &c, PSB_MSG_PUSH, 0, 12, 1, 1, a, sizeof(a));
	assert_int_equal(c.n, 0);

	psb_kv_reset(kv);
	/* everything is dropped and its memory freed: the store is as created */
	assert_int_equal(psb_kv_nkeys(kv), 0);
	assert_int_equal(psb_kv_bytes(kv), 0);
	assert_int_equal(psb_kv_mem(kv), mem0);
	assert_null(psb_kv_get(kv, 1, &len, &round));
	assert_null(psb_kv_get(kv, 2, &len, &round));
	assert_true(psb_kv_value_sum(kv) == 0.0);
	assert_int_equal(psb_kv_stats(kv)->rounds_closed, 0);
	assert_int_equal(psb_kv_stats(kv)->req[PSB_MSG_PUSH], 0);

	/* request state forgotten: low req_ids are new again, round 0 is open again,
	 * and the half-open round's push is gone from the sum */
	send_value(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 1, a, sizeof(a));
	assert_int_equal(c.n, 0);
	send_value(kv, &c, PSB_MSG_PUSH, 1, 1, 0, 1, a, sizeof(a));
	assert_int_equal(c.n, 2);
	assert_int_equal(psb_kv_stats(kv)->stale, 0);
	check_stored(kv, 1, sa, 3, 1);
	/* key 2 is gone: a pull finds nothing, and another length is a new key */
	send_pull(kv, &c, 0, 2, 0, 2);
	assert_int_equal(c.n, 3);
	assert_int_equal(c.m[2].h.status, PSB_ST_NO_KEY);
	assert_true(psb_kv_value_sum(kv) == 12.0);
	tf_cap_clear(&c);
	sync_flag = 0;
	psb_kv_free(kv);
}


/* Staging: a push is added whole or not at all. */

/* References the store may keep: each counts its releases. */
struct fake_ref {
	int released;
};

static unsigned int releases;

static void
fake_release(void *arg, void *ref)
{
	struct fake_ref *r = ref;

	(void)arg;
	assert_int_equal(r->released, 0);	/* never twice */
	r->released = 1;
	releases++;
}

static struct psb_kv *
kv_budget(uint16_t nw, int sync, const struct psb_kv_cfg *b)
{
	struct psb_kv_cfg cfg = *b;
	struct psb_kv *kv;

	cfg.num_workers = nw;
	cfg.sync = sync;
	cfg.seg_size = SEG;
	if (cfg.release == NULL)
		cfg.release = fake_release;
	kv = psb_kv_create(&cfg);
	assert_non_null(kv);
	cur_epoch = psb_kv_epoch(kv);
	return kv;
}

/* Segment idx of a push from worker w with epoch; ref: the buffer it comes in, or NULL. */
static int
seg_ref(struct psb_kv *kv, struct tf_cap *c, uint8_t type, uint16_t w, uint32_t epoch,
		uint32_t req_id, uint32_t round, uint64_t key, const float *val, uint32_t total_len,
		uint32_t idx, struct fake_ref *ref)
{
	struct psb_hdr h = req_hdr(type, w, req_id, round, key, total_len);
	struct psb_addr a = waddr(w);
	uint32_t rest;

	h.aux = epoch;
	h.offset = idx * SEG;
	rest = total_len - h.offset;
	h.seg_len = (uint16_t)(rest < SEG ? rest : SEG);
	if (sync_flag)
		h.flags |= PSB_F_SYNC;
	return psb_kv_handle_ref(kv, &h, (const uint8_t *)val + h.offset, ref, &a, tf_cap_emit, c);
}

static void
fill_f(float *v, unsigned int n, float base)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		v[i] = base + (float)i;
}

/*
 * A worker dies in the middle of a push (two of its three segments arrived) and comes
 * back with a new epoch: its partial push is dropped, its full push counts once. In sync
 * mode the round closes with exactly one push per worker; in async mode the key holds
 * exactly the pushes that completed.
 */
static void
test_partial_then_restart(void **state)
{
	static struct tf_cap c;
	struct psb_kv_cfg b = { 0 };
	float a[10], x[10], want[10];
	const struct psb_kv_stats *st;
	struct psb_kv *kv;
	int sync, i;

	(void)state;
	fill_f(a, 10, 1.0f);
	fill_f(x, 10, 100.0f);
	for (sync = 0; sync <= 1; sync++) {
		sync_flag = sync;
		kv = kv_budget(2, sync, &b);
		st = psb_kv_stats(kv);
		tf_cap_clear(&c);
		/* worker 1's push of round 0 is in */
		for (i = 0; i < 3; i++)
			assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 1, 0x11, 1, 0, 5, a, 40, i,
				NULL), 0);
		/* worker 0, epoch 0xaa: two segments, then it dies */
		for (i = 0; i < 2; i++)
			assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 0, 0xaa, 9, 0, 5, x, 40, i,
				NULL), 0);
		/* async: a pull in between sees none of the unfinished push */
		if (!sync) {
			send_pull(kv, &c, 1, 2, 0, 5);
			assert_int_equal(c.n, 2);
			check_val(&c.m[1], a, 10);
		}
		/* restarted: new epoch, ids from 1 again, the whole value */
		for (i = 0; i < 3; i++)
			assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 0, 0xbb, 1, 0, 5, a, 40, i,
				NULL), 0);
		for (i = 0; i < 10; i++)
			want[i] = 2 * a[i];
		check_stored(kv, 5, want, 10, sync ? 1 : 2);
		assert_int_equal(st->discarded[PSB_KV_DISCARD_RESTART], 1);
		assert_int_equal(st->discarded_bytes, 32);
		assert_int_equal(st->req[PSB_MSG_PUSH], 2);
		psb_kv_staged(kv, (uint32_t *)&i, NULL, NULL);
		assert_int_equal(i, 0);
		tf_cap_clear(&c);
		psb_kv_free(kv);
	}
	sync_flag = 0;
}

/* A push that stops arriving is dropped after the timeout; a later retry applies once. */
static void
test_stage_timeout(void **state)
{
	static struct tf_cap c;
	struct psb_kv_cfg b = { .reasm_timeout_ns = 1000 };
	float a[10];
	const struct psb_kv_stats *st;
	struct psb_kv *kv = kv_budget(1, 0, &b);
	uint32_t n;
	uint64_t bytes;

	(void)state;
	st = psb_kv_stats(kv);
	fill_f(a, 10, 1.0f);
	psb_kv_tick(kv, 5000);
	assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 0, 1, 7, 0, 3, a, 40, 0, NULL), 0);
	psb_kv_staged(kv, &n, &bytes, NULL);
	assert_int_equal(n, 1);
	assert_true(bytes >= 40);
	assert_int_equal(psb_kv_tick(kv, 5999), 0);
	assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 0, 1, 7, 0, 3, a, 40, 1, NULL), 0);
	/* fed at 5999: still there at 6500, gone at 7000 */
	assert_int_equal(psb_kv_tick(kv, 6500), 0);
	assert_int_equal(psb_kv_tick(kv, 7000), 1);
	assert_int_equal(st->discarded[PSB_KV_DISCARD_TIMEOUT], 1);
	assert_int_equal(st->discarded_bytes, 32);
	psb_kv_staged(kv, &n, &bytes, NULL);
	assert_int_equal(n, 0);
	assert_int_equal(bytes, 0);
	assert_null(psb_kv_get(kv, 3, NULL, NULL));
	assert_int_equal(c.n, 0);
	/* the worker's retry: every segment again, same request, applied once */
	for (n = 0; n < 3; n++)
		assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 0, 1, 7, 0, 3, a, 40, n, NULL), 0);
	assert_int_equal(c.n, 1);
	check_resp(&c.m[0], PSB_MSG_PUSH_ACK, 0, 7, 3, 1);
	check_stored(kv, 3, a, 10, 1);
	tf_cap_clear(&c);
	psb_kv_free(kv);
}

/* A BYE ends what its sender staged, and only that. */
static void
test_peer_left(void **state)
{
	static struct tf_cap c;
	struct psb_kv_cfg b = { 0 };
	float a[10];
	struct psb_kv *kv = kv_budget(2, 0, &b);
	const struct psb_kv_stats *st = psb_kv_stats(kv);
	uint32_t n;

	(void)state;
	fill_f(a, 10, 1.0f);
	assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 0, 1, 1, 0, 3, a, 40, 0, NULL), 0);
	assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 0, 1, 2, 0, 4, a, 40, 1, NULL), 0);
	assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 1, 2, 1, 0, 3, a, 40, 0, NULL), 0);
	assert_int_equal(psb_kv_peer_left(kv, 0xc6120001u), 0);	/* nobody there */
	assert_int_equal(psb_kv_peer_left(kv, waddr(0).ip), 2);
	assert_int_equal(st->discarded[PSB_KV_DISCARD_BYE], 2);
	psb_kv_staged(kv, &n, NULL, NULL);
	assert_int_equal(n, 1);
	/* worker 1's push goes on */
	for (n = 1; n < 3; n++)
		assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 1, 2, 1, 0, 3, a, 40, n, NULL), 0);
	assert_int_equal(c.n, 1);
	check_stored(kv, 3, a, 10, 1);
	tf_cap_clear(&c);
	psb_kv_free(kv);
}

/* A newer request of the same sender for the key gives the staged push up. */
static void
test_superseded(void **state)
{
	static struct tf_cap c;
	struct psb_kv_cfg b = { 0 };
	float a[10], x[10];
	struct psb_kv *kv = kv_budget(1, 0, &b);
	const struct psb_kv_stats *st = psb_kv_stats(kv);
	uint32_t n;

	(void)state;
	fill_f(a, 10, 1.0f);
	fill_f(x, 10, 50.0f);
	assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 0, 1, 5, 0, 3, x, 40, 0, NULL), 0);
	for (n = 0; n < 3; n++)		/* another key: untouched */
		assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 0, 1, 1, 0, 9, a, 40, n, NULL), 0);
	/* late segments of an older request are stale, not a new push */
	assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 0, 1, 4, 0, 3, x, 40, 0, NULL), 0);
	assert_int_equal(st->stale, 1);
	assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 0, 1, 6, 0, 3, a, 40, 0, NULL), 0);
	assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 0, 1, 6, 0, 3, a, 40, 1, NULL), 0);
	assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 0, 1, 6, 0, 3, a, 40, 2, NULL), 0);
	assert_int_equal(st->discarded[PSB_KV_DISCARD_SUPERSEDED], 1);
	check_stored(kv, 3, a, 10, 1);
	/* a pull newer than a staged push gives it up too */
	assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 0, 1, 7, 0, 3, x, 40, 0, NULL), 0);
	{
		struct psb_hdr h = req_hdr(PSB_MSG_PULL, 0, 8, 0, 3, 0);
		struct psb_addr wa = waddr(0);

		h.aux = 1;
		assert_int_equal(psb_kv_handle(kv, &h, NULL, &wa, tf_cap_emit, &c), 0);
	}
	assert_int_equal(st->discarded[PSB_KV_DISCARD_SUPERSEDED], 2);
	check_val(&c.m[c.n - 1], a, 10);
	tf_cap_clear(&c);
	psb_kv_free(kv);
}

/* Segments kept by reference are released exactly once, whatever ends their push. */
static void
test_held_refs(void **state)
{
	static struct tf_cap c;
	struct psb_kv_cfg b = { .hold_max = 3, .reasm_timeout_ns = 10 };
	static struct fake_ref r[64];
	float a[40];
	struct psb_kv *kv;
	const struct psb_kv_stats *st;
	uint32_t held, i;
	int rc;

	(void)state;
	fill_f(a, 40, 1.0f);
	releases = 0;
	kv = kv_budget(2, 0, &b);
	st = psb_kv_stats(kv);
	/* key 1: 10 segments; the first 3 are kept, the rest copied; the last is never kept */
	for (i = 0; i < 10; i++) {
		rc = seg_ref(kv, &c, PSB_MSG_PUSH, 0, 1, 1, 0, 1, a, 160, i, &r[i]);
		assert_int_equal(rc, i < 3 ? PSB_KV_HELD : 0);
	}
	assert_int_equal(c.n, 1);
	check_stored(kv, 1, a, 40, 1);
	assert_int_equal(releases, 3);
	assert_int_equal(st->segs_held, 3);
	assert_int_equal(st->segs_copied, 6);
	psb_kv_staged(kv, NULL, NULL, &held);
	assert_int_equal(held, 0);
	/* a duplicate is not kept */
	assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 1, 1, 1, 0, 1, a, 160, 0, &r[10]),
		PSB_KV_HELD);
	assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 1, 1, 1, 0, 1, a, 160, 0, &r[11]), 0);
	/* ended by timeout, by a restart, by reset and by free: released each time */
	psb_kv_tick(kv, 100);
	assert_int_equal(releases, 4);
	assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 1, 1, 2, 0, 1, a, 160, 0, &r[12]),
		PSB_KV_HELD);
	assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 1, 2, 1, 0, 2, a, 160, 0, &r[13]),
		PSB_KV_HELD);
	assert_int_equal(releases, 5);
	assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 0, 1, 3, 0, 2, a, 160, 1, &r[14]),
		PSB_KV_HELD);
	psb_kv_reset(kv);
	assert_int_equal(releases, 7);
	assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 0, 1, 1, 0, 2, a, 160, 1, &r[15]),
		PSB_KV_HELD);
	psb_kv_free(kv);
	assert_int_equal(releases, 8);
	for (i = 12; i <= 15; i++)
		assert_int_equal(r[i].released, 1);
	tf_cap_clear(&c);

	/* a reference that would pin far more memory than it carries is copied instead */
	b.hold_cost = 4 * SEG + 4;
	kv = kv_budget(1, 0, &b);
	assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 0, 1, 1, 0, 1, a, 160, 0, &r[20]), 0);
	assert_int_equal(psb_kv_stats(kv)->segs_copied, 1);
	psb_kv_free(kv);
	assert_int_equal(r[20].released, 0);
}

/* Budgets of the store: keys and bytes refuse new keys with no_memory, naming the budget. */
static void
test_budget_store(void **state)
{
	static struct tf_cap c;
	struct psb_kv_cfg b = { .max_keys = 2 };
	float a[10];
	struct psb_addr w0 = waddr(0);
	struct psb_kv *kv;
	uint64_t mem;

	(void)state;
	fill_f(a, 10, 1.0f);
	kv = kv_budget(1, 0, &b);
	send_value(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 1, a, 40);
	send_value(kv, &c, PSB_MSG_PUSH, 0, 2, 0, 2, a, 40);
	/* a third key: refused on its first segment, its other segments dropped quietly */
	send_value(kv, &c, PSB_MSG_PUSH, 0, 3, 0, 3, a, 40);
	assert_int_equal(c.n, 3);
	check_error(&c.m[2], PSB_ST_NO_MEM, PSB_BUDGET_KEYS, &w0, 0, 3, 3);
	assert_int_equal(psb_kv_stats(kv)->refused[PSB_BUDGET_KEYS], 1);
	assert_int_equal(psb_kv_stats(kv)->budget_drops, 2);
	assert_string_equal(psb_budget_name(PSB_BUDGET_KEYS), "store.max_keys");
	/* nothing of it was kept: its retry is judged again, existing keys go on */
	send_value(kv, &c, PSB_MSG_PUSH, 0, 4, 0, 1, a, 40);
	assert_int_equal(c.n, 4);
	check_resp(&c.m[3], PSB_MSG_PUSH_ACK, 0, 4, 1, 2);
	assert_int_equal(psb_kv_nkeys(kv), 2);
	/* reset frees the store: the key fits again */
	psb_kv_reset(kv);
	send_value(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 3, a, 40);
	assert_int_equal(c.m[c.n - 1].h.type, PSB_MSG_PUSH_ACK);
	tf_cap_clear(&c);
	psb_kv_free(kv);

	/* bytes: what a key costs is counted; the one that does not fit is refused */
	b.max_keys = 0;
	kv = kv_budget(1, 1, &b);
	mem = psb_kv_mem(kv);
	psb_kv_free(kv);
	b.max_bytes = mem + 2 * (64 * 2 + 20) + 10;	/* two keys of 40 B (sync: value + sum) */
	sync_flag = 1;
	kv = kv_budget(1, 1, &b);
	send_value(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 1, a, 40);
	send_value(kv, &c, PSB_MSG_PUSH, 0, 2, 0, 2, a, 40);
	assert_true(psb_kv_mem(kv) <= b.max_bytes);
	send_value(kv, &c, PSB_MSG_PUSH, 0, 3, 0, 3, a, 40);
	assert_int_equal(c.n, 3);
	check_error(&c.m[2], PSB_ST_NO_MEM, PSB_BUDGET_BYTES, &w0, 0, 3, 3);
	assert_true(psb_kv_mem(kv) <= b.max_bytes);
	tf_cap_clear(&c);
	psb_kv_free(kv);
	sync_flag = 0;
}

/*
 * Budgets of reassembly: an announced length costs budget before anything arrives, never
 * memory; beyond the budget a push is refused with busy (once per attempt), and fits
 * again once others completed.
 */
static void
test_budget_reasm(void **state)
{
	static struct tf_cap c;
	struct psb_kv_cfg b = { .max_value = 1u << 30, .reasm_sender_bytes = 0,
		.reasm_bytes = 0 };
	float a[10];
	struct psb_addr w0 = waddr(0), w2 = waddr(2);
	struct psb_kv *kv;
	uint64_t one = psb_kv_push_cost(40, SEG), mem0;
	uint32_t n, i;
	uint64_t bytes;

	(void)state;
	fill_f(a, 10, 1.0f);
	b.reasm_sender_bytes = one + one / 2;
	b.reasm_bytes = 2 * one + one / 2;
	kv = kv_budget(3, 0, &b);
	/* two staged pushes of worker 0: the second is over its share */
	assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 0, 1, 1, 0, 1, a, 40, 0, NULL), 0);
	assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 0, 1, 2, 0, 2, a, 40, 0, NULL), 0);
	assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 0, 1, 2, 0, 2, a, 40, 1, NULL), 0);
	assert_int_equal(c.n, 1);
	check_error(&c.m[0], PSB_ST_BUSY, PSB_BUDGET_REASM_SENDER, &w0, 0, 2, 2);
	assert_int_equal(psb_kv_stats(kv)->budget_drops, 1);
	/* worker 1 has its own share, and then the total is full for worker 2 */
	assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 1, 1, 1, 0, 3, a, 40, 0, NULL), 0);
	assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 2, 1, 1, 0, 4, a, 40, 0, NULL), 0);
	assert_int_equal(c.n, 2);
	check_error(&c.m[1], PSB_ST_BUSY, PSB_BUDGET_REASM, &w2, 2, 1, 4);
	/* worker 0 completes its first push: its second fits now */
	for (i = 1; i < 3; i++)
		assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 0, 1, 1, 0, 1, a, 40, i, NULL), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(seg_ref(kv, &c, PSB_MSG_PUSH, 0, 1, 2, 0, 2, a, 40, i, NULL), 0);
	assert_int_equal(c.m[c.n - 1].h.type, PSB_MSG_PUSH_ACK);
	check_stored(kv, 2, a, 10, 1);
	assert_int_equal(psb_kv_stats(kv)->refused[PSB_BUDGET_REASM_SENDER], 1);
	assert_int_equal(psb_kv_stats(kv)->refused[PSB_BUDGET_REASM], 1);
	tf_cap_clear(&c);
	psb_kv_free(kv);

	/*
	 * Huge announced lengths: a first segment of a 64 MiB (and of a 1 GiB value cut in
	 * 16-byte segments) allocates no value and no per-segment table: the store's memory
	 * does not move, and beyond the budget the push is refused.
	 */
	b.reasm_sender_bytes = 0;
	b.reasm_bytes = psb_kv_push_cost(64u << 20, SEG) + (1u << 20);
	kv = kv_budget(64, 0, &b);
	mem0 = psb_kv_mem(kv);
	for (i = 0; i < 64; i++)
		seg_ref(kv, &c, PSB_MSG_PUSH, (uint16_t)i, 1, 1, 0, 100 + i, a, 64u << 20, 0, NULL);
	psb_kv_staged(kv, &n, &bytes, NULL);
	assert_int_equal(n, 1);		/* the budget takes one */
	assert_true(bytes <= b.reasm_bytes);
	assert_int_equal(psb_kv_stats(kv)->refused[PSB_BUDGET_REASM], 63);
	assert_int_equal(psb_kv_mem(kv), mem0);
	assert_int_equal(psb_kv_nkeys(kv), 0);
	seg_ref(kv, &c, PSB_MSG_PUSH, 1, 1, 2, 0, 999, a, 1u << 30, 0, NULL);
	assert_int_equal(psb_kv_stats(kv)->refused[PSB_BUDGET_REASM], 64);
	tf_cap_clear(&c);
	psb_kv_free(kv);
}

static void
test_shard_of(void **state)
{
	static const unsigned int ns[] = { 2, 3, 4, 7, 16 };
	unsigned int count[16];
	unsigned int i, j, n;
	uint64_t k;

	(void)state;
	for (k = 0; k < 1000; k++) {
		assert_int_equal(psb_kv_shard_of(k, 0), 0);
		assert_int_equal(psb_kv_shard_of(k, 1), 0);
	}
	for (j = 0; j < sizeof(ns) / sizeof(ns[0]); j++) {
		n = ns[j];
		memset(count, 0, sizeof(count));
		/* sequential keys, as ps-lite apps use them */
		for (k = 0; k < 16000; k++) {
			unsigned int s = psb_kv_shard_of(k, n);

			assert_true(s < n);
			/* stable: the same key always maps to the same shard */
			assert_int_equal(psb_kv_shard_of(k, n), s);
			count[s]++;
		}
		for (i = 0; i < n; i++) {
			/* within 15% of the fair share */
			assert_true(count[i] * 100 > 16000 / n * 85);
			assert_true(count[i] * 100 < 16000 / n * 115);
		}
	}
	/* keys differing only in high bits spread too */
	memset(count, 0, sizeof(count));
	for (k = 0; k < 4000; k++)
		count[psb_kv_shard_of(k << 40, 4)]++;
	for (i = 0; i < 4; i++)
		assert_true(count[i] > 800 && count[i] < 1200);
}

/* Push one single-segment value with an explicit sender epoch. */
static void
push_epoch(struct psb_kv *kv, struct tf_cap *c, uint16_t w, uint32_t epoch, uint32_t req_id,
		uint32_t round, const float *val, uint32_t n)
{
	struct psb_hdr h = req_hdr(PSB_MSG_PUSH, w, req_id, round, 77, n * 4);
	struct psb_addr a = waddr(w);

	h.aux = epoch;
	h.seg_len = (uint16_t)(n * 4);
	if (sync_flag)
		h.flags |= PSB_F_SYNC;
	assert_int_equal(psb_kv_handle(kv, &h, val, &a, tf_cap_emit, c), 0);
}

/* A restarted worker (new epoch) starts its ids over; sync rounds still take one push each. */
static void
test_epoch_restart(void **state)
{
	static struct tf_cap c;
	float a[4] = { 1, 2, 3, 4 }, b[4] = { 10, 20, 30, 40 }, want[4];
	struct psb_kv *kv;
	unsigned int i;

	(void)state;
	/* Async: the new incarnation's low request id is not taken for a stale repeat. */
	sync_flag = 0;
	kv = kv_new(1, 0, 0, 0);
	tf_cap_clear(&c);
	push_epoch(kv, &c, 0, 0xaaaa, 5000, 0, a, 4);
	push_epoch(kv, &c, 0, 0xbbbb, 1, 0, a, 4);
	assert_int_equal(c.n, 2);
	check_resp(&c.m[1], PSB_MSG_PUSH_ACK, 0, 1, 77, 2);
	for (i = 0; i < 4; i++)
		want[i] = 2 * a[i];
	check_stored(kv, 77, want, 4, 2);
	assert_int_equal(psb_kv_stats(kv)->stale, 0);
	psb_kv_free(kv);

	/* Sync: worker 0 restarts after pushing round 0; its first push stands, once. */
	sync_flag = 1;
	kv = kv_new(2, 1, 0, 0);
	tf_cap_clear(&c);
	push_epoch(kv, &c, 0, 0xaaaa, 7, 0, a, 4);
	push_epoch(kv, &c, 0, 0xbbbb, 1, 0, b, 4);
	assert_int_equal(c.n, 0);
	push_epoch(kv, &c, 1, 0xcccc, 3, 0, b, 4);
	assert_int_equal(c.n, 2);
	check_resp(&c.m[0], PSB_MSG_PUSH_ACK, 0, 1, 77, 1);
	check_resp(&c.m[1], PSB_MSG_PUSH_ACK, 1, 3, 77, 1);
	for (i = 0; i < 4; i++)
		want[i] = a[i] + b[i];
	check_stored(kv, 77, want, 4, 1);

	/*
	 * Round 1: worker 0 pushes it and restarts; its new incarnation starts from round 0
	 * (as a worker rejoining a job does). Its old push stands: the new one waits for the
	 * round instead of being summed as worker 0's second push of it.
	 */
	tf_cap_clear(&c);
	push_epoch(kv, &c, 0, 0xbbbb, 2, 1, a, 4);
	push_epoch(kv, &c, 0, 0xdddd, 1, 0, b, 4);
	assert_int_equal(c.n, 0);
	push_epoch(kv, &c, 1, 0xcccc, 5, 1, b, 4);
	assert_int_equal(c.n, 2);
	check_resp(&c.m[0], PSB_MSG_PUSH_ACK, 0, 1, 77, 2);
	check_resp(&c.m[1], PSB_MSG_PUSH_ACK, 1, 5, 77, 2);
	for (i = 0; i < 4; i++)
		want[i] = 2 * (a[i] + b[i]);
	check_stored(kv, 77, want, 4, 2);

	/* A push for the wrong round gets STALE, and so does its retry. */
	tf_cap_clear(&c);
	push_epoch(kv, &c, 1, 0xcccc, 6, 9, b, 4);
	push_epoch(kv, &c, 1, 0xcccc, 6, 9, b, 4);
	assert_int_equal(c.n, 2);
	{
		struct psb_addr a1 = waddr(1);

		check_error(&c.m[0], PSB_ST_STALE, 2, &a1, 1, 6, 77);
		check_error(&c.m[1], PSB_ST_STALE, 2, &a1, 1, 6, 77);
	}
	psb_kv_free(kv);
	sync_flag = 0;
}

#define BATCH_MAX	1024	/* bytes of a test BATCH, and of its BATCH_RESP buffer */
#define OREC_MAX	32

/* The records of one BATCH, built up in order. */
struct batch {
	uint8_t b[BATCH_MAX];
	size_t len;
};

/* One answer record read back from a BATCH_RESP buffer. */
struct orec {
	struct psb_rec r;
	const uint8_t *val;
};

/* Append a record; val carries len bytes (PUSH / PUSHPULL), NULL for a PULL. */
static void
batch_add(struct batch *bt, uint8_t type, uint32_t req_id, uint32_t round, uint64_t key,
		const float *val, uint16_t len)
{
	const struct psb_rec r = { .type = type, .len = len, .req_id = req_id, .round = round,
		.key = key };

	assert_true(bt->len + PSB_REC_HLEN + len <= sizeof(bt->b));
	bt->len += tf_rec_put(bt->b + bt->len, &r, val);
}

/* Hand bt to the store as worker w's BATCH; answers that fit go to out (cap bytes). */
static int
send_batch(struct psb_kv *kv, struct tf_cap *c, uint16_t w, const struct batch *bt, uint8_t *out,
		size_t cap, size_t *out_len)
{
	struct psb_hdr h;
	struct psb_addr a = waddr(w);
	struct psb_rec first;

	psb_hdr_init(&h, PSB_MSG_BATCH);
	h.sender = w;
	h.req_id = 0xbbbb;
	if (bt->len >= PSB_REC_HLEN && psb_rec_decode(&first, bt->b, bt->len) > 0)
		h.key = first.key;
	tf_whole(&h, (uint32_t)bt->len);
	if (sync_flag)
		h.flags |= PSB_F_SYNC;
	*out_len = 0xdead;
	return psb_kv_handle_batch(kv, &h, bt->b, &a, out, cap, out_len, tf_cap_emit, c);
}

/* Read the answer records of a BATCH_RESP; they must use up its bytes exactly. */
static unsigned int
read_out(const uint8_t *out, size_t len, struct orec *o)
{
	size_t off = 0;
	unsigned int n = 0;

	while (off < len) {
		int used;

		assert_true(n < OREC_MAX);
		used = psb_rec_decode(&o[n].r, out + off, len - off);
		assert_true(used >= PSB_REC_HLEN);
		o[n].val = out + off + PSB_REC_HLEN;
		off += (size_t)used;
		n++;
	}
	assert_int_equal(off, len);
	return n;
}

/* Check an answer record: type, echoed req_id and key, round, and the n floats of want. */
static void
check_orec(const struct orec *o, uint8_t type, uint32_t req_id, uint64_t key, uint32_t round,
		const float *want, uint32_t n)
{
	uint32_t i;
	float got;

	assert_int_equal(o->r.type, type);
	assert_int_equal(o->r.status, PSB_ST_OK);
	assert_int_equal(o->r.req_id, req_id);
	assert_true(o->r.key == key);
	assert_int_equal(o->r.round, round);
	assert_int_equal(o->r.len, n * sizeof(float));
	for (i = 0; i < n; i++) {
		memcpy(&got, o->val + i * sizeof(float), sizeof(got));
		assert_true(got == want[i]);
	}
}

/* Async: PUSH, PUSHPULL and PULL records of several keys, answered in order in out. */
static void
test_batch_async(void **state)
{
	static struct batch bt;
	struct psb_kv *kv = kv_new(2, 0, 0, 0);
	struct tf_cap c = { .n = 0 };
	const struct psb_kv_stats *st = psb_kv_stats(kv);
	const float a[2] = { 1.0f, 2.0f }, b[4] = { 3.0f, 4.0f, 5.0f, 6.0f };
	const float d[2] = { 10.0f, 20.0f }, e[4] = { 0.5f, 0.5f, 0.5f, 0.5f };
	const float ad[2] = { 11.0f, 22.0f }, be[4] = { 3.5f, 4.5f, 5.5f, 6.5f };
	uint8_t out[BATCH_MAX + 8];
	struct orec o[OREC_MAX];
	size_t len;

	(void)state;
	sync_flag = 0;
	memset(&bt, 0, sizeof(bt));
	batch_add(&bt, PSB_MSG_PUSH, 1, 0, 1, a, sizeof(a));
	batch_add(&bt, PSB_MSG_PUSHPULL, 2, 0, 2, b, sizeof(b));
	batch_add(&bt, PSB_MSG_PUSH, 3, 0, 3, d, sizeof(d));
	batch_add(&bt, PSB_MSG_PULL, 4, 0, 3, NULL, 0);
	/* the guard bytes after cap catch a write past it */
	memset(out, 0xa5, sizeof(out));
	assert_int_equal(send_batch(kv, &c, 0, &bt, out, BATCH_MAX, &len), 4);
	assert_int_equal(c.n, 0);
	assert_int_equal(len, 4 * PSB_REC_HLEN + 16 + 8);
	assert_int_equal(out[BATCH_MAX], 0xa5);
	assert_int_equal(read_out(out, len, o), 4);
	check_orec(&o[0], PSB_MSG_PUSH_ACK, 1, 1, 1, NULL, 0);
	check_orec(&o[1], PSB_MSG_PUSHPULL_RESP, 2, 2, 1, b, 4);
	check_orec(&o[2], PSB_MSG_PUSH_ACK, 3, 3, 1, NULL, 0);
	/* a later record sees what an earlier one of the same batch pushed (one per key) */
	check_orec(&o[3], PSB_MSG_PULL_RESP, 4, 3, 1, d, 2);

	/* worker 1 adds into the same keys; each answer carries the sum */
	memset(&bt, 0, sizeof(bt));
	batch_add(&bt, PSB_MSG_PUSHPULL, 7, 0, 1, d, sizeof(d));
	batch_add(&bt, PSB_MSG_PUSH, 8, 0, 2, e, sizeof(e));
	batch_add(&bt, PSB_MSG_PULL, 9, 0, 3, NULL, 0);
	assert_int_equal(send_batch(kv, &c, 1, &bt, out, BATCH_MAX, &len), 3);
	assert_int_equal(c.n, 0);
	assert_int_equal(read_out(out, len, o), 3);
	check_orec(&o[0], PSB_MSG_PUSHPULL_RESP, 7, 1, 2, ad, 2);
	check_orec(&o[1], PSB_MSG_PUSH_ACK, 8, 2, 2, NULL, 0);
	check_orec(&o[2], PSB_MSG_PULL_RESP, 9, 3, 1, d, 2);

	check_stored(kv, 1, ad, 2, 2);
	check_stored(kv, 2, be, 4, 2);
	check_stored(kv, 3, d, 2, 1);
	assert_int_equal(psb_kv_nkeys(kv), 3);
	assert_int_equal(st->batches, 2);
	assert_int_equal(st->bad_records, 0);
	assert_int_equal(st->req[PSB_MSG_PUSH], 3);
	assert_int_equal(st->req[PSB_MSG_PUSHPULL], 2);
	assert_int_equal(st->req[PSB_MSG_PULL], 2);
	assert_int_equal(st->bytes_summed, 8 + 16 + 8 + 8 + 16);
	assert_int_equal(st->bytes_sent, 16 + 8 + 8 + 8);
	assert_int_equal(st->retries_answered, 0);

	/* an empty BATCH is handled (counted) and answers nothing */
	memset(&bt, 0, sizeof(bt));
	assert_int_equal(send_batch(kv, &c, 0, &bt, out, BATCH_MAX, &len), 0);
	assert_int_equal(len, 0);
	assert_int_equal(st->batches, 3);
	tf_cap_clear(&c);
	psb_kv_free(kv);
}

/* A BATCH sent again (same records, same ids) is answered again from DONE, applied once. */
static void
test_batch_retry(void **state)
{
	static struct batch bt;
	struct psb_kv *kv = kv_new(2, 0, 0, 0);
	struct tf_cap c = { .n = 0 };
	const struct psb_kv_stats *st = psb_kv_stats(kv);
	const float a[2] = { 1.0f, 2.0f }, b[3] = { 4.0f, 5.0f, 6.0f };
	const float p[4] = { 7.0f, 8.0f, 9.0f, 10.0f };
	uint8_t out[BATCH_MAX], out2[BATCH_MAX];
	struct orec o[OREC_MAX];
	size_t len, len2;
	unsigned int i;

	(void)state;
	sync_flag = 0;
	/* key 12 exists before the batch: an ordinary push */
	send_value(kv, &c, PSB_MSG_PUSH, 1, 1, 0, 12, p, sizeof(p));
	assert_int_equal(c.n, 1);
	tf_cap_clear(&c);

	memset(&bt, 0, sizeof(bt));
	batch_add(&bt, PSB_MSG_PUSH, 100, 0, 10, a, sizeof(a));
	batch_add(&bt, PSB_MSG_PUSHPULL, 101, 0, 11, b, sizeof(b));
	batch_add(&bt, PSB_MSG_PULL, 102, 0, 12, NULL, 0);
	assert_int_equal(send_batch(kv, &c, 0, &bt, out, sizeof(out), &len), 3);
	assert_int_equal(read_out(out, len, o), 3);
	check_orec(&o[0], PSB_MSG_PUSH_ACK, 100, 10, 1, NULL, 0);
	check_orec(&o[1], PSB_MSG_PUSHPULL_RESP, 101, 11, 1, b, 3);
	check_orec(&o[2], PSB_MSG_PULL_RESP, 102, 12, 1, p, 4);

	/* twice more: byte for byte the same answers, nothing added again */
	for (i = 0; i < 2; i++) {
		memset(out2, 0, sizeof(out2));
		assert_int_equal(send_batch(kv, &c, 0, &bt, out2, sizeof(out2), &len2), 3);
		assert_int_equal(len2, len);
		assert_memory_equal(out2, out, len);
	}
	assert_int_equal(c.n, 0);
	check_stored(kv, 10, a, 2, 1);
	check_stored(kv, 11, b, 3, 1);
	check_stored(kv, 12, p, 4, 1);
	assert_int_equal(st->retries_answered, 6);
	assert_int_equal(st->req[PSB_MSG_PUSH], 2);
	assert_int_equal(st->req[PSB_MSG_PUSHPULL], 1);
	assert_int_equal(st->req[PSB_MSG_PULL], 1);
	assert_int_equal(st->bytes_summed, sizeof(p) + sizeof(a) + sizeof(b));
	assert_int_equal(st->batches, 3);

	/* the ordinary retry of a batched request is answered the same way */
	send_value(kv, &c, PSB_MSG_PUSHPULL, 0, 101, 0, 11, b, sizeof(b));
	assert_int_equal(c.n, 1);
	check_resp(&c.m[0], PSB_MSG_PUSHPULL_RESP, 0, 101, 11, 1);
	check_val(&c.m[0], b, 3);
	check_stored(kv, 11, b, 3, 1);
	assert_int_equal(st->retries_answered, 7);
	tf_cap_clear(&c);
	psb_kv_free(kv);
}

/* A cut-short record or one of a wrong type stops the batch; what came before is answered. */
static void
test_batch_bad_records(void **state)
{
	static struct batch bt;
	static const uint8_t wrong[] = {
		PSB_MSG_PUSH_ACK, PSB_MSG_PULL_RESP, PSB_MSG_ERROR, PSB_MSG_BATCH,
		PSB_MSG_BATCH_RESP, PSB_MSG_REGISTER, 0x00, 0x05,
	};
	struct psb_kv *kv = kv_new(1, 0, 0, 0);
	struct tf_cap c = { .n = 0 };
	const struct psb_kv_stats *st = psb_kv_stats(kv);
	const float a[2] = { 1.0f, 2.0f };
	float five[2];
	uint8_t out[BATCH_MAX];
	struct orec o[OREC_MAX];
	uint32_t id = 1;
	uint64_t bad = 0, sum = 0;
	size_t len, cut;
	unsigned int i;

	(void)state;
	sync_flag = 0;
	/* a record of a wrong type: the record after it is not handled */
	for (i = 0; i < sizeof(wrong); i++) {
		memset(&bt, 0, sizeof(bt));
		batch_add(&bt, PSB_MSG_PUSH, id, 0, 5, a, sizeof(a));
		batch_add(&bt, wrong[i], id + 1, 0, 5, a, sizeof(a));
		batch_add(&bt, PSB_MSG_PUSH, id + 2, 0, 6, a, sizeof(a));
		assert_int_equal(send_batch(kv, &c, 0, &bt, out, sizeof(out), &len), 1);
		bad++;
		sum += sizeof(a);
		assert_int_equal(st->bad_records, bad);
		assert_int_equal(read_out(out, len, o), 1);
		check_orec(&o[0], PSB_MSG_PUSH_ACK, id, 5, i + 1, NULL, 0);
		assert_true(psb_kv_get(kv, 6, NULL, NULL) == NULL);
		id += 3;
	}
	assert_int_equal(c.n, 0);
	assert_int_equal(st->errors[PSB_ST_BAD_TYPE], 0);

	/* cut short anywhere in the last record (header or value): two handled, then stop */
	memset(&bt, 0, sizeof(bt));
	batch_add(&bt, PSB_MSG_PUSH, id, 0, 7, a, sizeof(a));
	batch_add(&bt, PSB_MSG_PULL, id + 1, 0, 7, NULL, 0);
	batch_add(&bt, PSB_MSG_PUSH, id + 2, 0, 8, a, sizeof(a));
	for (cut = PSB_REC_HLEN + 8 + PSB_REC_HLEN + 4; cut < bt.len; cut += 4) {
		struct batch t = bt;
		uint32_t round = 0;

		/* fresh ids for each try, so the first two are new requests, not retries */
		t.len = cut;
		{
			struct psb_rec r;

			assert_int_equal(psb_rec_decode(&r, t.b, t.len), PSB_REC_HLEN + 8);
			r.req_id = id;
			psb_rec_encode(t.b, &r);
			assert_int_equal(psb_rec_decode(&r, t.b + PSB_REC_HLEN + 8,
				t.len - PSB_REC_HLEN - 8), PSB_REC_HLEN);
			r.req_id = id + 1;
			psb_rec_encode(t.b + PSB_REC_HLEN + 8, &r);
		}
		assert_int_equal(send_batch(kv, &c, 0, &t, out, sizeof(out), &len), 2);
		bad++;
		sum += sizeof(a);
		assert_int_equal(st->bad_records, bad);
		assert_int_equal(read_out(out, len, o), 2);
		assert_non_null(psb_kv_get(kv, 7, NULL, &round));
		check_orec(&o[0], PSB_MSG_PUSH_ACK, id, 7, round, NULL, 0);
		assert_int_equal(o[1].r.type, PSB_MSG_PULL_RESP);
		assert_int_equal(o[1].r.req_id, id + 1);
		assert_true(psb_kv_get(kv, 8, NULL, NULL) == NULL);
		id += 2;
	}
	/* a length that is not a multiple of 4 is a broken record too */
	memset(&bt, 0, sizeof(bt));
	batch_add(&bt, PSB_MSG_PUSH, id, 0, 7, a, sizeof(a));
	batch_add(&bt, PSB_MSG_PUSH, id + 1, 0, 8, a, sizeof(a));
	bt.b[PSB_REC_HLEN + 8 + 3] = 6;	/* len 8 -> 6 */
	assert_int_equal(send_batch(kv, &c, 0, &bt, out, sizeof(out), &len), 1);
	bad++;
	sum += sizeof(a);
	assert_int_equal(st->bad_records, bad);
	assert_int_equal(read_out(out, len, o), 1);
	assert_true(psb_kv_get(kv, 8, NULL, NULL) == NULL);

	/* a broken first record: nothing handled, nothing answered */
	bt.len = PSB_REC_HLEN - 4;
	assert_int_equal(send_batch(kv, &c, 0, &bt, out, sizeof(out), &len), 0);
	assert_int_equal(len, 0);
	assert_int_equal(st->bad_records, bad + 1);

	/* not a BATCH: refused without counting or answering */
	{
		struct psb_hdr h = req_hdr(PSB_MSG_PUSH, 0, 1, 0, 1, 8);
		struct psb_addr wa = waddr(0);
		uint64_t batches = st->batches;

		h.seg_len = 8;
		len = 77;
		assert_int_equal(psb_kv_handle_batch(kv, &h, (const uint8_t *)a, &wa, out,
			sizeof(out), &len, tf_cap_emit, &c), -EINVAL);
		assert_int_equal(len, 0);
		assert_int_equal(st->batches, batches);
	}
	assert_int_equal(c.n, 0);
	assert_int_equal(st->bytes_summed, sum);
	/* key 5 took the first record of each wrong-type batch, nothing else */
	for (i = 0; i < 2; i++)
		five[i] = (float)sizeof(wrong) * a[i];
	check_stored(kv, 5, five, 2, sizeof(wrong));
	tf_cap_clear(&c);
	psb_kv_free(kv);
}

/* Answers that do not fit in cap come through emit as ordinary messages, in order. */
static void
test_batch_small_cap(void **state)
{
	static struct batch bt;
	struct psb_kv *kv = kv_new(1, 0, 0, 0);
	struct tf_cap c = { .n = 0 };
	const float a[2] = { 1.0f, 2.0f }, p[4] = { 3.0f, 4.0f, 5.0f, 6.0f };
	const float b[2] = { -1.0f, 0.5f };
	uint8_t out[BATCH_MAX];
	struct orec o[OREC_MAX];
	size_t len;

	(void)state;
	sync_flag = 0;
	send_value(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 21, p, sizeof(p));
	tf_cap_clear(&c);

	/* answers take 24, 40, 32 and 24 bytes: with 56, the first and third fit */
	memset(&bt, 0, sizeof(bt));
	batch_add(&bt, PSB_MSG_PUSH, 10, 0, 20, a, sizeof(a));
	batch_add(&bt, PSB_MSG_PULL, 11, 0, 21, NULL, 0);
	batch_add(&bt, PSB_MSG_PUSHPULL, 12, 0, 22, b, sizeof(b));
	batch_add(&bt, PSB_MSG_PUSH, 13, 0, 23, a, sizeof(a));
	memset(out, 0xa5, sizeof(out));
	assert_int_equal(send_batch(kv, &c, 0, &bt, out, 56, &len), 4);
	assert_int_equal(len, 56);
	assert_int_equal(out[56], 0xa5);
	assert_int_equal(read_out(out, len, o), 2);
	check_orec(&o[0], PSB_MSG_PUSH_ACK, 10, 20, 1, NULL, 0);
	check_orec(&o[1], PSB_MSG_PUSHPULL_RESP, 12, 22, 1, b, 2);
	assert_int_equal(c.n, 2);
	check_resp(&c.m[0], PSB_MSG_PULL_RESP, 0, 11, 21, 1);
	check_val(&c.m[0], p, 4);
	check_resp(&c.m[1], PSB_MSG_PUSH_ACK, 0, 13, 23, 1);
	tf_cap_clear(&c);

	/* no room at all: every answer is an ordinary message */
	memset(&bt, 0, sizeof(bt));
	batch_add(&bt, PSB_MSG_PUSH, 20, 0, 20, a, sizeof(a));
	batch_add(&bt, PSB_MSG_PULL, 21, 0, 21, NULL, 0);
	batch_add(&bt, PSB_MSG_PUSHPULL, 22, 0, 22, b, sizeof(b));
	assert_int_equal(send_batch(kv, &c, 0, &bt, out, 0, &len), 3);
	assert_int_equal(len, 0);
	assert_int_equal(c.n, 3);
	check_resp(&c.m[0], PSB_MSG_PUSH_ACK, 0, 20, 20, 2);
	check_resp(&c.m[1], PSB_MSG_PULL_RESP, 0, 21, 21, 1);
	check_val(&c.m[1], p, 4);
	check_resp(&c.m[2], PSB_MSG_PUSHPULL_RESP, 0, 22, 22, 2);
	{
		const float bb[2] = { -2.0f, 1.0f };

		check_val(&c.m[2], bb, 2);
	}
	tf_cap_clear(&c);

	/* room for exactly one header-only answer */
	memset(&bt, 0, sizeof(bt));
	batch_add(&bt, PSB_MSG_PULL, 30, 0, 21, NULL, 0);
	batch_add(&bt, PSB_MSG_PUSH, 31, 0, 23, a, sizeof(a));
	assert_int_equal(send_batch(kv, &c, 0, &bt, out, PSB_REC_HLEN, &len), 2);
	assert_int_equal(read_out(out, len, o), 1);
	check_orec(&o[0], PSB_MSG_PUSH_ACK, 31, 23, 2, NULL, 0);
	assert_int_equal(c.n, 1);
	check_resp(&c.m[0], PSB_MSG_PULL_RESP, 0, 30, 21, 1);
	tf_cap_clear(&c);
	psb_kv_free(kv);
}

/*
 * Sync, 2 workers: worker 0's batch waits for the rounds; worker 1's batch
 * closes them. Worker 1's answers are in its BATCH_RESP, worker 0's go out as
 * ordinary messages addressed to worker 0.
 */
static void
test_batch_sync(void **state)
{
	static struct batch b0, b1;
	struct psb_kv *kv = kv_new(2, 1, 0, 0);
	struct tf_cap c = { .n = 0 };
	const struct psb_kv_stats *st = psb_kv_stats(kv);
	const float a[4] = { 1, 2, 3, 4 }, b[2] = { 10, 20 }, d[4] = { 0.5f, 0.5f, 1, 1 };
	const float e[2] = { 5, 6 }, ad[4] = { 1.5f, 2.5f, 4, 5 }, be[2] = { 15, 26 };
	uint8_t out[BATCH_MAX];
	struct orec o[OREC_MAX];
	size_t len;
	unsigned int i;

	(void)state;
	sync_flag = 1;
	batch_add(&b0, PSB_MSG_PUSH, 100, 0, 30, a, sizeof(a));
	batch_add(&b0, PSB_MSG_PUSHPULL, 101, 0, 31, b, sizeof(b));
	/* sent twice (a retry while waiting): no answers, and pushed into the round once */
	for (i = 0; i < 2; i++) {
		assert_int_equal(send_batch(kv, &c, 0, &b0, out, sizeof(out), &len), 2);
		assert_int_equal(len, 0);
		assert_int_equal(c.n, 0);
	}
	assert_int_equal(st->rounds_closed, 0);

	batch_add(&b1, PSB_MSG_PUSHPULL, 200, 0, 30, d, sizeof(d));
	batch_add(&b1, PSB_MSG_PUSH, 201, 0, 31, e, sizeof(e));
	assert_int_equal(send_batch(kv, &c, 1, &b1, out, sizeof(out), &len), 2);
	assert_int_equal(st->rounds_closed, 2);
	assert_int_equal(read_out(out, len, o), 2);
	check_orec(&o[0], PSB_MSG_PUSHPULL_RESP, 200, 30, 1, ad, 4);
	check_orec(&o[1], PSB_MSG_PUSH_ACK, 201, 31, 1, NULL, 0);
	assert_int_equal(c.n, 2);
	check_resp(&c.m[0], PSB_MSG_PUSH_ACK, 0, 100, 30, 1);
	check_resp(&c.m[1], PSB_MSG_PUSHPULL_RESP, 0, 101, 31, 1);
	check_val(&c.m[1], be, 2);
	for (i = 0; i < 2; i++)
		assert_int_equal(c.m[i].h.flags & PSB_F_SYNC, PSB_F_SYNC);
	check_stored(kv, 30, ad, 4, 1);
	check_stored(kv, 31, be, 2, 1);
	tf_cap_clear(&c);

	/* round 1, the other way round: worker 1 waits, worker 0's batch closes it */
	memset(&b0, 0, sizeof(b0));
	memset(&b1, 0, sizeof(b1));
	batch_add(&b1, PSB_MSG_PUSH, 202, 1, 30, d, sizeof(d));
	assert_int_equal(send_batch(kv, &c, 1, &b1, out, sizeof(out), &len), 1);
	assert_int_equal(len, 0);
	assert_int_equal(c.n, 0);
	batch_add(&b0, PSB_MSG_PUSHPULL, 102, 1, 30, a, sizeof(a));
	assert_int_equal(send_batch(kv, &c, 0, &b0, out, sizeof(out), &len), 1);
	assert_int_equal(c.n, 1);
	check_resp(&c.m[0], PSB_MSG_PUSH_ACK, 1, 202, 30, 2);
	assert_int_equal(read_out(out, len, o), 1);
	{
		float want[4];

		for (i = 0; i < 4; i++)
			want[i] = 2 * ad[i];
		check_orec(&o[0], PSB_MSG_PUSHPULL_RESP, 102, 30, 2, want, 4);
		check_stored(kv, 30, want, 4, 2);
	}
	/* a push for a round that is not open: STALE as an ERROR record */
	memset(&b0, 0, sizeof(b0));
	batch_add(&b0, PSB_MSG_PUSH, 103, 7, 31, b, sizeof(b));
	assert_int_equal(send_batch(kv, &c, 0, &b0, out, sizeof(out), &len), 1);
	assert_int_equal(read_out(out, len, o), 1);
	assert_int_equal(o[0].r.type, PSB_MSG_ERROR);
	assert_int_equal(o[0].r.status, PSB_ST_STALE);
	assert_int_equal(o[0].r.aux, 1);
	assert_int_equal(o[0].r.req_id, 103);
	assert_int_equal(c.n, 1);
	tf_cap_clear(&c);
	sync_flag = 0;
	psb_kv_free(kv);
}

/* ERROR answers travel as records of type ERROR with their status and detail. */
static void
test_batch_errors(void **state)
{
	static struct batch bt;
	struct psb_kv *kv = kv_new(2, 0, 64, 0);
	struct tf_cap c = { .n = 0 };
	const struct psb_kv_stats *st = psb_kv_stats(kv);
	float v[32];
	uint8_t out[BATCH_MAX];
	struct orec o[OREC_MAX];
	size_t len;
	unsigned int i;
	static const struct {
		uint8_t status;
		uint32_t aux;
		uint32_t req_id;
		uint64_t key;
	} want[] = {
		{ PSB_ST_NO_KEY, 0, 2, 99 },
		{ PSB_ST_LEN_MISMATCH, 8, 3, 40 },
		{ PSB_ST_TOO_LARGE, 64, 4, 41 },
		{ PSB_ST_LEN_MISMATCH, 0, 5, 42 },
	};

	(void)state;
	sync_flag = 0;
	for (i = 0; i < 32; i++)
		v[i] = (float)i;
	batch_add(&bt, PSB_MSG_PUSH, 1, 0, 40, v, 8);
	batch_add(&bt, PSB_MSG_PULL, 2, 0, 99, NULL, 0);
	batch_add(&bt, PSB_MSG_PUSHPULL, 3, 0, 40, v, 12);
	batch_add(&bt, PSB_MSG_PUSH, 4, 0, 41, v, 128);
	batch_add(&bt, PSB_MSG_PUSH, 5, 0, 42, NULL, 0);
	batch_add(&bt, PSB_MSG_PULL, 6, 0, 40, NULL, 0);
	assert_int_equal(send_batch(kv, &c, 1, &bt, out, sizeof(out), &len), 6);
	assert_int_equal(c.n, 0);
	assert_int_equal(read_out(out, len, o), 6);
	check_orec(&o[0], PSB_MSG_PUSH_ACK, 1, 40, 1, NULL, 0);
	for (i = 0; i < 4; i++) {
		const struct psb_rec *r = &o[i + 1].r;

		assert_int_equal(r->type, PSB_MSG_ERROR);
		assert_int_equal(r->status, want[i].status);
		assert_int_equal(r->aux, want[i].aux);
		assert_int_equal(r->req_id, want[i].req_id);
		assert_true(r->key == want[i].key);
		assert_int_equal(r->len, 0);
	}
	check_orec(&o[5], PSB_MSG_PULL_RESP, 6, 40, 1, v, 2);
	assert_int_equal(st->errors[PSB_ST_NO_KEY], 1);
	assert_int_equal(st->errors[PSB_ST_LEN_MISMATCH], 2);
	assert_int_equal(st->errors[PSB_ST_TOO_LARGE], 1);
	assert_int_equal(psb_kv_nkeys(kv), 1);

	/* a sender out of range: every record gets BAD_SENDER, in the sender's BATCH_RESP */
	memset(&bt, 0, sizeof(bt));
	batch_add(&bt, PSB_MSG_PUSH, 7, 0, 40, v, 8);
	batch_add(&bt, PSB_MSG_PULL, 8, 0, 40, NULL, 0);
	assert_int_equal(send_batch(kv, &c, 2, &bt, out, sizeof(out), &len), 2);
	assert_int_equal(c.n, 0);
	assert_int_equal(read_out(out, len, o), 2);
	for (i = 0; i < 2; i++) {
		assert_int_equal(o[i].r.type, PSB_MSG_ERROR);
		assert_int_equal(o[i].r.status, PSB_ST_BAD_SENDER);
		assert_int_equal(o[i].r.aux, 2);
		assert_int_equal(o[i].r.req_id, 7 + i);
	}
	assert_int_equal(st->errors[PSB_ST_BAD_SENDER], 2);
	check_stored(kv, 40, v, 2, 1);
	tf_cap_clear(&c);
	psb_kv_free(kv);
}

/* What an emit callback sent each worker: frames as server_emit cuts them, and their bytes. */
#define TW	4
struct tally {
	uint64_t frames[TW];
	uint64_t bytes[TW];	/* PSB_FRAME_HLEN and the payload of every frame */
	uint64_t answers[TW];	/* whole answers (not a REPAIR's one segment) */
};

static void
tally_emit(void *arg, const struct psb_addr *to, struct psb_hdr *h, const void *value)
{
	struct tally *t = arg;
	unsigned int w = (unsigned int)(to->port - waddr(0).port);
	uint32_t off, end;

	(void)value;
	assert_true(w < TW);
	psb_kv_emit_span(h, &off, &end);
	if (h->seg_len == 0)
		t->answers[w]++;
	do {
		uint32_t len = end - off < h->seg_size ? end - off : h->seg_size;

		t->frames[w]++;
		t->bytes[w] += PSB_FRAME_HLEN + len;
		off += len;
	} while (off < end);
}

#define RV	64	/* floats of the resend tests' value: 16 segments */

/*
 * A peer that asks again and again for an answer it had: what the store sends it again
 * stays within its bucket (the burst, then the rate), every refusal counted by reason and
 * bytes; another sender's bucket is its own; a first answer costs nothing.
 */
static void
test_resend_budget(void **state)
{
	const uint64_t ans = psb_kv_resend_cost(RV * 4, SEG), seg = PSB_FRAME_HLEN + SEG;
	/* two answers at once, then one a millisecond */
	struct psb_kv_cfg b = { .resend_burst = 2 * ans, .resend_bps = ans * 8 * 1000 };
	const uint64_t t0 = 1000000000ull;
	static struct batch bt;
	static struct tf_cap c;
	const struct psb_kv_stats *st;
	struct psb_kv_resend_peer bp;
	struct tally t;
	struct psb_kv *kv;
	uint64_t now = t0, first, sent0, refused0, got0, i, n;
	uint8_t out[256];
	size_t len;
	float v[RV];

	(void)state;
	memset(&t, 0, sizeof(t));
	fill_f(v, RV, 1.0f);
	assert_int_equal(ans, 16 * PSB_FRAME_HLEN + sizeof(v));
	kv = kv_budget(3, 0, &b);
	st = psb_kv_stats(kv);
	psb_kv_tick(kv, now);
	send_value(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 5, v, sizeof(v));
	pull_via(kv, tally_emit, &t, 1, 1, 0, 5);
	assert_int_equal(t.frames[1], 16);
	assert_int_equal(t.bytes[1], ans);
	assert_int_equal(st->resend_bytes, 0);
	first = t.bytes[1];

	/* 100 repeats at once: the burst pays two answers, 98 are refused */
	for (i = 0; i < 100; i++)
		pull_via(kv, tally_emit, &t, 1, 1, 0, 5);
	assert_int_equal(t.answers[1], 3);
	assert_int_equal(t.bytes[1], first + 2 * ans);
	assert_int_equal(st->resend_bytes, 2 * ans);
	assert_int_equal(st->retries_answered, 2);
	assert_int_equal(st->resend_over_budget[PSB_KV_RESEND_DUPLICATE], 98);
	assert_int_equal(st->resend_over_budget_bytes, 98 * ans);
	/* a millisecond: one answer more, to one REPAIR of ten */
	now += 1000000;
	psb_kv_tick(kv, now);
	for (i = 0; i < 10; i++)
		repair_via(kv, tally_emit, &t, 1, 1, 5, PSB_MSG_PULL, 0, 0, 0, 0, 0);
	assert_int_equal(t.answers[1], 4);
	assert_int_equal(st->resend_over_budget[PSB_KV_RESEND_REPAIR], 9);
	/* half a millisecond: 8 of the 16 segments a REPAIR asks for */
	now += 500000;
	psb_kv_tick(kv, now);
	repair_via(kv, tally_emit, &t, 1, 1, 5, PSB_MSG_PULL, 1, 1, 0, 16, 0xffff);
	assert_int_equal(st->repair_segs, 8);
	assert_int_equal(st->resend_over_budget[PSB_KV_RESEND_SEGMENT], 8);
	assert_int_equal(t.frames[1], 4 * 16 + 8);
	/* nothing left, not even for a REPAIR_RESP to a request never seen */
	repair_via(kv, tally_emit, &t, 1, 9, 5, PSB_MSG_PUSH, 0, 0, 0, 0, 0);
	assert_int_equal(st->resend_over_budget[PSB_KV_RESEND_REPAIR_RESP], 1);
	assert_int_equal(st->nacks, 0);
	assert_int_equal(st->resend_over_budget_bytes,
		(98 + 9) * ans + 8 * seg + PSB_FRAME_HLEN + PSB_REPAIR_HLEN);

	/* the other senders' buckets are their own: worker 0's repair, worker 2's repeats */
	pull_via(kv, tally_emit, &t, 0, 2, 0, 5);
	repair_via(kv, tally_emit, &t, 0, 2, 5, PSB_MSG_PULL, 1, 1, 3, 2, 0x3);
	assert_int_equal(t.frames[0], 16 + 2);
	for (i = 0; i < 2; i++)
		pull_via(kv, tally_emit, &t, 2, 1, 0, 5);
	assert_int_equal(t.answers[2], 2);
	repair_via(kv, tally_emit, &t, 2, 2, 5, PSB_MSG_PUSH, 0, 0, 0, 0, 0);
	assert_int_equal(st->nacks, 1);

	/* the busiest sender: worker 1, at its address; then an interval starts over */
	assert_int_equal(psb_kv_resend_busiest(kv, &bp), 1);
	assert_int_equal(bp.sender, 1);
	assert_int_equal(bp.senders, 1);
	assert_int_equal(bp.addr.ip, waddr(1).ip);
	assert_int_equal(bp.addr.port, waddr(1).port);
	assert_int_equal(bp.refused, 98 + 9 + 8 + 1);
	assert_int_equal(bp.refused_bytes, st->resend_over_budget_bytes);
	assert_int_equal(bp.total, bp.refused);
	assert_int_equal(psb_kv_resend_busiest(kv, &bp), 0);

	/*
	 * A second of a repeat and a REPAIR every 100 us from worker 1, whose bucket is
	 * empty: it gets the rate's worth again, not more; every attempt sent or counted.
	 */
	sent0 = st->resend_bytes;
	refused0 = st->resend_over_budget_bytes;
	got0 = t.bytes[1];
	for (i = 0; i < 10000; i++) {
		now += 100000;
		psb_kv_tick(kv, now);
		pull_via(kv, tally_emit, &t, 1, 1, 0, 5);
		repair_via(kv, tally_emit, &t, 1, 1, 5, PSB_MSG_PULL, 0, 0, 0, 0, 0);
	}
	n = t.bytes[1] - got0;
	print_message("resend: 20000 asked of an empty bucket at %llu B/s for 1 s: %llu B sent\n",
		(unsigned long long)(b.resend_bps / 8), (unsigned long long)n);
	assert_true(n <= 1000 * ans);
	assert_true(n >= 999 * ans);
	assert_int_equal(st->resend_bytes - sent0, n);
	assert_int_equal(n + st->resend_over_budget_bytes - refused0, 20000 * ans);
	/* all told: no more than its first answer, the burst and the rate since */
	assert_true(t.bytes[1] <= first + b.resend_burst + (now - t0) * (b.resend_bps / 8) / 1000000000);
	assert_int_equal(psb_kv_resend_busiest(kv, &bp), 1);
	assert_int_equal(bp.sender, 1);
	assert_int_equal(bp.refused, 20000 - n / ans);

	/* BATCH records asked again are resends too: worker 2's full bucket pays 34 of 50 */
	send_value(kv, &c, PSB_MSG_PUSH, 0, 3, 0, 6, v, 8);
	memset(&bt, 0, sizeof(bt));
	batch_add(&bt, PSB_MSG_PULL, 7, 0, 6, NULL, 0);
	assert_int_equal(send_batch(kv, &c, 2, &bt, out, sizeof(out), &len), 1);
	assert_int_equal(len, PSB_REC_HLEN + 8);
	refused0 = st->resend_over_budget[PSB_KV_RESEND_DUPLICATE];
	for (i = n = 0; i < 50; i++) {
		assert_int_equal(send_batch(kv, &c, 2, &bt, out, sizeof(out), &len), 1);
		n += len != 0;
	}
	assert_int_equal(n, 2 * ans / psb_kv_resend_cost(8, SEG));
	assert_int_equal(st->resend_over_budget[PSB_KV_RESEND_DUPLICATE] - refused0, 50 - n);

	/* reset fills every bucket again */
	psb_kv_reset(kv);
	assert_int_equal(st->resend_over_budget_bytes, 0);
	send_value(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 5, v, sizeof(v));
	memset(&t, 0, sizeof(t));
	for (i = 0; i < 4; i++)
		pull_via(kv, tally_emit, &t, 1, 1, 0, 5);
	assert_int_equal(t.answers[1], 3);
	assert_int_equal(st->resend_over_budget[PSB_KV_RESEND_DUPLICATE], 1);
	assert_int_equal(c.n, 3);	/* the three pushes' ACKs */
	tf_cap_clear(&c);
	psb_kv_free(kv);

	/* without a budget (resend_burst 0) nothing is refused */
	b.resend_burst = 0;
	kv = kv_budget(2, 0, &b);
	st = psb_kv_stats(kv);
	send_value(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 5, v, sizeof(v));
	memset(&t, 0, sizeof(t));
	for (i = 0; i < 100; i++)
		pull_via(kv, tally_emit, &t, 1, 1, 0, 5);
	assert_int_equal(t.answers[1], 100);
	assert_int_equal(st->resend_bytes, 99 * ans);
	assert_int_equal(st->resend_over_budget[PSB_KV_RESEND_DUPLICATE], 0);
	assert_int_equal(psb_kv_resend_busiest(kv, &bp), 0);
	tf_cap_clear(&c);
	psb_kv_free(kv);
}

/* The resend budget in effect: two answers of max_value and PSB_KV_RESEND_BPS unless given. */
static void
test_resend_derive(void **state)
{
	const uint32_t mv = 1u << 20;
	const uint64_t ans = psb_kv_resend_cost(mv, 1432);
	struct psb_kv_budget given, b;
	char err[256];

	(void)state;
	memset(&given, 0, sizeof(given));
	assert_int_equal(ans, 733 * PSB_FRAME_HLEN + mv);
	assert_int_equal(psb_kv_resend_cost(0, 1432), PSB_FRAME_HLEN);
	assert_int_equal(psb_kv_budget_derive(&b, &given, 1ull << 30, mv, 1432, 4, 2, err,
		sizeof(err)), 0);
	assert_true(b.resend_burst == 2 * ans);
	assert_true(b.resend_bps == PSB_KV_RESEND_BPS);
	given.resend_burst = ans;
	given.resend_bps = 123456789;
	assert_int_equal(psb_kv_budget_derive(&b, &given, 1ull << 30, mv, 1432, 4, 2, err,
		sizeof(err)), 0);
	assert_true(b.resend_burst == ans);
	assert_true(b.resend_bps == 123456789);
	/* a burst that cannot send one answer of max_value again is refused, by name */
	given.resend_burst = ans - 1;
	assert_int_equal(psb_kv_budget_derive(&b, &given, 1ull << 30, mv, 1432, 4, 2, err,
		sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "store.resend_burst"));
	assert_non_null(strstr(err, "node.max_value"));
}

/* Handler mode: what the handler was given. */
struct hand {
	struct psb_kv_req r[8];
	float val[8][20];
	unsigned int n;
	/* answer at once with this value, doubled, when set */
	struct psb_kv *now;
	struct tf_cap *cap;
};

static void
hand_req(void *arg, const struct psb_kv_req *r)
{
	struct hand *hd = arg;

	assert_true(hd->n < 8);
	assert_true(r->len <= sizeof(hd->val[0]));
	hd->r[hd->n] = *r;
	if (r->value != NULL)
		memcpy(hd->val[hd->n], r->value, r->len);
	hd->r[hd->n].value = hd->val[hd->n];
	if (hd->now != NULL) {
		float twice[20];
		uint32_t i;

		for (i = 0; i < r->len / sizeof(float); i++)
			twice[i] = 2 * hd->val[hd->n][i];
		assert_int_equal(psb_kv_respond(hd->now, r, twice, r->len, tf_cap_emit, hd->cap),
			0);
	}
	hd->n++;
}

static struct psb_kv *
kv_handler(uint16_t nw, struct hand *hd, uint64_t max_bytes)
{
	struct psb_kv_cfg cfg = {
		.num_workers = nw, .sync = 1, .max_value = 1024, .seg_size = SEG,
		.max_bytes = max_bytes, .epoch = 0x4a4d0001u, .request = hand_req,
		.request_arg = hd,
	};
	struct psb_kv *kv = psb_kv_create(&cfg);

	assert_non_null(kv);
	cur_epoch = cfg.epoch;
	return kv;
}

static void
test_handler(void **state)
{
	struct hand hd = { .n = 0 };
	struct psb_kv *kv = kv_handler(2, &hd, 0);
	const struct psb_kv_stats *st = psb_kv_stats(kv);
	struct tf_cap c = { .n = 0 };
	float v[20], w[3] = { 7, 8, 9 }, ans[5] = { 1, 2, 3, 4, 5 };
	struct psb_kv_req old;
	uint32_t i;

	(void)state;
	for (i = 0; i < 20; i++)
		v[i] = (float)i + 0.5f;
	/* a push of five segments, out of order: handed over once, whole; nothing answered */
	for (i = 0; i < 5; i++)
		assert_int_equal(send_seg(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 7, v, sizeof(v),
			(i * 3) % 5), 0);
	assert_int_equal(hd.n, 1);
	/* 0 3 1 4 2: the last before 2, which it names as lost; nothing else */
	assert_int_equal(c.n, 1);
	assert_int_equal(c.m[0].h.type, PSB_MSG_REPAIR_RESP);
	tf_cap_clear(&c);
	assert_int_equal(hd.r[0].type, PSB_MSG_PUSH);
	assert_int_equal(hd.r[0].sender, 0);
	assert_true(hd.r[0].key == 7);
	assert_int_equal(hd.r[0].len, sizeof(v));
	assert_memory_equal(hd.val[0], v, sizeof(v));
	assert_int_equal(psb_kv_nkeys(kv), 1);
	assert_int_equal(psb_kv_bytes(kv), 0);
	assert_true(psb_kv_get(kv, 7, NULL, NULL) == NULL);
	/* its retry and REPAIR while open: not answered, not handed over again */
	send_seg(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 7, v, sizeof(v), 0);
	send_repair(kv, &c, 0, 1, 7, PSB_MSG_PUSH, 0, 0, 0, 0, 0);
	assert_int_equal(c.n, 0);
	assert_int_equal(hd.n, 1);
	/* the answer: an ACK, whatever value it is given; a second answer is stale */
	assert_int_equal(psb_kv_respond(kv, &hd.r[0], ans, sizeof(ans), tf_cap_emit, &c), 0);
	assert_int_equal(c.n, 1);
	check_resp(&c.m[0], PSB_MSG_PUSH_ACK, 0, 1, 7, 1);
	assert_int_equal(psb_kv_respond(kv, &hd.r[0], NULL, 0, tf_cap_emit, &c), -ESTALE);
	assert_int_equal(st->answers_stale, 1);
	/* a retry now is acked again from what was answered */
	send_seg(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 7, v, sizeof(v), 0);
	assert_int_equal(c.n, 2);
	check_resp(&c.m[1], PSB_MSG_PUSH_ACK, 0, 1, 7, 1);

	/* a pull of a key never pushed: the handler's to answer, with any length */
	send_pull(kv, &c, 1, 1, 0, 9);
	assert_int_equal(hd.n, 2);
	assert_int_equal(hd.r[1].type, PSB_MSG_PULL);
	assert_true(hd.r[1].value == hd.val[1] && hd.r[1].sender == 1);
	assert_int_equal(psb_kv_respond(kv, &hd.r[1], ans, 6, tf_cap_emit, &c), -EINVAL);
	assert_int_equal(c.n, 2);
	assert_int_equal(psb_kv_respond(kv, &hd.r[1], ans, sizeof(ans), tf_cap_emit, &c), 0);
	assert_int_equal(c.n, 3);
	check_resp(&c.m[2], PSB_MSG_PULL_RESP, 1, 1, 9, 1);
	check_val(&c.m[2], ans, 5);
	/* the worker lacks segment 1 of that answer: that segment again, from the copy kept */
	memset(ans, 0, sizeof(ans));
	send_repair(kv, &c, 1, 1, 9, PSB_MSG_PULL, 1, 1, 1, 1, 0x1);
	assert_int_equal(c.n, 4);
	assert_int_equal(c.m[3].h.offset, SEG);
	assert_int_equal(c.m[3].h.seg_len, 4);
	assert_int_equal(c.m[3].h.total_len, 20);
	assert_int_equal(psb_kv_mem(kv) >= 64, 1);

	/* a pushpull of another length on key 7, answered in the handler itself */
	hd.now = kv;
	hd.cap = &c;
	send_value(kv, &c, PSB_MSG_PUSHPULL, 0, 2, 0, 7, w, sizeof(w));
	assert_int_equal(hd.n, 3);
	assert_int_equal(c.n, 5);
	check_resp(&c.m[4], PSB_MSG_PUSHPULL_RESP, 0, 2, 7, 2);
	{
		const float want[3] = { 14, 16, 18 };

		check_val(&c.m[4], want, 3);
	}
	hd.now = NULL;

	/* an open request superseded by the sender's next one: its late answer is not sent */
	send_pull(kv, &c, 1, 2, 0, 9);
	old = hd.r[3];
	send_pull(kv, &c, 1, 3, 0, 9);
	assert_int_equal(hd.n, 5);
	assert_int_equal(psb_kv_respond(kv, &old, w, sizeof(w), tf_cap_emit, &c), -ESTALE);
	assert_int_equal(c.n, 5);
	assert_int_equal(psb_kv_respond(kv, &hd.r[4], w, sizeof(w), tf_cap_emit, &c), 0);
	assert_int_equal(c.n, 6);
	check_val(&c.m[5], w, 3);

	/* the workers' liveness probe is the server's to answer, never the handler's */
	send_pull(kv, &c, 0, 3, 0, PSB_PROBE_KEY);
	assert_int_equal(hd.n, 5);
	assert_int_equal(c.n, 7);
	assert_int_equal(c.m[6].h.status, PSB_ST_NO_KEY);
	/* a value over max_value is refused before any handler sees it */
	{
		struct psb_hdr h = req_hdr(PSB_MSG_PUSH, 0, 4, 0, 11, 2048);
		struct psb_addr a = waddr(0);

		tf_seg(&h, 2048, 0, SEG);
		assert_int_equal(psb_kv_handle(kv, &h, v, &a, tf_cap_emit, &c), 0);
		assert_int_equal(c.m[7].h.status, PSB_ST_TOO_LARGE);
		assert_int_equal(hd.n, 5);
	}
	assert_int_equal(st->handed, 5);
	assert_int_equal(st->answered, 4);
	tf_cap_clear(&c);
	psb_kv_reset(kv);
	assert_int_equal(psb_kv_nkeys(kv), 0);
	psb_kv_free(kv);
}

/* Handler mode: answers are kept under max_bytes; one that does not fit ends in an error. */
static void
test_handler_budget(void **state)
{
	struct hand hd = { .n = 0 };
	struct psb_kv *kv = kv_handler(1, &hd, 4096);
	const struct psb_kv_stats *st = psb_kv_stats(kv);
	struct tf_cap c = { .n = 0 };
	static float big[256];	/* max_value: a kept copy goes over max_bytes */
	struct psb_addr a = waddr(0);

	(void)state;
	send_pull(kv, &c, 0, 1, 0, 5);
	assert_int_equal(hd.n, 1);
	assert_int_equal(psb_kv_respond(kv, &hd.r[0], big, sizeof(big), tf_cap_emit, &c), -ENOSPC);
	assert_int_equal(c.n, 1);
	check_error(&c.m[0], PSB_ST_NO_MEM, PSB_BUDGET_BYTES, &a, 0, 1, 5);
	assert_int_equal(st->answers_refused, 1);
	/* its retry gets the same error, and the handler does not see it again */
	send_pull(kv, &c, 0, 1, 0, 5);
	assert_int_equal(c.n, 2);
	check_error(&c.m[1], PSB_ST_NO_MEM, PSB_BUDGET_BYTES, &a, 0, 1, 5);
	assert_int_equal(hd.n, 1);
	/* outside handler mode there is nothing to answer */
	tf_cap_clear(&c);
	psb_kv_free(kv);
	kv = kv_new(1, 0, 0, 0);
	assert_int_equal(psb_kv_respond(kv, &hd.r[0], NULL, 0, tf_cap_emit, &c), -EPERM);
	psb_kv_free(kv);
}

/*
 * PSB_PROBE_KEY is no key's: a push or pull on it is answered NO_KEY at once in a store
 * (async or sync) and in handler mode, nothing is staged, kept or handed over, so a
 * peer's push on it never makes another's probe wait for a round or a handler.
 */
static void
test_probe_key(void **state)
{
	struct hand hd = { .n = 0 };
	struct tf_cap c = { .n = 0 };
	const float v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct psb_addr a0 = waddr(0), a1 = waddr(1);
	struct psb_kv *kv;
	uint32_t n, held, mode, base, nbits;
	uint64_t bytes;
	uint8_t flags;

	(void)state;
	for (mode = 0; mode < 3; mode++) {
		kv = mode == 2 ? kv_handler(2, &hd, 0) : kv_new(2, (int)mode, 0, 0);
		sync_flag = mode == 1;
		/* the first segment of a two-segment push: refused, nothing staged */
		assert_int_equal(send_seg(kv, &c, PSB_MSG_PUSH, 0, 1, 0, PSB_PROBE_KEY, v,
			sizeof(v), 0), 0);
		assert_int_equal(c.n, 1);
		check_error(&c.m[0], PSB_ST_NO_KEY, 0, &a0, 0, 1, PSB_PROBE_KEY);
		psb_kv_staged(kv, &n, &bytes, &held);
		assert_int_equal(n, 0);
		/* a whole one-segment pushpull, then the other worker's probe: NO_KEY at once */
		send_value(kv, &c, PSB_MSG_PUSHPULL, 0, 2, 0, PSB_PROBE_KEY, v, SEG);
		send_pull(kv, &c, 1, 1, 0, PSB_PROBE_KEY);
		assert_int_equal(c.n, 3);
		check_error(&c.m[1], PSB_ST_NO_KEY, 0, &a0, 0, 2, PSB_PROBE_KEY);
		check_error(&c.m[2], PSB_ST_NO_KEY, 0, &a1, 1, 1, PSB_PROBE_KEY);
		/* a REPAIR of it finds nothing: send it all again */
		send_repair(kv, &c, 0, 2, PSB_PROBE_KEY, PSB_MSG_PUSHPULL, 0, 0, 0, 0, 0);
		assert_int_equal(c.n, 4);
		assert_int_equal(c.m[3].h.type, PSB_MSG_REPAIR_RESP);
		(void)nack_bits(&c.m[3], &base, &nbits, &flags);
		assert_true(flags & PSB_REPAIR_ALL);
		assert_int_equal(psb_kv_nkeys(kv), 0);
		assert_null(psb_kv_get(kv, PSB_PROBE_KEY, NULL, NULL));
		assert_int_equal(hd.n, 0);
		assert_int_equal(psb_kv_stats(kv)->handed, 0);
		tf_cap_clear(&c);
		psb_kv_free(kv);
	}
	sync_flag = 0;
}

/* A clock that moves 2048 ns a reading, and jumps when told: round timing by hand. */
static uint64_t fake_now;

static uint64_t
fake_clock(void)
{
	return fake_now += 2048;
}

struct rounds_seen {
	unsigned int n;
	struct psb_kv_round r[4];
};

static void
round_seen(void *arg, const struct psb_kv_round *r)
{
	struct rounds_seen *rs = arg;

	assert_true(rs->n < 4);
	rs->r[rs->n++] = *r;
}

/*
 * Sync rounds timed as they close: the wait from the first push to the last, the time the
 * adds took, the round to its answers; a store times nothing unless told both how to say
 * it and which clock to read.
 */
static void
test_round_timing(void **state)
{
	struct rounds_seen rs = { .n = 0 };
	struct psb_kv_cfg cfg = {
		.num_workers = 2, .sync = 1, .seg_size = SEG, .epoch = 0x71e10001u,
		.round_closed = round_seen, .round_arg = &rs, .clock_ns = fake_clock,
	};
	struct tf_cap c = { .n = 0 };
	const float v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct psb_kv *kv;

	(void)state;
	cfg.clock_ns = NULL;
	assert_null(psb_kv_create(&cfg));
	cfg.clock_ns = fake_clock;
	cfg.round_closed = NULL;
	assert_null(psb_kv_create(&cfg));
	cfg.round_closed = round_seen;
	kv = psb_kv_create(&cfg);
	assert_non_null(kv);
	cur_epoch = cfg.epoch;
	sync_flag = 1;
	fake_now = 1000000000;
	/* w0's two-segment push, then 10 ms later w1's: the round closes */
	send_value(kv, &c, PSB_MSG_PUSH, 0, 1, 0, 5, v, sizeof(v));
	assert_int_equal(rs.n, 0);
	fake_now += 10000000;
	send_value(kv, &c, PSB_MSG_PUSHPULL, 1, 1, 0, 5, v, sizeof(v));
	assert_int_equal(rs.n, 1);
	assert_int_equal(c.n, 2);
	assert_true(rs.r[0].key == 5);
	assert_int_equal(rs.r[0].round, 0);
	assert_int_equal(rs.r[0].len, sizeof(v));
	/* 10 ms, and the few clock readings between: about a microsecond each */
	assert_in_range(rs.r[0].wait_us, 10000, 10020);
	/* two pushes' adds and the close's: three readings apart each, 2 us apiece */
	assert_in_range(rs.r[0].sum_us, 5, 8);
	assert_in_range(rs.r[0].round_us, rs.r[0].wait_us + 2, rs.r[0].wait_us + 20);
	/* the next round starts afresh */
	send_value(kv, &c, PSB_MSG_PUSH, 1, 2, 1, 5, v, sizeof(v));
	send_value(kv, &c, PSB_MSG_PUSH, 0, 2, 1, 5, v, sizeof(v));
	assert_int_equal(rs.n, 2);
	assert_int_equal(rs.r[1].round, 1);
	assert_in_range(rs.r[1].wait_us, 1, 20);
	assert_in_range(rs.r[1].sum_us, 5, 8);
	sync_flag = 0;
	tf_cap_clear(&c);
	psb_kv_free(kv);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_async_push_pull),
		cmocka_unit_test(test_multiseg),
		cmocka_unit_test(test_retry),
		cmocka_unit_test(test_repair),
		cmocka_unit_test(test_tail_probe),
		cmocka_unit_test(test_tail_probe_lossless),
		cmocka_unit_test(test_copy_on_write),
		cmocka_unit_test(test_req_id_wrap),
		cmocka_unit_test(test_sync_rounds),
		cmocka_unit_test(test_sync_pull_waits),
		cmocka_unit_test(test_sync_round_sums),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_create_invalid),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_reset_and_sum),
		cmocka_unit_test(test_shard_of),
		cmocka_unit_test(test_epoch_restart),
		cmocka_unit_test(test_batch_async),
		cmocka_unit_test(test_batch_retry),
		cmocka_unit_test(test_batch_bad_records),
		cmocka_unit_test(test_batch_small_cap),
		cmocka_unit_test(test_batch_sync),
		cmocka_unit_test(test_batch_errors),
		cmocka_unit_test(test_partial_then_restart),
		cmocka_unit_test(test_stage_timeout),
		cmocka_unit_test(test_peer_left),
		cmocka_unit_test(test_superseded),
		cmocka_unit_test(test_held_refs),
		cmocka_unit_test(test_budget_store),
		cmocka_unit_test(test_budget_reasm),
		cmocka_unit_test(test_resend_budget),
		cmocka_unit_test(test_resend_derive),
		cmocka_unit_test(test_handler),
		cmocka_unit_test(test_handler_budget),
		cmocka_unit_test(test_probe_key),
		cmocka_unit_test(test_round_timing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
