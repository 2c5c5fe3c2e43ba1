/* Console: placeholder until the rte_cmdline console lands. */
#include "psb.h"
#include "psb_ctl.h"

int
psb_console_init(struct psb_app *app, const char *file, int interactive)
{
	RTE_SET_USED(app);
	RTE_SET_USED(file);
	RTE_SET_USED(interactive);
	return -ENOTSUP;
}

int
psb_console_poll(struct psb_app *app)
{
	RTE_SET_USED(app);
	return 1;
}

void
psb_console_fini(struct psb_app *app)
{
	RTE_SET_USED(app);
}
