/* Deterministic seed frames for the psb frame fuzzer: one valid frame of every kind. */
#include <string.h>

#include "psb_proto.h"
#include "fuzz_seeds.h"

struct seed_msg {
	const char *name;
	uint8_t type;
	int to_server;		/* worker -> server request, else the response */
	uint16_t dport;		/* destination port override (scheduler) */
	uint8_t version;	/* 0: PSB_VERSION */
	uint8_t flags;
	uint8_t status;
	uint32_t total;
	uint32_t offset;
	uint16_t seg_size;
	uint32_t aux;
};

static const struct seed_msg msgs[] = {
	{ "push-first", PSB_MSG_PUSH, 1, 0, 0, PSB_F_SYNC, 0, 300, 0, 128, 0 },
	{ "push-middle", PSB_MSG_PUSH, 1, 0, 0, PSB_F_SYNC, 0, 300, 128, 128, 0 },
	{ "push-last", PSB_MSG_PUSH, 1, 0, 0, PSB_F_SYNC, 0, 300, 256, 128, 0 },
	{ "push-mtu1500", PSB_MSG_PUSH, 1, 0, 0, 0, 0, 4096, 1432, 1432, 0 },
	{ "push-jumbo", PSB_MSG_PUSH, 1, 0, 0, 0, 0, 20000, 8932, 8932, 0 },
	{ "pull", PSB_MSG_PULL, 1, 0, 0, PSB_F_SYNC, 0, 0, 0, 1432, 0 },
	{ "pushpull", PSB_MSG_PUSHPULL, 1, 0, 0, 0, 0, 64, 0, 1432, 0 },
	{ "push-ack", PSB_MSG_PUSH_ACK, 0, 0, 0, PSB_F_SYNC, 0, 0, 0, 1432, 0 },
	{ "pull-resp", PSB_MSG_PULL_RESP, 0, 0, 0, 0, 0, 300, 256, 128, 0 },
	{ "pushpull-resp", PSB_MSG_PUSHPULL_RESP, 0, 0, 0, 0, 0, 64, 0, 1432, 0 },
	{ "error", PSB_MSG_ERROR, 0, 0, 0, 0, PSB_ST_LEN_MISMATCH, 0, 0, 0, 4096 },
	{ "register", PSB_MSG_REGISTER, 1, PSB_SCHED_PORT, 0, PSB_F_WORKER, 0, 0, 0, 0, 0 },
	{ "register-ack", PSB_MSG_REGISTER_ACK, 0, 0, 0, PSB_F_WORKER, 0, 28, 0, 28, 1 },
	{ "barrier", PSB_MSG_BARRIER, 1, PSB_SCHED_PORT, 0, 0, 0, 0, 0, 0, 4 },
	{ "barrier-ack", PSB_MSG_BARRIER_ACK, 0, 0, 0, 0, 0, 0, 0, 0, 4 },
	{ "register-beats", PSB_MSG_REGISTER, 1, PSB_SCHED_PORT, 0, PSB_F_SERVER | PSB_F_BEATS,
		0, 0, 0, 0, 0 },
	{ "heartbeat", PSB_MSG_HEARTBEAT, 1, PSB_SCHED_PORT, 0, PSB_F_WORKER, 0, 0, 0, 0, 0 },
	{ "heartbeat-ack", PSB_MSG_HEARTBEAT_ACK, 0, 0, 0, PSB_F_WORKER, 0, 36, 0, 36, 2 },
	{ "finalize", PSB_MSG_FINALIZE, 1, PSB_SCHED_PORT, 0, PSB_F_WORKER, 0, 0, 0, 0, 0 },
	{ "finalize-ack", PSB_MSG_FINALIZE_ACK, 1, PSB_SCHED_PORT, 0, PSB_F_SERVER, 0, 0, 0, 0,
		0 },
	{ "foreign-version", PSB_MSG_PUSH, 1, 0, 2, 0, 0, 77, 5, 3, 0 },
};

static const uint8_t worker_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };
static const uint8_t server_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };

static uint8_t frame[FUZZ_SEED_MAX];
static uint8_t tmp[FUZZ_SEED_MAX];
static uint8_t value[FUZZ_SEED_MAX];

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void
put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static void
fix_ip_csum(uint8_t *ip)
{
	put16(ip + 10, 0);
	put16(ip + 10, (uint16_t)~psb_csum_partial(ip, (ip[0] & 0x0fu) * 4u, 0));
}

static void
addrs(struct psb_addr *w, struct psb_addr *s)
{
	memset(w, 0, sizeof(*w));
	memset(s, 0, sizeof(*s));
	memcpy(w->mac, worker_mac, 6);
	w->ip = FUZZ_WORKER_IP;
	w->port = FUZZ_WORKER_PORT;
	memcpy(s->mac, server_mac, 6);
	s->ip = FUZZ_SERVER_IP;
	s->port = PSB_UDP_PORT;
}

static size_t
build_msg(uint8_t *out, const struct seed_msg *m, uint32_t id)
{
	struct psb_addr w, s, *src, *dst;
	struct psb_hdr h;
	uint16_t len = 0;
	uint32_t i;

	addrs(&w, &s);
	src = m->to_server ? &w : &s;
	dst = m->to_server ? &s : &w;
	if (m->dport != 0)
		dst->port = m->dport;
	psb_hdr_init(&h, m->type);
	if (m->version != 0)
		h.version = m->version;
	h.flags = m->flags;
	h.status = m->status;
	h.sender = 3;
	h.req_id = 1000 + id;
	h.round = 7;
	h.key = 0x0123456789abcdefull + id;
	h.total_len = m->total;
	h.offset = m->offset;
	h.seg_size = m->seg_size;
	h.aux = m->aux;
	if (m->total != 0)
		len = (uint16_t)(m->total - m->offset < m->seg_size ?
				m->total - m->offset : m->seg_size);
	h.seg_len = len;
	if (m->type == PSB_MSG_REGISTER_ACK) {
		/* A one-server table: counts, then ip, port, pad, key range. */
		memset(value, 0, len);
		put16(value, 1);
		put16(value + 2, 2);
		put32(value + 4, FUZZ_SERVER_IP);
		put16(value + 8, PSB_UDP_PORT);
		memset(value + 20, 0xff, 8);
	} else if (m->type == PSB_MSG_HEARTBEAT_ACK) {
		/* Two lost servers: rank, why, pad, ip, port, pad, silent ms. */
		memset(value, 0, len);
		put16(value, 2);
		put16(value + 4, 0);
		value[6] = 1;		/* dead */
		put32(value + 8, FUZZ_SERVER_IP);
		put16(value + 12, PSB_UDP_PORT);
		put32(value + 16, 3200);
		put16(value + 20, 1);
		value[22] = 2;		/* restarted */
		put32(value + 24, FUZZ_SERVER_IP + 1);
		put16(value + 28, PSB_UDP_PORT);
	} else {
		/* Little-endian float32 values 0.5, 1.5, 2.5, ... as a real push carries. */
		for (i = 0; i + 4 <= len; i += 4) {
			float f = 0.5f + (float)(i / 4);

			memcpy(value + i, &f, 4);
		}
	}
	return psb_frame_build(out, src, dst, &h, value, len);
}

/* One record of a batch seed: header, then len bytes of float32 values. */
static size_t
put_rec(uint8_t *p, uint8_t type, uint8_t status, uint16_t len, uint32_t req_id, uint64_t key,
		uint32_t aux)
{
	struct psb_rec r;
	uint16_t i;

	memset(&r, 0, sizeof(r));
	r.type = type;
	r.status = status;
	r.len = len;
	r.req_id = req_id;
	r.round = 0;
	r.aux = aux;
	r.key = key;
	psb_rec_encode(p, &r);
	for (i = 0; i < len; i += 4) {
		float f = 1.5f + (float)(i / 4);

		memcpy(p + PSB_REC_HLEN + i, &f, 4);
	}
	return PSB_REC_HLEN + len;
}

/*
 * A BATCH of a worker's small requests (push, pushpull and pull of one key,
 * a push of another), or the BATCH_RESP answering it: one message each,
 * total_len = seg_len = seg_size = the records' bytes.
 */
static size_t
build_batch(uint8_t *out, int resp)
{
	const uint64_t k1 = 0x0123456789abcdefull, k2 = 42;
	struct psb_addr w, s;
	struct psb_hdr h;
	size_t n = 0;

	addrs(&w, &s);
	if (!resp) {
		n += put_rec(value + n, PSB_MSG_PUSH, 0, 16, 0x1001, k1, 0);
		n += put_rec(value + n, PSB_MSG_PUSHPULL, 0, 16, 0x2001, k1, 0);
		n += put_rec(value + n, PSB_MSG_PULL, 0, 0, 0x3001, k1, 0);
		n += put_rec(value + n, PSB_MSG_PUSH, 0, 8, 0x4001, k2, 0);
		n += put_rec(value + n, PSB_MSG_PULL, 0, 0, 0x5001, 7, 0);
	} else {
		n += put_rec(value + n, PSB_MSG_PUSH_ACK, 0, 0, 0x1001, k1, 0);
		n += put_rec(value + n, PSB_MSG_PUSHPULL_RESP, 0, 16, 0x2001, k1, 0);
		n += put_rec(value + n, PSB_MSG_PULL_RESP, 0, 16, 0x3001, k1, 0);
		n += put_rec(value + n, PSB_MSG_PUSH_ACK, 0, 0, 0x4001, k2, 0);
		n += put_rec(value + n, PSB_MSG_ERROR, PSB_ST_NO_KEY, 0, 0x5001, 7, 0);
	}
	psb_hdr_init(&h, resp ? PSB_MSG_BATCH_RESP : PSB_MSG_BATCH);
	h.sender = 3;
	h.req_id = 77;
	h.key = resp ? 0 : k1;
	h.aux = resp ? 0 : 0x5eed;
	h.total_len = (uint32_t)n;
	h.seg_len = (uint16_t)n;
	h.seg_size = (uint16_t)n;
	return resp ? psb_frame_build(out, &s, &w, &h, value, (uint16_t)n) :
		psb_frame_build(out, &w, &s, &h, value, (uint16_t)n);
}

static size_t
add_vlan(uint8_t *out, const uint8_t *in, size_t len)
{
	memcpy(out, in, 12);
	put16(out + 12, 0x8100);
	put16(out + 14, 0x0064);
	memcpy(out + 16, in + 12, len - 12);
	return len + 4;
}

/* Four NOP option bytes after the IPv4 header of an untagged frame. */
static size_t
add_ip_options(uint8_t *out, const uint8_t *in, size_t len)
{
	uint8_t *ip = out + PSB_ETH_HLEN;

	memcpy(out, in, PSB_ETH_HLEN + PSB_IP_HLEN);
	memset(out + PSB_ETH_HLEN + PSB_IP_HLEN, 0x01, 4);
	memcpy(out + PSB_ETH_HLEN + PSB_IP_HLEN + 4, in + PSB_ETH_HLEN + PSB_IP_HLEN,
			len - PSB_ETH_HLEN - PSB_IP_HLEN);
	ip[0] = 0x46;
	put16(ip + 2, (uint16_t)(len + 4 - PSB_ETH_HLEN));
	fix_ip_csum(ip);
	return len + 4;
}

static size_t
build_icmp_echo(uint8_t *out, uint16_t data_len)
{
	uint8_t *ip = out + PSB_ETH_HLEN;
	uint8_t *ic = ip + PSB_IP_HLEN;
	uint16_t i;

	memcpy(out, server_mac, 6);
	memcpy(out + 6, worker_mac, 6);
	put16(out + 12, 0x0800);
	memset(ip, 0, PSB_IP_HLEN);
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(PSB_IP_HLEN + 8 + data_len));
	put16(ip + 4, 0x4242);
	put16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = 1;
	put32(ip + 12, FUZZ_WORKER_IP);
	put32(ip + 16, FUZZ_SERVER_IP);
	fix_ip_csum(ip);
	ic[0] = 8;
	ic[1] = 0;
	put16(ic + 2, 0);
	put16(ic + 4, 0x1d1d);
	put16(ic + 6, 1);
	for (i = 0; i < data_len; i++)
		ic[8 + i] = (uint8_t)(0x20 + i);
	put16(ic + 2, (uint16_t)~psb_csum_partial(ic, 8u + data_len, 0));
	return PSB_ETH_HLEN + PSB_IP_HLEN + 8u + data_len;
}

/*
 * A REPAIR (the worker lacks segments 3 to 7 of version 1 of a PUSHPULL's answer) or the
 * REPAIR_RESP of a server lacking segments 3 and 4 of the push.
 */
static size_t
build_repair(uint8_t *out, int resp)
{
	struct psb_repair rp = { .req_type = PSB_MSG_PUSHPULL, .flags = PSB_REPAIR_ROUND,
		.base = 3, .nbits = 5, .round = 1 };
	struct psb_addr w, s;
	struct psb_hdr h;

	addrs(&w, &s);
	if (resp)
		rp = (struct psb_repair){ .base = 3, .nbits = 5 };
	memset(value, 0, 32);
	psb_repair_encode(value, &rp);
	value[PSB_REPAIR_HLEN] = resp ? 0x03 : 0x1f;
	psb_hdr_init(&h, resp ? PSB_MSG_REPAIR_RESP : PSB_MSG_REPAIR);
	h.sender = 3;
	h.req_id = 1200;
	h.key = 0x0123456789abcdefull;
	h.total_len = psb_repair_len(rp.nbits);
	h.seg_len = (uint16_t)h.total_len;
	h.seg_size = (uint16_t)h.total_len;
	return resp ? psb_frame_build(out, &s, &w, &h, value, h.seg_len) :
		psb_frame_build(out, &w, &s, &h, value, h.seg_len);
}

unsigned int
fuzz_seeds_foreach(fuzz_seed_fn fn, void *arg)
{
	unsigned int i, n = 0;
	size_t len;

	for (i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
		len = build_msg(frame, &msgs[i], i);
		fn(arg, msgs[i].name, frame, len);
		n++;
	}

	len = build_batch(frame, 0);
	fn(arg, "batch", frame, len);
	n++;

	len = build_batch(frame, 1);
	fn(arg, "batch-resp", frame, len);
	n++;

	len = build_repair(frame, 0);
	fn(arg, "repair", frame, len);
	n++;

	len = build_repair(frame, 1);
	fn(arg, "repair-resp", frame, len);
	n++;

	len = build_msg(tmp, &msgs[0], 100);
	len = add_vlan(frame, tmp, len);
	fn(arg, "push-vlan", frame, len);
	n++;

	len = build_msg(tmp, &msgs[2], 101);
	len = add_ip_options(frame, tmp, len);
	fn(arg, "push-ip-options", frame, len);
	n++;

	/* A kept FCS or trailer after the IP packet. */
	len = build_msg(frame, &msgs[5], 102);
	memset(frame + len, 0xfc, 4);
	fn(arg, "pull-trailer", frame, len + 4);
	n++;

	len = psb_arp_request(frame, worker_mac, FUZZ_WORKER_IP, FUZZ_SERVER_IP);
	fn(arg, "arp-request", frame, len);
	n++;

	memset(frame + len, 0, 60 - len);
	fn(arg, "arp-request-padded", frame, 60);
	n++;

	len = psb_arp_request(tmp, worker_mac, FUZZ_WORKER_IP, FUZZ_SERVER_IP);
	len = add_vlan(frame, tmp, len);
	fn(arg, "arp-request-vlan", frame, len);
	n++;

	len = psb_arp_request(tmp, worker_mac, FUZZ_WORKER_IP, FUZZ_SERVER_IP);
	len = psb_arp_reply(frame, tmp, len, server_mac, FUZZ_SERVER_IP);
	fn(arg, "arp-reply", frame, len);
	n++;

	len = build_icmp_echo(frame, 56);
	fn(arg, "icmp-echo", frame, len);
	n++;

	len = build_icmp_echo(frame, 37);
	fn(arg, "icmp-echo-odd", frame, len);
	n++;

	len = build_icmp_echo(frame, 0);
	memset(frame + len, 0x5a, 60 - len);
	fn(arg, "icmp-echo-padded", frame, 60);
	n++;

	len = build_icmp_echo(tmp, 24);
	len = add_vlan(frame, tmp, len);
	fn(arg, "icmp-echo-vlan", frame, len);
	n++;

	return n;
}
