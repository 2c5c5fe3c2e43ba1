/* Bursts on ports whose memory a peer shares (memif): a fault there is the peer leaving. */
#ifndef PSB_GUARD_H
#define PSB_GUARD_H

#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_ethdev.h>

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
