/*
 * psb's client API (psb/client.h): sessions of batched asynchronous operations over the
 * kernel-socket client (lib/client). An operation is a set of per-key requests started
 * together; its timestamp names a slot of a ring that keeps its state until it ended
 * and was waited for (or, with a callback, ran it).
 */
#include <errno.h>
#include <ifaddrs.h>
#include <math.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "psb/client.h"
#include "psb_api_int.h"
#include "psb_client.h"
#include "psb_clock.h"
#include "psb_sched.h"
#include "psb_udp.h"

/* lib/cli's generated psb_version.c, built into this library too */
extern const char psb_cli_version_str[];
extern const char psb_cli_revision_str[];

#define DEF_CONNECT_MS		3000u
#define DEF_SCHED_MS		60000u
#define DEF_WINDOW		256u
#define DEF_SERVER_MS		10000u
#define DEF_BATCH		1024
#define RING_MIN		1024u
#define ROUNDS_MIN		256u

enum op_state { OP_FREE, OP_RUNNING, OP_ENDED };

struct op;

/* One key's request of an operation. */
struct kreq {
	struct psb_client_req r;
	struct op *op;
	uint32_t idx;			/* the key's index in the operation */
};

struct op {
	int64_t ts;
	enum op_state state;
	int status;			/* the first error among its keys (0: none yet) */
	int due;			/* ended; its callback not run yet */
	uint32_t nkeys, nleft;
	uint32_t *lens;			/* pull: where the lengths received go (may be NULL) */
	struct kreq *reqs;
	psbc_cb cb;
	void *arg;
	struct op *next_due;		/* ended, its callback due */
};

/* A key's synchronous round: the rounds its pushes went into. */
struct round {
	uint64_t key;
	uint32_t next;			/* the round its next push goes into */
	uint8_t used;
};

struct psbc {
	struct psb_client *c;
	int sync;
	int scheduled;			/* through a scheduler */
	uint32_t num_workers;
	uint16_t nservers;
	uint64_t begin[PSB_SCHED_MAX_NODES], end[PSB_SCHED_MAX_NODES];
	char names[PSB_SCHED_MAX_NODES][24];
	uint32_t barrier_seq[8];
	int64_t next_ts;
	struct op *ring;		/* [nring], nring a power of two */
	uint32_t nring;
	uint32_t running;
	struct op *due_head, *due_tail;
	int in_callbacks;
	struct round *rounds;		/* [nrounds], open addressing; sync mode only */
	uint32_t nrounds, rounds_used;
	char err[512];
};

const char *
psb_version(void)
{
	static char buf[96];

	if (buf[0] == '\0')
		snprintf(buf, sizeof(buf), "%s (git %.12s%s)", psb_cli_version_str,
			 psb_cli_revision_str, strstr(psb_cli_revision_str, "dirty") != NULL ?
			 ", dirty" : "");
	return buf;
}

const char *
psb_strerror(int code)
{
	switch (code) {
	case PSBC_OK: return "success";
	case PSBC_E_INVAL: return "invalid argument";
	case PSBC_E_KEYS: return "keys are not in strictly ascending order";
	case PSBC_E_LENS: return "lens do not add up to the values given";
	case PSBC_E_TOO_LARGE: return "value larger than psb or the server accepts";
	case PSBC_E_UNREACHABLE: return "a server or the scheduler did not answer";
	case PSBC_E_REFUSED: return "nothing listens at the server's address";
	case PSBC_E_TIMEDOUT: return "a request went unanswered through every retry";
	case PSBC_E_MSGSIZE: return "the route cannot carry a datagram of this size";
	case PSBC_E_LEN_MISMATCH: return "the key holds a value of another length";
	case PSBC_E_NO_KEY: return "the key was never pushed";
	case PSBC_E_NO_MEMORY: return "the server's store or budget refused the value";
	case PSBC_E_RANK: return "the rank is not below the server's number of workers";
	case PSBC_E_STALE: return "request for another synchronous round";
	case PSBC_E_BUSY: return "the server stayed busy through every retry";
	case PSBC_E_RESTARTED: return "the server restarted: what it stored is lost";
	case PSBC_E_PROTOCOL: return "the server does not speak this protocol version";
	case PSBC_E_TS: return "no such timestamp (never given, or already waited for)";
	case PSBC_E_NOMEM: return "out of memory";
	case PSBC_E_SYSTEM: return "a system call failed";
	case PSBC_E_ENV: return "a DMLC_* variable is missing or malformed";
	case PSBC_E_SCHEDULER: return "the scheduler refused or ended the job";
	case PSBC_E_NOT_OPEN: return "the request is no longer open (answered already, superseded by its worker's next one, or its worker restarted)";
	default: return "unknown psb error";
	}
}

/* lib/client's result (0, a psb status, -errno) as an API code. */
static int
code_of(int rc)
{
	switch (rc) {
	case 0: return PSBC_OK;
	case PSB_ST_BAD_VERSION:
	case PSB_ST_BAD_TYPE: return PSBC_E_PROTOCOL;
	case PSB_ST_LEN_MISMATCH: return PSBC_E_LEN_MISMATCH;
	case PSB_ST_NO_KEY: return PSBC_E_NO_KEY;
	case PSB_ST_TOO_LARGE: return PSBC_E_TOO_LARGE;
	case PSB_ST_NO_MEM: return PSBC_E_NO_MEMORY;
	case PSB_ST_BAD_SENDER: return PSBC_E_RANK;
	case PSB_ST_STALE: return PSBC_E_STALE;
	case PSB_ST_BUSY: return PSBC_E_BUSY;
	case -ETIMEDOUT: return PSBC_E_TIMEDOUT;
	case -ESTALE: return PSBC_E_RESTARTED;
	case -EMSGSIZE: return PSBC_E_MSGSIZE;
	case -ECONNREFUSED: return PSBC_E_REFUSED;
	case -EHOSTUNREACH:
	case -ENOTCONN:
	case -ENETUNREACH: return PSBC_E_UNREACHABLE;
	case -EBADSLT: return PSBC_E_RANK;
	case -ENOMEM: return PSBC_E_NOMEM;
	case -EINVAL: return PSBC_E_INVAL;
	default: return rc > 0 ? PSBC_E_PROTOCOL : PSBC_E_SYSTEM;
	}
}

static int
fail(psbc_t *s, int code, const char *fmt, ...)
{
	va_list ap;

	if (s != NULL) {
		va_start(ap, fmt);
		vsnprintf(s->err, sizeof(s->err), fmt, ap);
		va_end(ap);
	}
	return code;
}

int
psb_api_fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen != 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

const char *
psbc_errmsg(const psbc_t *s)
{
	return s != NULL ? s->err : "no session";
}

void
psbc_opts_init(struct psbc_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->api = PSBC_API_VERSION;
	o->rank = -1;
}

/* The len bytes at s, "IP[:PORT]", into host-order address and port (lib/client's rule). */
static int
parse_addr(const char *s, size_t len, uint32_t *ip, uint16_t *port)
{
	char buf[64];

	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	return psb_client_parse_addr(buf, ip, port) == 0 && *ip != 0 ? 0 : -1;
}

int
psb_api_check_seg(unsigned int seg, char *err, size_t errlen)
{
	if (seg != 0 && ((seg & 3) != 0 || seg > PSB_UDP_MAX_SEG))
		return psb_api_fail(err, errlen, PSBC_E_INVAL,
			"seg_size %u: expected a multiple of 4 in [4, %u]", seg, PSB_UDP_MAX_SEG);
	return 0;
}

int
psb_api_env_num(const char *name, long lo, long hi, long *v)
{
	const char *e = getenv(name);
	char *end;

	if (e == NULL || *e == '\0')
		return 1;
	errno = 0;
	*v = strtol(e, &end, 10);
	if (errno != 0 || end == e || *end != '\0' || *v < lo || *v > hi)
		return -1;
	return 0;
}

/* The IPv4 address of interface name (DMLC_INTERFACE) into buf. */
static int
iface_ip(const char *name, char *buf, size_t len)
{
	struct ifaddrs *ifa, *i;
	int rc = -1;

	if (getifaddrs(&ifa) != 0)
		return -1;
	for (i = ifa; i != NULL; i = i->ifa_next)
		if (i->ifa_addr != NULL && i->ifa_addr->sa_family == AF_INET &&
		    strcmp(i->ifa_name, name) == 0) {
			inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, buf,
				(socklen_t)len);
			rc = 0;
			break;
		}
	freeifaddrs(ifa);
	return rc;
}

int
psb_api_local_addr(const char *given, char *buf, size_t len, const char **out, char *err,
		size_t errlen)
{
	const char *v;
	uint32_t ip;

	*out = NULL;
	if (given != NULL) {
		*out = given;
		return 0;
	}
	v = getenv("DMLC_NODE_HOST");
	if (v != NULL && *v != '\0') {
		if (psb_parse_ip(v, &ip) != 0)
			return psb_api_fail(err, errlen, PSBC_E_ENV,
				"DMLC_NODE_HOST '%s' is not an IPv4 address", v);
		*out = v;
		return 0;
	}
	v = getenv("DMLC_INTERFACE");
	if (v != NULL && *v != '\0') {
		if (iface_ip(v, buf, len) != 0)
			return psb_api_fail(err, errlen, PSBC_E_ENV,
				"DMLC_INTERFACE '%s': no such interface with an IPv4 address", v);
		*out = buf;
	}
	return 0;
}

/* The segment size: the option's, or the smallest the routes to the servers carry. */
static int
pick_seg(psbc_t *s, const struct psbc_opts *o, const uint32_t *ip, const uint16_t *port,
		uint16_t n, uint16_t *seg, char *err, size_t errlen)
{
	char why[160];
	uint16_t i, g;

	if (o->seg_size != 0) {
		if (psb_api_check_seg(o->seg_size, err, errlen) != 0)
			return PSBC_E_INVAL;
		*seg = (uint16_t)o->seg_size;
		return 0;
	}
	*seg = PSB_UDP_MAX_SEG;
	for (i = 0; i < n; i++) {
		g = psb_client_route_seg(ip[i], port[i], why, sizeof(why));
		if (g == 0)
			return psb_api_fail(err, errlen, PSBC_E_UNREACHABLE, "server %s: %s",
				s->names[i], why);
		if (g < *seg)
			*seg = g;
	}
	return 0;
}

static int
ring_init(psbc_t *s, uint32_t n)
{
	s->ring = calloc(n, sizeof(*s->ring));
	if (s->ring == NULL)
		return -1;
	s->nring = n;
	return 0;
}

static void
client_cfg(const struct psbc_opts *o, struct psb_client_cfg *cfg)
{
	psb_client_cfg_init(cfg);
	cfg->sync = o->sync != 0;
	if (o->api >= 2 && o->transport != NULL)
		cfg->transport = strcmp(o->transport, "shm") == 0 ? PSB_CLIENT_TRANSPORT_SHM :
			strcmp(o->transport, "udp") == 0 ? PSB_CLIENT_TRANSPORT_UDP :
			PSB_CLIENT_TRANSPORT_AUTO;
	cfg->window = o->window != 0 ? o->window : DEF_WINDOW;
	if (cfg->window > PSB_WK_MAX_WINDOW)
		cfg->window = PSB_WK_MAX_WINDOW;
	/*
	 * A request unanswered for the timeout is sent again whole, so the timeout must exceed
	 * the time the bytes in flight take to cross: kernel UDP moves about 1 Gbps per
	 * core, some 16 ns a byte (psb-kbench's rule); the engine's own measure of the round
	 * trip raises it further when answers take longer.
	 */
	if (o->timeout_ms != 0) {
		cfg->timeout_ns = (uint64_t)o->timeout_ms * 1000000ull;
	} else {
		uint64_t wb = o->window_bytes != 0 ? o->window_bytes : PSB_CLIENT_WINDOW_BYTES;

		if (wb * 16 > cfg->timeout_ns)
			cfg->timeout_ns = wb * 16;
	}
	if (o->max_retries != 0)
		cfg->max_retries = o->max_retries;
	cfg->window_bytes = o->window_bytes;
	cfg->server_timeout_ns = (uint64_t)(o->server_timeout_ms != 0 ? o->server_timeout_ms :
		DEF_SERVER_MS) * 1000000ull;
	cfg->batch_max = o->batch_bytes < 0 ? 0 :
		(uint16_t)(o->batch_bytes == 0 ? DEF_BATCH :
			   o->batch_bytes > 65535 ? 65535 : o->batch_bytes);
}

/*
 * Each server's transport chosen now: shared memory where it is offered here (and a link
 * made), so that a forced one that cannot be made fails the open, saying why.
 */
static int
choose_transports(psbc_t *s, uint16_t n, char *err, size_t errlen)
{
	char why[400];
	uint16_t i;
	int rc;

	for (i = 0; i < n; i++) {
		rc = psb_client_transport(s->c, i, why, sizeof(why));
		if (rc < 0)
			return psb_api_fail(err, errlen, code_of(rc), "%s", why);
	}
	return 0;
}

/* Straight to the servers of o->servers. */
static int
open_direct(psbc_t *s, const struct psbc_opts *o, const char *lip, char *err, size_t errlen)
{
	uint32_t ip[PSB_SCHED_MAX_NODES];
	uint16_t port[PSB_SCHED_MAX_NODES], n = 0, seg, i;
	const char *p = o->servers, *comma;
	struct psb_client_cfg cfg;
	char why[512], ipb[INET_ADDRSTRLEN];
	long rank = o->rank;
	uint64_t ms;
	int rc;

	for (;;) {
		size_t len;

		comma = strchr(p, ',');
		len = comma != NULL ? (size_t)(comma - p) : strlen(p);
		if (n == PSB_SCHED_MAX_NODES)
			return psb_api_fail(err, errlen, PSBC_E_INVAL,
				"servers: more than %u servers", PSB_SCHED_MAX_NODES);
		port[n] = PSB_UDP_PORT;
		if (parse_addr(p, len, &ip[n], &port[n]) != 0)
			return psb_api_fail(err, errlen, PSBC_E_INVAL,
				"servers: '%.*s' is not IP or IP:PORT (e.g. 198.18.0.1:9430)",
				(int)(len > 64 ? 64 : len), p);
		snprintf(s->names[n], sizeof(s->names[n]), "%s:%u", psb_ip_str(ip[n], ipb),
			 port[n]);
		n++;
		if (comma == NULL)
			break;
		p = comma + 1;
	}
	if (rank < 0) {
		rc = psb_api_env_num("DMLC_RANK", 0, 65535, &rank);
		if (rc < 0)
			return psb_api_fail(err, errlen, PSBC_E_ENV,
				"DMLC_RANK '%s' is not a rank (0 to 65535)", getenv("DMLC_RANK"));
		if (rc > 0)
			rank = 0;
	} else if (rank > 65535) {
		return psb_api_fail(err, errlen, PSBC_E_INVAL, "rank %ld: at most 65535", rank);
	}
	rc = pick_seg(s, o, ip, port, n, &seg, err, errlen);
	if (rc != 0)
		return rc;
	client_cfg(o, &cfg);
	cfg.server_ip = psb_ip_str(ip[0], ipb);
	cfg.server_port = port[0];
	cfg.local_ip = lip;
	cfg.rank = (uint16_t)rank;
	cfg.seg_size = seg;
	s->c = psb_client_open(&cfg, why, sizeof(why));
	if (s->c == NULL)
		return psb_api_fail(err, errlen, PSBC_E_SYSTEM, "%s", why);
	if (psb_client_set_servers(s->c, n, ip, port) != 0)
		return psb_api_fail(err, errlen, PSBC_E_INVAL, "servers: cannot use them");
	rc = choose_transports(s, n, err, errlen);
	if (rc != 0)
		return rc;
	ms = o->connect_timeout_ms != 0 ? o->connect_timeout_ms : DEF_CONNECT_MS;
	rc = psb_client_probe(s->c, ms * 1000000ull, why, sizeof(why));
	if (rc != 0)
		return psb_api_fail(err, errlen, rc == -EBADSLT ? PSBC_E_RANK : code_of(rc),
			"%s%s", why, rc == -EBADSLT ? "" : ": is psb (or psb-ksrv) running there, "
			"and the address right?");
	s->nservers = n;
	for (i = 0; i < n; i++)
		psb_sched_key_range(i, n, &s->begin[i], &s->end[i]);
	s->end[n - 1] = PSBC_KEY_END;
	return 0;
}

/* Through the scheduler: o->scheduler, or DMLC_PS_ROOT_URI / DMLC_PS_ROOT_PORT. */
static int
open_scheduled(psbc_t *s, const struct psbc_opts *o, const char *lip, char *err,
		size_t errlen)
{
	struct psb_sched_view *v;
	struct psb_client_cfg cfg;
	char why[512], ipb[INET_ADDRSTRLEN], sname[32];
	uint32_t sip, ip[PSB_SCHED_MAX_NODES];
	uint16_t sport = PSB_SCHED_PORT, port[PSB_SCHED_MAX_NODES], seg, i, rank;
	const char *role = getenv("DMLC_ROLE");
	int rc;

	if (role != NULL && *role != '\0' && strcmp(role, "worker") != 0)
		return psb_api_fail(err, errlen, PSBC_E_ENV,
			"DMLC_ROLE is '%s': a psb session is a worker (psb's servers and "
			"scheduler are psb processes)", role);
	rc = psb_api_sched_addr(o->scheduler, "neither servers nor a scheduler given", &sip,
		&sport, err, errlen);
	if (rc != 0)
		return rc;
	snprintf(sname, sizeof(sname), "%s:%u", psb_ip_str(sip, ipb), sport);
	rc = pick_seg(s, o, &sip, &sport, 1, &seg, err, errlen);
	if (rc != 0)
		return rc;
	client_cfg(o, &cfg);
	cfg.server_ip = psb_ip_str(sip, ipb);
	cfg.server_port = sport;
	cfg.local_ip = lip;
	cfg.seg_size = seg;
	cfg.sched_timeout_ns = (uint64_t)(o->connect_timeout_ms != 0 ? o->connect_timeout_ms :
		DEF_SCHED_MS) * 1000000ull;
	s->c = psb_client_open(&cfg, why, sizeof(why));
	if (s->c == NULL)
		return psb_api_fail(err, errlen, PSBC_E_SYSTEM, "%s", why);
	v = calloc(1, sizeof(*v));
	if (v == NULL)
		return psb_api_fail(err, errlen, PSBC_E_NOMEM, "out of memory");
	rc = psb_client_register(s->c, psb_ip_str(sip, ipb), sport, &rank, v);
	if (rc != 0) {
		free(v);
		if (rc == -ETIMEDOUT)
			return psb_api_fail(err, errlen, PSBC_E_UNREACHABLE,
				"scheduler %s did not admit this worker within %.1f s: is it "
				"running there, and have all DMLC_NUM_WORKER workers and "
				"DMLC_NUM_SERVER servers started?", sname,
				(double)cfg.sched_timeout_ns / 1e9);
		if (rc == -ECONNREFUSED)
			return psb_api_fail(err, errlen, PSBC_E_REFUSED,
				"scheduler %s refused for %.1f s: nothing listens there (is it "
				"running, and DMLC_PS_ROOT_URI / DMLC_PS_ROOT_PORT right?)", sname,
				(double)cfg.sched_timeout_ns / 1e9);
		return psb_api_fail(err, errlen, code_of(rc), "scheduler %s: %s", sname,
			psb_client_strerror(rc));
	}
	if (v->num_servers == 0) {
		free(v);
		return psb_api_fail(err, errlen, PSBC_E_SCHEDULER,
			"scheduler %s admitted this worker but named no server", sname);
	}
	s->nservers = v->num_servers;
	s->num_workers = v->num_workers;
	for (i = 0; i < v->num_servers; i++) {
		ip[i] = v->servers[i].ip;
		port[i] = v->servers[i].port;
		s->begin[i] = v->servers[i].key_begin;
		s->end[i] = v->servers[i].key_end;
		snprintf(s->names[i], sizeof(s->names[i]), "%s:%u", psb_ip_str(ip[i], ipb),
			 port[i]);
	}
	free(v);
	/* The servers' routes may carry less than the scheduler's. */
	if (o->seg_size == 0) {
		rc = pick_seg(s, o, ip, port, s->nservers, &seg, err, errlen);
		if (rc != 0)
			return rc;
		if (seg < cfg.seg_size && psb_client_set_seg_size(s->c, seg) != 0)
			return psb_api_fail(err, errlen, PSBC_E_NOMEM, "out of memory");
	}
	(void)rank;
	rc = choose_transports(s, s->nservers, err, errlen);
	if (rc != 0)
		return rc;
	s->scheduled = 1;
	return 0;
}

int
psb_api_sched_addr(const char *given, const char *why_env, uint32_t *ip, uint16_t *port,
		char *err, size_t errlen)
{
	const char *uri;
	long p;
	int rc;

	*port = PSB_SCHED_PORT;
	if (given != NULL) {
		if (parse_addr(given, strlen(given), ip, port) != 0)
			return psb_api_fail(err, errlen, PSBC_E_INVAL,
				"scheduler '%s' is not IP or IP:PORT", given);
		return 0;
	}
	uri = getenv("DMLC_PS_ROOT_URI");
	if (uri == NULL || *uri == '\0')
		return psb_api_fail(err, errlen, PSBC_E_ENV, "%s, and DMLC_PS_ROOT_URI (the "
			"scheduler's address) is not set", why_env);
	if (psb_parse_ip(uri, ip) != 0 || *ip == 0)
		return psb_api_fail(err, errlen, PSBC_E_ENV,
			"DMLC_PS_ROOT_URI '%s' is not an IPv4 address", uri);
	rc = psb_api_env_num("DMLC_PS_ROOT_PORT", 1, 65535, &p);
	if (rc != 0)
		return psb_api_fail(err, errlen, PSBC_E_ENV, "DMLC_PS_ROOT_PORT %s%s%s",
			rc > 0 ? "is not set" : "'", rc > 0 ? "" : getenv("DMLC_PS_ROOT_PORT"),
			rc > 0 ? " (the scheduler's port)" : "' is not a port");
	*port = (uint16_t)p;
	return 0;
}

int
psbc_open(psbc_t **out, const struct psbc_opts *o, char *err, size_t errlen)
{
	struct psbc_opts def;
	char ifip[INET_ADDRSTRLEN];
	const char *lip;
	psbc_t *s;
	int rc;

	if (err != NULL && errlen != 0)
		err[0] = '\0';
	if (out == NULL)
		return psb_api_fail(err, errlen, PSBC_E_INVAL, "out is NULL");
	*out = NULL;
	if (o == NULL) {
		psbc_opts_init(&def);
		o = &def;
	}
	/* a program built for api 1 passes the shorter struct: transport is not read */
	if (o->api < 1 || o->api > PSBC_API_VERSION)
		return psb_api_fail(err, errlen, PSBC_E_INVAL,
			"opts.api is %u, this library speaks 1 to %u: call psbc_opts_init", o->api,
			PSBC_API_VERSION);
	if (o->api >= 2 && o->transport != NULL && strcmp(o->transport, "auto") != 0 &&
	    strcmp(o->transport, "shm") != 0 && strcmp(o->transport, "udp") != 0)
		return psb_api_fail(err, errlen, PSBC_E_INVAL,
			"transport '%.32s': expected auto, shm or udp", o->transport);
	if (o->sync != 0 && o->sync != 1)
		return psb_api_fail(err, errlen, PSBC_E_INVAL, "sync %d: 0 or 1", o->sync);
	rc = psb_api_local_addr(o->local_ip, ifip, sizeof(ifip), &lip, err, errlen);
	if (rc != 0)
		return rc;
	s = calloc(1, sizeof(*s));
	if (s == NULL || ring_init(s, RING_MIN) != 0) {
		free(s);
		return psb_api_fail(err, errlen, PSBC_E_NOMEM, "out of memory");
	}
	s->sync = o->sync;
	rc = o->servers != NULL ? open_direct(s, o, lip, err, errlen) :
				  open_scheduled(s, o, lip, err, errlen);
	if (rc != 0) {
		psbc_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

void
psbc_close(psbc_t *s)
{
	uint32_t i;

	if (s == NULL)
		return;
	psb_client_close(s->c);		/* requests in flight are abandoned with it */
	for (i = 0; i < s->nring; i++)
		free(s->ring[i].reqs);
	free(s->ring);
	free(s->rounds);
	free(s);
}

/* --- synchronous rounds: each key's next push round --- */

static inline uint32_t
key_hash(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (uint32_t)k;
}

static struct round *
round_of(psbc_t *s, uint64_t key, int add)
{
	uint32_t i, m;

	if (s->nrounds == 0 || (add && (s->rounds_used + 1) * 4 > s->nrounds * 3)) {
		struct round *old = s->rounds;
		uint32_t n = s->nrounds != 0 ? s->nrounds * 2 : ROUNDS_MIN, on = s->nrounds;

		if (!add && s->nrounds == 0)
			return NULL;
		s->rounds = calloc(n, sizeof(*s->rounds));
		if (s->rounds == NULL) {
			s->rounds = old;
			return NULL;
		}
		s->nrounds = n;
		s->rounds_used = 0;
		for (i = 0; i < on; i++)
			if (old[i].used) {
				struct round *r = round_of(s, old[i].key, 1);

				r->next = old[i].next;
			}
		free(old);
	}
	m = s->nrounds - 1;
	for (i = key_hash(key) & m;; i = (i + 1) & m) {
		if (s->rounds[i].used && s->rounds[i].key == key)
			return &s->rounds[i];
		if (!s->rounds[i].used) {
			if (!add)
				return NULL;
			s->rounds[i].used = 1;
			s->rounds[i].key = key;
			s->rounds[i].next = 0;
			s->rounds_used++;
			return &s->rounds[i];
		}
	}
}

/* --- operations --- */

static struct op *
op_of(psbc_t *s, int64_t ts)
{
	struct op *op;

	if (ts < 0 || ts >= s->next_ts)
		return NULL;
	op = &s->ring[(uint64_t)ts & (s->nring - 1)];
	return op->ts == ts && op->state != OP_FREE ? op : NULL;
}

/* The server of a key, for messages. */
static const char *
server_name(const psbc_t *s, uint64_t key)
{
	uint16_t i;

	for (i = 0; i + 1 < s->nservers; i++)
		if (key < s->end[i])
			break;
	return s->names[i];
}

/* One key's request ended (inside the engine): note it; the operation may end too. */
static void
key_done(struct psb_client_req *r, void *arg)
{
	struct kreq *k = (struct kreq *)r;
	struct op *op = k->op;
	psbc_t *s = arg;
	int rc = r->op.status;

	/* without lens a pull's room is each key's length: a shorter value is no answer */
	if (rc == 0 && r->op.type == PSB_MSG_PULL && op->lens == NULL &&
	    r->op.out_len != r->op.len) {
		rc = PSB_ST_LEN_MISMATCH;
		r->op.err_aux = r->op.out_len;
	}
	if (op->lens != NULL && r->op.type == PSB_MSG_PULL)
		op->lens[k->idx] = rc == 0 ? r->op.out_len / 4 :
				   rc == PSB_ST_LEN_MISMATCH ? r->op.err_aux / 4 : 0;
	if (rc == PSB_ST_STALE && s->sync && r->op.type != PSB_MSG_PULL) {
		struct round *rd = round_of(s, r->op.key, 0);

		if (rd != NULL)
			rd->next = r->op.err_aux;	/* the key's round now: resynchronise */
	}
	if (rc != 0 && op->status == 0) {
		const char *lost;
		double silent;

		op->status = code_of(rc);
		if (rc == -EHOSTUNREACH &&
		    (lost = psb_client_lost_server(s->c, &silent)) != NULL)
			fail(s, op->status, "key %llu: server %s answered nothing, not even a "
				"probe, for %.1f s: given up", (unsigned long long)r->op.key, lost,
				silent);
		else if (rc == PSB_ST_LEN_MISMATCH)
			fail(s, op->status, "key %llu (server %s): the key holds %u floats, "
				"this request has room for %u (length_mismatch; a server keeps its "
				"store between runs: psbctl reset_state clears it)",
				(unsigned long long)r->op.key, server_name(s, r->op.key),
				r->op.err_aux / 4, r->op.len / 4);
		else
			fail(s, op->status, "key %llu (server %s): %s",
				(unsigned long long)r->op.key, server_name(s, r->op.key),
				psb_client_strerror(rc));
	}
	if (--op->nleft != 0)
		return;
	op->state = OP_ENDED;
	s->running--;
	free(op->reqs);
	op->reqs = NULL;
	if (op->cb != NULL) {
		op->due = 1;
		op->next_due = NULL;
		if (s->due_tail != NULL)
			s->due_tail->next_due = op;
		else
			s->due_head = op;
		s->due_tail = op;
	}
}

/* Run the callbacks due, outside the engine; a callback may start operations. */
static void
run_due(psbc_t *s)
{
	struct op *op;

	if (s->in_callbacks)
		return;
	s->in_callbacks = 1;
	while ((op = s->due_head) != NULL) {
		s->due_head = op->next_due;
		if (s->due_head == NULL)
			s->due_tail = NULL;
		op->due = 0;
		op->cb(s, op->ts, op->status, op->arg);
	}
	s->in_callbacks = 0;
}

/* Double the ring; the operations keep their timestamps. */
static int
ring_grow(psbc_t *s)
{
	uint32_t n = s->nring * 2, i;
	struct op *nr = calloc(n, sizeof(*nr));

	if (nr == NULL)
		return -1;
	for (i = 0; i < s->nring; i++) {
		struct op *o = &s->ring[i], *d;

		if (o->state == OP_FREE)
			continue;
		d = &nr[(uint64_t)o->ts & (n - 1)];
		*d = *o;
		for (uint32_t k = 0; d->reqs != NULL && k < d->nkeys; k++)
			d->reqs[k].op = d;
	}
	/* The due list points into the ring: rebuild it in order. */
	{
		struct op *o, *prev = NULL;

		for (o = s->due_head; o != NULL; o = o->next_due) {
			struct op *d = &nr[(uint64_t)o->ts & (n - 1)];

			if (prev == NULL)
				s->due_head = d;
			else
				prev->next_due = d;
			prev = d;
		}
		s->due_tail = prev;
		if (prev != NULL)
			prev->next_due = NULL;
	}
	free(s->ring);
	s->ring = nr;
	s->nring = n;
	return 0;
}

/* Check keys and lens against nvals. */
static int
check_args(psbc_t *s, const uint64_t *keys, size_t nkeys, const void *vals, size_t nvals,
		const uint32_t *lens, const char *what)
{
	uint64_t sum = 0;
	size_t i;

	if (keys == NULL || nkeys == 0)
		return fail(s, PSBC_E_INVAL, "%s: no keys", what);
	if (vals == NULL || nvals == 0)
		return fail(s, PSBC_E_INVAL, "%s: no values", what);
	if (nkeys > UINT32_MAX)
		return fail(s, PSBC_E_INVAL, "%s: %zu keys, at most %u at once", what, nkeys,
			UINT32_MAX);
	for (i = 0; i < nkeys; i++) {
		if (keys[i] == PSBC_KEY_END)
			return fail(s, PSBC_E_KEYS, "%s: key %zu is %llu, which is psb's (keys are "
				"below PSBC_KEY_END)", what, i, (unsigned long long)keys[i]);
		if (i != 0 && keys[i] <= keys[i - 1])
			return fail(s, PSBC_E_KEYS, "%s: key %zu (%llu) %s key %zu (%llu): keys "
				"must be strictly ascending", what, i, (unsigned long long)keys[i],
				keys[i] == keys[i - 1] ? "repeats" : "is below", i - 1,
				(unsigned long long)keys[i - 1]);
	}
	if (lens == NULL) {
		if (nvals % nkeys != 0)
			return fail(s, PSBC_E_LENS, "%s: %zu values do not divide among %zu keys "
				"(give lens)", what, nvals, nkeys);
		if (nvals / nkeys > PSBC_MAX_VALUE)
			return fail(s, PSBC_E_TOO_LARGE, "%s: %zu floats a key, at most %u", what,
				nvals / nkeys, PSBC_MAX_VALUE);
		return 0;
	}
	for (i = 0; i < nkeys; i++) {
		if (lens[i] == 0)
			return fail(s, PSBC_E_LENS, "%s: lens[%zu] is 0 (key %llu)", what, i,
				(unsigned long long)keys[i]);
		if (lens[i] > PSBC_MAX_VALUE)
			return fail(s, PSBC_E_TOO_LARGE, "%s: lens[%zu] is %u floats (key %llu), "
				"at most %u", what, i, lens[i], (unsigned long long)keys[i],
				PSBC_MAX_VALUE);
		sum += lens[i];
	}
	if (sum != nvals)
		return fail(s, PSBC_E_LENS, "%s: lens add up to %llu floats, the values given "
			"are %zu", what, (unsigned long long)sum, nvals);
	return 0;
}

static int64_t
start_op(psbc_t *s, uint8_t type, const uint64_t *keys, size_t nkeys, const float *in,
		float *out, size_t nvals, uint32_t *lens, float scale, psbc_cb cb, void *arg)
{
	const char *what = type == PSB_MSG_PUSH ? "push" : type == PSB_MSG_PULL ? "pull" :
		"pushpull";
	struct op *op;
	size_t i, off = 0;
	int64_t ts;
	int rc;

	if (s == NULL)
		return PSBC_E_INVAL;
	rc = check_args(s, keys, nkeys, type == PSB_MSG_PULL ? (const void *)out :
		(const void *)in, nvals, lens, what);
	if (rc == 0 && type == PSB_MSG_PUSHPULL && out == NULL)
		rc = fail(s, PSBC_E_INVAL, "pushpull: outs is NULL");
	if (rc == 0 && !isfinite(scale))
		rc = fail(s, PSBC_E_INVAL, "%s: scale is not a finite number", what);
	if (rc != 0)
		return rc;
	ts = s->next_ts;
	op = &s->ring[(uint64_t)ts & (s->nring - 1)];
	while (op->state == OP_RUNNING || op->due) {
		if (ring_grow(s) != 0)
			return fail(s, PSBC_E_NOMEM, "%s: out of memory", what);
		op = &s->ring[(uint64_t)ts & (s->nring - 1)];
	}
	memset(op, 0, sizeof(*op));
	op->reqs = calloc(nkeys, sizeof(*op->reqs));
	if (op->reqs == NULL)
		return fail(s, PSBC_E_NOMEM, "%s: out of memory for %zu keys", what, nkeys);
	op->ts = ts;
	op->state = OP_RUNNING;
	op->nkeys = op->nleft = (uint32_t)nkeys;
	op->lens = type == PSB_MSG_PULL ? lens : NULL;
	op->cb = cb;
	op->arg = arg;
	s->next_ts++;
	s->running++;
	for (i = 0; i < nkeys; i++) {
		struct kreq *k = &op->reqs[i];
		uint32_t n = lens != NULL ? lens[i] : (uint32_t)(nvals / nkeys);

		k->op = op;
		k->idx = (uint32_t)i;
		k->r.cb = key_done;
		k->r.cb_arg = s;
		k->r.op.type = type;
		k->r.op.key = keys[i];
		k->r.op.len = n * 4;
		k->r.op.in = type == PSB_MSG_PULL ? NULL : in + off;
		k->r.op.out = type == PSB_MSG_PUSH ? NULL : out + off;
		k->r.op.scale = type == PSB_MSG_PUSH || scale == 1.0f ? 0.0f : scale;
		off += n;
		if (s->sync) {
			struct round *rd = round_of(s, keys[i], type != PSB_MSG_PULL);

			if (type == PSB_MSG_PULL)
				k->r.op.round = rd != NULL ? rd->next : 0;
			else if (rd != NULL)
				k->r.op.round = rd->next++;
		}
	}
	/*
	 * Keys are started in order; a full window drives the ones before. The operation's
	 * slot stays put meanwhile: a callback that starts operations runs only after this.
	 */
	s->in_callbacks++;
	for (i = 0; i < nkeys; i++) {
		rc = psb_client_start(s->c, &op->reqs[i].r);
		if (rc != 0) {
			/* Not started: it ends here, with the error, as if answered so. */
			op->reqs[i].r.op.status = rc;
			op->reqs[i].r.done = 1;
			key_done(&op->reqs[i].r, s);
		}
	}
	s->in_callbacks--;
	run_due(s);
	return ts;
}

int64_t
psbc_push(psbc_t *s, const uint64_t *keys, size_t nkeys, const float *vals, size_t nvals,
		const uint32_t *lens, psbc_cb cb, void *arg)
{
	return start_op(s, PSB_MSG_PUSH, keys, nkeys, vals, NULL, nvals, (uint32_t *)lens, 0.0f,
		cb, arg);
}

int64_t
psbc_pull(psbc_t *s, const uint64_t *keys, size_t nkeys, float *vals, size_t nvals,
		uint32_t *lens, psbc_cb cb, void *arg)
{
	return start_op(s, PSB_MSG_PULL, keys, nkeys, NULL, vals, nvals, lens, 0.0f, cb, arg);
}

int64_t
psbc_pushpull(psbc_t *s, const uint64_t *keys, size_t nkeys, const float *vals, float *outs,
		size_t nvals, const uint32_t *lens, psbc_cb cb, void *arg)
{
	return start_op(s, PSB_MSG_PUSHPULL, keys, nkeys, vals, outs, nvals, (uint32_t *)lens,
		0.0f, cb, arg);
}

int64_t
psbc_pushpull_scaled(psbc_t *s, const uint64_t *keys, size_t nkeys, const float *vals,
		float *outs, size_t nvals, const uint32_t *lens, float scale, psbc_cb cb, void *arg)
{
	return start_op(s, PSB_MSG_PUSHPULL, keys, nkeys, vals, outs, nvals, (uint32_t *)lens,
		scale, cb, arg);
}

void
psbc_progress(psbc_t *s)
{
	if (s == NULL)
		return;
	psb_client_poll(s->c, 0);
	run_due(s);
}

void
psbc_poll(psbc_t *s)
{
	if (s == NULL)
		return;
	psb_client_poll(s->c, 1);
	run_due(s);
}

int
psbc_server_address(const psbc_t *s, int i, char *buf, size_t len)
{
	if (s == NULL || i < 0 || i >= s->nservers || buf == NULL ||
	    (size_t)snprintf(buf, len, "%s", s->names[i]) >= len)
		return PSBC_E_INVAL;
	return 0;
}

int
psbc_test(psbc_t *s, int64_t ts)
{
	struct op *op;

	if (s == NULL)
		return PSBC_E_INVAL;
	psbc_progress(s);
	op = op_of(s, ts);
	if (op == NULL)
		return fail(s, PSBC_E_TS, "timestamp %lld: no such operation",
			(long long)ts);
	return op->state == OP_ENDED;
}

int
psbc_wait(psbc_t *s, int64_t ts)
{
	struct op *op;
	int rc;

	if (s == NULL)
		return PSBC_E_INVAL;
	op = op_of(s, ts);
	if (op == NULL)
		return fail(s, PSBC_E_TS, "timestamp %lld: no such operation (never given, or "
			"already waited for)", (long long)ts);
	while (op->state == OP_RUNNING) {
		psb_client_poll(s->c, 1);
		run_due(s);
		op = op_of(s, ts);	/* a callback's operation may have grown the ring */
	}
	run_due(s);
	op = op_of(s, ts);
	rc = op->status;
	/* Waited for, its callback run: the slot is free. */
	if (!op->due)
		op->state = OP_FREE;
	return rc;
}

int
psbc_wait_all(psbc_t *s)
{
	int rc = 0;
	uint32_t i;

	if (s == NULL)
		return PSBC_E_INVAL;
	while (s->running != 0) {
		psb_client_poll(s->c, 1);
		run_due(s);
	}
	run_due(s);
	for (i = 0; i < s->nring; i++) {
		struct op *op = &s->ring[i];

		if (op->state == OP_ENDED && !op->due) {
			if (rc == 0)
				rc = op->status;
			op->state = OP_FREE;
		}
	}
	return rc;
}

int
psbc_fd(const psbc_t *s)
{
	return s != NULL ? psb_client_fd(s->c) : PSBC_E_INVAL;
}

int
psbc_wait_fds(psbc_t *s, struct pollfd *pfd, int max, int *timeout_ms)
{
	uint64_t ns;
	int n;

	if (s == NULL)
		return PSBC_E_INVAL;
	if (pfd == NULL || timeout_ms == NULL)
		return fail(s, PSBC_E_INVAL, "psbc_wait_fds: pfd and timeout_ms are needed");
	n = psb_client_wait_fds(s->c, pfd, max, &ns);
	if (n < 0)
		return fail(s, PSBC_E_INVAL, "psbc_wait_fds: room for %d descriptors, the session "
			"waits on %d", max, -n);
	*timeout_ms = (int)((ns + 999999) / 1000000);
	return n;
}

int
psbc_rank(const psbc_t *s)
{
	return s != NULL ? psb_client_rank(s->c) : PSBC_E_INVAL;
}

int
psbc_num_servers(const psbc_t *s)
{
	return s != NULL ? s->nservers : PSBC_E_INVAL;
}

int
psbc_server_transport(const psbc_t *s, int i)
{
	int rc;

	if (s == NULL || i < 0 || i >= s->nservers)
		return PSBC_E_INVAL;
	/* chosen at the open: this only reads it */
	rc = psb_client_transport(s->c, (uint16_t)i, NULL, 0);
	return rc == 1 ? PSBC_TRANSPORT_SHM : PSBC_TRANSPORT_UDP;
}

int
psbc_num_workers(const psbc_t *s)
{
	return s != NULL ? (int)s->num_workers : PSBC_E_INVAL;
}

int
psbc_server_range(const psbc_t *s, int i, uint64_t *begin, uint64_t *end)
{
	if (s == NULL || i < 0 || i >= s->nservers)
		return PSBC_E_INVAL;
	if (begin != NULL)
		*begin = s->begin[i];
	if (end != NULL)
		*end = s->end[i];
	return 0;
}

int
psbc_barrier(psbc_t *s, int group)
{
	int rc;

	if (s == NULL || group <= 0 || group > 7)
		return fail(s, PSBC_E_INVAL, "barrier: group %d: an OR of PSBC_GROUP_*", group);
	if (!s->scheduled)
		return fail(s, PSBC_E_INVAL, "barrier: the session has no scheduler");
	rc = psb_client_barrier(s->c, (uint32_t)group, s->barrier_seq[group]);
	if (rc != 0)
		return fail(s, rc == -ETIMEDOUT ? PSBC_E_UNREACHABLE : code_of(rc),
			"barrier of group %d: %s", group, rc == -ETIMEDOUT ?
			"the scheduler did not release it in time" : psb_client_strerror(rc));
	s->barrier_seq[group]++;
	return 0;
}

int
psbc_finalize(psbc_t *s)
{
	int rc;

	if (s == NULL)
		return PSBC_E_INVAL;
	if (!s->scheduled)
		return 0;
	rc = psb_client_finalize(s->c, 5000000000ull);
	if (rc != 0)
		return fail(s, rc == -ETIMEDOUT ? PSBC_E_UNREACHABLE : code_of(rc),
			"finalize: %s", rc == -ETIMEDOUT ?
			"the scheduler did not acknowledge within 5 s" : psb_client_strerror(rc));
	return 0;
}
