/* Deterministic seed frames for the psb frame fuzzer: one valid frame of every kind. */
#ifndef PSB_FUZZ_SEEDS_H
#define PSB_FUZZ_SEEDS_H

#include <stddef.h>
#include <stdint.h>

#include "psb_testframe.h"

/* The seeds are tf_worker's and tf_server's; the fuzz target's parse configs match them. */
#define FUZZ_WORKER_IP		TF_WORKER_IP
#define FUZZ_SERVER_IP		TF_SERVER_IP
#define FUZZ_WORKER_PORT	TF_WORKER_PORT

/* Largest seed frame (a 9000-byte MTU frame), with room for Ethernet padding. */
#define FUZZ_SEED_MAX		(14 + 4 + 9000 + 64)

typedef void (*fuzz_seed_fn)(void *arg, const char *name, const uint8_t *frame, size_t len);

/* Build every seed frame in a fixed order and hand each to fn. Returns the seed count. */
unsigned int fuzz_seeds_foreach(fuzz_seed_fn fn, void *arg);

#endif /* PSB_FUZZ_SEEDS_H */
