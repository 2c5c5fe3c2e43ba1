/* The control socket's client: connect, one request line, one reply line, all bounded. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "psb_ctl_client.h"
#include "psb_clock.h"

static int
interrupted(const struct psb_ctl_conn *c)
{
	return c->interrupted != NULL && *c->interrupted;
}

static int
fail(struct psb_ctl_conn *c, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
fail(struct psb_ctl_conn *c, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return rc;
}

int
psb_ctl_open(struct psb_ctl_conn *c, const char *path, int timeout_ms,
		volatile sig_atomic_t *intr)
{
	uint64_t deadline = psb_clock_ms() + (uint64_t)timeout_ms;
	struct sockaddr_un sa;
	struct stat st;
	int fd, rc, e;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->path = path;
	c->timeout_ms = timeout_ms;
	c->reply_max = PSB_CTL_REPLY_MAX;
	c->interrupted = intr;
	c->next_id = 1;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path))
		return fail(c, -ENAMETOOLONG, "cannot connect to %s: path longer than %zu bytes",
			    path, sizeof(sa.sun_path) - 1);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail(c, -errno, "socket: %s", strerror(errno));
	/* EAGAIN: psb's listen backlog is full; it drains as psb serves, so try again */
	while ((rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa))) != 0 && errno == EAGAIN &&
	       psb_clock_ms() < deadline && !interrupted(c))
		usleep(10000);
	if (rc == 0) {
		c->fd = fd;
		return 0;
	}
	e = errno;
	close(fd);
	switch (e) {
	case EACCES:
	case EPERM:
		return fail(c, -e, "cannot connect to %s: permission denied: not the owner of %s "
			    "(run as root or as the user running psb)", path, path);
	case ENOENT:
		return fail(c, -e, "cannot connect to %s: no such socket (is psb running? with "
			    "another --ctl or --file-prefix?)", path);
	case ECONNREFUSED:
		if (stat(path, &st) == 0 && !S_ISSOCK(st.st_mode))
			return fail(c, -ENOTSOCK, "cannot connect to %s: not a socket", path);
		return fail(c, -e, "cannot connect to %s: connection refused (nothing listens: psb "
			    "exited and left its socket behind?)", path);
	case ENOTDIR:
		return fail(c, -e, "cannot connect to %s: a component of the path is not a "
			    "directory", path);
	case EAGAIN:
		return fail(c, -ETIMEDOUT, "cannot connect to %s: psb accepts no connection: its "
			    "backlog stayed full for %.1f s", path, timeout_ms / 1e3);
	default:
		return fail(c, -e, "cannot connect to %s: %s", path, strerror(e));
	}
}

void
psb_ctl_close(struct psb_ctl_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	c->buf = NULL;
	c->len = c->cap = 0;
	c->fd = -1;
}

int
psb_ctl_send(struct psb_ctl_conn *c, const char *text)
{
	size_t len = strlen(text), off = 0;
	char *line = malloc(len + 1);
	uint64_t deadline = psb_clock_ms() + (uint64_t)c->timeout_ms;
	struct pollfd pfd;
	ssize_t n;
	int rc = 0;

	if (line == NULL)
		return fail(c, -ENOMEM, "out of memory");
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
		if (interrupted(c)) {
			rc = PSB_CTL_INTERRUPTED;
			break;
		}
		if (psb_clock_ms() >= deadline) {
			rc = fail(c, -ETIMEDOUT, "%s: psb takes no request: sending timed out after "
				  "%.1f s", c->path, c->timeout_ms / 1e3);
			break;
		}
		pfd.fd = c->fd;
		pfd.events = POLLOUT;
		poll(&pfd, 1, 100);
	}
	free(line);
	return rc;
}

int
psb_ctl_read_line(struct psb_ctl_conn *c, char **out)
{
	uint64_t deadline = psb_clock_ms() + (uint64_t)c->timeout_ms;
	struct pollfd pfd;
	char *nl, *line, *grown;
	size_t used, cap;
	ssize_t n;
	int rc;

	*out = NULL;
	for (;;) {
		nl = c->len != 0 ? memchr(c->buf, '\n', c->len) : NULL;
		if (nl != NULL) {
			used = (size_t)(nl - c->buf);
			line = malloc(used + 1);
			if (line == NULL)
				return fail(c, -ENOMEM, "out of memory");
			memcpy(line, c->buf, used);
			line[used] = '\0';
			memmove(c->buf, nl + 1, c->len - used - 1);
			c->len -= used + 1;
			*out = line;
			return 0;
		}
		if (interrupted(c))
			return PSB_CTL_INTERRUPTED;
		if (c->len == c->cap) {
			if (c->cap >= c->reply_max)
				return fail(c, -EMSGSIZE, "%s: reply longer than %zu bytes without a "
					    "newline", c->path, c->reply_max);
			cap = c->cap != 0 ? c->cap * 2 : 65536;
			if (cap > c->reply_max)
				cap = c->reply_max;
			grown = realloc(c->buf, cap);
			if (grown == NULL)
				return fail(c, -ENOMEM, "out of memory");
			c->buf = grown;
			c->cap = cap;
		}
		n = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
		if (n > 0) {
			c->len += (size_t)n;
			continue;
		}
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return fail(c, -EPIPE, "%s: psb closed the connection without replying (did "
				    "it exit?)", c->path);
		if (errno != EAGAIN && errno != EINTR)
			return fail(c, -errno, "%s: reading the reply: %s", c->path, strerror(errno));
		if (psb_clock_ms() >= deadline)
			return fail(c, -ETIMEDOUT, "%s: no reply from psb within %.1f s", c->path,
				    c->timeout_ms / 1e3);
		pfd.fd = c->fd;
		pfd.events = POLLIN;
		rc = poll(&pfd, 1, (int)(deadline - psb_clock_ms()));
		if (rc < 0 && errno != EINTR)
			return fail(c, -errno, "poll: %s", strerror(errno));
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

static int
reopen(struct psb_ctl_conn *c)
{
	volatile sig_atomic_t *intr = c->interrupted;
	json_int_t next = c->next_id;
	size_t max = c->reply_max;
	int rc;

	psb_ctl_close(c);
	rc = psb_ctl_open(c, c->path, c->timeout_ms, intr);
	c->next_id = next;
	c->reply_max = max;
	return rc;
}

int
psb_ctl_request(struct psb_ctl_conn *c, const json_t *req, int with_id, json_t **out)
{
	json_int_t id = c->next_id++;
	json_error_t je;
	json_t *reply = NULL, *sent;
	char *text, *line;
	int rc;

	*out = NULL;
	/* the caller's request as it was: "id" goes into a copy */
	sent = json_copy((json_t *)req);
	if (sent == NULL || (with_id && json_object_set_new(sent, "id", json_integer(id)) != 0)) {
		json_decref(sent);
		return fail(c, -ENOMEM, "out of memory");
	}
	text = json_dumps(sent, JSON_COMPACT);
	json_decref(sent);
	if (text == NULL)
		return fail(c, -ENOMEM, "out of memory");
	rc = psb_ctl_send(c, text);
	while (rc == 0) {
		rc = psb_ctl_read_line(c, &line);
		if (rc != 0)
			break;
		reply = json_loads(line, 0, &je);
		if (reply == NULL || !json_is_object(reply)) {
			rc = fail(c, -EBADMSG, "%s: not a JSON reply (%s): %.200s", c->path,
				  reply == NULL ? je.text : "not an object", line);
			free(line);
			json_decref(reply);
			reply = NULL;
			break;
		}
		free(line);
		if (idle_closed(reply)) {
			/* psb let go of the connection while the caller slept: again, anew */
			json_decref(reply);
			reply = NULL;
			rc = reopen(c);
			if (rc == 0)
				rc = psb_ctl_send(c, text);
			continue;
		}
		if (!with_id)
			break;
		if (json_integer_value(json_object_get(reply, "id")) == id ||
		    (json_object_get(reply, "id") == NULL && json_object_get(reply, "error") != NULL))
			break;
		json_decref(reply);	/* an answer to someone else's id: not ours */
		reply = NULL;
	}
	free(text);
	if (rc != 0) {
		json_decref(reply);
		return rc;
	}
	if (with_id)
		json_object_del(reply, "id");
	*out = reply;
	return 0;
}
