/* cmocka tests of the psb wire codec: header layout, frame build/parse, drops, ARP and ICMP. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "psb_testframe.h"

/* Byte offsets inside an untagged frame built by psb_frame_build. */
#define OFF_IP		PSB_ETH_HLEN
#define OFF_UDP		(OFF_IP + PSB_IP_HLEN)
#define OFF_HDR		(OFF_UDP + PSB_UDP_HLEN)
#define FRAME_MAX	(PSB_ETH_HLEN + 9000 + 64)

/* Frame buffers are static: several are larger than a comfortable stack frame. */
static uint8_t frame[FRAME_MAX];
static uint8_t frame2[FRAME_MAX];
static uint8_t value[FRAME_MAX];

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static struct psb_parse_cfg
cfg_for(const struct psb_addr *me)
{
	struct psb_parse_cfg c = {
		.my_ip = me->ip,
		.psb_port = me->port,
		.sched_port = PSB_SCHED_PORT,
		.check_ip_csum = 1,
	};

	return c;
}

/* Deterministic, position-dependent bytes so that misplaced data is noticed. */
static void
fill_pattern(uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 131u + seed * 7u + (i >> 8)) ^ seed);
}

static int
ip_csum_ok(const uint8_t *buf, size_t l3)
{
	const uint8_t *ip = buf + l3;

	return psb_csum_partial(ip, (ip[0] & 0x0fu) * 4u, 0) == 0xffff;
}

/* A header for the segment at offset of a value of total bytes cut at seg_size. */
static struct psb_hdr
seg_hdr(uint8_t type, uint32_t total, uint32_t offset, uint16_t seg_size)
{
	struct psb_hdr h;

	psb_hdr_init(&h, type);
	tf_seg(&h, total, offset, seg_size);
	return h;
}

/* Build a worker -> server frame carrying h and payload_len pattern bytes. */
static size_t
build(uint8_t *out, const struct psb_hdr *h, uint16_t payload_len)
{
	fill_pattern(value, payload_len, h->offset);
	return psb_frame_build(out, &tf_worker, &tf_server, h, value, payload_len);
}

static size_t
build_seg(uint8_t *out, uint8_t type, uint32_t total, uint32_t offset, uint16_t seg_size)
{
	struct psb_hdr h = seg_hdr(type, total, offset, seg_size);

	return build(out, &h, h.seg_len);
}

static int
parse_as(const uint8_t *buf, size_t len, const struct psb_addr *me, struct psb_frame *f)
{
	struct psb_parse_cfg c = cfg_for(me);

	return psb_frame_parse(buf, len, &c, f);
}

/* An ICMP echo request from src to dst with payload_len pattern bytes. */
static size_t
build_icmp_echo(uint8_t *out, const struct psb_addr *src, const struct psb_addr *dst,
		uint16_t payload_len)
{
	static uint8_t data[FRAME_MAX];
	const struct tf_echo e = { .ip_id = 0x1234, .ip_frag = 0x4000, .ttl = 17,
		.ident = 0xbeef, .seq = 0x0102, .data = data, .data_len = payload_len };

	fill_pattern(data, payload_len, 99);
	return tf_icmp_echo(out, src, dst, &e);
}

static void
assert_hdr_equal(const struct psb_hdr *a, const struct psb_hdr *b)
{
	assert_int_equal(a->magic, b->magic);
	assert_int_equal(a->version, b->version);
	assert_int_equal(a->type, b->type);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(a->status, b->status);
	assert_int_equal(a->sender, b->sender);
	assert_int_equal(a->req_id, b->req_id);
	assert_int_equal(a->round, b->round);
	assert_true(a->key == b->key);
	assert_int_equal(a->total_len, b->total_len);
	assert_int_equal(a->offset, b->offset);
	assert_int_equal(a->seg_len, b->seg_len);
	assert_int_equal(a->seg_size, b->seg_size);
	assert_int_equal(a->aux, b->aux);
}

/* Header: every field at its documented big-endian byte position. */
static void
test_hdr_layout(void **state)
{
	static const uint8_t want[PSB_HDR_LEN] = {
		0x50, 0x53,				/* 0 magic */
		0x01,					/* 2 version */
		0x83,					/* 3 type */
		0x05,					/* 4 flags */
		0x07,					/* 5 status */
		0x12, 0x34,				/* 6 sender */
		0x89, 0xab, 0xcd, 0xef,			/* 8 req_id */
		0x01, 0x02, 0x03, 0x04,			/* 12 round */
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,	/* 16 key */
		0x00, 0xa0, 0xb0, 0xc0,			/* 24 total_len */
		0x0d, 0x0e, 0x0f, 0x10,			/* 28 offset */
		0xfe, 0xdc,				/* 32 seg_len */
		0xba, 0x98,				/* 34 seg_size */
		0xca, 0xfe, 0xf0, 0x0d,			/* 36 aux */
	};
	const struct psb_hdr h = {
		.magic = 0x5053, .version = 0x01, .type = 0x83, .flags = 0x05, .status = 0x07,
		.sender = 0x1234, .req_id = 0x89abcdef, .round = 0x01020304,
		.key = 0x1122334455667788ull, .total_len = 0x00a0b0c0, .offset = 0x0d0e0f10,
		.seg_len = 0xfedc, .seg_size = 0xba98, .aux = 0xcafef00d,
	};
	uint8_t out[PSB_HDR_LEN + 2];
	struct psb_hdr d;

	/* The guard bytes catch a write past the 40 header bytes. */
	memset(out, 0xa5, sizeof(out));
	psb_hdr_encode(out, &h);
	assert_memory_equal(out, want, PSB_HDR_LEN);
	assert_int_equal(out[PSB_HDR_LEN], 0xa5);
	assert_int_equal(out[PSB_HDR_LEN + 1], 0xa5);

	memset(&d, 0, sizeof(d));
	psb_hdr_decode(&d, want);
	assert_hdr_equal(&d, &h);
}

/* Header: each field alone owns exactly its bytes (no overlap, no stray writes). */
static void
test_hdr_field_isolation(void **state)
{
	static const struct {
		const char *name;
		unsigned int off;
		unsigned int size;
	} fields[] = {
		{ "magic", 0, 2 }, { "version", 2, 1 }, { "type", 3, 1 }, { "flags", 4, 1 },
		{ "status", 5, 1 }, { "sender", 6, 2 }, { "req_id", 8, 4 }, { "round", 12, 4 },
		{ "key", 16, 8 }, { "total_len", 24, 4 }, { "offset", 28, 4 },
		{ "seg_len", 32, 2 }, { "seg_size", 34, 2 }, { "aux", 36, 4 },
	};
	unsigned int i, b;

	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		struct psb_hdr h, d;
		uint8_t out[PSB_HDR_LEN];

		memset(&h, 0, sizeof(h));
		switch (i) {
		case 0: h.magic = UINT16_MAX; break;
		case 1: h.version = UINT8_MAX; break;
		case 2: h.type = UINT8_MAX; break;
		case 3: h.flags = UINT8_MAX; break;
		case 4: h.status = UINT8_MAX; break;
		case 5: h.sender = UINT16_MAX; break;
		case 6: h.req_id = UINT32_MAX; break;
		case 7: h.round = UINT32_MAX; break;
		case 8: h.key = UINT64_MAX; break;
		case 9: h.total_len = UINT32_MAX; break;
		case 10: h.offset = UINT32_MAX; break;
		case 11: h.seg_len = UINT16_MAX; break;
		case 12: h.seg_size = UINT16_MAX; break;
		case 13: h.aux = UINT32_MAX; break;
		}
		psb_hdr_encode(out, &h);
		for (b = 0; b < PSB_HDR_LEN; b++) {
			int inside = b >= fields[i].off && b < fields[i].off + fields[i].size;

			if (out[b] != (inside ? 0xff : 0x00))
				fail_msg("field %s: byte %u is 0x%02x", fields[i].name, b, out[b]);
		}
		psb_hdr_decode(&d, out);
		assert_hdr_equal(&d, &h);
	}
}

static void
test_hdr_init(void **state)
{
	struct psb_hdr h, z;
	uint8_t out[PSB_HDR_LEN];

	memset(&h, 0xee, sizeof(h));
	psb_hdr_init(&h, PSB_MSG_PULL);
	memset(&z, 0, sizeof(z));
	z.magic = PSB_MAGIC;
	z.version = PSB_VERSION;
	z.type = PSB_MSG_PULL;
	assert_hdr_equal(&h, &z);
	psb_hdr_encode(out, &h);
	assert_int_equal(out[0], 0x50);
	assert_int_equal(out[1], 0x53);
	assert_int_equal(out[2], PSB_VERSION);
	assert_int_equal(out[3], PSB_MSG_PULL);
}

/*
 * Frame: build -> parse of every message type keeps every field and the payload, and
 * psb_frame_read_own reads what the parser reads.
 */
static void
test_frame_roundtrip(void **state)
{
	/* name, type, to_server, dport, version, flags, status, total, offset, seg_size, aux */
	static const struct tf_msg cases[] = {
		{ "push first", PSB_MSG_PUSH, 1, 0, 0, PSB_F_SYNC, 0, 4096, 0, 1432, 0 },
		{ "push middle", PSB_MSG_PUSH, 1, 0, 0, PSB_F_SYNC, 0, 4096, 1432, 1432, 0 },
		{ "push last", PSB_MSG_PUSH, 1, 0, 0, 0, 0, 4096, 2864, 1432, 0 },
		{ "push jumbo", PSB_MSG_PUSH, 1, 0, 0, 0, 0, 100000, 8932, 8932, 0 },
		{ "push max value", PSB_MSG_PUSH, 1, 0, 0, 0, 0, PSB_MAX_VALUE,
			PSB_MAX_VALUE / 1432 * 1432, 1432, 0 },
		{ "pull", PSB_MSG_PULL, 1, 0, 0, PSB_F_SYNC, 0, 0, 0, 1432, 0 },
		{ "pushpull", PSB_MSG_PUSHPULL, 1, 0, 0, 0, 0, 1000, 0, 1432, 0 },
		{ "push_ack", PSB_MSG_PUSH_ACK, 0, 0, 0, PSB_F_SYNC, 0, 0, 0, 0, 0 },
		{ "pull_resp", PSB_MSG_PULL_RESP, 0, 0, 0, 0, 0, 4096, 1432, 1432, 0 },
		{ "pushpull_resp", PSB_MSG_PUSHPULL_RESP, 0, 0, 0, 0, 0, 4096, 2864, 1432, 0 },
		{ "error", PSB_MSG_ERROR, 0, 0, 0, 0, PSB_ST_NO_KEY, 0, 0, 0, 0 },
		{ "register", PSB_MSG_REGISTER, 1, PSB_SCHED_PORT, 0, PSB_F_WORKER, 0, 0, 0, 0, 0 },
		{ "register_ack", PSB_MSG_REGISTER_ACK, 0, 0, 0, 0, 0, 24, 0, 1432, 3 },
		{ "barrier", PSB_MSG_BARRIER, 1, PSB_SCHED_PORT, 0, 0, 0, 0, 0, 0, 7 },
		{ "barrier_ack", PSB_MSG_BARRIER_ACK, 0, 0, 0, 0, 0, 0, 0, 0, 7 },
	};
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct tf_msg *c = &cases[i];
		struct psb_addr src, dst;
		struct psb_hdr h = tf_msg_hdr(c, &src, &dst);
		struct psb_frame f;
		size_t len;
		int rc;

		h.sender = 0x0102 + (uint16_t)i;
		h.req_id = 0xa0000000u + i;
		h.round = 77 + i;
		h.key = 0xfeedface00000000ull | i;
		fill_pattern(value, h.seg_len, i);
		len = psb_frame_build(frame, &src, &dst, &h, value, h.seg_len);
		assert_int_equal(len, PSB_FRAME_HLEN + h.seg_len);

		/* Wire details the parser does not report. */
		assert_int_equal(get16(frame + 12), 0x0800);
		assert_int_equal(frame[OFF_IP], 0x45);
		assert_int_equal(get16(frame + OFF_IP + 2), len - PSB_ETH_HLEN);
		assert_int_equal(get16(frame + OFF_IP + 6), 0x4000);
		assert_int_equal(frame[OFF_IP + 9], 17);
		assert_true(ip_csum_ok(frame, OFF_IP));
		assert_int_equal(get16(frame + OFF_UDP + 4), len - OFF_UDP);
		assert_int_equal(get16(frame + OFF_UDP + 6), 0);

		/* psb_frame_write_headers writes the same headers. */
		memset(frame2, 0, PSB_FRAME_HLEN);
		psb_frame_write_headers(frame2, &src, &dst, &h, h.seg_len);
		assert_memory_equal(frame2, frame, PSB_FRAME_HLEN);

		rc = parse_as(frame, len, &dst, &f);
		if (rc != PSB_FRAME_PSB)
			fail_msg("%s: parse returned %d", c->name, rc);
		assert_int_equal(f.kind, PSB_FRAME_PSB);
		assert_memory_equal(f.src.mac, src.mac, 6);
		assert_memory_equal(f.dst.mac, dst.mac, 6);
		assert_int_equal(f.src.ip, src.ip);
		assert_int_equal(f.dst.ip, dst.ip);
		assert_int_equal(f.src.port, src.port);
		assert_int_equal(f.dst.port, dst.port);
		assert_int_equal(f.l3_off, OFF_IP);
		assert_int_equal(f.l4_off, OFF_UDP);
		assert_hdr_equal(&f.hdr, &h);
		assert_ptr_equal(f.payload, frame + PSB_FRAME_HLEN);
		assert_int_equal(f.payload_len, h.seg_len);
		if (h.seg_len != 0)
			assert_memory_equal(f.payload, value, h.seg_len);

		/* a frame delivered to this process itself reads the same without the parser */
		{
			struct psb_frame own;

			psb_frame_read_own(frame, (uint16_t)len, &own);
			assert_int_equal(own.kind, f.kind);
			assert_memory_equal(own.src.mac, f.src.mac, 6);
			assert_memory_equal(own.dst.mac, f.dst.mac, 6);
			assert_int_equal(own.src.ip, f.src.ip);
			assert_int_equal(own.dst.ip, f.dst.ip);
			assert_int_equal(own.src.port, f.src.port);
			assert_int_equal(own.dst.port, f.dst.port);
			assert_int_equal(own.l3_off, f.l3_off);
			assert_int_equal(own.l4_off, f.l4_off);
			assert_hdr_equal(&own.hdr, &f.hdr);
			assert_ptr_equal(own.payload, f.payload);
			assert_int_equal(own.payload_len, f.payload_len);
		}
	}
}

/* Cut a valid frame at every length below its size: always "truncated". */
static void
check_all_truncations(const char *what, const uint8_t *buf, size_t len,
		const struct psb_addr *me)
{
	struct psb_frame f;
	size_t cut;
	int rc;

	rc = parse_as(buf, len, me, &f);
	if (rc <= 0)
		fail_msg("%s: full frame rejected with %d", what, rc);
	for (cut = 0; cut < len; cut++) {
		/* An exact-size heap copy lets ASan catch any read past the cut. */
		uint8_t *copy = malloc(cut == 0 ? 1 : cut);

		assert_non_null(copy);
		memcpy(copy, buf, cut);
		rc = parse_as(copy, cut, me, &f);
		free(copy);
		if (rc != -PSB_DROP_TRUNCATED)
			fail_msg("%s cut at %zu of %zu: got %d, want %d", what, cut, len, rc,
					-PSB_DROP_TRUNCATED);
	}
}

static void
test_truncation(void **state)
{
	size_t len;

	len = build_seg(frame, PSB_MSG_PUSH, 4096, 2864, 1432);
	check_all_truncations("push", frame, len, &tf_server);
	len = build_seg(frame, PSB_MSG_PULL, 0, 0, 1432);
	check_all_truncations("pull", frame, len, &tf_server);
	len = build_seg(frame, PSB_MSG_PUSH, 100, 0, 1432);
	len = tf_add_vlan(frame2, frame, len, 5);
	check_all_truncations("vlan push", frame2, len, &tf_server);
	len = psb_arp_request(frame, tf_worker.mac, tf_worker.ip, tf_server.ip);
	check_all_truncations("arp request", frame, len, &tf_server);
	len = build_icmp_echo(frame, &tf_worker, &tf_server, 56);
	check_all_truncations("icmp echo", frame, len, &tf_server);
}

/* The UDP datagram is complete but shorter than a psb header. */
static void
test_short_udp_payload(void **state)
{
	struct psb_frame f;
	size_t len;

	len = build_seg(frame, PSB_MSG_PULL, 0, 0, 1432);
	len -= 20;
	tf_put16(frame + OFF_IP + 2, (uint16_t)(len - OFF_IP));
	tf_fix_ip_csum(frame + OFF_IP);
	tf_put16(frame + OFF_UDP + 4, (uint16_t)(len - OFF_UDP));
	assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_TRUNCATED);

	/* UDP header only. */
	len = OFF_UDP + PSB_UDP_HLEN;
	tf_put16(frame + OFF_IP + 2, (uint16_t)(len - OFF_IP));
	tf_fix_ip_csum(frame + OFF_IP);
	tf_put16(frame + OFF_UDP + 4, PSB_UDP_HLEN);
	assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_TRUNCATED);
}

static void
test_ethertype(void **state)
{
	static const uint16_t bad[] = { 0x86dd, 0x88a8, 0x0000, 0x0801, 0x9100 };
	struct psb_frame f;
	unsigned int i;
	size_t len;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		len = build_seg(frame, PSB_MSG_PULL, 0, 0, 1432);
		tf_put16(frame + 12, bad[i]);
		assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_ETHERTYPE);
	}
	/* A VLAN tag around something other than IPv4 or ARP. */
	len = build_seg(frame, PSB_MSG_PULL, 0, 0, 1432);
	len = tf_add_vlan(frame2, frame, len, 1);
	tf_put16(frame2 + 16, 0x86dd);
	assert_int_equal(parse_as(frame2, len, &tf_server, &f), -PSB_DROP_ETHERTYPE);
}

static void
test_vlan_ipv4(void **state)
{
	struct psb_frame f, g;
	size_t len, vlen;

	len = build_seg(frame, PSB_MSG_PUSH, 4096, 1432, 1432);
	assert_int_equal(parse_as(frame, len, &tf_server, &g), PSB_FRAME_PSB);
	vlen = tf_add_vlan(frame2, frame, len, 0x2064);
	assert_int_equal(vlen, len + 4);
	assert_int_equal(parse_as(frame2, vlen, &tf_server, &f), PSB_FRAME_PSB);
	assert_int_equal(f.l3_off, OFF_IP + 4);
	assert_int_equal(f.l4_off, OFF_UDP + 4);
	assert_hdr_equal(&f.hdr, &g.hdr);
	assert_ptr_equal(f.payload, frame2 + PSB_FRAME_HLEN + 4);
	assert_int_equal(f.payload_len, 1432);
	assert_memory_equal(f.payload, g.payload, 1432);
	assert_memory_equal(f.src.mac, tf_worker.mac, 6);
	assert_int_equal(f.src.port, tf_worker.port);
}

static void
test_ip_header_errors(void **state)
{
	struct psb_frame f;
	size_t len;

	len = build_seg(frame, PSB_MSG_PULL, 0, 0, 1432);
	frame[OFF_IP] = 0x65;	/* version 6 */
	tf_fix_ip_csum(frame + OFF_IP);
	assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_IP_HDR);

	len = build_seg(frame, PSB_MSG_PULL, 0, 0, 1432);
	frame[OFF_IP] = 0x44;	/* ihl 16 bytes */
	tf_fix_ip_csum(frame + OFF_IP);
	assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_IP_HDR);

	len = build_seg(frame, PSB_MSG_PULL, 0, 0, 1432);
	frame[OFF_IP] = 0x40;	/* ihl 0 */
	assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_IP_HDR);

	/* Total length shorter than the IP header itself. */
	len = build_seg(frame, PSB_MSG_PULL, 0, 0, 1432);
	tf_put16(frame + OFF_IP + 2, 19);
	tf_fix_ip_csum(frame + OFF_IP);
	assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_IP_HDR);
	tf_put16(frame + OFF_IP + 2, 0);
	tf_fix_ip_csum(frame + OFF_IP);
	assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_IP_HDR);

	/* Total length longer than the frame. */
	len = build_seg(frame, PSB_MSG_PULL, 0, 0, 1432);
	tf_put16(frame + OFF_IP + 2, (uint16_t)(len - OFF_IP + 1));
	tf_fix_ip_csum(frame + OFF_IP);
	assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_TRUNCATED);

	/* Total length leaves no room for the UDP header. */
	len = build_seg(frame, PSB_MSG_PULL, 0, 0, 1432);
	tf_put16(frame + OFF_IP + 2, PSB_IP_HLEN + 4);
	tf_fix_ip_csum(frame + OFF_IP);
	assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_TRUNCATED);

	/* Total length cuts into the psb header: the UDP length no longer fits. */
	len = build_seg(frame, PSB_MSG_PULL, 0, 0, 1432);
	tf_put16(frame + OFF_IP + 2, PSB_IP_HLEN + PSB_UDP_HLEN + 10);
	tf_fix_ip_csum(frame + OFF_IP);
	assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_UDP_LEN);
}

/* IPv4 options move the UDP header; ihl is honoured. */
static void
test_ip_options(void **state)
{
	struct psb_frame f;
	size_t len;

	len = build_seg(frame, PSB_MSG_PUSH, 300, 0, 1432);
	tf_add_ip_options(frame2, frame, len);	/* four NOP options */
	assert_int_equal(parse_as(frame2, len + 4, &tf_server, &f), PSB_FRAME_PSB);
	assert_int_equal(f.l4_off, OFF_UDP + 4);
	assert_int_equal(f.hdr.total_len, 300);
	assert_ptr_equal(f.payload, frame2 + PSB_FRAME_HLEN + 4);
	assert_int_equal(f.payload_len, 300);
	assert_memory_equal(f.payload, frame + PSB_FRAME_HLEN, 300);

	/* The checksum covers the options too. */
	frame2[OFF_UDP] = 0x00;
	assert_int_equal(parse_as(frame2, len + 4, &tf_server, &f), -PSB_DROP_IP_CSUM);
}

static void
test_ip_checksum(void **state)
{
	struct psb_parse_cfg c = cfg_for(&tf_server);
	struct psb_frame f;
	size_t len;

	len = build_seg(frame, PSB_MSG_PUSH, 64, 0, 1432);
	frame[OFF_IP + 11] ^= 0x01;
	assert_int_equal(psb_frame_parse(frame, len, &c, &f), -PSB_DROP_IP_CSUM);
	c.check_ip_csum = 0;
	assert_int_equal(psb_frame_parse(frame, len, &c, &f), PSB_FRAME_PSB);

	/* A changed header byte with a stale checksum. */
	len = build_seg(frame, PSB_MSG_PUSH, 64, 0, 1432);
	frame[OFF_IP + 8] = 3;	/* TTL */
	c.check_ip_csum = 1;
	assert_int_equal(psb_frame_parse(frame, len, &c, &f), -PSB_DROP_IP_CSUM);
	c.check_ip_csum = 0;
	assert_int_equal(psb_frame_parse(frame, len, &c, &f), PSB_FRAME_PSB);
}

static void
test_ip_fragments(void **state)
{
	static const uint16_t frag[] = { 0x2000, 0x6000, 0x0001, 0x4001, 0x1fff, 0x00b9 };
	struct psb_frame f;
	unsigned int i;
	size_t len;

	for (i = 0; i < sizeof(frag) / sizeof(frag[0]); i++) {
		len = build_seg(frame, PSB_MSG_PUSH, 64, 0, 1432);
		tf_put16(frame + OFF_IP + 6, frag[i]);
		tf_fix_ip_csum(frame + OFF_IP);
		if (parse_as(frame, len, &tf_server, &f) != -PSB_DROP_IP_FRAG)
			fail_msg("frag field 0x%04x not dropped as fragment", frag[i]);
	}
	/* DF alone, or nothing, is a whole datagram. */
	len = build_seg(frame, PSB_MSG_PUSH, 64, 0, 1432);
	tf_put16(frame + OFF_IP + 6, 0);
	tf_fix_ip_csum(frame + OFF_IP);
	assert_int_equal(parse_as(frame, len, &tf_server, &f), PSB_FRAME_PSB);
}

static void
test_not_mine(void **state)
{
	struct psb_parse_cfg c = cfg_for(&tf_server);
	struct psb_frame f;
	size_t len;

	len = build_seg(frame, PSB_MSG_PUSH, 64, 0, 1432);
	c.my_ip = 0xc6120009;
	assert_int_equal(psb_frame_parse(frame, len, &c, &f), -PSB_DROP_NOT_MINE);
	assert_int_equal(parse_as(frame, len, &tf_worker, &f), -PSB_DROP_NOT_MINE);
	c.my_ip = 0;	/* any */
	assert_int_equal(psb_frame_parse(frame, len, &c, &f), PSB_FRAME_PSB);
	assert_int_equal(f.dst.ip, tf_server.ip);
}

static void
test_ip_protocol(void **state)
{
	static const uint8_t protos[] = { 0, 2, 6, 41, 58, 132, 255 };
	struct psb_frame f;
	unsigned int i;
	size_t len;

	for (i = 0; i < sizeof(protos); i++) {
		len = build_seg(frame, PSB_MSG_PUSH, 64, 0, 1432);
		frame[OFF_IP + 9] = protos[i];
		tf_fix_ip_csum(frame + OFF_IP);
		assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_PROTO);
	}
}

static void
test_udp_length(void **state)
{
	struct psb_frame f;
	size_t len;
	uint16_t ulen;

	len = build_seg(frame, PSB_MSG_PUSH, 64, 0, 1432);
	ulen = get16(frame + OFF_UDP + 4);
	tf_put16(frame + OFF_UDP + 4, ulen + 1);
	assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_UDP_LEN);
	tf_put16(frame + OFF_UDP + 4, ulen - 1);
	assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_UDP_LEN);
	tf_put16(frame + OFF_UDP + 4, PSB_UDP_HLEN - 1);
	assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_UDP_LEN);
	tf_put16(frame + OFF_UDP + 4, 0);
	assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_UDP_LEN);
	tf_put16(frame + OFF_UDP + 4, 0xffff);
	assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_UDP_LEN);
	tf_put16(frame + OFF_UDP + 4, ulen);
	assert_int_equal(parse_as(frame, len, &tf_server, &f), PSB_FRAME_PSB);
}

static void
test_udp_port(void **state)
{
	struct psb_parse_cfg c = cfg_for(&tf_server);
	struct psb_frame f;
	size_t len;

	len = build_seg(frame, PSB_MSG_PUSH, 64, 0, 1432);
	tf_put16(frame + OFF_UDP + 2, 9999);
	assert_int_equal(psb_frame_parse(frame, len, &c, &f), -PSB_DROP_PORT);
	/* The source port does not matter. */
	tf_put16(frame + OFF_UDP + 2, PSB_UDP_PORT);
	tf_put16(frame + OFF_UDP, 9999);
	assert_int_equal(psb_frame_parse(frame, len, &c, &f), PSB_FRAME_PSB);

	/* The scheduler port is served only when configured. */
	tf_put16(frame + OFF_UDP + 2, PSB_SCHED_PORT);
	assert_int_equal(psb_frame_parse(frame, len, &c, &f), PSB_FRAME_PSB);
	assert_int_equal(f.dst.port, PSB_SCHED_PORT);
	c.sched_port = 0;
	assert_int_equal(psb_frame_parse(frame, len, &c, &f), -PSB_DROP_PORT);

	/* psb_port 0 accepts any port. */
	c.psb_port = 0;
	tf_put16(frame + OFF_UDP + 2, 9999);
	assert_int_equal(psb_frame_parse(frame, len, &c, &f), PSB_FRAME_PSB);
	assert_int_equal(f.dst.port, 9999);
}

/*
 * The udp range: datagrams of other protocols, to this node or to the one group, handed
 * whole; the group carries nothing else, and never ICMP; broadcast is not for the range.
 */
static void
test_udp_range(void **state)
{
	struct psb_parse_cfg c = cfg_for(&tf_server);
	struct psb_frame f;
	size_t len;

	(void)state;
	len = build_seg(frame, PSB_MSG_PUSH, 64, 0, 1432);
	tf_put16(frame + OFF_UDP + 2, 7001);
	assert_int_equal(psb_frame_parse(frame, len, &c, &f), -PSB_DROP_PORT);
	c.udp_lo = 7000;
	c.udp_hi = 7001;
	assert_int_equal(psb_frame_parse(frame, len, &c, &f), PSB_FRAME_UDP);
	assert_int_equal(f.dst.port, 7001);
	assert_ptr_equal(f.payload, frame + OFF_UDP + PSB_UDP_HLEN);
	assert_int_equal(f.payload_len, len - OFF_UDP - PSB_UDP_HLEN);
	assert_int_equal(f.hdr.magic, 0);		/* not decoded */
	tf_put16(frame + OFF_UDP + 2, 7002);
	assert_int_equal(psb_frame_parse(frame, len, &c, &f), -PSB_DROP_PORT);
	/* the psb port stays psb's */
	tf_put16(frame + OFF_UDP + 2, PSB_UDP_PORT);
	assert_int_equal(psb_frame_parse(frame, len, &c, &f), PSB_FRAME_PSB);

	/* to the group: the range alone */
	tf_put32(frame + OFF_IP + 16, 0xef120001);
	tf_fix_ip_csum(frame + OFF_IP);
	assert_int_equal(psb_frame_parse(frame, len, &c, &f), -PSB_DROP_NOT_MINE);
	c.group = 0xef120001;
	assert_int_equal(psb_frame_parse(frame, len, &c, &f), -PSB_DROP_NOT_MINE);
	tf_put16(frame + OFF_UDP + 2, 7000);
	assert_int_equal(psb_frame_parse(frame, len, &c, &f), PSB_FRAME_UDP);
	assert_int_equal(f.dst.ip, 0xef120001);
	/* another group */
	tf_put32(frame + OFF_IP + 16, 0xef120002);
	tf_fix_ip_csum(frame + OFF_IP);
	assert_int_equal(psb_frame_parse(frame, len, &c, &f), -PSB_DROP_NOT_MINE);
	/* broadcast to the range: not taken as the range's */
	tf_put32(frame + OFF_IP + 16, 0xffffffff);
	tf_fix_ip_csum(frame + OFF_IP);
	assert_int_not_equal(psb_frame_parse(frame, len, &c, &f), PSB_FRAME_UDP);

	/* an echo request to the group is not answered */
	len = build_icmp_echo(frame, &tf_worker, &tf_server, 16);
	tf_put32(frame + OFF_IP + 16, 0xef120001);
	tf_fix_ip_csum(frame + OFF_IP);
	assert_int_equal(psb_frame_parse(frame, len, &c, &f), -PSB_DROP_NOT_MINE);
}

static void
test_bad_magic(void **state)
{
	static const uint16_t bad[] = { 0x5350, 0x5054, 0x0000, 0xffff, 0x4053 };
	struct psb_frame f;
	struct psb_hdr h;
	unsigned int i;
	size_t len;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		h = seg_hdr(PSB_MSG_PUSH, 64, 0, 1432);
		h.magic = bad[i];
		len = build(frame, &h, 64);
		assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_MAGIC);
	}
	/* Magic is checked before the version. */
	h = seg_hdr(PSB_MSG_PUSH, 64, 0, 1432);
	h.magic = 0x1234;
	h.version = 9;
	len = build(frame, &h, 64);
	assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_MAGIC);
}

struct seg_case {
	const char *what;
	uint32_t total;
	uint32_t offset;
	uint16_t seg_len;
	uint16_t seg_size;
	uint16_t payload;
	int ok;
};

static const struct seg_case seg_cases[] = {
	{ "first segment", 4096, 0, 1432, 1432, 1432, 1 },
	{ "middle segment", 4096, 1432, 1432, 1432, 1432, 1 },
	{ "last segment", 4096, 2864, 1232, 1432, 1232, 1 },
	{ "exact multiple, last", 2864, 1432, 1432, 1432, 1432, 1 },
	{ "single short segment", 10, 0, 10, 1432, 10, 1 },
	{ "empty value", 0, 0, 0, 1432, 0, 1 },
	{ "empty value, no stride", 0, 0, 0, 0, 0, 1 },
	{ "largest value, last", PSB_MAX_VALUE, PSB_MAX_VALUE / 8932 * 8932,
		PSB_MAX_VALUE % 8932, 8932, PSB_MAX_VALUE % 8932, 1 },
	{ "offset not a multiple", 4096, 4, 1432, 1432, 1432, 0 },
	{ "offset one stride off", 4096, 1433, 1432, 1432, 1432, 0 },
	{ "seg_len short in middle", 4096, 1432, 1000, 1432, 1000, 0 },
	{ "seg_len full at end", 4096, 2864, 1432, 1432, 1432, 0 },
	{ "seg_len zero", 4096, 0, 0, 1432, 0, 0 },
	{ "offset at total", 2864, 2864, 100, 1432, 100, 0 },
	{ "offset past total", 4096, 4296, 100, 1432, 100, 0 },
	{ "total over max", PSB_MAX_VALUE + 1, 0, 1432, 1432, 1432, 0 },
	{ "total huge", 0xffffffff, 0, 1432, 1432, 1432, 0 },
	{ "seg_size not multiple of 4", 4096, 0, 1430, 1430, 1430, 0 },
	{ "seg_size 2", 4096, 0, 2, 2, 2, 0 },
	{ "seg_size 0", 10, 0, 10, 0, 10, 0 },
	{ "payload shorter", 4096, 0, 1432, 1432, 1431, 0 },
	{ "payload longer", 4096, 0, 1432, 1432, 1433, 0 },
	{ "empty value with payload", 0, 0, 0, 1432, 4, 0 },
	{ "empty value with seg_len", 0, 0, 4, 1432, 4, 0 },
	{ "empty value with offset", 0, 8, 0, 1432, 0, 0 },
};

static void
test_segment_check(void **state)
{
	unsigned int i;

	for (i = 0; i < sizeof(seg_cases) / sizeof(seg_cases[0]); i++) {
		const struct seg_case *c = &seg_cases[i];
		struct psb_hdr h;
		int rc;

		psb_hdr_init(&h, PSB_MSG_PUSH);
		h.total_len = c->total;
		h.offset = c->offset;
		h.seg_len = c->seg_len;
		h.seg_size = c->seg_size;
		rc = psb_hdr_check_segment(&h, c->payload);
		if (rc != (c->ok ? 0 : -PSB_DROP_SEGMENT))
			fail_msg("%s: psb_hdr_check_segment returned %d", c->what, rc);
	}
}

/* The same cases through whole frames. */
static void
test_segment_frames(void **state)
{
	unsigned int i;

	for (i = 0; i < sizeof(seg_cases) / sizeof(seg_cases[0]); i++) {
		const struct seg_case *c = &seg_cases[i];
		struct psb_frame f;
		struct psb_hdr h;
		size_t len;
		int rc;

		psb_hdr_init(&h, PSB_MSG_PUSHPULL);
		h.total_len = c->total;
		h.offset = c->offset;
		h.seg_len = c->seg_len;
		h.seg_size = c->seg_size;
		len = build(frame, &h, c->payload);
		rc = parse_as(frame, len, &tf_server, &f);
		if (rc != (c->ok ? PSB_FRAME_PSB : -PSB_DROP_SEGMENT))
			fail_msg("%s: psb_frame_parse returned %d", c->what, rc);
		if (c->ok)
			assert_int_equal(f.payload_len, c->payload);
	}
}

/* A foreign version is handed up (to be answered) without segment checks. */
static void
test_foreign_version(void **state)
{
	static const uint8_t versions[] = { 0, 2, 0xff };
	struct psb_frame f;
	struct psb_hdr h;
	unsigned int i;
	size_t len;

	for (i = 0; i < sizeof(versions); i++) {
		psb_hdr_init(&h, 0x42);
		h.version = versions[i];
		h.total_len = 0xffffffff;
		h.offset = 3;
		h.seg_len = 999;
		h.seg_size = 7;
		h.req_id = 55;
		len = build(frame, &h, 5);
		assert_int_equal(parse_as(frame, len, &tf_server, &f), PSB_FRAME_PSB);
		assert_int_equal(f.hdr.version, versions[i]);
		assert_int_equal(f.hdr.req_id, 55);
		assert_int_equal(f.payload_len, 5);
		assert_ptr_equal(f.payload, frame + PSB_FRAME_HLEN);
	}
	/* The same header with the current version is rejected. */
	h.version = PSB_VERSION;
	len = build(frame, &h, 5);
	assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_SEGMENT);
}

/* Bytes after the IP packet (Ethernet padding, a kept FCS) are ignored. */
static void
test_ethernet_padding(void **state)
{
	struct psb_frame f;
	size_t len;

	len = build_seg(frame, PSB_MSG_PUSH, 64, 0, 1432);
	memset(frame + len, 0x5a, 4);
	assert_int_equal(parse_as(frame, len + 4, &tf_server, &f), PSB_FRAME_PSB);
	assert_int_equal(f.payload_len, 64);

	/* A bare PULL padded well past its end. */
	len = build_seg(frame, PSB_MSG_PULL, 0, 0, 1432);
	memset(frame + len, 0xff, 100);
	assert_int_equal(parse_as(frame, len + 100, &tf_server, &f), PSB_FRAME_PSB);
	assert_int_equal(f.payload_len, 0);

	/* ARP padded to the 60-byte Ethernet minimum. */
	len = psb_arp_request(frame, tf_worker.mac, tf_worker.ip, tf_server.ip);
	memset(frame + len, 0, 60 - len);
	assert_int_equal(parse_as(frame, 60, &tf_server, &f), PSB_FRAME_ARP_REQUEST);

	/* ICMP echo padded: the checksum covers only the IP payload. */
	len = build_icmp_echo(frame, &tf_worker, &tf_server, 0);
	assert_int_equal(len, 42);
	memset(frame + len, 0xc3, 60 - len);
	assert_int_equal(parse_as(frame, 60, &tf_server, &f), PSB_FRAME_ICMP_ECHO);
	assert_int_equal(psb_icmp_echo_reply(frame, 60, &f), 0);
	assert_int_equal(frame[OFF_UDP], 0);
	assert_int_equal(psb_csum_partial(frame + OFF_UDP, 8, 0), 0xffff);
	assert_int_equal(frame[59], 0xc3);
	assert_int_equal(frame[42], 0xc3);
}

/* Frames up to PSB_MAX_FRAME are read (a tagged jumbo fits); one byte more is oversize. */
static void
test_oversize(void **state)
{
	static uint8_t big[PSB_MAX_FRAME + 64];
	struct psb_frame f;
	size_t len;

	len = build_seg(frame, PSB_MSG_PUSH, 8932, 0, 8932);
	assert_int_equal(len, PSB_ETH_HLEN + 9000);
	len = tf_add_vlan(big, frame, len, 7);
	assert_int_equal(parse_as(big, len, &tf_server, &f), PSB_FRAME_PSB);
	assert_int_equal(f.payload_len, 8932);
	/* Padded to the buffer's size it is still the same frame. */
	memset(big + len, 0xa5, PSB_MAX_FRAME + 1 - len);
	assert_int_equal(parse_as(big, PSB_MAX_FRAME, &tf_server, &f), PSB_FRAME_PSB);
	assert_int_equal(parse_as(big, PSB_MAX_FRAME + 1, &tf_server, &f), -PSB_DROP_OVERSIZE);
	/* Whatever it holds: an ARP request that long is not answered either. */
	len = psb_arp_request(big, tf_worker.mac, tf_worker.ip, tf_server.ip);
	assert_int_equal(parse_as(big, len, &tf_server, &f), PSB_FRAME_ARP_REQUEST);
	assert_int_equal(parse_as(big, PSB_MAX_FRAME + 1, &tf_server, &f), -PSB_DROP_OVERSIZE);
	assert_string_equal(psb_drop_names[PSB_DROP_OVERSIZE], "oversize");
}

static void
test_arp(void **state)
{
	static const uint8_t want_req[42] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff,	/* broadcast */
		0x02, 0x00, 0x00, 0x00, 0x00, 0x01,	/* worker MAC */
		0x08, 0x06,
		0x00, 0x01, 0x08, 0x00, 0x06, 0x04,	/* Ethernet, IPv4, 6, 4 */
		0x00, 0x01,				/* request */
		0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0xc6, 0x12, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc6, 0x12, 0x00, 0x02,
	};
	static const uint8_t want_reply[42] = {
		0x02, 0x00, 0x00, 0x00, 0x00, 0x01,	/* to the requester */
		0x02, 0x00, 0x00, 0x00, 0x00, 0x02,	/* server MAC */
		0x08, 0x06,
		0x00, 0x01, 0x08, 0x00, 0x06, 0x04,
		0x00, 0x02,				/* reply */
		0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0xc6, 0x12, 0x00, 0x02,
		0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0xc6, 0x12, 0x00, 0x01,
	};
	uint8_t req[64], out[64], inplace[64];
	struct psb_parse_cfg c = cfg_for(&tf_server);
	struct psb_frame f;
	size_t len;

	memset(req, 0xee, sizeof(req));
	len = psb_arp_request(req, tf_worker.mac, tf_worker.ip, tf_server.ip);
	assert_int_equal(len, 42);
	assert_memory_equal(req, want_req, 42);
	assert_int_equal(req[42], 0xee);

	assert_int_equal(psb_frame_parse(req, len, &c, &f), PSB_FRAME_ARP_REQUEST);
	assert_int_equal(f.kind, PSB_FRAME_ARP_REQUEST);
	assert_int_equal(f.l3_off, OFF_IP);
	assert_memory_equal(f.src.mac, tf_worker.mac, 6);
	assert_int_equal(f.src.ip, tf_worker.ip);
	assert_int_equal(f.dst.ip, tf_server.ip);

	memset(out, 0xee, sizeof(out));
	assert_int_equal(psb_arp_reply(out, req, len, tf_server.mac, tf_server.ip), 42);
	assert_memory_equal(out, want_reply, 42);
	assert_int_equal(out[42], 0xee);

	/* In place: the request is overwritten by its reply. */
	memcpy(inplace, req, len);
	assert_int_equal(psb_arp_reply(inplace, inplace, len, tf_server.mac, tf_server.ip), 42);
	assert_memory_equal(inplace, want_reply, 42);

	/* The requester learns the server from the reply. */
	assert_int_equal(parse_as(out, 42, &tf_worker, &f), PSB_FRAME_ARP_REPLY);
	assert_memory_equal(f.src.mac, tf_server.mac, 6);
	assert_int_equal(f.src.ip, tf_server.ip);
	assert_int_equal(f.dst.ip, tf_worker.ip);

	/* A VLAN-tagged request is answered with the same (untagged) reply. */
	len = tf_add_vlan(frame, req, 42, 7);
	assert_int_equal(psb_frame_parse(frame, len, &c, &f), PSB_FRAME_ARP_REQUEST);
	assert_int_equal(f.l3_off, OFF_IP + 4);
	assert_int_equal(psb_arp_reply(out, frame, len, tf_server.mac, tf_server.ip), 42);
	assert_memory_equal(out, want_reply, 42);

	/* Requests for another address, or with no address configured. */
	len = psb_arp_request(req, tf_worker.mac, tf_worker.ip, 0xc6120009);
	assert_int_equal(psb_frame_parse(req, len, &c, &f), -PSB_DROP_NOT_MINE);
	len = psb_arp_request(req, tf_worker.mac, tf_worker.ip, tf_server.ip);
	c.my_ip = 0;
	assert_int_equal(psb_frame_parse(req, len, &c, &f), -PSB_DROP_NOT_MINE);
	c.my_ip = tf_server.ip;

	/* Malformed: hardware type, protocol type, address lengths, opcode. */
	req[OFF_IP + 1] = 6;
	assert_int_equal(psb_frame_parse(req, len, &c, &f), -PSB_DROP_ARP);
	req[OFF_IP + 1] = 1;
	req[OFF_IP + 2] = 0x86;
	assert_int_equal(psb_frame_parse(req, len, &c, &f), -PSB_DROP_ARP);
	req[OFF_IP + 2] = 0x08;
	req[OFF_IP + 4] = 8;
	assert_int_equal(psb_frame_parse(req, len, &c, &f), -PSB_DROP_ARP);
	req[OFF_IP + 4] = 6;
	req[OFF_IP + 5] = 16;
	assert_int_equal(psb_frame_parse(req, len, &c, &f), -PSB_DROP_ARP);
	req[OFF_IP + 5] = 4;
	req[OFF_IP + 7] = 3;
	assert_int_equal(psb_frame_parse(req, len, &c, &f), -PSB_DROP_ARP);
	req[OFF_IP + 7] = 1;
	assert_int_equal(psb_frame_parse(req, len, &c, &f), PSB_FRAME_ARP_REQUEST);
}

static void
check_echo_reply(const uint8_t *buf, const uint8_t *req, size_t len, size_t l3)
{
	const uint8_t *ip = buf + l3, *rip = req + l3;
	const uint8_t *ic = ip + PSB_IP_HLEN, *ric = rip + PSB_IP_HLEN;
	uint16_t ip_len = get16(ip + 2);

	assert_memory_equal(buf, req + 6, 6);
	assert_memory_equal(buf + 6, req, 6);
	assert_memory_equal(buf + 12, req + 12, l3 - 12);
	assert_int_equal(get32(ip + 12), get32(rip + 16));
	assert_int_equal(get32(ip + 16), get32(rip + 12));
	assert_int_equal(ip_len, get16(rip + 2));
	assert_int_equal(ip[8], 64);
	assert_int_equal(ip[9], 1);
	assert_true(ip_csum_ok(buf, l3));
	assert_int_equal(ic[0], 0);
	assert_int_equal(ic[1], 0);
	assert_int_equal(psb_csum_partial(ic, ip_len - PSB_IP_HLEN, 0), 0xffff);
	/* Identifier, sequence and data come back unchanged. */
	assert_memory_equal(ic + 4, ric + 4, ip_len - PSB_IP_HLEN - 4);
	assert_memory_equal(buf + l3 + ip_len, req + l3 + ip_len, len - l3 - ip_len);
}

static void
test_icmp_echo(void **state)
{
	static const uint16_t sizes[] = { 0, 1, 37, 56, 1472 };
	uint8_t req[1600];
	struct psb_frame f;
	unsigned int i;
	size_t len;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		len = build_icmp_echo(frame, &tf_worker, &tf_server, sizes[i]);
		memcpy(req, frame, len);
		assert_int_equal(parse_as(frame, len, &tf_server, &f), PSB_FRAME_ICMP_ECHO);
		assert_int_equal(f.l3_off, OFF_IP);
		assert_int_equal(f.l4_off, OFF_UDP);
		assert_int_equal(f.src.ip, tf_worker.ip);
		assert_int_equal(f.dst.ip, tf_server.ip);
		assert_int_equal(psb_icmp_echo_reply(frame, len, &f), 0);
		check_echo_reply(frame, req, len, OFF_IP);
		/* An echo reply is not something psb answers. */
		assert_int_equal(parse_as(frame, len, &tf_worker, &f), -PSB_DROP_ICMP);
	}

	/* VLAN-tagged request. */
	len = build_icmp_echo(frame, &tf_worker, &tf_server, 20);
	len = tf_add_vlan(req, frame, len, 3);
	memcpy(frame, req, len);
	assert_int_equal(parse_as(frame, len, &tf_server, &f), PSB_FRAME_ICMP_ECHO);
	assert_int_equal(f.l4_off, OFF_UDP + 4);
	assert_int_equal(psb_icmp_echo_reply(frame, len, &f), 0);
	check_echo_reply(frame, req, len, OFF_IP + 4);

	/* A buffer shorter than the IP length claims is refused. */
	len = build_icmp_echo(frame, &tf_worker, &tf_server, 20);
	assert_int_equal(parse_as(frame, len, &tf_server, &f), PSB_FRAME_ICMP_ECHO);
	assert_int_equal(psb_icmp_echo_reply(frame, len - 1, &f), -EINVAL);
}

/* ECHO: answered only as one whole segment of 1 KiB at most, from a unicast source. */
static void
test_echo_answerable(void **state)
{
	struct psb_addr src = tf_worker;
	struct psb_hdr h;
	struct psb_frame f;
	size_t len;

	/* a 64-byte echo as a client sends it passes the parser and is answered */
	h = tf_hdr(PSB_MSG_ECHO, 0, 0, 7, 0, 0);
	tf_whole(&h, 64);
	len = psb_frame_build(frame, &tf_worker, &tf_server, &h, value, h.seg_len);
	assert_int_equal(parse_as(frame, len, &tf_server, &f), PSB_FRAME_PSB);
	assert_int_equal(f.hdr.type, PSB_MSG_ECHO);
	assert_true(psb_echo_answerable(&f.hdr, &f.src, tf_server.ip));
	/* empty, and as long as it may be */
	tf_whole(&h, 0);
	assert_true(psb_echo_answerable(&h, &src, tf_server.ip));
	tf_whole(&h, PSB_ECHO_MAX_LEN);
	assert_true(psb_echo_answerable(&h, &src, tf_server.ip));
	/* longer, or one segment of several */
	tf_whole(&h, PSB_ECHO_MAX_LEN + 4);
	assert_false(psb_echo_answerable(&h, &src, tf_server.ip));
	tf_seg(&h, 128, 0, 64);
	assert_false(psb_echo_answerable(&h, &src, tf_server.ip));
	tf_seg(&h, 128, 64, 64);
	assert_false(psb_echo_answerable(&h, &src, tf_server.ip));
	tf_whole(&h, 64);
	h.offset = 64;
	assert_false(psb_echo_answerable(&h, &src, tf_server.ip));

	/* sources that cannot take an answer, or should not */
	h.offset = 0;
	assert_true(psb_echo_answerable(&h, &src, tf_server.ip));
	src.mac[0] = 0x03;		/* a group MAC */
	assert_false(psb_echo_answerable(&h, &src, tf_server.ip));
	src = tf_worker;
	src.port = 0;
	assert_false(psb_echo_answerable(&h, &src, tf_server.ip));
	src = tf_worker;
	src.ip = 0;
	assert_false(psb_echo_answerable(&h, &src, tf_server.ip));
	src.ip = 0xe00000fb;		/* 224.0.0.251 */
	assert_false(psb_echo_answerable(&h, &src, tf_server.ip));
	src.ip = 0xffffffff;
	assert_false(psb_echo_answerable(&h, &src, tf_server.ip));
	src.ip = 0xf0000001;		/* 240.0.0.1 */
	assert_false(psb_echo_answerable(&h, &src, tf_server.ip));
	src.ip = tf_server.ip;		/* the node itself */
	assert_false(psb_echo_answerable(&h, &src, tf_server.ip));
	src.ip = 0xdfffffff;		/* 223.255.255.255: the last unicast /4 */
	assert_true(psb_echo_answerable(&h, &src, tf_server.ip));
}

static void
test_icmp_drops(void **state)
{
	struct psb_frame f;
	size_t len;

	len = build_icmp_echo(frame, &tf_worker, &tf_server, 8);
	frame[OFF_UDP + 8] ^= 0x40;	/* data no longer matches the checksum */
	assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_ICMP);

	len = build_icmp_echo(frame, &tf_worker, &tf_server, 8);
	frame[OFF_UDP] = 13;	/* timestamp request */
	tf_fix_icmp_csum(frame + OFF_UDP, 16);
	assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_ICMP);

	len = build_icmp_echo(frame, &tf_worker, &tf_server, 8);
	frame[OFF_UDP + 1] = 1;	/* code must be 0 */
	tf_fix_icmp_csum(frame + OFF_UDP, 16);
	assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_ICMP);

	len = build_icmp_echo(frame, &tf_worker, &tf_server, 8);
	assert_int_equal(parse_as(frame, len, &tf_worker, &f), -PSB_DROP_NOT_MINE);

	/* An IP packet too short for an ICMP header. */
	len = build_icmp_echo(frame, &tf_worker, &tf_server, 0);
	tf_put16(frame + OFF_IP + 2, PSB_IP_HLEN + 4);
	tf_fix_ip_csum(frame + OFF_IP);
	assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_TRUNCATED);
}

static void
test_parse_ip(void **state)
{
	static const char *const bad[] = {
		"", "abc", "256.1.1.1", "1.2.3", "1.2.3.4.5", " 1.2.3.4", "1.2.3.4 ",
		"1.2.3.-4", "1..2.3", "0x01.2.3.4",
	};
	unsigned int i;
	uint32_t ip;

	assert_int_equal(psb_parse_ip("198.18.0.1", &ip), 0);
	assert_int_equal(ip, 0xc6120001);
	assert_int_equal(psb_parse_ip("0.0.0.0", &ip), 0);
	assert_int_equal(ip, 0);
	assert_int_equal(psb_parse_ip("255.255.255.255", &ip), 0);
	assert_int_equal(ip, 0xffffffff);
	assert_int_equal(psb_parse_ip("10.1.2.3", &ip), 0);
	assert_int_equal(ip, 0x0a010203);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (psb_parse_ip(bad[i], &ip) != -EINVAL)
			fail_msg("psb_parse_ip accepted \"%s\"", bad[i]);
	assert_int_equal(psb_parse_ip(NULL, &ip), -EINVAL);
}

static void
test_parse_mac(void **state)
{
	static const char *const bad[] = {
		"", "02:00:00:00:00", "02:00:00:00:00:01:02", "02:00:00:00:00:100",
		"02:00:00:00:00:0g", "zz:00:00:00:00:00", "02-00-00-00-00-01",
		"02:00:00:00:00:01 ", "02:00:00:00:00:", "0200.0000.0001", "fff:0:0:0:0:0",
	};
	static const uint8_t a[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };
	static const uint8_t b[6] = { 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff };
	static const uint8_t c[6] = { 0, 1, 2, 3, 4, 5 };
	uint8_t mac[6];
	unsigned int i;

	assert_int_equal(psb_parse_mac("02:00:00:00:00:01", mac), 0);
	assert_memory_equal(mac, a, 6);
	assert_int_equal(psb_parse_mac("AA:bb:Cc:dD:ee:FF", mac), 0);
	assert_memory_equal(mac, b, 6);
	assert_int_equal(psb_parse_mac("0:1:2:3:4:5", mac), 0);
	assert_memory_equal(mac, c, 6);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (psb_parse_mac(bad[i], mac) != -EINVAL)
			fail_msg("psb_parse_mac accepted \"%s\"", bad[i]);
	assert_int_equal(psb_parse_mac(NULL, mac), -EINVAL);
}

static void
test_ip_str(void **state)
{
	char buf[16];

	assert_string_equal(psb_ip_str(0xc6120001, buf), "198.18.0.1");
	assert_string_equal(psb_ip_str(0xffffffff, buf), "255.255.255.255");
	assert_string_equal(psb_ip_str(0, buf), "0.0.0.0");
}

static void
test_seg_sizes(void **state)
{
	assert_int_equal(psb_seg_size_for_mtu(1500), 1432);
	assert_int_equal(psb_seg_size_for_mtu(9000), 8932);
	/* Rounded down to a multiple of 4. */
	assert_int_equal(psb_seg_size_for_mtu(1499), 1428);
	assert_int_equal(psb_seg_size_for_mtu(9000) + PSB_HDR_LEN, PSB_MAX_UDP_PAYLOAD);

	assert_int_equal(psb_seg_count(0, 1432), 1);
	assert_int_equal(psb_seg_count(1, 1432), 1);
	assert_int_equal(psb_seg_count(1432, 1432), 1);
	assert_int_equal(psb_seg_count(1433, 1432), 2);
	assert_int_equal(psb_seg_count(4096, 1432), 3);
	assert_int_equal(psb_seg_count(PSB_MAX_VALUE, 8932), PSB_MAX_VALUE / 8932 + 1);
	assert_int_equal(psb_seg_count(PSB_MAX_VALUE, 4), PSB_MAX_VALUE / 4);
}

static void
test_names(void **state)
{
	static const struct {
		uint8_t type;
		const char *name;
	} types[] = {
		{ PSB_MSG_PUSH, "PUSH" }, { PSB_MSG_PULL, "PULL" },
		{ PSB_MSG_PUSHPULL, "PUSHPULL" }, { PSB_MSG_BATCH, "BATCH" },
		{ PSB_MSG_BATCH_RESP, "BATCH_RESP" }, { PSB_MSG_REGISTER, "REGISTER" },
		{ PSB_MSG_BARRIER, "BARRIER" }, { PSB_MSG_PUSH_ACK, "PUSH_ACK" },
		{ PSB_MSG_PULL_RESP, "PULL_RESP" }, { PSB_MSG_PUSHPULL_RESP, "PUSHPULL_RESP" },
		{ PSB_MSG_REGISTER_ACK, "REGISTER_ACK" }, { PSB_MSG_BARRIER_ACK, "BARRIER_ACK" },
		{ PSB_MSG_ECHO, "ECHO" }, { PSB_MSG_ECHO_RESP, "ECHO_RESP" },
		{ PSB_MSG_ERROR, "ERROR" },
	};
	unsigned int i, j;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		assert_string_equal(psb_msg_type_name(types[i].type), types[i].name);
	for (i = 0; i < 256; i++)
		assert_non_null(psb_msg_type_name((uint8_t)i));
	assert_string_equal(psb_msg_type_name(0x42), "UNKNOWN");

	for (i = 0; i < PSB_ST_MAX; i++) {
		assert_non_null(psb_status_name((uint8_t)i));
		assert_string_not_equal(psb_status_name((uint8_t)i), "unknown");
		for (j = 0; j < i; j++)
			assert_string_not_equal(psb_status_name((uint8_t)i),
					psb_status_name((uint8_t)j));
	}
	for (i = PSB_ST_MAX; i < 256; i++)
		assert_string_equal(psb_status_name((uint8_t)i), "unknown");
	assert_string_equal(psb_status_name(PSB_ST_OK), "ok");

	for (i = 0; i < PSB_DROP_MAX; i++) {
		assert_non_null(psb_drop_names[i]);
		for (j = 0; j < i; j++)
			assert_string_not_equal(psb_drop_names[i], psb_drop_names[j]);
	}
}

/* The checksum of a published header, its own field zeroed: the value it carried. */
static void
check_published(const char *hex, size_t at, uint16_t want)
{
	uint8_t b[64];
	size_t n = tf_unhex(b, sizeof(b), hex);

	assert_int_equal(n, 20);
	assert_int_equal(psb_csum_partial(b, n, 0), 0xffff);	/* it holds as carried */
	assert_int_equal(b[at] << 8 | b[at + 1], want);
	b[at] = b[at + 1] = 0;
	assert_int_equal((uint16_t)~psb_csum_partial(b, n, 0), want);
}

/*
 * Published answers. IPv4 headers: the two worked in Wikipedia's "Internet checksum" and
 * "IPv4 header checksum" articles (b861, 442e) and those of two captured RoCE frames
 * published with scapy's RoCE tests (test/contrib/roce.uts: a ConnectX-4 Lx's CNP, 9161,
 * and a UC SEND_ONLY, b4d5). UDP with its pseudo-header: that SEND_ONLY's datagram over
 * IPv4 (aca2) and the same over IPv6 from those tests (e7c5), the pseudo-header summed as the
 * starting sum as a caller does.
 */
static void
test_csum_published(void **state)
{
	static const char uc_udp[] =	/* UDP header, BTH, payload and ICRC */
		"c000 12b7 002c aca2 2460 ffff 0000 00d3 00cf 1710"
		"4630818be28935d90e9a95505401be885e500000 78f353f3";
	uint8_t d[64], ph[40];
	size_t n;

	(void)state;
	check_published("4500 0073 0000 4000 4011 b861 c0a8 0001 c0a8 00c7", 10, 0xb861);
	check_published("4500 0030 4422 4000 8006 442e 8c7c 19ac ae24 1e2b", 10, 0x442e);
	check_published("45c2 003c 718c 4000 4011 9161 0a00 1101 0a00 1201", 10, 0x9161);
	check_published("4501 0040 0478 4000 4011 b4d5 c0a8 0007 c0a8 0007", 10, 0xb4d5);
	/* IPv4 pseudo-header: addresses, zero, protocol 17, UDP length */
	n = tf_unhex(d, sizeof(d), uc_udp);
	assert_int_equal(n, 44);
	assert_int_equal(tf_unhex(ph, sizeof(ph), "c0a80007 c0a80007 0011 002c"), 12);
	assert_int_equal(psb_csum_partial(d, n, psb_csum_partial(ph, 12, 0)), 0xffff);
	d[6] = d[7] = 0;
	assert_int_equal((uint16_t)~psb_csum_partial(d, n, psb_csum_partial(ph, 12, 0)), 0xaca2);
	/* IPv6 pseudo-header: addresses, upper-layer length, zero, next header 17 */
	n = tf_unhex(d, sizeof(d), uc_udp);
	d[6] = 0xe7;
	d[7] = 0xc5;
	memcpy(d + n - 4, "\x3e\x5b\x74\x3b", 4);	/* its ICRC over IPv6 */
	assert_int_equal(tf_unhex(ph, sizeof(ph), "2022 0000 0000 0000 0000 0000 0000 1023"
				  "2023 0000 0000 0000 0000 0000 0000 1024 0000002c 00000011"), 40);
	assert_int_equal(psb_csum_partial(d, n, psb_csum_partial(ph, 40, 0)), 0xffff);
	d[6] = d[7] = 0;
	assert_int_equal((uint16_t)~psb_csum_partial(d, n, psb_csum_partial(ph, 40, 0)), 0xe7c5);
}

static void
test_csum(void **state)
{
	/* The worked example of RFC 1071 section 3. */
	static const uint8_t rfc[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
	static const uint8_t odd[] = { 0x12, 0x34, 0x56 };
	uint8_t ones[64];

	assert_int_equal(psb_csum_partial(rfc, sizeof(rfc), 0), 0xddf2);
	assert_int_equal(psb_csum_partial(rfc, sizeof(rfc), 1), 0xddf3);
	/* An odd trailing byte counts as the high byte of a zero-padded word. */
	assert_int_equal(psb_csum_partial(odd, sizeof(odd), 0), 0x1234 + 0x5600);
	assert_int_equal(psb_csum_partial(odd, 0, 0), 0);
	/* End-around carries fold back in. */
	memset(ones, 0xff, sizeof(ones));
	assert_int_equal(psb_csum_partial(ones, sizeof(ones), 0), 0xffff);
	assert_int_equal(psb_csum_partial(ones, 2, 0xffff), 0xffff);
	/* word by word, as RFC 1071 says it: any length, start and carried sum */
	{
		static uint8_t buf[1100];
		uint32_t x = 1, i, n, off, sum;
		uint64_t s;

		for (i = 0; i < sizeof(buf); i++) {
			x = x * 1103515245u + 12345u;
			buf[i] = (uint8_t)(x >> 16);
		}
		for (n = 0; n < 1090; n += n < 80 ? 1 : 37) {
			x = x * 1103515245u + 12345u;
			off = x % 8;
			sum = x >> (x % 16);
			s = sum;
			for (i = 0; i + 1 < n; i += 2)
				s += (uint32_t)buf[off + i] << 8 | buf[off + i + 1];
			if (n & 1)
				s += (uint32_t)buf[off + n - 1] << 8;
			while (s >> 16)
				s = (s & 0xffff) + (s >> 16);
			assert_int_equal(psb_csum_partial(buf + off, n, sum), s);
		}
	}
}

static void
assert_rec_equal(const struct psb_rec *a, const struct psb_rec *b)
{
	assert_int_equal(a->type, b->type);
	assert_int_equal(a->status, b->status);
	assert_int_equal(a->len, b->len);
	assert_int_equal(a->req_id, b->req_id);
	assert_int_equal(a->round, b->round);
	assert_int_equal(a->aux, b->aux);
	assert_true(a->key == b->key);
}

/* Record: every field at its documented big-endian byte position. */
static void
test_rec_layout(void **state)
{
	static const uint8_t want[PSB_REC_HLEN] = {
		0x83,					/* 0 type */
		0x09,					/* 1 status */
		0x01, 0x2c,				/* 2 len (300) */
		0x89, 0xab, 0xcd, 0xef,			/* 4 req_id */
		0x01, 0x02, 0x03, 0x04,			/* 8 round */
		0xca, 0xfe, 0xf0, 0x0d,			/* 12 aux */
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,	/* 16 key */
	};
	const struct psb_rec r = {
		.type = 0x83, .status = 0x09, .len = 300, .req_id = 0x89abcdef,
		.round = 0x01020304, .aux = 0xcafef00d, .key = 0x1122334455667788ull,
	};
	uint8_t out[PSB_REC_HLEN + 300 + 2];
	struct psb_rec d;

	/* The guard bytes catch a write past the 24 record header bytes. */
	memset(out, 0xa5, sizeof(out));
	psb_rec_encode(out, &r);
	assert_memory_equal(out, want, PSB_REC_HLEN);
	assert_int_equal(out[PSB_REC_HLEN], 0xa5);
	assert_int_equal(out[PSB_REC_HLEN + 1], 0xa5);

	/* Decode reads the header back and counts the value: 24 + 300 bytes. */
	memset(&d, 0, sizeof(d));
	assert_int_equal(psb_rec_decode(&d, out, PSB_REC_HLEN + 300), PSB_REC_HLEN + 300);
	assert_rec_equal(&d, &r);
	/* Bytes after the record belong to the next one: not counted. */
	memset(&d, 0, sizeof(d));
	assert_int_equal(psb_rec_decode(&d, out, sizeof(out)), PSB_REC_HLEN + 300);
	assert_rec_equal(&d, &r);
}

/* Record: each field alone owns exactly its bytes. */
static void
test_rec_field_isolation(void **state)
{
	static const struct {
		const char *name;
		unsigned int off;
		unsigned int size;
	} fields[] = {
		{ "type", 0, 1 }, { "status", 1, 1 }, { "len", 2, 2 }, { "req_id", 4, 4 },
		{ "round", 8, 4 }, { "aux", 12, 4 }, { "key", 16, 8 },
	};
	/* Room for the largest len a record can carry, so decode accepts every case. */
	static uint8_t out[PSB_REC_HLEN + 0xfffc];
	unsigned int i, b;

	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		struct psb_rec r, d;

		memset(&r, 0, sizeof(r));
		switch (i) {
		case 0: r.type = UINT8_MAX; break;
		case 1: r.status = UINT8_MAX; break;
		case 2: r.len = UINT16_MAX; break;
		case 3: r.req_id = UINT32_MAX; break;
		case 4: r.round = UINT32_MAX; break;
		case 5: r.aux = UINT32_MAX; break;
		case 6: r.key = UINT64_MAX; break;
		}
		psb_rec_encode(out, &r);
		for (b = 0; b < PSB_REC_HLEN; b++) {
			int inside = b >= fields[i].off && b < fields[i].off + fields[i].size;

			if (out[b] != (inside ? 0xff : 0x00))
				fail_msg("field %s: byte %u is 0x%02x", fields[i].name, b, out[b]);
		}
		if (i == 2) {
			/* 0xffff is not a multiple of 4; the largest valid len is 0xfffc. */
			assert_int_equal(psb_rec_decode(&d, out, sizeof(out)), -EINVAL);
			r.len = 0xfffc;
			psb_rec_encode(out, &r);
		}
		memset(&d, 0xee, sizeof(d));
		assert_int_equal(psb_rec_decode(&d, out, sizeof(out)), PSB_REC_HLEN + r.len);
		assert_rec_equal(&d, &r);
	}
}

/* Record: every way of being cut short is refused, at every length. */
static void
test_rec_decode_short(void **state)
{
	static const uint16_t lens[] = { 0, 4, 8, 300, 0xfffc };
	static uint8_t buf[PSB_REC_HLEN + 0xfffc + 8];
	unsigned int i;
	size_t avail;

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		const struct psb_rec r = {
			.type = PSB_MSG_PUSH, .len = lens[i], .req_id = 7, .key = 9,
		};
		size_t need = PSB_REC_HLEN + lens[i];
		struct psb_rec d;

		memset(buf, 0x5a, sizeof(buf));
		psb_rec_encode(buf, &r);
		/* header cut short */
		for (avail = 0; avail < PSB_REC_HLEN; avail++)
			if (psb_rec_decode(&d, buf, avail) != -EINVAL)
				fail_msg("len %u: avail %zu accepted", lens[i], avail);
		/* value cut short: every length for small values, the edges for the largest */
		for (avail = PSB_REC_HLEN; avail < need; avail++) {
			if (lens[i] > 300 && avail > PSB_REC_HLEN + 16 && avail + 16 < need)
				continue;
			if (psb_rec_decode(&d, buf, avail) != -EINVAL)
				fail_msg("len %u: avail %zu accepted", lens[i], avail);
		}
		/* complete, and with trailing bytes */
		assert_int_equal(psb_rec_decode(&d, buf, need), (int)need);
		assert_int_equal(psb_rec_decode(&d, buf, need + 1), (int)need);
		assert_int_equal(psb_rec_decode(&d, buf, need + 8), (int)need);
		assert_int_equal(d.len, lens[i]);
	}
}

/* Record: a length that is not a multiple of 4 is refused, whatever room follows. */
static void
test_rec_decode_bad_len(void **state)
{
	static uint8_t buf[PSB_REC_HLEN + 0x10000];
	static const uint16_t bad[] = { 1, 2, 3, 5, 6, 7, 9, 301, 302, 303, 0xfffd, 0xfffe, 0xffff };
	unsigned int i;
	uint16_t l;

	memset(buf, 0, sizeof(buf));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct psb_rec r = { .type = PSB_MSG_PUSH, .len = bad[i] };
		struct psb_rec d;

		psb_rec_encode(buf, &r);
		if (psb_rec_decode(&d, buf, sizeof(buf)) != -EINVAL)
			fail_msg("len %u accepted", bad[i]);
	}
	/* every length below 64: exactly the multiples of 4 pass */
	for (l = 0; l < 64; l++) {
		struct psb_rec r = { .type = PSB_MSG_PULL_RESP, .len = l };
		struct psb_rec d;

		psb_rec_encode(buf, &r);
		assert_int_equal(psb_rec_decode(&d, buf, sizeof(buf)),
			(l & 3) == 0 ? PSB_REC_HLEN + l : -EINVAL);
	}
}

/* Records of a BATCH message: appended into payload at *off, value bytes follow. */
static void
put_rec(uint8_t *payload, size_t *off, const struct psb_rec *r, uint32_t seed)
{
	psb_rec_encode(payload + *off, r);
	fill_pattern(payload + *off + PSB_REC_HLEN, r->len, seed);
	*off += PSB_REC_HLEN + r->len;
}

/* A BATCH / BATCH_RESP is one message: total_len = seg_len = seg_size = its bytes. */
static void
test_batch_frame(void **state)
{
	static const struct psb_rec req[] = {
		{ .type = PSB_MSG_PUSH, .len = 8, .req_id = 0x1001, .round = 3, .key = 100 },
		{ .type = PSB_MSG_PULL, .len = 0, .req_id = 0x2002, .round = 4, .key = 200 },
		{ .type = PSB_MSG_PUSHPULL, .len = 16, .req_id = 0x3003, .round = 5,
			.key = 0xfedcba9876543210ull },
	};
	static const struct psb_rec resp[] = {
		{ .type = PSB_MSG_PUSH_ACK, .len = 0, .req_id = 0x1001, .round = 4, .key = 100 },
		{ .type = PSB_MSG_PULL_RESP, .len = 12, .req_id = 0x2002, .round = 4, .key = 200 },
		{ .type = PSB_MSG_ERROR, .status = PSB_ST_NO_KEY, .len = 0, .req_id = 0x3003,
			.aux = 77, .key = 0xfedcba9876543210ull },
	};
	static uint8_t payload[512];
	unsigned int pass;

	for (pass = 0; pass < 2; pass++) {
		const struct psb_rec *recs = pass == 0 ? req : resp;
		unsigned int nrec = 3, i;
		struct psb_hdr h;
		struct psb_frame f;
		size_t off = 0, len;

		memset(payload, 0, sizeof(payload));
		for (i = 0; i < nrec; i++)
			put_rec(payload, &off, &recs[i], i + 1);
		assert_int_equal(off % 4, 0);
		h = tf_hdr(pass == 0 ? PSB_MSG_BATCH : PSB_MSG_BATCH_RESP, PSB_F_SYNC, 3, 42, 0,
			recs[0].key);
		h.aux = 0xe90c;
		tf_whole(&h, (uint32_t)off);
		len = pass == 0 ?
			psb_frame_build(frame, &tf_worker, &tf_server, &h, payload, (uint16_t)off) :
			psb_frame_build(frame, &tf_server, &tf_worker, &h, payload, (uint16_t)off);
		assert_int_equal(len, PSB_FRAME_HLEN + off);
		assert_int_equal(parse_as(frame, len, pass == 0 ? &tf_server : &tf_worker, &f),
			PSB_FRAME_PSB);
		assert_hdr_equal(&f.hdr, &h);
		assert_int_equal(f.payload_len, off);
		assert_memory_equal(f.payload, payload, off);

		/* the records read back in order and use up the payload exactly */
		off = 0;
		for (i = 0; i < nrec; i++) {
			struct psb_rec d;
			int used = psb_rec_decode(&d, f.payload + off, f.payload_len - off);

			assert_int_equal(used, PSB_REC_HLEN + recs[i].len);
			assert_rec_equal(&d, &recs[i]);
			fill_pattern(value, d.len, i + 1);
			assert_memory_equal(f.payload + off + PSB_REC_HLEN, value, d.len);
			off += (size_t)used;
		}
		assert_int_equal(off, f.payload_len);

		/* a BATCH cut by the segment fields is a bad segment like any other */
		h.seg_size = (uint16_t)(off - 4);
		len = psb_frame_build(frame, &tf_worker, &tf_server, &h, payload,
			(uint16_t)off);
		assert_int_equal(parse_as(frame, len, &tf_server, &f), -PSB_DROP_SEGMENT);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hdr_layout),
		cmocka_unit_test(test_hdr_field_isolation),
		cmocka_unit_test(test_hdr_init),
		cmocka_unit_test(test_frame_roundtrip),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_short_udp_payload),
		cmocka_unit_test(test_ethertype),
		cmocka_unit_test(test_vlan_ipv4),
		cmocka_unit_test(test_ip_header_errors),
		cmocka_unit_test(test_ip_options),
		cmocka_unit_test(test_ip_checksum),
		cmocka_unit_test(test_ip_fragments),
		cmocka_unit_test(test_not_mine),
		cmocka_unit_test(test_ip_protocol),
		cmocka_unit_test(test_udp_length),
		cmocka_unit_test(test_udp_port),
		cmocka_unit_test(test_udp_range),
		cmocka_unit_test(test_bad_magic),
		cmocka_unit_test(test_segment_check),
		cmocka_unit_test(test_segment_frames),
		cmocka_unit_test(test_foreign_version),
		cmocka_unit_test(test_ethernet_padding),
		cmocka_unit_test(test_oversize),
		cmocka_unit_test(test_arp),
		cmocka_unit_test(test_icmp_echo),
		cmocka_unit_test(test_icmp_drops),
		cmocka_unit_test(test_echo_answerable),
		cmocka_unit_test(test_parse_ip),
		cmocka_unit_test(test_parse_mac),
		cmocka_unit_test(test_ip_str),
		cmocka_unit_test(test_seg_sizes),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_csum),
		cmocka_unit_test(test_csum_published),
		cmocka_unit_test(test_rec_layout),
		cmocka_unit_test(test_rec_field_isolation),
		cmocka_unit_test(test_rec_decode_short),
		cmocka_unit_test(test_rec_decode_bad_len),
		cmocka_unit_test(test_batch_frame),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
