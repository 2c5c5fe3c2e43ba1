/* A psb server on a kernel UDP socket: receive, hand to the store, send its answers. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "psb_err.h"
#include "psb_clock.h"
#include "psb_ksrv.h"
#include "psb_sched.h"
#include "psb_shm.h"
#include "psb_udp.h"

#define TX_WAIT_MS	10	/* a full socket gets this long to drain before datagrams drop */
#define REG_RETRY_MS	200	/* REGISTER again after this long without an answer */
#define SHM_BURST	256	/* frames from the slots in a turn, as many as one UDP batch's */
#define SHM_CTL_NS	1000000ull	/* the slots' control sockets looked at this often */

struct psb_ksrv {
	struct psb_ksrv_cfg cfg;
	int fd;
	uint16_t port;
	uint32_t epoch;			/* in every answer: a restart is a new one */
	uint16_t rank, num_servers, num_workers;
	int ended;
	struct psb_kv *kv;
	struct psb_kv_budget budget;
	struct psb_udp_io io;
	struct psb_ksrv_counters cnt;
	struct psb_shm_srv *shm;	/* the slots (NULL: none) */
	uint64_t shm_ctl_ns;		/* their control sockets looked at next */
	char shm_path[128];
	char shm_why[256];
	/* what a slot's client sent that is parsed, copied out of its reach first */
	uint8_t shm_copy[PSB_MAX_FRAME] __attribute__((aligned(64)));
};

/* The machine's memory (MemTotal), bytes; 1 GiB when unknown. */
static uint64_t
mem_total(void)
{
	unsigned long long kb = 0;
	char line[256];
	FILE *f = fopen("/proc/meminfo", "r");

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
			break;
	if (f != NULL)
		fclose(f);
	return kb != 0 ? (uint64_t)kb * 1024 : 1ull << 30;
}

/* Send the transmit batch; a full socket gets a short wait, then the rest is dropped. */
static void
tx_flush(struct psb_ksrv *s)
{
	struct pollfd pfd = { .fd = s->fd, .events = POLLOUT };
	struct psb_udp_io *io = &s->io;
	int n, waited = 0;

	if (s->shm != NULL)
		psb_shm_srv_flush(s->shm);
	while (io->txhead < io->ntx) {
		n = sendmmsg(s->fd, &io->txm[io->txhead], io->ntx - io->txhead, 0);
		if (n > 0) {
			s->cnt.tx_bytes += psb_udp_sent(io, (unsigned int)n);
			s->cnt.tx_datagrams += (unsigned int)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) &&
		    !waited) {
			s->cnt.tx_again++;
			waited = 1;
			poll(&pfd, 1, TX_WAIT_MS);
			continue;
		}
		/* The worker resends after its timeout; the answer is repeated then. */
		s->cnt.tx_dropped++;
		io->txhead++;
	}
	io->ntx = io->txhead = 0;
}

static void
queue_msg(struct psb_ksrv *s, const struct psb_addr *to, const struct psb_hdr *h,
		const void *payload)
{
	struct sockaddr_in sa;

	/* a slot's client: the slot it sent from, as its request came */
	if (s->shm != NULL && psb_shm_srv_slot_of(s->shm, to->ip) >= 0) {
		if (psb_shm_srv_send(s->shm, to, h, payload) == 0) {
			s->cnt.tx_datagrams++;
			s->cnt.tx_bytes += PSB_HDR_LEN + h->seg_len;
		} else {
			/* a full ring, or the client left: it asks again, as after a loss */
			s->cnt.tx_dropped++;
		}
		return;
	}
	if (s->io.ntx == PSB_UDP_BATCH)
		tx_flush(s);
	psb_udp_sa(&sa, to->ip, to->port);
	psb_udp_queue(&s->io, h, payload, &sa);
}

/*
 * kv response: cut the value into segments of h->seg_size, or the one segment h->seg_len
 * asks for (copied: value is only borrowed).
 */
static void
kv_emit(void *arg, const struct psb_addr *to, struct psb_hdr *h, const void *value)
{
	struct psb_ksrv *s = arg;
	uint32_t total, off;

	psb_kv_emit_span(h, &off, &total);
	do {
		uint32_t left = total - off;

		h->offset = off;
		h->seg_len = (uint16_t)(left < h->seg_size ? left : h->seg_size);
		queue_msg(s, to, h, value != NULL ? (const uint8_t *)value + off : NULL);
		off += h->seg_len;
	} while (off < total);
}

int
psb_ksrv_check(struct psb_ksrv *s, const uint8_t *buf, size_t len, int truncated,
		struct psb_hdr *h)
{
	s->cnt.rx_datagrams++;
	s->cnt.rx_bytes += len;
	if (truncated) {
		s->cnt.bad_truncated++;
		return -1;
	}
	if (len < PSB_HDR_LEN) {
		s->cnt.bad_short++;
		return -1;
	}
	psb_hdr_decode(h, buf);
	if (h->magic != PSB_MAGIC) {
		s->cnt.bad_magic++;
		return -1;
	}
	/* A foreign version is still answered (BAD_VERSION) by the store, as psb does. */
	if (h->version == PSB_VERSION && psb_hdr_check_segment(h, len - PSB_HDR_LEN) < 0) {
		s->cnt.bad_segment++;
		return -1;
	}
	return 0;
}

static void
sa_to_addr(const struct sockaddr_in *sa, struct psb_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->ip = ntohl(sa->sin_addr.s_addr);
	a->port = ntohs(sa->sin_port);
}

/* A BATCH: the answers to its sender go back as one BATCH_RESP. */
static void
rx_batch(struct psb_ksrv *s, const struct psb_hdr *h, const uint8_t *payload,
		const struct psb_addr *from)
{
	uint8_t out[PSB_MAX_UDP_PAYLOAD - PSB_HDR_LEN];
	size_t cap = s->cfg.seg_size < sizeof(out) ? s->cfg.seg_size : sizeof(out), len = 0;
	struct psb_hdr r;

	psb_kv_handle_batch(s->kv, h, payload, from, out, cap, &len, kv_emit, s);
	if (len == 0)
		return;
	psb_hdr_batch_resp(&r, h, (uint16_t)len);
	r.aux = s->epoch;
	queue_msg(s, from, &r, out);
}

/* The job's scheduler: every worker finished. Acknowledged; the server has ended. */
static void
rx_finalize(struct psb_ksrv *s, const struct psb_addr *from)
{
	static const uint8_t none[1];
	struct psb_hdr ack;

	psb_hdr_init(&ack, PSB_MSG_FINALIZE_ACK);
	ack.flags = PSB_F_SERVER;
	queue_msg(s, from, &ack, none);
	s->ended = 1;
}

/* A checked datagram h from a client, by UDP or a slot: a request, a BATCH or FINALIZE. */
static void
rx_msg(struct psb_ksrv *s, const struct psb_hdr *h, const uint8_t *payload,
		const struct psb_addr *from)
{
	if (h->type == PSB_MSG_BATCH && h->version == PSB_VERSION) {
		rx_batch(s, h, payload, from);
		return;
	}
	if (h->type == PSB_MSG_FINALIZE && s->cfg.reg_ip != 0 && from->ip == s->cfg.reg_ip &&
	    from->port == s->cfg.reg_port) {
		rx_finalize(s, from);
		return;
	}
	if (psb_kv_handle(s->kv, h, payload, from, kv_emit, s) != 0)
		s->cnt.not_request++;
}

static void
rx_one(struct psb_ksrv *s, const uint8_t *buf, size_t len, int truncated,
		const struct psb_addr *from)
{
	struct psb_hdr h;

	if (psb_ksrv_check(s, buf, len, truncated, &h) == 0)
		rx_msg(s, &h, buf + PSB_HDR_LEN, from);
}

/*
 * A datagram from a slot: its payload is in the client's memory, which it may change at any
 * moment. A store reads a push's value once (kept, then added): it takes it from there, and
 * keeps the frame itself on the ring (ref) until the push is whole rather than a copy. What
 * is parsed (a BATCH's records, a handler's requests) is copied first.
 */
static int
shm_rx(void *arg, const struct psb_addr *from, const uint8_t *hdr, const uint8_t *payload,
		size_t len, void *ref)
{
	struct psb_ksrv *s = arg;
	struct psb_hdr h;

	if (psb_ksrv_check(s, hdr, PSB_HDR_LEN + len, 0, &h) != 0)
		return 0;
	if (s->cfg.request == NULL && h.version == PSB_VERSION &&
	    (h.type == PSB_MSG_PUSH || h.type == PSB_MSG_PUSHPULL))
		return psb_kv_handle_ref(s->kv, &h, payload, ref, from, kv_emit, s) ==
			PSB_KV_HELD;
	memcpy(s->shm_copy, payload, len);
	rx_msg(s, &h, s->shm_copy, from);
	return 0;
}

/* A slot's client: its ring loses nothing. */
static int
shm_lossless(void *arg, const struct psb_addr *from)
{
	struct psb_ksrv *s = arg;

	return s->shm != NULL && psb_shm_srv_slot_of(s->shm, from->ip) >= 0;
}

/* The store is done with a frame it kept on a slot's ring. */
static void
shm_release(void *arg, void *ref)
{
	struct psb_ksrv *s = arg;

	psb_shm_srv_release(s->shm, ref);
}

int
psb_ksrv_rx(struct psb_ksrv *s)
{
	struct psb_addr from;
	int n, i, m = 0;

	n = psb_udp_recv(&s->io, s->fd);
	for (i = 0; i < n; i++) {
		sa_to_addr(&s->io.rxa[i], &from);
		/* a slot's address is answered on the slot: not one that came by UDP */
		if (s->shm != NULL && psb_shm_srv_slot_of(s->shm, from.ip) >= 0) {
			s->cnt.not_request++;
			continue;
		}
		rx_one(s, psb_udp_rx_data(&s->io, i), s->io.rxm[i].msg_len,
			psb_udp_rx_truncated(&s->io, i), &from);
	}
	if (s->shm != NULL)
		m = (int)psb_shm_srv_rx(s->shm, SHM_BURST, shm_rx, s);
	if (n <= 0 && m == 0)
		return 0;
	tx_flush(s);
	return (n > 0 ? n : 0) + m;
}

void
psb_ksrv_tick(struct psb_ksrv *s, uint64_t now_ns)
{
	psb_kv_tick(s->kv, now_ns);
	psb_kv_probe_tails(s->kv, PSB_KV_TAIL_QUIET_NS, 16, kv_emit, s);
	if (s->shm != NULL && now_ns >= s->shm_ctl_ns) {
		psb_shm_srv_ctl(s->shm, now_ns);
		s->shm_ctl_ns = now_ns + SHM_CTL_NS;
	}
}

int
psb_ksrv_respond(struct psb_ksrv *s, const struct psb_kv_req *r, const void *value, uint32_t len)
{
	int rc = psb_kv_respond(s->kv, r, value, len, kv_emit, s);

	tx_flush(s);
	return rc;
}

/*
 * Register with the job's scheduler as a server, from the data socket (the address the
 * scheduler announces), until its REGISTER_ACK: 0, or -1 with the reason in err.
 */
static int
register_server(struct psb_ksrv *s, char *err, size_t errlen)
{
	uint8_t buf[PSB_HDR_LEN + 4 + PSB_SCHED_MAX_NODES * 24];
	struct psb_sched_view *view = malloc(sizeof(*view));
	uint64_t t0 = psb_clock_ns();
	struct sockaddr_in sa;
	struct psb_hdr h;
	char ip[16];

	if (view == NULL) {
		psb_set_err(err, errlen, "out of memory");
		return -1;
	}
	psb_udp_sa(&sa, s->cfg.reg_ip, s->cfg.reg_port);
	while (psb_clock_ns() - t0 < s->cfg.reg_timeout_ns &&
	       (s->cfg.stop == NULL || !*s->cfg.stop)) {
		struct pollfd pfd = { .fd = s->fd, .events = POLLIN };
		ssize_t n;

		psb_hdr_init(&h, PSB_MSG_REGISTER);
		h.flags = PSB_F_SERVER;
		h.req_id = s->epoch;
		psb_hdr_encode(buf, &h);
		(void)sendto(s->fd, buf, PSB_HDR_LEN, 0, (struct sockaddr *)&sa, sizeof(sa));
		if (poll(&pfd, 1, REG_RETRY_MS) <= 0)
			continue;
		while ((n = recv(s->fd, buf, sizeof(buf), MSG_DONTWAIT)) >= PSB_HDR_LEN) {
			psb_hdr_decode(&h, buf);
			if (h.magic != PSB_MAGIC || h.type != PSB_MSG_REGISTER_ACK ||
			    psb_hdr_check_segment(&h, (size_t)n - PSB_HDR_LEN) != 0 ||
			    psb_sched_view_decode(view, buf + PSB_HDR_LEN, h.seg_len) != 0)
				continue;
			s->rank = (uint16_t)h.aux;
			s->num_servers = view->num_servers;
			s->num_workers = view->num_workers;
			free(view);
			return 0;
		}
	}
	free(view);
	if (s->cfg.stop != NULL && *s->cfg.stop)
		psb_set_err(err, errlen, "stopped while registering with the scheduler %s:%u",
			psb_ip_str(s->cfg.reg_ip, ip), s->cfg.reg_port);
	else
		psb_set_err(err, errlen, "the scheduler %s:%u did not answer REGISTER within %.3g s",
			psb_ip_str(s->cfg.reg_ip, ip), s->cfg.reg_port, s->cfg.reg_timeout_ns / 1e9);
	return -1;
}

/* The slots, at the socket of the address and port bound; without them, UDP alone. */
static void
shm_open(struct psb_ksrv *s)
{
	struct psb_shm_srv_cfg sc;
	char dir[256];
	int rc;

	rc = psb_shm_sock_path(s->cfg.ip, s->port, s->shm_path, sizeof(s->shm_path));
	if (rc != 0) {
		psb_set_err(s->shm_why, sizeof(s->shm_why), "the socket's path is too long (PSB_SHM_DIR)");
		return;
	}
	/* what servers killed here left (their locks free) goes first */
	if (psb_shm_dir(dir, sizeof(dir)) == 0)
		psb_shm_sweep(dir);
	memset(&sc, 0, sizeof(sc));
	sc.path = s->shm_path;
	sc.slots = s->cfg.shm_slots;
	sc.max_region = s->cfg.shm_max_region;
	sc.ip = s->cfg.ip;
	sc.port = s->port;
	if (psb_shm_srv_open(&sc, &s->shm, s->shm_why, sizeof(s->shm_why)) != 0)
		s->shm = NULL;
}

struct psb_ksrv *
psb_ksrv_open(const struct psb_ksrv_cfg *cfg, char *err, size_t errlen)
{
	struct psb_ksrv *s = calloc(1, sizeof(*s));
	uint16_t seg1500 = psb_seg_size_for_mtu(1500);
	struct psb_kv_cfg kc;

	if (s == NULL) {
		psb_set_err(err, errlen, "out of memory");
		return NULL;
	}
	s->cfg = *cfg;
	s->num_servers = 1;
	s->num_workers = cfg->num_workers;
	s->fd = psb_udp_open(cfg->ip, cfg->port, cfg->sockbuf, &s->port, err, errlen);
	if (s->fd < 0) {
		free(s);
		return NULL;
	}
	s->epoch = psb_epoch_new();
	if (cfg->reg_ip != 0 && register_server(s, err, errlen) != 0)
		goto fail;
	/* the same budgets as psb's, from half the machine's memory */
	if (psb_kv_budget_derive(&s->budget, &cfg->budget, mem_total() / 2, cfg->max_value,
			cfg->seg_size < seg1500 ? cfg->seg_size : seg1500, s->num_workers, 1, err,
			errlen) != 0)
		goto fail;
	memset(&kc, 0, sizeof(kc));
	kc.num_workers = s->num_workers;
	kc.sync = cfg->sync;
	kc.sync_round = cfg->sync_round;
	kc.max_value = cfg->max_value;
	kc.seg_size = cfg->seg_size;
	kc.epoch = s->epoch;
	kc.capacity = 1024;
	kc.max_bytes = s->budget.max_bytes;
	kc.max_keys = (uint32_t)s->budget.max_keys;
	kc.reasm_bytes = s->budget.reasm_bytes;
	kc.reasm_sender_bytes = s->budget.reasm_sender_bytes;
	kc.reasm_timeout_ns = cfg->reasm_timeout_ns;
	kc.resend_burst = s->budget.resend_burst;
	kc.resend_bps = s->budget.resend_bps;
	kc.request = cfg->request;
	kc.request_arg = cfg->request_arg;
	kc.round_closed = cfg->round_closed;
	kc.round_arg = cfg->round_arg;
	kc.clock_ns = cfg->clock_ns;
	/* push segments from the slots stay on their rings until whole (shm_rx): as many as
	 * the rings allow, which psb_shm_srv bounds per client */
	kc.hold_max = UINT32_MAX;
	kc.release = shm_release;
	kc.lossless = shm_lossless;
	kc.release_arg = s;
	s->kv = psb_kv_create(&kc);
	if (s->kv == NULL || psb_udp_io_init(&s->io, cfg->seg_size) != 0) {
		psb_set_err(err, errlen, "out of memory (a store for %u workers)", s->num_workers);
		goto fail;
	}
	if (cfg->shm_slots != 0)
		shm_open(s);
	return s;
fail:
	psb_ksrv_close(s);
	return NULL;
}

void
psb_ksrv_close(struct psb_ksrv *s)
{
	if (s == NULL)
		return;
	/* the store first: it hands back the frames it keeps on the slots' rings */
	psb_kv_free(s->kv);
	psb_shm_srv_close(s->shm);
	if (s->fd >= 0)
		close(s->fd);
	psb_udp_io_free(&s->io);
	free(s);
}

int
psb_ksrv_ended(const struct psb_ksrv *s)
{
	return s->ended;
}

int
psb_ksrv_fd(const struct psb_ksrv *s)
{
	return s->fd;
}

uint16_t
psb_ksrv_port(const struct psb_ksrv *s)
{
	return s->port;
}

uint32_t
psb_ksrv_epoch(const struct psb_ksrv *s)
{
	return s->epoch;
}

uint16_t
psb_ksrv_rank(const struct psb_ksrv *s)
{
	return s->rank;
}

uint16_t
psb_ksrv_num_servers(const struct psb_ksrv *s)
{
	return s->num_servers;
}

uint16_t
psb_ksrv_num_workers(const struct psb_ksrv *s)
{
	return s->num_workers;
}

const struct psb_kv_budget *
psb_ksrv_budget(const struct psb_ksrv *s)
{
	return &s->budget;
}

struct psb_kv *
psb_ksrv_kv(struct psb_ksrv *s)
{
	return s->kv;
}

struct psb_ksrv_counters *
psb_ksrv_counters(struct psb_ksrv *s)
{
	return &s->cnt;
}

const struct psb_shm_srv_stats *
psb_ksrv_shm_stats(const struct psb_ksrv *s)
{
	return s->shm != NULL ? psb_shm_srv_stats(s->shm) : NULL;
}

const char *
psb_ksrv_shm_path(const struct psb_ksrv *s)
{
	return s->shm_path;
}

const char *
psb_ksrv_shm_why(const struct psb_ksrv *s)
{
	return s->shm_why;
}

void
psb_ksrv_shm_unlink(const struct psb_ksrv *s)
{
	if (s != NULL)
		psb_shm_srv_unlink(s->shm);
}

unsigned int
psb_ksrv_sleep_fds(const struct psb_ksrv *s, struct pollfd *pfd, unsigned int max)
{
	return s->shm != NULL ? psb_shm_srv_fds(s->shm, pfd, max) : 0;
}

int
psb_ksrv_arm(struct psb_ksrv *s)
{
	return s->shm != NULL ? psb_shm_srv_arm(s->shm) : 0;
}

void
psb_ksrv_disarm(struct psb_ksrv *s)
{
	if (s->shm == NULL)
		return;
	psb_shm_srv_disarm(s->shm);
	s->shm_ctl_ns = 0;	/* what woke the sleep may be a control socket's */
}
