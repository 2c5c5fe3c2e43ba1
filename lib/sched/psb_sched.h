/* Scheduler (ps-lite's): nodes register, get ranks and server key ranges, and barrier. */
#ifndef PSB_SCHED_H
#define PSB_SCHED_H

#include <stdint.h>

#include "psb_proto.h"

#define PSB_SCHED_MAX_NODES	256

/* Barrier groups, as ps-lite numbers them. */
#define PSB_GROUP_SCHEDULER	1
#define PSB_GROUP_SERVERS	2
#define PSB_GROUP_WORKERS	4

/* One server as announced in REGISTER_ACK. */
struct psb_sched_server {
	uint32_t ip;
	uint16_t port;
	uint64_t key_begin;	/* first key owned */
	uint64_t key_end;	/* one past the last key owned (UINT64_MAX: to the end) */
};

/* REGISTER_ACK payload: the whole cluster view. */
struct psb_sched_view {
	uint16_t num_servers;
	uint16_t num_workers;
	struct psb_sched_server servers[PSB_SCHED_MAX_NODES];
};

/* What happened to the cluster, for the operator's log. */
enum psb_sched_event_kind {
	PSB_SCHED_EV_REGISTERED,	/* a new node took a rank */
	PSB_SCHED_EV_READY,		/* every expected node is there: views sent */
	PSB_SCHED_EV_REFUSED,		/* a REGISTER with no place (the role is full) */
	PSB_SCHED_EV_WORKER_DONE,	/* a worker said FINALIZE: its run is over */
	PSB_SCHED_EV_FINISHED,		/* every worker did: the job is over */
	PSB_SCHED_EV_SERVER_ENDED,	/* a server acknowledged the end of the job */
	PSB_SCHED_EV_DEAD,		/* a watched node was silent for dead_after_ns */
	PSB_SCHED_EV_BACK,		/* a node held dead spoke again */
	PSB_SCHED_EV_RESTARTED,		/* a server registered again from a new incarnation */
};

struct psb_sched_event {
	enum psb_sched_event_kind kind;
	struct psb_addr addr;		/* the node (REGISTERED, REFUSED) */
	int server;			/* 1: server, 0: worker */
	uint16_t rank;			/* REGISTERED: its rank within its role */
	uint16_t nservers, nworkers;	/* registered so far (WORKER_DONE: workers finished,
					 * SERVER_ENDED: servers ended, in nworkers / nservers) */
	uint64_t silent_ns;		/* DEAD, BACK: how long nothing came from it */
};

struct psb_sched_cfg {
	uint16_t num_workers;
	uint16_t num_servers;
	/* optional: told of every event, from psb_sched_handle */
	void (*on_event)(void *ctx, const struct psb_sched_event *ev);
	void *ctx;
	/* once every worker finished, leave the servers running (no FINALIZE to them) */
	int keep_serving;
	/*
	 * Liveness: a node that said it sends HEARTBEATs (PSB_F_BEATS on REGISTER, or a
	 * HEARTBEAT) and then sends nothing for dead_after_ns is dead (0: never). A dead or
	 * restarted server is lost: every HEARTBEAT_ACK to a worker names it.
	 */
	uint64_t dead_after_ns;
};

/* HEARTBEAT_ACK payload: the servers the job lost, and why. */
#define PSB_SCHED_LOST_DEAD		1	/* silent for dead_after_ns */
#define PSB_SCHED_LOST_RESTARTED	2	/* registered again: what it stored is gone */
#define PSB_SCHED_LOST_MAX		64	/* entries one HEARTBEAT_ACK carries */
#define PSB_SCHED_LOST_ENTRY		16

struct psb_sched_lost {
	uint16_t rank;			/* the server's rank */
	uint8_t why;			/* PSB_SCHED_LOST_* */
	struct psb_addr addr;		/* ip and port */
	uint32_t silent_ms;		/* DEAD: how long it had been silent */
};

struct psb_sched_stats {
	uint64_t registered;
	uint64_t reregistered;
	uint64_t rejected;
	uint64_t barriers_released;
	uint64_t workers_finished;	/* workers that said FINALIZE */
	uint64_t servers_ended;		/* servers that acknowledged the end of the job */
	uint64_t heartbeats;		/* HEARTBEATs from known nodes */
	uint64_t servers_dead;		/* servers held dead (silent for dead_after_ns) */
	uint64_t workers_dead;		/* the same, workers (each time) */
	uint64_t servers_restarted;	/* servers that registered again from a new process */
};

/* Send one message (payload of h->seg_len bytes) to `to`. */
typedef void (*psb_sched_emit_fn)(void *arg, const struct psb_addr *to, struct psb_hdr *h,
		const void *payload);

struct psb_sched;

struct psb_sched *psb_sched_create(const struct psb_sched_cfg *cfg);
void psb_sched_free(struct psb_sched *s);

/*
 * Handle REGISTER (req_id: the node's epoch, 0 if it has none: a known server's REGISTER
 * with another epoch is a restart), BARRIER, FINALIZE (a worker finished: acknowledged;
 * once every worker did, FINALIZE goes to every server unless keep_serving), FINALIZE_ACK
 * (a server ended) or HEARTBEAT (answered with HEARTBEAT_ACK: the lost servers) from
 * `from`. 0, or -EINVAL for other messages.
 */
int psb_sched_handle(struct psb_sched *s, const struct psb_hdr *h, const struct psb_addr *from,
		psb_sched_emit_fn emit, void *arg);

/*
 * The scheduler's clock: messages handled from here on are seen at now_ns. Watched nodes
 * silent for dead_after_ns are held dead (an event each). A gap since the last call longer
 * than half of dead_after_ns is the scheduler's own stall, not its nodes': it blames none.
 * Returns how many servers are lost (dead or restarted).
 */
unsigned int psb_sched_tick(struct psb_sched *s, uint64_t now_ns);

/* The servers lost, at most n of them into out; returns how many there are in all. */
unsigned int psb_sched_lost(const struct psb_sched *s, struct psb_sched_lost *out,
		unsigned int n);
/* Encode / decode a HEARTBEAT_ACK payload (lost servers); encode returns bytes written. */
size_t psb_sched_lost_encode(const struct psb_sched_lost *l, unsigned int n, uint8_t *out,
		size_t cap);
/* -EINVAL when malformed; else how many entries (at most n) went into out. */
int psb_sched_lost_decode(struct psb_sched_lost *out, unsigned int n, const uint8_t *in,
		size_t len);

/* 1 once every expected node registered. */
int psb_sched_ready(const struct psb_sched *s);
/* 1 once every worker said FINALIZE, or is dead while the others did. */
int psb_sched_finished(const struct psb_sched *s);
/*
 * Send FINALIZE again to every server that has not acknowledged it (the first went when
 * the last worker finished). Returns how many have not; 0 also with keep_serving.
 */
unsigned int psb_sched_end_servers(struct psb_sched *s, psb_sched_emit_fn emit, void *arg);
const struct psb_sched_stats *psb_sched_stats(const struct psb_sched *s);

/* ps-lite's range partition of the key space over n servers. */
void psb_sched_key_range(uint16_t server, uint16_t n, uint64_t *begin, uint64_t *end);

/* Encode / decode the REGISTER_ACK payload; encode returns bytes written. */
size_t psb_sched_view_encode(const struct psb_sched_view *v, uint8_t *out, size_t cap);
int psb_sched_view_decode(struct psb_sched_view *v, const uint8_t *in, size_t len);
/* Bytes of an encoded view with n servers. */
static inline size_t
psb_sched_view_size(uint16_t n)
{
	return 4 + (size_t)n * 24;
}

#endif /* PSB_SCHED_H */
