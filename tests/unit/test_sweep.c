/* Unit tests of lib/sweep: sweep files, expansion, seeded draws, refusals, states, statistics. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "psb_sweep.h"

static char g_dir[] = "/tmp/psb-test-sweep.XXXXXX";
static char g_path[512];

/* a sweep file around body (the keys after name, server and worker), its path in g_path */
static const char *
sweep_file(const char *body)
{
	const char *conf = getenv("PSB_CONFIG_DIR");
	FILE *f;

	assert_non_null(conf);
	snprintf(g_path, sizeof(g_path), "%s/s.json", g_dir);
	f = fopen(g_path, "w");
	assert_non_null(f);
	fprintf(f, "{\"name\": \"t\", \"server\": \"%s/pushpull-server.json\", "
		"\"worker\": \"%s/pushpull-worker.json\"%s%s}", conf, conf, body[0] ? ", " : "",
		body);
	fclose(f);
	return g_path;
}

static int
load(struct psb_sweep *s, const char *body, long trials, long hparams, char *err, size_t len)
{
	return psb_sweep_load(s, sweep_file(body), trials, hparams, -1, err, len);
}

/* the sweep is refused, at load or expansion, with want in the message */
static void
refused(const char *body, const char *want)
{
	struct psb_sweep s;
	struct psb_sweep_job *jobs;
	size_t n;
	char err[1024] = "";
	int rc = load(&s, body, -1, -1, err, sizeof(err));

	if (rc == 0) {
		rc = psb_sweep_expand(&s, 1000, &jobs, &n, err, sizeof(err));
		if (rc == 0)
			psb_sweep_jobs_free(jobs, n);
		psb_sweep_free(&s);
	}
	if (rc == 0)
		fail_msg("sweep {%s} was taken", body);
	if (strstr(err, want) == NULL)
		fail_msg("sweep {%s}: \"%s\" does not say \"%s\"", body, err, want);
}

static void
test_expand_grid_hparams_trials(void **state)
{
	struct psb_sweep s;
	struct psb_sweep_job *jobs;
	size_t n, i, k;
	char err[1024];

	(void)state;
	assert_int_equal(load(&s, "\"grid\": {\"pushpull.len\": [\"4KiB\", 8192], \"workers\": "
			      "[1, 2]}, \"random\": {\"pushpull.keys\": {\"default\": 40, "
			      "\"int\": [8, 64]}}", 2, 3, err, sizeof(err)), 0);
	assert_int_equal(psb_sweep_expand(&s, 1000, &jobs, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2 * 2 * 3 * 2);
	for (i = 0; i < n; i++) {
		/* trials of one setting share it and nothing else does */
		for (k = 0; k < n; k++) {
			if (k == i)
				continue;
			assert_string_not_equal(jobs[i].id, jobs[k].id);
			assert_int_equal(strcmp(jobs[i].setting, jobs[k].setting) == 0,
					 i / 2 == k / 2);
		}
		assert_int_equal(jobs[i].trial, i % 2);
		assert_int_equal(jobs[i].hparam, (i / 2) % 3);
		/* hparam 0 is the defaults */
		if (jobs[i].hparam == 0)
			assert_int_equal(json_integer_value(json_object_get(jobs[i].settings,
					 "pushpull.keys")), 40);
		assert_int_equal(jobs[i].workers, (i / 6) % 2 + 1);
		assert_int_not_equal(jobs[i].trial_seed, 0);
		if (i % 2 == 1)
			assert_int_not_equal(jobs[i].trial_seed, jobs[i - 1].trial_seed);
	}
	/* the last grid key turns fastest */
	assert_string_equal(json_string_value(json_object_get(jobs[0].settings,
			    "pushpull.len")), "4KiB");
	assert_int_equal(json_integer_value(json_object_get(jobs[6].settings, "workers")), 2);
	assert_int_equal(json_integer_value(json_object_get(jobs[12].settings, "pushpull.len")),
			 8192);
	psb_sweep_jobs_free(jobs, n);
	psb_sweep_free(&s);
}

/* The same sweep makes the same job ids (its directories) every time, anywhere. */
static void
test_ids_stable(void **state)
{
	struct psb_sweep s;
	struct psb_sweep_job *a, *b;
	size_t na, nb, i;
	char err[1024], h[33];

	(void)state;
	psb_sweep_hash("", h);
	assert_string_equal(h, "6c62272e07bb014262b821756295c58d");	/* FNV-1a's basis */
	psb_sweep_hash("a", h);
	assert_string_equal(h, "d228cb696f1a8caf78912b704e4a8964");
	assert_int_equal(load(&s, "\"grid\": {\"pushpull.len\": [\"4KiB\", \"8KiB\"]}, "
			      "\"trials\": 2", -1, -1, err, sizeof(err)), 0);
	assert_int_equal(psb_sweep_expand(&s, 100, &a, &na, err, sizeof(err)), 0);
	assert_int_equal(psb_sweep_expand(&s, 100, &b, &nb, err, sizeof(err)), 0);
	assert_int_equal(na, 4);
	for (i = 0; i < na; i++) {
		assert_string_equal(a[i].id, b[i].id);
		assert_true(a[i].trial_seed == b[i].trial_seed);
	}
	psb_sweep_jobs_free(a, na);
	psb_sweep_jobs_free(b, nb);
	psb_sweep_free(&s);
}

/* One key's random stream depends on the seed, its name and h alone: adding a key changes
 * no other key's values; another seed changes them. */
static void
test_draws_independent(void **state)
{
	struct psb_sweep_key a = { .name = "pushpull.keys", .rule = PSB_SWEEP_INT, .lo = 1,
				   .hi = 1000000 };
	struct psb_sweep s1, s2;
	struct psb_sweep_job *j1, *j2;
	size_t n1, n2, i;
	char err[1024];
	unsigned int h, same = 0;

	(void)state;
	for (h = 1; h < 50; h++) {
		json_t *x = psb_sweep_draw(&a, 7, h), *y = psb_sweep_draw(&a, 7, h);
		json_t *z = psb_sweep_draw(&a, 8, h);

		assert_true(json_equal(x, y));
		same += json_equal(x, z);
		json_decref(x);
		json_decref(y);
		json_decref(z);
	}
	assert_true(same < 3);
	assert_int_equal(load(&s1, "\"random\": {\"pushpull.keys\": {\"default\": 40, \"int\": "
			      "[8, 4096]}}, \"seed\": 3", 1, 20, err, sizeof(err)), 0);
	assert_int_equal(load(&s2, "\"random\": {\"pushpull.window\": {\"default\": 8192, "
			      "\"pow2\": [4096, 1048576]}, \"pushpull.keys\": {\"default\": 40, \"int\": "
			      "[8, 4096]}}, \"seed\": 3", 1, 20, err, sizeof(err)), 0);
	assert_int_equal(psb_sweep_expand(&s1, 100, &j1, &n1, err, sizeof(err)), 0);
	if (psb_sweep_expand(&s2, 100, &j2, &n2, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(n1, 20);
	for (i = 0; i < n1; i++) {
		json_t *w = json_object_get(j2[i].settings, "pushpull.window");

		assert_true(json_equal(json_object_get(j1[i].settings, "pushpull.keys"),
				       json_object_get(j2[i].settings, "pushpull.keys")));
		assert_true(json_integer_value(w) >= 4096 && json_integer_value(w) <= 1048576);
		assert_int_equal(json_integer_value(w) & (json_integer_value(w) - 1), 0);
	}
	psb_sweep_jobs_free(j1, n1);
	psb_sweep_jobs_free(j2, n2);
	psb_sweep_free(&s1);
	psb_sweep_free(&s2);
}

static void
test_rules_in_range(void **state)
{
	struct psb_sweep_key k = { .name = "x" };
	json_t *choices = json_pack("[s,s,s]", "a", "b", "c"), *v;
	unsigned int h, seen_hi = 0, seen_lo = 0;

	(void)state;
	for (h = 1; h < 2000; h++) {
		k.rule = PSB_SWEEP_INT;
		k.lo = 3;
		k.hi = 5;
		v = psb_sweep_draw(&k, 1, h);
		assert_true(json_is_integer(v));
		assert_true(json_integer_value(v) >= 3 && json_integer_value(v) <= 5);
		seen_lo += json_integer_value(v) == 3;
		seen_hi += json_integer_value(v) == 5;
		json_decref(v);
		k.rule = PSB_SWEEP_LOG_UNIFORM;
		k.lo = 1e-3;
		k.hi = 10;
		v = psb_sweep_draw(&k, 1, h);
		assert_true(json_is_real(v));
		assert_true(json_real_value(v) >= 1e-3 && json_real_value(v) <= 10);
		json_decref(v);
		k.rule = PSB_SWEEP_UNIFORM;
		k.lo = -2;
		k.hi = 2;
		v = psb_sweep_draw(&k, 1, h);
		assert_true(json_real_value(v) >= -2 && json_real_value(v) <= 2);
		json_decref(v);
		k.rule = PSB_SWEEP_CHOICE;
		k.choices = choices;
		v = psb_sweep_draw(&k, 1, h);
		assert_true(json_is_string(v));
		json_decref(v);
	}
	assert_true(seen_lo > 500 && seen_hi > 500);
	json_decref(choices);
}

/* Bad sweeps are refused before anything runs, naming the key. */
static void
test_refusals(void **state)
{
	(void)state;
	refused("\"grid\": {\"pushpull.lenn\": [4096]}", "pushpull.lenn");
	refused("\"grid\": {\"pushpull.len\": [\"2GB\"]}", "pushpull.len");
	refused("\"grid\": {\"pushpull.len\": [4094]}", "pushpull.len");
	refused("\"grid\": {\"store.max_keys\": [-1]}", "store.max_keys");
	refused("\"grid\": {\"server:serve.duration\": [\"forever\"]}", "serve.duration");
	refused("\"grid\": {\"node.ports\": [\"x\"]}", "node.ports: set by psb-sweep");
	refused("\"grid\": {\"worker:output.dir\": [\"/etc\"]}", "output.dir: set by psb-sweep");
	refused("\"grid\": {\"pushpull.len\": [4096, 4096]}", "value 2 is the same as value 1");
	refused("\"grid\": {\"pushpull.len\": []}", "grid.pushpull.len: expected a list");
	refused("\"grid\": {\"pushpull.len\": [[4096]]}", "grid.pushpull.len: expected a string");
	refused("\"grid\": {\"../x\": [1]}", "grid.../x: expected a document path");
	refused("\"grid\": {\"workers\": [0]}", "grid.workers: expected worker processes");
	refused("\"workers\": 17", "workers: expected worker processes");
	refused("\"random\": {\"pushpull.keys\": {\"int\": [1, 2]}}", "default: required");
	refused("\"random\": {\"pushpull.keys\": {\"default\": 4, \"int\": [5, 2]}}",
		"expected low <= high");
	refused("\"random\": {\"pushpull.keys\": {\"default\": 4, \"int\": [1.5, 2]}}",
		"expected integer bounds");
	refused("\"random\": {\"pushpull.window\": {\"default\": 4, \"pow2\": [3, 8]}}",
		"powers of two");
	refused("\"random\": {\"pushpull.keys\": {\"default\": 4, \"gauss\": [1, 2]}}",
		"random.pushpull.keys.gauss: unknown key");
	refused("\"random\": {\"pushpull.keys\": {\"default\": 4, \"int\": [1, 2], "
		"\"choice\": [1]}}", "more than one rule");
	refused("\"random\": {\"pushpull.keys\": {\"default\": 99999999, \"int\": [1, 2]}}",
		"pushpull.keys");
	refused("\"grid\": {\"pushpull.keys\": [4]}, \"random\": {\"pushpull.keys\": "
		"{\"default\": 4, \"int\": [1, 2]}}", "also a grid key");
	refused("\"grids\": {}", "grids: unknown key");
	refused("\"trials\": 0", "trials: expected an integer in [1, 1000]");
	refused("\"timeout\": \"0.1s\"", "timeout: expected a duration");
	refused("\"figure\": \"speed\"", "figure: \"speed\" is not one of figures");
	refused("\"better\": \"more\"", "better: expected");
	refused("\"set\": {\"pushpull.mode\": \"PUSH_SOMETIMES\"}", "pushpull.mode");
	refused("\"grid\": {\"a\": [1,2,3,4,5,6,7,8,9,10], \"b\": [1,2,3,4,5,6,7,8,9,10], "
		"\"c\": [1,2,3,4,5,6,7,8,9,10], \"d\": [1,2,3,4,5,6,7,8,9,10]}",
		"the sweep makes 10000 jobs, more than the 1000 allowed");
}

static void
test_bad_files(void **state)
{
	struct psb_sweep s;
	char err[1024];
	FILE *f;

	(void)state;
	assert_int_not_equal(psb_sweep_load(&s, "/nonexistent/s.json", -1, -1, -1, err,
					    sizeof(err)), 0);
	assert_non_null(strstr(err, "/nonexistent/s.json"));
	assert_int_not_equal(psb_sweep_load(&s, "/dev/zero", -1, -1, -1, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "not a regular file"));
	snprintf(g_path, sizeof(g_path), "%s/bad.json", g_dir);
	f = fopen(g_path, "w");
	fprintf(f, "{\"name\": \"t\", \"name\": \"u\"}");
	fclose(f);
	assert_int_not_equal(psb_sweep_load(&s, g_path, -1, -1, -1, err, sizeof(err)), 0);
	/* a template of the wrong kind */
	f = fopen(g_path, "w");
	fprintf(f, "{\"name\": \"t\", \"server\": \"%s/pushpull-worker.json\", \"worker\": "
		"\"%s/pushpull-worker.json\"}", getenv("PSB_CONFIG_DIR"), getenv("PSB_CONFIG_DIR"));
	fclose(f);
	assert_int_not_equal(psb_sweep_load(&s, g_path, -1, -1, -1, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "server: expected a document of kind serve"));
	/* the shipped example loads and makes a 2 x 2 x 3 sweep */
	snprintf(g_path, sizeof(g_path), "%s/sweep-example.json", getenv("PSB_CONFIG_DIR"));
	assert_int_equal(psb_sweep_load(&s, g_path, -1, -1, -1, err, sizeof(err)), 0);
	{
		struct psb_sweep_job *jobs;
		size_t n;

		assert_int_equal(psb_sweep_expand(&s, 100, &jobs, &n, err, sizeof(err)), 0);
		assert_int_equal(n, 12);
		psb_sweep_jobs_free(jobs, n);
	}
	psb_sweep_free(&s);
}

/* A trial's documents: one socket per worker, ranks, the settings where they belong. */
static void
test_job_docs(void **state)
{
	struct psb_sweep s;
	struct psb_sweep_job *jobs;
	json_t *srv, *ws, *w;
	size_t n, i;
	char err[1024];

	(void)state;
	assert_int_equal(load(&s, "\"workers\": 3, \"grid\": {\"pushpull.len\": [8192], "
			      "\"node.sync\": [false], \"server:store.max_keys\": [1000]}", -1, -1,
			      err, sizeof(err)), 0);
	assert_int_equal(psb_sweep_expand(&s, 100, &jobs, &n, err, sizeof(err)), 0);
	assert_int_equal(psb_sweep_job_docs(&s, &jobs[0], "/run/x", &srv, &ws, err, sizeof(err)),
			 0);
	assert_int_equal(json_array_size(ws), 3);
	assert_int_equal(json_array_size(json_object_get(json_object_get(srv, "node"), "ports")),
			 3);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(srv, "store"),
			 "max_keys")), 1000);
	assert_true(json_is_false(json_object_get(json_object_get(srv, "node"), "sync")));
	json_array_foreach(ws, i, w) {
		json_t *node = json_object_get(w, "node");

		assert_int_equal(json_integer_value(json_object_get(node, "rank")), i);
		assert_int_equal(json_integer_value(json_object_get(node, "num_workers")), 3);
		assert_true(json_is_false(json_object_get(node, "sync")));
		assert_int_equal(json_integer_value(json_object_get(json_object_get(w, "pushpull"),
				 "len")), 8192);
		assert_null(json_object_get(w, "store"));
		assert_non_null(strstr(json_string_value(json_array_get(json_object_get(node,
				"ports"), 0)), "memif:client:/run/x/"));
	}
	json_decref(srv);
	json_decref(ws);
	psb_sweep_jobs_free(jobs, n);
	psb_sweep_free(&s);
}

static void
test_record_diff(void **state)
{
	json_t *a = json_pack("{s:s,s:{s:[i,i]},s:i}", "name", "x", "grid", "pushpull.len", 1, 2,
			      "n_trials", 3);
	json_t *b = json_pack("{s:s,s:{s:[i,i]},s:i}", "name", "x", "grid", "pushpull.len", 1, 3,
			      "n_trials", 3);
	json_t *c = json_pack("{s:s,s:{s:[i,i]},s:i}", "name", "x", "grid", "pushpull.len", 1, 2,
			      "n_trials", 4);
	json_t *d = json_pack("{s:s,s:{s:[i,i],s:[i]},s:i}", "name", "x", "grid", "pushpull.len",
			      1, 2, "workers", 1, "n_trials", 3);
	char buf[128];

	(void)state;
	assert_null(psb_sweep_record_diff(a, a, buf, sizeof(buf)));
	assert_string_equal(psb_sweep_record_diff(a, b, buf, sizeof(buf)), "grid.pushpull.len");
	assert_string_equal(psb_sweep_record_diff(a, c, buf, sizeof(buf)), "n_trials");
	assert_string_equal(psb_sweep_record_diff(a, d, buf, sizeof(buf)), "grid.workers");
	assert_string_equal(psb_sweep_record_diff(d, a, buf, sizeof(buf)), "grid.workers");
	json_decref(a);
	json_decref(b);
	json_decref(c);
	json_decref(d);
}

static void
test_states(void **state)
{
	struct psb_sweep_look l = { 0 };

	(void)state;
	assert_int_equal(psb_sweep_state_of(&l), PSB_SWEEP_NOT_LAUNCHED);
	l.dir = true;
	assert_int_equal(psb_sweep_state_of(&l), PSB_SWEEP_INCOMPLETE);
	l.launched = true;
	l.alive = 1;
	assert_int_equal(psb_sweep_state_of(&l), PSB_SWEEP_RUNNING);
	/* a launcher that cannot say: running, never taken for crashed */
	l.alive = -1;
	assert_int_equal(psb_sweep_state_of(&l), PSB_SWEEP_RUNNING);
	l.alive = 0;
	assert_int_equal(psb_sweep_state_of(&l), PSB_SWEEP_INCOMPLETE);
	l.ended = true;
	l.exit_status = 1;
	assert_int_equal(psb_sweep_state_of(&l), PSB_SWEEP_FAILED);
	l.done = true;
	assert_int_equal(psb_sweep_state_of(&l), PSB_SWEEP_DONE);
}

static void
test_stats(void **state)
{
	const double v[] = { 2, 4, 4, 4, 5, 5, 7, 9 };
	double m, sd, se;

	(void)state;
	psb_sweep_stats(v, 8, &m, &sd, &se);
	assert_true(fabs(m - 5) < 1e-12);
	assert_true(fabs(sd - sqrt(32.0 / 7)) < 1e-12);
	assert_true(fabs(se - sd / sqrt(8)) < 1e-12);
	psb_sweep_stats(v, 1, &m, &sd, &se);
	assert_true(m == 2 && sd == 0 && se == 0);
}

static int
setup(void **state)
{
	(void)state;
	return mkdtemp(g_dir) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	char cmd[600];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
	return system(cmd) == 0 ? 0 : -1;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_expand_grid_hparams_trials),
		cmocka_unit_test(test_ids_stable),
		cmocka_unit_test(test_draws_independent),
		cmocka_unit_test(test_rules_in_range),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_job_docs),
		cmocka_unit_test(test_record_diff),
		cmocka_unit_test(test_states),
		cmocka_unit_test(test_stats),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
