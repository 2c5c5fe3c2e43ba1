/*
 * The staleness experiment's time series, whoever runs the trainer (psb-stale, or the
 * appliance's trainer role): each post's figures as a line of staleness.csv, and
 * staleness.svg, the mean window staleness over the workers per time bin with the first workers'
 * own lines, drawn from the same posts. EAL-free.
 */
#ifndef PSB_STALE_SERIES_H
#define PSB_STALE_SERIES_H

#include <stdint.h>
#include <stdio.h>

#include "psb_stale.h"

#define PSB_STALE_BINS		512	/* the plot's time bins */
#define PSB_STALE_PLOT_WORKERS	8	/* workers drawn one line each */

struct psb_stale_bin {
	double sum;
	uint64_t n;
};

struct psb_stale_plot {
	uint64_t bin_ns;
	struct psb_stale_bin mean[PSB_STALE_BINS];
	struct psb_stale_bin worker[PSB_STALE_PLOT_WORKERS][PSB_STALE_BINS];
};

/* The CSV's header line, and the line of a post pt (its time from t0_ns, publishing's start). */
void psb_stale_csv_header(FILE *f);
void psb_stale_csv_line(FILE *f, uint64_t t0_ns, const struct psb_stale_point *pt);

/* A plot of a run of span_ns at most; a post pt into its bins (time from t0_ns). */
void psb_stale_plot_init(struct psb_stale_plot *p, uint64_t span_ns);
void psb_stale_plot_add(struct psb_stale_plot *p, uint64_t t0_ns, const struct psb_stale_point *pt);
/*
 * The SVG at path, written whole or not at all (a temporary file renamed): title's run of
 * dur_s with workers workers. 0, or -1 with errno.
 */
int psb_stale_plot_write(const struct psb_stale_plot *p, const char *path, const char *title,
		double dur_s, uint32_t workers);

#endif /* PSB_STALE_SERIES_H */
