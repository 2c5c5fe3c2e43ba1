/*
 * A staleness worker's part of the experiment, whatever carries its packets: joining the
 * trainer, following its session, holding versions (by multicast or by pulling them through
 * a psb_mc_recv it owns, or as its caller hands them over), sampling and posting, the end
 * of the run, and every bounded wait on the way. EAL-free: psb-stale's worker drives it
 * with kernel sockets and the appliance's receiver role with DPDK mbufs; both feed it the
 * datagrams they get, call psb_stale_client_step when psb_stale_client_next_ns says, and
 * give it the function that sends a datagram to the trainer.
 *
 *   joining   a joining POST (with the key) every 200 ms until the trainer ACKs; no ACK
 *             within join_ns: failed, naming the trainer
 *   waiting   ACKs flagged WAITING: not every worker joined yet, nothing is sampled
 *   running   samples every step, a POST every post period; no ACK for silent_ns: failed
 *   ending    the trainer's ACK with END names the final version: once held, a last POST
 *             (sent up to 3 times until ACKed); not held within end_ns: failed, saying
 *             which version it holds
 */
#ifndef PSB_STALE_CLIENT_H
#define PSB_STALE_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "psb_mc_recv.h"
#include "psb_stale.h"

/* Send len bytes to the trainer (its address and port), by unicast. */
typedef void (*psb_stale_send_fn)(void *arg, const uint8_t *buf, size_t len);

struct psb_stale_client_cfg {
	uint32_t id;			/* the worker id, 0 .. PSB_STALE_WORKERS_MAX - 1 */
	uint64_t key;			/* the experiment's, sent with each join */
	int mode;			/* enum psb_stale_mode */
	uint32_t trainer_ip;		/* unicast comes from there alone */
	uint16_t trainer_port;
	uint64_t step_ns, post_ns, pull_ns;
	uint64_t join_ns;		/* waiting for the trainer's first answer */
	uint64_t end_ns;		/* after the END: to hold the final version */
	uint64_t data_size;		/* with verify: the length every version has */
	int verify;			/* check every byte of every version taken */
	/* multicast and pull: the receiver's settings (id, seed and bounds as given) */
	struct psb_mc_recv_cfg recv;
	psb_stale_send_fn send;
	psb_stale_log_fn log;		/* NULL: none */
	void *arg;			/* for send and log */
};

enum psb_stale_client_state {
	PSB_STALE_CL_JOINING,
	PSB_STALE_CL_WAITING,
	PSB_STALE_CL_RUNNING,
	PSB_STALE_CL_ENDING,
	PSB_STALE_CL_DONE,		/* held the final version, the last post ACKed or sent */
	PSB_STALE_CL_FAILED,		/* failure says why */
};

extern const char *const psb_stale_client_state_names[];

/* psb_stale_client_step: in filesystem mode, look for a newer version now */
#define PSB_STALE_CL_CHECK	1

struct psb_stale_client {
	struct psb_stale_client_cfg cfg;
	struct psb_mc_recv *rx;		/* multicast, pull; NULL otherwise */
	int state;			/* enum psb_stale_client_state */
	uint32_t session;		/* the trainer's, from its first ACK (0: none yet) */
	uint32_t held;			/* the newest version held */
	uint32_t end_vid;		/* the trainer's final version, once it said so */
	uint64_t silent_ns;		/* the trainer may be silent this long while it runs */
	uint64_t t0, last_ack, next_join, next_pull, end_at;
	uint32_t finals;		/* last posts sent */
	uint32_t pull_seq;
	struct psb_stale_sampler smp;
	struct psb_stale_msg fin;
	/* what came */
	uint64_t versions;		/* versions taken */
	uint64_t verify_fail;		/* versions not what the trainer makes: not taken */
	uint64_t stray;			/* not from the trainer, or not of its session */
	uint64_t early;			/* versions' packets before it joined: not used */
	uint64_t acks, posts;
	char failure[256];
};

/*
 * A worker's bytes for versions of data_size bytes, when none are given: the newest one,
 * the one being received, held parity and 16 MB more (data_size * 2.5 + 16 MB).
 */
uint64_t psb_stale_client_budget(uint64_t data_size);
/* The receiver's settings of a worker holding its versions in budget bytes (not id, seed). */
void psb_stale_client_recv_cfg(struct psb_mc_recv_cfg *rc, uint64_t budget);

/* 0, or -EINVAL (settings) / -ENOMEM (the receiver). */
int psb_stale_client_init(struct psb_stale_client *c, const struct psb_stale_client_cfg *cfg,
		uint64_t now_ns);
void psb_stale_client_fini(struct psb_stale_client *c);

/*
 * A datagram to the worker's own address from ip:port: the trainer's ACKs, and in pull
 * mode (or as unicast repairs) the versions' packets. From anyone else: stray. now_ns, here
 * and in _group: read after the datagram was received.
 */
void psb_stale_client_input(struct psb_stale_client *c, const uint8_t *buf, size_t len,
		uint32_t ip, uint16_t port, uint64_t now_ns);
/* A datagram to the multicast group (multicast mode). */
void psb_stale_client_group(struct psb_stale_client *c, const uint8_t *buf, size_t len,
		uint64_t now_ns);
/*
 * A version its caller received (filesystem, epgm): taken if newer than the one held and,
 * with verify, checked first (data NULL: not checked). now_ns: read after its data came,
 * never before (the worker's samples count it from then on).
 */
void psb_stale_client_took(struct psb_stale_client *c, uint32_t vid, const uint8_t *data,
		uint64_t len, uint64_t now_ns);

/*
 * Whatever is due by now: joins, samples and posts, pulls, NACKs, the end, the waits.
 * Returns PSB_STALE_CL_CHECK or 0; c->state says when it is over (DONE or FAILED).
 */
int psb_stale_client_step(struct psb_stale_client *c, uint64_t now_ns);
/* When step has something to do next. */
uint64_t psb_stale_client_next_ns(const struct psb_stale_client *c);

static inline int
psb_stale_client_over(const struct psb_stale_client *c)
{
	return c->state == PSB_STALE_CL_DONE || c->state == PSB_STALE_CL_FAILED;
}

#endif /* PSB_STALE_CLIENT_H */
