/* Parameter store and server request logic: setup, budgets, stats and the request entry points. */
#ifndef PSB_KV_H
#define PSB_KV_H

#include <stdint.h>
#include <stdio.h>

#include "psb_proto.h"
#include "psb_reasm.h"

#define PSB_KV_MAX_WORKERS	1024

/*
 * A push is added into the store only once all its segments have arrived, all at once:
 * until then its segments are staged (kept by reference, or copied), never summed. A push
 * that does not complete is discarded whole and counted: after reasm_timeout_ns without a
 * new segment, when its sender leaves (psb_kv_peer_left), when the sender restarts (a new
 * epoch), when the sender's next request for the key supersedes it, or at reset.
 *
 * Budgets (0: none). A push to a new key is refused with ERROR no_memory (aux: enum
 * psb_budget) when the key or the store's memory would exceed max_keys / max_bytes.
 * A push that would take the staged bytes of its sender or of all senders beyond
 * reasm_sender_bytes / reasm_bytes is refused with ERROR busy (aux: the budget), which
 * workers retry later: staging reserves the announced length (plus bookkeeping) when a
 * push's first segment arrives, and allocates only as segments arrive, so an announced
 * length costs budget, not memory.
 *
 * What a peer can make the store send again without a new request of its own is bounded
 * per sender by a token bucket (resend_burst 0: no bound): an answer sent again for a
 * repeated request or for a REPAIR, the answer segments a REPAIR asks for, a REPAIR_RESP.
 * Each is charged as the frames carry it (psb_kv_resend_cost); the bucket holds at most
 * resend_burst bytes and refills at resend_bps by the store's clock (psb_kv_tick). What the
 * bucket cannot pay is not sent, and counted: the worker asks again after its timeout. The
 * first answer to a request is never charged.
 */
struct psb_kv_req;

/*
 * Handler mode: a request goes to the caller instead of the store (see psb_kv_cfg.request).
 * Called once per request, when a push has arrived whole or a pull arrives; r and the
 * value it points to live for the call only. The caller answers with psb_kv_respond, in
 * the call or later.
 */
typedef void (*psb_kv_request_fn)(void *arg, const struct psb_kv_req *r);

/*
 * A synchronous round of a key, closed (psb_kv_cfg.round_closed). Times in microseconds,
 * to about one: wait, from the round's first push whole to its last (the stragglers); sum,
 * adding its pushes up and into the value; round, from the first push whole to the
 * answers sent.
 */
struct psb_kv_round {
	uint64_t key;
	uint32_t round;		/* the round closed (the key's round is now round + 1) */
	uint32_t len;		/* value bytes */
	uint32_t wait_us;
	uint32_t sum_us;
	uint32_t round_us;
};


struct psb_kv_cfg {
	uint16_t num_workers;	/* N: senders 0..N-1; a sync round closes after N pushes */
	int sync;		/* 1: synchronous rounds, 0: asynchronous */
	/*
	 * Synchronous rounds: 0, the stored value is the sum of every closed round (what a
	 * round's answers carry: the running total, as ps-lite's default handle keeps it);
	 * 1, it is the last closed round's sum alone, which the answers then carry (an
	 * allreduce through the server, what a DDP hook or a gradient aggregator wants).
	 */
	int sync_round;
	uint32_t max_value;	/* largest value accepted, bytes */
	uint16_t seg_size;	/* stride for segmenting responses */
	uint32_t capacity;	/* initial number of hash slots (rounded up to a power of 2) */
	uint64_t max_bytes;	/* store memory: values, sync sums, per-key request state, table */
	uint32_t max_keys;
	uint64_t reasm_bytes;	/* staged pushes of all senders: announced bytes + bookkeeping */
	uint64_t reasm_sender_bytes;	/* the same, per sender */
	uint64_t reasm_timeout_ns;	/* drop a staged push this long after its last segment */
	uint64_t resend_burst;	/* bytes a sender's resend bucket holds (0: resends unbounded) */
	uint64_t resend_bps;	/* bits a second it refills at */
	/*
	 * Segments handed in with a reference (psb_kv_handle_ref) are kept by reference while
	 * fewer than hold_max are kept and the segment fills at least a quarter of the memory
	 * a reference pins (hold_cost; 0: its own length); the store calls release(ref) once
	 * it is done with one. Others are copied.
	 */
	uint32_t hold_max;
	uint32_t hold_cost;
	void (*release)(void *arg, void *ref);
	void *release_arg;
	/*
	 * Whether the sender at an address cannot lose segments (arg: release_arg; NULL: any
	 * may): one on a shared-memory ring, whose segments all come, in order, however
	 * slowly. Its pushes are never taken for ones that lost their tail
	 * (psb_kv_probe_tails): asked for again, their segments would only come twice.
	 */
	int (*lossless)(void *arg, const struct psb_addr *from);
	/*
	 * A dropped key's value memory goes here (arg: release_arg) rather than to free(),
	 * for a caller whose responses may still point into it (NULL: free()). With
	 * value_headroom, the memory to free starts that many bytes before val.
	 */
	void (*value_free)(void *arg, void *val);
	/*
	 * Bytes kept free in front of every stored value, for the caller's own bookkeeping
	 * of it (a multiple of 64; 0: none), and whether responses still read a value
	 * (NULL: never): the store then adds a push into a copy of the value and hands the
	 * old one to value_free, so that an answer on its way never mixes two versions.
	 */
	uint32_t value_headroom;
	int (*value_busy)(void *arg, const float *val);
	/* in aux of every answer but ERROR: this incarnation of the server (0: pick a new one) */
	uint32_t epoch;
	/*
	 * Handler mode (request not NULL): the store keeps no values and sums nothing. Every
	 * request, whole, goes to request(request_arg, r), and stays open until the caller
	 * answers it (psb_kv_respond); whatever rounds a job has are the caller's (sync is
	 * ignored). Everything else is as in a store: segments are reassembled under the
	 * same budgets, repeated requests and REPAIRs are answered again from the answer
	 * given (kept, charged to max_bytes, until the sender's next request on the key),
	 * ones still open are not answered at all (the sender keeps asking), a newer request
	 * of the sender on the key supersedes an open one. PSB_PROBE_KEY is the workers'
	 * liveness probe: a request on it is answered NO_KEY here, never handed over.
	 */
	psb_kv_request_fn request;
	void *request_arg;
	/*
	 * Synchronous stores, optional: round_closed(round_arg, r) as each round of a key
	 * closes, with the round's times as clock_ns tells them (set both, or neither: then
	 * nothing is timed). For figures per round (psb-ksrv --rounds-file).
	 */
	void (*round_closed)(void *arg, const struct psb_kv_round *r);
	void *round_arg;
	uint64_t (*clock_ns)(void);
};

/* A request handed over in handler mode. */
struct psb_kv_req {
	uint64_t key;
	uint16_t sender;	/* the worker's rank */
	uint8_t type;		/* PSB_MSG_PUSH, PSB_MSG_PULL or PSB_MSG_PUSHPULL */
	uint8_t flags;		/* PSB_F_SYNC when the worker runs synchronous rounds */
	uint32_t req_id;	/* these two name the request to psb_kv_respond */
	uint32_t epoch;
	uint32_t round;		/* the worker's round (synchronous workers) */
	const void *value;	/* push, pushpull: the whole value (len bytes); pull: NULL */
	uint32_t len;		/* push, pushpull: bytes of value; pull: the room the worker has
				 * (0: not said) */
	struct psb_addr from;
};

/* Budget of reassembly one push of len bytes cut at seg_size takes. */
uint64_t psb_kv_push_cost(uint32_t len, uint16_t seg_size);

/*
 * What sending a value of len bytes cut at seg_size costs a resend bucket: the frames'
 * headers (PSB_FRAME_HLEN each, one frame when len is 0) and len.
 */
uint64_t psb_kv_resend_cost(uint32_t len, uint16_t seg_size);

/* Resend rate when none is given (bits/s): the repairs of a sender losing a tenth of 10 Gb/s. */
#define PSB_KV_RESEND_BPS	1000000000ull

/* A server's budgets, for the whole process (shards split the totals). */
struct psb_kv_budget {
	uint64_t max_bytes;
	uint64_t max_keys;
	uint64_t reasm_bytes;
	uint64_t reasm_sender_bytes;
	uint64_t resend_burst;		/* per sender and shard */
	uint64_t resend_bps;		/* per sender and shard */
};

/*
 * The budgets in effect, from what the operator gave (0: derive) and avail, the memory the
 * store and reassembly may use: the store three quarters of it, reassembly a quarter but
 * always room for two pushes of max_value per shard, every sender a fair share of that but
 * always room for one push of max_value (cut at seg_size, the finest stride expected).
 * Resending: a burst of two answers of max_value at seg_size, PSB_KV_RESEND_BPS.
 * 0, or -EINVAL with a message when a given budget cannot hold one push of max_value, or a
 * given resend burst one answer of it (nothing could be sent again whole).
 */
int psb_kv_budget_derive(struct psb_kv_budget *b, const struct psb_kv_budget *given,
		uint64_t avail, uint32_t max_value, uint16_t seg_size, uint16_t num_workers,
		uint16_t nshards, char *err, size_t errlen);

/* What a resend refused for want of budget would have been. */
enum psb_kv_resend {
	PSB_KV_RESEND_DUPLICATE,	/* the whole answer again: a repeated request */
	PSB_KV_RESEND_REPAIR,		/* the whole answer again: a REPAIR of an answered one */
	PSB_KV_RESEND_SEGMENT,		/* an answer segment a REPAIR asked for */
	PSB_KV_RESEND_REPAIR_RESP,	/* a REPAIR_RESP */
	PSB_KV_RESEND_MAX
};

extern const char *const psb_kv_resend_names[PSB_KV_RESEND_MAX];

/* Why a staged push was discarded. */
enum psb_kv_discard {
	PSB_KV_DISCARD_TIMEOUT,		/* no segment for reasm_timeout_ns */
	PSB_KV_DISCARD_BYE,		/* its sender left (BYE) */
	PSB_KV_DISCARD_RESTART,		/* its sender restarted (another epoch) */
	PSB_KV_DISCARD_SUPERSEDED,	/* its sender sent a newer request for the key */
	PSB_KV_DISCARD_NO_MEMORY,	/* complete, but the store could not take the key */
	PSB_KV_DISCARD_MAX
};

extern const char *const psb_kv_discard_names[PSB_KV_DISCARD_MAX];

/* Counters of one store, written only by the shard that owns it; every field a uint64_t. */
struct psb_kv_stats {
	uint64_t req[4];		/* completed requests by type (index PSB_MSG_PUSH..PUSHPULL) */
	uint64_t segs_in;		/* value segments received */
	uint64_t dup_segs;		/* duplicate segments ignored */
	uint64_t retries_answered;	/* repeated requests and REPAIRs of answered ones
					 * answered again (resend budget permitting), not
					 * re-applied */
	uint64_t stale;			/* requests older than the newest of their sender */
	uint64_t rounds_closed;		/* synchronous rounds completed */
	uint64_t bytes_summed;		/* value bytes added into the store */
	uint64_t bytes_sent;		/* value bytes in responses */
	uint64_t batches;		/* BATCH messages handled */
	uint64_t bad_records;		/* BATCH records cut short or of a wrong type */
	uint64_t errors[PSB_ST_MAX];	/* ERROR replies by status */
	uint64_t segs_held;		/* segments kept by reference until their push completed */
	uint64_t segs_copied;		/* segments copied to be kept */
	uint64_t discarded[PSB_KV_DISCARD_MAX];	/* staged pushes dropped unapplied, by reason */
	uint64_t discarded_bytes;	/* value bytes those pushes had delivered */
	uint64_t refused[PSB_BUDGET_MAX];	/* requests refused, by enum psb_budget */
	uint64_t budget_drops;		/* segments dropped while their push was refused */
	uint64_t repairs;		/* REPAIR messages (a worker's request timed out) */
	uint64_t repair_segs;		/* answer segments sent again for them */
	uint64_t nacks;			/* REPAIR_RESP: push segments asked for again */
	uint64_t early_nacks;		/* ... of them sent unasked: a push's last segment came
					 * after gaps */
	uint64_t tail_nacks;		/* ... or its segments stopped coming with some missing
					 * (psb_kv_probe_tails) */
	uint64_t repair_bad;		/* REPAIR messages that made no sense */
	uint64_t values_copied;		/* pushes added into a copy: answers read the value */
	uint64_t resend_bytes;		/* bytes sent again (answers, segments, REPAIR_RESP), as
					 * their senders' buckets were charged */
	uint64_t resend_over_budget[PSB_KV_RESEND_MAX];	/* resends not sent: bucket short */
	uint64_t resend_over_budget_bytes;	/* what they would have cost */
	uint64_t handed;		/* handler mode: requests handed over */
	uint64_t answered;		/* answers given (psb_kv_respond) */
	uint64_t answers_stale;		/* answers to requests no longer open, not sent */
	uint64_t answers_refused;	/* answers over max_bytes: ERROR no_memory instead */
};

/* Add every counter of src into dst. */
void psb_kv_stats_add(struct psb_kv_stats *dst, const struct psb_kv_stats *src);

struct psb_kv;

/*
 * Called for every response. h is complete except segmentation: the callee
 * sends value (h->total_len bytes, NULL when 0) as segments of h->seg_size; or, when
 * h->seg_len is not 0 (a repair), only the one segment of h->seg_len bytes at h->offset.
 * value is the stored value itself: it stays at that address until the key is
 * dropped (psb_kv_reset, psb_kv_free: then handed to cfg.value_free when set), and its
 * contents change only with later requests.
 */
typedef void (*psb_kv_emit_fn)(void *arg, const struct psb_addr *to, struct psb_hdr *h,
		const void *value);

/* What an emit callback sends of h's value: bytes [*off, *end). */
static inline void
psb_kv_emit_span(const struct psb_hdr *h, uint32_t *off, uint32_t *end)
{
	*off = h->seg_len != 0 ? h->offset : 0;
	*end = h->seg_len != 0 ? h->offset + h->seg_len : h->total_len;
}

struct psb_kv *psb_kv_create(const struct psb_kv_cfg *cfg);
void psb_kv_free(struct psb_kv *kv);

/*
 * Handle one request message (one segment, or a REPAIR) from `from`. Responses, when due,
 * go through emit (possibly for other senders, when a sync round closes). A request on
 * PSB_PROBE_KEY (the workers' liveness probe) is answered NO_KEY at once and never kept
 * or handed over: the key is no key's, in either mode.
 * Returns 0, or -EINVAL for a message that is not a request.
 */
int psb_kv_handle(struct psb_kv *kv, const struct psb_hdr *h, const void *payload,
		const struct psb_addr *from, psb_kv_emit_fn emit, void *arg);

#define PSB_KV_HELD	1

/*
 * The same, for a segment whose payload lives in the caller's buffer ref (e.g. an mbuf).
 * Returns PSB_KV_HELD when the store keeps ref (it calls cfg.release(ref) later, also on
 * psb_kv_reset and psb_kv_free); the caller then must not free it. Otherwise as
 * psb_kv_handle, and ref stays the caller's.
 */
int psb_kv_handle_ref(struct psb_kv *kv, const struct psb_hdr *h, const void *payload,
		void *ref, const struct psb_addr *from, psb_kv_emit_fn emit, void *arg);

/*
 * Handle a BATCH message: every record as a request of its own. Answers to
 * the batch's sender that fit go into out as BATCH_RESP records (*out_len
 * bytes, at most cap); other answers (a sync round closing for other
 * workers, values too large) go through emit as ordinary messages.
 * Returns the number of records handled, or -EINVAL if h is not a BATCH.
 */
int psb_kv_handle_batch(struct psb_kv *kv, const struct psb_hdr *h, const uint8_t *payload,
		const struct psb_addr *from, uint8_t *out, size_t cap, size_t *out_len,
		psb_kv_emit_fn emit, void *arg);

/*
 * The store's clock (ns, any origin): drops staged pushes past reasm_timeout_ns; resend
 * buckets refill by it.
 */
unsigned int psb_kv_tick(struct psb_kv *kv, uint64_t now_ns);

/*
 * Staged pushes that no segment fed for quiet_ns while other requests kept coming (by the
 * clock of psb_kv_tick), with some segments missing, lost their tail, the way a ring that
 * overflows loses the end of a burst:
 * each sender is told what is missing (REPAIR_RESP, unasked; tail_nacks), once per quiet
 * spell, so that it sends those again before its own timeout. At most max a call (a scan
 * of 4 * max stages at most). Returns how many were told.
 */
#define PSB_KV_TAIL_QUIET_NS	(2ull * 1000 * 1000)
unsigned int psb_kv_probe_tails(struct psb_kv *kv, uint64_t quiet_ns, unsigned int max,
		psb_kv_emit_fn emit, void *arg);

/* The resends one sender was refused for want of budget. */
struct psb_kv_resend_peer {
	uint16_t sender;
	uint16_t senders;		/* senders refused anything in the same interval */
	struct psb_addr addr;		/* the sender's last address */
	uint64_t refused;		/* resends refused in the interval */
	uint64_t refused_bytes;		/* what they would have cost */
	uint64_t total;			/* resends refused since the start (or reset) */
};

/*
 * The sender refused the most bytes since the previous call (the interval then starts over
 * for every sender): 1 with *p filled, 0 when no sender was refused anything.
 */
int psb_kv_resend_busiest(struct psb_kv *kv, struct psb_kv_resend_peer *p);

/*
 * Handler mode: answer request r (only key, sender, req_id and epoch are read) with value
 * (len bytes, a multiple of 4, at most max_value; a PUSH's answer carries none and value is
 * ignored). The answer is kept for the sender's retries and repairs until its next request
 * on the key. 0; -ESTALE when the request is no longer open (answered, superseded by a
 * newer one, its sender restarted: counted, nothing sent); -EINVAL for a length that is not
 * (nothing sent, the request stays open); -ENOSPC when keeping the answer would exceed
 * max_bytes: the worker gets ERROR no_memory instead; -ENOMEM when no memory is left here
 * (nothing sent, the request stays open); -EPERM outside handler mode.
 */
int psb_kv_respond(struct psb_kv *kv, const struct psb_kv_req *r, const void *value,
		uint32_t len, psb_kv_emit_fn emit, void *arg);

/* A peer at ip left (BYE): discard every push it has staged, counted. Returns how many. */
unsigned int psb_kv_peer_left(struct psb_kv *kv, uint32_t ip);

/* The stored value of key (NULL if absent); *len gets its size in bytes. */
const float *psb_kv_get(const struct psb_kv *kv, uint64_t key, uint32_t *len, uint32_t *round);

/*
 * Start over: drop every key, value and staged push (their memory is freed, held
 * references released), forget request state, fill every resend bucket, zero the counters.
 */
void psb_kv_reset(struct psb_kv *kv);

/* Sum of every element of every value: a digest tests and reports compare against. */
double psb_kv_value_sum(const struct psb_kv *kv);

/* Per key: its length, round, smallest, largest and summed element; in slot order. */
struct psb_kv_digest {
	uint64_t key;
	uint32_t len;
	uint32_t round;
	float min, max;
	double sum;
};
/* Fill at most n digests; returns how many keys there are (may exceed n). */
uint32_t psb_kv_digest(const struct psb_kv *kv, struct psb_kv_digest *out, uint32_t n);

/* Print every key's round state and every sender's request state (debugging). */
void psb_kv_dump(const struct psb_kv *kv, FILE *out);

uint32_t psb_kv_nkeys(const struct psb_kv *kv);
uint32_t psb_kv_epoch(const struct psb_kv *kv);
uint64_t psb_kv_bytes(const struct psb_kv *kv);		/* value bytes */
uint64_t psb_kv_mem(const struct psb_kv *kv);		/* what counts against max_bytes */
/* Staged pushes now: how many, their reserved bytes, references held. */
void psb_kv_staged(const struct psb_kv *kv, uint32_t *n, uint64_t *bytes, uint32_t *held);
const struct psb_kv_stats *psb_kv_stats(const struct psb_kv *kv);

/* Which of n shards owns key (a mix of the key's bits, stable across processes). */
static inline unsigned int
psb_kv_shard_of(uint64_t key, unsigned int n)
{
	uint64_t x = key;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return n <= 1 ? 0 : (unsigned int)(x % n);
}

#endif /* PSB_KV_H */
