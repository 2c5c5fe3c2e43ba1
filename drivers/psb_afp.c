/* af_packet and tap ports: the kernel's counts of packet sockets; descriptors to wait on. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sys/ioctl.h>

#include <linux/if_packet.h>
#include <linux/if_tun.h>

#include "psb_afp.h"

#define MAX_INODES	64

/* Inodes of the packet sockets bound to ifindex, from /proc/net/packet (this namespace). */
static int
bound_inodes(int ifindex, unsigned long *ino, int max, char *err, size_t errlen)
{
	char line[256];
	unsigned long inode;
	int iface, n = 0;
	FILE *f = fopen("/proc/net/packet", "r");

	if (f == NULL) {
		n = -errno;
		snprintf(err, errlen, "/proc/net/packet: %s", strerror(-n));
		return n;
	}
	/* sk RefCnt Type Proto Iface R Rmem User Inode; the first line names them */
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "%*x %*d %*d %*x %d %*d %*u %*u %lu", &iface, &inode) == 2 &&
		    iface == ifindex && n < max)
			ino[n++] = inode;
	fclose(f);
	return n;
}

/* This process's descriptors linked to want (a prefix when it ends in '*') that keep takes. */
static int
fds_linked(const char *want, int (*keep)(int fd, const void *arg), const void *arg, int *fd,
		int max)
{
	size_t wl = strlen(want);
	char link[64], path[PATH_MAX];
	struct dirent *d;
	int n = 0, f, prefix = wl > 0 && want[wl - 1] == '*';
	ssize_t len;
	DIR *dir = opendir("/proc/self/fd");

	if (dir == NULL)
		return -errno;
	while ((d = readdir(dir)) != NULL && n < max) {
		f = atoi(d->d_name);
		if (d->d_name[0] < '0' || d->d_name[0] > '9' || f == dirfd(dir))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", d->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = '\0';
		if (prefix ? strncmp(link, want, wl - 1) != 0 : strcmp(link, want) != 0)
			continue;
		if (keep(f, arg))
			fd[n++] = f;
	}
	closedir(dir);
	return n;
}

/* The inodes a packet socket's descriptor must have (psb_afp_stats_open). */
struct inodes {
	const unsigned long *ino;
	int n;
};

static int
socket_of(int f, const void *arg)
{
	const struct inodes *in = arg;
	char link[64], path[32];
	unsigned long fd_ino;
	ssize_t len;
	int i;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", f);
	len = readlink(path, link, sizeof(link) - 1);
	if (len <= 0)
		return 0;
	link[len] = '\0';
	if (sscanf(link, "socket:[%lu]", &fd_ino) != 1)
		return 0;
	for (i = 0; i < in->n; i++)
		if (in->ino[i] == fd_ino)
			return 1;
	return 0;
}

int
psb_afp_stats_open(struct psb_afp_stats *s, const char *ifname, char *err, size_t errlen)
{
	unsigned long ino[MAX_INODES];
	struct inodes in = { ino, 0 };
	int ifindex, n;

	memset(s, 0, sizeof(*s));
	ifindex = (int)if_nametoindex(ifname);
	if (ifindex == 0) {
		snprintf(err, errlen, "interface %s: %s", ifname, strerror(errno));
		return -ENODEV;
	}
	n = bound_inodes(ifindex, ino, MAX_INODES, err, errlen);
	if (n < 0)
		return n;
	in.n = n;
	n = fds_linked("socket:*", socket_of, &in, s->fd, PSB_AFP_MAX_SOCKS);
	if (n < 0) {
		snprintf(err, errlen, "/proc/self/fd: %s", strerror(-n));
		return n;
	}
	s->nfd = n;
	if (s->nfd == 0) {
		snprintf(err, errlen, "interface %s: this process has no packet socket bound to it",
			ifname);
		return -ENOENT;
	}
	return 0;
}

int
psb_afp_stats_update(struct psb_afp_stats *s)
{
	struct tpacket_stats st;
	socklen_t len;
	int i, rc = 0;

	for (i = 0; i < s->nfd; i++) {
		len = sizeof(st);
		if (getsockopt(s->fd[i], SOL_PACKET, PACKET_STATISTICS, &st, &len) != 0) {
			rc = -errno;
			continue;
		}
		/* the kernel's tp_packets already includes the frames it dropped */
		__atomic_fetch_add(&s->packets, st.tp_packets, __ATOMIC_RELAXED);
		__atomic_fetch_add(&s->drops, st.tp_drops, __ATOMIC_RELAXED);
	}
	return rc;
}

void
psb_afp_stats_clear(struct psb_afp_stats *s)
{
	psb_afp_stats_update(s);
	__atomic_store_n(&s->packets, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->drops, 0, __ATOMIC_RELAXED);
}

static int
tap_of(int f, const void *ifname)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	/* a queue the PMD detached (its keep-alive) answers too, but never wakes */
	return ioctl(f, TUNGETIFF, &ifr) == 0 && strcmp(ifr.ifr_name, ifname) == 0;
}

int
psb_tap_fds(const char *ifname, int *fd, int max)
{
	return fds_linked("/dev/net/tun", tap_of, ifname, fd, max);
}

static int
xdp_socket(int f, const void *arg)
{
	socklen_t len = sizeof(int);
	int dom = 0;

	(void)arg;
	return getsockopt(f, SOL_SOCKET, SO_DOMAIN, &dom, &len) == 0 && dom == AF_XDP;
}

int
psb_xdp_fds(int *fd, int max)
{
	return fds_linked("socket:*", xdp_socket, NULL, fd, max);
}
