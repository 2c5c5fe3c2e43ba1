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
 * off or spent, the union of the missing segments again.
 *
 * Pacing: a token bucket of burst_bytes at rate_bps, counting each packet's Ethernet, IPv4
 * and UDP headers. With adaptive on, the rate backs off by a quarter when an interval's
 * repairs exceed 2 % of its data, and climbs back by rate_bps / 32 per quiet interval.
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
};

/*
 * Send one packet: hdr (hlen bytes) then payload (plen bytes, may be 0). 0 when it went,
 * -EAGAIN when there is no room now (the same packet is offered again later).
 */
typedef int (*psb_mc_emit_fn)(void *arg, const uint8_t *hdr, unsigned int hlen,
		const uint8_t *payload, unsigned int plen);
/* A version's bytes are the caller's again. */
typedef void (*psb_mc_release_fn)(void *arg, uint32_t vid, const void *data);

struct psb_mc_send_stats {
	uint64_t published;
	uint64_t superseded;		/* published, replaced before a byte was sent */
	uint64_t sent_whole;		/* versions sent to the end (data and proactive parity) */
	uint64_t data_pkts, data_bytes;
	uint64_t proactive_pkts;
	uint64_t repair_parity_pkts, repair_data_pkts, repair_bytes;
	uint64_t heartbeats;
	uint64_t ncfs;			/* repairs announced */
	uint64_t nacks, nack_entries;
	uint64_t nack_merged;		/* entries merged into a repair already waiting */
	uint64_t nack_superseded;	/* for a version released or unknown and older */
	uint64_t nack_premature;	/* entries for groups not sent yet */
	uint64_t nack_forged;		/* another session, or a version described otherwise */
	uint64_t nack_bad[PSB_MC_BAD_MAX];
	uint64_t emit_busy;
	uint64_t backoffs, rate_bps;
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

/* A packet from a receiver (a NACK): checked, counted, merged into the repairs due. */
void psb_mc_send_input(struct psb_mc_send *s, const uint8_t *buf, size_t len, uint64_t now_ns);

/* Send what is due now, max_pkts packets at most; returns how many were sent. */
unsigned int psb_mc_send_poll(struct psb_mc_send *s, uint64_t now_ns, unsigned int max_pkts);

/* When psb_mc_send_poll has something to do next (now_ns or earlier: at once). */
uint64_t psb_mc_send_next_ns(const struct psb_mc_send *s, uint64_t now_ns);

/* 1 while a version waits to be sent or is being sent, or repairs wait. */
int psb_mc_send_busy(const struct psb_mc_send *s);

const struct psb_mc_send_stats *psb_mc_send_stats(const struct psb_mc_send *s);

#endif /* PSB_MC_SEND_H */
