/*
 * psb-slurm: run by srun in every task of a Slurm job step, it makes the task one role of a
 * psb job, from Slurm's variables, and execs the role's program with ps-lite's DMLC_*
 * variables set (which psb, psb-ksrv's clients, psb's ps-lite header and libpsb read).
 *
 *   srun -n 4 psb-slurm [options] -- PROGRAM [ARGS...]
 *
 * pushpull (the default): task 0 is the scheduler, tasks 1..S the servers, the rest the
 * workers; every task runs PROGRAM, its role in DMLC_ROLE (ps-lite's way), or with --ksrv
 * the scheduler and the servers run psb-ksrv. staleness: task 0 runs PROGRAM trainer, the
 * others PROGRAM worker, with psb-stale's flags. --print shows it all instead.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "psb_cli.h"
#include "psb_slurm_env.h"

#define ARGS_MAX	4096	/* PROGRAM's arguments (psb-slurm adds at most ARGS_ADDED) */
#define ARGS_ADDED	(2 * ROLE_ARGS_MAX + 32)
#define VARS_MAX	16	/* variables psb-slurm sets */
#define DURATION_MAX	(366ull * 86400 * 1000000000)
#define ROLE_ARGS_MAX	64	/* --trainer-arg, --worker-arg */

enum {
	OPT_JOB = 256, OPT_SERVERS, OPT_PORT, OPT_ROOT_URI, OPT_IFACE, OPT_KSRV, OPT_SYNC,
	OPT_DURATION, OPT_PRINT, OPT_TRAINER_ARG, OPT_WORKER_ARG,
};

static const struct option long_opts[] = {
	{ "job", required_argument, NULL, OPT_JOB },
	{ "servers", required_argument, NULL, OPT_SERVERS },
	{ "port", required_argument, NULL, OPT_PORT },
	{ "root-uri", required_argument, NULL, OPT_ROOT_URI },
	{ "iface", required_argument, NULL, OPT_IFACE },
	{ "ksrv", no_argument, NULL, OPT_KSRV },
	{ "sync", no_argument, NULL, OPT_SYNC },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "trainer-arg", required_argument, NULL, OPT_TRAINER_ARG },
	{ "worker-arg", required_argument, NULL, OPT_WORKER_ARG },
	{ "print", no_argument, NULL, OPT_PRINT },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	PSB_CLI_VERSION_OPTION,
	{ NULL, 0, NULL, 0 },
};

static struct {
	enum psb_slurm_kind kind;
	uint32_t servers;
	bool servers_set;
	uint16_t port;		/* 0: from the job id */
	const char *root_uri;
	const char *iface;
	bool ksrv, sync, print, quiet;
	const char *duration;
	const char *trainer_args[ROLE_ARGS_MAX], *worker_args[ROLE_ARGS_MAX];
	unsigned int ntrainer_args, nworker_args;
} opt = { .kind = PSB_SLURM_PUSHPULL, .servers = 1 };

static void
usage(FILE *out)
{
	fprintf(out,
"Usage: srun [srun options] psb-slurm [options] -- PROGRAM [ARGS...]\n"
"In every task of a Slurm step: the task's role in a psb job from Slurm's variables\n"
"(SLURM_PROCID, SLURM_NTASKS, SLURM_STEP_NODELIST, ...), then PROGRAM exec'd with\n"
"ps-lite's DMLC_* variables set.\n"
"  --job pushpull        (default) task 0 the scheduler, tasks 1..S the servers, the rest\n"
"                        workers; every task runs PROGRAM ARGS (its role: DMLC_ROLE)\n"
"  --job staleness       task 0 runs PROGRAM trainer ARGS --local ROOT:PORT --workers N\n"
"                        --workers-per-node M; task k PROGRAM worker ARGS --id k-1\n"
"                        --trainer ROOT:PORT --local ADDR --workers N --workers-per-node M\n"
"                        (PROGRAM: psb-stale, or one with its flags)\n"
"  --trainer-arg ARG, --worker-arg ARG\n"
"                        staleness: ARG for the trainer (--out DIR, --overwrite) or the\n"
"                        workers (--verify) alone, after ARGS; repeat for more\n"
"  --servers S           pushpull: S servers (default 1)\n"
"  --ksrv                pushpull: the scheduler and the servers run psb-ksrv (PSB_KSRV, or\n"
"                        the one beside psb-slurm), only the workers PROGRAM\n"
"  --sync                pushpull: synchronous rounds (PSB_SYNC=1; psb-ksrv --sync)\n"
"  --duration S          --ksrv: psb-ksrv ends after S seconds whatever happens (default:\n"
"                        with the job, once every worker finished)\n"
"  --port P              the scheduler's (trainer's) port (default: 10000 + (job id * 16 +\n"
"                        step id %% 16) %% 20000, so that jobs sharing a host differ)\n"
"  --root-uri ADDR       the scheduler's (trainer's) address (default: the first host of\n"
"                        the node list, where task 0 runs, resolved)\n"
"  --iface IF            this node's address is IF's IPv4 address (default: SLURMD_NODENAME\n"
"                        resolved); also DMLC_INTERFACE=IF\n"
"  --print               print the export lines and the command instead of running it\n"
"                        (eval \"$(psb-slurm --print ...)\")\n"
"  -q, --quiet           task 0 does not print the job's line on stderr\n"
"  --version             psb-slurm's version and the git revision it was built from\n"
"  -h, --help\n"
"Sets DMLC_ROLE, DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT, DMLC_NUM_SERVER, DMLC_NUM_WORKER,\n"
"DMLC_NODE_HOST, DMLC_INTERFACE (--iface), DMLC_RANK (a worker's), PSB_SYNC and PSB_KSRV\n"
"(when unset and psb-ksrv is found). Exit status: 2 when the step or the options are\n"
"wrong, 127 when PROGRAM cannot be run; else PROGRAM's.\n");
}

/*
 * Where psb-slurm's options end: after "--", or at the first word that is neither an option
 * nor an option's argument; what follows is PROGRAM's, its options included.
 */
static int
options_end(int argc, char **argv)
{
	const struct option *o, *found;
	const char *a, *eq;
	size_t n;
	int i, matches;

	for (i = 1; i < argc; i++) {
		a = argv[i];
		if (strcmp(a, "--") == 0)
			return i + 1;
		if (a[0] != '-' || a[1] == '\0')
			return i;
		if (a[1] != '-')
			continue;	/* -h, -q: none takes an argument */
		eq = strchr(a, '=');
		n = eq != NULL ? (size_t)(eq - a - 2) : strlen(a + 2);
		found = NULL;
		matches = 0;
		for (o = long_opts; o->name != NULL; o++) {
			if (strncmp(o->name, a + 2, n) != 0)
				continue;
			found = o;
			matches++;
			if (strlen(o->name) == n) {
				matches = 1;
				break;
			}
		}
		if (matches == 1 && found->has_arg == required_argument && eq == NULL)
			i++;
	}
	return argc;
}

static void
parse_args(int argc, char **argv, int *prog)
{
	int end = options_end(argc, argv), c;

	while ((c = psb_cli_getopt(end, argv, "qh", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_JOB:
			if (strcmp(optarg, "pushpull") == 0)
				opt.kind = PSB_SLURM_PUSHPULL;
			else if (strcmp(optarg, "staleness") == 0)
				opt.kind = PSB_SLURM_STALENESS;
			else
				psb_cli_usage_error("--job '%s': pushpull or staleness", optarg);
			break;
		case OPT_SERVERS:
			opt.servers = (uint32_t)psb_cli_u64("--servers", optarg, 1,
							    PSB_SLURM_TASKS_MAX);
			opt.servers_set = true;
			break;
		case OPT_PORT: opt.port = (uint16_t)psb_cli_u64("--port", optarg, 1, 65535); break;
		case OPT_ROOT_URI: opt.root_uri = optarg; break;
		case OPT_IFACE:
			if (strlen(optarg) == 0 || strlen(optarg) >= IFNAMSIZ)
				psb_cli_usage_error("--iface '%.32s': an interface name of 1 to %d "
						    "bytes", optarg, IFNAMSIZ - 1);
			opt.iface = optarg;
			break;
		case OPT_KSRV: opt.ksrv = true; break;
		case OPT_SYNC: opt.sync = true; break;
		case OPT_DURATION:
			psb_cli_seconds_in("--duration", optarg, 1000000000ull, DURATION_MAX);
			opt.duration = optarg;
			break;
		case OPT_TRAINER_ARG:
		case OPT_WORKER_ARG:
			if ((c == OPT_TRAINER_ARG ? opt.ntrainer_args : opt.nworker_args) ==
			    ROLE_ARGS_MAX)
				psb_cli_usage_error("more than %d --%s-arg", ROLE_ARGS_MAX,
						    c == OPT_TRAINER_ARG ? "trainer" : "worker");
			if (c == OPT_TRAINER_ARG)
				opt.trainer_args[opt.ntrainer_args++] = optarg;
			else
				opt.worker_args[opt.nworker_args++] = optarg;
			break;
		case OPT_PRINT: opt.print = true; break;
		case 'q': opt.quiet = true; break;
		case 'h': usage(stdout); exit(0);
		default: psb_cli_usage_error("internal: option %d", c);
		}
	}
	if (optind != end)
		psb_cli_usage_error("unexpected argument '%s' before PROGRAM", argv[optind]);
	if (opt.kind == PSB_SLURM_PUSHPULL && opt.ntrainer_args + opt.nworker_args > 0)
		psb_cli_usage_error("--%s-arg is staleness', not pushpull's",
				    opt.ntrainer_args > 0 ? "trainer" : "worker");
	if (opt.kind == PSB_SLURM_STALENESS && (opt.ksrv || opt.sync || opt.servers_set))
		psb_cli_usage_error("%s is pushpull's, not staleness'", opt.ksrv ? "--ksrv" :
				    opt.sync ? "--sync" : "--servers");
	if (opt.duration != NULL && !opt.ksrv)
		psb_cli_usage_error("--duration bounds psb-ksrv: give --ksrv too");
	if (end >= argc && !opt.print)
		psb_cli_usage_error("give the PROGRAM to run (psb-slurm [options] -- PROGRAM "
				    "[ARGS...])");
	if (argc - end > ARGS_MAX)
		psb_cli_usage_error("%d arguments to PROGRAM: at most %d", argc - end, ARGS_MAX);
	*prog = end;
}

static const char *
env_get(const char *name, void *arg)
{
	(void)arg;
	return getenv(name);
}

/* name's IPv4 address (a name or a dotted address) into out, or die naming what it is. */
static void
resolve(const char *name, const char *what, const char *hint, char *out, size_t len)
{
	struct addrinfo hints, *res;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_DGRAM;
	rc = getaddrinfo(name, NULL, &hints, &res);
	if (rc != 0)
		psb_die("%s '%s' has no IPv4 address: %s (%s)", what, name, gai_strerror(rc), hint);
	inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)res->ai_addr)->sin_addr, out,
		  (socklen_t)len);
	freeaddrinfo(res);
}

/* Interface name's IPv4 address into out, or die. */
static void
iface_addr(const char *name, char *out, size_t len)
{
	struct ifaddrs *ifs, *i;
	bool found = false;

	if (getifaddrs(&ifs) != 0)
		psb_die("--iface %s: cannot list the interfaces: %s", name, strerror(errno));
	for (i = ifs; i != NULL && !found; i = i->ifa_next) {
		if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET ||
		    strcmp(i->ifa_name, name) != 0)
			continue;
		inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, out,
			  (socklen_t)len);
		found = true;
	}
	freeifaddrs(ifs);
	if (!found)
		psb_die("--iface %s: no such interface with an IPv4 address on this node", name);
}

static bool
loopback(const char *ip)
{
	return strncmp(ip, "127.", 4) == 0;
}

/* psb-ksrv: PSB_KSRV, the one beside psb-slurm (build tree or installed), else from PATH. */
static const char *
ksrv_path(bool *found)
{
	static char path[PATH_MAX + 32];
	static const char *const rel[] = { "../psb-ksrv/psb-ksrv", "psb-ksrv" };
	const char *e = getenv("PSB_KSRV");
	char self[PATH_MAX], *slash;
	ssize_t n;
	size_t i;

	*found = true;
	if (e != NULL && *e != '\0') {
		if (strlen(e) >= PATH_MAX)
			psb_die("PSB_KSRV: longer than %d bytes", PATH_MAX - 1);
		return e;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash != NULL)
			*slash = '\0';
		for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			snprintf(path, sizeof(path), "%s/%s", self, rel[i]);
			if (access(path, X_OK) == 0 && realpath(path, self) != NULL) {
				snprintf(path, sizeof(path), "%s", self);
				return path;
			}
		}
	}
	*found = false;
	return "psb-ksrv";
}

/* Numbers and addresses for the arguments and variables: each its own, kept until exec. */
#define FMT_BUFS	32

static const char *
fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

static const char *
fmt(const char *f, ...)
{
	static char bufs[FMT_BUFS][64];
	static unsigned int next;
	char *b;
	va_list ap;

	if (next == FMT_BUFS)
		psb_die("internal: more than %d formatted arguments", FMT_BUFS);
	b = bufs[next++];

	va_start(ap, f);
	vsnprintf(b, sizeof(bufs[0]), f, ap);
	va_end(ap);
	return b;
}

struct var {
	const char *name, *value;
};

static struct var vars[VARS_MAX];
static unsigned int nvars;

static void
set(const char *name, const char *value)
{
	if (nvars == VARS_MAX)
		psb_die("internal: more than %d variables", VARS_MAX);
	vars[nvars].name = name;
	vars[nvars].value = value;
	nvars++;
}

static const char *args[ARGS_MAX + ARGS_ADDED + 1];
static int nargs;

static void
arg(const char *a)
{
	if (nargs == ARGS_MAX + ARGS_ADDED)
		psb_die("internal: too many arguments");
	args[nargs++] = a;
}

/* v as one shell word. */
static void
print_word(const char *v)
{
	const char *p;

	for (p = v; *p != '\0'; p++)
		if (strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
			   "._:/,-+=@%", *p) == NULL)
			break;
	if (*p == '\0' && p != v) {
		fputs(v, stdout);
		return;
	}
	putchar('\'');
	for (p = v; *p != '\0'; p++) {
		if (*p == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*p);
	}
	putchar('\'');
}

int
main(int argc, char **argv)
{
	struct psb_slurm_step st;
	struct psb_slurm_place pl;
	char err[512], root[INET_ADDRSTRLEN], node[INET_ADDRSTRLEN];
	const char *ksrv, *role;
	uint32_t per_node;
	bool ksrv_found;
	unsigned int i;
	int prog, rc, k;

	psb_cli_prog("psb-slurm");
	parse_args(argc, argv, &prog);

	rc = psb_slurm_step_read(&st, env_get, NULL, err, sizeof(err));
	if (rc == -ENOENT)
		psb_die("%s: not in a Slurm step? (srun psb-slurm [options] -- PROGRAM)", err);
	if (rc != 0)
		psb_die("%s", err);
	rc = psb_slurm_place(opt.kind, st.procid, st.ntasks, opt.servers, &pl, err, sizeof(err));
	if (rc != 0)
		psb_die("%s", err);
	if (opt.port == 0)
		opt.port = psb_slurm_port(st.jobid, st.stepid);

	/* addresses: the scheduler's where task 0 runs, this node's */
	if (opt.root_uri != NULL)
		resolve(opt.root_uri, "--root-uri", "give an address", root, sizeof(root));
	else
		resolve(st.first_host, fmt("the first host of %s", st.nodelist_var),
			"give --root-uri ADDR", root, sizeof(root));
	if (opt.iface != NULL)
		iface_addr(opt.iface, node, sizeof(node));
	else
		resolve(st.node_host, "this node", "give --iface IF", node, sizeof(node));
	/*
	 * A host name that resolves to loopback (Debian's "127.0.1.1 HOST" line) is no address
	 * for the other nodes; one given by --root-uri or --iface is taken as given.
	 */
	if (st.nnodes > 1 && opt.root_uri == NULL && loopback(root))
		psb_die("the scheduler's address %s (of %s) is a loopback address, and the step "
			"spans %u nodes: give --root-uri ADDR", root, st.first_host, st.nnodes);
	if (st.nnodes > 1 && opt.iface == NULL && loopback(node))
		psb_die("this node's address %s (of %s) is a loopback address, and the step spans "
			"%u nodes: give --iface IF", node, st.node_host, st.nnodes);

	role = psb_slurm_role_name(pl.role);
	set("DMLC_ROLE", role);
	set("DMLC_PS_ROOT_URI", root);
	set("DMLC_PS_ROOT_PORT", fmt("%u", opt.port));
	if (opt.kind == PSB_SLURM_PUSHPULL)
		set("DMLC_NUM_SERVER", fmt("%u", pl.servers));
	set("DMLC_NUM_WORKER", fmt("%u", pl.workers));
	set("DMLC_NODE_HOST", node);
	if (opt.iface != NULL)
		set("DMLC_INTERFACE", opt.iface);
	if (pl.role == PSB_SLURM_WORKER && opt.kind == PSB_SLURM_PUSHPULL)
		set("DMLC_RANK", fmt("%u", pl.rank));
	ksrv = ksrv_path(&ksrv_found);
	if (opt.kind == PSB_SLURM_PUSHPULL) {
		set("PSB_SYNC", opt.sync ? "1" : "0");
		/* a ps-lite program's scheduler and servers start psb-ksrv: this one */
		if (ksrv_found && getenv("PSB_KSRV") == NULL)
			set("PSB_KSRV", ksrv);
	}

	if (opt.kind == PSB_SLURM_PUSHPULL && opt.ksrv && pl.role == PSB_SLURM_SCHEDULER) {
		arg(ksrv);
		arg("--ip"); arg(root);
		arg("--port"); arg("0");
		arg("--scheduler-port"); arg(fmt("%u", opt.port));
		arg("--scheduler-only");
		arg("--num-servers"); arg(fmt("%u", pl.servers));
		arg("--num-workers"); arg(fmt("%u", pl.workers));
	} else if (opt.kind == PSB_SLURM_PUSHPULL && opt.ksrv && pl.role == PSB_SLURM_SERVER) {
		arg(ksrv);
		arg("--ip"); arg(node);
		arg("--port"); arg("0");
		arg("--scheduler"); arg(fmt("%s:%u", root, opt.port));
		arg(opt.sync ? "--sync" : "--async");
	} else if (prog < argc) {
		arg(argv[prog]);
		if (opt.kind == PSB_SLURM_STALENESS)
			arg(pl.role == PSB_SLURM_TRAINER ? "trainer" : "worker");
		for (k = prog + 1; k < argc; k++)
			arg(argv[k]);
		for (i = 0; pl.role == PSB_SLURM_TRAINER && i < opt.ntrainer_args; i++)
			arg(opt.trainer_args[i]);
		for (i = 0; opt.kind == PSB_SLURM_STALENESS && pl.role == PSB_SLURM_WORKER &&
		     i < opt.nworker_args; i++)
			arg(opt.worker_args[i]);
	}
	if (opt.ksrv && opt.duration != NULL && nargs > 0 && args[0] == ksrv) {
		arg("--duration");
		arg(opt.duration);
	}
	if (opt.kind == PSB_SLURM_STALENESS && nargs > 0) {
		/* the trainer's node holds one task that is no worker */
		per_node = st.tpn.first > 1 ? st.tpn.first - 1 : 1;
		if (st.tpn.most_rest > per_node)
			per_node = st.tpn.most_rest;
		if (per_node > pl.workers)
			per_node = pl.workers;
		if (pl.role == PSB_SLURM_TRAINER) {
			arg("--local"); arg(fmt("%s:%u", root, opt.port));
		} else {
			arg("--id"); arg(fmt("%u", pl.rank));
			arg("--trainer"); arg(fmt("%s:%u", root, opt.port));
			arg("--local"); arg(node);
		}
		arg("--workers"); arg(fmt("%u", pl.workers));
		arg("--workers-per-node"); arg(fmt("%u", per_node));
	}
	args[nargs] = NULL;

	if (opt.print) {
		for (i = 0; i < nvars; i++) {
			printf("export %s=", vars[i].name);
			print_word(vars[i].value);
			putchar('\n');
		}
		printf("# job %u step %u, task %u of %u on %s (node %u of %u): %s", st.jobid,
		       st.stepid, st.procid, st.ntasks, st.node_host, st.nodeid, st.nnodes, role);
		if (pl.role == PSB_SLURM_SERVER || pl.role == PSB_SLURM_WORKER)
			printf(" %u of %u", pl.rank, pl.role == PSB_SLURM_SERVER ? pl.servers :
			       pl.workers);
		printf("\n# exec:");
		for (k = 0; k < nargs; k++) {
			putchar(' ');
			print_word(args[k]);
		}
		printf(nargs == 0 ? " (no PROGRAM given)\n" : "\n");
		return fflush(stdout) == 0 ? 0 : 1;
	}

	for (i = 0; i < nvars; i++)
		if (setenv(vars[i].name, vars[i].value, 1) != 0)
			psb_die("cannot set %s: %s", vars[i].name, strerror(errno));
	if (st.procid == 0 && !opt.quiet) {
		if (opt.kind == PSB_SLURM_PUSHPULL)
			fprintf(stderr, "psb-slurm: job %u step %u, %u task(s) on %u node(s): "
				"scheduler %s:%u (%s), %u server(s), %u worker(s)%s%s\n", st.jobid,
				st.stepid, st.ntasks, st.nnodes, root, opt.port, st.first_host,
				pl.servers, pl.workers, opt.sync ? ", synchronous" : "",
				opt.ksrv ? "; scheduler and servers psb-ksrv" : "");
		else
			fprintf(stderr, "psb-slurm: job %u step %u, %u task(s) on %u node(s): "
				"trainer %s:%u (%s), %u worker(s)\n", st.jobid, st.stepid,
				st.ntasks, st.nnodes, root, opt.port, st.first_host, pl.workers);
	}
	fflush(NULL);
	execvp(args[0], (char *const *)args);
	fprintf(stderr, "psb-slurm: cannot run %s (task %u, %s): %s%s\n", args[0], st.procid,
		role, strerror(errno), args[0] == ksrv && !ksrv_found ?
		" (psb-ksrv not found beside psb-slurm: set PSB_KSRV)" : "");
	return 127;
}
