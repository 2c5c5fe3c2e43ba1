/* psb configuration: table-driven JSON parsing, unit parsers, dump and help of settings. */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "psb_conf.h"

#define CONF_PATH_MAX	256	/* longest dotted path kept in messages */
#define CONF_SHOW_MAX	40	/* offending values are shown up to this many characters */

struct conf_unit {
	const char *name;
	uint64_t mult;		/* base units per unit */
};

/* Each list runs from the largest unit down so that formatting picks the largest exact one. */
static const struct conf_unit size_units[] = {
	{ "TiB", 1099511627776ull }, { "TB", 1000000000000ull },
	{ "GiB", 1073741824ull }, { "GB", 1000000000ull },
	{ "MiB", 1048576ull }, { "MB", 1000000ull },
	{ "KiB", 1024ull }, { "KB", 1000ull },
	{ "B", 1ull }, { NULL, 0 },
};

static const struct conf_unit duration_units[] = {
	{ "m", 60000000000ull }, { "s", 1000000000ull }, { "ms", 1000000ull },
	{ "us", 1000ull }, { "ns", 1ull }, { NULL, 0 },
};

static const struct conf_unit rate_units[] = {
	{ "Tbps", 1000000000000ull }, { "Gbps", 1000000000ull }, { "Mbps", 1000000ull },
	{ "kbps", 1000ull }, { "bps", 1ull }, { NULL, 0 },
};

/* Writes "path: message" into err; returns -EINVAL so callers can return it directly. */
static int __attribute__((format(printf, 4, 5)))
conf_fail(char *err, size_t errlen, const char *path, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (err == NULL || errlen == 0)
		return -EINVAL;
	n = snprintf(err, errlen, "%s: ", path != NULL && path[0] != '\0' ? path : "(top)");
	if (n < 0 || (size_t)n >= errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Short compact JSON of v, so a huge offending value cannot drown the message. */
static void
conf_show(const json_t *v, char *buf, size_t len)
{
	char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);

	if (s == NULL) {
		snprintf(buf, len, "?");
		return;
	}
	if (strlen(s) > CONF_SHOW_MAX)
		snprintf(buf, len, "%.*s...", CONF_SHOW_MAX - 3, s);
	else
		snprintf(buf, len, "%s", s);
	free(s);
}

static void
conf_join(char *out, size_t len, const char *path, const char *key)
{
	if (path == NULL || path[0] == '\0')
		snprintf(out, len, "%s", key);
	else
		snprintf(out, len, "%s.%s", path, key);
}

static size_t conf_table_extent(const struct psb_conf_field *table);

/* Bytes the member of f occupies in the struct. */
static size_t
conf_width(const struct psb_conf_field *f)
{
	switch (f->type) {
	case PSB_CONF_BOOL:
		return sizeof(bool);
	case PSB_CONF_INT:
		return sizeof(int64_t);
	case PSB_CONF_UINT:
	case PSB_CONF_SIZE:
	case PSB_CONF_DURATION:
	case PSB_CONF_RATE:
		return sizeof(uint64_t);
	case PSB_CONF_DOUBLE:
		return sizeof(double);
	case PSB_CONF_STRING:
		return f->size;
	case PSB_CONF_ENUM:
		return sizeof(int);
	case PSB_CONF_IP:
		return sizeof(uint32_t);
	case PSB_CONF_STRLIST:
		return sizeof(struct psb_conf_strlist);
	case PSB_CONF_OBJECT:
		return f->sub != NULL ? conf_table_extent(f->sub) : 0;
	}
	return 0;
}

/* End of the last member the table describes: the part of the struct a parse may touch. */
static size_t
conf_table_extent(const struct psb_conf_field *table)
{
	const struct psb_conf_field *f;
	size_t end = 0, e;

	for (f = table; f->key != NULL; f++) {
		e = f->offset + conf_width(f);
		if (e > end)
			end = e;
	}
	return end;
}

/* Decimal number with optional fraction, optional space, optional unit from units. */
static int
conf_parse_units(const char *s, const struct conf_unit *units, uint64_t def_mult, uint64_t *out)
{
	const struct conf_unit *u;
	uint64_t mant = 0, mult = def_mult, prod, div = 1;
	unsigned int fdig = 0, zeros = 0, i;
	bool overflow = false;

	if (s == NULL || *s < '0' || *s > '9')
		return -EINVAL;	/* also rejects "-1", "+1", " 1" and "" */
	for (; *s >= '0' && *s <= '9'; s++)
		if (__builtin_mul_overflow(mant, 10, &mant) ||
				__builtin_add_overflow(mant, (uint64_t)(*s - '0'), &mant))
			overflow = true;
	if (*s == '.') {
		s++;
		if (*s < '0' || *s > '9')
			return -EINVAL;
		/* zeros are taken in only when a later digit needs them, so "1.500GB" is 15/10 GB
		 * and many trailing zeros cannot overflow the mantissa */
		for (; *s >= '0' && *s <= '9'; s++) {
			if (*s == '0') {
				zeros++;
				continue;
			}
			for (i = 0; i <= zeros; i++)
				if (__builtin_mul_overflow(mant, 10, &mant))
					overflow = true;
			if (__builtin_add_overflow(mant, (uint64_t)(*s - '0'), &mant))
				overflow = true;
			fdig += zeros + 1;
			zeros = 0;
		}
	}
	if (*s == ' ' && *++s == '\0')
		return -EINVAL;	/* a space must separate a unit, not trail the number */
	if (*s != '\0') {
		for (u = units; u->name != NULL; u++)
			if (strcasecmp(s, u->name) == 0)
				break;
		if (u->name == NULL)
			return -EINVAL;
		mult = u->mult;
	}
	if (overflow)
		return -ERANGE;
	if (fdig > 19)
		return -EINVAL;	/* a product below 2^64 cannot be a multiple of 10^20 */
	for (i = 0; i < fdig; i++)
		div *= 10;
	if (__builtin_mul_overflow(mant, mult, &prod))
		return -ERANGE;
	if (prod % div != 0)
		return -EINVAL;	/* "1.5B", "0.1KiB": not a whole number of base units */
	*out = prod / div;
	return 0;
}

int
psb_conf_parse_size(const char *s, uint64_t *bytes)
{
	return conf_parse_units(s, size_units, 1, bytes);
}

int
psb_conf_parse_duration(const char *s, uint64_t *ns)
{
	return conf_parse_units(s, duration_units, 1000000000ull, ns);
}

int
psb_conf_parse_rate(const char *s, uint64_t *bps)
{
	return conf_parse_units(s, rate_units, 1, bps);
}

static int
conf_format_units(char *buf, size_t len, uint64_t v, const struct conf_unit *units)
{
	const struct conf_unit *u;

	for (u = units; u->name != NULL; u++)
		if (v != 0 && v % u->mult == 0)
			return snprintf(buf, len, "%llu%s", (unsigned long long)(v / u->mult), u->name);
	/* zero, or a unit list without 1: the smallest unit is always exact */
	u--;
	return snprintf(buf, len, "%llu%s", (unsigned long long)(v / u->mult), u->name);
}

int
psb_conf_format_size(char *buf, size_t len, uint64_t bytes)
{
	return conf_format_units(buf, len, bytes, size_units);
}

int
psb_conf_format_duration(char *buf, size_t len, uint64_t ns)
{
	return conf_format_units(buf, len, ns, duration_units);
}

int
psb_conf_format_rate(char *buf, size_t len, uint64_t bps)
{
	return conf_format_units(buf, len, bps, rate_units);
}

/* Bound in the field's own notation, for range messages ("1GiB" rather than 1073741824). */
static void
conf_format_bound(char *buf, size_t len, const struct psb_conf_field *f, double b)
{
	uint64_t v = b <= 0 ? 0 : b >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)b;

	switch (f->type) {
	case PSB_CONF_SIZE:
		psb_conf_format_size(buf, len, v);
		break;
	case PSB_CONF_DURATION:
		psb_conf_format_duration(buf, len, v);
		break;
	case PSB_CONF_RATE:
		psb_conf_format_rate(buf, len, v);
		break;
	default:
		snprintf(buf, len, "%.15g", b);	/* 0.1, not 0.10000000000000001 */
		break;
	}
}

static bool
conf_has_range(const struct psb_conf_field *f)
{
	return !(f->min == 0 && f->max == 0);
}

static const char *
conf_expect(const struct psb_conf_field *f)
{
	switch (f->type) {
	case PSB_CONF_BOOL:
		return "expected true or false";
	case PSB_CONF_INT:
		return "expected an integer";
	case PSB_CONF_UINT:
		return "expected a non-negative integer";
	case PSB_CONF_DOUBLE:
		return "expected a number";
	case PSB_CONF_STRING:
		return "expected a string";
	case PSB_CONF_SIZE:
		return "expected a size like \"10MB\" or \"4KiB\"";
	case PSB_CONF_DURATION:
		return "expected a duration like \"150ms\" or \"0.2s\"";
	case PSB_CONF_RATE:
		return "expected a rate like \"2Gbps\"";
	case PSB_CONF_ENUM:
		return "expected one of the names";
	case PSB_CONF_OBJECT:
		return "expected an object";
	case PSB_CONF_IP:
		return "expected an IPv4 address like \"198.18.0.1\"";
	case PSB_CONF_STRLIST:
		return "expected a string or an array of strings";
	}
	return "expected a valid value";
}

/* Help of a field as a message suffix, so an error also says what the setting is for. */
static const char *
conf_help_sep(const struct psb_conf_field *f)
{
	return f->help != NULL ? " -- " : "";
}

static const char *
conf_help(const struct psb_conf_field *f)
{
	return f->help != NULL ? f->help : "";
}

/* "expected X, got V (why) -- help": the common form of a rejected value. */
static int
conf_bad(const struct psb_conf_field *f, const json_t *v, const char *path, const char *why,
		char *err, size_t errlen)
{
	char shown[CONF_SHOW_MAX + 8];

	conf_show(v, shown, sizeof(shown));
	return conf_fail(err, errlen, path, "%s, got %s%s%s%s%s%s", conf_expect(f), shown,
			why != NULL ? " (" : "", why != NULL ? why : "", why != NULL ? ")" : "",
			conf_help_sep(f), conf_help(f));
}

static int
conf_range(const struct psb_conf_field *f, const json_t *v, double x, const char *path,
		char *err, size_t errlen)
{
	char lo[32], hi[32], shown[CONF_SHOW_MAX + 8];

	if (!conf_has_range(f) || (x >= f->min && x <= f->max))
		return 0;
	conf_format_bound(lo, sizeof(lo), f, f->min);
	conf_format_bound(hi, sizeof(hi), f, f->max);
	conf_show(v, shown, sizeof(shown));
	return conf_fail(err, errlen, path, "%s in [%s, %s], got %s%s%s", conf_expect(f), lo, hi,
			shown, conf_help_sep(f), conf_help(f));
}

/* A JSON number as a whole count of base units (value * mult); whole within rounding. */
static int
conf_number_units(const json_t *v, uint64_t mult, uint64_t *out)
{
	double x, r;

	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0)
			return -EINVAL;
		if (__builtin_mul_overflow((uint64_t)json_integer_value(v), mult, out))
			return -ERANGE;
		return 0;
	}
	x = json_real_value(v);
	if (!(x >= 0))
		return -EINVAL;
	x *= (double)mult;
	if (x >= 18446744073709551616.0)
		return -ERANGE;
	r = nearbyint(x);
	/* 0.2 s is 200000000.00000003 ns in binary: accept rounding noise, not real fractions */
	if (fabs(x - r) > 1e-9 * fmax(1.0, x))
		return -EINVAL;
	*out = (uint64_t)r;
	return 0;
}

/* A JSON number that must be an integer: integer values, or reals with no fraction (1e3). */
static int
conf_number_int(const json_t *v, int64_t *out)
{
	double x;

	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return 0;
	}
	x = json_real_value(v);
	if (x != floor(x) || x < -9223372036854775808.0 || x >= 9223372036854775808.0)
		return -EINVAL;
	*out = (int64_t)x;
	return 0;
}

static int conf_parse_object(const struct psb_conf_field *table, char *base, const json_t *obj,
		const char *path, char *err, size_t errlen);

/* A string or an array of strings into a struct psb_conf_strlist; items are named path[i]. */
static int
conf_parse_strlist(const struct psb_conf_field *f, const json_t *v, void *out, const char *path,
		char *err, size_t errlen)
{
	struct psb_conf_strlist *l = out;
	size_t max = PSB_CONF_STRLIST_MAX, i, n;
	char item[CONF_PATH_MAX];
	const json_t *e;

	if (f->max >= 1 && f->max < PSB_CONF_STRLIST_MAX)
		max = (size_t)f->max;
	if (json_is_string(v)) {
		n = 1;
	} else if (json_is_array(v)) {
		n = json_array_size(v);
	} else {
		return conf_bad(f, v, path, NULL, err, errlen);
	}
	if (n > max)
		return conf_fail(err, errlen, path, "expected at most %zu items, got %zu%s%s", max, n,
				conf_help_sep(f), conf_help(f));
	memset(l, 0, sizeof(*l));
	for (i = 0; i < n; i++) {
		e = json_is_string(v) ? v : json_array_get(v, i);
		snprintf(item, sizeof(item), "%s[%zu]", path, i);
		if (!json_is_string(e)) {
			char shown[CONF_SHOW_MAX + 8];

			conf_show(e, shown, sizeof(shown));
			return conf_fail(err, errlen, item, "expected a string, got %s", shown);
		}
		if (json_string_length(e) >= PSB_CONF_STRLIST_LEN ||
		    strlen(json_string_value(e)) != json_string_length(e))
			return conf_fail(err, errlen, item,
					"expected a string of at most %d bytes without NUL, got %zu bytes",
					PSB_CONF_STRLIST_LEN - 1, json_string_length(e));
		memcpy(l->v[i], json_string_value(e), json_string_length(e) + 1);
	}
	l->n = (uint32_t)n;
	return 0;
}

/* Parse v into the member of f at out (which points at the member, not the struct). */
static int
conf_parse_value(const struct psb_conf_field *f, const json_t *v, void *out, const char *path,
		char *err, size_t errlen)
{
	const char *s;
	uint64_t u = 0;
	int64_t i;
	struct in_addr a;
	size_t n, k;
	int rc;

	switch (f->type) {
	case PSB_CONF_BOOL:
		if (!json_is_boolean(v))
			return conf_bad(f, v, path, NULL, err, errlen);
		*(bool *)out = json_is_true(v);
		return 0;
	case PSB_CONF_INT:
	case PSB_CONF_UINT:
		if (json_is_string(v))
			return conf_bad(f, v, path, "a JSON number, not a string", err, errlen);
		if (!json_is_number(v) || conf_number_int(v, &i) != 0)
			return conf_bad(f, v, path, NULL, err, errlen);
		if (f->type == PSB_CONF_UINT && i < 0)
			return conf_bad(f, v, path, NULL, err, errlen);
		rc = conf_range(f, v, (double)i, path, err, errlen);
		if (rc != 0)
			return rc;
		if (f->type == PSB_CONF_INT)
			*(int64_t *)out = i;
		else
			*(uint64_t *)out = (uint64_t)i;
		return 0;
	case PSB_CONF_DOUBLE:
		if (!json_is_number(v))
			return conf_bad(f, v, path, NULL, err, errlen);
		rc = conf_range(f, v, json_number_value(v), path, err, errlen);
		if (rc != 0)
			return rc;
		*(double *)out = json_number_value(v);
		return 0;
	case PSB_CONF_STRING:
		if (!json_is_string(v))
			return conf_bad(f, v, path, NULL, err, errlen);
		n = json_string_length(v);
		if (n >= f->size || strlen(json_string_value(v)) != n)
			return conf_fail(err, errlen, path,
					"expected a string of at most %zu bytes without NUL, got %zu bytes",
					f->size > 0 ? f->size - 1 : 0, n);
		memcpy(out, json_string_value(v), n + 1);
		return 0;
	case PSB_CONF_SIZE:
	case PSB_CONF_DURATION:
	case PSB_CONF_RATE:
		if (json_is_string(v)) {
			s = json_string_value(v);
			rc = f->type == PSB_CONF_SIZE ? psb_conf_parse_size(s, &u) :
				f->type == PSB_CONF_DURATION ? psb_conf_parse_duration(s, &u) :
				psb_conf_parse_rate(s, &u);
		} else if (json_is_number(v)) {
			rc = conf_number_units(v, f->type == PSB_CONF_DURATION ? 1000000000ull : 1, &u);
		} else {
			rc = -EINVAL;
		}
		if (rc != 0)
			return conf_bad(f, v, path, rc == -ERANGE ? "too large" : NULL, err, errlen);
		rc = conf_range(f, v, (double)u, path, err, errlen);
		if (rc != 0)
			return rc;
		*(uint64_t *)out = u;
		return 0;
	case PSB_CONF_ENUM:
		if (json_is_string(v) && f->names != NULL)
			for (k = 0; f->names[k] != NULL; k++)
				if (strcmp(f->names[k], json_string_value(v)) == 0) {
					*(int *)out = (int)k;
					return 0;
				}
		{
			char list[256] = "", shown[CONF_SHOW_MAX + 8];
			size_t used = 0;

			for (k = 0; f->names != NULL && f->names[k] != NULL && used < sizeof(list); k++)
				used += snprintf(list + used, sizeof(list) - used, "%s%s",
						k > 0 ? ", " : "", f->names[k]);
			conf_show(v, shown, sizeof(shown));
			return conf_fail(err, errlen, path, "expected one of: %s, got %s%s%s", list,
					shown, conf_help_sep(f), conf_help(f));
		}
	case PSB_CONF_IP:
		if (!json_is_string(v) || inet_pton(AF_INET, json_string_value(v), &a) != 1)
			return conf_bad(f, v, path, NULL, err, errlen);
		*(uint32_t *)out = ntohl(a.s_addr);
		return 0;
	case PSB_CONF_OBJECT:
		if (f->sub == NULL)
			return conf_fail(err, errlen, path, "table error: object without a sub-table");
		return conf_parse_object(f->sub, out, v, path, err, errlen);
	case PSB_CONF_STRLIST:
		return conf_parse_strlist(f, v, out, path, err, errlen);
	}
	return conf_fail(err, errlen, path, "table error: unknown type %d", (int)f->type);
}

/* JSON form of a value given as text: defaults and "set" values. */
static json_t *
conf_text_value(const struct psb_conf_field *f, const char *text)
{
	json_t *v;

	/* these take free text, which must not be reinterpreted as JSON ("123" as a name) */
	if (f->type == PSB_CONF_STRING || f->type == PSB_CONF_ENUM || f->type == PSB_CONF_IP)
		return json_string(text);
	v = json_loads(text, JSON_DECODE_ANY, NULL);
	if (v == NULL)
		v = json_string(text);
	return v;
}

/* Every field of the table to its default, or zero. */
static int
conf_defaults(const struct psb_conf_field *table, char *base, const char *path, char *err,
		size_t errlen)
{
	const struct psb_conf_field *f;
	char sub[CONF_PATH_MAX];
	json_t *v;
	int rc;

	for (f = table; f->key != NULL; f++) {
		conf_join(sub, sizeof(sub), path, f->key);
		if (f->type == PSB_CONF_OBJECT) {
			if (f->sub == NULL)
				return conf_fail(err, errlen, sub, "table error: object without a sub-table");
			rc = conf_defaults(f->sub, base + f->offset, sub, err, errlen);
		} else if (f->def == NULL) {
			memset(base + f->offset, 0, conf_width(f));
			rc = 0;
		} else {
			v = conf_text_value(f, f->def);
			if (v == NULL)
				return -ENOMEM;
			rc = conf_parse_value(f, v, base + f->offset, sub, err, errlen);
			json_decref(v);
		}
		if (rc != 0)
			return rc;
	}
	return 0;
}

static void
conf_key_list(const struct psb_conf_field *table, char *buf, size_t len)
{
	const struct psb_conf_field *f;
	size_t used = 0;

	buf[0] = '\0';
	for (f = table; f->key != NULL && used < len; f++)
		used += snprintf(buf + used, len - used, "%s%s", f == table ? "" : ", ", f->key);
}

static const struct psb_conf_field *
conf_find(const struct psb_conf_field *table, const char *key, size_t keylen)
{
	const struct psb_conf_field *f;

	for (f = table; f->key != NULL; f++)
		if (strlen(f->key) == keylen && strncmp(f->key, key, keylen) == 0)
			return f;
	return NULL;
}

static int
conf_parse_object(const struct psb_conf_field *table, char *base, const json_t *obj,
		const char *path, char *err, size_t errlen)
{
	const struct psb_conf_field *f;
	char sub[CONF_PATH_MAX], list[512];
	const char *key;
	json_t *v;
	int rc;

	if (!json_is_object(obj)) {
		char shown[CONF_SHOW_MAX + 8];

		conf_show(obj, shown, sizeof(shown));
		return conf_fail(err, errlen, path, "expected an object, got %s", shown);
	}
	rc = conf_defaults(table, base, path, err, errlen);
	if (rc != 0)
		return rc;
	/* unknown keys first: a misspelt key also shows up as a missing required one */
	json_object_foreach((json_t *)obj, key, v) {
		if (conf_find(table, key, strlen(key)) == NULL) {
			conf_join(sub, sizeof(sub), path, key);
			conf_key_list(table, list, sizeof(list));
			return conf_fail(err, errlen, sub, "unknown key (expected one of: %s)", list);
		}
	}
	for (f = table; f->key != NULL; f++) {
		conf_join(sub, sizeof(sub), path, f->key);
		v = json_object_get(obj, f->key);
		if (v == NULL) {
			if (f->required)
				return conf_fail(err, errlen, sub, "required%s%s", conf_help_sep(f),
						conf_help(f));
			continue;
		}
		rc = conf_parse_value(f, v, base + f->offset, sub, err, errlen);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int
psb_conf_parse(const struct psb_conf_field *table, void *dst, const json_t *obj,
		const char *prefix, char *err, size_t errlen)
{
	size_t extent;
	char *tmp;
	int rc;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (table == NULL || dst == NULL || obj == NULL)
		return conf_fail(err, errlen, prefix, "no table, destination or document");
	/* parse into a copy so that a half-applied document never reaches the caller */
	extent = conf_table_extent(table);
	tmp = malloc(extent > 0 ? extent : 1);
	if (tmp == NULL)
		return -ENOMEM;
	memcpy(tmp, dst, extent);
	rc = conf_parse_object(table, tmp, obj, prefix != NULL ? prefix : "", err, errlen);
	if (rc == 0)
		memcpy(dst, tmp, extent);
	free(tmp);
	return rc;
}

static int
conf_parse_loaded(const struct psb_conf_field *table, void *dst, json_t *doc,
		const json_error_t *jerr, const char *name, const char *prefix, char *err,
		size_t errlen)
{
	int rc;

	if (doc == NULL) {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "%s:%d:%d: %s", name, jerr->line, jerr->column,
					jerr->text);
		return -EINVAL;
	}
	rc = psb_conf_parse(table, dst, doc, prefix, err, errlen);
	json_decref(doc);
	return rc;
}

int
psb_conf_parse_file(const struct psb_conf_field *table, void *dst, const char *path,
		const char *prefix, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *doc;
	FILE *f;
	int rc;

	/* open it ourselves: jansson folds open failures into text and loses errno */
	f = fopen(path, "r");
	if (f == NULL) {
		rc = -errno;
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	doc = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
	fclose(f);
	return conf_parse_loaded(table, dst, doc, &jerr, path, prefix, err, errlen);
}

int
psb_conf_parse_string(const struct psb_conf_field *table, void *dst, const char *text,
		const char *prefix, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *doc;

	doc = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	return conf_parse_loaded(table, dst, doc, &jerr, "<string>", prefix, err, errlen);
}

int
psb_conf_set(const struct psb_conf_field *table, void *dst, const char *path,
		const char *value, char *err, size_t errlen)
{
	const struct psb_conf_field *t = table, *f = NULL;
	char list[512], *scratch;
	const char *p = path, *dot;
	size_t off = 0, len, w;
	json_t *v;
	int rc;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (table == NULL || dst == NULL || path == NULL || value == NULL)
		return conf_fail(err, errlen, path, "no table, destination, path or value");
	for (;;) {
		dot = strchr(p, '.');
		len = dot != NULL ? (size_t)(dot - p) : strlen(p);
		f = conf_find(t, p, len);
		if (f == NULL) {
			conf_key_list(t, list, sizeof(list));
			conf_fail(err, errlen, path, "unknown key \"%.*s\" (expected one of: %s)",
					(int)len, p, list);
			return -ENOENT;
		}
		off += f->offset;
		if (dot == NULL)
			break;
		if (f->type != PSB_CONF_OBJECT || f->sub == NULL) {
			conf_fail(err, errlen, path, "\"%.*s\" is not an object", (int)len, p);
			return -ENOENT;
		}
		t = f->sub;
		p = dot + 1;
	}
	if (f->type == PSB_CONF_OBJECT) {
		conf_key_list(f->sub, list, sizeof(list));
		return conf_fail(err, errlen, path, "is an object; set one of its keys: %s", list);
	}
	v = conf_text_value(f, value);
	if (v == NULL)
		return conf_fail(err, errlen, path, "expected UTF-8 text");
	/* validate into scratch space, so a rejected value leaves the live setting alone */
	w = conf_width(f);
	scratch = calloc(1, w > 0 ? w : 1);
	if (scratch == NULL) {
		json_decref(v);
		return -ENOMEM;
	}
	rc = conf_parse_value(f, v, scratch, path, err, errlen);
	if (rc == 0)
		memcpy((char *)dst + off, scratch, w);
	free(scratch);
	json_decref(v);
	return rc;
}

static json_t *
conf_dump_value(const struct psb_conf_field *f, const char *p)
{
	char buf[64];
	struct in_addr a;
	int e;

	switch (f->type) {
	case PSB_CONF_BOOL:
		return json_boolean(*(const bool *)p);
	case PSB_CONF_INT:
		return json_integer(*(const int64_t *)p);
	case PSB_CONF_UINT:
		/* jansson integers are signed; the parser never stores more than INT64_MAX */
		return json_integer((json_int_t)*(const uint64_t *)p);
	case PSB_CONF_DOUBLE:
		return json_real(*(const double *)p);
	case PSB_CONF_STRING:
		return json_stringn(p, strnlen(p, f->size));
	case PSB_CONF_SIZE:
		psb_conf_format_size(buf, sizeof(buf), *(const uint64_t *)p);
		return json_string(buf);
	case PSB_CONF_DURATION:
		psb_conf_format_duration(buf, sizeof(buf), *(const uint64_t *)p);
		return json_string(buf);
	case PSB_CONF_RATE:
		psb_conf_format_rate(buf, sizeof(buf), *(const uint64_t *)p);
		return json_string(buf);
	case PSB_CONF_ENUM:
		e = *(const int *)p;
		for (int k = 0; f->names != NULL && f->names[k] != NULL; k++)
			if (k == e)
				return json_string(f->names[k]);
		return json_integer(e);	/* corrupt: keep the evidence rather than fail */
	case PSB_CONF_IP:
		a.s_addr = htonl(*(const uint32_t *)p);
		if (inet_ntop(AF_INET, &a, buf, sizeof(buf)) == NULL)
			return NULL;
		return json_string(buf);
	case PSB_CONF_OBJECT:
		return f->sub != NULL ? psb_conf_dump(f->sub, p) : NULL;
	case PSB_CONF_STRLIST: {
		const struct psb_conf_strlist *l = (const void *)p;
		json_t *a = json_array();

		for (uint32_t k = 0; a != NULL && k < l->n && k < PSB_CONF_STRLIST_MAX; k++)
			if (json_array_append_new(a, json_stringn(l->v[k], strnlen(l->v[k],
					PSB_CONF_STRLIST_LEN))) != 0) {
				json_decref(a);
				return NULL;
			}
		return a;
	}
	}
	return NULL;
}

json_t *
psb_conf_dump(const struct psb_conf_field *table, const void *src)
{
	const struct psb_conf_field *f;
	json_t *obj, *v;

	obj = json_object();
	if (obj == NULL)
		return NULL;
	for (f = table; f->key != NULL; f++) {
		v = conf_dump_value(f, (const char *)src + f->offset);
		if (v == NULL || json_object_set_new(obj, f->key, v) != 0) {
			json_decref(obj);
			return NULL;
		}
	}
	return obj;
}

static const char *const conf_type_names[] = {
	[PSB_CONF_BOOL] = "bool", [PSB_CONF_INT] = "int", [PSB_CONF_UINT] = "uint",
	[PSB_CONF_DOUBLE] = "number", [PSB_CONF_STRING] = "string", [PSB_CONF_SIZE] = "size",
	[PSB_CONF_DURATION] = "duration", [PSB_CONF_RATE] = "rate", [PSB_CONF_ENUM] = "enum",
	[PSB_CONF_OBJECT] = "object", [PSB_CONF_IP] = "ipv4", [PSB_CONF_STRLIST] = "strings",
};

void
psb_conf_help(FILE *out, const struct psb_conf_field *table, const char *prefix)
{
	const struct psb_conf_field *f;
	char path[CONF_PATH_MAX], lo[32], hi[32];

	for (f = table; f->key != NULL; f++) {
		conf_join(path, sizeof(path), prefix, f->key);
		if (f->type == PSB_CONF_OBJECT && f->sub != NULL) {
			psb_conf_help(out, f->sub, path);
			continue;
		}
		fprintf(out, "  %-32s %-8s", path, conf_type_names[f->type]);
		if (f->required)
			fprintf(out, " required");
		else if (f->def != NULL)
			fprintf(out, " default %s", f->def);
		if (conf_has_range(f)) {
			conf_format_bound(lo, sizeof(lo), f, f->min);
			conf_format_bound(hi, sizeof(hi), f, f->max);
			fprintf(out, " [%s, %s]", lo, hi);
		}
		if (f->type == PSB_CONF_ENUM && f->names != NULL)
			for (int k = 0; f->names[k] != NULL; k++)
				fprintf(out, "%s%s", k == 0 ? " {" : "|", f->names[k]);
		if (f->type == PSB_CONF_ENUM && f->names != NULL)
			fprintf(out, "}");
		fprintf(out, "  %s\n", f->help != NULL ? f->help : "");
	}
}
