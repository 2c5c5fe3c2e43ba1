#!/bin/bash
# A one-host Slurm, for trying psb's Slurm jobs (psb-slurm, docs/RUNNING.md) and for the
# tests: slurmctld, slurmd and a munged of its own, and for sacct slurmdbd over a MariaDB of
# its own, from Debian 12's packages (installed when missing). Every file of it is under one
# directory: /etc/slurm, /etc/munge and a MariaDB of the system are left alone. Its node is
# this host (hostname -s), declared with 16 CPUs whatever the machine has, so that 16 tasks
# fit on a small box; its one partition is psb (the default, no time limit).
#
#   scripts/slurm-local.sh up [--no-accounting]
#                       start it, or say that it is up; then use it with the line it prints:
#                       export SLURM_CONF=/run/psb-slurm/slurm.conf
#                       --no-accounting: no slurmdbd and MariaDB (a quicker start; no sacct)
#   scripts/slurm-local.sh down
#                       cancel its jobs, stop every daemon it started, remove its files;
#                       nothing to do when it is down
#   scripts/slurm-local.sh status
#                       sinfo and exit 0 when it is up; exit 3 when it is down, 1 when only
#                       a part of it runs (down clears that)
#   scripts/slurm-local.sh env
#                       the export line alone: eval "$(scripts/slurm-local.sh env)"
#   scripts/slurm-local.sh --help | --version
#
# Environment: PSB_SLURM_DIR, its directory (default /run/psb-slurm: gone at reboot, as its
# daemons are); PSB_SLURM_PORT, slurmctld's port (default 6917; slurmd, slurmdbd and MariaDB
# the three after it, so that a system Slurm's 6817 and 6818 stay free). Needs root.
set -euo pipefail

DIR=${PSB_SLURM_DIR:-/run/psb-slurm}
PORT=${PSB_SLURM_PORT:-6917}
CONF=$DIR/slurm.conf
NODE=$(hostname -s)
CPUS=16
MAX_ARRAY=1001
WAIT=30		# seconds a daemon gets to come up, and a step to run
STOP_WAIT=15	# seconds a daemon gets to end after SIGTERM, before SIGKILL
# the daemons it starts, by the name the kernel gives them (/proc/PID/comm)
DAEMONS=(slurmd slurmstepd slurmctld slurmscriptd slurmdbd mariadbd munged)
PKGS=(slurm-wlm munge)
DB_PKGS=(slurmdbd mariadb-server mariadb-client)

say() { echo "slurm-local.sh: $*"; }
die() { echo "slurm-local.sh: $*" >&2; exit 1; }
usage_error() { echo "slurm-local.sh: $*; try 'slurm-local.sh --help'" >&2; exit 2; }
usage() { awk 'NR > 1 { if (!/^#/) exit; sub(/^# ?/, ""); print }' "$0"; }

cmd=${1:-}
[ $# -gt 0 ] && shift
ACCOUNTING=1
case $cmd in
up)
	while [ $# -gt 0 ]; do
		case $1 in
		--no-accounting) ACCOUNTING=0 ;;
		*) usage_error "unexpected argument '$1' to up" ;;
		esac
		shift
	done ;;
down|status|env) [ $# = 0 ] || usage_error "unexpected argument '$1' to $cmd" ;;
-h|--help|help) usage; exit 0 ;;
--version) exec "$(dirname "$0")/version.sh" line slurm-local.sh ;;
"") usage_error "give a command: up, down, status or env" ;;
-*) usage_error "unrecognized option '$cmd'" ;;
*) usage_error "unknown command '$cmd'" ;;
esac
[[ "$PORT" =~ ^[0-9]+$ ]] && [ "$PORT" -ge 1024 ] && [ "$PORT" -le 65532 ] ||
	usage_error "PSB_SLURM_PORT '$PORT': a port from 1024 to 65532"
[[ "$DIR" = /* && "$DIR" != */ && "$DIR" != *..* ]] ||
	usage_error "PSB_SLURM_DIR '$DIR': an absolute path, without '..' or a trailing '/'"
if [ "$cmd" = env ]; then
	echo "export SLURM_CONF=$CONF"
	exit 0
fi
[ "$(id -u)" = 0 ] || die "needs root (it starts Slurm's daemons and installs packages)"

# Every daemon started here carries this variable: the processes found with it are ours,
# whatever became of their pid files, and nobody else's are ever signalled. slurmstepd,
# which slurmd starts with an empty environment, is ours when it works in $DIR.
MARK="PSB_SLURM_OF=$DIR"
export PSB_SLURM_OF=$DIR SLURM_CONF=$CONF

# ours [NAME]: the pids of the live daemons started for $DIR (those named NAME)
ours() {
	local p comm state
	for p in /proc/[0-9]*; do
		comm=$(cat "$p/comm" 2>/dev/null) || continue
		if [ -n "${1:-}" ]; then
			[ "$comm" = "$1" ] || continue
		else
			[[ " ${DAEMONS[*]} " == *" $comm "* ]] || continue
		fi
		state=$(sed 's/.*) //' "$p/stat" 2>/dev/null | cut -d' ' -f1) || continue
		[ "$state" != Z ] || continue
		if [ "$comm" = slurmstepd ]; then
			[[ "$(readlink "$p/cwd" 2>/dev/null)/" == "$DIR"/* ]] || continue
		else
			tr '\0' '\n' 2>/dev/null < "$p/environ" | grep -qxF "$MARK" || continue
		fi
		echo "${p#/proc/}"
	done
}
running() { [ -n "$(ours "$1")" ]; }

# stop NAME: SIGTERM to our NAME daemons, SIGKILL to those alive after STOP_WAIT seconds
stop() {
	local pids deadline
	pids=$(ours "$1")
	[ -n "$pids" ] || return 0
	# shellcheck disable=SC2086
	kill -TERM $pids 2>/dev/null || true
	deadline=$((SECONDS + STOP_WAIT))
	while [ $SECONDS -lt $deadline ] && running "$1"; do sleep 0.2; done
	pids=$(ours "$1")
	[ -n "$pids" ] || return 0
	say "$1 (pid ${pids//$'\n'/ }) still running ${STOP_WAIT} s after SIGTERM: SIGKILL"
	# shellcheck disable=SC2086
	kill -KILL $pids 2>/dev/null || true
	deadline=$((SECONDS + 5))
	while [ $SECONDS -lt $deadline ] && running "$1"; do sleep 0.2; done
	! running "$1" || echo "slurm-local.sh: $1 (pid ${pids//$'\n'/ }) survived SIGKILL" >&2
}

# state: up, down or partial (some of it runs, or its directory is left without it)
state() {
	local d n=0 want=(munged slurmctld slurmd)
	[ -f "$DIR/accounting" ] && [ "$(cat "$DIR/accounting")" = 1 ] && want+=(slurmdbd mariadbd)
	for d in "${want[@]}"; do running "$d" && n=$((n + 1)); done
	if [ $n = ${#want[@]} ] && [ -f "$DIR/.up" ] &&
		timeout 10 scontrol ping 2>/dev/null | grep -q 'is UP'; then
		echo up
	elif [ -z "$(ours)" ] && [ ! -e "$DIR" ]; then
		echo down
	else
		echo partial
	fi
}

# teardown: jobs cancelled, our daemons stopped (slurmd before slurmctld: a slurmd whose
# controller went retries its registration and ends only after that retry's sleep), files
# removed
teardown() {
	local jobs deadline d
	if running slurmctld; then
		jobs=$(timeout 10 squeue -h -o %A 2>/dev/null || true)
		if [ -n "$jobs" ]; then
			say "cancelling job(s) ${jobs//$'\n'/ }"
			# shellcheck disable=SC2086
			timeout 10 scancel $jobs 2>/dev/null || true
			deadline=$((SECONDS + WAIT))
			while [ $SECONDS -lt $deadline ] &&
				[ -n "$(timeout 10 squeue -h -o %A 2>/dev/null || true)" ]; do
				sleep 0.5
			done
		fi
	fi
	for d in "${DAEMONS[@]}"; do
		stop "$d"
	done
	if [ -e "$DIR" ]; then
		# never a directory this script did not make
		[ -f "$DIR/.psb-slurm" ] ||
			die "$DIR is not psb's one-host Slurm (no .psb-slurm in it): left alone"
		rm -rf "$DIR"
	fi
}

# fail MESSAGE [LOG]: say what did not come up and the tail of its log, stop what was started
fail() {
	echo "slurm-local.sh: $1" >&2
	if [ -n "${2:-}" ] && [ -s "$2" ]; then
		echo "slurm-local.sh: the last lines of $2:" >&2
		tail -n 20 "$2" | sed 's/^/    /' >&2
	fi
	teardown >/dev/null 2>&1 || true
	echo "slurm-local.sh: what had started is stopped again" >&2
	exit 1
}

# wait_until WHAT DAEMON LOG CMD...: CMD succeeds within WAIT seconds while DAEMON (a name of
# ours, or "") runs; else fail naming WHAT with LOG's tail
wait_until() {
	local what=$1 daemon=$2 log=$3 deadline=$((SECONDS + WAIT))
	shift 3
	while ! timeout 10 "$@" >/dev/null 2>&1; do
		[ -z "$daemon" ] || running "$daemon" || fail "$what: $daemon exited" "$log"
		[ $SECONDS -lt $deadline ] || fail "$what: not within ${WAIT} s" "$log"
		sleep 0.2
	done
}

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

# the packages that are missing, installed as scripts/setup.sh installs; the services they
# bring are not wanted (this Slurm runs daemons of its own)
install_missing() {
	local p out units missing=()
	for p in "$@"; do installed "$p" || missing+=("$p"); done
	[ ${#missing[@]} -gt 0 ] || return 0
	say "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# 9<&-: a service a package starts must not hold this script's lock
	if ! out=$(apt-get update -q 2>&1 9<&- && apt-get install -y -q --no-install-recommends \
		"${missing[@]}" 2>&1 9<&-); then
		echo "$out" | tail -n 20 >&2
		die "could not install ${missing[*]} (apt-get failed, above)"
	fi
	if command -v systemctl >/dev/null; then
		for p in "${missing[@]}"; do
			case $p in
			munge|slurmdbd) units=("$p") ;;
			slurm-wlm) units=(slurmctld slurmd) ;;
			mariadb-server) units=(mariadb) ;;
			*) continue ;;
			esac
			systemctl disable --now "${units[@]}" >/dev/null 2>&1 || true
		done
	fi
}

conf() {
	local mem
	mem=$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)
	cat > "$CONF" <<EOF
# psb's one-host Slurm (scripts/slurm-local.sh): written at each start, removed by down
ClusterName=psb
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
# the node's CPUs are the ones declared here, not the machine's
SlurmdParameters=config_overrides
# no cgroups: processes tracked by parentage, tasks not bound
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
KillWait=5
MaxArraySize=$MAX_ARRAY
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.txt
EOF
	if [ $ACCOUNTING = 1 ]; then
		cat >> "$CONF" <<EOF
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$((PORT + 2))
# the munged this slurmdbd trusts: this one's, not the system's
AccountingStoragePass=$DIR/munge/munge.sock
JobAcctGatherType=jobacct_gather/linux
EOF
	else
		cat >> "$CONF" <<EOF
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
EOF
	fi
	cat >> "$CONF" <<EOF
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS Boards=1 SocketsPerBoard=1 CoresPerSocket=$CPUS \
	ThreadsPerCore=1 RealMemory=$mem State=UNKNOWN
PartitionName=psb Nodes=$NODE Default=YES MaxTime=INFINITE OverSubscribe=NO State=UP
EOF
}

munge_up() {
	local m=$DIR/munge
	mkdir -p "$m"
	# munged insists: its directory and key its own, nobody else may write there
	chown munge:munge "$m"
	chmod 0755 "$m"
	if [ ! -s "$m/munge.key" ]; then
		runuser -u munge -- mungekey --create --keyfile="$m/munge.key" \
			>"$DIR/log/mungekey.log" 2>&1 ||
			fail "could not create a munge key" "$DIR/log/mungekey.log"
	fi
	runuser -u munge -- munged --socket="$m/munge.sock" --key-file="$m/munge.key" \
		--log-file="$m/munged.log" --pid-file="$m/munged.pid" --seed-file="$m/munged.seed" \
		</dev/null >"$DIR/log/munged.start" 2>&1 9<&- ||
		fail "munged did not start" "$DIR/log/munged.start"
	wait_until "munged (authentication)" munged "$m/munged.log" \
		sh -c 'munge -S "$1" -n | unmunge -S "$1"' sh "$m/munge.sock"
}

db_up() {
	local d=$DIR/db pw
	mkdir -p "$d"
	chown mysql:mysql "$d"
	cat > "$d/my.cnf" <<EOF
[mysqld]
user=mysql
datadir=$d/data
socket=$d/mysqld.sock
pid-file=$d/mysqld.pid
log-error=$d/mysqld.log
bind-address=127.0.0.1
port=$((PORT + 3))
skip-name-resolve
innodb_buffer_pool_size=128M
innodb_lock_wait_timeout=900
EOF
	mariadb-install-db --defaults-file="$d/my.cnf" --auth-root-authentication-method=socket \
		--skip-test-db >"$d/install.log" 2>&1 9<&- ||
		fail "MariaDB's data directory: mariadb-install-db failed" "$d/install.log"
	setsid -f mariadbd --defaults-file="$d/my.cnf" </dev/null >>"$d/mysqld.log" 2>&1 9<&-
	wait_until "MariaDB" mariadbd "$d/mysqld.log" mariadb-admin --socket="$d/mysqld.sock" ping
	pw=$(head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')
	mariadb --socket="$d/mysqld.sock" -e "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$pw';
		GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" >"$d/grant.log" 2>&1 ||
		fail "MariaDB: could not make slurmdbd's user" "$d/grant.log"
	# slurmdbd reads slurmdbd.conf beside SLURM_CONF, and only when nobody else may
	(umask 077 && cat > "$DIR/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.sock
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$((PORT + 2))
SlurmUser=root
LogFile=$DIR/log/slurmdbd.log
PidFile=$DIR/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$((PORT + 3))
StorageUser=slurm
StoragePass=$pw
StorageLoc=slurm_acct_db
EOF
	)
	slurmdbd </dev/null >/dev/null 2>&1 9<&- ||
		fail "slurmdbd did not start" "$DIR/log/slurmdbd.log"
	wait_until "slurmdbd" slurmdbd "$DIR/log/slurmdbd.log" \
		grep -q 'slurmdbd version .* started' "$DIR/log/slurmdbd.log"
}

up() {
	local t0=$SECONDS st acct=""
	st=$(state)
	if [ "$st" = up ]; then
		say "already up: $(sinfo -h -o '%P %D node(s) %T' | head -n 1)" \
			"(scripts/slurm-local.sh down stops it)"
		echo "export SLURM_CONF=$CONF"
		return 0
	fi
	if [ "$st" = partial ]; then
		say "a part of it was left running or on disk: clearing it first"
		teardown
	fi
	if [ $ACCOUNTING = 1 ]; then
		install_missing "${PKGS[@]}" "${DB_PKGS[@]}"
	else
		install_missing "${PKGS[@]}"
	fi
	mkdir -p "$DIR"
	touch "$DIR/.psb-slurm"
	mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log"
	echo $ACCOUNTING > "$DIR/accounting"
	conf
	munge_up
	[ $ACCOUNTING = 0 ] || db_up
	slurmctld </dev/null >/dev/null 2>&1 9<&- ||
		fail "slurmctld did not start" "$DIR/log/slurmctld.log"
	wait_until "slurmctld" slurmctld "$DIR/log/slurmctld.log" \
		sh -c 'scontrol ping | grep -q "is UP"'
	slurmd </dev/null >/dev/null 2>&1 9<&- || fail "slurmd did not start" "$DIR/log/slurmd.log"
	wait_until "slurmd (node $NODE idle in sinfo)" slurmd "$DIR/log/slurmd.log" \
		sh -c '[ "$(sinfo -h -n "$1" -o %T)" = idle ]' sh "$NODE"
	timeout "$WAIT" srun -N1 -n1 true >"$DIR/log/srun-check.log" 2>&1 ||
		fail "a first step (srun -N1 -n1 true) did not run within ${WAIT} s" \
			"$DIR/log/slurmd.log"
	touch "$DIR/.up"
	if [ $ACCOUNTING = 1 ]; then
		acct="slurmdbd and MariaDB: sacct works"
	else
		acct="no accounting: sacct has nothing (jobs' ends in $DIR/log/jobcomp.txt)"
	fi
	say "up in $((SECONDS - t0)) s: slurmctld, slurmd, munged; $acct"
	say "node $NODE with $CPUS CPUs, partition psb (default, no time limit)," \
		"MaxArraySize=$MAX_ARRAY"
	say "files and logs in $DIR; use it with"
	echo "export SLURM_CONF=$CONF"
	say "then e.g. sinfo; srun -n 4 hostname; sbatch scripts/slurm/pushpull.sbatch"
	say "stop it with: scripts/slurm-local.sh down"
}

# one up or down at a time (the lock is this script's own file: nothing is left behind; the
# daemons are started without it, 9<&-)
exec 9<"$0"
flock -w 120 9 || die "another slurm-local.sh has been running for 120 s"

case $cmd in
up) up ;;
down)
	if [ "$(state)" = down ]; then
		say "down already"
	else
		teardown
		say "down: every daemon it started stopped, $DIR removed"
	fi ;;
status)
	case $(state) in
	up) sinfo; exit 0 ;;
	down) say "down"; exit 3 ;;
	*)
		parts=$(for d in munged slurmctld slurmd slurmdbd mariadbd; do
			running "$d" && printf ' %s' "$d"; done; true)
		say "only a part of it runs:${parts:- no daemon} (scripts/slurm-local.sh down clears it)"
		exit 1 ;;
	esac ;;
esac
