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

#include "psb_ksrv.h"
#include "psb_kv.h"
#include "psb_cli.h"
#include "psb_clock.h"
#include "psb_udp.h"
#include "psb_proto.h"
#include "psb_sched.h"

#define IDLE_POLL_MS	100	/* sleep granularity: signals and --duration are seen this soon */

struct opts {
	uint32_t ip;
	uint16_t port;
	uint16_t num_workers;
	int sync;
	int sync_round;
	uint16_t seg_size;
	uint32_t max_value;
	const char *stats_file;
	const char *ready_file;
	const char *rounds_file;	/* --rounds-file: each closed round's times */
	uint64_t rounds_max;
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
	int shm_clients;		/* --shm-clients (-1: default) */
	uint64_t shm_max_region;
};

struct ksrv {
	struct opts o;
	struct psb_ksrv *srv;		/* the data socket and the store */
	struct psb_kv *kv;
	struct psb_ksrv_counters *cnt;
	int sfd;			/* the hosted scheduler's socket */
	struct psb_sched *sched;
	struct psb_addr self;
	struct psb_udp_io sio;
	FILE *rounds;			/* --rounds-file, written to <file>.tmp.<pid> */
	char rounds_tmp[4096];
	uint64_t rounds_recorded, rounds_unrecorded;
};

static volatile sig_atomic_t g_quit;
static const struct psb_ksrv *g_srv;	/* its slots' files removed at any exit */

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
"  --sync-value total|round\n"
"                        (--sync) what a key holds and its round's answers carry: the\n"
"                        sum of every closed round (total, default) or of the last\n"
"                        one alone (round: an allreduce through the server)\n"
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
"  --rounds-file FILE    (--sync) write each round a key closed as a CSV row at exit:\n"
"                        key,round,len,wait_us,sum_us,round_us (wait: the first push to\n"
"                        the last; sum: adding them up; round: the first push to the\n"
"                        answers)\n"
"  --rounds-max N        rows of --rounds-file at most (default 1000000; more are\n"
"                        counted, not written)\n"
"  --ready-file FILE     write \"PORT SCHEDPORT\" once the sockets are bound\n"
"  --duration SECONDS    exit after this long\n"
"  --shm-clients N       memif slots for clients on this host (default 4; 0 with\n"
"                        --scheduler-only; at most %u): the socket of --ip and the\n"
"                        port bound in the directory of psb's, under its lock file;\n"
"                        the client library takes them on its own (transport auto)\n"
"  --shm-max-region SIZE a slot client's shared memory at most (default 256 MiB)\n"
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
"  -h, --help\n", PSB_UDP_PORT, PSB_SCHED_PORT, PSB_SHM_MAX_SLOTS);
}

enum {
	OPT_IP = 256, OPT_PORT, OPT_NUM_WORKERS, OPT_SYNC, OPT_ASYNC, OPT_SEG_SIZE, OPT_MAX_VALUE,
	OPT_SCHED_PORT, OPT_STATS_FILE, OPT_READY_FILE, OPT_DURATION, OPT_BUSY_POLL, OPT_SOCKBUF,
	OPT_STORE_BYTES, OPT_STORE_KEYS, OPT_REASM_BYTES, OPT_REASM_SENDER, OPT_REASM_TIMEOUT,
	OPT_SCHED, OPT_RESEND_BURST, OPT_RESEND_RATE, OPT_NUM_SERVERS, OPT_SCHED_ONLY,
	OPT_ROUNDS_FILE, OPT_ROUNDS_MAX, OPT_SHM_CLIENTS, OPT_SHM_MAX_REGION, OPT_SYNC_VALUE,
};

static const struct option long_opts[] = {
	{ "ip", required_argument, NULL, OPT_IP },
	{ "port", required_argument, NULL, OPT_PORT },
	{ "num-workers", required_argument, NULL, OPT_NUM_WORKERS },
	{ "sync", no_argument, NULL, OPT_SYNC },
	{ "async", no_argument, NULL, OPT_ASYNC },
	{ "sync-value", required_argument, NULL, OPT_SYNC_VALUE },
	{ "seg-size", required_argument, NULL, OPT_SEG_SIZE },
	{ "max-value", required_argument, NULL, OPT_MAX_VALUE },
	{ "scheduler-port", required_argument, NULL, OPT_SCHED_PORT },
	{ "num-servers", required_argument, NULL, OPT_NUM_SERVERS },
	{ "scheduler-only", no_argument, NULL, OPT_SCHED_ONLY },
	{ "scheduler", required_argument, NULL, OPT_SCHED },
	{ "stats-file", required_argument, NULL, OPT_STATS_FILE },
	{ "rounds-file", required_argument, NULL, OPT_ROUNDS_FILE },
	{ "rounds-max", required_argument, NULL, OPT_ROUNDS_MAX },
	{ "ready-file", required_argument, NULL, OPT_READY_FILE },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "busy-poll-us", required_argument, NULL, OPT_BUSY_POLL },
	{ "shm-clients", required_argument, NULL, OPT_SHM_CLIENTS },
	{ "shm-max-region", required_argument, NULL, OPT_SHM_MAX_REGION },
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
	o->rounds_max = 1000000;
	o->shm_clients = -1;
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
		case OPT_SYNC_VALUE:
			if (strcmp(optarg, "total") == 0)
				o->sync_round = 0;
			else if (strcmp(optarg, "round") == 0)
				o->sync_round = 1;
			else
				psb_die("--sync-value '%s': expected total or round", optarg);
			break;
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
		case OPT_ROUNDS_FILE: o->rounds_file = optarg; break;
		case OPT_ROUNDS_MAX:
			o->rounds_max = psb_cli_u64("--rounds-max", optarg, 1, 1ull << 32);
			break;
		case OPT_READY_FILE: o->ready_file = optarg; break;
		case OPT_DURATION: o->duration_ns = psb_cli_seconds_ns("--duration", optarg); break;
		case OPT_BUSY_POLL:
			o->busy_poll_ns = psb_cli_u64("--busy-poll-us", optarg, 0, 60000000) * 1000;
			break;
		case OPT_SHM_CLIENTS:
			o->shm_clients = (int)psb_cli_u64("--shm-clients", optarg, 0,
				PSB_SHM_MAX_SLOTS);
			break;
		case OPT_SHM_MAX_REGION:
			o->shm_max_region = psb_cli_size("--shm-max-region", optarg);
			if (o->shm_max_region < (1u << 20))
				psb_die("--shm-max-region: 1 MiB at least (a client's rings and "
					"buffers)");
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
	if (o->shm_clients < 0)
		o->shm_clients = o->sched_only ? 0 : 4;
	if (o->sync_round && !o->sync)
		psb_die("--sync-value round: a synchronous store's (give --sync, not --async)");
	if (o->rounds_file != NULL && (!o->sync || o->sched_only))
		psb_die("--rounds-file: rounds are a synchronous store's (give --sync, and serve "
			"keys)");
}

static void
on_signal(int sig)
{
	(void)sig;
	g_quit = 1;
}

/* psb_die and other exits after the slots are up: their socket and lock file go too. */
static void
shm_files_remove(void)
{
	psb_ksrv_shm_unlink(g_srv);
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
		s->cnt->tx_dropped++;
	else
		s->cnt->tx_datagrams++;
}

static int
rx_sched(struct ksrv *s)
{
	struct psb_addr from;
	struct psb_hdr h;
	int n, i;

	if (s->sfd < 0)
		return 0;
	n = psb_udp_recv(&s->sio, s->sfd);
	if (n <= 0)
		return 0;
	for (i = 0; i < n; i++) {
		if (psb_ksrv_check(s->srv, psb_udp_rx_data(&s->sio, i), s->sio.rxm[i].msg_len,
				psb_udp_rx_truncated(&s->sio, i), &h) != 0)
			continue;
		memset(&from, 0, sizeof(from));
		from.ip = ntohl(s->sio.rxa[i].sin_addr.s_addr);
		from.port = ntohs(s->sio.rxa[i].sin_port);
		s->cnt->sched_msgs++;
		if (psb_sched_handle(s->sched, &h, &from, sched_emit, s) != 0)
			s->cnt->not_request++;
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

/* --rounds-file: a row for each round closed, up to --rounds-max. */
static void
round_closed(void *arg, const struct psb_kv_round *r)
{
	struct ksrv *s = arg;

	if (s->rounds_recorded >= s->o.rounds_max) {
		s->rounds_unrecorded++;
		return;
	}
	fprintf(s->rounds, "%llu,%u,%u,%u,%u,%u\n", (unsigned long long)r->key, r->round, r->len,
		r->wait_us, r->sum_us, r->round_us);
	s->rounds_recorded++;
}

static void
rounds_open(struct ksrv *s)
{
	if ((size_t)snprintf(s->rounds_tmp, sizeof(s->rounds_tmp), "%s.tmp.%d", s->o.rounds_file,
			(int)getpid()) >= sizeof(s->rounds_tmp))
		psb_die("--rounds-file: path too long");
	s->rounds = fopen(s->rounds_tmp, "w");
	if (s->rounds == NULL)
		psb_die("--rounds-file: cannot create %s: %s", s->rounds_tmp, strerror(errno));
	setvbuf(s->rounds, NULL, _IOFBF, 1u << 20);
	fprintf(s->rounds, "key,round,len,wait_us,sum_us,round_us\n");
}

/* The rounds file complete, in place at once (0), or -1 with the reason said. */
static int
rounds_close(struct ksrv *s)
{
	int bad = ferror(s->rounds);

	if (fclose(s->rounds) != 0 || bad || rename(s->rounds_tmp, s->o.rounds_file) != 0) {
		fprintf(stderr, "psb-ksrv: --rounds-file: cannot write %s: %s\n", s->o.rounds_file,
			strerror(errno));
		unlink(s->rounds_tmp);
		return -1;
	}
	return 0;
}

static void
print_summary(const struct ksrv *s, FILE *out)
{
	const struct psb_kv_stats *st = psb_kv_stats(s->kv);
	const struct psb_ksrv_counters *c = s->cnt;
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
	if (s->rounds != NULL)
		fprintf(out, "rounds file: %llu rounds recorded, %llu beyond --rounds-max\n",
			(unsigned long long)s->rounds_recorded,
			(unsigned long long)s->rounds_unrecorded);
	if (getenv("PSB_KV_DUMP") != NULL)
		psb_kv_dump(s->kv, out);
	if (psb_ksrv_shm_stats(s->srv) != NULL) {
		const struct psb_shm_srv_stats *sh = psb_ksrv_shm_stats(s->srv);
		const struct psb_shm_srv_counter *sc;

		fprintf(out, "shared memory (%u slots):", s->o.shm_clients);
		for (sc = psb_shm_srv_counters; sc->name != NULL; sc++)
			fprintf(out, " %s %llu", sc->name,
				(unsigned long long)psb_shm_srv_counter(sh, sc));
		fprintf(out, "\n");
	}
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
	const struct psb_ksrv_counters *c = s->cnt;
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
	json_object_set_new(store, "early_nacks", json_integer((json_int_t)st->early_nacks));
	json_object_set_new(store, "tail_nacks", json_integer((json_int_t)st->tail_nacks));
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
	root = json_pack("{s:s,s:b,s:s,s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:o}",
		"server", "psb-ksrv", "sync", s->o.sync, "sync_value", s->o.sync_round ? "round" :
		"total", "num_workers", s->o.num_workers,
		"rx_datagrams", (json_int_t)c->rx_datagrams, "rx_bytes", (json_int_t)c->rx_bytes,
		"tx_datagrams", (json_int_t)c->tx_datagrams, "tx_bytes", (json_int_t)c->tx_bytes,
		"tx_again", (json_int_t)c->tx_again, "tx_dropped", (json_int_t)c->tx_dropped,
		"ignored", bad, "store", store);
	if (root == NULL)
		return -ENOMEM;
	if (psb_ksrv_shm_stats(s->srv) != NULL) {
		const struct psb_shm_srv_stats *sh = psb_ksrv_shm_stats(s->srv);
		const struct psb_shm_srv_counter *sc;
		json_t *shm = json_pack("{s:i,s:s}", "slots", s->o.shm_clients,
			"socket", psb_ksrv_shm_path(s->srv));

		for (sc = psb_shm_srv_counters; sc->name != NULL; sc++)
			json_object_set_new(shm, sc->name,
				json_integer((json_int_t)psb_shm_srv_counter(sh, sc)));
		json_object_set_new(root, "shm", shm);
	}
	if (s->rounds != NULL)
		json_object_set_new(root, "rounds_file", json_pack("{s:I,s:I}",
			"recorded", (json_int_t)s->rounds_recorded,
			"unrecorded", (json_int_t)s->rounds_unrecorded));
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

int
main(int argc, char **argv)
{
	static struct ksrv srv;
	struct ksrv *s = &srv;
	struct psb_ksrv_cfg kc;
	const struct psb_kv_budget *b;
	struct sigaction sa;
	struct pollfd pfd[2 + 1 + 2 * PSB_SHM_MAX_SLOTS + PSB_SHM_SRV_PENDING];
	unsigned int npfd;
	uint64_t start, now, idle_since, fin_ns = 0;
	uint16_t sched_port = 0;
	char ipbuf[16], err[256];
	int exit_code = 0, n;

	psb_cli_prog("psb-ksrv");
	psb_cli_heap_keep();	/* staged segments, freed as pushes complete */
	parse_args(&s->o, argc, argv);
	s->sfd = -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: poll() returns at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	memset(&kc, 0, sizeof(kc));
	kc.ip = s->o.ip;
	kc.port = s->o.port;
	kc.sockbuf = s->o.sockbuf;
	kc.reg_ip = s->o.reg_ip;
	kc.reg_port = s->o.reg_port;
	kc.reg_timeout_ns = REG_WAIT_NS;
	kc.stop = &g_quit;
	kc.num_workers = s->o.num_workers;
	kc.sync = s->o.sync;
	kc.sync_round = s->o.sync_round;
	kc.seg_size = s->o.seg_size;
	kc.max_value = s->o.max_value;
	kc.budget = s->o.budget;
	kc.reasm_timeout_ns = s->o.reasm_timeout_ns;
	kc.shm_slots = (uint32_t)s->o.shm_clients;
	kc.shm_max_region = s->o.shm_max_region;
	if (s->o.rounds_file != NULL) {
		rounds_open(s);
		kc.round_closed = round_closed;
		kc.round_arg = s;
		kc.clock_ns = psb_clock_ns;
	}
	s->srv = psb_ksrv_open(&kc, err, sizeof(err));
	if (s->srv == NULL)
		psb_die("%s", err);
	g_srv = s->srv;
	atexit(shm_files_remove);
	s->kv = psb_ksrv_kv(s->srv);
	s->cnt = psb_ksrv_counters(s->srv);
	b = psb_ksrv_budget(s->srv);
	s->o.port = psb_ksrv_port(s->srv);
	s->o.num_workers = psb_ksrv_num_workers(s->srv);
	s->self.ip = s->o.ip;
	s->self.port = s->o.port;
	if (s->o.reg_ip != 0 && !s->o.quiet)
		printf("psb-ksrv: registered with the scheduler %s:%u as server rank %u (%u servers, "
		       "%u workers)\n", psb_ip_str(s->o.reg_ip, ipbuf), s->o.reg_port,
		       psb_ksrv_rank(s->srv), psb_ksrv_num_servers(s->srv), s->o.num_workers);

	if (s->o.sched) {
		struct psb_sched_cfg sc = { .num_workers = s->o.num_workers,
			.num_servers = s->o.num_servers };
		struct psb_hdr reg;

		s->sched = psb_sched_create(&sc);
		if (s->sched == NULL)
			psb_die("cannot host a scheduler for %u workers (at most %u nodes)",
				s->o.num_workers, PSB_SCHED_MAX_NODES - 1);
		s->sfd = open_socket(s->o.ip, s->o.sched_port, 1u << 20, &sched_port);
		if (psb_udp_io_init(&s->sio, s->o.seg_size) != 0)
			psb_die("out of memory");
		/* This process is the job's first server: register it as if over the wire. */
		if (!s->o.sched_only) {
			psb_hdr_init(&reg, PSB_MSG_REGISTER);
			reg.flags = PSB_F_SERVER;
			psb_sched_handle(s->sched, &reg, &s->self, sched_emit, s);
		}
	}

	if (s->o.ready_file != NULL)
		write_ready(s->o.ready_file, s->o.port, sched_port);
	if (!s->o.quiet && s->o.sched_only) {
		printf("psb-ksrv: a ps-lite scheduler alone on %s:%u, for %u server(s) and %u "
		       "worker(s); it serves no keys\n", psb_ip_str(s->o.ip, ipbuf), sched_port,
		       s->o.num_servers, s->o.num_workers);
		fflush(stdout);
	} else if (!s->o.quiet) {
		printf("psb-ksrv: serving %s:%u, %u worker(s), %s, segment %u B", psb_ip_str(s->o.ip,
			ipbuf), s->o.port, s->o.num_workers, !s->o.sync ? "async" : s->o.sync_round ?
			"sync (answers: each round's sum)" : "sync", s->o.seg_size);
		if (s->sched != NULL)
			printf(", scheduler on port %u", sched_port);
		printf("\npsb-ksrv: store budgets: %llu B in at most %llu keys; reassembly %llu B, "
		       "%llu B per sender, %.3g s to the next segment; resends %llu B per sender "
		       "at once, then %.4g Gbit/s\n",
		       (unsigned long long)b->max_bytes, (unsigned long long)b->max_keys,
		       (unsigned long long)b->reasm_bytes, (unsigned long long)b->reasm_sender_bytes,
		       s->o.reasm_timeout_ns / 1e9, (unsigned long long)b->resend_burst,
		       b->resend_bps / 1e9);
		if (s->rounds != NULL)
			printf("psb-ksrv: rounds to %s at exit, %llu at most\n", s->o.rounds_file,
			       (unsigned long long)s->o.rounds_max);
		if (psb_ksrv_shm_stats(s->srv) != NULL)
			printf("psb-ksrv: shared-memory clients: %u slots at %s, %llu B of memory "
			       "each at most\n", s->o.shm_clients, psb_ksrv_shm_path(s->srv),
			       (unsigned long long)(s->o.shm_max_region != 0 ? s->o.shm_max_region :
			       PSB_SHM_SRV_MAX_REGION));
		fflush(stdout);
	}

	if (s->o.shm_clients != 0 && psb_ksrv_shm_stats(s->srv) == NULL)
		fprintf(stderr, "psb-ksrv: shared-memory clients: none: %s; clients on this host "
			"use UDP\n", psb_ksrv_shm_why(s->srv));

	pfd[0].fd = psb_ksrv_fd(s->srv);
	pfd[0].events = POLLIN;
	pfd[1].fd = s->sfd;		/* -1: poll() passes it over */
	pfd[1].events = POLLIN;
	start = idle_since = psb_clock_ns();
	while (!g_quit) {
		n = psb_ksrv_rx(s->srv);
		now = psb_clock_ns();
		psb_ksrv_tick(s->srv, now);
		if (psb_ksrv_ended(s->srv)) {
			/* the job's scheduler: every worker finished (FINALIZE, acknowledged) */
			fprintf(stderr, "psb-ksrv: every worker finished, says the scheduler: the job "
				"is over\n");
			break;
		}
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
		/* the slots' clients signal as they send while this sleeps */
		if (psb_ksrv_arm(s->srv)) {
			psb_ksrv_disarm(s->srv);
			continue;
		}
		npfd = 2 + psb_ksrv_sleep_fds(s->srv, pfd + 2, (unsigned int)(sizeof(pfd) / sizeof(pfd[0])) - 2);
		poll(pfd, npfd, IDLE_POLL_MS);
		psb_ksrv_disarm(s->srv);
	}

	print_summary(s, stdout);
	if (s->rounds != NULL && rounds_close(s) != 0)
		exit_code = 1;
	if (s->o.stats_file != NULL && (n = write_stats(s, s->o.stats_file)) != 0) {
		fprintf(stderr, "psb-ksrv: cannot write --stats-file %s: %s\n", s->o.stats_file,
			strerror(-n));
		exit_code = 1;
	}
	if (s->sfd >= 0)
		close(s->sfd);
	psb_sched_free(s->sched);
	g_srv = NULL;
	psb_ksrv_close(s->srv);
	psb_udp_io_free(&s->sio);
	return exit_code;
}
