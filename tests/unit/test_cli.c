/*
 * Unit tests of lib/cli: names that become paths, removing only the files psb made,
 * --log-level values, the version and revision, the one line of a bad command line, and
 * results files that say what wrote them.
 */
#include <errno.h>
#include <getopt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

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

static void
test_version(void **state)
{
	const char *rev = psb_cli_revision();
	char line[160], want[160];
	size_t hex = strspn(rev, "0123456789abcdef");

	(void)state;
	assert_true(psb_cli_version()[0] >= '0' && psb_cli_version()[0] <= '9');
	/* 40 hex digits, "-dirty" or nothing after them; or built outside psb's checkout */
	assert_true(strcmp(rev, "unknown") == 0 ||
		    (hex == 40 && (rev[40] == '\0' || strcmp(rev + 40, "-dirty") == 0)));
	psb_cli_prog("psb-x");
	if (strcmp(rev, "unknown") == 0)
		snprintf(want, sizeof(want), "psb-x %s (git unknown)", psb_cli_version());
	else
		snprintf(want, sizeof(want), "psb-x %s (git %.12s%s)", psb_cli_version(), rev,
			 rev[40] != '\0' ? ", dirty" : "");
	assert_string_equal(psb_cli_version_line(line, sizeof(line)), want);
	psb_cli_prog("psb");
}

/*
 * psb_cli_getopt over argv in a child: its exit status, and what it wrote to stdout and
 * stderr (out, err: 512 bytes each).
 */
static int
getopt_child(char **argv, int argc, char *out, char *err)
{
	static const struct option lo[] = {
		{ "sync", no_argument, NULL, 's' }, { "sys", no_argument, NULL, 'S' },
		{ "len", required_argument, NULL, 'l' }, PSB_CLI_VERSION_OPTION,
		{ NULL, 0, NULL, 0 },
	};
	int po[2], pe[2], st;
	ssize_t n;
	pid_t pid;

	assert_int_equal(pipe(po), 0);
	assert_int_equal(pipe(pe), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(po[1], STDOUT_FILENO);
		dup2(pe[1], STDERR_FILENO);
		optind = 1;
		while (psb_cli_getopt(argc, argv, "q", lo, NULL) != -1)
			;
		exit(0);
	}
	close(po[1]);
	close(pe[1]);
	n = read(po[0], out, 511);
	out[n > 0 ? n : 0] = '\0';
	n = read(pe[0], err, 511);
	err[n > 0 ? n : 0] = '\0';
	close(po[0]);
	close(pe[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void
test_getopt(void **state)
{
	static const struct {
		const char *arg, *err;
	} bad[] = {
		{ "--frob", "psb: unrecognized option '--frob'; try 'psb --help'\n" },
		{ "--frob=1", "psb: unrecognized option '--frob=1'; try 'psb --help'\n" },
		{ "--sy", "psb: option '--sy' is ambiguous; try 'psb --help'\n" },
		{ "--sync=1", "psb: option '--sync' doesn't allow an argument; try 'psb --help'\n" },
		{ "--len", "psb: option '--len' requires an argument; try 'psb --help'\n" },
		{ "-x", "psb: invalid option -- 'x'; try 'psb --help'\n" },
	};
	char out[512], err[512], line[160], *argv[3];
	size_t i;

	(void)state;
	argv[0] = (char *)"psb";
	argv[2] = NULL;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		argv[1] = (char *)bad[i].arg;
		assert_int_equal(getopt_child(argv, 2, out, err), 2);
		assert_string_equal(err, bad[i].err);
		assert_string_equal(out, "");
	}
	/* what it knows passes; --version (a prefix of it too) is the line, exit 0 */
	argv[1] = (char *)"--sync";
	assert_int_equal(getopt_child(argv, 2, out, err), 0);
	assert_string_equal(err, "");
	argv[1] = (char *)"--vers";
	assert_int_equal(getopt_child(argv, 2, out, err), 0);
	snprintf(line, sizeof(line), "%s\n", psb_cli_version_line(err, sizeof(err)));
	assert_string_equal(out, line);
}

static void
test_json_save(void **state)
{
	char dir[] = "/tmp/psbt-cli-XXXXXX", path[64];
	json_t *o;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/r.json", dir);
	assert_int_equal(psb_cli_json_save(json_pack("{s:i}", "x", 1), path), 0);
	o = json_load_file(path, 0, NULL);
	assert_non_null(o);
	assert_int_equal(json_integer_value(json_object_get(o, "x")), 1);
	assert_string_equal(json_string_value(json_object_get(o, "psb_version")),
			    psb_cli_version());
	assert_string_equal(json_string_value(json_object_get(o, "git_revision")),
			    psb_cli_revision());
	json_decref(o);
	/* a directory that is not there: the error, and no temporary file anywhere */
	snprintf(path, sizeof(path), "%s/no/r.json", dir);
	assert_int_equal(psb_cli_json_save(json_object(), path), -EIO);
	assert_int_equal(psb_cli_json_save(NULL, path), -ENOMEM);
	snprintf(path, sizeof(path), "%s/r.json", dir);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
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
		cmocka_unit_test(test_version),
		cmocka_unit_test(test_getopt),
		cmocka_unit_test(test_json_save),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
