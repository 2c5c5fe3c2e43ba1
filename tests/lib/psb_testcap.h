/*
 * A capture of the messages a library under test sends through its emit callback
 * (psb_kv_emit_fn, psb_sched_emit_fn), for cmocka tests: each one's address, header and a
 * copy of its bytes. Clear it (tf_cap_clear) to start again and when done.
 */
#ifndef PSB_TESTCAP_H
#define PSB_TESTCAP_H

#include <stdint.h>

#include "psb_proto.h"

#define TF_CAP_MAX	64

struct tf_cap_msg {
	struct psb_addr to;
	struct psb_hdr h;
	uint8_t *val;		/* copy of the bytes sent, NULL when none */
	int val_null;		/* the callback got NULL for them */
};

struct tf_cap {
	struct tf_cap_msg m[TF_CAP_MAX];
	unsigned int n;
};

/* An emit callback (arg: the struct tf_cap) copying a whole value, h->total_len bytes. */
void tf_cap_emit(void *arg, const struct psb_addr *to, struct psb_hdr *h, const void *value);
/* The same copying one segment, h->seg_len bytes. */
void tf_cap_emit_seg(void *arg, const struct psb_addr *to, struct psb_hdr *h,
		const void *payload);
/* Forget what c holds (the copies freed). */
void tf_cap_clear(struct tf_cap *c);

#endif /* PSB_TESTCAP_H */
