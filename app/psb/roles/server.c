/* server role: one shard of the parameter store; sums pushes, answers pulls. */
#include <rte_malloc.h>

#include "psb_app.h"
#include "psb_cli.h"
#include "psb_kv.h"
#include "psb_log.h"

struct server_priv {
	struct psb_kv *kv;
	/*
	 * Large values go out without a copy into mbufs: a data mbuf attached to
	 * the stored value follows the header mbuf. Only on software ports
	 * (their drivers copy or write out; no device DMAs from this memory).
	 * Every stored value has its own shared info in the headroom in front of
	 * it: a count of 1 for the store and 1 for every attached mbuf not yet
	 * freed. A push into a value some mbuf still reads goes into a copy
	 * (psb_kv_cfg.value_busy), so an answer never carries two versions; values
	 * the store let go wait in the graveyard until nothing reads them.
	 */
	int zero_copy;
	void **graveyard;
	uint32_t ngrave, grave_cap;
	uint32_t polls;
	uint64_t resend_noted;		/* store.resend_over_budget_bytes at the last line */
	uint64_t resend_line_tsc;	/* no line about resends before then */
};

/* How often an idle shard reads the clock to expire reassemblies (passes). */
#define TICK_IDLE_PASSES	1024

#define ZC_MIN_SEG	8192	/* smaller segments are cheaper to copy */
/* In front of every stored value: its shared info (a multiple of 64, as the store wants). */
#define VALUE_HEADROOM	RTE_ALIGN_CEIL(sizeof(struct rte_mbuf_ext_shared_info), 64)

static void
value_free_noop(void *addr, void *opaque)
{
	RTE_SET_USED(addr);
	RTE_SET_USED(opaque);
}

static inline struct rte_mbuf_ext_shared_info *
value_shinfo(const void *val)
{
	return (struct rte_mbuf_ext_shared_info *)(uintptr_t)((const uint8_t *)val -
		VALUE_HEADROOM);
}

/* Attached mbufs not yet freed that point into val. */
static inline int
value_read(const void *val)
{
	const struct rte_mbuf_ext_shared_info *sh = value_shinfo(val);

	return sh->free_cb != NULL && rte_mbuf_ext_refcnt_read(sh) > 1;
}

static int
value_busy(void *arg, const float *val)
{
	RTE_SET_USED(arg);
	return value_read(val);
}

/* Free the graveyard's values that nothing reads any more. */
static void
graveyard_sweep(struct server_priv *sp, int all)
{
	uint32_t i, n = 0;

	for (i = 0; i < sp->ngrave; i++) {
		if (all || !value_read(sp->graveyard[i]))
			free((uint8_t *)sp->graveyard[i] - VALUE_HEADROOM);
		else
			sp->graveyard[n++] = sp->graveyard[i];
	}
	sp->ngrave = n;
}

/* A value the store let go: freed now, or once no attached mbuf points into it. */
static void
value_free(void *arg, void *val)
{
	struct server_priv *sp = arg;

	if (!value_read(val)) {
		free((uint8_t *)val - VALUE_HEADROOM);
		return;
	}
	if (sp->ngrave == sp->grave_cap) {
		uint32_t n = sp->grave_cap == 0 ? 64 : sp->grave_cap * 2;
		void **g = realloc(sp->graveyard, n * sizeof(*g));

		if (g == NULL) {
			/* no room to wait: leaking it beats a driver reading freed memory */
			return;
		}
		sp->graveyard = g;
		sp->grave_cap = n;
	}
	sp->graveyard[sp->ngrave++] = val;
}

/* A segment the store kept (psb_kv_handle_ref) is done with: its mbuf goes back. */
static void
release_mbuf(void *arg, void *ref)
{
	RTE_SET_USED(arg);
	rte_pktmbuf_free(ref);
}

static int
server_init(struct psb_role_inst *ri)
{
	struct psb_app *app = ri->app;
	const struct psb_store_budget *b = &app->budget;
	uint16_t ns = app->nshards;
	struct psb_kv_cfg kc = {
		.num_workers = app->num_workers,
		.sync = app->sync,
		.sync_round = app->sync_round,
		.max_value = app->max_value,
		.seg_size = app->seg_size,
		.capacity = 1024,
		/* the budgets are the process's: every shard gets its share */
		.max_bytes = b->max_bytes / ns,
		.max_keys = b->max_keys / ns != 0 ? b->max_keys / ns : 1,
		.reasm_bytes = b->reasm_bytes / ns,
		.reasm_sender_bytes = b->reasm_sender_bytes,
		.reasm_timeout_ns = b->reasm_timeout_ns,
		/* per sender: every shard has the whole of it, as reasm_sender_bytes */
		.resend_burst = b->resend_burst,
		.resend_bps = b->resend_bps,
		.hold_max = b->hold_max,
		.hold_cost = rte_pktmbuf_data_room_size(app->pool),
		.release = release_mbuf,
		.value_free = value_free,
		.value_headroom = VALUE_HEADROOM,
		.value_busy = value_busy,
		.epoch = app->epoch,
	};
	struct server_priv *sp = rte_zmalloc("psb_server", sizeof(*sp), RTE_CACHE_LINE_SIZE);

	if (sp == NULL)
		return -ENOMEM;
	kc.release_arg = sp;
	sp->kv = psb_kv_create(&kc);
	if (sp->kv == NULL) {
		rte_free(sp);
		return -ENOMEM;
	}
	sp->zero_copy = app->soft_ports;
	ri->priv = sp;
	return 0;
}

/* A header mbuf followed by a data mbuf attached to the stored value. */
static struct rte_mbuf *
build_attached(struct psb_role_inst *ri, const struct psb_addr *to, const struct psb_hdr *h,
		const void *value, const uint8_t *data)
{
	struct rte_mbuf_ext_shared_info *sh = value_shinfo(value);
	struct psb_app *app = ri->app;
	struct rte_mbuf *m, *d;
	struct psb_hdr hh = *h;
	uint8_t *p;

	m = rte_pktmbuf_alloc(app->pool);
	d = rte_pktmbuf_alloc(app->pool);
	if (m == NULL || d == NULL) {
		rte_pktmbuf_free(m);
		rte_pktmbuf_free(d);
		ri->cnt.no_mbuf++;
		return NULL;
	}
	p = (uint8_t *)rte_pktmbuf_append(m, PSB_FRAME_HLEN);
	psb_frame_write_headers(p, &app->me, to, &hh, h->seg_len);
	if (sh->free_cb == NULL) {
		/* the value's first attachment: the store's own count */
		sh->free_cb = value_free_noop;
		rte_mbuf_ext_refcnt_set(sh, 1);
	}
	rte_mbuf_ext_refcnt_update(sh, 1);
	rte_pktmbuf_attach_extbuf(d, (void *)(uintptr_t)data, (rte_iova_t)(uintptr_t)data,
		h->seg_len, sh);
	d->data_len = h->seg_len;
	d->pkt_len = h->seg_len;
	m->next = d;
	m->nb_segs = 2;
	m->pkt_len = PSB_FRAME_HLEN + h->seg_len;
	return m;
}

/* Send a response as segments of h->seg_size (or the one segment h->seg_len asks for). */
static void
server_emit(void *arg, const struct psb_addr *to, struct psb_hdr *h, const void *value)
{
	struct psb_role_inst *ri = arg;
	struct server_priv *sp = ri->priv;
	struct psb_app *app = ri->app;
	uint32_t total, off;

	psb_kv_emit_span(h, &off, &total);
	do {
		uint32_t left = total - off;
		struct rte_mbuf *m;

		h->offset = off;
		h->seg_len = (uint16_t)(left < h->seg_size ? left : h->seg_size);
		if (value != NULL && sp->zero_copy && h->seg_len >= ZC_MIN_SEG)
			m = build_attached(ri, to, h, value, (const uint8_t *)value + off);
		else
			m = psb_build(ri, &app->me, to, h,
				value != NULL ? (const uint8_t *)value + off : NULL);
		if (m == NULL)
			return;	/* the worker retries after its timeout */
		psb_out(ri, m, to->ip);
		off += h->seg_len;
	} while (off < total);
}

/* A BATCH: answers to its sender go back as one BATCH_RESP built in place. */
static void
server_batch(struct psb_role_inst *ri, struct server_priv *sp, struct psb_meta *meta,
		const uint8_t *payload)
{
	struct psb_app *app = ri->app;
	struct rte_mbuf *m = rte_pktmbuf_alloc(app->pool);
	struct psb_hdr h;
	size_t len = 0;
	uint8_t *p;

	if (m == NULL) {
		ri->cnt.no_mbuf++;
		return;	/* the worker retries each request on its own */
	}
	p = rte_pktmbuf_mtod(m, uint8_t *);
	psb_kv_handle_batch(sp->kv, &meta->hdr, payload, &meta->src, p + PSB_FRAME_HLEN,
		app->seg_size, &len, server_emit, ri);
	if (len == 0) {
		rte_pktmbuf_free(m);
		return;
	}
	psb_hdr_batch_resp(&h, &meta->hdr, (uint16_t)len);
	h.aux = app->epoch;
	psb_frame_write_headers(p, &app->me, &meta->src, &h, (uint16_t)len);
	rte_pktmbuf_append(m, (uint16_t)(PSB_FRAME_HLEN + len));
	psb_out(ri, m, meta->src.ip);
}

/*
 * Resends refused for want of budget: a line at most every second per shard, naming the
 * sender refused the most since the line before, and its address.
 */
static void
resend_note(struct psb_role_inst *ri, struct server_priv *sp)
{
	uint64_t refused = psb_kv_stats(sp->kv)->resend_over_budget_bytes, now;
	struct psb_kv_resend_peer bp;
	char ip[16], size[32], others[48] = "";

	if (likely(refused == sp->resend_noted))
		return;
	now = rte_get_tsc_cycles();
	if (now < sp->resend_line_tsc)
		return;
	sp->resend_noted = refused;
	sp->resend_line_tsc = now + rte_get_tsc_hz();
	if (!psb_kv_resend_busiest(sp->kv, &bp))
		return;
	if (bp.senders > 1)
		snprintf(others, sizeof(others), "; %u other senders too", bp.senders - 1);
	PSB_WARN(server, "shard %d: sender %u at %s:%u over its resend budget: %llu resends "
		"(%s) not sent since the last such line, %llu in all%s (store.resend_over_budget)",
		ri->idx, bp.sender, psb_ip_str(bp.addr.ip, ip), bp.addr.port,
		(unsigned long long)bp.refused, psb_cli_fmt_size(bp.refused_bytes, size,
		sizeof(size)), (unsigned long long)bp.total, others);
}

static int
server_poll(struct psb_role_inst *ri)
{
	struct server_priv *sp = ri->priv;
	struct rte_mbuf *pkts[PSB_BURST];
	unsigned int n, i;

	n = rte_ring_dequeue_burst(ri->ring, (void **)pkts, PSB_BURST, NULL);
	/* the clock of reassembly: with every burst, and now and then when idle */
	if (n != 0 || ++sp->polls % TICK_IDLE_PASSES == 0) {
		psb_kv_tick(sp->kv, psb_now_ns(ri->app));
		psb_kv_probe_tails(sp->kv, PSB_KV_TAIL_QUIET_NS, 16, server_emit, ri);
		if (unlikely(sp->ngrave != 0))
			graveyard_sweep(sp, 0);
		resend_note(ri, sp);
	}
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct psb_meta *meta = psb_meta(m);
		uint8_t *payload = rte_pktmbuf_mtod_offset(m, uint8_t *, meta->payload_off);

		if (i + 1 < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
		ri->cnt.rx_pkts++;
		ri->cnt.rx_bytes += m->pkt_len;
		if (meta->hdr.type == PSB_MSG_BYE) {
			/* a known peer's BYE (psb_classify.c): what it staged goes; nothing to answer */
			psb_kv_peer_left(sp->kv, meta->src.ip);
		} else if (meta->hdr.type == PSB_MSG_BATCH && meta->hdr.version == PSB_VERSION) {
			server_batch(ri, sp, meta, payload);
		} else if (psb_kv_handle_ref(sp->kv, &meta->hdr, payload,
				/*
				 * A segment may be kept until its push is whole, in the mbuf it came
				 * in; not one attached to a peer's memory (memif zero-copy), which
				 * the peer needs back to send the rest.
				 */
				RTE_MBUF_HAS_EXTBUF(m) ? NULL : m,
				&meta->src, server_emit, ri) == PSB_KV_HELD) {
			continue;
		}
		rte_pktmbuf_free(m);
	}
	psb_out_flush(ri);
	return (int)n;
}

static void
server_fini(struct psb_role_inst *ri)
{
	struct server_priv *sp = ri->priv;

	if (sp == NULL)
		return;
	/* the tx role went first: no attached mbuf is left */
	psb_kv_free(sp->kv);
	graveyard_sweep(sp, 1);
	free(sp->graveyard);
	rte_free(sp);
	ri->priv = NULL;
}

static int
server_ctl(struct psb_role_inst *ri, int op, const void *arg)
{
	struct server_priv *sp = ri->priv;

	RTE_SET_USED(arg);
	/* reset_state: the store starts over (values, rounds, request state, its counters) */
	if (op == PSB_OP_RESET)
		psb_kv_reset(sp->kv);
	return 0;
}

/* Store of a shard, for counters and reports. */
const struct psb_kv *
psb_server_kv(const struct psb_role_inst *ri)
{
	const struct server_priv *sp = ri->priv;

	return sp != NULL ? sp->kv : NULL;
}

static unsigned int
server_count(const struct psb_app *app)
{
	return app->node_role == PSB_NODE_SERVER ? app->nshards : 0;
}

/*
 * Requests at this node's data port go to the shard of their key; a BATCH whose records
 * may belong to several shards is split (psb_dispatch_batch). Responses never go to a
 * server.
 */
static int
server_claim(const struct psb_app *app, const struct psb_frame *f)
{
	if (f->dst.port != app->me.port ||
	    (f->hdr.version == PSB_VERSION && (f->hdr.type & PSB_MSG_RESP)))
		return -1;
	if (f->hdr.type == PSB_MSG_BATCH && f->hdr.version == PSB_VERSION && app->nshards > 1)
		return PSB_ROLE_DELIVER;
	return (int)psb_kv_shard_of(f->hdr.key, app->nshards);
}

const struct psb_role psb_role_server = {
	.name = "server",
	.count = server_count,
	.ring = PSB_ROLE_RING,
	.claim = server_claim,
	.deliver = psb_dispatch_batch,
	.init = server_init,
	.poll = server_poll,
	.fini = server_fini,
	.ctl = server_ctl,
};
