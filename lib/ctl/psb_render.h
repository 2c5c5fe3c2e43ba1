/*
 * What a human reads of psb's control replies: one text for psbctl and the console, so the
 * same reply reads the same through either. No DPDK.
 *
 * The format, the same everywhere:
 * - a value: strings bare ("" when empty), integers in full, reals to at most 10
 *   significant digits (%.10g: 0.1 + 0.2 reads 0.3, 1234567.891 reads 1234567.891, 2.0
 *   reads 2), true, false, null; containers inline as compact JSON ({} and [] when empty);
 * - a nested object or array: one "path value" line per leaf, the whole dotted path from
 *   the top of the reply (roles.rx0.drops.ethertype 0, node.lcores.0 1), so that grep and
 *   awk find a counter by its name;
 * - rows (an array of objects, like list's experiments): a table with a column per key,
 *   headed by the key, numbers right-aligned, "-" where a row has no such key;
 * - an error: one line "WHO: CODE: MESSAGE" (WHO: psbctl on its stderr, "error" in the
 *   console);
 * - the commands' own summaries (status, stop, start, set, ...) as the functions below say.
 */
#ifndef PSB_RENDER_H
#define PSB_RENDER_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

/* Significant digits of a real, and the flag that makes jansson write them so. */
#define PSB_RENDER_REAL_DIGITS	10
#define PSB_RENDER_JSON_FLAGS	(JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(10))

/* One value, as above (no newline). */
void psb_render_value(FILE *out, const json_t *v);

/*
 * One "path value" line per leaf of v, the paths under prefix ("" at the top; a leaf at
 * the top itself is written as "prefix value", or ". value" without a prefix).
 */
void psb_render_flat(FILE *out, const char *prefix, const json_t *v);

/*
 * rows (an array of objects) as a table: columns in the order their keys first appear,
 * cells two spaces apart, numbers right-aligned, other cells left-aligned, "-" for a
 * missing one. Nothing when there are no rows (no keys to head columns with).
 */
void psb_render_table(FILE *out, const json_t *rows);

/*
 * An error reply as one line, "WHO: CODE: MESSAGE" (who NULL or "": "CODE: MESSAGE").
 * 1 if reply is an error reply (it has "error"), else 0 and nothing is written.
 */
int psb_render_error(FILE *out, const char *who, const json_t *reply);

/*
 * The experiment of a status or stop reply: a headline ('experiment 2 "long" (pushpull):
 * running for 3.512 s', '... : done after 9.004 s'), its live figures, the results
 * directory and its error; "no experiment has run yet" when none has.
 */
void psb_render_experiment(FILE *out, const json_t *exp);

/* One line on how the experiment of a status reply is doing (status --watch). */
void psb_render_progress(char *buf, size_t len, const json_t *exp);

/*
 * The reply to the request req for a human, on out: req's "cmd" chooses the summary
 * (start, stop, status, counters, reset_state, list, set, load, clear_port_stats, quit,
 * help; any other command: its members as "path value" lines), and "filter" (counters),
 * "param" and "value" (set) complete it. An error reply is written on err instead, as
 * psb_render_error(err, who, reply) does. 0, or 1 for an error reply.
 */
int psb_render_reply(FILE *out, FILE *err, const char *who, const json_t *req,
		const json_t *reply);

#endif /* PSB_RENDER_H */
