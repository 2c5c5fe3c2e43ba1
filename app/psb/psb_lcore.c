/* The lcore runtime: role planning, placement, the poll loop, yields, sleeps, mailboxes. */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/eventfd.h>
#include <sys/prctl.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_ring.h>

#include "psb_afp.h"
#include "psb_app.h"
#include "psb_guard.h"
#include "psb_cli.h"
#include "psb_idle.h"
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

/* The descriptors an lcore may wait on: its eventfd, then its ports' queues. */
#define LCORE_WAIT_FDS	(1 + PSB_MAX_PORTS * PSB_AFP_MAX_SOCKS)

/* Lcore body: poll the roles placed on this lcore until told to quit. */
struct lcore_plan {
	struct psb_app *app;
	uint64_t pass;
	uint64_t last_yield;		/* TSC */
	uint64_t yields;
	uint64_t yield_cycles;
	unsigned int nroles;
	struct psb_role_inst *roles[PSB_MAX_ROLES];
	/* Idle (app->idle_on): the back-off, what it cost, what it waits on. */
	struct psb_idle idle;
	struct psb_idle_stats ist;
	int evfd;			/* other lcores kick it awake (-1: none) */
	unsigned int nfd;		/* pfd[0] the eventfd, then the ports' descriptors */
	int woke_traffic;		/* the last sleep ended on a port's descriptor */
	int xdp;			/* the AF_XDP sockets are among its descriptors */
	int deaf;			/* ... and the round after found nothing: wait on the ports
					 * no more until work comes (a port not polled, paused,
					 * stays readable) */
	volatile int sleeping;
	volatile int kicked;
	struct pollfd pfd[LCORE_WAIT_FDS];
};

static struct lcore_plan g_plan[RTE_MAX_LCORE];
/* Lcores asleep now: an lcore that handed work on looks for one to kick only when some are. */
static volatile unsigned int g_nsleeping;
static unsigned int g_lcores[RTE_MAX_LCORE], g_nlcores;	/* lcores with roles */

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

/* Work waits for lp from another lcore: a message in a role's ring, a control request. */
static int
lcore_pending(const struct lcore_plan *lp)
{
	unsigned int i;

	for (i = 0; i < lp->nroles; i++) {
		const struct psb_role_inst *ri = lp->roles[i];

		if (ri->mbox.req != ri->mbox.ack ||
		    (ri->ring != NULL && rte_ring_count(ri->ring) != 0))
			return 1;
	}
	return 0;
}

static void
lcore_kick(struct lcore_plan *lp)
{
	uint64_t one = 1;

	/* one write per sleep: later producers find it kicked */
	if (lp->evfd >= 0 && __atomic_exchange_n(&lp->kicked, 1, __ATOMIC_ACQ_REL) == 0)
		(void)!write(lp->evfd, &one, sizeof(one));
}

/*
 * An lcore may have handed work to a sleeping one (rings join roles of the process): wake
 * those that have something waiting. Paired with lcore_sleep, which counts itself asleep
 * before it looks at its rings a last time (a full barrier each side), so a message is
 * either seen before the sleep or kicked.
 */
static void
kick_sleepers(const struct lcore_plan *self)
{
	unsigned int i;

	rte_atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&g_nsleeping, __ATOMIC_ACQUIRE) == 0)
		return;
	for (i = 0; i < g_nlcores; i++) {
		struct lcore_plan *lp = &g_plan[g_lcores[i]];

		if (lp != self && lp->sleeping && lcore_pending(lp))
			lcore_kick(lp);
	}
}

/*
 * Sleep ns at most: on the lcore's descriptors when it has some (its ports' queues wake it
 * on traffic, its eventfd when another lcore hands it work), else a plain nanosleep.
 */
static void
lcore_sleep(struct lcore_plan *lp, uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };
	enum psb_idle_wake how = PSB_IDLE_WOKE_TIMEOUT;
	uint64_t t0, t1, v;
	unsigned int i;
	int rc;

	__atomic_store_n(&lp->kicked, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&lp->sleeping, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&g_nsleeping, 1, __ATOMIC_SEQ_CST);
	if (lcore_pending(lp)) {
		__atomic_store_n(&lp->sleeping, 0, __ATOMIC_RELAXED);
		__atomic_fetch_sub(&g_nsleeping, 1, __ATOMIC_RELEASE);
		return;
	}
	t0 = rte_rdtsc();
	if (lp->nfd == 0) {
		nanosleep(&ts, NULL);
	} else {
		rc = ppoll(lp->pfd, lp->deaf ? 1 : lp->nfd, &ts, NULL);
		if (rc > 0)
			how = lp->pfd[0].revents != 0 ? PSB_IDLE_WOKE_KICK : PSB_IDLE_WOKE_TRAFFIC;
	}
	t1 = rte_rdtsc();
	__atomic_store_n(&lp->sleeping, 0, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&g_nsleeping, 1, __ATOMIC_RELEASE);
	if (how == PSB_IDLE_WOKE_KICK)
		(void)!read(lp->evfd, &v, sizeof(v));
	lp->woke_traffic = how == PSB_IDLE_WOKE_TRAFFIC;
	for (i = 0; i < lp->nroles; i++)
		lp->roles[i]->slept = 1;
	psb_idle_count(&lp->ist, ns, (uint64_t)((double)(t1 - t0) * lp->app->ns_per_tsc), how);
}

/* A round of passes found work items (0: none): back off as lib/idle says (app->idle_on). */
static void
lcore_idle(struct lcore_plan *lp, int work)
{
	unsigned int i;
	uint64_t ns;

	/*
	 * Not only after work: a role may hand something on in a pass it reports as idle (a
	 * worker's paced request is sent while it counts answers).
	 */
	if (g_nlcores > 1)
		kick_sleepers(lp);
	if (work > 0)
		lp->deaf = 0;
	else if (lp->woke_traffic)
		lp->deaf = 1;
	lp->woke_traffic = 0;
	switch (psb_idle_step(&lp->idle, work, &ns)) {
	case PSB_IDLE_RUN:
		maybe_yield(lp);
		break;
	case PSB_IDLE_PAUSE:
		for (i = 0; i < 32; i++)
			rte_pause();
		break;
	case PSB_IDLE_YIELD:
		sched_yield();
		break;
	case PSB_IDLE_WAIT:
		lcore_sleep(lp, ns);
		break;
	}
}

static int
lcore_main(void *arg)
{
	struct lcore_plan *lp = arg;
	unsigned int k;
	int work;

	if (lp->app->idle_mode != PSB_IDLE_POLL)
		prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);	/* short sleeps stay short */
	while (!lp->app->stop_lcores) {
		psb_guard_enter();
		for (k = 0, work = 0; k < 64; k++)
			work += poll_once(lp);
		psb_guard_leave();
		if (lp->app->idle_on)
			lcore_idle(lp, work);
		else
			maybe_yield(lp);
	}
	return 0;
}

void
psb_lcore_main_idle(struct psb_app *app, int work)
{
	if (app->idle_on)
		lcore_idle(&g_plan[rte_get_main_lcore()], work);
}

void
psb_lcores_idle_stats(struct psb_idle_stats *st)
{
	unsigned int i;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < RTE_MAX_LCORE; i++)
		psb_idle_stats_add(st, &g_plan[i].ist);
}

/* The queues of port i an idle lcore can wait on, into lp; the kind of port they are. */
static const char *
port_fds(struct psb_app *app, unsigned int i, struct lcore_plan *lp)
{
	const struct psb_port_spec *s = &app->specs[i];
	int fd[PSB_AFP_MAX_SOCKS], n = 0, k;

	if (s->kind == PSB_PORT_AF_PACKET) {
		n = app->afp[i].nfd;
		memcpy(fd, app->afp[i].fd, sizeof(fd));
	} else if (s->kind == PSB_PORT_TAP) {
		n = psb_tap_fds(s->ifname, fd, PSB_AFP_MAX_SOCKS);
	} else if (s->kind == PSB_PORT_AF_XDP) {
		/* every af_xdp port's at once (a socket does not tell its interface): once */
		if (lp->xdp)
			return "AF_XDP socket";
		lp->xdp = 1;
		n = psb_xdp_fds(fd, PSB_AFP_MAX_SOCKS);
	}
	for (k = 0; k < n && lp->nfd < LCORE_WAIT_FDS; k++) {
		lp->pfd[lp->nfd].fd = fd[k];
		lp->pfd[lp->nfd++].events = POLLIN;
	}
	if (n <= 0)
		return NULL;
	return s->kind == PSB_PORT_AF_PACKET ? "af_packet socket" :
		s->kind == PSB_PORT_TAP ? "tap queue" : "AF_XDP socket";
}

/*
 * Ready each lcore with roles to back off: its policy (node.idle_sleep the cap), its
 * eventfd, and the queues of the ports its roles read (rx: psb's ports; passthrough: the
 * exception port). What it waits on, in words, into what.
 */
static void
idle_setup(struct psb_app *app, char *what, size_t len)
{
	struct psb_idle_policy pol;
	unsigned int l, i, p, nofd = 0, nslot = 0, nwait = 0;
	const char *kinds[2] = { NULL, NULL };

	psb_idle_policy_default(&pol, app->idle_sleep_ns);
	for (l = 0; l < RTE_MAX_LCORE; l++) {
		struct lcore_plan *lp = &g_plan[l];
		int rx = 0, pt = 0;

		lp->evfd = -1;
		if (lp->nroles == 0)
			continue;
		psb_idle_init(&lp->idle, &pol);
		lp->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		lp->pfd[0].fd = lp->evfd;
		lp->pfd[0].events = POLLIN;
		lp->nfd = 1;
		for (i = 0; i < lp->nroles; i++) {
			rx |= lp->roles[i]->role == &psb_role_rx;
			pt |= lp->roles[i]->role == &psb_role_passthrough;
		}
		for (p = 0; p < app->nports; p++) {
			const char *k;

			if (psb_port_is_exc(app, (uint16_t)p) ? !pt : !rx)
				continue;
			k = port_fds(app, p, lp);
			if (k == NULL && app->specs[p].shm_slot != 0)
				nslot++;
			else if (k == NULL)
				nofd++;
			else if (kinds[0] == NULL || strcmp(kinds[0], k) == 0)
				kinds[0] = k;
			else
				kinds[1] = k;
		}
		nwait += lp->nfd > 1;
	}
	if (nwait == 0)
		snprintf(what, len, "no port to wait on: sleeps end by time");
	else
		snprintf(what, len, "wakes on %s%s%s descriptors%s%s", kinds[0],
			kinds[1] != NULL ? " and " : "", kinds[1] != NULL ? kinds[1] : "",
			nofd != 0 ? ", other ports' frames by time" : "",
			nslot != 0 ? ", shared-memory clients' frames by time" : "");
}

void
psb_lcore_idle_start(struct psb_app *app)
{
	char why[160], what[160], cap[32];
	unsigned int i, c;
	rte_cpuset_t cpus, lc;

	/* the lcores that poll (not a main lcore that only serves the control plane) */
	CPU_ZERO(&cpus);
	for (i = 0; i < g_nlcores; i++) {
		lc = rte_lcore_cpuset(g_lcores[i]);
		CPU_OR(&cpus, &cpus, &lc);
	}
	c = (unsigned int)CPU_COUNT(&cpus);
	app->idle_host.lcores = g_nlcores;
	app->idle_host.cpus = c != 0 ? c : 1;
	app->idle_host.sleep_asked = app->idle_sleep_asked;
	idle_setup(app, what, sizeof(what));
	app->idle_on = psb_idle_choose((enum psb_idle_mode)app->idle_mode, &app->idle_host, why,
		sizeof(why)) == PSB_IDLE_SLEEP;
	if (app->idle_mode != PSB_IDLE_POLL)
		prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	psb_conf_format_duration(cap, sizeof(cap), app->idle_sleep_ns != 0 ? app->idle_sleep_ns :
		PSB_IDLE_SLEEP_MAX_NS);
	if (app->idle_on)
		PSB_INFO(main, "idle: sleep (%s); %s, %s at most", why, what, cap);
	else if (app->idle_mode == PSB_IDLE_AUTO)
		PSB_INFO(main, "idle: poll (%s; sleeps if one comes to share them)", why);
	else
		PSB_INFO(main, "idle: poll (%s)", why);
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
		if (app->nworker_lcores == 0) {
			check_mboxes(&g_plan[rte_get_main_lcore()]);
		} else {
			for (i = 0; i < g_nlcores; i++)
				if (g_plan[g_lcores[i]].sleeping)
					lcore_kick(&g_plan[g_lcores[i]]);
			rte_delay_us_sleep(20);
		}
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
		if (lp->nroles == 0)
			g_lcores[g_nlcores++] = lc;
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
		if (w == 0 && app->idle_on)
			break;		/* idle: the caller backs off (psb_lcore_main_idle) */
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
