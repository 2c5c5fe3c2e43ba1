/* Batched UDP socket I/O (sendmmsg/recvmmsg) shared by the client library and psb-ksrv. */
#ifndef PSB_UDP_H
#define PSB_UDP_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>

/*
 * Point n message headers at n slots of slot bytes in buf, each with its own
 * address. For receiving, iov_len is the slot size; for sending it is set
 * per message when the message is queued.
 */
static inline void
psb_udp_mmsg_init(struct mmsghdr *m, struct iovec *v, struct sockaddr_in *a, uint8_t *buf,
		size_t slot, unsigned int n, int rx)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		v[i].iov_base = buf + (size_t)i * slot;
		v[i].iov_len = rx ? slot : 0;
		m[i].msg_hdr.msg_iov = &v[i];
		m[i].msg_hdr.msg_iovlen = 1;
		m[i].msg_hdr.msg_name = &a[i];
		m[i].msg_hdr.msg_namelen = sizeof(a[i]);
	}
}

#endif /* PSB_UDP_H */
