/* Kernel-socket psb client: the worker engine driven over a non-blocking UDP socket. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <netinet/ip.h>

#include "psb_err.h"
#include "psb_client.h"
#include "psb_clock.h"
#include "psb_shm.h"
#include "psb_udp.h"

#define RX_BURSTS	4		/* recvmmsg calls per engine step at most */
#define LIVE_CHECK_NS	(50ull * 1000 * 1000)	/* how often the servers' liveness is looked at */
#define LIVE_PROBE_NS	(1000ull * 1000 * 1000)	/* silence before a probe, and between them */
#define SCHED_RETRY_NS	(200ull * 1000 * 1000)
#define SHM_CHECK_NS	(10ull * 1000 * 1000)	/* how often shared-memory links are looked at */
#define SHM_RX_BURST	256

/* A server's transport (srv.shm_state). */
enum {
	SHM_UNTRIED,		/* not chosen yet: at its first request */
	SHM_UP,			/* shared memory (srv.shm) */
	SHM_UDP,		/* UDP: no shared memory offered, auto fell back, or forced */
	SHM_FAILED,		/* forced to shared memory, which failed: its requests fail */
};

struct srv {
	struct sockaddr_in sa;
	uint64_t key_begin;
	uint64_t key_end;	/* UINT64_MAX: to the end of the key space */
	uint64_t heard_ns;	/* the last datagram from it */
	uint64_t busy_ns;	/* since when requests to it are in flight (0: none) */
	uint64_t probed_ns;	/* the last probe sent to it */
	struct psb_shm *shm;	/* its shared-memory link (NULL: UDP) */
	int shm_state;
};

struct psb_client {
	struct psb_client_cfg cfg;	/* defaults applied; the string pointers are not kept */
	int fd;
	uint16_t rank;
	uint16_t local_port;
	uint16_t io_seg;		/* the segment size the buffers were made for */
	struct psb_wk *wk;		/* engine of the blocking and asynchronous calls */
	struct psb_wk *active;		/* engine responses go to: wk or the benchmark's */
	struct psb_bench *bench;	/* running benchmark, NULL otherwise */
	int bench_rc;
	uint32_t last_round;
	int hard_errno;			/* last non-transient send error, 0 after a receive */
	uint64_t idle_since;		/* last time something moved, for the spin budget */
	uint16_t nservers;
	struct srv *servers;		/* [PSB_SCHED_MAX_NODES] */
	/* Scheduler conversation. */
	struct sockaddr_in sched;
	int have_sched;
	int reg_wait, reg_done;
	int bar_wait, bar_done;
	int fin_wait, fin_done;
	int sched_refused;		/* the host said nothing listens at the scheduler's port */
	uint32_t bar_group, bar_seq;
	struct psb_sched_view *view;
	struct psb_udp_io io;
	struct psb_client_stats st;
	struct psb_cwnd win;		/* value bytes of started requests in flight */
	uint64_t min_ss;		/* the window is not halved below this: two requests */
	/* Servers whose requests end at the next turn, and with what (0: none). */
	int *abort_status;		/* [PSB_SCHED_MAX_NODES] */
	int aborts;
	/* A probe: which server answered (1), refused (-ECONNREFUSED) or sent bad_sender. */
	int probing;
	int *probe;			/* [PSB_SCHED_MAX_NODES] */
	uint64_t live_check_ns;		/* the last look at the servers' liveness */
	int lost;			/* the server given up last (-1: none) */
	double lost_silent_s;
	uint32_t probe_id;
	/* Shared memory. */
	int transport;			/* enum psb_client_transport, DEFAULT resolved */
	struct psb_client_stats shm_gone;	/* what closed links counted */
	uint64_t shm_sent;		/* frames put on rings in this turn */
	uint64_t shm_check_ns;
	int shm_said;			/* the fallback was said on stderr */
	char shm_why[320];		/* why the last link failed, or was lost */
	struct pollfd *pfd;		/* [1 + 2 * PSB_SCHED_MAX_NODES] */
	int shm_armed;			/* the links were asked to signal (psb_client_wait_fds) */
};

static void
apply_defaults(struct psb_client_cfg *c)
{
	if (c->server_port == 0)
		c->server_port = PSB_UDP_PORT;
	if (c->seg_size == 0)
		c->seg_size = PSB_CLIENT_SEG_SIZE;
	if (c->window == 0)
		c->window = PSB_CLIENT_WINDOW;
	if (c->window_bytes == 0)
		c->window_bytes = PSB_CLIENT_WINDOW_BYTES;
	if (c->timeout_ns == 0)
		c->timeout_ns = PSB_CLIENT_TIMEOUT_NS;
	if (c->max_retries == 0)
		c->max_retries = PSB_CLIENT_MAX_RETRIES;
	if (c->busy_poll_ns == 0)
		c->busy_poll_ns = PSB_CLIENT_BUSY_POLL_NS;
	if (c->sockbuf == 0)
		c->sockbuf = PSB_CLIENT_SOCKBUF;
	if (c->sched_timeout_ns == 0)
		c->sched_timeout_ns = PSB_CLIENT_SCHED_TIMEOUT_NS;
}

void
psb_client_cfg_init(struct psb_client_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	apply_defaults(cfg);
}

/* Which server owns key: the one whose range holds it (ps-lite's range partition). */
static const struct srv *
server_of(const struct psb_client *c, uint64_t key)
{
	uint16_t s;

	if (c->nservers == 1)
		return &c->servers[0];
	for (s = 0; s < c->nservers; s++)
		if (key >= c->servers[s].key_begin &&
		    (key < c->servers[s].key_end || c->servers[s].key_end == UINT64_MAX))
			return &c->servers[s];
	return &c->servers[0];
}

/* Engine callback: the server (index) a key goes to, so batches never mix servers. */
static int
client_dest(void *arg, uint64_t key)
{
	const struct psb_client *c = arg;

	return (int)(server_of(c, key) - c->servers);
}

/* The index of the server at sa, or -1. */
static int
server_at(const struct psb_client *c, const struct sockaddr_in *sa)
{
	uint16_t s;

	for (s = 0; s < c->nservers; s++)
		if (c->servers[s].sa.sin_addr.s_addr == sa->sin_addr.s_addr &&
		    c->servers[s].sa.sin_port == sa->sin_port)
			return s;
	return -1;
}

/* End the requests to the server at sa with status once the engine is out of its call. */
static void
abort_later(struct psb_client *c, const struct sockaddr_in *sa, int status)
{
	int s = server_at(c, sa);

	if (s < 0 || c->abort_status[s] != 0)
		return;
	c->abort_status[s] = status;
	c->aborts++;
}

/* End the requests to server s with status once the engine is out of its call. */
static void
abort_server(struct psb_client *c, uint16_t s, int status)
{
	if (c->abort_status[s] != 0)
		return;
	c->abort_status[s] = status;
	c->aborts++;
}

/* --- shared memory --- */

static const char *
server_name(const struct psb_client *c, uint16_t s, char *buf, size_t len);

/* The counts of a link that closes: its stats keep them. */
static void
shm_account(struct psb_client *c, const struct psb_shm *l)
{
	const struct psb_shm_link_stats *ls = psb_shm_stats(l);
	struct psb_client_stats *g = &c->shm_gone;

	g->shm_tx_frames += ls->tx_frames;
	g->shm_tx_bytes += ls->tx_bytes;
	g->shm_rx_frames += ls->rx_frames;
	g->shm_rx_bytes += ls->rx_bytes;
	g->shm_ring_full += ls->ring_full;
	g->shm_bad_index += ls->bad_index;
	g->shm_bad_desc += ls->bad_desc;
	g->shm_bad_length += ls->bad_length;
	g->shm_bad_chain += ls->bad_chain;
	g->shm_bad_frame += ls->bad_frame;
}

static void
shm_detach(struct psb_client *c, struct srv *v)
{
	if (v->shm != NULL) {
		shm_account(c, v->shm);
		psb_shm_close(v->shm);
		v->shm = NULL;
	}
	v->shm_state = SHM_UNTRIED;
}

/* Why shared memory is not used, kept, and said on stderr once per client. */
static void
shm_note(struct psb_client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
shm_note(struct psb_client *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->shm_why, sizeof(c->shm_why), fmt, ap);
	va_end(ap);
	if (c->shm_said)
		return;
	c->shm_said = 1;
	fprintf(stderr, "psb client: %s\n", c->shm_why);
}

/*
 * Choose server s's transport: shared memory when its psb offers it here, as the client's
 * transport allows. 0, or -ENOTCONN when forced to shared memory and it failed.
 */
static int
shm_attach(struct psb_client *c, uint16_t s)
{
	struct srv *v = &c->servers[s];
	uint32_t ip = ntohl(v->sa.sin_addr.s_addr);
	uint16_t port = ntohs(v->sa.sin_port);
	struct psb_shm_cfg sc;
	char path[128], name[40], why[256];
	int rc;

	if (v->shm_state != SHM_UNTRIED)
		return v->shm_state == SHM_FAILED ? -ENOTCONN : 0;
	if (c->transport == PSB_CLIENT_TRANSPORT_UDP) {
		v->shm_state = SHM_UDP;
		return 0;
	}
	server_name(c, s, name, sizeof(name));
	rc = psb_shm_sock_path(ip, port, path, sizeof(path));
	if (rc == 0 && access(path, F_OK) != 0)
		rc = -errno;
	if (rc != 0) {
		snprintf(why, sizeof(why), "no socket %s (a psb server with --shm-clients on this "
			 "host makes it): %s", path, strerror(-rc));
		if (c->transport == PSB_CLIENT_TRANSPORT_AUTO) {
			/* a server on another host: nothing to say */
			c->st.shm_no_socket++;
			v->shm_state = SHM_UDP;
			return 0;
		}
	} else {
		memset(&sc, 0, sizeof(sc));
		sc.path = path;
		sc.server_ip = ip;
		sc.server_port = port;
		sc.local_port = c->local_port;
		rc = psb_shm_open(&sc, &v->shm, why, sizeof(why));
		if (rc == 0) {
			v->shm_state = SHM_UP;
			return 0;
		}
		if (rc == -EBUSY)
			c->st.shm_slots_busy++;
	}
	if (c->transport == PSB_CLIENT_TRANSPORT_AUTO) {
		c->st.shm_fallbacks++;
		shm_note(c, "server %s: shared memory not used, UDP instead: %s", name, why);
		v->shm_state = SHM_UDP;
		return 0;
	}
	shm_note(c, "server %s: no shared-memory link (transport shm): %s", name, why);
	v->shm_state = SHM_FAILED;
	return -ENOTCONN;
}

/* Server s's link went down: UDP from now on (auto), or its requests end (shm). */
static void
shm_lost(struct psb_client *c, uint16_t s)
{
	struct srv *v = &c->servers[s];
	char name[40], why[200];

	snprintf(why, sizeof(why), "%s", psb_shm_down_reason(v->shm));
	shm_account(c, v->shm);
	psb_shm_close(v->shm);
	v->shm = NULL;
	c->st.shm_links_lost++;
	server_name(c, s, name, sizeof(name));
	if (c->transport == PSB_CLIENT_TRANSPORT_AUTO) {
		c->st.shm_fallbacks++;
		shm_note(c, "server %s: shared-memory link lost (%s): UDP from now on", name, why);
		v->shm_state = SHM_UDP;
		return;
	}
	shm_note(c, "server %s: shared-memory link lost (%s; transport shm)", name, why);
	v->shm_state = SHM_FAILED;
	abort_server(c, s, -ENOTCONN);
}

/* The links' control sockets: a server that left takes its link down. */
static void
shm_check(struct psb_client *c, uint64_t now)
{
	uint16_t s;

	c->shm_check_ns = now;
	for (s = 0; s < c->nservers; s++)
		if (c->servers[s].shm != NULL && !psb_shm_check(c->servers[s].shm))
			shm_lost(c, s);
}

static void
shm_flush(struct psb_client *c)
{
	uint16_t s;

	for (s = 0; s < c->nservers; s++)
		if (c->servers[s].shm != NULL)
			psb_shm_flush(c->servers[s].shm);
}

static void
run_aborts(struct psb_client *c, uint64_t now)
{
	uint16_t s;

	if (c->aborts == 0)
		return;
	for (s = 0; s < c->nservers; s++) {
		if (c->abort_status[s] == 0)
			continue;
		psb_wk_abort(c->active, c->nservers == 1 ? -1 : s, c->abort_status[s], now);
		c->abort_status[s] = 0;
	}
	c->aborts = 0;
}

/*
 * Read what the host reported about datagrams sent (IP_RECVERR): a port or host
 * unreachable. Only a probe acts on it (a server that is restarting refuses for a
 * moment; requests retry through that); it is counted either way.
 */
static void
read_host_errors(struct psb_client *c)
{
	char ctl[512];
	struct sockaddr_in to;
	struct msghdr m;
	struct cmsghdr *cm;
	int n;

	for (n = 0; n < 64; n++) {
		memset(&m, 0, sizeof(m));
		m.msg_name = &to;
		m.msg_namelen = sizeof(to);
		m.msg_control = ctl;
		m.msg_controllen = sizeof(ctl);
		if (recvmsg(c->fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			return;
		for (cm = CMSG_FIRSTHDR(&m); cm != NULL; cm = CMSG_NXTHDR(&m, cm)) {
			const struct sock_extended_err *ee;
			int s;

			if (cm->cmsg_level != IPPROTO_IP || cm->cmsg_type != IP_RECVERR)
				continue;
			ee = (const struct sock_extended_err *)CMSG_DATA(cm);
			c->st.rx_host_errors++;
			if (c->have_sched && to.sin_addr.s_addr == c->sched.sin_addr.s_addr &&
			    to.sin_port == c->sched.sin_port && ee->ee_errno == ECONNREFUSED)
				c->sched_refused = 1;
			s = server_at(c, &to);
			if (c->probing && s >= 0 && c->probe[s] == 0)
				c->probe[s] = ee->ee_errno == ECONNREFUSED ? -ECONNREFUSED :
					-EHOSTUNREACH;
		}
	}
}

/*
 * Send what waits in the transmit batch. Returns datagrams sent. Transient
 * conditions (socket full) keep the rest for later; other errors drop the
 * datagram at the head, and the engine resends it after its timeout.
 */
static unsigned int
tx_flush(struct psb_client *c)
{
	struct psb_udp_io *io = &c->io;
	unsigned int total = 0;
	int n;

	while (io->txhead < io->ntx) {
		n = sendmmsg(c->fd, &io->txm[io->txhead], io->ntx - io->txhead, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
				c->st.tx_again++;
				break;
			}
			c->st.tx_errors++;
			c->st.last_tx_errno = errno;
			c->hard_errno = errno;
			/* No retry can carry it: its server's requests end at the next turn. */
			if (errno == EMSGSIZE) {
				c->st.tx_too_big++;
				abort_later(c, &io->txa[io->txhead], -EMSGSIZE);
			}
			io->txhead++;
			continue;
		}
		c->st.tx_bytes += psb_udp_sent(io, (unsigned int)n);
		c->st.tx_datagrams += (unsigned int)n;
		total += (unsigned int)n;
	}
	if (io->txhead == io->ntx)
		io->txhead = io->ntx = 0;
	shm_flush(c);
	return total;
}

/*
 * Engine transport: one message onto the server's shared ring, or queued for the socket
 * (copied either way, so the engine's buffers are free at once).
 */
static int
client_send(void *arg, const struct psb_hdr *h, const void *payload)
{
	struct psb_client *c = arg;
	uint16_t s = (uint16_t)(server_of(c, h->key) - c->servers);
	struct srv *v = &c->servers[s];
	int rc;

	if (v->shm_state == SHM_UNTRIED)
		(void)shm_attach(c, s);
	if (v->shm != NULL) {
		rc = psb_shm_send(v->shm, h, payload);
		if (rc == 0) {
			c->st.tx_datagrams++;
			c->st.tx_bytes += PSB_HDR_LEN + (uint64_t)h->seg_len;
			c->shm_sent++;
			return 0;
		}
		if (rc != -ENOTCONN)
			return rc;	/* the ring is full: the engine sends it later */
		shm_lost(c, s);
	}
	if (v->shm_state == SHM_FAILED) {
		abort_server(c, s, -ENOTCONN);
		return -ENOTCONN;
	}
	if (c->io.ntx == PSB_UDP_BATCH) {
		tx_flush(c);
		if (c->io.ntx != 0)
			return -ENOBUFS;	/* wait until the whole batch is out */
	}
	psb_udp_queue(&c->io, h, payload, &v->sa);
	return 0;
}

/* Scheduler messages are rare: sent at once, outside the batch. */
static int
send_ctrl(struct psb_client *c, uint8_t type, uint32_t aux, uint32_t round)
{
	uint8_t buf[PSB_HDR_LEN];
	struct psb_hdr h;

	psb_hdr_init(&h, type);
	h.flags = PSB_F_WORKER;
	h.sender = c->rank;
	h.aux = aux;
	h.round = round;
	psb_hdr_encode(buf, &h);
	if (sendto(c->fd, buf, sizeof(buf), 0, (const struct sockaddr *)&c->sched,
			sizeof(c->sched)) < 0) {
		c->st.tx_errors++;
		c->st.last_tx_errno = errno;
		return -errno;
	}
	c->st.tx_datagrams++;
	c->st.tx_bytes += sizeof(buf);
	return 0;
}

static void
on_done(void *arg, struct psb_wk_op *op)
{
	struct psb_client_req *r = (struct psb_client_req *)((uint8_t *)op -
		offsetof(struct psb_client_req, op));

	struct psb_client *c = arg;

	if (r->cost != 0) {
		c->win.inflight -= r->cost;
		psb_cwnd_grow(&c->win, r->cost, op->retries);
		r->cost = 0;
	}
	r->done = 1;
	if (r->cb != NULL)
		r->cb(r, r->cb_arg);
}

/* Settings of an engine that sends through the client: its own, or a benchmark's. */
static void
wk_cfg(struct psb_client *c, struct psb_wk_cfg *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->rank = c->rank;
	wc->sync = c->cfg.sync;
	wc->seg_size = c->cfg.seg_size;
	wc->timeout_ns = c->cfg.timeout_ns;
	wc->max_retries = c->cfg.max_retries == PSB_CLIENT_RETRY_FOREVER ? 0 : c->cfg.max_retries;
	wc->send = client_send;
	wc->send_arg = c;
	wc->dest = client_dest;
	wc->batch_max = c->cfg.batch_max;
}

static struct psb_wk *
make_wk(struct psb_client *c)
{
	struct psb_wk_cfg wc;

	wk_cfg(c, &wc);
	wc.window = c->cfg.window;
	wc.done = on_done;
	wc.done_arg = c;
	return psb_wk_create(&wc);
}

static void
handle_register_ack(struct psb_client *c, const struct psb_hdr *h, const uint8_t *payload)
{
	if (!c->reg_wait || c->reg_done)
		return;
	if (psb_sched_view_decode(c->view, payload, h->seg_len) != 0) {
		c->st.rx_bad_segment++;
		c->st.rx_bad++;
		return;
	}
	c->rank = (uint16_t)h->aux;
	c->reg_done = 1;
}

/* Validate one datagram and hand it to whoever waits for it. */
static void
rx_one(struct psb_client *c, const uint8_t *buf, size_t len, int truncated,
		const struct sockaddr_in *from, uint64_t now)
{
	struct psb_hdr h;

	c->st.rx_datagrams++;
	c->st.rx_bytes += len;
	if (truncated) {
		c->st.rx_bad_type++;
		c->st.rx_bad++;
		return;
	}
	if (len < PSB_HDR_LEN) {
		c->st.rx_bad_short++;
		c->st.rx_bad++;
		return;
	}
	psb_hdr_decode(&h, buf);
	if (c->cfg.server_timeout_ns != 0) {
		int sv = server_at(c, from);

		if (sv >= 0)
			c->servers[sv].heard_ns = now;
	}
	if (h.magic != PSB_MAGIC || h.version != PSB_VERSION) {
		c->st.rx_bad_magic++;
		c->st.rx_bad++;
		return;
	}
	if (psb_hdr_check_segment(&h, len - PSB_HDR_LEN) < 0) {
		c->st.rx_bad_segment++;
		c->st.rx_bad++;
		return;
	}
	/* A probe's answer, whatever it says, is the server's: it is there. */
	if (h.key == PSB_CLIENT_PROBE_KEY && (h.type == PSB_MSG_PULL_RESP ||
			h.type == PSB_MSG_ERROR)) {
		int sv = server_at(c, from);

		if (c->probing && sv >= 0 && c->probe[sv] <= 0)
			c->probe[sv] = h.type == PSB_MSG_ERROR &&
				h.status == PSB_ST_BAD_SENDER ? 2 : 1;
		return;
	}
	switch (h.type) {
	case PSB_MSG_PUSH_ACK:
	case PSB_MSG_PULL_RESP:
	case PSB_MSG_PUSHPULL_RESP:
	case PSB_MSG_BATCH_RESP:
	case PSB_MSG_REPAIR_RESP:
	case PSB_MSG_ERROR:
		c->hard_errno = 0;
		if (h.type == PSB_MSG_ERROR) {
			c->st.error_replies++;
			c->st.last_error_status = h.status;
		}
		psb_wk_input(c->active, &h, buf + PSB_HDR_LEN, now);
		break;
	case PSB_MSG_REGISTER_ACK:
		handle_register_ack(c, &h, buf + PSB_HDR_LEN);
		break;
	case PSB_MSG_BARRIER_ACK:
		if (c->bar_wait && h.aux == c->bar_group && h.round == c->bar_seq)
			c->bar_done = 1;
		break;
	case PSB_MSG_FINALIZE_ACK:
		if (c->fin_wait)
			c->fin_done = 1;
		break;
	default:
		c->st.rx_bad_type++;
		c->st.rx_bad++;
		break;
	}
}

struct shm_rx_ctx {
	struct psb_client *c;
	const struct sockaddr_in *from;
	uint64_t now;
};

static void
shm_input(void *arg, const uint8_t *dgram, size_t len)
{
	struct shm_rx_ctx *x = arg;

	rx_one(x->c, dgram, len, 0, x->from, x->now);
}

/* Read what the socket and the shared rings hold (a few batches at most). Returns datagrams read. */
static unsigned int
rx_burst(struct psb_client *c, uint64_t now)
{
	unsigned int total = 0, b, i;
	struct shm_rx_ctx x = { .c = c, .now = now };
	uint16_t s;
	int n;

	for (s = 0; s < c->nservers; s++) {
		struct srv *v = &c->servers[s];

		if (v->shm == NULL)
			continue;
		x.from = &v->sa;
		total += psb_shm_rx(v->shm, SHM_RX_BURST, shm_input, &x);
		if (v->shm != NULL && !psb_shm_up(v->shm))
			shm_lost(c, s);
	}

	for (b = 0; b < RX_BURSTS; b++) {
		n = psb_udp_recv(&c->io, c->fd);
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			read_host_errors(c);
		if (n <= 0)
			break;
		for (i = 0; i < (unsigned int)n; i++)
			rx_one(c, psb_udp_rx_data(&c->io, i), c->io.rxm[i].msg_len,
				psb_udp_rx_truncated(&c->io, i), &c->io.rxa[i], now);
		total += (unsigned int)n;
		if (n < PSB_UDP_BATCH)
			break;
	}
	return total;
}

/*
 * The descriptors a sleep for c waits on: the socket (writable too, with datagrams
 * waiting) and each shared-memory link's interrupt and control socket, whose servers are
 * asked to signal (the next turn takes that back: wait_end). The count, 0 when a ring
 * already holds frames, or -(the count needed) when max is less; *max_ns, how long the
 * sleep may last: short enough that resends go out on time, long enough not to spin.
 */
int
psb_client_wait_fds(struct psb_client *c, struct pollfd *pfd, int max, uint64_t *max_ns)
{
	uint64_t t = c->cfg.timeout_ns / 8;
	int n = 1, need = 1, ready = 0;
	uint16_t s;

	for (s = 0; s < c->nservers; s++)
		need += c->servers[s].shm != NULL ? 2 : 0;
	if (max < need)
		return -need;
	if (t < 100000)
		t = 100000;
	if (t > 5000000)
		t = 5000000;
	*max_ns = t;
	pfd[0].fd = c->fd;
	pfd[0].events = POLLIN;
	pfd[0].revents = 0;
	if (c->io.ntx != 0)
		pfd[0].events |= POLLOUT;
	for (s = 0; s < c->nservers; s++) {
		int fds[2];

		if (c->servers[s].shm == NULL)
			continue;
		c->shm_armed = 1;
		ready |= psb_shm_arm(c->servers[s].shm);
		psb_shm_fds(c->servers[s].shm, fds);
		pfd[n].fd = fds[0];
		pfd[n].events = POLLIN;
		pfd[n++].revents = 0;
		pfd[n].fd = fds[1];
		pfd[n].events = POLLIN;
		pfd[n++].revents = 0;
	}
	return ready ? 0 : n;
}

/* After a sleep on psb_client_wait_fds: the servers stop signalling; a link that went is seen. */
static void
wait_end(struct psb_client *c)
{
	uint16_t s;

	if (!c->shm_armed)
		return;
	c->shm_armed = 0;
	for (s = 0; s < c->nservers; s++)
		if (c->servers[s].shm != NULL)
			psb_shm_disarm(c->servers[s].shm);
	shm_check(c, psb_clock_ns());
}

/* Sleep until the socket or a shared-memory link has work for c, or a short while. */
static void
wait_io(struct psb_client *c)
{
	struct timespec ts;
	uint64_t t;
	int n = psb_client_wait_fds(c, c->pfd, 1 + 2 * PSB_SCHED_MAX_NODES, &t);

	ts.tv_sec = 0;
	ts.tv_nsec = (long)t;
	if (n > 0)
		ppoll(c->pfd, (nfds_t)n, &ts, NULL);
	wait_end(c);
}

static void send_probe(struct psb_client *c, uint16_t s, uint32_t id);

/*
 * Servers with requests in flight: one silent for LIVE_PROBE_NS (or a quarter of
 * server_timeout_ns, when less) is asked whether it is there, as often; one that answered nothing for server_timeout_ns since its
 * requests began to wait is given up, its requests ended with -EHOSTUNREACH.
 */
static void
check_servers(struct psb_client *c, uint64_t now)
{
	uint64_t probe_ns = c->cfg.server_timeout_ns / 4 < LIVE_PROBE_NS ?
		c->cfg.server_timeout_ns / 4 : LIVE_PROBE_NS;
	uint16_t s;

	c->live_check_ns = now;
	for (s = 0; s < c->nservers; s++) {
		struct srv *v = &c->servers[s];
		uint64_t since;

		if (psb_wk_inflight_to(c->active, c->nservers == 1 ? 0 : s) == 0) {
			v->busy_ns = 0;
			continue;
		}
		if (v->busy_ns == 0)
			v->busy_ns = now;
		since = v->heard_ns > v->busy_ns ? v->heard_ns : v->busy_ns;
		if (now - since >= c->cfg.server_timeout_ns) {
			c->lost = s;
			c->lost_silent_s = (double)(now - since) / 1e9;
			c->st.servers_lost++;
			c->abort_status[s] = -EHOSTUNREACH;
			c->aborts++;
			v->busy_ns = 0;
			continue;
		}
		if (now - since >= probe_ns && now - v->probed_ns >= probe_ns) {
			send_probe(c, s, 0xC0000000u | (c->probe_id++ & 0x3fffffffu));
			v->probed_ns = now;
			c->st.probes++;
		}
	}
}

/* One turn of the loop: receive, let the engine resend and advance, transmit, maybe sleep. */
static void
drive_once(struct psb_client *c)
{
	uint64_t now;
	unsigned int moved;

	wait_end(c);	/* a caller's own sleep on psb_client_wait_fds ended */
	now = psb_clock_ns();
	moved = rx_burst(c, now);
	if (c->bench != NULL) {
		if (c->bench_rc == 0)
			c->bench_rc = psb_bench_step(c->bench, now);
	} else {
		psb_wk_poll(c->wk, now);
		psb_cwnd_losses(&c->win, psb_wk_stats(c->wk)->losses, now, psb_wk_rto(c->wk),
			c->min_ss);
	}
	moved += tx_flush(c);
	moved += (unsigned int)c->shm_sent;
	c->shm_sent = 0;
	if (now - c->shm_check_ns >= SHM_CHECK_NS)
		shm_check(c, now);
	if (c->cfg.server_timeout_ns != 0 && now - c->live_check_ns >= LIVE_CHECK_NS)
		check_servers(c, now);
	run_aborts(c, now);
	if (moved != 0) {
		c->idle_since = now;
		return;
	}
	if (c->cfg.busy_poll_ns == UINT64_MAX || now - c->idle_since < c->cfg.busy_poll_ns)
		return;
	wait_io(c);
}

void
psb_client_poll(struct psb_client *c, int may_sleep)
{
	uint64_t busy;

	if (c == NULL)
		return;
	if (may_sleep) {
		drive_once(c);
		return;
	}
	busy = c->cfg.busy_poll_ns;
	c->cfg.busy_poll_ns = UINT64_MAX;	/* never sleeps */
	drive_once(c);
	c->cfg.busy_poll_ns = busy;
}

int
psb_client_parse_addr(const char *s, uint32_t *ip, uint16_t *port)
{
	char buf[64];
	const char *colon = strchr(s, ':');
	char *end;
	unsigned long p;

	if (colon == NULL)
		return psb_parse_ip(s, ip);
	if ((size_t)(colon - s) >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, (size_t)(colon - s));
	buf[colon - s] = '\0';
	if (psb_parse_ip(buf, ip) != 0)
		return -EINVAL;
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (errno != 0 || end == colon + 1 || *end != '\0' || p == 0 || p > 65535)
		return -EINVAL;
	*port = (uint16_t)p;
	return 0;
}

/* The transport cfg asks for, or PSB_TRANSPORT says. 0 or -EINVAL (err says why). */
static int
transport_of(const struct psb_client_cfg *cfg, int *t, char *err, size_t errlen)
{
	const char *e = getenv("PSB_TRANSPORT");

	if (cfg->transport < 0 || cfg->transport > PSB_CLIENT_TRANSPORT_UDP) {
		psb_set_err(err, errlen, "transport %d: expected auto, shm or udp", cfg->transport);
		return -EINVAL;
	}
	*t = cfg->transport;
	if (*t != PSB_CLIENT_TRANSPORT_DEFAULT)
		return 0;
	if (e == NULL || *e == '\0' || strcmp(e, "auto") == 0) {
		*t = PSB_CLIENT_TRANSPORT_AUTO;
	} else if (strcmp(e, "shm") == 0) {
		*t = PSB_CLIENT_TRANSPORT_SHM;
	} else if (strcmp(e, "udp") == 0) {
		*t = PSB_CLIENT_TRANSPORT_UDP;
	} else {
		psb_set_err(err, errlen, "PSB_TRANSPORT '%.32s': expected auto, shm or udp", e);
		return -EINVAL;
	}
	return 0;
}

struct psb_client *
psb_client_open(const struct psb_client_cfg *cfg, char *err, size_t errlen)
{
	struct psb_client *c;
	uint32_t sip, lip = 0;
	char why[160];
	int transport;

	if (cfg == NULL || cfg->server_ip == NULL) {
		psb_set_err(err, errlen, "no server address given (server_ip)");
		return NULL;
	}
	if (psb_parse_ip(cfg->server_ip, &sip) != 0) {
		psb_set_err(err, errlen, "server_ip '%s' is not an IPv4 address", cfg->server_ip);
		return NULL;
	}
	if (cfg->local_ip != NULL && psb_parse_ip(cfg->local_ip, &lip) != 0) {
		psb_set_err(err, errlen, "local_ip '%s' is not an IPv4 address", cfg->local_ip);
		return NULL;
	}
	if (cfg->seg_size != 0 && ((cfg->seg_size & 3) != 0 || cfg->seg_size > PSB_UDP_MAX_SEG)) {
		psb_set_err(err, errlen, "seg_size %u: expected a multiple of 4 in [4, %u]",
			cfg->seg_size, PSB_UDP_MAX_SEG);
		return NULL;
	}
	if (cfg->window > PSB_WK_MAX_WINDOW) {
		psb_set_err(err, errlen, "window %u: at most %u requests can be in flight", cfg->window,
			PSB_WK_MAX_WINDOW);
		return NULL;
	}
	if (transport_of(cfg, &transport, err, errlen) != 0)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		psb_set_err(err, errlen, "out of memory");
		return NULL;
	}
	c->fd = -1;
	c->transport = transport;
	c->cfg = *cfg;
	c->cfg.server_ip = NULL;
	c->cfg.local_ip = NULL;
	apply_defaults(&c->cfg);
	c->rank = cfg->rank;
	c->servers = calloc(PSB_SCHED_MAX_NODES, sizeof(*c->servers));
	c->view = calloc(1, sizeof(*c->view));
	c->abort_status = calloc(PSB_SCHED_MAX_NODES, sizeof(*c->abort_status));
	c->probe = calloc(PSB_SCHED_MAX_NODES, sizeof(*c->probe));
	c->pfd = calloc(1 + 2 * PSB_SCHED_MAX_NODES, sizeof(*c->pfd));
	c->io_seg = c->cfg.seg_size;
	if (psb_udp_io_init(&c->io, c->cfg.seg_size) != 0 || c->servers == NULL ||
	    c->view == NULL || c->abort_status == NULL || c->probe == NULL || c->pfd == NULL) {
		psb_set_err(err, errlen, "out of memory");
		goto fail;
	}
	c->nservers = 1;
	psb_udp_sa(&c->servers[0].sa, sip, c->cfg.server_port);
	c->servers[0].key_begin = 0;
	c->servers[0].key_end = UINT64_MAX;

	c->fd = psb_udp_open(lip, cfg->local_port, c->cfg.sockbuf, &c->local_port, why,
		sizeof(why));
	if (c->fd < 0) {
		psb_set_err(err, errlen, "%s", why);
		goto fail;
	}
	/* The host's word on datagrams sent (nothing listens there) reaches a probe. */
	{
		int one = 1;

		(void)setsockopt(c->fd, IPPROTO_IP, IP_RECVERR, &one, sizeof(one));
	}
	c->wk = make_wk(c);
	if (c->wk == NULL) {
		psb_set_err(err, errlen, "cannot create the worker engine (window %u): out of memory",
			c->cfg.window);
		goto fail;
	}
	c->active = c->wk;
	c->lost = -1;
	psb_cwnd_init(&c->win, c->cfg.window_bytes);
	return c;
fail:
	psb_client_close(c);
	return NULL;
}

struct psb_client *
psb_client_connect(const char *server, uint16_t rank, int sync, char *err, size_t errlen)
{
	struct psb_client_cfg cfg;
	char ip[INET_ADDRSTRLEN];
	uint32_t sip;
	uint16_t port = PSB_UDP_PORT;

	if (server == NULL || psb_client_parse_addr(server, &sip, &port) != 0) {
		psb_set_err(err, errlen, "server '%s': expected IP or IP:PORT, e.g. 198.18.0.1:9430",
			server != NULL ? server : "(null)");
		return NULL;
	}
	psb_client_cfg_init(&cfg);
	cfg.server_ip = psb_ip_str(sip, ip);
	cfg.server_port = port;
	cfg.rank = rank;
	cfg.sync = sync;
	return psb_client_open(&cfg, err, errlen);
}

void
psb_client_close(struct psb_client *c)
{
	uint16_t i;

	if (c == NULL)
		return;
	for (i = 0; c->servers != NULL && i < c->nservers; i++)
		shm_detach(c, &c->servers[i]);
	if (c->fd >= 0)
		close(c->fd);
	psb_wk_free(c->wk);
	psb_udp_io_free(&c->io);
	free(c->servers);
	free(c->view);
	free(c->abort_status);
	free(c->probe);
	free(c->pfd);
	free(c);
}

int
psb_client_start(struct psb_client *c, struct psb_client_req *r)
{
	uint64_t now;
	int rc;

	if (c == NULL || r == NULL || c->bench != NULL)
		return -EINVAL;
	r->done = 0;
	r->cost = r->op.type == PSB_MSG_PUSHPULL ? 2ull * r->op.len : r->op.len;
	if (r->cost == 0)
		r->cost = 1;		/* a pull of unknown length still takes its place */
	/* The bytes in flight: make progress until there is room. */
	while (!psb_cwnd_room(&c->win, r->cost))
		drive_once(c);
	for (;;) {
		now = psb_clock_ns();
		rc = psb_wk_submit(c->wk, &r->op, now);
		if (rc != -EBUSY)
			break;
		/* Window full: make progress until a request finishes. */
		drive_once(c);
	}
	if (rc == 0) {
		c->win.inflight += r->cost;
		if (c->min_ss < 2 * r->cost)
			c->min_ss = 2 * r->cost;
		tx_flush(c);
		c->idle_since = now;
	} else {
		r->cost = 0;
	}
	return rc;
}

int
psb_client_wait(struct psb_client *c, struct psb_client_req *r)
{
	int rc;

	if (c == NULL || r == NULL)
		return -EINVAL;
	while (!r->done) {
		/* Nothing in flight yet not done: r was never started here; do not hang. */
		if (psb_wk_inflight(c->wk) == 0)
			return -EINVAL;
		drive_once(c);
	}
	rc = r->op.status;
	/* A request that starved because sends failed says why, not just "timed out". */
	if (rc == -ETIMEDOUT && c->hard_errno != 0)
		rc = -c->hard_errno;
	if (rc == 0)
		c->last_round = r->op.out_round;
	else if (rc == PSB_ST_STALE)
		c->last_round = r->op.err_aux;	/* the key's current round, to resynchronise */
	return rc;
}

void
psb_client_wait_all(struct psb_client *c)
{
	if (c == NULL)
		return;
	while (psb_wk_inflight(c->wk) != 0)
		drive_once(c);
}

static int
run_op(struct psb_client *c, struct psb_client_req *r)
{
	int rc = psb_client_start(c, r);

	return rc != 0 ? rc : psb_client_wait(c, r);
}

/* Floats to bytes, refusing what no psb message can carry. */
static int
value_bytes(size_t n, uint32_t *len)
{
	if (n > PSB_MAX_VALUE / sizeof(float))
		return -EMSGSIZE;
	*len = (uint32_t)(n * sizeof(float));
	return 0;
}

/* PUSH (out NULL) or PUSHPULL of the n floats of val. */
static int
push_value(struct psb_client *c, uint8_t type, uint64_t key, const float *val, float *out,
		size_t n, uint32_t round)
{
	struct psb_client_req r;

	memset(&r, 0, sizeof(r));
	if (value_bytes(n, &r.op.len) != 0)
		return -EMSGSIZE;
	r.op.type = type;
	r.op.key = key;
	r.op.round = round;
	r.op.in = val;
	r.op.out = out;
	return run_op(c, &r);
}

int
psb_client_push(struct psb_client *c, uint64_t key, const float *val, size_t n, uint32_t round)
{
	if (c == NULL || val == NULL || n == 0)
		return -EINVAL;
	return push_value(c, PSB_MSG_PUSH, key, val, NULL, n, round);
}

int
psb_client_pull(struct psb_client *c, uint64_t key, float *out, size_t cap, size_t *n,
		uint32_t round)
{
	struct psb_client_req r;
	int rc;

	if (n != NULL)
		*n = 0;
	if (c == NULL || (out == NULL && cap != 0))
		return -EINVAL;
	memset(&r, 0, sizeof(r));
	if (cap > PSB_MAX_VALUE / sizeof(float))
		cap = PSB_MAX_VALUE / sizeof(float);
	r.op.type = PSB_MSG_PULL;
	r.op.key = key;
	r.op.round = round;
	r.op.len = (uint32_t)(cap * sizeof(float));
	r.op.out = out;
	rc = run_op(c, &r);
	if (n != NULL) {
		if (rc == 0)
			*n = r.op.out_len / sizeof(float);
		else if (rc == PSB_ST_LEN_MISMATCH)
			*n = r.op.err_aux / sizeof(float);
	}
	return rc;
}

int
psb_client_pushpull(struct psb_client *c, uint64_t key, const float *val, float *out, size_t n,
		uint32_t round)
{
	if (c == NULL || val == NULL || out == NULL || n == 0)
		return -EINVAL;
	return push_value(c, PSB_MSG_PUSHPULL, key, val, out, n, round);
}

uint32_t
psb_client_last_round(const struct psb_client *c)
{
	return c->last_round;
}

int
psb_client_bench(struct psb_client *c, const struct psb_bench_cfg *bc,
		struct psb_bench_result *res)
{
	struct psb_wk_cfg wc;
	int rc;

	if (c == NULL || bc == NULL)
		return -EINVAL;
	if (psb_wk_inflight(c->wk) != 0 || c->bench != NULL)
		return -EBUSY;
	wk_cfg(c, &wc);
	c->bench = psb_bench_create(bc, &wc);
	if (c->bench == NULL)
		return -EINVAL;
	c->active = psb_bench_wk(c->bench);
	c->bench_rc = 0;
	c->idle_since = psb_clock_ns();
	while (c->bench_rc == 0)
		drive_once(c);
	rc = c->bench_rc;
	if (res != NULL)
		psb_bench_result(c->bench, psb_clock_ns(), res);
	/* The benchmark's requests are gone with it: drop whatever of them still waits. */
	c->io.ntx = c->io.txhead = 0;
	psb_bench_free(c->bench);
	c->bench = NULL;
	c->active = c->wk;
	return rc < 0 ? rc : 0;
}

/* Server s at ip:port from now on: a link to another address is closed. */
static void
server_addr(struct psb_client *c, uint16_t s, uint32_t ip, uint16_t port)
{
	struct srv *v = &c->servers[s];
	struct sockaddr_in sa;

	psb_udp_sa(&sa, ip, port);
	if (s < c->nservers && v->sa.sin_addr.s_addr == sa.sin_addr.s_addr &&
	    v->sa.sin_port == sa.sin_port)
		return;
	shm_detach(c, v);
	v->sa = sa;
}

/* n servers from now on: the links of those past n are closed. */
static void
servers_count(struct psb_client *c, uint16_t n)
{
	uint16_t s;

	for (s = n; s < c->nservers; s++)
		shm_detach(c, &c->servers[s]);
	c->nservers = n;
}

/* Take the scheduler's view: the servers and their key ranges (when it names them). */
static void
adopt_view(struct psb_client *c, const struct psb_sched_view *v)
{
	uint16_t s;

	if (v->num_servers == 0)
		return;
	for (s = 0; s < v->num_servers; s++)
		if (v->servers[s].ip == 0 || v->servers[s].port == 0)
			return;
	for (s = 0; s < v->num_servers; s++) {
		server_addr(c, s, v->servers[s].ip, v->servers[s].port);
		c->servers[s].key_begin = v->servers[s].key_begin;
		c->servers[s].key_end = v->servers[s].key_end;
	}
	servers_count(c, v->num_servers);
}

/*
 * One exchange with the scheduler: `type` is sent every SCHED_RETRY_NS until its answer sets
 * *done (drive_once does, while *wait says one is awaited) or timeout_ns passed.
 */
static int
sched_exchange(struct psb_client *c, uint8_t type, uint32_t aux, uint32_t round,
		uint64_t timeout_ns, int *wait, int *done)
{
	uint64_t now, deadline = psb_clock_ns() + timeout_ns, next_send = 0;
	int rc = 0;

	*wait = 1;
	*done = 0;
	c->sched_refused = 0;
	while (!*done) {
		now = psb_clock_ns();
		/* a scheduler still starting refuses for a moment: asked again until the deadline */
		if (now >= deadline) {
			rc = c->sched_refused ? -ECONNREFUSED : -ETIMEDOUT;
			break;
		}
		if (now >= next_send) {
			send_ctrl(c, type, aux, round);
			next_send = now + SCHED_RETRY_NS;
		}
		drive_once(c);
	}
	*wait = 0;
	return rc;
}

int
psb_client_register(struct psb_client *c, const char *sched_ip, uint16_t sched_port,
		uint16_t *rank, struct psb_sched_view *view)
{
	struct psb_wk *nwk;
	uint16_t old_rank;
	uint32_t ip;
	int rc;

	if (c == NULL || sched_ip == NULL || psb_parse_ip(sched_ip, &ip) != 0)
		return -EINVAL;
	if (psb_wk_inflight(c->wk) != 0 || c->bench != NULL)
		return -EBUSY;
	psb_udp_sa(&c->sched, ip, sched_port != 0 ? sched_port : PSB_SCHED_PORT);
	c->have_sched = 1;
	old_rank = c->rank;
	rc = sched_exchange(c, PSB_MSG_REGISTER, PSB_GROUP_WORKERS, 0, c->cfg.sched_timeout_ns,
		&c->reg_wait, &c->reg_done);
	if (rc != 0)
		return rc;
	if (c->rank != old_rank) {
		/* The engine stamps its rank on every request: make a new one. */
		nwk = make_wk(c);
		if (nwk == NULL) {
			c->rank = old_rank;
			return -ENOMEM;
		}
		psb_wk_free(c->wk);
		c->wk = c->active = nwk;
	}
	adopt_view(c, c->view);
	if (rank != NULL)
		*rank = c->rank;
	if (view != NULL)
		*view = *c->view;
	return 0;
}

int
psb_client_barrier(struct psb_client *c, uint32_t group, uint32_t seq)
{
	if (c == NULL)
		return -EINVAL;
	if (!c->have_sched)
		return -ENOTCONN;
	c->bar_group = group;
	c->bar_seq = seq;
	return sched_exchange(c, PSB_MSG_BARRIER, group, seq, c->cfg.sched_timeout_ns,
		&c->bar_wait, &c->bar_done);
}

int
psb_client_finalize(struct psb_client *c, uint64_t timeout_ns)
{
	if (c == NULL)
		return -EINVAL;
	if (!c->have_sched)
		return -ENOTCONN;
	return sched_exchange(c, PSB_MSG_FINALIZE, 0, 0, timeout_ns, &c->fin_wait, &c->fin_done);
}

int
psb_client_set_servers(struct psb_client *c, uint16_t n, const uint32_t *ip,
		const uint16_t *port)
{
	uint16_t s;

	if (c == NULL || n == 0 || n > PSB_SCHED_MAX_NODES || ip == NULL)
		return -EINVAL;
	for (s = 0; s < n; s++)
		if (ip[s] == 0)
			return -EINVAL;
	if (psb_wk_inflight(c->wk) != 0 || c->bench != NULL)
		return -EBUSY;
	for (s = 0; s < n; s++) {
		server_addr(c, s, ip[s], port != NULL && port[s] != 0 ? port[s] : PSB_UDP_PORT);
		psb_sched_key_range(s, n, &c->servers[s].key_begin, &c->servers[s].key_end);
		if (s == n - 1)
			c->servers[s].key_end = UINT64_MAX;
	}
	servers_count(c, n);
	return 0;
}

int
psb_client_set_seg_size(struct psb_client *c, uint16_t seg)
{
	uint16_t old;
	struct psb_wk *nwk;

	if (c == NULL || seg == 0 || (seg & 3) != 0 || seg > c->io_seg)
		return -EINVAL;
	if (psb_wk_inflight(c->wk) != 0 || c->bench != NULL)
		return -EBUSY;
	if (seg == c->cfg.seg_size)
		return 0;
	old = c->cfg.seg_size;
	c->cfg.seg_size = seg;
	nwk = make_wk(c);
	if (nwk == NULL) {
		c->cfg.seg_size = old;
		return -ENOMEM;
	}
	psb_wk_free(c->wk);
	c->wk = c->active = nwk;
	return 0;
}

/* One probe to server s: a PULL of the probe key, outside the engine. */
static void
send_probe(struct psb_client *c, uint16_t s, uint32_t id)
{
	uint8_t buf[PSB_HDR_LEN];
	struct psb_hdr h;

	psb_hdr_init(&h, PSB_MSG_PULL);
	h.sender = c->rank;
	h.req_id = id;
	h.key = PSB_CLIENT_PROBE_KEY;
	h.flags = c->cfg.sync ? PSB_F_SYNC : 0;
	if (c->servers[s].shm_state == SHM_UNTRIED)
		(void)shm_attach(c, s);
	if (c->servers[s].shm_state == SHM_FAILED) {
		if (c->probing && c->probe[s] == 0)
			c->probe[s] = -ENOTCONN;
		return;
	}
	if (c->servers[s].shm != NULL) {
		if (psb_shm_send(c->servers[s].shm, &h, NULL) == 0) {
			psb_shm_flush(c->servers[s].shm);
			c->st.tx_datagrams++;
			c->st.tx_bytes += sizeof(buf);
		}
		return;
	}
	psb_hdr_encode(buf, &h);
	if (sendto(c->fd, buf, sizeof(buf), 0, (const struct sockaddr *)&c->servers[s].sa,
			sizeof(c->servers[s].sa)) < 0) {
		c->st.tx_errors++;
		c->st.last_tx_errno = errno;
		return;
	}
	c->st.tx_datagrams++;
	c->st.tx_bytes += sizeof(buf);
}

/* "IP:PORT" of server s, for messages. */
static const char *
server_name(const struct psb_client *c, uint16_t s, char *buf, size_t len)
{
	char ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &c->servers[s].sa.sin_addr, ip, sizeof(ip));
	snprintf(buf, len, "%s:%u", ip, ntohs(c->servers[s].sa.sin_port));
	return buf;
}

int
psb_client_probe(struct psb_client *c, uint64_t timeout_ns, char *err, size_t errlen)
{
	uint64_t now, deadline, next_send = 0;
	uint32_t id = 0x80000000u;
	uint16_t s, left;
	size_t off = 0;
	char name[40];
	int rc = 0;

	if (c == NULL)
		return -EINVAL;
	if (psb_wk_inflight(c->wk) != 0 || c->bench != NULL)
		return -EBUSY;
	memset(c->probe, 0, c->nservers * sizeof(*c->probe));
	c->probing = 1;
	deadline = psb_clock_ns() + timeout_ns;
	for (;;) {
		now = psb_clock_ns();
		/* the host's word (refused, unreachable) ends the wait for that server too */
		for (s = 0, left = 0; s < c->nservers; s++)
			left += c->probe[s] == 0;
		if (left == 0 || now >= deadline)
			break;
		if (now >= next_send) {
			for (s = 0; s < c->nservers; s++)
				if (c->probe[s] == 0)
					send_probe(c, s, id++);
			next_send = now + 100ull * 1000 * 1000;
		}
		drive_once(c);
	}
	c->probing = 0;
	if (err != NULL && errlen != 0)
		err[0] = '\0';
	for (s = 0; s < c->nservers; s++) {
		const char *why;
		int r;

		if (c->probe[s] == 1)
			continue;
		if (c->probe[s] == 2) {
			why = "answered bad_sender: this rank is not below its --num-workers";
			r = -EBADSLT;
		} else if (c->probe[s] == -ECONNREFUSED) {
			why = "refused: nothing listens there";
			r = -ECONNREFUSED;
		} else if (c->probe[s] == -ENOTCONN) {
			why = "cannot be reached over shared memory (transport shm)";
			r = -ENOTCONN;
		} else {
			why = c->probe[s] == -EHOSTUNREACH ? "unreachable" : "did not answer";
			r = -EHOSTUNREACH;
		}
		if (rc == 0 || rc == -ECONNREFUSED)
			rc = r;
		if (err != NULL && off + 1 < errlen)
			off += (size_t)snprintf(err + off, errlen - off, "%sserver %s %s",
				off != 0 ? "; " : "", server_name(c, s, name, sizeof(name)), why);
		if (err != NULL && off >= errlen)
			off = errlen - 1;
	}
	if (rc != 0 && err != NULL && off + 1 < errlen)
		snprintf(err + off, errlen - off, " (within %.1f s)", (double)timeout_ns / 1e9);
	return rc;
}

uint16_t
psb_client_route_seg(uint32_t ip, uint16_t port, char *err, size_t errlen)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(int);
	int fd, mtu = 0;
	long seg;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		psb_set_err(err, errlen, "cannot create a UDP socket: %s", strerror(errno));
		return 0;
	}
	psb_udp_sa(&sa, ip, port != 0 ? port : PSB_UDP_PORT);
	if (connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    getsockopt(fd, IPPROTO_IP, IP_MTU, &mtu, &len) != 0) {
		char b[INET_ADDRSTRLEN];

		psb_set_err(err, errlen, "no route to %s: %s", psb_ip_str(ip, b), strerror(errno));
		close(fd);
		return 0;
	}
	close(fd);
	seg = ((long)mtu - 20 - 8 - PSB_HDR_LEN) & ~3L;
	if (seg < 4) {
		psb_set_err(err, errlen, "the route's MTU (%d) leaves no room for a value", mtu);
		return 0;
	}
	return (uint16_t)(seg > (long)PSB_UDP_MAX_SEG ? PSB_UDP_MAX_SEG : seg);
}

const char *
psb_client_lost_server(const struct psb_client *c, double *silent_s)
{
	static __thread char name[40];

	if (c == NULL || c->lost < 0 || c->lost >= c->nservers)
		return NULL;
	if (silent_s != NULL)
		*silent_s = c->lost_silent_s;
	return server_name(c, (uint16_t)c->lost, name, sizeof(name));
}

const char *
psb_client_strerror(int rc)
{
	if (rc == 0)
		return "success";
	if (rc == -ETIMEDOUT)
		return "no answer from the server (timed out after all retries)";
	if (rc == -ESTALE)
		return "the server restarted (its answers carry another epoch): what it stored "
			"is lost";
	if (rc < 0)
		return strerror(-rc);
	switch (rc) {
	case PSB_ST_BAD_VERSION:
		return "server: protocol version not supported (bad_version)";
	case PSB_ST_BAD_TYPE:
		return "server: unknown message type (bad_type)";
	case PSB_ST_LEN_MISMATCH:
		return "length differs from the key's stored value (length_mismatch)";
	case PSB_ST_NO_KEY:
		return "server: key was never pushed (no_key)";
	case PSB_ST_TOO_LARGE:
		return "server: value larger than the server accepts (too_large)";
	case PSB_ST_NO_MEM:
		return "server: its store is full, store.max_keys or store.max_bytes (no_memory)";
	case PSB_ST_BAD_SENDER:
		return "server: rank not below the server's --num-workers (bad_sender)";
	case PSB_ST_STALE:
		return "server: request is for another synchronous round (stale)";
	case PSB_ST_BUSY:
		return "server: busy through every retry, its reassembly budget "
		       "(store.reasm_bytes / store.reasm_sender_bytes) stayed full (busy)";
	default:
		return "unknown psb status";
	}
}

uint16_t
psb_client_rank(const struct psb_client *c)
{
	return c->rank;
}

uint16_t
psb_client_local_port(const struct psb_client *c)
{
	return c->local_port;
}

int
psb_client_fd(const struct psb_client *c)
{
	return c->fd;
}

void
psb_client_stats(const struct psb_client *c, struct psb_client_stats *st)
{
	const struct psb_client_stats *g = &c->shm_gone;
	uint16_t s;

	*st = c->st;
	st->wk = *psb_wk_stats(c->wk);
	st->shm_tx_frames = g->shm_tx_frames;
	st->shm_tx_bytes = g->shm_tx_bytes;
	st->shm_rx_frames = g->shm_rx_frames;
	st->shm_rx_bytes = g->shm_rx_bytes;
	st->shm_ring_full = g->shm_ring_full;
	st->shm_bad_index = g->shm_bad_index;
	st->shm_bad_desc = g->shm_bad_desc;
	st->shm_bad_length = g->shm_bad_length;
	st->shm_bad_chain = g->shm_bad_chain;
	st->shm_bad_frame = g->shm_bad_frame;
	st->shm_servers = 0;
	for (s = 0; s < c->nservers; s++) {
		const struct psb_shm_link_stats *ls;

		if (c->servers[s].shm == NULL)
			continue;
		ls = psb_shm_stats(c->servers[s].shm);
		st->shm_servers++;
		st->shm_tx_frames += ls->tx_frames;
		st->shm_tx_bytes += ls->tx_bytes;
		st->shm_rx_frames += ls->rx_frames;
		st->shm_rx_bytes += ls->rx_bytes;
		st->shm_ring_full += ls->ring_full;
		st->shm_bad_index += ls->bad_index;
		st->shm_bad_desc += ls->bad_desc;
		st->shm_bad_length += ls->bad_length;
		st->shm_bad_chain += ls->bad_chain;
		st->shm_bad_frame += ls->bad_frame;
	}
	st->shm_bad = st->shm_bad_index + st->shm_bad_desc + st->shm_bad_length +
		st->shm_bad_chain + st->shm_bad_frame;
}

int
psb_client_transport(struct psb_client *c, uint16_t s, char *why, size_t whylen)
{
	int rc;

	if (why != NULL && whylen != 0)
		why[0] = '\0';
	if (c == NULL || s >= c->nservers)
		return -EINVAL;
	rc = shm_attach(c, s);
	if (rc != 0) {
		psb_set_err(why, whylen, "%s", c->shm_why);
		return rc;
	}
	return c->servers[s].shm != NULL;
}
