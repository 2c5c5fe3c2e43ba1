/*
 * A client of psb's control socket (JSON lines on a unix stream socket), bounded in size
 * and time: what psbctl talks through. No DPDK.
 */
#ifndef PSB_CTL_CLIENT_H
#define PSB_CTL_CLIENT_H

#include <signal.h>
#include <stddef.h>

#include <jansson.h>

/* A reply longer than this is not psb talking. */
#define PSB_CTL_REPLY_MAX	(256u << 20)

/* What a call returns when *interrupted was set while it waited (Ctrl-C). */
#define PSB_CTL_INTERRUPTED	1

struct psb_ctl_conn {
	int fd;
	const char *path;
	int timeout_ms;			/* connecting, sending a request, its reply: each at most */
	size_t reply_max;		/* longest reply line taken (PSB_CTL_REPLY_MAX) */
	volatile sig_atomic_t *interrupted;	/* when set, waits end at once; may be NULL */
	char *buf;			/* received, not yet returned as lines */
	size_t len, cap;
	json_int_t next_id;
	char err[640];			/* why the last call failed, naming the socket's path */
};

/*
 * Connect to the socket at path (kept, not copied) within timeout_ms. 0, or -errno with
 * the reason in c->err ("cannot connect to PATH: no such socket (is psb running? ...)");
 * -ETIMEDOUT when psb's listen backlog stayed full. Every message that says a time ran out
 * ends with it ("... within 5.0 s"), for the caller to add how to give more.
 */
int psb_ctl_open(struct psb_ctl_conn *c, const char *path, int timeout_ms,
		volatile sig_atomic_t *interrupted);

void psb_ctl_close(struct psb_ctl_conn *c);

/*
 * Send one line (text without its newline). A send error is not one yet: psb may have
 * answered and closed (denied, too_large), and that answer is still there to be read. 0,
 * PSB_CTL_INTERRUPTED, -ETIMEDOUT or -ENOMEM (c->err says).
 */
int psb_ctl_send(struct psb_ctl_conn *c, const char *text);

/*
 * The next reply line, malloc'd into *line (no newline). 0; PSB_CTL_INTERRUPTED (*line
 * NULL); -ETIMEDOUT (no reply within timeout_ms), -EPIPE (psb closed the connection),
 * -EMSGSIZE (longer than reply_max), other -errno: c->err says.
 */
int psb_ctl_read_line(struct psb_ctl_conn *c, char **line);

/*
 * One request (left as it was) and its reply object in *reply, without its "id".
 * psb answers every line in order and echoes "id"; a reply without one is psb refusing the
 * connection itself (denied, too_large, busy, bad_json) and is returned as the reply.
 * Without with_id the request goes without "id", for replies that have an "id" of their
 * own, and the next line is the reply. A connection psb let go of for asking nothing
 * (idle_timeout) is opened again and the request sent anew. Returns as psb_ctl_read_line;
 * -EBADMSG when the reply is not a JSON object.
 */
int psb_ctl_request(struct psb_ctl_conn *c, const json_t *req, int with_id, json_t **reply);

#endif /* PSB_CTL_CLIENT_H */
