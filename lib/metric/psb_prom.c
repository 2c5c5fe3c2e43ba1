/* Prometheus pages from descriptor tables. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "psb_prom.h"

/* Families by name: open addressing over indexes + 1 (0: free); a page has ~200. */
#define PROM_SLOTS	2048

struct prom_family {
	char name[128];		/* as its samples are named (counters: with _total) */
	uint8_t kind;
	uint8_t info;
	const char *help;
	struct psb_text samples;
};

struct psb_prom {
	struct prom_family *fam;
	unsigned int n, cap;
	int oom;
	uint16_t slot[PROM_SLOTS];
};

struct psb_prom *
psb_prom_new(void)
{
	return calloc(1, sizeof(struct psb_prom));
}

void
psb_prom_free(struct psb_prom *p)
{
	unsigned int i;

	if (p == NULL)
		return;
	for (i = 0; i < p->n; i++)
		free(p->fam[i].samples.s);
	free(p->fam);
	free(p);
}

static uint32_t
prom_hash(const char *s)
{
	uint32_t h = 2166136261u;	/* FNV-1a */

	while (*s != '\0')
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

static struct prom_family *
prom_family(struct psb_prom *p, const char *name, unsigned int kind, int info, const char *help)
{
	struct prom_family *f;
	unsigned int h;

	for (h = prom_hash(name) % PROM_SLOTS; p->slot[h] != 0; h = (h + 1) % PROM_SLOTS) {
		f = &p->fam[p->slot[h] - 1];
		if (strcmp(f->name, name) == 0)
			return f;
	}
	if (p->n + 1 >= PROM_SLOTS / 2) {
		p->oom = 1;	/* a page this large is no page of psb's */
		return NULL;
	}
	if (p->n == p->cap) {
		unsigned int cap = p->cap != 0 ? 2 * p->cap : 64;

		f = realloc(p->fam, cap * sizeof(*f));
		if (f == NULL) {
			p->oom = 1;
			return NULL;
		}
		p->fam = f;
		p->cap = cap;
	}
	f = &p->fam[p->n++];
	p->slot[h] = (uint16_t)p->n;
	memset(f, 0, sizeof(*f));
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->kind = (uint8_t)kind;
	f->info = (uint8_t)info;
	f->help = help;
	return f;
}

/* Label values escape \, " and newlines; names are the tables' own. */
void
psb_prom_label(struct psb_prom_labels *l, const char *name, const char *value)
{
	size_t n = strlen(l->s), nl = strlen(name);
	const char *c;

	if (n + nl + 4 >= sizeof(l->s))
		return;
	if (n != 0)
		l->s[n++] = ',';
	memcpy(l->s + n, name, nl);
	n += nl;
	l->s[n++] = '=';
	l->s[n++] = '"';
	for (c = value; *c != '\0' && n + 4 < sizeof(l->s); c++) {
		if (*c == '\\' || *c == '"') {
			l->s[n++] = '\\';
			l->s[n++] = *c;
		} else if (*c == '\n') {
			l->s[n++] = '\\';
			l->s[n++] = 'n';
		} else {
			l->s[n++] = *c;
		}
	}
	l->s[n++] = '"';
	l->s[n] = '\0';
}

void
psb_prom_label_int(struct psb_prom_labels *l, const char *name, long long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", v);
	psb_prom_label(l, name, buf);
}

static void
fmt_real(char *val, size_t len, double d)
{
	if (isnan(d))
		snprintf(val, len, "NaN");
	else if (isinf(d))
		snprintf(val, len, "%sInf", d > 0 ? "+" : "-");
	else
		snprintf(val, len, "%.15g", d);
}

/* name<suffix>{labels[,extra]} val */
static void
prom_line(struct psb_text *b, const char *name, const char *suffix,
		const struct psb_prom_labels *l, const char *extra, const char *val)
{
	psb_text_puts(b, name);
	psb_text_puts(b, suffix);
	if (l->s[0] != '\0' || extra != NULL) {
		psb_text_puts(b, "{");
		psb_text_puts(b, l->s);
		if (extra != NULL) {
			if (l->s[0] != '\0')
				psb_text_puts(b, ",");
			psb_text_puts(b, extra);
		}
		psb_text_puts(b, "}");
	}
	psb_text_puts(b, " ");
	psb_text_puts(b, val);
	psb_text_puts(b, "\n");
}

void
psb_prom_sample(struct psb_prom *p, const char *name, unsigned int kind, int info,
		const char *help, const struct psb_prom_labels *l, double v)
{
	static const struct psb_prom_labels none;
	struct prom_family *f = prom_family(p, name, kind, info, help);
	char val[40];

	if (f == NULL)
		return;
	fmt_real(val, sizeof(val), v);
	prom_line(&f->samples, name, "", l != NULL ? l : &none, NULL, val);
}

/* A histogram as name_bucket{le=...}, name_sum and name_count, in base units. */
static void
prom_hist(struct prom_family *f, const struct psb_metric *m, const struct psb_hist *h,
		const struct psb_prom_labels *l, double scale)
{
	const struct psb_metric_bounds *b = m->bounds;
	uint64_t cum[32], total;
	char val[40], le[48];
	unsigned int i;

	if (b->n > sizeof(cum) / sizeof(cum[0]))
		return;
	total = psb_hist_cumulative(h, b->le, b->n, cum);
	for (i = 0; i <= b->n; i++) {
		if (i < b->n)
			snprintf(le, sizeof(le), "le=\"%.9g\"", (double)b->le[i] / b->div * scale);
		else
			snprintf(le, sizeof(le), "le=\"+Inf\"");
		snprintf(val, sizeof(val), "%" PRIu64, i < b->n ? cum[i] : total);
		prom_line(&f->samples, f->name, "_bucket", l, le, val);
	}
	fmt_real(val, sizeof(val), h->sum / b->div * scale);
	prom_line(&f->samples, f->name, "_sum", l, NULL, val);
	snprintf(val, sizeof(val), "%" PRIu64, total);
	prom_line(&f->samples, f->name, "_count", l, NULL, val);
}

static void
prom_block(struct psb_prom *p, const char *prefix, const struct psb_metric_block *b,
		const void *base, const struct psb_prom_labels *l)
{
	const struct psb_metric *m;
	struct psb_prom_labels l2;
	struct prom_family *f;
	char name[128], val[40];
	unsigned int k;
	double scale;

	for (m = b->m; m < b->m + b->n; m++) {
		if (!psb_metric_present(m, base))
			continue;
		psb_metric_prom_name(name, sizeof(name), prefix, m, &scale);
		if (name[0] == '\0')
			continue;
		if (m->type == PSB_MT_BLOCK) {
			/* a group's figures: prefix_group_figure */
			prom_block(p, name, m->sub, (const char *)base + m->off, l);
			continue;
		}
		f = prom_family(p, name, m->kind, 0, m->help);
		if (f == NULL)
			return;
		if (m->type == PSB_MT_HIST) {
			prom_hist(f, m, (const void *)((const char *)base + m->off), l, scale);
			continue;
		}
		for (k = m->n > 1 ? m->first : 0; k < psb_metric_len(m); k++) {
			l2 = *l;
			if (m->n > 1)
				psb_prom_label(&l2, m->label, m->label_of(k));
			if (m->type == PSB_MT_DBL || scale != 1)
				fmt_real(val, sizeof(val), psb_metric_value(m, base, k) * scale);
			else
				snprintf(val, sizeof(val), "%" PRIu64, psb_metric_u64(m, base, k));
			prom_line(&f->samples, name, "", &l2, NULL, val);
		}
	}
}

void
psb_prom_block(struct psb_prom *p, const struct psb_metric_block *b, const void *base,
		const struct psb_prom_labels *l)
{
	static const struct psb_prom_labels none;

	prom_block(p, b->prom, b, base, l != NULL ? l : &none);
}

/* HELP text: \ and newlines escaped (and " in OpenMetrics). */
static void
prom_help(struct psb_text *t, const char *help, int om)
{
	const char *c, *run = help;

	for (c = help; *c != '\0'; c++) {
		if (*c != '\\' && *c != '\n' && !(om && *c == '"'))
			continue;
		psb_text_append(t, run, (size_t)(c - run));
		psb_text_puts(t, *c == '\\' ? "\\\\" : *c == '"' ? "\\\"" : "\\n");
		run = c + 1;
	}
	psb_text_append(t, run, (size_t)(c - run));
}

char *
psb_prom_page(struct psb_prom *p, int om)
{
	struct psb_text out = { 0 };
	const char *type;
	unsigned int i;
	size_t n;

	for (i = 0; i < p->n; i++) {
		struct prom_family *f = &p->fam[i];

		n = strlen(f->name);
		type = psb_metric_kind_name(f->kind);
		/* OpenMetrics names the family without the suffix of its samples */
		if (om && f->kind == PSB_METRIC_COUNTER && n > 6 &&
		    strcmp(f->name + n - 6, "_total") == 0)
			n -= 6;
		if (om && f->info && n > 5 && strcmp(f->name + n - 5, "_info") == 0) {
			n -= 5;
			type = "info";
		}
		psb_text_printf(&out, "# HELP %.*s ", (int)n, f->name);
		prom_help(&out, f->help != NULL ? f->help : "", om);
		psb_text_printf(&out, "\n# TYPE %.*s %s\n", (int)n, f->name, type);
		if (f->samples.s != NULL)
			psb_text_append(&out, f->samples.s, f->samples.len);
		p->oom |= f->samples.oom;
	}
	if (om)
		psb_text_puts(&out, "# EOF\n");
	if (p->oom || out.oom || out.s == NULL) {
		free(out.s);
		return NULL;
	}
	return out.s;
}
