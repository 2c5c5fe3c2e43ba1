/*
 * receiver role: the appliance as a staleness worker (a document of kind staleness on a
 * worker node, worker id node.rank). It takes the trainer's versions from its multicast
 * group (or, in pull mode, by unicast), holds the newest verified one, samples and posts
 * as psb-stale's worker does: the part of the run both share is psb_stale_client, fed
 * here with the datagrams psb_dispatch hands over (PSB_FRAME_UDP at staleness.group_port,
 * to this node or the group) and sending its posts, pulls and NACKs through the tx role.
 */
#include <stdio.h>
#include <string.h>

#include <rte_malloc.h>

#include "psb_app.h"
#include "psb_counters.h"
#include "psb_be.h"
#include "psb_stale_client.h"

#define PUB_EVERY_NS	(50ull * 1000 * 1000)	/* live figures for the control plane */

/* Figures for readers on other lcores: a sequence lock, odd while being written. */
struct rcv_snap {
	volatile uint32_t seq;
	struct psb_stale_pub pub;
	struct psb_stale_snap fig;
};

struct rcv_priv {
	struct psb_role_inst *ri;
	struct psb_stale_client cl;
	int have;			/* cl holds a run (started, not stopped) */
	int over;			/* ... which ended: published final */
	uint32_t exp_id;
	struct psb_addr src, trainer;
	uint64_t now;
	uint64_t next_step_ns;
	uint64_t next_arp_ns;
	uint64_t next_pub_ns;
	uint64_t unresolved;
	struct psb_mc_recv_stats last;	/* the receiver's, kept once it is freed */
	struct rcv_snap snap;
};

/* The trainer's datagram, through the tx role; its MAC from ARP (asked for meanwhile). */
static void
rcv_send(void *arg, const uint8_t *buf, size_t len)
{
	struct psb_role_inst *ri = arg;
	struct rcv_priv *rp = ri->priv;
	const struct psb_neigh *n = psb_neigh_or_arp(ri, rp->trainer.ip, rp->now,
						     &rp->next_arp_ns);

	if (n == NULL) {
		rp->unresolved++;
		return;
	}
	memcpy(rp->trainer.mac, n->mac, 6);
	psb_out_udp(ri, &rp->src, &rp->trainer, n->port, buf, (unsigned int)len, NULL, 0);
}

static void
rcv_log(void *arg, int level, const char *line)
{
	(void)arg;
	if (level <= 4)
		PSB_ERR(receiver, "%s", line);
	else if (level == 5)
		PSB_WARN(receiver, "%s", line);
	else
		PSB_DEBUG(receiver, "%s", line);
}

static void
fill_figures(const struct rcv_priv *rp, struct psb_stale_snap *f)
{
	const struct psb_stale_client *c = &rp->cl;
	const struct psb_mc_recv_stats *st = c->rx != NULL ? psb_mc_recv_stats(c->rx) : &rp->last;

	memset(f, 0, sizeof(*f));
	f->worker = c->cfg.id;
	f->session = c->session;
	f->held = c->held;
	f->final_version = c->end_vid;
	f->versions = c->versions;
	f->verify_fail = c->verify_fail;
	f->posts = c->posts;
	f->acks = c->acks;
	f->stray = c->stray;
	f->early = c->early;
	f->unresolved = rp->unresolved;
	f->joined = c->session != 0;
	f->running = c->state == PSB_STALE_CL_RUNNING;
	f->ended = c->end_vid != 0 || c->state == PSB_STALE_CL_ENDING;
	f->mc = *st;
}

static void
publish(struct rcv_priv *rp)
{
	struct rcv_snap *s = &rp->snap;
	const struct psb_stale_client *c = &rp->cl;

	psb_seq_write_begin(&s->seq);
	s->pub.exp_id = rp->exp_id;
	s->pub.done = !rp->have || psb_stale_client_over(c);
	s->pub.rc = rp->have && c->state == PSB_STALE_CL_FAILED ? -ETIMEDOUT :
		rp->have && c->verify_fail != 0 && psb_stale_client_over(c) ? -EIO : 0;
	if (rp->have && c->state == PSB_STALE_CL_FAILED)
		snprintf(s->pub.reason, sizeof(s->pub.reason), "worker %u: %.200s", c->cfg.id,
			 c->failure);
	else if (s->pub.rc == -EIO)
		snprintf(s->pub.reason, sizeof(s->pub.reason), "worker %u: %llu version(s) not "
			 "what the trainer made", c->cfg.id, (unsigned long long)c->verify_fail);
	else
		s->pub.reason[0] = '\0';
	fill_figures(rp, &s->fig);
	psb_seq_write_end(&s->seq);
}

int
psb_receiver_read(const struct psb_role_inst *ri, struct psb_stale_pub *pub,
		struct psb_stale_snap *figures)
{
	const struct rcv_priv *rp = ri->priv;

	if (rp == NULL)
		return -ENOENT;
	return psb_seq_read(&rp->snap.seq, pub, &rp->snap.pub, sizeof(*pub), figures,
			    &rp->snap.fig, sizeof(*figures));
}

/* The run ended or was stopped: its receiver's figures kept, its memory given back. */
static void
release(struct rcv_priv *rp)
{
	if (rp->cl.rx != NULL)
		rp->last = *psb_mc_recv_stats(rp->cl.rx);
	psb_stale_client_fini(&rp->cl);
}

static int
rcv_start(struct psb_role_inst *ri, const struct psb_exp_conf *c)
{
	struct rcv_priv *rp = ri->priv;
	struct psb_app *app = ri->app;
	const struct psb_exp_staleness *st = &c->staleness;
	uint64_t data = (uint64_t)(st->data_size * 1e6 + 0.5);
	uint64_t budget = psb_stale_client_budget(data);
	struct psb_stale_client_cfg cc = {
		.id = app->rank_base, .key = st->key, .mode = st->mode,
		.trainer_ip = st->trainer, .trainer_port = (uint16_t)st->port,
		.step_ns = st->step_frequency, .post_ns = st->post_frequency,
		.pull_ns = st->pull_frequency, .join_ns = st->join_timeout,
		.end_ns = st->end_timeout, .data_size = data, .verify = st->verify,
		.send = rcv_send, .log = rcv_log, .arg = ri,
	};
	int rc;

	psb_stale_client_recv_cfg(&cc.recv, budget);
	cc.recv.seed = rte_rdtsc() ^ app->rank_base;
	if (rp->have)
		release(rp);
	rp->have = 0;
	memset(&rp->last, 0, sizeof(rp->last));
	rp->unresolved = 0;
	rp->now = psb_now_ns(app);
	rc = psb_stale_client_init(&rp->cl, &cc, rp->now);
	if (rc != 0)
		return rc;
	rp->exp_id = app->run.id;
	rp->have = 1;
	rp->over = 0;
	rp->trainer = (struct psb_addr){ .ip = st->trainer, .port = (uint16_t)st->port };
	rp->src = app->me;
	rp->src.port = (uint16_t)st->group_port;
	rp->next_step_ns = 0;
	PSB_INFO(receiver, "worker %u: staleness run %u, mode %s: trainer %u.%u.%u.%u:%u, "
		"versions of %llu B held in %llu B at most, the trainer's first answer awaited "
		"%.1f s", cc.id, rp->exp_id, psb_exp_stale_mode_names[st->mode],
		st->trainer >> 24, (st->trainer >> 16) & 255, (st->trainer >> 8) & 255,
		st->trainer & 255, (unsigned int)st->port, (unsigned long long)data,
		(unsigned long long)budget, st->join_timeout / 1e9);
	publish(rp);
	return 0;
}

static int
rcv_ctl(struct psb_role_inst *ri, int op, const void *arg)
{
	struct rcv_priv *rp = ri->priv;

	switch (op) {
	case PSB_OP_START:
		return rcv_start(ri, arg);
	case PSB_OP_STOP:
		if (rp->have && !psb_stale_client_over(&rp->cl))
			release(rp);
		rp->have = 0;
		publish(rp);
		return 0;
	default:
		return 0;
	}
}

static int
rcv_poll(struct psb_role_inst *ri)
{
	struct rcv_priv *rp = ri->priv;
	struct rte_mbuf *pkts[PSB_BURST];
	unsigned int n, i;
	int work;

	/*
	 * psb starting its document: what comes before the run starts waits in the ring (as
	 * much as it holds), not refused for want of a run about to begin.
	 */
	if (!rp->have && rp->exp_id == 0 && ri->app->autostart)
		return 0;
	n = rte_ring_dequeue_burst(ri->ring, (void **)pkts, PSB_BURST, NULL);
	work = (int)n;
	if (n != 0 || rp->have)
		rp->now = psb_now_ns(ri->app);
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		const struct psb_meta *meta = psb_meta(m);
		size_t len;
		const uint8_t *p = psb_udp_take(ri, m, &len);

		if (p == NULL || !rp->have || psb_stale_client_over(&rp->cl)) {
			ri->cnt.refused++;	/* not whole, or no run to take it */
		} else if (meta->dst_ip == ri->app->parse.group) {
			psb_stale_client_group(&rp->cl, p, len, rp->now);
		} else {
			psb_stale_client_input(&rp->cl, p, len, meta->src.ip, meta->src.port,
					       rp->now);
		}
		rte_pktmbuf_free(m);
	}
	if (rp->have && !rp->over && (n != 0 || rp->now >= rp->next_step_ns)) {
		psb_stale_client_step(&rp->cl, rp->now);
		rp->next_step_ns = psb_stale_client_next_ns(&rp->cl);
		work++;
		if (psb_stale_client_over(&rp->cl)) {
			rp->over = 1;
			publish(rp);
			if (rp->cl.state == PSB_STALE_CL_FAILED)
				PSB_ERR(receiver, "worker %u: %s", rp->cl.cfg.id, rp->cl.failure);
			else
				PSB_INFO(receiver, "worker %u: holds the final version %u, %llu "
					"versions taken", rp->cl.cfg.id, rp->cl.held,
					(unsigned long long)rp->cl.versions);
			release(rp);
		}
	}
	if (rp->have && rp->now >= rp->next_pub_ns) {
		publish(rp);
		rp->next_pub_ns = rp->now + PUB_EVERY_NS;
	}
	psb_out_flush(ri);
	return work;
}

static int
rcv_init(struct psb_role_inst *ri)
{
	struct rcv_priv *rp = rte_zmalloc("psb_receiver", sizeof(*rp), RTE_CACHE_LINE_SIZE);

	if (rp == NULL)
		return -ENOMEM;
	rp->ri = ri;
	ri->priv = rp;
	return 0;
}

static void
rcv_fini(struct psb_role_inst *ri)
{
	struct rcv_priv *rp = ri->priv;

	if (rp != NULL && rp->have)
		release(rp);
	psb_role_free_priv(ri);
}

static unsigned int
rcv_count(const struct psb_app *app)
{
	return app->stale ? 1 : 0;
}

static void
rcv_ports(const struct psb_app *app, uint16_t *lo, uint16_t *hi)
{
	*lo = *hi = (uint16_t)app->conf.staleness.group_port;
}

static uint32_t
rcv_group(const struct psb_app *app)
{
	return app->conf.staleness.mode == PSB_EXP_STALE_MULTICAST ? app->conf.staleness.group : 0;
}

const struct psb_role psb_role_receiver = {
	.name = "receiver",
	.count = rcv_count,
	.ring = 4096,
	.claim = psb_claim_any,	/* every datagram at its port: the run sorts them out */
	.ports = rcv_ports,
	.udp = 1,
	.group = rcv_group,
	.init = rcv_init,
	.poll = rcv_poll,
	.fini = rcv_fini,
	.ctl = rcv_ctl,
};
