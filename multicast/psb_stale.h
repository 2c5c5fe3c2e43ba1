/*
 * The staleness experiment: how far behind the trainer's newest parameters its workers
 * run. The trainer publishes a version of data_size bytes every push period; each worker
 * holds the newest version it received whole (by multicast, by pulling it, or from a
 * shared directory), samples the number of the version it holds every step period, and
 * posts the samples' sum every post period to the trainer by unicast. EAL-free: the
 * experiment's options (the flags of the staleness benchmark psb replaces), its small
 * control protocol, the trainer's accounting and the worker's sampling; the transports
 * are psb_mc_* (multicast, pull) and psb_stale_fs (filesystem).
 *
 * Staleness, two measures of each post. The old benchmark's, under its label "Average
 * Version difference": the trainer's newest version when the post comes less the mean
 * version the worker posted. That mean covers the whole post period, so it lags the newest
 * version by about half a post period's worth of versions even when every version arrives
 * at once (5 at the seed's 2 s posts and 0.2 s pushes). psb's own, the window staleness:
 * over the post's samples, the version the trainer had made newest at each sample's instant
 * less the one the worker held then; 0 means every worker held every version the moment it
 * was published, 1 one version behind throughout. Never below 0: the trainer records a
 * version's time before any worker can take it, a worker counts a version only in samples
 * after it took it, and the trainer places a post's samples, one step_ns apart, ending when
 * the post came, no earlier than the worker took them (it lacks their own instants: another
 * host's clock); a post that would say less is refused (ahead).
 *
 * Control protocol (UDP, unicast, all fields big-endian, every message PSB_STALE_LEN bytes):
 *
 *   0 u16 magic 0x5354 ("ST"; not psb's own "PS")   2 u8 wire version (1)   3 u8 type
 *   4 u32 session (the trainer's)       8 u32 worker id
 *  12 u32 held: POST, PULL the newest version the worker holds; ACK the trainer's newest
 *  16 u32 samples (POST)               20 u32 seq (POST, PULL: the worker's count)
 *  24 u64 sum of the versions sampled (POST); a joining POST: the experiment's key
 *  32 u64 window (POST: ns since the worker's previous post; ACK: flags)
 *  40 u64 0
 *
 *   POST  worker -> trainer: samples taken since the previous post (0: joining, with the
 *         key both were given: a worker id is taken by the first address that joins with
 *         it, and the key keeps other hosts from taking one)
 *   PULL  worker -> trainer: send me your newest version if it is newer than held
 *   ACK   trainer -> worker: a POST was taken; with PSB_STALE_ACK_END the experiment
 *         ended at version held, which every worker should hold before it stops
 */
#ifndef PSB_STALE_H
#define PSB_STALE_H

#include <stddef.h>
#include <stdint.h>

#define PSB_STALE_MAGIC		0x5354
#define PSB_STALE_WIRE		1
#define PSB_STALE_LEN		48
#define PSB_STALE_SAMPLES_MAX	1000000		/* samples in one POST */
#define PSB_STALE_WORKERS_MAX	4096
#define PSB_STALE_ACK_END	1
#define PSB_STALE_ACK_WAITING	2		/* not every worker joined yet */

enum psb_stale_type {
	PSB_STALE_POST = 1,
	PSB_STALE_PULL = 2,
	PSB_STALE_ACK = 3,
};

enum psb_stale_bad {
	PSB_STALE_BAD_SHORT = 1,	/* not PSB_STALE_LEN bytes */
	PSB_STALE_BAD_MAGIC,
	PSB_STALE_BAD_TYPE,
	PSB_STALE_BAD_FIELD,		/* samples, sums or windows that cannot be */
	PSB_STALE_BAD_MAX,
};

struct psb_stale_msg {
	uint8_t type;
	uint32_t session;
	uint32_t worker;
	uint32_t held;
	uint32_t samples;
	uint32_t seq;
	uint64_t sum;
	uint64_t window;		/* POST: ns; ACK: flags */
};

/*
 * Its type, or -enum psb_stale_bad. A POST's sum cannot exceed samples times held (a
 * worker's versions only grow), its window is 1 ns to an hour, its samples at most
 * PSB_STALE_SAMPLES_MAX; a joining POST (no samples) sums nothing.
 */
int psb_stale_parse(const uint8_t *buf, size_t len, struct psb_stale_msg *m);
void psb_stale_write(uint8_t *out, const struct psb_stale_msg *m);
const char *psb_stale_bad_name(int bad);

/* A line for the log at level (psb_cli_log_level numbering: 4 error ... 8 debug). */
typedef void (*psb_stale_log_fn)(void *arg, int level, const char *line);
/* The formatted line to log (NULL: none wanted), cut at 400 bytes. */
void psb_stale_logf(psb_stale_log_fn log, void *arg, int level, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Modes: how workers get the trainer's versions. */
enum psb_stale_mode {
	PSB_STALE_MULTICAST,		/* psb's reliable multicast */
	PSB_STALE_PULL_MODE,		/* each worker pulls the newest version by unicast */
	PSB_STALE_FILESYSTEM,		/* versioned files and a "latest" link in a directory */
	PSB_STALE_EPGM,			/* ZeroMQ PUB/SUB over epgm: the old benchmark's
					 * multicast transport, as the baseline */
	PSB_STALE_MODE_MAX,
};

extern const char *const psb_stale_mode_names[];

/* The experiment's settings: the staleness benchmark's flags, in ns and bytes. */
struct psb_stale_opts {
	int mode;
	uint64_t push_ns;		/* --push_frequency */
	uint64_t data_size;		/* --data_size (MB: 10^6 bytes, or with a unit) */
	uint64_t pull_ns;		/* --pull_frequency (pull and filesystem modes) */
	uint64_t post_ns;		/* --post_frequency */
	uint64_t step_ns;		/* --step_frequency */
	uint32_t max_version;		/* --max_version */
	uint64_t max_time_ns;		/* --max_time */
	uint32_t workers;		/* --workers */
	uint32_t workers_per_node;	/* --workers-per-node, --nworkers-per-node (0: 1) */
	char trial_name[64];		/* --trial_name */
	int loglevel;			/* --LOGLEVEL, psb_cli_log_level numbering */
};

/* The seed's example: 10 MB every 0.2 s, 4 workers, 500 versions or 60 s. */
void psb_stale_opts_default(struct psb_stale_opts *o);

/*
 * One flag by its name without the dashes, '_' and '-' alike ("push_frequency",
 * "nworkers-per-node", "LOGLEVEL"): 1 when it was one of the experiment's flags and v
 * was taken, 0 when name is not one of them, -EINVAL with what is wrong in err (naming
 * the flag).
 */
int psb_stale_opt(struct psb_stale_opts *o, const char *name, const char *v, char *err,
		size_t errlen);
/* The experiment's flags, for usage texts: one line each. */
extern const char psb_stale_opts_usage[];

/* Checks the settings as a whole (a step no longer than a post, ...). 0 or -EINVAL, err. */
int psb_stale_opts_check(const struct psb_stale_opts *o, char *err, size_t errlen);

/*
 * Version bytes: word i of version vid is a mix of both, so that a worker can check every
 * byte it holds (psb_stale_verify: the offset of the first wrong byte, or -1).
 */
void psb_stale_fill(uint8_t *buf, uint64_t len, uint32_t vid);
/* Bytes off .. off + n - 1 of version vid, at buf + off (buf: the version's start). */
void psb_stale_fill_at(uint8_t *buf, uint64_t off, uint64_t n, uint32_t vid);
int64_t psb_stale_verify(const uint8_t *buf, uint64_t len, uint32_t vid);

/*
 * The trainer's accounting. It records when it published which version, takes posts
 * (checked: a known worker, from the address it joined from, in order, no version newer
 * than published) and turns each into its two figures.
 */
struct psb_stale_acct;

enum psb_stale_refusal {
	PSB_STALE_REF_SESSION,		/* another session */
	PSB_STALE_REF_WORKER,		/* worker id out of range */
	PSB_STALE_REF_ADDRESS,		/* from another address than the worker joined from */
	PSB_STALE_REF_REPLAY,		/* seq not newer than the worker's last post */
	PSB_STALE_REF_FUTURE,		/* holds a version not published yet */
	PSB_STALE_REF_WINDOW,		/* a window longer than the record kept */
	PSB_STALE_REF_KEY,		/* a join without the experiment's key */
	PSB_STALE_REF_RATE,		/* posts faster than 2 a post period (4 at once) */
	PSB_STALE_REF_STEP,		/* more samples than its window holds at step_ns */
	PSB_STALE_REF_AHEAD,		/* versions before the record says they were made */
	PSB_STALE_REF_MAX,
};
extern const char *const psb_stale_refusal_names[];

struct psb_stale_worker_state {
	uint32_t ip;			/* 0: not joined */
	uint16_t port;
	uint32_t seq;
	uint64_t last_sum;		/* of the post seq: a copy of it is a duplicate */
	uint32_t last_samples;
	uint32_t held;
	uint64_t posts;
	uint64_t samples;
	double diff_sum;		/* of its posts' version differences */
	double window_sum;		/* of its posts' window staleness */
	double window_max;
	uint64_t last_ns;		/* its last post */
	uint64_t spent_ns;		/* its post budget is spent up to this time */
};

/* What one post said, figured. */
struct psb_stale_point {
	uint32_t worker;
	uint64_t t_ns;			/* when it came, the trainer's clock */
	uint32_t held;
	uint32_t current;		/* the trainer's newest version then */
	double mean;			/* the worker's mean version over its samples */
	double trainer_mean;		/* the trainer's at the samples' instants */
	double version_diff;		/* current - mean: the old benchmark's measure */
	double window;			/* trainer_mean - mean: the window staleness, >= 0 */
};

struct psb_stale_totals {
	uint64_t posts;			/* with samples */
	uint64_t joins;
	uint64_t duplicates;		/* a post sent again (its ACK was lost): not counted */
	double diff_sum;		/* of the posts' version differences */
	double window_sum, window_max;	/* of their window staleness */
	uint64_t refused[PSB_STALE_REF_MAX];
	uint64_t bad[PSB_STALE_BAD_MAX];
};

/*
 * For workers workers joining with key, sampling every step_ns and posting every post_ns,
 * posts whose windows reach at most max_window_ns back, versions published every push_ns
 * at most. A post is a line of results: a worker may post 2 a post period on average, 4 at
 * once. 0, or -EINVAL / -ENOMEM.
 */
int psb_stale_acct_create(uint32_t session, uint32_t workers, uint64_t key, uint64_t step_ns,
		uint64_t post_ns, uint64_t max_window_ns, uint64_t push_ns,
		struct psb_stale_acct **out);
void psb_stale_acct_free(struct psb_stale_acct *a);
/*
 * Version vid is the newest from now on: now_ns must be no later than the first moment a
 * worker can take it (read before it is handed to the workers' transport).
 */
void psb_stale_acct_publish(struct psb_stale_acct *a, uint32_t vid, uint64_t now_ns);
uint32_t psb_stale_acct_current(const struct psb_stale_acct *a);
/*
 * The sum of the versions newest at n instants step_ns apart, the last at end_ns: 0 with
 * *sum, or -ERANGE when the first reaches back before the record kept.
 */
int psb_stale_acct_sampled(const struct psb_stale_acct *a, uint64_t end_ns, uint64_t step_ns,
		uint32_t n, uint64_t *sum);

/*
 * A POST from ip:port, parsed: 1 with *pt filled when it carried samples, 0 when it was a
 * worker joining (or joining again from the same address) or a copy of the worker's last
 * post, -1 when refused (counted by reason in the totals).
 */
int psb_stale_acct_post(struct psb_stale_acct *a, const struct psb_stale_msg *m, uint32_t ip,
		uint16_t port, uint64_t now_ns, struct psb_stale_point *pt);
/* A message psb_stale_parse refused: counted. */
void psb_stale_acct_bad(struct psb_stale_acct *a, int bad);
/* Checks that a PULL comes from the address worker m->worker joined from: 0 or -1. */
int psb_stale_acct_known(struct psb_stale_acct *a, const struct psb_stale_msg *m, uint32_t ip,
		uint16_t port);

const struct psb_stale_worker_state *psb_stale_acct_worker(const struct psb_stale_acct *a,
		uint32_t worker);
const struct psb_stale_totals *psb_stale_acct_totals(const struct psb_stale_acct *a);
/* Workers that joined. */
uint32_t psb_stale_acct_joined(const struct psb_stale_acct *a);

/*
 * The worker's sampling: every step_ns the version it holds, every post_ns (rounded up to
 * whole steps, so that a post falls on a sample) a POST of what was sampled since the
 * previous one. A sample counts the version held at its instant, however late it is taken:
 * before a worker holds a newer version it takes the samples due by then (sampler_take).
 */
struct psb_stale_sampler {
	uint64_t step_ns, post_ns;
	uint64_t next_step, next_post, window_start;
	uint64_t samples, sum;
	uint32_t seq;
	uint64_t lost_steps;		/* steps too late to be taken (the worker was busy) */
};

void psb_stale_sampler_init(struct psb_stale_sampler *s, uint64_t step_ns, uint64_t post_ns,
		uint64_t now_ns);
/* Take the samples due by now: held is the version held since the last samples taken. */
void psb_stale_sampler_take(struct psb_stale_sampler *s, uint32_t held, uint64_t now_ns);
/*
 * Take the samples due by now (held: the version held since the last ones) and, when a post
 * is due, fill *m (type, samples, seq, sum, window, held) and return 1; else 0.
 */
int psb_stale_sampler_tick(struct psb_stale_sampler *s, uint32_t held, uint64_t now_ns,
		struct psb_stale_msg *m);
/* A post of what was sampled so far, now (the last one, when the experiment ends). */
void psb_stale_sampler_flush(struct psb_stale_sampler *s, uint32_t held, uint64_t now_ns,
		struct psb_stale_msg *m);
uint64_t psb_stale_sampler_next_ns(const struct psb_stale_sampler *s);

#endif /* PSB_STALE_H */
