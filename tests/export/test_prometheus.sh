#!/bin/bash
# Prometheus endpoint: scrapes of a memif server before, during and after two workers' run,
# and of the workers themselves while they run: valid exposition 0.0.4, the expected
# metrics in base units with _total on counters (promtool's lint passes, and the same page
# parses as OpenMetrics when asked for), histograms of round trips and staleness, counters
# that only grow; 404 elsewhere; a non-loopback address served with a warning. The memif
# socket's name has a quote and a backslash, which the spec label must escape.
source "$(dirname "$0")/common.sh" "$1"
CHECK="python3 $HERE/prom_check.py"
command -v promtool >/dev/null || fail "promtool is not installed (scripts/setup.sh installs Debian's prometheus)"
# promtool (Debian's prometheus) lints a page: 0.0.4 syntax, _total on counters, base units
promlint() { promtool check metrics < "$1"; }
# Debian's python3-prometheus-client parses OpenMetrics (the system python: its packages)
om_parse() {
	/usr/bin/python3 -c 'import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse
n = sum(1 for _ in parse(open(sys.argv[1]).read()))
assert n > 50, n' "$1"
}

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
	'psb_port_rx_packets_total{port="0"}=0' \
	'psb_port_xstat_total{port="0",name="rx_good_packets"}=0' \
	"psb_role_rx_packets_total{$R}" "psb_role_drops_total{$R,reason=\"bad_magic\"}=0" \
	"psb_role_busy_ratio{$V}" 'psb_store_keys=0' 'psb_store_errors_total{status="no_key"}=0' \
	'psb_store_limit_reasm_timeout_seconds>0' \
	'psb_store_limit_resend_rate_bytes_per_second=125000000' \
	'psb_store_limit_resend_burst_bytes>134217728' 'psb_store_resend_bytes_total=0' \
	'psb_store_resend_over_budget_total{reason="repair_resp"}=0' \
	'psb_store_resend_over_budget_bytes_total=0' \
	'psb_experiment_running{name="",kind=""}=0' \
	'psb_experiment_info{name="",kind="",id="0",state="idle"}=1' || fail "first scrape"
for t in 'psb_port_rx_packets_total counter' 'psb_port_xstat_total counter' \
	'psb_role_rx_packets_total counter' 'psb_role_drops_total counter' \
	'psb_role_busy_ratio gauge' 'psb_node_uptime_seconds gauge' 'psb_store_keys gauge' \
	'psb_store_pushpull_total counter' 'psb_experiment_running gauge' \
	'psb_store_resend_over_budget_total counter' 'psb_store_limit_resend_burst_bytes gauge'; do
	grep -qx "# TYPE $t" "$DIR/s1.prom" || fail "no '# TYPE $t'"
done
grep -q '^# HELP psb_role_rx_packets_total .' "$DIR/s1.prom" || fail "no HELP of rx packets"
promlint "$DIR/s1.prom" || fail "promtool check metrics: server page"

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
	n=$($CHECK get "$DIR/w.prom" 'psb_experiment_requests_total{name="cli",kind="pushpull"}')
	t=$($CHECK get "$DIR/w.prom" \
		'psb_role_tx_packets_total{role="worker",instance="0",lcore="1"}')
	# both workers' requests, and worker 0's packets (the two need not go alike)
	[ "$n" != none ] && [ "${n%%.*}" -gt 1000 ] && [ "$t" != none ] &&
		[ "${t%%.*}" -gt 1000 ] && break
	sleep 0.05
done
E='name="cli",kind="pushpull"'
$CHECK check "$DIR/w.prom" 'psb_node_info{role="worker",ip="198.18.0.2"}=1' \
	"psb_experiment_running{$E}=1" "psb_experiment_info{$E,id=\"1\",state=\"running\"}=1" \
	"psb_experiment_requests_total{$E}>1000" "psb_experiment_rtt_p50_seconds{$E}>0" \
	"psb_experiment_rtt_p99_seconds{$E}>0" "psb_experiment_rtt_mean_seconds{$E}>0" \
	"psb_experiment_goodput_bytes_per_second{$E}>1000000" \
	"psb_experiment_elapsed_seconds{$E}>0" \
	"psb_experiment_failed_total{$E}=0" "psb_experiment_verify_errors_total{$E}=0" \
	'psb_role_tx_packets_total{role="worker",instance="0",lcore="1"}>1000' \
	"psb_experiment_rtt_seconds_count{$E}>1000" "psb_experiment_rtt_seconds_sum{$E}>0" \
	"psb_experiment_rtt_seconds_bucket{$E,le=\"5e-07\"}" \
	"psb_experiment_rtt_seconds_bucket{$E,le=\"1\"}>0" \
	"psb_experiment_staleness_bucket{$E,le=\"0\"}" \
	"psb_experiment_staleness_bucket{$E,le=\"+Inf\"}>1000" \
	"psb_experiment_staleness_mean{$E}>0" "psb_experiment_staleness_max{$E}>0" \
	|| fail "worker scrape"
for t in 'psb_experiment_requests_total counter' 'psb_experiment_rtt_p50_seconds gauge' \
	'psb_experiment_rtt_seconds histogram' 'psb_experiment_staleness histogram' \
	'psb_experiment_staleness_mean gauge'; do
	grep -qx "# TYPE $t" "$DIR/w.prom" || fail "no '# TYPE $t'"
done
# histograms are histograms: no gauge carries a quantile label
grep -q 'quantile=' "$DIR/w.prom" && fail "a sample with a quantile label"
promlint "$DIR/w.prom" || fail "promtool check metrics: worker page"
# the same page as OpenMetrics, for whoever asks for it as Prometheus does
curl -sS --max-time 10 -D "$DIR/om.hdr" -o "$DIR/w.om" \
	-H 'Accept: application/openmetrics-text; version=1.0.0,text/plain;q=0.5' "$WURL" \
	|| fail "OpenMetrics scrape"
grep -qi '^content-type: application/openmetrics-text; version=1.0.0' "$DIR/om.hdr" \
	|| fail "OpenMetrics content type"
om_parse "$DIR/w.om" || fail "the OpenMetrics page does not parse"
# the round trips of the histogram are the requests done (one scrape reads both at once)
[ "$($CHECK get "$DIR/w.prom" "psb_experiment_rtt_seconds_count{$E}")" = \
	"$($CHECK get "$DIR/w.prom" "psb_experiment_requests_total{$E}")" ] || fail "histogram count"
curl -sS --max-time 10 -o "$DIR/s2.prom" "$SURL" || fail "scrape during the run"
rc=0
wait $WPID || rc=$?
[ $rc = 0 ] || fail "worker exited with $rc"
curl -sS --max-time 10 -o "$DIR/s3.prom" "$SURL" || fail "scrape after the run"

$CHECK check "$DIR/s2.prom" 'psb_port_rx_packets_total{port="0"}>1000' \
	'psb_port_xstat_total{port="0",name="rx_good_packets"}>1000' || fail "port during the run"
$CHECK check "$DIR/s3.prom" 'psb_store_keys=40' 'psb_store_pushpull_total>1000' \
	"psb_role_rx_packets_total{$V}>1000" || fail "after the run"
$CHECK grow "$DIR/s1.prom" "$DIR/s2.prom" 'psb_port_rx_packets_total{port="0"}' \
	"psb_role_rx_packets_total{$R}" \
	"psb_role_tx_packets_total{role=\"tx\",instance=\"0\",lcore=\"0\"}" \
	'psb_store_pushpull_total' 'psb_node_uptime_seconds' \
	|| fail "counters before -> during the run"
# memif zeroes its port statistics when the peer leaves: port counters start again
$CHECK grow "$DIR/s2.prom" "$DIR/s3.prom" --except psb_port_ "psb_role_rx_packets_total{$R}" \
	"psb_role_rx_packets_total{$V}" 'psb_store_pushpull_total' \
	'psb_store_summed_bytes_total' || fail "counters during -> after the run"
promlint "$DIR/s3.prom" || fail "promtool check metrics: server page after the run"

# an explicit address that is not loopback is served, with a warning at start
start_psb any --port null --ip 198.18.0.3 -l 1 --no-huge --file-prefix "$TAG-any" --wait \
	--prometheus "0.0.0.0:$WP"
APID=$LAST_PID
wait_http "$WURL" $APID
grep -q "0.0.0.0:$WP/metrics (not a loopback address: .*no authentication" "$DIR/any.log" \
	|| fail "no warning for 0.0.0.0"
stop_psb $APID

# refused with a message and exit code 2: a bad spec, a port in use
refused() {	# refused NAME MESSAGE PROMETHEUS_ARG
	local rc=0
	start_psb "$1" --port null --ip 198.18.0.3 -l 1 --no-huge --file-prefix "$TAG-$1" \
		--wait --prometheus "$3"
	wait $LAST_PID || rc=$?
	[ $rc = 2 ] || fail "--prometheus $3: exit code $rc, not 2"
	grep -q -- "$2" "$DIR/$1.log" || fail "--prometheus $3: no '$2'"
	[ ! -e "$RUNDIR/$TAG-$1" ] || fail "--prometheus $3: runtime dir left behind"
}
refused ext 'cannot listen: Cannot assign requested address' "198.18.0.3:$WP"
refused badport 'expected \[IP:\]PORT' "127.0.0.1:70000"
refused badip 'expected \[IP:\]PORT' "127.0.0.300:$WP"
refused inuse "--prometheus $SP: cannot listen: Address already in use" "$SP"

stop_psb $SPID
curl -s -o /dev/null --max-time 2 "$SURL" && fail "the endpoint outlived psb"
echo "prometheus: ok"
