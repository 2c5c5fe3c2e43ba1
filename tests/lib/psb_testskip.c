/* Skips that count: recorded, printed, and the program's exit 77 when nothing failed. */
#include <stdarg.h>
#include <stdio.h>

#include "psb_testskip.h"

#define KEEP	16		/* reasons said again at the end */

static char reasons[KEEP][200];
static unsigned int nskips;

void
tf_skipped(const char *fmt, ...)
{
	char why[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	printf("skipped: %s\n", why);
	fflush(stdout);
	if (nskips < KEEP)
		snprintf(reasons[nskips], sizeof(reasons[nskips]), "%s", why);
	nskips++;
}

unsigned int
tf_skips(void)
{
	return nskips;
}

int
tf_exit_status(int failed)
{
	unsigned int i;

	if (failed != 0)
		return 1;		/* not the count: 77 failures would read as a skip */
	if (nskips == 0)
		return 0;
	for (i = 0; i < nskips && i < KEEP; i++)
		printf("skipped: %s\n", reasons[i]);
	if (nskips > KEEP)
		printf("skipped: %u more\n", nskips - KEEP);
	printf("%u skipped, none failed: exit %d (SKIP)\n", nskips, TF_SKIP_EXIT);
	return TF_SKIP_EXIT;
}
