/* psb configuration: table-driven parsing of JSON experiment documents into C structs. */
#ifndef PSB_CONF_H
#define PSB_CONF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * One table per JSON object type, nginx style: each entry maps a key to a type, a range, a
 * default and the offset of the member it fills. Tables end with an entry whose key is NULL.
 *
 * C type of the member at .offset, per type:
 *   BOOL bool; INT int64_t; UINT uint64_t; DOUBLE double; STRING char[.size] (NUL included);
 *   SIZE uint64_t bytes; DURATION uint64_t ns; RATE uint64_t bits/s; ENUM int (index into
 *   .names); IP uint32_t, host order; OBJECT the nested struct described by .sub;
 *   STRLIST struct psb_conf_strlist.
 */
enum psb_conf_type {
	PSB_CONF_BOOL,		/* JSON true/false only */
	PSB_CONF_INT,		/* integer JSON number */
	PSB_CONF_UINT,		/* non-negative integer JSON number (up to INT64_MAX) */
	PSB_CONF_DOUBLE,	/* any JSON number */
	PSB_CONF_STRING,	/* JSON string, copied; at most .size - 1 bytes */
	PSB_CONF_SIZE,		/* 1024, "10MB", "4KiB", "1.5GB": bytes */
	PSB_CONF_DURATION,	/* "0.2s", "150ms", "20us", "5ns", "2m"; plain number = seconds: ns */
	PSB_CONF_RATE,		/* "2Gbps", "100Mbps", "10kbps"; plain number = bits/s */
	PSB_CONF_ENUM,		/* one of the strings of .names */
	PSB_CONF_OBJECT,	/* nested JSON object, parsed by .sub */
	PSB_CONF_IP,		/* "198.18.0.1" */
	PSB_CONF_STRLIST,	/* ["a", "b"] (a lone "a" is a list of one): struct psb_conf_strlist */
};

#define PSB_CONF_STRLIST_MAX	8
#define PSB_CONF_STRLIST_LEN	256

/* Member type of a STRLIST field; .max, when set, caps the count below PSB_CONF_STRLIST_MAX. */
struct psb_conf_strlist {
	uint32_t n;
	char v[PSB_CONF_STRLIST_MAX][PSB_CONF_STRLIST_LEN];
};

struct psb_conf_field {
	const char *key;
	enum psb_conf_type type;
	size_t offset;			/* of the member in the struct being filled */
	size_t size;			/* STRING: capacity of the char array */
	int required;			/* missing key is an error (the default is ignored) */
	const char *def;		/* default, JSON text form ("10MB", "true", "3"); NULL = zero */
	double min, max;		/* numeric range in the base unit; min == max == 0: none */
	const char *const *names;	/* ENUM: NULL-terminated */
	const struct psb_conf_field *sub; /* OBJECT: nested table */
	const char *help;		/* one line, for error messages and psb_conf_help() */
};

/*
 * Fill *dst from the JSON object obj per table. Every field of the table is first set to its
 * default (zero if none), then from obj; unknown keys are rejected. prefix names obj in error
 * messages ("experiment"), may be NULL or "".
 *
 * Atomic: the parse runs on a copy, so on failure *dst is left exactly as it was. Only the
 * bytes up to the end of the last member a table describes are copied back; members of the
 * struct the table does not describe keep their values.
 *
 * Returns 0, or -EINVAL with "path.to.key: expected ..., got ..." in err (err may be NULL),
 * or -ENOMEM.
 */
int psb_conf_parse(const struct psb_conf_field *table, void *dst, const json_t *obj,
		const char *prefix, char *err, size_t errlen);

/* Same from a file; a syntax error is reported as "file:line:column: ...". Returns 0, -EINVAL,
 * -ENOMEM or the -errno of opening the file. */
int psb_conf_parse_file(const struct psb_conf_field *table, void *dst, const char *path,
		const char *prefix, char *err, size_t errlen);

/* Same from JSON text; a syntax error is reported as "<string>:line:column: ...". */
int psb_conf_parse_string(const struct psb_conf_field *table, void *dst, const char *text,
		const char *prefix, char *err, size_t errlen);

/*
 * Set one field by dotted path ("multicast.rate") from its text form, validated as the parser
 * does, for a live "set PARAM VALUE". The text is read as JSON when it is valid JSON
 * ("8", "true", "\"x\""), else as a JSON string ("3Gbps"); STRING, ENUM and IP fields always
 * take the text as is. On failure *dst is unchanged. Returns 0, -ENOENT (no such path),
 * -EINVAL (bad value, or the path names an object) or -ENOMEM, with a message in err.
 */
int psb_conf_set(const struct psb_conf_field *table, void *dst, const char *path,
		const char *value, char *err, size_t errlen);

/* Unit parsers. The number is decimal digits with an optional fraction, then an optional
 * space and a case-insensitive unit; the result must be whole. Returns 0, -EINVAL (junk,
 * negative, unknown unit, not a whole number of base units) or -ERANGE (above UINT64_MAX). */
int psb_conf_parse_size(const char *s, uint64_t *bytes);	/* B KB MB GB TB KiB MiB GiB TiB */
int psb_conf_parse_duration(const char *s, uint64_t *ns);	/* ns us ms s m; none = s */
int psb_conf_parse_rate(const char *s, uint64_t *bps);		/* bps kbps Mbps Gbps Tbps */

/* Text form of a value in its largest exact unit ("10MB", "4KiB", "200ms", "2Gbps"), which
 * the parsers above read back to the same value. Returns snprintf's result. */
int psb_conf_format_size(char *buf, size_t len, uint64_t bytes);
int psb_conf_format_duration(char *buf, size_t len, uint64_t ns);
int psb_conf_format_rate(char *buf, size_t len, uint64_t bps);

/* The document as JSON, every field included (sizes, durations and rates in their text form),
 * for results files; psb_conf_parse() of it gives back the same struct. NULL on no memory. */
json_t *psb_conf_dump(const struct psb_conf_field *table, const void *src);

/* One line per field: path, type, required/default, range and help, for --help output. */
void psb_conf_help(FILE *f, const struct psb_conf_field *table, const char *prefix);

#ifdef __cplusplus
}
#endif

#endif /* PSB_CONF_H */
