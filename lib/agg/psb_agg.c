/* psb aggregation kernels (scalar, AVX2, AVX-512F) and the run-time dispatcher over them. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if defined(__x86_64__) || defined(__i386__)
#define AGG_X86 1
#include <immintrin.h>
#endif

#include "psb_agg.h"

#define AGG_LIKELY(x)	__builtin_expect(!!(x), 1)

/* memcpy is the defined way to load from a misaligned address; it compiles to one load. */
static inline float
agg_ldf(const unsigned char *p)
{
	float f;

	memcpy(&f, p, sizeof(f));
	return f;
}

/* One element, for heads and tails; add is a constant once inlined. */
static inline void
agg_elem(float *d, const unsigned char *p, const bool add)
{
	if (add)
		*d += agg_ldf(p);
	else
		memcpy(d, p, sizeof(*d));
}

static void
agg_add_scalar(float *dst, const void *src, size_t n)
{
	const unsigned char *s = src;
	size_t i;

	for (i = 0; i < n; i++)
		dst[i] += agg_ldf(s + i * sizeof(float));
}

static void
agg_copy_scalar(float *dst, const void *src, size_t n)
{
	/* memcpy with a NULL pointer is undefined even for 0 bytes */
	if (n != 0)
		memcpy(dst, src, n * sizeof(float));
}

#ifdef AGG_X86

/*
 * Every vector loop below does exactly one add of dst[i] and src[i] per element, like the
 * scalar kernel, and never sums across lanes or iterations: that is what keeps all
 * implementations bit-identical. Do not "optimise" this into anything that reassociates.
 */

/* A float vector with alignment 1: dereferencing it is defined for any src address, where
 * casting src to float * would not be, and it still compiles to vmovups. */
typedef float agg_v8u __attribute__((vector_size(32), aligned(1), may_alias));

static inline __attribute__((always_inline, target("avx2"))) __m256
agg_ld8(const unsigned char *p)
{
	return *(const agg_v8u *)p;
}

static inline __attribute__((always_inline, target("avx2"))) void
agg_avx2(float *dst, const unsigned char *s, size_t n, const bool add)
{
	size_t i = 0;

	/* Aligning dst leaves src as the only side whose loads can split cache lines; src
	 * alignment is up to the packet layout. */
	for (; i < n && ((uintptr_t)(dst + i) & 31) != 0; i++)
		agg_elem(dst + i, s + i * sizeof(float), add);

	/* Four independent vectors per iteration keep enough loads in flight to reach memory
	 * bandwidth. */
	for (; i + 32 <= n; i += 32) {
		const unsigned char *p = s + i * sizeof(float);
		__m256 x0 = agg_ld8(p);
		__m256 x1 = agg_ld8(p + 32);
		__m256 x2 = agg_ld8(p + 64);
		__m256 x3 = agg_ld8(p + 96);

		if (add) {
			x0 = _mm256_add_ps(_mm256_loadu_ps(dst + i), x0);
			x1 = _mm256_add_ps(_mm256_loadu_ps(dst + i + 8), x1);
			x2 = _mm256_add_ps(_mm256_loadu_ps(dst + i + 16), x2);
			x3 = _mm256_add_ps(_mm256_loadu_ps(dst + i + 24), x3);
		}
		_mm256_storeu_ps(dst + i, x0);
		_mm256_storeu_ps(dst + i + 8, x1);
		_mm256_storeu_ps(dst + i + 16, x2);
		_mm256_storeu_ps(dst + i + 24, x3);
	}
	for (; i + 8 <= n; i += 8) {
		__m256 x = agg_ld8(s + i * sizeof(float));

		if (add)
			x = _mm256_add_ps(_mm256_loadu_ps(dst + i), x);
		_mm256_storeu_ps(dst + i, x);
	}
	for (; i < n; i++)
		agg_elem(dst + i, s + i * sizeof(float), add);
}

static __attribute__((target("avx2"))) void
agg_add_avx2(float *dst, const void *src, size_t n)
{
	agg_avx2(dst, src, n, true);
}

static __attribute__((target("avx2"))) void
agg_copy_avx2(float *dst, const void *src, size_t n)
{
	agg_avx2(dst, src, n, false);
}

/* k < 16 elements under a mask: masked-off lanes are neither read nor written, so this never
 * touches memory past the end even when a full vector would cross into an unmapped page. */
static inline __attribute__((always_inline, target("avx512f"))) void
agg_avx512_part(float *dst, const unsigned char *s, size_t k, const bool add)
{
	const __mmask16 m = (__mmask16)((1u << k) - 1);
	__m512 x = _mm512_maskz_loadu_ps(m, s);

	if (add)
		x = _mm512_add_ps(_mm512_maskz_loadu_ps(m, dst), x);
	_mm512_mask_storeu_ps(dst, m, x);
}

static inline __attribute__((always_inline, target("avx512f"))) void
agg_avx512(float *dst, const unsigned char *s, size_t n, const bool add)
{
	/* A 64-byte access that is not 64-byte aligned always splits a cache line, so peel dst up
	 * to the next line first. */
	size_t i = ((64 - ((uintptr_t)dst & 63)) & 63) / sizeof(float);

	if (i > n)
		i = n;
	if (i != 0)
		agg_avx512_part(dst, s, i, add);

	for (; i + 64 <= n; i += 64) {
		const unsigned char *p = s + i * sizeof(float);
		__m512 x0 = _mm512_loadu_ps(p);
		__m512 x1 = _mm512_loadu_ps(p + 64);
		__m512 x2 = _mm512_loadu_ps(p + 128);
		__m512 x3 = _mm512_loadu_ps(p + 192);

		if (add) {
			x0 = _mm512_add_ps(_mm512_loadu_ps(dst + i), x0);
			x1 = _mm512_add_ps(_mm512_loadu_ps(dst + i + 16), x1);
			x2 = _mm512_add_ps(_mm512_loadu_ps(dst + i + 32), x2);
			x3 = _mm512_add_ps(_mm512_loadu_ps(dst + i + 48), x3);
		}
		_mm512_storeu_ps(dst + i, x0);
		_mm512_storeu_ps(dst + i + 16, x1);
		_mm512_storeu_ps(dst + i + 32, x2);
		_mm512_storeu_ps(dst + i + 48, x3);
	}
	for (; i + 16 <= n; i += 16) {
		__m512 x = _mm512_loadu_ps(s + i * sizeof(float));

		if (add)
			x = _mm512_add_ps(_mm512_loadu_ps(dst + i), x);
		_mm512_storeu_ps(dst + i, x);
	}
	if (i < n)
		agg_avx512_part(dst + i, s + i * sizeof(float), n - i, add);
}

static __attribute__((target("avx512f"))) void
agg_add_avx512(float *dst, const void *src, size_t n)
{
	agg_avx512(dst, src, n, true);
}

static __attribute__((target("avx512f"))) void
agg_copy_avx512(float *dst, const void *src, size_t n)
{
	agg_avx512(dst, src, n, false);
}

#endif /* AGG_X86 */

struct agg_kernel {
	const char *name;
	psb_agg_add_fn add;	/* NULL: not compiled for this architecture */
	psb_agg_add_fn copy;
};

static const struct agg_kernel agg_kernels[PSB_AGG_IMPL_MAX] = {
	[PSB_AGG_SCALAR] = { "scalar", agg_add_scalar, agg_copy_scalar },
#ifdef AGG_X86
	[PSB_AGG_AVX2] = { "avx2", agg_add_avx2, agg_copy_avx2 },
	[PSB_AGG_AVX512] = { "avx512", agg_add_avx512, agg_copy_avx512 },
#else
	[PSB_AGG_AVX2] = { "avx2", NULL, NULL },
	[PSB_AGG_AVX512] = { "avx512", NULL, NULL },
#endif
};

/* The enum psb_agg_impl in use, or -1 until the first call resolves it. An int rather than a
 * function pointer so that add and copy can never disagree. */
static int agg_cur = -1;

static bool
agg_valid(enum psb_agg_impl impl)
{
	return (unsigned int)impl < PSB_AGG_IMPL_MAX;
}

static bool
agg_supported(enum psb_agg_impl impl)
{
	if (!agg_valid(impl) || agg_kernels[impl].add == NULL)
		return false;
	switch (impl) {
	case PSB_AGG_SCALAR:
		return true;
#ifdef AGG_X86
	/* __builtin_cpu_supports also checks that the OS saves the wider registers (XCR0). */
	case PSB_AGG_AVX2:
		__builtin_cpu_init();
		return __builtin_cpu_supports("avx2");
	case PSB_AGG_AVX512:
		__builtin_cpu_init();
		return __builtin_cpu_supports("avx512f");
#endif
	default:
		return false;
	}
}

enum psb_agg_impl
psb_agg_best(void)
{
	int i;

	for (i = PSB_AGG_IMPL_MAX - 1; i > PSB_AGG_SCALAR; i--)
		if (agg_supported(i))
			return i;
	return PSB_AGG_SCALAR;
}

static enum psb_agg_impl
agg_default(void)
{
	enum psb_agg_impl best = psb_agg_best();
	const char *env = getenv("PSB_AGG");
	int want;

	if (env == NULL || env[0] == '\0')
		return best;
	want = psb_agg_impl_from_name(env);
	if (want < 0) {
		fprintf(stderr, "psb_agg: PSB_AGG=%s is not scalar, avx2 or avx512; using %s\n",
			env, agg_kernels[best].name);
		return best;
	}
	if (!agg_supported(want)) {
		fprintf(stderr, "psb_agg: PSB_AGG=%s is not supported on this CPU; using %s\n",
			env, agg_kernels[best].name);
		return best;
	}
	return want;
}

static __attribute__((noinline)) enum psb_agg_impl
agg_resolve_slow(void)
{
	int expected = -1;
	int want = agg_default();

	/* A racing first use or psb_agg_select() may have got there first; theirs stands. */
	if (__atomic_compare_exchange_n(&agg_cur, &expected, want, false, __ATOMIC_RELAXED,
					__ATOMIC_RELAXED))
		return want;
	return expected;
}

/* Relaxed is enough: the value indexes a constant table, nothing else is published with it. */
static inline enum psb_agg_impl
agg_resolve(void)
{
	int cur = __atomic_load_n(&agg_cur, __ATOMIC_RELAXED);

	if (AGG_LIKELY(cur >= 0))
		return cur;
	return agg_resolve_slow();
}

void
psb_agg_add(float *dst, const void *src, size_t n)
{
	agg_kernels[agg_resolve()].add(dst, src, n);
}

void
psb_agg_copy(float *dst, const void *src, size_t n)
{
	agg_kernels[agg_resolve()].copy(dst, src, n);
}

int
psb_agg_select(enum psb_agg_impl impl)
{
	if (!agg_valid(impl))
		return -EINVAL;
	if (!agg_supported(impl))
		return -ENOTSUP;
	__atomic_store_n(&agg_cur, (int)impl, __ATOMIC_RELAXED);
	return 0;
}

enum psb_agg_impl
psb_agg_current(void)
{
	return agg_resolve();
}

const char *
psb_agg_impl_name(enum psb_agg_impl impl)
{
	return agg_valid(impl) ? agg_kernels[impl].name : NULL;
}

int
psb_agg_impl_from_name(const char *name)
{
	int i;

	if (name == NULL)
		return -EINVAL;
	for (i = 0; i < PSB_AGG_IMPL_MAX; i++)
		if (strcasecmp(name, agg_kernels[i].name) == 0)
			return i;
	return -EINVAL;
}

psb_agg_add_fn
psb_agg_add_impl(enum psb_agg_impl impl)
{
	return agg_supported(impl) ? agg_kernels[impl].add : NULL;
}

psb_agg_add_fn
psb_agg_copy_impl(enum psb_agg_impl impl)
{
	return agg_supported(impl) ? agg_kernels[impl].copy : NULL;
}
