/*
 * Unit tests of psb's reliable multicast (multicast/): the wire format against every kind
 * of malformed packet, the erasure code, and a sender with receivers over a simulated
 * network in virtual time, with random, bursty and per-receiver loss, reordering and
 * duplication, late joiners, dead receivers, superseded versions and hostile packets.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "psb_mc_fec.h"
#include "psb_mc_proto.h"
#include "psb_mc_rand.h"
#include "psb_mc_recv.h"
#include "psb_mc_send.h"
#include "psb_mc_sim.h"

static uint64_t g_rng = 88172645463325252ull;

static uint64_t
rnd(void)
{
	return psb_mc_rand(&g_rng);
}

static void
fill(uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 2654435761u) >> 13 ^ seed * 31 ^ i >> 8);
}

static struct psb_mc_ver
ver_of(uint32_t vid, uint64_t len, uint16_t seg, uint16_t group)
{
	struct psb_mc_ver v = { .vid = vid, .total_len = len, .seg_size = seg, .group = group };

	v.nseg = psb_mc_nseg(len, seg);
	v.crc = 0x12345678;
	return v;
}

/* ---- the wire format ---- */

static void
test_proto_roundtrip(void **state)
{
	struct psb_mc_ver v = ver_of(7, 100000, 1000, 16), w;
	uint8_t buf[PSB_MC_HLEN + PSB_MC_NACK_MAX * PSB_MC_NACK_ENTRY];
	struct psb_mc_nack_entry e[2] = {
		{ .group = 1, .need = 2, .missing = 0x11 },
		{ .group = 6, .need = 1, .missing = 0x8 },
	}, got;
	struct psb_mc_pkt p;
	size_t n;

	(void)state;
	assert_int_equal(v.nseg, 100);
	assert_int_equal(psb_mc_ngroups(&v), 7);
	assert_int_equal(psb_mc_group_k(&v, 6), 4);
	psb_mc_write_data(buf, 99, &v, 99, 1000);
	assert_int_equal(psb_mc_parse(buf, PSB_MC_HLEN + 1000, &p), PSB_MC_DATA);
	assert_int_equal(p.session, 99);
	assert_int_equal(p.a, 99);
	assert_int_equal(p.len, 1000);
	w = p.ver;
	assert_memory_equal(&w, &v, sizeof(v));
	psb_mc_write_parity(buf, 99, &v, 6, 3);
	assert_int_equal(psb_mc_parse(buf, PSB_MC_HLEN + 1000, &p), PSB_MC_PARITY);
	assert_int_equal(p.a, 6);
	assert_int_equal(p.b, 3);
	psb_mc_write_heartbeat(buf, 99, &v, 40, 2500);
	assert_int_equal(psb_mc_parse(buf, PSB_MC_HLEN, &p), PSB_MC_HEARTBEAT);
	assert_int_equal(p.a, 40);
	assert_int_equal(p.rate_mbps, 2500);
	n = psb_mc_write_nack(buf, PSB_MC_NACK, 99, &v, 5, e, 2);
	assert_int_equal(psb_mc_parse(buf, n, &p), PSB_MC_NACK);
	assert_int_equal(p.a, 5);
	assert_int_equal(p.b, 2);
	psb_mc_nack_entry(&p, 1, &got);
	assert_int_equal(got.group, 6);
	assert_int_equal(got.need, 1);
	assert_true(got.missing == 0x8);
	/* the last segment is short, an empty version is one empty segment */
	v = ver_of(1, 2500, 1000, 4);
	assert_int_equal(psb_mc_seg_len(&v, 2), 500);
	v = ver_of(1, 0, 1000, 4);
	assert_int_equal(v.nseg, 1);
	psb_mc_write_data(buf, 1, &v, 0, 0);
	assert_int_equal(psb_mc_parse(buf, PSB_MC_HLEN, &p), PSB_MC_DATA);
}

static void
test_proto_malformed(void **state)
{
	struct psb_mc_ver v = ver_of(7, 100000, 1000, 16), bad;
	uint8_t buf[PSB_MC_HLEN + 2000], good[PSB_MC_HLEN + 64];
	struct psb_mc_nack_entry e[3];
	struct psb_mc_pkt p;
	size_t n, i;

	(void)state;
	memset(buf, 0, sizeof(buf));
	psb_mc_write_data(buf, 1, &v, 3, 1000);
	for (i = 0; i < PSB_MC_HLEN + 1000; i++)
		assert_int_equal(psb_mc_parse(buf, i, &p), -PSB_MC_BAD_SHORT);
	assert_int_equal(psb_mc_parse(buf, PSB_MC_HLEN + 1001, &p), -PSB_MC_BAD_SHORT);
	buf[0] ^= 1;
	assert_int_equal(psb_mc_parse(buf, PSB_MC_HLEN + 1000, &p), -PSB_MC_BAD_MAGIC);
	buf[0] ^= 1;
	/* another wire version, older (another CRC) or newer: not this protocol */
	buf[2] = PSB_MC_WIRE_VERSION - 1;
	assert_int_equal(psb_mc_parse(buf, PSB_MC_HLEN + 1000, &p), -PSB_MC_BAD_MAGIC);
	buf[2] = PSB_MC_WIRE_VERSION + 1;
	assert_int_equal(psb_mc_parse(buf, PSB_MC_HLEN + 1000, &p), -PSB_MC_BAD_MAGIC);
	buf[2] = PSB_MC_WIRE_VERSION;
	buf[3] = 9;
	assert_int_equal(psb_mc_parse(buf, PSB_MC_HLEN + 1000, &p), -PSB_MC_BAD_TYPE);
	buf[3] = 0;
	assert_int_equal(psb_mc_parse(buf, PSB_MC_HLEN + 1000, &p), -PSB_MC_BAD_TYPE);
	/* geometry: each field alone made to disagree */
	bad = v; bad.nseg = 99;
	psb_mc_write_data(buf, 1, &bad, 3, 1000);
	assert_int_equal(psb_mc_parse(buf, PSB_MC_HLEN + 1000, &p), -PSB_MC_BAD_GEOMETRY);
	bad = v; bad.group = 0;
	psb_mc_write_data(buf, 1, &bad, 3, 1000);
	assert_int_equal(psb_mc_parse(buf, PSB_MC_HLEN + 1000, &p), -PSB_MC_BAD_GEOMETRY);
	bad = v; bad.group = 65;
	psb_mc_write_data(buf, 1, &bad, 3, 1000);
	assert_int_equal(psb_mc_parse(buf, PSB_MC_HLEN + 1000, &p), -PSB_MC_BAD_GEOMETRY);
	bad = ver_of(7, 100000, 63, 16);
	psb_mc_write_data(buf, 1, &bad, 3, 63);
	assert_int_equal(psb_mc_parse(buf, PSB_MC_HLEN + 63, &p), -PSB_MC_BAD_GEOMETRY);
	bad = ver_of(7, 100000, PSB_MC_SEG_MAX + 1, 16);
	psb_mc_write_data(buf, 1, &bad, 0, 0);
	assert_int_equal(psb_mc_parse(buf, PSB_MC_HLEN, &p), -PSB_MC_BAD_GEOMETRY);
	bad = ver_of(7, PSB_MC_MAX_VERSION + 1, 8000, 16);
	psb_mc_write_data(buf, 1, &bad, 0, 8000);
	assert_int_equal(psb_mc_parse(buf, PSB_MC_HLEN + 8000, &p), -PSB_MC_BAD_GEOMETRY);
	/* indexes and lengths */
	psb_mc_write_data(buf, 1, &v, 100, 1000);
	assert_int_equal(psb_mc_parse(buf, PSB_MC_HLEN + 1000, &p), -PSB_MC_BAD_INDEX);
	psb_mc_write_data(buf, 1, &v, 5, 999);
	assert_int_equal(psb_mc_parse(buf, PSB_MC_HLEN + 999, &p), -PSB_MC_BAD_LENGTH);
	psb_mc_write_parity(buf, 1, &v, 7, 0);
	assert_int_equal(psb_mc_parse(buf, PSB_MC_HLEN + 1000, &p), -PSB_MC_BAD_INDEX);
	psb_mc_write_parity(buf, 1, &v, 0, PSB_MC_PARITY_MAX);
	assert_int_equal(psb_mc_parse(buf, PSB_MC_HLEN + 1000, &p), -PSB_MC_BAD_INDEX);
	psb_mc_write_heartbeat(buf, 1, &v, 101, 0);
	assert_int_equal(psb_mc_parse(buf, PSB_MC_HLEN, &p), -PSB_MC_BAD_INDEX);
	/* NACKs: entries in order, inside their group, needs that their bitmaps allow */
	e[0] = (struct psb_mc_nack_entry){ .group = 2, .need = 1, .missing = 1 };
	e[1] = (struct psb_mc_nack_entry){ .group = 2, .need = 1, .missing = 1 };
	n = psb_mc_write_nack(buf, PSB_MC_NACK, 1, &v, 1, e, 2);
	assert_int_equal(psb_mc_parse(buf, n, &p), -PSB_MC_BAD_NACK);
	e[1] = (struct psb_mc_nack_entry){ .group = 7, .need = 1, .missing = 1 };
	n = psb_mc_write_nack(buf, PSB_MC_NACK, 1, &v, 1, e, 2);
	assert_int_equal(psb_mc_parse(buf, n, &p), -PSB_MC_BAD_NACK);
	e[1] = (struct psb_mc_nack_entry){ .group = 6, .need = 1, .missing = 0x10 };
	n = psb_mc_write_nack(buf, PSB_MC_NACK, 1, &v, 1, e, 2);
	assert_int_equal(psb_mc_parse(buf, n, &p), -PSB_MC_BAD_NACK);	/* group 6 has 4 */
	e[1] = (struct psb_mc_nack_entry){ .group = 5, .need = 3, .missing = 0x3 };
	n = psb_mc_write_nack(buf, PSB_MC_NACK, 1, &v, 1, e, 2);
	assert_int_equal(psb_mc_parse(buf, n, &p), -PSB_MC_BAD_NACK);
	e[1] = (struct psb_mc_nack_entry){ .group = 5, .need = 0, .missing = 0x3 };
	n = psb_mc_write_nack(buf, PSB_MC_NACK, 1, &v, 1, e, 2);
	assert_int_equal(psb_mc_parse(buf, n, &p), -PSB_MC_BAD_NACK);
	e[1] = (struct psb_mc_nack_entry){ .group = 5, .need = 2, .missing = 0x3 };
	n = psb_mc_write_nack(buf, PSB_MC_NACK, 1, &v, 1, e, 2);
	assert_int_equal(psb_mc_parse(buf, n, &p), PSB_MC_NACK);
	assert_int_equal(psb_mc_parse(buf, n - 1, &p), -PSB_MC_BAD_SHORT);
	assert_int_equal(psb_mc_parse(buf, n + 16, &p), -PSB_MC_BAD_SHORT);
	n = psb_mc_write_nack(buf, PSB_MC_NACK, 1, &v, 1, e, 0);
	assert_int_equal(psb_mc_parse(buf, n, &p), -PSB_MC_BAD_NACK);
	/* random bytes never crash it, and what parses is self-consistent */
	v = ver_of(3, 64, 64, 1);
	psb_mc_write_data(good, 1, &v, 0, 64);
	for (i = 0; i < 200000; i++) {
		size_t len = rnd() % sizeof(good) + 1;

		memcpy(buf, good, sizeof(good));
		buf[rnd() % len] ^= (uint8_t)(1u << (rnd() % 8));
		if (rnd() % 2)
			buf[rnd() % len] = (uint8_t)rnd();
		if (psb_mc_parse(buf, len, &p) == PSB_MC_DATA)
			assert_true(p.a < p.ver.nseg && p.len == psb_mc_seg_len(&p.ver, p.a) &&
				    len == PSB_MC_HLEN + (size_t)p.len);
	}
	assert_string_equal(psb_mc_bad_name(-PSB_MC_BAD_NACK), "nack");
}

/*
 * CRC-32C from its definition, a bit at a time: the register starts inverted, each bit of
 * each byte (least significant first) shifts it right, the reflected polynomial 0x82F63B78
 * XORed in when a one falls out, and the result is inverted. crc carries on as psb_mc_crc's.
 */
static uint32_t
crc32c_bits(uint32_t crc, const uint8_t *p, size_t n)
{
	size_t i;
	int b;

	crc = ~crc;
	for (i = 0; i < n; i++) {
		crc ^= p[i];
		for (b = 0; b < 8; b++)
			crc = crc >> 1 ^ (crc & 1 ? 0x82f63b78u : 0);
	}
	return ~crc;
}

/* The 4 CRC bytes as RFC 3720 prints them (in the order sent: least significant first). */
static uint32_t
le32_of(const char *hex)
{
	unsigned int b[4];

	assert_int_equal(sscanf(hex, "%x %x %x %x", &b[0], &b[1], &b[2], &b[3]), 4);
	return b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24;
}

/* The version CRC is CRC-32C: its check value and RFC 3720's examples (appendix B.4). */
static void
test_crc_known(void **state)
{
	static const uint8_t read10[48] = {	/* B.4's SCSI Read (10) command PDU */
		0x01, 0xc0, [16] = 0x14, [22] = 0x04, [27] = 0x14, [31] = 0x18, [32] = 0x28,
		[40] = 0x02,
	};
	uint8_t b[32];
	int i;

	(void)state;
	/* the check value of the CRC catalogues: "123456789" */
	assert_int_equal(psb_mc_crc(0, "123456789", 9), 0xe3069283);
	assert_int_equal(crc32c_bits(0, (const uint8_t *)"123456789", 9), 0xe3069283);
	assert_int_equal(psb_mc_crc(0, b, 0), 0);
	memset(b, 0, 32);
	assert_int_equal(psb_mc_crc(0, b, 32), le32_of("aa 36 91 8a"));
	memset(b, 0xff, 32);
	assert_int_equal(psb_mc_crc(0, b, 32), le32_of("43 ab a8 62"));
	for (i = 0; i < 32; i++)
		b[i] = (uint8_t)i;
	assert_int_equal(psb_mc_crc(0, b, 32), le32_of("4e 79 dd 46"));
	for (i = 0; i < 32; i++)
		b[i] = (uint8_t)(31 - i);
	assert_int_equal(psb_mc_crc(0, b, 32), le32_of("5c db 3f 11"));
	assert_int_equal(psb_mc_crc(0, read10, sizeof(read10)), le32_of("56 3a 96 d9"));
}

/*
 * Against the definition: every length to 300 at every alignment to 8, buffers of up to
 * 3 MB, and a CRC carried over pieces cut anywhere.
 */
static void
test_crc_long(void **state)
{
	enum { MAX = 3 * 1024 * 1024 + 13, CUTS = 24 };
	static const size_t lens[] = { 1000, 7001, 65539, 1048575, MAX };
	uint8_t *buf = malloc(MAX + 8);
	size_t n, off, cut[CUTS], i, j, l;
	uint32_t want[CUTS], whole, c;

	(void)state;
	assert_non_null(buf);
	for (i = 0; i < MAX + 8; i++)
		buf[i] = (uint8_t)rnd();
	for (n = 0; n <= 300; n++)
		for (off = 0; off < 8; off++)
			assert_int_equal(psb_mc_crc(0, buf + off, n), crc32c_bits(0, buf + off, n));
	/* cut points in increasing order, the last the end: prefix CRCs from one pass */
	for (l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		n = lens[l];
		off = rnd() % 8;
		for (i = 0; i < CUTS - 1; i++)
			cut[i] = rnd() % (n + 1);
		cut[CUTS - 1] = n;
		for (i = 1; i < CUTS; i++)		/* sorted, small as it is */
			for (j = i; j > 0 && cut[j - 1] > cut[j]; j--) {
				size_t t = cut[j];

				cut[j] = cut[j - 1];
				cut[j - 1] = t;
			}
		for (i = 0, c = 0; i < CUTS; i++) {
			c = crc32c_bits(c, buf + off + (i ? cut[i - 1] : 0),
					cut[i] - (i ? cut[i - 1] : 0));
			want[i] = c;
		}
		whole = want[CUTS - 1];
		assert_int_equal(psb_mc_crc(0, buf + off, n), whole);
		for (i = 0, c = 0; i < CUTS; i++) {
			/* each prefix at once, and the CRC carried from piece to piece */
			assert_int_equal(psb_mc_crc(0, buf + off, cut[i]), want[i]);
			c = psb_mc_crc(c, buf + off + (i ? cut[i - 1] : 0),
				       cut[i] - (i ? cut[i - 1] : 0));
			assert_int_equal(c, want[i]);
			/* and in two pieces cut there */
			assert_int_equal(psb_mc_crc(psb_mc_crc(0, buf + off, cut[i]),
						    buf + off + cut[i], n - cut[i]), whole);
		}
		buf[off + rnd() % n] ^= (uint8_t)(1u << rnd() % 8);
		assert_int_not_equal(psb_mc_crc(0, buf + off, n), whole);
	}
	free(buf);
}

/* ---- the erasure code ---- */

static void
test_fec(void **state)
{
	static struct psb_mc_fec f;
	enum { LEN = 512 };
	static uint8_t data[PSB_MC_GROUP_MAX][LEN], par[PSB_MC_GROUP_MAX][LEN];
	static uint8_t got[PSB_MC_GROUP_MAX][LEN];
	unsigned int k, trial;

	(void)state;
	for (k = 1; k <= PSB_MC_GROUP_MAX; k += (k < 8 ? 1 : 7)) {
		uint8_t *dp[PSB_MC_GROUP_MAX];
		unsigned int i;

		for (i = 0; i < k; i++) {
			fill(data[i], LEN, k * 100 + i);
			dp[i] = data[i];
		}
		for (trial = 0; trial < 20; trial++) {
			unsigned int nmiss = (unsigned int)(rnd() % k) + 1, r = 0;
			unsigned int first = (unsigned int)(rnd() % (PSB_MC_PARITY_MAX - nmiss + 1));
			uint8_t *src[PSB_MC_GROUP_MAX], *out[PSB_MC_GROUP_MAX];
			uint16_t id[PSB_MC_GROUP_MAX];
			uint8_t miss[PSB_MC_GROUP_MAX], lost[PSB_MC_GROUP_MAX] = { 0 };
			unsigned int m = 0;

			while (m < nmiss) {
				i = rnd() % k;
				if (!lost[i]) {
					lost[i] = 1;
					m++;
				}
			}
			m = 0;
			for (i = 0; i < k; i++) {
				if (lost[i]) {
					miss[m] = (uint8_t)i;
					out[m++] = got[i];
				} else {
					src[r] = data[i];
					id[r++] = (uint16_t)i;
				}
			}
			/* parity symbols of any indexes, not only the first ones */
			for (i = 0; i < nmiss; i++) {
				psb_mc_fec_encode(&f, k, first + i, LEN, dp, par[i]);
				src[r] = par[i];
				id[r++] = (uint16_t)(k + first + i);
			}
			assert_int_equal(psb_mc_fec_decode(&f, k, LEN, src, id, miss, nmiss, out), 0);
			for (i = 0; i < nmiss; i++)
				assert_memory_equal(got[miss[i]], data[miss[i]], LEN);
		}
	}
	/* the same symbol twice does not make k */
	{
		uint8_t *src[2] = { data[0], data[0] }, *out[1] = { got[1] };
		uint16_t id[2] = { 0, 0 };
		uint8_t miss[1] = { 1 };

		assert_int_equal(psb_mc_fec_decode(&f, 2, LEN, src, id, miss, 1, out), -EINVAL);
	}
}

/* ---- a simulated network (psb_mc_sim) ---- */

struct net {
	struct psb_mc_sim *sim;
	uint8_t *versions[8];
	int released[64];
};

static struct net g_net;

static void
release(void *arg, uint32_t vid, const void *data)
{
	struct net *n = arg;

	(void)data;
	if (vid < 64)
		n->released[vid]++;
}

static struct psb_mc_send_cfg
send_cfg(void)
{
	return (struct psb_mc_send_cfg){
		.session = 0xabcd, .seg_size = 1000, .group = 16, .parity = 32, .proactive = 0,
		.rate_bps = 2000000000ull, .heartbeat_ns = 2000000, .nack_hold_ns = 200000,
	};
}

static struct psb_mc_recv_cfg
recv_cfg(int track_only)
{
	return (struct psb_mc_recv_cfg){
		.budget = 8u << 20, .max_version = 4u << 20,
		.backoff_ns = 1000000, .retry_ns = 3000000, .reorder = 48, .vid_window = 1000,
		.session_idle_ns = 2000000000ull, .track_only = track_only,
	};
}

/* The network of most tests: 20 us one way, reordered packets up to 200 us late. */
static struct psb_mc_sim_cfg
sim_cfg(unsigned int nrx, const struct psb_mc_send_cfg *sc, int track_only)
{
	return (struct psb_mc_sim_cfg){
		.send = *sc, .recv = recv_cfg(track_only), .nrx = nrx, .delay_ns = 20000,
		.reorder_ns = 200000, .seed = 7, .release = release, .release_arg = &g_net,
	};
}

static void
net_start(struct net *n, const struct psb_mc_sim_cfg *cfg)
{
	memset(n, 0, sizeof(*n));
	assert_int_equal(psb_mc_sim_create(cfg, NULL, &n->sim), 0);
}

static void
net_init(struct net *n, unsigned int nrx, const struct psb_mc_send_cfg *sc, int track_only)
{
	struct psb_mc_sim_cfg cfg = sim_cfg(nrx, sc, track_only);

	net_start(n, &cfg);
}

static void
net_fini(struct net *n)
{
	int i;

	psb_mc_sim_free(n->sim);
	for (i = 0; i < 8; i++)
		free(n->versions[i]);
}

static void
net_run(struct net *n, uint64_t until)
{
	psb_mc_sim_run(n->sim, until);
}

static uint64_t
now(struct net *n)
{
	return psb_mc_sim_now(n->sim);
}

static struct psb_mc_recv *
rx(struct net *n, int i)
{
	return psb_mc_sim_receiver(n->sim, (unsigned int)i);
}

static struct psb_mc_send *
tx(struct net *n)
{
	return psb_mc_sim_sender(n->sim);
}

static struct psb_mc_loss *
loss(struct net *n, int i)
{
	return psb_mc_sim_loss(n->sim, (unsigned int)i);
}

/* Publish version vid of len bytes (kept in versions[slot]). */
static const uint8_t *
publish(struct net *n, uint32_t vid, size_t len, int slot)
{
	uint8_t *p = malloc(len ? len : 1);

	assert_non_null(p);
	fill(p, len, vid);
	free(n->versions[slot]);
	n->versions[slot] = p;
	assert_int_equal(psb_mc_sim_publish(n->sim, vid, p, len), 0);
	return p;
}

static void
assert_holds(struct net *n, int i, uint32_t vid, const uint8_t *data, size_t len)
{
	struct psb_mc_ver v;
	const uint8_t *got = psb_mc_recv_latest(rx(n, i), &v);

	if (v.vid != vid)
		fail_msg("receiver %d holds version %u, not %u (stats: completed %llu, nacks %llu)",
			 i, v.vid, vid, (unsigned long long)psb_mc_recv_stats(rx(n, i))->completed,
			 (unsigned long long)psb_mc_recv_stats(rx(n, i))->nacks);
	assert_int_equal(v.total_len, len);
	if (data != NULL) {
		assert_non_null(got);
		assert_memory_equal(got, data, len);
	}
}

/* One version to n receivers under loss model l (the same for all unless per-receiver). */
static void
one_version(const struct psb_mc_loss *l, int nrx, uint16_t parity, uint16_t proactive,
		double nack_loss)
{
	struct psb_mc_send_cfg sc = send_cfg();
	struct psb_mc_sim_cfg cfg;
	const struct psb_mc_send_stats *ss;
	struct net *n = &g_net;
	const uint8_t *d;
	int i;

	sc.parity = parity;
	sc.proactive = proactive;
	cfg = sim_cfg((unsigned int)nrx, &sc, 0);
	cfg.nack_loss = nack_loss;
	net_start(n, &cfg);
	for (i = 0; i < nrx; i++)
		*loss(n, i) = l[i];
	d = publish(n, 1, 300000 + 123, 0);
	net_run(n, 2000000000ull);
	for (i = 0; i < nrx; i++) {
		if (l[i].dead_after_ns != 0)
			continue;
		assert_holds(n, i, 1, d, 300123);
		assert_int_equal(psb_mc_recv_stats(rx(n, i))->crc_fail, 0);
		/* parity repaired what was lost, or nothing was decoded with parity off */
		if (parity == 0)
			assert_int_equal(psb_mc_recv_stats(rx(n, i))->decoded_groups, 0);
		else if (l[i].p >= 0.05)
			assert_true(psb_mc_recv_stats(rx(n, i))->decoded_groups > 0);
	}
	ss = psb_mc_send_stats(tx(n));
	if (parity == 0)
		assert_true(ss->repair_parity_pkts == 0 && ss->repair_data_pkts > 0);
	else
		assert_true(ss->repair_parity_pkts > 0);
	net_fini(n);
}

static void
test_no_loss(void **state)
{
	struct psb_mc_loss l[4] = { { 0 } };
	const struct psb_mc_send_stats *ss;
	struct net *n = &g_net;
	struct psb_mc_send_cfg sc = send_cfg();
	int i;

	(void)state;
	net_init(n, 4, &sc, 0);
	for (i = 0; i < 4; i++)
		*loss(n, i) = l[i];
	publish(n, 1, 300123, 0);
	net_run(n, 500000000ull);
	ss = psb_mc_send_stats(tx(n));
	assert_int_equal(ss->data_pkts, 301);
	assert_int_equal(ss->repair_parity_pkts + ss->repair_data_pkts, 0);
	for (i = 0; i < 4; i++) {
		assert_holds(n, i, 1, n->versions[0], 300123);
		assert_int_equal(psb_mc_recv_stats(rx(n, i))->nacks, 0);
	}
	/* pacing: 2 Gbit/s, 301 packets of 1082 wire bytes take ~1.3 ms */
	assert_true(ss->heartbeats > 100);
	net_fini(n);
}

static void
test_random_loss(void **state)
{
	struct psb_mc_loss l[8];
	int i;

	(void)state;
	for (i = 0; i < 8; i++)
		l[i] = (struct psb_mc_loss){ .p = 0.05 };
	one_version(l, 8, 32, 0, 0);		/* repaired by parity */
	one_version(l, 8, 0, 0, 0);		/* by resending */
	one_version(l, 8, 32, 1, 0.2);		/* with proactive parity, NACKs lost too */
}

static void
test_bursty_loss(void **state)
{
	struct psb_mc_loss l[6];
	int i;

	(void)state;
	for (i = 0; i < 6; i++)
		l[i] = (struct psb_mc_loss){ .p = 0.005, .p_gb = 0.01, .p_bg = 0.2 };
	one_version(l, 6, 32, 0, 0);
	one_version(l, 6, 4, 0, 0);	/* bursts beyond the parity: resent */
}

static void
test_per_receiver_loss_reorder_dup(void **state)
{
	struct psb_mc_loss l[5] = {
		{ .p = 0 }, { .p = 0.01 }, { .p = 0.2 }, { .p = 0.02, .reorder = 0.3 },
		{ .p = 0.05, .dup = 0.3, .reorder = 0.1 },
	};

	(void)state;
	one_version(l, 5, 32, 0, 0);
	one_version(l, 5, 16, 1, 0.1);
}

/*
 * One parity symbol repairs different losses: receivers that each lost a different
 * segment of the same group are made whole by as many parity symbols as the neediest lost.
 */
static void
test_parity_repairs_different_losses(void **state)
{
	struct psb_mc_send_cfg sc = send_cfg();
	struct net *n = &g_net;
	uint8_t pkt[PSB_MC_HLEN + 1000];
	struct psb_mc_ver v;
	const uint8_t *d;
	int i;
	uint32_t seg;

	(void)state;
	sc.rate_bps = 0;
	net_init(n, 4, &sc, 0);
	/* the sender's packets go to each receiver by hand: receiver i misses segment i */
	for (i = 0; i < 4; i++)
		loss(n, i)->p = 1;
	d = publish(n, 1, 16000, 0);
	psb_mc_send_poll(tx(n), now(n), 1000);
	for (i = 0; i < 4; i++)
		loss(n, i)->p = 0;
	v = ver_of(1, 16000, 1000, 16);
	/* CRC-32C as the protocol states it: the receivers hold the version by it */
	v.crc = crc32c_bits(0, d, 16000);
	for (i = 0; i < 4; i++) {
		psb_mc_write_heartbeat(pkt, 0xabcd, &v, 0, 0);
		psb_mc_recv_input(rx(n, i), pkt, PSB_MC_HLEN, 0);
		for (seg = 0; seg < 16; seg++) {
			if (seg == (uint32_t)i)
				continue;
			psb_mc_write_data(pkt, 0xabcd, &v, seg, 1000);
			memcpy(pkt + PSB_MC_HLEN, d + seg * 1000, 1000);
			psb_mc_recv_input(rx(n, i), pkt, sizeof(pkt), 0);
		}
		psb_mc_write_heartbeat(pkt, 0xabcd, &v, 16, 0);
		psb_mc_recv_input(rx(n, i), pkt, PSB_MC_HLEN, 0);
	}
	net_run(n, 100000000ull);
	assert_int_equal(psb_mc_send_stats(tx(n))->repair_parity_pkts, 1);
	assert_int_equal(psb_mc_send_stats(tx(n))->repair_data_pkts, 0);
	for (i = 0; i < 4; i++) {
		assert_holds(n, i, 1, d, 16000);
		assert_int_equal(psb_mc_recv_stats(rx(n, i))->recovered_segs, 1);
	}
	net_fini(n);
}

/*
 * Suppression: a loss every receiver shares is asked for by few of them (the first NACK's
 * repair reaches the rest before their timers fire), and NACKs are merged at the sender.
 */
static void
test_suppression(void **state)
{
	struct psb_mc_send_cfg sc = send_cfg();
	struct net *n = &g_net;
	uint64_t nacks = 0, suppressed = 0;
	int i;

	(void)state;
	struct psb_mc_sim_cfg cfg = sim_cfg(32, &sc, 0);

	/* every receiver loses the same packets, upstream of them all */
	cfg.shared_p = 0.05;
	net_start(n, &cfg);
	publish(n, 1, 400000, 0);
	net_run(n, 1000000000ull);
	for (i = 0; i < 32; i++) {
		assert_holds(n, i, 1, n->versions[0], 400000);
		nacks += psb_mc_recv_stats(rx(n, i))->nacks;
		suppressed += psb_mc_recv_stats(rx(n, i))->nacks_suppressed;
	}
	print_message("suppression: %llu NACKs, %llu suppressed, %llu merged\n", (unsigned long long)nacks, (unsigned long long)suppressed, (unsigned long long)psb_mc_send_stats(tx(n))->nack_merged);
	/*
	 * 32 receivers saw the same ~20 losses: without suppression each would ask at least
	 * once; with it, fewer NACKs reach the sender than there are receivers
	 */
	assert_true(nacks < 32);
	assert_true(suppressed > 0);
	assert_int_equal(psb_mc_sim_stats(n->sim)->nacks, nacks);
	assert_true(psb_mc_send_stats(tx(n))->nack_merged > 0);
	/* and the repairs are what the losses were, not one per receiver */
	assert_true(psb_mc_send_stats(tx(n))->repair_parity_pkts <
		    psb_mc_send_stats(tx(n))->data_pkts / 10 + 8);
	net_fini(n);
}

/*
 * Latest-value semantics: versions published faster than they can be sent replace the one
 * waiting unsent; receivers end holding the newest, whole and checked; a NACK for a version
 * that a newer one replaced is ignored.
 */
static void
test_latest_value(void **state)
{
	struct psb_mc_send_cfg sc = send_cfg();
	struct net *n = &g_net;
	const struct psb_mc_send_stats *ss;
	uint8_t buf[PSB_MC_HLEN + PSB_MC_NACK_ENTRY];
	struct psb_mc_nack_entry e = { .group = 0, .need = 1, .missing = 1 };
	struct psb_mc_ver v;
	uint32_t vid;
	int i;

	(void)state;
	sc.rate_bps = 500000000ull;	/* 300 KB take ~5 ms */
	net_init(n, 4, &sc, 0);
	for (i = 0; i < 4; i++)
		*loss(n, i) = (struct psb_mc_loss){ .p = 0.02 };
	/* a version every millisecond, 20 of them */
	for (vid = 1; vid <= 20; vid++) {
		publish(n, vid, 300000, (int)(vid % 8));
		net_run(n, now(n) + 1000000);
	}
	net_run(n, now(n) + 500000000ull);
	ss = psb_mc_send_stats(tx(n));
	assert_int_equal(ss->published, 20);
	assert_true(ss->superseded >= 10);
	/* nothing of a superseded version was sent: whole versions only */
	assert_int_equal(ss->data_pkts, 300 * ss->sent_whole);
	for (i = 0; i < 4; i++)
		assert_holds(n, i, 20, n->versions[20 % 8], 300000);
	/* the releases: every version published is given back once, the newest still held */
	for (vid = 1; vid < 20; vid++)
		assert_int_equal(n->released[vid], 1);
	assert_int_equal(n->released[20], 0);
	/* a NACK for version 1 now: superseded, not repaired */
	v = ver_of(1, 300000, 1000, 16);
	v.crc = psb_mc_crc(0, n->versions[1], 0);
	psb_mc_write_nack(buf, PSB_MC_NACK, 0xabcd, &v, 9, &e, 1);
	psb_mc_send_input(tx(n), buf, sizeof(buf), 1, now(n));
	assert_int_equal(ss->nack_superseded, 1);
	/* publishing an older or equal version is refused */
	assert_int_equal(psb_mc_sim_publish(n->sim, 20, n->versions[0], 10), -EINVAL);
	net_fini(n);
}

/* A receiver that stops hearing anything never holds the others back. */
static void
test_dead_receiver(void **state)
{
	struct psb_mc_loss l[4] = { { .p = 0.02 }, { .p = 0.02 }, { .p = 0.02 },
		{ .p = 0.02, .dead_after_ns = 300000 } };

	(void)state;
	one_version(l, 4, 32, 0, 0);
}

/* Late join: a receiver that starts hearing mid-version asks nothing for it and holds the next. */
static void
test_late_join(void **state)
{
	struct psb_mc_send_cfg sc = send_cfg();
	struct net *n = &g_net;
	const struct psb_mc_recv_stats *rs;

	(void)state;
	sc.rate_bps = 500000000ull;
	net_init(n, 2, &sc, 0);
	loss(n, 1)->p = 0.05;
	loss(n, 1)->join_at_ns = 2000000;	/* 2 ms into a ~5 ms version */
	publish(n, 1, 300000, 1);
	net_run(n, 100000000ull);
	rs = psb_mc_recv_stats(rx(n, 1));
	assert_int_equal(rs->late_joins, 1);
	assert_int_equal(rs->nacks, 0);
	assert_int_equal(rs->completed, 0);
	assert_holds(n, 0, 1, n->versions[1], 300000);
	publish(n, 2, 300000, 2);
	net_run(n, 400000000ull);
	assert_holds(n, 1, 2, n->versions[2], 300000);
	assert_int_equal(rs->superseded, 1);
	net_fini(n);
}

/* Forged, inconsistent, out-of-window and oversized packets are counted and change nothing. */
static void
test_hostile(void **state)
{
	struct psb_mc_send_cfg sc = send_cfg();
	struct net *n = &g_net;
	const struct psb_mc_recv_stats *rs;
	uint8_t pkt[PSB_MC_HLEN + 1000];
	struct psb_mc_ver v, w;
	uint64_t missing_before;
	uint32_t vid, miss;

	(void)state;
	sc.rate_bps = 500000000ull;
	net_init(n, 1, &sc, 0);
	publish(n, 1, 300000, 1);
	net_run(n, 2000000);	/* part of version 1 arrived */
	rs = psb_mc_recv_stats(rx(n, 0));
	psb_mc_recv_partial(rx(n, 0), &vid, &miss);
	assert_int_equal(vid, 1);
	missing_before = miss;
	v = ver_of(1, 300000, 1000, 16);
	v.crc = psb_mc_crc(0, n->versions[1], 300000);
	/* another session */
	memset(pkt + PSB_MC_HLEN, 0xee, 1000);
	psb_mc_write_data(pkt, 0x1111, &v, 299, 1000);
	psb_mc_recv_input(rx(n, 0), pkt, sizeof(pkt), now(n));
	assert_int_equal(rs->forged, 1);
	/* the same version, described otherwise (another CRC) */
	w = v;
	w.crc ^= 1;
	psb_mc_write_data(pkt, 0xabcd, &w, 299, 1000);
	psb_mc_recv_input(rx(n, 0), pkt, sizeof(pkt), now(n));
	assert_int_equal(rs->forged, 2);
	/* far ahead of every version known */
	w = ver_of(5000, 300000, 1000, 16);
	psb_mc_write_data(pkt, 0xabcd, &w, 0, 1000);
	psb_mc_recv_input(rx(n, 0), pkt, sizeof(pkt), now(n));
	assert_int_equal(rs->out_of_window, 1);
	/* larger than the receiver takes */
	w = ver_of(2, 5u << 20, 1000, 16);
	psb_mc_write_data(pkt, 0xabcd, &w, 0, 1000);
	psb_mc_recv_input(rx(n, 0), pkt, sizeof(pkt), now(n));
	assert_int_equal(rs->oversize, 1);
	/* malformed */
	psb_mc_write_data(pkt, 0xabcd, &v, 300, 1000);
	psb_mc_recv_input(rx(n, 0), pkt, sizeof(pkt), now(n));
	assert_int_equal(rs->bad[PSB_MC_BAD_INDEX], 1);
	psb_mc_recv_partial(rx(n, 0), &vid, &miss);
	assert_int_equal(vid, 1);
	assert_int_equal(miss, missing_before);
	net_run(n, 200000000ull);
	assert_holds(n, 0, 1, n->versions[1], 300000);
	/* hostile NACKs at the sender: counted, nothing resent */
	{
		const struct psb_mc_send_stats *ss = psb_mc_send_stats(tx(n));
		struct psb_mc_nack_entry e = { .group = 0, .need = 1, .missing = 1 };
		uint8_t nk[PSB_MC_HLEN + PSB_MC_NACK_ENTRY];
		uint64_t rep = ss->repair_parity_pkts + ss->repair_data_pkts;

		psb_mc_write_nack(nk, PSB_MC_NACK, 0x2222, &v, 1, &e, 1);
		psb_mc_send_input(tx(n), nk, sizeof(nk), 1, now(n));
		assert_int_equal(ss->nack_forged, 1);
		w = v;
		w.crc ^= 1;
		psb_mc_write_nack(nk, PSB_MC_NACK, 0xabcd, &w, 1, &e, 1);
		psb_mc_send_input(tx(n), nk, sizeof(nk), 1, now(n));
		assert_int_equal(ss->nack_forged, 2);
		w = ver_of(3, 300000, 1000, 16);
		psb_mc_write_nack(nk, PSB_MC_NACK, 0xabcd, &w, 1, &e, 1);
		psb_mc_send_input(tx(n), nk, sizeof(nk), 1, now(n));
		assert_int_equal(ss->nack_forged, 3);
		psb_mc_send_input(tx(n), nk, 17, 1, now(n));
		assert_int_equal(ss->nack_bad[PSB_MC_BAD_SHORT], 1);
		psb_mc_write_data(pkt, 0xabcd, &v, 0, 1000);
		psb_mc_send_input(tx(n), pkt, sizeof(pkt), 1, now(n));
		assert_int_equal(ss->nack_bad[PSB_MC_BAD_TYPE], 1);
		net_run(n, now(n) + 10000000);
		assert_int_equal(ss->repair_parity_pkts + ss->repair_data_pkts, rep);
	}
	net_fini(n);
}

/* A version larger than the budget is refused; the receiver keeps what it holds. */
static void
test_budget(void **state)
{
	struct psb_mc_send_cfg sc = send_cfg();
	struct psb_mc_sim_cfg cfg = sim_cfg(1, &sc, 0);
	struct net *n = &g_net;

	(void)state;
	cfg.recv.budget = 700000;	/* two of 300 KB, not one of 500 KB beside one */
	net_start(n, &cfg);
	publish(n, 1, 300000, 1);
	net_run(n, 100000000ull);
	assert_holds(n, 0, 1, n->versions[1], 300000);
	publish(n, 2, 500000, 2);
	net_run(n, 200000000ull);
	assert_holds(n, 0, 1, n->versions[1], 300000);
	assert_true(psb_mc_recv_stats(rx(n, 0))->oversize > 0);
	assert_true(psb_mc_recv_stats(rx(n, 0))->held_bytes <= 700000);
	publish(n, 3, 300000, 3);
	net_run(n, 300000000ull);
	assert_holds(n, 0, 3, n->versions[3], 300000);
	/*
	 * The bookkeeping of a version counts too: 300 KB in 64-byte segments, one a group,
	 * is 4688 groups of bookkeeping beside its bytes, more than the 400 KB left
	 */
	{
		struct psb_mc_ver w = ver_of(4, 300000, 64, 1);
		uint8_t pkt[PSB_MC_HLEN + 64];
		uint64_t before = psb_mc_recv_stats(rx(n, 0))->oversize;

		w.crc = 0;
		psb_mc_write_data(pkt, 0xabcd, &w, 0, 64);
		memset(pkt + PSB_MC_HLEN, 0, 64);
		psb_mc_recv_input(rx(n, 0), pkt, sizeof(pkt), now(n));
		assert_int_equal(psb_mc_recv_stats(rx(n, 0))->oversize, before + 1);
		assert_true(psb_mc_recv_stats(rx(n, 0))->held_bytes <= 700000);
		assert_holds(n, 0, 3, n->versions[3], 300000);
	}
	net_fini(n);
}

/* A sender that restarts (new session) is followed once the old one has been silent. */
static void
test_session_restart(void **state)
{
	struct psb_mc_send_cfg sc = send_cfg();
	struct net *n = &g_net;

	(void)state;
	net_init(n, 2, &sc, 0);
	publish(n, 5, 100000, 1);
	net_run(n, 100000000ull);
	assert_holds(n, 0, 5, n->versions[1], 100000);
	sc.session = 0xbeef;
	assert_int_equal(psb_mc_sim_new_sender(n->sim, &sc), 0);
	publish(n, 1, 100000, 2);
	net_run(n, 200000000ull);
	/* too soon: the old session spoke 100 ms ago */
	assert_holds(n, 0, 5, n->versions[1], 100000);
	assert_true(psb_mc_recv_stats(rx(n, 0))->forged > 0);
	/* followed now; version 1, sent whole long ago, is not asked for: the next one comes */
	net_run(n, 2500000000ull);
	publish(n, 2, 100000, 3);
	net_run(n, 2700000000ull);
	assert_holds(n, 0, 2, n->versions[3], 100000);
	assert_int_equal(psb_mc_recv_stats(rx(n, 0))->sessions, 2);
	net_fini(n);
}

/*
 * One forged packet of the followed session naming a far newer version does not silence a
 * receiver: once that version stayed silent for session_idle_ns while the sender's older
 * ones came, it is given up and the sender's versions are followed again.
 */
static void
test_forged_newest(void **state)
{
	struct psb_mc_send_cfg sc = send_cfg();
	struct net *n = &g_net;
	uint8_t pkt[PSB_MC_HLEN + 1000];
	struct psb_mc_ver w = ver_of(900, 300000, 1000, 16);
	uint32_t vid;

	(void)state;
	net_init(n, 1, &sc, 0);
	publish(n, 1, 100000, 1);
	net_run(n, 50000000ull);
	assert_holds(n, 0, 1, n->versions[1], 100000);
	psb_mc_write_data(pkt, 0xabcd, &w, 5, 1000);
	memset(pkt + PSB_MC_HLEN, 0x55, 1000);
	psb_mc_recv_input(rx(n, 0), pkt, sizeof(pkt), now(n));
	for (vid = 2; vid <= 9; vid++) {
		publish(n, vid, 100000, (int)(vid % 8));
		net_run(n, now(n) + 500000000ull);
	}
	assert_true(psb_mc_recv_stats(rx(n, 0))->stale > 0);
	assert_int_equal(psb_mc_recv_stats(rx(n, 0))->abandoned, 1);
	assert_holds(n, 0, 9, n->versions[9 % 8], 100000);
	net_fini(n);
}

/* Receivers that only keep bitmaps end where full ones do. */
static void
test_track_only(void **state)
{
	struct psb_mc_send_cfg sc = send_cfg();
	struct net *n = &g_net;
	struct psb_mc_ver v;
	int i;

	(void)state;
	net_init(n, 16, &sc, 1);
	for (i = 0; i < 16; i++)
		*loss(n, i) = (struct psb_mc_loss){ .p = 0.01 * (i % 5) };
	publish(n, 1, 300000, 1);
	net_run(n, 300000000ull);
	for (i = 0; i < 16; i++) {
		assert_null(psb_mc_recv_latest(rx(n, i), &v));
		assert_int_equal(v.vid, 1);
		assert_int_equal(psb_mc_recv_stats(rx(n, i))->held_bytes, 0);
	}
	net_fini(n);
}

/* Feedback-driven pacing backs off under loss and comes back without it. */
static void
test_adaptive(void **state)
{
	struct psb_mc_send_cfg sc = send_cfg();
	struct net *n = &g_net;
	const struct psb_mc_send_stats *ss;
	uint32_t vid;
	int i;

	(void)state;
	sc.adaptive = 1;
	sc.min_rate_bps = 100000000ull;
	sc.adapt_ns = 5000000;
	net_init(n, 4, &sc, 0);
	ss = psb_mc_send_stats(tx(n));
	for (i = 0; i < 4; i++)
		*loss(n, i) = (struct psb_mc_loss){ .p = 0.1 };
	for (vid = 1; vid <= 10; vid++) {
		publish(n, vid, 300000, (int)(vid % 8));
		net_run(n, now(n) + 10000000);
	}
	assert_true(ss->backoffs > 0);
	assert_true(ss->rate_bps < sc.rate_bps);
	for (i = 0; i < 4; i++)
		loss(n, i)->p = 0;
	for (; vid <= 60; vid++) {
		publish(n, vid, 300000, (int)(vid % 8));
		net_run(n, now(n) + 10000000);
	}
	assert_int_equal(ss->rate_bps, sc.rate_bps);
	net_fini(n);
}

/* ---- what NACKs can make the sender send ---- */

/* Each NACK and each entry the sender was handed is counted once, by what became of it. */
static void
assert_nacks_counted(const struct psb_mc_send_stats *ss)
{
	assert_int_equal(ss->nack_pkts, ss->nacks + ss->nack_forged + ss->nack_superseded +
			 psb_mc_bad_total(ss->nack_bad));
	assert_int_equal(ss->nack_entries, ss->nack_premature + ss->nack_over_budget +
			 ss->nack_merged + ss->nack_raised + ss->nack_opened);
}

/* Each packet a receiver was handed is counted once, by what became of it. */
static void
assert_packets_counted(const struct psb_mc_recv_stats *rs)
{
	assert_int_equal(rs->pkts, psb_mc_bad_total(rs->bad) + rs->other + rs->forged + rs->stale + rs->out_of_window +
			 rs->oversize + rs->no_memory + rs->data_pkts + rs->parity_pkts +
			 rs->heartbeats + rs->ncfs);
}

struct storm_run {
	uint64_t end_ns;		/* the last version sent whole, from the first publish */
	uint64_t repair_wire;		/* bytes of repairs and NCFs on the wire */
	uint64_t completed[2];		/* versions the honest receivers held whole */
	uint32_t latest[2];
};

/*
 * 20 versions of 300 kB every 20 ms at 2 Gbit/s to two honest receivers losing 1 % of the
 * packets, while nstorm stormers NACK every symbol of every group every 300 us (ids: how
 * many receiver ids each takes in turn).
 */
static void
storm_run(unsigned int nstorm, uint32_t ids, struct storm_run *out)
{
	struct psb_mc_send_cfg sc = send_cfg();
	struct psb_mc_sim_cfg cfg = sim_cfg(2, &sc, 0);
	const struct psb_mc_send_stats *ss;
	struct net *n = &g_net;
	uint64_t t0;
	uint32_t vid;
	int i;

	cfg.nstorm = nstorm;
	cfg.storm_every_ns = 300000;
	cfg.storm_ids = ids;
	net_start(n, &cfg);
	for (i = 0; i < 2; i++)
		*loss(n, i) = (struct psb_mc_loss){ .p = 0.01 };
	ss = psb_mc_send_stats(tx(n));
	t0 = now(n);
	memset(out, 0, sizeof(*out));
	for (vid = 1; vid <= 20; vid++) {
		publish(n, vid, 300000, (int)(vid % 8));
		if (vid < 20)
			net_run(n, t0 + vid * 20000000ull);
	}
	while (psb_mc_send_streaming(tx(n)) && now(n) < t0 + 1000000000ull)
		net_run(n, now(n) + 100000);
	if (psb_mc_send_streaming(tx(n)))
		fail_msg("%u stormers: the last version not sent whole 1 s after the first", nstorm);
	out->end_ns = now(n) - t0;
	/* the receivers' repairs of the last version, the storm going on */
	net_run(n, now(n) + 50000000);
	/* all that left but data and heartbeats: repairs and NCFs */
	out->repair_wire = psb_mc_sim_stats(n->sim)->wire_bytes -
		ss->data_pkts * (uint64_t)(PSB_MC_HLEN + 1000 + PSB_MC_WIRE_OVERHEAD) -
		ss->heartbeats * (uint64_t)(PSB_MC_HLEN + PSB_MC_WIRE_OVERHEAD);
	for (i = 0; i < 2; i++) {
		const struct psb_mc_recv_stats *rs = psb_mc_recv_stats(rx(n, i));

		out->completed[i] = rs->completed;
		out->latest[i] = rs->latest;
		assert_int_equal(rs->crc_fail, 0);
		assert_packets_counted(rs);
	}
	assert_nacks_counted(ss);
	/* repairs and NCFs within their share of the rate (25 %), and a burst */
	if (out->repair_wire > ss->repair_bps / 8 * (now(n) - t0) / 1000000000ull +
	    2 * 16 * (PSB_MC_HLEN + 1000 + PSB_MC_WIRE_OVERHEAD))
		fail_msg("repairs and NCFs took %llu B in %.1f ms, over %llu bit/s",
			 (unsigned long long)out->repair_wire, (now(n) - t0) / 1e6,
			 (unsigned long long)ss->repair_bps);
	if (nstorm != 0) {
		struct psb_mc_nacker top[4];
		unsigned int k, m = psb_mc_send_nackers(tx(n), top, 4);

		/* a stormer is the busiest, over its budget, with its ids; the honest never are */
		assert_true(m >= 1);
		assert_true(top[0].addr > 2 && top[0].id >= 1000000);
		assert_int_equal(top[0].ids, ids > 1 ? ids : 1);
		/* its receivers' budgets, and their host's: more ids gain it nothing */
		assert_true(ss->nack_over_budget > 0 && top[0].over_budget > 0);
		for (k = 0; k < m; k++)
			if (top[k].addr <= 2)
				assert_int_equal(top[k].over_budget, 0);
	}
	net_fini(n);
}

/*
 * A receiver that NACKs every symbol of every group thousands of times a second, with one
 * id or many, from one address or several, holds back neither the fan-out nor the others.
 */
static void
test_storm(void **state)
{
	static const struct { unsigned int nstorm; uint32_t ids; } cases[] = {
		{ 1, 1 }, { 1, 200 }, { 3, 1 },
	};
	struct storm_run calm, r;
	unsigned int c;
	int i;

	(void)state;
	storm_run(0, 0, &calm);
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		storm_run(cases[c].nstorm, cases[c].ids, &r);
		for (i = 0; i < 2; i++) {
			if (r.completed[i] < 19 || r.latest[i] != 20)
				fail_msg("storm %u: receiver %d holds %llu of 20 whole, ends on %u", c, i,
					 (unsigned long long)r.completed[i], r.latest[i]);
		}
		/* the last version leaves within 10 % of the time it takes without the storm */
		if (r.end_ns * 10 > calm.end_ns * 11)
			fail_msg("storm %u: sent whole at %.1f ms, %.1f ms without it", c,
				 r.end_ns / 1e6, calm.end_ns / 1e6);
	}
}

struct count_out {
	uint64_t pkts, parity, data, ncf;
};

static int
count_emit(void *arg, const uint8_t *hdr, unsigned int hlen, const uint8_t *payload,
		unsigned int plen)
{
	struct count_out *c = arg;

	(void)hlen;
	(void)payload;
	(void)plen;
	c->pkts++;
	c->parity += hdr[3] == PSB_MC_PARITY;
	c->data += hdr[3] == PSB_MC_DATA;
	c->ncf += hdr[3] == PSB_MC_NCF;
	return 0;
}

static void
nack_from(struct psb_mc_send *s, const struct psb_mc_ver *v, uint32_t addr, uint32_t id,
		uint32_t group, uint16_t need, uint64_t missing, uint64_t now_ns)
{
	struct psb_mc_nack_entry e = { .group = group, .need = need, .missing = missing };
	uint8_t buf[PSB_MC_HLEN + PSB_MC_NACK_ENTRY];

	psb_mc_write_nack(buf, PSB_MC_NACK, 0xabcd, v, id, &e, 1);
	psb_mc_send_input(s, buf, sizeof(buf), addr, now_ns);
}

/*
 * A group's repair round sends its symbols once whoever asks and however often; what an
 * entry adds is charged to its receiver, and one receiver out of budget costs the others
 * nothing.
 */
static void
test_repair_rounds(void **state)
{
	struct psb_mc_send_cfg sc = send_cfg();
	static uint8_t data[32000];
	const struct psb_mc_send_stats *ss;
	struct psb_mc_nacker top[4];
	struct count_out c = { 0 };
	struct psb_mc_send *s;
	struct psb_mc_ver v;
	uint64_t t = 1000, parity, charged, t_start;
	unsigned int i;

	(void)state;
	fill(data, sizeof(data), 5);
	sc.rate_bps = 1000000000ull;
	assert_int_equal(psb_mc_send_create(&sc, count_emit, NULL, &c, &s), 0);
	ss = psb_mc_send_stats(s);
	assert_int_equal(ss->repair_bps, 250000000ull);
	assert_int_equal(ss->receiver_bps, 62500000ull);
	assert_int_equal(psb_mc_send_publish(s, 1, data, sizeof(data),
					     psb_mc_crc(0, data, sizeof(data)), t), 0);
	while (psb_mc_send_streaming(s) || c.data < 32) {
		t += 10000;
		psb_mc_send_poll(s, t, 64);
	}
	v = (struct psb_mc_ver){ .vid = 1, .nseg = 32, .total_len = sizeof(data),
		.crc = psb_mc_crc(0, data, sizeof(data)), .group = 16, .seg_size = 1000 };
	/* A opens group 0's round, asks again (nothing added), B raises it by one */
	nack_from(s, &v, 1, 7, 0, 2, 0x3, t);
	assert_int_equal(ss->nack_opened, 1);
	assert_int_equal(c.ncf, 1);
	nack_from(s, &v, 1, 7, 0, 2, 0x3, t);
	nack_from(s, &v, 1, 7, 0, 1, 0x1, t);
	assert_int_equal(ss->nack_merged, 2);
	assert_int_equal(c.ncf, 1);
	nack_from(s, &v, 2, 8, 0, 3, 0x7, t);
	assert_int_equal(ss->nack_raised, 1);
	assert_int_equal(c.ncf, 2);
	/* the round: three parity symbols, once */
	parity = c.parity;
	for (i = 0; i < 100; i++) {
		t += 10000;
		psb_mc_send_poll(s, t, 64);
	}
	assert_int_equal(c.parity - parity, 3);
	assert_int_equal(psb_mc_send_nackers(s, top, 4), 2);
	assert_int_equal(top[0].addr, 1);
	assert_int_equal(top[0].id, 7);
	assert_int_equal(top[0].nacks, 3);
	assert_int_equal(top[0].repair_bytes, 2000);
	assert_int_equal(top[1].repair_bytes, 1000);
	/* the same ask from the same receiver in the next round is charged again */
	nack_from(s, &v, 1, 7, 0, 2, 0x3, t);
	assert_int_equal(ss->nack_opened, 2);
	/* A asks for the whole of both groups again and again: it gets its budget's worth */
	t_start = t;
	for (i = 0; i < 2000; i++) {
		nack_from(s, &v, 1, 7, i % 2, 16, 0xffff, t);
		t += 50000;
		psb_mc_send_poll(s, t, 64);
	}
	psb_mc_send_nackers(s, top, 4);
	assert_int_equal(top[0].addr, 1);
	assert_true(top[0].over_budget > 0);
	charged = top[0].repair_bytes;
	/* a burst (0.1 s at its share) and its share of the time since, symbols on the wire */
	assert_true(charged * (PSB_MC_HLEN + 1000 + PSB_MC_WIRE_OVERHEAD) / 1000 <=
		    ss->receiver_bps / 80 + ss->receiver_bps / 8 * (t - t_start) / 1000000000ull +
		    ss->receiver_bps / 80 / 10);
	assert_true(charged * (PSB_MC_HLEN + 1000 + PSB_MC_WIRE_OVERHEAD) / 1000 >=
		    ss->receiver_bps / 8 * (t - t_start) / 1000000000ull / 2);
	/* B is not held by A's budget: its next ask opens a round */
	for (i = 0; i < 100; i++) {
		t += 10000;
		psb_mc_send_poll(s, t, 64);
	}
	charged = ss->nack_opened + ss->nack_raised;
	nack_from(s, &v, 2, 8, 1, 1, 0x1, t);
	assert_int_equal(ss->nack_opened + ss->nack_raised, charged + 1);
	assert_nacks_counted(ss);
	psb_mc_send_free(s);
}

/* Receivers come and go: the table keeps the ones heard from lately and names the busiest. */
static void
test_nacker_table(void **state)
{
	struct psb_mc_send_cfg sc = send_cfg();
	static uint8_t data[16000];
	const struct psb_mc_send_stats *ss;
	struct psb_mc_nacker top[8];
	struct count_out c = { 0 };
	struct psb_mc_send *s, *bad;
	struct psb_mc_ver v;
	uint64_t t = 1000;
	unsigned int i, m;

	(void)state;
	sc.receivers = 16;
	assert_int_equal(psb_mc_send_create(&sc, count_emit, NULL, &c, &s), 0);
	sc.receivers = PSB_MC_RECEIVERS_MAX + 1;
	assert_int_equal(psb_mc_send_create(&sc, count_emit, NULL, &c, &bad), -EINVAL);
	sc.receivers = 16;
	sc.repair_pct = 101;
	assert_int_equal(psb_mc_send_create(&sc, count_emit, NULL, &c, &bad), -EINVAL);
	assert_null(bad);
	ss = psb_mc_send_stats(s);
	assert_int_equal(psb_mc_send_publish(s, 1, data, sizeof(data), 0, t), 0);
	while (psb_mc_send_streaming(s)) {
		t += 10000;
		psb_mc_send_poll(s, t, 64);
	}
	v = (struct psb_mc_ver){ .vid = 1, .nseg = 16, .total_len = sizeof(data), .crc = 0,
		.group = 16, .seg_size = 1000 };
	/* receiver i NACKs i % 10 + 1 times; 100 of them pass through a table of 16 */
	for (i = 0; i < 100; i++) {
		unsigned int k;

		for (k = 0; k <= i % 10; k++)
			nack_from(s, &v, 100 + i, i, 0, 1, 1, t++);
	}
	assert_true(ss->nackers <= 16);
	assert_int_equal(ss->nackers + ss->nackers_evicted, 100);
	m = psb_mc_send_nackers(s, top, 8);
	assert_true(m >= 1 && m <= 8);
	for (i = 1; i < m; i++)
		assert_true(top[i - 1].nacks >= top[i].nacks);
	/* one of the latest heard 10 times (receiver 99, 89, ...) leads */
	assert_int_equal(top[0].nacks, 10);
	assert_int_equal((top[0].addr - 100) % 10, 9);
	/* five receivers of one host: one line, their NACKs summed, the busiest one named */
	for (i = 0; i < 5; i++) {
		unsigned int k;

		for (k = 0; k <= 10 + i; k++)
			nack_from(s, &v, 7, 50 + i, 0, 1, 1, t++);
	}
	m = psb_mc_send_nackers(s, top, 8);
	assert_int_equal(top[0].addr, 7);
	assert_int_equal(top[0].ids, 5);
	assert_int_equal(top[0].id, 54);
	assert_int_equal(top[0].nacks, 11 + 12 + 13 + 14 + 15);
	assert_nacks_counted(ss);
	psb_mc_send_free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proto_roundtrip),
		cmocka_unit_test(test_proto_malformed),
		cmocka_unit_test(test_crc_known),
		cmocka_unit_test(test_crc_long),
		cmocka_unit_test(test_fec),
		cmocka_unit_test(test_no_loss),
		cmocka_unit_test(test_random_loss),
		cmocka_unit_test(test_bursty_loss),
		cmocka_unit_test(test_per_receiver_loss_reorder_dup),
		cmocka_unit_test(test_parity_repairs_different_losses),
		cmocka_unit_test(test_suppression),
		cmocka_unit_test(test_latest_value),
		cmocka_unit_test(test_dead_receiver),
		cmocka_unit_test(test_late_join),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_session_restart),
		cmocka_unit_test(test_forged_newest),
		cmocka_unit_test(test_track_only),
		cmocka_unit_test(test_adaptive),
		cmocka_unit_test(test_storm),
		cmocka_unit_test(test_repair_rounds),
		cmocka_unit_test(test_nacker_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
