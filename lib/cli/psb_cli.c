/* Command-line helpers shared by psb's programs: errors that name the option, strict numbers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <jansson.h>

#include "psb_cli.h"
#include "psb_conf.h"
#include "psb_proto.h"

static const char *prog = "psb";

void
psb_cli_prog(const char *name)
{
	prog = name;
}

void
psb_cli_heap_keep(void)
{
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	mallopt(M_MMAP_THRESHOLD, 32 << 20);	/* glibc's largest: blocks above come by mmap */
}

/* "PROG: message" on stderr, with where help is when hint, and exit status 2 */
static void __attribute__((noreturn))
die_v(bool hint, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	if (hint)
		fprintf(stderr, "; try '%s --help'", prog);
	fprintf(stderr, "\n");
	exit(2);
}

void
psb_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	die_v(false, fmt, ap);
}

void
psb_cli_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	die_v(true, fmt, ap);
}

/* psb_version.c, generated at each build */
extern const char psb_cli_version_str[], psb_cli_revision_str[];

const char *
psb_cli_version(void)
{
	return psb_cli_version_str;
}

const char *
psb_cli_revision(void)
{
	return psb_cli_revision_str;
}

const char *
psb_cli_version_line(char *buf, size_t len)
{
	const char *rev = psb_cli_revision_str;
	bool known = strcmp(rev, "unknown") != 0;

	/* the commit as git abbreviates it for people; results files hold all of it */
	snprintf(buf, len, "%s %s (git %.*s%s)", prog, psb_cli_version_str, known ? 12 : 7, rev,
		 strstr(rev, "-dirty") != NULL ? ", dirty" : "");
	return buf;
}

void
psb_cli_version_exit(void)
{
	char line[160];

	printf("%s\n", psb_cli_version_line(line, sizeof(line)));
	exit(0);
}

json_t *
psb_cli_json_stamp(json_t *o)
{
	if (o != NULL && json_is_object(o)) {
		json_object_set_new(o, "psb_version", json_string(psb_cli_version_str));
		json_object_set_new(o, "git_revision", json_string(psb_cli_revision_str));
	}
	return o;
}

/* How many of longopts' names begin with the n bytes of name; *exact: one is all of it. */
static int
long_matches(const struct option *longopts, const char *name, size_t n,
		const struct option **exact)
{
	int count = 0;

	*exact = NULL;
	for (; longopts != NULL && longopts->name != NULL; longopts++) {
		if (strncmp(longopts->name, name, n) != 0)
			continue;
		count++;
		if (longopts->name[n] == '\0')
			*exact = longopts;
	}
	return count;
}

int
psb_cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
		int *idx)
{
	const struct option *exact;
	const char *arg, *eq;
	char so[128];
	size_t n;
	int c, m;

	/* ':' first: a missing argument comes back as ':', told apart from an unknown option */
	if ((size_t)snprintf(so, sizeof(so), ":%s", shortopts) >= sizeof(so))
		psb_die("internal: too many short options");
	opterr = 0;
	c = getopt_long(argc, argv, so, longopts, idx);
	if (c == PSB_CLI_OPT_VERSION)
		psb_cli_version_exit();
	if (c != '?' && c != ':')
		return c;
	arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
	if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
		if (c == ':')
			psb_cli_usage_error("option requires an argument -- '%c'", optopt);
		psb_cli_usage_error("invalid option -- '%c'", optopt);
	}
	eq = strchr(arg + 2, '=');
	n = eq != NULL ? (size_t)(eq - arg - 2) : strlen(arg + 2);
	if (c == ':')
		psb_cli_usage_error("option '--%.*s' requires an argument", (int)n, arg + 2);
	m = long_matches(longopts, arg + 2, n, &exact);
	if (m == 0)
		psb_cli_usage_error("unrecognized option '%s'", arg);
	if (exact == NULL && m > 1)
		psb_cli_usage_error("option '--%.*s' is ambiguous", (int)n, arg + 2);
	psb_cli_usage_error("option '--%.*s' doesn't allow an argument", (int)n, arg + 2);
}

int
psb_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* Dies unless ok, naming the option, what it wants and what it got. */
static void
cli_expect(bool ok, const char *opt, const char *what, const char *v)
{
	if (!ok)
		psb_die("%s: expected %s, got '%s'", opt, what, v);
}

uint64_t
psb_cli_u64(const char *opt, const char *v, uint64_t lo, uint64_t hi)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(v, &end, 0);
	if (errno != 0 || end == v || *end != '\0' || v[0] == '-' || x < lo || x > hi)
		psb_die("%s: expected an integer in [%llu, %llu], got '%s'", opt,
			(unsigned long long)lo, (unsigned long long)hi, v);
	return x;
}

uint64_t
psb_cli_seconds_ns(const char *opt, const char *v)
{
	char *end;
	double x = strtod(v, &end);

	cli_expect(end != v && *end == '\0' && x >= 0 && x <= 1e7, opt, "seconds >= 0", v);
	return (uint64_t)(x * 1e9);
}

uint64_t
psb_cli_seconds_in(const char *opt, const char *v, uint64_t lo_ns, uint64_t hi_ns)
{
	uint64_t ns = psb_cli_seconds_ns(opt, v);

	if (ns < lo_ns || ns > hi_ns)
		psb_die("%s: expected %g to %g seconds, got '%s'", opt, lo_ns / 1e9, hi_ns / 1e9, v);
	return ns;
}

uint32_t
psb_cli_ip(const char *opt, const char *v)
{
	uint32_t ip;

	cli_expect(psb_parse_ip(v, &ip) == 0, opt, "an IPv4 address like 198.18.0.1", v);
	return ip;
}

void
psb_cli_host_port(const char *opt, const char *v, uint32_t *ip, uint16_t *port)
{
	const char *colon = strchr(v, ':');
	char host[64];

	if (colon == NULL) {
		*ip = psb_cli_ip(opt, v);
		return;
	}
	cli_expect((size_t)(colon - v) < sizeof(host), opt, "IP[:PORT]", v);
	memcpy(host, v, (size_t)(colon - v));
	host[colon - v] = '\0';
	*ip = psb_cli_ip(opt, host);
	*port = (uint16_t)psb_cli_u64(opt, colon + 1, 1, 65535);
}

void
psb_cli_ip_port(const char *opt, const char *v, uint32_t *ip, uint16_t *port)
{
	cli_expect(strchr(v, ':') != NULL, opt, "IP:PORT", v);
	psb_cli_host_port(opt, v, ip, port);
}

int
psb_cli_json_save(json_t *o, const char *path)
{
	char tmp[4200];
	int rc = 0;

	if (psb_cli_json_stamp(o) == NULL)
		return -ENOMEM;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= sizeof(tmp))
		rc = -ENAMETOOLONG;
	else if (json_dump_file(o, tmp, JSON_INDENT(2) | JSON_SORT_KEYS) != 0)
		rc = -EIO;
	else if (rename(tmp, path) != 0)
		rc = -errno;
	if (rc != 0 && rc != -ENAMETOOLONG)
		unlink(tmp);
	json_decref(o);
	return rc;
}

void
psb_cli_write_json(struct json_t *o, const char *path)
{
	int rc = psb_cli_json_save(o, path);

	if (rc == -ENOMEM)
		psb_die("cannot build the results for %s (out of memory)", path);
	if (rc != 0)
		psb_die("cannot write %s: %s", path, strerror(-rc));
}

static const char *const log_levels[PSB_LOG_LEVEL_MAX + 1] = {
	"?", "emergency", "alert", "critical", "error", "warning", "notice", "info", "debug",
};

int
psb_cli_log_level(const char *v)
{
	int i;

	for (i = 1; i <= PSB_LOG_LEVEL_MAX; i++)
		if (strcmp(v, log_levels[i]) == 0)
			return i;
	if (v[0] >= '1' && v[0] <= '0' + PSB_LOG_LEVEL_MAX && v[1] == '\0')
		return v[0] - '0';
	return -1;
}

const char *
psb_cli_log_level_name(int level)
{
	return level >= 1 && level <= PSB_LOG_LEVEL_MAX ? log_levels[level] : log_levels[0];
}

int
psb_cli_log_spec(const char *v, char *type, size_t typelen, int *level, char *err,
		size_t errlen)
{
	const char *colon = strchr(v, ':');
	const char *lv = colon != NULL ? colon + 1 : v;
	size_t n = colon != NULL ? (size_t)(colon - v) : 0;

	*level = psb_cli_log_level(lv);
	if (*level < 0) {
		snprintf(err, errlen, "expected TYPE:LEVEL or LEVEL, LEVEL one of emergency, "
			 "alert, critical, error, warning, notice, info, debug or 1-8, got '%s'", v);
		return -EINVAL;
	}
	if (colon == NULL) {
		snprintf(type, typelen, "psb.*");
		return 0;
	}
	/* the EAL reads TYPE,LEVEL as a regular expression: psb takes globs only */
	if (n == 0 || n >= typelen || memchr(v, ',', n) != NULL) {
		snprintf(err, errlen, "expected TYPE:LEVEL with TYPE a log type or a glob like "
			 "psb.*, got '%s'", v);
		return -EINVAL;
	}
	memcpy(type, v, n);
	type[n] = '\0';
	return 0;
}

uint64_t
psb_cli_size(const char *opt, const char *v)
{
	uint64_t b;

	cli_expect(psb_conf_parse_size(v, &b) == 0, opt, "a size like 64MiB or 1.5GB", v);
	return b;
}

uint64_t
psb_cli_rate(const char *opt, const char *v)
{
	uint64_t bps;

	cli_expect(psb_conf_parse_rate(v, &bps) == 0, opt, "a rate like 2Gbps or 100Mbps", v);
	return bps;
}

const char *
psb_cli_fmt_size(uint64_t bytes, char *buf, unsigned int len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	unsigned int u = 0;

	while (v >= 1024 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		v /= 1024;
		u++;
	}
	if (u == 0 || v >= 100 || v == (double)(uint64_t)v)
		snprintf(buf, len, "%.0f %s", v, unit[u]);
	else
		snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}

int
psb_cli_name_check(const char *v, size_t max, char *err, size_t errlen)
{
	const char *p;
	size_t n = strlen(v);

	for (p = v; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-'))
			break;
	if (n == 0 || n > max || *p != '\0' || v[0] == '.' || v[0] == '-') {
		snprintf(err, errlen, "expected a name of letters, digits, '_', '-' or '.' (not "
			 "first: '.' or '-'), at most %zu characters, got \"%.*s\"", max, 80, v);
		return -EINVAL;
	}
	return 0;
}

void
psb_cli_runtime_base(char *out, size_t len)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if (getuid() == 0)
		snprintf(out, len, "/var/run/dpdk");
	else if (xdg != NULL && xdg[0] != '\0')
		snprintf(out, len, "%s/dpdk", xdg);
	else
		snprintf(out, len, "/tmp/dpdk");
}

int
psb_cli_sock_probe(const char *path)
{
	struct sockaddr_un sa;
	int fd, rc = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 && errno != EAGAIN)
		rc = -errno;
	close(fd);
	return rc;
}

static bool
name_listed(const char *name, const char *const *names)
{
	size_t n;

	for (; names != NULL && *names != NULL; names++) {
		n = strlen(*names);
		if (n != 0 && (*names)[n - 1] == '*' ? strncmp(name, *names, n - 1) == 0 :
		    strcmp(name, *names) == 0)
			return true;
	}
	return false;
}

int
psb_rmdir_flat(const char *dir, const char *const *names, bool rmdir_too, char *left,
		size_t leftlen)
{
	struct dirent *de;
	int fd, rc = 0;
	DIR *d;

	if (left != NULL && leftlen != 0)
		left[0] = '\0';
	if (dir == NULL || *dir == '\0')
		return 0;
	/* O_NOFOLLOW: a link put where the directory was must not lead psb elsewhere */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : errno == ENOTDIR ? -ELOOP : -errno;
	d = fdopendir(fd);
	if (d == NULL) {
		rc = -errno;
		close(fd);
		return rc;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		/* unlinkat removes a link itself, never what it points to; it refuses directories */
		if (name_listed(de->d_name, names) && unlinkat(fd, de->d_name, 0) == 0)
			continue;
		if (rc == 0 && left != NULL && leftlen != 0)
			snprintf(left, leftlen, "%s", de->d_name);
		rc = -ENOTEMPTY;
	}
	closedir(d);
	if (rc == 0 && rmdir_too && rmdir(dir) != 0 && errno != ENOENT)
		rc = -errno;
	return rc;
}
