/* psbctl: the command-line client of psb's control socket (JSON lines on a unix socket). */
#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "psb_cli.h"
#include "psb_clock.h"
#include "psb_ctl_client.h"
#include "psb_exp.h"
#include "psb_render.h"

/* Exit statuses: the appliance refused (1), psbctl could not ask it (2). */
#define EXIT_REFUSED	1
#define EXIT_USAGE	2
#define DAY_NS		(86400ull * 1000000000)	/* the longest --timeout and --watch */

static int g_timeout_ms = 5000;
static int g_json;
static volatile sig_atomic_t g_interrupted;

static void
usage(FILE *out)
{
	fprintf(out,
"Usage: psbctl [--ctl PATH | -p|--file-prefix NAME] [--json] [--timeout S] COMMAND [ARGS]\n"
"Commands:\n"
"  start [FILE] [--wait]  start the experiment document FILE (read here; its results go\n"
"                         under psb's results directory, --output-dir), or the loaded\n"
"                         one; --wait shows progress until it ends\n"
"  stop                   stop the running experiment (its results are written)\n"
"  status [--watch S]     the running or last experiment (every S seconds with --watch)\n"
"  counters [FILTER] [--watch S]  every counter as 'path value' lines, or those under\n"
"                         FILTER (a dotted path like roles.worker0)\n"
"  reset_state            zero counters, metrics and the server's store\n"
"  list                   experiments run so far\n"
"  set PARAM VALUE        change a parameter (while running: pushpull.rate,\n"
"                         output.log_every, output.counters_every)\n"
"  load FILE              load an experiment document for a later 'start'\n"
"  clear_port_stats [PORT|all]  zero port statistics\n"
"  port_info [PORT|all]   what each port's driver says of it: MAC, driver, link, MTU,\n"
"                         queues (testpmd's show port info)\n"
"  log [[TYPE] LEVEL]     psb's log types and their levels; with LEVEL (error,\n"
"                         warning, notice, info, debug) set TYPE (a glob like psb.*,\n"
"                         or DPDK's; psb.* without) to it\n"
"  rdma                   RDMA devices, ports, GIDs and RoCE versions seen through\n"
"                         rdma-core on psb's host, or why there are none\n"
"  roce_qp [N]            the RoCE queue pairs psb's passthrough counts, most packets\n"
"                         first (N of them; all without)\n"
"  quit                   stop the experiment and make psb exit\n"
"  help                   the appliance's commands\n"
"  raw JSON-LINE          send one request as is, print the reply line\n"
"  prune DIR --keep N | --older-than AGE [--dry-run]\n"
"                         remove old results from DIR (an output.dir, like results):\n"
"                         those past the newest N, or written more than AGE ago (30s,\n"
"                         15m, 12h, 7d), or both; only directories holding nothing but\n"
"                         psb's result files (no socket needed)\n"
"Options:\n"
"  --ctl PATH             psb's control socket\n"
"  -p, --file-prefix NAME the socket of the psb started with --file-prefix NAME\n"
"                         (<DPDK runtime dir>/NAME/psb.ctl); default: the only one running\n"
"  --json                 print the appliance's replies as JSON lines\n"
"  --timeout S            wait at most S seconds for each reply (default 5)\n"
"  --version              psbctl's version and the git revision it was built from\n"
"  -h, --help             this text\n"
"Exit status: 0 ok, 1 the appliance answered with an error, 2 usage or connection errors;\n"
"130 when Ctrl-C ends 'start --wait' (the experiment goes on).\n");
}

static void
on_sigint(int sig)
{
	(void)sig;
	g_interrupted = 1;
}

/*
 * The socket of the one psb running here. Sockets nobody listens on are left over from a
 * psb that crashed: they do not count, so that one crash does not make psbctl ask for --ctl.
 */
static char *
find_socket(void)
{
	char base[PATH_MAX], pattern[PATH_MAX + 16], list[2048];
	size_t i, used = 0;
	char *found = NULL;
	int nlive = 0, nstale = 0;
	glob_t g;

	psb_cli_runtime_base(base, sizeof(base));
	snprintf(pattern, sizeof(pattern), "%s/*/psb.ctl", base);
	if (glob(pattern, 0, NULL, &g) != 0)
		psb_die("no running psb found (looked for %s); give --ctl PATH", pattern);
	list[0] = '\0';
	for (i = 0; i < g.gl_pathc; i++) {
		if (psb_cli_sock_probe(g.gl_pathv[i]) == -ECONNREFUSED) {
			nstale++;
			continue;
		}
		nlive++;
		if (found == NULL)
			found = strdup(g.gl_pathv[i]);
		if (used < sizeof(list))
			used += (size_t)snprintf(list + used, sizeof(list) - used, "\n  %s",
						 g.gl_pathv[i]);
	}
	globfree(&g);
	if (nlive == 0)
		psb_die("no running psb found (looked for %s; %d stale socket(s) nobody listens "
			"on); give --ctl PATH", pattern, nstale);
	if (nlive > 1)
		psb_die("%d psb control sockets found; choose one with --ctl PATH or -p PREFIX:%s",
			nlive, list);
	if (found == NULL)
		psb_die("out of memory");
	return found;
}

/* psbctl could not ask: the reason names the socket; a time that ran out, the option. */
static void __attribute__((noreturn))
conn_die(const struct psb_ctl_conn *c, int rc)
{
	psb_die("%s%s", c->err, rc == -ETIMEDOUT ? " (--timeout)" : "");
}

static void
conn_open(struct psb_ctl_conn *c, const char *path)
{
	int rc = psb_ctl_open(c, path, g_timeout_ms, &g_interrupted);

	if (rc != 0)
		conn_die(c, rc);
}

/* The reply to req (left as it was), or NULL once Ctrl-C was pressed. */
static json_t *
request(struct psb_ctl_conn *c, const json_t *req)
{
	json_t *reply;
	int rc = psb_ctl_request(c, req, 1, &reply);

	if (rc == PSB_CTL_INTERRUPTED)
		return NULL;
	if (rc != 0)
		conn_die(c, rc);
	return reply;
}

/* 1 (and the error on stderr) when psb refused the request, else 0. */
static int
reply_error(const json_t *reply)
{
	return psb_render_error(stderr, "psbctl", reply);
}

static void
print_json(const json_t *j)
{
	char *text = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);	/* exactly JSON */

	if (text == NULL)
		psb_die("out of memory");
	puts(text);
	fflush(stdout);
	free(text);
}

static const char *
jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key)) ?: "";
}

static json_int_t
jint(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? json_integer_value(v) : (json_int_t)json_number_value(v);
}

/* Progress in place on a terminal (\r), one line per sample elsewhere (logs, pipes). */
static void
show_progress(const char *line, int tty)
{
	if (tty)
		printf("\r%s\033[K", line);
	else
		printf("%s\n", line);
	fflush(stdout);
}

/* Sleep ms, or less when Ctrl-C comes. */
static void
nap(int ms)
{
	uint64_t end = psb_clock_ms() + (uint64_t)ms;

	while (!g_interrupted && psb_clock_ms() < end)
		poll(NULL, 0, (int)(end - psb_clock_ms()));
}

static json_t *
cmd(const char *name)
{
	json_t *r = json_pack("{s:s}", "cmd", name);

	if (r == NULL)
		psb_die("out of memory");
	return r;
}

/*
 * FILE, read here so that it is found from this directory, not psb's. Its output paths are
 * psb's to resolve: relative to the results directory psb was started with (--output-dir),
 * where psb keeps them.
 */
static json_t *
read_doc(const char *file)
{
	char err[1024];
	json_t *doc;
	int rc;

	/* as psb reads them: a regular file, of bounded size (a FIFO would hang psbctl) */
	doc = psb_exp_read_json(file, PSB_EXP_FILE_MAX, &rc, err, sizeof(err));
	if (doc == NULL)
		psb_die("%s", err);
	if (!json_is_object(doc))
		psb_die("%s: expected an experiment document (a JSON object)", file);
	return doc;
}

/* The reply to req, for a human (or as JSON with --json); EXIT_REFUSED for an error. */
static int
show_reply(const json_t *req, const json_t *reply)
{
	if (reply_error(reply))
		return EXIT_REFUSED;
	if (g_json)
		print_json(reply);
	else
		psb_render_reply(stdout, stderr, "psbctl", req, reply);
	fflush(stdout);
	return 0;
}

/* The experiment of a status reply; NULL (after saying why) if psb refused or Ctrl-C. */
static json_t *
status_exp(struct psb_ctl_conn *c, int *rc)
{
	json_t *req = cmd("status"), *reply, *exp;

	reply = request(c, req);
	json_decref(req);
	*rc = 0;
	if (reply == NULL)
		return NULL;
	if (reply_error(reply)) {
		json_decref(reply);
		*rc = EXIT_REFUSED;
		return NULL;
	}
	exp = json_incref(json_object_get(reply, "experiment"));
	json_decref(reply);
	return exp;
}

static int
do_start(struct psb_ctl_conn *c, const char *file, int wait)
{
	char line[512];
	json_t *req = cmd("start"), *reply, *exp = NULL;
	json_int_t id;
	int tty = isatty(STDOUT_FILENO), rc;
	uint64_t next;

	if (file != NULL)
		json_object_set_new(req, "experiment", read_doc(file));
	reply = request(c, req);
	if (reply == NULL) {
		json_decref(req);
		return 130;
	}
	rc = show_reply(req, reply);
	id = jint(json_object_get(reply, "experiment"), "id");
	json_decref(req);
	json_decref(reply);
	if (rc != 0 || !wait)
		return rc;

	/* sample each second, faster on a terminal where the line is redrawn in place */
	next = psb_clock_ms();
	for (;;) {
		nap((int)(next > psb_clock_ms() ? next - psb_clock_ms() : 0));
		if (g_interrupted)
			break;
		next += tty ? 250 : 1000;
		exp = status_exp(c, &rc);
		if (rc != 0)
			return rc;
		if (exp == NULL)
			break;
		if (jint(exp, "id") != id) {
			if (tty)
				putchar('\n');
			fprintf(stderr, "psbctl: experiment %" JSON_INTEGER_FORMAT " is no longer "
				"the appliance's (now %" JSON_INTEGER_FORMAT "): see 'psbctl list'\n",
				id, jint(exp, "id"));
			json_decref(exp);
			return EXIT_REFUSED;
		}
		if (strcmp(jstr(exp, "state"), "running") != 0)
			break;
		if (!g_json) {
			psb_render_progress(line, sizeof(line), exp);
			show_progress(line, tty);
		}
		json_decref(exp);
		exp = NULL;
	}
	if (tty && !g_json)
		putchar('\n');
	if (g_interrupted) {
		json_decref(exp);
		fprintf(stderr, "psbctl: interrupted; experiment %" JSON_INTEGER_FORMAT " goes on "
			"('psbctl stop' ends it)\n", id);
		return 130;
	}
	if (g_json)
		print_json(exp);
	else
		psb_render_experiment(stdout, exp);
	fflush(stdout);
	rc = strcmp(jstr(exp, "state"), "failed") == 0 ? EXIT_REFUSED : 0;
	if (rc != 0)
		fprintf(stderr, "psbctl: experiment %" JSON_INTEGER_FORMAT " failed%s%s\n", id,
			json_object_get(exp, "error") != NULL ? ": " : "", jstr(exp, "error"));
	json_decref(exp);
	return rc;
}

/* status and counters, once or every watch_ms over one connection until Ctrl-C. */
static int
do_show(struct psb_ctl_conn *c, const char *what, const char *filter, int watch_ms)
{
	int tty = isatty(STDOUT_FILENO), rc = 0;
	uint64_t next = psb_clock_ms();
	char line[512], stamp[32];
	json_t *req = cmd(what), *reply;
	time_t t;

	if (filter != NULL)
		json_object_set_new(req, "filter", json_string(filter));
	for (;;) {
		reply = request(c, req);
		if (reply == NULL)
			break;
		if (reply_error(reply)) {
			json_decref(reply);
			rc = EXIT_REFUSED;
			break;
		}
		if (watch_ms != 0 && !g_json && strcmp(what, "counters") == 0) {
			t = time(NULL);
			strftime(stamp, sizeof(stamp), "%H:%M:%S", localtime(&t));
			printf("--- %s\n", stamp);
		}
		if (watch_ms != 0 && !g_json && strcmp(what, "status") == 0) {
			psb_render_progress(line, sizeof(line),
					    json_object_get(reply, "experiment"));
			show_progress(line, tty);
		} else {
			show_reply(req, reply);
		}
		json_decref(reply);
		if (watch_ms == 0)
			break;
		next += (uint64_t)watch_ms;
		nap((int)(next > psb_clock_ms() ? next - psb_clock_ms() : 0));
		if (g_interrupted)
			break;
	}
	json_decref(req);
	if (watch_ms != 0 && tty && !g_json && strcmp(what, "status") == 0)
		putchar('\n');
	return rc;
}

/* raw: the line goes as typed and the reply line comes back as sent. */
static int
do_raw(struct psb_ctl_conn *c, const char *text)
{
	json_t *reply;
	char *line;
	int rc;

	if (strchr(text, '\n') != NULL)
		psb_die("raw: one request line expected (no newline in it)");
	rc = psb_ctl_send(c, text);
	if (rc == 0)
		rc = psb_ctl_read_line(c, &line);
	if (rc == PSB_CTL_INTERRUPTED)
		return 130;
	if (rc != 0)
		conn_die(c, rc);
	puts(line);
	fflush(stdout);
	reply = json_loads(line, 0, NULL);
	free(line);
	rc = reply_error(reply);
	json_decref(reply);
	return rc;
}

/* --older-than: a number with s, m, h or d (none: seconds); at least 1 s. */
static uint64_t
age_seconds(const char *v)
{
	static const struct { char unit; uint64_t mult; } units[] = {
		{ 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 },
	};
	char *end;
	unsigned long long n;
	unsigned int i;

	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno != 0 || end == v || v[0] == '-' || n == 0 || n > 100000ull * 86400)
		psb_die("--older-than: expected an age like 30s, 15m, 12h or 7d, got '%s'", v);
	if (*end == '\0')
		return n;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (end[0] == units[i].unit && end[1] == '\0')
			return n * units[i].mult;
	psb_die("--older-than: expected an age like 30s, 15m, 12h or 7d, got '%s'", v);
	return 0;
}

struct prune_out {
	int dry;
	unsigned int kept;
	uint64_t freed;
};

static void
prune_line(void *arg, const struct psb_exp_pruned *p)
{
	struct prune_out *o = arg;
	char when[32];
	struct tm tm;

	localtime_r(&p->mtime, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	if (p->removed) {
		o->freed += p->bytes;
		printf("%s %s (%s, %llu B)\n", o->dry ? "would remove" : "removed", p->name, when,
		       (unsigned long long)p->bytes);
	} else {
		o->kept++;
		if (p->foreign != NULL)
			printf("kept %s: it holds \"%s\", which psb did not write\n", p->name,
			       p->foreign);
		else
			printf("kept %s (%s, %s)\n", p->name, when, p->why);
	}
}

/* prune DIR: old results removed here, by psbctl (psb is not asked: no socket needed). */
static int
do_prune(const char *dir, long keep, uint64_t older, int dry)
{
	struct prune_out o = { .dry = dry };
	int n;

	if (keep < 0 && older == 0)
		psb_die("prune: give --keep N, --older-than AGE or both");
	n = psb_exp_prune(dir, keep, older, time(NULL), dry, prune_line, &o);
	if (n < 0) {
		fprintf(stderr, "psbctl: prune %s: %s\n", dir, strerror(-n));
		return EXIT_USAGE;
	}
	printf("%s %d results director%s (%llu B), kept %u\n", dry ? "would remove" : "removed",
	       n, n == 1 ? "y" : "ies", (unsigned long long)o.freed, o.kept);
	return 0;
}

enum { OPT_CTL = 256, OPT_JSON, OPT_TIMEOUT, OPT_WAIT, OPT_WATCH, OPT_KEEP, OPT_OLDER, OPT_DRY };

static const struct option long_opts[] = {
	{ "ctl", required_argument, NULL, OPT_CTL },
	{ "file-prefix", required_argument, NULL, 'p' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "wait", no_argument, NULL, OPT_WAIT },
	{ "watch", required_argument, NULL, OPT_WATCH },
	{ "keep", required_argument, NULL, OPT_KEEP },
	{ "older-than", required_argument, NULL, OPT_OLDER },
	{ "dry-run", no_argument, NULL, OPT_DRY },
	{ "help", no_argument, NULL, 'h' },
	PSB_CLI_VERSION_OPTION,
	{ NULL, 0, NULL, 0 },
};

/* Commands with their number of arguments: at least min, at most max. */
static const struct {
	const char *name;
	int min, max;
} commands[] = {
	{ "start", 0, 1 }, { "stop", 0, 0 }, { "status", 0, 0 }, { "counters", 0, 1 },
	{ "reset_state", 0, 0 }, { "list", 0, 0 }, { "set", 2, 2 }, { "load", 1, 1 },
	{ "clear_port_stats", 0, 1 }, { "port_info", 0, 1 }, { "log", 0, 2 }, { "rdma", 0, 0 }, { "roce_qp", 0, 1 },
	{ "quit", 0, 0 },
	{ "help", 0, 0 },
	{ "raw", 1, 1 },
	{ "prune", 1, 1 },
};

int
main(int argc, char **argv)
{
	const char *ctl = NULL, *prefix = NULL, *name;
	char *found = NULL, base[PATH_MAX], path[PATH_MAX + 32];
	int wait = 0, watch_ms = 0, opt, nargs, rc, dry = 0;
	long keep = -1;
	uint64_t older = 0;
	struct sigaction sa;
	struct psb_ctl_conn c;
	json_t *req, *reply;
	char **args;
	size_t i;

	psb_cli_prog("psbctl");
	while ((opt = psb_cli_getopt(argc, argv, "p:h", long_opts, NULL)) != -1) {
		switch (opt) {
		case OPT_CTL: ctl = optarg; break;
		case 'p': prefix = optarg; break;
		case OPT_JSON: g_json = 1; break;
		case OPT_TIMEOUT:
			g_timeout_ms = (int)(psb_cli_seconds_in("--timeout", optarg, 1000000,
				DAY_NS) / 1000000);
			break;
		case OPT_WAIT: wait = 1; break;
		case OPT_KEEP: keep = (long)psb_cli_u64("--keep", optarg, 0, 1000000000); break;
		case OPT_OLDER: older = age_seconds(optarg); break;
		case OPT_DRY: dry = 1; break;
		case OPT_WATCH:
			watch_ms = (int)(psb_cli_seconds_in("--watch", optarg, 10000000, DAY_NS) /
				1000000);
			break;
		case 'h': usage(stdout); return 0;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	name = argv[optind];
	args = argv + optind + 1;
	nargs = argc - optind - 1;
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, name) == 0)
			break;
	if (i == sizeof(commands) / sizeof(commands[0]))
		psb_die("unknown command '%s' (psbctl --help lists them)", name);
	if (nargs < commands[i].min || nargs > commands[i].max)
		psb_die("%s: expected %d to %d argument(s), got %d (psbctl --help)", name,
			commands[i].min, commands[i].max, nargs);
	if (wait && strcmp(name, "start") != 0)
		psb_die("--wait: only with start");
	if (watch_ms != 0 && strcmp(name, "status") != 0 && strcmp(name, "counters") != 0)
		psb_die("--watch: only with status and counters");
	if ((keep >= 0 || older != 0 || dry) && strcmp(name, "prune") != 0)
		psb_die("--keep, --older-than, --dry-run: only with prune");
	if (strcmp(name, "prune") == 0)
		return do_prune(args[0], keep, older, dry);
	if (ctl != NULL && prefix != NULL)
		psb_die("--ctl and --file-prefix: give one of them");
	if (prefix != NULL) {
		if (prefix[0] == '\0' || strchr(prefix, '/') != NULL)
			psb_die("--file-prefix: expected a DPDK file prefix, got '%s'", prefix);
		psb_cli_runtime_base(base, sizeof(base));
		snprintf(path, sizeof(path), "%s/%s/psb.ctl", base, prefix);
		ctl = path;
	} else if (ctl == NULL) {
		ctl = found = find_socket();
	}

	/* no SA_RESTART: Ctrl-C must end the poll() of a watch or a wait at once */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);

	conn_open(&c, ctl);
	if (strcmp(name, "raw") == 0) {
		rc = do_raw(&c, args[0]);
	} else if (strcmp(name, "start") == 0) {
		rc = do_start(&c, nargs > 0 ? args[0] : NULL, wait);
	} else if (strcmp(name, "status") == 0 || strcmp(name, "counters") == 0) {
		rc = do_show(&c, name, nargs > 0 ? args[0] : NULL, watch_ms);
	} else {
		req = cmd(name);
		if (strcmp(name, "set") == 0) {
			json_object_set_new(req, "param", json_string(args[0]));
			json_object_set_new(req, "value", json_string(args[1]));
		} else if (strcmp(name, "load") == 0) {
			json_object_set_new(req, "experiment", read_doc(args[0]));
		} else if (strcmp(name, "log") == 0 && nargs > 0) {
			/* the appliance checks both */
			if (nargs == 2)
				json_object_set_new(req, "type", json_string(args[0]));
			json_object_set_new(req, "level", json_string(args[nargs - 1]));
		} else if (strcmp(name, "roce_qp") == 0 && nargs > 0) {
			json_object_set_new(req, "max", json_integer((json_int_t)psb_cli_u64("N",
				args[0], 0, 1u << 20)));
		} else if ((strcmp(name, "clear_port_stats") == 0 ||
			    strcmp(name, "port_info") == 0) && nargs > 0) {
			json_object_set_new(req, "port", strcmp(args[0], "all") == 0 ?
				json_string("all") : json_integer((json_int_t)psb_cli_u64("PORT",
				args[0], 0, 65535)));
		}
		reply = request(&c, req);
		rc = reply != NULL ? show_reply(req, reply) : 130;
		json_decref(reply);
		json_decref(req);
	}
	psb_ctl_close(&c);
	free(found);
	return rc;
}
