#!/bin/bash
# Experiment documents: every shipped config checks out, broken ones are refused naming the
# field, and a server and a worker started from the shipped documents (--config, with a few
# command-line overrides) run the experiment and leave whole results directories, which a
# second run of the same name never replaces.
set -uo pipefail
PSB=$1
CONFIG=$2
DIR=$(mktemp -d /tmp/psb-config-XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$DIR" /var/run/dpdk/psbt-cfg$$-*
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

for f in "$CONFIG"/*.json; do
	# sweeps of documents (psb-sweep's), not documents: tests/sweep checks them
	case $(basename "$f") in sweep-*) continue ;; esac
	if grep -q '"kind": "staleness"' "$f" && ! grep -q '"ports"' "$f"; then
		# a trainer's, psb-stale's (tests/sys/test_stale.sh runs it): psb says so
		"$PSB" --check-config "$f" >"$DIR/dump.json" 2>"$DIR/err" &&
			fail "$f: the appliance took a staleness trainer's document"
		grep -q "staleness.trainer: psb takes part as a worker" "$DIR/err" ||
			fail "$f: $(cat "$DIR/err")"
		echo "ok: $f (psb-stale's)"
		continue
	fi
	"$PSB" --check-config "$f" >"$DIR/dump.json" 2>"$DIR/err" || fail "$f: $(cat "$DIR/err")"
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["node"]["ports"]' \
		"$DIR/dump.json" || fail "$f: --check-config printed no document"
	echo "ok: $f"
done

# expect_refusal FIELD WORDS DOC: psb --config exits 2 and names FIELD.
expect_refusal() {
	local field=$1 words=$2 doc=$3 out
	echo "$doc" >"$DIR/bad.json"
	out=$(timeout 20 "$PSB" --config "$DIR/bad.json" --no-huge 2>&1 </dev/null)
	[ $? -eq 2 ] || fail "accepted or crashed on: $doc"
	grep -qF -- "$field" <<<"$out" && grep -qF -- "$words" <<<"$out" ||
		fail "no '$field' ... '$words' in: $out"
	echo "ok: refused: $(tail -1 <<<"$out")"
}
expect_refusal "pushpull.len" "multiple of 4" \
	'{"name":"b","kind":"pushpull","node":{"ports":["null"],"ip":"198.18.0.2","server":"198.18.0.1"},"pushpull":{"len":10}}'
expect_refusal "node.ports[0]" "unknown kind" \
	'{"name":"b","kind":"pushpull","node":{"ports":["nic:0"],"ip":"198.18.0.2","server":"198.18.0.1"}}'
expect_refusal "node.ip" "IPv4" '{"name":"b","kind":"serve","node":{"role":"server","ports":["null"],"ip":"x"}}'
expect_refusal "bad.json:1:" "" '{"name": "b", "kind": }'
expect_refusal "output.overwrite" "" '{"name":"b","kind":"serve","node":{"role":"server","ports":["null"],"ip":"198.18.0.1"},"output":{"overwrite":"no"}}'

cd "$DIR" || fail "no $DIR"
srv() {	# srv TAG: the shipped server document, on this test's socket and prefix
	timeout -k 5 60 "$PSB" --config "$CONFIG/pushpull-server.json" \
		--port "memif:server:$DIR/m.sock" --no-huge --file-prefix "psbt-cfg$$-s$1" -q \
		>"$DIR/srv-$1.out" 2>&1 &
	SPID=$!
	PIDS+=($SPID)
	# its control socket appears once its port runs: then a memif client is taken
	local ctl=/var/run/dpdk/psbt-cfg$$-s$1/psb.ctl
	for _ in $(seq 100); do [ -S "$ctl" ] && break; sleep 0.1; done
	[ -S "$ctl" ] || fail "server $1 did not come up: $(tail -3 "$DIR/srv-$1.out")"
}
wrk() {	# wrk TAG [options]
	local tag=$1
	shift
	timeout -k 5 60 "$PSB" --config "$CONFIG/pushpull-worker.json" \
		--port "memif:client:$DIR/m.sock" --no-huge --file-prefix "psbt-cfg$$-w$tag" \
		--repeat 300 -q "$@" >"$DIR/wk-$tag.out" 2>&1
}

srv 1
wrk 1 || fail "worker run 1 exited $?: $(tail -5 "$DIR/wk-1.out")"
for f in result.json result.csv result.txt; do
	[ -s "results/pushpull-4k/$f" ] || fail "results/pushpull-4k/$f missing"
done
python3 - results/pushpull-4k/result.json <<'PY' || fail "worker results"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["state"] == "done", r["state"]
assert r["experiment"]["pushpull"]["repeat"] == 300, "override not echoed"
assert r["experiment"]["pushpull"]["len"] == "4KiB"
row = r["rows"][0]
assert row["iterations"] == 300 and row["requests"] == 300 * 40, row
assert row["failed"] == 0 and row["verify_errors"] == 0, row
assert row["goodput_gbps"] > 0
assert "serve" not in r["experiment"]
# the synchronous worker's pushes: never stale; its results keep both histograms
assert row["staleness_mean"] == 0 and row["staleness_max"] == 0, row
w = r["workers"][0]
assert w["staleness"]["count"] == 299 * 40 and w["staleness"]["hist"]["le"]["0"] == 299 * 40, w
assert w["rtt_us"]["hist"]["le"]["+Inf"] == w["rtt_us"]["hist"]["count"] == 300 * 40, w
pp = r["counters"]["experiment"]["pushpull"]
assert pp["rtt_hist_us"]["count"] == 300 * 40 and pp["staleness_hist"]["count"] == 299 * 40, pp
PY
head -1 results/pushpull-4k/result.csv | grep -q '^worker,mode,len,keys,iterations' || fail "csv header"
grep -q "pushpull-4k" "$DIR/wk-1.out" && grep -q "goodput_gbps" "$DIR/wk-1.out" || fail "no table printed"

# Same name again: refused before it runs, the earlier results untouched.
sum=$(md5sum results/pushpull-4k/result.json)
wrk 2
[ $? -eq 2 ] || fail "a second run over existing results was not refused"
grep -q "already exist" "$DIR/wk-2.out" || fail "refusal without a reason: $(cat "$DIR/wk-2.out")"
[ "$(md5sum results/pushpull-4k/result.json)" = "$sum" ] || fail "earlier results changed"
echo "ok: existing results kept, second run refused"

# The server's experiment ends with the process: its results hold what the store did.
kill -TERM $SPID
wait $SPID || fail "server exited with $?"
python3 - results/pushpull-server/result.json <<'PY' || fail "server results"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["state"] == "stopped", r["state"]
row = r["rows"][0]
assert row["pushpull"] == 300 * 40, row
assert row["rounds_closed"] == 300 * 40, row
PY
ls -a results | grep -q '\.tmp\.' && fail "temporary results directory left behind"
echo "config: documents checked, refused by field, results written whole and never replaced"
