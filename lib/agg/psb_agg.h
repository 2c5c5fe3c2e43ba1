/* psb aggregation kernels: dst += src over float vectors, with runtime ISA dispatch. */
#ifndef PSB_AGG_H
#define PSB_AGG_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum psb_agg_impl {
	PSB_AGG_SCALAR = 0,	/* portable C, always available */
	PSB_AGG_AVX2,		/* 256-bit, x86 with AVX2 */
	PSB_AGG_AVX512,		/* 512-bit, x86 with AVX-512F */
	PSB_AGG_IMPL_MAX
};

/*
 * dst[i] += src[i] for i < n, one float add per element (never reassociated), so every
 * implementation gives bit-identical results. The one exception is the payload of a NaN
 * produced from two NaN inputs: x86 returns the first operand's and the compiler may order
 * the operands either way; it is a NaN in every implementation.
 *
 * dst must be float-aligned. src may have any alignment: it points into
 * packet buffers at arbitrary byte offsets. dst and src must either be
 * identical or not overlap. Nothing outside [0, n) of either is read or
 * written.
 *
 * The implementation is picked on first use of any function below: the best
 * the CPU supports, unless the environment variable PSB_AGG names one
 * ("scalar", "avx2", "avx512"); an unknown or unsupported name falls back
 * to the best with a warning on stderr. psb_agg_select() overrides both.
 */
void psb_agg_add(float *dst, const void *src, size_t n);

/* dst[i] = src[i] for i < n (src any alignment), same dispatch; the bits are copied as is. */
void psb_agg_copy(float *dst, const void *src, size_t n);

/* Use impl from now on: 0, -EINVAL if impl is not an implementation, -ENOTSUP if this CPU
 * (or this build) cannot run it. Safe to call while other threads aggregate. */
int psb_agg_select(enum psb_agg_impl impl);

/* The widest implementation this CPU and build support: the default choice. */
enum psb_agg_impl psb_agg_best(void);

/* The implementation psb_agg_add() and psb_agg_copy() use now. */
enum psb_agg_impl psb_agg_current(void);

/* "scalar", "avx2", "avx512"; NULL if impl is not an implementation. */
const char *psb_agg_impl_name(enum psb_agg_impl impl);

/* Inverse of psb_agg_impl_name() (case-insensitive): the enum value, or -EINVAL. */
int psb_agg_impl_from_name(const char *name);

/* Direct access to one implementation, for tests and benchmarks: NULL if it is not compiled
 * in or this CPU cannot run it. */
typedef void (*psb_agg_add_fn)(float *dst, const void *src, size_t n);
psb_agg_add_fn psb_agg_add_impl(enum psb_agg_impl impl);
psb_agg_add_fn psb_agg_copy_impl(enum psb_agg_impl impl);

#ifdef __cplusplus
}
#endif

#endif /* PSB_AGG_H */
