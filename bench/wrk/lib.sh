# lib.sh: the shell helpers of the wrk scripts, sourced by each
# (. "$DIR/lib.sh"). POSIX sh has no local variables: the helpers set i,
# p and t, so a script keeps nothing of its own in those across a call.
NAME=${0##*/}
# TICK is the clock ticks per second of /proc/PID/stat's utime and stime.
TICK=$(getconf CLK_TCK)

# WRK_FIELDS is awk reading `wrk --latency` output into reqs (requests
# completed), rps (requests/s), p50, p99 (with wrk's unit) and bad
# (non-2xx answers); a script's awk adds its END.
WRK_FIELDS='/requests in/ {reqs=$1} /Requests\/sec/ {rps=$2} $1=="50%" {p50=$2} $1=="99%" {p99=$2} /Non-2xx/ {bad=$NF}'

need_wrk() { # exits 2 when wrk is not installed
	command -v wrk >/dev/null 2>&1 || { echo "$NAME: needs wrk (apt-get install wrk)" >&2; exit 2; }
}

ready() { # admin address: waits up to 30 s for its /readyz to answer 200
	i=0
	until curl -sf "http://$1/readyz" >/dev/null 2>&1; do
		i=$((i + 1)); [ $i -lt 300 ] || { echo "$NAME: $1 not ready" >&2; exit 1; }
		sleep 0.1
	done
}

ticks() { # pids: their utime+stime so far, in ticks (TICK a second)
	t=0
	for p in "$@"; do t=$((t + $(awk '{print $14+$15}' /proc/$p/stat))); done
	echo $t
}

counts() { # admin address: the bidder's bids and no-bids so far, "BIDS NOBIDS"
	curl -s "http://$1/metrics" | awk '/^rtbd_bidder_bids_total/{b+=$2} /^rtbd_bidder_nobids_total/{n+=$2} END{printf "%d %d", b, n}'
}

stop() { # pid: SIGTERM and wait for it to exit
	kill "$1"
	while kill -0 "$1" 2>/dev/null; do sleep 0.1; done
}
