/* Bursts on ports whose memory a peer shares: a fault in one is caught (see psb_guard.h). */
#include <errno.h>
#include <string.h>

#include "psb_guard.h"

__thread struct psb_guard psb_guard;

static void
on_fault(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	if (psb_guard.armed) {
		psb_guard.armed = 0;
		siglongjmp(psb_guard.env, 1);
	}
	/* not inside a guarded burst: the default action, as if there were no handler */
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
	if (sigaction(SIGSEGV, &sa, NULL) != 0 || sigaction(SIGBUS, &sa, NULL) != 0)
		return -errno;
	return 0;
}
