/* The receiving side of psb's reliable multicast (see psb_mc_recv.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "psb_mc_fec.h"
#include "psb_mc_rand.h"
#include "psb_mc_recv.h"

/* Parity held for a group that is not whole yet. */
struct pgrp {
	uint8_t n;
	uint16_t idx[PSB_MC_GROUP_MAX];
	uint8_t *sym[PSB_MC_GROUP_MAX];
};

struct rver {
	int used;
	int late;			/* joined mid-stream: no NACKs */
	struct psb_mc_ver v;
	uint8_t *buf;			/* nseg * seg_size: the last segment's tail stays 0 */
	uint64_t cap;
	uint64_t *have;			/* per group: data segments arrived */
	struct psb_mc_nack_entry *ncf;	/* per group: the repair the sender said is coming */
	uint64_t *ncf_until;		/* ... and until when that is believed */
	struct pgrp **pg;
	uint32_t ngroups, whole, missing;
	uint32_t lo;			/* groups below it are whole */
	uint32_t max_seen;		/* highest data segment arrived, + 1 */
	uint32_t hb_sent;		/* segments the sender says it sent */
};

struct psb_mc_recv {
	struct psb_mc_recv_cfg cfg;
	psb_mc_nack_fn nack;
	void *arg;
	int have_session, joined;
	uint32_t session;
	uint64_t heard_ns;
	uint32_t newest;		/* the newest version started, 0: none this session */
	uint64_t newest_ns;		/* when a packet of it last came */
	struct rver part;
	struct psb_mc_ver cv;		/* the latest complete version */
	uint8_t *cbuf;
	uint64_t ccap;
	int cvalid, c_old;		/* c_old: of a session before */
	uint64_t nack_at;		/* 0: no NACK timer */
	int retrying;
	uint64_t rng;
	uint64_t par_bytes;
	struct psb_mc_fec fec;
	uint8_t nbuf[PSB_MC_HLEN + PSB_MC_NACK_MAX * PSB_MC_NACK_ENTRY];
	struct psb_mc_nack_entry ent[PSB_MC_NACK_MAX];
	struct psb_mc_recv_stats st;
};

static void
held(struct psb_mc_recv *r)
{
	r->st.held_bytes = (r->cvalid ? r->ccap : 0) + (r->part.used ? r->part.cap : 0) +
		r->par_bytes;
}

int
psb_mc_recv_create(const struct psb_mc_recv_cfg *cfg, psb_mc_nack_fn nack, void *arg,
		struct psb_mc_recv **out)
{
	struct psb_mc_recv *r;

	*out = NULL;
	if (nack == NULL || cfg->max_version == 0 || cfg->max_version > PSB_MC_MAX_VERSION ||
	    (!cfg->track_only && cfg->budget == 0) || cfg->retry_ns == 0 || cfg->vid_window == 0)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return -ENOMEM;
	r->cfg = *cfg;
	r->nack = nack;
	r->arg = arg;
	r->rng = cfg->seed * 0x9e3779b97f4a7c15ull + cfg->id + 1;
	*out = r;
	return 0;
}

static unsigned int
popc(uint64_t x)
{
	return (unsigned int)__builtin_popcountll(x);
}

static void
pgrp_free(struct psb_mc_recv *r, struct rver *p, uint32_t g)
{
	struct pgrp *pg = p->pg[g];
	unsigned int i;

	if (pg == NULL)
		return;
	for (i = 0; i < pg->n; i++)
		if (pg->sym[i] != NULL) {
			free(pg->sym[i]);
			r->par_bytes -= p->v.seg_size;
		}
	free(pg);
	p->pg[g] = NULL;
	if (!r->cfg.track_only)
		r->par_bytes -= sizeof(*pg);
}

/* The version being received is dropped; keep_buf: its bytes became the latest's. */
static void
part_drop(struct psb_mc_recv *r, int keep_buf)
{
	struct rver *p = &r->part;
	uint32_t g;

	if (!p->used)
		return;
	for (g = 0; p->pg != NULL && g < p->ngroups; g++)
		pgrp_free(r, p, g);
	free(p->pg);
	free(p->have);
	free(p->ncf);
	free(p->ncf_until);
	if (!keep_buf)
		free(p->buf);
	memset(p, 0, sizeof(*p));
	r->nack_at = 0;
	r->retrying = 0;
	held(r);
}

void
psb_mc_recv_free(struct psb_mc_recv *r)
{
	if (r == NULL)
		return;
	part_drop(r, 0);
	free(r->cbuf);
	free(r);
}

static int
ver_same(const struct psb_mc_ver *a, const struct psb_mc_ver *b)
{
	return a->vid == b->vid && a->nseg == b->nseg && a->total_len == b->total_len &&
		a->crc == b->crc && a->group == b->group && a->seg_size == b->seg_size;
}

static int
part_start(struct psb_mc_recv *r, const struct psb_mc_pkt *pk)
{
	struct rver *p = &r->part;
	uint32_t ngroups = psb_mc_ngroups(&pk->ver);
	/* its bytes and its bookkeeping per group, both inside the budget */
	uint64_t cap = r->cfg.track_only ? 0 : (uint64_t)pk->ver.nseg * pk->ver.seg_size +
		(uint64_t)ngroups * (sizeof(*p->have) + sizeof(*p->pg) + sizeof(*p->ncf) +
				     sizeof(*p->ncf_until));

	if (pk->ver.total_len > r->cfg.max_version ||
	    (!r->cfg.track_only && (r->cvalid ? r->ccap : 0) + cap > r->cfg.budget)) {
		r->st.oversize++;
		return -1;
	}
	if (p->used)
		r->st.superseded++;
	part_drop(r, 0);
	p->v = pk->ver;
	p->ngroups = ngroups;
	p->have = calloc(p->ngroups, sizeof(*p->have));
	p->pg = calloc(p->ngroups, sizeof(*p->pg));
	p->ncf = calloc(p->ngroups, sizeof(*p->ncf));
	p->ncf_until = calloc(p->ngroups, sizeof(*p->ncf_until));
	/*
	 * Not zeroed (a version's worth of memset, and on fresh pages as many faults): every
	 * byte is written by a segment or by decoding before the version is whole, but for
	 * the last segment's tail past the version's end, which parity counts as zeros.
	 */
	p->buf = cap != 0 ? malloc((size_t)pk->ver.nseg * pk->ver.seg_size) : NULL;
	if (p->buf != NULL)
		memset(p->buf + pk->ver.total_len, 0,
		       (size_t)pk->ver.nseg * pk->ver.seg_size - pk->ver.total_len);
	if (p->have == NULL || p->pg == NULL || p->ncf == NULL || p->ncf_until == NULL ||
	    (cap != 0 && p->buf == NULL)) {
		free(p->have);
		free(p->pg);
		free(p->ncf);
		free(p->ncf_until);
		free(p->buf);
		memset(p, 0, sizeof(*p));
		r->st.no_memory++;
		return -1;
	}
	p->used = 1;
	p->cap = cap;
	p->missing = pk->ver.nseg;
	/*
	 * Joined while it streamed: the first thing heard of it is a segment (or a heartbeat
	 * saying how far the sender got) more than reorder segments in. Losing its first few
	 * packets does not make a receiver late.
	 */
	p->late = !r->joined && (pk->type == PSB_MC_DATA || pk->type == PSB_MC_HEARTBEAT) &&
		pk->a > r->cfg.reorder;
	r->st.late_joins += (uint64_t)p->late;
	r->newest = pk->ver.vid;
	r->st.started++;
	held(r);
	return 0;
}

/* Every group is whole: checked, it becomes the latest. Returns 1 when it did. */
static int
part_finish(struct psb_mc_recv *r)
{
	struct rver *p = &r->part;

	if (!r->cfg.track_only && psb_mc_crc(0, p->buf, p->v.total_len) != p->v.crc) {
		r->st.crc_fail++;
		part_drop(r, 0);
		return 0;
	}
	free(r->cbuf);
	r->cbuf = p->buf;
	r->ccap = p->cap;
	r->cv = p->v;
	r->cvalid = 1;
	r->c_old = 0;
	r->joined = 1;
	r->st.completed++;
	r->st.latest = p->v.vid;
	part_drop(r, 1);
	return 1;
}

static void
decode(struct psb_mc_recv *r, struct rver *p, uint32_t g)
{
	struct pgrp *pg = p->pg[g];
	uint32_t k = psb_mc_group_k(&p->v, g), base = g * p->v.group, i, ns = 0, nm = 0;
	uint8_t *src[PSB_MC_GROUP_MAX], *out[PSB_MC_GROUP_MAX];
	uint16_t id[PSB_MC_GROUP_MAX];
	uint8_t miss[PSB_MC_GROUP_MAX];

	for (i = 0; i < k; i++) {
		uint8_t *seg = r->cfg.track_only ? NULL : p->buf + (uint64_t)(base + i) *
			p->v.seg_size;

		if (p->have[g] >> i & 1) {
			src[ns] = seg;
			id[ns++] = (uint16_t)i;
		} else {
			out[nm] = seg;
			miss[nm++] = (uint8_t)i;
		}
	}
	for (i = 0; ns < k; i++) {
		src[ns] = pg->sym[i];
		id[ns++] = (uint16_t)(k + pg->idx[i]);
	}
	if (!r->cfg.track_only &&
	    psb_mc_fec_decode(&r->fec, k, p->v.seg_size, src, id, miss, nm, out) != 0)
		return;		/* cannot happen with distinct ids; the group waits for more */
	/* the last segment's tail past the version's end decodes to the zeros it was made of */
	p->have[g] = psb_mc_group_mask(&p->v, g);
	p->missing -= nm;
	r->st.decoded_groups++;
	r->st.recovered_segs += nm;
}

/* Group g got a symbol: whole, or decodable now? Returns 1 when the version completed. */
static int
progress(struct psb_mc_recv *r, uint32_t g)
{
	struct rver *p = &r->part;
	uint32_t k = psb_mc_group_k(&p->v, g), have = popc(p->have[g]);

	if (have < k && p->pg[g] != NULL && have + p->pg[g]->n >= k)
		decode(r, p, g);
	if (p->have[g] != psb_mc_group_mask(&p->v, g))
		return 0;
	pgrp_free(r, p, g);
	held(r);
	p->whole++;
	while (p->lo < p->ngroups && p->have[p->lo] == psb_mc_group_mask(&p->v, p->lo))
		p->lo++;
	return p->whole == p->ngroups ? part_finish(r) : 0;
}

/* Segments up to which the sender has surely sent (losses below it are losses). */
static uint32_t
sent_through(const struct psb_mc_recv *r, const struct rver *p)
{
	uint32_t seen = p->max_seen > r->cfg.reorder ? p->max_seen - r->cfg.reorder : 0;

	return p->hb_sent > seen ? p->hb_sent : seen;
}

static int
group_due(const struct psb_mc_recv *r, const struct rver *p, uint32_t g)
{
	return g * p->v.group + psb_mc_group_k(&p->v, g) <= sent_through(r, p);
}

/* A loss seen and no NACK timer: start one, a random time up to backoff away. */
static void
arm(struct psb_mc_recv *r, uint64_t now_ns)
{
	struct rver *p = &r->part;

	if (r->nack_at != 0 || !p->used || p->late || p->lo >= p->ngroups ||
	    !group_due(r, p, p->lo))
		return;
	r->nack_at = now_ns + (r->cfg.backoff_ns != 0 ? psb_mc_rand(&r->rng) % r->cfg.backoff_ns : 0) + 1;
}

int
psb_mc_recv_input(struct psb_mc_recv *r, const uint8_t *buf, size_t len, uint64_t now_ns)
{
	struct rver *p = &r->part;
	struct psb_mc_pkt pk;
	int rc = psb_mc_parse(buf, len, &pk), done = 0;
	uint32_t g;

	r->st.pkts++;
	if (rc < 0) {
		r->st.bad[-rc]++;
		return 0;
	}
	if (rc == PSB_MC_NACK) {
		r->st.other++;	/* another receiver's, where NACKs are multicast */
		return 0;
	}
	if (!r->have_session || (pk.session != r->session &&
				 now_ns - r->heard_ns > r->cfg.session_idle_ns)) {
		/* the first sender heard, or a new one after the old fell silent */
		if (r->have_session) {
			part_drop(r, 0);
			r->c_old = 1;
		}
		r->have_session = 1;
		r->session = pk.session;
		r->newest = 0;
		r->joined = 0;
		r->st.sessions++;
	} else if (pk.session != r->session) {
		r->st.forged++;
		return 0;
	}
	if (r->newest != 0 && pk.ver.vid < r->newest && now_ns - r->newest_ns >
	    r->cfg.session_idle_ns && pk.ver.vid > (r->cvalid && !r->c_old ? r->cv.vid : 0)) {
		/*
		 * Nothing of the newest version it knows came for that long, while older ones
		 * of the same session do: that version was never the sender's (a forged packet
		 * set it, or it failed its check). Follow what comes again.
		 */
		r->st.abandoned++;
		part_drop(r, 0);
		r->newest = r->cvalid && !r->c_old ? r->cv.vid : 0;
	}
	if (p->used && pk.ver.vid == p->v.vid) {
		if (!ver_same(&pk.ver, &p->v)) {
			r->st.forged++;
			return 0;
		}
	} else if (r->cvalid && !r->c_old && pk.ver.vid == r->cv.vid) {
		if (!ver_same(&pk.ver, &r->cv))
			r->st.forged++;
		else if (pk.type == PSB_MC_HEARTBEAT)
			r->st.heartbeats++;
		else
			r->st.stale++;	/* repairs others asked for */
		r->heard_ns = now_ns;
		return 0;
	} else if (r->newest != 0 && pk.ver.vid <= r->newest) {
		r->st.stale++;
		return 0;
	} else if (r->newest != 0 && pk.ver.vid - r->newest > r->cfg.vid_window) {
		r->st.out_of_window++;
		return 0;
	} else if (part_start(r, &pk) != 0) {
		return 0;
	}
	r->heard_ns = now_ns;
	r->newest_ns = now_ns;	/* the version received is the newest it knows */
	switch (pk.type) {
	case PSB_MC_DATA: {
		uint32_t bit;

		g = pk.a / p->v.group;
		bit = pk.a % p->v.group;
		r->st.data_pkts++;
		if (p->have[g] >> bit & 1) {
			r->st.dup_data++;
			break;
		}
		if (!r->cfg.track_only)
			memcpy(p->buf + (uint64_t)pk.a * p->v.seg_size, pk.payload, pk.len);
		p->have[g] |= UINT64_C(1) << bit;
		p->missing--;
		if (pk.a + 1 > p->max_seen)
			p->max_seen = pk.a + 1;
		done = progress(r, g);
		break;
	}
	case PSB_MC_PARITY: {
		struct pgrp *pg;
		unsigned int i;
		uint8_t *sym = NULL;

		g = pk.a;
		r->st.parity_pkts++;
		if (p->have[g] == psb_mc_group_mask(&p->v, g)) {
			r->st.parity_unused++;
			break;
		}
		if (p->pg[g] == NULL) {
			/* a group's parity bookkeeping counts against the budget too */
			if ((!r->cfg.track_only && r->st.held_bytes + sizeof(*pg) + p->v.seg_size >
			     r->cfg.budget) || (p->pg[g] = calloc(1, sizeof(*pg))) == NULL) {
				r->st.over_budget++;
				break;
			}
			if (!r->cfg.track_only) {
				r->par_bytes += sizeof(*pg);
				held(r);
			}
		}
		pg = p->pg[g];
		for (i = 0; i < pg->n && pg->idx[i] != pk.b; i++)
			;
		if (i < pg->n) {
			r->st.dup_parity++;
			break;
		}
		if (!r->cfg.track_only) {
			if (r->st.held_bytes + p->v.seg_size > r->cfg.budget ||
			    (sym = malloc(p->v.seg_size)) == NULL) {
				r->st.over_budget++;
				break;
			}
			memcpy(sym, pk.payload, p->v.seg_size);
			r->par_bytes += p->v.seg_size;
			held(r);
		}
		/* fewer than k - have held: progress decodes at exactly enough */
		pg->idx[pg->n] = pk.b;
		pg->sym[pg->n++] = sym;
		done = progress(r, g);
		break;
	}
	case PSB_MC_HEARTBEAT:
		r->st.heartbeats++;
		if (pk.a > p->hb_sent)
			p->hb_sent = pk.a;
		break;
	case PSB_MC_NCF: {
		unsigned int i;

		r->st.ncfs++;
		for (i = 0; i < pk.b; i++) {
			struct psb_mc_nack_entry e;

			psb_mc_nack_entry(&pk, i, &e);
			p->ncf[e.group] = e;
			p->ncf_until[e.group] = now_ns + r->cfg.retry_ns;
		}
		break;
	}
	}
	if (!done)
		arm(r, now_ns);
	return done;
}

void
psb_mc_recv_poll(struct psb_mc_recv *r, uint64_t now_ns)
{
	struct rver *p = &r->part;
	uint32_t g, n = 0, through, covered = 0;
	size_t len;

	if (r->nack_at == 0 || now_ns < r->nack_at)
		return;
	r->nack_at = 0;
	if (!p->used || p->late)
		return;
	through = sent_through(r, p);
	for (g = p->lo; g < p->ngroups && n < PSB_MC_NACK_MAX; g++) {
		uint32_t k = psb_mc_group_k(&p->v, g), have = popc(p->have[g]);
		uint32_t par = p->pg[g] != NULL ? p->pg[g]->n : 0;
		uint64_t missing = ~p->have[g] & psb_mc_group_mask(&p->v, g);
		const struct psb_mc_nack_entry *c = &p->ncf[g];

		if (g * p->v.group + k > through)
			break;
		if (have + par >= k)
			continue;
		/* what the sender said is coming covers it: someone else asked */
		if (now_ns < p->ncf_until[g] &&
		    (c->need >= k - have - par || (missing & ~c->missing) == 0)) {
			covered++;
			continue;
		}
		r->ent[n].group = g;
		r->ent[n].need = (uint16_t)(k - have - par);
		r->ent[n].missing = missing;
		n++;
	}
	if (n == 0) {
		/* the repairs someone else asked for came, or are coming */
		if (!r->retrying || covered != 0)
			r->st.nacks_suppressed++;
		r->retrying = covered != 0;
		if (covered != 0)
			r->nack_at = now_ns + r->cfg.retry_ns;
		return;
	}
	len = psb_mc_write_nack(r->nbuf, PSB_MC_NACK, r->session, &p->v, r->cfg.id, r->ent, n);
	r->nack(r->arg, r->nbuf, len);
	r->st.nacks++;
	r->st.nack_entries += n;
	r->retrying = 1;
	r->nack_at = now_ns + r->cfg.retry_ns +
		(r->cfg.backoff_ns != 0 ? psb_mc_rand(&r->rng) % r->cfg.backoff_ns : 0);
}

uint64_t
psb_mc_recv_next_ns(const struct psb_mc_recv *r)
{
	return r->nack_at != 0 ? r->nack_at : UINT64_MAX;
}

const uint8_t *
psb_mc_recv_latest(const struct psb_mc_recv *r, struct psb_mc_ver *v)
{
	if (!r->cvalid) {
		memset(v, 0, sizeof(*v));
		return NULL;
	}
	*v = r->cv;
	return r->cbuf;
}

void
psb_mc_recv_partial(const struct psb_mc_recv *r, uint32_t *vid, uint32_t *missing)
{
	*vid = r->part.used ? r->part.v.vid : 0;
	*missing = r->part.used ? r->part.missing : 0;
}

const struct psb_mc_recv_stats *
psb_mc_recv_stats(const struct psb_mc_recv *r)
{
	return &r->st;
}

int
psb_mc_recv_session(const struct psb_mc_recv *r, uint32_t *session)
{
	*session = r->session;
	return r->have_session;
}
