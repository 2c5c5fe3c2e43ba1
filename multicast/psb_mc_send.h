/*
 * The sending side of psb's reliable multicast: versions in, paced packets out, NACKs in.
 * EAL-free: the caller gives the time and an emit callback, and feeds it the NACKs that
 * arrive (psb_mc_send_input); psb_mc_send_poll sends what is due.
 *
 * Latest-value semantics. The sender holds at most three versions: the one it repairs
 * (prev: sent whole, still repaired while the next one streams), the one it streams (cur),
 * and the newest one published since (next). A version published while another waits
 * replaces it unsent: nobody needs a superseded version. Once cur is sent whole, prev is
 * released and its NACKs are ignored: every receiver is better served by cur. Versions are
 * not copied: the caller keeps each one's bytes until the release callback returns them.
 *
 * Repairs. NACKs say, per group, which data segments a receiver misses and how many more
 * symbols it needs. A NACK that asks for more than is already coming is announced to all
 * at once (NCF): receivers missing no more than that ask nothing. NACKs for a group are
 * merged for nack_hold_ns, then the group gets as many new parity symbols as the neediest
 * receiver asked for (each one repairs a different loss at each receiver), or, with parity
 * off or spent, the union of the missing segments again. That is a group's repair round: a
 * receiver asking again for a group whose round is open adds nothing (merged), so one round
 * sends a group's symbols once, however many receivers ask and however often.
 *
 * What a NACK can make the sender send is bounded, so that no receiver, hostile or broken,
 * can hold back the others (latest-value semantics):
 *   - repairs and NCFs together take at most repair_pct of the rate (a token bucket of
 *     their own, besides the pacing one); what waits for it is counted (repair_limited);
 *   - the version streaming goes before repairs of the one before it: a newer version
 *     supersedes an older one, so repairing the older one never delays it;
 *   - each receiver, known by the address its NACKs come from and the id they carry, may
 *     draw receiver_pct of that repair budget, and the receivers of one address together
 *     twice that (so that a receiver changing its id gains nothing): the symbols an entry
 *     adds to a round are charged to its receiver and its host when the NACK comes, and an
 *     entry either cannot pay for is ignored and counted (nack_over_budget). `receivers` of
 *     each are tracked, in sets of 8 by a hash, the one heard from longest ago in a full set
 *     making room (nackers_evicted, hosts_evicted); the busiest hosts are named by
 *     psb_mc_send_nackers.
 * A NACK that arrives is counted once: nack_pkts = nacks + nack_forged + nack_superseded +
 * the nack_bad reasons; and each entry of a NACK taken once: nack_entries = nack_premature +
 * nack_over_budget + nack_merged + nack_raised + nack_opened.
 *
 * Pacing: a token bucket of burst_bytes at rate_bps, counting each packet's Ethernet, IPv4
 * and UDP headers. With adaptive on, the rate backs off by a quarter when an interval's
 * repairs exceed 2 % of its data, and climbs back by rate_bps / 32 per quiet interval; only
 * what receivers could pay for counts there.
 */
#ifndef PSB_MC_SEND_H
#define PSB_MC_SEND_H

#include <stdint.h>

#include "psb_mc_fec.h"
#include "psb_mc_proto.h"

#define PSB_MC_WIRE_OVERHEAD	42	/* Ethernet, IPv4, UDP: what pacing counts besides */

struct psb_mc_send_cfg {
	uint32_t session;
	uint16_t seg_size;		/* data bytes per packet */
	uint16_t group;			/* data segments per parity group (k), 1..64 */
	uint16_t parity;		/* parity symbols per group at most (0: repair by resending) */
	uint16_t proactive;		/* parity symbols sent with every group, unasked */
	uint64_t rate_bps;		/* 0: as fast as emit takes them */
	uint64_t min_rate_bps;		/* adaptive: not below */
	int adaptive;
	uint64_t burst_bytes;		/* 0: 16 full packets */
	uint64_t heartbeat_ns;
	uint64_t nack_hold_ns;
	uint64_t adapt_ns;		/* adaptive: the interval judged */
	uint16_t repair_pct;		/* share of the rate repairs and NCFs may take, % (0: 25) */
	uint16_t receiver_pct;		/* share of that one receiver may draw, % (0: 25) */
	uint32_t receivers;		/* NACKing receivers tracked (0: 256; up to 4096) */
};

#define PSB_MC_REPAIR_PCT	25
#define PSB_MC_RECEIVER_PCT	25
#define PSB_MC_RECEIVERS	256
#define PSB_MC_RECEIVERS_MAX	4096
/* An unpaced sender (rate_bps 0) takes repair_pct of this for its repairs. */
#define PSB_MC_UNPACED_BPS	10000000000ull

/*
 * Send one packet: hdr (hlen bytes) then payload (plen bytes, may be 0). 0 when it went,
 * -EAGAIN when there is no room now (the same packet is offered again later).
 */
typedef int (*psb_mc_emit_fn)(void *arg, const uint8_t *hdr, unsigned int hlen,
		const uint8_t *payload, unsigned int plen);
/* A version's bytes are the caller's again. */
typedef void (*psb_mc_release_fn)(void *arg, uint32_t vid, const void *data);

/* A sender's counters; every field a uint64_t. */
struct psb_mc_send_stats {
	uint64_t published;
	uint64_t superseded;		/* published, replaced before a byte was sent */
	uint64_t sent_whole;		/* versions sent to the end (data and proactive parity) */
	uint64_t data_pkts, data_bytes;
	uint64_t proactive_pkts;
	uint64_t repair_parity_pkts, repair_data_pkts, repair_bytes;
	uint64_t heartbeats;
	uint64_t ncfs;			/* repairs announced */
	uint64_t ncf_skipped;		/* not announced: the repair budget was spent */
	uint64_t repair_limited;	/* times a repair due waited for the repair budget */
	uint64_t nack_pkts;		/* packets handed to psb_mc_send_input */
	uint64_t nacks;			/* NACKs taken */
	uint64_t nack_superseded;	/* for a version released or unknown and older */
	uint64_t nack_forged;		/* another session, or a version described otherwise */
	uint64_t nack_bad[PSB_MC_BAD_MAX];	/* refused by the parser, by reason */
	uint64_t nack_entries;		/* entries of the NACKs taken */
	uint64_t nack_premature;	/* entries for groups not sent yet */
	uint64_t nack_over_budget;	/* entries their receiver could not pay for: ignored */
	uint64_t nack_merged;		/* entries adding nothing to their group's open round */
	uint64_t nack_raised;		/* entries adding to their group's open round */
	uint64_t nack_opened;		/* entries opening a repair round for their group */
	uint64_t nackers;		/* receivers tracked now */
	uint64_t nackers_evicted;	/* receivers forgotten to make room for others */
	uint64_t hosts;			/* hosts (addresses) tracked now */
	uint64_t hosts_evicted;		/* hosts forgotten to make room for others */
	uint64_t emit_busy;
	uint64_t backoffs, rate_bps;
	uint64_t repair_bps;		/* the repair budget */
	uint64_t receiver_bps;		/* one receiver's share of it */
	uint64_t host_bps;		/* the receivers of one address together */
};

/* A host as the sender knows it from its NACKs: the receivers tracked at one address. */
struct psb_mc_nacker {
	uint32_t addr;			/* where its NACKs come from (IPv4, host order) */
	uint32_t ids;			/* receiver ids tracked from it */
	uint32_t id;			/* the one of them that sent the most NACKs */
	uint64_t nacks;			/* their NACKs taken */
	uint64_t entries;
	uint64_t over_budget;		/* their entries ignored: over budget */
	uint64_t repair_bytes;		/* what their entries added to repairs (charged) */
};

struct psb_mc_send;

/* 0, or -EINVAL (a field out of range) / -ENOMEM. */
int psb_mc_send_create(const struct psb_mc_send_cfg *cfg, psb_mc_emit_fn emit,
		psb_mc_release_fn release, void *arg, struct psb_mc_send **out);
/* Releases every version it holds. */
void psb_mc_send_free(struct psb_mc_send *s);

/*
 * Publish version vid (newer than every one before) of len bytes at data, whose CRC32C
 * (psb_mc_crc) is crc. 0, or -EINVAL (too large, or not newer), -ENOMEM.
 */
int psb_mc_send_publish(struct psb_mc_send *s, uint32_t vid, const void *data, uint64_t len,
		uint32_t crc, uint64_t now_ns);

/*
 * A packet from a receiver (a NACK) that came from addr (IPv4, host order; a caller with no
 * addresses names its receivers' sources otherwise): checked, counted, charged to its
 * receiver and merged into the repairs due.
 */
void psb_mc_send_input(struct psb_mc_send *s, const uint8_t *buf, size_t len, uint32_t addr,
		uint64_t now_ns);

/* Send what is due now, max_pkts packets at most; returns how many were sent. */
unsigned int psb_mc_send_poll(struct psb_mc_send *s, uint64_t now_ns, unsigned int max_pkts);

/* When psb_mc_send_poll has something to do next (now_ns or earlier: at once). */
uint64_t psb_mc_send_next_ns(const struct psb_mc_send *s, uint64_t now_ns);

/* 1 while a version waits to be sent or is being sent, or repairs wait. */
int psb_mc_send_busy(const struct psb_mc_send *s);

/*
 * 1 while a version waits to be sent or is being sent. Once 0, every version published was
 * sent whole (or superseded); repairs may still come, for as long as the caller serves them.
 */
int psb_mc_send_streaming(const struct psb_mc_send *s);

/*
 * The busiest hosts (most NACKs taken first, the receivers tracked at each address summed:
 * a receiver that changes its id to escape its budget shows as one host of many ids), n at
 * most: how many were written.
 */
unsigned int psb_mc_send_nackers(struct psb_mc_send *s, struct psb_mc_nacker *out,
		unsigned int n);

const struct psb_mc_send_stats *psb_mc_send_stats(const struct psb_mc_send *s);

/* Several senders' figures as one: counts summed, rates the largest of them. */
void psb_mc_send_stats_add(struct psb_mc_send_stats *dst, const struct psb_mc_send_stats *src);

/*
 * Host c (psb_mc_send_nackers' kind) into top, the *k busiest of at most n, busiest first:
 * summed with the entry of its address if there is one.
 */
void psb_mc_nackers_add(struct psb_mc_nacker *top, unsigned int *k, unsigned int n,
		const struct psb_mc_nacker *c);

#endif /* PSB_MC_SEND_H */
