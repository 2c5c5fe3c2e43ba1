/* End-of-run reports: counters of roles, ports and the store, as a table and as JSON. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <rte_ethdev.h>

#include "psb.h"
#include "psb_ctl.h"
#include "psb_kv.h"
#include "psb_report.h"

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

static void
sum_kv(const struct psb_app *app, struct psb_kv_stats *st, uint64_t *nkeys, uint64_t *bytes)
{
	uint16_t i;
	unsigned int k;

	memset(st, 0, sizeof(*st));
	*nkeys = 0;
	*bytes = 0;
	for (i = 0; i < app->nroles; i++) {
		const struct psb_kv *kv;
		const struct psb_kv_stats *s;

		if (app->roles[i].role != &psb_role_server)
			continue;
		kv = psb_server_kv(&app->roles[i]);
		if (kv == NULL)
			continue;
		s = psb_kv_stats(kv);
		for (k = 0; k < 4; k++)
			st->req[k] += s->req[k];
		st->segs_in += s->segs_in;
		st->dup_segs += s->dup_segs;
		st->retries_answered += s->retries_answered;
		st->stale += s->stale;
		st->rounds_closed += s->rounds_closed;
		st->bytes_summed += s->bytes_summed;
		st->bytes_sent += s->bytes_sent;
		st->batches += s->batches;
		st->bad_records += s->bad_records;
		for (k = 0; k < PSB_ST_MAX; k++)
			st->errors[k] += s->errors[k];
		*nkeys += psb_kv_nkeys(kv);
		*bytes += psb_kv_bytes(kv);
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

void
psb_report_print(const struct psb_app *app, FILE *out)
{
	struct psb_kv_stats st;
	uint64_t nkeys, bytes, drops[PSB_DROP_MAX] = { 0 };
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

		if (rte_eth_stats_get(app->port_ids[i], &ps) != 0)
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
	sum_kv(app, &st, &nkeys, &bytes);
	fprintf(out, "store: %llu keys, %llu B; push %llu, pull %llu, pushpull %llu; rounds %llu; "
		"summed %llu B; duplicates %llu, retries answered %llu, stale %llu\n",
		(unsigned long long)nkeys, (unsigned long long)bytes,
		(unsigned long long)st.req[PSB_MSG_PUSH], (unsigned long long)st.req[PSB_MSG_PULL],
		(unsigned long long)st.req[PSB_MSG_PUSHPULL], (unsigned long long)st.rounds_closed,
		(unsigned long long)st.bytes_summed, (unsigned long long)st.dup_segs,
		(unsigned long long)st.retries_answered, (unsigned long long)st.stale);
	for (k = 1; k < PSB_ST_MAX; k++)
		if (st.errors[k] != 0)
			fprintf(out, "error replies %-16s %llu\n", psb_status_name((uint8_t)k),
				(unsigned long long)st.errors[k]);
}

void
psb_report_counters_emit(struct psb_emit *e, const struct psb_counters *c)
{
	unsigned int k;

	psb_emit_int(e, "rx_pkts", (json_int_t)c->rx_pkts);
	psb_emit_int(e, "rx_bytes", (json_int_t)c->rx_bytes);
	psb_emit_int(e, "tx_pkts", (json_int_t)c->tx_pkts);
	psb_emit_int(e, "tx_bytes", (json_int_t)c->tx_bytes);
	psb_emit_open(e, "drops");
	for (k = 1; k < PSB_DROP_MAX; k++)
		psb_emit_int(e, psb_drop_names[k], (json_int_t)c->drops[k]);
	psb_emit_close(e);
	psb_emit_int(e, "not_served", (json_int_t)c->not_served);
	psb_emit_int(e, "ring_full", (json_int_t)c->ring_full);
	psb_emit_int(e, "no_mbuf", (json_int_t)c->no_mbuf);
	psb_emit_int(e, "tx_backlog", (json_int_t)c->tx_backlog);
	psb_emit_int(e, "paused_drops", (json_int_t)c->paused_drops);
	psb_emit_int(e, "byes", (json_int_t)c->byes);
	psb_emit_int(e, "linearize_fail", (json_int_t)c->linearize_fail);
	psb_emit_int(e, "arp_replies", (json_int_t)c->arp_replies);
	psb_emit_int(e, "icmp_replies", (json_int_t)c->icmp_replies);
	psb_emit_int(e, "busy_cycles", (json_int_t)c->busy_cycles);
	psb_emit_int(e, "idle_cycles", (json_int_t)c->idle_cycles);
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
psb_report_store_json(const struct psb_app *app, bool with_value_sum)
{
	json_t *s, *e = json_object();
	struct psb_kv_stats st;
	uint64_t nkeys, bytes;
	unsigned int k;

	sum_kv(app, &st, &nkeys, &bytes);
	for (k = 1; k < PSB_ST_MAX; k++)
		json_object_set_new(e, psb_status_name((uint8_t)k),
			json_integer((json_int_t)st.errors[k]));
	s = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o}",
		"keys", (json_int_t)nkeys, "bytes", (json_int_t)bytes,
		"push", (json_int_t)st.req[PSB_MSG_PUSH], "pull", (json_int_t)st.req[PSB_MSG_PULL],
		"pushpull", (json_int_t)st.req[PSB_MSG_PUSHPULL],
		"rounds_closed", (json_int_t)st.rounds_closed,
		"bytes_summed", (json_int_t)st.bytes_summed,
		"dup_segs", (json_int_t)st.dup_segs,
		"retries_answered", (json_int_t)st.retries_answered,
		"stale", (json_int_t)st.stale, "errors", e);
	if (s == NULL)
		return NULL;
	json_object_set_new(s, "bytes_sent", json_integer((json_int_t)st.bytes_sent));
	json_object_set_new(s, "batches", json_integer((json_int_t)st.batches));
	json_object_set_new(s, "bad_records", json_integer((json_int_t)st.bad_records));
	if (with_value_sum)
		json_object_set_new(s, "value_sum", json_real(value_sum(app)));
	return s;
}

int
psb_report_write_json(const struct psb_app *app, const char *path)
{
	json_t *root = json_object(), *roles = json_array(), *ports = json_array();
	struct psb_counters tot;
	char tmp[4096];
	uint16_t i;
	unsigned int k;
	int rc;

	memset(&tot, 0, sizeof(tot));
	for (i = 0; i < app->nroles; i++) {
		const struct psb_role_inst *ri = &app->roles[i];
		json_t *r = psb_report_counters_json(&ri->cnt);

		json_object_set_new(r, "role", json_string(ri->role->name));
		json_object_set_new(r, "instance", json_integer(ri->idx));
		json_object_set_new(r, "lcore", json_integer(ri->lcore));
		json_array_append_new(roles, r);
		for (k = 1; k < PSB_DROP_MAX; k++)
			tot.drops[k] += ri->cnt.drops[k];
		tot.rx_pkts += ri->role == &psb_role_rx ? ri->cnt.rx_pkts : 0;
		tot.rx_bytes += ri->role == &psb_role_rx ? ri->cnt.rx_bytes : 0;
		tot.tx_pkts += ri->role == &psb_role_tx ? ri->cnt.tx_pkts : 0;
		tot.not_served += ri->cnt.not_served;
		tot.ring_full += ri->cnt.ring_full;
		tot.no_mbuf += ri->cnt.no_mbuf;
		tot.arp_replies += ri->cnt.arp_replies;
		tot.icmp_replies += ri->cnt.icmp_replies;
	}
	json_object_set_new(root, "roles", roles);
	json_object_set_new(root, "totals", psb_report_counters_json(&tot));
	for (i = 0; i < app->nports; i++) {
		struct rte_eth_stats ps;
		json_t *p;

		if (rte_eth_stats_get(app->port_ids[i], &ps) != 0)
			continue;
		p = json_pack("{s:i,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "port", app->port_ids[i],
			"spec", app->specs[i].spec, "ipackets", (json_int_t)ps.ipackets,
			"opackets", (json_int_t)ps.opackets, "ibytes", (json_int_t)ps.ibytes,
			"obytes", (json_int_t)ps.obytes, "imissed", (json_int_t)ps.imissed,
			"ierrors", (json_int_t)ps.ierrors, "oerrors", (json_int_t)ps.oerrors);
		if (p != NULL)
			json_array_append_new(ports, p);
	}
	json_object_set_new(root, "ports", ports);
	if (app->node_role == PSB_NODE_SERVER)
		json_object_set_new(root, "store", psb_report_store_json(app, true));
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
