/*
 * The skip rules of psb_testskip as a cmocka program meets them: test_skips.sh runs it each
 * way (its argument) and checks the exit. pass: 0; skip (a case ended by tf_skip) and note
 * (a case that says it left something out and goes on): 77; fail (a skip and a failure): 1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "psb_testskip.h"

static void
case_pass(void **state)
{
	(void)state;
	assert_int_equal(tf_skips(), 0);
}

static void
case_skip(void **state)
{
	(void)state;
	tf_skip("%s", "this machine cannot run the check");
	fail_msg("tf_skip did not end the case");
}

static void
case_note(void **state)
{
	(void)state;
	tf_skipped("%d of %d kernels are not tested", 1, 3);
	assert_int_equal(tf_skips(), 1);
}

static void
case_fail(void **state)
{
	(void)state;
	fail_msg("a failure beside a skip");
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest pass[] = { cmocka_unit_test(case_pass) };
	const struct CMUnitTest skip[] = { cmocka_unit_test(case_pass),
					   cmocka_unit_test(case_skip) };
	const struct CMUnitTest note[] = { cmocka_unit_test(case_pass),
					   cmocka_unit_test(case_note) };
	const struct CMUnitTest fail[] = { cmocka_unit_test(case_skip),
					   cmocka_unit_test(case_fail) };
	const char *how = argc == 2 ? argv[1] : "";

	if (strcmp(how, "pass") == 0)
		return tf_exit_status(cmocka_run_group_tests(pass, NULL, NULL));
	if (strcmp(how, "skip") == 0)
		return tf_exit_status(cmocka_run_group_tests(skip, NULL, NULL));
	if (strcmp(how, "note") == 0)
		return tf_exit_status(cmocka_run_group_tests(note, NULL, NULL));
	if (strcmp(how, "fail") == 0)
		return tf_exit_status(cmocka_run_group_tests(fail, NULL, NULL));
	fprintf(stderr, "usage: test_testskip pass|skip|note|fail\n");
	return 2;
}
