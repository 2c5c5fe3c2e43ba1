/* The shared-memory transport: a memif client link to a psb server on this host (psb_shm.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "psb_err.h"
#include "psb_memif.h"
#include "psb_shm.h"

#define TX_PUBLISH	32		/* frames written before head is moved at the latest */
#define DRAIN_NS	(20ull * 1000 * 1000)	/* closing: psb reads what it was given */
#define CLIENT_NAME	"psb-client"

/* A descriptor as it lies in the ring (16 bytes, naturally aligned). */
struct ring_desc {
	uint16_t flags;
	uint16_t region;
	uint32_t length;
	uint32_t offset;
	uint32_t metadata;
};

struct ring {
	uint8_t *hdr;
	struct ring_desc *desc;
	uint32_t off;			/* the ring's offset in the region */
	uint32_t buf_off;		/* buffer 0's offset in the region */
};

struct psb_shm {
	int sock;			/* control socket, -1: none */
	int efd[2];			/* eventfds: client-to-server, server-to-client ring */
	int memfd;
	uint8_t *base;
	size_t size;
	uint8_t log2;
	uint8_t rx_log2;		/* the ring to the client: deeper, psb sends in bursts */
	uint16_t nslots, mask;		/* of the ring to the server */
	uint16_t rx_nslots, rx_mask;
	struct ring c2s, s2c;
	uint16_t c2s_head;		/* next slot the client fills */
	uint16_t c2s_pub;		/* head as psb sees it */
	uint16_t c2s_tail;		/* psb's tail as last read */
	uint16_t s2c_head;		/* buffers given to psb */
	uint16_t s2c_tail;		/* frames taken */
	unsigned int slot;
	int up;
	char down[160];
	char path[108];
	struct psb_addr me, srv;
	struct psb_parse_cfg parse;
	struct psb_shm_link_stats st;
};

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint16_t *
ring_head(const struct ring *r)
{
	return (uint16_t *)(void *)(r->hdr + PSB_MEMIF_RING_HEAD_OFF);
}

static uint16_t *
ring_tail(const struct ring *r)
{
	return (uint16_t *)(void *)(r->hdr + PSB_MEMIF_RING_TAIL_OFF);
}

static uint16_t *
ring_flags(const struct ring *r)
{
	return (uint16_t *)(void *)(r->hdr + 4);
}

static uint8_t *
slot_buf(const struct psb_shm *s, const struct ring *r, uint16_t slot)
{
	return s->base + r->buf_off + (size_t)slot * PSB_SHM_BUF_SIZE;
}

/* --- the region --- */

static int
region_make(struct psb_shm *s, char *err, size_t errlen)
{
	size_t ring = (psb_memif_ring_bytes(s->log2) + 63) & ~(size_t)63;
	size_t rx_ring = (psb_memif_ring_bytes(s->rx_log2) + 63) & ~(size_t)63;
	size_t bufs = (size_t)s->nslots * PSB_SHM_BUF_SIZE;

	s->c2s.off = 0;
	s->s2c.off = (uint32_t)ring;
	s->c2s.buf_off = (uint32_t)((ring + rx_ring + 4095) & ~(size_t)4095);
	s->s2c.buf_off = (uint32_t)(s->c2s.buf_off + bufs);
	s->size = s->s2c.buf_off + (size_t)s->rx_nslots * PSB_SHM_BUF_SIZE;
	s->memfd = memfd_create("psb-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (s->memfd < 0) {
		psb_set_err(err, errlen, "memfd_create: %s", strerror(errno));
		return -errno;
	}
	/* psb maps it: sealed, it cannot shrink it under this process (SIGBUS) */
	if (ftruncate(s->memfd, (off_t)s->size) != 0 ||
	    fcntl(s->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
		psb_set_err(err, errlen, "cannot size the shared region (%zu bytes): %s", s->size,
			strerror(errno));
		return -errno;
	}
	s->base = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, s->memfd, 0);
	if (s->base == MAP_FAILED) {
		s->base = NULL;
		psb_set_err(err, errlen, "cannot map the shared region (%zu bytes): %s", s->size,
			strerror(errno));
		return -ENOMEM;
	}
	s->c2s.hdr = s->base + s->c2s.off;
	s->s2c.hdr = s->base + s->s2c.off;
	s->c2s.desc = (struct ring_desc *)(void *)(s->c2s.hdr + PSB_MEMIF_RING_DESC_OFF);
	s->s2c.desc = (struct ring_desc *)(void *)(s->s2c.hdr + PSB_MEMIF_RING_DESC_OFF);
	return 0;
}

/* Before CONNECT: psb checks the cookies then and sets head and tail to 0 itself. */
static void
rings_reset(struct psb_shm *s)
{
	const struct ring *r[2] = { &s->c2s, &s->s2c };
	unsigned int i;

	for (i = 0; i < 2; i++) {
		memset(r[i]->hdr, 0, PSB_MEMIF_RING_DESC_OFF);
		memcpy(r[i]->hdr, &(uint32_t){ PSB_MEMIF_COOKIE }, 4);
		/* psb polls: neither side signals, until the client arms before sleeping */
		*ring_flags(r[i]) = PSB_MEMIF_RING_MASK_INT;
	}
	s->c2s_head = s->c2s_pub = s->c2s_tail = 0;
	s->s2c_head = s->s2c_tail = 0;
}

/* --- the control socket --- */

static int
ctl_send(struct psb_shm *s, const struct psb_memif_msg *m, int fd)
{
	uint8_t buf[PSB_MEMIF_MSG_LEN];
	char ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr mh;
	struct cmsghdr *cm;

	if (psb_memif_msg_encode(buf, m) != 0)
		return -EINVAL;
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (fd >= 0) {
		memset(ctl, 0, sizeof(ctl));
		mh.msg_control = ctl;
		mh.msg_controllen = sizeof(ctl);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	if (sendmsg(s->sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(buf))
		return errno != 0 ? -errno : -EIO;
	return 0;
}

/*
 * One message from the server, waiting until deadline (0: not at all). Descriptors it
 * passes are closed: a memif server passes none. 0, -EAGAIN (none yet), -ETIMEDOUT,
 * -ECONNRESET (closed), -EMSGSIZE / -EPROTO (not a message).
 */
static int
ctl_recv(struct psb_shm *s, struct psb_memif_msg *m, uint64_t deadline)
{
	uint8_t buf[PSB_MEMIF_MSG_LEN + 1];
	char ctl[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct pollfd pfd = { .fd = s->sock, .events = POLLIN };
	struct msghdr mh;
	uint64_t now;
	ssize_t n;

	for (;;) {
		now = now_ns();
		if (deadline != 0) {
			if (now >= deadline)
				return -ETIMEDOUT;
			if (poll(&pfd, 1, (int)((deadline - now) / 1000000 + 1)) == 0)
				continue;
		}
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = ctl;
		mh.msg_controllen = sizeof(ctl);
		n = recvmsg(s->sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (deadline == 0)
				return -EAGAIN;
			continue;
		}
		break;
	}
	/* the server passes no descriptor to a client: any it sent goes */
	if (n >= 0)
		psb_memif_take_fds(&mh, NULL, 0);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ECONNRESET;
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		return -EMSGSIZE;
	return psb_memif_msg_decode(m, buf, (size_t)n);
}

/* A reply expected: ACK (or CONNECTED); a DISCONNECT's reason into why. */
static int
ctl_expect(struct psb_shm *s, uint16_t type, uint64_t deadline, char *why, size_t whylen)
{
	struct psb_memif_msg m;
	int rc = ctl_recv(s, &m, deadline);

	if (rc != 0)
		return rc;
	if (m.type == type)
		return 0;
	if (m.type == PSB_MEMIF_MSG_DISCONNECT) {
		snprintf(why, whylen, "%s", m.u.disconnect.reason);
		return -ECONNABORTED;
	}
	snprintf(why, whylen, "%s where %s was due", psb_memif_msg_name(m.type),
		psb_memif_msg_name(type));
	return -EPROTO;
}

static void
sock_close(struct psb_shm *s)
{
	if (s->sock >= 0)
		close(s->sock);
	s->sock = -1;
}

/*
 * The handshake at slot id: HELLO, INIT, ADD_REGION, ADD_RING both ways, CONNECT. 0;
 * -EBUSY (the slot is taken, or there is no such slot: *last set), or another error.
 */
static int
try_slot(struct psb_shm *s, unsigned int id, uint64_t timeout_ns, int *last, char *err,
		size_t errlen)
{
	struct sockaddr_un sa;
	struct psb_memif_msg m;
	uint64_t deadline = now_ns() + timeout_ns;
	char why[PSB_MEMIF_DISC_LEN + 64] = "";
	const char *bad;
	uint8_t log2 = s->rx_log2;
	int rc;

	s->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s->sock < 0) {
		psb_set_err(err, errlen, "cannot create a unix socket: %s", strerror(errno));
		return -errno;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", s->path);
	if (connect(s->sock, (const struct sockaddr *)&sa, sizeof(sa)) != 0) {
		rc = -errno;
		psb_set_err(err, errlen, "%s: %s", s->path, strerror(errno));
		goto fail;
	}
	rc = ctl_recv(s, &m, deadline);
	if (rc == 0 && psb_memif_hello_check(&m, &log2, &bad) != 0) {
		psb_set_err(err, errlen, "%s: %s", s->path, bad);
		rc = -EPROTO;
		goto fail;
	}
	if (rc == 0 && log2 != s->rx_log2) {
		psb_set_err(err, errlen, "%s: the server takes rings of 2^%u at most, 2^%u needed",
			s->path, log2, s->rx_log2);
		rc = -EPROTO;
		goto fail;
	}
	if (rc != 0)
		goto said;
	memset(&m, 0, sizeof(m));
	m.type = PSB_MEMIF_MSG_INIT;
	m.u.init.version = PSB_MEMIF_VERSION;
	m.u.init.id = id;
	snprintf(m.u.init.name, sizeof(m.u.init.name), CLIENT_NAME);
	rc = ctl_send(s, &m, -1);
	if (rc == 0)
		rc = ctl_expect(s, PSB_MEMIF_MSG_ACK, deadline, why, sizeof(why));
	if (rc == -ECONNABORTED) {
		/* DPDK's words: "Already connected", "ID not found" (past the last slot) */
		*last = strstr(why, "not found") != NULL;
		psb_set_err(err, errlen, "%s: slot %u: %s", s->path, id, why);
		rc = -EBUSY;
		goto fail;
	}
	if (rc != 0)
		goto said;
	memset(&m, 0, sizeof(m));
	m.type = PSB_MEMIF_MSG_ADD_REGION;
	m.u.add_region.index = 0;
	m.u.add_region.size = s->size;
	rc = ctl_send(s, &m, s->memfd);
	if (rc == 0)
		rc = ctl_expect(s, PSB_MEMIF_MSG_ACK, deadline, why, sizeof(why));
	if (rc != 0)
		goto said;
	rings_reset(s);
	memset(&m, 0, sizeof(m));
	m.type = PSB_MEMIF_MSG_ADD_RING;
	m.u.add_ring.flags = PSB_MEMIF_RING_FLAG_C2S;
	m.u.add_ring.offset = s->c2s.off;
	m.u.add_ring.log2_ring_size = s->log2;
	rc = ctl_send(s, &m, s->efd[0]);
	if (rc == 0)
		rc = ctl_expect(s, PSB_MEMIF_MSG_ACK, deadline, why, sizeof(why));
	if (rc != 0)
		goto said;
	m.u.add_ring.flags = 0;
	m.u.add_ring.offset = s->s2c.off;
	m.u.add_ring.log2_ring_size = s->rx_log2;
	rc = ctl_send(s, &m, s->efd[1]);
	if (rc == 0)
		rc = ctl_expect(s, PSB_MEMIF_MSG_ACK, deadline, why, sizeof(why));
	if (rc != 0)
		goto said;
	memset(&m, 0, sizeof(m));
	m.type = PSB_MEMIF_MSG_CONNECT;
	snprintf(m.u.connect.if_name, sizeof(m.u.connect.if_name), CLIENT_NAME);
	rc = ctl_send(s, &m, -1);
	if (rc == 0)
		rc = ctl_expect(s, PSB_MEMIF_MSG_CONNECTED, deadline, why, sizeof(why));
	if (rc == 0)
		return 0;
said:
	if (rc == -ETIMEDOUT)
		psb_set_err(err, errlen, "%s: the psb server did not answer the memif handshake of slot "
			"%u within %.1f s", s->path, id, (double)timeout_ns / 1e9);
	else if (rc == -ECONNABORTED || rc == -EPROTO)
		psb_set_err(err, errlen, "%s: slot %u: the server refused: %s", s->path, id, why);
	else if (rc == -ECONNRESET)
		psb_set_err(err, errlen, "%s: slot %u: the server closed the socket during the handshake",
			s->path, id);
	else
		psb_set_err(err, errlen, "%s: slot %u: %s", s->path, id, strerror(-rc));
	if (rc == -ECONNABORTED || rc == -ECONNRESET || rc == -EMSGSIZE)
		rc = -EPROTO;
fail:
	sock_close(s);
	return rc;
}

/* --- frames --- */

/* A free slot of the ring to the server, or NULL (full: what waits is published). */
static uint8_t *
tx_slot(struct psb_shm *s, uint16_t *slot)
{
	if ((uint16_t)(s->c2s_head - s->c2s_tail) >= s->nslots) {
		uint16_t tail = __atomic_load_n(ring_tail(&s->c2s), __ATOMIC_ACQUIRE);

		if (psb_memif_advance(s->c2s_tail, tail, (uint16_t)(s->c2s_pub - s->c2s_tail)) < 0) {
			s->st.bad_index++;
			s->up = 0;
			snprintf(s->down, sizeof(s->down), "the server moved the tail of the ring "
				 "to it beyond its head");
			return NULL;
		}
		s->c2s_tail = tail;
		if ((uint16_t)(s->c2s_head - s->c2s_tail) >= s->nslots) {
			psb_shm_flush(s);
			return NULL;
		}
	}
	*slot = s->c2s_head & s->mask;
	return slot_buf(s, &s->c2s, *slot);
}

static void
tx_commit(struct psb_shm *s, uint16_t slot, uint32_t len)
{
	struct ring_desc *d = &s->c2s.desc[slot];

	d->flags = 0;
	d->region = 0;
	d->offset = s->c2s.buf_off + (uint32_t)slot * PSB_SHM_BUF_SIZE;
	d->length = len;
	d->metadata = 0;
	s->c2s_head++;
	s->st.tx_frames++;
	s->st.tx_bytes += len;
	if ((uint16_t)(s->c2s_head - s->c2s_pub) >= TX_PUBLISH)
		psb_shm_flush(s);
}

void
psb_shm_flush(struct psb_shm *s)
{
	uint64_t one = 1;

	if (s->c2s_pub == s->c2s_head)
		return;
	__atomic_store_n(ring_head(&s->c2s), s->c2s_head, __ATOMIC_RELEASE);
	s->c2s_pub = s->c2s_head;
	/*
	 * A server that sleeps clears the ring's MASK_INT first, then looks at head once more
	 * (psb-ksrv does; DPDK's polls with the flag set): the head moved before the flags are
	 * read, so one of the two sees the other.
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!(__atomic_load_n(ring_flags(&s->c2s), __ATOMIC_RELAXED) & PSB_MEMIF_RING_MASK_INT))
		(void)!write(s->efd[0], &one, sizeof(one));
}

int
psb_shm_send(struct psb_shm *s, const struct psb_hdr *h, const void *payload)
{
	uint32_t len = PSB_FRAME_HLEN + (uint32_t)h->seg_len;
	uint16_t slot;
	uint8_t *p;

	if (!s->up)
		return -ENOTCONN;
	if (len > PSB_SHM_BUF_SIZE || len > PSB_ETH_HLEN + 9000)
		return -EMSGSIZE;
	p = tx_slot(s, &slot);
	if (p == NULL) {
		s->st.ring_full++;
		return s->up ? -ENOBUFS : -ENOTCONN;
	}
	/* built where psb reads it: the value's one copy */
	psb_frame_write_headers(p, &s->me, &s->srv, h, h->seg_len);
	if (h->seg_len != 0)
		memcpy(p + PSB_FRAME_HLEN, payload, h->seg_len);
	tx_commit(s, slot, len);
	return 0;
}

/* An ARP frame of len bytes (request for the server, or a reply) onto the ring. */
static void
tx_arp(struct psb_shm *s, const uint8_t *req, size_t req_len)
{
	uint16_t slot;
	uint8_t *p = tx_slot(s, &slot);
	size_t len;

	if (p == NULL)
		return;
	memset(p, 0, 60);
	if (req == NULL)
		len = psb_arp_request(p, s->me.mac, s->me.ip, s->srv.ip);
	else
		len = psb_arp_reply(p, req, req_len, s->me.mac, s->me.ip);
	if (len == 0)
		return;
	if (len < 60)
		len = 60;
	tx_commit(s, slot, (uint32_t)len);
	psb_shm_flush(s);
}

/* One frame psb wrote (len checked against its buffer): a datagram for cb, ARP, or a drop. */
static unsigned int
rx_frame(struct psb_shm *s, const uint8_t *p, uint32_t len, psb_shm_rx_cb cb, void *arg)
{
	struct psb_frame f;
	int rc;

	/* parsed where it lies: every read is bounded by len, within this client's buffer */
	rc = psb_frame_parse(p, len, &s->parse, &f);
	if (rc == PSB_FRAME_ARP_REQUEST) {
		s->st.arp++;
		tx_arp(s, p, len);
		return 0;
	}
	if (rc == PSB_FRAME_ARP_REPLY) {
		if (f.src.ip == s->srv.ip) {
			memcpy(s->srv.mac, f.src.mac, 6);
			s->st.arp++;
		}
		return 0;
	}
	if (rc != PSB_FRAME_PSB || f.src.ip != s->srv.ip || f.src.port != s->srv.port) {
		s->st.bad_frame++;
		return 0;
	}
	/* psb says BYE on every memif port as it leaves; the socket closing ends the link */
	if (f.hdr.type == PSB_MSG_BYE)
		return 0;
	if (f.dst.port != s->me.port) {
		s->st.bad_frame++;
		return 0;
	}
	memcpy(s->srv.mac, f.src.mac, 6);
	s->st.rx_frames++;
	s->st.rx_bytes += len;
	cb(arg, f.payload - PSB_HDR_LEN, (size_t)f.payload_len + PSB_HDR_LEN);
	return 1;
}

/* Give psb every free buffer of the ring back to this client. */
static void
rx_refill(struct psb_shm *s)
{
	uint16_t head = s->s2c_head, end = (uint16_t)(s->s2c_tail + s->rx_nslots);

	if (head == end)
		return;
	while (head != end) {
		uint16_t slot = head & s->rx_mask;
		struct ring_desc *d = &s->s2c.desc[slot];

		d->flags = 0;
		d->region = 0;
		d->offset = s->s2c.buf_off + (uint32_t)slot * PSB_SHM_BUF_SIZE;
		d->length = PSB_SHM_BUF_SIZE;
		d->metadata = 0;
		head++;
	}
	s->s2c_head = head;
	__atomic_store_n(ring_head(&s->s2c), head, __ATOMIC_RELEASE);
}

unsigned int
psb_shm_rx(struct psb_shm *s, unsigned int max, psb_shm_rx_cb cb, void *arg)
{
	unsigned int taken = 0;
	uint16_t tail;
	int n, i;

	if (!s->up)
		return 0;
	tail = __atomic_load_n(ring_tail(&s->s2c), __ATOMIC_ACQUIRE);
	n = psb_memif_advance(s->s2c_tail, tail, (uint16_t)(s->s2c_head - s->s2c_tail));
	if (n < 0) {
		s->st.bad_index++;
		s->up = 0;
		snprintf(s->down, sizeof(s->down), "the server moved the tail of the ring to this "
			 "client beyond the buffers it was given");
		return 0;
	}
	for (i = 0; i < n && taken < max; i++) {
		uint16_t slot = s->s2c_tail & s->rx_mask;
		const struct ring_desc *rd = &s->s2c.desc[slot];
		struct psb_memif_desc d;
		uint32_t off = s->s2c.buf_off + (uint32_t)slot * PSB_SHM_BUF_SIZE;

		/* a copy, checked: psb may write the ring meanwhile */
		d.flags = __atomic_load_n(&rd->flags, __ATOMIC_RELAXED);
		d.region = __atomic_load_n(&rd->region, __ATOMIC_RELAXED);
		d.length = __atomic_load_n(&rd->length, __ATOMIC_RELAXED);
		d.offset = __atomic_load_n(&rd->offset, __ATOMIC_RELAXED);
		switch (psb_memif_desc_check(&d, 0, off, PSB_SHM_BUF_SIZE)) {
		case PSB_MEMIF_BAD_NONE:
			taken += rx_frame(s, slot_buf(s, &s->s2c, slot), d.length, cb, arg);
			break;
		case PSB_MEMIF_BAD_CHAIN:
			s->st.bad_chain++;
			break;
		case PSB_MEMIF_BAD_DESC:
			s->st.bad_desc++;
			break;
		default:
			s->st.bad_length++;
			break;
		}
		s->s2c_tail++;
	}
	rx_refill(s);
	return (unsigned int)i;
}

int
psb_shm_check(struct psb_shm *s)
{
	struct psb_memif_msg m;
	int rc, k;

	if (!s->up)
		return 0;
	for (k = 0; k < 4; k++) {
		rc = ctl_recv(s, &m, 0);
		if (rc == -EAGAIN)
			break;
		if (rc == 0 && m.type != PSB_MEMIF_MSG_DISCONNECT)
			continue;	/* nothing else is due once connected */
		s->up = 0;
		if (rc == 0)
			snprintf(s->down, sizeof(s->down), "the server disconnected: %s",
				 m.u.disconnect.reason);
		else if (rc == -ECONNRESET)
			snprintf(s->down, sizeof(s->down), "the server closed the link");
		else
			snprintf(s->down, sizeof(s->down), "control socket: %s", strerror(-rc));
		break;
	}
	return s->up;
}

int
psb_shm_arm(struct psb_shm *s)
{
	if (!s->up)
		return 0;
	__atomic_store_n(ring_flags(&s->s2c), 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/*
	 * psb reads the flags after it moved the tail, without a fence of its own: it may miss
	 * the change for a moment, and the sleep, bounded by the caller, ends by time then.
	 */
	return __atomic_load_n(ring_tail(&s->s2c), __ATOMIC_ACQUIRE) != s->s2c_tail;
}

void
psb_shm_disarm(struct psb_shm *s)
{
	uint64_t v;

	if (!s->up)
		return;
	__atomic_store_n(ring_flags(&s->s2c), PSB_MEMIF_RING_MASK_INT, __ATOMIC_RELAXED);
	while (read(s->efd[1], &v, sizeof(v)) == (ssize_t)sizeof(v))
		;
}

void
psb_shm_fds(const struct psb_shm *s, int fds[2])
{
	fds[0] = s->up ? s->efd[1] : -1;
	fds[1] = s->up ? s->sock : -1;
}

unsigned int
psb_shm_slot(const struct psb_shm *s)
{
	return s->slot;
}

int
psb_shm_up(const struct psb_shm *s)
{
	return s->up;
}

const char *
psb_shm_down_reason(const struct psb_shm *s)
{
	return s->up ? "" : s->down;
}

const struct psb_shm_link_stats *
psb_shm_stats(const struct psb_shm *s)
{
	return &s->st;
}

int
psb_shm_sock_path(uint32_t ip, uint16_t port, char *out, size_t len)
{
	char dir[256];
	int rc = psb_shm_dir(dir, sizeof(dir));

	return rc != 0 ? rc : psb_shm_sock_name(dir, ip, port, out, len);
}

/* --- open and close --- */

int
psb_shm_open(const struct psb_shm_cfg *cfg, struct psb_shm **out, char *err, size_t errlen)
{
	uint32_t slots = cfg->slots != 0 && cfg->slots <= PSB_SHM_MAX_SLOTS ? cfg->slots :
		PSB_SHM_MAX_SLOTS;
	uint64_t timeout = cfg->timeout_ns != 0 ? cfg->timeout_ns : PSB_SHM_CONNECT_NS;
	struct psb_shm *s;
	unsigned int id;
	int rc = -EBUSY, last = 0, taken = 0;
	char why[256] = "";

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		psb_set_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->sock = s->memfd = -1;
	s->efd[0] = s->efd[1] = -1;
	if (cfg->path == NULL || strlen(cfg->path) >= sizeof(s->path)) {
		psb_set_err(err, errlen, "socket path too long (at most %zu bytes)", sizeof(s->path) - 1);
		rc = -ENAMETOOLONG;
		goto fail;
	}
	snprintf(s->path, sizeof(s->path), "%s", cfg->path);
	s->log2 = PSB_SHM_LOG2_RING;
	s->nslots = (uint16_t)(1u << s->log2);
	s->mask = (uint16_t)(s->nslots - 1);
	s->rx_log2 = PSB_SHM_LOG2_RX_RING;
	s->rx_nslots = (uint16_t)(1u << s->rx_log2);
	s->rx_mask = (uint16_t)(s->rx_nslots - 1);
	s->efd[0] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->efd[1] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->efd[0] < 0 || s->efd[1] < 0) {
		psb_set_err(err, errlen, "eventfd: %s", strerror(errno));
		rc = -errno;
		goto fail;
	}
	rc = region_make(s, err, errlen);
	if (rc != 0)
		goto fail;
	for (id = 0; id < slots; id++) {
		rc = try_slot(s, id, timeout, &last, why, sizeof(why));
		if (rc == 0)
			break;
		if (rc != -EBUSY || last)
			break;
		taken++;
	}
	if (rc == -EBUSY || (rc != 0 && last)) {
		if (taken != 0)
			psb_set_err(err, errlen, "%s: every slot is taken (%d clients)", cfg->path, taken);
		else
			psb_set_err(err, errlen, "%s: no slot takes clients yet (%s)", cfg->path, why);
		rc = -EBUSY;
		goto fail;
	}
	if (rc != 0) {
		psb_set_err(err, errlen, "%s", why);
		goto fail;
	}
	s->slot = id;
	s->up = 1;
	if (getrandom(s->me.mac, 6, 0) != 6)
		memset(s->me.mac, 0x5a, 6);
	s->me.mac[0] = 0x02;		/* locally administered, unicast */
	s->me.ip = psb_shm_slot_ip(id);
	s->me.port = cfg->local_port;
	memset(s->srv.mac, 0xff, 6);	/* until psb's is learnt: memif is point to point */
	s->srv.ip = cfg->server_ip;
	s->srv.port = cfg->server_port;
	s->parse.my_ip = s->me.ip;
	s->parse.check_ip_csum = 1;
	rx_refill(s);
	tx_arp(s, NULL, 0);		/* psb's MAC, and psb learns where this slot is */
	*out = s;
	return 0;
fail:
	psb_shm_close(s);
	return rc;
}

void
psb_shm_close(struct psb_shm *s)
{
	struct psb_memif_msg m;
	uint64_t end;

	if (s == NULL)
		return;
	if (s->up) {
		/* psb reads what it was given before the link goes: it unmaps the region then */
		psb_shm_flush(s);
		end = now_ns() + DRAIN_NS;
		while (__atomic_load_n(ring_tail(&s->c2s), __ATOMIC_ACQUIRE) != s->c2s_pub &&
		       now_ns() < end)
			usleep(100);
		memset(&m, 0, sizeof(m));
		m.type = PSB_MEMIF_MSG_DISCONNECT;
		snprintf(m.u.disconnect.reason, sizeof(m.u.disconnect.reason), "client closed");
		(void)ctl_send(s, &m, -1);
	}
	sock_close(s);
	if (s->efd[0] >= 0)
		close(s->efd[0]);
	if (s->efd[1] >= 0)
		close(s->efd[1]);
	if (s->base != NULL)
		munmap(s->base, s->size);
	if (s->memfd >= 0)
		close(s->memfd);
	free(s);
}
