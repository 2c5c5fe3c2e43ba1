/*
 * The window of value bytes a sender lets into flight, adapted to loss as TCP adapts its
 * own: it starts at PSB_CWND_START (or the ceiling, when lower), doubles per round trip up
 * to ssthresh, then grows by about one request per window; a loss halves it, at most once
 * per retransmission timeout, never below two requests. Never above the ceiling; one
 * request always goes. ps-lite's benchmark (psb_bench) and the client library use it.
 */
#ifndef PSB_CWND_H
#define PSB_CWND_H

#include <stdint.h>

#define PSB_CWND_START	(4ull << 20)

struct psb_cwnd {
	uint64_t max;		/* the ceiling, bytes */
	uint64_t cwnd, ssthresh;
	uint64_t inflight;	/* bytes counted against it now */
	uint64_t losses_seen;	/* the engine's losses already acted on */
	uint64_t cut_ns;	/* when it was last halved */
	uint64_t cuts;
};

static inline void
psb_cwnd_init(struct psb_cwnd *w, uint64_t max)
{
	w->max = max;
	w->cwnd = max < PSB_CWND_START ? max : PSB_CWND_START;
	w->ssthresh = max;
	w->inflight = 0;
	w->losses_seen = 0;
	w->cut_ns = 0;
	w->cuts = 0;
}

/* May a request of cost bytes go now? (one always goes) */
static inline int
psb_cwnd_room(const struct psb_cwnd *w, uint64_t cost)
{
	return w->inflight == 0 || w->inflight + cost <= w->cwnd;
}

/* A request answered at the first try (retries 0): the window may grow. */
static inline void
psb_cwnd_grow(struct psb_cwnd *w, uint64_t cost, uint32_t retries)
{
	if (retries != 0)
		return;
	w->cwnd += w->cwnd < w->ssthresh ? cost : cost * cost / w->cwnd + 1;
	if (w->cwnd > w->max)
		w->cwnd = w->max;
}

/*
 * The engine's loss count is now losses: on a new loss, halve the window (not below
 * min_ss), at most once per rto_ns.
 */
static inline void
psb_cwnd_losses(struct psb_cwnd *w, uint64_t losses, uint64_t now_ns, uint64_t rto_ns,
		uint64_t min_ss)
{
	if (losses == w->losses_seen)
		return;
	w->losses_seen = losses;
	if (w->cuts != 0 && now_ns - w->cut_ns < rto_ns)
		return;
	w->cut_ns = now_ns;
	w->cuts++;
	w->ssthresh = w->cwnd / 2;
	if (w->ssthresh < min_ss)
		w->ssthresh = min_ss;
	if (w->ssthresh > w->max)
		w->ssthresh = w->max;
	w->cwnd = w->ssthresh;
}

#endif /* PSB_CWND_H */
