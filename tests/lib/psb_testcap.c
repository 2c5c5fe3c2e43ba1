/* A capture of emitted messages for cmocka tests (see psb_testcap.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "psb_testcap.h"

static void
cap_add(struct tf_cap *c, const struct psb_addr *to, const struct psb_hdr *h, const void *data,
		size_t len)
{
	struct tf_cap_msg *m;

	assert_true(c->n < TF_CAP_MAX);
	m = &c->m[c->n++];
	m->to = *to;
	m->h = *h;
	m->val = NULL;
	m->val_null = data == NULL;
	if (len != 0) {
		assert_non_null(data);
		m->val = malloc(len);
		assert_non_null(m->val);
		memcpy(m->val, data, len);
	}
}

void
tf_cap_emit(void *arg, const struct psb_addr *to, struct psb_hdr *h, const void *value)
{
	cap_add(arg, to, h, value, h->total_len);
}

void
tf_cap_emit_seg(void *arg, const struct psb_addr *to, struct psb_hdr *h, const void *payload)
{
	cap_add(arg, to, h, payload, h->seg_len);
}

void
tf_cap_clear(struct tf_cap *c)
{
	unsigned int i;

	for (i = 0; i < c->n; i++)
		free(c->m[i].val);
	c->n = 0;
}
