/* psb's log types and their levels, from the command line, the console and the socket. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>

#include "psb_cli.h"
#include "psb_log.h"

struct psb_logtype psb_logtype_main, psb_logtype_host, psb_logtype_port, psb_logtype_rx,
	psb_logtype_worker, psb_logtype_scheduler, psb_logtype_agent, psb_logtype_ctl,
	psb_logtype_console, psb_logtype_export, psb_logtype_run, psb_logtype_echo,
	psb_logtype_receiver, psb_logtype_trainer, psb_logtype_passthrough, psb_logtype_server;

static const struct {
	const char *name;
	struct psb_logtype *t;
} types[] = {
	{ "psb.main", &psb_logtype_main },	/* start, placement of roles, end of a job */
	{ "psb.host", &psb_logtype_host },	/* CPUs, hugepages, interfaces, runtime files */
	{ "psb.port", &psb_logtype_port },	/* ports: set up, links, faults, BYEs */
	{ "psb.rx", &psb_logtype_rx },		/* received frames, per packet: limited */
	{ "psb.worker", &psb_logtype_worker },
	{ "psb.scheduler", &psb_logtype_scheduler },
	{ "psb.agent", &psb_logtype_agent },	/* registration with the scheduler */
	{ "psb.ctl", &psb_logtype_ctl },	/* the control socket and its limits */
	{ "psb.console", &psb_logtype_console },
	{ "psb.export", &psb_logtype_export },	/* telemetry, Prometheus, counters files */
	{ "psb.run", &psb_logtype_run },	/* experiments */
	{ "psb.echo", &psb_logtype_echo },	/* the echo role */
	{ "psb.receiver", &psb_logtype_receiver },	/* the receiver role: a staleness worker */
	{ "psb.trainer", &psb_logtype_trainer },	/* the trainer role: a staleness trainer */
	{ "psb.passthrough", &psb_logtype_passthrough },	/* the host's traffic, RoCE counted */
	{ "psb.server", &psb_logtype_server },	/* the store's shards: peers over a budget */
};

/* --log-level values as given (checked), and as EAL arguments. */
#define MAX_SPECS	32

static struct {
	unsigned int n;
	char type[MAX_SPECS][64];
	int level[MAX_SPECS];
	char *eal[MAX_SPECS];
} g_specs;

RTE_INIT(psb_log_register)
{
	unsigned int i;
	int id;

	for (i = 0; i < RTE_DIM(types); i++) {
		id = rte_log_register_type_and_pick_level(types[i].name, RTE_LOG_INFO);
		/* out of memory at load time: its lines go out as the EAL's */
		types[i].t->id = id >= 0 ? id : RTE_LOGTYPE_EAL;
	}
	psb_log_sync();
}

void
psb_log_sync(void)
{
	uint32_t global = rte_log_get_global_level();
	unsigned int i;
	int l;

	for (i = 0; i < RTE_DIM(types); i++) {
		l = rte_log_get_level((uint32_t)types[i].t->id);
		types[i].t->level = l < 0 ? 0 : RTE_MIN((uint32_t)l, global);
	}
}

/* How many of psb's types the glob type names. */
static unsigned int
own_matches(const char *type)
{
	unsigned int i, n = 0;

	for (i = 0; i < RTE_DIM(types); i++)
		n += fnmatch(type, types[i].name, 0) == 0;
	return n;
}

int
psb_log_option(const char *spec, char *err, size_t errlen)
{
	char type[64], bad[192], names[256];
	size_t used = 0;
	unsigned int i;
	int level, n;

	if (psb_cli_log_spec(spec, type, sizeof(type), &level, bad, sizeof(bad)) != 0) {
		snprintf(err, errlen, "%s", bad);
		return -EINVAL;
	}
	/* a mistyped psb type would change nothing, silently */
	if (strncmp(type, "psb", 3) == 0 && own_matches(type) == 0) {
		names[0] = '\0';
		for (i = 0; i < RTE_DIM(types) && used < sizeof(names); i++)
			used += (size_t)snprintf(names + used, sizeof(names) - used, "%s, ",
						 types[i].name);
		snprintf(err, errlen, "no psb log type is '%s' (%spsb.* for all)", type, names);
		return -EINVAL;
	}
	if (g_specs.n == MAX_SPECS) {
		snprintf(err, errlen, "at most %d of them", MAX_SPECS);
		return -E2BIG;
	}
	n = asprintf(&g_specs.eal[g_specs.n], "--log-level=%s:%s", type,
		     psb_cli_log_level_name(level));
	if (n < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	snprintf(g_specs.type[g_specs.n], sizeof(g_specs.type[0]), "%s", type);
	g_specs.level[g_specs.n++] = level;
	return 0;
}

static void
set_own(unsigned int i, uint32_t level)
{
	rte_log_set_level((uint32_t)types[i].t->id, level);
}

void
psb_log_start(int quiet, int verbose)
{
	unsigned int i;

	for (i = 0; i < RTE_DIM(types); i++) {
		if (verbose >= 1 && types[i].t != &psb_logtype_rx)
			set_own(i, RTE_LOG_DEBUG);
		if (verbose >= 2 && types[i].t == &psb_logtype_rx)
			set_own(i, RTE_LOG_DEBUG);
		if (quiet)
			set_own(i, RTE_LOG_WARNING);
	}
	for (i = 0; i < g_specs.n; i++)
		rte_log_set_level_pattern(g_specs.type[i], (uint32_t)g_specs.level[i]);
	psb_log_sync();
}

int
psb_log_eal_args(const char *const **args)
{
	*args = (const char *const *)g_specs.eal;
	return (int)g_specs.n;
}

int
psb_log_set(const char *type, int level, void (*set)(void *arg, const char *name), void *arg)
{
	char *list = NULL, *line, *save = NULL;
	size_t len = 0;
	int n = 0;
	FILE *f;

	if (level < 1 || level > (int)RTE_LOG_DEBUG)
		return -EINVAL;
	/* every type rte_log knows, one name a line */
	f = open_memstream(&list, &len);
	if (f == NULL)
		return -ENOMEM;
	rte_log_list_types(f, "");
	if (fclose(f) != 0) {
		free(list);
		return -ENOMEM;
	}
	for (line = strtok_r(list, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		if (fnmatch(type, line, 0) != 0)
			continue;
		n++;
		if (set != NULL)
			set(arg, line);
	}
	free(list);
	if (n == 0)
		return -ENOENT;
	rte_log_set_level_pattern(type, (uint32_t)level);
	psb_log_sync();
	return 0;
}

int
psb_log_type(unsigned int i, const char **name, int *level)
{
	if (i >= RTE_DIM(types))
		return -ENOENT;
	*name = types[i].name;
	*level = rte_log_get_level((uint32_t)types[i].t->id);
	return 0;
}

int
psb_log_own(int logtype)
{
	unsigned int i;

	/* a type that could not be registered logs as the EAL, which stays the EAL's */
	for (i = 0; i < RTE_DIM(types); i++)
		if (types[i].t->id == logtype && logtype != RTE_LOGTYPE_EAL)
			return 1;
	return 0;
}

int
psb_log_limit_pass(struct psb_log_limit *l, char *more, size_t len)
{
	uint64_t now = rte_rdtsc();

	if (now < l->next_tsc) {
		l->held++;
		return 0;
	}
	l->next_tsc = now + rte_get_tsc_hz();
	if (l->held != 0)
		snprintf(more, len, " (%llu more not shown)", (unsigned long long)l->held);
	else
		more[0] = '\0';
	l->held = 0;
	return 1;
}
