/* Worker engine: issues push/pull requests, segments, retries, reassembles responses. */
#ifndef PSB_WK_H
#define PSB_WK_H

#include <stdint.h>

#include "psb_proto.h"
#include "psb_reasm.h"

#define PSB_WK_SLOT_BITS	12
#define PSB_WK_MAX_WINDOW	(1u << PSB_WK_SLOT_BITS)
#define PSB_WK_RTO_CAP		8	/* the measured timeout is at most 8 times timeout_ns */
#define PSB_WK_MAX_DEST		256	/* servers (dest) whose epoch is followed */

/* One request as the application sees it. */
struct psb_wk_op {
	uint8_t type;		/* PSB_MSG_PUSH, PULL or PUSHPULL */
	uint64_t key;
	uint32_t round;		/* sync: round pushed into / version needed */
	uint32_t len;		/* bytes pushed, or capacity of out */
	const float *in;	/* PUSH / PUSHPULL value */
	float *out;		/* PULL / PUSHPULL destination (NULL: discard) */
	float scale;		/* PULL / PUSHPULL: the answer lands multiplied by this (0: as
				 * it came), a mean from a sum without another pass over out */
	void *user;
	/* Filled on completion. */
	int status;		/* enum psb_status, or -ETIMEDOUT after max retries (PSB_ST_BUSY
				 * when the server's last word was busy), or -ESTALE: the server
				 * answered with another epoch than before, it restarted (err_aux:
				 * the new epoch) */
	uint32_t out_len;	/* bytes received */
	uint32_t out_round;	/* version the server answered with */
	uint32_t err_aux;	/* aux field of an ERROR reply */
	uint64_t rtt_ns;	/* first send to completion, retries included */
	uint32_t retries;
};

/* Send one message; return 0, or -ENOBUFS to be called again later for it. */
typedef int (*psb_wk_send_fn)(void *arg, const struct psb_hdr *h, const void *payload);
/* A request finished (op->status tells how). */
typedef void (*psb_wk_done_fn)(void *arg, struct psb_wk_op *op);

struct psb_wk_cfg {
	uint16_t rank;		/* sender id the servers know us by */
	uint32_t epoch;		/* this incarnation of the sender (0: pick a random one) */
	int sync;
	uint16_t seg_size;	/* stride for push segments */
	uint32_t window;	/* requests in flight at most (<= PSB_WK_MAX_WINDOW) */
	uint64_t timeout_ns;	/* resend a request unanswered for this long; doubles with each
				 * retry of that request, up to 64 times; never less than
				 * psb_wk_rto, the measured round trip. A request of many
				 * segments, or with part of its answer in, asks for what is
				 * missing instead (REPAIR) */
	uint32_t max_retries;	/* then fail it with -ETIMEDOUT (0: retry forever); a timeout
				 * that passes while the transport takes nothing counts as
				 * a try too, so a blocked transport fails requests alike */
	/*
	 * Requests whose value (or, for a pull, expected value) is at most
	 * batch_max bytes are sent as records of BATCH messages, which
	 * psb_wk_flush (and psb_wk_poll) sends; 0 sends every request on its own.
	 * Retries always go on their own.
	 */
	uint16_t batch_max;
	/* Which server a key goes to (NULL: all keys to one); batches never mix servers. */
	int (*dest)(void *send_arg, uint64_t key);
	psb_wk_send_fn send;
	void *send_arg;
	psb_wk_done_fn done;
	void *done_arg;
};

struct psb_wk_stats {
	uint64_t submitted;
	uint64_t completed;
	uint64_t failed;
	uint64_t msgs_sent;
	uint64_t send_blocked;		/* send callback asked to wait */
	uint64_t retries;
	uint64_t resp_segs;
	uint64_t dup_segs;
	uint64_t stray;			/* responses matching no request in flight */
	uint64_t errors;		/* ERROR replies */
	uint64_t busy;			/* ERROR busy replies: resent after the timeout */
	uint64_t torn;			/* answers restarted: a newer version's segments came */
	uint64_t batches_sent;
	uint64_t bad_batches;		/* BATCH_RESP records cut short */
	uint64_t repairs;		/* REPAIR sent for a request that timed out */
	uint64_t early_repairs;		/* ... or at once: its answer's last segment came after
					 * gaps (counted in repairs too) */
	uint64_t nacks;			/* REPAIR_RESP: the server said what it lacks */
	uint64_t repair_segs;		/* push segments sent again because it lacked them */
	uint64_t resends;		/* requests sent again whole */
	/*
	 * Losses seen for sure: a server lacking push segments or the whole request, an
	 * answer that arrived in part, a one-segment request sent again. A timeout alone is
	 * not one: in sync rounds a request also waits for the other workers.
	 */
	uint64_t losses;
	uint64_t server_restarts;	/* answers with another epoch than the server's first */
};

struct psb_wk;

struct psb_wk *psb_wk_create(const struct psb_wk_cfg *cfg);
void psb_wk_free(struct psb_wk *wk);

/* Start op (kept by the caller until done). 0, -EBUSY when the window is full, -EINVAL. */
int psb_wk_submit(struct psb_wk *wk, struct psb_wk_op *op, uint64_t now_ns);

/* Feed one response message addressed to this worker. */
void psb_wk_input(struct psb_wk *wk, const struct psb_hdr *h, const void *payload,
		uint64_t now_ns);

/* Send the open batch now. 0, or -ENOBUFS when the transport is full (it stays open). */
int psb_wk_flush(struct psb_wk *wk);

/* Send what the transport refused earlier and resend what timed out. */
void psb_wk_poll(struct psb_wk *wk, uint64_t now_ns);

/*
 * End every request in flight to server dest (-1: to any) with status, as if it had
 * failed: for what retrying cannot fix (a datagram the route cannot carry). The open
 * batch is dropped when it goes there. Not from inside the engine's own callbacks.
 */
void psb_wk_abort(struct psb_wk *wk, int dest, int status, uint64_t now_ns);
uint32_t psb_wk_inflight(const struct psb_wk *wk);
/* Requests in flight to server dest (a scan of the window). */
uint32_t psb_wk_inflight_to(const struct psb_wk *wk, int dest);
/* The epoch server dest answered with first (0: none yet, or it gives none). */
uint32_t psb_wk_server_epoch(const struct psb_wk *wk, int dest);
/*
 * The shortest wait of a try: timeout_ns, or more where requests take longer to be
 * answered (smoothed round trip plus four times its variation, of requests answered at
 * once), up to PSB_WK_RTO_CAP times timeout_ns.
 */
uint64_t psb_wk_rto(const struct psb_wk *wk);
/* 1 when messages wait for the transport (psb_wk_poll should run soon). */
int psb_wk_pending(const struct psb_wk *wk);
const struct psb_wk_stats *psb_wk_stats(const struct psb_wk *wk);

#endif /* PSB_WK_H */
