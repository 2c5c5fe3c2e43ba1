/* Bring-up that touches the host: kernel interfaces recorded, changed, and put back. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_common.h>

#include "psb.h"
#include "psb_cli.h"
#include "psb_ethdev.h"
#include "psb_host.h"

#define PSB_MTU_DEFAULT	9000	/* where setting it disturbs nothing: memif, pcap, ring, null */

/*
 * Kernel interfaces of this process, kept where exit handlers and crash handlers find
 * them. Restoring makes system calls only.
 */
static struct psb_ifstate g_ifs[PSB_MAX_PORTS];

static void
ifaces_put_back(void)
{
	unsigned int i;

	for (i = 0; i < PSB_MAX_PORTS; i++)
		psb_ifstate_restore(&g_ifs[i]);
}

static void
on_crash(int sig)
{
	/* what cannot be put back keeps its record, for the next psb to start */
	ifaces_put_back();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void
note_line(void *arg, const char *line)
{
	RTE_SET_USED(arg);
	fprintf(stderr, "psb: %s\n", line);
}

void
psb_host_prepare(struct psb_app *app)
{
	static const int crash_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
	char dir[PATH_MAX];
	struct sigaction sa;
	unsigned int i;

	atexit(ifaces_put_back);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_crash;
	sa.sa_flags = SA_RESETHAND | SA_NODEFER;
	for (i = 0; i < RTE_DIM(crash_sigs); i++)
		sigaction(crash_sigs[i], &sa, NULL);
	/* what a psb that was killed changed is undone before this one looks at anything */
	if (psb_host_dir("ifstate", dir, sizeof(dir)) == 0)
		psb_ifstate_recover(dir, note_line, app);
}

uint16_t
psb_host_port_mtu(struct psb_app *app, unsigned int i, unsigned int *flags)
{
	const struct psb_port_spec *p = &app->specs[i];
	struct psb_ifstate *st = &g_ifs[i];
	struct psb_proc holder;
	char dir[PATH_MAX];
	uint16_t want;
	int rc;

	*flags = 0;
	if (!psb_port_is_kernel(p))
		return app->mtu_want != 0 ? app->mtu_want : PSB_MTU_DEFAULT;
	rc = psb_if_read(p->ifname, st);
	if (rc != 0)
		psb_die("port '%s': interface %s: %s", p->spec, p->ifname,
			rc == -ENODEV ? "no such device" : strerror(-rc));
	/* its own MTU unless one was asked for: psb sends no larger frames, changes nothing */
	if (app->mtu_want != 0) {
		want = app->mtu_want;
	} else {
		want = st->mtu > PSB_MTU_DEFAULT ? PSB_MTU_DEFAULT : (uint16_t)st->mtu;
		*flags |= PSB_ETHDEV_KEEP_MTU;
	}
	/* psb turns promiscuity on, and the MTU if asked: write down what to put back first */
	rc = psb_host_dir("ifstate", dir, sizeof(dir));
	if (rc == 0)
		rc = psb_ifstate_save(dir, st, &holder);
	if (rc == -EBUSY && holder.pid != (long)getpid())
		PSB_LOG(app, "interface %s: psb pid %ld changed it first and puts it back when it "
			"exits", p->ifname, holder.pid);
	else if (rc != 0 && rc != -EBUSY)
		psb_die("port '%s': cannot record interface %s before changing it (%s): %s",
			p->spec, p->ifname, dir, strerror(-rc));
	return want;
}

void
psb_host_restore(struct psb_app *app)
{
	unsigned int i;
	int rc;

	for (i = 0; i < app->nports; i++) {
		if (g_ifs[i].path[0] == '\0')
			continue;
		rc = psb_ifstate_restore(&g_ifs[i]);
		if (rc < 0)
			PSB_LOG(app, "interface %s: cannot put it back as it was: %s",
				app->specs[i].ifname, strerror(-rc));
		else if (rc != 0)
			PSB_DBG(app, 1, "interface %s: put back as psb found it (MTU %d%s)",
				app->specs[i].ifname, g_ifs[i].mtu,
				g_ifs[i].promisc ? ", promiscuous" : ", not promiscuous");
	}
}
