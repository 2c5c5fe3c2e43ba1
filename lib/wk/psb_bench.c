/* ps-lite's test_benchmark workload on top of the worker engine, with results. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>

#include "psb_bench.h"
#include "psb_cwnd.h"
#include "psb_cli.h"

struct psb_bench {
	struct psb_bench_cfg cfg;
	struct psb_wk *wk;
	uint16_t rank;
	int sync;
	float *in;		/* pushed value: rank + 1 everywhere */
	float **out;		/* [nkeys] pull destinations */
	uint32_t *round;	/* [nkeys] next sync round per key */
	uint64_t *seen;		/* [nkeys] 1 + the key's version last answered, 0: none yet */
	struct psb_wk_op *ops;	/* [nkeys] */
	uint8_t phase_type;	/* request type of the running phase, 0: none */
	int init_done;		/* PULL_ONLY: keys pushed once before measuring */
	uint32_t next_submit;
	uint32_t nredo;		/* requests a stale round sent back, to submit again */
	/*
	 * [nkeys] 1 while the key's request counts against the window: until it is done, or
	 * times out. A request that timed out is lost or waits for its sync round, and the
	 * window goes on: in sync rounds a worker that catches up after a restart would
	 * otherwise wait for a key of the next round while the others wait for it on a key
	 * of this one.
	 */
	uint8_t *in_window;
	uint64_t retries_seen;	/* engine retries when in_window was last looked at */
	/* The window: value bytes let in flight (psb_cwnd.h), up to cfg.window_bytes. */
	struct psb_cwnd win;
	uint32_t ndone;
	uint64_t iter;
	uint64_t start_ns;
	uint64_t end_ns;
	uint64_t last_log_ns;
	int finished;
	int error;
	uint64_t error_key;
	uint32_t error_aux;
	uint8_t error_type;
	uint32_t error_retries;
	uint64_t error_wait_ns;
	uint64_t ops_done;
	uint64_t failed;
	uint64_t verify_errors;
	uint64_t retries_base;	/* engine retries before the last metrics reset */
	int warming;
	double tokens;		/* rate limit: value bytes that may go now */
	uint64_t tokens_ns;	/* when tokens were last topped up */
	struct psb_hist rtt;
	struct psb_hist stale;	/* versions behind, per applied push */
	uint64_t run_start_ns;	/* the measured run's start: its duration counts from here */
	uint32_t resets;	/* metrics resets (reset_state) since then */
	int final;		/* verify: the last pull of every key, after the measured run */
	/* async verify: worker r pushes 1 into the elements i with i mod N == r */
	int onehot;
	uint32_t *own;		/* [nkeys] this worker's pushes applied to the key */
	int64_t *base;		/* [nkeys] the key's count of it less its own (BASE_UNKNOWN) */
	int64_t *cnt;		/* [num_workers] scratch of check_async */
};

#define BASE_UNKNOWN	INT64_MIN

static const char *const mode_names[PSB_BENCH_MODE_MAX] = {
	"PUSH_THEN_PULL", "PUSH_PULL", "PUSH_ONLY", "PULL_ONLY",
};

const char *
psb_bench_mode_name(int mode)
{
	return mode >= 0 && mode < PSB_BENCH_MODE_MAX ? mode_names[mode] : "UNKNOWN";
}

int
psb_bench_mode_parse(const char *s)
{
	char *end;
	long v;
	int i;

	if (s == NULL || *s == '\0')
		return -EINVAL;
	v = strtol(s, &end, 10);
	if (*end == '\0')
		return v >= 0 && v < PSB_BENCH_MODE_MAX ? (int)v : -EINVAL;
	for (i = 0; i < PSB_BENCH_MODE_MAX; i++)
		if (strcasecmp(s, mode_names[i]) == 0)
			return i;
	return -EINVAL;
}

/* Value bytes a request moves (both directions). */
static inline uint64_t
op_cost(const struct psb_wk_op *op)
{
	return op->type == PSB_MSG_PUSHPULL ? 2ull * op->len : op->len;
}

static void
check_value(struct psb_bench *b, const struct psb_wk_op *op)
{
	/* Every worker pushes rank + 1 into every element once per round. */
	double per_round = (double)b->cfg.num_workers * (b->cfg.num_workers + 1) / 2.0;
	float want = (float)(per_round * op->out_round);
	uint32_t i, j, n = op->out_len / sizeof(float), bad = 0;

	if (op->out_len != b->cfg.len) {
		b->verify_errors++;
		return;
	}
	/* blocks without an early exit, which the compiler turns into vector compares */
	for (i = 0; i < n && bad == 0; i += 256) {
		uint32_t end = n - i < 256 ? n : i + 256;

		for (j = i; j < end; j++)
			bad |= op->out[j] != want;
	}
	if (bad != 0)
		b->verify_errors++;
}

/*
 * Asynchronous mode: every worker of the job pushes 1 into the elements it owns (i mod N =
 * its rank), so a value read back tells every worker's applied pushes apart. The elements
 * of one owner must all be equal whole numbers (a push applied in part would leave them
 * uneven), this worker's own count must be exactly the pushes it had applied (counted
 * from what the key held when it first saw it: an earlier incarnation's pushes stay),
 * and, when every rank owns an element, the counts add up to the key's version.
 */
static void
check_async(struct psb_bench *b, const struct psb_wk_op *op, uint32_t k)
{
	uint32_t i, n = op->out_len / sizeof(float), nw = b->cfg.num_workers, o;
	int64_t total = 0, mine;

	if (op->out_len != b->cfg.len) {
		b->verify_errors++;
		return;
	}
	for (o = 0; o < nw; o++)
		b->cnt[o] = -1;
	for (i = 0; i < n; i++) {
		float v = op->out[i];

		o = i % nw;
		if (v < 0 || v != (float)(int64_t)v || (b->cnt[o] >= 0 && b->cnt[o] != (int64_t)v)) {
			b->verify_errors++;
			return;
		}
		b->cnt[o] = (int64_t)v;
	}
	if (b->rank < n) {
		mine = b->cnt[b->rank];
		if (b->base[k] == BASE_UNKNOWN)
			b->base[k] = mine - b->own[k];
		if (mine != b->base[k] + b->own[k]) {
			b->verify_errors++;
			return;
		}
	}
	if (n >= nw) {
		for (o = 0; o < nw; o++)
			total += b->cnt[o];
		if (total != (int64_t)op->out_round)
			b->verify_errors++;
	}
}

static void
verify(struct psb_bench *b, const struct psb_wk_op *op, uint32_t k)
{
	if (!b->cfg.verify || op->type == PSB_MSG_PUSH)
		return;
	if (b->sync)
		check_value(b, op);
	else
		check_async(b, op, k);
}

/*
 * A push to key k was applied, and the answer says the key is at version v now. The
 * versions between the one this worker last got for k and its own are other workers'
 * pushes it did not see: its push was that many versions stale. Synchronous rounds are
 * 0 by construction. A version below the last one seen (the server's state was reset)
 * starts the key over.
 */
static void
note_staleness(struct psb_bench *b, uint32_t k, uint32_t v)
{
	int32_t d;

	if (b->seen[k] == 0)
		return;
	d = (int32_t)(v - (uint32_t)b->seen[k]);
	if (d >= 0)
		psb_hist_add(&b->stale, (uint64_t)d);
}

/* Request k no longer counts against the window. */
static void
window_release(struct psb_bench *b, uint32_t k, const struct psb_wk_op *op)
{
	if (!b->in_window[k])
		return;
	b->in_window[k] = 0;
	b->win.inflight -= op_cost(op);
}

/* Requests that timed out since the last look leave the window. */
static void
window_timeouts(struct psb_bench *b)
{
	uint64_t retries = psb_wk_stats(b->wk)->retries;
	uint32_t k;

	if (retries == b->retries_seen)
		return;
	b->retries_seen = retries;
	for (k = 0; k < b->next_submit; k++)
		if (b->in_window[k] && b->ops[k].retries != 0)
			window_release(b, k, &b->ops[k]);
}

static void
on_done(void *arg, struct psb_wk_op *op)
{
	struct psb_bench *b = arg;
	uint32_t k = (uint32_t)(op - b->ops);
	int counted = b->in_window[k];

	if (b->final && op->status == 0) {
		/* the check after the run: verified, not measured */
		b->ndone++;
		window_release(b, k, op);
		verify(b, op, k);
		return;
	}
	if (op->status == PSB_ST_STALE && b->sync) {
		/* The server's round moved on (an earlier run): follow it and redo the request. */
		b->round[k] = op->err_aux;
		op->round = op->type == PSB_MSG_PULL ? op->err_aux + 1 : op->err_aux;
		op->user = (void *)1;
		b->nredo++;
		return;
	}
	if (op->status != 0) {
		window_release(b, k, op);
		b->failed++;
		if (b->error == 0) {
			b->error = op->status;
			b->error_key = op->key;
			b->error_aux = op->err_aux;
			b->error_type = op->type;
			b->error_retries = op->retries;
			b->error_wait_ns = op->rtt_ns;
		}
		return;
	}
	b->ndone++;
	b->ops_done++;
	window_release(b, k, op);
	if (counted)
		psb_cwnd_grow(&b->win, op_cost(op), op->retries);
	psb_hist_add(&b->rtt, op->rtt_ns);
	if (op->type != PSB_MSG_PULL) {
		b->round[k]++;
		b->own[k]++;
		note_staleness(b, k, op->out_round);
	}
	/* a version below the last one seen: the server's store was reset, counts start over */
	if (b->seen[k] != 0 && (uint64_t)op->out_round + 1 < b->seen[k])
		b->base[k] = BASE_UNKNOWN;
	b->seen[k] = (uint64_t)op->out_round + 1;
	verify(b, op, k);
}

struct psb_bench *
psb_bench_create(const struct psb_bench_cfg *cfg, const struct psb_wk_cfg *wcfg)
{
	struct psb_bench *b;
	struct psb_wk_cfg wc = *wcfg;
	uint32_t i, n = cfg->len / sizeof(float);

	if (cfg->len == 0 || (cfg->len & 3) != 0 || cfg->nkeys == 0 || cfg->keys == NULL ||
	    cfg->mode < 0 || cfg->mode >= PSB_BENCH_MODE_MAX || cfg->num_workers == 0)
		return NULL;
	b = calloc(1, sizeof(*b));
	if (b == NULL)
		return NULL;
	b->cfg = *cfg;
	if (b->cfg.window_bytes == 0)
		b->cfg.window_bytes = 32ull << 20;
	psb_cwnd_init(&b->win, b->cfg.window_bytes);
	b->rank = wcfg->rank;
	b->sync = wcfg->sync;
	b->warming = cfg->warmup != 0;
	psb_hist_init(&b->rtt);
	psb_hist_init(&b->stale);
	b->in = aligned_alloc(64, ((size_t)cfg->len + 63) & ~(size_t)63);
	b->out = calloc(cfg->nkeys, sizeof(*b->out));
	b->round = calloc(cfg->nkeys, sizeof(*b->round));
	b->seen = calloc(cfg->nkeys, sizeof(*b->seen));
	b->ops = calloc(cfg->nkeys, sizeof(*b->ops));
	b->in_window = calloc(cfg->nkeys, sizeof(*b->in_window));
	b->own = calloc(cfg->nkeys, sizeof(*b->own));
	b->base = malloc(cfg->nkeys * sizeof(*b->base));
	b->cnt = calloc(cfg->num_workers, sizeof(*b->cnt));
	if (b->in == NULL || b->out == NULL || b->round == NULL || b->seen == NULL ||
	    b->ops == NULL || b->own == NULL || b->base == NULL || b->cnt == NULL ||
	    b->in_window == NULL)
		goto fail;
	for (i = 0; i < cfg->nkeys; i++)
		b->base[i] = BASE_UNKNOWN;
	/* sync: rank + 1 everywhere; async verify: 1 in the elements this rank owns */
	b->onehot = cfg->verify && !wcfg->sync;
	for (i = 0; i < n; i++)
		b->in[i] = b->onehot ? (i % cfg->num_workers == b->rank ? 1.0f : 0.0f) :
			(float)(b->rank + 1);
	for (i = 0; i < cfg->nkeys; i++) {
		b->out[i] = aligned_alloc(64, ((size_t)cfg->len + 63) & ~(size_t)63);
		if (b->out[i] == NULL)
			goto fail;
	}
	wc.window = cfg->nkeys < PSB_WK_MAX_WINDOW ? cfg->nkeys : PSB_WK_MAX_WINDOW;
	wc.done = on_done;
	wc.done_arg = b;
	b->wk = psb_wk_create(&wc);
	if (b->wk == NULL)
		goto fail;
	return b;
fail:
	psb_bench_free(b);
	return NULL;
}

void
psb_bench_free(struct psb_bench *b)
{
	uint32_t i;

	if (b == NULL)
		return;
	psb_wk_free(b->wk);
	if (b->out != NULL)
		for (i = 0; i < b->cfg.nkeys; i++)
			free(b->out[i]);
	free(b->out);
	free(b->round);
	free(b->seen);
	free(b->ops);
	free(b->in_window);
	free(b->own);
	free(b->base);
	free(b->cnt);
	free(b->in);
	free(b);
}

struct psb_wk *
psb_bench_wk(struct psb_bench *b)
{
	return b->wk;
}

/* Request type of the first phase of an iteration, and of the phase after t. */
static uint8_t
first_phase(const struct psb_bench *b)
{
	switch (b->cfg.mode) {
	case PSB_BENCH_PUSH_PULL:
		return PSB_MSG_PUSHPULL;
	case PSB_BENCH_PULL_ONLY:
		return b->init_done ? PSB_MSG_PULL : PSB_MSG_PUSH;
	default:
		return PSB_MSG_PUSH;
	}
}

static void
start_phase(struct psb_bench *b, uint8_t type)
{
	b->phase_type = type;
	b->next_submit = 0;
	b->ndone = 0;
}

/* Largest burst the rate limit lets out at once: one request or 1 ms at the rate. */
static double
token_cap(const struct psb_bench *b)
{
	double ms = (double)b->cfg.rate_bps / 8e3, one = 2.0 * b->cfg.len;

	return ms > one ? ms : one;
}

static void
tokens_refill(struct psb_bench *b, uint64_t now_ns)
{
	if (b->cfg.rate_bps == 0 || now_ns <= b->tokens_ns)
		return;
	b->tokens += (double)(now_ns - b->tokens_ns) * (double)b->cfg.rate_bps / 8e9;
	if (b->tokens > token_cap(b))
		b->tokens = token_cap(b);
	b->tokens_ns = now_ns;
}

static void
submit_more(struct psb_bench *b, uint64_t now_ns)
{
	uint32_t k;

	tokens_refill(b, now_ns);
	/* Redo requests a stale round sent back. */
	for (k = 0; b->nredo != 0 && k < b->next_submit; k++) {
		struct psb_wk_op *op = &b->ops[k];

		if (op->user != NULL && psb_wk_submit(b->wk, op, now_ns) == 0) {
			op->user = NULL;
			b->nredo--;
		}
	}
	while (b->next_submit < b->cfg.nkeys) {
		struct psb_wk_op *op = &b->ops[b->next_submit];

		k = b->next_submit;
		if (!psb_cwnd_room(&b->win, (uint64_t)b->cfg.len *
				(b->phase_type == PSB_MSG_PUSHPULL ? 2 : 1)))
			break;
		if (b->cfg.rate_bps != 0 && b->tokens < (double)b->cfg.len *
		    (b->phase_type == PSB_MSG_PUSHPULL ? 2 : 1))
			break;
		memset(op, 0, sizeof(*op));
		op->type = b->phase_type;
		op->key = b->cfg.keys[k];
		op->len = b->cfg.len;
		op->in = b->in;
		op->out = b->out[k];
		op->round = b->round[k];
		if (psb_wk_submit(b->wk, op, now_ns) < 0)
			break;
		b->win.inflight += op_cost(op);
		b->in_window[k] = 1;
		if (b->cfg.rate_bps != 0)
			b->tokens -= (double)op_cost(op);
		b->next_submit++;
	}
}

/*
 * Iterations toward repeat: this run's, or for a worker rejoining a sync job, the rounds
 * every key has closed past the warm-up when that is more (the job's progress).
 */
static uint64_t
iterations_done(const struct psb_bench *b)
{
	uint64_t low = UINT64_MAX;
	uint32_t k;

	if (!b->cfg.rejoin || !b->sync || b->cfg.mode == PSB_BENCH_PULL_ONLY)
		return b->iter;
	for (k = 0; k < b->cfg.nkeys; k++)
		if (b->round[k] < low)
			low = b->round[k];
	low = low > b->cfg.warmup ? low - b->cfg.warmup : 0;
	return low > b->iter ? low : b->iter;
}

int
psb_bench_step(struct psb_bench *b, uint64_t now_ns)
{
	struct psb_bench_result r;

	if (b->finished)
		return b->error ? -EIO : 1;
	if (b->phase_type == 0) {
		b->start_ns = now_ns;
		b->run_start_ns = now_ns;
		b->last_log_ns = now_ns;
		b->tokens_ns = now_ns;
		b->tokens = b->cfg.rate_bps != 0 ? token_cap(b) : 0;
		start_phase(b, first_phase(b));
	}
	psb_wk_poll(b->wk, now_ns);
	psb_cwnd_losses(&b->win, psb_wk_stats(b->wk)->losses, now_ns, psb_wk_rto(b->wk),
		2ull * b->cfg.len);
	window_timeouts(b);
	if (b->error != 0) {
		b->finished = 1;
		b->end_ns = now_ns;
		return -EIO;
	}
	submit_more(b, now_ns);
	psb_wk_flush(b->wk);
	if (b->ndone == b->cfg.nkeys) {
		uint8_t t = b->phase_type;

		if (b->cfg.mode == PSB_BENCH_PUSH_THEN_PULL && t == PSB_MSG_PUSH) {
			start_phase(b, PSB_MSG_PULL);
		} else if (b->final) {
			/* every key pulled and checked once more: the run is over */
			b->finished = 1;
			return 1;
		} else if (b->cfg.mode == PSB_BENCH_PULL_ONLY && !b->init_done) {
			/* The initial push is setup, not measurement. */
			b->init_done = 1;
			b->ops_done = 0;
			psb_hist_reset(&b->rtt);
			b->start_ns = now_ns;
			b->run_start_ns = now_ns;
			start_phase(b, PSB_MSG_PULL);
		} else {
			b->iter++;
			if (b->warming && b->iter >= b->cfg.warmup) {
				/* warm-up over: measure from here, as after a reset_state */
				psb_bench_reset_metrics(b, now_ns);
				b->run_start_ns = now_ns;
				b->resets = 0;
				b->warming = 0;
			} else if (!b->warming && (iterations_done(b) >= b->cfg.repeat ||
			    (b->cfg.max_time_ns != 0 &&
			     now_ns - b->run_start_ns >= b->cfg.max_time_ns))) {
				b->end_ns = now_ns;
				if (!b->cfg.verify) {
					b->finished = 1;
					return 1;
				}
				/* the check at the end: every key's value as the run left it */
				b->final = 1;
				start_phase(b, PSB_MSG_PULL);
				submit_more(b, now_ns);
				psb_wk_flush(b->wk);
				return 0;
			}
			start_phase(b, first_phase(b));
		}
		submit_more(b, now_ns);
		psb_wk_flush(b->wk);
	}
	if (b->cfg.log_every_ns != 0 && b->cfg.log != NULL &&
	    now_ns - b->last_log_ns >= b->cfg.log_every_ns) {
		b->last_log_ns = now_ns;
		psb_bench_result(b, now_ns, &r);
		psb_bench_print_progress(&r, b->cfg.repeat, b->cfg.label, b->cfg.log);
	}
	return 0;
}

void
psb_bench_set_rate(struct psb_bench *b, uint64_t rate_bps, uint64_t now_ns)
{
	tokens_refill(b, now_ns);
	b->cfg.rate_bps = rate_bps;
	b->tokens_ns = now_ns;
	if (b->tokens > token_cap(b))
		b->tokens = token_cap(b);
}

void
psb_bench_set_log_every(struct psb_bench *b, uint64_t log_every_ns)
{
	b->cfg.log_every_ns = log_every_ns;
}

void
psb_bench_reset_metrics(struct psb_bench *b, uint64_t now_ns)
{
	b->iter = 0;
	b->ops_done = 0;
	b->failed = 0;
	b->verify_errors = 0;
	b->retries_base = psb_wk_stats(b->wk)->retries;
	b->resets++;
	psb_hist_reset(&b->rtt);
	psb_hist_reset(&b->stale);
	/* a reset may have zeroed the servers' versions too: every key starts over */
	memset(b->seen, 0, b->cfg.nkeys * sizeof(*b->seen));
	b->start_ns = now_ns;
	b->last_log_ns = now_ns;
}

void
psb_bench_stop(struct psb_bench *b, uint64_t now_ns)
{
	if (b->finished)
		return;
	b->finished = 1;
	b->end_ns = now_ns;
}

void
psb_bench_fail(struct psb_bench *b, int err, uint64_t key, uint32_t aux)
{
	if (b->finished || b->error != 0)
		return;
	b->error = err;
	b->error_key = key;
	b->error_aux = aux;
	b->error_type = 0;
	b->error_retries = 0;
	b->error_wait_ns = 0;
}

int
psb_bench_warming(const struct psb_bench *b)
{
	return b->warming;
}

int
psb_bench_wants_step(const struct psb_bench *b)
{
	return b->phase_type == 0 || b->finished || b->error != 0 || b->nredo != 0 ||
	       b->next_submit < b->cfg.nkeys || b->ndone == b->cfg.nkeys ||
	       psb_wk_pending(b->wk);
}

void
psb_bench_result_empty(struct psb_bench_result *r, int mode, uint32_t len)
{
	memset(r, 0, sizeof(*r));
	r->mode = mode;
	r->len = len;
	psb_hist_init(&r->rtt);
	psb_hist_init(&r->stale);
}

void
psb_bench_result(const struct psb_bench *b, uint64_t now_ns, struct psb_bench_result *r)
{
	const struct psb_wk_stats *ws = psb_wk_stats(b->wk);
	uint64_t end = b->finished || b->final ? b->end_ns : now_ns;

	memset(r, 0, sizeof(*r));
	r->mode = b->cfg.mode;
	r->len = b->cfg.len;
	r->nkeys = b->cfg.nkeys;
	r->iterations = b->iter;
	r->ops = b->ops_done;
	r->elapsed_ns = end > b->start_ns ? end - b->start_ns : 0;
	r->run_ns = end > b->run_start_ns ? end - b->run_start_ns : 0;
	r->resets = b->resets;
	if (r->elapsed_ns != 0) {
		r->goodput_gbps = 8.0 * b->cfg.len * b->cfg.nkeys * (double)b->iter / r->elapsed_ns;
		r->ops_per_s = (double)b->ops_done * 1e9 / r->elapsed_ns;
	}
	r->retries = ws->retries - b->retries_base;
	r->failed = b->failed;
	r->verify_errors = b->verify_errors;
	r->first_error = b->error;
	r->first_error_key = b->error_key;
	r->first_error_aux = b->error_aux;
	r->first_error_type = b->error_type;
	r->first_error_retries = b->error_retries;
	r->first_error_wait_ns = b->error_wait_ns;
	r->rtt = b->rtt;
	r->stale = b->stale;
	r->repairs = ws->repairs;
	r->early_repairs = ws->early_repairs;
	r->repair_segs = ws->repair_segs;
	r->resends = ws->resends;
	r->window_bytes = b->win.cwnd;
	r->window_cuts = b->win.cuts;
}

static double
pct_us(const struct psb_hist *h, double p)
{
	return psb_hist_percentile(h, p) / 1000.0;
}

void
psb_bench_print_progress(const struct psb_bench_result *r, uint64_t repeat, const char *label,
		FILE *out)
{
	fprintf(out, "%s: iter %llu/%llu  goodput %.2f Gbps  %.0f ops/s  rtt p50 %.1f us  "
		"p99 %.1f us  retries %llu\n",
		label != NULL ? label : "worker", (unsigned long long)r->iterations,
		(unsigned long long)repeat, r->goodput_gbps, r->ops_per_s, pct_us(&r->rtt, 50),
		pct_us(&r->rtt, 99), (unsigned long long)r->retries);
	fflush(out);
}

void
psb_bench_print(const struct psb_bench_result *r, const char *label, FILE *out)
{
	const char *l = label != NULL ? label : "worker";

	fprintf(out, "%s: mode %d (%s), len %u B, %u keys, %llu iterations in %.3f s\n", l, r->mode,
		psb_bench_mode_name(r->mode), r->len, r->nkeys,
		(unsigned long long)r->iterations, r->elapsed_ns / 1e9);
	fprintf(out, "%s: application goodput %.3f Gbps (8 x len x keys x iterations / time), "
		"%.0f requests/s\n", l, r->goodput_gbps, r->ops_per_s);
	fprintf(out, "%s: request round trip (us): p50 %.2f  p90 %.2f  p99 %.2f  p99.9 %.2f  "
		"mean %.2f  max %.2f  (n=%llu)\n", l, pct_us(&r->rtt, 50), pct_us(&r->rtt, 90),
		pct_us(&r->rtt, 99), pct_us(&r->rtt, 99.9), psb_hist_mean(&r->rtt) / 1000.0,
		r->rtt.max / 1000.0, (unsigned long long)r->rtt.count);
	if (r->stale.count != 0)
		fprintf(out, "%s: staleness (versions other workers pushed unseen, per push): "
			"mean %.2f  p99 %llu  max %llu  (n=%llu)\n", l, psb_hist_mean(&r->stale),
			(unsigned long long)psb_hist_percentile(&r->stale, 99),
			(unsigned long long)r->stale.max, (unsigned long long)r->stale.count);
	fprintf(out, "%s: retries %llu, failed %llu, verify errors %llu\n", l,
		(unsigned long long)r->retries, (unsigned long long)r->failed,
		(unsigned long long)r->verify_errors);
	if (r->repairs + r->resends != 0)
		fprintf(out, "%s: loss recovery: %llu repairs (%llu at once, %llu push segments "
			"sent again), %llu whole resends; window %.1f MiB after %llu cuts\n", l,
			(unsigned long long)r->repairs, (unsigned long long)r->early_repairs,
			(unsigned long long)r->repair_segs,
			(unsigned long long)r->resends, r->window_bytes / 1048576.0,
			(unsigned long long)r->window_cuts);
	if (r->first_error != 0) {
		char why[256];

		fprintf(out, "%s: first failure: key %llu: %s\n", l,
			(unsigned long long)r->first_error_key,
			psb_bench_failure_text(r, why, sizeof(why)));
	}
}

const char *
psb_bench_error_text(int status, uint32_t aux, char *buf, size_t len)
{
	const char *budget = psb_budget_name(aux);

	if ((status == PSB_ST_NO_MEM || status == PSB_ST_BUSY) && budget != NULL)
		snprintf(buf, len, "%s: the server's %s is reached%s", psb_status_name(status),
			 budget, status == PSB_ST_BUSY ? " (through every retry)" : "");
	else if (status > 0 && status < PSB_ST_MAX)
		snprintf(buf, len, "%s (detail %u)", psb_status_name((uint8_t)status), aux);
	else
		snprintf(buf, len, "%s", psb_bench_error_name(status));
	return buf;
}

const char *
psb_bench_failure_text(const struct psb_bench_result *r, char *buf, size_t len)
{
	/* the ERROR's detail is the key's stored length: another run's, on a store kept since */
	if (r->first_error == PSB_ST_LEN_MISMATCH && r->first_error_aux != 0 &&
	    r->first_error_aux != r->len)
		snprintf(buf, len, "%s: the server's key holds %u-byte values, this worker's are "
			 "%u bytes (the server keeps its store between runs: psbctl reset_state "
			 "clears it)", psb_status_name(PSB_ST_LEN_MISMATCH), r->first_error_aux,
			 r->len);
	else
		psb_bench_error_text(r->first_error, r->first_error_aux, buf, len);
	return buf;
}

const char *
psb_bench_error_name(int status)
{
	if (status == -ETIMEDOUT)
		return "no answer after all retries";
	if (status == -ESTALE)
		return "the server restarted (its answers carry another epoch): what it stored "
			"is lost";
	if (status == -EHOSTDOWN)
		return "the server is dead (the scheduler heard nothing from it)";
	if (status > 0 && status < PSB_ST_MAX)
		return psb_status_name((uint8_t)status);
	return "failed";
}

#define ARRAY_LEN(a)	(sizeof(a) / sizeof((a)[0]))

/*
 * Bounds of the exported histograms, with their labels written out (a scrape should not
 * print 34 reals): round trips in ns, labelled in us; staleness in versions.
 */
static const uint64_t rtt_le_ns[] = {
	500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000,
	1000000, 2000000, 5000000, 10000000, 20000000, 50000000, 100000000, 200000000,
	500000000, 1000000000,
};
static const char *const rtt_le_us[] = {
	"0.5", "1", "2", "5", "10", "20", "50", "100", "200", "500",
	"1000", "2000", "5000", "10000", "20000", "50000", "100000", "200000",
	"500000", "1000000",
};
static const uint64_t stale_le[] = { 0, 1, 2, 3, 4, 6, 8, 12, 16, 32, 64, 128, 256, 1024 };
static const char *const stale_le_names[] = {
	"0", "1", "2", "3", "4", "6", "8", "12", "16", "32", "64", "128", "256", "1024",
};
_Static_assert(ARRAY_LEN(rtt_le_ns) == ARRAY_LEN(rtt_le_us), "a label for every bound");
_Static_assert(ARRAY_LEN(stale_le) == ARRAY_LEN(stale_le_names), "a label for every bound");

const struct psb_metric_bounds psb_bench_rtt_bounds = {
	rtt_le_ns, rtt_le_us, ARRAY_LEN(rtt_le_ns), 1000.0,
};
const struct psb_metric_bounds psb_bench_stale_bounds = {
	stale_le, stale_le_names, ARRAY_LEN(stale_le), 1.0,
};

static json_t *
hist_le_json(const struct psb_hist *h, const struct psb_metric_bounds *b)
{
	struct psb_emit e;

	psb_emit_tree(&e);
	psb_metric_hist_emit(&e, NULL, h, b);
	return psb_emit_done(&e);
}

json_t *
psb_bench_rtt_hist_json(const struct psb_hist *h)
{
	return hist_le_json(h, &psb_bench_rtt_bounds);
}

json_t *
psb_bench_stale_hist_json(const struct psb_hist *h)
{
	return hist_le_json(h, &psb_bench_stale_bounds);
}

/* Round trips at fixed percentiles, [[percent, us], ...] from 0 (the fastest) to 100 (the
 * slowest): enough points for a CDF plot, at the histogram's resolution (< 1.6 %). */
static json_t *
rtt_cdf_json(const struct psb_hist *h)
{
	static const double pct[] = { 1, 2, 5, 10, 20, 25, 30, 40, 50, 60, 70, 75, 80, 90,
				      95, 98, 99, 99.5, 99.9, 99.99 };
	json_t *a = json_array();
	size_t i;

	if (a == NULL || h->count == 0)
		return a;
	json_array_append_new(a, json_pack("[f,f]", 0.0, h->min / 1000.0));
	for (i = 0; i < sizeof(pct) / sizeof(pct[0]); i++)
		json_array_append_new(a, json_pack("[f,f]", pct[i], pct_us(h, pct[i])));
	json_array_append_new(a, json_pack("[f,f]", 100.0, h->max / 1000.0));
	return a;
}

json_t *
psb_bench_result_json(const struct psb_bench_result *r, const char *label)
{
	json_t *lat, *stale, *o;

	lat = json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:I}",
		"p50", pct_us(&r->rtt, 50), "p90", pct_us(&r->rtt, 90),
		"p99", pct_us(&r->rtt, 99), "p99.9", pct_us(&r->rtt, 99.9),
		"mean", psb_hist_mean(&r->rtt) / 1000.0,
		/* an empty histogram's min is UINT64_MAX: report 0 like the percentiles */
		"min", r->rtt.count != 0 ? r->rtt.min / 1000.0 : 0.0,
		"max", r->rtt.max / 1000.0, "count", (json_int_t)r->rtt.count);
	if (lat != NULL) {
		json_object_set_new(lat, "hist", psb_bench_rtt_hist_json(&r->rtt));
		json_object_set_new(lat, "cdf", rtt_cdf_json(&r->rtt));
	}
	stale = json_pack("{s:f,s:I,s:I,s:I,s:I,s:o*}", "mean", psb_hist_mean(&r->stale),
		"p50", (json_int_t)psb_hist_percentile(&r->stale, 50),
		"p99", (json_int_t)psb_hist_percentile(&r->stale, 99),
		"max", (json_int_t)r->stale.max, "count", (json_int_t)r->stale.count,
		"hist", psb_bench_stale_hist_json(&r->stale));
	o = json_pack("{s:s,s:i,s:s,s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:o,s:o,s:I,s:I,s:I}",
		"label", label != NULL ? label : "worker",
		"mode", r->mode, "mode_name", psb_bench_mode_name(r->mode),
		"len", (json_int_t)r->len, "keys", (json_int_t)r->nkeys,
		"iterations", (json_int_t)r->iterations, "requests", (json_int_t)r->ops,
		"elapsed_s", r->elapsed_ns / 1e9, "goodput_gbps", r->goodput_gbps,
		"requests_per_s", r->ops_per_s, "rtt_us", lat, "staleness", stale,
		"retries", (json_int_t)r->retries, "failed", (json_int_t)r->failed,
		"verify_errors", (json_int_t)r->verify_errors);
	if (o != NULL)
		json_object_set_new(o, "recovery", json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}",
			"repairs", (json_int_t)r->repairs, "early_repairs",
			(json_int_t)r->early_repairs, "repair_segs", (json_int_t)r->repair_segs,
			"resends", (json_int_t)r->resends, "window_bytes", (json_int_t)r->window_bytes,
			"window_cuts", (json_int_t)r->window_cuts));
	return o;
}

int
psb_bench_write_json(const struct psb_bench_result *r, const char *label, const char *state,
		const char *error, const char *path)
{
	json_t *o = psb_bench_result_json(r, label);

	if (o != NULL) {
		json_object_set_new(o, "state", json_string(state != NULL ? state : "done"));
		if (error != NULL)
			json_object_set_new(o, "error", json_string(error));
	}
	return psb_cli_json_save(o, path);
}
