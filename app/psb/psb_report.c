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

#include "psb.h"
#include "psb_ctl.h"
#include "psb_kv.h"
#include "psb_report.h"

/* Which role instances the totals add a counter over. */
enum {
	TOT_ALL,	/* every one */
	TOT_RX,		/* the rx role: what came from the ports (shards count it again) */
	TOT_TX,		/* the tx role: what went out (other roles count what they queued) */
};

/*
 * Every counter of struct psb_counters, in the order exports show them: one line each, so
 * that the exports and the totals cannot leave one out. drops is an array by reason.
 */
static const struct psb_counter_desc {
	const char *name;
	uint16_t off;
	uint8_t total;
	uint8_t per_reason;
	const char *help;
} cnt_descs[] = {
#define CNT(f, t, h) { #f, offsetof(struct psb_counters, f), t, 0, h }
	CNT(rx_pkts, TOT_RX, "Packets the role instance received"),
	CNT(rx_bytes, TOT_RX, "Bytes the role instance received"),
	CNT(tx_pkts, TOT_TX, "Packets the role instance sent"),
	CNT(tx_bytes, TOT_TX, "Bytes the role instance sent"),
	{ "drops", offsetof(struct psb_counters, drops), TOT_ALL, 1,
		"Frames the role instance dropped, by reason" },
	CNT(handed, TOT_ALL, "Received messages handed to the role serving them"),
	CNT(not_served, TOT_ALL, "Valid psb frames for a role this node does not run"),
	CNT(ring_full, TOT_ALL, "Received messages lost: the serving role's ring was full"),
	CNT(no_mbuf, TOT_ALL, "Packets not built: mbuf pool empty"),
	CNT(tx_ring_full, TOT_ALL, "Packets built to send, lost: the transmit ring was full"),
	CNT(tx_backlog, TOT_ALL, "Packets the port did not take at once"),
	CNT(paused_drops, TOT_ALL, "Packets dropped for a paused port"),
	CNT(byes, TOT_ALL, "BYEs accepted: from a known peer to the data port"),
	CNT(bye_ignored, TOT_ALL, "BYEs ignored: unknown source, or not to the data port"),
	CNT(bye_lost, TOT_ALL, "Accepted BYEs a server shard could not be told of"),
	CNT(arp_replies, TOT_ALL, "ARP replies sent"),
	CNT(arp_learned, TOT_ALL, "ARP replies received (sender learnt, nothing sent)"),
	CNT(icmp_replies, TOT_ALL, "ICMP echo replies sent"),
	CNT(busy_cycles, TOT_ALL, "TSC cycles of polls that found work"),
	CNT(idle_cycles, TOT_ALL, "TSC cycles of polls that found nothing"),
	CNT(polls, TOT_ALL, "Polls of the role instance"),
#undef CNT
};

static inline const uint64_t *
cnt_field(const struct psb_counters *c, const struct psb_counter_desc *d)
{
	return (const uint64_t *)(const void *)((const uint8_t *)c + d->off);
}

const char *
psb_report_counter_help(const char *name)
{
	unsigned int i;

	for (i = 0; i < RTE_DIM(cnt_descs); i++)
		if (strcmp(cnt_descs[i].name, name) == 0)
			return cnt_descs[i].help;
	return NULL;
}

void
psb_report_totals(const struct psb_app *app, struct psb_counters *tot)
{
	const struct psb_counter_desc *d;
	unsigned int k, n;
	uint16_t i;

	memset(tot, 0, sizeof(*tot));
	for (i = 0; i < app->nroles; i++) {
		const struct psb_role_inst *ri = &app->roles[i];

		for (d = cnt_descs; d < cnt_descs + RTE_DIM(cnt_descs); d++) {
			if ((d->total == TOT_RX && ri->role != &psb_role_rx) ||
			    (d->total == TOT_TX && ri->role != &psb_role_tx))
				continue;
			n = d->per_reason ? PSB_DROP_MAX : 1;
			for (k = 0; k < n; k++)
				((uint64_t *)(void *)((uint8_t *)tot + d->off))[k] +=
					cnt_field(&ri->cnt, d)[k];
		}
	}
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

/* The store figures of every server shard, summed. */
struct store_sum {
	struct psb_kv_stats st;
	uint64_t nkeys, bytes, mem, staged_bytes;
	uint32_t staged, held;
};

static void
sum_kv(const struct psb_app *app, struct store_sum *t)
{
	uint16_t i;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < app->nroles; i++) {
		const struct psb_kv *kv;
		uint32_t n, h;
		uint64_t b;

		if (app->roles[i].role != &psb_role_server)
			continue;
		kv = psb_server_kv(&app->roles[i]);
		if (kv == NULL)
			continue;
		psb_kv_stats_add(&t->st, psb_kv_stats(kv));
		t->nkeys += psb_kv_nkeys(kv);
		t->bytes += psb_kv_bytes(kv);
		t->mem += psb_kv_mem(kv);
		psb_kv_staged(kv, &n, &b, &h);
		t->staged += n;
		t->staged_bytes += b;
		t->held += h;
	}
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

/* A budget as the store's counters name it: "max_keys", ...; "allocation" for none. */
static const char *
refused_name(unsigned int budget)
{
	const char *n = psb_budget_name(budget);

	return n != NULL ? n + strlen("store.") : "allocation";
}

void
psb_report_print(const struct psb_app *app, FILE *out)
{
	struct store_sum t;
	const struct psb_kv_stats *st = &t.st;
	uint64_t drops[PSB_DROP_MAX] = { 0 }, discarded = 0, refused = 0;
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

		if (psb_port_stats(app, i, &ps) != 0)
			continue;
		fprintf(out, "port %u (%s): rx %llu pkts %llu B, tx %llu pkts %llu B, missed %llu, "
			"rx errors %llu, tx errors %llu\n", app->port_ids[i], app->specs[i].spec,
			(unsigned long long)ps.ipackets, (unsigned long long)ps.ibytes,
			(unsigned long long)ps.opackets, (unsigned long long)ps.obytes,
			(unsigned long long)ps.imissed, (unsigned long long)ps.ierrors,
			(unsigned long long)ps.oerrors);
	}
	if (app->node_role != PSB_NODE_SERVER)
		return;
	sum_kv(app, &t);
	fprintf(out, "store: %llu keys, %llu B; push %llu, pull %llu, pushpull %llu; rounds %llu; "
		"summed %llu B; duplicates %llu, retries answered %llu, stale %llu\n",
		(unsigned long long)t.nkeys, (unsigned long long)t.bytes,
		(unsigned long long)st->req[PSB_MSG_PUSH], (unsigned long long)st->req[PSB_MSG_PULL],
		(unsigned long long)st->req[PSB_MSG_PUSHPULL], (unsigned long long)st->rounds_closed,
		(unsigned long long)st->bytes_summed, (unsigned long long)st->dup_segs,
		(unsigned long long)st->retries_answered, (unsigned long long)st->stale);
	if (st->repairs != 0)
		fprintf(out, "repairs: %llu asked (%llu making no sense); %llu answer segments sent "
			"again; %llu times push segments asked for again\n",
			(unsigned long long)st->repairs, (unsigned long long)st->repair_bad,
			(unsigned long long)st->repair_segs, (unsigned long long)st->nacks);
	for (k = 0; k < PSB_KV_DISCARD_MAX; k++)
		discarded += st->discarded[k];
	for (k = 0; k < PSB_BUDGET_MAX; k++)
		refused += st->refused[k];
	if (discarded != 0) {
		fprintf(out, "unfinished pushes discarded unapplied: %llu (%llu B):",
			(unsigned long long)discarded, (unsigned long long)st->discarded_bytes);
		for (k = 0; k < PSB_KV_DISCARD_MAX; k++)
			if (st->discarded[k] != 0)
				fprintf(out, " %s %llu", psb_kv_discard_names[k],
					(unsigned long long)st->discarded[k]);
		fprintf(out, "\n");
	}
	if (refused != 0) {
		fprintf(out, "requests refused by a budget: %llu:", (unsigned long long)refused);
		for (k = 0; k < PSB_BUDGET_MAX; k++)
			if (st->refused[k] != 0)
				fprintf(out, " %s %llu", refused_name(k),
					(unsigned long long)st->refused[k]);
		fprintf(out, "\n");
	}
	for (k = 1; k < PSB_ST_MAX; k++)
		if (st->errors[k] != 0)
			fprintf(out, "error replies %-16s %llu\n", psb_status_name((uint8_t)k),
				(unsigned long long)st->errors[k]);
}

/* The counters of struct rte_eth_stats that psb_port_stats carries. */
static const size_t port_ctr_off[] = {
	offsetof(struct rte_eth_stats, ipackets), offsetof(struct rte_eth_stats, opackets),
	offsetof(struct rte_eth_stats, ibytes), offsetof(struct rte_eth_stats, obytes),
	offsetof(struct rte_eth_stats, imissed), offsetof(struct rte_eth_stats, ierrors),
	offsetof(struct rte_eth_stats, oerrors), offsetof(struct rte_eth_stats, rx_nombuf),
};
#define PORT_NCTR	RTE_DIM(port_ctr_off)

/* A port's counts as psb reports them (sum), and the PMD's at the last reading (last). */
static struct {
	uint64_t sum[PORT_NCTR];
	uint64_t last[PORT_NCTR];
} port_tot[PSB_MAX_PORTS];
static pthread_mutex_t port_tot_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t *
port_ctr(struct rte_eth_stats *s, unsigned int k)
{
	return (uint64_t *)(void *)((char *)s + port_ctr_off[k]);
}

int
psb_port_stats(const struct psb_app *app, unsigned int i, struct rte_eth_stats *out)
{
	struct rte_eth_stats now;
	int rc, blank = 1, back = 0;
	unsigned int k;

	memset(out, 0, sizeof(*out));
	if (i >= PSB_MAX_PORTS || i >= app->nports)
		return -EINVAL;
	rc = rte_eth_stats_get(app->port_ids[i], &now);
	if (rc != 0)
		memset(&now, 0, sizeof(now));
	pthread_mutex_lock(&port_tot_lock);
	for (k = 0; k < PORT_NCTR; k++) {
		blank &= *port_ctr(&now, k) == 0;
		back |= *port_ctr(&now, k) < port_tot[i].last[k];
	}
	/*
	 * All 0: no peer (memif), or counts started again with nothing yet: nothing to add.
	 * Lower than last time: the PMD counts from 0 again, all it has is new. Otherwise
	 * what it counted since the last reading is new.
	 */
	for (k = 0; k < PORT_NCTR && !blank; k++) {
		port_tot[i].sum[k] += *port_ctr(&now, k) - (back ? 0 : port_tot[i].last[k]);
		port_tot[i].last[k] = *port_ctr(&now, k);
	}
	for (k = 0; k < PORT_NCTR; k++)
		*port_ctr(out, k) = port_tot[i].sum[k];
	pthread_mutex_unlock(&port_tot_lock);
	return rc;
}

/*
 * The sums start again from 0; the PMD's last reading stays, as what comes next is counted
 * from it: memif's counters of a port without a peer are not reset by rte_eth_stats_reset,
 * and resume at their old values when a peer comes.
 */
void
psb_port_stats_clear(unsigned int i)
{
	if (i >= PSB_MAX_PORTS)
		return;
	pthread_mutex_lock(&port_tot_lock);
	memset(port_tot[i].sum, 0, sizeof(port_tot[i].sum));
	pthread_mutex_unlock(&port_tot_lock);
}

void
psb_report_counters_emit(struct psb_emit *e, const struct psb_counters *c)
{
	const struct psb_counter_desc *d;
	unsigned int k;

	for (d = cnt_descs; d < cnt_descs + RTE_DIM(cnt_descs); d++) {
		if (!d->per_reason) {
			psb_emit_int(e, d->name, (json_int_t)*cnt_field(c, d));
			continue;
		}
		psb_emit_open(e, d->name);
		for (k = 1; k < PSB_DROP_MAX; k++)
			psb_emit_int(e, psb_drop_names[k], (json_int_t)cnt_field(c, d)[k]);
		psb_emit_close(e);
	}
}

void
psb_report_port_emit(struct psb_emit *e, struct psb_app *app, unsigned int i)
{
	uint16_t pid = app->port_ids[i];
	struct psb_afp_stats *afp = &app->afp[i];
	struct rte_eth_stats ps;

	(void)psb_port_stats(app, i, &ps);
	psb_emit_int(e, "port", pid);
	psb_emit_str(e, "spec", app->specs[i].spec);
	psb_emit_int(e, "ipackets", (json_int_t)ps.ipackets);
	psb_emit_int(e, "opackets", (json_int_t)ps.opackets);
	psb_emit_int(e, "ibytes", (json_int_t)ps.ibytes);
	psb_emit_int(e, "obytes", (json_int_t)ps.obytes);
	psb_emit_int(e, "imissed", (json_int_t)ps.imissed);
	psb_emit_int(e, "ierrors", (json_int_t)ps.ierrors);
	psb_emit_int(e, "oerrors", (json_int_t)ps.oerrors);
	psb_emit_int(e, "rx_nombuf", (json_int_t)ps.rx_nombuf);
	psb_emit_int(e, "bye_pauses", (json_int_t)app->bye[pid].pauses);
	psb_emit_int(e, "bye_pause_expiries", (json_int_t)app->bye[pid].expiries);
	psb_emit_int(e, "faults", (json_int_t)app->port_faults[pid]);
	if (afp->nfd == 0)
		return;
	psb_afp_stats_update(afp);
	psb_emit_int(e, "kernel_packets",
		(json_int_t)__atomic_load_n(&afp->packets, __ATOMIC_RELAXED));
	psb_emit_int(e, "kernel_drops", (json_int_t)__atomic_load_n(&afp->drops, __ATOMIC_RELAXED));
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
psb_report_sched_json(const struct psb_app *app)
{
	const struct psb_sched_stats *st;
	unsigned int i;

	for (i = 0; i < app->nroles; i++) {
		const struct psb_role_inst *ri = &app->roles[i];

		if (ri->role != &psb_role_scheduler || psb_scheduler_sched(ri) == NULL)
			continue;
		st = psb_sched_stats(psb_scheduler_sched(ri));
		return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "registered",
			(json_int_t)st->registered, "reregistered", (json_int_t)st->reregistered,
			"rejected", (json_int_t)st->rejected, "barriers_released",
			(json_int_t)st->barriers_released, "workers_finished",
			(json_int_t)st->workers_finished, "servers_ended",
			(json_int_t)st->servers_ended, "heartbeats", (json_int_t)st->heartbeats,
			"servers_dead", (json_int_t)st->servers_dead, "workers_dead",
			(json_int_t)st->workers_dead, "servers_restarted",
			(json_int_t)st->servers_restarted);
	}
	return NULL;
}

json_t *
psb_report_store_json(const struct psb_app *app, bool with_value_sum)
{
	const struct psb_store_budget *b = &app->budget;
	json_t *s, *e = json_object(), *d = json_object(), *r = json_object();
	struct store_sum t;
	const struct psb_kv_stats *st = &t.st;
	unsigned int k;

	sum_kv(app, &t);
	for (k = 1; k < PSB_ST_MAX; k++)
		json_object_set_new(e, psb_status_name((uint8_t)k),
			json_integer((json_int_t)st->errors[k]));
	for (k = 0; k < PSB_KV_DISCARD_MAX; k++)
		json_object_set_new(d, psb_kv_discard_names[k],
			json_integer((json_int_t)st->discarded[k]));
	for (k = 0; k < PSB_BUDGET_MAX; k++)
		json_object_set_new(r, refused_name(k), json_integer((json_int_t)st->refused[k]));
	s = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o}",
		"keys", (json_int_t)t.nkeys, "bytes", (json_int_t)t.bytes,
		"push", (json_int_t)st->req[PSB_MSG_PUSH], "pull", (json_int_t)st->req[PSB_MSG_PULL],
		"pushpull", (json_int_t)st->req[PSB_MSG_PUSHPULL],
		"rounds_closed", (json_int_t)st->rounds_closed,
		"bytes_summed", (json_int_t)st->bytes_summed,
		"dup_segs", (json_int_t)st->dup_segs,
		"retries_answered", (json_int_t)st->retries_answered,
		"stale", (json_int_t)st->stale, "errors", e);
	if (s == NULL) {
		json_decref(d);
		json_decref(r);
		return NULL;
	}
	json_object_set_new(s, "bytes_sent", json_integer((json_int_t)st->bytes_sent));
	json_object_set_new(s, "batches", json_integer((json_int_t)st->batches));
	json_object_set_new(s, "bad_records", json_integer((json_int_t)st->bad_records));
	json_object_set_new(s, "repairs", json_integer((json_int_t)st->repairs));
	json_object_set_new(s, "repair_segs", json_integer((json_int_t)st->repair_segs));
	json_object_set_new(s, "nacks", json_integer((json_int_t)st->nacks));
	json_object_set_new(s, "repair_bad", json_integer((json_int_t)st->repair_bad));
	json_object_set_new(s, "values_copied", json_integer((json_int_t)st->values_copied));
	json_object_set_new(s, "mem", json_integer((json_int_t)t.mem));
	json_object_set_new(s, "staged", json_integer((json_int_t)t.staged));
	json_object_set_new(s, "staged_bytes", json_integer((json_int_t)t.staged_bytes));
	json_object_set_new(s, "held", json_integer((json_int_t)t.held));
	json_object_set_new(s, "segs_held", json_integer((json_int_t)st->segs_held));
	json_object_set_new(s, "segs_copied", json_integer((json_int_t)st->segs_copied));
	json_object_set_new(s, "discarded", d);
	json_object_set_new(s, "discarded_bytes", json_integer((json_int_t)st->discarded_bytes));
	json_object_set_new(s, "refused", r);
	json_object_set_new(s, "budget_drops", json_integer((json_int_t)st->budget_drops));
	json_object_set_new(s, "limits", json_pack("{s:I,s:I,s:I,s:I,s:f,s:I}",
		"max_bytes", (json_int_t)b->max_bytes, "max_keys", (json_int_t)b->max_keys,
		"reasm_bytes", (json_int_t)b->reasm_bytes,
		"reasm_sender_bytes", (json_int_t)b->reasm_sender_bytes,
		"reasm_timeout_s", b->reasm_timeout_ns / 1e9, "hold_max", (json_int_t)b->hold_max));
	if (with_value_sum)
		json_object_set_new(s, "value_sum", json_real(value_sum(app)));
	return s;
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
	char tmp[4096];
	uint16_t i;
	int rc;

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
		psb_emit_tree(&e);
		psb_emit_open(&e, NULL);
		psb_report_port_emit(&e, app, i);
		json_array_append_new(ports, psb_emit_done(&e));
	}
	json_object_set_new(root, "ports", ports);
	if (app->node_role == PSB_NODE_SERVER) {
		json_t *st = psb_report_store_json(app, true);

		if (st != NULL)
			json_object_set_new(st, "digest", store_digest_json(app));
		json_object_set_new(root, "store", st);
	}
	if (app->host_sched) {
		json_t *sc = psb_report_sched_json(app);

		if (sc != NULL)
			json_object_set_new(root, "scheduler", sc);
	}
	json_object_set_new(root, "process", json_pack("{s:I}", "rss_max_bytes",
		(json_int_t)rss_max_bytes()));
	json_object_set_new(root, "control", psb_counters_control_json(app));
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= sizeof(tmp)) {
		json_decref(root);
		return -ENAMETOOLONG;
	}
	rc = json_dump_file(root, tmp, JSON_INDENT(2));
	json_decref(root);
	if (rc != 0 || rename(tmp, path) != 0) {
		unlink(tmp);
		return -EIO;
	}
	return 0;
}
