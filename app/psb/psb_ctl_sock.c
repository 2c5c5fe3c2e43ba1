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

#include "psb.h"
#include "psb_ctl.h"
#include "psb_text.h"

#define CTL_MAX_CLIENTS	32
#define CTL_MAX_REQ	(64 * 1024)	/* a request line longer than this is refused */

struct ctl_client {
	int fd;
	size_t inlen;
	char *in;		/* [CTL_MAX_REQ] */
	struct psb_text out;	/* replies; out.s + outoff on is not written yet */
	size_t outoff;
	int closing;		/* close once out is written */
};

static struct {
	int lfd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct ctl_client cl[CTL_MAX_CLIENTS];
} g_ctl = { .lfd = -1 };

int
psb_ctl_sock_init(struct psb_app *app, const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa;
	mode_t old;
	int fd, i;

	for (i = 0; i < CTL_MAX_CLIENTS; i++)
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

static void
client_flush(struct ctl_client *c)
{
	ssize_t n;

	while (c->outoff < c->out.len) {
		n = send(c->fd, c->out.s + c->outoff, c->out.len - c->outoff,
			 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			client_close(c);	/* gone: nothing to tell it any more */
			return;
		}
		c->outoff += (size_t)n;
	}
	c->outoff = c->out.len = 0;
	if (c->closing)
		client_close(c);
}

static void
client_reply(struct ctl_client *c, json_t *reply, const json_t *req)
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
	client_flush(c);
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
		client_reply(c, psb_cmd_error("bad_json", "column %d: %s", je.column, je.text),
			     NULL);
		return;
	}
	before = c->out.len;
	if (json_is_object(req) && psb_cmd_exec_text(app, req, &c->out)) {
		psb_text_append(&c->out, "\n", 1);
		if (c->out.oom) {
			c->out.len = before;
			c->out.oom = 0;
			client_reply(c, psb_cmd_error("no_memory", "the reply did not fit in memory"),
				     req);
		} else {
			client_flush(c);
		}
	} else {
		client_reply(c, psb_cmd_exec(app, req, &quit), req);
	}
	json_decref(req);
	if (quit)
		app->quit = 1;
}

static void
client_read(struct psb_app *app, struct ctl_client *c)
{
	char *nl;
	ssize_t n;

	for (;;) {
		n = recv(c->fd, c->in + c->inlen, CTL_MAX_REQ - c->inlen, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			client_close(c);	/* vanished, maybe mid-request: forget it */
			return;
		}
		if (n < 0)
			return;
		c->inlen += (size_t)n;
		while (c->fd >= 0 && !c->closing &&
		       (nl = memchr(c->in, '\n', c->inlen)) != NULL) {
			size_t used = (size_t)(nl - c->in) + 1;

			client_line(app, c, c->in, used - 1);
			if (c->fd < 0)
				return;
			memmove(c->in, c->in + used, c->inlen - used);
			c->inlen -= used;
		}
		if (c->fd < 0 || c->closing)
			return;
		if (c->inlen == CTL_MAX_REQ) {
			c->closing = 1;
			c->inlen = 0;
			client_reply(c, psb_cmd_error("too_large", "request longer than %d bytes "
						      "without a newline", CTL_MAX_REQ), NULL);
			return;
		}
	}
}

static void
accept_clients(void)
{
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	int fd, i;

	while ((fd = accept4(g_ctl.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		struct ctl_client *c = NULL;

		for (i = 0; i < CTL_MAX_CLIENTS; i++)
			if (g_ctl.cl[i].fd < 0) {
				c = &g_ctl.cl[i];
				break;
			}
		if (c == NULL) {
			static const char busy[] = "{\"error\":{\"code\":\"busy\",\"message\":"
				"\"too many control clients\"}}\n";

			(void)!send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			close(fd);
			continue;
		}
		c->fd = fd;
		/* the socket is 0600; this also holds when its mode or directory was loosened */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 ||
		    (cred.uid != 0 && cred.uid != geteuid())) {
			c->closing = 1;
			client_reply(c, psb_cmd_error("denied", "uid %u may not control this psb "
						      "(owner uid %u)", cred.uid, geteuid()), NULL);
			continue;
		}
		c->in = malloc(CTL_MAX_REQ);
		if (c->in == NULL)
			client_close(c);
	}
}

static void
handle_ready(struct psb_app *app, struct pollfd *pfd, struct ctl_client **map, int n)
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
			client_read(app, c);
	}
	if (pfd[0].revents & POLLIN)
		accept_clients();
}

void
psb_ctl_sock_poll(struct psb_app *app, int timeout_ms)
{
	struct pollfd pfd[CTL_MAX_CLIENTS + 1];
	struct ctl_client *map[CTL_MAX_CLIENTS + 1];
	int n = 0, i, rc;
	uint64_t t0 = rte_rdtsc();

	if (g_ctl.lfd < 0) {
		if (timeout_ms > 0)
			usleep((useconds_t)timeout_ms * 1000);
		return;
	}
	pfd[n].fd = g_ctl.lfd;
	pfd[n].events = POLLIN;
	map[n++] = NULL;
	for (i = 0; i < CTL_MAX_CLIENTS; i++) {
		struct ctl_client *c = &g_ctl.cl[i];

		if (c->fd < 0)
			continue;
		pfd[n].fd = c->fd;
		pfd[n].events = (c->closing ? 0 : POLLIN) | (c->out.len > c->outoff ? POLLOUT : 0);
		map[n++] = c;
	}
	rc = poll(pfd, (nfds_t)n, timeout_ms);
	if (timeout_ms > 0)
		t0 = rte_rdtsc();	/* waiting for requests is not work */
	if (rc > 0)
		handle_ready(app, pfd, map, n);
	app->cp.main_cycles += rte_rdtsc() - t0;
}

void
psb_ctl_sock_fini(struct psb_app *app)
{
	int i;

	for (i = 0; i < CTL_MAX_CLIENTS; i++)
		if (g_ctl.cl[i].fd >= 0) {
			client_flush(&g_ctl.cl[i]);
			client_close(&g_ctl.cl[i]);
		}
	if (g_ctl.lfd >= 0) {
		close(g_ctl.lfd);
		unlink(g_ctl.path);
		g_ctl.lfd = -1;
	}
	app->ctl_sock[0] = '\0';
}
