/*
 * psb-scrape: reads psb's counter exports at a fixed rate, to measure what monitoring costs.
 * HTTP is libcurl's (one easy handle per target, kept with its connection between rounds);
 * every reply is parsed to tell a good one: JSON replies by yajl's event parser, which checks
 * the whole text and the shape without building a tree (jansson, which builds one, took a
 * measured 6x longer and made the scraper the largest part of what monitoring cost), and a
 * bad one again by jansson to say what is wrong. Hello, sections and report are jansson's.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <yajl/yajl_parse.h>

#include "psb_cli.h"

#define NS_PER_S	1000000000ull
#define REQ_TIMEOUT_NS	(2 * NS_PER_S)
#define MAX_REPLY	(64u << 20)	/* a counter export this large is not psb's */
#define TEL_MIN_BUF	(256u << 10)	/* above DPDK 22.11's 16 KB: a newer one may send more */
#define MIN_ROOM	4096
#define EXCERPT		80		/* bytes of a bad reply quoted in its error */

enum kind { K_CTL, K_TEL, K_HTTP };

/* What is known of a Prometheus page as it comes in, without keeping it. */
struct prom_page {
	uint64_t len;
	int sol;			/* bytes of "# TYPE " matched at a line's start, or -1 */
	bool typed;			/* a "# TYPE" line came */
	char last;			/* its last byte so far */
};

struct target {
	enum kind kind;
	const char *spec;		/* as given, to name the target in errors */
	int tried;			/* connected (or tried) before: the next is a reconnect */
	/* ctl:, tel: a unix socket of psb's or DPDK's own protocol */
	struct sockaddr_un addr;
	char *req;			/* ctl: the request line */
	size_t reqlen;
	json_t *cmds;			/* tel: the commands of a round, as the connection found */
	int fd;
	char *buf;
	size_t len, cap;
	/* http: a libcurl handle kept between rounds, and with it its kept-alive connection */
	char url[96];
	CURL *curl;
	char curl_err[CURL_ERROR_SIZE];
	bool oversize;
	struct prom_page page;
};

struct totals {
	uint64_t rounds, replies, bytes, errors, reconnects;
};

static volatile sig_atomic_t g_stop;
static sigset_t g_waitmask;	/* SIGINT and SIGTERM are taken only while waiting, with this */
static struct totals g_tot;
static char g_why[256];		/* why the current request failed */
static char g_last_error[320];
static struct curl_slist *g_http_headers;

static void
usage(FILE *out)
{
	fprintf(out,
"Usage: psb-scrape [--hz N] [--seconds S] [--stdin] TARGET...\n"
"Reads psb's counter exports at a fixed rate over persistent connections, as a monitoring\n"
"system would, and prints one JSON line of totals, with its own CPU time, at the end.\n"
"Targets (one request to each, in order, makes a round):\n"
"  ctl:PATH        psb's control socket: {\"cmd\":\"counters\"}\n"
"  tel:PATH        a DPDK telemetry socket (<runtime dir>/PREFIX/dpdk_telemetry.v2): each\n"
"                  section /psb/counters lists (/psb/node, /psb/ports, ...), counted as one\n"
"                  reply; /psb/counters alone of a psb that lists none (it gives them all)\n"
"  http:HOST:PORT  psb's Prometheus endpoint (HOST an IPv4 address): GET /metrics\n"
"Options:\n"
"  --hz N          rounds per second (1 to 1000, default 10)\n"
"  --seconds S     stop after S seconds (default: at SIGINT or SIGTERM)\n"
"  --stdin         start paused and take commands from stdin, one a line:\n"
"                    on      scrape (rounds at --hz from now)\n"
"                    off     pause\n"
"                    report  print the totals line now\n"
"                    quit    print it and exit (so does the end of stdin)\n"
"  --version       psb-scrape's version and the git revision it was built from\n"
"  -h, --help      this text\n"
"A request (tel: a round's) gets 2 s. A failed one counts as an error and its connection\n"
"is reopened in the next round; an HTTP request that finds its kept-alive connection\n"
"closed is retried once on a new one.\n"
"Output: {\"rounds\":R,\"replies\":N,\"bytes\":B,\"errors\":E,\"reconnects\":C,\"cpu_s\":X,\n"
"\"wall_s\":Y,\"last_error\":\"TARGET: why\"} where bytes counts reply payloads, reconnects\n"
"the connections opened (or tried) after a target's first, cpu_s this process's user and\n"
"system time; psb_version and git_revision say what build psb-scrape is.\n"
"Exit status: 0 done, 2 usage errors.\n");
}

static void
on_signal(int sig)
{
	g_stop = 1;
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static int why(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
why(int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(g_why, sizeof(g_why), fmt, ap);
	va_end(ap);
	return rc;
}

static int
wait_why(int rc, const char *what)
{
	if (rc == -ETIMEDOUT)
		return why(rc, "%s: no answer within %llu s", what,
			   (unsigned long long)(REQ_TIMEOUT_NS / NS_PER_S));
	if (rc == -EINTR)
		return why(rc, "%s: interrupted", what);
	return why(rc, "%s: %s", what, strerror(-rc));
}

/* A reply that is not what was asked for: why, with its first bytes. */
static int
bad_reply(const char *what, const char *buf, size_t n)
{
	return why(-EPROTO, "%s: %.*s", what, (int)(n < EXCERPT ? n : EXCERPT), buf);
}

/* A reply jansson could not parse: where and why, with its first bytes. */
static int
not_json(const json_error_t *err, const char *buf, size_t n)
{
	return why(-EPROTO, "reply not JSON (%s at byte %d): %.*s", err->text, err->position,
		   (int)(n < EXCERPT ? n : EXCERPT), buf);
}

static struct timespec
ts_of(uint64_t ns)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(ns / NS_PER_S);
	ts.tv_nsec = (long)(ns % NS_PER_S);
	return ts;
}

/* 0 once fd is ready for events (or in error, which the next call reports). */
static int
wait_fd(int fd, short events, uint64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	struct timespec ts;
	uint64_t now;
	int n;

	for (;;) {
		now = now_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		ts = ts_of(deadline - now);
		n = ppoll(&p, 1, &ts, &g_waitmask);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
		/* a signal that ends the run must not wait out a slow peer */
		if (n < 0 && g_stop)
			return -EINTR;
	}
}

static int
reserve(struct target *t, size_t room)
{
	size_t cap = t->cap != 0 ? t->cap : 16384;
	char *b;

	if (t->cap - t->len >= room)
		return 0;
	while (cap - t->len < room)
		cap *= 2;
	if (cap > MAX_REPLY + MIN_ROOM)
		return why(-EMSGSIZE, "reply larger than %u MiB", MAX_REPLY >> 20);
	b = realloc(t->buf, cap);
	if (b == NULL)
		return why(-ENOMEM, "out of memory");
	t->buf = b;
	t->cap = cap;
	return 0;
}

/* One recv() into buf, waiting for data until deadline: its length, or a negative errno. */
static ssize_t
recv_wait(struct target *t, void *buf, size_t len, int flags, uint64_t deadline,
	  const char *what)
{
	ssize_t n;
	int rc;

	for (;;) {
		n = recv(t->fd, buf, len, flags);
		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return why(-errno, "%s: %s", what, strerror(errno));
		rc = wait_fd(t->fd, POLLIN, deadline);
		if (rc < 0)
			return wait_why(rc, what);
	}
}

/* Appends what the stream has: 1, or 0 at its end, or a negative errno. */
static int
fill(struct target *t, uint64_t deadline)
{
	ssize_t n;
	int rc;

	rc = reserve(t, MIN_ROOM);
	if (rc < 0)
		return rc;
	n = recv_wait(t, t->buf + t->len, t->cap - t->len, 0, deadline, "recv");
	if (n <= 0)
		return (int)n;
	t->len += (size_t)n;
	return 1;
}

static int
send_all(struct target *t, const char *req, size_t len, uint64_t deadline)
{
	size_t off = 0;
	ssize_t n;
	int rc;

	while (off < len) {
		n = send(t->fd, req + off, len - off, MSG_NOSIGNAL);
		if (n >= 0) {
			off += (size_t)n;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return why(-errno, "send: %s", strerror(errno));
		rc = wait_fd(t->fd, POLLOUT, deadline);
		if (rc < 0)
			return wait_why(rc, "send");
	}
	return 0;
}

static void
conn_close(struct target *t)
{
	if (t->curl != NULL) {
		/* its connection goes with it: the next request opens a new one */
		curl_easy_cleanup(t->curl);
		t->curl = NULL;
	}
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	t->len = 0;
}

/* The telemetry server speaks first; its hello says how large a reply may be. */
static int
tel_hello(struct target *t, uint64_t deadline)
{
	size_t room = TEL_MIN_BUF;
	json_error_t err;
	json_t *hello, *max;
	ssize_t n;
	int rc;

	rc = reserve(t, room);
	if (rc < 0)
		return rc;
	n = recv_wait(t, t->buf, t->cap, 0, deadline, "hello");
	if (n < 0)
		return (int)n;
	if (n == 0)
		return why(-ECONNRESET, "closed before its hello (too many clients?)");
	hello = json_loadb(t->buf, (size_t)n, 0, &err);
	if (hello == NULL)
		return not_json(&err, t->buf, (size_t)n);
	if (!json_is_object(hello)) {
		json_decref(hello);
		return bad_reply("not a telemetry hello", t->buf, (size_t)n);
	}
	max = json_object_get(hello, "max_output_len");
	if (json_is_integer(max) && json_integer_value(max) >= (json_int_t)room &&
	    json_integer_value(max) < (json_int_t)MAX_REPLY)
		room = (size_t)json_integer_value(max) + 1;
	json_decref(hello);
	return reserve(t, room);
}

/*
 * What a good reply looks like, checked as yajl reads it: one object whose member key (its
 * depth-1 key) is an object; for a control-socket reply also "ok": true beside it; for a
 * telemetry reply that object not {"error": "..."} alone. Numbers of any size are text here.
 */
struct shape {
	const char *key;
	int depth;		/* objects and arrays open */
	bool top_map;		/* the reply is an object */
	int at;			/* the depth-1 key just read: 1 key, 2 "ok", 0 another */
	bool in_key;		/* inside key's object (depth 2 is its own) */
	bool found, ok_true;
	unsigned int keys;	/* key's object: members */
	bool first_error;	/* its first member is "error" ... */
	bool error_str;		/* ... and a string */
};

static int
sh_value(struct shape *sh, int is_true, int is_str)
{
	if (sh->depth == 0)
		return 0;	/* a reply that is not an object */
	if (sh->depth == 1 && sh->at == 2 && is_true)
		sh->ok_true = true;
	if (sh->depth == 2 && sh->in_key && sh->keys == 1 && sh->first_error && is_str)
		sh->error_str = true;
	if (sh->depth == 1)
		sh->at = 0;
	return 1;
}

static int sh_null(void *c) { return sh_value(c, 0, 0); }
static int sh_bool(void *c, int b) { return sh_value(c, b, 0); }
static int sh_number(void *c, const char *s, size_t l) { return sh_value(c, 0, 0); }
static int sh_string(void *c, const unsigned char *s, size_t l) { return sh_value(c, 0, 1); }

static int
sh_open(void *c)
{
	struct shape *sh = c;

	if (sh->depth == 0)
		sh->top_map = true;
	if (sh->depth == 1 && sh->at == 1) {
		sh->found = true;
		sh->in_key = true;
	}
	if (sh->depth == 1)
		sh->at = 0;
	sh->depth++;
	return 1;
}

static int
sh_open_array(void *c)
{
	struct shape *sh = c;

	if (sh->depth == 0)
		return 0;
	if (sh->depth == 1)
		sh->at = 0;
	sh->depth++;
	return 1;
}

static int
sh_close(void *c)
{
	struct shape *sh = c;

	if (--sh->depth == 1)
		sh->in_key = false;
	return 1;
}

static int
sh_key(void *c, const unsigned char *k, size_t l)
{
	struct shape *sh = c;

	if (sh->depth == 1)
		sh->at = strlen(sh->key) == l && memcmp(k, sh->key, l) == 0 ? 1 :
			 l == 2 && memcmp(k, "ok", 2) == 0 ? 2 : 0;
	if (sh->depth == 2 && sh->in_key && ++sh->keys == 1)
		sh->first_error = l == 5 && memcmp(k, "error", 5) == 0;
	return 1;
}

static const yajl_callbacks sh_callbacks = {
	.yajl_null = sh_null, .yajl_boolean = sh_bool, .yajl_number = sh_number,
	.yajl_string = sh_string, .yajl_start_map = sh_open, .yajl_map_key = sh_key,
	.yajl_end_map = sh_close, .yajl_start_array = sh_open_array,
	.yajl_end_array = sh_close,
};

/* Whether buf[0..n) is whole JSON of the good shape (see struct shape). */
static bool
reply_good(const char *buf, size_t n, const char *key, bool need_ok)
{
	struct shape sh = { .key = key };
	yajl_handle h = yajl_alloc(&sh_callbacks, NULL, &sh);
	bool good;

	if (h == NULL)
		return false;	/* then jansson says it */
	good = yajl_parse(h, (const unsigned char *)buf, n) == yajl_status_ok &&
	       yajl_complete_parse(h) == yajl_status_ok;
	yajl_free(h);
	return good && sh.top_map && sh.found && (!need_ok || sh.ok_true) &&
	       !(sh.keys == 1 && sh.error_str);
}

/*
 * Counters may be unsigned 64-bit: read as reals, so that one past INT64_MAX is a number
 * and not a parse error (only the reply's shape matters here).
 */
#define COUNTERS_JSON	JSON_DECODE_INT_AS_REAL

/*
 * DPDK answers {"CMD":{...}}; null in place of the object when it has no such command (not
 * psb), and psb {"CMD":{"error":"..."}} when it cannot answer it. The reply to *r if r is not
 * NULL, its bytes to *bytes.
 */
static int
tel_reply(struct target *t, const char *cmd, uint64_t deadline, json_t **r, uint64_t *bytes)
{
	json_error_t err;
	json_t *j, *o;
	ssize_t n;
	int rc = 0;

	/* MSG_TRUNC: the whole message's length, to tell a truncated one */
	n = recv_wait(t, t->buf, t->cap, MSG_TRUNC, deadline, "recv");
	if (n < 0)
		return (int)n;
	if (n == 0)
		return why(-ECONNRESET, "closed before the reply");
	if ((size_t)n > t->cap)
		return why(-EMSGSIZE, "reply of %zd bytes does not fit in %zu", n, t->cap);
	if (r == NULL && reply_good(t->buf, (size_t)n, cmd, false)) {
		if (bytes != NULL)
			*bytes += (uint64_t)n;
		return 0;
	}
	j = json_loadb(t->buf, (size_t)n, COUNTERS_JSON, &err);
	if (j == NULL)
		return not_json(&err, t->buf, (size_t)n);
	o = json_object_get(j, cmd);
	if (!json_is_object(o))
		rc = bad_reply("not a reply to the command", t->buf, (size_t)n);
	else if (json_object_size(o) == 1 && json_is_string(json_object_get(o, "error")))
		rc = why(-EPROTO, "%s: psb refused: %s", cmd,
			 json_string_value(json_object_get(o, "error")));
	if (rc < 0 || r == NULL)
		json_decref(j);
	else
		*r = j;
	if (rc == 0 && bytes != NULL)
		*bytes += (uint64_t)n;
	return rc;
}

static int
tel_ask(struct target *t, const char *cmd, uint64_t deadline, json_t **r, uint64_t *bytes)
{
	int rc = send_all(t, cmd, strlen(cmd), deadline);

	return rc < 0 ? rc : tel_reply(t, cmd, deadline, r, bytes);
}

/*
 * The commands of a round: the sections this psb's /psb/counters lists, one endpoint each.
 * A psb before them lists none: its /psb/counters gives every counter in one reply.
 */
static int
tel_sections(struct target *t, uint64_t deadline)
{
	const char *key;
	json_t *r, *v;
	int rc;

	rc = tel_ask(t, "/psb/counters", deadline, &r, NULL);
	if (rc < 0)
		return rc;
	json_decref(t->cmds);
	t->cmds = json_array();
	json_object_foreach(json_object_get(json_object_get(r, "/psb/counters"), "sections"),
			    key, v)
		if (json_is_string(v))
			json_array_append(t->cmds, v);
	if (json_array_size(t->cmds) == 0)
		json_array_append_new(t->cmds, json_string("/psb/counters"));
	json_decref(r);
	return 0;
}

static int
conn_open(struct target *t, uint64_t deadline)
{
	int type = t->kind == K_TEL ? SOCK_SEQPACKET : SOCK_STREAM;
	socklen_t sl = sizeof(int);
	int fd, rc, err = 0;

	if (t->tried)
		g_tot.reconnects++;
	t->tried = 1;
	fd = socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return why(-errno, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&t->addr, sizeof(t->addr)) != 0) {
		if (errno != EINPROGRESS) {
			rc = -errno;
			close(fd);
			return why(rc, "connect: %s", strerror(-rc));
		}
		rc = wait_fd(fd, POLLOUT, deadline);
		if (rc == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) != 0)
			rc = -errno;
		else if (rc == 0 && err != 0)
			rc = -err;
		if (rc < 0) {
			close(fd);
			return wait_why(rc, "connect");
		}
	}
	t->fd = fd;
	t->len = 0;
	if (t->kind == K_TEL) {
		rc = tel_hello(t, deadline);
		if (rc == 0)
			rc = tel_sections(t, deadline);
		if (rc < 0) {
			conn_close(t);
			return rc;
		}
	}
	return 0;
}

/* psb answers {"counters":{...},"ok":true}, or {"error":{"code":...,"message":...}}. */
static int
ctl_reply(const char *buf, size_t n)
{
	json_t *r, *e;
	json_error_t err;
	int rc;

	if (reply_good(buf, n, "counters", true))
		return 0;
	r = json_loadb(buf, n, COUNTERS_JSON, &err);
	if (r == NULL)
		return not_json(&err, buf, n);
	e = json_object_get(r, "error");
	if (json_is_true(json_object_get(r, "ok")) &&
	    json_is_object(json_object_get(r, "counters")))
		rc = 0;
	else if (json_is_object(e))
		rc = why(-EPROTO, "psb refused: %s: %s",
			 json_string_value(json_object_get(e, "code")) ?: "?",
			 json_string_value(json_object_get(e, "message")) ?: "");
	else
		rc = bad_reply("not a counters reply", buf, n);
	json_decref(r);
	return rc;
}

/*
 * A socket target's request of the round: the control socket's line, or every telemetry
 * section's command back to back (DPDK's telemetry thread reads one message at a time and
 * answers each, so it serves the round in one go rather than waking, and waking this
 * program, once a section). The replies are read by sock_recv.
 */
static int
sock_send(struct target *t, uint64_t deadline)
{
	json_t *cmd;
	size_t i;
	int rc;

	if (t->fd < 0) {
		rc = conn_open(t, deadline);
		if (rc < 0)
			return rc;
	}
	if (t->kind == K_CTL) {
		t->len = 0;
		return send_all(t, t->req, t->reqlen, deadline);
	}
	json_array_foreach(t->cmds, i, cmd) {
		rc = send_all(t, json_string_value(cmd), strlen(json_string_value(cmd)), deadline);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int
ctl_recv(struct target *t, uint64_t deadline, uint64_t *bytes)
{
	size_t scanned = 0, n;
	char *nl = NULL;
	int rc;

	while (nl == NULL) {
		if (t->len > scanned)
			nl = memchr(t->buf + scanned, '\n', t->len - scanned);
		if (nl != NULL)
			break;
		scanned = t->len;
		rc = fill(t, deadline);
		if (rc == 0)
			return why(-ECONNRESET, "closed before the reply");
		if (rc < 0)
			return rc;
	}
	n = (size_t)(nl - t->buf);
	rc = ctl_reply(t->buf, n);
	if (rc < 0)
		return rc;
	*bytes = n + 1;
	t->len = 0;
	return 0;
}

static int
sock_recv(struct target *t, uint64_t deadline, uint64_t *bytes)
{
	json_t *cmd;
	size_t i;
	int rc;

	if (t->kind == K_CTL)
		return ctl_recv(t, deadline, bytes);
	json_array_foreach(t->cmds, i, cmd) {
		rc = tel_reply(t, json_string_value(cmd), deadline, NULL, bytes);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/*
 * A Prometheus text page, checked as it comes: complete, it ends with a newline and has
 * at least one "# TYPE" line. Once one came, only the page's last byte is looked at.
 */
static void
prom_feed(struct prom_page *pg, const char *b, size_t n)
{
	static const char type[] = "# TYPE ";
	const char *end = b + n, *nl;

	if (n == 0)
		return;
	pg->len += n;
	pg->last = end[-1];
	while (!pg->typed && b < end) {
		if (pg->sol >= 0) {
			while (b < end && pg->sol < (int)sizeof(type) - 1 && *b == type[pg->sol]) {
				b++;
				pg->sol++;
			}
			if (pg->sol == (int)sizeof(type) - 1)
				pg->typed = true;
			else if (b < end)
				pg->sol = -1;	/* another line: on to its end (b may be it) */
			continue;
		}
		nl = memchr(b, '\n', (size_t)(end - b));
		if (nl == NULL)
			break;
		b = nl + 1;
		pg->sol = 0;
	}
}

static size_t
http_body(char *p, size_t size, size_t nmemb, void *arg)
{
	struct target *t = arg;
	size_t n = size * nmemb;

	if (t->page.len + n > MAX_REPLY) {
		t->oversize = true;
		return 0;	/* curl ends the transfer with CURLE_WRITE_ERROR */
	}
	prom_feed(&t->page, p, n);
	return n;
}

/* Every connection libcurl opens (or tries): after a target's first, a reconnect. */
static curl_socket_t
http_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct target *t = arg;

	if (t->tried)
		g_tot.reconnects++;
	t->tried = 1;
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* Called all along a transfer: a signal that ends the run ends it too. */
static int
http_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
	      curl_off_t ulnow)
{
	return g_stop != 0;
}

#define SETOPT(c, opt, val)	(curl_easy_setopt((c), (opt), (val)) != CURLE_OK ? #opt : NULL)

/*
 * The target's handle. Its connection is kept alive and reused for as long as the server
 * keeps it: one found closed when a request would reuse it is replaced by libcurl within
 * that request (the retry once on a new one). GET /metrics HTTP/1.1 with only Host, as
 * before libcurl; no proxy whatever the environment says.
 */
static int
http_open(struct target *t)
{
	const char *bad = NULL;
	CURL *c;

	c = curl_easy_init();
	if (c == NULL)
		return why(-ENOMEM, "curl_easy_init failed");
	bad = bad ?: SETOPT(c, CURLOPT_URL, t->url);
	bad = bad ?: SETOPT(c, CURLOPT_PROXY, "");
	bad = bad ?: SETOPT(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	bad = bad ?: SETOPT(c, CURLOPT_HTTPHEADER, g_http_headers);
	bad = bad ?: SETOPT(c, CURLOPT_IPRESOLVE, (long)CURL_IPRESOLVE_V4);
	bad = bad ?: SETOPT(c, CURLOPT_TIMEOUT_MS, (long)(REQ_TIMEOUT_NS / 1000000));
	bad = bad ?: SETOPT(c, CURLOPT_NOSIGNAL, 1L);
	/* kept as long as the server keeps it, not curl's default 118 s of idleness */
	bad = bad ?: SETOPT(c, CURLOPT_MAXAGE_CONN, 365L * 86400);
	bad = bad ?: SETOPT(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)MAX_REPLY);
	bad = bad ?: SETOPT(c, CURLOPT_WRITEFUNCTION, http_body);
	bad = bad ?: SETOPT(c, CURLOPT_WRITEDATA, t);
	bad = bad ?: SETOPT(c, CURLOPT_OPENSOCKETFUNCTION, http_socket);
	bad = bad ?: SETOPT(c, CURLOPT_OPENSOCKETDATA, t);
	bad = bad ?: SETOPT(c, CURLOPT_XFERINFOFUNCTION, http_progress);
	bad = bad ?: SETOPT(c, CURLOPT_NOPROGRESS, 0L);
	bad = bad ?: SETOPT(c, CURLOPT_ERRORBUFFER, t->curl_err);
	if (bad != NULL) {
		curl_easy_cleanup(c);
		return why(-EINVAL, "libcurl %s refused %s",
			   curl_version_info(CURLVERSION_NOW)->version, bad);
	}
	t->curl = c;
	return 0;
}

static int
req_http(struct target *t, uint64_t *bytes)
{
	sigset_t blocked;
	CURLcode res;
	long status = 0;
	size_t n;
	int rc;

	if (t->curl == NULL) {
		rc = http_open(t);
		if (rc < 0)
			return rc;
	}
	memset(&t->page, 0, sizeof(t->page));
	t->oversize = false;
	t->curl_err[0] = '\0';
	/*
	 * SIGINT and SIGTERM are taken during the transfer: libcurl's poll() ends at one and
	 * http_progress() aborts. One that lands between the check of g_stop and that poll()
	 * waits for the reply, 2 s at most.
	 */
	sigprocmask(SIG_SETMASK, &g_waitmask, &blocked);
	res = g_stop ? CURLE_ABORTED_BY_CALLBACK : curl_easy_perform(t->curl);
	sigprocmask(SIG_SETMASK, &blocked, NULL);
	if (res == CURLE_ABORTED_BY_CALLBACK && g_stop)
		return why(-EINTR, "interrupted");
	if ((res == CURLE_WRITE_ERROR && t->oversize) || res == CURLE_FILESIZE_EXCEEDED)
		return why(-EMSGSIZE, "reply larger than %u MiB", MAX_REPLY >> 20);
	if (res != CURLE_OK) {
		n = strlen(t->curl_err);
		while (n > 0 && t->curl_err[n - 1] == '\n')
			t->curl_err[--n] = '\0';
		return why(res == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -EIO, "%s",
			   n > 0 ? t->curl_err : curl_easy_strerror(res));
	}
	curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200)
		return why(-EPROTO, "HTTP status %ld", status);
	if (t->page.len == 0 || t->page.last != '\n')
		return why(-EPROTO, "metrics page of %llu bytes not ended by a newline",
			   (unsigned long long)t->page.len);
	if (!t->page.typed)
		return why(-EPROTO, "no \"# TYPE\" line in %llu bytes of metrics",
			   (unsigned long long)t->page.len);
	*bytes = t->page.len;
	return 0;
}

/* The outcome of target t's request in a round: counted; 1 if the round is to end (stop). */
static int
outcome(struct target *t, int rc, uint64_t bytes)
{
	if (rc == -EINTR && g_stop) {
		/* a reply may still be coming: not one to read in a later round */
		conn_close(t);
		return 1;
	}
	if (rc < 0) {
		conn_close(t);
		g_tot.errors++;
		snprintf(g_last_error, sizeof(g_last_error), "%s: %s", t->spec, g_why);
		return 0;
	}
	g_tot.replies++;
	g_tot.bytes += bytes;
	return 0;
}

/*
 * A round: every socket target's request sent first, then their replies read in turn, so
 * that the processes answer side by side and this program waits once rather than once a
 * target; then the HTTP targets (libcurl keeps the time, 2 s a request). A socket target's
 * reply gets 2 s from when it is waited for.
 */
static void
scrape_round(struct target *ts, int nt)
{
	int rc[nt], i;
	uint64_t bytes;

	for (i = 0; i < nt; i++)
		if (ts[i].kind != K_HTTP)
			rc[i] = sock_send(&ts[i], now_ns() + REQ_TIMEOUT_NS);
	for (i = 0; i < nt; i++) {
		bytes = 0;
		if (ts[i].kind == K_HTTP)
			rc[i] = req_http(&ts[i], &bytes);
		else if (rc[i] == 0)
			rc[i] = sock_recv(&ts[i], now_ns() + REQ_TIMEOUT_NS, &bytes);
		if (outcome(&ts[i], rc[i], bytes))
			return;
	}
	g_tot.rounds++;
}

/* s as a JSON string; a byte that is not UTF-8 (a path's, or one cut short) becomes '?'. */
static json_t *
json_text(const char *s)
{
	json_t *j = json_string(s);
	char *c, *p;

	if (j != NULL)
		return j;
	c = strdup(s);
	if (c == NULL)
		return json_string("");
	for (p = c; *p != '\0'; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	j = json_string(c);
	free(c);
	return j;
}

/* Seconds to the microsecond, as the report has always given them. */
static double
us(double s)
{
	return round(s * 1e6) / 1e6;
}

static void
report(uint64_t start)
{
	struct rusage ru;
	double cpu;
	json_t *r;

	getrusage(RUSAGE_SELF, &ru);
	cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	      (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	r = json_pack("{s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:o}",
		      "rounds", (json_int_t)g_tot.rounds, "replies", (json_int_t)g_tot.replies,
		      "bytes", (json_int_t)g_tot.bytes, "errors", (json_int_t)g_tot.errors,
		      "reconnects", (json_int_t)g_tot.reconnects, "cpu_s", us(cpu),
		      "wall_s", us((double)(now_ns() - start) / 1e9),
		      "last_error", json_text(g_last_error));
	/* 15 digits: a value to the microsecond prints as it is (0.0123, not 0.01229999...) */
	if (psb_cli_json_stamp(r) == NULL ||
	    json_dumpf(r, stdout, JSON_COMPACT | JSON_REAL_PRECISION(15)) != 0)
		psb_die("cannot write the report");
	json_decref(r);
	putchar('\n');
	fflush(stdout);
}

static void
parse_unix(struct target *t, const char *path)
{
	if (path[0] == '\0')
		psb_die("%s: expected a socket path after the scheme", t->spec);
	if (strlen(path) >= sizeof(t->addr.sun_path))
		psb_die("%s: path longer than %zu bytes, the most a unix socket address holds",
			t->spec, sizeof(t->addr.sun_path) - 1);
	t->addr.sun_family = AF_UNIX;
	strcpy(t->addr.sun_path, path);
}

static void
parse_target(struct target *t, const char *spec)
{
	memset(t, 0, sizeof(*t));
	t->fd = -1;
	t->spec = spec;
	if (strncmp(spec, "ctl:", 4) == 0) {
		json_t *req = json_pack("{s:s}", "cmd", "counters");
		char *line = req != NULL ? json_dumps(req, JSON_COMPACT) : NULL;

		t->kind = K_CTL;
		parse_unix(t, spec + 4);
		/* one request a line */
		if (line == NULL || asprintf(&t->req, "%s\n", line) < 0)
			psb_die("out of memory");
		free(line);
		json_decref(req);
	} else if (strncmp(spec, "tel:", 4) == 0) {
		t->kind = K_TEL;
		parse_unix(t, spec + 4);
	} else if (strncmp(spec, "http:", 5) == 0) {
		const char *hp = spec + 5, *colon = strrchr(hp, ':');
		char host[64];
		uint64_t port;

		if (colon == NULL || colon == hp || (size_t)(colon - hp) >= sizeof(host))
			psb_die("%s: expected http:HOST:PORT, HOST an IPv4 address", spec);
		memcpy(host, hp, (size_t)(colon - hp));
		host[colon - hp] = '\0';
		t->kind = K_HTTP;
		psb_cli_ip(spec, host);		/* dotted quad: as it is in the URL */
		port = psb_cli_u64(spec, colon + 1, 1, 65535);
		snprintf(t->url, sizeof(t->url), "http://%s:%u/metrics", host, (unsigned int)port);
	} else {
		psb_die("%s: unknown target (expected ctl:PATH, tel:PATH or http:HOST:PORT)", spec);
	}
	if (t->req != NULL)
		t->reqlen = strlen(t->req);
}

/* Like psb_cli_seconds_ns, also taking a unit as in "1.5s". */
static uint64_t
parse_seconds(const char *opt, const char *v)
{
	char buf[64];
	size_t n = strlen(v);

	if (n > 1 && n < sizeof(buf) && v[n - 1] == 's') {
		memcpy(buf, v, n - 1);
		buf[n - 1] = '\0';
		v = buf;
	}
	return psb_cli_seconds_ns(opt, v);
}

struct control {
	char line[256];
	size_t len;
	int running, quit, eof;
	uint64_t next, start;
};

static void
command(struct control *c, char *s)
{
	size_t n = strlen(s);

	while (n > 0 && (s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	while (*s == ' ' || *s == '\t')
		s++;
	if (*s == '\0')
		return;
	if (strcmp(s, "on") == 0) {
		if (!c->running)
			c->next = now_ns();
		c->running = 1;
	} else if (strcmp(s, "off") == 0) {
		c->running = 0;
	} else if (strcmp(s, "report") == 0) {
		report(c->start);
	} else if (strcmp(s, "quit") == 0) {
		c->quit = 1;
	} else {
		fprintf(stderr, "psb-scrape: unknown command '%s' (on, off, report, quit)\n", s);
	}
}

/* stdio would buffer lines that poll() then does not see: read and split here. */
static void
read_commands(struct control *c)
{
	ssize_t n;
	char *nl;

	n = read(STDIN_FILENO, c->line + c->len, sizeof(c->line) - 1 - c->len);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		/* a last command without its newline still counts */
		if (c->len > 0) {
			c->line[c->len] = '\0';
			c->len = 0;
			command(c, c->line);
		}
		c->eof = 1;
		return;
	}
	c->len += (size_t)n;
	while (!c->quit && (nl = memchr(c->line, '\n', c->len)) != NULL) {
		size_t used = (size_t)(nl - c->line) + 1;

		*nl = '\0';
		command(c, c->line);
		memmove(c->line, c->line + used, c->len - used);
		c->len -= used;
	}
	if (c->len == sizeof(c->line) - 1) {
		fprintf(stderr, "psb-scrape: command line longer than %zu bytes ignored\n",
			sizeof(c->line) - 2);
		c->len = 0;
	}
}

static void
sleep_until(uint64_t wake, int use_stdin, struct control *c)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	struct timespec ts, *tp = NULL;
	sigset_t blocked;
	uint64_t now;

	if (!use_stdin) {
		/* a signal landing just before the sleep delays the exit by a period at most */
		ts = ts_of(wake);
		sigprocmask(SIG_SETMASK, &g_waitmask, &blocked);
		if (!g_stop)
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		sigprocmask(SIG_SETMASK, &blocked, NULL);
		return;
	}
	if (wake != UINT64_MAX) {
		now = now_ns();
		ts = ts_of(wake > now ? wake - now : 0);
		tp = &ts;
	}
	/* paused, this may wait for ever: ppoll takes the signal atomically with the wait */
	if (ppoll(&p, 1, tp, &g_waitmask) > 0)
		read_commands(c);
}

enum { OPT_HZ = 256, OPT_SECONDS, OPT_STDIN };

static const struct option long_opts[] = {
	{ "hz", required_argument, NULL, OPT_HZ },
	{ "seconds", required_argument, NULL, OPT_SECONDS },
	{ "stdin", no_argument, NULL, OPT_STDIN },
	{ "help", no_argument, NULL, 'h' },
	PSB_CLI_VERSION_OPTION,
	{ NULL, 0, NULL, 0 },
};

int
main(int argc, char **argv)
{
	uint64_t period, end = UINT64_MAX, dur = 0, now, wake;
	int opt, use_stdin = 0, has_end = 0, nt, i;
	struct control ctl;
	struct target *ts;
	struct sigaction sa;
	sigset_t stopsigs;

	psb_cli_prog("psb-scrape");
	period = NS_PER_S / 10;
	while ((opt = psb_cli_getopt(argc, argv, "h", long_opts, NULL)) != -1) {
		switch (opt) {
		case OPT_HZ: period = NS_PER_S / psb_cli_u64("--hz", optarg, 1, 1000); break;
		case OPT_SECONDS: dur = parse_seconds("--seconds", optarg); has_end = 1; break;
		case OPT_STDIN: use_stdin = 1; break;
		case 'h': usage(stdout); return 0;
		}
	}
	nt = argc - optind;
	if (nt <= 0)
		psb_cli_usage_error("expected at least one TARGET");
	ts = calloc((size_t)nt, sizeof(*ts));
	if (ts == NULL)
		psb_die("out of memory");
	for (i = 0; i < nt; i++)
		parse_target(&ts[i], argv[optind + i]);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		psb_die("libcurl: cannot initialise");
	/* the request psb-scrape has always sent: GET with Host alone, no Accept */
	g_http_headers = curl_slist_append(NULL, "Accept:");
	if (g_http_headers == NULL)
		psb_die("out of memory");

	/*
	 * No SA_RESTART: a signal must end a sleep or a wait for a reply at once. Blocked
	 * outside the waits, so that it cannot land between the check of g_stop and a wait.
	 */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&stopsigs);
	sigaddset(&stopsigs, SIGINT);
	sigaddset(&stopsigs, SIGTERM);
	sigprocmask(SIG_BLOCK, &stopsigs, &g_waitmask);
	sigdelset(&g_waitmask, SIGINT);
	sigdelset(&g_waitmask, SIGTERM);

	memset(&ctl, 0, sizeof(ctl));
	ctl.start = now_ns();
	ctl.next = ctl.start;
	ctl.running = !use_stdin;
	if (has_end)
		end = ctl.start + dur;
	while (!g_stop && !ctl.quit && !ctl.eof) {
		now = now_ns();
		if (now >= end)
			break;
		if (ctl.running && now >= ctl.next) {
			scrape_round(ts, nt);
			ctl.next += period;
			now = now_ns();
			/* a slow round (a peer timing out) must not be made up for by a burst */
			if (now > ctl.next + period)
				ctl.next = now;
			continue;
		}
		wake = end;
		if (ctl.running && ctl.next < wake)
			wake = ctl.next;
		sleep_until(wake, use_stdin, &ctl);
	}
	report(ctl.start);
	for (i = 0; i < nt; i++) {
		conn_close(&ts[i]);
		free(ts[i].buf);
		free(ts[i].req);
		json_decref(ts[i].cmds);
	}
	free(ts);
	curl_slist_free_all(g_http_headers);
	curl_global_cleanup();
	return 0;
}
