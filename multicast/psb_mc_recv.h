/*
 * The receiving side of psb's reliable multicast: packets in, verified versions out, NACKs
 * back to the sender. EAL-free: the caller gives the time and a callback that sends a
 * NACK to the sender (by unicast), feeds it every packet (psb_mc_recv_input) and calls
 * psb_mc_recv_poll when psb_mc_recv_next_ns says.
 *
 * It holds at most two versions: the newest complete one, verified (CRC32C of the whole)
 * before it is handed over, and the one being received. A packet of a newer version ends
 * the one being received (superseded); packets of older ones are dropped. Both versions,
 * and the parity symbols held for groups not yet whole, fit in budget bytes; a version
 * that cannot is refused, and counted.
 *
 * A receiver follows one sender session: packets of another are forged unless the one it
 * follows was silent for session_idle_ns (the sender restarted). A version more than
 * vid_window ahead of the newest one it knows is out of window; the newest one it knows is
 * given up when nothing of it came for session_idle_ns while older ones of the session
 * did (a forged packet named it, or it failed its check), so one packet cannot silence a
 * receiver for good. A receiver that joins while a version streams (the first it hears
 * of it is more than reorder segments in) takes what it can of it without asking for the
 * rest, and asks for repairs from the next version on: it holds the next complete
 * version, and a late joiner costs the others nothing.
 *
 * NACKs: a group counts as lost once reorder segments after it arrived, or once a
 * heartbeat says it was sent. The first NACK of a loss waits a random time up to backoff,
 * the next ones retry_ns apart while something is still missing. A NACK is not sent
 * (suppressed, and counted) when repairs another receiver asked for came meanwhile, or
 * the sender announced (NCF) that they are coming, believed for retry_ns.
 *
 * Every packet handed in is counted once: pkts = the bad reasons + other + forged + stale +
 * out_of_window + oversize + no_memory + data_pkts + parity_pkts + heartbeats + ncfs.
 *
 * With track_only, the receiver keeps bitmaps and counts alone (no bytes, no check): the
 * emulation of many receivers in one process.
 */
#ifndef PSB_MC_RECV_H
#define PSB_MC_RECV_H

#include <stddef.h>
#include <stdint.h>

#include "psb_mc_proto.h"

struct psb_mc_recv_cfg {
	uint32_t id;			/* named in its NACKs */
	uint64_t budget;		/* bytes for both versions and held parity */
	uint64_t max_version;		/* the largest version taken (<= PSB_MC_MAX_VERSION) */
	uint64_t backoff_ns;		/* a first NACK waits a random time up to this */
	uint64_t retry_ns;		/* between NACKs of what is still missing */
	uint32_t reorder;		/* segments after a gap before it counts as lost */
	uint32_t vid_window;
	uint64_t session_idle_ns;
	uint64_t seed;
	int track_only;
};

/* Send a NACK of len bytes to the sender. */
typedef void (*psb_mc_nack_fn)(void *arg, const uint8_t *buf, size_t len);

struct psb_mc_recv_stats {
	uint64_t pkts;
	uint64_t bad[PSB_MC_BAD_MAX];	/* refused by the parser, by reason */
	uint64_t forged;		/* another session, or a version described otherwise */
	uint64_t stale;			/* versions older than the newest one seen */
	uint64_t out_of_window;
	uint64_t oversize;		/* versions larger than max_version or the budget */
	uint64_t over_budget;		/* parity symbols not held: the budget was spent */
	uint64_t no_memory;		/* versions not started: no memory for them */
	uint64_t other;			/* NACKs heard */
	uint64_t ncfs;			/* repairs the sender announced */
	uint64_t data_pkts, parity_pkts, heartbeats;
	uint64_t dup_data, dup_parity;
	uint64_t parity_unused;		/* for groups already whole */
	uint64_t decoded_groups, recovered_segs;
	uint64_t started, completed, superseded, crc_fail;
	uint64_t late_joins;		/* versions joined mid-stream: no NACKs for them */
	uint64_t abandoned;		/* newest versions given up: silent while older ones came */
	uint64_t nacks, nack_entries, nacks_suppressed;
	uint64_t sessions;
	uint64_t held_bytes;		/* now */
	uint32_t latest;		/* the newest complete version, 0: none */
};

struct psb_mc_recv;

/* 0, or -EINVAL / -ENOMEM. */
int psb_mc_recv_create(const struct psb_mc_recv_cfg *cfg, psb_mc_nack_fn nack, void *arg,
		struct psb_mc_recv **out);
void psb_mc_recv_free(struct psb_mc_recv *r);

/*
 * One packet: checked, counted and used. Returns 1 when it completed a version (now the
 * latest), else 0.
 */
int psb_mc_recv_input(struct psb_mc_recv *r, const uint8_t *buf, size_t len, uint64_t now_ns);

/* NACKs that are due. */
void psb_mc_recv_poll(struct psb_mc_recv *r, uint64_t now_ns);

/* When psb_mc_recv_poll has something to do (UINT64_MAX: nothing until a packet comes). */
uint64_t psb_mc_recv_next_ns(const struct psb_mc_recv *r);

/*
 * The newest complete version: its bytes (valid until the next psb_mc_recv_input), v
 * filled; NULL when there is none (or with track_only, where v is filled all the same
 * when there is one).
 */
const uint8_t *psb_mc_recv_latest(const struct psb_mc_recv *r, struct psb_mc_ver *v);

/* The version being received: its vid and the segments it still misses (0 / 0: none). */
void psb_mc_recv_partial(const struct psb_mc_recv *r, uint32_t *vid, uint32_t *missing);

const struct psb_mc_recv_stats *psb_mc_recv_stats(const struct psb_mc_recv *r);

/* The session it follows, and whether it follows one yet (0: none). */
int psb_mc_recv_session(const struct psb_mc_recv *r, uint32_t *session);

#endif /* PSB_MC_RECV_H */
