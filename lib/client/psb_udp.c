/* Batched UDP socket I/O of the client library and psb-ksrv. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "psb_udp.h"

/*
 * Point n message headers at n slots of slot bytes in buf, each with its own address. For
 * receiving, iov_len is the slot size; for sending it is set per message when it is queued.
 */
static void
mmsg_init(struct mmsghdr *m, struct iovec *v, struct sockaddr_in *a, uint8_t *buf, size_t slot,
		int rx)
{
	unsigned int i;

	for (i = 0; i < PSB_UDP_BATCH; i++) {
		v[i].iov_base = buf + (size_t)i * slot;
		v[i].iov_len = rx ? slot : 0;
		m[i].msg_hdr.msg_iov = &v[i];
		m[i].msg_hdr.msg_iovlen = 1;
		m[i].msg_hdr.msg_name = &a[i];
		m[i].msg_hdr.msg_namelen = sizeof(a[i]);
	}
}

int
psb_udp_io_init(struct psb_udp_io *io, uint16_t seg_size)
{
	memset(io, 0, sizeof(*io));
	io->txslot = PSB_HDR_LEN + (size_t)seg_size;
	io->txbuf = malloc(PSB_UDP_BATCH * io->txslot);
	io->rxbuf = malloc((size_t)PSB_UDP_BATCH * PSB_UDP_RX_SLOT);
	if (io->txbuf == NULL || io->rxbuf == NULL)
		return -ENOMEM;
	mmsg_init(io->txm, io->txv, io->txa, io->txbuf, io->txslot, 0);
	mmsg_init(io->rxm, io->rxv, io->rxa, io->rxbuf, PSB_UDP_RX_SLOT, 1);
	return 0;
}

void
psb_udp_io_free(struct psb_udp_io *io)
{
	free(io->txbuf);
	free(io->rxbuf);
	io->txbuf = io->rxbuf = NULL;
}

void
psb_udp_queue(struct psb_udp_io *io, const struct psb_hdr *h, const void *payload,
		const struct sockaddr_in *to)
{
	unsigned int i = io->ntx++;
	uint8_t *p = io->txbuf + (size_t)i * io->txslot;

	psb_hdr_encode(p, h);
	if (h->seg_len != 0)
		memcpy(p + PSB_HDR_LEN, payload, h->seg_len);
	io->txv[i].iov_len = PSB_HDR_LEN + (size_t)h->seg_len;
	io->txa[i] = *to;
}

uint64_t
psb_udp_sent(struct psb_udp_io *io, unsigned int n)
{
	uint64_t bytes = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		bytes += io->txv[io->txhead + i].iov_len;
	io->txhead += n;
	return bytes;
}

int
psb_udp_recv(struct psb_udp_io *io, int fd)
{
	unsigned int i;

	/* recvmmsg wrote the last batch's address lengths and flags over these */
	for (i = 0; i < PSB_UDP_BATCH; i++) {
		io->rxm[i].msg_hdr.msg_namelen = sizeof(io->rxa[i]);
		io->rxm[i].msg_hdr.msg_flags = 0;
	}
	return recvmmsg(fd, io->rxm, PSB_UDP_BATCH, MSG_DONTWAIT, NULL);
}

void
psb_udp_sa(struct sockaddr_in *sa, uint32_t ip, uint16_t port)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(ip);
	sa->sin_port = htons(port);
}

/* Ask for big socket buffers: a large value arrives as thousands of datagrams at once. */
static void
set_sockbuf(int fd, uint32_t bytes)
{
	int v = bytes > INT32_MAX ? INT32_MAX : (int)bytes;

	/* The FORCE variants pass rmem_max/wmem_max but need CAP_NET_ADMIN. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)) != 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)) != 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
}

int
psb_udp_open(uint32_t ip, uint16_t port, uint32_t sockbuf, uint16_t *bound, char *err,
		size_t errlen)
{
	struct sockaddr_in sa;
	socklen_t alen = sizeof(sa);
	char ipbuf[16];
	int fd, v;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create a UDP socket: %s", strerror(errno));
		return -1;
	}
	set_sockbuf(fd, sockbuf);
	/* psb drops IP fragments: fail loudly (EMSGSIZE) rather than fragment. */
	v = IP_PMTUDISC_DO;
	setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &v, sizeof(v));
	psb_udp_sa(&sa, ip, port);
	if (bind(fd, (const struct sockaddr *)&sa, sizeof(sa)) != 0) {
		snprintf(err, errlen, "cannot bind the UDP socket to %s:%u: %s",
			psb_ip_str(ip, ipbuf), port, strerror(errno));
		close(fd);
		return -1;
	}
	if (getsockname(fd, (struct sockaddr *)&sa, &alen) != 0) {
		snprintf(err, errlen, "cannot read the UDP socket's address: %s", strerror(errno));
		close(fd);
		return -1;
	}
	*bound = ntohs(sa.sin_port);
	return fd;
}
