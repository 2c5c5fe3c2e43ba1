/* The role table: adding a role is one file under roles/ and one line here. */
#include "psb.h"

const struct psb_role *const psb_roles[] = {
	&psb_role_rx,
	&psb_role_tx,
	&psb_role_scheduler,
	&psb_role_agent,
	&psb_role_server,
	&psb_role_worker,
	NULL,
};
