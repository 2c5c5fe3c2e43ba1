/*
 * psb-rocegen: pcap files of RoCE traffic as RDMA jobs make it, with what psb must count.
 *
 *   psb-rocegen --wire WIRE.pcap --host HOST.pcap --expect EXPECT.json [options]
 *
 * WIRE.pcap holds what arrives from the network for the host's RDMA jobs and its kernel:
 * RC SEND, WRITE, READ (requests and responses), ACKs and every kind of NAK, atomics and
 * their ACK, UD sends, CNPs and ECN-CE marks, in RoCEv2 over IPv4 and IPv6 (with and
 * without a VLAN tag) and RoCEv1; a lost packet and a retransmission here and there; frames
 * with their ICRC corrupted; RoCE frames that cannot be (malformed); and the rest of what a
 * host hears: ARP, ICMP, IPv6 neighbour discovery, TCP, UDP, LLDP. HOST.pcap is what the
 * host sends back. EXPECT.json says, from the scenario itself (not from psb's accounting),
 * how many frames go each way and what each queue pair's counters must be, and the totals.
 * --churn N adds N queue pairs of one packet each at the end of WIRE.pcap (to fill and
 * overflow a table); --repeat N plays the scenario N times (PSNs carry on); --max-payload
 * caps the RoCE payloads (frames for a smaller MTU).
 * Files are written whole or not at all.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "psb_cli.h"
#include "psb_roce.h"

#define MAX_QPS		4096
#define FRAME_MAX	9216

/* What the scenario says a frame is, to be counted so. */
struct intent {
	int cls;		/* enum psb_roce_class */
	int nak;		/* enum psb_roce_nak, -1 none */
	unsigned int missing;	/* PSNs this frame shows lost */
	unsigned int dup;	/* 1: a retransmission */
};

struct qp_expect {
	uint8_t kind;
	uint32_t dqpn;
	uint8_t src[16], dst[16];
	uint64_t pkts, bytes, ops[PSB_ROCE_CLASSES], naks[PSB_ROCE_NAKS];
	uint64_t missing, dup, ecn_ce, becn, icrc_bad;
};

struct side {
	pcap_dumper_t *d;
	char path[4096], tmp[4200];
	uint64_t frames, bytes;
};

static struct {
	uint32_t max_payload;		/* --max-payload: frames for a smaller MTU */
	pcap_t *dead;
	struct side wire, host;
	struct qp_expect qp[MAX_QPS];
	unsigned int nqp;
	uint64_t frames[PSB_ROCE_KINDS], bytes, malformed, icrc_bad, other;
	uint32_t usec;
} G;

static const uint8_t mac_host[6] = { 0x02, 0x18, 0, 0, 0, 0x02 };
static const uint8_t mac_peer[6] = { 0x02, 0x18, 0, 0, 0, 0x03 };
static uint8_t ip_host[16], ip_peer[16], ip6_host[16], ip6_peer[16], gid_host[16], gid_peer[16];

static void
side_open(struct side *s, const char *path)
{
	snprintf(s->path, sizeof(s->path), "%s", path);
	snprintf(s->tmp, sizeof(s->tmp), "%s.tmp", path);
	s->d = pcap_dump_open(G.dead, s->tmp);
	if (s->d == NULL)
		psb_die("%s: %s", s->tmp, pcap_geterr(G.dead));
}

static void
side_close(struct side *s)
{
	if (pcap_dump_flush(s->d) != 0)
		psb_die("%s: cannot write", s->tmp);
	pcap_dump_close(s->d);
	if (rename(s->tmp, s->path) != 0)
		psb_die("%s: %s", s->path, strerror(errno));
}

static void
put(struct side *s, const uint8_t *f, size_t len)
{
	struct pcap_pkthdr h;

	G.usec += 10;
	h.ts.tv_sec = 1700000000 + G.usec / 1000000;
	h.ts.tv_usec = G.usec % 1000000;
	h.caplen = h.len = (bpf_u_int32)len;
	pcap_dump((u_char *)s->d, &h, f);
	s->frames++;
	s->bytes += len;
}

static struct qp_expect *
qp_find(const struct psb_roce_spec *sp, int make)
{
	unsigned int i;

	for (i = 0; i < G.nqp; i++)
		if (G.qp[i].kind == sp->kind && G.qp[i].dqpn == sp->dqpn &&
		    memcmp(G.qp[i].src, sp->src, 16) == 0 && memcmp(G.qp[i].dst, sp->dst, 16) == 0)
			return &G.qp[i];
	if (!make)
		return NULL;
	if (G.nqp == MAX_QPS)
		psb_die("more than %d queue pairs", MAX_QPS);
	G.qp[G.nqp].kind = sp->kind;
	G.qp[G.nqp].dqpn = sp->dqpn;
	memcpy(G.qp[G.nqp].src, sp->src, 16);
	memcpy(G.qp[G.nqp].dst, sp->dst, 16);
	return &G.qp[G.nqp++];
}

/* A RoCE frame of the scenario, onto side s, and what it must count. */
static void
roce(struct side *s, const struct psb_roce_spec *spec_in, struct intent in)
{
	struct psb_roce_spec sp_capped = *spec_in, *sp = &sp_capped;
	uint8_t f[FRAME_MAX];
	struct qp_expect *q;
	size_t len;

	if (sp->payload > G.max_payload)
		sp->payload = G.max_payload;
	len = psb_roce_build(f, sizeof(f), sp);

	if (len == 0)
		psb_die("scenario: opcode 0x%02x does not make a frame", sp->opcode);
	put(s, f, len);
	G.frames[sp->kind]++;
	G.bytes += len;
	if (sp->bad_icrc) {
		/* counted on its QP only if the QP is known; never makes one */
		G.icrc_bad++;
		q = qp_find(sp, 0);
		if (q != NULL) {
			q->pkts++;
			q->bytes += len;
			q->icrc_bad++;
		}
		return;
	}
	q = qp_find(sp, 1);
	q->pkts++;
	q->bytes += len;
	q->ops[in.cls]++;
	if (in.nak >= 0)
		q->naks[in.nak]++;
	q->missing += in.missing;
	q->dup += in.dup;
	if ((sp->tclass & 3) == 3)
		q->ecn_ce++;
	q->becn += sp->becn;
}

#define IN(c)			((struct intent){ .cls = (c), .nak = -1 })
#define IN_NAK(n)		((struct intent){ .cls = PSB_ROCE_ACK, .nak = (n) })
#define IN_LOST(c, m)		((struct intent){ .cls = (c), .nak = -1, .missing = (m) })
#define IN_DUP(c)		((struct intent){ .cls = (c), .nak = -1, .dup = 1 })

static void
spec(struct psb_roce_spec *sp, uint8_t kind, int to_host, uint32_t dqpn)
{
	memset(sp, 0, sizeof(*sp));
	sp->kind = kind;
	memcpy(sp->src_mac, to_host ? mac_peer : mac_host, 6);
	memcpy(sp->dst_mac, to_host ? mac_host : mac_peer, 6);
	switch (kind) {
	case PSB_ROCE_V2_IP4:
		memcpy(sp->src, to_host ? ip_peer : ip_host, 16);
		memcpy(sp->dst, to_host ? ip_host : ip_peer, 16);
		break;
	case PSB_ROCE_V2_IP6:
		memcpy(sp->src, to_host ? ip6_peer : ip6_host, 16);
		memcpy(sp->dst, to_host ? ip6_host : ip6_peer, 16);
		break;
	default:
		memcpy(sp->src, to_host ? gid_peer : gid_host, 16);
		memcpy(sp->dst, to_host ? gid_host : gid_peer, 16);
	}
	sp->dqpn = dqpn;
	sp->sport = (uint16_t)(49152 + (dqpn & 0x3fff));
	sp->ttl = 64;
	sp->tclass = 0x02;		/* ECT(0), as DCQCN marks it */
	sp->pkey = 0xffff;
	sp->seed = dqpn;
}

/* Frames that are not RoCE: passed on, never counted as RoCE. */
static void
other_frames(struct side *s, int to_host, uint32_t n)
{
	uint8_t f[128];
	const uint8_t *me = to_host ? mac_peer : mac_host, *them = to_host ? mac_host : mac_peer;
	unsigned int i;

	for (i = 0; i < n; i++) {
		memset(f, 0, sizeof(f));
		memcpy(f + 6, me, 6);
		switch (i % 6) {
		case 0:		/* ARP request for the other side, broadcast */
			memset(f, 0xff, 6);
			f[12] = 0x08, f[13] = 0x06;
			f[14] = 0, f[15] = 1, f[16] = 8, f[17] = 0, f[18] = 6, f[19] = 4;
			f[21] = 1;
			memcpy(f + 22, me, 6);
			memcpy(f + 28, (to_host ? ip_peer : ip_host) + 12, 4);
			memcpy(f + 38, (to_host ? ip_host : ip_peer) + 12, 4);
			put(s, f, 60);
			break;
		case 1:		/* ICMP echo request */
		case 3:		/* TCP SYN to port 22 */
		case 4:		/* UDP to another port */
			memcpy(f, them, 6);
			f[12] = 0x08, f[13] = 0x00;
			f[14] = 0x45, f[17] = 60, f[19] = (uint8_t)i, f[22] = 64;
			f[23] = i % 6 == 1 ? 1 : i % 6 == 3 ? 6 : 17;
			memcpy(f + 26, (to_host ? ip_peer : ip_host) + 12, 4);
			memcpy(f + 30, (to_host ? ip_host : ip_peer) + 12, 4);
			if (i % 6 == 1)
				f[34] = 8;
			else if (i % 6 == 3)
				f[36] = 0, f[37] = 22, f[46] = 0x50, f[47] = 0x02;
			else
				f[36] = 0x12, f[37] = 0xb8, f[39] = 40;	/* port 4792 */
			put(s, f, 74);
			break;
		case 2:		/* IPv6 neighbour solicitation */
			f[0] = 0x33, f[1] = 0x33, f[2] = 0xff, f[5] = 2;
			f[12] = 0x86, f[13] = 0xdd;
			f[14] = 0x60, f[19] = 32, f[20] = 58, f[21] = 255;
			memcpy(f + 22, to_host ? ip6_peer : ip6_host, 16);
			f[38] = 0xff, f[39] = 0x02, f[49] = 1, f[50] = 0xff, f[53] = 2;
			f[54] = 135;
			memcpy(f + 62, to_host ? ip6_host : ip6_peer, 16);
			put(s, f, 86);
			break;
		default:	/* LLDP */
			f[0] = 0x01, f[1] = 0x80, f[2] = 0xc2, f[5] = 0x0e;
			f[12] = 0x88, f[13] = 0xcc;
			put(s, f, 64);
			break;
		}
		G.other++;
	}
}

/* RoCE frames that cannot be: counted as malformed, passed on. */
static void
malformed(struct side *s)
{
	uint8_t f[FRAME_MAX];
	struct psb_roce_spec sp;
	size_t len;

	spec(&sp, PSB_ROCE_V2_IP4, 1, 0x77);
	sp.opcode = 0x0a;		/* WRITE_ONLY */
	sp.payload = 64;
	len = psb_roce_build(f, sizeof(f), &sp);
	f[14 + 20 + 5] ^= 0x10;		/* UDP length not the IP one */
	put(s, f, len);
	len = psb_roce_build(f, sizeof(f), &sp);
	f[14 + 2] = 0, f[14 + 3] = 20 + 8 + 12 + 4;	/* IP ends before the RETH */
	f[14 + 20 + 4] = 0, f[14 + 20 + 5] = 8 + 12 + 4;
	put(s, f, len);
	spec(&sp, PSB_ROCE_V1, 1, 0x77);
	sp.opcode = 0x04;
	len = psb_roce_build(f, sizeof(f), &sp);
	f[14 + 6] = 0x11;		/* a GRH whose next header is not IBA */
	put(s, f, len);
	G.malformed += 3;
}

/* The next PSN of each stream of the scenario, carried over rounds. */
struct psn {
	uint32_t write, send, send_ack, read, atomic, ud, v1;
};

static uint32_t
take(uint32_t *next, uint32_t n)
{
	uint32_t p = *next;

	*next = (*next + n) & 0xffffff;
	return p;
}

/* One round of the scenario. Requests to the host's QP 0x10k come from the peer's 0x20k;
 * the responses go the other way. */
static void
round_once(struct psn *ps, unsigned int r)
{
	struct psb_roce_spec sp;
	unsigned int i;
	uint32_t base;

	/* RC WRITE of 8 packets to the host, IPv4: packet 5 lost, the last one (ECN CE) sent
	 * twice */
	spec(&sp, PSB_ROCE_V2_IP4, 1, 0x101);
	base = take(&ps->write, 8);
	for (i = 0; i < 8; i++) {
		sp.opcode = i == 0 ? 0x06 : i == 7 ? 0x08 : 0x07;
		sp.psn = (base + i) & 0xffffff;
		sp.payload = 1024;
		sp.dma_len = 8 * 1024;
		sp.tclass = i == 7 ? 0x03 : 0x02;
		sp.ackreq = i == 7;
		if (i == 5)
			continue;
		roce(&G.wire, &sp, IN_LOST(PSB_ROCE_WRITE, i == 6 ? 1 : 0));
		if (i == 7) {
			sp.tclass = 0x02;
			roce(&G.wire, &sp, IN_DUP(PSB_ROCE_WRITE));
		}
	}
	/* the host ACKs it, coalesced, to the peer's QP */
	spec(&sp, PSB_ROCE_V2_IP4, 0, 0x201);
	sp.opcode = 0x11;
	sp.syndrome = 0x1f;
	sp.psn = (base + 7) & 0xffffff;
	sp.msn = r;
	roce(&G.host, &sp, IN(PSB_ROCE_ACK));

	/* RC SENDs to the host over IPv6, VLAN-tagged: first and last, with immediate, with
	 * invalidate; the host answers with an ACK and each NAK there is */
	spec(&sp, PSB_ROCE_V2_IP6, 1, 0x102);
	sp.vlan = 0x6005;
	base = take(&ps->send, 4);
	for (i = 0; i < 4; i++) {
		static const uint8_t op[4] = { 0x00, 0x02, 0x05, 0x17 };

		sp.opcode = op[i];
		sp.psn = (base + i) & 0xffffff;
		sp.payload = i < 2 ? 4096 : 100 + i;
		sp.imm = 0xabcd0000 + i;
		roce(&G.wire, &sp, IN(PSB_ROCE_SEND));
	}
	spec(&sp, PSB_ROCE_V2_IP6, 0, 0x202);
	sp.vlan = 0x6005;
	base = take(&ps->send_ack, 6);
	for (i = 0; i < 6; i++) {
		static const uint8_t syn[6] = { 0x1f, 0x60, 0x3f, 0x61, 0x62, 0x63 };
		static const int nak[6] = { -1, PSB_ROCE_NAK_SEQ, PSB_ROCE_NAK_RNR,
			PSB_ROCE_NAK_INV_REQ, PSB_ROCE_NAK_ACCESS, PSB_ROCE_NAK_OP };

		sp.opcode = 0x11;
		sp.syndrome = syn[i];
		sp.psn = (base + i) & 0xffffff;
		roce(&G.host, &sp, nak[i] < 0 ? IN(PSB_ROCE_ACK) : IN_NAK(nak[i]));
	}

	/* the host READs 5 packets from the peer: its request out, the response in (MIDDLE 2
	 * lost), the LAST twice; then the host's next request, after the read's PSNs: no gap */
	base = take(&ps->read, 6);
	spec(&sp, PSB_ROCE_V2_IP4, 0, 0x203);
	sp.opcode = 0x0c;
	sp.psn = base;
	sp.dma_len = 5 * 1024;
	sp.va = 0x7f0000000000ull;
	sp.rkey = 0x1234;
	roce(&G.host, &sp, IN(PSB_ROCE_READ));
	spec(&sp, PSB_ROCE_V2_IP4, 1, 0x103);
	for (i = 0; i < 5; i++) {
		sp.opcode = i == 0 ? 0x0d : i == 4 ? 0x0f : 0x0e;
		sp.psn = (base + i) & 0xffffff;
		sp.payload = 1024;
		sp.syndrome = 0x1f;
		if (i == 2)
			continue;
		roce(&G.wire, &sp, IN_LOST(PSB_ROCE_READ, i == 3 ? 1 : 0));
	}
	roce(&G.wire, &sp, IN_DUP(PSB_ROCE_READ));
	spec(&sp, PSB_ROCE_V2_IP4, 0, 0x203);
	sp.opcode = 0x0a;
	sp.psn = (base + 5) & 0xffffff;
	sp.payload = 256;
	sp.dma_len = 256;
	roce(&G.host, &sp, IN(PSB_ROCE_WRITE));

	/* atomics: the peer's compare-swap and fetch-add, the host's atomic ACKs */
	base = take(&ps->atomic, 2);
	spec(&sp, PSB_ROCE_V2_IP4, 1, 0x104);
	for (i = 0; i < 2; i++) {
		sp.opcode = i == 0 ? 0x13 : 0x14;
		sp.psn = (base + i) & 0xffffff;
		roce(&G.wire, &sp, IN(PSB_ROCE_ATOMIC));
	}
	spec(&sp, PSB_ROCE_V2_IP4, 0, 0x204);
	sp.opcode = 0x12;
	sp.syndrome = 0x1f;
	for (i = 0; i < 2; i++) {
		sp.psn = (base + i) & 0xffffff;
		roce(&G.host, &sp, IN(PSB_ROCE_ATOMIC));
	}

	/* UD: datagrams to the host's QP 0x105 from four ports, with and without immediate */
	spec(&sp, PSB_ROCE_V2_IP4, 1, 0x105);
	sp.qkey = 0x11111111;
	sp.sqpn = 0x205;
	base = take(&ps->ud, 4);
	for (i = 0; i < 4; i++) {
		sp.opcode = i & 1 ? 0x65 : 0x64;
		sp.sport = (uint16_t)(50000 + i);
		sp.psn = (base + i) & 0xffffff;
		sp.payload = 2048;
		roce(&G.wire, &sp, IN(PSB_ROCE_SEND));
	}

	/* congestion: the host's NIC notifies the peer, the peer's notifies the host */
	spec(&sp, PSB_ROCE_V2_IP4, 1, 0x101);
	sp.opcode = PSB_ROCE_OP_CNP;
	sp.becn = 1;
	sp.tclass = 0xc0;
	roce(&G.wire, &sp, IN(PSB_ROCE_CNP));
	spec(&sp, PSB_ROCE_V2_IP6, 0, 0x201);
	sp.opcode = PSB_ROCE_OP_CNP;
	sp.becn = 1;
	roce(&G.host, &sp, IN(PSB_ROCE_CNP));

	/* RoCEv1: a SEND to the host and its ACK */
	base = take(&ps->v1, 1);
	spec(&sp, PSB_ROCE_V1, 1, 0x106);
	sp.opcode = 0x04;
	sp.psn = base;
	sp.payload = 512;
	sp.flow = 0x12345;
	roce(&G.wire, &sp, IN(PSB_ROCE_SEND));
	spec(&sp, PSB_ROCE_V1, 0, 0x206);
	sp.opcode = 0x11;
	sp.syndrome = 0x1f;
	sp.psn = base;
	roce(&G.host, &sp, IN(PSB_ROCE_ACK));

	/* corrupted ICRCs: on a known QP (counted there) and on one nobody has (not made) */
	spec(&sp, PSB_ROCE_V2_IP4, 1, 0x101);
	sp.opcode = 0x07;
	sp.psn = 0x424242;
	sp.payload = 1024;
	sp.bad_icrc = 1;
	roce(&G.wire, &sp, IN(PSB_ROCE_WRITE));
	spec(&sp, PSB_ROCE_V2_IP6, 1, 0xbad);
	sp.opcode = 0x04;
	sp.bad_icrc = 1;
	roce(&G.wire, &sp, IN(PSB_ROCE_SEND));

	malformed(&G.wire);
	other_frames(&G.wire, 1, 6);
	other_frames(&G.host, 0, 6);
}

static json_t *
u64s(const uint64_t *v, const char *const *names, unsigned int n)
{
	json_t *o = json_object();
	unsigned int i;

	for (i = 0; i < n; i++)
		json_object_set_new(o, names[i], json_integer((json_int_t)v[i]));
	return o;
}

static json_t *
expect_json(uint32_t churn)
{
	json_t *qps = json_array(), *tot = json_object(), *o;
	uint64_t ops[PSB_ROCE_CLASSES] = { 0 }, naks[PSB_ROCE_NAKS] = { 0 };
	uint64_t missing = 0, dup = 0, ecn = 0, becn = 0;
	unsigned int i, k;
	char a[64], b[64];

	for (i = 0; i < G.nqp; i++) {
		const struct qp_expect *q = &G.qp[i];

		for (k = 0; k < PSB_ROCE_CLASSES; k++)
			ops[k] += q->ops[k];
		for (k = 0; k < PSB_ROCE_NAKS; k++)
			naks[k] += q->naks[k];
		missing += q->missing;
		dup += q->dup;
		ecn += q->ecn_ce;
		becn += q->becn;
		if (i >= G.nqp - churn)
			continue;	/* one packet each: in the totals */
		psb_roce_addr_str(q->src, a, sizeof(a));
		psb_roce_addr_str(q->dst, b, sizeof(b));
		o = json_pack("{s:s, s:I, s:s, s:s, s:I, s:I, s:o, s:o, s:I, s:I, s:I, s:I, s:I}",
			"version", psb_roce_kind_names[q->kind], "qpn", (json_int_t)q->dqpn,
			"src", a, "dst", b, "pkts", (json_int_t)q->pkts,
			"bytes", (json_int_t)q->bytes,
			"ops", u64s(q->ops, psb_roce_class_names, PSB_ROCE_CLASSES),
			"naks", u64s(q->naks, psb_roce_nak_names, PSB_ROCE_NAKS),
			"psn_missing", (json_int_t)q->missing, "psn_dup", (json_int_t)q->dup,
			"ecn_ce", (json_int_t)q->ecn_ce, "becn", (json_int_t)q->becn,
			"icrc_bad", (json_int_t)q->icrc_bad);
		json_array_append_new(qps, o);
	}
	json_object_set_new(tot, "v1", json_integer((json_int_t)G.frames[PSB_ROCE_V1]));
	json_object_set_new(tot, "v2_ip4", json_integer((json_int_t)G.frames[PSB_ROCE_V2_IP4]));
	json_object_set_new(tot, "v2_ip6", json_integer((json_int_t)G.frames[PSB_ROCE_V2_IP6]));
	json_object_set_new(tot, "bytes", json_integer((json_int_t)G.bytes));
	json_object_set_new(tot, "malformed", json_integer((json_int_t)G.malformed));
	json_object_set_new(tot, "icrc_bad", json_integer((json_int_t)G.icrc_bad));
	json_object_set_new(tot, "ops", u64s(ops, psb_roce_class_names, PSB_ROCE_CLASSES));
	json_object_set_new(tot, "naks", u64s(naks, psb_roce_nak_names, PSB_ROCE_NAKS));
	json_object_set_new(tot, "psn_missing", json_integer((json_int_t)missing));
	json_object_set_new(tot, "psn_dup", json_integer((json_int_t)dup));
	json_object_set_new(tot, "ecn_ce", json_integer((json_int_t)ecn));
	json_object_set_new(tot, "becn", json_integer((json_int_t)becn));
	json_object_set_new(tot, "qp_new", json_integer((json_int_t)G.nqp));
	return json_pack("{s:{s:I, s:I}, s:{s:I, s:I}, s:I, s:o, s:o}",
		"wire", "frames", (json_int_t)G.wire.frames, "bytes", (json_int_t)G.wire.bytes,
		"host", "frames", (json_int_t)G.host.frames, "bytes", (json_int_t)G.host.bytes,
		"not_roce", (json_int_t)G.other, "totals", tot, "qps", qps);
}

static void
usage(FILE *f)
{
	fprintf(f,
"usage: psb-rocegen --wire WIRE.pcap --host HOST.pcap --expect EXPECT.json [options]\n"
"  --repeat N    rounds of the scenario (default 1, at most 100000)\n"
"  --churn N     N more queue pairs, a packet each, at the end of WIRE.pcap (at most %d)\n"
"  --max-payload BYTES  no RoCE payload longer (default 4096; 1024 keeps frames within\n"
"                an MTU of 1500)\n"
"  --flood N     instead of the scenario: N frames for benchmarks, round robin over\n"
"                --qps Q queue pairs (default 64), PSNs in order: RC ACKs (62 B) with\n"
"                --max-payload 0, else RC WRITE_MIDDLEs of that payload\n"
"  --version     psb-rocegen's version and the git revision it was built from\n"
"  -h, --help    this text\n", MAX_QPS - 64);
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "wire", required_argument, NULL, 'w' }, { "host", required_argument, NULL, 'H' },
		{ "expect", required_argument, NULL, 'e' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "churn", required_argument, NULL, 'c' }, { "help", no_argument, NULL, 'h' },
		{ "max-payload", required_argument, NULL, 'm' },
		{ "flood", required_argument, NULL, 'f' }, { "qps", required_argument, NULL, 'q' },
		PSB_CLI_VERSION_OPTION, { NULL, 0, NULL, 0 },
	};
	const char *wire = NULL, *host = NULL, *expect = NULL;
	uint64_t repeat = 1, churn = 0, flood = 0, flood_qps = 64, i;
	/* some streams start near the top: their PSNs wrap within a few rounds */
	struct psn ps = { 0xfffff0, 10, 0, 0xfffffa, 0xffffff, 5, 77 };
	struct psb_roce_spec sp;
	int c;

	psb_cli_prog("psb-rocegen");
	G.max_payload = 4096;
	while ((c = psb_cli_getopt(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'w': wire = optarg; break;
		case 'H': host = optarg; break;
		case 'e': expect = optarg; break;
		case 'r': repeat = psb_cli_u64("--repeat", optarg, 1, 100000); break;
		case 'c': churn = psb_cli_u64("--churn", optarg, 0, MAX_QPS - 64); break;
		case 'f': flood = psb_cli_u64("--flood", optarg, 1, 10000000); break;
		case 'q': flood_qps = psb_cli_u64("--qps", optarg, 1, MAX_QPS - 64); break;
		case 'm': G.max_payload = (uint32_t)psb_cli_u64("--max-payload", optarg, 0, 8192);
			break;
		case 'h': usage(stdout); return 0;
		}
	}
	if (optind != argc)
		psb_cli_usage_error("unexpected argument '%s'", argv[optind]);
	if (wire == NULL || host == NULL || expect == NULL)
		psb_cli_usage_error("give --wire, --host and --expect");
	psb_roce_addr4(ip_host, 0xc6120002);		/* 198.18.0.2 */
	psb_roce_addr4(ip_peer, 0xc6120003);
	inet_pton(AF_INET6, "2001:2::2", ip6_host);	/* the benchmarking range */
	inet_pton(AF_INET6, "2001:2::3", ip6_peer);
	inet_pton(AF_INET6, "fe80::18ff:fe00:2", gid_host);
	inet_pton(AF_INET6, "fe80::18ff:fe00:3", gid_peer);
	G.dead = pcap_open_dead(DLT_EN10MB, 65535);
	if (G.dead == NULL)
		psb_die("pcap_open_dead failed");
	side_open(&G.wire, wire);
	side_open(&G.host, host);
	if (flood != 0) {
		/* a stream for benchmarks: ACKs (payload 0) or WRITE_MIDDLEs over flood_qps QPs */
		for (i = 0; i < flood; i++) {
			spec(&sp, PSB_ROCE_V2_IP4, 1, (uint32_t)(0x1000 + i % flood_qps));
			sp.opcode = G.max_payload == 0 ? 0x11 : 0x07;
			sp.syndrome = 0x1f;
			sp.payload = G.max_payload;
			sp.psn = (uint32_t)(i / flood_qps) & 0xffffff;
			roce(&G.wire, &sp, IN(G.max_payload == 0 ? PSB_ROCE_ACK : PSB_ROCE_WRITE));
		}
		repeat = 0;
	}
	for (i = 0; i < repeat; i++)
		round_once(&ps, (unsigned int)i);
	for (i = 0; i < churn; i++) {
		spec(&sp, PSB_ROCE_V2_IP4, 1, (uint32_t)(0x10000 + i));
		sp.opcode = 0x04;
		sp.payload = 64;
		roce(&G.wire, &sp, IN(PSB_ROCE_SEND));
	}
	side_close(&G.wire);
	side_close(&G.host);
	psb_cli_write_json(expect_json((uint32_t)churn), expect);
	pcap_close(G.dead);
	printf("psb-rocegen: %s %llu frames, %s %llu frames; %u queue pairs, %llu RoCE frames "
	       "(%llu bad ICRC, %llu malformed), %llu others\n", wire,
	       (unsigned long long)G.wire.frames, host, (unsigned long long)G.host.frames, G.nqp,
	       (unsigned long long)(G.frames[1] + G.frames[2] + G.frames[3]),
	       (unsigned long long)G.icrc_bad, (unsigned long long)G.malformed,
	       (unsigned long long)G.other);
	return 0;
}
