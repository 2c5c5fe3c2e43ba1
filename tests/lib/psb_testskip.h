/*
 * Skips that count. A test that cannot check something on this machine says what it left
 * unchecked and why, and the program exits 77 (meson's SKIP) when something was skipped
 * and nothing failed, instead of 0: a skip is never a pass (scripts/test.sh names it).
 * cmocka's own skip() returns 0 from the program, so cmocka tests end a case with tf_skip.
 */
#ifndef PSB_TESTSKIP_H
#define PSB_TESTSKIP_H

#define TF_SKIP_EXIT	77

/* Record and print "skipped: <why>"; the caller goes on with what it can check. */
void tf_skipped(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The same, then the cmocka case ends here (as cmocka's skip()). */
#define tf_skip(...) do { \
	tf_skipped(__VA_ARGS__); \
	skip(); \
} while (0)

/* How many were recorded. */
unsigned int tf_skips(void);

/*
 * What main returns, given its failures (cmocka_run_group_tests' count, or 0/1): 1 if any,
 * else TF_SKIP_EXIT if anything was skipped (each named again), else 0.
 */
int tf_exit_status(int failed);

#endif /* PSB_TESTSKIP_H */
