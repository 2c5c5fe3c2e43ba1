/*
 * psb's fast path: what a role's poll loop touches. A role, its instances, their counters
 * and mailboxes, the metadata a received message carries, handing messages on, the output
 * path. What the application and its control plane hold is psb_app.h.
 */
#ifndef PSB_H
#define PSB_H

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_pause.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "psb_log.h"
#include "psb_proto.h"
#include "psb_sched.h"

#define PSB_MAX_SHARDS		16
#define PSB_MAX_LOCAL_WORKERS	32
#define PSB_MAX_ROLES		(5 + PSB_MAX_SHARDS + PSB_MAX_LOCAL_WORKERS)
#define PSB_ROLE_KINDS		16	/* entries of psb_roles[] at most */
#define PSB_ROLE_RING		4096	/* input ring of a server shard or a worker */
#define PSB_BURST		32
#define PSB_OUT_BUF		64
#define PSB_NEIGH_MAX		256

/* Parsed request metadata kept in each mbuf's private area. */
struct psb_meta {
	struct psb_hdr hdr;
	struct psb_addr src;
	uint16_t payload_off;
	uint16_t in_port;
	uint32_t dst_ip;	/* PSB_FRAME_UDP: this node's address or its multicast group */
};

static inline struct psb_meta *
psb_meta(struct rte_mbuf *m)
{
	return (struct psb_meta *)rte_mbuf_to_priv(m);
}

/*
 * Counters of one role instance: written only by the lcore running it, summed by readers.
 * One line each in the descriptor table of psb_counters.c, which every export walks.
 *
 * Every frame the rx role takes from a port ends in exactly one of: a drop reason, handed,
 * not_served, ring_full, no_mbuf, arp_replies, arp_learned, icmp_replies, byes, bye_ignored,
 * to_host.
 */
struct psb_counters {
	uint64_t rx_pkts;
	uint64_t rx_bytes;
	uint64_t tx_pkts;
	uint64_t tx_bytes;
	uint64_t drops[PSB_DROP_MAX];
	uint64_t handed;	/* received messages handed to the role serving them */
	uint64_t not_served;	/* valid psb frame for a role this node does not run */
	uint64_t ring_full;	/* received messages lost: the serving role's ring was full */
	uint64_t to_host;	/* frames not psb's handed to the passthrough role, for the host */
	uint64_t no_mbuf;	/* pool empty */
	uint64_t tx_ring_full;	/* packets built to send, lost: the transmit ring was full */
	uint64_t tx_backlog;	/* packets the port did not take at once */
	uint64_t paused_drops;	/* packets for a port that was paused */
	uint64_t full_drops;	/* packets a shared-memory client's full ring did not take */
	uint64_t byes;		/* BYEs accepted: from a known peer to the data port */
	uint64_t bye_ignored;	/* BYEs from unknown sources or to other ports: not acted upon */
	uint64_t bye_lost;	/* accepted BYEs a server shard could not be told of */
	uint64_t arp_replies;
	uint64_t arp_learned;	/* ARP replies received: their sender learnt, nothing sent */
	uint64_t icmp_replies;
	uint64_t refused;	/* requests the role would not serve: out of its bounds */
	uint64_t rate_limited;	/* requests the role dropped: its rate budget was spent */
	uint64_t busy_cycles;
	uint64_t idle_cycles;
	uint64_t polls;
} __rte_cache_aligned;

struct psb_neigh {
	uint32_t ip;
	uint8_t mac[6];
	uint16_t port;
	volatile int valid;
};

struct psb_role_inst;

/* Control requests to roles, carried out by the role on its own lcore. */
enum psb_role_op {
	PSB_OP_START = 1,	/* arg: the experiment (struct psb_exp_conf): the role copies it */
	PSB_OP_STOP,		/* end the running experiment now */
	PSB_OP_RESET,		/* zero metrics and state (the generic counters are zeroed for it) */
	PSB_OP_SET,		/* arg: the experiment with live parameters changed: copied too */
};

/*
 * A mailbox of one slot per role instance: the main lcore fills op/arg and bumps req;
 * the role's lcore notices req != ack between passes, carries the request out and
 * publishes ack. The fast path only ever reads one line that rarely changes.
 */
struct psb_role_mbox {
	volatile uint32_t req;
	volatile uint32_t ack;
	int op;
	const void *arg;
	int rc;
} __rte_cache_aligned;

struct psb_app;

/*
 * A role: what planning needs (how many instances this node runs, the size of each one's
 * input ring), which received traffic psb_dispatch hands it, and its life on an lcore.
 * Planning, ring creation and dispatch walk psb_roles[] (roles/roles.c).
 */
struct psb_role {
	const char *name;
	/* Instances this node runs (0: none), from its settings; NULL: one on every node. */
	unsigned int (*count)(const struct psb_app *app);
	/*
	 * Each instance's input ring, a power of two (0: none): ring, or ring_size() when
	 * it depends on the node.
	 */
	unsigned int ring;
	unsigned int (*ring_size)(const struct psb_app *app);
	/*
	 * Dispatch: the instance that takes the message f (parsed, for this node), -1 for none,
	 * or PSB_ROLE_DELIVER: deliver() hands it on itself (split, copied). Asked in table
	 * order, also on nodes that do not run the role; the first role that claims a message
	 * owns it: it gets it, or where it does not run the message is not served. NULL: no
	 * received traffic.
	 */
	int (*claim)(const struct psb_app *app, const struct psb_frame *f);
	/*
	 * Where claim can say yes, so that dispatch asks it only there: destination ports
	 * [lo, hi] set by ports() (NULL: this node's data port alone), and message types
	 * types[0..ntypes) of any version (NULL: every type). Fixed once planned; claim
	 * decides within them and says -1 outside.
	 */
	void (*ports)(const struct psb_app *app, uint16_t *lo, uint16_t *hi);
	const uint8_t *types;
	unsigned int ntypes;
	/*
	 * udp: the role takes datagrams of another protocol than psb's (PSB_FRAME_UDP) at its
	 * ports() instead of psb messages; claim sees f->payload whole, f->hdr not filled.
	 * group(): the multicast group it receives (0: none), asked where the role runs.
	 */
	int udp;
	uint32_t (*group)(const struct psb_app *app);
	/* For PSB_ROLE_DELIVER: 0 or -errno as for a ring (-ENOBUFS full, -ENOMEM). */
	int (*deliver)(struct psb_role_inst *rx, struct rte_mbuf *m, const struct psb_frame *f);
	int (*init)(struct psb_role_inst *ri);
	/* One pass; returns the number of packets/events handled (0: idle). */
	int (*poll)(struct psb_role_inst *ri);
	void (*fini)(struct psb_role_inst *ri);
	/* A control request (enum psb_role_op), on the role's lcore; 0 or -errno. May be NULL. */
	int (*ctl)(struct psb_role_inst *ri, int op, const void *arg);
};

#define PSB_ROLE_DELIVER	(-2)

struct psb_role_inst {
	struct psb_counters cnt;
	const struct psb_role *role;
	struct psb_app *app;
	int idx;		/* shard or local worker index */
	unsigned int lcore;
	void *priv;
	struct rte_ring *ring;	/* its input (psb_role_ring), or NULL */
	/* its lcore slept since it last cleared this (node.idle): a clock it kept is stale */
	uint8_t slept;
	uint16_t ntx;
	struct rte_mbuf *txbuf[PSB_OUT_BUF];
	uint16_t nhost;			/* the rx role: frames for the passthrough role */
	struct rte_mbuf *hostbuf[PSB_BURST];
	struct psb_role_mbox mbox;
} __rte_cache_aligned;

/*
 * A datagram of another protocol handed to its role (PSB_FRAME_UDP), counted as received:
 * its payload, *len bytes (the parser checked the UDP length against the frame); NULL when
 * it is not whole in its first segment.
 */
static inline const uint8_t *
psb_udp_take(struct psb_role_inst *ri, struct rte_mbuf *m, size_t *len)
{
	const struct psb_meta *meta = (const struct psb_meta *)rte_mbuf_to_priv(m);
	const uint8_t *p = rte_pktmbuf_mtod_offset(m, const uint8_t *, meta->payload_off);

	ri->cnt.rx_pkts++;
	ri->cnt.rx_bytes += m->pkt_len;
	*len = (size_t)((p[-4] << 8) | p[-3]) - 8;	/* the UDP header's length, less itself */
	if (m->nb_segs != 1 || meta->payload_off + *len > m->data_len)
		return NULL;
	return p;
}

/*
 * A sequence lock over figures one lcore publishes and others read: odd while being
 * written. The writer brackets its writes with psb_seq_write_begin/end; psb_seq_read copies
 * the figures' two parts (d2 NULL: the first alone) as one: 0, or -EAGAIN if they kept
 * changing.
 */
static inline void
psb_seq_write_begin(volatile uint32_t *seq)
{
	__atomic_store_n(seq, *seq + 1, __ATOMIC_RELAXED);
	rte_smp_wmb();
}

static inline void
psb_seq_write_end(volatile uint32_t *seq)
{
	rte_smp_wmb();
	__atomic_store_n(seq, *seq + 1, __ATOMIC_RELEASE);
}

static inline int
psb_seq_read(const volatile uint32_t *seq, void *d1, const void *s1, size_t l1, void *d2,
		const void *s2, size_t l2)
{
	uint32_t s0, tries;

	for (tries = 0; tries < 1000; tries++) {
		s0 = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
		if (s0 & 1) {
			rte_pause();
			continue;
		}
		memcpy(d1, s1, l1);
		if (d2 != NULL)
			memcpy(d2, s2, l2);
		rte_smp_rmb();
		if (__atomic_load_n(seq, __ATOMIC_ACQUIRE) == s0)
			return 0;
	}
	return -EAGAIN;
}

/* The role table (roles/roles.c). */
extern const struct psb_role psb_role_rx;
extern const struct psb_role psb_role_tx;
extern const struct psb_role psb_role_server;
extern const struct psb_role psb_role_worker;
extern const struct psb_role psb_role_scheduler;
extern const struct psb_role psb_role_agent;
extern const struct psb_role psb_role_echo;
extern const struct psb_role psb_role_receiver;
extern const struct psb_role psb_role_trainer;
extern const struct psb_role psb_role_passthrough;
extern const struct psb_role *const psb_roles[];	/* NULL-terminated */

/* A role's fini when all it holds is ri->priv, from rte_malloc. */
void psb_role_free_priv(struct psb_role_inst *ri);
/* A claim that takes every message at its role's ports (instance 0): its run sorts them out. */
int psb_claim_any(const struct psb_app *app, const struct psb_frame *f);

/* Queue m for the role reading r: 0, or -ENOENT (no such role here), -ENOBUFS (ring full). */
static inline int
psb_handoff(struct rte_ring *r, struct rte_mbuf *m)
{
	if (r == NULL) {
		rte_pktmbuf_free(m);
		return -ENOENT;
	}
	if (rte_ring_enqueue(r, m) != 0) {
		rte_pktmbuf_free(m);
		return -ENOBUFS;
	}
	return 0;
}

/* What became of a message handed on, counted once whatever it was split into. */
static inline void
psb_handoff_count(struct psb_role_inst *ri, int rc)
{
	if (rc == 0)
		ri->cnt.handed++;
	else if (rc == -ENOENT)
		ri->cnt.not_served++;
	else if (rc == -ENOBUFS)
		ri->cnt.ring_full++;
	else
		ri->cnt.no_mbuf++;
}

/* The output path (psb_out.c). To dst_ip: the tx role, or a role of this process. */
int psb_out(struct psb_role_inst *ri, struct rte_mbuf *m, uint32_t dst_ip);
/* Count m and queue it for the transmitter, out of the port m->port names. */
void psb_out_port(struct psb_role_inst *ri, struct rte_mbuf *m);
void psb_out_flush(struct psb_role_inst *ri);
/* Room for n more packets toward the transmitter right now. */
int psb_out_room(struct psb_role_inst *ri, unsigned int n);
/* Build one psb message into a new mbuf; NULL when the pool is empty. */
struct rte_mbuf *psb_build(struct psb_role_inst *ri, const struct psb_addr *src,
		const struct psb_addr *dst, const struct psb_hdr *h, const void *payload);
const struct psb_neigh *psb_neigh_find(const struct psb_app *app, uint32_t ip);
/* Send an ARP request for ip out of every port. */
void psb_arp_resolve(struct psb_role_inst *ri, uint32_t ip);
/*
 * ip's neighbour, or NULL while it is unknown: then ARP is asked for it, at most every
 * PSB_ARP_RETRY_NS by the caller's *next_arp_ns (now: the caller's clock).
 */
#define PSB_ARP_RETRY_NS	(100ull * 1000 * 1000)
const struct psb_neigh *psb_neigh_or_arp(struct psb_role_inst *ri, uint32_t ip, uint64_t now,
		uint64_t *next_arp_ns);
/*
 * A datagram of another protocol than psb's (hdr then payload) from src to dst, out of
 * port, for the transmitter: 0, or -EAGAIN with no packet buffer now (counted no_mbuf).
 */
int psb_out_udp(struct psb_role_inst *ri, const struct psb_addr *src, const struct psb_addr *dst,
		uint16_t port, const void *hdr, unsigned int hlen, const void *payload,
		unsigned int plen);

/* Registration with the scheduler (roles/agent.c), used by servers and workers. */
enum psb_agent_state {
	PSB_AGENT_RESOLVE,	/* ARP for the scheduler */
	PSB_AGENT_REGISTER,	/* REGISTER until REGISTER_ACK */
	PSB_AGENT_BARRIER,	/* BARRIER until BARRIER_ACK */
	PSB_AGENT_READY,
};

struct psb_agent {
	enum psb_agent_state state;
	int server;
	uint16_t src_port;
	uint16_t rank;
	uint32_t barrier_group;
	uint64_t next_try_ns;
	uint64_t phase_ns;		/* the current wait began (0: at the next step) */
	uint32_t tries;
	uint32_t idle_passes;
	struct psb_sched_view view;
	int ended;			/* server: the scheduler said the job is over */
	int rejoin;			/* REGISTER_ACK said: this rank was in the job already */
	uint64_t end_ns;		/* then: quit at this time (0: not) */
	uint64_t beat_next_ns;		/* the next HEARTBEAT */
};

void psb_agent_init(struct psb_agent *ag, struct psb_app *app, int server, uint16_t src_port);
/* Drive registration; returns 1 once ready. */
int psb_agent_step(struct psb_agent *ag, struct psb_role_inst *ri, uint64_t now_ns);
/*
 * Send a scheduler message of this node (REGISTER, BARRIER, FINALIZE, FINALIZE_ACK,
 * HEARTBEAT). REGISTER carries the server's epoch, and says whether it sends HEARTBEATs.
 */
void psb_agent_send(struct psb_agent *ag, struct psb_role_inst *ri, uint8_t type);
/* Feed a REGISTER_ACK / BARRIER_ACK. */
void psb_agent_input(struct psb_agent *ag, struct psb_app *app, const struct psb_meta *meta,
		const uint8_t *payload);
/*
 * 1 when the current wait (ARP, REGISTER or BARRIER) has lasted --connect-timeout; what
 * then says who did not answer what, for how long. psb_agent_restart starts a new wait.
 */
int psb_agent_expired(const struct psb_agent *ag, const struct psb_app *app, uint64_t now_ns,
		char *what, size_t len);
void psb_agent_restart(struct psb_agent *ag);
/* Once registered: a HEARTBEAT to the scheduler every --heartbeat (none when 0). */
void psb_agent_beat(struct psb_agent *ag, struct psb_role_inst *ri, uint64_t now_ns);

struct psb_kv;
/* Store of a server shard role (roles/server.c). */
const struct psb_kv *psb_server_kv(const struct psb_role_inst *ri);
const struct psb_sched *psb_scheduler_sched(const struct psb_role_inst *ri);

/* Live state a worker role publishes (roles/worker.c), read by the control plane. */
struct psb_bench_result;
struct psb_worker_pub {
	uint32_t exp_id;		/* experiment these figures belong to (0: none yet) */
	int running;
	int done;			/* exp_id finished: result is final */
	int rc;				/* 0, or <0 when it failed */
	uint64_t repeat;
	int warming;			/* still in the warm-up iterations */
	char reason[256];		/* rc < 0: what failed, naming who did not answer */
};
/* Consistent copy of worker ri's figures; 0, or -EAGAIN if it kept changing. */
int psb_worker_read(const struct psb_role_inst *ri, struct psb_worker_pub *pub,
		struct psb_bench_result *r);

/*
 * Live state the staleness roles publish (roles/receiver.c, roles/trainer.c): a staleness
 * worker's or trainer's run, read by the control plane. figures: the role's counts (struct
 * psb_stale_snap, struct psb_trainer_snap).
 */
struct psb_stale_snap;
struct psb_trainer_snap;
struct psb_stale_pub {
	uint32_t exp_id;		/* experiment these figures belong to (0: none yet) */
	int done;			/* exp_id ended: figures final */
	int rc;				/* 0, or <0 when it failed */
	char reason[256];		/* rc < 0: why, naming who did not answer */
};
/* Consistent copy of receiver ri's state; 0, or -EAGAIN if it kept changing. */
int psb_receiver_read(const struct psb_role_inst *ri, struct psb_stale_pub *pub,
		struct psb_stale_snap *figures);
int psb_trainer_read(const struct psb_role_inst *ri, struct psb_stale_pub *pub,
		struct psb_trainer_snap *figures);

/* A worker as the trainer saw it: a row of the trainer's results. */
struct psb_trainer_row {
	uint32_t worker;
	uint32_t ip;			/* 0: it never joined */
	uint16_t port;
	uint8_t holds_final;
	uint32_t holds;			/* the version its last post said it held */
	uint64_t posts, samples;
	double version_difference, window_staleness, window_staleness_max;
};
/*
 * The trainer's rows, one per worker, once psb_trainer_read said done (final until the
 * role is started again); NULL when it has none.
 */
const struct psb_trainer_row *psb_trainer_rows(const struct psb_role_inst *ri, uint32_t *n);
/* Its posts, each a line of staleness.csv, with what the plot needs; as the rows. */
struct psb_stale_point;
struct psb_trainer_series {
	struct psb_stale_point *pts;	/* [n] */
	uint32_t n;
	uint64_t dropped;		/* posts past its bound: not kept */
	uint64_t t0_ns;			/* publishing began */
	double dur_s;
	uint64_t max_time_ns;
	uint32_t workers;
};
const struct psb_trainer_series *psb_trainer_series(const struct psb_role_inst *ri);

#endif /* PSB_H */
