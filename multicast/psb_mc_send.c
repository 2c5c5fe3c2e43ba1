/* The sending side of psb's reliable multicast (see psb_mc_send.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "psb_mc_send.h"

/* A group's repair: merged from NACKs, waiting in its version's queue until ready_ns. */
struct rep {
	uint64_t missing;
	uint64_t ready_ns;
	uint16_t need;
	uint8_t queued;
};

struct sver {
	int used;
	struct psb_mc_ver v;
	const uint8_t *data;
	uint32_t ngroups;
	uint32_t next_seg;		/* data segments sent */
	uint32_t pro_group;		/* the group whose proactive parity is due */
	uint16_t pro_left;		/* ... and how many of it */
	uint8_t *par_next;		/* per group: parity symbols sent */
	struct rep *rep;
	uint32_t *q;			/* groups waiting for repair, FIFO over ngroups slots */
	uint32_t qh, qn;
};

struct psb_mc_send {
	struct psb_mc_send_cfg cfg;
	psb_mc_emit_fn emit;
	psb_mc_release_fn release;
	void *arg;
	/* repaired (sent whole), streaming, waiting */
	struct sver rv, cur, next;
	uint32_t last_vid;		/* the newest published, 0: none */
	double tokens;
	uint64_t tok_ns;
	uint64_t rate_bps;
	uint64_t hb_ns;			/* the next heartbeat */
	uint64_t adapt_ns;
	uint64_t win_data, win_need;
	struct psb_mc_fec fec;
	uint8_t hdr[PSB_MC_HLEN];
	uint8_t *sym;			/* a parity symbol being made */
	uint8_t *pad;			/* the short last segment, padded to seg_size */
	uint8_t ncf[PSB_MC_HLEN + PSB_MC_NACK_MAX * PSB_MC_NACK_ENTRY];
	struct psb_mc_nack_entry ent[PSB_MC_NACK_MAX];
	struct psb_mc_send_stats st;
};

static void
sver_drop(struct psb_mc_send *s, struct sver *v)
{
	if (!v->used)
		return;
	if (s->release != NULL)
		s->release(s->arg, v->v.vid, v->data);
	free(v->par_next);
	free(v->rep);
	free(v->q);
	memset(v, 0, sizeof(*v));
}

int
psb_mc_send_create(const struct psb_mc_send_cfg *cfg, psb_mc_emit_fn emit,
		psb_mc_release_fn release, void *arg, struct psb_mc_send **out)
{
	struct psb_mc_send *s;

	*out = NULL;
	if (cfg->seg_size < PSB_MC_SEG_MIN || cfg->seg_size > PSB_MC_SEG_MAX || cfg->group == 0 ||
	    cfg->group > PSB_MC_GROUP_MAX || cfg->parity > PSB_MC_PARITY_MAX ||
	    cfg->proactive > cfg->parity || emit == NULL ||
	    (cfg->adaptive && (cfg->rate_bps == 0 || cfg->min_rate_bps > cfg->rate_bps)))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	s->sym = calloc(2, cfg->seg_size);
	if (s->sym == NULL) {
		free(s);
		return -ENOMEM;
	}
	s->pad = s->sym + cfg->seg_size;
	s->cfg = *cfg;
	if (s->cfg.burst_bytes == 0)
		s->cfg.burst_bytes = 16ull * (cfg->seg_size + PSB_MC_HLEN + PSB_MC_WIRE_OVERHEAD);
	if (s->cfg.heartbeat_ns == 0)
		s->cfg.heartbeat_ns = 10000000;
	if (s->cfg.adapt_ns == 0)
		s->cfg.adapt_ns = 20000000;
	s->emit = emit;
	s->release = release;
	s->arg = arg;
	s->rate_bps = cfg->rate_bps;
	s->tokens = (double)s->cfg.burst_bytes;
	s->st.rate_bps = s->rate_bps;
	*out = s;
	return 0;
}

void
psb_mc_send_free(struct psb_mc_send *s)
{
	if (s == NULL)
		return;
	sver_drop(s, &s->rv);
	sver_drop(s, &s->cur);
	sver_drop(s, &s->next);
	free(s->sym);
	free(s);
}

int
psb_mc_send_publish(struct psb_mc_send *s, uint32_t vid, const void *data, uint64_t len,
		uint32_t crc, uint64_t now_ns)
{
	struct sver v;

	memset(&v, 0, sizeof(v));
	v.v.vid = vid;
	v.v.total_len = len;
	v.v.crc = crc;
	v.v.group = s->cfg.group;
	v.v.seg_size = s->cfg.seg_size;
	v.v.nseg = psb_mc_nseg(len, s->cfg.seg_size);
	if ((s->last_vid != 0 && vid <= s->last_vid) || vid == 0 || psb_mc_ver_check(&v.v) != 0)
		return -EINVAL;
	v.ngroups = psb_mc_ngroups(&v.v);
	v.par_next = calloc(v.ngroups, sizeof(*v.par_next));
	v.rep = calloc(v.ngroups, sizeof(*v.rep));
	v.q = calloc(v.ngroups, sizeof(*v.q));
	if (v.par_next == NULL || v.rep == NULL || v.q == NULL) {
		free(v.par_next);
		free(v.rep);
		free(v.q);
		return -ENOMEM;
	}
	v.used = 1;
	v.data = data;
	s->last_vid = vid;
	s->st.published++;
	if (!s->cur.used) {
		s->cur = v;
		s->hb_ns = now_ns;	/* say at once what comes */
	} else {
		if (s->next.used)
			s->st.superseded++;
		sver_drop(s, &s->next);
		s->next = v;
	}
	return 0;
}

/* The bucket filled up to now: whether a packet of bytes may go now. */
static int
tokens_have(struct psb_mc_send *s, uint64_t now_ns, unsigned int bytes)
{
	if (s->rate_bps == 0)
		return 1;
	if (now_ns > s->tok_ns) {
		s->tokens += (double)(now_ns - s->tok_ns) * (double)s->rate_bps / 8e9;
		if (s->tokens > (double)s->cfg.burst_bytes)
			s->tokens = (double)s->cfg.burst_bytes;
	}
	s->tok_ns = now_ns;
	return s->tokens >= bytes + PSB_MC_WIRE_OVERHEAD;
}

/* One packet out, paced: 1 sent, 0 not now (no tokens, or the port is full). */
static int
put(struct psb_mc_send *s, uint64_t now_ns, const uint8_t *payload, unsigned int plen)
{
	if (!tokens_have(s, now_ns, PSB_MC_HLEN + plen))
		return 0;
	if (s->emit(s->arg, s->hdr, PSB_MC_HLEN, payload, plen) != 0) {
		s->st.emit_busy++;
		return 0;
	}
	if (s->rate_bps != 0)
		s->tokens -= PSB_MC_HLEN + plen + PSB_MC_WIRE_OVERHEAD;
	return 1;
}

static const uint8_t *
seg_ptr(struct psb_mc_send *s, const struct sver *v, uint32_t seg, int padded)
{
	const uint8_t *p = v->data + (uint64_t)seg * v->v.seg_size;
	uint32_t len = psb_mc_seg_len(&v->v, seg);

	if (!padded || len == v->v.seg_size)
		return p;
	memcpy(s->pad, p, len);
	memset(s->pad + len, 0, v->v.seg_size - len);
	return s->pad;
}

/* Parity symbol j of group g of v, sent: 1, or 0 when it could not go now. */
static int
send_parity(struct psb_mc_send *s, struct sver *v, uint32_t g, unsigned int j, uint64_t now_ns)
{
	uint8_t *src[PSB_MC_GROUP_MAX];
	uint32_t k = psb_mc_group_k(&v->v, g), i;

	/* not made when it could not go now */
	if (!tokens_have(s, now_ns, PSB_MC_HLEN + v->v.seg_size))
		return 0;
	for (i = 0; i < k; i++)
		src[i] = (uint8_t *)(uintptr_t)seg_ptr(s, v, g * v->v.group + i,
						       g * v->v.group + i == v->v.nseg - 1);
	psb_mc_fec_encode(&s->fec, k, j, v->v.seg_size, src, s->sym);
	psb_mc_write_parity(s->hdr, s->cfg.session, &v->v, g, (uint16_t)j);
	return put(s, now_ns, s->sym, v->v.seg_size);
}

static int
send_data(struct psb_mc_send *s, struct sver *v, uint32_t seg, uint64_t now_ns)
{
	uint32_t len = psb_mc_seg_len(&v->v, seg);

	psb_mc_write_data(s->hdr, s->cfg.session, &v->v, seg, (uint16_t)len);
	return put(s, now_ns, seg_ptr(s, v, seg, 0), len);
}

/* The repairs of v that are due, while packets may go; returns packets sent. */
static unsigned int
repair(struct psb_mc_send *s, struct sver *v, uint64_t now_ns, unsigned int max)
{
	unsigned int n = 0;

	while (v->used && v->qn != 0 && n < max) {
		uint32_t g = v->q[v->qh];
		struct rep *r = &v->rep[g];

		if (r->ready_ns > now_ns)
			break;
		if (r->need != 0 && v->par_next[g] < s->cfg.parity) {
			if (!send_parity(s, v, g, v->par_next[g], now_ns))
				return n;
			v->par_next[g]++;
			r->need--;
			if (r->need == 0)
				r->missing = 0;	/* k symbols of any kind make the group */
			s->st.repair_parity_pkts++;
			s->st.repair_bytes += v->v.seg_size;
		} else if (r->missing != 0) {
			uint32_t seg = g * v->v.group + (uint32_t)__builtin_ctzll(r->missing);

			if (!send_data(s, v, seg, now_ns))
				return n;
			r->missing &= r->missing - 1;
			s->st.repair_data_pkts++;
			s->st.repair_bytes += psb_mc_seg_len(&v->v, seg);
		}
		n++;
		if (r->missing == 0) {
			r->need = 0;
			r->queued = 0;
			v->qh = (v->qh + 1) % v->ngroups;
			v->qn--;
		}
	}
	return n;
}

/* cur was sent whole: the version before it is done with, and the waiting one starts. */
static void
advance(struct psb_mc_send *s, uint64_t now_ns)
{
	s->st.sent_whole++;
	sver_drop(s, &s->rv);
	s->rv = s->cur;
	s->cur = s->next;
	memset(&s->next, 0, sizeof(s->next));
	if (s->cur.used)
		s->hb_ns = now_ns;
}

static unsigned int
stream(struct psb_mc_send *s, uint64_t now_ns, unsigned int max)
{
	struct sver *v = &s->cur;
	unsigned int n = 0;

	while (v->used && n < max) {
		if (v->pro_left != 0) {
			unsigned int j = v->par_next[v->pro_group];

			if (!send_parity(s, v, v->pro_group, j, now_ns))
				break;
			v->par_next[v->pro_group]++;
			v->pro_left--;
			s->st.proactive_pkts++;
		} else if (v->next_seg < v->v.nseg) {
			uint32_t seg = v->next_seg;

			if (!send_data(s, v, seg, now_ns))
				break;
			v->next_seg++;
			s->win_data++;
			s->st.data_pkts++;
			s->st.data_bytes += psb_mc_seg_len(&v->v, seg);
			if (v->next_seg % v->v.group == 0 || v->next_seg == v->v.nseg) {
				v->pro_group = (v->next_seg - 1) / v->v.group;
				v->pro_left = s->cfg.proactive;
			}
		} else {
			advance(s, now_ns);
			continue;
		}
		n++;
	}
	return n;
}

static void
heartbeat(struct psb_mc_send *s, uint64_t now_ns)
{
	const struct sver *v = s->cur.used ? &s->cur : &s->rv;

	if (!v->used || now_ns < s->hb_ns)
		return;
	psb_mc_write_heartbeat(s->hdr, s->cfg.session, &v->v, v->next_seg,
		(uint32_t)(s->rate_bps / 1000000));
	/* not paced: a heartbeat is small, and says where a receiver stands */
	if (s->emit(s->arg, s->hdr, PSB_MC_HLEN, NULL, 0) != 0) {
		s->st.emit_busy++;
		return;
	}
	s->st.heartbeats++;
	s->hb_ns = now_ns + s->cfg.heartbeat_ns;
}

static void
adapt(struct psb_mc_send *s, uint64_t now_ns)
{
	if (!s->cfg.adaptive)
		return;
	if (s->adapt_ns == 0)
		s->adapt_ns = now_ns + s->cfg.adapt_ns;
	if (now_ns < s->adapt_ns)
		return;
	if (s->win_need * 50 > s->win_data && s->win_need != 0) {
		s->rate_bps = s->rate_bps / 4 * 3;
		if (s->rate_bps < s->cfg.min_rate_bps)
			s->rate_bps = s->cfg.min_rate_bps;
		s->st.backoffs++;
	} else if (s->win_need == 0) {
		s->rate_bps += s->cfg.rate_bps / 32;
		if (s->rate_bps > s->cfg.rate_bps)
			s->rate_bps = s->cfg.rate_bps;
	}
	s->st.rate_bps = s->rate_bps;
	s->win_data = s->win_need = 0;
	s->adapt_ns = now_ns + s->cfg.adapt_ns;
}

unsigned int
psb_mc_send_poll(struct psb_mc_send *s, uint64_t now_ns, unsigned int max_pkts)
{
	unsigned int n;

	adapt(s, now_ns);
	heartbeat(s, now_ns);
	/* repairs first: they finish versions receivers already wait for */
	n = repair(s, &s->rv, now_ns, max_pkts);
	n += repair(s, &s->cur, now_ns, max_pkts - n);
	n += stream(s, now_ns, max_pkts - n);
	return n;
}

static uint64_t
repair_due(const struct sver *v)
{
	return v->used && v->qn != 0 ? v->rep[v->q[v->qh]].ready_ns : UINT64_MAX;
}

uint64_t
psb_mc_send_next_ns(const struct psb_mc_send *s, uint64_t now_ns)
{
	uint64_t t = UINT64_MAX, r;

	if (s->rv.used || s->cur.used)
		t = s->hb_ns;
	r = repair_due(&s->rv);
	t = r < t ? r : t;
	r = repair_due(&s->cur);
	t = r < t ? r : t;
	if (s->cur.used)
		t = now_ns;
	if (t <= now_ns && s->rate_bps != 0 && s->tokens < PSB_MC_HLEN + s->cfg.seg_size +
	    PSB_MC_WIRE_OVERHEAD) {
		double need = PSB_MC_HLEN + s->cfg.seg_size + PSB_MC_WIRE_OVERHEAD - s->tokens;

		t = s->tok_ns + (uint64_t)(need * 8e9 / (double)s->rate_bps) + 1;
	}
	return t;
}

int
psb_mc_send_busy(const struct psb_mc_send *s)
{
	return s->cur.used || s->next.used || s->rv.qn != 0;
}

const struct psb_mc_send_stats *
psb_mc_send_stats(const struct psb_mc_send *s)
{
	return &s->st;
}

static int
ver_same(const struct psb_mc_ver *a, const struct psb_mc_ver *b)
{
	return a->vid == b->vid && a->nseg == b->nseg && a->total_len == b->total_len &&
		a->crc == b->crc && a->group == b->group && a->seg_size == b->seg_size;
}

void
psb_mc_send_input(struct psb_mc_send *s, const uint8_t *buf, size_t len, uint64_t now_ns)
{
	struct psb_mc_pkt p;
	struct sver *v = NULL;
	unsigned int i, n = 0;
	size_t nl;
	int rc = psb_mc_parse(buf, len, &p);

	if (rc < 0) {
		s->st.nack_bad[-rc]++;
		return;
	}
	if (rc != PSB_MC_NACK) {
		s->st.nack_bad[PSB_MC_BAD_TYPE]++;
		return;
	}
	if (p.session != s->cfg.session) {
		s->st.nack_forged++;
		return;
	}
	if (s->rv.used && s->rv.v.vid == p.ver.vid)
		v = &s->rv;
	else if (s->cur.used && s->cur.v.vid == p.ver.vid)
		v = &s->cur;
	if (v == NULL) {
		/* older than what is repaired now: superseded; anything else was never sent */
		uint32_t oldest = s->rv.used ? s->rv.v.vid : s->cur.used ? s->cur.v.vid :
			s->last_vid + 1;

		if (p.ver.vid < oldest)
			s->st.nack_superseded++;
		else
			s->st.nack_forged++;
		return;
	}
	if (!ver_same(&v->v, &p.ver)) {
		s->st.nack_forged++;
		return;
	}
	s->st.nacks++;
	for (i = 0; i < p.b; i++) {
		struct psb_mc_nack_entry e;
		struct rep *r;
		uint32_t end;
		uint16_t need0;
		uint64_t missing0;

		psb_mc_nack_entry(&p, i, &e);
		s->st.nack_entries++;
		end = e.group * v->v.group + psb_mc_group_k(&v->v, e.group);
		if (end > v->next_seg) {
			s->st.nack_premature++;
			continue;
		}
		s->win_need += e.need;
		r = &v->rep[e.group];
		need0 = r->need;
		missing0 = r->missing;
		r->missing |= e.missing;
		if (e.need > r->need)
			r->need = e.need;
		if (r->need != need0 || r->missing != missing0)
			s->ent[n++] = (struct psb_mc_nack_entry){ .group = e.group, .need = r->need,
				.missing = r->missing };
		if (r->queued) {
			s->st.nack_merged++;
			continue;
		}
		r->queued = 1;
		r->ready_ns = now_ns + s->cfg.nack_hold_ns;
		v->q[(v->qh + v->qn) % v->ngroups] = e.group;
		v->qn++;
	}
	if (n == 0)
		return;
	/* what is coming, to everybody at once: receivers missing the same ask no more */
	nl = psb_mc_write_nack(s->ncf, PSB_MC_NCF, s->cfg.session, &v->v, 0, s->ent, n);
	if (s->emit(s->arg, s->ncf, PSB_MC_HLEN, s->ncf + PSB_MC_HLEN,
		    (unsigned int)(nl - PSB_MC_HLEN)) != 0)
		s->st.emit_busy++;
	else
		s->st.ncfs++;
}
