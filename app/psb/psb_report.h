/* End-of-run reports: counters of roles, ports and the store, as a table and as JSON. */
#ifndef PSB_REPORT_H
#define PSB_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "psb_text.h"

struct psb_app;
struct psb_counters;
struct rte_eth_stats;

void psb_report_print(const struct psb_app *app, FILE *out);
/* Written atomically (FILE.tmp + rename). 0 or -errno. */
int psb_report_write_json(struct psb_app *app, const char *path);

/* One role instance's counters as a JSON object; into the object open in e. */
json_t *psb_report_counters_json(const struct psb_counters *c);
void psb_report_counters_emit(struct psb_emit *e, const struct psb_counters *c);
struct psb_metric_block;
/* The figures of the block at base as a JSON object. */
json_t *psb_report_block_json(const struct psb_metric_block *b, const void *base);

/* The role block's figures of struct psb_counters alone (totals have no lcore). */
void psb_report_counters_block(struct psb_metric_block *b);

/*
 * The counters of every role instance added up: received packets and bytes are the rx
 * role's, sent ones the tx role's, every other counter is summed over all instances.
 */
void psb_report_totals(const struct psb_app *app, struct psb_counters *tot);

#endif /* PSB_REPORT_H */
