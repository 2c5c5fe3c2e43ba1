/* Frames and captures for psb's tests (see psb_testframe.h). */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "psb_testframe.h"

void
tf_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

void
tf_put32(uint8_t *p, uint32_t v)
{
	tf_put16(p, (uint16_t)(v >> 16));
	tf_put16(p + 2, (uint16_t)v);
}

void
tf_put64(uint8_t *p, uint64_t v)
{
	tf_put32(p, (uint32_t)(v >> 32));
	tf_put32(p + 4, (uint32_t)v);
}

void
tf_put_floats(uint8_t *out, const float *v, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		uint32_t bits;

		memcpy(&bits, &v[i], 4);
		out[4 * i] = (uint8_t)bits;
		out[4 * i + 1] = (uint8_t)(bits >> 8);
		out[4 * i + 2] = (uint8_t)(bits >> 16);
		out[4 * i + 3] = (uint8_t)(bits >> 24);
	}
}

uint32_t
tf_xorshift32(uint32_t *state)
{
	uint32_t x = *state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return x;
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

size_t
tf_unhex(uint8_t *out, size_t cap, const char *hex)
{
	size_t n = 0;
	int hi, lo;

	while (*hex != '\0') {
		if (*hex == ' ' || *hex == '\n') {
			hex++;
			continue;
		}
		hi = hexval(hex[0]);
		lo = hi < 0 ? -1 : hexval(hex[1]);
		if (lo < 0 || n == cap)
			return 0;
		out[n++] = (uint8_t)(hi << 4 | lo);
		hex += 2;
	}
	return n;
}

const struct psb_addr tf_worker = TF_ADDR(0x01, TF_WORKER_IP, TF_WORKER_PORT);
const struct psb_addr tf_server = TF_ADDR(0x02, TF_SERVER_IP, PSB_UDP_PORT);
const struct psb_addr tf_sched = TF_ADDR(0x0a, TF_SCHED_IP, PSB_SCHED_PORT);

struct psb_addr
tf_addr(uint16_t mac, uint32_t ip, uint16_t port)
{
	struct psb_addr a;

	memset(&a, 0, sizeof(a));	/* the padding too */
	a.mac[0] = 0x02;
	a.mac[4] = (uint8_t)(mac >> 8);
	a.mac[5] = (uint8_t)mac;
	a.ip = ip;
	a.port = port;
	return a;
}

struct psb_hdr
tf_hdr(uint8_t type, uint8_t flags, uint16_t sender, uint32_t req_id, uint32_t round,
		uint64_t key)
{
	struct psb_hdr h;

	psb_hdr_init(&h, type);
	h.flags = flags;
	h.sender = sender;
	h.req_id = req_id;
	h.round = round;
	h.key = key;
	return h;
}

void
tf_whole(struct psb_hdr *h, uint32_t len)
{
	h->total_len = len;
	h->seg_len = (uint16_t)len;
	h->seg_size = (uint16_t)len;
}

void
tf_seg(struct psb_hdr *h, uint32_t total, uint32_t offset, uint16_t seg_size)
{
	h->total_len = total;
	h->offset = offset;
	h->seg_size = seg_size;
	h->seg_len = 0;
	if (total > offset)
		h->seg_len = (uint16_t)(total - offset < seg_size ? total - offset : seg_size);
}

struct psb_hdr
tf_msg_hdr(const struct tf_msg *m, struct psb_addr *src, struct psb_addr *dst)
{
	struct psb_hdr h = tf_hdr(m->type, m->flags, 0, 0, 0, 0);

	*src = m->to_server ? tf_worker : tf_server;
	*dst = m->to_server ? tf_server : tf_worker;
	if (m->dport != 0)
		dst->port = m->dport;
	if (m->version != 0)
		h.version = m->version;
	h.status = m->status;
	h.aux = m->aux;
	tf_seg(&h, m->total, m->offset, m->seg_size);
	return h;
}

size_t
tf_rec_put(uint8_t *p, const struct psb_rec *r, const void *value)
{
	psb_rec_encode(p, r);
	if (value != NULL && r->len != 0)
		memcpy(p + PSB_REC_HLEN, value, r->len);
	return PSB_REC_HLEN + (size_t)r->len;
}

size_t
tf_repair(uint8_t *out, const struct psb_repair *rp)
{
	size_t len = psb_repair_len(rp->nbits);

	memset(out, 0, len);
	psb_repair_encode(out, rp);
	if (rp->bits != NULL)
		memcpy(out + PSB_REPAIR_HLEN, rp->bits, (rp->nbits + 7) / 8);
	return len;
}

size_t
tf_register_ack(uint8_t *out, uint16_t rank, uint16_t num_workers,
		const struct tf_view_server *s, unsigned int n)
{
	unsigned int i;

	memset(out, 0, 4 + 24 * (size_t)n);
	tf_put16(out, rank);
	tf_put16(out + 2, num_workers);
	for (i = 0; i < n; i++) {
		uint8_t *e = out + 4 + 24 * i;

		tf_put32(e, s[i].ip);
		tf_put16(e + 4, s[i].port);
		tf_put64(e + 8, s[i].begin);
		tf_put64(e + 16, s[i].end);
	}
	return 4 + 24 * (size_t)n;
}

size_t
tf_heartbeat_ack(uint8_t *out, uint16_t count, const struct tf_lost *l, unsigned int n)
{
	unsigned int i;

	memset(out, 0, 4 + 16 * (size_t)n);
	tf_put16(out, count);
	for (i = 0; i < n; i++) {
		uint8_t *e = out + 4 + 16 * i;

		tf_put16(e, l[i].rank);
		e[2] = l[i].why;
		tf_put32(e + 4, l[i].ip);
		tf_put16(e + 8, l[i].port);
		tf_put32(e + 12, l[i].silent_ms);
	}
	return 4 + 16 * (size_t)n;
}

void
tf_fix_ip_csum(uint8_t *ip)
{
	size_t ihl = (ip[0] & 0x0fu) * 4u;

	if (ihl < PSB_IP_HLEN)
		ihl = PSB_IP_HLEN;
	tf_put16(ip + 10, 0);
	tf_put16(ip + 10, (uint16_t)~psb_csum_partial(ip, ihl, 0));
}

void
tf_fix_icmp_csum(uint8_t *ic, size_t len)
{
	tf_put16(ic + 2, 0);
	tf_put16(ic + 2, (uint16_t)~psb_csum_partial(ic, len, 0));
}

size_t
tf_add_vlan(uint8_t *out, const uint8_t *in, size_t len, uint16_t tci)
{
	memcpy(out, in, 12);
	tf_put16(out + 12, 0x8100);
	tf_put16(out + 14, tci);
	memcpy(out + 16, in + 12, len - 12);
	return len + 4;
}

size_t
tf_add_ip_options(uint8_t *out, const uint8_t *in, size_t len)
{
	const size_t l4 = PSB_ETH_HLEN + PSB_IP_HLEN;
	uint8_t *ip = out + PSB_ETH_HLEN;

	memcpy(out, in, l4);
	memset(out + l4, 0x01, 4);
	memcpy(out + l4 + 4, in + l4, len - l4);
	ip[0] = 0x46;
	tf_put16(ip + 2, (uint16_t)(len + 4 - PSB_ETH_HLEN));
	tf_fix_ip_csum(ip);
	return len + 4;
}

size_t
tf_icmp_echo(uint8_t *out, const struct psb_addr *src, const struct psb_addr *dst,
		const struct tf_echo *e)
{
	uint8_t *ip = out + PSB_ETH_HLEN;
	uint8_t *ic = ip + PSB_IP_HLEN;
	uint16_t ip_len = (uint16_t)(PSB_IP_HLEN + 8 + e->data_len);

	memcpy(out, dst->mac, 6);
	memcpy(out + 6, src->mac, 6);
	tf_put16(out + 12, 0x0800);
	memset(ip, 0, PSB_IP_HLEN);
	ip[0] = 0x45;
	tf_put16(ip + 2, ip_len);
	tf_put16(ip + 4, e->ip_id);
	tf_put16(ip + 6, e->ip_frag);
	ip[8] = e->ttl;
	ip[9] = 1;
	tf_put32(ip + 12, src->ip);
	tf_put32(ip + 16, dst->ip);
	tf_fix_ip_csum(ip);
	ic[0] = 8;
	ic[1] = 0;
	tf_put16(ic + 4, e->ident);
	tf_put16(ic + 6, e->seq);
	if (e->data_len != 0)
		memcpy(ic + 8, e->data, e->data_len);
	tf_fix_icmp_csum(ic, 8u + e->data_len);
	return PSB_ETH_HLEN + (size_t)ip_len;
}

struct psb_addr
tf_bye_dst(const struct psb_addr *dst, uint32_t ip, uint16_t port)
{
	struct psb_addr a = *dst;

	a.ip = ip;
	a.port = port;
	if (ip == 0xffffffffu)
		memset(a.mac, 0xff, 6);
	return a;
}

/* A pcap file's header, in host byte order as libpcap writes it (a reader swaps). */
struct pcap_file_hdr {
	uint32_t magic;
	uint16_t version_major, version_minor;
	int32_t thiszone;
	uint32_t sigfigs, snaplen, linktype;
};

int
tf_pcap_open(struct tf_pcap *p, const char *path)
{
	const struct pcap_file_hdr fh = {
		.magic = 0xa1b2c3d4u, .version_major = 2, .version_minor = 4, .snaplen = 65535,
		.linktype = 1,	/* Ethernet */
	};

	p->failed = 0;
	p->fp = fopen(path, "wb");
	if (p->fp == NULL)
		return -1;
	if (fwrite(&fh, sizeof(fh), 1, p->fp) != 1)
		p->failed = 1;
	return 0;
}

void
tf_pcap_put(struct tf_pcap *p, const void *frame, size_t len, uint32_t sec, uint32_t usec)
{
	const uint32_t rec[4] = { sec, usec, (uint32_t)len, (uint32_t)len };

	if (fwrite(rec, sizeof(rec), 1, p->fp) != 1 ||
	    (len != 0 && fwrite(frame, 1, len, p->fp) != len))
		p->failed = 1;
}

int
tf_pcap_close(struct tf_pcap *p)
{
	int rc = p->failed ? -1 : 0;

	if (fclose(p->fp) != 0)
		rc = -1;
	p->fp = NULL;
	return rc;
}

int
tf_run_psb(const char *psb, const char *doc, const char *dir, unsigned int timeout_s,
		int *status)
{
	pid_t pid = fork();
	unsigned int i;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		if (devnull >= 0 && getenv("PSB_TEST_VERBOSE") == NULL) {
			dup2(devnull, 1);
			dup2(devnull, 2);
		}
		execl(psb, psb, "--config", doc, "--output-dir", dir, "--ctl", "none",
		      (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < timeout_s * 10; i++) {
		if (waitpid(pid, status, WNOHANG) == pid)
			return 0;
		usleep(100000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, status, 0);
	return -1;
}
