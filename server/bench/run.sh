#!/bin/bash
# run.sh LARDERD LOADGEN [MEMCACHED] [ROUNDS] [SECONDS] - larderd against
# Debian's memcached, same run, same load generator, same settings
# (-m 256 -t 2, 8 connections, 24,000 keys of 16 bytes, 64-byte values).
# Cells: get-heavy (90% get) and set-heavy (10% get), unpipelined (depth 1)
# and pipelined (depth 16). Servers alternate within each round; the table
# shows medians over ROUNDS (default 3) of SECONDS (default 2) each, the
# larderd/memcached throughput ratio, and latency percentiles (us) of the
# median round. Runs under nice; kills both servers on exit.
set -u
LARDERD=$1
LOADGEN=$2
MEMCACHED=${3:-/usr/bin/memcached}
ROUNDS=${4:-3}
SECS=${5:-2}
MEM=256
THREADS=2
CONNS=8

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; }
trap cleanup EXIT INT TERM
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; return 1; }

LP=$(free_port); MP=$(free_port)
nice -n 10 "$LARDERD" -p "$LP" -l 127.0.0.1 -m $MEM -t $THREADS & PIDS+=($!)
nice -n 10 "$MEMCACHED" -p "$MP" -l 127.0.0.1 -m $MEM -t $THREADS -U 0 -u nobody & PIDS+=($!)
wait_port "$LP" && wait_port "$MP" || { echo "servers did not start"; exit 1; }

# warm-up (not reported): faults in both servers' memory and the key set
nice -n 10 "$LOADGEN" -p "$LP" -c $CONNS -T 1 -d 16 -r 0.5 -s 1 >/dev/null
nice -n 10 "$LOADGEN" -p "$MP" -c $CONNS -T 1 -d 16 -r 0.5 -s 1 >/dev/null

echo "# larderd vs memcached $("$MEMCACHED" -V | cut -d' ' -f2): -m $MEM -t $THREADS, $CONNS conns, 24000 keys, 64 B values, $ROUNDS x ${SECS}s per cell, $(nproc) cores"
printf "%-8s %5s | %-24s %-24s %6s | %-16s | %-16s\n" mix depth "larderd op/s (min-max)" \
	"memcd op/s (min-max)" ratio "larderd p50/99/999" "memcd p50/99/999"
for mix in 0.9 0.1; do
	for depth in 1 16; do
		L=(); M=()
		for r in $(seq "$ROUNDS"); do
			L+=("$(nice -n 10 "$LOADGEN" -p "$LP" -c $CONNS -T 1 -d $depth -r $mix -s "$SECS")")
			M+=("$(nice -n 10 "$LOADGEN" -p "$MP" -c $CONNS -T 1 -d $depth -r $mix -s "$SECS")")
		done
		med() { printf "%s\n" "$@" | sort -t= -k2 -n | sed -n "$(( ($# + 1) / 2 ))p"; }
		lm=$(med "${L[@]}"); mm=$(med "${M[@]}")
		field() { echo "$1" | tr ' ' '\n' | grep "^$2=" | cut -d= -f2; }
		lo=$(field "$lm" ops_per_s); mo=$(field "$mm" ops_per_s)
		range() { printf "%s\n" "$@" | tr ' ' '\n' | grep '^ops_per_s=' | cut -d= -f2 | sort -n |
			sed -n '1p;$p' | paste -sd- ; }
		name=$([ "$mix" = 0.9 ] && echo get-90% || echo set-90%)
		printf "%-8s %5s | %-24s %-24s %6s | %-16s | %-16s\n" "$name" "$depth" \
			"$lo ($(range "${L[@]}"))" "$mo ($(range "${M[@]}"))" \
			"$(python3 -c "print('%.2fx' % ($lo / $mo))")" \
			"$(field "$lm" p50_us)/$(field "$lm" p99_us)/$(field "$lm" p999_us)" \
			"$(field "$mm" p50_us)/$(field "$mm" p99_us)/$(field "$mm" p999_us)"
	done
done
