/* A Slurm job step as psb-slurm reads it: Slurm's variables, checked and bounded. */
#ifndef PSB_SLURM_ENV_H
#define PSB_SLURM_ENV_H

/*
 * Slurm describes a step in its tasks' environment: SLURM_PROCID and SLURM_NTASKS, the
 * nodes as a hostlist expression ("node[01-03,07],gpu5": ranges keep their zero padding,
 * several bracket groups in a name multiply, commas at the top level separate names) and
 * the tasks on each as a tasks-per-node expression ("2(x3),1": 2 tasks on each of 3 nodes,
 * then 1). Everything here is read through a lookup function (getenv, or a table in the
 * tests), never allocates, and bounds what it reads: a variable's bytes, the hosts of an
 * expression, a host name's bytes, the tasks of a step. Every function returns 0 (or a
 * count) or a negative errno with the reason in err, naming the variable and, in an
 * expression, the byte: -ENOENT a variable that must be set is not, -EINVAL a malformed
 * value, -E2BIG a value past a bound.
 */
#include <stddef.h>
#include <stdint.h>

#define PSB_SLURM_NODES_MAX	65536u		/* hosts of an expression, nodes of a step */
#define PSB_SLURM_TASKS_MAX	1048576u	/* tasks of one step */
#define PSB_SLURM_HOST_MAX	255u		/* bytes of one host name */
#define PSB_SLURM_GROUPS_MAX	8u		/* bracket groups in one host name */
#define PSB_SLURM_VALUE_MAX	131072u		/* bytes of a variable, as the kernel */

/* Called with each host of an expression in order, i from 0; non-zero stops the walk. */
typedef int (*psb_slurm_host_fn)(const char *host, uint32_t i, void *arg);

/*
 * The hosts of hostlist expression expr, each handed to fn (NULL: only counted). The
 * whole expression is checked and its hosts counted before the first call, so that a
 * malformed or oversized one calls fn never. The number of hosts, fn's non-zero return,
 * or -EINVAL / -E2BIG.
 */
int psb_slurm_hostlist_walk(const char *expr, psb_slurm_host_fn fn, void *arg, char *err,
		size_t errlen);

/*
 * Host i (from 0) of expr into out (PSB_SLURM_HOST_MAX + 1 bytes suffice). 0, -ERANGE when
 * expr has no host i, -ENOSPC when out is too small, or as the walk.
 */
int psb_slurm_hostlist_nth(const char *expr, uint32_t i, char *out, size_t outlen, char *err,
		size_t errlen);

/* What a tasks-per-node expression says. */
struct psb_slurm_tpn {
	uint32_t nodes;		/* nodes it covers */
	uint32_t tasks;		/* tasks on all of them */
	uint32_t first;		/* tasks on the first node */
	uint32_t most_rest;	/* the most tasks on one node after the first (0: one node) */
};

/* Parses a tasks-per-node expression. 0, or -EINVAL / -E2BIG. */
int psb_slurm_tpn_parse(const char *expr, struct psb_slurm_tpn *t, char *err, size_t errlen);

/* The environment: the value of a variable, or NULL when it is not set. */
typedef const char *(*psb_slurm_getenv_fn)(const char *name, void *arg);

/* A step, from its task's variables. */
struct psb_slurm_step {
	uint32_t procid;	/* SLURM_PROCID: this task's rank in the step */
	uint32_t ntasks;	/* SLURM_NTASKS (or SLURM_NPROCS) */
	uint32_t nodeid;	/* SLURM_NODEID: this node's index in the node list (unset: 0) */
	uint32_t localid;	/* SLURM_LOCALID: this task's index on its node (unset: 0) */
	uint32_t jobid;		/* SLURM_JOB_ID (or SLURM_JOBID) */
	uint32_t stepid;	/* SLURM_STEP_ID (or SLURM_STEPID; unset, in a batch script: 0) */
	uint32_t nnodes;	/* hosts of the node list */
	struct psb_slurm_tpn tpn;
	const char *nodelist_var;	/* the variables the node list and the tasks per node */
	const char *tpn_var;		/* came from */
	char first_host[PSB_SLURM_HOST_MAX + 1];	/* the node list's first: task 0's */
	char node_host[PSB_SLURM_HOST_MAX + 1];		/* SLURMD_NODENAME, else host NODEID */
};

/*
 * Reads the step: SLURM_PROCID, SLURM_NTASKS, SLURM_JOB_ID, a node list
 * (SLURM_STEP_NODELIST, else SLURM_JOB_NODELIST, else SLURM_NODELIST) and the tasks on its
 * nodes (SLURM_STEP_TASKS_PER_NODE, else SLURM_TASKS_PER_NODE) must be set; SLURM_NODEID,
 * SLURM_LOCALID, SLURM_STEP_ID and SLURMD_NODENAME may be. Checks them against each other:
 * PROCID below NTASKS, NODEID below the node list's hosts, and a step's node list and tasks
 * per node of one node count and NTASKS tasks. 0, or -ENOENT / -EINVAL / -E2BIG.
 */
int psb_slurm_step_read(struct psb_slurm_step *s, psb_slurm_getenv_fn get, void *arg,
		char *err, size_t errlen);

/* What a task of a psb job is. */
enum psb_slurm_kind {
	PSB_SLURM_PUSHPULL,	/* task 0 the scheduler, 1..S the servers, the rest workers */
	PSB_SLURM_STALENESS,	/* task 0 the trainer, the rest workers */
};

enum psb_slurm_role {
	PSB_SLURM_SCHEDULER,
	PSB_SLURM_SERVER,
	PSB_SLURM_WORKER,
	PSB_SLURM_TRAINER,
};

struct psb_slurm_place {
	enum psb_slurm_role role;
	uint32_t rank;		/* among its role's tasks: server r, worker r (else 0) */
	uint32_t servers;	/* servers of the job (staleness: 0) */
	uint32_t workers;	/* workers of the job */
};

/* The role of task procid of ntasks, with servers servers (pushpull). 0, or -EINVAL. */
int psb_slurm_place(enum psb_slurm_kind kind, uint32_t procid, uint32_t ntasks,
		uint32_t servers, struct psb_slurm_place *p, char *err, size_t errlen);

/* "scheduler", "server", "worker", "trainer": DMLC_ROLE's words. */
const char *psb_slurm_role_name(enum psb_slurm_role r);

/*
 * The job's port when none is given: 10000 + (jobid * 16 + stepid % 16) % 20000. Two jobs
 * on one host, or two steps of one job, meet only 20000 job ids apart; the range stays
 * below Linux's ephemeral ports (32768 and up), which clients' sockets take.
 */
uint16_t psb_slurm_port(uint32_t jobid, uint32_t stepid);

#endif /* PSB_SLURM_ENV_H */
