#!/bin/sh
# remote-local.sh: the bidder with its local index and the bidder on a
# remote catalog node, under wrk, alternated in one run.
#
#   bench/wrk/remote-local.sh [RTBD_BINARY]
#
# DEMO is a demo directory (`rtbd gen -demo`; default demo). Per round,
# each topology is started on the demo (one at a time: they share the
# demo's bidder.data_dir), warmed by WARMUP of wrk, then measured for
# DURATION (wrk -t1 -c$CONNS, the demo's sample request for a random one of
# $USERS demo users, bench/wrk/users.lua). Per run it prints requests/s,
# wrk's p50 and p99, the server CPU per request (utime+stime of the bidder,
# and of the node for remote, from /proc/PID/stat) and the bids and
# no-bids the bidder counted; per round the remote/local ratios.
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
GRPC=${GRPC:-127.0.0.1:18090}
NODE_ADMIN=${NODE_ADMIN:-127.0.0.1:18092}
DIR=$(cd "$(dirname "$0")" && pwd)
export REQUEST="$DEMO/sample-request.json" USERS
. "$DIR/lib.sh"
need_wrk
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null || true; done' EXIT INT TERM
flags="-config $DEMO/rtbd.yaml -set log.level=warn -http-listen $HTTP -admin-listen $ADMIN -set bidder.public_url=http://$HTTP"
measure() { # name pids...: one wrk run
	name=$1; shift
	wrk -t1 -c$CONNS -d$WARMUP -s "$DIR/users.lua" "http://$HTTP" >/dev/null
	c0=$(ticks "$@")
	out=$(wrk -t1 -c$CONNS -d$DURATION --latency -s "$DIR/users.lua" "http://$HTTP")
	c1=$(ticks "$@")
	counts=$(counts "$ADMIN")
	echo "$out" | awk -v name="$name" -v c0="$c0" -v c1="$c1" -v tick="$TICK" -v counts="$counts" "$WRK_FIELDS"'
		END {split(counts, c, " "); printf "%-7s req/s %9.0f  p50 %7s  p99 %7s  cpu/req %6.1f us  non-2xx %d  bids %d no-bids %d (since start)\n",
			name, rps, p50, p99, (c1-c0)/tick*1e6/reqs, bad, c[1], c[2]}'
}
for r in $(seq "$ROUNDS"); do
	"$BIN" $flags >/tmp/remote-local.bidder.log 2>&1 &
	b=$!; pids="$b"
	ready "$ADMIN"
	l=$(measure local "$b")
	stop "$b"
	"$BIN" -config "$DEMO/rtbd.yaml" -mode=catalog -set log.level=warn -grpc-listen "$GRPC" -admin-listen "$NODE_ADMIN" >/tmp/remote-local.node.log 2>&1 &
	n=$!
	"$BIN" $flags -catalog "static:///$GRPC" >/tmp/remote-local.bidder.log 2>&1 &
	b=$!; pids="$b $n"
	ready "$NODE_ADMIN"; ready "$ADMIN"
	rm=$(measure remote "$b" "$n")
	stop "$b"; stop "$n"
	pids=""
	echo "round $r"
	echo "  $l"
	echo "  $rm"
	echo "$l
$rm" | awk '{rps[NR]=$3; cpu[NR]=$9} END {printf "  remote/local: req/s %.2f, cpu/req (bidder+node) %.2fx\n", rps[2]/rps[1], cpu[2]/cpu[1]}'
done
