/* RDMA devices, ports and GIDs through rdma-core (libibverbs), for show rdma and telemetry. */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "psb_verbs.h"

/* The header numbers GID types as rdma-core does, so that a type passes through as is. */
_Static_assert((int)PSB_VERBS_GID_IB == (int)IBV_GID_TYPE_IB &&
	       (int)PSB_VERBS_GID_ROCE_V1 == (int)IBV_GID_TYPE_ROCE_V1 &&
	       (int)PSB_VERBS_GID_ROCE_V2 == (int)IBV_GID_TYPE_ROCE_V2,
	       "GID types differ from rdma-core's");
_Static_assert(PSB_VERBS_NAME_LEN >= IBV_SYSFS_NAME_MAX, "device names would be cut");
_Static_assert(PSB_VERBS_NETDEV_LEN >= IF_NAMESIZE, "netdev names would be cut");

const char *
psb_verbs_reason(int errnum, char *buf, size_t len)
{
	const char *name;

	if (errnum == 0) {
		snprintf(buf, len, "no RDMA devices (rdma-core sees none)");
	} else if (errnum == ENOSYS) {
		/* rdma-core's word when neither RDMA netlink nor /sys/class/infiniband_verbs exist */
		snprintf(buf, len, "no RDMA support in this kernel (ibv_get_device_list: %s; the "
			 "kernel has no InfiniBand/RDMA subsystem)", strerror(errnum));
	} else {
		name = strerrorname_np(errnum);
		snprintf(buf, len, "cannot list RDMA devices (ibv_get_device_list: %s%s%s)",
			 strerror(errnum), name != NULL ? ", " : "", name != NULL ? name : "");
	}
	return buf;
}

const char *
psb_verbs_gid_type_name(uint32_t type)
{
	switch (type) {
	case PSB_VERBS_GID_IB: return "IB";
	case PSB_VERBS_GID_ROCE_V1: return "RoCE v1";
	case PSB_VERBS_GID_ROCE_V2: return "RoCE v2";
	default: return "unknown";
	}
}

static const char *
transport_name(enum ibv_transport_type t)
{
	switch (t) {
	case IBV_TRANSPORT_IB: return "InfiniBand";
	case IBV_TRANSPORT_IWARP: return "iWARP";
	case IBV_TRANSPORT_USNIC: return "usNIC";
	case IBV_TRANSPORT_USNIC_UDP: return "usNIC UDP";
	case IBV_TRANSPORT_UNSPECIFIED: return "unspecified";
	default: return "unknown";
	}
}

static const char *
state_name(enum ibv_port_state s)
{
	switch (s) {
	case IBV_PORT_NOP: return "NOP";
	case IBV_PORT_DOWN: return "DOWN";
	case IBV_PORT_INIT: return "INIT";
	case IBV_PORT_ARMED: return "ARMED";
	case IBV_PORT_ACTIVE: return "ACTIVE";
	case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
	default: return "unknown";
	}
}

static const char *
link_layer_name(uint8_t ll)
{
	switch (ll) {
	case IBV_LINK_LAYER_ETHERNET: return "Ethernet";
	case IBV_LINK_LAYER_INFINIBAND: return "InfiniBand";
	/* rdma-core's own tools read unspecified as InfiniBand; it is shown as given */
	case IBV_LINK_LAYER_UNSPECIFIED: return "unspecified";
	default: return "unknown";
	}
}

/* The IB encodings of width and speed (RoCE devices report their Ethernet link so too). */
static uint32_t
width_lanes(uint8_t w)
{
	switch (w) {
	case 1: return 1;
	case 2: return 4;
	case 4: return 8;
	case 8: return 12;
	case 16: return 2;
	default: return 0;
	}
}

static uint32_t
speed_lane_mbps(uint8_t s)
{
	switch (s) {
	case 1: return 2500;	/* SDR */
	case 2: return 5000;	/* DDR */
	case 4: return 10000;	/* QDR */
	case 8: return 10000;	/* FDR10 */
	case 16: return 14000;	/* FDR */
	case 32: return 25000;	/* EDR */
	case 64: return 50000;	/* HDR */
	case 128: return 100000;	/* NDR */
	default: return 0;
	}
}

static uint32_t
mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 0;
}

int
psb_verbs_put_gid(struct psb_verbs_dev *d, uint32_t port_num, uint32_t index,
		const uint8_t raw[16], uint32_t type, unsigned int ifindex)
{
	static const uint8_t zero[16];
	struct psb_verbs_port *p = NULL;
	struct psb_verbs_gid *g;
	char name[IF_NAMESIZE];
	unsigned int i;

	for (i = 0; i < d->nports && p == NULL; i++)
		if (d->ports[i].num == port_num)
			p = &d->ports[i];
	if (p == NULL || memcmp(raw, zero, sizeof(zero)) == 0)
		return 0;
	if (p->ngids == PSB_VERBS_MAX_GIDS) {
		p->gids_cut++;
		return 0;
	}
	g = &p->gids[p->ngids++];
	memcpy(g->raw, raw, sizeof(g->raw));
	g->index = index;
	g->type = type;
	g->netdev[0] = '\0';
	/* a netdev gone since rdma-core looked, or in another namespace, reads as none */
	if (ifindex != 0 && if_indextoname(ifindex, name) != NULL)
		snprintf(g->netdev, sizeof(g->netdev), "%s", name);
	return 1;
}

/*
 * Every GID of the device in one call. rdma-core's table has the valid entries of all
 * ports, so it is asked with room for all of them, those of ports not kept included.
 */
static void
dev_gids(struct psb_verbs_dev *d, struct ibv_context *ctx, size_t entries)
{
	struct ibv_gid_entry *e;
	ssize_t n, i;

	if (entries == 0)
		return;
	e = calloc(entries, sizeof(*e));
	if (e == NULL) {
		snprintf(d->error, sizeof(d->error), "GID table: out of memory");
		return;
	}
	n = ibv_query_gid_table(ctx, e, entries, 0);
	if (n < 0)
		snprintf(d->error, sizeof(d->error), "ibv_query_gid_table: %s", strerror((int)-n));
	for (i = 0; i < n; i++)
		psb_verbs_put_gid(d, e[i].port_num, e[i].gid_index, e[i].gid.raw, e[i].gid_type,
				  e[i].ndev_ifindex);
	free(e);
}

static void
dev_fill(struct psb_verbs_dev *d, struct ibv_device *dev)
{
	struct ibv_device_attr attr;
	struct ibv_port_attr pa;
	struct ibv_context *ctx;
	struct psb_verbs_port *p;
	size_t entries = 0;
	unsigned int num;
	int rc;

	snprintf(d->name, sizeof(d->name), "%s", ibv_get_device_name(dev));
	d->node_guid = be64toh(ibv_get_device_guid(dev));
	snprintf(d->node_type, sizeof(d->node_type), "%s", ibv_node_type_str(dev->node_type));
	snprintf(d->transport, sizeof(d->transport), "%s", transport_name(dev->transport_type));
	ctx = ibv_open_device(dev);
	if (ctx == NULL) {
		snprintf(d->error, sizeof(d->error), "ibv_open_device: %s", strerror(errno));
		return;
	}
	rc = ibv_query_device(ctx, &attr);
	if (rc != 0) {
		snprintf(d->error, sizeof(d->error), "ibv_query_device: %s", strerror(rc));
		goto out;
	}
	snprintf(d->fw_ver, sizeof(d->fw_ver), "%s", attr.fw_ver);
	for (num = 1; num <= attr.phys_port_cnt; num++) {
		rc = ibv_query_port(ctx, num, &pa);
		if (rc != 0) {
			snprintf(d->error, sizeof(d->error), "ibv_query_port %u: %s", num,
				 strerror(rc));
			continue;
		}
		if (pa.gid_tbl_len > 0)
			entries += (size_t)pa.gid_tbl_len;
		if (d->nports == PSB_VERBS_MAX_PORTS) {
			d->ports_cut++;
			continue;
		}
		p = &d->ports[d->nports++];
		p->num = num;
		snprintf(p->state, sizeof(p->state), "%s", state_name(pa.state));
		snprintf(p->link_layer, sizeof(p->link_layer), "%s",
			 link_layer_name(pa.link_layer));
		p->active_mtu = mtu_bytes(pa.active_mtu);
		p->lanes = width_lanes(pa.active_width);
		p->lane_mbps = speed_lane_mbps(pa.active_speed);
	}
	/*
	 * A port that could not be queried leaves the table's size unknown: asked too small,
	 * rdma-core would only say EINVAL over the port's own error.
	 */
	if (d->error[0] == '\0')
		dev_gids(d, ctx, entries);
out:
	ibv_close_device(ctx);
}

int
psb_verbs_list(struct psb_verbs_list *out)
{
	struct ibv_device **devs;
	int n = 0, i, err;

	memset(out, 0, sizeof(*out));
	errno = 0;
	devs = ibv_get_device_list(&n);
	if (devs == NULL) {
		err = errno != 0 ? errno : EIO;
		psb_verbs_reason(err, out->error, sizeof(out->error));
		return -err;
	}
	for (i = 0; i < n; i++) {
		if (out->ndevs == PSB_VERBS_MAX_DEVS)
			out->devs_cut++;
		else
			dev_fill(&out->devs[out->ndevs++], devs[i]);
	}
	ibv_free_device_list(devs);
	/* a kernel with RDMA but no device gives an empty list, not an error */
	if (n == 0) {
		psb_verbs_reason(0, out->error, sizeof(out->error));
		return -ENODEV;
	}
	out->available = 1;
	return 0;
}

static void
gid_text(const struct psb_verbs_gid *g, char *buf, size_t len)
{
	if (inet_ntop(AF_INET6, g->raw, buf, (socklen_t)len) == NULL)
		snprintf(buf, len, "?");
}

static void
guid_text(uint64_t guid, char *buf, size_t len)
{
	snprintf(buf, len, "%04x:%04x:%04x:%04x", (unsigned int)(guid >> 48) & 0xffff,
		 (unsigned int)(guid >> 32) & 0xffff, (unsigned int)(guid >> 16) & 0xffff,
		 (unsigned int)guid & 0xffff);
}

static json_t *
port_json(const struct psb_verbs_port *p)
{
	char buf[INET6_ADDRSTRLEN];
	json_t *o, *gids = json_array();
	unsigned int i;

	for (i = 0; i < p->ngids; i++) {
		gid_text(&p->gids[i], buf, sizeof(buf));
		json_array_append_new(gids, json_pack("{s:I,s:s,s:s,s:s}", "index",
			(json_int_t)p->gids[i].index, "gid", buf, "type",
			psb_verbs_gid_type_name(p->gids[i].type), "netdev", p->gids[i].netdev));
	}
	o = json_pack("{s:I,s:s,s:s,s:I,s:o,s:I}", "port", (json_int_t)p->num, "state", p->state,
		      "link_layer", p->link_layer, "active_mtu", (json_int_t)p->active_mtu,
		      "gids", gids, "gids_left_out", (json_int_t)p->gids_cut);
	/* a width or speed rdma-core did not say is left out rather than given as 0 */
	if (o != NULL && p->lanes != 0 && p->lane_mbps != 0) {
		snprintf(buf, sizeof(buf), "%ux", p->lanes);
		json_object_set_new(o, "width", json_string(buf));
		json_object_set_new(o, "rate_gbps", json_real(p->lanes * (double)p->lane_mbps /
							     1000));
	}
	return o;
}

static json_t *
dev_json(const struct psb_verbs_dev *d)
{
	char guid[32];
	json_t *o, *ports = json_array();
	unsigned int i;

	for (i = 0; i < d->nports; i++)
		json_array_append_new(ports, port_json(&d->ports[i]));
	guid_text(d->node_guid, guid, sizeof(guid));
	o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:I}", "name", d->name, "node_guid", guid,
		      "node_type", d->node_type, "transport", d->transport, "fw_ver", d->fw_ver,
		      "ports", ports, "ports_left_out", (json_int_t)d->ports_cut);
	if (o != NULL && d->error[0] != '\0')
		json_object_set_new(o, "error", json_string(d->error));
	return o;
}

json_t *
psb_verbs_json(const struct psb_verbs_list *l)
{
	json_t *devs;
	unsigned int i;

	if (!l->available)
		return json_pack("{s:b,s:s}", "available", 0, "error", l->error);
	devs = json_array();
	for (i = 0; i < l->ndevs; i++)
		json_array_append_new(devs, dev_json(&l->devs[i]));
	return json_pack("{s:b,s:o,s:I}", "available", 1, "devices", devs, "devices_left_out",
			 (json_int_t)l->devs_cut);
}

json_t *
psb_verbs_query_json(void)
{
	struct psb_verbs_list *l = malloc(sizeof(*l));
	json_t *o;

	if (l == NULL)
		return json_pack("{s:b,s:s}", "available", 0, "error", "RDMA devices: out of memory");
	psb_verbs_list(l);
	o = psb_verbs_json(l);
	free(l);
	return o;
}

static void
print_port(FILE *out, const struct psb_verbs_port *p)
{
	char gid[INET6_ADDRSTRLEN];
	unsigned int i;

	fprintf(out, "  port %u  %s  %s  MTU ", p->num, p->state, p->link_layer);
	if (p->active_mtu != 0)
		fprintf(out, "%u", p->active_mtu);
	else
		fprintf(out, "unknown");
	if (p->lanes != 0 && p->lane_mbps != 0)
		fprintf(out, "  %g Gb/s (%ux)\n", p->lanes * (double)p->lane_mbps / 1000, p->lanes);
	else
		fprintf(out, "  rate unknown\n");
	if (p->ngids == 0 && p->gids_cut == 0) {
		fprintf(out, "    no GIDs\n");
		return;
	}
	fprintf(out, "    %5s  %-39s  %-7s  %s\n", "INDEX", "GID", "TYPE", "NETDEV");
	for (i = 0; i < p->ngids; i++) {
		gid_text(&p->gids[i], gid, sizeof(gid));
		fprintf(out, "    %5u  %-39s  %-7s  %s\n", p->gids[i].index, gid,
			psb_verbs_gid_type_name(p->gids[i].type),
			p->gids[i].netdev[0] != '\0' ? p->gids[i].netdev : "-");
	}
	if (p->gids_cut != 0)
		fprintf(out, "    %u more GID(s) left out (at most %u a port)\n", p->gids_cut,
			PSB_VERBS_MAX_GIDS);
}

void
psb_verbs_print(FILE *out, const struct psb_verbs_list *l)
{
	const struct psb_verbs_dev *d;
	char guid[32];
	unsigned int i, j;

	if (!l->available) {
		fprintf(out, "%s\n", l->error);
		return;
	}
	for (i = 0; i < l->ndevs; i++) {
		d = &l->devs[i];
		guid_text(d->node_guid, guid, sizeof(guid));
		fprintf(out, "%s  %s, %s transport, node GUID %s, firmware %s\n", d->name,
			d->node_type, d->transport, guid, d->fw_ver[0] != '\0' ? d->fw_ver : "-");
		if (d->error[0] != '\0')
			fprintf(out, "  error: %s\n", d->error);
		for (j = 0; j < d->nports; j++)
			print_port(out, &d->ports[j]);
		if (d->ports_cut != 0)
			fprintf(out, "  %u more port(s) left out (at most %u a device)\n",
				d->ports_cut, PSB_VERBS_MAX_PORTS);
	}
	if (l->devs_cut != 0)
		fprintf(out, "%u more device(s) left out (at most %u)\n", l->devs_cut,
			PSB_VERBS_MAX_DEVS);
}
