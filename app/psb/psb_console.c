/* Console: testpmd-style rte_cmdline commands on stdin (-i) or a file, over psb_cmd_exec. */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <cmdline.h>
#include <cmdline_parse.h>
#include <cmdline_parse_num.h>
#include <cmdline_parse_string.h>
#include <cmdline_socket.h>

#include "psb_app.h"
#include "psb_ctl.h"
#include "psb_render.h"
#include "psb_verbs.h"

#define CON_PROMPT	"psb> "
#define CON_CTRL_C	'\003'

static struct {
	struct psb_app *app;
	struct cmdline *cl;
	int fd;			/* what cl reads */
	int from_file;		/* cl reads --cmdline-file; with -i, stdin comes next */
	int is_tty;
	int interactive;
	int waiting;		/* "wait": no input is read until the experiment ends */
	int quit;		/* "quit" was given */
	int eof;		/* the input ended; what is buffered still runs */
	int line_open;		/* input since the last end of line */
	uint64_t file_read;	/* bytes of the command file read so far */
	int tty_saved;
	struct termios tty;
	size_t off, len;
	char in[512];		/* read ahead of what cl was given */
} con = { .fd = -1 };

/*
 * Output of a command is gathered in memory and written with cmdline_printf in one go, so
 * it follows the echo of its line and a slow terminal cannot interleave it.
 */
struct con_out {
	FILE *f;
	char *buf;
	size_t len;
};

static FILE *
out_begin(struct con_out *o)
{
	o->buf = NULL;
	o->len = 0;
	o->f = open_memstream(&o->buf, &o->len);
	return o->f != NULL ? o->f : stdout;
}

static void
out_end(struct con_out *o, struct cmdline *cl)
{
	/* what the data plane printed with stdio (results tables) comes first */
	fflush(stdout);
	if (o->f == NULL)
		return;
	fclose(o->f);
	if (o->buf != NULL && o->len != 0)
		cmdline_printf(cl, "%s", o->buf);
	free(o->buf);
}

/* Run one control command; the reply, never NULL. */
static json_t *
con_exec(json_t *req)
{
	json_t *res;
	int quit = 0;

	if (req == NULL)
		return psb_cmd_error("no_memory", "out of memory");
	res = psb_cmd_exec(con.app, req, &quit);
	json_decref(req);
	if (quit) {
		con.quit = 1;
		con.app->quit = 1;
	}
	return res != NULL ? res : psb_cmd_error("no_memory", "out of memory");
}

static int
reply_is_error(const json_t *res)
{
	return json_object_get(res, "error") != NULL;
}

/* Print an error reply as psbctl does; 1 if res is one (and is released), 0 if a success. */
static int
reply_failed(FILE *out, json_t *res)
{
	if (!psb_render_error(out, "error", res))
		return 0;
	json_decref(res);
	return 1;
}

/*
 * Run req (released here) and write its reply as psbctl does, with psb_render_reply: the
 * same reply reads the same through both.
 */
static void
con_run(FILE *out, json_t *req)
{
	json_t *res = con_exec(json_incref(req));	/* req NULL: an error reply */

	psb_render_reply(out, out, "error", req, res);
	json_decref(res);
	json_decref(req);
}

static json_int_t
get_int(const json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

static double
get_num(const json_t *o, const char *key)
{
	return json_number_value(json_object_get(o, key));
}

static const char *
get_str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : "";
}

/* "worker12" -> role "worker", instance "12". */
static void
split_role(const char *name, char *role, size_t rolelen, const char **inst)
{
	size_t n = strlen(name);

	while (n > 0 && isdigit((unsigned char)name[n - 1]))
		n--;
	snprintf(role, rolelen, "%.*s", (int)n, name);
	*inst = name[n] != '\0' ? name + n : "-";
}

static json_int_t
sum_values(json_t *o)
{
	json_int_t n = 0;
	const char *k;
	json_t *x;

	json_object_foreach(o, k, x)
		n += json_integer_value(x);
	return n;
}

static json_t *
counters_req(const char *filter)
{
	return json_pack("{s:s,s:s}", "cmd", "counters", "filter", filter);
}

/* show ... */

enum show_what {
	SHOW_LCORES,
	SHOW_ROLES,
	SHOW_COUNTERS,
	SHOW_EXPERIMENT,
	SHOW_LOG,
	SHOW_RDMA,
	SHOW_ROCE_QP,
};

static void
show_roles(FILE *out)
{
	json_t *res = con_exec(counters_req("roles")), *roles, *r;
	const char *name, *inst;
	char role[32];

	if (reply_failed(out, res))
		return;
	roles = json_object_get(res, "counters");
	fprintf(out, "%-10s %4s %5s %14s %14s %10s %10s %6s\n", "ROLE", "INST", "LCORE", "RX-PKTS",
		"TX-PKTS", "DROPS", "RING-FULL", "BUSY%");
	json_object_foreach(roles, name, r) {
		split_role(name, role, sizeof(role), &inst);
		fprintf(out, "%-10s %4s %5" JSON_INTEGER_FORMAT " %14" JSON_INTEGER_FORMAT
			" %14" JSON_INTEGER_FORMAT " %10" JSON_INTEGER_FORMAT " %10"
			JSON_INTEGER_FORMAT " %6.2f\n", role, inst, get_int(r, "lcore"),
			get_int(r, "rx_pkts"), get_int(r, "tx_pkts"),
			sum_values(json_object_get(r, "drops")), get_int(r, "ring_full"),
			get_num(r, "busy_pct"));
	}
	json_decref(res);
}

static void
show_lcores(FILE *out)
{
	json_t *res = con_exec(counters_req("roles")), *roles, *r;
	json_int_t lc[PSB_MAX_ROLES], t;
	unsigned int n = 0, i, j;
	const char *name;

	if (reply_failed(out, res))
		return;
	roles = json_object_get(res, "counters");
	json_object_foreach(roles, name, r) {
		t = get_int(r, "lcore");
		for (i = 0; i < n && lc[i] != t; i++)
			;
		if (i == n && n < RTE_DIM(lc))
			lc[n++] = t;
	}
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && lc[j - 1] > lc[j]; j--) {
			t = lc[j];
			lc[j] = lc[j - 1];
			lc[j - 1] = t;
		}
	fprintf(out, "%5s %7s  %s\n", "LCORE", "BUSY%", "ROLES");
	for (i = 0; i < n; i++) {
		double busy = 0, all = 0;

		/* roles on one lcore take turns: its busy share is theirs summed */
		json_object_foreach(roles, name, r) {
			if (get_int(r, "lcore") != lc[i])
				continue;
			busy += (double)get_int(r, "busy_cycles");
			all += (double)(get_int(r, "busy_cycles") + get_int(r, "idle_cycles"));
		}
		fprintf(out, "%5" JSON_INTEGER_FORMAT " %7.2f ", lc[i], all > 0 ? 100 * busy / all : 0);
		json_object_foreach(roles, name, r)
			if (get_int(r, "lcore") == lc[i])
				fprintf(out, " %s", name);
		fputc('\n', out);
	}
	json_decref(res);
}

/*
 * A role name ("worker0", "rx0.drops") or a dotted path from the top ("store", "ports.0"):
 * the path as given first, then under roles.
 */
static void
show_counters(FILE *out, const char *what)
{
	char path[256];
	json_t *req = counters_req(what), *res, *alt, *alt_res;

	res = con_exec(json_incref(req));
	if (reply_is_error(res) && *what != '\0' && strncmp(what, "roles.", 6) != 0) {
		snprintf(path, sizeof(path), "roles.%s", what);
		alt = counters_req(path);
		alt_res = con_exec(json_incref(alt));
		if (!reply_is_error(alt_res)) {
			json_decref(res);
			json_decref(req);
			res = alt_res;
			req = alt;
		} else {
			json_decref(alt_res);
			json_decref(alt);
		}
	}
	psb_render_reply(out, out, "error", req, res);
	json_decref(res);
	json_decref(req);
}

/*
 * Straight from psb_verbs rather than through the rdma command: the table is printed from
 * the walk's own struct, of which the command's JSON is another rendering.
 */
static void
show_rdma(FILE *out)
{
	struct psb_verbs_list *l = malloc(sizeof(*l));

	if (l == NULL) {
		fprintf(out, "error: no_memory: out of memory\n");
		return;
	}
	psb_verbs_list(l);
	psb_verbs_print(out, l);
	free(l);
}

/*
 * The passthrough's RoCE queue pairs (the roce_qp command): the totals in a line, then the
 * 32 with most packets, a line each.
 */
#define SHOW_QPS	32

static void
show_roce_qp(FILE *out)
{
	json_t *res = con_exec(json_pack("{s:s, s:i}", "cmd", "roce_qp", "max", SHOW_QPS));
	json_t *q, *t, *qps, *r, *ops, *naks;
	size_t i;

	if (reply_failed(out, res))
		return;
	q = json_object_get(res, "roce_qp");
	t = json_object_get(q, "totals");
	qps = json_object_get(q, "qps");
	fprintf(out, "RoCE passed: v1 %" JSON_INTEGER_FORMAT ", v2 IPv4 %" JSON_INTEGER_FORMAT
		", v2 IPv6 %" JSON_INTEGER_FORMAT " frames, %" JSON_INTEGER_FORMAT " B; ICRC bad %"
		JSON_INTEGER_FORMAT ", malformed %" JSON_INTEGER_FORMAT "; queue pairs %"
		JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT " tracked, %" JSON_INTEGER_FORMAT
		" evicted%s\n", get_int(t, "v1"), get_int(t, "v2_ip4"), get_int(t, "v2_ip6"),
		get_int(t, "bytes"), get_int(t, "icrc_bad"), get_int(t, "malformed"),
		get_int(q, "tracked"), get_int(q, "cap"), get_int(t, "qp_evicted"),
		json_is_false(json_object_get(q, "accounting")) ?
		" (not counting: --no-roce-accounting)" : "");
	fprintf(out, "%-6s %8s %-22s %-22s %10s %12s %6s %6s %6s %6s %6s %5s %7s %5s %5s %6s %5s\n",
		"VER", "QPN", "SRC", "DST", "PKTS", "BYTES", "SEND", "WRITE", "READ", "ACK",
		"ATOMIC", "CNP", "MISSING", "DUP", "NAKS", "ECN-CE", "ICRC");
	json_array_foreach(qps, i, r) {
		ops = json_object_get(r, "ops");
		naks = json_object_get(r, "naks");
		fprintf(out, "%-6s 0x%06llx %-22s %-22s %10" JSON_INTEGER_FORMAT
			" %12" JSON_INTEGER_FORMAT " %6" JSON_INTEGER_FORMAT " %6" JSON_INTEGER_FORMAT
			" %6" JSON_INTEGER_FORMAT " %6" JSON_INTEGER_FORMAT " %6" JSON_INTEGER_FORMAT
			" %5" JSON_INTEGER_FORMAT " %7" JSON_INTEGER_FORMAT " %5" JSON_INTEGER_FORMAT
			" %5" JSON_INTEGER_FORMAT " %6" JSON_INTEGER_FORMAT " %5" JSON_INTEGER_FORMAT
			"\n", json_string_value(json_object_get(r, "version")),
			(unsigned long long)get_int(r, "qpn"),
			json_string_value(json_object_get(r, "src")),
			json_string_value(json_object_get(r, "dst")), get_int(r, "pkts"),
			get_int(r, "bytes"), get_int(ops, "send"), get_int(ops, "write"),
			get_int(ops, "read"), get_int(ops, "ack"), get_int(ops, "atomic"),
			get_int(ops, "cnp"), get_int(r, "psn_missing"), get_int(r, "psn_dup"),
			sum_values(naks), get_int(r, "ecn_ce"), get_int(r, "icrc_bad"));
	}
	if ((json_int_t)json_array_size(qps) < get_int(q, "tracked"))
		fprintf(out, "(%" JSON_INTEGER_FORMAT " more; psbctl roce_qp lists them all)\n",
			get_int(q, "tracked") - (json_int_t)json_array_size(qps));
	json_decref(res);
}

/* As psbctl status: the node, then the experiment (every figure: show counters experiment). */
static void
show_experiment(FILE *out)
{
	con_run(out, json_pack("{s:s}", "cmd", "status"));
}

struct res_show {
	cmdline_fixed_string_t show;
	cmdline_fixed_string_t what;
};

static void
cb_show(void *parsed, struct cmdline *cl, void *data)
{
	struct con_out o;
	FILE *out = out_begin(&o);

	RTE_SET_USED(parsed);
	switch ((enum show_what)(uintptr_t)data) {
	case SHOW_LCORES:
		show_lcores(out);
		break;
	case SHOW_ROLES:
		show_roles(out);
		break;
	case SHOW_COUNTERS:
		show_counters(out, "");
		break;
	case SHOW_EXPERIMENT:
		show_experiment(out);
		break;
	case SHOW_LOG:
		con_run(out, json_pack("{s:s}", "cmd", "log"));
		break;
	case SHOW_RDMA:
		show_rdma(out);
		break;
	case SHOW_ROCE_QP:
		show_roce_qp(out);
		break;
	}
	out_end(&o, cl);
}

static cmdline_parse_token_string_t tok_show = TOKEN_STRING_INITIALIZER(struct res_show, show,
	"show");
static cmdline_parse_token_string_t tok_show_lcores = TOKEN_STRING_INITIALIZER(struct res_show,
	what, "lcores");
static cmdline_parse_token_string_t tok_show_roles = TOKEN_STRING_INITIALIZER(struct res_show,
	what, "roles");
static cmdline_parse_token_string_t tok_show_counters = TOKEN_STRING_INITIALIZER(
	struct res_show, what, "counters");
static cmdline_parse_token_string_t tok_show_experiment = TOKEN_STRING_INITIALIZER(
	struct res_show, what, "experiment");
static cmdline_parse_token_string_t tok_show_log = TOKEN_STRING_INITIALIZER(struct res_show,
	what, "log");
static cmdline_parse_token_string_t tok_show_rdma = TOKEN_STRING_INITIALIZER(struct res_show,
	what, "rdma");

struct res_show_roce {
	cmdline_fixed_string_t show;
	cmdline_fixed_string_t roce;
	cmdline_fixed_string_t qp;
};

static cmdline_parse_token_string_t tok_roce_show = TOKEN_STRING_INITIALIZER(
	struct res_show_roce, show, "show");
static cmdline_parse_token_string_t tok_roce_roce = TOKEN_STRING_INITIALIZER(
	struct res_show_roce, roce, "roce");
static cmdline_parse_token_string_t tok_roce_qp = TOKEN_STRING_INITIALIZER(
	struct res_show_roce, qp, "qp");

static cmdline_parse_inst_t cmd_show_roce_qp = {
	.f = cb_show,
	.data = (void *)(uintptr_t)SHOW_ROCE_QP,
	.help_str = "show roce qp: RoCE passed through, per queue pair (the 32 busiest)",
	.tokens = { (void *)&tok_roce_show, (void *)&tok_roce_roce, (void *)&tok_roce_qp, NULL },
};

static cmdline_parse_inst_t cmd_show_lcores = {
	.f = cb_show,
	.data = (void *)(uintptr_t)SHOW_LCORES,
	.help_str = "show lcores: the roles on each lcore and its busy share",
	.tokens = { (void *)&tok_show, (void *)&tok_show_lcores, NULL },
};

static cmdline_parse_inst_t cmd_show_roles = {
	.f = cb_show,
	.data = (void *)(uintptr_t)SHOW_ROLES,
	.help_str = "show roles: packets, drops, ring full and busy share of each role instance",
	.tokens = { (void *)&tok_show, (void *)&tok_show_roles, NULL },
};

static cmdline_parse_inst_t cmd_show_counters = {
	.f = cb_show,
	.data = (void *)(uintptr_t)SHOW_COUNTERS,
	.help_str = "show counters: every counter of the process",
	.tokens = { (void *)&tok_show, (void *)&tok_show_counters, NULL },
};

static cmdline_parse_inst_t cmd_show_experiment = {
	.f = cb_show,
	.data = (void *)(uintptr_t)SHOW_EXPERIMENT,
	.help_str = "show experiment: the running or last experiment: id, name, kind, state, "
		"elapsed time, live figures",
	.tokens = { (void *)&tok_show, (void *)&tok_show_experiment, NULL },
};

static cmdline_parse_inst_t cmd_show_log = {
	.f = cb_show,
	.data = (void *)(uintptr_t)SHOW_LOG,
	.help_str = "show log: psb's log types and their levels",
	.tokens = { (void *)&tok_show, (void *)&tok_show_log, NULL },
};

static cmdline_parse_inst_t cmd_show_rdma = {
	.f = cb_show,
	.data = (void *)(uintptr_t)SHOW_RDMA,
	.help_str = "show rdma: RDMA devices, ports, GIDs and RoCE versions seen through rdma-core",
	.tokens = { (void *)&tok_show, (void *)&tok_show_rdma, NULL },
};

struct res_show_path {
	cmdline_fixed_string_t show;
	cmdline_fixed_string_t counters;
	cmdline_fixed_string_t path;
};

static void
cb_show_path(void *parsed, struct cmdline *cl, void *data)
{
	struct res_show_path *r = parsed;
	struct con_out o;

	RTE_SET_USED(data);
	show_counters(out_begin(&o), r->path);
	out_end(&o, cl);
}

static cmdline_parse_token_string_t tok_showp_show = TOKEN_STRING_INITIALIZER(
	struct res_show_path, show, "show");
static cmdline_parse_token_string_t tok_showp_counters = TOKEN_STRING_INITIALIZER(
	struct res_show_path, counters, "counters");
static cmdline_parse_token_string_t tok_showp_path = TOKEN_STRING_INITIALIZER(
	struct res_show_path, path, NULL);

static cmdline_parse_inst_t cmd_show_counters_path = {
	.f = cb_show_path,
	.data = NULL,
	.help_str = "show counters <role>|<path>: the counters of one role (worker0, rx0) or "
		"under a dotted path (store, ports.0, roles.server0.drops)",
	.tokens = { (void *)&tok_showp_show, (void *)&tok_showp_counters, (void *)&tok_showp_path,
		NULL },
};

/* show port stats|xstats|info all|N, clear port stats all|N */

static void
print_port(FILE *out, json_t *p, int xstats)
{
	const char *k;
	json_t *x;

	if (xstats) {
		fprintf(out, "###### NIC extended statistics for port %" JSON_INTEGER_FORMAT
			" (%s)\n", get_int(p, "port"), get_str(p, "spec"));
		json_object_foreach(json_object_get(p, "xstats"), k, x) {
			fprintf(out, "%s: ", k);
			psb_render_value(out, x);
			fputc('\n', out);
		}
		return;
	}
	fprintf(out, "\n  ######## NIC statistics for port %-2" JSON_INTEGER_FORMAT " (%s)%s "
		"########\n", get_int(p, "port"), get_str(p, "spec"),
		json_is_true(json_object_get(p, "paused")) ? ", paused" : "");
	fprintf(out, "  RX-packets: %-12" JSON_INTEGER_FORMAT " RX-missed: %-12" JSON_INTEGER_FORMAT
		" RX-bytes: %" JSON_INTEGER_FORMAT "\n", get_int(p, "ipackets"),
		get_int(p, "imissed"), get_int(p, "ibytes"));
	fprintf(out, "  RX-errors:  %-12" JSON_INTEGER_FORMAT " RX-nombuf: %" JSON_INTEGER_FORMAT
		"\n", get_int(p, "ierrors"), get_int(p, "rx_nombuf"));
	fprintf(out, "  TX-packets: %-12" JSON_INTEGER_FORMAT " TX-errors: %-12" JSON_INTEGER_FORMAT
		" TX-bytes: %" JSON_INTEGER_FORMAT "\n", get_int(p, "opackets"),
		get_int(p, "oerrors"), get_int(p, "obytes"));
	fprintf(out, "  ####################################################################\n");
}

static void
show_port(struct cmdline *cl, const char *what, int port)
{
	int xstats = strcmp(what, "xstats") == 0;
	char filter[32];
	struct con_out o;
	FILE *out = out_begin(&o);
	const char *k;
	json_t *res, *p;

	if (strcmp(what, "info") == 0) {
		/* the control socket's port_info, as psbctl shows it: testpmd's lines */
		con_run(out, port < 0 ?
			json_pack("{s:s,s:s}", "cmd", "port_info", "port", "all") :
			json_pack("{s:s,s:i}", "cmd", "port_info", "port", port));
		out_end(&o, cl);
		return;
	}
	if (port < 0)
		snprintf(filter, sizeof(filter), "ports");
	else
		snprintf(filter, sizeof(filter), "ports.%d", port);
	res = con_exec(counters_req(filter));
	if (!reply_failed(out, res)) {
		if (port >= 0) {
			print_port(out, json_object_get(res, "counters"), xstats);
		} else {
			if (json_object_size(json_object_get(res, "counters")) == 0)
				fprintf(out, "no ports\n");
			json_object_foreach(json_object_get(res, "counters"), k, p)
				print_port(out, p, xstats);
		}
		json_decref(res);
	}
	out_end(&o, cl);
}

static void
clear_port(struct cmdline *cl, int port)
{
	struct con_out o;
	FILE *out = out_begin(&o);

	con_run(out, port < 0 ?
		json_pack("{s:s,s:s}", "cmd", "clear_port_stats", "port", "all") :
		json_pack("{s:s,s:i}", "cmd", "clear_port_stats", "port", port));
	out_end(&o, cl);
}

struct res_port_all {
	cmdline_fixed_string_t verb;
	cmdline_fixed_string_t port;
	cmdline_fixed_string_t what;
	cmdline_fixed_string_t all;
};

struct res_port_id {
	cmdline_fixed_string_t verb;
	cmdline_fixed_string_t port;
	cmdline_fixed_string_t what;
	uint16_t id;
};

static void
cb_show_port_all(void *parsed, struct cmdline *cl, void *data)
{
	struct res_port_all *r = parsed;

	RTE_SET_USED(data);
	show_port(cl, r->what, -1);
}

static void
cb_show_port_id(void *parsed, struct cmdline *cl, void *data)
{
	struct res_port_id *r = parsed;

	RTE_SET_USED(data);
	show_port(cl, r->what, r->id);
}

static void
cb_clear_port_all(void *parsed, struct cmdline *cl, void *data)
{
	RTE_SET_USED(parsed);
	RTE_SET_USED(data);
	clear_port(cl, -1);
}

static void
cb_clear_port_id(void *parsed, struct cmdline *cl, void *data)
{
	struct res_port_id *r = parsed;

	RTE_SET_USED(data);
	clear_port(cl, r->id);
}

static cmdline_parse_token_string_t tok_pa_show = TOKEN_STRING_INITIALIZER(struct res_port_all,
	verb, "show");
static cmdline_parse_token_string_t tok_pa_clear = TOKEN_STRING_INITIALIZER(
	struct res_port_all, verb, "clear");
static cmdline_parse_token_string_t tok_pa_port = TOKEN_STRING_INITIALIZER(struct res_port_all,
	port, "port");
static cmdline_parse_token_string_t tok_pa_what = TOKEN_STRING_INITIALIZER(struct res_port_all,
	what, "stats#xstats#info");
static cmdline_parse_token_string_t tok_pa_stats = TOKEN_STRING_INITIALIZER(
	struct res_port_all, what, "stats");
static cmdline_parse_token_string_t tok_pa_all = TOKEN_STRING_INITIALIZER(struct res_port_all,
	all, "all");
static cmdline_parse_token_string_t tok_pi_show = TOKEN_STRING_INITIALIZER(struct res_port_id,
	verb, "show");
static cmdline_parse_token_string_t tok_pi_clear = TOKEN_STRING_INITIALIZER(struct res_port_id,
	verb, "clear");
static cmdline_parse_token_string_t tok_pi_port = TOKEN_STRING_INITIALIZER(struct res_port_id,
	port, "port");
static cmdline_parse_token_string_t tok_pi_what = TOKEN_STRING_INITIALIZER(struct res_port_id,
	what, "stats#xstats#info");
static cmdline_parse_token_string_t tok_pi_stats = TOKEN_STRING_INITIALIZER(struct res_port_id,
	what, "stats");
static cmdline_parse_token_num_t tok_pi_id = TOKEN_NUM_INITIALIZER(struct res_port_id, id,
	RTE_UINT16);

static cmdline_parse_inst_t cmd_show_port_all = {
	.f = cb_show_port_all,
	.data = NULL,
	.help_str = "show port stats|xstats|info all: statistics, extended statistics or what "
		"the driver says (MAC, link, MTU, queues; testpmd's lines) of every port",
	.tokens = { (void *)&tok_pa_show, (void *)&tok_pa_port, (void *)&tok_pa_what,
		(void *)&tok_pa_all, NULL },
};

static cmdline_parse_inst_t cmd_show_port_id = {
	.f = cb_show_port_id,
	.data = NULL,
	.help_str = "show port stats|xstats|info <port_id>: the same for one port",
	.tokens = { (void *)&tok_pi_show, (void *)&tok_pi_port, (void *)&tok_pi_what,
		(void *)&tok_pi_id, NULL },
};

static cmdline_parse_inst_t cmd_clear_port_all = {
	.f = cb_clear_port_all,
	.data = NULL,
	.help_str = "clear port stats all: zero the statistics of every port",
	.tokens = { (void *)&tok_pa_clear, (void *)&tok_pa_port, (void *)&tok_pa_stats,
		(void *)&tok_pa_all, NULL },
};

static cmdline_parse_inst_t cmd_clear_port_id = {
	.f = cb_clear_port_id,
	.data = NULL,
	.help_str = "clear port stats <port_id>: zero the statistics of one port",
	.tokens = { (void *)&tok_pi_clear, (void *)&tok_pi_port, (void *)&tok_pi_stats,
		(void *)&tok_pi_id, NULL },
};

/* Experiments: load FILE, start [FILE], stop, reset, set PARAM VALUE, wait */

/* A rest-of-line token keeps the blanks before the end of the line: not part of the value. */
static char *
trim(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

struct res_file {
	cmdline_fixed_string_t verb;
	cmdline_multi_string_t file;
};

struct res_word {
	cmdline_fixed_string_t word;
};

static void
do_start(struct cmdline *cl, const char *file)
{
	struct con_out o;
	FILE *out = out_begin(&o);

	con_run(out, file != NULL ?
		json_pack("{s:s,s:s}", "cmd", "start", "file", file) :
		json_pack("{s:s}", "cmd", "start"));
	out_end(&o, cl);
}

static void
cb_load(void *parsed, struct cmdline *cl, void *data)
{
	struct res_file *r = parsed;
	struct con_out o;
	FILE *out = out_begin(&o);

	RTE_SET_USED(data);
	con_run(out, json_pack("{s:s,s:s}", "cmd", "load", "file", trim(r->file)));
	out_end(&o, cl);
}

static void
cb_start_file(void *parsed, struct cmdline *cl, void *data)
{
	struct res_file *r = parsed;

	RTE_SET_USED(data);
	do_start(cl, trim(r->file));
}

static void
cb_start(void *parsed, struct cmdline *cl, void *data)
{
	RTE_SET_USED(parsed);
	RTE_SET_USED(data);
	do_start(cl, NULL);
}

static void
cb_stop(void *parsed, struct cmdline *cl, void *data)
{
	struct con_out o;
	FILE *out = out_begin(&o);

	RTE_SET_USED(parsed);
	RTE_SET_USED(data);
	con_run(out, json_pack("{s:s}", "cmd", "stop"));
	out_end(&o, cl);
}

static void
cb_reset(void *parsed, struct cmdline *cl, void *data)
{
	struct con_out o;
	FILE *out = out_begin(&o);

	RTE_SET_USED(parsed);
	RTE_SET_USED(data);
	con_run(out, json_pack("{s:s}", "cmd", "reset_state"));
	out_end(&o, cl);
}

static void
cb_wait(void *parsed, struct cmdline *cl, void *data)
{
	struct con_out o;
	FILE *out = out_begin(&o);
	json_t *res, *exp;

	RTE_SET_USED(parsed);
	RTE_SET_USED(data);
	res = con_exec(json_pack("{s:s}", "cmd", "status"));
	if (!reply_failed(out, res)) {
		exp = json_object_get(res, "experiment");
		if (strcmp(get_str(exp, "state"), "running") == 0) {
			/* psb_console_poll reads no more input until it ended */
			con.waiting = 1;
			fprintf(out, "waiting for experiment %" JSON_INTEGER_FORMAT " \"%s\" to end\n",
				get_int(exp, "id"), get_str(exp, "name"));
		} else if (get_int(exp, "id") == 0) {
			fprintf(out, "wait: no experiment has run\n");
		} else {
			fprintf(out, "wait: nothing runs; ");
			psb_render_experiment(out, exp);
		}
		json_decref(res);
	}
	out_end(&o, cl);
}

/* The wait is over: say how the experiment ended. */
static void
wait_done(int interrupted)
{
	struct con_out o;
	FILE *out = out_begin(&o);
	json_t *res;

	if (interrupted) {
		fprintf(out, "\nwait: interrupted; the experiment goes on\n");
	} else {
		res = con_exec(json_pack("{s:s}", "cmd", "status"));
		if (!reply_failed(out, res)) {
			psb_render_experiment(out, json_object_get(res, "experiment"));
			json_decref(res);
		}
	}
	if (!con.from_file)
		fputs(CON_PROMPT, out);
	out_end(&o, con.cl);
}

struct res_set {
	cmdline_fixed_string_t set;
	cmdline_fixed_string_t param;
	cmdline_multi_string_t value;
};

static void
cb_set(void *parsed, struct cmdline *cl, void *data)
{
	struct res_set *r = parsed;
	struct con_out o;
	FILE *out = out_begin(&o);

	RTE_SET_USED(data);
	con_run(out, json_pack("{s:s,s:s,s:s}", "cmd", "set", "param", r->param,
		"value", trim(r->value)));
	out_end(&o, cl);
}

struct res_set_log {
	cmdline_fixed_string_t set;
	cmdline_fixed_string_t log;
	cmdline_fixed_string_t level_kw;
	cmdline_fixed_string_t type;
	cmdline_fixed_string_t level;
};

static void
cb_set_log(void *parsed, struct cmdline *cl, void *data)
{
	struct res_set_log *r = parsed;
	struct con_out o;
	FILE *out = out_begin(&o);

	RTE_SET_USED(data);
	con_run(out, json_pack("{s:s,s:s,s:s}", "cmd", "log", "type", r->type, "level",
		r->level));
	out_end(&o, cl);
}

/*
 * set's parameter is any word but "log": "set log level" is a command of its own, and the
 * command line refuses a line that two commands take.
 */
static int
parse_param(cmdline_parse_token_hdr_t *tk, const char *buf, void *res, unsigned int size)
{
	int n = cmdline_parse_string(tk, buf, res, size);

	if (n == 3 && strncmp(buf, "log", 3) == 0)
		return -1;
	return n;
}

static struct cmdline_token_ops param_ops = {
	.parse = parse_param,
	.complete_get_nb = cmdline_complete_get_nb_string,
	.complete_get_elt = cmdline_complete_get_elt_string,
	.get_help = cmdline_get_help_string,
};

static void
cb_quit(void *parsed, struct cmdline *cl, void *data)
{
	struct con_out o;
	FILE *out = out_begin(&o);

	RTE_SET_USED(parsed);
	RTE_SET_USED(data);
	con_run(out, json_pack("{s:s}", "cmd", "quit"));
	out_end(&o, cl);
	/* no new prompt: the console ends here */
	if (con.quit)
		cmdline_quit(cl);
}

static cmdline_parse_token_string_t tok_load = TOKEN_STRING_INITIALIZER(struct res_file, verb,
	"load");
static cmdline_parse_token_string_t tok_startf = TOKEN_STRING_INITIALIZER(struct res_file, verb,
	"start");
static cmdline_parse_token_string_t tok_file = TOKEN_STRING_INITIALIZER(struct res_file, file,
	TOKEN_STRING_MULTI);
static cmdline_parse_token_string_t tok_start = TOKEN_STRING_INITIALIZER(struct res_word, word,
	"start");
static cmdline_parse_token_string_t tok_stop = TOKEN_STRING_INITIALIZER(struct res_word, word,
	"stop");
static cmdline_parse_token_string_t tok_reset = TOKEN_STRING_INITIALIZER(struct res_word, word,
	"reset");
static cmdline_parse_token_string_t tok_wait = TOKEN_STRING_INITIALIZER(struct res_word, word,
	"wait");
static cmdline_parse_token_string_t tok_help = TOKEN_STRING_INITIALIZER(struct res_word, word,
	"help");
static cmdline_parse_token_string_t tok_quit = TOKEN_STRING_INITIALIZER(struct res_word, word,
	"quit");
static cmdline_parse_token_string_t tok_set = TOKEN_STRING_INITIALIZER(struct res_set, set,
	"set");
static cmdline_parse_token_string_t tok_set_param = {
	.hdr = { .ops = &param_ops, .offset = offsetof(struct res_set, param) },
	.string_data = { .str = NULL },
};
static cmdline_parse_token_string_t tok_set_value = TOKEN_STRING_INITIALIZER(struct res_set,
	value, TOKEN_STRING_MULTI);
static cmdline_parse_token_string_t tok_setl_set = TOKEN_STRING_INITIALIZER(struct res_set_log,
	set, "set");
static cmdline_parse_token_string_t tok_setl_log = TOKEN_STRING_INITIALIZER(struct res_set_log,
	log, "log");
static cmdline_parse_token_string_t tok_setl_level_kw = TOKEN_STRING_INITIALIZER(
	struct res_set_log, level_kw, "level");
static cmdline_parse_token_string_t tok_setl_type = TOKEN_STRING_INITIALIZER(
	struct res_set_log, type, NULL);
static cmdline_parse_token_string_t tok_setl_level = TOKEN_STRING_INITIALIZER(
	struct res_set_log, level, "emergency#alert#critical#error#warning#notice#info#debug");

static cmdline_parse_inst_t cmd_load = {
	.f = cb_load,
	.data = NULL,
	.help_str = "load <file>: check an experiment document and keep it for start",
	.tokens = { (void *)&tok_load, (void *)&tok_file, NULL },
};

static cmdline_parse_inst_t cmd_start = {
	.f = cb_start,
	.data = NULL,
	.help_str = "start: start the loaded experiment",
	.tokens = { (void *)&tok_start, NULL },
};

static cmdline_parse_inst_t cmd_start_file = {
	.f = cb_start_file,
	.data = NULL,
	.help_str = "start <file>: start the experiment of a document",
	.tokens = { (void *)&tok_startf, (void *)&tok_file, NULL },
};

static cmdline_parse_inst_t cmd_stop = {
	.f = cb_stop,
	.data = NULL,
	.help_str = "stop: stop the running experiment (its results are written)",
	.tokens = { (void *)&tok_stop, NULL },
};

static cmdline_parse_inst_t cmd_reset = {
	.f = cb_reset,
	.data = NULL,
	.help_str = "reset: zero counters, metrics and the store (after a warm-up, say)",
	.tokens = { (void *)&tok_reset, NULL },
};

static cmdline_parse_inst_t cmd_set = {
	.f = cb_set,
	.data = NULL,
	.help_str = "set <param> <value>: an experiment parameter (pushpull.rate 1Gbps); while "
		"one runs, only the live ones",
	.tokens = { (void *)&tok_set, (void *)&tok_set_param, (void *)&tok_set_value, NULL },
};

static cmdline_parse_inst_t cmd_set_log = {
	.f = cb_set_log,
	.data = NULL,
	.help_str = "set log level <type> <level>: the level of a log type, or of several with a "
		"glob (psb.rx debug, psb.* info)",
	.tokens = { (void *)&tok_setl_set, (void *)&tok_setl_log, (void *)&tok_setl_level_kw,
		(void *)&tok_setl_type, (void *)&tok_setl_level, NULL },
};

static cmdline_parse_inst_t cmd_wait = {
	.f = cb_wait,
	.data = NULL,
	.help_str = "wait: read no more commands until the running experiment ends (scripts)",
	.tokens = { (void *)&tok_wait, NULL },
};

static void cb_help(void *parsed, struct cmdline *cl, void *data);

static cmdline_parse_inst_t cmd_help = {
	.f = cb_help,
	.data = NULL,
	.help_str = "help: these commands",
	.tokens = { (void *)&tok_help, NULL },
};

static cmdline_parse_inst_t cmd_quit = {
	.f = cb_quit,
	.data = NULL,
	.help_str = "quit: stop the experiment and exit",
	.tokens = { (void *)&tok_quit, NULL },
};

static cmdline_parse_ctx_t con_ctx[] = {
	&cmd_show_port_all,
	&cmd_show_port_id,
	&cmd_show_lcores,
	&cmd_show_roles,
	&cmd_show_counters,
	&cmd_show_counters_path,
	&cmd_show_experiment,
	&cmd_show_log,
	&cmd_show_rdma,
	&cmd_show_roce_qp,
	&cmd_load,
	&cmd_start,
	&cmd_start_file,
	&cmd_stop,
	&cmd_reset,
	&cmd_set,
	&cmd_set_log,
	&cmd_clear_port_all,
	&cmd_clear_port_id,
	&cmd_wait,
	&cmd_help,
	&cmd_quit,
	NULL,
};

static void
cb_help(void *parsed, struct cmdline *cl, void *data)
{
	struct con_out o;
	FILE *out = out_begin(&o);
	unsigned int i;

	RTE_SET_USED(parsed);
	RTE_SET_USED(data);
	fprintf(out, "commands (Tab completes a word, Tab twice lists the choices):\n");
	for (i = 0; con_ctx[i] != NULL; i++)
		fprintf(out, "  %s\n", con_ctx[i]->help_str);
	out_end(&o, cl);
}

/* Input */

static void
restore_tty(void)
{
	if (con.tty_saved)
		tcsetattr(STDIN_FILENO, TCSANOW, &con.tty);
}

static int
open_stdin(void)
{
	static int registered;

	/* cmdline_stdin_new makes the terminal raw; give it back even if psb dies */
	if (!con.tty_saved && isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &con.tty) == 0) {
		con.tty_saved = 1;
		if (!registered && atexit(restore_tty) == 0)
			registered = 1;
	}
	con.cl = cmdline_stdin_new(con_ctx, CON_PROMPT);
	if (con.cl == NULL) {
		PSB_ERR(console, "console: cannot set up the command line on stdin");
		return -ENOMEM;
	}
	con.fd = STDIN_FILENO;
	con.from_file = 0;
	con.is_tty = isatty(STDIN_FILENO);
	return 0;
}

static int
open_file(const char *file)
{
	char err[512];
	int fd;

	/* the main lcore reads it between passes: a regular file only, of bounded size */
	fd = psb_exp_open_file(file, con.app->conf.node.file_max, err, sizeof(err));
	if (fd < 0) {
		if (fd == -EPERM || fd == -EFBIG)
			con.app->cp.file_refused++;
		PSB_ERR(console, "--cmdline-file %s", err);
		return fd;
	}
	/*
	 * Not cmdline_file_new: it gives the command line no output, so neither the echo of
	 * the commands nor their output would appear. Echoed to stdout, a script leaves a
	 * transcript like a typed session. feed() prompts before each line rather than the
	 * command line after it, so a script leaves no prompt dangling at its end.
	 */
	con.cl = cmdline_new(con_ctx, "", fd, STDOUT_FILENO);
	if (con.cl == NULL) {
		close(fd);
		PSB_ERR(console, "console: cannot set up the command line for %s", file);
		return -ENOMEM;
	}
	con.fd = fd;
	con.from_file = 1;
	con.is_tty = 0;
	return 0;
}

static void
close_input(void)
{
	if (con.cl == NULL)
		return;
	if (con.from_file) {
		cmdline_free(con.cl);	/* closes the file */
	} else {
		cmdline_stdin_exit(con.cl);
		restore_tty();
	}
	con.cl = NULL;
	con.fd = -1;
	con.off = con.len = 0;
	con.eof = 0;
	con.line_open = 0;
}

/*
 * Read what the input has without blocking. 1: something buffered (or the end of input
 * was seen, con.eof), 0: nothing yet.
 */
static int
fill(void)
{
	struct pollfd p = { .fd = con.fd, .events = POLLIN };
	ssize_t n;

	if (con.off == con.len) {
		con.off = con.len = 0;
	} else if (con.off != 0) {
		memmove(con.in, con.in + con.off, con.len - con.off);
		con.len -= con.off;
		con.off = 0;
	}
	if (con.len == sizeof(con.in))
		return 1;
	if (con.eof)
		return con.len != 0;
	if (poll(&p, 1, 0) <= 0)
		return 0;
	n = read(con.fd, con.in + con.len, sizeof(con.in) - con.len);
	if (n > 0 && con.from_file)
		con.file_read += (uint64_t)n;
	if (n > 0 && con.from_file && con.file_read > con.app->conf.node.file_max) {
		/* it grew past the limit it was opened within: what is past it does not run */
		PSB_WARN(console, "--cmdline-file: more than %llu bytes (node.file_max): the "
			"rest is not read", (unsigned long long)con.app->conf.node.file_max);
		con.app->cp.file_refused++;
		n = 0;
	}
	if (n > 0) {
		con.len += (size_t)n;
		return 1;
	}
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	/* end of input, or an input that cannot be read */
	con.eof = 1;
	return 1;
}

/*
 * Hand buffered input to the command line, one line per call so that in run-to-completion
 * mode the data plane runs between commands. 1 once the input is finished.
 */
static int
feed(void)
{
	char c;

	while (!con.waiting && !con.quit) {
		if (con.off == con.len) {
			if (con.eof && !con.line_open)
				return 1;
			if (con.eof) {
				/* a last line without its newline still runs */
				con.in[0] = '\n';
				con.off = 0;
				con.len = 1;
				continue;
			}
			if (!fill())
				return 0;
			continue;
		}
		c = con.in[con.off++];
		if (con.from_file && !con.line_open)
			cmdline_printf(con.cl, "%s", CON_PROMPT);
		if (cmdline_in(con.cl, &c, 1) < 0)
			return 1;	/* Ctrl-D on an empty line, or quit */
		if (c == '\n' || c == '\r') {
			con.line_open = 0;
			break;
		}
		con.line_open = 1;
	}
	return con.quit;
}

/* While waiting, Ctrl-C at a terminal gives the console back; the experiment goes on. */
static int
wait_interrupted(void)
{
	char *p;

	if (!con.is_tty || !fill())
		return 0;
	p = memchr(con.in + con.off, CON_CTRL_C, con.len - con.off);
	if (p == NULL)
		return 0;
	memmove(p, p + 1, (size_t)(con.in + con.len - p - 1));
	con.len--;
	return 1;
}

int
psb_console_init(struct psb_app *app, const char *file, int interactive)
{
	memset(&con, 0, sizeof(con));
	con.fd = -1;
	con.app = app;
	con.interactive = interactive;
	if (file != NULL)
		return open_file(file);
	if (interactive)
		return open_stdin();
	return -EINVAL;
}

int
psb_console_poll(struct psb_app *app)
{
	int intr;

	if (con.cl == NULL)
		return 1;
	if (con.waiting) {
		intr = wait_interrupted();
		if (!intr && psb_run_active(app) && !app->quit)
			return 0;
		con.waiting = 0;
		wait_done(intr);
	}
	if (!feed())
		return 0;
	/* the input is finished: a script hands over to stdin with -i, otherwise that is all */
	if (con.from_file && con.interactive && !con.quit) {
		close_input();
		if (open_stdin() == 0)
			return 0;
	} else if (!con.from_file && !con.quit) {
		/* leave the shell's prompt on a line of its own */
		fputs("\n", stdout);
	}
	close_input();
	fflush(stdout);
	return 1;
}

void
psb_console_fini(struct psb_app *app)
{
	RTE_SET_USED(app);
	close_input();
	fflush(stdout);
}
