/*
 * The Prometheus endpoint: a page from the counters' tables (psb_prom.h), served over HTTP by
 * libmicrohttpd on the main lcore, with psb deciding who gets a connection and for how long.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>
#include <rte_ethdev.h>

#include "psb_app.h"
#include "psb_counters.h"
#include "psb_ctl.h"
#include "psb_log.h"
#include "psb_prom.h"

/* Scrapes come every few seconds: looking for them every ms costs nothing and is soon enough. */
#define PROM_POLL_NS		1000000ull
#define PROM_BACKLOG		64

#if MHD_VERSION >= 0x00097002
typedef enum MHD_Result psb_mhd_result;
#else
typedef int psb_mhd_result;
#endif

static struct {
	struct MHD_Daemon *mhd;		/* --prometheus */
	uint64_t next_http_ns;
	uint64_t next_expire_ns;	/* the next look for Prometheus connections over their time */
} g_exp;

/*
 * Connections of the Prometheus endpoint. psb accepts them itself and hands them to MHD, so
 * that it decides who gets a slot: each connection has node.prometheus_timeout per request
 * (from its start, or its previous request's end, to the end of the reply), and at
 * node.prometheus_connections a new one takes the slot of the one waiting longest for its
 * request. A client that trickles its request or never sends one costs its own slot for a
 * while, never an honest scrape's. psb closes a connection by shutting its socket down;
 * MHD sees the end on its next run and closes it.
 */
struct prom_conn {
	struct MHD_Connection *con;	/* NULL: a free slot */
	int fd;
	int busy;			/* a request is being answered */
	int closing;			/* shut down by psb, not closed by MHD yet */
	unsigned int served;		/* requests answered */
	uint64_t since;			/* ns: start, or end of the previous request */
};

static struct {
	int lfd;
	struct prom_conn *c;		/* [nslots]: live and closing ones */
	unsigned int nslots;
	unsigned int live;		/* not closing */
	unsigned int max;		/* node.prometheus_connections */
	uint64_t timeout_ns;
	char lim[64];			/* the limits in an error reply */
} g_prom = { .lfd = -1 };

/* The figures of the experiment: its info, then those of its kind. */
static void
prom_experiment(struct psb_prom *p, const struct psb_exp_snap *x)
{
	struct psb_prom_labels l = { "" }, li;

	psb_prom_label(&l, "name", x->name);
	psb_prom_label(&l, "kind", x->kind);
	li = l;
	psb_prom_label_int(&li, "id", (long long)x->id);
	psb_prom_label(&li, "state", x->state);
	psb_prom_sample(p, "psb_experiment_info", PSB_METRIC_GAUGE, 1,
		"The running or last experiment (id, state), always 1", &li, 1);
	psb_prom_sample(p, "psb_experiment_running", PSB_METRIC_GAUGE, 0,
		"1 while the experiment runs", &l, strcmp(x->state, "running") == 0);
	psb_prom_block(p, &psb_exp_block, x, &l);
	if (x->has_pp)
		psb_prom_block(p, &psb_pp_block, &x->pp, &l);
	if (x->has_stale)
		psb_prom_block(p, &psb_stale_block, &x->stale, &l);
	if (x->has_trainer)
		psb_prom_block(p, &psb_trainer_block, &x->trainer, &l);
	if (x->has_serve) {
		psb_prom_label(&l, "shard", x->serve.shard);
		psb_prom_block(p, &psb_serve_block, &x->serve, &l);
	}
}

/*
 * The passthrough's busiest queue pairs, each labelled by version, QP number and addresses:
 * PROM_QPS of them at most, so that a table of thousands does not make a page of them all
 * (psbctl roce_qp lists every one).
 */
#define PROM_QPS	32

static void
prom_roce_qps(struct psb_prom *p)
{
	struct psb_roce_qp rows[PROM_QPS];
	struct psb_passthrough_view v;
	struct psb_prom_labels l;
	char src[64], dst[64];
	uint32_t i;

	if (psb_passthrough_read(&v, rows, PROM_QPS) != 0)
		return;
	for (i = 0; i < v.nrows; i++) {
		l.s[0] = '\0';
		psb_prom_label(&l, "version", psb_roce_kind_names[rows[i].key.kind < PSB_ROCE_KINDS ?
			       rows[i].key.kind : 0]);
		psb_prom_label_int(&l, "qpn", (long long)rows[i].key.dqpn);
		psb_roce_addr_str(rows[i].key.src, src, sizeof(src));
		psb_roce_addr_str(rows[i].key.dst, dst, sizeof(dst));
		psb_prom_label(&l, "src", src);
		psb_prom_label(&l, "dst", dst);
		psb_prom_block(p, &psb_roce_qp_block, &rows[i], &l);
	}
}

/* Every port's counters, and its extended statistics by name. */
static void
prom_ports(struct psb_prom *p, struct psb_app *app, const struct psb_snap *s)
{
	const struct rte_eth_xstat_name *names;
	const struct rte_eth_xstat *vals;
	struct psb_prom_labels l, lx;
	unsigned int i;
	int n, k;

	for (i = 0; i < s->nports; i++) {
		const struct psb_port_snap *ps = &s->ports[i];

		l.s[0] = '\0';
		psb_prom_label_int(&l, "port", (long long)ps->port);
		lx = l;
		psb_prom_label(&lx, "spec", ps->spec);
		psb_prom_sample(p, "psb_port_info", PSB_METRIC_GAUGE, 1,
			"Port of psb (spec), always 1", &lx, 1);
		psb_prom_block(p, &psb_port_block, ps, &l);
		n = psb_port_xstats(app, ps->idx, &names, &vals);
		for (k = 0; k < n; k++) {
			if (vals[k].id >= (uint64_t)n)
				continue;
			lx = l;
			psb_prom_label(&lx, "name", names[vals[k].id].name);
			psb_prom_sample(p, "psb_port_xstat_total", PSB_METRIC_COUNTER, 0,
				"Extended statistics of the port (rte_eth_xstats)", &lx,
				(double)vals[k].value);
		}
	}
}

char *
psb_export_prometheus(struct psb_app *app, int openmetrics)
{
	struct psb_prom *p = psb_prom_new();
	struct psb_prom_labels l = { "" };
	struct psb_snap *s;
	char *page = NULL;
	unsigned int i;

	if (p == NULL)
		return NULL;
	pthread_mutex_lock(&app->ctl_lock);
	s = psb_snap_take(app);
	if (s != NULL) {
		psb_prom_label(&l, "role", s->node.role);
		psb_prom_label(&l, "ip", s->node.ip);
		psb_prom_sample(p, "psb_node_info", PSB_METRIC_GAUGE, 1,
			"Node of psb (role, ip), always 1", &l, 1);
		psb_prom_block(p, &psb_node_block, &s->node, NULL);
		prom_ports(p, app, s);
	}
	pthread_mutex_unlock(&app->ctl_lock);
	if (s == NULL) {
		psb_prom_free(p);
		return NULL;
	}
	for (i = 0; i < s->nroles; i++) {
		const struct psb_role_snap *r = &s->roles[i];

		l.s[0] = '\0';
		psb_prom_label(&l, "role", r->role);
		psb_prom_label_int(&l, "instance", r->idx);
		psb_prom_label_int(&l, "lcore", (long long)r->lcore);
		psb_prom_block(p, &psb_role_block, r, &l);
	}
	if (s->has_store)
		psb_prom_block(p, &psb_store_block, &s->store, NULL);
	if (s->has_sched)
		psb_prom_block(p, &psb_sched_block, &s->sched, NULL);
	if (s->has_pt) {
		psb_prom_block(p, &psb_pt_block, &s->pt, NULL);
		prom_roce_qps(p);
	}
	psb_prom_block(p, &psb_control_block, &s->control, NULL);
	prom_experiment(p, &s->exp);
	free(s);
	page = psb_prom_page(p, openmetrics);
	psb_prom_free(p);
	return page;
}

static psb_mhd_result
prom_reply(struct MHD_Connection *con, unsigned int status, const char *type, char *text,
		enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r;
	psb_mhd_result ret;

	r = MHD_create_response_from_buffer(strlen(text), text, mode);
	if (r == NULL) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(con, status, r);
	MHD_destroy_response(r);
	return ret;
}

static struct prom_conn *
prom_conn_of(struct MHD_Connection *con)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(con, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci != NULL ? ci->socket_context : NULL;
}

static psb_mhd_result
prom_handler(void *cls, struct MHD_Connection *con, const char *url, const char *method,
		const char *version, const char *upload_data, size_t *upload_data_size,
		void **req_cls)
{
	struct psb_app *app = cls;
	const char *accept;
	char *text;
	int om;

	static int first_call_seen;

	RTE_SET_USED(version);
	RTE_SET_USED(upload_data);
	/*
	 * The first call comes with the headers: a reply queued then makes MHD discard the
	 * request body and close the connection. Answering on the second keeps it alive
	 * for a scraper's next request.
	 */
	if (*req_cls == NULL) {
		struct prom_conn *pc = prom_conn_of(con);

		if (pc != NULL)
			pc->busy = 1;	/* the request is whole: its reply is under way */
		*req_cls = &first_call_seen;
		return MHD_YES;
	}
	if (*upload_data_size != 0) {
		*upload_data_size = 0;	/* a body nobody asked for: drop it */
		return MHD_YES;
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return prom_reply(con, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
			(char *)"only GET /metrics\n", MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/metrics") != 0)
		return prom_reply(con, MHD_HTTP_NOT_FOUND, "text/plain",
			(char *)"not found: psb serves /metrics\n", MHD_RESPMEM_PERSISTENT);
	app->cp.prometheus_requests++;
	/* OpenMetrics to whoever asks for it, as Prometheus does; the text format 0.0.4 else */
	accept = MHD_lookup_connection_value(con, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	om = accept != NULL && strstr(accept, "application/openmetrics-text") != NULL;
	text = psb_export_prometheus(app, om);
	if (text == NULL)
		return prom_reply(con, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain",
			(char *)"out of memory\n", MHD_RESPMEM_PERSISTENT);
	return prom_reply(con, MHD_HTTP_OK, om ? PSB_PROM_OM_CONTENT_TYPE : PSB_PROM_CONTENT_TYPE,
		text, MHD_RESPMEM_MUST_FREE);
}

/*
 * "[IP:]PORT" or "[IPv6]:PORT"; 127.0.0.1 when no IP is given. *loopback says whether the
 * address is one: elsewhere anyone who reaches it reads the counters (no authentication),
 * which psb says at start.
 */
static int
prom_addr(const char *spec, struct sockaddr_storage *ss, socklen_t *sslen, int *loopback,
		char *err, size_t errlen)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	const char *port = spec, *colon;
	char host[64] = "127.0.0.1", *end;
	unsigned long pn;

	memset(ss, 0, sizeof(*ss));
	if (spec[0] == '[') {
		colon = strstr(spec, "]:");
		if (colon == NULL || (size_t)(colon - spec - 1) >= sizeof(host))
			goto bad;
		snprintf(host, sizeof(host), "%.*s", (int)(colon - spec - 1), spec + 1);
		port = colon + 2;
	} else if ((colon = strrchr(spec, ':')) != NULL) {
		if ((size_t)(colon - spec) >= sizeof(host))
			goto bad;
		snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
		port = colon + 1;
	}
	errno = 0;
	pn = strtoul(port, &end, 10);
	if (!isdigit((unsigned char)*port) || *end != '\0' || errno != 0 || pn == 0 || pn > 65535)
		goto bad;
	if (strcmp(host, "localhost") == 0)
		snprintf(host, sizeof(host), "127.0.0.1");
	if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)pn);
		*sslen = sizeof(*s4);
		*loopback = (ntohl(s4->sin_addr.s_addr) >> 24) == 127;
	} else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)pn);
		*sslen = sizeof(*s6);
		*loopback = IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr);
	} else {
		goto bad;
	}
	return 0;
bad:
	snprintf(err, errlen, "--prometheus: expected [IP:]PORT or [IPv6]:PORT (IP default "
		 "127.0.0.1; PORT 1-65535), got '%s'", spec);
	return -EINVAL;
}

static void
prom_notify(void *cls, struct MHD_Connection *con, void **socket_context,
		enum MHD_ConnectionNotificationCode toe)
{
	struct psb_app *app = cls;
	const union MHD_ConnectionInfo *ci;
	struct prom_conn *pc = *socket_context;
	unsigned int i;

	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (pc != NULL) {
			/* MHD refuses oversized and malformed requests without a word to psb */
			if (!pc->closing && !pc->busy && pc->served == 0)
				app->cp.prometheus_incomplete++;
			if (!pc->closing)
				g_prom.live--;
			memset(pc, 0, sizeof(*pc));
		}
		*socket_context = NULL;
		return;
	}
	ci = MHD_get_connection_info(con, MHD_CONNECTION_INFO_CONNECTION_FD);
	for (i = 0; i < g_prom.nslots && g_prom.c[i].con != NULL; i++)
		;
	if (i == g_prom.nslots || ci == NULL)
		return;		/* MHD's limit is above the slots: not reached */
	pc = &g_prom.c[i];
	pc->con = con;
	pc->fd = ci->connect_fd;
	pc->since = psb_now_ns(app);
	g_prom.live++;
	*socket_context = pc;
}

static void
prom_completed(void *cls, struct MHD_Connection *con, void **req_cls,
		enum MHD_RequestTerminationCode toe)
{
	struct psb_app *app = cls;
	struct prom_conn *pc = prom_conn_of(con);

	RTE_SET_USED(req_cls);
	RTE_SET_USED(toe);
	if (pc != NULL) {
		pc->busy = 0;
		pc->served++;
		pc->since = psb_now_ns(app);	/* the next request's time starts */
	}
}

/*
 * Close pc: a client that MHD has not answered anything yet is told why first, then the
 * socket is shut down for MHD to find closed. An idle kept-alive connection is closed
 * without a word, as HTTP servers do: a reply it did not ask for would confuse its client.
 */
static void
prom_close(struct prom_conn *pc, const char *status, const char *why)
{
	char text[320];
	int n;

	if (!pc->busy && pc->served == 0) {
		n = snprintf(text, sizeof(text), "HTTP/1.1 %s\r\nContent-Type: text/plain\r\n"
			     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s\n", status,
			     strlen(why) + 1, why);
		(void)!send(pc->fd, text, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	shutdown(pc->fd, SHUT_RDWR);
	pc->closing = 1;
	g_prom.live--;
}

/* Connections past their time per request go. */
static void
prom_expire(struct psb_app *app, uint64_t now_ns)
{
	char why[160];
	unsigned int i;

	for (i = 0; i < g_prom.nslots; i++) {
		struct prom_conn *pc = &g_prom.c[i];

		if (pc->con == NULL || pc->closing || now_ns - pc->since < g_prom.timeout_ns)
			continue;
		app->cp.prometheus_timeouts++;
		snprintf(why, sizeof(why), "psb: no whole request and reply within %s "
			 "(node.prometheus_timeout)", g_prom.lim);
		prom_close(pc, "408 Request Timeout", why);
	}
}

/* Room for one more connection: the one waiting longest for its request goes. 0: none. */
static int
prom_evict(struct psb_app *app)
{
	struct prom_conn *old = NULL;
	char why[160];
	unsigned int i;

	for (i = 0; i < g_prom.nslots; i++) {
		struct prom_conn *pc = &g_prom.c[i];

		if (pc->con != NULL && !pc->closing && !pc->busy &&
		    (old == NULL || pc->since < old->since))
			old = pc;
	}
	if (old == NULL)
		return 0;
	app->cp.prometheus_evicted++;
	snprintf(why, sizeof(why), "psb: connection closed for a new one: %u at most "
		 "(node.prometheus_connections)", g_prom.max);
	prom_close(old, "503 Service Unavailable", why);
	return 1;
}

/*
 * New connections, as many as a pass takes requests: a slot each, or refused. Only when
 * one waits: Linux's accept() makes and frees a socket and a file before it finds the
 * queue empty, ~10 us a call, while poll() looks at the queue for a fraction of that.
 */
static void
prom_accept(struct psb_app *app)
{
	uint64_t budget = app->conf.node.ctl_requests_per_pass;
	struct pollfd pfd = { .fd = g_prom.lfd, .events = POLLIN };
	struct sockaddr_storage ss;
	socklen_t sl;
	char text[256];
	int fd, n;

	if (poll(&pfd, 1, 0) != 1 || !(pfd.revents & POLLIN))
		return;
	while (budget-- > 0) {
		sl = sizeof(ss);
		fd = accept4(g_prom.lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		if (g_prom.live >= g_prom.max && !prom_evict(app)) {
			app->cp.prometheus_refused++;
			n = snprintf(text, sizeof(text), "HTTP/1.1 503 Service Unavailable\r\n"
				     "Content-Type: text/plain\r\nConnection: close\r\n\r\n"
				     "psb: all %u connections are answering requests "
				     "(node.prometheus_connections)\n", g_prom.max);
			(void)!send(fd, text, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
			close(fd);
			continue;
		}
		/* MHD closes fd when it cannot take it, and notify gives it a slot when it can */
		if (MHD_add_connection(g_exp.mhd, fd, (struct sockaddr *)&ss, sl) != MHD_YES)
			app->cp.prometheus_refused++;
	}
}

/*
 * MHD speaks of every connection a client drops, which a hostile client would turn into a
 * log as long as it likes: those lines are psb.export's debug (-v).
 */
static void
prom_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];
	size_t n;

	RTE_SET_USED(cls);
	if (!PSB_LOG_ON(DEBUG, export))
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	if (n > 0 && line[n - 1] == '\n')
		line[n - 1] = '\0';
	PSB_DEBUG(export, "prometheus: %s", line);
}

int
psb_prometheus_init(struct psb_app *app, char *err, size_t errlen)
{
	const struct psb_exp_node *node = &app->conf.node;
	struct sockaddr_storage ss;
	socklen_t sslen = 0;
	int fd, on = 1, rc, loopback = 0;

	rc = prom_addr(app->prometheus, &ss, &sslen, &loopback, err, errlen);
	if (rc != 0)
		return rc;
	/* psb binds itself: MHD would not say why it could not */
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0 ||
	    bind(fd, (struct sockaddr *)&ss, sslen) != 0 || listen(fd, PROM_BACKLOG) != 0) {
		rc = -errno;
		snprintf(err, errlen, "--prometheus %s: cannot listen: %s", app->prometheus,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	g_prom.lfd = fd;
	g_prom.max = (unsigned int)node->prometheus_connections;
	g_prom.timeout_ns = node->prometheus_timeout;
	psb_conf_format_duration(g_prom.lim, sizeof(g_prom.lim), g_prom.timeout_ns);
	/* closed ones linger until MHD's next run: room for a pass's worth of them */
	g_prom.nslots = g_prom.max * 2 + (unsigned int)node->ctl_requests_per_pass;
	g_prom.c = calloc(g_prom.nslots, sizeof(*g_prom.c));
	if (g_prom.c == NULL) {
		snprintf(err, errlen, "--prometheus: out of memory");
		return -ENOMEM;
	}
	/*
	 * No thread of MHD's own: psb_export_poll drives it without blocking (MHD_run), on the
	 * main lcore. A thread would run on the main lcore's CPU anyway (threads inherit its
	 * affinity), preempting the data plane there in run-to-completion mode at the
	 * scheduler's whim, and would contend for ctl_lock. Driven from the main loop, a
	 * scrape costs it what a counters line costs, once per scrape, at a known point.
	 * MHD's own idle timeout stays as a backstop behind psb's.
	 */
	g_exp.mhd = MHD_start_daemon(MHD_USE_AUTO | MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET,
		0, NULL, NULL, prom_handler, app,
		MHD_OPTION_EXTERNAL_LOGGER, prom_log, app,
		MHD_OPTION_CONNECTION_LIMIT, g_prom.nslots,
		MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned int)(node->prometheus_timeout / 1000000000ull + 2),
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)node->prometheus_request_max,
		MHD_OPTION_NOTIFY_CONNECTION, prom_notify, app,
		MHD_OPTION_NOTIFY_COMPLETED, prom_completed, app, MHD_OPTION_END);
	if (g_exp.mhd == NULL) {
		snprintf(err, errlen, "--prometheus %s: cannot start the HTTP server (-v says why)",
			app->prometheus);
		return -EIO;
	}
	PSB_INFO(export, "Prometheus metrics on http://%s%s/metrics%s",
		strchr(app->prometheus, ':') != NULL ? "" : "127.0.0.1:", app->prometheus,
		loopback ? "" : " (not a loopback address: whoever reaches it reads the counters; "
		"there is no authentication)");
	return 0;
}

void
psb_prometheus_poll(struct psb_app *app, uint64_t now_ns)
{
	if (g_exp.mhd == NULL)
		return;
	if (now_ns >= g_exp.next_expire_ns) {
		prom_expire(app, now_ns);
		g_exp.next_expire_ns = now_ns + PROM_POLL_NS;
	}
	/* new connections and requests only while clients have time left (psb_cp_open) */
	if (now_ns >= g_exp.next_http_ns && psb_cp_open()) {
		uint64_t t0 = rte_rdtsc();

		prom_accept(app);
		MHD_run(g_exp.mhd);
		g_exp.next_http_ns = now_ns + PROM_POLL_NS;
		psb_cp_charge(rte_rdtsc() - t0);
	}
}

void
psb_prometheus_fini(void)
{
	if (g_exp.mhd != NULL) {
		MHD_stop_daemon(g_exp.mhd);
		g_exp.mhd = NULL;
	}
	if (g_prom.lfd >= 0) {
		close(g_prom.lfd);
		g_prom.lfd = -1;
	}
	free(g_prom.c);
	g_prom.c = NULL;
	g_prom.nslots = g_prom.live = 0;
}
