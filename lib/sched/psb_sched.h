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
};

struct psb_sched_event {
	enum psb_sched_event_kind kind;
	struct psb_addr addr;		/* the node (REGISTERED, REFUSED) */
	int server;			/* 1: server, 0: worker */
	uint16_t rank;			/* REGISTERED: its rank within its role */
	uint16_t nservers, nworkers;	/* registered so far (WORKER_DONE: workers finished,
					 * SERVER_ENDED: servers ended, in nworkers / nservers) */
};

struct psb_sched_cfg {
	uint16_t num_workers;
	uint16_t num_servers;
	/* optional: told of every event, from psb_sched_handle */
	void (*on_event)(void *ctx, const struct psb_sched_event *ev);
	void *ctx;
	/* once every worker finished, leave the servers running (no FINALIZE to them) */
	int keep_serving;
};

struct psb_sched_stats {
	uint64_t registered;
	uint64_t reregistered;
	uint64_t rejected;
	uint64_t barriers_released;
	uint64_t workers_finished;	/* workers that said FINALIZE */
	uint64_t servers_ended;		/* servers that acknowledged the end of the job */
};

/* Send one message (payload of h->seg_len bytes) to `to`. */
typedef void (*psb_sched_emit_fn)(void *arg, const struct psb_addr *to, struct psb_hdr *h,
		const void *payload);

struct psb_sched;

struct psb_sched *psb_sched_create(const struct psb_sched_cfg *cfg);
void psb_sched_free(struct psb_sched *s);

/*
 * Handle REGISTER, BARRIER, FINALIZE (a worker finished: acknowledged; once every worker
 * did, FINALIZE goes to every server unless keep_serving) or FINALIZE_ACK (a server ended)
 * from `from`. 0, or -EINVAL for other messages.
 */
int psb_sched_handle(struct psb_sched *s, const struct psb_hdr *h, const struct psb_addr *from,
		psb_sched_emit_fn emit, void *arg);

/* 1 once every expected node registered. */
int psb_sched_ready(const struct psb_sched *s);
/* 1 once every worker said FINALIZE. */
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
