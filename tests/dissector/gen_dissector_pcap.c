/* gen_dissector_pcap OUT.pcap: one psb frame of each kind, for testing scripts/psb.lua. */
#include <stdio.h>
#include <string.h>

#include <pcap/pcap.h>

#include "psb_proto.h"

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
 *
 * The HEARTBEAT_ACK payloads (psb_sched_lost_encode) are written by hand: lib/sched is
 * not a dependency of this generator.
 */

static struct psb_addr worker = {
	.mac = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 },
	.ip = 0xc6120001,	/* 198.18.0.1 */
	.port = 40001,
};
static struct psb_addr server = {
	.mac = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 },
	.ip = 0xc6120002,	/* 198.18.0.2 */
	.port = PSB_UDP_PORT,
};
static struct psb_addr sched = {
	.mac = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a },
	.ip = 0xc612000a,	/* 198.18.0.10 */
	.port = PSB_SCHED_PORT,
};

static pcap_dumper_t *dumper;
static unsigned int nframes;
static uint8_t frame[PSB_FRAME_HLEN + 9216];

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void
put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static void
put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

/* Values travel as little-endian float32, whatever the host. */
static void
put_floats(uint8_t *out, const float *v, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		uint32_t bits;

		memcpy(&bits, &v[i], 4);
		out[4 * i] = (uint8_t)bits;
		out[4 * i + 1] = (uint8_t)(bits >> 8);
		out[4 * i + 2] = (uint8_t)(bits >> 16);
		out[4 * i + 3] = (uint8_t)(bits >> 24);
	}
}

static void
emit(size_t len)
{
	struct pcap_pkthdr ph;

	/* Fixed timestamps keep the file byte-for-byte reproducible. */
	memset(&ph, 0, sizeof(ph));
	ph.ts.tv_sec = 1700000000 + nframes;
	ph.ts.tv_usec = 1000 * nframes;
	ph.caplen = (bpf_u_int32)len;
	ph.len = (bpf_u_int32)len;
	pcap_dump((u_char *)dumper, &ph, frame);
	nframes++;
}

static struct psb_hdr
hdr(uint8_t type, uint8_t flags, uint16_t sender, uint32_t req_id, uint32_t round, uint64_t key)
{
	struct psb_hdr h;

	psb_hdr_init(&h, type);
	h.flags = flags;
	h.sender = sender;
	h.req_id = req_id;
	h.round = round;
	h.key = key;
	return h;
}

/* h carries len bytes, all of them in this one segment. */
static void
whole(struct psb_hdr *h, uint32_t len)
{
	h->total_len = len;
	h->seg_len = (uint16_t)len;
	h->seg_size = (uint16_t)len;
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
	put_floats(payload, v, n);
	emit(psb_frame_build(frame, src, dst, h, payload, h->seg_len));
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
	uint8_t table[4 + 2 * 24], big[1432];
	struct psb_hdr h;
	unsigned int i;
	pcap_t *p;
	uint32_t off;

	if (argc != 2) {
		fprintf(stderr, "usage: %s OUT.pcap\n", argv[0]);
		return 2;
	}
	p = pcap_open_dead(DLT_EN10MB, 65535);
	if (p == NULL) {
		fprintf(stderr, "gen_dissector_pcap: pcap_open_dead failed\n");
		return 1;
	}
	dumper = pcap_dump_open(p, argv[1]);
	if (dumper == NULL) {
		fprintf(stderr, "gen_dissector_pcap: %s: %s\n", argv[1], pcap_geterr(p));
		pcap_close(p);
		return 1;
	}

	/* 1: the first segment of a 4096-byte push. */
	h = hdr(PSB_MSG_PUSH, PSB_F_SYNC, 3, 3, 2, 7);
	h.total_len = 4096;
	h.seg_size = 1432;
	h.seg_len = 1432;
	for (i = 0; i < 358; i++)
		ones[i] = 1.0f;
	put_floats(big, ones, 358);
	emit(psb_frame_build(frame, &worker, &server, &h, big, 1432));

	/* 2 */
	h = hdr(PSB_MSG_PULL, PSB_F_SYNC, 1, 42, 9, 0x1122334455667788ull);
	h.seg_size = 1432;
	emit(psb_frame_build(frame, &worker, &server, &h, NULL, 0));

	/* 3 */
	h = hdr(PSB_MSG_PUSHPULL, 0, 513, 4000000000u, 4294967295u, UINT64_MAX);
	send_floats(&worker, &server, &h, pushpull, 2, 8932);

	/* 4 */
	h = hdr(PSB_MSG_PUSH_ACK, PSB_F_SYNC, 3, 3, 3, 7);
	h.seg_size = 1432;
	emit(psb_frame_build(frame, &server, &worker, &h, NULL, 0));

	/* 5 */
	h = hdr(PSB_MSG_PULL_RESP, PSB_F_SYNC, 1, 42, 9, 0x1122334455667788ull);
	send_floats(&server, &worker, &h, pull_resp, 3, 1432);

	/* 6 */
	h = hdr(PSB_MSG_PUSHPULL_RESP, 0, 513, 4000000000u, 0, UINT64_MAX);
	send_floats(&server, &worker, &h, pushpull_resp, 2, 1432);

	/* 7 */
	h = hdr(PSB_MSG_REGISTER, PSB_F_WORKER, 0, 1, 0, 0);
	emit(psb_frame_build(frame, &worker, &sched, &h, NULL, 0));

	/* 8: rank 2 of 3 workers; two servers splitting the key space. */
	memset(table, 0, sizeof(table));
	put16(table, 2);
	put16(table + 2, 3);
	put32(table + 4, 0xc6120002);
	put16(table + 8, PSB_UDP_PORT);
	put64(table + 12, 0);
	put64(table + 20, 0x8000000000000000ull);
	put32(table + 28, 0xc6120003);
	put16(table + 32, 9440);
	put64(table + 36, 0x8000000000000000ull);
	put64(table + 44, UINT64_MAX);
	h = hdr(PSB_MSG_REGISTER_ACK, PSB_F_WORKER, 0, 1, 0, 0);
	h.aux = 2;
	whole(&h, sizeof(table));
	emit(psb_frame_build(frame, &sched, &worker, &h, table, sizeof(table)));

	/* 9, 10: barrier of the worker group (4), barrier number 1. */
	h = hdr(PSB_MSG_BARRIER, 0, 0, 5, 1, 0);
	h.aux = 4;
	emit(psb_frame_build(frame, &worker, &sched, &h, NULL, 0));
	h.type = PSB_MSG_BARRIER_ACK;
	emit(psb_frame_build(frame, &sched, &worker, &h, NULL, 0));

	/* 11 */
	h = hdr(PSB_MSG_ERROR, 0, 1, 43, 0, 99);
	h.status = PSB_ST_NO_KEY;
	emit(psb_frame_build(frame, &server, &worker, &h, NULL, 0));

	/* 12-14: a 40-byte value in segments of 16, 16 and 8 bytes. */
	for (off = 0; off < 40; off += 16) {
		uint8_t seg[16];
		uint16_t n = (uint16_t)(40 - off < 16 ? 40 - off : 16);

		h = hdr(PSB_MSG_PULL_RESP, 0, 2, 77, 4, 555);
		h.total_len = 40;
		h.offset = off;
		h.seg_size = 16;
		h.seg_len = n;
		put_floats(seg, ten + off / 4, n / 4);
		emit(psb_frame_build(frame, &server, &worker, &h, seg, n));
	}

	/* 15: bad magic. */
	h = hdr(PSB_MSG_PUSH, 0, 3, 4, 2, 7);
	h.magic = 0x1234;
	send_floats(&worker, &server, &h, four, 1, 1432);

	/* 16: seg_len claims 16 bytes, 12 follow. */
	h = hdr(PSB_MSG_PUSH, 0, 3, 5, 2, 7);
	h.total_len = 16;
	h.seg_len = 16;
	h.seg_size = 1432;
	put_floats(big, three, 3);
	emit(psb_frame_build(frame, &worker, &server, &h, big, 12));

	/* 17: one segment of 9216 bytes, a frame longer than psb's receive buffers. */
	h = hdr(PSB_MSG_PUSH, 0, 3, 6, 2, 7);
	whole(&h, 9216);
	for (i = 0; i < 9216 / 4; i++)
		put_floats(value + 4 * i, &two, 1);
	emit(psb_frame_build(frame, &worker, &server, &h, value, 9216));

	/* 18: REPAIR: the worker lacks segments 3 and 5 of version 2 of the answer (3 covered). */
	{
		uint8_t rbuf[20];
		struct psb_repair rp = { .req_type = PSB_MSG_PUSHPULL, .flags = PSB_REPAIR_ROUND,
			.base = 3, .nbits = 3, .round = 2 };

		memset(rbuf, 0, sizeof(rbuf));
		psb_repair_encode(rbuf, &rp);
		rbuf[16] = 0x05;
		h = hdr(PSB_MSG_REPAIR, 0, 3, 8, 0, 7);
		whole(&h, sizeof(rbuf));
		emit(psb_frame_build(frame, &worker, &server, &h, rbuf, sizeof(rbuf)));

		/* 19: REPAIR_RESP: the server knows nothing of that request */
		rp = (struct psb_repair){ .flags = PSB_REPAIR_ALL };
		memset(rbuf, 0, sizeof(rbuf));
		psb_repair_encode(rbuf, &rp);
		h = hdr(PSB_MSG_REPAIR_RESP, 0, 3, 8, 0, 7);
		whole(&h, 16);
		emit(psb_frame_build(frame, &server, &worker, &h, rbuf, 16));
	}

	/* 20: the worker's heartbeat, every 500 ms (as psb_agent_send: flags, no req_id). */
	h = hdr(PSB_MSG_HEARTBEAT, PSB_F_WORKER, 0, 0, 0, 0);
	h.aux = 500;
	emit(psb_frame_build(frame, &worker, &sched, &h, NULL, 0));

	/*
	 * 21: the scheduler's answer: two servers lost, rank 1 (198.18.0.3:9440) silent for
	 * 3100 ms, rank 0 (198.18.0.2:9430) restarted. 22: the same list cut after its first
	 * entry, its count still 2.
	 */
	{
		uint8_t lost[4 + 2 * 16];

		memset(lost, 0, sizeof(lost));
		put16(lost, 2);
		put16(lost + 4, 1);
		lost[6] = 1;			/* PSB_SCHED_LOST_DEAD */
		put32(lost + 8, 0xc6120003);
		put16(lost + 12, 9440);
		put32(lost + 16, 3100);
		put16(lost + 20, 0);
		lost[22] = 2;			/* PSB_SCHED_LOST_RESTARTED */
		put32(lost + 24, 0xc6120002);
		put16(lost + 28, PSB_UDP_PORT);
		put32(lost + 32, 0);
		h = hdr(PSB_MSG_HEARTBEAT_ACK, PSB_F_WORKER, 0, 0, 0, 0);
		h.aux = 2;
		whole(&h, sizeof(lost));
		emit(psb_frame_build(frame, &sched, &worker, &h, lost, sizeof(lost)));

		whole(&h, 4 + 16);
		emit(psb_frame_build(frame, &sched, &worker, &h, lost, 4 + 16));
	}

	/* 23: a server registers, with heartbeats; req_id is its epoch. */
	h = hdr(PSB_MSG_REGISTER, PSB_F_SERVER | PSB_F_BEATS, 0, 0x5eed1234, 0, 0);
	emit(psb_frame_build(frame, &server, &sched, &h, NULL, 0));

	/* 24: an answer of that server, its epoch in aux. */
	h = hdr(PSB_MSG_PUSH_ACK, PSB_F_SYNC, 3, 9, 3, 7);
	h.seg_size = 1432;
	h.aux = 0x5eed1234;
	emit(psb_frame_build(frame, &server, &worker, &h, NULL, 0));

	pcap_dump_close(dumper);
	pcap_close(p);
	printf("gen_dissector_pcap: %u frames written to %s\n", nframes, argv[1]);
	return 0;
}
