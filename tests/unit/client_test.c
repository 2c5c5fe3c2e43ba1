/* cmocka tests of the kernel-socket client against a real psb-ksrv (path in argv[1]). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>
#include <jansson.h>

#include "psb_client.h"
#include "psb_proto.h"
#include "psb_testksrv.h"

#define LOCALHOST	"127.0.0.1"

static const char *ksrv_path;

/* The psb-ksrv of the running test; torn down by the fixture even when a test fails. */
struct server {
	struct tk_server tk;
	uint16_t port;
	uint16_t sched_port;
	json_t *final;		/* its --stats-file, read after it stopped */
};

static struct server g_srv;

#define mono_ms		tk_ms
#define sleep_ms	tk_sleep_ms

/* Start psb-ksrv on 127.0.0.1 (any free port) with extra options; 0 or -1. */
static int
server_start(struct server *s, const char *const *extra)
{
	memset(s, 0, sizeof(*s));
	if (tk_start(&s->tk, ksrv_path, extra) != 0)
		return -1;
	s->port = s->tk.port;
	s->sched_port = s->tk.sched_port;
	return 0;
}

/*
 * Stop it (SIGTERM, then SIGKILL after 5 s), keep its stats, remove its files.
 * Returns its wait status: 0 when it exited cleanly (sanitizer reports make it non-zero).
 */
static int
server_stop(struct server *s)
{
	json_error_t je;
	int running = s->tk.pid > 0, status = tk_stop(&s->tk);

	if (running && status != 0)
		fprintf(stderr, "psb-ksrv exited with wait status 0x%x\n", status);
	if (running && s->final == NULL && s->tk.dir[0] != '\0')
		s->final = json_load_file(s->tk.stats, 0, &je);
	tk_remove(&s->tk);
	return status;
}

static void
kill_server_at_exit(void)
{
	server_stop(&g_srv);
	json_decref(g_srv.final);
	g_srv.final = NULL;
}

/* A store counter of the stopped server ("push", "retries_answered", ...). */
static long long
store_counter(const struct server *s, const char *name)
{
	json_t *st = s->final != NULL ? json_object_get(s->final, "store") : NULL;
	json_t *v = st != NULL ? json_object_get(st, name) : NULL;

	return v != NULL ? json_integer_value(v) : -1;
}

static long long
store_error(const struct server *s, const char *name)
{
	json_t *st = s->final != NULL ? json_object_get(s->final, "store") : NULL;
	json_t *e = st != NULL ? json_object_get(st, "errors") : NULL;
	json_t *v = e != NULL ? json_object_get(e, name) : NULL;

	return v != NULL ? json_integer_value(v) : -1;
}

static int
teardown_server(void **state)
{
	int rc;

	(void)state;
	rc = server_stop(&g_srv);
	json_decref(g_srv.final);
	memset(&g_srv, 0, sizeof(g_srv));
	return rc == 0 ? 0 : -1;
}

#define START_SERVER(...) do {							\
		const char *const extra_[] = { __VA_ARGS__, NULL };		\
		assert_int_equal(server_start(&g_srv, extra_), 0);		\
	} while (0)

static struct psb_client *
client(uint16_t port, uint16_t rank, int sync, uint64_t timeout_ns, uint32_t retries)
{
	struct psb_client_cfg cfg;
	struct psb_client *c;
	char err[256];

	psb_client_cfg_init(&cfg);
	cfg.server_ip = LOCALHOST;
	cfg.server_port = port;
	cfg.rank = rank;
	cfg.sync = sync;
	if (timeout_ns != 0)
		cfg.timeout_ns = timeout_ns;
	if (retries != 0)
		cfg.max_retries = retries;
	c = psb_client_open(&cfg, err, sizeof(err));
	if (c == NULL)
		fprintf(stderr, "psb_client_open: %s\n", err);
	return c;
}

/* Value rank r pushes in sync round t: small integers, so float sums are exact. */
static float
sync_val(unsigned int r, unsigned int t, size_t i)
{
	return (float)((r + 1) * (t + 1) + (i % 13));
}

#define SYNC_WORKERS	3
#define SYNC_ROUNDS	6
#define SYNC_LEN	3000	/* floats: 9 segments */

struct sync_arg {
	uint16_t port;
	unsigned int rank;
	unsigned int nworkers;
	unsigned int rounds;
	uint64_t timeout_ns;
	int rc;			/* first failure */
	const char *what;
	unsigned long bad;	/* wrong elements */
	struct psb_client_stats st;
};

/* One sync worker: push two keys and pushpull a third per round, check every sum. */
static void *
sync_worker(void *p)
{
	struct sync_arg *a = p;
	struct psb_client *c = client(a->port, (uint16_t)a->rank, 1, a->timeout_ns, 500);
	float *v = calloc(SYNC_LEN, sizeof(float)), *out = calloc(SYNC_LEN, sizeof(float));
	unsigned int t, r, k;
	size_t i, n;
	int rc;

	if (c == NULL || v == NULL || out == NULL) {
		a->rc = -ENOMEM;
		a->what = "setup";
		goto out;
	}
	for (t = 0; t < a->rounds; t++) {
		for (i = 0; i < SYNC_LEN; i++)
			v[i] = sync_val(a->rank, t, i);
		for (k = 0; k < 2; k++) {
			rc = psb_client_push(c, 100 + k, v, SYNC_LEN, t);
			if (rc == 0 && psb_client_last_round(c) != t + 1)
				rc = -EPROTO;
			if (rc != 0) {
				a->rc = rc;
				a->what = "push";
				goto out;
			}
		}
		rc = psb_client_pushpull(c, 102, v, out, SYNC_LEN, t);
		if (rc != 0) {
			a->rc = rc;
			a->what = "pushpull";
			goto out;
		}
		/* pushpull returns the key after this round; key 102 started with it. */
		for (i = 0; i < SYNC_LEN; i++) {
			double want = 0;
			unsigned int u;

			for (r = 0; r < a->nworkers; r++)
				for (u = 0; u <= t; u++)
					want += sync_val(r, u, i);
			if (out[i] != (float)want)
				a->bad++;
		}
		for (k = 0; k < 2; k++) {
			rc = psb_client_pull(c, 100 + k, out, SYNC_LEN, &n, t + 1);
			if (rc == 0 && n != SYNC_LEN)
				rc = -EPROTO;
			if (rc != 0) {
				a->rc = rc;
				a->what = "pull";
				goto out;
			}
			for (i = 0; i < SYNC_LEN; i++) {
				double want = 0;
				unsigned int u;

				for (r = 0; r < a->nworkers; r++)
					for (u = 0; u <= t; u++)
						want += sync_val(r, u, i);
				if (out[i] != (float)want)
					a->bad++;
			}
		}
	}
out:
	if (c != NULL)
		psb_client_stats(c, &a->st);
	psb_client_close(c);
	free(v);
	free(out);
	return NULL;
}

static void
run_sync_workers(uint16_t port, unsigned int nworkers, unsigned int rounds, uint64_t timeout_ns,
		struct sync_arg *args)
{
	pthread_t th[8];
	unsigned int r;

	for (r = 0; r < nworkers; r++) {
		memset(&args[r], 0, sizeof(args[r]));
		args[r].port = port;
		args[r].rank = r;
		args[r].nworkers = nworkers;
		args[r].rounds = rounds;
		args[r].timeout_ns = timeout_ns;
		assert_int_equal(pthread_create(&th[r], NULL, sync_worker, &args[r]), 0);
	}
	for (r = 0; r < nworkers; r++)
		pthread_join(th[r], NULL);
	for (r = 0; r < nworkers; r++) {
		if (args[r].rc != 0)
			fail_msg("rank %u: %s failed: %s (%d)", r, args[r].what,
				psb_client_strerror(args[r].rc), args[r].rc);
		if (args[r].bad != 0)
			fail_msg("rank %u: %lu wrong sums", r, args[r].bad);
	}
}

static void
test_sync_three_workers(void **state)
{
	struct sync_arg args[SYNC_WORKERS];

	(void)state;
	START_SERVER("--num-workers", "3", "--sync");
	run_sync_workers(g_srv.port, SYNC_WORKERS, SYNC_ROUNDS, 0, args);
	assert_int_equal(server_stop(&g_srv), 0);
	/* Every round of every key closed exactly once. */
	assert_int_equal(store_counter(&g_srv, "rounds_closed"), 3 * SYNC_ROUNDS);
	assert_int_equal(store_counter(&g_srv, "push"), 2 * SYNC_WORKERS * SYNC_ROUNDS);
	assert_int_equal(store_counter(&g_srv, "pushpull"), SYNC_WORKERS * SYNC_ROUNDS);
}

static void
test_async_push_pull(void **state)
{
	struct psb_client *c[2];
	float v[500], out[500];
	size_t n, i;
	unsigned int it, r;

	(void)state;
	START_SERVER("--num-workers", "2", "--async");
	for (r = 0; r < 2; r++) {
		c[r] = client(g_srv.port, (uint16_t)r, 0, 0, 0);
		assert_non_null(c[r]);
	}
	for (it = 0; it < 10; it++) {
		for (r = 0; r < 2; r++) {
			for (i = 0; i < 500; i++)
				v[i] = (float)(r + 1 + i);
			assert_int_equal(psb_client_push(c[r], 7, v, 500, 0), 0);
		}
	}
	/* Async: the version counts applied pushes, so a double application would show. */
	assert_int_equal(psb_client_pull(c[0], 7, out, 500, &n, 0), 0);
	assert_int_equal(n, 500);
	assert_int_equal(psb_client_last_round(c[0]), 20);
	for (i = 0; i < 500; i++)
		assert_true(out[i] == (float)(10 * (1 + i) + 10 * (2 + i)));
	/* pushpull answers with the sum including this push. */
	for (i = 0; i < 500; i++)
		v[i] = 1.0f;
	assert_int_equal(psb_client_pushpull(c[1], 7, v, out, 500, 0), 0);
	assert_int_equal(psb_client_last_round(c[1]), 21);
	for (i = 0; i < 500; i++)
		assert_true(out[i] == (float)(10 * (1 + i) + 10 * (2 + i) + 1));
	for (r = 0; r < 2; r++)
		psb_client_close(c[r]);
	assert_int_equal(server_stop(&g_srv), 0);
	assert_int_equal(store_counter(&g_srv, "push"), 20);
	assert_int_equal(store_counter(&g_srv, "pushpull"), 1);
}

static void
test_async_api(void **state)
{
	enum { NREQ = 300, LEN = 64 };
	static struct psb_client_req req[NREQ];
	static float in[LEN], out[NREQ][LEN];
	struct psb_client *c;
	unsigned int k, i;

	(void)state;
	START_SERVER("--num-workers", "1", "--async");
	c = client(g_srv.port, 0, 0, 0, 0);
	assert_non_null(c);
	for (i = 0; i < LEN; i++)
		in[i] = (float)i;
	/* More requests than the window (64): start waits for room by itself. */
	for (k = 0; k < NREQ; k++) {
		memset(&req[k], 0, sizeof(req[k]));
		req[k].op.type = PSB_MSG_PUSHPULL;
		req[k].op.key = 1000 + k;
		req[k].op.len = sizeof(in);
		req[k].op.in = in;
		req[k].op.out = out[k];
		assert_int_equal(psb_client_start(c, &req[k]), 0);
	}
	psb_client_wait_all(c);
	for (k = 0; k < NREQ; k++) {
		assert_true(req[k].done);
		assert_int_equal(req[k].op.status, 0);
		assert_int_equal(req[k].op.out_len, sizeof(in));
		assert_memory_equal(out[k], in, sizeof(in));
	}
	psb_client_close(c);
}

static void
test_large_value(void **state)
{
	const size_t n = (4u << 20) / sizeof(float);	/* 4 MiB: 2930 segments */
	float *v = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
	struct psb_client *c;
	size_t i, got;

	(void)state;
	assert_non_null(v);
	assert_non_null(out);
	START_SERVER("--num-workers", "1", "--async");
	/* 4 MiB at kernel-UDP speed needs more than the default 20 ms (psb_client.h). */
	c = client(g_srv.port, 0, 0, 300000000, 0);
	assert_non_null(c);
	for (i = 0; i < n; i++)
		v[i] = (float)(i & 0xffff);
	assert_int_equal(psb_client_push(c, 42, v, n, 0), 0);
	memset(out, 0xff, n * sizeof(float));
	assert_int_equal(psb_client_pull(c, 42, out, n, &got, 0), 0);
	assert_int_equal(got, n);
	assert_memory_equal(out, v, n * sizeof(float));
	assert_int_equal(psb_client_pushpull(c, 42, v, out, n, 0), 0);
	for (i = 0; i < n; i++)
		if (out[i] != 2 * v[i])
			fail_msg("element %zu: %g, want %g", i, out[i], 2 * v[i]);
	/* Too small a buffer: refused, with the length needed. */
	assert_int_equal(psb_client_pull(c, 42, out, 1000, &got, 0), PSB_ST_LEN_MISMATCH);
	assert_int_equal(got, n);
	psb_client_close(c);
	free(v);
	free(out);
}

static void
test_errors(void **state)
{
	struct psb_client_stats st;
	struct psb_client *c, *bad;
	struct sockaddr_in sa;
	float v[200], out[200];
	uint8_t junk[PSB_HDR_LEN];
	size_t n = 99;
	int fd;

	(void)state;
	memset(v, 0, sizeof(v));
	START_SERVER("--num-workers", "2", "--async");
	/* Long timeouts: a resend would be answered (and counted) twice by the server. */
	c = client(g_srv.port, 1, 0, 500000000, 0);
	assert_non_null(c);
	assert_int_equal(psb_client_pull(c, 5, out, 200, &n, 0), PSB_ST_NO_KEY);
	assert_int_equal(n, 0);
	assert_int_equal(psb_client_push(c, 5, v, 100, 0), 0);
	assert_int_equal(psb_client_push(c, 5, v, 200, 0), PSB_ST_LEN_MISMATCH);
	assert_int_equal(psb_client_pushpull(c, 5, v, out, 50, 0), PSB_ST_LEN_MISMATCH);
	assert_non_null(strstr(psb_client_strerror(PSB_ST_NO_KEY), "no_key"));
	assert_non_null(strstr(psb_client_strerror(PSB_ST_BAD_SENDER), "num-workers"));
	/* Bad arguments never reach the wire. */
	assert_int_equal(psb_client_push(c, 5, NULL, 100, 0), -EINVAL);
	assert_int_equal(psb_client_push(c, 5, v, 0, 0), -EINVAL);
	assert_int_equal(psb_client_push(c, 5, v, (size_t)PSB_MAX_VALUE, 0), -EMSGSIZE);

	/* Rank 2 with --num-workers 2. */
	bad = client(g_srv.port, 2, 0, 500000000, 0);
	assert_non_null(bad);
	assert_int_equal(psb_client_push(bad, 5, v, 100, 0), PSB_ST_BAD_SENDER);
	psb_client_close(bad);

	/* Junk sent to the client is counted and ignored. */
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons(psb_client_local_port(c));
	memset(junk, 0xab, sizeof(junk));
	assert_int_equal(sendto(fd, junk, 7, 0, (struct sockaddr *)&sa, sizeof(sa)), 7);
	assert_int_equal(sendto(fd, junk, sizeof(junk), 0, (struct sockaddr *)&sa, sizeof(sa)),
		sizeof(junk));
	close(fd);
	sleep_ms(20);
	assert_int_equal(psb_client_pull(c, 5, out, 200, &n, 0), 0);
	assert_int_equal(n, 100);
	psb_client_stats(c, &st);
	assert_int_equal(st.rx_bad_short, 1);
	assert_int_equal(st.rx_bad_magic, 1);
	assert_int_equal(st.rx_bad, 2);
	assert_int_equal(st.wk.errors, 3);
	psb_client_close(c);

	assert_int_equal(server_stop(&g_srv), 0);
	assert_int_equal(store_error(&g_srv, "no_key"), 1);
	assert_int_equal(store_error(&g_srv, "length_mismatch"), 2);
	assert_int_equal(store_error(&g_srv, "bad_sender"), 1);
}

static void
test_no_server(void **state)
{
	struct psb_client_cfg cfg;
	struct psb_client *c;
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	char err[256];
	float v[4] = { 1, 2, 3, 4 };
	int fd, rc;

	(void)state;
	/* A bound socket that never answers: the request must time out, boundedly. */
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	c = client(ntohs(sa.sin_port), 0, 0, 2000000, 3);
	assert_non_null(c);
	rc = psb_client_push(c, 1, v, 4, 0);
	assert_int_equal(rc, -ETIMEDOUT);
	psb_client_close(c);
	close(fd);

	/* Configuration mistakes are reported by name. */
	psb_client_cfg_init(&cfg);
	assert_null(psb_client_open(&cfg, err, sizeof(err)));
	assert_non_null(strstr(err, "server_ip"));
	cfg.server_ip = "not-an-ip";
	assert_null(psb_client_open(&cfg, err, sizeof(err)));
	assert_non_null(strstr(err, "not-an-ip"));
	cfg.server_ip = LOCALHOST;
	cfg.seg_size = 1430;
	assert_null(psb_client_open(&cfg, err, sizeof(err)));
	assert_non_null(strstr(err, "seg_size"));
	assert_null(psb_client_connect("127.0.0.1:x", 0, 0, err, sizeof(err)));
	assert_non_null(strstr(err, "127.0.0.1:x"));
	c = psb_client_connect("127.0.0.1:9", 3, 1, err, sizeof(err));
	assert_non_null(c);
	assert_int_equal(psb_client_rank(c), 3);
	psb_client_close(c);
}

/* A UDP relay that loses every 5th datagram and doubles every 7th, both directions. */
struct proxy {
	int front;		/* clients talk to this */
	int back;		/* talks to the server */
	uint16_t front_port;
	struct sockaddr_in server;
	struct sockaddr_in clients[8];	/* by rank, learnt from requests */
	volatile int stop;
	unsigned long up, down, dropped, duplicated;
	pthread_t th;
};

static int
bound_socket(uint16_t *port)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0), v = 8 << 20;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v));
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
		close(fd);
		return -1;
	}
	if (port != NULL)
		*port = ntohs(sa.sin_port);
	return fd;
}

/*
 * Drop about one datagram in 5 and duplicate about one in 7, from a fixed-seed
 * sequence per direction. Not every k-th exactly: two clients retrying on the
 * same schedule then keep their datagrams at the same positions, and one of
 * them can lose every retry forever, which no real network does.
 */
static void
relay(struct proxy *px, int out_fd, const uint8_t *buf, size_t len, const struct sockaddr_in *to,
		unsigned long *count)
{
	uint64_t x;

	*count = *count * 6364136223846793005ull + 1442695040888963407ull;
	x = *count;
	if ((x >> 33) % 5 == 0) {
		px->dropped++;
		return;
	}
	sendto(out_fd, buf, len, 0, (const struct sockaddr *)to, sizeof(*to));
	if ((x >> 45) % 7 == 0) {
		px->duplicated++;
		sendto(out_fd, buf, len, 0, (const struct sockaddr *)to, sizeof(*to));
	}
}

static void *
proxy_main(void *p)
{
	struct proxy *px = p;
	static uint8_t buf[65536];
	struct pollfd pfd[2] = { { .fd = px->front, .events = POLLIN },
				 { .fd = px->back, .events = POLLIN } };
	struct sockaddr_in from;
	socklen_t flen;
	ssize_t n;

	while (!px->stop) {
		if (poll(pfd, 2, 20) <= 0)
			continue;
		for (;;) {
			uint16_t rank;

			flen = sizeof(from);
			n = recvfrom(px->front, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen);
			if (n < 0)
				break;
			if (n >= PSB_HDR_LEN) {
				rank = (uint16_t)(buf[6] << 8 | buf[7]);
				if (rank < 8)
					px->clients[rank] = from;
			}
			relay(px, px->back, buf, (size_t)n, &px->server, &px->up);
		}
		for (;;) {
			uint16_t rank;

			n = recv(px->back, buf, sizeof(buf), 0);
			if (n < 0)
				break;
			if (n < PSB_HDR_LEN)
				continue;
			rank = (uint16_t)(buf[6] << 8 | buf[7]);
			if (rank >= 8 || px->clients[rank].sin_port == 0)
				continue;
			relay(px, px->front, buf, (size_t)n, &px->clients[rank], &px->down);
		}
	}
	return NULL;
}

static int
proxy_start(struct proxy *px, uint16_t server_port)
{
	memset(px, 0, sizeof(*px));
	px->front = bound_socket(&px->front_port);
	px->back = bound_socket(NULL);
	if (px->front < 0 || px->back < 0)
		return -1;
	px->server.sin_family = AF_INET;
	px->server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	px->server.sin_port = htons(server_port);
	return pthread_create(&px->th, NULL, proxy_main, px) == 0 ? 0 : -1;
}

static void
proxy_stop(struct proxy *px)
{
	px->stop = 1;
	pthread_join(px->th, NULL);
	close(px->front);
	close(px->back);
}

static void
test_lossy_async(void **state)
{
	enum { LEN = 5000, KEYS = 4, ITERS = 10 };	/* 20000 B: 14 segments */
	static float v[LEN], out[LEN];
	struct psb_client_stats st;
	struct psb_client *c[2];
	struct proxy px;
	unsigned long long retries = 0;
	unsigned int it, r, k;
	size_t i, n;

	(void)state;
	START_SERVER("--num-workers", "2", "--async");
	assert_int_equal(proxy_start(&px, g_srv.port), 0);
	for (r = 0; r < 2; r++) {
		c[r] = client(px.front_port, (uint16_t)r, 0, 3000000, 1000);
		assert_non_null(c[r]);
	}
	for (it = 0; it < ITERS; it++) {
		for (r = 0; r < 2; r++) {
			for (i = 0; i < LEN; i++)
				v[i] = (float)((r + 1) * (it + 1) + (i % 11));
			for (k = 0; k < KEYS; k++)
				assert_int_equal(psb_client_push(c[r], k, v, LEN, 0), 0);
		}
	}
	for (k = 0; k < KEYS; k++) {
		assert_int_equal(psb_client_pull(c[k & 1], k, out, LEN, &n, 0), 0);
		assert_int_equal(n, LEN);
		/* Applied exactly once each: 2 workers x ITERS pushes. */
		assert_int_equal(psb_client_last_round(c[k & 1]), 2 * ITERS);
		for (i = 0; i < LEN; i++) {
			double want = 0;

			for (r = 0; r < 2; r++)
				for (it = 0; it < ITERS; it++)
					want += (r + 1) * (it + 1) + (i % 11);
			if (out[i] != (float)want)
				fail_msg("key %u element %zu: %g, want %g", k, i, out[i], want);
		}
	}
	for (r = 0; r < 2; r++) {
		psb_client_stats(c[r], &st);
		retries += st.wk.retries;
		psb_client_close(c[r]);
	}
	proxy_stop(&px);
	assert_int_equal(server_stop(&g_srv), 0);
	print_message("lossy async: %lu dropped, %lu duplicated, %llu client retries\n",
		px.dropped, px.duplicated, retries);
	assert_true(px.dropped > 0);
	assert_true(px.duplicated > 0);
	assert_true(retries > 0);
	assert_int_equal(store_counter(&g_srv, "push"), 2 * KEYS * ITERS);
	assert_int_equal(store_counter(&g_srv, "pull"), KEYS);
	assert_true(store_counter(&g_srv, "dup_segs") > 0);
}

static void
test_lossy_sync(void **state)
{
	struct sync_arg args[2];
	struct proxy px;

	(void)state;
	START_SERVER("--num-workers", "2", "--sync");
	assert_int_equal(proxy_start(&px, g_srv.port), 0);
	run_sync_workers(px.front_port, 2, 4, 20000000, args);
	proxy_stop(&px);
	assert_int_equal(server_stop(&g_srv), 0);
	print_message("lossy sync: %lu dropped, %lu duplicated, retries %llu + %llu\n",
		px.dropped, px.duplicated, (unsigned long long)args[0].st.wk.retries,
		(unsigned long long)args[1].st.wk.retries);
	assert_true(px.dropped > 0);
	assert_int_equal(store_counter(&g_srv, "rounds_closed"), 3 * 4);
	assert_int_equal(store_counter(&g_srv, "push"), 2 * 2 * 4);
	assert_true(args[0].st.wk.retries + args[1].st.wk.retries > 0);
}

struct reg_arg {
	uint16_t port;
	uint16_t sched_port;
	uint16_t rank;
	int rc;
	const char *what;
	struct psb_sched_view view;
	float sum;
};

static void *
reg_worker(void *p)
{
	struct reg_arg *a = p;
	struct psb_client *c = client(a->port, 0, 0, 0, 0);
	float v[16], out[16];
	size_t i, n;

	if (c == NULL) {
		a->rc = -ENOMEM;
		a->what = "open";
		return NULL;
	}
	a->rc = psb_client_register(c, LOCALHOST, a->sched_port, &a->rank, &a->view);
	a->what = "register";
	if (a->rc == 0) {
		a->what = "barrier 0";
		a->rc = psb_client_barrier(c, PSB_GROUP_WORKERS, 0);
	}
	if (a->rc == 0) {
		for (i = 0; i < 16; i++)
			v[i] = (float)(a->rank + 1);
		a->what = "push";
		a->rc = psb_client_push(c, 99, v, 16, 0);
	}
	if (a->rc == 0) {
		a->what = "barrier 1";
		a->rc = psb_client_barrier(c, PSB_GROUP_WORKERS, 1);
	}
	if (a->rc == 0) {
		a->what = "pull";
		a->rc = psb_client_pull(c, 99, out, 16, &n, 0);
		a->sum = out[0];
	}
	if (a->rc == 0) {
		/* ps-lite's Finalize: the scheduler acknowledges, again when repeated */
		a->what = "finalize";
		a->rc = psb_client_finalize(c, 5000000000ull);
		if (a->rc == 0)
			a->rc = psb_client_finalize(c, 5000000000ull);
	}
	psb_client_close(c);
	return NULL;
}

static void
test_register_barrier(void **state)
{
	struct reg_arg a[2];
	pthread_t th[2];
	unsigned int r;

	(void)state;
	START_SERVER("--num-workers", "2", "--async", "--scheduler-port", "0");
	assert_true(g_srv.sched_port != 0);
	for (r = 0; r < 2; r++) {
		memset(&a[r], 0, sizeof(a[r]));
		/* Aim at a wrong data port: the scheduler's view must correct it. */
		a[r].port = 9;
		a[r].sched_port = g_srv.sched_port;
		assert_int_equal(pthread_create(&th[r], NULL, reg_worker, &a[r]), 0);
	}
	for (r = 0; r < 2; r++)
		pthread_join(th[r], NULL);
	for (r = 0; r < 2; r++) {
		if (a[r].rc != 0)
			fail_msg("worker %u: %s failed: %s", r, a[r].what,
				psb_client_strerror(a[r].rc));
		assert_int_equal(a[r].view.num_servers, 1);
		assert_int_equal(a[r].view.num_workers, 2);
		assert_int_equal(a[r].view.servers[0].ip, 0x7f000001);
		assert_int_equal(a[r].view.servers[0].port, g_srv.port);
		assert_true(a[r].sum == 3.0f);
	}
	assert_int_equal(a[0].rank + a[1].rank, 1);
	/* Finalize needs a scheduler */
	{
		struct psb_client *c = client(g_srv.port, 0, 0, 0, 0);

		assert_non_null(c);
		assert_int_equal(psb_client_finalize(c, 1000000000ull), -ENOTCONN);
		psb_client_close(c);
	}
}

/* Datagrams waiting on fd, each a psb header of type `type`; how many. */
static unsigned int
drain_type(int fd, uint8_t type)
{
	uint8_t buf[2048];
	struct psb_hdr h;
	unsigned int n = 0;
	ssize_t len;

	while ((len = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		assert_true(len >= PSB_HDR_LEN);
		psb_hdr_decode(&h, buf);
		assert_int_equal(h.type, type);
		n++;
	}
	return n;
}

static double
secs_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/*
 * A scheduler that never answers: REGISTER, BARRIER and FINALIZE are each sent again every
 * 200 ms, and each gives up with -ETIMEDOUT once its time is over, not before.
 */
static void
test_sched_silent(void **state)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t salen = sizeof(sa);
	struct psb_client_cfg cfg;
	struct psb_client *c;
	struct timespec t0;
	unsigned int n;
	char err[256];
	int fd;
	double dt;

	(void)state;
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &salen), 0);
	psb_client_cfg_init(&cfg);
	cfg.server_ip = LOCALHOST;
	cfg.server_port = ntohs(sa.sin_port);
	cfg.sched_timeout_ns = 500000000ull;
	c = psb_client_open(&cfg, err, sizeof(err));
	assert_non_null(c);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(psb_client_register(c, LOCALHOST, ntohs(sa.sin_port), NULL, NULL),
		-ETIMEDOUT);
	dt = secs_since(&t0);
	assert_true(dt >= 0.5 && dt < 3.0);
	n = drain_type(fd, PSB_MSG_REGISTER);
	assert_true(n >= 2 && n <= 4);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(psb_client_barrier(c, 4, 0), -ETIMEDOUT);
	dt = secs_since(&t0);
	assert_true(dt >= 0.5 && dt < 3.0);
	n = drain_type(fd, PSB_MSG_BARRIER);
	assert_true(n >= 2 && n <= 4);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(psb_client_finalize(c, 300000000ull), -ETIMEDOUT);
	dt = secs_since(&t0);
	assert_true(dt >= 0.3 && dt < 3.0);
	n = drain_type(fd, PSB_MSG_FINALIZE);
	assert_true(n >= 1 && n <= 3);
	psb_client_close(c);
	close(fd);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_no_server, teardown_server),
		cmocka_unit_test_teardown(test_sync_three_workers, teardown_server),
		cmocka_unit_test_teardown(test_async_push_pull, teardown_server),
		cmocka_unit_test_teardown(test_async_api, teardown_server),
		cmocka_unit_test_teardown(test_large_value, teardown_server),
		cmocka_unit_test_teardown(test_errors, teardown_server),
		cmocka_unit_test_teardown(test_lossy_async, teardown_server),
		cmocka_unit_test_teardown(test_lossy_sync, teardown_server),
		cmocka_unit_test_teardown(test_register_barrier, teardown_server),
		cmocka_unit_test(test_sched_silent),
	};
	struct stat sb;

	if (argc < 2 || stat(argv[1], &sb) != 0 || !(sb.st_mode & S_IXUSR)) {
		fprintf(stderr, "usage: %s PATH-TO-psb-ksrv (got '%s')\n", argv[0],
			argc < 2 ? "" : argv[1]);
		return 2;
	}
	ksrv_path = argv[1];
	atexit(kill_server_at_exit);
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("client", tests, NULL, NULL);
}
