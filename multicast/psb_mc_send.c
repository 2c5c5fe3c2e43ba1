/* The sending side of psb's reliable multicast (see psb_mc_send.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "psb_mc_send.h"

/*
 * A group's repair round: merged from NACKs, waiting in its version's queue until ready_ns,
 * then sent. A round sends each data segment once at most and as many parity symbols as the
 * neediest entry asked for: what it sent already is never asked of it again.
 */
struct rep {
	uint64_t missing;		/* data segments to send again */
	uint64_t sent;			/* ... and those it sent again */
	uint64_t ready_ns;
	uint16_t want;			/* symbols the neediest entry asked for */
	uint16_t psent;			/* parity symbols it sent */
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

/* A token bucket: bytes at bps, up to burst (bps 0: no limit). */
struct bucket {
	double tokens;
	double burst;
	uint64_t bps;
	uint64_t t_ns;
};

#define NACKER_WAYS	8

/* A receiver the sender heard NACKs from, and what it may still draw. */
struct nacker {
	struct psb_mc_nacker pub;	/* ids: 1 */
	uint64_t last_ns;
	struct bucket b;
	uint8_t used;
};

struct psb_mc_send {
	struct psb_mc_send_cfg cfg;
	psb_mc_emit_fn emit;
	psb_mc_release_fn release;
	void *arg;
	/* repaired (sent whole), streaming, waiting */
	struct sver rv, cur, next;
	uint32_t last_vid;		/* the newest published, 0: none */
	struct bucket pace;		/* every packet but heartbeats */
	struct bucket rep;		/* repairs and NCFs, besides */
	int limited;			/* a repair due waits for rep */
	struct nacker *nk;		/* receivers: nsets sets of NACKER_WAYS */
	struct nacker *hk;		/* hosts (id 0): as many */
	struct psb_mc_nacker *scratch;	/* psb_mc_send_nackers' room: one a receiver */
	uint32_t nsets;
	uint64_t rcv_bps, host_bps;
	double rcv_burst, host_burst;
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

/* Bytes a packet of plen payload bytes takes on the wire, as pacing counts them. */
static unsigned int
wire(unsigned int plen)
{
	return PSB_MC_HLEN + plen + PSB_MC_WIRE_OVERHEAD;
}

static void
bucket_fill(struct bucket *b, uint64_t now_ns)
{
	if (b->bps != 0 && now_ns > b->t_ns) {
		b->tokens += (double)(now_ns - b->t_ns) * (double)b->bps / 8e9;
		if (b->tokens > b->burst)
			b->tokens = b->burst;
	}
	b->t_ns = now_ns;
}

/* Whether bytes may go now, the bucket filled up to now. */
static int
bucket_has(struct bucket *b, uint64_t now_ns, double bytes)
{
	if (b->bps == 0)
		return 1;
	bucket_fill(b, now_ns);
	return b->tokens >= bytes;
}

static void
bucket_take(struct bucket *b, double bytes)
{
	if (b->bps != 0)
		b->tokens -= bytes;
}

/* When the bucket holds bytes, filled at its rate from its last reading. */
static uint64_t
bucket_when(const struct bucket *b, double bytes)
{
	if (b->bps == 0 || b->tokens >= bytes)
		return b->t_ns;
	return b->t_ns + (uint64_t)((bytes - b->tokens) * 8e9 / (double)b->bps) + 1;
}

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
	uint64_t ref, group_bytes;

	*out = NULL;
	if (cfg->seg_size < PSB_MC_SEG_MIN || cfg->seg_size > PSB_MC_SEG_MAX || cfg->group == 0 ||
	    cfg->group > PSB_MC_GROUP_MAX || cfg->parity > PSB_MC_PARITY_MAX ||
	    cfg->proactive > cfg->parity || emit == NULL ||
	    (cfg->adaptive && (cfg->rate_bps == 0 || cfg->min_rate_bps > cfg->rate_bps)) ||
	    cfg->repair_pct > 100 || cfg->receiver_pct > 100 ||
	    cfg->receivers > PSB_MC_RECEIVERS_MAX)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	s->cfg = *cfg;
	if (s->cfg.repair_pct == 0)
		s->cfg.repair_pct = PSB_MC_REPAIR_PCT;
	if (s->cfg.receiver_pct == 0)
		s->cfg.receiver_pct = PSB_MC_RECEIVER_PCT;
	if (s->cfg.receivers == 0)
		s->cfg.receivers = PSB_MC_RECEIVERS;
	s->nsets = (s->cfg.receivers + NACKER_WAYS - 1) / NACKER_WAYS;
	s->sym = calloc(2, cfg->seg_size);
	s->nk = calloc((size_t)s->nsets * NACKER_WAYS, sizeof(*s->nk));
	s->hk = calloc((size_t)s->nsets * NACKER_WAYS, sizeof(*s->hk));
	s->scratch = calloc((size_t)s->nsets * NACKER_WAYS, sizeof(*s->scratch));
	if (s->sym == NULL || s->nk == NULL || s->hk == NULL || s->scratch == NULL) {
		free(s->sym);
		free(s->nk);
		free(s->hk);
		free(s->scratch);
		free(s);
		return -ENOMEM;
	}
	s->pad = s->sym + cfg->seg_size;
	if (s->cfg.burst_bytes == 0)
		s->cfg.burst_bytes = 16ull * wire(cfg->seg_size);
	if (s->cfg.heartbeat_ns == 0)
		s->cfg.heartbeat_ns = 10000000;
	if (s->cfg.adapt_ns == 0)
		s->cfg.adapt_ns = 20000000;
	s->emit = emit;
	s->release = release;
	s->arg = arg;
	s->pace = (struct bucket){ .bps = cfg->rate_bps, .burst = (double)s->cfg.burst_bytes,
				   .tokens = (double)s->cfg.burst_bytes };
	/*
	 * Each budget holds at least two whole groups' symbols, so that any one NACK entry can
	 * be paid for and a round sent in one go; a receiver's a tenth of a second more.
	 */
	group_bytes = (uint64_t)cfg->group * wire(cfg->seg_size);
	ref = cfg->rate_bps != 0 ? cfg->rate_bps : PSB_MC_UNPACED_BPS;
	s->rep.bps = ref / 100 * s->cfg.repair_pct;
	s->rep.burst = (double)(s->cfg.burst_bytes > 2 * group_bytes ? s->cfg.burst_bytes :
				2 * group_bytes);
	s->rep.tokens = s->rep.burst;
	s->rcv_bps = s->rep.bps / 100 * s->cfg.receiver_pct;
	s->rcv_burst = (double)s->rcv_bps / 80.0;
	if (s->rcv_burst < (double)(2 * group_bytes))
		s->rcv_burst = (double)(2 * group_bytes);
	/* a host's receivers together: twice one's, so that ids do not multiply a budget */
	s->host_bps = 2 * s->rcv_bps < s->rep.bps ? 2 * s->rcv_bps : s->rep.bps;
	s->host_burst = 2 * s->rcv_burst;
	s->st.rate_bps = cfg->rate_bps;
	s->st.repair_bps = s->rep.bps;
	s->st.receiver_bps = s->rcv_bps;
	s->st.host_bps = s->host_bps;
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
	free(s->nk);
	free(s->hk);
	free(s->scratch);
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

/*
 * Whether a packet of plen payload bytes may go now: the pace, and for a repair the repair
 * budget too (a repair that waits for it is counted once each time it starts waiting).
 */
static int
may_send(struct psb_mc_send *s, uint64_t now_ns, unsigned int plen, int repair)
{
	if (!bucket_has(&s->pace, now_ns, wire(plen)))
		return 0;
	if (repair && !bucket_has(&s->rep, now_ns, wire(plen))) {
		if (!s->limited)
			s->st.repair_limited++;
		s->limited = 1;
		return 0;
	}
	return 1;
}

/* One packet out, paced: 1 sent, 0 not now (no tokens, or the port is full). */
static int
put(struct psb_mc_send *s, uint64_t now_ns, const uint8_t *payload, unsigned int plen,
		int repair)
{
	if (!may_send(s, now_ns, plen, repair))
		return 0;
	if (s->emit(s->arg, s->hdr, PSB_MC_HLEN, payload, plen) != 0) {
		s->st.emit_busy++;
		return 0;
	}
	bucket_take(&s->pace, wire(plen));
	if (repair) {
		bucket_take(&s->rep, wire(plen));
		s->limited = 0;
	}
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
send_parity(struct psb_mc_send *s, struct sver *v, uint32_t g, unsigned int j, uint64_t now_ns,
		int repair)
{
	uint8_t *src[PSB_MC_GROUP_MAX];
	uint32_t k = psb_mc_group_k(&v->v, g), i;

	/* not made when it could not go now */
	if (!may_send(s, now_ns, v->v.seg_size, repair))
		return 0;
	for (i = 0; i < k; i++)
		src[i] = (uint8_t *)(uintptr_t)seg_ptr(s, v, g * v->v.group + i,
						       g * v->v.group + i == v->v.nseg - 1);
	psb_mc_fec_encode(&s->fec, k, j, v->v.seg_size, src, s->sym);
	psb_mc_write_parity(s->hdr, s->cfg.session, &v->v, g, (uint16_t)j);
	return put(s, now_ns, s->sym, v->v.seg_size, repair);
}

static int
send_data(struct psb_mc_send *s, struct sver *v, uint32_t seg, uint64_t now_ns, int repair)
{
	uint32_t len = psb_mc_seg_len(&v->v, seg);

	psb_mc_write_data(s->hdr, s->cfg.session, &v->v, seg, (uint16_t)len);
	return put(s, now_ns, seg_ptr(s, v, seg, 0), len, repair);
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
		if (r->psent < r->want && v->par_next[g] < s->cfg.parity) {
			if (!send_parity(s, v, g, v->par_next[g], now_ns, 1))
				return n;
			v->par_next[g]++;
			r->psent++;
			if (r->psent == r->want)
				r->missing = 0;	/* k symbols of any kind make the group */
			s->st.repair_parity_pkts++;
			s->st.repair_bytes += v->v.seg_size;
		} else if (r->missing != 0) {
			uint32_t bit = (uint32_t)__builtin_ctzll(r->missing);
			uint32_t seg = g * v->v.group + bit;

			if (!send_data(s, v, seg, now_ns, 1))
				return n;
			r->missing &= r->missing - 1;
			r->sent |= UINT64_C(1) << bit;
			s->st.repair_data_pkts++;
			s->st.repair_bytes += psb_mc_seg_len(&v->v, seg);
		}
		n++;
		if (r->missing == 0) {
			/* the group's round is over: a NACK for it now opens the next one */
			memset(r, 0, sizeof(*r));
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

			if (!send_parity(s, v, v->pro_group, j, now_ns, 0))
				break;
			v->par_next[v->pro_group]++;
			v->pro_left--;
			s->st.proactive_pkts++;
		} else if (v->next_seg < v->v.nseg) {
			uint32_t seg = v->next_seg;

			if (!send_data(s, v, seg, now_ns, 0))
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
		(uint32_t)(s->pace.bps / 1000000));
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
	bucket_fill(&s->pace, now_ns);
	if (s->win_need * 50 > s->win_data && s->win_need != 0) {
		s->pace.bps = s->pace.bps / 4 * 3;
		if (s->pace.bps < s->cfg.min_rate_bps)
			s->pace.bps = s->cfg.min_rate_bps;
		s->st.backoffs++;
	} else if (s->win_need == 0) {
		s->pace.bps += s->cfg.rate_bps / 32;
		if (s->pace.bps > s->cfg.rate_bps)
			s->pace.bps = s->cfg.rate_bps;
	}
	s->st.rate_bps = s->pace.bps;
	s->win_data = s->win_need = 0;
	s->adapt_ns = now_ns + s->cfg.adapt_ns;
}

unsigned int
psb_mc_send_poll(struct psb_mc_send *s, uint64_t now_ns, unsigned int max_pkts)
{
	unsigned int n;

	adapt(s, now_ns);
	heartbeat(s, now_ns);
	/*
	 * Repairs of the version streaming first, within their budget: they finish what
	 * receivers already wait for. Then the stream, then repairs of the version before it
	 * with what the stream leaves: it is superseded once the stream ends.
	 */
	n = repair(s, &s->cur, now_ns, max_pkts);
	n += stream(s, now_ns, max_pkts - n);
	n += repair(s, &s->rv, now_ns, max_pkts - n);
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
	uint64_t t = UINT64_MAX, r, c;
	double sym = wire(s->cfg.seg_size);

	if (s->rv.used || s->cur.used)
		t = s->hb_ns;
	r = repair_due(&s->rv);
	c = repair_due(&s->cur);
	r = c < r ? c : r;
	if (r != UINT64_MAX) {
		/* a repair goes once both its pace and the repair budget allow */
		c = bucket_when(&s->rep, sym);
		r = c > r ? c : r;
		c = bucket_when(&s->pace, sym);
		r = c > r ? c : r;
		t = r < t ? r : t;
	}
	if (s->cur.used) {
		c = bucket_when(&s->pace, sym);
		c = c > now_ns ? c : now_ns;
		t = c < t ? c : t;
	}
	return t;
}

int
psb_mc_send_busy(const struct psb_mc_send *s)
{
	return s->cur.used || s->next.used || s->rv.qn != 0;
}

int
psb_mc_send_streaming(const struct psb_mc_send *s)
{
	return s->cur.used || s->next.used;
}

const struct psb_mc_send_stats *
psb_mc_send_stats(const struct psb_mc_send *s)
{
	return &s->st;
}

void
psb_mc_send_stats_add(struct psb_mc_send_stats *dst, const struct psb_mc_send_stats *src)
{
	struct psb_mc_send_stats d = *dst;
	uint64_t *a = (uint64_t *)dst;
	const uint64_t *b = (const uint64_t *)src;
	size_t i;

	for (i = 0; i < sizeof(*dst) / sizeof(uint64_t); i++)
		a[i] += b[i];
	dst->rate_bps = d.rate_bps > src->rate_bps ? d.rate_bps : src->rate_bps;
	dst->repair_bps = d.repair_bps > src->repair_bps ? d.repair_bps : src->repair_bps;
	dst->receiver_bps = d.receiver_bps > src->receiver_bps ? d.receiver_bps :
		src->receiver_bps;
}

static int
ver_same(const struct psb_mc_ver *a, const struct psb_mc_ver *b)
{
	return a->vid == b->vid && a->nseg == b->nseg && a->total_len == b->total_len &&
		a->crc == b->crc && a->group == b->group && a->seg_size == b->seg_size;
}

static uint32_t
nacker_set(const struct psb_mc_send *s, uint32_t addr, uint32_t id)
{
	uint64_t h = ((uint64_t)addr << 32 | id) * 0x9e3779b97f4a7c15ull;

	return (uint32_t)((h >> 32) % s->nsets);
}

/*
 * The entry of addr and id in table t (receivers, or hosts under id 0), tracked from now on
 * if it was not: a full set makes room, the one heard from longest ago going (*evicted
 * counts it, *tracked the entries in use).
 */
static struct nacker *
nacker_get(struct psb_mc_send *s, struct nacker *t, uint32_t addr, uint32_t id,
		uint64_t now_ns, uint64_t bps, double burst, uint64_t *tracked, uint64_t *evicted)
{
	struct nacker *set = &t[(size_t)nacker_set(s, addr, id) * NACKER_WAYS], *n = NULL;
	unsigned int i;

	for (i = 0; i < NACKER_WAYS; i++) {
		struct nacker *w = &set[i];

		if (w->used && w->pub.addr == addr && w->pub.id == id)
			return w;
		if (n == NULL || !w->used || (n->used && w->last_ns < n->last_ns))
			n = w;
	}
	if (n->used)
		(*evicted)++;
	else
		(*tracked)++;
	memset(n, 0, sizeof(*n));
	n->used = 1;
	n->pub.addr = addr;
	n->pub.id = id;
	n->pub.ids = 1;
	n->b = (struct bucket){ .bps = bps, .burst = burst, .tokens = burst, .t_ns = now_ns };
	return n;
}

/*
 * The symbols a round still sends: parity while it lasts (parity_left of the group unsent)
 * up to want, and, were that not enough, every segment in missing.
 */
static unsigned int
round_cost(uint16_t want, uint16_t psent, uint64_t missing, unsigned int parity_left)
{
	unsigned int need = want > psent ? want - psent : 0;
	unsigned int p = need < parity_left ? need : parity_left;

	return p + (need > p ? (unsigned int)__builtin_popcountll(missing) : 0);
}

/* What entry e adds to its group's round r, in symbols: none of what r sent already. */
static unsigned int
entry_adds(const struct psb_mc_send *s, const struct sver *v, const struct rep *r,
		const struct psb_mc_nack_entry *e)
{
	unsigned int left = s->cfg.parity - v->par_next[e->group];
	uint16_t want = e->need > r->want ? e->need : r->want;

	return round_cost(want, r->psent, r->missing | (e->missing & ~r->sent), left) -
		round_cost(r->want, r->psent, r->missing, left);
}

void
psb_mc_send_input(struct psb_mc_send *s, const uint8_t *buf, size_t len, uint32_t addr,
		uint64_t now_ns)
{
	struct psb_mc_pkt p;
	struct sver *v = NULL;
	struct nacker *nk, *hk;
	unsigned int i, n = 0;
	size_t nl;
	int rc = psb_mc_parse(buf, len, &p);

	s->st.nack_pkts++;
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
	nk = nacker_get(s, s->nk, addr, p.a, now_ns, s->rcv_bps, s->rcv_burst, &s->st.nackers,
			&s->st.nackers_evicted);
	hk = nacker_get(s, s->hk, addr, 0, now_ns, s->host_bps, s->host_burst, &s->st.hosts,
			&s->st.hosts_evicted);
	nk->last_ns = hk->last_ns = now_ns;
	nk->pub.nacks++;
	for (i = 0; i < p.b; i++) {
		struct psb_mc_nack_entry e;
		struct rep *r;
		unsigned int adds;
		double cost;

		psb_mc_nack_entry(&p, i, &e);
		s->st.nack_entries++;
		nk->pub.entries++;
		if (e.group * v->v.group + psb_mc_group_k(&v->v, e.group) > v->next_seg) {
			s->st.nack_premature++;
			continue;
		}
		r = &v->rep[e.group];
		adds = entry_adds(s, v, r, &e);
		if (adds == 0) {
			s->st.nack_merged++;	/* its round sends what it asks already */
			continue;
		}
		cost = (double)adds * wire(v->v.seg_size);
		if (!bucket_has(&nk->b, now_ns, cost) || !bucket_has(&hk->b, now_ns, cost)) {
			s->st.nack_over_budget++;
			nk->pub.over_budget++;
			continue;
		}
		bucket_take(&nk->b, cost);
		bucket_take(&hk->b, cost);
		nk->pub.repair_bytes += (uint64_t)adds * v->v.seg_size;
		s->win_need += adds;
		r->missing |= e.missing & ~r->sent;
		if (e.need > r->want)
			r->want = e.need;
		s->ent[n++] = (struct psb_mc_nack_entry){ .group = e.group,
			.need = (uint16_t)(r->want - r->psent), .missing = r->missing | r->sent };
		if (r->queued) {
			s->st.nack_raised++;
			continue;
		}
		s->st.nack_opened++;
		r->queued = 1;
		r->ready_ns = now_ns + s->cfg.nack_hold_ns;
		v->q[(v->qh + v->qn) % v->ngroups] = e.group;
		v->qn++;
	}
	if (n == 0)
		return;
	/* what is coming, to everybody at once: receivers missing the same ask no more */
	nl = psb_mc_write_nack(s->ncf, PSB_MC_NCF, s->cfg.session, &v->v, 0, s->ent, n);
	if (!bucket_has(&s->rep, now_ns, (double)nl + PSB_MC_WIRE_OVERHEAD)) {
		s->st.ncf_skipped++;
		return;
	}
	if (s->emit(s->arg, s->ncf, PSB_MC_HLEN, s->ncf + PSB_MC_HLEN,
		    (unsigned int)(nl - PSB_MC_HLEN)) != 0) {
		s->st.emit_busy++;
		return;
	}
	bucket_take(&s->rep, (double)nl + PSB_MC_WIRE_OVERHEAD);
	s->st.ncfs++;
}

static int
busier(const struct psb_mc_nacker *a, const struct psb_mc_nacker *b)
{
	return a->nacks > b->nacks || (a->nacks == b->nacks && a->addr < b->addr);
}

static int
by_addr(const void *a, const void *b)
{
	const struct psb_mc_nacker *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

void
psb_mc_nackers_add(struct psb_mc_nacker *top, unsigned int *k, unsigned int n,
		const struct psb_mc_nacker *c)
{
	struct psb_mc_nacker x = *c;
	unsigned int i, j;

	for (i = 0; i < *k && top[i].addr != c->addr; i++)
		;
	if (i < *k) {
		/* the same host from another sender: one entry, the id of the busier part */
		x = top[i];
		if (c->nacks > x.nacks)
			x.id = c->id;
		x.ids += c->ids;
		x.nacks += c->nacks;
		x.entries += c->entries;
		x.over_budget += c->over_budget;
		x.repair_bytes += c->repair_bytes;
		memmove(&top[i], &top[i + 1], (*k - i - 1) * sizeof(*top));
		(*k)--;
	}
	if (n == 0 || (*k == n && !busier(&x, &top[n - 1])))
		return;
	j = *k < n ? (*k)++ : n - 1;
	while (j > 0 && busier(&x, &top[j - 1])) {
		top[j] = top[j - 1];
		j--;
	}
	top[j] = x;
}

unsigned int
psb_mc_send_nackers(struct psb_mc_send *s, struct psb_mc_nacker *out, unsigned int n)
{
	size_t i, all = (size_t)s->nsets * NACKER_WAYS, nh = 0, h;
	unsigned int k = 0;

	for (i = 0; i < all; i++)
		if (s->nk[i].used)
			s->scratch[nh++] = s->nk[i].pub;
	qsort(s->scratch, nh, sizeof(*s->scratch), by_addr);
	/* each address's receivers summed into its first, then the n busiest kept in order */
	for (h = 0, i = 0; i < nh; h = i) {
		struct psb_mc_nacker c = s->scratch[h];
		uint64_t most = c.nacks;

		for (i = h + 1; i < nh && s->scratch[i].addr == c.addr; i++) {
			const struct psb_mc_nacker *r = &s->scratch[i];

			if (r->nacks > most) {
				most = r->nacks;
				c.id = r->id;
			}
			c.ids++;
			c.nacks += r->nacks;
			c.entries += r->entries;
			c.over_budget += r->over_budget;
			c.repair_bytes += r->repair_bytes;
		}
		psb_mc_nackers_add(out, &k, n, &c);
	}
	return k;
}
