/* Deterministic seed frames for the psb frame fuzzer: one valid frame of every kind. */
#ifndef PSB_FUZZ_SEEDS_H
#define PSB_FUZZ_SEEDS_H

#include <stddef.h>
#include <stdint.h>

/* Addresses used by the seeds; the fuzz target's parse configs match them. */
#define FUZZ_WORKER_IP		0xc6120001u	/* 198.18.0.1 */
#define FUZZ_SERVER_IP		0xc6120002u	/* 198.18.0.2 */
#define FUZZ_WORKER_PORT	40001

/* Largest seed frame (a 9000-byte MTU frame), with room for Ethernet padding. */
#define FUZZ_SEED_MAX		(14 + 4 + 9000 + 64)

typedef void (*fuzz_seed_fn)(void *arg, const char *name, const uint8_t *frame, size_t len);

/* Build every seed frame in a fixed order and hand each to fn. Returns the seed count. */
unsigned int fuzz_seeds_foreach(fuzz_seed_fn fn, void *arg);

#endif /* PSB_FUZZ_SEEDS_H */
