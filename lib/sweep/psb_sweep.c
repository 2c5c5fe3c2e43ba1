/* Sweeps of experiments: reading a sweep file, expanding it into jobs, seeding, states. */
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "psb_cli.h"
#include "psb_conf.h"
#include "psb_exp.h"
#include "psb_sweep.h"

const char *const psb_sweep_state_names[] = {
	[PSB_SWEEP_NOT_LAUNCHED] = "not launched",
	[PSB_SWEEP_RUNNING] = "running",
	[PSB_SWEEP_FAILED] = "failed",
	[PSB_SWEEP_INCOMPLETE] = "incomplete",
	[PSB_SWEEP_DONE] = "done",
};

static const char *const rule_names[] = {
	[PSB_SWEEP_CHOICE] = "choice",
	[PSB_SWEEP_INT] = "int",
	[PSB_SWEEP_UNIFORM] = "uniform",
	[PSB_SWEEP_LOG_UNIFORM] = "log_uniform",
	[PSB_SWEEP_POW2] = "pow2",
};

/*
 * What psb-sweep sets in every trial's documents itself: a sweep that tried to vary them
 * would break the trial (two workers on one socket) or write outside the job.
 */
static const char *const reserved[] = {
	"name", "kind", "node.role", "node.ports", "node.ip", "node.server", "node.rank",
	"node.num_workers", "node.num_servers", "node.scheduler", "node.scheduler_port",
	"node.file_prefix", "output.dir", "output.overwrite",
};

static const char *const default_figures[] = {
	"goodput_gbps", "requests_per_s", "rtt_p50_us", "rtt_p99_us",
};

/* 128-bit FNV-1a: stable across hosts and builds, which a directory name must be. */
void
psb_sweep_hash(const char *text, char out[33])
{
	unsigned __int128 h = ((unsigned __int128)0x6c62272e07bb0142ull << 64) |
		0x62b821756295c58dull;
	const unsigned __int128 prime = ((unsigned __int128)0x0000000001000000ull << 64) |
		0x000000000000013bull;
	const unsigned char *p;

	for (p = (const unsigned char *)text; *p != '\0'; p++) {
		h ^= *p;
		h *= prime;
	}
	snprintf(out, 33, "%016llx%016llx", (unsigned long long)(h >> 64),
		 (unsigned long long)h);
}

static uint64_t
mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t
hash64(const char *text)
{
	char h[33];

	psb_sweep_hash(text, h);
	return strtoull(h + 16, NULL, 16);
}

/* A number with six significant digits, so that a drawn value reads back as written. */
static double
round6(double v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%.6g", v);
	return strtod(buf, NULL);
}

json_t *
psb_sweep_draw(const struct psb_sweep_key *k, uint64_t seed, unsigned int h)
{
	/* the key's own stream: its name, the sweep's seed and h, nothing of other keys */
	uint64_t x = mix64(seed ^ mix64(hash64(k->name) ^ mix64((uint64_t)h * 0x51ed27ull)));
	double u = (double)(x >> 11) * 0x1.0p-53, v;
	size_t n;
	int e0, e1;

	switch (k->rule) {
	case PSB_SWEEP_CHOICE:
		n = json_array_size(k->choices);
		return json_incref(json_array_get(k->choices, (size_t)(u * (double)n)));
	case PSB_SWEEP_INT:
		v = k->lo + floor(u * (k->hi - k->lo + 1));
		return json_integer((json_int_t)(v > k->hi ? k->hi : v));
	case PSB_SWEEP_UNIFORM:
		return json_real(round6(k->lo + u * (k->hi - k->lo)));
	case PSB_SWEEP_LOG_UNIFORM:
		return json_real(round6(exp(log(k->lo) + u * (log(k->hi) - log(k->lo)))));
	case PSB_SWEEP_POW2:
	default:
		e0 = (int)lround(log2(k->lo));
		e1 = (int)lround(log2(k->hi));
		e0 += (int)(u * (e1 - e0 + 1));
		return json_integer((json_int_t)1 << (e0 > e1 ? e1 : e0));
	}
}

/* ---- reading a sweep file ---- */

static bool
path_ok(const char *p)
{
	size_t i, n = strlen(p);

	if (n == 0 || p[0] == '.' || p[n - 1] == '.' || strstr(p, "..") != NULL)
		return false;
	for (i = 0; i < n; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= '0' && p[i] <= '9') ||
		      p[i] == '_' || p[i] == '.'))
			return false;
	return true;
}

/* A key's name into k: its prefix, its path, and whether psb-sweep owns it. */
static int
key_name(struct psb_sweep_key *k, const char *where, const char *name, char *err,
	 size_t errlen)
{
	size_t i;

	if (strlen(name) >= sizeof(k->name))
		return psb_fail(err, errlen, "%s: key \"%.40s...\" is longer than %zu bytes",
				where, name, sizeof(k->name) - 1);
	snprintf(k->name, sizeof(k->name), "%s", name);
	k->target = PSB_SWEEP_T_AUTO;
	k->path = k->name;
	if (strncmp(name, "worker:", 7) == 0) {
		k->target = PSB_SWEEP_T_WORKER;
		k->path = k->name + 7;
	} else if (strncmp(name, "server:", 7) == 0) {
		k->target = PSB_SWEEP_T_SERVER;
		k->path = k->name + 7;
	} else if (strcmp(name, "workers") == 0) {
		k->target = PSB_SWEEP_T_JOB;
		return 0;
	}
	if (!path_ok(k->path))
		return psb_fail(err, errlen, "%s.%s: expected a document path such as "
				"\"pushpull.len\" (lower-case letters, digits, '_' and '.'), "
				"optionally after \"worker:\" or \"server:\"", where, name);
	for (i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (strcmp(k->path, reserved[i]) == 0)
			return psb_fail(err, errlen, "%s.%s: set by psb-sweep for each trial (its "
					"names, memif sockets, addresses and ranks), not a key a "
					"sweep may vary", where, name);
	return 0;
}

static int
scalar_check(const char *where, const char *name, const json_t *v, char *err, size_t errlen)
{
	if (json_is_string(v) || json_is_number(v) || json_is_boolean(v))
		return 0;
	return psb_fail(err, errlen, "%s.%s: expected a string, number or boolean value, got %s",
			where, name, json_is_null(v) ? "null" : json_is_array(v) ? "an array" :
			"an object");
}

/* "workers" takes 1 to PSB_SWEEP_MAX_WORKERS, whatever gives it. */
static int
workers_check(const char *where, const json_t *v, char *err, size_t errlen)
{
	if (!json_is_integer(v) || json_integer_value(v) < 1 ||
	    json_integer_value(v) > PSB_SWEEP_MAX_WORKERS)
		return psb_fail(err, errlen, "%s: expected worker processes per trial, an integer "
				"in [1, %d]", where, PSB_SWEEP_MAX_WORKERS);
	return 0;
}

static int
grid_load(struct psb_sweep *s, const json_t *grid, char *err, size_t errlen)
{
	const char *name;
	json_t *vals, *v;
	size_t i, j;
	char where[192];

	if (!json_is_object(grid))
		return psb_fail(err, errlen, "grid: expected an object of key: [values]");
	json_object_foreach((json_t *)grid, name, vals) {
		struct psb_sweep_key *k = &s->grid[s->ngrid];

		if (s->ngrid == PSB_SWEEP_MAX_KEYS)
			return psb_fail(err, errlen, "grid: more than %d keys", PSB_SWEEP_MAX_KEYS);
		if (key_name(k, "grid", name, err, errlen) != 0)
			return -EINVAL;
		if (!json_is_array(vals) || json_array_size(vals) == 0 ||
		    json_array_size(vals) > PSB_SWEEP_MAX_VALUES)
			return psb_fail(err, errlen, "grid.%s: expected a list of 1 to %d values",
					name, PSB_SWEEP_MAX_VALUES);
		json_array_foreach(vals, i, v) {
			if (scalar_check("grid", name, v, err, errlen) != 0)
				return -EINVAL;
			snprintf(where, sizeof(where), "grid.%s", name);
			if (k->target == PSB_SWEEP_T_JOB && workers_check(where, v, err, errlen))
				return -EINVAL;
			for (j = 0; j < i; j++)
				if (json_equal(v, json_array_get(vals, j)))
					return psb_fail(err, errlen, "grid.%s: value %zu is the same "
							"as value %zu (a setting twice)", name,
							i + 1, j + 1);
		}
		k->values = json_incref(vals);
		s->ngrid++;
	}
	return 0;
}

static int
bounds(struct psb_sweep_key *k, const char *name, const json_t *arg, bool ints, char *err,
       size_t errlen)
{
	const char *rule = rule_names[k->rule];

	if (!json_is_array(arg) || json_array_size(arg) != 2 ||
	    !json_is_number(json_array_get(arg, 0)) || !json_is_number(json_array_get(arg, 1)))
		return psb_fail(err, errlen, "random.%s.%s: expected [low, high]", name, rule);
	k->lo = json_number_value(json_array_get(arg, 0));
	k->hi = json_number_value(json_array_get(arg, 1));
	if (!isfinite(k->lo) || !isfinite(k->hi) || k->lo > k->hi)
		return psb_fail(err, errlen, "random.%s.%s: expected low <= high, got [%g, %g]",
				name, rule, k->lo, k->hi);
	if (ints && (!json_is_integer(json_array_get(arg, 0)) ||
		     !json_is_integer(json_array_get(arg, 1)) || fabs(k->lo) > 9e15 ||
		     fabs(k->hi) > 9e15))
		return psb_fail(err, errlen, "random.%s.%s: expected integer bounds", name, rule);
	if ((k->rule == PSB_SWEEP_LOG_UNIFORM || k->rule == PSB_SWEEP_POW2) && k->lo <= 0)
		return psb_fail(err, errlen, "random.%s.%s: expected bounds above 0", name, rule);
	if (k->rule == PSB_SWEEP_POW2 &&
	    (k->hi > 0x1p62 || ((uint64_t)k->lo & ((uint64_t)k->lo - 1)) != 0 ||
	     ((uint64_t)k->hi & ((uint64_t)k->hi - 1)) != 0))
		return psb_fail(err, errlen, "random.%s.pow2: expected powers of two up to 2^62, "
				"got [%g, %g]", name, k->lo, k->hi);
	return 0;
}

static int
random_key(struct psb_sweep_key *k, const char *name, const json_t *spec, char *err,
	   size_t errlen)
{
	const char *rk;
	json_t *arg, *v;
	int nrules = 0;
	unsigned int r;
	size_t i;

	if (!json_is_object(spec))
		return psb_fail(err, errlen, "random.%s: expected {\"default\": value, RULE: ...} "
				"with one RULE of choice, int, uniform, log_uniform, pow2", name);
	json_object_foreach((json_t *)spec, rk, arg) {
		if (strcmp(rk, "default") == 0) {
			if (scalar_check("random", name, arg, err, errlen) != 0)
				return -EINVAL;
			k->def = json_incref(arg);
			continue;
		}
		for (r = 0; r < sizeof(rule_names) / sizeof(rule_names[0]); r++)
			if (strcmp(rk, rule_names[r]) == 0)
				break;
		if (r == sizeof(rule_names) / sizeof(rule_names[0]))
			return psb_fail(err, errlen, "random.%s.%s: unknown key (expected default, "
					"choice, int, uniform, log_uniform or pow2)", name, rk);
		if (++nrules > 1)
			return psb_fail(err, errlen, "random.%s: more than one rule", name);
		k->rule = (int)r;
		if (r == PSB_SWEEP_CHOICE) {
			if (!json_is_array(arg) || json_array_size(arg) == 0 ||
			    json_array_size(arg) > PSB_SWEEP_MAX_VALUES)
				return psb_fail(err, errlen, "random.%s.choice: expected a list of "
						"1 to %d values", name, PSB_SWEEP_MAX_VALUES);
			json_array_foreach(arg, i, v)
				if (scalar_check("random", name, v, err, errlen) != 0)
					return -EINVAL;
			k->choices = json_incref(arg);
		} else if (bounds(k, name, arg, r == PSB_SWEEP_INT || r == PSB_SWEEP_POW2, err,
				  errlen) != 0) {
			return -EINVAL;
		}
	}
	if (k->def == NULL)
		return psb_fail(err, errlen, "random.%s.default: required (the setting of "
				"hparam 0)", name);
	if (nrules == 0)
		return psb_fail(err, errlen, "random.%s: expected a rule: choice, int, uniform, "
				"log_uniform or pow2", name);
	return 0;
}

static int
random_load(struct psb_sweep *s, const json_t *random, char *err, size_t errlen)
{
	const char *name;
	json_t *spec;
	unsigned int g;

	if (!json_is_object(random))
		return psb_fail(err, errlen, "random: expected an object of key: {default, rule}");
	json_object_foreach((json_t *)random, name, spec) {
		struct psb_sweep_key *k = &s->random[s->nrandom];

		if (s->nrandom == PSB_SWEEP_MAX_KEYS)
			return psb_fail(err, errlen, "random: more than %d keys",
					PSB_SWEEP_MAX_KEYS);
		if (key_name(k, "random", name, err, errlen) != 0)
			return -EINVAL;
		for (g = 0; g < s->ngrid; g++)
			if (strcmp(s->grid[g].name, name) == 0)
				return psb_fail(err, errlen, "random.%s: also a grid key", name);
		s->nrandom++;
		if (random_key(k, name, spec, err, errlen) != 0)
			return -EINVAL;
		if (k->target == PSB_SWEEP_T_JOB &&
		    (workers_check("random.workers.default", k->def, err, errlen) != 0 ||
		     (k->rule != PSB_SWEEP_CHOICE && k->rule != PSB_SWEEP_INT &&
		      k->rule != PSB_SWEEP_POW2) ||
		     (k->rule != PSB_SWEEP_CHOICE &&
		      (k->lo < 1 || k->hi > PSB_SWEEP_MAX_WORKERS))))
			return psb_fail(err, errlen, "random.workers: expected whole numbers of "
					"worker processes in [1, %d]", PSB_SWEEP_MAX_WORKERS);
	}
	return 0;
}

/* A trial document: inline, or a path relative to the sweep file's directory. */
static json_t *
template_load(const char *key, const json_t *v, const char *sweep_path, int kind, int role,
	      char *err, size_t errlen)
{
	struct psb_exp_conf *c;
	char dir[4096], path[8192], e[512];
	json_t *doc;
	int rc;

	if (json_is_object(v)) {
		doc = json_deep_copy(v);
	} else if (json_is_string(v)) {
		snprintf(dir, sizeof(dir), "%s", sweep_path);
		if (json_string_value(v)[0] == '/')
			snprintf(path, sizeof(path), "%s", json_string_value(v));
		else
			snprintf(path, sizeof(path), "%s/%s", dirname(dir), json_string_value(v));
		doc = psb_exp_read_json(path, PSB_EXP_FILE_MAX, &rc, e, sizeof(e));
		if (doc == NULL) {
			psb_fail(err, errlen, "%s: %s", key, e);
			return NULL;
		}
	} else {
		psb_fail(err, errlen, "%s: expected an experiment document or its path", key);
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (doc == NULL || c == NULL) {
		psb_fail(err, errlen, "%s: out of memory", key);
		goto bad;
	}
	if (psb_exp_load(c, doc, true, e, sizeof(e)) != 0) {
		psb_fail(err, errlen, "%s: %s", key, e);
		goto bad;
	}
	if (c->kind != kind || c->node.role != role) {
		psb_fail(err, errlen, "%s: expected a document of kind %s with node.role %s, got "
			 "kind %s, role %s", key, psb_exp_kind_names[kind],
			 psb_exp_role_names[role], psb_exp_kind_names[c->kind],
			 psb_exp_role_names[c->node.role]);
		goto bad;
	}
	free(c);
	return doc;
bad:
	free(c);
	json_decref(doc);
	return NULL;
}

static int
figures_load(struct psb_sweep *s, const json_t *doc, char *err, size_t errlen)
{
	const json_t *f = json_object_get(doc, "figures"), *v;
	const char *by = json_string_value(json_object_get(doc, "figure"));
	const char *better = json_string_value(json_object_get(doc, "better"));
	unsigned int i;
	size_t k;

	if (f == NULL) {
		for (i = 0; i < sizeof(default_figures) / sizeof(default_figures[0]); i++)
			snprintf(s->figures[s->nfigures++], sizeof(s->figures[0]), "%s",
				 default_figures[i]);
	} else {
		if (!json_is_array(f) || json_array_size(f) == 0 ||
		    json_array_size(f) > PSB_SWEEP_MAX_FIGURES)
			return psb_fail(err, errlen, "figures: expected a list of 1 to %d names of "
					"a worker's result columns", PSB_SWEEP_MAX_FIGURES);
		json_array_foreach(f, k, v) {
			if (!json_is_string(v) || !path_ok(json_string_value(v)) ||
			    strlen(json_string_value(v)) >= sizeof(s->figures[0]))
				return psb_fail(err, errlen, "figures: item %zu: expected a result "
						"column such as \"goodput_gbps\"", k + 1);
			snprintf(s->figures[s->nfigures++], sizeof(s->figures[0]), "%s",
				 json_string_value(v));
		}
	}
	if (json_object_get(doc, "figure") != NULL && by == NULL)
		return psb_fail(err, errlen, "figure: expected the name of one of figures");
	snprintf(s->figure, sizeof(s->figure), "%s", by != NULL ? by : s->figures[0]);
	for (i = 0; i < s->nfigures; i++)
		if (strcmp(s->figures[i], s->figure) == 0)
			break;
	if (i == s->nfigures)
		return psb_fail(err, errlen, "figure: \"%s\" is not one of figures", s->figure);
	if (json_object_get(doc, "better") != NULL && better == NULL)
		better = "";
	s->higher = true;
	if (better != NULL && strcmp(better, "higher") != 0) {
		if (strcmp(better, "lower") != 0)
			return psb_fail(err, errlen, "better: expected \"higher\" or \"lower\"");
		s->higher = false;
	}
	return 0;
}

/* trials, hparams, seed: the file's value unless the command line gave one (>= 0). */
static int
count_load(const json_t *doc, const char *key, long long given, long long lo, long long hi,
	   long long def, long long *out, char *err, size_t errlen)
{
	const json_t *v = json_object_get(doc, key);

	*out = def;
	if (v != NULL) {
		if (!json_is_integer(v) || json_integer_value(v) < lo ||
		    json_integer_value(v) > hi)
			return psb_fail(err, errlen, "%s: expected an integer in [%lld, %lld]", key,
					lo, hi);
		*out = json_integer_value(v);
	}
	if (given >= 0)
		*out = given;
	return 0;
}

static const char *const top_keys[] = {
	"name", "description", "server", "worker", "workers", "set", "grid", "random", "trials",
	"hparams", "seed", "timeout", "figures", "figure", "better",
};

static int doc_set(json_t *doc, const char *path, json_t *v, const char *who, const char *key,
		   char *err, size_t errlen);
static bool goes_to(const struct psb_sweep_key *k, bool server);

/* "set": values every job takes, written into the trial documents themselves */
static int
set_load(struct psb_sweep *s, const json_t *set, char *err, size_t errlen)
{
	struct psb_sweep_key k;
	const char *name;
	json_t *v;

	if (!json_is_object(set))
		return psb_fail(err, errlen, "set: expected an object of key: value");
	json_object_foreach((json_t *)set, name, v) {
		memset(&k, 0, sizeof(k));
		if (key_name(&k, "set", name, err, errlen) != 0 ||
		    scalar_check("set", name, v, err, errlen) != 0)
			return -EINVAL;
		if (k.target == PSB_SWEEP_T_JOB) {
			if (workers_check("set.workers", v, err, errlen) != 0)
				return -EINVAL;
			s->workers = (unsigned int)json_integer_value(v);
			continue;
		}
		if ((goes_to(&k, true) &&
		     doc_set(s->server, k.path, json_incref(v), "server", name, err, errlen)) ||
		    (goes_to(&k, false) &&
		     doc_set(s->worker, k.path, json_incref(v), "worker", name, err, errlen)))
			return -EINVAL;
	}
	return 0;
}

static int
sweep_fill(struct psb_sweep *s, const json_t *doc, const char *path, long n_trials,
	   long n_hparams, long long seed, char *err, size_t errlen)
{
	const char *key, *name = json_string_value(json_object_get(doc, "name"));
	const json_t *v;
	long long t, h, sd;
	uint64_t ns;
	size_t i;
	char e[256];

	if (!json_is_object(doc))
		return psb_fail(err, errlen, "expected a JSON object (a sweep)");
	json_object_foreach((json_t *)doc, key, v) {
		for (i = 0; i < sizeof(top_keys) / sizeof(top_keys[0]); i++)
			if (strcmp(key, top_keys[i]) == 0)
				break;
		if (i == sizeof(top_keys) / sizeof(top_keys[0]))
			return psb_fail(err, errlen, "%s: unknown key (expected name, description, "
					"server, worker, workers, set, grid, random, trials, "
					"hparams, seed, timeout, figures, figure, better)", key);
	}
	if (name == NULL || psb_cli_name_check(name, sizeof(s->name) - 1, e, sizeof(e)) != 0)
		return psb_fail(err, errlen, "name: expected the sweep's name%s%s",
				name != NULL ? ": " : " (required)", name != NULL ? e : "");
	snprintf(s->name, sizeof(s->name), "%s", name);
	v = json_object_get(doc, "description");
	if (v != NULL && !json_is_string(v))
		return psb_fail(err, errlen, "description: expected a string");
	snprintf(s->description, sizeof(s->description), "%s",
		 v != NULL ? json_string_value(v) : "");
	if (json_object_get(doc, "server") == NULL || json_object_get(doc, "worker") == NULL)
		return psb_fail(err, errlen, "%s: required (the trial's %s document)",
				json_object_get(doc, "server") == NULL ? "server" : "worker",
				json_object_get(doc, "server") == NULL ? "server's (kind serve)" :
				"workers' (kind pushpull)");
	s->server = template_load("server", json_object_get(doc, "server"), path, PSB_EXP_SERVE,
				  PSB_EXP_ROLE_SERVER, err, errlen);
	if (s->server == NULL)
		return -EINVAL;
	s->worker = template_load("worker", json_object_get(doc, "worker"), path,
				  PSB_EXP_PUSHPULL, PSB_EXP_ROLE_WORKER, err, errlen);
	if (s->worker == NULL)
		return -EINVAL;
	s->workers = 1;
	v = json_object_get(doc, "workers");
	if (v != NULL) {
		if (workers_check("workers", v, err, errlen) != 0)
			return -EINVAL;
		s->workers = (unsigned int)json_integer_value(v);
	}
	s->timeout_ns = 120 * 1000000000ull;
	v = json_object_get(doc, "timeout");
	if (v != NULL) {
		if (json_is_string(v) ? psb_conf_parse_duration(json_string_value(v), &ns) != 0 :
		    !json_is_number(v) || json_number_value(v) < 0 ||
		    json_number_value(v) > PSB_SWEEP_MAX_TIMEOUT_S)
			ns = 0;
		else if (json_is_number(v))
			ns = (uint64_t)(json_number_value(v) * 1e9);
		if (ns < 1000000000ull || ns > PSB_SWEEP_MAX_TIMEOUT_S * 1000000000ull)
			return psb_fail(err, errlen, "timeout: expected a duration like \"60s\" from "
					"1 s to %d s (what a trial's workers may take)",
					PSB_SWEEP_MAX_TIMEOUT_S);
		s->timeout_ns = ns;
	}
	if (json_object_get(doc, "set") != NULL &&
	    set_load(s, json_object_get(doc, "set"), err, errlen) != 0)
		return -EINVAL;
	if (json_object_get(doc, "grid") != NULL &&
	    grid_load(s, json_object_get(doc, "grid"), err, errlen) != 0)
		return -EINVAL;
	if (json_object_get(doc, "random") != NULL &&
	    random_load(s, json_object_get(doc, "random"), err, errlen) != 0)
		return -EINVAL;
	if (figures_load(s, doc, err, errlen) != 0 ||
	    count_load(doc, "trials", n_trials, 1, PSB_SWEEP_MAX_TRIALS, 1, &t, err, errlen) ||
	    count_load(doc, "hparams", n_hparams, 1, PSB_SWEEP_MAX_HPARAMS, 1, &h, err, errlen) ||
	    count_load(doc, "seed", seed, 0, (1ll << 53), 0, &sd, err, errlen))
		return -EINVAL;
	if (n_trials == 0 || n_hparams == 0)
		return psb_fail(err, errlen, "--n_%s: expected at least 1",
				n_trials == 0 ? "trials" : "hparams");
	s->n_trials = (unsigned int)t;
	s->n_hparams = (unsigned int)h;
	s->seed = (uint64_t)sd;
	/* what makes the jobs: a sweep directory holds one such record */
	s->record = json_pack("{s:s,s:O,s:O,s:I,s:o,s:o,s:I,s:I,s:I}", "name", s->name,
			      "server", s->server, "worker", s->worker,
			      "workers", (json_int_t)s->workers,
			      "grid", json_object_get(doc, "grid") != NULL ?
				      json_incref(json_object_get(doc, "grid")) : json_object(),
			      "random", json_object_get(doc, "random") != NULL ?
				      json_incref(json_object_get(doc, "random")) : json_object(),
			      "n_trials", (json_int_t)s->n_trials,
			      "n_hparams", (json_int_t)s->n_hparams, "seed", (json_int_t)s->seed);
	if (s->record == NULL)
		return psb_fail(err, errlen, "out of memory");
	return 0;
}

int
psb_sweep_load_doc(struct psb_sweep *s, const json_t *doc, const char *path, long n_trials,
		   long n_hparams, long long seed, char *err, size_t errlen)
{
	char e[512];
	int rc;

	memset(s, 0, sizeof(*s));
	rc = sweep_fill(s, doc, path, n_trials, n_hparams, seed, e, sizeof(e));
	if (rc != 0) {
		psb_sweep_free(s);
		psb_fail(err, errlen, "%s: %s", path, e);
	}
	return rc;
}

int
psb_sweep_load(struct psb_sweep *s, const char *path, long n_trials, long n_hparams,
	       long long seed, char *err, size_t errlen)
{
	char e[512];
	json_t *doc;
	int rc;

	memset(s, 0, sizeof(*s));
	doc = psb_exp_read_json(path, PSB_SWEEP_FILE_MAX, &rc, e, sizeof(e));
	if (doc == NULL) {
		psb_fail(err, errlen, "%s", e);
		return rc;
	}
	rc = psb_sweep_load_doc(s, doc, path, n_trials, n_hparams, seed, err, errlen);
	json_decref(doc);
	return rc;
}

static void
key_free(struct psb_sweep_key *k)
{
	json_decref(k->values);
	json_decref(k->def);
	json_decref(k->choices);
}

void
psb_sweep_free(struct psb_sweep *s)
{
	unsigned int i;

	for (i = 0; i < PSB_SWEEP_MAX_KEYS; i++) {
		key_free(&s->grid[i]);
		key_free(&s->random[i]);
	}
	json_decref(s->server);
	json_decref(s->worker);
	json_decref(s->record);
	memset(s, 0, sizeof(*s));
}

/* ---- a trial's documents ---- */

/* doc.path = v (a new reference taken), making the objects on the way. */
static int
doc_set(json_t *doc, const char *path, json_t *v, const char *who, const char *key, char *err,
	size_t errlen)
{
	char part[128];
	const char *p = path, *dot;
	json_t *o = doc, *next;

	while ((dot = strchr(p, '.')) != NULL) {
		snprintf(part, sizeof(part), "%.*s", (int)(dot - p), p);
		next = json_object_get(o, part);
		if (next == NULL) {
			next = json_object();
			if (next == NULL || json_object_set_new(o, part, next) != 0) {
				json_decref(v);
				return psb_fail(err, errlen, "out of memory");
			}
		} else if (!json_is_object(next)) {
			json_decref(v);
			return psb_fail(err, errlen, "%s: %s: the %s document has a value at %.*s, "
					"not a section", key, path, who, (int)(dot - path), path);
		}
		o = next;
		p = dot + 1;
	}
	if (v == NULL || json_object_set_new(o, p, v) != 0)
		return psb_fail(err, errlen, "out of memory");
	return 0;
}

static bool
goes_to(const struct psb_sweep_key *k, bool server)
{
	size_t n;

	if (k->target == PSB_SWEEP_T_JOB)
		return false;
	if (k->target != PSB_SWEEP_T_AUTO)
		return (k->target == PSB_SWEEP_T_SERVER) == server;
	n = strcspn(k->path, ".");
	if ((n == 4 && strncmp(k->path, "node", 4) == 0) ||
	    (n == 5 && strncmp(k->path, "store", 5) == 0) ||
	    (n == 6 && strncmp(k->path, "output", 6) == 0))
		return true;
	if (n == 5 && strncmp(k->path, "serve", 5) == 0)
		return server;
	return !server;
}

static const struct psb_sweep_key *
key_named(const struct psb_sweep *s, const char *name)
{
	unsigned int i;

	for (i = 0; i < s->ngrid; i++)
		if (strcmp(s->grid[i].name, name) == 0)
			return &s->grid[i];
	for (i = 0; i < s->nrandom; i++)
		if (strcmp(s->random[i].name, name) == 0)
			return &s->random[i];
	return NULL;
}

static int
apply(const struct psb_sweep *s, const struct psb_sweep_job *j, json_t *doc, bool server,
      char *err, size_t errlen)
{
	const struct psb_sweep_key *k;
	const char *name;
	json_t *v;

	json_object_foreach(j->settings, name, v) {
		k = key_named(s, name);
		if (k != NULL && goes_to(k, server) &&
		    doc_set(doc, k->path, json_incref(v), server ? "server" : "worker", name, err,
			    errlen) != 0)
			return -EINVAL;
	}
	return 0;
}

static int
check_doc(json_t *doc, const char *who, char *err, size_t errlen)
{
	struct psb_exp_conf *c = calloc(1, sizeof(*c));
	char e[512];
	int rc;

	if (c == NULL)
		return psb_fail(err, errlen, "out of memory");
	rc = psb_exp_load(c, doc, true, e, sizeof(e));
	free(c);
	if (rc != 0)
		return psb_fail(err, errlen, "%s document: %s", who, e);
	return 0;
}

int
psb_sweep_job_docs(const struct psb_sweep *s, const struct psb_sweep_job *j,
		   const char *sockdir, json_t **server, json_t **workers, char *err,
		   size_t errlen)
{
	json_t *srv = json_deep_copy(s->server), *ws = json_array(), *ports = json_array();
	char sock[512], v[600];
	unsigned int i;
	int rc = -ENOMEM;

	*server = *workers = NULL;
	if (srv == NULL || ws == NULL || ports == NULL)
		goto fail;
	for (i = 0; i < j->workers; i++) {
		json_t *w = json_deep_copy(s->worker);

		if (w == NULL || json_array_append_new(ws, w) != 0)
			goto fail;
		snprintf(sock, sizeof(sock), "%s/%.16s.%u.sock", sockdir, j->id, i);
		snprintf(v, sizeof(v), "memif:server:%s", sock);
		json_array_append_new(ports, json_string(v));
		snprintf(v, sizeof(v), "worker-%u", i);
		rc = doc_set(w, "name", json_string(v), "worker", "name", err, errlen);
		snprintf(v, sizeof(v), "memif:client:%s", sock);
		rc = rc ?: doc_set(w, "node.ports", json_pack("[s]", v), "worker", "", err, errlen);
		snprintf(v, sizeof(v), "198.18.0.%u", 10 + i);
		rc = rc ?: doc_set(w, "node.ip", json_string(v), "worker", "", err, errlen);
		rc = rc ?: doc_set(w, "node.server", json_string("198.18.0.1"), "worker", "", err,
				   errlen);
		rc = rc ?: doc_set(w, "node.rank", json_integer(i), "worker", "", err, errlen);
		rc = rc ?: doc_set(w, "node.num_workers", json_integer(j->workers), "worker", "",
				   err, errlen);
		snprintf(v, sizeof(v), "psw-%.12s-w%u", j->id, i);
		rc = rc ?: doc_set(w, "node.file_prefix", json_string(v), "worker", "", err,
				   errlen);
		rc = rc ?: doc_set(w, "output.dir", json_string("psb"), "worker", "", err, errlen);
		rc = rc ?: doc_set(w, "output.overwrite", json_false(), "worker", "", err, errlen);
		rc = rc ?: apply(s, j, w, false, err, errlen);
		if (rc != 0)
			goto fail;
	}
	rc = doc_set(srv, "name", json_string("server"), "server", "name", err, errlen);
	rc = rc ?: doc_set(srv, "node.ports", json_incref(ports), "server", "", err, errlen);
	rc = rc ?: doc_set(srv, "node.ip", json_string("198.18.0.1"), "server", "", err, errlen);
	rc = rc ?: doc_set(srv, "node.num_workers", json_integer(j->workers), "server", "", err,
			   errlen);
	snprintf(v, sizeof(v), "psw-%.12s-s", j->id);
	rc = rc ?: doc_set(srv, "node.file_prefix", json_string(v), "server", "", err, errlen);
	rc = rc ?: doc_set(srv, "output.dir", json_string("psb"), "server", "", err, errlen);
	rc = rc ?: doc_set(srv, "output.overwrite", json_false(), "server", "", err, errlen);
	rc = rc ?: apply(s, j, srv, true, err, errlen);
	rc = rc ?: check_doc(srv, "server", err, errlen);
	for (i = 0; rc == 0 && i < j->workers; i++)
		rc = check_doc(json_array_get(ws, i), "worker", err, errlen);
	if (rc != 0)
		goto fail;
	json_decref(ports);
	*server = srv;
	*workers = ws;
	return 0;
fail:
	if (rc == -ENOMEM)
		psb_fail(err, errlen, "out of memory");
	json_decref(srv);
	json_decref(ws);
	json_decref(ports);
	return rc != 0 ? rc : -ENOMEM;
}

/* ---- expansion ---- */

void
psb_sweep_settings_text(const json_t *settings, const char *sep, char *buf, size_t len)
{
	const char *name;
	json_t *v;
	size_t off = 0;
	char *t;

	if (len == 0)
		return;
	buf[0] = '\0';
	json_object_foreach((json_t *)settings, name, v) {
		t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		if (off < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%s=%s", off ? sep : "",
						name, t != NULL ? t : "?");
		free(t);
	}
	if (off == 0)
		snprintf(buf, len, "the documents as given");
}

static int
job_fill(const struct psb_sweep *s, struct psb_sweep_job *j, json_t *settings,
	 unsigned int trial)
{
	const json_t *w = json_object_get(settings, "workers");
	char *text, h[33];
	json_t *one;

	j->settings = json_incref(settings);
	j->trial = trial;
	j->workers = w != NULL ? (unsigned int)json_integer_value(w) : s->workers;
	one = json_pack("{s:s,s:O}", "sweep", s->name, "settings", settings);
	text = one != NULL ? json_dumps(one, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(one);
	if (text == NULL)
		return -ENOMEM;
	psb_sweep_hash(text, h);
	free(text);
	snprintf(j->setting, sizeof(j->setting), "%.16s", h);
	/* the trial's seed: from its setting and its number, the same in every sweep dir */
	j->trial_seed = mix64(strtoull(j->setting, NULL, 16) ^ mix64(trial + 1)) >> 11;
	j->canonical = json_pack("{s:s,s:O,s:I,s:I}", "sweep", s->name, "settings", settings,
				 "trial", (json_int_t)trial, "seed", (json_int_t)j->trial_seed);
	text = j->canonical != NULL ? json_dumps(j->canonical, JSON_COMPACT | JSON_SORT_KEYS) :
		NULL;
	if (text == NULL)
		return -ENOMEM;
	psb_sweep_hash(text, j->id);
	free(text);
	return 0;
}

int
psb_sweep_expand(const struct psb_sweep *s, size_t max, struct psb_sweep_job **jobsp,
		 size_t *njobs, char *err, size_t errlen)
{
	unsigned int idx[PSB_SWEEP_MAX_KEYS] = { 0 };
	double total = (double)s->n_hparams * s->n_trials;
	struct psb_sweep_job *jobs;
	unsigned int i, h, t, g = 0;
	json_t *settings = NULL, *srv, *ws;
	size_t n = 0, k;
	char e[1024], st[512];
	int rc;

	*jobsp = NULL;
	*njobs = 0;
	for (i = 0; i < s->ngrid; i++)
		total *= (double)json_array_size(s->grid[i].values);
	if (total > (double)max) {
		psb_fail(err, errlen, "the sweep makes %.0f jobs, more than the %zu allowed "
			 "(--max_jobs)", total, max);
		return -E2BIG;
	}
	jobs = calloc((size_t)total, sizeof(*jobs));
	if (jobs == NULL) {
		psb_fail(err, errlen, "out of memory for %.0f jobs", total);
		return -ENOMEM;
	}
	for (;;) {
		for (h = 0; h < s->n_hparams; h++) {
			settings = json_object();
			if (settings == NULL)
				goto nomem;
			for (i = 0; i < s->ngrid; i++)
				json_object_set(settings, s->grid[i].name,
						json_array_get(s->grid[i].values, idx[i]));
			for (i = 0; i < s->nrandom; i++)
				json_object_set_new(settings, s->random[i].name, h == 0 ?
					json_incref(s->random[i].def) :
					psb_sweep_draw(&s->random[i], s->seed, h));
			for (t = 0; t < s->n_trials; t++) {
				struct psb_sweep_job *j = &jobs[n];

				if (job_fill(s, j, settings, t) != 0)
					goto nomem;
				j->index = (unsigned int)n++;
				j->grid_point = g;
				j->hparam = h;
			}
			/* the setting against the schema, before anything is launched */
			rc = psb_sweep_job_docs(s, &jobs[n - 1], "/var/run/psb-sweep", &srv, &ws, e,
						sizeof(e));
			if (rc != 0) {
				psb_sweep_settings_text(settings, ", ", st, sizeof(st));
				psb_fail(err, errlen, "setting %s (%s): %s", jobs[n - 1].setting, st, e);
				goto fail;
			}
			json_decref(srv);
			json_decref(ws);
			for (k = 0; k + s->n_trials < n; k += s->n_trials)
				if (strcmp(jobs[k].setting, jobs[n - 1].setting) == 0) {
					psb_sweep_settings_text(settings, ", ", st, sizeof(st));
					psb_fail(err, errlen, "settings %u and %u are the same (%s): "
						 "random draws repeat a setting; widen a rule or "
						 "ask for fewer --n_hparams", jobs[k].index /
						 s->n_trials + 1, jobs[n - 1].index / s->n_trials + 1,
						 st);
					rc = -EINVAL;
					goto fail;
				}
			json_decref(settings);
			settings = NULL;
		}
		g++;
		/* the next grid point: the last key turns fastest */
		for (i = s->ngrid; i > 0; i--) {
			if (++idx[i - 1] < json_array_size(s->grid[i - 1].values))
				break;
			idx[i - 1] = 0;
		}
		if (i == 0)
			break;
	}
	*jobsp = jobs;
	*njobs = n;
	return 0;
nomem:
	psb_fail(err, errlen, "out of memory");
	rc = -ENOMEM;
fail:
	json_decref(settings);
	psb_sweep_jobs_free(jobs, n);
	return rc;
}

void
psb_sweep_jobs_free(struct psb_sweep_job *jobs, size_t njobs)
{
	size_t i;

	for (i = 0; jobs != NULL && i < njobs; i++) {
		json_decref(jobs[i].settings);
		json_decref(jobs[i].canonical);
	}
	free(jobs);
}

/* ---- records, states, statistics ---- */

static const char *
diff_at(const json_t *a, const json_t *b, char *buf, size_t len, size_t off)
{
	const char *key;
	const json_t *v;
	const char *r;
	size_t n;

	if (json_is_object(a) && json_is_object(b)) {
		json_object_foreach((json_t *)a, key, v) {
			n = (size_t)snprintf(buf + off, len - off, "%s%s", off ? "." : "", key);
			if (off + n >= len)
				return buf;
			r = diff_at(v, json_object_get(b, key), buf, len, off + n);
			if (r != NULL)
				return r;
		}
		json_object_foreach((json_t *)b, key, v)
			if (json_object_get(a, key) == NULL) {
				snprintf(buf + off, len - off, "%s%s", off ? "." : "", key);
				return buf;
			}
		buf[off] = '\0';
		return NULL;
	}
	if (a != NULL && b != NULL && json_equal(a, b))
		return NULL;
	buf[off] = '\0';
	return buf;
}

const char *
psb_sweep_record_diff(const json_t *a, const json_t *b, char *buf, size_t len)
{
	if (len == 0)
		return NULL;
	buf[0] = '\0';
	return diff_at(a, b, buf, len, 0);
}

enum psb_sweep_state
psb_sweep_state_of(const struct psb_sweep_look *l)
{
	if (!l->dir)
		return PSB_SWEEP_NOT_LAUNCHED;
	if (l->done)
		return PSB_SWEEP_DONE;
	if (l->ended)
		return l->exit_status != 0 ? PSB_SWEEP_FAILED : PSB_SWEEP_INCOMPLETE;
	/* a job whose launcher cannot say is running: never taken for a crashed one */
	if (l->alive == 1 || (l->alive < 0 && l->launched))
		return PSB_SWEEP_RUNNING;
	return PSB_SWEEP_INCOMPLETE;
}

void
psb_sweep_stats(const double *v, size_t n, double *mean, double *sd, double *se)
{
	double m = 0, q = 0;
	size_t i;

	for (i = 0; i < n; i++)
		m += v[i];
	m = n != 0 ? m / (double)n : 0;
	for (i = 0; i < n; i++)
		q += (v[i] - m) * (v[i] - m);
	*mean = m;
	*sd = n > 1 ? sqrt(q / (double)(n - 1)) : 0;
	*se = n > 1 ? *sd / sqrt((double)n) : 0;
}
