/* Experiment documents: schema tables, whole-document checks, results directories. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "psb_cli.h"
#include "psb_exp.h"
#include "psb_proto.h"

#define OFF(t, m)	offsetof(struct t, m)

const char *const psb_exp_kind_names[] = { "pushpull", "serve", "staleness", NULL };
const char *const psb_exp_stale_mode_names[] = { "multicast", "pull", "filesystem", "epgm",
	NULL };
const char *const psb_exp_role_names[] = { "server", "worker", "scheduler", "trainer", NULL };
static const char *const huge_names[] = { "auto", "yes", "no", NULL };
/* as enum psb_idle_mode (lib/idle) */
static const char *const idle_names[] = { "auto", "poll", "sleep", NULL };
static const char *const sync_value_names[] = { "total", "round", NULL };
/* enum psb_bench_mode, same order */
static const char *const mode_names[] = {
	"PUSH_THEN_PULL", "PUSH_PULL", "PUSH_ONLY", "PULL_ONLY", NULL,
};

const struct psb_conf_field psb_exp_node_table[] = {
	{ "role", PSB_CONF_ENUM, OFF(psb_exp_node, role), 0, 0, "worker", 0, 0,
	  psb_exp_role_names, NULL, "what this appliance is in the job" },
	{ "ports", PSB_CONF_STRLIST, OFF(psb_exp_node, ports), 0, 0, NULL, 0, 8, NULL, NULL,
	  "port specs: memif:server|client:/abs.sock, af_packet:IF, tap:IF, pcap:IN:OUT, ring, "
	  "null, null:sink, pci:BDF" },
	{ "ip", PSB_CONF_IP, OFF(psb_exp_node, ip), 0, 0, NULL, 0, 0, NULL, NULL,
	  "this node's address" },
	{ "mac", PSB_CONF_STRING, OFF(psb_exp_node, mac), sizeof(((struct psb_exp_node *)0)->mac),
	  0, "", 0, 0, NULL, NULL, "this node's MAC (\"\": the first port's)" },
	{ "udp_port", PSB_CONF_UINT, OFF(psb_exp_node, udp_port), 0, 0, "9430", 1, 65535, NULL,
	  NULL, "data port" },
	{ "scheduler", PSB_CONF_IP, OFF(psb_exp_node, scheduler), 0, 0, "0.0.0.0", 0, 0, NULL,
	  NULL, "the scheduler (0.0.0.0: none); a server at this address hosts it" },
	{ "scheduler_port", PSB_CONF_UINT, OFF(psb_exp_node, scheduler_port), 0, 0, "9431", 1,
	  65535, NULL, NULL, "the scheduler's port" },
	{ "server", PSB_CONF_IP, OFF(psb_exp_node, server), 0, 0, "0.0.0.0", 0, 0, NULL, NULL,
	  "worker without a scheduler: the one server" },
	{ "num_workers", PSB_CONF_UINT, OFF(psb_exp_node, num_workers), 0, 0, "1", 1, 1024, NULL,
	  NULL, "workers in the job" },
	{ "num_servers", PSB_CONF_UINT, OFF(psb_exp_node, num_servers), 0, 0, "1", 1, 128, NULL,
	  NULL, "servers in the job" },
	{ "rank", PSB_CONF_UINT, OFF(psb_exp_node, rank), 0, 0, "0", 0, 1023, NULL, NULL,
	  "rank of this worker when there is no scheduler" },
	{ "workers", PSB_CONF_UINT, OFF(psb_exp_node, workers), 0, 0, "1", 1, 32, NULL, NULL,
	  "worker roles in this process" },
	{ "shards", PSB_CONF_UINT, OFF(psb_exp_node, shards), 0, 0, "1", 1, 16, NULL, NULL,
	  "server shards, one role each" },
	{ "sync", PSB_CONF_BOOL, OFF(psb_exp_node, sync), 0, 0, "true", 0, 0, NULL, NULL,
	  "synchronous rounds (false: asynchronous updates)" },
	{ "sync_value", PSB_CONF_ENUM, OFF(psb_exp_node, sync_value), 0, 0, "total", 0, 0,
	  sync_value_names, NULL, "server, synchronous rounds: what a key holds and its "
	  "round's answers carry: the sum of every closed round (total) or of the last one "
	  "alone (round: an allreduce through the server)" },
	{ "mtu", PSB_CONF_UINT, OFF(psb_exp_node, mtu), 0, 0, "0", 0, 9000, NULL, NULL,
	  "wanted MTU, lowered to what the port allows (0: an af_packet or tap interface's "
	  "own, left unchanged; 9000 on other ports)" },
	{ "max_value", PSB_CONF_SIZE, OFF(psb_exp_node, max_value), 0, 0, "64MiB", 4,
	  PSB_MAX_VALUE, NULL, NULL, "largest value a server accepts" },
	{ "lcores", PSB_CONF_STRING, OFF(psb_exp_node, lcores),
	  sizeof(((struct psb_exp_node *)0)->lcores), 0, "", 0, 0, NULL, NULL,
	  "lcores (EAL -l; \"\": a CPU no other psb on this host polls); one role per lcore "
	  "when there are enough" },
	{ "mem_mb", PSB_CONF_UINT, OFF(psb_exp_node, mem_mb), 0, 0, "0", 0, 1 << 20, NULL, NULL,
	  "memory for DPDK in MB (0: what the pools need)" },
	{ "mbufs", PSB_CONF_UINT, OFF(psb_exp_node, mbufs), 0, 0, "0", 0, 1 << 24, NULL, NULL,
	  "mbufs in the pool (0: from rings and ports)" },
	{ "huge", PSB_CONF_ENUM, OFF(psb_exp_node, huge), 0, 0, "auto", 0, 0, huge_names, NULL,
	  "hugepages: use if free, require, never" },
	{ "yield", PSB_CONF_DURATION, OFF(psb_exp_node, yield), 0, 0, "200us", 0, 1e9, NULL, NULL,
	  "lcores let waiting threads (psbctl, scrapers) run this often (0: never)" },
	{ "idle", PSB_CONF_ENUM, OFF(psb_exp_node, idle), 0, 0, "auto", 0, 0, idle_names, NULL,
	  "what an lcore does while its roles find nothing to do: poll on (dedicated cores), "
	  "sleep (back off to sleeps, woken by traffic), auto (sleep where the process's CPUs "
	  "are shared, with other psb processes or among its own lcores)" },
	{ "idle_sleep", PSB_CONF_DURATION, OFF(psb_exp_node, idle_sleep), 0, 0, "0s", 0, 1e7,
	  NULL, NULL, "an idle lcore sleeps this long at most (the cap of its back-off), and "
	  "node.idle auto then sleeps (0: 1ms; a staleness worker or trainer 100us and sleeps)" },
	{ "connect_timeout", PSB_CONF_DURATION, OFF(psb_exp_node, connect_timeout), 0, 0, "60s",
	  0, 3600e9, NULL, NULL, "each wait of the setup at most: a memif server, ARP of the "
	  "scheduler and servers, REGISTER, BARRIER (0: forever); then psb says what did not "
	  "answer and fails" },
	{ "heartbeat", PSB_CONF_DURATION, OFF(psb_exp_node, heartbeat), 0, 0, "500ms", 0,
	  3600e9, NULL, NULL, "a node registered with a scheduler tells it it is alive this "
	  "often (0: never, and the scheduler does not watch it)" },
	{ "dead_after", PSB_CONF_DURATION, OFF(psb_exp_node, dead_after), 0, 0, "3s", 0, 3600e9,
	  NULL, NULL, "scheduler: a watched node silent this long is dead; the workers are told "
	  "which server died and fail (0: never)" },
	{ "keep_serving", PSB_CONF_BOOL, OFF(psb_exp_node, keep_serving), 0, 0, "false", 0, 0,
	  NULL, NULL, "scheduler, servers: stay once every worker of the job finished (false: "
	  "the job ends then, as ps-lite's Finalize ends it)" },
	{ "echo", PSB_CONF_BOOL, OFF(psb_exp_node, echo), 0, 0, "false", 0, 0, NULL, NULL,
	  "answer psb ECHO requests at the data port: 1 KiB, 1000 a second at most (the echo "
	  "role)" },
	{ "exception", PSB_CONF_STRING, OFF(psb_exp_node, exception),
	  sizeof(((struct psb_exp_node *)0)->exception), 0, "", 0, 0, NULL, NULL,
	  "the exception port toward the host's kernel (a port spec, tap:IFNAME): every frame "
	  "that is not psb's goes there bit for bit, and what the kernel sends goes out of the "
	  "first port (\"\": none, such frames are dropped)" },
	{ "roce_qps", PSB_CONF_UINT, OFF(psb_exp_node, roce_qps), 0, 0, "1024", 1, 65536, NULL,
	  NULL, "RoCE queue pairs the passthrough counts at once; a new one past them takes the "
	  "place of one not seen lately (a second-chance clock; counted as evicted)" },
	{ "shm_clients", PSB_CONF_UINT, OFF(psb_exp_node, shm_clients), 0, 0, "4", 0, 64, NULL,
	  NULL, "server: memif slots for client processes on this host (psb's client library "
	  "and Python package use them instead of UDP), on the socket IP-PORT.sock in psb's "
	  "shm directory (0: none; other nodes open none)" },
	{ "exception_queue", PSB_CONF_UINT, OFF(psb_exp_node, exception_queue), 0, 0, "4096", 64,
	  65536, NULL, NULL, "frames the rx role may queue for the host at most (a power of 2); "
	  "past it they are lost, counted as the rx role's ring_full" },
	{ "roce_accounting", PSB_CONF_BOOL, OFF(psb_exp_node, roce_accounting), 0, 0, "true", 0,
	  0, NULL, NULL, "count the RoCE traffic passed through per queue pair (false: pass it "
	  "uncounted)" },
	{ "isolate", PSB_CONF_BOOL, OFF(psb_exp_node, isolate), 0, 0, "false", 0, 0, NULL, NULL,
	  "put the first port in rte_flow isolated mode with rules that steer only psb's UDP "
	  "ports and groups to psb, all else to the kernel; a port that refuses falls back to "
	  "the exception port" },
	{ "file_prefix", PSB_CONF_STRING, OFF(psb_exp_node, file_prefix),
	  sizeof(((struct psb_exp_node *)0)->file_prefix), 0, "", 0, 0, NULL, NULL,
	  "DPDK runtime prefix (\"\": psb-PID)" },
	{ "ctl_requests_per_pass", PSB_CONF_UINT, OFF(psb_exp_node, ctl_requests_per_pass), 0, 0,
	  "4", 1, 4096, NULL, NULL, "control requests (and new connections) served per pass of the "
	  "main loop, over all clients in turn; the rest waits for the next pass" },
	{ "ctl_bytes_per_pass", PSB_CONF_SIZE, OFF(psb_exp_node, ctl_bytes_per_pass), 0, 0,
	  "64KiB", 512, 64 << 20, NULL, NULL, "control-socket input read per pass of the main "
	  "loop, over all clients" },
	{ "ctl_share_pct", PSB_CONF_UINT, OFF(psb_exp_node, ctl_share_pct), 0, 0, "3", 1, 100,
	  NULL, NULL, "percent of the main lcore's time control clients (socket, Prometheus) may "
	  "take when it also runs the data plane (100: no limit)" },
	{ "ctl_clients", PSB_CONF_UINT, OFF(psb_exp_node, ctl_clients), 0, 0, "32", 1, 1024, NULL,
	  NULL, "control-socket clients at once; one more is told busy" },
	{ "ctl_reply_max", PSB_CONF_SIZE, OFF(psb_exp_node, ctl_reply_max), 0, 0, "1MiB", 64 << 10,
	  1ull << 30, NULL, NULL, "replies a control client has not read; beyond, it is "
	  "disconnected" },
	{ "ctl_idle_timeout", PSB_CONF_DURATION, OFF(psb_exp_node, ctl_idle_timeout), 0, 0, "60s",
	  0, 86400e9, NULL, NULL, "a control client without a request this long is disconnected "
	  "(0: never)" },
	{ "file_max", PSB_CONF_SIZE, OFF(psb_exp_node, file_max), 0, 0, "1MiB", 1024, 1ull << 30,
	  NULL, NULL, "largest document or command file psb reads (load, start, --cmdline-file)" },
	{ "prometheus_connections", PSB_CONF_UINT, OFF(psb_exp_node, prometheus_connections), 0,
	  0, "16", 1, 1024, NULL, NULL, "HTTP connections at once; a new one replaces the one "
	  "waiting longest for its request" },
	{ "prometheus_timeout", PSB_CONF_DURATION, OFF(psb_exp_node, prometheus_timeout), 0, 0,
	  "5s", 100e6, 600e9, NULL, NULL, "an HTTP connection has this long for each request, "
	  "from its start or its previous request's end to the end of the reply" },
	{ "prometheus_request_max", PSB_CONF_SIZE, OFF(psb_exp_node, prometheus_request_max), 0,
	  0, "16KiB", 4096, 1 << 20, NULL, NULL, "memory of an HTTP connection for its request "
	  "(line and headers); a longer request is refused" },
	{ NULL, 0, 0, 0, 0, NULL, 0, 0, NULL, NULL, NULL },
};

static const struct psb_conf_field store_table[] = {
	{ "max_bytes", PSB_CONF_SIZE, OFF(psb_exp_store, max_bytes), 0, 0, "0", 0, 1ull << 50,
	  NULL, NULL, "server: memory of the store (values, sync sums, request state); a push "
	  "to a new key beyond it is refused with ERROR no_memory (0: derived at start)" },
	{ "max_keys", PSB_CONF_UINT, OFF(psb_exp_store, max_keys), 0, 0, "0", 0, 1u << 31, NULL,
	  NULL, "server: keys in the store at most (0: derived at start)" },
	{ "reasm_bytes", PSB_CONF_SIZE, OFF(psb_exp_store, reasm_bytes), 0, 0, "0", 0, 1ull << 50,
	  NULL, NULL, "server: pushes being reassembled, all senders (announced bytes); beyond "
	  "it a push is refused with ERROR busy (0: derived at start)" },
	{ "reasm_sender_bytes", PSB_CONF_SIZE, OFF(psb_exp_store, reasm_sender_bytes), 0, 0, "0",
	  0, 1ull << 50, NULL, NULL, "server: the same, per sender (0: derived at start)" },
	{ "reasm_timeout", PSB_CONF_DURATION, OFF(psb_exp_store, reasm_timeout), 0, 0, "2s",
	  1e6, 3600e9, NULL, NULL, "server: a push whose next segment does not come within this "
	  "is discarded whole" },
	{ "resend_burst", PSB_CONF_SIZE, OFF(psb_exp_store, resend_burst), 0, 0, "0", 0,
	  1ull << 50, NULL, NULL, "server: what a sender can have sent again at once (answers "
	  "to its repeated requests and REPAIRs, REPAIR_RESPs: frames' bytes), per shard; "
	  "beyond it, and its rate, nothing is sent again (0: two answers of node.max_value)" },
	{ "resend_rate", PSB_CONF_RATE, OFF(psb_exp_store, resend_rate), 0, 0, "0", 0, 400e9,
	  NULL, NULL, "server: the rate a sender's resend budget refills at, per shard (0: "
	  "1Gbps)" },
	{ NULL, 0, 0, 0, 0, NULL, 0, 0, NULL, NULL, NULL },
};

static const struct psb_conf_field pushpull_table[] = {
	{ "len", PSB_CONF_SIZE, OFF(psb_exp_pushpull, len), 0, 0, "1024000", 4, PSB_MAX_VALUE,
	  NULL, NULL, "value size per key (a float32 array: multiple of 4)" },
	{ "repeat", PSB_CONF_UINT, OFF(psb_exp_pushpull, repeat), 0, 0, "10", 1, 1e15, NULL,
	  NULL, "iterations" },
	{ "mode", PSB_CONF_ENUM, OFF(psb_exp_pushpull, mode), 0, 0, "PUSH_PULL", 0, 0, mode_names,
	  NULL, "ps-lite's test_benchmark mode" },
	{ "keys", PSB_CONF_UINT, OFF(psb_exp_pushpull, keys), 0, 0, "40", 1, 1 << 20, NULL, NULL,
	  "keys per server" },
	{ "window", PSB_CONF_SIZE, OFF(psb_exp_pushpull, window), 0, 0, "32MiB", 4, 1ull << 32,
	  NULL, NULL, "value bytes in flight" },
	{ "batch", PSB_CONF_SIZE, OFF(psb_exp_pushpull, batch), 0, 0, "4KiB", 0, 8192, NULL, NULL,
	  "values up to this size travel as records of BATCH messages, as many as a frame holds "
	  "(4KiB: two to a jumbo frame; 0: never)" },
	{ "duration", PSB_CONF_DURATION, OFF(psb_exp_pushpull, duration), 0, 0, "0s", 0, 0, NULL,
	  NULL, "stop after this long, counted from the start of the measured run (after the "
	  "warm-up; reset_state does not restart it; 0: after repeat iterations)" },
	{ "warmup", PSB_CONF_UINT, OFF(psb_exp_pushpull, warmup), 0, 0, "0", 0, 1e15, NULL, NULL,
	  "iterations run before the metrics are reset and the measured run starts" },
	{ "timeout", PSB_CONF_DURATION, OFF(psb_exp_pushpull, timeout), 0, 0, "20ms", 10e3, 60e9,
	  NULL, NULL, "resend a request unanswered this long (doubles per retry)" },
	{ "max_retries", PSB_CONF_UINT, OFF(psb_exp_pushpull, max_retries), 0, 0, "50", 0,
	  1 << 30, NULL, NULL, "then fail it (0: retry forever)" },
	{ "verify", PSB_CONF_BOOL, OFF(psb_exp_pushpull, verify), 0, 0, "false", 0, 0, NULL, NULL,
	  "check every value read back and every key after the run (sync: exact sums; "
	  "async: every worker's pushes counted apart; every worker of the job must verify)" },
	{ "rate", PSB_CONF_RATE, OFF(psb_exp_pushpull, rate), 0, 0, "0", 0, 0, NULL, NULL,
	  "value bits per second each worker role sends at most, not their total (with "
	  "node.workers N the process sends up to N times it; 0: unlimited); can be set while "
	  "running" },
	{ NULL, 0, 0, 0, 0, NULL, 0, 0, NULL, NULL, NULL },
};

static const struct psb_conf_field serve_table[] = {
	{ "duration", PSB_CONF_DURATION, OFF(psb_exp_serve, duration), 0, 0, "0s", 0, 0, NULL,
	  NULL, "end the measured window after this long (0: when stopped)" },
	{ NULL, 0, 0, 0, 0, NULL, 0, 0, NULL, NULL, NULL },
};

static const struct psb_conf_field staleness_table[] = {
	{ "mode", PSB_CONF_ENUM, OFF(psb_exp_staleness, mode), 0, 0, "multicast", 0, 0,
	  psb_exp_stale_mode_names, NULL, "how workers get versions: psb's multicast, pulling "
	  "them from the trainer, a shared directory, or ZeroMQ's epgm (the old transport)" },
	{ "push_frequency", PSB_CONF_DURATION, OFF(psb_exp_staleness, push_frequency), 0, 0,
	  "0.2s", 1e6, 3600e9, NULL, NULL, "the trainer publishes a version this often" },
	{ "data_size", PSB_CONF_DOUBLE, OFF(psb_exp_staleness, data_size), 0, 0, "10", 0,
	  68719.476736, NULL, NULL, "megabytes (10^6 bytes) a version, as --data_size" },
	{ "pull_frequency", PSB_CONF_DURATION, OFF(psb_exp_staleness, pull_frequency), 0, 0,
	  "0.2s", 1e6, 3600e9, NULL, NULL, "pull, filesystem: a worker looks for a newer "
	  "version this often" },
	{ "post_frequency", PSB_CONF_DURATION, OFF(psb_exp_staleness, post_frequency), 0, 0,
	  "2s", 1e6, 3600e9, NULL, NULL, "a worker posts its mean version this often" },
	{ "step_frequency", PSB_CONF_DURATION, OFF(psb_exp_staleness, step_frequency), 0, 0,
	  "5ms", 1e5, 3600e9, NULL, NULL, "a worker samples the version it holds this often" },
	{ "max_version", PSB_CONF_UINT, OFF(psb_exp_staleness, max_version), 0, 0, "500", 1, 1e9,
	  NULL, NULL, "stop after this version" },
	{ "max_time", PSB_CONF_DURATION, OFF(psb_exp_staleness, max_time), 0, 0, "60s", 1e6,
	  604800e9, NULL, NULL, "or after this long" },
	{ "workers", PSB_CONF_UINT, OFF(psb_exp_staleness, workers), 0, 0, "4", 1, 4096, NULL,
	  NULL, "workers; the trainer starts once every one joined" },
	{ "workers_per_node", PSB_CONF_UINT, OFF(psb_exp_staleness, workers_per_node), 0, 0, "1",
	  1, 4096, NULL, NULL, "workers sharing a host" },
	{ "port", PSB_CONF_UINT, OFF(psb_exp_staleness, port), 0, 0, "7001", 1, 65535, NULL,
	  NULL, "the trainer's UDP port at node.ip: workers post there" },
	{ "trainer", PSB_CONF_IP, OFF(psb_exp_staleness, trainer), 0, 0, "0.0.0.0", 0, 0, NULL,
	  NULL, "the trainer's address (0.0.0.0: node.ip, in the trainer's own document)" },
	{ "group", PSB_CONF_IP, OFF(psb_exp_staleness, group), 0, 0, "239.18.0.1", 0, 0, NULL,
	  NULL, "multicast, epgm: the group" },
	{ "group_port", PSB_CONF_UINT, OFF(psb_exp_staleness, group_port), 0, 0, "7000", 1, 65535,
	  NULL, NULL, "multicast, epgm: the group's port" },
	{ "dir", PSB_CONF_STRING, OFF(psb_exp_staleness, dir),
	  sizeof(((struct psb_exp_staleness *)0)->dir), 0, "versions", 0, 0, NULL, NULL,
	  "filesystem: the versions' directory, relative to the results directory and inside "
	  "it" },
	{ "rate", PSB_CONF_RATE, OFF(psb_exp_staleness, rate), 0, 0, "5Gbps", 1e6, 400e9, NULL,
	  NULL, "the sender's pace (multicast, pull, epgm)" },
	{ "parity", PSB_CONF_UINT, OFF(psb_exp_staleness, parity), 0, 0, "32", 0, 128, NULL, NULL,
	  "parity symbols a group of 64 segments may get as repairs (0: resend segments)" },
	{ "repair_share", PSB_CONF_UINT, OFF(psb_exp_staleness, repair_share), 0, 0, "25", 1, 100,
	  NULL, NULL, "multicast, pull: repairs (and their announcements) take at most this "
	  "percent of the rate, whatever receivers ask" },
	{ "receiver_share", PSB_CONF_UINT, OFF(psb_exp_staleness, receiver_share), 0, 0, "25", 1,
	  100, NULL, NULL, "multicast, pull: one receiver (address and id) may draw this percent "
	  "of the repair share; its NACKs beyond are counted and ignored" },
	{ "nack_receivers", PSB_CONF_UINT, OFF(psb_exp_staleness, nack_receivers), 0, 0, "256", 8,
	  4096, NULL, NULL, "multicast, pull: receivers the sender keeps a budget for, the one "
	  "heard from longest ago making room" },
	{ "key", PSB_CONF_UINT, OFF(psb_exp_staleness, key), 0, 0, "0", 0, 0, NULL, NULL,
	  "a number trainer and workers share: joins without it are refused" },
	{ "budget", PSB_CONF_SIZE, OFF(psb_exp_staleness, budget), 0, 0, "1GiB", 1, 1ull << 40,
	  NULL, NULL, "the trainer's memory for versions (at least 2 of them)" },
	{ "join_timeout", PSB_CONF_DURATION, OFF(psb_exp_staleness, join_timeout), 0, 0, "10s",
	  100e6, 3600e9, NULL, NULL, "the trainer waits this long for every worker to join" },
	{ "end_timeout", PSB_CONF_DURATION, OFF(psb_exp_staleness, end_timeout), 0, 0, "10s",
	  100e6, 3600e9, NULL, NULL, "and this long at the end for each to hold the final "
	  "version" },
	{ "epgm_window", PSB_CONF_DURATION, OFF(psb_exp_staleness, epgm_window), 0, 0, "1s",
	  10e6, 60e9, NULL, NULL, "epgm: the recovery window" },
	{ "verify", PSB_CONF_BOOL, OFF(psb_exp_staleness, verify), 0, 0, "false", 0, 0, NULL,
	  NULL, "workers check every byte of every version (as psb-stale worker --verify)" },
	{ NULL, 0, 0, 0, 0, NULL, 0, 0, NULL, NULL, NULL },
};

static const struct psb_conf_field output_table[] = {
	{ "dir", PSB_CONF_STRING, OFF(psb_exp_output, dir), sizeof(((struct psb_exp_output *)0)->dir),
	  0, "results", 0, 0, NULL, NULL, "results go to DIR/<name>/, DIR relative to psb's results directory "
	  "(--output-dir) and inside it" },
	{ "overwrite", PSB_CONF_BOOL, OFF(psb_exp_output, overwrite), 0, 0, "false", 0, 0, NULL,
	  NULL, "replace earlier results of the same name (else the run is refused)" },
	{ "log_every", PSB_CONF_DURATION, OFF(psb_exp_output, log_every), 0, 0, "1s", 0, 0, NULL,
	  NULL, "progress line period (0: none); can be set while running" },
	{ "counters_file", PSB_CONF_STRING, OFF(psb_exp_output, counters_file),
	  sizeof(((struct psb_exp_output *)0)->counters_file), 0, "", 0, 0, NULL, NULL,
	  "append every counter as a JSON line to this file in output.dir (relative, "
	  "inside it)" },
	{ "counters_every", PSB_CONF_DURATION, OFF(psb_exp_output, counters_every), 0, 0, "1s",
	  10e6, 3600e9, NULL, NULL, "period of the counters file" },
	{ "counters_max", PSB_CONF_SIZE, OFF(psb_exp_output, counters_max), 0, 0, "64MiB", 0,
	  1e12, NULL, NULL, "move the counters file to FILE.1 before it passes this size (0: "
	  "never); renamed or removed, a new one is started" },
	{ NULL, 0, 0, 0, 0, NULL, 0, 0, NULL, NULL, NULL },
};

const struct psb_conf_field psb_exp_table[] = {
	{ "name", PSB_CONF_STRING, OFF(psb_exp_conf, name), sizeof(((struct psb_exp_conf *)0)->name),
	  1, NULL, 0, 0, NULL, NULL, "trial name: names the results directory" },
	{ "kind", PSB_CONF_ENUM, OFF(psb_exp_conf, kind), 0, 1, NULL, 0, 0, psb_exp_kind_names,
	  NULL, "what the experiment does" },
	{ "description", PSB_CONF_STRING, OFF(psb_exp_conf, description),
	  sizeof(((struct psb_exp_conf *)0)->description), 0, "", 0, 0, NULL, NULL,
	  "free text kept with the results" },
	{ "node", PSB_CONF_OBJECT, OFF(psb_exp_conf, node), 0, 0, NULL, 0, 0, NULL,
	  psb_exp_node_table, "the appliance" },
	{ "store", PSB_CONF_OBJECT, OFF(psb_exp_conf, store), 0, 0, NULL, 0, 0, NULL,
	  store_table, "the server's parameter store: memory budgets (fixed at start)" },
	{ "pushpull", PSB_CONF_OBJECT, OFF(psb_exp_conf, pushpull), 0, 0, NULL, 0, 0, NULL,
	  pushpull_table, "kind pushpull" },
	{ "serve", PSB_CONF_OBJECT, OFF(psb_exp_conf, serve), 0, 0, NULL, 0, 0, NULL, serve_table,
	  "kind serve" },
	{ "staleness", PSB_CONF_OBJECT, OFF(psb_exp_conf, staleness), 0, 0, NULL, 0, 0, NULL,
	  staleness_table, "kind staleness" },
	{ "output", PSB_CONF_OBJECT, OFF(psb_exp_conf, output), 0, 0, NULL, 0, 0, NULL,
	  output_table, "results and logs" },
	{ NULL, 0, 0, 0, 0, NULL, 0, 0, NULL, NULL, NULL },
};

static const char *const settable[] = {
	"pushpull.rate", "output.log_every", "output.counters_every", NULL,
};

bool
psb_exp_settable(const char *path)
{
	unsigned int i;

	for (i = 0; settable[i] != NULL; i++)
		if (strcmp(settable[i], path) == 0)
			return true;
	return false;
}

/*
 * Paths of a document are relative to psb's results directory and stay inside it: a
 * document may come over the control socket, and must not make psb write (or delete,
 * with output.overwrite) anywhere else. An absolute place is the operator's to give on
 * the command line (--output-dir, --results, --stats-file, --counters-file).
 */
static int
inside_check(const char *key, const char *v, char *err, size_t errlen)
{
	const char *p = v;
	size_t n;

	if (v[0] == '/')
		return psb_fail(err, errlen, "%s: must be relative and inside the results directory, "
				"got \"%s\"", key, v);
	while (*p != '\0') {
		n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return psb_fail(err, errlen, "%s: must be relative and inside the results "
					"directory (no \"..\"), got \"%s\"", key, v);
		p += n;
		p += *p == '/';
	}
	return 0;
}

static int
stale_check(const struct psb_exp_staleness *st, char *err, size_t errlen)
{
	uint32_t g = st->group;

	if ((st->mode == PSB_EXP_STALE_MULTICAST || st->mode == PSB_EXP_STALE_EPGM) &&
	    (g >> 28) != 14)
		return psb_fail(err, errlen, "staleness.group: mode %s needs a multicast address "
				"(224.0.0.0 to 239.255.255.255), got %u.%u.%u.%u",
				psb_exp_stale_mode_names[st->mode], g >> 24, (g >> 16) & 255,
				(g >> 8) & 255, g & 255);
	if (st->step_frequency > st->post_frequency)
		return psb_fail(err, errlen, "staleness.step_frequency: longer than post_frequency "
				"(a post would carry no sample)");
	if (st->workers_per_node > st->workers)
		return psb_fail(err, errlen, "staleness.workers_per_node: %llu is more than "
				"staleness.workers %llu", (unsigned long long)st->workers_per_node,
				(unsigned long long)st->workers);
	if (st->mode == PSB_EXP_STALE_FILESYSTEM && st->dir[0] == '\0')
		return psb_fail(err, errlen, "staleness.dir: mode filesystem needs a directory");
	return inside_check("staleness.dir", st->dir, err, errlen);
}

/* A staleness worker's document, the appliance's receiver role: what it can run. */
static int
stale_node_check(const struct psb_exp_conf *c, char *err, size_t errlen)
{
	const struct psb_exp_staleness *st = &c->staleness;

	if (st->trainer == 0)
		return psb_fail(err, errlen, "staleness.trainer: psb takes part as a worker and "
				"needs the trainer's address here (node.ip is this worker's own); a "
				"trainer's document says node.role trainer (psb) or runs in "
				"psb-stale trainer --config FILE");
	if (st->mode != PSB_EXP_STALE_MULTICAST && st->mode != PSB_EXP_STALE_PULL)
		return psb_fail(err, errlen, "staleness.mode: psb's receiver takes versions by "
				"multicast or pull; %s workers are psb-stale worker processes",
				psb_exp_stale_mode_names[st->mode]);
	if (c->node.rank >= st->workers)
		return psb_fail(err, errlen, "node.rank: worker id %llu, but staleness.workers is "
				"%llu (ids 0 to %llu)", (unsigned long long)c->node.rank,
				(unsigned long long)st->workers,
				(unsigned long long)st->workers - 1);
	if (st->group_port == c->node.udp_port)
		return psb_fail(err, errlen, "staleness.group_port: %llu is node.udp_port, psb's "
				"own: give one apart", (unsigned long long)st->group_port);
	return 0;
}

/* A trainer's document, the appliance's trainer role: what it can run. */
static int
trainer_node_check(const struct psb_exp_conf *c, char *err, size_t errlen)
{
	const struct psb_exp_staleness *st = &c->staleness;
	uint64_t data = (uint64_t)(st->data_size * 1e6 + 0.5);

	if (st->trainer != 0 && st->trainer != c->node.ip)
		return psb_fail(err, errlen, "staleness.trainer: the trainer is this node: leave it "
				"out or give node.ip's address");
	if (st->mode != PSB_EXP_STALE_MULTICAST && st->mode != PSB_EXP_STALE_PULL)
		return psb_fail(err, errlen, "staleness.mode: psb's trainer sends versions by "
				"multicast or pull; %s runs in psb-stale trainer --config FILE",
				psb_exp_stale_mode_names[st->mode]);
	if (st->port == c->node.udp_port)
		return psb_fail(err, errlen, "staleness.port: %llu is node.udp_port, psb's own: "
				"give one apart", (unsigned long long)st->port);
	if (st->budget / (data ? data : 1) < 2)
		return psb_fail(err, errlen, "staleness.budget: %llu B hold fewer than 2 versions "
				"of %llu B", (unsigned long long)st->budget, (unsigned long long)data);
	return 0;
}

int
psb_exp_check(const struct psb_exp_conf *c, bool need_node, char *err, size_t errlen)
{
	const struct psb_exp_node *n = &c->node;
	char why[256];

	if (psb_cli_name_check(c->name, sizeof(c->name) - 1, why, sizeof(why)) != 0)
		return psb_fail(err, errlen, "name: %s (it names the results directory)", why);
	if (n->file_prefix[0] != '\0' &&
	    psb_cli_name_check(n->file_prefix, PSB_PREFIX_MAX, why, sizeof(why)) != 0)
		return psb_fail(err, errlen, "node.file_prefix: %s (it names the DPDK runtime "
				"directory)", why);
	if ((n->exception_queue & (n->exception_queue - 1)) != 0)
		return psb_fail(err, errlen, "node.exception_queue: %llu is not a power of 2",
				(unsigned long long)n->exception_queue);
	if (n->sync_value != 0 && !n->sync)
		return psb_fail(err, errlen, "node.sync_value: round is a synchronous store's "
				"(node.sync is false)");
	if (n->isolate && n->exception[0] == '\0')
		return psb_fail(err, errlen, "node.isolate: needs node.exception, the port the "
				"host's traffic takes where the first port refuses isolation");
	if ((c->pushpull.len & 3) != 0)
		return psb_fail(err, errlen, "pushpull.len: %llu is not a multiple of 4 (values are "
				"float32 arrays)", (unsigned long long)c->pushpull.len);
	if (c->pushpull.len > n->max_value)
		return psb_fail(err, errlen, "pushpull.len: %llu exceeds node.max_value %llu",
				(unsigned long long)c->pushpull.len,
				(unsigned long long)n->max_value);
	if (c->kind == PSB_EXP_PUSHPULL && n->role != PSB_EXP_ROLE_WORKER && need_node)
		return psb_fail(err, errlen, "node.role: kind pushpull runs on a worker, got \"%s\"",
				psb_exp_role_names[n->role]);
	if (c->kind == PSB_EXP_SERVE && (n->role == PSB_EXP_ROLE_WORKER ||
	    n->role == PSB_EXP_ROLE_TRAINER) && need_node)
		return psb_fail(err, errlen, "node.role: kind serve runs on a server or scheduler, "
				"got \"%s\"%s", psb_exp_role_names[n->role],
				n->role == PSB_EXP_ROLE_TRAINER ? " (a trainer runs kind staleness)" :
				"");
	if (c->kind == PSB_EXP_STALENESS && need_node && n->role != PSB_EXP_ROLE_WORKER &&
	    n->role != PSB_EXP_ROLE_TRAINER)
		return psb_fail(err, errlen, "node.role: psb takes part in a staleness experiment as "
				"the trainer (node.role trainer) or a worker (node.role worker, its "
				"id node.rank), got \"%s\"", psb_exp_role_names[n->role]);
	if (c->kind == PSB_EXP_STALENESS && stale_check(&c->staleness, err, errlen) != 0)
		return -EINVAL;
	if (c->kind == PSB_EXP_STALENESS && need_node &&
	    (n->role == PSB_EXP_ROLE_TRAINER ? trainer_node_check(c, err, errlen) :
	     stale_node_check(c, err, errlen)) != 0)
		return -EINVAL;
	if (n->mtu != 0 && n->mtu < 576)
		return psb_fail(err, errlen, "node.mtu: expected 0 (the port's own) or 576 to 9000, "
				"got %llu", (unsigned long long)n->mtu);
	if (c->output.dir[0] == '\0')
		return psb_fail(err, errlen, "output.dir: expected a directory, got \"\"");
	if (c->output.counters_max != 0 && c->output.counters_max < PSB_EXP_COUNTERS_MAX_MIN)
		return psb_fail(err, errlen, "output.counters_max: expected 0 (never rotate) or at "
				"least 64KiB, got %llu B", (unsigned long long)c->output.counters_max);
	if (inside_check("output.dir", c->output.dir, err, errlen) != 0 ||
	    inside_check("output.counters_file", c->output.counters_file, err, errlen) != 0)
		return -EINVAL;
	if (!need_node)
		return 0;
	if (n->ports.n == 0)
		return psb_fail(err, errlen, "node.ports: expected at least one port spec, e.g. "
				"[\"memif:server:/run/psb.sock\"]");
	if (n->ip == 0)
		return psb_fail(err, errlen, "node.ip: expected this node's address, got none");
	if (c->kind == PSB_EXP_STALENESS)
		return 0;	/* trainer and workers meet, without a scheduler */
	if (n->role == PSB_EXP_ROLE_WORKER && n->scheduler == 0 && n->server == 0)
		return psb_fail(err, errlen, "node.server: a worker needs node.scheduler or "
				"node.server");
	if (n->role == PSB_EXP_ROLE_WORKER && n->scheduler == 0 &&
	    n->rank + n->workers > n->num_workers)
		return psb_fail(err, errlen, "node.rank: rank %llu with %llu worker role(s) exceeds "
				"node.num_workers %llu", (unsigned long long)n->rank,
				(unsigned long long)n->workers, (unsigned long long)n->num_workers);
	if (n->role == PSB_EXP_ROLE_SCHEDULER && n->scheduler != 0 && n->scheduler != n->ip)
		return psb_fail(err, errlen, "node.scheduler: a scheduler runs where it is: give "
				"node.ip's address or leave it out");
	return 0;
}

int
psb_exp_load(struct psb_exp_conf *c, const json_t *doc, bool need_node, char *err,
		size_t errlen)
{
	struct psb_exp_conf *tmp;
	unsigned int k;
	int rc;

	if (!json_is_object(doc))
		return psb_fail(err, errlen, "expected a JSON object (an experiment document)");
	tmp = malloc(sizeof(*tmp));
	if (tmp == NULL)
		return -ENOMEM;
	memcpy(tmp, c, sizeof(*tmp));
	rc = psb_conf_parse(psb_exp_table, tmp, doc, "", err, errlen);
	if (rc != 0)
		goto out;
	/* a section of another kind is a mistake (a copied document), not something to ignore */
	for (k = 0; k < PSB_EXP_KIND_MAX; k++)
		if ((int)k != tmp->kind && json_object_get(doc, psb_exp_kind_names[k]) != NULL) {
			rc = psb_fail(err, errlen, "%s: section of kind %s in an experiment of kind "
					"%s", psb_exp_kind_names[k], psb_exp_kind_names[k],
					psb_exp_kind_names[tmp->kind]);
			goto out;
		}
	if (need_node && json_object_get(doc, "node") == NULL) {
		rc = psb_fail(err, errlen, "node: expected the appliance's settings (role, ports, "
				"ip, ...), got none");
		goto out;
	}
	rc = psb_exp_check(tmp, need_node, err, errlen);
	if (rc == 0)
		memcpy(c, tmp, sizeof(*c));
out:
	free(tmp);
	return rc;
}

int
psb_exp_load_file(struct psb_exp_conf *c, const char *path, uint64_t max, bool need_node,
		char *err, size_t errlen)
{
	json_t *doc;
	int rc;

	doc = psb_exp_read_json(path, max, &rc, err, errlen);
	if (doc == NULL)
		return rc;
	rc = psb_exp_load(c, doc, need_node, err, errlen);
	json_decref(doc);
	return rc;
}

json_t *
psb_exp_dump(const struct psb_exp_conf *c)
{
	json_t *j = psb_conf_dump(psb_exp_table, c);
	unsigned int k;

	for (k = 0; j != NULL && k < PSB_EXP_KIND_MAX; k++)
		if ((int)k != c->kind)
			json_object_del(j, psb_exp_kind_names[k]);
	return j;
}

static const char *
section_diff(const struct psb_conf_field *table, const char *section, const void *a,
		const void *b, char *buf, size_t len)
{
	json_t *ja = psb_conf_dump(table, a);
	json_t *jb = psb_conf_dump(table, b);
	const struct psb_conf_field *f;
	const char *res = NULL;

	for (f = table; f->key != NULL && ja != NULL && jb != NULL; f++)
		if (!json_equal(json_object_get(ja, f->key), json_object_get(jb, f->key))) {
			snprintf(buf, len, "%s.%s", section, f->key);
			res = buf;
			break;
		}
	json_decref(ja);
	json_decref(jb);
	return res;
}

const char *
psb_exp_fixed_diff(const struct psb_exp_conf *a, const struct psb_exp_conf *b,
		const json_t *doc, char *buf, size_t len)
{
	const char *d = NULL;

	if (json_object_get(doc, "node") != NULL)
		d = section_diff(psb_exp_node_table, "node", &a->node, &b->node, buf, len);
	if (d == NULL && json_object_get(doc, "store") != NULL)
		d = section_diff(store_table, "store", &a->store, &b->store, buf, len);
	return d;
}

bool
psb_exp_fixed_path(const char *path)
{
	return strncmp(path, "node.", 5) == 0 || strcmp(path, "node") == 0 ||
	       strncmp(path, "store.", 6) == 0 || strcmp(path, "store") == 0;
}

int
psb_exp_output_path(const char *root, const struct psb_exp_conf *c, const char *leaf, char *out,
		size_t len)
{
	const char *sep = "/";
	int n;

	if (root == NULL || root[0] == '\0')
		root = sep = "";
	n = leaf != NULL ? snprintf(out, len, "%s%s%s/%s", root, sep, c->output.dir, leaf) :
		snprintf(out, len, "%s%s%s", root, sep, c->output.dir);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int
psb_exp_results_path(const char *root, const struct psb_exp_conf *c, char *out, size_t len)
{
	return psb_exp_output_path(root, c, c->name, out, len);
}

/* What psb writes into a results directory: the only files it ever removes from one. */
static const char *const result_files[] = { "result.json", "result.csv", "result.txt",
	PSB_EXP_EXTRA_FILES, NULL };

/* -ENOTEMPTY (the first other entry in left) when dir holds more than psb's result files. */
static int
only_results(const char *dir, char *left, size_t leftlen)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int rc = 0;

	if (d == NULL)
		return 0;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		unsigned int i;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		for (i = 0; result_files[i] != NULL; i++)
			if (strcmp(de->d_name, result_files[i]) == 0)
				break;
		if (result_files[i] == NULL) {
			snprintf(left, leftlen, "%s", de->d_name);
			rc = -ENOTEMPTY;
		}
	}
	closedir(d);
	return rc;
}

struct prune_ent {
	char name[256];
	time_t mtime;
	uint64_t bytes;
	char other[256];		/* a file psb did not write, "" if none */
};

static int
prune_newest_first(const void *a, const void *b)
{
	const struct prune_ent *x = a, *y = b;

	if (x->mtime != y->mtime)
		return x->mtime < y->mtime ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* dir/name as a results directory: when written, its size, what else it holds. 0: one. */
static int
prune_look(const char *dir, const char *name, struct prune_ent *e)
{
	char path[PATH_MAX], f[PATH_MAX + 16];
	struct stat st;
	unsigned int i;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path) ||
	    lstat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		return -1;
	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->mtime = st.st_mtime;
	(void)only_results(path, e->other, sizeof(e->other));
	for (i = 0; result_files[i] != NULL; i++) {
		snprintf(f, sizeof(f), "%s/%s", path, result_files[i]);
		if (lstat(f, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		e->bytes += (uint64_t)st.st_size;
		if (i == 0)
			e->mtime = st.st_mtime;	/* result.json: written last */
	}
	return 0;
}

int
psb_exp_prune(const char *dir, long keep, uint64_t older_than_s, time_t now, bool dry,
		void (*fn)(void *arg, const struct psb_exp_pruned *p), void *arg)
{
	struct prune_ent *ents = NULL, *tmp;
	size_t n = 0, cap = 0, i;
	long rank = 0;
	struct dirent *de;
	int removed = 0;
	DIR *d;

	if (keep < 0 && older_than_s == 0)
		return -EINVAL;
	d = opendir(dir);
	if (d == NULL)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(ents->name))
			continue;
		if (n == cap) {
			cap = cap != 0 ? 2 * cap : 64;
			tmp = realloc(ents, cap * sizeof(*ents));
			if (tmp == NULL) {
				closedir(d);
				free(ents);
				return -ENOMEM;
			}
			ents = tmp;
		}
		if (prune_look(dir, de->d_name, &ents[n]) == 0)
			n++;
	}
	closedir(d);
	if (n != 0)
		qsort(ents, n, sizeof(*ents), prune_newest_first);
	for (i = 0; i < n; i++) {
		struct psb_exp_pruned p = { .name = ents[i].name, .mtime = ents[i].mtime,
			.bytes = ents[i].bytes };
		char path[PATH_MAX];

		if (ents[i].other[0] != '\0') {
			p.foreign = ents[i].other;
		} else if (keep >= 0 && rank++ < keep) {
			p.why = "one of the newest";
		} else if (older_than_s != 0 && now - ents[i].mtime <= (time_t)older_than_s) {
			p.why = "younger";
		} else {
			snprintf(path, sizeof(path), "%s/%s", dir, ents[i].name);
			if (dry || psb_rmdir_flat(path, result_files, true, NULL, 0) == 0) {
				p.removed = true;
				removed++;
			} else {
				p.why = "could not be removed";
			}
		}
		if (fn != NULL)
			fn(arg, &p);
	}
	free(ents);
	return removed;
}

int
psb_exp_results_claim(const char *root, const struct psb_exp_conf *c, char *err, size_t errlen)
{
	char path[PATH_MAX], other[256];
	struct stat st;

	if (psb_exp_results_path(root, c, path, sizeof(path)) != 0)
		return psb_fail(err, errlen, "output.dir: path too long");
	if (stat(path, &st) != 0)
		return 0;
	if (!c->output.overwrite) {
		snprintf(err, errlen, "name: results of \"%s\" already exist in %s (choose another "
			 "name, move them away, or set output.overwrite)", c->name, path);
		return -EEXIST;
	}
	if (only_results(path, other, sizeof(other)) != 0) {
		snprintf(err, errlen, "output.overwrite: %s holds \"%s\", which psb did not write "
			 "(move it away; psb replaces only its own results)", path, other);
		return -EEXIST;
	}
	return 0;
}

/* mkdir -p */
static int
mkdirs(const char *path)
{
	char buf[PATH_MAX], *p;

	if ((size_t)snprintf(buf, sizeof(buf), "%s", path) >= sizeof(buf))
		return -ENAMETOOLONG;
	for (p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int
psb_exp_output_dir(const char *root, const struct psb_exp_conf *c, char *err, size_t errlen)
{
	char base[PATH_MAX], rroot[PATH_MAX], rbase[PATH_MAX];
	size_t n;
	int rc;

	if (psb_exp_output_path(root, c, NULL, base, sizeof(base)) != 0)
		return psb_fail(err, errlen, "output.dir: path too long");
	rc = mkdirs(base);
	if (rc != 0) {
		snprintf(err, errlen, "output.dir: cannot create %s: %s", base, strerror(-rc));
		return rc;
	}
	/* a symbolic link on the way may lead elsewhere: where it really is must be inside */
	if (realpath(root != NULL && root[0] != '\0' ? root : ".", rroot) == NULL ||
	    realpath(base, rbase) == NULL) {
		rc = -errno;
		snprintf(err, errlen, "output.dir: cannot resolve %s: %s", base, strerror(errno));
		return rc;
	}
	n = strlen(rroot);
	if (n > 1 && (strncmp(rbase, rroot, n) != 0 || (rbase[n] != '\0' && rbase[n] != '/')))
		return psb_fail(err, errlen, "output.dir: %s leads to %s, outside the results "
				"directory %s (a symbolic link?)", base, rbase, rroot);
	return 0;
}

static int
write_file(const char *dir, const char *name, char *text)
{
	char path[PATH_MAX];
	FILE *f;
	int rc = 0;

	if (text == NULL)
		return -ENOMEM;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -ENAMETOOLONG;
	f = fopen(path, "w");
	if (f == NULL)
		return -errno;
	if (fputs(text, f) < 0)
		rc = -EIO;
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		rc = -errno;
	if (fclose(f) != 0 && rc == 0)
		rc = -EIO;
	return rc;
}

static char *
render(void (*fn)(FILE *, const json_t *, const char *const *), const json_t *rows,
		const char *const *cols)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL)
		return NULL;
	fn(f, rows, cols);
	fclose(f);
	return buf;
}

int
psb_exp_results_write(const char *root, const struct psb_exp_conf *c, const json_t *doc,
		const json_t *rows, const char *const *cols, char *where, size_t wherelen, char *err,
		size_t errlen)
{
	return psb_exp_results_write_with(root, c, doc, rows, cols, NULL, NULL, where, wherelen,
					  err, errlen);
}

int
psb_exp_results_write_with(const char *root, const struct psb_exp_conf *c,
		const json_t *doc, const json_t *rows, const char *const *cols,
		psb_exp_extra_fn extra, void *arg, char *where, size_t wherelen, char *err,
		size_t errlen)
{
	char base[PATH_MAX], final[PATH_MAX + 128], tmp[PATH_MAX + 128], old[PATH_MAX + 128];
	json_t *stamped;
	char *text;
	struct stat st;
	unsigned int n;
	int rc;

	if (psb_exp_output_path(root, c, NULL, base, sizeof(base)) != 0 ||
	    psb_exp_results_path(root, c, final, PATH_MAX) != 0)
		return psb_fail(err, errlen, "output.dir: path too long");
	rc = psb_exp_output_dir(root, c, err, errlen);
	if (rc != 0)
		return rc;
	/* psb's own directories: only its result files are ever removed from them */
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp.%d", base, c->name, (int)getpid());
	psb_rmdir_flat(tmp, result_files, true, NULL, 0);
	if (mkdir(tmp, 0755) != 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
		return rc;
	}
	/* what wrote it: a copy of doc's top level takes the version and revision */
	stamped = psb_cli_json_stamp(json_copy((json_t *)(uintptr_t)doc));
	text = stamped != NULL ? json_dumps(stamped, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
	json_decref(stamped);
	rc = write_file(tmp, "result.json", text);
	free(text);
	if (rc == 0) {
		text = render(psb_exp_csv_print, rows, cols);
		rc = write_file(tmp, "result.csv", text);
		free(text);
	}
	if (rc == 0) {
		text = render(psb_exp_table_print, rows, cols);
		rc = write_file(tmp, "result.txt", text);
		free(text);
	}
	if (rc == 0 && extra != NULL)
		rc = extra(tmp, arg);
	if (rc != 0) {
		snprintf(err, errlen, "cannot write results into %s: %s", tmp, strerror(-rc));
		psb_rmdir_flat(tmp, result_files, true, NULL, 0);
		return rc;
	}
	if (stat(final, &st) == 0) {
		if (c->output.overwrite) {
			rc = psb_exp_results_claim(root, c, err, errlen);
			if (rc != 0) {
				n = (unsigned int)strnlen(err, errlen);
				snprintf(err + n, errlen - n, "; this run's results are in %s", tmp);
				return rc;
			}
			/* move the old results aside first: a directory rename cannot replace one */
			snprintf(old, sizeof(old), "%s/.%s.old.%d", base, c->name, (int)getpid());
			psb_rmdir_flat(old, result_files, true, NULL, 0);
			if (rename(final, old) != 0) {
				rc = -errno;
				snprintf(err, errlen, "cannot move the old %s aside: %s", final,
					 strerror(errno));
				return rc;
			}
			psb_rmdir_flat(old, result_files, true, NULL, 0);
		} else {
			/* appeared while the experiment ran: keep both, never replace */
			for (n = 2; n < 10000; n++) {
				snprintf(old, sizeof(old), "%.*s.%u", PATH_MAX, final, n);
				if (stat(old, &st) != 0)
					break;
			}
			memcpy(final, old, sizeof(final));
		}
	}
	if (rename(tmp, final) != 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot move results to %s: %s (they are in %s)", final,
			 strerror(errno), tmp);
		return rc;
	}
	if (where != NULL)
		snprintf(where, wherelen, "%s", final);
	return 0;
}

/* A cell as text: strings as they are, numbers compactly. */
static void
cell(const json_t *v, char *buf, size_t len)
{
	if (json_is_string(v))
		snprintf(buf, len, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, len, "%.6g", json_real_value(v));
	else if (json_is_true(v))
		snprintf(buf, len, "true");
	else if (json_is_false(v))
		snprintf(buf, len, "false");
	else
		snprintf(buf, len, "%s", v == NULL ? "" : "-");
}

void
psb_exp_table_print(FILE *out, const json_t *rows, const char *const *cols)
{
	size_t w[64] = { 0 }, ncol, r, k;
	char buf[128];

	for (ncol = 0; cols[ncol] != NULL && ncol < 64; ncol++)
		w[ncol] = strlen(cols[ncol]);
	for (r = 0; r < json_array_size(rows); r++)
		for (k = 0; k < ncol; k++) {
			cell(json_object_get(json_array_get(rows, r), cols[k]), buf, sizeof(buf));
			if (strlen(buf) > w[k])
				w[k] = strlen(buf);
		}
	for (k = 0; k < ncol; k++)
		fprintf(out, "%s%*s", k ? "  " : "", (int)w[k], cols[k]);
	fprintf(out, "\n");
	for (r = 0; r < json_array_size(rows); r++) {
		for (k = 0; k < ncol; k++) {
			cell(json_object_get(json_array_get(rows, r), cols[k]), buf, sizeof(buf));
			fprintf(out, "%s%*s", k ? "  " : "", (int)w[k], buf);
		}
		fprintf(out, "\n");
	}
}

void
psb_exp_csv_print(FILE *out, const json_t *rows, const char *const *cols)
{
	char buf[128];
	size_t r, k;

	for (k = 0; cols[k] != NULL; k++)
		fprintf(out, "%s%s", k ? "," : "", cols[k]);
	fprintf(out, "\n");
	for (r = 0; r < json_array_size(rows); r++) {
		for (k = 0; cols[k] != NULL; k++) {
			cell(json_object_get(json_array_get(rows, r), cols[k]), buf, sizeof(buf));
			/* names are plain; quote anything that could break a CSV field */
			if (strpbrk(buf, ",\"\n") != NULL) {
				fprintf(out, "%s\"", k ? "," : "");
				for (const char *p = buf; *p != '\0'; p++) {
					if (*p == '"')
						fputc('"', out);
					fputc(*p, out);
				}
				fprintf(out, "\"");
			} else {
				fprintf(out, "%s%s", k ? "," : "", buf);
			}
		}
		fprintf(out, "\n");
	}
}
