/* psb wire codec: frame classification, header encode/decode, ARP and ICMP replies. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/file.h>
#include <sys/random.h>

#include "psb_be.h"
#include "psb_proto.h"

#define ETHERTYPE_IPV4	0x0800
#define ETHERTYPE_ARP	0x0806
#define ETHERTYPE_VLAN	0x8100
#define IPPROTO_ICMP_	1
#define IPPROTO_UDP_	17

const char *const psb_drop_names[PSB_DROP_MAX] = {
	[PSB_DROP_NONE] = "none",
	[PSB_DROP_TRUNCATED] = "truncated",
	[PSB_DROP_ETHERTYPE] = "ethertype",
	[PSB_DROP_IP_HDR] = "ip_header",
	[PSB_DROP_IP_CSUM] = "ip_checksum",
	[PSB_DROP_IP_FRAG] = "ip_fragment",
	[PSB_DROP_NOT_MINE] = "not_mine",
	[PSB_DROP_PROTO] = "ip_protocol",
	[PSB_DROP_UDP_LEN] = "udp_length",
	[PSB_DROP_PORT] = "udp_port",
	[PSB_DROP_MAGIC] = "bad_magic",
	[PSB_DROP_SEGMENT] = "bad_segment",
	[PSB_DROP_ARP] = "arp",
	[PSB_DROP_ICMP] = "icmp",
	[PSB_DROP_OVERSIZE] = "oversize",
};

uint16_t
psb_csum_partial(const void *data, size_t len, uint32_t sum)
{
	const uint8_t *p = data;
	uint64_t s = 0, w64;
	uint32_t w32;
	uint16_t w16 = 0;

	/*
	 * The words summed in the CPU's byte order, 8 bytes a load: the folded sum of
	 * byte-swapped words is the byte-swapped sum (RFC 1071 2(B)), swapped back at the end.
	 */
	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w64, p, 8);
		s += (w64 & 0xffffffffu) + (w64 >> 32);
	}
	if (len >= 4) {
		memcpy(&w32, p, 4);
		s += w32;
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		memcpy(&w16, p, 2);
		s += w16;
		p += 2;
		len -= 2;
	}
	if (len) {		/* the first byte of a word padded with zero */
		w16 = 0;
		memcpy(&w16, p, 1);
		s += w16;
	}
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	s = (uint64_t)__builtin_bswap16((uint16_t)s);
#endif
	s += sum;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

void
psb_hdr_init(struct psb_hdr *h, uint8_t type)
{
	memset(h, 0, sizeof(*h));
	h->magic = PSB_MAGIC;
	h->version = PSB_VERSION;
	h->type = type;
}

void
psb_hdr_batch_resp(struct psb_hdr *h, const struct psb_hdr *req, uint16_t len)
{
	psb_hdr_init(h, PSB_MSG_BATCH_RESP);
	h->flags = req->flags & PSB_F_SYNC;
	h->sender = req->sender;
	h->req_id = req->req_id;
	h->total_len = len;
	h->seg_len = len;
	h->seg_size = len;
}

void
psb_hdr_encode(uint8_t *out, const struct psb_hdr *h)
{
	psb_wr16(out + 0, h->magic);
	out[2] = h->version;
	out[3] = h->type;
	out[4] = h->flags;
	out[5] = h->status;
	psb_wr16(out + 6, h->sender);
	psb_wr32(out + 8, h->req_id);
	psb_wr32(out + 12, h->round);
	psb_wr64(out + 16, h->key);
	psb_wr32(out + 24, h->total_len);
	psb_wr32(out + 28, h->offset);
	psb_wr16(out + 32, h->seg_len);
	psb_wr16(out + 34, h->seg_size);
	psb_wr32(out + 36, h->aux);
}

void
psb_hdr_decode(struct psb_hdr *h, const uint8_t *in)
{
	h->magic = psb_rd16(in + 0);
	h->version = in[2];
	h->type = in[3];
	h->flags = in[4];
	h->status = in[5];
	h->sender = psb_rd16(in + 6);
	h->req_id = psb_rd32(in + 8);
	h->round = psb_rd32(in + 12);
	h->key = psb_rd64(in + 16);
	h->total_len = psb_rd32(in + 24);
	h->offset = psb_rd32(in + 28);
	h->seg_len = psb_rd16(in + 32);
	h->seg_size = psb_rd16(in + 34);
	h->aux = psb_rd32(in + 36);
}

int
psb_hdr_check_segment(const struct psb_hdr *h, size_t payload_len)
{
	uint32_t want;

	if (h->seg_len != payload_len)
		return -PSB_DROP_SEGMENT;
	if (h->total_len == 0)
		return (h->seg_len == 0 && h->offset == 0) ? 0 : -PSB_DROP_SEGMENT;
	if (h->total_len > PSB_MAX_VALUE || h->seg_size == 0 || (h->seg_size & 3) != 0)
		return -PSB_DROP_SEGMENT;
	if (h->offset >= h->total_len || h->offset % h->seg_size != 0)
		return -PSB_DROP_SEGMENT;
	want = h->total_len - h->offset;
	if (want > h->seg_size)
		want = h->seg_size;
	if (h->seg_len != want)
		return -PSB_DROP_SEGMENT;
	return 0;
}

static int
parse_arp(const uint8_t *a, size_t len, const struct psb_parse_cfg *cfg, struct psb_frame *f)
{
	uint16_t op;

	if (len < 28)
		return -PSB_DROP_TRUNCATED;
	/* Ethernet hardware, IPv4 protocol, 6/4 address lengths. */
	if (psb_rd16(a) != 1 || psb_rd16(a + 2) != ETHERTYPE_IPV4 || a[4] != 6 || a[5] != 4)
		return -PSB_DROP_ARP;
	op = psb_rd16(a + 6);
	memcpy(f->src.mac, a + 8, 6);
	f->src.ip = psb_rd32(a + 14);
	memcpy(f->dst.mac, a + 18, 6);
	f->dst.ip = psb_rd32(a + 24);
	if (op == 1) {
		if (cfg->my_ip == 0 || f->dst.ip != cfg->my_ip)
			return -PSB_DROP_NOT_MINE;
		f->kind = PSB_FRAME_ARP_REQUEST;
		return f->kind;
	}
	if (op == 2) {
		f->kind = PSB_FRAME_ARP_REPLY;
		return f->kind;
	}
	return -PSB_DROP_ARP;
}

static int
parse_icmp(const uint8_t *ic, size_t len, struct psb_frame *f)
{
	if (len < 8)
		return -PSB_DROP_TRUNCATED;
	if (ic[0] != 8 || ic[1] != 0)
		return -PSB_DROP_ICMP;
	if (psb_csum_partial(ic, len, 0) != 0xffff)
		return -PSB_DROP_ICMP;
	f->kind = PSB_FRAME_ICMP_ECHO;
	return f->kind;
}

int
psb_frame_parse(const uint8_t *buf, size_t len, const struct psb_parse_cfg *cfg,
		struct psb_frame *f)
{
	const uint8_t *ip, *udp, *ph;
	uint16_t etype, ip_len, udp_len, frag;
	size_t l3;
	unsigned int ihl;
	int rc, bcast, group;

	memset(f, 0, sizeof(*f));
	if (len > PSB_MAX_FRAME)
		return -PSB_DROP_OVERSIZE;
	if (len < PSB_ETH_HLEN)
		return -PSB_DROP_TRUNCATED;
	memcpy(f->dst.mac, buf, 6);
	memcpy(f->src.mac, buf + 6, 6);
	etype = psb_rd16(buf + 12);
	l3 = PSB_ETH_HLEN;
	if (etype == ETHERTYPE_VLAN) {
		if (len < PSB_ETH_HLEN + 4)
			return -PSB_DROP_TRUNCATED;
		etype = psb_rd16(buf + 16);
		l3 += 4;
	}
	f->l3_off = (uint16_t)l3;
	if (etype == ETHERTYPE_ARP)
		return parse_arp(buf + l3, len - l3, cfg, f);
	if (etype != ETHERTYPE_IPV4)
		return -PSB_DROP_ETHERTYPE;

	ip = buf + l3;
	if (len < l3 + PSB_IP_HLEN)
		return -PSB_DROP_TRUNCATED;
	ihl = (ip[0] & 0x0f) * 4u;
	if ((ip[0] >> 4) != 4 || ihl < PSB_IP_HLEN)
		return -PSB_DROP_IP_HDR;
	ip_len = psb_rd16(ip + 2);
	if (ip_len < ihl)
		return -PSB_DROP_IP_HDR;
	/* Ethernet may pad short frames; the IP length is authoritative. */
	if (l3 + ip_len > len)
		return -PSB_DROP_TRUNCATED;
	if (cfg->check_ip_csum && psb_csum_partial(ip, ihl, 0) != 0xffff)
		return -PSB_DROP_IP_CSUM;
	frag = psb_rd16(ip + 6);
	if ((frag & 0x3fff) != 0)	/* MF set or non-zero offset */
		return -PSB_DROP_IP_FRAG;
	f->src.ip = psb_rd32(ip + 12);
	f->dst.ip = psb_rd32(ip + 16);
	bcast = f->dst.ip == 0xffffffffu;
	group = cfg->group != 0 && f->dst.ip == cfg->group;
	if (cfg->my_ip != 0 && f->dst.ip != cfg->my_ip && !bcast && !group)
		return -PSB_DROP_NOT_MINE;
	f->l4_off = (uint16_t)(l3 + ihl);

	if (ip[9] == IPPROTO_ICMP_) {
		/* Never answer broadcast or multicast pings. */
		if ((bcast && cfg->my_ip != 0) || group)
			return -PSB_DROP_NOT_MINE;
		return parse_icmp(ip + ihl, ip_len - ihl, f);
	}
	if (ip[9] != IPPROTO_UDP_)
		return -PSB_DROP_PROTO;

	udp = ip + ihl;
	if (ip_len < ihl + PSB_UDP_HLEN)
		return -PSB_DROP_TRUNCATED;
	udp_len = psb_rd16(udp + 4);
	if (udp_len < PSB_UDP_HLEN || udp_len != ip_len - ihl)
		return -PSB_DROP_UDP_LEN;
	f->src.port = psb_rd16(udp);
	f->dst.port = psb_rd16(udp + 2);
	if (cfg->udp_lo != 0 && f->dst.port >= cfg->udp_lo && f->dst.port <= cfg->udp_hi &&
	    !bcast) {
		/* another protocol's datagram, whole: its own parser checks it */
		f->payload = udp + PSB_UDP_HLEN;
		f->payload_len = (uint16_t)(udp_len - PSB_UDP_HLEN);
		f->kind = PSB_FRAME_UDP;
		return f->kind;
	}
	if (group)		/* the group carries the udp range's protocols alone */
		return -PSB_DROP_NOT_MINE;
	if (cfg->psb_port != 0 && f->dst.port != cfg->psb_port &&
	    (cfg->sched_port == 0 || f->dst.port != cfg->sched_port))
		return -PSB_DROP_PORT;

	if (udp_len < PSB_UDP_HLEN + PSB_HDR_LEN)
		return -PSB_DROP_TRUNCATED;
	ph = udp + PSB_UDP_HLEN;
	psb_hdr_decode(&f->hdr, ph);
	if (f->hdr.magic != PSB_MAGIC)
		return -PSB_DROP_MAGIC;
	/* The broadcast address is only for BYE. */
	if (bcast && cfg->my_ip != 0 && f->hdr.type != PSB_MSG_BYE)
		return -PSB_DROP_NOT_MINE;
	f->payload = ph + PSB_HDR_LEN;
	f->payload_len = (uint16_t)(udp_len - PSB_UDP_HLEN - PSB_HDR_LEN);
	/* A foreign version is still a psb frame: the server answers it with an error. */
	if (f->hdr.version == PSB_VERSION) {
		rc = psb_hdr_check_segment(&f->hdr, f->payload_len);
		if (rc < 0)
			return rc;
	}
	f->kind = PSB_FRAME_PSB;
	return f->kind;
}

static void
write_ipv4(uint8_t *ip, uint32_t src, uint32_t dst, uint8_t proto, uint16_t total_len)
{
	uint16_t csum;

	ip[0] = 0x45;
	ip[1] = 0;
	psb_wr16(ip + 2, total_len);
	psb_wr16(ip + 4, 0);
	psb_wr16(ip + 6, 0x4000);	/* DF */
	ip[8] = 64;
	ip[9] = proto;
	psb_wr16(ip + 10, 0);
	psb_wr32(ip + 12, src);
	psb_wr32(ip + 16, dst);
	csum = (uint16_t)~psb_csum_partial(ip, PSB_IP_HLEN, 0);
	psb_wr16(ip + 10, csum);
}

void
psb_udp_write_headers(uint8_t *out, const struct psb_addr *src, const struct psb_addr *dst,
		uint16_t payload_len)
{
	uint8_t *ip = out + PSB_ETH_HLEN;
	uint8_t *udp = ip + PSB_IP_HLEN;
	uint16_t udp_len = PSB_UDP_HLEN + payload_len;

	memcpy(out, dst->mac, 6);
	memcpy(out + 6, src->mac, 6);
	psb_wr16(out + 12, ETHERTYPE_IPV4);
	write_ipv4(ip, src->ip, dst->ip, IPPROTO_UDP_, PSB_IP_HLEN + udp_len);
	psb_wr16(udp, src->port);
	psb_wr16(udp + 2, dst->port);
	psb_wr16(udp + 4, udp_len);
	psb_wr16(udp + 6, 0);
}

void
psb_frame_write_headers(uint8_t *out, const struct psb_addr *src, const struct psb_addr *dst,
		const struct psb_hdr *h, uint16_t payload_len)
{
	psb_udp_write_headers(out, src, dst, PSB_HDR_LEN + payload_len);
	psb_hdr_encode(out + PSB_UDP_FRAME_HLEN, h);
}

void
psb_frame_read_own(const uint8_t *buf, uint16_t len, struct psb_frame *f)
{
	const uint8_t *ip = buf + PSB_ETH_HLEN, *udp = ip + PSB_IP_HLEN;

	memset(f, 0, sizeof(*f));
	f->kind = PSB_FRAME_PSB;
	memcpy(f->dst.mac, buf, 6);
	memcpy(f->src.mac, buf + 6, 6);
	f->src.ip = psb_rd32(ip + 12);
	f->dst.ip = psb_rd32(ip + 16);
	f->src.port = psb_rd16(udp);
	f->dst.port = psb_rd16(udp + 2);
	f->l3_off = PSB_ETH_HLEN;
	f->l4_off = PSB_ETH_HLEN + PSB_IP_HLEN;
	psb_hdr_decode(&f->hdr, udp + PSB_UDP_HLEN);
	f->payload = buf + PSB_FRAME_HLEN;
	f->payload_len = len > PSB_FRAME_HLEN ? (uint16_t)(len - PSB_FRAME_HLEN) : 0;
}

size_t
psb_frame_build(uint8_t *out, const struct psb_addr *src, const struct psb_addr *dst,
		const struct psb_hdr *h, const void *payload, uint16_t payload_len)
{
	psb_frame_write_headers(out, src, dst, h, payload_len);
	if (payload_len != 0)
		memcpy(out + PSB_FRAME_HLEN, payload, payload_len);
	return PSB_FRAME_HLEN + payload_len;
}

static size_t
write_arp(uint8_t *out, uint16_t op, const uint8_t sha[6], uint32_t spa, const uint8_t tha[6],
		uint32_t tpa, const uint8_t eth_dst[6])
{
	uint8_t *a = out + PSB_ETH_HLEN;

	memcpy(out, eth_dst, 6);
	memcpy(out + 6, sha, 6);
	psb_wr16(out + 12, ETHERTYPE_ARP);
	psb_wr16(a, 1);
	psb_wr16(a + 2, ETHERTYPE_IPV4);
	a[4] = 6;
	a[5] = 4;
	psb_wr16(a + 6, op);
	memcpy(a + 8, sha, 6);
	psb_wr32(a + 14, spa);
	memcpy(a + 18, tha, 6);
	psb_wr32(a + 24, tpa);
	return PSB_ETH_HLEN + 28;
}

size_t
psb_arp_reply(uint8_t *out, const uint8_t *buf, size_t len, const uint8_t my_mac[6],
		uint32_t my_ip)
{
	uint8_t req_mac[6];
	uint32_t req_ip;
	size_t l3 = PSB_ETH_HLEN;

	if (len >= PSB_ETH_HLEN + 4 && psb_rd16(buf + 12) == ETHERTYPE_VLAN)
		l3 += 4;
	/* Copy first: out may alias buf. */
	memcpy(req_mac, buf + l3 + 8, 6);
	req_ip = psb_rd32(buf + l3 + 14);
	return write_arp(out, 2, my_mac, my_ip, req_mac, req_ip, req_mac);
}

size_t
psb_arp_request(uint8_t *out, const uint8_t my_mac[6], uint32_t my_ip, uint32_t target_ip)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t zero[6];

	return write_arp(out, 1, my_mac, my_ip, zero, target_ip, bcast);
}

int
psb_icmp_echo_reply(uint8_t *buf, size_t len, const struct psb_frame *f)
{
	uint8_t mac[6];
	uint8_t *ip = buf + f->l3_off;
	uint8_t *ic = buf + f->l4_off;
	uint16_t ip_len = psb_rd16(ip + 2);
	size_t icmp_len = ip_len - (size_t)(f->l4_off - f->l3_off);
	uint16_t csum;

	if (f->l4_off + icmp_len > len)
		return -EINVAL;
	memcpy(mac, buf, 6);
	memcpy(buf, buf + 6, 6);
	memcpy(buf + 6, mac, 6);
	psb_wr32(ip + 12, f->dst.ip);
	psb_wr32(ip + 16, f->src.ip);
	ip[8] = 64;
	psb_wr16(ip + 10, 0);
	csum = (uint16_t)~psb_csum_partial(ip, (size_t)(f->l4_off - f->l3_off), 0);
	psb_wr16(ip + 10, csum);
	ic[0] = 0;
	psb_wr16(ic + 2, 0);
	csum = (uint16_t)~psb_csum_partial(ic, icmp_len, 0);
	psb_wr16(ic + 2, csum);
	return 0;
}

void
psb_rec_encode(uint8_t *out, const struct psb_rec *r)
{
	out[0] = r->type;
	out[1] = r->status;
	psb_wr16(out + 2, r->len);
	psb_wr32(out + 4, r->req_id);
	psb_wr32(out + 8, r->round);
	psb_wr32(out + 12, r->aux);
	psb_wr64(out + 16, r->key);
}

int
psb_rec_decode(struct psb_rec *r, const uint8_t *in, size_t avail)
{
	if (avail < PSB_REC_HLEN)
		return -EINVAL;
	r->type = in[0];
	r->status = in[1];
	r->len = psb_rd16(in + 2);
	r->req_id = psb_rd32(in + 4);
	r->round = psb_rd32(in + 8);
	r->aux = psb_rd32(in + 12);
	r->key = psb_rd64(in + 16);
	if ((r->len & 3) != 0 || (size_t)r->len > avail - PSB_REC_HLEN)
		return -EINVAL;
	return PSB_REC_HLEN + r->len;
}

void
psb_repair_encode(uint8_t *out, const struct psb_repair *r)
{
	out[0] = r->req_type;
	out[1] = r->flags;
	psb_wr16(out + 2, 0);
	psb_wr32(out + 4, r->base);
	psb_wr32(out + 8, r->nbits);
	psb_wr32(out + 12, r->round);
}

int
psb_repair_decode(struct psb_repair *r, const uint8_t *in, size_t len)
{
	if (len < PSB_REPAIR_HLEN)
		return -EINVAL;
	r->req_type = in[0];
	r->flags = in[1];
	r->base = psb_rd32(in + 4);
	r->nbits = psb_rd32(in + 8);
	r->round = psb_rd32(in + 12);
	r->bits = in + PSB_REPAIR_HLEN;
	if (r->nbits > (len - PSB_REPAIR_HLEN) * 8)
		return -EINVAL;
	return 0;
}

int
psb_echo_answerable(const struct psb_hdr *h, const struct psb_addr *src, uint32_t my_ip)
{
	/* 224.0.0.0/4 is multicast; 240.0.0.0/4, broadcast included, is no host's */
	int group = (src->mac[0] & 1) != 0 || src->ip >> 28 >= 14;

	return h->seg_len <= PSB_ECHO_MAX_LEN && h->total_len == h->seg_len && h->offset == 0 &&
		!group && src->ip != 0 && src->ip != my_ip && src->port != 0;
}

uint32_t
psb_epoch_new(void)
{
	uint32_t e = 0;

	while (e == 0)
		if (getrandom(&e, sizeof(e), GRND_NONBLOCK) != sizeof(e))
			e = (uint32_t)time(NULL) ^ ((uint32_t)getpid() << 16) ^ (uint32_t)clock();
	return e;
}

const char *
psb_msg_type_name(uint8_t type)
{
	switch (type) {
	case PSB_MSG_PUSH: return "PUSH";
	case PSB_MSG_PULL: return "PULL";
	case PSB_MSG_PUSHPULL: return "PUSHPULL";
	case PSB_MSG_BATCH: return "BATCH";
	case PSB_MSG_BATCH_RESP: return "BATCH_RESP";
	case PSB_MSG_REPAIR: return "REPAIR";
	case PSB_MSG_REPAIR_RESP: return "REPAIR_RESP";
	case PSB_MSG_REGISTER: return "REGISTER";
	case PSB_MSG_BARRIER: return "BARRIER";
	case PSB_MSG_BYE: return "BYE";
	case PSB_MSG_FINALIZE: return "FINALIZE";
	case PSB_MSG_FINALIZE_ACK: return "FINALIZE_ACK";
	case PSB_MSG_HEARTBEAT: return "HEARTBEAT";
	case PSB_MSG_HEARTBEAT_ACK: return "HEARTBEAT_ACK";
	case PSB_MSG_ECHO: return "ECHO";
	case PSB_MSG_ECHO_RESP: return "ECHO_RESP";
	case PSB_MSG_PUSH_ACK: return "PUSH_ACK";
	case PSB_MSG_PULL_RESP: return "PULL_RESP";
	case PSB_MSG_PUSHPULL_RESP: return "PUSHPULL_RESP";
	case PSB_MSG_REGISTER_ACK: return "REGISTER_ACK";
	case PSB_MSG_BARRIER_ACK: return "BARRIER_ACK";
	case PSB_MSG_ERROR: return "ERROR";
	default: return "UNKNOWN";
	}
}

const char *
psb_status_name(uint8_t status)
{
	static const char *const names[PSB_ST_MAX] = {
		[PSB_ST_OK] = "ok",
		[PSB_ST_BAD_VERSION] = "bad_version",
		[PSB_ST_BAD_TYPE] = "bad_type",
		[PSB_ST_LEN_MISMATCH] = "length_mismatch",
		[PSB_ST_NO_KEY] = "no_key",
		[PSB_ST_TOO_LARGE] = "too_large",
		[PSB_ST_NO_MEM] = "no_memory",
		[PSB_ST_BAD_SENDER] = "bad_sender",
		[PSB_ST_STALE] = "stale",
		[PSB_ST_BUSY] = "busy",
	};

	return status < PSB_ST_MAX ? names[status] : "unknown";
}

const char *
psb_budget_name(uint32_t budget)
{
	static const char *const names[PSB_BUDGET_MAX] = {
		[PSB_BUDGET_NONE] = NULL,
		[PSB_BUDGET_KEYS] = "store.max_keys",
		[PSB_BUDGET_BYTES] = "store.max_bytes",
		[PSB_BUDGET_REASM_SENDER] = "store.reasm_sender_bytes",
		[PSB_BUDGET_REASM] = "store.reasm_bytes",
	};

	return budget < PSB_BUDGET_MAX ? names[budget] : NULL;
}

int
psb_parse_ip(const char *s, uint32_t *ip)
{
	struct in_addr a;

	if (s == NULL || inet_pton(AF_INET, s, &a) != 1)
		return -EINVAL;
	*ip = ntohl(a.s_addr);
	return 0;
}

int
psb_parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char tail;
	int i;

	if (s == NULL || sscanf(s, "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
			&tail) != 6)
		return -EINVAL;
	for (i = 0; i < 6; i++) {
		if (b[i] > 0xff)
			return -EINVAL;
		mac[i] = (uint8_t)b[i];
	}
	return 0;
}

const char *
psb_ip_str(uint32_t ip, char *buf)
{
	snprintf(buf, 16, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 0xff, (ip >> 8) & 0xff, ip & 0xff);
	return buf;
}

int
psb_shm_dir(char *out, size_t len)
{
	const char *d = getenv("PSB_SHM_DIR"), *xdg = getenv("XDG_RUNTIME_DIR");
	int n;

	if (d != NULL && d[0] == '/')
		n = snprintf(out, len, "%s", d);
	else if (getuid() == 0)
		n = snprintf(out, len, "/var/run/psb/shm");
	else if (xdg != NULL && xdg[0] == '/')
		n = snprintf(out, len, "%s/psb/shm", xdg);
	else
		n = snprintf(out, len, "/tmp/psb-%u/shm", (unsigned int)getuid());
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int
psb_shm_sock_name(const char *dir, uint32_t ip, uint16_t port, char *out, size_t len)
{
	char b[16];
	int n = snprintf(out, len, "%s/%s-%u.sock", dir, psb_ip_str(ip, b), port);

	/* what sockaddr_un holds, with its terminating NUL */
	if (n < 0 || (size_t)n >= len || n > 107)
		return -ENAMETOOLONG;
	return 0;
}

/* "A.B.C.D-PORT.sock" (lock: with ".lock" after): a slots' socket's name, nothing else. */
static int
sock_name(const char *n, int lock)
{
	unsigned int a, b, c, d, port;
	int end = 0;

	if (sscanf(n, "%3u.%3u.%3u.%3u-%5u.sock%n", &a, &b, &c, &d, &port, &end) != 5 ||
	    a > 255 || b > 255 || c > 255 || d > 255 || port > 65535)
		return 0;
	return lock ? strcmp(n + end, ".lock") == 0 : n[end] == '\0';
}

int
psb_shm_sweep(const char *dir)
{
	char path[PATH_MAX], lock[PATH_MAX + 8];
	struct dirent *de;
	int fd, n = 0;
	DIR *d = opendir(dir);

	if (d == NULL)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		if (!sock_name(de->d_name, 0) ||
		    snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
			continue;
		snprintf(lock, sizeof(lock), "%s.lock", path);
		fd = open(lock, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0) {
			close(fd);	/* its server lives */
			continue;
		}
		if (unlink(path) == 0)
			n++;
		if (fd >= 0) {
			unlink(lock);
			close(fd);
		}
	}
	/* locks left without their socket, free */
	rewinddir(d);
	while ((de = readdir(d)) != NULL) {
		if (!sock_name(de->d_name, 1) ||
		    snprintf(lock, sizeof(lock), "%s/%s", dir, de->d_name) >= (int)sizeof(lock))
			continue;
		fd = open(lock, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			unlink(lock);
		close(fd);
	}
	closedir(d);
	return n;
}
