/*
 * The client's memif parser (lib/client psb_memif): control messages and ring descriptors
 * as a hostile server writes them. A message that decodes encodes back to what decodes the
 * same; a descriptor the check takes lies within the slot's buffer; ring counters move by
 * at most what was given.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_check.h"
#include "psb_memif.h"

#define BUF_SIZE	9216u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct psb_memif_msg m, again;
	struct psb_memif_desc d;
	uint8_t buf[PSB_MEMIF_MSG_LEN];
	const char *why;
	uint8_t log2 = 10;
	uint16_t from, to, room;
	int rc, moved;

	rc = psb_memif_msg_decode(&m, data, size);
	CHECK(rc == 0 || rc == -EMSGSIZE || rc == -EPROTO);
	if (rc == 0) {
		CHECK(psb_memif_msg_encode(buf, &m) == 0);
		CHECK(psb_memif_msg_decode(&again, buf, sizeof(buf)) == 0);
		CHECK(memcmp(&m, &again, sizeof(m)) == 0);
		if (psb_memif_hello_check(&m, &log2, &why) == 0)
			CHECK(log2 >= 1 && log2 <= 10);
		else
			CHECK(why != NULL);
	}
	/* the same bytes as a descriptor and ring counters */
	if (size < 22)
		return 0;
	memcpy(&d.flags, data, 2);
	memcpy(&d.region, data + 2, 2);
	memcpy(&d.length, data + 4, 4);
	memcpy(&d.offset, data + 8, 4);
	memcpy(&d.metadata, data + 12, 4);
	rc = psb_memif_desc_check(&d, 0, 4096, BUF_SIZE);
	CHECK(rc >= PSB_MEMIF_BAD_NONE && rc < PSB_MEMIF_BAD_MAX);
	if (rc == PSB_MEMIF_BAD_NONE)
		CHECK(d.region == 0 && d.offset == 4096 && d.length >= 1 && d.length <= BUF_SIZE &&
		      !(d.flags & PSB_MEMIF_DESC_NEXT));
	memcpy(&from, data + 16, 2);
	memcpy(&to, data + 18, 2);
	memcpy(&room, data + 20, 2);
	moved = psb_memif_advance(from, to, room);
	CHECK(moved == -1 || (moved <= room && (uint16_t)(from + moved) == to));
	return 0;
}

#ifndef PSB_LIBFUZZER
/* The replay: a message of each type, truncated, with bits flipped and random bytes. */
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static uint32_t
rnd(void)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return (uint32_t)(g_rng >> 32);
}

int
main(void)
{
	uint8_t seed[PSB_MEMIF_MSG_LEN], buf[PSB_MEMIF_MSG_LEN + 8];
	struct psb_memif_msg m;
	unsigned long inputs = 0;
	unsigned int t, i;

	for (t = PSB_MEMIF_MSG_ACK; t < PSB_MEMIF_MSG_MAX; t++) {
		memset(&m, 0, sizeof(m));
		m.type = (uint16_t)t;
		m.u.hello.min_version = PSB_MEMIF_VERSION;
		m.u.hello.max_version = PSB_MEMIF_VERSION;
		m.u.hello.max_log2_ring_size = 14;
		CHECK(psb_memif_msg_encode(seed, &m) == 0);
		for (i = 0; i <= sizeof(seed); i++, inputs++)
			LLVMFuzzerTestOneInput(seed, i);
		for (i = 0; i < 8 * sizeof(seed); i++, inputs++) {
			memcpy(buf, seed, sizeof(seed));
			buf[i / 8] ^= (uint8_t)(1u << (i % 8));
			LLVMFuzzerTestOneInput(buf, sizeof(seed));
		}
		for (i = 0; i < 2000; i++, inputs++) {
			memcpy(buf, seed, sizeof(seed));
			buf[2 + rnd() % 60] = (uint8_t)rnd();
			buf[rnd() % sizeof(seed)] = (uint8_t)rnd();
			LLVMFuzzerTestOneInput(buf, sizeof(seed));
		}
	}
	for (i = 0; i < 50000; i++, inputs++) {
		size_t l = rnd() % sizeof(buf), k;

		for (k = 0; k < l; k++)
			buf[k] = (uint8_t)rnd();
		if (rnd() % 2)
			l = PSB_MEMIF_MSG_LEN;
		if (rnd() % 2) {
			buf[0] = (uint8_t)(rnd() % 10);
			buf[1] = 0;
		}
		LLVMFuzzerTestOneInput(buf, l);
	}
	printf("fuzz_memif_replay: %lu inputs, no check failed\n", inputs);
	return 0;
}
#endif
