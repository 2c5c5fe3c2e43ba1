/* Port backends: map a psb port spec to a DPDK device, and build the EAL arguments. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "psb_cli.h"
#include "psb_port.h"
#include "psb_proto.h"

static int
is_pci_addr(const char *s)
{
	unsigned int dom, bus, dev, fn;
	char tail;

	return sscanf(s, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) == 4 ||
	       sscanf(s, "%x:%x.%x%c", &bus, &dev, &fn, &tail) == 3;
}

/* Split "a:b:c" into at most n fields in place; returns the field count. */
static int
split(char *s, char **f, int n)
{
	int k = 0;

	f[k++] = s;
	while (k < n && (s = strchr(s, ':')) != NULL) {
		*s++ = '\0';
		f[k++] = s;
	}
	return k;
}

static int
safe_name(const char *s)
{
	/* Device arguments are comma-separated: a comma or '=' would inject options. */
	return *s != '\0' && strpbrk(s, ",= \t\n") == NULL;
}

/* A kernel interface name: what the kernel takes, and a file name of psb's records. */
static int
ifname_check(const char *spec, const char *name, struct psb_port_spec *p, char *err,
		size_t errlen)
{
	if (strlen(name) >= sizeof(p->ifname) || strchr(name, '/') != NULL ||
	    strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return psb_fail(err, errlen, "port '%.40s': interface name must be 1 to %zu characters, "
			"without '/'", spec, sizeof(p->ifname) - 1);
	snprintf(p->ifname, sizeof(p->ifname), "%s", name);
	return 0;
}

/* Device arguments must fit whole: a cut one would name another file or drop options. */
static int
devargs_fit(int n, const struct psb_port_spec *p, char *err, size_t errlen)
{
	if (n < 0 || (size_t)n >= sizeof(p->devargs))
		return psb_fail(err, errlen, "port '%.40s...': device arguments too long (%d bytes, "
			"max %zu)", p->spec, n, sizeof(p->devargs) - 1);
	return 0;
}

/* The kinds backed by a kernel interface, KIND:IFNAME: the DPDK driver and its arguments. */
struct iface_kind {
	const char *name;
	enum psb_port_kind kind;
	const char *vdev;		/* the device's name, the port's index after it */
	const char *devargs;		/* after iface=IFNAME */
};

static const struct iface_kind iface_kinds[] = {
	{ "af_packet", PSB_PORT_AF_PACKET, "net_af_packet", ",qpairs=1" },
	{ "tap", PSB_PORT_TAP, "net_tap", "" },
	/* the kernel's vhost-net moves the frames: no copy through the tap driver's queues */
	{ "virtio_user", PSB_PORT_VIRTIO_USER, "net_virtio_user",
	  ",path=/dev/vhost-net,queues=1,queue_size=1024" },
};

static int
iface_parse(const struct iface_kind *k, char **f, int nf, int index, struct psb_port_spec *p,
		char *err, size_t errlen)
{
	int n;

	if (nf != 2 || f[1][0] == '\0')
		return psb_fail(err, errlen, "port '%s': expected %s:IFNAME", p->spec, k->name);
	if (!safe_name(f[1]))
		return psb_fail(err, errlen, "port '%s': interface name may not contain ',' '=' "
			"or spaces", p->spec);
	if (ifname_check(p->spec, f[1], p, err, errlen) != 0)
		return -EINVAL;
	p->kind = k->kind;
	snprintf(p->name, sizeof(p->name), "%s%d", k->vdev, index);
	n = snprintf(p->devargs, sizeof(p->devargs), "%s,iface=%s%s", p->name, f[1], k->devargs);
	return devargs_fit(n, p, err, errlen);
}

/*
 * af_xdp:IFNAME[:QUEUE]: DPDK's AF_XDP driver on one queue of a kernel interface (0 unless
 * given). The driver loads its own XDP program, which steers that queue's frames to psb.
 */
static int
xdp_parse(char **f, int nf, int index, struct psb_port_spec *p, char *err, size_t errlen)
{
	unsigned long q = 0;
	char *end;
	int n;

	if (nf < 2 || nf > 3 || f[1][0] == '\0')
		return psb_fail(err, errlen, "port '%s': expected af_xdp:IFNAME[:QUEUE]", p->spec);
	if (!safe_name(f[1]))
		return psb_fail(err, errlen, "port '%s': interface name may not contain ',' '=' "
			"or spaces", p->spec);
	if (ifname_check(p->spec, f[1], p, err, errlen) != 0)
		return -EINVAL;
	if (nf == 3) {
		errno = 0;
		q = strtoul(f[2], &end, 10);
		if (f[2][0] < '0' || f[2][0] > '9' || *end != '\0' || errno != 0 || q > 255)
			return psb_fail(err, errlen, "port '%s': af_xdp queue must be 0..255", p->spec);
	}
	p->kind = PSB_PORT_AF_XDP;
	p->queue = (unsigned int)q;
	snprintf(p->name, sizeof(p->name), "net_af_xdp%d", index);
	n = snprintf(p->devargs, sizeof(p->devargs), "%s,iface=%s,start_queue=%lu,queue_count=1",
		p->name, f[1], q);
	return devargs_fit(n, p, err, errlen);
}

int
psb_port_parse(const char *spec, int index, struct psb_port_spec *p, char *err, size_t errlen)
{
	char tmp[PSB_DEVARGS_LEN];
	char *f[5], *end;
	unsigned int i;
	int nf, n;
	long id;

	memset(p, 0, sizeof(*p));
	if (spec == NULL || *spec == '\0')
		return psb_fail(err, errlen, "empty port spec");
	if (strlen(spec) >= sizeof(tmp))
		return psb_fail(err, errlen, "port spec too long: %.40s...", spec);
	snprintf(p->spec, sizeof(p->spec), "%s", spec);
	snprintf(tmp, sizeof(tmp), "%s", spec);

	if (strncmp(spec, "pci:", 4) == 0 || is_pci_addr(spec)) {
		const char *addr = strncmp(spec, "pci:", 4) == 0 ? spec + 4 : spec;

		if (!is_pci_addr(addr))
			return psb_fail(err, errlen, "port '%s': expected a PCI address like 0000:03:00.0",
				spec);
		p->kind = PSB_PORT_PCI;
		snprintf(p->name, sizeof(p->name), "%.63s", addr);
		snprintf(p->devargs, sizeof(p->devargs), "%s", addr);
		return 0;
	}

	nf = split(tmp, f, 5);
	if (strcmp(f[0], "af_xdp") == 0)
		return xdp_parse(f, nf, index, p, err, errlen);
	if (strcmp(f[0], "memif") == 0) {
		if (nf < 3 || nf > 4 ||
		    (strcmp(f[1], "server") != 0 && strcmp(f[1], "client") != 0))
			return psb_fail(err, errlen, "port '%s': expected memif:server|client:SOCKET[:ID]",
				spec);
		if (f[2][0] != '/')
			return psb_fail(err, errlen, "port '%s': memif socket must be an absolute path", spec);
		if (!safe_name(f[2]))
			return psb_fail(err, errlen, "port '%s': memif socket path may not contain ',' '=' "
				"or spaces", spec);
		/* A longer path cannot be bound, and sock_path (cleaned up on exit) must hold it. */
		if (strlen(f[2]) >= sizeof(((struct sockaddr_un *)0)->sun_path))
			return psb_fail(err, errlen, "port '%.40s...': memif socket path too long (max %zu "
				"bytes)", spec, sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
		id = 0;
		if (nf == 4) {
			errno = 0;
			id = strtol(f[3], &end, 10);
			if (f[3][0] == '\0' || *end != '\0' || errno != 0 || id < 0 || id > 255)
				return psb_fail(err, errlen, "port '%s': memif id must be 0..255", spec);
		}
		p->kind = PSB_PORT_MEMIF;
		p->memif_server = strcmp(f[1], "server") == 0;
		snprintf(p->sock_path, sizeof(p->sock_path), "%s", f[2]);
		snprintf(p->name, sizeof(p->name), "net_memif%d", index);
		/*
		 * 9216-byte buffers carry a jumbo frame in one descriptor. The client
		 * side runs zero-copy: its mbufs are shared with the server, which
		 * saves the client both copies (the EAL then needs single-file
		 * segments, see psb_eal_build_argv).
		 */
		n = snprintf(p->devargs, sizeof(p->devargs),
			"%s,role=%s,socket=%s,socket-abstract=no,id=%ld,bsize=9216,rsize=11%s", p->name,
			f[1], f[2], id, p->memif_server ? "" : ",zero-copy=yes");
		return devargs_fit(n, p, err, errlen);
	}
	for (i = 0; i < sizeof(iface_kinds) / sizeof(iface_kinds[0]); i++)
		if (strcmp(f[0], iface_kinds[i].name) == 0)
			return iface_parse(&iface_kinds[i], f, nf, index, p, err, errlen);
	if (strcmp(f[0], "pcap") == 0) {
		int loop = nf == 4 && strcmp(f[3], "loop") == 0;

		/* pcap:IN.pcap:OUT.pcap:loop replays IN from memory without end (benchmarks) */
		if ((nf != 3 && !loop) || (f[1][0] == '\0' && f[2][0] == '\0') ||
		    (loop && f[1][0] == '\0'))
			return psb_fail(err, errlen, "port '%s': expected pcap:IN.pcap:OUT.pcap or "
					"pcap:IN.pcap:OUT.pcap:loop", spec);
		if ((f[1][0] != '\0' && !safe_name(f[1])) || (f[2][0] != '\0' && !safe_name(f[2])))
			return psb_fail(err, errlen, "port '%s': pcap file names may not contain ',' '=' "
				"or spaces", spec);
		p->kind = PSB_PORT_PCAP;
		snprintf(p->name, sizeof(p->name), "net_pcap%d", index);
		/* One call: appending piecewise ran past devargs when the first part was cut. */
		n = snprintf(p->devargs, sizeof(p->devargs), "%s%s%s%s%s%s", p->name,
			f[1][0] != '\0' ? ",rx_pcap=" : "", f[1],
			f[2][0] != '\0' ? ",tx_pcap=" : "", f[2], loop ? ",infinite_rx=1" : "");
		return devargs_fit(n, p, err, errlen);
	}
	/* null:sink takes every frame sent and receives none (plain null receives empty ones) */
	if (strcmp(f[0], "null") == 0 && nf == 2 && strcmp(f[1], "sink") == 0) {
		p->kind = PSB_PORT_NULL;
		snprintf(p->name, sizeof(p->name), "net_null%d", index);
		snprintf(p->devargs, sizeof(p->devargs), "%s,no-rx=1", p->name);
		return 0;
	}
	if (strcmp(f[0], "ring") == 0 || strcmp(f[0], "null") == 0) {
		if (nf != 1)
			return psb_fail(err, errlen, "port '%s': '%s' takes no arguments%s", spec,
					f[0], strcmp(f[0], "null") == 0 ? " but sink" : "");
		p->kind = strcmp(f[0], "ring") == 0 ? PSB_PORT_RING : PSB_PORT_NULL;
		snprintf(p->name, sizeof(p->name), "net_%.5s%d", f[0], index);
		snprintf(p->devargs, sizeof(p->devargs), "%s", p->name);
		return 0;
	}
	return psb_fail(err, errlen, "port '%s': unknown kind '%s' (expected pci, memif, af_packet, af_xdp, "
		"tap, virtio_user, pcap, ring or null)", spec, f[0]);
}

/*
 * The kernel puts a received frame at 66 bytes into its ring frame (TPACKET_V2's header and
 * address, aligned so that the IP header lands on 16 bytes); the driver copies what follows
 * into an mbuf whose room must hold the frame size less 32, and it finds frame i at i times
 * the frame size: a block must hold a whole number of frames with nothing left over. The
 * kernel takes a block as a power of two of pages, so a block of 28 frames of 9216 bytes
 * (63 pages) wastes one page in 64 for jumbo frames.
 */
#define AFP_MAC_OFF	66
#define AFP_DATA_SLACK	32

int
psb_port_afp_ring(struct psb_port_spec *p, unsigned int mtu, uint64_t ring_bytes,
		unsigned int *frames, char *err, size_t errlen)
{
	static const unsigned int sizes[][2] = {	/* frame size, frames per block */
		{ 2048, 2 }, { 4096, 1 }, { 8192, 1 }, { 9216, 28 },
	};
	unsigned int need = AFP_MAC_OFF + 14 + 4 + mtu, i, blocks, blocksz;
	size_t used = strlen(p->devargs);
	int n;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]) && sizes[i][0] < need; i++)
		;
	if (i == sizeof(sizes) / sizeof(sizes[0]) || sizes[i][0] - AFP_DATA_SLACK > PSB_MAX_FRAME)
		return psb_fail(err, errlen, "port '%s': MTU %u is more than psb receives (frames of "
			"at most %u bytes)", p->spec, mtu, PSB_MAX_FRAME);
	blocksz = sizes[i][0] * sizes[i][1];
	blocks = (unsigned int)(ring_bytes / blocksz);
	if (blocks == 0)
		blocks = 1;
	*frames = blocks * sizes[i][1];
	n = snprintf(p->devargs + used, sizeof(p->devargs) - used,
		",blocksz=%u,framesz=%u,framecnt=%u", blocksz, sizes[i][0], *frames);
	return devargs_fit((int)used + n, p, err, errlen);
}

/* <prefix>map_<n>: a hugepage file the EAL made for prefix, and nothing else. */
static int
huge_file_of(int dfd, const char *name, const char *prefix)
{
	size_t plen = strlen(prefix);
	const char *p = name + plen + 4;
	struct stat st;

	if (strncmp(name, prefix, plen) != 0 || strncmp(name + plen, "map_", 4) != 0 ||
	    *p == '\0' || p[strspn(p, "0123456789")] != '\0')
		return 0;
	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

void
psb_huge_cleanup(const char *prefix)
{
	char line[512], mnt[256], why[256];
	struct dirent *de;
	FILE *f;
	DIR *d;

	/* a prefix that is not a plain name could match another program's files */
	if (psb_cli_name_check(prefix, PSB_PREFIX_MAX, why, sizeof(why)) != 0)
		return;
	f = fopen("/proc/mounts", "r");
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strstr(line, " hugetlbfs ") == NULL || sscanf(line, "%*s %255s", mnt) != 1)
			continue;
		d = opendir(mnt);
		if (d == NULL)
			continue;
		while ((de = readdir(d)) != NULL)
			if (huge_file_of(dirfd(d), de->d_name, prefix))
				unlinkat(dirfd(d), de->d_name, 0);
		closedir(d);
	}
	fclose(f);
}

void
psb_mem_probe(struct psb_mem_info *mi)
{
	char line[256];
	uint64_t free_pages = 0, page_kb = 0;
	FILE *f;

	memset(mi, 0, sizeof(*mi));
	f = fopen("/proc/meminfo", "r");
	if (f != NULL) {
		while (fgets(line, sizeof(line), f) != NULL) {
			unsigned long long v;

			if (sscanf(line, "HugePages_Free: %llu", &v) == 1)
				free_pages = v;
			else if (sscanf(line, "Hugepagesize: %llu kB", &v) == 1)
				page_kb = v;
			else if (sscanf(line, "MemTotal: %llu kB", &v) == 1)
				mi->mem_total_mb = v / 1024;
		}
		fclose(f);
	}
	mi->huge_free_mb = free_pages * page_kb / 1024;
	f = fopen("/proc/mounts", "r");
	if (f != NULL) {
		while (fgets(line, sizeof(line), f) != NULL)
			if (strstr(line, " hugetlbfs ") != NULL)
				mi->hugetlbfs_mounted = 1;
		fclose(f);
	}
}

static int
add_arg(struct psb_eal_argv *a, int *argc, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*argc >= PSB_EAL_MAX_ARGS - 1)
		return -E2BIG;
	va_start(ap, fmt);
	n = vsnprintf(a->buf + a->used, sizeof(a->buf) - a->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(a->buf) - a->used)
		return -E2BIG;
	a->argv[(*argc)++] = a->buf + a->used;
	a->argv[*argc] = NULL;
	a->used += (size_t)n + 1;
	return 0;
}

int
psb_eal_build_argv(const char *prog, const struct psb_eal_opts *o,
		const struct psb_port_spec *ports, int nports, const struct psb_mem_info *mi,
		struct psb_eal_argv *out, char *err, size_t errlen)
{
	int argc = 0, i, any_pci = 0, rc = 0, sfs = 0;
	int huge_ok = mi->hugetlbfs_mounted && mi->huge_free_mb >= o->mem_mb;

	memset(out, 0, sizeof(*out));
	if (o->force_huge && !huge_ok) {
		snprintf(err, errlen, "--huge: need %llu MB of free hugepages, %llu MB free%s "
			"(scripts/setup.sh reserves them; or run without --huge to use --no-huge)",
			(unsigned long long)o->mem_mb, (unsigned long long)mi->huge_free_mb,
			mi->hugetlbfs_mounted ? "" : " and no hugetlbfs mounted");
		return -ENOMEM;
	}
	out->use_huge = huge_ok && !o->force_no_huge;
	/* the prefix names a directory psb cleans up at exit: a name, never a path */
	if (o->file_prefix != NULL &&
	    psb_cli_name_check(o->file_prefix, PSB_PREFIX_MAX, err, errlen) != 0)
		return -EINVAL;
	for (i = 0; i < o->n_extra; i++) {
		const char *a = o->extra[i];
		size_t n = strcspn(a, "=");

		/* getopt takes any unambiguous start of a long option: "--fi" is --file-prefix */
		if (n >= 4 && strncmp(a, "--file-prefix", n) == 0) {
			snprintf(err, errlen, "EAL option %.*s after --: give psb's --file-prefix "
				 "NAME instead (psb checks it and cleans that runtime directory up)",
				 (int)n, a);
			return -EINVAL;
		}
	}
	rc |= add_arg(out, &argc, "%s", prog);
	rc |= add_arg(out, &argc, "--lcores=%s", o->lcores != NULL ? o->lcores : "0");
	if (o->file_prefix != NULL)
		snprintf(out->prefix, sizeof(out->prefix), "%s", o->file_prefix);
	else
		snprintf(out->prefix, sizeof(out->prefix), "psb-%d", (int)getpid());
	rc |= add_arg(out, &argc, "--file-prefix=%s", out->prefix);
	for (i = 0; i < nports; i++)
		if (ports[i].kind == PSB_PORT_MEMIF && !ports[i].memif_server)
			out->single_file = 1;
	if (out->use_huge) {
		rc |= add_arg(out, &argc, "--socket-mem=%llu", (unsigned long long)o->mem_mb);
		/*
		 * Every run has its own prefix: leave no hugepage files behind. The
		 * EAL refuses this with single-file segments; psb then removes its
		 * files itself at exit (psb_huge_cleanup).
		 */
		if (!out->single_file)
			rc |= add_arg(out, &argc, "--huge-unlink");
	} else {
		rc |= add_arg(out, &argc, "--no-huge");
		rc |= add_arg(out, &argc, "-m");
		rc |= add_arg(out, &argc, "%llu", (unsigned long long)(o->mem_mb_no_huge != 0 ?
			o->mem_mb_no_huge : o->mem_mb));
	}
	for (i = 0; i < nports; i++) {
		if (ports[i].kind == PSB_PORT_MEMIF && !ports[i].memif_server && !sfs) {
			/* memif zero-copy shares the client's memory by file descriptor. */
			rc |= add_arg(out, &argc, "--single-file-segments");
			sfs = 1;
		}
		if (ports[i].kind == PSB_PORT_PCI) {
			any_pci = 1;
			rc |= add_arg(out, &argc, "-a");
		} else {
			rc |= add_arg(out, &argc, "--vdev");
		}
		rc |= add_arg(out, &argc, "%s", ports[i].devargs);
	}
	if (!any_pci)
		rc |= add_arg(out, &argc, "--no-pci");
	if (o->log_level > 0)
		rc |= add_arg(out, &argc, "--log-level=%d", o->log_level);
	/* before the extra ones: what is given after "--" has the last word */
	for (i = 0; i < o->n_log_levels; i++)
		rc |= add_arg(out, &argc, "%s", o->log_levels[i]);
	for (i = 0; i < o->n_extra; i++)
		rc |= add_arg(out, &argc, "%s", o->extra[i]);
	if (rc != 0) {
		snprintf(err, errlen, "too many EAL arguments");
		return -E2BIG;
	}
	return argc;
}
