/*
 * The wire format of psb's reliable multicast of parameter versions (UDP payloads).
 *
 * A sender publishes versions: numbered byte strings of up to PSB_MC_MAX_VERSION bytes, cut
 * into segments of seg_size bytes, grouped by k (group) for erasure coding. Every packet
 * carries the whole description of the version it is about (number, length, segments,
 * group, CRC-32C of the whole), so a receiver that joins late needs nothing else, and a
 * packet that contradicts what a receiver holds is told apart. All fields big-endian.
 *
 *   0  u16 magic 0x504d ("PM")     2  u8 wire version (2)   3  u8 type
 *   4  u32 session (the sender's; a receiver follows one)
 *   8  u32 vid                     12 u32 nseg
 *  16 u64 total_len                24 u32 crc (CRC-32C of the version, psb_mc_crc)
 *  28 u16 group (k, 1..64)         30 u16 seg_size
 *  32 type-specific, 8 bytes:
 *     DATA    u32 seg, u16 len, u16 flags                              + len bytes
 *     PARITY  u32 group index, u16 parity index, u16 len (= seg_size) + len bytes
 *     HEARTBEAT u32 segments of vid sent so far, u32 the sender's rate in Mbit/s
 *     NACK    u32 receiver id, u16 entries, u16 flags      + entries x 16 bytes:
 *             u32 group index, u16 symbols still needed, u16 0, u64 missing data bitmap
 *     NCF     as NACK (receiver id 0): the repairs the sender queued, multicast at once so
 *             that receivers missing the same symbols do not ask again
 *
 * Wire version 1 carried another CRC in the same place (CRC-32C's register without its
 * initial and final inversions); a receiver of one version counts the other's packets as
 * PSB_MC_BAD_MAGIC instead of failing every version's CRC.
 */
#ifndef PSB_MC_PROTO_H
#define PSB_MC_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define PSB_MC_MAGIC		0x504d
#define PSB_MC_WIRE_VERSION	2
#define PSB_MC_HLEN		40
#define PSB_MC_GROUP_MAX	64		/* data segments per group: one u64 bitmap */
#define PSB_MC_PARITY_MAX	128		/* parity symbols per group (k + m <= 256) */
#define PSB_MC_SEG_MIN		64
#define PSB_MC_SEG_MAX		8932		/* a 9000-byte MTU less IPv4 (20), UDP (8) and
						 * header (40): one packet, unfragmented */
#define PSB_MC_MAX_VERSION	(UINT64_C(1) << 36)	/* 64 GiB: bounds nseg to 32 bits */
#define PSB_MC_NACK_ENTRY	16
#define PSB_MC_NACK_MAX		256		/* entries in one NACK */

enum psb_mc_type {
	PSB_MC_DATA = 1,
	PSB_MC_PARITY = 2,
	PSB_MC_HEARTBEAT = 3,
	PSB_MC_NACK = 4,
	PSB_MC_NCF = 5,		/* the sender, to all: these repairs are coming (NACK's body) */
};

/* Why a packet was refused (counted by whoever parsed it). */
enum psb_mc_bad {
	PSB_MC_BAD_SHORT = 1,		/* shorter than its header or than it says */
	PSB_MC_BAD_MAGIC,		/* not this protocol, or another wire version */
	PSB_MC_BAD_TYPE,
	PSB_MC_BAD_GEOMETRY,		/* segments, group, length and size disagree */
	PSB_MC_BAD_INDEX,		/* a segment, group or parity index outside the version */
	PSB_MC_BAD_LENGTH,		/* payload length wrong for its segment */
	PSB_MC_BAD_NACK,		/* entries outside the bounds or not in order */
	PSB_MC_BAD_MAX,
};

/* A version as every packet describes it. */
struct psb_mc_ver {
	uint32_t vid;
	uint32_t nseg;
	uint64_t total_len;
	uint32_t crc;
	uint16_t group;
	uint16_t seg_size;
};

struct psb_mc_nack_entry {
	uint32_t group;
	uint16_t need;
	uint64_t missing;
};

/* A parsed packet; payload and nack point into the buffer that was parsed. */
struct psb_mc_pkt {
	uint8_t type;
	uint32_t session;
	struct psb_mc_ver ver;
	uint32_t a;			/* DATA seg, PARITY group, HEARTBEAT sent, NACK receiver */
	uint16_t b;			/* PARITY index, NACK entries */
	uint16_t len;			/* payload bytes (DATA, PARITY) */
	uint32_t rate_mbps;		/* HEARTBEAT */
	const uint8_t *payload;		/* DATA, PARITY: len bytes; NACK: b entries */
};

/* Groups of a version, and data segments in group g (the last one may hold fewer). */
static inline uint32_t
psb_mc_ngroups(const struct psb_mc_ver *v)
{
	return (v->nseg + v->group - 1) / v->group;
}

static inline uint32_t
psb_mc_group_k(const struct psb_mc_ver *v, uint32_t g)
{
	uint32_t first = g * v->group;

	return v->nseg - first < v->group ? v->nseg - first : v->group;
}

/* Bit i set for each data segment i of group g. */
static inline uint64_t
psb_mc_group_mask(const struct psb_mc_ver *v, uint32_t g)
{
	uint32_t k = psb_mc_group_k(v, g);

	return k == 64 ? UINT64_MAX : (UINT64_C(1) << k) - 1;
}

/* Bytes of data segment seg: seg_size but for the last one. */
static inline uint32_t
psb_mc_seg_len(const struct psb_mc_ver *v, uint32_t seg)
{
	uint64_t off = (uint64_t)seg * v->seg_size;

	return v->total_len - off < v->seg_size ? (uint32_t)(v->total_len - off) : v->seg_size;
}

/* 0 when v is self-consistent (a version a sender may publish), else -PSB_MC_BAD_GEOMETRY. */
int psb_mc_ver_check(const struct psb_mc_ver *v);

/* The segments a version of total_len bytes takes at seg_size (0 bytes: one empty segment). */
uint32_t psb_mc_nseg(uint64_t total_len, uint16_t seg_size);

/*
 * Parse the UDP payload buf of len bytes into p: its type, or -enum psb_mc_bad. Every
 * length and index is checked against the version the packet describes; NACK entries are
 * checked too (groups in increasing order, needs and bitmaps within their group).
 */
int psb_mc_parse(const uint8_t *buf, size_t len, struct psb_mc_pkt *p);

/* Entry i of a parsed NACK. */
void psb_mc_nack_entry(const struct psb_mc_pkt *p, unsigned int i, struct psb_mc_nack_entry *e);

/* Headers (PSB_MC_HLEN bytes) of each type; the caller adds the payload after it. */
void psb_mc_write_data(uint8_t *out, uint32_t session, const struct psb_mc_ver *v, uint32_t seg,
		uint16_t len);
void psb_mc_write_parity(uint8_t *out, uint32_t session, const struct psb_mc_ver *v,
		uint32_t group, uint16_t idx);
void psb_mc_write_heartbeat(uint8_t *out, uint32_t session, const struct psb_mc_ver *v,
		uint32_t sent, uint32_t rate_mbps);
/*
 * A NACK (type PSB_MC_NACK) or NCF (PSB_MC_NCF) of n entries, whole: out holds
 * PSB_MC_HLEN + n * PSB_MC_NACK_ENTRY bytes.
 */
size_t psb_mc_write_nack(uint8_t *out, uint8_t type, uint32_t session,
		const struct psb_mc_ver *v, uint32_t receiver, const struct psb_mc_nack_entry *e,
		unsigned int n);

const char *psb_mc_bad_name(int bad);

/* Packets refused for any reason: the sum of a by-reason array of counters. */
static inline uint64_t
psb_mc_bad_total(const uint64_t bad[PSB_MC_BAD_MAX])
{
	uint64_t n = 0;
	unsigned int k;

	for (k = 1; k < PSB_MC_BAD_MAX; k++)
		n += bad[k];
	return n;
}

/*
 * CRC-32C (Castagnoli: polynomial 0x1EDC6F41, reflected 0x82F63B78, initial value and final
 * XOR 0xFFFFFFFF; "123456789" gives 0xE3069283) of len bytes, continuing from crc: 0 to
 * start, and psb_mc_crc(psb_mc_crc(0, a, n), b, m) is the CRC-32C of a followed by b.
 */
uint32_t psb_mc_crc(uint32_t crc, const void *buf, uint64_t len);

#endif /* PSB_MC_PROTO_H */
