/*
 * The passthrough role's figures as the control plane reads them: its own counts and the
 * RoCE totals, published by the role every 100 ms and at its end, and the queue pairs it
 * tracks, copied out by the role when a reader asks.
 */
#ifndef PSB_PASSTHROUGH_H
#define PSB_PASSTHROUGH_H

#include <stdint.h>

#include "psb_roce_qp.h"

struct psb_pt_stats {
	uint64_t to_host_pkts, to_host_bytes;	/* out of the exception port */
	uint64_t host_dropped;		/* for the host, lost: its port full or down */
	uint64_t from_host_pkts, from_host_bytes;	/* from the exception port, to the wire */
	uint64_t host_held;		/* passes the host's frames waited: its half of tx full */
	uint64_t not_roce;		/* frames passed that were not RoCE */
	/* settings, kept through a reset */
	uint64_t qp_cap;		/* node.roce_qps */
	uint8_t accounting;		/* node.roce_accounting */
};

struct psb_passthrough_view {
	struct psb_pt_stats st;
	struct psb_roce_totals tot;
	uint32_t tracked;		/* queue pairs in the table */
	uint32_t nrows;			/* of them copied out, most packets first */
};

/*
 * What the role published last: v, and up to max of its queue pairs, the busiest, as they
 * are now, into rows (NULL: none; the role is asked for them, and waited for half a second
 * at most). 0; -ENOENT when this node passes nothing through; -EAGAIN when the figures kept
 * changing or the role did not answer; -ENOMEM.
 */
int psb_passthrough_read(struct psb_passthrough_view *v, struct psb_roce_qp *rows,
			 uint32_t max);

#endif
