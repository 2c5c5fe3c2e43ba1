/* The staleness experiment: options, control protocol, the trainer's accounting, sampling. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "psb_be.h"
#include "psb_cli.h"
#include "psb_stale.h"

#define HOUR_NS		(3600ull * 1000000000ull)
#define CATCH_UP_MAX	4096	/* steps one tick takes at most; the rest are lost_steps */

/* ---- control protocol ---- */

void
psb_stale_write(uint8_t *out, const struct psb_stale_msg *m)
{
	psb_wr16(out, PSB_STALE_MAGIC);
	out[2] = PSB_STALE_WIRE;
	out[3] = m->type;
	psb_wr32(out + 4, m->session);
	psb_wr32(out + 8, m->worker);
	psb_wr32(out + 12, m->held);
	psb_wr32(out + 16, m->samples);
	psb_wr32(out + 20, m->seq);
	psb_wr64(out + 24, m->sum);
	psb_wr64(out + 32, m->window);
	psb_wr64(out + 40, 0);
}

int
psb_stale_parse(const uint8_t *buf, size_t len, struct psb_stale_msg *m)
{
	if (len != PSB_STALE_LEN)
		return -PSB_STALE_BAD_SHORT;
	if (psb_rd16(buf) != PSB_STALE_MAGIC || buf[2] != PSB_STALE_WIRE)
		return -PSB_STALE_BAD_MAGIC;
	memset(m, 0, sizeof(*m));
	m->type = buf[3];
	m->session = psb_rd32(buf + 4);
	m->worker = psb_rd32(buf + 8);
	m->held = psb_rd32(buf + 12);
	m->samples = psb_rd32(buf + 16);
	m->seq = psb_rd32(buf + 20);
	m->sum = psb_rd64(buf + 24);
	m->window = psb_rd64(buf + 32);
	if (m->type < PSB_STALE_POST || m->type > PSB_STALE_ACK)
		return -PSB_STALE_BAD_TYPE;
	if (psb_rd64(buf + 40) != 0)
		return -PSB_STALE_BAD_FIELD;
	switch (m->type) {
	case PSB_STALE_POST:
		if (m->samples > PSB_STALE_SAMPLES_MAX ||
		    (m->samples != 0 && m->sum > (uint64_t)m->samples * m->held) ||
		    (m->samples == 0 && m->window != 0) ||
		    (m->samples != 0 && (m->window == 0 || m->window > HOUR_NS)))
			return -PSB_STALE_BAD_FIELD;
		break;
	case PSB_STALE_PULL:
		if (m->samples != 0 || m->sum != 0 || m->window != 0)
			return -PSB_STALE_BAD_FIELD;
		break;
	case PSB_STALE_ACK:
		if (m->samples != 0 || m->sum != 0 || m->seq != 0 ||
		    (m->window & ~(uint64_t)(PSB_STALE_ACK_END | PSB_STALE_ACK_WAITING)) != 0)
			return -PSB_STALE_BAD_FIELD;
		break;
	}
	return m->type;
}

const char *
psb_stale_bad_name(int bad)
{
	static const char *const names[PSB_STALE_BAD_MAX] = {
		[PSB_STALE_BAD_SHORT] = "length",
		[PSB_STALE_BAD_MAGIC] = "magic",
		[PSB_STALE_BAD_TYPE] = "type",
		[PSB_STALE_BAD_FIELD] = "field",
	};

	if (bad < 0)
		bad = -bad;
	return bad > 0 && bad < PSB_STALE_BAD_MAX ? names[bad] : "?";
}

/* ---- options ---- */

const char *const psb_stale_mode_names[] = {
	[PSB_STALE_MULTICAST] = "multicast",
	[PSB_STALE_PULL_MODE] = "pull",
	[PSB_STALE_FILESYSTEM] = "filesystem",
	[PSB_STALE_EPGM] = "epgm",
	NULL,
};

const char psb_stale_opts_usage[] =
"  --mode multicast|pull|filesystem|epgm   how workers get versions (default multicast;\n"
"                        epgm: ZeroMQ PUB/SUB over PGM, the old transport, a baseline)\n"
"  --push_frequency S    the trainer publishes a version every S seconds (default 0.2)\n"
"  --data_size MB        of MB megabytes (10^6 B; or with a unit: 64KiB) (default 10)\n"
"  --pull_frequency S    pull, filesystem: a worker looks for a newer one every S (0.2)\n"
"  --post_frequency S    a worker posts its mean version every S (default 2)\n"
"  --step_frequency S    a worker samples the version it holds every S (default 0.005)\n"
"  --max_version N       stop after version N (default 500)\n"
"  --max_time S          or after S seconds (default 60)\n"
"  --workers N           workers (default 4)\n"
"  --workers-per-node N  (or --nworkers-per-node) workers sharing a host (default 1)\n"
"  --trial_name NAME     names the results (default: trial)\n"
"  --LOGLEVEL LEVEL      ERROR, WARNING, INFO or DEBUG (default INFO)\n";

void
psb_stale_opts_default(struct psb_stale_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->mode = PSB_STALE_MULTICAST;
	o->push_ns = 200000000;
	o->data_size = 10000000;
	o->pull_ns = 200000000;
	o->post_ns = 2000000000;
	o->step_ns = 5000000;
	o->max_version = 500;
	o->max_time_ns = 60 * 1000000000ull;
	o->workers = 4;
	o->workers_per_node = 1;
	snprintf(o->trial_name, sizeof(o->trial_name), "trial");
	o->loglevel = 7;
}

/* "name" with every '-' read as '_'. */
static int
name_is(const char *name, const char *want)
{
	for (; *name != '\0' && *want != '\0'; name++, want++)
		if ((*name == '-' ? '_' : *name) != *want)
			return 0;
	return *name == '\0' && *want == '\0';
}

/* Seconds in [lo_ns, hi_ns]: a plain decimal number, nothing after it. */
static int
seconds(const char *flag, const char *v, uint64_t lo_ns, uint64_t hi_ns, uint64_t *out,
		char *err, size_t errlen)
{
	char *end;
	double s;

	errno = 0;
	s = strtod(v, &end);
	if (end == v || *end != '\0' || errno != 0 || !isfinite(s) || s * 1e9 < (double)lo_ns ||
	    s * 1e9 > (double)hi_ns)
		return psb_fail(err, errlen, "--%s: expected seconds from %g to %g, got \"%s\"", flag,
			    lo_ns / 1e9, hi_ns / 1e9, v);
	*out = (uint64_t)llround(s * 1e9);
	return 0;
}

static int
count(const char *flag, const char *v, uint64_t lo, uint64_t hi, uint64_t *out, char *err,
		size_t errlen)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(v, &end, 10);
	if (end == v || *end != '\0' || errno != 0 || v[0] == '-' || x < lo || x > hi)
		return psb_fail(err, errlen, "--%s: expected a whole number from %llu to %llu, got "
			    "\"%s\"", flag, (unsigned long long)lo, (unsigned long long)hi, v);
	*out = x;
	return 0;
}

/* MB as the benchmark counts them (10^6 bytes), fractions allowed, or a size with a unit. */
static int
megabytes(const char *v, uint64_t *out, char *err, size_t errlen)
{
	static const struct { const char *s; double mul; } units[] = {
		{ "B", 1 }, { "KB", 1e3 }, { "MB", 1e6 }, { "GB", 1e9 },
		{ "KiB", 1024.0 }, { "MiB", 1048576.0 }, { "GiB", 1073741824.0 },
	};
	char *end;
	double x, mul = 1e6;
	unsigned int i;

	errno = 0;
	x = strtod(v, &end);
	if (end != v && *end != '\0') {
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (strcmp(end, units[i].s) == 0)
				break;
		if (i == sizeof(units) / sizeof(units[0]))
			end = (char *)v;
		else
			mul = units[i].mul;
	}
	if (end == v || errno != 0 || !isfinite(x) || x < 0 || x * mul > 68719476736.0)
		return psb_fail(err, errlen, "--data_size: expected megabytes (10 is 10^6 bytes x 10) "
			    "or a size with a unit (B, KB, MB, GB, KiB, MiB, GiB) up to 64 GiB, got "
			    "\"%s\"", v);
	*out = (uint64_t)llround(x * mul);
	return 0;
}

int
psb_stale_opt(struct psb_stale_opts *o, const char *name, const char *v, char *err,
		size_t errlen)
{
	uint64_t x = 0;
	int rc = 0, i;

	if (name_is(name, "mode")) {
		for (i = 0; i < PSB_STALE_MODE_MAX; i++)
			if (strcmp(v, psb_stale_mode_names[i]) == 0)
				break;
		if (i == PSB_STALE_MODE_MAX)
			return psb_fail(err, errlen, "--mode: expected multicast, pull, filesystem or "
				    "epgm, got \"%s\"", v);
		o->mode = i;
	} else if (name_is(name, "push_frequency")) {
		rc = seconds("push_frequency", v, 1000000, HOUR_NS, &o->push_ns, err, errlen);
	} else if (name_is(name, "data_size")) {
		rc = megabytes(v, &o->data_size, err, errlen);
	} else if (name_is(name, "pull_frequency")) {
		rc = seconds("pull_frequency", v, 1000000, HOUR_NS, &o->pull_ns, err, errlen);
	} else if (name_is(name, "post_frequency")) {
		rc = seconds("post_frequency", v, 1000000, HOUR_NS, &o->post_ns, err, errlen);
	} else if (name_is(name, "step_frequency")) {
		rc = seconds("step_frequency", v, 100000, HOUR_NS, &o->step_ns, err, errlen);
	} else if (name_is(name, "max_version")) {
		rc = count("max_version", v, 1, 1000000000, &x, err, errlen);
		if (rc == 0)
			o->max_version = (uint32_t)x;
	} else if (name_is(name, "max_time")) {
		rc = seconds("max_time", v, 1000000, 7 * 24 * HOUR_NS, &o->max_time_ns, err,
			     errlen);
	} else if (name_is(name, "workers")) {
		rc = count("workers", v, 1, PSB_STALE_WORKERS_MAX, &x, err, errlen);
		if (rc == 0)
			o->workers = (uint32_t)x;
	} else if (name_is(name, "workers_per_node") || name_is(name, "nworkers_per_node")) {
		rc = count(name, v, 1, PSB_STALE_WORKERS_MAX, &x, err, errlen);
		if (rc == 0)
			o->workers_per_node = (uint32_t)x;
	} else if (name_is(name, "trial_name")) {
		if (v[0] == '\0' || v[0] == '.' || v[0] == '-' ||
		    strlen(v) >= sizeof(o->trial_name) ||
		    strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") !=
		    strlen(v))
			return psb_fail(err, errlen, "--trial_name: 1 to %zu letters, digits, '_', '-' "
				    "or '.', not starting with '.' or '-', got \"%s\"",
				    sizeof(o->trial_name) - 1, v);
		snprintf(o->trial_name, sizeof(o->trial_name), "%s", v);
	} else if (name_is(name, "LOGLEVEL")) {
		static const struct { const char *n; int l; } lv[] = {
			{ "CRITICAL", 3 }, { "ERROR", 4 }, { "WARNING", 5 }, { "WARN", 5 },
			{ "INFO", 7 }, { "DEBUG", 8 },
		};
		unsigned int k;

		for (k = 0; k < sizeof(lv) / sizeof(lv[0]); k++)
			if (strcasecmp(v, lv[k].n) == 0)
				break;
		if (k == sizeof(lv) / sizeof(lv[0]))
			return psb_fail(err, errlen, "--LOGLEVEL: expected CRITICAL, ERROR, WARNING, "
				    "INFO or DEBUG, got \"%s\"", v);
		o->loglevel = lv[k].l;
	} else {
		return 0;
	}
	return rc < 0 ? rc : 1;
}

int
psb_stale_opts_check(const struct psb_stale_opts *o, char *err, size_t errlen)
{
	if (o->step_ns > o->post_ns)
		return psb_fail(err, errlen, "--step_frequency (%g s) is longer than --post_frequency "
			    "(%g s): a post would carry no sample", o->step_ns / 1e9,
			    o->post_ns / 1e9);
	if (o->post_ns / o->step_ns > PSB_STALE_SAMPLES_MAX)
		return psb_fail(err, errlen, "--post_frequency / --step_frequency: at most %d samples "
			    "a post, got %llu", PSB_STALE_SAMPLES_MAX,
			    (unsigned long long)(o->post_ns / o->step_ns));
	if (o->workers_per_node > o->workers)
		return psb_fail(err, errlen, "--workers-per-node (%u) is more than --workers (%u)",
			    o->workers_per_node, o->workers);
	return 0;
}

/* ---- version bytes ---- */

static inline uint64_t
word(uint64_t i, uint32_t vid)
{
	return (i + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t)vid * 0xd6e8feb86659fd93ull;
}

void
psb_stale_fill_at(uint8_t *buf, uint64_t off, uint64_t n, uint32_t vid)
{
	uint64_t i = off / 8, end = off + n, w;

	if (n == 0)
		return;
	if (off % 8 != 0) {	/* the rest of the word off is in */
		unsigned int k = (unsigned int)(off % 8), m = 8 - k;

		w = word(i++, vid);
		memcpy(buf + off, (uint8_t *)&w + k, m < n ? m : n);
	}
	for (; i * 8 + 8 <= end; i++) {
		w = word(i, vid);
		memcpy(buf + i * 8, &w, 8);
	}
	if (i * 8 < end) {
		w = word(i, vid);
		memcpy(buf + i * 8, &w, end - i * 8);
	}
}

void
psb_stale_fill(uint8_t *buf, uint64_t len, uint32_t vid)
{
	psb_stale_fill_at(buf, 0, len, vid);
}

int64_t
psb_stale_verify(const uint8_t *buf, uint64_t len, uint32_t vid)
{
	uint64_t i, n = len / 8, w;

	for (i = 0; i < n; i++) {
		w = word(i, vid);
		if (memcmp(buf + i * 8, &w, 8) != 0)
			break;
	}
	if (i < n || (w = word(n, vid), memcmp(buf + n * 8, &w, len - n * 8) != 0)) {
		uint64_t at = i * 8;

		for (w = word(i, vid); at < len && buf[at] == ((uint8_t *)&w)[at % 8]; at++)
			;
		return (int64_t)at;
	}
	return -1;
}

/* ---- the trainer's accounting ---- */

struct pub {
	uint64_t t;
	uint32_t vid;
};

struct psb_stale_acct {
	uint32_t session;
	uint64_t key;
	uint64_t post_cost;		/* ns of a worker's budget one post takes */
	uint64_t step;			/* between a worker's samples */
	uint32_t nworkers, joined;
	uint64_t max_window;
	struct psb_stale_worker_state *w;
	/* when which version became the newest: a ring, oldest first from head */
	struct pub *ring;
	uint32_t cap, head, n;
	struct pub before;		/* the newest until the oldest entry kept, since when */
	struct psb_stale_totals tot;
};

const char *const psb_stale_refusal_names[] = {
	[PSB_STALE_REF_SESSION] = "session",
	[PSB_STALE_REF_WORKER] = "worker",
	[PSB_STALE_REF_ADDRESS] = "address",
	[PSB_STALE_REF_REPLAY] = "replay",
	[PSB_STALE_REF_FUTURE] = "future",
	[PSB_STALE_REF_WINDOW] = "window",
	[PSB_STALE_REF_KEY] = "key",
	[PSB_STALE_REF_RATE] = "rate",
	[PSB_STALE_REF_STEP] = "step",
	[PSB_STALE_REF_AHEAD] = "ahead",
};

int
psb_stale_acct_create(uint32_t session, uint32_t workers, uint64_t key, uint64_t step_ns,
		uint64_t post_ns, uint64_t max_window_ns, uint64_t push_ns,
		struct psb_stale_acct **out)
{
	struct psb_stale_acct *a;
	uint64_t cap;

	if (workers == 0 || workers > PSB_STALE_WORKERS_MAX || push_ns == 0 || post_ns < 2 ||
	    step_ns == 0 || step_ns > HOUR_NS || max_window_ns == 0 || max_window_ns > HOUR_NS)
		return -EINVAL;
	/*
	 * The versions published within a window, and the one before it. Pushes are a period
	 * apart, but a version made over time may be handed over late and the next one on time:
	 * two a period at most. What a window needs beyond that is refused, never guessed.
	 */
	cap = 2 * (max_window_ns / push_ns + 2);
	if (cap > (1u << 22))
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (a == NULL)
		return -ENOMEM;
	a->w = calloc(workers, sizeof(*a->w));
	a->ring = calloc(cap, sizeof(*a->ring));
	if (a->w == NULL || a->ring == NULL) {
		psb_stale_acct_free(a);
		return -ENOMEM;
	}
	a->session = session;
	a->key = key;
	a->post_cost = post_ns / 2;
	a->step = step_ns;
	a->nworkers = workers;
	a->max_window = max_window_ns;
	a->cap = (uint32_t)cap;
	*out = a;
	return 0;
}

void
psb_stale_acct_free(struct psb_stale_acct *a)
{
	if (a == NULL)
		return;
	free(a->w);
	free(a->ring);
	free(a);
}

static const struct pub *
at(const struct psb_stale_acct *a, uint32_t i)
{
	return &a->ring[(a->head + i) % a->cap];
}

void
psb_stale_acct_publish(struct psb_stale_acct *a, uint32_t vid, uint64_t now_ns)
{
	struct pub *p;

	if (a->n == a->cap) {
		a->before = a->ring[a->head];
		a->head = (a->head + 1) % a->cap;
		a->n--;
	}
	p = &a->ring[(a->head + a->n) % a->cap];
	p->t = now_ns;
	p->vid = vid;
	a->n++;
}

uint32_t
psb_stale_acct_current(const struct psb_stale_acct *a)
{
	return a->n == 0 ? 0 : at(a, a->n - 1)->vid;
}

int
psb_stale_acct_sampled(const struct psb_stale_acct *a, uint64_t end_ns, uint64_t step_ns,
		uint32_t n, uint64_t *sum)
{
	uint64_t span, first, total;
	uint32_t i, vid = a->before.vid;

	if (n == 0) {
		*sum = 0;
		return 0;
	}
	span = (uint64_t)(n - 1) * step_ns;
	first = end_ns > span ? end_ns - span : 0;
	/* before.t: since when the version before the oldest entry kept was the newest */
	if (first < a->before.t)
		return -ERANGE;
	for (i = 0; i < a->n && at(a, i)->t <= first; i++)
		vid = at(a, i)->vid;
	total = (uint64_t)n * vid;
	/* each later version adds its rise to every instant from its time on */
	for (; i < a->n && at(a, i)->t <= end_ns; i++) {
		total += (uint64_t)(at(a, i)->vid - vid) * ((end_ns - at(a, i)->t) / step_ns + 1);
		vid = at(a, i)->vid;
	}
	*sum = total;
	return 0;
}

void
psb_stale_acct_bad(struct psb_stale_acct *a, int bad)
{
	if (bad < 0)
		bad = -bad;
	if (bad > 0 && bad < PSB_STALE_BAD_MAX)
		a->tot.bad[bad]++;
}

static int
refuse(struct psb_stale_acct *a, enum psb_stale_refusal why)
{
	a->tot.refused[why]++;
	return -1;
}

int
psb_stale_acct_known(struct psb_stale_acct *a, const struct psb_stale_msg *m, uint32_t ip,
		uint16_t port)
{
	const struct psb_stale_worker_state *w;

	if (m->session != a->session)
		return refuse(a, PSB_STALE_REF_SESSION);
	if (m->worker >= a->nworkers)
		return refuse(a, PSB_STALE_REF_WORKER);
	w = &a->w[m->worker];
	if (w->ip == 0 || w->ip != ip || w->port != port)
		return refuse(a, PSB_STALE_REF_ADDRESS);
	return 0;
}

int
psb_stale_acct_post(struct psb_stale_acct *a, const struct psb_stale_msg *m, uint32_t ip,
		uint16_t port, uint64_t now_ns, struct psb_stale_point *pt)
{
	struct psb_stale_worker_state *w;
	uint32_t current = psb_stale_acct_current(a);
	uint64_t tsum;
	double mean, s;

	/* a worker joins before it knows the session: 0 is taken for a join alone */
	if (m->session != a->session && !(m->session == 0 && m->samples == 0))
		return refuse(a, PSB_STALE_REF_SESSION);
	if (m->worker >= a->nworkers)
		return refuse(a, PSB_STALE_REF_WORKER);
	w = &a->w[m->worker];
	if (w->ip != 0 && (w->ip != ip || w->port != port))
		return refuse(a, PSB_STALE_REF_ADDRESS);
	if (m->held > current)
		return refuse(a, PSB_STALE_REF_FUTURE);
	if (m->samples == 0) {
		if (m->sum != a->key)
			return refuse(a, PSB_STALE_REF_KEY);
		if (w->ip == 0) {
			w->ip = ip;
			w->port = port;
			a->joined++;
			a->tot.joins++;
		}
		return 0;
	}
	if (w->ip == 0)
		return refuse(a, PSB_STALE_REF_ADDRESS);	/* samples before it joined */
	if (w->posts != 0 && m->seq == w->seq && m->sum == w->last_sum &&
	    m->samples == w->last_samples) {
		a->tot.duplicates++;	/* sent again, its ACK lost: answered, not counted */
		return 0;
	}
	if (w->posts != 0 && m->seq <= w->seq)
		return refuse(a, PSB_STALE_REF_REPLAY);
	if (m->window > a->max_window)
		return refuse(a, PSB_STALE_REF_WINDOW);
	/*
	 * The samples, step apart on the worker's clock, the last taken no later than the post
	 * was sent: placed step apart ending now (when it came), each instant is no earlier
	 * than the sample's own, and the trainer's version then no older than at the sample.
	 * A worker sampling faster than step could not be placed so.
	 */
	if ((uint64_t)(m->samples - 1) * a->step >= m->window)
		return refuse(a, PSB_STALE_REF_STEP);
	if (psb_stale_acct_sampled(a, now_ns, a->step, m->samples, &tsum) != 0)
		return refuse(a, PSB_STALE_REF_WINDOW);
	/* a worker holding a version before the record says it was made: a bad post */
	if (tsum < m->sum)
		return refuse(a, PSB_STALE_REF_AHEAD);
	/* what was not spent within the last 4 posts' time is not kept */
	if (w->spent_ns + 4 * a->post_cost < now_ns)
		w->spent_ns = now_ns - 4 * a->post_cost;
	if (w->spent_ns + a->post_cost > now_ns)
		return refuse(a, PSB_STALE_REF_RATE);
	w->spent_ns += a->post_cost;
	mean = (double)m->sum / m->samples;
	s = (double)(tsum - m->sum) / m->samples;
	w->seq = m->seq;
	w->last_sum = m->sum;
	w->last_samples = m->samples;
	w->held = m->held;
	w->posts++;
	w->samples += m->samples;
	w->diff_sum += current - mean;
	w->window_sum += s;
	if (s > w->window_max)
		w->window_max = s;
	w->last_ns = now_ns;
	a->tot.posts++;
	a->tot.diff_sum += current - mean;
	a->tot.window_sum += s;
	if (s > a->tot.window_max)
		a->tot.window_max = s;
	pt->worker = m->worker;
	pt->t_ns = now_ns;
	pt->held = m->held;
	pt->current = current;
	pt->mean = mean;
	pt->trainer_mean = (double)tsum / m->samples;
	pt->version_diff = current - mean;
	pt->window = s;
	return 1;
}

const struct psb_stale_worker_state *
psb_stale_acct_worker(const struct psb_stale_acct *a, uint32_t worker)
{
	return worker < a->nworkers ? &a->w[worker] : NULL;
}

const struct psb_stale_totals *
psb_stale_acct_totals(const struct psb_stale_acct *a)
{
	return &a->tot;
}

uint32_t
psb_stale_acct_joined(const struct psb_stale_acct *a)
{
	return a->joined;
}

/* ---- the worker's sampling ---- */

void
psb_stale_sampler_init(struct psb_stale_sampler *s, uint64_t step_ns, uint64_t post_ns,
		uint64_t now_ns)
{
	memset(s, 0, sizeof(*s));
	s->step_ns = step_ns;
	/* a post falls on a sample: the trainer places a post's last sample when it came */
	s->post_ns = (post_ns + step_ns - 1) / step_ns * step_ns;
	s->next_step = now_ns + step_ns;
	s->next_post = now_ns + s->post_ns;
	s->window_start = now_ns;
}

void
psb_stale_sampler_flush(struct psb_stale_sampler *s, uint32_t held, uint64_t now_ns,
		struct psb_stale_msg *m)
{
	if (s->samples == 0) {		/* a post carries one sample at least */
		s->samples = 1;
		s->sum = held;
	}
	memset(m, 0, sizeof(*m));
	m->type = PSB_STALE_POST;
	m->held = held;
	m->samples = (uint32_t)s->samples;
	m->sum = s->sum;
	m->seq = ++s->seq;
	m->window = now_ns > s->window_start ? now_ns - s->window_start : 1;
	s->samples = 0;
	s->sum = 0;
	s->window_start = now_ns;
}

void
psb_stale_sampler_take(struct psb_stale_sampler *s, uint32_t held, uint64_t now_ns)
{
	uint64_t due, take;

	if (s->step_ns == 0 || s->next_step > now_ns)
		return;
	due = (now_ns - s->next_step) / s->step_ns + 1;
	take = due;
	if (take > CATCH_UP_MAX)
		take = CATCH_UP_MAX;
	if (take > PSB_STALE_SAMPLES_MAX - s->samples)
		take = PSB_STALE_SAMPLES_MAX - s->samples;
	s->samples += take;
	s->sum += take * held;
	s->lost_steps += due - take;
	s->next_step += due * s->step_ns;
}

int
psb_stale_sampler_tick(struct psb_stale_sampler *s, uint32_t held, uint64_t now_ns,
		struct psb_stale_msg *m)
{
	psb_stale_sampler_take(s, held, now_ns);
	if (now_ns < s->next_post)
		return 0;
	s->next_post += ((now_ns - s->next_post) / s->post_ns + 1) * s->post_ns;
	psb_stale_sampler_flush(s, held, now_ns, m);
	return 1;
}

uint64_t
psb_stale_sampler_next_ns(const struct psb_stale_sampler *s)
{
	return s->next_step < s->next_post ? s->next_step : s->next_post;
}

void
psb_stale_logf(psb_stale_log_fn log, void *arg, int level, const char *fmt, ...)
{
	char line[400];
	va_list ap;

	if (log == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	log(arg, level, line);
}
