/* Control commands, one table shared by the control socket and the console. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>

#include "psb_app.h"
#include "psb_cli.h"
#include "psb_counters.h"
#include "psb_ctl.h"
#include "psb_ports.h"
#include "psb_report.h"
#include "psb_verbs.h"

json_t *
psb_cmd_error(const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", msg);
}

static json_t *
ok(json_t *extra)
{
	json_t *o = extra != NULL ? extra : json_object();

	json_object_set_new(o, "ok", json_true());
	return o;
}

static const char *
errno_code(int rc)
{
	switch (rc) {
	case -EBUSY: return "busy";
	case -EEXIST: return "exists";
	case -ENOENT: return "not_found";
	case -ENOMEM: return "no_memory";
	case -ETIMEDOUT: return "timeout";
	default: return "invalid";
	}
}

/*
 * The experiment a request names: {"experiment": {...}} or {"file": "path"}. Node settings
 * may be left out (the running appliance's) or repeated, but not changed.
 */
static json_t *
load_doc(struct psb_app *app, const json_t *req, struct psb_exp_conf *c)
{
	const json_t *doc = json_object_get(req, "experiment");
	const char *file = json_string_value(json_object_get(req, "file"));
	char err[1024], buf[64];
	const char *diff;
	json_t *loaded = NULL, *res = NULL;
	int rc;

	if (doc == NULL && file == NULL)
		return psb_cmd_error("bad_request", "give \"experiment\": {document} or \"file\": "
				     "\"path\"");
	if (doc != NULL && json_object_get(req, "file") != NULL)
		return psb_cmd_error("bad_request", "file: give \"experiment\" or \"file\", not "
				     "both");
	if (doc == NULL) {
		/* the main lcore reads it: never a FIFO or a device, never more than file_max */
		loaded = psb_exp_read_json(file, app->conf.node.file_max, &rc, err, sizeof(err));
		if (loaded == NULL) {
			if (rc == -EPERM || rc == -EFBIG)
				app->cp.file_refused++;
			return psb_cmd_error(rc == -EFBIG ? "too_large" : errno_code(rc), "%s",
					     err);
		}
		doc = loaded;
	}
	*c = app->conf;
	if (psb_exp_load(c, doc, false, err, sizeof(err)) != 0) {
		res = psb_cmd_error("invalid", "%s%s%s", file != NULL ? file : "",
				    file != NULL ? ": " : "", err);
		goto out;
	}
	if ((diff = psb_exp_fixed_diff(c, &app->conf, doc, buf, sizeof(buf))) != NULL) {
		res = psb_cmd_error("invalid", "%s: differs from the running appliance's (node and "
				    "store settings apply when psb starts; leave \"node\" and "
				    "\"store\" out to use the running ones)", diff);
		goto out;
	}
	c->node = app->conf.node;
	c->store = app->conf.store;
	if (psb_exp_check(c, true, err, sizeof(err)) != 0)
		res = psb_cmd_error("invalid", "%s", err);
out:
	json_decref(loaded);
	return res;
}

static json_t *
cmd_start(struct psb_app *app, const json_t *req, int *quit)
{
	struct psb_exp_conf *c = malloc(sizeof(*c));
	char err[1024];
	json_t *res;
	int rc;

	RTE_SET_USED(quit);
	if (c == NULL)
		return psb_cmd_error("no_memory", "out of memory");
	if (json_object_get(req, "experiment") != NULL || json_object_get(req, "file") != NULL) {
		res = load_doc(app, req, c);
		if (res != NULL) {
			free(c);
			return res;
		}
	} else if (app->run.have_loaded) {
		*c = app->run.loaded;
	} else {
		free(c);
		return psb_cmd_error("bad_request", "nothing to start: give \"experiment\" or "
				     "\"file\", or load one first");
	}
	rc = psb_run_start(app, c, 1, err, sizeof(err));
	free(c);
	if (rc != 0)
		return psb_cmd_error(errno_code(rc), "%s", err);
	/* not a top-level "id": that one echoes the request's */
	return ok(json_pack("{s:{s:i,s:s,s:s}}", "experiment", "id", (int)app->run.id, "name",
			    app->run.conf.name, "results", app->run.results_dir));
}

static json_t *
cmd_load(struct psb_app *app, const json_t *req, int *quit)
{
	struct psb_exp_conf *c = malloc(sizeof(*c));
	json_t *res;

	RTE_SET_USED(quit);
	if (c == NULL)
		return psb_cmd_error("no_memory", "out of memory");
	res = load_doc(app, req, c);
	if (res == NULL) {
		app->run.loaded = *c;
		app->run.have_loaded = 1;
		res = ok(json_pack("{s:s,s:s}", "name", c->name, "kind",
				   psb_exp_kind_names[c->kind]));
	}
	free(c);
	return res;
}

static json_t *
cmd_stop(struct psb_app *app, const json_t *req, int *quit)
{
	char err[256];
	json_t *exp;

	RTE_SET_USED(req);
	RTE_SET_USED(quit);
	if (psb_run_stop(app, err, sizeof(err)) != 0)
		return psb_cmd_error("not_running", "%s", err);
	pthread_mutex_lock(&app->ctl_lock);
	exp = psb_run_json(app, 0);
	pthread_mutex_unlock(&app->ctl_lock);
	return ok(json_pack("{s:o}", "experiment", exp));
}

static json_t *
cmd_status(struct psb_app *app, const json_t *req, int *quit)
{
	json_t *exp;

	RTE_SET_USED(req);
	RTE_SET_USED(quit);
	pthread_mutex_lock(&app->ctl_lock);
	exp = psb_run_json(app, 0);
	pthread_mutex_unlock(&app->ctl_lock);
	return ok(json_pack("{s:s,s:f,s:o,s:b}", "role", psb_exp_role_names[app->node_role],
			    "uptime_s", psb_now_ns(app) / 1e9, "experiment", exp,
			    "loaded", app->run.have_loaded));
}

static json_t *
cmd_counters(struct psb_app *app, const json_t *req, int *quit)
{
	const json_t *f = json_object_get(req, "filter");
	char err[256];
	json_t *all, *part;

	RTE_SET_USED(quit);
	if (f != NULL && !json_is_string(f))
		return psb_cmd_error("bad_request", "filter: expected a dotted path like "
				     "\"roles.worker0\"");
	pthread_mutex_lock(&app->ctl_lock);
	all = psb_counters_json(app);
	pthread_mutex_unlock(&app->ctl_lock);
	part = psb_counters_get(all, json_string_value(f), err, sizeof(err));
	json_decref(all);
	if (part == NULL)
		return psb_cmd_error("not_found", "%s", err);
	return ok(json_pack("{s:o}", "counters", part));
}

static json_t *
cmd_metrics(struct psb_app *app, const json_t *req, int *quit)
{
	RTE_SET_USED(app);
	RTE_SET_USED(req);
	RTE_SET_USED(quit);
	return ok(json_pack("{s:o}", "metrics", psb_metrics_json()));
}

int
psb_cmd_exec_text(struct psb_app *app, const json_t *req, struct psb_text *t)
{
	const json_t *id = json_object_get(req, "id");
	const char *key;
	json_t *v;
	int rc;

	/* {"cmd": "counters"} and an id at most: what monitoring asks, many times a second */
	json_object_foreach((json_t *)req, key, v)
		if (strcmp(key, "id") != 0 &&
		    (strcmp(key, "cmd") != 0 || !json_is_string(v) ||
		     strcmp(json_string_value(v), "counters") != 0))
			return 0;
	if (json_object_get(req, "cmd") == NULL)
		return 0;
	/* the reply cmd_counters gives, without its tree */
	psb_text_puts(t, "{\"counters\":");
	pthread_mutex_lock(&app->ctl_lock);
	rc = psb_counters_text(app, t);
	pthread_mutex_unlock(&app->ctl_lock);
	psb_text_puts(t, ",\"ok\":true");
	if (id != NULL) {
		psb_text_puts(t, ",\"id\":");
		psb_text_json(t, id);
	}
	psb_text_puts(t, "}");
	if (rc != 0)
		t->oom = 1;
	return 1;
}

static json_t *
cmd_reset(struct psb_app *app, const json_t *req, int *quit)
{
	char err[256];
	int rc;

	RTE_SET_USED(req);
	RTE_SET_USED(quit);
	rc = psb_run_reset(app, err, sizeof(err));
	if (rc != 0)
		return psb_cmd_error(errno_code(rc), "%s", err);
	return ok(NULL);
}

static json_t *
cmd_list(struct psb_app *app, const json_t *req, int *quit)
{
	json_t *exps = json_array(), *kinds = json_array();
	const struct psb_run *r = &app->run;
	uint32_t i;

	RTE_SET_USED(req);
	RTE_SET_USED(quit);
	for (i = r->id > r->nhist ? r->id - r->nhist + 1 : 1; i <= r->id; i++) {
		const struct psb_run_rec *h = &r->hist[(i - 1) % PSB_RUN_HISTORY];

		/* the running one's time so far, as status gives it */
		double elapsed = h->state == PSB_RUN_RUNNING && h->id == r->id ?
			(psb_now_ns(app) - r->start_ns) / 1e9 : h->elapsed_s;

		json_array_append_new(exps, json_pack("{s:i,s:s,s:s,s:s,s:f,s:s}", "id", (int)h->id,
			"name", h->name, "kind", psb_exp_kind_names[h->kind],
			"state", psb_run_state_name(h->state),
			"elapsed_s", elapsed, "results", h->results));
	}
	/* the kinds the appliance runs (staleness as its trainer or a worker) */
	for (i = 0; psb_exp_kind_names[i] != NULL; i++)
		json_array_append_new(kinds, json_string(psb_exp_kind_names[i]));
	return ok(json_pack("{s:o,s:o,s:s*}", "experiments", exps, "kinds", kinds, "loaded",
			    r->have_loaded ? r->loaded.name : NULL));
}

static json_t *
cmd_set(struct psb_app *app, const json_t *req, int *quit)
{
	const char *param = json_string_value(json_object_get(req, "param"));
	const json_t *v = json_object_get(req, "value");
	char err[1024], *text;
	int rc;

	RTE_SET_USED(quit);
	if (param == NULL || v == NULL)
		return psb_cmd_error("bad_request", "give \"param\": \"pushpull.rate\" and "
				     "\"value\": \"1Gbps\"");
	text = json_is_string(v) ? strdup(json_string_value(v)) : json_dumps(v, JSON_ENCODE_ANY);
	if (text == NULL)
		return psb_cmd_error("no_memory", "out of memory");
	rc = psb_run_set(app, param, text, err, sizeof(err));
	free(text);
	if (rc != 0)
		return psb_cmd_error(errno_code(rc), "%s", err);
	return ok(json_pack("{s:s,s:b}", "param", param, "live", psb_run_active(app)));
}

/* A request's "port": a port number or "all" (absent: all). NULL if so, else the error. */
static json_t *
port_field_bad(const json_t *p)
{
	if (p != NULL && !json_is_integer(p) && !(json_is_string(p) &&
	    strcmp(json_string_value(p), "all") == 0))
		return psb_cmd_error("bad_request", "port: expected a port number or \"all\"");
	return NULL;
}

/* The port whose id is pid is one that "port" p names. */
static int
port_named(const json_t *p, uint16_t pid)
{
	return !json_is_integer(p) || json_integer_value(p) == pid;
}

static json_t *
no_port(const json_t *p)
{
	return psb_cmd_error("not_found", "port: no port %lld", (long long)json_integer_value(p));
}

static json_t *
cmd_clear_port_stats(struct psb_app *app, const json_t *req, int *quit)
{
	const json_t *p = json_object_get(req, "port");
	json_t *bad = port_field_bad(p);
	uint16_t i;
	int n = 0;

	RTE_SET_USED(quit);
	if (bad != NULL)
		return bad;
	for (i = 0; i < app->nports; i++) {
		if (!port_named(p, app->port_ids[i]) || !psb_port_shown(app, i))
			continue;
		rte_eth_stats_reset(app->port_ids[i]);
		rte_eth_xstats_reset(app->port_ids[i]);
		psb_port_stats_clear(i);
		psb_afp_stats_clear(&app->afp[i]);
		n++;
	}
	if (n == 0)
		return no_port(p);
	return ok(json_pack("{s:i}", "cleared", n));
}

/* What the ports' drivers say of them, the fields of testpmd's "show port info". */
static json_t *
cmd_port_info(struct psb_app *app, const json_t *req, int *quit)
{
	const json_t *p = json_object_get(req, "port");
	json_t *bad = port_field_bad(p), *ports, *one;
	uint16_t i;

	RTE_SET_USED(quit);
	if (bad != NULL)
		return bad;
	ports = json_array();
	for (i = 0; i < app->nports && ports != NULL; i++) {
		if (!port_named(p, app->port_ids[i]) || !psb_port_shown(app, i))
			continue;
		one = psb_port_info_json(app, i);
		if (one == NULL) {
			json_decref(ports);
			return psb_cmd_error("busy", "port %u: its driver gave no information, or "
					     "memory ran out", app->port_ids[i]);
		}
		json_array_append_new(ports, one);
	}
	if (ports == NULL)
		return psb_cmd_error("no_memory", "out of memory");
	if (json_array_size(ports) == 0) {
		json_decref(ports);
		return no_port(p);
	}
	return ok(json_pack("{s:o}", "ports", ports));
}

struct log_rows {
	json_t *rows;
	const char *level;
};

static void
log_row(void *arg, const char *type)
{
	struct log_rows *r = arg;

	json_array_append_new(r->rows, json_pack("{s:s,s:s}", "type", type, "level", r->level));
}

/* psb's log types and their levels. */
static json_t *
log_list(void)
{
	json_t *rows = json_array();
	const char *name;
	unsigned int i;
	int level;

	for (i = 0; psb_log_type(i, &name, &level) == 0; i++)
		json_array_append_new(rows, json_pack("{s:s,s:s}", "type", name, "level",
			psb_cli_log_level_name(level)));
	return ok(json_pack("{s:o}", "log", rows));
}

/*
 * {"cmd": "log"}: psb's log types and their levels. With "level" (and "type", a name or a
 * glob, psb.* when left out): those types set to it, and listed.
 */
static json_t *
cmd_log(struct psb_app *app, const json_t *req, int *quit)
{
	const json_t *t = json_object_get(req, "type"), *l = json_object_get(req, "level");
	const char *type = t != NULL ? json_string_value(t) : "psb.*";
	struct log_rows set;
	int level = -1, rc;

	RTE_SET_USED(app);
	RTE_SET_USED(quit);
	if (l == NULL && t == NULL)
		return log_list();
	if (json_is_string(l))
		level = psb_cli_log_level(json_string_value(l));
	else if (json_is_integer(l) && json_integer_value(l) >= 1 &&
		 json_integer_value(l) <= PSB_LOG_LEVEL_MAX)
		level = (int)json_integer_value(l);
	if (level < 0)
		return psb_cmd_error("bad_request", "level: expected emergency, alert, critical, "
				     "error, warning, notice, info, debug or 1-8");
	if (type == NULL || *type == '\0')
		return psb_cmd_error("bad_request", "type: expected a log type or a glob like "
				     "\"psb.*\"");
	set.rows = json_array();
	set.level = psb_cli_log_level_name(level);
	rc = psb_log_set(type, level, log_row, &set);
	if (rc != 0) {
		json_decref(set.rows);
		if (rc == -ENOENT)
			return psb_cmd_error("not_found", "type: no log type matches \"%.64s\"",
					     type);
		return psb_cmd_error(errno_code(rc), "log: %s", strerror(-rc));
	}
	return ok(json_pack("{s:o}", "log", set.rows));
}

/*
 * What rdma-core sees of the host. A host without RDMA is an answer, not a failed command:
 * available false and the reason. Devices are opened and queried on each call (a few ms a
 * device on the main lcore), never kept.
 */
static json_t *
cmd_rdma(struct psb_app *app, const json_t *req, int *quit)
{
	RTE_SET_USED(app);
	RTE_SET_USED(req);
	RTE_SET_USED(quit);
	return ok(json_pack("{s:o}", "rdma", psb_verbs_query_json()));
}

/* The queue pairs the passthrough counts, most packets first ({"max": N}, all if none). */
static json_t *
cmd_roce_qp(struct psb_app *app, const json_t *req, int *quit)
{
	const json_t *m = json_object_get(req, "max");
	json_int_t max = app->roce_qps;
	json_t *o;

	RTE_SET_USED(quit);
	if (m != NULL && (!json_is_integer(m) || json_integer_value(m) < 0))
		return psb_cmd_error("bad_request", "max: expected a number of queue pairs, 0 or "
				     "more");
	if (m != NULL && json_integer_value(m) < max)
		max = json_integer_value(m);
	if (!app->has_exc)
		return psb_cmd_error("not_found", "no passthrough: this node has no exception port "
				     "(node.exception, --exception)");
	o = psb_roce_qp_reply(app, (uint32_t)max);
	if (o == NULL)
		return psb_cmd_error("busy", "the passthrough's figures kept changing, or memory "
				     "ran out: ask again");
	return ok(json_pack("{s:o}", "roce_qp", o));
}

static json_t *
cmd_quit(struct psb_app *app, const json_t *req, int *quit)
{
	RTE_SET_USED(app);
	RTE_SET_USED(req);
	*quit = 1;
	return ok(NULL);
}

static json_t *cmd_help(struct psb_app *app, const json_t *req, int *quit);

/*
 * Each command with the fields its request may have besides "cmd" and "id": any other is
 * refused by name, so that a misspelt one is not taken for its absence ("prot" clearing
 * every port's statistics, "experiement" starting the loaded experiment).
 */
static const struct {
	const char *name;
	json_t *(*fn)(struct psb_app *app, const json_t *req, int *quit);
	const char *fields[3];
	const char *help;
} cmds[] = {
	{ "start", cmd_start, { "experiment", "file" }, "start an experiment: {\"experiment\": "
	  "{...}} or {\"file\": PATH}, or the loaded one" },
	{ "load", cmd_load, { "experiment", "file" }, "load an experiment to start later: "
	  "{\"experiment\"} or {\"file\"}" },
	{ "stop", cmd_stop, { NULL }, "stop the running experiment (its results are written)" },
	{ "status", cmd_status, { NULL }, "the running or last experiment, with live figures" },
	{ "counters", cmd_counters, { "filter" }, "every counter, or {\"filter\": "
	  "\"roles.worker0\"}" },
	{ "metrics", cmd_metrics, { NULL }, "what each counter is: path, kind, unit, Prometheus "
	  "name, help" },
	{ "reset_state", cmd_reset, { NULL }, "zero counters, metrics and the store (after a "
	  "warm-up)" },
	{ "list", cmd_list, { NULL }, "experiments run so far, and the kinds" },
	{ "set", cmd_set, { "param", "value" }, "{\"param\": \"pushpull.rate\", \"value\": "
	  "\"1Gbps\"}" },
	{ "clear_port_stats", cmd_clear_port_stats, { "port" }, "zero port statistics: "
	  "{\"port\": N|\"all\"}" },
	{ "port_info", cmd_port_info, { "port" }, "what each port's driver says of it (MAC, "
	  "driver, link, MTU, queues), testpmd's show port info: {\"port\": N|\"all\"}" },
	{ "log", cmd_log, { "type", "level" }, "psb's log types and levels; {\"type\": "
	  "\"psb.rx\", \"level\": \"debug\"} sets them (type: a glob, psb.* if none)" },
	{ "rdma", cmd_rdma, { NULL }, "RDMA devices, ports, GIDs and RoCE versions seen through "
	  "rdma-core" },
	{ "roce_qp", cmd_roce_qp, { "max" }, "RoCE queue pairs the passthrough counts, most "
	  "packets first: {\"max\": N}" },
	{ "quit", cmd_quit, { NULL }, "stop the experiment and exit" },
	{ "help", cmd_help, { NULL }, "these commands" },
};

static json_t *
cmd_help(struct psb_app *app, const json_t *req, int *quit)
{
	json_t *o = json_object();
	size_t i;

	RTE_SET_USED(app);
	RTE_SET_USED(req);
	RTE_SET_USED(quit);
	for (i = 0; i < RTE_DIM(cmds); i++)
		json_object_set_new(o, cmds[i].name, json_string(cmds[i].help));
	return ok(json_pack("{s:o}", "commands", o));
}

/* NULL when every field of req is "cmd", "id" or one of fields[]; else the error naming it */
static json_t *
unknown_field(const json_t *req, const char *name, const char *const fields[3])
{
	char list[96] = "";
	const char *key;
	size_t i, used = 0;
	json_t *v;

	json_object_foreach((json_t *)req, key, v) {
		if (strcmp(key, "cmd") == 0 || strcmp(key, "id") == 0)
			continue;
		for (i = 0; i < 3 && fields[i] != NULL; i++)
			if (strcmp(key, fields[i]) == 0)
				break;
		if (i < 3 && fields[i] != NULL)
			continue;
		for (i = 0; i < 3 && fields[i] != NULL && used < sizeof(list); i++)
			used += snprintf(list + used, sizeof(list) - used, "%s\"%s\"",
					 i ? ", " : "", fields[i]);
		return psb_cmd_error("bad_request", "\"%.64s\": not a field of %s (%s%s)", key,
				     name, used ? "its fields: " : "it takes none besides \"id\"",
				     list);
	}
	return NULL;
}

json_t *
psb_cmd_exec(struct psb_app *app, const json_t *req, int *quit)
{
	const char *name;
	char list[256] = "";
	size_t i, used = 0;

	if (!json_is_object(req))
		return psb_cmd_error("bad_request", "expected a JSON object like {\"cmd\": "
				     "\"status\"}");
	name = json_string_value(json_object_get(req, "cmd"));
	if (name == NULL)
		return psb_cmd_error("bad_request", "cmd: expected a command name (\"help\" lists "
				     "them)");
	for (i = 0; i < RTE_DIM(cmds); i++)
		if (strcmp(cmds[i].name, name) == 0)
			break;
	if (i < RTE_DIM(cmds)) {
		json_t *bad = unknown_field(req, cmds[i].name, cmds[i].fields);

		return bad != NULL ? bad : cmds[i].fn(app, req, quit);
	}
	for (i = 0; i < RTE_DIM(cmds) && used < sizeof(list); i++)
		used += snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "",
				 cmds[i].name);
	return psb_cmd_error("bad_request", "cmd: unknown command \"%.64s\" (expected one of: %s)",
			     name, list);
}
