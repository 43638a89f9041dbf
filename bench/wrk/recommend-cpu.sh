#!/bin/sh
# recommend-cpu.sh: server CPU per bid for users with only viewed products
# (their recommendations are the catalog's similar lists, resolved in the
# catalog call) beside users whose profile carries Recommended, under wrk,
# alternated against one bidder; then the same two populations through a
# bidder on a remote catalog node (-mode=catalog): p99 and CPU per request.
#
#   bench/wrk/recommend-cpu.sh [RTBD_BINARY]
#
# Setup, once, in $WORK (default /tmp/rtbd-reco-cpu; delete it to start
# over): a demo (`rtbd gen -demo`, $USERS demo users, each with viewed and
# recommended products), views of its feed with planted clusters
# (`rtbd gen -views`, $VIEW_USERS users), the demo's feed ingested again
# with them (`rtbd ingest -views`: every product gets a similar list), and
# the second half of the users made viewed-only by `rtbd users recommend`
# (an empty list each), the first half given as Recommended what the
# catalog recommends from their viewed products (`rtbd bench
# recommend-lists`, loaded by `rtbd users recommend`). Population "reco" is
# demo-user-1 .. N/2 (Recommended in the profile), "viewed" is
# demo-user-N/2+1 .. N (viewed only); the same generator (the same mix of
# groups and viewed counts) and creatives of the same size, so the two
# differ only in where the recommended products come from.
#
# Per round (ROUNDS): one local bidder, reco then viewed (viewed first on
# even rounds), each warmed by WARMUP of wrk then measured for DURATION
# (wrk -t1 -c$CONNS, default 16, bench/wrk/users.lua with FIRST/USERS picking the
# population); then a catalog node and a bidder on it, the same two runs.
# Per run: requests/s, wrk's p50 and p99, server CPU per request
# (utime+stime from /proc/PID/stat: the bidder, plus the node when remote),
# the bids and no-bids of the run and CPU per bid; per round the
# viewed/reco ratios.
set -eu
BIN=${1:-bin/rtbd}
WORK=${WORK:-/tmp/rtbd-reco-cpu}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-8s}
WARMUP=${WARMUP:-4s}
CONNS=${CONNS:-16}
USERS=${USERS:-1000}
VIEW_USERS=${VIEW_USERS:-40000}
HTTP=${HTTP:-127.0.0.1:18280}
ADMIN=${ADMIN:-127.0.0.1:18291}
GRPC=${GRPC:-127.0.0.1:18290}
NODE_ADMIN=${NODE_ADMIN:-127.0.0.1:18292}
DIR=$(cd "$(dirname "$0")" && pwd)
. "$DIR/lib.sh"
DEMO=$WORK/demo
HALF=$((USERS / 2))
need_wrk
mkdir -p "$WORK"
if [ ! -e "$WORK/ready" ]; then
	rm -rf "$DEMO" "$WORK/views"
	"$BIN" gen -demo -hint=false -out "$DEMO" -users "$USERS" -products 20000 -groups 8 -seed 1 >/dev/null
	"$BIN" gen -views "$WORK/views" -products 20000 -groups 8 -seed 1 -view-users "$VIEW_USERS" >/dev/null
	"$BIN" ingest -data "$DEMO/catalog" -views "$WORK/views" -progress none "$DEMO/feed.csv.gz" 2>"$WORK/ingest.log" | grep -E '^ *(similar lists|views) '
	i=$((HALF + 1))
	while [ $i -le "$USERS" ]; do
		echo "{\"uid\": \"demo-user-$i\", \"recommended\": []}"
		i=$((i + 1))
	done >"$WORK/viewed-only.jsonl"
	"$BIN" users recommend -config "$DEMO/rtbd.yaml" -in "$WORK/viewed-only.jsonl"
	"$BIN" bench recommend-lists -data "$DEMO/catalog" -users "$DEMO/bidder/users" -first 1 -last "$HALF" -out "$WORK/reco.jsonl"
	"$BIN" users recommend -config "$DEMO/rtbd.yaml" -in "$WORK/reco.jsonl"
	touch "$WORK/ready"
fi
export REQUEST="$DEMO/sample-request.json"
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null || true; done' EXIT INT TERM
flags="-config $DEMO/rtbd.yaml -set log.level=warn -http-listen $HTTP -admin-listen $ADMIN -set bidder.public_url=http://$HTTP"
measure() { # topology population pids...: one wrk run, one line
	top=$1; pop=$2; shift 2
	if [ "$pop" = reco ]; then first=1; else first=$((HALF + 1)); fi
	FIRST=$first USERS=$HALF wrk -t1 -c"$CONNS" -d"$WARMUP" -s "$DIR/users.lua" "http://$HTTP" >/dev/null
	k0=$(counts "$ADMIN")
	c0=$(ticks "$@")
	out=$(FIRST=$first USERS=$HALF wrk -t1 -c"$CONNS" -d"$DURATION" --latency -s "$DIR/users.lua" "http://$HTTP")
	c1=$(ticks "$@")
	k1=$(counts "$ADMIN")
	echo "$out" | awk -v name="$top $pop" -v c0="$c0" -v c1="$c1" -v tick="$TICK" -v k0="$k0" -v k1="$k1" "$WRK_FIELDS"'
		END {split(k0, a, " "); split(k1, b, " ");
			bids = b[1]-a[1]; cpu = (c1-c0)/tick*1e6
			printf "%-14s req/s %8.0f  p50 %7s  p99 %7s  cpu/req %7.1f us  non-2xx %d  bids %d no-bids %d  cpu/bid %7.1f us\n",
			name, rps, p50, p99, cpu/reqs, bad, bids, b[2]-a[2], (bids > 0 ? cpu/bids : 0)}'
}
pair() { # topology round pids...: both populations, alternated by round
	top=$1; r=$2; shift 2
	if [ $((r % 2)) -eq 1 ]; then x=$(measure "$top" reco "$@"); y=$(measure "$top" viewed "$@")
	else y=$(measure "$top" viewed "$@"); x=$(measure "$top" reco "$@"); fi
	echo "  $x"
	echo "  $y"
	printf '%s\n%s\n' "$x" "$y" | awk -v top="$top" '
		function ms(s) { if (s ~ /us$/) return s/1000; if (s ~ /ms$/) return s+0; if (s ~ /s$/) return s*1000; return s }
		{cpu[NR]=$10; bid[NR]=$(NF-1); p99[NR]=ms($8)}
		END {printf "  %s viewed/reco: cpu/req %.3f, cpu/bid %.3f, p99 %.3f (%.2f ms vs %.2f ms)\n", top, cpu[2]/cpu[1], bid[2]/bid[1], p99[2]/p99[1], p99[2], p99[1]}'
}
for r in $(seq "$ROUNDS"); do
	echo "round $r"
	"$BIN" $flags >"$WORK/bidder.log" 2>&1 &
	b=$!; pids="$b"
	ready "$ADMIN"
	pair local "$r" "$b"
	stop "$b"
	"$BIN" -config "$DEMO/rtbd.yaml" -mode=catalog -set log.level=warn -grpc-listen "$GRPC" -admin-listen "$NODE_ADMIN" >"$WORK/node.log" 2>&1 &
	n=$!; pids="$n"
	"$BIN" $flags -catalog "static:///$GRPC" >"$WORK/bidder.log" 2>&1 &
	b=$!; pids="$b $n"
	ready "$NODE_ADMIN"; ready "$ADMIN"
	pair remote "$r" "$b" "$n"
	stop "$b"; stop "$n"
	pids=""
done
