/*
 * Built, never run: psb.h, the fast path a role's poll loop touches, stands alone, without
 * the application's header (psb_app.h) and what it drags in.
 */
#include "psb.h"

unsigned int psb_fast_path_alone(const struct psb_role_inst *ri);

unsigned int
psb_fast_path_alone(const struct psb_role_inst *ri)
{
	return (unsigned int)ri->cnt.rx_pkts + (unsigned int)sizeof(struct psb_meta);
}
