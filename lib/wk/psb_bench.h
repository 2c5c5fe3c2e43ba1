/* ps-lite's test_benchmark workload on top of the worker engine, with results. */
#ifndef PSB_BENCH_H
#define PSB_BENCH_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "psb_hist.h"
#include "psb_metric.h"
#include "psb_text.h"
#include "psb_wk.h"

/* ps-lite's benchmark modes, same numbers. */
enum psb_bench_mode {
	PSB_BENCH_PUSH_THEN_PULL = 0,
	PSB_BENCH_PUSH_PULL = 1,
	PSB_BENCH_PUSH_ONLY = 2,
	PSB_BENCH_PULL_ONLY = 3,
	PSB_BENCH_MODE_MAX
};

struct psb_bench_cfg {
	uint32_t len;			/* value bytes per key (multiple of 4) */
	uint64_t repeat;		/* iterations */
	int mode;			/* enum psb_bench_mode */
	uint32_t nkeys;			/* keys in play (all servers) */
	const uint64_t *keys;		/* [nkeys] */
	uint16_t num_workers;		/* for checking sync sums */
	/*
	 * Check every value read back, and every key once more after the run. Sync: exact
	 * sums (every worker pushes rank + 1). Async: every worker pushes 1 into the elements
	 * i with i mod num_workers = its rank, and each checks its own count exactly, every
	 * other count for whole, even elements, and all of them against the key's version.
	 * Every worker of the job must verify.
	 */
	int verify;
	uint64_t max_time_ns;		/* stop early after this long (0: no limit) */
	uint64_t window_bytes;		/* value bytes in flight at most (0: 32 MiB); one
					 * request always goes, whatever its size. Below it
					 * the window adapts to loss, as TCP's does */
	uint64_t warmup;		/* iterations run first, then the metrics are reset */
	uint64_t rate_bps;		/* value bits per second at most (0: unlimited) */
	/*
	 * The worker rejoins a sync job under way (it restarted): in the modes that push every
	 * iteration, the rounds the job has closed (past the warm-up) count as iterations
	 * done, so that it ends with the others instead of running repeat more.
	 */
	int rejoin;
	uint64_t log_every_ns;		/* progress line period (0: none) */
	FILE *log;			/* progress lines go here */
	const char *label;		/* prefix of progress lines */
};

struct psb_bench_result {
	int mode;
	uint32_t len;
	uint32_t nkeys;
	uint64_t iterations;		/* completed */
	uint64_t ops;			/* completed requests */
	uint64_t elapsed_ns;		/* the metrics' window: since the run or its last reset */
	uint64_t run_ns;		/* since the measured run started (after a warm-up) */
	uint32_t resets;		/* reset_state during the run: the window is the last part */
	double goodput_gbps;		/* ps-lite: 8 * len * keys * iterations / ns */
	double ops_per_s;
	uint64_t retries;
	uint64_t failed;
	uint64_t verify_errors;
	int first_error;		/* status of the first failed request (0: none) */
	uint64_t first_error_key;
	uint32_t first_error_aux;	/* the ERROR reply's aux, e.g. the stored length */
	uint8_t first_error_type;	/* its request type (PSB_MSG_PUSH, ...) */
	uint32_t first_error_retries;	/* tries it used up */
	uint64_t first_error_wait_ns;	/* from its first send to its failure */
	struct psb_hist rtt;		/* per-request round trip, ns */
	/*
	 * Staleness per applied push: how many versions of the key other workers pushed
	 * between the version this worker last got for it and its own push. 0 in
	 * synchronous mode; the first push of each key has no sample.
	 */
	struct psb_hist stale;
	/* Loss recovery over the whole run (metrics resets do not clear these). */
	uint64_t repairs;		/* REPAIR messages sent for requests that timed out */
	uint64_t repair_segs;		/* push segments sent again because a server lacked them */
	uint64_t resends;		/* requests sent again whole */
	uint64_t window_bytes;		/* the window at the end, value bytes */
	uint64_t window_cuts;		/* times a loss halved it */
	uint64_t early_repairs;		/* of the repairs, those sent at once: an answer's last
					 * segment came after gaps */
};

struct psb_bench;

/*
 * Create the benchmark and its worker engine. wcfg gives the transport
 * (send, send_arg), rank, sync, seg_size and timeout; window and done are set here.
 */
struct psb_bench *psb_bench_create(const struct psb_bench_cfg *cfg, const struct psb_wk_cfg *wcfg);
void psb_bench_free(struct psb_bench *b);

/* The engine, to feed responses (psb_wk_input) into. */
struct psb_wk *psb_bench_wk(struct psb_bench *b);

/* Advance: poll the engine, start the next phase. 1 when finished, 0 running, <0 failed. */
int psb_bench_step(struct psb_bench *b, uint64_t now_ns);

/*
 * 1 when psb_bench_step has work beyond waiting for answers: requests to
 * submit or send, or a phase to start. Callers may skip steps (and reading
 * the clock) while it is 0, as long as they still step now and then for
 * timeouts and progress lines.
 */
int psb_bench_wants_step(const struct psb_bench *b);

/* Live changes: the rate limit (0: none) and the progress period. */
void psb_bench_set_rate(struct psb_bench *b, uint64_t rate_bps, uint64_t now_ns);
void psb_bench_set_log_every(struct psb_bench *b, uint64_t log_every_ns);

/*
 * Zero the metrics (requests, round trips, retries, failures) and start counting
 * iterations again from now (reset_state). The requests in flight go on and count toward
 * the new window; max_time_ns still counts from the start of the measured run.
 */
void psb_bench_reset_metrics(struct psb_bench *b, uint64_t now_ns);

/* End the benchmark now; later steps return 1. Requests in flight are abandoned. */
void psb_bench_stop(struct psb_bench *b, uint64_t now_ns);
/*
 * Fail the run from outside (the scheduler says a server is lost): err as a request's
 * status (e.g. -EHOSTDOWN), key one of that server's, aux a detail. The next step ends
 * the run with it, unless it failed already.
 */
void psb_bench_fail(struct psb_bench *b, int err, uint64_t key, uint32_t aux);

/* 1 while the warm-up iterations run. */
int psb_bench_warming(const struct psb_bench *b);

/* Snapshot of the results so far (also valid once finished). */
void psb_bench_result(const struct psb_bench *b, uint64_t now_ns, struct psb_bench_result *r);
/* The result of a run that never started: what was asked, nothing measured. */
void psb_bench_result_empty(struct psb_bench_result *r, int mode, uint32_t len);

const char *psb_bench_mode_name(int mode);
/* What a failed request's status means ("length_mismatch", "no answer after all retries"). */
const char *psb_bench_error_name(int status);
/* The same with the ERROR's detail: "no_memory: the server's store.max_keys is reached". */
const char *psb_bench_error_text(int status, uint32_t aux, char *buf, size_t len);
/*
 * Why r's first failed request failed, for people: psb_bench_error_text, and for a
 * length_mismatch both sizes (the key's on the server, the run's) and how to clear a
 * store an earlier run left.
 */
const char *psb_bench_failure_text(const struct psb_bench_result *r, char *buf, size_t len);
/* "1", "PUSH_PULL" or "push_pull" -> mode; -EINVAL otherwise. */
int psb_bench_mode_parse(const char *s);

/* Human-readable summary lines. */
void psb_bench_print(const struct psb_bench_result *r, const char *label, FILE *out);
/* One-line progress. */
void psb_bench_print_progress(const struct psb_bench_result *r, uint64_t repeat, const char *label,
		FILE *out);
/* The result as a JSON object (NULL: no memory). */
json_t *psb_bench_result_json(const struct psb_bench_result *r, const char *label);
/*
 * A histogram as cumulative counts at fixed bounds, the shape of a Prometheus histogram:
 * {"le": {"0.5": n, "1": n, ..., "+Inf": n}, "count": n, "sum": x}. Round trips are in
 * microseconds (bounds 0.5 us to 1 s), staleness in versions (bounds 0 to 1024).
 * NULL: no memory.
 */
json_t *psb_bench_rtt_hist_json(const struct psb_hist *h);
json_t *psb_bench_stale_hist_json(const struct psb_hist *h);
/* Their bounds, for psb_metric_hist_emit and the exports' descriptor tables. */
extern const struct psb_metric_bounds psb_bench_rtt_bounds;
extern const struct psb_metric_bounds psb_bench_stale_bounds;
/*
 * JSON object of the result, with "state" ("done", "stopped", "failed") and, when not
 * NULL, "error" (why it failed); written to path atomically (path.tmp + rename). 0 or -errno.
 */
int psb_bench_write_json(const struct psb_bench_result *r, const char *label, const char *state,
		const char *error, const char *path);

#endif /* PSB_BENCH_H */
