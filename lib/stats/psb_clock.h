/* The monotonic clock psb's libraries and programs time with. */
#ifndef PSB_CLOCK_H
#define PSB_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds on the clock id names (CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID, ...). */
static inline uint64_t
psb_clock_read_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t
psb_clock_ns(void)
{
	return psb_clock_read_ns(CLOCK_MONOTONIC);
}

static inline uint64_t
psb_clock_ms(void)
{
	return psb_clock_ns() / 1000000;
}

#endif /* PSB_CLOCK_H */
