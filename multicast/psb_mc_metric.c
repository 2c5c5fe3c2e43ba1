/* The multicast sender's and receiver's counters, described once (see psb_mc_metric.h). */
#include <stddef.h>

#include "psb_mc_metric.h"
#include "psb_text.h"

/*
 * name, kind, type, unit, Prometheus name after the block's prefix (NULL: the name), help.
 * The Prometheus names are those the appliance exported before the tables were shared.
 */
#define MC(st, f, k, t, u, pr, h) \
	{ .name = #f, .kind = PSB_METRIC_##k, .type = PSB_MT_##t, .unit = PSB_MU_##u, \
	  .off = offsetof(st, f), .prom = pr, .help = h }
#define MC_BAD(st, f, h) \
	{ .name = #f, .kind = PSB_METRIC_COUNTER, .type = PSB_MT_U64, .unit = PSB_MU_PACKETS, \
	  .off = offsetof(st, f), .n = PSB_MC_BAD_MAX, .first = 1, .label = "reason", \
	  .label_of = bad_name, .help = h }

static const char *
bad_name(unsigned int k)
{
	return psb_mc_bad_name((int)k);
}

#define SND(f, k, t, u, pr, h)	MC(struct psb_mc_send_stats, f, k, t, u, pr, h)

static const struct psb_metric send_figs[] = {
	SND(published, COUNTER, U64, NONE, NULL, "Versions handed to the sender"),
	SND(superseded, COUNTER, U64, NONE, NULL,
		"Versions replaced by a newer one before a byte of them was sent"),
	SND(sent_whole, COUNTER, U64, NONE, NULL, "Versions sent to their end"),
	SND(data_pkts, COUNTER, U64, PACKETS, "data", "Data segments sent"),
	SND(data_bytes, COUNTER, U64, BYTES, "data_bytes", "Their bytes of versions"),
	SND(proactive_pkts, COUNTER, U64, PACKETS, "proactive",
		"Parity symbols sent with every group, unasked"),
	SND(repair_parity_pkts, COUNTER, U64, PACKETS, "repair_parity",
		"Parity symbols sent for NACKs"),
	SND(repair_data_pkts, COUNTER, U64, PACKETS, "repair_data",
		"Data segments sent again for NACKs (parity off or spent)"),
	SND(repair_bytes, COUNTER, U64, BYTES, "repair_bytes", "Bytes of repairs"),
	SND(heartbeats, COUNTER, U64, PACKETS, NULL, "Heartbeats sent"),
	SND(ncfs, COUNTER, U64, PACKETS, NULL, "Repairs announced to all (NCF)"),
	SND(ncf_skipped, COUNTER, U64, PACKETS, NULL,
		"Repairs not announced: the repair budget was spent"),
	SND(repair_limited, COUNTER, U64, NONE, NULL,
		"Times a repair due waited for the repair budget (repair_bps)"),
	SND(nack_pkts, COUNTER, U64, PACKETS, "nack_rx",
		"Packets from receivers: NACKs taken, forged, superseded or malformed"),
	SND(nacks, COUNTER, U64, PACKETS, NULL, "NACKs taken"),
	SND(nack_superseded, COUNTER, U64, PACKETS, NULL,
		"NACKs of versions released or older: not repaired"),
	SND(nack_forged, COUNTER, U64, PACKETS, NULL,
		"NACKs of another session, or describing a version otherwise"),
	MC_BAD(struct psb_mc_send_stats, nack_bad,
		"Packets from receivers the parser refused, by reason"),
	SND(nack_entries, COUNTER, U64, NONE, NULL, "Losses the NACKs taken named (entries)"),
	SND(nack_premature, COUNTER, U64, NONE, NULL, "Entries for groups not sent yet"),
	SND(nack_over_budget, COUNTER, U64, NONE, NULL,
		"Entries their receiver could not pay for: ignored"),
	SND(nack_merged, COUNTER, U64, NONE, NULL,
		"Entries adding nothing to their group's open repair round"),
	SND(nack_raised, COUNTER, U64, NONE, NULL,
		"Entries adding to their group's open repair round"),
	SND(nack_opened, COUNTER, U64, NONE, NULL,
		"Entries opening a repair round for their group"),
	SND(nackers, GAUGE, U64, NONE, NULL, "Receivers tracked (by address and id)"),
	SND(nackers_evicted, COUNTER, U64, NONE, NULL,
		"Receivers forgotten to make room for others"),
	SND(hosts, GAUGE, U64, NONE, NULL, "Hosts (addresses) tracked"),
	SND(hosts_evicted, COUNTER, U64, NONE, NULL, "Hosts forgotten to make room for others"),
	SND(emit_busy, COUNTER, U64, NONE, NULL, "Packets that found the port full (sent later)"),
	SND(backoffs, COUNTER, U64, NONE, NULL, "Times adaptive pacing slowed down"),
	SND(rate_bps, GAUGE, U64, NONE, "rate_bps", "The sender's pace now, bit/s"),
	SND(repair_bps, GAUGE, U64, NONE, "repair_bps",
		"Repairs and NCFs take at most this, bit/s (repair_share of the rate)"),
	SND(receiver_bps, GAUGE, U64, NONE, "receiver_bps",
		"One receiver's NACKs may draw this much of it, bit/s (receiver_share)"),
	SND(host_bps, GAUGE, U64, NONE, "host_bps",
		"The receivers of one address together, bit/s (twice receiver_bps)"),
};

const struct psb_metric_block psb_mc_send_block =
	PSB_METRIC_BLOCK("sender", "", send_figs);

#define RCV(f, k, t, u, pr, h)	MC(struct psb_mc_recv_stats, f, k, t, u, pr, h)

static const struct psb_metric recv_figs[] = {
	RCV(pkts, COUNTER, U64, PACKETS, "rx",
		"Packets of the versions' protocol taken in, each counted once below"),
	MC_BAD(struct psb_mc_recv_stats, bad, "Refused by the parser, by reason"),
	RCV(other, COUNTER, U64, PACKETS, "other_nacks", "NACKs of other receivers heard"),
	RCV(forged, COUNTER, U64, PACKETS, NULL,
		"Of another session, or describing a version otherwise"),
	RCV(stale, COUNTER, U64, PACKETS, NULL,
		"Of versions older than the newest seen, or already held"),
	RCV(out_of_window, COUNTER, U64, PACKETS, NULL,
		"Of versions too far ahead of the newest known"),
	RCV(oversize, COUNTER, U64, PACKETS, NULL,
		"Of versions larger than the receiver's budget allows"),
	RCV(no_memory, COUNTER, U64, PACKETS, NULL,
		"Of versions that could not start: no memory"),
	RCV(data_pkts, COUNTER, U64, PACKETS, "data", "Data segments"),
	RCV(parity_pkts, COUNTER, U64, PACKETS, "parity", "Parity symbols"),
	RCV(heartbeats, COUNTER, U64, PACKETS, NULL, "Heartbeats"),
	RCV(ncfs, COUNTER, U64, PACKETS, NULL, "Repairs the sender announced (NCF)"),
	RCV(dup_data, COUNTER, U64, PACKETS, NULL, "Data segments held already"),
	RCV(dup_parity, COUNTER, U64, PACKETS, NULL, "Parity symbols held already"),
	RCV(parity_unused, COUNTER, U64, PACKETS, NULL, "Parity symbols for groups already whole"),
	RCV(over_budget, COUNTER, U64, PACKETS, NULL,
		"Parity symbols not held: the budget was spent"),
	RCV(decoded_groups, COUNTER, U64, NONE, NULL, "Groups repaired by parity"),
	RCV(recovered_segs, COUNTER, U64, NONE, "recovered_segments",
		"Segments recovered from parity"),
	RCV(started, COUNTER, U64, NONE, NULL, "Versions begun"),
	RCV(completed, COUNTER, U64, NONE, NULL, "Versions received whole and checked"),
	RCV(superseded, COUNTER, U64, NONE, NULL, "Versions given up for a newer one"),
	RCV(crc_fail, COUNTER, U64, NONE, NULL, "Versions whose checksum failed"),
	RCV(late_joins, COUNTER, U64, NONE, NULL, "Versions joined mid-stream (no NACKs for them)"),
	RCV(abandoned, COUNTER, U64, NONE, NULL,
		"Newest versions given up: silent while older ones came"),
	RCV(nacks, COUNTER, U64, PACKETS, NULL, "NACKs sent"),
	RCV(nack_entries, COUNTER, U64, NONE, NULL, "Losses those NACKs named"),
	RCV(nacks_suppressed, COUNTER, U64, NONE, NULL, "NACKs not sent: the repairs were coming"),
	RCV(sessions, COUNTER, U64, NONE, NULL, "Sender sessions followed"),
	RCV(held_bytes, GAUGE, U64, BYTES, "held", "Bytes the receiver holds now"),
	RCV(latest, GAUGE, U32, NONE, NULL, "The newest version held whole"),
};

const struct psb_metric_block psb_mc_recv_block =
	PSB_METRIC_BLOCK("receiver", "", recv_figs);

#define NKR(f, k, t, u, h)	MC(struct psb_mc_nacker, f, k, t, u, NULL, h)

static const struct psb_metric nacker_figs[] = {
	NKR(addr, GAUGE, IPV4, NONE, "Where its NACKs come from"),
	NKR(ids, GAUGE, U32, NONE, "Receiver ids tracked from that address"),
	NKR(id, GAUGE, U32, NONE, "The one of them that sent the most NACKs"),
	NKR(nacks, COUNTER, U64, PACKETS, "Their NACKs taken"),
	NKR(entries, COUNTER, U64, NONE, "Losses those NACKs named"),
	NKR(over_budget, COUNTER, U64, NONE, "Entries ignored: over their receiver's budget"),
	NKR(repair_bytes, COUNTER, U64, BYTES, "What their entries added to repairs"),
};

const struct psb_metric_block psb_mc_nacker_block =
	PSB_METRIC_BLOCK("nacker", "", nacker_figs);

json_t *
psb_mc_metric_json(const struct psb_metric_block *b, const void *base)
{
	struct psb_emit e;

	psb_emit_tree(&e);
	psb_emit_open(&e, NULL);
	psb_metric_emit(&e, b, base, 1);
	return psb_emit_done(&e);
}

json_t *
psb_mc_nackers_json(struct psb_mc_send *s, unsigned int n)
{
	struct psb_mc_nacker top[16];
	json_t *a = json_array();
	unsigned int i, k;

	k = psb_mc_send_nackers(s, top, n < 16 ? n : 16);
	for (i = 0; a != NULL && i < k; i++)
		json_array_append_new(a, psb_mc_metric_json(&psb_mc_nacker_block, &top[i]));
	return a;
}
