/* Experiments on a running appliance: start, stop, reset, live changes, results. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "psb_app.h"
#include "psb_bench.h"
#include "psb_cli.h"
#include "psb_counters.h"
#include "psb_ctl.h"
#include "psb_hist.h"
#include "psb_kv.h"
#include "psb_report.h"
#include "psb_stale_series.h"

static const char *const state_names[] = {
	[PSB_RUN_IDLE] = "idle", [PSB_RUN_RUNNING] = "running", [PSB_RUN_DONE] = "done",
	[PSB_RUN_STOPPED] = "stopped", [PSB_RUN_FAILED] = "failed",
};

/*
 * elapsed_s is the window the figures cover: the whole run, or what followed its last
 * reset_state; run_s is the whole run and resets says how many there were.
 */
static const char *const pushpull_cols[] = {
	"worker", "mode", "len", "keys", "iterations", "requests", "elapsed_s", "goodput_gbps",
	"requests_per_s", "rtt_p50_us", "rtt_p90_us", "rtt_p99_us", "rtt_p999_us", "rtt_max_us",
	"staleness_mean", "staleness_max", "retries", "failed", "verify_errors", "run_s", "resets",
	NULL,
};

static const char *const serve_cols[] = {
	"shard", "elapsed_s", "push", "pull", "pushpull", "rounds_closed", "bytes_summed",
	"bytes_sent", "rx_pkts", "tx_pkts", "stale", "run_s", "resets", NULL,
};

/* A staleness worker's run (the receiver role): its figures, named as its counters. */
static const char *const staleness_cols[] = {
	"worker", "held", "final_version", "versions", "verify_fail", "posts", "pkts", "nacks",
	"decoded_groups", "superseded", "crc_fail", "forged", "stray", NULL,
};

/* A staleness trainer's run (the trainer role): a row per worker, as the trainer saw it. */
static const char *const trainer_cols[] = {
	"worker", "address", "posts", "samples", "version_difference", "window_staleness",
	"window_staleness_max", "holds", "holds_final", NULL,
};

static const char *const *
kind_cols(const struct psb_app *app, int kind)
{
	return kind == PSB_EXP_PUSHPULL ? pushpull_cols : kind == PSB_EXP_STALENESS ?
		(app->trainer ? trainer_cols : staleness_cols) : serve_cols;
}

/* The role that runs experiments of kind on this node; NULL: none does (serve). */
static const struct psb_role *
run_role(const struct psb_app *app, int kind)
{
	if (kind == PSB_EXP_PUSHPULL)
		return &psb_role_worker;
	if (kind == PSB_EXP_STALENESS)
		return app->trainer ? &psb_role_trainer : &psb_role_receiver;
	return NULL;
}

/*
 * The staleness role's state, and its figures where wanted (f: a receiver's, tf: a
 * trainer's): 1, or 0 when this node runs none (or they kept changing).
 */
static int
stale_read(struct psb_app *app, struct psb_stale_pub *pub, struct psb_stale_snap *f,
		struct psb_trainer_snap *tf)
{
	const struct psb_role *role = run_role(app, PSB_EXP_STALENESS);
	uint16_t i;

	for (i = 0; i < app->nroles; i++)
		if (app->roles[i].role == role)
			return (app->trainer ? psb_trainer_read(&app->roles[i], pub, tf) :
				psb_receiver_read(&app->roles[i], pub, f)) == 0;
	return 0;
}

/* The receiver's figures as one row of results. */
static json_t *
stale_json(const struct psb_stale_snap *f)
{
	json_t *out = json_array(), *row;
	struct psb_emit e;

	psb_emit_tree(&e);
	psb_emit_open(&e, NULL);
	psb_metric_emit(&e, &psb_stale_block, f, 1);
	row = psb_emit_done(&e);
	if (row != NULL)
		json_array_append_new(out, row);
	return out;
}

/* The trainer's rows, a worker each, and one of them all (its figures f). */
static json_t *
trainer_json(struct psb_app *app, const struct psb_trainer_snap *f)
{
	const struct psb_trainer_row *rows = NULL;
	json_t *out = json_array();
	uint32_t i, n = 0;
	char who[32];

	for (i = 0; i < app->nroles; i++)
		if (app->roles[i].role == &psb_role_trainer)
			rows = psb_trainer_rows(&app->roles[i], &n);
	for (i = 0; i < n; i++) {
		const struct psb_trainer_row *r = &rows[i];

		who[0] = '\0';
		if (r->ip != 0) {
			psb_ip_str(r->ip, who);
			snprintf(who + strlen(who), sizeof(who) - strlen(who), ":%u",
				 (unsigned int)r->port);
		}
		json_array_append_new(out, json_pack("{s:i,s:s,s:I,s:I,s:f,s:f,s:f,s:I,s:b}",
			"worker", (int)r->worker, "address", who, "posts", (json_int_t)r->posts,
			"samples", (json_int_t)r->samples,
			"version_difference", r->version_difference,
			"window_staleness", r->window_staleness,
			"window_staleness_max", r->window_staleness_max,
			"holds", (json_int_t)r->holds, "holds_final", r->holds_final));
	}
	json_array_append_new(out, json_pack("{s:s,s:s,s:I,s:s,s:f,s:f,s:f,s:I,s:I}", "worker",
		"all", "address", "", "posts", (json_int_t)f->posts, "samples", "",
		"version_difference", f->version_difference,
		"window_staleness", f->window_staleness,
		"window_staleness_max", f->window_staleness_max,
		"holds", (json_int_t)f->version, "holds_final", (json_int_t)f->holding_final));
	return out;
}

const char *
psb_run_state_name(int state)
{
	return state >= 0 && state < (int)RTE_DIM(state_names) ? state_names[state] : "unknown";
}

int
psb_run_active(const struct psb_app *app)
{
	return app->run.state == PSB_RUN_RUNNING;
}

int
psb_run_open_ended(const struct psb_app *app)
{
	return psb_run_active(app) && app->run.conf.kind == PSB_EXP_SERVE &&
	       app->run.conf.serve.duration == 0;
}

static struct psb_run_rec *
run_rec(struct psb_app *app)
{
	struct psb_run *r = &app->run;

	return &r->hist[(r->id - 1) % PSB_RUN_HISTORY];
}

/*
 * Worker figures of the running experiment, merged over local workers. each holds every
 * worker's own figures when the results need them; live counters read the workers one
 * after the other into one: a result is two histograms, 36 KB, and 32 of them would be
 * fetched from the kernel and given back at each scrape.
 */
struct pp_sum {
	uint32_t nworkers, ndone, nfailed, warming;
	char reason[256];		/* the first failed worker's */
	uint64_t repeat;
	struct psb_bench_result *all;	/* where the merged figures go (merged, or a snapshot's) */
	struct psb_bench_result *each;	/* [PSB_MAX_LOCAL_WORKERS], or NULL: use one */
	struct psb_bench_result one;
	struct psb_bench_result merged;
};

static void
pp_collect(struct psb_app *app, struct pp_sum *s)
{
	struct psb_worker_pub pub;
	uint16_t i;

	memset(s->all, 0, sizeof(*s->all));
	s->nworkers = s->ndone = s->nfailed = s->warming = 0;
	s->reason[0] = '\0';
	s->repeat = 0;
	psb_hist_init(&s->all->rtt);
	psb_hist_init(&s->all->stale);
	for (i = 0; i < app->nroles; i++) {
		struct psb_role_inst *ri = &app->roles[i];
		struct psb_bench_result *r;

		if (ri->role != &psb_role_worker || s->nworkers >= PSB_MAX_LOCAL_WORKERS)
			continue;
		r = s->each != NULL ? &s->each[s->nworkers] : &s->one;
		s->nworkers++;
		if (psb_worker_read(ri, &pub, r) != 0 || pub.exp_id != app->run.id) {
			memset(r, 0, sizeof(*r));
			psb_hist_init(&r->rtt);
			psb_hist_init(&r->stale);
			continue;
		}
		s->ndone += pub.done;
		s->nfailed += pub.done && pub.rc < 0;
		if (pub.done && pub.rc < 0 && s->reason[0] == '\0')
			snprintf(s->reason, sizeof(s->reason), "%s", pub.reason);
		s->warming += pub.warming;
		s->repeat = pub.repeat;
		s->all->mode = r->mode;
		s->all->len = r->len;
		s->all->nkeys = r->nkeys;
		s->all->iterations = s->nworkers == 1 || r->iterations < s->all->iterations ?
			r->iterations : s->all->iterations;
		s->all->ops += r->ops;
		if (r->elapsed_ns > s->all->elapsed_ns)
			s->all->elapsed_ns = r->elapsed_ns;
		if (r->run_ns > s->all->run_ns)
			s->all->run_ns = r->run_ns;
		if (r->resets > s->all->resets)
			s->all->resets = r->resets;
		s->all->goodput_gbps += r->goodput_gbps;
		s->all->ops_per_s += r->ops_per_s;
		s->all->retries += r->retries;
		s->all->failed += r->failed;
		s->all->verify_errors += r->verify_errors;
		psb_hist_merge(&s->all->rtt, &r->rtt);
		psb_hist_merge(&s->all->stale, &r->stale);
	}
}

/* A flat table row of a worker's result. */
static json_t *
pp_row(const char *who, const struct psb_bench_result *r)
{
	return json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:I,s:I,"
		"s:I,s:I,s:f,s:I}",
		"worker", who, "mode", psb_bench_mode_name(r->mode), "len", (json_int_t)r->len,
		"keys", (json_int_t)r->nkeys, "iterations", (json_int_t)r->iterations,
		"requests", (json_int_t)r->ops, "elapsed_s", r->elapsed_ns / 1e9,
		"goodput_gbps", r->goodput_gbps, "requests_per_s", r->ops_per_s,
		"rtt_p50_us", psb_hist_percentile(&r->rtt, 50) / 1e3,
		"rtt_p90_us", psb_hist_percentile(&r->rtt, 90) / 1e3,
		"rtt_p99_us", psb_hist_percentile(&r->rtt, 99) / 1e3,
		"rtt_p999_us", psb_hist_percentile(&r->rtt, 99.9) / 1e3,
		"rtt_max_us", r->rtt.max / 1e3, "staleness_mean", psb_hist_mean(&r->stale),
		"staleness_max", (json_int_t)r->stale.max, "retries", (json_int_t)r->retries,
		"failed", (json_int_t)r->failed, "verify_errors", (json_int_t)r->verify_errors,
		"run_s", r->run_ns / 1e9, "resets", (json_int_t)r->resets);
}

/* Each server shard's store figures as they stand, by shard index; how many shards. */
static unsigned int
serve_take(struct psb_app *app, struct psb_serve_snap *out)
{
	unsigned int n = 0;
	uint16_t i;

	for (i = 0; i < app->nroles; i++) {
		const struct psb_role_inst *ri = &app->roles[i];
		const struct psb_kv_stats *st;
		const struct psb_kv *kv;
		struct psb_serve_snap *v;

		if (ri->role != &psb_role_server || (kv = psb_server_kv(ri)) == NULL ||
		    ri->idx < 0 || ri->idx >= PSB_MAX_SHARDS)
			continue;
		st = psb_kv_stats(kv);
		v = &out[n++];
		memset(v, 0, sizeof(*v));
		snprintf(v->shard, sizeof(v->shard), "%d", ri->idx);
		v->push = st->req[PSB_MSG_PUSH];
		v->pull = st->req[PSB_MSG_PULL];
		v->pushpull = st->req[PSB_MSG_PUSHPULL];
		v->rounds_closed = st->rounds_closed;
		v->bytes_summed = st->bytes_summed;
		v->bytes_sent = st->bytes_sent;
		v->stale = st->stale;
		v->rx_pkts = ri->cnt.rx_pkts;
		v->tx_pkts = ri->cnt.tx_pkts;
	}
	return n;
}

/* serve_figs' counters of a, one by one: a - b, or a + b. */
static void
serve_combine(struct psb_serve_snap *a, const struct psb_serve_snap *b, int minus)
{
	const struct psb_metric *m;

	for (m = psb_serve_block.m; m < psb_serve_block.m + psb_serve_block.n; m++) {
		uint64_t *x = (uint64_t *)(void *)((uint8_t *)a + m->off);
		uint64_t y = *(const uint64_t *)(const void *)((const uint8_t *)b + m->off);

		if (m->type == PSB_MT_U64 && m->kind == PSB_METRIC_COUNTER)
			*x = minus ? *x - y : *x + y;
	}
}

/*
 * The serve experiment's figures, per shard over the window (since the start or the last
 * reset_state: minus the run's base), and over all shards as the last row when there are
 * several. rows: PSB_MAX_SHARDS + 1. How many rows.
 */
static unsigned int
serve_rows(struct psb_app *app, double elapsed_s, double run_s, struct psb_serve_snap *rows)
{
	const struct psb_serve_snap *base = app->run.serve_base;
	struct psb_serve_snap *all = NULL;
	unsigned int n = serve_take(app, rows), i;

	if (n > 1) {
		all = &rows[n];
		memset(all, 0, sizeof(*all));
		snprintf(all->shard, sizeof(all->shard), "all");
	}
	for (i = 0; i < n; i++) {
		if (base != NULL)
			serve_combine(&rows[i], &base[i], 1);
		if (all != NULL)
			serve_combine(all, &rows[i], 0);
	}
	n += all != NULL;
	for (i = 0; i < n; i++) {
		rows[i].elapsed_s = elapsed_s;
		rows[i].run_s = run_s;
		rows[i].resets = app->run.resets;
	}
	return n;
}

/* Rows of serve_rows for the results: JSON objects of the serve table's figures. */
static json_t *
serve_json(const struct psb_serve_snap *rows, unsigned int n)
{
	json_t *out = json_array(), *row;
	struct psb_emit e;
	unsigned int i;

	for (i = 0; i < n; i++) {
		psb_emit_tree(&e);
		psb_emit_open(&e, NULL);
		psb_emit_str(&e, "shard", rows[i].shard);
		psb_metric_emit(&e, &psb_serve_block, &rows[i], 1);
		row = psb_emit_done(&e);
		if (row != NULL)
			json_array_append_new(out, row);
	}
	return out;
}

/*
 * Where run.serve_base and run.serve_final point while they hold something: one run at a
 * time, so fixed storage, never an allocation that could fail and leave a window unmeasured.
 */
static struct psb_serve_snap serve_base_store[PSB_MAX_SHARDS];
static struct psb_serve_snap serve_final_store;

/* The window starts now: each shard's figures as they stand are its base. */
static void
serve_base(struct psb_app *app)
{
	app->run.serve_base = serve_base_store;
	serve_take(app, serve_base_store);
}

void
psb_snap_exp(struct psb_app *app, struct psb_exp_snap *x)
{
	struct psb_run *r = &app->run;
	uint64_t end = r->state == PSB_RUN_RUNNING ? psb_now_ns(app) : r->end_ns;

	x->id = r->id;
	snprintf(x->name, sizeof(x->name), "%s", r->id != 0 ? r->conf.name : "");
	x->kind = r->id != 0 ? psb_exp_kind_names[r->conf.kind] : "";
	x->state = state_names[r->state];
	x->elapsed_s = r->id != 0 && end > r->start_ns ? (end - r->start_ns) / 1e9 : 0.0;
	snprintf(x->results, sizeof(x->results), "%s", r->results);
	snprintf(x->error, sizeof(x->error), "%s", r->error);
	x->has_pp = x->has_serve = x->has_stale = x->has_trainer = 0;
	if (r->id == 0)
		return;
	if (r->conf.kind == PSB_EXP_STALENESS) {
		struct psb_stale_pub pub;

		if (app->trainer)
			x->has_trainer = (uint8_t)stale_read(app, &pub, NULL, &x->trainer);
		else
			x->has_stale = (uint8_t)stale_read(app, &pub, &x->stale, NULL);
		return;
	}
	if (r->conf.kind == PSB_EXP_PUSHPULL && app->node_role == PSB_NODE_WORKER) {
		/* 72 KB: on the heap, never the kernel's stack pages to map anew */
		struct pp_sum *s = malloc(sizeof(*s));
		struct psb_pp_snap *pp = &x->pp;

		if (s == NULL)
			return;
		s->each = NULL;
		s->all = &pp->all;	/* the merged histograms go straight into the snapshot */
		pp_collect(app, s);
		pp->repeat = s->repeat;
		pp->warming = s->warming != 0;
		pp->workers = s->nworkers;
		pp->workers_done = s->ndone;
		pp->rtt_p50_us = psb_hist_percentile(&pp->all.rtt, 50) / 1e3;
		pp->rtt_p99_us = psb_hist_percentile(&pp->all.rtt, 99) / 1e3;
		pp->rtt_mean_us = psb_hist_mean(&pp->all.rtt) / 1e3;
		pp->staleness_mean = psb_hist_mean(&pp->all.stale);
		pp->staleness_p99 = psb_hist_percentile(&pp->all.stale, 99);
		pp->staleness_max = pp->all.stale.max;
		x->has_pp = 1;
		free(s);
	} else if (r->conf.kind == PSB_EXP_SERVE) {
		struct psb_serve_snap rows[PSB_MAX_SHARDS + 1];
		unsigned int n;

		if (r->state == PSB_RUN_RUNNING) {
			n = serve_rows(app, (end - r->window_ns) / 1e9, (end - r->start_ns) / 1e9,
				       rows);
			if (n != 0) {
				x->serve = rows[n - 1];
				x->has_serve = 1;
			}
		} else if (r->serve_final != NULL) {
			/* done: what the run did, as its results say, not what the store did since */
			x->serve = *r->serve_final;
			x->has_serve = 1;
		}
	}
}

void
psb_run_emit(struct psb_emit *e, struct psb_app *app, const char *key, int hists)
{
	struct psb_exp_snap *x = malloc(sizeof(*x));

	if (x == NULL) {
		e->oom = 1;
		return;
	}
	psb_snap_exp(app, x);
	psb_snap_exp_emit(e, x, key, hists);
	free(x);
}

json_t *
psb_run_json(struct psb_app *app, int hists)
{
	struct psb_emit e;

	psb_emit_tree(&e);
	psb_run_emit(&e, app, NULL, hists);
	return psb_emit_done(&e);
}

/*
 * Hand the workers op (START, SET) with a copy of the experiment they copy in turn, on their
 * lcores: what the control plane changes later (a set, the next start) never changes what
 * a running worker reads. The copy lives until the next one is handed, or longer if a role
 * had not taken it within psb_roles_call's wait.
 */
static int
run_hand(struct psb_app *app, int op, const struct psb_exp_conf *c)
{
	const struct psb_role *role = run_role(app, c->kind);
	struct psb_run *r = &app->run;
	struct psb_exp_conf *copy = malloc(sizeof(*copy));
	int rc;

	if (copy == NULL)
		return -ENOMEM;
	*copy = *c;
	rc = psb_roles_call(app, role, op, copy);
	if (r->handed_late) {
		free(r->late);		/* an older one a late role may read: at most one kept */
		r->late = r->handed;
	} else {
		free(r->handed);
	}
	r->handed = copy;
	r->handed_late = rc == -ETIMEDOUT;
	return rc;
}

/*
 * A trainer's run: its posts as staleness.csv and staleness.svg, into the results directory
 * being made (psb_exp_results_write_with). 0, or -errno.
 */
static int
trainer_series_write(const char *dir, void *arg)
{
	struct psb_app *app = arg;
	const struct psb_run *r = &app->run;
	const struct psb_trainer_series *sr = NULL;
	struct psb_stale_plot *plot;
	char path[PATH_MAX + 32], title[256];
	uint32_t i;
	FILE *f;
	int rc = 0;

	for (i = 0; i < app->nroles; i++)
		if (app->roles[i].role == &psb_role_trainer)
			sr = psb_trainer_series(&app->roles[i]);
	if (sr == NULL)
		return 0;	/* no run's figures: no series */
	plot = malloc(sizeof(*plot));
	if (plot == NULL)
		return -ENOMEM;
	psb_stale_plot_init(plot, sr->max_time_ns);
	snprintf(path, sizeof(path), "%s/staleness.csv", dir);
	f = fopen(path, "w");
	if (f != NULL) {
		psb_stale_csv_header(f);
		for (i = 0; i < sr->n; i++) {
			psb_stale_csv_line(f, sr->t0_ns, &sr->pts[i]);
			psb_stale_plot_add(plot, sr->t0_ns, &sr->pts[i]);
		}
	}
	if (f == NULL || fclose(f) != 0)
		rc = -(errno != 0 ? errno : EIO);
	snprintf(path, sizeof(path), "%s/staleness.svg", dir);
	snprintf(title, sizeof(title), "%s: staleness (versions) over time, mode %s, %u workers",
		 r->conf.name, psb_exp_stale_mode_names[r->conf.staleness.mode], sr->workers);
	if (rc == 0 && psb_stale_plot_write(plot, path, title, sr->dur_s, sr->workers) != 0)
		rc = -(errno != 0 ? errno : EIO);
	if (sr->dropped != 0)
		PSB_WARN(run, "experiment %u: %llu posts past the bound of the time series: not in "
			 "staleness.csv", r->id, (unsigned long long)sr->dropped);
	free(plot);
	return rc;
}

/* The experiment ended (state): results, history, log. */
static void
run_finish(struct psb_app *app, int state)
{
	struct psb_run *r = &app->run;
	const char *const *cols = pushpull_cols;
	double elapsed;
	json_t *rows, *doc, *workers;
	char err[512], label[32];
	struct pp_sum *s = NULL;
	uint32_t i;

	pthread_mutex_lock(&app->ctl_lock);
	r->end_ns = psb_now_ns(app);
	elapsed = (r->end_ns - r->start_ns) / 1e9;
	rows = json_array();
	workers = json_array();
	if (r->conf.kind == PSB_EXP_PUSHPULL) {
		s = malloc(sizeof(*s));
		if (s != NULL) {
			s->each = calloc(PSB_MAX_LOCAL_WORKERS, sizeof(*s->each));
			s->all = &s->merged;
		}
		if (s != NULL && s->each != NULL) {
			pp_collect(app, s);
			for (i = 0; i < s->nworkers; i++) {
				snprintf(label, sizeof(label), "%u", (unsigned int)(app->rank_base + i));
				json_array_append_new(rows, pp_row(label, &s->each[i]));
				json_array_append_new(workers, psb_bench_result_json(&s->each[i],
					label));
			}
			if (s->nworkers > 1)
				json_array_append_new(rows, pp_row("all", s->all));
			if (s->nfailed != 0 && state == PSB_RUN_DONE) {
				state = PSB_RUN_FAILED;
				snprintf(r->error, sizeof(r->error), "%u worker(s) failed%s%s",
					 s->nfailed, s->reason[0] != '\0' ? ": " : "", s->reason);
			}
		}
	} else if (r->conf.kind == PSB_EXP_STALENESS) {
		struct psb_stale_pub pub;
		struct psb_stale_snap f;
		struct psb_trainer_snap tf;

		cols = kind_cols(app, r->conf.kind);
		json_decref(rows);
		if (!stale_read(app, &pub, &f, &tf)) {
			memset(&f, 0, sizeof(f));
			memset(&tf, 0, sizeof(tf));
			pub.rc = 0;
		}
		rows = app->trainer ? trainer_json(app, &tf) : stale_json(&f);
		if (pub.rc < 0 && state == PSB_RUN_DONE) {
			state = PSB_RUN_FAILED;
			snprintf(r->error, sizeof(r->error), "%s", pub.reason);
		}
	} else {
		struct psb_serve_snap sr[PSB_MAX_SHARDS + 1];
		unsigned int n = serve_rows(app, (r->end_ns - r->window_ns) / 1e9, elapsed, sr);

		cols = serve_cols;
		json_decref(rows);
		rows = serve_json(sr, n);
		r->serve_final = NULL;
		if (n != 0) {
			serve_final_store = sr[n - 1];
			r->serve_final = &serve_final_store;
		}
	}
	r->state = state;
	pthread_mutex_unlock(&app->ctl_lock);

	if (!app->quiet || r->from_doc) {
		printf("\nexperiment %u \"%s\" (%s): %s after %.3f s\n", r->id, r->conf.name,
		       psb_exp_kind_names[r->conf.kind], state_names[state], elapsed);
		if (r->resets != 0)
			printf("figures since the last of %u reset_state: elapsed_s is that window, "
			       "run_s the whole run\n", r->resets);
		psb_exp_table_print(stdout, rows, cols);
		fflush(stdout);
	}
	if (r->from_doc) {
		pthread_mutex_lock(&app->ctl_lock);
		doc = json_pack("{s:o,s:s,s:i,s:f,s:o,s:o,s:o}",
			"experiment", psb_exp_dump(&r->conf),
			"state", state_names[state], "id", (int)r->id, "elapsed_s", elapsed,
			"rows", json_incref(rows), "workers", json_incref(workers),
			"counters", psb_counters_json(app));
		pthread_mutex_unlock(&app->ctl_lock);
		if (r->error[0] != '\0')
			json_object_set_new(doc, "error", json_string(r->error));
		if (psb_exp_results_write_with(app->results_root, &r->conf, doc, rows, cols,
				app->trainer ? trainer_series_write : NULL, app, r->results,
				sizeof(r->results), err, sizeof(err)) != 0) {
			PSB_ERR(run, "experiment %u: results NOT written: %s", r->id, err);
			snprintf(r->error, sizeof(r->error), "results not written: %.200s", err);
			r->results[0] = '\0';
		} else {
			char abs[PATH_MAX];

			printf("results: %s/{result.json,result.csv,result.txt%s}\n", r->results,
			       app->trainer ? ",staleness.csv,staleness.svg" : "");
			fflush(stdout);
			if (realpath(r->results, abs) != NULL)
				memcpy(r->results, abs, sizeof(r->results));
		}
		json_decref(doc);
	}
	json_decref(rows);
	json_decref(workers);
	if (s != NULL)
		free(s->each);
	free(s);
	if (r->counters.fd >= 0) {
		psb_counters_append(app, &r->counters);
		psb_logfile_close(&r->counters);
	}
	r->serve_base = NULL;
	run_rec(app)->state = state;
	run_rec(app)->elapsed_s = elapsed;
	snprintf(run_rec(app)->results, sizeof(run_rec(app)->results), "%s", r->results);
}

/* root/dir/name from /: status readers need not know psb's working directory. */
static void
absolute_results(const struct psb_app *app, const struct psb_exp_conf *c, char *out,
		size_t len)
{
	char rel[PATH_MAX], cwd[PATH_MAX];

	psb_exp_results_path(app->results_root, c, rel, sizeof(rel));
	if (rel[0] == '/' || getcwd(cwd, sizeof(cwd)) == NULL)
		snprintf(out, len, "%s", rel);
	else
		snprintf(out, len, "%.2047s/%.2047s", cwd, rel);
}

/*
 * The document's counters file, inside its output directory (psb_exp_check keeps it there),
 * into lf; 0 or -errno.
 */
static int
open_counters(struct psb_app *app, const struct psb_exp_conf *c, struct psb_logfile *lf,
		char *err, size_t errlen)
{
	char path[PATH_MAX];
	int rc;

	if (psb_exp_output_path(app->results_root, c, c->output.counters_file, path,
			sizeof(path)) != 0) {
		snprintf(err, errlen, "output.counters_file: path too long");
		return -ENAMETOOLONG;
	}
	rc = psb_exp_output_dir(app->results_root, c, err, errlen);
	if (rc != 0)
		return rc < 0 ? rc : -EIO;
	rc = psb_logfile_open(lf, path, c->output.counters_max);
	if (rc != 0) {
		snprintf(err, errlen, "output.counters_file: cannot open %s: %s", path,
			 strerror(-rc));
		return rc;
	}
	psb_counters_file_log(app, "output.counters_file", path, c->output.counters_every,
		c->output.counters_max, "output.counters_max");
	return 0;
}

int
psb_run_start(struct psb_app *app, const struct psb_exp_conf *c, int from_doc, char *err,
		size_t errlen)
{
	struct psb_run *r = &app->run;
	struct psb_run_rec *rec;
	struct psb_logfile cf = { .fd = -1 };
	int rc;

	if (psb_run_active(app)) {
		psb_fail(err, errlen, "experiment %u \"%s\" is running: stop it first", r->id,
			 r->conf.name);
		return -EBUSY;
	}
	if (c->kind == PSB_EXP_PUSHPULL && app->node_role != PSB_NODE_WORKER)
		return psb_fail(err, errlen, "kind: pushpull runs on a worker; this appliance is a %s",
				psb_exp_role_names[app->node_role]);
	if (c->kind == PSB_EXP_SERVE && app->node_role == PSB_NODE_WORKER)
		return psb_fail(err, errlen, "kind: serve runs on a server; this appliance is a "
				"worker");
	if (c->kind == PSB_EXP_STALENESS && !app->stale && !app->trainer)
		return psb_fail(err, errlen, "kind: staleness runs on psb started as a staleness "
				"worker or trainer (psb --config with a document of kind staleness); "
				"this one is a %s", psb_exp_role_names[app->node_role]);
	if (c->kind != PSB_EXP_STALENESS && (app->stale || app->trainer))
		return psb_fail(err, errlen, "kind: this psb is a staleness %s: it runs "
				"experiments of kind staleness alone", app->trainer ? "trainer" :
				"worker");
	if (c->kind == PSB_EXP_STALENESS) {
		/* a document started here leaves its node out: checked as this node's */
		struct psb_exp_conf *tmp = malloc(sizeof(*tmp));

		if (tmp == NULL)
			return -ENOMEM;
		*tmp = *c;
		tmp->node = app->conf.node;
		rc = psb_exp_check(tmp, true, err, errlen);
		free(tmp);
		if (rc != 0)
			return rc;
	}
	if (c->kind == PSB_EXP_STALENESS && app->trainer &&
	    c->staleness.port != app->conf.staleness.port)
		return psb_fail(err, errlen, "staleness.port: the trainer takes joins and posts at "
				"%u as psb started (its document); start psb again to change it",
				(unsigned int)app->conf.staleness.port);
	if (c->kind == PSB_EXP_STALENESS && !app->trainer &&
	    (c->staleness.group != app->conf.staleness.group ||
	     c->staleness.group_port != app->conf.staleness.group_port ||
	     c->staleness.mode != app->conf.staleness.mode)) {
		char ip[20];

		return psb_fail(err, errlen, "staleness.group, group_port, mode: the receiver "
				"takes %s %s:%u as psb started (its document); start psb again to "
				"change them", psb_exp_stale_mode_names[app->conf.staleness.mode],
				psb_ip_str(app->conf.staleness.group, ip),
				(unsigned int)app->conf.staleness.group_port);
	}
	if (from_doc) {
		rc = psb_exp_results_claim(app->results_root, c, err, errlen);
		if (rc != 0)
			return rc;
	}
	if (c->output.counters_file[0] != '\0' &&
	    open_counters(app, c, &cf, err, errlen) != 0)
		return -EINVAL;

	pthread_mutex_lock(&app->ctl_lock);
	r->conf = *c;
	absolute_results(app, c, r->results_dir, sizeof(r->results_dir));
	r->id++;
	r->state = PSB_RUN_RUNNING;
	r->from_doc = from_doc;
	r->start_ns = psb_now_ns(app);
	r->window_ns = r->start_ns;
	r->resets = 0;
	r->end_ns = 0;
	r->serve_final = NULL;
	r->results[0] = '\0';
	r->error[0] = '\0';
	r->counters = cf;
	r->next_counters_ns = r->start_ns;
	if (c->kind == PSB_EXP_SERVE)
		serve_base(app);
	rec = run_rec(app);
	memset(rec, 0, sizeof(*rec));
	rec->id = r->id;
	rec->state = PSB_RUN_RUNNING;
	rec->kind = c->kind;
	snprintf(rec->name, sizeof(rec->name), "%s", c->name);
	if (r->nhist < PSB_RUN_HISTORY)
		r->nhist++;
	pthread_mutex_unlock(&app->ctl_lock);

	PSB_INFO(run, "experiment %u \"%s\" (%s) started", r->id, c->name,
		psb_exp_kind_names[c->kind]);
	if (c->kind == PSB_EXP_PUSHPULL || c->kind == PSB_EXP_STALENESS) {
		rc = run_hand(app, PSB_OP_START, &r->conf);
		if (rc != 0) {
			snprintf(r->error, sizeof(r->error), "workers did not start: %s",
				 strerror(-rc));
			run_finish(app, PSB_RUN_FAILED);
			return psb_fail(err, errlen, "%s", r->error);
		}
	}
	return 0;
}

int
psb_run_stop(struct psb_app *app, char *err, size_t errlen)
{
	struct psb_run *r = &app->run;
	int rc;

	if (!psb_run_active(app))
		return psb_fail(err, errlen, "no experiment is running");
	if (r->conf.kind == PSB_EXP_PUSHPULL || r->conf.kind == PSB_EXP_STALENESS) {
		rc = psb_roles_call(app, run_role(app, r->conf.kind), PSB_OP_STOP, NULL);
		if (rc != 0)
			return psb_fail(err, errlen, "workers did not stop: %s", strerror(-rc));
	}
	PSB_INFO(run, "experiment %u \"%s\" stopped", r->id, r->conf.name);
	run_finish(app, PSB_RUN_STOPPED);
	return 0;
}

int
psb_run_reset(struct psb_app *app, char *err, size_t errlen)
{
	int rc = psb_roles_call(app, NULL, PSB_OP_RESET, NULL);

	if (rc != 0)
		return psb_fail(err, errlen, "roles did not reset: %s", strerror(-rc));
	if (psb_run_active(app)) {
		/* a new window of figures; the run's duration still counts from its start */
		pthread_mutex_lock(&app->ctl_lock);
		app->run.resets++;
		if (app->run.conf.kind == PSB_EXP_SERVE) {
			serve_base(app);
			app->run.window_ns = psb_now_ns(app);
		}
		pthread_mutex_unlock(&app->ctl_lock);
	}
	PSB_INFO(run, "state reset: counters, metrics%s zeroed",
		app->node_role == PSB_NODE_SERVER ? " and the store" : "");
	return 0;
}

int
psb_run_set(struct psb_app *app, const char *param, const char *value, char *err, size_t errlen)
{
	struct psb_run *r = &app->run;
	struct psb_exp_conf *tmp;
	int rc;

	if (psb_exp_fixed_path(param))
		return psb_fail(err, errlen, "%s: node and store settings apply when psb starts",
				param);
	tmp = malloc(sizeof(*tmp));
	if (tmp == NULL)
		return -ENOMEM;
	if (psb_run_active(app)) {
		if (!psb_exp_settable(param)) {
			free(tmp);
			return psb_fail(err, errlen, "%s: cannot change while experiment %u runs (live: "
					"pushpull.rate, output.log_every, output.counters_every)",
					param, r->id);
		}
		*tmp = r->conf;
	} else {
		*tmp = r->have_loaded ? r->loaded : app->conf;
	}
	rc = psb_conf_set(psb_exp_table, tmp, param, value, err, errlen);
	if (rc == 0)
		rc = psb_exp_check(tmp, false, err, errlen);
	if (rc != 0) {
		free(tmp);
		return rc;
	}
	if (psb_run_active(app)) {
		uint64_t now = psb_now_ns(app);

		pthread_mutex_lock(&app->ctl_lock);
		r->conf = *tmp;
		pthread_mutex_unlock(&app->ctl_lock);
		/* a shorter period applies now, not after the line the old one had due */
		if (r->next_counters_ns > now + r->conf.output.counters_every)
			r->next_counters_ns = now + r->conf.output.counters_every;
		if (r->conf.kind == PSB_EXP_PUSHPULL)
			rc = run_hand(app, PSB_OP_SET, &r->conf);
	} else {
		r->loaded = *tmp;
		r->have_loaded = 1;
	}
	free(tmp);
	return rc;
}

void
psb_run_poll(struct psb_app *app, uint64_t now_ns)
{
	struct psb_run *r = &app->run;
	struct psb_worker_pub pub;
	uint32_t n = 0, done = 0;
	uint16_t i;

	if (r->state != PSB_RUN_RUNNING)
		return;
	if (r->counters.fd >= 0 && now_ns >= r->next_counters_ns) {
		psb_counters_append(app, &r->counters);
		r->next_counters_ns = now_ns + r->conf.output.counters_every;
	}
	if (r->conf.kind == PSB_EXP_SERVE) {
		if (r->conf.serve.duration != 0 && now_ns - r->start_ns >= r->conf.serve.duration)
			run_finish(app, PSB_RUN_DONE);
		return;
	}
	if (r->conf.kind == PSB_EXP_STALENESS) {
		struct psb_stale_pub rp;

		if (stale_read(app, &rp, NULL, NULL) && rp.exp_id == r->id && rp.done)
			run_finish(app, PSB_RUN_DONE);	/* failed, if the receiver says so */
		return;
	}
	for (i = 0; i < app->nroles; i++) {
		if (app->roles[i].role != &psb_role_worker)
			continue;
		n++;
		if (psb_worker_read(&app->roles[i], &pub, NULL) == 0 && pub.exp_id == r->id &&
		    pub.done)
			done++;
	}
	if (n != 0 && done == n)
		run_finish(app, PSB_RUN_DONE);
}

void
psb_run_fail_early(struct psb_app *app, int from_doc, const char *fmt, ...)
{
	const struct psb_exp_conf *c = &app->conf;
	const char *const *cols = kind_cols(app, c->kind);
	struct psb_bench_result r;
	char reason[320], label[32], path[PATH_MAX], err[512];
	json_t *rows, *workers, *doc;
	va_list ap;
	uint32_t i;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	PSB_ERR(run, "%s", reason);
	if (!app->autostart)
		exit(1);
	psb_bench_result_empty(&r, c->pushpull.mode, (uint32_t)c->pushpull.len);
	rows = json_array();
	workers = json_array();
	for (i = 0; c->kind == PSB_EXP_PUSHPULL && i < app->nlocal_workers; i++) {
		snprintf(label, sizeof(label), "%u", (unsigned int)(app->rank_base + i));
		json_array_append_new(rows, pp_row(label, &r));
		json_array_append_new(workers, psb_bench_result_json(&r, label));
		snprintf(label, sizeof(label), "worker %u", (unsigned int)(app->rank_base + i));
		psb_worker_results_file(app, app->rank_base + i, path, sizeof(path));
		if (!from_doc && app->results_file != NULL &&
		    psb_bench_write_json(&r, label, "failed", reason, path) != 0)
			PSB_ERR(run, "%s: cannot write results to %s", label, path);
	}
	printf("\nexperiment 1 \"%s\" (%s): failed before it started\n", c->name,
	       psb_exp_kind_names[c->kind]);
	psb_exp_table_print(stdout, rows, cols);
	if (from_doc) {
		/* as a run that ended: the experiment, its state and why, no counters (none ran) */
		doc = json_pack("{s:o,s:s,s:i,s:f,s:o,s:o,s:{},s:s}", "experiment", psb_exp_dump(c),
			"state", state_names[PSB_RUN_FAILED], "id", 1, "elapsed_s", 0.0,
			"rows", json_incref(rows), "workers", json_incref(workers), "counters",
			"error", reason);
		if (psb_exp_results_write(app->results_root, c, doc, rows, cols, path, sizeof(path),
				err, sizeof(err)) != 0)
			PSB_ERR(run, "results NOT written: %s", err);
		else
			printf("results: %s/{result.json,result.csv,result.txt}\n", path);
		json_decref(doc);
	}
	fflush(stdout);
	json_decref(rows);
	json_decref(workers);
	exit(1);
}

void
psb_run_fini(struct psb_app *app)
{
	struct psb_run *r = &app->run;
	char err[256];

	if (!psb_run_active(app))
		return;
	if (app->fail_reason[0] == '\0') {
		psb_run_stop(app, err, sizeof(err));
		return;
	}
	/* the process ends because something did not answer: the experiment failed, for that */
	if (r->conf.kind == PSB_EXP_PUSHPULL || r->conf.kind == PSB_EXP_STALENESS)
		psb_roles_call(app, run_role(app, r->conf.kind), PSB_OP_STOP, NULL);
	snprintf(r->error, sizeof(r->error), "%s", app->fail_reason);
	run_finish(app, PSB_RUN_FAILED);
}
