/* The wire format of psb's reliable multicast: parse and write, every field checked. */
#include <errno.h>
#include <string.h>

#include <isa-l/crc.h>

#include "psb_be.h"
#include "psb_mc_proto.h"

uint32_t
psb_mc_nseg(uint64_t total_len, uint16_t seg_size)
{
	if (seg_size == 0)
		return 0;
	return total_len == 0 ? 1 : (uint32_t)((total_len + seg_size - 1) / seg_size);
}

int
psb_mc_ver_check(const struct psb_mc_ver *v)
{
	if (v->seg_size < PSB_MC_SEG_MIN || v->seg_size > PSB_MC_SEG_MAX || v->group == 0 ||
	    v->group > PSB_MC_GROUP_MAX || v->total_len > PSB_MC_MAX_VERSION ||
	    v->nseg != psb_mc_nseg(v->total_len, v->seg_size))
		return -PSB_MC_BAD_GEOMETRY;
	return 0;
}

static void
write_common(uint8_t *out, uint8_t type, uint32_t session, const struct psb_mc_ver *v)
{
	psb_wr16(out, PSB_MC_MAGIC);
	out[2] = PSB_MC_WIRE_VERSION;
	out[3] = type;
	psb_wr32(out + 4, session);
	psb_wr32(out + 8, v->vid);
	psb_wr32(out + 12, v->nseg);
	psb_wr64(out + 16, v->total_len);
	psb_wr32(out + 24, v->crc);
	psb_wr16(out + 28, v->group);
	psb_wr16(out + 30, v->seg_size);
}

void
psb_mc_write_data(uint8_t *out, uint32_t session, const struct psb_mc_ver *v, uint32_t seg,
		uint16_t len)
{
	write_common(out, PSB_MC_DATA, session, v);
	psb_wr32(out + 32, seg);
	psb_wr16(out + 36, len);
	psb_wr16(out + 38, 0);
}

void
psb_mc_write_parity(uint8_t *out, uint32_t session, const struct psb_mc_ver *v,
		uint32_t group, uint16_t idx)
{
	write_common(out, PSB_MC_PARITY, session, v);
	psb_wr32(out + 32, group);
	psb_wr16(out + 36, idx);
	psb_wr16(out + 38, v->seg_size);
}

void
psb_mc_write_heartbeat(uint8_t *out, uint32_t session, const struct psb_mc_ver *v,
		uint32_t sent, uint32_t rate_mbps)
{
	write_common(out, PSB_MC_HEARTBEAT, session, v);
	psb_wr32(out + 32, sent);
	psb_wr32(out + 36, rate_mbps);
}

size_t
psb_mc_write_nack(uint8_t *out, uint8_t type, uint32_t session,
		const struct psb_mc_ver *v, uint32_t receiver, const struct psb_mc_nack_entry *e,
		unsigned int n)
{
	unsigned int i;
	uint8_t *q = out + PSB_MC_HLEN;

	write_common(out, type, session, v);
	psb_wr32(out + 32, receiver);
	psb_wr16(out + 36, (uint16_t)n);
	psb_wr16(out + 38, 0);
	for (i = 0; i < n; i++, q += PSB_MC_NACK_ENTRY) {
		psb_wr32(q, e[i].group);
		psb_wr16(q + 4, e[i].need);
		psb_wr16(q + 6, 0);
		psb_wr64(q + 8, e[i].missing);
	}
	return PSB_MC_HLEN + (size_t)n * PSB_MC_NACK_ENTRY;
}

void
psb_mc_nack_entry(const struct psb_mc_pkt *p, unsigned int i, struct psb_mc_nack_entry *e)
{
	const uint8_t *q = p->payload + (size_t)i * PSB_MC_NACK_ENTRY;

	e->group = psb_rd32(q);
	e->need = psb_rd16(q + 4);
	e->missing = psb_rd64(q + 8);
}

static int
check_nack(const struct psb_mc_pkt *p)
{
	uint32_t ngroups = psb_mc_ngroups(&p->ver);
	struct psb_mc_nack_entry e;
	unsigned int i;
	int64_t prev = -1;

	for (i = 0; i < p->b; i++) {
		psb_mc_nack_entry(p, i, &e);
		if (e.group >= ngroups || (int64_t)e.group <= prev)
			return -PSB_MC_BAD_NACK;
		prev = e.group;
		if (e.missing == 0 || (e.missing & ~psb_mc_group_mask(&p->ver, e.group)) != 0 ||
		    e.need == 0 ||
		    e.need > (unsigned int)__builtin_popcountll(e.missing))
			return -PSB_MC_BAD_NACK;
	}
	return 0;
}

int
psb_mc_parse(const uint8_t *buf, size_t len, struct psb_mc_pkt *p)
{
	if (len < PSB_MC_HLEN)
		return -PSB_MC_BAD_SHORT;
	if (psb_rd16(buf) != PSB_MC_MAGIC || buf[2] != PSB_MC_WIRE_VERSION)
		return -PSB_MC_BAD_MAGIC;
	memset(p, 0, sizeof(*p));
	p->type = buf[3];
	p->session = psb_rd32(buf + 4);
	p->ver.vid = psb_rd32(buf + 8);
	p->ver.nseg = psb_rd32(buf + 12);
	p->ver.total_len = psb_rd64(buf + 16);
	p->ver.crc = psb_rd32(buf + 24);
	p->ver.group = psb_rd16(buf + 28);
	p->ver.seg_size = psb_rd16(buf + 30);
	if (p->type < PSB_MC_DATA || p->type > PSB_MC_NCF)
		return -PSB_MC_BAD_TYPE;
	if (psb_mc_ver_check(&p->ver) != 0)
		return -PSB_MC_BAD_GEOMETRY;
	p->a = psb_rd32(buf + 32);
	p->payload = buf + PSB_MC_HLEN;
	switch (p->type) {
	case PSB_MC_DATA:
		p->len = psb_rd16(buf + 36);
		if (p->a >= p->ver.nseg)
			return -PSB_MC_BAD_INDEX;
		if (p->len != psb_mc_seg_len(&p->ver, p->a))
			return -PSB_MC_BAD_LENGTH;
		break;
	case PSB_MC_PARITY:
		p->b = psb_rd16(buf + 36);
		p->len = psb_rd16(buf + 38);
		if (p->a >= psb_mc_ngroups(&p->ver) || p->b >= PSB_MC_PARITY_MAX)
			return -PSB_MC_BAD_INDEX;
		if (p->len != p->ver.seg_size)
			return -PSB_MC_BAD_LENGTH;
		break;
	case PSB_MC_HEARTBEAT:
		p->rate_mbps = psb_rd32(buf + 36);
		if (p->a > p->ver.nseg)
			return -PSB_MC_BAD_INDEX;
		return p->type;
	case PSB_MC_NACK:
	case PSB_MC_NCF:
		p->b = psb_rd16(buf + 36);
		if (p->b == 0 || p->b > PSB_MC_NACK_MAX)
			return -PSB_MC_BAD_NACK;
		if (len != PSB_MC_HLEN + (size_t)p->b * PSB_MC_NACK_ENTRY)
			return -PSB_MC_BAD_SHORT;
		return check_nack(p) == 0 ? p->type : -PSB_MC_BAD_NACK;
	}
	if (len != PSB_MC_HLEN + (size_t)p->len)
		return -PSB_MC_BAD_SHORT;
	return p->type;
}

const char *
psb_mc_bad_name(int bad)
{
	static const char *const names[PSB_MC_BAD_MAX] = {
		[PSB_MC_BAD_SHORT] = "short",
		[PSB_MC_BAD_MAGIC] = "magic",
		[PSB_MC_BAD_TYPE] = "type",
		[PSB_MC_BAD_GEOMETRY] = "geometry",
		[PSB_MC_BAD_INDEX] = "index",
		[PSB_MC_BAD_LENGTH] = "length",
		[PSB_MC_BAD_NACK] = "nack",
	};

	if (bad < 0)
		bad = -bad;
	return bad > 0 && bad < PSB_MC_BAD_MAX ? names[bad] : "?";
}

uint32_t
psb_mc_crc(uint32_t crc, const void *buf, uint64_t len)
{
	const uint8_t *p = buf;

	/*
	 * ISA-L's crc32_iscsi runs the CRC register from the value given and returns it as it
	 * stands: CRC-32C's initial and final inversions are ours. Inverting on the way in and
	 * out keeps the result a finished CRC-32C that the next call carries on from.
	 */
	crc = ~crc;
	/* ISA-L takes an int length */
	while (len > 0) {
		int n = len > (1u << 30) ? 1 << 30 : (int)len;

		crc = crc32_iscsi((unsigned char *)(uintptr_t)p, n, crc);
		p += n;
		len -= (uint64_t)n;
	}
	return ~crc;
}
