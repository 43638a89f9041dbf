#!/bin/sh
# records.sh: the bidder with the records' file sink on and off, under wrk,
# alternated in one run: the server CPU per bid request that the Parquet
# files cost.
#
#   bench/wrk/records.sh [RTBD_BINARY]
#
# DEMO is a demo directory (`rtbd gen -demo`; default demo). Per round the
# bidder is started on the demo with records.files=false, then true (one
# at a time: they share the demo's bidder.data_dir; records go to a
# temporary records.dir, with records.nobid_sample=1 so that no-bids are
# recorded too), warmed by WARMUP of wrk, then measured for DURATION (wrk
# -t1 -c$CONNS, the demo's sample request for a random one of $USERS demo
# users, bench/wrk/users.lua). Per run it prints requests/s, wrk's p50 and
# p99, the server CPU per request (utime+stime of the bidder, from
# /proc/PID/stat), and per round the on/off ratios.
set -eu
BIN=${1:-bin/rtbd}
DEMO=${DEMO:-demo}
ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-8s}
WARMUP=${WARMUP:-8s}
CONNS=${CONNS:-64}
USERS=${USERS:-1000}
HTTP=${HTTP:-127.0.0.1:18080}
ADMIN=${ADMIN:-127.0.0.1:18091}
DIR=$(cd "$(dirname "$0")" && pwd)
RECORDS=$(mktemp -d /tmp/rtbd-records-bench.XXXXXX)
export REQUEST="$DEMO/sample-request.json" USERS
. "$DIR/lib.sh"
need_wrk
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null || true; done; rm -rf "$RECORDS"' EXIT INT TERM
flags="-config $DEMO/rtbd.yaml -set log.level=warn -http-listen $HTTP -admin-listen $ADMIN -set bidder.public_url=http://$HTTP -set records.dir=$RECORDS -set records.nobid_sample=1"
measure() { # name pid
	wrk -t1 -c$CONNS -d$WARMUP -s "$DIR/users.lua" "http://$HTTP" >/dev/null
	c0=$(ticks "$2")
	out=$(wrk -t1 -c$CONNS -d$DURATION --latency -s "$DIR/users.lua" "http://$HTTP")
	c1=$(ticks "$2")
	dropped=$(curl -s "http://$ADMIN/metrics" | awk '/^rtbd_records_dropped_total/{d+=$2} END{printf "%d", d}')
	echo "$out" | awk -v name="$1" -v c0="$c0" -v c1="$c1" -v tick="$TICK" -v dropped="$dropped" "$WRK_FIELDS"'
		END {printf "%-12s req/s %9.0f  p50 %7s  p99 %7s  cpu/req %6.1f us  records dropped %d\n", name, rps, p50, p99, (c1-c0)/tick*1e6/reqs, dropped}'
}
for r in $(seq "$ROUNDS"); do
	"$BIN" $flags -set records.files=false >/tmp/records-bench.log 2>&1 &
	b=$!; pids="$b"
	ready "$ADMIN"
	off=$(measure files_off "$b")
	stop "$b"
	"$BIN" $flags -set records.files=true >/tmp/records-bench.log 2>&1 &
	b=$!; pids="$b"
	ready "$ADMIN"
	on=$(measure files_on "$b")
	stop "$b"
	pids=""
	echo "round $r"
	echo "  $off"
	echo "  $on"
	echo "$off
$on" | awk '{rps[NR]=$3; cpu[NR]=$9} END {printf "  on/off: req/s %.2f, cpu/req %.2fx (acceptance: at most 1.10x)\n", rps[2]/rps[1], cpu[2]/cpu[1]}'
done
