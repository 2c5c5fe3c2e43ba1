/* memif slots of a server without DPDK: handshake, hostile-proof rings (psb_shm_srv.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "psb_err.h"
#include "psb_memif.h"
#include "psb_shm_srv.h"

#define SRV_NAME	"psb-ksrv"
#define RX_BURST	256	/* frames of one slot in a turn: the others wait no longer */
#define TX_PUBLISH	32	/* answers written before the tail moves at the latest */
#define MSGS_PER_CTL	8	/* control messages of one connection in a turn */
/* Ethernet, VLAN, IPv4 with its longest options, UDP, psb: every header parsed, copied */
#define RX_HDR_COPY	(PSB_ETH_HLEN + 4 + 60 + PSB_UDP_HLEN + PSB_HDR_LEN)
#define MAX_CONNS	(PSB_SHM_MAX_SLOTS + PSB_SHM_SRV_PENDING)

const struct psb_shm_srv_counter psb_shm_srv_counters[] = {
#define C(f) { #f, offsetof(struct psb_shm_srv_stats, f) }
	C(links), C(slots_used), C(slots_max), C(rx_frames), C(rx_bytes), C(rx_held), C(tx_frames),
	C(tx_bytes), C(tx_full), C(tx_no_slot), C(arp), C(refused), C(bad_msg), C(bad_region),
	C(bad_ring), C(timeouts), C(bad_index), C(bad_desc), C(bad_length), C(bad_chain),
	C(bad_frame), C(disconnects),
#undef C
	{ NULL, 0 },
};

enum conn_state {
	ST_FREE,
	ST_HELLO,		/* HELLO said: INIT due */
	ST_SETUP,		/* a slot taken: region, rings, CONNECT due */
	ST_UP,
	ST_CLOSING,		/* the link ended; released at the next psb_shm_srv_ctl */
};

struct sring {
	uint8_t *hdr;			/* NULL: not added */
	uint16_t n, mask;
	int efd;			/* the client's eventfd of this ring */
};

struct conn {
	int fd;
	int state;
	int slot;			/* -1 until INIT took one */
	uint64_t deadline;		/* the handshake's end */
	uint8_t *base;			/* the client's region, mapped */
	size_t size;
	struct sring c2s, s2c;
	uint16_t c2s_tail;		/* next frame to take */
	uint16_t c2s_rel;		/* frames given back (the ring's tail): before c2s_tail, the
					 * first one the store keeps */
	uint8_t *held;			/* [c2s.n]: frames the store keeps (psb_shm_srv_release) */
	uint32_t nheld;
	uint16_t s2c_tail;		/* filled buffers as the client sees them */
	uint16_t s2c_pend;		/* filled buffers, published or not */
	uint16_t s2c_head;		/* the client's head as last read */
	uint8_t mac[6];			/* the client's, from its frames */
};

struct psb_shm_srv {
	struct psb_shm_srv_cfg cfg;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char lock[sizeof(((struct sockaddr_un *)0)->sun_path) + 8];
	int lfd, lockfd;
	int bound;			/* the socket file is this server's: removed at close */
	unsigned int nconns;
	unsigned int next_rx;		/* the slot served first in the next turn */
	uint64_t dirty;			/* slots with answers not published */
	struct conn conns[MAX_CONNS];
	struct conn *slot[PSB_SHM_MAX_SLOTS];
	struct psb_addr me;
	struct psb_parse_cfg parse;
	struct psb_shm_srv_stats st;
	/*
	 * A frame's headers are copied here before they are parsed, the client may change its
	 * buffer: RX_HDR_COPY bytes, the rest only for frames other than psb's.
	 */
	uint8_t frame[PSB_MAX_FRAME] __attribute__((aligned(64)));
};

static uint16_t *
ring_u16(const struct sring *r, size_t off)
{
	return (uint16_t *)(void *)(r->hdr + off);
}

/* --- the control socket --- */

static int
msg_send(struct conn *c, uint16_t type, const char *reason)
{
	struct psb_memif_msg m;
	uint8_t buf[PSB_MEMIF_MSG_LEN];

	memset(&m, 0, sizeof(m));
	m.type = type;
	if (type == PSB_MEMIF_MSG_HELLO) {
		snprintf(m.u.hello.name, sizeof(m.u.hello.name), SRV_NAME);
		m.u.hello.min_version = m.u.hello.max_version = PSB_MEMIF_VERSION;
		/* the highest index taken: one region, one ring each way */
		m.u.hello.max_region = 0;
		m.u.hello.max_s2c_ring = 0;
		m.u.hello.max_c2s_ring = 0;
		m.u.hello.max_log2_ring_size = PSB_MEMIF_MAX_LOG2;
	} else if (type == PSB_MEMIF_MSG_CONNECTED) {
		snprintf(m.u.connect.if_name, sizeof(m.u.connect.if_name), SRV_NAME);
	} else if (type == PSB_MEMIF_MSG_DISCONNECT) {
		snprintf(m.u.disconnect.reason, sizeof(m.u.disconnect.reason), "%s", reason);
	}
	if (psb_memif_msg_encode(buf, &m) != 0)
		return -EINVAL;
	/* a client that reads nothing fills its socket: it is gone then */
	if (send(c->fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(buf))
		return -EIO;
	return 0;
}

/*
 * The connection's resources go: its slot, descriptors and region. While the store keeps
 * frames of the region, the region stays (ST_CLOSING, the slot free for another client)
 * until the last one is given back.
 */
static void
conn_release(struct psb_shm_srv *v, struct conn *c)
{
	if (c->state == ST_FREE)
		return;
	if (c->slot >= 0 && v->slot[c->slot] == c) {
		v->slot[c->slot] = NULL;
		v->dirty &= ~(1ull << c->slot);
	}
	if (c->c2s.efd >= 0)
		close(c->c2s.efd);
	if (c->s2c.efd >= 0)
		close(c->s2c.efd);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = c->c2s.efd = c->s2c.efd = -1;
	if (c->nheld != 0) {
		c->state = ST_CLOSING;
		return;
	}
	if (c->base != NULL)
		munmap(c->base, c->size);
	free(c->held);
	memset(c, 0, sizeof(*c));
	c->fd = c->c2s.efd = c->s2c.efd = -1;
	c->slot = -1;
	c->state = ST_FREE;
}

/*
 * The link ends: DISCONNECT said, the rings no longer used; the region stays mapped until
 * the next psb_shm_srv_ctl, as a frame of it may be in use right now.
 */
static void
conn_end(struct psb_shm_srv *v, struct conn *c, const char *why)
{
	if (c->state == ST_UP) {
		v->st.slots_used--;
		v->st.disconnects++;
	}
	if (why != NULL && c->fd >= 0)
		(void)msg_send(c, PSB_MEMIF_MSG_DISCONNECT, why);
	c->state = ST_CLOSING;
}

/* Refused during the handshake: said, counted in *ctr, released. */
static void
conn_refuse(struct psb_shm_srv *v, struct conn *c, uint64_t *ctr, const char *why)
{
	(*ctr)++;
	conn_end(v, c, why);
	conn_release(v, c);
}

static void
close_fds(const int *fds, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		close(fds[i]);
}

/* An eventfd, and nothing else (a pipe or a file could block or never sleep). */
static int
is_eventfd(int fd)
{
	char link[64], target[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return 0;
	target[n] = '\0';
	return strcmp(target, "anon_inode:[eventfd]") == 0;
}

static int
add_region(struct psb_shm_srv *v, struct conn *c, const struct psb_memif_msg *m, int fd)
{
	struct stat sb;
	int seals;
	void *p;

	if (c->base != NULL || m->u.add_region.index != 0)
		return -EINVAL;
	if (m->u.add_region.size == 0 || m->u.add_region.size > v->cfg.max_region)
		return -EFBIG;
	/*
	 * Sealed against shrinking, and as long as it says: else the client could cut the file
	 * under the mapping, and this process would die of SIGBUS touching it.
	 */
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return -EPERM;
	if (fstat(fd, &sb) != 0 || (uint64_t)sb.st_size < m->u.add_region.size)
		return -ERANGE;
	p = mmap(NULL, (size_t)m->u.add_region.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	c->base = p;
	c->size = (size_t)m->u.add_region.size;
	return 0;
}

static int
add_ring(struct conn *c, const struct psb_memif_msg *m, int fd)
{
	const __typeof__(m->u.add_ring) *a = &m->u.add_ring;
	struct sring *r = (a->flags & PSB_MEMIF_RING_FLAG_C2S) ? &c->c2s : &c->s2c;

	if (c->base == NULL || r->hdr != NULL || a->index != 0 || a->region != 0 ||
	    (a->flags & ~PSB_MEMIF_RING_FLAG_C2S) != 0 || a->private_hdr_size != 0)
		return -EINVAL;
	if (a->log2_ring_size == 0 || a->log2_ring_size > PSB_MEMIF_MAX_LOG2 ||
	    (a->offset & 63) != 0 ||
	    (uint64_t)a->offset + psb_memif_ring_bytes(a->log2_ring_size) > c->size)
		return -ERANGE;
	if (!is_eventfd(fd) || fcntl(fd, F_SETFL, O_NONBLOCK) != 0)
		return -EBADF;
	if (r == &c->c2s && (c->held = calloc(1u << a->log2_ring_size, 1)) == NULL)
		return -ENOMEM;
	r->hdr = c->base + a->offset;
	r->n = (uint16_t)(1u << a->log2_ring_size);
	r->mask = (uint16_t)(r->n - 1);
	r->efd = fd;
	return 0;
}

/* CONNECT: both rings there, with memif's cookie; the counters start at 0. */
static int
connect_rings(struct conn *c)
{
	const struct sring *r[2] = { &c->c2s, &c->s2c };
	unsigned int i;
	uint32_t cookie;

	for (i = 0; i < 2; i++) {
		if (r[i]->hdr == NULL)
			return -EINVAL;
		memcpy(&cookie, r[i]->hdr, 4);
		if (cookie != PSB_MEMIF_COOKIE)
			return -EPROTO;
	}
	for (i = 0; i < 2; i++) {
		__atomic_store_n(ring_u16(r[i], PSB_MEMIF_RING_HEAD_OFF), 0, __ATOMIC_RELAXED);
		__atomic_store_n(ring_u16(r[i], PSB_MEMIF_RING_TAIL_OFF), 0, __ATOMIC_RELAXED);
	}
	/* polled: the client need not signal, until the server arms before sleeping */
	__atomic_store_n(ring_u16(&c->c2s, 4), PSB_MEMIF_RING_MASK_INT, __ATOMIC_RELEASE);
	c->c2s_tail = c->c2s_rel = c->s2c_tail = c->s2c_pend = c->s2c_head = 0;
	memset(c->mac, 0xff, 6);	/* until its frames say it: memif is point to point */
	return 0;
}

/* One message of a connection in handshake (fds: what came with it, now owned here). */
static void
conn_msg(struct psb_shm_srv *v, struct conn *c, const struct psb_memif_msg *m, int *fds,
		unsigned int nfd)
{
	int rc, fd = nfd == 1 ? fds[0] : -1;

	if (m->type == PSB_MEMIF_MSG_DISCONNECT) {
		close_fds(fds, nfd);
		conn_end(v, c, NULL);
		conn_release(v, c);
		return;
	}
	if (c->state == ST_UP) {
		/* nothing else is due once connected */
		close_fds(fds, nfd);
		v->st.bad_msg++;
		return;
	}
	/* only ADD_REGION and ADD_RING pass a descriptor, one */
	if ((m->type == PSB_MEMIF_MSG_ADD_REGION || m->type == PSB_MEMIF_MSG_ADD_RING) ?
	    nfd != 1 : nfd != 0) {
		close_fds(fds, nfd);
		conn_refuse(v, c, &v->st.bad_msg, "a file descriptor where none is due, or none "
			    "where one is");
		return;
	}
	if (c->state == ST_HELLO) {
		if (m->type != PSB_MEMIF_MSG_INIT) {
			conn_refuse(v, c, &v->st.bad_msg, "INIT is due");
		} else if (m->u.init.version != PSB_MEMIF_VERSION) {
			conn_refuse(v, c, &v->st.bad_msg, "Unsupported version");
		} else if (m->u.init.mode != 0) {
			conn_refuse(v, c, &v->st.bad_msg, "Only ethernet mode supported");
		} else if (m->u.init.id >= v->cfg.slots) {
			/* DPDK's words: the client stops trying further ids on "not found" */
			conn_refuse(v, c, &v->st.refused, "ID not found");
		} else if (v->slot[m->u.init.id] != NULL) {
			conn_refuse(v, c, &v->st.refused, "Already connected");
		} else {
			c->slot = (int)m->u.init.id;
			v->slot[c->slot] = c;
			c->state = ST_SETUP;
			if (msg_send(c, PSB_MEMIF_MSG_ACK, NULL) != 0)
				conn_release(v, c);
		}
		return;
	}
	switch (m->type) {
	case PSB_MEMIF_MSG_ADD_REGION:
		rc = add_region(v, c, m, fd);
		close(fd);	/* mapped, or refused */
		if (rc != 0) {
			conn_refuse(v, c, &v->st.bad_region, rc == -EFBIG ? "region too large" :
				    rc == -EPERM ? "region not a memfd sealed against shrinking" :
				    rc == -ERANGE ? "region shorter than it says" :
				    rc == -ENOMEM ? "region cannot be mapped" : "one region, index 0");
			return;
		}
		break;
	case PSB_MEMIF_MSG_ADD_RING:
		rc = add_ring(c, m, fd);
		if (rc != 0) {
			close(fd);
			conn_refuse(v, c, &v->st.bad_ring, rc == -ERANGE ? "ring out of the region" :
				    rc == -EBADF ? "ring interrupt not an eventfd" :
				    rc == -ENOMEM ? "no memory for the ring's bookkeeping" :
				    "one ring each way, index 0, in region 0, after it");
			return;
		}
		break;
	case PSB_MEMIF_MSG_CONNECT:
		rc = connect_rings(c);
		if (rc != 0) {
			conn_refuse(v, c, &v->st.bad_ring, rc == -EPROTO ? "ring without memif's "
				    "cookie" : "CONNECT before the rings");
			return;
		}
		if (msg_send(c, PSB_MEMIF_MSG_CONNECTED, NULL) != 0) {
			conn_release(v, c);
			return;
		}
		c->state = ST_UP;
		v->st.links++;
		if (++v->st.slots_used > v->st.slots_max)
			v->st.slots_max = v->st.slots_used;
		return;
	default:
		conn_refuse(v, c, &v->st.bad_msg, "ADD_REGION, ADD_RING or CONNECT is due");
		return;
	}
	if (msg_send(c, PSB_MEMIF_MSG_ACK, NULL) != 0)
		conn_release(v, c);
}

/* What waits on a connection's socket: messages, or its end. */
static void
conn_read(struct psb_shm_srv *v, struct conn *c)
{
	uint8_t buf[PSB_MEMIF_MSG_LEN + 1];
	char ctl[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct psb_memif_msg m;
	struct msghdr mh;
	int fds[4];
	unsigned int nfd, k;
	ssize_t n;

	for (k = 0; k < MSGS_PER_CTL && c->state != ST_FREE && c->state != ST_CLOSING; k++) {
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = ctl;
		mh.msg_controllen = sizeof(ctl);
		n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		nfd = n >= 0 ? psb_memif_take_fds(&mh, fds, 4) : 0;
		if (n <= 0) {
			/* gone: killed, or closed without a word */
			close_fds(fds, nfd);
			conn_end(v, c, NULL);
			conn_release(v, c);
			return;
		}
		if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
		    psb_memif_msg_decode(&m, buf, (size_t)n) != 0) {
			close_fds(fds, nfd);
			if (c->state == ST_UP) {
				v->st.bad_msg++;
				continue;
			}
			conn_refuse(v, c, &v->st.bad_msg, "not a memif message");
			return;
		}
		conn_msg(v, c, &m, fds, nfd);
	}
}

static void
conn_accept(struct psb_shm_srv *v, uint64_t now_ns)
{
	unsigned int i, k;
	int fd;

	for (k = 0; k < PSB_SHM_SRV_PENDING; k++) {
		fd = accept4(v->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		for (i = 0; i < v->nconns && v->conns[i].state != ST_FREE; i++)
			;
		if (i == v->nconns) {
			/* every slot held and as many handshakes under way: no room */
			v->st.refused++;
			close(fd);
			continue;
		}
		v->conns[i].fd = fd;
		v->conns[i].state = ST_HELLO;
		v->conns[i].deadline = now_ns + v->cfg.handshake_ns;
		if (msg_send(&v->conns[i], PSB_MEMIF_MSG_HELLO, NULL) != 0)
			conn_release(v, &v->conns[i]);
	}
}

unsigned int
psb_shm_srv_ctl(struct psb_shm_srv *v, uint64_t now_ns)
{
	struct pollfd pfd[1 + MAX_CONNS];
	unsigned int i, n = 0;
	int idx[1 + MAX_CONNS];

	pfd[n].fd = v->lfd;
	pfd[n].events = POLLIN;
	idx[n++] = -1;
	for (i = 0; i < v->nconns; i++) {
		struct conn *c = &v->conns[i];

		if (c->state == ST_CLOSING)
			conn_release(v, c);
		if (c->state == ST_FREE || c->state == ST_CLOSING)
			continue;
		if (c->state != ST_UP && now_ns > c->deadline) {
			conn_refuse(v, c, &v->st.timeouts, "handshake not done in time");
			continue;
		}
		pfd[n].fd = c->fd;
		pfd[n].events = POLLIN;
		idx[n++] = (int)i;
	}
	if (poll(pfd, n, 0) > 0) {
		for (i = 1; i < n; i++)
			if (pfd[i].revents != 0)
				conn_read(v, &v->conns[idx[i]]);
		if (pfd[0].revents & POLLIN)
			conn_accept(v, now_ns);
	}
	return (unsigned int)v->st.slots_used;
}

/* --- frames --- */

/* The next buffer the client gave on the ring to it, checked; NULL: none (or the link ended). */
static uint8_t *
tx_buf(struct psb_shm_srv *v, struct conn *c, uint32_t len, uint16_t *slot)
{
	const uint8_t *d;
	uint16_t head, region;
	uint32_t off, cap;

	if (c->s2c_head == c->s2c_pend) {
		head = __atomic_load_n(ring_u16(&c->s2c, PSB_MEMIF_RING_HEAD_OFF), __ATOMIC_ACQUIRE);
		/* the client gives at most a ring of buffers beyond what it was handed back */
		if ((uint16_t)(head - c->s2c_tail) > c->s2c.n ||
		    (uint16_t)(head - c->s2c_tail) < (uint16_t)(c->s2c_pend - c->s2c_tail)) {
			v->st.bad_index++;
			conn_end(v, c, "the head of the ring to the client moved beyond the ring");
			return NULL;
		}
		c->s2c_head = head;
		if (head == c->s2c_pend)
			return NULL;
	}
	*slot = c->s2c_pend & c->s2c.mask;
	d = c->s2c.hdr + PSB_MEMIF_RING_DESC_OFF + (size_t)*slot * PSB_MEMIF_DESC_LEN;
	/* a copy: the client may write the descriptor meanwhile */
	region = __atomic_load_n((const uint16_t *)(const void *)(d + 2), __ATOMIC_RELAXED);
	cap = __atomic_load_n((const uint32_t *)(const void *)(d + 4), __ATOMIC_RELAXED);
	off = __atomic_load_n((const uint32_t *)(const void *)(d + 8), __ATOMIC_RELAXED);
	if (region != 0 || cap < len || (uint64_t)off + len > c->size) {
		v->st.bad_desc++;
		conn_end(v, c, "a buffer of the ring to the client lies out of its region");
		return NULL;
	}
	return c->base + off;
}

static void
tx_commit(struct psb_shm_srv *v, struct conn *c, uint16_t slot, uint32_t len)
{
	uint8_t *d = c->s2c.hdr + PSB_MEMIF_RING_DESC_OFF + (size_t)slot * PSB_MEMIF_DESC_LEN;

	__atomic_store_n((uint16_t *)(void *)d, 0, __ATOMIC_RELAXED);
	__atomic_store_n((uint32_t *)(void *)(d + 4), len, __ATOMIC_RELAXED);
	c->s2c_pend++;
	v->st.tx_frames++;
	v->st.tx_bytes += len;
	v->dirty |= 1ull << c->slot;
	if ((uint16_t)(c->s2c_pend - c->s2c_tail) >= TX_PUBLISH) {
		__atomic_store_n(ring_u16(&c->s2c, PSB_MEMIF_RING_TAIL_OFF), c->s2c_pend,
			__ATOMIC_RELEASE);
		c->s2c_tail = c->s2c_pend;
	}
}

int
psb_shm_srv_slot_of(const struct psb_shm_srv *v, uint32_t ip)
{
	uint32_t i = ip - PSB_SHM_SLOT_IP0;

	return i < v->cfg.slots ? (int)i : -1;
}

int
psb_shm_srv_send(struct psb_shm_srv *v, const struct psb_addr *to, const struct psb_hdr *h,
		const void *payload)
{
	uint32_t len = PSB_FRAME_HLEN + (uint32_t)h->seg_len;
	int i = psb_shm_srv_slot_of(v, to->ip);
	struct psb_addr dst;
	struct conn *c;
	uint16_t slot;
	uint8_t *p;

	c = i >= 0 ? v->slot[i] : NULL;
	if (c == NULL || c->state != ST_UP) {
		v->st.tx_no_slot++;
		return -ENOTCONN;
	}
	if (len > PSB_MAX_FRAME)
		return -EMSGSIZE;
	p = tx_buf(v, c, len, &slot);
	if (p == NULL) {
		v->st.tx_full += c->state == ST_UP;
		return c->state == ST_UP ? -ENOBUFS : -ENOTCONN;
	}
	dst = *to;
	memcpy(dst.mac, c->mac, 6);
	psb_frame_write_headers(p, &v->me, &dst, h, h->seg_len);
	if (h->seg_len != 0)
		memcpy(p + PSB_FRAME_HLEN, payload, h->seg_len);
	tx_commit(v, c, slot, len);
	return 0;
}

/* An ARP request of the client's (in v->frame) answered on its ring. */
static void
tx_arp(struct psb_shm_srv *v, struct conn *c, uint32_t len)
{
	uint16_t slot;
	uint8_t *p = tx_buf(v, c, 60, &slot);

	if (p == NULL)
		return;
	memset(p, 0, 60);
	if (psb_arp_reply(p, v->frame, len, v->me.mac, v->me.ip) == 0)
		return;
	v->st.arp++;
	tx_commit(v, c, slot, 60);
}

void
psb_shm_srv_flush(struct psb_shm_srv *v)
{
	uint64_t d = v->dirty;

	v->dirty = 0;
	while (d != 0) {
		struct conn *c = v->slot[__builtin_ctzll(d)];
		uint64_t one = 1;

		d &= d - 1;
		if (c == NULL || c->state != ST_UP)
			continue;
		if (c->s2c_tail != c->s2c_pend) {
			__atomic_store_n(ring_u16(&c->s2c, PSB_MEMIF_RING_TAIL_OFF), c->s2c_pend,
				__ATOMIC_RELEASE);
			c->s2c_tail = c->s2c_pend;
		}
		/* the tail moved before the flags are read: the client's arm is the mirror */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (!(__atomic_load_n(ring_u16(&c->s2c, 4), __ATOMIC_RELAXED) &
		      PSB_MEMIF_RING_MASK_INT))
			(void)!write(c->s2c.efd, &one, sizeof(one));
	}
}

/* The token of frame idx of c's ring to the server, for cb to keep (never NULL). */
static void *
frame_ref(const struct psb_shm_srv *v, const struct conn *c, uint16_t idx)
{
	return (void *)(uintptr_t)(((uintptr_t)(c - v->conns) << 16 | idx) + 1);
}

/*
 * May the store keep this frame where it is, a segment of h? A push's, whose segments all
 * fit in half the ring, while the store keeps less than half of it: the ring always has
 * room for the rest of a push the store waits for, whatever the client sends between.
 */
static int
may_hold(const struct conn *c, const struct psb_hdr *h)
{
	uint32_t half = c->c2s.n / 2u;

	return (h->type == PSB_MSG_PUSH || h->type == PSB_MSG_PUSHPULL) && h->seg_size != 0 &&
		c->nheld < half && psb_seg_count(h->total_len, h->seg_size) <= half;
}

/*
 * One frame the client put on its ring (buf, len bytes, at idx): a datagram for cb, or ARP.
 * Its headers are parsed from a copy in v->frame; a frame other than psb's is copied whole.
 */
static unsigned int
rx_frame(struct psb_shm_srv *v, struct conn *c, uint16_t idx, const uint8_t *buf, uint32_t len,
		psb_shm_srv_rx_cb cb, void *arg)
{
	struct psb_frame f;
	size_t hl = len < RX_HDR_COPY ? len : RX_HDR_COPY;
	int rc;

	memcpy(v->frame, buf, hl);
	rc = psb_frame_parse(v->frame, len, &v->parse, &f);
	if (rc != PSB_FRAME_PSB && hl < len) {
		/* ARP reads its headers alone, others more: parsed again from a whole copy */
		memcpy(v->frame + hl, buf + hl, len - hl);
		rc = psb_frame_parse(v->frame, len, &v->parse, &f);
	}

	if (rc == PSB_FRAME_ARP_REQUEST && f.src.ip == psb_shm_slot_ip((unsigned int)c->slot)) {
		memcpy(c->mac, f.src.mac, 6);
		tx_arp(v, c, len);
		return 0;
	}
	/* the slot's address alone: a client cannot speak for another slot */
	if (rc != PSB_FRAME_PSB || f.src.ip != psb_shm_slot_ip((unsigned int)c->slot)) {
		v->st.bad_frame++;
		return 0;
	}
	memcpy(c->mac, f.src.mac, 6);
	v->st.rx_frames++;
	v->st.rx_bytes += len;
	/* the header within the copy, the value where the client wrote it */
	if (cb(arg, &f.src, f.payload - PSB_HDR_LEN, buf + (f.payload - v->frame), f.payload_len,
	       may_hold(c, &f.hdr) ? frame_ref(v, c, idx) : NULL)) {
		c->held[idx] = 1;
		c->nheld++;
		v->st.rx_held++;
	}
	return 1;
}

/* The frames taken and not kept go back to the client: the ring's tail moves past them. */
static void
give_back(struct conn *c)
{
	uint16_t rel = c->c2s_rel;

	while (rel != c->c2s_tail && !c->held[rel & c->c2s.mask])
		rel++;
	if (rel == c->c2s_rel)
		return;
	c->c2s_rel = rel;
	__atomic_store_n(ring_u16(&c->c2s, PSB_MEMIF_RING_TAIL_OFF), rel, __ATOMIC_RELEASE);
}

void
psb_shm_srv_release(struct psb_shm_srv *v, void *ref)
{
	uintptr_t r = (uintptr_t)ref - 1;
	size_t k = r >> 16;
	struct conn *c;
	uint16_t idx = (uint16_t)(r & 0xffff);

	if (v == NULL || ref == NULL || k >= MAX_CONNS)
		return;
	c = &v->conns[k];
	if (c->held == NULL || idx >= c->c2s.n || !c->held[idx])
		return;
	c->held[idx] = 0;
	c->nheld--;
	if (c->state == ST_UP)
		give_back(c);
	else if (c->state == ST_CLOSING && c->nheld == 0)
		conn_release(v, c);
}

static unsigned int
rx_conn(struct psb_shm_srv *v, struct conn *c, unsigned int max, psb_shm_srv_rx_cb cb,
		void *arg)
{
	uint16_t head = __atomic_load_n(ring_u16(&c->c2s, PSB_MEMIF_RING_HEAD_OFF),
		__ATOMIC_ACQUIRE);
	uint16_t n = (uint16_t)(head - c->c2s_tail), i;

	if (n == 0)
		return 0;
	/* the client writes only into what was given back */
	if ((uint16_t)(head - c->c2s_rel) > c->c2s.n) {
		v->st.bad_index++;
		conn_end(v, c, "the head of the ring to the server moved beyond the ring");
		return 0;
	}
	for (i = 0; i < n && i < max && c->state == ST_UP; i++) {
		uint16_t idx = c->c2s_tail & c->c2s.mask;
		const uint8_t *d = c->c2s.hdr + PSB_MEMIF_RING_DESC_OFF +
			(size_t)idx * PSB_MEMIF_DESC_LEN;
		uint16_t flags, region;
		uint32_t len, off;

		flags = __atomic_load_n((const uint16_t *)(const void *)d, __ATOMIC_RELAXED);
		region = __atomic_load_n((const uint16_t *)(const void *)(d + 2), __ATOMIC_RELAXED);
		len = __atomic_load_n((const uint32_t *)(const void *)(d + 4), __ATOMIC_RELAXED);
		off = __atomic_load_n((const uint32_t *)(const void *)(d + 8), __ATOMIC_RELAXED);
		c->c2s_tail++;
		if (flags & PSB_MEMIF_DESC_NEXT) {
			v->st.bad_chain++;
		} else if (len == 0 || len > PSB_MAX_FRAME) {
			v->st.bad_length++;
		} else if (region != 0 || (uint64_t)off + len > c->size) {
			v->st.bad_desc++;
		} else {
			rx_frame(v, c, idx, c->base + off, len, cb, arg);
		}
	}
	if (c->state == ST_UP)
		give_back(c);
	return i;
}

unsigned int
psb_shm_srv_rx(struct psb_shm_srv *v, unsigned int max, psb_shm_srv_rx_cb cb, void *arg)
{
	unsigned int k, taken = 0, per = max < RX_BURST ? max : RX_BURST;

	for (k = 0; k < v->cfg.slots && taken < max; k++) {
		unsigned int i = (v->next_rx + k) % v->cfg.slots;
		struct conn *c = v->slot[i];

		if (c != NULL && c->state == ST_UP)
			taken += rx_conn(v, c, per < max - taken ? per : max - taken, cb, arg);
	}
	v->next_rx = (v->next_rx + 1) % v->cfg.slots;
	return taken;
}

/* --- sleeping --- */

int
psb_shm_srv_arm(struct psb_shm_srv *v)
{
	unsigned int i;
	int waiting = 0;

	for (i = 0; i < v->cfg.slots; i++) {
		struct conn *c = v->slot[i];

		if (c == NULL || c->state != ST_UP)
			continue;
		__atomic_store_n(ring_u16(&c->c2s, 4), 0, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(ring_u16(&c->c2s, PSB_MEMIF_RING_HEAD_OFF), __ATOMIC_ACQUIRE) !=
		    c->c2s_tail)
			waiting = 1;
	}
	return waiting;
}

void
psb_shm_srv_disarm(struct psb_shm_srv *v)
{
	unsigned int i;
	uint64_t x;

	for (i = 0; i < v->cfg.slots; i++) {
		struct conn *c = v->slot[i];

		if (c == NULL || c->state != ST_UP)
			continue;
		__atomic_store_n(ring_u16(&c->c2s, 4), PSB_MEMIF_RING_MASK_INT, __ATOMIC_RELAXED);
		while (read(c->c2s.efd, &x, sizeof(x)) == (ssize_t)sizeof(x))
			;
	}
}

unsigned int
psb_shm_srv_nfds(const struct psb_shm_srv *v)
{
	return 1 + v->nconns + v->cfg.slots;
}

unsigned int
psb_shm_srv_fds(const struct psb_shm_srv *v, struct pollfd *pfd, unsigned int max)
{
	unsigned int i, n = 0;

	if (n < max) {
		pfd[n].fd = v->lfd;
		pfd[n++].events = POLLIN;
	}
	for (i = 0; i < v->nconns && n < max; i++) {
		const struct conn *c = &v->conns[i];

		if (c->state == ST_FREE)
			continue;
		pfd[n].fd = c->fd;
		pfd[n++].events = POLLIN;
		if (c->state == ST_UP && n < max) {
			pfd[n].fd = c->c2s.efd;
			pfd[n++].events = POLLIN;
		}
	}
	return n;
}

/* --- open and close --- */

/* The socket's directory and the one above it (psb_shm_dir's), as psb makes them. */
static int
make_dirs(const char *path)
{
	char d[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;
	int k;

	snprintf(d, sizeof(d), "%s", path);
	for (k = 0; k < 2; k++) {
		slash = strrchr(d, '/');
		if (slash == NULL || slash == d)
			return 0;
		*slash = '\0';
	}
	/* d is the parent now: made first, then the socket's own */
	if (mkdir(d, 0700) != 0 && errno != EEXIST)
		return -errno;
	snprintf(d, sizeof(d), "%s", path);
	*strrchr(d, '/') = '\0';
	if (mkdir(d, 0700) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int
psb_shm_srv_open(const struct psb_shm_srv_cfg *cfg, struct psb_shm_srv **out, char *err,
		size_t errlen)
{
	struct sockaddr_un sa;
	struct psb_shm_srv *v;
	unsigned int i;
	int rc;

	*out = NULL;
	if (cfg->slots == 0 || cfg->slots > PSB_SHM_MAX_SLOTS) {
		psb_set_err(err, errlen, "shared-memory slots: 1 to %u, not %u", PSB_SHM_MAX_SLOTS,
			cfg->slots);
		return -EINVAL;
	}
	v = calloc(1, sizeof(*v));
	if (v == NULL) {
		psb_set_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	v->cfg = *cfg;
	if (v->cfg.max_region == 0)
		v->cfg.max_region = PSB_SHM_SRV_MAX_REGION;
	if (v->cfg.handshake_ns == 0)
		v->cfg.handshake_ns = PSB_SHM_SRV_HANDSHAKE_NS;
	v->lfd = v->lockfd = -1;
	v->nconns = cfg->slots + PSB_SHM_SRV_PENDING;
	for (i = 0; i < MAX_CONNS; i++) {
		v->conns[i].fd = v->conns[i].c2s.efd = v->conns[i].s2c.efd = -1;
		v->conns[i].slot = -1;
	}
	if (cfg->path == NULL || strlen(cfg->path) >= sizeof(v->path)) {
		psb_set_err(err, errlen, "socket path too long (at most %zu bytes)", sizeof(v->path) - 1);
		rc = -ENAMETOOLONG;
		goto fail;
	}
	snprintf(v->path, sizeof(v->path), "%s", cfg->path);
	snprintf(v->lock, sizeof(v->lock), "%s.lock", cfg->path);
	rc = make_dirs(v->path);
	if (rc != 0) {
		psb_set_err(err, errlen, "cannot make the directory of %s: %s", v->path, strerror(-rc));
		goto fail;
	}
	/*
	 * Held for the server's life (the kernel lets go when it dies), as psb holds it: of two
	 * servers of one address, one takes the slots; a socket file there without the lock
	 * held is a dead server's.
	 */
	v->lockfd = open(v->lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (v->lockfd < 0) {
		rc = -errno;
		psb_set_err(err, errlen, "cannot open %s: %s", v->lock, strerror(errno));
		goto fail;
	}
	if (flock(v->lockfd, LOCK_EX | LOCK_NB) != 0) {
		rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
		psb_set_err(err, errlen, rc == -EBUSY ? "another server serves %s" :
			"cannot lock %s: %s", rc == -EBUSY ? v->path : v->lock, strerror(-rc));
		close(v->lockfd);
		v->lockfd = -1;	/* not this server's: left in place */
		goto fail;
	}
	if (unlink(v->path) != 0 && errno != ENOENT) {
		rc = -errno;
		psb_set_err(err, errlen, "cannot remove the stale socket %s: %s", v->path,
			strerror(errno));
		goto fail;
	}
	v->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", v->path);
	if (v->lfd < 0 || bind(v->lfd, (const struct sockaddr *)&sa, sizeof(sa)) != 0) {
		rc = -errno;
		psb_set_err(err, errlen, "cannot bind %s: %s", v->path, strerror(errno));
		goto fail;
	}
	v->bound = 1;
	if (listen(v->lfd, (int)v->nconns) != 0) {
		rc = -errno;
		psb_set_err(err, errlen, "cannot listen on %s: %s", v->path, strerror(errno));
		goto fail;
	}
	if (getrandom(v->me.mac, 6, 0) != 6)
		memset(v->me.mac, 0x5b, 6);
	v->me.mac[0] = 0x02;		/* locally administered, unicast */
	v->me.ip = cfg->ip;
	v->me.port = cfg->port;
	v->parse.my_ip = cfg->ip;
	v->parse.psb_port = cfg->port;
	v->parse.check_ip_csum = 1;
	*out = v;
	return 0;
fail:
	psb_shm_srv_close(v);
	return rc;
}

const char *
psb_shm_srv_path(const struct psb_shm_srv *v)
{
	return v->path;
}

void
psb_shm_srv_unlink(const struct psb_shm_srv *v)
{
	if (v == NULL)
		return;
	if (v->bound)
		unlink(v->path);
	if (v->lockfd >= 0)
		unlink(v->lock);
}

void
psb_shm_srv_close(struct psb_shm_srv *v)
{
	unsigned int i;

	if (v == NULL)
		return;
	for (i = 0; i < v->nconns; i++) {
		if (v->conns[i].state == ST_FREE)
			continue;
		conn_end(v, &v->conns[i], "server closing");
		v->conns[i].nheld = 0;	/* handed back by now, or never used again */
		conn_release(v, &v->conns[i]);
	}
	psb_shm_srv_unlink(v);
	if (v->lfd >= 0)
		close(v->lfd);
	if (v->lockfd >= 0)
		close(v->lockfd);
	free(v);
}

const struct psb_shm_srv_stats *
psb_shm_srv_stats(const struct psb_shm_srv *v)
{
	return &v->st;
}

