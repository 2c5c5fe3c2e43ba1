/* Parameter store and server request logic: setup, stats and the request entry point. */
#ifndef PSB_KV_H
#define PSB_KV_H

#include <stdint.h>
#include <stdio.h>

#include "psb_proto.h"
#include "psb_reasm.h"

#define PSB_KV_MAX_WORKERS	1024

struct psb_kv_cfg {
	uint16_t num_workers;	/* N: senders 0..N-1; a sync round closes after N pushes */
	int sync;		/* 1: synchronous rounds, 0: asynchronous */
	uint32_t max_value;	/* largest value accepted, bytes */
	uint16_t seg_size;	/* stride for segmenting responses */
	uint32_t capacity;	/* initial number of hash slots (rounded up to a power of 2) */
};

/* Counters of one store, written only by the shard that owns it. */
struct psb_kv_stats {
	uint64_t req[4];		/* completed requests by type (index PSB_MSG_PUSH..PUSHPULL) */
	uint64_t segs_in;		/* value segments received */
	uint64_t dup_segs;		/* duplicate segments ignored */
	uint64_t retries_answered;	/* repeated requests answered again, not re-applied */
	uint64_t stale;			/* requests older than the newest of their sender */
	uint64_t rounds_closed;		/* synchronous rounds completed */
	uint64_t bytes_summed;		/* value bytes added into the store */
	uint64_t bytes_sent;		/* value bytes in responses */
	uint64_t batches;		/* BATCH messages handled */
	uint64_t bad_records;		/* BATCH records cut short or of a wrong type */
	uint64_t errors[PSB_ST_MAX];	/* ERROR replies by status */
};

struct psb_kv;

/*
 * Called for every response. h is complete except segmentation: the callee
 * sends value (h->total_len bytes, NULL when 0) as segments of h->seg_size.
 * value is the stored value itself: it stays at that address until the
 * store is freed, and its contents change only with later requests.
 */
typedef void (*psb_kv_emit_fn)(void *arg, const struct psb_addr *to, struct psb_hdr *h,
		const void *value);

struct psb_kv *psb_kv_create(const struct psb_kv_cfg *cfg);
void psb_kv_free(struct psb_kv *kv);

/*
 * Handle one request message (one segment) from `from`. Responses, when due,
 * go through emit (possibly for other senders, when a sync round closes).
 * Returns 0, or -EINVAL for a message that is not a request.
 */
int psb_kv_handle(struct psb_kv *kv, const struct psb_hdr *h, const void *payload,
		const struct psb_addr *from, psb_kv_emit_fn emit, void *arg);

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

/* A peer at ip left (BYE): discard every request it has in progress, counted. Returns the
 * number of requests discarded. */
int psb_kv_peer_left(struct psb_kv *kv, uint32_t ip);

/* The stored value of key (NULL if absent); *len gets its size in bytes. */
const float *psb_kv_get(const struct psb_kv *kv, uint64_t key, uint32_t *len, uint32_t *round);

/* Zero every value and round, forget request state; keys and lengths stay. */
void psb_kv_reset(struct psb_kv *kv);

/* Sum of every element of every value: a digest tests and reports compare against. */
double psb_kv_value_sum(const struct psb_kv *kv);

/* Print every key's round state and every sender's request state (debugging). */
void psb_kv_dump(const struct psb_kv *kv, FILE *out);

uint32_t psb_kv_nkeys(const struct psb_kv *kv);
uint64_t psb_kv_bytes(const struct psb_kv *kv);
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
