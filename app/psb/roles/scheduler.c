/* scheduler role: registration, ranks, key ranges and barriers (ps-lite's scheduler). */
#include <rte_malloc.h>

#include "psb.h"

/* Refusals logged at most; the rest are counted only (a peer could send them without end). */
#define SCHED_REFUSALS_LOGGED	10

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
		PSB_DBG(app, 1, "scheduler: %s %s:%u registered as rank %u (%u/%u servers, "
			"%u/%u workers)", ev->server ? "server" : "worker",
			psb_ip_str(ev->addr.ip, ip), ev->addr.port, ev->rank, ev->nservers,
			app->num_servers, ev->nworkers, app->num_workers);
		break;
	case PSB_SCHED_EV_READY:
		PSB_LOG(app, "scheduler: all %u server(s) and %u worker(s) registered; views sent",
			ev->nservers, ev->nworkers);
		break;
	case PSB_SCHED_EV_REFUSED:
		if (++refusals > SCHED_REFUSALS_LOGGED)
			break;
		PSB_LOG(app, "scheduler: REGISTER from %s:%u refused: %s%s",
			psb_ip_str(ev->addr.ip, ip), ev->addr.port,
			ev->server ? "every server's place is taken (DMLC_NUM_SERVER)" :
			"every worker's place is taken (DMLC_NUM_WORKER), or no role given",
			refusals == SCHED_REFUSALS_LOGGED ?
			"; further refusals are counted only (scheduler.rejected)" : "");
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
	};

	ri->priv = psb_sched_create(&sc);
	return ri->priv != NULL ? 0 : -EINVAL;
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

static int
sched_poll(struct psb_role_inst *ri)
{
	struct rte_mbuf *pkts[PSB_BURST];
	unsigned int n, i;

	n = rte_ring_dequeue_burst(ri->app->sched_ring, (void **)pkts, PSB_BURST, NULL);
	for (i = 0; i < n; i++) {
		struct psb_meta *meta = psb_meta(pkts[i]);

		ri->cnt.rx_pkts++;
		psb_sched_handle(ri->priv, &meta->hdr, &meta->src, sched_emit, ri);
		rte_pktmbuf_free(pkts[i]);
	}
	psb_out_flush(ri);
	return (int)n;
}

static void
sched_fini(struct psb_role_inst *ri)
{
	psb_sched_free(ri->priv);
	ri->priv = NULL;
}

const struct psb_role psb_role_scheduler = {
	.name = "scheduler",
	.init = sched_init,
	.poll = sched_poll,
	.fini = sched_fini,
};
