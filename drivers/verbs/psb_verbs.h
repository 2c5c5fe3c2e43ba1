/* RDMA devices, ports and GIDs as rdma-core sees them on this host: what `show rdma` shows. */
#ifndef PSB_VERBS_H
#define PSB_VERBS_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

/*
 * One walk of rdma-core's devices into a bounded struct; nothing is kept between walks and
 * each device is opened only to be queried. The struct serves every reader: psb_verbs_json
 * for the control socket and telemetry, psb_verbs_print for the console. What is beyond
 * the bounds is counted (*_cut), never silently dropped. No DPDK.
 *
 * Where the list cannot be had, available is 0 and error says why in one line: a kernel
 * without RDMA (rdma-core's ENOSYS), no device at all, or the errno rdma-core gave. A device
 * that cannot be opened or queried is listed with its own error and whatever was learnt.
 */
#define PSB_VERBS_MAX_DEVS	16
#define PSB_VERBS_MAX_PORTS	4	/* a device */
#define PSB_VERBS_MAX_GIDS	16	/* a port; all-zero (unused) GIDs are not counted */
#define PSB_VERBS_NAME_LEN	64	/* rdma-core's IBV_SYSFS_NAME_MAX */
#define PSB_VERBS_NETDEV_LEN	16	/* IF_NAMESIZE */
#define PSB_VERBS_ERR_LEN	192

/* The RoCE version of a GID, as rdma-core's enum ibv_gid_type numbers them. */
enum psb_verbs_gid_type {
	PSB_VERBS_GID_IB = 0,
	PSB_VERBS_GID_ROCE_V1 = 1,
	PSB_VERBS_GID_ROCE_V2 = 2,
};

struct psb_verbs_gid {
	uint8_t raw[16];
	uint32_t index;				/* in the port's GID table */
	uint32_t type;				/* enum psb_verbs_gid_type */
	char netdev[PSB_VERBS_NETDEV_LEN];	/* "" when none (InfiniBand) */
};

struct psb_verbs_port {
	uint32_t num;				/* from 1 */
	char state[16];				/* ACTIVE, DOWN, INIT, ARMED, ... */
	char link_layer[16];			/* Ethernet, InfiniBand, unspecified */
	uint32_t active_mtu;			/* bytes; 0: unknown */
	uint32_t lanes;				/* active width; 0: unknown */
	uint32_t lane_mbps;			/* active speed of a lane; 0: unknown */
	unsigned int ngids;
	unsigned int gids_cut;
	struct psb_verbs_gid gids[PSB_VERBS_MAX_GIDS];
};

struct psb_verbs_dev {
	char name[PSB_VERBS_NAME_LEN];
	uint64_t node_guid;			/* host order */
	char node_type[32];			/* rdma-core's words: "InfiniBand channel adapter" */
	char transport[16];			/* InfiniBand (RoCE too), iWARP, usNIC, ... */
	char fw_ver[64];
	char error[PSB_VERBS_ERR_LEN];		/* "" unless a query of it failed */
	unsigned int nports;
	unsigned int ports_cut;
	struct psb_verbs_port ports[PSB_VERBS_MAX_PORTS];
};

struct psb_verbs_list {
	int available;				/* 0: error says why there is no list */
	char error[PSB_VERBS_ERR_LEN];
	unsigned int ndevs;
	unsigned int devs_cut;
	struct psb_verbs_dev devs[PSB_VERBS_MAX_DEVS];
};

/*
 * Fill out (about 50 KB: not for a small stack) from rdma-core. 0, or a negative errno with
 * out->error set: -ENOSYS no RDMA in the kernel, -ENODEV no device, else rdma-core's.
 * Threads may call it at once.
 */
int psb_verbs_list(struct psb_verbs_list *out);

/*
 * The reason psb_verbs_list gives when ibv_get_device_list gave nothing: errnum is the
 * errno it left, 0 when it listed no device. Returns buf.
 */
const char *psb_verbs_reason(int errnum, char *buf, size_t len);

/*
 * Put a GID of port port_num into d (whose ports are filled): all-zero GIDs are skipped,
 * those past PSB_VERBS_MAX_GIDS of their port counted, and those of a port not kept
 * (past PSB_VERBS_MAX_PORTS) ignored. ifindex names the netdev (0: none). 1 if kept.
 */
int psb_verbs_put_gid(struct psb_verbs_dev *d, uint32_t port_num, uint32_t index,
		const uint8_t raw[16], uint32_t type, unsigned int ifindex);

/* "IB", "RoCE v1", "RoCE v2", or "unknown". */
const char *psb_verbs_gid_type_name(uint32_t type);

/*
 * The list as JSON: {"available": false, "error": "..."} or {"available": true, "devices":
 * [{"name", "node_guid", "node_type", "transport", "fw_ver", "ports": [{"port", "state",
 * "link_layer", "active_mtu", "width", "rate_gbps", "gids": [{"index", "gid", "type",
 * "netdev"}], "gids_left_out"}], "ports_left_out"}], "devices_left_out"}. NULL: no memory.
 */
json_t *psb_verbs_json(const struct psb_verbs_list *l);

/* Walk rdma-core now and give the JSON above (never NULL unless jansson has no memory). */
json_t *psb_verbs_query_json(void);

/* The list as a table for a person, or the one line of why there is none. */
void psb_verbs_print(FILE *out, const struct psb_verbs_list *l);

#endif /* PSB_VERBS_H */
