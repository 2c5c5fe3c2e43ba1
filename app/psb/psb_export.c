/*
 * The exporters of the counters, started, polled and ended together: the JSON-lines counters
 * file (here), the Prometheus endpoint (psb_prometheus.c), DPDK telemetry (psb_telemetry.c).
 */
#include <errno.h>
#include <string.h>

#include "psb_app.h"
#include "psb_counters.h"
#include "psb_ctl.h"
#include "psb_log.h"

static struct {
	struct psb_logfile cf;		/* --counters-file (fd -1: none) */
	uint64_t next_ns;
	int f_failing;			/* the last line could not be written */
} g_exp = { .cf = { .fd = -1 } };

static void
counters_line(struct psb_app *app)
{
	int rc = psb_counters_append(app, &g_exp.cf);

	/* say it when writing starts failing (disk full) and when it works again, not each time */
	if (rc != 0 && !g_exp.f_failing)
		PSB_NOTICE(export, "--counters-file %s: cannot write: %s", app->counters_file,
			strerror(-rc));
	else if (rc == 0 && g_exp.f_failing)
		PSB_NOTICE(export, "--counters-file %s: writing again", app->counters_file);
	g_exp.f_failing = rc != 0;
}

/* Undo what init did, without the last counters line of a normal exit. */
static void
export_close(void)
{
	psb_telemetry_fini();
	psb_prometheus_fini();
	psb_logfile_close(&g_exp.cf);
}

int
psb_export_init(struct psb_app *app, char *err, size_t errlen)
{
	int rc = 0;

	if (app->counters_file != NULL) {
		rc = psb_logfile_open(&g_exp.cf, app->counters_file, app->counters_max);
		if (rc != 0) {
			snprintf(err, errlen, "--counters-file %s: cannot open: %s",
				app->counters_file, strerror(-rc));
			return rc;
		}
		psb_counters_file_log(app, "--counters-file", app->counters_file,
			app->counters_every_ns, app->counters_max, "--counters-max");
		g_exp.next_ns = 0;	/* a first line at once */
		g_exp.f_failing = 0;
	}
	if (app->prometheus != NULL)
		rc = psb_prometheus_init(app, err, errlen);
	if (rc == 0)
		rc = psb_telemetry_init(app, err, errlen);
	if (rc != 0)
		export_close();
	return rc;
}

void
psb_export_poll(struct psb_app *app, uint64_t now_ns)
{
	if (g_exp.cf.fd >= 0 && now_ns >= g_exp.next_ns) {
		counters_line(app);
		g_exp.next_ns += app->counters_every_ns;
		/* behind after a stall: carry on from now rather than write a burst */
		if (g_exp.next_ns <= now_ns)
			g_exp.next_ns = now_ns + app->counters_every_ns;
	}
	psb_prometheus_poll(app, now_ns);
}

void
psb_export_fini(struct psb_app *app)
{
	if (g_exp.cf.fd >= 0)
		counters_line(app);
	export_close();
}
