/*
 * The client API (psb/client.h, libpsb) as a program of its own uses it: only the public
 * header, linked against the shared library, against real psb-ksrv processes (path in
 * argv[1]) on loopback.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "psb/client.h"
#include "psb_testksrv.h"

static const char *ksrv;
static struct tk_server srv[2];

static void
stop_all(void)
{
	tk_remove(&srv[0]);
	tk_remove(&srv[1]);
}

static int
teardown(void **state)
{
	(void)state;
	stop_all();
	unsetenv("DMLC_PS_ROOT_URI");
	unsetenv("DMLC_PS_ROOT_PORT");
	unsetenv("DMLC_ROLE");
	unsetenv("DMLC_RANK");
	unsetenv("DMLC_NODE_HOST");
	unsetenv("DMLC_INTERFACE");
	return 0;
}

static void
start(int i, const char *const *extra)
{
	assert_int_equal(tk_start(&srv[i], ksrv, extra), 0);
}

/* A session straight to servers (list "127.0.0.1:P,..."), rank, sync; asserts it opened. */
static psbc_t *
open_to(const char *list, int rank, int sync)
{
	struct psbc_opts o;
	char err[512];
	psbc_t *s = NULL;
	int rc;

	psbc_opts_init(&o);
	o.servers = list;
	o.rank = rank;
	o.sync = sync;
	rc = psbc_open(&s, &o, err, sizeof(err));
	if (rc != 0)
		fail_msg("psbc_open(%s): %s: %s", list, psb_strerror(rc), err);
	return s;
}

static const char *
addr(int i, char *buf, size_t len)
{
	snprintf(buf, len, "127.0.0.1:%u", srv[i].port);
	return buf;
}

/* A UDP port on 127.0.0.1 that is bound (silent: keep fd open) or was just freed. */
static uint16_t
udp_port(int *keep)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	if (keep != NULL)
		*keep = fd;
	else
		close(fd);
	return ntohs(sa.sin_port);
}

/*
 * psbc_open with o fails with code after at least min_ms and less than max_ms, and err
 * has each of the strings given (NULL-terminated).
 */
static void
open_fails(const struct psbc_opts *o, int code, uint64_t min_ms, uint64_t max_ms, ...)
{
	char err[512];
	psbc_t *s = NULL;
	const char *want;
	uint64_t t0 = tk_ms(), dt;
	va_list ap;

	assert_int_equal(psbc_open(&s, o, err, sizeof(err)), code);
	dt = tk_ms() - t0;
	assert_null(s);
	if (dt < min_ms || dt >= max_ms)
		fail_msg("psbc_open took %llu ms, expected [%llu, %llu): %s",
			(unsigned long long)dt, (unsigned long long)min_ms,
			(unsigned long long)max_ms, err);
	va_start(ap, max_ms);
	while ((want = va_arg(ap, const char *)) != NULL)
		if (strstr(err, want) == NULL)
			fail_msg("'%s' is not in the error: %s", want, err);
	va_end(ap);
}

/* Nothing listens: refused at once, the address named. */
static void
t_refused(void **state)
{
	struct psbc_opts o;
	char list[64];

	(void)state;
	snprintf(list, sizeof(list), "127.0.0.1:%u", udp_port(NULL));
	psbc_opts_init(&o);
	o.servers = list;
	o.connect_timeout_ms = 5000;
	open_fails(&o, PSBC_E_REFUSED, 0, 2000, list, "refused", NULL);
}

/* A server that never answers: named after the connect timeout, not a minute later. */
static void
t_silent(void **state)
{
	struct psbc_opts o;
	char list[128], first[64], *silent;
	int fd;

	(void)state;
	start(0, NULL);
	snprintf(list, sizeof(list), "127.0.0.1:%u,127.0.0.1:%u", srv[0].port, udp_port(&fd));
	snprintf(first, sizeof(first), "%.*s", (int)(strchr(list, ',') - list), list);
	silent = strchr(list, ',') + 1;
	psbc_opts_init(&o);
	o.servers = list;
	o.connect_timeout_ms = 400;
	/* the silent one is named, the one that answered is not */
	open_fails(&o, PSBC_E_UNREACHABLE, 350, 2000, silent, "did not answer", NULL);
	close(fd);
	{
		char err[512];
		psbc_t *s = NULL;

		assert_int_equal(psbc_open(&s, &o, err, sizeof(err)), PSBC_E_REFUSED);
		assert_null(strstr(err, first));
	}
}

/* A rank the server has no room for: said at open. */
static void
t_rank(void **state)
{
	const char *const extra[] = { "--num-workers", "2", "--async", NULL };
	struct psbc_opts o;
	char list[64], err[512];
	psbc_t *s = NULL;

	(void)state;
	start(0, extra);
	psbc_opts_init(&o);
	o.servers = addr(0, list, sizeof(list));
	o.rank = 5;
	assert_int_equal(psbc_open(&s, &o, err, sizeof(err)), PSBC_E_RANK);
	assert_non_null(strstr(err, "num-workers"));
	o.rank = 1;
	assert_int_equal(psbc_open(&s, &o, err, sizeof(err)), 0);
	assert_int_equal(psbc_rank(s), 1);
	psbc_close(s);
}

struct cbrec {
	int calls;
	int64_t ts;
	int status;
};

static void
on_end(psbc_t *s, int64_t ts, int status, void *arg)
{
	struct cbrec *r = arg;

	(void)s;
	r->calls++;
	r->ts = ts;
	r->status = status;
}

/* Batched operations: lens, wait, test, callbacks, in-place pushpull, many and large keys. */
static void
t_ops(void **state)
{
	const char *const extra[] = { "--async", NULL };
	const uint64_t keys[] = { 1, 5, 9 };
	const uint32_t lens[] = { 2, 3, 1 };
	float v[6] = { 1, 2, 3, 4, 5, 6 }, out[6];
	uint32_t got[3] = { 2, 3, 1 };
	struct cbrec cb = { 0 };
	char list[64];
	int64_t ts;
	psbc_t *s;
	int i, r;

	(void)state;
	start(0, extra);
	s = open_to(addr(0, list, sizeof(list)), 0, 0);
	assert_int_equal(psbc_num_servers(s), 1);
	ts = psbc_push(s, keys, 3, v, 6, lens, NULL, NULL);
	assert_true(ts >= 0);
	assert_int_equal(psbc_wait(s, ts), 0);
	assert_int_equal(psbc_wait(s, ts), PSBC_E_TS);	/* waited for once */
	memset(out, 0, sizeof(out));
	ts = psbc_pull(s, keys, 3, out, 6, got, on_end, &cb);
	assert_true(ts >= 0);
	while ((r = psbc_test(s, ts)) == 0)
		;
	assert_int_equal(r, 1);
	assert_int_equal(cb.calls, 1);
	assert_int_equal(cb.ts, ts);
	assert_int_equal(cb.status, 0);
	assert_int_equal(psbc_wait(s, ts), 0);
	assert_memory_equal(out, v, sizeof(v));
	assert_int_equal(got[0], 2);
	assert_int_equal(got[1], 3);
	assert_int_equal(got[2], 1);
	/* in place: each key's push leaves before its sum lands over it */
	ts = psbc_pushpull(s, keys, 3, out, out, 6, lens, NULL, NULL);
	assert_int_equal(psbc_wait(s, ts), 0);
	for (i = 0; i < 6; i++)
		assert_true(out[i] == 2 * v[i]);

	/* more keys than the window, each with its own callback count */
	{
		enum { NK = 1000, LEN = 16 };
		uint64_t *k = calloc(NK, sizeof(*k));
		float *a = calloc(NK * LEN, sizeof(*a)), *b = calloc(NK * LEN, sizeof(*b));
		struct cbrec c2 = { 0 };

		assert_non_null(k);
		assert_non_null(a);
		assert_non_null(b);
		for (i = 0; i < NK; i++)
			k[i] = 1000 + (uint64_t)i * 7;
		for (i = 0; i < NK * LEN; i++)
			a[i] = (float)(i % 97);
		ts = psbc_pushpull(s, k, NK, a, b, NK * LEN, NULL, on_end, &c2);
		assert_int_equal(psbc_wait(s, ts), 0);
		assert_int_equal(c2.calls, 1);
		assert_memory_equal(a, b, NK * LEN * sizeof(float));
		ts = psbc_pushpull(s, k, NK, a, b, NK * LEN, NULL, NULL, NULL);
		assert_int_equal(psbc_wait_all(s), 0);
		assert_int_equal(psbc_test(s, ts), PSBC_E_TS);
		for (i = 0; i < NK * LEN; i++)
			assert_true(b[i] == 2 * a[i]);
		free(k);
		free(a);
		free(b);
	}
	/* 1 MiB values, several operations in flight at once */
	{
		enum { LEN = 1 << 18 };
		const uint64_t bk[] = { 77, 78 };
		float *a = malloc(2 * LEN * sizeof(float)), *b = malloc(2 * LEN * sizeof(float));
		int64_t t1, t2;

		assert_non_null(a);
		assert_non_null(b);
		for (i = 0; i < 2 * LEN; i++)
			a[i] = (float)(i & 1023);
		t1 = psbc_push(s, bk, 2, a, 2 * LEN, NULL, NULL, NULL);
		t2 = psbc_push(s, bk, 2, a, 2 * LEN, NULL, NULL, NULL);
		assert_int_equal(psbc_wait(s, t2), 0);
		assert_int_equal(psbc_wait(s, t1), 0);
		ts = psbc_pull(s, bk, 2, b, 2 * LEN, NULL, NULL, NULL);
		assert_int_equal(psbc_wait(s, ts), 0);
		for (i = 0; i < 2 * LEN; i++)
			assert_true(b[i] == 2 * a[i]);
		free(a);
		free(b);
	}
	psbc_close(s);
}

/* Bad input: the right error, the offending item named, nothing sent. */
static void
t_bad_input(void **state)
{
	const char *const extra[] = { "--async", NULL };
	uint64_t k2[] = { 5, 3 }, kd[] = { 4, 4 }, kend[] = { 1, PSBC_KEY_END };
	uint32_t l2[] = { 1, 2 }, l0[] = { 0, 3 }, lbig[] = { PSBC_MAX_VALUE + 1u, 1 };
	uint64_t all[] = { 1, 3, 4, 5 };
	float v[8] = { 0 };
	uint32_t got[4];
	char list[64];
	psbc_t *s;

	(void)state;
	start(0, extra);
	s = open_to(addr(0, list, sizeof(list)), 0, 0);
	assert_int_equal(psbc_push(s, k2, 2, v, 2, NULL, NULL, NULL), PSBC_E_KEYS);
	assert_non_null(strstr(psbc_errmsg(s), "ascending"));
	assert_int_equal(psbc_push(s, kd, 2, v, 2, NULL, NULL, NULL), PSBC_E_KEYS);
	assert_non_null(strstr(psbc_errmsg(s), "repeats"));
	assert_int_equal(psbc_push(s, kend, 2, v, 2, NULL, NULL, NULL), PSBC_E_KEYS);
	assert_int_equal(psbc_push(s, all, 2, v, 4, l2, NULL, NULL), PSBC_E_LENS);
	assert_non_null(strstr(psbc_errmsg(s), "add up to 3"));
	assert_int_equal(psbc_push(s, all, 2, v, 3, l0, NULL, NULL), PSBC_E_LENS);
	assert_int_equal(psbc_push(s, all, 2, v, 3, NULL, NULL, NULL), PSBC_E_LENS);
	assert_int_equal(psbc_push(s, all, 2, v, 8, lbig, NULL, NULL), PSBC_E_TOO_LARGE);
	assert_int_equal(psbc_push(s, all, 0, v, 8, NULL, NULL, NULL), PSBC_E_INVAL);
	assert_int_equal(psbc_push(s, NULL, 2, v, 8, NULL, NULL, NULL), PSBC_E_INVAL);
	assert_int_equal(psbc_push(s, all, 2, NULL, 8, NULL, NULL, NULL), PSBC_E_INVAL);
	assert_int_equal(psbc_pushpull(s, all, 2, v, NULL, 8, NULL, NULL, NULL), PSBC_E_INVAL);
	assert_int_equal(psbc_wait(s, 12345), PSBC_E_TS);
	assert_int_equal(psbc_wait(s, -1), PSBC_E_TS);
	assert_int_equal(psbc_barrier(s, PSBC_GROUP_WORKERS), PSBC_E_INVAL);
	/* none of it reached the server: every key is still unknown there */
	got[0] = got[1] = got[2] = got[3] = 2;
	assert_int_equal(psbc_wait(s, psbc_pull(s, all, 4, v, 8, got, NULL, NULL)),
		PSBC_E_NO_KEY);
	psbc_close(s);
}

/* A key that holds another length: refused at once, said with the remedy. */
static void
t_len_mismatch(void **state)
{
	const char *const extra[] = { "--async", NULL };
	const uint64_t k = 3;
	float v[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
	uint32_t room = 2;
	char list[64];
	uint64_t t0;
	psbc_t *s;

	(void)state;
	start(0, extra);
	s = open_to(addr(0, list, sizeof(list)), 0, 0);
	assert_int_equal(psbc_wait(s, psbc_push(s, &k, 1, v, 4, NULL, NULL, NULL)), 0);
	t0 = tk_ms();
	assert_int_equal(psbc_wait(s, psbc_push(s, &k, 1, v, 8, NULL, NULL, NULL)),
		PSBC_E_LEN_MISMATCH);
	assert_true(tk_ms() - t0 < 1000);
	assert_non_null(strstr(psbc_errmsg(s), "holds 4 floats"));
	assert_non_null(strstr(psbc_errmsg(s), "reset_state"));
	assert_int_equal(psbc_wait(s, psbc_pull(s, &k, 1, v, 2, &room, NULL, NULL)),
		PSBC_E_LEN_MISMATCH);
	assert_int_equal(room, 4);
	/* without lens the room is the length: a shorter value is refused too, not half-filled */
	assert_int_equal(psbc_wait(s, psbc_pull(s, &k, 1, v, 8, NULL, NULL, NULL)),
		PSBC_E_LEN_MISMATCH);
	assert_non_null(strstr(psbc_errmsg(s), "holds 4 floats"));
	/* with lens a larger room is fine: the length received is said */
	room = 8;
	assert_int_equal(psbc_wait(s, psbc_pull(s, &k, 1, v, 8, &room, NULL, NULL)), 0);
	assert_int_equal(room, 4);
	psbc_close(s);
}

/* Two servers: each key goes to the server whose ps-lite range holds it, and only there. */
static void
t_two_servers(void **state)
{
	const char *const extra[] = { "--async", NULL };
	const uint64_t keys[] = { 1, UINT64_MAX - 5 };
	float v[2] = { 3, 4 }, out[2];
	uint64_t b0, e0, b1, e1;
	char list[64], a0[32], a1[32];
	psbc_t *s, *only;
	int i;

	(void)state;
	start(0, extra);
	start(1, extra);
	snprintf(list, sizeof(list), "%s,%s", addr(0, a0, sizeof(a0)), addr(1, a1, sizeof(a1)));
	s = open_to(list, 0, 0);
	assert_int_equal(psbc_num_servers(s), 2);
	assert_int_equal(psbc_server_range(s, 0, &b0, &e0), 0);
	assert_int_equal(psbc_server_range(s, 1, &b1, &e1), 0);
	assert_int_equal(psbc_server_range(s, 2, NULL, NULL), PSBC_E_INVAL);
	assert_true(b0 == 0 && e0 == b1 && e1 == PSBC_KEY_END);
	assert_int_equal(psbc_server_address(s, 1, list, sizeof(list)), 0);
	assert_string_equal(list, a1);
	assert_int_equal(psbc_server_address(s, 1, list, 4), PSBC_E_INVAL);
	assert_int_equal(psbc_server_address(s, 2, list, sizeof(list)), PSBC_E_INVAL);
	assert_true(keys[0] < e0 && keys[1] >= b1);
	assert_int_equal(psbc_wait(s, psbc_push(s, keys, 2, v, 2, NULL, NULL, NULL)), 0);
	psbc_close(s);
	for (i = 0; i < 2; i++) {
		only = open_to(i == 0 ? a0 : a1, 0, 0);
		out[0] = 0;
		assert_int_equal(psbc_wait(only, psbc_pull(only, &keys[i], 1, out, 1, NULL, NULL,
			NULL)), 0);
		assert_true(out[0] == v[i]);
		assert_int_equal(psbc_wait(only, psbc_pull(only, &keys[1 - i], 1, out, 1, NULL,
			NULL, NULL)), PSBC_E_NO_KEY);
		psbc_close(only);
	}
}

struct syncw {
	const char *list;
	int rank;
	int rc;
	float sums[3];
};

static void *
sync_worker(void *arg)
{
	struct syncw *w = arg;
	const uint64_t keys[] = { 11, 12 };
	float v[4], out[4];
	psbc_t *s = NULL;
	struct psbc_opts o;
	char err[256];
	int r, i;

	psbc_opts_init(&o);
	o.servers = w->list;
	o.rank = w->rank;
	o.sync = 1;
	w->rc = psbc_open(&s, &o, err, sizeof(err));
	if (w->rc != 0) {
		fprintf(stderr, "rank %d: %s\n", w->rank, err);
		return NULL;
	}
	for (r = 0; r < 3; r++) {
		for (i = 0; i < 4; i++)
			v[i] = (float)(w->rank + 1) * (float)(r + 1);
		w->rc = psbc_wait(s, psbc_push(s, keys, 2, v, 4, NULL, NULL, NULL));
		if (w->rc == 0)
			w->rc = psbc_wait(s, psbc_pull(s, keys, 2, out, 4, NULL, NULL, NULL));
		if (w->rc != 0) {
			fprintf(stderr, "rank %d round %d: %s\n", w->rank, r, psbc_errmsg(s));
			break;
		}
		w->sums[r] = out[3];
	}
	psbc_close(s);
	return NULL;
}

/* Synchronous rounds: two workers, each key's rounds counted by the session. */
static void
t_sync(void **state)
{
	const char *const extra[] = { "--sync", "--num-workers", "2", NULL };
	struct syncw w[2];
	pthread_t th[2];
	char list[64];
	int i, r;

	(void)state;
	start(0, extra);
	addr(0, list, sizeof(list));
	for (i = 0; i < 2; i++) {
		w[i] = (struct syncw){ .list = list, .rank = i };
		assert_int_equal(pthread_create(&th[i], NULL, sync_worker, &w[i]), 0);
	}
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < 2; i++) {
		assert_int_equal(w[i].rc, 0);
		/* round r's sum holds both workers' pushes of every round up to r */
		for (r = 0; r < 3; r++)
			assert_true(w[i].sums[r] == 3.0f * (float)((r + 1) * (r + 2) / 2));
	}
}

/*
 * psbc_pushpull_scaled: each answer lands multiplied, over every segment of a value of
 * many, into another array or in place; a scale that is no number is refused.
 */
static void
t_scaled(void **state)
{
	const char *const extra[] = { "--async", "--seg-size", "1432", NULL };
	enum { N = 3000 };		/* 12000 B: nine segments of 1432 */
	const uint64_t keys[] = { 3, 4 };
	float *v = calloc(2 * N, sizeof(float)), *out = calloc(2 * N, sizeof(float));
	char list[64];
	psbc_t *s;
	int i;

	(void)state;
	assert_non_null(v);
	assert_non_null(out);
	start(0, extra);
	s = open_to(addr(0, list, sizeof(list)), 0, 0);
	for (i = 0; i < 2 * N; i++)
		v[i] = (float)(i % 977) - 300.5f;
	/* the first: each key's stored value is what it pushed; a quarter lands */
	assert_int_equal(psbc_wait(s, psbc_pushpull_scaled(s, keys, 2, v, out, 2 * N, NULL,
		0.25f, NULL, NULL)), 0);
	for (i = 0; i < 2 * N; i++)
		assert_true(out[i] == v[i] * 0.25f);
	/* in place: the stored value is twice v now, a third of it lands */
	assert_int_equal(psbc_wait(s, psbc_pushpull_scaled(s, keys, 2, v, v, 2 * N, NULL,
		1.0f / 3, NULL, NULL)), 0);
	for (i = 0; i < 2 * N; i++) {
		float x = (float)(i % 977) - 300.5f;

		assert_true(v[i] == (x + x) * (1.0f / 3));
	}
	/* 1 is an unscaled pushpull */
	assert_int_equal(psbc_wait(s, psbc_pushpull_scaled(s, keys, 2, out, out, 2 * N, NULL,
		1.0f, NULL, NULL)), 0);
	assert_int_equal(psbc_pushpull_scaled(s, keys, 2, v, out, 2 * N, NULL, NAN, NULL, NULL),
		PSBC_E_INVAL);
	assert_non_null(strstr(psbc_errmsg(s), "scale"));
	assert_int_equal(psbc_pushpull_scaled(s, keys, 2, v, out, 2 * N, NULL, INFINITY, NULL,
		NULL), PSBC_E_INVAL);
	psbc_close(s);
	free(v);
	free(out);
}

/* Through a scheduler named by the DMLC_* variables, as ps-lite programs are started. */
static void
t_scheduler(void **state)
{
	const char *const extra[] = { "--async", "--scheduler-port", "0", "--num-workers", "1",
		NULL };
	const uint64_t k = 42;
	float v = 2.5f, out = 0;
	struct psbc_opts o;
	char port[16], err[512];
	psbc_t *s = NULL;

	(void)state;
	psbc_opts_init(&o);
	unsetenv("DMLC_PS_ROOT_URI");
	assert_int_equal(psbc_open(&s, &o, err, sizeof(err)), PSBC_E_ENV);
	assert_non_null(strstr(err, "DMLC_PS_ROOT_URI"));
	start(0, extra);
	setenv("DMLC_PS_ROOT_URI", "127.0.0.1", 1);
	assert_int_equal(psbc_open(&s, &o, err, sizeof(err)), PSBC_E_ENV);
	assert_non_null(strstr(err, "DMLC_PS_ROOT_PORT"));
	snprintf(port, sizeof(port), "%u", srv[0].sched_port);
	setenv("DMLC_PS_ROOT_PORT", port, 1);
	setenv("DMLC_ROLE", "server", 1);
	assert_int_equal(psbc_open(&s, &o, err, sizeof(err)), PSBC_E_ENV);
	assert_non_null(strstr(err, "DMLC_ROLE"));
	setenv("DMLC_ROLE", "worker", 1);
	if (psbc_open(&s, &o, err, sizeof(err)) != 0)
		fail_msg("through the scheduler: %s", err);
	assert_int_equal(psbc_num_servers(s), 1);
	assert_int_equal(psbc_num_workers(s), 1);
	assert_int_equal(psbc_rank(s), 0);
	assert_int_equal(psbc_wait(s, psbc_pushpull(s, &k, 1, &v, &out, 1, NULL, NULL, NULL)), 0);
	assert_true(out == v);
	assert_int_equal(psbc_barrier(s, PSBC_GROUP_WORKERS), 0);
	assert_int_equal(psbc_barrier(s, 0), PSBC_E_INVAL);
	assert_int_equal(psbc_finalize(s), 0);
	psbc_close(s);
}

/* A scheduler that does not answer: named after the connect timeout. */
static void
t_scheduler_silent(void **state)
{
	struct psbc_opts o;
	char sched[64];
	int fd;

	(void)state;
	snprintf(sched, sizeof(sched), "127.0.0.1:%u", udp_port(&fd));
	psbc_opts_init(&o);
	o.scheduler = sched;
	o.connect_timeout_ms = 400;
	open_fails(&o, PSBC_E_UNREACHABLE, 350, 2000, sched, "did not admit", NULL);
	close(fd);
	/* nothing listens there now: refused, said so when the wait ends */
	open_fails(&o, PSBC_E_REFUSED, 350, 2000, sched, "refused for 0.4 s", NULL);
}

/* A server that stops answering mid-run (stopped, not gone: no ICMP): named, not waited on. */
static void
t_server_stops(void **state)
{
	const char *const extra[] = { "--async", NULL };
	const uint64_t k = 5;
	float v[4] = { 1, 2, 3, 4 }, out[4];
	struct psbc_opts o;
	char list[64], err[256];
	psbc_t *s = NULL;
	uint64_t t0, dt;

	(void)state;
	start(0, extra);
	psbc_opts_init(&o);
	o.servers = addr(0, list, sizeof(list));
	o.server_timeout_ms = 1500;
	assert_int_equal(psbc_open(&s, &o, err, sizeof(err)), 0);
	assert_int_equal(psbc_wait(s, psbc_pushpull(s, &k, 1, v, out, 4, NULL, NULL, NULL)), 0);
	kill(srv[0].pid, SIGSTOP);
	t0 = tk_ms();
	assert_int_equal(psbc_wait(s, psbc_pushpull(s, &k, 1, v, out, 4, NULL, NULL, NULL)),
		PSBC_E_UNREACHABLE);
	dt = tk_ms() - t0;
	kill(srv[0].pid, SIGCONT);
	if (dt < 1400 || dt > 4000)
		fail_msg("given up after %llu ms, expected about 1500", (unsigned long long)dt);
	assert_non_null(strstr(psbc_errmsg(s), list));
	assert_non_null(strstr(psbc_errmsg(s), "not even a probe"));
	psbc_close(s);
}

struct slow {
	const char *list;
	int rank;
	unsigned int delay_ms;
	int rc;
	float out;
};

static void *
slow_worker(void *arg)
{
	struct slow *w = arg;
	const uint64_t k = 21;
	float v = 1.0f;
	struct psbc_opts o;
	char err[256];
	psbc_t *s = NULL;

	psbc_opts_init(&o);
	o.servers = w->list;
	o.rank = w->rank;
	o.sync = 1;
	o.server_timeout_ms = 1000;
	w->rc = psbc_open(&s, &o, err, sizeof(err));
	if (w->rc != 0)
		return NULL;
	tk_sleep_ms(w->delay_ms);
	w->rc = psbc_wait(s, psbc_pushpull(s, &k, 1, &v, &w->out, 1, NULL, NULL, NULL));
	if (w->rc != 0)
		fprintf(stderr, "rank %d: %s\n", w->rank, psbc_errmsg(s));
	psbc_close(s);
	return NULL;
}

/* A synchronous round waiting on a slow worker is no dead server: the probe is answered. */
static void
t_sync_slow(void **state)
{
	const char *const extra[] = { "--sync", "--num-workers", "2", NULL };
	struct slow w[2];
	pthread_t th[2];
	char list[64];
	int i;

	(void)state;
	start(0, extra);
	addr(0, list, sizeof(list));
	for (i = 0; i < 2; i++) {
		w[i] = (struct slow){ .list = list, .rank = i, .delay_ms = i == 0 ? 0 : 2500 };
		assert_int_equal(pthread_create(&th[i], NULL, slow_worker, &w[i]), 0);
	}
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < 2; i++) {
		assert_int_equal(w[i].rc, 0);
		assert_true(w[i].out == 2.0f);
	}
}

/* The DMLC_* variables a session reads straight to servers: rank, address to send from. */
static void
t_env(void **state)
{
	const char *const extra[] = { "--async", "--num-workers", "3", NULL };
	struct psbc_opts o;
	char list[64], err[512];
	psbc_t *s = NULL;

	(void)state;
	start(0, extra);
	psbc_opts_init(&o);
	o.servers = addr(0, list, sizeof(list));
	setenv("DMLC_RANK", "2", 1);
	assert_int_equal(psbc_open(&s, &o, err, sizeof(err)), 0);
	assert_int_equal(psbc_rank(s), 2);
	psbc_close(s);
	setenv("DMLC_RANK", "two", 1);
	open_fails(&o, PSBC_E_ENV, 0, 2000, "DMLC_RANK 'two'", NULL);
	unsetenv("DMLC_RANK");
	setenv("DMLC_NODE_HOST", "nowhere", 1);
	open_fails(&o, PSBC_E_ENV, 0, 2000, "DMLC_NODE_HOST 'nowhere'", NULL);
	unsetenv("DMLC_NODE_HOST");
	setenv("DMLC_INTERFACE", "psbnoif0", 1);
	open_fails(&o, PSBC_E_ENV, 0, 2000, "DMLC_INTERFACE 'psbnoif0'", NULL);
	setenv("DMLC_INTERFACE", "lo", 1);		/* 127.0.0.1: the server is there */
	assert_int_equal(psbc_open(&s, &o, err, sizeof(err)), 0);
	psbc_close(s);
	unsetenv("DMLC_INTERFACE");
}

/*
 * A loop that sleeps outside the library (psbc_wait_fds, poll, psbc_test) finishes a
 * PUSH_PULL over each transport; over shared memory it waits on the ring's interrupt and
 * the link's socket too, and it is woken by them rather than by its timeout.
 */
static void
t_wait_fds(void **state)
{
	const char *const extra[] = { "--async", NULL };
	static const char *const transports[] = { "udp", "shm" };
	enum { N = 1 << 18 };	/* 1 MiB of floats: many datagrams, many ring frames */
	struct pollfd pfd[3];
	struct psbc_opts o;
	char list[64], err[512];
	unsigned int t, i, sleeps, woken;
	float *v = malloc(N * sizeof(float)), *out = malloc(N * sizeof(float));
	int ms, n;

	(void)state;
	assert_non_null(v);
	assert_non_null(out);
	start(0, extra);
	for (i = 0; i < N; i++)
		v[i] = (float)(i % 1000);
	for (t = 0; t < 2; t++) {
		const uint64_t k = 9 + t;	/* a fresh key: its sum is this push alone */
		psbc_t *s = NULL;
		int64_t ts;

		psbc_opts_init(&o);
		o.servers = addr(0, list, sizeof(list));
		o.transport = transports[t];
		if (psbc_open(&s, &o, err, sizeof(err)) != 0)
			fail_msg("psbc_open over %s: %s", transports[t], err);
		assert_int_equal(psbc_server_transport(s, 0), t == 0 ? PSBC_TRANSPORT_UDP :
			PSBC_TRANSPORT_SHM);
		/* room for the socket alone is too little over shared memory */
		n = psbc_wait_fds(s, pfd, 1, &ms);
		if (t == 0)
			assert_true(n == 0 || n == 1);
		else
			assert_int_equal(n, PSBC_E_INVAL);
		psbc_progress(s);
		assert_int_equal(psbc_wait_fds(s, NULL, 3, &ms), PSBC_E_INVAL);
		ts = psbc_pushpull(s, &k, 1, v, out, N, NULL, NULL, NULL);
		assert_true(ts >= 0);
		sleeps = woken = 0;
		while (psbc_test(s, ts) == 0) {
			n = psbc_wait_fds(s, pfd, 3, &ms);
			assert_true(n >= 0);
			if (n == 0)
				continue;
			assert_int_equal(n, t == 0 ? 1 : 3);
			assert_int_equal(pfd[0].fd, psbc_fd(s));
			assert_true(ms >= 1 && ms <= 5);
			sleeps++;
			woken += poll(pfd, (nfds_t)n, ms) > 0;
		}
		assert_int_equal(psbc_wait(s, ts), 0);
		for (i = 0; i < N; i += 4099)
			assert_true(out[i] == v[i]);
		/* what woke the sleeps was the traffic, not their timeouts */
		if (sleeps > 4 && woken * 2 < sleeps)
			fail_msg("over %s: %u of %u sleeps woken by the descriptors", transports[t],
				woken, sleeps);
		psbc_close(s);
	}
	free(v);
	free(out);
}

/* Options and the library itself. */
static void
t_misc(void **state)
{
	struct psbc_opts o;
	char err[256];
	psbc_t *s = NULL;
	int c;

	(void)state;
	psbc_opts_init(&o);
	o.servers = "198.18.0.1:99999";
	assert_int_equal(psbc_open(&s, &o, err, sizeof(err)), PSBC_E_INVAL);
	assert_non_null(strstr(err, "198.18.0.1:99999"));
	o.servers = "127.0.0.1";
	o.seg_size = 1001;
	assert_int_equal(psbc_open(&s, &o, err, sizeof(err)), PSBC_E_INVAL);
	assert_non_null(strstr(err, "seg_size"));
	o.api = 99;
	assert_int_equal(psbc_open(&s, &o, err, sizeof(err)), PSBC_E_INVAL);
	assert_non_null(strstr(err, "psbc_opts_init"));
	assert_int_equal(psbc_open(NULL, NULL, NULL, 0), PSBC_E_INVAL);
	for (c = 0; c >= PSBC_E_SCHEDULER; c--)
		assert_null(strstr(psb_strerror(c), "unknown"));
	assert_non_null(strstr(psb_strerror(1), "unknown"));
	assert_non_null(strstr(psb_version(), "git"));
	assert_int_equal(psbc_wait(NULL, 0), PSBC_E_INVAL);
	psbc_close(NULL);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(t_refused, teardown),
		cmocka_unit_test_teardown(t_silent, teardown),
		cmocka_unit_test_teardown(t_rank, teardown),
		cmocka_unit_test_teardown(t_ops, teardown),
		cmocka_unit_test_teardown(t_bad_input, teardown),
		cmocka_unit_test_teardown(t_len_mismatch, teardown),
		cmocka_unit_test_teardown(t_two_servers, teardown),
		cmocka_unit_test_teardown(t_sync, teardown),
		cmocka_unit_test_teardown(t_scaled, teardown),
		cmocka_unit_test_teardown(t_scheduler, teardown),
		cmocka_unit_test_teardown(t_scheduler_silent, teardown),
		cmocka_unit_test_teardown(t_server_stops, teardown),
		cmocka_unit_test_teardown(t_sync_slow, teardown),
		cmocka_unit_test_teardown(t_env, teardown),
		cmocka_unit_test_teardown(t_wait_fds, teardown),
		cmocka_unit_test_teardown(t_misc, teardown),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: %s PSB-KSRV\n", argv[0]);
		return 2;
	}
	ksrv = argv[1];
	atexit(stop_all);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
