/* End-of-run reports: counters of roles, ports and the store, as a table and as JSON. */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <rte_ethdev.h>

#include "psb_app.h"
#include "psb_guard.h"
#include "psb_cli.h"
#include "psb_counters.h"
#include "psb_ctl.h"
#include "psb_kv.h"
#include "psb_report.h"

void
psb_report_totals(const struct psb_app *app, struct psb_counters *tot)
{
	uint16_t i;

	memset(tot, 0, sizeof(*tot));
	for (i = 0; i < app->nroles; i++)
		psb_totals_add(tot, &app->roles[i].cnt);
	for (i = 0; i < app->nroles; i++)
		psb_totals_io(tot, &app->roles[i].cnt, app->roles[i].role->name);
}

/* Sum of the store counters of every server shard. */
static double
value_sum(const struct psb_app *app)
{
	double sum = 0;
	uint16_t i;

	for (i = 0; i < app->nroles; i++)
		if (app->roles[i].role == &psb_role_server && psb_server_kv(&app->roles[i]) != NULL)
			sum += psb_kv_value_sum(psb_server_kv(&app->roles[i]));
	return sum;
}

static uint64_t
sum_drops(const struct psb_counters *c)
{
	uint64_t n = 0;
	unsigned int k;

	for (k = 1; k < PSB_DROP_MAX; k++)
		n += c->drops[k];
	return n;
}

/* "what: N (B B): label n ..." of the n counts of v that are not 0; nothing when all are. */
static void
print_by(FILE *out, const char *what, const uint64_t *v, unsigned int n,
		const char *(*label)(unsigned int), const uint64_t *bytes)
{
	uint64_t sum = 0;
	unsigned int k;

	for (k = 0; k < n; k++)
		sum += v[k];
	if (sum == 0)
		return;
	fprintf(out, "%s: %llu", what, (unsigned long long)sum);
	if (bytes != NULL)
		fprintf(out, " (%llu B)", (unsigned long long)*bytes);
	fprintf(out, ":");
	for (k = 0; k < n; k++)
		if (v[k] != 0)
			fprintf(out, " %s %llu", label(k), (unsigned long long)v[k]);
	fprintf(out, "\n");
}

void
psb_report_print(const struct psb_app *app, FILE *out)
{
	struct psb_store_snap t;
	const struct psb_kv_stats *st = &t.st;
	uint64_t drops[PSB_DROP_MAX] = { 0 };
	uint16_t i;
	unsigned int k;

	if (app->quiet)
		return;
	fprintf(out, "\n%-10s %5s %6s %12s %12s %9s %9s %9s %7s\n", "role", "inst", "lcore",
		"rx_pkts", "tx_pkts", "dropped", "ring_full", "no_mbuf", "busy%");
	for (i = 0; i < app->nroles; i++) {
		const struct psb_role_inst *ri = &app->roles[i];
		const struct psb_counters *c = &ri->cnt;
		uint64_t cyc = c->busy_cycles + c->idle_cycles;

		for (k = 1; k < PSB_DROP_MAX; k++)
			drops[k] += c->drops[k];
		fprintf(out, "%-10s %5d %6u %12llu %12llu %9llu %9llu %9llu %6.1f%%\n", ri->role->name,
			ri->idx, ri->lcore, (unsigned long long)c->rx_pkts,
			(unsigned long long)c->tx_pkts, (unsigned long long)(sum_drops(c) + c->not_served),
			(unsigned long long)c->ring_full, (unsigned long long)c->no_mbuf,
			cyc != 0 ? 100.0 * (double)c->busy_cycles / (double)cyc : 0.0);
	}
	for (k = 1; k < PSB_DROP_MAX; k++)
		if (drops[k] != 0)
			fprintf(out, "dropped %-12s %llu\n", psb_drop_names[k],
				(unsigned long long)drops[k]);
	for (i = 0; i < app->nports; i++) {
		struct rte_eth_stats ps;

		if (!psb_port_shown(app, i) || psb_port_stats(app, i, &ps) != 0)
			continue;
		fprintf(out, "port %u (%s): rx %llu pkts %llu B, tx %llu pkts %llu B, missed %llu, "
			"rx errors %llu, tx errors %llu\n", app->port_ids[i], app->specs[i].spec,
			(unsigned long long)ps.ipackets, (unsigned long long)ps.ibytes,
			(unsigned long long)ps.opackets, (unsigned long long)ps.obytes,
			(unsigned long long)ps.imissed, (unsigned long long)ps.ierrors,
			(unsigned long long)ps.oerrors);
		if (app->afp[i].nfd != 0)
			fprintf(out, "port %u (%s): the kernel dropped %llu of %llu frames for its "
				"socket (ring full)\n", app->port_ids[i], app->specs[i].spec,
				(unsigned long long)__atomic_load_n(&app->afp[i].drops, __ATOMIC_RELAXED),
				(unsigned long long)__atomic_load_n(&app->afp[i].packets,
					__ATOMIC_RELAXED));
	}
	{
		uint64_t waited, gave_up;

		psb_guard_grace_stats(&waited, &gave_up);
		if (waited != 0)
			fprintf(out, "memif: %llu unmaps of a peer's memory held until the lcores were "
				"out of their bursts (%llu waited %.1f s and went on)\n",
				(unsigned long long)waited, (unsigned long long)gave_up,
				PSB_GUARD_GRACE_NS / 1e9);
	}
	if (app->node_role != PSB_NODE_SERVER)
		return;
	psb_snap_store(app, &t);
	fprintf(out, "store: %llu keys, %llu B; push %llu, pull %llu, pushpull %llu; rounds %llu; "
		"summed %llu B; duplicates %llu, retries answered %llu, stale %llu\n",
		(unsigned long long)t.keys, (unsigned long long)t.bytes,
		(unsigned long long)st->req[PSB_MSG_PUSH], (unsigned long long)st->req[PSB_MSG_PULL],
		(unsigned long long)st->req[PSB_MSG_PUSHPULL], (unsigned long long)st->rounds_closed,
		(unsigned long long)st->bytes_summed, (unsigned long long)st->dup_segs,
		(unsigned long long)st->retries_answered, (unsigned long long)st->stale);
	if (st->repairs != 0)
		fprintf(out, "repairs: %llu asked (%llu making no sense); %llu answer segments sent "
			"again; %llu times push segments asked for again\n",
			(unsigned long long)st->repairs, (unsigned long long)st->repair_bad,
			(unsigned long long)st->repair_segs, (unsigned long long)st->nacks);
	print_by(out, "unfinished pushes discarded unapplied", st->discarded, PSB_KV_DISCARD_MAX,
		psb_store_discard_label, &st->discarded_bytes);
	print_by(out, "requests refused by a budget", st->refused, PSB_BUDGET_MAX,
		psb_store_budget_label, NULL);
	print_by(out, "resends not sent, over their sender's budget", st->resend_over_budget,
		PSB_KV_RESEND_MAX, psb_store_resend_label, &st->resend_over_budget_bytes);
	for (k = 1; k < PSB_ST_MAX; k++)
		if (st->errors[k] != 0)
			fprintf(out, "error replies %-16s %llu\n", psb_status_name((uint8_t)k),
				(unsigned long long)st->errors[k]);
}


void
psb_report_counters_block(struct psb_metric_block *b)
{
	*b = psb_role_block;
	/* the counters alone: not lcore and busy_pct, which follow them */
	while (b->n > 0 && b->m[b->n - 1].off >= offsetof(struct psb_role_snap, lcore))
		b->n--;
}

void
psb_report_counters_emit(struct psb_emit *e, const struct psb_counters *c)
{
	struct psb_role_snap r = { .c = *c };
	struct psb_metric_block b;

	psb_report_counters_block(&b);
	psb_metric_emit(e, &b, &r, 1);
}

json_t *
psb_report_counters_json(const struct psb_counters *c)
{
	struct psb_emit e;

	psb_emit_tree(&e);
	psb_emit_open(&e, NULL);
	psb_report_counters_emit(&e, c);
	return psb_emit_done(&e);
}

json_t *
psb_report_block_json(const struct psb_metric_block *b, const void *base)
{
	struct psb_emit e;

	psb_emit_tree(&e);
	psb_emit_open(&e, NULL);
	psb_metric_emit(&e, b, base, 1);
	return psb_emit_done(&e);
}

/*
 * Every key's digest (length, round, smallest, largest and summed element), for checking
 * a run element by element after the fact; the first PSB_REPORT_DIGEST_MAX keys.
 */
#define PSB_REPORT_DIGEST_MAX	4096

static json_t *
store_digest_json(const struct psb_app *app)
{
	struct psb_kv_digest *dg = calloc(PSB_REPORT_DIGEST_MAX, sizeof(*dg));
	json_t *a = json_array();
	uint32_t left = PSB_REPORT_DIGEST_MAX, n, k;
	uint16_t i;

	if (dg == NULL || a == NULL) {
		free(dg);
		json_decref(a);
		return NULL;
	}
	for (i = 0; i < app->nroles && left != 0; i++) {
		const struct psb_kv *kv;

		if (app->roles[i].role != &psb_role_server ||
		    (kv = psb_server_kv(&app->roles[i])) == NULL)
			continue;
		n = psb_kv_digest(kv, dg, left);
		if (n > left)
			n = left;
		for (k = 0; k < n; k++)
			json_array_append_new(a, json_pack("{s:I,s:I,s:I,s:f,s:f,s:f}",
				"key", (json_int_t)dg[k].key, "len", (json_int_t)dg[k].len,
				"round", (json_int_t)dg[k].round, "min", (double)dg[k].min,
				"max", (double)dg[k].max, "sum", dg[k].sum));
		left -= n;
	}
	free(dg);
	return a;
}

/* Peak resident memory of the process (VmHWM), bytes; 0 if unknown. */
static uint64_t
rss_max_bytes(void)
{
	char line[256];
	unsigned long long kb = 0;
	FILE *f = fopen("/proc/self/status", "r");

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024;
}

int
psb_report_write_json(struct psb_app *app, const char *path)
{
	json_t *root = json_object(), *roles = json_array(), *ports = json_array();
	struct psb_counters tot;
	struct psb_emit e;
	uint16_t i;

	for (i = 0; i < app->nroles; i++) {
		const struct psb_role_inst *ri = &app->roles[i];
		json_t *r = psb_report_counters_json(&ri->cnt);

		json_object_set_new(r, "role", json_string(ri->role->name));
		json_object_set_new(r, "instance", json_integer(ri->idx));
		json_object_set_new(r, "lcore", json_integer(ri->lcore));
		json_array_append_new(roles, r);
	}
	json_object_set_new(root, "roles", roles);
	psb_report_totals(app, &tot);
	json_object_set_new(root, "totals", psb_report_counters_json(&tot));
	for (i = 0; i < app->nports; i++) {
		struct psb_port_snap p;

		if (!psb_port_shown(app, i))
			continue;
		psb_snap_port(app, i, &p);
		psb_emit_tree(&e);
		psb_emit_open(&e, NULL);
		psb_snap_port_emit(&e, app, &p, 0);
		json_array_append_new(ports, psb_emit_done(&e));
	}
	json_object_set_new(root, "ports", ports);
	if (app->node_role == PSB_NODE_SERVER) {
		struct psb_store_snap t;
		json_t *st;

		psb_snap_store(app, &t);
		st = psb_report_block_json(&psb_store_block, &t);
		if (st != NULL) {
			json_object_set_new(st, "value_sum", json_real(value_sum(app)));
			json_object_set_new(st, "digest", store_digest_json(app));
		}
		json_object_set_new(root, "store", st);
	}
	if (app->host_sched) {
		struct psb_sched_stats sc;

		if (psb_snap_sched(app, &sc))
			json_object_set_new(root, "scheduler",
				psb_report_block_json(&psb_sched_block, &sc));
	}
	if (app->has_exc) {
		struct psb_pt_snap pt;
		json_t *o;

		if (psb_snap_pt(&pt)) {
			o = psb_report_block_json(&psb_pt_block, &pt);
			if (o != NULL)
				json_object_set_new(o, "roce_qp", psb_roce_qp_reply(app, app->roce_qps));
			json_object_set_new(root, "passthrough", o);
		}
	}
	json_object_set_new(root, "process", json_pack("{s:I}", "rss_max_bytes",
		(json_int_t)rss_max_bytes()));
	json_object_set_new(root, "control", psb_counters_control_json(app));
	return psb_cli_json_save(root, path);
}
