/* Per-queue-pair accounting of RoCE traffic in a table of bounded size. EAL-free. */
#ifndef PSB_ROCE_QP_H
#define PSB_ROCE_QP_H

#include <stdint.h>

#include "psb_roce.h"

/*
 * A queue pair is seen as its packets' destination QP and addresses (and RoCE version):
 * a connection's two directions are two entries, the requests under the responder's QP,
 * the ACKs and read responses under the requester's.
 *
 * PSNs, 24 bits and modular, are followed per entry in two streams:
 *  - requests (SEND, WRITE, READ request, atomics): a PSN ahead of the next expected adds
 *    the PSNs skipped to psn_missing, one behind it is a duplicate (a retransmission). A READ
 *    request takes as many PSNs as its response has packets, which the path MTU decides and
 *    the wire does not say, so the request after a READ sets the next PSN without a gap;
 *  - responses (ACKs, NAKs, atomic ACKs, READ responses): ACKs coalesce, so a PSN ahead of
 *    the highest seen is never a gap; one at or behind it is a duplicate. Inside a READ
 *    response (MIDDLE, LAST) the PSNs are consecutive, and a skip is missing.
 * Half the PSN space ahead counts as ahead, the other half as behind.
 *
 * The table holds at most cap entries. A new QP when it is full takes the place of one not
 * seen lately (counted as evicted): a clock passes over the entries, and one seen since it
 * last passed keeps its place for another turn (second chance, the least recently seen but
 * for one store a packet); the totals keep every packet either way. A
 * packet whose ICRC is wrong may have any QP number: it is counted in the totals and on its
 * QP only if that QP is already tracked, and changes no PSN state. Buckets are hashed with a
 * seed of the caller's, so a peer cannot aim its QP numbers at one chain.
 *
 * One writer (the lcore that owns the table). The totals are plain counters, each written
 * by that writer alone, so another thread may read them as they are; rows are copied out by
 * the writer.
 */

struct psb_roce_qp_key {
	uint8_t kind;
	uint8_t rsv[3];
	uint32_t dqpn;
	uint8_t src[16], dst[16];
};

struct psb_roce_qp_stats {
	uint64_t pkts, bytes;			/* bytes of whole frames */
	uint64_t ops[PSB_ROCE_CLASSES];
	uint64_t psn_missing;			/* PSNs skipped */
	uint64_t psn_dup;			/* packets at a PSN seen before */
	uint64_t naks[PSB_ROCE_NAKS];
	uint64_t ecn_ce;			/* IP ECN field CE (3) */
	uint64_t becn;				/* BTH BECN set */
	uint64_t icrc_bad;
	uint64_t first_ns, last_ns;
};

/*
 * What a lookup and the PSN streams touch come first, in the first 64 bytes; an entry is 256
 * bytes, so that in the table (64-byte aligned) each of those is one cache line.
 */
struct psb_roce_qp {
	struct psb_roce_qp_key key;
	uint32_t hash;
	uint32_t hnext;		/* bucket chain */
	uint32_t req_next;	/* the next request PSN expected */
	uint32_t resp_top;	/* the highest response PSN seen */
	uint8_t seen;		/* seen since the clock last passed it */
	uint8_t req_seen, resp_seen, after_read;
	struct psb_roce_qp_stats st;
	uint8_t pad_[16];
};

_Static_assert(sizeof(struct psb_roce_qp) == 256, "an entry is 4 cache lines");
_Static_assert(__builtin_offsetof(struct psb_roce_qp, st) == 64,
	       "a lookup and the PSN streams touch one cache line");

struct psb_roce_totals {
	uint64_t frames[PSB_ROCE_KINDS];	/* RoCE frames by version ([NONE] unused) */
	uint64_t bytes;
	uint64_t malformed;		/* said RoCE, could not be (counted, passed on) */
	uint64_t icrc_bad;
	uint64_t ops[PSB_ROCE_CLASSES];
	uint64_t psn_missing, psn_dup;
	uint64_t naks[PSB_ROCE_NAKS];
	uint64_t ecn_ce, becn;
	uint64_t qp_new;		/* entries made */
	uint64_t qp_evicted;		/* entries that made room for a new QP */
	uint64_t qp_tracked;		/* entries now */
};

struct psb_roce_qptab;

/* NULL when cap is 0 or above PSB_ROCE_QP_MAX, or no memory. */
#define PSB_ROCE_QP_MAX	(1u << 20)
struct psb_roce_qptab *psb_roce_qptab_create(uint32_t cap, uint64_t seed);
void psb_roce_qptab_free(struct psb_roce_qptab *t);
uint32_t psb_roce_qptab_cap(const struct psb_roce_qptab *t);

/* A frame parsed as RoCE (psb_roce_parse said 1), len its length on the wire. */
void psb_roce_qptab_account(struct psb_roce_qptab *t, const struct psb_roce_pkt *p,
			    uint32_t len, int icrc_ok, uint64_t now_ns);
/* A frame that said RoCE and was not (psb_roce_parse said -EBADMSG). */
void psb_roce_qptab_malformed(struct psb_roce_qptab *t);
/*
 * n frames parsed, checked and counted as above (frame i's first seg[i] bytes at data[i],
 * len[i] its length on the wire), a few at a time in passes over them (all parsed, then all
 * checked, then all counted), so that one frame's work need not wait for the last's to end.
 * Returns how many were not RoCE.
 */
#define PSB_ROCE_PASS	32
uint32_t psb_roce_qptab_frames(struct psb_roce_qptab *t, const uint8_t *const *data,
			       const uint32_t *seg, const uint32_t *len, uint32_t n,
			       uint64_t now_ns);

const struct psb_roce_totals *psb_roce_qptab_totals(const struct psb_roce_qptab *t);
const struct psb_roce_qp *psb_roce_qptab_find(const struct psb_roce_qptab *t,
					      const struct psb_roce_qp_key *k);
/* The tracked QPs, most packets first, at most max of them; returns how many. */
uint32_t psb_roce_qptab_rows(const struct psb_roce_qptab *t, struct psb_roce_qp *rows,
			     uint32_t max);
/* The tracked QPs as they lie in the table (cheap: for a writer publishing them). */
uint32_t psb_roce_qptab_entries(const struct psb_roce_qptab *t, struct psb_roce_qp *out,
				uint32_t max);
/* Rows in the order psb_roce_qptab_rows gives: most packets first. */
void psb_roce_qp_sort(struct psb_roce_qp *rows, uint32_t n);
/* Forget every QP and zero the totals. */
void psb_roce_qptab_reset(struct psb_roce_qptab *t);

#endif
