/* Registration with the scheduler: ARP, REGISTER, BARRIER; and the agent role of servers. */
#include <stdio.h>
#include <string.h>

#include <rte_malloc.h>

#include "psb_app.h"

#define RETRY_NS	(200ull * 1000 * 1000)

void
psb_agent_init(struct psb_agent *ag, struct psb_app *app, int server, uint16_t src_port)
{
	memset(ag, 0, sizeof(*ag));
	ag->server = server;
	ag->src_port = src_port;
	ag->barrier_group = server ? 0 : PSB_GROUP_WORKERS;
	if (app->sched_ip == 0) {
		/* No scheduler: one server, known up front, owning every key. */
		ag->view.num_servers = 1;
		ag->view.num_workers = app->num_workers;
		ag->view.servers[0].ip = server ? app->me.ip : app->static_server_ip;
		ag->view.servers[0].port = app->me.port;
		psb_sched_key_range(0, 1, &ag->view.servers[0].key_begin,
			&ag->view.servers[0].key_end);
		ag->state = PSB_AGENT_READY;
		return;
	}
	ag->state = app->sched_ip == app->me.ip ? PSB_AGENT_REGISTER : PSB_AGENT_RESOLVE;
}

void
psb_agent_send(struct psb_agent *ag, struct psb_role_inst *ri, uint8_t type)
{
	struct psb_app *app = ri->app;
	const struct psb_neigh *n = psb_neigh_find(app, app->sched_ip);
	struct psb_addr src = app->me, dst;
	struct psb_hdr h;
	struct rte_mbuf *m;

	memset(&dst, 0, sizeof(dst));
	dst.ip = app->sched_ip;
	dst.port = app->sched_port;
	memcpy(dst.mac, n != NULL ? n->mac : app->me.mac, 6);
	src.port = ag->src_port;
	psb_hdr_init(&h, type);
	h.flags = ag->server ? PSB_F_SERVER : PSB_F_WORKER;
	h.aux = ag->barrier_group;
	if (type == PSB_MSG_REGISTER) {
		h.req_id = ag->server ? app->epoch : 0;
		h.flags |= app->heartbeat_ns != 0 ? PSB_F_BEATS : 0;
	} else if (type == PSB_MSG_HEARTBEAT) {
		h.aux = (uint32_t)(app->heartbeat_ns / 1000000);
	}
	m = psb_build(ri, &src, &dst, &h, NULL);
	if (m != NULL)
		psb_out(ri, m, dst.ip);
}

int
psb_agent_step(struct psb_agent *ag, struct psb_role_inst *ri, uint64_t now_ns)
{
	struct psb_app *app = ri->app;

	if (ag->state == PSB_AGENT_READY)
		return 1;
	if (ag->state == PSB_AGENT_RESOLVE && psb_neigh_find(app, app->sched_ip) != NULL) {
		ag->state = PSB_AGENT_REGISTER;
		ag->next_try_ns = 0;
		ag->phase_ns = 0;
		ag->tries = 0;
	}
	if (ag->phase_ns == 0)
		ag->phase_ns = now_ns;
	if (now_ns < ag->next_try_ns)
		return 0;
	ag->next_try_ns = now_ns + RETRY_NS;
	ag->tries++;
	if (ag->tries % 25 == 0)
		PSB_NOTICE(agent, "still waiting for the scheduler (%s, %u tries)",
			ag->state == PSB_AGENT_RESOLVE ? "ARP" :
			ag->state == PSB_AGENT_REGISTER ? "REGISTER" : "BARRIER", ag->tries);
	switch (ag->state) {
	case PSB_AGENT_RESOLVE:
		psb_arp_resolve(ri, app->sched_ip);
		break;
	case PSB_AGENT_REGISTER:
		psb_agent_send(ag, ri, PSB_MSG_REGISTER);
		break;
	case PSB_AGENT_BARRIER:
		psb_agent_send(ag, ri, PSB_MSG_BARRIER);
		break;
	default:
		break;
	}
	return 0;
}

void
psb_agent_input(struct psb_agent *ag, struct psb_app *app, const struct psb_meta *meta,
		const uint8_t *payload)
{
	if (meta->hdr.type == PSB_MSG_REGISTER_ACK && ag->state <= PSB_AGENT_REGISTER) {
		if (psb_sched_view_decode(&ag->view, payload, meta->hdr.seg_len) != 0) {
			/* anyone can send one: a line a second at most */
			PSB_LOG_LIMITED(NOTICE, agent, "scheduler sent a malformed cluster view; "
				"ignored");
			return;
		}
		ag->rank = (uint16_t)meta->hdr.aux;
		ag->rejoin = (meta->hdr.flags & PSB_F_REJOIN) != 0;
		ag->state = ag->barrier_group != 0 ? PSB_AGENT_BARRIER : PSB_AGENT_READY;
		if (ag->rejoin && !ag->server)
			PSB_NOTICE(agent, "worker: rejoining the job as rank %u: the rounds it has "
				"done count as iterations done", ag->rank);
		else if (ag->rejoin)
			PSB_NOTICE(agent, "server: the scheduler knew rank %u already: this server "
				"restarted, and what the job stored in it before is lost; the workers "
				"are told, and the job fails", ag->rank);
		ag->next_try_ns = 0;
		ag->tries = 0;
		ag->phase_ns = 0;
		PSB_DEBUG(agent, "registered: %s rank %u, %u servers, %u workers",
			ag->server ? "server" : "worker", ag->rank, ag->view.num_servers,
			ag->view.num_workers);
	} else if (meta->hdr.type == PSB_MSG_BARRIER_ACK && ag->state == PSB_AGENT_BARRIER) {
		ag->state = PSB_AGENT_READY;
	}
}

int
psb_agent_expired(const struct psb_agent *ag, const struct psb_app *app, uint64_t now_ns,
		char *what, size_t len)
{
	char ip[16];

	if (ag->state == PSB_AGENT_READY || ag->phase_ns == 0 || app->connect_timeout_ns == 0 ||
	    now_ns - ag->phase_ns < app->connect_timeout_ns)
		return 0;
	psb_ip_str(app->sched_ip, ip);
	if (ag->state == PSB_AGENT_RESOLVE)
		snprintf(what, len, "scheduler %s did not answer ARP for %.1f s (%u tries)", ip,
			 (now_ns - ag->phase_ns) / 1e9, ag->tries);
	else if (ag->state == PSB_AGENT_REGISTER)
		snprintf(what, len, "scheduler %s:%u did not answer REGISTER (as a %s) for %.1f s "
			 "(%u tries; it answers once the job's %u worker(s) and %u server(s) have all "
			 "registered)", ip, app->sched_port, ag->server ? "server" : "worker",
			 (now_ns - ag->phase_ns) / 1e9, ag->tries, app->num_workers,
			 app->num_servers);
	else
		snprintf(what, len, "scheduler %s:%u did not answer BARRIER for %.1f s (%u tries; "
			 "it answers once the job's %u worker(s) have all joined)", ip,
			 app->sched_port, (now_ns - ag->phase_ns) / 1e9, ag->tries,
			 app->num_workers);
	return 1;
}

void
psb_agent_restart(struct psb_agent *ag)
{
	ag->phase_ns = 0;
	ag->tries = 0;
}

void
psb_agent_beat(struct psb_agent *ag, struct psb_role_inst *ri, uint64_t now_ns)
{
	struct psb_app *app = ri->app;

	if (app->heartbeat_ns == 0 || app->sched_ip == 0 || ag->state != PSB_AGENT_READY ||
	    now_ns < ag->beat_next_ns)
		return;
	ag->beat_next_ns = now_ns + app->heartbeat_ns;
	psb_agent_send(ag, ri, PSB_MSG_HEARTBEAT);
}

/*
 * The scheduler says the job is over: every worker finished. Acknowledged (every time: an
 * ack may be lost); the server then ends as on SIGTERM, its results and stats written,
 * unless it keeps serving. Only the scheduler's own address is heeded.
 */
static void
agent_finalize(struct psb_agent *ag, struct psb_role_inst *ri, const struct psb_meta *meta)
{
	struct psb_app *app = ri->app;

	if (meta->src.ip != app->sched_ip || meta->src.port != app->sched_port ||
	    !app->registered) {
		ri->cnt.not_served++;
		return;
	}
	psb_agent_send(ag, ri, PSB_MSG_FINALIZE_ACK);
	if (ag->ended)
		return;
	ag->ended = 1;
	if (app->keep_serving) {
		PSB_INFO(agent, "server: every worker finished, says the scheduler; serving on "
			"(--keep-serving)");
		return;
	}
	PSB_INFO(agent, "server: every worker finished, says the scheduler: the job is over");
	/* a moment for the ack to leave before the process ends */
	ag->end_ns = psb_now_ns(app) + 50000000ull;
}

/* The agent role registers a server node and keeps its registration state. */
static int
agent_init(struct psb_role_inst *ri)
{
	struct psb_agent *ag = rte_zmalloc("psb_agent", sizeof(*ag), RTE_CACHE_LINE_SIZE);

	if (ag == NULL)
		return -ENOMEM;
	psb_agent_init(ag, ri->app, 1, ri->app->me.port);
	ri->priv = ag;
	return 0;
}

static int
agent_poll(struct psb_role_inst *ri)
{
	struct psb_agent *ag = ri->priv;
	struct rte_mbuf *pkts[PSB_BURST];
	unsigned int n, i;

	/* Registered: only a repeated ack can still come; look one pass in 256. */
	if (ri->app->registered && (++ag->idle_passes & 255) != 0)
		return 0;
	n = rte_ring_dequeue_burst(ri->ring, (void **)pkts, PSB_BURST, NULL);
	for (i = 0; i < n; i++) {
		struct psb_meta *meta = psb_meta(pkts[i]);

		if (meta->hdr.type == PSB_MSG_FINALIZE)
			agent_finalize(ag, ri, meta);
		else
			psb_agent_input(ag, ri->app, meta,
				rte_pktmbuf_mtod_offset(pkts[i], uint8_t *, meta->payload_off));
		rte_pktmbuf_free(pkts[i]);
	}
	if (ri->app->registered)
		psb_agent_beat(ag, ri, psb_now_ns(ri->app));
	if (ag->end_ns != 0 && psb_now_ns(ri->app) >= ag->end_ns) {
		ag->end_ns = 0;
		__atomic_store_n(&ri->app->quit, 1, __ATOMIC_RELEASE);
	}
	if (!ri->app->registered) {
		uint64_t now = psb_now_ns(ri->app);
		char what[224];

		if (psb_agent_step(ag, ri, now)) {
			ri->app->registered = 1;
			PSB_INFO(agent, "server registered with the scheduler as rank %u", ag->rank);
		} else if (psb_agent_expired(ag, ri->app, now, what, sizeof(what))) {
			/* a server no worker can find serves nothing: say why and end */
			psb_app_fail(ri->app, "server: %s", what);
			psb_agent_restart(ag);
		}
	}
	psb_out_flush(ri);
	return (int)n;
}

static unsigned int
agent_count(const struct psb_app *app)
{
	return app->node_role == PSB_NODE_SERVER;
}

/* What the scheduler tells a server, at this node's data port. */
static const uint8_t agent_types[] = {
	PSB_MSG_REGISTER_ACK, PSB_MSG_BARRIER_ACK, PSB_MSG_FINALIZE, PSB_MSG_HEARTBEAT_ACK,
};

static int
agent_claim(const struct psb_app *app, const struct psb_frame *f)
{
	unsigned int i;

	if (f->dst.port != app->me.port)
		return -1;
	for (i = 0; i < RTE_DIM(agent_types); i++)
		if (f->hdr.type == agent_types[i])
			return 0;
	return -1;
}

const struct psb_role psb_role_agent = {
	.name = "agent",
	.count = agent_count,
	.ring = 256,
	.claim = agent_claim,
	.types = agent_types,
	.ntypes = RTE_DIM(agent_types),
	.init = agent_init,
	.poll = agent_poll,
	.fini = psb_role_free_priv,
};
