/*
 * The lcore runtime: which role instances this node runs (from psb_roles[]), their rings,
 * their placement on lcores, the poll loop with its yields and idle sleeps, and the mailboxes
 * through which the control plane reaches a role on its own lcore.
 */
#ifndef PSB_LCORE_H
#define PSB_LCORE_H

#include <stdint.h>

struct psb_app;
struct psb_role;

/*
 * Plan the role instances (app->roles, app->routes, app->tx_ring, app->host_sched): every
 * role of psb_roles[] as many times as its count() says, in table order, each with its
 * input ring. 0 or -ENOMEM; a ring that cannot be made ends psb.
 */
int psb_lcore_plan(struct psb_app *app);
/*
 * Place the instances: one per worker lcore when there are enough, all on the main lcore
 * otherwise (run to completion). Sets app->nworker_lcores and returns it.
 */
unsigned int psb_lcore_place(struct psb_app *app);
/* Start the worker lcores' poll loops (until app->stop_lcores). */
void psb_lcore_launch(struct psb_app *app);
/*
 * Run to completion: the main lcore polls its roles for about lim TSC cycles (or until
 * app->quit), then yields if due. The work done (0: idle).
 */
int psb_lcore_run_main(struct psb_app *app, uint64_t lim);
/* A few passes over the main lcore's roles (run to completion only): a long control wait. */
void psb_main_poll_roles(struct psb_app *app);
/*
 * Idle lcores (node.idle): once the roles are placed and the ports started, set up what
 * each lcore waits on, choose the mode (app->idle_on) and say it in one line. While
 * app->idle_on, an lcore whose round of passes found nothing backs off (lib/idle): pauses,
 * yields, then sleeps up to node.idle_sleep, woken early by its ports' queues (af_packet,
 * tap) or by another lcore that handed it work. psb_lcore_main_idle does it for the main
 * lcore (run to completion) after a round that did work items.
 */
void psb_lcore_idle_start(struct psb_app *app);
void psb_lcore_main_idle(struct psb_app *app, int work);
/* The sleeps of every lcore so far, summed. */
struct psb_idle_stats;
void psb_lcores_idle_stats(struct psb_idle_stats *st);
/* Yields of every lcore so far, and the TSC cycles they took. */
void psb_lcores_yielded(uint64_t *yields, uint64_t *cycles);
/*
 * Carry op (enum psb_role_op) with arg out on every instance of role (NULL: all roles), on
 * their lcores, and wait for them (2 s at most): the first error, -ETIMEDOUT, or 0.
 */
int psb_roles_call(struct psb_app *app, const struct psb_role *role, int op, const void *arg);
/*
 * A wait psb cannot finish: print why (even with -q), and end the process with status 1
 * once the main lcore sees it, the running experiment failed with that reason. Any lcore.
 */
void psb_app_fail(struct psb_app *app, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* PSB_LCORE_H */
