/* Batched UDP socket I/O (sendmmsg/recvmmsg) shared by the client library and psb-ksrv. */
#ifndef PSB_UDP_H
#define PSB_UDP_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "psb_proto.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PSB_UDP_BATCH		64	/* datagrams per sendmmsg / recvmmsg */
/* A receive slot larger than any datagram psb sends, so that truncation shows. */
#define PSB_UDP_RX_SLOT		(PSB_HDR_LEN + PSB_MAX_UDP_PAYLOAD + 64)
/* The most value bytes one datagram carries (a multiple of 4). */
#define PSB_UDP_MAX_SEG		((PSB_MAX_UDP_PAYLOAD - PSB_HDR_LEN) & ~3u)

/* A socket's batches: transmit entries [txhead, ntx) wait for sendmmsg. */
struct psb_udp_io {
	unsigned int ntx, txhead;
	size_t txslot;
	uint8_t *txbuf;
	struct mmsghdr txm[PSB_UDP_BATCH];
	struct iovec txv[PSB_UDP_BATCH];
	struct sockaddr_in txa[PSB_UDP_BATCH];
	uint8_t *rxbuf;
	struct mmsghdr rxm[PSB_UDP_BATCH];
	struct iovec rxv[PSB_UDP_BATCH];
	struct sockaddr_in rxa[PSB_UDP_BATCH];
};

/* Buffers for messages of up to seg_size value bytes; 0 or -ENOMEM (then free it). */
int psb_udp_io_init(struct psb_udp_io *io, uint16_t seg_size);
void psb_udp_io_free(struct psb_udp_io *io);

/*
 * Copy a message (header and h->seg_len payload bytes) into the next free transmit slot,
 * addressed to `to`; the caller makes room first (ntx < PSB_UDP_BATCH).
 */
void psb_udp_queue(struct psb_udp_io *io, const struct psb_hdr *h, const void *payload,
		const struct sockaddr_in *to);

/* sendmmsg sent the first n waiting messages: skips them; returns their bytes. */
uint64_t psb_udp_sent(struct psb_udp_io *io, unsigned int n);

/* One recvmmsg without waiting; returns the datagrams read into the receive batch. */
int psb_udp_recv(struct psb_udp_io *io, int fd);

/* Datagram i of the last psb_udp_recv: where it is, and whether it was cut short. */
static inline const uint8_t *
psb_udp_rx_data(const struct psb_udp_io *io, unsigned int i)
{
	return io->rxbuf + (size_t)i * PSB_UDP_RX_SLOT;
}

static inline int
psb_udp_rx_truncated(const struct psb_udp_io *io, unsigned int i)
{
	return (io->rxm[i].msg_hdr.msg_flags & MSG_TRUNC) != 0;
}

void psb_udp_sa(struct sockaddr_in *sa, uint32_t ip, uint16_t port);

/*
 * A non-blocking UDP socket bound to ip:port (0: any), with sockbuf bytes of socket
 * buffers asked for, that never fragments; *bound is the port it got. Returns the socket,
 * or -1 with the reason in err.
 */
int psb_udp_open(uint32_t ip, uint16_t port, uint32_t sockbuf, uint16_t *bound, char *err,
		size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* PSB_UDP_H */
