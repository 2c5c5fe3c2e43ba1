/* psb's control replies as text for people: the one format of psbctl and the console. */
#include <stdlib.h>
#include <string.h>

#include "psb_render.h"

void
psb_render_value(FILE *out, const json_t *v)
{
	const char *s;

	switch (json_typeof(v)) {
	case JSON_STRING:
		s = json_string_value(v);
		fputs(s[0] != '\0' ? s : "\"\"", out);
		break;
	case JSON_INTEGER:
		fprintf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		break;
	case JSON_REAL:
		fprintf(out, "%.*g", PSB_RENDER_REAL_DIGITS, json_real_value(v));
		break;
	case JSON_TRUE:
		fputs("true", out);
		break;
	case JSON_FALSE:
		fputs("false", out);
		break;
	case JSON_NULL:
		fputs("null", out);
		break;
	case JSON_OBJECT:
	case JSON_ARRAY:
		json_dumpf(v, out, PSB_RENDER_JSON_FLAGS);
		break;
	}
}

void
psb_render_flat(FILE *out, const char *prefix, const json_t *v)
{
	char path[1024];
	const char *key;
	json_t *x;
	size_t i;

	if (json_is_object(v) && json_object_size(v) != 0) {
		json_object_foreach((json_t *)v, key, x) {
			snprintf(path, sizeof(path), "%s%s%s", prefix, prefix[0] ? "." : "", key);
			psb_render_flat(out, path, x);
		}
		return;
	}
	if (json_is_array(v) && json_array_size(v) != 0) {
		json_array_foreach(v, i, x) {
			snprintf(path, sizeof(path), "%s%s%zu", prefix, prefix[0] ? "." : "", i);
			psb_render_flat(out, path, x);
		}
		return;
	}
	fprintf(out, "%s ", prefix[0] ? prefix : ".");
	psb_render_value(out, v);
	fputc('\n', out);
}

/* A cell's text (malloc'd): the value as psb_render_value writes it, "-" when missing. */
static char *
cell_text(const json_t *v)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (v == NULL)
		return strdup("-");
	f = open_memstream(&buf, &len);
	if (f == NULL)
		return NULL;
	psb_render_value(f, v);
	fclose(f);
	return buf;
}

struct col {
	const char *key;
	size_t width;
	int numeric;
};

void
psb_render_table(FILE *out, const json_t *rows)
{
	size_t ncol = 0, cap = 0, r, k, n;
	struct col *cols = NULL, *grown;
	const char *key;
	json_t *row, *v;
	char *text;
	int pass, w;

	/* columns: every key, in the order it first appears */
	json_array_foreach(rows, r, row) {
		json_object_foreach(row, key, v) {
			for (k = 0; k < ncol && strcmp(cols[k].key, key) != 0; k++)
				;
			if (k < ncol)
				continue;
			if (ncol == cap) {
				cap = cap != 0 ? cap * 2 : 16;
				grown = realloc(cols, cap * sizeof(*cols));
				if (grown == NULL) {
					free(cols);
					return;
				}
				cols = grown;
			}
			cols[ncol].key = key;
			cols[ncol].width = strlen(key);
			cols[ncol].numeric = 1;
			ncol++;
		}
	}
	/* widths, and which columns hold numbers only; then the table */
	for (pass = 0; pass < 2; pass++) {
		for (r = (size_t)-1; r == (size_t)-1 || r < json_array_size(rows); r++) {
			for (k = 0; k < ncol; k++) {
				if (r == (size_t)-1) {
					text = strdup(cols[k].key);
					v = NULL;
				} else {
					v = json_object_get(json_array_get(rows, r), cols[k].key);
					text = cell_text(v);
				}
				if (text == NULL)
					continue;
				n = strlen(text);
				if (pass == 0) {
					if (n > cols[k].width)
						cols[k].width = n;
					if (v != NULL && !json_is_number(v))
						cols[k].numeric = 0;
				} else {
					/* numbers to the right; the last column unpadded */
					w = (int)cols[k].width;
					fprintf(out, "%s%*s", k ? "  " : "", cols[k].numeric ? w :
						k + 1 == ncol ? 0 : -w, text);
				}
				free(text);
			}
			if (pass == 1 && ncol != 0)
				fputc('\n', out);
		}
	}
	free(cols);
}

int
psb_render_error(FILE *out, const char *who, const json_t *reply)
{
	const json_t *e = json_object_get(reply, "error");
	const char *code, *msg;

	if (e == NULL)
		return 0;
	code = json_string_value(json_object_get(e, "code"));
	msg = json_is_string(e) ? json_string_value(e) :
		json_string_value(json_object_get(e, "message"));
	fprintf(out, "%s%s%s: %s\n", who != NULL ? who : "", who != NULL && who[0] ? ": " : "",
		code != NULL ? code : "error", msg != NULL ? msg : "(no message)");
	return 1;
}

static const char *
jstr(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : "";
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

static const char *
on_off(const json_t *o, const char *key, const char *yes, const char *no)
{
	return json_is_true(json_object_get(o, key)) ? yes : no;
}

/*
 * A port_info reply's ports, each as testpmd's "show port info" shows a port: its lines, in
 * its order and wording, for the fields psb reports (not: the RSS flow types).
 */
static void
render_port_info(FILE *out, const json_t *reply)
{
	static const struct {
		const char *key, *label;
	} rx[] = {
		{ "min_rx_bufsize", "Minimum size of RX buffer" },
		{ "max_rx_pktlen", "Maximum configurable length of RX packet" },
		{ "max_lro_pkt_size", "Maximum configurable size of LRO aggregated packet" },
		{ "rx_queues", "Current number of RX queues" },
		{ "max_rx_queues", "Max possible RX queues" },
		{ "rx_desc_max", "Max possible number of RXDs per queue" },
		{ "rx_desc_min", "Min possible number of RXDs per queue" },
		{ "rx_desc_align", "RXDs number alignment" },
		{ "tx_queues", "Current number of TX queues" },
		{ "max_tx_queues", "Max possible TX queues" },
		{ "tx_desc_max", "Max possible number of TXDs per queue" },
		{ "tx_desc_min", "Min possible number of TXDs per queue" },
		{ "tx_desc_align", "TXDs number alignment" },
		{ "max_segs_per_packet", "Max segment number per packet" },
		{ "max_segs_per_mtu", "Max segment number per MTU/TSO" },
	};
	const json_t *p, *fw, *da, *vlan, *n;
	size_t i, k;

	json_array_foreach(json_object_get(reply, "ports"), i, p) {
		fw = json_object_get(p, "firmware_version");
		da = json_object_get(p, "devargs");
		vlan = json_object_get(p, "vlan_offload");
		fprintf(out, "\n********************* Infos for port %-2" JSON_INTEGER_FORMAT
			" *********************\n", jint(p, "port"));
		fprintf(out, "MAC address: %s\n", jstr(p, "mac_address"));
		fprintf(out, "Device name: %s\n", jstr(p, "device_name"));
		fprintf(out, "Driver name: %s\n", jstr(p, "driver_name"));
		fprintf(out, "Firmware-version: %s\n", json_is_string(fw) ? json_string_value(fw) :
			"not available");
		if (json_is_string(da))
			fprintf(out, "Devargs: %s\n", json_string_value(da));
		fprintf(out, "Connect to socket: %" JSON_INTEGER_FORMAT "\n", jint(p, "socket"));
		fprintf(out, "memory allocation on the socket: %" JSON_INTEGER_FORMAT "\n",
			jint(p, "pool_socket"));
		fprintf(out, "Link status: %s\n", jstr(p, "link_status"));
		fprintf(out, "Link speed: %s\n", jstr(p, "link_speed"));
		fprintf(out, "Link duplex: %s\n", jstr(p, "link_duplex"));
		fprintf(out, "Autoneg status: %s\n", jstr(p, "autoneg_status"));
		fprintf(out, "MTU: %" JSON_INTEGER_FORMAT "\n", jint(p, "mtu"));
		fprintf(out, "Promiscuous mode: %s\n", on_off(p, "promiscuous", "enabled",
			"disabled"));
		fprintf(out, "Allmulticast mode: %s\n", on_off(p, "allmulticast", "enabled",
			"disabled"));
		fprintf(out, "Maximum number of MAC addresses: %" JSON_INTEGER_FORMAT "\n",
			jint(p, "max_mac_addrs"));
		fprintf(out, "Maximum number of MAC addresses of hash filtering: %"
			JSON_INTEGER_FORMAT "\n", jint(p, "max_hash_mac_addrs"));
		fprintf(out, "VLAN offload: \n  strip %s, filter %s, extend %s, qinq strip %s\n",
			on_off(vlan, "strip", "on", "off"), on_off(vlan, "filter", "on", "off"),
			on_off(vlan, "extend", "on", "off"), on_off(vlan, "qinq_strip", "on", "off"));
		if (jint(p, "reta_size") > 0)
			fprintf(out, "Redirection table size: %" JSON_INTEGER_FORMAT "\n",
				jint(p, "reta_size"));
		for (k = 0; k < sizeof(rx) / sizeof(rx[0]); k++)
			fprintf(out, "%s: %" JSON_INTEGER_FORMAT "\n", rx[k].label, jint(p, rx[k].key));
		fprintf(out, "Device capabilities: 0x%llx(", (unsigned long long)jint(p, "dev_capa"));
		json_array_foreach(json_object_get(p, "dev_capa_names"), k, n)
			fprintf(out, " %s", json_string_value(n));
		fprintf(out, " )\nDevice error handling mode: %s\n", jstr(p, "err_handle_mode"));
	}
}

void
psb_render_experiment(FILE *out, const json_t *exp)
{
	const json_t *pp = json_object_get(exp, "pushpull");
	const json_t *sv = json_object_get(exp, "serve");
	const char *state = jstr(exp, "state");

	if (jint(exp, "id") == 0) {
		fprintf(out, "no experiment has run yet\n");
		return;
	}
	fprintf(out, "experiment %" JSON_INTEGER_FORMAT " \"%s\" (%s): %s %s %.3f s\n",
		jint(exp, "id"), jstr(exp, "name"), jstr(exp, "kind"), state,
		strcmp(state, "running") == 0 ? "for" : "after", jnum(exp, "elapsed_s"));
	if (pp != NULL) {
		fprintf(out, "  iterations %" JSON_INTEGER_FORMAT "/%" JSON_INTEGER_FORMAT "%s, "
			"requests %" JSON_INTEGER_FORMAT ", %.3f Gbps, %.0f req/s\n",
			jint(pp, "iterations"), jint(pp, "repeat"),
			json_is_true(json_object_get(pp, "warming")) ? " (warming up)" : "",
			jint(pp, "requests"), jnum(pp, "goodput_gbps"), jnum(pp, "requests_per_s"));
		fprintf(out, "  rtt p50 %.1f us, p99 %.1f us, mean %.1f us; retries %"
			JSON_INTEGER_FORMAT ", failed %" JSON_INTEGER_FORMAT "\n",
			jnum(pp, "rtt_p50_us"), jnum(pp, "rtt_p99_us"), jnum(pp, "rtt_mean_us"),
			jint(pp, "retries"), jint(pp, "failed"));
		fprintf(out, "  staleness of pushes (versions): mean %.2f, p99 %" JSON_INTEGER_FORMAT
			", max %" JSON_INTEGER_FORMAT "\n", jnum(pp, "staleness_mean"),
			jint(pp, "staleness_p99"), jint(pp, "staleness_max"));
	}
	if (sv != NULL)
		fprintf(out, "  push %" JSON_INTEGER_FORMAT ", pull %" JSON_INTEGER_FORMAT
			", pushpull %" JSON_INTEGER_FORMAT ", rounds %" JSON_INTEGER_FORMAT
			", summed %" JSON_INTEGER_FORMAT " B\n", jint(sv, "push"), jint(sv, "pull"),
			jint(sv, "pushpull"), jint(sv, "rounds_closed"), jint(sv, "bytes_summed"));
	if (json_object_get(exp, "results") != NULL)
		fprintf(out, "results: %s\n", jstr(exp, "results"));
	if (json_object_get(exp, "error") != NULL)
		fprintf(out, "error: %s\n", jstr(exp, "error"));
}

void
psb_render_progress(char *buf, size_t len, const json_t *exp)
{
	const json_t *pp = json_object_get(exp, "pushpull");
	const json_t *sv = json_object_get(exp, "serve");
	int n;

	if (len == 0)
		return;
	buf[0] = '\0';
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

/* An array of objects, at least one: rows for a table. */
static int
is_rows(const json_t *v)
{
	const json_t *x;
	size_t i;

	if (json_array_size(v) == 0)
		return 0;
	json_array_foreach(v, i, x)
		if (!json_is_object(x))
			return 0;
	return 1;
}

static void
render_list(FILE *out, const json_t *reply)
{
	const json_t *exps = json_object_get(reply, "experiments"), *k;
	size_t i;

	if (json_array_size(exps) == 0)
		fprintf(out, "no experiments yet\n");
	else
		psb_render_table(out, exps);
	fprintf(out, "kinds:");
	json_array_foreach(json_object_get(reply, "kinds"), i, k) {
		fprintf(out, "%s ", i ? "," : "");
		psb_render_value(out, k);
	}
	fprintf(out, "\n");
	if (json_is_string(json_object_get(reply, "loaded")))
		fprintf(out, "loaded: %s\n", jstr(reply, "loaded"));
}

/* A command this file has no summary for: its members, rows as tables. */
static void
render_other(FILE *out, const json_t *reply)
{
	const char *key;
	json_t *v;
	int shown = 0;

	json_object_foreach((json_t *)reply, key, v) {
		if (strcmp(key, "ok") == 0 || strcmp(key, "id") == 0)
			continue;
		if (is_rows(v)) {
			fprintf(out, "%s:\n", key);
			psb_render_table(out, v);
		} else {
			psb_render_flat(out, key, v);
		}
		shown = 1;
	}
	if (!shown)
		fprintf(out, "ok\n");
}

int
psb_render_reply(FILE *out, FILE *err, const char *who, const json_t *req,
		const json_t *reply)
{
	const char *cmd = json_string_value(json_object_get(req, "cmd"));
	const json_t *exp = json_object_get(reply, "experiment"), *v;
	const char *key, *param;

	if (psb_render_error(err, who, reply))
		return 1;
	if (cmd == NULL)
		cmd = "";
	if (strcmp(cmd, "start") == 0) {
		fprintf(out, "experiment %" JSON_INTEGER_FORMAT " \"%s\" started", jint(exp, "id"),
			jstr(exp, "name"));
		if (jstr(exp, "results")[0] != '\0')
			fprintf(out, "; results will go to %s", jstr(exp, "results"));
		fputc('\n', out);
	} else if (strcmp(cmd, "stop") == 0) {
		psb_render_experiment(out, exp);
	} else if (strcmp(cmd, "status") == 0) {
		fprintf(out, "role: %s, up %.1f s, %s\n", jstr(reply, "role"),
			jnum(reply, "uptime_s"), json_is_true(json_object_get(reply, "loaded")) ?
			"an experiment is loaded" : "nothing loaded");
		psb_render_experiment(out, exp);
	} else if (strcmp(cmd, "counters") == 0) {
		psb_render_flat(out, jstr(req, "filter"), json_object_get(reply, "counters"));
	} else if (strcmp(cmd, "reset_state") == 0) {
		fprintf(out, "state reset: counters and metrics zeroed (servers: and the store)\n");
	} else if (strcmp(cmd, "list") == 0) {
		render_list(out, reply);
	} else if (strcmp(cmd, "set") == 0) {
		param = json_string_value(json_object_get(req, "param"));
		fprintf(out, "%s = ", param != NULL ? param : jstr(reply, "param"));
		v = json_object_get(req, "value");
		if (json_is_string(v))
			fputs(json_string_value(v), out);	/* as given, even "" */
		else
			psb_render_value(out, v);
		fprintf(out, " (%s)\n", json_is_true(json_object_get(reply, "live")) ?
			"changed in the running experiment" : "for the next experiment");
	} else if (strcmp(cmd, "load") == 0) {
		fprintf(out, "loaded \"%s\" (%s); \"start\" runs it\n", jstr(reply, "name"),
			jstr(reply, "kind"));
	} else if (strcmp(cmd, "port_info") == 0) {
		render_port_info(out, reply);
	} else if (strcmp(cmd, "clear_port_stats") == 0) {
		fprintf(out, "port statistics cleared on %" JSON_INTEGER_FORMAT " port(s)\n",
			jint(reply, "cleared"));
	} else if (strcmp(cmd, "quit") == 0) {
		fprintf(out, "psb is quitting\n");
	} else if (strcmp(cmd, "help") == 0) {
		json_object_foreach(json_object_get(reply, "commands"), key, v) {
			fprintf(out, "  %-18s ", key);
			psb_render_value(out, v);
			fputc('\n', out);
		}
	} else {
		render_other(out, reply);
	}
	return 0;
}
