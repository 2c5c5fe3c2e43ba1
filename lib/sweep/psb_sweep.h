/* Sweeps of experiments: a sweep file, the jobs it expands to, their states and results. */
#ifndef PSB_SWEEP_H
#define PSB_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Bounds of a sweep file: it is a document users (and scripts) write. */
#define PSB_SWEEP_FILE_MAX	(1024 * 1024)	/* bytes of the file */
#define PSB_SWEEP_MAX_KEYS	32		/* grid keys, and random keys */
#define PSB_SWEEP_MAX_VALUES	64		/* values of one grid key or choice */
#define PSB_SWEEP_MAX_FIGURES	16
#define PSB_SWEEP_MAX_WORKERS	16		/* worker processes of one trial */
#define PSB_SWEEP_MAX_TRIALS	1000
#define PSB_SWEEP_MAX_HPARAMS	1000
#define PSB_SWEEP_MAX_JOBS	10000		/* default of --max_jobs */
#define PSB_SWEEP_MAX_TIMEOUT_S	86400

/* Which documents of a trial a key sets. */
enum psb_sweep_target {
	PSB_SWEEP_T_AUTO,	/* node, store, output: both; a kind's section: that kind's */
	PSB_SWEEP_T_WORKER,	/* "worker:path" */
	PSB_SWEEP_T_SERVER,	/* "server:path" */
	PSB_SWEEP_T_JOB,	/* "workers": worker processes per trial, psb-sweep's own */
};

/* How a random key draws its value. */
enum psb_sweep_rule {
	PSB_SWEEP_CHOICE,	/* one of a list */
	PSB_SWEEP_INT,		/* an integer in [lo, hi] */
	PSB_SWEEP_UNIFORM,	/* a real in [lo, hi) */
	PSB_SWEEP_LOG_UNIFORM,	/* a real whose log is uniform in [log lo, log hi) */
	PSB_SWEEP_POW2,		/* a power of two in [lo, hi] */
};

struct psb_sweep_key {
	char name[128];		/* as the sweep writes it, prefix included */
	const char *path;	/* the document path: name past its prefix */
	int target;		/* enum psb_sweep_target */
	json_t *values;		/* grid: the values (an array) */
	json_t *def;		/* random: the default, the setting of hparam 0 */
	int rule;		/* random: enum psb_sweep_rule */
	json_t *choices;	/* random choice: the values */
	double lo, hi;		/* random int, uniform, log_uniform, pow2 */
};

struct psb_sweep {
	char name[64];
	char description[512];
	json_t *server;			/* the trial's server document (kind serve) */
	json_t *worker;			/* a worker's document (kind pushpull) */
	unsigned int workers;		/* worker processes per trial, unless swept */
	uint64_t timeout_ns;		/* a trial's workers have this long */
	struct psb_sweep_key grid[PSB_SWEEP_MAX_KEYS];
	unsigned int ngrid;
	struct psb_sweep_key random[PSB_SWEEP_MAX_KEYS];
	unsigned int nrandom;
	char figures[PSB_SWEEP_MAX_FIGURES][64];	/* figures the results show */
	unsigned int nfigures;
	char figure[64];		/* the one the best setting is chosen by */
	bool higher;			/* higher is better */
	unsigned int n_trials;
	unsigned int n_hparams;		/* settings drawn per grid point, the first the defaults */
	uint64_t seed;
	json_t *record;			/* what defines the sweep's jobs (sweep.json) */
};

/* One job: a setting and one trial of it. */
struct psb_sweep_job {
	char id[33];			/* hash of its canonical settings: its directory */
	char setting[17];		/* hash of the setting alone: its trials share it */
	json_t *settings;		/* key -> value, every grid and random key */
	json_t *canonical;		/* what id hashes: sweep name, settings, trial, seed */
	unsigned int index;		/* in the sweep's order */
	unsigned int grid_point;
	unsigned int hparam;
	unsigned int trial;
	uint64_t trial_seed;
	unsigned int workers;
};

/*
 * Read a sweep file: its keys checked (names, prefixes, values, rules, keys psb-sweep sets
 * itself refused), the server and worker documents read (a string is a path relative to the
 * sweep file's directory). n_trials, n_hparams and seed: the file's unless given (>= 0).
 * 0 or -errno with "PATH: key: what is wrong" in err. psb_sweep_free releases it.
 */
int psb_sweep_load(struct psb_sweep *s, const char *path, long n_trials, long n_hparams,
		long long seed, char *err, size_t errlen);
/* The same from a parsed document; path names it in errors and anchors relative paths. */
int psb_sweep_load_doc(struct psb_sweep *s, const json_t *doc, const char *path, long n_trials,
		long n_hparams, long long seed, char *err, size_t errlen);
void psb_sweep_free(struct psb_sweep *s);

/*
 * The jobs: grid points x n_hparams settings x n_trials, in that order. Refused (-E2BIG)
 * above max jobs. Each job's documents are built and checked against the experiment schema
 * (psb_sweep_job_docs) so that a bad key or value is refused before anything runs.
 */
int psb_sweep_expand(const struct psb_sweep *s, size_t max, struct psb_sweep_job **jobs,
		size_t *njobs, char *err, size_t errlen);
void psb_sweep_jobs_free(struct psb_sweep_job *jobs, size_t njobs);

/*
 * A trial's documents: the server's and one per worker process (workers, an array), with
 * the job's settings applied and what psb-sweep sets for each trial (names, memif sockets
 * under sockdir, addresses, ranks, file prefixes, results under "psb"), each checked as
 * psb checks a document it starts from. 0 or -errno with the key named in err.
 */
int psb_sweep_job_docs(const struct psb_sweep *s, const struct psb_sweep_job *j,
		const char *sockdir, json_t **server, json_t **workers, char *err, size_t errlen);

/* A value drawn for key at hparam index h (h > 0) of a sweep seeded with seed: the same
 * whatever other keys the sweep has. A new reference. */
json_t *psb_sweep_draw(const struct psb_sweep_key *k, uint64_t seed, unsigned int h);

/*
 * The first path at which two sweep records differ ("grid.pushpull.len", "n_trials"), for
 * refusing a sweep directory made with other settings; NULL when they agree. Uses buf.
 */
const char *psb_sweep_record_diff(const json_t *a, const json_t *b, char *buf, size_t len);

/* A setting for people: "key=value" (values as JSON) joined by sep, or "the documents as
 * given" for a sweep of no keys; cut at len. */
void psb_sweep_settings_text(const json_t *settings, const char *sep, char *buf, size_t len);

/* 128 bits of a hash of text, as 32 hex digits into out[33]. */
void psb_sweep_hash(const char *text, char out[33]);

/* A job's state, from what its directory holds and what its launcher says. */
enum psb_sweep_state {
	PSB_SWEEP_NOT_LAUNCHED,	/* no directory */
	PSB_SWEEP_RUNNING,	/* launched and, by its launcher, not ended (queued too) */
	PSB_SWEEP_FAILED,	/* ended with a failure it recorded, or its launcher saw */
	PSB_SWEEP_INCOMPLETE,	/* a directory, not running, neither done nor failed */
	PSB_SWEEP_DONE,		/* its done file */
	PSB_SWEEP_STATE_MAX
};
extern const char *const psb_sweep_state_names[];

/* What the caller found of a job. alive: 1 the launcher says it runs, 0 it does not, -1
 * it cannot say (then a job with no end recorded is taken as running, never as crashed). */
struct psb_sweep_look {
	bool dir;
	bool done;
	bool ended;		/* an exit status is recorded */
	int exit_status;
	bool launched;		/* a launcher record is there */
	int alive;
};
enum psb_sweep_state psb_sweep_state_of(const struct psb_sweep_look *l);

/* Mean, sample standard deviation and standard error of n values (n >= 1; 0 below 2). */
void psb_sweep_stats(const double *v, size_t n, double *mean, double *sd, double *se);

#endif /* PSB_SWEEP_H */
