/* pcap replay: generated input pcap -> psb on net_pcap -> output pcap checked field by field. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <setjmp.h>

#include <cmocka.h>
#include <jansson.h>
#include <pcap/pcap.h>

#include "psb_testframe.h"

#define PSB_IP		0xc6120001u	/* 198.18.0.1 */
#define W0_IP		0xc612000au	/* 198.18.0.10 */
#define W1_IP		0xc612000bu	/* 198.18.0.11 */
#define W_PORT		9432
#define SEG		1432
#define MAX_FRAMES	4096

static const char *psb_bin;
/* The sender epoch put_request writes into requests (a worker's incarnation). */
static uint32_t req_epoch;
/*
 * The scenario in progress, cleaned up by teardown when an assertion ends a test early
 * (tests keep theirs static: a failed assertion leaves the test's stack frame for good).
 */
static struct scen *cur;
/* psb, and where worker w sends from (w0 198.18.0.10, w1 198.18.0.11). */
static const struct psb_addr psb_node = TF_ADDR(0x01, PSB_IP, PSB_UDP_PORT);

struct frame {
	size_t len;
	uint8_t data[9100];
};

/* A scenario: frames in, frames out, counters. */
struct scen {
	char dir[64];
	char in[128], out[128], stats[128];
	struct tf_pcap dump;
	struct frame *outf;
	unsigned int nout;
	json_t *st;
	const char *extra[8];	/* more psb options, NULL-terminated */
};

static void
scen_open(struct scen *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->dir, sizeof(s->dir), "/tmp/psb-pcap-XXXXXX");
	assert_non_null(mkdtemp(s->dir));
	snprintf(s->in, sizeof(s->in), "%s/in.pcap", s->dir);
	snprintf(s->out, sizeof(s->out), "%s/out.pcap", s->dir);
	snprintf(s->stats, sizeof(s->stats), "%s/stats.json", s->dir);
	assert_int_equal(tf_pcap_open(&s->dump, s->in), 0);
	s->outf = calloc(MAX_FRAMES, sizeof(*s->outf));
	assert_non_null(s->outf);
	cur = s;
}

static void
scen_close(struct scen *s)
{
	char cmd[256];

	cur = NULL;
	free(s->outf);
	s->outf = NULL;
	if (s->st != NULL)
		json_decref(s->st);
	s->st = NULL;
	if (s->dump.fp != NULL)
		tf_pcap_close(&s->dump);
	if (getenv("PSB_TEST_KEEP") != NULL) {
		fprintf(stderr, "kept %s\n", s->dir);
		return;
	}
	unlink(s->in);
	unlink(s->out);
	unlink(s->stats);
	snprintf(cmd, sizeof(cmd), "%s", s->dir);
	rmdir(cmd);
}

static void
put_frame(struct scen *s, const uint8_t *buf, size_t len)
{
	static uint32_t usec;

	tf_pcap_put(&s->dump, buf, len, 0, ++usec);
}

static void
worker_addr(struct psb_addr *a, int w)
{
	*a = tf_addr((uint16_t)(0x10 + w), w == 0 ? W0_IP : W1_IP, W_PORT);
}

static void
psb_addr_of(struct psb_addr *a)
{
	*a = psb_node;
}

/* Put a whole request from worker w: every segment, in the given order (NULL: in order). */
static void
put_request(struct scen *s, int w, uint8_t type, uint64_t key, uint32_t req, uint32_t round,
		const float *val, uint32_t nfloat, const int *order, int nseg_order)
{
	struct psb_addr src, dst;
	struct psb_hdr h = tf_hdr(type, PSB_F_SYNC, (uint16_t)w, req, round, key);
	uint8_t buf[9100];
	uint32_t total = nfloat * 4, nseg = psb_seg_count(total, SEG), i;

	worker_addr(&src, w);
	psb_addr_of(&dst);
	h.aux = req_epoch;
	if (type == PSB_MSG_PULL || val == NULL) {
		put_frame(s, buf, psb_frame_build(buf, &src, &dst, &h, NULL, 0));
		return;
	}
	for (i = 0; i < (order != NULL ? (uint32_t)nseg_order : nseg); i++) {
		uint32_t idx = order != NULL ? (uint32_t)order[i] : i;

		tf_seg(&h, total, idx * SEG, SEG);
		put_frame(s, buf, psb_frame_build(buf, &src, &dst, &h, (const uint8_t *)val + h.offset,
			h.seg_len));
	}
}

/* Run psb (shards server shards) over the input pcap; read back the output and counters. */
static void
scen_run_shards(struct scen *s, const char *mode, int nworkers, int shards)
{
	char port[300], nw[16], ns[16], prefix[64];
	char errbuf[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *ph;
	const u_char *data;
	json_error_t jerr;
	pcap_t *p;
	pid_t pid;
	int status, rc;

	assert_int_equal(tf_pcap_close(&s->dump), 0);
	snprintf(port, sizeof(port), "pcap:%s:%s", s->in, s->out);
	snprintf(nw, sizeof(nw), "%d", nworkers);
	snprintf(ns, sizeof(ns), "%d", shards);
	snprintf(prefix, sizeof(prefix), "psbt-%d", (int)getpid());
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		const char *av[48] = {
			psb_bin, "--role", "server", "--port", port, "--ip", "198.18.0.1",
			"--mac", "02:00:00:00:00:01", "--mtu", "1500", mode, "--num-workers", nw,
			"--shards", ns, "-l", "0", "--no-huge", "--mbufs", "8192", "--idle-exit", "400",
			"--file-prefix", prefix, "--stats-file", s->stats, "-q",
		};
		int devnull = open("/dev/null", O_WRONLY), n = 28, k;

		for (k = 0; s->extra[k] != NULL; k++)
			av[n++] = s->extra[k];
		av[n] = NULL;
		if (devnull >= 0 && getenv("PSB_TEST_VERBOSE") == NULL) {
			dup2(devnull, 1);
			dup2(devnull, 2);
		}
		execv(psb_bin, (char *const *)av);
		_exit(127);
	}
	/* Bounded: psb exits after 400 ms without input; give it 30 s at most. */
	for (rc = 0; rc < 300; rc++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		usleep(100000);
	}
	if (rc == 300) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fail_msg("psb did not exit within 30 s");
	}
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	p = pcap_open_offline(s->out, errbuf);
	if (p == NULL)
		fail_msg("no output pcap: %s", errbuf);
	while ((rc = pcap_next_ex(p, &ph, &data)) == 1) {
		assert_true(s->nout < MAX_FRAMES);
		assert_true(ph->caplen <= sizeof(s->outf[0].data));
		memcpy(s->outf[s->nout].data, data, ph->caplen);
		s->outf[s->nout].len = ph->caplen;
		s->nout++;
	}
	pcap_close(p);
	s->st = json_load_file(s->stats, 0, &jerr);
	if (s->st == NULL)
		fail_msg("stats file: %s", jerr.text);
}

static void
scen_run(struct scen *s, const char *mode, int nworkers)
{
	scen_run_shards(s, mode, nworkers, 1);
}

static json_int_t
stat_total(struct scen *s, const char *what)
{
	json_t *t = json_object_get(json_object_get(s->st, "totals"), what);

	return json_integer_value(t);
}

static json_int_t
stat_drop(struct scen *s, const char *reason)
{
	json_t *d = json_object_get(json_object_get(s->st, "totals"), "drops");

	return json_integer_value(json_object_get(d, reason));
}

static json_int_t
stat_store(struct scen *s, const char *what)
{
	return json_integer_value(json_object_get(json_object_get(s->st, "store"), what));
}

static const struct psb_parse_cfg any_cfg = { 0 };

/* Parse output frame i as psb and check the addressing back to worker w. */
static const struct psb_frame *
out_psb(struct scen *s, unsigned int i, int w, struct psb_frame *f)
{
	struct psb_addr wa;

	if (i >= s->nout)
		fail_msg("expected an output frame #%u, psb sent only %u", i, s->nout);
	assert_int_equal(psb_frame_parse(s->outf[i].data, s->outf[i].len, &any_cfg, f),
		PSB_FRAME_PSB);
	worker_addr(&wa, w);
	assert_memory_equal(f->dst.mac, wa.mac, 6);
	assert_memory_equal(f->src.mac, psb_node.mac, 6);
	assert_int_equal(f->src.ip, PSB_IP);
	assert_int_equal(f->dst.ip, wa.ip);
	assert_int_equal(f->src.port, PSB_UDP_PORT);
	assert_int_equal(f->dst.port, W_PORT);
	assert_int_equal(f->hdr.magic, PSB_MAGIC);
	assert_int_equal(f->hdr.version, PSB_VERSION);
	return f;
}

/* Frame *i is worker w's PUSH_ACK of request req; *i moves past it. */
static void
out_ack(struct scen *s, unsigned int *i, int w, uint32_t req)
{
	struct psb_frame f;

	out_psb(s, (*i)++, w, &f);
	assert_int_equal(f.hdr.type, PSB_MSG_PUSH_ACK);
	assert_int_equal(f.hdr.req_id, req);
}

/* Collect a segmented value response starting at frame *i into out; checks segmentation. */
static void
out_value(struct scen *s, unsigned int *i, int w, uint8_t type, uint64_t key, uint32_t req,
		float *out, uint32_t nfloat)
{
	uint32_t total = nfloat * 4, off = 0;
	struct psb_frame f;

	do {
		out_psb(s, *i, w, &f);
		assert_int_equal(f.hdr.type, type);
		assert_int_equal(f.hdr.key, key);
		assert_int_equal(f.hdr.req_id, req);
		assert_int_equal(f.hdr.sender, w);
		assert_int_equal(f.hdr.total_len, total);
		assert_int_equal(f.hdr.offset, off);
		assert_int_equal(f.hdr.seg_len, f.payload_len);
		assert_int_equal(psb_hdr_check_segment(&f.hdr, f.payload_len), 0);
		memcpy((uint8_t *)out + off, f.payload, f.payload_len);
		off += f.payload_len;
		(*i)++;
	} while (off < total);
}

static float *
fill(uint32_t n, float base, float step)
{
	float *v = malloc(n * sizeof(float));
	uint32_t i;

	assert_non_null(v);
	for (i = 0; i < n; i++)
		v[i] = base + step * (float)(i % 1000);
	return v;
}

/* Sync mode, two workers: pushes are acknowledged when the round closes; the pull gets the sum. */
static void
test_sync_sum(void **state)
{
	const uint32_t n = 1000;	/* 4000 B: 3 segments */
	float *a = fill(n, 1.0f, 0.5f), *b = fill(n, 100.0f, 2.0f), *got = calloc(n, 4);
	struct psb_frame f;
	static struct scen s;
	unsigned int i = 0, k;

	(void)state;
	scen_open(&s);
	put_request(&s, 0, PSB_MSG_PUSH, 7, 11, 0, a, n, NULL, 0);
	put_request(&s, 1, PSB_MSG_PUSH, 7, 21, 0, b, n, NULL, 0);
	put_request(&s, 0, PSB_MSG_PULL, 7, 12, 1, NULL, 0, NULL, 0);
	scen_run(&s, "--sync", 2);

	assert_int_equal(s.nout, 2 + 3);	/* 4000 B in 1432-byte segments */
	/* Round closed by worker 1's push: both acks, in rank order. */
	out_psb(&s, i++, 0, &f);
	assert_int_equal(f.hdr.type, PSB_MSG_PUSH_ACK);
	assert_int_equal(f.hdr.req_id, 11);
	assert_int_equal(f.hdr.round, 1);
	assert_int_equal(f.hdr.key, 7);
	assert_int_equal(f.hdr.flags & PSB_F_SYNC, PSB_F_SYNC);
	out_psb(&s, i++, 1, &f);
	assert_int_equal(f.hdr.type, PSB_MSG_PUSH_ACK);
	assert_int_equal(f.hdr.req_id, 21);
	out_value(&s, &i, 0, PSB_MSG_PULL_RESP, 7, 12, got, n);
	for (k = 0; k < n; k++)
		assert_true(got[k] == a[k] + b[k]);
	assert_int_equal(stat_store(&s, "rounds_closed"), 1);
	assert_int_equal(stat_store(&s, "push"), 2);
	assert_int_equal(stat_store(&s, "pull"), 1);
	free(a);
	free(b);
	free(got);
	scen_close(&s);
}

/* Async mode: pushes add at once; pushpull returns the value including its own push. */
static void
test_async_pushpull(void **state)
{
	const uint32_t n = 800;
	float *a = fill(n, 3.0f, 1.0f), *got = calloc(n, 4);
	struct psb_frame f;
	static struct scen s;
	unsigned int i = 0, k;

	(void)state;
	scen_open(&s);
	put_request(&s, 0, PSB_MSG_PUSH, 42, 1, 0, a, n, NULL, 0);
	put_request(&s, 1, PSB_MSG_PUSHPULL, 42, 1, 0, a, n, NULL, 0);
	put_request(&s, 0, PSB_MSG_PULL, 42, 2, 0, NULL, 0, NULL, 0);
	scen_run(&s, "--async", 2);

	out_psb(&s, i++, 0, &f);
	assert_int_equal(f.hdr.type, PSB_MSG_PUSH_ACK);
	assert_int_equal(f.hdr.round, 1);
	out_value(&s, &i, 1, PSB_MSG_PUSHPULL_RESP, 42, 1, got, n);
	for (k = 0; k < n; k++)
		assert_true(got[k] == 2 * a[k]);
	memset(got, 0, n * 4);
	out_value(&s, &i, 0, PSB_MSG_PULL_RESP, 42, 2, got, n);
	for (k = 0; k < n; k++)
		assert_true(got[k] == 2 * a[k]);
	assert_int_equal(s.nout, i);
	free(a);
	free(got);
	scen_close(&s);
}

/* Reordered, duplicated and lost-then-resent segments: applied exactly once. */
static void
test_reorder_dup_retry(void **state)
{
	const uint32_t n = 1500;	/* 6000 B: 5 segments */
	float *a = fill(n, 1.0f, 1.0f), *got = calloc(n, 4);
	static const int rev[] = { 4, 3, 2, 1, 0 };
	static const int lossy[] = { 0, 1, 3, 4 };
	static const int dups[] = { 0, 0, 1, 2, 2, 3, 4, 4 };
	struct psb_frame f;
	static struct scen s;
	unsigned int i = 0, k;

	(void)state;
	scen_open(&s);
	/* Key 1: reversed. Key 2: duplicated segments. Key 3: segment 2 lost, whole push resent. */
	put_request(&s, 0, PSB_MSG_PUSH, 1, 100, 0, a, n, rev, 5);
	put_request(&s, 0, PSB_MSG_PUSH, 2, 101, 0, a, n, dups, 8);
	put_request(&s, 0, PSB_MSG_PUSH, 3, 102, 0, a, n, lossy, 4);
	put_request(&s, 0, PSB_MSG_PUSH, 3, 102, 0, a, n, NULL, 0);
	/* A retry of an answered push (key 1): acknowledged again, not added again. */
	put_request(&s, 0, PSB_MSG_PUSH, 1, 100, 0, a, n, NULL, 0);
	put_request(&s, 0, PSB_MSG_PULL, 1, 103, 0, NULL, 0, NULL, 0);
	put_request(&s, 0, PSB_MSG_PULL, 2, 104, 0, NULL, 0, NULL, 0);
	put_request(&s, 0, PSB_MSG_PULL, 3, 105, 0, NULL, 0, NULL, 0);
	scen_run(&s, "--async", 1);

	/* key 1's last segment came first: the four before it named at once (early NACK) */
	out_psb(&s, i++, 0, &f);
	assert_int_equal(f.hdr.type, PSB_MSG_REPAIR_RESP);
	assert_int_equal(f.hdr.key, 1);
	assert_int_equal(f.hdr.req_id, 100);
	out_psb(&s, i++, 0, &f);
	assert_int_equal(f.hdr.type, PSB_MSG_PUSH_ACK);
	assert_int_equal(f.hdr.key, 1);
	out_psb(&s, i++, 0, &f);
	assert_int_equal(f.hdr.type, PSB_MSG_PUSH_ACK);
	assert_int_equal(f.hdr.key, 2);
	/* key 3's last came after segment 2 was lost: named at once */
	out_psb(&s, i++, 0, &f);
	assert_int_equal(f.hdr.type, PSB_MSG_REPAIR_RESP);
	assert_int_equal(f.hdr.key, 3);
	assert_int_equal(f.hdr.req_id, 102);
	out_psb(&s, i++, 0, &f);
	assert_int_equal(f.hdr.type, PSB_MSG_PUSH_ACK);
	assert_int_equal(f.hdr.key, 3);
	assert_int_equal(f.hdr.req_id, 102);
	out_psb(&s, i++, 0, &f);
	assert_int_equal(f.hdr.type, PSB_MSG_PUSH_ACK);
	assert_int_equal(f.hdr.key, 1);
	assert_int_equal(f.hdr.req_id, 100);
	for (k = 1; k <= 3; k++) {
		uint32_t j;

		memset(got, 0, n * 4);
		out_value(&s, &i, 0, PSB_MSG_PULL_RESP, k, 102 + k, got, n);
		for (j = 0; j < n; j++)
			assert_true(got[j] == a[j]);
	}
	assert_int_equal(s.nout, i);
	/* Key 2: 3 repeats; key 3: 4 segments resent; key 1's retry: 4 beyond the first. */
	assert_int_equal(stat_store(&s, "dup_segs"), 3 + 4 + 4);
	assert_int_equal(stat_store(&s, "early_nacks"), 2);
	assert_int_equal(stat_store(&s, "retries_answered"), 1);
	free(a);
	free(got);
	scen_close(&s);
}

static void
put_raw_psb(struct scen *s, uint8_t version, uint8_t type, uint16_t sender, uint64_t key,
		uint32_t req, uint32_t total, const void *payload, uint16_t plen)
{
	struct psb_addr src, dst;
	struct psb_hdr h = tf_hdr(type, 0, sender, req, 0, key);
	uint8_t buf[9100];

	worker_addr(&src, 0);
	psb_addr_of(&dst);
	h.version = version;
	h.total_len = total;
	h.seg_len = plen;
	h.seg_size = plen != 0 ? (uint16_t)((plen + 3) & ~3) : 0;
	put_frame(s, buf, psb_frame_build(buf, &src, &dst, &h, payload, plen));
}

/* Requests psb cannot serve get an ERROR reply naming the reason. */
static void
test_error_replies(void **state)
{
	static const uint8_t want[] = {
		PSB_ST_BAD_VERSION, PSB_ST_BAD_TYPE, PSB_ST_NO_KEY, PSB_ST_LEN_MISMATCH,
		PSB_ST_BAD_SENDER, PSB_ST_TOO_LARGE,
	};
	float v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct psb_frame f;
	static struct scen s;
	unsigned int i;

	(void)state;
	scen_open(&s);
	put_raw_psb(&s, 9, PSB_MSG_PUSH, 0, 5, 1, 0, NULL, 0);
	put_raw_psb(&s, PSB_VERSION, 0x07, 0, 5, 2, 0, NULL, 0);
	put_raw_psb(&s, PSB_VERSION, PSB_MSG_PULL, 0, 999, 3, 0, NULL, 0);
	/* Key 5 first gets 32 bytes, then a 16-byte push. */
	put_raw_psb(&s, PSB_VERSION, PSB_MSG_PUSH, 0, 5, 4, 32, v, 32);
	put_raw_psb(&s, PSB_VERSION, PSB_MSG_PUSH, 0, 5, 5, 16, v, 16);
	put_raw_psb(&s, PSB_VERSION, PSB_MSG_PUSH, 7, 5, 6, 32, v, 32);
	{
		/* First segment of a value larger than the server's --max-value (64 MiB). */
		struct psb_addr src, dst;
		struct psb_hdr h = tf_hdr(PSB_MSG_PUSH, 0, 0, 7, 0, 6);
		uint8_t buf[200];

		worker_addr(&src, 0);
		psb_addr_of(&dst);
		tf_seg(&h, 128u << 20, 0, 32);
		put_frame(&s, buf, psb_frame_build(buf, &src, &dst, &h, v, 32));
	}
	scen_run(&s, "--async", 1);

	/* The 32-byte push is acknowledged; every other request gets its error. */
	assert_int_equal(s.nout, 7);
	for (i = 0; i < 7; i++) {
		unsigned int e = i < 3 ? i : i - 1;

		out_psb(&s, i, 0, &f);
		if (i == 3) {
			assert_int_equal(f.hdr.type, PSB_MSG_PUSH_ACK);
			continue;
		}
		assert_int_equal(f.hdr.type, PSB_MSG_ERROR);
		assert_int_equal(f.hdr.status, want[e]);
		assert_int_equal(f.hdr.req_id, e < 3 ? e + 1 : e + 2);
	}
	assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(s.st,
		"store"), "errors"), "bad_version")), 1);
	scen_close(&s);
}

/* ARP and ICMP echo for psb's own address are answered; others are not. */
static void
test_arp_icmp(void **state)
{
	uint8_t buf[200], data[56];
	struct psb_addr w0;
	const uint8_t *mac0 = w0.mac;
	/* ICMP echo request, 56 bytes of data, id 0x1234 seq 7. */
	const struct tf_echo echo = { .ttl = 64, .ident = 0x1234, .seq = 7, .data = data,
		.data_len = sizeof(data) };
	struct psb_frame f;
	struct psb_parse_cfg cfg = { .my_ip = W0_IP };
	static struct scen s;
	size_t len;
	uint16_t i;

	(void)state;
	worker_addr(&w0, 0);
	scen_open(&s);
	len = psb_arp_request(buf, mac0, W0_IP, PSB_IP);
	put_frame(&s, buf, len);
	len = psb_arp_request(buf, mac0, W0_IP, 0xc6120063u);	/* someone else */
	put_frame(&s, buf, len);
	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)i;
	put_frame(&s, buf, tf_icmp_echo(buf, &w0, &psb_node, &echo));
	scen_run(&s, "--async", 1);

	assert_int_equal(s.nout, 2);
	/* ARP reply: to the asker, from psb, op 2, sender = psb. */
	assert_int_equal(psb_frame_parse(s.outf[0].data, s.outf[0].len, &cfg, &f),
		PSB_FRAME_ARP_REPLY);
	assert_memory_equal(f.src.mac, psb_node.mac, 6);
	assert_int_equal(f.src.ip, PSB_IP);
	assert_memory_equal(f.dst.mac, mac0, 6);
	assert_int_equal(f.dst.ip, W0_IP);
	assert_memory_equal(s.outf[0].data, mac0, 6);
	/* ICMP echo reply: addresses swapped, type 0, same id/seq/data, valid checksums. */
	{
		const uint8_t *o = s.outf[1].data, *ic = o + 34;

		assert_int_equal(s.outf[1].len, 98);
		assert_memory_equal(o, mac0, 6);
		assert_memory_equal(o + 6, psb_node.mac, 6);
		assert_int_equal(psb_csum_partial(o + 14, 20, 0), 0xffff);
		assert_int_equal(o[26], 198);
		assert_int_equal(o[29], 1);
		assert_int_equal(o[33], 10);
		assert_int_equal(ic[0], 0);
		assert_int_equal(psb_csum_partial(ic, 64, 0), 0xffff);
		assert_int_equal(ic[4], 0x12);
		assert_int_equal(ic[5], 0x34);
		assert_int_equal(ic[7], 7);
		for (i = 0; i < 56; i++)
			assert_int_equal(ic[8 + i], i);
	}
	assert_int_equal(stat_total(&s, "arp_replies"), 1);
	assert_int_equal(stat_total(&s, "icmp_replies"), 1);
	assert_int_equal(stat_drop(&s, "not_mine"), 1);
	scen_close(&s);
}

/* Malformed frames are dropped, counted by reason, and change nothing. */
static void
test_malformed_dropped(void **state)
{
	float v[4] = { 1, 2, 3, 4 }, got[4];
	struct psb_addr src, dst;
	struct psb_hdr h;
	uint8_t good[200], bad[200];
	static struct scen s;
	struct psb_frame f;
	unsigned int i = 0, k;
	size_t len;

	(void)state;
	scen_open(&s);
	worker_addr(&src, 0);
	psb_addr_of(&dst);
	h = tf_hdr(PSB_MSG_PUSH, 0, 0, 1, 0, 9);
	tf_whole(&h, 16);
	len = psb_frame_build(good, &src, &dst, &h, v, 16);

	put_frame(&s, good, 20);				/* truncated */
	memcpy(bad, good, len);
	bad[24] ^= 0xff;					/* IP checksum */
	put_frame(&s, bad, len);
	memcpy(bad, good, len);
	bad[14 + 20 + 8] = 0;					/* magic */
	put_frame(&s, bad, len);
	memcpy(bad, good, len);
	bad[14 + 20 + 8 + 33] = 12;				/* seg_len 12 != payload 16 */
	put_frame(&s, bad, len);
	memcpy(bad, good, len);
	bad[14 + 6] = 0x20;					/* more fragments */
	tf_fix_ip_csum(bad + 14);
	put_frame(&s, bad, len);
	memcpy(bad, good, len);
	bad[12] = 0x86;						/* IPv6 ethertype */
	bad[13] = 0xdd;
	put_frame(&s, bad, len);
	memcpy(bad, good, len);
	bad[14 + 20 + 2] = 0x30;				/* UDP port 12xxx */
	put_frame(&s, bad, len);
	/* The good push still works afterwards, then a pull shows exactly one push. */
	put_frame(&s, good, len);
	h.type = PSB_MSG_PULL;
	h.req_id = 2;
	h.total_len = h.seg_len = h.seg_size = 0;
	put_frame(&s, good, psb_frame_build(good, &src, &dst, &h, NULL, 0));
	scen_run(&s, "--async", 1);

	out_psb(&s, i++, 0, &f);
	assert_int_equal(f.hdr.type, PSB_MSG_PUSH_ACK);
	out_value(&s, &i, 0, PSB_MSG_PULL_RESP, 9, 2, got, 4);
	for (k = 0; k < 4; k++)
		assert_true(got[k] == v[k]);
	assert_int_equal(s.nout, i);
	assert_int_equal(stat_drop(&s, "truncated"), 1);
	assert_int_equal(stat_drop(&s, "ip_checksum"), 1);
	assert_int_equal(stat_drop(&s, "bad_magic"), 1);
	assert_int_equal(stat_drop(&s, "bad_segment"), 1);
	assert_int_equal(stat_drop(&s, "ip_fragment"), 1);
	assert_int_equal(stat_drop(&s, "ethertype"), 1);
	assert_int_equal(stat_drop(&s, "udp_port"), 1);
	scen_close(&s);
}

/* A BATCH of small requests is answered by one BATCH_RESP, record by record. */
static void
test_batch(void **state)
{
	float v[4] = { 1.5f, 2.5f, -3.0f, 4.0f };
	static const struct {
		uint8_t type;
		uint64_t key;
		int value;
	} reqs[] = {
		{ PSB_MSG_PUSH, 5, 1 }, { PSB_MSG_PUSHPULL, 5, 1 }, { PSB_MSG_PULL, 6, 0 },
		{ PSB_MSG_PULL, 5, 0 },
	};
	struct psb_addr src, dst;
	struct psb_frame f;
	struct psb_hdr h;
	struct psb_rec r;
	static struct scen s;
	uint8_t buf[2048], payload[1024];
	size_t len = 0, off;
	unsigned int i, k;
	int used;

	(void)state;
	scen_open(&s);
	for (i = 0; i < 4; i++)
		len += tf_rec_put(payload + len, &(struct psb_rec){ .type = reqs[i].type,
			.len = reqs[i].value ? sizeof(v) : 0, .req_id = 100 + i,
			.key = reqs[i].key }, v);
	worker_addr(&src, 0);
	psb_addr_of(&dst);
	h = tf_hdr(PSB_MSG_BATCH, 0, 0, 77, 0, 0);
	h.aux = 0x1234;
	tf_whole(&h, (uint32_t)len);
	put_frame(&s, buf, psb_frame_build(buf, &src, &dst, &h, payload, (uint16_t)len));
	scen_run(&s, "--async", 1);

	assert_int_equal(s.nout, 1);
	out_psb(&s, 0, 0, &f);
	assert_int_equal(f.hdr.type, PSB_MSG_BATCH_RESP);
	assert_int_equal(f.hdr.req_id, 77);
	assert_int_equal(f.hdr.sender, 0);
	for (i = 0, off = 0; i < 4; i++, off += (size_t)used) {
		used = psb_rec_decode(&r, f.payload + off, f.payload_len - off);
		assert_true(used > 0);
		assert_int_equal(r.req_id, 100 + i);
		assert_true(r.key == reqs[i].key);
		if (i == 2) {
			assert_int_equal(r.type, PSB_MSG_ERROR);
			assert_int_equal(r.status, PSB_ST_NO_KEY);
			continue;
		}
		assert_int_equal(r.type, reqs[i].type | PSB_MSG_RESP);
		assert_int_equal(r.len, i == 0 ? 0 : sizeof(v));
		for (k = 0; i != 0 && k < 4; k++) {
			float got;

			memcpy(&got, f.payload + off + PSB_REC_HLEN + 4 * k, 4);
			assert_true(got == 2 * v[k]);
		}
	}
	assert_int_equal(off, f.payload_len);
	assert_int_equal(stat_store(&s, "batches"), 1);
	scen_close(&s);
}

/* A BYE from src to dst_ip (255.255.255.255: broadcast, to every MAC) and dst_port. */
static void
put_bye(struct scen *s, const struct psb_addr *src, uint32_t dst_ip, uint16_t dst_port)
{
	struct psb_addr dst = tf_bye_dst(&psb_node, dst_ip, dst_port);
	struct psb_hdr h;
	uint8_t buf[128];

	psb_hdr_init(&h, PSB_MSG_BYE);
	put_frame(s, buf, psb_frame_build(buf, src, &dst, &h, NULL, 0));
}

/* Counter `what` of the first role instance named role in the stats file. */
static json_int_t
stat_role(struct scen *s, const char *role, int instance, const char *what)
{
	json_t *r;
	size_t i;

	json_array_foreach(json_object_get(s->st, "roles"), i, r)
		if (strcmp(json_string_value(json_object_get(r, "role")), role) == 0 &&
		    json_integer_value(json_object_get(r, "instance")) == instance)
			return json_integer_value(json_object_get(r, what));
	fail_msg("no role %s%d in the stats file", role, instance);
	return -1;
}

/*
 * BYEs that are not a known peer's to the data port change nothing: from an unknown
 * address, from the worker's address to another port, from the worker's address with
 * another MAC (broadcast). Every request around them is answered.
 */
static void
test_bye_spoofed(void **state)
{
	float v[4] = { 1, 2, 3, 4 }, got[4];
	struct psb_addr w0, stranger, forged;
	static struct scen s;
	unsigned int i = 0, k;

	(void)state;
	scen_open(&s);
	worker_addr(&w0, 0);
	worker_addr(&stranger, 0);
	stranger.ip = 0xc6120063u;	/* 198.18.0.99, never seen */
	stranger.mac[5] = 0x63;
	forged = w0;
	forged.mac[5] = 0x66;		/* the worker's address, another MAC */
	put_request(&s, 0, PSB_MSG_PUSH, 1, 1, 0, v, 4, NULL, 0);
	put_bye(&s, &stranger, PSB_IP, PSB_UDP_PORT);
	put_bye(&s, &w0, PSB_IP, PSB_SCHED_PORT);
	put_bye(&s, &forged, 0xffffffffu, PSB_UDP_PORT);
	put_request(&s, 0, PSB_MSG_PUSH, 2, 2, 0, v, 4, NULL, 0);
	put_request(&s, 0, PSB_MSG_PULL, 1, 3, 0, NULL, 0, NULL, 0);
	scen_run(&s, "--async", 1);

	out_ack(&s, &i, 0, 1);
	out_ack(&s, &i, 0, 2);
	out_value(&s, &i, 0, PSB_MSG_PULL_RESP, 1, 3, got, 4);
	for (k = 0; k < 4; k++)
		assert_true(got[k] == v[k]);
	assert_int_equal(s.nout, i);
	assert_int_equal(stat_role(&s, "rx", 0, "bye_ignored"), 3);
	assert_int_equal(stat_role(&s, "rx", 0, "byes"), 0);
	assert_int_equal(stat_role(&s, "tx", 0, "paused_drops"), 0);
	scen_close(&s);
}

/*
 * The worker's own BYE (broadcast, then to psb's address) is accepted, reaches every
 * shard of the store without an answer, and pauses nothing: a pcap port keeps reading.
 * Keys 3 and 5 both belong to shard 0 of 2, so the answers come in request order.
 */
static void
test_bye_peer(void **state)
{
	const uint32_t n = 1000;	/* 3 segments */
	float *a = fill(n, 2.0f, 0.25f), *got = calloc(n, 4), v[4] = { 5, 6, 7, 8 };
	struct psb_addr w0;
	static struct scen s;
	unsigned int i = 0, k;

	(void)state;
	scen_open(&s);
	worker_addr(&w0, 0);
	put_request(&s, 0, PSB_MSG_PUSH, 3, 1, 0, a, n, NULL, 0);
	put_bye(&s, &w0, 0xffffffffu, PSB_UDP_PORT);
	put_request(&s, 0, PSB_MSG_PUSH, 5, 2, 0, v, 4, NULL, 0);
	put_bye(&s, &w0, PSB_IP, PSB_UDP_PORT);
	put_request(&s, 0, PSB_MSG_PULL, 3, 3, 0, NULL, 0, NULL, 0);
	scen_run_shards(&s, "--async", 1, 2);

	out_ack(&s, &i, 0, 1);
	out_ack(&s, &i, 0, 2);
	out_value(&s, &i, 0, PSB_MSG_PULL_RESP, 3, 3, got, n);
	for (k = 0; k < n; k++)
		assert_true(got[k] == a[k]);
	assert_int_equal(s.nout, i);
	assert_int_equal(stat_role(&s, "rx", 0, "byes"), 2);
	assert_int_equal(stat_role(&s, "rx", 0, "bye_ignored"), 0);
	assert_int_equal(stat_role(&s, "rx", 0, "bye_lost"), 0);
	/* keys 3 and 5 are shard 0's: shard 1 took the two BYEs only, and answered nothing */
	assert_int_equal(stat_role(&s, "rx", 0, "handed"), 5);
	assert_int_equal(stat_role(&s, "server", 0, "rx_pkts"), 5 + 2);
	assert_int_equal(stat_role(&s, "server", 1, "rx_pkts"), 2);
	assert_int_equal(stat_role(&s, "server", 1, "tx_pkts"), 0);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(s.st,
		"ports"), 0), "bye_pauses")), 0);
	free(a);
	free(got);
	scen_close(&s);
}

/*
 * A worker dies in the middle of a push and comes back with a new epoch: the segments of
 * its unfinished push are never added. Sync: the round closes with exactly one push per
 * worker. Async: a pull in between sees none of the unfinished push, and the key ends with
 * exactly the pushes that completed.
 */
static void
test_partial_push_restart(void **state)
{
	const uint32_t n = 1000;	/* 4000 B: 3 segments */
	float *a = fill(n, 1.0f, 0.5f), *b = fill(n, 100.0f, 2.0f), *x = fill(n, 7.0f, 3.0f);
	float *got = calloc(n, 4);
	static const int first_two[] = { 0, 1 };
	struct psb_frame f;
	static struct scen s;
	unsigned int i, k;
	int sync;

	(void)state;
	for (sync = 1; sync >= 0; sync--) {
		i = 0;
		scen_open(&s);
		req_epoch = 0xaaaa;
		put_request(&s, 0, PSB_MSG_PUSH, 7, 50, 0, x, n, first_two, 2);	/* dies */
		if (!sync) {
			/* worker 1 pushes, then pulls: it sees its own push only */
			req_epoch = 0x1111;
			put_request(&s, 1, PSB_MSG_PUSH, 7, 20, 0, b, n, NULL, 0);
			put_request(&s, 1, PSB_MSG_PULL, 7, 21, 0, NULL, 0, NULL, 0);
		}
		req_epoch = 0xbbbb;				/* restarted: ids from 1 */
		put_request(&s, 0, PSB_MSG_PUSH, 7, 1, 0, a, n, NULL, 0);
		req_epoch = 0x1111;
		if (sync)
			put_request(&s, 1, PSB_MSG_PUSH, 7, 20, 0, b, n, NULL, 0);
		put_request(&s, 1, PSB_MSG_PULL, 7, 22, sync, NULL, 0, NULL, 0);
		req_epoch = 0;
		scen_run(&s, sync ? "--sync" : "--async", 2);

		if (sync) {
			out_psb(&s, i++, 0, &f);
			assert_int_equal(f.hdr.type, PSB_MSG_PUSH_ACK);
			assert_int_equal(f.hdr.req_id, 1);
			assert_int_equal(f.hdr.round, 1);
			out_psb(&s, i++, 1, &f);
			assert_int_equal(f.hdr.type, PSB_MSG_PUSH_ACK);
		} else {
			out_psb(&s, i++, 1, &f);
			assert_int_equal(f.hdr.type, PSB_MSG_PUSH_ACK);
			out_value(&s, &i, 1, PSB_MSG_PULL_RESP, 7, 21, got, n);
			for (k = 0; k < n; k++)
				assert_true(got[k] == b[k]);
			out_psb(&s, i++, 0, &f);
			assert_int_equal(f.hdr.type, PSB_MSG_PUSH_ACK);
			assert_int_equal(f.hdr.round, 2);
		}
		out_value(&s, &i, 1, PSB_MSG_PULL_RESP, 7, 22, got, n);
		for (k = 0; k < n; k++)
			assert_true(got[k] == a[k] + b[k]);
		assert_int_equal(s.nout, i);
		assert_int_equal(stat_store(&s, "push"), 2);
		assert_int_equal(json_integer_value(json_object_get(json_object_get(
			json_object_get(s.st, "store"), "discarded"), "restart")), 1);
		assert_int_equal(stat_store(&s, "discarded_bytes"), 2 * SEG);
		scen_close(&s);
	}
	free(a);
	free(b);
	free(x);
	free(got);
}

/*
 * Hostile input cannot make the store grow past its budgets: first segments announcing
 * 64 MiB values from many senders, and a flood of new keys. Memory stays bounded (the
 * process's peak RSS), refusals are counted by budget, and valid traffic is answered.
 */
static void
test_flood_budgets(void **state)
{
	float v[4] = { 1, 2, 3, 4 }, big[SEG / 4], got[4];
	struct psb_addr src, dst;
	struct psb_hdr h;
	uint8_t buf[9100];
	struct psb_frame f;
	static struct scen s;
	unsigned int i, k, acks = 0, refused = 0, nacks = 0, pull_at = 0;
	json_t *st;

	(void)state;
	memset(big, 0, sizeof(big));
	scen_open(&s);
	s.extra[0] = "--store-max-keys";
	s.extra[1] = "1000";
	s.extra[2] = "--max-value";
	s.extra[3] = "64MiB";
	worker_addr(&src, 0);
	psb_addr_of(&dst);
	/* 24 first segments of 64 MiB values, from ranks 1..24 */
	for (i = 0; i < 24; i++) {
		h = tf_hdr(PSB_MSG_PUSH, 0, (uint16_t)(1 + i), 1, 0, 1000000 + i);
		tf_seg(&h, 64u << 20, 0, SEG);
		put_frame(&s, buf, psb_frame_build(buf, &src, &dst, &h, big, SEG));
	}
	/* 2000 new keys from rank 0: the first 1000 fit */
	for (i = 0; i < 2000; i++)
		put_request(&s, 0, PSB_MSG_PUSH, 1 + i, 1 + i, 0, v, 4, NULL, 0);
	/* valid traffic still answered: a push and a pull of a key that made it */
	put_request(&s, 0, PSB_MSG_PULL, 1, 5000, 0, NULL, 0, NULL, 0);
	scen_run(&s, "--async", 32);

	for (i = 0; i < s.nout; i++) {
		assert_int_equal(psb_frame_parse(s.outf[i].data, s.outf[i].len, &any_cfg, &f),
			PSB_FRAME_PSB);
		if (f.hdr.type == PSB_MSG_PUSH_ACK) {
			acks++;
		} else if (f.hdr.type == PSB_MSG_ERROR) {
			assert_int_equal(f.hdr.status, PSB_ST_NO_MEM);
			assert_int_equal(f.hdr.aux, 1);		/* store.max_keys */
			refused++;
		} else if (f.hdr.type == PSB_MSG_REPAIR_RESP) {
			/* a staged 64 MiB push gone quiet: its missing tail named, once */
			assert_true(f.hdr.sender >= 1 && f.hdr.sender <= 24);
			nacks++;
		} else if (f.hdr.type == PSB_MSG_PULL_RESP) {
			pull_at = i;
		}
	}
	assert_int_equal(acks, 1000);
	assert_int_equal(refused, 1000);
	assert_true(nacks <= 24);
	assert_int_equal(stat_store(&s, "tail_nacks"), nacks);
	out_value(&s, &pull_at, 0, PSB_MSG_PULL_RESP, 1, 5000, got, 4);
	for (k = 0; k < 4; k++)
		assert_true(got[k] == v[k]);
	st = json_object_get(s.st, "store");
	assert_int_equal(stat_store(&s, "keys"), 1000);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(st, "refused"),
		"max_keys")), 1000);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(st, "limits"),
		"max_keys")), 1000);
	/* what the 64 MiB announcements cost: their budget, not their memory */
	assert_int_equal(stat_store(&s, "staged"), 24);
	assert_true(json_integer_value(json_object_get(json_object_get(s.st, "process"),
		"rss_max_bytes")) < (512ll << 20));
	scen_close(&s);
}


/* After every test, pass or fail: the scenario's files and psb's runtime directory go. */
static int
teardown(void **state)
{
	char cmd[128];

	(void)state;
	if (cur != NULL)
		scen_close(cur);
	snprintf(cmd, sizeof(cmd), "rm -rf /var/run/dpdk/psbt-%d", (int)getpid());
	return system(cmd) == 0 ? 0 : -1;
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_sync_sum, teardown),
		cmocka_unit_test_teardown(test_async_pushpull, teardown),
		cmocka_unit_test_teardown(test_reorder_dup_retry, teardown),
		cmocka_unit_test_teardown(test_error_replies, teardown),
		cmocka_unit_test_teardown(test_arp_icmp, teardown),
		cmocka_unit_test_teardown(test_malformed_dropped, teardown),
		cmocka_unit_test_teardown(test_batch, teardown),
		cmocka_unit_test_teardown(test_partial_push_restart, teardown),
		cmocka_unit_test_teardown(test_flood_budgets, teardown),
		cmocka_unit_test_teardown(test_bye_spoofed, teardown),
		cmocka_unit_test_teardown(test_bye_peer, teardown),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: %s PATH-TO-psb\n", argv[0]);
		return 2;
	}
	psb_bin = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
