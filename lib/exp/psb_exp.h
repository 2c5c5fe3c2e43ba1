/* Experiment documents: the JSON schema of a psb experiment, its checks, and its results. */
#ifndef PSB_EXP_H
#define PSB_EXP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <jansson.h>

#include "psb_conf.h"

/* What an experiment does; each kind has a section of the same name. */
enum psb_exp_kind {
	PSB_EXP_PUSHPULL,	/* worker: ps-lite's test_benchmark against the servers */
	PSB_EXP_SERVE,		/* server: serve the store, measure what it did */
	PSB_EXP_STALENESS,	/* trainer: publish versions, measure how far behind workers run */
	PSB_EXP_KIND_MAX
};

/* Same order as the appliance's node roles. */
enum psb_exp_role {
	PSB_EXP_ROLE_SERVER,
	PSB_EXP_ROLE_WORKER,
	PSB_EXP_ROLE_SCHEDULER,
	PSB_EXP_ROLE_TRAINER,	/* kind staleness: the trainer role */
};

enum psb_exp_huge {
	PSB_EXP_HUGE_AUTO,
	PSB_EXP_HUGE_YES,
	PSB_EXP_HUGE_NO,
};

/* The appliance itself: fixed for the life of the process. */
struct psb_exp_node {
	int role;			/* enum psb_exp_role */
	struct psb_conf_strlist ports;
	uint32_t ip;
	char mac[24];
	uint64_t udp_port;
	uint32_t scheduler;		/* 0.0.0.0: none */
	uint64_t scheduler_port;
	uint32_t server;		/* worker without scheduler: its server */
	uint64_t num_workers;
	uint64_t num_servers;
	uint64_t rank;
	uint64_t workers;		/* worker roles in this process */
	uint64_t shards;
	bool sync;
	int sync_value;			/* 0: total, 1: round (psb_kv_cfg.sync_round) */
	uint64_t mtu;			/* 0: the port's own (af_packet, tap), else 9000 */
	uint64_t max_value;
	char lcores[64];
	uint64_t mem_mb;		/* 0: what the pools need */
	uint64_t mbufs;			/* 0: from rings and ports */
	int huge;			/* enum psb_exp_huge */
	uint64_t yield;			/* ns between sched_yield() of a polling lcore, 0 never */
	int idle;			/* enum psb_idle_mode: auto, poll, sleep */
	uint64_t idle_sleep;		/* ns an idle lcore sleeps at most (back-off cap) */
	uint64_t connect_timeout;	/* ns each setup wait may take (ARP, REGISTER...), 0: forever */
	uint64_t heartbeat;		/* ns between a node's HEARTBEATs to its scheduler, 0: none */
	uint64_t dead_after;		/* ns of silence after which the scheduler holds a node
					 * dead, 0: never */
	bool keep_serving;		/* scheduler, servers: stay once every worker finished */
	bool echo;			/* answer psb ECHO requests (the echo role) */
	/*
	 * Passthrough: frames that are not psb's go to this port toward the host's kernel, and
	 * what the kernel sends comes out of the first port; RoCE among them is counted per
	 * queue pair, roce_qps of them at most ("": none, such frames are dropped as before).
	 */
	char exception[256];
	uint64_t roce_qps;
	/*
	 * Server: memif slots (server role) for client-library processes on this host, on one
	 * socket named after the data address (docs/CLIENT.md, Shared memory); 0: none.
	 */
	uint64_t shm_clients;
	uint64_t exception_queue;	/* frames waiting for the host at most (a power of 2) */
	bool roce_accounting;		/* false: passed on uncounted (to measure its cost) */
	bool isolate;			/* rte_flow isolated mode: only psb's traffic to psb */
	char file_prefix[64];
	/* Control-plane limits: what clients and files may cost the process (CONTROL.md). */
	uint64_t ctl_requests_per_pass;	/* control requests (and new connections) per pass */
	uint64_t ctl_bytes_per_pass;	/* control input bytes read per pass */
	uint64_t ctl_share_pct;		/* share of a data-plane main lcore clients may take */
	uint64_t ctl_clients;		/* control clients at once */
	uint64_t ctl_reply_max;		/* unread reply bytes of a client before it is dropped */
	uint64_t ctl_idle_timeout;	/* ns without a request before a client goes, 0 never */
	uint64_t file_max;		/* bytes of a document or command file */
	uint64_t prometheus_connections;	/* HTTP connections at once */
	uint64_t prometheus_timeout;	/* ns an HTTP connection has per request */
	uint64_t prometheus_request_max;	/* bytes of an HTTP request (line and headers) */
};

/*
 * Budgets of a server's parameter store, fixed for the life of the process like the node
 * settings. 0: derived at start from node.mem_mb (or the machine's memory) and printed.
 */
struct psb_exp_store {
	uint64_t max_bytes;		/* values, sync sums, request state */
	uint64_t max_keys;
	uint64_t reasm_bytes;		/* pushes being reassembled, all senders */
	uint64_t reasm_sender_bytes;	/* the same, per sender */
	uint64_t reasm_timeout;		/* ns a reassembly may wait for its next segment */
	uint64_t resend_burst;		/* bytes a sender's resend bucket holds */
	uint64_t resend_rate;		/* bits/s it refills at */
};

/* Kind "pushpull": the worker benchmark. */
struct psb_exp_pushpull {
	uint64_t len;
	uint64_t repeat;
	int mode;			/* enum psb_bench_mode */
	uint64_t keys;
	uint64_t window;
	uint64_t batch;
	uint64_t duration;		/* ns, 0: until repeat iterations */
	uint64_t warmup;		/* iterations before the metrics are reset */
	uint64_t timeout;		/* ns */
	uint64_t max_retries;
	bool verify;
	uint64_t rate;			/* value bits/s, 0: as fast as it goes; live */
};

/*
 * Kind "staleness": the staleness benchmark's flags (psb_stale_opts) and how its trainer
 * and workers meet. The trainer is psb-stale's or an appliance's (node.role trainer: the
 * trainer role); workers are psb-stale processes (kernel sockets) or appliances (node.role
 * worker, worker id node.rank: the receiver role). The trainer's address is
 * staleness.trainer, or node.ip in the trainer's own document; its port staleness.port.
 */
enum psb_exp_stale_mode {
	PSB_EXP_STALE_MULTICAST,
	PSB_EXP_STALE_PULL,
	PSB_EXP_STALE_FILESYSTEM,
	PSB_EXP_STALE_EPGM,
};

struct psb_exp_staleness {
	int mode;			/* enum psb_exp_stale_mode, as psb_stale_mode_names */
	uint64_t push_frequency;	/* ns */
	double data_size;		/* MB (10^6 bytes), as --data_size */
	uint64_t pull_frequency;	/* ns */
	uint64_t post_frequency;	/* ns */
	uint64_t step_frequency;	/* ns */
	uint64_t max_version;
	uint64_t max_time;		/* ns */
	uint64_t workers;
	uint64_t workers_per_node;
	uint64_t port;			/* the trainer's, where workers post */
	uint32_t trainer;		/* the trainer's address (0: node.ip, the trainer's) */
	uint32_t group;			/* multicast, epgm */
	uint64_t group_port;
	char dir[256];			/* filesystem: versions' directory, in the results root */
	uint64_t rate;			/* bits/s of the sender (multicast, pull, epgm) */
	uint64_t parity;
	uint64_t repair_share;		/* % of rate repairs may take */
	uint64_t receiver_share;	/* % of that one receiver may draw */
	uint64_t nack_receivers;	/* receivers the sender keeps a budget for */
	uint64_t key;
	uint64_t budget;		/* the trainer's bytes of versions */
	uint64_t join_timeout;		/* ns */
	uint64_t end_timeout;		/* ns */
	uint64_t epgm_window;		/* ns */
	bool verify;			/* workers check every byte of every version */
};

/* Kind "serve": a measured window of the server. */
struct psb_exp_serve {
	uint64_t duration;		/* ns, 0: until stopped */
};

/* A counters file rotates at 0 (never) or at least this many bytes (--counters-max too). */
#define PSB_EXP_COUNTERS_MAX_MIN	(64u << 10)

struct psb_exp_output {
	char dir[256];			/* results go to dir/<name>/ */
	bool overwrite;			/* replace an existing dir/<name> */
	uint64_t log_every;		/* progress line period, ns; live */
	char counters_file[256];	/* JSON lines of every counter, "" none; in dir */
	uint64_t counters_every;	/* its period, ns */
	uint64_t counters_max;		/* moved to .1 at this size (0: never) */
};

struct psb_exp_conf {
	char name[64];
	int kind;			/* enum psb_exp_kind */
	char description[1024];
	struct psb_exp_node node;
	struct psb_exp_store store;
	struct psb_exp_pushpull pushpull;
	struct psb_exp_serve serve;
	struct psb_exp_staleness staleness;
	struct psb_exp_output output;
};

extern const struct psb_conf_field psb_exp_table[];
extern const struct psb_conf_field psb_exp_node_table[];
extern const char *const psb_exp_kind_names[];
extern const char *const psb_exp_role_names[];
extern const char *const psb_exp_stale_mode_names[];

/* Which parameters "set" may change while an experiment runs (dotted paths). */
bool psb_exp_settable(const char *path);

/*
 * Parse a document into *c (defaults for what it leaves out) and check it as a whole:
 * the section of another kind, a name that cannot be a directory, lengths that are not
 * float arrays, a role that cannot run the kind. With need_node, node.ports and node.ip
 * must be given (a document psb starts from); otherwise the node section may be left out
 * (a document started on a running appliance). Errors name the JSON path.
 * 0 or -EINVAL / -ENOMEM; *c is unchanged on failure.
 */
int psb_exp_load(struct psb_exp_conf *c, const json_t *doc, bool need_node, char *err,
		size_t errlen);
/* The same from a file, read as psb_exp_read_json does. */
int psb_exp_load_file(struct psb_exp_conf *c, const char *path, uint64_t max, bool need_node,
		char *err, size_t errlen);

/* Default of node.file_max and --file-max: the largest file psb reads. */
#define PSB_EXP_FILE_MAX	(1024 * 1024)

/*
 * Files users name (documents, command files) are read only when they are regular files of
 * at most max bytes: a FIFO or a device would block the reader or never end, a directory is
 * a mistake. The path is checked before it is opened (opening some devices does something)
 * and again on the open descriptor, which is O_NONBLOCK | O_CLOEXEC. Symbolic links are
 * followed: what they lead to is what must be a regular file.
 * psb_exp_open_file returns the descriptor; psb_exp_read_file the whole file, NUL-terminated,
 * in *buf (malloc'd), never more than max bytes even if it grows meanwhile; psb_exp_read_json
 * the JSON document in it (duplicate keys rejected). On failure: -errno (or NULL and *rc)
 * with "PATH: what is wrong" in err: -EPERM not a regular file ("is a FIFO, not a regular
 * file"), -EFBIG over max, -EINVAL not JSON ("PATH:LINE:COLUMN: ..."), or the error of
 * opening it.
 */
int psb_exp_open_file(const char *path, uint64_t max, char *err, size_t errlen);
int psb_exp_read_file(const char *path, uint64_t max, char **buf, size_t *len, char *err,
		size_t errlen);
json_t *psb_exp_read_json(const char *path, uint64_t max, int *rc, char *err, size_t errlen);

/* The document with every default filled in, without the sections of other kinds: what
 * psb_exp_load reads back to the same struct. NULL on no memory. */
json_t *psb_exp_dump(const struct psb_exp_conf *c);

/* Checks of psb_exp_load on a filled struct (after command-line overrides, say). */
int psb_exp_check(const struct psb_exp_conf *c, bool need_node, char *err, size_t errlen);

/*
 * The first setting fixed at start (node, store) in which a and b differ ("node.ports"),
 * for refusing a document that wants another appliance than the running one; NULL when
 * they agree. Sections doc leaves out are not compared. Uses buf.
 */
const char *psb_exp_fixed_diff(const struct psb_exp_conf *a, const struct psb_exp_conf *b,
		const json_t *doc, char *buf, size_t len);

/* The sections fixed at start, as the JSON paths of "set" start with ("node.", "store."). */
bool psb_exp_fixed_path(const char *path);

/*
 * Results directories. Every path of a document is relative to root, the results
 * directory the operator gave psb (--output-dir; NULL or "": the working directory), and
 * psb_exp_check keeps it inside: no absolute paths, no "..".
 *
 * psb_exp_output_path gives root/output.dir/leaf (root/output.dir when leaf is NULL);
 * psb_exp_results_path gives root/output.dir/name. psb_exp_output_dir creates
 * root/output.dir and checks that it really is inside root (no symbolic link leads out).
 * psb_exp_results_claim fails with -EEXIST (and a message) when the results directory
 * exists and overwrite is off, or holds files psb did not write (it replaces only its
 * own), so an experiment is refused before it runs rather than after.
 */
int psb_exp_output_path(const char *root, const struct psb_exp_conf *c, const char *leaf,
		char *out, size_t len);
int psb_exp_results_path(const char *root, const struct psb_exp_conf *c, char *out, size_t len);
int psb_exp_output_dir(const char *root, const struct psb_exp_conf *c, char *err, size_t errlen);
int psb_exp_results_claim(const char *root, const struct psb_exp_conf *c, char *err,
		size_t errlen);

/*
 * Write result.json (doc as is), result.csv and result.txt (rows as a table) into a new
 * directory and move it to root/dir/name in one rename: readers see all three files or
 * none. An existing root/dir/name is replaced only with overwrite (and only when it holds
 * psb's result files alone); otherwise the results go to root/dir/name.N (first free N)
 * and *where says so. rows: array of flat objects, one per table row; cols: the keys to
 * show, in order. 0 or -errno with a message in err.
 */
int psb_exp_results_write(const char *root, const struct psb_exp_conf *c, const json_t *doc,
		const json_t *rows, const char *const *cols, char *where, size_t wherelen, char *err,
		size_t errlen);
/*
 * The same, with more files: extra(dir, arg) writes them into the new directory before it
 * is moved into place (0, or -errno: nothing is moved). Only the names of
 * PSB_EXP_EXTRA_FILES are psb's own (a directory holding others is never replaced).
 */
#define PSB_EXP_EXTRA_FILES	"staleness.csv", "staleness.svg"
typedef int (*psb_exp_extra_fn)(const char *dir, void *arg);
int psb_exp_results_write_with(const char *root, const struct psb_exp_conf *c,
		const json_t *doc, const json_t *rows, const char *const *cols,
		psb_exp_extra_fn extra, void *arg, char *where, size_t wherelen, char *err,
		size_t errlen);

/* A results directory psb_exp_prune looked at. */
struct psb_exp_pruned {
	const char *name;		/* its name in the directory pruned */
	time_t mtime;			/* when its results were written */
	uint64_t bytes;			/* what its files take */
	bool removed;			/* removed (dry run: would be) */
	const char *foreign;		/* kept: a file in it psb did not write, else NULL */
	const char *why;		/* kept, psb's results alone: "one of the newest",
					 * "younger" or "could not be removed" */
};

/*
 * Remove old results from dir (an output.dir): of its subdirectories holding nothing but
 * psb's result files (result.json, .csv, .txt), those past the newest keep (keep < 0: no
 * such bound) and, when older_than_s is not 0, written more than older_than_s seconds
 * before now. Dot-named ones (results being written), symbolic links and directories with
 * anything else in them are never touched. With dry, nothing is removed: fn is told what
 * would be. fn (may be NULL) hears of every directory, newest first. How many were
 * removed, or -errno (-EINVAL: neither bound given).
 */
int psb_exp_prune(const char *dir, long keep, uint64_t older_than_s, time_t now, bool dry,
		void (*fn)(void *arg, const struct psb_exp_pruned *p), void *arg);

/* rows as an aligned text table / as CSV (header line first). */
void psb_exp_table_print(FILE *out, const json_t *rows, const char *const *cols);
void psb_exp_csv_print(FILE *out, const json_t *rows, const char *const *cols);

#endif /* PSB_EXP_H */
