/* psb-ksrv: the psb parameter server over kernel UDP sockets, the benchmarks' baseline. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <jansson.h>

#include "psb_kv.h"
#include "psb_cli.h"
#include "psb_clock.h"
#include "psb_udp.h"
#include "psb_proto.h"
#include "psb_sched.h"

#define TX_WAIT_MS	10	/* a full socket gets this long to drain before datagrams drop */
#define IDLE_POLL_MS	100	/* sleep granularity: signals and --duration are seen this soon */

struct opts {
	uint32_t ip;
	uint16_t port;
	uint16_t num_workers;
	int sync;
	uint16_t seg_size;
	uint32_t max_value;
	const char *stats_file;
	const char *ready_file;
	uint64_t duration_ns;
	int sched;
	uint16_t sched_port;
	uint16_t num_servers;		/* the hosted scheduler's servers (default 1) */
	int sched_only;			/* --scheduler-only: host the scheduler, serve no keys */
	uint32_t reg_ip;		/* --scheduler: register with it (0: no) */
	uint16_t reg_port;
	uint64_t busy_poll_ns;
	uint32_t sockbuf;
	int quiet;
	struct psb_kv_budget budget;	/* as given (0: derive) */
	uint64_t reasm_timeout_ns;
};

struct counters {
	uint64_t rx_datagrams;
	uint64_t rx_bytes;
	uint64_t tx_datagrams;
	uint64_t tx_bytes;
	uint64_t tx_again;
	uint64_t tx_dropped;
	uint64_t bad_short;
	uint64_t bad_magic;
	uint64_t bad_segment;
	uint64_t bad_truncated;
	uint64_t not_request;
	uint64_t sched_msgs;
};

struct ksrv {
	struct opts o;
	int fd;
	int sfd;
	struct psb_kv *kv;
	uint32_t epoch;			/* in every answer: a restart is a new one */
	struct psb_sched *sched;
	struct psb_addr self;
	struct psb_udp_io io;
	struct counters cnt;
};

static volatile sig_atomic_t g_quit;

static void
usage(FILE *out)
{
	fprintf(out,
"usage: psb-ksrv [options]\n"
"\n"
"The psb parameter server on kernel UDP sockets (same protocol and semantics as\n"
"psb --role server; the baseline of the benchmarks).\n"
"\n"
"  --ip A.B.C.D          address to bind (default 0.0.0.0)\n"
"  --port N              UDP port (default %u; 0: any free port)\n"
"  --num-workers N       workers in the job: senders 0..N-1 (default 1)\n"
"  --sync | --async      synchronous rounds (default) or asynchronous updates\n"
"  --seg-size N          value bytes per response datagram (default 1432 = MTU 1500)\n"
"  --max-value BYTES     largest value accepted (default 64 MiB)\n"
"  --scheduler-port N    also host a ps-lite scheduler on port N (0: any free port), this\n"
"                        the first of its servers; needs a concrete --ip, announced to\n"
"                        workers\n"
"  --num-servers N       the hosted scheduler waits for N servers (default 1): the others\n"
"                        register with --scheduler\n"
"  --scheduler-only      with --scheduler-port: host the scheduler alone, serve no keys;\n"
"                        exit once every worker finished and every server ended\n"
"  --scheduler IP[:PORT] register as a server with the job's scheduler instead (port\n"
"                        default %u); the number of workers then comes from it\n"
"  --stats-file FILE     write counters as JSON at exit\n"
"  --ready-file FILE     write \"PORT SCHEDPORT\" once the sockets are bound\n"
"  --duration SECONDS    exit after this long\n"
"  --busy-poll-us N      spin this long before sleeping in poll() (default 50)\n"
"  --sockbuf BYTES       socket buffer size (default 16 MiB)\n"
"  --store-max-bytes SIZE, --store-max-keys N, --reasm-bytes SIZE,\n"
"  --reasm-sender-bytes SIZE, --reasm-timeout S, --resend-burst SIZE, --resend-rate RATE\n"
"                        the store's budgets, as psb's (default: from half the machine's\n"
"                        memory; reassembly timeout 2 s; two answers of --max-value sent\n"
"                        again at once per sender, then 1Gbps)\n"
"  -q, --quiet           only the exit summary and errors\n"
"  (env PSB_KV_DUMP=1: also print every key's round and request state at exit)\n"
"  --version             psb-ksrv's version and the git revision it was built from\n"
"  -h, --help\n", PSB_UDP_PORT, PSB_SCHED_PORT);
}

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

enum {
	OPT_IP = 256, OPT_PORT, OPT_NUM_WORKERS, OPT_SYNC, OPT_ASYNC, OPT_SEG_SIZE, OPT_MAX_VALUE,
	OPT_SCHED_PORT, OPT_STATS_FILE, OPT_READY_FILE, OPT_DURATION, OPT_BUSY_POLL, OPT_SOCKBUF,
	OPT_STORE_BYTES, OPT_STORE_KEYS, OPT_REASM_BYTES, OPT_REASM_SENDER, OPT_REASM_TIMEOUT,
	OPT_SCHED, OPT_RESEND_BURST, OPT_RESEND_RATE, OPT_NUM_SERVERS, OPT_SCHED_ONLY,
};

static const struct option long_opts[] = {
	{ "ip", required_argument, NULL, OPT_IP },
	{ "port", required_argument, NULL, OPT_PORT },
	{ "num-workers", required_argument, NULL, OPT_NUM_WORKERS },
	{ "sync", no_argument, NULL, OPT_SYNC },
	{ "async", no_argument, NULL, OPT_ASYNC },
	{ "seg-size", required_argument, NULL, OPT_SEG_SIZE },
	{ "max-value", required_argument, NULL, OPT_MAX_VALUE },
	{ "scheduler-port", required_argument, NULL, OPT_SCHED_PORT },
	{ "num-servers", required_argument, NULL, OPT_NUM_SERVERS },
	{ "scheduler-only", no_argument, NULL, OPT_SCHED_ONLY },
	{ "scheduler", required_argument, NULL, OPT_SCHED },
	{ "stats-file", required_argument, NULL, OPT_STATS_FILE },
	{ "ready-file", required_argument, NULL, OPT_READY_FILE },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "busy-poll-us", required_argument, NULL, OPT_BUSY_POLL },
	{ "sockbuf", required_argument, NULL, OPT_SOCKBUF },
	{ "store-max-bytes", required_argument, NULL, OPT_STORE_BYTES },
	{ "store-max-keys", required_argument, NULL, OPT_STORE_KEYS },
	{ "reasm-bytes", required_argument, NULL, OPT_REASM_BYTES },
	{ "reasm-sender-bytes", required_argument, NULL, OPT_REASM_SENDER },
	{ "reasm-timeout", required_argument, NULL, OPT_REASM_TIMEOUT },
	{ "resend-burst", required_argument, NULL, OPT_RESEND_BURST },
	{ "resend-rate", required_argument, NULL, OPT_RESEND_RATE },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	PSB_CLI_VERSION_OPTION,
	{ NULL, 0, NULL, 0 },
};

static void
parse_args(struct opts *o, int argc, char **argv)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->port = PSB_UDP_PORT;
	o->num_workers = 1;
	o->sync = 1;
	o->seg_size = psb_seg_size_for_mtu(1500);
	o->max_value = 64u << 20;
	o->reasm_timeout_ns = 2000000000ull;
	o->busy_poll_ns = 50000;
	o->sockbuf = 16u << 20;
	while ((c = psb_cli_getopt(argc, argv, "qh", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_IP: o->ip = psb_cli_ip("--ip", optarg); break;
		case OPT_PORT: o->port = (uint16_t)psb_cli_u64("--port", optarg, 0, 65535); break;
		case OPT_NUM_WORKERS:
			o->num_workers = (uint16_t)psb_cli_u64("--num-workers", optarg, 1,
				PSB_KV_MAX_WORKERS);
			break;
		case OPT_SYNC: o->sync = 1; break;
		case OPT_ASYNC: o->sync = 0; break;
		case OPT_SEG_SIZE:
			o->seg_size = (uint16_t)psb_cli_u64("--seg-size", optarg, 4, PSB_UDP_MAX_SEG);
			if ((o->seg_size & 3) != 0)
				psb_die("--seg-size: %u is not a multiple of 4", o->seg_size);
			break;
		case OPT_MAX_VALUE:
			o->max_value = (uint32_t)psb_cli_u64("--max-value", optarg, 4, PSB_MAX_VALUE);
			break;
		case OPT_SCHED_PORT:
			o->sched = 1;
			o->sched_port = (uint16_t)psb_cli_u64("--scheduler-port", optarg, 0, 65535);
			break;
		case OPT_NUM_SERVERS:
			o->num_servers = (uint16_t)psb_cli_u64("--num-servers", optarg, 1,
				PSB_SCHED_MAX_NODES - 1);
			break;
		case OPT_SCHED_ONLY: o->sched_only = 1; break;
		case OPT_SCHED:
			o->reg_port = PSB_SCHED_PORT;
			psb_cli_host_port("--scheduler", optarg, &o->reg_ip, &o->reg_port);
			break;
		case OPT_STATS_FILE: o->stats_file = optarg; break;
		case OPT_READY_FILE: o->ready_file = optarg; break;
		case OPT_DURATION: o->duration_ns = psb_cli_seconds_ns("--duration", optarg); break;
		case OPT_BUSY_POLL:
			o->busy_poll_ns = psb_cli_u64("--busy-poll-us", optarg, 0, 60000000) * 1000;
			break;
		case OPT_SOCKBUF:
			o->sockbuf = (uint32_t)psb_cli_u64("--sockbuf", optarg, 4096, INT32_MAX);
			break;
		case OPT_STORE_BYTES:
			o->budget.max_bytes = psb_cli_size("--store-max-bytes", optarg);
			break;
		case OPT_STORE_KEYS:
			o->budget.max_keys = psb_cli_u64("--store-max-keys", optarg, 0, 1u << 31);
			break;
		case OPT_REASM_BYTES:
			o->budget.reasm_bytes = psb_cli_size("--reasm-bytes", optarg);
			break;
		case OPT_REASM_SENDER:
			o->budget.reasm_sender_bytes = psb_cli_size("--reasm-sender-bytes", optarg);
			break;
		case OPT_REASM_TIMEOUT:
			o->reasm_timeout_ns = psb_cli_seconds_in("--reasm-timeout", optarg, 1000000,
				3600000000000ull);
			break;
		case OPT_RESEND_BURST:
			o->budget.resend_burst = psb_cli_size("--resend-burst", optarg);
			break;
		case OPT_RESEND_RATE:
			o->budget.resend_bps = psb_cli_rate("--resend-rate", optarg);
			break;
		case 'q': o->quiet = 1; break;
		case 'h': usage(stdout); exit(0);
		}
	}
	if (optind < argc)
		psb_cli_usage_error("unexpected argument '%s'", argv[optind]);
	if (o->sched && o->ip == 0)
		psb_die("--scheduler-port needs a concrete --ip: it is the server address announced to "
			"workers");
	if (o->sched && o->reg_ip != 0)
		psb_die("--scheduler and --scheduler-port: register with a scheduler or host one, "
			"not both");
	if (o->reg_ip != 0 && o->ip == 0)
		psb_die("--scheduler needs a concrete --ip: the scheduler announces it to workers");
	if ((o->num_servers != 0 || o->sched_only) && !o->sched)
		psb_die("--num-servers and --scheduler-only are the hosted scheduler's: give "
			"--scheduler-port");
	if (o->num_servers == 0)
		o->num_servers = 1;
}

static void
on_signal(int sig)
{
	(void)sig;
	g_quit = 1;
}

/* Send the transmit batch; a full socket gets a short wait, then the rest is dropped. */
static void
tx_flush(struct ksrv *s)
{
	struct pollfd pfd = { .fd = s->fd, .events = POLLOUT };
	struct psb_udp_io *io = &s->io;
	int n, waited = 0;

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
queue_msg(struct ksrv *s, const struct psb_addr *to, const struct psb_hdr *h, const void *payload)
{
	struct sockaddr_in sa;

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
	struct ksrv *s = arg;
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

static void
sched_emit(void *arg, const struct psb_addr *to, struct psb_hdr *h, const void *payload)
{
	struct ksrv *s = arg;
	uint8_t buf[PSB_HDR_LEN + 4 + PSB_SCHED_MAX_NODES * 24];
	struct sockaddr_in sa;

	/* This server registered itself in-process: nothing to send to it. */
	if (to->ip == s->self.ip && to->port == s->self.port)
		return;
	if (h->seg_len > sizeof(buf) - PSB_HDR_LEN)
		return;
	psb_hdr_encode(buf, h);
	if (h->seg_len != 0)
		memcpy(buf + PSB_HDR_LEN, payload, h->seg_len);
	psb_udp_sa(&sa, to->ip, to->port);
	if (sendto(s->sfd, buf, PSB_HDR_LEN + h->seg_len, 0, (const struct sockaddr *)&sa,
			sizeof(sa)) < 0)
		s->cnt.tx_dropped++;
	else
		s->cnt.tx_datagrams++;
}

/* Validate a datagram: 0 with h decoded, or -1 (counted). */
static int
check_datagram(struct ksrv *s, const uint8_t *buf, size_t len, int truncated, struct psb_hdr *h)
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
rx_batch(struct ksrv *s, const struct psb_hdr *h, const uint8_t *payload,
		const struct psb_addr *from)
{
	uint8_t out[PSB_MAX_UDP_PAYLOAD - PSB_HDR_LEN];
	size_t cap = s->o.seg_size < sizeof(out) ? s->o.seg_size : sizeof(out), len = 0;
	struct psb_hdr r;

	psb_kv_handle_batch(s->kv, h, payload, from, out, cap, &len, kv_emit, s);
	if (len == 0)
		return;
	psb_hdr_batch_resp(&r, h, (uint16_t)len);
	r.aux = s->epoch;
	queue_msg(s, from, &r, out);
}

/* One batch from the data socket; returns datagrams read. */
static int
rx_data(struct ksrv *s)
{
	struct psb_addr from;
	struct psb_hdr h;
	int n, i;

	n = psb_udp_recv(&s->io, s->fd);
	if (n <= 0)
		return 0;
	for (i = 0; i < n; i++) {
		const uint8_t *buf = psb_udp_rx_data(&s->io, i);

		if (check_datagram(s, buf, s->io.rxm[i].msg_len, psb_udp_rx_truncated(&s->io, i),
				&h) != 0)
			continue;
		sa_to_addr(&s->io.rxa[i], &from);
		if (h.type == PSB_MSG_BATCH && h.version == PSB_VERSION) {
			rx_batch(s, &h, buf + PSB_HDR_LEN, &from);
			continue;
		}
		if (h.type == PSB_MSG_FINALIZE && s->o.reg_ip != 0 && from.ip == s->o.reg_ip &&
		    from.port == s->o.reg_port) {
			/* the job's scheduler: every worker finished; acknowledged, then end */
			static const uint8_t none[1];
			struct psb_hdr ack;

			psb_hdr_init(&ack, PSB_MSG_FINALIZE_ACK);
			ack.flags = PSB_F_SERVER;
			queue_msg(s, &from, &ack, none);
			if (!g_quit)
				fprintf(stderr, "psb-ksrv: every worker finished, says the scheduler: "
					"the job is over\n");
			g_quit = 1;
			continue;
		}
		if (psb_kv_handle(s->kv, &h, buf + PSB_HDR_LEN, &from, kv_emit, s) != 0)
			s->cnt.not_request++;
	}
	tx_flush(s);
	return n;
}

static int
rx_sched(struct ksrv *s)
{
	struct psb_addr from;
	struct psb_hdr h;
	int n, i;

	if (s->sfd < 0)
		return 0;
	n = psb_udp_recv(&s->io, s->sfd);
	if (n <= 0)
		return 0;
	for (i = 0; i < n; i++) {
		if (check_datagram(s, psb_udp_rx_data(&s->io, i), s->io.rxm[i].msg_len,
				psb_udp_rx_truncated(&s->io, i), &h) != 0)
			continue;
		sa_to_addr(&s->io.rxa[i], &from);
		s->cnt.sched_msgs++;
		if (psb_sched_handle(s->sched, &h, &from, sched_emit, s) != 0)
			s->cnt.not_request++;
	}
	return n;
}

static int
open_socket(uint32_t ip, uint16_t port, uint32_t sockbuf, uint16_t *bound)
{
	char err[160];
	int fd = psb_udp_open(ip, port, sockbuf, bound, err, sizeof(err));

	if (fd < 0)
		psb_die("%s", err);
	return fd;
}

static void
write_ready(const char *path, uint16_t port, uint16_t sched_port)
{
	char tmp[4096];
	FILE *f;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= sizeof(tmp))
		psb_die("--ready-file: path too long");
	f = fopen(tmp, "w");
	if (f == NULL)
		psb_die("--ready-file: cannot create %s: %s", tmp, strerror(errno));
	fprintf(f, "%u %u\n", port, sched_port);
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		unlink(tmp);
		psb_die("--ready-file: cannot write %s: %s", path, strerror(errno));
	}
}

static void
print_summary(const struct ksrv *s, FILE *out)
{
	const struct psb_kv_stats *st = psb_kv_stats(s->kv);
	const struct counters *c = &s->cnt;
	unsigned int k;

	fprintf(out, "psb-ksrv: rx %llu datagrams (%llu B), tx %llu datagrams (%llu B), "
		"tx waits %llu, tx dropped %llu\n",
		(unsigned long long)c->rx_datagrams, (unsigned long long)c->rx_bytes,
		(unsigned long long)c->tx_datagrams, (unsigned long long)c->tx_bytes,
		(unsigned long long)c->tx_again, (unsigned long long)c->tx_dropped);
	fprintf(out, "psb-ksrv: ignored: short %llu, magic %llu, segment %llu, truncated %llu, "
		"not a request %llu\n", (unsigned long long)c->bad_short,
		(unsigned long long)c->bad_magic, (unsigned long long)c->bad_segment,
		(unsigned long long)c->bad_truncated, (unsigned long long)c->not_request);
	fprintf(out, "store: %llu keys, %llu B; push %llu, pull %llu, pushpull %llu; rounds %llu; "
		"summed %llu B; duplicates %llu, retries answered %llu, stale %llu\n",
		(unsigned long long)psb_kv_nkeys(s->kv), (unsigned long long)psb_kv_bytes(s->kv),
		(unsigned long long)st->req[PSB_MSG_PUSH], (unsigned long long)st->req[PSB_MSG_PULL],
		(unsigned long long)st->req[PSB_MSG_PUSHPULL],
		(unsigned long long)st->rounds_closed, (unsigned long long)st->bytes_summed,
		(unsigned long long)st->dup_segs, (unsigned long long)st->retries_answered,
		(unsigned long long)st->stale);
	for (k = 1; k < PSB_ST_MAX; k++)
		if (st->errors[k] != 0)
			fprintf(out, "error replies %-16s %llu\n", psb_status_name((uint8_t)k),
				(unsigned long long)st->errors[k]);
	if (getenv("PSB_KV_DUMP") != NULL)
		psb_kv_dump(s->kv, out);
	if (s->sched != NULL) {
		const struct psb_sched_stats *ss = psb_sched_stats(s->sched);

		fprintf(out, "scheduler: registered %llu, re-registered %llu, rejected %llu, "
			"barriers %llu\n", (unsigned long long)ss->registered,
			(unsigned long long)ss->reregistered, (unsigned long long)ss->rejected,
			(unsigned long long)ss->barriers_released);
	}
	fflush(out);
}

static int
write_stats(const struct ksrv *s, const char *path)
{
	const struct psb_kv_stats *st = psb_kv_stats(s->kv);
	const struct counters *c = &s->cnt;
	json_t *root, *store, *errs, *bad, *disc, *refused, *resend;
	unsigned int k;

	errs = json_object();
	for (k = 1; k < PSB_ST_MAX; k++)
		json_object_set_new(errs, psb_status_name((uint8_t)k),
			json_integer((json_int_t)st->errors[k]));
	store = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o}",
		"keys", (json_int_t)psb_kv_nkeys(s->kv), "bytes", (json_int_t)psb_kv_bytes(s->kv),
		"push", (json_int_t)st->req[PSB_MSG_PUSH], "pull", (json_int_t)st->req[PSB_MSG_PULL],
		"pushpull", (json_int_t)st->req[PSB_MSG_PUSHPULL],
		"rounds_closed", (json_int_t)st->rounds_closed,
		"bytes_summed", (json_int_t)st->bytes_summed, "dup_segs", (json_int_t)st->dup_segs,
		"retries_answered", (json_int_t)st->retries_answered, "stale", (json_int_t)st->stale,
		"errors", errs);
	/* pushes that never arrived whole, and requests the budgets refused */
	disc = json_object();
	for (k = 0; k < PSB_KV_DISCARD_MAX; k++)
		json_object_set_new(disc, psb_kv_discard_names[k],
			json_integer((json_int_t)st->discarded[k]));
	refused = json_object();
	for (k = 1; k < PSB_BUDGET_MAX; k++)
		json_object_set_new(refused, psb_budget_name(k) + strlen("store."),
			json_integer((json_int_t)st->refused[k]));
	json_object_set_new(store, "discarded", disc);
	json_object_set_new(store, "repairs", json_integer((json_int_t)st->repairs));
	json_object_set_new(store, "repair_segs", json_integer((json_int_t)st->repair_segs));
	json_object_set_new(store, "nacks", json_integer((json_int_t)st->nacks));
	json_object_set_new(store, "repair_bad", json_integer((json_int_t)st->repair_bad));
	json_object_set_new(store, "refused", refused);
	/* what senders' resend budgets let go again, and what they held back */
	resend = json_object();
	for (k = 0; k < PSB_KV_RESEND_MAX; k++)
		json_object_set_new(resend, psb_kv_resend_names[k],
			json_integer((json_int_t)st->resend_over_budget[k]));
	json_object_set_new(store, "resend_bytes", json_integer((json_int_t)st->resend_bytes));
	json_object_set_new(store, "resend_over_budget", resend);
	json_object_set_new(store, "resend_over_budget_bytes",
		json_integer((json_int_t)st->resend_over_budget_bytes));
	bad = json_pack("{s:I,s:I,s:I,s:I,s:I}", "short", (json_int_t)c->bad_short,
		"magic", (json_int_t)c->bad_magic, "segment", (json_int_t)c->bad_segment,
		"truncated", (json_int_t)c->bad_truncated, "not_request", (json_int_t)c->not_request);
	root = json_pack("{s:s,s:b,s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:o}",
		"server", "psb-ksrv", "sync", s->o.sync, "num_workers", s->o.num_workers,
		"rx_datagrams", (json_int_t)c->rx_datagrams, "rx_bytes", (json_int_t)c->rx_bytes,
		"tx_datagrams", (json_int_t)c->tx_datagrams, "tx_bytes", (json_int_t)c->tx_bytes,
		"tx_again", (json_int_t)c->tx_again, "tx_dropped", (json_int_t)c->tx_dropped,
		"ignored", bad, "store", store);
	if (root == NULL)
		return -ENOMEM;
	if (s->sched != NULL) {
		const struct psb_sched_stats *ss = psb_sched_stats(s->sched);

		json_object_set_new(root, "scheduler", json_pack("{s:I,s:I,s:I,s:I}",
			"registered", (json_int_t)ss->registered,
			"reregistered", (json_int_t)ss->reregistered,
			"rejected", (json_int_t)ss->rejected,
			"barriers_released", (json_int_t)ss->barriers_released));
	}
	return psb_cli_json_save(root, path);
}

#define REG_WAIT_NS	60000000000ull	/* the scheduler answers REGISTER within this */
#define FIN_RETRY_NS	200000000ull	/* FINALIZE to servers that have not said they ended */
#define REG_RETRY_MS	200

/*
 * Register with the job's scheduler as a server, from the data socket (the address the
 * scheduler announces), until its REGISTER_ACK; returns the job's number of workers.
 */
static uint16_t
register_server(struct ksrv *s)
{
	uint8_t buf[PSB_HDR_LEN + 4 + PSB_SCHED_MAX_NODES * 24];
	static struct psb_sched_view view;
	uint64_t t0 = psb_clock_ns();
	struct sockaddr_in sa;
	struct psb_hdr h;
	char ip[16];

	psb_udp_sa(&sa, s->o.reg_ip, s->o.reg_port);
	while (psb_clock_ns() - t0 < REG_WAIT_NS && !g_quit) {
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
			    psb_sched_view_decode(&view, buf + PSB_HDR_LEN, h.seg_len) != 0)
				continue;
			if (!s->o.quiet)
				printf("psb-ksrv: registered with the scheduler %s:%u as server rank %u "
					"(%u servers, %u workers)\n", psb_ip_str(s->o.reg_ip, ip),
					s->o.reg_port, h.aux, view.num_servers, view.num_workers);
			return view.num_workers;
		}
	}
	psb_die("the scheduler %s:%u did not answer REGISTER within %llu s",
		psb_ip_str(s->o.reg_ip, ip), s->o.reg_port,
		(unsigned long long)(REG_WAIT_NS / 1000000000ull));
	return 0;
}

int
main(int argc, char **argv)
{
	static struct ksrv srv;
	struct ksrv *s = &srv;
	struct psb_kv_cfg kc;
	struct psb_kv_budget b;
	struct sigaction sa;
	struct pollfd pfd[2];
	uint64_t start, now, idle_since, fin_ns = 0;
	uint16_t sched_port = 0;
	char ipbuf[16], err[256];
	int exit_code = 0, n;

	psb_cli_prog("psb-ksrv");
	parse_args(&s->o, argc, argv);
	s->sfd = -1;
	s->fd = open_socket(s->o.ip, s->o.port, s->o.sockbuf, &s->o.port);
	s->self.ip = s->o.ip;
	s->self.port = s->o.port;
	s->epoch = psb_epoch_new();
	if (s->o.reg_ip != 0)
		s->o.num_workers = register_server(s);
	/* the same budgets as psb's, from half the machine's memory */
	if (psb_kv_budget_derive(&b, &s->o.budget, mem_total() / 2, s->o.max_value,
			s->o.seg_size < psb_seg_size_for_mtu(1500) ? s->o.seg_size :
			psb_seg_size_for_mtu(1500), s->o.num_workers, 1, err, sizeof(err)) != 0)
		psb_die("%s", err);
	memset(&kc, 0, sizeof(kc));
	kc.num_workers = s->o.num_workers;
	kc.sync = s->o.sync;
	kc.max_value = s->o.max_value;
	kc.seg_size = s->o.seg_size;
	kc.epoch = s->epoch;
	kc.capacity = 1024;
	kc.max_bytes = b.max_bytes;
	kc.max_keys = (uint32_t)b.max_keys;
	kc.reasm_bytes = b.reasm_bytes;
	kc.reasm_sender_bytes = b.reasm_sender_bytes;
	kc.reasm_timeout_ns = s->o.reasm_timeout_ns;
	kc.resend_burst = b.resend_burst;
	kc.resend_bps = b.resend_bps;
	s->kv = psb_kv_create(&kc);
	if (s->kv == NULL || psb_udp_io_init(&s->io, s->o.seg_size) != 0)
		psb_die("out of memory");

	if (s->o.sched) {
		struct psb_sched_cfg sc = { .num_workers = s->o.num_workers,
			.num_servers = s->o.num_servers };
		struct psb_hdr reg;

		s->sched = psb_sched_create(&sc);
		if (s->sched == NULL)
			psb_die("cannot host a scheduler for %u workers (at most %u nodes)",
				s->o.num_workers, PSB_SCHED_MAX_NODES - 1);
		s->sfd = open_socket(s->o.ip, s->o.sched_port, 1u << 20, &sched_port);
		/* This process is the job's first server: register it as if over the wire. */
		if (!s->o.sched_only) {
			psb_hdr_init(&reg, PSB_MSG_REGISTER);
			reg.flags = PSB_F_SERVER;
			psb_sched_handle(s->sched, &reg, &s->self, sched_emit, s);
		}
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: poll() returns at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (s->o.ready_file != NULL)
		write_ready(s->o.ready_file, s->o.port, sched_port);
	if (!s->o.quiet && s->o.sched_only) {
		printf("psb-ksrv: a ps-lite scheduler alone on %s:%u, for %u server(s) and %u "
		       "worker(s); it serves no keys\n", psb_ip_str(s->o.ip, ipbuf), sched_port,
		       s->o.num_servers, s->o.num_workers);
		fflush(stdout);
	} else if (!s->o.quiet) {
		printf("psb-ksrv: serving %s:%u, %u worker(s), %s, segment %u B", psb_ip_str(s->o.ip,
			ipbuf), s->o.port, s->o.num_workers, s->o.sync ? "sync" : "async",
			s->o.seg_size);
		if (s->sched != NULL)
			printf(", scheduler on port %u", sched_port);
		printf("\npsb-ksrv: store budgets: %llu B in at most %llu keys; reassembly %llu B, "
		       "%llu B per sender, %.3g s to the next segment; resends %llu B per sender "
		       "at once, then %.4g Gbit/s\n",
		       (unsigned long long)b.max_bytes, (unsigned long long)b.max_keys,
		       (unsigned long long)b.reasm_bytes, (unsigned long long)b.reasm_sender_bytes,
		       s->o.reasm_timeout_ns / 1e9, (unsigned long long)b.resend_burst,
		       b.resend_bps / 1e9);
		fflush(stdout);
	}

	pfd[0].fd = s->fd;
	pfd[0].events = POLLIN;
	pfd[1].fd = s->sfd;
	pfd[1].events = POLLIN;
	start = idle_since = psb_clock_ns();
	while (!g_quit) {
		n = rx_data(s);
		now = psb_clock_ns();
		psb_kv_tick(s->kv, now);
		if (s->o.duration_ns != 0 && now - start >= s->o.duration_ns)
			break;
		if (n != 0) {
			idle_since = 0;
			continue;
		}
		n = rx_sched(s);
		/* A scheduler alone ends with the job: every worker finished, every server ended. */
		if (s->o.sched_only && psb_sched_finished(s->sched) && now - fin_ns >= FIN_RETRY_NS) {
			fin_ns = now;
			if (psb_sched_end_servers(s->sched, sched_emit, s) == 0) {
				if (!s->o.quiet)
					printf("psb-ksrv: every worker finished and every server ended: "
						"the job is over\n");
				break;
			}
		}
		if (idle_since == 0 || n != 0)
			idle_since = now;
		/* Spin a little after traffic, when the next request is likely close. */
		if (now - idle_since < s->o.busy_poll_ns)
			continue;
		poll(pfd, s->sfd >= 0 ? 2 : 1, IDLE_POLL_MS);
	}

	print_summary(s, stdout);
	if (s->o.stats_file != NULL && (n = write_stats(s, s->o.stats_file)) != 0) {
		fprintf(stderr, "psb-ksrv: cannot write --stats-file %s: %s\n", s->o.stats_file,
			strerror(-n));
		exit_code = 1;
	}
	close(s->fd);
	if (s->sfd >= 0)
		close(s->sfd);
	psb_sched_free(s->sched);
	psb_kv_free(s->kv);
	psb_udp_io_free(&s->io);
	return exit_code;
}
