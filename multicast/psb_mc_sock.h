/*
 * psb's reliable multicast over kernel UDP sockets: how an ordinary process (a training
 * process on a normal host, a test) sends versions to a group or receives them, without
 * DPDK. The sender multicasts to group:port from a socket bound to its own unicast
 * address and port, where the NACKs come back; a receiver joins the group on the interface
 * of its address and sends its NACKs to the sender's address and port, which it learns
 * from the packets it receives. Addresses are IPv4, in host order.
 */
#ifndef PSB_MC_SOCK_H
#define PSB_MC_SOCK_H

#include <stddef.h>
#include <stdint.h>

#include "psb_mc_recv.h"
#include "psb_mc_send.h"

struct psb_mc_sock {
	int fd;
	uint32_t group;
	uint16_t port;
	uint32_t peer;			/* receiver: where its NACKs go; 0: nowhere yet */
	uint16_t peer_port;
	uint32_t from;			/* where the last datagram came from */
	uint16_t from_port;
	uint64_t arrived_ns;		/* when it came, psb_clock_ns (psb_mc_sock_stamp) */
	int stamp;
	uint64_t sent, send_busy, recv_pkts, recv_bytes;
};

/*
 * A sender's socket: bound to local:local_port (NACKs arrive there), multicasting to
 * group:port out of the interface of local, TTL 1. 0, or -errno with why in err.
 */
int psb_mc_sock_sender(struct psb_mc_sock *s, uint32_t local, uint16_t local_port,
		uint32_t group, uint16_t port, char *err, size_t errlen);

/* A receiver's socket: group:port joined on the interface of local. 0, or -errno, err. */
int psb_mc_sock_receiver(struct psb_mc_sock *s, uint32_t local, uint32_t group, uint16_t port,
		char *err, size_t errlen);

/* A unicast socket bound to local:local_port (0: any port). 0, or -errno with why in err. */
int psb_mc_sock_unicast(struct psb_mc_sock *s, uint32_t local, uint16_t local_port, char *err,
		size_t errlen);

void psb_mc_sock_close(struct psb_mc_sock *s);

/* psb_mc_emit_fn for a sender's socket (arg: the struct psb_mc_sock). */
int psb_mc_sock_emit(void *arg, const uint8_t *hdr, unsigned int hlen, const uint8_t *payload,
		unsigned int plen);

/* The same to ip:port: hdr then payload (plen 0: none), 0 or -EAGAIN. */
int psb_mc_sock_emit_to(struct psb_mc_sock *s, uint32_t ip, uint16_t port, const uint8_t *hdr,
		unsigned int hlen, const uint8_t *payload, unsigned int plen);

/*
 * psb_mc_nack_fn for a receiver's socket: to peer (none yet: dropped). The caller sets peer
 * to from once a datagram proved to be of the session its receiver follows, so that a
 * stray or forged datagram does not redirect the NACKs.
 */
void psb_mc_sock_nack(void *arg, const uint8_t *buf, size_t len);

/*
 * Have the kernel stamp each datagram as it comes (recv's arrived_ns): a process that is
 * busy for a while (making a version) still knows when each came. 0, or -errno.
 */
int psb_mc_sock_stamp(struct psb_mc_sock *s);

/*
 * One datagram, waiting up to timeout_ms (0: not at all): its length, 0 when none came,
 * -errno on error; from and from_port say where it came from, arrived_ns when (with
 * psb_mc_sock_stamp: the kernel's stamp; without: now).
 */
long psb_mc_sock_recv(struct psb_mc_sock *s, uint8_t *buf, size_t len, int timeout_ms);

#endif /* PSB_MC_SOCK_H */
