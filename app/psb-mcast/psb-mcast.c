/*
 * psb-mcast: psb's reliable multicast from an ordinary process, over kernel UDP sockets.
 *
 *   psb-mcast send --local IP:PORT --group IP:PORT [options]   publish versions
 *   psb-mcast recv --local IP --group IP:PORT [options]        receive and check them
 *   psb-mcast bench [--sink null|copy|udp] [options]            the sender's speed on one core
 *
 * The sender publishes a version of --data-size bytes every --push-frequency seconds
 * (byte i of version v is a pattern of v and i, so that a receiver can check every byte),
 * --count of them, then serves repairs for --linger seconds. A receiver takes versions until
 * it holds --expect (a version number) or --max-time passes, and checks each one it holds
 * whole: its CRC32C, and every byte against the pattern. Both print a line per version and
 * their counters at the end; --json writes them, whole or not at all.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "psb_cli.h"
#include "psb_clock.h"
#include "psb_mc_metric.h"
#include "psb_mc_sock.h"

static uint8_t
pattern(uint32_t vid, uint64_t i)
{
	return (uint8_t)(vid * 31u + i * 7u + (i >> 12));
}

static void
usage(FILE *f)
{
	fprintf(f,
"usage: psb-mcast send --local IP:PORT --group IP:PORT [--data-size B] [--push-frequency S]\n"
"                      [--count N] [--linger S] [--rate GBITS] [--parity N] [--group-size K]\n"
"                      [--seg-size B] [--session N] [--repair-share PCT]\n"
"                      [--receiver-share PCT] [--nack-receivers N] [--json FILE]\n"
"       psb-mcast recv --local IP --group IP:PORT [--expect V] [--max-time S] [--budget B]\n"
"                      [--id N] [--json FILE]\n"
"       psb-mcast bench [--sink null|copy|udp] [--data-size B] [--seconds S] [--rate GBITS]\n"
"                      [--seg-size B] [--json FILE]\n"
"  send: a version every --push-frequency (default 0.2 s) of --data-size (default 10MB),\n"
"        --count of them (default 10), then repairs for --linger (default 1 s); pacing\n"
"        --rate Gbit/s (default 5), --parity symbols per group (default 32, 0: resend),\n"
"        groups of --group-size (default 64), --seg-size bytes a packet (default 8932);\n"
"        repairs take at most --repair-share %% of the rate (default 25), a receiver\n"
"        --receiver-share %% of that (default 25), --nack-receivers tracked (256)\n"
"  recv: until it holds version --expect (default: --max-time only), at most --max-time\n"
"        (default 30 s); versions in --budget bytes (default 1GB)\n"
"  bench: one core publishing versions back to back (CRC included) into a sink for\n"
"        --seconds (default 3): null, copy (into packet buffers, default) or udp (a local\n"
"        socket); unpaced unless --rate\n"
"       psb-mcast --version: its version and the git revision it was built from\n");
}

struct bufs {
	uint8_t *b[4];
	uint32_t vid[4];
};

static void
release(void *arg, uint32_t vid, const void *data)
{
	struct bufs *bs = arg;
	unsigned int i;

	(void)data;
	for (i = 0; i < 4; i++)
		if (bs->vid[i] == vid)
			bs->vid[i] = 0;
}

/* The sender's NACK socket is its multicast one: emit goes through a wrapper for release. */
struct send_ctx {
	struct psb_mc_sock sock;
	struct bufs bufs;
};

static int
send_emit(void *arg, const uint8_t *hdr, unsigned int hlen, const uint8_t *payload,
		unsigned int plen)
{
	return psb_mc_sock_emit(&((struct send_ctx *)arg)->sock, hdr, hlen, payload, plen);
}

static void
send_release(void *arg, uint32_t vid, const void *data)
{
	release(&((struct send_ctx *)arg)->bufs, vid, data);
}

static int
do_send(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "local", required_argument, NULL, 'l' }, { "group", required_argument, NULL, 'g' },
		{ "data-size", required_argument, NULL, 'd' },
		{ "push-frequency", required_argument, NULL, 'p' },
		{ "count", required_argument, NULL, 'c' }, { "linger", required_argument, NULL, 'L' },
		{ "rate", required_argument, NULL, 'r' }, { "parity", required_argument, NULL, 'P' },
		{ "group-size", required_argument, NULL, 'k' },
		{ "seg-size", required_argument, NULL, 'S' },
		{ "session", required_argument, NULL, 's' }, { "json", required_argument, NULL, 'j' },
		{ "repair-share", required_argument, NULL, 'R' },
		{ "receiver-share", required_argument, NULL, 'V' },
		{ "nack-receivers", required_argument, NULL, 'N' },
		PSB_CLI_VERSION_OPTION, { NULL, 0, NULL, 0 },
	};
	struct psb_mc_send_cfg cfg = { .seg_size = PSB_MC_SEG_MAX, .group = 64, .parity = 32,
		.rate_bps = 5000000000ull, .heartbeat_ns = 5000000, .nack_hold_ns = 200000,
		.repair_pct = PSB_MC_REPAIR_PCT, .receiver_pct = PSB_MC_RECEIVER_PCT,
		.receivers = PSB_MC_RECEIVERS };
	uint64_t size = 10000000, push_ns = 200000000, linger_ns = 1000000000, t0, next, end = 0;
	uint32_t local = 0, group = 0, count = 10, vid = 0;
	uint16_t lport = 0, gport = 0;
	const char *json_path = NULL;
	static struct send_ctx ctx;
	struct psb_mc_send *tx;
	uint8_t buf[PSB_MC_HLEN + PSB_MC_NACK_MAX * PSB_MC_NACK_ENTRY];
	const struct psb_mc_send_stats *st;
	char err[256];
	unsigned int i;
	int c, rc;

	cfg.session = (uint32_t)(psb_clock_ns() ^ (uint64_t)getpid() << 16);
	while ((c = psb_cli_getopt(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'l': psb_cli_ip_port("--local", optarg, &local, &lport); break;
		case 'g': psb_cli_ip_port("--group", optarg, &group, &gport); break;
		case 'd': size = psb_cli_size("--data-size", optarg); break;
		case 'p': push_ns = psb_cli_seconds_in("--push-frequency", optarg, 1000000,
						       3600000000000ull); break;
		case 'c': count = (uint32_t)psb_cli_u64("--count", optarg, 1, 1000000000); break;
		case 'L': linger_ns = psb_cli_seconds_in("--linger", optarg, 0, 3600000000000ull);
			break;
		case 'r': cfg.rate_bps = psb_cli_u64("--rate", optarg, 0, 400) * 1000000000ull; break;
		case 'P': cfg.parity = (uint16_t)psb_cli_u64("--parity", optarg, 0,
							     PSB_MC_PARITY_MAX); break;
		case 'k': cfg.group = (uint16_t)psb_cli_u64("--group-size", optarg, 1,
							    PSB_MC_GROUP_MAX); break;
		case 'S': cfg.seg_size = (uint16_t)psb_cli_u64("--seg-size", optarg, PSB_MC_SEG_MIN,
							       PSB_MC_SEG_MAX); break;
		case 's': cfg.session = (uint32_t)psb_cli_u64("--session", optarg, 1, UINT32_MAX);
			break;
		case 'j': json_path = optarg; break;
		case 'R': cfg.repair_pct = (uint16_t)psb_cli_u64("--repair-share", optarg, 1, 100);
			break;
		case 'V': cfg.receiver_pct = (uint16_t)psb_cli_u64("--receiver-share", optarg, 1,
								  100); break;
		case 'N': cfg.receivers = (uint32_t)psb_cli_u64("--nack-receivers", optarg, 8,
								PSB_MC_RECEIVERS_MAX); break;
		}
	}
	if (local == 0 || group == 0)
		psb_die("send: give --local IP:PORT and --group IP:PORT");
	if (size > PSB_MC_MAX_VERSION)
		psb_die("--data-size: at most %llu bytes", (unsigned long long)PSB_MC_MAX_VERSION);
	rc = psb_mc_sock_sender(&ctx.sock, local, lport, group, gport, err, sizeof(err));
	if (rc != 0)
		psb_die("send: %s", err);
	if (psb_mc_send_create(&cfg, send_emit, send_release, &ctx, &tx) != 0)
		psb_die("send: bad settings");
	for (i = 0; i < 4; i++)
		if ((ctx.bufs.b[i] = malloc(size ? size : 1)) == NULL)
			psb_die("out of memory for %llu-byte versions", (unsigned long long)size);
	st = psb_mc_send_stats(tx);
	printf("send: %u versions of %llu B every %.3f s at %.2f Gbit/s; repairs at most %u %% of "
	       "it (%.3f Gbit/s), a receiver %u %% of that (%.3f Gbit/s), %u receivers tracked\n",
	       count, (unsigned long long)size, push_ns / 1e9, cfg.rate_bps / 1e9, cfg.repair_pct,
	       st->repair_bps / 1e9, cfg.receiver_pct, st->receiver_bps / 1e9, cfg.receivers);
	t0 = psb_clock_ns();
	next = t0;
	for (;;) {
		uint64_t now = psb_clock_ns(), wake;
		long n;

		if (vid < count && now >= next) {
			for (i = 0; i < 4 && ctx.bufs.vid[i] != 0; i++)
				;
			if (i == 4)
				psb_die("send: no buffer free for version %u", vid + 1);
			vid++;
			for (uint64_t k = 0; k < size; k++)
				ctx.bufs.b[i][k] = pattern(vid, k);
			ctx.bufs.vid[i] = vid;
			if (psb_mc_send_publish(tx, vid, ctx.bufs.b[i], size,
						psb_mc_crc(0, ctx.bufs.b[i], size), now) != 0)
				psb_die("send: cannot publish version %u", vid);
			printf("send: version %u published (%llu B) at %.3f s\n", vid,
			       (unsigned long long)size, (now - t0) / 1e9);
			fflush(stdout);
			next += push_ns;
		}
		/* repairs are served for --linger once the last version left, however asked */
		if (vid == count && end == 0 && !psb_mc_send_streaming(tx)) {
			printf("send: every version sent at %.3f s; repairs for %.3f s more\n",
			       (now - t0) / 1e9, linger_ns / 1e9);
			end = now + linger_ns;
		}
		if (end != 0 && now >= end)
			break;
		/* NACKs: 256 a pass at most, so that a flood of them never stops the sending */
		for (i = 0; i < 256 && (n = psb_mc_sock_recv(&ctx.sock, buf, sizeof(buf), 0)) > 0; i++)
			psb_mc_send_input(tx, buf, (size_t)n, ctx.sock.from, psb_clock_ns());
		psb_mc_send_poll(tx, psb_clock_ns(), 256);
		now = psb_clock_ns();
		wake = psb_mc_send_next_ns(tx, now);
		if (vid < count && next < wake)
			wake = next;
		if (wake > now) {
			int wait = wake - now > 5000000 ? 5 : (int)((wake - now) / 1000000 + 1);

			n = psb_mc_sock_recv(&ctx.sock, buf, sizeof(buf), wait);
			if (n > 0)
				psb_mc_send_input(tx, buf, (size_t)n, ctx.sock.from, psb_clock_ns());
		}
	}
	{
		struct psb_mc_nacker top[4];
		unsigned int k = psb_mc_send_nackers(tx, top, 4);
		char ip[16];

		printf("send: %u versions, %llu sent whole in %.3f s; data %llu pkts, repairs %llu "
		       "parity + %llu data pkts; NACKs %llu (%llu entries: %llu over budget), NCFs "
		       "%llu; repairs held by their budget %llu times; socket busy %llu\n", vid,
		       (unsigned long long)st->sent_whole, (psb_clock_ns() - t0) / 1e9,
		       (unsigned long long)st->data_pkts,
		       (unsigned long long)st->repair_parity_pkts,
		       (unsigned long long)st->repair_data_pkts, (unsigned long long)st->nacks,
		       (unsigned long long)st->nack_entries,
		       (unsigned long long)st->nack_over_budget, (unsigned long long)st->ncfs,
		       (unsigned long long)st->repair_limited,
		       (unsigned long long)ctx.sock.send_busy);
		for (i = 0; i < k; i++)
			printf("send: NACKs from %s: %llu (%u receiver ids, most from id %u), %llu "
			       "entries over budget, %llu B of repairs\n",
			       psb_metric_ipv4_str(top[i].addr, ip), (unsigned long long)top[i].nacks,
			       top[i].ids, top[i].id, (unsigned long long)top[i].over_budget,
			       (unsigned long long)top[i].repair_bytes);
	}
	if (json_path != NULL) {
		json_t *o = psb_mc_metric_json(&psb_mc_send_block, st);

		json_object_set_new(o, "duration_s", json_real((psb_clock_ns() - t0) / 1e9));
		json_object_set_new(o, "socket_busy", json_integer((json_int_t)ctx.sock.send_busy));
		json_object_set_new(o, "nackers", psb_mc_nackers_json(tx, 8));
		psb_cli_write_json(o, json_path);
	}
	psb_mc_send_free(tx);
	psb_mc_sock_close(&ctx.sock);
	for (i = 0; i < 4; i++)
		free(ctx.bufs.b[i]);
	return 0;
}

static int
do_recv(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "local", required_argument, NULL, 'l' }, { "group", required_argument, NULL, 'g' },
		{ "expect", required_argument, NULL, 'e' },
		{ "max-time", required_argument, NULL, 't' },
		{ "budget", required_argument, NULL, 'b' }, { "id", required_argument, NULL, 'i' },
		{ "json", required_argument, NULL, 'j' }, PSB_CLI_VERSION_OPTION,
		{ NULL, 0, NULL, 0 },
	};
	struct psb_mc_recv_cfg cfg = { .budget = 1u << 30, .max_version = 1u << 29,
		.backoff_ns = 2000000, .retry_ns = 10000000, .reorder = 64, .vid_window = 1u << 20,
		.session_idle_ns = 3000000000ull };
	uint64_t max_ns = 30000000000ull, t0, checked_bad = 0, checked = 0;
	uint32_t local = 0, group = 0, expect = 0, held = 0, sess;
	uint16_t gport = 0;
	const char *json_path = NULL;
	static uint8_t buf[PSB_MC_HLEN + PSB_MC_SEG_MAX + 64];
	const struct psb_mc_recv_stats *st;
	struct psb_mc_sock sock;
	struct psb_mc_recv *r;
	char err[256];
	int c, rc, ok;

	cfg.id = (uint32_t)getpid();
	cfg.seed = psb_clock_ns();
	while ((c = psb_cli_getopt(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'l': local = psb_cli_ip("--local", optarg); break;
		case 'g': psb_cli_ip_port("--group", optarg, &group, &gport); break;
		case 'e': expect = (uint32_t)psb_cli_u64("--expect", optarg, 1, UINT32_MAX); break;
		case 't': max_ns = psb_cli_seconds_in("--max-time", optarg, 1000000,
						      86400000000000ull); break;
		case 'b': cfg.budget = psb_cli_size("--budget", optarg); break;
		case 'i': cfg.id = (uint32_t)psb_cli_u64("--id", optarg, 0, UINT32_MAX); break;
		case 'j': json_path = optarg; break;
		}
	}
	if (local == 0 || group == 0)
		psb_die("recv: give --local IP and --group IP:PORT");
	if (cfg.budget < 2)
		psb_die("--budget: too small");
	cfg.max_version = cfg.budget / 2 < PSB_MC_MAX_VERSION ? cfg.budget / 2 : PSB_MC_MAX_VERSION;
	rc = psb_mc_sock_receiver(&sock, local, group, gport, err, sizeof(err));
	if (rc != 0)
		psb_die("recv: %s", err);
	if (psb_mc_recv_create(&cfg, psb_mc_sock_nack, &sock, &r) != 0)
		psb_die("recv: bad settings");
	t0 = psb_clock_ns();
	while (psb_clock_ns() - t0 < max_ns && (expect == 0 || held < expect)) {
		uint64_t now = psb_clock_ns(), wake = psb_mc_recv_next_ns(r);
		int wait = wake <= now ? 0 : wake - now > 5000000 ? 5 : (int)((wake - now) / 1000000 + 1);
		long n = psb_mc_sock_recv(&sock, buf, sizeof(buf), wait);

		if (n < 0)
			psb_die("recv: %s", strerror((int)-n));
		if (n > 0) {
			struct psb_mc_pkt pk;

			if (psb_mc_recv_input(r, buf, (size_t)n, psb_clock_ns()) == 1) {
				struct psb_mc_ver v;
				const uint8_t *d = psb_mc_recv_latest(r, &v);
				uint64_t k, bad = 0;

				for (k = 0; k < v.total_len; k++)
					bad += d[k] != pattern(v.vid, k);
				checked++;
				checked_bad += bad != 0;
				held = v.vid;
				printf("recv: version %u whole at %.3f s, %llu B, CRC32C ok, %s\n", v.vid,
				       (psb_clock_ns() - t0) / 1e9, (unsigned long long)v.total_len,
				       bad == 0 ? "every byte as sent" : "BYTES DIFFER");
				fflush(stdout);
			}
			/* NACKs go where the followed session's packets come from, nowhere else */
			if (psb_mc_parse(buf, (size_t)n, &pk) > 0 && pk.type != PSB_MC_NACK &&
			    psb_mc_recv_session(r, &sess) && pk.session == sess) {
				sock.peer = sock.from;
				sock.peer_port = sock.from_port;
			}
		}
		psb_mc_recv_poll(r, psb_clock_ns());
	}
	st = psb_mc_recv_stats(r);
	ok = checked_bad == 0 && (expect == 0 ? held != 0 : held >= expect);
	printf("recv: holds version %u; %llu whole (%llu superseded, %llu late joins), %llu decoded "
	       "groups, NACKs %llu (%llu suppressed), forged %llu, malformed %llu\n", held,
	       (unsigned long long)st->completed, (unsigned long long)st->superseded,
	       (unsigned long long)st->late_joins, (unsigned long long)st->decoded_groups,
	       (unsigned long long)st->nacks, (unsigned long long)st->nacks_suppressed,
	       (unsigned long long)st->forged,
	       (unsigned long long)(st->bad[PSB_MC_BAD_SHORT] + st->bad[PSB_MC_BAD_MAGIC] +
				    st->bad[PSB_MC_BAD_TYPE] + st->bad[PSB_MC_BAD_GEOMETRY] +
				    st->bad[PSB_MC_BAD_INDEX] + st->bad[PSB_MC_BAD_LENGTH] +
				    st->bad[PSB_MC_BAD_NACK]));
	if (json_path != NULL) {
		json_t *o = psb_mc_metric_json(&psb_mc_recv_block, st);

		json_object_set_new(o, "held", json_integer(held));
		json_object_set_new(o, "checked", json_integer((json_int_t)checked));
		json_object_set_new(o, "bytes_differ", json_integer((json_int_t)checked_bad));
		json_object_set_new(o, "ok", json_boolean(ok));
		psb_cli_write_json(o, json_path);
	}
	if (!ok && expect != 0 && held < expect)
		fprintf(stderr, "psb-mcast: recv: version %u did not arrive whole within %.1f s "
			"(holds %u; heard %llu packets from the group)\n", expect, max_ns / 1e9, held,
			(unsigned long long)sock.recv_pkts);
	psb_mc_recv_free(r);
	psb_mc_sock_close(&sock);
	return ok ? 0 : 1;
}

/*
 * bench: how fast one core segments, paces and hands out versions, the CRC of each
 * included, into a sink: null (nothing), copy (each packet copied into a ring of packet
 * buffers, as a driver's transmit path would) or udp (sendmsg to a local UDP socket, as
 * psb-mcast send does between ordinary processes).
 */
enum { SINK_NULL, SINK_COPY, SINK_UDP };
#define SINK_SLOTS	512
#define SINK_SLOT	(PSB_MC_HLEN + PSB_MC_SEG_MAX)

struct sink {
	int kind;
	uint8_t *ring;
	unsigned int slot;
	int fd;
	struct sockaddr_in to;
	uint64_t busy;
};

static int
sink_emit(void *arg, const uint8_t *hdr, unsigned int hlen, const uint8_t *payload,
		unsigned int plen)
{
	struct sink *k = arg;

	if (k->kind == SINK_COPY) {
		uint8_t *p = k->ring + (size_t)k->slot * SINK_SLOT;

		memcpy(p, hdr, hlen);
		if (plen != 0)
			memcpy(p + hlen, payload, plen);
		k->slot = (k->slot + 1) % SINK_SLOTS;
	} else if (k->kind == SINK_UDP) {
		struct iovec iov[2] = {
			{ .iov_base = (void *)(uintptr_t)hdr, .iov_len = hlen },
			{ .iov_base = (void *)(uintptr_t)payload, .iov_len = plen },
		};
		struct msghdr m = { .msg_name = &k->to, .msg_namelen = sizeof(k->to),
				    .msg_iov = iov, .msg_iovlen = plen != 0 ? 2 : 1 };

		if (sendmsg(k->fd, &m, 0) < 0) {
			k->busy++;
			return -EAGAIN;
		}
	}
	return 0;
}

static void
no_release(void *arg, uint32_t vid, const void *data)
{
	(void)arg;
	(void)vid;
	(void)data;
}

static int
do_bench(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "sink", required_argument, NULL, 'k' }, { "data-size", required_argument, NULL, 'd' },
		{ "seconds", required_argument, NULL, 't' }, { "rate", required_argument, NULL, 'r' },
		{ "seg-size", required_argument, NULL, 'S' }, { "json", required_argument, NULL, 'j' },
		PSB_CLI_VERSION_OPTION, { NULL, 0, NULL, 0 },
	};
	struct psb_mc_send_cfg cfg = { .session = 1, .seg_size = PSB_MC_SEG_MAX, .group = 64, .parity = 32,
		.heartbeat_ns = 5000000, .nack_hold_ns = 200000 };
	uint64_t size = 10000000, dur_ns = 3000000000ull, t0, cpu0, now, cpu;
	const char *json_path = NULL, *sink_name = "copy";
	struct sink k = { .kind = SINK_COPY, .fd = -1 };
	const struct psb_mc_send_stats *st;
	struct psb_mc_send *tx;
	uint32_t vid = 0;
	uint8_t *data;
	double gbs;
	int c;

	while ((c = psb_cli_getopt(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'k':
			sink_name = optarg;
			if (strcmp(optarg, "null") == 0)
				k.kind = SINK_NULL;
			else if (strcmp(optarg, "copy") == 0)
				k.kind = SINK_COPY;
			else if (strcmp(optarg, "udp") == 0)
				k.kind = SINK_UDP;
			else
				psb_die("--sink: null, copy or udp (got \"%s\")", optarg);
			break;
		case 'd': size = psb_cli_size("--data-size", optarg); break;
		case 't': dur_ns = psb_cli_seconds_in("--seconds", optarg, 10000000, 3600000000000ull);
			break;
		case 'r': cfg.rate_bps = psb_cli_u64("--rate", optarg, 0, 1000) * 1000000000ull; break;
		case 'S': cfg.seg_size = (uint16_t)psb_cli_u64("--seg-size", optarg, PSB_MC_SEG_MIN,
							       PSB_MC_SEG_MAX); break;
		case 'j': json_path = optarg; break;
		}
	}
	if (size == 0 || size > PSB_MC_MAX_VERSION)
		psb_die("--data-size: 1 to %llu bytes", (unsigned long long)PSB_MC_MAX_VERSION);
	data = malloc(size);
	k.ring = malloc((size_t)SINK_SLOTS * SINK_SLOT);
	if (data == NULL || k.ring == NULL)
		psb_die("out of memory");
	memset(data, 0x5a, size);
	memset(k.ring, 0, (size_t)SINK_SLOTS * SINK_SLOT);
	if (k.kind == SINK_UDP) {
		/* a local socket nobody reads: what the kernel does per datagram, not a link */
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t al = sizeof(a);
		int rfd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

		if (rfd < 0 || bind(rfd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
		    getsockname(rfd, (struct sockaddr *)&a, &al) != 0)
			psb_die("--sink udp: %s", strerror(errno));
		k.to = a;
		k.fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (k.fd < 0)
			psb_die("--sink udp: %s", strerror(errno));
	}
	if (psb_mc_send_create(&cfg, sink_emit, no_release, &k, &tx) != 0)
		psb_die("bench: bad settings");
	t0 = psb_clock_ns();
	cpu0 = psb_clock_read_ns(CLOCK_THREAD_CPUTIME_ID);
	do {
		now = psb_clock_ns();
		if (!psb_mc_send_streaming(tx)) {
			vid++;
			/* the trainer's part: the check of every version it publishes */
			if (psb_mc_send_publish(tx, vid, data, size, psb_mc_crc(0, data, size), now))
				psb_die("bench: cannot publish version %u", vid);
		}
		psb_mc_send_poll(tx, now, 256);
	} while (now - t0 < dur_ns);
	now = psb_clock_ns();
	cpu = psb_clock_read_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	st = psb_mc_send_stats(tx);
	gbs = (double)st->data_bytes / (double)(now - t0);
	printf("bench: sink %s, %llu B versions, %u published, %llu sent whole: %.2f GB/s of "
	       "data (%.2f GB/s per CPU second), %.0f packets/s, rate %s\n", sink_name,
	       (unsigned long long)size, vid, (unsigned long long)st->sent_whole, gbs,
	       (double)st->data_bytes / (double)cpu, (double)st->data_pkts * 1e9 / (now - t0),
	       cfg.rate_bps ? "paced" : "unpaced");
	if (json_path != NULL)
		psb_cli_write_json(json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:I, s:I}",
			"sink", sink_name, "data_size", (json_int_t)size, "published", (json_int_t)vid,
			"data_bytes", (json_int_t)st->data_bytes, "data_pkts", (json_int_t)st->data_pkts,
			"wall_ns", (json_int_t)(now - t0), "gb_per_s", gbs,
			"gb_per_cpu_s", (double)st->data_bytes / (double)cpu,
			"rate_bps", (json_int_t)cfg.rate_bps, "sink_busy", (json_int_t)k.busy), json_path);
	psb_mc_send_free(tx);
	if (k.fd >= 0)
		close(k.fd);
	free(k.ring);
	free(data);
	return 0;
}

int
main(int argc, char **argv)
{
	psb_cli_prog("psb-mcast");
	if (argc >= 2 && strcmp(argv[1], "send") == 0)
		return do_send(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "recv") == 0)
		return do_recv(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "bench") == 0)
		return do_bench(argc - 1, argv + 1);
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		usage(stdout);
		return 0;
	}
	if (argc >= 2 && strcmp(argv[1], "--version") == 0)
		psb_cli_version_exit();
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (argv[1][0] == '-')
		psb_cli_usage_error("unrecognized option '%s' (a command first: send, recv or "
				    "bench)", argv[1]);
	psb_cli_usage_error("unknown command '%s' (send, recv or bench)", argv[1]);
}
