/* Control socket: newline-delimited JSON requests and replies on a unix socket (mode 0600). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "psb_app.h"
#include "psb_ctl.h"
#include "psb_text.h"

#define CTL_MAX_REQ	(64 * 1024)	/* a request line longer than this is refused */
#define CTL_READ_CHUNK	4096		/* input read from one client at a time, for fairness */
/* Credit of clients (run to completion) is capped at their share of this much time. */
#define CTL_BURST_NS	(100ull * 1000 * 1000)
/* Idle clients are looked for this often, not every pass. */
#define CTL_IDLE_CHECK_NS	(10ull * 1000 * 1000)

struct ctl_client {
	int fd;
	int closing;		/* close once out is written */
	int readable;		/* poll saw input this pass that recv has not drained yet */
	char *in;		/* [CTL_MAX_REQ]: input in [inoff, inlen) */
	size_t inoff, inlen;
	size_t scanned;		/* in [inoff, scanned) holds no newline */
	struct psb_text out;	/* replies; out.s + outoff on is not written yet */
	size_t outoff;
	uint64_t last_req;	/* TSC of its last request, or of its connection */
};

static struct {
	int lfd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct ctl_client *cl;	/* [nclients] */
	unsigned int nclients;
	unsigned int rr;	/* the client served first in the next pass */
	struct pollfd *pfd;	/* [nclients + 1] */
	struct ctl_client **map;
	uint64_t next_idle;	/* TSC of the next look for idle clients */
} g_ctl = { .lfd = -1 };

/*
 * The share of the main lcore control clients may take while it also runs the data plane
 * (run to completion). Credit accrues at ctl_share_pct of the time that passes, up to that
 * share of CTL_BURST_NS; serving clients spends it. A pass serves clients only with credit
 * left, so a client asking without pause gets the share and the data plane the rest.
 */
static struct {
	int on;			/* 0: no limit (worker lcores run the data plane, or 100 %) */
	int open;		/* clients may be served in this pass */
	int64_t credit;		/* TSC cycles */
	int64_t max;
	uint64_t pct;
	uint64_t last;
} g_share;

static void
share_pass(struct psb_app *app, uint64_t now)
{
	if (g_share.last == 0) {
		g_share.pct = app->conf.node.ctl_share_pct;
		g_share.on = app->nworker_lcores == 0 && g_share.pct < 100;
		g_share.max = (int64_t)(rte_get_tsc_hz() / 1000 * (CTL_BURST_NS / 1000000) *
			g_share.pct / 100);
		g_share.credit = g_share.max;
		g_share.last = now;
	}
	if (!g_share.on) {
		g_share.open = 1;
		return;
	}
	g_share.credit += (int64_t)((now - g_share.last) * g_share.pct / 100);
	if (g_share.credit > g_share.max)
		g_share.credit = g_share.max;
	g_share.last = now;
	g_share.open = g_share.credit > 0;
	if (!g_share.open)
		app->cp.throttled_passes++;
}

int
psb_cp_open(void)
{
	return g_share.open;
}

void
psb_cp_charge(uint64_t cycles)
{
	if (g_share.on)
		g_share.credit -= (int64_t)cycles;
}

int
psb_ctl_sock_init(struct psb_app *app, const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa;
	unsigned int i, n = (unsigned int)app->conf.node.ctl_clients;
	mode_t old;
	int fd;

	g_ctl.cl = calloc(n, sizeof(*g_ctl.cl));
	g_ctl.pfd = calloc(n + 1, sizeof(*g_ctl.pfd));
	g_ctl.map = calloc(n + 1, sizeof(*g_ctl.map));
	if (g_ctl.cl == NULL || g_ctl.pfd == NULL || g_ctl.map == NULL) {
		snprintf(err, errlen, "control socket: out of memory for %u clients", n);
		return -ENOMEM;
	}
	g_ctl.nclients = n;
	for (i = 0; i < n; i++)
		g_ctl.cl[i].fd = -1;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "--ctl: path longer than %zu bytes: %s", sizeof(sa.sun_path) - 1,
			 path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "control socket: %s", strerror(errno));
		return -errno;
	}
	/* a live socket belongs to another psb; a dead one is left over from a crash */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno == EAGAIN) {
		close(fd);
		snprintf(err, errlen, "--ctl: %s is in use by another process", path);
		return -EADDRINUSE;
	}
	close(fd);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	unlink(path);
	old = umask(0077);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 128) != 0) {
		umask(old);
		snprintf(err, errlen, "--ctl: cannot listen on %s: %s", path, strerror(errno));
		close(fd);
		return -errno;
	}
	umask(old);
	chmod(path, 0600);
	g_ctl.lfd = fd;
	snprintf(g_ctl.path, sizeof(g_ctl.path), "%s", path);
	snprintf(app->ctl_sock, sizeof(app->ctl_sock), "%s", path);
	return 0;
}

static void
client_close(struct ctl_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->in);
	free(c->out.s);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

static size_t
client_pending(const struct ctl_client *c)
{
	return c->out.len - c->outoff;
}

static void
client_flush(struct ctl_client *c)
{
	ssize_t n;

	while (c->outoff < c->out.len) {
		n = send(c->fd, c->out.s + c->outoff, c->out.len - c->outoff,
			 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			client_close(c);	/* gone: nothing to tell it any more */
			return;
		}
		c->outoff += (size_t)n;
	}
	if (c->outoff == c->out.len) {
		c->outoff = c->out.len = 0;
		if (c->closing)
			client_close(c);
	} else if (c->outoff > c->out.len / 2) {
		/* a reader that keeps up partly: what it took goes, so memory follows what waits */
		memmove(c->out.s, c->out.s + c->outoff, client_pending(c));
		c->out.len -= c->outoff;
		c->outoff = 0;
	}
}

/*
 * Disconnect c with a last error line, when it can still take one: not after part of a
 * reply (the line would be corrupt), and not by waiting for it to read.
 */
static void
client_drop(struct ctl_client *c, json_t *error)
{
	if (c->outoff == 0 || c->out.s[c->outoff - 1] == '\n') {
		c->out.len = c->outoff;
		psb_text_json(&c->out, error);
		psb_text_append(&c->out, "\n", 1);
		if (!c->out.oom)
			(void)!send(c->fd, c->out.s + c->outoff, client_pending(c),
				    MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	json_decref(error);
	client_close(c);
}

/* After a reply: send what the client takes; one that leaves too much unread goes. */
static void
client_sent(struct psb_app *app, struct ctl_client *c)
{
	char lim[32];

	client_flush(c);
	if (c->fd < 0 || client_pending(c) <= app->conf.node.ctl_reply_max)
		return;
	app->cp.socket_overflows++;
	psb_conf_format_size(lim, sizeof(lim), app->conf.node.ctl_reply_max);
	client_drop(c, psb_cmd_error("overflow", "more than %s of replies not read "
				     "(node.ctl_reply_max): disconnected", lim));
}

static void
client_reply(struct psb_app *app, struct ctl_client *c, json_t *reply, const json_t *req)
{
	const json_t *id = json_is_object(req) ? json_object_get(req, "id") : NULL;
	size_t before = c->out.len;

	if (id != NULL)
		json_object_set(reply, "id", (json_t *)id);
	psb_text_json(&c->out, reply);
	psb_text_append(&c->out, "\n", 1);
	json_decref(reply);
	if (c->out.oom) {
		/* no half a reply: this one is lost, the next may find memory */
		c->out.len = before;
		c->out.oom = 0;
		return;
	}
	client_sent(app, c);
}

static void
client_line(struct psb_app *app, struct ctl_client *c, const char *line, size_t len)
{
	json_error_t je;
	json_t *req;
	int quit = 0;
	size_t before;

	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	if (len == 0)
		return;
	app->cp.socket_requests++;
	req = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (req == NULL) {
		client_reply(app, c, psb_cmd_error("bad_json", "column %d: %s", je.column,
						   je.text), NULL);
		return;
	}
	before = c->out.len;
	if (json_is_object(req) && psb_cmd_exec_text(app, req, &c->out)) {
		psb_text_append(&c->out, "\n", 1);
		if (c->out.oom) {
			c->out.len = before;
			c->out.oom = 0;
			client_reply(app, c, psb_cmd_error("no_memory", "the reply did not fit in "
							   "memory"), req);
		} else {
			client_sent(app, c);
		}
	} else {
		client_reply(app, c, psb_cmd_exec(app, req, &quit), req);
	}
	json_decref(req);
	if (quit)
		app->quit = 1;
}

/* The end of the first whole line in c's input, or NULL. */
static char *
client_line_end(struct ctl_client *c)
{
	char *nl;

	if (c->scanned < c->inoff)
		c->scanned = c->inoff;
	nl = memchr(c->in + c->scanned, '\n', c->inlen - c->scanned);
	c->scanned = nl != NULL ? c->scanned : c->inlen;
	return nl;
}

/* Read at most *bytes of c's input. 1: read some, 0: nothing there, -1: c is gone. */
static int
client_read(struct ctl_client *c, size_t *bytes)
{
	size_t want;
	ssize_t n;

	if (c->inoff != 0) {
		memmove(c->in, c->in + c->inoff, c->inlen - c->inoff);
		c->inlen -= c->inoff;
		c->scanned = c->scanned > c->inoff ? c->scanned - c->inoff : 0;
		c->inoff = 0;
	}
	want = RTE_MIN(RTE_MIN(CTL_MAX_REQ - c->inlen, *bytes), (size_t)CTL_READ_CHUNK);
	n = recv(c->fd, c->in + c->inlen, want, MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		client_close(c);	/* vanished, maybe mid-request: forget it */
		return -1;
	}
	if (n < 0) {
		c->readable = 0;
		return 0;
	}
	c->inlen += (size_t)n;
	*bytes -= (size_t)n;
	if ((size_t)n < want)
		c->readable = 0;
	return 1;
}

/*
 * One step of client c: its next request if it has one whole, else more of its input.
 * 2: served a request, 1: read input, 0: nothing to do for it.
 */
static int
client_step(struct psb_app *app, struct ctl_client *c, size_t *bytes)
{
	char *nl = client_line_end(c);
	size_t start;

	if (nl == NULL && c->inlen - c->inoff == CTL_MAX_REQ) {
		app->cp.socket_too_large++;
		c->closing = 1;
		c->inoff = c->inlen = c->scanned = 0;
		client_reply(app, c, psb_cmd_error("too_large", "request longer than %d bytes "
						   "without a newline", CTL_MAX_REQ), NULL);
		return 0;
	}
	if (nl == NULL) {
		if (!c->readable || *bytes == 0)
			return 0;
		return client_read(c, bytes) > 0 ? 1 : 0;
	}
	start = c->inoff;
	c->inoff = (size_t)(nl - c->in) + 1;
	c->last_req = rte_rdtsc();
	client_line(app, c, c->in + start, (size_t)(nl - c->in) - start);
	if (c->fd >= 0 && c->inoff == c->inlen)
		c->inoff = c->inlen = c->scanned = 0;
	return 2;
}

static int
client_has_work(struct ctl_client *c)
{
	return c->fd >= 0 && !c->closing && (c->readable || client_line_end(c) != NULL);
}

/*
 * Requests of all clients in turn, one each per round, until the pass's budget of
 * requests or input bytes is spent; what is left waits for the next pass (counted).
 */
static void
serve_clients(struct psb_app *app)
{
	unsigned int n = g_ctl.nclients, k, i, next = g_ctl.rr;
	uint64_t reqs = app->conf.node.ctl_requests_per_pass;
	size_t bytes = app->conf.node.ctl_bytes_per_pass;
	int progress, r;

	do {
		progress = 0;
		for (k = 0; k < n && reqs > 0; k++) {
			struct ctl_client *c = &g_ctl.cl[(g_ctl.rr + k) % n];

			if (c->fd < 0 || c->closing)
				continue;
			r = client_step(app, c, &bytes);
			progress |= r;
			if (r == 2) {
				reqs--;
				next = (g_ctl.rr + k + 1) % n;
			}
		}
	} while (progress && reqs > 0);
	g_ctl.rr = next;
	if (reqs == 0 || bytes == 0)
		for (i = 0; i < n; i++)
			if (client_has_work(&g_ctl.cl[i])) {
				app->cp.socket_deferred++;
				break;
			}
}

/* One client more than ctl_clients: told so, and gone. */
static void
refuse_busy(struct psb_app *app, int fd)
{
	char busy[160];
	int len;

	app->cp.socket_busy++;
	len = snprintf(busy, sizeof(busy), "{\"error\":{\"code\":\"busy\",\"message\":\"too many "
		       "control clients (node.ctl_clients %u)\"}}\n", g_ctl.nclients);
	(void)!send(fd, busy, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(fd);
}

static void
accept_clients(struct psb_app *app)
{
	uint64_t budget = app->conf.node.ctl_requests_per_pass;
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	unsigned int i;
	int fd;

	while (budget-- > 0 &&
	       (fd = accept4(g_ctl.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		struct ctl_client *c = NULL;

		for (i = 0; i < g_ctl.nclients; i++)
			if (g_ctl.cl[i].fd < 0) {
				c = &g_ctl.cl[i];
				break;
			}
		if (c == NULL) {
			refuse_busy(app, fd);
			continue;
		}
		c->fd = fd;
		c->last_req = rte_rdtsc();
		/* the socket is 0600; this also holds when its mode or directory was loosened */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 ||
		    (cred.uid != 0 && cred.uid != geteuid())) {
			c->closing = 1;
			client_reply(app, c, psb_cmd_error("denied", "uid %u may not control this "
							   "psb (owner uid %u)", cred.uid,
							   geteuid()), NULL);
			continue;
		}
		c->in = malloc(CTL_MAX_REQ);
		if (c->in == NULL)
			client_close(c);
	}
}

/* Clients that asked nothing for ctl_idle_timeout go; so do closing ones that never read. */
static void
drop_idle(struct psb_app *app, uint64_t now)
{
	uint64_t idle = app->conf.node.ctl_idle_timeout, lim;
	char text[32];
	unsigned int i;

	/* timeouts are seconds long: a look every CTL_IDLE_CHECK_NS is plenty, and spares the passes */
	if (idle == 0 || now < g_ctl.next_idle)
		return;
	g_ctl.next_idle = now + (uint64_t)((double)CTL_IDLE_CHECK_NS / app->ns_per_tsc);
	lim = (uint64_t)((double)idle / app->ns_per_tsc);
	for (i = 0; i < g_ctl.nclients; i++) {
		struct ctl_client *c = &g_ctl.cl[i];

		if (c->fd < 0 || now - c->last_req < lim)
			continue;
		if (c->closing) {
			client_close(c);
			continue;
		}
		if (c->readable || client_line_end(c) != NULL)
			continue;	/* what it sent waits for its turn: not idle */
		app->cp.socket_idle_closed++;
		psb_conf_format_duration(text, sizeof(text), idle);
		client_drop(c, psb_cmd_error("idle_timeout", "no request for %s "
					     "(node.ctl_idle_timeout): disconnected", text));
	}
}

static int
handle_ready(struct pollfd *pfd, struct ctl_client **map, int n)
{
	int i;

	for (i = 1; i < n; i++) {
		struct ctl_client *c = map[i];

		if (pfd[i].revents & POLLOUT)
			client_flush(c);
		if (c->fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if (c->closing || c->in == NULL)
			client_close(c);	/* hung up before its last reply went out */
		else
			c->readable = 1;
	}
	return pfd[0].revents & POLLIN;
}

void
psb_ctl_sock_poll(struct psb_app *app, int timeout_ms)
{
	struct pollfd *pfd = g_ctl.pfd;
	struct ctl_client **map = g_ctl.map;
	uint64_t t0 = rte_rdtsc();
	unsigned int i;
	int n = 0, rc;

	share_pass(app, t0);
	if (g_ctl.lfd < 0 || !g_share.open) {
		if (timeout_ms > 0)
			usleep((useconds_t)timeout_ms * 1000);
		return;
	}
	pfd[n].fd = g_ctl.lfd;
	pfd[n].events = POLLIN;
	map[n++] = NULL;
	for (i = 0; i < g_ctl.nclients; i++) {
		struct ctl_client *c = &g_ctl.cl[i];

		if (c->fd < 0)
			continue;
		/* a request already read waits for its turn: no waiting for more */
		if (!c->closing && client_line_end(c) != NULL)
			timeout_ms = 0;
		pfd[n].fd = c->fd;
		pfd[n].events = (c->closing ? 0 : POLLIN) | (client_pending(c) != 0 ? POLLOUT : 0);
		map[n++] = c;
	}
	rc = poll(pfd, (nfds_t)n, timeout_ms);
	if (timeout_ms > 0)
		t0 = rte_rdtsc();	/* waiting for requests is not work */
	if (rc > 0 && handle_ready(pfd, map, n))
		accept_clients(app);
	serve_clients(app);
	drop_idle(app, rte_rdtsc());
	t0 = rte_rdtsc() - t0;
	app->cp.main_cycles += t0;
	psb_cp_charge(t0);
}

void
psb_ctl_limits_log(struct psb_app *app)
{
	const struct psb_exp_node *n = &app->conf.node;
	char b[6][40];

	psb_conf_format_size(b[0], sizeof(b[0]), n->ctl_bytes_per_pass);
	psb_conf_format_size(b[1], sizeof(b[1]), n->ctl_reply_max);
	psb_conf_format_duration(b[2], sizeof(b[2]), n->ctl_idle_timeout);
	psb_conf_format_size(b[3], sizeof(b[3]), n->file_max);
	psb_conf_format_duration(b[4], sizeof(b[4]), n->prometheus_timeout);
	if (app->nworker_lcores != 0 || n->ctl_share_pct == 100)
		snprintf(b[5], sizeof(b[5]), "no limit");
	else
		snprintf(b[5], sizeof(b[5]), "%llu %% of the lcore",
			 (unsigned long long)n->ctl_share_pct);
	PSB_INFO(ctl, "control limits: socket %llu clients, %llu requests and %s of input per "
		"pass, %s of unread replies, idle %s; clients' share %s; files %s; Prometheus "
		"%llu connections, %s per request, %llu B per request",
		(unsigned long long)n->ctl_clients, (unsigned long long)n->ctl_requests_per_pass,
		b[0], b[1], n->ctl_idle_timeout != 0 ? b[2] : "never", b[5], b[3],
		(unsigned long long)n->prometheus_connections, b[4],
		(unsigned long long)n->prometheus_request_max);
}

void
psb_ctl_sock_fini(struct psb_app *app)
{
	unsigned int i;

	for (i = 0; i < g_ctl.nclients; i++)
		if (g_ctl.cl[i].fd >= 0) {
			client_flush(&g_ctl.cl[i]);
			client_close(&g_ctl.cl[i]);
		}
	if (g_ctl.lfd >= 0) {
		close(g_ctl.lfd);
		unlink(g_ctl.path);
		g_ctl.lfd = -1;
	}
	free(g_ctl.cl);
	free(g_ctl.pfd);
	free(g_ctl.map);
	g_ctl.cl = NULL;
	g_ctl.pfd = NULL;
	g_ctl.map = NULL;
	g_ctl.nclients = 0;
	app->ctl_sock[0] = '\0';
}
