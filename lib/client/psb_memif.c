/* memif control messages and ring checks (psb_memif.h): byte layouts, no I/O. */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "psb_memif.h"

/*
 * Offsets within a message: the type (16 bits), then the body, packed. memif's messages
 * are in the host's byte order, as both ends share the host.
 */
#define BODY	2

static void
put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

static void
put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void
put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static uint16_t
get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static uint32_t
get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t
get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* A string field of n bytes: copied, cut there and terminated whatever the peer put. */
static void
get_str(char *dst, const uint8_t *p, size_t n)
{
	size_t l = strnlen((const char *)p, n);

	memcpy(dst, p, l);
	memset(dst + l, 0, n + 1 - l);
}

static void
put_str(uint8_t *p, const char *s, size_t n)
{
	size_t l = strnlen(s, n);

	memcpy(p, s, l);
}

int
psb_memif_msg_encode(uint8_t *buf, const struct psb_memif_msg *m)
{
	uint8_t *b = buf + BODY;

	memset(buf, 0, PSB_MEMIF_MSG_LEN);
	if (m->type == PSB_MEMIF_MSG_NONE || m->type >= PSB_MEMIF_MSG_MAX)
		return -EINVAL;
	put16(buf, m->type);
	switch (m->type) {
	case PSB_MEMIF_MSG_HELLO:
		put_str(b, m->u.hello.name, PSB_MEMIF_NAME_LEN);
		put16(b + 32, m->u.hello.min_version);
		put16(b + 34, m->u.hello.max_version);
		put16(b + 36, m->u.hello.max_region);
		put16(b + 38, m->u.hello.max_s2c_ring);
		put16(b + 40, m->u.hello.max_c2s_ring);
		b[42] = m->u.hello.max_log2_ring_size;
		break;
	case PSB_MEMIF_MSG_INIT:
		put16(b, m->u.init.version);
		put32(b + 2, m->u.init.id);
		b[6] = m->u.init.mode;
		memcpy(b + 7, m->u.init.secret, PSB_MEMIF_SECRET_LEN);
		put_str(b + 31, m->u.init.name, PSB_MEMIF_NAME_LEN);
		break;
	case PSB_MEMIF_MSG_ADD_REGION:
		put16(b, m->u.add_region.index);
		put64(b + 2, m->u.add_region.size);
		break;
	case PSB_MEMIF_MSG_ADD_RING:
		put16(b, m->u.add_ring.flags);
		put16(b + 2, m->u.add_ring.index);
		put16(b + 4, m->u.add_ring.region);
		put32(b + 6, m->u.add_ring.offset);
		b[10] = m->u.add_ring.log2_ring_size;
		put16(b + 11, m->u.add_ring.private_hdr_size);
		break;
	case PSB_MEMIF_MSG_CONNECT:
	case PSB_MEMIF_MSG_CONNECTED:
		put_str(b, m->u.connect.if_name, PSB_MEMIF_NAME_LEN);
		break;
	case PSB_MEMIF_MSG_DISCONNECT:
		put32(b, m->u.disconnect.code);
		put_str(b + 4, m->u.disconnect.reason, PSB_MEMIF_DISC_LEN);
		break;
	default:	/* ACK: the type alone */
		break;
	}
	return 0;
}

int
psb_memif_msg_decode(struct psb_memif_msg *m, const uint8_t *buf, size_t len)
{
	const uint8_t *b = buf + BODY;

	memset(m, 0, sizeof(*m));
	if (len != PSB_MEMIF_MSG_LEN)
		return -EMSGSIZE;
	m->type = get16(buf);
	switch (m->type) {
	case PSB_MEMIF_MSG_ACK:
		break;
	case PSB_MEMIF_MSG_HELLO:
		get_str(m->u.hello.name, b, PSB_MEMIF_NAME_LEN);
		m->u.hello.min_version = get16(b + 32);
		m->u.hello.max_version = get16(b + 34);
		m->u.hello.max_region = get16(b + 36);
		m->u.hello.max_s2c_ring = get16(b + 38);
		m->u.hello.max_c2s_ring = get16(b + 40);
		m->u.hello.max_log2_ring_size = b[42];
		break;
	case PSB_MEMIF_MSG_INIT:
		m->u.init.version = get16(b);
		m->u.init.id = get32(b + 2);
		m->u.init.mode = b[6];
		memcpy(m->u.init.secret, b + 7, PSB_MEMIF_SECRET_LEN);
		get_str(m->u.init.name, b + 31, PSB_MEMIF_NAME_LEN);
		break;
	case PSB_MEMIF_MSG_ADD_REGION:
		m->u.add_region.index = get16(b);
		m->u.add_region.size = get64(b + 2);
		break;
	case PSB_MEMIF_MSG_ADD_RING:
		m->u.add_ring.flags = get16(b);
		m->u.add_ring.index = get16(b + 2);
		m->u.add_ring.region = get16(b + 4);
		m->u.add_ring.offset = get32(b + 6);
		m->u.add_ring.log2_ring_size = b[10];
		m->u.add_ring.private_hdr_size = get16(b + 11);
		break;
	case PSB_MEMIF_MSG_CONNECT:
	case PSB_MEMIF_MSG_CONNECTED:
		get_str(m->u.connect.if_name, b, PSB_MEMIF_NAME_LEN);
		break;
	case PSB_MEMIF_MSG_DISCONNECT:
		m->u.disconnect.code = get32(b);
		get_str(m->u.disconnect.reason, b + 4, PSB_MEMIF_DISC_LEN);
		break;
	default:
		return -EPROTO;
	}
	return 0;
}

const char *
psb_memif_msg_name(uint16_t type)
{
	static const char *const names[PSB_MEMIF_MSG_MAX] = {
		"NONE", "ACK", "HELLO", "INIT", "ADD_REGION", "ADD_RING", "CONNECT", "CONNECTED",
		"DISCONNECT",
	};

	return type < PSB_MEMIF_MSG_MAX ? names[type] : "unknown";
}

int
psb_memif_hello_check(const struct psb_memif_msg *m, uint8_t *log2, const char **why)
{
	if (m->type != PSB_MEMIF_MSG_HELLO) {
		*why = "the first message is not HELLO";
		return -EPROTO;
	}
	if (m->u.hello.min_version > PSB_MEMIF_VERSION ||
	    m->u.hello.max_version < PSB_MEMIF_VERSION) {
		*why = "the server does not speak memif 2.0";
		return -EPROTO;
	}
	/* the maxima are the highest index the server takes: 0 is room for one */
	if (m->u.hello.max_log2_ring_size == 0) {
		*why = "the server takes no ring";
		return -EPROTO;
	}
	if (m->u.hello.max_log2_ring_size < *log2)
		*log2 = m->u.hello.max_log2_ring_size;
	return 0;
}

int
psb_memif_desc_check(const struct psb_memif_desc *d, uint16_t region, uint32_t offset,
		uint32_t buf_size)
{
	if (d->flags & PSB_MEMIF_DESC_NEXT)
		return PSB_MEMIF_BAD_CHAIN;
	if (d->region != region || d->offset != offset)
		return PSB_MEMIF_BAD_DESC;
	if (d->length == 0 || d->length > buf_size)
		return PSB_MEMIF_BAD_LENGTH;
	return PSB_MEMIF_BAD_NONE;
}

unsigned int
psb_memif_take_fds(struct msghdr *mh, int *fds, unsigned int max)
{
	struct cmsghdr *cm;
	unsigned int n = 0;
	size_t i, cnt;
	int fd;

	for (cm = CMSG_FIRSTHDR(mh); cm != NULL; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		cnt = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < cnt; i++) {
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (n < max)
				fds[n++] = fd;
			else
				close(fd);
		}
	}
	return n;
}
