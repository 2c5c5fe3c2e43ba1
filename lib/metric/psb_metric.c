/* Walking a block's descriptor table: values, JSON, names. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "psb_metric.h"

static const struct {
	const char *name;	/* as documented */
	const char *suffix;	/* of Prometheus names */
	double scale;		/* to the base unit */
} units[PSB_MU_MAX] = {
	[PSB_MU_NONE] = { "", "", 1 },
	[PSB_MU_BYTES] = { "bytes", "_bytes", 1 },
	[PSB_MU_PACKETS] = { "packets", "_packets", 1 },
	[PSB_MU_CYCLES] = { "cycles", "_cycles", 1 },
	[PSB_MU_S] = { "s", "_seconds", 1 },
	[PSB_MU_US] = { "us", "_seconds", 1e-6 },
	[PSB_MU_NS] = { "ns", "_seconds", 1e-9 },
	[PSB_MU_HZ] = { "Hz", "_hertz", 1 },
	[PSB_MU_GBPS] = { "Gbit/s", "_bytes_per_second", 1e9 / 8 },
	[PSB_MU_PER_S] = { "1/s", "_per_second", 1 },
	[PSB_MU_PCT] = { "percent", "_ratio", 0.01 },
	[PSB_MU_BOOL] = { "0/1", "", 1 },
	[PSB_MU_VERSIONS] = { "versions", "", 1 },
};

static const char *const kind_names[] = {
	[PSB_METRIC_COUNTER] = "counter",
	[PSB_METRIC_GAUGE] = "gauge",
	[PSB_METRIC_HISTOGRAM] = "histogram",
	[PSB_METRIC_GROUP] = "group",
};

const char *
psb_metric_unit_name(unsigned int unit)
{
	return unit < PSB_MU_MAX ? units[unit].name : "";
}

const char *
psb_metric_kind_name(unsigned int kind)
{
	return kind < sizeof(kind_names) / sizeof(kind_names[0]) ? kind_names[kind] : "";
}

static const void *
field(const struct psb_metric *m, const void *base)
{
	return (const char *)base + m->off;
}

int
psb_metric_present(const struct psb_metric *m, const void *base)
{
	return m->cond == 0 || *((const uint8_t *)base + m->cond - 1) != 0;
}

const char *
psb_metric_ipv4_str(uint32_t ip, char *buf)
{
	snprintf(buf, 16, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
	return buf;
}

double
psb_metric_value(const struct psb_metric *m, const void *base, unsigned int k)
{
	const void *p = field(m, base);

	switch (m->type) {
	case PSB_MT_U64:
		return (double)((const uint64_t *)p)[k];
	case PSB_MT_U32:
	case PSB_MT_IPV4:
		return (double)((const uint32_t *)p)[k];
	case PSB_MT_DBL:
		return ((const double *)p)[k];
	case PSB_MT_BOOL:
		return ((const uint8_t *)p)[k] != 0;
	default:
		return 0;
	}
}

uint64_t
psb_metric_u64(const struct psb_metric *m, const void *base, unsigned int k)
{
	double d;

	switch (m->type) {
	case PSB_MT_U64:
		return ((const uint64_t *)field(m, base))[k];
	case PSB_MT_U32:
	case PSB_MT_IPV4:
		return ((const uint32_t *)field(m, base))[k];
	default:
		d = psb_metric_value(m, base, k);
		return d > 0 && isfinite(d) ? (uint64_t)llround(d) : 0;
	}
}

/* {"le": {bound: samples <= bound, ..., "+Inf": all}, "count": all, "sum": sum / div} */
void
psb_metric_hist_emit(struct psb_emit *e, const char *key, const struct psb_hist *h,
		const struct psb_metric_bounds *b)
{
	uint64_t cum[32], total;
	unsigned int i;

	if (b->n > sizeof(cum) / sizeof(cum[0]))
		return;
	total = psb_hist_cumulative(h, b->le, b->n, cum);
	psb_emit_open(e, key);
	psb_emit_open(e, "le");
	for (i = 0; i < b->n; i++)
		psb_emit_int(e, b->names[i], (json_int_t)cum[i]);
	psb_emit_int(e, "+Inf", (json_int_t)total);
	psb_emit_close(e);
	psb_emit_int(e, "count", (json_int_t)total);
	psb_emit_real(e, "sum", h->sum / b->div);
	psb_emit_close(e);
}

static void
emit_one(struct psb_emit *e, const struct psb_metric *m, const void *base, const char *key,
		unsigned int k)
{
	uint32_t ip;
	char buf[16];

	switch (m->type) {
	case PSB_MT_IPV4:
		ip = ((const uint32_t *)field(m, base))[k];
		psb_emit_str(e, key, ip != 0 ? psb_metric_ipv4_str(ip, buf) : NULL);
		break;
	case PSB_MT_DBL:
		psb_emit_real(e, key, psb_metric_value(m, base, k));
		break;
	case PSB_MT_BOOL:
		psb_emit_bool(e, key, psb_metric_value(m, base, k) != 0);
		break;
	default:
		psb_emit_int(e, key, (json_int_t)psb_metric_u64(m, base, k));
		break;
	}
}

void
psb_metric_emit(struct psb_emit *e, const struct psb_metric_block *b, const void *base,
		int detail)
{
	const struct psb_metric *m;
	unsigned int k;

	for (m = b->m; m < b->m + b->n; m++) {
		if (!psb_metric_present(m, base) || (m->detail && !detail))
			continue;
		if (m->type == PSB_MT_HIST) {
			psb_metric_hist_emit(e, m->name, field(m, base), m->bounds);
		} else if (m->type == PSB_MT_BLOCK && m->name[0] == '\0') {
			psb_metric_emit(e, m->sub, field(m, base), detail);
		} else if (m->type == PSB_MT_BLOCK) {
			psb_emit_open(e, m->name);
			psb_metric_emit(e, m->sub, field(m, base), detail);
			psb_emit_close(e);
		} else if (m->n > 1) {
			psb_emit_open(e, m->name);
			for (k = m->first; k < m->n; k++)
				emit_one(e, m, base, m->label_of(k), k);
			psb_emit_close(e);
		} else {
			emit_one(e, m, base, m->name, 0);
		}
	}
}

void
psb_metric_read(const struct psb_metric_block *b, const void *o_json, void *base)
{
	const json_t *o = o_json;
	const struct psb_metric *m;
	json_t *v;
	void *p;

	for (m = b->m; m < b->m + b->n; m++) {
		p = (char *)base + m->off;
		if (m->type == PSB_MT_BLOCK && m->name[0] == '\0') {
			psb_metric_read(m->sub, o, p);
			continue;
		}
		v = json_object_get(o, m->name);
		if (v == NULL || m->n > 1)
			continue;
		switch (m->type) {
		case PSB_MT_U64:
			*(uint64_t *)p = (uint64_t)json_integer_value(v);
			break;
		case PSB_MT_U32:
			*(uint32_t *)p = (uint32_t)json_integer_value(v);
			break;
		case PSB_MT_DBL:
			*(double *)p = json_number_value(v);
			break;
		case PSB_MT_BOOL:
			*(uint8_t *)p = json_is_true(v);
			break;
		case PSB_MT_IPV4: {
			unsigned int a, b2, c, d;

			if (json_is_string(v) && sscanf(json_string_value(v), "%u.%u.%u.%u", &a,
							&b2, &c, &d) == 4 && (a | b2 | c | d) < 256)
				*(uint32_t *)p = a << 24 | b2 << 16 | c << 8 | d;
			break;
		}
		case PSB_MT_BLOCK:
			psb_metric_read(m->sub, v, p);
			break;
		default:
			break;
		}
	}
}

static int
ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return k != 0 && n >= k && memcmp(s + n - k, suffix, k) == 0;
}

void
psb_metric_prom_name(char *dst, size_t len, const char *prefix, const struct psb_metric *m,
		double *scale)
{
	const char *nm = m->prom != NULL ? m->prom : m->name;
	unsigned int u = m->unit < PSB_MU_MAX ? m->unit : PSB_MU_NONE;
	int n;

	if (scale != NULL)
		*scale = units[u].scale;
	if (*nm == '\0' || m->type == PSB_MT_IPV4) {
		if (len != 0)
			*dst = '\0';
		return;
	}
	n = snprintf(dst, len, "%s_%s", prefix, nm);
	if (n < 0 || (size_t)n >= len)
		return;
	if (!ends_with(dst, (size_t)n, units[u].suffix))
		n += snprintf(dst + n, len - (size_t)n, "%s", units[u].suffix);
	if (m->kind == PSB_METRIC_COUNTER && (size_t)n < len)
		snprintf(dst + n, len - (size_t)n, "_total");
}
