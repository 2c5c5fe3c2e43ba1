/* Exports: placeholder. */
#include "psb.h"
#include "psb_ctl.h"

int
psb_export_init(struct psb_app *app, char *err, size_t errlen)
{
	RTE_SET_USED(app);
	RTE_SET_USED(err);
	RTE_SET_USED(errlen);
	return 0;
}

void
psb_export_poll(struct psb_app *app, uint64_t now_ns)
{
	RTE_SET_USED(app);
	RTE_SET_USED(now_ns);
}

void
psb_export_fini(struct psb_app *app)
{
	RTE_SET_USED(app);
}
