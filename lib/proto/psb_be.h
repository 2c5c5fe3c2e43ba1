/* Big-endian field access for psb's wire formats (header, records, scheduler view). */
#ifndef PSB_BE_H
#define PSB_BE_H

#include <stdint.h>

static inline uint16_t
psb_rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t
psb_rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t
psb_rd64(const uint8_t *p)
{
	return (uint64_t)psb_rd32(p) << 32 | psb_rd32(p + 4);
}

static inline void
psb_wr16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static inline void
psb_wr32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = (v >> 16) & 0xff;
	p[2] = (v >> 8) & 0xff;
	p[3] = v & 0xff;
}

static inline void
psb_wr64(uint8_t *p, uint64_t v)
{
	psb_wr32(p, v >> 32);
	psb_wr32(p + 4, (uint32_t)v);
}

#endif /* PSB_BE_H */
