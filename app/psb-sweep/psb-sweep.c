/* psb-sweep: sweeps of psb experiments, one job per setting and trial, locally or on Slurm. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <jansson.h>

#include "psb_cli.h"
#include "psb_exp.h"
#include "psb_sweep.h"

#define SOCKDIR		"/var/run/psb-sweep"
#define STATE_MAX	(64 * 1024)	/* bytes of a job's own small files */
#define SERVER_END_S	15		/* a trial's server has this long to end */
#define SHOW_MAX	200		/* jobs listed one by one, at most */

/* a path into buf, or the program ends naming it: a cut path would name another file */
#define PATHF(buf, ...)								\
	do {									\
		if ((size_t)snprintf(buf, sizeof(buf), __VA_ARGS__) >= sizeof(buf))	\
			psb_die("path too long: %.200s...", buf);		\
	} while (0)

enum launcher { L_LOCAL, L_SLURM, L_DRY_RUN };
static const char *const launcher_names[] = { "local", "slurm", "dry_run" };

static struct {
	const char *sweep;
	const char *out;
	long n_trials, n_hparams;
	long long seed;
	int launcher;
	bool skip_confirmation;
	unsigned int parallel;		/* local: jobs at once */
	unsigned int max_concurrent;	/* slurm: array tasks at once */
	unsigned long max_array;	/* slurm: tasks per array at most (0: the cluster's) */
	const char *partition;
	size_t max_jobs;
	const char *figure;
	const char *psb;
	bool wait;
	double wait_s;			/* slurm --wait: at most this long */
} opt = {
	.n_trials = -1, .n_hparams = -1, .seed = -1, .parallel = 1, .max_concurrent = 4,
	.max_jobs = PSB_SWEEP_MAX_JOBS,
};

static volatile sig_atomic_t g_stop;

static void
on_signal(int sig)
{
	g_stop = sig;
}

/* INT, TERM and HUP set g_stop; no SA_RESTART, so a wait returns to look at it */
static void
catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double
mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
usage(FILE *out)
{
	fprintf(out,
"Usage: psb-sweep COMMAND --sweep FILE --output_dir DIR [options]\n"
"Runs a sweep of psb experiments: the settings of a sweep file (a grid of values per\n"
"document key and seeded random settings) times N trials, one job each, in a directory\n"
"named by the hash of its settings under DIR. Each trial starts a fresh psb server and\n"
"its workers over memif, ends the server after them and marks the job done.\n"
"Commands:\n"
"  launch             list the jobs and their states, ask, launch those not launched\n"
"  list               the jobs and their states: not launched, running, failed,\n"
"                     incomplete (ended without a result), done\n"
"  resume             launch the failed, incomplete and not launched jobs again\n"
"  delete_incomplete  remove the directories of failed and incomplete jobs (never a\n"
"                     running one)\n"
"  results            per setting over its trials: mean, standard deviation and\n"
"                     standard error of each figure, the best setting; written to DIR as\n"
"                     results.md, results.csv, results.json and results.svg\n"
"  run_job JOBDIR     run one job (what the launchers run)\n"
"Options:\n"
"  --sweep FILE            the sweep (config/sweep-example.json is one)\n"
"  --output_dir DIR        where the jobs' directories go\n"
"  --n_trials N            trials of each setting (default: the sweep's trials, 1)\n"
"  --n_hparams N           settings per grid point: the defaults, then N-1 random\n"
"                          draws (default: the sweep's hparams, 1)\n"
"  --seed S                seed of the random draws (default: the sweep's, 0)\n"
"  --command_launcher L    local (default), slurm or dry_run (prints the commands)\n"
"  --skip_confirmation     do not ask before launching or deleting\n"
"  --parallel N            local: jobs at once (default 1)\n"
"  --max_concurrent M      slurm: array tasks running at once, sbatch --array=0-N%%M\n"
"                          (default 4)\n"
"  --max_array_size N      slurm: split arrays above N tasks (default: the cluster's\n"
"                          MaxArraySize)\n"
"  --partition P           slurm: the partition\n"
"  --wait                  slurm: wait until the launched jobs end (at most as long as\n"
"                          they take one after another at their timeout, plus 10 min)\n"
"  --max_jobs N            refuse sweeps of more jobs (default %d)\n"
"  --figure NAME           results: choose the best setting by this figure\n"
"  --psb PATH              the psb program (default: beside psb-sweep, or $PSB)\n"
"  --help, --version\n"
"A trial's workers have the sweep's timeout (default 120 s); then they are ended, the job\n"
"fails and says which did not finish. Exit status: 0, 1 a job or command failed, 2 bad\n"
"usage or a sweep refused.\n", PSB_SWEEP_MAX_JOBS);
}

/* ---- small files ---- */

static int
mkdir_p(const char *path)
{
	char buf[PATH_MAX], *p;

	if ((size_t)snprintf(buf, sizeof(buf), "%s", path) >= sizeof(buf))
		return -ENAMETOOLONG;
	for (p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* text written whole or not at all */
static int
write_atomic(const char *path, const char *text)
{
	char tmp[PATH_MAX + 32];
	FILE *f;
	int rc = 0;

	PATHF(tmp, "%s.tmp.%d", path, (int)getpid());
	f = fopen(tmp, "w");
	if (f == NULL)
		return -errno;
	if (fputs(text, f) < 0)
		rc = -EIO;
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc != 0)
		unlink(tmp);
	return rc;
}

static void
save_json(json_t *o, const char *dir, const char *leaf)
{
	char path[PATH_MAX];

	PATHF(path, "%s/%s", dir, leaf);
	psb_cli_write_json(o, path);
}

/* an experiment document as psb reads it: no stamp of its own (a key psb does not know) */
static void
save_doc(json_t *o, const char *dir, const char *leaf)
{
	char path[PATH_MAX], *text = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);

	PATHF(path, "%s/%s", dir, leaf);
	if (text == NULL || write_atomic(path, text) != 0)
		psb_die("cannot write %s: %s", path, text == NULL ? "out of memory" :
			strerror(errno));
	free(text);
	json_decref(o);
}

/* a small JSON file of a job's, or NULL when absent or not JSON */
static json_t *
read_json(const char *dir, const char *leaf)
{
	char path[PATH_MAX], err[256];
	int rc;

	PATHF(path, "%s/%s", dir, leaf);
	if (access(path, F_OK) != 0)
		return NULL;
	return psb_exp_read_json(path, STATE_MAX, &rc, err, sizeof(err));
}

static bool
exists(const char *dir, const char *leaf)
{
	char path[PATH_MAX];

	PATHF(path, "%s/%s", dir, leaf);
	return access(path, F_OK) == 0;
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) != 0 ? -1 : 0;
}

/* remove a directory tree of psb-sweep's, never following a symbolic link out of it */
static int
rm_tree(const char *dir)
{
	if (access(dir, F_OK) != 0)
		return 0;
	return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0 ? -errno : 0;
}

/* ---- the sweep and its directory ---- */

struct ctx {
	struct psb_sweep s;
	struct psb_sweep_job *jobs;
	size_t njobs;
	enum psb_sweep_state *state;
	char out[PATH_MAX];
};

static void
job_dir(const struct ctx *c, const struct psb_sweep_job *j, char *buf, size_t len)
{
	if ((size_t)snprintf(buf, len, "%s/%s", c->out, j->id) >= len)
		psb_die("path too long: %.200s...", buf);
}

/* the output dir's record: flags not given take its values; other settings are refused */
static void
sweep_open(struct ctx *c, bool create)
{
	json_t *rec, *doc;
	char path[PATH_MAX], err[1024], buf[256];
	const char *diff;
	int rc;

	if (opt.sweep == NULL || opt.out == NULL)
		psb_cli_usage_error("%s is required", opt.sweep == NULL ? "--sweep" : "--output_dir");
	/* a Slurm script names it between single quotes */
	if (strpbrk(opt.out, "'\n") != NULL)
		psb_cli_usage_error("--output_dir: a path with a quote or a newline");
	/* room below it for a job's own paths */
	if (strlen(opt.out) > PATH_MAX - 256)
		psb_cli_usage_error("--output_dir: longer than %d bytes", PATH_MAX - 256);
	if (realpath(opt.out, c->out) == NULL)
		snprintf(c->out, sizeof(c->out), "%s", opt.out);
	PATHF(path, "%s/sweep.json", c->out);
	rec = access(path, F_OK) == 0 ?
		psb_exp_read_json(path, PSB_SWEEP_FILE_MAX, &rc, err, sizeof(err)) : NULL;
	if (access(path, F_OK) == 0 && json_object_get(rec, "record") == NULL)
		psb_die("%s: not a sweep directory's record (%s)", path, rec == NULL ? err :
			"no \"record\"");
	doc = json_object_get(rec, "record");
	if (doc != NULL) {
		if (opt.n_trials < 0)
			opt.n_trials = (long)json_integer_value(json_object_get(doc, "n_trials"));
		if (opt.n_hparams < 0)
			opt.n_hparams = (long)json_integer_value(json_object_get(doc, "n_hparams"));
		if (opt.seed < 0)
			opt.seed = json_integer_value(json_object_get(doc, "seed"));
	}
	if (psb_sweep_load(&c->s, opt.sweep, opt.n_trials, opt.n_hparams, opt.seed, err,
			   sizeof(err)) != 0)
		psb_die("%s", err);
	if (doc != NULL) {
		diff = psb_sweep_record_diff(doc, c->s.record, buf, sizeof(buf));
		if (diff != NULL)
			psb_die("%s was made by a sweep with other settings: they differ at %s%s "
				"(use another --output_dir, or the sweep and flags it was made "
				"with)", c->out, diff[0] != '\0' ? diff : "the top",
				strncmp(diff, "n_", 2) == 0 || strcmp(diff, "seed") == 0 ?
				" (a flag)" : "");
	}
	if (psb_sweep_expand(&c->s, opt.max_jobs, &c->jobs, &c->njobs, err, sizeof(err)) != 0)
		psb_die("%s: %s", opt.sweep, err);
	c->state = calloc(c->njobs, sizeof(*c->state));
	if (c->state == NULL)
		psb_die("out of memory");
	if (create && doc == NULL) {
		if (mkdir_p(c->out) != 0)
			psb_die("cannot make %s: %s", c->out, strerror(errno));
		save_json(json_pack("{s:O,s:s}", "record", c->s.record, "sweep_file", opt.sweep),
			  c->out, "sweep.json");
	}
	json_decref(rec);
}

/* ---- states ---- */

/* field 22 of /proc/PID/stat: when the process started, which a reused pid does not share */
static unsigned long long
proc_starttime(pid_t pid)
{
	char path[64], buf[1024];
	const char *p;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (p == NULL || (p = strrchr(buf, ')')) == NULL)
		return 0;
	/* a zombie has ended: no one may have reaped it yet (an orphan's new parent) */
	if (p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'))
		return 0;
	for (i = 0; i < 20 && p != NULL; i++)	/* the 20th field after the name */
		p = strchr(p + 1, ' ');
	return p != NULL ? strtoull(p + 1, NULL, 10) : 0;
}

/* a local job's process, by pid and start time (a reused pid is another process) */
static int
local_alive(const json_t *l)
{
	unsigned long long start;
	char host[256];

	gethostname(host, sizeof(host));
	if (strcmp(json_string_value(json_object_get(l, "host")) ?: "", host) != 0)
		return -1;
	start = proc_starttime((pid_t)json_integer_value(json_object_get(l, "pid")));
	return start != 0 &&
	       start == (unsigned long long)json_integer_value(json_object_get(l, "starttime"));
}

/* Slurm's word on the jobs of the records: "ID_TASK STATE" lines of squeue and sacct. */
struct slurm_view {
	bool squeue_ok;
	json_t *queued;		/* id -> state (squeue: pending, running...) */
	json_t *acct;		/* id -> "STATE EXIT" (sacct), when it answers */
};

/* run argv, its standard output into *out (at most max bytes); exit status or -errno */
static int
run_capture(char *const argv[], char **out, size_t max)
{
	int fd[2], status;
	size_t len = 0, cap = 4096;
	ssize_t n;
	char *buf = malloc(cap + 1);
	pid_t pid;

	*out = NULL;
	if (buf == NULL || pipe(fd) != 0) {
		free(buf);
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		free(buf);
		close(fd[0]);
		close(fd[1]);
		return -errno;
	}
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);

		dup2(fd[1], 1);
		dup2(nul, 0);
		dup2(nul, 2);
		close(fd[0]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	while ((n = read(fd[0], buf + len, cap - len)) > 0) {
		len += (size_t)n;
		if (len == cap && cap < max) {
			char *nb = realloc(buf, cap * 2 + 1);

			if (nb == NULL)
				break;
			buf = nb;
			cap *= 2;
		} else if (len == cap) {
			break;
		}
	}
	close(fd[0]);
	buf[len] = '\0';
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	*out = buf;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void
slurm_look(struct slurm_view *v, json_t *arrays)
{
	char ids[8192] = "", *out, *line, *save, id[128], st[64], ex[32];
	const char *key;
	json_t *val;
	size_t off = 0;
	int rc;

	v->queued = json_object();
	v->acct = NULL;
	v->squeue_ok = false;
	json_object_foreach(arrays, key, val)
		if (off < sizeof(ids) - 1)
			off += (size_t)snprintf(ids + off, sizeof(ids) - off, "%s%s", off ? "," : "",
						key);
	if (off == 0)
		return;
	{
		char *argv[] = { "squeue", "-h", "-r", "-o", "%i %T", "-j", ids, NULL };

		rc = run_capture(argv, &out, 4 << 20);
	}
	/* squeue fails for ids it no longer knows: then ask for all of ours */
	if (rc != 0) {
		char *argv[] = { "squeue", "-h", "-r", "-o", "%i %T", NULL };

		free(out);
		rc = run_capture(argv, &out, 4 << 20);
	}
	if (rc == 0) {
		v->squeue_ok = true;
		for (line = strtok_r(out, "\n", &save); line != NULL;
		     line = strtok_r(NULL, "\n", &save))
			if (sscanf(line, "%127s %63s", id, st) == 2)
				json_object_set_new(v->queued, id, json_string(st));
	}
	free(out);
	{
		char *argv[] = { "sacct", "-n", "-X", "-P", "-o", "JobID,State,ExitCode", "-j", ids,
				 NULL };

		rc = run_capture(argv, &out, 4 << 20);
	}
	if (rc == 0) {
		v->acct = json_object();
		for (line = strtok_r(out, "\n", &save); line != NULL;
		     line = strtok_r(NULL, "\n", &save))
			if (sscanf(line, "%127[^|]|%63[^|]|%31s", id, st, ex) == 3)
				json_object_set_new(v->acct, id, json_sprintf("%s %s", st, ex));
	}
	free(out);
}

/* What a job's directory says of it; its launcher record when that decides (no end yet). */
static json_t *
look_dir(const struct ctx *c, const struct psb_sweep_job *j, struct psb_sweep_look *l)
{
	char dir[PATH_MAX];
	json_t *status, *launch;

	memset(l, 0, sizeof(*l));
	job_dir(c, j, dir, sizeof(dir));
	l->dir = access(dir, F_OK) == 0;
	if (!l->dir)
		return NULL;
	l->done = exists(dir, "done");
	status = read_json(dir, "status.json");
	if (json_object_get(status, "exit_status") != NULL) {
		l->ended = true;
		l->exit_status = (int)json_integer_value(json_object_get(status, "exit_status"));
	}
	json_decref(status);
	if (l->done || l->ended)
		return NULL;
	launch = read_json(dir, "launcher.json");
	l->launched = launch != NULL;
	return launch;
}

/* The launcher's word on a job whose directory shows no end: alive, or how it ended. */
static void
look_launcher(const json_t *launch, const struct slurm_view *sv, struct psb_sweep_look *l)
{
	const char *kind = json_string_value(json_object_get(launch, "launcher")) ?: "";
	const char *id, *a;
	char st[64];
	int code = 0;

	l->alive = 0;
	if (strcmp(kind, "local") == 0) {
		l->alive = local_alive(launch);
	} else if (strcmp(kind, "slurm") == 0) {
		id = json_string_value(json_object_get(launch, "job_id")) ?: "";
		l->alive = !sv->squeue_ok ? -1 : json_object_get(sv->queued, id) != NULL;
		a = json_string_value(json_object_get(sv->acct, id));
		/* ended without a word of its own (cancelled, out of time): sacct says how */
		if (l->alive == 0 && a != NULL && sscanf(a, "%63s %d", st, &code) >= 1 &&
		    strcmp(st, "PENDING") != 0 && strcmp(st, "RUNNING") != 0) {
			l->ended = true;
			l->exit_status = strcmp(st, "COMPLETED") == 0 ? 0 : code != 0 ? code : 1;
		}
	}
}

/* Every job's state: its directory read once, Slurm asked once for all its array jobs. */
static void
states(struct ctx *c)
{
	struct slurm_view sv = { 0 };
	struct psb_sweep_look *looks = calloc(c->njobs, sizeof(*looks));
	json_t **rec = calloc(c->njobs, sizeof(*rec)), *arrays = json_object();
	const char *a;
	size_t i;

	if (looks == NULL || rec == NULL || arrays == NULL)
		psb_die("out of memory");
	for (i = 0; i < c->njobs; i++) {
		rec[i] = look_dir(c, &c->jobs[i], &looks[i]);
		a = json_string_value(json_object_get(rec[i], "array_job"));
		if (a != NULL)
			json_object_set_new(arrays, a, json_true());
	}
	if (json_object_size(arrays) != 0)
		slurm_look(&sv, arrays);
	for (i = 0; i < c->njobs; i++) {
		if (rec[i] != NULL)
			look_launcher(rec[i], &sv, &looks[i]);
		c->state[i] = psb_sweep_state_of(&looks[i]);
		json_decref(rec[i]);
	}
	free(looks);
	free(rec);
	json_decref(arrays);
	json_decref(sv.queued);
	json_decref(sv.acct);
}

static void
print_jobs(const struct ctx *c, const bool *which)
{
	unsigned int count[PSB_SWEEP_STATE_MAX] = { 0 };
	char st[512];
	size_t i, shown = 0;

	printf("%-5s %-12s %-12s %-5s %s\n", "job", "id", "state", "trial", "setting");
	for (i = 0; i < c->njobs; i++) {
		count[c->state[i]]++;
		if (which != NULL && !which[i])
			continue;
		if (shown++ == SHOW_MAX) {
			printf("... (more jobs, not listed)\n");
			continue;
		}
		if (shown > SHOW_MAX)
			continue;
		psb_sweep_settings_text(c->jobs[i].settings, " ", st, sizeof(st));
		printf("%-5zu %-12.12s %-12s %-5u %s\n", i, c->jobs[i].id,
		       psb_sweep_state_names[c->state[i]], c->jobs[i].trial, st);
	}
	printf("%zu jobs (%zu settings x %u trials):", c->njobs, c->njobs / c->s.n_trials,
	       c->s.n_trials);
	for (i = 0; i < PSB_SWEEP_STATE_MAX; i++)
		if (count[i] != 0)
			printf(" %u %s", count[i], psb_sweep_state_names[i]);
	printf("\n");
}

static bool
confirm(const char *what)
{
	char line[64];

	if (opt.skip_confirmation)
		return true;
	printf("%s? (y/n) ", what);
	fflush(stdout);
	if (fgets(line, sizeof(line), stdin) == NULL)
		return false;
	return line[0] == 'y' || line[0] == 'Y';
}

/* ---- the commands a job runs ---- */

static const char *
psb_path(void)
{
	static char path[PATH_MAX];
	char self[PATH_MAX];
	ssize_t n;

	if (opt.psb != NULL)
		return opt.psb;
	if (getenv("PSB") != NULL && getenv("PSB")[0] != '\0')
		return getenv("PSB");
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		*strrchr(self, '/') = '\0';
		PATHF(path, "%s/../psb/psb", self);	/* the build tree */
		if (access(path, X_OK) == 0 && realpath(path, self) != NULL) {
			snprintf(path, sizeof(path), "%s", self);
			return path;
		}
		PATHF(path, "%s/psb", self);		/* installed */
		if (access(path, X_OK) == 0)
			return path;
	}
	return "psb";
}

static const char *
self_path(void)
{
	static char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return "psb-sweep";
	self[n] = '\0';
	return self;
}

/* the job's directory made and filled: settings, documents, the command */
static void
job_prepare(const struct ctx *c, const struct psb_sweep_job *j)
{
	json_t *srv, *ws, *w;
	char dir[PATH_MAX], err[1024], leaf[64], cmd[4 * PATH_MAX];
	size_t i, off;

	job_dir(c, j, dir, sizeof(dir));
	if (psb_sweep_job_docs(&c->s, j, SOCKDIR, &srv, &ws, err, sizeof(err)) != 0)
		psb_die("job %s: %s", j->id, err);
	if (mkdir_p(dir) != 0)
		psb_die("cannot make %s: %s", dir, strerror(errno));
	save_json(json_pack("{s:s,s:O,s:I,s:I,s:s,s:I,s:I,s:f,s:O}", "sweep", c->s.name,
			    "settings", j->settings, "trial", (json_int_t)j->trial,
			    "seed", (json_int_t)j->trial_seed, "setting", j->setting,
			    "workers", (json_int_t)j->workers, "index", (json_int_t)j->index,
			    "timeout_s", c->s.timeout_ns / 1e9, "canonical", j->canonical),
		  dir, "settings.json");
	PATHF(cmd, "%s", psb_path());
	save_json(json_pack("{s:s}", "psb", cmd), dir, "run.json");
	save_doc(srv, dir, "server.json");
	off = (size_t)snprintf(cmd, sizeof(cmd), "%s run_job %s\n# runs:\n%s --config %s/server.json "
			       "--output-dir %s &\n", self_path(), dir, psb_path(), dir, dir);
	json_array_foreach(ws, i, w) {
		snprintf(leaf, sizeof(leaf), "worker-%zu.json", i);
		save_doc(json_incref(w), dir, leaf);
		if (off < sizeof(cmd))
			off += (size_t)snprintf(cmd + off, sizeof(cmd) - off,
						"%s --config %s/%s --output-dir %s &\n", psb_path(),
						dir, leaf, dir);
	}
	if (off < sizeof(cmd))
		snprintf(cmd + off, sizeof(cmd) - off, "wait for the workers; end the server; touch "
			 "%s/done\n", dir);
	PATHF(err, "%s/command", dir);
	if (write_atomic(err, cmd) != 0)
		psb_die("cannot write %s: %s", err, strerror(errno));
	json_decref(ws);
}

/* ---- run_job: one trial ---- */

static pid_t
spawn(char *const argv[], const char *log, const char *seed, const char *job)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	setpgid(0, 0);	/* the runner ends them; a terminal's Ctrl-C reaches the runner */
	/* and a runner that is killed takes them with it (psb ends cleanly on SIGTERM) */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() == 1)
		_exit(125);
	{
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		int nul = open("/dev/null", O_RDONLY);

		if (fd < 0 || nul < 0)
			_exit(126);
		dup2(nul, 0);
		dup2(fd, 1);
		dup2(fd, 2);
	}
	setenv("PSB_SWEEP_TRIAL_SEED", seed, 1);
	setenv("PSB_SWEEP_JOB", job, 1);
	execv(argv[0], argv);
	fprintf(stderr, "psb-sweep: cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

static void
end_proc(pid_t pid, int *status, double patience)
{
	double t0 = mono_s();

	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	while (waitpid(pid, status, WNOHANG) == 0) {
		if (mono_s() - t0 > patience) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, status, 0);
			return;
		}
		usleep(20000);
	}
}

static const char *
status_text(int st, char *buf, size_t len)
{
	if (WIFEXITED(st))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, len, "was killed by signal %d", WTERMSIG(st));
	else
		snprintf(buf, len, "ended");
	return buf;
}

/* the last line of a log, for a message */
static void
last_line(const char *path, char *buf, size_t len)
{
	char line[512];
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	if (f == NULL)
		return;
	if (fseek(f, -4096, SEEK_END) != 0)
		rewind(f);
	while (fgets(line, sizeof(line), f) != NULL)
		if (line[0] != '\n') {
			line[strcspn(line, "\n")] = '\0';
			snprintf(buf, len, "%s", line);
		}
	fclose(f);
}

/* Columns summed over a trial's worker processes; the others take the slowest worker's. */
static bool
summed(const char *col)
{
	static const char *const sums[] = {
		"goodput_gbps", "requests_per_s", "requests", "iterations", "retries", "failed",
		"verify_errors", "resets",
	};
	size_t i;

	for (i = 0; i < sizeof(sums) / sizeof(sums[0]); i++)
		if (strcmp(col, sums[i]) == 0)
			return true;
	return false;
}

/* of the columns not summed, those where higher is worse take the max, the others the min */
static bool
higher_is_worse(const char *col)
{
	return strstr(col, "rtt") != NULL || strstr(col, "_s") != NULL ||
	       strstr(col, "staleness") != NULL;
}

/* the trial's figures from each worker's result.json */
static json_t *
collect(const char *dir, unsigned int workers, char *err, size_t errlen)
{
	json_t *all = json_object(), *rows = json_array(), *res, *row, *v;
	char leaf[64];
	const char *col;
	unsigned int i;

	for (i = 0; i < workers; i++) {
		snprintf(leaf, sizeof(leaf), "psb/worker-%u/result.json", i);
		res = read_json(dir, leaf);
		if (res == NULL) {
			psb_fail(err, errlen, "worker %u wrote no %s", i, leaf);
			goto fail;
		}
		if (strcmp(json_string_value(json_object_get(res, "state")) ?: "", "done") != 0) {
			psb_fail(err, errlen, "worker %u: experiment %s%s%s", i,
				 json_string_value(json_object_get(res, "state")) ?: "?",
				 json_object_get(res, "error") != NULL ? ": " : "",
				 json_string_value(json_object_get(res, "error")) ?: "");
			json_decref(res);
			goto fail;
		}
		/* one worker role: its row; several: psb's "all" row, the last */
		row = json_array_get(json_object_get(res, "rows"),
				     json_array_size(json_object_get(res, "rows")) - 1);
		json_array_append(rows, row);
		json_object_foreach(row, col, v) {
			json_t *have = json_object_get(all, col);
			double x;

			if (!json_is_number(v))
				continue;
			x = json_number_value(v);
			if (have != NULL)
				x = summed(col) ? x + json_number_value(have) :
				    higher_is_worse(col) ? fmax(x, json_number_value(have)) :
				    fmin(x, json_number_value(have));
			json_object_set_new(all, col, json_real(x));
		}
		json_decref(res);
	}
	return json_pack("{s:o,s:o}", "figures", all, "workers", rows);
fail:
	json_decref(all);
	json_decref(rows);
	return NULL;
}

static int
job_end(const char *dir, int code, const char *error, double t0)
{
	json_t *st = json_pack("{s:i,s:f,s:f,s:i}", "exit_status", code, "started_at", t0,
			       "ended_at", now_s(), "pid", (int)getpid());

	if (error != NULL && error[0] != '\0') {
		json_object_set_new(st, "error", json_string(error));
		fprintf(stderr, "psb-sweep: job %s failed: %s\n", dir, error);
	}
	save_json(st, dir, "status.json");
	return code;
}

static int
run_job(const char *dir)
{
	pid_t srv, wk[PSB_SWEEP_MAX_WORKERS];
	int st, wst[PSB_SWEEP_MAX_WORKERS];
	json_t *set = read_json(dir, "settings.json"), *res;
	char path[PATH_MAX], conf[PATH_MAX], log[PATH_MAX], seed[32], err[1024], why[256];
	char line[512], *argv[8];
	unsigned int workers, i, left;
	json_t *run = read_json(dir, "run.json");
	double t0 = now_s(), deadline;
	const char *psb;
	bool ok = true;

	/* the psb the launcher was told of, unless this command line names one */
	if (opt.psb == NULL && json_string_value(json_object_get(run, "psb")) != NULL)
		opt.psb = json_string_value(json_object_get(run, "psb"));
	psb = psb_path();
	if (set == NULL)
		psb_die("%s: no settings.json: not a psb-sweep job directory", dir);
	if (exists(dir, "done"))
		psb_die("%s: done already", dir);
	workers = (unsigned int)json_integer_value(json_object_get(set, "workers"));
	if (workers < 1 || workers > PSB_SWEEP_MAX_WORKERS)
		psb_die("%s/settings.json: workers: expected 1 to %d", dir, PSB_SWEEP_MAX_WORKERS);
	deadline = json_number_value(json_object_get(set, "timeout_s"));
	snprintf(seed, sizeof(seed), "%lld", (long long)json_integer_value(json_object_get(set,
		 "seed")));
	PATHF(path, "%s/status.json", dir);
	unlink(path);
	PATHF(path, "%s/psb", dir);
	if (rm_tree(path) != 0)
		return job_end(dir, 1, "cannot clear the last run's psb/ results", t0);
	PATHF(path, "%s/logs", dir);
	if (mkdir_p(path) != 0 || mkdir_p(SOCKDIR) != 0)
		return job_end(dir, 1, "cannot make the logs/ or " SOCKDIR " directory", t0);
	catch_signals();
	printf("psb-sweep: job %s: a server and %u worker(s), %.0f s at most\n", dir, workers,
	       deadline);
	fflush(stdout);

	PATHF(conf, "%s/server.json", dir);
	PATHF(log, "%s/logs/server.log", dir);
	argv[0] = (char *)psb;
	argv[1] = "--config";
	argv[2] = conf;
	argv[3] = "--output-dir";
	argv[4] = (char *)dir;
	argv[5] = NULL;
	srv = spawn(argv, log, seed, dir);
	if (srv < 0)
		return job_end(dir, 1, "cannot start the server (fork failed)", t0);
	for (i = 0; i < workers; i++) {
		PATHF(conf, "%s/worker-%u.json", dir, i);
		PATHF(log, "%s/logs/worker-%u.log", dir, i);
		wk[i] = spawn(argv, log, seed, dir);
		wst[i] = -1;
		if (wk[i] < 0) {
			while (i-- > 0)
				end_proc(wk[i], &st, 5);
			end_proc(srv, &st, SERVER_END_S);
			return job_end(dir, 1, "cannot start a worker (fork failed)", t0);
		}
	}
	/* the workers, within the time given; a server that ends first fails the trial */
	deadline += mono_s();
	left = workers;
	err[0] = '\0';
	while (left > 0) {
		for (i = 0; i < workers; i++)
			if (wst[i] == -1 && waitpid(wk[i], &st, WNOHANG) == wk[i]) {
				wst[i] = st;
				left--;
				if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
					PATHF(log, "%s/logs/worker-%u.log", dir, i);
					last_line(log, line, sizeof(line));
					if (err[0] == '\0')
						snprintf(err, sizeof(err), "worker %u %s: %s", i,
							 status_text(st, why, sizeof(why)), line);
					ok = false;
				}
			}
		if (left == 0)
			break;
		if (srv > 0 && waitpid(srv, &st, WNOHANG) == srv) {
			PATHF(log, "%s/logs/server.log", dir);
			last_line(log, line, sizeof(line));
			snprintf(err, sizeof(err), "the server %s before its workers finished: %s",
				 status_text(st, why, sizeof(why)), line);
			srv = -1;
			ok = false;
			break;
		}
		if (g_stop != 0 || mono_s() > deadline) {
			size_t off = (size_t)snprintf(err, sizeof(err), g_stop != 0 ?
				"interrupted (signal %d) with worker(s)" :
				"worker(s)", (int)g_stop);

			for (i = 0; i < workers && off < sizeof(err); i++)
				if (wst[i] == -1)
					off += (size_t)snprintf(err + off, sizeof(err) - off, " %u", i);
			if (g_stop == 0 && off < sizeof(err))
				snprintf(err + off, sizeof(err) - off, " still running after %.0f s "
					 "(the sweep's timeout)", json_number_value(json_object_get(set,
					 "timeout_s")));
			ok = false;
			break;
		}
		usleep(20000);
	}
	for (i = 0; i < workers; i++)
		if (wst[i] == -1)
			end_proc(wk[i], &wst[i], 5);
	/* the server writes its results as it ends */
	end_proc(srv, &st, SERVER_END_S);
	for (i = 0; i < workers; i++) {
		PATHF(path, "%s/%.16s.%u.sock", SOCKDIR, strrchr(dir, '/') != NULL ?
		      strrchr(dir, '/') + 1 : dir, i);
		unlink(path);
	}
	if (!ok)
		return job_end(dir, 1, err, t0);
	res = collect(dir, workers, err, sizeof(err));
	if (res == NULL)
		return job_end(dir, 1, err, t0);
	json_object_set_new(res, "setting", json_incref(json_object_get(set, "settings")));
	json_object_set_new(res, "elapsed_s", json_real(now_s() - t0));
	save_json(res, dir, "results.json");
	job_end(dir, 0, NULL, t0);
	PATHF(path, "%s/done", dir);
	snprintf(line, sizeof(line), "%.3f\n", now_s());
	if (write_atomic(path, line) != 0)
		psb_die("cannot write %s: %s", path, strerror(errno));
	json_decref(set);
	return 0;
}

/* ---- launchers ---- */

static void
record_launch(const char *dir, json_t *rec)
{
	json_object_set_new(rec, "launched_at", json_real(now_s()));
	save_json(rec, dir, "launcher.json");
}

static void
clear_ended(const char *dir)
{
	static const char *const leaves[] = { "status.json", "launcher.json", "results.json" };
	char path[PATH_MAX];
	size_t i;

	for (i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++) {
		PATHF(path, "%s/%s", dir, leaves[i]);
		unlink(path);
	}
}

static int
launch_local(struct ctx *c, const size_t *todo, size_t n)
{
	pid_t *pids = calloc(n, sizeof(*pids));
	double *t0 = calloc(n, sizeof(*t0));
	size_t next = 0, running = 0, ended = 0, i, failed = 0;
	char dir[PATH_MAX], host[256], why[128], st[512];
	json_t *res, *status;
	int wstat;
	pid_t pid;

	if (pids == NULL || t0 == NULL)
		psb_die("out of memory");
	gethostname(host, sizeof(host));
	catch_signals();
	while (ended < n) {
		while (g_stop == 0 && next < n && running < opt.parallel) {
			const struct psb_sweep_job *j = &c->jobs[todo[next]];

			job_dir(c, j, dir, sizeof(dir));
			job_prepare(c, j);
			clear_ended(dir);
			fflush(stdout);
			pid = fork();
			if (pid < 0)
				psb_die("fork: %s", strerror(errno));
			if (pid == 0) {
				char logp[PATH_MAX + 16];
				int fd;

				PATHF(logp, "%s/run.log", dir);
				fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
				if (fd >= 0) {
					dup2(fd, 1);
					dup2(fd, 2);
				}
				execl(self_path(), self_path(), "run_job", dir, (char *)NULL);
				_exit(127);
			}
			record_launch(dir, json_pack("{s:s,s:I,s:I,s:s}", "launcher", "local",
					 "pid", (json_int_t)pid, "starttime",
					 (json_int_t)proc_starttime(pid), "host", host));
			pids[next] = pid;
			t0[next] = mono_s();
			next++;
			running++;
		}
		if (g_stop != 0 && running == 0)
			break;
		pid = waitpid(-1, &wstat, 0);
		if (pid < 0) {
			if (errno == EINTR) {
				for (i = 0; i < next; i++)
					if (pids[i] > 0)
						kill(pids[i], SIGTERM);
				continue;
			}
			break;
		}
		for (i = 0; i < next && pids[i] != pid; i++)
			;
		if (i == next)
			continue;
		pids[i] = 0;
		running--;
		ended++;
		job_dir(c, &c->jobs[todo[i]], dir, sizeof(dir));
		status = read_json(dir, "status.json");
		/* a runner that died before it could say: its launcher says */
		if (status == NULL && (!WIFEXITED(wstat) || WEXITSTATUS(wstat) != 0)) {
			snprintf(st, sizeof(st), "run_job %s", status_text(wstat, why, sizeof(why)));
			save_json(json_pack("{s:i,s:s}", "exit_status", WIFEXITED(wstat) ?
					    WEXITSTATUS(wstat) : 128 + WTERMSIG(wstat), "error", st),
				  dir, "status.json");
			status = read_json(dir, "status.json");
		}
		psb_sweep_settings_text(c->jobs[todo[i]].settings, " ", st, sizeof(st));
		res = read_json(dir, "results.json");
		if (exists(dir, "done")) {
			printf("[%zu/%zu] %.12s done in %.1f s: %s trial %u: %s %.4g\n", ended, n,
			       c->jobs[todo[i]].id, mono_s() - t0[i], st, c->jobs[todo[i]].trial,
			       c->s.figure, json_number_value(json_object_get(json_object_get(res,
			       "figures"), c->s.figure)));
		} else {
			failed++;
			printf("[%zu/%zu] %.12s FAILED after %.1f s: %s trial %u: %s (logs in "
			       "%s/logs)\n", ended, n, c->jobs[todo[i]].id, mono_s() - t0[i], st,
			       c->jobs[todo[i]].trial,
			       json_string_value(json_object_get(status, "error")) ?: "no status",
			       dir);
		}
		fflush(stdout);
		json_decref(res);
		json_decref(status);
	}
	free(pids);
	free(t0);
	if (g_stop != 0) {
		fprintf(stderr, "psb-sweep: interrupted: %zu of %zu job(s) not launched\n",
			n - next, n);
		return 130;
	}
	printf("psb-sweep: %zu job(s) ran, %zu failed\n", n, failed);
	return failed != 0;
}

static int
launch_dry(struct ctx *c, const size_t *todo, size_t n)
{
	char dir[PATH_MAX];
	json_t *srv, *ws, *w;
	char err[1024];
	size_t i, k;

	for (i = 0; i < n; i++) {
		const struct psb_sweep_job *j = &c->jobs[todo[i]];

		job_dir(c, j, dir, sizeof(dir));
		if (psb_sweep_job_docs(&c->s, j, SOCKDIR, &srv, &ws, err, sizeof(err)) != 0)
			psb_die("job %s: %s", j->id, err);
		printf("%s run_job %s\n", self_path(), dir);
		printf("  %s --config %s/server.json --output-dir %s &\n", psb_path(), dir, dir);
		json_array_foreach(ws, k, w)
			printf("  %s --config %s/worker-%zu.json --output-dir %s &\n", psb_path(),
			       dir, k, dir);
		json_decref(srv);
		json_decref(ws);
	}
	printf("psb-sweep: dry run: %zu job(s) not launched\n", n);
	return 0;
}

static unsigned long
slurm_max_array(void)
{
	char *argv[] = { "scontrol", "show", "config", NULL }, *out, *p;
	unsigned long v = 0;
	int rc = run_capture(argv, &out, 1 << 20);

	if (rc != 0)
		psb_die("slurm: 'scontrol show config' %s (is Slurm running here? "
			"scripts/slurm-local.sh up starts one on this host)",
			rc == 127 ? "was not found" : "failed");
	p = strstr(out, "MaxArraySize");
	if (p != NULL && (p = strchr(p, '=')) != NULL)
		v = strtoul(p + 1, NULL, 10);
	free(out);
	return v != 0 ? v : 1001;
}

static int
launch_slurm(struct ctx *c, const size_t *todo, size_t n)
{
	unsigned long cluster = slurm_max_array(), chunk = cluster;
	char dir[PATH_MAX], script[PATH_MAX], sdir[PATH_MAX], arr[64], name[96];
	char outp[PATH_MAX + 32];
	char *out, *argv[16], *text;
	size_t i, k, len;
	int rc, a = 0;
	FILE *f;

	if (opt.max_array != 0 && opt.max_array < chunk)
		chunk = opt.max_array;
	PATHF(sdir, "%s/slurm", c->out);
	if (mkdir_p(sdir) != 0)
		psb_die("cannot make %s: %s", sdir, strerror(errno));
	printf("psb-sweep: slurm: MaxArraySize %lu, arrays of %lu task(s) at most, %u at once\n",
	       cluster, chunk, opt.max_concurrent);
	for (i = 0; i < n; i += chunk) {
		len = n - i < chunk ? n - i : chunk;
		PATHF(script, "%s/array-%ld-%zu.sh", sdir, (long)time(NULL), i);
		f = fopen(script, "w");
		if (f == NULL)
			psb_die("cannot write %s: %s", script, strerror(errno));
		fprintf(f, "#!/bin/bash\n# psb-sweep %s: %zu job(s), one per array task\n"
			"JOBS=(\n", c->s.name, len);
		for (k = 0; k < len; k++) {
			job_dir(c, &c->jobs[todo[i + k]], dir, sizeof(dir));
			job_prepare(c, &c->jobs[todo[i + k]]);
			clear_ended(dir);
			fprintf(f, "\t'%s'\n", dir);
		}
		fprintf(f, ")\nD=${JOBS[$SLURM_ARRAY_TASK_ID]}\n"
			"exec '%s' run_job \"$D\" > \"$D/run.log\" 2>&1\n", self_path());
		if (fclose(f) != 0)
			psb_die("cannot write %s", script);
		snprintf(arr, sizeof(arr), "--array=0-%zu%%%u", len - 1, opt.max_concurrent);
		snprintf(name, sizeof(name), "--job-name=psb-sweep-%s", c->s.name);
		snprintf(outp, sizeof(outp), "--output=%s/%%A_%%a.out", sdir);
		a = 0;
		argv[a++] = "sbatch";
		argv[a++] = "--parsable";
		argv[a++] = arr;
		argv[a++] = name;
		argv[a++] = outp;
		if (opt.partition != NULL) {
			argv[a++] = "--partition";
			argv[a++] = (char *)opt.partition;
		}
		argv[a++] = script;
		argv[a] = NULL;
		rc = run_capture(argv, &out, 1 << 16);
		if (rc != 0 || out == NULL || strtoul(out, NULL, 10) == 0) {
			/* the jobs of this array stay not launched: their directories go */
			for (k = 0; k < len; k++) {
				job_dir(c, &c->jobs[todo[i + k]], dir, sizeof(dir));
				rm_tree(dir);
			}
			psb_die("slurm: sbatch %s %s failed (status %d)%s%s", arr, script, rc,
				out != NULL && out[0] != '\0' ? ": " : "", out != NULL ? out : "");
		}
		out[strcspn(out, ";\n")] = '\0';
		printf("psb-sweep: slurm: array job %s: %zu task(s) (%s)\n", out, len, arr + 8);
		for (k = 0; k < len; k++) {
			job_dir(c, &c->jobs[todo[i + k]], dir, sizeof(dir));
			text = NULL;
			if (asprintf(&text, "%s_%zu", out, k) < 0)
				psb_die("out of memory");
			record_launch(dir, json_pack("{s:s,s:s,s:s,s:I,s:s}", "launcher", "slurm",
						     "job_id", text, "array_job", out,
						     "task", (json_int_t)k, "script", script));
			free(text);
		}
		free(out);
	}
	return 0;
}

/* after a Slurm launch with --wait: until no job of the sweep runs */
static int
wait_slurm(struct ctx *c)
{
	double t0 = mono_s(), last = 0;
	unsigned int count[PSB_SWEEP_STATE_MAX];
	size_t i;

	catch_signals();
	for (;;) {
		states(c);
		memset(count, 0, sizeof(count));
		for (i = 0; i < c->njobs; i++)
			count[c->state[i]]++;
		if (count[PSB_SWEEP_RUNNING] == 0)
			break;
		if (mono_s() - last >= 5) {
			printf("psb-sweep: %.0f s: %u running, %u done, %u failed\n",
			       mono_s() - t0, count[PSB_SWEEP_RUNNING], count[PSB_SWEEP_DONE],
			       count[PSB_SWEEP_FAILED]);
			fflush(stdout);
			last = mono_s();
		}
		if (g_stop != 0 || mono_s() - t0 > opt.wait_s) {
			fprintf(stderr, "psb-sweep: %s with %u job(s) still running (left to Slurm)\n",
				g_stop != 0 ? "interrupted" : "stopped waiting",
				count[PSB_SWEEP_RUNNING]);
			return 1;
		}
		usleep(500000);
	}
	printf("psb-sweep: %u done, %u failed, %u incomplete\n", count[PSB_SWEEP_DONE],
	       count[PSB_SWEEP_FAILED], count[PSB_SWEEP_INCOMPLETE]);
	return count[PSB_SWEEP_FAILED] + count[PSB_SWEEP_INCOMPLETE] != 0;
}

static int
cmd_launch(bool resume)
{
	struct ctx c;
	size_t *todo, n = 0, i;
	bool *which;
	char q[128];
	int rc;

	memset(&c, 0, sizeof(c));
	sweep_open(&c, opt.launcher != L_DRY_RUN);
	states(&c);
	todo = calloc(c.njobs, sizeof(*todo));
	which = calloc(c.njobs, sizeof(*which));
	if (todo == NULL || which == NULL)
		psb_die("out of memory");
	for (i = 0; i < c.njobs; i++)
		if (c.state[i] == PSB_SWEEP_NOT_LAUNCHED ||
		    (resume && (c.state[i] == PSB_SWEEP_FAILED ||
				c.state[i] == PSB_SWEEP_INCOMPLETE))) {
			todo[n++] = i;
			which[i] = true;
		}
	printf("psb-sweep: %s: %zu job(s) in %s, at most %zu (--max_jobs); each trial's "
	       "workers %.0f s at most\n", c.s.name, c.njobs, c.out, opt.max_jobs,
	       c.s.timeout_ns / 1e9);
	print_jobs(&c, NULL);
	if (n == 0) {
		printf("psb-sweep: nothing to launch%s\n", resume ? "" :
		       " (resume launches failed and incomplete jobs again)");
		return 0;
	}
	snprintf(q, sizeof(q), "Launch %zu job(s) through %s", n, launcher_names[opt.launcher]);
	if (opt.launcher != L_DRY_RUN && !confirm(q)) {
		printf("psb-sweep: nothing launched\n");
		return 1;
	}
	if (opt.launcher == L_DRY_RUN)
		rc = launch_dry(&c, todo, n);
	else if (opt.launcher == L_LOCAL)
		rc = launch_local(&c, todo, n);
	else {
		rc = launch_slurm(&c, todo, n);
		/* bounded: every job one after another at its timeout, and ten minutes more */
		opt.wait_s = (double)n * (c.s.timeout_ns / 1e9 + 60) / opt.max_concurrent + 600;
		if (rc == 0 && opt.wait) {
			printf("psb-sweep: waiting for the jobs, %.0f s at most\n", opt.wait_s);
			rc = wait_slurm(&c);
		}
	}
	free(todo);
	free(which);
	psb_sweep_jobs_free(c.jobs, c.njobs);
	psb_sweep_free(&c.s);
	free(c.state);
	return rc;
}

static int
cmd_list(void)
{
	struct ctx c;

	memset(&c, 0, sizeof(c));
	sweep_open(&c, false);
	states(&c);
	print_jobs(&c, NULL);
	return 0;
}

static int
cmd_delete_incomplete(void)
{
	struct ctx c;
	bool *which;
	size_t i, n = 0;
	char dir[PATH_MAX], q[64];

	memset(&c, 0, sizeof(c));
	sweep_open(&c, false);
	states(&c);
	which = calloc(c.njobs, sizeof(*which));
	if (which == NULL)
		psb_die("out of memory");
	for (i = 0; i < c.njobs; i++)
		if (c.state[i] == PSB_SWEEP_FAILED || c.state[i] == PSB_SWEEP_INCOMPLETE) {
			which[i] = true;
			n++;
		}
	if (n == 0) {
		printf("psb-sweep: no failed or incomplete job\n");
		return 0;
	}
	print_jobs(&c, which);
	snprintf(q, sizeof(q), "Delete these %zu job director%s", n, n == 1 ? "y" : "ies");
	if (!confirm(q)) {
		printf("psb-sweep: nothing deleted\n");
		return 1;
	}
	for (i = 0; i < c.njobs; i++) {
		if (!which[i])
			continue;
		job_dir(&c, &c.jobs[i], dir, sizeof(dir));
		if (rm_tree(dir) != 0)
			psb_die("cannot remove %s: %s", dir, strerror(errno));
	}
	printf("psb-sweep: %zu job director%s deleted\n", n, n == 1 ? "y" : "ies");
	return 0;
}

/* ---- results ---- */

static void
fmt_num(char *buf, size_t len, double v)
{
	snprintf(buf, len, "%.4g", v);
}

static char *
xml_escape(const char *s, char *buf, size_t len)
{
	size_t o = 0;

	for (; *s != '\0' && o + 7 < len; s++) {
		const char *r = *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : *s == '&' ? "&amp;" :
			*s == '"' ? "&quot;" : NULL;

		if (r != NULL)
			o += (size_t)snprintf(buf + o, len - o, "%s", r);
		else
			buf[o++] = *s;
	}
	buf[o] = '\0';
	return buf;
}

/* A horizontal bar per setting: the figure's mean, its standard deviation as a whisker. */
static char *
svg_plot(const struct ctx *c, json_t *rows, const char *fig)
{
	size_t n = json_array_size(rows), i, len = 4096 + n * 1024, o = 0;
	double top = 0, w = 420, x0 = 380, rowh = 26;
	char *buf = malloc(len), esc[512], label[512];
	json_t *r;

	if (buf == NULL)
		return NULL;
	json_array_foreach(rows, i, r) {
		double m = json_number_value(json_object_get(r, "mean"));
		double sd = json_number_value(json_object_get(r, "sd"));

		top = fmax(top, m + sd);
	}
	top = top > 0 ? top * 1.05 : 1;
	o += (size_t)snprintf(buf + o, len - o,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
		"font-family=\"sans-serif\" font-size=\"12\">\n"
		"<text x=\"10\" y=\"18\" font-size=\"14\">%s: %s per setting, mean and standard "
		"deviation over %u trial(s)</text>\n", x0 + w + 80, 60 + rowh * (double)n,
		xml_escape(c->s.name, esc, sizeof(esc)), fig, c->s.n_trials);
	json_array_foreach(rows, i, r) {
		double m = json_number_value(json_object_get(r, "mean"));
		double sd = json_number_value(json_object_get(r, "sd"));
		double y = 36 + rowh * (double)i, bw = w * m / top;

		snprintf(label, sizeof(label), "%s", json_string_value(json_object_get(r,
			 "label")) ?: "");
		o += (size_t)snprintf(buf + o, len - o,
			"<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%s</text>\n"
			"<rect x=\"%.0f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\" fill=\"#4878a8\"/>\n"
			"<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n"
			"<text x=\"%.1f\" y=\"%.0f\">%.4g</text>\n",
			x0 - 6, y + 15, xml_escape(label, esc, sizeof(esc)), x0, y + 3, bw, rowh - 6,
			x0 + w * (m - sd) / top, x0 + w * (m + sd) / top, y + rowh / 2, y + rowh / 2,
			x0 + w * (m + sd) / top + 4, y + 15, m);
	}
	snprintf(buf + o, len - o, "</svg>\n");
	return buf;
}

static int
cmd_results(void)
{
	struct ctx c;
	unsigned int count[PSB_SWEEP_STATE_MAX] = { 0 };
	json_t *sets = json_array(), *plot = json_array(), *best = NULL, *res, *row;
	char dir[PATH_MAX], path[PATH_MAX], num[64], st[512], *md = NULL, *csv = NULL, *svg;
	const char *fig, *key;
	size_t i, t, f, mdlen = 0, csvlen = 0;
	double *v, mean, sd, se, best_v = 0;
	unsigned int k, n_done;
	FILE *m, *cs;
	json_t *val;

	memset(&c, 0, sizeof(c));
	sweep_open(&c, false);
	states(&c);
	fig = opt.figure != NULL ? opt.figure : c.s.figure;
	for (f = 0; f < c.s.nfigures && strcmp(c.s.figures[f], fig) != 0; f++)
		;
	if (f == c.s.nfigures)
		psb_cli_usage_error("--figure %s: not one of the sweep's figures", fig);
	v = calloc(c.s.n_trials, sizeof(*v));
	m = open_memstream(&md, &mdlen);
	cs = open_memstream(&csv, &csvlen);
	if (v == NULL || m == NULL || cs == NULL)
		psb_die("out of memory");
	for (i = 0; i < c.njobs; i++)
		count[c.state[i]]++;
	/* the tables' heads: the swept keys, the trials, each figure */
	fprintf(m, "| setting |");
	fprintf(cs, "setting");
	json_object_foreach(c.jobs[0].settings, key, val) {
		fprintf(m, " %s |", key);
		fprintf(cs, ",%s", key);
	}
	fprintf(m, " trials |");
	fprintf(cs, ",trials_done,trials");
	for (f = 0; f < c.s.nfigures; f++) {
		fprintf(m, " %s (mean ± sd) |", c.s.figures[f]);
		fprintf(cs, ",%s_mean,%s_sd,%s_se", c.s.figures[f], c.s.figures[f],
			c.s.figures[f]);
	}
	fprintf(m, " %s se |\n|---|", fig);
	fprintf(cs, "\n");
	for (k = 0; k < json_object_size(c.jobs[0].settings) + 1 + c.s.nfigures + 1; k++)
		fprintf(m, "---:|");
	fprintf(m, "\n");
	for (i = 0; i < c.njobs; i += c.s.n_trials) {
		json_t *figs = json_object(), *o;
		double fig_mean = 0, fig_sd = 0, fig_se = 0;

		n_done = 0;
		fprintf(m, "| %.8s |", c.jobs[i].setting);
		fprintf(cs, "%s", c.jobs[i].setting);
		json_object_foreach(c.jobs[i].settings, key, val) {
			char *t2 = json_dumps(val, JSON_ENCODE_ANY | JSON_COMPACT);

			fprintf(m, " %s |", json_is_string(val) ? json_string_value(val) :
				t2 != NULL ? t2 : "");
			fprintf(cs, ",%s", t2 != NULL && json_is_string(val) ? json_string_value(val) :
				t2 != NULL ? t2 : "");
			free(t2);
		}
		for (t = 0; t < c.s.n_trials; t++)
			n_done += c.state[i + t] == PSB_SWEEP_DONE;
		fprintf(m, " %u/%u |", n_done, c.s.n_trials);
		fprintf(cs, ",%u,%u", n_done, c.s.n_trials);
		for (f = 0; f < c.s.nfigures; f++) {
			size_t nv = 0;

			for (t = 0; t < c.s.n_trials; t++) {
				if (c.state[i + t] != PSB_SWEEP_DONE)
					continue;
				job_dir(&c, &c.jobs[i + t], dir, sizeof(dir));
				res = read_json(dir, "results.json");
				row = json_object_get(json_object_get(res, "figures"),
						      c.s.figures[f]);
				if (json_is_number(row))
					v[nv++] = json_number_value(row);
				json_decref(res);
			}
			psb_sweep_stats(v, nv, &mean, &sd, &se);
			if (nv == 0) {
				fprintf(m, " |");
				fprintf(cs, ",,,");
				continue;
			}
			fmt_num(num, sizeof(num), mean);
			fprintf(m, " %s ± ", num);
			fmt_num(num, sizeof(num), sd);
			fprintf(m, "%s |", num);
			fprintf(cs, ",%.6g,%.6g,%.6g", mean, sd, se);
			o = json_pack("{s:f,s:f,s:f,s:I}", "mean", mean, "sd", sd, "se", se, "n",
				      (json_int_t)nv);
			json_object_set_new(figs, c.s.figures[f], o);
			if (strcmp(c.s.figures[f], fig) == 0) {
				fig_mean = mean;
				fig_sd = sd;
				fig_se = se;
			}
		}
		fmt_num(num, sizeof(num), fig_se);
		fprintf(m, " %s |\n", json_object_get(figs, fig) != NULL ? num : "");
		fprintf(cs, "\n");
		o = json_pack("{s:s,s:O,s:I,s:I,s:o}", "setting", c.jobs[i].setting, "settings",
			      c.jobs[i].settings, "trials_done", (json_int_t)n_done, "trials",
			      (json_int_t)c.s.n_trials, "figures", figs);
		json_array_append_new(sets, o);
		if (json_object_get(figs, fig) != NULL) {
			psb_sweep_settings_text(c.jobs[i].settings, " ", st, sizeof(st));
			json_array_append_new(plot, json_pack("{s:s,s:f,s:f}", "label", st, "mean",
							      fig_mean, "sd", fig_sd));
			if (best == NULL || (c.s.higher ? fig_mean > best_v : fig_mean < best_v)) {
				best = o;
				best_v = fig_mean;
			}
		}
	}
	fclose(cs);
	fprintf(m, "\n");
	if (best != NULL) {
		json_t *b = json_object_get(json_object_get(best, "figures"), fig);

		psb_sweep_settings_text(json_object_get(best, "settings"), " ", st, sizeof(st));
		fprintf(m, "Best setting by %s (%s is better): %s (%s): %.4g ± %.4g (se %.4g, %lld "
			"trial(s))\n\n", fig, c.s.higher ? "higher" : "lower",
			json_string_value(json_object_get(best, "setting")), st,
			json_number_value(json_object_get(b, "mean")),
			json_number_value(json_object_get(b, "sd")),
			json_number_value(json_object_get(b, "se")),
			(long long)json_integer_value(json_object_get(b, "n")));
	} else {
		fprintf(m, "No setting has a done trial yet.\n\n");
	}
	fprintf(m, "Jobs: %zu (%zu settings x %u trials):", c.njobs, c.njobs / c.s.n_trials,
		c.s.n_trials);
	for (k = 0; k < PSB_SWEEP_STATE_MAX; k++)
		if (count[k] != 0)
			fprintf(m, " %u %s", count[k], psb_sweep_state_names[k]);
	fprintf(m, ".\n");
	fclose(m);
	fputs(md, stdout);
	PATHF(path, "%s/results.md", c.out);
	if (write_atomic(path, md) != 0)
		psb_die("cannot write %s: %s", path, strerror(errno));
	PATHF(path, "%s/results.csv", c.out);
	if (write_atomic(path, csv) != 0)
		psb_die("cannot write %s: %s", path, strerror(errno));
	svg = svg_plot(&c, plot, fig);
	PATHF(path, "%s/results.svg", c.out);
	if (svg == NULL || write_atomic(path, svg) != 0)
		psb_die("cannot write %s", path);
	{
		json_t *jobs = json_object();

		for (k = 0; k < PSB_SWEEP_STATE_MAX; k++)
			json_object_set_new(jobs, psb_sweep_state_names[k], json_integer(count[k]));
		save_json(json_pack("{s:s,s:s,s:s,s:o,s:O,s:o,s:I,s:I}", "sweep", c.s.name,
				    "figure", fig, "better", c.s.higher ? "higher" : "lower",
				    "settings", sets, "best", best != NULL ? best : json_null(),
				    "jobs", jobs, "n_trials", (json_int_t)c.s.n_trials, "n_hparams",
				    (json_int_t)c.s.n_hparams), c.out, "results.json");
	}
	printf("psb-sweep: written %s/results.{md,csv,json,svg}\n", c.out);
	free(md);
	free(csv);
	free(svg);
	free(v);
	json_decref(plot);
	return count[PSB_SWEEP_DONE] == 0;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "sweep", required_argument, NULL, 's' },
		{ "output_dir", required_argument, NULL, 'o' },
		{ "n_trials", required_argument, NULL, 't' },
		{ "n_hparams", required_argument, NULL, 'H' },
		{ "seed", required_argument, NULL, 'S' },
		{ "command_launcher", required_argument, NULL, 'l' },
		{ "skip_confirmation", no_argument, NULL, 'y' },
		{ "parallel", required_argument, NULL, 'p' },
		{ "max_concurrent", required_argument, NULL, 'm' },
		{ "max_array_size", required_argument, NULL, 'A' },
		{ "partition", required_argument, NULL, 'P' },
		{ "wait", no_argument, NULL, 'w' },
		{ "max_jobs", required_argument, NULL, 'J' },
		{ "figure", required_argument, NULL, 'f' },
		{ "psb", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		PSB_CLI_VERSION_OPTION,
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd;
	int c, idx;

	psb_cli_prog("psb-sweep");
	while ((c = psb_cli_getopt(argc, argv, "h", opts, &idx)) != -1) {
		switch (c) {
		case 's': opt.sweep = optarg; break;
		case 'o': opt.out = optarg; break;
		case 't':
			opt.n_trials = (long)psb_cli_u64("--n_trials", optarg, 1,
							 PSB_SWEEP_MAX_TRIALS);
			break;
		case 'H':
			opt.n_hparams = (long)psb_cli_u64("--n_hparams", optarg, 1,
							  PSB_SWEEP_MAX_HPARAMS);
			break;
		case 'S': opt.seed = (long long)psb_cli_u64("--seed", optarg, 0, 1ull << 53); break;
		case 'l':
			if (strcmp(optarg, "dry-run") == 0)
				optarg = "dry_run";
			for (opt.launcher = 0; opt.launcher < 3; opt.launcher++)
				if (strcmp(optarg, launcher_names[opt.launcher]) == 0)
					break;
			if (opt.launcher == 3)
				psb_cli_usage_error("--command_launcher: expected local, slurm or "
						    "dry_run, got '%s'", optarg);
			break;
		case 'y': opt.skip_confirmation = true; break;
		case 'p': opt.parallel = (unsigned int)psb_cli_u64("--parallel", optarg, 1, 64); break;
		case 'm':
			opt.max_concurrent = (unsigned int)psb_cli_u64("--max_concurrent", optarg, 1,
								       10000);
			break;
		case 'A': opt.max_array = psb_cli_u64("--max_array_size", optarg, 1, 4000000); break;
		case 'P': opt.partition = optarg; break;
		case 'w': opt.wait = true; break;
		case 'J':
			opt.max_jobs = (size_t)psb_cli_u64("--max_jobs", optarg, 1, 1000000);
			break;
		case 'f': opt.figure = optarg; break;
		case 'b': opt.psb = optarg; break;
		case 'h': usage(stdout); return 0;
		}
	}
	if (optind >= argc)
		psb_cli_usage_error("expected a command: launch, list, resume, delete_incomplete, "
				    "results or run_job");
	cmd = argv[optind];
	if (strcmp(cmd, "run_job") == 0) {
		if (optind + 2 != argc)
			psb_cli_usage_error("run_job: expected one job directory");
		return run_job(argv[optind + 1]);
	}
	if (optind + 1 != argc)
		psb_cli_usage_error("unexpected argument '%s' after %s", argv[optind + 1], cmd);
	if (strcmp(cmd, "launch") == 0)
		return cmd_launch(false);
	if (strcmp(cmd, "resume") == 0)
		return cmd_launch(true);
	if (strcmp(cmd, "list") == 0)
		return cmd_list();
	if (strcmp(cmd, "delete_incomplete") == 0)
		return cmd_delete_incomplete();
	if (strcmp(cmd, "results") == 0)
		return cmd_results();
	psb_cli_usage_error("unknown command '%s' (launch, list, resume, delete_incomplete, "
			    "results, run_job)", cmd);
}
