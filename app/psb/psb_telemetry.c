/* DPDK telemetry /psb/...: one endpoint per section of the counters, filled from a snapshot. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_telemetry.h>

#include "psb_app.h"
#include "psb_clock.h"
#include "psb_counters.h"
#include "psb_ctl.h"
#include "psb_report.h"
#include "psb_verbs.h"

/*
 * A reply of DPDK 22.11 telemetry is at most 16 KB (MAX_OUTPUT_LEN of lib/telemetry), a dict
 * at most RTE_TEL_MAX_DICT_ENTRIES (256) entries, an array 512: what goes beyond is dropped
 * without a word. So every endpoint is bounded by the tables, for any configuration psb
 * takes (PSB_MAX_PORTS 8 ports, PSB_MAX_ROLES 52 role instances), counting 20 digits a
 * number, 24 bytes a real and 256 a string (telemetry keeps 127 bytes of it, and escapes
 * take two):
 *
 *   /psb/node         3 figures, role and ip: < 0.7 KB
 *   /psb/ports        8 x (14 figures, port and spec < 0.8 KB): < 6 KB
 *   /psb/ports,ID     the port's figures < 0.8 KB, then as many xstats as the rest of
 *                     TEL_BUDGET and a dict hold: a NIC may have more (xstats_left_out)
 *   /psb/roles        52 names of 31 bytes, totals of 21 figures: < 3 KB
 *   /psb/roles,NAME   23 figures (drops: 14 reasons): < 1.2 KB
 *   /psb/store        29 figures (3 of them by label: 19 labels), 6 limits: < 1.8 KB
 *   /psb/scheduler    10 figures: < 0.4 KB
 *   /psb/control      22 figures: < 0.9 KB
 *   /psb/experiment   6 strings, 33 figures (histograms of 21 and 15 bounds): < 3.8 KB
 *   /psb/status       node, and experiment without histograms: < 3.3 KB
 *   /psb/passthrough  22 figures (3 by label: 16 labels): < 1.4 KB
 *   /psb/roce_qp,N    N queue pairs of < 0.8 KB: as many as fit TEL_BUDGET ("shown")
 *   /psb/rdma         what rdma-core sees: measured, and refused whole over TEL_BUDGET
 *                     (16 devices of 4 ports of 16 GIDs would take some 100 KB)
 *
 * and no dict but xstats has more than 30 entries. The generic /psb/counters,PATH measures
 * its part first and refuses what does not fit (32 workers' roles), naming the endpoints to
 * ask instead. The rest of the 16 KB is for the command's name and the reply's frame.
 */
#define TEL_MAX_OUTPUT		(16 * 1024)
#define TEL_BUDGET		(TEL_MAX_OUTPUT - 512)

/*
 * Telemetry callbacks cannot be unregistered and run on DPDK's threads: they reach the app
 * through tel_app, which fini clears under tel_lock before the ports go away.
 */
static pthread_mutex_t tel_lock = PTHREAD_MUTEX_INITIALIZER;
static struct psb_app *tel_app;
static int tel_registered;

/* Dictionary names of telemetry take letters, digits, '_' and '/' only: "0.5" is "0_5". */
static void
tel_name(char *dst, size_t len, const char *src)
{
	size_t i;

	for (i = 0; i + 1 < len && src[i] != '\0'; i++)
		dst[i] = isalnum((unsigned char)src[i]) || src[i] == '/' ? src[i] : '_';
	dst[i] = '\0';
}

static size_t
tel_digits(uint64_t u)
{
	size_t n = 1;

	while (u >= 10) {
		u /= 10;
		n++;
	}
	return n;
}

/*
 * Bytes of a string in a reply: telemetry keeps 127 bytes of it, escapes '"', '\\', \n, \r
 * and \t with a backslash and drops other control characters.
 */
static size_t
tel_str_size(const char *s)
{
	size_t n = 2, i;

	for (i = 0; i + 1 < RTE_TEL_MAX_STRING_LEN && s[i] != '\0'; i++) {
		if (s[i] == '"' || s[i] == '\\' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')
			n += 2;
		else if ((unsigned char)s[i] >= 0x20)
			n++;
	}
	return n;
}

/*
 * Entries of a dict. Each returns the bytes it added to the reply ("key":value and a
 * comma), 0 if it could not: the dict was full or memory ran out, and the entry is left
 * out rather than failing the reply.
 */
static size_t
tel_key(char *name, const char *key)
{
	tel_name(name, RTE_TEL_MAX_STRING_LEN, key);
	return strlen(name) + 4;
}

static size_t
tel_u64(struct rte_tel_data *d, const char *key, uint64_t v)
{
	char name[RTE_TEL_MAX_STRING_LEN];
	size_t n = tel_key(name, key);

	return rte_tel_data_add_dict_u64(d, name, v) == 0 ? n + tel_digits(v) : 0;
}

static size_t
tel_int(struct rte_tel_data *d, const char *key, int v)
{
	char name[RTE_TEL_MAX_STRING_LEN];
	size_t n = tel_key(name, key);

	return rte_tel_data_add_dict_int(d, name, v) == 0 ?
		n + tel_digits((uint64_t)(v < 0 ? -(int64_t)v : v)) + (v < 0) : 0;
}

static size_t
tel_str(struct rte_tel_data *d, const char *key, const char *v)
{
	char name[RTE_TEL_MAX_STRING_LEN];
	size_t n = tel_key(name, key);

	/* a string cut at 127 bytes is added all the same (E2BIG, positive) */
	return rte_tel_data_add_dict_string(d, name, v) >= 0 ? n + tel_str_size(v) : 0;
}

/* Reals as strings (22.11 has no float type), as "%.15g"; not finite: left out. */
static size_t
tel_real(struct rte_tel_data *d, const char *key, double v)
{
	char buf[32];

	if (!isfinite(v))
		return 0;
	snprintf(buf, sizeof(buf), "%.15g", v);
	return tel_str(d, key, buf);
}

/* A dict as the entry key of d, to be filled; its bytes so far go to *used. NULL: left out. */
static struct rte_tel_data *
tel_dict(struct rte_tel_data *d, const char *key, size_t *used)
{
	char name[RTE_TEL_MAX_STRING_LEN];
	struct rte_tel_data *c = rte_tel_data_alloc();
	size_t n = tel_key(name, key);

	if (c == NULL)
		return NULL;
	rte_tel_data_start_dict(c);
	if (rte_tel_data_add_dict_container(d, name, c, 0) != 0) {
		rte_tel_data_free(c);
		return NULL;
	}
	*used += n + 2;
	return c;
}

static int
tel_error(struct rte_tel_data *d, const char *msg)
{
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "error", msg);
	return 0;
}

/* Element k of figure m: integers as u64, reals as strings, booleans 0/1. */
static size_t
tel_figure(struct rte_tel_data *d, const char *key, const struct psb_metric *m, const void *base,
		unsigned int k)
{
	uint32_t ip;
	char buf[16];

	switch (m->type) {
	case PSB_MT_IPV4:
		ip = psb_metric_u64(m, base, k) & UINT32_MAX;
		return ip != 0 ? tel_str(d, key, psb_metric_ipv4_str(ip, buf)) : 0;
	case PSB_MT_DBL:
		return tel_real(d, key, psb_metric_value(m, base, k));
	case PSB_MT_BOOL:
		return tel_u64(d, key, psb_metric_value(m, base, k) != 0);
	default:
		return tel_u64(d, key, psb_metric_u64(m, base, k));
	}
}

/* As psb_metric_hist_emit: {"le": {bound: count, ..., "_Inf": all}, "count": all, "sum"}. */
static size_t
tel_hist(struct rte_tel_data *d, const char *key, const struct psb_hist *h,
		const struct psb_metric_bounds *b)
{
	struct rte_tel_data *c, *le;
	uint64_t cum[32], total;
	size_t used = 0;
	unsigned int i;

	if (b->n > RTE_DIM(cum))
		return 0;
	total = psb_hist_cumulative(h, b->le, b->n, cum);
	c = tel_dict(d, key, &used);
	if (c == NULL)
		return used;
	le = tel_dict(c, "le", &used);
	for (i = 0; le != NULL && i < b->n; i++)
		used += tel_u64(le, b->names[i], cum[i]);
	if (le != NULL)
		used += tel_u64(le, "+Inf", total);
	used += tel_u64(c, "count", total);
	return used + tel_real(c, "sum", h->sum / b->div);
}

/*
 * The figures of the block at base as entries of d, as psb_metric_emit writes them: arrays
 * as dicts by label, histograms and groups as dicts; detail 0: histograms left out.
 */
static size_t
tel_block(struct rte_tel_data *d, const struct psb_metric_block *b, const void *base, int detail)
{
	const struct psb_metric *m;
	struct rte_tel_data *c;
	size_t used = 0;
	unsigned int k;

	for (m = b->m; m < b->m + b->n; m++) {
		const void *f = (const char *)base + m->off;

		if (!psb_metric_present(m, base) || (m->detail && !detail))
			continue;
		if (m->type == PSB_MT_HIST) {
			used += tel_hist(d, m->name, f, m->bounds);
		} else if (m->type == PSB_MT_BLOCK && m->name[0] == '\0') {
			used += tel_block(d, m->sub, f, detail);
		} else if (m->type == PSB_MT_BLOCK) {
			c = tel_dict(d, m->name, &used);
			if (c != NULL)
				used += tel_block(c, m->sub, f, detail);
		} else if (m->n > 1) {
			c = tel_dict(d, m->name, &used);
			for (k = m->first; c != NULL && k < m->n; k++)
				used += tel_figure(c, m->label_of(k), m, base, k);
		} else {
			used += tel_figure(d, m->name, m, base, 0);
		}
	}
	return used;
}

static size_t
tel_node(struct rte_tel_data *d, const struct psb_node_snap *n)
{
	return tel_str(d, "role", n->role) + tel_str(d, "ip", n->ip) +
		tel_block(d, &psb_node_block, n, 1);
}

/* A port's table figures, without its xstats. */
static size_t
tel_port(struct rte_tel_data *d, const struct psb_port_snap *p)
{
	return tel_u64(d, "port", p->port) + tel_str(d, "spec", p->spec) +
		tel_block(d, &psb_port_block, p, 1);
}

/* As psb_snap_exp_emit. */
static size_t
tel_exp(struct rte_tel_data *d, const struct psb_exp_snap *x, int detail)
{
	struct rte_tel_data *c;
	size_t used;

	used = tel_u64(d, "id", x->id) + tel_str(d, "name", x->name) +
		tel_str(d, "kind", x->kind) + tel_str(d, "state", x->state) +
		tel_real(d, "elapsed_s", x->elapsed_s);
	if (x->id != 0 && x->results[0] != '\0')
		used += tel_str(d, "results", x->results);
	if (x->id != 0 && x->error[0] != '\0')
		used += tel_str(d, "error", x->error);
	if (x->has_pp) {
		c = tel_dict(d, "pushpull", &used);
		if (c != NULL)
			used += tel_block(c, &psb_pp_block, &x->pp, detail);
	}
	if (x->has_stale) {
		c = tel_dict(d, "staleness", &used);
		if (c != NULL)
			used += tel_block(c, &psb_stale_block, &x->stale, detail);
	}
	if (x->has_trainer) {
		c = tel_dict(d, "trainer", &used);
		if (c != NULL)
			used += tel_block(c, &psb_trainer_block, &x->trainer, detail);
	}
	if (x->has_serve) {
		c = tel_dict(d, "serve", &used);
		if (c != NULL)
			used += tel_str(c, "shard", x->serve.shard) +
				tel_block(c, &psb_serve_block, &x->serve, detail);
	}
	return used;
}

/*
 * The generic lookup, /psb/counters,PATH: what the JSON of the counters has at a dotted
 * path, built from that JSON. Values as the section endpoints give them: integers u64
 * (int when negative, strings beyond), reals strings, booleans 0/1, arrays dicts by index.
 */
static int
tel_scalar(const json_t *v, char *buf, size_t len, uint64_t *u, int *i)
{
	json_int_t iv;

	switch (json_typeof(v)) {
	case JSON_INTEGER:
		iv = json_integer_value(v);
		if (iv >= 0) {
			*u = (uint64_t)iv;
			return 'u';
		}
		if (iv >= INT_MIN) {
			*i = (int)iv;
			return 'i';
		}
		snprintf(buf, len, "%" JSON_INTEGER_FORMAT, iv);
		return 's';
	case JSON_REAL:
		snprintf(buf, len, "%.15g", json_real_value(v));
		return 's';
	case JSON_TRUE:
	case JSON_FALSE:
		*u = json_is_true(v);
		return 'u';
	default:
		return 0;
	}
}

/* n and an entry of key bytes and a value of x bytes; SIZE_MAX stays. */
static size_t
tel_sum(size_t n, size_t key, size_t x)
{
	return n == SIZE_MAX || x == SIZE_MAX ? SIZE_MAX : n + key + 4 + x;
}

/* Bytes of v in a reply; SIZE_MAX if a dict would take more entries than telemetry's hold. */
static size_t
tel_size(const json_t *v)
{
	char buf[RTE_TEL_MAX_STRING_LEN];
	size_t n = 2, k;
	const char *key;
	json_t *e;
	uint64_t u;
	int i;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		if (json_object_size(v) > RTE_TEL_MAX_DICT_ENTRIES)
			return SIZE_MAX;
		json_object_foreach((json_t *)v, key, e)
			n = tel_sum(n, strlen(key), tel_size(e));
		return n;
	case JSON_ARRAY:
		if (json_array_size(v) > RTE_TEL_MAX_DICT_ENTRIES)
			return SIZE_MAX;
		json_array_foreach(v, k, e)
			n = tel_sum(n, tel_digits(k), tel_size(e));
		return n;
	case JSON_STRING:
		return tel_str_size(json_string_value(v));
	default:
		switch (tel_scalar(v, buf, sizeof(buf), &u, &i)) {
		case 'u':
			return tel_digits(u);
		case 'i':
			return tel_digits((uint64_t)-(int64_t)i) + 1;
		case 's':
			return strlen(buf) + 2;
		default:
			return 0;
		}
	}
}

static void tel_fill(struct rte_tel_data *d, json_t *o);

static void
tel_fill_entry(struct rte_tel_data *d, const char *key, json_t *v)
{
	char buf[RTE_TEL_MAX_STRING_LEN];
	struct rte_tel_data *c;
	size_t used = 0;
	uint64_t u;
	int i;

	if (json_is_object(v) || json_is_array(v)) {
		c = tel_dict(d, key, &used);
		if (c != NULL)
			tel_fill(c, v);
		return;
	}
	if (json_is_string(v)) {
		tel_str(d, key, json_string_value(v));
		return;
	}
	switch (tel_scalar(v, buf, sizeof(buf), &u, &i)) {
	case 'u':
		tel_u64(d, key, u);
		break;
	case 'i':
		tel_int(d, key, i);
		break;
	case 's':
		tel_str(d, key, buf);
		break;
	default:
		break;
	}
}

/* d, started as a dict, from o, an object or an array. */
static void
tel_fill(struct rte_tel_data *d, json_t *o)
{
	char idx[24];
	const char *key;
	json_t *v;
	size_t i;

	if (json_is_array(o)) {
		json_array_foreach(o, i, v) {
			snprintf(idx, sizeof(idx), "%zu", i);
			tel_fill_entry(d, idx, v);
		}
		return;
	}
	json_object_foreach(o, key, v)
		tel_fill_entry(d, key, v);
}

/* The endpoints to ask for a part at path too big for a reply. */
static void
tel_narrower(char *dst, size_t len, const char *path)
{
	if (strcmp(path, "roles") == 0)
		snprintf(dst, len, "/psb/roles,NAME (names: /psb/roles)");
	else if (strcmp(path, "ports") == 0)
		snprintf(dst, len, "/psb/ports, or /psb/ports,ID for xstats");
	else if (strncmp(path, "ports.", 6) == 0)
		snprintf(dst, len, "/psb/ports,%.*s", (int)strcspn(path + 6, "."), path + 6);
	else
		snprintf(dst, len, "a narrower path");
}

/*
 * Measured before it is built: a part too big for one reply is refused, with the endpoints
 * that give it in pieces, rather than cut.
 */
static int
tel_path(struct rte_tel_data *d, struct psb_app *app, const struct psb_snap *s, const char *path)
{
	char err[256], ask[64];
	struct psb_emit e;
	json_t *all, *sel;
	size_t size;

	psb_emit_tree(&e);
	pthread_mutex_lock(&app->ctl_lock);	/* xstats are read under it */
	psb_snap_emit(&e, app, s);
	pthread_mutex_unlock(&app->ctl_lock);
	all = psb_emit_done(&e);
	if (all == NULL)
		return tel_error(d, "out of memory");
	sel = psb_counters_get(all, path, err, sizeof(err));
	json_decref(all);
	if (sel == NULL)
		return tel_error(d, err);
	if (!json_is_object(sel)) {
		/* a single value: as {leaf: value}, replies are dicts */
		const char *leaf = strrchr(path, '.');

		all = json_object();
		json_object_set_new(all, leaf != NULL ? leaf + 1 : path, sel);
		sel = all;
	}
	size = tel_size(sel);
	if (size > TEL_BUDGET) {
		tel_narrower(ask, sizeof(ask), path);
		if (size == SIZE_MAX)
			snprintf(err, sizeof(err), "%.32s: over %d entries, more than a telemetry "
				 "reply holds; ask %s", path, RTE_TEL_MAX_DICT_ENTRIES, ask);
		else
			snprintf(err, sizeof(err), "%.32s: %zu bytes, over the 16 KB of a "
				 "telemetry reply; ask %s", path, size, ask);
		json_decref(sel);
		return tel_error(d, err);
	}
	rte_tel_data_start_dict(d);
	tel_fill(d, sel);
	json_decref(sel);
	return 0;
}

/* /psb/SECTION,PATH: the generic lookup of SECTION.PATH. */
static int
tel_narrow(struct rte_tel_data *d, struct psb_app *app, const struct psb_snap *s,
		const char *section, const char *param)
{
	char path[320];	/* a section's name, a dot and a parameter of up to 255 bytes */

	snprintf(path, sizeof(path), "%s.%s", section, param);
	return tel_path(d, app, s, path);
}

/* A command's reply from the snapshot s; param "" when none. */
typedef int (*tel_fill_t)(struct rte_tel_data *d, struct psb_app *app, const struct psb_snap *s,
		const char *param);

/*
 * The xstats of port p after its figures (used bytes so far), as many as the reply holds:
 * a NIC may have hundreds, over 16 KB or the entries of a dict. Those left out are counted.
 */
static void
tel_xstats(struct rte_tel_data *d, struct psb_app *app, const struct psb_port_snap *p,
		size_t used)
{
	const struct rte_eth_xstat_name *names;
	const struct rte_eth_xstat *vals;
	char name[RTE_TEL_MAX_STRING_LEN];
	unsigned int shown = 0, left = 0;
	struct rte_tel_data *x;
	size_t need;
	int n, k;

	/* room for the count of those left out, should there be any */
	used += strlen("xstats_left_out") + 4 + tel_digits(UINT_MAX);
	x = tel_dict(d, "xstats", &used);
	pthread_mutex_lock(&app->ctl_lock);
	n = psb_port_xstats(app, p->idx, &names, &vals);
	for (k = 0; k < n; k++) {
		if (vals[k].id >= (uint64_t)n)
			continue;
		need = tel_key(name, names[vals[k].id].name) + tel_digits(vals[k].value);
		if (x == NULL || left != 0 || shown == RTE_TEL_MAX_DICT_ENTRIES ||
		    used + need > TEL_BUDGET) {
			left++;
			continue;
		}
		used += tel_u64(x, name, vals[k].value);
		shown++;
	}
	pthread_mutex_unlock(&app->ctl_lock);
	if (left != 0)
		tel_u64(d, "xstats_left_out", left);
}

static int
tel_cmd_ports(struct rte_tel_data *d, struct psb_app *app, const struct psb_snap *s,
		const char *param)
{
	struct rte_tel_data *c;
	char key[16], err[96];
	unsigned long id;
	size_t used = 0;
	unsigned int i;
	char *end;

	if (*param == '\0') {
		rte_tel_data_start_dict(d);
		for (i = 0; i < s->nports; i++) {
			snprintf(key, sizeof(key), "%u", (unsigned int)s->ports[i].port);
			c = tel_dict(d, key, &used);
			if (c != NULL)
				tel_port(c, &s->ports[i]);
		}
		return 0;
	}
	if (!isdigit((unsigned char)*param))
		return tel_narrow(d, app, s, "ports", param);
	id = strtoul(param, &end, 10);
	if (*end == '.')
		return tel_narrow(d, app, s, "ports", param);
	for (i = 0; *end == '\0' && i < s->nports; i++) {
		if (s->ports[i].port != id)
			continue;
		rte_tel_data_start_dict(d);
		tel_xstats(d, app, &s->ports[i], tel_port(d, &s->ports[i]));
		return 0;
	}
	snprintf(err, sizeof(err), "no port %.24s (/psb/ports lists them)", param);
	return tel_error(d, err);
}

static int
tel_cmd_roles(struct rte_tel_data *d, struct psb_app *app, const struct psb_snap *s,
		const char *param)
{
	struct psb_metric_block b;
	struct psb_counters tot;
	struct rte_tel_data *c;
	size_t used = 0;
	unsigned int i;
	char err[96];

	if (strchr(param, '.') != NULL)
		return tel_narrow(d, app, s, "roles", param);
	for (i = 0; *param != '\0' && i < s->nroles; i++) {
		if (strcmp(s->roles[i].name, param) != 0)
			continue;
		rte_tel_data_start_dict(d);
		tel_block(d, &psb_role_block, &s->roles[i], 1);
		return 0;
	}
	if (*param != '\0') {
		snprintf(err, sizeof(err), "no role instance %.32s (/psb/roles lists them)", param);
		return tel_error(d, err);
	}
	/* the index: instance names, and the totals as the end-of-run report adds them */
	rte_tel_data_start_dict(d);
	c = rte_tel_data_alloc();
	if (c != NULL) {
		rte_tel_data_start_array(c, RTE_TEL_STRING_VAL);
		for (i = 0; i < s->nroles; i++)
			rte_tel_data_add_array_string(c, s->roles[i].name);
		if (rte_tel_data_add_dict_container(d, "instances", c, 0) != 0)
			rte_tel_data_free(c);
	}
	psb_snap_totals(s, &tot);
	psb_report_counters_block(&b);	/* its offsets are those of struct psb_counters */
	c = tel_dict(d, "totals", &used);
	if (c != NULL)
		tel_block(c, &b, &tot, 1);
	return 0;
}

/* /psb/SECTION without a path: the section whole, in full detail. */
static void
tel_node_whole(struct rte_tel_data *d, const struct psb_snap *s)
{
	tel_node(d, &s->node);
}

static void
tel_exp_whole(struct rte_tel_data *d, const struct psb_snap *s)
{
	tel_exp(d, &s->exp, 1);
}

static int
tel_cmd_status(struct rte_tel_data *d, struct psb_app *app, const struct psb_snap *s,
		const char *param)
{
	struct rte_tel_data *c;
	size_t used = 0;

	RTE_SET_USED(app);
	RTE_SET_USED(param);
	rte_tel_data_start_dict(d);
	c = tel_dict(d, "node", &used);
	if (c != NULL)
		tel_node(c, &s->node);
	c = tel_dict(d, "experiment", &used);
	if (c != NULL)
		tel_exp(c, &s->exp, 0);
	return 0;
}

/*
 * /psb/rdma: the rdma command's JSON, filled as the generic lookup fills a part; a host with
 * more GIDs than a reply holds is refused whole rather than cut, naming where to look.
 */
static int
tel_cmd_rdma(struct rte_tel_data *d, struct psb_app *app, const struct psb_snap *s,
		const char *param)
{
	json_t *o = psb_verbs_query_json();

	RTE_SET_USED(app);
	RTE_SET_USED(s);
	RTE_SET_USED(param);
	if (o == NULL)
		return tel_error(d, "out of memory");
	if (tel_size(o) > TEL_BUDGET) {
		json_decref(o);
		return tel_error(d, "RDMA devices take more than the 16 KB of a reply: psbctl rdma "
				 "gives them all");
	}
	rte_tel_data_start_dict(d);
	tel_fill(d, o);
	json_decref(o);
	return 0;
}

/*
 * The passthrough's queue pairs, most packets first: as many as the parameter says (16 if
 * none) and as fit a reply; "shown" says how many did, "tracked" how many there are.
 */
static int
tel_cmd_roce_qp(struct rte_tel_data *d, struct psb_app *app, const struct psb_snap *s,
		const char *param)
{
	unsigned long max = 16;
	char *end;
	json_t *o, *qps;

	RTE_SET_USED(s);
	if (*param != '\0') {
		errno = 0;
		max = strtoul(param, &end, 10);
		if (*end != '\0' || errno != 0 || max > 1u << 20)
			return tel_error(d, "expected a number of queue pairs");
	}
	if (!app->has_exc)
		return tel_error(d, "no passthrough: this node has no exception port (--exception)");
	o = psb_roce_qp_reply(app, (uint32_t)max);
	if (o == NULL)
		return tel_error(d, "the passthrough's figures kept changing: ask again");
	qps = json_object_get(o, "qps");
	while (json_array_size(qps) != 0 && tel_size(o) > TEL_BUDGET)
		json_array_remove(qps, json_array_size(qps) - 1);
	json_object_set_new(o, "shown", json_integer((json_int_t)json_array_size(qps)));
	rte_tel_data_start_dict(d);
	tel_fill(d, o);
	json_decref(o);
	return 0;
}

static int tel_cmd_counters(struct rte_tel_data *d, struct psb_app *app,
		const struct psb_snap *s, const char *param);

/* Where a section is only on some nodes: this flag of the snapshot (offset + 1; 0: always). */
#define TEL_HAS(f)	(offsetof(struct psb_snap, f) + 1)

/*
 * An endpoint: its own fill, or a section of the counters, which gives its part of the
 * generic lookup with a path and otherwise the section whole: its counter block at offset
 * off of the snapshot, or what whole puts in.
 */
static const struct tel_cmd {
	const char *cmd;
	tel_fill_t fill;
	const char *section;	/* in the /psb/counters index: a section of the counters */
	void (*whole)(struct rte_tel_data *d, const struct psb_snap *s);
	const struct psb_metric_block *block;
	size_t off;
	size_t has;		/* TEL_HAS */
	const char *absent;	/* the error when the node lacks it, with the node's role */
	const char *help;	/* under 64 bytes (MAX_HELP_LEN) */
	unsigned int parts;	/* of the snapshot it reads (PSB_SNAP_*; the node's always) */
} tel_cmds[] = {
	{ .cmd = "/psb/status", .fill = tel_cmd_status, .parts = PSB_SNAP_EXP,
	  .help = "Returns psb node and experiment. Takes no parameters" },
	{ .cmd = "/psb/counters", .fill = tel_cmd_counters, .parts = PSB_SNAP_ALL,
	  .help = "Returns psb counters index. Parameters: string dotted path" },
	{ .cmd = "/psb/node", .section = "node", .whole = tel_node_whole,
	  .help = "Returns psb node: role, ip, uptime. Parameters: string path" },
	{ .cmd = "/psb/ports", .fill = tel_cmd_ports, .section = "ports",
	  .parts = PSB_SNAP_PORTS,
	  .help = "Returns psb port stats. Parameters: int port id (xstats)" },
	{ .cmd = "/psb/roles", .fill = tel_cmd_roles, .section = "roles",
	  .parts = PSB_SNAP_ROLES,
	  .help = "Returns psb role names, totals. Parameters: string name (rx0)" },
	{ .cmd = "/psb/store", .section = "store", .block = &psb_store_block,
	  .off = offsetof(struct psb_snap, store), .has = TEL_HAS(has_store),
	  .parts = PSB_SNAP_STORE,
	  .absent = "no store: this node is a %s, only servers have one",
	  .help = "Returns psb store counters (servers). Parameters: string path" },
	{ .cmd = "/psb/scheduler", .section = "scheduler", .block = &psb_sched_block,
	  .off = offsetof(struct psb_snap, sched), .has = TEL_HAS(has_sched),
	  .parts = PSB_SNAP_SCHED,
	  .absent = "no scheduler: this %s does not host the job's (--scheduler)",
	  .help = "Returns psb scheduler counters. Parameters: string path" },
	{ .cmd = "/psb/control", .section = "control", .block = &psb_control_block,
	  .off = offsetof(struct psb_snap, control), .parts = PSB_SNAP_CONTROL,
	  .help = "Returns psb control-plane counters. Parameters: string path" },
	{ .cmd = "/psb/experiment", .section = "experiment", .whole = tel_exp_whole,
	  .parts = PSB_SNAP_EXP,
	  .help = "Returns psb experiment figures. Parameters: string path" },
	{ .cmd = "/psb/passthrough", .section = "passthrough", .block = &psb_pt_block,
	  .off = offsetof(struct psb_snap, pt), .has = TEL_HAS(has_pt),
	  .parts = PSB_SNAP_PT,
	  .absent = "no passthrough: this %s has no exception port (--exception)",
	  .help = "Returns psb passthrough and RoCE totals. Parameters: string path" },
	{ .cmd = "/psb/roce_qp", .fill = tel_cmd_roce_qp,
	  .help = "Returns RoCE queue pairs passed. Parameters: int how many (16)" },
	{ .cmd = "/psb/rdma", .fill = tel_cmd_rdma,
	  .help = "Returns RDMA devices, ports and GIDs. Takes no parameters" },
};

static bool
tel_snap_has(const struct psb_snap *s, const struct tel_cmd *tc)
{
	return tc->has == 0 || *((const uint8_t *)s + tc->has - 1) != 0;
}

static int
tel_section(struct rte_tel_data *d, struct psb_app *app, const struct psb_snap *s,
		const struct tel_cmd *tc, const char *param)
{
	char err[96];

	if (!tel_snap_has(s, tc)) {
		snprintf(err, sizeof(err), tc->absent, s->node.role);
		return tel_error(d, err);
	}
	if (*param != '\0')
		return tel_narrow(d, app, s, tc->section, param);
	rte_tel_data_start_dict(d);
	if (tc->block != NULL)
		tel_block(d, tc->block, (const char *)s + tc->off, 1);
	else
		tc->whole(d, s);
	return 0;
}

/*
 * /psb/counters: without a path, the index of the sections this node has and of the
 * parameters of the endpoints; with one, the generic lookup.
 */
static int
tel_cmd_counters(struct rte_tel_data *d, struct psb_app *app, const struct psb_snap *s,
		const char *param)
{
	struct rte_tel_data *c;
	size_t used = 0;
	unsigned int i;

	if (*param != '\0')
		return tel_path(d, app, s, param);
	rte_tel_data_start_dict(d);
	c = tel_dict(d, "sections", &used);
	for (i = 0; c != NULL && i < RTE_DIM(tel_cmds); i++) {
		const struct tel_cmd *tc = &tel_cmds[i];

		if (tc->section != NULL && tel_snap_has(s, tc))
			tel_str(c, tc->section, tc->cmd);
	}
	c = tel_dict(d, "parameters", &used);
	if (c != NULL) {
		tel_str(c, "/psb/ports", "ID: one port, with its xstats");
		tel_str(c, "/psb/roles", "NAME: one role instance (rx0)");
		tel_str(c, "/psb/counters", "PATH: the counters at a dotted path (roles.rx0.drops)");
	}
	return 0;
}

static int
tel_reply(const char *cmd, const char *params, struct rte_tel_data *d)
{
	const struct tel_cmd *tc = NULL;
	struct psb_snap *s;
	struct psb_app *app;
	char param[256];
	unsigned int i;
	int rc;

	for (i = 0; i < RTE_DIM(tel_cmds); i++)
		if (strcmp(cmd, tel_cmds[i].cmd) == 0)
			tc = &tel_cmds[i];
	if (tc == NULL)
		return -EINVAL;
	while (params != NULL && isspace((unsigned char)*params))
		params++;
	snprintf(param, sizeof(param), "%s", params != NULL ? params : "");
	param[strcspn(param, " \t\r\n")] = '\0';
	/* tel_lock held throughout: fini must not close the ports under a reply */
	pthread_mutex_lock(&tel_lock);
	app = tel_app;
	if (app == NULL) {
		pthread_mutex_unlock(&tel_lock);
		return tel_error(d, "psb is shutting down");
	}
	pthread_mutex_lock(&app->ctl_lock);
	s = psb_snap_take_parts(app, tc->parts);
	pthread_mutex_unlock(&app->ctl_lock);
	if (s == NULL)
		rc = tel_error(d, "out of memory");
	else if (tc->fill != NULL)
		rc = tc->fill(d, app, s, param);
	else
		rc = tel_section(d, app, s, tc, param);
	pthread_mutex_unlock(&tel_lock);
	free(s);
	return rc;
}

/*
 * Every /psb/ command; what it costs lands in the control-plane counters. The telemetry
 * thread shares a CPU with lcores, so its CPU time is counted, not the time it waited.
 */
static int
tel_cb(const char *cmd, const char *params, struct rte_tel_data *d)
{
	uint64_t t0 = psb_clock_read_ns(CLOCK_THREAD_CPUTIME_ID);
	struct psb_app *app;
	int rc = tel_reply(cmd, params, d);

	pthread_mutex_lock(&tel_lock);
	app = tel_app;
	if (app != NULL) {
		__atomic_fetch_add(&app->cp.telemetry_requests, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&app->cp.telemetry_cpu_ns,
				   psb_clock_read_ns(CLOCK_THREAD_CPUTIME_ID) - t0, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&tel_lock);
	return rc;
}

int
psb_telemetry_init(struct psb_app *app, char *err, size_t errlen)
{
	unsigned int i;
	int rc;

	pthread_mutex_lock(&tel_lock);
	tel_app = app;
	pthread_mutex_unlock(&tel_lock);
	if (tel_registered)
		return 0;
	for (i = 0; i < RTE_DIM(tel_cmds); i++) {
		rc = rte_telemetry_register_cmd(tel_cmds[i].cmd, tel_cb, tel_cmds[i].help);
		if (rc != 0) {
			snprintf(err, errlen, "telemetry: cannot register %s: %s", tel_cmds[i].cmd,
				strerror(rc < 0 ? -rc : rc));
			return rc < 0 ? rc : -rc;
		}
	}
	tel_registered = 1;
	return 0;
}

void
psb_telemetry_fini(void)
{
	pthread_mutex_lock(&tel_lock);
	tel_app = NULL;
	pthread_mutex_unlock(&tel_lock);
}
