/* What libpsb's client (psb_api.c) and server (psb_server.c) share; not exported. */
#ifndef PSB_API_INT_H
#define PSB_API_INT_H

#include <stddef.h>
#include <stdint.h>

/* The message (printf style) into err, errlen bytes (err may be NULL); returns code. */
int psb_api_fail(char *err, size_t errlen, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* A seg_size option: 0 (none given) or a multiple of 4 a datagram carries; else PSBC_E_INVAL. */
int psb_api_check_seg(unsigned int seg, char *err, size_t errlen);

/* An environment variable as a number in [lo, hi]: 0, 1 when unset, -1 when malformed. */
int psb_api_env_num(const char *name, long lo, long hi, long *v);

/*
 * The local address: given, DMLC_NODE_HOST, DMLC_INTERFACE's (into buf), or NULL (*out:
 * any). 0, or PSBC_E_ENV naming the variable that is wrong.
 */
int psb_api_local_addr(const char *given, char *buf, size_t len, const char **out, char *err,
		size_t errlen);

/*
 * The scheduler's address: given ("IP[:PORT]"), else DMLC_PS_ROOT_URI and
 * DMLC_PS_ROOT_PORT. 0, or PSBC_E_INVAL / PSBC_E_ENV with the reason (why_env: what was
 * not given, when the variables are missing too).
 */
int psb_api_sched_addr(const char *given, const char *why_env, uint32_t *ip, uint16_t *port,
		char *err, size_t errlen);

#endif /* PSB_API_INT_H */
