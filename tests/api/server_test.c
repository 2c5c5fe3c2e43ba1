/*
 * The server API (psb/server.h) as a program uses it: a server of its own whose answers are
 * not sums, workers through psb/client.h, on loopback; and through a scheduler (psb-ksrv
 * --scheduler-only, path in argv[1]).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "psb/client.h"
#include "psb/server.h"
#include "psb_testksrv.h"

#define NKEYS		64
#define BIG		100000		/* floats of the big key: many segments each way */
#define KEY_ROUND	1000		/* answered once both workers pushed into it */
#define KEY_BIG		2000

static const char *ksrv;
static struct tk_server sched;

static void
stop_sched(void)
{
	tk_remove(&sched);
}

/*
 * The program's server: per key, the elementwise largest value pushed (no sum). KEY_ROUND
 * keeps its pushes open until both workers pushed, then answers both with their product:
 * answers given later, from the server's own thread.
 */
struct app {
	float *val[NKEYS + 1];
	size_t len[NKEYS + 1];
	float *big;
	struct psbs_request held[2];
	float held_v[2];
	int nheld;
	int requests, bad;
	int stale_rc, large_rc;		/* what answering twice / too much returned */
	pthread_t th;
	volatile int stop;
	int polls_left;
	psbs_t *s;
};

static void
handler(psbs_t *s, const struct psbs_request *r, void *arg)
{
	struct app *a = arg;
	size_t i;

	a->requests++;
	if (r->key == KEY_ROUND) {
		if (r->op != PSBS_PUSH || r->nvals != 1 || a->nheld >= 2) {
			a->bad++;
			return;
		}
		a->held[a->nheld] = *r;
		a->held_v[a->nheld++] = r->vals[0];
		if (a->nheld == 2) {
			/* worker 1's answer goes last: once it has it, stale_rc is set */
			assert_int_equal(psbs_respond(s, &a->held[0], NULL, 0), 0);
			__atomic_store_n(&a->stale_rc, psbs_respond(s, &a->held[0], NULL, 0),
				__ATOMIC_RELEASE);
			assert_int_equal(psbs_respond(s, &a->held[1], NULL, 0), 0);
		}
		return;
	}
	if (r->key == KEY_BIG) {
		if (r->op != PSBS_PULL) {
			a->bad++;
			return;
		}
		a->large_rc = psbs_respond(s, r, a->big, (size_t)PSBC_MAX_VALUE + 1);
		assert_int_equal(psbs_respond(s, r, a->big, BIG), 0);
		return;
	}
	if (r->key >= NKEYS) {
		a->bad++;
		return;
	}
	if (r->op != PSBS_PULL) {
		if (a->val[r->key] == NULL || a->len[r->key] != r->nvals) {
			free(a->val[r->key]);
			a->val[r->key] = calloc(r->nvals, sizeof(float));
			for (i = 0; i < r->nvals; i++)
				a->val[r->key][i] = -1e30f;
			a->len[r->key] = r->nvals;
		}
		for (i = 0; i < r->nvals; i++)
			if (r->vals[i] > a->val[r->key][i])
				a->val[r->key][i] = r->vals[i];
	}
	assert_int_equal(psbs_respond(s, r, a->val[r->key], a->len[r->key]), 0);
}

static void *
serve(void *arg)
{
	struct app *a = arg;
	int rc;

	while (!a->stop) {
		rc = psbs_poll(a->s, 20);
		if (rc < 0)
			fail_msg("psbs_poll: %s", psb_strerror(rc));
		if (rc == 0)
			break;	/* the job is over */
	}
	return NULL;
}

static void
app_start(struct app *a, const struct psbs_opts *o)
{
	char err[512];
	int rc;

	a->big = malloc(BIG * sizeof(float));
	assert_non_null(a->big);
	for (rc = 0; rc < BIG; rc++)
		a->big[rc] = (float)rc * 0.5f;
	rc = psbs_open(&a->s, o, handler, a, err, sizeof(err));
	if (rc != 0)
		fail_msg("psbs_open: %s: %s", psb_strerror(rc), err);
	assert_int_equal(pthread_create(&a->th, NULL, serve, a), 0);
}

static void
app_end(struct app *a)
{
	int i;

	a->stop = 1;
	pthread_join(a->th, NULL);
	psbs_close(a->s);
	for (i = 0; i <= NKEYS; i++)
		free(a->val[i]);
	free(a->big);
}

static psbc_t *
worker(const char *list, int rank)
{
	struct psbc_opts o;
	char err[512];
	psbc_t *c = NULL;
	int rc;

	psbc_opts_init(&o);
	o.servers = list;
	o.rank = rank;
	rc = psbc_open(&c, &o, err, sizeof(err));
	if (rc != 0)
		fail_msg("psbc_open(%s): %s", list, err);
	return c;
}

/* What the workers see of a server whose answers are the program's. */
static void
t_handler(void **state)
{
	struct app a = { .nheld = 0 };
	struct psbs_opts o;
	uint64_t keys[3] = { 3, 4, 9 }, k = KEY_ROUND, kb = KEY_BIG;
	float v0[6] = { 1, 9, 2, 8, 3, 7 }, v1[6] = { 5, 5, 5, 5, 5, 5 }, out[6];
	float want[6] = { 5, 9, 5, 8, 5, 7 }, one = 1.0f;
	uint32_t lens[3] = { 1, 2, 3 };
	float *big;
	char list[64];
	psbc_t *w0, *w1;
	int64_t t0, t1;
	int i;

	(void)state;
	psbs_opts_init(&o);
	o.local_ip = "127.0.0.1";
	o.num_workers = 2;
	app_start(&a, &o);
	assert_int_equal(psbs_num_workers(a.s), 2);
	snprintf(list, sizeof(list), "127.0.0.1:%d", psbs_port(a.s));
	w0 = worker(list, 0);
	w1 = worker(list, 1);
	/* three keys of three lengths: the largest of each element, not the sum */
	assert_int_equal(psbc_wait(w0, psbc_push(w0, keys, 3, v0, 6, lens, NULL, NULL)), 0);
	assert_int_equal(psbc_wait(w1, psbc_pushpull(w1, keys, 3, v1, out, 6, lens, NULL, NULL)),
		0);
	for (i = 0; i < 6; i++)
		assert_true(out[i] == want[i]);
	memset(out, 0, sizeof(out));
	assert_int_equal(psbc_wait(w0, psbc_pull(w0, keys, 3, out, 6, lens, NULL, NULL)), 0);
	for (i = 0; i < 6; i++)
		assert_true(out[i] == want[i]);
	/* answers held until both pushed: the first waits for the second */
	t0 = psbc_push(w0, &k, 1, &one, 1, NULL, NULL, NULL);
	assert_true(t0 >= 0);
	tk_sleep_ms(300);
	assert_int_equal(psbc_test(w0, t0), 0);
	t1 = psbc_push(w1, &k, 1, &one, 1, NULL, NULL, NULL);
	assert_int_equal(psbc_wait(w1, t1), 0);
	assert_int_equal(psbc_wait(w0, t0), 0);
	assert_int_equal(__atomic_load_n(&a.stale_rc, __ATOMIC_ACQUIRE), PSBC_E_NOT_OPEN);
	assert_non_null(strstr(psbs_errmsg(a.s), "no longer open"));
	/* an answer of many segments; one over the largest value is refused, the request open */
	big = calloc(BIG, sizeof(float));
	assert_int_equal(psbc_wait(w1, psbc_pull(w1, &kb, 1, big, BIG, NULL, NULL, NULL)), 0);
	for (i = 0; i < BIG; i++)
		assert_true(big[i] == (float)i * 0.5f);
	assert_int_equal(a.large_rc, PSBC_E_TOO_LARGE);
	free(big);
	assert_int_equal(a.bad, 0);
	psbc_close(w0);
	psbc_close(w1);
	app_end(&a);
}

/* Bad arguments, a scheduler that does not answer. */
static void
t_open_errors(void **state)
{
	struct psbs_opts o;
	struct psbs_request r;
	char err[512], sched_addr[64];
	psbs_t *s = NULL;
	uint64_t t;
	int fd, rc;
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);

	(void)state;
	psbs_opts_init(&o);
	assert_int_equal(psbs_open(&s, &o, NULL, NULL, err, sizeof(err)), PSBC_E_INVAL);
	assert_non_null(strstr(err, "handler"));
	o.seg_size = 1001;
	assert_int_equal(psbs_open(&s, &o, (psbs_handler)handler, NULL, err, sizeof(err)),
		PSBC_E_INVAL);
	assert_non_null(strstr(err, "seg_size"));
	o.seg_size = 0;
	o.api = 7;
	assert_int_equal(psbs_open(&s, &o, (psbs_handler)handler, NULL, err, sizeof(err)),
		PSBC_E_INVAL);
	assert_non_null(strstr(err, "psbs_opts_init"));
	psbs_opts_init(&o);
	o.local_ip = "not-an-ip";
	assert_int_equal(psbs_open(&s, &o, (psbs_handler)handler, NULL, err, sizeof(err)),
		PSBC_E_INVAL);
	assert_non_null(strstr(err, "not-an-ip"));
	/* a scheduler that never answers: named once the connect timeout passed */
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	snprintf(sched_addr, sizeof(sched_addr), "127.0.0.1:%u", ntohs(sa.sin_port));
	psbs_opts_init(&o);
	o.scheduler = sched_addr;
	o.connect_timeout_ms = 400;
	t = tk_ms();
	rc = psbs_open(&s, &o, (psbs_handler)handler, NULL, err, sizeof(err));
	assert_int_equal(rc, PSBC_E_UNREACHABLE);
	assert_true(tk_ms() - t >= 350 && tk_ms() - t < 3000);
	assert_non_null(strstr(err, sched_addr));
	close(fd);
	setenv("DMLC_PS_ROOT_URI", "127.0.0.1", 1);
	unsetenv("DMLC_PS_ROOT_PORT");
	psbs_opts_init(&o);
	assert_int_equal(psbs_open(&s, &o, (psbs_handler)handler, NULL, err, sizeof(err)),
		PSBC_E_ENV);
	assert_non_null(strstr(err, "DMLC_PS_ROOT_PORT"));
	unsetenv("DMLC_PS_ROOT_URI");
	memset(&r, 0, sizeof(r));
	assert_int_equal(psbs_respond(NULL, &r, NULL, 0), PSBC_E_INVAL);
	assert_int_equal(psbs_poll(NULL, 0), PSBC_E_INVAL);
	assert_null(strstr(psb_strerror(PSBC_E_NOT_OPEN), "unknown"));
	psbs_close(NULL);
}

/* Through the job's scheduler: registered, found by the workers, ended with the job. */
struct opener {
	struct app *a;
	struct psbs_opts o;
	int rc;
	char err[512];
};

static void *
open_server(void *arg)
{
	struct opener *op = arg;

	op->rc = psbs_open(&op->a->s, &op->o, handler, op->a, op->err, sizeof(op->err));
	return NULL;
}

static void
t_scheduled(void **state)
{
	const char *const extra[] = { "--scheduler-port", "0", "--scheduler-only",
		"--num-servers", "1", "--num-workers", "1", NULL };
	struct app a = { .nheld = 0 };
	struct opener op = { .a = &a };
	struct psbc_opts co;
	uint64_t k = 5;
	float v = 3.0f, out = 0;
	char port[16], err[512];
	pthread_t th;
	psbc_t *w = NULL;
	int rc;

	(void)state;
	assert_int_equal(tk_start(&sched, ksrv, extra), 0);
	setenv("DMLC_PS_ROOT_URI", "127.0.0.1", 1);
	snprintf(port, sizeof(port), "%u", sched.sched_port);
	setenv("DMLC_PS_ROOT_PORT", port, 1);
	/* the scheduler admits nodes once all are there: the server registers alongside */
	psbs_opts_init(&op.o);
	op.o.connect_timeout_ms = 10000;
	assert_int_equal(pthread_create(&th, NULL, open_server, &op), 0);
	psbc_opts_init(&co);
	co.connect_timeout_ms = 10000;
	rc = psbc_open(&w, &co, err, sizeof(err));
	pthread_join(th, NULL);
	if (op.rc != 0)
		fail_msg("psbs_open: %s", op.err);
	if (rc != 0)
		fail_msg("psbc_open: %s", err);
	assert_int_equal(psbs_rank(a.s), 0);
	assert_int_equal(psbs_num_servers(a.s), 1);
	assert_int_equal(psbs_num_workers(a.s), 1);
	a.big = NULL;
	assert_int_equal(pthread_create(&a.th, NULL, serve, &a), 0);
	assert_int_equal(psbc_wait(w, psbc_pushpull(w, &k, 1, &v, &out, 1, NULL, NULL, NULL)), 0);
	assert_true(out == 3.0f);
	v = 1.0f;
	assert_int_equal(psbc_wait(w, psbc_pushpull(w, &k, 1, &v, &out, 1, NULL, NULL, NULL)), 0);
	assert_true(out == 3.0f);	/* the largest pushed, not 4 */
	/* the worker finishes: the scheduler ends the server, whose poll says so */
	assert_int_equal(psbc_finalize(w), 0);
	psbc_close(w);
	pthread_join(a.th, NULL);
	assert_int_equal(psbs_poll(a.s, 0), 0);
	psbs_close(a.s);
	free(a.val[5]);
	tk_remove(&sched);
	assert_int_equal(sched.exit_status, 0);
	unsetenv("DMLC_PS_ROOT_URI");
	unsetenv("DMLC_PS_ROOT_PORT");
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_handler),
		cmocka_unit_test(t_open_errors),
		cmocka_unit_test(t_scheduled),
	};

	if (argc < 2) {
		fprintf(stderr, "usage: %s PSB-KSRV\n", argv[0]);
		return 2;
	}
	ksrv = argv[1];
	atexit(stop_sched);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
