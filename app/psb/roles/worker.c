/* worker role: register, resolve servers, run ps-lite's test_benchmark workload. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <rte_malloc.h>

#include "psb_app.h"
#include "psb_bench.h"
#include "psb_ctl.h"


enum worker_state { W_REGISTER, W_RESOLVE, W_READY, W_RUN };

#define PUB_EVERY_NS	(50ull * 1000 * 1000)	/* live figures for the control plane */

/* Figures for readers on other lcores: a sequence lock, odd while being written. */
struct worker_snap {
	volatile uint32_t seq;
	struct psb_worker_pub pub;
	struct psb_bench_result r;
};

struct worker_priv {
	struct psb_agent ag;
	enum worker_state st;
	struct psb_addr src;
	uint16_t nservers;
	struct psb_addr servers[PSB_SCHED_MAX_NODES];
	uint64_t key_begin[PSB_SCHED_MAX_NODES];
	uint64_t key_end[PSB_SCHED_MAX_NODES];
	uint64_t *keys;
	struct psb_bench *bench;
	/*
	 * The experiment to run or running: the worker's own copy, made on its lcore when a
	 * START or SET hands it one, so nothing the control plane does meanwhile changes it.
	 */
	struct psb_exp_conf exp;
	int have_exp;
	uint32_t exp_id;
	uint32_t pending_id;		/* START arrived before the servers were known */
	uint64_t next_pub_ns;
	struct worker_snap snap;
	uint64_t next_arp_ns;
	uint64_t resolve_ns;		/* W_RESOLVE: ARP for the servers since */
	uint32_t idle_passes;
	uint64_t last_now;
	uint64_t finalize_next_ns;
	int finalized;			/* the scheduler acknowledged our FINALIZE */
	int was_registered;		/* counted in app->wk_registered */
	struct psb_sched_lost lost;	/* the first server the scheduler said the job lost */
	int lost_known;
	uint64_t bad_acks;		/* malformed HEARTBEAT_ACKs */
	char label[32];
	char reason[256];		/* why the last experiment failed */
};

#define FINALIZE_RETRY_NS	200000000ull

static void lost_fail(struct worker_priv *wp);

static int
worker_init(struct psb_role_inst *ri)
{
	struct psb_app *app = ri->app;
	struct worker_priv *wp = rte_zmalloc("psb_worker", sizeof(*wp), RTE_CACHE_LINE_SIZE);

	if (wp == NULL)
		return -ENOMEM;
	wp->src = app->me;
	wp->src.port = (uint16_t)(app->worker_port_base + ri->idx);
	psb_agent_init(&wp->ag, app, 0, wp->src.port);
	if (app->sched_ip == 0)
		wp->ag.rank = (uint16_t)(app->rank_base + ri->idx);
	ri->priv = wp;
	return 0;
}

static int
server_of(const struct worker_priv *wp, uint64_t key)
{
	uint16_t s;

	for (s = 0; s < wp->nservers; s++)
		if (key >= wp->key_begin[s] && (key < wp->key_end[s] || wp->key_end[s] == UINT64_MAX))
			return s;
	return 0;
}

static int
worker_dest(void *arg, uint64_t key)
{
	const struct psb_role_inst *ri = arg;

	return server_of(ri->priv, key);
}

static int
worker_send(void *arg, const struct psb_hdr *h, const void *payload)
{
	struct psb_role_inst *ri = arg;
	struct worker_priv *wp = ri->priv;
	const struct psb_addr *dst = &wp->servers[server_of(wp, h->key)];
	struct rte_mbuf *m;

	if (!psb_out_room(ri, 1))
		return -ENOBUFS;
	m = psb_build(ri, &wp->src, dst, h, payload);
	if (m == NULL)
		return -ENOBUFS;
	psb_out(ri, m, dst->ip);
	return 0;
}

/* Publish the live figures (and the final ones once done). */
static void
publish(struct psb_role_inst *ri, uint64_t now, int running, int done, int rc)
{
	struct worker_priv *wp = ri->priv;
	struct worker_snap *sn = &wp->snap;

	psb_seq_write_begin(&sn->seq);
	sn->pub.exp_id = wp->exp_id;
	sn->pub.running = running;
	sn->pub.done = done;
	sn->pub.rc = rc;
	sn->pub.repeat = wp->have_exp ? wp->exp.pushpull.repeat : 0;
	sn->pub.warming = wp->bench != NULL && psb_bench_warming(wp->bench);
	snprintf(sn->pub.reason, sizeof(sn->pub.reason), "%s", rc < 0 ? wp->reason : "");
	if (wp->bench != NULL) {
		psb_bench_result(wp->bench, now, &sn->r);
	} else if (wp->have_exp) {
		/* nothing ran (the servers never answered): no figures, but what was asked */
		psb_bench_result_empty(&sn->r, wp->exp.pushpull.mode,
			(uint32_t)wp->exp.pushpull.len);
	}
	psb_seq_write_end(&sn->seq);
	wp->next_pub_ns = now + PUB_EVERY_NS;
}

int
psb_worker_read(const struct psb_role_inst *ri, struct psb_worker_pub *pub,
		struct psb_bench_result *r)
{
	const struct worker_priv *wp = ri->priv;

	if (wp == NULL)
		return -ENOENT;
	return psb_seq_read(&wp->snap.seq, pub, &wp->snap.pub, sizeof(*pub), r, &wp->snap.r,
			    sizeof(*r));
}

static int
start_bench(struct psb_role_inst *ri)
{
	struct psb_app *app = ri->app;
	struct worker_priv *wp = ri->priv;
	const struct psb_exp_pushpull *bo = &wp->exp.pushpull;
	uint32_t nkeys = (uint32_t)bo->keys * wp->nservers, k = 0, i;
	uint16_t s;
	struct psb_bench_cfg bc;
	struct psb_wk_cfg wc;

	psb_bench_free(wp->bench);
	wp->bench = NULL;
	rte_free(wp->keys);
	wp->keys = rte_zmalloc("psb_keys", nkeys * sizeof(uint64_t), 0);
	if (wp->keys == NULL)
		return -ENOMEM;
	/* ps-lite's benchmark: keys_per_server keys at the start of each server's range. */
	for (s = 0; s < wp->nservers; s++)
		for (i = 0; i < bo->keys; i++)
			wp->keys[k++] = wp->key_begin[s] + i;
	snprintf(wp->label, sizeof(wp->label), "worker %u", wp->ag.rank);
	memset(&bc, 0, sizeof(bc));
	bc.len = (uint32_t)bo->len;
	bc.repeat = bo->repeat;
	bc.mode = bo->mode;
	bc.nkeys = nkeys;
	bc.keys = wp->keys;
	bc.num_workers = app->num_workers;
	bc.verify = bo->verify;
	bc.max_time_ns = bo->duration;
	bc.window_bytes = bo->window;
	bc.warmup = bo->warmup;
	bc.rate_bps = bo->rate;
	bc.rejoin = wp->ag.rejoin;
	bc.log_every_ns = app->quiet ? 0 : wp->exp.output.log_every;
	bc.log = stdout;
	bc.label = wp->label;
	memset(&wc, 0, sizeof(wc));
	wc.rank = wp->ag.rank;
	wc.sync = app->sync;
	wc.seg_size = app->seg_size;
	wc.timeout_ns = bo->timeout;
	wc.max_retries = (uint32_t)bo->max_retries;
	wc.send = worker_send;
	wc.send_arg = ri;
	wc.dest = worker_dest;
	wc.batch_max = (uint16_t)bo->batch;
	wp->bench = psb_bench_create(&bc, &wc);
	if (wp->bench == NULL)
		return -EINVAL;
	lost_fail(wp);	/* a job that lost a server already cannot run right */
	PSB_INFO(worker, "%s: %s, %llu B x %u keys on %u server(s), %llu iterations%s, %s", wp->label,
		psb_bench_mode_name(bo->mode), (unsigned long long)bo->len, nkeys, wp->nservers,
		(unsigned long long)bo->repeat, bo->warmup != 0 ? " after warm-up" : "",
		app->sync ? "sync" : "async");
	return 0;
}

void
psb_worker_results_file(const struct psb_app *app, unsigned int rank, char *out, size_t len)
{
	const char *f = app->results_file, *dot;

	if (app->nlocal_workers <= 1) {
		snprintf(out, len, "%s", f);
		return;
	}
	dot = strrchr(f, '.');
	if (dot == NULL || strchr(dot, '/') != NULL)
		dot = f + strlen(f);
	snprintf(out, len, "%.*s.%u%s", (int)(dot - f), f, rank, dot);
}

/* --results FILE of a command-line worker (FILE.<rank> with several), whole or not at all. */
static void
write_results(struct psb_role_inst *ri, const struct psb_bench_result *r, const char *state,
		const char *error)
{
	struct psb_app *app = ri->app;
	struct worker_priv *wp = ri->priv;
	char path[PATH_MAX];

	if (app->results_file == NULL || app->run.from_doc)
		return;
	psb_worker_results_file(app, wp->ag.rank, path, sizeof(path));
	if (psb_bench_write_json(r, wp->label, state, error, path) != 0)
		PSB_NOTICE(worker, "%s: cannot write results to %s", wp->label, path);
}

/* "keys [a, b)" of server s, as the scheduler split the key space. */
static const char *
key_range(const struct worker_priv *wp, uint16_t s, char *buf, size_t len)
{
	if (wp->key_end[s] == UINT64_MAX)
		snprintf(buf, len, "keys %llu and up", (unsigned long long)wp->key_begin[s]);
	else
		snprintf(buf, len, "keys %llu to %llu", (unsigned long long)wp->key_begin[s],
			 (unsigned long long)wp->key_end[s] - 1);
	return buf;
}

/* Why the benchmark failed, naming the server that did not answer when none did. */
static void
failure_reason(struct psb_role_inst *ri, const struct psb_bench_result *r)
{
	struct worker_priv *wp = ri->priv;
	int rank = server_of(wp, r->first_error_key);
	const struct psb_addr *srv = &wp->servers[rank];
	char ip[16], why[256], keys[64];

	key_range(wp, (uint16_t)rank, keys, sizeof(keys));
	if (r->first_error == -EHOSTDOWN)
		snprintf(wp->reason, sizeof(wp->reason), "%s: server %d (%s:%u, %s) is dead: the "
			 "scheduler heard nothing from it for %.1f s; the job fails", wp->label, rank,
			 psb_ip_str(srv->ip, ip), srv->port, keys, r->first_error_aux / 1e3);
	else if (r->first_error == -ESTALE)
		snprintf(wp->reason, sizeof(wp->reason), "%s: server %d (%s:%u) restarted during "
			 "the job%s: what it stored of %s is lost; the job fails", wp->label, rank,
			 psb_ip_str(srv->ip, ip), srv->port, r->first_error_aux != 0 ?
			 " (its answers carry another epoch)" : " (the scheduler says)", keys);
	else if (r->first_error == -ETIMEDOUT)
		snprintf(wp->reason, sizeof(wp->reason), "%s: server %d (%s:%u) did not answer %s "
			 "of key %llu for %.3f s (%u tries; --timeout-us %llu doubling, "
			 "--max-retries %u)", wp->label, rank, psb_ip_str(srv->ip, ip), srv->port,
			 psb_msg_type_name(r->first_error_type), (unsigned long long)r->first_error_key,
			 r->first_error_wait_ns / 1e9, r->first_error_retries + 1,
			 (unsigned long long)(wp->exp.pushpull.timeout / 1000),
			 (unsigned int)wp->exp.pushpull.max_retries);
	else if (r->first_error != 0)
		snprintf(wp->reason, sizeof(wp->reason), "%s: server %d (%s:%u) refused %s of key "
			 "%llu: %s", wp->label, rank, psb_ip_str(srv->ip, ip), srv->port,
			 psb_msg_type_name(r->first_error_type), (unsigned long long)r->first_error_key,
			 psb_bench_failure_text(r, why, sizeof(why)));
	else
		snprintf(wp->reason, sizeof(wp->reason), "%s: %llu pulled values were wrong",
			 wp->label, (unsigned long long)r->verify_errors);
}

/* The scheduler said the job lost a server: a running benchmark fails with it named. */
static void
lost_fail(struct worker_priv *wp)
{
	uint16_t s = wp->lost.rank;

	if (!wp->lost_known || wp->bench == NULL || s >= wp->nservers)
		return;
	psb_bench_fail(wp->bench, wp->lost.why == PSB_SCHED_LOST_DEAD ? -EHOSTDOWN : -ESTALE,
		wp->key_begin[s], wp->lost.why == PSB_SCHED_LOST_DEAD ? wp->lost.silent_ms : 0);
}

/* HEARTBEAT_ACK: the servers the job lost so far (aux: how many). */
static void
heartbeat_ack(struct psb_role_inst *ri, struct worker_priv *wp, const struct psb_meta *meta,
		const uint8_t *payload)
{
	struct psb_app *app = ri->app;
	struct psb_sched_lost l;
	char ip[16];

	if (meta->src.ip != app->sched_ip || meta->src.port != app->sched_port ||
	    meta->hdr.aux == 0 || wp->lost_known)
		return;
	if (psb_sched_lost_decode(&l, 1, payload, meta->hdr.seg_len) != 1 ||
	    l.rank >= wp->nservers) {
		wp->bad_acks++;
		return;
	}
	wp->lost = l;
	wp->lost_known = 1;
	PSB_NOTICE(worker, "worker %u: the scheduler says server %u (%s:%u) %s", wp->ag.rank, l.rank,
		psb_ip_str(l.addr.ip, ip), l.addr.port, l.why == PSB_SCHED_LOST_DEAD ?
		"is dead" : "restarted and lost what it stored");
	if (wp->st == W_RUN)
		lost_fail(wp);
}

static void
finish_bench(struct psb_role_inst *ri, int rc, uint64_t now, int stopped)
{
	struct worker_priv *wp = ri->priv;
	struct psb_bench_result r;

	psb_bench_result(wp->bench, now, &r);
	psb_bench_print(&r, wp->label, stdout);
	fflush(stdout);
	if (rc < 0 || r.verify_errors != 0) {
		failure_reason(ri, &r);
		/* Failures are reported even with -q. */
		PSB_ERR(worker, "benchmark FAILED: %s", wp->reason);
		rc = -EIO;
	}
	write_results(ri, &r, rc < 0 ? "failed" : stopped ? "stopped" : "done",
		rc < 0 ? wp->reason : NULL);
	publish(ri, now, 0, 1, rc < 0 ? rc : 0);
}

/*
 * A wait of the setup (ARP, REGISTER, BARRIER) lasted --connect-timeout: the experiment
 * waiting on it fails, with what did not answer, and partial (empty) results. The worker
 * goes on trying, with a new wait, for an experiment started later.
 */
static void
setup_failed(struct psb_role_inst *ri, uint64_t now, const char *what)
{
	struct worker_priv *wp = ri->priv;
	struct psb_bench_result r;

	snprintf(wp->reason, sizeof(wp->reason), "worker %u: %s", wp->ag.rank, what);
	if (wp->pending_id == 0 || wp->pending_id != wp->exp_id) {
		PSB_NOTICE(worker, "%s; no experiment waits on it, still trying", wp->reason);
		return;
	}
	PSB_ERR(worker, "experiment %u FAILED: %s", wp->pending_id, wp->reason);
	wp->pending_id = 0;
	psb_bench_free(wp->bench);	/* an earlier run's: this one has no figures */
	wp->bench = NULL;
	publish(ri, now, 0, 1, -ETIMEDOUT);
	memcpy(&r, &wp->snap.r, sizeof(r));
	snprintf(wp->label, sizeof(wp->label), "worker %u", wp->ag.rank);
	write_results(ri, &r, "failed", wp->reason);
}

/* Is the setup stuck longer than --connect-timeout? Then say who did not answer. */
static void
setup_check(struct psb_role_inst *ri, uint64_t now)
{
	struct psb_app *app = ri->app;
	struct worker_priv *wp = ri->priv;
	char what[224], ip[16];
	uint16_t s, missing = 0, first = 0;

	if (wp->st == W_REGISTER) {
		if (!psb_agent_expired(&wp->ag, app, now, what, sizeof(what)))
			return;
		psb_agent_restart(&wp->ag);
	} else {
		if (app->connect_timeout_ns == 0 || now - wp->resolve_ns < app->connect_timeout_ns)
			return;
		for (s = 0; s < wp->nservers; s++)
			if (psb_neigh_find(app, wp->servers[s].ip) == NULL && missing++ == 0)
				first = s;
		snprintf(what, sizeof(what), "server %s (port %u) did not answer ARP for %.1f s%s",
			 psb_ip_str(wp->servers[first].ip, ip), wp->servers[first].port,
			 (now - wp->resolve_ns) / 1e9, missing > 1 ? " (nor did other servers)" : "");
		wp->resolve_ns = now;
	}
	setup_failed(ri, now, what);
}

/* The experiment could not start at all: report it done and failed. */
static void
fail_start(struct psb_role_inst *ri, uint64_t now)
{
	struct worker_priv *wp = ri->priv;

	snprintf(wp->reason, sizeof(wp->reason), "worker %u: cannot start the benchmark (out of "
		 "memory?)", wp->ag.rank);
	PSB_ERR(worker, "%s", wp->reason);
	psb_bench_free(wp->bench);
	wp->bench = NULL;
	publish(ri, now, 0, 1, -ENOMEM);
}

static int
worker_ctl(struct psb_role_inst *ri, int op, const void *arg)
{
	struct worker_priv *wp = ri->priv;
	uint64_t now = psb_now_ns(ri->app);
	const struct psb_exp_conf *c = arg;

	switch (op) {
	case PSB_OP_START:
		if (wp->st == W_RUN)
			return -EBUSY;
		wp->exp = *c;
		wp->have_exp = 1;
		wp->exp_id = ri->app->run.id;
		if (wp->st != W_READY) {
			wp->pending_id = wp->exp_id;	/* starts once the servers are known */
			/* its wait for them is its own: --connect-timeout from now */
			psb_agent_restart(&wp->ag);
			wp->resolve_ns = now;
			publish(ri, now, 1, 0, 0);
			return 0;
		}
		if (start_bench(ri) != 0) {
			fail_start(ri, now);
			return 0;
		}
		/*
		 * An idle worker does not read the clock: the benchmark starts from this
		 * reading, not from the one it kept from before it went idle (which would
		 * count the idle time in, and time its first requests out at once).
		 */
		wp->last_now = now;
		wp->idle_passes = 0;
		wp->st = W_RUN;
		publish(ri, now, 1, 0, 0);
		return 0;
	case PSB_OP_STOP:
		if (wp->pending_id != 0) {
			wp->pending_id = 0;
			publish(ri, now, 0, 1, 0);
		}
		if (wp->st != W_RUN)
			return 0;
		psb_bench_stop(wp->bench, now);
		finish_bench(ri, 0, now, 1);
		wp->st = W_READY;
		return 0;
	case PSB_OP_RESET:
		if (wp->bench != NULL && wp->st == W_RUN) {
			psb_bench_reset_metrics(wp->bench, now);
			publish(ri, now, 1, 0, 0);
		}
		return 0;
	case PSB_OP_SET:
		if (wp->have_exp)
			wp->exp = *c;
		if (wp->bench != NULL) {
			psb_bench_set_rate(wp->bench, wp->exp.pushpull.rate, now);
			psb_bench_set_log_every(wp->bench, ri->app->quiet ? 0 :
				wp->exp.output.log_every);
		}
		return 0;
	}
	return -EOPNOTSUPP;
}

/* Resolve every server's MAC; returns 1 once all are known. */
static int
resolve_servers(struct psb_role_inst *ri, uint64_t now)
{
	struct worker_priv *wp = ri->priv;
	int missing = 0;
	uint16_t s;

	for (s = 0; s < wp->nservers; s++) {
		const struct psb_neigh *n = psb_neigh_find(ri->app, wp->servers[s].ip);

		if (n != NULL) {
			memcpy(wp->servers[s].mac, n->mac, 6);
			continue;
		}
		missing++;
		if (now >= wp->next_arp_ns)
			psb_arp_resolve(ri, wp->servers[s].ip);
	}
	if (missing != 0 && now >= wp->next_arp_ns)
		wp->next_arp_ns = now + PSB_ARP_RETRY_NS;
	return missing == 0;
}

/* The process is ending: tell the scheduler this worker finished, every 200 ms until it says so. */
static void
finalize_step(struct psb_role_inst *ri, struct worker_priv *wp)
{
	uint64_t now = psb_now_ns(ri->app);

	if (now < wp->finalize_next_ns)
		return;
	wp->finalize_next_ns = now + FINALIZE_RETRY_NS;
	psb_agent_send(&wp->ag, ri, PSB_MSG_FINALIZE);
	psb_out_flush(ri);
}

static void
finalize_ack(struct psb_app *app, struct worker_priv *wp, const struct psb_meta *meta)
{
	if (wp->finalized || meta->src.ip != app->sched_ip || meta->src.port != app->sched_port)
		return;
	wp->finalized = 1;
	__atomic_add_fetch(&app->finalized, 1, __ATOMIC_RELEASE);
}

static int
worker_poll(struct psb_role_inst *ri)
{
	struct psb_app *app = ri->app;
	struct worker_priv *wp = ri->priv;
	struct rte_mbuf *pkts[PSB_BURST];
	unsigned int n, i;
	uint64_t now;
	uint16_t s;
	int rc;

	n = rte_ring_dequeue_burst(ri->ring, (void **)pkts, PSB_BURST, NULL);
	/*
	 * Reading the TSC is not free on virtual machines. Answers get a fresh
	 * time (their round trips are measured); a pass without answers reuses
	 * the last one, read at most 16 passes ago, and does nothing at all
	 * when the benchmark only waits.
	 */
	if (unlikely(app->finalizing) && wp->was_registered && !wp->finalized)
		finalize_step(ri, wp);
	/* idle: the clock (for heartbeats) one pass in 1024 */
	if (wp->st == W_READY && n == 0 && (++wp->idle_passes & 1023) != 0)
		return 0;
	/* after its lcore slept (node.idle) the time kept is up to a sleep old: read again */
	if (n != 0 || wp->st != W_RUN || ri->slept || (++wp->idle_passes & 15) == 0) {
		ri->slept = 0;
		now = psb_now_ns(app);
		wp->last_now = now;
	} else if (!psb_bench_wants_step(wp->bench)) {
		return 0;
	} else {
		now = wp->last_now;
	}
	for (i = 0; i < n; i++) {
		struct psb_meta *meta = psb_meta(pkts[i]);
		const uint8_t *payload = rte_pktmbuf_mtod_offset(pkts[i], uint8_t *,
			meta->payload_off);

		ri->cnt.rx_pkts++;
		ri->cnt.rx_bytes += pkts[i]->pkt_len;
		if (meta->hdr.type == PSB_MSG_REGISTER_ACK || meta->hdr.type == PSB_MSG_BARRIER_ACK)
			psb_agent_input(&wp->ag, app, meta, payload);
		else if (meta->hdr.type == PSB_MSG_FINALIZE_ACK)
			finalize_ack(app, wp, meta);
		else if (meta->hdr.type == PSB_MSG_HEARTBEAT_ACK)
			heartbeat_ack(ri, wp, meta, payload);
		else if (wp->st == W_RUN)
			psb_wk_input(psb_bench_wk(wp->bench), &meta->hdr, payload, now);
		rte_pktmbuf_free(pkts[i]);
	}

	if (wp->was_registered)
		psb_agent_beat(&wp->ag, ri, now);
	switch (wp->st) {
	case W_REGISTER:
		if (!psb_agent_step(&wp->ag, ri, now)) {
			setup_check(ri, now);
			break;
		}
		if (!wp->was_registered) {
			wp->was_registered = 1;
			__atomic_add_fetch(&app->wk_registered, 1, __ATOMIC_RELEASE);
		}
		wp->nservers = wp->ag.view.num_servers;
		for (s = 0; s < wp->nservers; s++) {
			memset(&wp->servers[s], 0, sizeof(wp->servers[s]));
			wp->servers[s].ip = wp->ag.view.servers[s].ip;
			wp->servers[s].port = wp->ag.view.servers[s].port;
			wp->key_begin[s] = wp->ag.view.servers[s].key_begin;
			wp->key_end[s] = wp->ag.view.servers[s].key_end;
		}
		wp->st = W_RESOLVE;
		wp->resolve_ns = now;
		/* fall through */
	case W_RESOLVE:
		if (!resolve_servers(ri, now)) {
			setup_check(ri, now);
			break;
		}
		wp->st = W_READY;
		if (wp->pending_id == 0 || wp->pending_id != wp->exp_id)
			break;
		wp->pending_id = 0;
		if (start_bench(ri) != 0) {
			fail_start(ri, now);
			break;
		}
		wp->st = W_RUN;
		/* fall through */
	case W_RUN:
		rc = psb_bench_step(wp->bench, now);
		if (rc != 0) {
			finish_bench(ri, rc, now, 0);
			wp->st = W_READY;
		} else if (now >= wp->next_pub_ns) {
			publish(ri, now, 1, 0, 0);
		}
		break;
	case W_READY:
		break;
	}
	psb_out_flush(ri);
	return (int)n;
}

static void
worker_fini(struct psb_role_inst *ri)
{
	struct worker_priv *wp = ri->priv;

	if (wp == NULL)
		return;
	psb_bench_free(wp->bench);
	rte_free(wp->keys);
	rte_free(wp);
	ri->priv = NULL;
}

static unsigned int
worker_count(const struct psb_app *app)
{
	return app->node_role == PSB_NODE_WORKER ? app->nlocal_workers : 0;
}

/* Worker i has its own UDP port, worker_port_base + i. */
static int
worker_claim(const struct psb_app *app, const struct psb_frame *f)
{
	uint16_t d = f->dst.port;

	return d >= app->worker_port_base && d < app->worker_port_base + app->nlocal_workers ?
		d - app->worker_port_base : -1;
}

static void
worker_ports(const struct psb_app *app, uint16_t *lo, uint16_t *hi)
{
	*lo = app->worker_port_base;
	*hi = (uint16_t)(app->worker_port_base + app->nlocal_workers - 1);
	if (app->nlocal_workers == 0)
		*lo = 1, *hi = 0;	/* none */
}

const struct psb_role psb_role_worker = {
	.name = "worker",
	.count = worker_count,
	.ring = PSB_ROLE_RING,
	.claim = worker_claim,
	.ports = worker_ports,
	.init = worker_init,
	.poll = worker_poll,
	.fini = worker_fini,
	.ctl = worker_ctl,
};
