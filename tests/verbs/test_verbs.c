/* cmocka tests of the rdma-core view (drivers/psb_verbs): this host's answer and its renderings. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "psb_testskip.h"
#include "psb_verbs.h"

#define NO_KERNEL_RDMA "no RDMA support in this kernel (ibv_get_device_list: Function not " \
	"implemented; the kernel has no InfiniBand/RDMA subsystem)"
#define NO_DEVICES "no RDMA devices (rdma-core sees none)"

/* Entries of a sysfs class directory whose names start with prefix ("" any); -1: none. */
static int
class_entries(const char *dir, const char *prefix)
{
	struct dirent *e;
	DIR *d = opendir(dir);
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.' && strncmp(e->d_name, prefix, strlen(prefix)) == 0)
			n++;
	closedir(d);
	return n;
}

/* The table psb_verbs_print gives of l, as a string to free. */
static char *
printed(const struct psb_verbs_list *l)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	psb_verbs_print(f, l);
	fclose(f);
	return buf;
}

static char *
dumped(const struct psb_verbs_list *l)
{
	json_t *o = psb_verbs_json(l);
	char *s;

	assert_non_null(o);
	s = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
	json_decref(o);
	assert_non_null(s);
	return s;
}

static void
expect_text(const char *got, const char *want)
{
	if (strcmp(got, want) != 0)
		print_error("got:\n%s\nwant:\n%s\n", got, want);
	assert_string_equal(got, want);
}

/* A host without the kernel's RDMA, with it but no device, or with devices: each its answer. */
static void
test_list_this_host(void **state)
{
	struct psb_verbs_list *l = malloc(sizeof(*l));
	int ib = class_entries("/sys/class/infiniband", "");
	char *s, want[256];
	unsigned int i;
	int rc;

	assert_non_null(l);
	rc = psb_verbs_list(l);
	if (ib < 0) {
		/* ib_core brings both that class and RDMA netlink: without it rdma-core says ENOSYS */
		assert_int_equal(rc, -ENOSYS);
		assert_string_equal(l->error, NO_KERNEL_RDMA);
	} else if (ib == 0) {
		assert_int_equal(rc, -ENODEV);
		assert_string_equal(l->error, NO_DEVICES);
	} else if (class_entries("/sys/class/infiniband_verbs", "uverbs") <= 0) {
		/* devices without ib_uverbs: rdma-core cannot open them either */
		free(l);
		tf_skip("RDMA devices without ib_uverbs: this host's answer is not tested");
		return;
	} else {
		assert_int_equal(rc, 0);
		assert_true(l->available);
		assert_true(l->ndevs >= 1);
		for (i = 0; i < l->ndevs; i++)
			assert_true(l->devs[i].name[0] != '\0');
		free(l);
		return;
	}
	/* the reason, alike in every rendering */
	assert_false(l->available);
	assert_int_equal(l->ndevs, 0);
	s = dumped(l);
	snprintf(want, sizeof(want), "{\"available\":false,\"error\":\"%s\"}", l->error);
	expect_text(s, want);
	free(s);
	s = printed(l);
	snprintf(want, sizeof(want), "%s\n", l->error);
	expect_text(s, want);
	free(s);
	free(l);
}

static void
test_reasons(void **state)
{
	char buf[PSB_VERBS_ERR_LEN];

	assert_string_equal(psb_verbs_reason(0, buf, sizeof(buf)), NO_DEVICES);
	assert_string_equal(psb_verbs_reason(ENOSYS, buf, sizeof(buf)), NO_KERNEL_RDMA);
	assert_string_equal(psb_verbs_reason(EACCES, buf, sizeof(buf)), "cannot list RDMA devices "
			    "(ibv_get_device_list: Permission denied, EACCES)");
	assert_string_equal(psb_verbs_reason(4000, buf, sizeof(buf)), "cannot list RDMA devices "
			    "(ibv_get_device_list: Unknown error 4000)");
	/* a telemetry string keeps 127 bytes: the reasons of a host fit whole */
	assert_true(strlen(NO_KERNEL_RDMA) < 127);
	assert_string_equal(psb_verbs_gid_type_name(PSB_VERBS_GID_IB), "IB");
	assert_string_equal(psb_verbs_gid_type_name(PSB_VERBS_GID_ROCE_V1), "RoCE v1");
	assert_string_equal(psb_verbs_gid_type_name(PSB_VERBS_GID_ROCE_V2), "RoCE v2");
	assert_string_equal(psb_verbs_gid_type_name(7), "unknown");
}

static void
gid(uint8_t raw[16], const char *text)
{
	assert_int_equal(inet_pton(AF_INET6, text, raw), 1);
}

/* GIDs go to their port, up to the bound and counted beyond it; unused entries do not count. */
static void
test_put_gid(void **state)
{
	struct psb_verbs_dev *d = calloc(1, sizeof(*d));
	unsigned int lo = if_nametoindex("lo"), i;
	uint8_t raw[16], zero[16] = { 0 };
	char text[64];

	assert_non_null(d);
	assert_true(lo != 0);
	d->nports = 2;
	d->ports[0].num = 1;
	d->ports[1].num = 2;
	for (i = 0; i < PSB_VERBS_MAX_GIDS + 4; i++) {
		snprintf(text, sizeof(text), "fe80::%x", i + 1);
		gid(raw, text);
		assert_int_equal(psb_verbs_put_gid(d, 1, i, raw, PSB_VERBS_GID_ROCE_V2, lo),
				 i < PSB_VERBS_MAX_GIDS);
	}
	assert_int_equal(d->ports[0].ngids, PSB_VERBS_MAX_GIDS);
	assert_int_equal(d->ports[0].gids_cut, 4);
	assert_string_equal(d->ports[0].gids[0].netdev, "lo");
	assert_int_equal(d->ports[0].gids[PSB_VERBS_MAX_GIDS - 1].index, PSB_VERBS_MAX_GIDS - 1);
	gid(raw, "fe80::10");
	assert_memory_equal(d->ports[0].gids[PSB_VERBS_MAX_GIDS - 1].raw, raw, 16);

	/* an unused entry is skipped, not counted; a port not kept takes nothing */
	assert_int_equal(psb_verbs_put_gid(d, 2, 0, zero, PSB_VERBS_GID_ROCE_V1, lo), 0);
	assert_int_equal(d->ports[1].ngids + d->ports[1].gids_cut, 0);
	gid(raw, "::ffff:198.18.0.1");
	assert_int_equal(psb_verbs_put_gid(d, 3, 1, raw, PSB_VERBS_GID_ROCE_V2, lo), 0);
	assert_int_equal(d->ports[1].ngids + d->ports[1].gids_cut, 0);
	/* no netdev (InfiniBand), or one gone since: none named */
	assert_int_equal(psb_verbs_put_gid(d, 2, 1, raw, PSB_VERBS_GID_IB, 0), 1);
	assert_int_equal(psb_verbs_put_gid(d, 2, 2, raw, PSB_VERBS_GID_IB, 0x7ffffff0), 1);
	assert_int_equal(d->ports[1].ngids, 2);
	assert_string_equal(d->ports[1].gids[0].netdev, "");
	assert_string_equal(d->ports[1].gids[1].netdev, "");
	assert_int_equal(d->ports[1].gids[1].type, PSB_VERBS_GID_IB);
	free(d);
}

/* A RoCE device as rdma-core would give it, and one that could not be opened. */
static void
fill_example(struct psb_verbs_list *l)
{
	struct psb_verbs_dev *d = &l->devs[0];
	struct psb_verbs_port *p = &d->ports[0];

	memset(l, 0, sizeof(*l));
	l->available = 1;
	l->ndevs = 2;
	l->devs_cut = 1;
	snprintf(d->name, sizeof(d->name), "mlx5_0");
	d->node_guid = 0x0c42a10300657f2aull;
	snprintf(d->node_type, sizeof(d->node_type), "InfiniBand channel adapter");
	snprintf(d->transport, sizeof(d->transport), "InfiniBand");
	snprintf(d->fw_ver, sizeof(d->fw_ver), "16.35.2000");
	d->nports = 2;
	p->num = 1;
	snprintf(p->state, sizeof(p->state), "ACTIVE");
	snprintf(p->link_layer, sizeof(p->link_layer), "Ethernet");
	p->active_mtu = 1024;
	p->lanes = 1;
	p->lane_mbps = 25000;
	p->ngids = 2;
	p->gids_cut = 3;
	gid(p->gids[0].raw, "fe80::e42:a1ff:fe65:7f2a");
	p->gids[0].index = 0;
	p->gids[0].type = PSB_VERBS_GID_ROCE_V1;
	snprintf(p->gids[0].netdev, sizeof(p->gids[0].netdev), "veth0");
	gid(p->gids[1].raw, "::ffff:198.18.0.1");
	p->gids[1].index = 3;
	p->gids[1].type = PSB_VERBS_GID_ROCE_V2;
	snprintf(p->gids[1].netdev, sizeof(p->gids[1].netdev), "veth0");
	p = &d->ports[1];
	p->num = 2;
	snprintf(p->state, sizeof(p->state), "DOWN");
	snprintf(p->link_layer, sizeof(p->link_layer), "Ethernet");
	d = &l->devs[1];
	snprintf(d->name, sizeof(d->name), "rxe0");
	d->node_guid = 0x1;
	snprintf(d->node_type, sizeof(d->node_type), "InfiniBand channel adapter");
	snprintf(d->transport, sizeof(d->transport), "InfiniBand");
	snprintf(d->error, sizeof(d->error), "ibv_open_device: Permission denied");
	d->ports_cut = 5;
}

static void
test_render_json(void **state)
{
	struct psb_verbs_list *l = malloc(sizeof(*l));
	char *s;

	assert_non_null(l);
	fill_example(l);
	s = dumped(l);
	expect_text(s, "{\"available\":true,\"devices\":["
		"{\"fw_ver\":\"16.35.2000\",\"name\":\"mlx5_0\",\"node_guid\":\"0c42:a103:0065:7f2a\","
		"\"node_type\":\"InfiniBand channel adapter\",\"ports\":["
		"{\"active_mtu\":1024,\"gids\":["
		"{\"gid\":\"fe80::e42:a1ff:fe65:7f2a\",\"index\":0,\"netdev\":\"veth0\","
		"\"type\":\"RoCE v1\"},"
		"{\"gid\":\"::ffff:198.18.0.1\",\"index\":3,\"netdev\":\"veth0\",\"type\":\"RoCE v2\"}"
		"],\"gids_left_out\":3,\"link_layer\":\"Ethernet\",\"port\":1,\"rate_gbps\":25.0,"
		"\"state\":\"ACTIVE\",\"width\":\"1x\"},"
		"{\"active_mtu\":0,\"gids\":[],\"gids_left_out\":0,\"link_layer\":\"Ethernet\","
		"\"port\":2,\"state\":\"DOWN\"}"
		"],\"ports_left_out\":0,\"transport\":\"InfiniBand\"},"
		"{\"error\":\"ibv_open_device: Permission denied\",\"fw_ver\":\"\",\"name\":\"rxe0\","
		"\"node_guid\":\"0000:0000:0000:0001\",\"node_type\":\"InfiniBand channel adapter\","
		"\"ports\":[],\"ports_left_out\":5,\"transport\":\"InfiniBand\"}"
		"],\"devices_left_out\":1}");
	free(s);
	free(l);
}

static void
test_render_table(void **state)
{
	struct psb_verbs_list *l = malloc(sizeof(*l));
	char *s;

	assert_non_null(l);
	fill_example(l);
	s = printed(l);
	expect_text(s,
"mlx5_0  InfiniBand channel adapter, InfiniBand transport, node GUID 0c42:a103:0065:7f2a, "
"firmware 16.35.2000\n"
"  port 1  ACTIVE  Ethernet  MTU 1024  25 Gb/s (1x)\n"
"    INDEX  GID                                      TYPE     NETDEV\n"
"        0  fe80::e42:a1ff:fe65:7f2a                 RoCE v1  veth0\n"
"        3  ::ffff:198.18.0.1                        RoCE v2  veth0\n"
"    3 more GID(s) left out (at most 16 a port)\n"
"  port 2  DOWN  Ethernet  MTU unknown  rate unknown\n"
"    no GIDs\n"
"rxe0  InfiniBand channel adapter, InfiniBand transport, node GUID 0000:0000:0000:0001, "
"firmware -\n"
"  error: ibv_open_device: Permission denied\n"
"  5 more port(s) left out (at most 4 a device)\n"
"1 more device(s) left out (at most 16)\n");
	free(s);
	free(l);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_this_host),
		cmocka_unit_test(test_reasons),
		cmocka_unit_test(test_put_gid),
		cmocka_unit_test(test_render_json),
		cmocka_unit_test(test_render_table),
	};

	return tf_exit_status(cmocka_run_group_tests(tests, NULL, NULL));
}
