/* Segment bookkeeping for reassembling values sent as many psb messages. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "psb_reasm.h"

int
psb_reasm_init(struct psb_reasm *r, uint32_t total_len, uint16_t seg_size)
{
	uint32_t words;

	memset(r, 0, sizeof(*r));
	if (total_len > 0 && (seg_size == 0 || total_len > PSB_MAX_VALUE))
		return -EINVAL;
	r->total_len = total_len;
	r->seg_size = seg_size;
	r->nseg = total_len == 0 ? 1 : psb_seg_count(total_len, seg_size);
	words = (r->nseg + 63) / 64;
	if (words <= PSB_REASM_INLINE_WORDS) {
		r->bits = r->inline_bits;
	} else {
		r->bits = calloc(words, sizeof(uint64_t));
		if (r->bits == NULL)
			return -ENOMEM;
	}
	return 0;
}

void
psb_reasm_fini(struct psb_reasm *r)
{
	if (r->bits != NULL && r->bits != r->inline_bits)
		free(r->bits);
	r->bits = NULL;
	r->nseg = 0;
	r->nrecv = 0;
}

int
psb_reasm_mark(struct psb_reasm *r, const struct psb_hdr *h)
{
	uint32_t idx;
	uint64_t bit;

	if (r->bits == NULL || h->total_len != r->total_len)
		return -EINVAL;
	if (r->total_len == 0) {
		idx = 0;
	} else {
		if (h->seg_size != r->seg_size || h->offset >= r->total_len)
			return -EINVAL;
		idx = h->offset / r->seg_size;
	}
	bit = 1ull << (idx & 63);
	if (r->bits[idx / 64] & bit)
		return PSB_REASM_DUP;
	r->bits[idx / 64] |= bit;
	r->nrecv++;
	return r->nrecv == r->nseg ? PSB_REASM_DONE : PSB_REASM_NEW;
}

static inline int
seg_have(const struct psb_reasm *r, uint32_t i)
{
	return (r->bits[i / 64] >> (i & 63)) & 1;
}

uint32_t
psb_reasm_missing(const struct psb_reasm *r, uint8_t *bits, uint32_t maxbits, uint32_t *base)
{
	uint32_t first = 0, n, i;

	*base = 0;
	if (r->bits == NULL || r->nrecv == r->nseg || maxbits == 0)
		return 0;
	/* whole words first: most of a value has usually arrived */
	while (first < r->nseg && r->bits[first / 64] == ~0ull)
		first += 64;
	while (first < r->nseg && seg_have(r, first))
		first++;
	n = r->nseg - first < maxbits ? r->nseg - first : maxbits;
	memset(bits, 0, (n + 7) / 8);
	for (i = 0; i < n; i++)
		if (!seg_have(r, first + i))
			bits[i / 8] |= (uint8_t)(1u << (i % 8));
	*base = first;
	return n;
}

uint32_t
psb_reasm_repair(const struct psb_reasm *r, struct psb_repair *rp, uint8_t *buf,
		uint16_t seg_size)
{
	uint32_t room = seg_size < PSB_REPAIR_MAX_LEN ? seg_size : PSB_REPAIR_MAX_LEN;

	/* the bitmap leaves room for padding the payload to a multiple of 4 */
	if (r != NULL)
		rp->nbits = psb_reasm_missing(r, buf + PSB_REPAIR_HLEN,
			(room - PSB_REPAIR_HLEN - 4) * 8, &rp->base);
	memset(buf + PSB_REPAIR_HLEN + (rp->nbits + 7) / 8, 0, 4);
	psb_repair_encode(buf, rp);
	return psb_repair_len(rp->nbits);
}
