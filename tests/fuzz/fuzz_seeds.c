/* Deterministic seed frames for the psb frame fuzzer: one valid frame of every kind. */
#include <string.h>

#include "fuzz_seeds.h"

/* name, type, to_server, dport, version, flags, status, total, offset, seg_size, aux */
static const struct tf_msg msgs[] = {
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
	{ "echo", PSB_MSG_ECHO, 1, 0, 0, 0, 0, 64, 0, 64, 0 },
	{ "echo-resp", PSB_MSG_ECHO_RESP, 0, 0, 0, 0, 0, 64, 0, 64, 0 },
	{ "echo-too-long", PSB_MSG_ECHO, 1, 0, 0, 0, 0, 2048, 0, 2048, 0 },
	{ "echo-segment", PSB_MSG_ECHO, 1, 0, 0, 0, 0, 128, 64, 64, 0 },
};

static uint8_t frame[FUZZ_SEED_MAX];
static uint8_t tmp[FUZZ_SEED_MAX];
static uint8_t value[FUZZ_SEED_MAX];

static size_t
build_msg(uint8_t *out, const struct tf_msg *m, uint32_t id)
{
	struct psb_addr src, dst;
	struct psb_hdr h = tf_msg_hdr(m, &src, &dst);
	uint32_t i;

	h.sender = 3;
	h.req_id = 1000 + id;
	h.round = 7;
	h.key = 0x0123456789abcdefull + id;
	if (m->type == PSB_MSG_REGISTER_ACK) {
		/* A one-server table: rank 1 of 2 workers, the server owns every key. */
		const struct tf_view_server srv = { FUZZ_SERVER_IP, PSB_UDP_PORT, 0, UINT64_MAX };

		tf_register_ack(value, 1, 2, &srv, 1);
	} else if (m->type == PSB_MSG_HEARTBEAT_ACK) {
		/* Two lost servers: one dead, silent 3200 ms; one restarted. */
		const struct tf_lost lost[] = {
			{ 0, 1, FUZZ_SERVER_IP, PSB_UDP_PORT, 3200 },
			{ 1, 2, FUZZ_SERVER_IP + 1, PSB_UDP_PORT, 0 },
		};

		tf_heartbeat_ack(value, 2, lost, 2);
	} else {
		/* Float32 values 0.5, 1.5, 2.5, ... as a real push carries. */
		for (i = 0; i + 4 <= h.seg_len; i += 4) {
			float f = 0.5f + (float)(i / 4);

			tf_put_floats(value + i, &f, 1);
		}
	}
	return psb_frame_build(out, &src, &dst, &h, value, h.seg_len);
}

/* One record of a batch seed: header, then len bytes of float32 values 1.5, 2.5, ... */
static size_t
put_rec(uint8_t *p, uint8_t type, uint8_t status, uint16_t len, uint32_t req_id, uint64_t key)
{
	const struct psb_rec r = { .type = type, .status = status, .len = len, .req_id = req_id,
		.key = key };
	uint8_t vals[16] = { 0 };
	float f;
	uint16_t i;

	for (i = 0; i < len / 4; i++) {
		f = 1.5f + (float)i;
		tf_put_floats(vals + 4 * i, &f, 1);
	}
	return tf_rec_put(p, &r, vals);
}

enum batch_seed { BATCH_REQS, BATCH_RESP, BATCH_PROBE };

/*
 * A BATCH of a worker's small requests (push, pushpull and pull of one key, a push of
 * another), the BATCH_RESP answering it, or a BATCH pushing and then pulling the probe key
 * (PSB_PROBE_KEY, which no server may keep or hand over): one message each,
 * total_len = seg_len = seg_size = the records' bytes.
 */
static size_t
build_batch(uint8_t *out, enum batch_seed kind)
{
	const uint64_t k1 = 0x0123456789abcdefull, k2 = 42;
	const int resp = kind == BATCH_RESP;
	struct psb_hdr h;
	size_t n = 0;

	if (kind == BATCH_REQS) {
		n += put_rec(value + n, PSB_MSG_PUSH, 0, 16, 0x1001, k1);
		n += put_rec(value + n, PSB_MSG_PUSHPULL, 0, 16, 0x2001, k1);
		n += put_rec(value + n, PSB_MSG_PULL, 0, 0, 0x3001, k1);
		n += put_rec(value + n, PSB_MSG_PUSH, 0, 8, 0x4001, k2);
		n += put_rec(value + n, PSB_MSG_PULL, 0, 0, 0x5001, 7);
	} else if (kind == BATCH_RESP) {
		n += put_rec(value + n, PSB_MSG_PUSH_ACK, 0, 0, 0x1001, k1);
		n += put_rec(value + n, PSB_MSG_PUSHPULL_RESP, 0, 16, 0x2001, k1);
		n += put_rec(value + n, PSB_MSG_PULL_RESP, 0, 16, 0x3001, k1);
		n += put_rec(value + n, PSB_MSG_PUSH_ACK, 0, 0, 0x4001, k2);
		n += put_rec(value + n, PSB_MSG_ERROR, PSB_ST_NO_KEY, 0, 0x5001, 7);
	} else {
		n += put_rec(value + n, PSB_MSG_PUSH, 0, 16, 0x1001, PSB_PROBE_KEY);
		n += put_rec(value + n, PSB_MSG_PULL, 0, 0, 0x1002, PSB_PROBE_KEY);
		n += put_rec(value + n, PSB_MSG_PUSHPULL, 0, 8, 0x1003, PSB_PROBE_KEY);
		n += put_rec(value + n, PSB_MSG_PULL, 0, 0, 0x1004, PSB_PROBE_KEY);
	}
	h = tf_hdr(resp ? PSB_MSG_BATCH_RESP : PSB_MSG_BATCH, 0, 3, 77, 0, resp ? 0 : k1);
	h.aux = resp ? 0 : 0x5eed;
	tf_whole(&h, (uint32_t)n);
	return resp ? psb_frame_build(out, &tf_server, &tf_worker, &h, value, (uint16_t)n) :
		psb_frame_build(out, &tf_worker, &tf_server, &h, value, (uint16_t)n);
}

static size_t
build_icmp_echo(uint8_t *out, uint16_t data_len)
{
	uint8_t data[64];
	const struct tf_echo e = { .ip_id = 0x4242, .ip_frag = 0x4000, .ttl = 64,
		.ident = 0x1d1d, .seq = 1, .data = data, .data_len = data_len };
	uint16_t i;

	for (i = 0; i < data_len; i++)
		data[i] = (uint8_t)(0x20 + i);
	return tf_icmp_echo(out, &tf_worker, &tf_server, &e);
}

/*
 * A REPAIR (the worker lacks segments 3 to 7 of version 1 of a PUSHPULL's answer) or the
 * REPAIR_RESP of a server lacking segments 3 and 4 of the push.
 */
static size_t
build_repair(uint8_t *out, int resp)
{
	static const uint8_t lacks_answer = 0x1f, lacks_push = 0x03;
	struct psb_repair rp = { .req_type = PSB_MSG_PUSHPULL, .flags = PSB_REPAIR_ROUND,
		.base = 3, .nbits = 5, .round = 1, .bits = &lacks_answer };
	struct psb_hdr h;

	if (resp)
		rp = (struct psb_repair){ .base = 3, .nbits = 5, .bits = &lacks_push };
	h = tf_hdr(resp ? PSB_MSG_REPAIR_RESP : PSB_MSG_REPAIR, 0, 3, 1200, 0,
		0x0123456789abcdefull);
	tf_whole(&h, (uint32_t)tf_repair(value, &rp));
	return resp ? psb_frame_build(out, &tf_server, &tf_worker, &h, value, h.seg_len) :
		psb_frame_build(out, &tf_worker, &tf_server, &h, value, h.seg_len);
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

	len = build_batch(frame, BATCH_REQS);
	fn(arg, "batch", frame, len);
	n++;

	len = build_batch(frame, BATCH_RESP);
	fn(arg, "batch-resp", frame, len);
	n++;

	len = build_batch(frame, BATCH_PROBE);
	fn(arg, "batch-probe", frame, len);
	n++;

	len = build_repair(frame, 0);
	fn(arg, "repair", frame, len);
	n++;

	len = build_repair(frame, 1);
	fn(arg, "repair-resp", frame, len);
	n++;

	len = build_msg(tmp, &msgs[0], 100);
	len = tf_add_vlan(frame, tmp, len, 0x0064);
	fn(arg, "push-vlan", frame, len);
	n++;

	len = build_msg(tmp, &msgs[2], 101);
	len = tf_add_ip_options(frame, tmp, len);
	fn(arg, "push-ip-options", frame, len);
	n++;

	/* A kept FCS or trailer after the IP packet. */
	len = build_msg(frame, &msgs[5], 102);
	memset(frame + len, 0xfc, 4);
	fn(arg, "pull-trailer", frame, len + 4);
	n++;

	len = psb_arp_request(frame, tf_worker.mac, FUZZ_WORKER_IP, FUZZ_SERVER_IP);
	fn(arg, "arp-request", frame, len);
	n++;

	memset(frame + len, 0, 60 - len);
	fn(arg, "arp-request-padded", frame, 60);
	n++;

	len = psb_arp_request(tmp, tf_worker.mac, FUZZ_WORKER_IP, FUZZ_SERVER_IP);
	len = tf_add_vlan(frame, tmp, len, 0x0064);
	fn(arg, "arp-request-vlan", frame, len);
	n++;

	len = psb_arp_request(tmp, tf_worker.mac, FUZZ_WORKER_IP, FUZZ_SERVER_IP);
	len = psb_arp_reply(frame, tmp, len, tf_server.mac, FUZZ_SERVER_IP);
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
	len = tf_add_vlan(frame, tmp, len, 0x0064);
	fn(arg, "icmp-echo-vlan", frame, len);
	n++;

	return n;
}
