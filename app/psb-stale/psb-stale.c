/*
 * psb-stale: the staleness experiment between ordinary processes, over kernel sockets: the
 * trainer and the workers of the staleness benchmark psb replaces, with its flags.
 *
 *   psb-stale trainer --local IP:PORT [--group IP:PORT | --dir DIR] [flags]
 *   psb-stale worker --id N --trainer IP:PORT --local IP [--group IP:PORT | --dir DIR] [flags]
 *
 * The trainer waits until every worker joined, publishes a version of --data_size every
 * --push_frequency until --max_version or --max_time, prints the Average Version difference
 * (the old benchmark's measure) and the window staleness (psb's) every 5 s and at the end,
 * then waits (bounded) until every worker holds the final version.
 * Results go to --out/--trial_name/: summary.json, staleness.csv (a line per post) and
 * staleness.svg, each written whole or not at all. A worker takes versions by multicast
 * (--group), by pulling them from the trainer, or from the directory --dir, samples the one
 * it holds every --step_frequency and posts their mean every --post_frequency.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "psb_be.h"
#include "psb_cli.h"
#include "psb_clock.h"
#include "psb_exp.h"
#include "psb_mc_metric.h"
#include "psb_mc_sock.h"
#include "psb_stale.h"
#include "psb_stale_client.h"
#include "psb_stale_series.h"
#include "psb_stale_trainer.h"
#include "psb_stale_versions.h"
#include "psb_stale_fs.h"

#define SEC		1000000000ull
#define READS_A_PASS	256
#define BUF_LEN		(PSB_MC_HLEN + PSB_MC_SEG_MAX + 64)
#define COALESCE_NS	200000	/* a worker that just read packets waits this long for more */

static struct psb_stale_opts opts;
static volatile sig_atomic_t g_signal;	/* the SIGINT or SIGTERM that stops the run */

static void
on_stop(int sig)
{
	g_signal = sig;
}

/*
 * SIGINT and SIGTERM stop a run early: its results are written, saying stopped, and the
 * process exits as a shell reports a death by the signal (130, 143). No SA_RESTART: a
 * wait ends at once.
 */
static void
catch_stop(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* "done", "stopped" (by a signal) or "failed", as psb's results say it */
static const char *
run_state(int ok)
{
	return ok ? "done" : g_signal != 0 ? "stopped" : "failed";
}

static void
say(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > opts.loglevel)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void
usage(FILE *f)
{
	fprintf(f,
"usage: psb-stale trainer [--config FILE] --local IP:PORT [--group IP:PORT] [--dir DIR]\n"
"                         [--out DIR]\n"
"                         [--overwrite] [--rate GBITS] [--parity N] [--budget B]\n"
"                         [--repair-share PCT] [--receiver-share PCT] [--nack-receivers N]\n"
"                         [--join-timeout S] [--end-timeout S] [--key N] [--epgm-window S]\n"
"                         [experiment flags]\n"
"       psb-stale worker [--config FILE] --id N --trainer IP:PORT --local IP\n"
"                        [--group IP:PORT] [--dir DIR]\n"
"                        [--budget B] [--verify] [--json FILE] [--join-timeout S]\n"
"                        [--end-timeout S] [--key N] [--rate GBITS] [--epgm-window S]\n"
"                        [experiment flags]\n"
"  --group: the group of multicast and epgm modes; --dir: filesystem mode's directory;\n"
"  --epgm-window S: epgm's recovery window (default 1 s); results in\n"
"  --out (default results)/TRIAL_NAME; --rate Gbit/s of the sender (default 5),\n"
"  --parity symbols per group (default 32); --repair-share: repairs take at most this %%\n"
"  of the rate (default 25), --receiver-share: one receiver at most this %% of that\n"
"  (default 25), --nack-receivers: receivers given a budget (default 256);\n"
"  --budget: bytes of versions held (trainer:\n"
"  default 1GiB; worker: 2.5 versions + 16MB); the trainer waits --join-timeout (10 s)\n"
"  for the workers, and --end-timeout (10 s) for them to hold the final version;\n"
"  --key: a number trainer and workers share: joins without it are refused (default 0);\n"
"  --config: an experiment document of kind staleness (config/staleness.json): its\n"
"  staleness section, its name (the trial), node.ip:staleness.port (the trainer), its\n"
"  output section; options after it override it\n"
"  --version: psb-stale's version and the git revision it was built from\n"
"experiment flags:\n%s", psb_stale_opts_usage);
}

static const char *
ipstr(uint32_t ip, uint16_t port, char *buf, size_t len)
{
	snprintf(buf, len, "%u.%u.%u.%u:%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255,
		 port);
	return buf;
}

/*
 * getopt_long's table: the program's own options, then every experiment flag both with
 * '_' and with '-' (code 1000: handed to psb_stale_opt by name).
 */
#define STALE_FLAG	1000
static const char *const stale_flags[] = {
	"mode", "push_frequency", "data_size", "pull_frequency", "post_frequency",
	"step_frequency", "max_version", "max_time", "workers", "workers_per_node",
	"nworkers_per_node", "trial_name", "LOGLEVEL", NULL,
};

static struct option *
options(const struct option *own)
{
	static struct option all[64];
	static char names[32][24];
	unsigned int n = 0, k = 0, i;

	for (; own[n].name != NULL; n++)
		all[n] = own[n];
	for (i = 0; stale_flags[i] != NULL; i++) {
		all[n++] = (struct option){ stale_flags[i], required_argument, NULL, STALE_FLAG };
		if (strchr(stale_flags[i], '_') != NULL) {
			char *q = names[k++];

			snprintf(q, sizeof(names[0]), "%s", stale_flags[i]);
			for (char *c = q; *c; c++)
				if (*c == '_')
					*c = '-';
			all[n++] = (struct option){ q, required_argument, NULL, STALE_FLAG };
		}
	}
	all[n] = (struct option){ NULL, 0, NULL, 0 };
	return all;
}

static void
stale_flag(const struct option *all, int idx, const char *v)
{
	char err[256];

	if (psb_stale_opt(&opts, all[idx].name, v, err, sizeof(err)) < 0)
		psb_die("%s", err);
}

/*
 * --config FILE: an experiment document of kind staleness (psb_exp.h). Its staleness section
 * sets the experiment's flags, its name the trial, node.ip and staleness.port the trainer's
 * address; options after --config override it.
 */
static struct psb_exp_conf conf;
static char conf_fsdir[256];

static void
load_config(const char *path)
{
	const struct psb_exp_staleness *st = &conf.staleness;
	char err[1024];

	memset(&conf, 0, sizeof(conf));
	if (psb_exp_load_file(&conf, path, PSB_EXP_FILE_MAX, false, err, sizeof(err)) != 0)
		psb_die("--config %s%s%s", strncmp(err, path, strlen(path)) == 0 ? "" : path,
			strncmp(err, path, strlen(path)) == 0 ? "" : ": ", err);
	if (conf.kind != PSB_EXP_STALENESS)
		psb_die("--config %s: kind %s runs on the appliance (psb --config FILE); psb-stale "
			"runs kind staleness", path, psb_exp_kind_names[conf.kind]);
	opts.mode = st->mode;		/* the same order as psb_stale_mode_names */
	opts.push_ns = st->push_frequency;
	opts.data_size = (uint64_t)llround(st->data_size * 1e6);
	opts.pull_ns = st->pull_frequency;
	opts.post_ns = st->post_frequency;
	opts.step_ns = st->step_frequency;
	opts.max_version = (uint32_t)st->max_version;
	opts.max_time_ns = st->max_time;
	opts.workers = (uint32_t)st->workers;
	opts.workers_per_node = (uint32_t)st->workers_per_node;
	snprintf(opts.trial_name, sizeof(opts.trial_name), "%s", conf.name);
	snprintf(conf_fsdir, sizeof(conf_fsdir), "%s", st->dir);
}

/* Wait for the first of fds to be readable, at most until wake_ns. */
static void
wait_until(struct pollfd *p, int n, uint64_t wake_ns)
{
	uint64_t now = psb_clock_ns(), d;
	struct timespec ts;

	if (wake_ns <= now)
		return;
	/* to the microsecond: a paced sender's next packet is due in tens of them */
	d = wake_ns - now > 5000000 ? 5000000 : wake_ns - now;
	ts.tv_sec = 0;
	ts.tv_nsec = (long)d;
	ppoll(p, (nfds_t)n, &ts, NULL);
}

static json_t *
opts_json(void)
{
	return json_pack("{s:s, s:f, s:I, s:f, s:f, s:f, s:I, s:f, s:I, s:I, s:s, s:s}",
		"mode", psb_stale_mode_names[opts.mode], "push_frequency", opts.push_ns / 1e9,
		"data_size_bytes", (json_int_t)opts.data_size, "pull_frequency", opts.pull_ns / 1e9,
		"post_frequency", opts.post_ns / 1e9, "step_frequency", opts.step_ns / 1e9,
		"max_version", (json_int_t)opts.max_version, "max_time", opts.max_time_ns / 1e9,
		"workers", (json_int_t)opts.workers,
		"workers_per_node", (json_int_t)opts.workers_per_node,
		"trial_name", opts.trial_name, "LOGLEVEL", psb_cli_log_level_name(opts.loglevel));
}

/* ====================================================================== epgm ==== */

/*
 * The baseline transport: ZeroMQ PUB/SUB over epgm (PGM in UDP), as the old benchmark
 * multicast its parameters. A version is two message parts: a 24-byte header (magic
 * "PSBV", u32 version, u64 length, u32 CRC-32C, u32 format: the filesystem mode's header
 * less its last 8 bytes) and the data. Queues are kept to a few versions each way (a SUB
 * would otherwise queue a thousand of them); the PGM transmit window holds --epgm-window of
 * data at the rate; packets are up to 8800 bytes.
 */
#define EPGM_HLEN	24

struct epgm {
	void *ctx, *sock;
	int fd;			/* SUB: readable when messages may be waiting */
	uint64_t sent, dropped, bad;
};

/*
 * A PUB (pub) or SUB socket on group:port by way of local. max_msg: SUB, the largest message
 * it takes (ZeroMQ drops a peer that sends a larger one): a publisher on the group cannot
 * make a worker hold more than its HWM of them.
 */
static int
epgm_open(struct epgm *e, int pub, uint32_t local, uint32_t group, uint16_t port,
		uint64_t rate_bps, uint64_t window_ms, int64_t max_msg, char *err, size_t errlen)
{
	char ep[96];
	int v, hwm = 4, linger = 0, tpdu = 8800, buf = 8 << 20;
	size_t sz = sizeof(e->fd);

	memset(e, 0, sizeof(*e));
	e->fd = -1;
	e->ctx = zmq_ctx_new();
	if (e->ctx == NULL || (e->sock = zmq_socket(e->ctx, pub ? ZMQ_PUB : ZMQ_SUB)) == NULL)
		goto fail;
	v = rate_bps / 1000 > INT32_MAX ? INT32_MAX : (int)(rate_bps / 1000);	/* kbit/s */
	if (zmq_setsockopt(e->sock, ZMQ_RATE, &v, sizeof(v)) != 0)
		goto fail;
	v = (int)window_ms;
	if (zmq_setsockopt(e->sock, ZMQ_RECOVERY_IVL, &v, sizeof(v)) != 0 ||
	    zmq_setsockopt(e->sock, ZMQ_MULTICAST_MAXTPDU, &tpdu, sizeof(tpdu)) != 0 ||
	    zmq_setsockopt(e->sock, pub ? ZMQ_SNDHWM : ZMQ_RCVHWM, &hwm, sizeof(hwm)) != 0 ||
	    zmq_setsockopt(e->sock, ZMQ_LINGER, &linger, sizeof(linger)) != 0 ||
	    /* the kernel buffers psb's own sockets ask for */
	    zmq_setsockopt(e->sock, ZMQ_SNDBUF, &buf, sizeof(buf)) != 0 ||
	    zmq_setsockopt(e->sock, ZMQ_RCVBUF, &buf, sizeof(buf)) != 0)
		goto fail;
	if (!pub && (zmq_setsockopt(e->sock, ZMQ_SUBSCRIBE, "", 0) != 0 ||
		     zmq_setsockopt(e->sock, ZMQ_MAXMSGSIZE, &max_msg, sizeof(max_msg)) != 0))
		goto fail;
	snprintf(ep, sizeof(ep), "epgm://%u.%u.%u.%u;%u.%u.%u.%u:%u", local >> 24,
		 (local >> 16) & 255, (local >> 8) & 255, local & 255, group >> 24,
		 (group >> 16) & 255, (group >> 8) & 255, group & 255, port);
	if (zmq_connect(e->sock, ep) != 0) {
		snprintf(err, errlen, "epgm: %s: %s", ep, zmq_strerror(zmq_errno()));
		return -1;
	}
	if (!pub && zmq_getsockopt(e->sock, ZMQ_FD, &e->fd, &sz) != 0)
		goto fail;
	return 0;
fail:
	snprintf(err, errlen, "epgm: %s", zmq_strerror(zmq_errno()));
	return -1;
}

static void
epgm_close(struct epgm *e)
{
	if (e->sock != NULL)
		zmq_close(e->sock);
	if (e->ctx != NULL)
		zmq_ctx_term(e->ctx);
	e->sock = e->ctx = NULL;
}

/* Queue a version; 0, or -1 when the queue was full (it is dropped, as PUB drops). */
static int
epgm_publish(struct epgm *e, uint32_t vid, const uint8_t *data, uint64_t len, uint32_t crc)
{
	uint8_t h[EPGM_HLEN] = { 0 };

	psb_wr32(h, PSB_STALE_FS_MAGIC);
	psb_wr32(h + 4, vid);
	psb_wr64(h + 8, len);
	psb_wr32(h + 16, crc);
	psb_wr32(h + 20, PSB_STALE_FS_FORMAT);
	if (zmq_send(e->sock, h, sizeof(h), ZMQ_SNDMORE | ZMQ_DONTWAIT) != (int)sizeof(h) ||
	    zmq_send(e->sock, data, len, ZMQ_DONTWAIT) < 0) {
		e->dropped++;
		return -1;
	}
	e->sent++;
	return 0;
}

/*
 * Every whole message waiting: the newest version newer than *held whose header, length
 * and CRC agree is handed to take (the others are counted in bad).
 */
static void
epgm_drain(struct epgm *e, uint32_t held, void (*take)(uint32_t, const uint8_t *, uint64_t))
{
	for (;;) {
		zmq_msg_t h, d;
		int more;

		zmq_msg_init(&h);
		if (zmq_msg_recv(&h, e->sock, ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&h);
			return;
		}
		more = zmq_msg_more(&h);
		zmq_msg_init(&d);
		if (!more || zmq_msg_recv(&d, e->sock, 0) < 0 || zmq_msg_more(&d)) {
			e->bad++;
			/* the rest of a message of more parts */
			while (zmq_msg_more(&d) && zmq_msg_recv(&d, e->sock, 0) >= 0)
				;
		} else {
			const uint8_t *hp = zmq_msg_data(&h), *dp = zmq_msg_data(&d);
			uint64_t len = zmq_msg_size(&d);

			if (zmq_msg_size(&h) != EPGM_HLEN || psb_rd32(hp) != PSB_STALE_FS_MAGIC ||
			    psb_rd64(hp + 8) != len || psb_rd32(hp + 20) != PSB_STALE_FS_FORMAT ||
			    psb_mc_crc(0, dp, len) != psb_rd32(hp + 16))
				e->bad++;
			else if (psb_rd32(hp + 4) > held)
				take(psb_rd32(hp + 4), dp, len), held = psb_rd32(hp + 4);
		}
		zmq_msg_close(&h);
		zmq_msg_close(&d);
	}
}

/* ======================================================================== trainer ==== */

/* A worker's own sender in pull mode: unicast to where its PULLs come from. */
struct puller {
	struct psb_mc_send *tx;
	uint32_t ip;
	uint16_t port;
	uint32_t vid;			/* the newest it was given */
};

struct trainer {
	struct psb_stale_trainer tr;	/* the run: joins, pushes, posts, the end */
	struct psb_mc_sock sock;
	struct psb_mc_send *tx;		/* multicast */
	struct puller *pull;		/* [workers], pull */
	struct psb_stale_fs fs;		/* filesystem */
	struct epgm zpub;		/* epgm */
	struct psb_mc_send_cfg scfg;
	struct psb_stale_versions vers;	/* the versions made, held by senders */
	uint64_t unexpected, stray_nacks, pulls;
	FILE *csv;
	char csv_tmp[4200], dir[4096];
	struct psb_stale_plot plot;
};

static struct trainer T;

static void
slot_release(void *arg, uint32_t vid, const void *data)
{
	(void)arg;
	(void)vid;
	psb_stale_versions_release(&T.vers, data);
}

static int
mc_emit(void *arg, const uint8_t *hdr, unsigned int hlen, const uint8_t *payload,
		unsigned int plen)
{
	(void)arg;
	return psb_mc_sock_emit(&T.sock, hdr, hlen, payload, plen);
}

static int
pull_emit(void *arg, const uint8_t *hdr, unsigned int hlen, const uint8_t *payload,
		unsigned int plen)
{
	const struct puller *p = arg;

	return psb_mc_sock_emit_to(&T.sock, p->ip, p->port, hdr, hlen, payload, plen);
}

/* The run's messages to a worker. */
static void
tr_send(void *arg, uint32_t ip, uint16_t port, const uint8_t *buf, size_t len)
{
	(void)arg;
	psb_mc_sock_emit_to(&T.sock, ip, port, buf, (unsigned int)len, NULL, 0);
}

static void
tr_log(void *arg, int level, const char *line)
{
	(void)arg;
	say(level, "%s", line);
}

/* Give a puller the newest version when it has an older one. */
static void
pull_give(struct puller *p)
{
	struct psb_stale_version *s = psb_stale_versions_newest(&T.vers);

	if (s == NULL || p->vid >= s->vid)
		return;
	s->refs++;
	if (psb_mc_send_publish(p->tx, s->vid, s->data, opts.data_size, s->crc,
				psb_clock_ns()) != 0) {
		s->refs--;
		return;
	}
	p->vid = s->vid;
}

/* Version vid made and handed to the workers' transport (the run's publish). */
static int
tr_publish(void *arg, uint32_t vid, uint64_t now, uint64_t *done)
{
	struct psb_stale_version *s = psb_stale_versions_make(&T.vers, vid);
	char err[512];

	(void)arg;
	if (s == NULL) {
		say(5, "trainer: WARNING: no memory left for version %u within --budget: not "
		    "published", vid);
		return 1;
	}
	/*
	 * The time it counts as the newest from: read right before a worker could take it
	 * (the link that names its file, the epgm message, the multicast sender: its packets
	 * leave on its next poll), never after, or a worker could hold it before it counts.
	 */
	if (opts.mode == PSB_STALE_FILESYSTEM &&
	    psb_stale_fs_write(&T.fs, s->vid, s->data, opts.data_size, s->crc, err,
			       sizeof(err)) != 0) {
		fprintf(stderr, "psb-stale: trainer: version %u: %s\n", s->vid, err);
		return -1;
	}
	*done = psb_clock_ns();
	if (opts.mode == PSB_STALE_MULTICAST) {
		s->refs++;
		if (psb_mc_send_publish(T.tx, s->vid, s->data, opts.data_size, s->crc, now) != 0)
			psb_die("trainer: cannot publish version %u", s->vid);
	} else if (opts.mode == PSB_STALE_EPGM) {
		epgm_publish(&T.zpub, s->vid, s->data, opts.data_size, s->crc);
	} else if (opts.mode == PSB_STALE_FILESYSTEM &&
		   psb_stale_fs_link(&T.fs, s->vid, err, sizeof(err)) != 0) {
		fprintf(stderr, "psb-stale: trainer: version %u: %s\n", s->vid, err);
		return -1;
	}
	say(8, "trainer: version %u published at %.3f s in %.2f ms", s->vid, *done / 1e9,
	    (*done - now) / 1e6);
	return 0;
}

/* A post's figures: a line of the CSV, and the plot's bins. */
static void
tr_point(void *arg, const struct psb_stale_point *pt)
{
	(void)arg;
	psb_stale_csv_line(T.csv, T.tr.t0, pt);
	psb_stale_plot_add(&T.plot, T.tr.t0, pt);
}

static void
on_pull(const struct psb_stale_msg *m, uint32_t ip, uint16_t port)
{
	struct puller *p;

	if (opts.mode != PSB_STALE_PULL_MODE) {
		T.unexpected++;
		return;
	}
	T.pulls++;
	p = &T.pull[m->worker];
	if (p->tx == NULL) {
		p->ip = ip;
		p->port = port;
		p->vid = m->held;
		if (psb_mc_send_create(&T.scfg, pull_emit, slot_release, p, &p->tx) != 0)
			psb_die("trainer: cannot make a sender for worker %u", m->worker);
	}
	if (m->held > p->vid)
		p->vid = m->held;
	pull_give(p);
}

static void
on_datagram(const uint8_t *buf, size_t n)
{
	uint32_t ip = T.sock.from;
	uint16_t port = T.sock.from_port;
	struct psb_stale_msg m;

	if (n >= 2 && psb_rd16(buf) == PSB_MC_MAGIC) {
		struct psb_mc_pkt pk;

		/* multicast: from a worker's address, as in pull mode below */
		if (opts.mode == PSB_STALE_MULTICAST) {
			if (psb_stale_trainer_is_worker(&T.tr, ip))
				psb_mc_send_input(T.tx, buf, n, ip, psb_clock_ns());
			else
				T.stray_nacks++;
			return;
		}
		/* pull: the NACK names its receiver, the worker, whose address it must come from */
		if (opts.mode == PSB_STALE_PULL_MODE && psb_mc_parse(buf, n, &pk) == PSB_MC_NACK &&
		    pk.a < opts.workers && T.pull[pk.a].tx != NULL && T.pull[pk.a].ip == ip &&
		    T.pull[pk.a].port == port) {
			psb_mc_send_input(T.pull[pk.a].tx, buf, n, ip, psb_clock_ns());
			return;
		}
		T.stray_nacks++;
		return;
	}
	if (psb_stale_trainer_input(&T.tr, buf, n, ip, port, T.sock.arrived_ns, &m) ==
	    PSB_STALE_PULL)
		on_pull(&m, ip, port);
}

static json_t *
trainer_summary(double dur_s, int ok, const char *failure)
{
	const struct psb_stale_totals *tot = psb_stale_acct_totals(T.tr.acct);
	json_t *o = json_object(), *ws = json_array(), *ref = json_object(), *bad = json_object();
	unsigned int i;

	for (i = 0; i < opts.workers; i++) {
		const struct psb_stale_worker_state *w = psb_stale_acct_worker(T.tr.acct, i);
		char who[32];

		json_array_append_new(ws, json_pack("{s:I, s:b, s:s, s:I, s:I, s:f, s:f, s:f, s:I, "
			"s:b}", "id", (json_int_t)i, "joined", w->ip != 0,
			"address", w->ip ? ipstr(w->ip, w->port, who, sizeof(who)) : "",
			"posts", (json_int_t)w->posts, "samples", (json_int_t)w->samples,
			"average_version_difference", w->posts ? w->diff_sum / w->posts : 0.0,
			"window_staleness", w->posts ? w->window_sum / w->posts : 0.0,
			"max_window_staleness", w->window_max, "holds", (json_int_t)w->held,
			"holds_final", T.tr.done[i] != 0));
	}
	for (i = 0; i < PSB_STALE_REF_MAX; i++)
		json_object_set_new(ref, psb_stale_refusal_names[i], json_integer(
			(json_int_t)tot->refused[i]));
	for (i = 1; i < PSB_STALE_BAD_MAX; i++)
		json_object_set_new(bad, psb_stale_bad_name((int)i), json_integer(
			(json_int_t)tot->bad[i]));
	json_object_set_new(o, "experiment", opts_json());
	json_object_set_new(o, "ok", json_boolean(ok));
	json_object_set_new(o, "state", json_string(run_state(ok)));
	json_object_set_new(o, "failure", json_string(failure ? failure : ""));
	json_object_set_new(o, "duration_s", json_real(dur_s));
	json_object_set_new(o, "final_version", json_integer(T.tr.vid));
	json_object_set_new(o, "pushes", json_integer((json_int_t)T.tr.pushes));
	json_object_set_new(o, "late_pushes", json_integer((json_int_t)T.tr.late_pushes));
	json_object_set_new(o, "not_published_no_memory", json_integer((json_int_t)T.tr.skipped));
	json_object_set_new(o, "time_per_push_ms", json_real(T.tr.pushes ?
		T.tr.push_sum_ns / 1e6 / T.tr.pushes : 0.0));
	json_object_set_new(o, "time_per_push_max_ms", json_real(T.tr.push_max_ns / 1e6));
	json_object_set_new(o, "posts", json_integer((json_int_t)tot->posts));
	json_object_set_new(o, "average_version_difference", json_real(tot->posts ?
		tot->diff_sum / tot->posts : 0.0));
	json_object_set_new(o, "window_staleness", json_real(tot->posts ?
		tot->window_sum / tot->posts : 0.0));
	json_object_set_new(o, "max_window_staleness", json_real(tot->window_max));
	json_object_set_new(o, "workers", ws);
	json_object_set_new(o, "refused", ref);
	json_object_set_new(o, "malformed", bad);
	json_object_set_new(o, "unexpected", json_integer((json_int_t)(T.unexpected + T.tr.unexpected)));
	json_object_set_new(o, "stray_nacks", json_integer((json_int_t)T.stray_nacks));
	if (opts.mode == PSB_STALE_MULTICAST || opts.mode == PSB_STALE_PULL_MODE) {
		struct psb_mc_send_stats st = { 0 };
		struct psb_mc_nacker top[8], one[8];
		json_t *busiest = json_array();
		unsigned int k = 0, n, j;

		/* every sender's figures (pull: one a worker, summed) and the busiest NACKers */
		for (i = 0; i <= (T.pull != NULL ? opts.workers : 0); i++) {
			struct psb_mc_send *tx = i == 0 ? T.tx : T.pull[i - 1].tx;

			if (tx == NULL)
				continue;
			psb_mc_send_stats_add(&st, psb_mc_send_stats(tx));
			n = psb_mc_send_nackers(tx, one, 8);
			for (j = 0; j < n; j++)
				psb_mc_nackers_add(top, &k, 8, &one[j]);
		}
		for (j = 0; j < k; j++)
			json_array_append_new(busiest, psb_mc_metric_json(&psb_mc_nacker_block,
									  &top[j]));
		json_object_set_new(o, "sender", psb_mc_metric_json(&psb_mc_send_block, &st));
		json_object_set_new(o, "nackers", busiest);
		if (opts.mode == PSB_STALE_PULL_MODE)
			json_object_set_new(o, "pulls", json_integer((json_int_t)T.pulls));
	} else if (opts.mode == PSB_STALE_EPGM) {
		json_object_set_new(o, "epgm", json_pack("{s:I, s:I}", "sent",
			(json_int_t)T.zpub.sent, "dropped", (json_int_t)T.zpub.dropped));
	} else {
		json_object_set_new(o, "files_written", json_integer((json_int_t)
			T.fs.files_written));
	}
	return o;
}

static int
do_trainer(int argc, char **argv)
{
	static const struct option own[] = {
		{ "local", required_argument, NULL, 'l' }, { "group", required_argument, NULL, 'g' },
		{ "dir", required_argument, NULL, 'd' }, { "out", required_argument, NULL, 'o' },
		{ "overwrite", no_argument, NULL, 'O' }, { "rate", required_argument, NULL, 'r' },
		{ "parity", required_argument, NULL, 'P' },
		{ "repair-share", required_argument, NULL, 'R' },
		{ "receiver-share", required_argument, NULL, 'S' },
		{ "nack-receivers", required_argument, NULL, 'N' },
		{ "budget", required_argument, NULL, 'b' },
		{ "join-timeout", required_argument, NULL, 'J' },
		{ "end-timeout", required_argument, NULL, 'E' },
		{ "key", required_argument, NULL, 'K' },
		{ "epgm-window", required_argument, NULL, 'W' },
		{ "config", required_argument, NULL, 'C' }, PSB_CLI_VERSION_OPTION,
		{ NULL, 0, NULL, 0 },
	};
	const struct option *all = options(own);
	uint32_t local = 0, group = 0;
	uint16_t lport = 0, gport = 0;
	uint64_t key = 0, epgm_ms = 1000;
	const char *fsdir = NULL, *out = "results";
	uint64_t budget = 1ull << 30, join_ns = 10 * SEC, end_ns = 10 * SEC;
	uint64_t now;
	int c, idx, overwrite = 0;
	char err[512], path[4200], who[32], title[256];
	static uint8_t buf[BUF_LEN];
	unsigned int i;
	const struct psb_stale_totals *tot;
	struct psb_stale_trainer_cfg tc;
	double dur;
	struct pollfd pfd;
	int ok;

	T.scfg = (struct psb_mc_send_cfg){ .seg_size = PSB_MC_SEG_MAX, .group = 64, .parity = 32,
		.rate_bps = 5000000000ull, .heartbeat_ns = 5000000, .nack_hold_ns = 200000,
		.repair_pct = PSB_MC_REPAIR_PCT, .receiver_pct = PSB_MC_RECEIVER_PCT,
		.receivers = PSB_MC_RECEIVERS,
		/* a wake-up of a process costs tens of microseconds: 64 packets a wake */
		.burst_bytes = 64ull * (PSB_MC_HLEN + PSB_MC_SEG_MAX + PSB_MC_WIRE_OVERHEAD) };
	while ((c = psb_cli_getopt(argc, argv, "", all, &idx)) != -1) {
		switch (c) {
		case 'l': psb_cli_ip_port("--local", optarg, &local, &lport); break;
		case 'g': psb_cli_ip_port("--group", optarg, &group, &gport); break;
		case 'd': fsdir = optarg; break;
		case 'o': out = optarg; break;
		case 'O': overwrite = 1; break;
		case 'r': T.scfg.rate_bps = psb_cli_u64("--rate", optarg, 1, 400) * 1000000000ull;
			break;
		case 'P': T.scfg.parity = (uint16_t)psb_cli_u64("--parity", optarg, 0,
							       PSB_MC_PARITY_MAX); break;
		case 'R': T.scfg.repair_pct = (uint16_t)psb_cli_u64("--repair-share", optarg, 1,
								    100); break;
		case 'S': T.scfg.receiver_pct = (uint16_t)psb_cli_u64("--receiver-share", optarg,
								      1, 100); break;
		case 'N': T.scfg.receivers = (uint32_t)psb_cli_u64("--nack-receivers", optarg, 8,
								   PSB_MC_RECEIVERS_MAX); break;
		case 'b': budget = psb_cli_size("--budget", optarg); break;
		case 'J': join_ns = psb_cli_seconds_in("--join-timeout", optarg, SEC / 10,
						       3600 * SEC); break;
		case 'E': end_ns = psb_cli_seconds_in("--end-timeout", optarg, SEC / 10,
						      3600 * SEC); break;
		case 'K': key = psb_cli_u64("--key", optarg, 0, UINT64_MAX); break;
		case 'W': epgm_ms = psb_cli_seconds_in("--epgm-window", optarg, 10000000,
						       60 * SEC) / 1000000; break;
		case 'C':
			load_config(optarg);
			local = conf.node.ip;
			lport = (uint16_t)conf.staleness.port;
			group = conf.staleness.group;
			gport = (uint16_t)conf.staleness.group_port;
			fsdir = conf_fsdir;
			out = conf.output.dir;
			overwrite = conf.output.overwrite;
			T.scfg.rate_bps = conf.staleness.rate;
			T.scfg.parity = (uint16_t)conf.staleness.parity;
			T.scfg.repair_pct = (uint16_t)conf.staleness.repair_share;
			T.scfg.receiver_pct = (uint16_t)conf.staleness.receiver_share;
			T.scfg.receivers = (uint32_t)conf.staleness.nack_receivers;
			budget = conf.staleness.budget;
			key = conf.staleness.key;
			join_ns = conf.staleness.join_timeout;
			end_ns = conf.staleness.end_timeout;
			epgm_ms = conf.staleness.epgm_window / 1000000;
			break;
		case STALE_FLAG: stale_flag(all, idx, optarg); break;
		}
	}
	if (optind != argc)
		psb_cli_usage_error("trainer: unexpected argument \"%s\"", argv[optind]);
	if (psb_stale_opts_check(&opts, err, sizeof(err)) != 0)
		psb_die("%s", err);
	if (local == 0)
		psb_die("trainer: give --local IP:PORT (where workers post)");
	if ((opts.mode == PSB_STALE_MULTICAST || opts.mode == PSB_STALE_EPGM) && group == 0)
		psb_die("trainer: --mode %s needs --group IP:PORT", psb_stale_mode_names[opts.mode]);
	if (opts.mode == PSB_STALE_FILESYSTEM && fsdir == NULL)
		psb_die("trainer: --mode filesystem needs --dir DIR");
	if (opts.data_size > PSB_MC_MAX_VERSION)
		psb_die("--data_size: at most %llu bytes", (unsigned long long)PSB_MC_MAX_VERSION);
	if (psb_stale_versions_init(&T.vers, opts.data_size, budget) != 0)
		psb_die("--budget: %llu bytes hold fewer than 2 versions of %llu bytes",
			(unsigned long long)budget, (unsigned long long)opts.data_size);
	T.scfg.session = (uint32_t)(psb_clock_ns() ^ (uint64_t)getpid() << 16) | 1;

	/* the results directory first: a run that cannot keep its results does not start */
	if (mkdir(out, 0755) != 0 && errno != EEXIST)
		psb_die("--out %s: %s", out, strerror(errno));
	snprintf(T.dir, sizeof(T.dir), "%s/%s", out, opts.trial_name);
	if (mkdir(T.dir, 0755) != 0) {
		if (errno != EEXIST)
			psb_die("%s: %s", T.dir, strerror(errno));
		if (!overwrite)
			psb_die("%s exists: give another --trial_name, or --overwrite", T.dir);
	}
	if (opts.mode == PSB_STALE_MULTICAST)
		c = psb_mc_sock_sender(&T.sock, local, lport, group, gport, err, sizeof(err));
	else
		c = psb_mc_sock_unicast(&T.sock, local, lport, err, sizeof(err));
	if (c != 0)
		psb_die("trainer: %s", err);
	/* a post counts from when it came, not from when the trainer, busy making a version,
	 * got to it */
	c = psb_mc_sock_stamp(&T.sock);
	if (c != 0)
		psb_die("trainer: SO_TIMESTAMPNS: %s", strerror(-c));
	tc = (struct psb_stale_trainer_cfg){ .session = T.scfg.session, .key = key,
		.workers = opts.workers, .push_ns = opts.push_ns, .post_ns = opts.post_ns,
		.step_ns = opts.step_ns, .max_version = opts.max_version,
		.max_time_ns = opts.max_time_ns,
		.join_ns = join_ns, .end_ns = end_ns, .publish = tr_publish, .send = tr_send,
		.point = tr_point, .log = tr_log };
	if (psb_stale_trainer_init(&T.tr, &tc, psb_clock_ns()) != 0)
		psb_die("trainer: --post_frequency / --push_frequency: too many versions a post "
			"period to keep account of");
	if (opts.mode == PSB_STALE_MULTICAST) {
		if (psb_mc_send_create(&T.scfg, mc_emit, slot_release, NULL, &T.tx) != 0)
			psb_die("trainer: bad sender settings");
	} else if (opts.mode == PSB_STALE_PULL_MODE) {
		T.pull = calloc(opts.workers, sizeof(*T.pull));
		if (T.pull == NULL)
			psb_die("out of memory");
	} else if (opts.mode == PSB_STALE_EPGM) {
		if (epgm_open(&T.zpub, 1, local, group, gport, T.scfg.rate_bps, epgm_ms, -1, err,
			      sizeof(err)) != 0)
			psb_die("trainer: %s", err);
	} else if (psb_stale_fs_open(&T.fs, fsdir, 1, 4, err, sizeof(err)) != 0) {
		psb_die("trainer: --dir %s", err);
	}
	/* last of the set-up: what could not be set up leaves no half-written file */
	snprintf(T.csv_tmp, sizeof(T.csv_tmp), "%s/.staleness.csv.tmp", T.dir);
	T.csv = fopen(T.csv_tmp, "w");
	if (T.csv == NULL)
		psb_die("%s: %s", T.csv_tmp, strerror(errno));
	psb_stale_csv_header(T.csv);
	psb_stale_plot_init(&T.plot, opts.max_time_ns);
	say(7, "trainer: trial %s, mode %s: %u workers post to %s; %llu B every %.3f s until "
	    "version %u or %.1f s; holds at most %u versions (--budget %llu B); results in %s",
	    opts.trial_name, psb_stale_mode_names[opts.mode], opts.workers,
	    ipstr(local, lport, who, sizeof(who)), (unsigned long long)opts.data_size,
	    opts.push_ns / 1e9, opts.max_version, opts.max_time_ns / 1e9, T.vers.max,
	    (unsigned long long)budget, T.dir);
	if (opts.mode == PSB_STALE_MULTICAST || opts.mode == PSB_STALE_PULL_MODE)
		say(7, "trainer: repairs take at most %u %% of the rate (%.3f Gbit/s), a receiver "
		    "%u %% of that (%.3f Gbit/s); NACKs beyond are counted and ignored; %u "
		    "receivers tracked", T.scfg.repair_pct,
		    T.scfg.rate_bps / 100 * T.scfg.repair_pct / 1e9, T.scfg.receiver_pct,
		    T.scfg.rate_bps / 100 * T.scfg.repair_pct / 100 * T.scfg.receiver_pct / 1e9,
		    T.scfg.receivers);

	pfd = (struct pollfd){ .fd = T.sock.fd, .events = POLLIN };
	catch_stop();
	for (;;) {
		uint64_t wake;
		long n;

		psb_stale_trainer_step(&T.tr, psb_clock_ns());
		if (psb_stale_trainer_over(&T.tr) || g_signal != 0)
			break;
		for (i = 0; i < READS_A_PASS && (n = psb_mc_sock_recv(&T.sock, buf, sizeof(buf), 0))
		     > 0; i++)
			on_datagram(buf, (size_t)n);
		now = psb_clock_ns();
		wake = psb_stale_trainer_next_ns(&T.tr);
		if (T.tx != NULL) {
			psb_mc_send_poll(T.tx, now, 256);
			if (psb_mc_send_next_ns(T.tx, now) < wake)
				wake = psb_mc_send_next_ns(T.tx, now);
		}
		for (i = 0; T.pull != NULL && i < opts.workers; i++)
			if (T.pull[i].tx != NULL) {
				psb_mc_send_poll(T.pull[i].tx, now, 64);
				if (psb_mc_send_next_ns(T.pull[i].tx, now) < wake)
					wake = psb_mc_send_next_ns(T.pull[i].tx, now);
			}
		wait_until(&pfd, 1, wake);
	}

	/* results, whatever the end: partial ones name what failed */
	now = psb_clock_ns();
	tot = psb_stale_acct_totals(T.tr.acct);
	ok = T.tr.phase == PSB_STALE_TR_DONE;
	if (!ok && g_signal != 0)
		snprintf(T.tr.failure, sizeof(T.tr.failure), "stopped by %s before the end",
			 g_signal == SIGINT ? "SIGINT" : "SIGTERM");
	dur = T.tr.ran ? (now - T.tr.t0) / 1e9 : 0.0;
	say(4, "psb-stale trainer: trial %s, mode %s, %u workers: final version %u after %.1f s",
	    opts.trial_name, psb_stale_mode_names[opts.mode], opts.workers, T.tr.vid, dur);
	say(4, "Average Version difference: %.3f  (window staleness %.3f, max %.3f; %llu posts)",
	    tot->posts ? tot->diff_sum / tot->posts : 0.0,
	    tot->posts ? tot->window_sum / tot->posts : 0.0, tot->window_max,
	    (unsigned long long)tot->posts);
	say(4, "Time per push: %.3f ms (max %.3f ms, %llu late)", T.tr.pushes ?
	    T.tr.push_sum_ns / 1e6 / T.tr.pushes : 0.0, T.tr.push_max_ns / 1e6,
	    (unsigned long long)T.tr.late_pushes);
	say(4, "Final version: %u", T.tr.vid);
	say(4, "%6s %7s %10s %10s %10s %7s %s", "worker", "posts", "difference", "window",
	    "max", "holds", "final");
	for (i = 0; i < opts.workers; i++) {
		const struct psb_stale_worker_state *w = psb_stale_acct_worker(T.tr.acct, i);

		say(4, "%6u %7llu %10.3f %10.3f %10.3f %7u %s", i, (unsigned long long)w->posts,
		    w->posts ? w->diff_sum / w->posts : 0.0,
		    w->posts ? w->window_sum / w->posts : 0.0, w->window_max, w->held,
		    T.tr.done[i] ? "yes" : "no");
	}
	if (fclose(T.csv) != 0)
		psb_die("%s: write failed", T.csv_tmp);
	snprintf(path, sizeof(path), "%s/staleness.csv", T.dir);
	if (rename(T.csv_tmp, path) != 0)
		psb_die("%s: %s", path, strerror(errno));
	snprintf(path, sizeof(path), "%s/staleness.svg", T.dir);
	snprintf(title, sizeof(title), "%s: window staleness (versions) over time, mode %s, %u "
		 "workers",
		 opts.trial_name, psb_stale_mode_names[opts.mode], opts.workers);
	if (psb_stale_plot_write(&T.plot, path, title, dur, opts.workers) != 0)
		psb_die("cannot write %s", path);
	snprintf(path, sizeof(path), "%s/summary.json", T.dir);
	psb_cli_write_json(trainer_summary(dur, ok, T.tr.failure), path);
	say(4, "results: %s/{summary.json,staleness.csv,staleness.svg}", T.dir);
	if (!ok)
		fprintf(stderr, "psb-stale: trainer: %s (partial results in %s)\n", T.tr.failure,
			T.dir);
	if (opts.mode == PSB_STALE_EPGM)
		epgm_close(&T.zpub);
	psb_stale_trainer_fini(&T.tr);
	return ok ? 0 : g_signal != 0 ? 128 + g_signal : 1;
}

/* ========================================================================= worker ==== */

struct worker {
	struct psb_mc_sock uni;		/* posts, ACKs, pulls, NACKs */
	struct psb_mc_sock grp;		/* multicast mode: the group */
	struct psb_stale_client cl;	/* the experiment's part of it */
	struct psb_stale_fs fs;
	struct epgm zsub;
	uint8_t *fsbuf;
	uint64_t fscap;
	uint32_t trainer;
	uint16_t trainer_port;
};

static struct worker W;

static void
worker_send(void *arg, const uint8_t *buf, size_t len)
{
	(void)arg;
	psb_mc_sock_emit_to(&W.uni, W.trainer, W.trainer_port, buf, (unsigned int)len, NULL, 0);
}

static void
worker_log(void *arg, int level, const char *line)
{
	(void)arg;
	say(level, "%s", line);
}

static void
epgm_take(uint32_t vid, const uint8_t *data, uint64_t len)
{
	psb_stale_client_took(&W.cl, vid, data, len, psb_clock_ns());
}

static void
fs_check(void)
{
	char err[512];
	uint32_t vid;
	uint64_t len;
	int rc = psb_stale_fs_latest(&W.fs, &vid);

	if (rc != 0 || vid <= W.cl.held)
		return;
	rc = psb_stale_fs_read(&W.fs, vid, W.fsbuf, W.fscap, &len, err, sizeof(err));
	if (rc != 0) {
		if (rc != -ENOENT)
			say(5, "worker %u: WARNING: %s", W.cl.cfg.id, err);
		return;
	}
	psb_stale_client_took(&W.cl, vid, W.fsbuf, len, psb_clock_ns());
}

static int
do_worker(int argc, char **argv)
{
	static const struct option own[] = {
		{ "id", required_argument, NULL, 'i' }, { "trainer", required_argument, NULL, 't' },
		{ "local", required_argument, NULL, 'l' }, { "group", required_argument, NULL, 'g' },
		{ "dir", required_argument, NULL, 'd' }, { "budget", required_argument, NULL, 'b' },
		{ "verify", no_argument, NULL, 'v' }, { "json", required_argument, NULL, 'j' },
		{ "join-timeout", required_argument, NULL, 'J' },
		{ "end-timeout", required_argument, NULL, 'E' },
		{ "key", required_argument, NULL, 'K' }, { "rate", required_argument, NULL, 'r' },
		{ "epgm-window", required_argument, NULL, 'W' },
		{ "config", required_argument, NULL, 'C' }, PSB_CLI_VERSION_OPTION,
		{ NULL, 0, NULL, 0 },
	};
	const struct option *all = options(own);
	uint64_t rate_bps = 5000000000ull, epgm_ms = 1000;
	struct psb_stale_client_cfg cc = {
		.join_ns = 10 * SEC, .end_ns = 10 * SEC, .send = worker_send, .log = worker_log,
	};
	struct psb_stale_client *cl = &W.cl;
	uint32_t local = 0, group = 0;
	uint16_t gport = 0;
	uint64_t budget = 0;
	const char *fsdir = NULL, *json_path = NULL;
	static uint8_t buf[BUF_LEN];
	char err[512], who[32];
	struct pollfd pfd[2];
	int c, idx, have_id = 0, npfd = 1, ok;

	while ((c = psb_cli_getopt(argc, argv, "", all, &idx)) != -1) {
		switch (c) {
		case 'i': cc.id = (uint32_t)psb_cli_u64("--id", optarg, 0, PSB_STALE_WORKERS_MAX - 1);
			have_id = 1; break;
		case 't': psb_cli_ip_port("--trainer", optarg, &W.trainer, &W.trainer_port); break;
		case 'l': local = psb_cli_ip("--local", optarg); break;
		case 'g': psb_cli_ip_port("--group", optarg, &group, &gport); break;
		case 'd': fsdir = optarg; break;
		case 'b': budget = psb_cli_size("--budget", optarg); break;
		case 'v': cc.verify = 1; break;
		case 'j': json_path = optarg; break;
		case 'J': cc.join_ns = psb_cli_seconds_in("--join-timeout", optarg, SEC / 10,
							  3600 * SEC); break;
		case 'E': cc.end_ns = psb_cli_seconds_in("--end-timeout", optarg, SEC / 10,
							 3600 * SEC); break;
		case 'K': cc.key = psb_cli_u64("--key", optarg, 0, UINT64_MAX); break;
		case 'r': rate_bps = psb_cli_u64("--rate", optarg, 1, 400) * 1000000000ull; break;
		case 'W': epgm_ms = psb_cli_seconds_in("--epgm-window", optarg, 10000000,
						       60 * SEC) / 1000000; break;
		case 'C':
			load_config(optarg);
			W.trainer = conf.staleness.trainer != 0 ? conf.staleness.trainer : conf.node.ip;
			W.trainer_port = (uint16_t)conf.staleness.port;
			group = conf.staleness.group;
			gport = (uint16_t)conf.staleness.group_port;
			fsdir = conf_fsdir;
			cc.key = conf.staleness.key;
			rate_bps = conf.staleness.rate;
			epgm_ms = conf.staleness.epgm_window / 1000000;
			break;
		case STALE_FLAG: stale_flag(all, idx, optarg); break;
		}
	}
	if (optind != argc)
		psb_cli_usage_error("worker: unexpected argument \"%s\"", argv[optind]);
	if (psb_stale_opts_check(&opts, err, sizeof(err)) != 0)
		psb_die("%s", err);
	if (!have_id || W.trainer == 0 || local == 0)
		psb_die("worker: give --id N, --trainer IP:PORT and --local IP");
	if ((opts.mode == PSB_STALE_MULTICAST || opts.mode == PSB_STALE_EPGM) && group == 0)
		psb_die("worker: --mode %s needs --group IP:PORT", psb_stale_mode_names[opts.mode]);
	if (opts.mode == PSB_STALE_FILESYSTEM && fsdir == NULL)
		psb_die("worker: --mode filesystem needs --dir DIR");
	if (budget == 0)
		budget = psb_stale_client_budget(opts.data_size);
	if (budget < 2)
		psb_die("--budget: too small");
	if (psb_mc_sock_unicast(&W.uni, local, 0, err, sizeof(err)) != 0)
		psb_die("worker %u: %s", cc.id, err);
	pfd[0] = (struct pollfd){ .fd = W.uni.fd, .events = POLLIN };
	if (opts.mode == PSB_STALE_MULTICAST) {
		if (psb_mc_sock_receiver(&W.grp, local, group, gport, err, sizeof(err)) != 0)
			psb_die("worker %u: %s", cc.id, err);
		pfd[npfd++] = (struct pollfd){ .fd = W.grp.fd, .events = POLLIN };
	}
	if (opts.mode == PSB_STALE_EPGM) {
		/* a version whole, as the other modes hold at most (--budget) */
		if (epgm_open(&W.zsub, 0, local, group, gport, rate_bps, epgm_ms,
			      (int64_t)(budget / 2), err, sizeof(err)) != 0)
			psb_die("worker %u: %s", cc.id, err);
		pfd[npfd++] = (struct pollfd){ .fd = W.zsub.fd, .events = POLLIN };
	} else if (opts.mode == PSB_STALE_FILESYSTEM) {
		if (psb_stale_fs_open(&W.fs, fsdir, 1, 0, err, sizeof(err)) != 0)
			psb_die("worker %u: --dir %s", cc.id, err);
		W.fscap = budget;
		W.fsbuf = malloc(budget);
		if (W.fsbuf == NULL)
			psb_die("worker %u: out of memory for --budget %llu B", cc.id,
				(unsigned long long)budget);
	}
	cc.mode = opts.mode;
	cc.trainer_ip = W.trainer;
	cc.trainer_port = W.trainer_port;
	cc.step_ns = opts.step_ns;
	cc.post_ns = opts.post_ns;
	cc.pull_ns = opts.pull_ns;
	cc.data_size = opts.data_size;
	psb_stale_client_recv_cfg(&cc.recv, budget);
	cc.recv.seed = psb_clock_ns() ^ cc.id;
	if (psb_stale_client_init(cl, &cc, psb_clock_ns()) != 0)
		psb_die("worker %u: bad receiver settings", cc.id);
	say(7, "worker %u: mode %s, trainer %s; versions held in %llu B (--budget); gives up "
	    "after %.1f s without the trainer", cc.id, psb_stale_mode_names[opts.mode],
	    ipstr(W.trainer, W.trainer_port, who, sizeof(who)), (unsigned long long)budget,
	    cc.join_ns / 1e9);
	catch_stop();
	for (;;) {
		uint64_t now = psb_clock_ns(), wake;
		long n;
		int k, got = 0;

		if (psb_stale_client_step(cl, now) & PSB_STALE_CL_CHECK)
			fs_check();
		if (psb_stale_client_over(cl) || g_signal != 0)
			break;
		if (opts.mode == PSB_STALE_EPGM)
			/* before it joined: what came is not counted */
			epgm_drain(&W.zsub, cl->session != 0 ? cl->held : UINT32_MAX, epgm_take);
		for (k = 0; k < (opts.mode == PSB_STALE_MULTICAST ? 2 : 1); k++) {
			struct psb_mc_sock *s = k == 0 ? &W.uni : &W.grp;
			unsigned int i;

			for (i = 0; i < READS_A_PASS && (n = psb_mc_sock_recv(s, buf, sizeof(buf), 0))
			     > 0; i++) {
				got++;
				if (k == 0)
					psb_stale_client_input(cl, buf, (size_t)n, s->from,
							       s->from_port, psb_clock_ns());
				else
					psb_stale_client_group(cl, buf, (size_t)n, psb_clock_ns());
			}
		}
		if (psb_stale_client_over(cl))
			break;
		now = psb_clock_ns();
		wake = now + 5000000;
		if (psb_stale_client_next_ns(cl) < wake)
			wake = psb_stale_client_next_ns(cl);
		if (got > 0 && wake > psb_clock_ns() + COALESCE_NS) {
			/*
			 * Packets came: let the next ones gather for a moment instead of waking
			 * for each (a version is a thousand of them; a wake-up costs more than
			 * reading several).
			 */
			struct timespec ts = { 0, COALESCE_NS };

			nanosleep(&ts, NULL);
		} else {
			wait_until(pfd, npfd, wake);
		}
	}
	ok = cl->state == PSB_STALE_CL_DONE && cl->verify_fail == 0;
	if (!ok && g_signal != 0 && cl->failure[0] == '\0')
		snprintf(cl->failure, sizeof(cl->failure), "stopped by %s before the end",
			 g_signal == SIGINT ? "SIGINT" : "SIGTERM");
	say(cc.verify ? 4 : 7, "worker %u: holds version %u (the trainer's final: %u), %llu "
	    "versions taken%s%s; %llu stray packets", cc.id, cl->held, cl->end_vid,
	    (unsigned long long)cl->versions, cc.verify ? ", every byte checked" : "",
	    cl->verify_fail ? " -- SOME WRONG" : "", (unsigned long long)cl->stray);
	if (json_path != NULL) {
		json_t *o = json_pack("{s:I, s:s, s:I, s:I, s:I, s:I, s:I, s:b, s:s}",
			"id", (json_int_t)cc.id, "mode", psb_stale_mode_names[opts.mode],
			"held", (json_int_t)cl->held, "final", (json_int_t)cl->end_vid,
			"versions", (json_int_t)cl->versions,
			"verify_fail", (json_int_t)cl->verify_fail,
			"stray", (json_int_t)cl->stray, "ok", ok, "failure", cl->failure);

		json_object_set_new(o, "state", json_string(run_state(ok)));
		if (cl->rx != NULL) {
			json_object_set_new(o, "receiver", psb_mc_metric_json(&psb_mc_recv_block,
				psb_mc_recv_stats(cl->rx)));
		} else if (opts.mode == PSB_STALE_EPGM) {
			json_object_set_new(o, "epgm_bad", json_integer((json_int_t)W.zsub.bad));
		} else {
			json_object_set_new(o, "bad_files", json_integer((json_int_t)W.fs.bad_files));
		}
		psb_cli_write_json(o, json_path);
	}
	if (cl->failure[0] != '\0')
		fprintf(stderr, "psb-stale: worker %u: %s\n", cc.id, cl->failure);
	psb_stale_client_fini(cl);
	if (opts.mode == PSB_STALE_FILESYSTEM)
		psb_stale_fs_close(&W.fs);
	free(W.fsbuf);
	psb_mc_sock_close(&W.uni);
	if (opts.mode == PSB_STALE_MULTICAST)
		psb_mc_sock_close(&W.grp);
	if (opts.mode == PSB_STALE_EPGM)
		epgm_close(&W.zsub);
	return ok ? 0 : g_signal != 0 ? 128 + g_signal : 1;
}

int
main(int argc, char **argv)
{
	psb_cli_prog("psb-stale");
	prctl(PR_SET_TIMERSLACK, 1000UL);	/* sleeps to the microsecond, not 50 */
	psb_stale_opts_default(&opts);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "trainer") == 0)
		return do_trainer(argc - 1, argv + 1);
	if (strcmp(argv[1], "worker") == 0)
		return do_worker(argc - 1, argv + 1);
	if (strcmp(argv[1], "--version") == 0)
		psb_cli_version_exit();
	if (argv[1][0] == '-')
		psb_cli_usage_error("unrecognized option '%s' (a command first: trainer or worker)",
				    argv[1]);
	psb_cli_usage_error("unknown command \"%s\" (trainer or worker)", argv[1]);
}
