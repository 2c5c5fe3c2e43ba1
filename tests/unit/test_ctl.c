/*
 * Unit tests of lib/ctl: the text of control replies (values, paths, tables, errors, each
 * command's summary), which psbctl and the console share, and the control-socket client
 * against stand-ins for psb (silent, too long, closing, idle timeout).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "psb_ctl_client.h"
#include "psb_render.h"

/* Text written by a renderer */

struct cap {
	FILE *f;
	char *buf;
	size_t len;
};

static FILE *
cap_open(struct cap *c)
{
	c->buf = NULL;
	c->len = 0;
	c->f = open_memstream(&c->buf, &c->len);
	assert_non_null(c->f);
	return c->f;
}

/* What was written (free it). */
static char *
cap_text(struct cap *c)
{
	fclose(c->f);
	return c->buf;
}

static json_t *
parse(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, JSON_DECODE_ANY, &je);

	if (j == NULL)
		fail_msg("test JSON does not parse: %s: %s", text, je.text);
	return j;
}

static void
value_is(const char *json, const char *want)
{
	struct cap c;
	json_t *v = parse(json);
	char *got;

	psb_render_value(cap_open(&c), v);
	got = cap_text(&c);
	assert_string_equal(got, want);
	free(got);
	json_decref(v);
}

/* The text of the reply to the request, as psbctl and the console both write it. */
static void
reply_is(const char *req_json, const char *reply_json, const char *want)
{
	struct cap out, err;
	json_t *req = parse(req_json), *reply = parse(reply_json);
	char *got, *errs;

	assert_int_equal(psb_render_reply(cap_open(&out), cap_open(&err), "psbctl", req, reply),
			 0);
	got = cap_text(&out);
	errs = cap_text(&err);
	assert_string_equal(got, want);
	assert_string_equal(errs, "");
	free(got);
	free(errs);
	json_decref(req);
	json_decref(reply);
}

static void
test_reals(void **state)
{
	(void)state;
	/* no binary noise: what 0.1 + 0.2 is in binary reads 0.3 */
	value_is("0.30000000000000004", "0.3");
	value_is("0.1", "0.1");
	value_is("2.0", "2");
	value_is("-0.5", "-0.5");
	value_is("1234567.891", "1234567.891");
	/* at most 10 significant digits, however many the double has */
	value_is("12.345678901234567", "12.3456789");
	value_is("98.76543210987", "98.76543211");
	value_is("0.000001234", "1.234e-06");
	value_is("1e300", "1e+300");
	/* the same inside containers, which are written inline */
	value_is("[0.30000000000000004, 1.5]", "[0.3,1.5]");
}

static void
test_scalars(void **state)
{
	(void)state;
	value_is("null", "null");
	value_is("true", "true");
	value_is("false", "false");
	value_is("9223372036854775807", "9223372036854775807");
	value_is("-3", "-3");
	value_is("\"worker\"", "worker");
	value_is("\"\"", "\"\"");		/* an empty string is seen */
	value_is("{}", "{}");
	value_is("[]", "[]");
	value_is("{\"a\": [1, null]}", "{\"a\":[1,null]}");
}

static void
test_flat(void **state)
{
	struct cap c;
	json_t *v = parse("{\"node\": {\"role\": \"server\", \"uptime_s\": 1.5, \"lcores\": [0, 2]},"
			  " \"roles\": {\"rx0\": {\"rx_pkts\": 12, \"drops\": {\"arp\": 0},"
			  " \"busy_pct\": 0.30000000000000004, \"paused\": false, \"peer\": null}},"
			  " \"empty\": {}, \"none\": []}");
	json_t *leaf = parse("0");
	char *got;

	(void)state;
	psb_render_flat(cap_open(&c), "", v);
	got = cap_text(&c);
	assert_string_equal(got,
		"node.role server\n"
		"node.uptime_s 1.5\n"
		"node.lcores.0 0\n"
		"node.lcores.1 2\n"
		"roles.rx0.rx_pkts 12\n"
		"roles.rx0.drops.arp 0\n"
		"roles.rx0.busy_pct 0.3\n"
		"roles.rx0.paused false\n"
		"roles.rx0.peer null\n"
		"empty {}\n"
		"none []\n");
	free(got);

	/* under a filter: the whole path from the top, as asked */
	psb_render_flat(cap_open(&c), "roles", json_object_get(v, "roles"));
	got = cap_text(&c);
	assert_string_equal(got,
		"roles.rx0.rx_pkts 12\n"
		"roles.rx0.drops.arp 0\n"
		"roles.rx0.busy_pct 0.3\n"
		"roles.rx0.paused false\n"
		"roles.rx0.peer null\n");
	free(got);

	/* one counter: its path and value, what scripts compare with */
	psb_render_flat(cap_open(&c), "control.yields", leaf);
	got = cap_text(&c);
	assert_string_equal(got, "control.yields 0\n");
	free(got);
	psb_render_flat(cap_open(&c), "", leaf);
	got = cap_text(&c);
	assert_string_equal(got, ". 0\n");
	free(got);
	json_decref(v);
	json_decref(leaf);
}

static void
test_table(void **state)
{
	struct cap c;
	json_t *rows = parse("[{\"id\": 1, \"name\": \"small\", \"elapsed_s\": 0.30000000000000004,"
			     " \"ok\": true, \"results\": \"results/small\"},"
			     " {\"id\": 12, \"name\": \"a-longer-name\", \"elapsed_s\": 120.25,"
			     " \"ok\": null, \"results\": \"r\", \"extra\": \"x\"},"
			     " {\"id\": 3, \"name\": \"c\", \"elapsed_s\": 2.0, \"ok\": false}]");
	json_t *none = parse("[]");
	char *got;

	(void)state;
	psb_render_table(cap_open(&c), rows);
	got = cap_text(&c);
	/* numbers right-aligned, the rest left; "-" where a row lacks a key; no trailing blanks */
	assert_string_equal(got,
		"id  name           elapsed_s  ok     results        extra\n"
		" 1  small                0.3  true   results/small  -\n"
		"12  a-longer-name     120.25  null   r              x\n"
		" 3  c                      2  false  -              -\n");
	free(got);
	psb_render_table(cap_open(&c), none);
	got = cap_text(&c);
	assert_string_equal(got, "");
	free(got);
	json_decref(rows);
	json_decref(none);
}

static void
error_is(const char *who, const char *reply_json, int is_error, const char *want)
{
	struct cap c;
	json_t *reply = parse(reply_json);
	char *got;

	assert_int_equal(psb_render_error(cap_open(&c), who, reply), is_error);
	got = cap_text(&c);
	assert_string_equal(got, want);
	free(got);
	json_decref(reply);
}

static void
test_errors(void **state)
{
	struct cap out, err;
	json_t *req, *reply;
	char *o, *e;

	(void)state;
	error_is("psbctl", "{\"error\": {\"code\": \"not_found\", \"message\": \"no counters at "
		     "\\\"x\\\"\"}}", 1, "psbctl: not_found: no counters at \"x\"\n");
	error_is("error", "{\"error\": {\"code\": \"invalid\", \"message\": \"pushpull.len: "
		     "bad\"}}", 1, "error: invalid: pushpull.len: bad\n");
	error_is("psbctl", "{\"error\": {\"message\": \"m\"}}", 1, "psbctl: error: m\n");
	error_is("psbctl", "{\"error\": {\"code\": \"busy\"}}", 1, "psbctl: busy: (no message)\n");
	error_is("psbctl", "{\"error\": \"plain\"}", 1, "psbctl: error: plain\n");
	error_is(NULL, "{\"error\": {\"code\": \"denied\", \"message\": \"no\"}}", 1,
		     "denied: no\n");
	error_is("psbctl", "{\"ok\": true}", 0, "");

	/* a reply that is an error goes to err, and nothing to out, whatever was asked */
	req = parse("{\"cmd\": \"status\"}");
	reply = parse("{\"error\": {\"code\": \"too_large\", \"message\": \"request longer than "
		      "65536 bytes\"}}");
	assert_int_equal(psb_render_reply(cap_open(&out), cap_open(&err), "error", req, reply), 1);
	o = cap_text(&out);
	e = cap_text(&err);
	assert_string_equal(o, "");
	assert_string_equal(e, "error: too_large: request longer than 65536 bytes\n");
	free(o);
	free(e);
	json_decref(req);
	json_decref(reply);
}

static const char running_exp[] =
	"{\"id\": 2, \"name\": \"long\", \"kind\": \"pushpull\", \"state\": \"running\","
	" \"elapsed_s\": 3.51234, \"results\": \"/r/long\", \"pushpull\": {\"iterations\": 40,"
	" \"repeat\": 100, \"warming\": true, \"requests\": 960, \"goodput_gbps\": 1.23456,"
	" \"requests_per_s\": 273.4, \"rtt_p50_us\": 12.34, \"rtt_p99_us\": 56.78,"
	" \"rtt_mean_us\": 13.0, \"staleness_mean\": 0.5, \"staleness_p99\": 2,"
	" \"staleness_max\": 3, \"retries\": 1, \"failed\": 0}}";

static void
test_status(void **state)
{
	char req[] = "{\"cmd\": \"status\"}", reply[2048];

	(void)state;
	reply_is(req, "{\"ok\": true, \"role\": \"server\", \"uptime_s\": 12.3456, \"loaded\":"
		     " false, \"experiment\": {\"id\": 0, \"name\": \"\", \"kind\": \"\", \"state\":"
		     " \"idle\", \"elapsed_s\": 0.0}}",
		     "role: server, up 12.3 s, nothing loaded\n"
		     "no experiment has run yet\n");
	snprintf(reply, sizeof(reply), "{\"ok\": true, \"role\": \"worker\", \"uptime_s\": 1.0,"
		 " \"loaded\": true, \"experiment\": %s}", running_exp);
	reply_is(req, reply,
		     "role: worker, up 1.0 s, an experiment is loaded\n"
		     "experiment 2 \"long\" (pushpull): running for 3.512 s\n"
		     "  iterations 40/100 (warming up), requests 960, 1.235 Gbps, 273 req/s\n"
		     "  rtt p50 12.3 us, p99 56.8 us, mean 13.0 us; retries 1, failed 0\n"
		     "  staleness of pushes (versions): mean 0.50, p99 2, max 3\n"
		     "results: /r/long\n");
}

static void
test_experiment_end(void **state)
{
	char line[256];
	json_t *exp = parse(running_exp), *idle = parse("{\"id\": 0}");

	(void)state;
	/* stop's reply: how it ended, a serve window, the error */
	reply_is("{\"cmd\": \"stop\"}", "{\"ok\": true, \"experiment\": {\"id\": 1, \"name\":"
		     " \"sv\", \"kind\": \"serve\", \"state\": \"failed\", \"elapsed_s\": 2.5,"
		     " \"results\": \"results/sv\", \"error\": \"1 worker(s) failed\", \"serve\":"
		     " {\"push\": 4, \"pull\": 5, \"pushpull\": 6, \"rounds_closed\": 7,"
		     " \"bytes_summed\": 4096}}}",
		     "experiment 1 \"sv\" (serve): failed after 2.500 s\n"
		     "  push 4, pull 5, pushpull 6, rounds 7, summed 4096 B\n"
		     "results: results/sv\n"
		     "error: 1 worker(s) failed\n");
	psb_render_progress(line, sizeof(line), exp);
	assert_string_equal(line, "long running 3.5 s: 40/100 iterations, 1.235 Gbps, 273 req/s, "
			    "p50 12.3 us, p99 56.8 us (warming up)");
	psb_render_progress(line, sizeof(line), idle);
	assert_string_equal(line, "no experiment yet");
	json_decref(exp);
	json_decref(idle);
}

static void
test_commands(void **state)
{
	(void)state;
	reply_is("{\"cmd\": \"start\", \"file\": \"x.json\"}", "{\"ok\": true, \"experiment\":"
		     " {\"id\": 3, \"name\": \"small\", \"results\": \"/r/small\"}}",
		     "experiment 3 \"small\" started; results will go to /r/small\n");
	reply_is("{\"cmd\": \"set\", \"param\": \"pushpull.rate\", \"value\": \"4Mbps\"}",
		     "{\"ok\": true, \"param\": \"pushpull.rate\", \"live\": true}",
		     "pushpull.rate = 4Mbps (changed in the running experiment)\n");
	reply_is("{\"cmd\": \"set\", \"param\": \"pushpull.repeat\", \"value\": 150}",
		     "{\"ok\": true, \"param\": \"pushpull.repeat\", \"live\": false}",
		     "pushpull.repeat = 150 (for the next experiment)\n");
	reply_is("{\"cmd\": \"load\", \"file\": \"l.json\"}", "{\"ok\": true, \"name\":"
		     " \"loaded\", \"kind\": \"pushpull\"}",
		     "loaded \"loaded\" (pushpull); \"start\" runs it\n");
	reply_is("{\"cmd\": \"clear_port_stats\", \"port\": \"all\"}",
		     "{\"ok\": true, \"cleared\": 2}", "port statistics cleared on 2 port(s)\n");
	reply_is("{\"cmd\": \"reset_state\"}", "{\"ok\": true}",
		     "state reset: counters and metrics zeroed (servers: and the store)\n");
	reply_is("{\"cmd\": \"quit\"}", "{\"ok\": true}", "psb is quitting\n");
	/* help: in the order psb gives them */
	reply_is("{\"cmd\": \"help\"}", "{\"ok\": true, \"commands\": {\"start\": \"start one\","
		     " \"counters\": \"every counter\"}}",
		     "  start              start one\n"
		     "  counters           every counter\n");
	/* counters under a filter: paths from the top, "ok" is no counter */
	reply_is("{\"cmd\": \"counters\", \"filter\": \"roles.worker0\"}",
		     "{\"counters\": {\"tx_pkts\": 5, \"busy_pct\": 12.5}, \"ok\": true}",
		     "roles.worker0.tx_pkts 5\n"
		     "roles.worker0.busy_pct 12.5\n");
	reply_is("{\"cmd\": \"counters\", \"filter\": \"store.staged\"}",
		     "{\"counters\": 0, \"ok\": true}", "store.staged 0\n");
	reply_is("{\"cmd\": \"counters\"}", "{\"counters\": {\"node\": {\"role\": \"worker\"}},"
		     " \"ok\": true}", "node.role worker\n");
}

static void
test_list(void **state)
{
	(void)state;
	reply_is("{\"cmd\": \"list\"}", "{\"ok\": true, \"experiments\": [], \"kinds\":"
		     " [\"pushpull\", \"serve\"]}",
		     "no experiments yet\n"
		     "kinds: pushpull, serve\n");
	reply_is("{\"cmd\": \"list\"}", "{\"ok\": true, \"experiments\": [{\"id\": 1, \"name\":"
		     " \"small\", \"kind\": \"pushpull\", \"state\": \"done\", \"elapsed_s\": 0.5,"
		     " \"results\": \"/r/small\"}, {\"id\": 2, \"name\": \"long\", \"kind\":"
		     " \"pushpull\", \"state\": \"running\", \"elapsed_s\": 10.123456789012,"
		     " \"results\": \"/r/long\"}], \"kinds\": [\"pushpull\", \"serve\"],"
		     " \"loaded\": \"long\"}",
		     "id  name   kind      state      elapsed_s  results\n"
		     " 1  small  pushpull  done             0.5  /r/small\n"
		     " 2  long   pushpull  running  10.12345679  /r/long\n"
		     "kinds: pushpull, serve\n"
		     "loaded: long\n");
}

/* A command without a summary of its own: its members, rows as a table. */
static void
test_other(void **state)
{
	(void)state;
	reply_is("{\"cmd\": \"future\"}", "{\"ok\": true, \"ratio\": 0.30000000000000004,"
		     " \"peer\": null, \"up\": true, \"nested\": {\"a\": {\"b\": 1}},"
		     " \"rows\": [{\"x\": 1, \"y\": \"a\"}, {\"x\": 22}]}",
		     "ratio 0.3\n"
		     "peer null\n"
		     "up true\n"
		     "nested.a.b 1\n"
		     "rows:\n"
		     " x  y\n"
		     " 1  a\n"
		     "22  -\n");
	reply_is("{\"cmd\": \"future\"}", "{\"ok\": true}", "ok\n");
}

/* The client, against stand-ins for psb on a socket of the test's own */

enum peer_kind {
	PEER_ECHO,	/* answers each request with its id and what it asked */
	PEER_SILENT,	/* reads, never answers */
	PEER_LONG,	/* answers without end (no newline) */
	PEER_CLOSE,	/* closes without answering */
	PEER_IDLE,	/* says idle_timeout and closes, then answers on the next connection */
};

struct peer {
	enum peer_kind kind;
	int lfd;
	char path[108];
	pthread_t thread;
	int served;	/* connections accepted */
};

static int
read_line(int fd, char *buf, size_t len)
{
	size_t n = 0;

	while (n + 1 < len && read(fd, buf + n, 1) == 1) {
		if (buf[n] == '\n') {
			buf[n] = '\0';
			return 0;
		}
		n++;
	}
	return -1;
}

/* The client may have hung up already: that is an error here, not SIGPIPE. */
static void
say(int fd, const char *text)
{
	size_t len = strlen(text), off = 0;
	ssize_t n;

	while (off < len && (n = send(fd, text + off, len - off, MSG_NOSIGNAL)) > 0)
		off += (size_t)n;
}

static void *
peer_main(void *arg)
{
	struct peer *p = arg;
	char line[4096], out[8192];
	json_t *req;
	int fd;

	while ((fd = accept(p->lfd, NULL, NULL)) >= 0) {
		p->served++;
		if (p->kind == PEER_IDLE && p->served == 1) {
			say(fd, "{\"error\":{\"code\":\"idle_timeout\",\"message\":\"idle\"}}\n");
			close(fd);
			continue;
		}
		while (read_line(fd, line, sizeof(line)) == 0) {
			if (p->kind == PEER_SILENT)
				continue;
			if (p->kind == PEER_CLOSE)
				break;
			if (p->kind == PEER_LONG) {
				memset(out, 'x', sizeof(out));
				for (int i = 0; i < 64; i++)
					if (send(fd, out, sizeof(out), MSG_NOSIGNAL) < 0)
						break;
				break;
			}
			req = json_loads(line, 0, NULL);
			/* someone else's reply first: the client skips it */
			say(fd, "{\"id\":999,\"ok\":true}\n");
			snprintf(out, sizeof(out), "{\"ok\":true,\"asked\":\"%s\",\"id\":%lld}\n",
				 json_string_value(json_object_get(req, "cmd")),
				 (long long)json_integer_value(json_object_get(req, "id")));
			say(fd, out);
			json_decref(req);
		}
		close(fd);
	}
	return NULL;
}

static void
peer_start(struct peer *p, enum peer_kind kind)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(p, 0, sizeof(*p));
	p->kind = kind;
	snprintf(p->path, sizeof(p->path), "/tmp/psb-test-ctl-%d-%d.sock", (int)getpid(),
		 (int)kind);
	unlink(p->path);
	strcpy(sa.sun_path, p->path);
	p->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(p->lfd >= 0);
	assert_int_equal(bind(p->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(p->lfd, 4), 0);
	assert_int_equal(pthread_create(&p->thread, NULL, peer_main, p), 0);
}

static void
peer_stop(struct peer *p)
{
	shutdown(p->lfd, SHUT_RDWR);
	close(p->lfd);
	pthread_join(p->thread, NULL);
	unlink(p->path);
}

static uint64_t
ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
test_client_connect_errors(void **state)
{
	struct psb_ctl_conn c;
	char path[128], want[256];
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/psb-test-ctl-%d.none", (int)getpid());
	unlink(path);
	assert_int_equal(psb_ctl_open(&c, path, 1000, NULL), -ENOENT);
	snprintf(want, sizeof(want), "cannot connect to %s: no such socket", path);
	assert_memory_equal(c.err, want, strlen(want));
	/* a file that is no socket */
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(psb_ctl_open(&c, path, 1000, NULL), -ENOTSOCK);
	snprintf(want, sizeof(want), "cannot connect to %s: not a socket", path);
	assert_string_equal(c.err, want);
	unlink(path);
	memset(path, 'p', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	assert_int_equal(psb_ctl_open(&c, path, 1000, NULL), -ENAMETOOLONG);
	assert_non_null(strstr(c.err, "path longer than 107 bytes"));
}

static void
test_client_request(void **state)
{
	struct psb_ctl_conn c;
	struct peer p;
	json_t *req = json_pack("{s:s}", "cmd", "status"), *reply;
	int i;

	(void)state;
	peer_start(&p, PEER_ECHO);
	assert_int_equal(psb_ctl_open(&c, p.path, 2000, NULL), 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(psb_ctl_request(&c, req, 1, &reply), 0);
		/* ours, not the one with someone else's id; without its id */
		assert_string_equal(json_string_value(json_object_get(reply, "asked")), "status");
		assert_null(json_object_get(reply, "id"));
		json_decref(reply);
	}
	/* the caller's request is left as it was */
	assert_null(json_object_get(req, "id"));
	psb_ctl_close(&c);
	peer_stop(&p);

	/* let go of for idling: connected again, asked again */
	peer_start(&p, PEER_IDLE);
	assert_int_equal(psb_ctl_open(&c, p.path, 2000, NULL), 0);
	assert_int_equal(psb_ctl_request(&c, req, 1, &reply), 0);
	assert_string_equal(json_string_value(json_object_get(reply, "asked")), "status");
	assert_int_equal(p.served, 2);
	json_decref(reply);
	psb_ctl_close(&c);
	peer_stop(&p);
	json_decref(req);
}

static void
test_client_bounds(void **state)
{
	struct psb_ctl_conn c;
	struct peer p;
	json_t *req = json_pack("{s:s}", "cmd", "status"), *reply;
	char want[256];
	uint64_t t0, took;
	volatile sig_atomic_t intr = 0;

	(void)state;
	/* no reply within the time: said, with the socket and the time */
	peer_start(&p, PEER_SILENT);
	assert_int_equal(psb_ctl_open(&c, p.path, 300, &intr), 0);
	t0 = ms_now();
	assert_int_equal(psb_ctl_request(&c, req, 1, &reply), -ETIMEDOUT);
	took = ms_now() - t0;
	assert_true(took >= 290 && took < 2000);
	assert_null(reply);
	snprintf(want, sizeof(want), "%s: no reply from psb within 0.3 s", p.path);
	assert_string_equal(c.err, want);
	/* Ctrl-C ends the wait at once */
	intr = 1;
	assert_int_equal(psb_ctl_request(&c, req, 1, &reply), PSB_CTL_INTERRUPTED);
	psb_ctl_close(&c);
	peer_stop(&p);

	/* a reply line longer than the bound */
	peer_start(&p, PEER_LONG);
	assert_int_equal(psb_ctl_open(&c, p.path, 2000, NULL), 0);
	c.reply_max = 100000;
	assert_int_equal(psb_ctl_request(&c, req, 1, &reply), -EMSGSIZE);
	snprintf(want, sizeof(want), "%s: reply longer than 100000 bytes without a newline",
		 p.path);
	assert_string_equal(c.err, want);
	psb_ctl_close(&c);
	peer_stop(&p);

	/* closed without a reply */
	peer_start(&p, PEER_CLOSE);
	assert_int_equal(psb_ctl_open(&c, p.path, 2000, NULL), 0);
	assert_int_equal(psb_ctl_request(&c, req, 1, &reply), -EPIPE);
	snprintf(want, sizeof(want), "%s: psb closed the connection without replying", p.path);
	assert_memory_equal(c.err, want, strlen(want));
	psb_ctl_close(&c);
	peer_stop(&p);
	json_decref(req);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reals),
		cmocka_unit_test(test_scalars),
		cmocka_unit_test(test_flat),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_status),
		cmocka_unit_test(test_experiment_end),
		cmocka_unit_test(test_commands),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_other),
		cmocka_unit_test(test_client_connect_errors),
		cmocka_unit_test(test_client_request),
		cmocka_unit_test(test_client_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
