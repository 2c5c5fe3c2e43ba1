/* End-of-run reports: counters of roles, ports and the store, as a table and as JSON. */
#ifndef PSB_REPORT_H
#define PSB_REPORT_H

#include <stdio.h>

struct psb_app;

void psb_report_print(const struct psb_app *app, FILE *out);
/* Written atomically (FILE.tmp + rename). 0 or -errno. */
int psb_report_write_json(const struct psb_app *app, const char *path);

#endif /* PSB_REPORT_H */
