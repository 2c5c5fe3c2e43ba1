/* cmocka tests of segment reassembly bookkeeping (lib/reasm). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "psb_reasm.h"
#include "psb_testframe.h"

/* Fixed-seed xorshift32: shuffles and loss patterns are the same on every run. */
static uint32_t rng_state;

static uint32_t
rng_next(void)
{
	return tf_xorshift32(&rng_state);
}

static void
fill_pattern(uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 2654435761u >> 13) ^ seed ^ (i >> 9));
}

/* Header of segment idx of a total-byte value cut at seg_size (as a sender builds it). */
static struct psb_hdr
seg_hdr(uint32_t total, uint16_t seg_size, uint32_t idx)
{
	struct psb_hdr h;

	psb_hdr_init(&h, PSB_MSG_PULL_RESP);
	tf_seg(&h, total, idx * seg_size, seg_size);
	assert_int_equal(psb_hdr_check_segment(&h, h.seg_len), 0);
	return h;
}

/*
 * Deliver segments in the order given by seq (indices, repeats allowed) and
 * check the marks: DONE exactly once, on the first arrival of the last new
 * segment. The receiver copies data only on NEW/DONE, and repeats carry junk,
 * so the rebuilt value equals the original only if the marks are right.
 */
static void
deliver(uint32_t total, uint16_t seg_size, const uint32_t *seq, size_t n)
{
	struct psb_reasm r;
	uint8_t *src, *dst, *junk;
	uint8_t *seen;
	uint32_t nseg = psb_seg_count(total, seg_size);
	uint32_t fresh = 0, done = 0;
	size_t i, done_at = 0, last_new = 0;

	src = malloc(total);
	dst = calloc(total, 1);
	junk = malloc(seg_size);
	seen = calloc(nseg, 1);
	assert_non_null(src);
	assert_non_null(dst);
	assert_non_null(junk);
	assert_non_null(seen);
	fill_pattern(src, total, total ^ seg_size);
	memset(junk, 0xa5, seg_size);

	assert_int_equal(psb_reasm_init(&r, total, seg_size), 0);
	assert_int_equal(r.nseg, nseg);
	assert_false(psb_reasm_complete(&r));
	for (i = 0; i < n; i++) {
		struct psb_hdr h = seg_hdr(total, seg_size, seq[i]);
		const uint8_t *payload = seen[seq[i]] ? junk : src + h.offset;
		int want, rc;

		if (seen[seq[i]]) {
			want = PSB_REASM_DUP;
		} else {
			seen[seq[i]] = 1;
			fresh++;
			last_new = i;
			want = fresh == nseg ? PSB_REASM_DONE : PSB_REASM_NEW;
		}
		rc = psb_reasm_mark(&r, &h);
		if (rc != want)
			fail_msg("step %zu seg %u: mark returned %d, want %d", i, seq[i], rc, want);
		if (rc == PSB_REASM_DONE) {
			done++;
			done_at = i;
		}
		if (rc == PSB_REASM_NEW || rc == PSB_REASM_DONE)
			memcpy(dst + h.offset, payload, h.seg_len);
		assert_int_equal(psb_reasm_complete(&r), fresh == nseg);
	}
	assert_int_equal(fresh, nseg);
	assert_int_equal(done, 1);
	assert_int_equal(done_at, last_new);
	assert_int_equal(r.nrecv, nseg);
	assert_true(psb_reasm_complete(&r));
	assert_memory_equal(dst, src, total);
	psb_reasm_fini(&r);
	free(seen);
	free(junk);
	free(dst);
	free(src);
}

static uint32_t *
seq_alloc(size_t n)
{
	uint32_t *s = malloc((n == 0 ? 1 : n) * sizeof(*s));

	assert_non_null(s);
	return s;
}

static void
shuffle(uint32_t *s, size_t n)
{
	size_t i;

	for (i = n; i > 1; i--) {
		size_t j = rng_next() % i;
		uint32_t t = s[i - 1];

		s[i - 1] = s[j];
		s[j] = t;
	}
}

/* Every delivery pattern for one value size. */
static void
deliver_all_orders(uint32_t total, uint16_t seg_size)
{
	uint32_t nseg = psb_seg_count(total, seg_size);
	uint32_t *s = seq_alloc(3 * (size_t)nseg);
	size_t n, i;

	rng_state = 0x9e3779b9u ^ total;

	for (i = 0; i < nseg; i++)
		s[i] = (uint32_t)i;
	deliver(total, seg_size, s, nseg);

	for (i = 0; i < nseg; i++)
		s[i] = nseg - 1 - (uint32_t)i;
	deliver(total, seg_size, s, nseg);

	for (i = 0; i < nseg; i++)
		s[i] = (uint32_t)i;
	shuffle(s, nseg);
	deliver(total, seg_size, s, nseg);

	/* Every segment twice in a row, then all again after completion. */
	for (i = 0; i < nseg; i++) {
		s[2 * i] = (uint32_t)i;
		s[2 * i + 1] = (uint32_t)i;
	}
	for (i = 0; i < nseg; i++)
		s[2 * nseg + i] = (uint32_t)i;
	deliver(total, seg_size, s, 3 * (size_t)nseg);

	/* About a third lost, then the whole value retransmitted in another order. */
	n = 0;
	for (i = 0; i < nseg; i++)
		if (rng_next() % 3 != 0)
			s[n++] = (uint32_t)i;
	for (i = 0; i < nseg; i++)
		s[n + i] = (uint32_t)i;
	shuffle(s + n, nseg);
	deliver(total, seg_size, s, n + nseg);

	free(s);
}

static void
test_small_values(void **state)
{
	deliver_all_orders(4096, 1432);		/* 3 segments, short last */
	deliver_all_orders(4 * 1432, 1432);	/* exact multiple */
	deliver_all_orders(1, 1432);		/* one short segment */
	deliver_all_orders(1432, 1432);		/* one full segment */
	deliver_all_orders(100, 4);		/* 25 tiny segments */
}

/* Up to 128 segments the bitmap lives inside the struct. */
static void
test_inline_bitmap(void **state)
{
	struct psb_reasm r;

	assert_int_equal(psb_reasm_init(&r, 128 * 1432, 1432), 0);
	assert_int_equal(r.nseg, 128);
	assert_ptr_equal(r.bits, r.inline_bits);
	psb_reasm_fini(&r);
	assert_int_equal(psb_reasm_init(&r, 127 * 1432 + 1, 1432), 0);
	assert_int_equal(r.nseg, 128);
	assert_ptr_equal(r.bits, r.inline_bits);
	psb_reasm_fini(&r);

	deliver_all_orders(128 * 1432, 1432);
	deliver_all_orders(64 * 1432 + 10, 1432);	/* crosses the first word */
}

/* Beyond 128 segments the bitmap is allocated. */
static void
test_allocated_bitmap(void **state)
{
	struct psb_reasm r;

	assert_int_equal(psb_reasm_init(&r, 128 * 1432 + 1, 1432), 0);
	assert_int_equal(r.nseg, 129);
	assert_ptr_not_equal(r.bits, r.inline_bits);
	psb_reasm_fini(&r);

	assert_int_equal(psb_reasm_init(&r, 4u << 20, 1432), 0);
	assert_int_equal(r.nseg, (4u << 20) / 1432 + 1);
	assert_ptr_not_equal(r.bits, r.inline_bits);
	psb_reasm_fini(&r);

	deliver_all_orders(128 * 1432 + 1, 1432);
	deliver_all_orders(4u << 20, 1432);
	deliver_all_orders(4u << 20, 8932);
}

/* The largest value: 1 GiB of 4-byte segments, marked at both ends only. */
static void
test_largest_value(void **state)
{
	struct psb_reasm r;
	struct psb_hdr h;

	assert_int_equal(psb_reasm_init(&r, PSB_MAX_VALUE, 4), 0);
	assert_int_equal(r.nseg, PSB_MAX_VALUE / 4);
	h = seg_hdr(PSB_MAX_VALUE, 4, PSB_MAX_VALUE / 4 - 1);
	assert_int_equal(psb_reasm_mark(&r, &h), PSB_REASM_NEW);
	assert_int_equal(psb_reasm_mark(&r, &h), PSB_REASM_DUP);
	h = seg_hdr(PSB_MAX_VALUE, 4, 0);
	assert_int_equal(psb_reasm_mark(&r, &h), PSB_REASM_NEW);
	assert_int_equal(r.nrecv, 2);
	assert_false(psb_reasm_complete(&r));
	psb_reasm_fini(&r);
}

static void
test_zero_length(void **state)
{
	struct psb_reasm r;
	struct psb_hdr h = seg_hdr(0, 1432, 0);

	assert_int_equal(psb_reasm_init(&r, 0, 1432), 0);
	assert_int_equal(r.nseg, 1);
	assert_false(psb_reasm_complete(&r));
	assert_int_equal(psb_reasm_mark(&r, &h), PSB_REASM_DONE);
	assert_true(psb_reasm_complete(&r));
	assert_int_equal(psb_reasm_mark(&r, &h), PSB_REASM_DUP);
	assert_int_equal(psb_reasm_mark(&r, &h), PSB_REASM_DUP);
	psb_reasm_fini(&r);

	/* An empty value needs no stride, and any stride in the message will do. */
	assert_int_equal(psb_reasm_init(&r, 0, 0), 0);
	h.seg_size = 8932;
	assert_int_equal(psb_reasm_mark(&r, &h), PSB_REASM_DONE);
	psb_reasm_fini(&r);
}

static void
test_mismatch(void **state)
{
	struct psb_reasm r;
	struct psb_hdr h;

	assert_int_equal(psb_reasm_init(&r, 4096, 1432), 0);
	h = seg_hdr(4096, 1432, 1);
	assert_int_equal(psb_reasm_mark(&r, &h), PSB_REASM_NEW);

	h = seg_hdr(4097, 1432, 0);		/* other total */
	assert_int_equal(psb_reasm_mark(&r, &h), -EINVAL);
	h = seg_hdr(4096, 1024, 0);		/* other stride */
	assert_int_equal(psb_reasm_mark(&r, &h), -EINVAL);
	h = seg_hdr(0, 1432, 0);		/* empty value */
	assert_int_equal(psb_reasm_mark(&r, &h), -EINVAL);
	h = seg_hdr(4096, 1432, 2);
	h.offset = 4096;			/* past the end */
	assert_int_equal(psb_reasm_mark(&r, &h), -EINVAL);
	h.offset = 0xfffff000;
	assert_int_equal(psb_reasm_mark(&r, &h), -EINVAL);

	/* Rejected marks changed nothing. */
	assert_int_equal(r.nrecv, 1);
	h = seg_hdr(4096, 1432, 0);
	assert_int_equal(psb_reasm_mark(&r, &h), PSB_REASM_NEW);
	h = seg_hdr(4096, 1432, 2);
	assert_int_equal(psb_reasm_mark(&r, &h), PSB_REASM_DONE);
	psb_reasm_fini(&r);

	/* An empty value does not accept a non-empty segment. */
	assert_int_equal(psb_reasm_init(&r, 0, 1432), 0);
	h = seg_hdr(4096, 1432, 0);
	assert_int_equal(psb_reasm_mark(&r, &h), -EINVAL);
	assert_int_equal(r.nrecv, 0);
	psb_reasm_fini(&r);
}

static void
test_init_invalid(void **state)
{
	struct psb_reasm r;

	assert_int_equal(psb_reasm_init(&r, 4096, 0), -EINVAL);
	assert_null(r.bits);
	psb_reasm_fini(&r);
	assert_int_equal(psb_reasm_init(&r, PSB_MAX_VALUE + 1, 1432), -EINVAL);
	psb_reasm_fini(&r);
	assert_int_equal(psb_reasm_init(&r, 0xffffffff, 8932), -EINVAL);
	psb_reasm_fini(&r);

	/* A failed init leaves nothing to mark. */
	{
		struct psb_hdr h = seg_hdr(4096, 1432, 0);

		assert_int_equal(psb_reasm_init(&r, 4096, 0), -EINVAL);
		assert_int_equal(psb_reasm_mark(&r, &h), -EINVAL);
	}
}

static void
test_fini_idempotent(void **state)
{
	struct psb_reasm r;
	struct psb_hdr h = seg_hdr(4u << 20, 1432, 5);

	/* Allocated bitmap: a second fini must not free again (ASan would see it). */
	assert_int_equal(psb_reasm_init(&r, 4u << 20, 1432), 0);
	assert_int_equal(psb_reasm_mark(&r, &h), PSB_REASM_NEW);
	psb_reasm_fini(&r);
	assert_null(r.bits);
	psb_reasm_fini(&r);
	psb_reasm_fini(&r);
	/* A finished tracker accepts nothing. */
	assert_int_equal(psb_reasm_mark(&r, &h), -EINVAL);

	/* Inline bitmap. */
	assert_int_equal(psb_reasm_init(&r, 4096, 1432), 0);
	psb_reasm_fini(&r);
	psb_reasm_fini(&r);
	assert_null(r.bits);

	/* Reuse after fini starts from scratch. */
	assert_int_equal(psb_reasm_init(&r, 4096, 1432), 0);
	h = seg_hdr(4096, 1432, 0);
	assert_int_equal(psb_reasm_mark(&r, &h), PSB_REASM_NEW);
	psb_reasm_fini(&r);
	assert_int_equal(psb_reasm_init(&r, 4096, 1432), 0);
	assert_int_equal(psb_reasm_mark(&r, &h), PSB_REASM_NEW);
	psb_reasm_fini(&r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_values),
		cmocka_unit_test(test_inline_bitmap),
		cmocka_unit_test(test_allocated_bitmap),
		cmocka_unit_test(test_largest_value),
		cmocka_unit_test(test_zero_length),
		cmocka_unit_test(test_mismatch),
		cmocka_unit_test(test_init_invalid),
		cmocka_unit_test(test_fini_idempotent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
