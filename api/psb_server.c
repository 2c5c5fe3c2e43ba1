/*
 * psb's server API (psb/server.h): lib/ksrv's server in handler mode, its requests handed
 * to the program, its answers taken from any thread under one lock.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "psb/server.h"
#include "psb_api_int.h"
#include "psb_clock.h"
#include "psb_ksrv.h"
#include "psb_udp.h"

#define DEF_REG_MS		60000u
#define DEF_MAX_VALUE		(16u << 20)	/* floats: 64 MiB */
#define DEF_SOCKBUF		(16u << 20)
#define REASM_TIMEOUT_NS	2000000000ull

struct psbs {
	struct psb_ksrv *srv;
	pthread_mutex_t mu;		/* recursive: psbs_respond inside the handler */
	psbs_handler handler;
	void *arg;
	char err[512];
};

void
psbs_opts_init(struct psbs_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->api = PSBC_API_VERSION;
}

/* The address the route to ip:port leaves from, into buf: 0, or -1. */
static int
route_src(uint32_t ip, uint16_t port, char *buf, size_t len)
{
	struct sockaddr_in sa, me;
	socklen_t ml = sizeof(me);
	int fd = socket(AF_INET, SOCK_DGRAM, 0), rc = -1;

	if (fd < 0)
		return -1;
	psb_udp_sa(&sa, ip, port);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&me, &ml) == 0 &&
	    inet_ntop(AF_INET, &me.sin_addr, buf, (socklen_t)len) != NULL)
		rc = 0;
	close(fd);
	return rc;
}

/* lib/kv hands a request over: to the program's handler, as the API's request. */
static void
on_request(void *arg, const struct psb_kv_req *kr)
{
	psbs_t *s = arg;
	struct psbs_request r;

	memset(&r, 0, sizeof(r));
	r.key = kr->key;
	r.op = kr->type == PSB_MSG_PUSH ? PSBS_PUSH : kr->type == PSB_MSG_PULL ? PSBS_PULL :
		PSBS_PUSHPULL;
	r.sender = kr->sender;
	r.sync = (kr->flags & PSB_F_SYNC) != 0;
	r.round = kr->round;
	if (kr->type != PSB_MSG_PULL) {
		r.vals = kr->value;
		r.nvals = kr->len / sizeof(float);
	}
	r.id[0] = kr->req_id;
	r.id[1] = kr->epoch;
	s->handler(s, &r, s->arg);
}

static int
sfail(psbs_t *s, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
	return code;
}

int
psbs_open(psbs_t **out, const struct psbs_opts *o, psbs_handler handler, void *arg,
		char *err, size_t errlen)
{
	struct psbs_opts def;
	struct psb_ksrv_cfg kc;
	pthread_mutexattr_t ma;
	char ifip[INET_ADDRSTRLEN], route[INET_ADDRSTRLEN], why[512];
	const char *lip = NULL;
	uint32_t sip = 0;
	uint16_t sport = 0;
	psbs_t *s;
	int rc;

	if (err != NULL && errlen != 0)
		err[0] = '\0';
	if (out == NULL || handler == NULL)
		return psb_api_fail(err, errlen, PSBC_E_INVAL, "%s is NULL",
			out == NULL ? "out" : "handler");
	*out = NULL;
	if (o == NULL) {
		psbs_opts_init(&def);
		o = &def;
	}
	if (o->api != PSBC_API_VERSION)
		return psb_api_fail(err, errlen, PSBC_E_INVAL,
			"opts.api is %u, this library speaks %u: call psbs_opts_init", o->api,
			PSBC_API_VERSION);
	if (o->port > 65535)
		return psb_api_fail(err, errlen, PSBC_E_INVAL, "port %u is not a port", o->port);
	if (o->max_value > PSBC_MAX_VALUE)
		return psb_api_fail(err, errlen, PSBC_E_INVAL, "max_value %u floats: at most %u",
			o->max_value, PSBC_MAX_VALUE);
	if (psb_api_check_seg(o->seg_size, err, errlen) != 0)
		return PSBC_E_INVAL;
	if (o->num_workers > PSB_KV_MAX_WORKERS)
		return psb_api_fail(err, errlen, PSBC_E_INVAL, "num_workers %u: at most %u",
			o->num_workers, PSB_KV_MAX_WORKERS);
	/* a scheduler given, or named by the environment; else none */
	if (o->scheduler != NULL || getenv("DMLC_PS_ROOT_URI") != NULL) {
		rc = psb_api_sched_addr(o->scheduler, "no scheduler given", &sip, &sport, err,
			errlen);
		if (rc != 0)
			return rc;
	}
	rc = psb_api_local_addr(o->local_ip, ifip, sizeof(ifip), &lip, err, errlen);
	if (rc != 0)
		return rc;
	if (lip == NULL && sip != 0) {
		/* the scheduler announces this address: one the workers can reach */
		if (route_src(sip, sport, route, sizeof(route)) != 0)
			return psb_api_fail(err, errlen, PSBC_E_UNREACHABLE,
				"no route to the scheduler %s:%u", inet_ntop(AF_INET,
				&(struct in_addr){ htonl(sip) }, ifip, sizeof(ifip)), sport);
		lip = route;
	}
	memset(&kc, 0, sizeof(kc));
	if (lip != NULL && psb_parse_ip(lip, &kc.ip) != 0)
		return psb_api_fail(err, errlen, PSBC_E_INVAL, "local_ip '%s' is not an IPv4 "
			"address", lip);
	kc.port = (uint16_t)o->port;
	kc.sockbuf = DEF_SOCKBUF;
	kc.reg_ip = sip;
	kc.reg_port = sport;
	kc.reg_timeout_ns = (uint64_t)(o->connect_timeout_ms != 0 ? o->connect_timeout_ms :
		DEF_REG_MS) * 1000000ull;
	kc.num_workers = (uint16_t)(o->num_workers != 0 ? o->num_workers : 1);
	kc.seg_size = (uint16_t)(o->seg_size != 0 ? o->seg_size : psb_seg_size_for_mtu(1500));
	kc.max_value = (o->max_value != 0 ? o->max_value : DEF_MAX_VALUE) * (uint32_t)sizeof(float);
	kc.reasm_timeout_ns = REASM_TIMEOUT_NS;
	kc.request = on_request;

	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return psb_api_fail(err, errlen, PSBC_E_NOMEM, "out of memory");
	kc.request_arg = s;
	s->handler = handler;
	s->arg = arg;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&s->mu, &ma);
	pthread_mutexattr_destroy(&ma);
	s->srv = psb_ksrv_open(&kc, why, sizeof(why));
	if (s->srv == NULL) {
		rc = strstr(why, "did not answer") != NULL ? PSBC_E_UNREACHABLE : PSBC_E_SYSTEM;
		psbs_close(s);
		return psb_api_fail(err, errlen, rc, "%s", why);
	}
	*out = s;
	return 0;
}

int
psbs_poll(psbs_t *s, int timeout_ms)
{
	struct pollfd p;
	int n;

	if (s == NULL)
		return PSBC_E_INVAL;
	p.fd = psb_ksrv_fd(s->srv);
	p.events = POLLIN;
	p.revents = 0;
	pthread_mutex_lock(&s->mu);
	n = psb_ksrv_rx(s->srv);
	pthread_mutex_unlock(&s->mu);
	if (n == 0 && timeout_ms > 0 && !psb_ksrv_ended(s->srv) &&
	    poll(&p, 1, timeout_ms) > 0) {
		pthread_mutex_lock(&s->mu);
		psb_ksrv_rx(s->srv);
		pthread_mutex_unlock(&s->mu);
	}
	pthread_mutex_lock(&s->mu);
	psb_ksrv_tick(s->srv, psb_clock_ns());
	n = !psb_ksrv_ended(s->srv);
	pthread_mutex_unlock(&s->mu);
	return n;
}

int
psbs_respond(psbs_t *s, const struct psbs_request *r, const float *vals, size_t nvals)
{
	struct psb_kv_req kr;
	int rc;

	if (s == NULL || r == NULL || (vals == NULL && nvals != 0))
		return PSBC_E_INVAL;
	if (nvals > PSBC_MAX_VALUE)
		return sfail(s, PSBC_E_TOO_LARGE, "key %llu: an answer of %zu floats: at most %u",
			(unsigned long long)r->key, nvals, PSBC_MAX_VALUE);
	memset(&kr, 0, sizeof(kr));
	kr.key = r->key;
	kr.sender = (uint16_t)r->sender;
	kr.req_id = r->id[0];
	kr.epoch = r->id[1];
	pthread_mutex_lock(&s->mu);
	rc = r->sender < 0 || r->sender > UINT16_MAX ? -ESTALE :
		psb_ksrv_respond(s->srv, &kr, vals, (uint32_t)(nvals * sizeof(float)));
	pthread_mutex_unlock(&s->mu);
	switch (rc) {
	case 0:
		return 0;
	case -ESTALE:
		return sfail(s, PSBC_E_NOT_OPEN, "key %llu, worker %d: that request is no longer "
			"open (answered already, or superseded)", (unsigned long long)r->key,
			r->sender);
	case -EINVAL:
		return sfail(s, PSBC_E_TOO_LARGE, "key %llu: an answer of %zu floats is over the "
			"server's max_value", (unsigned long long)r->key, nvals);
	case -ENOSPC:
		return sfail(s, PSBC_E_NO_MEMORY, "key %llu: keeping an answer of %zu floats "
			"would exceed the server's memory budget: worker %d gets no_memory",
			(unsigned long long)r->key, nvals, r->sender);
	case -ENOMEM:
		return sfail(s, PSBC_E_NOMEM, "out of memory");
	default:
		return sfail(s, PSBC_E_SYSTEM, "key %llu: %s", (unsigned long long)r->key,
			strerror(-rc));
	}
}

int
psbs_fd(const psbs_t *s)
{
	return s != NULL ? psb_ksrv_fd(s->srv) : -1;
}

int
psbs_port(const psbs_t *s)
{
	return s != NULL ? psb_ksrv_port(s->srv) : PSBC_E_INVAL;
}

int
psbs_rank(const psbs_t *s)
{
	return s != NULL ? psb_ksrv_rank(s->srv) : PSBC_E_INVAL;
}

int
psbs_num_workers(const psbs_t *s)
{
	return s != NULL ? psb_ksrv_num_workers(s->srv) : PSBC_E_INVAL;
}

int
psbs_num_servers(const psbs_t *s)
{
	return s != NULL ? psb_ksrv_num_servers(s->srv) : PSBC_E_INVAL;
}

const char *
psbs_errmsg(const psbs_t *s)
{
	return s != NULL ? s->err : "no server";
}

void
psbs_close(psbs_t *s)
{
	if (s == NULL)
		return;
	psb_ksrv_close(s->srv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}
