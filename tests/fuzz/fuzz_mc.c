/*
 * Fuzzing of psb's reliable multicast: every input is parsed, then fed to two receivers
 * (one holding bytes, one tracking only) that are part-way through a version, and to a
 * sender that streams and repairs one. Nothing may crash, and what the parser accepts, the
 * budgets and the counters must stay consistent. Built as a libFuzzer target (fuzz_mc,
 * -Dfuzz=true) and as a deterministic replay over mutated seed packets (fuzz_mc_replay).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "psb_mc_proto.h"
#include "psb_mc_rand.h"
#include "psb_mc_recv.h"
#include "psb_mc_send.h"
#include "fuzz_check.h"


#define BUDGET		(256u << 10)
#define MAX_SEEDS	512

static struct psb_mc_recv *g_rx[2];
static struct psb_mc_send *g_tx;
static uint8_t g_version[20000];
static uint64_t g_now = 1;
static int g_ready;

/* Packets the sender makes, kept as seeds (the replay mutates them). */
static uint8_t *g_seed[MAX_SEEDS];
static size_t g_seed_len[MAX_SEEDS];
static unsigned int g_nseeds, g_feed;

static void
keep(const uint8_t *buf, size_t len)
{
	if (g_nseeds == MAX_SEEDS)
		return;
	g_seed[g_nseeds] = malloc(len);
	CHECK(g_seed[g_nseeds] != NULL);
	memcpy(g_seed[g_nseeds], buf, len);
	g_seed_len[g_nseeds++] = len;
}

static int
emit(void *arg, const uint8_t *hdr, unsigned int hlen, const uint8_t *payload,
		unsigned int plen)
{
	uint8_t pkt[PSB_MC_HLEN + PSB_MC_SEG_MAX];
	unsigned int i;

	(void)arg;
	memcpy(pkt, hdr, hlen);
	if (plen != 0)
		memcpy(pkt + hlen, payload, plen);
	keep(pkt, hlen + plen);
	/* while setting up, the receivers get every other packet: part-way, with losses */
	if (g_feed && g_nseeds % 2 == 0)
		for (i = 0; i < 2; i++)
			psb_mc_recv_input(g_rx[i], pkt, hlen + plen, g_now);
	return 0;
}

static void
nack(void *arg, const uint8_t *buf, size_t len)
{
	(void)arg;
	keep(buf, len);
	if (g_feed)
		psb_mc_send_input(g_tx, buf, len, 1, g_now);
}

static void
setup(void)
{
	struct psb_mc_send_cfg sc = {
		.session = 77, .seg_size = 1000, .group = 8, .parity = 16, .proactive = 1,
		.heartbeat_ns = 1000, .nack_hold_ns = 10,
		.receivers = 16,	/* two sets: the inputs' addresses make it evict */
	};
	struct psb_mc_recv_cfg rc = {
		.budget = BUDGET, .max_version = 64u << 10, .backoff_ns = 100, .retry_ns = 1000,
		.reorder = 4, .vid_window = 100, .session_idle_ns = 1000000000ull,
	};
	unsigned int i;

	CHECK(psb_mc_send_create(&sc, emit, NULL, NULL, &g_tx) == 0);
	for (i = 0; i < 2; i++) {
		rc.id = i + 1;
		rc.track_only = (int)i;
		CHECK(psb_mc_recv_create(&rc, nack, NULL, &g_rx[i]) == 0);
	}
	for (i = 0; i < sizeof(g_version); i++)
		g_version[i] = (uint8_t)(i * 7 + (i >> 9));
	g_feed = 1;
	CHECK(psb_mc_send_publish(g_tx, 3, g_version, sizeof(g_version),
		psb_mc_crc(0, g_version, sizeof(g_version)), g_now) == 0);
	/* stream it, let the receivers ask, and repair some of it */
	for (i = 0; i < 200; i++, g_now += 100) {
		psb_mc_send_poll(g_tx, g_now, 4);
		psb_mc_recv_poll(g_rx[0], g_now);
		psb_mc_recv_poll(g_rx[1], g_now);
	}
	g_feed = 0;
	g_ready = 1;
}

static void
check_parsed(const uint8_t *data, size_t size)
{
	struct psb_mc_pkt p;
	unsigned int i;
	int rc = psb_mc_parse(data, size, &p);

	if (rc < 0) {
		CHECK(-rc > 0 && -rc < PSB_MC_BAD_MAX);
		return;
	}
	CHECK(psb_mc_ver_check(&p.ver) == 0);
	switch (rc) {
	case PSB_MC_DATA:
		CHECK(p.a < p.ver.nseg && p.len == psb_mc_seg_len(&p.ver, p.a));
		CHECK(size == PSB_MC_HLEN + (size_t)p.len);
		break;
	case PSB_MC_PARITY:
		CHECK(p.a < psb_mc_ngroups(&p.ver) && p.b < PSB_MC_PARITY_MAX);
		CHECK(size == PSB_MC_HLEN + (size_t)p.ver.seg_size);
		break;
	case PSB_MC_HEARTBEAT:
		CHECK(p.a <= p.ver.nseg);
		break;
	case PSB_MC_NACK:
	case PSB_MC_NCF:
		CHECK(p.b >= 1 && p.b <= PSB_MC_NACK_MAX);
		CHECK(size == PSB_MC_HLEN + (size_t)p.b * PSB_MC_NACK_ENTRY);
		for (i = 0; i < p.b; i++) {
			struct psb_mc_nack_entry e;

			psb_mc_nack_entry(&p, i, &e);
			CHECK(e.group < psb_mc_ngroups(&p.ver) && e.need >= 1 &&
			      e.need <= psb_mc_group_k(&p.ver, e.group));
		}
		break;
	default:
		CHECK(0);
	}
}

/* Every packet the sender was handed, and every entry of the NACKs it took, counted once. */
static void
check_sender(void)
{
	const struct psb_mc_send_stats *ss = psb_mc_send_stats(g_tx);
	struct psb_mc_nacker top[4];
	unsigned int k, n;

	CHECK(ss->nack_pkts == ss->nacks + ss->nack_forged + ss->nack_superseded +
	      psb_mc_bad_total(ss->nack_bad));
	CHECK(ss->nack_entries == ss->nack_premature + ss->nack_over_budget + ss->nack_merged +
	      ss->nack_raised + ss->nack_opened);
	CHECK(ss->nackers <= 16);
	n = psb_mc_send_nackers(g_tx, top, 4);
	CHECK(n <= ss->nackers);
	for (k = 1; k < n; k++)
		CHECK(top[k - 1].nacks >= top[k].nacks);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct psb_mc_recv_stats *rs;
	unsigned int i;

	if (!g_ready)
		setup();
	check_parsed(data, size);
	g_now += 50;
	for (i = 0; i < 2; i++) {
		psb_mc_recv_input(g_rx[i], data, size, g_now);
		psb_mc_recv_poll(g_rx[i], g_now);
		rs = psb_mc_recv_stats(g_rx[i]);
		CHECK(i == 1 ? rs->held_bytes == 0 : rs->held_bytes <= BUDGET);
	}
	/* from one of 64 addresses, by the input's last byte: receivers come and go */
	psb_mc_send_input(g_tx, data, size, size != 0 ? data[size - 1] & 63 : 0, g_now);
	psb_mc_send_poll(g_tx, g_now, 4);
	check_sender();
	return 0;
}

#ifndef PSB_LIBFUZZER
/* The replay: every seed, truncated, with bits flipped and fields made random. */
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static uint32_t
rnd(void)
{
	return (uint32_t)(psb_mc_rand(&g_rng) >> 32);
}

int
main(void)
{
	static uint8_t buf[PSB_MC_HLEN + PSB_MC_NACK_MAX * PSB_MC_NACK_ENTRY + PSB_MC_SEG_MAX];
	unsigned long inputs = 0;
	unsigned int s, i, n;

	setup();
	n = g_nseeds;
	for (s = 0; s < n; s++) {
		size_t len = g_seed_len[s];

		LLVMFuzzerTestOneInput(g_seed[s], len);
		for (i = 0; i <= len && i < 2 * PSB_MC_HLEN; i++, inputs++)
			LLVMFuzzerTestOneInput(g_seed[s], i);
		for (i = 0; i < 8 * 2 * PSB_MC_HLEN && i < 8 * len; i++, inputs++) {
			memcpy(buf, g_seed[s], len);
			buf[i / 8] ^= (uint8_t)(1u << (i % 8));
			LLVMFuzzerTestOneInput(buf, len);
		}
		for (i = 0; i < 200; i++, inputs++) {
			size_t l = len + (rnd() % 3 == 0 ? rnd() % 64 : 0);

			memcpy(buf, g_seed[s], len);
			buf[rnd() % (len < 56 ? len : 56)] = (uint8_t)rnd();
			buf[rnd() % (len < 56 ? len : 56)] = (uint8_t)rnd();
			LLVMFuzzerTestOneInput(buf, l);
		}
	}
	for (i = 0; i < 20000; i++, inputs++) {
		size_t l = rnd() % 200;

		for (s = 0; s < l; s++)
			buf[s] = (uint8_t)rnd();
		if (l >= 4 && rnd() % 2) {
			buf[0] = 0x50;
			buf[1] = 0x4d;
			buf[2] = PSB_MC_WIRE_VERSION;
			buf[3] = (uint8_t)(rnd() % 6);
		}
		LLVMFuzzerTestOneInput(buf, l);
	}
	printf("fuzz_mc_replay: %u seeds, %lu inputs, no check failed\n", n, inputs);
	for (s = 0; s < g_nseeds; s++)
		free(g_seed[s]);
	psb_mc_send_free(g_tx);
	psb_mc_recv_free(g_rx[0]);
	psb_mc_recv_free(g_rx[1]);
	return 0;
}
#endif
