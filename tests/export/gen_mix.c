/*
 * gen_mix OUT.pcap: a known mix of frames for a psb server at 198.18.0.1 (02:00:00:00:00:01,
 * async, one worker), and on stdout, as JSON, what psb must count for them: every frame once,
 * answered, handed on, or dropped with its reason. test_accounting.sh checks every export.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "psb_testframe.h"

#define PSB_IP		0xc6120001u	/* 198.18.0.1 */
#define W0_IP		0xc612000au	/* 198.18.0.10 */

static struct tf_pcap pcap;
static uint8_t frame[PSB_MAX_FRAME + 128];
static unsigned int nframes;

static const struct psb_addr psb = TF_ADDR(0x01, PSB_IP, PSB_UDP_PORT);
static const struct psb_addr w0 = TF_ADDR(0x10, W0_IP, 9432);
static const struct psb_addr w1 = TF_ADDR(0x11, 0xc612000bu, 9432);

/* What each outcome counter must read; drops by enum psb_drop. */
static struct {
	unsigned int handed, not_served, arp_replies, arp_learned, icmp_replies, byes, bye_ignored;
	unsigned int drops[PSB_DROP_MAX];
	unsigned int answers;		/* frames psb sends back */
} want;

static void
emit(size_t len)
{
	tf_pcap_put(&pcap, frame, len, 1700000000, nframes);
	nframes++;
}

static void
fix_ip_csum(void)
{
	tf_fix_ip_csum(frame + PSB_ETH_HLEN);
}

/* A one-segment message from src to dst carrying len value bytes (a multiple of 4). */
static size_t
msg(const struct psb_addr *src, const struct psb_addr *dst, uint8_t type, uint64_t key,
		uint32_t req, uint16_t len)
{
	static uint8_t value[PSB_MAX_FRAME];
	struct psb_hdr h = tf_hdr(type, 0, 0, req, 0, key);

	tf_whole(&h, len);
	if (len == 0)
		h.seg_size = 1432;
	memset(value, 0x3f, len);
	return psb_frame_build(frame, src, dst, &h, value, len);
}

static size_t
push(uint64_t key, uint32_t req)
{
	return msg(&w0, &psb, PSB_MSG_PUSH, key, req, 16);
}

/* An ICMP message of type to psb, with a correct checksum. */
static size_t
icmp(uint8_t type)
{
	size_t len = msg(&w0, &psb, PSB_MSG_PULL, 0, 0, 0);
	uint8_t *ic = frame + PSB_ETH_HLEN + PSB_IP_HLEN;

	frame[PSB_ETH_HLEN + 9] = 1;
	fix_ip_csum();
	memset(ic, 0, 8);
	ic[0] = type;
	tf_fix_icmp_csum(ic, len - PSB_ETH_HLEN - PSB_IP_HLEN);
	return len;
}

static size_t
bye(const struct psb_addr *src, uint32_t dst_ip, uint16_t dst_port)
{
	struct psb_addr dst = tf_bye_dst(&psb, dst_ip, dst_port);

	return msg(src, &dst, PSB_MSG_BYE, 0, 0, 0);
}

/* n frames dropped for reason r, each made by mk. */
static void
drops(enum psb_drop r, unsigned int n, size_t (*mk)(void))
{
	unsigned int i;

	for (i = 0; i < n; i++)
		emit(mk());
	want.drops[r] += n;
}

static size_t mk_truncated(void) { push(1, 1); return 20; }
static size_t mk_ethertype(void) { size_t l = push(1, 1); frame[12] = 0x86; frame[13] = 0xdd;
	return l; }
static size_t mk_ip_header(void) { size_t l = push(1, 1); frame[14] = 0x65; fix_ip_csum();
	return l; }
static size_t mk_ip_checksum(void) { size_t l = push(1, 1); frame[24] ^= 0x5a; return l; }
static size_t mk_ip_fragment(void) { size_t l = push(1, 1); frame[20] = 0x20; fix_ip_csum();
	return l; }
static size_t mk_not_mine(void) { size_t l = push(1, 1); frame[33] = 77; fix_ip_csum();
	return l; }
static size_t mk_ip_protocol(void) { size_t l = push(1, 1); frame[23] = 6; fix_ip_csum();
	return l; }
static size_t mk_udp_length(void) { size_t l = push(1, 1); frame[39] += 4; return l; }
static size_t mk_udp_port(void) { size_t l = push(1, 1); frame[36] = 0x30; return l; }
static size_t mk_bad_magic(void) { size_t l = push(1, 1); frame[42] = 0; return l; }
static size_t mk_bad_segment(void) { size_t l = push(1, 1); frame[42 + 33] = 12; return l; }
static size_t mk_icmp(void) { return icmp(0); }
static size_t mk_oversize(void) { return msg(&w0, &psb, PSB_MSG_PUSH, 9, 1, 9216); }

static size_t
mk_arp(void)
{
	size_t l = psb_arp_request(frame, w0.mac, w0.ip, PSB_IP);

	frame[PSB_ETH_HLEN + 7] = 3;	/* neither request nor reply */
	return l;
}

int
main(int argc, char **argv)
{
	struct psb_addr stranger = w0, forged = w0;
	unsigned int i;

	if (argc != 2) {
		fprintf(stderr, "usage: gen_mix OUT.pcap\n");
		return 2;
	}
	if (tf_pcap_open(&pcap, argv[1]) != 0) {
		fprintf(stderr, "gen_mix: cannot write %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	stranger.ip = 0xc6120063u;
	stranger.mac[5] = 0x63;
	forged.mac[5] = 0x66;

	/* answered: pushes and pulls (the first makes the worker a known peer), ARP, ping */
	for (i = 1; i <= 3; i++)
		emit(push(i, i));
	emit(psb_arp_request(frame, w0.mac, w0.ip, PSB_IP));
	emit(psb_arp_request(frame, w0.mac, w0.ip, PSB_IP));
	want.arp_replies = 2;
	for (i = 0; i < 3; i++)
		emit(icmp(8));
	want.icmp_replies = 3;
	/* an ARP reply of another host to psb: learnt, not answered */
	psb_arp_request(frame, w1.mac, w1.ip, PSB_IP);
	frame[PSB_ETH_HLEN + 7] = 2;
	memcpy(frame, psb.mac, 6);
	memcpy(frame + PSB_ETH_HLEN + 18, psb.mac, 6);
	emit(42);
	want.arp_learned = 1;
	/* spoofed BYEs, then the worker's own: pcap ports never pause, so the pulls go on */
	emit(bye(&stranger, PSB_IP, PSB_UDP_PORT));
	emit(bye(&w0, PSB_IP, PSB_SCHED_PORT));
	emit(bye(&forged, 0xffffffffu, PSB_UDP_PORT));
	want.bye_ignored = 3;
	emit(bye(&w0, 0xffffffffu, PSB_UDP_PORT));
	want.byes = 1;
	emit(msg(&w0, &psb, PSB_MSG_PULL, 1, 4, 0));
	emit(msg(&w0, &psb, PSB_MSG_PULL, 2, 5, 0));
	want.handed = 5;
	/* responses sent to a server: valid psb, nobody here serves them */
	emit(msg(&w0, &psb, PSB_MSG_PUSH_ACK, 1, 6, 0));
	emit(msg(&w0, &psb, PSB_MSG_PULL_RESP, 1, 7, 0));
	want.not_served = 2;
	want.answers = want.handed + want.arp_replies + want.icmp_replies;

	/* every reason psb drops for, a different number of times each */
	drops(PSB_DROP_TRUNCATED, 1, mk_truncated);
	drops(PSB_DROP_ETHERTYPE, 2, mk_ethertype);
	drops(PSB_DROP_IP_HDR, 3, mk_ip_header);
	drops(PSB_DROP_IP_CSUM, 4, mk_ip_checksum);
	drops(PSB_DROP_IP_FRAG, 5, mk_ip_fragment);
	drops(PSB_DROP_NOT_MINE, 6, mk_not_mine);
	drops(PSB_DROP_PROTO, 7, mk_ip_protocol);
	drops(PSB_DROP_UDP_LEN, 8, mk_udp_length);
	drops(PSB_DROP_PORT, 9, mk_udp_port);
	drops(PSB_DROP_MAGIC, 10, mk_bad_magic);
	drops(PSB_DROP_SEGMENT, 11, mk_bad_segment);
	drops(PSB_DROP_ARP, 12, mk_arp);
	drops(PSB_DROP_ICMP, 13, mk_icmp);
	drops(PSB_DROP_OVERSIZE, 14, mk_oversize);

	if (tf_pcap_close(&pcap) != 0) {
		fprintf(stderr, "gen_mix: cannot write %s\n", argv[1]);
		return 1;
	}
	printf("{\"frames\": %u, \"answers\": %u, \"handed\": %u, \"not_served\": %u, "
		"\"ring_full\": 0, \"no_mbuf\": 0, \"arp_replies\": %u, \"arp_learned\": %u, "
		"\"icmp_replies\": %u, \"byes\": %u, \"bye_ignored\": %u, \"drops\": {", nframes,
		want.answers, want.handed, want.not_served, want.arp_replies, want.arp_learned,
		want.icmp_replies, want.byes, want.bye_ignored);
	for (i = 1; i < PSB_DROP_MAX; i++)
		printf("%s\"%s\": %u", i > 1 ? ", " : "", psb_drop_names[i], want.drops[i]);
	printf("}}\n");
	return 0;
}
