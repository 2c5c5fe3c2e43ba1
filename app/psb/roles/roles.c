/* The role table: adding a role is one file under roles/ and one line here. */
#include <rte_malloc.h>

#include "psb_app.h"

/*
 * Claims are asked in this order, on every node. The worker's ports are its own: asked
 * first, a worker's answers pass no other claim. The server takes every request at the
 * data port that no earlier role claimed. The receiver's and the trainer's datagrams are
 * not psb's: they never reach a claim of psb messages.
 */
const struct psb_role *const psb_roles[] = {
	&psb_role_rx,
	&psb_role_tx,
	&psb_role_worker,
	&psb_role_scheduler,
	&psb_role_agent,
	&psb_role_echo,
	&psb_role_receiver,
	&psb_role_trainer,
	&psb_role_passthrough,
	&psb_role_server,
	NULL,
};

void
psb_role_free_priv(struct psb_role_inst *ri)
{
	rte_free(ri->priv);
	ri->priv = NULL;
}

int
psb_claim_any(const struct psb_app *app, const struct psb_frame *f)
{
	(void)app;
	(void)f;
	return 0;
}
