/*
 * The command line and ps-lite's environment. What they say about the experiment goes into
 * one store, the experiment document app->conf, through one table of options and variables
 * to dotted paths that psb_conf_set applies: a bad flag is refused by path as a bad JSON key
 * is, and defaults and checks are the schema's (lib/exp) alone. The rest are the process's
 * own settings (files, sockets, the console).
 */
#ifndef PSB_OPTS_H
#define PSB_OPTS_H

#include <stdint.h>

#include "psb_host.h"

struct psb_app;

/* What the EAL and the pools get, from the document's node section and the options. */
struct psb_run_opts {
	struct psb_eal_opts eal;
	uint64_t mbufs;
	int mem_given;
	const char *config;
	char lcores[64];
	char prefix[64];
};

/*
 * Fill app->conf from the defaults, --config (or else the environment) and the command
 * line, check it as a whole, and derive the running node's settings from it (app->node_role,
 * app->me, ...: read-only views of app->conf.node, never written otherwise). Exits with
 * status 2 and a message naming the option, variable or document path on bad input; on
 * --help or --check-config, with their status.
 */
void psb_opts_parse(struct psb_app *app, struct psb_run_opts *ro, int argc, char **argv);

#endif /* PSB_OPTS_H */
