/*
 * The multicast sender's and receiver's counters, described once (lib/metric): every
 * export of them walks these tables, the appliance's counters (the trainer and receiver
 * roles carry them inline) as the JSON files of psb-mcast and psb-stale.
 */
#ifndef PSB_MC_METRIC_H
#define PSB_MC_METRIC_H

#include <jansson.h>

#include "psb_mc_recv.h"
#include "psb_mc_send.h"
#include "psb_metric.h"

extern const struct psb_metric_block psb_mc_send_block;	/* struct psb_mc_send_stats */
extern const struct psb_metric_block psb_mc_recv_block;	/* struct psb_mc_recv_stats */
extern const struct psb_metric_block psb_mc_nacker_block;	/* struct psb_mc_nacker */

/* The figures of the block at base as a JSON object (NULL: no memory). */
json_t *psb_mc_metric_json(const struct psb_metric_block *b, const void *base);

/* The n busiest hosts of s as a JSON array of objects, busiest first. */
json_t *psb_mc_nackers_json(struct psb_mc_send *s, unsigned int n);

#endif /* PSB_MC_METRIC_H */
