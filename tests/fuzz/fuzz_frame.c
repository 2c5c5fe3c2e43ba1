/* libFuzzer target: psb_frame_parse and what the datapath then does with each kind of frame. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "psb_kv.h"
#include "psb_proto.h"
#include "psb_reasm.h"
#include "psb_sched.h"
#include "psb_wk.h"
#include "fuzz_seeds.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


/* Mark every segment of a value only when it has few; larger ones get two marks. */
#define FUZZ_FULL_MARK_SEGS	256

static const uint8_t my_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };

/* What a node accepts: a strict server, a strict worker, permissive, and in between. */
static const struct psb_parse_cfg cfgs[] = {
	{ .my_ip = FUZZ_SERVER_IP, .psb_port = PSB_UDP_PORT, .sched_port = PSB_SCHED_PORT,
		.check_ip_csum = 1 },
	{ .my_ip = FUZZ_WORKER_IP, .psb_port = FUZZ_WORKER_PORT, .sched_port = 0,
		.check_ip_csum = 1 },
	{ .my_ip = 0, .psb_port = 0, .sched_port = 0, .check_ip_csum = 0 },
	{ .my_ip = FUZZ_SERVER_IP, .psb_port = 0, .sched_port = 0, .check_ip_csum = 0 },
	{ .my_ip = 0, .psb_port = PSB_UDP_PORT, .sched_port = 0, .check_ip_csum = 1 },
};

/* Room for any UDP payload the parser can accept, rebuilt untagged. */
static uint8_t rebuilt[PSB_FRAME_HLEN + 65536];

/* The store BATCH frames run against: 4 workers, async, values up to 1 MiB. */
#define FUZZ_KV_WORKERS		4
#define FUZZ_KV_MAX_VALUE	(1u << 20)
#define FUZZ_KV_SEG		1024

/* BATCH_RESP room: what a server has at most, and a small one that pushes answers to emit. */
static uint8_t batch_out[PSB_MAX_UDP_PAYLOAD + 8];
#define FUZZ_SMALL_CAP		64

static uint16_t
rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* Exact-size heap copy: the sanitizers then see any access past the frame. */
static uint8_t *
dup_frame(const uint8_t *data, size_t size)
{
	uint8_t *c = malloc(size == 0 ? 1 : size);

	CHECK(c != NULL);
	memcpy(c, data, size);
	return c;
}

static int
same_hdr(const struct psb_hdr *a, const struct psb_hdr *b)
{
	return a->magic == b->magic && a->version == b->version && a->type == b->type &&
		a->flags == b->flags && a->status == b->status && a->sender == b->sender &&
		a->req_id == b->req_id && a->round == b->round && a->key == b->key &&
		a->total_len == b->total_len && a->offset == b->offset &&
		a->seg_len == b->seg_len && a->seg_size == b->seg_size && a->aux == b->aux;
}

/* Drive reassembly for a header that passed the segment checks, as the server does. */
static void
drive_reasm(const struct psb_hdr *h)
{
	struct psb_reasm r;
	struct psb_hdr o;
	uint32_t i, nseg;
	int rc, done = 0;

	rc = psb_reasm_init(&r, h->total_len, h->seg_size);
	if (rc == -ENOMEM)
		return;
	CHECK(rc == 0);
	nseg = r.nseg;
	CHECK(nseg == psb_seg_count(h->total_len, h->seg_size));
	rc = psb_reasm_mark(&r, h);
	CHECK(rc == (nseg == 1 ? PSB_REASM_DONE : PSB_REASM_NEW));
	CHECK(psb_reasm_mark(&r, h) == PSB_REASM_DUP);
	CHECK(psb_reasm_complete(&r) == (nseg == 1));
	if (nseg > 1 && nseg <= FUZZ_FULL_MARK_SEGS) {
		/* The rest of the value, as its sender would cut it. */
		for (i = 0; i < nseg; i++) {
			o = *h;
			o.offset = i * h->seg_size;
			o.seg_len = (uint16_t)(h->total_len - o.offset < h->seg_size ?
					h->total_len - o.offset : h->seg_size);
			CHECK(psb_hdr_check_segment(&o, o.seg_len) == 0);
			rc = psb_reasm_mark(&r, &o);
			if (o.offset == h->offset) {
				CHECK(rc == PSB_REASM_DUP);
				continue;
			}
			CHECK(rc == PSB_REASM_NEW || rc == PSB_REASM_DONE);
			done += rc == PSB_REASM_DONE;
			CHECK((rc == PSB_REASM_DONE) == (i == nseg - 1 ||
					(h->offset == (nseg - 1) * (uint32_t)h->seg_size &&
					 i == nseg - 2)));
		}
		CHECK(done == 1);
		CHECK(psb_reasm_complete(&r));
	}
	/* A header of another value is refused. */
	o = *h;
	o.total_len = h->total_len + 4;
	CHECK(psb_reasm_mark(&r, &o) == -EINVAL);
	psb_reasm_fini(&r);
	psb_reasm_fini(&r);
}

static void
check_psb(const uint8_t *data, size_t size, const struct psb_parse_cfg *cfg,
		const struct psb_frame *f)
{
	struct psb_frame g;
	uint8_t enc[PSB_HDR_LEN];
	size_t len;

	CHECK(f->l4_off >= f->l3_off + PSB_IP_HLEN);
	CHECK(f->payload == data + f->l4_off + PSB_UDP_HLEN + PSB_HDR_LEN);
	CHECK(f->payload + f->payload_len <= data + size);
	CHECK(f->hdr.magic == PSB_MAGIC);
	if (cfg->my_ip != 0)
		CHECK(f->dst.ip == cfg->my_ip ||
		      (f->dst.ip == 0xffffffffu && f->hdr.type == PSB_MSG_BYE));
	if (cfg->psb_port != 0)
		CHECK(f->dst.port == cfg->psb_port ||
				(cfg->sched_port != 0 && f->dst.port == cfg->sched_port));
	psb_hdr_encode(enc, &f->hdr);
	CHECK(memcmp(enc, f->payload - PSB_HDR_LEN, PSB_HDR_LEN) == 0);

	if (f->hdr.version == PSB_VERSION) {
		CHECK(psb_hdr_check_segment(&f->hdr, f->payload_len) == 0);
		CHECK(f->payload_len == f->hdr.seg_len);
		CHECK(f->hdr.total_len <= PSB_MAX_VALUE);
		drive_reasm(&f->hdr);
	}

	/* What a responder would send back parses to the same message. */
	len = psb_frame_build(rebuilt, &f->src, &f->dst, &f->hdr, f->payload, f->payload_len);
	CHECK(len == PSB_FRAME_HLEN + (size_t)f->payload_len);
	CHECK(psb_frame_parse(rebuilt, len, cfg, &g) == PSB_FRAME_PSB);
	CHECK(same_hdr(&g.hdr, &f->hdr));
	CHECK(g.payload_len == f->payload_len);
	CHECK(g.src.ip == f->src.ip && g.dst.ip == f->dst.ip);
	CHECK(g.src.port == f->src.port && g.dst.port == f->dst.port);
	CHECK(f->payload_len == 0 || memcmp(g.payload, f->payload, f->payload_len) == 0);
}

static void
check_arp_request(const uint8_t *data, size_t size, const struct psb_parse_cfg *cfg,
		const struct psb_frame *f)
{
	struct psb_parse_cfg peer = { .my_ip = f->src.ip };
	uint8_t out[64];
	struct psb_frame g;
	uint8_t *copy;
	size_t n;

	CHECK(cfg->my_ip != 0 && f->dst.ip == cfg->my_ip);
	CHECK((size_t)f->l3_off + 28 <= size);
	n = psb_arp_reply(out, data, size, my_mac, cfg->my_ip);
	CHECK(n == 42);
	CHECK(psb_frame_parse(out, n, &peer, &g) == PSB_FRAME_ARP_REPLY);
	CHECK(memcmp(g.src.mac, my_mac, 6) == 0);
	CHECK(g.src.ip == cfg->my_ip);
	CHECK(memcmp(g.dst.mac, f->src.mac, 6) == 0);
	CHECK(g.dst.ip == f->src.ip);
	CHECK(memcmp(out, f->src.mac, 6) == 0);

	/* The datapath answers in the receive buffer. */
	copy = dup_frame(data, size);
	CHECK(psb_arp_reply(copy, copy, size, my_mac, cfg->my_ip) == 42);
	CHECK(memcmp(copy, out, 42) == 0);
	free(copy);
}

static void
check_icmp_echo(const uint8_t *data, size_t size, const struct psb_frame *f)
{
	static const struct psb_parse_cfg any = { .check_ip_csum = 1 };
	const uint8_t *ip;
	struct psb_frame g;
	uint8_t *copy;
	size_t ihl, ip_len;

	copy = dup_frame(data, size);
	CHECK(psb_icmp_echo_reply(copy, size, f) == 0);
	ip = copy + f->l3_off;
	ihl = (ip[0] & 0x0fu) * 4u;
	ip_len = rd16(ip + 2);
	CHECK(f->l4_off == f->l3_off + ihl);
	CHECK(f->l3_off + ip_len <= size);
	CHECK(psb_csum_partial(ip, ihl, 0) == 0xffff);
	CHECK(psb_csum_partial(copy + f->l4_off, ip_len - ihl, 0) == 0xffff);
	CHECK(copy[f->l4_off] == 0 && copy[f->l4_off + 1] == 0);
	CHECK(memcmp(copy, data + 6, 6) == 0 && memcmp(copy + 6, data, 6) == 0);
	CHECK(memcmp(ip + 12, data + f->l3_off + 16, 4) == 0);
	CHECK(memcmp(ip + 16, data + f->l3_off + 12, 4) == 0);
	/* An echo reply is a well-formed frame that psb itself never answers. */
	CHECK(psb_frame_parse(copy, size, &any, &g) == -PSB_DROP_ICMP);
	free(copy);
}

/*
 * An ECHO the echo role answers: its answer (the header as ECHO_RESP, the payload, from this
 * node back to the sender) is never longer than the request and reaches the sender as the
 * same message.
 */
static void
check_echo(size_t size, const struct psb_parse_cfg *cfg, const struct psb_frame *f)
{
	const struct psb_parse_cfg sender = { .my_ip = f->src.ip, .check_ip_csum = 1 };
	struct psb_addr me = f->dst;
	struct psb_hdr h = f->hdr;
	struct psb_frame g;
	size_t len;

	if (f->hdr.version != PSB_VERSION || f->hdr.type != PSB_MSG_ECHO ||
	    !psb_echo_answerable(&f->hdr, &f->src, cfg->my_ip))
		return;
	CHECK(f->payload_len <= PSB_ECHO_MAX_LEN && f->hdr.offset == 0);
	memcpy(me.mac, my_mac, 6);
	h.type = PSB_MSG_ECHO_RESP;
	len = psb_frame_build(rebuilt, &me, &f->src, &h, f->payload, f->payload_len);
	CHECK(len <= size);
	CHECK(psb_frame_parse(rebuilt, len, &sender, &g) == PSB_FRAME_PSB);
	CHECK(same_hdr(&g.hdr, &h));
	CHECK(g.dst.ip == f->src.ip && g.dst.port == f->src.port);
	CHECK(memcmp(g.dst.mac, f->src.mac, 6) == 0);
	CHECK(g.payload_len == f->payload_len);
	CHECK(f->payload_len == 0 || memcmp(g.payload, f->payload, f->payload_len) == 0);
}

/*
 * Walk the records of a BATCH / BATCH_RESP payload as its receiver does. Each
 * record stays inside the payload and its header re-encodes to the same bytes.
 * Returns how many leading records are requests a server handles (PUSH, PULL,
 * PUSHPULL); *stopped is 1 when the walk ended at a broken or foreign record.
 */
static unsigned int
walk_records(const uint8_t *p, size_t len, int *stopped)
{
	uint8_t enc[PSB_REC_HLEN];
	unsigned int nreq = 0;
	int requests = 1;
	size_t off = 0;

	*stopped = 0;
	while (off < len) {
		struct psb_rec r;
		int used = psb_rec_decode(&r, p + off, len - off);

		if (used < 0) {
			CHECK(used == -EINVAL);
			/* only a record cut short or of a length not a multiple of 4 is refused */
			CHECK(len - off < PSB_REC_HLEN || (r.len & 3) != 0 ||
			      (size_t)r.len > len - off - PSB_REC_HLEN);
			*stopped = 1;
			break;
		}
		CHECK(used == PSB_REC_HLEN + r.len);
		CHECK((r.len & 3) == 0);
		CHECK(off + (size_t)used <= len);
		psb_rec_encode(enc, &r);
		CHECK(memcmp(enc, p + off, PSB_REC_HLEN) == 0);
		if (r.type != PSB_MSG_PUSH && r.type != PSB_MSG_PULL && r.type != PSB_MSG_PUSHPULL) {
			if (requests)
				*stopped = 1;
			requests = 0;
		}
		nreq += requests;
		off += (size_t)used;
	}
	CHECK(off <= len);
	return nreq;
}

struct emit_check {
	const struct psb_hdr *req;	/* the BATCH */
	unsigned int calls;
};

/* Responses that do not go into the BATCH_RESP: arguments only, and the value is readable. */
static void
emit_check(void *arg, const struct psb_addr *to, struct psb_hdr *h, const void *value)
{
	struct emit_check *e = arg;
	const volatile uint8_t *v = value;
	uint8_t x = 0;
	uint32_t i;

	e->calls++;
	CHECK(to != NULL && h != NULL);
	CHECK(h->magic == PSB_MAGIC && h->version == PSB_VERSION);
	CHECK(h->type == PSB_MSG_ERROR || h->type == PSB_MSG_PUSH_ACK ||
	      h->type == PSB_MSG_PULL_RESP || h->type == PSB_MSG_PUSHPULL_RESP);
	CHECK((h->flags & ~PSB_F_SYNC) == 0);
	CHECK(h->offset == 0 && h->seg_len == 0);
	if (h->type == PSB_MSG_ERROR) {
		CHECK(h->status > PSB_ST_OK && h->status < PSB_ST_MAX);
		CHECK(h->total_len == 0 && value == NULL);
		/* a bad sender is answered under the id it claimed */
		CHECK(h->sender == e->req->sender);
		return;
	}
	CHECK(h->status == PSB_ST_OK);
	CHECK(h->sender < FUZZ_KV_WORKERS);
	CHECK(h->seg_size == FUZZ_KV_SEG);
	CHECK(h->total_len <= FUZZ_KV_MAX_VALUE && (h->total_len & 3) == 0);
	if (h->type == PSB_MSG_PUSH_ACK) {
		CHECK(h->total_len == 0 && value == NULL);
		return;
	}
	CHECK(h->total_len != 0 && value != NULL);
	/* every byte is there to send: the sanitizers see an access past the value */
	for (i = 0; i < h->total_len; i++)
		x ^= v[i];
	(void)x;
}

/*
 * A server's handling of a BATCH: on a fresh store, so each input stands on its own. Its
 * senders may send again a segment's worth of answers to records that repeat others.
 */
static void
run_batch(const struct psb_frame *f, size_t cap)
{
	const struct psb_kv_cfg kc = {
		.num_workers = FUZZ_KV_WORKERS,
		.sync = 0,
		.max_value = FUZZ_KV_MAX_VALUE,
		.seg_size = FUZZ_KV_SEG,
		.resend_burst = FUZZ_KV_SEG,
		.resend_bps = 1000000,
	};
	struct emit_check e = { .req = &f->hdr, .calls = 0 };
	const struct psb_kv_stats *st;
	struct psb_kv *kv;
	size_t out_len = 0, off = 0;
	unsigned int nreq, nans = 0, k;
	uint64_t refused = 0;
	uint32_t len, round;
	int stopped, n;

	kv = psb_kv_create(&kc);
	CHECK(kv != NULL);
	st = psb_kv_stats(kv);
	nreq = walk_records(f->payload, f->payload_len, &stopped);
	memset(batch_out + cap, 0xa5, 8);
	n = psb_kv_handle_batch(kv, &f->hdr, f->payload, &f->src, batch_out, cap, &out_len,
		emit_check, &e);
	/* every leading request record handled, then a stop at the first other one */
	CHECK(n == (int)nreq);
	CHECK(st->batches == 1);
	CHECK(st->bad_records == (uint64_t)stopped);
	CHECK(out_len <= cap);
	CHECK(batch_out[cap] == 0xa5 && batch_out[cap + 7] == 0xa5);
	/* the BATCH_RESP: well-formed answer records using it up exactly */
	while (off < out_len) {
		struct psb_rec r;
		int used = psb_rec_decode(&r, batch_out + off, out_len - off);

		CHECK(used >= PSB_REC_HLEN);
		CHECK(r.type == PSB_MSG_ERROR || r.type == PSB_MSG_PUSH_ACK ||
		      r.type == PSB_MSG_PULL_RESP || r.type == PSB_MSG_PUSHPULL_RESP);
		CHECK((r.type == PSB_MSG_ERROR) == (r.status != PSB_ST_OK));
		CHECK(r.type != PSB_MSG_ERROR || r.len == 0);
		off += (size_t)used;
		nans++;
	}
	CHECK(off == out_len);
	/*
	 * Async: each request is answered once, in the BATCH_RESP or through emit,
	 * except one older than its sender's newest on that key (a later record
	 * of the same batch may have moved the key on), and a repeat its sender's
	 * resend budget did not cover, which never sends more than the budget.
	 */
	for (k = 0; k < PSB_KV_RESEND_MAX; k++)
		refused += st->resend_over_budget[k];
	CHECK(nans + e.calls + st->stale + refused == nreq);
	CHECK(st->resend_bytes <= kc.resend_burst);
	/* the workers' probe key is never kept: a probe is always answered at once */
	CHECK(psb_kv_get(kv, PSB_PROBE_KEY, &len, &round) == NULL);
	psb_kv_free(kv);
}

/* BATCH and BATCH_RESP frames: their records, and a BATCH as a server handles it. */
static void
check_batch(const struct psb_frame *f, int *batch_done)
{
	int stopped;

	if (f->hdr.version != PSB_VERSION ||
	    (f->hdr.type != PSB_MSG_BATCH && f->hdr.type != PSB_MSG_BATCH_RESP))
		return;
	(void)walk_records(f->payload, f->payload_len, &stopped);
	if (f->hdr.type != PSB_MSG_BATCH || *batch_done)
		return;
	/* once per input, not once per parse config that accepts it */
	*batch_done = 1;
	run_batch(f, sizeof(batch_out) - 8);
	run_batch(f, FUZZ_SMALL_CAP);
}

struct repair_check {
	const struct psb_hdr *req;
	unsigned int calls;
	uint32_t val_len;		/* the stored value's length */
};

/* What a store sends for a REPAIR: a REPAIR_RESP that decodes, or segments of the value. */
static void
repair_emit(void *arg, const struct psb_addr *to, struct psb_hdr *h, const void *value)
{
	struct repair_check *rc = arg;
	const volatile uint8_t *v = value;
	struct psb_repair rp;
	uint8_t x = 0;
	uint32_t i;

	rc->calls++;
	CHECK(to != NULL && h->req_id == rc->req->req_id && h->key == rc->req->key);
	if (h->type == PSB_MSG_REPAIR_RESP) {
		CHECK(value != NULL && h->total_len == h->seg_size && h->total_len <= FUZZ_KV_SEG);
		CHECK(psb_repair_decode(&rp, value, h->total_len) == 0);
		CHECK((rp.flags & PSB_REPAIR_ALL) ? rp.nbits == 0 : rp.nbits != 0);
		return;
	}
	if (h->type == PSB_MSG_ERROR || h->type == PSB_MSG_PUSH_ACK) {
		CHECK(h->total_len == 0 && value == NULL);
		return;
	}
	CHECK(h->type == PSB_MSG_PUSHPULL_RESP && h->total_len == rc->val_len && value != NULL);
	if (h->seg_len != 0) {
		/* one segment of the answer: on the stride, inside the value */
		CHECK(h->offset % h->seg_size == 0 && h->offset < h->total_len);
		CHECK(h->seg_len == (h->total_len - h->offset < h->seg_size ?
			h->total_len - h->offset : h->seg_size));
		for (i = 0; i < h->seg_len; i++)
			x ^= v[h->offset + i];
	}
	(void)x;
}

/*
 * A REPAIR as a server handles it: against a push of its sender staged with two segments
 * missing, then against the same request answered; whatever the bitmap says. The sender
 * has a bucket of one answer and one header more; the clock stands still, nothing refills.
 */
static void
check_repair(const struct psb_frame *f, int *repair_done)
{
	const struct psb_kv_cfg kc = {
		.num_workers = FUZZ_KV_WORKERS,
		.max_value = FUZZ_KV_MAX_VALUE,
		.seg_size = FUZZ_KV_SEG,
		.resend_burst = (8 + 1) * PSB_FRAME_HLEN + 8 * FUZZ_KV_SEG,
		.resend_bps = 1000000,
	};
	static float val[8 * FUZZ_KV_SEG / sizeof(float)];
	struct repair_check rc = { .req = &f->hdr, .val_len = sizeof(val) };
	struct psb_addr from = f->src;
	struct psb_repair rp;
	struct psb_hdr h;
	struct psb_kv *kv;
	uint32_t i;

	if (f->hdr.version != PSB_VERSION || f->hdr.type != PSB_MSG_REPAIR || *repair_done)
		return;
	*repair_done = 1;
	if (psb_repair_decode(&rp, f->payload, f->payload_len) == 0)
		CHECK(PSB_REPAIR_HLEN + ((uint64_t)rp.nbits + 7) / 8 <= f->payload_len);
	if (f->hdr.sender >= FUZZ_KV_WORKERS)
		return;
	kv = psb_kv_create(&kc);
	CHECK(kv != NULL);
	psb_hdr_init(&h, PSB_MSG_PUSHPULL);
	h.sender = f->hdr.sender;
	h.req_id = f->hdr.req_id;
	h.key = f->hdr.key;
	h.aux = f->hdr.aux;
	h.total_len = sizeof(val);
	h.seg_size = FUZZ_KV_SEG;
	h.seg_len = FUZZ_KV_SEG;
	for (i = 0; i < 8; i += i == 2 ? 3 : 1) {	/* segments 3 and 4 missing */
		h.offset = i * FUZZ_KV_SEG;
		psb_kv_handle(kv, &h, (const uint8_t *)val + h.offset, &from, repair_emit, &rc);
	}
	psb_kv_handle(kv, &f->hdr, f->payload, &from, repair_emit, &rc);
	for (i = 3; i < 5; i++) {
		h.offset = i * FUZZ_KV_SEG;
		psb_kv_handle(kv, &h, (const uint8_t *)val + h.offset, &from, repair_emit, &rc);
	}
	psb_kv_handle(kv, &f->hdr, f->payload, &from, repair_emit, &rc);
	CHECK(psb_kv_stats(kv)->repairs + psb_kv_stats(kv)->repair_bad == 2);
	CHECK(psb_kv_stats(kv)->resend_bytes <= kc.resend_burst);
	psb_kv_free(kv);
}

/* Handler mode: what was handed over, and what the store sent. */
struct handler_check {
	struct psb_kv *kv;
	unsigned int handed, emitted;
	int answer;		/* answer each request in the handler */
};

static void
handler_emit(void *arg, const struct psb_addr *to, struct psb_hdr *h, const void *value)
{
	struct handler_check *hc = arg;

	hc->emitted++;
	CHECK(to != NULL);
	CHECK(h->type == PSB_MSG_ERROR || h->type == PSB_MSG_REPAIR_RESP ||
	      h->type == PSB_MSG_PUSH_ACK || h->type == PSB_MSG_PULL_RESP ||
	      h->type == PSB_MSG_PUSHPULL_RESP);
	CHECK(h->total_len <= FUZZ_KV_MAX_VALUE);
	CHECK(h->total_len == 0 || value != NULL || h->type == PSB_MSG_ERROR);
}

static void
handler_req(void *arg, const struct psb_kv_req *r)
{
	struct handler_check *hc = arg;
	static const float answer[4] = { 1, 2, 3, 4 };
	const volatile uint8_t *v = r->value;
	uint8_t x = 0;
	uint32_t i;

	hc->handed++;
	CHECK(r->sender < FUZZ_KV_WORKERS && psb_msg_is_request(r->type));
	CHECK(r->key != PSB_PROBE_KEY);
	/* a push's value whole and readable; a pull's none */
	CHECK((r->type == PSB_MSG_PULL) == (r->value == NULL));
	CHECK(r->type == PSB_MSG_PULL || (r->len != 0 && r->len % 4 == 0 &&
					  r->len <= FUZZ_KV_MAX_VALUE));
	for (i = 0; v != NULL && i < r->len; i++)
		x ^= v[i];
	(void)x;
	if (hc->answer) {
		CHECK(psb_kv_respond(hc->kv, r, answer, sizeof(answer), handler_emit, hc) == 0);
		CHECK(psb_kv_respond(hc->kv, r, answer, sizeof(answer), handler_emit, hc) ==
			-ESTALE);
	}
}

/*
 * A request, REPAIR or BATCH as a server in handler mode takes it, answering in the handler
 * or not at all: each request handed over at most once (the frame twice: the repeat is a
 * retry), whole, never the probe.
 */
static void
check_handler(const struct psb_frame *f, int *done)
{
	struct handler_check hc = { .handed = 0 };
	struct psb_kv_cfg kc = {
		.num_workers = FUZZ_KV_WORKERS,
		.max_value = FUZZ_KV_MAX_VALUE,
		.seg_size = FUZZ_KV_SEG,
		.max_bytes = 1u << 20,
		.resend_burst = 4 * FUZZ_KV_SEG,
		.resend_bps = 1000000,
		.request = handler_req,
		.request_arg = &hc,
	};
	size_t out_len;
	int pass, k;

	if (f->hdr.version != PSB_VERSION || *done ||
	    (!psb_msg_is_request(f->hdr.type) && f->hdr.type != PSB_MSG_REPAIR &&
	     f->hdr.type != PSB_MSG_BATCH))
		return;
	*done = 1;
	for (pass = 0; pass < 2; pass++) {
		hc.answer = pass;
		hc.handed = 0;
		hc.kv = psb_kv_create(&kc);
		CHECK(hc.kv != NULL);
		for (k = 0; k < 2; k++) {
			if (f->hdr.type == PSB_MSG_BATCH)
				psb_kv_handle_batch(hc.kv, &f->hdr, f->payload, &f->src, batch_out,
					sizeof(batch_out) - 8, &out_len, handler_emit, &hc);
			else
				psb_kv_handle(hc.kv, &f->hdr, f->payload, &f->src, handler_emit,
					&hc);
		}
		CHECK(psb_kv_stats(hc.kv)->handed == hc.handed);
		CHECK(psb_kv_stats(hc.kv)->answered == (pass ? hc.handed : 0));
		if (f->hdr.type != PSB_MSG_BATCH)
			CHECK(hc.handed <= 1);
		CHECK(psb_kv_bytes(hc.kv) == 0);
		psb_kv_free(hc.kv);
	}
}

/* The scheduler control frames run against: 1 worker, 2 servers, liveness after 3 s. */
#define FUZZ_SCHED_DEAD_NS	3000000000ull
#define FUZZ_SCHED_IP3		0xc6120003u	/* 198.18.0.3: the second server */
#define SEC			1000000000ull

/* What a scheduler sends: well-formed, and its payloads decode. */
static void
sched_emit(void *arg, const struct psb_addr *to, struct psb_hdr *h, const void *payload)
{
	static struct psb_sched_view v;
	struct psb_sched_lost lost[PSB_SCHED_LOST_MAX];

	(void)arg;
	CHECK(to != NULL && h->version == PSB_VERSION && h->seg_len == h->total_len);
	switch (h->type) {
	case PSB_MSG_REGISTER_ACK:
		CHECK(payload != NULL && psb_sched_view_decode(&v, payload, h->seg_len) == 0);
		CHECK(v.num_servers == 2 && v.num_workers == 1);
		CHECK(h->aux < ((h->flags & PSB_F_SERVER) ? 2u : 1u));
		break;
	case PSB_MSG_HEARTBEAT_ACK:
		CHECK(payload != NULL && h->aux <= 2);
		CHECK(psb_sched_lost_decode(lost, PSB_SCHED_LOST_MAX, payload, h->seg_len) ==
			(int)h->aux);
		break;
	case PSB_MSG_BARRIER_ACK:
	case PSB_MSG_FINALIZE:
	case PSB_MSG_FINALIZE_ACK:
		CHECK(h->seg_len == 0);
		break;
	default:
		CHECK(!"a scheduler message of an unknown type");
	}
}

/* A node the scheduler test registers: addressed like the seeds, and sending HEARTBEATs. */
static void
sched_register(struct psb_sched *s, uint32_t ip, uint16_t port, uint8_t role, uint32_t epoch)
{
	struct psb_addr a;
	struct psb_hdr h;

	memset(&a, 0, sizeof(a));
	a.ip = ip;
	a.port = port;
	psb_hdr_init(&h, PSB_MSG_REGISTER);
	h.flags = role | PSB_F_BEATS;
	h.req_id = epoch;
	CHECK(psb_sched_handle(s, &h, &a, sched_emit, NULL) == 0);
}

/* The servers the scheduler lost: at most two, and they encode and decode back the same. */
static void
sched_check_lost(const struct psb_sched *s)
{
	struct psb_sched_lost lost[PSB_SCHED_LOST_MAX], back[PSB_SCHED_LOST_MAX];
	uint8_t buf[4 + PSB_SCHED_LOST_MAX * PSB_SCHED_LOST_ENTRY];
	unsigned int n = psb_sched_lost(s, lost, PSB_SCHED_LOST_MAX), i;
	size_t len;

	CHECK(n <= 2);
	len = psb_sched_lost_encode(lost, n, buf, sizeof(buf));
	CHECK(len == 4 + (size_t)n * PSB_SCHED_LOST_ENTRY);
	CHECK(psb_sched_lost_decode(back, PSB_SCHED_LOST_MAX, buf, len) == (int)n);
	for (i = 0; i < n; i++)
		CHECK(back[i].rank == lost[i].rank && back[i].why == lost[i].why &&
		      back[i].addr.ip == lost[i].addr.ip && back[i].addr.port == lost[i].addr.port &&
		      back[i].silent_ms == lost[i].silent_ms);
}

/*
 * Scheduler frames: a REGISTER_ACK or HEARTBEAT_ACK payload decodes or is refused, and
 * what decodes encodes back the same; any frame, as a scheduler gets it, before the job is
 * ready, once it is, after its nodes went silent and after a server restarted.
 */
static void
check_sched(const struct psb_frame *f, int *sched_done)
{
	const struct psb_sched_cfg cfg = {
		.num_workers = 1, .num_servers = 2, .dead_after_ns = FUZZ_SCHED_DEAD_NS,
	};
	static struct psb_sched_view v, v2;
	static uint8_t buf[4 + PSB_SCHED_MAX_NODES * 24];
	struct psb_sched_lost lost[PSB_SCHED_LOST_MAX];
	struct psb_sched *s;
	int n;

	if (f->hdr.version != PSB_VERSION || *sched_done)
		return;
	*sched_done = 1;
	if (f->hdr.type == PSB_MSG_REGISTER_ACK &&
	    psb_sched_view_decode(&v, f->payload, f->payload_len) == 0) {
		CHECK(psb_sched_view_encode(&v, buf, sizeof(buf)) ==
			psb_sched_view_size(v.num_servers));
		CHECK(psb_sched_view_decode(&v2, buf, sizeof(buf)) == 0);
		CHECK(memcmp(&v, &v2, sizeof(v)) == 0);
	}
	if (f->hdr.type == PSB_MSG_HEARTBEAT_ACK) {
		n = psb_sched_lost_decode(lost, PSB_SCHED_LOST_MAX, f->payload, f->payload_len);
		CHECK(n == -EINVAL || (n >= 0 && n <= PSB_SCHED_LOST_MAX));
	}
	s = psb_sched_create(&cfg);
	CHECK(s != NULL);
	psb_sched_tick(s, 1 * SEC);
	sched_register(s, FUZZ_SERVER_IP, PSB_UDP_PORT, PSB_F_SERVER, 11);
	sched_register(s, FUZZ_WORKER_IP, FUZZ_WORKER_PORT, PSB_F_WORKER, 0);
	(void)psb_sched_handle(s, &f->hdr, &f->src, sched_emit, NULL);
	sched_register(s, FUZZ_SCHED_IP3, PSB_UDP_PORT, PSB_F_SERVER, 12);
	(void)psb_sched_handle(s, &f->hdr, &f->src, sched_emit, NULL);
	sched_check_lost(s);
	/* a second apart (a longer gap is the scheduler's own stall): the nodes go silent */
	psb_sched_tick(s, 2 * SEC);
	psb_sched_tick(s, 3 * SEC);
	psb_sched_tick(s, 4 * SEC);
	psb_sched_tick(s, 5 * SEC);
	(void)psb_sched_handle(s, &f->hdr, &f->src, sched_emit, NULL);
	sched_check_lost(s);
	sched_register(s, FUZZ_SERVER_IP, PSB_UDP_PORT, PSB_F_SERVER, 13);
	(void)psb_sched_handle(s, &f->hdr, &f->src, sched_emit, NULL);
	sched_check_lost(s);
	CHECK(psb_sched_stats(s)->registered <= 3);
	psb_sched_free(s);
}

/* The worker engine answers run against: what it sent, and what it finished. */
#define FUZZ_WK_SENT	32
struct wk_fuzz {
	struct psb_hdr sent[FUZZ_WK_SENT];
	unsigned int nsent;
	unsigned int done;
};

static int
wk_send(void *arg, const struct psb_hdr *h, const void *payload)
{
	struct wk_fuzz *w = arg;

	(void)payload;
	CHECK(h->version == PSB_VERSION);
	CHECK(psb_msg_is_request(h->type) || h->type == PSB_MSG_BATCH ||
	      h->type == PSB_MSG_REPAIR);
	if (w->nsent < FUZZ_WK_SENT)
		w->sent[w->nsent++] = *h;
	return 0;
}

static void
wk_done(void *arg, struct psb_wk_op *op)
{
	struct wk_fuzz *w = arg;

	/* never more than the room the request gave, whatever came in */
	CHECK(op->out_len <= op->len);
	w->done++;
}

/* h aimed at what the engine sent: its request id, key and sender, the rest the input's. */
static void
wk_feed(struct psb_wk *wk, const struct psb_frame *f, const struct psb_hdr *to, uint64_t now)
{
	struct psb_hdr h = f->hdr;

	h.req_id = to->req_id;
	h.key = to->key;
	h.sender = to->sender;
	psb_wk_input(wk, &h, f->payload, now);
}

/*
 * A frame as the answer a worker gets: as it came, and aimed at each request in flight
 * (a PUSHPULL of four segments, a batched PULL, a PUSH of eight segments), before and after
 * they time out (REPAIRs, resends). The engine never writes past a request's buffer, and
 * finishes each request once at most.
 */
static void
check_worker(const struct psb_frame *f, int *wk_done_once)
{
	static float in[8 * FUZZ_KV_SEG / sizeof(float)], out[3][8 * FUZZ_KV_SEG / sizeof(float)];
	struct psb_wk_cfg cfg = {
		.rank = 1, .epoch = 7, .sync = (f->hdr.flags & PSB_F_SYNC) != 0,
		.seg_size = FUZZ_KV_SEG, .window = 16, .timeout_ns = 1000000, .max_retries = 3,
		.batch_max = 256, .send = wk_send, .done = wk_done,
	};
	struct psb_wk_op ops[3];
	struct wk_fuzz w;
	struct psb_wk *wk;
	uint64_t t = 1000000;
	unsigned int i, round;

	if (f->hdr.version != PSB_VERSION || psb_msg_is_request(f->hdr.type) || *wk_done_once)
		return;
	*wk_done_once = 1;
	memset(&w, 0, sizeof(w));
	cfg.send_arg = &w;
	cfg.done_arg = &w;
	wk = psb_wk_create(&cfg);
	CHECK(wk != NULL);
	memset(ops, 0, sizeof(ops));
	ops[0] = (struct psb_wk_op){ .type = PSB_MSG_PUSHPULL, .key = f->hdr.key, .len = 4 * FUZZ_KV_SEG,
		.in = in, .out = out[0], .round = f->hdr.round };
	ops[1] = (struct psb_wk_op){ .type = PSB_MSG_PULL, .key = f->hdr.key + 1, .len = 256,
		.out = out[1], .round = f->hdr.round };
	ops[2] = (struct psb_wk_op){ .type = PSB_MSG_PUSH, .key = f->hdr.key + 2,
		.len = 8 * FUZZ_KV_SEG, .in = in, .out = out[2], .round = f->hdr.round };
	for (i = 0; i < 3; i++)
		CHECK(psb_wk_submit(wk, &ops[i], t) == 0);
	(void)psb_wk_flush(wk);
	psb_wk_input(wk, &f->hdr, f->payload, t);
	for (round = 0; round < 3; round++) {
		unsigned int n = w.nsent;

		for (i = 0; i < n; i++)
			wk_feed(wk, f, &w.sent[i], t);
		t += 5000000;	/* past the timeout: resends and REPAIRs */
		psb_wk_poll(wk, t);
		CHECK(psb_wk_inflight(wk) <= 3);
	}
	CHECK(w.done <= 3);
	CHECK(psb_wk_stats(wk)->completed + psb_wk_stats(wk)->failed <= 3);
	psb_wk_free(wk);
}

/* The input read as a bare header: encode/decode are inverse, reassembly takes it. */
static void
check_bare_header(const uint8_t *data, size_t size)
{
	uint8_t enc[PSB_HDR_LEN];
	struct psb_hdr h;

	if (size < PSB_HDR_LEN)
		return;
	psb_hdr_decode(&h, data);
	psb_hdr_encode(enc, &h);
	CHECK(memcmp(enc, data, PSB_HDR_LEN) == 0);
	if (psb_hdr_check_segment(&h, h.seg_len) == 0)
		drive_reasm(&h);
}

/* The input read as text: the address parsers take or refuse it without harm. */
static void
check_text(const uint8_t *data, size_t size)
{
	char s[48], back[16];
	uint8_t mac[6];
	uint32_t ip, ip2;
	size_t n = size < sizeof(s) - 1 ? size : sizeof(s) - 1;

	memcpy(s, data, n);
	s[n] = '\0';
	if (psb_parse_ip(s, &ip) == 0) {
		CHECK(psb_parse_ip(psb_ip_str(ip, back), &ip2) == 0);
		CHECK(ip2 == ip);
	}
	(void)psb_parse_mac(s, mac);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct psb_frame f;
	unsigned int i;
	int rc, batch_done = 0, repair_done = 0, sched_done = 0, wk_done_once = 0;
	int handler_done = 0;

	for (i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		rc = psb_frame_parse(data, size, &cfgs[i], &f);
		if (rc < 0) {
			CHECK(-rc > PSB_DROP_NONE && -rc < PSB_DROP_MAX);
			CHECK(psb_drop_names[-rc] != NULL);
			continue;
		}
		CHECK(rc == (int)f.kind);
		CHECK(f.l3_off == PSB_ETH_HLEN || f.l3_off == PSB_ETH_HLEN + 4);
		switch (rc) {
		case PSB_FRAME_PSB:
			check_psb(data, size, &cfgs[i], &f);
			check_echo(size, &cfgs[i], &f);
			check_batch(&f, &batch_done);
			check_repair(&f, &repair_done);
			check_handler(&f, &handler_done);
			check_sched(&f, &sched_done);
			check_worker(&f, &wk_done_once);
			break;
		case PSB_FRAME_ARP_REQUEST:
			check_arp_request(data, size, &cfgs[i], &f);
			break;
		case PSB_FRAME_ARP_REPLY:
			CHECK((size_t)f.l3_off + 28 <= size);
			break;
		case PSB_FRAME_ICMP_ECHO:
			check_icmp_echo(data, size, &f);
			break;
		default:
			CHECK(!"unknown frame kind");
		}
	}
	check_bare_header(data, size);
	check_text(data, size);
	return 0;
}
