/* psb's reliable multicast over kernel UDP sockets (psb_mc_sock.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "psb_clock.h"
#include "psb_mc_sock.h"

static int
sock_fail(struct psb_mc_sock *s, int e, char *err, size_t errlen, const char *what)
{
	if (err != NULL)
		snprintf(err, errlen, "%s: %s", what, strerror(e));
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	return -e;
}

static struct sockaddr_in
sin_of(uint32_t ip, uint16_t port)
{
	struct sockaddr_in a;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(ip);
	a.sin_port = htons(port);
	return a;
}

/*
 * A UDP socket for group:port, bound to bind_ip:bind_port (what says which, for errors),
 * with large buffers: 0, or -errno with why in err.
 */
static int
sock_open(struct psb_mc_sock *s, uint32_t group, uint16_t port, uint32_t bind_ip,
		uint16_t bind_port, const char *what, char *err, size_t errlen)
{
	struct sockaddr_in a = sin_of(bind_ip, bind_port);
	int one = 1, buf = 8 << 20;

	memset(s, 0, sizeof(*s));
	s->group = group;
	s->port = port;
	s->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s->fd < 0)
		return sock_fail(s, errno, err, errlen, "socket");
	if (group != 0 && !IN_MULTICAST(group))
		return sock_fail(s, EINVAL, err, errlen, "the group is not a multicast address");
	setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* bursts of a paced sender: a larger buffer, as far as the kernel allows */
	setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	setsockopt(s->fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	if (bind(s->fd, (struct sockaddr *)&a, sizeof(a)) != 0)
		return sock_fail(s, errno, err, errlen, what);
	return 0;
}

int
psb_mc_sock_sender(struct psb_mc_sock *s, uint32_t local, uint16_t local_port,
		uint32_t group, uint16_t port, char *err, size_t errlen)
{
	struct in_addr ifa = { .s_addr = htonl(local) };
	unsigned char ttl = 1, loop = 1;
	int rc = sock_open(s, group, port, local, local_port, "bind to the sender's address", err,
			   errlen);

	if (rc != 0)
		return rc;
	if (setsockopt(s->fd, IPPROTO_IP, IP_MULTICAST_IF, &ifa, sizeof(ifa)) != 0)
		return sock_fail(s, errno, err, errlen, "IP_MULTICAST_IF");
	if (setsockopt(s->fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof(ttl)) != 0 ||
	    setsockopt(s->fd, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof(loop)) != 0)
		return sock_fail(s, errno, err, errlen, "IP_MULTICAST_TTL/LOOP");
	return 0;
}

int
psb_mc_sock_receiver(struct psb_mc_sock *s, uint32_t local, uint32_t group, uint16_t port,
		char *err, size_t errlen)
{
	struct ip_mreq mr = { .imr_multiaddr.s_addr = htonl(group),
			      .imr_interface.s_addr = htonl(local) };
	/* bound to the group: unicast to this port from elsewhere does not arrive here */
	int rc = sock_open(s, group, port, group, port, "bind to the group", err, errlen);

	if (rc != 0)
		return rc;
	if (setsockopt(s->fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr)) != 0)
		return sock_fail(s, errno, err, errlen, "IP_ADD_MEMBERSHIP");
	return 0;
}

int
psb_mc_sock_unicast(struct psb_mc_sock *s, uint32_t local, uint16_t local_port, char *err,
		size_t errlen)
{
	return sock_open(s, 0, 0, local, local_port, "bind to the local address", err, errlen);
}

int
psb_mc_sock_stamp(struct psb_mc_sock *s)
{
	int one = 1;

	if (setsockopt(s->fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) != 0)
		return -errno;
	s->stamp = 1;
	return 0;
}

void
psb_mc_sock_close(struct psb_mc_sock *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

int
psb_mc_sock_emit(void *arg, const uint8_t *hdr, unsigned int hlen, const uint8_t *payload,
		unsigned int plen)
{
	struct psb_mc_sock *s = arg;

	return psb_mc_sock_emit_to(s, s->group, s->port, hdr, hlen, payload, plen);
}

int
psb_mc_sock_emit_to(struct psb_mc_sock *s, uint32_t ip, uint16_t port, const uint8_t *hdr,
		unsigned int hlen, const uint8_t *payload, unsigned int plen)
{
	struct sockaddr_in to = sin_of(ip, port);
	struct iovec iov[2] = {
		{ .iov_base = (void *)(uintptr_t)hdr, .iov_len = hlen },
		{ .iov_base = (void *)(uintptr_t)payload, .iov_len = plen },
	};
	struct msghdr m = { .msg_name = &to, .msg_namelen = sizeof(to), .msg_iov = iov,
			    .msg_iovlen = plen != 0 ? 2 : 1 };

	if (sendmsg(s->fd, &m, MSG_DONTWAIT) < 0) {
		s->send_busy++;
		return -EAGAIN;		/* offered again later (the sender counts it too) */
	}
	s->sent++;
	return 0;
}

void
psb_mc_sock_nack(void *arg, const uint8_t *buf, size_t len)
{
	struct psb_mc_sock *s = arg;
	struct sockaddr_in to = sin_of(s->peer, s->peer_port);

	if (s->peer == 0)
		return;
	if (sendto(s->fd, buf, len, MSG_DONTWAIT, (struct sockaddr *)&to, sizeof(to)) < 0)
		s->send_busy++;
	else
		s->sent++;
}

long
psb_mc_sock_recv(struct psb_mc_sock *s, uint8_t *buf, size_t len, int timeout_ms)
{
	struct sockaddr_in from;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	union { char b[CMSG_SPACE(sizeof(struct timespec))]; struct cmsghdr align; } ctl;
	struct msghdr mh = { .msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov,
		.msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b) };
	struct cmsghdr *c;
	uint64_t real;
	ssize_t n;

	if (timeout_ms > 0) {
		struct pollfd p = { .fd = s->fd, .events = POLLIN };

		if (poll(&p, 1, timeout_ms) < 0)
			return errno == EINTR ? 0 : -errno;
	}
	n = recvmsg(s->fd, &mh, MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -errno;
	/*
	 * The kernel's stamp is on the wall clock: as long ago on psb's, the wall clock read
	 * first (an error of the reads' order makes it later, never earlier than it came).
	 */
	real = s->stamp ? psb_clock_read_ns(CLOCK_REALTIME) : 0;
	s->arrived_ns = psb_clock_ns();
	for (c = CMSG_FIRSTHDR(&mh); s->stamp && c != NULL; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
			struct timespec at;
			uint64_t then, ago;

			memcpy(&at, CMSG_DATA(c), sizeof(at));
			then = (uint64_t)at.tv_sec * 1000000000ull + (uint64_t)at.tv_nsec;
			ago = real > then ? real - then : 0;
			if (ago < s->arrived_ns)
				s->arrived_ns -= ago;
		}
	s->recv_pkts++;
	s->recv_bytes += (uint64_t)n;
	s->from = ntohl(from.sin_addr.s_addr);
	s->from_port = ntohs(from.sin_port);
	return (long)n;
}
