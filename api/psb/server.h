/*
 * psb's server API: a psb server whose answers are the program's. By default psb's own
 * servers (psb, psb-ksrv) hold the values and sum pushes; a program that does more than
 * sum (ps-lite's KVServer with a request handle of its own) runs this instead.
 *
 *	#include <psb/server.h>		cc prog.c $(pkg-config --cflags --libs psb)
 *
 * The server speaks psb's protocol on a kernel UDP socket, exactly as psb-ksrv does:
 * workers (psbc sessions, ps-lite programs over ps/ps.h) cannot tell them apart.
 * Segments are reassembled, and the budgets, retries and repairs are psb-ksrv's; what
 * differs is that every request, once whole, goes to the program's handler, and is
 * answered when the program says so (psbs_respond), in the handler or later, from any
 * thread. A worker's retries of a request still open are not passed on again; once
 * answered, its retries and repairs are answered from a copy kept until the worker's
 * next request on that key.
 *
 * Each request is one key: a worker's multi-key operation reaches the server owning each
 * key as a request per key, in the order of the keys.
 *
 * Threads: psbs_poll runs the handler, in the calling thread; call it from one thread
 * at a time. psbs_respond may be called from any thread, also inside the handler.
 */
#ifndef PSB_SERVER_API_H
#define PSB_SERVER_API_H

#include <stddef.h>
#include <stdint.h>

#include <psb/client.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct psbs psbs_t;

enum psbs_op {
	PSBS_PUSH = 1,		/* answered without values */
	PSBS_PULL = 2,
	PSBS_PUSHPULL = 3,
};

/* A request, whole. Copy it to answer later: psbs_respond reads key, sender and id. */
struct psbs_request {
	uint64_t key;
	int op;			/* enum psbs_op */
	int sender;		/* the worker's rank */
	int sync;		/* the worker runs synchronous rounds (psbc_opts.sync) */
	uint32_t round;		/* and this request is for this round of the key */
	/* a push's value (nvals floats); NULL for a pull. Valid during the handler only. */
	const float *vals;
	size_t nvals;
	uint32_t id[2];		/* which of the worker's requests this is */
};

typedef void (*psbs_handler)(psbs_t *s, const struct psbs_request *r, void *arg);

struct psbs_opts {
	unsigned int api;		/* PSBC_API_VERSION (psbs_opts_init sets it) */
	/*
	 * "IP[:PORT]" of the job's scheduler to register with as a server; NULL:
	 * DMLC_PS_ROOT_URI and DMLC_PS_ROOT_PORT, or, when those are not set, no scheduler:
	 * workers come straight (psbc_opts.servers), num_workers of them.
	 */
	const char *scheduler;
	unsigned int num_workers;	/* without a scheduler: workers 0..N-1 (0: 1) */
	/*
	 * Address to bind, which the scheduler announces to workers; NULL: DMLC_NODE_HOST,
	 * DMLC_INTERFACE's, or the one the route to the scheduler leaves from (without a
	 * scheduler: any).
	 */
	const char *local_ip;
	unsigned int port;		/* 0: any free port (psbs_port says which) */
	unsigned int max_value;		/* largest value accepted, floats (0: 16 Mi floats) */
	unsigned int seg_size;		/* value bytes per answer datagram (0: 1432, MTU 1500) */
	unsigned int connect_timeout_ms;	/* the scheduler answers REGISTER within (0: 60 s) */
};

void psbs_opts_init(struct psbs_opts *o);

/*
 * Open a server: bind, register with the scheduler (which waits for every node of the
 * job), get ready. Requests go to handler(s, request, arg) from psbs_poll. 0 with *out
 * set, or an error with the reason in err (the address taken, the scheduler that did not
 * answer, the variable that is wrong).
 */
int psbs_open(psbs_t **out, const struct psbs_opts *o, psbs_handler handler, void *arg,
		char *err, size_t errlen);

/*
 * Receive for up to timeout_ms (0: what is there now) and run the handler for each
 * request whole. 1 while the job goes on; 0 once the scheduler ended it (every worker
 * finished: psbc_finalize); or an error.
 */
int psbs_poll(psbs_t *s, int timeout_ms);

/*
 * Answer request r: for a pull or pushpull with nvals floats of vals (copied: vals is
 * the caller's again on return), for a push with nothing (vals ignored). 0;
 * PSBC_E_NOT_OPEN when the request was answered already or its worker gave it up (it
 * sent a newer request on the key, or restarted); PSBC_E_TOO_LARGE over max_value (the
 * request stays open); PSBC_E_NO_MEMORY when the server's memory budget cannot keep the
 * answer: the worker gets that error instead.
 */
int psbs_respond(psbs_t *s, const struct psbs_request *r, const float *vals, size_t nvals);

int psbs_fd(const psbs_t *s);		/* readable: psbs_poll has work */
int psbs_port(const psbs_t *s);
int psbs_rank(const psbs_t *s);		/* the rank the scheduler gave (else 0) */
int psbs_num_workers(const psbs_t *s);
int psbs_num_servers(const psbs_t *s);
/* The last error of s with its particulars. */
const char *psbs_errmsg(const psbs_t *s);

/* Close: requests still open are not answered. */
void psbs_close(psbs_t *s);

#ifdef __cplusplus
}
#endif

#endif /* PSB_SERVER_API_H */
