/* libFuzzer target: psb_frame_parse and what the datapath then does with each kind of frame. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "psb_proto.h"
#include "psb_reasm.h"
#include "fuzz_seeds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Invariant violations abort so that libFuzzer (or the replay driver) reports them. */
#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
		abort(); \
	} \
} while (0)

/* Mark every segment of a value only when it has few; larger ones get two marks. */
#define FUZZ_FULL_MARK_SEGS	256

static const uint8_t my_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };

/* What a node accepts: a strict server, a strict worker, permissive, and in between. */
static const struct psb_parse_cfg cfgs[] = {
	{ .my_ip = FUZZ_SERVER_IP, .psb_port = PSB_UDP_PORT, .sched_port = PSB_SCHED_PORT,
		.check_ip_csum = 1 },
	{ .my_ip = FUZZ_WORKER_IP, .psb_port = FUZZ_WORKER_PORT, .sched_port = 0,
		.check_ip_csum = 1 },
	{ .my_ip = 0, .psb_port = 0, .sched_port = 0, .check_ip_csum = 0 },
	{ .my_ip = FUZZ_SERVER_IP, .psb_port = 0, .sched_port = 0, .check_ip_csum = 0 },
	{ .my_ip = 0, .psb_port = PSB_UDP_PORT, .sched_port = 0, .check_ip_csum = 1 },
};

/* Room for any UDP payload the parser can accept, rebuilt untagged. */
static uint8_t rebuilt[PSB_FRAME_HLEN + 65536];

static uint16_t
rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* Exact-size heap copy: the sanitizers then see any access past the frame. */
static uint8_t *
dup_frame(const uint8_t *data, size_t size)
{
	uint8_t *c = malloc(size == 0 ? 1 : size);

	CHECK(c != NULL);
	memcpy(c, data, size);
	return c;
}

static int
same_hdr(const struct psb_hdr *a, const struct psb_hdr *b)
{
	return a->magic == b->magic && a->version == b->version && a->type == b->type &&
		a->flags == b->flags && a->status == b->status && a->sender == b->sender &&
		a->req_id == b->req_id && a->round == b->round && a->key == b->key &&
		a->total_len == b->total_len && a->offset == b->offset &&
		a->seg_len == b->seg_len && a->seg_size == b->seg_size && a->aux == b->aux;
}

/* Drive reassembly for a header that passed the segment checks, as the server does. */
static void
drive_reasm(const struct psb_hdr *h)
{
	struct psb_reasm r;
	struct psb_hdr o;
	uint32_t i, nseg;
	int rc, done = 0;

	rc = psb_reasm_init(&r, h->total_len, h->seg_size);
	if (rc == -ENOMEM)
		return;
	CHECK(rc == 0);
	nseg = r.nseg;
	CHECK(nseg == psb_seg_count(h->total_len, h->seg_size));
	rc = psb_reasm_mark(&r, h);
	CHECK(rc == (nseg == 1 ? PSB_REASM_DONE : PSB_REASM_NEW));
	CHECK(psb_reasm_mark(&r, h) == PSB_REASM_DUP);
	CHECK(psb_reasm_complete(&r) == (nseg == 1));
	if (nseg > 1 && nseg <= FUZZ_FULL_MARK_SEGS) {
		/* The rest of the value, as its sender would cut it. */
		for (i = 0; i < nseg; i++) {
			o = *h;
			o.offset = i * h->seg_size;
			o.seg_len = (uint16_t)(h->total_len - o.offset < h->seg_size ?
					h->total_len - o.offset : h->seg_size);
			CHECK(psb_hdr_check_segment(&o, o.seg_len) == 0);
			rc = psb_reasm_mark(&r, &o);
			if (o.offset == h->offset) {
				CHECK(rc == PSB_REASM_DUP);
				continue;
			}
			CHECK(rc == PSB_REASM_NEW || rc == PSB_REASM_DONE);
			done += rc == PSB_REASM_DONE;
			CHECK((rc == PSB_REASM_DONE) == (i == nseg - 1 ||
					(h->offset == (nseg - 1) * (uint32_t)h->seg_size &&
					 i == nseg - 2)));
		}
		CHECK(done == 1);
		CHECK(psb_reasm_complete(&r));
	}
	/* A header of another value is refused. */
	o = *h;
	o.total_len = h->total_len + 4;
	CHECK(psb_reasm_mark(&r, &o) == -EINVAL);
	psb_reasm_fini(&r);
	psb_reasm_fini(&r);
}

static void
check_psb(const uint8_t *data, size_t size, const struct psb_parse_cfg *cfg,
		const struct psb_frame *f)
{
	struct psb_frame g;
	uint8_t enc[PSB_HDR_LEN];
	size_t len;

	CHECK(f->l4_off >= f->l3_off + PSB_IP_HLEN);
	CHECK(f->payload == data + f->l4_off + PSB_UDP_HLEN + PSB_HDR_LEN);
	CHECK(f->payload + f->payload_len <= data + size);
	CHECK(f->hdr.magic == PSB_MAGIC);
	if (cfg->my_ip != 0)
		CHECK(f->dst.ip == cfg->my_ip ||
		      (f->dst.ip == 0xffffffffu && f->hdr.type == PSB_MSG_BYE));
	if (cfg->psb_port != 0)
		CHECK(f->dst.port == cfg->psb_port ||
				(cfg->sched_port != 0 && f->dst.port == cfg->sched_port));
	psb_hdr_encode(enc, &f->hdr);
	CHECK(memcmp(enc, f->payload - PSB_HDR_LEN, PSB_HDR_LEN) == 0);

	if (f->hdr.version == PSB_VERSION) {
		CHECK(psb_hdr_check_segment(&f->hdr, f->payload_len) == 0);
		CHECK(f->payload_len == f->hdr.seg_len);
		CHECK(f->hdr.total_len <= PSB_MAX_VALUE);
		drive_reasm(&f->hdr);
	}

	/* What a responder would send back parses to the same message. */
	len = psb_frame_build(rebuilt, &f->src, &f->dst, &f->hdr, f->payload, f->payload_len);
	CHECK(len == PSB_FRAME_HLEN + (size_t)f->payload_len);
	CHECK(psb_frame_parse(rebuilt, len, cfg, &g) == PSB_FRAME_PSB);
	CHECK(same_hdr(&g.hdr, &f->hdr));
	CHECK(g.payload_len == f->payload_len);
	CHECK(g.src.ip == f->src.ip && g.dst.ip == f->dst.ip);
	CHECK(g.src.port == f->src.port && g.dst.port == f->dst.port);
	CHECK(f->payload_len == 0 || memcmp(g.payload, f->payload, f->payload_len) == 0);
}

static void
check_arp_request(const uint8_t *data, size_t size, const struct psb_parse_cfg *cfg,
		const struct psb_frame *f)
{
	struct psb_parse_cfg peer = { .my_ip = f->src.ip };
	uint8_t out[64];
	struct psb_frame g;
	uint8_t *copy;
	size_t n;

	CHECK(cfg->my_ip != 0 && f->dst.ip == cfg->my_ip);
	CHECK((size_t)f->l3_off + 28 <= size);
	n = psb_arp_reply(out, data, size, my_mac, cfg->my_ip);
	CHECK(n == 42);
	CHECK(psb_frame_parse(out, n, &peer, &g) == PSB_FRAME_ARP_REPLY);
	CHECK(memcmp(g.src.mac, my_mac, 6) == 0);
	CHECK(g.src.ip == cfg->my_ip);
	CHECK(memcmp(g.dst.mac, f->src.mac, 6) == 0);
	CHECK(g.dst.ip == f->src.ip);
	CHECK(memcmp(out, f->src.mac, 6) == 0);

	/* The datapath answers in the receive buffer. */
	copy = dup_frame(data, size);
	CHECK(psb_arp_reply(copy, copy, size, my_mac, cfg->my_ip) == 42);
	CHECK(memcmp(copy, out, 42) == 0);
	free(copy);
}

static void
check_icmp_echo(const uint8_t *data, size_t size, const struct psb_frame *f)
{
	static const struct psb_parse_cfg any = { .check_ip_csum = 1 };
	const uint8_t *ip;
	struct psb_frame g;
	uint8_t *copy;
	size_t ihl, ip_len;

	copy = dup_frame(data, size);
	CHECK(psb_icmp_echo_reply(copy, size, f) == 0);
	ip = copy + f->l3_off;
	ihl = (ip[0] & 0x0fu) * 4u;
	ip_len = rd16(ip + 2);
	CHECK(f->l4_off == f->l3_off + ihl);
	CHECK(f->l3_off + ip_len <= size);
	CHECK(psb_csum_partial(ip, ihl, 0) == 0xffff);
	CHECK(psb_csum_partial(copy + f->l4_off, ip_len - ihl, 0) == 0xffff);
	CHECK(copy[f->l4_off] == 0 && copy[f->l4_off + 1] == 0);
	CHECK(memcmp(copy, data + 6, 6) == 0 && memcmp(copy + 6, data, 6) == 0);
	CHECK(memcmp(ip + 12, data + f->l3_off + 16, 4) == 0);
	CHECK(memcmp(ip + 16, data + f->l3_off + 12, 4) == 0);
	/* An echo reply is a well-formed frame that psb itself never answers. */
	CHECK(psb_frame_parse(copy, size, &any, &g) == -PSB_DROP_ICMP);
	free(copy);
}

/* The input read as a bare header: encode/decode are inverse, reassembly takes it. */
static void
check_bare_header(const uint8_t *data, size_t size)
{
	uint8_t enc[PSB_HDR_LEN];
	struct psb_hdr h;

	if (size < PSB_HDR_LEN)
		return;
	psb_hdr_decode(&h, data);
	psb_hdr_encode(enc, &h);
	CHECK(memcmp(enc, data, PSB_HDR_LEN) == 0);
	if (psb_hdr_check_segment(&h, h.seg_len) == 0)
		drive_reasm(&h);
}

/* The input read as text: the address parsers take or refuse it without harm. */
static void
check_text(const uint8_t *data, size_t size)
{
	char s[48], back[16];
	uint8_t mac[6];
	uint32_t ip, ip2;
	size_t n = size < sizeof(s) - 1 ? size : sizeof(s) - 1;

	memcpy(s, data, n);
	s[n] = '\0';
	if (psb_parse_ip(s, &ip) == 0) {
		CHECK(psb_parse_ip(psb_ip_str(ip, back), &ip2) == 0);
		CHECK(ip2 == ip);
	}
	(void)psb_parse_mac(s, mac);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct psb_frame f;
	unsigned int i;
	int rc;

	for (i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		rc = psb_frame_parse(data, size, &cfgs[i], &f);
		if (rc < 0) {
			CHECK(-rc > PSB_DROP_NONE && -rc < PSB_DROP_MAX);
			CHECK(psb_drop_names[-rc] != NULL);
			continue;
		}
		CHECK(rc == (int)f.kind);
		CHECK(f.l3_off == PSB_ETH_HLEN || f.l3_off == PSB_ETH_HLEN + 4);
		switch (rc) {
		case PSB_FRAME_PSB:
			check_psb(data, size, &cfgs[i], &f);
			break;
		case PSB_FRAME_ARP_REQUEST:
			check_arp_request(data, size, &cfgs[i], &f);
			break;
		case PSB_FRAME_ARP_REPLY:
			CHECK((size_t)f.l3_off + 28 <= size);
			break;
		case PSB_FRAME_ICMP_ECHO:
			check_icmp_echo(data, size, &f);
			break;
		default:
			CHECK(!"unknown frame kind");
		}
	}
	check_bare_header(data, size);
	check_text(data, size);
	return 0;
}
