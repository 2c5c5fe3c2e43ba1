/* Unit tests of lib/agg: every kernel matches scalar bit for bit and stays inside [0, n). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "psb_agg.h"
#include "psb_testskip.h"

#define CANARY		16		/* floats of canary on each side of dst */
#define CANARY_BITS	0x7fa5a5a5u	/* a NaN no kernel can produce from finite inputs */
#define MAX_DST_OFF	15

static const size_t src_offs[] = { 0, 1, 2, 3, 5 };
static const size_t dst_offs[] = { 0, 1, 2, 3, 5, MAX_DST_OFF };
static const size_t big_lens[] = { 1023, 1024, 1025, 4099, (1u << 16) + 3 };

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t
rng32(void)
{
	/* xorshift64*: reproducible across runs, so a failure can be replayed */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

/* Finite floats over a wide range of magnitudes, with some zeros and subnormals, so that
 * rounding differs from element to element and any reassociation would show. */
static float
rand_float(void)
{
	uint32_t r = rng32();
	uint32_t bits;
	float f;

	switch (r & 15) {
	case 0:
		bits = (r & 0x80000000u);			/* +-0 */
		break;
	case 1:
		bits = (r & 0x80000000u) | (rng32() & 0x007fffffu);	/* subnormal */
		break;
	default:
		/* exponent within 2^-20 .. 2^20 */
		bits = (r & 0x80000000u) | ((127u - 20u + (rng32() % 41u)) << 23) |
		       (rng32() & 0x007fffffu);
		break;
	}
	memcpy(&f, &bits, sizeof(f));
	return f;
}

static void
fill_floats(void *p, size_t n, bool any_bits)
{
	unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++) {
		uint32_t bits;
		float f;

		if (any_bits) {
			bits = rng32();
			memcpy(b + i * 4, &bits, 4);
		} else {
			f = rand_float();
			memcpy(b + i * 4, &f, 4);
		}
	}
}

/* The definition of the operation, independent of the library. */
static void
ref_op(float *dst, const unsigned char *src, size_t n, bool add)
{
	size_t i;

	for (i = 0; i < n; i++) {
		float x;

		memcpy(&x, src + i * 4, 4);
		if (add)
			dst[i] += x;
		else
			memcpy(&dst[i], &x, 4);
	}
}

/* One case: src at byte offset src_off from a 64-byte boundary, dst at float offset dst_off from
 * one, surrounded by canaries. src is an exact-size heap block so that ASan sees over-reads. */
static void
check_case(psb_agg_add_fn fn, bool add, size_t n, size_t src_off, size_t dst_off)
{
	size_t total = CANARY + MAX_DST_OFF + n + CANARY;
	size_t src_len = src_off + n * 4;
	unsigned char *src = malloc(src_len != 0 ? src_len : 1);
	float *buf = aligned_alloc(64, ((total * sizeof(float)) + 63) & ~(size_t)63);
	float *want = malloc(total * sizeof(float));
	float *dst;
	size_t i;

	assert_non_null(src);
	assert_non_null(buf);
	assert_non_null(want);

	for (i = 0; i < total; i++) {
		uint32_t c = CANARY_BITS;

		memcpy(&buf[i], &c, 4);
	}
	dst = buf + CANARY + dst_off;
	fill_floats(dst, n, !add);
	fill_floats(src + src_off, n, !add);
	memcpy(want, buf, total * sizeof(float));
	ref_op(want + CANARY + dst_off, src + src_off, n, add);

	fn(dst, src + src_off, n);

	if (memcmp(buf, want, total * sizeof(float)) != 0) {
		for (i = 0; i < total; i++)
			if (memcmp(&buf[i], &want[i], 4) != 0)
				break;
		fail_msg("%s n=%zu src_off=%zu dst_off=%zu: first difference at dst[%td]",
			 add ? "add" : "copy", n, src_off, dst_off,
			 (ptrdiff_t)i - (ptrdiff_t)(CANARY + dst_off));
	}
	free(want);
	free(buf);
	free(src);
}

static void
check_impl(psb_agg_add_fn fn, bool add)
{
	size_t n, s, d, b;

	for (n = 0; n <= 300; n++)
		for (s = 0; s < sizeof(src_offs) / sizeof(src_offs[0]); s++)
			for (d = 0; d < sizeof(dst_offs) / sizeof(dst_offs[0]); d++)
				check_case(fn, add, n, src_offs[s], dst_offs[d]);
	for (b = 0; b < sizeof(big_lens) / sizeof(big_lens[0]); b++)
		for (s = 0; s < sizeof(src_offs) / sizeof(src_offs[0]); s++)
			for (d = 0; d < sizeof(dst_offs) / sizeof(dst_offs[0]); d++)
				check_case(fn, add, big_lens[b], src_offs[s], dst_offs[d]);
}

/*
 * The kernels under test: those the CPU runs, and with PSB_AGG naming one, none wider than
 * it (as on a CPU that has no wider one: how this program's skips are tested). Each one
 * left out is a skip, said once with why.
 */
static bool
under_test(int impl)
{
	static bool said[PSB_AGG_IMPL_MAX];
	const char *env = getenv("PSB_AGG");
	int cap = env != NULL ? psb_agg_impl_from_name(env) : -EINVAL;

	if (psb_agg_add_impl(impl) != NULL && (cap < 0 || impl <= cap))
		return true;
	if (!said[impl]) {
		said[impl] = true;
		if (psb_agg_add_impl(impl) == NULL)
			tf_skipped("this CPU (or build) has no %s: its kernels are not tested",
				   psb_agg_impl_name(impl));
		else
			tf_skipped("PSB_AGG=%s: the %s kernels are not tested", env,
				   psb_agg_impl_name(impl));
	}
	return false;
}

static void
test_add_all_impls(void **state)
{
	int impl;

	/* scalar must always be there: it is the reference every other impl is held to */
	assert_non_null(psb_agg_add_impl(PSB_AGG_SCALAR));
	for (impl = 0; impl < PSB_AGG_IMPL_MAX; impl++)
		if (under_test(impl))
			check_impl(psb_agg_add_impl(impl), true);
}

static void
test_copy_all_impls(void **state)
{
	int impl;

	for (impl = 0; impl < PSB_AGG_IMPL_MAX; impl++) {
		psb_agg_add_fn fn = psb_agg_copy_impl(impl);

		assert_true((fn == NULL) == (psb_agg_add_impl(impl) == NULL));
		if (under_test(impl))
			check_impl(fn, false);
	}
}

/* Maps [guard page][pages][guard page] and returns the first byte after the leading guard. */
static unsigned char *
map_guarded(size_t len, size_t *map_len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t body = (len + pg - 1) / pg * pg;
	unsigned char *m;

	*map_len = body + 2 * pg;
	m = mmap(NULL, *map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	assert_int_equal(mprotect(m, pg, PROT_NONE), 0);
	assert_int_equal(mprotect(m + pg + body, pg, PROT_NONE), 0);
	return m + pg;
}

static void
guard_case(psb_agg_add_fn fn, bool add, float *dst, unsigned char *src, size_t n, float *want)
{
	/* refilled per call: src windows overlap at different byte offsets, and stale bytes read
	 * at another offset could form NaNs, whose payloads are not part of the contract */
	fill_floats(src, n, !add);
	memcpy(want, dst, n * 4);
	ref_op(want, src, n, add);
	fn(dst, src, n);
	assert_memory_equal(dst, want, n * 4);
}

/* Arrays that end right before (or start right after) an unmapped page: any access outside
 * [0, n), including a full-width vector load meant to be masked, faults. Canaries cannot see
 * reads; this can, with or without ASan. */
static void
test_guard_pages(void **state)
{
	const size_t max_n = (1u << 12) + 37;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t dlen, slen, n, k;
	unsigned char *dmap = map_guarded(max_n * 4 + 128, &dlen);
	unsigned char *smap = map_guarded(max_n * 4 + 64, &slen);
	unsigned char *dend = dmap + dlen - 2 * pg;
	unsigned char *send = smap + slen - 2 * pg;
	float *want = malloc(max_n * 4);
	int impl, op;

	assert_non_null(want);
	fill_floats(dmap, (dlen - 2 * pg) / 4, false);

	for (impl = 0; impl < PSB_AGG_IMPL_MAX; impl++) {
		for (op = 0; op < 2 && under_test(impl); op++) {
			psb_agg_add_fn fn = op == 0 ? psb_agg_add_impl(impl) :
						      psb_agg_copy_impl(impl);

			for (n = 0; n <= max_n; n += n < 300 ? 1 : 97) {
				/* src ends at the trailing guard. dst ends k floats before it: at
				 * k == 0 a dst overrun faults, and the other k move the dst
				 * alignment, hence the length of the tail, against src's end. */
				for (k = 0; k < 16; k++)
					guard_case(fn, op == 0,
						   (float *)(void *)(dend - (n + k) * 4),
						   send - n * 4, n, want);
				/* both start at the leading guard, dst at every float offset of a
				 * cache line */
				for (k = 0; k < 16; k++)
					guard_case(fn, op == 0, (float *)(void *)(dmap + k * 4),
						   smap + (k & 3), n, want);
			}
		}
	}
	free(want);
	munmap(dmap - pg, dlen);
	munmap(smap - pg, slen);
}

static void
test_select_and_dispatch(void **state)
{
	enum psb_agg_impl best = psb_agg_best();
	size_t n = 1000 + 13;
	unsigned char *src = malloc(n * 4 + 3);
	float *dst = malloc(n * sizeof(float));
	float *want = malloc(n * sizeof(float));
	int impl;

	assert_non_null(src);
	assert_non_null(dst);
	assert_non_null(want);
	assert_non_null(psb_agg_add_impl(best));
	for (impl = best + 1; impl < PSB_AGG_IMPL_MAX; impl++)
		assert_null(psb_agg_add_impl(impl));

	for (impl = 0; impl < PSB_AGG_IMPL_MAX; impl++) {
		int rc = psb_agg_select(impl);

		if (psb_agg_add_impl(impl) == NULL) {
			assert_int_equal(rc, -ENOTSUP);
			continue;
		}
		assert_int_equal(rc, 0);
		if (!under_test(impl))
			continue;
		assert_int_equal(psb_agg_current(), impl);

		fill_floats(dst, n, false);
		fill_floats(src + 3, n, false);
		memcpy(want, dst, n * 4);
		ref_op(want, src + 3, n, true);
		psb_agg_add(dst, src + 3, n);
		assert_memory_equal(dst, want, n * 4);

		fill_floats(src + 3, n, true);
		psb_agg_copy(dst, src + 3, n);
		assert_memory_equal(dst, src + 3, n * 4);

		/* n == 0 with NULL pointers must be a no-op, not a crash */
		psb_agg_add(NULL, NULL, 0);
		psb_agg_copy(NULL, NULL, 0);
	}

	assert_int_equal(psb_agg_select(PSB_AGG_IMPL_MAX), -EINVAL);
	assert_int_equal(psb_agg_select((enum psb_agg_impl)-1), -EINVAL);
	assert_null(psb_agg_add_impl(PSB_AGG_IMPL_MAX));
	assert_null(psb_agg_copy_impl((enum psb_agg_impl)-1));

	assert_int_equal(psb_agg_select(best), 0);
	assert_int_equal(psb_agg_current(), best);
	free(want);
	free(dst);
	free(src);
}

static void
test_names(void **state)
{
	int impl;

	assert_string_equal(psb_agg_impl_name(PSB_AGG_SCALAR), "scalar");
	assert_string_equal(psb_agg_impl_name(PSB_AGG_AVX2), "avx2");
	assert_string_equal(psb_agg_impl_name(PSB_AGG_AVX512), "avx512");
	assert_null(psb_agg_impl_name(PSB_AGG_IMPL_MAX));
	assert_null(psb_agg_impl_name((enum psb_agg_impl)-1));
	for (impl = 0; impl < PSB_AGG_IMPL_MAX; impl++)
		assert_int_equal(psb_agg_impl_from_name(psb_agg_impl_name(impl)), impl);
	assert_int_equal(psb_agg_impl_from_name("AVX512"), PSB_AGG_AVX512);
	assert_int_equal(psb_agg_impl_from_name("avx"), -EINVAL);
	assert_int_equal(psb_agg_impl_from_name("avx2 "), -EINVAL);
	assert_int_equal(psb_agg_impl_from_name(""), -EINVAL);
	assert_int_equal(psb_agg_impl_from_name(NULL), -EINVAL);
}

/* The choice from PSB_AGG is made once per process, so each setting runs in a fresh copy of
 * this program (see main) which prints what it got. */
static char *self_path;

static void
child_current(const char *env, char *out, size_t outlen)
{
	int fds[2];
	pid_t pid;
	ssize_t len;
	size_t got = 0;
	int status;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(fds[1], STDOUT_FILENO);
		if (devnull >= 0)
			dup2(devnull, STDERR_FILENO);
		close(fds[0]);
		if (env != NULL)
			setenv("PSB_AGG", env, 1);
		else
			unsetenv("PSB_AGG");
		execl(self_path, self_path, "--print-current", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	while (got + 1 < outlen && (len = read(fds[0], out + got, outlen - 1 - got)) > 0)
		got += (size_t)len;
	out[got] = '\0';
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	if (got > 0 && out[got - 1] == '\n')
		out[got - 1] = '\0';
}

static void
test_env_override(void **state)
{
	const char *best = psb_agg_impl_name(psb_agg_best());
	char out[64];
	int impl;

	child_current(NULL, out, sizeof(out));
	assert_string_equal(out, best);
	child_current("", out, sizeof(out));
	assert_string_equal(out, best);
	child_current("no-such-kernel", out, sizeof(out));
	assert_string_equal(out, best);
	for (impl = 0; impl < PSB_AGG_IMPL_MAX; impl++) {
		const char *name = psb_agg_impl_name(impl);

		child_current(name, out, sizeof(out));
		/* unsupported ones fall back to the best */
		assert_string_equal(out, psb_agg_add_impl(impl) != NULL ? name : best);
	}
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_add_all_impls),
		cmocka_unit_test(test_copy_all_impls),
		cmocka_unit_test(test_guard_pages),
		cmocka_unit_test(test_select_and_dispatch),
		cmocka_unit_test(test_env_override),
	};
	int rc;

	if (argc == 2 && strcmp(argv[1], "--print-current") == 0) {
		printf("%s\n", psb_agg_impl_name(psb_agg_current()));
		return 0;
	}
	self_path = realpath("/proc/self/exe", NULL);
	if (self_path == NULL) {
		perror("realpath /proc/self/exe");
		return 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);

	free(self_path);
	return tf_exit_status(rc);
}
