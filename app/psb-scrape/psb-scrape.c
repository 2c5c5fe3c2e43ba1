/* psb-scrape: reads psb's counter exports at a fixed rate, to measure what monitoring costs. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "psb_cli.h"

#define NS_PER_S	1000000000ull
#define REQ_TIMEOUT_NS	(2 * NS_PER_S)
#define MAX_REPLY	(64u << 20)	/* a counter export this large is not psb's */
#define MAX_HEADER	(64u << 10)
#define TEL_MIN_BUF	(256u << 10)	/* above DPDK 22.11's 16 KB: a newer one may send more */
#define MIN_ROOM	4096

enum kind { K_CTL, K_TEL, K_HTTP };

struct target {
	enum kind kind;
	const char *spec;		/* as given, to name the target in errors */
	struct sockaddr_storage addr;
	socklen_t addrlen;
	char req[128];
	size_t reqlen;
	int fd;
	int tried;			/* connected (or tried) before: the next is a reconnect */
	int reused;			/* the connection has carried a reply already */
	char *buf;
	size_t len, cap;
};

struct totals {
	uint64_t rounds, replies, bytes, errors, reconnects;
};

static volatile sig_atomic_t g_stop;
static sigset_t g_waitmask;	/* SIGINT and SIGTERM are taken only while waiting, with this */
static struct totals g_tot;
static char g_why[256];		/* why the current request failed */
static char g_last_error[320];

static void
usage(FILE *out)
{
	fprintf(out,
"Usage: psb-scrape [--hz N] [--seconds S] [--stdin] TARGET...\n"
"Reads psb's counter exports at a fixed rate over persistent connections, as a monitoring\n"
"system would, and prints one JSON line of totals, with its own CPU time, at the end.\n"
"Targets (one request to each, in order, makes a round):\n"
"  ctl:PATH        psb's control socket: {\"cmd\":\"counters\"}\n"
"  tel:PATH        a DPDK telemetry socket (<runtime dir>/PREFIX/dpdk_telemetry.v2):\n"
"                  /psb/counters\n"
"  http:HOST:PORT  psb's Prometheus endpoint (HOST an IPv4 address): GET /metrics\n"
"Options:\n"
"  --hz N          rounds per second (1 to 1000, default 10)\n"
"  --seconds S     stop after S seconds (default: at SIGINT or SIGTERM)\n"
"  --stdin         start paused and take commands from stdin, one a line:\n"
"                    on      scrape (rounds at --hz from now)\n"
"                    off     pause\n"
"                    report  print the totals line now\n"
"                    quit    print it and exit (so does the end of stdin)\n"
"  -h, --help      this text\n"
"A request gets 2 s. A failed one counts as an error and its connection is reopened in the\n"
"next round; an HTTP request that finds its kept-alive connection closed is retried once\n"
"on a new one.\n"
"Output: {\"rounds\":R,\"replies\":N,\"bytes\":B,\"errors\":E,\"reconnects\":C,\"cpu_s\":X,\n"
"\"wall_s\":Y,\"last_error\":\"TARGET: why\"} where bytes counts reply payloads, reconnects\n"
"the connections opened (or tried) after a target's first, cpu_s this process's user and\n"
"system time.\n"
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
	if (cap > MAX_REPLY + MAX_HEADER)
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
send_all(struct target *t, uint64_t deadline)
{
	size_t off = 0;
	ssize_t n;
	int rc;

	while (off < t->reqlen) {
		n = send(t->fd, t->req + off, t->reqlen - off, MSG_NOSIGNAL);
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
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	t->len = 0;
}

/* The telemetry server speaks first; its hello says how large a reply may be. */
static int
tel_hello(struct target *t, uint64_t deadline)
{
	static const char key[] = "\"max_output_len\":";
	size_t room = TEL_MIN_BUF;
	const char *p;
	ssize_t n;
	int rc;

	rc = reserve(t, room);
	if (rc < 0)
		return rc;
	n = recv_wait(t, t->buf, t->cap - 1, 0, deadline, "hello");
	if (n < 0)
		return (int)n;
	if (n == 0)
		return why(-ECONNRESET, "closed before its hello (too many clients?)");
	t->buf[n] = '\0';
	p = strstr(t->buf, key);
	if (p != NULL) {
		unsigned long long v = strtoull(p + sizeof(key) - 1, NULL, 10);

		if (v >= room && v < MAX_REPLY)
			room = (size_t)v + 1;
	}
	return reserve(t, room);
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
	fd = socket(t->addr.ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return why(-errno, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&t->addr, t->addrlen) != 0) {
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
	t->reused = 0;
	if (t->kind == K_TEL) {
		rc = tel_hello(t, deadline);
		if (rc < 0) {
			conn_close(t);
			return rc;
		}
	}
	return 0;
}

/* psb's ok() adds "ok" after the command's own members, so a good reply ends with it. */
static int
req_ctl(struct target *t, uint64_t deadline, uint64_t *bytes)
{
	static const char head[] = "{\"counters\":", tail[] = ",\"ok\":true}";
	size_t scanned = 0, n;
	char *nl = NULL;
	int rc;

	t->len = 0;
	rc = send_all(t, deadline);
	if (rc < 0)
		return rc;
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
	if (n < sizeof(head) - 1 + sizeof(tail) - 1 ||
	    memcmp(t->buf, head, sizeof(head) - 1) != 0 ||
	    memcmp(nl - (sizeof(tail) - 1), tail, sizeof(tail) - 1) != 0)
		return why(-EPROTO, "not a counters reply: %.*s", (int)(n < 80 ? n : 80), t->buf);
	*bytes = n + 1;
	t->len = 0;
	return 0;
}

static int
req_tel(struct target *t, uint64_t deadline, uint64_t *bytes)
{
	/* null, not an object, when the process has no /psb/counters: not psb */
	static const char head[] = "{\"/psb/counters\":{";
	ssize_t n;
	int rc;

	rc = send_all(t, deadline);
	if (rc < 0)
		return rc;
	/* MSG_TRUNC: the whole message's length, to tell a truncated one */
	n = recv_wait(t, t->buf, t->cap, MSG_TRUNC, deadline, "recv");
	if (n < 0)
		return (int)n;
	if (n == 0)
		return why(-ECONNRESET, "closed before the reply");
	if ((size_t)n > t->cap)
		return why(-EMSGSIZE, "reply of %zd bytes does not fit in %zu", n, t->cap);
	if ((size_t)n < sizeof(head) - 1 || memcmp(t->buf, head, sizeof(head) - 1) != 0)
		return why(-EPROTO, "not a /psb/counters reply: %.*s", (int)(n < 80 ? n : 80),
			   t->buf);
	*bytes = (uint64_t)n;
	return 0;
}

/* Offset of the next CRLF at or after from, reading more as needed; negative errno if none. */
static long
http_line(struct target *t, size_t from, uint64_t deadline)
{
	const char *p;
	int rc;

	for (;;) {
		if (t->len >= from + 2) {
			p = memmem(t->buf + from, t->len - from, "\r\n", 2);
			if (p != NULL)
				return p - t->buf;
		}
		if (t->len - from > MAX_HEADER)
			return why(-EPROTO, "line longer than %u KiB", MAX_HEADER >> 10);
		rc = fill(t, deadline);
		if (rc == 0)
			return why(-EPROTO, "closed in the middle of the body");
		if (rc < 0)
			return rc;
	}
}

static int
http_need(struct target *t, size_t want, uint64_t deadline)
{
	int rc;

	while (t->len < want) {
		rc = fill(t, deadline);
		if (rc == 0)
			return why(-EPROTO, "closed in the middle of the body");
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Decodes a chunked body in place from off; its length is left in *blen. */
static int
http_chunked(struct target *t, size_t off, size_t *blen, uint64_t deadline)
{
	size_t rd = off, wr = off, size;
	long nl;
	int rc;

	for (;;) {
		nl = http_line(t, rd, deadline);
		if (nl < 0)
			return (int)nl;
		size = 0;
		if (!isxdigit((unsigned char)t->buf[rd]))
			return why(-EPROTO, "bad chunk size");
		for (; rd < (size_t)nl; rd++) {
			int c = t->buf[rd], d;

			if (c >= '0' && c <= '9')
				d = c - '0';
			else if (c >= 'a' && c <= 'f')
				d = c - 'a' + 10;
			else if (c >= 'A' && c <= 'F')
				d = c - 'A' + 10;
			else if (c == ';' || c == ' ' || c == '\t')
				break;	/* chunk extensions: nothing psb would send */
			else
				return why(-EPROTO, "bad chunk size");
			size = size * 16 + (size_t)d;
			if (size > MAX_REPLY)
				return why(-EMSGSIZE, "reply larger than %u MiB", MAX_REPLY >> 20);
		}
		rd = (size_t)nl + 2;
		if (size == 0)
			break;
		if (wr - off + size > MAX_REPLY)
			return why(-EMSGSIZE, "reply larger than %u MiB", MAX_REPLY >> 20);
		rc = http_need(t, rd + size + 2, deadline);
		if (rc < 0)
			return rc;
		if (t->buf[rd + size] != '\r' || t->buf[rd + size + 1] != '\n')
			return why(-EPROTO, "chunk not followed by CRLF");
		memmove(t->buf + wr, t->buf + rd, size);
		wr += size;
		rd += size + 2;
	}
	/* trailer fields up to an empty line */
	for (;;) {
		nl = http_line(t, rd, deadline);
		if (nl < 0)
			return (int)nl;
		if ((size_t)nl == rd)
			break;
		rd = (size_t)nl + 2;
	}
	*blen = wr - off;
	return 0;
}

/* The value of header line [p, end) if its name is name, NUL-terminated in val; else NULL. */
static const char *
http_header(const char *p, const char *end, const char *name, char *val, size_t vlen)
{
	size_t nlen = strlen(name), n;

	if ((size_t)(end - p) <= nlen || strncasecmp(p, name, nlen) != 0 || p[nlen] != ':')
		return NULL;
	p += nlen + 1;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	n = (size_t)(end - p) < vlen - 1 ? (size_t)(end - p) : vlen - 1;
	memcpy(val, p, n);
	val[n] = '\0';
	return val;
}

/*
 * One GET on the open connection. *stale: it failed before any of the reply came on a
 * connection that had served before, which is how a server's closing an idle one shows.
 */
static int
http_once(struct target *t, uint64_t deadline, uint64_t *bytes, int *stale)
{
	size_t scanned = 0, hlen, blen = 0, clen = 0;
	int rc, status, keep, chunked = 0, has_len = 0;
	const char *end = NULL, *p, *eol;
	char val[128];

	*stale = 0;
	t->len = 0;
	rc = send_all(t, deadline);
	if (rc < 0) {
		*stale = t->reused && (rc == -EPIPE || rc == -ECONNRESET);
		return rc;
	}
	for (;;) {
		if (t->len >= 4) {
			end = memmem(t->buf + scanned, t->len - scanned, "\r\n\r\n", 4);
			if (end != NULL)
				break;
			scanned = t->len - 3;
		}
		if (t->len > MAX_HEADER)
			return why(-EPROTO, "headers longer than %u KiB", MAX_HEADER >> 10);
		rc = fill(t, deadline);
		if (rc == 0 || rc == -ECONNRESET) {
			*stale = t->reused && t->len == 0;
			return why(-ECONNRESET, "closed before the reply");
		}
		if (rc < 0)
			return rc;
	}
	hlen = (size_t)(end - t->buf) + 4;
	p = t->buf;
	eol = memmem(p, hlen, "\r\n", 2);
	if (eol - p < 12 || memcmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ' ||
	    !isdigit((unsigned char)p[9]) || !isdigit((unsigned char)p[10]) ||
	    !isdigit((unsigned char)p[11]))
		return why(-EPROTO, "not an HTTP/1 response: %.*s",
			   (int)(eol - p < 40 ? eol - p : 40), p);
	status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	if (status != 200)
		return why(-EPROTO, "HTTP status %d", status);
	keep = p[7] == '1';
	while (eol != NULL && eol < end) {
		p = eol + 2;
		eol = memmem(p, (size_t)(end + 2 - p), "\r\n", 2);
		if (http_header(p, eol, "content-length", val, sizeof(val)) != NULL) {
			char *e;

			errno = 0;
			clen = strtoull(val, &e, 10);
			if (val[0] < '0' || val[0] > '9' || *e != '\0' || errno != 0)
				return why(-EPROTO, "bad Content-Length '%s'", val);
			has_len = 1;
		} else if (http_header(p, eol, "transfer-encoding", val, sizeof(val)) != NULL) {
			chunked = strcasestr(val, "chunked") != NULL;
		} else if (http_header(p, eol, "connection", val, sizeof(val)) != NULL) {
			if (strcasestr(val, "close") != NULL)
				keep = 0;
			else if (strcasestr(val, "keep-alive") != NULL)
				keep = 1;
		}
	}
	if (chunked) {
		rc = http_chunked(t, hlen, &blen, deadline);
		if (rc < 0)
			return rc;
	} else if (has_len) {
		if (clen > MAX_REPLY)
			return why(-EMSGSIZE, "reply larger than %u MiB", MAX_REPLY >> 20);
		rc = http_need(t, hlen + clen, deadline);
		if (rc < 0)
			return rc;
		blen = clen;
	} else {
		/* no length: the body is all until the server closes */
		while ((rc = fill(t, deadline)) > 0)
			;
		if (rc < 0)
			return rc;
		blen = t->len - hlen;
		keep = 0;
	}
	if (memmem(t->buf + hlen, blen, "psb_node_info", 13) == NULL)
		return why(-EPROTO, "no psb_node_info in %zu bytes of metrics", blen);
	*bytes = blen;
	t->len = 0;
	t->reused = 1;
	if (!keep)
		conn_close(t);
	return 0;
}

static int
req_http(struct target *t, uint64_t deadline, uint64_t *bytes)
{
	int rc, stale;

	rc = http_once(t, deadline, bytes, &stale);
	if (rc == 0 || !stale)
		return rc;
	conn_close(t);
	deadline = now_ns() + REQ_TIMEOUT_NS;
	rc = conn_open(t, deadline);
	if (rc < 0)
		return rc;
	return http_once(t, deadline, bytes, &stale);
}

static int
request(struct target *t, uint64_t *bytes)
{
	uint64_t deadline = now_ns() + REQ_TIMEOUT_NS;
	int rc;

	if (t->fd < 0) {
		rc = conn_open(t, deadline);
		if (rc < 0)
			return rc;
	}
	switch (t->kind) {
	case K_CTL:
		return req_ctl(t, deadline, bytes);
	case K_TEL:
		return req_tel(t, deadline, bytes);
	default:
		return req_http(t, deadline, bytes);
	}
}

static void
scrape_round(struct target *ts, int nt)
{
	uint64_t bytes;
	int i, rc;

	for (i = 0; i < nt; i++) {
		bytes = 0;
		rc = request(&ts[i], &bytes);
		if (rc == -EINTR && g_stop) {
			/* a reply may still be coming: not one to read in a later round */
			conn_close(&ts[i]);
			return;
		}
		if (rc < 0) {
			conn_close(&ts[i]);
			g_tot.errors++;
			snprintf(g_last_error, sizeof(g_last_error), "%s: %s", ts[i].spec, g_why);
			continue;
		}
		g_tot.replies++;
		g_tot.bytes += bytes;
	}
	g_tot.rounds++;
}

static void
json_escape(const char *s, char *out, size_t len)
{
	size_t o = 0;

	for (; *s != '\0' && o + 7 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			o += (size_t)snprintf(out + o, len - o, "\\u%04x", c);
		} else {
			out[o++] = (char)c;
		}
	}
	out[o] = '\0';
}

static void
report(uint64_t start)
{
	char esc[sizeof(g_last_error) * 6 + 1];
	struct rusage ru;
	double cpu;

	getrusage(RUSAGE_SELF, &ru);
	cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	      (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	json_escape(g_last_error, esc, sizeof(esc));
	printf("{\"rounds\":%" PRIu64 ",\"replies\":%" PRIu64 ",\"bytes\":%" PRIu64
	       ",\"errors\":%" PRIu64 ",\"reconnects\":%" PRIu64 ",\"cpu_s\":%.6f,\"wall_s\":%.6f"
	       ",\"last_error\":\"%s\"}\n", g_tot.rounds, g_tot.replies, g_tot.bytes, g_tot.errors,
	       g_tot.reconnects, cpu, (double)(now_ns() - start) / 1e9, esc);
	fflush(stdout);
}

static void
parse_unix(struct target *t, const char *path)
{
	struct sockaddr_un *un = (struct sockaddr_un *)&t->addr;

	if (path[0] == '\0')
		psb_die("%s: expected a socket path after the scheme", t->spec);
	if (strlen(path) >= sizeof(un->sun_path))
		psb_die("%s: path longer than %zu bytes, the most a unix socket address holds",
			t->spec, sizeof(un->sun_path) - 1);
	un->sun_family = AF_UNIX;
	strcpy(un->sun_path, path);
	t->addrlen = sizeof(*un);
}

static void
parse_target(struct target *t, const char *spec)
{
	memset(t, 0, sizeof(*t));
	t->fd = -1;
	t->spec = spec;
	if (strncmp(spec, "ctl:", 4) == 0) {
		t->kind = K_CTL;
		parse_unix(t, spec + 4);
		t->reqlen = (size_t)snprintf(t->req, sizeof(t->req), "{\"cmd\":\"counters\"}\n");
	} else if (strncmp(spec, "tel:", 4) == 0) {
		t->kind = K_TEL;
		parse_unix(t, spec + 4);
		t->reqlen = (size_t)snprintf(t->req, sizeof(t->req), "/psb/counters");
	} else if (strncmp(spec, "http:", 5) == 0) {
		struct sockaddr_in *in = (struct sockaddr_in *)&t->addr;
		const char *hp = spec + 5, *colon = strrchr(hp, ':');
		char host[64];

		if (colon == NULL || colon == hp || (size_t)(colon - hp) >= sizeof(host))
			psb_die("%s: expected http:HOST:PORT, HOST an IPv4 address", spec);
		memcpy(host, hp, (size_t)(colon - hp));
		host[colon - hp] = '\0';
		t->kind = K_HTTP;
		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(psb_cli_ip(spec, host));
		in->sin_port = htons((uint16_t)psb_cli_u64(spec, colon + 1, 1, 65535));
		t->addrlen = sizeof(*in);
		t->reqlen = (size_t)snprintf(t->req, sizeof(t->req),
					     "GET /metrics HTTP/1.1\r\nHost: %s\r\n\r\n", hp);
		if (t->reqlen >= sizeof(t->req))
			psb_die("%s: expected http:HOST:PORT, HOST an IPv4 address", spec);
	} else {
		psb_die("%s: unknown target (expected ctl:PATH, tel:PATH or http:HOST:PORT)", spec);
	}
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
	while ((opt = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		switch (opt) {
		case OPT_HZ: period = NS_PER_S / psb_cli_u64("--hz", optarg, 1, 1000); break;
		case OPT_SECONDS: dur = parse_seconds("--seconds", optarg); has_end = 1; break;
		case OPT_STDIN: use_stdin = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	nt = argc - optind;
	if (nt <= 0)
		psb_die("expected at least one TARGET (psb-scrape --help)");
	ts = calloc((size_t)nt, sizeof(*ts));
	if (ts == NULL)
		psb_die("out of memory");
	for (i = 0; i < nt; i++)
		parse_target(&ts[i], argv[optind + i]);

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
	}
	free(ts);
	return 0;
}
