/*
 * The server side of the shared-memory transport (lib/client psb_shm_srv) against the
 * client side (psb_shm) in one process: a link made, datagrams both ways past the rings'
 * wrap, interrupts, slots all taken, a client leaving; then a hostile client by hand:
 * messages out of order, regions too large, unsealed or short, rings out of the region,
 * descriptors and ring counters that lie. The server counts, drops or disconnects, and
 * never reads or writes outside what it mapped.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cmocka.h>

#include "psb_memif.h"
#include "psb_shm.h"
#include "psb_shm_srv.h"

#define SRV_IP		0x7F000001u	/* 127.0.0.1 */
#define SRV_PORT	9430

static char g_dir[64];
static char g_path[108];

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int
setup(void **state)
{
	(void)state;
	snprintf(g_dir, sizeof(g_dir), "/tmp/psb-test-shmsrv-%d", (int)getpid());
	/* the socket's directory and the one above it are the server's to make */
	snprintf(g_path, sizeof(g_path), "%s/shm/127.0.0.1-%u.sock", g_dir, SRV_PORT);
	return 0;
}

static int
teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
	return system(cmd) == 0 ? 0 : -1;
}

static struct psb_shm_srv *
srv_open(uint32_t slots, uint64_t handshake_ns)
{
	struct psb_shm_srv_cfg c = { .path = g_path, .slots = slots, .ip = SRV_IP,
		.port = SRV_PORT, .max_region = 128ull << 20, .handshake_ns = handshake_ns };
	struct psb_shm_srv *v = NULL;
	char err[256];

	assert_int_equal(psb_shm_srv_open(&c, &v, err, sizeof(err)), 0);
	return v;
}

/* --- the server's control loop in a thread while a psb_shm client opens --- */

struct ctl_thread {
	struct psb_shm_srv *v;
	volatile int stop;
	pthread_t t;
};

static void *
ctl_loop(void *arg)
{
	struct ctl_thread *ct = arg;

	while (!ct->stop) {
		psb_shm_srv_ctl(ct->v, now_ns());
		usleep(200);
	}
	return NULL;
}

static int
client_open(struct psb_shm_srv *v, struct psb_shm **s, uint16_t local_port, char *err,
		size_t errlen)
{
	struct ctl_thread ct = { .v = v };
	struct psb_shm_cfg cfg;
	int rc;

	memset(&cfg, 0, sizeof(cfg));
	cfg.path = g_path;
	cfg.timeout_ns = 2000000000ull;
	cfg.server_ip = SRV_IP;
	cfg.server_port = SRV_PORT;
	cfg.local_port = local_port;
	assert_int_equal(pthread_create(&ct.t, NULL, ctl_loop, &ct), 0);
	rc = psb_shm_open(&cfg, s, err, errlen);
	ct.stop = 1;
	pthread_join(ct.t, NULL);
	return rc;
}

struct got {
	unsigned int n;
	struct psb_addr from;
	struct psb_hdr h;
	uint8_t first;
	size_t len;
};

static int
srv_cb(void *arg, const struct psb_addr *from, const uint8_t *hdr, const uint8_t *payload,
		size_t len, void *ref)
{
	struct got *g = arg;

	(void)ref;
	g->n++;
	g->from = *from;
	g->len = PSB_HDR_LEN + len;
	psb_hdr_decode(&g->h, hdr);
	g->first = len > 0 ? payload[0] : 0;
	return 0;
}

static void
cli_cb(void *arg, const uint8_t *d, size_t len)
{
	struct got *g = arg;

	g->n++;
	g->len = len;
	psb_hdr_decode(&g->h, d);
	g->first = len > PSB_HDR_LEN ? d[PSB_HDR_LEN] : 0;
}

static int
readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

static void
test_link(void **state)
{
	struct psb_shm_srv *v = srv_open(2, 0);
	const struct psb_shm_srv_stats *st = psb_shm_srv_stats(v);
	struct psb_shm *a = NULL, *b = NULL, *c = NULL;
	struct got sg, cg;
	struct psb_hdr h;
	struct psb_addr to;
	uint8_t pay[1400];
	char err[256], lock[128];
	struct pollfd pfd[16];
	unsigned int i, n, sent, got;
	int fds[2];

	(void)state;
	/* one server per socket: the lock says so */
	{
		struct psb_shm_srv_cfg c2 = { .path = g_path, .slots = 1 };
		struct psb_shm_srv *w = NULL;

		assert_int_equal(psb_shm_srv_open(&c2, &w, err, sizeof(err)), -EBUSY);
		assert_non_null(strstr(err, "another server"));
	}
	assert_int_equal(client_open(v, &a, 40000, err, sizeof(err)), 0);
	assert_int_equal(psb_shm_slot(a), 0);
	assert_int_equal(st->slots_used, 1);
	/* the client's ARP first: answered, and the client learns the server's MAC */
	memset(&sg, 0, sizeof(sg));
	assert_int_equal(psb_shm_srv_rx(v, 64, srv_cb, &sg), 1);
	assert_int_equal(sg.n, 0);
	psb_shm_srv_flush(v);
	assert_int_equal(st->arp, 1);
	memset(&cg, 0, sizeof(cg));
	psb_shm_rx(a, 64, cli_cb, &cg);
	assert_int_equal(cg.n, 0);
	assert_int_equal(psb_shm_stats(a)->arp, 1);

	/* a datagram to the server: from the slot's address and the client's port */
	psb_hdr_init(&h, PSB_MSG_PUSH);
	h.key = 7;
	h.total_len = h.seg_len = h.seg_size = sizeof(pay);
	memset(pay, 0xab, sizeof(pay));
	assert_int_equal(psb_shm_send(a, &h, pay), 0);
	psb_shm_flush(a);
	assert_int_equal(psb_shm_srv_rx(v, 64, srv_cb, &sg), 1);
	assert_int_equal(sg.n, 1);
	assert_int_equal(sg.from.ip, psb_shm_slot_ip(0));
	assert_int_equal(sg.from.port, 40000);
	assert_int_equal(sg.h.key, 7);
	assert_int_equal(sg.len, PSB_HDR_LEN + sizeof(pay));
	assert_int_equal(sg.first, 0xab);
	/* and its answer back on the slot */
	psb_hdr_init(&h, PSB_MSG_PUSH_ACK);
	h.key = 7;
	h.seg_len = 0;
	to = sg.from;
	assert_int_equal(psb_shm_srv_send(v, &to, &h, NULL), 0);
	psb_shm_srv_flush(v);
	assert_int_equal(psb_shm_rx(a, 64, cli_cb, &cg), 1);
	assert_int_equal(cg.n, 1);
	assert_int_equal(cg.h.type, PSB_MSG_PUSH_ACK);
	assert_int_equal(cg.h.key, 7);

	/* many, past both rings' wrap: the client's ring of 1024 filled and drained */
	h.total_len = h.seg_size = sizeof(pay);
	for (sent = got = 0; sent < 5000;) {
		h.type = PSB_MSG_PUSH;
		h.seg_len = sizeof(pay);
		pay[0] = (uint8_t)sent;
		if (psb_shm_send(a, &h, pay) == 0) {
			sent++;
			continue;
		}
		psb_shm_flush(a);
		got += psb_shm_srv_rx(v, 4096, srv_cb, &sg);
	}
	psb_shm_flush(a);
	while (got < sent)
		got += psb_shm_srv_rx(v, 4096, srv_cb, &sg);
	assert_int_equal(sg.n, 5001);
	assert_int_equal(sg.first, (uint8_t)4999);
	for (i = 0, n = 0; i < 20000; i++) {
		h.type = PSB_MSG_PULL_RESP;
		h.seg_len = sizeof(pay);
		pay[0] = (uint8_t)i;
		if (psb_shm_srv_send(v, &to, &h, pay) != 0) {
			/* the client's 8192 buffers are all filled: it takes them, gives them back */
			psb_shm_srv_flush(v);
			n += psb_shm_rx(a, 100000, cli_cb, &cg);
			assert_int_equal(psb_shm_srv_send(v, &to, &h, pay), 0);
		}
	}
	psb_shm_srv_flush(v);
	n += psb_shm_rx(a, 100000, cli_cb, &cg);
	assert_int_equal(n, 20000);
	assert_int_equal(cg.first, (uint8_t)19999);
	assert_true(st->tx_full >= 1);
	assert_int_equal(psb_shm_stats(a)->bad_desc + psb_shm_stats(a)->bad_length +
		psb_shm_stats(a)->bad_frame + psb_shm_stats(a)->bad_index, 0);

	/* interrupts: a sleeping server is signalled as the client sends, and the other way */
	assert_int_equal(psb_shm_srv_arm(v), 0);
	n = psb_shm_srv_fds(v, pfd, 16);
	assert_int_equal(n, 3);		/* listening socket, the link's socket, its eventfd */
	assert_false(readable(pfd[2].fd));
	h.type = PSB_MSG_PUSH;
	assert_int_equal(psb_shm_send(a, &h, pay), 0);
	psb_shm_flush(a);
	assert_true(readable(pfd[2].fd));
	assert_int_equal(psb_shm_srv_arm(v), 1);
	psb_shm_srv_disarm(v);
	assert_false(readable(pfd[2].fd));
	assert_int_equal(psb_shm_srv_rx(v, 64, srv_cb, &sg), 1);
	assert_int_equal(psb_shm_arm(a), 0);
	psb_shm_fds(a, fds);
	assert_false(readable(fds[0]));
	h.type = PSB_MSG_PUSH_ACK;
	assert_int_equal(psb_shm_srv_send(v, &to, &h, pay), 0);
	psb_shm_srv_flush(v);
	assert_true(readable(fds[0]));
	psb_shm_disarm(a);
	assert_int_equal(psb_shm_rx(a, 64, cli_cb, &cg), 1);

	/* a second client takes slot 1; a third finds every slot taken */
	assert_int_equal(client_open(v, &b, 40001, err, sizeof(err)), 0);
	assert_int_equal(psb_shm_slot(b), 1);
	assert_int_equal(client_open(v, &c, 40002, err, sizeof(err)), -EBUSY);
	assert_non_null(strstr(err, "every slot is taken"));
	assert_true(st->refused >= 3);
	assert_int_equal(st->slots_used, 2);
	assert_int_equal(st->slots_max, 2);

	/* the first leaves: its slot is free, its answers go nowhere */
	psb_shm_close(a);
	psb_shm_srv_ctl(v, now_ns());
	assert_int_equal(st->slots_used, 1);
	assert_int_equal(st->disconnects, 1);
	assert_int_equal(psb_shm_srv_send(v, &to, &h, pay), -ENOTCONN);
	assert_int_equal(st->tx_no_slot, 1);
	/* one killed takes its slot's region with it: the socket closing is enough */
	assert_int_equal(client_open(v, &a, 40003, err, sizeof(err)), 0);
	assert_int_equal(psb_shm_slot(a), 0);
	psb_shm_fds(a, fds);
	shutdown(fds[1], SHUT_RDWR);
	psb_shm_srv_ctl(v, now_ns());
	assert_int_equal(st->slots_used, 1);
	psb_shm_close(a);

	/* the server closing: the client hears it, the files are gone */
	psb_shm_srv_close(v);
	assert_int_equal(psb_shm_check(b), 0);
	assert_non_null(strstr(psb_shm_down_reason(b), "server"));
	psb_shm_close(b);
	snprintf(lock, sizeof(lock), "%s.lock", g_path);
	assert_int_not_equal(access(g_path, F_OK), 0);
	assert_int_not_equal(access(lock, F_OK), 0);
}

/* --- frames a store keeps on the ring --- */

struct keep {
	unsigned int n, offered;
	int keep;			/* return 1 for frames offered a ref */
	void *refs[8192];
	const uint8_t *pay[8192];
};

static int
keep_cb(void *arg, const struct psb_addr *from, const uint8_t *hdr, const uint8_t *payload,
		size_t len, void *ref)
{
	struct keep *k = arg;

	(void)from;
	(void)hdr;
	(void)len;
	k->refs[k->n] = ref;
	k->pay[k->n] = payload;
	k->n++;
	k->offered += ref != NULL;
	return k->keep && ref != NULL;
}

/* Every frame on the ring now, taken a burst at a time. */
static unsigned int
rx_all(struct psb_shm_srv *v, struct keep *k)
{
	unsigned int n = 0, m;

	while ((m = psb_shm_srv_rx(v, 4096, keep_cb, k)) != 0)
		n += m;
	return n;
}

/* Frames the client can put on its ring now, each a segment of a one-segment push. */
static unsigned int
fill(struct psb_shm *a, uint8_t type)
{
	struct psb_hdr h;
	uint8_t pay[64];
	unsigned int n = 0;

	psb_hdr_init(&h, type);
	h.key = 9;
	h.total_len = h.seg_len = h.seg_size = sizeof(pay);
	memset(pay, 0x5a, sizeof(pay));
	while (psb_shm_send(a, &h, pay) == 0)
		n++;
	psb_shm_flush(a);
	return n;
}

/*
 * A push's segments kept where they are: the ring's tail stops at the first kept one and
 * the client's buffers come back as they are handed back, in any order. Only pushes that
 * fit in half the ring are offered, and never more than half of it at once. A client that
 * leaves while frames of it are kept has its region mapped until the last one is back,
 * its slot free for the next meanwhile.
 */
static void
test_held_frames(void **state)
{
	struct psb_shm_srv *v = srv_open(1, 0);
	const struct psb_shm_srv_stats *st = psb_shm_srv_stats(v);
	struct psb_shm *a = NULL, *b = NULL;
	struct keep *k = calloc(1, sizeof(*k));
	struct got sg;
	struct psb_hdr h;
	uint8_t pay[4][256];
	char err[256];
	unsigned int i;

	(void)state;
	assert_non_null(k);
	assert_int_equal(client_open(v, &a, 40010, err, sizeof(err)), 0);
	memset(&sg, 0, sizeof(sg));
	assert_int_equal(psb_shm_srv_rx(v, 64, srv_cb, &sg), 1);	/* its ARP */
	psb_shm_srv_flush(v);
	psb_shm_rx(a, 64, cli_cb, &sg);

	/* a push of four segments, kept */
	psb_hdr_init(&h, PSB_MSG_PUSHPULL);
	h.key = 5;
	h.total_len = sizeof(pay);
	h.seg_size = sizeof(pay[0]);
	for (i = 0; i < 4; i++) {
		h.offset = i * sizeof(pay[0]);
		h.seg_len = sizeof(pay[0]);
		memset(pay[i], 0x10 + i, sizeof(pay[i]));
		assert_int_equal(psb_shm_send(a, &h, pay[i]), 0);
	}
	psb_shm_flush(a);
	k->keep = 1;
	assert_int_equal(psb_shm_srv_rx(v, 64, keep_cb, k), 4);
	assert_int_equal(k->offered, 4);
	assert_int_equal(st->rx_held, 4);
	for (i = 0; i < 4; i++)
		assert_int_equal(k->pay[i][0], 0x10 + i);
	/* the ring holds 1024: 1020 more, taken and not kept, and no more after them */
	k->keep = 0;
	assert_int_equal(fill(a, PSB_MSG_PULL), 1020);
	assert_int_equal(rx_all(v, k), 1020);
	assert_int_equal(fill(a, PSB_MSG_PULL), 0);
	/* handed back out of order: the tail moves past the first kept ones only */
	psb_shm_srv_release(v, k->refs[1]);
	assert_int_equal(fill(a, PSB_MSG_PULL), 0);
	psb_shm_srv_release(v, k->refs[0]);
	psb_shm_srv_release(v, k->refs[0]);	/* twice: nothing more */
	assert_int_equal(fill(a, PSB_MSG_PULL), 2);
	assert_int_equal(rx_all(v, k), 2);
	psb_shm_srv_release(v, k->refs[3]);
	psb_shm_srv_release(v, k->refs[2]);
	assert_int_equal(fill(a, PSB_MSG_PULL), 1024);
	assert_int_equal(rx_all(v, k), 1024);

	/* what is offered: pushes' segments alone, of pushes half the ring holds */
	k->n = k->offered = 0;
	k->keep = 1;
	h.total_len = 600 * sizeof(pay[0]);	/* 600 segments: more than 512 */
	h.offset = 0;
	assert_int_equal(psb_shm_send(a, &h, pay[0]), 0);
	psb_shm_flush(a);
	assert_int_equal(psb_shm_srv_rx(v, 64, keep_cb, k), 1);
	assert_int_equal(k->offered, 0);
	/* one-segment pushes, kept until half the ring is: the rest are not offered */
	assert_int_equal(fill(a, PSB_MSG_PUSH), 1024);
	assert_int_equal(rx_all(v, k), 1024);
	assert_int_equal(k->offered, 512);
	for (i = 1; i <= 1024; i++)
		psb_shm_srv_release(v, k->refs[i]);	/* NULL: nothing */
	assert_int_equal(fill(a, PSB_MSG_PUSH), 1024);

	/* kept while the client leaves: its region stays until handed back */
	k->n = 0;
	assert_int_equal(rx_all(v, k), 1024);
	psb_shm_close(a);
	psb_shm_srv_ctl(v, now_ns());
	psb_shm_srv_ctl(v, now_ns());
	assert_int_equal(st->slots_used, 0);
	assert_int_equal(k->pay[0][0], 0x5a);	/* still mapped */
	assert_int_equal(client_open(v, &b, 40011, err, sizeof(err)), 0);
	assert_int_equal(psb_shm_slot(b), 0);
	for (i = 0; i < 1024; i++)
		psb_shm_srv_release(v, k->refs[i]);
	psb_shm_srv_ctl(v, now_ns());
	psb_shm_close(b);
	psb_shm_srv_close(v);
	free(k);
}

/* --- a hostile client, by hand --- */

#define HC_SIZE		(1u << 20)
#define HC_LOG2		4
#define HC_C2S		0
#define HC_S2C		4096
#define HC_BUFS		65536
#define HC_BUF		2048

struct hc {
	int fd, memfd, efd[2];
	uint8_t *base;
};

static void
hc_send(struct hc *c, const struct psb_memif_msg *m, int passfd)
{
	uint8_t buf[PSB_MEMIF_MSG_LEN];
	char ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	psb_memif_msg_encode(buf, m);
	if (passfd >= 0) {
		memset(ctl, 0, sizeof(ctl));
		mh.msg_control = ctl;
		mh.msg_controllen = sizeof(ctl);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &passfd, sizeof(int));
	}
	assert_int_equal(sendmsg(c->fd, &mh, MSG_NOSIGNAL), sizeof(buf));
}

/* The server's answer to what was sent: its type (0: the socket closed), reason kept. */
static int
hc_reply(struct psb_shm_srv *v, struct hc *c, char *reason, size_t rlen)
{
	uint8_t buf[PSB_MEMIF_MSG_LEN];
	struct psb_memif_msg m;
	ssize_t n;
	int k;

	for (k = 0; k < 100; k++) {
		psb_shm_srv_ctl(v, now_ns());
		n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0)
			return 0;
		if (n > 0) {
			assert_int_equal(psb_memif_msg_decode(&m, buf, (size_t)n), 0);
			if (m.type == PSB_MEMIF_MSG_DISCONNECT && reason != NULL)
				snprintf(reason, rlen, "%s", m.u.disconnect.reason);
			return m.type;
		}
		usleep(1000);
	}
	return -1;
}

static void
hc_connect(struct psb_shm_srv *v, struct hc *c)
{
	struct sockaddr_un sa;

	memset(c, 0, sizeof(*c));
	c->memfd = c->efd[0] = c->efd[1] = -1;
	c->fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", g_path);
	assert_int_equal(connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(hc_reply(v, c, NULL, 0), PSB_MEMIF_MSG_HELLO);
}

static int
hc_init(struct psb_shm_srv *v, struct hc *c, uint32_t id, char *reason, size_t rlen)
{
	struct psb_memif_msg m;

	memset(&m, 0, sizeof(m));
	m.type = PSB_MEMIF_MSG_INIT;
	m.u.init.version = PSB_MEMIF_VERSION;
	m.u.init.id = id;
	hc_send(c, &m, -1);
	return hc_reply(v, c, reason, rlen);
}

static int
hc_memfd(uint64_t size, int seal)
{
	int fd = memfd_create("hostile", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	if (seal)
		assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	return fd;
}

static int
hc_region(struct psb_shm_srv *v, struct hc *c, uint64_t size, int fd, char *r, size_t rl)
{
	struct psb_memif_msg m;

	memset(&m, 0, sizeof(m));
	m.type = PSB_MEMIF_MSG_ADD_REGION;
	m.u.add_region.size = size;
	hc_send(c, &m, fd);
	return hc_reply(v, c, r, rl);
}

static int
hc_ring(struct psb_shm_srv *v, struct hc *c, int c2s, uint32_t off, uint8_t log2, int fd,
		char *r, size_t rl)
{
	struct psb_memif_msg m;

	memset(&m, 0, sizeof(m));
	m.type = PSB_MEMIF_MSG_ADD_RING;
	m.u.add_ring.flags = c2s ? PSB_MEMIF_RING_FLAG_C2S : 0;
	m.u.add_ring.offset = off;
	m.u.add_ring.log2_ring_size = log2;
	hc_send(c, &m, fd);
	return hc_reply(v, c, r, rl);
}

static void
hc_close(struct hc *c)
{
	if (c->base != NULL)
		munmap(c->base, HC_SIZE);
	close(c->fd);
	if (c->memfd >= 0)
		close(c->memfd);
	if (c->efd[0] >= 0)
		close(c->efd[0]);
	if (c->efd[1] >= 0)
		close(c->efd[1]);
}

/* A whole handshake by hand: a region of HC_SIZE, rings of 16 at HC_C2S and HC_S2C. */
static void
hc_up(struct psb_shm_srv *v, struct hc *c, uint32_t id)
{
	struct psb_memif_msg m;
	unsigned int i;

	hc_connect(v, c);
	assert_int_equal(hc_init(v, c, id, NULL, 0), PSB_MEMIF_MSG_ACK);
	c->memfd = hc_memfd(HC_SIZE, 1);
	c->base = mmap(NULL, HC_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, c->memfd, 0);
	assert_true(c->base != MAP_FAILED);
	memcpy(c->base + HC_C2S, &(uint32_t){ PSB_MEMIF_COOKIE }, 4);
	memcpy(c->base + HC_S2C, &(uint32_t){ PSB_MEMIF_COOKIE }, 4);
	assert_int_equal(hc_region(v, c, HC_SIZE, c->memfd, NULL, 0), PSB_MEMIF_MSG_ACK);
	c->efd[0] = eventfd(0, EFD_NONBLOCK);
	c->efd[1] = eventfd(0, EFD_NONBLOCK);
	assert_int_equal(hc_ring(v, c, 1, HC_C2S, HC_LOG2, c->efd[0], NULL, 0), PSB_MEMIF_MSG_ACK);
	assert_int_equal(hc_ring(v, c, 0, HC_S2C, HC_LOG2, c->efd[1], NULL, 0), PSB_MEMIF_MSG_ACK);
	memset(&m, 0, sizeof(m));
	m.type = PSB_MEMIF_MSG_CONNECT;
	hc_send(c, &m, -1);
	assert_int_equal(hc_reply(v, c, NULL, 0), PSB_MEMIF_MSG_CONNECTED);
	/* the buffers of the ring to it: 16, 2 KiB each */
	for (i = 0; i < (1u << HC_LOG2); i++) {
		uint8_t *d = c->base + HC_S2C + PSB_MEMIF_RING_DESC_OFF + i * PSB_MEMIF_DESC_LEN;
		uint32_t off = HC_BUFS + (16 + i) * HC_BUF, len = HC_BUF;

		memset(d, 0, PSB_MEMIF_DESC_LEN);
		memcpy(d + 4, &len, 4);
		memcpy(d + 8, &off, 4);
	}
}

static uint16_t *
hc_u16(struct hc *c, uint32_t ring, uint32_t off)
{
	return (uint16_t *)(void *)(c->base + ring + off);
}

/* Put a frame on the ring to the server with descriptor fields as given. */
static void
hc_tx(struct hc *c, const void *frame, uint32_t len, uint16_t flags, uint16_t region,
		uint32_t dlen, uint32_t off)
{
	uint16_t head = *hc_u16(c, HC_C2S, PSB_MEMIF_RING_HEAD_OFF);
	uint8_t *d = c->base + HC_C2S + PSB_MEMIF_RING_DESC_OFF +
		(head & ((1u << HC_LOG2) - 1)) * PSB_MEMIF_DESC_LEN;

	if (frame != NULL && off < HC_SIZE && len <= HC_SIZE - off)
		memcpy(c->base + off, frame, len);
	memcpy(d, &flags, 2);
	memcpy(d + 2, &region, 2);
	memcpy(d + 4, &dlen, 4);
	memcpy(d + 8, &off, 4);
	__atomic_store_n(hc_u16(c, HC_C2S, PSB_MEMIF_RING_HEAD_OFF), (uint16_t)(head + 1),
		__ATOMIC_RELEASE);
}

static void
test_hostile_handshake(void **state)
{
	struct psb_shm_srv *v = srv_open(2, 50000000ull);
	const struct psb_shm_srv_stats *st = psb_shm_srv_stats(v);
	struct psb_memif_msg m;
	struct hc c;
	char why[128];
	int fd, pfd[2];

	(void)state;
	/* a slot past the last, and a message before INIT */
	hc_connect(v, &c);
	assert_int_equal(hc_init(v, &c, 2, why, sizeof(why)), PSB_MEMIF_MSG_DISCONNECT);
	assert_string_equal(why, "ID not found");
	assert_int_equal(hc_reply(v, &c, NULL, 0), 0);
	hc_close(&c);
	hc_connect(v, &c);
	memset(&m, 0, sizeof(m));
	m.type = PSB_MEMIF_MSG_CONNECT;
	hc_send(&c, &m, -1);
	assert_int_equal(hc_reply(v, &c, why, sizeof(why)), PSB_MEMIF_MSG_DISCONNECT);
	hc_close(&c);
	/* not a message: too short, then an unknown type */
	hc_connect(v, &c);
	assert_int_equal(send(c.fd, "xx", 2, 0), 2);
	assert_int_equal(hc_reply(v, &c, why, sizeof(why)), PSB_MEMIF_MSG_DISCONNECT);
	hc_close(&c);
	hc_connect(v, &c);
	{
		uint8_t raw[PSB_MEMIF_MSG_LEN] = { 0x55 };

		assert_int_equal(send(c.fd, raw, sizeof(raw), 0), sizeof(raw));
	}
	assert_int_equal(hc_reply(v, &c, why, sizeof(why)), PSB_MEMIF_MSG_DISCONNECT);
	hc_close(&c);
	assert_int_equal(st->bad_msg, 3);

	/* regions: too large, unsealed, shorter than said, without a descriptor, twice */
	hc_connect(v, &c);
	assert_int_equal(hc_init(v, &c, 0, NULL, 0), PSB_MEMIF_MSG_ACK);
	fd = hc_memfd(4096, 1);
	assert_int_equal(hc_region(v, &c, 1ull << 40, fd, why, sizeof(why)),
		PSB_MEMIF_MSG_DISCONNECT);
	assert_non_null(strstr(why, "too large"));
	hc_close(&c);
	hc_connect(v, &c);
	assert_int_equal(hc_init(v, &c, 0, NULL, 0), PSB_MEMIF_MSG_ACK);
	assert_int_equal(hc_region(v, &c, 1u << 20, fd, why, sizeof(why)),
		PSB_MEMIF_MSG_DISCONNECT);
	assert_non_null(strstr(why, "shorter"));
	hc_close(&c);
	close(fd);
	fd = hc_memfd(1u << 20, 0);
	hc_connect(v, &c);
	assert_int_equal(hc_init(v, &c, 0, NULL, 0), PSB_MEMIF_MSG_ACK);
	assert_int_equal(hc_region(v, &c, 1u << 20, fd, why, sizeof(why)),
		PSB_MEMIF_MSG_DISCONNECT);
	assert_non_null(strstr(why, "sealed"));
	hc_close(&c);
	close(fd);
	/* a pipe is no memfd */
	assert_int_equal(pipe(pfd), 0);
	hc_connect(v, &c);
	assert_int_equal(hc_init(v, &c, 0, NULL, 0), PSB_MEMIF_MSG_ACK);
	assert_int_equal(hc_region(v, &c, 4096, pfd[0], why, sizeof(why)),
		PSB_MEMIF_MSG_DISCONNECT);
	hc_close(&c);
	hc_connect(v, &c);
	assert_int_equal(hc_init(v, &c, 0, NULL, 0), PSB_MEMIF_MSG_ACK);
	assert_int_equal(hc_region(v, &c, 4096, -1, why, sizeof(why)), PSB_MEMIF_MSG_DISCONNECT);
	hc_close(&c);
	assert_int_equal(st->bad_region, 4);
	assert_int_equal(st->bad_msg, 4);

	/* rings: beyond the region, too deep, misaligned, a pipe for an eventfd, CONNECT early */
	fd = hc_memfd(65536, 1);
	hc_connect(v, &c);
	assert_int_equal(hc_init(v, &c, 0, NULL, 0), PSB_MEMIF_MSG_ACK);
	assert_int_equal(hc_region(v, &c, 65536, fd, NULL, 0), PSB_MEMIF_MSG_ACK);
	c.efd[0] = eventfd(0, 0);
	assert_int_equal(hc_ring(v, &c, 1, 65536 - 64, 4, c.efd[0], why, sizeof(why)),
		PSB_MEMIF_MSG_DISCONNECT);
	assert_non_null(strstr(why, "out of the region"));
	hc_close(&c);
	c.efd[0] = -1;
	hc_connect(v, &c);
	assert_int_equal(hc_init(v, &c, 0, NULL, 0), PSB_MEMIF_MSG_ACK);
	assert_int_equal(hc_region(v, &c, 65536, fd, NULL, 0), PSB_MEMIF_MSG_ACK);
	assert_int_equal(hc_ring(v, &c, 1, 0, 15, pfd[0], why, sizeof(why)),
		PSB_MEMIF_MSG_DISCONNECT);
	hc_close(&c);
	hc_connect(v, &c);
	assert_int_equal(hc_init(v, &c, 0, NULL, 0), PSB_MEMIF_MSG_ACK);
	assert_int_equal(hc_region(v, &c, 65536, fd, NULL, 0), PSB_MEMIF_MSG_ACK);
	assert_int_equal(hc_ring(v, &c, 1, 2, 4, pfd[0], why, sizeof(why)),
		PSB_MEMIF_MSG_DISCONNECT);
	hc_close(&c);
	hc_connect(v, &c);
	assert_int_equal(hc_init(v, &c, 0, NULL, 0), PSB_MEMIF_MSG_ACK);
	assert_int_equal(hc_region(v, &c, 65536, fd, NULL, 0), PSB_MEMIF_MSG_ACK);
	assert_int_equal(hc_ring(v, &c, 1, 0, 4, pfd[0], why, sizeof(why)),
		PSB_MEMIF_MSG_DISCONNECT);
	assert_non_null(strstr(why, "eventfd"));
	hc_close(&c);
	hc_connect(v, &c);
	assert_int_equal(hc_init(v, &c, 0, NULL, 0), PSB_MEMIF_MSG_ACK);
	assert_int_equal(hc_region(v, &c, 65536, fd, NULL, 0), PSB_MEMIF_MSG_ACK);
	memset(&m, 0, sizeof(m));
	m.type = PSB_MEMIF_MSG_CONNECT;
	hc_send(&c, &m, -1);
	assert_int_equal(hc_reply(v, &c, why, sizeof(why)), PSB_MEMIF_MSG_DISCONNECT);
	hc_close(&c);
	/* rings there, without memif's cookie */
	hc_connect(v, &c);
	assert_int_equal(hc_init(v, &c, 0, NULL, 0), PSB_MEMIF_MSG_ACK);
	assert_int_equal(hc_region(v, &c, 65536, fd, NULL, 0), PSB_MEMIF_MSG_ACK);
	c.efd[0] = eventfd(0, 0);
	assert_int_equal(hc_ring(v, &c, 1, 0, 4, c.efd[0], NULL, 0), PSB_MEMIF_MSG_ACK);
	assert_int_equal(hc_ring(v, &c, 0, 4096, 4, c.efd[0], NULL, 0), PSB_MEMIF_MSG_ACK);
	hc_send(&c, &m, -1);
	assert_int_equal(hc_reply(v, &c, why, sizeof(why)), PSB_MEMIF_MSG_DISCONNECT);
	assert_non_null(strstr(why, "cookie"));
	hc_close(&c);
	close(fd);
	close(pfd[0]);
	close(pfd[1]);
	assert_int_equal(st->bad_ring, 6);

	/* silent: the handshake has a deadline */
	hc_connect(v, &c);
	usleep(60000);
	assert_int_equal(hc_reply(v, &c, why, sizeof(why)), PSB_MEMIF_MSG_DISCONNECT);
	assert_non_null(strstr(why, "in time"));
	hc_close(&c);
	assert_int_equal(st->timeouts, 1);
	assert_int_equal(st->links, 0);
	assert_int_equal(st->slots_used, 0);
	psb_shm_srv_close(v);
}

static void
test_hostile_rings(void **state)
{
	struct psb_shm_srv *v = srv_open(2, 0);
	const struct psb_shm_srv_stats *st = psb_shm_srv_stats(v);
	uint8_t frame[PSB_FRAME_HLEN + 64], pay[64] = { 0 };
	struct psb_addr src, dst;
	struct psb_hdr h;
	struct got sg;
	struct hc c;
	char why[128];
	uint16_t tail;

	(void)state;
	hc_up(v, &c, 1);
	assert_int_equal(st->slots_used, 1);
	memset(&src, 0, sizeof(src));
	memset(&dst, 0, sizeof(dst));
	src.ip = psb_shm_slot_ip(1);
	src.port = 41000;
	src.mac[0] = 0x02;
	dst.ip = SRV_IP;
	dst.port = SRV_PORT;
	psb_hdr_init(&h, PSB_MSG_PUSH);
	h.total_len = h.seg_len = h.seg_size = 64;
	psb_frame_build(frame, &src, &dst, &h, pay, 64);
	memset(&sg, 0, sizeof(sg));
	/* a good frame, then descriptors that lie */
	hc_tx(&c, frame, sizeof(frame), 0, 0, sizeof(frame), HC_BUFS);
	hc_tx(&c, frame, sizeof(frame), 0, 0, sizeof(frame), HC_SIZE - 10);	/* past the end */
	hc_tx(&c, frame, sizeof(frame), 0, 0, sizeof(frame), UINT32_MAX - 8);	/* wraps */
	hc_tx(&c, frame, sizeof(frame), 0, 1, sizeof(frame), HC_BUFS);	/* no region 1 */
	hc_tx(&c, frame, sizeof(frame), 0, 0, 0, HC_BUFS);
	hc_tx(&c, frame, sizeof(frame), 0, 0, UINT32_MAX, HC_BUFS);
	hc_tx(&c, frame, sizeof(frame), 0, 0, PSB_MAX_FRAME + 1, HC_BUFS);
	hc_tx(&c, frame, sizeof(frame), PSB_MEMIF_DESC_NEXT, 0, sizeof(frame), HC_BUFS);
	hc_tx(&c, frame, sizeof(frame) - 30, 0, 0, sizeof(frame) - 30, HC_BUFS + 4096);	/* cut */
	/* another slot's address: not this client's to use */
	src.ip = psb_shm_slot_ip(0);
	psb_frame_build(frame, &src, &dst, &h, pay, 64);
	hc_tx(&c, frame, sizeof(frame), 0, 0, sizeof(frame), HC_BUFS + 8192);
	assert_int_equal(psb_shm_srv_rx(v, 64, srv_cb, &sg), 10);
	assert_int_equal(sg.n, 1);
	assert_int_equal(sg.from.ip, psb_shm_slot_ip(1));
	assert_int_equal(st->bad_desc, 3);
	assert_int_equal(st->bad_length, 3);
	assert_int_equal(st->bad_chain, 1);
	assert_int_equal(st->bad_frame, 2);
	/* the server moved the tail to what it took */
	tail = __atomic_load_n(hc_u16(&c, HC_C2S, PSB_MEMIF_RING_TAIL_OFF), __ATOMIC_ACQUIRE);
	assert_int_equal(tail, 10);

	/* answers: the client gave no buffer yet (head 0): dropped, counted */
	psb_hdr_init(&h, PSB_MSG_PUSH_ACK);
	h.seg_len = 0;
	assert_int_equal(psb_shm_srv_send(v, &sg.from, &h, NULL), -ENOBUFS);
	assert_int_equal(st->tx_full, 1);
	/* one buffer given: the answer goes in it, its length set, the tail moved */
	*hc_u16(&c, HC_S2C, PSB_MEMIF_RING_HEAD_OFF) = 1;
	assert_int_equal(psb_shm_srv_send(v, &sg.from, &h, NULL), 0);
	psb_shm_srv_flush(v);
	assert_int_equal(*hc_u16(&c, HC_S2C, PSB_MEMIF_RING_TAIL_OFF), 1);
	{
		uint8_t *d = c.base + HC_S2C + PSB_MEMIF_RING_DESC_OFF;
		uint32_t len, off;
		struct psb_frame f;
		struct psb_parse_cfg pc = { .my_ip = psb_shm_slot_ip(1), .check_ip_csum = 1 };

		memcpy(&len, d + 4, 4);
		memcpy(&off, d + 8, 4);
		assert_int_equal(len, PSB_FRAME_HLEN);
		assert_int_equal(off, HC_BUFS + 16 * HC_BUF);
		assert_int_equal(psb_frame_parse(c.base + off, len, &pc, &f), PSB_FRAME_PSB);
		assert_int_equal(f.dst.port, 41000);
		assert_int_equal(f.src.ip, SRV_IP);
		assert_int_equal(f.hdr.type, PSB_MSG_PUSH_ACK);
	}
	/* a buffer out of the region: nothing written there, the link ends */
	{
		uint8_t *d = c.base + HC_S2C + PSB_MEMIF_RING_DESC_OFF + PSB_MEMIF_DESC_LEN;
		uint32_t off = HC_SIZE - 8;

		memcpy(d + 8, &off, 4);
	}
	*hc_u16(&c, HC_S2C, PSB_MEMIF_RING_HEAD_OFF) = 2;
	assert_int_equal(psb_shm_srv_send(v, &sg.from, &h, NULL), -ENOTCONN);
	assert_int_equal(st->bad_desc, 4);
	assert_int_equal(hc_reply(v, &c, why, sizeof(why)), PSB_MEMIF_MSG_DISCONNECT);
	assert_non_null(strstr(why, "out of its region"));
	assert_int_equal(st->slots_used, 0);
	hc_close(&c);
	psb_shm_srv_ctl(v, now_ns());

	/* ring counters that lie end the link: a head beyond the ring, either way */
	hc_up(v, &c, 0);
	*hc_u16(&c, HC_C2S, PSB_MEMIF_RING_HEAD_OFF) = 17;
	assert_int_equal(psb_shm_srv_rx(v, 64, srv_cb, &sg), 0);
	assert_int_equal(st->bad_index, 1);
	assert_int_equal(hc_reply(v, &c, why, sizeof(why)), PSB_MEMIF_MSG_DISCONNECT);
	hc_close(&c);
	hc_up(v, &c, 0);
	*hc_u16(&c, HC_S2C, PSB_MEMIF_RING_HEAD_OFF) = 40000;
	src.ip = psb_shm_slot_ip(0);
	assert_int_equal(psb_shm_srv_send(v, &src, &h, NULL), -ENOTCONN);
	assert_int_equal(st->bad_index, 2);
	assert_int_equal(hc_reply(v, &c, why, sizeof(why)), PSB_MEMIF_MSG_DISCONNECT);
	hc_close(&c);
	psb_shm_srv_ctl(v, now_ns());
	assert_int_equal(st->slots_used, 0);
	assert_int_equal(st->disconnects, 3);
	/* too many fds with a message once up: counted, the link stays */
	hc_up(v, &c, 0);
	{
		struct psb_memif_msg m;

		memset(&m, 0, sizeof(m));
		m.type = PSB_MEMIF_MSG_ADD_RING;
		hc_send(&c, &m, c.efd[0]);
		psb_shm_srv_ctl(v, now_ns());
		assert_int_equal(st->bad_msg, 1);
		assert_int_equal(st->slots_used, 1);
	}
	/* killed: the socket closes, the slot is free */
	hc_close(&c);
	psb_shm_srv_ctl(v, now_ns());
	assert_int_equal(st->slots_used, 0);
	psb_shm_srv_close(v);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_link),
		cmocka_unit_test(test_held_frames),
		cmocka_unit_test(test_hostile_handshake),
		cmocka_unit_test(test_hostile_rings),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
