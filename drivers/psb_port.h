/* Port backends: map a psb port spec to a DPDK device, EAL arguments, and port setup. */
#ifndef PSB_PORT_H
#define PSB_PORT_H

#include <net/if.h>
#include <stdint.h>

#define PSB_MAX_USER_PORTS	8	/* node.ports and the exception port */
/* ... and a server's shared-memory slots (node.shm_clients, PSB_SHM_MAX_SLOTS) */
#define PSB_MAX_PORTS		(PSB_MAX_USER_PORTS + 64)
#define PSB_PORT_NAME_LEN	64
#define PSB_DEVARGS_LEN		512
#define PSB_EAL_MAX_ARGS	(64 + 2 * 64)

enum psb_port_kind {
	PSB_PORT_PCI,		/* pci:0000:03:00.0 (or a bare PCI address) */
	PSB_PORT_MEMIF,		/* memif:server|client:/path/to.sock[:id] */
	PSB_PORT_AF_PACKET,	/* af_packet:IFNAME */
	PSB_PORT_AF_XDP,	/* af_xdp:IFNAME[:QUEUE] */
	PSB_PORT_TAP,		/* tap:IFNAME */
	PSB_PORT_VIRTIO_USER,	/* virtio_user:IFNAME, a tap of the kernel's vhost-net */
	PSB_PORT_PCAP,		/* pcap:IN.pcap:OUT.pcap (either may be empty) */
	PSB_PORT_RING,		/* ring */
	PSB_PORT_NULL,		/* null */
};

struct psb_port_spec {
	enum psb_port_kind kind;
	char spec[PSB_DEVARGS_LEN];	/* as the user wrote it */
	char name[PSB_PORT_NAME_LEN];	/* DPDK device name, e.g. net_memif0 or the PCI address */
	char devargs[PSB_DEVARGS_LEN];	/* --vdev / -a argument */
	char sock_path[256];		/* memif: socket file to clean up */
	int memif_server;
	int shm_slot;			/* 1 + the slot of a shared-memory client port; 0: not one */
	char ifname[IF_NAMESIZE];	/* af_packet, af_xdp, tap: the kernel interface */
	unsigned int queue;		/* af_xdp: the interface's queue it takes */
};

/* af_packet, af_xdp and tap ports are kernel interfaces: psb leaves them as it found them. */
static inline int
psb_port_is_kernel(const struct psb_port_spec *p)
{
	return p->kind == PSB_PORT_AF_PACKET || p->kind == PSB_PORT_AF_XDP ||
	       p->kind == PSB_PORT_TAP || p->kind == PSB_PORT_VIRTIO_USER;
}

/*
 * An af_xdp port's frames live in a umem of 4 KiB chunks (the kernel takes at most a page
 * per chunk without multi-buffer XDP, which DPDK 22.11's driver does not use): its
 * receive pool holds mbufs of PSB_XDP_CHUNK bytes in all, and the port carries at most
 * the IP bytes that leaves (the driver says how many; psb segments to it).
 */
#define PSB_XDP_CHUNK		4096
/* The largest MTU a veth (and its peer) keeps while XDP runs on it, with 4 KiB pages. */
#define PSB_XDP_MTU_VETH	3500

/*
 * Parse one port spec (index = n-th port of this process, for unique device
 * names). On error returns -EINVAL and writes a message into err.
 */
int psb_port_parse(const char *spec, int index, struct psb_port_spec *p, char *err, size_t errlen);

/*
 * The af_packet ring of port p (an af_packet port) for frames of up to mtu bytes of IP:
 * frames big enough for one such frame with its VLAN tag and the kernel's header (the
 * driver's default of 2048 holds a 1500-byte MTU only), in blocks the driver and the
 * kernel agree on, as many as fit ring_bytes (each of the receive and send rings). Appends blocksz, framesz and
 * framecnt to p->devargs; *frames gets the frame count. -EINVAL with a message when the
 * MTU is beyond what psb's receive buffers hold or the arguments do not fit.
 */
int psb_port_afp_ring(struct psb_port_spec *p, unsigned int mtu, uint64_t ring_bytes,
		unsigned int *frames, char *err, size_t errlen);

/* Memory facts used to choose between hugepages and --no-huge. */
struct psb_mem_info {
	uint64_t huge_free_mb;		/* free hugepage memory, MB */
	int hugetlbfs_mounted;
	uint64_t mem_total_mb;		/* the machine's memory (MemTotal), MB */
};

void psb_mem_probe(struct psb_mem_info *mi);

struct psb_eal_opts {
	const char *lcores;		/* -l / --lcores value (NULL: "0") */
	const char *file_prefix;	/* NULL: psb-<pid> */
	int force_no_huge;		/* --no-huge requested */
	int force_huge;			/* --huge requested: fail if not available */
	uint64_t mem_mb;		/* memory to reserve */
	uint64_t mem_mb_no_huge;	/* the same on 4 KB pages, where the pool takes more (0:
					 * mem_mb) */
	int log_level;			/* EAL log level (0: default) */
	const char *const *log_levels;	/* --log-level values, each passed on as one */
	int n_log_levels;
	int n_extra;			/* extra EAL args from the command line */
	char **extra;
};

/*
 * Build an EAL argv for the given ports. Writes argv (NULL-terminated) into
 * out (storage inside *store). Returns argc, or -errno with a message in err.
 */
struct psb_eal_argv {
	char *argv[PSB_EAL_MAX_ARGS];
	char buf[32768];
	size_t used;
	int use_huge;
	int single_file;	/* --single-file-segments (memif zero-copy client) */
	char prefix[64];	/* the --file-prefix in effect */
};

/* Remove the hugepage files the EAL left for prefix (single-file segments). */
void psb_huge_cleanup(const char *prefix);

int psb_eal_build_argv(const char *prog, const struct psb_eal_opts *o,
		const struct psb_port_spec *ports, int nports, const struct psb_mem_info *mi,
		struct psb_eal_argv *out, char *err, size_t errlen);

#endif /* PSB_PORT_H */
