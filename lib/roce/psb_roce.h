/* RoCE frames seen on the wire: recognised, parsed, ICRC checked, and built (for tests). */
#ifndef PSB_ROCE_H
#define PSB_ROCE_H

#include <stddef.h>
#include <stdint.h>

/*
 * RoCEv2 is IBA transport over UDP (destination port 4791) on IPv4 or IPv6; RoCEv1 is IBA
 * transport behind a GRH right after the Ethernet header (Ethertype 0x8915). Both carry a
 * BTH, the extension headers its opcode implies, the payload, padding to 4 bytes and a
 * 4-byte invariant CRC (ICRC).
 *
 * The ICRC is CRC-32 (the Ethernet polynomial) over 8 bytes of ones standing in for the
 * LRH, then the network header with the fields routers may change set to ones (IPv4 TOS,
 * TTL and header checksum; IPv6/GRH traffic class, flow label and hop limit), the UDP header
 * with its checksum set to ones (v2), the BTH with its reserved byte (FECN, BECN) set to ones,
 * and everything after it up to the ICRC. It is carried least significant byte first. It
 * is computed in place by carry-less multiply on AVX-512 where the CPU has it, else over a
 * masked copy of the headers by ISA-L (psb_roce_icrc.c); frames are built with the latter,
 * checked with the former. The environment variable PSB_ROCE_ICRC=isa-l makes the process
 * take every ICRC the latter way, as a CPU without the former would.
 *
 * Parsing reads only within the bytes given and trusts no length field beyond them; the
 * frame is never written. A frame that claims to be RoCE but cannot be (lengths that do not
 * fit, a fragment, a GRH that is not one) is malformed, not "not RoCE": the caller counts it.
 */

#define PSB_ROCE_UDP_PORT	4791
#define PSB_ROCE_ETHERTYPE	0x8915
#define PSB_ROCE_BTH_LEN	12
#define PSB_ROCE_GRH_LEN	40
#define PSB_ROCE_ICRC_LEN	4
#define PSB_ROCE_OP_CNP		0x81

enum psb_roce_kind {
	PSB_ROCE_NONE = 0,
	PSB_ROCE_V1,		/* Ethertype 0x8915, GRH */
	PSB_ROCE_V2_IP4,	/* IPv4, UDP 4791 */
	PSB_ROCE_V2_IP6,	/* IPv6, UDP 4791 */
	PSB_ROCE_KINDS
};

/* The opcode mix: what a QP's packets were. */
enum psb_roce_class {
	PSB_ROCE_SEND,		/* SEND first/middle/last/only, with immediate or invalidate */
	PSB_ROCE_WRITE,		/* RDMA WRITE */
	PSB_ROCE_READ,		/* RDMA READ request and responses */
	PSB_ROCE_ACK,		/* ACKNOWLEDGE (ACKs and NAKs) */
	PSB_ROCE_ATOMIC,	/* compare-swap, fetch-add, their acknowledge */
	PSB_ROCE_CNP,		/* congestion notification */
	PSB_ROCE_OTHER,		/* any other opcode: counted, passed on */
	PSB_ROCE_CLASSES
};

/* The AETH syndrome of ACKs and NAKs, as counted. */
enum psb_roce_nak {
	PSB_ROCE_NAK_RNR,	/* receiver not ready */
	PSB_ROCE_NAK_SEQ,	/* PSN sequence error */
	PSB_ROCE_NAK_INV_REQ,	/* invalid request */
	PSB_ROCE_NAK_ACCESS,	/* remote access error */
	PSB_ROCE_NAK_OP,	/* remote operational error */
	PSB_ROCE_NAK_OTHER,	/* invalid RD request, reserved codes */
	PSB_ROCE_NAKS
};

/* The extension headers after the BTH, by opcode. */
#define PSB_ROCE_H_RDETH	0x01	/* 4 bytes, RD */
#define PSB_ROCE_H_DETH		0x02	/* 8 bytes, RD and UD */
#define PSB_ROCE_H_RETH		0x04	/* 16 bytes: virtual address, rkey, DMA length */
#define PSB_ROCE_H_ATOMIC	0x08	/* 28 bytes: address, rkey, swap/add, compare */
#define PSB_ROCE_H_AETH		0x10	/* 4 bytes: syndrome, MSN */
#define PSB_ROCE_H_ATOMIC_ACK	0x20	/* 8 bytes: original remote data */
#define PSB_ROCE_H_IMM		0x40	/* 4 bytes: immediate data */
#define PSB_ROCE_H_IETH		0x80	/* 4 bytes: rkey to invalidate */
#define PSB_ROCE_H_CNP_PAD	0x100	/* 16 reserved bytes of a CNP */
#define PSB_ROCE_H_UNKNOWN	0x8000	/* an opcode this table does not know */

struct psb_roce_pkt {
	uint8_t kind;		/* enum psb_roce_kind */
	uint8_t opcode;
	uint8_t cls;		/* enum psb_roce_class */
	uint8_t ecn;		/* ECN bits of the IP header or GRH traffic class */
	uint8_t fecn, becn;	/* BTH reserved byte bits */
	uint8_t ackreq;
	uint8_t pad;		/* BTH pad count */
	uint8_t has_aeth;
	uint8_t syndrome;	/* AETH syndrome byte when has_aeth */
	uint16_t hdrs;		/* PSB_ROCE_H_* after the BTH */
	uint16_t net_off;	/* offset of the IP header or GRH */
	uint16_t bth_off;	/* offset of the BTH */
	uint32_t end;		/* end of the IBA packet: the byte after its ICRC */
	uint32_t dqpn;
	uint32_t psn;
	uint32_t dma_len;	/* RETH DMA length when it has one */
	uint32_t payload;	/* payload bytes, padding not counted */
	uint8_t src[16], dst[16];	/* addresses; IPv4 as ::ffff:a.b.c.d */
};

/* 1 RoCE (p filled), 0 not RoCE, -EBADMSG RoCE that does not fit its frame. */
int psb_roce_parse(const uint8_t *frame, size_t len, struct psb_roce_pkt *p);

/* The ICRC the packet should carry, and whether it carries it. */
uint32_t psb_roce_icrc(const uint8_t *frame, const struct psb_roce_pkt *p);
int psb_roce_icrc_ok(const uint8_t *frame, const struct psb_roce_pkt *p);
/* The ICRC the plain way (the masked headers in a copy, ISA-L's CRC): what the other is
 * checked against */
uint32_t psb_roce_icrc_ref(const uint8_t *frame, const struct psb_roce_pkt *p);
/* How psb_roce_icrc computes: "vpclmulqdq" (in place, AVX-512) or "isa-l" */
const char *psb_roce_icrc_impl(void);
/* Why not in place: NULL when it is, else the reason ("this CPU has no AVX-512 VPCLMULQDQ",
 * "PSB_ROCE_ICRC=isa-l") */
const char *psb_roce_icrc_why(void);

uint16_t psb_roce_opcode_hdrs(uint8_t opcode);
uint8_t psb_roce_opcode_class(uint8_t opcode);
/* "RC_SEND_ONLY", ..., "CNP", or NULL for an opcode not known */
const char *psb_roce_opcode_name(uint8_t opcode);
/* The NAK counted for an AETH syndrome, -1 for an ACK */
int psb_roce_nak_of(uint8_t syndrome);

extern const char *const psb_roce_kind_names[PSB_ROCE_KINDS];
extern const char *const psb_roce_class_names[PSB_ROCE_CLASSES];
extern const char *const psb_roce_nak_names[PSB_ROCE_NAKS];

/* Text of an address: dotted IPv4 for ::ffff:a.b.c.d, IPv6 text otherwise. */
void psb_roce_addr_str(const uint8_t a[16], char *out, size_t outlen);

/*
 * A RoCE frame made to order (for generators and tests): the headers the opcode needs,
 * lengths and the IPv4 checksum right, the UDP checksum 0 on IPv4 and computed on IPv6, and
 * the ICRC computed (or its complement, with bad_icrc).
 */
struct psb_roce_spec {
	uint8_t kind;		/* V1, V2_IP4 or V2_IP6 */
	uint8_t opcode;
	uint8_t src_mac[6], dst_mac[6];
	uint16_t vlan;		/* 0: untagged; else the 802.1Q TCI */
	uint8_t src[16], dst[16];	/* IPv4 in the ::ffff: form */
	uint16_t sport;		/* UDP source port (v2) */
	uint8_t tclass;		/* TOS / traffic class, ECN in its low bits */
	uint8_t ttl;
	uint32_t flow;		/* IPv6/GRH flow label */
	uint32_t dqpn, psn;
	uint8_t ackreq, becn, fecn;
	uint16_t pkey;
	uint8_t syndrome;	/* AETH */
	uint32_t msn;
	uint64_t va;
	uint32_t rkey, dma_len;	/* RETH */
	uint32_t qkey, sqpn;	/* DETH */
	uint32_t imm;		/* immediate data or rkey to invalidate */
	uint32_t payload;	/* payload bytes; padding added to 4 */
	uint32_t seed;		/* payload bytes are made from it */
	uint8_t bad_icrc;
};

/* Frame length, or 0 when it does not fit cap or the spec is not one this makes. */
size_t psb_roce_build(uint8_t *out, size_t cap, const struct psb_roce_spec *s);
/* An IPv4 address (host order) in the ::ffff: form. */
void psb_roce_addr4(uint8_t a[16], uint32_t ip);

#endif
