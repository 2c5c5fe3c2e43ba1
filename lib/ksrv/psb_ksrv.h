/*
 * A psb server on a kernel UDP socket: the store (lib/kv) behind one socket, registered
 * with a job's scheduler or not. psb-ksrv is this plus its options and a hosted scheduler;
 * libpsb's server API (psb/server.h) is this in handler mode.
 */
#ifndef PSB_KSRV_H
#define PSB_KSRV_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "psb_kv.h"
#include "psb_proto.h"
#include "psb_shm_srv.h"

struct psb_ksrv_cfg {
	uint32_t ip;			/* address to bind (0: any) */
	uint16_t port;			/* 0: any free port */
	uint32_t sockbuf;		/* socket buffers, bytes */
	/*
	 * Register as a server with the job's scheduler at reg_ip:reg_port (0: none) from
	 * the data socket, whose address it announces to workers; the number of workers
	 * then comes from it. REGISTER is sent again every 200 ms for reg_timeout_ns, or
	 * until *stop is set.
	 */
	uint32_t reg_ip;
	uint16_t reg_port;
	uint64_t reg_timeout_ns;
	const volatile sig_atomic_t *stop;
	uint16_t num_workers;		/* without a scheduler */
	int sync;
	int sync_round;			/* psb_kv_cfg.sync_round */
	uint16_t seg_size;		/* value bytes per answer datagram */
	uint32_t max_value;
	struct psb_kv_budget budget;	/* as given (0: derived from half the machine's memory) */
	uint64_t reasm_timeout_ns;
	psb_kv_request_fn request;	/* handler mode (NULL: a store) */
	void *request_arg;
	/* sync: each round's times as it closes (psb_kv_cfg.round_closed; NULL: none) */
	void (*round_closed)(void *arg, const struct psb_kv_round *r);
	void *round_arg;
	uint64_t (*clock_ns)(void);
	/*
	 * Memif slots for clients on this host (psb_shm_srv.h; 0: none), at
	 * psb_shm_sock_path(ip, the port bound). A server that cannot offer them (another
	 * holds the socket's lock) serves UDP alone: psb_ksrv_shm_why says why.
	 */
	uint32_t shm_slots;
	uint64_t shm_max_region;	/* a client's region at most (0: PSB_SHM_SRV_MAX_REGION) */
};

/* What the socket saw and sent. */
struct psb_ksrv_counters {
	uint64_t rx_datagrams;
	uint64_t rx_bytes;
	uint64_t tx_datagrams;
	uint64_t tx_bytes;
	uint64_t tx_again;
	uint64_t tx_dropped;
	uint64_t bad_short;
	uint64_t bad_magic;
	uint64_t bad_segment;
	uint64_t bad_truncated;
	uint64_t not_request;
	uint64_t sched_msgs;
};

struct psb_ksrv;

/*
 * Bind, register with the scheduler (when given), derive the budgets, make the store.
 * NULL with the reason in err: the address taken, the scheduler that did not answer, a
 * budget that cannot hold one value.
 */
struct psb_ksrv *psb_ksrv_open(const struct psb_ksrv_cfg *cfg, char *err, size_t errlen);
void psb_ksrv_close(struct psb_ksrv *s);

/*
 * Read one batch from the socket and one from the shared-memory slots, and handle them:
 * requests, and the scheduler's FINALIZE (the job is over: psb_ksrv_ended). Answers go
 * back where their request came from (a slot's client by its address, 169.254.77.x) and
 * are sent before it returns. The datagrams read (0: none waiting).
 */
int psb_ksrv_rx(struct psb_ksrv *s);
/*
 * The store's clock: staged pushes time out, resend buckets refill; the slots' control
 * sockets are looked at every millisecond (connections, clients gone).
 */
void psb_ksrv_tick(struct psb_ksrv *s, uint64_t now_ns);
/* Handler mode: answer r (psb_kv_respond), sent at once. */
int psb_ksrv_respond(struct psb_ksrv *s, const struct psb_kv_req *r, const void *value,
		uint32_t len);
/* 1 once the job's scheduler said every worker finished. */
int psb_ksrv_ended(const struct psb_ksrv *s);

/* Validate a datagram of the socket or another: 0 with h decoded, or -1 (counted). */
int psb_ksrv_check(struct psb_ksrv *s, const uint8_t *buf, size_t len, int truncated,
		struct psb_hdr *h);

int psb_ksrv_fd(const struct psb_ksrv *s);
uint16_t psb_ksrv_port(const struct psb_ksrv *s);
uint32_t psb_ksrv_epoch(const struct psb_ksrv *s);
/* Registered: the rank the scheduler gave, the job's servers and workers (else 0, 1, N). */
uint16_t psb_ksrv_rank(const struct psb_ksrv *s);
uint16_t psb_ksrv_num_servers(const struct psb_ksrv *s);
uint16_t psb_ksrv_num_workers(const struct psb_ksrv *s);
const struct psb_kv_budget *psb_ksrv_budget(const struct psb_ksrv *s);
struct psb_kv *psb_ksrv_kv(struct psb_ksrv *s);
struct psb_ksrv_counters *psb_ksrv_counters(struct psb_ksrv *s);

/* The slots (NULL: none), their socket, and why there are none when some were asked for. */
const struct psb_shm_srv_stats *psb_ksrv_shm_stats(const struct psb_ksrv *s);
const char *psb_ksrv_shm_path(const struct psb_ksrv *s);
const char *psb_ksrv_shm_why(const struct psb_ksrv *s);
/* Remove the slots' socket and lock file (at exit, before psb_ksrv_close is reached). */
void psb_ksrv_shm_unlink(const struct psb_ksrv *s);
/*
 * Sleeping: psb_ksrv_sleep_fds fills up to max pollfds besides the data socket (the
 * slots' sockets and eventfds); psb_ksrv_arm asks the slots' clients to signal as they
 * send (1: requests wait already, do not sleep), psb_ksrv_disarm after the sleep.
 */
unsigned int psb_ksrv_sleep_fds(const struct psb_ksrv *s, struct pollfd *pfd, unsigned int max);
int psb_ksrv_arm(struct psb_ksrv *s);
void psb_ksrv_disarm(struct psb_ksrv *s);

#endif /* PSB_KSRV_H */
