/* Reed-Solomon parity of a segment group, made and undone with ISA-L. */
#include <errno.h>
#include <string.h>

#include <isa-l/erasure_code.h>

#include "psb_mc_fec.h"

/*
 * Row id of the group's generator: the identity for data symbols, and for parity j the
 * Cauchy row 1 / ((k + j) ^ c), as ISA-L's gf_gen_cauchy1_matrix makes it; computed rather
 * than stored, for every k.
 */
static void
gen_row(unsigned int k, unsigned int id, uint8_t *row)
{
	unsigned int c;

	if (id < k) {
		memset(row, 0, k);
		row[id] = 1;
		return;
	}
	for (c = 0; c < k; c++)
		row[c] = gf_inv((uint8_t)(id ^ c));
}

void
psb_mc_fec_encode(struct psb_mc_fec *f, unsigned int k, unsigned int j, unsigned int len,
		uint8_t *const *data, uint8_t *out)
{
	gen_row(k, k + j, f->c);
	ec_init_tables((int)k, 1, f->c, f->tbl);
	ec_encode_data((int)len, (int)k, 1, f->tbl, (unsigned char **)data, &out);
}

int
psb_mc_fec_decode(struct psb_mc_fec *f, unsigned int k, unsigned int len,
		uint8_t *const *src, const uint16_t *id, const uint8_t *miss, unsigned int nmiss,
		uint8_t **out)
{
	unsigned int r;

	if (k == 0 || k > PSB_MC_GROUP_MAX || nmiss == 0 || nmiss > k)
		return -EINVAL;
	for (r = 0; r < k; r++) {
		if (id[r] >= k + PSB_MC_PARITY_MAX)
			return -EINVAL;
		gen_row(k, id[r], &f->m[r * k]);
	}
	/* the same symbol twice makes the matrix singular: refused here */
	if (gf_invert_matrix(f->m, f->inv, (int)k) != 0)
		return -EINVAL;
	for (r = 0; r < nmiss; r++) {
		if (miss[r] >= k)
			return -EINVAL;
		memcpy(&f->c[r * k], &f->inv[miss[r] * k], k);
	}
	ec_init_tables((int)k, (int)nmiss, f->c, f->tbl);
	ec_encode_data((int)len, (int)k, (int)nmiss, f->tbl, (unsigned char **)src, out);
	return 0;
}
