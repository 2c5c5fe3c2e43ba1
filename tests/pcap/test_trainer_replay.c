/*
 * pcap replay of psb as the staleness experiment's trainer (the trainer role): two workers'
 * joins, junk and forgeries go in through a pcap port; what psb sent comes out in a pcap and
 * is checked frame by frame.
 *
 *   - every version it published is in the capture whole, to the group's MAC, address and
 *     port from the trainer's, each segment where the header says, the bytes those psb-stale
 *     makes for that version and the CRC32C the packets carry;
 *   - its ACKs go to each worker's MAC, address and port, with the run's session; the first
 *     says the others are awaited, the last ones say the run ended at the final version;
 *   - junk, a truncated message, joins with the wrong key or for a worker id past the run,
 *     another session's NACK from a worker and from another host: counted (malformed,
 *     refused, nack_forged, stray_nacks), the run unchanged;
 *   - the workers never say they hold the final version: the run fails end_timeout after
 *     its last push, naming both with the version they hold, psb exits 1, and its results
 *     have a row per worker (staleness.csv its header alone: no post came).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>

#include <cmocka.h>
#include <jansson.h>
#include <pcap/pcap.h>

#include "psb_mc_proto.h"
#include "psb_stale.h"
#include "psb_testframe.h"

#define TR_IP		0xc6120009u	/* 198.18.0.9: psb, the trainer */
#define W0_IP		0xc6120001u	/* 198.18.0.1, .2: the workers */
#define W1_IP		0xc6120002u
#define OTHER_IP	0xc6120007u	/* 198.18.0.7: someone else */
#define GROUP_IP	0xef120005u	/* 239.18.0.5 */
#define GPORT		7300
#define TPORT		7301
#define WPORT		7302
#define KEY		4242
#define LEN		50000		/* bytes a version: 35 segments of 1432 B */
#define VERSIONS	3
#define MAX_OUT		4096
#define FRAME_MAX	1600

static const char *psb_bin;

struct frame {
	size_t len;
	uint8_t data[FRAME_MAX];
};

static struct {
	char dir[64], in[128], out[128], doc[128], res[160];
	struct tf_pcap cap;
	uint32_t usec;
	struct frame *outp;
	unsigned int nout;
	json_t *result;
	int status;
} S;

static const struct psb_addr tr = TF_ADDR(0x09, TR_IP, TPORT);
static const struct psb_addr w0 = TF_ADDR(0x01, W0_IP, WPORT);
static const struct psb_addr w1 = TF_ADDR(0x02, W1_IP, WPORT);
static const struct psb_addr other = TF_ADDR(0x07, OTHER_IP, WPORT);

static void
put(const struct psb_addr *src, const void *dgram, size_t n)
{
	uint8_t frame[PSB_UDP_FRAME_HLEN + 256];

	assert_true(n <= 256);
	psb_udp_write_headers(frame, src, &tr, (uint16_t)n);
	memcpy(frame + PSB_UDP_FRAME_HLEN, dgram, n);
	tf_pcap_put(&S.cap, frame, PSB_UDP_FRAME_HLEN + n, 0, ++S.usec);
}

static void
put_join(const struct psb_addr *src, uint32_t worker, uint64_t key)
{
	struct psb_stale_msg m = { .type = PSB_STALE_POST, .worker = worker, .sum = key };
	uint8_t b[PSB_STALE_LEN];

	psb_stale_write(b, &m);
	put(src, b, sizeof(b));
}

/* psb as the trainer over the capture; its output and results read. */
static void
run_psb(void)
{
	char prefix[64], errbuf[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *ph;
	const u_char *data;
	json_error_t jerr;
	FILE *f;
	pcap_t *p;

	assert_int_equal(tf_pcap_close(&S.cap), 0);
	snprintf(prefix, sizeof(prefix), "psbtr-%d", (int)getpid());
	f = fopen(S.doc, "w");
	assert_non_null(f);
	fprintf(f, "{\"name\": \"trr\", \"kind\": \"staleness\", \"node\": {\"role\": \"trainer\", "
		"\"ip\": \"198.18.0.9\", \"mac\": \"02:00:00:00:00:09\", \"ports\": "
		"[\"pcap:%s:%s\"], \"mtu\": 1500, \"huge\": \"no\", \"lcores\": \"0\", "
		"\"mbufs\": 16384, \"file_prefix\": \"%s\"}, \"staleness\": {\"mode\": "
		"\"multicast\", \"port\": %d, \"group\": \"239.18.0.5\", \"group_port\": %d, "
		"\"data_size\": %.6f, \"workers\": 2, \"key\": %d, \"push_frequency\": \"20ms\", "
		"\"max_version\": %d, \"join_timeout\": \"5s\", \"end_timeout\": \"300ms\", "
		"\"post_frequency\": \"100ms\", \"step_frequency\": \"1ms\"}, \"output\": "
		"{\"dir\": \"res\"}}\n", S.in, S.out, prefix, TPORT, GPORT, LEN / 1e6, KEY,
		VERSIONS);
	assert_int_equal(fclose(f), 0);
	/* bounded: the run ends end_timeout after its last push */
	if (tf_run_psb(psb_bin, S.doc, S.dir, 30, &S.status) != 0)
		fail_msg("psb did not exit within 30 s");
	assert_true(WIFEXITED(S.status));
	p = pcap_open_offline(S.out, errbuf);
	if (p == NULL)
		fail_msg("no output pcap: %s", errbuf);
	while (pcap_next_ex(p, &ph, &data) == 1) {
		assert_true(S.nout < MAX_OUT);
		assert_true(ph->caplen <= FRAME_MAX);
		memcpy(S.outp[S.nout].data, data, ph->caplen);
		S.outp[S.nout++].len = ph->caplen;
	}
	pcap_close(p);
	S.result = json_load_file(S.res, 0, &jerr);
	if (S.result == NULL)
		fail_msg("results %s: %s", S.res, jerr.text);
}

static int
setup(void **state)
{
	(void)state;
	memset(&S, 0, sizeof(S));
	snprintf(S.dir, sizeof(S.dir), "/tmp/psb-trr-XXXXXX");
	assert_non_null(mkdtemp(S.dir));
	snprintf(S.in, sizeof(S.in), "%s/in.pcap", S.dir);
	snprintf(S.out, sizeof(S.out), "%s/out.pcap", S.dir);
	snprintf(S.doc, sizeof(S.doc), "%s/t.json", S.dir);
	snprintf(S.res, sizeof(S.res), "%s/res/trr/result.json", S.dir);
	assert_int_equal(tf_pcap_open(&S.cap, S.in), 0);
	S.outp = calloc(MAX_OUT, sizeof(*S.outp));
	assert_non_null(S.outp);
	return 0;
}

static int
teardown(void **state)
{
	char cmd[128];

	(void)state;
	free(S.outp);
	if (S.result != NULL)
		json_decref(S.result);
	if (S.cap.fp != NULL)
		tf_pcap_close(&S.cap);
	if (getenv("PSB_TEST_KEEP") != NULL) {
		fprintf(stderr, "kept %s\n", S.dir);
		return 0;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", S.dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", S.dir);
	return 0;
}

static json_t *
trainer_fig(const char *name)
{
	json_t *t = json_object_get(json_object_get(json_object_get(S.result, "counters"),
				    "experiment"), "trainer");
	json_t *v = json_object_get(t, name);

	if (v == NULL)
		fail_msg("no figure experiment.trainer.%s in the results", name);
	return v;
}

/* A version as the capture carries it: segments seen, bytes put together. */
struct heard {
	uint8_t *bytes;
	uint8_t seen[64];
	uint32_t nseg, crc;
};

static void
test_trainer_replay(void **state)
{
	struct psb_parse_cfg cfg = { .udp_lo = 1, .udp_hi = 65535, .group = GROUP_IP };
	static const uint8_t group_mac[6] = { 0x01, 0x00, 0x5e, 0x12, 0x00, 0x05 };
	struct heard h[VERSIONS + 1];
	uint32_t session = 0, acks[2] = { 0, 0 }, ends[2] = { 0, 0 }, v, s;
	unsigned int i, waiting = 0, heartbeats = 0;
	uint8_t junk[64], *want;
	json_t *rows;

	(void)state;
	memset(h, 0, sizeof(h));
	/* junk, a truncated message, a join with the wrong key and one for worker 9 of 2 */
	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 37 + 11);
	put(&other, junk, sizeof(junk));
	{
		struct psb_stale_msg m = { .type = PSB_STALE_POST, .worker = 0, .sum = KEY };
		uint8_t b[PSB_STALE_LEN];

		psb_stale_write(b, &m);
		put(&other, b, PSB_STALE_LEN - 5);
	}
	put_join(&other, 0, KEY + 1);
	put_join(&other, 9, KEY);
	put_join(&w0, 0, KEY);
	put_join(&w1, 1, KEY);
	/* another session's NACK for version 1, from a worker and from another host */
	{
		uint8_t nk[PSB_MC_HLEN + PSB_MC_NACK_ENTRY];
		struct psb_mc_ver ver = { .vid = 1, .nseg = 35, .total_len = LEN, .group = 64,
			.seg_size = 1432 };
		struct psb_mc_nack_entry e = { .group = 0, .need = 1, .missing = 1 };
		size_t n = psb_mc_write_nack(nk, PSB_MC_NACK, 0xbad5e55, &ver, 0, &e, 1);

		assert_true(n > 0);
		put(&w0, nk, n);
		put(&other, nk, n);
	}
	run_psb();

	assert_int_equal(WEXITSTATUS(S.status), 1);
	assert_string_equal(json_string_value(json_object_get(S.result, "state")), "failed");
	assert_non_null(strstr(json_string_value(json_object_get(S.result, "error")),
			       "0 (holds 0) 1 (holds 0)"));

	for (i = 0; i < S.nout; i++) {
		struct psb_frame f;
		struct psb_mc_pkt pk;
		struct psb_stale_msg m;
		int kind = psb_frame_parse(S.outp[i].data, S.outp[i].len, &cfg, &f);

		if (kind != PSB_FRAME_UDP)
			continue;	/* ARP */
		assert_int_equal(f.src.ip, TR_IP);
		assert_int_equal(f.src.port, TPORT);
		assert_memory_equal(f.src.mac, tr.mac, 6);
		if (f.dst.ip == GROUP_IP) {
			assert_memory_equal(f.dst.mac, group_mac, 6);
			assert_int_equal(f.dst.port, GPORT);
			kind = psb_mc_parse(f.payload, f.payload_len, &pk);
			assert_true(kind == PSB_MC_DATA || kind == PSB_MC_HEARTBEAT);
			if (session == 0)
				session = pk.session;
			assert_int_equal(pk.session, session);
			if (kind == PSB_MC_HEARTBEAT) {
				heartbeats++;
				continue;
			}
			v = pk.ver.vid;
			assert_true(v >= 1 && v <= VERSIONS);
			assert_int_equal(pk.ver.total_len, LEN);
			assert_int_equal(pk.ver.seg_size, 1500 - 28 - PSB_MC_HLEN);
			if (h[v].bytes == NULL) {
				h[v].bytes = calloc(1, LEN);
				assert_non_null(h[v].bytes);
				h[v].nseg = pk.ver.nseg;
				h[v].crc = pk.ver.crc;
			}
			assert_int_equal(pk.ver.crc, h[v].crc);
			assert_true(pk.a < h[v].nseg && h[v].nseg <= 64);
			memcpy(h[v].bytes + (uint64_t)pk.a * pk.ver.seg_size, pk.payload, pk.len);
			h[v].seen[pk.a] = 1;
			continue;
		}
		/* an ACK, to a worker where it joined from */
		assert_int_equal(psb_stale_parse(f.payload, f.payload_len, &m), PSB_STALE_ACK);
		assert_true(m.worker < 2);
		assert_int_equal(f.dst.ip, m.worker == 0 ? W0_IP : W1_IP);
		assert_int_equal(f.dst.port, WPORT);
		assert_memory_equal(f.dst.mac, m.worker == 0 ? w0.mac : w1.mac, 6);
		acks[m.worker]++;
		waiting += (m.window & PSB_STALE_ACK_WAITING) != 0;
		if (m.window & PSB_STALE_ACK_END) {
			assert_int_equal(m.held, VERSIONS);
			ends[m.worker]++;
		}
		if (session != 0)
			assert_int_equal(m.session, session);
	}
	/* every version whole, as psb-stale makes it, its CRC the packets' */
	want = malloc(LEN);
	assert_non_null(want);
	for (v = 1; v <= VERSIONS; v++) {
		assert_non_null(h[v].bytes);
		for (s = 0; s < h[v].nseg; s++)
			assert_true(h[v].seen[s]);
		psb_stale_fill(want, LEN, v);
		assert_memory_equal(h[v].bytes, want, LEN);
		assert_int_equal(h[v].crc, psb_mc_crc(0, want, LEN));
		free(h[v].bytes);
	}
	free(want);
	assert_true(heartbeats > 0);
	/* worker 0 joined first: told to wait; then both started; END ACKs until the end */
	assert_int_equal(waiting, 1);
	assert_true(acks[0] >= 3 && acks[1] >= 2);
	assert_true(ends[0] >= 2 && ends[1] >= 2);

	assert_int_equal(json_integer_value(trainer_fig("version")), VERSIONS);
	assert_int_equal(json_integer_value(trainer_fig("published")), VERSIONS);
	assert_int_equal(json_integer_value(trainer_fig("sent_whole")), VERSIONS);
	assert_int_equal(json_integer_value(trainer_fig("joined")), 2);
	assert_true(json_integer_value(trainer_fig("malformed")) >= 2);
	assert_true(json_integer_value(trainer_fig("refused")) >= 2);
	assert_int_equal(json_integer_value(trainer_fig("nack_forged")), 1);
	/* only workers may NACK: the other host's was not taken */
	assert_int_equal(json_integer_value(trainer_fig("stray_nacks")), 1);
	/* the time series beside the results: no post, a header alone */
	{
		char path[192], line[256];
		FILE *f;

		snprintf(path, sizeof(path), "%s/res/trr/staleness.csv", S.dir);
		f = fopen(path, "r");
		assert_non_null(f);
		assert_non_null(fgets(line, sizeof(line), f));
		assert_int_equal(strncmp(line, "t_s,worker,held", 15), 0);
		assert_null(fgets(line, sizeof(line), f));
		fclose(f);
		snprintf(path, sizeof(path), "%s/res/trr/staleness.svg", S.dir);
		assert_int_equal(access(path, R_OK), 0);
	}
	rows = json_object_get(S.result, "rows");
	assert_int_equal(json_array_size(rows), 3);
	for (i = 0; i < 2; i++) {
		json_t *r = json_array_get(rows, i);

		assert_int_equal(json_integer_value(json_object_get(r, "worker")), i);
		assert_true(json_is_false(json_object_get(r, "holds_final")));
		assert_string_equal(json_string_value(json_object_get(r, "address")),
				    i == 0 ? "198.18.0.1:7302" : "198.18.0.2:7302");
	}
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_trainer_replay, setup, teardown),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: %s PATH/psb\n", argv[0]);
		return 2;
	}
	psb_bin = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
