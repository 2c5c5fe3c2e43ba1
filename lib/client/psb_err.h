/* Errors as the client library's calls report them: a message into the caller's buffer. */
#ifndef PSB_ERR_H
#define PSB_ERR_H

#include <stddef.h>

/* Format into err (errlen bytes; nothing when err is NULL or errlen 0). */
void psb_set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* PSB_ERR_H */
