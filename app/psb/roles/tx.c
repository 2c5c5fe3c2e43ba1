/* tx role: drain the transmit ring into the ports, keeping what a port refused for later. */
#include <string.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "psb_app.h"
#include "psb_guard.h"

#define TX_BACKLOG	256

struct tx_priv {
	uint16_t n;
	struct rte_mbuf *pkts[TX_BACKLOG];
};

static int
tx_init(struct psb_role_inst *ri)
{
	ri->priv = rte_zmalloc("psb_tx", sizeof(struct tx_priv), RTE_CACHE_LINE_SIZE);
	return ri->priv != NULL ? 0 : -ENOMEM;
}

/*
 * Send pkts[0..n) in order, port by port; returns how many are done with: taken by their
 * port (counted as sent) or dropped for a paused one (counted as paused_drops).
 */
static uint16_t
send_run(struct psb_role_inst *ri, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t done = 0;

	while (done < n) {
		uint16_t port = pkts[done]->port, run = 1, sent;

		while (done + run < n && pkts[done + run]->port == port)
			run++;
		if (ri->app->port_paused[port]) {
			/* Its peer is gone or going: drop rather than touch the port. */
			rte_pktmbuf_free_bulk(&pkts[done], run);
			ri->cnt.paused_drops += run;
			done += run;
			continue;
		}
		if (!ri->app->port_shared[port]) {
			sent = rte_eth_tx_burst(port, 0, &pkts[done], run);
		} else {
			sent = psb_guard_tx(port, &pkts[done], run);
			if (unlikely(sent == PSB_GUARD_FAULT)) {
				/* the driver may have freed some of them: forget them all */
				psb_port_faulted(ri->app, port);
				ri->cnt.paused_drops += run;
				done += run;
				continue;
			}
		}
		ri->cnt.tx_pkts += sent;
		for (uint16_t k = 0; k < sent; k++)
			ri->cnt.tx_bytes += pkts[done + k]->pkt_len;
		done += sent;
		if (sent < run && ri->app->port_drop_full[port]) {
			rte_pktmbuf_free_bulk(&pkts[done], run - sent);
			ri->cnt.full_drops += run - sent;
			done += run - sent;
			continue;
		}
		if (sent < run) {
			ri->cnt.tx_backlog += run - sent;
			break;
		}
	}
	return done;
}

static int
tx_poll(struct psb_role_inst *ri)
{
	struct tx_priv *t = ri->priv;
	uint16_t sent, n;

	if (t->n != 0) {
		sent = send_run(ri, t->pkts, t->n);
		memmove(t->pkts, t->pkts + sent, (t->n - sent) * sizeof(t->pkts[0]));
		t->n -= sent;
		if (t->n != 0)
			return sent;
	}
	n = (uint16_t)rte_ring_dequeue_burst(ri->ring, (void **)t->pkts, TX_BACKLOG, NULL);
	if (n == 0)
		return 0;
	sent = send_run(ri, t->pkts, n);
	if (sent < n)
		memmove(t->pkts, t->pkts + sent, (n - sent) * sizeof(t->pkts[0]));
	t->n = n - sent;
	return n;
}

static void
tx_fini(struct psb_role_inst *ri)
{
	struct tx_priv *t = ri->priv;
	struct rte_mbuf *m;

	if (t == NULL)
		return;
	/* Last chance for what is queued (a pcap port writes it out). */
	while (t->n != 0 || rte_ring_count(ri->ring) != 0) {
		uint16_t before = t->n;
		unsigned int queued = rte_ring_count(ri->ring);

		tx_poll(ri);
		if (t->n == before && rte_ring_count(ri->ring) == queued)
			break;
	}
	rte_pktmbuf_free_bulk(t->pkts, t->n);
	while (rte_ring_dequeue(ri->ring, (void **)&m) == 0)
		rte_pktmbuf_free(m);
	rte_free(t);
	ri->priv = NULL;
}

/* What every role sends goes through one ring; a scheduler sends little. */
static unsigned int
tx_ring_size(const struct psb_app *app)
{
	return app->node_role == PSB_NODE_SCHEDULER ? 1024 : 8192;
}

const struct psb_role psb_role_tx = {
	.name = "tx",
	.ring_size = tx_ring_size,
	.init = tx_init,
	.poll = tx_poll,
	.fini = tx_fini,
};
