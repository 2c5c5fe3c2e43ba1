/* Slurm's hostlist and tasks-per-node expressions and a step's variables, checked and bounded. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "psb_slurm_env.h"

#define DIGITS_MAX	9	/* numbers in an expression: below 10^9, no overflow to watch */
#define SHOW_MAX	48	/* bytes of a value quoted in an error */

static int
fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static bool
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Letters, digits, '-', '.' and '_': what a host name in an expression is made of. */
static bool
is_host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '-' ||
		c == '.' || c == '_';
}

/* The character at p for a message: itself when printable, else its code. */
static const char *
show_char(char c, char *buf, size_t len)
{
	if (c > ' ' && c < 0x7f)
		snprintf(buf, len, "'%c'", c);
	else
		snprintf(buf, len, "byte 0x%02x", (unsigned char)c);
	return buf;
}

/* A number of 1 to DIGITS_MAX digits at *p, p moved past it; its digits, or 0 when none. */
static int
number(const char **p, uint32_t *v)
{
	const char *s = *p;
	uint32_t x = 0;
	int n = 0;

	while (is_digit(*s) && n <= DIGITS_MAX) {
		x = x * 10 + (uint32_t)(*s - '0');
		s++;
		n++;
	}
	if (n == 0 || n > DIGITS_MAX)
		return n == 0 ? 0 : -1;
	*v = x;
	*p = s;
	return n;
}

static int
digits_of(uint32_t v)
{
	int n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/* A bracket group of a host name, walked range by range without copying it. */
struct group {
	const char *open;	/* its '[' */
	const char *next;	/* the ',' or ']' after the current range */
	uint32_t val, hi;	/* the current value, the current range's last */
	int width;		/* the current range's padding: its first number's digits */
};

/*
 * The range at *p inside the group opened at open ("7", "01-03"), p moved to the ',' or ']'
 * after it. 0, or -EINVAL / -E2BIG naming the byte (from 1, in expr).
 */
static int
range_at(const char *expr, const char *open, const char **p, uint32_t *lo, uint32_t *hi,
	 int *width, char *err, size_t errlen)
{
	const char *s = *p;
	char cb[16];
	int n;

	n = number(&s, lo);
	if (n <= 0)
		return n < 0 ? fail(err, errlen, -E2BIG, "a number of more than %d digits at byte "
				    "%td", DIGITS_MAX, s - expr + 1) :
			*s == '\0' ? fail(err, errlen, -EINVAL, "unclosed '[' at byte %td",
					  open - expr + 1) :
			fail(err, errlen, -EINVAL, "%s at byte %td: expected a number in brackets",
			     show_char(*s, cb, sizeof(cb)), s - expr + 1);
	*width = n;
	*hi = *lo;
	if (*s == '-') {
		s++;
		n = number(&s, hi);
		if (n <= 0)
			return n < 0 ? fail(err, errlen, -E2BIG, "a number of more than %d digits "
					    "at byte %td", DIGITS_MAX, s - expr + 1) :
				*s == '\0' ? fail(err, errlen, -EINVAL, "unclosed '[' at byte %td",
						  open - expr + 1) :
				fail(err, errlen, -EINVAL, "%s at byte %td: expected the range's last "
				     "number", show_char(*s, cb, sizeof(cb)), s - expr + 1);
		if (*hi < *lo)
			return fail(err, errlen, -EINVAL, "range %u-%u is reversed at byte %td",
				    *lo, *hi, *p - expr + 1);
	}
	if (*s == '\0')
		return fail(err, errlen, -EINVAL, "unclosed '[' at byte %td", open - expr + 1);
	if (*s != ',' && *s != ']')
		return fail(err, errlen, -EINVAL, "%s at byte %td: expected ',' or ']' in brackets",
			    show_char(*s, cb, sizeof(cb)), s - expr + 1);
	*p = s;
	return 0;
}

/* The group's first value. */
static void
group_first(struct group *g)
{
	const char *s = g->open + 1;
	uint32_t lo;

	range_at(g->open, g->open, &s, &lo, &g->hi, &g->width, NULL, 0);
	g->val = lo;
	g->next = s;
}

/* The group's next value: true, or false when it wrapped to its first (carry). */
static bool
group_next(struct group *g)
{
	const char *s = g->next;
	uint32_t lo;

	if (g->val < g->hi) {
		g->val++;
		return true;
	}
	if (*s == ']') {
		group_first(g);
		return false;
	}
	s++;
	range_at(g->open, g->open, &s, &lo, &g->hi, &g->width, NULL, 0);
	g->val = lo;
	g->next = s;
	return true;
}

/* One name of an expression: literal text and bracket groups between top-level commas. */
struct item {
	const char *start, *end;	/* [start, end) */
	unsigned int ngroups;
	struct group g[PSB_SLURM_GROUPS_MAX];
	uint64_t hosts;			/* the product of the groups' sizes */
};

/*
 * The name starting at p checked into it: its groups found, its hosts counted (stopping
 * past PSB_SLURM_NODES_MAX), its longest host measured. 0, or -EINVAL / -E2BIG.
 */
static int
item_scan(const char *expr, const char *p, struct item *it, char *err, size_t errlen)
{
	const char *s = p, *open;
	uint64_t size;
	size_t longest = 0;
	uint32_t lo, hi;
	int width, widest, rc;
	char cb[16];

	it->start = p;
	it->ngroups = 0;
	it->hosts = 1;
	while (*s != '\0' && *s != ',') {
		if (*s == ']')
			return fail(err, errlen, -EINVAL, "']' without '[' at byte %td",
				    s - expr + 1);
		if (*s != '[') {
			if (!is_host_char(*s))
				return fail(err, errlen, -EINVAL, "%s at byte %td: not in a host name",
					    show_char(*s, cb, sizeof(cb)), s - expr + 1);
			longest++;
			s++;
			continue;
		}
		if (it->ngroups == PSB_SLURM_GROUPS_MAX)
			return fail(err, errlen, -E2BIG, "more than %u bracket groups in one name "
				    "at byte %td", PSB_SLURM_GROUPS_MAX, s - expr + 1);
		open = s++;
		if (*s == ']')
			return fail(err, errlen, -EINVAL, "empty brackets at byte %td",
				    open - expr + 1);
		size = 0;
		widest = 0;
		for (;;) {
			if (*s == '[')
				return fail(err, errlen, -EINVAL, "'[' inside brackets at byte %td",
					    s - expr + 1);
			rc = range_at(expr, open, &s, &lo, &hi, &width, err, errlen);
			if (rc != 0)
				return rc;
			size += (uint64_t)hi - lo + 1;
			if (size > PSB_SLURM_NODES_MAX)
				return fail(err, errlen, -E2BIG, "more than %u hosts in the brackets "
					    "at byte %td", PSB_SLURM_NODES_MAX, open - expr + 1);
			if (width > widest)
				widest = width;
			if (digits_of(hi) > widest)
				widest = digits_of(hi);
			if (*s++ == ']')
				break;
		}
		it->g[it->ngroups++].open = open;
		it->hosts *= size;
		if (it->hosts > PSB_SLURM_NODES_MAX)
			return fail(err, errlen, -E2BIG, "more than %u hosts in the name at "
				    "byte %td", PSB_SLURM_NODES_MAX, p - expr + 1);
		longest += (size_t)widest;
	}
	if (s == p)
		return fail(err, errlen, -EINVAL, "an empty name at byte %td", p - expr + 1);
	if (longest > PSB_SLURM_HOST_MAX)
		return fail(err, errlen, -E2BIG, "host names of more than %u bytes at byte %td",
			    PSB_SLURM_HOST_MAX, p - expr + 1);
	it->end = s;
	return 0;
}

/* The current host of it into buf (PSB_SLURM_HOST_MAX + 1 bytes: item_scan measured it). */
static void
item_host(const struct item *it, char *buf)
{
	const char *s = it->start;
	unsigned int k = 0;
	size_t n = 0;

	while (s < it->end) {
		if (k < it->ngroups && s == it->g[k].open) {
			n += (size_t)snprintf(buf + n, PSB_SLURM_HOST_MAX + 1 - n, "%0*u",
					      it->g[k].width, it->g[k].val);
			s = strchr(s, ']') + 1;
			k++;
			continue;
		}
		buf[n++] = *s++;
	}
	buf[n] = '\0';
}

int
psb_slurm_hostlist_walk(const char *expr, psb_slurm_host_fn fn, void *arg, char *err,
		size_t errlen)
{
	char host[PSB_SLURM_HOST_MAX + 1];
	const char *p = expr;
	struct item it;
	uint64_t total = 0, h;
	uint32_t i = 0;
	int rc, k;

	if (expr == NULL || *expr == '\0')
		return fail(err, errlen, -EINVAL, "empty");
	if (strnlen(expr, PSB_SLURM_VALUE_MAX + 1) > PSB_SLURM_VALUE_MAX)
		return fail(err, errlen, -E2BIG, "longer than %u bytes", PSB_SLURM_VALUE_MAX);
	/* all of it checked and counted first: a bad expression calls fn never */
	for (;;) {
		rc = item_scan(expr, p, &it, err, errlen);
		if (rc != 0)
			return rc;
		total += it.hosts;
		if (total > PSB_SLURM_NODES_MAX)
			return fail(err, errlen, -E2BIG, "more than %u hosts", PSB_SLURM_NODES_MAX);
		if (*it.end == '\0')
			break;
		p = it.end + 1;
	}
	if (fn == NULL)
		return (int)total;
	for (p = expr;;) {
		item_scan(expr, p, &it, NULL, 0);
		for (k = 0; k < (int)it.ngroups; k++)
			group_first(&it.g[k]);
		for (h = 0; h < it.hosts; h++) {
			item_host(&it, host);
			rc = fn(host, i++, arg);
			if (rc != 0)
				return rc;
			/* the last group turns fastest, as Slurm lists a[1-2]b[1-2] */
			for (k = (int)it.ngroups - 1; k >= 0 && !group_next(&it.g[k]); k--)
				;
		}
		if (*it.end == '\0')
			break;
		p = it.end + 1;
	}
	return (int)total;
}

struct nth {
	uint32_t want;
	char *out;
	size_t len;
	bool found, small;
};

static int
take_nth(const char *host, uint32_t i, void *arg)
{
	struct nth *n = arg;

	if (i != n->want)
		return 0;
	n->found = true;
	if (strlen(host) >= n->len)
		n->small = true;
	else
		memcpy(n->out, host, strlen(host) + 1);
	return 1;
}

int
psb_slurm_hostlist_nth(const char *expr, uint32_t i, char *out, size_t outlen, char *err,
		size_t errlen)
{
	struct nth n = { .want = i, .out = out, .len = outlen };
	int rc;

	rc = psb_slurm_hostlist_walk(expr, take_nth, &n, err, errlen);
	if (rc < 0)
		return rc;
	if (!n.found)
		return fail(err, errlen, -ERANGE, "no host %u: %d host(s)", i, rc);
	if (n.small)
		return fail(err, errlen, -ENOSPC, "host %u does not fit in %zu bytes", i, outlen);
	return 0;
}

int
psb_slurm_tpn_parse(const char *expr, struct psb_slurm_tpn *t, char *err, size_t errlen)
{
	const char *s = expr, *at;
	uint64_t nodes = 0, tasks = 0;
	uint32_t n, r;
	char cb[16];
	int d;

	memset(t, 0, sizeof(*t));
	if (expr == NULL || *expr == '\0')
		return fail(err, errlen, -EINVAL, "empty");
	if (strnlen(expr, PSB_SLURM_VALUE_MAX + 1) > PSB_SLURM_VALUE_MAX)
		return fail(err, errlen, -E2BIG, "longer than %u bytes", PSB_SLURM_VALUE_MAX);
	for (;;) {
		at = s;
		d = number(&s, &n);
		if (d <= 0)
			return d < 0 ? fail(err, errlen, -E2BIG, "a number of more than %d digits at "
					    "byte %td", DIGITS_MAX, at - expr + 1) :
				fail(err, errlen, -EINVAL, "%s at byte %td: expected a number of tasks",
				     *s == '\0' ? "the end" : show_char(*s, cb, sizeof(cb)),
				     s - expr + 1);
		if (n == 0)
			return fail(err, errlen, -EINVAL, "0 tasks on a node at byte %td",
				    at - expr + 1);
		r = 1;
		if (*s == '(') {
			if (s[1] != 'x')
				return fail(err, errlen, -EINVAL, "'(' at byte %td: expected '(xN)'",
					    s - expr + 1);
			s += 2;
			at = s;
			d = number(&s, &r);
			if (d <= 0 || *s != ')')
				return fail(err, errlen, d < 0 ? -E2BIG : -EINVAL, "a repeat count "
					    "like '(x3)' at byte %td", at - expr - 1);
			if (r == 0)
				return fail(err, errlen, -EINVAL, "'(x0)' at byte %td", at - expr - 1);
			s++;
		}
		if (nodes == 0)
			t->first = n;
		if ((nodes > 0 || r > 1) && n > t->most_rest)
			t->most_rest = n;
		nodes += r;
		tasks += (uint64_t)n * r;
		if (nodes > PSB_SLURM_NODES_MAX)
			return fail(err, errlen, -E2BIG, "more than %u nodes", PSB_SLURM_NODES_MAX);
		if (tasks > PSB_SLURM_TASKS_MAX)
			return fail(err, errlen, -E2BIG, "more than %u tasks", PSB_SLURM_TASKS_MAX);
		if (*s == '\0')
			break;
		if (*s != ',')
			return fail(err, errlen, -EINVAL, "%s at byte %td: expected ',' or the end",
				    show_char(*s, cb, sizeof(cb)), s - expr + 1);
		s++;
	}
	t->nodes = (uint32_t)nodes;
	t->tasks = (uint32_t)tasks;
	return 0;
}

/* The first of names that is set: its value into *v and its name into *which. */
static int
lookup(const char *const *names, psb_slurm_getenv_fn get, void *arg, const char **v,
       const char **which, char *err, size_t errlen)
{
	const char *const *n;

	for (n = names; *n != NULL; n++) {
		*v = get(*n, arg);
		if (*v == NULL)
			continue;
		*which = *n;
		if (strnlen(*v, PSB_SLURM_VALUE_MAX + 1) > PSB_SLURM_VALUE_MAX)
			return fail(err, errlen, -E2BIG, "%s: longer than %u bytes", *n,
				    PSB_SLURM_VALUE_MAX);
		return 0;
	}
	*which = names[0];
	if (names[1] == NULL)
		return fail(err, errlen, -ENOENT, "%s is not set", names[0]);
	return fail(err, errlen, -ENOENT, "%s (or %s) is not set", names[0], names[1]);
}

/* The first SHOW_MAX bytes of v for a message, "..." after them when there were more. */
static const char *
show(const char *v, char *buf, size_t len)
{
	snprintf(buf, len, "%.*s%s", SHOW_MAX, v, strlen(v) > SHOW_MAX ? "..." : "");
	return buf;
}

/* Slurm's numeric variables: each names the field it sets and the values it may take. */
struct num_var {
	const char *names[3];	/* the variable, and the older name Slurm also sets */
	size_t off;		/* its field in struct psb_slurm_step */
	uint32_t lo, hi;
	bool required;
};

static const struct num_var num_vars[] = {
	{ { "SLURM_PROCID", NULL }, offsetof(struct psb_slurm_step, procid),
	  0, PSB_SLURM_TASKS_MAX - 1, true },
	{ { "SLURM_NTASKS", "SLURM_NPROCS", NULL }, offsetof(struct psb_slurm_step, ntasks),
	  1, PSB_SLURM_TASKS_MAX, true },
	{ { "SLURM_JOB_ID", "SLURM_JOBID", NULL }, offsetof(struct psb_slurm_step, jobid),
	  0, UINT32_MAX, true },
	{ { "SLURM_STEP_ID", "SLURM_STEPID", NULL }, offsetof(struct psb_slurm_step, stepid),
	  0, UINT32_MAX, false },
	{ { "SLURM_NODEID", NULL }, offsetof(struct psb_slurm_step, nodeid),
	  0, PSB_SLURM_NODES_MAX - 1, false },
	{ { "SLURM_LOCALID", NULL }, offsetof(struct psb_slurm_step, localid),
	  0, PSB_SLURM_TASKS_MAX - 1, false },
};

static int
read_num(const struct num_var *nv, struct psb_slurm_step *s, psb_slurm_getenv_fn get,
	 void *arg, char *err, size_t errlen)
{
	const char *v, *which, *p;
	uint64_t x = 0;
	char sb[SHOW_MAX + 8];
	int rc;

	rc = lookup(nv->names, get, arg, &v, &which, err, errlen);
	if (rc == -ENOENT && !nv->required)
		return 0;
	if (rc != 0)
		return rc;
	for (p = v; is_digit(*p) && p - v < 11; p++)
		x = x * 10 + (uint64_t)(*p - '0');
	if (p == v || *p != '\0' || x < nv->lo || x > nv->hi)
		return fail(err, errlen, -EINVAL, "%s '%s': not a number from %u to %u", which,
			    show(v, sb, sizeof(sb)), nv->lo, nv->hi);
	*(uint32_t *)(void *)((char *)s + nv->off) = (uint32_t)x;
	return 0;
}

static const char *const nodelist_vars[] = {
	"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST", NULL
};
static const char *const tpn_vars[] = {
	"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", NULL
};

int
psb_slurm_step_read(struct psb_slurm_step *s, psb_slurm_getenv_fn get, void *arg,
		char *err, size_t errlen)
{
	const char *nl, *tpn, *name;
	char why[160], sb[SHOW_MAX + 8];
	size_t i;
	int rc;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < sizeof(num_vars) / sizeof(num_vars[0]); i++) {
		rc = read_num(&num_vars[i], s, get, arg, err, errlen);
		if (rc != 0)
			return rc;
	}
	if (s->procid >= s->ntasks)
		return fail(err, errlen, -EINVAL, "SLURM_PROCID %u: not below SLURM_NTASKS %u",
			    s->procid, s->ntasks);

	rc = lookup(nodelist_vars, get, arg, &nl, &s->nodelist_var, err, errlen);
	if (rc != 0)
		return rc;
	rc = psb_slurm_hostlist_walk(nl, NULL, NULL, why, sizeof(why));
	if (rc < 0)
		return fail(err, errlen, rc, "%s '%s': %s", s->nodelist_var,
			    show(nl, sb, sizeof(sb)), why);
	s->nnodes = (uint32_t)rc;
	psb_slurm_hostlist_nth(nl, 0, s->first_host, sizeof(s->first_host), NULL, 0);
	if (s->nodeid >= s->nnodes)
		return fail(err, errlen, -EINVAL, "SLURM_NODEID %u: not below the %u node(s) of %s",
			    s->nodeid, s->nnodes, s->nodelist_var);

	rc = lookup(tpn_vars, get, arg, &tpn, &s->tpn_var, err, errlen);
	if (rc != 0)
		return rc;
	rc = psb_slurm_tpn_parse(tpn, &s->tpn, why, sizeof(why));
	if (rc < 0)
		return fail(err, errlen, rc, "%s '%s': %s", s->tpn_var, show(tpn, sb, sizeof(sb)),
			    why);
	/* a step's two, or a job's two, describe the same nodes (a step may use fewer) */
	if ((s->nodelist_var == nodelist_vars[0]) == (s->tpn_var == tpn_vars[0]) &&
	    s->tpn.nodes != s->nnodes)
		return fail(err, errlen, -EINVAL, "%s covers %u node(s), %s lists %u",
			    s->tpn_var, s->tpn.nodes, s->nodelist_var, s->nnodes);
	if (s->tpn_var == tpn_vars[0] && s->tpn.tasks != s->ntasks)
		return fail(err, errlen, -EINVAL, "%s '%s' is %u task(s), SLURM_NTASKS %u",
			    s->tpn_var, show(tpn, sb, sizeof(sb)), s->tpn.tasks, s->ntasks);

	name = get("SLURMD_NODENAME", arg);
	if (name == NULL)
		return psb_slurm_hostlist_nth(nl, s->nodeid, s->node_host, sizeof(s->node_host),
					      err, errlen);
	for (i = 0; name[i] != '\0' && i <= PSB_SLURM_HOST_MAX; i++)
		if (!is_host_char(name[i]))
			break;
	if (i == 0 || i > PSB_SLURM_HOST_MAX || name[i] != '\0')
		return fail(err, errlen, -EINVAL, "SLURMD_NODENAME '%s': not a host name of 1 to "
			    "%u letters, digits, '-', '.' or '_'", show(name, sb, sizeof(sb)),
			    PSB_SLURM_HOST_MAX);
	memcpy(s->node_host, name, i + 1);
	return 0;
}

int
psb_slurm_place(enum psb_slurm_kind kind, uint32_t procid, uint32_t ntasks, uint32_t servers,
		struct psb_slurm_place *p, char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	if (procid >= ntasks)
		return fail(err, errlen, -EINVAL, "task %u of %u", procid, ntasks);
	if (kind == PSB_SLURM_STALENESS) {
		if (ntasks < 2)
			return fail(err, errlen, -EINVAL, "staleness: %u task: the trainer and a "
				    "worker take 2 at least", ntasks);
		p->role = procid == 0 ? PSB_SLURM_TRAINER : PSB_SLURM_WORKER;
		p->rank = procid == 0 ? 0 : procid - 1;
		p->workers = ntasks - 1;
		return 0;
	}
	if (servers == 0)
		return fail(err, errlen, -EINVAL, "pushpull: 0 servers; at least 1");
	if ((uint64_t)servers + 2 > ntasks)
		return fail(err, errlen, -EINVAL, "pushpull: %u task(s): the scheduler and %u "
			    "server(s) leave no worker (%u tasks at least, or fewer servers)",
			    ntasks, servers, servers + 2);
	p->servers = servers;
	p->workers = ntasks - 1 - servers;
	if (procid == 0) {
		p->role = PSB_SLURM_SCHEDULER;
	} else if (procid <= servers) {
		p->role = PSB_SLURM_SERVER;
		p->rank = procid - 1;
	} else {
		p->role = PSB_SLURM_WORKER;
		p->rank = procid - 1 - servers;
	}
	return 0;
}

const char *
psb_slurm_role_name(enum psb_slurm_role r)
{
	static const char *const names[] = {
		[PSB_SLURM_SCHEDULER] = "scheduler",
		[PSB_SLURM_SERVER] = "server",
		[PSB_SLURM_WORKER] = "worker",
		[PSB_SLURM_TRAINER] = "trainer",
	};

	return (unsigned int)r < sizeof(names) / sizeof(names[0]) ? names[r] : "?";
}

uint16_t
psb_slurm_port(uint32_t jobid, uint32_t stepid)
{
	return (uint16_t)(10000 + ((uint64_t)jobid * 16 + stepid % 16) % 20000);
}
