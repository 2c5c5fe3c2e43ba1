/* echo role (--echo): send psb ECHO requests back to their sender, within a budget. */
#include <rte_malloc.h>

#include "psb_app.h"

/*
 * An echo is a probe, not a load: at most ECHO_RATE answers a second, ECHO_BURST at once;
 * with PSB_ECHO_MAX_LEN bytes each, under 9 Mbit/s whatever arrives. The rest are
 * counted (rate_limited) and dropped.
 */
#define ECHO_RATE	1000
#define ECHO_BURST	64

struct echo_priv {
	uint64_t cost;		/* TSC cycles one answer takes from the budget */
	uint64_t spent;		/* the budget is spent up to this TSC time */
};

static int
echo_init(struct psb_role_inst *ri)
{
	struct echo_priv *ep = rte_zmalloc("psb_echo", sizeof(*ep), RTE_CACHE_LINE_SIZE);

	if (ep == NULL)
		return -ENOMEM;
	ep->cost = rte_get_tsc_hz() / ECHO_RATE;
	ri->priv = ep;
	PSB_INFO(echo, "echo: ECHO at port %u answered, %u bytes at most, %u a second in "
		"bursts of %u at most", ri->app->me.port, PSB_ECHO_MAX_LEN, ECHO_RATE, ECHO_BURST);
	return 0;
}

/* Take one answer from the budget: 1, or 0 when it is spent for now. */
static int
echo_budget(struct echo_priv *ep)
{
	uint64_t now = rte_get_tsc_cycles(), burst = ECHO_BURST * ep->cost;

	/* what was not spent within the last burst's time is not kept */
	if (ep->spent + burst < now)
		ep->spent = now - burst;
	if (ep->spent + ep->cost > now)
		return 0;
	ep->spent += ep->cost;
	return 1;
}

static int
echo_poll(struct psb_role_inst *ri)
{
	struct echo_priv *ep = ri->priv;
	struct psb_app *app = ri->app;
	struct rte_mbuf *pkts[PSB_BURST];
	unsigned int n, i;

	n = rte_ring_dequeue_burst(ri->ring, (void **)pkts, PSB_BURST, NULL);
	for (i = 0; i < n; i++) {
		struct psb_meta *meta = psb_meta(pkts[i]);
		struct psb_hdr h = meta->hdr;
		struct rte_mbuf *m;

		ri->cnt.rx_pkts++;
		ri->cnt.rx_bytes += pkts[i]->pkt_len;
		if (!psb_echo_answerable(&h, &meta->src, app->me.ip)) {
			ri->cnt.refused++;
		} else if (!echo_budget(ep)) {
			ri->cnt.rate_limited++;
		} else {
			/* the request as it came, back to where it came from */
			h.type = PSB_MSG_ECHO_RESP;
			m = psb_build(ri, &app->me, &meta->src, &h,
				rte_pktmbuf_mtod_offset(pkts[i], uint8_t *, meta->payload_off));
			if (m != NULL)
				psb_out(ri, m, meta->src.ip);
		}
		rte_pktmbuf_free(pkts[i]);
	}
	psb_out_flush(ri);
	return (int)n;
}

static unsigned int
echo_count(const struct psb_app *app)
{
	return app->echo ? 1 : 0;
}

/* ECHO at this node's data port; what it may answer is echo_poll's to say. */
static int
echo_claim(const struct psb_app *app, const struct psb_frame *f)
{
	return f->dst.port == app->me.port && f->hdr.type == PSB_MSG_ECHO &&
		f->hdr.version == PSB_VERSION ? 0 : -1;
}

const struct psb_role psb_role_echo = {
	.name = "echo",
	.count = echo_count,
	.ring = 256,
	.claim = echo_claim,
	.types = (const uint8_t []){ PSB_MSG_ECHO },
	.ntypes = 1,
	.init = echo_init,
	.poll = echo_poll,
	.fini = psb_role_free_priv,
};
