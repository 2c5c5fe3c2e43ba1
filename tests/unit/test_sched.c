/* cmocka tests of the scheduler: registration, ranks, key ranges and barriers (lib/sched). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "psb_sched.h"
#include "psb_testcap.h"
#include "psb_testframe.h"

#define NW		3
#define NS		2

/* Distinct node addresses: servers 198.18.1.x:9430, workers 198.18.2.x:9432+. */
static struct psb_addr
saddr(unsigned int i)
{
	return tf_addr((uint16_t)(0x100 | (uint8_t)i), 0xc6120100u + 10 + i, PSB_UDP_PORT);
}

static struct psb_addr
waddr(unsigned int i)
{
	return tf_addr((uint16_t)(0x200 | (uint8_t)i), 0xc6120200u + 10 + i,
		(uint16_t)(PSB_UDP_PORT + 2 + i));
}

static int
addr_eq(const struct psb_addr *a, const struct psb_addr *b)
{
	return a->ip == b->ip && a->port == b->port;
}

static int
reg(struct psb_sched *s, struct tf_cap *c, const struct psb_addr *from, uint8_t flags,
		uint32_t req_id)
{
	struct psb_hdr h = tf_hdr(PSB_MSG_REGISTER, flags, 0, req_id, 0, 0);

	return psb_sched_handle(s, &h, from, tf_cap_emit_seg, c);
}

static int
barrier(struct psb_sched *s, struct tf_cap *c, const struct psb_addr *from, uint32_t group,
		uint32_t seq, uint32_t req_id)
{
	struct psb_hdr h = tf_hdr(PSB_MSG_BARRIER, 0, 0, req_id, seq, 0);

	h.aux = group;
	return psb_sched_handle(s, &h, from, tf_cap_emit_seg, c);
}

static struct psb_sched *
sched_new(void)
{
	struct psb_sched_cfg cfg = { .num_workers = NW, .num_servers = NS };
	struct psb_sched *s = psb_sched_create(&cfg);

	assert_non_null(s);
	return s;
}

/* Register 2 servers and 3 workers, interleaved; returns with every ack captured. */
static void
register_all(struct psb_sched *s, struct tf_cap *c)
{
	struct psb_addr w0 = waddr(0), w1 = waddr(1), w2 = waddr(2);
	struct psb_addr s0 = saddr(0), s1 = saddr(1);

	assert_int_equal(reg(s, c, &w1, PSB_F_WORKER, 1), 0);
	assert_int_equal(reg(s, c, &s1, PSB_F_SERVER, 2), 0);
	assert_int_equal(reg(s, c, &w0, PSB_F_WORKER, 3), 0);
	assert_int_equal(psb_sched_ready(s), 0);
	/* a repeat before everyone is in: counted, not answered */
	assert_int_equal(reg(s, c, &w1, PSB_F_WORKER, 4), 0);
	assert_int_equal(reg(s, c, &s0, PSB_F_SERVER, 5), 0);
	assert_int_equal(psb_sched_ready(s), 0);
	assert_int_equal(c->n, 0);
	assert_int_equal(reg(s, c, &w2, PSB_F_WORKER, 6), 0);
	assert_int_equal(psb_sched_ready(s), 1);
}

/* Check a REGISTER_ACK: rank, role, and the cluster view it carries. */
static void
check_ack(const struct tf_cap_msg *m, int server, uint16_t rank, uint32_t req_id)
{
	struct psb_sched_view v;
	/* servers rank by registration order: s1 came first */
	struct psb_addr sa[NS] = { saddr(1), saddr(0) };
	uint64_t b, e;
	unsigned int i;

	assert_int_equal(m->h.magic, PSB_MAGIC);
	assert_int_equal(m->h.type, PSB_MSG_REGISTER_ACK);
	assert_int_equal(m->h.flags & ~PSB_F_REJOIN, server ? PSB_F_SERVER : PSB_F_WORKER);
	/* REJOIN: the node had its rank already (a repeat after the job formed) */
	assert_int_equal((m->h.flags & PSB_F_REJOIN) != 0, req_id >= 77);
	assert_int_equal(m->h.aux, rank);
	assert_int_equal(m->h.req_id, req_id);
	assert_int_equal(m->h.total_len, psb_sched_view_size(NS));
	assert_int_equal(m->h.seg_len, psb_sched_view_size(NS));
	/* one segment a receiver's frame checks accept */
	assert_int_equal(psb_hdr_check_segment(&m->h, m->h.seg_len), 0);

	assert_int_equal(psb_sched_view_decode(&v, m->val, m->h.seg_len), 0);
	assert_int_equal(v.num_servers, NS);
	assert_int_equal(v.num_workers, NW);
	for (i = 0; i < NS; i++) {
		assert_int_equal(v.servers[i].ip, sa[i].ip);
		assert_int_equal(v.servers[i].port, sa[i].port);
		psb_sched_key_range((uint16_t)i, NS, &b, &e);
		assert_true(v.servers[i].key_begin == b);
		assert_true(v.servers[i].key_end == e);
	}
	/* contiguous, covering the whole key space */
	assert_true(v.servers[0].key_begin == 0);
	assert_true(v.servers[0].key_end == v.servers[1].key_begin);
	assert_true(v.servers[1].key_end == UINT64_MAX);
	assert_true(v.servers[0].key_end == UINT64_MAX / 2);
}

struct evlog {
	struct psb_sched_event ev[16];
	unsigned int n;
};

static void
on_event(void *ctx, const struct psb_sched_event *ev)
{
	struct evlog *l = ctx;

	assert_true(l->n < 16);
	l->ev[l->n++] = *ev;
}

/* The scheduler tells of every registration, of readiness and of refusals, in order. */
static void
test_events(void **state)
{
	struct evlog l = { .n = 0 };
	struct psb_sched_cfg cfg = { .num_workers = NW, .num_servers = NS, .on_event = on_event,
				     .ctx = &l };
	struct psb_sched *s = psb_sched_create(&cfg);
	struct tf_cap *c = calloc(1, sizeof(*c));
	struct psb_addr w1 = waddr(1), s1 = saddr(1), w3 = waddr(3);

	(void)state;
	assert_non_null(s);
	assert_non_null(c);
	register_all(s, c);
	/* w1, s1, w0, (w1 again: nothing), s0, w2, then ready */
	assert_int_equal(l.n, 6);
	assert_int_equal(l.ev[0].kind, PSB_SCHED_EV_REGISTERED);
	assert_true(addr_eq(&l.ev[0].addr, &w1));
	assert_int_equal(l.ev[0].server, 0);
	assert_int_equal(l.ev[0].rank, 0);
	assert_int_equal(l.ev[0].nworkers, 1);
	assert_int_equal(l.ev[0].nservers, 0);
	assert_int_equal(l.ev[1].kind, PSB_SCHED_EV_REGISTERED);
	assert_true(addr_eq(&l.ev[1].addr, &s1));
	assert_int_equal(l.ev[1].server, 1);
	assert_int_equal(l.ev[1].rank, 0);
	assert_int_equal(l.ev[4].rank, 2);
	assert_int_equal(l.ev[4].nworkers, NW);
	assert_int_equal(l.ev[4].nservers, NS);
	assert_int_equal(l.ev[5].kind, PSB_SCHED_EV_READY);
	/* a re-REGISTER is no news; a worker too many is refused, and said so */
	assert_int_equal(reg(s, c, &w1, PSB_F_WORKER, 9), 0);
	assert_int_equal(l.n, 6);
	assert_int_equal(reg(s, c, &w3, PSB_F_WORKER, 10), 0);
	assert_int_equal(l.n, 7);
	assert_int_equal(l.ev[6].kind, PSB_SCHED_EV_REFUSED);
	assert_true(addr_eq(&l.ev[6].addr, &w3));
	tf_cap_clear(c);
	free(c);
	psb_sched_free(s);
}

static void
test_register(void **state)
{
	struct psb_sched *s = sched_new();
	struct tf_cap *c = calloc(1, sizeof(*c));
	const struct psb_sched_stats *st = psb_sched_stats(s);
	struct psb_addr nodes[5] = { waddr(0), waddr(1), waddr(2), saddr(0), saddr(1) };
	/* expected role and rank of nodes[] */
	static const int is_server[5] = { 0, 0, 0, 1, 1 };
	static const uint16_t rank[5] = { 1, 0, 2, 1, 0 };
	int seen[5] = { 0 };
	unsigned int i, j;

	(void)state;
	assert_non_null(c);
	register_all(s, c);
	assert_int_equal(c->n, 5);
	assert_int_equal(st->registered, 5);
	assert_int_equal(st->reregistered, 1);
	assert_int_equal(st->rejected, 0);

	/* every node got exactly one ack, at its own address, with its rank */
	for (i = 0; i < c->n; i++) {
		for (j = 0; j < 5; j++)
			if (addr_eq(&c->m[i].to, &nodes[j]))
				break;
		assert_true(j < 5);
		seen[j]++;
		check_ack(&c->m[i], is_server[j], rank[j], 0);
		assert_memory_equal(c->m[i].to.mac, nodes[j].mac, 6);
	}
	for (j = 0; j < 5; j++)
		assert_int_equal(seen[j], 1);

	/*
	 * a re-REGISTER after ready (lost ack, or the node restarted) is answered again, same
	 * rank, echoing req_id, with REJOIN (check_ack: req_id 77 and on)
	 */
	tf_cap_clear(c);
	assert_int_equal(reg(s, c, &nodes[2], PSB_F_WORKER, 77), 0);
	assert_int_equal(reg(s, c, &nodes[4], PSB_F_SERVER, 78), 0);
	assert_int_equal(c->n, 2);
	assert_true(addr_eq(&c->m[0].to, &nodes[2]));
	check_ack(&c->m[0], 0, 2, 77);
	assert_true(addr_eq(&c->m[1].to, &nodes[4]));
	check_ack(&c->m[1], 1, 0, 78);
	assert_int_equal(st->reregistered, 3);
	assert_int_equal(st->registered, 5);

	/* a 4th worker, a 3rd server and a node of no role are rejected */
	tf_cap_clear(c);
	{
		struct psb_addr w3 = waddr(3), s2 = saddr(2), x = waddr(9);

		assert_int_equal(reg(s, c, &w3, PSB_F_WORKER, 1), 0);
		assert_int_equal(reg(s, c, &s2, PSB_F_SERVER, 1), 0);
		assert_int_equal(reg(s, c, &x, 0, 1), 0);
	}
	assert_int_equal(c->n, 0);
	assert_int_equal(st->rejected, 3);
	assert_int_equal(st->registered, 5);

	/* neither REGISTER nor BARRIER: -EINVAL */
	{
		struct psb_hdr h;

		psb_hdr_init(&h, PSB_MSG_PUSH);
		assert_int_equal(psb_sched_handle(s, &h, &nodes[0], tf_cap_emit_seg, c), -EINVAL);
		psb_hdr_init(&h, PSB_MSG_REGISTER_ACK);
		assert_int_equal(psb_sched_handle(s, &h, &nodes[0], tf_cap_emit_seg, c), -EINVAL);
	}
	assert_int_equal(c->n, 0);
	tf_cap_clear(c);
	free(c);
	psb_sched_free(s);
}

static void
test_barrier(void **state)
{
	struct psb_sched *s = sched_new();
	struct tf_cap *c = calloc(1, sizeof(*c));
	const struct psb_sched_stats *st = psb_sched_stats(s);
	struct psb_addr w[NW] = { waddr(0), waddr(1), waddr(2) };
	struct psb_addr s0 = saddr(0), stranger = waddr(7);
	int seen[NW] = { 0 };
	unsigned int i, j;
	uint64_t rej;

	(void)state;
	assert_non_null(c);

	/* before everyone registered, a barrier is refused */
	assert_int_equal(reg(s, c, &w[0], PSB_F_WORKER, 1), 0);
	assert_int_equal(barrier(s, c, &w[0], PSB_GROUP_WORKERS, 0, 1), 0);
	assert_int_equal(st->rejected, 1);
	tf_cap_clear(c);
	{
		struct psb_addr w1 = waddr(1), w2 = waddr(2), s1 = saddr(1);

		assert_int_equal(reg(s, c, &s0, PSB_F_SERVER, 1), 0);
		assert_int_equal(reg(s, c, &w1, PSB_F_WORKER, 1), 0);
		assert_int_equal(reg(s, c, &s1, PSB_F_SERVER, 1), 0);
		assert_int_equal(reg(s, c, &w2, PSB_F_WORKER, 1), 0);
	}
	assert_int_equal(psb_sched_ready(s), 1);
	tf_cap_clear(c);
	rej = st->rejected;

	/* w2 and w0 enter (w0 twice: counted once); nothing released yet */
	assert_int_equal(barrier(s, c, &w[2], PSB_GROUP_WORKERS, 0, 10), 0);
	assert_int_equal(barrier(s, c, &w[0], PSB_GROUP_WORKERS, 0, 11), 0);
	assert_int_equal(barrier(s, c, &w[0], PSB_GROUP_WORKERS, 0, 11), 0);
	assert_int_equal(c->n, 0);
	/* a server is not in the worker group, and an unknown node is nobody */
	assert_int_equal(barrier(s, c, &s0, PSB_GROUP_WORKERS, 0, 12), 0);
	assert_int_equal(barrier(s, c, &stranger, PSB_GROUP_WORKERS, 0, 13), 0);
	assert_int_equal(c->n, 0);
	assert_int_equal(st->rejected, rej + 2);
	assert_int_equal(st->barriers_released, 0);

	/* the third worker releases it: one ack to each worker */
	assert_int_equal(barrier(s, c, &w[1], PSB_GROUP_WORKERS, 0, 14), 0);
	assert_int_equal(c->n, NW);
	assert_int_equal(st->barriers_released, 1);
	for (i = 0; i < c->n; i++) {
		assert_int_equal(c->m[i].h.type, PSB_MSG_BARRIER_ACK);
		assert_int_equal(c->m[i].h.aux, PSB_GROUP_WORKERS);
		assert_int_equal(c->m[i].h.round, 0);
		assert_int_equal(c->m[i].h.total_len, 0);
		for (j = 0; j < NW; j++)
			if (addr_eq(&c->m[i].to, &w[j]))
				break;
		assert_true(j < NW);
		seen[j]++;
	}
	for (j = 0; j < NW; j++)
		assert_int_equal(seen[j], 1);

	/* w0 lost its ack and asks again: only w0 is answered */
	tf_cap_clear(c);
	assert_int_equal(barrier(s, c, &w[0], PSB_GROUP_WORKERS, 0, 15), 0);
	assert_int_equal(c->n, 1);
	assert_true(addr_eq(&c->m[0].to, &w[0]));
	assert_int_equal(c->m[0].h.type, PSB_MSG_BARRIER_ACK);
	assert_int_equal(c->m[0].h.round, 0);
	assert_int_equal(c->m[0].h.req_id, 15);
	assert_int_equal(st->barriers_released, 1);

	/* the next barrier (seq 1) gathers afresh */
	tf_cap_clear(c);
	assert_int_equal(barrier(s, c, &w[0], PSB_GROUP_WORKERS, 1, 20), 0);
	assert_int_equal(barrier(s, c, &w[1], PSB_GROUP_WORKERS, 1, 21), 0);
	/* a late repeat of seq 0 from w2 is re-acked and does not count for seq 1 */
	assert_int_equal(barrier(s, c, &w[2], PSB_GROUP_WORKERS, 0, 22), 0);
	assert_int_equal(c->n, 1);
	assert_int_equal(c->m[0].h.round, 0);
	assert_true(addr_eq(&c->m[0].to, &w[2]));
	assert_int_equal(barrier(s, c, &w[2], PSB_GROUP_WORKERS, 1, 23), 0);
	assert_int_equal(c->n, 1 + NW);
	for (i = 1; i < c->n; i++) {
		assert_int_equal(c->m[i].h.type, PSB_MSG_BARRIER_ACK);
		assert_int_equal(c->m[i].h.round, 1);
	}
	assert_int_equal(st->barriers_released, 2);

	/* the server group is separate: both servers needed */
	tf_cap_clear(c);
	{
		struct psb_addr s1 = saddr(1);

		assert_int_equal(barrier(s, c, &s1, PSB_GROUP_SERVERS, 0, 30), 0);
		assert_int_equal(c->n, 0);
		assert_int_equal(barrier(s, c, &s0, PSB_GROUP_SERVERS, 0, 31), 0);
		assert_int_equal(c->n, NS);
		for (i = 0; i < c->n; i++) {
			assert_int_equal(c->m[i].h.aux, PSB_GROUP_SERVERS);
			assert_true(addr_eq(&c->m[i].to, &s0) || addr_eq(&c->m[i].to, &s1));
		}
		assert_false(addr_eq(&c->m[0].to, &c->m[1].to));
	}

	/* servers + workers: all five */
	tf_cap_clear(c);
	for (i = 0; i < NW; i++)
		assert_int_equal(barrier(s, c, &w[i], PSB_GROUP_SERVERS | PSB_GROUP_WORKERS, 0,
			40), 0);
	assert_int_equal(barrier(s, c, &s0, PSB_GROUP_SERVERS | PSB_GROUP_WORKERS, 0, 41), 0);
	assert_int_equal(c->n, 0);
	{
		struct psb_addr s1 = saddr(1);

		assert_int_equal(barrier(s, c, &s1, PSB_GROUP_SERVERS | PSB_GROUP_WORKERS, 0, 42),
			0);
	}
	assert_int_equal(c->n, NW + NS);
	assert_int_equal(st->barriers_released, 4);
	tf_cap_clear(c);
	free(c);
	psb_sched_free(s);
}

static int
fin(struct psb_sched *s, struct tf_cap *c, const struct psb_addr *from, uint8_t type)
{
	struct psb_hdr h;

	psb_hdr_init(&h, type);
	return psb_sched_handle(s, &h, from, tf_cap_emit_seg, c);
}

/*
 * The end of a job: each worker's FINALIZE is acknowledged (again when repeated); the last
 * one sends FINALIZE to every server, again to those that did not acknowledge it; nodes
 * that are not the job's are refused. With keep_serving the servers are left alone.
 */
static void
test_finalize(void **state)
{
	struct psb_sched_cfg cfg = { .num_workers = NW, .num_servers = NS };
	struct psb_addr w0 = waddr(0), w1 = waddr(1), w2 = waddr(2), s0 = saddr(0), s1 = saddr(1);
	struct psb_addr stranger = waddr(9);
	const struct psb_sched_stats *st;
	struct tf_cap c = { .n = 0 };
	struct psb_sched *s;
	unsigned int i;

	(void)state;
	for (int keep = 0; keep < 2; keep++) {
		cfg.keep_serving = keep;
		s = psb_sched_create(&cfg);
		assert_non_null(s);
		st = psb_sched_stats(s);
		/* before the job formed, and from a stranger: refused, unanswered */
		assert_int_equal(fin(s, &c, &w0, PSB_MSG_FINALIZE), 0);
		register_all(s, &c);
		tf_cap_clear(&c);
		assert_int_equal(fin(s, &c, &stranger, PSB_MSG_FINALIZE), 0);
		assert_int_equal(fin(s, &c, &s0, PSB_MSG_FINALIZE), 0);	/* a server is no worker */
		assert_int_equal(c.n, 0);
		assert_int_equal(st->rejected, 3);
		/* two workers finish, one of them twice: acked each time, counted once */
		assert_int_equal(fin(s, &c, &w1, PSB_MSG_FINALIZE), 0);
		assert_int_equal(fin(s, &c, &w1, PSB_MSG_FINALIZE), 0);
		assert_int_equal(fin(s, &c, &w0, PSB_MSG_FINALIZE), 0);
		assert_int_equal(c.n, 3);
		for (i = 0; i < 3; i++)
			assert_int_equal(c.m[i].h.type, PSB_MSG_FINALIZE_ACK);
		assert_true(addr_eq(&c.m[0].to, &w1) && addr_eq(&c.m[2].to, &w0));
		assert_int_equal(st->workers_finished, 2);
		assert_int_equal(psb_sched_finished(s), 0);
		assert_int_equal(psb_sched_end_servers(s, tf_cap_emit_seg, &c), 0);
		/* a server's ack before the end: refused */
		assert_int_equal(fin(s, &c, &s0, PSB_MSG_FINALIZE_ACK), 0);
		assert_int_equal(st->rejected, 4);
		/* the last worker: acked, and the servers told (unless they keep serving) */
		tf_cap_clear(&c);
		assert_int_equal(fin(s, &c, &w2, PSB_MSG_FINALIZE), 0);
		assert_int_equal(psb_sched_finished(s), 1);
		assert_int_equal(c.n, keep ? 1 : 1 + NS);
		assert_int_equal(c.m[0].h.type, PSB_MSG_FINALIZE_ACK);
		if (keep) {
			assert_int_equal(psb_sched_end_servers(s, tf_cap_emit_seg, &c), 0);
			psb_sched_free(s);
			tf_cap_clear(&c);
			continue;
		}
		for (i = 1; i < c.n; i++)
			assert_int_equal(c.m[i].h.type, PSB_MSG_FINALIZE);
		assert_true(addr_eq(&c.m[1].to, &s1) || addr_eq(&c.m[2].to, &s1));
		/* one server acks; the other is told again, until it does too */
		assert_int_equal(fin(s, &c, &s1, PSB_MSG_FINALIZE_ACK), 0);
		assert_int_equal(fin(s, &c, &s1, PSB_MSG_FINALIZE_ACK), 0);
		assert_int_equal(st->servers_ended, 1);
		tf_cap_clear(&c);
		assert_int_equal(psb_sched_end_servers(s, tf_cap_emit_seg, &c), 1);
		assert_int_equal(c.n, 1);
		assert_true(addr_eq(&c.m[0].to, &s0));
		assert_int_equal(fin(s, &c, &s0, PSB_MSG_FINALIZE_ACK), 0);
		assert_int_equal(psb_sched_end_servers(s, tf_cap_emit_seg, &c), 0);
		assert_int_equal(st->servers_ended, 2);
		psb_sched_free(s);
		tf_cap_clear(&c);
	}
}

static int
beat(struct psb_sched *s, struct tf_cap *c, const struct psb_addr *from)
{
	struct psb_hdr h;

	psb_hdr_init(&h, PSB_MSG_HEARTBEAT);
	h.aux = 500;
	return psb_sched_handle(s, &h, from, tf_cap_emit_seg, c);
}

/* The lost servers a HEARTBEAT_ACK carries. */
static int
ack_lost(const struct tf_cap_msg *m, struct psb_sched_lost *l, unsigned int n)
{
	assert_int_equal(m->h.type, PSB_MSG_HEARTBEAT_ACK);
	return psb_sched_lost_decode(l, n, m->val, m->h.seg_len);
}

#define MS	1000000ull

/*
 * Liveness: nodes that said they send HEARTBEATs and then go silent for dead_after_ns are
 * dead, a silent node that never said so is not; a dead worker that speaks again is back;
 * a dead server stays lost; a server registering again with another epoch restarted. Every
 * HEARTBEAT_ACK names the lost servers. A scheduler that did not run blames no one. Once
 * every worker finished or is dead, the job is over, and dead servers are not waited for.
 */
static void
test_liveness(void **state)
{
	struct evlog log = { .n = 0 };
	struct psb_sched_cfg cfg = { .num_workers = NW, .num_servers = NS, .on_event = on_event,
		.ctx = &log, .dead_after_ns = 3000 * MS };
	struct psb_addr w0 = waddr(0), w1 = waddr(1), w2 = waddr(2), s0 = saddr(0), s1 = saddr(1);
	struct psb_addr stranger = waddr(9);
	struct psb_sched_lost l[4];
	const struct psb_sched_stats *st;
	struct tf_cap c = { .n = 0 };
	struct psb_sched *s = psb_sched_create(&cfg);
	uint64_t t = 1000 * MS;

	(void)state;
	assert_non_null(s);
	st = psb_sched_stats(s);
	assert_int_equal(psb_sched_tick(s, t), 0);
	/* s1 (rank 0) and w0, w1 watched from REGISTER; s0 (rank 1) from its first HEARTBEAT */
	assert_int_equal(reg(s, &c, &s1, PSB_F_SERVER | PSB_F_BEATS, 0xaaaa), 0);
	assert_int_equal(reg(s, &c, &s0, PSB_F_SERVER, 0xbbbb), 0);
	assert_int_equal(reg(s, &c, &w0, PSB_F_WORKER | PSB_F_BEATS, 0), 0);
	assert_int_equal(reg(s, &c, &w1, PSB_F_WORKER | PSB_F_BEATS, 0), 0);
	assert_int_equal(reg(s, &c, &w2, PSB_F_WORKER, 0), 0);	/* never watched */
	assert_int_equal(psb_sched_ready(s), 1);
	tf_cap_clear(&c);
	/* a stranger's HEARTBEAT: refused, unanswered */
	assert_int_equal(beat(s, &c, &stranger), 0);
	assert_int_equal(c.n, 0);
	assert_int_equal(st->rejected, 1);
	/* every node alive: an ack with no lost server */
	for (t += 500 * MS; t < 4000 * MS; t += 500 * MS) {
		assert_int_equal(psb_sched_tick(s, t), 0);
		tf_cap_clear(&c);
		assert_int_equal(beat(s, &c, &s0), 0);
		assert_int_equal(beat(s, &c, &s1), 0);
		assert_int_equal(beat(s, &c, &w0), 0);
		assert_int_equal(beat(s, &c, &w1), 0);
		assert_int_equal(c.n, 4);
		assert_int_equal(c.m[2].h.aux, 0);
		assert_int_equal(ack_lost(&c.m[2], l, 4), 0);
	}
	assert_int_equal(st->heartbeats, 4 * 5);
	/* s0 (rank 1) and w1 fall silent; w2 (unwatched) always was */
	log.n = 0;
	for (; t < 6600 * MS; t += 200 * MS) {
		psb_sched_tick(s, t);
		beat(s, &c, &s1);
		beat(s, &c, &w0);
		tf_cap_clear(&c);
	}
	assert_int_equal(st->servers_dead, 0);
	assert_int_equal(psb_sched_tick(s, t += 200 * MS), 1);	/* 3.3 s since s0's last */
	assert_int_equal(st->servers_dead, 1);
	assert_int_equal(st->workers_dead, 1);
	assert_int_equal(log.n, 2);
	assert_int_equal(log.ev[0].kind, PSB_SCHED_EV_DEAD);
	assert_true(log.ev[0].server == 1 && log.ev[0].rank == 1 && addr_eq(&log.ev[0].addr, &s0));
	assert_true(log.ev[0].silent_ns > 3000 * MS && log.ev[0].silent_ns < 3400 * MS);
	assert_true(log.ev[1].server == 0 && addr_eq(&log.ev[1].addr, &w1));
	/* every ack names it */
	tf_cap_clear(&c);
	beat(s, &c, &w0);
	assert_int_equal(c.m[0].h.aux, 1);
	assert_int_equal(ack_lost(&c.m[0], l, 4), 1);
	assert_true(l[0].rank == 1 && l[0].why == PSB_SCHED_LOST_DEAD && l[0].addr.ip == s0.ip &&
		    l[0].addr.port == s0.port && l[0].silent_ms >= 3000 && l[0].silent_ms < 3400);
	/* w1 speaks again: back; s0 speaks again: back, but lost for good */
	log.n = 0;
	beat(s, &c, &w1);
	beat(s, &c, &s0);
	assert_int_equal(log.n, 2);
	assert_int_equal(log.ev[0].kind, PSB_SCHED_EV_BACK);
	assert_int_equal(log.ev[1].kind, PSB_SCHED_EV_BACK);
	assert_int_equal(psb_sched_tick(s, t += 200 * MS), 1);
	/* s1 registers again: the same epoch (a lost ack) is no restart, another one is */
	tf_cap_clear(&c);
	assert_int_equal(reg(s, &c, &s1, PSB_F_SERVER | PSB_F_BEATS, 0xaaaa), 0);
	assert_int_equal(st->servers_restarted, 0);
	assert_int_equal(c.m[0].h.type, PSB_MSG_REGISTER_ACK);
	assert_true(c.m[0].h.flags & PSB_F_REJOIN);
	log.n = 0;
	assert_int_equal(reg(s, &c, &s1, PSB_F_SERVER | PSB_F_BEATS, 0xcccc), 0);
	assert_int_equal(st->servers_restarted, 1);
	assert_int_equal(log.n, 1);
	assert_int_equal(log.ev[0].kind, PSB_SCHED_EV_RESTARTED);
	assert_int_equal(psb_sched_tick(s, t += 200 * MS), 2);
	tf_cap_clear(&c);
	beat(s, &c, &w0);
	assert_int_equal(c.m[0].h.aux, 2);
	assert_int_equal(ack_lost(&c.m[0], l, 4), 2);
	assert_true(l[0].rank == 0 && l[0].why == PSB_SCHED_LOST_RESTARTED && l[0].silent_ms == 0);
	assert_true(l[1].rank == 1 && l[1].why == PSB_SCHED_LOST_DEAD);
	assert_int_equal(psb_sched_lost(s, l, 1), 2);	/* the count even when out is short */
	/* the scheduler itself did not run for 10 s: nobody is blamed for it */
	log.n = 0;
	t += 10000 * MS;
	psb_sched_tick(s, t);
	assert_int_equal(log.n, 0);
	/* w0 finishes, w1 goes silent again: the job is over without it; s0 (dead) not told */
	tf_cap_clear(&c);
	assert_int_equal(fin(s, &c, &w0, PSB_MSG_FINALIZE), 0);
	assert_int_equal(fin(s, &c, &w2, PSB_MSG_FINALIZE), 0);
	assert_int_equal(psb_sched_finished(s), 0);
	for (t += 200 * MS; !psb_sched_finished(s) && t < 30000 * MS; t += 200 * MS) {
		psb_sched_tick(s, t);
		beat(s, &c, &s1);
		beat(s, &c, &s0);
		tf_cap_clear(&c);
	}
	assert_int_equal(psb_sched_finished(s), 1);
	assert_int_equal(st->workers_dead, 2);
	/* s0 was heard to the end here, so both are told; then s0 dies and is not waited for */
	assert_int_equal(psb_sched_end_servers(s, tf_cap_emit_seg, &c), 2);
	for (t += 200 * MS; t < 40000 * MS; t += 200 * MS) {
		psb_sched_tick(s, t);
		beat(s, &c, &s1);
		tf_cap_clear(&c);
	}
	assert_int_equal(psb_sched_end_servers(s, tf_cap_emit_seg, &c), 1);
	tf_cap_clear(&c);
	psb_sched_free(s);
}

/* HEARTBEAT_ACK payloads: what encode writes decodes the same; malformed ones are refused. */
static void
test_lost_codec(void **state)
{
	struct psb_sched_lost in[PSB_SCHED_LOST_MAX], out[PSB_SCHED_LOST_MAX];
	uint8_t buf[4 + (PSB_SCHED_LOST_MAX + 1) * PSB_SCHED_LOST_ENTRY];
	unsigned int i;
	size_t len;

	(void)state;
	memset(in, 0, sizeof(in));
	for (i = 0; i < PSB_SCHED_LOST_MAX; i++) {
		in[i].rank = (uint16_t)(i * 3);
		in[i].why = i & 1 ? PSB_SCHED_LOST_DEAD : PSB_SCHED_LOST_RESTARTED;
		in[i].addr.ip = 0xc6120000u + i;
		in[i].addr.port = (uint16_t)(9000 + i);
		in[i].silent_ms = i * 1000;
	}
	assert_int_equal(psb_sched_lost_encode(in, PSB_SCHED_LOST_MAX + 1, buf, sizeof(buf)), 0);
	assert_int_equal(psb_sched_lost_encode(in, 2, buf, 4 + PSB_SCHED_LOST_ENTRY), 0);
	len = psb_sched_lost_encode(in, PSB_SCHED_LOST_MAX, buf, sizeof(buf));
	assert_int_equal(len, 4 + PSB_SCHED_LOST_MAX * PSB_SCHED_LOST_ENTRY);
	assert_int_equal(psb_sched_lost_decode(out, PSB_SCHED_LOST_MAX, buf, len),
		PSB_SCHED_LOST_MAX);
	for (i = 0; i < PSB_SCHED_LOST_MAX; i++) {
		assert_int_equal(out[i].rank, in[i].rank);
		assert_int_equal(out[i].why, in[i].why);
		assert_int_equal(out[i].addr.ip, in[i].addr.ip);
		assert_int_equal(out[i].addr.port, in[i].addr.port);
		assert_int_equal(out[i].silent_ms, in[i].silent_ms);
	}
	/* room for fewer: the first ones */
	assert_int_equal(psb_sched_lost_decode(out, 1, buf, len), 1);
	/* every length cut short, a count beyond the maximum, an unknown reason */
	for (i = 0; i < len; i++)
		assert_int_equal(psb_sched_lost_decode(out, 4, buf, i), -EINVAL);
	buf[0] = 0xff;
	assert_int_equal(psb_sched_lost_decode(out, 4, buf, sizeof(buf)), -EINVAL);
	len = psb_sched_lost_encode(in, 2, buf, sizeof(buf));
	buf[4 + PSB_SCHED_LOST_ENTRY + 2] = 7;
	assert_int_equal(psb_sched_lost_decode(out, 4, buf, len), -EINVAL);
	/* an empty list */
	len = psb_sched_lost_encode(in, 0, buf, sizeof(buf));
	assert_int_equal(psb_sched_lost_decode(out, 4, buf, len), 0);
}

static void
test_key_range(void **state)
{
	uint64_t b, e, prev_end;
	uint16_t n, i;

	(void)state;
	psb_sched_key_range(0, 1, &b, &e);
	assert_true(b == 0 && e == UINT64_MAX);
	for (n = 1; n <= 64; n++) {
		prev_end = 0;
		for (i = 0; i < n; i++) {
			psb_sched_key_range(i, n, &b, &e);
			/* ps-lite: [max / n * i, max / n * (i + 1)), the last to the end */
			assert_true(b == UINT64_MAX / n * i);
			assert_true(b == prev_end);
			assert_true(e > b);
			prev_end = e;
		}
		assert_true(prev_end == UINT64_MAX);
	}
	/* the biggest cluster: still contiguous to the end */
	prev_end = 0;
	for (i = 0; i < PSB_SCHED_MAX_NODES - 1; i++) {
		psb_sched_key_range(i, PSB_SCHED_MAX_NODES - 1, &b, &e);
		assert_true(b == prev_end);
		prev_end = e;
	}
	assert_true(prev_end == UINT64_MAX);
}

static void
test_view_codec(void **state)
{
	struct psb_sched_view *v = calloc(1, sizeof(*v)), *d = calloc(1, sizeof(*d));
	uint8_t *buf = malloc(psb_sched_view_size(PSB_SCHED_MAX_NODES));
	size_t len, cut;
	uint16_t i;

	(void)state;
	assert_non_null(v);
	assert_non_null(d);
	assert_non_null(buf);
	v->num_servers = 5;
	v->num_workers = 300;
	for (i = 0; i < v->num_servers; i++) {
		v->servers[i].ip = 0xc0a80000u | (uint32_t)(i * 0x1111);
		v->servers[i].port = (uint16_t)(0xf000 + i);
		psb_sched_key_range(i, v->num_servers, &v->servers[i].key_begin,
			&v->servers[i].key_end);
	}
	len = psb_sched_view_encode(v, buf, psb_sched_view_size(5));
	assert_int_equal(len, psb_sched_view_size(5));
	assert_int_equal(len, 4 + 5 * 24);
	/* big-endian on the wire */
	assert_int_equal(buf[0], 0);
	assert_int_equal(buf[1], 5);
	assert_int_equal(buf[2], 300 >> 8);
	assert_int_equal(buf[3], 300 & 0xff);
	assert_int_equal(buf[4 + 24 + 4], 0xf0);
	assert_int_equal(buf[4 + 24 + 5], 0x01);

	memset(d, 0xee, sizeof(*d));
	assert_int_equal(psb_sched_view_decode(d, buf, len), 0);
	assert_int_equal(d->num_servers, 5);
	assert_int_equal(d->num_workers, 300);
	for (i = 0; i < 5; i++) {
		assert_int_equal(d->servers[i].ip, v->servers[i].ip);
		assert_int_equal(d->servers[i].port, v->servers[i].port);
		assert_true(d->servers[i].key_begin == v->servers[i].key_begin);
		assert_true(d->servers[i].key_end == v->servers[i].key_end);
	}
	/* nothing beyond num_servers left over from before */
	assert_int_equal(d->servers[5].ip, 0);

	/* too small a buffer: nothing written */
	assert_int_equal(psb_sched_view_encode(v, buf, len - 1), 0);
	/* more servers than a view holds */
	v->num_servers = PSB_SCHED_MAX_NODES + 1;
	assert_int_equal(psb_sched_view_encode(v, buf, psb_sched_view_size(PSB_SCHED_MAX_NODES)),
		0);
	v->num_servers = 5;

	/* every truncation is refused */
	for (cut = 0; cut < len; cut++)
		assert_int_equal(psb_sched_view_decode(d, buf, cut), -EINVAL);
	/* a count beyond the limit is refused even with the bytes there */
	buf[0] = (PSB_SCHED_MAX_NODES + 1) >> 8;
	buf[1] = (PSB_SCHED_MAX_NODES + 1) & 0xff;
	assert_int_equal(psb_sched_view_decode(d, buf, psb_sched_view_size(PSB_SCHED_MAX_NODES)),
		-EINVAL);

	/* the largest view round-trips */
	v->num_servers = PSB_SCHED_MAX_NODES;
	for (i = 0; i < PSB_SCHED_MAX_NODES; i++) {
		v->servers[i].ip = 0x0a000000u + i;
		v->servers[i].port = i;
		psb_sched_key_range(i, PSB_SCHED_MAX_NODES, &v->servers[i].key_begin,
			&v->servers[i].key_end);
	}
	len = psb_sched_view_encode(v, buf, psb_sched_view_size(PSB_SCHED_MAX_NODES));
	assert_int_equal(len, psb_sched_view_size(PSB_SCHED_MAX_NODES));
	assert_int_equal(psb_sched_view_decode(d, buf, len), 0);
	assert_int_equal(d->num_servers, PSB_SCHED_MAX_NODES);
	assert_true(d->servers[PSB_SCHED_MAX_NODES - 1].key_end == UINT64_MAX);
	assert_int_equal(d->servers[PSB_SCHED_MAX_NODES - 1].ip, 0x0a000000u + 255);
	free(buf);
	free(v);
	free(d);
}

static void
test_create_invalid(void **state)
{
	struct psb_sched_cfg cfg = { .num_workers = 0, .num_servers = 1 };

	(void)state;
	assert_null(psb_sched_create(&cfg));
	cfg.num_workers = 1;
	cfg.num_servers = 0;
	assert_null(psb_sched_create(&cfg));
	cfg.num_servers = PSB_SCHED_MAX_NODES;
	assert_null(psb_sched_create(&cfg));
	cfg.num_servers = PSB_SCHED_MAX_NODES - 1;
	psb_sched_free(psb_sched_create(&cfg));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_register),
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_barrier),
		cmocka_unit_test(test_finalize),
		cmocka_unit_test(test_liveness),
		cmocka_unit_test(test_lost_codec),
		cmocka_unit_test(test_key_range),
		cmocka_unit_test(test_view_codec),
		cmocka_unit_test(test_create_invalid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
