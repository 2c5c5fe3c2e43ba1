/* RoCE frames: recognition, parsing, and frames made to order (the ICRC: psb_roce_icrc.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "psb_proto.h"
#include "psb_roce.h"

const char *const psb_roce_kind_names[PSB_ROCE_KINDS] = {
	[PSB_ROCE_NONE] = "none", [PSB_ROCE_V1] = "v1",
	[PSB_ROCE_V2_IP4] = "v2_ip4", [PSB_ROCE_V2_IP6] = "v2_ip6",
};

const char *const psb_roce_class_names[PSB_ROCE_CLASSES] = {
	[PSB_ROCE_SEND] = "send", [PSB_ROCE_WRITE] = "write", [PSB_ROCE_READ] = "read",
	[PSB_ROCE_ACK] = "ack", [PSB_ROCE_ATOMIC] = "atomic", [PSB_ROCE_CNP] = "cnp",
	[PSB_ROCE_OTHER] = "other",
};

const char *const psb_roce_nak_names[PSB_ROCE_NAKS] = {
	[PSB_ROCE_NAK_RNR] = "rnr", [PSB_ROCE_NAK_SEQ] = "psn_seq",
	[PSB_ROCE_NAK_INV_REQ] = "inv_req", [PSB_ROCE_NAK_ACCESS] = "rem_access",
	[PSB_ROCE_NAK_OP] = "rem_op", [PSB_ROCE_NAK_OTHER] = "other",
};

/*
 * The operations of RC, UC and RD by the low 5 bits of the opcode (UD has only the two
 * SENDs). Which transport may use which is in op_valid.
 */
static const struct {
	const char *name;
	uint16_t hdrs;
	uint8_t cls;
} ops[32] = {
	[0x00] = { "SEND_FIRST", 0, PSB_ROCE_SEND },
	[0x01] = { "SEND_MIDDLE", 0, PSB_ROCE_SEND },
	[0x02] = { "SEND_LAST", 0, PSB_ROCE_SEND },
	[0x03] = { "SEND_LAST_IMM", PSB_ROCE_H_IMM, PSB_ROCE_SEND },
	[0x04] = { "SEND_ONLY", 0, PSB_ROCE_SEND },
	[0x05] = { "SEND_ONLY_IMM", PSB_ROCE_H_IMM, PSB_ROCE_SEND },
	[0x06] = { "WRITE_FIRST", PSB_ROCE_H_RETH, PSB_ROCE_WRITE },
	[0x07] = { "WRITE_MIDDLE", 0, PSB_ROCE_WRITE },
	[0x08] = { "WRITE_LAST", 0, PSB_ROCE_WRITE },
	[0x09] = { "WRITE_LAST_IMM", PSB_ROCE_H_IMM, PSB_ROCE_WRITE },
	[0x0a] = { "WRITE_ONLY", PSB_ROCE_H_RETH, PSB_ROCE_WRITE },
	[0x0b] = { "WRITE_ONLY_IMM", PSB_ROCE_H_RETH | PSB_ROCE_H_IMM, PSB_ROCE_WRITE },
	[0x0c] = { "READ_REQUEST", PSB_ROCE_H_RETH, PSB_ROCE_READ },
	[0x0d] = { "READ_RESPONSE_FIRST", PSB_ROCE_H_AETH, PSB_ROCE_READ },
	[0x0e] = { "READ_RESPONSE_MIDDLE", 0, PSB_ROCE_READ },
	[0x0f] = { "READ_RESPONSE_LAST", PSB_ROCE_H_AETH, PSB_ROCE_READ },
	[0x10] = { "READ_RESPONSE_ONLY", PSB_ROCE_H_AETH, PSB_ROCE_READ },
	[0x11] = { "ACKNOWLEDGE", PSB_ROCE_H_AETH, PSB_ROCE_ACK },
	[0x12] = { "ATOMIC_ACKNOWLEDGE", PSB_ROCE_H_AETH | PSB_ROCE_H_ATOMIC_ACK,
		   PSB_ROCE_ATOMIC },
	[0x13] = { "COMPARE_SWAP", PSB_ROCE_H_ATOMIC, PSB_ROCE_ATOMIC },
	[0x14] = { "FETCH_ADD", PSB_ROCE_H_ATOMIC, PSB_ROCE_ATOMIC },
	[0x16] = { "SEND_LAST_INV", PSB_ROCE_H_IETH, PSB_ROCE_SEND },
	[0x17] = { "SEND_ONLY_INV", PSB_ROCE_H_IETH, PSB_ROCE_SEND },
};

static const char *const transport_names[8] = { "RC", "UC", "RD", "UD" };

static int
op_valid(uint8_t opcode)
{
	uint8_t op = opcode & 0x1f;

	switch (opcode >> 5) {
	case 0:		/* RC */
		return op <= 0x14 || op == 0x16 || op == 0x17;
	case 1:		/* UC */
		return op <= 0x0b;
	case 2:		/* RD: no invalidates */
		return op <= 0x14;
	case 3:		/* UD */
		return op == 0x04 || op == 0x05;
	default:
		return opcode == PSB_ROCE_OP_CNP;
	}
}

uint16_t
psb_roce_opcode_hdrs(uint8_t opcode)
{
	uint16_t h;

	if (!op_valid(opcode))
		return PSB_ROCE_H_UNKNOWN;
	if (opcode == PSB_ROCE_OP_CNP)
		return PSB_ROCE_H_CNP_PAD;
	h = ops[opcode & 0x1f].hdrs;
	if ((opcode >> 5) == 2)
		h |= PSB_ROCE_H_RDETH | PSB_ROCE_H_DETH;
	else if ((opcode >> 5) == 3)
		h |= PSB_ROCE_H_DETH;
	return h;
}

uint8_t
psb_roce_opcode_class(uint8_t opcode)
{
	if (!op_valid(opcode))
		return PSB_ROCE_OTHER;
	if (opcode == PSB_ROCE_OP_CNP)
		return PSB_ROCE_CNP;
	return ops[opcode & 0x1f].cls;
}

const char *
psb_roce_opcode_name(uint8_t opcode)
{
	static __thread char buf[40];

	if (!op_valid(opcode))
		return NULL;
	if (opcode == PSB_ROCE_OP_CNP)
		return "CNP";
	snprintf(buf, sizeof(buf), "%s_%s", transport_names[opcode >> 5], ops[opcode & 0x1f].name);
	return buf;
}

int
psb_roce_nak_of(uint8_t syndrome)
{
	switch (syndrome >> 5) {
	case 0:
		return -1;	/* ACK, the low bits a credit count */
	case 1:
		return PSB_ROCE_NAK_RNR;
	case 3:
		switch (syndrome & 0x1f) {
		case 0: return PSB_ROCE_NAK_SEQ;
		case 1: return PSB_ROCE_NAK_INV_REQ;
		case 2: return PSB_ROCE_NAK_ACCESS;
		case 3: return PSB_ROCE_NAK_OP;
		default: return PSB_ROCE_NAK_OTHER;
		}
	default:
		return PSB_ROCE_NAK_OTHER;	/* reserved codes */
	}
}

static size_t
hdrs_len(uint16_t h)
{
	return ((h & PSB_ROCE_H_RDETH) ? 4 : 0) + ((h & PSB_ROCE_H_DETH) ? 8 : 0) +
	       ((h & PSB_ROCE_H_RETH) ? 16 : 0) + ((h & PSB_ROCE_H_ATOMIC) ? 28 : 0) +
	       ((h & PSB_ROCE_H_AETH) ? 4 : 0) + ((h & PSB_ROCE_H_ATOMIC_ACK) ? 8 : 0) +
	       ((h & PSB_ROCE_H_IMM) ? 4 : 0) + ((h & PSB_ROCE_H_IETH) ? 4 : 0) +
	       ((h & PSB_ROCE_H_CNP_PAD) ? 16 : 0);
}

/*
 * What the parser needs of every opcode, from the functions above, made at start: a frame
 * is then one lookup, not a walk through them.
 */
static struct {
	uint16_t hdrs;
	uint8_t cls;
	uint8_t hlen;		/* bytes of the extension headers */
	uint8_t aeth;		/* offset of the AETH or RETH after the BTH */
} op_tab[256];

__attribute__((constructor)) static void
op_tab_init(void)
{
	unsigned int op;

	for (op = 0; op < 256; op++) {
		uint16_t h = psb_roce_opcode_hdrs((uint8_t)op);

		op_tab[op].hdrs = h;
		op_tab[op].cls = psb_roce_opcode_class((uint8_t)op);
		op_tab[op].hlen = (uint8_t)hdrs_len(h);
		op_tab[op].aeth = (uint8_t)(((h & PSB_ROCE_H_RDETH) ? 4 : 0) +
					    ((h & PSB_ROCE_H_DETH) ? 8 : 0));
	}
}

static uint16_t
rd16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

static uint32_t
rd24(const uint8_t *b)
{
	return (uint32_t)b[0] << 16 | (uint32_t)b[1] << 8 | b[2];
}

static uint32_t
rd32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/*
 * An IPv4 address as the packet carries it, in the ::ffff: form: written as two 8-byte
 * words, as the QP table's hash reads them (a read across narrower writes waits for them).
 */
static inline void
addr4_of(uint8_t a[16], const uint8_t *ip)
{
	uint64_t w[2];
	uint32_t raw;

	memcpy(&raw, ip, 4);
	w[0] = 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	w[1] = 0xffff0000ull | (uint64_t)raw << 32;
#else
	w[1] = 0xffffull << 32 | raw;
#endif
	memcpy(a, w, 16);
}

void
psb_roce_addr4(uint8_t a[16], uint32_t ip)
{
	uint32_t be = htonl(ip);

	addr4_of(a, (const uint8_t *)&be);
}

static int
is_v4mapped(const uint8_t a[16])
{
	static const uint8_t pre[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(a, pre, 12) == 0;
}

void
psb_roce_addr_str(const uint8_t a[16], char *out, size_t outlen)
{
	if (is_v4mapped(a)) {
		snprintf(out, outlen, "%u.%u.%u.%u", a[12], a[13], a[14], a[15]);
		return;
	}
	if (inet_ntop(AF_INET6, a, out, outlen) == NULL && outlen > 0)
		out[0] = '\0';
}

/* The BTH and what follows it, from bth to end (the byte after the ICRC). */
static int
parse_iba(const uint8_t *frame, size_t bth, size_t end, struct psb_roce_pkt *p)
{
	const uint8_t *b = frame + bth;
	size_t hl, aeth;

	if (end < bth + PSB_ROCE_BTH_LEN + PSB_ROCE_ICRC_LEN)
		return -EBADMSG;
	p->bth_off = (uint16_t)bth;
	p->end = (uint32_t)end;
	p->opcode = b[0];
	p->pad = (b[1] >> 4) & 3;
	p->fecn = b[4] >> 7;
	p->becn = (b[4] >> 6) & 1;
	p->dqpn = rd24(b + 5);
	p->ackreq = b[8] >> 7;
	p->psn = rd24(b + 9);
	p->cls = op_tab[p->opcode].cls;
	p->hdrs = op_tab[p->opcode].hdrs;
	p->has_aeth = 0;
	p->syndrome = 0;
	p->dma_len = 0;
	p->payload = 0;
	if (p->hdrs & PSB_ROCE_H_UNKNOWN)
		return 1;	/* counted as "other"; its length is its own business */
	hl = op_tab[p->opcode].hlen;
	if (end < bth + PSB_ROCE_BTH_LEN + hl + p->pad + PSB_ROCE_ICRC_LEN)
		return -EBADMSG;
	p->payload = (uint32_t)(end - bth - PSB_ROCE_BTH_LEN - hl - p->pad - PSB_ROCE_ICRC_LEN);
	aeth = bth + PSB_ROCE_BTH_LEN + op_tab[p->opcode].aeth;
	if (p->hdrs & PSB_ROCE_H_RETH)
		p->dma_len = rd32(frame + aeth + 12);
	if (p->hdrs & PSB_ROCE_H_AETH) {
		p->has_aeth = 1;
		p->syndrome = frame[aeth];
	}
	return 1;
}

int
psb_roce_parse(const uint8_t *frame, size_t len, struct psb_roce_pkt *p)
{
	size_t off = 12, net, end;
	uint16_t type;
	int tags = 0;

	if (len < 14)
		return 0;
	type = rd16(frame + off);
	/* up to two VLAN tags (802.1Q, 802.1ad): PFC priorities ride in them */
	while ((type == 0x8100 || type == 0x88a8) && tags < 2) {
		if (len < off + 6)
			return 0;
		off += 4;
		type = rd16(frame + off);
		tags++;
	}
	net = off + 2;
	memset(p, 0, offsetof(struct psb_roce_pkt, src));
	p->net_off = (uint16_t)net;
	if (type == PSB_ROCE_ETHERTYPE) {
		const uint8_t *g = frame + net;

		p->kind = PSB_ROCE_V1;
		/* a GRH: IP version 6, next header 0x1B (IBA transport), its payload length */
		if (len < net + PSB_ROCE_GRH_LEN || (g[0] >> 4) != 6 || g[6] != 0x1b)
			return -EBADMSG;
		end = net + PSB_ROCE_GRH_LEN + rd16(g + 4);
		if (end > len)
			return -EBADMSG;
		p->ecn = (uint8_t)((rd16(g) >> 4) & 3);
		memcpy(p->src, g + 8, 16);
		memcpy(p->dst, g + 24, 16);
		return parse_iba(frame, net + PSB_ROCE_GRH_LEN, end, p);
	}
	if (type == 0x0800) {
		const uint8_t *ip = frame + net, *u;
		size_t ihl;

		if (len < net + 20 || (ip[0] >> 4) != 4 || ip[9] != 17)
			return 0;
		ihl = (size_t)(ip[0] & 0xf) * 4;
		if (ihl < 20 || len < net + ihl + 8)
			return 0;
		u = ip + ihl;
		if (rd16(u + 2) != PSB_ROCE_UDP_PORT)
			return 0;
		/* from here on it says it is RoCE */
		p->kind = PSB_ROCE_V2_IP4;
		if ((rd16(ip + 6) & 0x3fff) != 0)	/* a fragment: no BTH of its own */
			return -EBADMSG;
		end = net + rd16(ip + 2);
		if (end > len || end < net + ihl + 8 || rd16(u + 4) != end - net - ihl)
			return -EBADMSG;
		p->ecn = ip[1] & 3;
		addr4_of(p->src, ip + 12);
		addr4_of(p->dst, ip + 16);
		return parse_iba(frame, net + ihl + 8, end, p);
	}
	if (type == 0x86dd) {
		const uint8_t *ip = frame + net, *u = ip + 40;

		/* extension headers are not followed: such a datagram passes on as not RoCE */
		if (len < net + 48 || (ip[0] >> 4) != 6 || ip[6] != 17 ||
		    rd16(u + 2) != PSB_ROCE_UDP_PORT)
			return 0;
		p->kind = PSB_ROCE_V2_IP6;
		end = net + 40 + rd16(ip + 4);
		if (end > len || end < net + 48 || rd16(u + 4) != end - net - 40)
			return -EBADMSG;
		p->ecn = (uint8_t)((rd16(ip) >> 4) & 3);
		memcpy(p->src, ip + 8, 16);
		memcpy(p->dst, ip + 24, 16);
		return parse_iba(frame, net + 48, end, p);
	}
	return 0;
}

/* Frames made to order. */

static void
wr16(uint8_t *b, uint32_t v)
{
	b[0] = v >> 8;
	b[1] = v;
}

static void
wr24(uint8_t *b, uint32_t v)
{
	b[0] = v >> 16;
	b[1] = v >> 8;
	b[2] = v;
}

static void
wr32(uint8_t *b, uint32_t v)
{
	wr16(b, v >> 16);
	wr16(b + 2, v);
}

static void
put_ext(uint8_t *b, const struct psb_roce_spec *s, uint16_t h)
{
	if (h & PSB_ROCE_H_RDETH) {
		wr32(b, 0);
		b += 4;
	}
	if (h & PSB_ROCE_H_DETH) {
		wr32(b, s->qkey);
		wr32(b + 4, s->sqpn & 0xffffff);
		b += 8;
	}
	if (h & PSB_ROCE_H_RETH) {
		wr32(b, (uint32_t)(s->va >> 32));
		wr32(b + 4, (uint32_t)s->va);
		wr32(b + 8, s->rkey);
		wr32(b + 12, s->dma_len);
		b += 16;
	}
	if (h & PSB_ROCE_H_ATOMIC) {
		wr32(b, (uint32_t)(s->va >> 32));
		wr32(b + 4, (uint32_t)s->va);
		wr32(b + 8, s->rkey);
		wr32(b + 12, 0);
		wr32(b + 16, s->imm);		/* swap or add */
		wr32(b + 20, 0);
		wr32(b + 24, s->seed);		/* compare */
		b += 28;
	}
	if (h & PSB_ROCE_H_AETH) {
		b[0] = s->syndrome;
		wr24(b + 1, s->msn);
		b += 4;
	}
	if (h & PSB_ROCE_H_ATOMIC_ACK) {
		wr32(b, 0);
		wr32(b + 4, s->seed);
		b += 8;
	}
	if (h & (PSB_ROCE_H_IMM | PSB_ROCE_H_IETH)) {
		wr32(b, s->imm);
		b += 4;
	}
	if (h & PSB_ROCE_H_CNP_PAD)
		memset(b, 0, 16);
}

size_t
psb_roce_build(uint8_t *out, size_t cap, const struct psb_roce_spec *s)
{
	uint16_t h = psb_roce_opcode_hdrs(s->opcode);
	size_t off = 12, net, l4, bth, iba, len, i;
	uint32_t pad = (4 - (s->payload & 3)) & 3, x;
	struct psb_roce_pkt p;
	uint8_t *b;

	if (h & PSB_ROCE_H_UNKNOWN)
		return 0;
	iba = PSB_ROCE_BTH_LEN + hdrs_len(h) + (size_t)s->payload + pad + PSB_ROCE_ICRC_LEN;
	net = 14 + (s->vlan != 0 ? 4 : 0);
	switch (s->kind) {
	case PSB_ROCE_V1:
		l4 = net + PSB_ROCE_GRH_LEN;
		bth = l4;
		break;
	case PSB_ROCE_V2_IP4:
		l4 = net + 20;
		bth = l4 + 8;
		break;
	case PSB_ROCE_V2_IP6:
		l4 = net + 40;
		bth = l4 + 8;
		break;
	default:
		return 0;
	}
	len = bth + iba;
	if (len > cap || len - net > 0xffff)
		return 0;
	memcpy(out, s->dst_mac, 6);
	memcpy(out + 6, s->src_mac, 6);
	if (s->vlan != 0) {
		wr16(out + 12, 0x8100);
		wr16(out + 14, s->vlan);
		off = 16;
	}
	b = out + net;
	if (s->kind == PSB_ROCE_V2_IP4) {
		wr16(out + off, 0x0800);
		b[0] = 0x45;
		b[1] = s->tclass;
		wr16(b + 2, (uint32_t)(len - net));
		wr16(b + 4, s->psn & 0xffff);	/* an id that changes */
		wr16(b + 6, 0x4000);		/* DF */
		b[8] = s->ttl;
		b[9] = 17;
		wr16(b + 10, 0);
		memcpy(b + 12, s->src + 12, 4);
		memcpy(b + 16, s->dst + 12, 4);
		wr16(b + 10, (uint16_t)~psb_csum_partial(b, 20, 0));
	} else {
		wr16(out + off, s->kind == PSB_ROCE_V1 ? PSB_ROCE_ETHERTYPE : 0x86dd);
		wr32(b, 6u << 28 | (uint32_t)s->tclass << 20 | (s->flow & 0xfffff));
		wr16(b + 4, (uint32_t)(len - l4));
		b[6] = s->kind == PSB_ROCE_V1 ? 0x1b : 17;
		b[7] = s->ttl;
		memcpy(b + 8, s->src, 16);
		memcpy(b + 24, s->dst, 16);
	}
	if (s->kind != PSB_ROCE_V1) {
		b = out + l4;
		wr16(b, s->sport);
		wr16(b + 2, PSB_ROCE_UDP_PORT);
		wr16(b + 4, (uint32_t)(len - l4));
		wr16(b + 6, 0);
	}
	b = out + bth;
	b[0] = s->opcode;
	b[1] = (uint8_t)(pad << 4);		/* SE 0, M 0, TVer 0 */
	wr16(b + 2, s->pkey != 0 ? s->pkey : 0xffff);
	b[4] = (uint8_t)((s->fecn ? 0x80 : 0) | (s->becn ? 0x40 : 0));
	wr24(b + 5, s->dqpn);
	b[8] = s->ackreq ? 0x80 : 0;
	wr24(b + 9, s->psn);
	put_ext(b + PSB_ROCE_BTH_LEN, s, h);
	b += PSB_ROCE_BTH_LEN + hdrs_len(h);
	for (i = 0, x = s->seed * 2654435761u + 1; i < s->payload; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		b[i] = (uint8_t)x;
	}
	memset(b + s->payload, 0, pad);
	if (psb_roce_parse(out, len, &p) != 1)
		return 0;
	x = psb_roce_icrc_ref(out, &p);
	if (s->bad_icrc)
		x = ~x;
	b = out + len - PSB_ROCE_ICRC_LEN;
	b[0] = x;
	b[1] = x >> 8;
	b[2] = x >> 16;
	b[3] = x >> 24;
	if (s->kind == PSB_ROCE_V2_IP6) {
		/* the ICRC masks the UDP checksum, so it comes last: pseudo-header, datagram */
		uint16_t sum = psb_csum_partial(out + net + 8, 32, (uint32_t)(len - l4) + 17);

		x = (uint16_t)~psb_csum_partial(out + l4, len - l4, sum);
		wr16(out + l4 + 6, x == 0 ? 0xffff : x);
	}
	return len;
}
