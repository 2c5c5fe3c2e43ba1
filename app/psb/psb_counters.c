/* Counters of the whole process as one JSON object, for every export. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_ethdev.h>

#include "psb.h"
#include "psb_bench.h"
#include "psb_conf.h"
#include "psb_ctl.h"
#include "psb_report.h"
#include "psb_text.h"

/*
 * Extended statistics of a port: their names stay as long as the port's configuration,
 * so they are fetched once, not at every scrape. Under ctl_lock, as every reader is.
 */
static struct xstats_cache {
	uint16_t pid;
	unsigned int n, cap;
	struct rte_eth_xstat_name *names;
	struct rte_eth_xstat *vals;
} xs_cache[PSB_MAX_PORTS];

/* The line of psb_counters_append, kept: the main lcore writes one every few 100 ms. */
static struct psb_text file_line;

static int
xstats_read(struct xstats_cache *xc, uint16_t pid)
{
	int n, tries;

	if (xc->pid != pid) {
		xc->n = 0;
		xc->pid = pid;
	}
	for (tries = 0; tries < 2; tries++) {
		n = xc->cap != 0 ? rte_eth_xstats_get(pid, xc->vals, xc->cap) :
			rte_eth_xstats_get(pid, NULL, 0);
		if (n < 0)
			return n;
		if (n != 0 && (unsigned int)n == xc->n)
			return n;
		/* first read, or the set changed (NICs have hundreds): names anew */
		if ((unsigned int)n > xc->cap) {
			free(xc->names);
			free(xc->vals);
			xc->names = calloc((size_t)n, sizeof(*xc->names));
			xc->vals = calloc((size_t)n, sizeof(*xc->vals));
			xc->cap = xc->names != NULL && xc->vals != NULL ? (unsigned int)n : 0;
			if (xc->cap == 0)
				return -ENOMEM;
		}
		xc->n = 0;
		if (n == 0 || rte_eth_xstats_get_names(pid, xc->names, xc->cap) != n)
			return 0;
		xc->n = (unsigned int)n;
	}
	return 0;
}

static void
port_emit(struct psb_emit *e, struct psb_app *app, unsigned int i)
{
	struct xstats_cache *xc = &xs_cache[i];
	uint16_t pid = app->port_ids[i];
	char name[16];
	int n, k;

	snprintf(name, sizeof(name), "%u", pid);
	psb_emit_open(e, name);
	psb_report_port_emit(e, app, i);
	psb_emit_bool(e, "paused", app->port_paused[pid] != 0);
	psb_emit_open(e, "xstats");
	n = xstats_read(xc, pid);
	for (k = 0; k < n; k++)
		if (xc->vals[k].id < (uint64_t)n)
			psb_emit_int(e, xc->names[xc->vals[k].id].name,
				(json_int_t)xc->vals[k].value);
	psb_emit_close(e);
	psb_emit_close(e);
}

void
psb_counters_fini(void)
{
	unsigned int i;

	for (i = 0; i < RTE_DIM(xs_cache); i++) {
		free(xs_cache[i].names);
		free(xs_cache[i].vals);
		memset(&xs_cache[i], 0, sizeof(xs_cache[i]));
	}
	free(file_line.s);
	memset(&file_line, 0, sizeof(file_line));
}

/*
 * What the control plane cost: the main lcore's share is main_cycles / tsc_hz per second of
 * uptime, the telemetry threads' telemetry_cpu_ns / 1e9; yield_cycles is the time lcores
 * left their CPU to other threads. Then the limits clients hit (struct psb_cp_stats).
 */
#define CP_LIMIT(name, help) { #name, offsetof(struct psb_cp_stats, name), help }

const struct psb_cp_limit_desc psb_cp_limit_descs[] = {
	CP_LIMIT(throttled_passes,
		"Passes that served no client: their share of the main lcore was used"),
	CP_LIMIT(socket_deferred,
		"Passes that left control requests to the next: per-pass budget spent"),
	CP_LIMIT(socket_busy, "Control connections refused: node.ctl_clients reached"),
	CP_LIMIT(socket_too_large, "Control clients dropped: a request line over 64 KiB"),
	CP_LIMIT(socket_overflows,
		"Control clients dropped: replies not read over node.ctl_reply_max"),
	CP_LIMIT(socket_idle_closed,
		"Control clients dropped: no request for node.ctl_idle_timeout"),
	CP_LIMIT(file_refused, "Files not read: not a regular file, or over node.file_max"),
	CP_LIMIT(prometheus_timeouts,
		"HTTP connections closed: no whole request and reply in node.prometheus_timeout"),
	CP_LIMIT(prometheus_evicted, "HTTP connections closed to make room for a new one"),
	CP_LIMIT(file_rotations, "Counters files moved to FILE.1: --counters-max or "
		"output.counters_max reached"),
	CP_LIMIT(file_reopens, "Counters files opened again: their path was renamed or removed"),
	CP_LIMIT(prometheus_refused, "HTTP connections refused: all others were answering "
		"requests"),
	CP_LIMIT(prometheus_incomplete, "HTTP connections ended without a whole request: "
		"dropped, or refused as too long (node.prometheus_request_max) or malformed"),
	{ NULL, 0, NULL },
};

static void
control_emit(struct psb_emit *e, const struct psb_app *app)
{
	const struct psb_cp_limit_desc *d;
	uint64_t yields, ycyc;

	psb_lcores_yielded(&yields, &ycyc);
	psb_emit_open(e, "control");
	psb_emit_int(e, "main_cycles", (json_int_t)app->cp.main_cycles);
	psb_emit_int(e, "telemetry_cpu_ns",
		(json_int_t)__atomic_load_n(&app->cp.telemetry_cpu_ns, __ATOMIC_RELAXED));
	psb_emit_int(e, "tsc_hz", (json_int_t)rte_get_tsc_hz());
	psb_emit_int(e, "socket_requests", (json_int_t)app->cp.socket_requests);
	psb_emit_int(e, "telemetry_requests",
		(json_int_t)__atomic_load_n(&app->cp.telemetry_requests, __ATOMIC_RELAXED));
	psb_emit_int(e, "prometheus_requests", (json_int_t)app->cp.prometheus_requests);
	psb_emit_int(e, "file_lines", (json_int_t)app->cp.file_lines);
	psb_emit_int(e, "yields", (json_int_t)yields);
	psb_emit_int(e, "yield_cycles", (json_int_t)ycyc);
	for (d = psb_cp_limit_descs; d->name != NULL; d++)
		psb_emit_int(e, d->name, (json_int_t)*(const uint64_t *)((const char *)&app->cp +
									d->offset));
	psb_emit_close(e);
}

json_t *
psb_counters_control_json(const struct psb_app *app)
{
	struct psb_emit e;
	json_t *root, *c;

	psb_emit_tree(&e);
	psb_emit_open(&e, NULL);
	control_emit(&e, app);
	root = psb_emit_done(&e);
	c = json_incref(json_object_get(root, "control"));
	json_decref(root);
	return c;
}

static void
counters_emit(struct psb_emit *e, struct psb_app *app)
{
	static const char *const node_names[] = { "server", "worker", "scheduler" };
	char name[48], ip[16];
	uint16_t i;

	psb_ip_str(app->me.ip, ip);
	psb_emit_open(e, NULL);
	psb_emit_open(e, "node");
	psb_emit_str(e, "role", node_names[app->node_role]);
	psb_emit_str(e, "ip", ip);
	psb_emit_real(e, "uptime_s", (double)psb_now_ns(app) / 1e9);
	psb_emit_int(e, "lcores", app->nworker_lcores == 0 ? 1 : app->nworker_lcores);
	psb_emit_int(e, "roles", app->nroles);
	psb_emit_close(e);
	psb_emit_open(e, "ports");
	for (i = 0; i < app->nports; i++)
		port_emit(e, app, i);
	psb_emit_close(e);
	psb_emit_open(e, "roles");
	for (i = 0; i < app->nroles; i++) {
		const struct psb_role_inst *ri = &app->roles[i];
		const struct psb_counters *c = &ri->cnt;
		uint64_t cyc = c->busy_cycles + c->idle_cycles;

		snprintf(name, sizeof(name), "%s%d", ri->role->name, ri->idx);
		psb_emit_open(e, name);
		psb_report_counters_emit(e, c);
		psb_emit_int(e, "lcore", ri->lcore);
		psb_emit_real(e, "busy_pct", cyc != 0 ?
			100.0 * (double)c->busy_cycles / (double)cyc : 0.0);
		psb_emit_close(e);
	}
	psb_emit_close(e);
	/* not value_sum: it reads the whole store, far too much for a 10 Hz scrape */
	if (app->node_role == PSB_NODE_SERVER)
		psb_emit_json(e, "store", psb_report_store_json(app, false));
	if (app->host_sched)
		psb_emit_json(e, "scheduler", psb_report_sched_json(app));
	control_emit(e, app);
	psb_run_emit(e, app, "experiment", 1);
	psb_emit_close(e);
}

json_t *
psb_counters_json(struct psb_app *app)
{
	struct psb_emit e;

	psb_emit_tree(&e);
	counters_emit(&e, app);
	return psb_emit_done(&e);
}

int
psb_counters_text(struct psb_app *app, struct psb_text *t)
{
	struct psb_emit e;

	psb_emit_text(&e, t);
	counters_emit(&e, app);
	psb_emit_done(&e);
	return e.oom || t->oom ? -ENOMEM : 0;
}

json_t *
psb_counters_get(json_t *all, const char *path, char *err, size_t errlen)
{
	char key[128];
	const char *p = path, *dot;
	json_t *cur = all;
	size_t len;

	if (path == NULL || *path == '\0')
		return json_incref(all);
	for (;;) {
		dot = strchr(p, '.');
		len = dot != NULL ? (size_t)(dot - p) : strlen(p);
		if (len >= sizeof(key))
			len = sizeof(key) - 1;
		memcpy(key, p, len);
		key[len] = '\0';
		cur = json_is_object(cur) ? json_object_get(cur, key) : NULL;
		if (cur == NULL) {
			snprintf(err, errlen, "no counters at \"%s\" (\"%s\" not found; top level: "
				 "node, ports, roles, store, control, experiment)", path, key);
			return NULL;
		}
		if (dot == NULL)
			break;
		p = dot + 1;
	}
	return json_incref(cur);
}

int
psb_counters_append(struct psb_app *app, struct psb_logfile *lf)
{
	uint64_t reopens = lf->reopens, rotations = lf->rotations;
	struct timespec ts;
	int rc;

	clock_gettime(CLOCK_REALTIME, &ts);
	file_line.len = 0;
	file_line.oom = 0;
	psb_text_printf(&file_line, "{\"time\":%.6f,\"counters\":",
		(double)ts.tv_sec + ts.tv_nsec / 1e9);
	pthread_mutex_lock(&app->ctl_lock);
	rc = psb_counters_text(app, &file_line);
	pthread_mutex_unlock(&app->ctl_lock);
	psb_text_append(&file_line, "}\n", 2);
	if (rc != 0 || file_line.oom)
		return -ENOMEM;
	rc = psb_logfile_write(lf, file_line.s, file_line.len);
	app->cp.file_reopens += lf->reopens - reopens;
	app->cp.file_rotations += lf->rotations - rotations;
	app->cp.file_lines++;
	return rc;
}

void
psb_counters_file_log(struct psb_app *app, const char *what, const char *path,
		uint64_t every_ns, uint64_t max, const char *knob)
{
	char every[40], size[40];

	psb_conf_format_duration(every, sizeof(every), every_ns);
	psb_conf_format_size(size, sizeof(size), max);
	if (max != 0)
		PSB_LOG(app, "%s %s: a line every %s; moved to %s.1 at %s (%s), opened again if "
			"renamed or removed", what, path, every, path, size, knob);
	else
		PSB_LOG(app, "%s %s: a line every %s; never rotated (%s 0), opened again if "
			"renamed or removed", what, path, every, knob);
}
