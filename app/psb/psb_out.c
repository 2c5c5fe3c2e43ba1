/*
 * The output path shared by roles: neighbours, messages built, queued for the tx role (or
 * handed straight to a role of this process), ARP requests.
 */
#include <errno.h>
#include <string.h>

#include <rte_memcpy.h>

#include "psb_app.h"

const struct psb_neigh *
psb_neigh_find(const struct psb_app *app, uint32_t ip)
{
	unsigned int i, h = (ip * 2654435761u) % PSB_NEIGH_MAX;

	for (i = 0; i < PSB_NEIGH_MAX; i++) {
		const struct psb_neigh *n = &app->neigh[(h + i) % PSB_NEIGH_MAX];

		if (!n->valid)
			return NULL;
		if (n->ip == ip)
			return n;
	}
	return NULL;
}

void
psb_out_flush(struct psb_role_inst *ri)
{
	unsigned int sent;

	if (ri->ntx == 0)
		return;
	sent = rte_ring_enqueue_burst(ri->app->tx_ring, (void **)ri->txbuf, ri->ntx, NULL);
	if (sent < ri->ntx) {
		ri->cnt.tx_ring_full += ri->ntx - sent;
		rte_pktmbuf_free_bulk(&ri->txbuf[sent], ri->ntx - sent);
	}
	ri->ntx = 0;
}

int
psb_out_room(struct psb_role_inst *ri, unsigned int n)
{
	if (ri->ntx + n <= PSB_OUT_BUF)
		return 1;
	return rte_ring_free_count(ri->app->tx_ring) >= ri->ntx + n;
}

void
psb_out_port(struct psb_role_inst *ri, struct rte_mbuf *m)
{
	ri->cnt.tx_pkts++;
	ri->cnt.tx_bytes += m->pkt_len;
	ri->txbuf[ri->ntx++] = m;
	if (ri->ntx == PSB_OUT_BUF)
		psb_out_flush(ri);
}

/*
 * A message for a role of this process (a server hosting the scheduler: its agent's
 * REGISTER, the scheduler's answers): straight to the role that claims it, as psb_dispatch
 * would hand it, without parsing what this process built; counted under the sender.
 */
static void
deliver_local(struct psb_role_inst *ri, struct rte_mbuf *m)
{
	struct psb_app *app = ri->app;
	const struct psb_route *rt;
	struct psb_frame f;
	struct psb_meta *meta;
	int idx;

	psb_frame_read_own(rte_pktmbuf_mtod(m, const uint8_t *), (uint16_t)m->data_len, &f);
	meta = psb_meta(m);
	meta->hdr = f.hdr;
	meta->src = f.src;
	meta->payload_off = PSB_FRAME_HLEN;
	meta->in_port = m->port;
	idx = psb_route_find(app, &f, &rt);
	psb_handoff_count(ri, idx == PSB_ROLE_DELIVER ? rt->role->deliver(ri, m, &f) :
		psb_handoff(idx >= 0 ? rt->first[idx].ring : NULL, m));	/* none: not_served */
}

int
psb_out(struct psb_role_inst *ri, struct rte_mbuf *m, uint32_t dst_ip)
{
	struct psb_app *app = ri->app;
	const struct psb_neigh *n;

	if (dst_ip == app->me.ip) {
		deliver_local(ri, m);
		return 0;
	}
	n = psb_neigh_find(app, dst_ip);
	m->port = n != NULL ? n->port : app->port_ids[0];
	psb_out_port(ri, m);
	return 0;
}

struct rte_mbuf *
psb_build(struct psb_role_inst *ri, const struct psb_addr *src, const struct psb_addr *dst,
		const struct psb_hdr *h, const void *payload)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(ri->app->pool);
	uint16_t len = PSB_FRAME_HLEN + h->seg_len;
	uint8_t *p;

	if (m == NULL) {
		ri->cnt.no_mbuf++;
		return NULL;
	}
	p = (uint8_t *)rte_pktmbuf_append(m, len);
	if (p == NULL) {
		rte_pktmbuf_free(m);
		ri->cnt.no_mbuf++;
		return NULL;
	}
	psb_frame_write_headers(p, src, dst, h, h->seg_len);
	if (h->seg_len != 0)
		rte_memcpy(p + PSB_FRAME_HLEN, payload, h->seg_len);
	return m;
}

void
psb_arp_resolve(struct psb_role_inst *ri, uint32_t ip)
{
	struct psb_app *app = ri->app;
	uint16_t i;

	for (i = 0; i < app->nports; i++) {
		struct rte_mbuf *m;
		uint8_t *p;

		if (psb_port_is_exc(app, i))	/* the host's kernel is not psb's network */
			continue;
		m = rte_pktmbuf_alloc(app->pool);

		if (m == NULL) {
			ri->cnt.no_mbuf++;
			return;
		}
		p = (uint8_t *)rte_pktmbuf_append(m, 60);
		memset(p, 0, 60);
		psb_arp_request(p, app->me.mac, app->me.ip, ip);
		m->port = app->port_ids[i];
		psb_out_port(ri, m);
	}
}

const struct psb_neigh *
psb_neigh_or_arp(struct psb_role_inst *ri, uint32_t ip, uint64_t now, uint64_t *next_arp_ns)
{
	const struct psb_neigh *n = psb_neigh_find(ri->app, ip);

	if (n == NULL && now >= *next_arp_ns) {
		psb_arp_resolve(ri, ip);
		*next_arp_ns = now + PSB_ARP_RETRY_NS;
	}
	return n;
}

int
psb_out_udp(struct psb_role_inst *ri, const struct psb_addr *src, const struct psb_addr *dst,
		uint16_t port, const void *hdr, unsigned int hlen, const void *payload,
		unsigned int plen)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(ri->app->pool);
	uint8_t *p;

	if (m == NULL) {
		ri->cnt.no_mbuf++;
		return -EAGAIN;
	}
	p = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(PSB_UDP_FRAME_HLEN + hlen + plen));
	if (p == NULL) {
		rte_pktmbuf_free(m);
		ri->cnt.no_mbuf++;
		return -EAGAIN;
	}
	psb_udp_write_headers(p, src, dst, (uint16_t)(hlen + plen));
	memcpy(p + PSB_UDP_FRAME_HLEN, hdr, hlen);
	if (plen != 0)
		rte_memcpy(p + PSB_UDP_FRAME_HLEN + hlen, payload, plen);
	m->port = port;
	psb_out_port(ri, m);
	return 0;
}
