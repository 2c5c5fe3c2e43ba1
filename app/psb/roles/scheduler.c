/* scheduler role: registration, ranks, key ranges and barriers (ps-lite's scheduler). */
#include <rte_malloc.h>

#include "psb_app.h"

/* Refusals logged at most; the rest are counted only (a peer could send them without end). */
#define SCHED_REFUSALS_LOGGED	10
/* Once every worker finished: FINALIZE to the servers this often, for this long at most. */
#define END_RETRY_NS		200000000ull
#define END_WAIT_NS		5000000000ull

struct sched_priv {
	struct psb_sched *s;
	uint64_t end_start_ns;		/* the servers were first told (0: not yet) */
	uint64_t end_next_ns;
	uint32_t idle_passes;
};

/* The cluster as it forms, in the log: ready always, each node with -v (PS_VERBOSE=1). */
static void
sched_event(void *ctx, const struct psb_sched_event *ev)
{
	struct psb_role_inst *ri = ctx;
	struct psb_app *app = ri->app;
	static unsigned int refusals;
	char ip[20];

	switch (ev->kind) {
	case PSB_SCHED_EV_REGISTERED:
		PSB_DEBUG(scheduler, "scheduler: %s %s:%u registered as rank %u (%u/%u servers, "
			"%u/%u workers)", ev->server ? "server" : "worker",
			psb_ip_str(ev->addr.ip, ip), ev->addr.port, ev->rank, ev->nservers,
			app->num_servers, ev->nworkers, app->num_workers);
		break;
	case PSB_SCHED_EV_READY:
		PSB_INFO(scheduler, "scheduler: all %u server(s) and %u worker(s) registered; views "
			"sent", ev->nservers, ev->nworkers);
		break;
	case PSB_SCHED_EV_REFUSED:
		if (++refusals > SCHED_REFUSALS_LOGGED)
			break;
		PSB_NOTICE(scheduler, "scheduler: REGISTER from %s:%u refused: %s%s",
			psb_ip_str(ev->addr.ip, ip), ev->addr.port,
			ev->server ? "every server's place is taken (DMLC_NUM_SERVER)" :
			"every worker's place is taken (DMLC_NUM_WORKER), or no role given",
			refusals == SCHED_REFUSALS_LOGGED ?
			"; further refusals are counted only (scheduler.rejected)" : "");
		break;
	case PSB_SCHED_EV_WORKER_DONE:
		PSB_DEBUG(scheduler, "scheduler: worker rank %u (%s:%u) finished (%u/%u)", ev->rank,
			psb_ip_str(ev->addr.ip, ip), ev->addr.port, ev->nworkers, app->num_workers);
		break;
	case PSB_SCHED_EV_FINISHED:
		PSB_INFO(scheduler, "scheduler: every worker finished%s", app->keep_serving ?
			"; the servers and the scheduler keep serving (--keep-serving)" :
			": ending the servers");
		break;
	case PSB_SCHED_EV_SERVER_ENDED:
		PSB_DEBUG(scheduler, "scheduler: server rank %u (%s:%u) ended (%u/%u)", ev->rank,
			psb_ip_str(ev->addr.ip, ip), ev->addr.port, ev->nservers, app->num_servers);
		break;
	case PSB_SCHED_EV_DEAD:
		PSB_NOTICE(scheduler, "scheduler: %s rank %u (%s:%u) is dead: nothing from it for "
			"%.1f s (--dead-after %.1f)%s", ev->server ? "server" : "worker", ev->rank,
			psb_ip_str(ev->addr.ip, ip), ev->addr.port, ev->silent_ns / 1e9,
			app->dead_after_ns / 1e9, ev->server ? "; the workers are told, and the "
			"job fails" : "; the job ends without it unless it comes back");
		break;
	case PSB_SCHED_EV_BACK:
		PSB_NOTICE(scheduler, "scheduler: %s rank %u (%s:%u) speaks again after %.1f s%s",
			ev->server ? "server" : "worker", ev->rank, psb_ip_str(ev->addr.ip, ip),
			ev->addr.port, ev->silent_ns / 1e9, ev->server ? "; it stays lost to the "
			"job" : "");
		break;
	case PSB_SCHED_EV_RESTARTED:
		PSB_NOTICE(scheduler, "scheduler: server rank %u (%s:%u) registered again from a new "
			"process: it restarted and what it stored is lost; the workers are told, and the job "
			"fails", ev->rank, psb_ip_str(ev->addr.ip, ip), ev->addr.port);
		break;
	}
}

static int
sched_init(struct psb_role_inst *ri)
{
	struct psb_sched_cfg sc = {
		.num_workers = ri->app->num_workers,
		.num_servers = ri->app->num_servers,
		.on_event = sched_event,
		.ctx = ri,
		.keep_serving = ri->app->keep_serving,
		.dead_after_ns = ri->app->dead_after_ns,
	};
	struct sched_priv *sp = rte_zmalloc("psb_sched", sizeof(*sp), RTE_CACHE_LINE_SIZE);

	if (sp == NULL)
		return -ENOMEM;
	sp->s = psb_sched_create(&sc);
	if (sp->s == NULL) {
		rte_free(sp);
		return -EINVAL;
	}
	ri->priv = sp;
	return 0;
}

static void
sched_emit(void *arg, const struct psb_addr *to, struct psb_hdr *h, const void *payload)
{
	struct psb_role_inst *ri = arg;
	struct psb_addr src = ri->app->me;
	struct rte_mbuf *m;

	src.port = ri->app->sched_port;
	m = psb_build(ri, &src, to, h, payload);
	if (m != NULL)
		psb_out(ri, m, to->ip);
}

/*
 * Every worker finished: tell the servers until each acknowledged (END_WAIT_NS at most: a
 * server gone already cannot), then end the scheduler, its counters written; with a
 * failure when the job lost a server.
 */
static void
end_job(struct psb_role_inst *ri, struct sched_priv *sp)
{
	struct psb_app *app = ri->app;
	uint64_t now = psb_now_ns(app);
	struct psb_sched_lost lost;
	unsigned int pending, nlost;
	char ip[20];

	if (sp->end_start_ns == 0)
		sp->end_start_ns = now;
	if (now < sp->end_next_ns || app->quit)
		return;
	sp->end_next_ns = now + END_RETRY_NS;
	pending = psb_sched_end_servers(sp->s, sched_emit, ri);
	if (pending != 0 && now - sp->end_start_ns < END_WAIT_NS)
		return;
	if (pending == 0)
		PSB_INFO(scheduler, "scheduler: every server ended: the job is over");
	else
		PSB_NOTICE(scheduler, "scheduler: %u server(s) did not acknowledge the end of the job "
			"within %.0f s; ending all the same", pending, END_WAIT_NS / 1e9);
	nlost = psb_sched_lost(sp->s, &lost, 1);
	if (nlost != 0)
		psb_app_fail(app, "scheduler: the job lost %u server(s), the first rank %u (%s:%u, "
			     "%s)", nlost, lost.rank, psb_ip_str(lost.addr.ip, ip), lost.addr.port,
			     lost.why == PSB_SCHED_LOST_DEAD ? "dead" : "restarted");
	else if (psb_sched_stats(sp->s)->workers_dead != 0 &&
		 psb_sched_stats(sp->s)->workers_finished < app->num_workers)
		psb_app_fail(app, "scheduler: the job ended without %u dead worker(s)",
			     app->num_workers - (unsigned int)psb_sched_stats(sp->s)->workers_finished);
	__atomic_store_n(&app->quit, 1, __ATOMIC_RELEASE);
}

static int
sched_poll(struct psb_role_inst *ri)
{
	struct rte_mbuf *pkts[PSB_BURST];
	struct sched_priv *sp = ri->priv;
	unsigned int n, i;

	n = rte_ring_dequeue_burst(ri->ring, (void **)pkts, PSB_BURST, NULL);
	for (i = 0; i < n; i++) {
		struct psb_meta *meta = psb_meta(pkts[i]);

		ri->cnt.rx_pkts++;
		psb_sched_handle(sp->s, &meta->hdr, &meta->src, sched_emit, ri);
		rte_pktmbuf_free(pkts[i]);
	}
	/* the clock, for liveness: every pass with messages, else one in 64 */
	if (n != 0 || (++sp->idle_passes & 63) == 0)
		psb_sched_tick(sp->s, psb_now_ns(ri->app));
	if (unlikely(psb_sched_finished(sp->s)) && !ri->app->keep_serving)
		end_job(ri, sp);
	psb_out_flush(ri);
	return (int)n;
}

static void
sched_fini(struct psb_role_inst *ri)
{
	struct sched_priv *sp = ri->priv;

	if (sp == NULL)
		return;
	psb_sched_free(sp->s);
	rte_free(sp);
	ri->priv = NULL;
}

/* The scheduler of a role instance, for counters and reports. */
const struct psb_sched *
psb_scheduler_sched(const struct psb_role_inst *ri)
{
	const struct sched_priv *sp = ri->priv;

	return sp != NULL ? sp->s : NULL;
}

/* A scheduler node, or a server the job's scheduler address names (ps-lite's co-location). */
static unsigned int
sched_count(const struct psb_app *app)
{
	return app->node_role == PSB_NODE_SCHEDULER ||
		(app->node_role == PSB_NODE_SERVER && app->sched_ip == app->me.ip);
}

/* The scheduler's port; this node's data port is the agent's and the server's. */
static int
sched_claim(const struct psb_app *app, const struct psb_frame *f)
{
	return f->dst.port == app->sched_port && f->dst.port != app->me.port ? 0 : -1;
}

static void
sched_ports(const struct psb_app *app, uint16_t *lo, uint16_t *hi)
{
	*lo = *hi = app->sched_port;
}

const struct psb_role psb_role_scheduler = {
	.name = "scheduler",
	.count = sched_count,
	.ring = 1024,
	.claim = sched_claim,
	.ports = sched_ports,
	.init = sched_init,
	.poll = sched_poll,
	.fini = sched_fini,
};
