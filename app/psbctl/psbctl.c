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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "psb_cli.h"
#include "psb_exp.h"

#define MAX_REPLY	(256u << 20)	/* a reply longer than this is not psb talking */

/* Exit statuses: the appliance refused (1), psbctl could not ask it (2). */
#define EXIT_REFUSED	1
#define EXIT_USAGE	2

struct conn {
	int fd;
	const char *path;
	char *buf;		/* received, not yet returned as lines */
	size_t len, cap;
	json_int_t next_id;
};

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

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
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

static void
conn_open(struct conn *c, const char *path)
{
	uint64_t deadline = now_ms() + (uint64_t)g_timeout_ms;
	struct sockaddr_un sa;
	struct stat st;
	int fd, rc;

	memset(c, 0, sizeof(*c));
	c->path = path;
	c->next_id = 1;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path))
		psb_die("--ctl: path longer than %zu bytes: %s", sizeof(sa.sun_path) - 1, path);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		psb_die("socket: %s", strerror(errno));
	/* EAGAIN: psb's listen backlog is full; it drains as psb serves, so try again */
	while ((rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa))) != 0 && errno == EAGAIN &&
	       now_ms() < deadline && !g_interrupted)
		usleep(10000);
	if (rc == 0) {
		c->fd = fd;
		return;
	}
	switch (errno) {
	case EACCES:
	case EPERM:
		psb_die("cannot connect to %s: permission denied: not the owner of %s (run as root "
			"or as the user running psb)", path, path);
	case ENOENT:
		psb_die("cannot connect to %s: no such socket (is psb running? with another --ctl "
			"or --file-prefix?)", path);
	case ECONNREFUSED:
		if (stat(path, &st) == 0 && !S_ISSOCK(st.st_mode))
			psb_die("cannot connect to %s: not a socket", path);
		psb_die("cannot connect to %s: connection refused (nothing listens: psb exited and "
			"left its socket behind?)", path);
	case ENOTDIR:
		psb_die("cannot connect to %s: a component of the path is not a directory", path);
	case EAGAIN:
		psb_die("cannot connect to %s: psb accepts no connection (its backlog stayed full "
			"for %.1f s)", path, g_timeout_ms / 1e3);
	default:
		psb_die("cannot connect to %s: %s", path, strerror(errno));
	}
}

static void
conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	c->buf = NULL;
	c->fd = -1;
}

/*
 * Send one line. A send error is not fatal yet: psb may have answered and closed (denied,
 * too_large), and that answer is still there to be read.
 */
static void
conn_send(struct conn *c, const char *text)
{
	size_t len = strlen(text), off = 0;
	char *line = malloc(len + 1);
	uint64_t deadline = now_ms() + (uint64_t)g_timeout_ms;
	struct pollfd pfd;
	ssize_t n;

	if (line == NULL)
		psb_die("out of memory");
	memcpy(line, text, len);
	line[len++] = '\n';
	while (off < len) {
		n = send(c->fd, line + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			break;
		if (g_interrupted)
			break;
		if (now_ms() >= deadline)
			psb_die("%s: psb takes no request (sending timed out after %.1f s)", c->path,
				g_timeout_ms / 1e3);
		pfd.fd = c->fd;
		pfd.events = POLLOUT;
		poll(&pfd, 1, 100);
	}
	free(line);
}

/* The next reply line (malloc'd), or NULL once Ctrl-C was pressed. Dies on timeout and EOF. */
static char *
conn_read_line(struct conn *c)
{
	uint64_t deadline = now_ms() + (uint64_t)g_timeout_ms;
	struct pollfd pfd;
	char *nl, *line;
	size_t used;
	ssize_t n;
	int rc;

	for (;;) {
		nl = c->len != 0 ? memchr(c->buf, '\n', c->len) : NULL;
		if (nl != NULL) {
			used = (size_t)(nl - c->buf);
			line = malloc(used + 1);
			if (line == NULL)
				psb_die("out of memory");
			memcpy(line, c->buf, used);
			line[used] = '\0';
			memmove(c->buf, nl + 1, c->len - used - 1);
			c->len -= used + 1;
			return line;
		}
		if (g_interrupted)
			return NULL;
		if (c->len == c->cap) {
			if (c->cap >= MAX_REPLY)
				psb_die("%s: reply longer than %u bytes without a newline", c->path,
					MAX_REPLY);
			c->cap = c->cap != 0 ? c->cap * 2 : 65536;
			c->buf = realloc(c->buf, c->cap);
			if (c->buf == NULL)
				psb_die("out of memory");
		}
		n = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
		if (n > 0) {
			c->len += (size_t)n;
			continue;
		}
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			psb_die("%s: psb closed the connection without replying (did it exit?)",
				c->path);
		if (errno != EAGAIN && errno != EINTR)
			psb_die("%s: reading the reply: %s", c->path, strerror(errno));
		if (now_ms() >= deadline)
			psb_die("%s: no reply from psb within %.1f s (--timeout)", c->path,
				g_timeout_ms / 1e3);
		pfd.fd = c->fd;
		pfd.events = POLLIN;
		rc = poll(&pfd, 1, (int)(deadline - now_ms()));
		if (rc < 0 && errno != EINTR)
			psb_die("poll: %s", strerror(errno));
	}
}

/* psb's word that it closed this connection for asking nothing (node.ctl_idle_timeout). */
static int
idle_closed(const json_t *reply)
{
	const char *code = json_string_value(json_object_get(json_object_get(reply, "error"),
							     "code"));

	return json_object_get(reply, "id") == NULL && code != NULL &&
		strcmp(code, "idle_timeout") == 0;
}

static void
conn_reopen(struct conn *c)
{
	json_int_t next = c->next_id;

	conn_close(c);
	conn_open(c, c->path);
	c->next_id = next;
}

/*
 * One request and its reply: psb answers every line in order and echoes "id"; a reply
 * without one is psb refusing the connection itself (denied, too_large, busy, bad_json).
 * Without with_id the request goes without "id", for replies that have an "id" of their
 * own (start: the experiment's, which an echoed id would overwrite), and the next line is
 * the reply. NULL once Ctrl-C was pressed.
 */
static json_t *
request_id(struct conn *c, json_t *req, int with_id)
{
	json_int_t id = c->next_id++;
	json_error_t je;
	json_t *reply;
	char *text, *line;

	if (with_id)
		json_object_set_new(req, "id", json_integer(id));
	text = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (text == NULL)
		psb_die("out of memory");
	conn_send(c, text);
	for (;;) {
		line = conn_read_line(c);
		if (line == NULL) {
			free(text);
			return NULL;
		}
		reply = json_loads(line, 0, &je);
		if (reply == NULL || !json_is_object(reply))
			psb_die("%s: not a JSON reply (%s): %.200s", c->path,
				reply == NULL ? je.text : "not an object", line);
		free(line);
		if (idle_closed(reply)) {
			/* psb let go of the connection while --watch slept: again, anew */
			json_decref(reply);
			conn_reopen(c);
			conn_send(c, text);
			continue;
		}
		if (!with_id)
			break;
		if (json_integer_value(json_object_get(reply, "id")) == id ||
		    (json_object_get(reply, "id") == NULL && json_object_get(reply, "error") != NULL))
			break;
		json_decref(reply);	/* an answer to someone else's id: not ours */
	}
	free(text);
	if (with_id)
		json_object_del(reply, "id");
	return reply;
}

static json_t *
request(struct conn *c, json_t *req)
{
	return request_id(c, req, 1);
}

/* 1 (and the error on stderr) when psb refused the request, else 0. */
static int
reply_error(const json_t *reply)
{
	const json_t *e = json_object_get(reply, "error");

	if (e == NULL)
		return 0;
	fprintf(stderr, "psbctl: %s: %s\n",
		json_string_value(json_object_get(e, "code")) ?: "error",
		json_string_value(json_object_get(e, "message")) ?: "(no message)");
	return 1;
}

static void
print_json(const json_t *j)
{
	char *text = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);

	if (text == NULL)
		psb_die("out of memory");
	puts(text);
	fflush(stdout);
	free(text);
}

/* A scalar for a human: numbers short but exact enough, strings bare. */
static void
print_scalar(FILE *out, const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_STRING: fputs(json_string_value(v), out); break;
	case JSON_INTEGER: fprintf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v)); break;
	case JSON_REAL: fprintf(out, "%.10g", json_real_value(v)); break;
	case JSON_TRUE: fputs("true", out); break;
	case JSON_FALSE: fputs("false", out); break;
	case JSON_NULL: fputs("null", out); break;
	case JSON_OBJECT: fputs("{}", out); break;
	case JSON_ARRAY: fputs("[]", out); break;
	}
}

/* "path value" lines, one per leaf, so that grep and awk find counters by name. */
static void
flatten(const char *prefix, const json_t *v)
{
	char path[1024];
	const char *key;
	const json_t *x;
	size_t i;

	if (json_is_object(v) && json_object_size(v) != 0) {
		json_object_foreach((json_t *)v, key, x) {
			snprintf(path, sizeof(path), "%s%s%s", prefix, prefix[0] ? "." : "", key);
			flatten(path, x);
		}
		return;
	}
	if (json_is_array(v) && json_array_size(v) != 0) {
		json_array_foreach(v, i, x) {
			snprintf(path, sizeof(path), "%s%s%zu", prefix, prefix[0] ? "." : "", i);
			flatten(path, x);
		}
		return;
	}
	printf("%s ", prefix[0] ? prefix : ".");
	print_scalar(stdout, v);
	putchar('\n');
}

static const char *
jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key)) ?: "";
}

static double
jnum(const json_t *o, const char *key)
{
	return json_number_value(json_object_get(o, key));
}

static json_int_t
jint(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? json_integer_value(v) : (json_int_t)json_number_value(v);
}

/* One line on how the experiment of a status reply is doing. */
static void
progress_line(const json_t *exp, char *buf, size_t len)
{
	const json_t *pp = json_object_get(exp, "pushpull");
	const json_t *sv = json_object_get(exp, "serve");
	int n;

	if (jint(exp, "id") == 0) {
		snprintf(buf, len, "no experiment yet");
		return;
	}
	n = snprintf(buf, len, "%s %s %.1f s", jstr(exp, "name"), jstr(exp, "state"),
		     jnum(exp, "elapsed_s"));
	if (n < 0 || (size_t)n >= len)
		return;
	if (pp != NULL)
		snprintf(buf + n, len - (size_t)n, ": %" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT
			 " iterations, %.3f Gbps, %.0f req/s, p50 %.1f us, p99 %.1f us%s",
			 jint(pp, "iterations"), jint(pp, "repeat"), jnum(pp, "goodput_gbps"),
			 jnum(pp, "requests_per_s"), jnum(pp, "rtt_p50_us"), jnum(pp, "rtt_p99_us"),
			 json_is_true(json_object_get(pp, "warming")) ? " (warming up)" : "");
	else if (sv != NULL)
		snprintf(buf + n, len - (size_t)n, ": push %" JSON_INTEGER_FORMAT ", pull %"
			 JSON_INTEGER_FORMAT ", pushpull %" JSON_INTEGER_FORMAT ", rounds %"
			 JSON_INTEGER_FORMAT, jint(sv, "push"), jint(sv, "pull"),
			 jint(sv, "pushpull"), jint(sv, "rounds_closed"));
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

static void
print_experiment(const json_t *exp)
{
	const json_t *pp = json_object_get(exp, "pushpull");
	const json_t *sv = json_object_get(exp, "serve");

	if (jint(exp, "id") == 0) {
		printf("experiment: none yet\n");
		return;
	}
	printf("experiment %" JSON_INTEGER_FORMAT " \"%s\" (%s): %s, %.3f s\n", jint(exp, "id"),
	       jstr(exp, "name"), jstr(exp, "kind"), jstr(exp, "state"), jnum(exp, "elapsed_s"));
	if (pp != NULL) {
		printf("  iterations %" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT "%s, requests %"
		       JSON_INTEGER_FORMAT ", %.3f Gbps, %.0f req/s\n", jint(pp, "iterations"),
		       jint(pp, "repeat"), json_is_true(json_object_get(pp, "warming")) ?
		       " (warming up)" : "", jint(pp, "requests"), jnum(pp, "goodput_gbps"),
		       jnum(pp, "requests_per_s"));
		printf("  rtt p50 %.1f us, p99 %.1f us, mean %.1f us; retries %" JSON_INTEGER_FORMAT
		       ", failed %" JSON_INTEGER_FORMAT "\n", jnum(pp, "rtt_p50_us"),
		       jnum(pp, "rtt_p99_us"), jnum(pp, "rtt_mean_us"), jint(pp, "retries"),
		       jint(pp, "failed"));
		printf("  staleness of pushes (versions): mean %.2f, p99 %" JSON_INTEGER_FORMAT
		       ", max %" JSON_INTEGER_FORMAT "\n", jnum(pp, "staleness_mean"),
		       jint(pp, "staleness_p99"), jint(pp, "staleness_max"));
	}
	if (sv != NULL)
		printf("  push %" JSON_INTEGER_FORMAT ", pull %" JSON_INTEGER_FORMAT ", pushpull %"
		       JSON_INTEGER_FORMAT ", rounds %" JSON_INTEGER_FORMAT ", summed %"
		       JSON_INTEGER_FORMAT " B\n", jint(sv, "push"), jint(sv, "pull"),
		       jint(sv, "pushpull"), jint(sv, "rounds_closed"), jint(sv, "bytes_summed"));
	if (json_object_get(exp, "results") != NULL)
		printf("results: %s\n", jstr(exp, "results"));
	if (json_object_get(exp, "error") != NULL)
		printf("error: %s\n", jstr(exp, "error"));
}

/* Sleep ms, or less when Ctrl-C comes. */
static void
nap(int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;

	while (!g_interrupted && now_ms() < end)
		poll(NULL, 0, (int)(end - now_ms()));
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

static int
do_start(struct conn *c, const char *file, int wait)
{
	char line[512];
	const char *name;
	json_t *req = cmd("start"), *reply, *exp = NULL;
	json_int_t id;
	int tty = isatty(STDOUT_FILENO), rc;
	uint64_t next;

	if (file != NULL)
		json_object_set_new(req, "experiment", read_doc(file));
	reply = request_id(c, req, 1);
	if (reply == NULL)
		return 130;
	if (reply_error(reply)) {
		json_decref(reply);
		return EXIT_REFUSED;
	}
	id = jint(json_object_get(reply, "experiment"), "id");
	name = jstr(json_object_get(reply, "experiment"), "name");
	if (g_json)
		print_json(reply);
	else
		printf("experiment %" JSON_INTEGER_FORMAT " \"%s\" started; results will go to "
		       "%s\n", id, name, jstr(json_object_get(reply, "experiment"), "results"));
	fflush(stdout);
	json_decref(reply);
	if (!wait)
		return 0;

	/* sample each second, faster on a terminal where the line is redrawn in place */
	next = now_ms();
	for (;;) {
		nap((int)(next > now_ms() ? next - now_ms() : 0));
		if (g_interrupted)
			break;
		next += tty ? 250 : 1000;
		reply = request(c, cmd("status"));
		if (reply == NULL)
			break;
		if (reply_error(reply)) {
			json_decref(reply);
			return EXIT_REFUSED;
		}
		exp = json_incref(json_object_get(reply, "experiment"));
		json_decref(reply);
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
			progress_line(exp, line, sizeof(line));
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
	if (g_json) {
		print_json(exp);
	} else {
		printf("experiment %" JSON_INTEGER_FORMAT " \"%s\": %s after %.3f s\n", id,
		       jstr(exp, "name"), jstr(exp, "state"), jnum(exp, "elapsed_s"));
		progress_line(exp, line, sizeof(line));
		printf("%s\n", line);
		if (json_object_get(exp, "results") != NULL)
			printf("results: %s\n", jstr(exp, "results"));
		if (json_object_get(exp, "error") != NULL)
			printf("error: %s\n", jstr(exp, "error"));
	}
	rc = strcmp(jstr(exp, "state"), "failed") == 0 ? EXIT_REFUSED : 0;
	if (rc != 0)
		fprintf(stderr, "psbctl: experiment %" JSON_INTEGER_FORMAT " failed%s%s\n", id,
			json_object_get(exp, "error") != NULL ? ": " : "", jstr(exp, "error"));
	json_decref(exp);
	return rc;
}

/* status and counters, once or every watch_ms over one connection until Ctrl-C. */
static int
do_show(struct conn *c, const char *what, const char *filter, int watch_ms)
{
	int tty = isatty(STDOUT_FILENO);
	uint64_t next = now_ms();
	char line[512], stamp[32];
	json_t *req, *reply;
	time_t t;

	for (;;) {
		req = cmd(what);
		if (filter != NULL)
			json_object_set_new(req, "filter", json_string(filter));
		reply = request(c, req);
		if (reply == NULL)
			break;
		if (reply_error(reply)) {
			json_decref(reply);
			return EXIT_REFUSED;
		}
		if (g_json) {
			print_json(reply);
		} else if (strcmp(what, "counters") == 0) {
			if (watch_ms != 0) {
				t = time(NULL);
				strftime(stamp, sizeof(stamp), "%H:%M:%S", localtime(&t));
				printf("--- %s\n", stamp);
			}
			flatten(filter != NULL ? filter : "", json_object_get(reply, "counters"));
			fflush(stdout);
		} else if (watch_ms != 0) {
			progress_line(json_object_get(reply, "experiment"), line, sizeof(line));
			show_progress(line, tty);
		} else {
			printf("role: %s, up %.1f s%s\n", jstr(reply, "role"), jnum(reply, "uptime_s"),
			       json_is_true(json_object_get(reply, "loaded")) ?
			       ", an experiment is loaded" : "");
			print_experiment(json_object_get(reply, "experiment"));
		}
		json_decref(reply);
		if (watch_ms == 0)
			return 0;
		next += (uint64_t)watch_ms;
		nap((int)(next > now_ms() ? next - now_ms() : 0));
		if (g_interrupted)
			break;
	}
	if (tty && !g_json && strcmp(what, "status") == 0)
		putchar('\n');
	return 0;
}

static int
print_list(const json_t *reply)
{
	const json_t *exps = json_object_get(reply, "experiments"), *e, *k;
	size_t i;

	if (json_array_size(exps) == 0)
		printf("no experiments yet\n");
	else
		printf("%-4s %-24s %-9s %-8s %10s  %s\n", "id", "name", "kind", "state", "elapsed_s",
		       "results");
	json_array_foreach(exps, i, e)
		printf("%-4" JSON_INTEGER_FORMAT " %-24s %-9s %-8s %10.3f  %s\n", jint(e, "id"),
		       jstr(e, "name"), jstr(e, "kind"), jstr(e, "state"), jnum(e, "elapsed_s"),
		       jstr(e, "results"));
	printf("kinds:");
	json_array_foreach(json_object_get(reply, "kinds"), i, k)
		printf("%s %s", i ? "," : "", json_string_value(k));
	printf("\n");
	if (json_is_string(json_object_get(reply, "loaded")))
		printf("loaded: %s\n", jstr(reply, "loaded"));
	return 0;
}

static void
print_human(const char *name, const json_t *reply, char *const *args)
{
	const json_t *exp = json_object_get(reply, "experiment"), *cmds;
	const char *key;
	const json_t *v;

	if (strcmp(name, "stop") == 0) {
		print_experiment(exp);
	} else if (strcmp(name, "reset_state") == 0) {
		printf("state reset: counters and metrics zeroed (servers: and the store)\n");
	} else if (strcmp(name, "list") == 0) {
		print_list(reply);
	} else if (strcmp(name, "set") == 0) {
		printf("%s = %s (%s)\n", args[0], args[1], json_is_true(json_object_get(reply,
		       "live")) ? "changed in the running experiment" : "for the next experiment");
	} else if (strcmp(name, "load") == 0) {
		printf("loaded \"%s\" (%s); 'psbctl start' runs it\n", jstr(reply, "name"),
		       jstr(reply, "kind"));
	} else if (strcmp(name, "clear_port_stats") == 0) {
		printf("port statistics cleared on %" JSON_INTEGER_FORMAT " port(s)\n",
		       jint(reply, "cleared"));
	} else if (strcmp(name, "quit") == 0) {
		printf("psb is quitting\n");
	} else if (strcmp(name, "help") == 0) {
		cmds = json_object_get(reply, "commands");
		json_object_foreach((json_t *)cmds, key, v)
			printf("  %-18s %s\n", key, json_string_value(v));
	}
}

/* raw: the line goes as typed and the reply line comes back as sent. */
static int
do_raw(struct conn *c, const char *text)
{
	json_t *reply;
	char *line;
	int rc;

	if (strchr(text, '\n') != NULL)
		psb_die("raw: one request line expected (no newline in it)");
	conn_send(c, text);
	line = conn_read_line(c);
	if (line == NULL)
		return 130;
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
	{ NULL, 0, NULL, 0 },
};

/* Commands with their number of arguments: at least min, at most max. */
static const struct {
	const char *name;
	int min, max;
} commands[] = {
	{ "start", 0, 1 }, { "stop", 0, 0 }, { "status", 0, 0 }, { "counters", 0, 1 },
	{ "reset_state", 0, 0 }, { "list", 0, 0 }, { "set", 2, 2 }, { "load", 1, 1 },
	{ "clear_port_stats", 0, 1 }, { "quit", 0, 0 }, { "help", 0, 0 }, { "raw", 1, 1 },
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
	uint64_t ns;
	struct sigaction sa;
	struct conn c;
	json_t *req, *reply;
	char **args;
	size_t i;

	psb_cli_prog("psbctl");
	while ((opt = getopt_long(argc, argv, "p:h", long_opts, NULL)) != -1) {
		switch (opt) {
		case OPT_CTL: ctl = optarg; break;
		case 'p': prefix = optarg; break;
		case OPT_JSON: g_json = 1; break;
		case OPT_TIMEOUT:
			ns = psb_cli_seconds_ns("--timeout", optarg);
			if (ns < 1000000 || ns > 86400ull * 1000000000)
				psb_die("--timeout: expected 0.001 to 86400 seconds, got '%s'", optarg);
			g_timeout_ms = (int)(ns / 1000000);
			break;
		case OPT_WAIT: wait = 1; break;
		case OPT_KEEP: keep = (long)psb_cli_u64("--keep", optarg, 0, 1000000000); break;
		case OPT_OLDER: older = age_seconds(optarg); break;
		case OPT_DRY: dry = 1; break;
		case OPT_WATCH:
			ns = psb_cli_seconds_ns("--watch", optarg);
			if (ns < 10000000 || ns > 86400ull * 1000000000)
				psb_die("--watch: expected 0.01 to 86400 seconds, got '%s'", optarg);
			watch_ms = (int)(ns / 1000000);
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return EXIT_USAGE;
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
		} else if (strcmp(name, "clear_port_stats") == 0 && nargs > 0) {
			json_object_set_new(req, "port", strcmp(args[0], "all") == 0 ?
				json_string("all") : json_integer((json_int_t)psb_cli_u64("PORT",
				args[0], 0, 65535)));
		}
		reply = request(&c, req);
		if (reply == NULL) {
			rc = 130;
		} else {
			rc = reply_error(reply);
			if (rc == 0 && g_json)
				print_json(reply);
			else if (rc == 0)
				print_human(name, reply, args);
			json_decref(reply);
		}
	}
	conn_close(&c);
	free(found);
	return rc;
}
