/*
 * psb's client API: push and pull parameters to psb servers from an ordinary host, over
 * the kernel's UDP sockets, as a ps-lite worker does.
 *
 *	#include <psb/client.h>		cc prog.c $(pkg-config --cflags --libs psb)
 *
 * A session (psbc_t) reaches the servers either through a ps-lite style scheduler (the
 * DMLC_* variables, as ps-lite programs are started) or straight at given addresses. The
 * key space is split among the servers as ps-lite splits it. Values are float32; lengths
 * count floats.
 *
 * A server on the session's own host that offers shared memory (psb --shm-clients) is
 * reached through it rather than the kernel: the same messages in a memif link, the values
 * copied straight into and out of the shared buffers (opts.transport, PSB_TRANSPORT).
 *
 * Operations are batched and asynchronous, as ps-lite's KVWorker: psbc_push, psbc_pull
 * and psbc_pushpull take sorted keys with their values laid end to end, start sending and
 * return a timestamp; psbc_wait(ts) blocks until that operation ended, psbc_test(ts) asks
 * without blocking, and a callback, when given, runs once it ended. Values are read from
 * and written into the caller's memory, which must stay valid (and, for a pull, untouched)
 * until then; nothing is copied but into and out of the socket.
 *
 * Threads: a session is not locked. Use it from one thread at a time (one session per
 * thread, each with its own rank, is the usual way); sessions are independent. Requests
 * progress and callbacks run only inside calls on their session (psbc_wait, psbc_test,
 * psbc_progress and starting an operation), in the calling thread.
 *
 * Errors: every call returns 0 (or a timestamp, >= 0) or a negative PSBC_E* code;
 * psb_strerror(code) says it in words, and psbc_errmsg(session) gives the last error of a
 * session with its particulars (which server, which key, which length).
 */
#ifndef PSB_CLIENT_API_H
#define PSB_CLIENT_API_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * 2: struct psbc_opts gained transport (a session of api 1 takes PSB_TRANSPORT, or auto).
 * 3: psbc_wait_fds (struct psbc_opts as in 2).
 * 4: psbc_pushpull_scaled (struct psbc_opts as in 2).
 */
#define PSBC_API_VERSION	4

/* Error codes: every one negative. */
enum psbc_error {
	PSBC_OK = 0,
	PSBC_E_INVAL = -1,		/* an argument is wrong (psbc_errmsg says which) */
	PSBC_E_KEYS = -2,		/* keys not in ascending order, or repeated */
	PSBC_E_LENS = -3,		/* lens do not add up to the values given */
	PSBC_E_TOO_LARGE = -4,		/* a value over PSBC_MAX_VALUE, or over the server's */
	PSBC_E_UNREACHABLE = -5,	/* a server or the scheduler did not answer in time */
	PSBC_E_REFUSED = -6,		/* nothing listens at a server's address */
	PSBC_E_TIMEDOUT = -7,		/* a request went unanswered through every retry */
	PSBC_E_MSGSIZE = -8,		/* the route cannot carry a datagram of this size */
	PSBC_E_LEN_MISMATCH = -9,	/* the key holds a value of another length */
	PSBC_E_NO_KEY = -10,		/* pull of a key never pushed */
	PSBC_E_NO_MEMORY = -11,		/* the server's store or budget refused the value */
	PSBC_E_RANK = -12,		/* the rank is not below the server's number of workers */
	PSBC_E_STALE = -13,		/* synchronous: a request for another round */
	PSBC_E_BUSY = -14,		/* the server stayed busy through every retry */
	PSBC_E_RESTARTED = -15,		/* the server restarted: what it stored is lost */
	PSBC_E_PROTOCOL = -16,		/* the server does not speak this protocol version */
	PSBC_E_TS = -17,		/* no such timestamp (never given, or already waited for) */
	PSBC_E_NOMEM = -18,		/* out of memory here */
	PSBC_E_SYSTEM = -19,		/* a system call failed (psbc_errmsg says which) */
	PSBC_E_ENV = -20,		/* a DMLC_* variable is missing or malformed */
	PSBC_E_SCHEDULER = -21,		/* the scheduler refused or ended the job */
	PSBC_E_NOT_OPEN = -22,		/* psbs_respond: that request is no longer open */
};

/* The largest value one key holds, in floats (psb's protocol: 1 GiB). */
#define PSBC_MAX_VALUE		(1u << 28)
/* Keys are below this: the last key of the space is psb's (ps-lite's ranges end there). */
#define PSBC_KEY_END		UINT64_MAX

/* Text for an error code (or "success"); never NULL. */
const char *psb_strerror(int code);
/* "0.1.0 (revision ...)": the library's version. */
const char *psb_version(void);

typedef struct psbc psbc_t;

/* How to open a session; psbc_opts_init gives the defaults, each written below. */
struct psbc_opts {
	unsigned int api;		/* PSBC_API_VERSION (psbc_opts_init sets it) */
	/*
	 * "IP[:PORT],IP[:PORT],...": straight to these servers, in this order (the key
	 * ranges follow it). NULL: through the scheduler.
	 */
	const char *servers;
	/* "IP[:PORT]" of the scheduler; NULL: DMLC_PS_ROOT_URI and DMLC_PS_ROOT_PORT. */
	const char *scheduler;
	/*
	 * Straight to servers: the rank this worker sends as, below the servers'
	 * --num-workers; -1: DMLC_RANK, or 0. Through a scheduler the scheduler gives it.
	 */
	int rank;
	int sync;			/* 1: synchronous rounds; 0: asynchronous, as the servers run */
	const char *local_ip;		/* address to send from; NULL: DMLC_NODE_HOST, or any */
	/*
	 * How long psbc_open waits for every server to answer (straight), or for the
	 * scheduler to admit this worker, which it does once every node registered
	 * (0: 3 s straight, 60 s through a scheduler).
	 */
	unsigned int connect_timeout_ms;
	/*
	 * Resend an unanswered request after this long (0: 16 ns per byte of window_bytes,
	 * at least 20 ms: 134 ms for 8 MiB, what kernel UDP takes to move it); longer when
	 * the round trips measured are.
	 */
	unsigned int timeout_ms;
	unsigned int max_retries;	/* then fail it with PSBC_E_TIMEDOUT (0: 50) */
	/*
	 * A server that answers nothing, not even the probe a session sends to a server gone
	 * quiet for a second, for this long while requests to it wait ends them with
	 * PSBC_E_UNREACHABLE, naming it (0: 10 s). Synchronous rounds that wait for other
	 * workers go on: their server answers the probe.
	 */
	unsigned int server_timeout_ms;
	unsigned int window;		/* keys in flight at most (0: 256) */
	/* Value bytes in flight at most; below it the window adapts to loss (0: 8 MiB). */
	uint64_t window_bytes;
	/* Value bytes per datagram (a multiple of 4); 0: what the route's MTU carries. */
	unsigned int seg_size;
	/* Values of up to this many bytes travel several to a datagram (0: 1024; -1: never). */
	int batch_bytes;
	/*
	 * How servers are reached (api 2): "auto" over shared memory where a server on this host
	 * offers it (psb --shm-clients) and a slot is free, else UDP (said once on stderr when
	 * a server offered it but could not be used); "shm" shared memory to every server or
	 * fail (psbc_open says why); "udp" UDP always. NULL: $PSB_TRANSPORT, or "auto".
	 */
	const char *transport;
};

void psbc_opts_init(struct psbc_opts *o);

/*
 * Open a session: find the servers (scheduler or list), check that each answers within
 * connect_timeout_ms and accepts this rank. 0 with *out set, or an error with the reason
 * in err (errlen bytes; may be NULL): the server or scheduler that did not answer, the
 * variable that is missing, the option that is wrong.
 */
int psbc_open(psbc_t **out, const struct psbc_opts *o, char *err, size_t errlen);

/*
 * Close: operations not yet ended are abandoned (their callbacks do not run). Through a
 * scheduler, call psbc_finalize first, as ps-lite's Finalize.
 */
void psbc_close(psbc_t *s);

/* Ended with an operation: ts, and 0 or the first error among its keys. */
typedef void (*psbc_cb)(psbc_t *s, int64_t ts, int status, void *arg);

/*
 * Push nkeys keys, in strictly ascending order, with their values laid end to end in
 * vals (nvals floats). lens[i] is key i's length in floats; lens NULL: nvals / nkeys each
 * (which must divide evenly). In synchronous mode each key's push goes into its next
 * round. Returns a timestamp (>= 0), or an error with nothing sent.
 */
int64_t psbc_push(psbc_t *s, const uint64_t *keys, size_t nkeys, const float *vals,
		size_t nvals, const uint32_t *lens, psbc_cb cb, void *arg);

/*
 * Pull nkeys keys into vals (room for nvals floats). lens NULL: nvals / nkeys floats each,
 * and each key's value must have that length (PSBC_E_LEN_MISMATCH otherwise). lens given:
 * the room of each key, laid end to end in vals (each value fills the start of its room),
 * and once the pull ended the length received (for a key whose value did not fit: its
 * stored length, with PSBC_E_LEN_MISMATCH). In synchronous mode a
 * key's pull waits for the round its last push went into to close.
 */
int64_t psbc_pull(psbc_t *s, const uint64_t *keys, size_t nkeys, float *vals, size_t nvals,
		uint32_t *lens, psbc_cb cb, void *arg);

/*
 * Push vals, then read each key's sum into outs (nvals floats, may be vals itself: each
 * key's push is sent before its answer lands). lens as for psbc_push.
 */
int64_t psbc_pushpull(psbc_t *s, const uint64_t *keys, size_t nkeys, const float *vals,
		float *outs, size_t nvals, const uint32_t *lens, psbc_cb cb, void *arg);

/*
 * psbc_pushpull, each answer multiplied by scale as it lands in outs: the mean of the
 * workers' pushes from the servers' sum (scale 1 / workers) with no pass over outs
 * afterwards. scale must be finite; 1 is psbc_pushpull.
 */
int64_t psbc_pushpull_scaled(psbc_t *s, const uint64_t *keys, size_t nkeys, const float *vals,
		float *outs, size_t nvals, const uint32_t *lens, float scale, psbc_cb cb,
		void *arg);

/* Block until operation ts ended: 0 or its first error. A timestamp is waited for once. */
int psbc_wait(psbc_t *s, int64_t ts);
/* 1: ts ended (psbc_wait then returns at once), 0: not yet; or PSBC_E_TS. Never blocks. */
int psbc_test(psbc_t *s, int64_t ts);
/* Block until every operation ended: 0 or the first error among them. */
int psbc_wait_all(psbc_t *s);
/* Move requests along and run the callbacks due, without blocking. */
void psbc_progress(psbc_t *s);
/*
 * The same, but when nothing moved for a while it waits a little (a few milliseconds at
 * most) for the socket: the turn of a loop in a thread of its own that drives a session.
 */
void psbc_poll(psbc_t *s);

/*
 * The session's socket, for an event loop: when it is readable, psbc_progress has work;
 * requests waiting to be sent again need a turn every few milliseconds too. Never read it.
 * A session that reaches servers over shared memory has more to wait on: psbc_wait_fds.
 */
int psbc_fd(const psbc_t *s);
/*
 * Everything a sleep for the session waits on, for a loop that sleeps outside the library
 * (a thread that lets others use the session meanwhile): up to max entries of pfd (the
 * socket; for each server over shared memory, its ring's interrupt and its link's socket,
 * which the server is asked to signal until the session's next call), *timeout_ms the
 * longest the sleep may last. Returns the count to poll(pfd, count, *timeout_ms), then call
 * psbc_progress (or psbc_test); 0 when there is work already (no sleep); PSBC_E_INVAL when
 * max is less than 1 + 2 * psbc_num_servers(s), always enough. Read none of them.
 */
int psbc_wait_fds(psbc_t *s, struct pollfd *pfd, int max, int *timeout_ms);

/* The rank this session sends as (through a scheduler: the one it gave). */
int psbc_rank(const psbc_t *s);
int psbc_num_servers(const psbc_t *s);
/* Through a scheduler: the workers of the job; straight: 0 (not known). */
int psbc_num_workers(const psbc_t *s);
/* Server i's address as "IP:PORT" into buf. 0, or PSBC_E_INVAL (no such server, no room). */
int psbc_server_address(const psbc_t *s, int i, char *buf, size_t len);
/* How server i is reached: PSBC_TRANSPORT_SHM or _UDP; or PSBC_E_INVAL (no such server). */
#define PSBC_TRANSPORT_UDP	0
#define PSBC_TRANSPORT_SHM	1
int psbc_server_transport(const psbc_t *s, int i);
/* Server i's keys: [*begin, *end). 0, or PSBC_E_INVAL for no such server. */
int psbc_server_range(const psbc_t *s, int i, uint64_t *begin, uint64_t *end);

/*
 * Through a scheduler: wait until every member of the group reached this barrier
 * (group: PSBC_GROUP_*, ORed as ps-lite's). PSBC_E_INVAL straight to servers.
 */
#define PSBC_GROUP_SCHEDULER	1
#define PSBC_GROUP_SERVERS	2
#define PSBC_GROUP_WORKERS	4
int psbc_barrier(psbc_t *s, int group);
/* Through a scheduler: this worker finished (ps-lite's Finalize). */
int psbc_finalize(psbc_t *s);

/* The last error of this session, in words with its particulars ("" when none). */
const char *psbc_errmsg(const psbc_t *s);

#ifdef __cplusplus
}
#endif
#endif /* PSB_CLIENT_API_H */
