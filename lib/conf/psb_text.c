/* Text built in memory, and compact JSON written into it (see psb_text.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "psb_text.h"

int
psb_text_room(struct psb_text *t, size_t need)
{
	size_t cap;
	char *s;

	if (t->oom)
		return -1;
	if (t->len + need < t->cap)
		return 0;
	cap = t->cap != 0 ? t->cap : 256;	/* many are short: a family's samples */
	while (cap <= t->len + need)
		cap *= 2;
	s = realloc(t->s, cap);
	if (s == NULL) {
		t->oom = 1;
		return -1;
	}
	t->s = s;
	t->cap = cap;
	return 0;
}

void
psb_text_append(struct psb_text *t, const char *p, size_t len)
{
	if (psb_text_room(t, len) != 0)
		return;
	memcpy(t->s + t->len, p, len);
	t->len += len;
	t->s[t->len] = '\0';
}

void
psb_text_puts(struct psb_text *t, const char *p)
{
	psb_text_append(t, p, strlen(p));
}

void
psb_text_printf(struct psb_text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->s != NULL ? t->s + t->len : NULL, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->oom = 1;
			return;
		}
		if (t->len + (size_t)n < t->cap) {
			t->len += (size_t)n;
			return;
		}
		if (psb_text_room(t, (size_t)n) != 0)
			return;
	}
}

size_t
psb_text_fmt_int(char *buf, long long v)
{
	unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
	char tmp[PSB_TEXT_INT_MAX], *p = tmp + sizeof(tmp);
	size_t n;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (v < 0)
		*--p = '-';
	n = (size_t)(tmp + sizeof(tmp) - p);
	memcpy(buf, p, n);
	return n;
}

void
psb_text_i64(struct psb_text *t, long long v)
{
	char buf[PSB_TEXT_INT_MAX];

	psb_text_append(t, buf, psb_text_fmt_int(buf, v));
}

/* A JSON string: jansson holds valid UTF-8, so only quotes, backslashes and controls change. */
static void
json_str(struct psb_text *t, const char *s, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i, run = 0;
	char esc[7];
	unsigned char c;

	psb_text_append(t, "\"", 1);
	for (i = 0; i < len; i++) {
		c = (unsigned char)s[i];
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		psb_text_append(t, s + run, i - run);
		run = i + 1;
		esc[0] = '\\';
		switch (c) {
		case '"': case '\\': esc[1] = (char)c; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		default:
			memcpy(esc + 1, "u00", 3);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			psb_text_append(t, esc, 6);
			continue;
		}
		psb_text_append(t, esc, 2);
	}
	psb_text_append(t, s + run, len - run);
	psb_text_append(t, "\"", 1);
}

/*
 * As jansson writes a real: 17 significant digits, ".0" where that would read as an
 * integer, an exponent without '+' or leading zeros (1e20, 1e-5).
 */
static void
json_real_text(struct psb_text *t, double d)
{
	char buf[48], *e, *digits, *end;
	int n = snprintf(buf, sizeof(buf) - 3, "%.17g", d);

	if (n < 0 || (size_t)n >= sizeof(buf) - 3)
		return;
	if (strchr(buf, '.') == NULL && strchr(buf, 'e') == NULL) {
		memcpy(buf + n, ".0", 3);
		n += 2;
	}
	e = strchr(buf, 'e');
	if (e != NULL) {
		digits = e + 1;
		end = digits + 1;
		if (*digits == '-')
			digits++;
		while (*end == '0')
			end++;
		if (end != digits) {
			memmove(digits, end, strlen(end) + 1);
			n = (int)strlen(buf);
		}
	}
	psb_text_append(t, buf, (size_t)n);
}

void
psb_text_json(struct psb_text *t, const json_t *v)
{
	const char *key;
	json_t *x;
	size_t i;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		psb_text_append(t, "{", 1);
		i = 0;
		json_object_foreach((json_t *)v, key, x) {
			if (i++ != 0)
				psb_text_append(t, ",", 1);
			json_str(t, key, strlen(key));
			psb_text_append(t, ":", 1);
			psb_text_json(t, x);
		}
		psb_text_append(t, "}", 1);
		break;
	case JSON_ARRAY:
		psb_text_append(t, "[", 1);
		json_array_foreach(v, i, x) {
			if (i != 0)
				psb_text_append(t, ",", 1);
			psb_text_json(t, x);
		}
		psb_text_append(t, "]", 1);
		break;
	case JSON_STRING:
		json_str(t, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER:
		psb_text_i64(t, json_integer_value(v));
		break;
	case JSON_REAL:
		json_real_text(t, json_real_value(v));
		break;
	case JSON_TRUE:
		psb_text_append(t, "true", 4);
		break;
	case JSON_FALSE:
		psb_text_append(t, "false", 5);
		break;
	default:
		psb_text_append(t, "null", 4);
		break;
	}
}

void
psb_emit_text(struct psb_emit *e, struct psb_text *t)
{
	memset(e, 0, sizeof(*e));
	e->t = t;
}

void
psb_emit_tree(struct psb_emit *e)
{
	memset(e, 0, sizeof(*e));
}

json_t *
psb_emit_done(struct psb_emit *e)
{
	json_t *root = e->root;

	while (e->depth > 0)
		psb_emit_close(e);
	e->root = NULL;
	if (e->oom || e->t != NULL) {
		json_decref(root);
		return NULL;
	}
	return root;
}

/* Text: the separator and key of an entry of the innermost object. */
static void
emit_key(struct psb_emit *e, const char *key)
{
	if (e->count[e->depth - 1]++ != 0)
		psb_text_append(e->t, ",", 1);
	json_str(e->t, key, strlen(key));
	psb_text_append(e->t, ":", 1);
}

/* Where an entry can go: inside an object, not beyond the deepest level. */
static int
emit_ok(struct psb_emit *e, const char *key)
{
	if (e->drop != 0)
		return 0;
	if (e->depth == 0 || key == NULL) {
		e->oom = 1;
		return 0;
	}
	return 1;
}

void
psb_emit_open(struct psb_emit *e, const char *key)
{
	json_t *o;

	if (e->drop != 0 || e->depth >= PSB_EMIT_DEPTH || (e->depth > 0 && key == NULL) ||
	    (e->depth == 0 && (key != NULL || e->root != NULL || e->count[0] != 0))) {
		/* refused: it and all it holds are dropped, and its close still matches */
		if (e->drop == 0) {
			e->oom = 1;
			e->drop = e->depth + 1;
		}
		e->depth++;
		return;
	}
	if (e->t != NULL) {
		if (e->depth > 0)
			emit_key(e, key);
		else
			e->count[0] = 1;	/* the document: one */
		psb_text_append(e->t, "{", 1);
		e->count[e->depth++] = 0;
		return;
	}
	o = json_object();
	if (o == NULL)
		e->oom = 1;
	if (e->depth == 0)
		e->root = o;
	else if (o != NULL && json_object_set_new(e->stack[e->depth - 1], key, o) != 0)
		o = NULL;	/* freed by jansson; so is what would go into it */
	e->stack[e->depth++] = o;
}

void
psb_emit_close(struct psb_emit *e)
{
	if (e->depth == 0) {
		e->oom = 1;
		return;
	}
	if (e->drop != 0) {
		if (e->depth-- == e->drop)
			e->drop = 0;
		return;
	}
	e->depth--;
	if (e->t != NULL)
		psb_text_append(e->t, "}", 1);
}

/* Tree: v (taken) as key of the innermost open object; NULL v leaves the key out. */
static void
emit_set(struct psb_emit *e, const char *key, json_t *v)
{
	if (v != NULL && json_object_set_new(e->stack[e->depth - 1], key, v) != 0 &&
	    e->stack[e->depth - 1] != NULL)
		e->oom = 1;
}

void
psb_emit_int(struct psb_emit *e, const char *key, json_int_t v)
{
	if (!emit_ok(e, key))
		return;
	if (e->t == NULL) {
		emit_set(e, key, json_integer(v));
		return;
	}
	emit_key(e, key);
	psb_text_i64(e->t, v);
}

void
psb_emit_real(struct psb_emit *e, const char *key, double v)
{
	if (!isfinite(v) || !emit_ok(e, key))
		return;
	if (e->t == NULL) {
		emit_set(e, key, json_real(v));
		return;
	}
	emit_key(e, key);
	json_real_text(e->t, v);
}

void
psb_emit_bool(struct psb_emit *e, const char *key, int v)
{
	if (!emit_ok(e, key))
		return;
	if (e->t == NULL) {
		emit_set(e, key, json_boolean(v));
		return;
	}
	emit_key(e, key);
	psb_text_puts(e->t, v ? "true" : "false");
}

void
psb_emit_str(struct psb_emit *e, const char *key, const char *v)
{
	/* jansson takes UTF-8 only: the text leaves out what the tree would */
	psb_emit_json(e, key, v != NULL ? json_string(v) : NULL);
}

void
psb_emit_json(struct psb_emit *e, const char *key, json_t *v)
{
	if (v == NULL)
		return;
	if (!emit_ok(e, key)) {
		json_decref(v);
		return;
	}
	if (e->t == NULL) {
		emit_set(e, key, v);
		return;
	}
	emit_key(e, key);
	psb_text_json(e->t, v);
	json_decref(v);
}
