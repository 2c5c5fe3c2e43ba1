/* The lcore runtime: role planning, placement, the poll loop, yields, mailboxes. */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_ring.h>

#include "psb_app.h"
#include "psb_guard.h"
#include "psb_cli.h"
#include "psb_lcore.h"
#include "psb_log.h"

static struct rte_ring *
make_ring(const char *name, int idx, unsigned int size, unsigned int flags)
{
	char n[RTE_RING_NAMESIZE];
	struct rte_ring *r;

	snprintf(n, sizeof(n), "psb_%s%d", name, idx);
	r = rte_ring_create(n, size, (int)rte_socket_id(), flags);
	if (r == NULL)
		psb_die("cannot create ring %s: %s", n, rte_strerror(rte_errno));
	return r;
}

/* A route of psb_dispatch: role, its first instance here (NULL: not run), where it claims. */
static void
route_add(struct psb_app *app, const struct psb_role *role, struct psb_role_inst *first)
{
	struct psb_route *rt = &app->routes[app->nroutes++];
	unsigned int i;

	rt->role = role;
	rt->first = first;
	rt->port_lo = rt->port_hi = app->me.port;
	if (role->ports != NULL)
		role->ports(app, &rt->port_lo, &rt->port_hi);
	memset(rt->types, role->types == NULL ? 0xff : 0, sizeof(rt->types));
	for (i = 0; role->types != NULL && i < role->ntypes; i++)
		rt->types[role->types[i] >> 6] |= UINT64_C(1) << (role->types[i] & 63);
	rt->udp = role->udp;
	if (!role->udp || first == NULL)
		return;
	/* where the role runs, the parser hands its ports over whole, and its group */
	if (app->parse.udp_lo == 0 || rt->port_lo < app->parse.udp_lo)
		app->parse.udp_lo = rt->port_lo;
	if (rt->port_hi > app->parse.udp_hi)
		app->parse.udp_hi = rt->port_hi;
	if (role->group != NULL && app->parse.group == 0)
		app->parse.group = role->group(app);
	/* one range for them all: it must leave psb's own ports to psb's messages */
	if (app->me.port >= app->parse.udp_lo && app->me.port <= app->parse.udp_hi)
		psb_die("the UDP ports %u-%u of the %s role hold the data port %u: give the "
			"roles ports apart from it", app->parse.udp_lo, app->parse.udp_hi,
			role->name, app->me.port);
}

/*
 * The roles this process runs: every role of psb_roles[] as many times as its count()
 * says, in table order, each with its input ring. Every role that claims traffic becomes
 * one of psb_dispatch's routes, whether this node runs it or not.
 */
int
psb_lcore_plan(struct psb_app *app)
{
	const struct psb_role *const *rp;
	unsigned int n = 0, k;
	struct psb_role_inst *r;

	app->nroles = 0;
	for (rp = psb_roles; *rp != NULL; rp++)
		app->nroles += psb_role_count(*rp, app);
	if (app->nroles > PSB_MAX_ROLES)
		psb_die("%u roles planned, at most %d", app->nroles, PSB_MAX_ROLES);
	app->roles = rte_zmalloc("psb_roles", app->nroles * sizeof(*app->roles), RTE_CACHE_LINE_SIZE);
	if (app->roles == NULL)
		return -ENOMEM;
	r = app->roles;
	app->nroutes = 0;
	for (rp = psb_roles; *rp != NULL; rp++) {
		unsigned int count = psb_role_count(*rp, app);
		unsigned int ring = psb_role_ring(*rp, app);

		if ((*rp)->claim != NULL) {
			/* one this node does not run still owns what it claims (psb_dispatch) */
			RTE_VERIFY(app->nroutes < PSB_ROLE_KINDS && (count == 0 || ring != 0));
			route_add(app, *rp, count != 0 ? &r[n] : NULL);
		}
		if (count == 0)
			continue;
		for (k = 0; k < count; k++, n++) {
			r[n].role = *rp;
			r[n].idx = (int)k;
			r[n].app = app;
			if (ring != 0)
				r[n].ring = make_ring((*rp)->name, (int)k, ring, RING_F_SC_DEQ);
		}
		if (*rp == &psb_role_tx)
			app->tx_ring = r[n - 1].ring;
		if (*rp == &psb_role_passthrough)
			app->pt_ring = r[n - 1].ring;
	}
	app->host_sched = psb_role_count(&psb_role_scheduler, app) != 0;
	return 0;
}

/* Lcore body: poll the roles placed on this lcore until told to quit. */
struct lcore_plan {
	struct psb_app *app;
	uint64_t pass;
	uint64_t last_yield;		/* TSC */
	uint64_t yields;
	uint64_t yield_cycles;
	unsigned int nroles;
	struct psb_role_inst *roles[PSB_MAX_ROLES];
};

static struct lcore_plan g_plan[RTE_MAX_LCORE];

/*
 * One pass over the roles of an lcore. Reading the TSC costs tens of cycles
 * on virtual machines, so busy/idle cycles are sampled: one pass in
 * CYCLE_SAMPLE is timed per role and counted CYCLE_SAMPLE times.
 */
#define CYCLE_SAMPLE	16

/* A control request waiting in a role's mailbox: carry it out on this lcore. */
static void
role_ctl(struct psb_role_inst *ri)
{
	struct psb_role_mbox *mb = &ri->mbox;
	uint32_t req = __atomic_load_n(&mb->req, __ATOMIC_ACQUIRE);

	if (mb->op == PSB_OP_RESET)
		memset(&ri->cnt, 0, sizeof(ri->cnt));
	mb->rc = ri->role->ctl != NULL ? ri->role->ctl(ri, mb->op, mb->arg) : 0;
	__atomic_store_n(&mb->ack, req, __ATOMIC_RELEASE);
}

static inline void
check_mboxes(struct lcore_plan *lp)
{
	unsigned int i;

	for (i = 0; i < lp->nroles; i++)
		if (unlikely(lp->roles[i]->mbox.req != lp->roles[i]->mbox.ack))
			role_ctl(lp->roles[i]);
}

static inline int
poll_once(struct lcore_plan *lp)
{
	unsigned int i;
	int work = 0;

	check_mboxes(lp);
	if (unlikely(++lp->pass % CYCLE_SAMPLE == 0)) {
		uint64_t t0 = rte_rdtsc(), t1;

		for (i = 0; i < lp->nroles; i++) {
			struct psb_role_inst *ri = lp->roles[i];
			int n = ri->role->poll(ri);

			t1 = rte_rdtsc();
			if (n > 0)
				ri->cnt.busy_cycles += (t1 - t0) * CYCLE_SAMPLE;
			else
				ri->cnt.idle_cycles += (t1 - t0) * CYCLE_SAMPLE;
			ri->cnt.polls++;
			t0 = t1;
			work += n;
		}
		return work;
	}
	for (i = 0; i < lp->nroles; i++) {
		struct psb_role_inst *ri = lp->roles[i];

		work += ri->role->poll(ri);
		ri->cnt.polls++;
	}
	return work;
}

/*
 * A poll-mode lcore never sleeps, so on a CPU it shares (with other lcores, psbctl, a
 * scraper, a shell) a thread that wakes up would wait for the kernel's next tick, up to
 * 4 ms at HZ=250, before it runs. Yielding every --yield lets it run at once; with nobody
 * waiting, sched_yield() returns straight away. The time a yield took beyond that is CPU
 * the lcore gave to others, and it is counted.
 */
static inline void
maybe_yield(struct lcore_plan *lp)
{
	uint64_t t0 = rte_rdtsc(), t1;

	if (lp->app->yield_tsc == 0 || t0 - lp->last_yield < lp->app->yield_tsc)
		return;
	sched_yield();
	t1 = rte_rdtsc();
	lp->last_yield = t1;
	lp->yields++;
	lp->yield_cycles += t1 - t0;
}

void
psb_lcore_idle(const struct psb_app *app)
{
	struct timespec ts = { 0, (long)app->idle_sleep_ns };

	nanosleep(&ts, NULL);
}

static int
lcore_main(void *arg)
{
	struct lcore_plan *lp = arg;
	unsigned int k;
	int work;

	while (!lp->app->stop_lcores) {
		psb_guard_enter();
		for (k = 0, work = 0; k < 64; k++)
			work += poll_once(lp);
		psb_guard_leave();
		/* nothing came in 64 passes: the CPU is the others' for a while (node.idle_sleep) */
		if (work == 0 && lp->app->idle_sleep_ns != 0)
			psb_lcore_idle(lp->app);
		else
			maybe_yield(lp);
	}
	return 0;
}

void
psb_lcores_yielded(uint64_t *yields, uint64_t *cycles)
{
	unsigned int i;

	*yields = 0;
	*cycles = 0;
	for (i = 0; i < RTE_MAX_LCORE; i++) {
		*yields += g_plan[i].yields;
		*cycles += g_plan[i].yield_cycles;
	}
}

void
psb_main_poll_roles(struct psb_app *app)
{
	unsigned int k;

	if (app->nworker_lcores == 0) {
		psb_guard_enter();
		for (k = 0; k < 64; k++)
			poll_once(&g_plan[rte_get_main_lcore()]);
		psb_guard_leave();
	}
}

int
psb_roles_call(struct psb_app *app, const struct psb_role *role, int op, const void *arg)
{
	uint64_t hz = rte_get_tsc_hz(), t0 = rte_get_tsc_cycles();
	uint16_t i, pending;
	int rc = 0;

	for (i = 0; i < app->nroles; i++) {
		struct psb_role_inst *ri = &app->roles[i];

		if (role != NULL && ri->role != role)
			continue;
		ri->mbox.op = op;
		ri->mbox.arg = arg;
		ri->mbox.rc = 0;
		__atomic_store_n(&ri->mbox.req, ri->mbox.req + 1, __ATOMIC_RELEASE);
	}
	do {
		pending = 0;
		for (i = 0; i < app->nroles; i++) {
			struct psb_role_inst *ri = &app->roles[i];

			if (role != NULL && ri->role != role)
				continue;
			if (__atomic_load_n(&ri->mbox.ack, __ATOMIC_ACQUIRE) != ri->mbox.req)
				pending++;
			else if (ri->mbox.rc != 0 && rc == 0)
				rc = ri->mbox.rc;
		}
		if (pending == 0)
			return rc;
		if (app->nworker_lcores == 0)
			check_mboxes(&g_plan[rte_get_main_lcore()]);
		else
			rte_delay_us_sleep(20);
	} while (rte_get_tsc_cycles() - t0 < 2 * hz);
	return -ETIMEDOUT;
}

unsigned int
psb_lcore_place(struct psb_app *app)
{
	unsigned int lcore, n = 0, i;
	static unsigned int workers[RTE_MAX_LCORE];

	RTE_LCORE_FOREACH_WORKER(lcore)
		workers[n++] = lcore;
	for (i = 0; i < app->nroles; i++) {
		unsigned int lc = n == 0 ? rte_get_main_lcore() : workers[i % n];
		struct lcore_plan *lp = &g_plan[lc];

		lp->app = app;
		app->roles[i].lcore = lc;
		lp->roles[lp->nroles++] = &app->roles[i];
	}
	g_plan[rte_get_main_lcore()].app = app;
	app->nworker_lcores = n;
	return n;
}

void
psb_lcore_launch(struct psb_app *app)
{
	unsigned int lcore;

	RTE_SET_USED(app);
	RTE_LCORE_FOREACH_WORKER(lcore)
		if (g_plan[lcore].nroles != 0)
			rte_eal_remote_launch(lcore_main, &g_plan[lcore], lcore);
}

int
psb_lcore_run_main(struct psb_app *app, uint64_t lim)
{
	struct lcore_plan *lp = &g_plan[rte_get_main_lcore()];
	uint64_t t0 = rte_rdtsc();
	unsigned int k;
	int work = 0;

	psb_guard_enter();
	do {
		int w = 0;

		psb_guard_quiescent();

		for (k = 0; k < 64; k++)
			w += poll_once(lp);
		work += w;
		if (w == 0 && app->idle_sleep_ns != 0)
			break;		/* idle: the caller sleeps */
	} while (rte_rdtsc() - t0 < lim && !app->quit);
	psb_guard_leave();
	maybe_yield(lp);
	return work;
}

void
psb_app_fail(struct psb_app *app, const char *fmt, ...)
{
	va_list ap;

	if (__atomic_exchange_n(&app->failing, 1, __ATOMIC_ACQ_REL) != 0)
		return;		/* the first reason is the one that counts */
	va_start(ap, fmt);
	vsnprintf(app->fail_reason, sizeof(app->fail_reason), fmt, ap);
	va_end(ap);
	PSB_ERR(main, "%s", app->fail_reason);
	__atomic_store_n(&app->quit, 1, __ATOMIC_RELEASE);
}
