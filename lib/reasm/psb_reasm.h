/* Segment bookkeeping for reassembling values sent as many psb messages. */
#ifndef PSB_REASM_H
#define PSB_REASM_H

#include <stdint.h>

#include "psb_proto.h"

#define PSB_REASM_INLINE_WORDS 2	/* bitmaps up to 128 segments need no allocation */

/* Tracks which segments of one value have arrived. */
struct psb_reasm {
	uint32_t total_len;
	uint16_t seg_size;
	uint32_t nseg;
	uint32_t nrecv;
	uint64_t *bits;
	uint64_t inline_bits[PSB_REASM_INLINE_WORDS];
};

enum {
	PSB_REASM_DUP = 0,	/* segment seen before: ignore its data */
	PSB_REASM_NEW = 1,	/* first time: use its data */
	PSB_REASM_DONE = 2,	/* first time, and it completed the value */
};

/* Start tracking a value of total_len bytes cut at seg_size. 0 or -ENOMEM / -EINVAL. */
int psb_reasm_init(struct psb_reasm *r, uint32_t total_len, uint16_t seg_size);
void psb_reasm_fini(struct psb_reasm *r);

/*
 * Record the segment carried by h (already checked by psb_hdr_check_segment).
 * Returns PSB_REASM_NEW, PSB_REASM_DONE or PSB_REASM_DUP, or -EINVAL when h
 * does not belong to this value (other length or stride).
 */
int psb_reasm_mark(struct psb_reasm *r, const struct psb_hdr *h);

/*
 * The segments not yet arrived, as a repair bitmap (struct psb_repair): from the first
 * missing one, at most maxbits of them. bits (maxbits / 8 bytes, rounded up) gets bit i set
 * when segment *base + i is missing. Returns the bits written (0: nothing missing).
 */
uint32_t psb_reasm_missing(const struct psb_reasm *r, uint8_t *bits, uint32_t maxbits,
		uint32_t *base);

/*
 * The payload of a REPAIR or REPAIR_RESP in buf (PSB_REPAIR_MAX_LEN bytes), no longer than
 * a segment of seg_size: rp's header, and when r is given, the bitmap of its missing
 * segments (rp->base, rp->nbits set here). Returns the payload's length.
 */
uint32_t psb_reasm_repair(const struct psb_reasm *r, struct psb_repair *rp, uint8_t *buf,
		uint16_t seg_size);

static inline int
psb_reasm_complete(const struct psb_reasm *r)
{
	return r->nrecv == r->nseg;
}

#endif /* PSB_REASM_H */
