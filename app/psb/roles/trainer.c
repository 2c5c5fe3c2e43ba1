/*
 * trainer role: the appliance as the staleness experiment's trainer (a document of kind
 * staleness on a node of role trainer). The run itself (the join wait, a version every push
 * period, posts and their ACKs, the report every 5 s, the end) is psb_stale_trainer, as in
 * psb-stale's trainer; here it is fed the datagrams psb_dispatch hands over (PSB_FRAME_UDP
 * at staleness.port, to this node), and its versions go out as mbufs through the tx role:
 * by psb_mc_send to the group's MAC (01:00:5e and the group's low 23 bits), or in pull mode
 * by one psb_mc_send a worker, to that worker's address.
 *
 * Versions are made here (psb_stale_fill, CRC32C) into at most staleness.budget bytes: a
 * version is kept while a sender still sends or repairs it, and a push that finds no room
 * is skipped (counted), never blocking the lcore. A version is made MAKE_SLICE bytes a poll
 * pass (about 0.1 ms of the lcore), so that one of gigabytes does not hold up the packets
 * of this lcore's roles; it is handed over once whole, and its time per push is from its
 * push to then.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_malloc.h>

#include "psb_app.h"
#include "psb_be.h"
#include "psb_counters.h"
#include "psb_mc_send.h"
#include "psb_stale_trainer.h"
#include "psb_stale_versions.h"

#define PUB_EVERY_NS	(50ull * 1000 * 1000)	/* live figures for the control plane */
#define SEND_PASS	256			/* packets a sender sends a pass at most */
#define SERIES_MAX	262144			/* posts kept for staleness.csv at most */
#define MAKE_SLICE	(1u << 20)		/* bytes of a version made a poll pass */

/* Figures for readers on other lcores: a sequence lock, odd while being written. */
struct trn_snap {
	volatile uint32_t seq;
	struct psb_stale_pub pub;
	struct psb_trainer_snap fig;
};

/*
 * A sender and where its packets go: the group (multicast), or in pull mode one worker
 * (made at its first PULL).
 */
struct trn_out {
	struct psb_role_inst *ri;
	struct psb_mc_send *tx;
	struct psb_addr to;		/* the group's MAC is fixed; a worker's from ARP */
	int group;
	uint32_t vid;			/* pull: the newest it holds or was given */
};

struct trn_priv {
	struct psb_role_inst *ri;
	struct psb_stale_trainer tr;
	int have;			/* tr holds a run (started, not released) */
	uint32_t exp_id;
	int mode;			/* enum psb_exp_stale_mode */
	struct psb_mc_send_cfg scfg;
	struct trn_out mc;		/* multicast: the group's sender */
	struct trn_out *pull;		/* pull: [workers] */
	struct psb_addr src;
	struct psb_stale_versions vers;	/* the versions made, held by senders */
	uint64_t now;
	uint64_t next_step_ns, next_pub_ns, next_arp_ns;
	uint64_t unresolved, stray_nacks, pulls;
	struct psb_mc_send_stats last;	/* the senders' figures, kept once they are freed */
	struct psb_mc_nacker last_nackers[PSB_TRN_NACKERS];	/* ... and their busiest hosts */
	unsigned int nlast;
	struct psb_trainer_row *rows;	/* [nrows], once the run ended */
	uint32_t nrows;
	struct psb_trainer_series series;	/* its posts: staleness.csv and .svg */
	uint32_t series_max;
	struct trn_snap snap;
};

static void
mac_of_group(uint32_t g, uint8_t *mac)
{
	mac[0] = 0x01;
	mac[1] = 0x00;
	mac[2] = 0x5e;
	mac[3] = (uint8_t)((g >> 16) & 0x7f);
	mac[4] = (uint8_t)(g >> 8);
	mac[5] = (uint8_t)g;
}

/* A worker's MAC and port, or NULL (ARP asked, at most every 100 ms; counted). */
static const struct psb_neigh *
neigh_of(struct psb_role_inst *ri, uint32_t ip)
{
	struct trn_priv *tp = ri->priv;
	const struct psb_neigh *n = psb_neigh_or_arp(ri, ip, tp->now, &tp->next_arp_ns);

	if (n == NULL)
		tp->unresolved++;
	return n;
}

/* A sender's packets: to the group out of the first port, or to its worker. */
static int
out_emit(void *arg, const uint8_t *hdr, unsigned int hlen, const uint8_t *payload,
		unsigned int plen)
{
	struct trn_out *o = arg;
	struct trn_priv *tp = o->ri->priv;
	const struct psb_neigh *n;

	if (o->group)
		return psb_out_udp(o->ri, &tp->src, &o->to, o->ri->app->port_ids[0], hdr, hlen,
				   payload, plen);
	n = neigh_of(o->ri, o->to.ip);
	if (n == NULL)
		return -EAGAIN;
	memcpy(o->to.mac, n->mac, 6);
	return psb_out_udp(o->ri, &tp->src, &o->to, n->port, hdr, hlen, payload, plen);
}

/* The run's messages to a worker (ACKs). */
static void
trn_send(void *arg, uint32_t ip, uint16_t port, const uint8_t *buf, size_t len)
{
	struct psb_role_inst *ri = arg;
	struct trn_priv *tp = ri->priv;
	const struct psb_neigh *n = neigh_of(ri, ip);
	struct psb_addr to = { .ip = ip, .port = port };

	if (n == NULL)
		return;
	memcpy(to.mac, n->mac, 6);
	psb_out_udp(ri, &tp->src, &to, n->port, buf, (unsigned int)len, NULL, 0);
}

/* A post's figures, kept for the run's time series (within its bound, else counted). */
static void
trn_point(void *arg, const struct psb_stale_point *pt)
{
	struct trn_priv *tp = ((struct psb_role_inst *)arg)->priv;
	struct psb_trainer_series *sr = &tp->series;

	if (sr->n < tp->series_max)
		sr->pts[sr->n++] = *pt;
	else
		sr->dropped++;
}

static void
trn_log(void *arg, int level, const char *line)
{
	(void)arg;
	if (level <= 4)
		PSB_ERR(trainer, "%s", line);
	else if (level == 5)
		PSB_WARN(trainer, "%s", line);
	else if (level <= 7)
		PSB_INFO(trainer, "%s", line);
	else
		PSB_DEBUG(trainer, "%s", line);
}

static void
slot_release(void *arg, uint32_t vid, const void *data)
{
	struct trn_priv *tp = ((struct trn_out *)arg)->ri->priv;

	(void)vid;
	psb_stale_versions_release(&tp->vers, data);
}

/* A version made whole handed to the workers' transport: 0, or -1 (the run fails). */
static int
hand_over(struct trn_priv *tp, struct psb_stale_version *s, uint64_t now)
{
	if (tp->mode != PSB_EXP_STALE_MULTICAST)
		return 0;		/* pull: given to each worker as it asks */
	s->refs++;
	if (psb_mc_send_publish(tp->mc.tx, s->vid, s->data, tp->vers.len, s->crc, now) != 0) {
		s->refs--;
		return -1;
	}
	return 0;
}

/* Version vid begun, and made as far as a slice goes (the run's publish). */
static int
trn_publish(void *arg, uint32_t vid, uint64_t now, uint64_t *done)
{
	struct psb_role_inst *ri = arg;
	struct trn_priv *tp = ri->priv;
	struct psb_stale_version *s;

	if (psb_stale_versions_begin(&tp->vers, vid) != 0) {
		PSB_LOG_LIMITED(WARNING, trainer, "no memory left for version %u within "
				"staleness.budget: not published (experiment.trainer.skipped)", vid);
		return 1;
	}
	s = psb_stale_versions_step(&tp->vers, MAKE_SLICE);
	if (s == NULL)
		return 2;		/* the next passes make the rest (make_more) */
	*done = psb_now_ns(ri->app);	/* before a worker can take it: it is the newest now */
	return hand_over(tp, s, now) != 0 ? -1 : 0;
}

/* A slice more of the version being made; handed over once whole. 1 while one is made. */
static int
make_more(struct trn_priv *tp)
{
	struct psb_stale_version *s;
	uint64_t now;

	if (tp->vers.making < 0)
		return 0;
	if (tp->tr.phase != PSB_STALE_TR_RUNNING || tp->tr.making == 0) {
		psb_stale_versions_abort(&tp->vers);	/* the run stopped publishing */
		return 0;
	}
	s = psb_stale_versions_step(&tp->vers, MAKE_SLICE);
	if (s == NULL)
		return 1;
	now = psb_now_ns(tp->ri->app);
	psb_stale_trainer_made(&tp->tr, s->vid, hand_over(tp, s, now), now);
	return 1;
}

/* Give a puller the newest version when it holds an older one. */
static void
pull_give(struct trn_priv *tp, struct trn_out *p)
{
	struct psb_stale_version *s = psb_stale_versions_newest(&tp->vers);

	if (s == NULL || p->vid >= s->vid)
		return;
	s->refs++;
	if (psb_mc_send_publish(p->tx, s->vid, s->data, tp->vers.len, s->crc, tp->now) != 0) {
		s->refs--;
		return;
	}
	p->vid = s->vid;
}

static void
on_pull(struct trn_priv *tp, const struct psb_stale_msg *m, uint32_t ip, uint16_t port)
{
	struct trn_out *p;

	if (tp->mode != PSB_EXP_STALE_PULL) {
		tp->tr.unexpected++;
		return;
	}
	tp->pulls++;
	p = &tp->pull[m->worker];
	if (p->tx == NULL) {
		p->ri = tp->ri;
		p->to = (struct psb_addr){ .ip = ip, .port = port };
		p->vid = m->held;
		if (psb_mc_send_create(&tp->scfg, out_emit, slot_release, p, &p->tx) != 0) {
			p->tx = NULL;
			tp->ri->cnt.no_mbuf++;	/* no memory for its sender: its next PULL tries */
			return;
		}
	}
	if (m->held > p->vid)
		p->vid = m->held;
	pull_give(tp, p);
}

/* A datagram at the trainer's port. */
static void
trn_input(struct trn_priv *tp, const uint8_t *p, size_t len, uint32_t ip, uint16_t port)
{
	struct psb_stale_msg m;
	struct psb_mc_pkt pk;

	if (len >= 2 && psb_rd16(p) == PSB_MC_MAGIC) {
		/* multicast: from a worker's address, as in pull mode below */
		if (tp->mode == PSB_EXP_STALE_MULTICAST) {
			if (psb_stale_trainer_is_worker(&tp->tr, ip))
				psb_mc_send_input(tp->mc.tx, p, len, ip, tp->now);
			else
				tp->stray_nacks++;
			return;
		}
		/* pull: the NACK names its receiver, a worker, whose address it must come from */
		if (psb_mc_parse(p, len, &pk) == PSB_MC_NACK && pk.a < tp->tr.cfg.workers &&
		    tp->pull[pk.a].tx != NULL && tp->pull[pk.a].to.ip == ip &&
		    tp->pull[pk.a].to.port == port) {
			psb_mc_send_input(tp->pull[pk.a].tx, p, len, ip, tp->now);
			return;
		}
		tp->stray_nacks++;
		return;
	}
	if (psb_stale_trainer_input(&tp->tr, p, len, ip, port, tp->now, &m) == PSB_STALE_PULL)
		on_pull(tp, &m, ip, port);
}

/* Every sender's figures summed (kept ones, once the senders were freed). */
static void
sender_stats(const struct trn_priv *tp, struct psb_mc_send_stats *st)
{
	uint32_t i;

	*st = tp->last;
	if (tp->mc.tx != NULL)
		psb_mc_send_stats_add(st, psb_mc_send_stats(tp->mc.tx));
	for (i = 0; tp->pull != NULL && i < tp->tr.cfg.workers; i++)
		if (tp->pull[i].tx != NULL)
			psb_mc_send_stats_add(st, psb_mc_send_stats(tp->pull[i].tx));
}

/* The busiest hosts NACKing the senders into top (those of freed senders kept): how many. */
static unsigned int
busiest(const struct trn_priv *tp, struct psb_mc_nacker *top)
{
	struct psb_mc_nacker one[PSB_TRN_NACKERS];
	unsigned int k = 0, n, i, j;

	for (i = 0; i < tp->nlast; i++)
		psb_mc_nackers_add(top, &k, PSB_TRN_NACKERS, &tp->last_nackers[i]);
	for (i = 0; i <= (tp->pull != NULL ? tp->tr.cfg.workers : 0); i++) {
		struct psb_mc_send *tx = i == 0 ? tp->mc.tx : tp->pull[i - 1].tx;

		if (tx == NULL)
			continue;
		n = psb_mc_send_nackers(tx, one, PSB_TRN_NACKERS);
		for (j = 0; j < n; j++)
			psb_mc_nackers_add(top, &k, PSB_TRN_NACKERS, &one[j]);
	}
	return k;
}

static void
busiest_figures(const struct trn_priv *tp, struct psb_trainer_snap *f)
{
	struct psb_mc_nacker top[PSB_TRN_NACKERS];
	unsigned int k = busiest(tp, top), i;

	for (i = 0; i < k; i++) {
		f->nacker_addr[i] = top[i].addr;
		f->nacker_ids[i] = top[i].ids;
		f->nacker_id[i] = top[i].id;
		f->nacker_nacks[i] = top[i].nacks;
		f->nacker_over_budget[i] = top[i].over_budget;
		f->nacker_repair_bytes[i] = top[i].repair_bytes;
	}
}

static void
fill_figures(const struct trn_priv *tp, struct psb_trainer_snap *f)
{
	const struct psb_stale_trainer *t = &tp->tr;
	const struct psb_stale_totals *tot;
	struct psb_mc_send_stats st;
	unsigned int k;

	memset(f, 0, sizeof(*f));
	if (t->acct == NULL)
		return;
	tot = psb_stale_acct_totals(t->acct);
	sender_stats(tp, &st);
	f->session = t->cfg.session;
	f->workers = t->cfg.workers;
	f->joined = psb_stale_acct_joined(t->acct);
	f->holding_final = psb_stale_trainer_ndone(t);
	f->running = t->phase == PSB_STALE_TR_RUNNING;
	f->ended = t->phase >= PSB_STALE_TR_ENDING;
	f->version = t->vid;
	f->pushes = t->pushes;
	f->late_pushes = t->late_pushes;
	f->skipped = t->skipped;
	f->push_ms_mean = t->pushes ? t->push_sum_ns / 1e6 / t->pushes : 0.0;
	f->push_ms_max = t->push_max_ns / 1e6;
	f->posts = tot->posts;
	f->joins = tot->joins;
	f->duplicates = tot->duplicates;
	f->version_difference = tot->posts ? tot->diff_sum / tot->posts : 0.0;
	f->window_staleness = tot->posts ? tot->window_sum / tot->posts : 0.0;
	f->window_staleness_max = tot->window_max;
	for (k = 0; k < PSB_STALE_REF_MAX; k++)
		f->refused += tot->refused[k];
	for (k = 0; k < PSB_STALE_BAD_MAX; k++)
		f->malformed += tot->bad[k];
	f->unexpected = t->unexpected;
	f->stray_nacks = tp->stray_nacks;
	f->unresolved = tp->unresolved;
	f->pulls = tp->pulls;
	f->held_bytes = (uint64_t)tp->vers.n * tp->vers.len;
	f->series_dropped = tp->series.dropped;
	f->mc = st;
	busiest_figures(tp, f);
}

/* The run's state for the control plane; final: it ended (or was stopped), figures final. */
static void
publish(struct trn_priv *tp, int final)
{
	struct trn_snap *s = &tp->snap;
	const struct psb_stale_trainer *t = &tp->tr;

	psb_seq_write_begin(&s->seq);
	s->pub.exp_id = tp->exp_id;
	s->pub.done = final || !tp->have;
	if (tp->have) {
		s->pub.rc = t->phase == PSB_STALE_TR_FAILED ? -ETIMEDOUT : 0;
		if (s->pub.rc != 0)
			snprintf(s->pub.reason, sizeof(s->pub.reason), "trainer: %.240s",
				 t->failure);
		else
			s->pub.reason[0] = '\0';
		fill_figures(tp, &s->fig);	/* once the run is over, they stay as they were */
	}
	psb_seq_write_end(&s->seq);
}

int
psb_trainer_read(const struct psb_role_inst *ri, struct psb_stale_pub *pub,
		struct psb_trainer_snap *figures)
{
	const struct trn_priv *tp = ri->priv;

	if (tp == NULL)
		return -ENOENT;
	return psb_seq_read(&tp->snap.seq, pub, &tp->snap.pub, sizeof(*pub), figures,
			    &tp->snap.fig, sizeof(*figures));
}

const struct psb_trainer_row *
psb_trainer_rows(const struct psb_role_inst *ri, uint32_t *n)
{
	const struct trn_priv *tp = ri->priv;

	*n = tp != NULL && tp->rows != NULL ? tp->nrows : 0;
	return *n != 0 ? tp->rows : NULL;
}

const struct psb_trainer_series *
psb_trainer_series(const struct psb_role_inst *ri)
{
	const struct trn_priv *tp = ri->priv;

	return tp != NULL && tp->rows != NULL ? &tp->series : NULL;
}

/* The run's workers as rows of results, from its accounting. */
static void
take_rows(struct trn_priv *tp)
{
	const struct psb_stale_trainer *t = &tp->tr;
	uint32_t i;

	free(tp->rows);
	tp->nrows = 0;
	tp->rows = calloc(t->cfg.workers, sizeof(*tp->rows));
	if (tp->rows == NULL)
		return;
	for (i = 0; i < t->cfg.workers; i++) {
		const struct psb_stale_worker_state *w = psb_stale_acct_worker(t->acct, i);
		struct psb_trainer_row *r = &tp->rows[i];

		r->worker = i;
		r->ip = w->ip;
		r->port = w->port;
		r->holds = w->held;
		r->holds_final = t->done[i];
		r->posts = w->posts;
		r->samples = w->samples;
		r->version_difference = w->posts ? w->diff_sum / w->posts : 0.0;
		r->window_staleness = w->posts ? w->window_sum / w->posts : 0.0;
		r->window_staleness_max = w->window_max;
	}
	tp->nrows = t->cfg.workers;
	tp->series.t0_ns = t->t0;
	tp->series.dur_s = t->ran ? (tp->now - t->t0) / 1e9 : 0.0;
	tp->series.max_time_ns = t->cfg.max_time_ns;
	tp->series.workers = t->cfg.workers;
}

/* The senders and versions given back, the sender's figures kept. */
static void
release_senders(struct trn_priv *tp)
{
	uint32_t i;

	sender_stats(tp, &tp->last);
	tp->nlast = busiest(tp, tp->last_nackers);
	psb_mc_send_free(tp->mc.tx);
	tp->mc.tx = NULL;
	for (i = 0; tp->pull != NULL && i < tp->tr.cfg.workers; i++)
		psb_mc_send_free(tp->pull[i].tx);
	free(tp->pull);
	tp->pull = NULL;
	psb_stale_versions_fini(&tp->vers);
}

/* The run ended or was stopped: its figures final (rows, published), its memory given back. */
static void
end_run(struct trn_priv *tp)
{
	take_rows(tp);
	release_senders(tp);
	publish(tp, 1);
	psb_stale_trainer_fini(&tp->tr);
	tp->have = 0;
}

/* The seed's closing lines. */
static void
say_results(const struct trn_priv *tp)
{
	const struct psb_stale_trainer *t = &tp->tr;
	const struct psb_stale_totals *tot = psb_stale_acct_totals(t->acct);

	PSB_INFO(trainer, "final version %u after %.1f s", t->vid,
		 t->ran ? (tp->now - t->t0) / 1e9 : 0.0);
	PSB_INFO(trainer, "Average Version difference: %.3f  (window staleness %.3f, max %.3f; "
		 "%llu posts)", tot->posts ? tot->diff_sum / tot->posts : 0.0,
		 tot->posts ? tot->window_sum / tot->posts : 0.0, tot->window_max,
		 (unsigned long long)tot->posts);
	PSB_INFO(trainer, "Time per push: %.3f ms (max %.3f ms, %llu late)",
		 t->pushes ? t->push_sum_ns / 1e6 / t->pushes : 0.0, t->push_max_ns / 1e6,
		 (unsigned long long)t->late_pushes);
	PSB_INFO(trainer, "Final version: %u", t->vid);
	if (t->phase == PSB_STALE_TR_FAILED)
		PSB_ERR(trainer, "%s", t->failure);
}

static int
trn_start(struct psb_role_inst *ri, const struct psb_exp_conf *c)
{
	struct trn_priv *tp = ri->priv;
	struct psb_app *app = ri->app;
	const struct psb_exp_staleness *st = &c->staleness;
	unsigned int seg = app->mtu - PSB_IP_HLEN - PSB_UDP_HLEN - PSB_MC_HLEN;
	struct psb_stale_trainer_cfg tc;
	uint64_t data;
	int rc;

	if (tp->have)
		end_run(tp);
	free(tp->rows);
	tp->rows = NULL;
	tp->nrows = 0;
	free(tp->series.pts);
	memset(&tp->series, 0, sizeof(tp->series));
	memset(&tp->last, 0, sizeof(tp->last));
	tp->nlast = 0;
	tp->unresolved = tp->stray_nacks = tp->pulls = 0;
	tp->mode = st->mode;
	data = (uint64_t)(st->data_size * 1e6 + 0.5);
	if (data > PSB_MC_MAX_VERSION || psb_stale_versions_init(&tp->vers, data, st->budget) != 0)
		return -EINVAL;		/* psb_exp_check said so first */
	tp->now = psb_now_ns(app);
	tp->scfg = (struct psb_mc_send_cfg){
		.session = (uint32_t)(rte_rdtsc() ^ (uint64_t)app->me.ip << 8) | 1,
		.seg_size = (uint16_t)RTE_MIN(seg, (unsigned int)PSB_MC_SEG_MAX), .group = 64,
		.parity = (uint16_t)st->parity, .rate_bps = st->rate, .heartbeat_ns = 5000000,
		.nack_hold_ns = 200000, .repair_pct = (uint16_t)st->repair_share,
		.receiver_pct = (uint16_t)st->receiver_share,
		.receivers = (uint32_t)st->nack_receivers };
	tc = (struct psb_stale_trainer_cfg){ .session = tp->scfg.session, .key = st->key,
		.workers = (uint32_t)st->workers, .push_ns = st->push_frequency,
		.post_ns = st->post_frequency, .step_ns = st->step_frequency,
		.max_version = (uint32_t)st->max_version,
		.max_time_ns = st->max_time, .join_ns = st->join_timeout,
		.end_ns = st->end_timeout, .publish = trn_publish, .send = trn_send,
		.point = trn_point, .log = trn_log, .arg = ri };
	/* a post is a line: 2 a post period a worker on average, 4 at once */
	tp->series_max = (uint32_t)RTE_MIN((uint64_t)SERIES_MAX, st->workers *
		(2 * (st->max_time / st->post_frequency) + 4));
	tp->series.pts = malloc((size_t)tp->series_max * sizeof(*tp->series.pts));
	if (tp->series.pts == NULL)
		return -ENOMEM;
	rc = psb_stale_trainer_init(&tp->tr, &tc, tp->now);
	if (rc != 0)
		return rc;
	tp->mc = (struct trn_out){ .ri = ri, .group = 1,
		.to = { .ip = st->group, .port = (uint16_t)st->group_port } };
	mac_of_group(st->group, tp->mc.to.mac);
	if (tp->mode == PSB_EXP_STALE_MULTICAST)
		rc = psb_mc_send_create(&tp->scfg, out_emit, slot_release, &tp->mc, &tp->mc.tx);
	else if ((tp->pull = calloc(tc.workers, sizeof(*tp->pull))) == NULL)
		rc = -ENOMEM;
	if (rc != 0) {
		psb_stale_trainer_fini(&tp->tr);
		return rc;
	}
	tp->exp_id = app->run.id;
	tp->have = 1;
	tp->src = app->me;
	tp->src.port = (uint16_t)st->port;
	tp->next_step_ns = 0;
	PSB_INFO(trainer, "staleness run %u, mode %s: %u workers join at %u.%u.%u.%u:%u; %llu B "
		 "every %.3f s until version %u or %.1f s; versions in %llu B at most (%u of them), "
		 "sent in segments of %u B at %.2f Gbit/s%s; %u posts kept for staleness.csv",
		 tp->exp_id,
		 psb_exp_stale_mode_names[tp->mode], tc.workers, app->me.ip >> 24,
		 (app->me.ip >> 16) & 255, (app->me.ip >> 8) & 255, app->me.ip & 255,
		 (unsigned int)st->port, (unsigned long long)data, st->push_frequency / 1e9,
		 tc.max_version, st->max_time / 1e9,
		 (unsigned long long)tp->vers.max * data, tp->vers.max,
		 (unsigned int)tp->scfg.seg_size, st->rate / 1e9,
		 tp->mode == PSB_EXP_STALE_MULTICAST ? " to the group" : " to each worker",
		 tp->series_max);
	PSB_INFO(trainer, "repairs take at most %u %% of the rate (%.3f Gbit/s), a receiver %u %% "
		 "of that (%.3f Gbit/s); NACKs beyond are counted and ignored; %u receivers "
		 "tracked", (unsigned int)st->repair_share, st->rate / 100 * st->repair_share / 1e9,
		 (unsigned int)st->receiver_share,
		 st->rate / 100 * st->repair_share / 100 * st->receiver_share / 1e9,
		 (unsigned int)st->nack_receivers);
	publish(tp, 0);
	return 0;
}

static int
trn_ctl(struct psb_role_inst *ri, int op, const void *arg)
{
	struct trn_priv *tp = ri->priv;

	switch (op) {
	case PSB_OP_START:
		return trn_start(ri, arg);
	case PSB_OP_STOP:
		if (tp->have)
			end_run(tp);
		return 0;
	default:
		return 0;
	}
}

/* The senders' packets due now, as many as the tx ring takes; 1 while one is busy. */
static int
send_due(struct trn_priv *tp, unsigned int *sent)
{
	struct psb_role_inst *ri = tp->ri;
	unsigned int room = rte_ring_free_count(ri->app->tx_ring), i;
	int busy = 0;

	room = room > ri->ntx ? RTE_MIN(room - ri->ntx, (unsigned int)SEND_PASS) : 0;
	if (tp->mc.tx != NULL) {
		if (psb_mc_send_next_ns(tp->mc.tx, tp->now) <= tp->now)
			*sent += psb_mc_send_poll(tp->mc.tx, tp->now, room);
		busy |= psb_mc_send_busy(tp->mc.tx);
	}
	for (i = 0; tp->pull != NULL && i < tp->tr.cfg.workers; i++) {
		struct psb_mc_send *tx = tp->pull[i].tx;

		if (tx == NULL)
			continue;
		if (psb_mc_send_next_ns(tx, tp->now) <= tp->now && *sent < room)
			*sent += psb_mc_send_poll(tx, tp->now, room - *sent);
		busy |= psb_mc_send_busy(tx);
	}
	return busy;
}

static int
trn_poll(struct psb_role_inst *ri)
{
	struct trn_priv *tp = ri->priv;
	struct rte_mbuf *pkts[PSB_BURST];
	unsigned int n, i, sent = 0;
	int work;

	/* psb starting its document: what comes before the run starts waits in the ring */
	if (!tp->have && tp->exp_id == 0 && ri->app->autostart)
		return 0;
	n = rte_ring_dequeue_burst(ri->ring, (void **)pkts, PSB_BURST, NULL);
	work = (int)n;
	if (n != 0 || tp->have)
		tp->now = psb_now_ns(ri->app);
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		const struct psb_meta *meta = psb_meta(m);
		size_t len;
		const uint8_t *p = psb_udp_take(ri, m, &len);

		if (p == NULL || !tp->have)
			ri->cnt.refused++;	/* not whole, or no run to take it */
		else
			trn_input(tp, p, len, meta->src.ip, meta->src.port);
		rte_pktmbuf_free(m);
	}
	if (tp->have && (n != 0 || tp->now >= tp->next_step_ns)) {
		psb_stale_trainer_step(&tp->tr, tp->now);
		tp->next_step_ns = psb_stale_trainer_next_ns(&tp->tr);
		work++;
	}
	if (tp->have && make_more(tp))
		work++;
	if (tp->have && send_due(tp, &sent))
		work++;		/* a version streams: no sleeping between paced bursts */
	work += (int)sent;
	if (tp->have && psb_stale_trainer_over(&tp->tr)) {
		say_results(tp);
		end_run(tp);
	} else if (tp->have && tp->now >= tp->next_pub_ns) {
		publish(tp, 0);
		tp->next_pub_ns = tp->now + PUB_EVERY_NS;
	}
	psb_out_flush(ri);
	return work;
}

static int
trn_init(struct psb_role_inst *ri)
{
	struct trn_priv *tp = rte_zmalloc("psb_trainer", sizeof(*tp), RTE_CACHE_LINE_SIZE);

	if (tp == NULL)
		return -ENOMEM;
	tp->ri = ri;
	tp->vers.newest = tp->vers.making = -1;
	ri->priv = tp;
	return 0;
}

static void
trn_fini(struct psb_role_inst *ri)
{
	struct trn_priv *tp = ri->priv;

	if (tp != NULL && tp->have)
		end_run(tp);
	if (tp != NULL) {
		free(tp->rows);
		free(tp->series.pts);
	}
	psb_role_free_priv(ri);
}

static unsigned int
trn_count(const struct psb_app *app)
{
	return app->trainer ? 1 : 0;
}

static void
trn_ports(const struct psb_app *app, uint16_t *lo, uint16_t *hi)
{
	*lo = *hi = (uint16_t)app->conf.staleness.port;
}

const struct psb_role psb_role_trainer = {
	.name = "trainer",
	.count = trn_count,
	.ring = 4096,
	.claim = psb_claim_any,	/* every datagram at its port: the run sorts them out */
	.ports = trn_ports,
	.udp = 1,
	.init = trn_init,
	.poll = trn_poll,
	.fini = trn_fini,
	.ctl = trn_ctl,
};
