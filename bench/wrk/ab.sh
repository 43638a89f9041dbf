#!/bin/sh
# ab.sh: server CPU per bid of two rtbd builds, side by side in one run.
#
#   bench/wrk/ab.sh BIN_A BIN_B
#
# Each build serves a demo of its own (made by that build with `gen -demo`
# into $WORK/demo-a and $WORK/demo-b, once), on its embedded defaults. Per
# round, A then B (B then A on even rounds, so neither always runs first):
# the bidder is started, warmed by WARMUP of wrk, then measured for DURATION
# (wrk -t1 -c$CONNS, the demo's sample request with a new request id each
# time, bench/wrk/newid.lua). Per run: requests/s, wrk's p50 and p99, the
# bidder's server CPU per request (utime+stime from /proc/PID/stat), the
# bids and no-bids it counted; per round the B/A ratio of CPU per request.
# USERS=N spreads the requests over demo-user-1..N (a profile read per bid;
# the demo has 1,000 users); unset, every request is the sample's one user.
# EXTRA_A and EXTRA_B are extra flags for each build (e.g. "-set records.enabled=true").
set -eu
A=${1:?usage: ab.sh BIN_A BIN_B}
B=${2:?usage: ab.sh BIN_A BIN_B}
WORK=${WORK:-/tmp/rtbd-ab}
ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-8s}
WARMUP=${WARMUP:-5s}
CONNS=${CONNS:-64}
HTTP=${HTTP:-127.0.0.1:18180}
ADMIN=${ADMIN:-127.0.0.1:18191}
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/lib.sh"
need_wrk
mkdir -p "$WORK"
for s in a b; do
	bin=$A; [ $s = b ] && bin=$B
	[ -e "$WORK/demo-$s/rtbd.yaml" ] || "$bin" gen -demo -hint=false -out "$WORK/demo-$s" >/dev/null
done
pid=""
trap '[ -z "$pid" ] || kill $pid 2>/dev/null || true' EXIT INT TERM
run() { # a|b: one measured run, prints one line
	s=$1; bin=$A; extra=${EXTRA_A:-}
	[ "$s" = b ] && { bin=$B; extra=${EXTRA_B:-}; }
	# shellcheck disable=SC2086
	"$bin" -config "$WORK/demo-$s/rtbd.yaml" -set log.level=warn -http-listen "$HTTP" -admin-listen "$ADMIN" \
		-set "bidder.public_url=http://$HTTP" $extra >"$WORK/bidder-$s.log" 2>&1 &
	pid=$!
	ready "$ADMIN"
	REQUEST="$WORK/demo-$s/sample-request.json" wrk -t1 -c"$CONNS" -d"$WARMUP" -s "$DIR/newid.lua" "http://$HTTP" >/dev/null
	c0=$(ticks "$pid")
	out=$(REQUEST="$WORK/demo-$s/sample-request.json" wrk -t1 -c"$CONNS" -d"$DURATION" --latency -s "$DIR/newid.lua" "http://$HTTP")
	c1=$(ticks "$pid")
	counts=$(counts "$ADMIN")
	stop "$pid"; pid=""
	echo "$out" | awk -v name="$s" -v c0="$c0" -v c1="$c1" -v tick="$TICK" -v counts="$counts" "$WRK_FIELDS"'
		END {split(counts, c, " "); printf "%s req/s %9.0f  p50 %7s  p99 %7s  cpu/req %6.2f us  non-2xx %d  bids %d no-bids %d\n",
			name, rps, p50, p99, (c1-c0)/tick*1e6/reqs, bad, c[1], c[2]}'
}
for r in $(seq "$ROUNDS"); do
	if [ $((r % 2)) -eq 1 ]; then x=$(run a); y=$(run b); else y=$(run b); x=$(run a); fi
	echo "round $r"
	echo "  $x"
	echo "  $y"
	printf '%s\n%s\n' "$x" "$y" | awk '{cpu[NR]=$9} END {printf "  B/A cpu/req %.3f\n", cpu[2]/cpu[1]}'
done
