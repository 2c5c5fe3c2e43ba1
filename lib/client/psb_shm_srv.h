/*
 * The server side of the shared-memory transport: memif slots (psb_memif.h) a server
 * without DPDK offers to clients on its host, the peer of psb_shm.h. psb-ksrv uses it;
 * psb itself has DPDK's net_memif for the same socket.
 *
 * The socket is psb_shm_sock_path(ip, port), taken under the lock "<socket>.lock", held
 * for the server's life: of two servers of one address only one binds it. Each
 * connection says HELLO, takes INIT for a free slot below `slots`, maps the client's
 * region (a sealed memfd, at most max_region bytes), takes one ring each way and
 * CONNECTs. Then frames are polled: Ethernet/IPv4/UDP carrying psb datagrams from the
 * slot's address (psb_shm_slot_ip), ARP answered here.
 *
 * The client is untrusted: every message, every ring counter and descriptor it writes is
 * checked before use, frames are copied out of its memory before they are parsed, and a
 * frame is written only into a buffer it gave, within its region. What breaks the rules
 * is counted; a ring counter that lies ends the link. A client gone (its socket closed)
 * frees its slot and its region is unmapped.
 */
#ifndef PSB_SHM_SRV_H
#define PSB_SHM_SRV_H

#include <stddef.h>
#include <stdint.h>

#include "psb_proto.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PSB_SHM_SRV_MAX_REGION	(256ull << 20)	/* a client's region at most (default) */
#define PSB_SHM_SRV_HANDSHAKE_NS (2ull * 1000 * 1000 * 1000)	/* a connection's handshake */
#define PSB_SHM_SRV_PENDING	4		/* connections in handshake beyond the slots */

struct psb_shm_srv_cfg {
	const char *path;		/* the socket (psb_shm_sock_path of ip, port) */
	uint32_t slots;			/* 1..PSB_SHM_MAX_SLOTS */
	uint64_t max_region;		/* 0: PSB_SHM_SRV_MAX_REGION */
	uint64_t handshake_ns;		/* 0: PSB_SHM_SRV_HANDSHAKE_NS */
	uint32_t ip;			/* the server's data address (host order) */
	uint16_t port;			/* and port: frames to another are dropped */
};

/* What the slots counted; psb_shm_srv_counter_names walks it. */
struct psb_shm_srv_stats {
	uint64_t links;			/* handshakes completed */
	uint64_t slots_used;		/* slots connected now */
	uint64_t slots_max;		/* most at once */
	uint64_t rx_frames, rx_bytes;	/* psb datagrams from clients */
	uint64_t rx_held;		/* of them, push segments the store kept where they were */
	uint64_t tx_frames, tx_bytes;
	uint64_t tx_full;		/* answers dropped: the client gave no free buffer */
	uint64_t tx_no_slot;		/* answers to a slot no client holds (it left) */
	uint64_t arp;			/* ARP requests answered */
	uint64_t refused;		/* INIT for a taken or missing slot, or too many connections */
	uint64_t bad_msg;		/* handshake messages out of order or malformed */
	uint64_t bad_region;		/* regions refused: size, seals, mapping */
	uint64_t bad_ring;		/* rings refused: offset, size, cookie, eventfd */
	uint64_t timeouts;		/* handshakes not done in time */
	uint64_t bad_index;		/* a ring counter moved beyond the ring (the link ends) */
	uint64_t bad_desc;		/* a descriptor out of the region or of another region */
	uint64_t bad_length;		/* a frame of length 0 or longer than PSB_MAX_FRAME */
	uint64_t bad_chain;		/* a frame in chained buffers */
	uint64_t bad_frame;		/* not a psb datagram to this server from the slot's address */
	uint64_t disconnects;		/* links ended: the client left, or broke a rule */
};

struct psb_shm_srv_counter {
	const char *name;
	size_t off;
};

/* The counters of struct psb_shm_srv_stats, by name; ends with a NULL name. */
extern const struct psb_shm_srv_counter psb_shm_srv_counters[];

static inline uint64_t
psb_shm_srv_counter(const struct psb_shm_srv_stats *st, const struct psb_shm_srv_counter *c)
{
	return *(const uint64_t *)(const void *)((const uint8_t *)st + c->off);
}

struct psb_shm_srv;

/*
 * Make the socket's directory, take the lock, remove a socket left by a server that died,
 * bind and listen. 0 with *out set; -EBUSY (another server holds the lock), -EINVAL
 * (slots), or what failed, with err saying it.
 */
int psb_shm_srv_open(const struct psb_shm_srv_cfg *cfg, struct psb_shm_srv **out, char *err,
		size_t errlen);

/* DISCONNECT every client, unmap, remove the socket and the lock file. NULL: nothing. */
void psb_shm_srv_close(struct psb_shm_srv *v);

/* Remove the socket and the lock file (at exit, should close not be reached). */
void psb_shm_srv_unlink(const struct psb_shm_srv *v);

const char *psb_shm_srv_path(const struct psb_shm_srv *v);

/*
 * The control sockets, without waiting: connections accepted, handshakes moved on, clients
 * gone or late freed. Returns the slots connected.
 */
unsigned int psb_shm_srv_ctl(struct psb_shm_srv *v, uint64_t now_ns);

/*
 * Up to max frames from the slots, in turn: cb gets each psb datagram and where it came
 * from (the slot's address, the client's port and MAC), valid during the call. hdr: its
 * psb header (PSB_HDR_LEN bytes), the server's own copy, checked as the frame's. payload:
 * the len bytes after it, where the client put them. They stay in the client's shared
 * memory (a frame's value is not copied twice): the client may change them at any moment,
 * so cb reads them once, as a value to copy or add, and copies anything it parses first.
 * Returns the frames taken off the rings.
 */
typedef int (*psb_shm_srv_rx_cb)(void *arg, const struct psb_addr *from, const uint8_t *hdr,
		const uint8_t *payload, size_t len, void *ref);
unsigned int psb_shm_srv_rx(struct psb_shm_srv *v, unsigned int max, psb_shm_srv_rx_cb cb,
		void *arg);

/*
 * A frame given to cb with ref not NULL may stay where it is, on the client's ring, while a
 * store waits for the rest of its push: cb returns 1 to keep it (0: done with it), and
 * hands ref back here once it added the value up. The ring's tail, which gives the client
 * its buffers back, stops at the first frame kept, so ref is offered only for segments of
 * pushes that fit in half the ring, while less than half is kept: the client has room for
 * the rest of any push. A client that leaves while frames of it are kept has its region
 * unmapped when the last one is back (psb_kv's stage timeout bounds the wait). Every ref
 * kept must be handed back before psb_shm_srv_close.
 */
void psb_shm_srv_release(struct psb_shm_srv *v, void *ref);

/* The slot to answers to ip goes out of (the slot's address), or -1: not a slot's. */
int psb_shm_srv_slot_of(const struct psb_shm_srv *v, uint32_t ip);

/*
 * One psb message (header h, h->seg_len value bytes) to `to`, a slot's client, into the
 * next buffer it gave: 0, -ENOTCONN (no client holds the slot), -ENOBUFS (no free buffer:
 * dropped; the client asks again), -EMSGSIZE. Counted. Clients see it at psb_shm_srv_flush.
 */
int psb_shm_srv_send(struct psb_shm_srv *v, const struct psb_addr *to, const struct psb_hdr *h,
		const void *payload);
/* Publish what was written, and signal the clients that asked for it. */
void psb_shm_srv_flush(struct psb_shm_srv *v);

/*
 * Before sleeping: ask every client to signal its eventfd as it sends (1: frames wait
 * already, do not sleep); after: psb_shm_srv_disarm. psb_shm_srv_fds fills up to max
 * pollfds (the listening socket, each connection's, each link's eventfd) to poll for
 * reading; returns how many.
 */
int psb_shm_srv_arm(struct psb_shm_srv *v);
void psb_shm_srv_disarm(struct psb_shm_srv *v);
struct pollfd;
unsigned int psb_shm_srv_fds(const struct psb_shm_srv *v, struct pollfd *pfd, unsigned int max);
/* pollfds psb_shm_srv_fds may fill at most. */
unsigned int psb_shm_srv_nfds(const struct psb_shm_srv *v);

const struct psb_shm_srv_stats *psb_shm_srv_stats(const struct psb_shm_srv *v);

#ifdef __cplusplus
}
#endif
#endif /* PSB_SHM_SRV_H */
