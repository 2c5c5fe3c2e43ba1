/* Bursts on ports whose memory a peer shares: a fault in one is caught (see psb_guard.h). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "psb_guard.h"

__thread struct psb_guard psb_guard;
struct psb_guard_lcore psb_guard_lcores[RTE_MAX_LCORE];
static volatile int grace_on;
static uint64_t grace_waited, grace_gave_up;

void
psb_guard_grace_on(void)
{
	__atomic_store_n(&grace_on, 1, __ATOMIC_RELEASE);
}

void
psb_guard_grace_stats(uint64_t *waited, uint64_t *gave_up)
{
	*waited = __atomic_load_n(&grace_waited, __ATOMIC_RELAXED);
	*gave_up = __atomic_load_n(&grace_gave_up, __ATOMIC_RELAXED);
}

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Every lcore inside its polling when this began has passed a quiescent point or left
 * (PSB_GUARD_GRACE_NS at most). Called by threads that poll nothing.
 */
static void
grace_wait(void)
{
	static uint64_t seen[RTE_MAX_LCORE];
	static uint8_t wait_for[RTE_MAX_LCORE];
	uint64_t t0 = 0;
	unsigned int i, left = 0;

	/* the driver marked the link down before: that store is seen before what follows */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (i = 0; i < RTE_MAX_LCORE; i++) {
		wait_for[i] = __atomic_load_n(&psb_guard_lcores[i].active, __ATOMIC_RELAXED) != 0;
		seen[i] = __atomic_load_n(&psb_guard_lcores[i].passes, __ATOMIC_RELAXED);
		left += wait_for[i];
	}
	while (left != 0) {
		left = 0;
		for (i = 0; i < RTE_MAX_LCORE; i++) {
			if (!wait_for[i])
				continue;
			if (__atomic_load_n(&psb_guard_lcores[i].active, __ATOMIC_ACQUIRE) == 0 ||
			    __atomic_load_n(&psb_guard_lcores[i].passes, __ATOMIC_ACQUIRE) != seen[i]) {
				wait_for[i] = 0;
				psb_guard_lcores[i].waits++;
				continue;
			}
			left++;
		}
		if (left == 0)
			break;
		if (t0 == 0) {
			t0 = mono_ns();
			__atomic_fetch_add(&grace_waited, 1, __ATOMIC_RELAXED);
		} else if (mono_ns() - t0 >= PSB_GUARD_GRACE_NS) {
			__atomic_fetch_add(&grace_gave_up, 1, __ATOMIC_RELAXED);
			break;
		}
		sched_yield();
	}
}

/*
 * DPDK's drivers unmap through here (this executable's munmap comes before the C
 * library's): one called by a thread that polls no port waits for the lcores first, so
 * that no burst still reads a memif peer's memory when it goes. The wait is one pass of
 * the lcores' loops; the C library's own unmapping (malloc) does not come here.
 */
int
munmap(void *addr, size_t len)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

	if (__atomic_load_n(&grace_on, __ATOMIC_ACQUIRE) && rte_lcore_id() >= RTE_MAX_LCORE) {
		/* one waiter at a time: grace_wait's tables are shared */
		pthread_mutex_lock(&lock);
		grace_wait();
		pthread_mutex_unlock(&lock);
	}
	return (int)syscall(SYS_munmap, addr, len);
}

/* What handled the signals before: a fault outside a guarded burst goes on to it. */
static struct sigaction prev_segv, prev_bus;
static volatile sig_atomic_t exiting, exit_code;

void
psb_guard_exiting(int code)
{
	exit_code = code;
	exiting = 1;
}

static void
on_fault(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *prev = sig == SIGSEGV ? &prev_segv : &prev_bus;

	if (psb_guard.armed) {
		psb_guard.armed = 0;
		siglongjmp(psb_guard.env, 1);
	}
	if (exiting) {
		static const char msg[] = "psb: a DPDK thread faulted while psb exited (a memif "
			"teardown); results were written\n";

		(void)!write(2, msg, sizeof(msg) - 1);
		_exit(exit_code);
	}
	/* not inside a guarded burst: a crash (what was installed before, then the default) */
	if ((prev->sa_flags & SA_SIGINFO) && prev->sa_sigaction != NULL)
		prev->sa_sigaction(sig, si, uc);
	else if (prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN)
		prev->sa_handler(sig);
	signal(sig, SIG_DFL);
	raise(sig);
}

int
psb_guard_init(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	/* NODEFER: the handler leaves by siglongjmp without restoring the mask */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, &prev_segv) != 0 || sigaction(SIGBUS, &sa, &prev_bus) != 0)
		return -errno;
	return 0;
}
