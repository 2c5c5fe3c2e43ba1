/*
 * Frames and captures for psb's tests, once for all of them: the unit tests, the fuzz seeds,
 * the pcap replay and the capture generators (dissector, accounting). psb frames themselves
 * are psb_frame_build's (lib/proto); what is here builds what goes around and into them:
 * addresses, headers, values, batch records, repair and scheduler payloads, ICMP echoes,
 * edits that keep checksums right, and pcap files. tests/lib/psbframe.py is the same for
 * the shell tests.
 */
#ifndef PSB_TESTFRAME_H
#define PSB_TESTFRAME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "psb_proto.h"

/* Big-endian stores, as on the wire. */
void tf_put16(uint8_t *p, uint16_t v);
void tf_put32(uint8_t *p, uint32_t v);
void tf_put64(uint8_t *p, uint64_t v);
/* n float32 values, little-endian whatever the host (as psb carries them). */
void tf_put_floats(uint8_t *out, const float *v, unsigned int n);

/* Fixed-seed xorshift32: the same sequence on every run. */
uint32_t tf_xorshift32(uint32_t *state);

/*
 * Bytes written as hex digits, two a byte, spaces and newlines between bytes ignored (frames
 * copied from where they were published): their count, or 0 for anything else or more
 * than cap bytes.
 */
size_t tf_unhex(uint8_t *out, size_t cap, const char *hex);

/* The node with MAC 02:00:00:00:mac>>8:mac&0xff at ip:port (TF_ADDR: as an initializer). */
#define TF_ADDR(mac_, ip_, port_) { \
	.mac = { 0x02, 0x00, 0x00, 0x00, (uint8_t)((mac_) >> 8), (uint8_t)(mac_) }, \
	.ip = (ip_), .port = (port_) }
struct psb_addr tf_addr(uint16_t mac, uint32_t ip, uint16_t port);

/* The nodes of the wire-level tests and captures: one worker, one server, a scheduler. */
#define TF_WORKER_IP		0xc6120001u	/* 198.18.0.1 */
#define TF_SERVER_IP		0xc6120002u	/* 198.18.0.2 */
#define TF_SCHED_IP		0xc612000au	/* 198.18.0.10 */
#define TF_WORKER_PORT		40001
extern const struct psb_addr tf_worker;		/* 02:00:00:00:00:01 */
extern const struct psb_addr tf_server;		/* 02:00:00:00:00:02, PSB_UDP_PORT */
extern const struct psb_addr tf_sched;		/* 02:00:00:00:00:0a, PSB_SCHED_PORT */

/* A header of type with these fields, every other one 0. */
struct psb_hdr tf_hdr(uint8_t type, uint8_t flags, uint16_t sender, uint32_t req_id,
		uint32_t round, uint64_t key);
/* h carries len bytes, all of them in this one segment (total_len = seg_len = seg_size). */
void tf_whole(struct psb_hdr *h, uint32_t len);
/*
 * h is the segment at offset of a total-byte value cut at seg_size: seg_len is what is left
 * of the value there, at most seg_size (0 for an empty value).
 */
void tf_seg(struct psb_hdr *h, uint32_t total, uint32_t offset, uint16_t seg_size);

/* One row of a table of messages: its type, direction and the fields that tell it apart. */
struct tf_msg {
	const char *name;
	uint8_t type;
	int to_server;		/* tf_worker -> tf_server (a request), else back */
	uint16_t dport;		/* destination port when not the psb port (0) */
	uint8_t version;	/* 0: PSB_VERSION */
	uint8_t flags;
	uint8_t status;
	uint32_t total;		/* tf_seg's */
	uint32_t offset;
	uint16_t seg_size;
	uint32_t aux;
};
/* m's header (sender, req_id, round and key 0) and its addresses. */
struct psb_hdr tf_msg_hdr(const struct tf_msg *m, struct psb_addr *src, struct psb_addr *dst);

/*
 * A batch record: r's header, then r->len value bytes (none copied when value is NULL).
 * Returns the bytes it takes, PSB_REC_HLEN + r->len.
 */
size_t tf_rec_put(uint8_t *p, const struct psb_rec *r, const void *value);

/*
 * A repair record: rp's header, then its bitmap of rp->nbits bits from rp->bits (none when
 * NULL), zero-padded. Returns its length, psb_repair_len(rp->nbits).
 */
size_t tf_repair(uint8_t *out, const struct psb_repair *rp);

/*
 * A REGISTER_ACK's payload: rank, worker count, then each server's address and key range
 * [begin, end). Returns 4 + 24 bytes a server.
 */
struct tf_view_server {
	uint32_t ip;
	uint16_t port;
	uint64_t begin, end;
};
size_t tf_register_ack(uint8_t *out, uint16_t rank, uint16_t num_workers,
		const struct tf_view_server *s, unsigned int n);

/*
 * A HEARTBEAT_ACK's payload (psb_sched_lost_encode's, by hand): count, then each lost
 * server. Returns 4 + 16 bytes a server.
 */
struct tf_lost {
	uint16_t rank;
	uint8_t why;		/* 1: dead, 2: restarted */
	uint32_t ip;
	uint16_t port;
	uint32_t silent_ms;
};
size_t tf_heartbeat_ack(uint8_t *out, uint16_t count, const struct tf_lost *l, unsigned int n);

/* The IPv4 header checksum at ip, recomputed (the header's ihl long, at least 20 bytes). */
void tf_fix_ip_csum(uint8_t *ip);
/* The ICMP checksum of the len-byte message at ic, recomputed. */
void tf_fix_icmp_csum(uint8_t *ic, size_t len);
/* in (len bytes, untagged) with an 802.1Q tag tci after its MAC addresses. Returns len + 4. */
size_t tf_add_vlan(uint8_t *out, const uint8_t *in, size_t len, uint16_t tci);
/*
 * in (len bytes, untagged IPv4) with four NOP option bytes after its IPv4 header (ihl 6,
 * length and checksum fixed). Returns len + 4.
 */
size_t tf_add_ip_options(uint8_t *out, const uint8_t *in, size_t len);

/* An ICMP echo request from src to dst (MACs and IPs), checksums right. */
struct tf_echo {
	uint16_t ip_id;
	uint16_t ip_frag;	/* flags and fragment offset (0x4000: don't fragment) */
	uint8_t ttl;
	uint16_t ident, seq;
	const uint8_t *data;
	uint16_t data_len;
};
size_t tf_icmp_echo(uint8_t *out, const struct psb_addr *src, const struct psb_addr *dst,
		const struct tf_echo *e);

/* Where a BYE to ip:port goes: dst's address with them (255.255.255.255: every MAC too). */
struct psb_addr tf_bye_dst(const struct psb_addr *dst, uint32_t ip, uint16_t port);

/*
 * A pcap file of Ethernet frames, as libpcap writes it (microseconds, host byte order,
 * snaplen 65535). tf_pcap_open: 0, or -1 (errno says why); a write that failed is
 * remembered: tf_pcap_close then returns -1, as when closing fails.
 */
struct tf_pcap {
	FILE *fp;
	int failed;
};
int tf_pcap_open(struct tf_pcap *p, const char *path);
void tf_pcap_put(struct tf_pcap *p, const void *frame, size_t len, uint32_t sec, uint32_t usec);
int tf_pcap_close(struct tf_pcap *p);

/*
 * psb --config doc --output-dir dir --ctl none, its output on /dev/null unless
 * PSB_TEST_VERBOSE is set, waited for timeout_s at most: 0 with *status its wait status, or
 * -1 when it had to be killed (or could not be started).
 */
int tf_run_psb(const char *psb, const char *doc, const char *dir, unsigned int timeout_s,
		int *status);

#endif /* PSB_TESTFRAME_H */
