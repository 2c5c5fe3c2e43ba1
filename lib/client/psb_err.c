/* Errors as the client library's calls report them. */
#include <stdarg.h>
#include <stdio.h>

#include "psb_err.h"

void
psb_set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}
