/*
 * Unit tests of lib/cli: names that become paths, removing only the files psb made, and
 * --log-level values.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "psb_cli.h"

static const char *const eal_like[] = { "config", "fbarray_*", "mp_socket", NULL };

static void
touch(const char *dir, const char *name)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);
}

static int
exists(const char *dir, const char *name)
{
	char p[512];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return lstat(p, &st) == 0;
}

static void
test_name_check(void **state)
{
	static const char *const good[] = { "psb-1234", "a", "x.y_z-9", "A.b" };
	static const char *const bad[] = {
		"", ".", "..", "../x", "a/b", "/abs", ".hidden", "-opt", "a b", "a,b", "a=b",
		"abcdefghijabcdefghijabcdefghijabcdefghijk",
	};
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(psb_cli_name_check(good[i], PSB_PREFIX_MAX, err, sizeof(err)), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (psb_cli_name_check(bad[i], PSB_PREFIX_MAX, err, sizeof(err)) != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);
		assert_non_null(strstr(err, "letters, digits"));
	}
	assert_int_equal(psb_cli_name_check("abcd", 3, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "at most 3"));
}

/* Listed files go, others stay and are named, the directory goes only when asked and empty. */
static void
test_rmdir_flat_only_listed(void **state)
{
	char dir[] = "/tmp/psb-test-cli-XXXXXX", left[64];

	(void)state;
	assert_non_null(mkdtemp(dir));
	touch(dir, "config");
	touch(dir, "fbarray_memzone");
	touch(dir, "mp_socket");
	touch(dir, "mp_socket_99_1");	/* not listed: exact name only */
	touch(dir, "user-notes.txt");
	assert_int_equal(psb_rmdir_flat(dir, eal_like, true, left, sizeof(left)), -ENOTEMPTY);
	assert_false(exists(dir, "config"));
	assert_false(exists(dir, "fbarray_memzone"));
	assert_false(exists(dir, "mp_socket"));
	assert_true(exists(dir, "mp_socket_99_1"));
	assert_true(exists(dir, "user-notes.txt"));
	assert_true(strcmp(left, "mp_socket_99_1") == 0 || strcmp(left, "user-notes.txt") == 0);
	assert_true(exists(dir, "."));

	/* without the foreign files: emptied, and removed only when asked to */
	snprintf(left, sizeof(left), "%s/user-notes.txt", dir);
	assert_int_equal(unlink(left), 0);
	snprintf(left, sizeof(left), "%s/mp_socket_99_1", dir);
	assert_int_equal(unlink(left), 0);
	touch(dir, "config");
	assert_int_equal(psb_rmdir_flat(dir, eal_like, false, NULL, 0), 0);
	assert_true(exists(dir, "."));
	assert_false(exists(dir, "config"));
	assert_int_equal(psb_rmdir_flat(dir, eal_like, true, NULL, 0), 0);
	assert_false(exists(dir, "."));
	/* gone already: nothing to do */
	assert_int_equal(psb_rmdir_flat(dir, eal_like, true, NULL, 0), 0);
}

/* A link where the directory was, or a link named like a listed file, leads nowhere. */
static void
test_rmdir_flat_links(void **state)
{
	char victim[] = "/tmp/psb-test-cli-v-XXXXXX", dir[] = "/tmp/psb-test-cli-d-XXXXXX";
	char link[64], p[128];

	(void)state;
	assert_non_null(mkdtemp(victim));
	assert_non_null(mkdtemp(dir));
	touch(victim, "config");
	touch(victim, "precious");
	snprintf(link, sizeof(link), "%s.link", dir);
	assert_int_equal(symlink(victim, link), 0);
	assert_int_equal(psb_rmdir_flat(link, eal_like, true, NULL, 0), -ELOOP);
	assert_true(exists(victim, "config"));
	assert_true(exists(victim, "precious"));
	assert_int_equal(unlink(link), 0);

	/* "config" in the directory is a link to the victim's file: the link goes, not the file */
	snprintf(p, sizeof(p), "%s/config", victim);
	snprintf(link, sizeof(link), "%s/config", dir);
	assert_int_equal(symlink(p, link), 0);
	assert_int_equal(psb_rmdir_flat(dir, eal_like, true, NULL, 0), 0);
	assert_false(exists(dir, "."));
	assert_true(exists(victim, "config"));

	/* a directory with a listed name is never removed */
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(p, sizeof(p), "%s/config", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(psb_rmdir_flat(dir, eal_like, true, link, sizeof(link)), -ENOTEMPTY);
	assert_string_equal(link, "config");
	assert_int_equal(rmdir(p), 0);
	assert_int_equal(rmdir(dir), 0);
	snprintf(p, sizeof(p), "rm -rf '%s'", victim);
	assert_int_equal(system(p), 0);
}

static void
test_log_level(void **state)
{
	(void)state;
	/* rte_log's numbers */
	assert_int_equal(psb_cli_log_level("emergency"), 1);
	assert_int_equal(psb_cli_log_level("error"), 4);
	assert_int_equal(psb_cli_log_level("warning"), 5);
	assert_int_equal(psb_cli_log_level("debug"), 8);
	assert_int_equal(psb_cli_log_level("7"), 7);
	assert_int_equal(psb_cli_log_level("0"), -1);
	assert_int_equal(psb_cli_log_level("9"), -1);
	assert_int_equal(psb_cli_log_level("78"), -1);
	assert_int_equal(psb_cli_log_level("Debug"), -1);
	assert_int_equal(psb_cli_log_level(""), -1);
	assert_string_equal(psb_cli_log_level_name(6), "notice");
	assert_string_equal(psb_cli_log_level_name(0), "?");
	assert_string_equal(psb_cli_log_level_name(9), "?");
}

static void
test_log_spec(void **state)
{
	char type[16], err[256];
	int level;

	(void)state;
	assert_int_equal(psb_cli_log_spec("psb.rx:debug", type, sizeof(type), &level, err,
		sizeof(err)), 0);
	assert_string_equal(type, "psb.rx");
	assert_int_equal(level, 8);
	/* a level alone is every psb type's */
	assert_int_equal(psb_cli_log_spec("warning", type, sizeof(type), &level, err,
		sizeof(err)), 0);
	assert_string_equal(type, "psb.*");
	assert_int_equal(level, 5);
	assert_int_equal(psb_cli_log_spec("pmd.*:3", type, sizeof(type), &level, err,
		sizeof(err)), 0);
	assert_string_equal(type, "pmd.*");
	assert_int_equal(level, 3);
	/* each refusal says what is wrong with what */
	assert_int_equal(psb_cli_log_spec("psb.rx:loud", type, sizeof(type), &level, err,
		sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "got 'psb.rx:loud'"));
	assert_non_null(strstr(err, "emergency"));
	assert_int_equal(psb_cli_log_spec(":debug", type, sizeof(type), &level, err,
		sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "TYPE a log type or a glob"));
	/* the EAL's regular expressions are not psb's */
	assert_int_equal(psb_cli_log_spec("psb,rx:debug", type, sizeof(type), &level, err,
		sizeof(err)), -EINVAL);
	assert_int_equal(psb_cli_log_spec("psb.rx:debug:x", type, sizeof(type), &level, err,
		sizeof(err)), -EINVAL);
	/* a type longer than the room for it */
	assert_int_equal(psb_cli_log_spec("psb.0123456789abcdef:info", type, sizeof(type), &level,
		err, sizeof(err)), -EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_check),
		cmocka_unit_test(test_rmdir_flat_only_listed),
		cmocka_unit_test(test_rmdir_flat_links),
		cmocka_unit_test(test_log_level),
		cmocka_unit_test(test_log_spec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
