/*
 * psb-ksrv for tests: started on 127.0.0.1 (a free port, or as asked) with extra options,
 * ready once it wrote its --ready-file, dying with the test (PR_SET_PDEATHSIG) and after
 * --duration whatever happens, stopped, its --stats-file read, its files removed.
 */
#ifndef PSB_TESTKSRV_H
#define PSB_TESTKSRV_H

#include <stdint.h>
#include <sys/types.h>

struct tk_server {
	pid_t pid;
	uint16_t port;
	uint16_t sched_port;
	char dir[64];
	char ready[96];
	char stats[96];
	int exit_status;	/* wait() status once stopped: 0 is a clean exit */
};

/* Start path with extra (NULL-terminated; may be NULL) on 127.0.0.1; 0 or -1 (said why). */
int tk_start(struct tk_server *s, const char *path, const char *const *extra);
/* SIGTERM, SIGKILL after 5 s; returns its wait status. Its files stay (the stats file). */
int tk_stop(struct tk_server *s);
/* tk_stop, then its files and directory removed. */
int tk_remove(struct tk_server *s);
/* Milliseconds of CLOCK_MONOTONIC, and a sleep of ms. */
uint64_t tk_ms(void);
void tk_sleep_ms(unsigned int ms);

#endif /* PSB_TESTKSRV_H */
