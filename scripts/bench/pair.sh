# shellcheck shell=bash
# Shared by the control-plane benchmarks (sourced after common.sh's bench_scratch): a psb
# server and a psb worker over memif, one core each, both waiting for experiments with a
# control socket and a Prometheus endpoint.

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_sock() { for _ in $(seq 100); do [ -S "$1" ] && return 0; sleep 0.1; done; echo "$NAME: no $1" >&2; exit 1; }

# start_pair EXTRA...: server on cpu 0, worker on cpu 1, both waiting for experiments; the
# server then runs $TMP/serve.json. Sets SCTL WCTL SPROM WPROM SPID WPID SP WP.
start_pair() {
	n=$((n + 1))
	SP=$BENCH_PREFIX-s$n
	WP=$BENCH_PREFIX-w$n
	SCTL=$TMP/s$n.ctl
	WCTL=$TMP/w$n.ctl
	SPROM=$(free_port)
	WPROM=$(free_port)
	while [ "$WPROM" = "$SPROM" ]; do WPROM=$(free_port); done
	"$PSB" --port "memif:server:$TMP/m$n.sock" --ip 198.18.0.1 --async -l 0 --file-prefix "$SP" \
		--ctl "$SCTL" --wait -q --prometheus "127.0.0.1:$SPROM" --output-dir "$TMP" "$@" \
		> "$TMP/srv$n.log" 2>&1 &
	PIDS+=($!)
	SPID=$!
	wait_sock "$SCTL"	# the control socket appears once the port runs
	"$PSB" --role worker --port "memif:client:$TMP/m$n.sock" --ip 198.18.0.2 \
		--server 198.18.0.1 --async -l 1 --file-prefix "$WP" --ctl "$WCTL" --wait -q \
		--prometheus "127.0.0.1:$WPROM" --output-dir "$TMP" "$@" > "$TMP/wk$n.log" 2>&1 &
	PIDS+=($!)
	WPID=$!
	wait_sock "$WCTL"
	"$PSBCTL" --ctl "$SCTL" start "$TMP/serve.json" > /dev/null
}

stop_pair() {
	"$PSBCTL" --ctl "$WCTL" quit > /dev/null 2>&1 || kill -TERM $WPID 2>/dev/null || true
	wait $WPID 2>/dev/null || true
	"$PSBCTL" --ctl "$SCTL" quit > /dev/null 2>&1 || kill -TERM $SPID 2>/dev/null || true
	wait $SPID 2>/dev/null || true
}
