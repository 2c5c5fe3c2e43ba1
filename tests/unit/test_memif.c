/*
 * The client's memif side (lib/client psb_memif, psb_shm): the message codec and the ring
 * checks with hostile input, and a link against a fake memif server in a thread that
 * refuses a slot, then writes bad descriptors, frames and ring counters.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cmocka.h>

#include "psb_memif.h"
#include "psb_shm.h"

static void
test_codec_roundtrip(void **state)
{
	struct psb_memif_msg m, d;
	uint8_t buf[PSB_MEMIF_MSG_LEN];

	(void)state;
	memset(&m, 0, sizeof(m));
	m.type = PSB_MEMIF_MSG_HELLO;
	snprintf(m.u.hello.name, sizeof(m.u.hello.name), "DPDK 22.11");
	m.u.hello.min_version = m.u.hello.max_version = PSB_MEMIF_VERSION;
	m.u.hello.max_region = 255;
	m.u.hello.max_log2_ring_size = 14;
	assert_int_equal(psb_memif_msg_encode(buf, &m), 0);
	/* the layout DPDK reads: type, then the packed body */
	assert_int_equal(buf[0], PSB_MEMIF_MSG_HELLO);
	assert_memory_equal(buf + 2, "DPDK 22.11", 10);
	assert_int_equal(buf[2 + 42], 14);
	assert_int_equal(psb_memif_msg_decode(&d, buf, sizeof(buf)), 0);
	assert_string_equal(d.u.hello.name, "DPDK 22.11");
	assert_int_equal(d.u.hello.max_region, 255);

	memset(&m, 0, sizeof(m));
	m.type = PSB_MEMIF_MSG_ADD_RING;
	m.u.add_ring.flags = PSB_MEMIF_RING_FLAG_C2S;
	m.u.add_ring.index = 3;
	m.u.add_ring.region = 1;
	m.u.add_ring.offset = 0x12345678;
	m.u.add_ring.log2_ring_size = 10;
	assert_int_equal(psb_memif_msg_encode(buf, &m), 0);
	assert_int_equal(buf[2 + 10], 10);
	assert_int_equal(psb_memif_msg_decode(&d, buf, sizeof(buf)), 0);
	assert_int_equal(d.u.add_ring.offset, 0x12345678);
	assert_int_equal(d.u.add_ring.index, 3);

	memset(&m, 0, sizeof(m));
	m.type = PSB_MEMIF_MSG_INIT;
	m.u.init.version = PSB_MEMIF_VERSION;
	m.u.init.id = 63;
	assert_int_equal(psb_memif_msg_encode(buf, &m), 0);
	assert_int_equal(buf[2 + 2], 63);
	assert_int_equal(psb_memif_msg_decode(&d, buf, sizeof(buf)), 0);
	assert_int_equal(d.u.init.id, 63);

	memset(&m, 0, sizeof(m));
	m.type = PSB_MEMIF_MSG_ADD_REGION;
	m.u.add_region.size = 1ull << 33;
	assert_int_equal(psb_memif_msg_encode(buf, &m), 0);
	assert_int_equal(psb_memif_msg_decode(&d, buf, sizeof(buf)), 0);
	assert_true(d.u.add_region.size == 1ull << 33);

	m.type = PSB_MEMIF_MSG_NONE;
	assert_int_equal(psb_memif_msg_encode(buf, &m), -EINVAL);
	m.type = PSB_MEMIF_MSG_MAX;
	assert_int_equal(psb_memif_msg_encode(buf, &m), -EINVAL);
}

static void
test_codec_hostile(void **state)
{
	struct psb_memif_msg d;
	uint8_t buf[PSB_MEMIF_MSG_LEN + 1];
	unsigned int t;

	(void)state;
	memset(buf, 'A', sizeof(buf));
	/* one whole message or nothing */
	assert_int_equal(psb_memif_msg_decode(&d, buf, 0), -EMSGSIZE);
	assert_int_equal(psb_memif_msg_decode(&d, buf, PSB_MEMIF_MSG_LEN - 1), -EMSGSIZE);
	assert_int_equal(psb_memif_msg_decode(&d, buf, PSB_MEMIF_MSG_LEN + 1), -EMSGSIZE);
	/* unknown types */
	buf[0] = 0;
	buf[1] = 0;
	assert_int_equal(psb_memif_msg_decode(&d, buf, PSB_MEMIF_MSG_LEN), -EPROTO);
	buf[0] = 9;
	assert_int_equal(psb_memif_msg_decode(&d, buf, PSB_MEMIF_MSG_LEN), -EPROTO);
	buf[0] = PSB_MEMIF_MSG_HELLO;
	buf[1] = 1;	/* 0x0102 */
	assert_int_equal(psb_memif_msg_decode(&d, buf, PSB_MEMIF_MSG_LEN), -EPROTO);
	/* strings without a NUL are cut at their field, terminated */
	for (t = PSB_MEMIF_MSG_ACK; t < PSB_MEMIF_MSG_MAX; t++) {
		buf[0] = (uint8_t)t;
		buf[1] = 0;
		assert_int_equal(psb_memif_msg_decode(&d, buf, PSB_MEMIF_MSG_LEN), 0);
		if (t == PSB_MEMIF_MSG_HELLO)
			assert_int_equal(strlen(d.u.hello.name), PSB_MEMIF_NAME_LEN);
		if (t == PSB_MEMIF_MSG_INIT)
			assert_int_equal(strlen(d.u.init.name), PSB_MEMIF_NAME_LEN);
		if (t == PSB_MEMIF_MSG_CONNECT || t == PSB_MEMIF_MSG_CONNECTED)
			assert_int_equal(strlen(d.u.connect.if_name), PSB_MEMIF_NAME_LEN);
		if (t == PSB_MEMIF_MSG_DISCONNECT)
			assert_int_equal(strlen(d.u.disconnect.reason), PSB_MEMIF_DISC_LEN);
	}
}

static void
test_hello_check(void **state)
{
	struct psb_memif_msg m;
	const char *why = NULL;
	uint8_t log2 = 10;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.type = PSB_MEMIF_MSG_ACK;
	assert_int_equal(psb_memif_hello_check(&m, &log2, &why), -EPROTO);
	assert_non_null(strstr(why, "HELLO"));
	m.type = PSB_MEMIF_MSG_HELLO;
	m.u.hello.min_version = 0x0300;
	m.u.hello.max_version = 0x0300;
	m.u.hello.max_log2_ring_size = 14;
	assert_int_equal(psb_memif_hello_check(&m, &log2, &why), -EPROTO);
	m.u.hello.min_version = 0x0100;
	m.u.hello.max_version = 0x0100;
	assert_int_equal(psb_memif_hello_check(&m, &log2, &why), -EPROTO);
	m.u.hello.max_version = PSB_MEMIF_VERSION;
	m.u.hello.max_log2_ring_size = 0;
	assert_int_equal(psb_memif_hello_check(&m, &log2, &why), -EPROTO);
	m.u.hello.max_log2_ring_size = 8;
	assert_int_equal(psb_memif_hello_check(&m, &log2, &why), 0);
	assert_int_equal(log2, 8);
}

static void
test_ring_checks(void **state)
{
	struct psb_memif_desc d = { .flags = 0, .region = 0, .length = 100, .offset = 4096 };

	(void)state;
	assert_int_equal(psb_memif_advance(10, 10, 0), 0);
	assert_int_equal(psb_memif_advance(10, 14, 4), 4);
	assert_int_equal(psb_memif_advance(10, 15, 4), -1);
	assert_int_equal(psb_memif_advance(10, 9, 4), -1);		/* backwards */
	assert_int_equal(psb_memif_advance(65534, 2, 4), 4);		/* wraps */
	assert_int_equal(psb_memif_advance(65534, 3, 4), -1);
	assert_int_equal(psb_memif_desc_check(&d, 0, 4096, 9216), PSB_MEMIF_BAD_NONE);
	d.length = 9216;
	assert_int_equal(psb_memif_desc_check(&d, 0, 4096, 9216), PSB_MEMIF_BAD_NONE);
	d.length = 9217;
	assert_int_equal(psb_memif_desc_check(&d, 0, 4096, 9216), PSB_MEMIF_BAD_LENGTH);
	d.length = 0;
	assert_int_equal(psb_memif_desc_check(&d, 0, 4096, 9216), PSB_MEMIF_BAD_LENGTH);
	d.length = UINT32_MAX;
	assert_int_equal(psb_memif_desc_check(&d, 0, 4096, 9216), PSB_MEMIF_BAD_LENGTH);
	d.length = 64;
	d.offset = 4097;
	assert_int_equal(psb_memif_desc_check(&d, 0, 4096, 9216), PSB_MEMIF_BAD_DESC);
	d.offset = 4096;
	d.region = 1;
	assert_int_equal(psb_memif_desc_check(&d, 0, 4096, 9216), PSB_MEMIF_BAD_DESC);
	d.region = 0;
	d.flags = PSB_MEMIF_DESC_NEXT;
	assert_int_equal(psb_memif_desc_check(&d, 0, 4096, 9216), PSB_MEMIF_BAD_CHAIN);
	assert_int_equal((int)psb_memif_ring_bytes(10), 128 + 16 * 1024);
}

/* --- a fake memif server --- */

struct fake {
	char path[108];
	int lfd;
	int mode;		/* 0: refuse slot 0, take slot 1; 1: never say HELLO */
	int conn;		/* the taken connection */
	int memfd;
	uint64_t size;
	uint32_t s2c_off, c2s_off;
	uint8_t log2;
	int ok;
};

static int
fake_recv(int fd, struct psb_memif_msg *m, int *passed)
{
	uint8_t buf[PSB_MEMIF_MSG_LEN];
	char ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
		.msg_controllen = sizeof(ctl) };
	struct cmsghdr *cm;
	ssize_t n = recvmsg(fd, &mh, 0);

	*passed = -1;
	cm = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL;
	if (cm != NULL && cm->cmsg_type == SCM_RIGHTS)
		memcpy(passed, CMSG_DATA(cm), sizeof(int));
	return n > 0 ? psb_memif_msg_decode(m, buf, (size_t)n) : -1;
}

static void
fake_send(int fd, uint16_t type, const char *reason)
{
	struct psb_memif_msg m;
	uint8_t buf[PSB_MEMIF_MSG_LEN];

	memset(&m, 0, sizeof(m));
	m.type = type;
	if (type == PSB_MEMIF_MSG_HELLO) {
		m.u.hello.min_version = m.u.hello.max_version = PSB_MEMIF_VERSION;
		m.u.hello.max_region = 255;
		m.u.hello.max_log2_ring_size = 14;
	}
	if (reason != NULL)
		snprintf(m.u.disconnect.reason, sizeof(m.u.disconnect.reason), "%s", reason);
	psb_memif_msg_encode(buf, &m);
	assert_int_equal(send(fd, buf, sizeof(buf), MSG_NOSIGNAL), sizeof(buf));
}

static void *
fake_server(void *arg)
{
	struct fake *f = arg;
	struct psb_memif_msg m;
	int fd, passed;

	if (f->mode == 1) {
		fd = accept(f->lfd, NULL, NULL);
		sleep(1);	/* says nothing: the client gives up first */
		close(fd);
		return NULL;
	}
	/* slot 0 is taken, as DPDK says it */
	fd = accept(f->lfd, NULL, NULL);
	fake_send(fd, PSB_MEMIF_MSG_HELLO, NULL);
	if (fake_recv(fd, &m, &passed) != 0 || m.type != PSB_MEMIF_MSG_INIT || m.u.init.id != 0)
		return NULL;
	fake_send(fd, PSB_MEMIF_MSG_DISCONNECT, "Already connected");
	close(fd);
	fd = accept(f->lfd, NULL, NULL);
	fake_send(fd, PSB_MEMIF_MSG_HELLO, NULL);
	if (fake_recv(fd, &m, &passed) != 0 || m.type != PSB_MEMIF_MSG_INIT || m.u.init.id != 1)
		return NULL;
	fake_send(fd, PSB_MEMIF_MSG_ACK, NULL);
	if (fake_recv(fd, &m, &passed) != 0 || m.type != PSB_MEMIF_MSG_ADD_REGION || passed < 0)
		return NULL;
	f->memfd = passed;
	f->size = m.u.add_region.size;
	fake_send(fd, PSB_MEMIF_MSG_ACK, NULL);
	if (fake_recv(fd, &m, &passed) != 0 || m.type != PSB_MEMIF_MSG_ADD_RING ||
	    !(m.u.add_ring.flags & PSB_MEMIF_RING_FLAG_C2S))
		return NULL;
	close(passed);
	f->c2s_off = m.u.add_ring.offset;
	fake_send(fd, PSB_MEMIF_MSG_ACK, NULL);
	if (fake_recv(fd, &m, &passed) != 0 || m.type != PSB_MEMIF_MSG_ADD_RING)
		return NULL;
	close(passed);
	f->s2c_off = m.u.add_ring.offset;
	f->log2 = m.u.add_ring.log2_ring_size;
	fake_send(fd, PSB_MEMIF_MSG_ACK, NULL);
	if (fake_recv(fd, &m, &passed) != 0 || m.type != PSB_MEMIF_MSG_CONNECT)
		return NULL;
	fake_send(fd, PSB_MEMIF_MSG_CONNECTED, NULL);
	f->conn = fd;
	f->ok = 1;
	return NULL;
}

static void
fake_start(struct fake *f, pthread_t *t)
{
	struct sockaddr_un sa;

	snprintf(f->path, sizeof(f->path), "/tmp/psb-test-memif-%d.sock", (int)getpid());
	unlink(f->path);
	f->lfd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(f->lfd, 4), 0);
	f->conn = -1;
	assert_int_equal(pthread_create(t, NULL, fake_server, f), 0);
}

static void
fake_stop(struct fake *f)
{
	close(f->lfd);
	unlink(f->path);
}

static unsigned int g_got;
static size_t g_len;

static void
on_dgram(void *arg, const uint8_t *d, size_t len)
{
	(void)arg;
	(void)d;
	g_got++;
	g_len = len;
}

/* The server's side of the ring to the client: fill the next given buffer. */
static void
fake_tx(struct fake *f, uint8_t *base, const void *frame, uint32_t len, uint32_t length,
		int off_delta, uint16_t flags)
{
	uint8_t *ring = base + f->s2c_off;
	uint16_t head, tail, mask = (uint16_t)((1u << f->log2) - 1);
	uint8_t *d;
	uint32_t off;

	memcpy(&head, ring + PSB_MEMIF_RING_HEAD_OFF, 2);
	memcpy(&tail, ring + PSB_MEMIF_RING_TAIL_OFF, 2);
	assert_true(head != tail);
	d = ring + PSB_MEMIF_RING_DESC_OFF + (size_t)(tail & mask) * PSB_MEMIF_DESC_LEN;
	memcpy(&off, d + 8, 4);
	memcpy(base + off, frame, len);
	off += (uint32_t)off_delta;
	memcpy(d + 8, &off, 4);
	memcpy(d + 4, &length, 4);
	memcpy(d, &flags, 2);
	tail++;
	__atomic_store_n((uint16_t *)(void *)(ring + PSB_MEMIF_RING_TAIL_OFF), tail,
		__ATOMIC_RELEASE);
}

static void
test_link_hostile(void **state)
{
	struct psb_shm_cfg cfg;
	struct psb_shm *s = NULL;
	const struct psb_shm_link_stats *st;
	struct fake f;
	pthread_t t;
	char err[256];
	uint8_t frame[PSB_FRAME_HLEN + 64], pay[64] = { 0 }, *base;
	struct psb_addr src, dst;
	struct psb_hdr h;
	uint16_t tail, head;

	(void)state;
	memset(&f, 0, sizeof(f));
	fake_start(&f, &t);
	memset(&cfg, 0, sizeof(cfg));
	cfg.path = f.path;
	cfg.slots = 4;
	cfg.timeout_ns = 2000000000ull;
	cfg.server_ip = 0xC6120901;
	cfg.server_port = 9430;
	cfg.local_port = 40000;
	assert_int_equal(psb_shm_open(&cfg, &s, err, sizeof(err)), 0);
	pthread_join(t, NULL);
	assert_true(f.ok);
	assert_int_equal(psb_shm_slot(s), 1);		/* slot 0 was taken */
	base = mmap(NULL, f.size, PROT_READ | PROT_WRITE, MAP_SHARED, f.memfd, 0);
	assert_true(base != MAP_FAILED);
	/* the sealed region cannot be shrunk under the client */
	assert_int_not_equal(ftruncate(f.memfd, 4096), 0);
	st = psb_shm_stats(s);

	/* a good psb datagram from the server to this client's port */
	memset(&src, 0, sizeof(src));
	memset(&dst, 0, sizeof(dst));
	src.ip = cfg.server_ip;
	src.port = 9430;
	dst.ip = psb_shm_slot_ip(1);
	dst.port = 40000;
	psb_hdr_init(&h, PSB_MSG_PUSH_ACK);
	h.seg_len = 64;
	h.total_len = 64;
	h.seg_size = 64;
	memset(frame, 0, sizeof(frame));
	psb_frame_build(frame, &src, &dst, &h, pay, 64);
	fake_tx(&f, base, frame, sizeof(frame), sizeof(frame), 0, 0);
	assert_int_equal(psb_shm_rx(s, 64, on_dgram, NULL), 1);
	assert_int_equal(g_got, 1);
	assert_int_equal(g_len, PSB_HDR_LEN + 64);
	/* another buffer than the slot's, a length past it, a chain, a frame not for it */
	fake_tx(&f, base, frame, sizeof(frame), sizeof(frame), -4096, 0);
	fake_tx(&f, base, frame, sizeof(frame), PSB_SHM_BUF_SIZE + 1, 0, 0);
	fake_tx(&f, base, frame, sizeof(frame), 0, 0, 0);
	fake_tx(&f, base, frame, sizeof(frame), sizeof(frame), 0, PSB_MEMIF_DESC_NEXT);
	dst.port = 40001;
	psb_frame_build(frame, &src, &dst, &h, pay, 64);
	fake_tx(&f, base, frame, sizeof(frame), sizeof(frame), 0, 0);
	memset(frame, 0xee, sizeof(frame));
	fake_tx(&f, base, frame, sizeof(frame), sizeof(frame), 0, 0);
	psb_shm_rx(s, 64, on_dgram, NULL);
	assert_int_equal(g_got, 1);
	assert_int_equal(st->bad_desc, 1);
	assert_int_equal(st->bad_length, 2);
	assert_int_equal(st->bad_chain, 1);
	assert_int_equal(st->bad_frame, 2);
	assert_true(psb_shm_up(s));
	/* the ring to the client: a tail past the buffers it was given ends the link */
	memcpy(&head, base + f.s2c_off + PSB_MEMIF_RING_HEAD_OFF, 2);
	tail = (uint16_t)(head + 1);
	__atomic_store_n((uint16_t *)(void *)(base + f.s2c_off + PSB_MEMIF_RING_TAIL_OFF), tail,
		__ATOMIC_RELEASE);
	assert_int_equal(psb_shm_rx(s, 64, on_dgram, NULL), 0);
	assert_int_equal(st->bad_index, 1);
	assert_false(psb_shm_up(s));
	assert_non_null(strstr(psb_shm_down_reason(s), "beyond"));
	h.seg_len = 0;
	assert_int_equal(psb_shm_send(s, &h, NULL), -ENOTCONN);
	psb_shm_close(s);
	munmap(base, f.size);
	close(f.memfd);
	close(f.conn);
	fake_stop(&f);
}

static void
test_link_closed_and_silent(void **state)
{
	struct psb_shm_cfg cfg;
	struct psb_shm *s = NULL;
	struct fake f;
	pthread_t t;
	char err[256];

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	cfg.path = "/tmp/psb-test-memif-none.sock";
	cfg.timeout_ns = 300000000ull;
	unlink(cfg.path);
	assert_int_equal(psb_shm_open(&cfg, &s, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, cfg.path));
	/* a server that never says HELLO: a bounded wait, the socket named */
	memset(&f, 0, sizeof(f));
	f.mode = 1;
	fake_start(&f, &t);
	cfg.path = f.path;
	assert_int_equal(psb_shm_open(&cfg, &s, err, sizeof(err)), -ETIMEDOUT);
	assert_non_null(strstr(err, f.path));
	assert_non_null(strstr(err, "did not answer"));
	pthread_join(t, NULL);
	fake_stop(&f);
}

/* touch DIR/NAME: an empty file standing in for a socket or a lock */
static void
touch(const char *dir, const char *name)
{
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
}

static int
there(const char *dir, const char *name)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

/* What killed servers left goes; a live server's socket and anyone else's file stay. */
static void
test_sweep(void **state)
{
	char dir[] = "/tmp/psb-sweep-XXXXXX", p[512];
	int held;

	(void)state;
	assert_non_null(mkdtemp(dir));
	touch(dir, "198.18.0.1-9430.sock");		/* its server killed: lock free */
	touch(dir, "198.18.0.1-9430.sock.lock");
	touch(dir, "198.18.0.2-9430.sock");		/* its server alive: lock held */
	touch(dir, "198.18.0.2-9430.sock.lock");
	touch(dir, "198.18.0.3-9430.sock.lock");	/* a lock alone, free */
	touch(dir, "198.18.0.4-1.sock");		/* a socket without its lock */
	touch(dir, "other.sock");			/* not psb's name: left alone */
	touch(dir, "198.18.0.5-9430.sockx");
	touch(dir, "300.18.0.5-9430.sock");
	snprintf(p, sizeof(p), "%s/198.18.0.2-9430.sock.lock", dir);
	held = open(p, O_RDWR);
	assert_true(held >= 0);
	assert_int_equal(flock(held, LOCK_EX | LOCK_NB), 0);
	assert_int_equal(psb_shm_sweep(dir), 2);
	assert_false(there(dir, "198.18.0.1-9430.sock"));
	assert_false(there(dir, "198.18.0.1-9430.sock.lock"));
	assert_true(there(dir, "198.18.0.2-9430.sock"));
	assert_true(there(dir, "198.18.0.2-9430.sock.lock"));
	assert_false(there(dir, "198.18.0.3-9430.sock.lock"));
	assert_false(there(dir, "198.18.0.4-1.sock"));
	assert_true(there(dir, "other.sock"));
	assert_true(there(dir, "198.18.0.5-9430.sockx"));
	assert_true(there(dir, "300.18.0.5-9430.sock"));
	close(held);
	/* its server gone too: now it goes */
	assert_int_equal(psb_shm_sweep(dir), 1);
	assert_false(there(dir, "198.18.0.2-9430.sock"));
	assert_int_equal(psb_shm_sweep("/nonexistent-psb-dir"), -ENOENT);
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	assert_int_equal(system(p), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_codec_roundtrip),
		cmocka_unit_test(test_codec_hostile),
		cmocka_unit_test(test_hello_check),
		cmocka_unit_test(test_ring_checks),
		cmocka_unit_test(test_link_hostile),
		cmocka_unit_test(test_link_closed_and_silent),
		cmocka_unit_test(test_sweep),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
