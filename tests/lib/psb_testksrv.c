/* psb-ksrv for tests (psb_testksrv.h). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "psb_testksrv.h"

uint64_t
tk_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void
tk_sleep_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

int
tk_start(struct tk_server *s, const char *path, const char *const *extra)
{
	const char *argv[40];
	unsigned int n = 0, port = 0, sport = 0;
	uint64_t deadline;
	int status;
	FILE *f;

	memset(s, 0, sizeof(*s));
	snprintf(s->dir, sizeof(s->dir), "/tmp/psb-ksrv-test.XXXXXX");
	if (mkdtemp(s->dir) == NULL) {
		fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
		s->dir[0] = '\0';
		return -1;
	}
	snprintf(s->ready, sizeof(s->ready), "%s/ready", s->dir);
	snprintf(s->stats, sizeof(s->stats), "%s/stats.json", s->dir);
	argv[n++] = path;
	argv[n++] = "--ip";
	argv[n++] = "127.0.0.1";
	argv[n++] = "--port";
	argv[n++] = "0";
	argv[n++] = "--ready-file";
	argv[n++] = s->ready;
	argv[n++] = "--stats-file";
	argv[n++] = s->stats;
	argv[n++] = "--duration";
	argv[n++] = "120";
	argv[n++] = "-q";
	while (extra != NULL && *extra != NULL && n < 39)
		argv[n++] = *extra++;
	argv[n] = NULL;
	fflush(stdout);
	fflush(stderr);
	s->pid = fork();
	if (s->pid < 0) {
		fprintf(stderr, "fork: %s\n", strerror(errno));
		s->pid = 0;
		return -1;
	}
	if (s->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execv(path, (char *const *)argv);
		fprintf(stderr, "cannot run %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	deadline = tk_ms() + 10000;
	while (tk_ms() < deadline) {
		if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
			fprintf(stderr, "%s exited early (status 0x%x)\n", path, status);
			s->pid = 0;
			return -1;
		}
		f = fopen(s->ready, "r");
		if (f != NULL) {
			int ok = fscanf(f, "%u %u", &port, &sport) == 2;

			fclose(f);
			if (ok) {
				s->port = (uint16_t)port;
				s->sched_port = (uint16_t)sport;
				return 0;
			}
		}
		tk_sleep_ms(5);
	}
	fprintf(stderr, "%s did not write %s within 10 s\n", path, s->ready);
	return -1;
}

int
tk_stop(struct tk_server *s)
{
	uint64_t deadline;
	int status = 0;

	if (s->pid > 0) {
		kill(s->pid, SIGTERM);
		deadline = tk_ms() + 5000;
		while (waitpid(s->pid, &status, WNOHANG) == 0) {
			if (tk_ms() > deadline) {
				kill(s->pid, SIGKILL);
				waitpid(s->pid, &status, 0);
				break;
			}
			tk_sleep_ms(5);
		}
		s->pid = 0;
		s->exit_status = status;
	}
	return s->exit_status;
}

int
tk_remove(struct tk_server *s)
{
	tk_stop(s);
	if (s->dir[0] != '\0') {
		unlink(s->ready);
		unlink(s->stats);
		rmdir(s->dir);
		s->dir[0] = '\0';
	}
	return s->exit_status;
}
