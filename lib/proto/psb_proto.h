/* psb wire protocol: Ethernet/IPv4/UDP framing and the psb message header. */
#ifndef PSB_PROTO_H
#define PSB_PROTO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PSB_UDP_PORT		9430	/* default port of servers and workers */
#define PSB_SCHED_PORT		9431	/* default scheduler port (DMLC_PS_ROOT_PORT) */
#define PSB_MAGIC		0x5053	/* "PS" */
#define PSB_VERSION		1

#define PSB_ETH_HLEN		14
#define PSB_IP_HLEN		20
#define PSB_UDP_HLEN		8
#define PSB_HDR_LEN		40
/* Everything in front of a psb payload in a frame built by psb. */
#define PSB_UDP_FRAME_HLEN	(PSB_ETH_HLEN + PSB_IP_HLEN + PSB_UDP_HLEN)
#define PSB_FRAME_HLEN		(PSB_UDP_FRAME_HLEN + PSB_HDR_LEN)
/* Largest value one message may carry (bytes): 1 GiB. */
#define PSB_MAX_VALUE		(1u << 30)
/* Workers probe a quiet server with a PULL of this key: no server holds it, and every
 * request on it is answered NO_KEY by the server itself. */
#define PSB_PROBE_KEY		UINT64_MAX
/* Largest UDP payload psb ever sends or accepts. */
#define PSB_MAX_UDP_PAYLOAD	(9000 - PSB_IP_HLEN - PSB_UDP_HLEN)
/*
 * Largest Ethernet frame psb receives: the room of its receive buffers. A jumbo frame of
 * MTU 9000 with a VLAN tag fits with room to spare; anything longer is dropped (oversize).
 */
#define PSB_MAX_FRAME		9216

enum psb_msg_type {
	PSB_MSG_PUSH = 0x01,		/* add value into the stored one */
	PSB_MSG_PULL = 0x02,		/* read the stored value */
	PSB_MSG_PUSHPULL = 0x03,	/* add, then read the result */
	PSB_MSG_BATCH = 0x04,		/* several small requests, as records (struct psb_rec) */
	PSB_MSG_REPAIR = 0x05,		/* worker -> server: a request timed out; what is missing */
	PSB_MSG_REGISTER = 0x10,	/* node -> scheduler: join */
	PSB_MSG_BARRIER = 0x11,		/* node -> scheduler: wait for the group */
	PSB_MSG_BYE = 0x12,		/* node -> link peer: leaving; stop polling this link */
	PSB_MSG_FINALIZE = 0x13,	/* worker -> scheduler: finished; scheduler -> server: the
					 * job is over (ps-lite's Finalize) */
	PSB_MSG_HEARTBEAT = 0x14,	/* node -> scheduler: alive (ps-lite's heartbeat) */
	PSB_MSG_ECHO = 0x15,		/* anyone -> a node's data port: answer me (--echo) */
	PSB_MSG_RESP = 0x80,		/* bit set on every response */
	PSB_MSG_PUSH_ACK = 0x81,
	PSB_MSG_PULL_RESP = 0x82,
	PSB_MSG_PUSHPULL_RESP = 0x83,
	PSB_MSG_BATCH_RESP = 0x84,	/* their answers, as records */
	PSB_MSG_REPAIR_RESP = 0x85,	/* server -> worker: the push segments it lacks */
	PSB_MSG_REGISTER_ACK = 0x90,
	PSB_MSG_BARRIER_ACK = 0x91,
	PSB_MSG_FINALIZE_ACK = 0x93,
	PSB_MSG_HEARTBEAT_ACK = 0x94,	/* the servers lost so far (struct psb_sched_lost) */
	PSB_MSG_ECHO_RESP = 0x95,	/* the ECHO's header and payload, sent back */
	PSB_MSG_ERROR = 0xff,		/* status holds an enum psb_status */
};

/* PUSH, PULL or PUSHPULL: a request a server answers from its store. */
static inline int
psb_msg_is_request(uint8_t type)
{
	return type == PSB_MSG_PUSH || type == PSB_MSG_PULL || type == PSB_MSG_PUSHPULL;
}

/*
 * Every answer of a server but ERROR carries its epoch in aux: a number it picks at start,
 * never 0, the same for the life of the process. A worker that sees it change knows the
 * server restarted and lost what it stored (0: a server that does not say).
 */
uint32_t psb_epoch_new(void);

/* Header flags. */
#define PSB_F_SYNC	0x01	/* request belongs to a synchronous round */
#define PSB_F_SERVER	0x02	/* REGISTER: the node is a server */
#define PSB_F_WORKER	0x04	/* REGISTER: the node is a worker */
#define PSB_F_REJOIN	0x08	/* REGISTER_ACK: the node had this rank in the job already
				 * (it restarted, or an earlier ack was lost) */
#define PSB_F_BEATS	0x10	/* REGISTER: the node sends HEARTBEATs (aux of HEARTBEAT: their
				 * period in ms); the scheduler watches it */

/* Status codes carried in ERROR messages (and 0 in every other message). */
enum psb_status {
	PSB_ST_OK = 0,
	PSB_ST_BAD_VERSION = 1,		/* header version not supported */
	PSB_ST_BAD_TYPE = 2,		/* unknown message type */
	PSB_ST_LEN_MISMATCH = 3,	/* push length differs from the stored value */
	PSB_ST_NO_KEY = 4,		/* pull of a key never pushed */
	PSB_ST_TOO_LARGE = 5,		/* value larger than the server accepts */
	PSB_ST_NO_MEM = 6,		/* server out of memory for the value */
	PSB_ST_BAD_SENDER = 7,		/* sender id out of range */
	PSB_ST_STALE = 8,		/* request older than one already answered */
	PSB_ST_BUSY = 9,		/* too many requests in flight; retry later */
	PSB_ST_MAX
};

/* ERROR no_memory and busy: which of the server's budgets refused the request (in aux). */
enum psb_budget {
	PSB_BUDGET_NONE = 0,		/* no budget: a memory allocation failed */
	PSB_BUDGET_KEYS = 1,		/* store.max_keys */
	PSB_BUDGET_BYTES = 2,		/* store.max_bytes */
	PSB_BUDGET_REASM_SENDER = 3,	/* store.reasm_sender_bytes */
	PSB_BUDGET_REASM = 4,		/* store.reasm_bytes */
	PSB_BUDGET_MAX
};

/* The budget as the configuration names it ("store.max_keys"); NULL for none or unknown. */
const char *psb_budget_name(uint32_t budget);

/*
 * The psb header, 40 bytes, all fields big-endian on the wire. This struct is
 * the decoded (host order) form; psb_hdr_encode/psb_hdr_decode convert.
 *
 * A value of total_len bytes is cut into segments of seg_size bytes (the last
 * one shorter); each message carries one segment at byte `offset`, seg_len
 * bytes long. A message without a value has total_len = seg_len = 0.
 */
struct psb_hdr {
	uint16_t magic;
	uint8_t version;
	uint8_t type;		/* enum psb_msg_type */
	uint8_t flags;		/* PSB_F_* */
	uint8_t status;		/* enum psb_status */
	uint16_t sender;	/* rank of the requesting worker */
	uint32_t req_id;	/* per sender; responses echo it */
	uint32_t round;		/* synchronous round / value version */
	uint64_t key;
	uint32_t total_len;	/* bytes of the whole value */
	uint32_t offset;	/* byte offset of this segment */
	uint16_t seg_len;	/* bytes of value in this message */
	uint16_t seg_size;	/* segment stride the sender used */
	uint32_t aux;		/* type specific: REGISTER_ACK rank, BARRIER group; a server's
				 * answers other than ERROR: its epoch (PSB_EPOCH) */
};

/* Why a frame was dropped by psb_frame_parse. Index into drop counters. */
enum psb_drop {
	PSB_DROP_NONE = 0,
	PSB_DROP_TRUNCATED,	/* shorter than its headers claim */
	PSB_DROP_ETHERTYPE,	/* not IPv4 / ARP / VLAN-tagged IPv4 */
	PSB_DROP_IP_HDR,	/* bad IPv4 version, ihl or total length */
	PSB_DROP_IP_CSUM,	/* IPv4 header checksum wrong */
	PSB_DROP_IP_FRAG,	/* IPv4 fragment (psb never fragments) */
	PSB_DROP_NOT_MINE,	/* IPv4 destination is not this node */
	PSB_DROP_PROTO,		/* IP protocol psb does not serve */
	PSB_DROP_UDP_LEN,	/* UDP length inconsistent with IP length */
	PSB_DROP_PORT,		/* UDP port psb does not serve */
	PSB_DROP_MAGIC,		/* psb magic wrong */
	PSB_DROP_SEGMENT,	/* segment fields inconsistent */
	PSB_DROP_ARP,		/* malformed or foreign ARP */
	PSB_DROP_ICMP,		/* malformed ICMP or not an echo request */
	PSB_DROP_OVERSIZE,	/* longer than PSB_MAX_FRAME */
	PSB_DROP_MAX
};

extern const char *const psb_drop_names[PSB_DROP_MAX];

/* What a parsed frame turned out to be. */
enum psb_frame_kind {
	PSB_FRAME_PSB = 1,	/* a psb message (version may still be foreign) */
	PSB_FRAME_ARP_REQUEST,	/* ARP request for our address */
	PSB_FRAME_ARP_REPLY,	/* ARP reply (learn the sender) */
	PSB_FRAME_ICMP_ECHO,	/* ICMP echo request for our address */
	PSB_FRAME_UDP,		/* a UDP datagram for a port of cfg's udp range: payload is
				 * all of it, hdr is not filled (multicast, experiments) */
};

/* Addresses of one side of a flow; IPs and ports in host byte order. */
struct psb_addr {
	uint8_t mac[6];
	uint32_t ip;
	uint16_t port;
};

/* A parsed frame. Pointers point into the caller's buffer. */
struct psb_frame {
	enum psb_frame_kind kind;
	struct psb_addr src;
	struct psb_addr dst;
	uint16_t l3_off;		/* offset of the IPv4 / ARP header */
	uint16_t l4_off;		/* offset of UDP / ICMP header */
	struct psb_hdr hdr;		/* PSB_FRAME_PSB only */
	const uint8_t *payload;		/* value bytes of this segment */
	uint16_t payload_len;
};

/*
 * What psb_frame_parse accepts as "this node". my_ip 0 accepts any IPv4; the
 * limited broadcast 255.255.255.255 is accepted for BYE messages only.
 */
struct psb_parse_cfg {
	uint32_t my_ip;			/* host order */
	uint16_t psb_port;		/* psb data port (0: any) */
	uint16_t sched_port;		/* scheduler port (0: none) */
	int check_ip_csum;		/* verify the IPv4 header checksum */
	/*
	 * UDP ports [udp_lo, udp_hi] carry other protocols than psb's (0, 0: none): their
	 * datagrams are PSB_FRAME_UDP, to my_ip or, when group is not 0, to that multicast
	 * group, which nothing else may be addressed to.
	 */
	uint16_t udp_lo, udp_hi;
	uint32_t group;
};

/*
 * Classify and validate one Ethernet frame. Returns a psb_frame_kind (> 0)
 * and fills *f, or the negated enum psb_drop reason.
 */
int psb_frame_parse(const uint8_t *buf, size_t len, const struct psb_parse_cfg *cfg,
		struct psb_frame *f);

/* Validate a decoded header's segment fields; 0 or -PSB_DROP_SEGMENT. */
/*
 * The addresses and header of a frame psb_frame_write_headers wrote, len bytes in all: for
 * a message this process built and delivers to itself, which needs no checks.
 */
void psb_frame_read_own(const uint8_t *buf, uint16_t len, struct psb_frame *f);
int psb_hdr_check_segment(const struct psb_hdr *h, size_t payload_len);

void psb_hdr_encode(uint8_t *out, const struct psb_hdr *h);
void psb_hdr_decode(struct psb_hdr *h, const uint8_t *in);

/* Initialise a header with magic, version and type; other fields zero. */
void psb_hdr_init(struct psb_hdr *h, uint8_t type);

/* The header of the BATCH_RESP to BATCH req: one segment of len record bytes. */
void psb_hdr_batch_resp(struct psb_hdr *h, const struct psb_hdr *req, uint16_t len);

/*
 * Write Ethernet, IPv4, UDP and psb headers (PSB_FRAME_HLEN bytes) for a
 * message carrying payload_len value bytes, which the caller places right
 * after. The IPv4 checksum is computed; the UDP checksum is left 0 (IPv4).
 */
/*
 * Ethernet, IPv4 and UDP headers (PSB_UDP_FRAME_HLEN bytes, no UDP checksum) of a datagram
 * of payload_len bytes from src to dst, into out.
 */
void psb_udp_write_headers(uint8_t *out, const struct psb_addr *src, const struct psb_addr *dst,
		uint16_t payload_len);
void psb_frame_write_headers(uint8_t *out, const struct psb_addr *src,
		const struct psb_addr *dst, const struct psb_hdr *h, uint16_t payload_len);

/*
 * Build a whole psb frame (headers + payload) into out, which must hold
 * PSB_FRAME_HLEN + payload_len bytes. Returns the frame length.
 */
size_t psb_frame_build(uint8_t *out, const struct psb_addr *src, const struct psb_addr *dst,
		const struct psb_hdr *h, const void *payload, uint16_t payload_len);

/*
 * Turn an ARP request (PSB_FRAME_ARP_REQUEST) into its reply in out (which
 * may alias buf). Returns the reply length (42).
 */
size_t psb_arp_reply(uint8_t *out, const uint8_t *buf, size_t len, const uint8_t my_mac[6],
		uint32_t my_ip);

/* Build an ARP request for target_ip into out (42 bytes). */
size_t psb_arp_request(uint8_t *out, const uint8_t my_mac[6], uint32_t my_ip, uint32_t target_ip);

/*
 * Turn an ICMP echo request (PSB_FRAME_ICMP_ECHO) in place into its reply:
 * swap addresses, set type 0 and fix the checksums. Returns 0.
 */
int psb_icmp_echo_reply(uint8_t *buf, size_t len, const struct psb_frame *f);

/* Internet checksum (RFC 1071) of len bytes, folded, not complemented. */
uint16_t psb_csum_partial(const void *data, size_t len, uint32_t sum);

/* Segment stride for a given MTU: the value bytes one message can carry, a multiple of 4. */
static inline uint16_t
psb_seg_size_for_mtu(unsigned int mtu)
{
	unsigned int room = mtu - PSB_IP_HLEN - PSB_UDP_HLEN - PSB_HDR_LEN;

	return (uint16_t)(room & ~3u);
}

/* Number of segments of a value. */
static inline uint32_t
psb_seg_count(uint32_t total_len, uint16_t seg_size)
{
	if (total_len == 0)
		return 1;
	return (total_len + seg_size - 1) / seg_size;
}

/*
 * One request (in a BATCH) or one answer (in a BATCH_RESP): a 24-byte
 * big-endian record header followed by len value bytes. A BATCH carries the
 * sender, epoch (aux) and sync flag for all its records in the psb header,
 * and is one message: total_len = seg_len = the records' bytes.
 */
#define PSB_REC_HLEN	24

struct psb_rec {
	uint8_t type;		/* PUSH/PULL/PUSHPULL, or their responses, or ERROR */
	uint8_t status;		/* ERROR: enum psb_status */
	uint16_t len;		/* value bytes after the record header (multiple of 4) */
	uint32_t req_id;
	uint32_t round;
	uint32_t aux;		/* ERROR: detail */
	uint64_t key;
};

/* Write r's header at out (PSB_REC_HLEN bytes); the caller appends the value. */
void psb_rec_encode(uint8_t *out, const struct psb_rec *r);
/*
 * Read the record at in (avail bytes left in the payload). Returns the bytes
 * it takes with its value, or -EINVAL when it is cut short or its length is
 * not a multiple of 4.
 */
int psb_rec_decode(struct psb_rec *r, const uint8_t *in, size_t avail);

/*
 * REPAIR and REPAIR_RESP: after a timeout a worker asks for what is missing instead of
 * sending its whole request again, and the server answers with what it lacks. Both carry
 * the request's sender, req_id, key and epoch (aux) in the psb header and one segment
 * (total_len = seg_len = seg_size) of a 16-byte record header and a bitmap:
 *
 *   REPAIR       req_type: the request's type. Bits: the segments of the answer the worker
 *                lacks (ROUND: of the answer of version `round` it has begun; without
 *                ROUND it has none: the whole answer). Segments past base + nbits are not
 *                asked for this time.
 *   REPAIR_RESP  Bits: the push's segments the server lacks, to send again; ALL: the server
 *                knows nothing of the request: send it all again.
 *
 * Bit i (byte i / 8, bit i % 8) stands for segment base + i.
 */
#define PSB_REPAIR_HLEN		16
#define PSB_REPAIR_MAX_LEN	2048	/* whole payload at most: 16,256 segments */
#define PSB_REPAIR_ALL		0x01
#define PSB_REPAIR_ROUND	0x02

struct psb_repair {
	uint8_t req_type;
	uint8_t flags;		/* PSB_REPAIR_* */
	uint32_t base;		/* segment of the first bit */
	uint32_t nbits;
	uint32_t round;		/* PSB_REPAIR_ROUND */
	const uint8_t *bits;	/* decoded: into the payload */
};

/* Payload bytes of a repair record of nbits bits (a multiple of 4). */
static inline uint32_t
psb_repair_len(uint32_t nbits)
{
	return (PSB_REPAIR_HLEN + (nbits + 7) / 8 + 3) & ~3u;
}

/* Write r's 16-byte header at out; the caller writes the bitmap after it. */
void psb_repair_encode(uint8_t *out, const struct psb_repair *r);
/* Read a repair record of len bytes: 0, or -EINVAL when its bitmap does not fit. */
int psb_repair_decode(struct psb_repair *r, const uint8_t *in, size_t len);

static inline int
psb_repair_bit(const struct psb_repair *r, uint32_t i)
{
	return (r->bits[i / 8] >> (i % 8)) & 1;
}

/*
 * ECHO: a node with the echo role sends the request's header (type ECHO_RESP) and payload
 * back to where it came from, once. It answers only requests it cannot be made to amplify:
 * one whole segment (total_len = seg_len) of PSB_ECHO_MAX_LEN bytes at most, from a source
 * that takes an answer: a unicast MAC and IPv4 address other than its own, a port other
 * than 0.
 */
#define PSB_ECHO_MAX_LEN	1024

/* 1 when the echo role answers the ECHO h from src at a node of address my_ip, else 0. */
int psb_echo_answerable(const struct psb_hdr *h, const struct psb_addr *src, uint32_t my_ip);

const char *psb_msg_type_name(uint8_t type);
const char *psb_status_name(uint8_t status);

/* "198.18.0.1" -> host order; 0 on success, -EINVAL otherwise. */
int psb_parse_ip(const char *s, uint32_t *ip);
/* "02:00:00:00:00:01" -> mac; 0 on success, -EINVAL otherwise. */
int psb_parse_mac(const char *s, uint8_t mac[6]);
/* Host-order IP to dotted quad in buf (>= 16 bytes). */
const char *psb_ip_str(uint32_t ip, char *buf);

/*
 * Clients on the server's host (docs/CLIENT.md, Shared memory): a psb server offers
 * PSB_SHM_MAX_SLOTS memif slots at most on one socket, PSB_SHM_SOCK_NAME in the directory
 * psb_shm_dir gives. The client at slot i sends from its own link-local address, so that
 * psb's neighbour table sends each slot's answers back out of that slot.
 */
#define PSB_SHM_MAX_SLOTS	64
#define PSB_SHM_SLOT_IP0	0xA9FE4D01u	/* 169.254.77.1: slot 0 */

static inline uint32_t
psb_shm_slot_ip(unsigned int slot)
{
	return PSB_SHM_SLOT_IP0 + slot;
}

/*
 * The directory of psb's shared-memory sockets: $PSB_SHM_DIR when set (an absolute path),
 * else /var/run/psb/shm for root, $XDG_RUNTIME_DIR/psb/shm or /tmp/psb-UID/shm for
 * others (where psb keeps its records). 0 or -ENAMETOOLONG.
 */
int psb_shm_dir(char *out, size_t len);
/* dir/IP-PORT.sock. 0 or -ENAMETOOLONG (a socket path holds 107 bytes). */
int psb_shm_sock_name(const char *dir, uint32_t ip, uint16_t port, char *out, size_t len);
/*
 * Slots' sockets in dir whose servers are gone (killed: nobody holds "<socket>.lock"): the
 * socket and its lock removed. Only names of the form "A.B.C.D-PORT.sock" (and ".lock")
 * are touched, a socket without its lock too (a server takes the lock first). Returns how
 * many sockets went, or -errno when dir cannot be read.
 */
int psb_shm_sweep(const char *dir);


#ifdef __cplusplus
}
#endif
#endif /* PSB_PROTO_H */
