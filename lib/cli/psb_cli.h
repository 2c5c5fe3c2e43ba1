/* Command-line helpers shared by psb's programs: errors that name the option, strict numbers. */
#ifndef PSB_CLI_H
#define PSB_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Name printed in front of every error (default "psb"). */
void psb_cli_prog(const char *name);

/*
 * A server keeps the heap it freed: glibc would hand the top of the heap back to the kernel
 * as the blocks of a staged push are freed, and take page faults to get it again for the
 * next push. What the store's budget allows stays with the process instead.
 */
void psb_cli_heap_keep(void);

/* Print "PROG: message" to stderr and exit with status 2. */
void psb_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/*
 * A bad command line: "PROG: message; try 'PROG --help'" on one line (the error stays on
 * the screen, not scrolled away by the whole usage), exit status 2.
 */
void psb_cli_usage_error(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/*
 * psb's version ("0.1.0", meson's project version) and the git revision the program was
 * built from: 40 hex digits, "-dirty" after them when tracked files differed from that
 * commit, or "unknown" when it was built outside psb's git checkout (a tarball).
 */
const char *psb_cli_version(void);
const char *psb_cli_revision(void);

/* The --version line: "PROG 0.1.0 (git 1a2b3c4d5e6f, dirty)". Returns buf. */
const char *psb_cli_version_line(char *buf, size_t len);

/* --version: that line on stdout, exit 0. */
void psb_cli_version_exit(void) __attribute__((noreturn));

/*
 * Where a results file says what wrote it: sets "psb_version" and "git_revision" (as
 * above) in the object o. Returns o; NULL stays NULL (a caller's out of memory).
 */
struct json_t;
struct json_t *psb_cli_json_stamp(struct json_t *o);

/*
 * getopt_long for psb's programs, taking the same arguments: an unknown option, a missing
 * argument or an argument to a flag ends the program with psb_cli_usage_error instead of
 * returning '?'; PSB_CLI_OPT_VERSION, in longopts as PSB_CLI_VERSION_OPTION, prints the
 * --version line to stdout and exits 0.
 */
#define PSB_CLI_OPT_VERSION	0x7656		/* no character: getopt's long-only value */
#define PSB_CLI_VERSION_OPTION	{ "version", no_argument, NULL, PSB_CLI_OPT_VERSION }
int psb_cli_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
		int *idx);

/* Writes the message into err (when there is one); returns -EINVAL for callers to return. */
int psb_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* An integer in [lo, hi] (decimal, 0x hex or 0 octal), or die naming opt. */
uint64_t psb_cli_u64(const char *opt, const char *v, uint64_t lo, uint64_t hi);

/* Seconds >= 0 (fractions allowed), as nanoseconds, or die naming opt. */
uint64_t psb_cli_seconds_ns(const char *opt, const char *v);

/* Seconds from lo_ns to hi_ns, as nanoseconds, or die naming opt and the range. */
uint64_t psb_cli_seconds_in(const char *opt, const char *v, uint64_t lo_ns, uint64_t hi_ns);

/* A size ("64MiB", "1.5GB", 4096), or die naming opt. */
uint64_t psb_cli_size(const char *opt, const char *v);

/* A rate in bits/s ("2Gbps", "100Mbps", 1000000), or die naming opt. */
uint64_t psb_cli_rate(const char *opt, const char *v);

/* bytes for people: "512 B", "64 MiB", "2.9 GiB". Returns buf. */
const char *psb_cli_fmt_size(uint64_t bytes, char *buf, unsigned int len);

/* An IPv4 address in host order, or die naming opt. */
uint32_t psb_cli_ip(const char *opt, const char *v);

/* "IP[:PORT]": the port is left alone when absent. Dies naming opt. */
void psb_cli_host_port(const char *opt, const char *v, uint32_t *ip, uint16_t *port);

/* "IP:PORT", the port required (1 to 65535). Dies naming opt. */
void psb_cli_ip_port(const char *opt, const char *v, uint32_t *ip, uint16_t *port);

/*
 * A program's JSON results: o (its reference taken; NULL: out of memory), stamped with
 * psb's version and revision (psb_cli_json_stamp), written to path whole or not at all (a
 * temporary file beside it, renamed), indented, keys sorted. 0, or -errno (-ENOMEM: o was
 * NULL).
 */
int psb_cli_json_save(struct json_t *o, const char *path);

/* The same, dying naming path when it cannot. */
void psb_cli_write_json(struct json_t *o, const char *path);

/*
 * Longest DPDK file prefix psb accepts: the EAL binds sockets below
 * <runtime dir>/<prefix>/ (mp_socket_<pid>_<n>), and a socket path holds 107 bytes.
 */
#define PSB_PREFIX_MAX	40

/*
 * A name that becomes one path component (a DPDK file prefix, a results directory):
 * letters, digits, '_', '-' and '.', not starting with '.' or '-', 1 to max bytes. 0, or
 * -EINVAL with what is wrong in err (the caller puts the option or key in front).
 */
int psb_cli_name_check(const char *v, size_t max, char *err, size_t errlen);

/*
 * Log levels numbered as DPDK's rte_log numbers them: 1 emergency, 2 alert, 3 critical,
 * 4 error, 5 warning, 6 notice, 7 info, 8 debug. psb_cli_log_level: the level a name or a
 * number 1-8 stands for, or -1. psb_cli_log_level_name: the name of a level ("?" for none).
 */
#define PSB_LOG_LEVEL_MAX	8
int psb_cli_log_level(const char *v);
const char *psb_cli_log_level_name(int level);

/*
 * A --log-level value: TYPE:LEVEL, TYPE the name of a log type or a glob of them (psb.rx,
 * psb.*, pmd.net.memif), or LEVEL alone, which is psb.*:LEVEL. 0 with the type into type
 * and the level into *level, or -EINVAL with what is wrong in err.
 */
int psb_cli_log_spec(const char *v, char *type, size_t typelen, int *level, char *err,
		size_t errlen);

/* Where DPDK keeps its runtime directories for this user (the EAL's rule). */
void psb_cli_runtime_base(char *out, size_t len);

/*
 * 0 when something listens on the stream socket path, else -errno of connect (never
 * blocks). It connects: not for sockets whose servers mind a client that says nothing.
 */
int psb_cli_sock_probe(const char *path);

/*
 * Remove from dir the entries matching names -- "config" exactly, "fbarray_*" by prefix --
 * and nothing else, never following a symbolic link (dir itself included), then dir itself
 * when rmdir_too and it is left empty. psb removes only files it knows it made: a runtime
 * directory's EAL files, its own temporary results. 0 when nothing else was there (or dir
 * did not exist); -ENOTEMPTY with the first other entry's name in left (may be NULL); other
 * -errno when dir cannot be read (-ELOOP: it is a symbolic link).
 */
int psb_rmdir_flat(const char *dir, const char *const *names, bool rmdir_too, char *left,
		size_t leftlen);

#endif /* PSB_CLI_H */
