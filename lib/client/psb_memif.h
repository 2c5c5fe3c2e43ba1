/*
 * The memif protocol as a memif client speaks it, without DPDK or libmemif: the control
 * messages (128 bytes each on a unix SOCK_SEQPACKET socket, in host byte order) and the
 * shared rings. Everything the peer writes (messages, ring indices, descriptors) is checked
 * here before the transport uses it.
 *
 * A ring, in a region the client made, is a header of three cache lines (cookie, flags and
 * head on the first, tail on the second) and 2^log2 descriptors of 16 bytes after it:
 *
 *	0	cookie u32	4	flags u16	6	head u16
 *	64	tail u16
 *	128	desc[i]: flags u16, region u16, length u32, offset u32, metadata u32
 *
 * The producer of a ring moves head, the consumer tail; both are free-running 16-bit
 * counters (slot = counter & mask). On the client-to-server ring the client produces
 * frames; on the server-to-client ring the client produces empty buffers (head) and the
 * server fills them (tail).
 */
#ifndef PSB_MEMIF_H
#define PSB_MEMIF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PSB_MEMIF_COOKIE		0x3E31F20u
#define PSB_MEMIF_VERSION		0x0200u		/* 2.0 */
#define PSB_MEMIF_MSG_LEN		128
#define PSB_MEMIF_NAME_LEN		32
#define PSB_MEMIF_SECRET_LEN		24
#define PSB_MEMIF_DISC_LEN		96

enum psb_memif_msg_type {
	PSB_MEMIF_MSG_NONE,
	PSB_MEMIF_MSG_ACK,
	PSB_MEMIF_MSG_HELLO,
	PSB_MEMIF_MSG_INIT,
	PSB_MEMIF_MSG_ADD_REGION,
	PSB_MEMIF_MSG_ADD_RING,
	PSB_MEMIF_MSG_CONNECT,
	PSB_MEMIF_MSG_CONNECTED,
	PSB_MEMIF_MSG_DISCONNECT,
	PSB_MEMIF_MSG_MAX
};

#define PSB_MEMIF_RING_FLAG_C2S		1	/* ADD_RING: the client-to-server ring */
#define PSB_MEMIF_RING_MASK_INT		1	/* ring flags: do not signal the eventfd */
#define PSB_MEMIF_DESC_NEXT		1	/* descriptor flags: the frame goes on */

/* Ring layout. */
#define PSB_MEMIF_RING_HEAD_OFF		6
#define PSB_MEMIF_RING_TAIL_OFF		64
#define PSB_MEMIF_RING_DESC_OFF		128
#define PSB_MEMIF_DESC_LEN		16
#define PSB_MEMIF_MAX_LOG2		14

/* A decoded message; strings are always NUL-terminated. */
struct psb_memif_msg {
	uint16_t type;
	union {
		struct {
			char name[PSB_MEMIF_NAME_LEN + 1];
			uint16_t min_version, max_version;
			uint16_t max_region, max_s2c_ring, max_c2s_ring;
			uint8_t max_log2_ring_size;
		} hello;
		struct {
			uint16_t version;
			uint32_t id;
			uint8_t mode;			/* 0: ethernet */
			uint8_t secret[PSB_MEMIF_SECRET_LEN];
			char name[PSB_MEMIF_NAME_LEN + 1];
		} init;
		struct {
			uint16_t index;
			uint64_t size;
		} add_region;
		struct {
			uint16_t flags, index, region;
			uint32_t offset;
			uint8_t log2_ring_size;
			uint16_t private_hdr_size;
		} add_ring;
		struct {
			char if_name[PSB_MEMIF_NAME_LEN + 1];	/* CONNECT and CONNECTED */
		} connect;
		struct {
			uint32_t code;
			char reason[PSB_MEMIF_DISC_LEN + 1];
		} disconnect;
	} u;
};

/* Encode m into buf (PSB_MEMIF_MSG_LEN bytes, the rest zero). 0, or -EINVAL (type). */
int psb_memif_msg_encode(uint8_t *buf, const struct psb_memif_msg *m);

/*
 * Decode len bytes a peer sent. 0, -EMSGSIZE (not one whole message) or -EPROTO (type
 * unknown). Strings are cut at their field and terminated.
 */
int psb_memif_msg_decode(struct psb_memif_msg *m, const uint8_t *buf, size_t len);

const char *psb_memif_msg_name(uint16_t type);

struct msghdr;
/*
 * The descriptors a received message carried (SCM_RIGHTS): the first max into fds, the
 * rest closed. Returns how many fds holds.
 */
unsigned int psb_memif_take_fds(struct msghdr *mh, int *fds, unsigned int max);

/*
 * A HELLO the client can go on with: a version range holding 2.0, room for one region and
 * one ring each way. *log2 is lowered to the server's largest ring. 0 or -EPROTO, with
 * why set.
 */
int psb_memif_hello_check(const struct psb_memif_msg *m, uint8_t *log2, const char **why);

/* A descriptor as read from a ring (a copy: the peer may change the ring meanwhile). */
struct psb_memif_desc {
	uint16_t flags;
	uint16_t region;
	uint32_t length;
	uint32_t offset;
	uint32_t metadata;
};

/* Bytes of a ring of 2^log2 descriptors. */
static inline size_t
psb_memif_ring_bytes(uint8_t log2)
{
	return PSB_MEMIF_RING_DESC_OFF + ((size_t)PSB_MEMIF_DESC_LEN << log2);
}

/*
 * Indices the peer wrote, checked against what the client knows: `seen` slots of a ring of
 * `size` that the peer may advance its counter over, from `from` (the client's last view
 * of it), to `to`. The peer's counter may move forward by at most `room` (what the client
 * gave it); anything else is a lie. Returns the slots it moved, or -1.
 */
static inline int
psb_memif_advance(uint16_t from, uint16_t to, uint16_t room)
{
	uint16_t moved = (uint16_t)(to - from);

	return moved <= room ? (int)moved : -1;
}

/*
 * A filled server-to-client descriptor: it must name the buffer the client put in that
 * slot (region, offset) and a length within it, in one descriptor (no chain). 0, or a
 * PSB_MEMIF_BAD_* reason.
 */
enum psb_memif_bad {
	PSB_MEMIF_BAD_NONE,
	PSB_MEMIF_BAD_INDEX,		/* ring counter moved beyond what the client gave */
	PSB_MEMIF_BAD_DESC,		/* region or offset not the slot's buffer */
	PSB_MEMIF_BAD_LENGTH,		/* length 0 or beyond the buffer */
	PSB_MEMIF_BAD_CHAIN,		/* chained buffers: frames are one buffer each */
	PSB_MEMIF_BAD_MAX
};

int psb_memif_desc_check(const struct psb_memif_desc *d, uint16_t region, uint32_t offset,
		uint32_t buf_size);

#ifdef __cplusplus
}
#endif
#endif /* PSB_MEMIF_H */
