/* cmocka tests of port specs, their DPDK device arguments, and the EAL argv (drivers/psb_port). */
#include <errno.h>
#include <inttypes.h>
#include <mntent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "psb_port.h"

/* Parse spec, which must succeed, and check kind, device name and devargs. */
static void
parse_ok(const char *spec, int index, enum psb_port_kind kind, const char *name,
		const char *devargs, struct psb_port_spec *p)
{
	char err[256] = "";
	int rc = psb_port_parse(spec, index, p, err, sizeof(err));

	if (rc != 0)
		print_error("'%s': %s\n", spec, err);
	assert_int_equal(rc, 0);
	assert_int_equal(p->kind, kind);
	assert_string_equal(p->spec, spec);
	assert_string_equal(p->name, name);
	assert_string_equal(p->devargs, devargs);
}

/* Parse spec, which must fail with a message containing each of the NULL-ended words. */
static void
parse_bad(const char *spec, ...)
{
	struct psb_port_spec p;
	char err[512] = "";
	const char *w;
	va_list ap;

	assert_int_equal(psb_port_parse(spec, 0, &p, err, sizeof(err)), -EINVAL);
	assert_true(err[0] != '\0');
	va_start(ap, spec);
	while ((w = va_arg(ap, const char *)) != NULL) {
		if (strstr(err, w) == NULL)
			print_error("'%.60s': message '%s' lacks '%s'\n",
				spec != NULL ? spec : "(null)", err, w);
		assert_non_null(strstr(err, w));
	}
	va_end(ap);
}

static void
test_port_kinds(void **state)
{
	struct psb_port_spec p;

	(void)state;
	parse_ok("memif:server:/run/psb/m0.sock", 0, PSB_PORT_MEMIF, "net_memif0",
		"net_memif0,role=server,socket=/run/psb/m0.sock,socket-abstract=no,id=0,"
		"bsize=9216,rsize=11", &p);
	assert_int_equal(p.memif_server, 1);
	assert_string_equal(p.sock_path, "/run/psb/m0.sock");

	parse_ok("memif:client:/tmp/x.sock:7", 2, PSB_PORT_MEMIF, "net_memif2",
		"net_memif2,role=client,socket=/tmp/x.sock,socket-abstract=no,id=7,"
		"bsize=9216,rsize=11,zero-copy=yes", &p);
	assert_int_equal(p.memif_server, 0);
	assert_string_equal(p.sock_path, "/tmp/x.sock");
	parse_ok("memif:server:/s:255", 1, PSB_PORT_MEMIF, "net_memif1",
		"net_memif1,role=server,socket=/s,socket-abstract=no,id=255,bsize=9216,rsize=11",
		&p);
	parse_ok("memif:client:/s:0", 0, PSB_PORT_MEMIF, "net_memif0",
		"net_memif0,role=client,socket=/s,socket-abstract=no,id=0,bsize=9216,rsize=11,"
		"zero-copy=yes", &p);

	parse_ok("af_packet:eth0", 1, PSB_PORT_AF_PACKET, "net_af_packet1",
		"net_af_packet1,iface=eth0,qpairs=1", &p);
	parse_ok("af_xdp:veth1", 2, PSB_PORT_AF_XDP, "net_af_xdp2",
		"net_af_xdp2,iface=veth1,start_queue=0,queue_count=1", &p);
	assert_true(psb_port_is_kernel(&p));
	assert_string_equal(p.ifname, "veth1");
	parse_ok("af_xdp:eth0:3", 0, PSB_PORT_AF_XDP, "net_af_xdp0",
		"net_af_xdp0,iface=eth0,start_queue=3,queue_count=1", &p);
	assert_int_equal(p.queue, 3);
	parse_ok("tap:psb0", 0, PSB_PORT_TAP, "net_tap0", "net_tap0,iface=psb0", &p);
	parse_ok("virtio_user:psbh0", 2, PSB_PORT_VIRTIO_USER, "net_virtio_user2",
		"net_virtio_user2,iface=psbh0,path=/dev/vhost-net,queues=1,queue_size=1024", &p);
	assert_true(psb_port_is_kernel(&p));

	parse_ok("pcap:in.pcap:out.pcap", 0, PSB_PORT_PCAP, "net_pcap0",
		"net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap", &p);
	parse_ok("pcap:/data/in.pcap:", 3, PSB_PORT_PCAP, "net_pcap3",
		"net_pcap3,rx_pcap=/data/in.pcap", &p);
	parse_ok("pcap:in.pcap::loop", 5, PSB_PORT_PCAP, "net_pcap5",
		"net_pcap5,rx_pcap=in.pcap,infinite_rx=1", &p);
	parse_ok("pcap::out.pcap", 4, PSB_PORT_PCAP, "net_pcap4", "net_pcap4,tx_pcap=out.pcap",
		&p);

	parse_ok("ring", 0, PSB_PORT_RING, "net_ring0", "net_ring0", &p);
	parse_ok("null", 5, PSB_PORT_NULL, "net_null5", "net_null5", &p);
	parse_ok("null:sink", 1, PSB_PORT_NULL, "net_null1", "net_null1,no-rx=1", &p);

	parse_ok("pci:0000:03:00.0", 0, PSB_PORT_PCI, "0000:03:00.0", "0000:03:00.0", &p);
	parse_ok("0000:81:00.1", 1, PSB_PORT_PCI, "0000:81:00.1", "0000:81:00.1", &p);
	parse_ok("af:00.0", 0, PSB_PORT_PCI, "af:00.0", "af:00.0", &p);
	parse_ok("pci:3b:00.1", 0, PSB_PORT_PCI, "3b:00.1", "3b:00.1", &p);
	assert_int_equal(p.memif_server, 0);
	assert_string_equal(p.sock_path, "");
}

static void
test_port_errors(void **state)
{
	char spec[700];

	(void)state;
	parse_bad("", "empty", NULL);
	parse_bad(NULL, "empty", NULL);
	parse_bad("foo", "unknown kind 'foo'", NULL);
	parse_bad("vhost:/x", "unknown kind 'vhost'", "memif", NULL);
	parse_bad("Memif:server:/x", "unknown kind", NULL);

	/* af_xdp */
	parse_bad("af_xdp", "expected af_xdp:IFNAME[:QUEUE]", NULL);
	parse_bad("af_xdp:", "expected af_xdp:IFNAME[:QUEUE]", NULL);
	parse_bad("af_xdp:eth0:1:2", "expected af_xdp:IFNAME[:QUEUE]", NULL);
	parse_bad("af_xdp:eth0:", "queue must be 0..255", NULL);
	parse_bad("af_xdp:eth0:-1", "queue must be 0..255", NULL);
	parse_bad("af_xdp:eth0:+1", "queue must be 0..255", NULL);
	parse_bad("af_xdp:eth0:256", "queue must be 0..255", NULL);
	parse_bad("af_xdp:eth0:1x", "queue must be 0..255", NULL);
	parse_bad("af_xdp:eth0:99999999999999999999", "queue must be 0..255", NULL);
	parse_bad("af_xdp:e,th0", "may not contain", NULL);
	parse_bad("af_xdp:a/b", "without '/'", NULL);
	parse_bad("af_xdp:0123456789abcdef", "1 to 15 characters", NULL);

	/* memif */
	parse_bad("memif", "expected memif:server|client", NULL);
	parse_bad("memif:server", "expected memif:server|client", NULL);
	parse_bad("memif:master:/x.sock", "expected memif:server|client", NULL);
	parse_bad("memif:server:x.sock", "absolute path", NULL);
	parse_bad("memif:server:./x.sock", "absolute path", NULL);
	parse_bad("memif:client:", "absolute path", NULL);
	parse_bad("memif:server:/x.sock:256", "0..255", NULL);
	parse_bad("memif:server:/x.sock:-1", "0..255", NULL);
	parse_bad("memif:server:/x.sock:abc", "0..255", NULL);
	parse_bad("memif:server:/x.sock:7x", "0..255", NULL);
	parse_bad("memif:server:/x.sock:", "0..255", NULL);
	parse_bad("memif:server:/x.sock:99999999999999999999", "0..255", NULL);
	parse_bad("memif:server:/x.sock:1:2", "expected memif", NULL);
	/* injection of device options */
	parse_bad("memif:server:/x.sock,role=client", "','", "'='", NULL);
	parse_bad("memif:client:/a b.sock", "spaces", NULL);
	parse_bad("af_packet:eth0,qpairs=8", "','", NULL);
	parse_bad("af_packet:eth0=1", "'='", NULL);
	parse_bad("tap:t0,remote=eth0", "','", NULL);
	parse_bad("pcap:in.pcap,infinite_rx=1:", "','", NULL);
	parse_bad("pcap::out=1.pcap", "'='", NULL);

	parse_bad("af_packet", "expected af_packet:IFNAME", NULL);
	parse_bad("af_packet:", "expected af_packet:IFNAME", NULL);
	parse_bad("af_packet:a:b", "expected af_packet:IFNAME", NULL);
	parse_bad("tap", "expected tap:IFNAME", NULL);
	parse_bad("tap:", "expected tap:IFNAME", NULL);
	parse_bad("pcap::", "expected pcap:IN.pcap:OUT.pcap", NULL);
	parse_bad("pcap:x.pcap", "expected pcap:IN.pcap:OUT.pcap", NULL);
	parse_bad("pcap:a:b:c", "expected pcap:IN.pcap:OUT.pcap", NULL);
	parse_bad("pcap::out.pcap:loop", "pcap:IN.pcap:OUT.pcap:loop", NULL);	/* nothing to loop */
	parse_bad("ring:0", "takes no arguments", NULL);
	parse_bad("null:x", "takes no arguments but sink", NULL);
	parse_bad("null:sink:x", "takes no arguments but sink", NULL);
	parse_bad("pci:zz", "PCI address", NULL);
	parse_bad("pci:", "PCI address", NULL);
	parse_bad("pci:0000:03:00.0,x=y", "PCI address", NULL);

	/* too long as a whole */
	memset(spec, 'a', sizeof(spec) - 1);
	spec[sizeof(spec) - 1] = '\0';
	memcpy(spec, "tap:", 4);
	parse_bad(spec, "too long", NULL);

	/* a memif socket path a unix socket cannot hold (sockaddr_un: 108 bytes) */
	memset(spec, 0, sizeof(spec));
	strcpy(spec, "memif:server:/");
	memset(spec + strlen(spec), 'm', 107);
	parse_bad(spec, "too long", NULL);
	spec[strlen(spec) - 1] = '\0';		/* 107 bytes: fits */
	{
		struct psb_port_spec p;
		char err[256];

		assert_int_equal(psb_port_parse(spec, 0, &p, err, sizeof(err)), 0);
		assert_int_equal(strlen(p.sock_path), 107);
		assert_non_null(strstr(p.devargs, ",id=0,bsize=9216,rsize=11"));
	}

	/* fits the spec but not the device arguments: refused, never cut */
	memset(spec, 0, sizeof(spec));
	strcpy(spec, "pcap:");
	memset(spec + 5, 'a', 495);
	strcat(spec, ":o.pcap");
	assert_true(strlen(spec) < PSB_DEVARGS_LEN);
	parse_bad(spec, "too long", NULL);
	memset(spec, 0, sizeof(spec));
	strcpy(spec, "pcap:");
	memset(spec + 5, 'a', 300);
	strcat(spec, ":");
	memset(spec + strlen(spec), 'b', 200);
	assert_true(strlen(spec) < PSB_DEVARGS_LEN);
	parse_bad(spec, "too long", NULL);
	/* a kernel interface name: what the kernel takes (15 bytes), and never a path */
	memset(spec, 0, sizeof(spec));
	strcpy(spec, "af_packet:");
	memset(spec + strlen(spec), 'e', 495);
	parse_bad(spec, "interface name must be 1 to 15 characters", NULL);
	memset(spec, 0, sizeof(spec));
	strcpy(spec, "tap:");
	memset(spec + strlen(spec), 't', 500);
	parse_bad(spec, "interface name must be 1 to 15 characters", NULL);
	parse_bad("af_packet:eeeeeeeeeeeeeeee", "interface name", NULL);
	parse_bad("af_packet:../x", "without '/'", NULL);
	parse_bad("af_packet:..", "interface name", NULL);
	parse_bad("tap:a/b", "without '/'", NULL);
	{
		struct psb_port_spec p;
		char err[256];

		assert_int_equal(psb_port_parse("af_packet:eeeeeeeeeeeeeee", 0, &p, err,
						sizeof(err)), 0);
		assert_string_equal(p.ifname, "eeeeeeeeeeeeeee");
		assert_true(psb_port_is_kernel(&p));
		assert_int_equal(psb_port_parse("memif:server:/x.sock", 0, &p, err, sizeof(err)), 0);
		assert_false(psb_port_is_kernel(&p));
	}
}

/* The longest pcap spec that fits is accepted whole. */
static void
test_port_devargs_limit(void **state)
{
	struct psb_port_spec p;
	char spec[PSB_DEVARGS_LEN], want[PSB_DEVARGS_LEN], err[256];
	/* "net_pcap0" ",rx_pcap=" IN ",tx_pcap=" OUT: 27 bytes around the names */
	size_t in = 300, out = PSB_DEVARGS_LEN - 1 - 27 - 300;

	(void)state;
	memset(spec, 0, sizeof(spec));
	strcpy(spec, "pcap:");
	memset(spec + 5, 'i', in);
	spec[5 + in] = ':';
	memset(spec + 6 + in, 'o', out);
	snprintf(want, sizeof(want), "net_pcap0,rx_pcap=%.*s,tx_pcap=%.*s", (int)in, spec + 5,
		(int)out, spec + 6 + in);
	assert_int_equal(strlen(want), PSB_DEVARGS_LEN - 1);
	assert_int_equal(psb_port_parse(spec, 0, &p, err, sizeof(err)), 0);
	assert_string_equal(p.devargs, want);
	/* one byte more does not fit */
	spec[6 + in + out] = 'o';
	assert_int_equal(psb_port_parse(spec, 0, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "too long"));
}

/* Index of arg in argv, or -1. */
static int
find_arg(const struct psb_eal_argv *a, int argc, const char *arg)
{
	int i;

	for (i = 0; i < argc; i++)
		if (strcmp(a->argv[i], arg) == 0)
			return i;
	return -1;
}

static void
check_argv(const struct psb_eal_argv *a, int argc, const char *const *want, int n)
{
	int i;

	assert_int_equal(argc, n);
	for (i = 0; i < n; i++)
		assert_string_equal(a->argv[i], want[i]);
	assert_null(a->argv[argc]);
}

static void
test_eal_no_huge(void **state)
{
	struct psb_port_spec ports[2];
	struct psb_eal_opts o = { .lcores = "0-2", .file_prefix = "psbtest", .mem_mb = 256 };
	struct psb_mem_info mi = { .huge_free_mb = 0, .hugetlbfs_mounted = 0 };
	struct psb_eal_argv *a = calloc(1, sizeof(*a));
	char err[256];
	int argc;
	const char *want[] = {
		"psb", "--lcores=0-2", "--file-prefix=psbtest", "--no-huge", "-m", "256",
		"--vdev", ports[0].devargs, "--vdev", "net_null1", "--no-pci",
	};

	(void)state;
	assert_non_null(a);
	assert_int_equal(psb_port_parse("memif:server:/tmp/m.sock", 0, &ports[0], err,
		sizeof(err)), 0);
	assert_int_equal(psb_port_parse("null", 1, &ports[1], err, sizeof(err)), 0);
	argc = psb_eal_build_argv("psb", &o, ports, 2, &mi, a, err, sizeof(err));
	check_argv(a, argc, want, 11);
	assert_int_equal(a->use_huge, 0);

	/* hugepages free but not mounted, or mounted but too few: still no hugepages */
	mi.huge_free_mb = 4096;
	argc = psb_eal_build_argv("psb", &o, ports, 2, &mi, a, err, sizeof(err));
	check_argv(a, argc, want, 11);
	mi.hugetlbfs_mounted = 1;
	mi.huge_free_mb = 255;
	argc = psb_eal_build_argv("psb", &o, ports, 2, &mi, a, err, sizeof(err));
	check_argv(a, argc, want, 11);
	assert_int_equal(a->use_huge, 0);

	/* --no-huge asked for although hugepages are there */
	mi.huge_free_mb = 4096;
	o.force_no_huge = 1;
	argc = psb_eal_build_argv("psb", &o, ports, 2, &mi, a, err, sizeof(err));
	check_argv(a, argc, want, 11);
	assert_int_equal(a->use_huge, 0);
	free(a);
}

static void
test_eal_huge(void **state)
{
	struct psb_port_spec ports[3];
	struct psb_eal_opts o = { .lcores = "1,3", .file_prefix = "p1", .mem_mb = 512 };
	struct psb_mem_info mi = { .huge_free_mb = 512, .hugetlbfs_mounted = 1 };
	struct psb_eal_argv *a = calloc(1, sizeof(*a));
	char err[256];
	int argc;
	const char *want[] = {
		"./psb", "--lcores=1,3", "--file-prefix=p1", "--socket-mem=512", "--huge-unlink",
		"-a", "0000:03:00.0", "--vdev", "net_tap1,iface=psb1", "-a", "0000:03:00.1",
	};

	(void)state;
	assert_non_null(a);
	assert_int_equal(psb_port_parse("pci:0000:03:00.0", 0, &ports[0], err, sizeof(err)), 0);
	assert_int_equal(psb_port_parse("tap:psb1", 1, &ports[1], err, sizeof(err)), 0);
	assert_int_equal(psb_port_parse("0000:03:00.1", 2, &ports[2], err, sizeof(err)), 0);
	argc = psb_eal_build_argv("./psb", &o, ports, 3, &mi, a, err, sizeof(err));
	/* a PCI port: no --no-pci, and no --no-huge */
	check_argv(a, argc, want, 11);
	assert_int_equal(a->use_huge, 1);
	assert_int_equal(find_arg(a, argc, "--no-pci"), -1);
	assert_int_equal(find_arg(a, argc, "--no-huge"), -1);

	/* --huge with hugepages there */
	o.force_huge = 1;
	argc = psb_eal_build_argv("./psb", &o, ports, 3, &mi, a, err, sizeof(err));
	check_argv(a, argc, want, 11);

	/* --huge without enough: -ENOMEM and a message saying so */
	mi.huge_free_mb = 100;
	err[0] = '\0';
	assert_int_equal(psb_eal_build_argv("./psb", &o, ports, 3, &mi, a, err, sizeof(err)),
		-ENOMEM);
	assert_non_null(strstr(err, "--huge"));
	assert_non_null(strstr(err, "512 MB"));
	assert_non_null(strstr(err, "100 MB free"));
	assert_null(strstr(err, "no hugetlbfs"));
	mi.huge_free_mb = 4096;
	mi.hugetlbfs_mounted = 0;
	assert_int_equal(psb_eal_build_argv("./psb", &o, ports, 3, &mi, a, err, sizeof(err)),
		-ENOMEM);
	assert_non_null(strstr(err, "no hugetlbfs mounted"));

	/* A memif client runs zero-copy: single-file segments, which rule out --huge-unlink. */
	o.force_huge = 0;
	mi.hugetlbfs_mounted = 1;
	assert_int_equal(psb_port_parse("memif:client:/tmp/c.sock", 0, &ports[0], err,
		sizeof(err)), 0);
	argc = psb_eal_build_argv("./psb", &o, ports, 1, &mi, a, err, sizeof(err));
	assert_true(argc > 0);
	assert_int_equal(a->single_file, 1);
	assert_true(find_arg(a, argc, "--single-file-segments") > 0);
	assert_int_equal(find_arg(a, argc, "--huge-unlink"), -1);
	assert_string_equal(a->prefix, "p1");
	free(a);
}

static void
test_eal_defaults_and_extra(void **state)
{
	static const char *const levels[] = { "--log-level=psb.rx:debug" };
	struct psb_eal_opts o = { .mem_mb = 64, .log_level = 7, .log_levels = levels,
		.n_log_levels = 1 };
	struct psb_mem_info mi = { 0, 0, 0 };
	struct psb_eal_argv *a = calloc(1, sizeof(*a));
	char *extra[] = { "--iova-mode=va", "--in-memory" };
	char err[256], prefix[64];
	int argc;
	/* psb's --log-level values before the extra ones, which have the last word */
	const char *want[] = {
		"psb", "--lcores=0", prefix, "--no-huge", "-m", "64", "--no-pci",
		"--log-level=7", "--log-level=psb.rx:debug", "--iova-mode=va", "--in-memory",
	};

	(void)state;
	assert_non_null(a);
	snprintf(prefix, sizeof(prefix), "--file-prefix=psb-%d", (int)getpid());
	o.n_extra = 2;
	o.extra = extra;
	/* no ports at all */
	argc = psb_eal_build_argv("psb", &o, NULL, 0, &mi, a, err, sizeof(err));
	check_argv(a, argc, want, 11);
	/* every argument lives in the caller's store */
	for (argc = 0; a->argv[argc] != NULL; argc++)
		assert_true(a->argv[argc] >= a->buf && a->argv[argc] < a->buf + sizeof(a->buf));
	free(a);
}

static void
test_eal_too_many(void **state)
{
	struct psb_eal_opts o = { .mem_mb = 64 };
	struct psb_mem_info mi = { 0, 0, 0 };
	struct psb_eal_argv *a = calloc(1, sizeof(*a));
	char *extra[PSB_EAL_MAX_ARGS];
	char err[256];
	int i, argc, base;

	(void)state;
	assert_non_null(a);
	for (i = 0; i < PSB_EAL_MAX_ARGS; i++)
		extra[i] = "--x";
	o.extra = extra;
	/* prog, lcores, prefix, no-huge, -m, N, no-pci: 7; room for 63 arguments */
	base = 7;
	o.n_extra = PSB_EAL_MAX_ARGS - 1 - base;
	argc = psb_eal_build_argv("psb", &o, NULL, 0, &mi, a, err, sizeof(err));
	assert_int_equal(argc, PSB_EAL_MAX_ARGS - 1);
	assert_null(a->argv[argc]);
	assert_string_equal(a->argv[argc - 1], "--x");
	o.n_extra++;
	err[0] = '\0';
	assert_int_equal(psb_eal_build_argv("psb", &o, NULL, 0, &mi, a, err, sizeof(err)),
		-E2BIG);
	assert_non_null(strstr(err, "too many EAL arguments"));

	/* arguments too long for the string store */
	{
		static char big[12000];

		memset(big, 'x', sizeof(big) - 1);
		extra[0] = big;
		extra[1] = big;
		extra[2] = big;
		o.n_extra = 3;
		assert_int_equal(psb_eal_build_argv("psb", &o, NULL, 0, &mi, a, err, sizeof(err)),
			-E2BIG);
		o.n_extra = 2;
		argc = psb_eal_build_argv("psb", &o, NULL, 0, &mi, a, err, sizeof(err));
		assert_int_equal(argc, base + 2);
		assert_int_equal(strlen(a->argv[base + 1]), sizeof(big) - 1);
	}
	free(a);
}

/* Hugepage facts read independently of psb_mem_probe (strtoull, getmntent). */
static void
read_mem(struct psb_mem_info *mi)
{
	uint64_t free_pages = 0, page_kb = 0;
	char line[256];
	struct mntent *m;
	FILE *f;

	memset(mi, 0, sizeof(*mi));
	f = fopen("/proc/meminfo", "r");
	if (f != NULL) {
		while (fgets(line, sizeof(line), f) != NULL) {
			if (strncmp(line, "HugePages_Free:", 15) == 0)
				free_pages = strtoull(line + 15, NULL, 10);
			else if (strncmp(line, "Hugepagesize:", 13) == 0)
				page_kb = strtoull(line + 13, NULL, 10);
		}
		fclose(f);
	}
	mi->huge_free_mb = free_pages * page_kb / 1024;
	f = setmntent("/proc/mounts", "r");
	if (f != NULL) {
		while ((m = getmntent(f)) != NULL)
			if (strcmp(m->mnt_type, "hugetlbfs") == 0)
				mi->hugetlbfs_mounted = 1;
		endmntent(f);
	}
}

static void
test_mem_probe(void **state)
{
	struct psb_mem_info mi, before, after;
	int i;

	(void)state;
	/* other processes may take hugepages meanwhile: compare on a quiet reading */
	for (i = 0; i < 10; i++) {
		read_mem(&before);
		memset(&mi, 0xa5, sizeof(mi));
		psb_mem_probe(&mi);
		read_mem(&after);
		if (before.huge_free_mb == after.huge_free_mb &&
		    before.hugetlbfs_mounted == after.hugetlbfs_mounted)
			break;
	}
	assert_true(i < 10);
	assert_true(mi.huge_free_mb == before.huge_free_mb);
	assert_int_equal(mi.hugetlbfs_mounted, before.hugetlbfs_mounted);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_port_kinds),
		cmocka_unit_test(test_port_errors),
		cmocka_unit_test(test_port_devargs_limit),
		cmocka_unit_test(test_eal_no_huge),
		cmocka_unit_test(test_eal_huge),
		cmocka_unit_test(test_eal_defaults_and_extra),
		cmocka_unit_test(test_eal_too_many),
		cmocka_unit_test(test_mem_probe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
