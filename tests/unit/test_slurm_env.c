/*
 * Unit tests of psb-slurm's reading of a Slurm step (app/psb-slurm/psb_slurm_env.c):
 * hostlist and tasks-per-node expressions as Slurm writes them, malformed and oversized
 * ones refused with the byte named, random and mutated expressions that never make it read
 * past a bound, a step's variables checked against each other, roles and ports.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "psb_slurm_env.h"

#define HOSTS_SEEN	64

struct seen {
	unsigned int n;
	char host[HOSTS_SEEN][PSB_SLURM_HOST_MAX + 1];
};

static int
collect(const char *host, uint32_t i, void *arg)
{
	struct seen *s = arg;

	assert_int_equal(i, s->n);
	if (s->n < HOSTS_SEEN)
		snprintf(s->host[s->n], sizeof(s->host[0]), "%s", host);
	s->n++;
	return 0;
}

/* expr expands to the hosts listed in want, "a,b,c" (no brackets in it). */
static void
expands(const char *expr, const char *want)
{
	struct seen s = { 0 };
	char w[1024], err[256], *tok, *save = NULL;
	unsigned int k = 0;
	int rc;

	rc = psb_slurm_hostlist_walk(expr, collect, &s, err, sizeof(err));
	if (rc < 0)
		fail_msg("'%s': %s", expr, err);
	snprintf(w, sizeof(w), "%s", want);
	for (tok = strtok_r(w, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		assert_true(k < s.n);
		if (strcmp(s.host[k], tok) != 0)
			fail_msg("'%s': host %u is '%s', want '%s'", expr, k, s.host[k], tok);
		k++;
	}
	assert_int_equal(rc, (int)k);
	assert_int_equal(s.n, k);
}

static void
test_hostlist(void **state)
{
	char out[PSB_SLURM_HOST_MAX + 1], err[256];

	(void)state;
	expands("vm", "vm");
	expands("node[01-03,07],gpu5", "node01,node02,node03,node07,gpu5");
	expands("a[1-2]b[1-2]", "a1b1,a1b2,a2b1,a2b2");
	expands("n[8-11]", "n8,n9,n10,n11");
	expands("n[098-101]", "n098,n099,n100,n101");
	expands("[1-3]", "1,2,3");
	expands("rack[1-2]-n[001-002].dc", "rack1-n001.dc,rack1-n002.dc,rack2-n001.dc,rack2-n002.dc");
	expands("a,b[1],c_d", "a,b1,c_d");
	expands("n[5,1-2,0]", "n5,n1,n2,n0");
	expands("x[0]y[00]z", "x0y00z");

	assert_int_equal(psb_slurm_hostlist_walk("n[1-65536]", NULL, NULL, err, sizeof(err)),
			 65536);
	assert_int_equal(psb_slurm_hostlist_walk("n[1-256]x[1-256]", NULL, NULL, err,
						 sizeof(err)), 65536);
	assert_int_equal(psb_slurm_hostlist_nth("node[01-03,07],gpu5", 3, out, sizeof(out), err,
						sizeof(err)), 0);
	assert_string_equal(out, "node07");
	assert_int_equal(psb_slurm_hostlist_nth("node[01-03,07],gpu5", 4, out, sizeof(out), err,
						sizeof(err)), 0);
	assert_string_equal(out, "gpu5");
	assert_int_equal(psb_slurm_hostlist_nth("node[01-03,07],gpu5", 5, out, sizeof(out), err,
						sizeof(err)), -ERANGE);
	assert_int_equal(psb_slurm_hostlist_nth("n[1-256]x[1-256]", 65535, out, sizeof(out), err,
						sizeof(err)), 0);
	assert_string_equal(out, "n256x256");
	assert_int_equal(psb_slurm_hostlist_nth("node07", 0, out, 4, err, sizeof(err)), -ENOSPC);
}

static int
stop_at_two(const char *host, uint32_t i, void *arg)
{
	(void)host;
	(*(int *)arg)++;
	return i == 2 ? 42 : 0;
}

static int
never(const char *host, uint32_t i, void *arg)
{
	(void)host;
	(void)i;
	(*(int *)arg)++;
	return 0;
}

static void
test_hostlist_walk_stops(void **state)
{
	char err[256];
	int calls = 0;

	(void)state;
	assert_int_equal(psb_slurm_hostlist_walk("n[1-9]", stop_at_two, &calls, err,
						 sizeof(err)), 42);
	assert_int_equal(calls, 3);
	/* a bad name after good ones: refused before any host is handed out */
	calls = 0;
	assert_int_equal(psb_slurm_hostlist_walk("a,b,n[1-3", never, &calls, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(calls, 0);
}

struct bad {
	const char *expr;
	int rc;
	const char *says;
};

static void
test_hostlist_malformed(void **state)
{
	static const struct bad bad[] = {
		{ "", -EINVAL, "empty" },
		{ "n[1-3", -EINVAL, "unclosed '[' at byte 2" },
		{ "n[", -EINVAL, "unclosed '[' at byte 2" },
		{ "a[1],n[2,", -EINVAL, "unclosed '[' at byte 7" },
		{ "n[]", -EINVAL, "empty brackets at byte 2" },
		{ "n[3-1]", -EINVAL, "range 3-1 is reversed at byte 3" },
		{ "n]", -EINVAL, "']' without '[' at byte 2" },
		{ "n[1,[2]]", -EINVAL, "'[' inside brackets at byte 5" },
		{ "n[[1]]", -EINVAL, "'[' inside brackets at byte 3" },
		{ "a,,b", -EINVAL, "an empty name at byte 3" },
		{ "a,", -EINVAL, "an empty name at byte 3" },
		{ ",a", -EINVAL, "an empty name at byte 1" },
		{ "n[1-]", -EINVAL, "']' at byte 5: expected the range's last number" },
		{ "n[1-", -EINVAL, "unclosed '[' at byte 2" },
		{ "n[-1]", -EINVAL, "'-' at byte 3: expected a number in brackets" },
		{ "n[1x]", -EINVAL, "'x' at byte 4: expected ',' or ']'" },
		{ "n[1-2-3]", -EINVAL, "'-' at byte 6: expected ',' or ']'" },
		{ "n[1234567890]", -E2BIG, "more than 9 digits at byte 3" },
		{ "n[0-999999999]", -E2BIG, "more than 65536 hosts in the brackets at byte 2" },
		{ "n[0-65536]", -E2BIG, "more than 65536 hosts" },
		{ "n[1-256]x[1-257]", -E2BIG, "more than 65536 hosts in the name" },
		{ "a,n[1-65536]", -E2BIG, "more than 65536 hosts" },
		{ "n[1-40000],m[1-40000]", -E2BIG, "more than 65536 hosts" },
		{ "n[1-9,1-65536]", -E2BIG, "more than 65536 hosts in the brackets" },
		{ "n 1", -EINVAL, "byte 0x20 at byte 2: not in a host name" },
		{ "n\x01", -EINVAL, "byte 0x01 at byte 2: not in a host name" },
		{ "n/1", -EINVAL, "'/' at byte 2: not in a host name" },
		{ "n\xff", -EINVAL, "byte 0xff at byte 2" },
		{ "a[1]a[1]a[1]a[1]a[1]a[1]a[1]a[1]a[1]", -E2BIG, "more than 8 bracket groups" },
	};
	char err[256];
	size_t i;
	int rc;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		rc = psb_slurm_hostlist_walk(bad[i].expr, NULL, NULL, err, sizeof(err));
		if (rc != bad[i].rc || strstr(err, bad[i].says) == NULL)
			fail_msg("'%s': %d '%s', want %d '%s'", bad[i].expr, rc, err, bad[i].rc,
				 bad[i].says);
	}
	assert_int_equal(psb_slurm_hostlist_walk(NULL, NULL, NULL, err, sizeof(err)), -EINVAL);
}

static void
test_hostlist_bounds(void **state)
{
	char expr[PSB_SLURM_VALUE_MAX + 64], err[256];
	size_t i;

	(void)state;
	/* a name of 255 bytes, and of 256 */
	memset(expr, 'a', 255);
	expr[255] = '\0';
	assert_int_equal(psb_slurm_hostlist_walk(expr, NULL, NULL, err, sizeof(err)), 1);
	memset(expr, 'a', 256);
	expr[256] = '\0';
	assert_int_equal(psb_slurm_hostlist_walk(expr, NULL, NULL, err, sizeof(err)), -E2BIG);
	assert_non_null(strstr(err, "more than 255 bytes"));
	/* the widest number counts: 253 + "99" fits, 253 + "100" does not */
	memset(expr, 'a', 253);
	strcpy(expr + 253, "[1-99]");
	assert_int_equal(psb_slurm_hostlist_walk(expr, NULL, NULL, err, sizeof(err)), 99);
	strcpy(expr + 253, "[1-100]");
	assert_int_equal(psb_slurm_hostlist_walk(expr, NULL, NULL, err, sizeof(err)), -E2BIG);
	/* a value longer than the kernel lets a variable be */
	for (i = 0; i + 2 < sizeof(expr) - 1; i += 2)
		memcpy(expr + i, "a,", 2);
	expr[i] = 'a';
	expr[i + 1] = '\0';
	assert_int_equal(psb_slurm_hostlist_walk(expr, NULL, NULL, err, sizeof(err)), -E2BIG);
	assert_non_null(strstr(err, "longer than 131072 bytes"));
}

/* Deterministic random numbers (xorshift), so that a failure repeats. */
static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint32_t
rnd(uint32_t n)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return (uint32_t)(rnd_state % n);
}

struct check {
	int calls;
};

/* Every host handed out is a host name within bounds. */
static int
check_host(const char *host, uint32_t i, void *arg)
{
	struct check *c = arg;
	size_t n = strlen(host);

	assert_int_equal(i, (uint32_t)c->calls);
	assert_true(n >= 1 && n <= PSB_SLURM_HOST_MAX);
	assert_int_equal(strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				"0123456789-._"), n);
	c->calls++;
	return 0;
}

/* expr: its count, its walk and its errors agree; a refusal says why. */
static void
consistent(const char *expr)
{
	struct check c = { 0 };
	char err[256];
	int n, w;

	err[0] = '\0';
	n = psb_slurm_hostlist_walk(expr, NULL, NULL, err, sizeof(err));
	if (n < 0) {
		assert_true(n == -EINVAL || n == -E2BIG);
		assert_true(strlen(err) > 0);
		return;
	}
	assert_true(n >= 1 && n <= (int)PSB_SLURM_NODES_MAX);
	w = psb_slurm_hostlist_walk(expr, check_host, &c, err, sizeof(err));
	assert_int_equal(w, n);
	assert_int_equal(c.calls, n);
}

/* Random and mutated expressions: never a read past a bound (ASan), never a silent miss. */
static void
test_hostlist_fuzz(void **state)
{
	static const char alpha[] = "nN01239-[],.x_ \x01";
	static const char *const seeds[] = {
		"node[01-03,07],gpu5", "a[1-2]b[1-2]", "rack[1-4]-n[001-128]", "n[0-999]",
		"x,y,z[1-3,5,7-9]", "[1-3]",
	};
	char expr[96];
	size_t len, i, k;
	int rounds;

	(void)state;
	for (rounds = 0; rounds < 200000; rounds++) {
		len = rnd(40);
		for (i = 0; i < len; i++)
			expr[i] = alpha[rnd(sizeof(alpha) - 1)];
		expr[len] = '\0';
		consistent(expr);
	}
	for (rounds = 0; rounds < 50000; rounds++) {
		k = rnd(sizeof(seeds) / sizeof(seeds[0]));
		snprintf(expr, sizeof(expr), "%s", seeds[k]);
		len = strlen(expr);
		for (i = 0; i < 1 + rnd(3); i++) {
			switch (rnd(3)) {
			case 0:		/* a byte changed */
				expr[rnd((uint32_t)len)] = alpha[rnd(sizeof(alpha) - 1)];
				break;
			case 1:		/* cut short */
				len = rnd((uint32_t)len + 1);
				expr[len] = '\0';
				break;
			default:	/* a byte inserted */
				if (len + 1 < sizeof(expr)) {
					k = rnd((uint32_t)len + 1);
					memmove(expr + k + 1, expr + k, len - k + 1);
					expr[k] = alpha[rnd(sizeof(alpha) - 1)];
					len++;
				}
			}
			if (len == 0)
				break;
		}
		consistent(expr);
	}
}

static void
tpn_is(const char *expr, uint32_t nodes, uint32_t tasks, uint32_t first, uint32_t most_rest)
{
	struct psb_slurm_tpn t;
	char err[256];

	if (psb_slurm_tpn_parse(expr, &t, err, sizeof(err)) != 0)
		fail_msg("'%s': %s", expr, err);
	assert_int_equal(t.nodes, nodes);
	assert_int_equal(t.tasks, tasks);
	assert_int_equal(t.first, first);
	assert_int_equal(t.most_rest, most_rest);
}

static void
test_tpn(void **state)
{
	static const struct bad bad[] = {
		{ "", -EINVAL, "empty" },
		{ "0", -EINVAL, "0 tasks on a node at byte 1" },
		{ "2(", -EINVAL, "'(' at byte 2: expected '(xN)'" },
		{ "2(x)", -EINVAL, "a repeat count like '(x3)' at byte 2" },
		{ "2(x3", -EINVAL, "a repeat count like '(x3)' at byte 2" },
		{ "2(x0)", -EINVAL, "'(x0)' at byte 2" },
		{ "2(y3)", -EINVAL, "'(' at byte 2" },
		{ "2,,1", -EINVAL, "',' at byte 3: expected a number of tasks" },
		{ "2,", -EINVAL, "the end at byte 3" },
		{ "2x", -EINVAL, "'x' at byte 2: expected ',' or the end" },
		{ "-1", -EINVAL, "'-' at byte 1" },
		{ "1(x65537)", -E2BIG, "more than 65536 nodes" },
		{ "1(x40000),1(x40000)", -E2BIG, "more than 65536 nodes" },
		{ "1048577", -E2BIG, "more than 1048576 tasks" },
		{ "9999999999", -E2BIG, "more than 9 digits at byte 1" },
		{ "1(x9999999999)", -E2BIG, "a repeat count" },
	};
	struct psb_slurm_tpn t;
	char err[256];
	size_t i;
	int rc;

	(void)state;
	tpn_is("4", 1, 4, 4, 0);
	tpn_is("2(x3),1", 4, 7, 2, 2);
	tpn_is("1,3(x2)", 3, 7, 1, 3);
	tpn_is("5(x1)", 1, 5, 5, 0);
	tpn_is("16(x4096)", 4096, 65536, 16, 16);
	tpn_is("1048576", 1, 1048576, 1048576, 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		rc = psb_slurm_tpn_parse(bad[i].expr, &t, err, sizeof(err));
		if (rc != bad[i].rc || strstr(err, bad[i].says) == NULL)
			fail_msg("'%s': %d '%s', want %d '%s'", bad[i].expr, rc, err, bad[i].rc,
				 bad[i].says);
	}
}

/* A made-up environment: "NAME=VALUE" strings. */
struct env {
	const char *vars[16];
};

static const char *
env_get(const char *name, void *arg)
{
	const struct env *e = arg;
	size_t n = strlen(name), i;

	for (i = 0; i < 16 && e->vars[i] != NULL; i++)
		if (strncmp(e->vars[i], name, n) == 0 && e->vars[i][n] == '=')
			return e->vars[i] + n + 1;
	return NULL;
}

/* srun -n 6 over three nodes, task 4 (on the third). */
static const struct env srun6 = { {
	"SLURM_PROCID=4", "SLURM_NTASKS=6", "SLURM_JOB_ID=1234", "SLURM_STEP_ID=2",
	"SLURM_STEP_NODELIST=node[01-02],gpu5", "SLURM_STEP_TASKS_PER_NODE=2(x3)",
	"SLURM_NODEID=2", "SLURM_LOCALID=0", "SLURMD_NODENAME=gpu5", NULL,
} };

/* e with variable name set to value (NULL: unset). */
static struct env
with(const struct env *e, const char *name, const char *value)
{
	static char buf[8][256];
	static unsigned int next;
	struct env r = { { NULL } };
	size_t n = strlen(name), i, k = 0;

	for (i = 0; i < 16 && e->vars[i] != NULL; i++)
		if (!(strncmp(e->vars[i], name, n) == 0 && e->vars[i][n] == '='))
			r.vars[k++] = e->vars[i];
	if (value != NULL) {
		snprintf(buf[next % 8], sizeof(buf[0]), "%s=%s", name, value);
		r.vars[k++] = buf[next++ % 8];
	}
	return r;
}

static void
step_fails(struct env e, int rc, const char *says)
{
	struct psb_slurm_step s;
	char err[512];
	int got;

	err[0] = '\0';
	got = psb_slurm_step_read(&s, env_get, &e, err, sizeof(err));
	if (got != rc || strstr(err, says) == NULL)
		fail_msg("%d '%s', want %d '%s'", got, err, rc, says);
}

static void
test_step(void **state)
{
	struct psb_slurm_step s;
	struct env e;
	char err[512], *big;

	(void)state;
	assert_int_equal(psb_slurm_step_read(&s, env_get, (void *)&srun6, err, sizeof(err)), 0);
	assert_int_equal(s.procid, 4);
	assert_int_equal(s.ntasks, 6);
	assert_int_equal(s.jobid, 1234);
	assert_int_equal(s.stepid, 2);
	assert_int_equal(s.nodeid, 2);
	assert_int_equal(s.nnodes, 3);
	assert_int_equal(s.tpn.first, 2);
	assert_string_equal(s.first_host, "node01");
	assert_string_equal(s.node_host, "gpu5");
	assert_string_equal(s.nodelist_var, "SLURM_STEP_NODELIST");
	assert_string_equal(s.tpn_var, "SLURM_STEP_TASKS_PER_NODE");

	/* without SLURMD_NODENAME, the node list's NODEID-th; without NODEID, node 0 */
	e = with(&srun6, "SLURMD_NODENAME", NULL);
	assert_int_equal(psb_slurm_step_read(&s, env_get, &e, err, sizeof(err)), 0);
	assert_string_equal(s.node_host, "gpu5");
	e = with(&e, "SLURM_NODEID", NULL);
	assert_int_equal(psb_slurm_step_read(&s, env_get, &e, err, sizeof(err)), 0);
	assert_string_equal(s.node_host, "node01");
	assert_int_equal(s.stepid, 2);
	/* older names, and a batch script's job-wide ones */
	e = with(&srun6, "SLURM_NTASKS", NULL);
	e = with(&e, "SLURM_NPROCS", "6");
	e = with(&e, "SLURM_STEP_ID", NULL);
	assert_int_equal(psb_slurm_step_read(&s, env_get, &e, err, sizeof(err)), 0);
	assert_int_equal(s.ntasks, 6);
	assert_int_equal(s.stepid, 0);
	e = with(&srun6, "SLURM_STEP_NODELIST", NULL);
	e = with(&e, "SLURM_STEP_TASKS_PER_NODE", NULL);
	e = with(&e, "SLURM_JOB_NODELIST", "node[01-02],gpu5");
	e = with(&e, "SLURM_TASKS_PER_NODE", "4(x3)");	/* the job's: more than this step's */
	assert_int_equal(psb_slurm_step_read(&s, env_get, &e, err, sizeof(err)), 0);
	assert_string_equal(s.nodelist_var, "SLURM_JOB_NODELIST");

	step_fails(with(&srun6, "SLURM_PROCID", NULL), -ENOENT, "SLURM_PROCID is not set");
	step_fails(with(&srun6, "SLURM_NTASKS", NULL), -ENOENT,
		   "SLURM_NTASKS (or SLURM_NPROCS) is not set");
	step_fails(with(&srun6, "SLURM_JOB_ID", NULL), -ENOENT, "SLURM_JOB_ID (or SLURM_JOBID)");
	step_fails(with(&srun6, "SLURM_STEP_NODELIST", NULL), -ENOENT,
		   "SLURM_STEP_NODELIST (or SLURM_JOB_NODELIST) is not set");
	step_fails(with(&srun6, "SLURM_STEP_TASKS_PER_NODE", NULL), -ENOENT,
		   "SLURM_STEP_TASKS_PER_NODE (or SLURM_TASKS_PER_NODE) is not set");
	step_fails(with(&srun6, "SLURM_PROCID", "4a"), -EINVAL, "SLURM_PROCID '4a': not a number");
	step_fails(with(&srun6, "SLURM_PROCID", ""), -EINVAL, "SLURM_PROCID '': not a number");
	step_fails(with(&srun6, "SLURM_PROCID", "-1"), -EINVAL, "SLURM_PROCID '-1'");
	step_fails(with(&srun6, "SLURM_PROCID", "99999999999999999999"), -EINVAL,
		   "not a number from 0 to 1048575");
	step_fails(with(&srun6, "SLURM_PROCID", "6"), -EINVAL,
		   "SLURM_PROCID 6: not below SLURM_NTASKS 6");
	step_fails(with(&srun6, "SLURM_NTASKS", "0"), -EINVAL, "SLURM_NTASKS '0'");
	step_fails(with(&srun6, "SLURM_JOB_ID", "x"), -EINVAL, "SLURM_JOB_ID 'x'");
	step_fails(with(&srun6, "SLURM_NODEID", "3"), -EINVAL,
		   "SLURM_NODEID 3: not below the 3 node(s) of SLURM_STEP_NODELIST");
	step_fails(with(&srun6, "SLURM_STEP_NODELIST", "node[01-02"), -EINVAL,
		   "SLURM_STEP_NODELIST 'node[01-02': unclosed '[' at byte 5");
	step_fails(with(&srun6, "SLURM_STEP_NODELIST", "node[01-04],gpu5"), -EINVAL,
		   "SLURM_STEP_TASKS_PER_NODE covers 3 node(s), SLURM_STEP_NODELIST lists 5");
	step_fails(with(&srun6, "SLURM_STEP_TASKS_PER_NODE", "2(x2),1"), -EINVAL,
		   "SLURM_STEP_TASKS_PER_NODE '2(x2),1' is 5 task(s), SLURM_NTASKS 6");
	step_fails(with(&srun6, "SLURM_STEP_TASKS_PER_NODE", "2(x3"), -EINVAL,
		   "SLURM_STEP_TASKS_PER_NODE '2(x3': a repeat count");
	step_fails(with(&srun6, "SLURMD_NODENAME", "gpu 5"), -EINVAL, "SLURMD_NODENAME 'gpu 5'");
	step_fails(with(&srun6, "SLURMD_NODENAME", ""), -EINVAL, "SLURMD_NODENAME ''");

	/* a variable past the kernel's bound: refused, named, quoted only in part */
	big = malloc(PSB_SLURM_VALUE_MAX + 32);
	assert_non_null(big);
	memset(big, '1', PSB_SLURM_VALUE_MAX + 21);
	big[PSB_SLURM_VALUE_MAX + 21] = '\0';
	memcpy(big, "SLURM_STEP_NODELIST=", 20);
	e = with(&srun6, "SLURM_STEP_NODELIST", NULL);
	e.vars[8] = big;	/* with() left 8 of the 9 */
	step_fails(e, -E2BIG, "SLURM_STEP_NODELIST: longer than 131072 bytes");
	memcpy(big + 7, "SLURM_PROCID=", 13);
	e = with(&srun6, "SLURM_PROCID", NULL);
	e.vars[8] = big + 7;
	step_fails(e, -E2BIG, "SLURM_PROCID: longer than 131072 bytes");
	free(big);
}

static void
test_place(void **state)
{
	struct psb_slurm_place p;
	char err[256];

	(void)state;
	assert_int_equal(psb_slurm_place(PSB_SLURM_PUSHPULL, 0, 4, 1, &p, err, sizeof(err)), 0);
	assert_int_equal(p.role, PSB_SLURM_SCHEDULER);
	assert_int_equal(p.servers, 1);
	assert_int_equal(p.workers, 2);
	assert_int_equal(psb_slurm_place(PSB_SLURM_PUSHPULL, 1, 4, 1, &p, err, sizeof(err)), 0);
	assert_int_equal(p.role, PSB_SLURM_SERVER);
	assert_int_equal(p.rank, 0);
	assert_int_equal(psb_slurm_place(PSB_SLURM_PUSHPULL, 3, 4, 1, &p, err, sizeof(err)), 0);
	assert_int_equal(p.role, PSB_SLURM_WORKER);
	assert_int_equal(p.rank, 1);
	assert_int_equal(psb_slurm_place(PSB_SLURM_PUSHPULL, 2, 8, 3, &p, err, sizeof(err)), 0);
	assert_int_equal(p.role, PSB_SLURM_SERVER);
	assert_int_equal(p.rank, 1);
	assert_int_equal(psb_slurm_place(PSB_SLURM_PUSHPULL, 4, 8, 3, &p, err, sizeof(err)), 0);
	assert_int_equal(p.role, PSB_SLURM_WORKER);
	assert_int_equal(p.rank, 0);
	assert_int_equal(p.workers, 4);
	assert_string_equal(psb_slurm_role_name(p.role), "worker");

	assert_int_equal(psb_slurm_place(PSB_SLURM_PUSHPULL, 0, 2, 1, &p, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "2 task(s): the scheduler and 1 server(s) leave no worker"));
	assert_int_equal(psb_slurm_place(PSB_SLURM_PUSHPULL, 0, 4, 0, &p, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(psb_slurm_place(PSB_SLURM_PUSHPULL, 0, 4, UINT32_MAX, &p, err,
					 sizeof(err)), -EINVAL);
	assert_int_equal(psb_slurm_place(PSB_SLURM_PUSHPULL, 4, 4, 1, &p, err, sizeof(err)),
			 -EINVAL);

	assert_int_equal(psb_slurm_place(PSB_SLURM_STALENESS, 0, 3, 0, &p, err, sizeof(err)), 0);
	assert_int_equal(p.role, PSB_SLURM_TRAINER);
	assert_int_equal(p.workers, 2);
	assert_string_equal(psb_slurm_role_name(p.role), "trainer");
	assert_int_equal(psb_slurm_place(PSB_SLURM_STALENESS, 2, 3, 0, &p, err, sizeof(err)), 0);
	assert_int_equal(p.role, PSB_SLURM_WORKER);
	assert_int_equal(p.rank, 1);
	assert_int_equal(psb_slurm_place(PSB_SLURM_STALENESS, 0, 1, 0, &p, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "the trainer and a worker take 2 at least"));
}

static void
test_port(void **state)
{
	uint32_t j, s;
	uint16_t p;

	(void)state;
	assert_int_equal(psb_slurm_port(0, 0), 10000);
	assert_int_equal(psb_slurm_port(77, 0), 11232);
	assert_int_equal(psb_slurm_port(77, 1), 11233);
	assert_int_equal(psb_slurm_port(1249, 15), 29999);
	assert_int_equal(psb_slurm_port(1250, 0), 10000);
	/* neighbouring jobs and steps differ; every port is below the ephemeral range */
	assert_true(psb_slurm_port(1000, 0) != psb_slurm_port(1001, 0));
	for (j = UINT32_MAX - 100000; j != 0; j++)
		for (s = 0; s < 3; s++) {
			p = psb_slurm_port(j, s);
			assert_true(p >= 10000 && p < 30000);
		}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostlist),
		cmocka_unit_test(test_hostlist_walk_stops),
		cmocka_unit_test(test_hostlist_malformed),
		cmocka_unit_test(test_hostlist_bounds),
		cmocka_unit_test(test_hostlist_fuzz),
		cmocka_unit_test(test_tpn),
		cmocka_unit_test(test_step),
		cmocka_unit_test(test_place),
		cmocka_unit_test(test_port),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
