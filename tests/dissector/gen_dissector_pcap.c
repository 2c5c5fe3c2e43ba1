/*
 * gen_dissector_pcap OUT.pcap [MC.pcap]: one psb frame of each kind, for testing
 * scripts/psb.lua; MC.pcap: one multicast and staleness-experiment packet of each kind.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "psb_mc_proto.h"
#include "psb_stale.h"
#include "psb_testframe.h"

/*
 * The frames, in order. test_dissector.sh expects exactly these field values;
 * change both together.
 *
 *  #  type           from->to     sender req         round      key                value
 *  1  PUSH           w0->srv      3      3           2          7                  4096 B seg 0:
 *                                                                                  358 x 1.0f
 *  2  PULL           w0->srv      1      42          9          0x1122334455667788 -
 *  3  PUSHPULL       w0->srv      513    4000000000  4294967295 UINT64_MAX         1.5, -2.0
 *  4  PUSH_ACK       srv->w0      3      3           3          7                  -
 *  5  PULL_RESP      srv->w0      1      42          9          0x1122334455667788 .25 .5 .75
 *  6  PUSHPULL_RESP  srv->w0      513    4000000000  0          UINT64_MAX         -0.5, 8.0
 *  7  REGISTER       w0->sched    0      1           0          0                  -
 *  8  REGISTER_ACK   sched->w0    0      1           0          0                  2 servers
 *  9  BARRIER        w0->sched    0      5           1          0                  -
 * 10  BARRIER_ACK    sched->w0    0      5           1          0                  -
 * 11  ERROR          srv->w0      1      43          0          99                 -
 * 12-14 PULL_RESP    srv->w0      2      77          4          555                40 B, 16 B segs
 * 15  PUSH, bad magic             3      4           2          7                  4 B
 * 16  PUSH, seg_len 16, 12 B sent 3      5           2          7                  12 B
 * 17  PUSH, 9298-byte frame       3      6           2          7                  9216 B:
 *                                                                                  2304 x 2.0f
 * 18  REPAIR         w0->srv      3      8           0          7                  20 B record
 * 19  REPAIR_RESP    srv->w0      3      8           0          7                  16 B record
 * 20  HEARTBEAT      w0->sched    0      0           0          0                  - (aux 500)
 * 21  HEARTBEAT_ACK  sched->w0    0      0           0          0                  2 lost
 * 22  HEARTBEAT_ACK, count 2, one entry                                            20 B
 * 23  REGISTER       srv->sched   0      0x5eed1234  0          0                  - (beats)
 * 24  PUSH_ACK       srv->w0      3      9           3          7                  - (epoch)
 * 25  ECHO           w0->srv      3      10          5          0x5eed             16 B: 0..15
 * 26  ECHO_RESP      srv->w0      3      10          5          0x5eed             16 B: 0..15
 * 27  ECHO, 1028 B, longer than psb answers                                        1028 B
 *
 * w0, srv and sched are tf_worker (198.18.0.1), tf_server (198.18.0.2) and tf_sched
 * (198.18.0.10). The REGISTER_ACK and HEARTBEAT_ACK payloads are tf_register_ack's and
 * tf_heartbeat_ack's: lib/sched is not a dependency of this generator.
 */

static struct tf_pcap pcap;
static unsigned int nframes;
static uint8_t frame[PSB_FRAME_HLEN + 9216];

static void
emit(size_t len)
{
	/* Fixed timestamps keep the file byte-for-byte reproducible. */
	tf_pcap_put(&pcap, frame, len, 1700000000 + nframes, 1000 * nframes);
	nframes++;
}

/* A message carrying n floats as one whole segment (or none). */
static void
send_floats(const struct psb_addr *src, const struct psb_addr *dst, struct psb_hdr *h,
		const float *v, unsigned int n, uint16_t seg_size)
{
	uint8_t payload[64];

	h->total_len = 4 * n;
	h->seg_len = (uint16_t)(4 * n);
	h->seg_size = seg_size;
	tf_put_floats(payload, v, n);
	emit(psb_frame_build(frame, src, dst, h, payload, h->seg_len));
}

/*
 * The multicast capture (test_dissector.sh expects these too):
 *
 *  #  what                          from -> to
 *  1  DATA v3 seg 1 of 2, 36 B      trainer -> group    session 0x5eed0001, 100-byte version,
 *  2  PARITY group 0 index 0, 64 B  trainer -> group    64-byte segments, CRC 0x11223344
 *  3  HEARTBEAT sent 2 at 5000 Mbps trainer -> group
 *  4  NACK receiver 7: group 0      worker -> trainer
 *     needs 1, misses 0x2
 *  5  NCF of the same               trainer -> group
 *  6  POST worker 2 holds 41,       worker -> trainer   session 0x0000abcd, seq 5
 *     100 samples summing 4050 over 0.5 s
 *  7  POST worker 2 joins, key 77   worker -> trainer   session 0
 *  8  PULL worker 1 holds 4, seq 9  worker -> trainer
 *  9  ACK worker 2: ended at 41     trainer -> worker
 * 10  DATA saying 36 B, carrying 30 trainer -> group
 * 11  DATA of frame 1 in wire        trainer -> group
 *     version 1 (another CRC)
 */
static void
emit_udp(const struct psb_addr *src, const struct psb_addr *dst, const uint8_t *dgram, size_t n)
{
	struct psb_hdr h = tf_hdr(PSB_MSG_PUSH, 0, 0, 0, 0, 0);

	/* the headers of a psb message as long as the datagram, its 40-byte header overwritten */
	psb_frame_write_headers(frame, src, dst, &h, (uint16_t)(n - PSB_HDR_LEN));
	memcpy(frame + PSB_FRAME_HLEN - PSB_HDR_LEN, dgram, n);
	emit(PSB_FRAME_HLEN - PSB_HDR_LEN + n);
}

static int
multicast_capture(const char *path)
{
	struct psb_addr trainer = tf_addr(0x20, 0xc6120014, 7001);	/* 198.18.0.20 */
	struct psb_addr worker = tf_addr(0x21, 0xc6120015, 40000);	/* 198.18.0.21 */
	struct psb_addr group = tf_addr(0, 0xef120001, 7000);		/* 239.18.0.1 */
	static const uint8_t gmac[6] = { 0x01, 0x00, 0x5e, 0x12, 0x00, 0x01 };
	struct psb_mc_ver v = { .vid = 3, .total_len = 100, .seg_size = 64, .group = 64,
		.crc = 0x11223344 };
	struct psb_mc_nack_entry e = { .group = 0, .need = 1, .missing = 0x2 };
	struct psb_stale_msg m;
	uint8_t d[PSB_MC_HLEN + 64];
	unsigned int i;

	memcpy(group.mac, gmac, 6);
	v.nseg = psb_mc_nseg(v.total_len, v.seg_size);
	nframes = 0;
	if (tf_pcap_open(&pcap, path) != 0)
		return -1;
	for (i = 0; i < 64; i++)
		d[PSB_MC_HLEN + i] = (uint8_t)i;
	psb_mc_write_data(d, 0x5eed0001, &v, 1, 36);
	emit_udp(&trainer, &group, d, PSB_MC_HLEN + 36);
	psb_mc_write_parity(d, 0x5eed0001, &v, 0, 0);
	emit_udp(&trainer, &group, d, PSB_MC_HLEN + 64);
	psb_mc_write_heartbeat(d, 0x5eed0001, &v, 2, 5000);
	emit_udp(&trainer, &group, d, PSB_MC_HLEN);
	emit_udp(&worker, &trainer, d, psb_mc_write_nack(d, PSB_MC_NACK, 0x5eed0001, &v, 7, &e, 1));
	emit_udp(&trainer, &group, d, psb_mc_write_nack(d, PSB_MC_NCF, 0x5eed0001, &v, 0, &e, 1));
	m = (struct psb_stale_msg){ .type = PSB_STALE_POST, .session = 0xabcd, .worker = 2,
		.held = 41, .samples = 100, .seq = 5, .sum = 4050, .window = 500000000 };
	psb_stale_write(d, &m);
	emit_udp(&worker, &trainer, d, PSB_STALE_LEN);
	m = (struct psb_stale_msg){ .type = PSB_STALE_POST, .worker = 2, .sum = 77 };
	psb_stale_write(d, &m);
	emit_udp(&worker, &trainer, d, PSB_STALE_LEN);
	m = (struct psb_stale_msg){ .type = PSB_STALE_PULL, .session = 0xabcd, .worker = 1,
		.held = 4, .seq = 9 };
	psb_stale_write(d, &m);
	emit_udp(&worker, &trainer, d, PSB_STALE_LEN);
	m = (struct psb_stale_msg){ .type = PSB_STALE_ACK, .session = 0xabcd, .worker = 2,
		.held = 41, .window = PSB_STALE_ACK_END };
	psb_stale_write(d, &m);
	emit_udp(&trainer, &worker, d, PSB_STALE_LEN);
	psb_mc_write_data(d, 0x5eed0001, &v, 1, 36);
	emit_udp(&trainer, &group, d, PSB_MC_HLEN + 30);
	d[2] = 1;
	emit_udp(&trainer, &group, d, PSB_MC_HLEN + 36);
	return tf_pcap_close(&pcap);
}

int
main(int argc, char **argv)
{
	static const float pushpull[] = { 1.5f, -2.0f };
	static const float pull_resp[] = { 0.25f, 0.5f, 0.75f };
	static const float pushpull_resp[] = { -0.5f, 8.0f };
	static const float ten[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
	static const float four[] = { 4.0f };
	static const float three[] = { 1.0f, 2.0f, 3.0f };
	float ones[358];
	static uint8_t value[9216];
	static const float two = 2.0f;
	static const struct tf_view_server servers[] = {
		{ 0xc6120002, PSB_UDP_PORT, 0, 0x8000000000000000ull },
		{ 0xc6120003, 9440, 0x8000000000000000ull, UINT64_MAX },
	};
	uint8_t table[4 + 2 * 24], big[1432];
	struct psb_hdr h;
	unsigned int i;
	uint32_t off;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: %s OUT.pcap [MC.pcap]\n", argv[0]);
		return 2;
	}
	if (tf_pcap_open(&pcap, argv[1]) != 0) {
		fprintf(stderr, "gen_dissector_pcap: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}

	/* 1: the first segment of a 4096-byte push. */
	h = tf_hdr(PSB_MSG_PUSH, PSB_F_SYNC, 3, 3, 2, 7);
	tf_seg(&h, 4096, 0, 1432);
	for (i = 0; i < 358; i++)
		ones[i] = 1.0f;
	tf_put_floats(big, ones, 358);
	emit(psb_frame_build(frame, &tf_worker, &tf_server, &h, big, 1432));

	/* 2 */
	h = tf_hdr(PSB_MSG_PULL, PSB_F_SYNC, 1, 42, 9, 0x1122334455667788ull);
	h.seg_size = 1432;
	emit(psb_frame_build(frame, &tf_worker, &tf_server, &h, NULL, 0));

	/* 3 */
	h = tf_hdr(PSB_MSG_PUSHPULL, 0, 513, 4000000000u, 4294967295u, UINT64_MAX);
	send_floats(&tf_worker, &tf_server, &h, pushpull, 2, 8932);

	/* 4 */
	h = tf_hdr(PSB_MSG_PUSH_ACK, PSB_F_SYNC, 3, 3, 3, 7);
	h.seg_size = 1432;
	emit(psb_frame_build(frame, &tf_server, &tf_worker, &h, NULL, 0));

	/* 5 */
	h = tf_hdr(PSB_MSG_PULL_RESP, PSB_F_SYNC, 1, 42, 9, 0x1122334455667788ull);
	send_floats(&tf_server, &tf_worker, &h, pull_resp, 3, 1432);

	/* 6 */
	h = tf_hdr(PSB_MSG_PUSHPULL_RESP, 0, 513, 4000000000u, 0, UINT64_MAX);
	send_floats(&tf_server, &tf_worker, &h, pushpull_resp, 2, 1432);

	/* 7 */
	h = tf_hdr(PSB_MSG_REGISTER, PSB_F_WORKER, 0, 1, 0, 0);
	emit(psb_frame_build(frame, &tf_worker, &tf_sched, &h, NULL, 0));

	/* 8: rank 2 of 3 workers; two servers splitting the key space. */
	tf_register_ack(table, 2, 3, servers, 2);
	h = tf_hdr(PSB_MSG_REGISTER_ACK, PSB_F_WORKER, 0, 1, 0, 0);
	h.aux = 2;
	tf_whole(&h, sizeof(table));
	emit(psb_frame_build(frame, &tf_sched, &tf_worker, &h, table, sizeof(table)));

	/* 9, 10: barrier of the worker group (4), barrier number 1. */
	h = tf_hdr(PSB_MSG_BARRIER, 0, 0, 5, 1, 0);
	h.aux = 4;
	emit(psb_frame_build(frame, &tf_worker, &tf_sched, &h, NULL, 0));
	h.type = PSB_MSG_BARRIER_ACK;
	emit(psb_frame_build(frame, &tf_sched, &tf_worker, &h, NULL, 0));

	/* 11 */
	h = tf_hdr(PSB_MSG_ERROR, 0, 1, 43, 0, 99);
	h.status = PSB_ST_NO_KEY;
	emit(psb_frame_build(frame, &tf_server, &tf_worker, &h, NULL, 0));

	/* 12-14: a 40-byte value in segments of 16, 16 and 8 bytes. */
	for (off = 0; off < 40; off += 16) {
		uint8_t seg[16];

		h = tf_hdr(PSB_MSG_PULL_RESP, 0, 2, 77, 4, 555);
		tf_seg(&h, 40, off, 16);
		tf_put_floats(seg, ten + off / 4, h.seg_len / 4);
		emit(psb_frame_build(frame, &tf_server, &tf_worker, &h, seg, h.seg_len));
	}

	/* 15: bad magic. */
	h = tf_hdr(PSB_MSG_PUSH, 0, 3, 4, 2, 7);
	h.magic = 0x1234;
	send_floats(&tf_worker, &tf_server, &h, four, 1, 1432);

	/* 16: seg_len claims 16 bytes, 12 follow. */
	h = tf_hdr(PSB_MSG_PUSH, 0, 3, 5, 2, 7);
	h.total_len = 16;
	h.seg_len = 16;
	h.seg_size = 1432;
	tf_put_floats(big, three, 3);
	emit(psb_frame_build(frame, &tf_worker, &tf_server, &h, big, 12));

	/* 17: one segment of 9216 bytes, a frame longer than psb's receive buffers. */
	h = tf_hdr(PSB_MSG_PUSH, 0, 3, 6, 2, 7);
	tf_whole(&h, 9216);
	for (i = 0; i < 9216 / 4; i++)
		tf_put_floats(value + 4 * i, &two, 1);
	emit(psb_frame_build(frame, &tf_worker, &tf_server, &h, value, 9216));

	/* 18: REPAIR: the worker lacks segments 3 and 5 of version 2 of the answer (3 covered). */
	{
		static const uint8_t lacks = 0x05;
		uint8_t rbuf[20];
		struct psb_repair rp = { .req_type = PSB_MSG_PUSHPULL, .flags = PSB_REPAIR_ROUND,
			.base = 3, .nbits = 3, .round = 2, .bits = &lacks };

		h = tf_hdr(PSB_MSG_REPAIR, 0, 3, 8, 0, 7);
		tf_whole(&h, (uint32_t)tf_repair(rbuf, &rp));
		emit(psb_frame_build(frame, &tf_worker, &tf_server, &h, rbuf, h.seg_len));

		/* 19: REPAIR_RESP: the server knows nothing of that request */
		rp = (struct psb_repair){ .flags = PSB_REPAIR_ALL };
		h = tf_hdr(PSB_MSG_REPAIR_RESP, 0, 3, 8, 0, 7);
		tf_whole(&h, (uint32_t)tf_repair(rbuf, &rp));
		emit(psb_frame_build(frame, &tf_server, &tf_worker, &h, rbuf, h.seg_len));
	}

	/* 20: the worker's heartbeat, every 500 ms (as psb_agent_send: flags, no req_id). */
	h = tf_hdr(PSB_MSG_HEARTBEAT, PSB_F_WORKER, 0, 0, 0, 0);
	h.aux = 500;
	emit(psb_frame_build(frame, &tf_worker, &tf_sched, &h, NULL, 0));

	/*
	 * 21: the scheduler's answer: two servers lost, rank 1 (198.18.0.3:9440) silent for
	 * 3100 ms, rank 0 (198.18.0.2:9430) restarted. 22: the same list cut after its first
	 * entry, its count still 2.
	 */
	{
		static const struct tf_lost gone[] = {
			{ 1, 1, 0xc6120003, 9440, 3100 },	/* PSB_SCHED_LOST_DEAD */
			{ 0, 2, 0xc6120002, PSB_UDP_PORT, 0 },	/* PSB_SCHED_LOST_RESTARTED */
		};
		uint8_t lost[4 + 2 * 16];

		tf_heartbeat_ack(lost, 2, gone, 2);
		h = tf_hdr(PSB_MSG_HEARTBEAT_ACK, PSB_F_WORKER, 0, 0, 0, 0);
		h.aux = 2;
		tf_whole(&h, sizeof(lost));
		emit(psb_frame_build(frame, &tf_sched, &tf_worker, &h, lost, sizeof(lost)));

		tf_whole(&h, 4 + 16);
		emit(psb_frame_build(frame, &tf_sched, &tf_worker, &h, lost, 4 + 16));
	}

	/* 23: a server registers, with heartbeats; req_id is its epoch. */
	h = tf_hdr(PSB_MSG_REGISTER, PSB_F_SERVER | PSB_F_BEATS, 0, 0x5eed1234, 0, 0);
	emit(psb_frame_build(frame, &tf_server, &tf_sched, &h, NULL, 0));

	/* 24: an answer of that server, its epoch in aux. */
	h = tf_hdr(PSB_MSG_PUSH_ACK, PSB_F_SYNC, 3, 9, 3, 7);
	h.seg_size = 1432;
	h.aux = 0x5eed1234;
	emit(psb_frame_build(frame, &tf_server, &tf_worker, &h, NULL, 0));

	/* 25, 26: an echo and its answer, the same but for the type; 27: one too long */
	for (i = 0; i < 1028; i++)
		value[i] = (uint8_t)i;
	h = tf_hdr(PSB_MSG_ECHO, 0, 3, 10, 5, 0x5eed);
	tf_whole(&h, 16);
	emit(psb_frame_build(frame, &tf_worker, &tf_server, &h, value, 16));
	h.type = PSB_MSG_ECHO_RESP;
	emit(psb_frame_build(frame, &tf_server, &tf_worker, &h, value, 16));
	h.type = PSB_MSG_ECHO;
	tf_whole(&h, 1028);
	emit(psb_frame_build(frame, &tf_worker, &tf_server, &h, value, 1028));

	if (tf_pcap_close(&pcap) != 0) {
		fprintf(stderr, "gen_dissector_pcap: %s: write failed\n", argv[1]);
		return 1;
	}
	printf("gen_dissector_pcap: %u frames written to %s\n", nframes, argv[1]);
	if (argc > 2) {
		if (multicast_capture(argv[2]) != 0) {
			fprintf(stderr, "gen_dissector_pcap: %s: write failed\n", argv[2]);
			return 1;
		}
		printf("gen_dissector_pcap: %u frames written to %s\n", nframes, argv[2]);
	}
	return 0;
}
