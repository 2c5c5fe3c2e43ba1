#!/bin/bash
# Prometheus endpoint: scrapes of a memif server before, during and after two workers' run,
# and of the workers themselves while they run: valid exposition 0.0.4, the expected
# metrics, histograms of round trips and staleness, counters that only grow; 404 elsewhere;
# addresses that are not loopback refused. The memif socket's name has a quote and a
# backslash, which the spec label must escape.
source "$(dirname "$0")/common.sh" "$1"
CHECK="python3 $HERE/prom_check.py"

SP=$(free_port)
WP=$(free_port)
while [ "$WP" = "$SP" ]; do WP=$(free_port); done
SURL=http://127.0.0.1:$SP/metrics
WURL=http://127.0.0.1:$WP/metrics
SOCK=$DIR/m\"q\\s.sock
ESC=${SOCK//\\/\\\\}
ESC=${ESC//\"/\\\"}

start_psb server --port "memif:server:$SOCK" --ip 198.18.0.1 -l 0 --no-huge \
	--file-prefix "$TAG-s" --wait --prometheus "$SP" --async --num-workers 2
SPID=$LAST_PID
wait_http "$SURL" $SPID
curl -sS --max-time 10 -D "$DIR/s1.hdr" -o "$DIR/s1.prom" "$SURL" || fail "scrape"
grep -qi '^content-type: text/plain; version=0.0.4' "$DIR/s1.hdr" || fail "content type"
R='role="rx",instance="0",lcore="0"'
V='role="server",instance="0",lcore="0"'
$CHECK check "$DIR/s1.prom" 'psb_node_info{role="server",ip="198.18.0.1"}=1' \
	'psb_node_roles=4' 'psb_port_info{port="0",spec="memif:server:'"$ESC"'"}=1' \
	'psb_port_ipackets{port="0"}=0' 'psb_port_xstat{port="0",name="rx_good_packets"}=0' \
	"psb_role_rx_pkts{$R}" "psb_role_drops{$R,reason=\"bad_magic\"}=0" \
	"psb_role_busy_pct{$V}" 'psb_store_keys=0' 'psb_store_errors{status="no_key"}=0' \
	'psb_experiment_running{name="",kind=""}=0' \
	'psb_experiment_info{name="",kind="",id="0",state="idle"}=1' || fail "first scrape"
for t in 'psb_port_ipackets counter' 'psb_port_xstat counter' 'psb_role_rx_pkts counter' \
	'psb_role_drops counter' 'psb_role_busy_pct gauge' 'psb_node_uptime_s gauge' \
	'psb_store_keys gauge' 'psb_store_pushpull counter' 'psb_experiment_running gauge'; do
	grep -qx "# TYPE $t" "$DIR/s1.prom" || fail "no '# TYPE $t'"
done
grep -q '^# HELP psb_role_rx_pkts .' "$DIR/s1.prom" || fail "no HELP of psb_role_rx_pkts"

# other paths and methods
code() { curl -s -o /dev/null --max-time 10 -w '%{http_code}' "$@"; }
[ "$(code "http://127.0.0.1:$SP/")" = 404 ] || fail "/ is not 404"
[ "$(code "http://127.0.0.1:$SP/metricsx")" = 404 ] || fail "/metricsx is not 404"
[ "$(code "$SURL?x=1")" = 200 ] || fail "/metrics?x=1 is not 200"
[ "$(code -X POST -d x=1 "$SURL")" = 405 ] || fail "POST is not 405"
[ "$(code -I "$SURL")" = 200 ] || fail "HEAD is not 200"

# two async workers for 4 s, their endpoint given as localhost:PORT: each push lands after
# the other worker's pushes to the key, so staleness is above 0
start_psb worker --role worker --port "memif:client:$SOCK" --ip 198.18.0.2 \
	--server 198.18.0.1 -l 1 --no-huge --file-prefix "$TAG-w" --len 4096 \
	--repeat 100000000 --duration 4 -q --prometheus "localhost:$WP" \
	--async --num-workers 2 --workers 2
WPID=$LAST_PID
wait_http "$WURL" $WPID
for _ in $(seq 100); do
	alive $WPID
	curl -sS --max-time 10 -o "$DIR/w.prom" "$WURL" || fail "worker scrape"
	n=$($CHECK get "$DIR/w.prom" 'psb_experiment_requests{name="cli",kind="pushpull"}')
	[ "$n" != none ] && [ "${n%%.*}" -gt 1000 ] && break
	sleep 0.05
done
E='name="cli",kind="pushpull"'
$CHECK check "$DIR/w.prom" 'psb_node_info{role="worker",ip="198.18.0.2"}=1' \
	"psb_experiment_running{$E}=1" "psb_experiment_info{$E,id=\"1\",state=\"running\"}=1" \
	"psb_experiment_requests{$E}>1000" "psb_experiment_rtt_us{$E,quantile=\"0.5\"}>0" \
	"psb_experiment_rtt_us{$E,quantile=\"0.99\"}>0" "psb_experiment_rtt_mean_us{$E}>0" \
	"psb_experiment_goodput_gbps{$E}>0" "psb_experiment_elapsed_s{$E}>0" \
	"psb_experiment_failed{$E}=0" "psb_experiment_verify_errors{$E}=0" \
	'psb_role_tx_pkts{role="worker",instance="0",lcore="1"}>1000' \
	"psb_experiment_rtt_hist_us_count{$E}>1000" "psb_experiment_rtt_hist_us_sum{$E}>0" \
	"psb_experiment_rtt_hist_us_bucket{$E,le=\"0.5\"}" \
	"psb_experiment_rtt_hist_us_bucket{$E,le=\"1000000\"}>0" \
	"psb_experiment_staleness_hist_bucket{$E,le=\"0\"}" \
	"psb_experiment_staleness_hist_bucket{$E,le=\"+Inf\"}>1000" \
	"psb_experiment_staleness_mean{$E}>0" "psb_experiment_staleness_max{$E}>0" \
	|| fail "worker scrape"
for t in 'psb_experiment_requests counter' 'psb_experiment_rtt_us gauge' \
	'psb_experiment_rtt_hist_us histogram' 'psb_experiment_staleness_hist histogram' \
	'psb_experiment_staleness_mean gauge'; do
	grep -qx "# TYPE $t" "$DIR/w.prom" || fail "no '# TYPE $t'"
done
# the round trips of the histogram are the requests done (one scrape reads both at once)
[ "$($CHECK get "$DIR/w.prom" "psb_experiment_rtt_hist_us_count{$E}")" = \
	"$($CHECK get "$DIR/w.prom" "psb_experiment_requests{$E}")" ] || fail "histogram count"
curl -sS --max-time 10 -o "$DIR/s2.prom" "$SURL" || fail "scrape during the run"
rc=0
wait $WPID || rc=$?
[ $rc = 0 ] || fail "worker exited with $rc"
curl -sS --max-time 10 -o "$DIR/s3.prom" "$SURL" || fail "scrape after the run"

$CHECK check "$DIR/s2.prom" 'psb_port_ipackets{port="0"}>1000' \
	'psb_port_xstat{port="0",name="rx_good_packets"}>1000' || fail "port during the run"
$CHECK check "$DIR/s3.prom" 'psb_store_keys=40' 'psb_store_pushpull>1000' \
	"psb_role_rx_pkts{$V}>1000" || fail "after the run"
$CHECK grow "$DIR/s1.prom" "$DIR/s2.prom" 'psb_port_ipackets{port="0"}' \
	"psb_role_rx_pkts{$R}" "psb_role_tx_pkts{role=\"tx\",instance=\"0\",lcore=\"0\"}" \
	'psb_store_pushpull' 'psb_node_uptime_s' || fail "counters before -> during the run"
# memif zeroes its port statistics when the peer leaves: port counters start again
$CHECK grow "$DIR/s2.prom" "$DIR/s3.prom" --except psb_port_ "psb_role_rx_pkts{$R}" \
	"psb_role_rx_pkts{$V}" 'psb_store_pushpull' 'psb_store_bytes_summed' \
	|| fail "counters during -> after the run"

# refused with a message and exit code 2: not loopback, a bad spec, a port in use
refused() {	# refused NAME MESSAGE PROMETHEUS_ARG
	local rc=0
	start_psb "$1" --port null --ip 198.18.0.3 -l 1 --no-huge --file-prefix "$TAG-$1" \
		--wait --prometheus "$3"
	wait $LAST_PID || rc=$?
	[ $rc = 2 ] || fail "--prometheus $3: exit code $rc, not 2"
	grep -q -- "$2" "$DIR/$1.log" || fail "--prometheus $3: no '$2'"
	[ ! -e "$RUNDIR/$TAG-$1" ] || fail "--prometheus $3: runtime dir left behind"
}
refused any 'not a loopback address; the endpoint has no authentication' "0.0.0.0:$WP"
refused ext 'not a loopback address' "198.18.0.3:$WP"
refused v6 'not a loopback address' "[::]:$WP"
refused badport 'expected \[IP:\]PORT' "127.0.0.1:70000"
refused badip 'expected \[IP:\]PORT' "127.0.0.300:$WP"
refused inuse "--prometheus $SP: cannot listen: Address already in use" "$SP"

stop_psb $SPID
curl -s -o /dev/null --max-time 2 "$SURL" && fail "the endpoint outlived psb"
echo "prometheus: ok"
