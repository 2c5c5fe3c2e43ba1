/* Counters of the whole process as one JSON object, for every export. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_ethdev.h>

#include "psb.h"
#include "psb_bench.h"
#include "psb_ctl.h"
#include "psb_report.h"

static json_t *
port_json(const struct psb_app *app, unsigned int i)
{
	uint16_t pid = app->port_ids[i];
	struct rte_eth_xstat_name *names = NULL;
	struct rte_eth_xstat *xs = NULL;
	struct rte_eth_stats ps;
	json_t *o, *x;
	int n, k;

	if (rte_eth_stats_get(pid, &ps) != 0)
		memset(&ps, 0, sizeof(ps));
	o = json_pack("{s:i,s:s,s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "port", pid,
		"spec", app->specs[i].spec, "paused", app->port_paused[pid] != 0,
		"ipackets", (json_int_t)ps.ipackets, "opackets", (json_int_t)ps.opackets,
		"ibytes", (json_int_t)ps.ibytes, "obytes", (json_int_t)ps.obytes,
		"imissed", (json_int_t)ps.imissed, "ierrors", (json_int_t)ps.ierrors,
		"oerrors", (json_int_t)ps.oerrors, "rx_nombuf", (json_int_t)ps.rx_nombuf);
	if (o == NULL)
		return NULL;
	x = json_object();
	/* NICs have hundreds of xstats: ask how many first */
	n = rte_eth_xstats_get_names(pid, NULL, 0);
	if (n > 0) {
		names = calloc((size_t)n, sizeof(*names));
		xs = calloc((size_t)n, sizeof(*xs));
	}
	if (names != NULL && xs != NULL &&
	    rte_eth_xstats_get_names(pid, names, (unsigned int)n) == n &&
	    rte_eth_xstats_get(pid, xs, (unsigned int)n) == n)
		for (k = 0; k < n; k++)
			if (xs[k].id < (uint64_t)n)
				json_object_set_new(x, names[xs[k].id].name,
					json_integer((json_int_t)xs[k].value));
	free(names);
	free(xs);
	json_object_set_new(o, "xstats", x);
	return o;
}

/*
 * What the control plane cost: the main lcore's share is main_cycles / tsc_hz per second of
 * uptime, the telemetry threads' telemetry_cpu_ns / 1e9; yield_cycles is the time lcores
 * left their CPU to other threads.
 */
static json_t *
control_json(const struct psb_app *app)
{
	uint64_t yields, ycyc;

	psb_lcores_yielded(&yields, &ycyc);
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
		"main_cycles", (json_int_t)app->cp.main_cycles,
		"telemetry_cpu_ns", (json_int_t)__atomic_load_n(&app->cp.telemetry_cpu_ns,
							__ATOMIC_RELAXED),
		"tsc_hz", (json_int_t)rte_get_tsc_hz(),
		"socket_requests", (json_int_t)app->cp.socket_requests,
		"telemetry_requests", (json_int_t)__atomic_load_n(&app->cp.telemetry_requests,
							  __ATOMIC_RELAXED),
		"prometheus_requests", (json_int_t)app->cp.prometheus_requests,
		"file_lines", (json_int_t)app->cp.file_lines,
		"yields", (json_int_t)yields, "yield_cycles", (json_int_t)ycyc);
}

json_t *
psb_counters_json(struct psb_app *app)
{
	static const char *const node_names[] = { "server", "worker", "scheduler" };
	json_t *root = json_object(), *ports = json_object(), *roles = json_object(), *j;
	char name[48], ip[16];
	uint16_t i;

	psb_ip_str(app->me.ip, ip);
	json_object_set_new(root, "node", json_pack("{s:s,s:s,s:f,s:i,s:i}",
		"role", node_names[app->node_role], "ip", ip,
		"uptime_s", (double)psb_now_ns(app) / 1e9, "lcores",
		app->nworker_lcores == 0 ? 1 : app->nworker_lcores, "roles", app->nroles));
	for (i = 0; i < app->nports; i++) {
		snprintf(name, sizeof(name), "%u", app->port_ids[i]);
		j = port_json(app, i);
		if (j != NULL)
			json_object_set_new(ports, name, j);
	}
	json_object_set_new(root, "ports", ports);
	for (i = 0; i < app->nroles; i++) {
		const struct psb_role_inst *ri = &app->roles[i];
		const struct psb_counters *c = &ri->cnt;
		uint64_t cyc = c->busy_cycles + c->idle_cycles;

		j = psb_report_counters_json(c);
		if (j == NULL)
			continue;
		json_object_set_new(j, "lcore", json_integer(ri->lcore));
		json_object_set_new(j, "polls", json_integer((json_int_t)c->polls));
		json_object_set_new(j, "busy_pct", json_real(cyc != 0 ?
			100.0 * (double)c->busy_cycles / (double)cyc : 0.0));
		snprintf(name, sizeof(name), "%s%d", ri->role->name, ri->idx);
		json_object_set_new(roles, name, j);
	}
	json_object_set_new(root, "roles", roles);
	/* not value_sum: it reads the whole store, far too much for a 10 Hz scrape */
	if (app->node_role == PSB_NODE_SERVER)
		json_object_set_new(root, "store", psb_report_store_json(app, false));
	json_object_set_new(root, "control", control_json(app));
	j = psb_run_json(app, 1);
	if (j != NULL)
		json_object_set_new(root, "experiment", j);
	return root;
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
psb_counters_append(struct psb_app *app, FILE *f)
{
	struct timespec ts;
	json_t *line;
	char *text;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	pthread_mutex_lock(&app->ctl_lock);
	line = json_pack("{s:f,s:o}", "time", ts.tv_sec + ts.tv_nsec / 1e9,
		"counters", psb_counters_json(app));
	pthread_mutex_unlock(&app->ctl_lock);
	text = line != NULL ? json_dumps(line, JSON_COMPACT) : NULL;
	json_decref(line);
	if (text == NULL)
		return -ENOMEM;
	if (fputs(text, f) < 0 || fputc('\n', f) == EOF || fflush(f) != 0)
		rc = -EIO;
	app->cp.file_lines++;
	free(text);
	return rc;
}
