/* cmocka tests of the worker engine and benchmark driver (lib/wk) against a psb_kv fake server. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "psb_bench.h"
#include "psb_kv.h"
#include "psb_testframe.h"
#include "psb_wk.h"

#define SEG		16		/* segment stride on both sides: 4 floats */
#define WPORT		9432		/* worker r sends from port WPORT + r */
#define MAX_W		4
#define LOG_MAX		4096
#define RUN_MAX		1000000		/* messages one net_run may move */
#define BLOG_MAX	16		/* BATCH messages whose contents the net keeps */
#define BLOG_BYTES	512

/*
 * The fake network: a FIFO of messages in flight, both directions. Headers
 * travel encoded, as on the wire. Delivery happens only in net_run, never
 * inside a send or emit callback, so nothing is re-entrant.
 */
struct qmsg {
	struct qmsg *next;
	int to_server;
	uint16_t rank;			/* worker sending, or receiving */
	uint8_t hdr[PSB_HDR_LEN];
	uint16_t len;
	uint8_t data[];
};

struct sent_rec {
	uint16_t rank;
	uint8_t type;
	uint32_t req_id;
	uint32_t offset;
};

/* A BATCH the transport accepted: its header and records. */
struct sent_batch {
	struct psb_hdr h;
	uint8_t data[BLOG_BYTES];
};

struct net {
	struct psb_kv *kv;
	struct psb_wk *wk[MAX_W];
	uint64_t now;
	struct qmsg *head, *tail;
	long credits;			/* messages the transport still takes; <0: any */
	int blackhole;			/* drop every request */
	/*
	 * Loss: about one message in k is dropped (0: none), picked by a
	 * fixed-seed xorshift per direction, so the pattern is the same on every
	 * run. A strict every-k-th rule would lock into step with the engine's
	 * retransmissions (all requests time out in the same scan and are resent
	 * in the same order) and drop the same segment on every attempt.
	 */
	unsigned int drop_req_every;
	unsigned int drop_resp_every;
	uint32_t rng_req, rng_resp;
	int strict;			/* drop exactly every k-th message instead */
	unsigned int corrupt_at;	/* add 1 to the first float of value segment n (1-based) */
	unsigned int nvalsegs;
	unsigned int repair_emits;	/* answer segments the server sent again for a REPAIR */
	uint64_t drop_req_at, drop_resp_at;	/* lose exactly the n-th request / response (1-based) */
	uint64_t nreq, nresp;
	uint64_t dropped_req, dropped_resp;
	struct sent_rec log[LOG_MAX];	/* requests the transport accepted */
	unsigned int nlog;
	/* Batching: the server answers a BATCH's sender in one BATCH_RESP of batch_cap bytes. */
	size_t batch_cap;
	int drop_batches;		/* lose every BATCH */
	int drop_batch_resps;		/* lose every BATCH_RESP */
	unsigned int nbatch;		/* BATCH messages accepted */
	unsigned int nbatch_resp;	/* BATCH_RESP messages sent */
	struct sent_batch blog[BLOG_MAX];
};

/* send_arg of one worker. */
struct port {
	struct net *net;
	uint16_t rank;
};

static struct psb_addr
waddr(uint16_t r)
{
	return tf_addr((uint8_t)(r + 1), 0xc6120000u + 10 + r, (uint16_t)(WPORT + r));
}

static int
drop(uint32_t *st, unsigned int every)
{
	uint32_t x = *st;

	if (every == 0)
		return 0;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*st = x;
	return x % every == 0;
}

static void
enqueue(struct net *n, int to_server, uint16_t rank, const struct psb_hdr *h, const void *data)
{
	struct qmsg *m = malloc(sizeof(*m) + h->seg_len);

	assert_non_null(m);
	m->next = NULL;
	m->to_server = to_server;
	m->rank = rank;
	psb_hdr_encode(m->hdr, h);
	m->len = h->seg_len;
	if (h->seg_len != 0)
		memcpy(m->data, data, h->seg_len);
	if (n->tail != NULL)
		n->tail->next = m;
	else
		n->head = m;
	n->tail = m;
}

/* Worker -> server. */
static int
net_send(void *arg, const struct psb_hdr *h, const void *payload)
{
	struct port *p = arg;
	struct net *n = p->net;

	/* the engine only ever sends segments a receiver accepts */
	assert_int_equal(psb_hdr_check_segment(h, h->seg_len), 0);
	assert_int_equal(h->sender, p->rank);
	if (n->credits == 0)
		return -ENOBUFS;
	if (n->credits > 0)
		n->credits--;
	if (n->nlog < LOG_MAX) {
		n->log[n->nlog].rank = p->rank;
		n->log[n->nlog].type = h->type;
		n->log[n->nlog].req_id = h->req_id;
		n->log[n->nlog].offset = h->offset;
		n->nlog++;
	}
	if (h->type == PSB_MSG_BATCH) {
		if (n->nbatch < BLOG_MAX && h->seg_len <= BLOG_BYTES) {
			n->blog[n->nbatch].h = *h;
			memcpy(n->blog[n->nbatch].data, payload, h->seg_len);
		}
		n->nbatch++;
		if (n->drop_batches) {
			n->dropped_req++;
			return 0;
		}
	}
	n->nreq++;
	if (n->nreq == n->drop_req_at) {
		n->dropped_req++;
		return 0;
	}
	if (n->blackhole || (n->strict ? n->drop_req_every != 0 &&
	    n->nreq % n->drop_req_every == 0 : drop(&n->rng_req, n->drop_req_every))) {
		n->dropped_req++;
		return 0;
	}
	enqueue(n, 1, p->rank, h, payload);
	return 0;
}

/* Whether the next response message is lost. */
static int
resp_lost(struct net *n)
{
	n->nresp++;
	if (n->nresp == n->drop_resp_at) {
		n->dropped_resp++;
		return 1;
	}
	if (n->strict ? n->drop_resp_every != 0 && n->nresp % n->drop_resp_every == 0 :
	    drop(&n->rng_resp, n->drop_resp_every)) {
		n->dropped_resp++;
		return 1;
	}
	return 0;
}

/* Server -> worker: cut the response into segments, as the appliance does. */
static void
net_emit(void *arg, const struct psb_addr *to, struct psb_hdr *h, const void *value)
{
	struct net *n = arg;
	uint16_t rank = (uint16_t)(to->port - WPORT);
	uint32_t i, nseg = h->total_len == 0 ? 1 : psb_seg_count(h->total_len, h->seg_size);
	uint32_t first = 0;

	assert_true(rank < MAX_W);
	if (h->seg_len != 0) {
		/* a repair: the one segment at h->offset */
		assert_int_equal(h->offset % h->seg_size, 0);
		first = h->offset / h->seg_size;
		nseg = first + 1;
		n->repair_emits++;
	}
	for (i = first; i < nseg; i++) {
		struct psb_hdr s = *h;
		uint32_t rest;

		s.offset = i * h->seg_size;
		rest = h->total_len - s.offset;
		s.seg_len = (uint16_t)(h->total_len == 0 ? 0 : rest < h->seg_size ? rest :
			h->seg_size);
		assert_int_equal(psb_hdr_check_segment(&s, s.seg_len), 0);
		if (resp_lost(n))
			continue;
		enqueue(n, 0, rank, &s,
			s.seg_len != 0 ? (const uint8_t *)value + s.offset : NULL);
		if (s.seg_len != 0 && ++n->nvalsegs == n->corrupt_at) {
			float f;

			memcpy(&f, n->tail->data, sizeof(f));
			f += 1.0f;
			memcpy(n->tail->data, &f, sizeof(f));
		}
	}
}

/* A BATCH at the server: answers to its sender go back as one BATCH_RESP, as the appliance does. */
static void
net_batch(struct net *n, const struct psb_hdr *h, const uint8_t *data, uint16_t rank)
{
	static uint8_t out[PSB_MAX_UDP_PAYLOAD];
	struct psb_addr from = waddr(rank);
	struct psb_hdr r;
	size_t len = 0;

	assert_true(n->batch_cap <= sizeof(out));
	assert_true(psb_kv_handle_batch(n->kv, h, data, &from, out, n->batch_cap, &len,
		net_emit, n) >= 0);
	assert_true(len <= n->batch_cap);
	if (len == 0)
		return;
	psb_hdr_batch_resp(&r, h, (uint16_t)len);
	assert_int_equal(psb_hdr_check_segment(&r, len), 0);
	n->nbatch_resp++;
	if (resp_lost(n) || n->drop_batch_resps)
		return;
	enqueue(n, 0, rank, &r, out);
}

/* Deliver everything in flight, including what the deliveries cause. */
static void
net_run(struct net *n)
{
	unsigned int moved = 0;

	while (n->head != NULL) {
		struct qmsg *m = n->head;
		struct psb_hdr h;

		n->head = m->next;
		if (n->head == NULL)
			n->tail = NULL;
		psb_hdr_decode(&h, m->hdr);
		if (m->to_server)
			psb_kv_tick(n->kv, n->now);
		if (m->to_server && h.type == PSB_MSG_BATCH) {
			net_batch(n, &h, m->data, m->rank);
		} else if (m->to_server) {
			struct psb_addr from = waddr(m->rank);

			assert_int_equal(psb_kv_handle(n->kv, &h, m->data, &from, net_emit, n), 0);
		} else {
			assert_non_null(n->wk[m->rank]);
			psb_wk_input(n->wk[m->rank], &h, m->data, n->now);
		}
		free(m);
		assert_true(++moved < RUN_MAX);
	}
}

static void
net_flush(struct net *n)
{
	while (n->head != NULL) {
		struct qmsg *m = n->head;

		n->head = m->next;
		free(m);
	}
	n->tail = NULL;
}

/*
 * The fake server's store: resends bounded as psb bounds them by default (two answers of
 * the largest value, NET_MAX_VALUE, at once and PSB_KV_RESEND_BPS), which an honest worker
 * never runs into, loss or not: net_free checks that nothing was refused.
 */
#define NET_MAX_VALUE	8192

static struct psb_kv *
net_kv(struct psb_kv_cfg *kc)
{
	const struct psb_kv_budget given = { .max_bytes = 0 };
	struct psb_kv_budget b;
	struct psb_kv *kv;
	char err[256];

	assert_int_equal(psb_kv_budget_derive(&b, &given, 1u << 30, NET_MAX_VALUE, SEG,
		kc->num_workers, 1, err, sizeof(err)), 0);
	kc->max_value = NET_MAX_VALUE;
	kc->resend_burst = b.resend_burst;
	kc->resend_bps = b.resend_bps;
	kv = psb_kv_create(kc);
	assert_non_null(kv);
	return kv;
}

static struct net *
net_new(uint16_t nw, int sync)
{
	struct psb_kv_cfg kc = { .num_workers = nw, .sync = sync, .seg_size = SEG };
	struct net *n = calloc(1, sizeof(*n));

	assert_non_null(n);
	n->kv = net_kv(&kc);
	assert_non_null(n->kv);
	n->credits = -1;
	n->batch_cap = 1024;
	n->now = 1000000;
	n->rng_req = 0x9e3779b9u;
	n->rng_resp = 0x7f4a7c15u;
	return n;
}

static void
net_free(struct net *n)
{
	const struct psb_kv_stats *ks = psb_kv_stats(n->kv);
	unsigned int k;

	for (k = 0; k < PSB_KV_RESEND_MAX; k++)
		assert_int_equal(ks->resend_over_budget[k], 0);
	net_flush(n);
	psb_kv_free(n->kv);
	free(n);
}

/* Completed ops, in completion order. */
struct done_log {
	struct psb_wk_op *ops[256];
	unsigned int n;
};

static void
on_done(void *arg, struct psb_wk_op *op)
{
	struct done_log *d = arg;

	assert_true(d->n < 256);
	d->ops[d->n++] = op;
}

static struct psb_wk *
wk_new(struct net *n, struct port *p, uint16_t rank, int sync, uint32_t window,
		uint64_t timeout_ns, uint32_t max_retries, struct done_log *d)
{
	struct psb_wk_cfg cfg = {
		.rank = rank,
		.sync = sync,
		.seg_size = SEG,
		.window = window,
		.timeout_ns = timeout_ns,
		.max_retries = max_retries,
		.send = net_send,
		.send_arg = p,
		.done = on_done,
		.done_arg = d,
	};
	struct psb_wk *wk;

	p->net = n;
	p->rank = rank;
	wk = psb_wk_create(&cfg);
	assert_non_null(wk);
	n->wk[rank] = wk;
	return wk;
}

static void
op_init(struct psb_wk_op *op, uint8_t type, uint64_t key, uint32_t len, const float *in,
		float *out)
{
	memset(op, 0, sizeof(*op));
	op->type = type;
	op->key = key;
	op->len = len;
	op->in = in;
	op->out = out;
}

static void
fill(float *v, unsigned int n, float base)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		v[i] = base + 0.5f * (float)i;
}

static void
check_floats(const float *got, const float *want, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		assert_true(got[i] == want[i]);
}

static void
test_roundtrip(void **state)
{
	struct net *n = net_new(1, 0);
	struct port p;
	struct done_log d = { .n = 0 };
	struct psb_wk *wk = wk_new(n, &p, 0, 0, 8, 1000000, 3, &d);
	float in[10], in2[10], out[10], want[10], small[4];
	struct psb_wk_op op, op2;
	const struct psb_wk_stats *st = psb_wk_stats(wk);
	unsigned int i;

	(void)state;
	fill(in, 10, 1.0f);
	fill(in2, 10, -3.0f);

	/* push: 3 segments out, an ack back; rtt is the fake clock's difference */
	op_init(&op, PSB_MSG_PUSH, 77, sizeof(in), in, NULL);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), 0);
	assert_int_equal(psb_wk_inflight(wk), 1);
	assert_int_equal(n->nlog, 3);
	n->now += 1234;
	net_run(n);
	assert_int_equal(d.n, 1);
	assert_ptr_equal(d.ops[0], &op);
	assert_int_equal(op.status, 0);
	assert_int_equal(op.out_round, 1);
	assert_int_equal(op.rtt_ns, 1234);
	assert_int_equal(op.retries, 0);
	assert_int_equal(psb_wk_inflight(wk), 0);

	/* pull: the value back in 3 segments */
	memset(out, 0xff, sizeof(out));
	op_init(&op, PSB_MSG_PULL, 77, sizeof(out), NULL, out);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), 0);
	n->now += 500;
	net_run(n);
	assert_int_equal(d.n, 2);
	assert_int_equal(op.status, 0);
	assert_int_equal(op.out_len, sizeof(in));
	assert_int_equal(op.out_round, 1);
	assert_int_equal(op.rtt_ns, 500);
	check_floats(out, in, 10);

	/* pushpull: the sum including this push */
	memset(out, 0, sizeof(out));
	op_init(&op, PSB_MSG_PUSHPULL, 77, sizeof(in2), in2, out);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), 0);
	net_run(n);
	assert_int_equal(d.n, 3);
	assert_int_equal(op.status, 0);
	assert_int_equal(op.out_len, sizeof(in2));
	assert_int_equal(op.out_round, 2);
	for (i = 0; i < 10; i++)
		want[i] = in[i] + in2[i];
	check_floats(out, want, 10);

	/* two keys in flight at once, completing independently */
	op_init(&op, PSB_MSG_PUSH, 1, 8, in, NULL);
	op_init(&op2, PSB_MSG_PUSHPULL, 2, 12, in2, small);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), 0);
	assert_int_equal(psb_wk_submit(wk, &op2, n->now), 0);
	assert_int_equal(psb_wk_inflight(wk), 2);
	net_run(n);
	assert_int_equal(d.n, 5);
	assert_int_equal(op.status, 0);
	assert_int_equal(op2.status, 0);
	check_floats(small, in2, 3);

	/* a pull that discards the value still completes */
	op_init(&op, PSB_MSG_PULL, 77, sizeof(out), NULL, NULL);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), 0);
	net_run(n);
	assert_int_equal(d.n, 6);
	assert_int_equal(op.status, 0);
	assert_int_equal(op.out_len, sizeof(in));

	/* a value larger than the destination: LEN_MISMATCH, nothing written past it */
	memset(small, 0, sizeof(small));
	op_init(&op, PSB_MSG_PULL, 77, 8, NULL, small);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), 0);
	net_run(n);
	assert_int_equal(d.n, 7);
	assert_int_equal(op.status, PSB_ST_LEN_MISMATCH);
	assert_int_equal(op.err_aux, sizeof(in));
	assert_true(small[2] == 0.0f && small[3] == 0.0f);

	/* the server saw each push once */
	assert_int_equal(psb_kv_stats(n->kv)->bytes_summed, 40 + 40 + 8 + 12);
	assert_int_equal(st->submitted, 7);
	assert_int_equal(st->completed, 6);
	assert_int_equal(st->failed, 1);
	assert_int_equal(st->retries, 0);
	/* the two segments after the failing one found no request any more */
	assert_int_equal(st->stray, 2);
	assert_int_equal(st->msgs_sent, n->nlog);

	/* invalid requests */
	op_init(&op, PSB_MSG_REGISTER, 1, 8, in, NULL);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), -EINVAL);
	op_init(&op, PSB_MSG_PUSH_ACK, 1, 8, in, NULL);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), -EINVAL);
	op_init(&op, PSB_MSG_PUSH, 1, 0, in, NULL);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), -EINVAL);
	op_init(&op, PSB_MSG_PUSH, 1, 6, in, NULL);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), -EINVAL);
	op_init(&op, PSB_MSG_PUSHPULL, 1, 8, NULL, out);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), -EINVAL);
	assert_int_equal(psb_wk_inflight(wk), 0);
	assert_int_equal(st->submitted, 7);
	psb_wk_free(wk);
	net_free(n);
}

static void
test_create_invalid(void **state)
{
	struct done_log d = { .n = 0 };
	struct port p = { .net = NULL, .rank = 0 };
	struct psb_wk_cfg cfg = {
		.seg_size = SEG, .window = 4, .send = net_send, .send_arg = &p,
		.done = on_done, .done_arg = &d,
	};
	struct psb_wk_cfg c;

	(void)state;
	c = cfg;
	c.window = 0;
	assert_null(psb_wk_create(&c));
	c.window = PSB_WK_MAX_WINDOW + 1;
	assert_null(psb_wk_create(&c));
	c = cfg;
	c.send = NULL;
	assert_null(psb_wk_create(&c));
	c = cfg;
	c.done = NULL;
	assert_null(psb_wk_create(&c));
	c = cfg;
	c.seg_size = 10;
	assert_null(psb_wk_create(&c));
	c.seg_size = 0;
	assert_null(psb_wk_create(&c));
	c = cfg;
	c.window = PSB_WK_MAX_WINDOW;
	psb_wk_free(psb_wk_create(&c));
	psb_wk_free(NULL);
}

static void
test_window_full(void **state)
{
	struct net *n = net_new(1, 0);
	struct port p;
	struct done_log d = { .n = 0 };
	struct psb_wk *wk = wk_new(n, &p, 0, 0, 2, 1000000, 3, &d);
	float in[2] = { 1.0f, 2.0f };
	struct psb_wk_op op[3];

	(void)state;
	op_init(&op[0], PSB_MSG_PUSH, 1, 8, in, NULL);
	op_init(&op[1], PSB_MSG_PUSH, 2, 8, in, NULL);
	op_init(&op[2], PSB_MSG_PUSH, 3, 8, in, NULL);
	assert_int_equal(psb_wk_submit(wk, &op[0], n->now), 0);
	assert_int_equal(psb_wk_submit(wk, &op[1], n->now), 0);
	assert_int_equal(psb_wk_submit(wk, &op[2], n->now), -EBUSY);
	assert_int_equal(psb_wk_inflight(wk), 2);
	assert_int_equal(psb_wk_stats(wk)->submitted, 2);
	assert_int_equal(n->nlog, 2);
	net_run(n);
	assert_int_equal(d.n, 2);
	assert_int_equal(psb_wk_inflight(wk), 0);
	/* room again: slots are reused */
	assert_int_equal(psb_wk_submit(wk, &op[2], n->now), 0);
	assert_int_equal(psb_wk_submit(wk, &op[0], n->now), 0);
	net_run(n);
	assert_int_equal(d.n, 4);
	assert_int_equal(op[2].status, 0);
	assert_int_equal(op[0].status, 0);
	assert_int_equal(op[0].out_round, 2);
	psb_wk_free(wk);
	net_free(n);
}

static void
test_send_blocked(void **state)
{
	struct net *n = net_new(1, 0);
	struct port p;
	struct done_log d = { .n = 0 };
	struct psb_wk *wk = wk_new(n, &p, 0, 0, 8, 1000, 3, &d);
	const struct psb_wk_stats *st = psb_wk_stats(wk);
	float a[10], b[2], c[5], outc[5], outd[10], wantc[5];
	struct psb_wk_op op[4];
	/* accepted sends, in order: A0 A1 | A2 B0 | C0 C1 D */
	static const struct { int op; uint32_t off; } order[] = {
		{ 0, 0 }, { 0, 16 }, { 0, 32 }, { 1, 0 }, { 2, 0 }, { 2, 16 }, { 3, 0 },
	};
	unsigned int i;

	(void)state;
	fill(a, 10, 2.0f);
	fill(b, 2, 7.0f);
	fill(c, 5, -1.0f);

	/* the transport takes two messages, then is full */
	n->credits = 2;
	op_init(&op[0], PSB_MSG_PUSH, 1, sizeof(a), a, NULL);
	op_init(&op[1], PSB_MSG_PUSH, 2, sizeof(b), b, NULL);
	op_init(&op[2], PSB_MSG_PUSHPULL, 3, sizeof(c), c, outc);
	assert_int_equal(psb_wk_submit(wk, &op[0], n->now), 0);
	assert_int_equal(n->nlog, 2);
	assert_int_equal(st->send_blocked, 1);
	/* later requests queue behind the blocked one, even once there is room */
	n->credits = -1;
	assert_int_equal(psb_wk_submit(wk, &op[1], n->now), 0);
	assert_int_equal(psb_wk_submit(wk, &op[2], n->now), 0);
	assert_int_equal(n->nlog, 2);
	n->credits = 0;
	net_run(n);
	assert_int_equal(d.n, 0);	/* A is not complete at the server */

	/* room for two: A's last segment and B */
	n->credits = 2;
	psb_wk_poll(wk, n->now);
	assert_int_equal(n->nlog, 4);
	net_run(n);
	assert_int_equal(d.n, 2);
	assert_int_equal(op[0].status, 0);
	assert_int_equal(op[1].status, 0);

	/* the transport is full at submit time: D waits too */
	op_init(&op[3], PSB_MSG_PULL, 1, sizeof(outd), NULL, outd);
	assert_int_equal(psb_wk_submit(wk, &op[3], n->now), 0);
	assert_int_equal(n->nlog, 4);
	/* blocked requests are not timed out while they wait for the transport */
	n->now += 10 * 1000;
	psb_wk_poll(wk, n->now);
	assert_int_equal(st->retries, 0);
	assert_int_equal(st->failed, 0);
	n->credits = -1;
	psb_wk_poll(wk, n->now);
	assert_int_equal(n->nlog, 7);
	net_run(n);
	assert_int_equal(d.n, 4);
	assert_int_equal(op[2].status, 0);
	assert_int_equal(op[3].status, 0);
	check_floats(outc, c, 5);
	check_floats(outd, a, 10);

	/* in order, nothing lost, nothing sent twice */
	assert_int_equal(n->nlog, sizeof(order) / sizeof(order[0]));
	for (i = 0; i < n->nlog; i++) {
		assert_int_equal(n->log[i].type, op[order[i].op].type);
		assert_int_equal(n->log[i].offset, order[i].off);
	}
	assert_int_equal(n->log[0].req_id, n->log[2].req_id);
	assert_true(n->log[2].req_id != n->log[3].req_id);
	assert_int_equal(n->log[4].req_id, n->log[5].req_id);
	assert_int_equal(st->msgs_sent, 7);
	assert_true(st->send_blocked >= 3);
	assert_int_equal(psb_kv_stats(n->kv)->dup_segs, 0);
	{
		uint32_t len;
		const float *v = psb_kv_get(n->kv, 1, &len, NULL);

		assert_non_null(v);
		assert_int_equal(len, sizeof(a));
		check_floats(v, a, 10);
		v = psb_kv_get(n->kv, 3, &len, NULL);
		assert_non_null(v);
		for (i = 0; i < 5; i++)
			wantc[i] = c[i];
		check_floats(v, wantc, 5);
	}
	psb_wk_free(wk);
	net_free(n);
}

/* The ERROR reply finishes a request whose blocked segments were still queued. */
static void
test_error_while_blocked(void **state)
{
	struct net *n = net_new(1, 0);
	struct port p;
	struct done_log d = { .n = 0 };
	struct psb_wk *wk = wk_new(n, &p, 0, 0, 1, 1000, 3, &d);
	float a[10], b[2];
	struct psb_wk_op op[3];

	(void)state;
	fill(a, 10, 1.0f);
	fill(b, 2, 3.0f);
	op_init(&op[0], PSB_MSG_PUSH, 5, 8, b, NULL);
	assert_int_equal(psb_wk_submit(wk, &op[0], n->now), 0);
	net_run(n);
	assert_int_equal(op[0].status, 0);

	/* wrong length: the first segment gets an ERROR while the rest wait */
	n->credits = 1;
	op_init(&op[1], PSB_MSG_PUSH, 5, sizeof(a), a, NULL);
	assert_int_equal(psb_wk_submit(wk, &op[1], n->now), 0);
	net_run(n);
	assert_int_equal(d.n, 2);
	assert_int_equal(op[1].status, PSB_ST_LEN_MISMATCH);
	assert_int_equal(op[1].err_aux, 8);
	/* the slot is free again and its reuse is sent, not the old op's remains */
	n->credits = -1;
	op_init(&op[2], PSB_MSG_PULL, 5, sizeof(b), NULL, b);
	assert_int_equal(psb_wk_submit(wk, &op[2], n->now), 0);
	psb_wk_poll(wk, n->now);
	net_run(n);
	assert_int_equal(d.n, 3);
	assert_int_equal(op[2].status, 0);
	assert_int_equal(op[2].out_len, 8);
	assert_int_equal(n->nlog, 1 + 1 + 1);
	assert_int_equal(psb_wk_inflight(wk), 0);
	psb_wk_free(wk);
	net_free(n);
}

#define LK	4	/* keys */
#define LOPS	12	/* requests per key, one at a time */

struct loss_key {
	uint64_t key;
	unsigned int nfl;		/* floats */
	float in[64];
	float out[64];
	struct psb_wk_op op;
	unsigned int next;		/* next request index */
	unsigned int pushes;		/* pushes completed */
	int busy;
	unsigned int checked;
};

static uint8_t
loss_type(unsigned int j)
{
	static const uint8_t t[3] = { PSB_MSG_PUSH, PSB_MSG_PUSHPULL, PSB_MSG_PULL };

	return t[j % 3];
}

static void
loss_done(void *arg, struct psb_wk_op *op)
{
	struct loss_key *k = op->user;
	unsigned int i, m;

	(void)arg;
	assert_int_equal(op->status, 0);
	assert_true(k->busy);
	if (op->type != PSB_MSG_PULL)
		k->pushes++;
	m = k->pushes;
	/* async: round = pushes applied; the value = that many pushes, added once each */
	assert_int_equal(op->out_round, m);
	if (op->type != PSB_MSG_PUSH) {
		assert_int_equal(op->out_len, k->nfl * sizeof(float));
		for (i = 0; i < k->nfl; i++)
			assert_true(k->out[i] == (float)m * k->in[i]);
	}
	k->busy = 0;
	k->next++;
	k->checked++;
}

/*
 * LOPS requests on each of nkeys keys, one at a time per key, over a network
 * dropping messages (strict: exactly every k-th).
 */
static void
run_loss(unsigned int drop_req, unsigned int drop_resp, int strict, unsigned int nkeys)
{
	struct net *n = net_new(1, 0);
	struct port p;
	struct psb_wk_cfg cfg = {
		.rank = 0, .seg_size = SEG, .window = LK, .timeout_ns = 10000,
		.max_retries = 0, .send = net_send, .send_arg = &p, .done = loss_done,
	};
	static const unsigned int nfl[LK] = { 19, 27, 43, 51 };
	struct loss_key *keys = calloc(LK, sizeof(*keys));
	const struct psb_kv_stats *ks = psb_kv_stats(n->kv);
	const struct psb_wk_stats *st;
	struct psb_wk *wk;
	uint64_t push_ops = 0, pushpull_ops = 0, push_bytes = 0;
	unsigned int iter, k, left = nkeys * LOPS;

	assert_non_null(keys);
	p.net = n;
	p.rank = 0;
	wk = psb_wk_create(&cfg);
	assert_non_null(wk);
	n->wk[0] = wk;
	st = psb_wk_stats(wk);
	n->drop_req_every = drop_req;
	n->drop_resp_every = drop_resp;
	n->strict = strict;
	for (k = 0; k < nkeys; k++) {
		keys[k].key = 1000 + k;
		/* 5, 7, 11 and 13 segments: prime to every drop period used, so a
		 * fixed loss pattern cannot hit the same segment on every resend */
		keys[k].nfl = nfl[k];
		fill(keys[k].in, keys[k].nfl, (float)(k + 1));
	}
	for (iter = 0; iter < 100000 && left != 0; iter++) {
		for (k = 0; k < nkeys; k++) {
			struct loss_key *lk = &keys[k];
			uint8_t t;

			if (lk->busy || lk->next >= LOPS)
				continue;
			t = loss_type(lk->next);
			op_init(&lk->op, t, lk->key, lk->nfl * sizeof(float),
				t != PSB_MSG_PULL ? lk->in : NULL,
				t != PSB_MSG_PUSH ? lk->out : NULL);
			lk->op.user = lk;
			memset(lk->out, 0xff, sizeof(lk->out));
			assert_int_equal(psb_wk_submit(wk, &lk->op, n->now), 0);
			lk->busy = 1;
			left--;
			if (t == PSB_MSG_PUSH)
				push_ops++;
			if (t == PSB_MSG_PUSHPULL)
				pushpull_ops++;
			if (t != PSB_MSG_PULL)
				push_bytes += lk->nfl * sizeof(float);
		}
		net_run(n);
		n->now += 5000;
		psb_wk_poll(wk, n->now);
	}
	/* drain the last ones */
	for (; iter < 100000 && psb_wk_inflight(wk) != 0; iter++) {
		net_run(n);
		n->now += 5000;
		psb_wk_poll(wk, n->now);
	}
	print_message("loss %u/%u%s: %u iterations, dropped %llu/%llu, retries %llu\n", drop_req,
		drop_resp, strict ? " strict" : "", iter, (unsigned long long)n->dropped_req,
		(unsigned long long)n->dropped_resp, (unsigned long long)st->retries);
	assert_int_equal(left, 0);
	assert_int_equal(psb_wk_inflight(wk), 0);
	for (k = 0; k < nkeys; k++) {
		uint32_t len, round, i;
		const float *v = psb_kv_get(n->kv, keys[k].key, &len, &round);

		assert_int_equal(keys[k].checked, LOPS);
		assert_non_null(v);
		assert_int_equal(len, keys[k].nfl * sizeof(float));
		assert_int_equal(round, keys[k].pushes);
		assert_int_equal(keys[k].pushes, 2 * LOPS / 3);
		for (i = 0; i < keys[k].nfl; i++)
			assert_true(v[i] == (float)keys[k].pushes * keys[k].in[i]);
	}
	/* every push applied exactly once although many were sent more than once */
	assert_int_equal(ks->req[PSB_MSG_PUSH], push_ops);
	assert_int_equal(ks->req[PSB_MSG_PUSHPULL], pushpull_ops);
	assert_int_equal(ks->bytes_summed, push_bytes);
	assert_int_equal(st->completed, nkeys * LOPS);
	assert_int_equal(st->failed, 0);
	if (drop_req != 0 || drop_resp != 0) {
		assert_true(n->dropped_req + n->dropped_resp > 0);
		assert_true(st->retries > 0);
		assert_true(ks->retries_answered + ks->dup_segs + ks->nacks > 0);
	} else {
		assert_int_equal(st->retries, 0);
	}
	psb_wk_free(wk);
	free(keys);
	net_free(n);
}

static void
test_loss(void **state)
{
	(void)state;
	run_loss(0, 0, 0, LK);
	run_loss(3, 0, 0, LK);
	run_loss(0, 4, 0, LK);
	run_loss(3, 4, 0, LK);
	run_loss(2, 3, 0, LK);
	run_loss(4, 2, 0, LK);
	/* one key (5 segments) in flight: a strict every-k-th pattern shifts on each resend */
	run_loss(3, 0, 1, 1);
	run_loss(0, 4, 1, 1);
	run_loss(3, 4, 1, 1);
	run_loss(2, 3, 1, 1);
}

/*
 * One segment lost each way. Before the last: the last's arrival tells, and only that
 * segment goes again at once, the push's to the server (it names it, unasked) and the
 * answer's to the worker (it asks). The last itself: the timeout asks what is missing.
 */
static void
test_repair(void **state)
{
	struct net *n = net_new(1, 0);
	struct port p;
	struct done_log d = { .n = 0 };
	struct psb_wk *wk = wk_new(n, &p, 0, 0, 4, 1000, 5, &d);
	const struct psb_wk_stats *st = psb_wk_stats(wk);
	const struct psb_kv_stats *kst = psb_kv_stats(n->kv);
	float a[20], out[20];
	struct psb_wk_op op;
	uint64_t t = n->now;

	(void)state;
	fill(a, 20, 1.0f);
	/* push: 5 segments, the third lost: named as the fifth arrives, sent again, acked */
	n->drop_req_at = 3;
	op_init(&op, PSB_MSG_PUSH, 9, sizeof(a), a, NULL);
	assert_int_equal(psb_wk_submit(wk, &op, t), 0);
	net_run(n);
	assert_int_equal(d.n, 1);
	assert_int_equal(op.status, 0);
	assert_int_equal(op.retries, 0);
	assert_int_equal(kst->early_nacks, 1);
	assert_int_equal(st->nacks, 1);
	assert_int_equal(st->repairs, 0);
	assert_int_equal(st->repair_segs, 1);
	assert_int_equal(st->resends, 0);
	assert_int_equal(n->nlog, 6);
	assert_int_equal(n->log[5].type, PSB_MSG_PUSH);
	assert_int_equal(n->log[5].offset, 2 * SEG);
	assert_int_equal(kst->req[PSB_MSG_PUSH], 1);

	/* push of another key, its last segment lost: nothing tells but the timeout */
	n->drop_req_at = n->nreq + 5;
	op_init(&op, PSB_MSG_PUSH, 10, sizeof(a), a, NULL);
	t += 10000;
	assert_int_equal(psb_wk_submit(wk, &op, t), 0);
	net_run(n);
	assert_int_equal(d.n, 1);
	psb_wk_poll(wk, t + 1300);
	assert_int_equal(st->repairs, 1);
	assert_int_equal(n->log[11].type, PSB_MSG_REPAIR);
	net_run(n);	/* REPAIR_RESP: segment 4; then the ack */
	assert_int_equal(d.n, 2);
	assert_int_equal(op.status, 0);
	assert_int_equal(op.retries, 1);
	assert_int_equal(st->nacks, 2);
	assert_int_equal(st->repair_segs, 2);
	assert_int_equal(n->log[12].type, PSB_MSG_PUSH);
	assert_int_equal(n->log[12].offset, 4 * SEG);
	assert_int_equal(kst->early_nacks, 1);

	/* pull: the answer's fourth segment lost: asked for as the fifth arrives */
	n->drop_resp_at = n->nresp + 4;
	op_init(&op, PSB_MSG_PULL, 9, sizeof(out), NULL, out);
	t += 10000;
	assert_int_equal(psb_wk_submit(wk, &op, t), 0);
	net_run(n);
	assert_int_equal(d.n, 3);
	assert_int_equal(op.status, 0);
	assert_int_equal(op.retries, 0);
	assert_int_equal(st->early_repairs, 1);
	assert_int_equal(st->repairs, 2);
	check_floats(out, a, 20);
	assert_int_equal(n->repair_emits, 1);

	/* the answer's last segment lost: the timeout asks */
	memset(out, 0, sizeof(out));
	n->drop_resp_at = n->nresp + 5;
	op_init(&op, PSB_MSG_PULL, 9, sizeof(out), NULL, out);
	t += 10000;
	assert_int_equal(psb_wk_submit(wk, &op, t), 0);
	net_run(n);
	assert_int_equal(d.n, 3);
	psb_wk_poll(wk, t + 1300);
	assert_int_equal(st->repairs, 3);
	net_run(n);
	assert_int_equal(d.n, 4);
	assert_int_equal(op.status, 0);
	assert_int_equal(op.retries, 1);
	check_floats(out, a, 20);
	assert_int_equal(n->repair_emits, 2);
	assert_int_equal(kst->repair_segs, 2);
	assert_int_equal(st->early_repairs, 1);
	assert_int_equal(st->resends, 0);
	psb_wk_free(wk);
	net_free(n);
}

static void
test_max_retries(void **state)
{
	struct net *n = net_new(1, 0);
	struct port p;
	struct done_log d = { .n = 0 };
	struct psb_wk *wk = wk_new(n, &p, 0, 0, 4, 1000, 2, &d);
	const struct psb_wk_stats *st = psb_wk_stats(wk);
	float a[6];
	struct psb_wk_op op;
	uint64_t t0 = n->now;

	(void)state;
	fill(a, 6, 1.0f);
	n->blackhole = 1;
	op_init(&op, PSB_MSG_PUSH, 9, sizeof(a), a, NULL);
	assert_int_equal(psb_wk_submit(wk, &op, t0), 0);
	assert_int_equal(n->nlog, 2);
	/* not yet timed out */
	psb_wk_poll(wk, t0 + 999);
	assert_int_equal(st->retries, 0);
	assert_int_equal(n->nlog, 2);
	/* the window is scanned at most every timeout / 4: not yet */
	psb_wk_poll(wk, t0 + 1100);
	assert_int_equal(st->retries, 0);
	/* first and second retry ask the server what it lacks of the push (REPAIR) */
	psb_wk_poll(wk, t0 + 1249);
	assert_int_equal(st->retries, 1);
	assert_int_equal(op.retries, 1);
	assert_int_equal(n->nlog, 3);
	assert_int_equal(n->log[2].type, PSB_MSG_REPAIR);
	assert_int_equal(n->log[2].req_id, n->log[0].req_id);
	assert_int_equal(st->repairs, 1);
	/* the timeout runs from the repair, doubled for each retry: 2000 now */
	psb_wk_poll(wk, t0 + 3248);
	assert_int_equal(st->retries, 1);
	psb_wk_poll(wk, t0 + 3500);
	assert_int_equal(st->retries, 2);
	assert_int_equal(op.retries, 2);
	assert_int_equal(n->nlog, 4);
	assert_int_equal(n->log[3].type, PSB_MSG_REPAIR);
	assert_int_equal(d.n, 0);
	/* then, 4000 after the last resend, it fails */
	psb_wk_poll(wk, t0 + 7499);
	assert_int_equal(d.n, 0);
	assert_int_equal(st->retries, 2);
	psb_wk_poll(wk, t0 + 7750);
	assert_int_equal(d.n, 1);
	assert_int_equal(op.status, -ETIMEDOUT);
	assert_int_equal(op.retries, 2);
	assert_int_equal(op.rtt_ns, 7750);
	assert_int_equal(n->nlog, 4);
	assert_int_equal(st->failed, 1);
	assert_int_equal(st->completed, 0);
	assert_int_equal(psb_wk_inflight(wk), 0);

	/* an ack arriving after that is stray */
	{
		struct psb_hdr h;

		psb_hdr_init(&h, PSB_MSG_PUSH_ACK);
		h.req_id = n->log[0].req_id;
		h.key = 9;
		psb_wk_input(wk, &h, NULL, t0 + 7751);
	}
	assert_int_equal(st->stray, 1);
	assert_int_equal(d.n, 1);
	assert_int_equal(st->completed, 0);
	psb_wk_free(wk);
	net_free(n);
}

/*
 * ERROR busy (a budget of the server's reassembly is full) is not a failure: the request
 * is sent again after its timeout, and fails as busy only once its retries are spent.
 */
static void
test_busy_retry(void **state)
{
	struct psb_kv_cfg kc = { .num_workers = 2, .seg_size = SEG, .reasm_timeout_ns = 5000 };
	struct net *n = net_new(2, 0);
	struct port p;
	struct done_log d = { .n = 0 };
	struct psb_wk *wk;
	const struct psb_wk_stats *st;
	float a[12], ghost[12];
	struct psb_wk_op op;
	struct psb_hdr h;
	struct psb_addr from = waddr(1);
	int i;

	(void)state;
	for (i = 0; i < 12; i++) {
		a[i] = (float)i;
		ghost[i] = 1000;
	}
	/* room for one staged push of 48 bytes in all */
	kc.reasm_bytes = psb_kv_push_cost(sizeof(a), SEG);
	psb_kv_free(n->kv);
	n->kv = net_kv(&kc);
	assert_non_null(n->kv);
	psb_kv_tick(n->kv, n->now);
	/* a sender that died after its first segment holds it */
	psb_hdr_init(&h, PSB_MSG_PUSH);
	h.sender = 1;
	h.req_id = 1;
	h.key = 8;
	h.total_len = sizeof(ghost);
	h.seg_size = SEG;
	h.seg_len = SEG;
	assert_int_equal(psb_kv_handle(n->kv, &h, ghost, &from, net_emit, n), 0);

	wk = wk_new(n, &p, 0, 0, 4, 1000, 20, &d);
	st = psb_wk_stats(wk);
	op_init(&op, PSB_MSG_PUSHPULL, 7, sizeof(a), a, a);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), 0);
	net_run(n);
	assert_int_equal(d.n, 0);	/* busy: still in flight */
	assert_int_equal(st->busy, 1);
	assert_int_equal(st->failed, 0);
	n->now += 1000;
	psb_wk_poll(wk, n->now);
	net_run(n);
	assert_int_equal(st->retries, 1);
	assert_int_equal(st->busy, 2);
	assert_int_equal(d.n, 0);
	/* the dead sender's push times out at the server; the next retry gets through */
	n->now += 5000;
	psb_kv_tick(n->kv, n->now);
	psb_wk_poll(wk, n->now);
	net_run(n);
	assert_int_equal(d.n, 1);
	assert_int_equal(op.status, 0);
	for (i = 0; i < 12; i++)
		assert_true(a[i] == (float)i);
	assert_int_equal(psb_kv_stats(n->kv)->discarded[PSB_KV_DISCARD_TIMEOUT], 1);

	/* a server that stays busy: failed as busy once the retries are spent */
	kc.reasm_bytes = 1;
	psb_wk_free(wk);
	psb_kv_free(n->kv);
	n->kv = net_kv(&kc);
	d.n = 0;
	wk = wk_new(n, &p, 0, 0, 4, 1000, 3, &d);
	st = psb_wk_stats(wk);
	op_init(&op, PSB_MSG_PUSH, 7, sizeof(a), a, NULL);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), 0);
	for (i = 0; i < 10 && d.n == 0; i++) {
		net_run(n);
		n->now += 100000;
		psb_wk_poll(wk, n->now);
	}
	assert_int_equal(d.n, 1);
	assert_int_equal(op.status, PSB_ST_BUSY);
	assert_int_equal(st->retries, 3);
	assert_int_equal(st->busy, 4);
	psb_wk_free(wk);
	net_free(n);
}

static void
test_error_reply(void **state)
{
	struct net *n = net_new(2, 0);
	struct port p, p3;
	struct done_log d = { .n = 0 }, d3 = { .n = 0 };
	struct psb_wk *wk = wk_new(n, &p, 0, 0, 4, 1000, 2, &d);
	struct psb_wk *wk3 = wk_new(n, &p3, 3, 0, 4, 1000, 2, &d3);
	const struct psb_wk_stats *st = psb_wk_stats(wk);
	float a[3] = { 1, 2, 3 }, out[3];
	struct psb_wk_op op;

	(void)state;
	op_init(&op, PSB_MSG_PULL, 404, sizeof(out), NULL, out);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), 0);
	net_run(n);
	assert_int_equal(d.n, 1);
	assert_int_equal(op.status, PSB_ST_NO_KEY);
	assert_int_equal(st->errors, 1);
	assert_int_equal(st->failed, 1);

	op_init(&op, PSB_MSG_PUSH, 5, 8, a, NULL);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), 0);
	net_run(n);
	assert_int_equal(op.status, 0);
	op_init(&op, PSB_MSG_PUSHPULL, 5, sizeof(a), a, out);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), 0);
	net_run(n);
	assert_int_equal(d.n, 3);
	assert_int_equal(op.status, PSB_ST_LEN_MISMATCH);
	assert_int_equal(op.err_aux, 8);
	assert_int_equal(st->errors, 2);

	/* rank 3 of a 2-worker server */
	op_init(&op, PSB_MSG_PUSH, 5, 8, a, NULL);
	assert_int_equal(psb_wk_submit(wk3, &op, n->now), 0);
	net_run(n);
	assert_int_equal(d3.n, 1);
	assert_int_equal(op.status, PSB_ST_BAD_SENDER);
	assert_int_equal(op.err_aux, 2);
	assert_int_equal(psb_wk_inflight(wk3), 0);
	psb_wk_free(wk3);
	psb_wk_free(wk);
	net_free(n);

	/* sync: a push into a closed round comes back STALE with the server's round */
	n = net_new(1, 1);
	d.n = 0;
	wk = wk_new(n, &p, 0, 1, 4, 1000, 2, &d);
	op_init(&op, PSB_MSG_PUSH, 6, 8, a, NULL);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), 0);
	net_run(n);
	assert_int_equal(op.status, 0);
	assert_int_equal(op.out_round, 1);
	op_init(&op, PSB_MSG_PUSH, 6, 8, a, NULL);
	op.round = 0;
	assert_int_equal(psb_wk_submit(wk, &op, n->now), 0);
	net_run(n);
	assert_int_equal(d.n, 2);
	assert_int_equal(op.status, PSB_ST_STALE);
	assert_int_equal(op.err_aux, 1);
	op_init(&op, PSB_MSG_PUSH, 6, 8, a, NULL);
	op.round = 1;
	assert_int_equal(psb_wk_submit(wk, &op, n->now), 0);
	net_run(n);
	assert_int_equal(op.status, 0);
	assert_int_equal(op.out_round, 2);
	psb_wk_free(wk);
	net_free(n);
}

static void
test_stray(void **state)
{
	struct net *n = net_new(1, 0);
	struct port p;
	struct done_log d = { .n = 0 };
	struct psb_wk *wk = wk_new(n, &p, 0, 0, 4, 1000000, 2, &d);
	const struct psb_wk_stats *st = psb_wk_stats(wk);
	float a[2] = { 4, 5 }, out[2];
	struct psb_wk_op op;
	struct psb_hdr h, good;
	uint32_t rid;

	(void)state;
	op_init(&op, PSB_MSG_PUSH, 8, 8, a, NULL);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), 0);
	net_run(n);
	op_init(&op, PSB_MSG_PULL, 8, sizeof(out), NULL, out);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), 0);
	assert_int_equal(n->nlog, 2);
	rid = n->log[1].req_id;
	net_flush(n);		/* the server never sees it: we answer by hand */

	psb_hdr_init(&good, PSB_MSG_PULL_RESP);
	good.sender = 0;
	good.req_id = rid;
	good.key = 8;
	good.round = 1;
	good.total_len = 8;
	good.seg_size = SEG;
	good.seg_len = 8;

	h = good;
	h.req_id = rid + PSB_WK_MAX_WINDOW;	/* same slot, older/newer request */
	psb_wk_input(wk, &h, a, n->now);
	h = good;
	h.req_id = (rid & ~(PSB_WK_MAX_WINDOW - 1)) | 3;	/* a free slot */
	psb_wk_input(wk, &h, a, n->now);
	h = good;
	h.req_id = (rid & ~(PSB_WK_MAX_WINDOW - 1)) | 100;	/* beyond the window */
	psb_wk_input(wk, &h, a, n->now);
	h = good;
	h.sender = 1;					/* another worker's */
	psb_wk_input(wk, &h, a, n->now);
	h = good;
	h.key = 9;					/* another key */
	psb_wk_input(wk, &h, a, n->now);
	h = good;
	h.type = PSB_MSG_PUSH_ACK;			/* the answer to another type */
	h.total_len = 0;
	h.seg_len = 0;
	psb_wk_input(wk, &h, NULL, n->now);
	assert_int_equal(st->stray, 6);
	assert_int_equal(d.n, 1);
	assert_int_equal(psb_wk_inflight(wk), 1);

	/* the real answer completes it, a repeat of it is then stray too */
	psb_wk_input(wk, &good, a, n->now);
	assert_int_equal(d.n, 2);
	assert_int_equal(op.status, 0);
	check_floats(out, a, 2);
	psb_wk_input(wk, &good, a, n->now);
	assert_int_equal(st->stray, 7);
	assert_int_equal(d.n, 2);
	psb_wk_free(wk);
	net_free(n);
}

/* A response duplicated by the network: segments counted once, value intact. */
static void
test_dup_response(void **state)
{
	struct net *n = net_new(1, 0);
	struct port p;
	struct done_log d = { .n = 0 };
	struct psb_wk *wk = wk_new(n, &p, 0, 0, 4, 1000000, 2, &d);
	const struct psb_wk_stats *st = psb_wk_stats(wk);
	float a[8], out[8], junk[4] = { -9, -9, -9, -9 };
	struct psb_wk_op op;
	struct psb_hdr h;

	(void)state;
	fill(a, 8, 0.5f);
	op_init(&op, PSB_MSG_PUSH, 8, sizeof(a), a, NULL);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), 0);
	net_run(n);
	op_init(&op, PSB_MSG_PULL, 8, sizeof(out), NULL, out);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), 0);
	psb_hdr_init(&h, PSB_MSG_PULL_RESP);
	h.req_id = n->log[n->nlog - 1].req_id;
	h.key = 8;
	h.round = 1;
	h.total_len = sizeof(a);
	h.seg_size = SEG;
	h.seg_len = SEG;
	net_flush(n);
	psb_wk_input(wk, &h, a, n->now);
	/* the same segment again, carrying junk: must not be copied */
	psb_wk_input(wk, &h, junk, n->now);
	assert_int_equal(st->dup_segs, 1);
	assert_int_equal(d.n, 1);
	h.offset = SEG;
	psb_wk_input(wk, &h, a + 4, n->now);
	assert_int_equal(d.n, 2);
	assert_int_equal(op.status, 0);
	check_floats(out, a, 8);
	assert_int_equal(st->resp_segs, 3);
	psb_wk_free(wk);
	net_free(n);
}

/* ---- batching ---- */

#define BSEG		128	/* worker stride in the batching tests: room for a few records */
#define BEPOCH		0x5eed

/* send_args the dest callback saw, and how it splits keys: by their lowest bit. */
static const void *dest_arg_seen;
static unsigned int dest_calls;

static int
dest_parity(void *send_arg, uint64_t key)
{
	dest_arg_seen = send_arg;
	dest_calls++;
	return (int)(key & 1);
}

static struct psb_wk *
wk_new_batch(struct net *n, struct port *p, uint16_t rank, uint32_t window, uint64_t timeout_ns,
		uint16_t batch_max, int (*dest)(void *, uint64_t), struct done_log *d)
{
	struct psb_wk_cfg cfg = {
		.rank = rank,
		.epoch = BEPOCH,
		.seg_size = BSEG,
		.window = window,
		.timeout_ns = timeout_ns,
		.max_retries = 10,
		.batch_max = batch_max,
		.dest = dest,
		.send = net_send,
		.send_arg = p,
		.done = on_done,
		.done_arg = d,
	};
	struct psb_wk *wk;

	p->net = n;
	p->rank = rank;
	wk = psb_wk_create(&cfg);
	assert_non_null(wk);
	n->wk[rank] = wk;
	return wk;
}

/* The server process of n restarts: a new store, empty, with another epoch. */
static uint32_t
net_restart_server(struct net *n, uint16_t nw, int sync, uint32_t epoch)
{
	struct psb_kv_cfg kc = { .num_workers = nw, .sync = sync, .seg_size = SEG,
		.epoch = epoch };

	psb_kv_free(n->kv);
	n->kv = net_kv(&kc);
	return psb_kv_epoch(n->kv);
}

/*
 * A server that restarted answers with another epoch: the worker never takes such an
 * answer (it comes from a store that lost the job's values) and fails the request with
 * -ESTALE; answers without an epoch (0) are taken; each server has its own epoch.
 */
static void
test_server_restart(void **state)
{
	struct net *n = net_new(1, 0);
	struct port p;
	struct done_log d = { .n = 0 };
	struct psb_wk *wk = wk_new(n, &p, 0, 0, 4, 1000000, 2, &d);
	const struct psb_wk_stats *st = psb_wk_stats(wk);
	float a[8], out[8];
	struct psb_wk_op op;
	uint32_t e1 = psb_kv_epoch(n->kv), e2;
	struct psb_hdr h;

	(void)state;
	fill(a, 8, 0.5f);
	assert_int_equal(psb_wk_server_epoch(wk, 0), 0);
	op_init(&op, PSB_MSG_PUSH, 8, sizeof(a), a, NULL);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), 0);
	net_run(n);
	assert_int_equal(op.status, 0);
	assert_int_equal(psb_wk_server_epoch(wk, 0), e1);
	/* the server restarts: a push (answered by the empty store) and a pushpull fail */
	e2 = net_restart_server(n, 1, 0, e1 + 1);
	op_init(&op, PSB_MSG_PUSH, 8, sizeof(a), a, NULL);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), 0);
	net_run(n);
	assert_int_equal(d.n, 2);
	assert_int_equal(op.status, -ESTALE);
	assert_int_equal(op.err_aux, e2);
	assert_int_equal(st->server_restarts, 1);
	memset(out, 0, sizeof(out));
	op_init(&op, PSB_MSG_PUSHPULL, 8, sizeof(a), a, out);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), 0);
	net_run(n);
	assert_int_equal(op.status, -ESTALE);
	assert_int_equal(op.out_len, 0);
	assert_int_equal(st->server_restarts, 2);
	/* the first epoch stays the one that counts */
	assert_int_equal(psb_wk_server_epoch(wk, 0), e1);
	/* an answer without an epoch is taken */
	op_init(&op, PSB_MSG_PUSH, 9, sizeof(a), a, NULL);
	assert_int_equal(psb_wk_submit(wk, &op, n->now), 0);
	psb_hdr_init(&h, PSB_MSG_PUSH_ACK);
	h.req_id = n->log[n->nlog - 1].req_id;
	h.key = 9;
	net_flush(n);
	psb_wk_input(wk, &h, NULL, n->now);
	assert_int_equal(op.status, 0);
	psb_wk_free(wk);
	net_free(n);
}

/* Two servers (keys by parity) with epochs of their own: neither is taken for a restart. */
static void
test_server_epochs(void **state)
{
	struct net *n = net_new(1, 0);
	struct port p;
	struct done_log d = { .n = 0 };
	struct psb_wk *wk = wk_new_batch(n, &p, 0, 16, 1000000, 0, dest_parity, &d);
	const struct psb_wk_stats *st = psb_wk_stats(wk);
	struct psb_wk_op op[4];
	float a[4] = { 1, 2, 3, 4 };
	struct psb_hdr h;
	unsigned int i;

	(void)state;
	for (i = 0; i < 4; i++) {
		op_init(&op[i], PSB_MSG_PUSH, 100 + i, sizeof(a), a, NULL);
		assert_int_equal(psb_wk_submit(wk, &op[i], n->now), 0);
	}
	net_flush(n);
	for (i = 0; i < 4; i++) {
		psb_hdr_init(&h, PSB_MSG_PUSH_ACK);
		h.req_id = n->log[i].req_id;
		h.key = 100 + i;
		h.aux = i & 1 ? 0xbbbb : 0xaaaa;
		if (i == 3)
			h.aux = 0xaaaa;	/* server 1 with server 0's epoch: it restarted */
		psb_wk_input(wk, &h, NULL, n->now);
	}
	assert_int_equal(op[0].status, 0);
	assert_int_equal(op[1].status, 0);
	assert_int_equal(op[2].status, 0);
	assert_int_equal(op[3].status, -ESTALE);
	assert_int_equal(psb_wk_server_epoch(wk, 0), 0xaaaa);
	assert_int_equal(psb_wk_server_epoch(wk, 1), 0xbbbb);
	assert_int_equal(st->server_restarts, 1);
	psb_wk_free(wk);
	net_free(n);
}

/* Read the records of logged BATCH i; they must use up its bytes exactly. Returns their count. */
static unsigned int
batch_recs(const struct net *n, unsigned int i, struct psb_rec *r, const uint8_t **val,
		unsigned int max)
{
	const struct sent_batch *b = &n->blog[i];
	size_t off = 0;
	unsigned int k = 0;

	assert_true(i < n->nbatch && i < BLOG_MAX);
	assert_int_equal(b->h.type, PSB_MSG_BATCH);
	assert_int_equal(b->h.total_len, b->h.seg_len);
	assert_int_equal(b->h.seg_size, b->h.seg_len);
	assert_int_equal(b->h.offset, 0);
	assert_int_equal(b->h.aux, BEPOCH);
	assert_true(b->h.seg_len <= BSEG);
	while (off < b->h.seg_len) {
		int used;

		assert_true(k < max);
		used = psb_rec_decode(&r[k], b->data + off, b->h.seg_len - off);
		assert_true(used >= PSB_REC_HLEN);
		if (val != NULL)
			val[k] = b->data + off + PSB_REC_HLEN;
		off += (size_t)used;
		k++;
	}
	assert_int_equal(off, b->h.seg_len);
	/* the first record's key routes the batch */
	assert_true(k == 0 || b->h.key == r[0].key);
	return k;
}

/* Several small requests go as one BATCH; the BATCH_RESP completes them with exact values. */
static void
test_batch_roundtrip(void **state)
{
	struct net *n = net_new(1, 0);
	struct port p;
	struct done_log d = { .n = 0 };
	struct psb_wk *wk = wk_new_batch(n, &p, 0, 16, 1000000, 64, NULL, &d);
	const struct psb_wk_stats *st = psb_wk_stats(wk);
	const struct psb_kv_stats *ks = psb_kv_stats(n->kv);
	float a[2], b[4], c[3], big[25], outa[2], outb[4], outc[3], outbig[25], want[4];
	struct psb_wk_op op[4];
	struct psb_rec r[8];
	const uint8_t *val[8];
	unsigned int i;

	(void)state;
	fill(a, 2, 1.0f);
	fill(b, 4, -2.0f);
	fill(c, 3, 7.0f);
	fill(big, 25, 0.25f);
	op_init(&op[0], PSB_MSG_PUSH, 1, sizeof(a), a, NULL);
	op_init(&op[1], PSB_MSG_PUSHPULL, 2, sizeof(b), b, outb);
	op_init(&op[2], PSB_MSG_PUSH, 3, sizeof(c), c, NULL);
	/* 100 bytes > batch_max: on its own, at once */
	op_init(&op[3], PSB_MSG_PUSH, 4, sizeof(big), big, NULL);
	for (i = 0; i < 4; i++)
		assert_int_equal(psb_wk_submit(wk, &op[i], n->now), 0);
	assert_int_equal(n->nlog, 1);
	assert_int_equal(n->log[0].type, PSB_MSG_PUSH);
	assert_int_equal(n->nbatch, 0);
	assert_true(psb_wk_pending(wk));
	assert_int_equal(psb_wk_flush(wk), 0);
	assert_false(psb_wk_pending(wk));
	assert_int_equal(n->nbatch, 1);
	assert_int_equal(n->nlog, 2);
	/* nothing left: a second flush sends nothing */
	assert_int_equal(psb_wk_flush(wk), 0);
	assert_int_equal(n->nbatch, 1);

	assert_int_equal(n->blog[0].h.sender, 0);
	assert_int_equal(n->blog[0].h.flags, 0);
	assert_int_equal(n->blog[0].h.seg_len, 3 * PSB_REC_HLEN + 8 + 16 + 12);
	assert_int_equal(batch_recs(n, 0, r, val, 8), 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(r[i].type, op[i].type);
		assert_true(r[i].key == op[i].key);
		assert_int_equal(r[i].len, op[i].len);
		assert_int_equal(r[i].round, 0);
		assert_int_equal(r[i].status, 0);
		assert_memory_equal(val[i], op[i].in, op[i].len);
		/* ids are per request: distinct, slot in the low bits */
		assert_true((r[i].req_id & (PSB_WK_MAX_WINDOW - 1)) < 16);
		assert_true(i == 0 || r[i].req_id != r[i - 1].req_id);
	}

	net_run(n);
	assert_int_equal(d.n, 4);
	for (i = 0; i < 4; i++) {
		assert_int_equal(op[i].status, 0);
		assert_int_equal(op[i].out_round, 1);
		assert_int_equal(op[i].retries, 0);
	}
	check_floats(outb, b, 4);
	assert_int_equal(op[1].out_len, sizeof(b));
	assert_int_equal(n->nbatch_resp, 1);
	assert_int_equal(ks->batches, 1);
	assert_int_equal(st->batches_sent, 1);
	assert_int_equal(st->msgs_sent, 2);

	/* pulls (the expected size is their len) and a pushpull; a large pull on its own */
	memset(outa, 0, sizeof(outa));
	memset(outc, 0, sizeof(outc));
	memset(outbig, 0, sizeof(outbig));
	op_init(&op[0], PSB_MSG_PULL, 1, sizeof(outa), NULL, outa);
	op_init(&op[1], PSB_MSG_PULL, 3, sizeof(outc), NULL, outc);
	op_init(&op[2], PSB_MSG_PUSHPULL, 2, sizeof(b), b, outb);
	op_init(&op[3], PSB_MSG_PULL, 4, sizeof(outbig), NULL, outbig);
	for (i = 0; i < 4; i++)
		assert_int_equal(psb_wk_submit(wk, &op[i], n->now), 0);
	assert_int_equal(psb_wk_flush(wk), 0);
	assert_int_equal(n->nbatch, 2);
	assert_int_equal(batch_recs(n, 1, r, NULL, 8), 3);
	assert_int_equal(r[0].len, 0);
	assert_int_equal(r[1].len, 0);
	assert_int_equal(r[2].len, sizeof(b));
	n->now += 777;
	net_run(n);
	assert_int_equal(d.n, 8);
	for (i = 0; i < 4; i++) {
		assert_int_equal(op[i].status, 0);
		assert_int_equal(op[i].rtt_ns, 777);
	}
	check_floats(outa, a, 2);
	check_floats(outc, c, 3);
	check_floats(outbig, big, 25);
	for (i = 0; i < 4; i++)
		want[i] = 2 * b[i];
	check_floats(outb, want, 4);
	assert_int_equal(op[0].out_len, sizeof(a));
	assert_int_equal(op[2].out_round, 2);
	assert_int_equal(st->completed, 8);
	assert_int_equal(st->batches_sent, 2);
	assert_int_equal(st->bad_batches, 0);
	assert_int_equal(st->stray, 0);
	assert_int_equal(ks->req[PSB_MSG_PULL], 3);
	assert_int_equal(ks->bytes_summed, 8 + 16 + 12 + 100 + 16);
	assert_int_equal(psb_wk_inflight(wk), 0);
	psb_wk_free(wk);
	net_free(n);
}

/* A batch never mixes destinations: a key for another one flushes the open batch first. */
static void
test_batch_dest(void **state)
{
	static const uint64_t keys[] = { 1, 3, 5, 2, 4, 6 };
	struct net *n = net_new(1, 0);
	struct port p;
	struct done_log d = { .n = 0 };
	struct psb_wk *wk = wk_new_batch(n, &p, 0, 16, 1000000, 64, dest_parity, &d);
	float a[2] = { 1.0f, 2.0f };
	struct psb_wk_op op[8];
	struct psb_rec r[8];
	unsigned int i, k;

	(void)state;
	dest_calls = 0;
	dest_arg_seen = NULL;
	for (i = 0; i < 6; i++) {
		op_init(&op[i], PSB_MSG_PUSH, keys[i], sizeof(a), a, NULL);
		assert_int_equal(psb_wk_submit(wk, &op[i], n->now), 0);
		/* the odd keys went out when the first even one came */
		assert_int_equal(n->nbatch, i < 3 ? 0 : 1);
	}
	assert_int_equal(psb_wk_flush(wk), 0);
	assert_int_equal(n->nbatch, 2);
	assert_true(dest_calls >= 6);
	assert_ptr_equal(dest_arg_seen, &p);
	for (i = 0; i < 2; i++) {
		assert_int_equal(batch_recs(n, i, r, NULL, 8), 3);
		for (k = 0; k < 3; k++) {
			assert_true(r[k].key == keys[3 * i + k]);
			assert_int_equal((int)(r[k].key & 1), i == 0 ? 1 : 0);
		}
	}
	/* alternating destinations: one batch each */
	op_init(&op[6], PSB_MSG_PUSH, 7, sizeof(a), a, NULL);
	op_init(&op[7], PSB_MSG_PUSH, 8, sizeof(a), a, NULL);
	assert_int_equal(psb_wk_submit(wk, &op[6], n->now), 0);
	assert_int_equal(psb_wk_submit(wk, &op[7], n->now), 0);
	assert_int_equal(psb_wk_flush(wk), 0);
	assert_int_equal(n->nbatch, 4);
	assert_int_equal(batch_recs(n, 2, r, NULL, 8), 1);
	assert_true(r[0].key == 7);
	assert_int_equal(batch_recs(n, 3, r, NULL, 8), 1);
	assert_true(r[0].key == 8);
	net_run(n);
	assert_int_equal(d.n, 8);
	for (i = 0; i < 8; i++)
		assert_int_equal(op[i].status, 0);
	assert_int_equal(psb_kv_stats(n->kv)->batches, 4);
	psb_wk_free(wk);
	net_free(n);
}

/*
 * psb_wk_abort: the requests to one server end at once with the status given, those to
 * the others go on; an open batch to that server is dropped unsent.
 */
static void
test_abort(void **state)
{
	struct net *n = net_new(1, 0);
	struct port p;
	struct done_log d = { .n = 0 };
	struct psb_wk *wk = wk_new_batch(n, &p, 0, 16, 1000000, 64, dest_parity, &d);
	float a[2] = { 1.0f, 2.0f };
	struct psb_wk_op op[6];
	unsigned int i, sent;

	(void)state;
	/* keys 2, 4 go out in a batch; 1, 3 then wait in the open batch to server 1 */
	for (i = 0; i < 4; i++) {
		op_init(&op[i], PSB_MSG_PUSH, i < 2 ? 2 + 2 * i : 2 * i - 3, sizeof(a), a, NULL);
		assert_int_equal(psb_wk_submit(wk, &op[i], n->now), 0);
	}
	assert_int_equal(n->nbatch, 1);
	/* a third to server 1, into the same open batch */
	op_init(&op[4], PSB_MSG_PUSH, 5, sizeof(a), a, NULL);
	assert_int_equal(psb_wk_submit(wk, &op[4], n->now), 0);
	assert_int_equal(psb_wk_inflight(wk), 5);
	sent = n->nbatch;
	psb_wk_abort(wk, 1, -EMSGSIZE, n->now);
	assert_int_equal(psb_wk_inflight(wk), 2);
	assert_int_equal(d.n, 3);
	for (i = 2; i < 5; i++)
		assert_int_equal(op[i].status, -EMSGSIZE);
	assert_int_equal(psb_wk_stats(wk)->failed, 3);
	/* the dropped batch is not sent by a flush */
	assert_int_equal(psb_wk_flush(wk), 0);
	assert_int_equal(n->nbatch, sent);
	net_run(n);
	assert_int_equal(d.n, 5);
	assert_int_equal(op[0].status, 0);
	assert_int_equal(op[1].status, 0);
	assert_int_equal(psb_wk_inflight(wk), 0);
	/* nothing left: an abort of every server does nothing, new requests still work */
	psb_wk_abort(wk, -1, -EIO, n->now);
	op_init(&op[5], PSB_MSG_PUSH, 9, sizeof(a), a, NULL);
	assert_int_equal(psb_wk_submit(wk, &op[5], n->now), 0);
	psb_wk_abort(wk, -1, -EIO, n->now);
	assert_int_equal(op[5].status, -EIO);
	assert_int_equal(psb_wk_inflight(wk), 0);
	psb_wk_free(wk);
	net_free(n);
}

/* A batch whose next record, or that record's answer, would not fit seg_size is sent first. */
static void
test_batch_split(void **state)
{
	struct net *n = net_new(1, 0);
	struct port p;
	struct done_log d = { .n = 0 };
	struct psb_wk *wk = wk_new_batch(n, &p, 0, 16, 1000000, BSEG - PSB_REC_HLEN, NULL, &d);
	float v[5][10], out[3][10], whole[26], outw[26];
	struct psb_wk_op op[5], pl[3], w, pw;
	struct psb_rec r[8];
	unsigned int i;

	(void)state;
	/* 40-byte pushes take 64 bytes as records: two per 128-byte batch */
	for (i = 0; i < 5; i++) {
		fill(v[i], 10, (float)i);
		op_init(&op[i], PSB_MSG_PUSH, 10 + i, sizeof(v[i]), v[i], NULL);
		assert_int_equal(psb_wk_submit(wk, &op[i], n->now), 0);
		assert_int_equal(n->nbatch, i / 2);
	}
	assert_int_equal(psb_wk_flush(wk), 0);
	assert_int_equal(n->nbatch, 3);
	assert_int_equal(batch_recs(n, 0, r, NULL, 8), 2);
	assert_int_equal(n->blog[0].h.seg_len, BSEG);
	assert_int_equal(batch_recs(n, 1, r, NULL, 8), 2);
	assert_int_equal(batch_recs(n, 2, r, NULL, 8), 1);
	assert_true(r[0].key == 14);
	net_run(n);
	assert_int_equal(d.n, 5);

	/* pulls take 24 bytes out but 64 back: the answers decide, two per batch */
	for (i = 0; i < 3; i++) {
		op_init(&pl[i], PSB_MSG_PULL, 10 + i, sizeof(out[i]), NULL, out[i]);
		assert_int_equal(psb_wk_submit(wk, &pl[i], n->now), 0);
	}
	assert_int_equal(n->nbatch, 4);
	assert_int_equal(psb_wk_flush(wk), 0);
	assert_int_equal(n->nbatch, 5);
	assert_int_equal(batch_recs(n, 3, r, NULL, 8), 2);
	assert_int_equal(n->blog[3].h.seg_len, 2 * PSB_REC_HLEN);
	assert_int_equal(batch_recs(n, 4, r, NULL, 8), 1);

	/* a record that fills seg_size exactly goes alone; one byte more is not batched */
	fill(whole, 26, 3.0f);
	op_init(&w, PSB_MSG_PUSH, 20, BSEG - PSB_REC_HLEN, whole, NULL);
	assert_int_equal(psb_wk_submit(wk, &w, n->now), 0);
	assert_int_equal(n->nbatch, 5);
	op_init(&pw, PSB_MSG_PULL, 20, sizeof(outw), NULL, outw);
	assert_int_equal(psb_wk_flush(wk), 0);
	assert_int_equal(n->nbatch, 6);
	assert_int_equal(n->blog[5].h.seg_len, BSEG);
	net_run(n);
	/* a 104-byte pull fits its answer (128) alone too, but a 105-byte one is not batched */
	pw.len = BSEG - PSB_REC_HLEN + 4;
	assert_int_equal(psb_wk_submit(wk, &pw, n->now), 0);
	assert_int_equal(psb_wk_flush(wk), 0);
	assert_int_equal(n->nbatch, 6);
	net_run(n);
	assert_int_equal(d.n, 10);
	for (i = 0; i < 3; i++) {
		assert_int_equal(pl[i].status, 0);
		check_floats(out[i], v[i], 10);
	}
	assert_int_equal(pw.status, 0);
	assert_int_equal(pw.out_len, BSEG - PSB_REC_HLEN);
	check_floats(outw, whole, 26);
	assert_int_equal(psb_wk_stats(wk)->batches_sent, 6);
	psb_wk_free(wk);
	net_free(n);
}

/* -ENOBUFS keeps the batch open; psb_wk_poll sends it once the transport has room. */
static void
test_batch_blocked(void **state)
{
	struct net *n = net_new(1, 0);
	struct port p;
	struct done_log d = { .n = 0 };
	struct psb_wk *wk = wk_new_batch(n, &p, 0, 16, 1000000, 64, NULL, &d);
	const struct psb_wk_stats *st = psb_wk_stats(wk);
	float v[3][10], out[10];
	struct psb_wk_op op[4];
	struct psb_rec r[8];
	unsigned int i;

	(void)state;
	for (i = 0; i < 3; i++)
		fill(v[i], 10, (float)(i + 1));
	n->credits = 0;
	op_init(&op[0], PSB_MSG_PUSH, 1, 40, v[0], NULL);
	op_init(&op[1], PSB_MSG_PUSH, 2, 40, v[1], NULL);
	assert_int_equal(psb_wk_submit(wk, &op[0], n->now), 0);
	assert_int_equal(psb_wk_submit(wk, &op[1], n->now), 0);
	assert_int_equal(psb_wk_flush(wk), -ENOBUFS);
	assert_true(psb_wk_pending(wk));
	assert_int_equal(st->send_blocked, 1);
	assert_int_equal(st->batches_sent, 0);
	/* the batch is full and cannot go: a third request must wait */
	op_init(&op[2], PSB_MSG_PUSH, 3, 40, v[2], NULL);
	assert_int_equal(psb_wk_submit(wk, &op[2], n->now), -EBUSY);
	assert_int_equal(psb_wk_inflight(wk), 2);
	assert_int_equal(st->submitted, 2);
	/* still no room, before any timeout: nothing moves, nothing is retried */
	psb_wk_poll(wk, n->now + 1000);
	assert_true(psb_wk_pending(wk));
	assert_int_equal(n->nbatch, 0);
	assert_int_equal(st->retries, 0);

	n->credits = -1;
	psb_wk_poll(wk, n->now + 2000);
	assert_false(psb_wk_pending(wk));
	assert_int_equal(n->nbatch, 1);
	assert_int_equal(batch_recs(n, 0, r, NULL, 8), 2);
	assert_true(r[0].key == 1 && r[1].key == 2);
	assert_int_equal(psb_wk_submit(wk, &op[2], n->now), 0);
	op_init(&op[3], PSB_MSG_PULL, 1, sizeof(out), NULL, out);
	assert_int_equal(psb_wk_submit(wk, &op[3], n->now), 0);
	net_run(n);
	assert_int_equal(d.n, 2);
	/* psb_wk_poll flushes what submit left open */
	psb_wk_poll(wk, n->now + 3000);
	assert_int_equal(n->nbatch, 2);
	net_run(n);
	assert_int_equal(d.n, 4);
	for (i = 0; i < 4; i++)
		assert_int_equal(op[i].status, 0);
	check_floats(out, v[0], 10);
	assert_int_equal(st->retries, 0);
	assert_int_equal(st->batches_sent, 2);
	assert_int_equal(psb_kv_stats(n->kv)->dup_segs, 0);
	psb_wk_free(wk);
	net_free(n);
}

/* A lost BATCH (or BATCH_RESP): each request retried on its own, completed exactly once. */
static void
test_batch_loss(void **state)
{
	struct net *n = net_new(1, 0);
	struct port p;
	struct done_log d = { .n = 0 };
	struct psb_wk *wk = wk_new_batch(n, &p, 0, 16, 1000, 64, NULL, &d);
	const struct psb_wk_stats *st = psb_wk_stats(wk);
	const struct psb_kv_stats *ks = psb_kv_stats(n->kv);
	float a[2], b[4], c[3], outb[4], outc[3], want[4];
	struct psb_wk_op op[3];
	struct psb_rec r[8];
	unsigned int i, nlog0, pass;

	(void)state;
	fill(a, 2, 1.0f);
	fill(b, 4, 5.0f);
	fill(c, 3, -1.0f);
	/* key 3 exists first */
	op_init(&op[0], PSB_MSG_PUSH, 3, sizeof(c), c, NULL);
	assert_int_equal(psb_wk_submit(wk, &op[0], n->now), 0);
	psb_wk_poll(wk, n->now);
	net_run(n);
	assert_int_equal(d.n, 1);

	for (pass = 0; pass < 2; pass++) {
		/* pass 0 loses the BATCH, pass 1 its BATCH_RESP */
		n->drop_batches = pass == 0;
		n->drop_batch_resps = pass == 1;
		d.n = 0;
		memset(outb, 0, sizeof(outb));
		memset(outc, 0, sizeof(outc));
		op_init(&op[0], PSB_MSG_PUSH, 1, sizeof(a), a, NULL);
		op_init(&op[1], PSB_MSG_PUSHPULL, 2, sizeof(b), b, outb);
		op_init(&op[2], PSB_MSG_PULL, 3, sizeof(outc), NULL, outc);
		for (i = 0; i < 3; i++)
			assert_int_equal(psb_wk_submit(wk, &op[i], n->now), 0);
		assert_int_equal(psb_wk_flush(wk), 0);
		assert_int_equal(batch_recs(n, n->nbatch - 1, r, NULL, 8), 3);
		nlog0 = n->nlog;
		net_run(n);
		assert_int_equal(d.n, 0);
		/* the first BATCH_RESP answered the setup push */
		assert_int_equal(n->nbatch_resp, 1 + pass);

		/* not yet timed out */
		n->now += 999;
		psb_wk_poll(wk, n->now);
		assert_int_equal(n->nlog, nlog0);
		/* timed out (and a quarter timeout after the last scan): three ordinary
		 * messages, with the records' ids and types */
		n->now += 250;
		psb_wk_poll(wk, n->now);
		assert_int_equal(n->nlog, nlog0 + 3);
		for (i = 0; i < 3; i++) {
			unsigned int k, found = 0;

			/* the window is scanned in slot order: match resends by id */
			for (k = nlog0; k < n->nlog; k++) {
				const struct sent_rec *l = &n->log[k];

				if (l->req_id != r[i].req_id)
					continue;
				found++;
				assert_int_equal(l->type, op[i].type);
				assert_int_equal(l->type, r[i].type);
				assert_int_equal(l->offset, 0);
			}
			assert_int_equal(found, 1);
		}
		assert_int_equal(n->nbatch, pass + 2);
		net_run(n);
		assert_int_equal(d.n, 3);
		for (i = 0; i < 3; i++) {
			unsigned int k, found = 0;

			assert_int_equal(op[i].status, 0);
			assert_int_equal(op[i].retries, 1);
			for (k = 0; k < d.n; k++)
				found += d.ops[k] == &op[i];
			assert_int_equal(found, 1);
		}
		for (i = 0; i < 4; i++)
			want[i] = (float)(pass + 1) * b[i];
		check_floats(outb, want, 4);
		check_floats(outc, c, 3);
		assert_int_equal(op[1].out_round, pass + 1);
		n->now += 100000;
		psb_wk_poll(wk, n->now);
		net_run(n);
		assert_int_equal(d.n, 3);
		assert_int_equal(psb_wk_inflight(wk), 0);
	}
	/* the server applied every push once: 1 + 2 pushes, 2 pushpulls, 2 pulls */
	assert_int_equal(ks->req[PSB_MSG_PUSH], 3);
	assert_int_equal(ks->req[PSB_MSG_PUSHPULL], 2);
	assert_int_equal(ks->req[PSB_MSG_PULL], 2);
	assert_int_equal(ks->bytes_summed, sizeof(c) + 2 * (sizeof(a) + sizeof(b)));
	/* the retries after the lost BATCH_RESP were answered again, not re-applied */
	assert_int_equal(ks->retries_answered, 3);
	assert_int_equal(ks->batches, 2);
	assert_int_equal(st->retries, 6);
	assert_int_equal(st->completed, 7);
	assert_int_equal(st->failed, 0);
	{
		uint32_t len, round;
		const float *v = psb_kv_get(n->kv, 1, &len, &round);

		assert_non_null(v);
		assert_int_equal(round, 2);
		for (i = 0; i < 2; i++)
			assert_true(v[i] == 2 * a[i]);
	}
	psb_wk_free(wk);
	net_free(n);
}

/*
 * A stride larger than any datagram (the engine accepts up to 65532): a batch
 * still never grows past what one message can carry, and stays intact.
 */
static void
test_batch_large_stride(void **state)
{
	enum { NF = 2000 };	/* 8000-byte values: two records would exceed a datagram */
	struct net *n = net_new(1, 0);
	struct port p;
	struct done_log d = { .n = 0 };
	struct psb_wk_cfg cfg = {
		.rank = 0, .epoch = BEPOCH, .seg_size = 16384, .window = 4,
		.timeout_ns = 1000000, .max_retries = 3, .batch_max = 8192,
		.send = net_send, .send_arg = &p, .done = on_done, .done_arg = &d,
	};
	float *v = malloc(2 * NF * sizeof(float)), *out = malloc(NF * sizeof(float));
	struct psb_wk_op op[3];
	struct psb_wk *wk;

	(void)state;
	assert_non_null(v);
	assert_non_null(out);
	p.net = n;
	p.rank = 0;
	wk = psb_wk_create(&cfg);
	assert_non_null(wk);
	n->wk[0] = wk;
	fill(v, NF, 1.0f);
	fill(v + NF, NF, -7.0f);
	op_init(&op[0], PSB_MSG_PUSH, 1, NF * sizeof(float), v, NULL);
	op_init(&op[1], PSB_MSG_PUSH, 2, NF * sizeof(float), v + NF, NULL);
	op_init(&op[2], PSB_MSG_PULL, 2, NF * sizeof(float), NULL, out);
	assert_int_equal(psb_wk_submit(wk, &op[0], n->now), 0);
	assert_int_equal(psb_wk_submit(wk, &op[1], n->now), 0);
	assert_int_equal(psb_wk_flush(wk), 0);
	/* one record each: together they would not fit a datagram */
	assert_int_equal(n->nbatch, 2);
	net_run(n);
	assert_int_equal(d.n, 2);
	assert_int_equal(op[0].status, 0);
	assert_int_equal(op[1].status, 0);
	assert_int_equal(psb_wk_stats(wk)->batches_sent, 2);
	{
		uint32_t len;
		const float *sv = psb_kv_get(n->kv, 2, &len, NULL);

		assert_non_null(sv);
		assert_int_equal(len, NF * sizeof(float));
		check_floats(sv, v + NF, NF);
	}
	/* the pull's answer (8024 bytes as a record) exceeds the server's BATCH_RESP room */
	assert_int_equal(psb_wk_submit(wk, &op[2], n->now), 0);
	psb_wk_poll(wk, n->now);
	net_run(n);
	assert_int_equal(d.n, 3);
	assert_int_equal(op[2].status, 0);
	check_floats(out, v + NF, NF);
	psb_wk_free(wk);
	net_free(n);
	free(v);
	free(out);
}

/*
 * Like requests queued behind a full transport, records of a batch that could
 * not go out yet are not resent when they time out: nothing was sent (a resend
 * would send each request twice, in the batch and on its own, once the
 * transport has room). They fail only after max_retries timeouts without the
 * transport taking them (test_blocked_transport_fails).
 */
static void
test_batch_blocked_timeout(void **state)
{
	struct net *n = net_new(1, 0);
	struct port p;
	struct done_log d = { .n = 0 };
	struct psb_wk *wk = wk_new_batch(n, &p, 0, 16, 1000, 64, NULL, &d);
	const struct psb_wk_stats *st = psb_wk_stats(wk);
	float a[2] = { 1.0f, 2.0f }, out[2];
	struct psb_wk_op op[2];
	unsigned int t;

	(void)state;
	n->credits = 0;
	op_init(&op[0], PSB_MSG_PUSH, 1, sizeof(a), a, NULL);
	op_init(&op[1], PSB_MSG_PUSHPULL, 2, sizeof(a), a, out);
	assert_int_equal(psb_wk_submit(wk, &op[0], n->now), 0);
	assert_int_equal(psb_wk_submit(wk, &op[1], n->now), 0);
	/* many timeouts (with back-off) while the transport is full, fewer than max_retries */
	for (t = 1; t <= 300; t++)
		psb_wk_poll(wk, n->now + t * 1000);
	assert_int_equal(st->retries, 0);
	assert_int_equal(st->failed, 0);
	assert_int_equal(d.n, 0);
	assert_int_equal(psb_wk_inflight(wk), 2);
	assert_true(psb_wk_pending(wk));

	n->now += 300 * 1000;
	n->credits = -1;
	psb_wk_poll(wk, n->now);
	/* the batch, and only the batch, went out */
	assert_int_equal(n->nlog, 1);
	assert_int_equal(n->nbatch, 1);
	net_run(n);
	assert_int_equal(d.n, 2);
	assert_int_equal(op[0].status, 0);
	assert_int_equal(op[1].status, 0);
	check_floats(out, a, 2);
	assert_int_equal(psb_kv_stats(n->kv)->retries_answered, 0);
	psb_wk_free(wk);
	net_free(n);
}

/*
 * A transport that takes nothing at all (a port whose peer is gone, a tx ring that never
 * drains) must not keep requests forever: each timeout that passes while they wait uses
 * up a try, and after max_retries they fail with -ETIMEDOUT, never having been sent.
 */
static void
test_blocked_transport_fails(void **state)
{
	struct net *n = net_new(1, 0);
	struct port p, pb;
	struct done_log d = { .n = 0 };
	struct psb_wk *wk = wk_new(n, &p, 0, 0, 4, 1000, 3, &d);
	struct psb_wk_cfg bcfg = {
		.rank = 1, .epoch = BEPOCH, .seg_size = BSEG, .window = 4, .timeout_ns = 1000,
		.max_retries = 3, .batch_max = 64, .send = net_send, .send_arg = &pb,
		.done = on_done, .done_arg = &d,
	};
	struct psb_wk *wb;
	float a[6], b[2] = { 1.0f, 2.0f };
	struct psb_wk_op op[2], bop;
	uint64_t t;

	(void)state;
	pb.net = n;
	pb.rank = 1;
	wb = psb_wk_create(&bcfg);
	assert_non_null(wb);
	n->wk[1] = wb;
	fill(a, 6, 1.0f);
	n->credits = 1;		/* the first segment of op[0] goes, nothing after it */
	op_init(&op[0], PSB_MSG_PUSH, 9, sizeof(a), a, NULL);
	op_init(&op[1], PSB_MSG_PULL, 10, sizeof(a), NULL, a);
	op_init(&bop, PSB_MSG_PUSH, 11, sizeof(b), b, NULL);
	assert_int_equal(psb_wk_submit(wk, &op[0], n->now), 0);
	assert_int_equal(psb_wk_submit(wk, &op[1], n->now), 0);
	assert_int_equal(psb_wk_submit(wb, &bop, n->now), 0);
	assert_true(psb_wk_pending(wk));
	assert_true(psb_wk_pending(wb));
	/* 1000 + 2000 + 4000 + 8000 ns: four timeouts, the fourth after three tries fails */
	for (t = 250; t <= 20000 && d.n < 3; t += 250) {
		psb_wk_poll(wk, n->now + t);
		psb_wk_poll(wb, n->now + t);
		if (t < 15000)
			assert_int_equal(d.n, 0);
	}
	assert_int_equal(d.n, 3);
	assert_int_equal(t, 15000 + 250);
	assert_int_equal(op[0].status, -ETIMEDOUT);
	assert_int_equal(op[1].status, -ETIMEDOUT);
	assert_int_equal(bop.status, -ETIMEDOUT);
	assert_int_equal(op[0].retries, 3);
	/* nothing was resent while blocked: one segment went, once */
	assert_int_equal(n->nlog, 1);
	assert_int_equal(psb_wk_stats(wk)->retries, 0);
	assert_int_equal(psb_wk_stats(wk)->failed, 2);
	assert_int_equal(psb_wk_inflight(wk), 0);
	assert_int_equal(psb_wk_inflight(wb), 0);
	psb_wk_free(wk);
	psb_wk_free(wb);
	net_free(n);
}

/* ---- psb_bench ---- */

#define BK	3		/* keys */
#define BLEN	40		/* bytes per key: 3 segments */

struct bench_run {
	uint64_t t_first[2];
	uint64_t t_done[2];
	struct psb_bench_result r[2];
};

static const uint64_t bench_keys[BK] = { 11, 0x8000000000000000ull, 12345678901ull };

/*
 * Two sync workers run the benchmark against n. seg_size and batch_max go to
 * the engines; window_bytes to the benchmark (0: its default, every key at once).
 */
/* When set, bench_pair_sync lets it change worker i's benchmark settings first. */
static void (*bench_tweak)(unsigned int i, struct psb_bench_cfg *bc);

static void
bench_pair_sync(struct net *n, int mode, uint64_t repeat, struct bench_run *out, FILE *log,
		uint16_t seg_size, uint16_t batch_max, uint64_t window_bytes, int sync)
{
	struct port p[2];
	struct psb_bench *b[2];
	int fin[2] = { 0, 0 }, started[2] = { 0, 0 };
	unsigned int i, iter;

	for (i = 0; i < 2; i++) {
		struct psb_bench_cfg bc = {
			.len = BLEN, .repeat = repeat, .mode = mode, .nkeys = BK,
			.keys = bench_keys, .num_workers = 2, .verify = 1,
			.window_bytes = window_bytes,
			.log_every_ns = log != NULL ? 20000 : 0, .log = log,
			.label = i == 0 ? "w0" : "w1",
		};
		struct psb_wk_cfg wc = {
			.rank = (uint16_t)i, .sync = sync, .seg_size = seg_size, .timeout_ns = 50000,
			.max_retries = 100, .batch_max = batch_max, .send = net_send,
			.send_arg = &p[i],
		};

		p[i].net = n;
		p[i].rank = (uint16_t)i;
		if (bench_tweak != NULL)
			bench_tweak(i, &bc);
		b[i] = psb_bench_create(&bc, &wc);
		assert_non_null(b[i]);
		n->wk[i] = psb_bench_wk(b[i]);
	}
	for (iter = 0; iter < 100000 && !(fin[0] && fin[1]); iter++) {
		/* interleave the two workers' steps */
		for (i = 0; i < 2; i++) {
			int rc;

			if (fin[i])
				continue;
			if (!started[i]) {
				started[i] = 1;
				out->t_first[i] = n->now;
			}
			rc = psb_bench_step(b[i], n->now);
			assert_true(rc == 0 || rc == 1);
			if (rc == 1) {
				fin[i] = 1;
				out->t_done[i] = n->now;
			}
		}
		net_run(n);
		n->now += 1000;
	}
	if (n->dropped_req + n->dropped_resp != 0)
		print_message("bench mode %d: %u steps, dropped %llu/%llu\n", mode, iter,
			(unsigned long long)n->dropped_req, (unsigned long long)n->dropped_resp);
	for (i = 0; i < 2; i++) {
		assert_true(fin[i]);
		/* a finished bench stays finished */
		assert_int_equal(psb_bench_step(b[i], n->now), 1);
		psb_bench_result(b[i], n->now + 123456, &out->r[i]);
		n->wk[i] = NULL;
		psb_bench_free(b[i]);
	}
}

static void
bench_pair_cfg(struct net *n, int mode, uint64_t repeat, struct bench_run *out, FILE *log,
		uint16_t seg_size, uint16_t batch_max, uint64_t window_bytes)
{
	bench_pair_sync(n, mode, repeat, out, log, seg_size, batch_max, window_bytes, 1);
}

static void
bench_pair(struct net *n, int mode, uint64_t repeat, struct bench_run *out, FILE *log)
{
	/* not all keys at once: exercises the window */
	bench_pair_cfg(n, mode, repeat, out, log, SEG, 0, 64);
}

static void
check_bench(const struct bench_run *br, int mode, uint64_t repeat)
{
	static const uint64_t ops_per_iter[PSB_BENCH_MODE_MAX] = { 2 * BK, BK, BK, BK };
	unsigned int i;

	for (i = 0; i < 2; i++) {
		const struct psb_bench_result *r = &br->r[i];

		assert_int_equal(r->mode, mode);
		assert_int_equal(r->len, BLEN);
		assert_int_equal(r->nkeys, BK);
		assert_int_equal(r->iterations, repeat);
		assert_int_equal(r->ops, ops_per_iter[mode] * repeat);
		assert_int_equal(r->rtt.count, r->ops);
		/* sync rounds are never stale; every push but each key's first is a sample */
		assert_int_equal(r->stale.max, 0);
		assert_int_equal(r->stale.count, mode == PSB_BENCH_PULL_ONLY ? 0 :
			BK * (repeat - 1));
		assert_int_equal(r->failed, 0);
		assert_int_equal(r->verify_errors, 0);
		assert_true(r->elapsed_ns > 0);
		/*
		 * The result freezes at the end of the last iteration, whatever now is passed
		 * later: the check of every key after the run (verify) is not measured.
		 */
		if (mode != PSB_BENCH_PULL_ONLY)
			assert_true(r->elapsed_ns <= br->t_done[i] - br->t_first[i]);
		else
			assert_true(r->elapsed_ns < br->t_done[i] - br->t_first[i]);
		assert_int_equal(r->run_ns, r->elapsed_ns);
		assert_int_equal(r->resets, 0);
		/* ps-lite's goodput: 8 * len * keys * iterations / ns */
		assert_true(fabs(r->goodput_gbps - 8.0 * BLEN * BK * (double)repeat /
			(double)r->elapsed_ns) < 1e-12);
		assert_true(fabs(r->ops_per_s - (double)r->ops * 1e9 / (double)r->elapsed_ns) <
			1e-6);
	}
}

static void
test_bench_modes(void **state)
{
	/* pushes per key per run: rounds of both workers (1 + 2 per element) */
	static const uint64_t rounds[PSB_BENCH_MODE_MAX] = { 4, 4, 4, 1 };
	struct bench_run *br = calloc(1, sizeof(*br));
	int mode;

	(void)state;
	assert_non_null(br);
	for (mode = 0; mode < PSB_BENCH_MODE_MAX; mode++) {
		struct net *n = net_new(2, 1);
		uint32_t k, len, round;

		bench_pair(n, mode, 4, br, NULL);
		check_bench(br, mode, 4);
		/* the server holds exactly the sync sums */
		for (k = 0; k < BK; k++) {
			const float *v = psb_kv_get(n->kv, bench_keys[k], &len, &round);

			assert_non_null(v);
			assert_int_equal(len, BLEN);
			assert_int_equal(round, rounds[mode]);
			assert_true(v[0] == 3.0f * (float)rounds[mode]);
			assert_true(v[BLEN / 4 - 1] == 3.0f * (float)rounds[mode]);
		}
		assert_true(psb_kv_value_sum(n->kv) ==
			3.0 * (double)rounds[mode] * (BLEN / 4) * BK);
		assert_int_equal(br->r[0].retries + br->r[1].retries, 0);
		net_free(n);
	}
	free(br);
}

/* The benchmark with batching: 40-byte values, two records per 128-byte BATCH. */
static void
test_bench_batch(void **state)
{
	static const uint64_t rounds[PSB_BENCH_MODE_MAX] = { 4, 4, 4, 1 };
	struct bench_run *br = calloc(1, sizeof(*br));
	int mode, lossy;

	(void)state;
	assert_non_null(br);
	for (lossy = 0; lossy < 2; lossy++) {
		for (mode = 0; mode < PSB_BENCH_MODE_MAX; mode++) {
			struct net *n = net_new(2, 1);
			const struct psb_kv_stats *ks = psb_kv_stats(n->kv);
			uint32_t k, len, round;

			if (lossy) {
				n->drop_req_every = 7;
				n->drop_resp_every = 5;
			}
			bench_pair_cfg(n, mode, 4, br, NULL, BSEG, 64, 0);
			check_bench(br, mode, 4);
			for (k = 0; k < BK; k++) {
				const float *v = psb_kv_get(n->kv, bench_keys[k], &len, &round);

				assert_non_null(v);
				assert_int_equal(len, BLEN);
				assert_int_equal(round, rounds[mode]);
				assert_true(v[0] == 3.0f * (float)rounds[mode]);
			}
			assert_true(psb_kv_value_sum(n->kv) ==
				3.0 * (double)rounds[mode] * (BLEN / 4) * BK);
			/* requests went as batches, and answers came back in BATCH_RESPs */
			assert_true(n->nbatch > 0);
			assert_true(ks->batches > 0);
			assert_true(n->nbatch_resp > 0);
			assert_int_equal(ks->bad_records, 0);
			if (lossy)
				assert_true(br->r[0].retries + br->r[1].retries > 0);
			else
				assert_int_equal(br->r[0].retries + br->r[1].retries, 0);
			net_free(n);
		}
	}
	free(br);
}

/* A lossy network: retries, but every value still verified exact. */
static void
test_bench_loss(void **state)
{
	struct bench_run *br = calloc(1, sizeof(*br));
	int mode;

	(void)state;
	assert_non_null(br);
	for (mode = 0; mode < PSB_BENCH_MODE_MAX; mode++) {
		struct net *n = net_new(2, 1);

		n->drop_req_every = 7;
		n->drop_resp_every = 5;
		bench_pair(n, mode, 3, br, NULL);
		check_bench(br, mode, 3);
		assert_true(br->r[0].retries + br->r[1].retries > 0);
		net_free(n);
	}
	free(br);
}

/*
 * Async: the two workers take turns on every key, so each push lands one version after
 * the other worker's: staleness 1 for every push but each key's first.
 */
static void
test_bench_staleness(void **state)
{
	struct bench_run *br = calloc(1, sizeof(*br));
	struct net *n = net_new(2, 0);
	unsigned int i;
	uint32_t round;

	(void)state;
	assert_non_null(br);
	bench_pair_sync(n, PSB_BENCH_PUSH_PULL, 5, br, NULL, SEG, 0, 0, 0);
	for (i = 0; i < 2; i++) {
		const struct psb_bench_result *r = &br->r[i];

		assert_int_equal(r->ops, 5 * BK);
		assert_int_equal(r->stale.count, 4 * BK);
		assert_int_equal(r->stale.min, 1);
		assert_int_equal(r->stale.max, 1);
		assert_true(psb_hist_mean(&r->stale) == 1.0);
	}
	/* async: a key's version counts pushes */
	assert_non_null(psb_kv_get(n->kv, bench_keys[0], NULL, &round));
	assert_int_equal(round, 10);
	net_free(n);
	free(br);
}

/*
 * Async verify: every worker pushes 1 into the elements it owns (i mod 2 = rank), and
 * checks every value read back: its own count exact, every owner's elements even, the
 * counts adding up to the key's version; after the run every key once more. A second
 * run against the same store (a restarted worker) counts from what the key held.
 */
static void
test_bench_async_verify(void **state)
{
	struct bench_run *br = calloc(1, sizeof(*br));
	struct net *n = net_new(2, 0);
	const float *v;
	unsigned int i, k, run;
	uint32_t round, len;

	(void)state;
	assert_non_null(br);
	n->drop_req_every = 5;
	n->drop_resp_every = 4;
	for (run = 1; run <= 2; run++) {
		bench_pair_sync(n, PSB_BENCH_PUSH_PULL, 20, br, NULL, SEG, 0, 0, 0);
		for (i = 0; i < 2; i++) {
			assert_int_equal(br->r[i].verify_errors, 0);
			assert_int_equal(br->r[i].failed, 0);
			assert_int_equal(br->r[i].iterations, 20);
		}
		for (k = 0; k < BK; k++) {
			v = psb_kv_get(n->kv, bench_keys[k], &len, &round);
			assert_non_null(v);
			assert_int_equal(round, 40 * run);
			for (i = 0; i < len / 4; i++)
				assert_true(v[i] == 20.0f * run);
		}
	}
	net_free(n);

	/* a value changed on the way is caught, also when only the check after the run sees
	 * values (PUSH_ONLY) */
	n = net_new(2, 0);
	n->corrupt_at = 7;
	bench_pair_sync(n, PSB_BENCH_PUSH_PULL, 5, br, NULL, SEG, 0, 0, 0);
	assert_int_equal(br->r[0].verify_errors + br->r[1].verify_errors, 1);
	net_free(n);
	n = net_new(2, 0);
	n->corrupt_at = 1;
	bench_pair_sync(n, PSB_BENCH_PUSH_ONLY, 5, br, NULL, SEG, 0, 0, 0);
	assert_int_equal(br->r[0].verify_errors + br->r[1].verify_errors, 1);
	assert_int_equal(br->r[0].ops, 5 * BK);	/* the check after the run is not counted */
	net_free(n);

	/* a worker that does not push its pattern: the counts no longer add up */
	n = net_new(2, 0);
	{
		static const float two[BLEN / 4] = { 2, 2, 2, 2, 2, 2, 2, 2, 2, 2 };
		struct psb_addr from = waddr(1);
		struct psb_hdr h;

		for (k = 0; k < BK; k++) {
			psb_hdr_init(&h, PSB_MSG_PUSH);
			h.sender = 1;
			h.req_id = 1;
			h.key = bench_keys[k];
			h.total_len = BLEN;
			h.seg_size = BLEN;
			h.seg_len = BLEN;
			assert_int_equal(psb_kv_handle(n->kv, &h, two, &from, net_emit, n), 0);
		}
		net_flush(n);
	}
	bench_pair_sync(n, PSB_BENCH_PUSH_PULL, 2, br, NULL, SEG, 0, 0, 0);
	assert_true(br->r[0].verify_errors + br->r[1].verify_errors > 0);
	net_free(n);
	free(br);
}

/* A second run against a server whose rounds moved on follows the server's round. */
static void
test_bench_follow_round(void **state)
{
	struct bench_run *br = calloc(1, sizeof(*br));
	struct net *n = net_new(2, 1);
	uint32_t round;

	(void)state;
	assert_non_null(br);
	bench_pair(n, PSB_BENCH_PUSH_PULL, 2, br, NULL);
	check_bench(br, PSB_BENCH_PUSH_PULL, 2);
	bench_pair(n, PSB_BENCH_PUSH_PULL, 3, br, NULL);
	check_bench(br, PSB_BENCH_PUSH_PULL, 3);
	assert_non_null(psb_kv_get(n->kv, bench_keys[0], NULL, &round));
	assert_int_equal(round, 5);
	assert_true(psb_kv_value_sum(n->kv) == 3.0 * 5 * (BLEN / 4) * BK);
	net_free(n);
	free(br);
}

/* Worker 0 has 2 iterations left of the job; worker 1 restarted and rejoins it (repeat 5). */
static void
rejoin_tweak(unsigned int i, struct psb_bench_cfg *bc)
{
	bc->repeat = i == 0 ? 2 : 5;
	bc->rejoin = i == 1;
}

/*
 * A worker restarted in a sync job rejoins it: with rejoin, the rounds the job closed count
 * toward its repeat, so it ends with the other worker (here: the job had closed 3 rounds
 * of 5; the other worker has 2 left) instead of waiting for rounds nobody pushes.
 */
static void
test_bench_rejoin(void **state)
{
	struct bench_run *br = calloc(1, sizeof(*br));
	struct net *n = net_new(2, 1);
	uint32_t round, i;

	(void)state;
	assert_non_null(br);
	bench_pair(n, PSB_BENCH_PUSH_PULL, 3, br, NULL);
	bench_tweak = rejoin_tweak;
	bench_pair(n, PSB_BENCH_PUSH_PULL, 5, br, NULL);
	bench_tweak = NULL;
	for (i = 0; i < 2; i++) {
		assert_int_equal(br->r[i].failed, 0);
		assert_int_equal(br->r[i].verify_errors, 0);
		assert_int_equal(br->r[i].iterations, 2);
	}
	assert_non_null(psb_kv_get(n->kv, bench_keys[0], NULL, &round));
	assert_int_equal(round, 5);
	assert_true(psb_kv_value_sum(n->kv) == 3.0 * 5 * (BLEN / 4) * BK);
	net_free(n);
	free(br);
}

/* verify catches a value the network changed on the way */
static void
test_bench_verify_detects(void **state)
{
	struct bench_run *br = calloc(1, sizeof(*br));
	struct net *n = net_new(2, 1);

	(void)state;
	assert_non_null(br);
	n->corrupt_at = 5;
	bench_pair(n, PSB_BENCH_PUSH_PULL, 3, br, NULL);
	assert_int_equal(br->r[0].verify_errors + br->r[1].verify_errors, 1);
	assert_int_equal(br->r[0].failed + br->r[1].failed, 0);
	assert_int_equal(br->r[0].iterations, 3);
	net_free(n);
	free(br);
}

/* The scheduler says a server is lost: psb_bench_fail ends the run with that, once. */
static void
test_bench_fail(void **state)
{
	struct net *n = net_new(1, 1);
	struct port p = { .net = n, .rank = 0 };
	struct psb_bench_cfg bc = {
		.len = BLEN, .repeat = 1000000, .mode = PSB_BENCH_PUSH_PULL, .nkeys = BK,
		.keys = bench_keys, .num_workers = 1, .label = "w0",
	};
	struct psb_wk_cfg wc = {
		.rank = 0, .sync = 1, .seg_size = SEG, .timeout_ns = 50000, .max_retries = 100,
		.send = net_send, .send_arg = &p,
	};
	struct psb_bench *b = psb_bench_create(&bc, &wc);
	struct psb_bench_result r;
	char why[160];
	unsigned int i;

	(void)state;
	assert_non_null(b);
	n->wk[0] = psb_bench_wk(b);
	for (i = 0; i < 50; i++) {
		assert_int_equal(psb_bench_step(b, n->now), 0);
		net_run(n);
		n->now += 1000;
	}
	psb_bench_fail(b, -EHOSTDOWN, bench_keys[1], 3100);
	psb_bench_fail(b, -ESTALE, bench_keys[0], 0);	/* the first reason stays */
	assert_int_equal(psb_bench_step(b, n->now), -EIO);
	assert_int_equal(psb_bench_step(b, n->now + 1), -EIO);
	psb_bench_result(b, n->now, &r);
	assert_int_equal(r.first_error, -EHOSTDOWN);
	assert_true(r.first_error_key == bench_keys[1]);
	assert_int_equal(r.first_error_aux, 3100);
	assert_true(r.iterations > 0);
	assert_non_null(strstr(psb_bench_error_text(-EHOSTDOWN, 0, why, sizeof(why)), "dead"));
	assert_non_null(strstr(psb_bench_error_text(-ESTALE, 0, why, sizeof(why)), "restarted"));
	n->wk[0] = NULL;
	psb_bench_free(b);
	net_free(n);
}

static void
test_bench_goodput(void **state)
{
	struct bench_run *br = calloc(1, sizeof(*br));
	struct net *n = net_new(2, 1);
	char *buf = NULL;
	size_t sz = 0;
	FILE *log = open_memstream(&buf, &sz);
	FILE *sum;
	char *sbuf = NULL;
	size_t ssz = 0;

	(void)state;
	assert_non_null(br);
	assert_non_null(log);
	bench_pair(n, PSB_BENCH_PUSH_THEN_PULL, 5, br, log);
	fclose(log);
	check_bench(br, PSB_BENCH_PUSH_THEN_PULL, 5);
	/* elapsed from the fake clock: first step to the end of the last iteration (the
	 * check of every key that follows is not measured) */
	assert_true(br->r[0].elapsed_ns > 0 &&
		br->r[0].elapsed_ns <= br->t_done[0] - br->t_first[0]);
	assert_true(fabs(br->r[0].goodput_gbps -
		(8.0 * 40 * 3 * 5) / (double)br->r[0].elapsed_ns) < 1e-12);
	/* progress lines came out, labelled */
	assert_non_null(buf);
	assert_non_null(strstr(buf, "w0: iter "));
	assert_non_null(strstr(buf, "w1: iter "));
	assert_non_null(strstr(buf, "goodput"));
	free(buf);

	sum = open_memstream(&sbuf, &ssz);
	assert_non_null(sum);
	psb_bench_print(&br->r[0], "lbl", sum);
	fclose(sum);
	assert_non_null(strstr(sbuf,
		"lbl: mode 0 (PUSH_THEN_PULL), len 40 B, 3 keys, 5 iterations"));
	assert_non_null(strstr(sbuf, "failed 0, verify errors 0"));
	assert_non_null(strstr(sbuf, "lbl: staleness (versions other workers pushed unseen, "
		"per push): mean 0.00  p99 0  max 0  (n=12)"));
	free(sbuf);
	net_free(n);
	free(br);
}

static void
test_bench_create_invalid(void **state)
{
	struct port p = { .net = NULL, .rank = 0 };
	struct psb_bench_cfg good = {
		.len = 8, .repeat = 1, .mode = 0, .nkeys = BK, .keys = bench_keys,
		.num_workers = 1,
	};
	struct psb_wk_cfg wc = { .seg_size = SEG, .timeout_ns = 1000, .send = net_send,
		.send_arg = &p };
	struct psb_bench_cfg c;

	(void)state;
	c = good;
	c.len = 0;
	assert_null(psb_bench_create(&c, &wc));
	c.len = 6;
	assert_null(psb_bench_create(&c, &wc));
	c = good;
	c.nkeys = 0;
	assert_null(psb_bench_create(&c, &wc));
	c = good;
	c.keys = NULL;
	assert_null(psb_bench_create(&c, &wc));
	c = good;
	c.mode = PSB_BENCH_MODE_MAX;
	assert_null(psb_bench_create(&c, &wc));
	c.mode = -1;
	assert_null(psb_bench_create(&c, &wc));
	c = good;
	c.num_workers = 0;
	assert_null(psb_bench_create(&c, &wc));
	psb_bench_free(psb_bench_create(&good, &wc));
	psb_bench_free(NULL);
}

static void
test_bench_mode_parse(void **state)
{
	(void)state;
	assert_int_equal(psb_bench_mode_parse("0"), PSB_BENCH_PUSH_THEN_PULL);
	assert_int_equal(psb_bench_mode_parse("1"), PSB_BENCH_PUSH_PULL);
	assert_int_equal(psb_bench_mode_parse("3"), PSB_BENCH_PULL_ONLY);
	assert_int_equal(psb_bench_mode_parse("PUSH_PULL"), PSB_BENCH_PUSH_PULL);
	assert_int_equal(psb_bench_mode_parse("push_pull"), PSB_BENCH_PUSH_PULL);
	assert_int_equal(psb_bench_mode_parse("Push_Only"), PSB_BENCH_PUSH_ONLY);
	assert_int_equal(psb_bench_mode_parse("push_then_pull"), PSB_BENCH_PUSH_THEN_PULL);
	assert_int_equal(psb_bench_mode_parse("PULL_ONLY"), PSB_BENCH_PULL_ONLY);
	assert_int_equal(psb_bench_mode_parse("4"), -EINVAL);
	assert_int_equal(psb_bench_mode_parse("-1"), -EINVAL);
	assert_int_equal(psb_bench_mode_parse("1x"), -EINVAL);
	assert_int_equal(psb_bench_mode_parse("push"), -EINVAL);
	assert_int_equal(psb_bench_mode_parse("push_pull_"), -EINVAL);
	assert_int_equal(psb_bench_mode_parse(""), -EINVAL);
	assert_int_equal(psb_bench_mode_parse(NULL), -EINVAL);
	assert_string_equal(psb_bench_mode_name(1), "PUSH_PULL");
	assert_string_equal(psb_bench_mode_name(3), "PULL_ONLY");
	assert_string_equal(psb_bench_mode_name(4), "UNKNOWN");
	assert_string_equal(psb_bench_mode_name(-1), "UNKNOWN");
}

/* Files in dir other than name (leftover temporaries). */
static unsigned int
count_others(const char *dir, const char *name)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (name == NULL || strcmp(e->d_name, name) != 0)
			n++;
	}
	closedir(d);
	return n;
}

static double
jnum(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);

	assert_non_null(v);
	assert_true(json_is_number(v));
	return json_number_value(v);
}

static void
test_bench_json(void **state)
{
	struct psb_bench_result *r = calloc(1, sizeof(*r));
	char dir[] = "/tmp/psb_test_wk_XXXXXX";
	char path[256], bad[300];
	json_t *o, *lat, *hist, *cdf;
	json_error_t jerr;
	unsigned int i;

	(void)state;
	assert_non_null(r);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/result.json", dir);

	psb_hist_init(&r->rtt);
	r->mode = PSB_BENCH_PUSH_PULL;
	r->len = 4096;
	r->nkeys = 7;
	r->iterations = 10;
	r->ops = 70;
	r->elapsed_ns = 2000000000ull;
	r->goodput_gbps = 8.0 * 4096 * 7 * 10 / 2e9;
	r->ops_per_s = 35.0;
	r->retries = 3;
	r->failed = 1;
	r->verify_errors = 2;
	for (i = 1; i <= 100; i++)
		psb_hist_add(&r->rtt, i * 1000);
	psb_hist_init(&r->stale);
	psb_hist_add(&r->stale, 0);
	psb_hist_add(&r->stale, 0);
	psb_hist_add(&r->stale, 1);
	psb_hist_add(&r->stale, 3);
	psb_hist_add(&r->stale, 7);

	/* a previous file is replaced */
	{
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		fputs("old junk", f);
		fclose(f);
	}
	assert_int_equal(psb_bench_write_json(r, "w3", "done", NULL, path), 0);
	assert_int_equal(count_others(dir, "result.json"), 0);
	o = json_load_file(path, 0, &jerr);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "label")), "w3");
	assert_string_equal(json_string_value(json_object_get(o, "mode_name")), "PUSH_PULL");
	assert_string_equal(json_string_value(json_object_get(o, "state")), "done");
	assert_null(json_object_get(o, "error"));
	assert_true(jnum(o, "mode") == 1);
	assert_true(jnum(o, "len") == 4096);
	assert_true(jnum(o, "keys") == 7);
	assert_true(jnum(o, "iterations") == 10);
	assert_true(jnum(o, "requests") == 70);
	assert_true(fabs(jnum(o, "elapsed_s") - 2.0) < 1e-12);
	assert_true(fabs(jnum(o, "goodput_gbps") - r->goodput_gbps) < 1e-12);
	assert_true(jnum(o, "requests_per_s") == 35.0);
	assert_true(jnum(o, "retries") == 3);
	assert_true(jnum(o, "failed") == 1);
	assert_true(jnum(o, "verify_errors") == 2);
	lat = json_object_get(o, "rtt_us");
	assert_true(json_is_object(lat));
	assert_true(jnum(lat, "count") == 100);
	assert_true(jnum(lat, "min") == 1.0);
	assert_true(jnum(lat, "max") == 100.0);
	assert_true(fabs(jnum(lat, "mean") - 50.5) < 1e-9);
	assert_true(fabs(jnum(lat, "p50") - 50.0) < 1.0);
	assert_true(fabs(jnum(lat, "p99") - 99.0) < 1.0);
	assert_true(jnum(lat, "p90") <= jnum(lat, "p99"));
	assert_true(jnum(lat, "p99") <= jnum(lat, "p99.9"));
	/* cumulative buckets: 1 us holds none of 1.000 us (its bucket reaches 1.007 us), and
	 * every bound from 100 us on holds all */
	hist = json_object_get(json_object_get(lat, "hist"), "le");
	assert_true(json_is_object(hist));
	assert_true(jnum(hist, "0.5") == 0);
	assert_true(jnum(hist, "1") == 0);
	assert_true(jnum(hist, "2") == 1);
	assert_true(jnum(hist, "5") == 4);
	assert_true(jnum(hist, "50") == 49);
	assert_true(jnum(hist, "100") == 99);
	assert_true(jnum(hist, "200") == 100);
	assert_true(jnum(hist, "1000000") == 100);
	assert_true(jnum(hist, "+Inf") == 100);
	assert_int_equal(json_object_size(hist), 21);
	assert_true(jnum(json_object_get(lat, "hist"), "count") == 100);
	assert_true(fabs(jnum(json_object_get(lat, "hist"), "sum") - 5050.0) < 1e-9);
	/* the CDF: from min (0 %) to max (100 %), percents and round trips both rising */
	cdf = json_object_get(lat, "cdf");
	assert_true(json_is_array(cdf));
	assert_int_equal(json_array_size(cdf), 22);
	assert_true(json_number_value(json_array_get(json_array_get(cdf, 0), 0)) == 0.0);
	assert_true(json_number_value(json_array_get(json_array_get(cdf, 0), 1)) == 1.0);
	assert_true(json_number_value(json_array_get(json_array_get(cdf, 21), 0)) == 100.0);
	assert_true(json_number_value(json_array_get(json_array_get(cdf, 21), 1)) == 100.0);
	for (i = 1; i < json_array_size(cdf); i++) {
		json_t *a = json_array_get(cdf, i - 1), *b = json_array_get(cdf, i);

		assert_true(json_number_value(json_array_get(a, 0)) <
			    json_number_value(json_array_get(b, 0)));
		assert_true(json_number_value(json_array_get(a, 1)) <=
			    json_number_value(json_array_get(b, 1)));
		/* 100 samples of 1..100 us: the p-th percentile is within a bucket of p us */
		assert_true(fabs(json_number_value(json_array_get(b, 1)) -
				 fmax(1.0, json_number_value(json_array_get(b, 0)))) < 1.6);
	}
	lat = json_object_get(o, "staleness");
	assert_true(jnum(lat, "count") == 5);
	assert_true(jnum(lat, "max") == 7);
	assert_true(fabs(jnum(lat, "mean") - 2.2) < 1e-12);
	hist = json_object_get(json_object_get(lat, "hist"), "le");
	assert_true(jnum(hist, "0") == 2);
	assert_true(jnum(hist, "1") == 3);
	assert_true(jnum(hist, "2") == 3);
	assert_true(jnum(hist, "3") == 4);
	assert_true(jnum(hist, "6") == 4);
	assert_true(jnum(hist, "8") == 5);
	assert_true(jnum(hist, "+Inf") == 5);
	json_decref(o);

	/* no samples: the latency block is all zero, not the empty histogram's sentinels */
	psb_hist_reset(&r->rtt);
	assert_int_equal(psb_bench_write_json(r, NULL, "failed", "why", path), 0);
	o = json_load_file(path, 0, &jerr);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "label")), "worker");
	/* a failed run says so, and why */
	assert_string_equal(json_string_value(json_object_get(o, "state")), "failed");
	assert_string_equal(json_string_value(json_object_get(o, "error")), "why");
	lat = json_object_get(o, "rtt_us");
	assert_true(jnum(lat, "count") == 0);
	assert_true(jnum(lat, "min") == 0.0);
	assert_true(jnum(lat, "max") == 0.0);
	assert_true(jnum(lat, "p50") == 0.0);
	assert_int_equal(json_array_size(json_object_get(lat, "cdf")), 0);
	json_decref(o);

	/* a directory that does not exist: an error, and nothing left behind */
	snprintf(bad, sizeof(bad), "%s/nodir/result.json", dir);
	assert_true(psb_bench_write_json(r, "x", NULL, NULL, bad) < 0);
	assert_int_equal(count_others(dir, "result.json"), 0);

	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
	free(r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_create_invalid),
		cmocka_unit_test(test_window_full),
		cmocka_unit_test(test_send_blocked),
		cmocka_unit_test(test_error_while_blocked),
		cmocka_unit_test(test_loss),
		cmocka_unit_test(test_repair),
		cmocka_unit_test(test_max_retries),
		cmocka_unit_test(test_blocked_transport_fails),
		cmocka_unit_test(test_error_reply),
		cmocka_unit_test(test_busy_retry),
		cmocka_unit_test(test_bench_async_verify),
		cmocka_unit_test(test_stray),
		cmocka_unit_test(test_dup_response),
		cmocka_unit_test(test_server_restart),
		cmocka_unit_test(test_server_epochs),
		cmocka_unit_test(test_batch_roundtrip),
		cmocka_unit_test(test_batch_dest),
		cmocka_unit_test(test_abort),
		cmocka_unit_test(test_batch_split),
		cmocka_unit_test(test_batch_blocked),
		cmocka_unit_test(test_batch_blocked_timeout),
		cmocka_unit_test(test_batch_loss),
		cmocka_unit_test(test_batch_large_stride),
		cmocka_unit_test(test_bench_modes),
		cmocka_unit_test(test_bench_batch),
		cmocka_unit_test(test_bench_loss),
		cmocka_unit_test(test_bench_follow_round),
		cmocka_unit_test(test_bench_rejoin),
		cmocka_unit_test(test_bench_staleness),
		cmocka_unit_test(test_bench_verify_detects),
		cmocka_unit_test(test_bench_fail),
		cmocka_unit_test(test_bench_goodput),
		cmocka_unit_test(test_bench_create_invalid),
		cmocka_unit_test(test_bench_mode_parse),
		cmocka_unit_test(test_bench_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
