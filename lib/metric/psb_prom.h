/*
 * A Prometheus page from descriptor tables: every sample of a metric after its one HELP and
 * TYPE, in the text exposition format 0.0.4 or in OpenMetrics 1.0.0.
 */
#ifndef PSB_PROM_H
#define PSB_PROM_H

#include "psb_metric.h"

#define PSB_PROM_CONTENT_TYPE	"text/plain; version=0.0.4; charset=utf-8"
#define PSB_PROM_OM_CONTENT_TYPE \
	"application/openmetrics-text; version=1.0.0; charset=utf-8"

/* Labels as text ("a=\"x\",b=\"y\""), passed by value to add one for a single sample. */
struct psb_prom_labels {
	char s[768];
};

void psb_prom_label(struct psb_prom_labels *l, const char *name, const char *value);
void psb_prom_label_int(struct psb_prom_labels *l, const char *name, long long v);

struct psb_prom;

struct psb_prom *psb_prom_new(void);
void psb_prom_free(struct psb_prom *p);

/* Every figure of the block at base, with labels l (NULL: none). */
void psb_prom_block(struct psb_prom *p, const struct psb_metric_block *b, const void *base,
		const struct psb_prom_labels *l);
/*
 * One sample of a figure no table describes: name as in the page, kind a psb_metric_kind
 * (counters' names end in _total). info: an info metric (name ends in _info, value 1).
 */
void psb_prom_sample(struct psb_prom *p, const char *name, unsigned int kind, int info,
		const char *help, const struct psb_prom_labels *l, double v);

/* The page (free() it), NULL if memory ran out. openmetrics: OpenMetrics 1.0.0, else 0.0.4. */
char *psb_prom_page(struct psb_prom *p, int openmetrics);

#endif /* PSB_PROM_H */
