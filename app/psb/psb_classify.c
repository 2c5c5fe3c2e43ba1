/*
 * The rx classifier: a received frame parsed, counted and dropped by reason, answered in
 * place (ARP, ICMP echo), ended (BYE), or handed to the role that claims it.
 */
#include <errno.h>
#include <string.h>

#include <rte_ethdev.h>

#include "psb_app.h"
#include "psb_guard.h"
#include "psb_kv.h"
#include "psb_log.h"

void
psb_neigh_learn(struct psb_app *app, uint32_t ip, const uint8_t *mac, uint16_t port)
{
	unsigned int i, h = (ip * 2654435761u) % PSB_NEIGH_MAX;

	/* Only the rx role learns, so there is one writer; readers check valid. */
	for (i = 0; i < PSB_NEIGH_MAX; i++) {
		struct psb_neigh *n = &app->neigh[(h + i) % PSB_NEIGH_MAX];

		if (n->valid && n->ip == ip) {
			if (n->port != port || memcmp(n->mac, mac, 6) != 0) {
				memcpy(n->mac, mac, 6);
				n->port = port;
			}
			return;
		}
		if (!n->valid) {
			n->ip = ip;
			memcpy(n->mac, mac, 6);
			n->port = port;
			rte_smp_wmb();
			n->valid = 1;
			return;
		}
	}
}

/* The input ring of instance idx of role, NULL when this node does not run it. */
static struct rte_ring *
role_ring(const struct psb_app *app, const struct psb_role *role, unsigned int idx)
{
	unsigned int i;

	for (i = 0; i < app->nroutes; i++)
		if (app->routes[i].role == role)
			return app->routes[i].first != NULL ? app->routes[i].first[idx].ring : NULL;
	return NULL;
}

/* An empty message from f's sender with header h, its psb_meta filled; the caller adds data. */
static struct rte_mbuf *
message_alloc(struct psb_app *app, const struct psb_frame *f, const struct psb_hdr *h,
		uint16_t port)
{
	struct rte_mbuf *n = rte_pktmbuf_alloc(app->pool);
	struct psb_meta *meta;

	if (n == NULL)
		return NULL;
	n->port = port;
	meta = psb_meta(n);
	meta->hdr = *h;
	meta->src = f->src;
	meta->payload_off = PSB_FRAME_HLEN;
	meta->in_port = port;
	return n;
}

/*
 * A BATCH whose records belong to several shards is split into one BATCH per
 * shard, so that each store only ever sees its own keys. 0 when every part
 * reached its shard, else why one did not (the parts before it are served).
 */
int
psb_dispatch_batch(struct psb_role_inst *ri, struct rte_mbuf *m, const struct psb_frame *f)
{
	struct psb_app *app = ri->app;
	unsigned int first = PSB_MAX_SHARDS, s;
	size_t off;
	struct psb_rec r;
	int used = 0, rc = 0, prc;

	for (off = 0; off < f->payload_len; off += (size_t)used) {
		used = psb_rec_decode(&r, f->payload + off, f->payload_len - off);
		if (used < 0)
			break;
		s = psb_kv_shard_of(r.key, app->nshards);
		if (first == PSB_MAX_SHARDS)
			first = s;
		else if (s != first)
			break;
	}
	if (off >= f->payload_len || used < 0) {
		/* One shard (or a broken record the shard will count): no split. */
		return psb_handoff(role_ring(app, &psb_role_server, first == PSB_MAX_SHARDS ? 0 : first),
			       m);
	}
	for (s = 0; s < app->nshards; s++) {
		struct psb_hdr h = f->hdr;
		struct rte_mbuf *n = message_alloc(app, f, &h, m->port);
		uint8_t *p;
		uint16_t len = 0;

		if (n == NULL) {
			rc = -ENOMEM;
			break;
		}
		p = rte_pktmbuf_mtod(n, uint8_t *);
		for (off = 0; off < f->payload_len; off += (size_t)used) {
			used = psb_rec_decode(&r, f->payload + off, f->payload_len - off);
			if (used < 0)
				break;
			if (psb_kv_shard_of(r.key, app->nshards) != s)
				continue;
			memcpy(p + PSB_FRAME_HLEN + len, f->payload + off, (size_t)used);
			len = (uint16_t)(len + used);
		}
		if (len == 0) {
			rte_pktmbuf_free(n);
			continue;
		}
		h.total_len = len;
		h.seg_len = len;
		h.seg_size = len;
		psb_frame_write_headers(p, &f->src, &f->dst, &h, len);
		rte_pktmbuf_append(n, (uint16_t)(PSB_FRAME_HLEN + len));
		psb_meta(n)->hdr = h;
		prc = psb_handoff(role_ring(app, &psb_role_server, s), n);
		if (prc != 0 && rc == 0)
			rc = prc;
	}
	rte_pktmbuf_free(m);
	return rc;
}

static int
port_kind(const struct psb_app *app, uint16_t pid)
{
	uint16_t i;

	for (i = 0; i < app->nports; i++)
		if (app->port_ids[i] == pid)
			return (int)app->specs[i].kind;
	return -1;
}

/*
 * A BYE ends a peer's session only when it comes from a known peer (its address and MAC
 * learnt on the port it arrived on) to this node's data port: anyone else could silence a
 * link or discard other workers' requests with one frame. Accepted, it tells every server
 * shard (the store drops the peer's requests in progress) and pauses a memif port, whose
 * driver is about to tear the link down; other ports never pause.
 */
static void
bye_input(struct psb_role_inst *ri, struct rte_mbuf *m, const struct psb_frame *f)
{
	struct psb_app *app = ri->app;
	const struct psb_neigh *n = psb_neigh_find(app, f->src.ip);
	uint16_t pid = m->port, s;
	char ip[16];

	rte_pktmbuf_free(m);	/* f holds copies of the addresses */
	if (f->dst.port != app->me.port || (f->dst.ip != app->me.ip && f->dst.ip != 0xffffffffu) ||
	    f->src.ip == app->me.ip || n == NULL || n->port != pid ||
	    memcmp(n->mac, f->src.mac, 6) != 0) {
		ri->cnt.bye_ignored++;
		PSB_LOG_LIMITED(DEBUG, rx, "port %u: BYE from %s:%u to port %u ignored (not a "
			"known peer's to the data port)", pid, psb_ip_str(f->src.ip, ip),
			f->src.port, f->dst.port);
		return;
	}
	ri->cnt.byes++;
	PSB_DEBUG(port, "port %u: BYE from %s", pid, psb_ip_str(f->src.ip, ip));
	for (s = 0; s < app->nshards && app->node_role == PSB_NODE_SERVER; s++) {
		struct rte_mbuf *b = message_alloc(app, f, &f->hdr, pid);

		/* carries no frame: psb_meta is the whole message */
		if (b == NULL || psb_handoff(role_ring(app, &psb_role_server, s), b) != 0)
			ri->cnt.bye_lost++;
	}
	if (port_kind(app, pid) != PSB_PORT_MEMIF)
		return;
	app->bye[pid].until_ns = psb_now_ns(app) + PSB_BYE_PAUSE_NS;
	app->bye[pid].pauses++;
	app->port_bye[pid] = 1;
	rte_smp_wmb();
	app->port_paused[pid] = 1;
}

/* Reply in place (ARP, ICMP) on the port the request came from. */
static void
reply_in_place(struct psb_role_inst *ri, struct rte_mbuf *m, uint16_t len)
{
	if (len < m->data_len)
		rte_pktmbuf_trim(m, m->data_len - len);
	m->ol_flags = 0;
	psb_out_port(ri, m);
}

void
psb_host_flush(struct psb_role_inst *ri)
{
	unsigned int n;

	if (ri->nhost == 0)
		return;
	n = rte_ring_enqueue_burst(ri->app->pt_ring, (void **)ri->hostbuf, ri->nhost, NULL);
	ri->cnt.to_host += n;
	if (n < ri->nhost) {
		ri->cnt.ring_full += ri->nhost - n;
		rte_pktmbuf_free_bulk(&ri->hostbuf[n], ri->nhost - n);
	}
	ri->nhost = 0;
}

/*
 * Frames psb drops for these reasons are not psb's: with an exception port they go to the
 * host's kernel untouched. Those at psb's own ports that are not psb's messages (bad magic,
 * bad segments) and those too long to hold are psb's to drop.
 */
static const uint8_t host_reasons[PSB_DROP_MAX] = {
	[PSB_DROP_TRUNCATED] = 1, [PSB_DROP_ETHERTYPE] = 1, [PSB_DROP_IP_HDR] = 1,
	[PSB_DROP_IP_CSUM] = 1, [PSB_DROP_IP_FRAG] = 1, [PSB_DROP_NOT_MINE] = 1,
	[PSB_DROP_PROTO] = 1, [PSB_DROP_UDP_LEN] = 1, [PSB_DROP_PORT] = 1, [PSB_DROP_ARP] = 1,
	[PSB_DROP_ICMP] = 1,
};

/*
 * A received frame dropped for reason (enum psb_drop): counted, and said with psb.rx at
 * debug, a line a second per reason at most; or, not being psb's, handed to the
 * passthrough role for the host (counted as to_host, or ring_full).
 */
static void
drop(struct psb_role_inst *ri, struct rte_mbuf *m, int reason)
{
	static RTE_DEFINE_PER_LCORE(struct psb_log_limit, said[PSB_DROP_MAX]);

	if (ri->app->pt_ring != NULL && host_reasons[reason]) {
		ri->hostbuf[ri->nhost++] = m;
		if (ri->nhost == PSB_BURST)
			psb_host_flush(ri);
		return;
	}
	ri->cnt.drops[reason]++;
	PSB_LOG_LIMITED_BY(&RTE_PER_LCORE(said)[reason], DEBUG, rx, "port %u: frame dropped: %s",
		m->port, psb_drop_names[reason]);
	rte_pktmbuf_free(m);
}

/*
 * A datagram of another protocol (the multicast and staleness roles'): to the role whose
 * ports it came to, its payload whole; no role: dropped as to a port nobody serves.
 */
static void
udp_input(struct psb_role_inst *ri, struct rte_mbuf *m, const struct psb_frame *f,
		const uint8_t *p)
{
	struct psb_app *app = ri->app;
	const struct psb_route *rt;
	struct psb_meta *meta = psb_meta(m);
	int idx;

	memset(&meta->hdr, 0, sizeof(meta->hdr));
	meta->src = f->src;
	meta->payload_off = (uint16_t)(f->payload - p);
	meta->in_port = m->port;
	meta->dst_ip = f->dst.ip;
	if (f->src.ip != app->me.ip && f->dst.ip == app->me.ip)
		psb_neigh_learn(app, f->src.ip, f->src.mac, m->port);
	idx = psb_route_find(app, f, &rt);
	if (idx >= 0 || idx == PSB_ROLE_DELIVER) {
		psb_handoff_count(ri, idx == PSB_ROLE_DELIVER ? rt->role->deliver(ri, m, f) :
				  psb_handoff(rt->first[idx].ring, m));
		return;
	}
	if (idx == PSB_ROUTE_NOT_HERE) {
		psb_handoff_count(ri, psb_handoff(NULL, m));
		return;
	}
	drop(ri, m, PSB_DROP_PORT);
}

void
psb_dispatch(struct psb_role_inst *ri, struct rte_mbuf *m)
{
	struct psb_app *app = ri->app;
	struct psb_frame f;
	const struct psb_route *rt;
	struct psb_meta *meta;
	uint8_t *p;
	uint16_t dport;
	int idx;
	char ip[16];
	int rc;

	/*
	 * A frame longer than a receive buffer arrives chained (pcap, memif) and does not
	 * fit one buffer: linearizing fails exactly then.
	 */
	if (m->nb_segs > 1 && (m->pkt_len > PSB_MAX_FRAME || rte_pktmbuf_linearize(m) != 0)) {
		drop(ri, m, PSB_DROP_OVERSIZE);
		return;
	}
	p = rte_pktmbuf_mtod(m, uint8_t *);
	rc = psb_frame_parse(p, m->data_len, &app->parse, &f);
	if (rc < 0) {
		drop(ri, m, -rc);
		return;
	}
	switch (rc) {
	case PSB_FRAME_ARP_REQUEST:
		psb_neigh_learn(app, f.src.ip, f.src.mac, m->port);
		reply_in_place(ri, m, (uint16_t)psb_arp_reply(p, p, m->data_len, app->me.mac,
			app->me.ip));
		ri->cnt.arp_replies++;
		return;
	case PSB_FRAME_ARP_REPLY:
		psb_neigh_learn(app, f.src.ip, f.src.mac, m->port);
		ri->cnt.arp_learned++;
		rte_pktmbuf_free(m);
		return;
	case PSB_FRAME_ICMP_ECHO:
		psb_icmp_echo_reply(p, m->data_len, &f);
		ri->cnt.icmp_replies++;
		reply_in_place(ri, m, (uint16_t)(f.l3_off + ((p[f.l3_off + 2] << 8) |
			p[f.l3_off + 3])));
		return;
	case PSB_FRAME_UDP:
		udp_input(ri, m, &f, p);
		return;
	default:
		break;
	}

	/* PS_VERBOSE=2, as ps-lite: every message, here a line a second of them */
	PSB_LOG_LIMITED(DEBUG, rx, "rx %s from %s:%u sender %u req %u key %llu round %u "
		"seg %u+%u/%u%s%s", psb_msg_type_name(f.hdr.type), psb_ip_str(f.src.ip, ip),
		f.src.port, f.hdr.sender, f.hdr.req_id, (unsigned long long)f.hdr.key,
		f.hdr.round, f.hdr.offset, f.hdr.seg_len, f.hdr.total_len,
		f.hdr.type == PSB_MSG_ERROR ? " status " : "",
		f.hdr.type == PSB_MSG_ERROR ? psb_status_name(f.hdr.status) : "");
	if (f.hdr.type == PSB_MSG_BYE) {
		bye_input(ri, m, &f);
		return;
	}
	meta = psb_meta(m);
	meta->hdr = f.hdr;
	meta->src = f.src;
	meta->payload_off = (uint16_t)(f.payload - p);
	meta->in_port = m->port;
	if (f.src.ip != app->me.ip)
		psb_neigh_learn(app, f.src.ip, f.src.mac, m->port);
	dport = f.dst.port;

	/* the role that owns it: the first that claims it, in table order (roles/roles.c) */
	idx = psb_route_find(app, &f, &rt);
	if (idx >= 0 || idx == PSB_ROLE_DELIVER) {
		psb_handoff_count(ri, idx == PSB_ROLE_DELIVER ? rt->role->deliver(ri, m, &f) :
				  psb_handoff(rt->first[idx].ring, m));
		return;
	}
	if (dport != app->me.port) {
		drop(ri, m, PSB_DROP_PORT);
		return;
	}
	/* for this node's data port, but no role of this node serves it */
	psb_handoff_count(ri, psb_handoff(NULL, m));
}
