/* Counters of the whole process as one JSON object, for every export. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_ethdev.h>

#include "psb_app.h"
#include "psb_counters.h"
#include "psb_roce_json.h"
#include "psb_bench.h"
#include "psb_cli.h"
#include "psb_conf.h"
#include "psb_mc_metric.h"
#include "psb_ctl.h"
#include "psb_report.h"
#include "psb_text.h"

/*
 * Extended statistics of a port: their names stay as long as the port's configuration,
 * so they are fetched once, not at every scrape. Under ctl_lock, as every reader is.
 */
static struct xstats_cache {
	uint16_t pid;
	unsigned int n, cap;
	struct rte_eth_xstat_name *names;
	struct rte_eth_xstat *vals;
} xs_cache[PSB_MAX_PORTS];

/* The line of psb_counters_append, kept: the main lcore writes one every few 100 ms. */
static struct psb_text file_line;

static int
xstats_read(struct xstats_cache *xc, uint16_t pid)
{
	int n, tries;

	if (xc->pid != pid) {
		xc->n = 0;
		xc->pid = pid;
	}
	for (tries = 0; tries < 2; tries++) {
		n = xc->cap != 0 ? rte_eth_xstats_get(pid, xc->vals, xc->cap) :
			rte_eth_xstats_get(pid, NULL, 0);
		if (n < 0)
			return n;
		if (n != 0 && (unsigned int)n == xc->n)
			return n;
		/* first read, or the set changed (NICs have hundreds): names anew */
		if ((unsigned int)n > xc->cap) {
			free(xc->names);
			free(xc->vals);
			xc->names = calloc((size_t)n, sizeof(*xc->names));
			xc->vals = calloc((size_t)n, sizeof(*xc->vals));
			xc->cap = xc->names != NULL && xc->vals != NULL ? (unsigned int)n : 0;
			if (xc->cap == 0)
				return -ENOMEM;
		}
		xc->n = 0;
		if (n == 0 || rte_eth_xstats_get_names(pid, xc->names, xc->cap) != n)
			return 0;
		xc->n = (unsigned int)n;
	}
	return 0;
}

int
psb_port_xstats(struct psb_app *app, unsigned int i, const struct rte_eth_xstat_name **names,
		const struct rte_eth_xstat **vals)
{
	struct xstats_cache *xc = &xs_cache[i];
	int n = xstats_read(xc, app->port_ids[i]);

	*names = xc->names;
	*vals = xc->vals;
	return n;
}

void
psb_counters_fini(void)
{
	unsigned int i;

	for (i = 0; i < RTE_DIM(xs_cache); i++) {
		free(xs_cache[i].names);
		free(xs_cache[i].vals);
		memset(&xs_cache[i], 0, sizeof(xs_cache[i]));
	}
	free(file_line.s);
	memset(&file_line, 0, sizeof(file_line));
}

/*
 * The tables. A line says: the figure's name in JSON and telemetry, its kind, how it is
 * stored, its unit, where it is, and its Prometheus name when that is not the JSON name
 * with the unit's suffix (and _total for counters); "" keeps it out of Prometheus, where it
 * is a label. Exports show the figures in the tables' order.
 */
#define FIG(st, f, k, t, u, pr, h) \
	{ .name = #f, .kind = PSB_METRIC_##k, .type = PSB_MT_##t, .unit = PSB_MU_##u, \
	  .off = offsetof(st, f), .prom = pr, .help = h }
#define FIG_AT(st, nm, f, k, t, u, pr, h) \
	{ .name = nm, .kind = PSB_METRIC_##k, .type = PSB_MT_##t, .unit = PSB_MU_##u, \
	  .off = offsetof(st, f), .prom = pr, .help = h }
#define FIG_BY(st, nm, f, nn, first_, lbl, fn, h) \
	{ .name = nm, .kind = PSB_METRIC_COUNTER, .type = PSB_MT_U64, .unit = PSB_MU_NONE, \
	  .off = offsetof(st, f), .n = nn, .first = first_, .label = lbl, .label_of = fn, \
	  .help = h }

static const char *
drop_name(unsigned int k)
{
	return psb_drop_names[k];
}

static const char *
status_name(unsigned int k)
{
	return psb_status_name((uint8_t)k);
}

const char *
psb_store_discard_label(unsigned int k)
{
	return psb_kv_discard_names[k];
}

const char *
psb_store_resend_label(unsigned int k)
{
	return psb_kv_resend_names[k];
}

const char *
psb_store_budget_label(unsigned int k)
{
	const char *n = psb_budget_name(k);

	return n != NULL ? n + strlen("store.") : "allocation";
}

#define ROLE(f, k, t, u, pr, h)	FIG(struct psb_role_snap, f, k, t, u, pr, h)

static const struct psb_metric role_figs[] = {
	FIG_AT(struct psb_role_snap, "rx_pkts", c.rx_pkts, COUNTER, U64, PACKETS, "rx",
		"Packets the role instance received"),
	FIG_AT(struct psb_role_snap, "rx_bytes", c.rx_bytes, COUNTER, U64, BYTES, NULL,
		"Bytes the role instance received"),
	FIG_AT(struct psb_role_snap, "tx_pkts", c.tx_pkts, COUNTER, U64, PACKETS, "tx",
		"Packets the role instance sent"),
	FIG_AT(struct psb_role_snap, "tx_bytes", c.tx_bytes, COUNTER, U64, BYTES, NULL,
		"Bytes the role instance sent"),
	{ .name = "drops", .kind = PSB_METRIC_COUNTER, .type = PSB_MT_U64,
	  .off = offsetof(struct psb_role_snap, c.drops), .n = PSB_DROP_MAX, .first = 1,
	  .label = "reason", .label_of = drop_name,
	  .help = "Frames the role instance dropped, by reason" },
#define RC(f, u, h) FIG_AT(struct psb_role_snap, #f, c.f, COUNTER, U64, u, NULL, h)
	RC(handed, NONE, "Received messages handed to the role serving them"),
	RC(not_served, NONE, "Valid psb frames for a role this node does not run"),
	RC(ring_full, NONE, "Received messages lost: the serving role's ring was full"),
	RC(to_host, NONE, "Frames not psb's handed to the passthrough role, for the host's "
		"kernel"),
	RC(no_mbuf, NONE, "Packets not built: mbuf pool empty"),
	RC(tx_ring_full, NONE, "Packets built to send, lost: the transmit ring was full"),
	RC(tx_backlog, NONE, "Packets the port did not take at once"),
	RC(paused_drops, NONE, "Packets dropped for a paused port"),
	RC(full_drops, NONE, "Packets dropped: a shared-memory client's ring was full (it "
		"resends)"),
	RC(byes, NONE, "BYEs accepted: from a known peer to the data port"),
	RC(bye_ignored, NONE, "BYEs ignored: unknown source, or not to the data port"),
	RC(bye_lost, NONE, "Accepted BYEs a server shard could not be told of"),
	RC(arp_replies, NONE, "ARP replies sent"),
	RC(arp_learned, NONE, "ARP replies received (sender learnt, nothing sent)"),
	RC(icmp_replies, NONE, "ICMP echo replies sent"),
	RC(refused, NONE, "Requests the role would not serve: out of its bounds (echo: longer "
		"than 1 KiB, several segments, a source that takes no answer)"),
	RC(rate_limited, NONE, "Requests the role dropped: its rate budget was spent (echo: "
		"1000 answers a second)"),
	RC(busy_cycles, CYCLES, "TSC cycles of polls that found work"),
	RC(idle_cycles, CYCLES, "TSC cycles of polls that found nothing"),
	RC(polls, NONE, "Polls of the role instance"),
#undef RC
	ROLE(lcore, GAUGE, U64, NONE, "", "Lcore running the role instance"),
	ROLE(busy_pct, GAUGE, DBL, PCT, "busy", "Busy share of the role's cycles since start"),
};

#define PORT(f, k, u, pr, h)	FIG(struct psb_port_snap, f, k, U64, u, pr, h)

static const struct psb_metric port_figs[] = {
	PORT(ipackets, COUNTER, PACKETS, "rx", "Packets received by the port"),
	PORT(opackets, COUNTER, PACKETS, "tx", "Packets sent by the port"),
	PORT(ibytes, COUNTER, BYTES, "rx", "Bytes received by the port"),
	PORT(obytes, COUNTER, BYTES, "tx", "Bytes sent by the port"),
	PORT(imissed, COUNTER, PACKETS, "rx_missed",
		"Packets the port dropped: no room in its queues"),
	PORT(ierrors, COUNTER, NONE, "rx_errors", "Erroneous packets received by the port"),
	PORT(oerrors, COUNTER, NONE, "tx_errors", "Packets the port failed to send"),
	PORT(rx_nombuf, COUNTER, NONE, NULL, "Receive failures for want of mbufs"),
	PORT(bye_pauses, COUNTER, NONE, NULL, "BYEs of a known peer that paused the port (memif)"),
	PORT(bye_pause_expiries, COUNTER, NONE, NULL,
		"BYE pauses ended by time: the link stayed up, the peer did not leave"),
	PORT(faults, COUNTER, NONE, NULL,
		"Bursts that faulted on memory a leaving memif peer shared: port paused, not psb"),
	{ .name = "kernel_packets", .kind = PSB_METRIC_COUNTER, .type = PSB_MT_U64,
	  .unit = PSB_MU_PACKETS, .off = offsetof(struct psb_port_snap, kernel_packets),
	  .cond = offsetof(struct psb_port_snap, afp) + 1,
	  .help = "af_packet: frames the kernel passed to psb's socket, dropped ones included" },
	{ .name = "kernel_drops", .kind = PSB_METRIC_COUNTER, .type = PSB_MT_U64,
	  .off = offsetof(struct psb_port_snap, kernel_drops),
	  .cond = offsetof(struct psb_port_snap, afp) + 1,
	  .help = "af_packet: frames the kernel dropped, psb's socket ring being full" },
	FIG(struct psb_port_snap, paused, GAUGE, BOOL, BOOL, NULL,
		"1 while psb does not poll the port (link down, peer left)"),
};

static const struct psb_metric node_figs[] = {
	FIG(struct psb_node_snap, uptime_s, GAUGE, DBL, S, "uptime", "Time since psb started"),
	FIG(struct psb_node_snap, lcores, GAUGE, U64, NONE, NULL, "Lcores running roles"),
	FIG(struct psb_node_snap, roles, GAUGE, U64, NONE, NULL, "Role instances"),
};

#define ST(nm, f, k, u, pr, h) FIG_AT(struct psb_store_snap, nm, f, k, U64, u, pr, h)
#define STC(f, h) ST(#f, st.f, COUNTER, NONE, NULL, h)
#define LIM(f, t, u, pr, h) FIG(struct psb_store_limits_snap, f, GAUGE, t, u, pr, h)

static const struct psb_metric store_limit_figs[] = {
	LIM(max_bytes, U64, BYTES, NULL, "The store's budget in effect: store.max_bytes"),
	LIM(max_keys, U64, NONE, NULL, "The store's budget in effect: store.max_keys"),
	LIM(reasm_bytes, U64, BYTES, NULL, "The store's budget in effect: store.reasm_bytes"),
	LIM(reasm_sender_bytes, U64, BYTES, NULL,
		"The store's budget in effect: store.reasm_sender_bytes"),
	LIM(reasm_timeout_s, DBL, S, "reasm_timeout",
		"The store's budget in effect: store.reasm_timeout"),
	LIM(hold_max, U64, NONE, NULL, "The store's budget in effect: store.hold_max"),
	LIM(resend_burst, U64, BYTES, NULL,
		"The store's budget in effect: store.resend_burst, per sender and shard"),
	LIM(resend_rate_gbps, DBL, GBPS, "resend_rate",
		"The store's budget in effect: store.resend_rate, per sender and shard"),
};

static const struct psb_metric_block store_limit_block =
	PSB_METRIC_BLOCK("limits", "psb_store_limit", store_limit_figs);

static const struct psb_metric store_figs[] = {
	ST("keys", keys, GAUGE, NONE, NULL, "Keys in the parameter store"),
	ST("bytes", bytes, GAUGE, BYTES, NULL, "Value bytes in the parameter store"),
	ST("push", st.req[PSB_MSG_PUSH], COUNTER, NONE, NULL, "PUSH requests served"),
	ST("pull", st.req[PSB_MSG_PULL], COUNTER, NONE, NULL, "PULL requests served"),
	ST("pushpull", st.req[PSB_MSG_PUSHPULL], COUNTER, NONE, NULL, "PUSHPULL requests served"),
	STC(rounds_closed, "Synchronous rounds closed (every worker pushed)"),
	ST("bytes_summed", st.bytes_summed, COUNTER, BYTES, "summed",
		"Value bytes added into the store"),
	STC(dup_segs, "Duplicate segments ignored"),
	STC(retries_answered, "Resent requests answered again"),
	STC(stale, "Requests for a round already closed"),
	FIG_BY(struct psb_store_snap, "errors", st.errors, PSB_ST_MAX, 1, "status", status_name,
		"Error replies of the store, by status"),
	ST("bytes_sent", st.bytes_sent, COUNTER, BYTES, "sent",
		"Value bytes sent back to workers"),
	STC(batches, "BATCH messages served"),
	STC(bad_records, "Malformed records in BATCH messages"),
	STC(repairs, "REPAIR messages: a worker's request timed out"),
	STC(repair_segs, "Answer segments sent again for REPAIR messages"),
	STC(nacks, "REPAIR_RESP messages: push segments asked for again"),
	STC(early_nacks, "REPAIR_RESP messages sent unasked: a push's last segment came after gaps"),
	STC(tail_nacks, "REPAIR_RESP messages sent unasked: a push's segments stopped coming with "
	    "some missing"),
	STC(repair_bad, "REPAIR messages that made no sense"),
	STC(values_copied, "Pushes added into a copy of the value because answers still read it"),
	ST("mem", mem, GAUGE, BYTES, NULL, "Memory of the store counted against store.max_bytes"),
	ST("staged", staged, GAUGE, NONE, NULL,
		"Pushes being reassembled (nothing of them applied yet)"),
	ST("staged_bytes", staged_bytes, GAUGE, BYTES, NULL,
		"Reassembly budget the staged pushes hold (announced bytes and bookkeeping)"),
	ST("held", held, GAUGE, NONE, NULL, "Packet buffers kept by staged pushes"),
	STC(segs_held, "Segments kept by reference until their push was whole"),
	STC(segs_copied, "Segments copied to be kept until their push was whole"),
	FIG_BY(struct psb_store_snap, "discarded", st.discarded, PSB_KV_DISCARD_MAX, 0, "reason",
		psb_store_discard_label,
		"Unfinished pushes discarded without applying any of them, by reason"),
	ST("discarded_bytes", st.discarded_bytes, COUNTER, BYTES, NULL,
		"Value bytes the discarded pushes had delivered"),
	FIG_BY(struct psb_store_snap, "refused", st.refused, PSB_BUDGET_MAX, 0, "budget", psb_store_budget_label,
		"Requests refused by a budget of the store, by budget"),
	STC(budget_drops, "Segments dropped while their push was refused"),
	ST("resend_bytes", st.resend_bytes, COUNTER, BYTES, NULL,
		"Bytes sent again without a new request (answers to repeats and REPAIRs, "
		"REPAIR_RESPs; frames' bytes), within the senders' resend budgets"),
	FIG_BY(struct psb_store_snap, "resend_over_budget", st.resend_over_budget,
		PSB_KV_RESEND_MAX, 0, "reason", psb_store_resend_label,
		"Resends not sent: their sender's resend budget (store.resend_burst, "
		"store.resend_rate) was spent; by what they were"),
	ST("resend_over_budget_bytes", st.resend_over_budget_bytes, COUNTER, BYTES, NULL,
		"Bytes the resends not sent would have taken"),
	{ .name = "limits", .kind = PSB_METRIC_GROUP, .type = PSB_MT_BLOCK,
	  .off = offsetof(struct psb_store_snap, limits), .prom = "limit",
	  .help = "The store's budgets in effect", .sub = &store_limit_block },
};

#define SCH(f, h) FIG(struct psb_sched_stats, f, COUNTER, U64, NONE, NULL, h)

static const struct psb_metric sched_figs[] = {
	SCH(registered, "Nodes that took a rank with the scheduler"),
	SCH(reregistered, "REGISTERs repeated by a node with a rank"),
	SCH(rejected, "REGISTERs and BARRIERs refused: no place, unknown node or wrong barrier"),
	SCH(barriers_released, "Barriers released"),
	SCH(workers_finished, "Workers that said they finished (FINALIZE)"),
	SCH(servers_ended, "Servers that acknowledged the end of the job"),
	SCH(heartbeats, "HEARTBEATs from nodes of the job"),
	SCH(servers_dead, "Servers held dead: no word from them for --dead-after"),
	SCH(workers_dead, "Workers held dead: no word from them for --dead-after (each time)"),
	SCH(servers_restarted, "Servers that registered again from a new process: their state "
		"is lost"),
};

static const char *
idle_wake_label(unsigned int k)
{
	return psb_idle_wake_names[k];
}

static const char *
idle_late_label(unsigned int k)
{
	return psb_idle_late_names[k];
}

#define IDL(nm, f, k, t, u, pr, h)	FIG_AT(struct psb_idle_snap, nm, f, k, t, u, pr, h)

static const struct psb_metric idle_figs[] = {
	IDL("sleeping", sleeping, GAUGE, BOOL, BOOL, NULL,
		"1 while idle lcores back off to sleeping (node.idle sleep, or auto on shared "
		"CPUs)"),
	IDL("sleeps", st.sleeps, COUNTER, U64, NONE, NULL, "Sleeps of idle lcores"),
	IDL("slept_ns", st.slept_ns, COUNTER, U64, NS, "slept", "Time idle lcores slept"),
	FIG_BY(struct psb_idle_snap, "wakes", st.wakes, PSB_IDLE_WAKES, 0, "cause",
		idle_wake_label, "Sleeps by how they ended: their time was up, a port's queue had "
		"a frame, another lcore of the process handed work"),
	IDL("late_mean_us", late_mean_us, GAUGE, DBL, US, "late_mean",
		"Sleeps that ran their time: how late they returned, on average"),
	IDL("late_max_us", late_max_us, GAUGE, DBL, US, "late_max",
		"Sleeps that ran their time: how late the latest returned"),
	FIG_BY(struct psb_idle_snap, "late", st.late, PSB_IDLE_LATE_BUCKETS, 0, "within",
		idle_late_label, "Sleeps that ran their time, by how late they returned (at most "
		"5us, 10us, ... 500us, more)"),
};

static const struct psb_metric_block idle_block =
	PSB_METRIC_BLOCK("idle", "psb_control_idle", idle_figs);

/*
 * What the control plane cost: the main lcore's share is main_cycles / tsc_hz per second of
 * uptime, the telemetry threads' telemetry_cpu_ns / 1e9; yield_cycles is the time lcores
 * left their CPU to other threads. Then the limits clients hit (CONTROL.md, Limits).
 */
#define CTL(f, k, u, pr, h)	FIG(struct psb_control_snap, f, k, U64, u, pr, h)
#define LIMIT(f, h)		FIG_AT(struct psb_control_snap, #f, cp.f, COUNTER, U64, NONE, \
					NULL, h)

static const struct psb_metric control_figs[] = {
	CTL(main_cycles, COUNTER, CYCLES, NULL, "TSC cycles the main lcore spent on control work"),
	CTL(telemetry_cpu_ns, COUNTER, NS, "telemetry_cpu", "CPU time of psb's telemetry callbacks"),
	CTL(tsc_hz, GAUGE, HZ, "tsc", "TSC cycles per second"),
	CTL(socket_requests, COUNTER, NONE, NULL, "Control-socket requests served"),
	CTL(telemetry_requests, COUNTER, NONE, NULL, "Telemetry requests served"),
	CTL(prometheus_requests, COUNTER, NONE, NULL, "Prometheus pages served"),
	CTL(file_lines, COUNTER, NONE, NULL, "Counters-file lines written"),
	CTL(yields, COUNTER, NONE, NULL, "Times polling lcores gave their CPU away (--yield)"),
	CTL(yield_cycles, COUNTER, CYCLES, NULL, "TSC cycles the yields took"),
	LIMIT(throttled_passes, "Passes that served no client: their share of the main lcore "
		"was used"),
	LIMIT(socket_deferred, "Passes that left control requests to the next: per-pass budget "
		"spent"),
	LIMIT(socket_busy, "Control connections refused: node.ctl_clients reached"),
	LIMIT(socket_too_large, "Control clients dropped: a request line over 64 KiB"),
	LIMIT(socket_overflows, "Control clients dropped: replies not read over "
		"node.ctl_reply_max"),
	LIMIT(socket_idle_closed, "Control clients dropped: no request for node.ctl_idle_timeout"),
	LIMIT(file_refused, "Files not read: not a regular file, or over node.file_max"),
	LIMIT(prometheus_timeouts, "HTTP connections closed: no whole request and reply in "
		"node.prometheus_timeout"),
	LIMIT(prometheus_evicted, "HTTP connections closed to make room for a new one"),
	LIMIT(file_rotations, "Counters files moved to FILE.1: --counters-max or "
		"output.counters_max reached"),
	LIMIT(file_reopens, "Counters files opened again: their path was renamed or removed"),
	LIMIT(prometheus_refused, "HTTP connections refused: all others were answering requests"),
	LIMIT(prometheus_incomplete, "HTTP connections ended without a whole request: dropped, "
		"or refused as too long (node.prometheus_request_max) or malformed"),
	{ .name = "idle", .kind = PSB_METRIC_GROUP, .type = PSB_MT_BLOCK,
	  .off = offsetof(struct psb_control_snap, idle), .prom = "idle",
	  .help = "Sleeps of idle lcores (node.idle)", .sub = &idle_block },
};

static const struct psb_metric exp_figs[] = {
	FIG(struct psb_exp_snap, id, GAUGE, U64, NONE, NULL,
		"Number of the experiment: 1, 2, ... (0: none yet)"),
	FIG(struct psb_exp_snap, elapsed_s, GAUGE, DBL, S, "elapsed",
		"Time the experiment ran so far"),
};

#define PP(f, k, t, u, pr, h)	FIG(struct psb_pp_snap, f, k, t, u, pr, h)

static const struct psb_metric pp_figs[] = {
	FIG_AT(struct psb_pp_snap, "iterations", all.iterations, COUNTER, U64, NONE, NULL,
		"Iterations done"),
	PP(repeat, GAUGE, U64, NONE, NULL, "Iterations the experiment asks for"),
	PP(warming, GAUGE, BOOL, BOOL, NULL, "1 during the warm-up iterations"),
	FIG_AT(struct psb_pp_snap, "requests", all.ops, COUNTER, U64, NONE, NULL, "Requests done"),
	FIG_AT(struct psb_pp_snap, "goodput_gbps", all.goodput_gbps, GAUGE, DBL, GBPS, "goodput",
		"Value goodput so far"),
	FIG_AT(struct psb_pp_snap, "requests_per_s", all.ops_per_s, GAUGE, DBL, PER_S,
		"requests", "Requests per second so far"),
	PP(rtt_p50_us, GAUGE, DBL, US, "rtt_p50", "Median request round trip"),
	PP(rtt_p99_us, GAUGE, DBL, US, "rtt_p99", "99th percentile request round trip"),
	PP(rtt_mean_us, GAUGE, DBL, US, "rtt_mean", "Mean request round trip"),
	PP(staleness_mean, GAUGE, DBL, VERSIONS, NULL, "Mean staleness of pushes, versions"),
	PP(staleness_p99, GAUGE, U64, VERSIONS, NULL,
		"99th percentile staleness of pushes, versions"),
	PP(staleness_max, GAUGE, U64, VERSIONS, NULL, "Largest staleness of a push, versions"),
	FIG_AT(struct psb_pp_snap, "retries", all.retries, COUNTER, U64, NONE, NULL,
		"Requests resent"),
	FIG_AT(struct psb_pp_snap, "failed", all.failed, COUNTER, U64, NONE, NULL,
		"Requests given up"),
	FIG_AT(struct psb_pp_snap, "verify_errors", all.verify_errors, COUNTER, U64, NONE, NULL,
		"Answers whose values were not the exact sums (--verify)"),
	PP(workers, GAUGE, U64, NONE, NULL, "Workers of the experiment in this process"),
	PP(workers_done, GAUGE, U64, NONE, NULL, "Of them, those finished"),
	{ .name = "rtt_hist_us", .kind = PSB_METRIC_HISTOGRAM, .type = PSB_MT_HIST,
	  .unit = PSB_MU_US, .detail = 1, .off = offsetof(struct psb_pp_snap, all.rtt),
	  .prom = "rtt", .help = "Request round trips", .bounds = &psb_bench_rtt_bounds },
	{ .name = "staleness_hist", .kind = PSB_METRIC_HISTOGRAM, .type = PSB_MT_HIST,
	  .unit = PSB_MU_VERSIONS, .detail = 1, .off = offsetof(struct psb_pp_snap, all.stale),
	  .prom = "staleness", .help = "Staleness of pushes: versions of the key other workers "
	  "pushed since the worker last got it", .bounds = &psb_bench_stale_bounds },
};

#define SRV(f, k, t, u, pr, h)	FIG(struct psb_serve_snap, f, k, t, u, pr, h)

static const struct psb_metric serve_figs[] = {
	SRV(elapsed_s, GAUGE, DBL, S, "window", "Time the figures cover: since the start or "
		"the last reset_state"),
	SRV(push, COUNTER, U64, NONE, NULL, "PUSH requests served in the window"),
	SRV(pull, COUNTER, U64, NONE, NULL, "PULL requests served in the window"),
	SRV(pushpull, COUNTER, U64, NONE, NULL, "PUSHPULL requests served in the window"),
	SRV(rounds_closed, COUNTER, U64, NONE, NULL, "Synchronous rounds closed in the window"),
	SRV(bytes_summed, COUNTER, U64, BYTES, "summed", "Value bytes added in the window"),
	SRV(bytes_sent, COUNTER, U64, BYTES, "sent", "Value bytes sent back in the window"),
	SRV(rx_pkts, COUNTER, U64, PACKETS, "rx", "Messages the shards received in the window"),
	SRV(tx_pkts, COUNTER, U64, PACKETS, "tx", "Packets the shards sent in the window"),
	SRV(stale, COUNTER, U64, NONE, NULL, "Requests for a round already closed, in the window"),
	SRV(run_s, GAUGE, DBL, S, "run", "Time since the experiment started"),
	SRV(resets, COUNTER, U64, NONE, NULL, "reset_state during the experiment"),
};

#define STL(f, k, t, u, pr, h)	FIG(struct psb_stale_snap, f, k, t, u, pr, h)

static const struct psb_metric stale_figs[] = {
	STL(worker, GAUGE, U64, NONE, "stale_worker", "This worker's id (node.rank)"),
	STL(joined, GAUGE, BOOL, BOOL, "stale_joined", "1 once the trainer answered a join"),
	STL(running, GAUGE, BOOL, BOOL, "stale_running", "1 while the trainer runs and it samples"),
	STL(ended, GAUGE, BOOL, BOOL, "stale_ended", "1 once the trainer said the run ended"),
	STL(session, GAUGE, U64, NONE, "stale_session", "The trainer's session it follows"),
	STL(held, GAUGE, U64, NONE, "stale_held", "The newest version held whole, verified"),
	STL(final_version, GAUGE, U64, NONE, "stale_final_version",
		"The trainer's final version, once it said it ended (0: not yet)"),
	STL(versions, COUNTER, U64, NONE, "stale_versions", "Versions taken"),
	STL(verify_fail, COUNTER, U64, NONE, "stale_verify_fail",
		"Versions not what the trainer makes (staleness.verify): not taken"),
	STL(posts, COUNTER, U64, NONE, "stale_posts", "Posts of samples sent to the trainer"),
	STL(acks, COUNTER, U64, NONE, "stale_acks", "The trainer's answers taken"),
	STL(stray, COUNTER, U64, NONE, "stale_stray",
		"Datagrams not from the trainer or not of its session: not used"),
	STL(early, COUNTER, U64, NONE, "stale_early", "Versions' packets before it joined: not used"),
	STL(unresolved, COUNTER, U64, NONE, "stale_unresolved",
		"Datagrams to the trainer not sent: its MAC not known yet (ARP sent)"),
	/* its receiver's figures, beside its own */
	{ .name = "", .kind = PSB_METRIC_GROUP, .type = PSB_MT_BLOCK,
	  .off = offsetof(struct psb_stale_snap, mc), .prom = "stale_mc",
	  .help = "Its multicast receiver's figures", .sub = &psb_mc_recv_block },
};

#define TRN(f, k, t, u, pr, h)	FIG(struct psb_trainer_snap, f, k, t, u, pr, h)
#define TRN_RANK(f, k, t, u, h) \
	{ .name = #f, .kind = PSB_METRIC_##k, .type = PSB_MT_##t, .unit = PSB_MU_##u, \
	  .off = offsetof(struct psb_trainer_snap, f), .n = PSB_TRN_NACKERS, .label = "rank", \
	  .label_of = rank_name, .prom = "trainer_mc_" #f, .help = h }

static const char *
rank_name(unsigned int k)
{
	static const char *const names[PSB_TRN_NACKERS] = { "1", "2", "3", "4" };

	return k < PSB_TRN_NACKERS ? names[k] : "?";
}

static const struct psb_metric trainer_figs[] = {
	TRN(session, GAUGE, U64, NONE, "trainer_session", "The run's session (workers follow it)"),
	TRN(workers, GAUGE, U64, NONE, "trainer_workers", "Workers of the run"),
	TRN(joined, GAUGE, U64, NONE, "trainer_joined", "Workers that joined"),
	TRN(running, GAUGE, BOOL, BOOL, "trainer_running", "1 while it publishes"),
	TRN(ended, GAUGE, BOOL, BOOL, "trainer_ended",
		"1 once it stopped publishing (max_version or max_time)"),
	TRN(holding_final, GAUGE, U64, NONE, "trainer_holding_final",
		"Workers that said they hold the final version"),
	TRN(version, GAUGE, U64, NONE, "trainer_version", "The newest version published"),
	TRN(pushes, COUNTER, U64, NONE, "trainer_pushes", "Versions published"),
	TRN(late_pushes, COUNTER, U64, NONE, "trainer_late_pushes",
		"Push periods missed: a push took longer than its period"),
	TRN(skipped, COUNTER, U64, NONE, "trainer_skipped",
		"Pushes skipped: no memory within staleness.budget then"),
	TRN(push_ms_mean, GAUGE, DBL, NONE, "trainer_push_ms",
		"Time per push (a version made and handed to the sender), ms"),
	TRN(push_ms_max, GAUGE, DBL, NONE, "trainer_push_ms_max", "Longest push, ms"),
	TRN(posts, COUNTER, U64, NONE, "trainer_posts", "Workers' posts with samples taken"),
	TRN(joins, COUNTER, U64, NONE, "trainer_joins", "Joins taken"),
	TRN(duplicates, COUNTER, U64, NONE, "trainer_duplicate_posts",
		"Posts sent again (their ACK lost): not counted twice"),
	TRN(version_difference, GAUGE, DBL, VERSIONS, "trainer_version_difference",
		"Average Version difference over the posts so far: the newest version when a "
		"post came less the worker's mean (the old benchmark's measure)"),
	TRN(window_staleness, GAUGE, DBL, VERSIONS, "trainer_window_staleness",
		"Window staleness over the posts so far: the newest version at each sample's "
		"instant less the one the worker held"),
	TRN(window_staleness_max, GAUGE, DBL, VERSIONS, "trainer_window_staleness_max",
		"Largest window staleness of a post"),
	TRN(refused, COUNTER, U64, NONE, "trainer_refused",
		"Messages refused: wrong key or session, unknown worker, another address, over a "
		"worker's post budget"),
	TRN(malformed, COUNTER, U64, PACKETS, "trainer_malformed", "Messages the parser refused"),
	TRN(unexpected, COUNTER, U64, PACKETS, "trainer_unexpected",
		"Well-formed messages a trainer takes none of"),
	TRN(stray_nacks, COUNTER, U64, PACKETS, "trainer_stray_nacks",
		"NACKs not from a worker's address: not taken (no repairs for them)"),
	TRN(unresolved, COUNTER, U64, PACKETS, "trainer_unresolved",
		"Messages to a worker not sent: its MAC unknown yet (ARP asked)"),
	TRN(pulls, COUNTER, U64, NONE, "trainer_pulls", "Pull mode: PULLs taken"),
	TRN(held_bytes, GAUGE, U64, BYTES, "trainer_held", "Memory its versions take"),
	TRN(series_dropped, COUNTER, U64, NONE, "trainer_series_dropped",
		"Posts not kept for staleness.csv and .svg: past their bound"),
	/* its sender's figures, beside its own */
	{ .name = "", .kind = PSB_METRIC_GROUP, .type = PSB_MT_BLOCK,
	  .off = offsetof(struct psb_trainer_snap, mc), .prom = "trainer_mc",
	  .help = "Its multicast sender's figures", .sub = &psb_mc_send_block },
	TRN_RANK(nacker_addr, GAUGE, IPV4, NONE,
		"The busiest hosts NACKing it, by rank: their address"),
	TRN_RANK(nacker_ids, GAUGE, U32, NONE, "... receiver ids tracked from it"),
	TRN_RANK(nacker_id, GAUGE, U32, NONE, "... the one of them that sent the most NACKs"),
	TRN_RANK(nacker_nacks, COUNTER, U64, PACKETS, "... their NACKs taken"),
	TRN_RANK(nacker_over_budget, COUNTER, U64, NONE,
		"... their entries ignored: over their receiver's budget"),
	TRN_RANK(nacker_repair_bytes, COUNTER, U64, BYTES,
		"... what their entries added to repairs"),
};

static const char *
roce_kind_name(unsigned int k)
{
	return psb_roce_kind_names[k];
}

static const char *
roce_class_name(unsigned int k)
{
	return psb_roce_class_names[k];
}

static const char *
roce_nak_name(unsigned int k)
{
	return psb_roce_nak_names[k];
}

#define PT(nm, f, k, t, u, pr, h)	FIG_AT(struct psb_pt_snap, nm, f, k, t, u, pr, h)
#define PT_BY(nm, f, nn, first_, lbl, fn, h) \
	FIG_BY(struct psb_pt_snap, nm, f, nn, first_, lbl, fn, h)

static const struct psb_metric pt_figs[] = {
	PT("to_host_pkts", st.to_host_pkts, COUNTER, U64, PACKETS, "to_host",
		"Frames not psb's sent out of the exception port to the host's kernel"),
	PT("to_host_bytes", st.to_host_bytes, COUNTER, U64, BYTES, "to_host",
		"Bytes of them"),
	PT("host_dropped", st.host_dropped, COUNTER, U64, PACKETS, NULL,
		"Frames for the host lost: the exception port full or down"),
	PT("from_host_pkts", st.from_host_pkts, COUNTER, U64, PACKETS, "from_host",
		"Frames the host's kernel sent, passed to the first port"),
	PT("from_host_bytes", st.from_host_bytes, COUNTER, U64, BYTES, "from_host",
		"Bytes of them"),
	PT("host_held", st.host_held, COUNTER, U64, NONE, NULL,
		"Passes that read the exception port short or not at all, leaving the host's "
		"frames in its queue: half of the transmit ring was in use, the other half is kept "
		"for psb's own sends"),
	PT("not_roce", st.not_roce, COUNTER, U64, PACKETS, NULL,
		"Frames passed either way that were not RoCE"),
	PT_BY("roce_frames", tot.frames, PSB_ROCE_KINDS, 1, "version", roce_kind_name,
		"RoCE frames passed either way, by version (v1: Ethertype 0x8915; v2: UDP 4791)"),
	PT("roce_bytes", tot.bytes, COUNTER, U64, BYTES, NULL, "Bytes of them"),
	PT("roce_malformed", tot.malformed, COUNTER, U64, PACKETS, NULL,
		"Frames that said RoCE and could not be (lengths, fragments, a GRH that is not "
		"one): passed on, not counted on a queue pair"),
	PT("icrc_bad", tot.icrc_bad, COUNTER, U64, PACKETS, NULL,
		"RoCE frames whose ICRC is wrong: passed on unchanged, counted on their queue "
		"pair only if it is tracked"),
	PT_BY("roce_ops", tot.ops, PSB_ROCE_CLASSES, 0, "op", roce_class_name,
		"RoCE frames by operation"),
	PT("psn_missing", tot.psn_missing, COUNTER, U64, NONE, NULL,
		"PSNs skipped in requests and inside READ responses: packets lost before psb"),
	PT("psn_dup", tot.psn_dup, COUNTER, U64, PACKETS, NULL,
		"Packets at a PSN seen before: retransmissions"),
	PT_BY("naks", tot.naks, PSB_ROCE_NAKS, 0, "syndrome", roce_nak_name,
		"NAKs by AETH syndrome (rnr: receiver not ready)"),
	PT("ecn_ce", tot.ecn_ce, COUNTER, U64, PACKETS, NULL,
		"RoCE frames marked congestion experienced (ECN CE)"),
	PT("becn", tot.becn, COUNTER, U64, PACKETS, NULL, "RoCE frames with the BTH BECN bit"),
	PT("qp_new", tot.qp_new, COUNTER, U64, NONE, NULL, "Queue pairs taken into the table"),
	PT("qp_evicted", tot.qp_evicted, COUNTER, U64, NONE, NULL,
		"Queue pairs dropped from the table to make room (node.roce_qps reached): one "
		"not seen since the clock last passed (second chance)"),
	PT("qp_tracked", tot.qp_tracked, GAUGE, U64, NONE, NULL, "Queue pairs in the table now"),
	PT("qp_cap", st.qp_cap, GAUGE, U64, NONE, NULL,
		"Queue pairs the table holds at most (node.roce_qps)"),
	PT("accounting", st.accounting, GAUGE, BOOL, BOOL, NULL,
		"1 while RoCE is counted (node.roce_accounting)"),
};

/*
 * One queue pair of the passthrough's table, for Prometheus (the busiest, labelled by
 * version, QP and addresses); the control socket, console and telemetry show the same
 * figures under the same names (psb_roce_json).
 */
#define QPF(nm, f, u, h)	FIG_AT(struct psb_roce_qp, nm, f, COUNTER, U64, u, NULL, h)

static const struct psb_metric roce_qp_figs[] = {
	FIG_AT(struct psb_roce_qp, "pkts", st.pkts, COUNTER, U64, PACKETS, "passed",
		"RoCE frames of the queue pair passed either way"),
	FIG_AT(struct psb_roce_qp, "bytes", st.bytes, COUNTER, U64, BYTES, "passed",
		"Bytes of them"),
	FIG_BY(struct psb_roce_qp, "ops", st.ops, PSB_ROCE_CLASSES, 0, "op", roce_class_name,
		"Its frames by operation"),
	QPF("psn_missing", st.psn_missing, NONE, "PSNs skipped: packets lost before psb"),
	QPF("psn_dup", st.psn_dup, PACKETS, "Packets at a PSN seen before: retransmissions"),
	FIG_BY(struct psb_roce_qp, "naks", st.naks, PSB_ROCE_NAKS, 0, "syndrome", roce_nak_name,
		"Its NAKs by AETH syndrome"),
	QPF("ecn_ce", st.ecn_ce, PACKETS, "Its frames marked ECN CE"),
	QPF("becn", st.becn, PACKETS, "Its frames with the BTH BECN bit"),
	QPF("icrc_bad", st.icrc_bad, PACKETS, "Its frames whose ICRC was wrong"),
};

const struct psb_metric_block psb_roce_qp_block =
	PSB_METRIC_BLOCK("roce_qp", "psb_roce_qp", roce_qp_figs);

const struct psb_metric_block psb_node_block =
	PSB_METRIC_BLOCK("node", "psb_node", node_figs);
const struct psb_metric_block psb_role_block =
	PSB_METRIC_BLOCK("roles", "psb_role", role_figs);
const struct psb_metric_block psb_port_block =
	PSB_METRIC_BLOCK("ports", "psb_port", port_figs);
const struct psb_metric_block psb_store_block =
	PSB_METRIC_BLOCK("store", "psb_store", store_figs);
const struct psb_metric_block psb_sched_block =
	PSB_METRIC_BLOCK("scheduler", "psb_scheduler", sched_figs);
const struct psb_metric_block psb_control_block =
	PSB_METRIC_BLOCK("control", "psb_control", control_figs);
const struct psb_metric_block psb_exp_block =
	PSB_METRIC_BLOCK("experiment", "psb_experiment", exp_figs);
const struct psb_metric_block psb_pp_block =
	PSB_METRIC_BLOCK("experiment.pushpull", "psb_experiment", pp_figs);
const struct psb_metric_block psb_serve_block =
	PSB_METRIC_BLOCK("experiment.serve", "psb_experiment", serve_figs);
const struct psb_metric_block psb_stale_block =
	PSB_METRIC_BLOCK("experiment.staleness", "psb_experiment", stale_figs);
const struct psb_metric_block psb_trainer_block =
	PSB_METRIC_BLOCK("experiment.trainer", "psb_experiment", trainer_figs);
const struct psb_metric_block psb_pt_block =
	PSB_METRIC_BLOCK("passthrough", "psb_passthrough", pt_figs);

const struct psb_metric_block *const psb_blocks[] = {
	&psb_node_block, &psb_port_block, &psb_role_block, &psb_store_block, &psb_sched_block,
	&psb_control_block, &psb_exp_block, &psb_pp_block, &psb_serve_block, &psb_stale_block,
	&psb_trainer_block, &psb_pt_block, NULL,
};

void
psb_totals_add(struct psb_counters *tot, const struct psb_counters *c)
{
	const struct psb_metric_block *b = &psb_role_block;
	const struct psb_metric *m;
	unsigned int k;

	for (m = b->m; m < b->m + b->n; m++) {
		size_t off = m->off;	/* c is the role's first part */

		if (off >= sizeof(struct psb_counters) || m->type != PSB_MT_U64)
			continue;
		for (k = 0; k < psb_metric_len(m); k++)
			((uint64_t *)(void *)((uint8_t *)tot + off))[k] +=
				((const uint64_t *)(const void *)((const uint8_t *)c + off))[k];
	}
}

void
psb_totals_io(struct psb_counters *tot, const struct psb_counters *c, const char *role)
{
	if (strcmp(role, psb_role_rx.name) == 0) {
		tot->rx_pkts = c->rx_pkts;
		tot->rx_bytes = c->rx_bytes;
	} else if (strcmp(role, psb_role_tx.name) == 0) {
		tot->tx_pkts = c->tx_pkts;
		tot->tx_bytes = c->tx_bytes;
	}
}

void
psb_snap_port(struct psb_app *app, unsigned int i, struct psb_port_snap *p)
{
	uint16_t pid = app->port_ids[i];
	struct psb_afp_stats *afp = &app->afp[i];
	struct rte_eth_stats ps;

	memset(p, 0, sizeof(*p));
	(void)psb_port_stats(app, i, &ps);
	p->idx = i;
	p->port = pid;
	p->spec = app->specs[i].spec;
	p->ipackets = ps.ipackets;
	p->opackets = ps.opackets;
	p->ibytes = ps.ibytes;
	p->obytes = ps.obytes;
	p->imissed = ps.imissed;
	p->ierrors = ps.ierrors;
	p->oerrors = ps.oerrors;
	p->rx_nombuf = ps.rx_nombuf;
	p->bye_pauses = app->bye[pid].pauses;
	p->bye_pause_expiries = app->bye[pid].expiries;
	p->faults = app->port_faults[pid];
	p->paused = app->port_paused[pid] != 0;
	if (afp->nfd != 0) {
		psb_afp_stats_update(afp);
		p->afp = 1;
		p->kernel_packets = __atomic_load_n(&afp->packets, __ATOMIC_RELAXED);
		p->kernel_drops = __atomic_load_n(&afp->drops, __ATOMIC_RELAXED);
	}
}

void
psb_snap_store(const struct psb_app *app, struct psb_store_snap *t)
{
	const struct psb_store_budget *b = &app->budget;
	uint16_t i;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < app->nroles; i++) {
		const struct psb_kv *kv;
		uint32_t n, h;
		uint64_t by;

		if (app->roles[i].role != &psb_role_server)
			continue;
		kv = psb_server_kv(&app->roles[i]);
		if (kv == NULL)
			continue;
		psb_kv_stats_add(&t->st, psb_kv_stats(kv));
		t->keys += psb_kv_nkeys(kv);
		t->bytes += psb_kv_bytes(kv);
		t->mem += psb_kv_mem(kv);
		psb_kv_staged(kv, &n, &by, &h);
		t->staged += n;
		t->staged_bytes += by;
		t->held += h;
	}
	t->limits.max_bytes = b->max_bytes;
	t->limits.max_keys = b->max_keys;
	t->limits.reasm_bytes = b->reasm_bytes;
	t->limits.reasm_sender_bytes = b->reasm_sender_bytes;
	t->limits.reasm_timeout_s = b->reasm_timeout_ns / 1e9;
	t->limits.hold_max = b->hold_max;
	t->limits.resend_burst = b->resend_burst;
	t->limits.resend_rate_gbps = b->resend_bps / 1e9;
}

int
psb_snap_sched(const struct psb_app *app, struct psb_sched_stats *st)
{
	unsigned int i;

	for (i = 0; i < app->nroles; i++) {
		const struct psb_role_inst *ri = &app->roles[i];

		if (ri->role == &psb_role_scheduler && psb_scheduler_sched(ri) != NULL) {
			*st = *psb_sched_stats(psb_scheduler_sched(ri));
			return 1;
		}
	}
	return 0;
}

static void
snap_control(const struct psb_app *app, struct psb_control_snap *c)
{
	uint64_t timeouts;

	c->cp = app->cp;
	psb_lcores_yielded(&c->yields, &c->yield_cycles);
	psb_lcores_idle_stats(&c->idle.st);
	c->idle.sleeping = app->idle_on != 0;
	c->idle.late_max_us = (double)c->idle.st.late_ns_max / 1e3;
	timeouts = c->idle.st.wakes[PSB_IDLE_WOKE_TIMEOUT];
	c->idle.late_mean_us = timeouts == 0 ? 0 :
		(double)c->idle.st.late_ns_sum / 1e3 / (double)timeouts;
	c->main_cycles = app->cp.main_cycles;
	c->telemetry_cpu_ns = __atomic_load_n(&app->cp.telemetry_cpu_ns, __ATOMIC_RELAXED);
	c->tsc_hz = rte_get_tsc_hz();
	c->socket_requests = app->cp.socket_requests;
	c->telemetry_requests = __atomic_load_n(&app->cp.telemetry_requests, __ATOMIC_RELAXED);
	c->prometheus_requests = app->cp.prometheus_requests;
	c->file_lines = app->cp.file_lines;
}

static psb_snap_exp_fn *snap_exp;

void
psb_snap_exp_source(psb_snap_exp_fn *fn)
{
	snap_exp = fn;
}

struct psb_snap *
psb_snap_take_parts(struct psb_app *app, unsigned int parts)
{
	struct psb_snap *s = malloc(sizeof(*s));
	unsigned int i;

	if (s == NULL)
		return NULL;
	memset(&s->node, 0, sizeof(s->node));
	snprintf(s->node.role, sizeof(s->node.role), "%s", psb_exp_role_names[app->node_role]);
	psb_ip_str(app->me.ip, s->node.ip);
	s->node.uptime_s = (double)psb_now_ns(app) / 1e9;
	s->node.lcores = app->nworker_lcores == 0 ? 1 : app->nworker_lcores;
	s->node.roles = app->nroles;
	s->nports = 0;
	for (i = 0; (parts & PSB_SNAP_PORTS) && i < app->nports; i++)
		if (psb_port_shown(app, i))
			psb_snap_port(app, i, &s->ports[s->nports++]);
	s->nroles = (parts & PSB_SNAP_ROLES) ? app->nroles : 0;
	for (i = 0; i < s->nroles; i++) {
		const struct psb_role_inst *ri = &app->roles[i];
		struct psb_role_snap *r = &s->roles[i];
		uint64_t cyc;

		r->c = ri->cnt;
		cyc = r->c.busy_cycles + r->c.idle_cycles;
		r->lcore = ri->lcore;
		r->busy_pct = cyc != 0 ? 100.0 * (double)r->c.busy_cycles / (double)cyc : 0.0;
		r->role = ri->role->name;
		r->idx = ri->idx;
		snprintf(r->name, sizeof(r->name), "%s%d", ri->role->name, ri->idx);
	}
	/* not value_sum: it reads the whole store, far too much for a 10 Hz scrape */
	s->has_store = (parts & PSB_SNAP_STORE) && app->node_role == PSB_NODE_SERVER;
	if (s->has_store)
		psb_snap_store(app, &s->store);
	s->has_sched = (parts & PSB_SNAP_SCHED) && app->host_sched &&
		psb_snap_sched(app, &s->sched);
	s->has_pt = (parts & PSB_SNAP_PT) && app->has_exc && psb_snap_pt(&s->pt);
	if (parts & PSB_SNAP_CONTROL)
		snap_control(app, &s->control);
	else
		memset(&s->control, 0, sizeof(s->control));
	if (snap_exp != NULL && (parts & PSB_SNAP_EXP)) {
		snap_exp(app, &s->exp);
	} else {
		memset(&s->exp, 0, offsetof(struct psb_exp_snap, pp));
		s->exp.kind = s->exp.state = "";
	}
	return s;
}

struct psb_snap *
psb_snap_take(struct psb_app *app)
{
	return psb_snap_take_parts(app, PSB_SNAP_ALL);
}

void
psb_snap_totals(const struct psb_snap *s, struct psb_counters *tot)
{
	unsigned int i;

	memset(tot, 0, sizeof(*tot));
	for (i = 0; i < s->nroles; i++)
		psb_totals_add(tot, &s->roles[i].c);
	for (i = 0; i < s->nroles; i++)
		psb_totals_io(tot, &s->roles[i].c, s->roles[i].role);
}

void
psb_snap_port_emit(struct psb_emit *e, struct psb_app *app, const struct psb_port_snap *p,
		int xstats)
{
	const struct rte_eth_xstat_name *names;
	const struct rte_eth_xstat *vals;
	int n, k;

	psb_emit_int(e, "port", (json_int_t)p->port);
	psb_emit_str(e, "spec", p->spec);
	psb_metric_emit(e, &psb_port_block, p, 1);
	if (!xstats)
		return;
	psb_emit_open(e, "xstats");
	n = psb_port_xstats(app, p->idx, &names, &vals);
	for (k = 0; k < n; k++)
		if (vals[k].id < (uint64_t)n)
			psb_emit_int(e, names[vals[k].id].name, (json_int_t)vals[k].value);
	psb_emit_close(e);
}

void
psb_snap_exp_emit(struct psb_emit *e, const struct psb_exp_snap *x, const char *key, int detail)
{
	psb_emit_open(e, key);
	psb_emit_int(e, "id", (json_int_t)x->id);
	psb_emit_str(e, "name", x->name);
	psb_emit_str(e, "kind", x->kind);
	psb_emit_str(e, "state", x->state);
	psb_emit_real(e, "elapsed_s", x->elapsed_s);
	if (x->id != 0) {
		if (x->results[0] != '\0')
			psb_emit_str(e, "results", x->results);
		if (x->error[0] != '\0')
			psb_emit_str(e, "error", x->error);
	}
	if (x->has_pp) {
		psb_emit_open(e, "pushpull");
		psb_metric_emit(e, &psb_pp_block, &x->pp, detail);
		psb_emit_close(e);
	}
	if (x->has_serve) {
		psb_emit_open(e, "serve");
		psb_emit_str(e, "shard", x->serve.shard);
		psb_metric_emit(e, &psb_serve_block, &x->serve, detail);
		psb_emit_close(e);
	}
	if (x->has_stale) {
		psb_emit_open(e, "staleness");
		psb_metric_emit(e, &psb_stale_block, &x->stale, detail);
		psb_emit_close(e);
	}
	if (x->has_trainer) {
		psb_emit_open(e, "trainer");
		psb_metric_emit(e, &psb_trainer_block, &x->trainer, detail);
		psb_emit_close(e);
	}
	psb_emit_close(e);
}

void
psb_snap_emit(struct psb_emit *e, struct psb_app *app, const struct psb_snap *s)
{
	char name[16];
	unsigned int i;

	psb_emit_open(e, NULL);
	psb_emit_open(e, "node");
	psb_emit_str(e, "role", s->node.role);
	psb_emit_str(e, "ip", s->node.ip);
	psb_metric_emit(e, &psb_node_block, &s->node, 1);
	psb_emit_close(e);
	psb_emit_open(e, "ports");
	for (i = 0; i < s->nports; i++) {
		snprintf(name, sizeof(name), "%u", (unsigned int)s->ports[i].port);
		psb_emit_open(e, name);
		psb_snap_port_emit(e, app, &s->ports[i], 1);
		psb_emit_close(e);
	}
	psb_emit_close(e);
	psb_emit_open(e, "roles");
	for (i = 0; i < s->nroles; i++) {
		psb_emit_open(e, s->roles[i].name);
		psb_metric_emit(e, &psb_role_block, &s->roles[i], 1);
		psb_emit_close(e);
	}
	psb_emit_close(e);
	if (s->has_store) {
		psb_emit_open(e, "store");
		psb_metric_emit(e, &psb_store_block, &s->store, 1);
		psb_emit_close(e);
	}
	if (s->has_sched) {
		psb_emit_open(e, "scheduler");
		psb_metric_emit(e, &psb_sched_block, &s->sched, 1);
		psb_emit_close(e);
	}
	if (s->has_pt) {
		psb_emit_open(e, "passthrough");
		psb_metric_emit(e, &psb_pt_block, &s->pt, 1);
		psb_emit_close(e);
	}
	psb_emit_open(e, "control");
	psb_metric_emit(e, &psb_control_block, &s->control, 1);
	psb_emit_close(e);
	psb_snap_exp_emit(e, &s->exp, "experiment", 1);
	psb_emit_close(e);
}

json_t *
psb_roce_qp_reply(const struct psb_app *app, uint32_t max)
{
	struct psb_passthrough_view v;
	struct psb_roce_qp *rows;
	json_t *qps, *o;
	uint32_t i;

	if (!app->has_exc)
		return NULL;
	if (max > app->roce_qps)
		max = app->roce_qps;
	rows = malloc(sizeof(*rows) * (max != 0 ? max : 1));
	if (rows == NULL || psb_passthrough_read(&v, rows, max) != 0) {
		free(rows);
		return NULL;
	}
	qps = json_array();
	for (i = 0; i < v.nrows; i++)
		json_array_append_new(qps, psb_roce_qp_json(&rows[i]));
	free(rows);
	o = json_pack("{s:b, s:I, s:I, s:o, s:o}", "accounting", v.st.accounting,
		      "tracked", (json_int_t)v.tracked, "cap", (json_int_t)v.st.qp_cap,
		      "totals", psb_roce_totals_json(&v.tot), "qps", qps);
	return o;
}

int
psb_snap_pt(struct psb_pt_snap *pt)
{
	struct psb_passthrough_view v;

	if (psb_passthrough_read(&v, NULL, 0) != 0) {
		memset(pt, 0, sizeof(*pt));
		return 0;
	}
	pt->st = v.st;
	pt->tot = v.tot;
	return 1;
}

/* Where a block's figures are in the counters: "roles.NAME", "store", ... */
static const char *const block_paths[] = {
	"node", "ports.N", "roles.NAME", "store", "scheduler", "control", "experiment",
	"experiment.pushpull", "experiment.serve", "experiment.staleness", "experiment.trainer",
	"passthrough",
};
/* a path for every table of psb_blocks[] (NULL-terminated) */
_Static_assert(RTE_DIM(block_paths) + 1 == RTE_DIM(psb_blocks), "block_paths: one per table");

static void
describe(json_t *a, const char *path, const char *prefix, const struct psb_metric_block *b)
{
	const struct psb_metric *m;
	char full[160], prom[160];

	for (m = b->m; m < b->m + b->n; m++) {
		snprintf(full, sizeof(full), "%s%s%s", path, m->name[0] != '\0' ? "." : "",
			 m->name);
		psb_metric_prom_name(prom, sizeof(prom), prefix, m, NULL);
		if (m->type == PSB_MT_BLOCK) {
			describe(a, full, prom, m->sub);
			continue;
		}
		json_array_append_new(a, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s?,s:b,s:b,s:s}",
			"path", full, "kind", psb_metric_kind_name(m->kind),
			"unit", psb_metric_unit_name(m->unit), "type",
			m->type == PSB_MT_DBL ? "real" : m->type == PSB_MT_BOOL ? "boolean" :
			m->type == PSB_MT_HIST ? "histogram" : m->type == PSB_MT_IPV4 ? "address" :
			"integer",
			"prometheus", prom, "label", m->n > 1 ? m->label : NULL,
			"detail", m->detail != 0, "conditional", m->cond != 0, "help", m->help));
	}
}

json_t *
psb_metrics_json(void)
{
	json_t *a = json_array();
	unsigned int i;

	for (i = 0; psb_blocks[i] != NULL; i++)
		describe(a, block_paths[i], psb_blocks[i]->prom, psb_blocks[i]);
	return a;
}

static int
counters_emit(struct psb_emit *e, struct psb_app *app)
{
	struct psb_snap *s = psb_snap_take(app);

	if (s == NULL)
		return -ENOMEM;
	psb_snap_emit(e, app, s);
	free(s);
	return 0;
}

json_t *
psb_counters_control_json(const struct psb_app *app)
{
	struct psb_control_snap c;
	struct psb_emit e;

	snap_control(app, &c);
	psb_emit_tree(&e);
	psb_emit_open(&e, NULL);
	psb_metric_emit(&e, &psb_control_block, &c, 1);
	return psb_emit_done(&e);
}

json_t *
psb_counters_json(struct psb_app *app)
{
	struct psb_emit e;

	psb_emit_tree(&e);
	if (counters_emit(&e, app) != 0) {
		json_decref(psb_emit_done(&e));
		return NULL;
	}
	return psb_emit_done(&e);
}

int
psb_counters_text(struct psb_app *app, struct psb_text *t)
{
	struct psb_emit e;
	int rc;

	psb_emit_text(&e, t);
	rc = counters_emit(&e, app);
	psb_emit_done(&e);
	return rc != 0 || e.oom || t->oom ? -ENOMEM : 0;
}

json_t *
psb_counters_get(json_t *all, const char *path, char *err, size_t errlen)
{
	char key[128];
	const char *p = path, *dot;
	json_t *cur = all;
	size_t len;

	if (path == NULL || *path == '\0')
		return json_incref(all);
	for (;;) {
		dot = strchr(p, '.');
		len = dot != NULL ? (size_t)(dot - p) : strlen(p);
		if (len >= sizeof(key))
			len = sizeof(key) - 1;
		memcpy(key, p, len);
		key[len] = '\0';
		cur = json_is_object(cur) ? json_object_get(cur, key) : NULL;
		if (cur == NULL) {
			snprintf(err, errlen, "no counters at \"%s\" (\"%s\" not found; top level: "
				 "node, ports, roles, store, control, experiment)", path, key);
			return NULL;
		}
		if (dot == NULL)
			break;
		p = dot + 1;
	}
	return json_incref(cur);
}

int
psb_counters_append(struct psb_app *app, struct psb_logfile *lf)
{
	uint64_t reopens = lf->reopens, rotations = lf->rotations;
	struct timespec ts;
	int rc;

	clock_gettime(CLOCK_REALTIME, &ts);
	file_line.len = 0;
	file_line.oom = 0;
	/* every line says what wrote it: a file may be rotated, reopened, cut at any line */
	psb_text_printf(&file_line, "{\"time\":%.6f,\"psb_version\":\"%s\",\"git_revision\":"
		"\"%s\",\"counters\":", (double)ts.tv_sec + ts.tv_nsec / 1e9, psb_cli_version(),
		psb_cli_revision());
	pthread_mutex_lock(&app->ctl_lock);
	rc = psb_counters_text(app, &file_line);
	pthread_mutex_unlock(&app->ctl_lock);
	psb_text_append(&file_line, "}\n", 2);
	if (rc != 0 || file_line.oom)
		return -ENOMEM;
	rc = psb_logfile_write(lf, file_line.s, file_line.len);
	app->cp.file_reopens += lf->reopens - reopens;
	app->cp.file_rotations += lf->rotations - rotations;
	app->cp.file_lines++;
	return rc;
}

void
psb_counters_file_log(struct psb_app *app, const char *what, const char *path,
		uint64_t every_ns, uint64_t max, const char *knob)
{
	char every[40], size[40];

	psb_conf_format_duration(every, sizeof(every), every_ns);
	psb_conf_format_size(size, sizeof(size), max);
	if (max != 0)
		PSB_INFO(export, "%s %s: a line every %s; moved to %s.1 at %s (%s), opened again if "
			"renamed or removed", what, path, every, path, size, knob);
	else
		PSB_INFO(export, "%s %s: a line every %s; never rotated (%s 0), opened again if "
			"renamed or removed", what, path, every, knob);
}
