/*
 * Fuzzing of the RoCE parser, its ICRC and the per-QP table: every input is parsed, its ICRC
 * taken, and it is accounted into a small table. Nothing may read past the input, and what
 * the parser says must hold of the frame; the table's totals must add up. Built as a
 * libFuzzer target (fuzz_roce, -Dfuzz=true) and as a deterministic replay over mutated
 * frames of every opcode (fuzz_roce_replay).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "psb_roce.h"
#include "psb_roce_qp.h"
#include "fuzz_check.h"

#define TAB_CAP		16

static struct psb_roce_qptab *g_tab;
static uint64_t g_accepted, g_malformed, g_now;

static void
check_parsed(const uint8_t *data, size_t size, const struct psb_roce_pkt *p)
{
	uint16_t h = psb_roce_opcode_hdrs(p->opcode);

	CHECK(p->kind == PSB_ROCE_V1 || p->kind == PSB_ROCE_V2_IP4 ||
	      p->kind == PSB_ROCE_V2_IP6);
	CHECK(p->net_off >= 14 && p->net_off < p->bth_off);
	CHECK((size_t)p->bth_off + PSB_ROCE_BTH_LEN + PSB_ROCE_ICRC_LEN <= p->end);
	CHECK(p->end <= size);
	CHECK(p->opcode == data[p->bth_off]);
	CHECK(p->dqpn <= 0xffffff && p->psn <= 0xffffff);
	CHECK(p->cls < PSB_ROCE_CLASSES);
	CHECK(p->hdrs == h);
	if (!(h & PSB_ROCE_H_UNKNOWN))
		CHECK((size_t)p->bth_off + PSB_ROCE_BTH_LEN + p->payload + p->pad +
		      PSB_ROCE_ICRC_LEN <= p->end);
	else
		CHECK(p->cls == PSB_ROCE_OTHER);
	CHECK(!p->has_aeth || (h & PSB_ROCE_H_AETH));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifdef PSB_LIBFUZZER
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Where the ICRC is not taken in place, its check below holds the reference to itself. */
int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (psb_roce_icrc_why() != NULL)
		fprintf(stderr, "fuzz_roce: skipped: %s: the in-place ICRC is not fuzzed\n",
			psb_roce_icrc_why());
	return 0;
}
#endif

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct psb_roce_totals *t;
	struct psb_roce_pkt p;
	uint64_t frames = 0;
	unsigned int k;
	int rc, ok;

	if (g_tab == NULL) {
		g_tab = psb_roce_qptab_create(TAB_CAP, 0x5eed);
		CHECK(g_tab != NULL);
	}
	rc = psb_roce_parse(data, size, &p);
	CHECK(rc == 1 || rc == 0 || rc == -EBADMSG);
	if (rc == 1) {
		check_parsed(data, size, &p);
		/* in place (where the CPU can) as over the reference's masked copy */
		CHECK(psb_roce_icrc(data, &p) == psb_roce_icrc_ref(data, &p));
		ok = psb_roce_icrc_ok(data, &p);
		psb_roce_qptab_account(g_tab, &p, (uint32_t)size, ok, g_now++);
		g_accepted++;
	} else if (rc < 0) {
		psb_roce_qptab_malformed(g_tab);
		g_malformed++;
	}
	t = psb_roce_qptab_totals(g_tab);
	for (k = 0; k < PSB_ROCE_KINDS; k++)
		frames += t->frames[k];
	CHECK(frames == g_accepted);
	CHECK(t->malformed == g_malformed);
	CHECK(t->qp_tracked <= TAB_CAP);
	CHECK(t->qp_new - t->qp_evicted == t->qp_tracked);
	return 0;
}

#ifndef PSB_LIBFUZZER
#include "psb_testskip.h"

/* The replay: a frame of every opcode and kind, truncated, with bits flipped and bytes
 * made random, then random bytes behind Ethernet headers that say RoCE. */
static uint32_t g_rng = 0x2545f491u;

static uint32_t
rnd(void)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 17;
	g_rng ^= g_rng << 5;
	return g_rng;
}

int
main(void)
{
	static const uint8_t kinds[] = { PSB_ROCE_V1, PSB_ROCE_V2_IP4, PSB_ROCE_V2_IP6 };
	static uint8_t seed[512], buf[600];
	struct psb_roce_spec s;
	unsigned long inputs = 0, seeds = 0;
	unsigned int k, op, i;
	size_t len;

	if (psb_roce_icrc_why() != NULL)
		tf_skipped("%s: the in-place ICRC is not fuzzed", psb_roce_icrc_why());
	for (k = 0; k < 3; k++) {
		for (op = 0; op < 256; op++) {
			memset(&s, 0, sizeof(s));
			s.kind = kinds[k];
			s.opcode = (uint8_t)op;
			s.vlan = op & 1 ? 0x2007 : 0;
			psb_roce_addr4(s.src, 0xc6120001 + op);
			psb_roce_addr4(s.dst, 0xc6120002);
			s.dqpn = op * 3;
			s.psn = rnd() & 0xffffff;
			s.syndrome = (uint8_t)rnd();
			s.payload = rnd() % 96;
			s.bad_icrc = op % 5 == 0;
			len = psb_roce_build(seed, sizeof(seed), &s);
			if (len == 0)
				continue;
			seeds++;
			LLVMFuzzerTestOneInput(seed, len);
			for (i = 0; i < len; i++, inputs++)
				LLVMFuzzerTestOneInput(seed, i);
			for (i = 0; i < 8 * 80 && i < 8 * len; i++, inputs++) {
				memcpy(buf, seed, len);
				buf[i / 8] ^= (uint8_t)(1u << (i % 8));
				LLVMFuzzerTestOneInput(buf, len);
			}
			for (i = 0; i < 100; i++, inputs++) {
				size_t l = len + (rnd() % 3 == 0 ? rnd() % 64 : 0);

				memcpy(buf, seed, len);
				if (l > len)
					memset(buf + len, (int)rnd(), l - len);
				buf[rnd() % len] = (uint8_t)rnd();
				buf[rnd() % (len < 80 ? len : 80)] = (uint8_t)rnd();
				LLVMFuzzerTestOneInput(buf, l);
			}
		}
	}
	for (i = 0; i < 30000; i++, inputs++) {
		size_t l = rnd() % 160, j;

		for (j = 0; j < l; j++)
			buf[j] = (uint8_t)rnd();
		if (l >= 14) {	/* an Ethertype of RoCE's, or IPv4/IPv6 with UDP to 4791 */
			static const uint16_t types[] = { 0x8915, 0x0800, 0x86dd, 0x8100 };
			uint16_t ty = types[rnd() % 4];

			buf[12] = (uint8_t)(ty >> 8);
			buf[13] = (uint8_t)ty;
			if (ty == 0x0800 && l >= 42) {
				buf[14] = 0x45;
				buf[23] = 17;
				buf[36] = 0x12;
				buf[37] = 0xb7;
			} else if (ty == 0x86dd && l >= 62) {
				buf[14] = 0x60;
				buf[20] = 17;
				buf[56] = 0x12;
				buf[57] = 0xb7;
			} else if (ty == 0x8915 && l >= 54) {
				buf[14] = 0x60;
				buf[20] = 0x1b;
			}
		}
		LLVMFuzzerTestOneInput(buf, l);
	}
	printf("fuzz_roce_replay: %lu inputs from %lu seed frames, %lu RoCE, %lu malformed, "
	       "%llu QPs made\n", inputs, seeds, (unsigned long)g_accepted,
	       (unsigned long)g_malformed,
	       (unsigned long long)psb_roce_qptab_totals(g_tab)->qp_new);
	CHECK(g_accepted > 10000 && g_malformed > 1000);
	psb_roce_qptab_free(g_tab);
	return tf_exit_status(0);
}
#endif
