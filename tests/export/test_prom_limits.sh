#!/bin/bash
# Prometheus endpoint under hostile clients: connections that trickle their request a byte
# at a time or send nothing hold no slot an honest scrape needs (a scrape with a 2 s timeout
# always gets its page), are closed after node.prometheus_timeout with 408, make room for new
# ones (503 to the one waiting longest), and are counted; an oversized request is refused.
source "$(dirname "$0")/common.sh" "$1"
CHECK="python3 $HERE/prom_check.py"
SLOW="python3 $HERE/prom_slow.py"

# 1. Default limits (16 connections, 5 s per request): 20 trickling and 8 silent clients.
P=$(free_port)
URL=http://127.0.0.1:$P/metrics
start_psb d --port null --ip 198.18.0.1 -l 0 --no-huge --file-prefix "$TAG-d" --wait \
	--prometheus "$P"
DPID=$LAST_PID
wait_http "$URL" $DPID
timeout -k 2 30 $SLOW trickle "$P" 20 8 >"$DIR/trickle.json" &
T1=$!
timeout -k 2 30 $SLOW silent "$P" 8 8 >"$DIR/silent.json" &
T2=$!
sleep 1
for i in 1 2 3 4 5 6 7 8 9 10; do
	curl -sS --max-time 2 -o "$DIR/h$i.prom" "$URL" ||
		fail "honest scrape $i timed out among trickling and silent clients"
	$CHECK check "$DIR/h$i.prom" 'psb_node_info{role="server",ip="198.18.0.1"}=1' ||
		fail "scrape $i"
	sleep 0.5
done
wait $T1 || fail "trickling clients"
wait $T2 || fail "silent clients"
alive $DPID
curl -sS --max-time 2 -o "$DIR/d.prom" "$URL" || fail "scrape after the hostile clients"
$CHECK check "$DIR/d.prom" 'psb_control_prometheus_requests_total>10' \
	'psb_control_prometheus_evicted_total>0' \
	'psb_control_prometheus_refused_total=0' 'psb_control_socket_busy_total=0' \
	|| fail "counted limits"
for t in 'psb_control_prometheus_timeouts_total counter' 'psb_control_tsc_hertz gauge' \
	'psb_control_socket_overflows_total counter' 'psb_control_throttled_passes_total counter'; do
	grep -qx "# TYPE $t" "$DIR/d.prom" || fail "no '# TYPE $t'"
done
echo "prom_limits: 10 honest scrapes answered among 28 hostile connections" \
	"($(cat "$DIR/trickle.json") trickling, $(cat "$DIR/silent.json") silent)"
grep -q 'Connection' "$DIR/d.log" && fail "MHD's words on dropped connections in the log"
stop_psb $DPID

# 2. Small limits from a document: what each client is told.
P=$(free_port)
URL=http://127.0.0.1:$P/metrics
cat >"$DIR/small.json" <<EOF
{"name": "small", "kind": "serve", "output": {"dir": "results"},
 "node": {"role": "server", "ports": ["null"], "ip": "198.18.0.1", "lcores": "0",
  "huge": "no", "file_prefix": "$TAG-s", "prometheus_connections": 2,
  "prometheus_timeout": "2s", "prometheus_request_max": "4KiB"}}
EOF
start_psb s --config "$DIR/small.json" --output-dir "$DIR" --wait --prometheus "$P"
SPID=$LAST_PID
wait_http "$URL" $SPID
grep -q 'Prometheus 2 connections, 2s per request, 4096 B per request$' "$DIR/s.log" ||
	fail "limits not in the log"
timeout -k 2 30 $SLOW told "$P" 10 "408 Request Timeout" \
	"no whole request and reply within 2s (node.prometheus_timeout)" || fail "408"
timeout -k 2 30 $SLOW evict "$P" 2 || fail "503 to the connection waiting longest"
code=$(curl -s -o /dev/null --max-time 5 -w '%{http_code}' \
	-H "X-Pad: $(head -c 6000 /dev/zero | tr '\0' x)" "$URL")
[ "$code" = 431 ] || fail "a 6 KB header: HTTP $code, expected 431"
curl -sS --max-time 2 -o "$DIR/s.prom" "$URL" || fail "scrape after the refused ones"
# the 408 and the 503 were psb's; the 431 and the two silent ones evict left behind were not
$CHECK check "$DIR/s.prom" 'psb_control_prometheus_timeouts_total=1' \
	'psb_control_prometheus_evicted_total=1' 'psb_control_prometheus_incomplete_total=3' ||
	fail "counted in the small limits"
stop_psb $SPID
echo "prom_limits: ok"
