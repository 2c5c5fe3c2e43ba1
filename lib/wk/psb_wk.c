/* Worker engine: issues push/pull requests, segments, retries, reassembles responses. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "psb_wk.h"

struct wk_slot {
	struct psb_wk_op *op;		/* NULL: free */
	uint32_t req_id;
	uint32_t next_off;		/* next push byte offset to send */
	int send_req;			/* PULL request still to send */
	uint64_t first_ns;
	uint64_t sent_ns;		/* last (re)send started */
	int resp_started;
	uint32_t resp_round;		/* the version the segments being assembled carry */
	struct psb_reasm reasm;
	struct wk_slot *next_pending;	/* list of slots with something to send */
	int on_pending;
	uint32_t bgen;			/* generation of the batch holding its record (0: none) */
	int busy;			/* the server said busy: resend after the timeout */
	int send_repair;		/* timed out: a REPAIR to send */
	int repaired;			/* lost parts asked for or named before any timeout: its
					 * round trip is no sample (one try, two exchanges) */
	/* push segments the server asked for again (REPAIR_RESP): bit i = segment rbase + i */
	uint8_t *rbits;			/* PSB_REPAIR_MAX_LEN bytes, allocated at the first */
	uint32_t rbase, rnbits, rcur;	/* rnbits 0: none; rcur: next bit to look at */
	uint8_t rtwice;			/* the segment at rcur went once of twice */
};

struct psb_wk {
	struct psb_wk_cfg cfg;
	uint32_t seq;
	uint32_t inflight;
	uint32_t *free_ids;		/* stack of free slot indexes */
	uint32_t nfree;
	struct wk_slot *pend_head, *pend_tail;
	uint64_t last_scan_ns;
	/* The open batch: request records, and the room their answers will take. */
	uint8_t bbuf[PSB_MAX_UDP_PAYLOAD];
	uint32_t blen;
	uint32_t bresp;
	uint64_t bkey;			/* first record's key: routes the batch */
	int bdest;
	uint32_t bseq;
	uint32_t bgen;			/* generation of the open batch, never 0 */
	uint64_t srtt_ns, rttvar_ns;	/* round trips of requests answered at the first try */
	uint32_t epoch[PSB_WK_MAX_DEST];	/* each server's, from its first answer */
	struct psb_wk_stats st;
	struct wk_slot slots[];
};

struct psb_wk *
psb_wk_create(const struct psb_wk_cfg *cfg)
{
	struct psb_wk *wk;
	uint32_t i, n = cfg->window;

	if (n == 0 || n > PSB_WK_MAX_WINDOW || cfg->send == NULL || cfg->done == NULL ||
	    cfg->seg_size == 0 || (cfg->seg_size & 3) != 0)
		return NULL;
	wk = calloc(1, sizeof(*wk) + n * sizeof(struct wk_slot));
	if (wk == NULL)
		return NULL;
	wk->free_ids = calloc(n, sizeof(uint32_t));
	if (wk->free_ids == NULL) {
		free(wk);
		return NULL;
	}
	wk->cfg = *cfg;
	/*
	 * Request ids restart with every run; the epoch tells servers that a
	 * restarted worker's ids are new, not stale repeats of the old run's.
	 */
	if (wk->cfg.epoch == 0)
		wk->cfg.epoch = psb_epoch_new();
	for (i = 0; i < n; i++)
		wk->free_ids[i] = n - 1 - i;
	wk->nfree = n;
	wk->bgen = 1;
	return wk;
}

void
psb_wk_free(struct psb_wk *wk)
{
	uint32_t i;

	if (wk == NULL)
		return;
	for (i = 0; i < wk->cfg.window; i++) {
		psb_reasm_fini(&wk->slots[i].reasm);
		free(wk->slots[i].rbits);
	}
	free(wk->free_ids);
	free(wk);
}

static void
pending_add(struct psb_wk *wk, struct wk_slot *s)
{
	if (s->on_pending)
		return;
	s->on_pending = 1;
	s->next_pending = NULL;
	if (wk->pend_tail != NULL)
		wk->pend_tail->next_pending = s;
	else
		wk->pend_head = s;
	wk->pend_tail = s;
}

static void
fill_hdr(const struct psb_wk *wk, const struct wk_slot *s, struct psb_hdr *h)
{
	const struct psb_wk_op *op = s->op;

	psb_hdr_init(h, op->type);
	h->flags = wk->cfg.sync ? PSB_F_SYNC : 0;
	h->sender = wk->cfg.rank;
	h->req_id = s->req_id;
	h->round = op->round;
	h->key = op->key;
	h->aux = wk->cfg.epoch;
}

/* The REPAIR of slot s: the answer's segments still missing (none begun: all of it). */
static int
send_repair(struct psb_wk *wk, struct wk_slot *s)
{
	uint8_t buf[PSB_REPAIR_MAX_LEN];
	struct psb_repair rp = { .req_type = s->op->type };
	struct psb_hdr h;
	int rc;

	if (s->resp_started) {
		wk->st.losses++;
		rp.flags = PSB_REPAIR_ROUND;
		rp.round = s->resp_round;
	}
	fill_hdr(wk, s, &h);
	h.type = PSB_MSG_REPAIR;
	h.total_len = psb_reasm_repair(s->resp_started ? &s->reasm : NULL, &rp, buf,
		wk->cfg.seg_size);
	h.seg_len = (uint16_t)h.total_len;
	h.seg_size = (uint16_t)h.total_len;
	rc = wk->cfg.send(wk->cfg.send_arg, &h, buf);
	if (rc < 0) {
		wk->st.send_blocked++;
		return rc;
	}
	wk->st.msgs_sent++;
	wk->st.repairs++;
	return 0;
}

/* The push segments a REPAIR_RESP asked for, from where the transport last stopped. */
static int
send_asked(struct psb_wk *wk, struct wk_slot *s, struct psb_hdr *h)
{
	const struct psb_wk_op *op = s->op;
	int rc;

	for (; s->rcur < s->rnbits; s->rcur++) {
		uint32_t off = (s->rbase + s->rcur) * wk->cfg.seg_size, left;

		if (!((s->rbits[s->rcur / 8] >> (s->rcur % 8)) & 1))
			continue;
		if (off >= op->len)
			break;
		left = op->len - off;
		h->total_len = op->len;
		h->seg_size = wk->cfg.seg_size;
		h->offset = off;
		h->seg_len = (uint16_t)(left < wk->cfg.seg_size ? left : wk->cfg.seg_size);
		/*
		 * From the second repair on, each segment goes twice: a loss that recurs
		 * with a fixed period can otherwise take the one segment of every round.
		 */
		do {
			rc = wk->cfg.send(wk->cfg.send_arg, h, (const uint8_t *)op->in + off);
			if (rc < 0) {
				wk->st.send_blocked++;
				return rc;
			}
			wk->st.msgs_sent++;
			wk->st.repair_segs++;
		} while (op->retries >= 2 && ++s->rtwice == 1);
		s->rtwice = 0;
	}
	s->rnbits = 0;
	return 0;
}

/* Send what remains of slot s; 0 when all went out, -ENOBUFS when the transport is full. */
static int
send_slot(struct psb_wk *wk, struct wk_slot *s)
{
	const struct psb_wk_op *op = s->op;
	struct psb_hdr h;
	int rc;

	if (s->send_repair) {
		rc = send_repair(wk, s);
		if (rc < 0)
			return rc;
		s->send_repair = 0;
	}
	fill_hdr(wk, s, &h);
	if (s->rnbits != 0 && (rc = send_asked(wk, s, &h)) < 0)
		return rc;
	if (op->type == PSB_MSG_PULL) {
		if (!s->send_req)
			return 0;
		h.total_len = 0;
		rc = wk->cfg.send(wk->cfg.send_arg, &h, NULL);
		if (rc < 0) {
			wk->st.send_blocked++;
			return rc;
		}
		wk->st.msgs_sent++;
		s->send_req = 0;
		return 0;
	}
	h.total_len = op->len;
	h.seg_size = wk->cfg.seg_size;
	while (s->next_off < op->len) {
		uint32_t left = op->len - s->next_off;

		h.offset = s->next_off;
		h.seg_len = left < wk->cfg.seg_size ? left : wk->cfg.seg_size;
		rc = wk->cfg.send(wk->cfg.send_arg, &h, (const uint8_t *)op->in + s->next_off);
		if (rc < 0) {
			wk->st.send_blocked++;
			return rc;
		}
		wk->st.msgs_sent++;
		s->next_off += h.seg_len;
	}
	return 0;
}

int
psb_wk_flush(struct psb_wk *wk)
{
	struct psb_hdr h;
	int rc;

	if (wk->blen == 0)
		return 0;
	psb_hdr_init(&h, PSB_MSG_BATCH);
	h.flags = wk->cfg.sync ? PSB_F_SYNC : 0;
	h.sender = wk->cfg.rank;
	h.req_id = ++wk->bseq;
	h.key = wk->bkey;
	h.aux = wk->cfg.epoch;
	h.total_len = wk->blen;
	h.seg_len = (uint16_t)wk->blen;
	h.seg_size = (uint16_t)wk->blen;
	rc = wk->cfg.send(wk->cfg.send_arg, &h, wk->bbuf);
	if (rc < 0) {
		wk->st.send_blocked++;
		return rc;
	}
	wk->st.msgs_sent++;
	wk->st.batches_sent++;
	wk->blen = 0;
	wk->bresp = 0;
	/* Its records are sent now: from here on they time out like any request. */
	if (++wk->bgen == 0)
		wk->bgen = 1;
	return 0;
}

/*
 * Bytes one batch (and its answer) may take. A batch is one message: no more
 * than a segment, and no more than a datagram carries, whatever the stride
 * (psb_wk_create accepts strides up to 65532; bbuf holds one datagram).
 */
static inline uint32_t
batch_limit(const struct psb_wk *wk)
{
	uint32_t dgram = (PSB_MAX_UDP_PAYLOAD - PSB_HDR_LEN) & ~3u;

	return wk->cfg.seg_size < dgram ? wk->cfg.seg_size : dgram;
}

static int
dest_of(const struct psb_wk *wk, uint64_t key)
{
	return wk->cfg.dest != NULL ? wk->cfg.dest(wk->cfg.send_arg, key) : 0;
}

/* Add op (in slot s) to the open batch; -EBUSY when a full batch cannot go out yet. */
static int
batch_room(struct psb_wk *wk, const struct psb_wk_op *op)
{
	uint32_t req = PSB_REC_HLEN + (op->type == PSB_MSG_PULL ? 0 : op->len);
	uint32_t resp = PSB_REC_HLEN + (op->type == PSB_MSG_PUSH ? 0 : op->len);
	int dest = dest_of(wk, op->key);

	if (wk->blen != 0 && (dest != wk->bdest || wk->blen + req > batch_limit(wk) ||
			wk->bresp + resp > batch_limit(wk)) && psb_wk_flush(wk) < 0)
		return -EBUSY;
	if (wk->blen == 0) {
		wk->bdest = dest;
		wk->bkey = op->key;
	}
	return 0;
}

static void
batch_add(struct psb_wk *wk, struct wk_slot *s)
{
	const struct psb_wk_op *op = s->op;
	struct psb_rec r;

	memset(&r, 0, sizeof(r));
	r.type = op->type;
	r.len = (uint16_t)(op->type == PSB_MSG_PULL ? 0 : op->len);
	r.req_id = s->req_id;
	r.round = op->round;
	r.key = op->key;
	psb_rec_encode(wk->bbuf + wk->blen, &r);
	if (r.len != 0)
		memcpy(wk->bbuf + wk->blen + PSB_REC_HLEN, op->in, r.len);
	wk->blen += PSB_REC_HLEN + r.len;
	wk->bresp += PSB_REC_HLEN + (op->type == PSB_MSG_PUSH ? 0 : op->len);
	/* Nothing left for send_slot: a retry resets these and goes on its own. */
	s->next_off = op->type == PSB_MSG_PULL ? 0 : op->len;
	s->send_req = 0;
	s->bgen = wk->bgen;
}

static inline int
batchable(const struct psb_wk *wk, const struct psb_wk_op *op)
{
	return wk->cfg.batch_max != 0 && op->len <= wk->cfg.batch_max &&
	       PSB_REC_HLEN + op->len <= batch_limit(wk);
}

int
psb_wk_submit(struct psb_wk *wk, struct psb_wk_op *op, uint64_t now_ns)
{
	struct wk_slot *s;
	uint32_t idx;

	if (!psb_msg_is_request(op->type))
		return -EINVAL;
	if (op->type != PSB_MSG_PULL &&
	    (op->len == 0 || (op->len & 3) != 0 || op->len > PSB_MAX_VALUE || op->in == NULL))
		return -EINVAL;
	if (wk->nfree == 0)
		return -EBUSY;
	if (batchable(wk, op) && batch_room(wk, op) < 0)
		return -EBUSY;
	idx = wk->free_ids[--wk->nfree];
	s = &wk->slots[idx];
	s->op = op;
	wk->seq++;
	s->req_id = wk->seq << PSB_WK_SLOT_BITS | idx;
	s->next_off = 0;
	s->send_req = op->type == PSB_MSG_PULL;
	s->first_ns = now_ns;
	s->sent_ns = now_ns;
	s->resp_started = 0;
	s->bgen = 0;
	s->busy = 0;
	s->send_repair = 0;
	s->repaired = 0;
	s->rnbits = 0;
	op->status = 0;
	op->out_len = 0;
	op->retries = 0;
	wk->inflight++;
	wk->st.submitted++;
	if (batchable(wk, op)) {
		batch_add(wk, s);
		return 0;
	}
	/* Keep order: if others wait for the transport, queue behind them. */
	if (wk->pend_head != NULL || send_slot(wk, s) < 0)
		pending_add(wk, s);
	return 0;
}

/* Round-trip estimate, as TCP keeps one (RFC 6298): smoothed, and its variation. */
static void
rtt_sample(struct psb_wk *wk, uint64_t rtt)
{
	uint64_t d;

	if (wk->srtt_ns == 0) {
		wk->srtt_ns = rtt;
		wk->rttvar_ns = rtt / 2;
		return;
	}
	d = rtt > wk->srtt_ns ? rtt - wk->srtt_ns : wk->srtt_ns - rtt;
	wk->rttvar_ns = (3 * wk->rttvar_ns + d) / 4;
	wk->srtt_ns = (7 * wk->srtt_ns + rtt) / 8;
}

uint64_t
psb_wk_rto(const struct psb_wk *wk)
{
	uint64_t rto = wk->srtt_ns + 4 * wk->rttvar_ns, cap = PSB_WK_RTO_CAP * wk->cfg.timeout_ns;

	if (rto > cap)
		rto = cap;
	return rto > wk->cfg.timeout_ns ? rto : wk->cfg.timeout_ns;
}

/* How long try number `tries` (0: the first send) waits before the next. */
static inline uint64_t
try_wait(const struct psb_wk *wk, uint64_t rto, uint32_t tries)
{
	uint64_t backoff = wk->cfg.timeout_ns << (tries < 6 ? tries : 6);

	return backoff > rto ? backoff : rto;
}

static void
finish(struct psb_wk *wk, struct wk_slot *s, int status, uint64_t now_ns)
{
	struct psb_wk_op *op = s->op;
	uint32_t idx = (uint32_t)(s - wk->slots);

	op->status = status;
	op->rtt_ns = now_ns - s->first_ns;
	if (status == 0 && op->retries == 0 && !s->repaired)
		rtt_sample(wk, op->rtt_ns);
	psb_reasm_fini(&s->reasm);
	s->op = NULL;
	/* A slot still on the pending list is skipped there and unlinked lazily. */
	wk->free_ids[wk->nfree++] = idx;
	wk->inflight--;
	if (status == 0)
		wk->st.completed++;
	else
		wk->st.failed++;
	wk->cfg.done(wk->cfg.done_arg, op);
}

/* Each record of a BATCH_RESP is handled as the one-segment response it stands for. */
static void
input_batch(struct psb_wk *wk, const struct psb_hdr *h, const uint8_t *payload, uint64_t now_ns)
{
	size_t off = 0;

	while (off < h->seg_len) {
		struct psb_rec r;
		struct psb_hdr sh;
		int used = psb_rec_decode(&r, payload + off, h->seg_len - off);

		if (used < 0 || r.type == PSB_MSG_BATCH_RESP || r.type == PSB_MSG_BATCH) {
			wk->st.bad_batches++;
			return;
		}
		psb_hdr_init(&sh, r.type);
		sh.flags = h->flags;
		sh.status = r.status;
		sh.sender = h->sender;
		sh.req_id = r.req_id;
		sh.round = r.round;
		sh.key = r.key;
		sh.aux = r.aux;
		sh.total_len = r.len;
		sh.seg_len = r.len;
		sh.seg_size = r.len;
		psb_wk_input(wk, &sh, payload + off + PSB_REC_HLEN, now_ns);
		off += (size_t)used;
	}
}

/* Send slot s's request again, all of it. */
static void
resend_whole(struct psb_wk *wk, struct wk_slot *s)
{
	s->rnbits = 0;
	s->next_off = 0;
	s->send_req = s->op->type == PSB_MSG_PULL;
	wk->st.resends++;
}

/*
 * The server's answer to a REPAIR: the push segments it lacks, sent again; or ALL, it
 * knows nothing of the request: all of it again.
 */
static void
input_nack(struct psb_wk *wk, struct wk_slot *s, const struct psb_hdr *h, const void *payload,
		uint64_t now_ns)
{
	const struct psb_wk_op *op = s->op;
	struct psb_repair rp;
	uint32_t nseg = op->type == PSB_MSG_PULL ? 0 : psb_seg_count(op->len, wk->cfg.seg_size);

	if (psb_repair_decode(&rp, payload, h->seg_len) != 0 ||
	    (!(rp.flags & PSB_REPAIR_ALL) && (rp.base >= nseg || rp.nbits > nseg - rp.base))) {
		wk->st.stray++;
		return;
	}
	wk->st.nacks++;
	s->repaired = 1;
	if ((rp.flags & PSB_REPAIR_ALL) || rp.nbits != 0)
		wk->st.losses++;
	/* the server is there and answered: the next timeout counts from here */
	s->sent_ns = now_ns;
	if (rp.flags & PSB_REPAIR_ALL) {
		resend_whole(wk, s);
	} else {
		if (rp.nbits == 0)
			return;
		if (s->rbits == NULL && (s->rbits = malloc(PSB_REPAIR_MAX_LEN)) == NULL)
			return;	/* the next timeout asks again */
		if ((rp.nbits + 7) / 8 > PSB_REPAIR_MAX_LEN)
			rp.nbits = PSB_REPAIR_MAX_LEN * 8;
		memcpy(s->rbits, rp.bits, (rp.nbits + 7) / 8);
		s->rbase = rp.base;
		s->rnbits = rp.nbits;
		s->rcur = 0;
		s->rtwice = 0;
	}
	if (!s->on_pending && (wk->pend_head != NULL || send_slot(wk, s) < 0))
		pending_add(wk, s);
}

/*
 * An answer's epoch (aux; 0: the server gives none) against the one its server answered
 * with first: another one means the server restarted and what it stored is gone.
 */
/*
 * A segment of an answer into op->out: copied, and multiplied by op->scale while the
 * segment is still in the cache (the floats it holds whole; a segment's bytes are a
 * whole number of floats from a float boundary, as psb's servers cut them).
 */
static void
land(const struct psb_wk_op *op, const struct psb_hdr *h, const void *payload)
{
	uint8_t *dst = (uint8_t *)op->out + h->offset;
	size_t i, n = h->seg_len / sizeof(float);
	float x;

	memcpy(dst, payload, h->seg_len);
	if (op->scale == 0.0f)
		return;
	for (i = 0; i < n; i++) {
		memcpy(&x, dst + i * sizeof(float), sizeof(x));
		x *= op->scale;
		memcpy(dst + i * sizeof(float), &x, sizeof(x));
	}
}

static int
epoch_changed(struct psb_wk *wk, uint64_t key, uint32_t epoch)
{
	int d = dest_of(wk, key);

	if (epoch == 0 || d < 0 || d >= PSB_WK_MAX_DEST)
		return 0;
	if (wk->epoch[d] == 0)
		wk->epoch[d] = epoch;
	if (wk->epoch[d] == epoch)
		return 0;
	wk->st.server_restarts++;
	return 1;
}

uint32_t
psb_wk_server_epoch(const struct psb_wk *wk, int dest)
{
	return dest >= 0 && dest < PSB_WK_MAX_DEST ? wk->epoch[dest] : 0;
}

void
psb_wk_input(struct psb_wk *wk, const struct psb_hdr *h, const void *payload, uint64_t now_ns)
{
	uint32_t idx = h->req_id & (PSB_WK_MAX_WINDOW - 1);
	struct wk_slot *s;
	struct psb_wk_op *op;
	int rc;

	if (h->type == PSB_MSG_BATCH_RESP) {
		if (h->sender != wk->cfg.rank) {
			wk->st.stray++;
			return;
		}
		input_batch(wk, h, payload, now_ns);
		return;
	}

	if (idx >= wk->cfg.window || h->sender != wk->cfg.rank) {
		wk->st.stray++;
		return;
	}
	s = &wk->slots[idx];
	op = s->op;
	if (op == NULL || s->req_id != h->req_id || h->key != op->key) {
		wk->st.stray++;
		return;
	}
	if (h->type != PSB_MSG_ERROR && epoch_changed(wk, op->key, h->aux)) {
		/* never taken as an answer: it comes from a store that lost the job's state */
		op->err_aux = h->aux;
		finish(wk, s, -ESTALE, now_ns);
		return;
	}
	if (h->type == PSB_MSG_REPAIR_RESP) {
		input_nack(wk, s, h, payload, now_ns);
		return;
	}
	if (h->type == PSB_MSG_ERROR) {
		wk->st.errors++;
		op->err_aux = h->aux;
		if (h->status == PSB_ST_BUSY) {
			/* The server could not take it now (a budget): resend after the timeout. */
			wk->st.busy++;
			s->busy = 1;
			return;
		}
		finish(wk, s, h->status != 0 ? h->status : PSB_ST_BAD_TYPE, now_ns);
		return;
	}
	if (h->type != (op->type | PSB_MSG_RESP)) {
		wk->st.stray++;
		return;
	}
	op->out_round = h->round;
	if (h->type == PSB_MSG_PUSH_ACK) {
		finish(wk, s, 0, now_ns);
		return;
	}
	if (h->total_len > op->len && op->out != NULL) {
		op->err_aux = h->total_len;
		finish(wk, s, PSB_ST_LEN_MISMATCH, now_ns);
		return;
	}
	if (s->resp_started && h->round != s->resp_round) {
		/*
		 * Segments of another answer: a retry was answered again after the value
		 * changed (async). Never mix two versions: keep assembling the newer one.
		 */
		if ((int32_t)(h->round - s->resp_round) < 0) {
			wk->st.dup_segs++;
			return;
		}
		psb_reasm_fini(&s->reasm);
		s->resp_started = 0;
		wk->st.torn++;
	}
	if (!s->resp_started) {
		if (psb_reasm_init(&s->reasm, h->total_len, h->seg_size) < 0) {
			wk->st.stray++;
			return;
		}
		s->resp_started = 1;
		s->resp_round = h->round;
	}
	rc = psb_reasm_mark(&s->reasm, h);
	if (rc < 0) {
		wk->st.stray++;
		return;
	}
	wk->st.resp_segs++;
	if (rc == PSB_REASM_DUP) {
		wk->st.dup_segs++;
		return;
	}
	if (op->out != NULL && h->seg_len != 0)
		land(op, h, payload);
	if (rc == PSB_REASM_DONE) {
		op->out_len = h->total_len;
		finish(wk, s, 0, now_ns);
		return;
	}
	/*
	 * The answer's last segment came and some before it did not: the server sends them in
	 * order on one path, so those were lost. Ask for them now rather than after the
	 * timeout (which counts from here again); a resend that brings the tail again asks
	 * for what is still missing.
	 */
	if ((uint32_t)h->offset + h->seg_len == h->total_len && !s->send_repair) {
		wk->st.early_repairs++;
		s->repaired = 1;
		s->sent_ns = now_ns;
		s->send_repair = 1;
		if (!s->on_pending && (wk->pend_head != NULL || send_slot(wk, s) < 0))
			pending_add(wk, s);
	}
}

/*
 * What a timeout sends again. A request of many segments, or whose answer has begun to
 * arrive, asks the server what is missing (REPAIR) rather than sending itself again and
 * being answered whole again, which loses the same tail to the same full ring every time.
 */
static inline int
repairable(const struct psb_wk *wk, const struct wk_slot *s)
{
	const struct psb_wk_op *op = s->op;

	return (op->type != PSB_MSG_PULL && op->len > wk->cfg.seg_size) ||
	       (op->type != PSB_MSG_PUSH && s->resp_started);
}

void
psb_wk_poll(struct psb_wk *wk, uint64_t now_ns)
{
	uint64_t rto;
	uint32_t i;

	psb_wk_flush(wk);
	while (wk->pend_head != NULL) {
		struct wk_slot *s = wk->pend_head;

		if (s->op != NULL && send_slot(wk, s) < 0)
			break;
		wk->pend_head = s->next_pending;
		if (wk->pend_head == NULL)
			wk->pend_tail = NULL;
		s->on_pending = 0;
	}
	/* Scanning the window is not free: do it a few times per timeout only. */
	if (wk->inflight == 0 || wk->cfg.timeout_ns == 0 ||
	    now_ns - wk->last_scan_ns < (rto = psb_wk_rto(wk)) / 4)
		return;
	wk->last_scan_ns = now_ns;
	for (i = 0; i < wk->cfg.window; i++) {
		struct wk_slot *s = &wk->slots[i];

		/* Back off: a resend of a large value must not crowd out the answers to it. */
		if (s->op == NULL || now_ns - s->sent_ns < try_wait(wk, rto, s->op->retries))
			continue;
		if (wk->cfg.max_retries != 0 && s->op->retries >= wk->cfg.max_retries) {
			finish(wk, s, s->busy ? PSB_ST_BUSY : -ETIMEDOUT, now_ns);
			continue;
		}
		/*
		 * Requests waiting on the pending list, and records of a batch the transport
		 * has not taken yet, were never (wholly) sent: nothing to resend. A transport
		 * that takes nothing for a whole timeout still uses up a try, so that a port
		 * that stays blocked (a peer gone, a ring that never drains) ends in -ETIMEDOUT
		 * after max_retries like a peer that never answers.
		 */
		if (s->on_pending || s->bgen == wk->bgen) {
			s->op->retries++;
			s->sent_ns = now_ns;
			continue;
		}
		s->op->retries++;
		wk->st.retries++;
		s->sent_ns = now_ns;
		if (repairable(wk, s)) {
			s->send_repair = 1;
			s->rnbits = 0;
		} else {
			resend_whole(wk, s);
			wk->st.losses++;
		}
		if (wk->pend_head != NULL || send_slot(wk, s) < 0)
			pending_add(wk, s);
	}
}

void
psb_wk_abort(struct psb_wk *wk, int dest, int status, uint64_t now_ns)
{
	uint32_t i;

	/* The open batch holds records of requests that may end here: it goes unsent. */
	if (wk->blen != 0 && (dest < 0 || wk->bdest == dest)) {
		wk->blen = 0;
		wk->bresp = 0;
		if (++wk->bgen == 0)
			wk->bgen = 1;
	}
	for (i = 0; i < wk->cfg.window; i++) {
		struct wk_slot *s = &wk->slots[i];

		if (s->op != NULL && (dest < 0 || dest_of(wk, s->op->key) == dest))
			finish(wk, s, status, now_ns);
	}
}

int
psb_wk_pending(const struct psb_wk *wk)
{
	return wk->pend_head != NULL || wk->blen != 0;
}

uint32_t
psb_wk_inflight(const struct psb_wk *wk)
{
	return wk->inflight;
}

uint32_t
psb_wk_inflight_to(const struct psb_wk *wk, int dest)
{
	uint32_t i, n = 0;

	if (wk->inflight == 0)
		return 0;
	for (i = 0; i < wk->cfg.window; i++)
		n += wk->slots[i].op != NULL && dest_of(wk, wk->slots[i].op->key) == dest;
	return n;
}

const struct psb_wk_stats *
psb_wk_stats(const struct psb_wk *wk)
{
	return &wk->st;
}
