/* Control plane of the appliance: experiments, commands, counters and their exports. */
#ifndef PSB_CTL_H
#define PSB_CTL_H

#include <stdio.h>

#include <jansson.h>

#include "psb_text.h"

struct psb_app;
struct psb_logfile;

/*
 * Counters (psb_counters.c). Every counter of the process as one JSON object:
 *   node        role, ip, uptime_s
 *   ports.N     DPDK stats and xstats of port N
 *   roles.NAME  per role instance ("rx0", "server1", "worker0"): packets, bytes, drops by
 *               reason, ring_full, busy/idle cycles, lcore
 *   store       servers: the parameter store, summed over shards
 *   experiment  the running or last experiment: state, operations, goodput, round trips
 * Built from per-lcore blocks their owners write; safe from any thread holding ctl_lock.
 */
json_t *psb_counters_json(struct psb_app *app);
/* The same object written as compact JSON onto t, without a tree: 0 or -ENOMEM. */
int psb_counters_text(struct psb_app *app, struct psb_text *t);
/* The part of all at dotted path ("roles.worker0", "ports"); NULL with a message if absent. */
json_t *psb_counters_get(json_t *all, const char *path, char *err, size_t errlen);
/* The "control" part alone: what the control plane cost and the limits it hit. */
json_t *psb_counters_control_json(const struct psb_app *app);
/* Free what psb_counters_json keeps between calls (port xstats names), once no export runs. */
void psb_counters_fini(void);
/*
 * Append one JSON line {"time": unix seconds, "counters": {...}} to lf (opened again if
 * renamed or removed, rotated by size: control.file_reopens, file_rotations).
 */
int psb_counters_append(struct psb_app *app, struct psb_logfile *lf);
/* Say at start where a counters file goes, how often and how big it may grow (knob: its name). */
void psb_counters_file_log(struct psb_app *app, const char *what, const char *path,
		uint64_t every_ns, uint64_t max, const char *knob);

/*
 * The running or last experiment, with live figures (status, "experiment" counters);
 * hists adds the round-trip and staleness histograms (counters, not status).
 */
json_t *psb_run_json(struct psb_app *app, int hists);
/* The experiment's part of a counters snapshot (psb_snap_exp_source). */
struct psb_exp_snap;
void psb_snap_exp(struct psb_app *app, struct psb_exp_snap *x);
/* The same as the value of key, into an emitter (a tree or text). */
void psb_run_emit(struct psb_emit *e, struct psb_app *app, const char *key, int hists);

/* Experiments (psb_run.c), main lcore only. Return 0 or -errno with a message in err. */
int psb_run_start(struct psb_app *app, const struct psb_exp_conf *c, int from_doc, char *err,
		size_t errlen);
int psb_run_stop(struct psb_app *app, char *err, size_t errlen);
int psb_run_reset(struct psb_app *app, char *err, size_t errlen);
int psb_run_set(struct psb_app *app, const char *param, const char *value, char *err,
		size_t errlen);
/* "idle", "running", "done", "stopped", "failed" (enum psb_run_state). */
const char *psb_run_state_name(int state);
/* 1 while an experiment runs. */
int psb_run_active(const struct psb_app *app);
/*
 * 1 while an experiment runs that has no end of its own (a serve without serve.duration):
 * stopping it is how it is meant to end.
 */
int psb_run_open_ended(const struct psb_app *app);
/* Housekeeping: notice the end of the experiment, write its results, the counters file. */
void psb_run_poll(struct psb_app *app, uint64_t now_ns);
/* At exit: stop what runs and write its results. */
void psb_run_fini(struct psb_app *app);
/*
 * Before the roles run, a wait psb bounds expired: say why, write the results of the
 * experiment psb was to start at once (failed, nothing measured; from_doc: its results
 * directory, else --results) and exit with status 1. Any time after the options are read.
 */
void psb_run_fail_early(struct psb_app *app, int from_doc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));

/*
 * Commands (psb_cmd.c), shared by the control socket and the console. req is
 * {"cmd": NAME, ...}; the reply is {"ok": true, ...} or {"error": {"code", "message"}}.
 * Sets *quit for "quit". Main lcore only.
 */
json_t *psb_cmd_exec(struct psb_app *app, const json_t *req, int *quit);
/*
 * The requests whose reply is written as text at once (counters without a filter): 1 and
 * the reply appended to t (t->oom if it could not be), or 0 for psb_cmd_exec.
 */
int psb_cmd_exec_text(struct psb_app *app, const json_t *req, struct psb_text *t);
json_t *psb_cmd_error(const char *code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Control socket (psb_ctl_sock.c): newline-delimited JSON on a unix socket, within the
 * limits of app->conf.node (ctl_*): requests and input per pass, clients, unread replies,
 * idle time.
 */
int psb_ctl_sock_init(struct psb_app *app, const char *path, char *err, size_t errlen);
/*
 * One pass of the control plane: serve what is pending within the pass's budget, waiting
 * at most timeout_ms for something to arrive. Called first in every pass of the main loop:
 * it also decides whether clients may be served in this pass (psb_cp_open).
 */
void psb_ctl_sock_poll(struct psb_app *app, int timeout_ms);
void psb_ctl_sock_fini(struct psb_app *app);
/* The control-plane limits in one log line, once at start. */
void psb_ctl_limits_log(struct psb_app *app);
/*
 * Clients' share of the main lcore when it also runs the data plane (node.ctl_share_pct):
 * psb_cp_open says whether clients (socket, Prometheus) may be served in this pass, and
 * what serving them took is charged with psb_cp_charge.
 */
int psb_cp_open(void);
void psb_cp_charge(uint64_t cycles);

/* Console (psb_console.c): rte_cmdline on stdin (-i) or a file of commands. */
int psb_console_init(struct psb_app *app, const char *file, int interactive);
/* Feed what the console has; 1 once it is finished (EOF or quit). */
int psb_console_poll(struct psb_app *app);
void psb_console_fini(struct psb_app *app);

/* Exports (psb_export.c): DPDK telemetry /psb/..., JSON-lines file, Prometheus endpoint. */
int psb_export_init(struct psb_app *app, char *err, size_t errlen);
void psb_export_poll(struct psb_app *app, uint64_t now_ns);
void psb_export_fini(struct psb_app *app);
/* The Prometheus endpoint (psb_prometheus.c), driven by the exporters above. */
int psb_prometheus_init(struct psb_app *app, char *err, size_t errlen);
void psb_prometheus_poll(struct psb_app *app, uint64_t now_ns);
void psb_prometheus_fini(void);
/*
 * The counters as a Prometheus page, from the descriptor tables (psb_counters.h): text
 * exposition 0.0.4, or OpenMetrics 1.0.0 (malloc'd; takes ctl_lock itself).
 */
char *psb_export_prometheus(struct psb_app *app, int openmetrics);
/*
 * DPDK telemetry /psb/... (psb_telemetry.c), by psb_export_init and _fini: commands
 * registered once, answered while app is set.
 */
int psb_telemetry_init(struct psb_app *app, char *err, size_t errlen);
void psb_telemetry_fini(void);

#endif /* PSB_CTL_H */
