/* RoCE accounting as JSON: a QP's row and the totals, the same keys in every export. */
#ifndef PSB_ROCE_JSON_H
#define PSB_ROCE_JSON_H

#include "psb_roce_qp.h"

struct json_t;

/* {"version", "qpn", "src", "dst", "pkts", "bytes", "ops": {...}, "naks": {...},
 *  "psn_missing", "psn_dup", "ecn_ce", "becn", "icrc_bad"}; NULL if out of memory */
struct json_t *psb_roce_qp_json(const struct psb_roce_qp *q);
/* {"v1", "v2_ip4", "v2_ip6", "bytes", "malformed", "icrc_bad", "ops", "naks", "psn_missing",
 *  "psn_dup", "ecn_ce", "becn", "qp_new", "qp_evicted", "qp_tracked"} */
struct json_t *psb_roce_totals_json(const struct psb_roce_totals *t);

#endif
