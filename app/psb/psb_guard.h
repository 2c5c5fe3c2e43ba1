/* Bursts on ports whose memory a peer shares (memif): a fault there is the peer leaving. */
#ifndef PSB_GUARD_H
#define PSB_GUARD_H

#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_ethdev.h>
#include <rte_lcore.h>

/*
 * The memif driver unmaps a link's shared memory from DPDK's interrupt thread when the
 * peer goes (SIGKILLed, say: no BYE), while an lcore may be inside a burst on that very
 * memory. The driver checks its "connected" flag only on entering a burst, so an lcore
 * preempted inside one faults when it resumes. A guarded burst turns that fault (SIGSEGV
 * or SIGBUS within it, on this thread) into a failed burst: the caller pauses the port
 * until its link has gone down and up, and counts it. What the burst held is lost, not
 * freed: the driver may have freed part of it already. A fault anywhere else is not
 * caught.
 */
struct psb_guard {
	sigjmp_buf env;
	volatile sig_atomic_t armed;
};

extern __thread struct psb_guard psb_guard;

/* Install the fault handler (once, before lcores start). 0 or -errno. */
int psb_guard_init(void);

/*
 * psb is exiting with status code, its results written and its interfaces put back: a
 * fault from here on, outside a guarded burst, is DPDK's interrupt thread finishing a
 * memif teardown under rte_eal_cleanup(), and ends psb with that status (and a line
 * saying so) rather than a core dump.
 */
void psb_guard_exiting(int code);

#define PSB_GUARD_FAULT	UINT16_MAX	/* a guarded burst faulted */

/*
 * The fault is avoided too: psb's munmap (psb_guard.c) stands in for the C library's in
 * DPDK's drivers, and when a thread that polls no port (DPDK's interrupt thread tearing
 * a memif link down) unmaps memory, it first waits until every lcore that was inside its
 * polling has passed a quiescent point (the start of a pass) or left it: the driver had
 * marked the link down before, so no burst that starts afterwards touches the memory.
 * Lcores say where they are: psb_guard_enter / psb_guard_leave around a block of passes
 * (64 in the lcores' loop; entering is a quiescent point too), psb_guard_quiescent
 * between blocks that run without leaving: one fence per block, not per pass. A wait lasts PSB_GUARD_GRACE_NS at most (an lcore
 * preempted that long: the guarded burst is the net below).
 */
#define PSB_GUARD_GRACE_NS	(500ull * 1000 * 1000)

struct psb_guard_lcore {
	uint64_t passes;		/* quiescent points passed */
	uint32_t active;		/* inside its polling */
	uint64_t waits;			/* unmaps that waited for this lcore */
} __rte_cache_aligned;

extern struct psb_guard_lcore psb_guard_lcores[RTE_MAX_LCORE];

/* Unmaps by other threads wait for the lcores from now on (once they run). */
void psb_guard_grace_on(void);
/* Unmaps that waited for lcores, and those that gave up waiting (PSB_GUARD_GRACE_NS). */
void psb_guard_grace_stats(uint64_t *waited, uint64_t *gave_up);

static inline void
psb_guard_enter(void)
{
	unsigned int lc = rte_lcore_id();

	if (lc >= RTE_MAX_LCORE)
		return;
	__atomic_store_n(&psb_guard_lcores[lc].active, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&psb_guard_lcores[lc].passes, psb_guard_lcores[lc].passes + 1,
		__ATOMIC_RELAXED);
	/* the link's state is read after this is seen (pairs with the unmapping thread's) */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static inline void
psb_guard_quiescent(void)
{
	unsigned int lc = rte_lcore_id();

	if (lc >= RTE_MAX_LCORE)
		return;
	__atomic_store_n(&psb_guard_lcores[lc].passes, psb_guard_lcores[lc].passes + 1,
		__ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static inline void
psb_guard_leave(void)
{
	unsigned int lc = rte_lcore_id();

	if (lc >= RTE_MAX_LCORE)
		return;
	__atomic_store_n(&psb_guard_lcores[lc].active, 0, __ATOMIC_RELEASE);
}

/* A burst of n on queue 0 of port: what it moved, or PSB_GUARD_FAULT. */
static inline uint16_t
psb_guard_burst(uint16_t port, struct rte_mbuf **pkts, uint16_t n, bool tx)
{
	uint16_t done;

	if (sigsetjmp(psb_guard.env, 0) != 0)
		return PSB_GUARD_FAULT;
	psb_guard.armed = 1;
	done = tx ? rte_eth_tx_burst(port, 0, pkts, n) : rte_eth_rx_burst(port, 0, pkts, n);
	psb_guard.armed = 0;
	return done;
}

static inline uint16_t
psb_guard_rx(uint16_t port, struct rte_mbuf **pkts, uint16_t n)
{
	return psb_guard_burst(port, pkts, n, false);
}

static inline uint16_t
psb_guard_tx(uint16_t port, struct rte_mbuf **pkts, uint16_t n)
{
	return psb_guard_burst(port, pkts, n, true);
}

#endif /* PSB_GUARD_H */
