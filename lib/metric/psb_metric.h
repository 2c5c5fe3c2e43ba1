/*
 * Counters described once. Every block of figures psb exports (a role instance's counters,
 * a port, the store, ...) is a plain struct with one descriptor table: name, kind, unit,
 * help and offset of each figure. The exports walk the table over a block: JSON (control
 * socket, counters file, console, psbctl), Prometheus and DPDK telemetry, so a figure added
 * to the struct and the table shows in all of them.
 */
#ifndef PSB_METRIC_H
#define PSB_METRIC_H

#include <stddef.h>
#include <stdint.h>

#include "psb_hist.h"
#include "psb_text.h"

enum psb_metric_kind {
	PSB_METRIC_COUNTER,	/* only grows, but for resets */
	PSB_METRIC_GAUGE,
	PSB_METRIC_HISTOGRAM,	/* a struct psb_hist, exported at fixed bounds */
	PSB_METRIC_GROUP,	/* a block inside the block (sub), e.g. the store's limits */
};

/* How the figure is stored in the block. */
enum psb_metric_type {
	PSB_MT_U64,
	PSB_MT_U32,
	PSB_MT_DBL,
	PSB_MT_BOOL,		/* uint8_t, exported as true/false (1/0 where numbers only) */
	PSB_MT_HIST,		/* struct psb_hist */
	PSB_MT_BLOCK,		/* the struct sub describes; named "": its figures inline */
	PSB_MT_IPV4,		/* uint32_t, host order: "a.b.c.d" (0: left out); not in
				 * Prometheus, where an address is a label */
};

/*
 * The units a figure is kept in, and what Prometheus names and scales them to (base units:
 * seconds, bytes, ratios).
 */
enum psb_metric_unit {
	PSB_MU_NONE,		/* a count of events or things */
	PSB_MU_BYTES,
	PSB_MU_PACKETS,
	PSB_MU_CYCLES,		/* TSC cycles */
	PSB_MU_S,
	PSB_MU_US,
	PSB_MU_NS,
	PSB_MU_HZ,
	PSB_MU_GBPS,		/* Gbit/s */
	PSB_MU_PER_S,
	PSB_MU_PCT,		/* percent */
	PSB_MU_BOOL,		/* 0 or 1 */
	PSB_MU_VERSIONS,	/* versions of a key */
	PSB_MU_MAX,
};

/* The bounds a histogram is exported at: labels as written, sums divided by div. */
struct psb_metric_bounds {
	const uint64_t *le;	/* in the histogram's own unit (ns for round trips) */
	const char *const *names;	/* le[k] in the figure's unit ("0.5" us) */
	unsigned int n;
	double div;		/* histogram unit per figure unit (1000: ns -> us) */
};

struct psb_metric_block;

struct psb_metric {
	const char *name;	/* key in the JSON exports and telemetry */
	uint8_t kind;		/* enum psb_metric_kind */
	uint8_t type;		/* enum psb_metric_type */
	uint8_t unit;		/* enum psb_metric_unit */
	uint8_t detail;		/* big (histograms): left out of short replies (status) */
	uint32_t off;		/* in the block */
	/* Arrays: elements [first, n) by label (drops by reason); n 0 or 1: a scalar. */
	uint16_t n, first;
	const char *label;
	const char *(*label_of)(unsigned int k);
	/* The figure only where this uint8_t of the block is not 0 (offset + 1; 0: always). */
	uint32_t cond;
	/*
	 * Prometheus: the name after the block's prefix, before the unit and _total (NULL:
	 * name; "": not exported there, the figure being a label or another's double).
	 */
	const char *prom;
	const char *help;
	const struct psb_metric_bounds *bounds;	/* histograms */
	const struct psb_metric_block *sub;	/* groups */
};

struct psb_metric_block {
	const char *name;	/* section of the exports: "roles", "store", ... */
	const char *prom;	/* Prometheus prefix: "psb_role" */
	const struct psb_metric *m;
	unsigned int n;
};

#define PSB_METRIC_BLOCK(nm, pr, tab) { nm, pr, tab, sizeof(tab) / sizeof((tab)[0]) }

/* Whether m is there in the block at base (cond). */
int psb_metric_present(const struct psb_metric *m, const void *base);
/* "a.b.c.d" of an IPv4 address in host order, into buf (16 bytes at least). */
const char *psb_metric_ipv4_str(uint32_t ip, char *buf);

/* Element k of a scalar or array figure, as a double / as an integer (reals rounded). */
double psb_metric_value(const struct psb_metric *m, const void *base, unsigned int k);
uint64_t psb_metric_u64(const struct psb_metric *m, const void *base, unsigned int k);
static inline unsigned int
psb_metric_len(const struct psb_metric *m)
{
	return m->n > 1 ? m->n : 1;
}

/*
 * The figures of the block at base as entries of the object open in e: numbers, booleans,
 * addresses as strings, arrays as objects by label, histograms as {"le": {...}, "count",
 * "sum"}, groups as objects (a group named "" as entries beside the block's own).
 * detail 0: histograms left out.
 */
void psb_metric_emit(struct psb_emit *e, const struct psb_metric_block *b, const void *base,
		int detail);
/* A histogram at the bounds b, as psb_metric_emit writes it, under key. */
void psb_metric_hist_emit(struct psb_emit *e, const char *key, const struct psb_hist *h,
		const struct psb_metric_bounds *b);

/*
 * The block's figures read back from an object psb_metric_emit wrote (histograms and
 * arrays excepted); figures absent from o are left as they are in base.
 */
void psb_metric_read(const struct psb_metric_block *b, const void *o_json, void *base);

/* Unit names: as documented ("bytes"), and Prometheus' suffix ("_bytes", "" for none). */
const char *psb_metric_unit_name(unsigned int unit);
/*
 * Prometheus name of m in block prefix prefix: prefix_name[_unit][_total] (counters get
 * _total; units are base units); "" if m is not exported there. The scale to base units
 * goes to *scale if not NULL.
 */
void psb_metric_prom_name(char *dst, size_t len, const char *prefix, const struct psb_metric *m,
		double *scale);
const char *psb_metric_kind_name(unsigned int kind);

#endif /* PSB_METRIC_H */
