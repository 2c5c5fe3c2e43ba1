/*
 * Shared-memory transport of the client library: a memif client link to a psb server on
 * the same host (psb --shm-clients), carrying the same psb datagrams the UDP path sends,
 * in Ethernet/IPv4/UDP frames. No DPDK: the memif protocol is psb_memif.h.
 *
 * The client makes the memory: one region (a sealed memfd) holding both rings and their
 * buffers, which psb maps. Frames are built straight in the ring's buffers and read where
 * psb wrote them; the only copies are the value into and out of them.
 */
#ifndef PSB_SHM_H
#define PSB_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "psb_proto.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PSB_SHM_LOG2_RING	10		/* 1024 frames to the server */
/*
 * 8192 frames from it: psb answers a window of requests at once, and what does not fit is
 * dropped there and asked again after a timeout (8 MiB in flight is 5860 frames at MTU 1500).
 * The buffers are touched as psb fills them.
 */
#define PSB_SHM_LOG2_RX_RING	13
#define PSB_SHM_BUF_SIZE	9216		/* one jumbo frame a buffer */
#define PSB_SHM_CONNECT_NS	(2ull * 1000 * 1000 * 1000)	/* handshake of one slot */

/* What a link counted. The bad_* are frames or ring moves psb's side got wrong. */
struct psb_shm_link_stats {
	uint64_t tx_frames, tx_bytes;
	uint64_t rx_frames, rx_bytes;
	uint64_t ring_full;		/* sends that waited: the ring to the server was full */
	uint64_t bad_index;		/* a ring counter moved beyond what was given */
	uint64_t bad_desc;		/* a descriptor named another buffer than its slot's */
	uint64_t bad_length;		/* a descriptor's length 0 or beyond its buffer */
	uint64_t bad_chain;		/* a frame in chained buffers */
	uint64_t bad_frame;		/* not a psb datagram from the server to this client */
	uint64_t arp;			/* ARP frames answered or learnt from */
};

struct psb_shm;

struct psb_shm_cfg {
	const char *path;		/* the server's socket */
	uint32_t slots;			/* interface ids tried, 0..slots-1 (0: PSB_SHM_MAX_SLOTS) */
	uint64_t timeout_ns;		/* one slot's handshake at most (0: PSB_SHM_CONNECT_NS) */
	uint32_t server_ip;		/* the server's data address (host order) */
	uint16_t server_port;
	uint16_t local_port;		/* the client's UDP port: replies come to it */
};

/*
 * Connect to the server's socket as a memif client, trying slot ids 0, 1, ... until one
 * takes it. 0 with *out set; or -ENOENT (no socket there), -ECONNREFUSED (nothing listens
 * on it), -EBUSY (every slot taken), -ETIMEDOUT (the server did not answer the handshake
 * within the timeout), -EPROTO (it spoke something else), -ENOMEM, with err saying which.
 */
int psb_shm_open(const struct psb_shm_cfg *cfg, struct psb_shm **out, char *err, size_t errlen);

/* Say DISCONNECT, close, unmap. */
void psb_shm_close(struct psb_shm *s);

/* The slot id the link took. */
unsigned int psb_shm_slot(const struct psb_shm *s);

/* 1 while the link is up; once the server said DISCONNECT or closed the socket, 0 for good. */
int psb_shm_up(const struct psb_shm *s);

/* The reason the link went down ("" while up). */
const char *psb_shm_down_reason(const struct psb_shm *s);

/*
 * Put one psb message (header h, h->seg_len payload bytes) on the ring to the server:
 * 0, -ENOBUFS (ring full: try again after a poll), -ENOTCONN (link down), -EMSGSIZE.
 * Frames go out at psb_shm_flush (or when the ring fills).
 */
int psb_shm_send(struct psb_shm *s, const struct psb_hdr *h, const void *payload);
void psb_shm_flush(struct psb_shm *s);

/*
 * Receive up to max psb datagrams: cb gets each one's UDP payload where it lies in the
 * shared buffer (valid during the call only). ARP is answered here and other frames are
 * dropped, counted. Returns the frames taken off the ring.
 */
typedef void (*psb_shm_rx_cb)(void *arg, const uint8_t *dgram, size_t len);
unsigned int psb_shm_rx(struct psb_shm *s, unsigned int max, psb_shm_rx_cb cb, void *arg);

/*
 * Look at the control socket (without waiting): a DISCONNECT or the socket closing takes
 * the link down. Returns psb_shm_up.
 */
int psb_shm_check(struct psb_shm *s);

/*
 * Before sleeping: ask the server to signal the eventfd when it sends (1: frames wait
 * already, do not sleep); after: psb_shm_disarm. fds[0] the eventfd, fds[1] the control
 * socket, to poll for reading.
 */
int psb_shm_arm(struct psb_shm *s);
void psb_shm_disarm(struct psb_shm *s);
void psb_shm_fds(const struct psb_shm *s, int fds[2]);

const struct psb_shm_link_stats *psb_shm_stats(const struct psb_shm *s);

/*
 * The socket of a server's slots: PSB_SHM_DIR, or the directory psb run by this user
 * uses (/var/run/psb/shm for root), then "IP-PORT.sock". 0 or -ENAMETOOLONG.
 */
int psb_shm_sock_path(uint32_t ip, uint16_t port, char *out, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* PSB_SHM_H */
