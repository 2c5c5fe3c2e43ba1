/* A simulated network in virtual time for the multicast state machines (psb_mc_sim.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "psb_be.h"
#include "psb_mc_rand.h"
#include "psb_mc_sim.h"

struct pkt {
	uint32_t refs;
	uint32_t len;
	uint8_t data[];
};

struct ev {
	uint64_t t;
	uint64_t seq;			/* ties: in the order they were made */
	int dst;			/* receiver, or < 0: to the sender from address -dst */
	struct pkt *p;
};

/* What receiver i's NACK callback needs. */
struct rx_ctx {
	struct psb_mc_sim *s;
	unsigned int i;
};

struct psb_mc_sim {
	struct psb_mc_sim_cfg cfg;
	uint64_t now, seq, rng;
	struct psb_mc_send *tx;
	struct psb_mc_recv **rx;
	struct rx_ctx *ctx;
	struct psb_mc_loss *loss;
	uint8_t storm_hdr[PSB_MC_HLEN];	/* the newest version's packet the stormers heard */
	int storm_heard;
	uint64_t storm_ns;		/* the stormers' next NACKs */
	uint32_t storm_turn;
	uint8_t storm_buf[PSB_MC_HLEN + PSB_MC_NACK_MAX * PSB_MC_NACK_ENTRY];
	struct ev *heap;
	size_t nev, cap;
	struct psb_mc_sim_stats st;
};

static double
unif(struct psb_mc_sim *s)
{
	return (double)(psb_mc_rand(&s->rng) >> 11) / (double)(UINT64_C(1) << 53);
}

static int
before(const struct ev *a, const struct ev *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void
push(struct psb_mc_sim *s, uint64_t t, int dst, struct pkt *p)
{
	struct ev e = { .t = t, .seq = s->seq++, .dst = dst, .p = p };
	size_t i;

	if (s->nev == s->cap) {
		size_t cap = s->cap != 0 ? s->cap * 2 : 4096;
		struct ev *h = realloc(s->heap, cap * sizeof(*h));

		if (h == NULL) {
			s->st.oom++;	/* the packet is lost, and counted */
			return;
		}
		s->heap = h;
		s->cap = cap;
	}
	p->refs++;
	i = s->nev++;
	while (i > 0 && before(&e, &s->heap[(i - 1) / 2])) {
		s->heap[i] = s->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	s->heap[i] = e;
}

static struct ev
pop(struct psb_mc_sim *s)
{
	struct ev top = s->heap[0], last = s->heap[--s->nev];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= s->nev)
			break;
		if (c + 1 < s->nev && before(&s->heap[c + 1], &s->heap[c]))
			c++;
		if (!before(&s->heap[c], &last))
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (s->nev != 0)
		s->heap[i] = last;
	return top;
}

static void
unref(struct pkt *p)
{
	if (--p->refs == 0)
		free(p);
}

static struct pkt *
pkt_new(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	struct pkt *p = malloc(sizeof(*p) + alen + blen);

	if (p == NULL)
		return NULL;
	p->refs = 1;		/* the maker's, dropped once every receiver got its own */
	p->len = (uint32_t)(alen + blen);
	memcpy(p->data, a, alen);
	if (blen != 0)
		memcpy(p->data + alen, b, blen);
	return p;
}

static int
lost(struct psb_mc_sim *s, struct psb_mc_loss *l)
{
	if (s->now < l->join_at_ns || (l->dead_after_ns != 0 && s->now >= l->dead_after_ns))
		return 1;
	if (l->p_gb > 0) {
		if (l->bad && unif(s) < l->p_bg)
			l->bad = 0;
		else if (!l->bad && unif(s) < l->p_gb)
			l->bad = 1;
		if (l->bad)
			return 1;
	}
	return l->p > 0 && unif(s) < l->p;
}

static uint64_t
late(struct psb_mc_sim *s, const struct psb_mc_loss *l)
{
	return l->reorder > 0 && s->cfg.reorder_ns != 0 && unif(s) < l->reorder ?
		psb_mc_rand(&s->rng) % s->cfg.reorder_ns : 0;
}

static int
emit(void *arg, const uint8_t *hdr, unsigned int hlen, const uint8_t *payload,
		unsigned int plen)
{
	struct psb_mc_sim *s = arg;
	struct pkt *p;
	unsigned int i;

	s->st.pkts++;
	s->st.wire_bytes += hlen + plen + PSB_MC_WIRE_OVERHEAD;
	if (s->cfg.shared_p > 0 && unif(s) < s->cfg.shared_p)
		return 0;
	p = pkt_new(hdr, hlen, payload, plen);
	if (p == NULL) {
		s->st.oom++;
		return 0;
	}
	if (s->cfg.nstorm != 0 && hlen >= PSB_MC_HLEN && hdr[3] != PSB_MC_NCF &&
	    (!s->storm_heard || psb_rd32(hdr + 8) >= psb_rd32(s->storm_hdr + 8))) {
		memcpy(s->storm_hdr, hdr, PSB_MC_HLEN);
		s->storm_heard = 1;
	}
	for (i = 0; i < s->cfg.nrx; i++) {
		struct psb_mc_loss *l = &s->loss[i];

		if (lost(s, l))
			continue;
		push(s, s->now + s->cfg.delay_ns + late(s, l), (int)i, p);
		if (l->dup > 0 && unif(s) < l->dup)
			push(s, s->now + s->cfg.delay_ns + late(s, l) + 1, (int)i, p);
	}
	unref(p);
	return 0;
}

/* A NACK on its way to the sender from address from. */
static void
nack_to_sender(struct psb_mc_sim *s, const uint8_t *buf, size_t len, unsigned int from)
{
	struct pkt *p;

	if (s->cfg.nack_loss > 0 && unif(s) < s->cfg.nack_loss)
		return;
	p = pkt_new(buf, len, NULL, 0);
	if (p == NULL) {
		s->st.oom++;
		return;
	}
	push(s, s->now + s->cfg.delay_ns, -(int)from, p);
	unref(p);
}

static void
nack_out(void *arg, const uint8_t *buf, size_t len)
{
	struct rx_ctx *c = arg;

	nack_to_sender(c->s, buf, len, c->i + 1);
}

/* Each stormer's NACK: every symbol of every group of the version heard, by its header. */
static void
storm(struct psb_mc_sim *s)
{
	struct psb_mc_nack_entry e[PSB_MC_NACK_MAX];
	struct psb_mc_ver v;
	unsigned int j, g, n;
	size_t len;

	s->storm_ns = s->now + s->cfg.storm_every_ns;
	if (!s->storm_heard)
		return;
	v = (struct psb_mc_ver){ .vid = psb_rd32(s->storm_hdr + 8),
		.nseg = psb_rd32(s->storm_hdr + 12), .total_len = psb_rd64(s->storm_hdr + 16),
		.crc = psb_rd32(s->storm_hdr + 24), .group = psb_rd16(s->storm_hdr + 28),
		.seg_size = psb_rd16(s->storm_hdr + 30) };
	for (n = 0, g = 0; g < psb_mc_ngroups(&v) && n < PSB_MC_NACK_MAX; g++, n++)
		e[n] = (struct psb_mc_nack_entry){ .group = g,
			.need = (uint16_t)psb_mc_group_k(&v, g),
			.missing = psb_mc_group_mask(&v, g) };
	for (j = 0; j < s->cfg.nstorm; j++) {
		uint32_t id = 1000000 + j * 1000 + (s->cfg.storm_ids > 1 ?
						    s->storm_turn % s->cfg.storm_ids : 0);

		len = psb_mc_write_nack(s->storm_buf, PSB_MC_NACK, psb_rd32(s->storm_hdr + 4), &v,
					id, e, n);
		s->st.storm_nacks++;
		nack_to_sender(s, s->storm_buf, len, s->cfg.nrx + j + 1);
	}
	s->storm_turn++;
}

static void
release(void *arg, uint32_t vid, const void *data)
{
	struct psb_mc_sim *s = arg;

	if (s->cfg.release != NULL)
		s->cfg.release(s->cfg.release_arg, vid, data);
}

int
psb_mc_sim_new_sender(struct psb_mc_sim *s, const struct psb_mc_send_cfg *cfg)
{
	struct psb_mc_send *tx;
	int rc = psb_mc_send_create(cfg, emit, release, s, &tx);

	if (rc != 0)
		return rc;
	psb_mc_send_free(s->tx);
	s->tx = tx;
	return 0;
}

int
psb_mc_sim_create(const struct psb_mc_sim_cfg *cfg, const struct psb_mc_loss *loss,
		struct psb_mc_sim **out)
{
	struct psb_mc_sim *s;
	unsigned int i;
	int rc;

	*out = NULL;
	if (cfg->nrx == 0 || (cfg->nstorm != 0 && cfg->storm_every_ns == 0))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	s->cfg = *cfg;
	s->rng = cfg->seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
	s->rx = calloc(cfg->nrx, sizeof(*s->rx));
	s->ctx = calloc(cfg->nrx, sizeof(*s->ctx));
	s->loss = calloc(cfg->nrx, sizeof(*s->loss));
	if (s->rx == NULL || s->ctx == NULL || s->loss == NULL) {
		psb_mc_sim_free(s);
		return -ENOMEM;
	}
	if (loss != NULL)
		memcpy(s->loss, loss, cfg->nrx * sizeof(*loss));
	rc = psb_mc_sim_new_sender(s, &cfg->send);
	for (i = 0; rc == 0 && i < cfg->nrx; i++) {
		struct psb_mc_recv_cfg rc_i = cfg->recv;

		rc_i.id = i + 1;
		rc_i.seed = cfg->seed * 1000003u + i;
		s->ctx[i] = (struct rx_ctx){ .s = s, .i = i };
		rc = psb_mc_recv_create(&rc_i, nack_out, &s->ctx[i], &s->rx[i]);
	}
	if (rc != 0) {
		psb_mc_sim_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void
psb_mc_sim_free(struct psb_mc_sim *s)
{
	unsigned int i;

	if (s == NULL)
		return;
	while (s->nev != 0)
		unref(pop(s).p);
	free(s->heap);
	psb_mc_send_free(s->tx);
	for (i = 0; s->rx != NULL && i < s->cfg.nrx; i++)
		psb_mc_recv_free(s->rx[i]);
	free(s->rx);
	free(s->ctx);
	free(s->loss);
	free(s);
}

/* The next thing that happens: a packet arriving, a sender's or a receiver's timer. */
static uint64_t
next_event(const struct psb_mc_sim *s)
{
	uint64_t t = psb_mc_send_next_ns(s->tx, s->now);
	unsigned int i;

	for (i = 0; i < s->cfg.nrx; i++) {
		uint64_t r = psb_mc_recv_next_ns(s->rx[i]);

		t = r < t ? r : t;
	}
	if (s->cfg.nstorm != 0 && s->storm_ns < t)
		t = s->storm_ns;
	if (s->nev != 0 && s->heap[0].t < t)
		t = s->heap[0].t;
	return t;
}

void
psb_mc_sim_run(struct psb_mc_sim *s, uint64_t until_ns)
{
	unsigned int i;

	while (s->now < until_ns) {
		uint64_t t = next_event(s);

		s->now = t > until_ns ? until_ns : t > s->now ? t : s->now;
		while (s->nev != 0 && s->heap[0].t <= s->now) {
			struct ev e = pop(s);

			if (e.dst < 0) {
				s->st.nacks++;
				s->st.nack_bytes += e.p->len + PSB_MC_WIRE_OVERHEAD;
				psb_mc_send_input(s->tx, e.p->data, e.p->len, (uint32_t)-e.dst,
						  s->now);
			} else {
				s->st.deliveries++;
				psb_mc_recv_input(s->rx[e.dst], e.p->data, e.p->len, s->now);
			}
			unref(e.p);
		}
		if (s->cfg.nstorm != 0 && s->now >= s->storm_ns)
			storm(s);
		psb_mc_send_poll(s->tx, s->now, 64);
		for (i = 0; i < s->cfg.nrx; i++)
			psb_mc_recv_poll(s->rx[i], s->now);
	}
}

uint64_t
psb_mc_sim_now(const struct psb_mc_sim *s)
{
	return s->now;
}

int
psb_mc_sim_publish(struct psb_mc_sim *s, uint32_t vid, const void *data, uint64_t len)
{
	return psb_mc_send_publish(s->tx, vid, data, len, psb_mc_crc(0, data, len), s->now);
}

struct psb_mc_send *
psb_mc_sim_sender(struct psb_mc_sim *s)
{
	return s->tx;
}

struct psb_mc_recv *
psb_mc_sim_receiver(struct psb_mc_sim *s, unsigned int i)
{
	return i < s->cfg.nrx ? s->rx[i] : NULL;
}

struct psb_mc_loss *
psb_mc_sim_loss(struct psb_mc_sim *s, unsigned int i)
{
	return i < s->cfg.nrx ? &s->loss[i] : NULL;
}

const struct psb_mc_sim_stats *
psb_mc_sim_stats(const struct psb_mc_sim *s)
{
	return &s->st;
}
