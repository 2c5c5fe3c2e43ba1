/*
 * pcap replay of psb as a staleness worker (the receiver role): a trainer's packets made by
 * the real sender (psb_mc_send) with chosen losses, the trainer's ACKs, junk and forgeries
 * go in through a pcap port; what psb sent (ARP, joins, NACKs, posts) comes out in a pcap,
 * and its results say what it held and counted.
 *
 *   nack            a version with two segments lost and nothing more: psb NACKs exactly
 *                   them, to the trainer, and the run fails holding nothing, saying so
 *   parity          the same losses and the parity symbols the sender made for psb's NACK:
 *                   the version decoded, every byte checked, the final post holds it
 *   retransmit      the same with parity off: the segments sent again
 *   corrupt         a segment sent again with a byte changed: the version fails its CRC and
 *                   is not held
 *   late_join       the first version heard mid-stream (no NACKs for it) and the next whole
 *   superseded      a version with a loss, then a newer one whole: the older one given up
 *   hostile         junk to the group and to psb, another session's DATA, ACKs from another
 *                   address, truncated packets: counted, and the run is unchanged
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <pcap/pcap.h>

#include "psb_mc_recv.h"
#include "psb_mc_send.h"
#include "psb_stale.h"
#include "psb_testframe.h"

#define PSB_IP		0xc6120001u	/* 198.18.0.1: psb, worker 0 */
#define TR_IP		0xc6120009u	/* 198.18.0.9: the trainer */
#define OTHER_IP	0xc6120007u	/* 198.18.0.7: someone else */
#define GROUP_IP	0xef120005u	/* 239.18.0.5 */
#define GPORT		7300		/* the group's, and psb's own */
#define TPORT		7301		/* the trainer's unicast */
#define TGPORT		7302		/* the trainer's sending socket */
#define SESSION		0x5e55a001u
#define SEG		1400
#define MS		1000000ull
#define MAX_PKTS	1024
#define MAX_OUT		4096

static const char *psb_bin;

struct pkt {
	size_t len;
	uint8_t data[SEG + 64];
};

/* What the test's sender and shadow receiver made. */
static struct {
	struct pkt pkts[MAX_PKTS];
	unsigned int n;
	uint8_t *vers[4];		/* the versions published: the sender repairs from them */
	unsigned int nvers;
	uint8_t nack[2048];
	size_t nack_len;
} g;

struct scen {
	char dir[64], in[128], out[128], doc[128], res[160];
	struct tf_pcap cap;
	uint32_t usec;
	struct pkt *outp;
	unsigned int nout;
	json_t *result;
	int status;
};

static struct scen *cur;

static const struct psb_addr psb_a = TF_ADDR(0x01, PSB_IP, GPORT);
static const struct psb_addr tr_uni = TF_ADDR(0x09, TR_IP, TPORT);
static const struct psb_addr tr_grp = TF_ADDR(0x09, TR_IP, TGPORT);
static const struct psb_addr other = TF_ADDR(0x07, OTHER_IP, TPORT);

static struct psb_addr
group_addr(void)
{
	struct psb_addr a = { .ip = GROUP_IP, .port = GPORT,
		.mac = { 0x01, 0x00, 0x5e, 0x12, 0x00, 0x05 } };

	return a;
}

static void
put_udp(struct scen *s, const struct psb_addr *src, const struct psb_addr *dst,
		const uint8_t *dgram, size_t n)
{
	uint8_t frame[PSB_UDP_FRAME_HLEN + SEG + 128];

	assert_true(n <= SEG + 128);
	psb_udp_write_headers(frame, src, dst, (uint16_t)n);
	memcpy(frame + PSB_UDP_FRAME_HLEN, dgram, n);
	tf_pcap_put(&s->cap, frame, PSB_UDP_FRAME_HLEN + n, 0, ++s->usec);
}

static void
put_group(struct scen *s, const uint8_t *dgram, size_t n)
{
	struct psb_addr g_ = group_addr();

	put_udp(s, &tr_grp, &g_, dgram, n);
}

/* The trainer's ACK to worker 0: flags (PSB_STALE_ACK_*), held its newest version. */
static void
put_ack(struct scen *s, const struct psb_addr *from, uint32_t session, uint32_t held,
		uint64_t flags)
{
	struct psb_stale_msg a = { .type = PSB_STALE_ACK, .session = session, .worker = 0,
		.held = held, .window = flags };
	uint8_t b[PSB_STALE_LEN];

	psb_stale_write(b, &a);
	put_udp(s, from, &psb_a, b, sizeof(b));
}

/* ---------------------------------------------------- the trainer's side, made here ---- */

static int
emit(void *arg, const uint8_t *hdr, unsigned int hlen, const uint8_t *payload, unsigned int plen)
{
	struct pkt *p;

	(void)arg;
	assert_true(g.n < MAX_PKTS);
	p = &g.pkts[g.n++];
	memcpy(p->data, hdr, hlen);
	if (plen != 0)
		memcpy(p->data + hlen, payload, plen);
	p->len = hlen + plen;
	return 0;
}

static void
release(void *arg, uint32_t vid, const void *data)
{
	(void)arg;
	(void)vid;
	(void)data;
}

static void
shadow_nack(void *arg, const uint8_t *buf, size_t len)
{
	(void)arg;
	assert_true(len <= sizeof(g.nack));
	memcpy(g.nack, buf, len);
	g.nack_len = len;
}

static struct psb_mc_send *
sender(uint16_t parity)
{
	struct psb_mc_send_cfg cfg = { .session = SESSION, .seg_size = SEG, .group = 64,
		.parity = parity, .heartbeat_ns = MS, .nack_hold_ns = 0 };
	struct psb_mc_send *snd;

	g.n = 0;
	assert_int_equal(psb_mc_send_create(&cfg, emit, release, NULL, &snd), 0);
	return snd;
}

/*
 * Version vid of len bytes (psb_stale_fill's), published and sent whole: its packets in g.
 * Its bytes stay until sender_free: the sender repairs from them.
 */
static void
publish(struct psb_mc_send *snd, uint32_t vid, uint64_t len, uint64_t *now)
{
	uint8_t *v = malloc(len);
	uint64_t beats;

	assert_non_null(v);
	assert_true(g.nvers < 4);
	g.vers[g.nvers++] = v;
	psb_stale_fill(v, len, vid);
	assert_int_equal(psb_mc_send_publish(snd, vid, v, len, psb_mc_crc(0, v, len), *now), 0);
	/* until it is sent whole, then a heartbeat saying so */
	while (psb_mc_send_busy(snd)) {
		psb_mc_send_poll(snd, *now, 256);
		*now += MS / 4;
	}
	beats = psb_mc_send_stats(snd)->heartbeats;
	while (psb_mc_send_stats(snd)->heartbeats == beats) {
		psb_mc_send_poll(snd, *now, 256);
		*now += MS / 4;
	}
}

static void
sender_free(struct psb_mc_send *snd)
{
	psb_mc_send_free(snd);
	while (g.nvers > 0)
		free(g.vers[--g.nvers]);
}

static int
pkt_type(const struct pkt *p, uint32_t *vid, uint32_t *seg)
{
	struct psb_mc_pkt pk;
	int t = psb_mc_parse(p->data, p->len, &pk);

	if (vid != NULL)
		*vid = pk.ver.vid;
	if (seg != NULL)
		*seg = pk.a;
	return t;
}

/* Packets g.pkts[from, to) into the capture, but DATA segments in drop (a bitmap). */
static void
put_pkts(struct scen *s, unsigned int from, unsigned int to, uint64_t drop)
{
	unsigned int i;

	for (i = from; i < to; i++) {
		uint32_t seg;

		if (pkt_type(&g.pkts[i], NULL, &seg) == PSB_MC_DATA && seg < 64 &&
		    ((drop >> seg) & 1))
			continue;
		put_group(s, g.pkts[i].data, g.pkts[i].len);
	}
}

/*
 * A receiver here with the same losses: its NACK, fed to the sender, makes the repairs
 * psb would get for its own (appended to g.pkts after the first 'made' packets).
 */
static void
repairs_for(struct psb_mc_send *snd, uint32_t vid, uint64_t len, uint64_t drop, uint64_t *now)
{
	struct psb_mc_recv_cfg rc = { .id = 1, .budget = 4 * len + (1 << 20), .max_version = 2 * len,
		.backoff_ns = MS, .retry_ns = 10 * MS, .reorder = 64, .vid_window = 1024,
		.session_idle_ns = 1000 * MS, .seed = 3 };
	struct psb_mc_recv *r;
	unsigned int i, made = g.n;
	uint64_t t;

	assert_int_equal(psb_mc_recv_create(&rc, shadow_nack, NULL, &r), 0);
	for (i = 0; i < made; i++) {
		uint32_t v, seg;

		if (pkt_type(&g.pkts[i], &v, &seg) == PSB_MC_DATA && v == vid && seg < 64 &&
		    ((drop >> seg) & 1))
			continue;
		psb_mc_recv_input(r, g.pkts[i].data, g.pkts[i].len, *now);
	}
	g.nack_len = 0;
	for (t = 0; t < 20 && g.nack_len == 0; t++) {
		*now += MS;
		psb_mc_recv_poll(r, *now);
	}
	assert_true(g.nack_len > 0);
	psb_mc_send_input(snd, g.nack, g.nack_len, 1, *now);
	for (t = 0; t < 40; t++) {
		*now += MS / 4;
		psb_mc_send_poll(snd, *now, 256);
	}
	assert_true(g.n > made);
	psb_mc_recv_free(r);
}

/* --------------------------------------------------------------------- psb's side ---- */

static void
scen_open(struct scen *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->dir, sizeof(s->dir), "/tmp/psb-mcr-XXXXXX");
	assert_non_null(mkdtemp(s->dir));
	snprintf(s->in, sizeof(s->in), "%s/in.pcap", s->dir);
	snprintf(s->out, sizeof(s->out), "%s/out.pcap", s->dir);
	snprintf(s->doc, sizeof(s->doc), "%s/w.json", s->dir);
	snprintf(s->res, sizeof(s->res), "%s/res/mcr/result.json", s->dir);
	assert_int_equal(tf_pcap_open(&s->cap, s->in), 0);
	s->outp = calloc(MAX_OUT, sizeof(*s->outp));
	assert_non_null(s->outp);
	cur = s;
}

static void
scen_close(struct scen *s)
{
	char cmd[128];

	cur = NULL;
	free(s->outp);
	s->outp = NULL;
	if (s->result != NULL)
		json_decref(s->result);
	s->result = NULL;
	if (s->cap.fp != NULL)
		tf_pcap_close(&s->cap);
	if (getenv("PSB_TEST_KEEP") != NULL) {
		fprintf(stderr, "kept %s\n", s->dir);
		return;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", s->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", s->dir);
}

static int
teardown(void **state)
{
	(void)state;
	if (cur != NULL)
		scen_close(cur);
	return 0;
}

/* psb as worker 0 of versions of len bytes over the capture; its output and results read. */
static void
scen_run(struct scen *s, uint64_t len)
{
	char prefix[64], errbuf[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *ph;
	const u_char *data;
	json_error_t jerr;
	FILE *f;
	pcap_t *p;

	assert_int_equal(tf_pcap_close(&s->cap), 0);
	snprintf(prefix, sizeof(prefix), "psbmr-%d", (int)getpid());
	f = fopen(s->doc, "w");
	assert_non_null(f);
	fprintf(f, "{\"name\": \"mcr\", \"kind\": \"staleness\", \"node\": {\"role\": \"worker\", "
		"\"ip\": \"198.18.0.1\", \"mac\": \"02:00:00:00:00:01\", \"rank\": 0, \"ports\": "
		"[\"pcap:%s:%s\"], \"mtu\": 1500, \"huge\": \"no\", \"lcores\": \"0\", "
		"\"mbufs\": 8192, \"file_prefix\": \"%s\"}, \"staleness\": {\"mode\": "
		"\"multicast\", \"trainer\": \"198.18.0.9\", \"port\": %d, \"group\": "
		"\"239.18.0.5\", \"group_port\": %d, \"data_size\": %.6f, \"workers\": 1, "
		"\"verify\": true, \"join_timeout\": \"5s\", \"end_timeout\": \"300ms\", "
		"\"post_frequency\": \"100ms\", \"step_frequency\": \"1ms\"}, \"output\": "
		"{\"dir\": \"res\"}}\n", s->in, s->out, prefix, TPORT, GPORT, len / 1e6);
	assert_int_equal(fclose(f), 0);
	/* bounded: the run ends end_timeout after the trainer's END, or at join_timeout */
	if (tf_run_psb(psb_bin, s->doc, s->dir, 30, &s->status) != 0)
		fail_msg("psb did not exit within 30 s");
	assert_true(WIFEXITED(s->status));
	p = pcap_open_offline(s->out, errbuf);
	if (p == NULL)
		fail_msg("no output pcap: %s", errbuf);
	while (pcap_next_ex(p, &ph, &data) == 1) {
		assert_true(s->nout < MAX_OUT);
		if (ph->caplen > sizeof(s->outp[0].data))
			continue;
		memcpy(s->outp[s->nout].data, data, ph->caplen);
		s->outp[s->nout++].len = ph->caplen;
	}
	pcap_close(p);
	s->result = json_load_file(s->res, 0, &jerr);
	if (s->result == NULL)
		fail_msg("results %s: %s", s->res, jerr.text);
}

static const char *
state_of(struct scen *s)
{
	return json_string_value(json_object_get(s->result, "state"));
}

/* A figure of the run's row (experiment.staleness). */
static json_int_t
fig(struct scen *s, const char *name)
{
	json_t *row = json_array_get(json_object_get(s->result, "rows"), 0);
	json_t *v = json_object_get(row, name);

	if (v == NULL)
		fail_msg("no figure %s in the results", name);
	return json_is_true(v) ? 1 : json_integer_value(v);
}

/* Packets the receiver's parser refused, every reason summed. */
static int64_t
bad(struct scen *s)
{
	json_t *row = json_array_get(json_object_get(s->result, "rows"), 0);
	json_t *b = json_object_get(row, "bad"), *v;
	const char *k;
	int64_t n = 0;

	if (!json_is_object(b))
		fail_msg("no figures bad in the results");
	json_object_foreach(b, k, v)
		n += json_integer_value(v);
	return n;
}

/* What psb sent the trainer. */
struct sent {
	unsigned int nacks;		/* NACKs of the version asked about */
	uint64_t missing;		/* the data segments of its group 0 they named, OR-ed */
	unsigned int posts;		/* POSTs with samples */
	uint32_t held;			/* the last one's */
};

/*
 * psb's datagrams to the trainer, each checked: from psb's address and port to the
 * trainer's unicast port, at the MAC the trainer's ACK came from; NACKs of version vid and
 * posts counted in *o.
 */
static void
out_scan(struct scen *s, uint32_t vid, struct sent *o)
{
	struct psb_parse_cfg cfg = { .udp_lo = 1, .udp_hi = 65535 };
	unsigned int i, k;

	memset(o, 0, sizeof(*o));
	for (i = 0; i < s->nout; i++) {
		struct psb_frame f;
		struct psb_mc_pkt pk;
		struct psb_stale_msg m;
		int kind = psb_frame_parse(s->outp[i].data, s->outp[i].len, &cfg, &f);

		if (kind != PSB_FRAME_UDP)
			continue;	/* ARP for the trainer */
		assert_int_equal(f.src.ip, PSB_IP);
		assert_int_equal(f.src.port, GPORT);
		assert_int_equal(f.dst.ip, TR_IP);
		assert_int_equal(f.dst.port, TPORT);
		assert_memory_equal(f.dst.mac, tr_uni.mac, 6);
		assert_memory_equal(f.src.mac, psb_a.mac, 6);
		if (psb_mc_parse(f.payload, f.payload_len, &pk) == PSB_MC_NACK) {
			assert_int_equal(pk.session, SESSION);
			assert_int_equal(pk.a, 0);		/* the receiver: worker 0 */
			if (pk.ver.vid != vid)
				continue;
			o->nacks++;
			for (k = 0; k < pk.b; k++) {
				struct psb_mc_nack_entry e;

				psb_mc_nack_entry(&pk, k, &e);
				if (e.group == 0)
					o->missing |= e.missing;
			}
			continue;
		}
		assert_int_equal(psb_stale_parse(f.payload, f.payload_len, &m), PSB_STALE_POST);
		assert_int_equal(m.worker, 0);
		if (m.samples != 0) {
			o->posts++;
			o->held = m.held;
		}
	}
}

/*
 * The rest of the sender's packets from 'from' on, the trainer's END at version final, psb
 * run over it all; what it sent about version vid in *o.
 */
static void
scen_end(struct scen *s, unsigned int from, uint32_t final, uint64_t len, uint32_t vid,
		struct sent *o)
{
	put_pkts(s, from, g.n, 0);
	put_ack(s, &tr_uni, SESSION, final, PSB_STALE_ACK_END);
	scen_run(s, len);
	out_scan(s, vid, o);
}

#define LEN1	(20 * SEG + 300)	/* 21 segments: one group */
#define DROP	((UINT64_C(1) << 3) | (UINT64_C(1) << 17))

/* Lost segments 3 and 17, nothing more: NACKed, exactly them; nothing held, and said. */
static void
test_nack(void **state)
{
	static struct scen s;
	struct psb_mc_send *snd = sender(8);
	uint64_t now = MS;
	struct sent o;

	(void)state;
	scen_open(&s);
	publish(snd, 1, LEN1, &now);
	put_ack(&s, &tr_uni, SESSION, 0, 0);
	put_pkts(&s, 0, g.n, DROP);
	scen_end(&s, g.n, 1, LEN1, 1, &o);
	assert_true(o.nacks >= 1);
	assert_int_equal(o.missing, DROP);
	assert_int_equal(o.posts, 0);
	assert_string_equal(state_of(&s), "failed");
	assert_non_null(strstr(json_string_value(json_object_get(s.result, "error")),
			       "holds version 0; the trainer ended at 1"));
	assert_int_equal(WEXITSTATUS(s.status), 1);
	assert_int_equal(fig(&s, "held"), 0);
	assert_int_equal(fig(&s, "completed"), 0);
	assert_true(fig(&s, "nacks") >= 1);
	assert_int_equal(fig(&s, "data_pkts"), 19);
	sender_free(snd);
	scen_close(&s);
}

/* The same losses with the repairs the sender makes for them: held, checked, posted. */
static void
repaired(uint16_t parity, int decoded)
{
	static struct scen s;
	struct psb_mc_send *snd = sender(parity);
	uint64_t now = MS;
	unsigned int made;
	struct sent o;

	scen_open(&s);
	publish(snd, 1, LEN1, &now);
	made = g.n;
	repairs_for(snd, 1, LEN1, DROP, &now);
	put_ack(&s, &tr_uni, SESSION, 0, 0);
	put_pkts(&s, 0, made, DROP);
	scen_end(&s, made, 1, LEN1, 1, &o);
	assert_string_equal(state_of(&s), "done");
	assert_int_equal(WEXITSTATUS(s.status), 0);
	assert_int_equal(fig(&s, "held"), 1);
	assert_int_equal(fig(&s, "completed"), 1);
	assert_int_equal(fig(&s, "verify_fail"), 0);
	assert_int_equal(fig(&s, "crc_fail"), 0);
	assert_int_equal(fig(&s, "decoded_groups"), decoded);
	assert_int_equal(fig(&s, "recovered_segs"), decoded ? 2 : 0);
	/* its last post says it holds the final version */
	assert_true(o.posts >= 1);
	assert_int_equal(o.held, 1);
	sender_free(snd);
	scen_close(&s);
}

static void
test_parity(void **state)
{
	(void)state;
	repaired(8, 1);
}

static void
test_retransmit(void **state)
{
	(void)state;
	repaired(0, 0);
}

/* A resent segment whose bytes were changed on the way: the version fails its CRC, not held. */
static void
test_corrupt(void **state)
{
	static struct scen s;
	struct psb_mc_send *snd = sender(0);
	uint64_t now = MS;
	unsigned int made;
	struct sent o;

	(void)state;
	scen_open(&s);
	publish(snd, 1, LEN1, &now);
	made = g.n;
	g.vers[0][3 * SEG + 10] ^= 0x40;	/* what the sender resends of segment 3 */
	repairs_for(snd, 1, LEN1, DROP, &now);
	put_ack(&s, &tr_uni, SESSION, 0, 0);
	put_pkts(&s, 0, made, DROP);
	scen_end(&s, made, 1, LEN1, 1, &o);
	assert_string_equal(state_of(&s), "failed");
	assert_int_equal(fig(&s, "crc_fail"), 1);
	assert_int_equal(fig(&s, "completed"), 0);
	assert_int_equal(fig(&s, "held"), 0);
	sender_free(snd);
	scen_close(&s);
}

#define LEN2	(100 * SEG)		/* 100 segments: two groups */

/* Joined while version 1 streamed (first heard at segment 80): no NACK for it; 2 held. */
static void
test_late_join(void **state)
{
	static struct scen s;
	struct psb_mc_send *snd = sender(8);
	uint64_t now = MS;
	unsigned int i, first2;
	struct sent o;

	(void)state;
	scen_open(&s);
	publish(snd, 1, LEN2, &now);
	first2 = g.n;
	publish(snd, 2, LEN2, &now);
	put_ack(&s, &tr_uni, SESSION, 0, 0);
	for (i = 0; i < first2; i++) {
		uint32_t seg;

		/* of version 1, what was sent from segment 80 on, one of them lost */
		int t = pkt_type(&g.pkts[i], NULL, &seg);

		if ((t == PSB_MC_DATA && (seg < 80 || seg == 90)) ||
		    (t == PSB_MC_HEARTBEAT && seg <= 80))
			continue;
		put_group(&s, g.pkts[i].data, g.pkts[i].len);
	}
	scen_end(&s, first2, 2, LEN2, 1, &o);
	assert_string_equal(state_of(&s), "done");
	assert_int_equal(o.nacks, 0);
	assert_int_equal(fig(&s, "late_joins"), 1);
	assert_int_equal(fig(&s, "held"), 2);
	assert_int_equal(fig(&s, "completed"), 1);
	assert_int_equal(o.held, 2);
	sender_free(snd);
	scen_close(&s);
}

/* Version 1 with a loss, then 2 whole: 1 given up (superseded), 2 held, no NACK after it. */
static void
test_superseded(void **state)
{
	static struct scen s;
	struct psb_mc_send *snd = sender(8);
	uint64_t now = MS;
	unsigned int first2, i, data1 = 0;
	struct sent o;

	(void)state;
	scen_open(&s);
	publish(snd, 1, LEN1, &now);
	/* version 1's data alone, segment 5 lost: no heartbeat says it ended */
	put_ack(&s, &tr_uni, SESSION, 0, 0);
	first2 = g.n;
	for (i = 0; i < first2; i++) {
		uint32_t seg;

		if (pkt_type(&g.pkts[i], NULL, &seg) != PSB_MC_DATA || seg == 5)
			continue;
		put_group(&s, g.pkts[i].data, g.pkts[i].len);
		data1++;
	}
	publish(snd, 2, LEN1, &now);
	scen_end(&s, first2, 2, LEN1, 1, &o);
	assert_string_equal(state_of(&s), "done");
	assert_int_equal(data1, 20);
	assert_int_equal(fig(&s, "superseded"), 1);
	assert_int_equal(fig(&s, "completed"), 1);
	assert_int_equal(fig(&s, "held"), 2);
	assert_int_equal(o.nacks, 0);	/* 2 came before any NACK of 1 was due */
	assert_int_equal(o.held, 2);
	sender_free(snd);
	scen_close(&s);
}

/* Junk and forgeries around a clean version: counted, and nothing else changes. */
static void
test_hostile(void **state)
{
	static struct scen s;
	struct psb_mc_send *snd = sender(8);
	struct psb_addr g_ = group_addr(), me = psb_a;
	uint64_t now = MS;
	unsigned int i;
	uint8_t junk[200], forged[SEG + 64];
	uint32_t rnd = 99;
	struct sent o;
	struct psb_mc_ver v = { .vid = 7, .nseg = 21, .total_len = LEN1, .crc = 1, .group = 64,
		.seg_size = SEG };

	(void)state;
	scen_open(&s);
	publish(snd, 1, LEN1, &now);
	/* before the trainer's first ACK: its packets are not used yet */
	put_group(&s, g.pkts[0].data, g.pkts[0].len);
	/* an ACK from elsewhere ending the run, and one for another worker */
	put_ack(&s, &other, SESSION, 1, PSB_STALE_ACK_END);
	put_ack(&s, &tr_uni, SESSION, 0, 0);
	for (i = 0; i < 40; i++) {
		size_t n = 1 + tf_xorshift32(&rnd) % sizeof(junk), k;

		for (k = 0; k < n; k++)
			junk[k] = (uint8_t)tf_xorshift32(&rnd);
		put_udp(&s, &tr_grp, &g_, junk, n);
		put_udp(&s, &other, &me, junk, n);
		/* well formed, of another session: to the group and to psb */
		psb_mc_write_data(forged, SESSION ^ 1, &v, i % 21, SEG);
		put_udp(&s, &tr_grp, &g_, forged, PSB_MC_HLEN + SEG);
		put_udp(&s, &tr_uni, &me, forged, PSB_MC_HLEN + SEG);
		/* truncated */
		put_udp(&s, &tr_grp, &g_, g.pkts[1].data, 20);
	}
	put_pkts(&s, 0, g.n, 0);
	put_ack(&s, &tr_uni, SESSION + 1, 1, PSB_STALE_ACK_END);
	scen_end(&s, g.n, 1, LEN1, 1, &o);
	assert_string_equal(state_of(&s), "done");
	assert_int_equal(fig(&s, "held"), 1);
	assert_int_equal(fig(&s, "final_version"), 1);
	assert_int_equal(fig(&s, "completed"), 1);
	assert_int_equal(fig(&s, "early"), 1);
	/* 40 x (junk from elsewhere, forged DATA to psb) and the ACKs of the wrong address
	 * and session: stray; the group's junk, truncated and forged DATA: the receiver's */
	assert_true(fig(&s, "stray") >= 80 + 2);
	assert_true(bad(&s) + fig(&s, "stray") >= 80 + 80 + 2);
	assert_int_equal(fig(&s, "crc_fail"), 0);
	assert_int_equal(o.nacks, 0);
	assert_int_equal(o.held, 1);
	sender_free(snd);
	scen_close(&s);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_nack, teardown),
		cmocka_unit_test_teardown(test_parity, teardown),
		cmocka_unit_test_teardown(test_retransmit, teardown),
		cmocka_unit_test_teardown(test_corrupt, teardown),
		cmocka_unit_test_teardown(test_late_join, teardown),
		cmocka_unit_test_teardown(test_superseded, teardown),
		cmocka_unit_test_teardown(test_hostile, teardown),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: %s PATH/psb\n", argv[0]);
		return 2;
	}
	psb_bin = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
