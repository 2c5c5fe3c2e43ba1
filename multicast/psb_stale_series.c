/* The staleness experiment's time series: the CSV of posts and the SVG plot. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "psb_stale_series.h"

void
psb_stale_csv_header(FILE *f)
{
	fprintf(f, "t_s,worker,held,current,mean_version,trainer_mean_version,"
		"version_difference,window_staleness\n");
}

void
psb_stale_csv_line(FILE *f, uint64_t t0_ns, const struct psb_stale_point *pt)
{
	fprintf(f, "%.6f,%u,%u,%u,%.4f,%.4f,%.4f,%.4f\n",
		pt->t_ns >= t0_ns ? (pt->t_ns - t0_ns) / 1e9 : 0.0, pt->worker, pt->held,
		pt->current, pt->mean, pt->trainer_mean, pt->version_diff, pt->window);
}

void
psb_stale_plot_init(struct psb_stale_plot *p, uint64_t span_ns)
{
	memset(p, 0, sizeof(*p));
	p->bin_ns = span_ns / PSB_STALE_BINS + 1;
}

static void
bin_add(struct psb_stale_plot *p, struct psb_stale_bin *b, uint64_t t0_ns, uint64_t t_ns,
		double v)
{
	uint64_t i = (t_ns - t0_ns) / p->bin_ns;

	if (t_ns < t0_ns || i >= PSB_STALE_BINS)
		return;
	b[i].sum += v;
	b[i].n++;
}

void
psb_stale_plot_add(struct psb_stale_plot *p, uint64_t t0_ns, const struct psb_stale_point *pt)
{
	bin_add(p, p->mean, t0_ns, pt->t_ns, pt->window);
	if (pt->worker < PSB_STALE_PLOT_WORKERS)
		bin_add(p, p->worker[pt->worker], t0_ns, pt->t_ns, pt->window);
}

static void
plot_line(FILE *f, const struct psb_stale_plot *p, const struct psb_stale_bin *b, double xmax,
		double ymax, const char *color, double width)
{
	unsigned int i, k = 0;

	fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" points=\"", color,
		width);
	for (i = 0; i < PSB_STALE_BINS; i++) {
		double x, y;

		if (b[i].n == 0)
			continue;
		x = 60 + 560 * ((i + 0.5) * p->bin_ns / 1e9) / xmax;
		y = 330 - 300 * (b[i].sum / b[i].n) / ymax;
		fprintf(f, "%s%.1f,%.1f", k++ ? " " : "", x, y < 30 ? 30 : y > 330 ? 330 : y);
	}
	fprintf(f, "\"/>\n");
}

int
psb_stale_plot_write(const struct psb_stale_plot *p, const char *path, const char *title,
		double dur_s, uint32_t workers)
{
	static const char *const colors[PSB_STALE_PLOT_WORKERS] = { "#1f77b4", "#ff7f0e",
		"#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f" };
	char tmp[4300];
	double ymax = 1, xmax = dur_s > 0.001 ? dur_s : 0.001;
	unsigned int i, w;
	FILE *f;

	for (w = 0; w <= PSB_STALE_PLOT_WORKERS; w++)
		for (i = 0; i < PSB_STALE_BINS; i++) {
			const struct psb_stale_bin *b = w == PSB_STALE_PLOT_WORKERS ? &p->mean[i] :
				&p->worker[w][i];

			if (b->n && b->sum / b->n > ymax)
				ymax = b->sum / b->n;
		}
	ymax = ymax * 1.1;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= sizeof(tmp))
		return -1;
	f = fopen(tmp, "w");
	if (f == NULL)
		return -1;
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"700\" height=\"380\" "
		"font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"700\" height=\"380\" "
		"fill=\"white\"/>\n<text x=\"350\" y=\"18\" text-anchor=\"middle\">%s</text>\n",
		title);
	fprintf(f, "<line x1=\"60\" y1=\"330\" x2=\"620\" y2=\"330\" stroke=\"black\"/>\n"
		"<line x1=\"60\" y1=\"30\" x2=\"60\" y2=\"330\" stroke=\"black\"/>\n");
	for (i = 0; i <= 4; i++) {
		fprintf(f, "<text x=\"%.1f\" y=\"348\" text-anchor=\"middle\">%.1f</text>\n",
			60 + 140.0 * i, xmax * i / 4);
		fprintf(f, "<text x=\"54\" y=\"%.1f\" text-anchor=\"end\">%.2f</text>\n",
			334 - 75.0 * i, ymax * i / 4);
	}
	fprintf(f, "<text x=\"340\" y=\"370\" text-anchor=\"middle\">time (s)</text>\n");
	for (w = 0; w < PSB_STALE_PLOT_WORKERS && w < workers; w++)
		plot_line(f, p, p->worker[w], xmax, ymax, colors[w], 1);
	plot_line(f, p, p->mean, xmax, ymax, "black", 2.5);
	fprintf(f, "<text x=\"630\" y=\"40\">mean</text>\n");
	for (w = 0; w < PSB_STALE_PLOT_WORKERS && w < workers; w++)
		fprintf(f, "<text x=\"630\" y=\"%u\" fill=\"%s\">worker %u</text>\n", 56 + 14 * w,
			colors[w], w);
	fprintf(f, "</svg>\n");
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}
