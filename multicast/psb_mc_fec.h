/*
 * Erasure coding of a group of k data segments (ISA-L's Reed-Solomon over GF(2^8), Cauchy
 * matrix): parity symbol j (0 <= j < PSB_MC_PARITY_MAX) of a group is made on demand, and
 * any k of the group's data and parity symbols give back its missing data. One parity
 * symbol thus repairs a different lost segment at each receiver that lost one.
 */
#ifndef PSB_MC_FEC_H
#define PSB_MC_FEC_H

#include <stdint.h>

#include "psb_mc_proto.h"

/* Scratch for one encode or decode: coefficient tables and the matrices. */
struct psb_mc_fec {
	uint8_t tbl[32 * PSB_MC_GROUP_MAX * PSB_MC_GROUP_MAX];
	uint8_t m[PSB_MC_GROUP_MAX * PSB_MC_GROUP_MAX];
	uint8_t inv[PSB_MC_GROUP_MAX * PSB_MC_GROUP_MAX];
	uint8_t c[PSB_MC_GROUP_MAX * PSB_MC_GROUP_MAX];
};

/* Parity symbol j of the k symbols data[0..k) of len bytes each, into out. */
void psb_mc_fec_encode(struct psb_mc_fec *f, unsigned int k, unsigned int j, unsigned int len,
		uint8_t *const *data, uint8_t *out);

/*
 * The group's missing data from k symbols of len bytes: src[r] is symbol id[r], a data
 * index (< k) or k + a parity index; the data segments miss[0..nmiss) (those not among
 * them) are written to out[0..nmiss). 0, or -EINVAL when the ids do not make k distinct
 * symbols.
 */
int psb_mc_fec_decode(struct psb_mc_fec *f, unsigned int k, unsigned int len,
		uint8_t *const *src, const uint16_t *id, const uint8_t *miss, unsigned int nmiss,
		uint8_t **out);

#endif /* PSB_MC_FEC_H */
