/* rx role: poll every port, classify, answer ARP/ICMP, hand psb messages to their role. */
#include <rte_ethdev.h>

#include "psb_app.h"
#include "psb_guard.h"

static int
rx_poll(struct psb_role_inst *ri)
{
	struct psb_app *app = ri->app;
	struct rte_mbuf *pkts[PSB_BURST];
	int total = 0;
	uint16_t p, n, i;

	for (p = 0; p < app->nports; p++) {
		/* the exception port is the passthrough role's */
		if (app->port_paused[app->port_ids[p]] || psb_port_is_exc(app, p))
			continue;
		if (!app->port_shared[app->port_ids[p]]) {
			n = rte_eth_rx_burst(app->port_ids[p], 0, pkts, PSB_BURST);
		} else {
			n = psb_guard_rx(app->port_ids[p], pkts, PSB_BURST);
			if (unlikely(n == PSB_GUARD_FAULT)) {
				psb_port_faulted(app, app->port_ids[p]);
				continue;
			}
		}
		for (i = 0; i < n; i++) {
			ri->cnt.rx_pkts++;
			ri->cnt.rx_bytes += pkts[i]->pkt_len;
			psb_dispatch(ri, pkts[i]);
		}
		total += n;
	}
	psb_host_flush(ri);
	psb_out_flush(ri);
	return total;
}

const struct psb_role psb_role_rx = {
	.name = "rx",
	.poll = rx_poll,
};
