/* Command-line helpers shared by psb's programs: errors that name the option, strict numbers. */
#ifndef PSB_CLI_H
#define PSB_CLI_H

#include <stdint.h>

/* Name printed in front of every error (default "psb"). */
void psb_cli_prog(const char *name);

/* Print "PROG: message" to stderr and exit with status 2. */
void psb_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* An integer in [lo, hi] (decimal, 0x hex or 0 octal), or die naming opt. */
uint64_t psb_cli_u64(const char *opt, const char *v, uint64_t lo, uint64_t hi);

/* Seconds >= 0 (fractions allowed), as nanoseconds, or die naming opt. */
uint64_t psb_cli_seconds_ns(const char *opt, const char *v);

/* A size ("64MiB", "1.5GB", 4096), or die naming opt. */
uint64_t psb_cli_size(const char *opt, const char *v);

/* bytes for people: "512 B", "64 MiB", "2.9 GiB". Returns buf. */
const char *psb_cli_fmt_size(uint64_t bytes, char *buf, unsigned int len);

/* An IPv4 address in host order, or die naming opt. */
uint32_t psb_cli_ip(const char *opt, const char *v);

/* "IP[:PORT]": the port is left alone when absent. Dies naming opt. */
void psb_cli_host_port(const char *opt, const char *v, uint32_t *ip, uint16_t *port);

/* Remove a directory and the files directly in it (no subdirectories). */
void psb_rmdir_flat(const char *dir);

#endif /* PSB_CLI_H */
