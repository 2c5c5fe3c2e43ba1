/* Command-line helpers shared by psb's programs: errors that name the option, strict numbers. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
psb_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(2);
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

	if (end == v || *end != '\0' || !(x >= 0) || x > 1e7)
		psb_die("%s: expected seconds >= 0, got '%s'", opt, v);
	return (uint64_t)(x * 1e9);
}

uint32_t
psb_cli_ip(const char *opt, const char *v)
{
	uint32_t ip;

	if (psb_parse_ip(v, &ip) != 0)
		psb_die("%s: expected an IPv4 address like 198.18.0.1, got '%s'", opt, v);
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
	if ((size_t)(colon - v) >= sizeof(host))
		psb_die("%s: expected IP[:PORT], got '%s'", opt, v);
	memcpy(host, v, (size_t)(colon - v));
	host[colon - v] = '\0';
	*ip = psb_cli_ip(opt, host);
	*port = (uint16_t)psb_cli_u64(opt, colon + 1, 1, 65535);
}

uint64_t
psb_cli_size(const char *opt, const char *v)
{
	uint64_t b;

	if (psb_conf_parse_size(v, &b) != 0)
		psb_die("%s: expected a size like 64MiB or 1.5GB, got '%s'", opt, v);
	return b;
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

void
psb_rmdir_flat(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;

	if (dir == NULL || *dir == '\0' || (d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < sizeof(path))
			unlink(path);
	}
	closedir(d);
	rmdir(dir);
}
