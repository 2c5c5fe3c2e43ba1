/* Bursts on ports whose memory a peer shares: a fault in one is caught (see psb_guard.h). */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "psb_guard.h"

__thread struct psb_guard psb_guard;

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
