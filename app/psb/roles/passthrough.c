/*
 * passthrough role: the host's traffic through psb. Frames the rx role finds are not psb's
 * (RoCE, ARP and ICMP for others, IPv6, anything else) come in on the role's ring and go out
 * of the exception port toward the host's kernel; what the kernel sends there goes out of
 * the first port. Both ways untouched, bit for bit. RoCE among them is counted per queue
 * pair (lib/roce), in a table of node.roce_qps entries.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "psb_app.h"
#include "psb_counters.h"
#include "psb_passthrough.h"
#include "psb_roce.h"

#define PUB_EVERY_NS	(100ull * 1000 * 1000)	/* totals for the control plane */
#define ROWS_WAIT_US	500000			/* a reader waits this long for the rows */

/*
 * What the control plane reads. The counts and totals, small, are published every 100 ms
 * under a sequence lock. The queue pairs (up to 65536 of 256 bytes) are copied only when a
 * reader asks (rows_want), between two passes of the role, never on a timer: a copy of 16 MB
 * every 100 ms would hold up the frames of its lcore for milliseconds.
 */
struct pt_priv {
	struct psb_roce_qptab *qp;
	uint16_t exc_port, wire_port;
	unsigned int host_reserve;	/* tx ring slots the host's frames leave to psb's */
	uint64_t next_pub_ns;
	struct psb_pt_stats st;
	volatile uint32_t seq;		/* odd while pub_st and pub_tot are written */
	struct psb_pt_stats pub_st;
	struct psb_roce_totals pub_tot;
	volatile uint32_t rows_want, rows_done;	/* a reader's request, and the role's answer */
	volatile int over;		/* the role ended: pub_rows stay as they are */
	uint32_t rows_n;
	struct psb_roce_qp *pub_rows;	/* [roce_qps] */
};

static struct psb_role_inst *g_pt;	/* the one instance, for the readers */
static pthread_mutex_t rows_lock = PTHREAD_MUTEX_INITIALIZER;	/* one reader of rows at once */

static unsigned int
pt_count(const struct psb_app *app)
{
	return app->has_exc ? 1 : 0;
}

static unsigned int
pt_ring_size(const struct psb_app *app)
{
	return app->exc_queue;
}

static int
pt_init(struct psb_role_inst *ri)
{
	struct psb_app *app = ri->app;
	struct pt_priv *pp = rte_zmalloc("psb_pt", sizeof(*pp), RTE_CACHE_LINE_SIZE);

	if (pp == NULL)
		return -ENOMEM;
	ri->priv = pp;
	pp->exc_port = app->port_ids[app->exc_idx];
	pp->host_reserve = psb_role_ring(&psb_role_tx, app) / 2;
	pp->wire_port = app->port_ids[0];
	pp->st.qp_cap = app->roce_qps;
	pp->st.accounting = (uint8_t)app->roce_accounting;
	pp->qp = psb_roce_qptab_create(app->roce_qps, rte_rand());
	pp->pub_rows = calloc(app->roce_qps, sizeof(*pp->pub_rows));
	if (pp->qp == NULL || pp->pub_rows == NULL)
		return -ENOMEM;
	__atomic_store_n(&g_pt, ri, __ATOMIC_RELEASE);
	return 0;
}

/* The RoCE among n frames counted; none is written. */
static void
account(struct pt_priv *pp, struct rte_mbuf **pkts, unsigned int n, uint64_t now)
{
	const uint8_t *data[PSB_BURST];
	uint32_t seg[PSB_BURST], len[PSB_BURST];
	unsigned int i;

	/* a chained frame is linearized by the rx role, or is the kernel's: first segment */
	for (i = 0; i < n; i++) {
		data[i] = rte_pktmbuf_mtod(pkts[i], const uint8_t *);
		seg[i] = pkts[i]->data_len;
		len[i] = pkts[i]->pkt_len;
	}
	pp->st.not_roce += psb_roce_qptab_frames(pp->qp, data, seg, len, n, now);
}

static void
publish(struct pt_priv *pp)
{
	psb_seq_write_begin(&pp->seq);
	pp->pub_st = pp->st;
	pp->pub_tot = *psb_roce_qptab_totals(pp->qp);
	psb_seq_write_end(&pp->seq);
}

/* The queue pairs for the reader that asked; on the role's lcore (or in its place). */
static void
publish_rows(struct pt_priv *pp)
{
	uint32_t want = __atomic_load_n(&pp->rows_want, __ATOMIC_ACQUIRE);

	pp->rows_n = psb_roce_qptab_entries(pp->qp, pp->pub_rows, pp->st.qp_cap);
	__atomic_store_n(&pp->rows_done, want, __ATOMIC_RELEASE);
}

static int
pt_poll(struct psb_role_inst *ri)
{
	struct psb_app *app = ri->app;
	struct pt_priv *pp = ri->priv;
	struct rte_mbuf *pkts[PSB_BURST];
	uint64_t now = psb_now_ns(app);
	unsigned int n, i, sent;
	int work;

	/* toward the host: what the rx role found is not psb's */
	n = rte_ring_dequeue_burst(ri->ring, (void **)pkts, PSB_BURST, NULL);
	if (n != 0 && app->port_paused[pp->exc_port]) {
		pp->st.host_dropped += n;
		rte_pktmbuf_free_bulk(pkts, n);
	} else if (n != 0) {
		for (i = 0; i < n; i++)
			pp->st.to_host_bytes += pkts[i]->pkt_len;
		if (pp->st.accounting)
			account(pp, pkts, n, now);
		sent = rte_eth_tx_burst(pp->exc_port, 0, pkts, (uint16_t)n);
		pp->st.to_host_pkts += sent;
		if (sent < n) {
			/* the kernel's queue is full: its traffic, its loss, counted */
			for (i = sent; i < n; i++)
				pp->st.to_host_bytes -= pkts[i]->pkt_len;
			pp->st.host_dropped += n - sent;
			rte_pktmbuf_free_bulk(&pkts[sent], n - sent);
		}
	}
	work = (int)n;

	/*
	 * From the host: what it sends, out of the first port through the tx role, while at
	 * least half of the tx ring is free: the other half is psb's own, so that a host sending
	 * faster than the wire takes leaves its frames waiting in the exception port (its
	 * kernel's queue, its loss), not psb's sends lost.
	 */
	if (!app->port_paused[pp->exc_port]) {
		unsigned int room = rte_ring_free_count(app->tx_ring), want = PSB_BURST;

		if (room < pp->host_reserve + PSB_BURST) {
			want = room > pp->host_reserve ? room - pp->host_reserve : 0;
			pp->st.host_held++;
		}
		n = want == 0 ? 0 : rte_eth_rx_burst(pp->exc_port, 0, pkts, (uint16_t)want);
		if (n != 0 && pp->st.accounting)
			account(pp, pkts, n, now);
		for (i = 0; i < n; i++) {
			ri->cnt.rx_pkts++;
			ri->cnt.rx_bytes += pkts[i]->pkt_len;
			pp->st.from_host_pkts++;
			pp->st.from_host_bytes += pkts[i]->pkt_len;
			pkts[i]->port = pp->wire_port;
			psb_out_port(ri, pkts[i]);
		}
		psb_out_flush(ri);
		work += (int)n;
	}
	if (now >= pp->next_pub_ns) {
		publish(pp);
		pp->next_pub_ns = now + PUB_EVERY_NS;
	}
	if (unlikely(pp->rows_want != pp->rows_done))
		publish_rows(pp);
	return work;
}

static int
pt_ctl(struct psb_role_inst *ri, int op, const void *arg)
{
	struct pt_priv *pp = ri->priv;

	(void)arg;
	if (op == PSB_OP_RESET) {
		psb_roce_qptab_reset(pp->qp);
		memset(&pp->st, 0, offsetof(struct psb_pt_stats, qp_cap));
		publish(pp);
	}
	return 0;
}

static void
pt_fini(struct psb_role_inst *ri)
{
	struct pt_priv *pp = ri->priv;
	struct rte_mbuf *m;

	if (pp == NULL)
		return;
	while (rte_ring_dequeue(ri->ring, (void **)&m) == 0) {
		pp->st.host_dropped++;
		rte_pktmbuf_free(m);
	}
	if (pp->qp != NULL && pp->pub_rows != NULL) {
		/* the final figures stay for the exit report */
		publish(pp);
		publish_rows(pp);
		__atomic_store_n(&pp->over, 1, __ATOMIC_RELEASE);
	}
}

/*
 * The queue pairs now, into all (qp_cap of them): asked of the role and waited for, or
 * copied here where the role cannot answer (it ended, or runs on this very lcore, between
 * its passes). How many, or -EAGAIN when the role did not answer in ROWS_WAIT_US.
 */
static int
read_rows(struct psb_role_inst *ri, struct pt_priv *pp, struct psb_roce_qp *all)
{
	uint32_t want, i;
	int n = -EAGAIN;

	pthread_mutex_lock(&rows_lock);
	if (__atomic_load_n(&pp->over, __ATOMIC_ACQUIRE)) {
		n = (int)pp->rows_n;
	} else {
		want = pp->rows_done + 1;
		__atomic_store_n(&pp->rows_want, want, __ATOMIC_RELEASE);
		if (rte_lcore_id() == ri->lcore)
			publish_rows(pp);
		for (i = 0; i < ROWS_WAIT_US / 100; i++) {
			if (__atomic_load_n(&pp->rows_done, __ATOMIC_ACQUIRE) == want ||
			    __atomic_load_n(&pp->over, __ATOMIC_ACQUIRE)) {
				n = (int)pp->rows_n;
				break;
			}
			rte_delay_us_sleep(100);
		}
	}
	if (n > 0)
		memcpy(all, pp->pub_rows, sizeof(*all) * (uint32_t)n);
	pthread_mutex_unlock(&rows_lock);
	return n;
}

int
psb_passthrough_read(struct psb_passthrough_view *v, struct psb_roce_qp *rows, uint32_t max)
{
	struct psb_role_inst *ri = __atomic_load_n(&g_pt, __ATOMIC_ACQUIRE);
	struct psb_roce_qp *all;
	struct pt_priv *pp;
	int n;

	memset(v, 0, sizeof(*v));
	if (ri == NULL || ri->priv == NULL)
		return -ENOENT;
	pp = ri->priv;
	if (psb_seq_read(&pp->seq, &v->st, &pp->pub_st, sizeof(v->st), &v->tot, &pp->pub_tot,
			 sizeof(v->tot)) != 0)
		return -EAGAIN;
	v->tracked = (uint32_t)v->tot.qp_tracked;
	if (rows == NULL || max == 0)
		return 0;
	/* the busiest max of them all: every one copied, sorted, the first max kept */
	all = max >= pp->st.qp_cap ? rows : malloc(sizeof(*all) * pp->st.qp_cap);
	if (all == NULL)
		return -ENOMEM;
	n = read_rows(ri, pp, all);
	if (n >= 0) {
		psb_roce_qp_sort(all, (uint32_t)n);
		v->tracked = (uint32_t)n;
		v->nrows = (uint32_t)n < max ? (uint32_t)n : max;
		if (all != rows)
			memcpy(rows, all, sizeof(*rows) * v->nrows);
	}
	if (all != rows)
		free(all);
	return n < 0 ? n : 0;
}

const struct psb_role psb_role_passthrough = {
	.name = "passthrough",
	.count = pt_count,
	.ring_size = pt_ring_size,
	.init = pt_init,
	.poll = pt_poll,
	.ctl = pt_ctl,
	.fini = pt_fini,
};
