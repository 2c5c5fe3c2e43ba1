/*
 * Bring-up that touches the host: what can be checked before the EAL starts, the EAL's own
 * log kept to quote when a step fails, kernel interfaces recorded and put back, memif
 * socket files recorded so that a killed psb's are cleaned up by the next one.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_log.h>

#include "psb_app.h"
#include "psb_cli.h"
#include "psb_clock.h"
#include "psb_ctl.h"
#include "psb_ethdev.h"
#include "psb_host.h"

/*
 * Each of an af_packet port's two rings: twice the default window (pushpull.window, 32 MiB),
 * so that a worker's whole window, or the answers to one, waits in the ring while the
 * process is off its core; with 16 MiB a 1 MB PUSH_PULL of one worker and one server on two
 * shared cores lost window tails to full rings and waited for timeouts.
 */
#define AFP_RING_BYTES	(64ull << 20)
#define PSB_MTU_DEFAULT	9000	/* where setting it disturbs nothing: memif, pcap, ring, null */

/*
 * The log: written to stderr as always, and the last error lines of the EAL and the
 * drivers kept, so that a failed step quotes its real cause rather than "did not come up".
 */
#define LOG_KEEP	32
#define LOG_LINE	320

static struct {
	pthread_mutex_t lock;
	char line[LOG_KEEP][LOG_LINE];
	uint64_t seq;			/* error lines kept so far */
	char part[LOG_LINE];		/* a line not ended yet */
	size_t plen;
	int part_err;
	int stamp;			/* --log-time: each line begins with the time of day */
	int mid_line;			/* stderr is inside a line */
} g_log = { .lock = PTHREAD_MUTEX_INITIALIZER };

void
psb_log_stamp(int on)
{
	g_log.stamp = on;
}

/* stderr gets buf[0..n), each line begun with "HH:MM:SS.mmm " under --log-time. */
static void
log_out(const char *buf, size_t n)
{
	char ts[24];
	struct timeval tv;
	struct tm tm;
	size_t off = 0, len;

	while (off < n) {
		const char *nl = memchr(buf + off, '\n', n - off);

		len = nl != NULL ? (size_t)(nl - (buf + off)) + 1 : n - off;
		if (g_log.stamp && !g_log.mid_line) {
			gettimeofday(&tv, NULL);
			localtime_r(&tv.tv_sec, &tm);
			snprintf(ts, sizeof(ts), "%02u:%02u:%02u.%03u ", (unsigned int)tm.tm_hour % 24,
				 (unsigned int)tm.tm_min % 60, (unsigned int)tm.tm_sec % 61,
				 (unsigned int)(tv.tv_usec / 1000) % 1000);
			fputs(ts, stderr);
		}
		if (fwrite(buf + off, 1, len, stderr) != len)
			clearerr(stderr);
		g_log.mid_line = nl == NULL;
		off += len;
	}
}

static void
log_keep(const char *s, size_t n)
{
	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
		n--;
	if (n >= LOG_LINE)
		n = LOG_LINE - 1;
	memcpy(g_log.line[g_log.seq % LOG_KEEP], s, n);
	g_log.line[g_log.seq % LOG_KEEP][n] = '\0';
	g_log.seq++;
}

static ssize_t
log_write(void *cookie, const char *buf, size_t size)
{
	/* rte_vlog sets the level and type of the message it is writing, per thread */
	int err = rte_log_cur_msg_loglevel() <= (int)RTE_LOG_ERR &&
		!psb_log_own(rte_log_cur_msg_logtype());
	size_t off = 0, n;

	RTE_SET_USED(cookie);
	pthread_mutex_lock(&g_log.lock);
	log_out(buf, size);
	while (off < size) {
		const char *nl = memchr(buf + off, '\n', size - off);

		n = nl != NULL ? (size_t)(nl - (buf + off)) + 1 : size - off;
		if (g_log.plen + n < sizeof(g_log.part)) {
			memcpy(g_log.part + g_log.plen, buf + off, n);
			g_log.plen += n;
		}
		g_log.part_err |= err;
		if (nl != NULL) {
			if (g_log.part_err)
				log_keep(g_log.part, g_log.plen);
			g_log.plen = 0;
			g_log.part_err = 0;
		}
		off += n;
	}
	pthread_mutex_unlock(&g_log.lock);
	return (ssize_t)size;
}

void
psb_log_capture(void)
{
	static const cookie_io_functions_t io = { .write = log_write };
	FILE *f = fopencookie(NULL, "w", io);

	if (f != NULL && rte_openlog_stream(f) != 0)
		fclose(f);
}

uint64_t
psb_log_mark(void)
{
	uint64_t s;

	pthread_mutex_lock(&g_log.lock);
	s = g_log.seq;
	pthread_mutex_unlock(&g_log.lock);
	return s;
}

/* Generic lines that follow the real cause and say less. */
static int
log_generic(const char *l)
{
	static const char *const generic[] = {
		"FATAL:", "failed to initialize", "probe failed", "Cannot init config",
		"Invalid 'command line' arguments", "Error - exiting with code",
	};
	size_t i;

	for (i = 0; i < RTE_DIM(generic); i++)
		if (strstr(l, generic[i]) != NULL)
			return 1;
	return 0;
}

int
psb_log_quote(uint64_t mark, const char *about, char *out, size_t len)
{
	uint64_t s;

	out[0] = '\0';
	pthread_mutex_lock(&g_log.lock);
	if (g_log.seq > LOG_KEEP && mark < g_log.seq - LOG_KEEP)
		mark = g_log.seq - LOG_KEEP;
	/* the first specific error since mark; one that names what failed if there is one */
	for (s = mark; s < g_log.seq; s++) {
		const char *l = g_log.line[s % LOG_KEEP];

		if (log_generic(l))
			continue;
		if (about != NULL && strstr(l, about) != NULL) {
			snprintf(out, len, "%s", l);
			break;
		}
		if (out[0] == '\0')
			snprintf(out, len, "%s", l);
	}
	pthread_mutex_unlock(&g_log.lock);
	return out[0] != '\0' ? 0 : -ENOENT;
}

int
psb_eal_init(int argc, char **argv, char *err, size_t len)
{
	uint64_t mark;
	int rc, out, null;

	mark = psb_log_mark();
	/*
	 * On a bad argument the EAL prints its usage, a page about options psb chose for it, to
	 * stdout, where it would bury the one line that says what went wrong.
	 */
	fflush(stdout);
	out = dup(STDOUT_FILENO);
	null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (out >= 0 && null >= 0)
		dup2(null, STDOUT_FILENO);
	rc = rte_eal_init(argc, argv);
	fflush(stdout);
	if (out >= 0 && null >= 0)
		dup2(out, STDOUT_FILENO);
	if (out >= 0)
		close(out);
	if (null >= 0)
		close(null);
	/* the EAL applied its --log-level values (psb's among them) */
	psb_log_sync();
	if (rc >= 0)
		return 0;
	/* rte_errno is not always set ("Success"): the EAL's own line says what went wrong */
	if (psb_log_quote(mark, NULL, err, len) != 0)
		snprintf(err, len, "%s", rte_strerror(rte_errno));
	return rc;
}

/*
 * Kernel interfaces and memif sockets of this process, kept where exit handlers and crash
 * handlers find them. Restoring makes system calls only.
 */
static struct psb_ifstate g_ifs[PSB_MAX_PORTS];
static struct psb_sockrec g_socks[PSB_MAX_PORTS];

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
	PSB_WARN(host, "%s", line);
}

/*
 * A memif client's server: wait until its socket is there, not one a dead psb left, and, when
 * a psb made it, until that psb's port is started: a memif server turns away a client that
 * connects before, and DPDK's memif client does not try again (its link would stay down).
 * Never by connecting to it: a memif server takes a connection that says nothing badly.
 */
static void
wait_memif_server(struct psb_app *app, const struct psb_port_spec *p, const char *dir,
		int from_doc)
{
	uint64_t limit = app->connect_timeout_ns, t0 = psb_clock_ns(), waited = 0;
	char what[PATH_MAX + 96];
	int rc, said = 0;
	long pid = 0;

	for (;;) {
		rc = psb_sock_server(dir, p->sock_path, &pid);
		if (rc >= 0)
			return;		/* 0: a socket psb cannot judge; try it, as ever */
		if (rc == -ENOTSOCK)
			psb_die("port '%s': %s is not a socket", p->spec, p->sock_path);
		if (limit != 0 && waited >= limit)
			break;
		if (!said && waited >= 1000000000ull) {
			said = 1;
			if (rc == -EINPROGRESS)
				snprintf(what, sizeof(what), "psb pid %ld, whose memif server at %s "
					 "has not started its port yet", pid, p->sock_path);
			else
				snprintf(what, sizeof(what), "a memif server at %s", p->sock_path);
			if (limit != 0)
				PSB_NOTICE(port, "waiting for %s (at most %.1f s, --connect-timeout)",
					what, limit / 1e9);
			else
				PSB_NOTICE(port, "waiting for %s", what);
		}
		usleep(100000);
		waited = psb_clock_ns() - t0;
	}
	if (rc == -EINPROGRESS)
		psb_run_fail_early(app, from_doc, "port '%s': the memif server at %s, psb pid %ld, "
			"did not start its port in %.1f s (--connect-timeout): see what it says",
			p->spec, p->sock_path, pid, waited / 1e9);
	if (rc == -ESTALE)
		psb_run_fail_early(app, from_doc, "port '%s': no memif server at %s after %.1f s "
			"(--connect-timeout): the socket file is left from psb pid %ld, which is "
			"gone; start the server side again", p->spec, p->sock_path, waited / 1e9,
			pid);
	psb_run_fail_early(app, from_doc, "port '%s': no memif server at %s after %.1f s "
		"(--connect-timeout; %s): start the server side first", p->spec, p->sock_path,
		waited / 1e9, strerror(-rc));
}

/*
 * An af_packet port's rings, sized before the EAL opens it: frames for the MTU psb will use
 * there (the interface's, up to 9000, or --mtu), and AFP_RING_BYTES of them each way.
 */
static void
afp_ring(struct psb_app *app, struct psb_port_spec *p)
{
	struct psb_ifstate st;
	unsigned int mtu, frames;
	char err[256];
	int rc = psb_if_read(p->ifname, &st);

	if (rc != 0)
		psb_die("port '%s': interface %s: %s", p->spec, p->ifname, strerror(-rc));
	mtu = app->mtu_want != 0 ? app->mtu_want :
		(st.mtu > PSB_MTU_DEFAULT ? PSB_MTU_DEFAULT : (unsigned int)st.mtu);
	if (psb_port_afp_ring(p, mtu, AFP_RING_BYTES, &frames, err, sizeof(err)) != 0)
		psb_die("%s", err);
	PSB_INFO(port, "port '%s': kernel rings of %u frames each way (MTU %u)", p->spec, frames,
		mtu);
}

#ifndef AF_XDP
#define AF_XDP	44
#endif

/* Whether this kernel makes sockets of family af (0), or why not (-errno). */
static int
sock_family(int af, int type)
{
	int fd = socket(af, type, 0), rc;

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	rc = -errno;
	return rc;
}

/*
 * The port kinds backed by the host's kernel, as this host offers them, in one line at start
 * when the node uses one: which carry psb's traffic fast here and which do not.
 */
static void
port_kinds_said(const struct psb_app *app)
{
	int xdp = sock_family(AF_XDP, SOCK_RAW), afp = sock_family(AF_PACKET, SOCK_RAW);
	int tun = access("/dev/net/tun", R_OK | W_OK), vhost = access("/dev/vhost-net", R_OK | W_OK);
	char xdp_why[96];
	unsigned int i;

	for (i = 0; i < app->nports; i++)
		if (psb_port_is_kernel(&app->specs[i]))
			break;
	if (i == app->nports)
		return;
	if (xdp == 0)
		snprintf(xdp_why, sizeof(xdp_why), "fast: af_xdp (the driver's frames, no socket "
			"buffers; MTU %d at most on a veth)", PSB_XDP_MTU_VETH);
	else
		snprintf(xdp_why, sizeof(xdp_why), "not here: af_xdp (%s)", strerror(-xdp));
	PSB_INFO(port, "this host's kernel ports: %s; %s: af_packet (a copy each way through "
		"the kernel's rings); slow: tap%s (a copy and a system call per burst)%s%s",
		xdp_why, afp == 0 ? "slower" : "not here", tun == 0 ? "" : " (no /dev/net/tun)",
		vhost == 0 ? ", virtio_user (the kernel's vhost-net)" : "",
		vhost == 0 ? "" : "; not here: virtio_user (no /dev/vhost-net)");
}

/*
 * An af_xdp port that did not come up: the kernel's reason in psb's words, and what to do.
 * quote is the driver's line (may be empty). Dies.
 */
void
psb_host_xdp_failed(struct psb_app *app, unsigned int i, const char *err, const char *quote)
{
	const struct psb_port_spec *p = &app->specs[i];
	struct psb_ifstate st;
	int mtu = psb_if_read(p->ifname, &st) == 0 ? st.mtu : 0;

	/* libxdp says why on stderr, past psb's capture of the drivers' lines */
	if (mtu > PSB_XDP_MTU_VETH)
		psb_die("port '%s': %s: the kernel would not take an AF_XDP socket on %s, whose MTU "
			"%d is more than XDP without multi-buffer takes (frames of one page: %d on "
			"a veth). Lower it, and on a veth its peer's too (ip link set DEV mtu %d)",
			p->spec, err, p->ifname, mtu, PSB_XDP_MTU_VETH, PSB_XDP_MTU_VETH);
	if (strstr(quote, "not permitted") != NULL)
		psb_die("port '%s': %s: %s (AF_XDP needs root, or CAP_NET_ADMIN, CAP_NET_RAW and "
			"CAP_BPF)", p->spec, err, quote);
	psb_die("port '%s': %s%s%s. The kernel's reason is in libxdp's lines above; on a veth, "
		"XDP also refuses a peer whose MTU is more than %d (ip link set PEER mtu %d)",
		p->spec, err, quote[0] != '\0' ? ": " : "", quote, PSB_XDP_MTU_VETH,
		PSB_XDP_MTU_VETH);
}

/*
 * The shared-memory slots' socket: its directory made, a stale socket of a killed psb
 * removed. A socket another live psb serves (the same address on this host, in another
 * network namespace) leaves this server without slots, said once: its clients use UDP.
 */
static void
shm_prepare(struct psb_app *app, const char *mdir, const struct psb_port_spec *p)
{
	char dir[PATH_MAX], msg[512];
	int rc;

	if (getenv("PSB_SHM_DIR") == NULL)
		rc = psb_host_dir("shm", dir, sizeof(dir));
	else
		rc = mkdir(getenv("PSB_SHM_DIR"), 0700) != 0 && errno != EEXIST ? -errno : 0;
	/* what servers killed here left (their locks free) goes first */
	if (rc == 0 && psb_shm_dir(dir, sizeof(dir)) == 0)
		psb_shm_sweep(dir);
	if (rc != 0) {
		snprintf(msg, sizeof(msg), "cannot make the directory of %s: %s", p->sock_path,
			 strerror(-rc));
	} else {
		/*
		 * The socket's lock, held for psb's life (the kernel lets go when it dies): of
		 * two servers of one address starting at once, one takes the slots, and the other
		 * does not bind a socket the first is about to.
		 */
		snprintf(app->shm_lock, sizeof(app->shm_lock), "%s.lock", p->sock_path);
		rc = psb_host_lock(app->shm_lock, 0);
		if (rc == -ETIMEDOUT) {
			snprintf(msg, sizeof(msg), "another psb serves %.200s", p->sock_path);
			app->shm_lock[0] = '\0';
		} else if (rc < 0) {
			snprintf(msg, sizeof(msg), "cannot lock %.200s: %s", app->shm_lock,
				 strerror(-rc));
			app->shm_lock[0] = '\0';
		} else {
			rc = psb_sock_claim(mdir, p->sock_path, msg, sizeof(msg));
		}
	}
	if (rc != 0) {
		PSB_NOTICE(port, "shared-memory clients: none (node.shm_clients): %s; clients on "
			   "this host use UDP", msg);
		app->nports = (uint16_t)(app->nports - app->nshm);
		app->nshm = 0;
		return;
	}
	if (msg[0] != '\0')
		PSB_INFO(port, "shared-memory clients: %s", msg);
	PSB_INFO(port, "shared-memory clients: %u slots at %s (node.shm_clients)", app->nshm,
		 p->sock_path);
}

void
psb_host_prepare(struct psb_app *app, int from_doc)
{
	static const int crash_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
	char dir[PATH_MAX], mdir[PATH_MAX], msg[512];
	struct sigaction sa;
	unsigned int i;
	int rc;

	atexit(ifaces_put_back);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_crash;
	sa.sa_flags = SA_RESETHAND | SA_NODEFER;
	for (i = 0; i < RTE_DIM(crash_sigs); i++)
		sigaction(crash_sigs[i], &sa, NULL);
	/* what a psb that was killed changed is undone before this one looks at anything */
	if (psb_host_dir("ifstate", dir, sizeof(dir)) == 0)
		psb_ifstate_recover(dir, note_line, app);
	/* without a directory for records no socket file counts as psb's: none is removed */
	if (psb_host_dir("memif", mdir, sizeof(mdir)) != 0)
		mdir[0] = '\0';
	psb_sock_sweep(mdir);
	port_kinds_said(app);
	for (i = 0; i < app->nports; i++) {
		const struct psb_port_spec *p = &app->specs[i];

		if (p->kind == PSB_PORT_VIRTIO_USER && access("/dev/vhost-net", R_OK | W_OK) != 0)
			psb_die("port '%s': needs /dev/vhost-net, the kernel's vhost_net module, which "
				"this host does not offer (%s); tap:%s passes the same frames through "
				"the tap driver", p->spec, strerror(errno), p->ifname);
		if (p->kind == PSB_PORT_AF_XDP && (rc = sock_family(AF_XDP, SOCK_RAW)) != 0)
			psb_die("port '%s': this host makes no AF_XDP sockets (%s)%s; af_packet:%s "
				"reaches the same interface", p->spec, strerror(-rc),
				rc == -EAFNOSUPPORT ? ": the kernel was built without "
				"CONFIG_XDP_SOCKETS" : rc == -EPERM ? ": it needs root" : "",
				p->ifname);
		if ((p->kind == PSB_PORT_AF_PACKET || p->kind == PSB_PORT_AF_XDP) &&
		    if_nametoindex(p->ifname) == 0)
			psb_die("port '%s': no such device: there is no network interface %s here "
				"(ip link lists them)", p->spec, p->ifname);
		if (p->kind == PSB_PORT_AF_PACKET)
			afp_ring(app, &app->specs[i]);
		if (p->kind == PSB_PORT_MEMIF && !p->memif_server)
			wait_memif_server(app, p, mdir, from_doc);
		if (p->kind != PSB_PORT_MEMIF || !p->memif_server || p->shm_slot > 1)
			continue;
		if (p->shm_slot == 1) {
			shm_prepare(app, mdir, p);
			break;		/* the slots are the last ports */
		}
		rc = psb_sock_claim(mdir, p->sock_path, msg, sizeof(msg));
		if (rc != 0)
			psb_die("port '%s': %s", p->spec, msg[0] != '\0' ? msg : strerror(-rc));
		if (msg[0] != '\0')
			PSB_INFO(port, "port '%s': %s", p->spec, msg);
	}
}

/*
 * The CPUs this process claimed (it alone polled them when it started) and where: auto
 * idle looks every second whether another psb came to share one (psb_host_cpus_watch).
 */
static struct {
	char dir[PATH_MAX];
	int ncpu;
	int cpu[16];
	uint64_t next_ns;
	unsigned int shared0;	/* CPUs shared at start */
} g_cpus;

/* cpu, which another psb holds (holder), is polled by this process too: said and counted. */
static void
cpu_shared(struct psb_app *app, const char *dir, int cpu, long holder)
{
	app->idle_host.shared_cpus++;
	g_cpus.shared0++;
	if (holder != 0)
		app->idle_host.other_pid = holder;
	if (psb_cpu_share(dir, cpu) != 0)
		PSB_DEBUG(host, "cannot tell the holder of CPU %d that it is shared", cpu);
}

static void
cpu_owned(const char *dir, int cpu)
{
	if (g_cpus.ncpu == 0)
		snprintf(g_cpus.dir, sizeof(g_cpus.dir), "%s", dir);
	if (g_cpus.ncpu < (int)RTE_DIM(g_cpus.cpu))
		g_cpus.cpu[g_cpus.ncpu++] = cpu;
}

void
psb_host_cpus_watch(struct psb_app *app, uint64_t now)
{
	struct psb_idle_host h = app->idle_host;
	char why[160];
	int i, on;

	if (app->idle_mode != PSB_IDLE_AUTO || g_cpus.ncpu == 0 || now < g_cpus.next_ns)
		return;
	g_cpus.next_ns = now + 1000000000;
	h.shared_cpus = g_cpus.shared0;
	for (i = 0; i < g_cpus.ncpu; i++)
		if (psb_cpu_shared(g_cpus.dir, g_cpus.cpu[i]) == 1)
			h.shared_cpus++;
	on = psb_idle_choose(PSB_IDLE_AUTO, &h, why, sizeof(why)) == PSB_IDLE_SLEEP;
	if (on == app->idle_on)
		return;
	app->idle_on = on;
	PSB_NOTICE(main, "idle: %s from now (%s)", on ? "sleep" : "poll", why);
}

void
psb_host_cpus(struct psb_app *app, const char **lcores, char *buf, size_t len)
{
	char dir[PATH_MAX];
	cpu_set_t set;
	long holder;
	int cpu = 0, rc;

	if (psb_host_dir("cpus", dir, sizeof(dir)) != 0)
		dir[0] = '\0';
	/*
	 * A scheduler carries control traffic only and sleeps (psb_idle_choose): it claims no
	 * CPU, so that the servers and workers that poll each find one of their own.
	 */
	app->idle_host.control_only = app->node_role == PSB_NODE_SCHEDULER;
	if (app->idle_host.control_only)
		dir[0] = '\0';
	if (*lcores == NULL || (*lcores)[0] == '\0') {
		if (sched_getaffinity(0, sizeof(set), &set) != 0) {
			CPU_ZERO(&set);
			CPU_SET(0, &set);
		}
		rc = dir[0] != '\0' ? psb_cpu_pick(dir, &set, &cpu) : -ENOENT;
		if (rc != 0 && rc != -EBUSY)
			for (cpu = 0; cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &set); cpu++)
				;
		snprintf(buf, len, "%d", cpu);
		*lcores = buf;
		if (app->idle_host.control_only)
			PSB_DEBUG(host, "lcore on CPU %d, claimed by none: a scheduler sleeps", cpu);
		else if (rc == 0) {
			cpu_owned(dir, cpu);
			PSB_DEBUG(host, "lcore on CPU %d: no other psb polls it (-l chooses)", cpu);
		} else if (rc == -EBUSY) {
			(void)psb_cpu_claim(dir, cpu, &holder);
			cpu_shared(app, dir, cpu, holder);
			PSB_NOTICE(host, "lcore on CPU %d, which another psb polls too: other psb "
				"processes poll every CPU this one may use (-l chooses)", cpu);
		} else
			PSB_NOTICE(host, "lcore on CPU %d: cannot tell which CPUs other psb processes "
				"poll (%s)", cpu, strerror(-rc));
		return;
	}
	/* forms psb_cpu_list does not read are the operator's to place: nothing claimed */
	if (dir[0] == '\0' || psb_cpu_list(*lcores, &set) != 0)
		return;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		rc = psb_cpu_claim(dir, cpu, &holder);
		if (rc == 0) {
			cpu_owned(dir, cpu);
		} else if (rc == -EBUSY) {
			cpu_shared(app, dir, cpu, holder);
			PSB_NOTICE(host, "CPU %d (-l %s) is polled by another psb too (pid %ld)", cpu,
				*lcores, holder);
		}
	}
}

int
psb_host_huge_lock(struct psb_app *app, int no_huge)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	int fd;

	if (no_huge || psb_host_dir("locks", dir, sizeof(dir)) != 0)
		return -1;
	snprintf(path, sizeof(path), "%s/hugepages", dir);
	fd = psb_host_lock(path, 30000);
	if (fd == -ETIMEDOUT)
		PSB_NOTICE(host, "another psb has held %s for 30 s: looking at free hugepages without "
			"waiting for it", path);
	return fd;
}

void
psb_host_ports_up(struct psb_app *app)
{
	char dir[PATH_MAX];
	unsigned int i;

	if (psb_host_dir("memif", dir, sizeof(dir)) != 0)
		return;
	for (i = 0; i < app->nports; i++)
		if (app->specs[i].kind == PSB_PORT_MEMIF && app->specs[i].memif_server &&
		    psb_sock_record(dir, app->specs[i].sock_path, &g_socks[i]) != 0)
			PSB_DEBUG(port, "port '%s': cannot record its socket file",
				app->specs[i].spec);
}

void
psb_host_memif_wait(struct psb_app *app, unsigned int i, int from_doc)
{
	char dir[PATH_MAX];

	if (psb_host_dir("memif", dir, sizeof(dir)) != 0)
		dir[0] = '\0';
	wait_memif_server(app, &app->specs[i], dir, from_doc);
}

void
psb_host_memif_ready(struct psb_app *app)
{
	unsigned int i;

	for (i = 0; i < app->nports; i++)
		if (app->specs[i].kind == PSB_PORT_MEMIF && app->specs[i].memif_server &&
		    g_socks[i].path[0] != '\0' && psb_sock_ready(&g_socks[i]) != 0)
			PSB_DEBUG(port, "port '%s': cannot record its socket file as ready",
				app->specs[i].spec);
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
		PSB_NOTICE(host, "interface %s: psb pid %ld changed it first and puts it back when it "
			"exits", p->ifname, holder.pid);
	else if (rc != 0 && rc != -EBUSY)
		psb_die("port '%s': cannot record interface %s before changing it (%s): %s",
			p->spec, p->ifname, dir, strerror(-rc));
	if (p->kind == PSB_PORT_AF_XDP)
		*flags |= PSB_ETHDEV_XDP;
	if (p->kind == PSB_PORT_AF_PACKET) {
		/*
		 * Its frames were sized for want (afp_ring). The driver's own MTU call would
		 * refuse more than 1500 whatever its frames hold: psb sets the interface's.
		 */
		if (!(*flags & PSB_ETHDEV_KEEP_MTU) && want != st->mtu &&
		    (rc = psb_if_set_mtu(p->ifname, want)) != 0)
			psb_die("port '%s': cannot set the MTU of %s to %u: %s", p->spec, p->ifname,
				want, strerror(-rc));
		*flags |= PSB_ETHDEV_KEEP_MTU | PSB_ETHDEV_FRAMES_SIZED;
	}
	return want;
}

void
psb_host_restore(struct psb_app *app)
{
	unsigned int i;
	int rc;

	for (i = 0; i < app->nports; i++) {
		psb_sock_forget(&g_socks[i]);	/* main unlinks the socket file itself */
		if (g_ifs[i].path[0] == '\0')
			continue;
		rc = psb_ifstate_restore(&g_ifs[i]);
		if (rc < 0)
			PSB_NOTICE(host, "interface %s: cannot put it back as it was: %s",
				app->specs[i].ifname, strerror(-rc));
		else if (rc != 0)
			PSB_DEBUG(host, "interface %s: put back as psb found it (MTU %d%s)",
				app->specs[i].ifname, g_ifs[i].mtu,
				g_ifs[i].promisc ? ", promiscuous" : ", not promiscuous");
	}
}
