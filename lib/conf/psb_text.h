/*
 * Text built in memory: a growing string, and compact JSON written into it.
 *
 * The counters are written several times a second (control socket, counters file) from
 * the lcore that also moves packets; psb_text_json writes what json_dumps(JSON_COMPACT)
 * writes, without its allocations per value.
 */
#ifndef PSB_TEXT_H
#define PSB_TEXT_H

#include <stddef.h>

#include <jansson.h>

struct psb_text {
	char *s;		/* NUL-terminated once anything was added; free() it */
	size_t len, cap;
	int oom;		/* memory ran out: s holds what came before */
};

/* Room for need more bytes and a NUL; 0, or -1 (and oom set) when memory ran out. */
int psb_text_room(struct psb_text *t, size_t need);
void psb_text_append(struct psb_text *t, const char *p, size_t len);
void psb_text_puts(struct psb_text *t, const char *p);
void psb_text_printf(struct psb_text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void psb_text_i64(struct psb_text *t, long long v);
/* v in decimal, without printf, into buf (no NUL added); its length. */
#define PSB_TEXT_INT_MAX	24	/* bytes any long long takes */
size_t psb_text_fmt_int(char *buf, long long v);

/* v as compact JSON, byte for byte as json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY). */
void psb_text_json(struct psb_text *t, const json_t *v);

/*
 * One builder for a document that is wanted two ways: as a jansson tree (to pick parts of,
 * to turn into telemetry or Prometheus) and as text (control replies, the counters file).
 * Calls go to an emitter that either builds the tree or writes compact JSON at once, the
 * same bytes psb_text_json would write of the tree. Numbers are json_int_t as in jansson;
 * a NULL string, a non-finite real or a string that is not UTF-8 leaves its key out in both.
 */
#define PSB_EMIT_DEPTH	16

struct psb_emit {
	struct psb_text *t;		/* text, or NULL: a tree */
	json_t *root;
	json_t *stack[PSB_EMIT_DEPTH];	/* open objects (tree) */
	unsigned int count[PSB_EMIT_DEPTH];	/* entries written at each level (text) */
	int depth;			/* open objects, dropped ones included */
	int drop;			/* depth of the outermost dropped object, 0: none */
	int oom;			/* memory ran out, or a call was refused */
};

/* Into text appended to t, or into a tree psb_emit_done returns. */
void psb_emit_text(struct psb_emit *e, struct psb_text *t);
void psb_emit_tree(struct psb_emit *e);
/* The tree (NULL when memory ran out); text mode: NULL. Closes what is open. */
json_t *psb_emit_done(struct psb_emit *e);

/* An object as the value of key (NULL: the document itself), and its end. */
void psb_emit_open(struct psb_emit *e, const char *key);
void psb_emit_close(struct psb_emit *e);
void psb_emit_int(struct psb_emit *e, const char *key, json_int_t v);
void psb_emit_real(struct psb_emit *e, const char *key, double v);
void psb_emit_bool(struct psb_emit *e, const char *key, int v);
void psb_emit_str(struct psb_emit *e, const char *key, const char *v);
/* Any JSON value, as it is (its reference is taken; NULL: nothing). */
void psb_emit_json(struct psb_emit *e, const char *key, json_t *v);

#endif
