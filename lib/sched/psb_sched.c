/* Scheduler (ps-lite's): nodes register, get ranks and server key ranges, and barrier. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "psb_be.h"
#include "psb_sched.h"

struct sched_node {
	struct psb_addr addr;
	int server;		/* 1: server, 0: worker */
	uint16_t rank;		/* within its role */
	uint32_t barrier_seq;	/* last barrier sequence this node entered */
	int in_barrier;
	int done;		/* worker: said FINALIZE; server: acknowledged it */
	uint32_t epoch;		/* from its REGISTER (0: none given) */
	int watched;		/* it sends HEARTBEATs: silence means it died */
	int dead;		/* silent for dead_after_ns (until it speaks again) */
	uint8_t lost;		/* server: PSB_SCHED_LOST_* (for good: its state is gone) */
	uint64_t last_ns;	/* when it was last heard */
	uint32_t silent_ms;	/* when held dead: how long it had been silent */
};

struct barrier {
	uint32_t seq;		/* sequence being gathered */
	uint32_t released;	/* last released sequence + 1 (0: none) */
	uint16_t count;
};

struct psb_sched {
	struct psb_sched_cfg cfg;
	struct sched_node nodes[PSB_SCHED_MAX_NODES];
	uint16_t nnodes;
	uint16_t nservers, nworkers;
	int ready;
	int finished;		/* every worker said FINALIZE */
	uint16_t ndone_workers, ndone_servers;
	uint16_t nlost;		/* servers dead or restarted */
	uint64_t now_ns;	/* psb_sched_tick's clock (0: not started) */
	struct barrier bar[8];	/* by group mask */
	struct psb_sched_stats st;
};

void
psb_sched_key_range(uint16_t server, uint16_t n, uint64_t *begin, uint64_t *end)
{
	uint64_t step = n == 0 ? UINT64_MAX : UINT64_MAX / n;

	*begin = step * server;
	*end = (uint16_t)(server + 1) >= n ? UINT64_MAX : step * (server + 1);
}

size_t
psb_sched_view_encode(const struct psb_sched_view *v, uint8_t *out, size_t cap)
{
	size_t need = psb_sched_view_size(v->num_servers);
	uint16_t i;

	if (cap < need || v->num_servers > PSB_SCHED_MAX_NODES)
		return 0;
	psb_wr16(out, v->num_servers);
	psb_wr16(out + 2, v->num_workers);
	for (i = 0; i < v->num_servers; i++) {
		uint8_t *p = out + 4 + (size_t)i * 24;

		psb_wr32(p, v->servers[i].ip);
		psb_wr16(p + 4, v->servers[i].port);
		psb_wr16(p + 6, 0);
		psb_wr64(p + 8, v->servers[i].key_begin);
		psb_wr64(p + 16, v->servers[i].key_end);
	}
	return need;
}

int
psb_sched_view_decode(struct psb_sched_view *v, const uint8_t *in, size_t len)
{
	uint16_t i;

	if (len < 4)
		return -EINVAL;
	memset(v, 0, sizeof(*v));
	v->num_servers = psb_rd16(in);
	v->num_workers = psb_rd16(in + 2);
	if (v->num_servers > PSB_SCHED_MAX_NODES || len < psb_sched_view_size(v->num_servers))
		return -EINVAL;
	for (i = 0; i < v->num_servers; i++) {
		const uint8_t *p = in + 4 + (size_t)i * 24;

		v->servers[i].ip = psb_rd32(p);
		v->servers[i].port = psb_rd16(p + 4);
		v->servers[i].key_begin = psb_rd64(p + 8);
		v->servers[i].key_end = psb_rd64(p + 16);
	}
	return 0;
}

struct psb_sched *
psb_sched_create(const struct psb_sched_cfg *cfg)
{
	struct psb_sched *s;

	if (cfg->num_workers == 0 || cfg->num_servers == 0 ||
	    cfg->num_workers + cfg->num_servers > PSB_SCHED_MAX_NODES)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (s != NULL)
		s->cfg = *cfg;
	return s;
}

void
psb_sched_free(struct psb_sched *s)
{
	free(s);
}

int
psb_sched_ready(const struct psb_sched *s)
{
	return s->ready;
}

int
psb_sched_finished(const struct psb_sched *s)
{
	return s->finished;
}

unsigned int
psb_sched_end_servers(struct psb_sched *s, psb_sched_emit_fn emit, void *arg)
{
	unsigned int pending = 0;
	struct psb_hdr h;
	uint16_t i;

	if (!s->finished || s->cfg.keep_serving)
		return 0;
	psb_hdr_init(&h, PSB_MSG_FINALIZE);
	h.flags = PSB_F_SERVER;
	for (i = 0; i < s->nnodes; i++) {
		if (!s->nodes[i].server || s->nodes[i].done || s->nodes[i].dead)
			continue;
		pending++;
		emit(arg, &s->nodes[i].addr, &h, NULL);
	}
	return pending;
}

const struct psb_sched_stats *
psb_sched_stats(const struct psb_sched *s)
{
	return &s->st;
}

static struct sched_node *
find_node(struct psb_sched *s, const struct psb_addr *a)
{
	uint16_t i;

	for (i = 0; i < s->nnodes; i++)
		if (s->nodes[i].addr.ip == a->ip && s->nodes[i].addr.port == a->port)
			return &s->nodes[i];
	return NULL;
}

static void
send_ack(struct psb_sched *s, const struct sched_node *n, const struct psb_hdr *req, int rejoin,
		psb_sched_emit_fn emit, void *arg)
{
	static uint8_t buf[4 + PSB_SCHED_MAX_NODES * 24];
	struct psb_sched_view v;
	struct psb_hdr h;
	uint16_t i;
	size_t len;

	memset(&v, 0, sizeof(v));
	v.num_servers = s->cfg.num_servers;
	v.num_workers = s->cfg.num_workers;
	for (i = 0; i < s->nnodes; i++) {
		const struct sched_node *sn = &s->nodes[i];

		if (!sn->server)
			continue;
		v.servers[sn->rank].ip = sn->addr.ip;
		v.servers[sn->rank].port = sn->addr.port;
		psb_sched_key_range(sn->rank, s->cfg.num_servers, &v.servers[sn->rank].key_begin,
			&v.servers[sn->rank].key_end);
	}
	len = psb_sched_view_encode(&v, buf, sizeof(buf));
	psb_hdr_init(&h, PSB_MSG_REGISTER_ACK);
	h.flags = (n->server ? PSB_F_SERVER : PSB_F_WORKER) | (rejoin ? PSB_F_REJOIN : 0);
	h.req_id = req != NULL ? req->req_id : 0;
	h.aux = n->rank;
	h.total_len = (uint32_t)len;
	h.seg_len = (uint16_t)len;
	h.seg_size = (uint16_t)((len + 3) & ~3u);
	emit(arg, &n->addr, &h, buf);
}

static void
notify(const struct psb_sched *s, const struct psb_sched_event *ev)
{
	if (s->cfg.on_event != NULL)
		s->cfg.on_event(s->cfg.ctx, ev);
}

static void
tell(const struct psb_sched *s, enum psb_sched_event_kind kind, const struct psb_addr *a,
		int server, uint16_t rank)
{
	struct psb_sched_event ev = {
		.kind = kind, .server = server, .rank = rank,
		.nservers = s->nservers, .nworkers = s->nworkers,
	};

	if (a != NULL)
		ev.addr = *a;
	notify(s, &ev);
}

/* A node is through: a worker finished (FINALIZE), or a server ended after the job. */
static void
node_done(struct psb_sched *s, struct sched_node *n)
{
	struct psb_sched_event ev = { .addr = n->addr, .server = n->server, .rank = n->rank };

	n->done = 1;
	if (n->server) {
		s->ndone_servers++;
		s->st.servers_ended++;
		ev.kind = PSB_SCHED_EV_SERVER_ENDED;
	} else {
		s->ndone_workers++;
		s->st.workers_finished++;
		ev.kind = PSB_SCHED_EV_WORKER_DONE;
	}
	ev.nworkers = s->ndone_workers;
	ev.nservers = s->ndone_servers;
	notify(s, &ev);
}

/* A known server registered again: from a new process (another epoch), it restarted. */
static void
server_restarted(struct psb_sched *s, struct sched_node *n)
{
	if (!n->lost)
		s->nlost++;
	n->lost = PSB_SCHED_LOST_RESTARTED;
	n->dead = 0;
	s->st.servers_restarted++;
	tell(s, PSB_SCHED_EV_RESTARTED, &n->addr, 1, n->rank);
}

static int
handle_register(struct psb_sched *s, const struct psb_hdr *h, const struct psb_addr *from,
		psb_sched_emit_fn emit, void *arg)
{
	struct sched_node *n = find_node(s, from);
	int server = (h->flags & PSB_F_SERVER) != 0;
	uint16_t i;

	if (n != NULL) {
		s->st.reregistered++;
		if (n->server && s->ready && h->req_id != 0 && n->epoch != 0 &&
		    h->req_id != n->epoch)
			server_restarted(s, n);
		if (h->req_id != 0)
			n->epoch = h->req_id;
		if (h->flags & PSB_F_BEATS)
			n->watched = 1;
		if (s->ready)
			send_ack(s, n, h, 1, emit, arg);
		return 0;
	}
	if ((server && s->nservers >= s->cfg.num_servers) ||
	    (!server && s->nworkers >= s->cfg.num_workers) ||
	    (!server && !(h->flags & PSB_F_WORKER))) {
		s->st.rejected++;
		tell(s, PSB_SCHED_EV_REFUSED, from, server, 0);
		return 0;
	}
	n = &s->nodes[s->nnodes++];
	n->addr = *from;
	n->server = server;
	n->rank = server ? s->nservers++ : s->nworkers++;
	n->epoch = h->req_id;
	n->watched = (h->flags & PSB_F_BEATS) != 0;
	n->last_ns = s->now_ns;
	s->st.registered++;
	tell(s, PSB_SCHED_EV_REGISTERED, from, server, n->rank);
	if (s->nservers == s->cfg.num_servers && s->nworkers == s->cfg.num_workers) {
		s->ready = 1;
		tell(s, PSB_SCHED_EV_READY, NULL, 0, 0);
		for (i = 0; i < s->nnodes; i++)
			send_ack(s, &s->nodes[i], NULL, 0, emit, arg);
	}
	return 0;
}

static int
in_group(const struct sched_node *n, uint32_t group)
{
	return (n->server && (group & PSB_GROUP_SERVERS)) ||
	       (!n->server && (group & PSB_GROUP_WORKERS));
}

static int
handle_barrier(struct psb_sched *s, const struct psb_hdr *h, const struct psb_addr *from,
		psb_sched_emit_fn emit, void *arg)
{
	struct sched_node *n = find_node(s, from);
	uint32_t group = h->aux & 7;
	struct barrier *b = &s->bar[group];
	struct psb_hdr ack;
	uint16_t i, want = 0;

	if (n == NULL || !s->ready || !in_group(n, group)) {
		s->st.rejected++;
		return 0;
	}
	psb_hdr_init(&ack, PSB_MSG_BARRIER_ACK);
	ack.aux = group;
	ack.round = h->round;
	ack.req_id = h->req_id;
	if (h->round + 1 <= b->released) {
		/* Already released: the ack was lost, repeat it to this node. */
		emit(arg, &n->addr, &ack, NULL);
		return 0;
	}
	if (n->in_barrier && n->barrier_seq == h->round)
		return 0;
	if (b->count == 0)
		b->seq = h->round;
	if (h->round != b->seq) {
		s->st.rejected++;
		return 0;
	}
	n->in_barrier = 1;
	n->barrier_seq = h->round;
	b->count++;
	for (i = 0; i < s->nnodes; i++)
		want += in_group(&s->nodes[i], group);
	if (b->count < want)
		return 0;
	b->count = 0;
	b->released = b->seq + 1;
	s->st.barriers_released++;
	for (i = 0; i < s->nnodes; i++) {
		struct sched_node *m = &s->nodes[i];

		if (!in_group(m, group) || !m->in_barrier)
			continue;
		m->in_barrier = 0;
		emit(arg, &m->addr, &ack, NULL);
	}
	return 0;
}

/*
 * The job is over once every worker finished, or is dead while the others finished: each
 * server is told (FINALIZE, when emit is given) unless they keep serving.
 */
static void
check_finished(struct psb_sched *s, psb_sched_emit_fn emit, void *arg)
{
	uint16_t i, ended = 0;

	if (s->finished || !s->ready)
		return;
	for (i = 0; i < s->nnodes; i++)
		ended += !s->nodes[i].server && (s->nodes[i].done || s->nodes[i].dead);
	if (ended < s->cfg.num_workers || s->ndone_workers == 0)
		return;
	s->finished = 1;
	tell(s, PSB_SCHED_EV_FINISHED, NULL, 0, 0);
	if (emit != NULL)
		psb_sched_end_servers(s, emit, arg);
}

/* A worker finished (ps-lite's Finalize): acknowledged, every time it asks. */
static int
handle_finalize(struct psb_sched *s, const struct psb_hdr *h, const struct psb_addr *from,
		psb_sched_emit_fn emit, void *arg)
{
	struct sched_node *n = find_node(s, from);
	struct psb_hdr ack;

	if (n == NULL || n->server || !s->ready) {
		s->st.rejected++;
		return 0;
	}
	psb_hdr_init(&ack, PSB_MSG_FINALIZE_ACK);
	ack.req_id = h->req_id;
	ack.flags = PSB_F_WORKER;
	emit(arg, &n->addr, &ack, NULL);
	if (n->done)
		return 0;
	node_done(s, n);
	check_finished(s, emit, arg);
	return 0;
}

/* A node says it is alive: answered with the servers the job lost so far. */
static int
handle_heartbeat(struct psb_sched *s, const struct psb_hdr *h, const struct psb_addr *from,
		psb_sched_emit_fn emit, void *arg)
{
	static uint8_t buf[4 + PSB_SCHED_LOST_MAX * PSB_SCHED_LOST_ENTRY];
	struct psb_sched_lost lost[PSB_SCHED_LOST_MAX];
	struct sched_node *n = find_node(s, from);
	unsigned int total, k;
	struct psb_hdr ack;
	size_t len;

	if (n == NULL) {
		s->st.rejected++;
		return 0;
	}
	s->st.heartbeats++;
	n->watched = 1;
	total = psb_sched_lost(s, lost, PSB_SCHED_LOST_MAX);
	k = total < PSB_SCHED_LOST_MAX ? total : PSB_SCHED_LOST_MAX;
	len = psb_sched_lost_encode(lost, k, buf, sizeof(buf));
	psb_hdr_init(&ack, PSB_MSG_HEARTBEAT_ACK);
	ack.flags = n->server ? PSB_F_SERVER : PSB_F_WORKER;
	ack.req_id = h->req_id;
	ack.aux = total;
	ack.total_len = (uint32_t)len;
	ack.seg_len = (uint16_t)len;
	ack.seg_size = (uint16_t)((len + 3) & ~3u);
	emit(arg, &n->addr, &ack, buf);
	return 0;
}

/* A server acknowledged the end of the job. */
static int
handle_finalize_ack(struct psb_sched *s, const struct psb_addr *from)
{
	struct sched_node *n = find_node(s, from);

	if (n == NULL || !n->server || !s->finished) {
		s->st.rejected++;
		return 0;
	}
	if (!n->done)
		node_done(s, n);
	return 0;
}

/* Anything from a known node says it is alive; a node held dead is back. */
static void
heard(struct psb_sched *s, const struct psb_addr *from)
{
	struct sched_node *n = find_node(s, from);
	struct psb_sched_event ev = { .kind = PSB_SCHED_EV_BACK };

	if (n == NULL)
		return;
	if (n->dead) {
		n->dead = 0;
		ev.addr = n->addr;
		ev.server = n->server;
		ev.rank = n->rank;
		ev.silent_ns = s->now_ns - n->last_ns;
		notify(s, &ev);
	}
	n->last_ns = s->now_ns;
}

int
psb_sched_handle(struct psb_sched *s, const struct psb_hdr *h, const struct psb_addr *from,
		psb_sched_emit_fn emit, void *arg)
{
	heard(s, from);
	if (h->type == PSB_MSG_REGISTER)
		return handle_register(s, h, from, emit, arg);
	if (h->type == PSB_MSG_BARRIER)
		return handle_barrier(s, h, from, emit, arg);
	if (h->type == PSB_MSG_FINALIZE)
		return handle_finalize(s, h, from, emit, arg);
	if (h->type == PSB_MSG_FINALIZE_ACK)
		return handle_finalize_ack(s, from);
	if (h->type == PSB_MSG_HEARTBEAT)
		return handle_heartbeat(s, h, from, emit, arg);
	return -EINVAL;
}

unsigned int
psb_sched_tick(struct psb_sched *s, uint64_t now_ns)
{
	uint64_t gap = now_ns > s->now_ns ? now_ns - s->now_ns : 0;
	uint64_t limit = s->cfg.dead_after_ns;
	/* the first reading, or the scheduler did not run: nobody could be heard */
	int stalled = s->now_ns == 0 || gap > limit / 2;
	uint16_t i;

	s->now_ns = now_ns;
	if (limit == 0)
		return s->nlost;
	for (i = 0; i < s->nnodes; i++) {
		struct sched_node *n = &s->nodes[i];
		struct psb_sched_event ev = { .kind = PSB_SCHED_EV_DEAD };

		if (stalled) {
			n->last_ns = now_ns;
			continue;
		}
		if (!n->watched || n->dead || n->done || now_ns - n->last_ns <= limit)
			continue;
		n->dead = 1;
		n->silent_ms = (uint32_t)((now_ns - n->last_ns) / 1000000);
		if (n->server) {
			s->st.servers_dead++;
			if (!n->lost) {
				n->lost = PSB_SCHED_LOST_DEAD;
				s->nlost++;
			}
		} else {
			s->st.workers_dead++;
		}
		ev.addr = n->addr;
		ev.server = n->server;
		ev.rank = n->rank;
		ev.silent_ns = now_ns - n->last_ns;
		ev.nservers = s->nservers;
		ev.nworkers = s->nworkers;
		notify(s, &ev);
		if (!n->server)
			check_finished(s, NULL, NULL);
	}
	return s->nlost;
}

unsigned int
psb_sched_lost(const struct psb_sched *s, struct psb_sched_lost *out, unsigned int n)
{
	unsigned int k = 0;
	uint16_t i;

	for (i = 0; i < s->nnodes; i++) {
		const struct sched_node *sn = &s->nodes[i];

		if (!sn->server || !sn->lost)
			continue;
		if (k < n) {
			memset(&out[k], 0, sizeof(out[k]));
			out[k].rank = sn->rank;
			out[k].why = sn->lost;
			out[k].addr = sn->addr;
			out[k].silent_ms = sn->lost == PSB_SCHED_LOST_DEAD ? sn->silent_ms : 0;
		}
		k++;
	}
	return k;
}

size_t
psb_sched_lost_encode(const struct psb_sched_lost *l, unsigned int n, uint8_t *out, size_t cap)
{
	size_t need = 4 + (size_t)n * PSB_SCHED_LOST_ENTRY;
	unsigned int i;

	if (n > PSB_SCHED_LOST_MAX || cap < need)
		return 0;
	psb_wr16(out, (uint16_t)n);
	psb_wr16(out + 2, 0);
	for (i = 0; i < n; i++) {
		uint8_t *p = out + 4 + (size_t)i * PSB_SCHED_LOST_ENTRY;

		psb_wr16(p, l[i].rank);
		p[2] = l[i].why;
		p[3] = 0;
		psb_wr32(p + 4, l[i].addr.ip);
		psb_wr16(p + 8, l[i].addr.port);
		psb_wr16(p + 10, 0);
		psb_wr32(p + 12, l[i].silent_ms);
	}
	return need;
}

int
psb_sched_lost_decode(struct psb_sched_lost *out, unsigned int n, const uint8_t *in, size_t len)
{
	unsigned int count, i;

	if (len < 4)
		return -EINVAL;
	count = psb_rd16(in);
	if (count > PSB_SCHED_LOST_MAX || len < 4 + (size_t)count * PSB_SCHED_LOST_ENTRY)
		return -EINVAL;
	for (i = 0; i < count; i++) {
		const uint8_t *p = in + 4 + (size_t)i * PSB_SCHED_LOST_ENTRY;

		if (p[2] != PSB_SCHED_LOST_DEAD && p[2] != PSB_SCHED_LOST_RESTARTED)
			return -EINVAL;
		if (i >= n)
			continue;
		memset(&out[i], 0, sizeof(out[i]));
		out[i].rank = psb_rd16(p);
		out[i].why = p[2];
		out[i].addr.ip = psb_rd32(p + 4);
		out[i].addr.port = psb_rd16(p + 8);
		out[i].silent_ms = psb_rd32(p + 12);
	}
	return (int)(count < n ? count : n);
}
