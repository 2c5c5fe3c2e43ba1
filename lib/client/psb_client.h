/* Kernel-socket psb client: push and pull over plain UDP sockets, no DPDK needed. */
#ifndef PSB_CLIENT_H
#define PSB_CLIENT_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "psb_bench.h"
#include "psb_cwnd.h"
#include "psb_proto.h"
#include "psb_sched.h"
#include "psb_wk.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Defaults of struct psb_client_cfg (a zero field means "the default"). */
#define PSB_CLIENT_SEG_SIZE		1432	/* value bytes per datagram at MTU 1500 */
#define PSB_CLIENT_WINDOW		64	/* requests in flight */
#define PSB_CLIENT_WINDOW_BYTES		(8ull << 20)
#define PSB_CLIENT_TIMEOUT_NS		(20ull * 1000 * 1000)
#define PSB_CLIENT_MAX_RETRIES		50
#define PSB_CLIENT_BUSY_POLL_NS		(50ull * 1000)
#define PSB_CLIENT_SOCKBUF		(16u << 20)
#define PSB_CLIENT_SCHED_TIMEOUT_NS	(60ull * 1000 * 1000 * 1000)
/* max_retries value that means: never give up on a request. */
#define PSB_CLIENT_RETRY_FOREVER	UINT32_MAX

/*
 * How a client reaches a server (docs/CLIENT.md, Shared memory). AUTO: over shared memory
 * when a psb server on this host offers it (psb --shm-clients: its socket is there and a
 * slot is free), over UDP otherwise; SHM: shared memory or fail; UDP: UDP always. DEFAULT
 * takes the environment's PSB_TRANSPORT (auto, shm or udp), AUTO when it is not set.
 */
enum psb_client_transport {
	PSB_CLIENT_TRANSPORT_DEFAULT,
	PSB_CLIENT_TRANSPORT_AUTO,
	PSB_CLIENT_TRANSPORT_SHM,
	PSB_CLIENT_TRANSPORT_UDP,
};

struct psb_client_cfg {
	const char *server_ip;		/* the psb server (dotted quad); required */
	uint16_t server_port;		/* 0: PSB_UDP_PORT (9430) */
	const char *local_ip;		/* address to bind (NULL: any) */
	uint16_t local_port;		/* port to bind (0: any) */
	uint16_t rank;			/* sender id; must be < the server's --num-workers */
	int sync;			/* 1: synchronous rounds, 0: asynchronous */
	uint16_t seg_size;		/* push segment bytes, multiple of 4 (0: 1432) */
	uint32_t window;		/* requests in flight at most (0: 64) */
	uint64_t window_bytes;		/* value bytes in flight at most, the window adapted to
					 * loss below it (psb_cwnd.h; 0: 8 MiB). One request
					 * always goes */
	uint16_t batch_max;		/* values up to this many bytes travel as records of
					 * BATCH messages (0: every request on its own) */
	uint64_t timeout_ns;		/* resend an unanswered request after this (0: 20 ms).
					 * The whole value is resent, so it must exceed the
					 * time the values in flight take to cross: kernel
					 * sockets move about 1 Gbps per core, so allow some
					 * 16 ns per byte in flight (4 MiB: 70 ms) */
	uint32_t max_retries;		/* then fail it with -ETIMEDOUT (0: 50; RETRY_FOREVER) */
	uint64_t busy_poll_ns;		/* spin this long before sleeping in poll() (0: 50 us;
					 * UINT64_MAX: never sleep) */
	uint32_t sockbuf;		/* socket send/receive buffer bytes (0: 16 MiB) */
	uint64_t sched_timeout_ns;	/* register / barrier give up after this (0: 60 s) */
	/*
	 * A server with requests in flight that has sent nothing for a second is asked
	 * whether it is there (the probe of psb_client_probe); one that answers nothing,
	 * not even that, for server_timeout_ns ends its requests with -EHOSTUNREACH at once
	 * (0: never; they end after their retries). A synchronous round that waits for
	 * other workers keeps going: the server answers the probe meanwhile.
	 */
	uint64_t server_timeout_ns;
	int transport;			/* enum psb_client_transport (0: PSB_TRANSPORT, or auto) */
};

/* Client-side counters; the engine's are included. */
struct psb_client_stats {
	uint64_t tx_datagrams;
	uint64_t tx_bytes;
	uint64_t tx_again;		/* the socket was full; the datagrams waited */
	uint64_t tx_errors;		/* sendmmsg failed otherwise; the engine resends */
	uint64_t rx_datagrams;
	uint64_t rx_bytes;
	uint64_t rx_bad;		/* datagrams ignored, the sum of the rx_bad_* below */
	uint64_t rx_bad_short;		/* shorter than a psb header */
	uint64_t rx_bad_magic;		/* wrong magic or version */
	uint64_t rx_bad_segment;	/* segment fields inconsistent with the payload */
	uint64_t rx_bad_type;		/* not a response psb expects here (or truncated) */
	int last_tx_errno;		/* errno of the last tx error */
	uint64_t tx_too_big;		/* datagrams the route could not carry (EMSGSIZE): the
					 * requests to that server failed at once */
	uint64_t probes;		/* probes sent to servers that had gone quiet */
	uint64_t servers_lost;		/* servers given up (server_timeout_ns) */
	uint64_t rx_host_errors;	/* errors the host reported for datagrams sent (ICMP:
					 * port or host unreachable), read from the error queue */
	uint64_t error_replies;		/* ERROR messages received (benchmark included) */
	int last_error_status;		/* enum psb_status of the last one */
	struct psb_wk_stats wk;		/* engine of the blocking calls */
	/*
	 * Shared memory (servers on this host): the datagrams above count both transports,
	 * these the frames on the shared rings. Links closed count on.
	 */
	uint64_t shm_servers;		/* servers reached over shared memory now */
	uint64_t shm_tx_frames;
	uint64_t shm_tx_bytes;
	uint64_t shm_rx_frames;
	uint64_t shm_rx_bytes;
	uint64_t shm_ring_full;		/* sends that waited: the ring to the server was full */
	uint64_t shm_bad;		/* frames or ring moves of the server dropped, the sum of: */
	uint64_t shm_bad_index;		/* a ring counter moved beyond what was given (link ended) */
	uint64_t shm_bad_desc;		/* a descriptor named another buffer than its slot's */
	uint64_t shm_bad_length;	/* a descriptor's length 0 or beyond its buffer */
	uint64_t shm_bad_chain;		/* a frame in chained buffers */
	uint64_t shm_bad_frame;		/* not a psb datagram from the server to this client */
	uint64_t shm_no_socket;		/* auto: servers without a socket here (remote): UDP */
	uint64_t shm_slots_busy;	/* servers whose every slot was taken */
	uint64_t shm_fallbacks;		/* auto: servers that offered shared memory, reached over
					 * UDP all the same (slots busy, handshake failed, link lost) */
	uint64_t shm_links_lost;	/* links the server ended (it left, or broke the rings) */
};

/*
 * One asynchronous request: fill op (type, key, round, len, in, out) and
 * start it with psb_client_start; it is finished when done is set, and its
 * result is in op.status (0, a positive enum psb_status or -ETIMEDOUT).
 * The request and its buffers belong to the client until then.
 */
struct psb_client_req {
	struct psb_wk_op op;
	int done;
	/* Called once it is finished (done set), from inside the call that drove it; may be NULL. */
	void (*cb)(struct psb_client_req *r, void *arg);
	void *cb_arg;
	uint64_t cost;			/* value bytes it counts in the window (set by start) */
};

/*
 * A client is one socket and one engine, driven by whichever call is running:
 * it is not thread-safe. Use one client per thread, each with its own rank
 * (the server keeps one request per rank and key).
 */
struct psb_client;

/* Fill cfg with the defaults (server_ip stays NULL). */
void psb_client_cfg_init(struct psb_client_cfg *cfg);

/*
 * Create a client: bind a non-blocking UDP socket and set up the engine.
 * NULL on failure with the reason in err (errlen bytes, may be 0).
 */
struct psb_client *psb_client_open(const struct psb_client_cfg *cfg, char *err, size_t errlen);

/*
 * "IP" or "IP:PORT" into a host-order address and port (port left as is when absent).
 * 0, or -EINVAL.
 */
int psb_client_parse_addr(const char *s, uint32_t *ip, uint16_t *port);

/* Shorthand for ctypes and scripts: server is "IP" or "IP:PORT", the rest defaults. */
struct psb_client *psb_client_connect(const char *server, uint16_t rank, int sync, char *err,
		size_t errlen);

/* Close the socket and free everything; requests still in flight are abandoned. */
void psb_client_close(struct psb_client *c);

/*
 * Blocking calls. They return 0, a positive enum psb_status the server
 * answered with (PSB_ST_NO_KEY, PSB_ST_LEN_MISMATCH, ...), or -errno
 * (-ETIMEDOUT after max_retries resends, -EINVAL for bad arguments).
 *
 * n counts floats. In sync mode round is the synchronous round: a push goes
 * into round `round` (the key's number of closed rounds; the first push is
 * round 0) and returns once every worker pushed into it; a pull returns once
 * at least `round` rounds closed. Async mode ignores round.
 */
int psb_client_push(struct psb_client *c, uint64_t key, const float *val, size_t n,
		uint32_t round);
/*
 * Pull into out (room for cap floats); *n gets the floats received. When the
 * stored value is larger than cap it returns PSB_ST_LEN_MISMATCH with *n set
 * to the stored value's length, so the caller can grow out and retry.
 */
int psb_client_pull(struct psb_client *c, uint64_t key, float *out, size_t cap, size_t *n,
		uint32_t round);
/* Push val, then read the sum back into out (n floats each). */
int psb_client_pushpull(struct psb_client *c, uint64_t key, const float *val, float *out,
		size_t n, uint32_t round);

/*
 * The round / version the server reported in the last successful call; after
 * PSB_ST_STALE (sync push into the wrong round) the key's current round.
 */
uint32_t psb_client_last_round(const struct psb_client *c);

/*
 * Asynchronous calls: start a request (waits for window room if needed) and
 * wait for one or all. start returns 0 or -EINVAL; wait returns the request's
 * result like the blocking calls (-EINVAL for a request never started).
 */
int psb_client_start(struct psb_client *c, struct psb_client_req *r);
int psb_client_wait(struct psb_client *c, struct psb_client_req *r);
void psb_client_wait_all(struct psb_client *c);
/*
 * One turn of the loop the waits run: receive, resend what timed out, send. may_sleep:
 * when nothing moved for a while, wait a little for the socket (as the waits do).
 */
void psb_client_poll(struct psb_client *c, int may_sleep);
/*
 * For a caller that sleeps on its own (another thread may use c meanwhile): the
 * descriptors to wait on into pfd (the socket; a shared-memory link's interrupt and
 * control socket, whose server is asked to signal until the next turn), *max_ns how long
 * at most. The count; 0 when work is there already; -(the count needed) when max is less:
 * at most 1 + 2 * the servers.
 */
int psb_client_wait_fds(struct psb_client *c, struct pollfd *pfd, int max, uint64_t *max_ns);

/*
 * ps-lite's test_benchmark over this client's socket (the kernel-socket
 * baseline). bc->keys etc. as for psb_bench_create; rank, sync, seg_size and
 * timeouts come from the client. Returns 0 when the run finished, -EIO when
 * requests failed, -EBUSY with requests of the client in flight, -ENOMEM.
 */
int psb_client_bench(struct psb_client *c, const struct psb_bench_cfg *bc,
		struct psb_bench_result *res);

/*
 * Register with a ps-lite style scheduler as a worker. Blocks until the
 * scheduler saw every node (or sched_timeout_ns: -ETIMEDOUT, or -ECONNREFUSED when the host
 * said nothing listens at the scheduler's port: a scheduler still starting is waited for). On success the
 * client takes the rank and sends each key to the server owning it in the
 * view. rank and view may be NULL. -EBUSY with requests in flight.
 */
int psb_client_register(struct psb_client *c, const char *sched_ip, uint16_t sched_port,
		uint16_t *rank, struct psb_sched_view *view);

/* Barrier of a group (PSB_GROUP_WORKERS, ...) at sequence seq, via the registered scheduler. */
int psb_client_barrier(struct psb_client *c, uint32_t group, uint32_t seq);

/*
 * ps-lite's Finalize: tell the registered scheduler this worker finished; once every
 * worker of the job did, it ends the servers and itself. Blocks until it acknowledges
 * (or timeout_ns: -ETIMEDOUT); -ENOTCONN when not registered.
 */
int psb_client_finalize(struct psb_client *c, uint64_t timeout_ns);

/*
 * Send keys straight to these n servers (ip, port in host order; port 0: PSB_UDP_PORT),
 * the key space split among them as ps-lite splits it (psb_sched_key_range). 0, -EINVAL
 * (n is 0 or over PSB_SCHED_MAX_NODES, an address is 0) or -EBUSY with requests in flight.
 */
int psb_client_set_servers(struct psb_client *c, uint16_t n, const uint32_t *ip,
		const uint16_t *port);

/*
 * Ask every server whether it is there: a PULL of PSB_CLIENT_PROBE_KEY, which no
 * ps-lite key range holds, sent to each every 100 ms until each answered (anything:
 * an error says it is there too) or timeout_ns passed. 0 when all answered; otherwise
 * -EHOSTUNREACH, or -ECONNREFUSED when the host said nothing listens there, with the
 * servers that did not answer named in err; -EBADSLT when a server answered
 * bad_sender (the rank is not below its --num-workers), named in err.
 */
#define PSB_CLIENT_PROBE_KEY	PSB_PROBE_KEY
int psb_client_probe(struct psb_client *c, uint64_t timeout_ns, char *err, size_t errlen);

/*
 * The value bytes a datagram to ip carries unfragmented on its route: the route's MTU
 * less the IPv4, UDP and psb headers, a multiple of 4, at most PSB_UDP_MAX_SEG. 0 when
 * the route or its MTU cannot be read (err says why).
 */
uint16_t psb_client_route_seg(uint32_t ip, uint16_t port, char *err, size_t errlen);

/*
 * Send push values in segments of seg bytes from now on (a multiple of 4, at most the
 * client's seg_size at open: its buffers are that large). 0, -EINVAL, or -EBUSY with
 * requests in flight.
 */
int psb_client_set_seg_size(struct psb_client *c, uint16_t seg);

/*
 * The server whose requests were ended last for not answering (server_timeout_ns), as
 * "IP:PORT", with how long it had been silent; NULL when none was.
 */
const char *psb_client_lost_server(const struct psb_client *c, double *silent_s);

/*
 * How server s (0: the one of cfg, or the first of the view) is reached: 1 shared memory,
 * 0 UDP; the choice is made now if it was not yet (it is made at the first request
 * otherwise). A negative errno when the transport is forced to shared memory and the link
 * cannot be made (or was lost), with the reason in why; -EINVAL for no such server.
 */
int psb_client_transport(struct psb_client *c, uint16_t s, char *why, size_t whylen);

/* Text for a return value of the calls above (0, -errno or a psb status). */
const char *psb_client_strerror(int rc);

uint16_t psb_client_rank(const struct psb_client *c);
/* Port the socket is bound to (host order). */
uint16_t psb_client_local_port(const struct psb_client *c);
/* The socket, e.g. for an outer event loop; do not read from it. */
int psb_client_fd(const struct psb_client *c);
void psb_client_stats(const struct psb_client *c, struct psb_client_stats *st);

#ifdef __cplusplus
}
#endif
#endif /* PSB_CLIENT_H */
