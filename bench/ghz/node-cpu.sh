#!/bin/sh
# node-cpu.sh: a catalog node's cost per call under ghz, the empty gRPC
# health check beside GetProductMasters of 15 ids, alternated in one run.
#
#   bench/ghz/node-cpu.sh [RTBD_BINARY...]
#
# Each binary serves DATA (a catalog index, see bench/README.md) as
# -mode=catalog on its own 127.0.0.1 port, all at once; then, ROUNDS times,
# each gets a DURATION of health checks and a DURATION of 15-id lookups
# (REQS, written by `rtbd bench store -ghz-data`), from ghz with 64
# workers over 2 connections. Per run it prints the calls/s, the node's
# CPU per call (utime+stime from /proc/PID/stat), ghz's own CPU per call,
# the node's write(2) and read(2) calls per call (/proc/PID/io), and per
# round the lookup/health ratio of calls/s and of node CPU per call.
# Binaries default to bin/rtbd.
set -eu
GHZ=${GHZ:-ghz}
DATA=${DATA:-/tmp/idx}
REQS=${REQS:-/tmp/req15.json}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
CONC=${CONC:-64}
CONNS=${CONNS:-2}
RATE=${RATE:-0}
PORT=${PORT:-19190}
[ $# -gt 0 ] || set -- bin/rtbd
TICK=$(getconf CLK_TCK)
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null || true; done' EXIT INT TERM
n=0
for bin in "$@"; do
	p=$((PORT + 10 * n))
	"$bin" -mode=catalog -data "$DATA" -grpc-listen 127.0.0.1:$p -admin-listen 127.0.0.1:$((p + 1)) >/tmp/node-cpu.$n.log 2>&1 &
	pids="$pids $!"
	n=$((n + 1))
done
sleep 2
stat() { # pid: cpu ticks, read calls, write calls
	echo "$(awk '{print $14+$15}' /proc/$1/stat) $(awk '/^syscr/{r=$2} /^syscw/{w=$2} END{print r, w}' /proc/$1/io)"
}
run() { # pid port ghz-args...: prints "calls/s node-us-per-call" last
	pid=$1 port=$2
	shift 2
	s0=$(stat $pid)
	out=$(/usr/bin/time -f 'GHZCPU %U %S' "$GHZ" --insecure -z "$DURATION" -r "$RATE" -c "$CONC" --connections "$CONNS" "$@" 127.0.0.1:$port 2>&1)
	s1=$(stat $pid)
	echo "$out" | awk -v s0="$s0" -v s1="$s1" -v tick=$TICK '
		/^ *Count:/ {count=$2} /Requests\/sec:/ {rps=$2} /\[OK\]/ {ok=$2} /^GHZCPU/ {g=$2+$3}
		END {split(s0, a, " "); split(s1, b, " ")
			printf "calls/s %8.0f  ok %7d/%-7d  node-cpu %5.1f us/call  ghz-cpu %6.1f us/call  node writes %.2f reads %.2f /call\n",
				rps, ok, count, (b[1]-a[1])/tick*1e6/count, g*1e6/count, (b[3]-a[3])/count, (b[2]-a[2])/count
			print "=", rps, (b[1]-a[1])/tick*1e6/count}'
}
# Warm each node's hot cache with the lookups.
n=0
for pid in $pids; do
	"$GHZ" --insecure -n 40000 -c 16 --connections 2 --call rtbd.catalog.v1.Catalog/GetProductMasters -D "$REQS" 127.0.0.1:$((PORT + 10 * n)) >/dev/null
	n=$((n + 1))
done
for r in $(seq "$ROUNDS"); do
	n=0
	for pid in $pids; do
		port=$((PORT + 10 * n))
		name=$(eval echo \${$((n + 1))})
		h=$(run $pid $port --call grpc.health.v1.Health/Check -d '{}')
		l=$(run $pid $port --call rtbd.catalog.v1.Catalog/GetProductMasters -D "$REQS")
		echo "round $r  $name"
		echo "  health  $(echo "$h" | head -1)"
		echo "  lookup  $(echo "$l" | head -1)"
		printf "%s\n%s\n" "$h" "$l" | awk '/^=/ {v[++i]=$2; c[i]=$3} END {printf "  ratio lookup/health: calls/s %.2f  node CPU per call (health/lookup) %.2f\n", v[2]/v[1], c[1]/c[2]}'
		n=$((n + 1))
	done
done
