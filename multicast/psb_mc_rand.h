/* The multicast state machines' random numbers: xorshift64, seeded by their user. */
#ifndef PSB_MC_RAND_H
#define PSB_MC_RAND_H

#include <stdint.h>

/* The next number of the sequence in *state (never 0 when it started other than 0). */
static inline uint64_t
psb_mc_rand(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

#endif /* PSB_MC_RAND_H */
