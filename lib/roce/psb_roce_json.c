/* The per-QP rows and the totals of RoCE accounting as JSON, as every export shows them. */
#include <jansson.h>

#include "psb_roce_json.h"

static json_t *
named(const uint64_t *v, const char *const *names, unsigned int n)
{
	json_t *o = json_object();
	unsigned int i;

	for (i = 0; i < n; i++)
		json_object_set_new(o, names[i], json_integer((json_int_t)v[i]));
	return o;
}

json_t *
psb_roce_qp_json(const struct psb_roce_qp *q)
{
	char src[64], dst[64];

	psb_roce_addr_str(q->key.src, src, sizeof(src));
	psb_roce_addr_str(q->key.dst, dst, sizeof(dst));
	return json_pack("{s:s, s:I, s:s, s:s, s:I, s:I, s:o, s:o, s:I, s:I, s:I, s:I, s:I}",
		"version", psb_roce_kind_names[q->key.kind < PSB_ROCE_KINDS ? q->key.kind : 0],
		"qpn", (json_int_t)q->key.dqpn, "src", src, "dst", dst,
		"pkts", (json_int_t)q->st.pkts, "bytes", (json_int_t)q->st.bytes,
		"ops", named(q->st.ops, psb_roce_class_names, PSB_ROCE_CLASSES),
		"naks", named(q->st.naks, psb_roce_nak_names, PSB_ROCE_NAKS),
		"psn_missing", (json_int_t)q->st.psn_missing, "psn_dup", (json_int_t)q->st.psn_dup,
		"ecn_ce", (json_int_t)q->st.ecn_ce, "becn", (json_int_t)q->st.becn,
		"icrc_bad", (json_int_t)q->st.icrc_bad);
}

json_t *
psb_roce_totals_json(const struct psb_roce_totals *t)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I, "
			 "s:I}",
		"v1", (json_int_t)t->frames[PSB_ROCE_V1],
		"v2_ip4", (json_int_t)t->frames[PSB_ROCE_V2_IP4],
		"v2_ip6", (json_int_t)t->frames[PSB_ROCE_V2_IP6],
		"bytes", (json_int_t)t->bytes, "malformed", (json_int_t)t->malformed,
		"icrc_bad", (json_int_t)t->icrc_bad,
		"ops", named(t->ops, psb_roce_class_names, PSB_ROCE_CLASSES),
		"naks", named(t->naks, psb_roce_nak_names, PSB_ROCE_NAKS),
		"psn_missing", (json_int_t)t->psn_missing, "psn_dup", (json_int_t)t->psn_dup,
		"ecn_ce", (json_int_t)t->ecn_ce, "becn", (json_int_t)t->becn,
		"qp_new", (json_int_t)t->qp_new, "qp_evicted", (json_int_t)t->qp_evicted,
		"qp_tracked", (json_int_t)t->qp_tracked);
}
