#!/bin/bash
# run.sh [--loaded | --binary] LARDERD LOADGEN [MEMCACHED] [ROUNDS] [SECONDS] -
# larderd against Debian's memcached, same run, same load generator, same
# settings.
#
# Default mode, the throughput matrix: -m 256 -t 2, 8 connections, 24,000
# keys, 64-byte values; get-heavy (90% get) and set-heavy (10% get), each
# unpipelined (depth 1) and pipelined (depth 16). --binary: the same matrix
# in the binary protocol (loadgen -B: GET and SET frames).
#
# --loaded, one client on a busy machine: -m 256 -t 4, one connection doing
# set-then-get round trips of one random key (64-byte values, loadgen -A),
# measured on an idle machine and with background load: one busy process per
# core (nproc), started before and stopped after each loaded measurement by
# this script. Each round measures idle, then loaded; within a measurement
# one client takes turns between the servers in 100 ms slots (loadgen -P,
# A B B A ...), SECONDS for each server, so both meet the same background
# (measured one after the other, one server's 2-second cells within one
# run spanned 3-7x in speed). The keys are written once, before the
# rounds: a set-then-get needs none, and a burst of writes just before the
# timed window would leave work for larderd's maintainer inside it.
#
# The matrix alternates servers within each round, and which goes first
# alternates from round to round; the table shows medians over ROUNDS
# (default 3) of SECONDS (default 2) each with the min-max range, the
# larderd/memcached throughput ratio, and latency percentiles (us) of the
# median round. --loaded also prints each round's ratio and p99s, how many
# rounds met both goals (larderd's rate at least memcached's and its p99 at
# most memcached's), and how often larderd's writers waited for its
# maintainer, and how many events spilled, in the loaded cells (engine
# counters from `stats`). Runs under nice; kills the servers and load on exit. Run it
# one at a time on a shared machine (flock on a common lock file).
set -u
MODE=matrix
LG=()
if [ "${1:-}" = --loaded ]; then
	MODE=loaded
	shift
elif [ "${1:-}" = --binary ]; then
	LG=(-B)
	shift
fi
LARDERD=$1
LOADGEN=$2
MEMCACHED=${3:-/usr/bin/memcached}
ROUNDS=${4:-3}
SECS=${5:-2}
MEM=256
if [ $MODE = loaded ]; then THREADS=4; else THREADS=2; fi
CONNS=8

PIDS=()
LOAD=()
cleanup() {
	for p in "${LOAD[@]}" "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
}
trap cleanup EXIT INT TERM
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.1; done; return 1; }
# One busy process per core, at the servers' priority (nice 10).
load_start() {
	local i
	for i in $(seq "$(nproc)"); do
		nice -n 10 sh -c 'while :; do :; done' &
		LOAD+=($!)
	done
}
load_stop() {
	local p
	for p in "${LOAD[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	LOAD=()
}

LP=$(free_port); MP=$(free_port)
nice -n 10 "$LARDERD" -p "$LP" -l 127.0.0.1 -m $MEM -t $THREADS & PIDS+=($!)
nice -n 10 "$MEMCACHED" -p "$MP" -l 127.0.0.1 -m $MEM -t $THREADS -U 0 -u nobody & PIDS+=($!)
wait_port "$LP" && wait_port "$MP" || { echo "servers did not start"; exit 1; }

med() { printf "%s\n" "$@" | sort -t= -k2 -n | sed -n "$(( ($# + 1) / 2 ))p"; }
field() { echo "$1" | tr ' ' '\n' | grep "^$2=" | cut -d= -f2; }
range() { printf "%s\n" "$@" | tr ' ' '\n' | grep '^ops_per_s=' | cut -d= -f2 | sort -n |
	sed -n '1p;$p' | paste -sd- ; }
# row NAME LABEL: prints one table line from the arrays L and M.
row() {
	local lm mm lo mo
	lm=$(med "${L[@]}"); mm=$(med "${M[@]}")
	lo=$(field "$lm" ops_per_s); mo=$(field "$mm" ops_per_s)
	printf "%-8s %7s | %-24s %-24s %6s | %-16s | %-16s\n" "$1" "$2" \
		"$lo ($(range "${L[@]}"))" "$mo ($(range "${M[@]}"))" \
		"$(python3 -c "print('%.2fx' % ($lo / $mo))")" \
		"$(field "$lm" p50_us)/$(field "$lm" p99_us)/$(field "$lm" p999_us)" \
		"$(field "$mm" p50_us)/$(field "$mm" p99_us)/$(field "$mm" p999_us)"
}

# larderd's engine counter $1 (its `stats` line larder_$1).
lstat() {
	python3 - "$LP" "$1" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"stats\r\n")
buf = b""
while not buf.endswith(b"END\r\n"):
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
for line in buf.decode().split("\r\n"):
    f = line.split()
    if len(f) == 3 and f[1] == "larder_" + sys.argv[2]:
        print(f[2])
PY
}

# warm-up (not reported): faults in both servers' memory and the key set
nice -n 10 "$LOADGEN" "${LG[@]}" -p "$LP" -c $CONNS -T 1 -d 16 -r 0.5 -s 1 >/dev/null
nice -n 10 "$LOADGEN" "${LG[@]}" -p "$MP" -c $CONNS -T 1 -d 16 -r 0.5 -s 1 >/dev/null

if [ $MODE = loaded ]; then
	echo "# larderd vs memcached $("$MEMCACHED" -V | cut -d' ' -f2): -m $MEM -t $THREADS, 1 conn, set-then-get round trips, 64 B values, $ROUNDS x ${SECS}s per server and cell, paired in 100 ms slots, $(nproc) cores, load = $(nproc) busy processes"
	IL=(); IM=(); BL=(); BM=()
	# One paired measurement: larderd's line, then memcached's.
	rt() { nice -n 10 "$LOADGEN" -p "$LP" -P "$MP" -c 1 -T 1 -d 1 -A -n -s $((2 * SECS)); }
	WAITS=0; SPILLED=0; MET=0
	echo "round  idle ratio  loaded ratio  loaded p99 larderd/memcd us"
	for r in $(seq "$ROUNDS"); do
		out=$(rt)
		IL+=("$(echo "$out" | sed -n 1p)"); IM+=("$(echo "$out" | sed -n 2p)")
		load_start
		w0=$(lstat maintainer_waits); s0=$(lstat events_spilled)
		out=$(rt)
		WAITS=$((WAITS + $(lstat maintainer_waits) - w0))
		SPILLED=$((SPILLED + $(lstat events_spilled) - s0))
		load_stop
		BL+=("$(echo "$out" | sed -n 1p)"); BM+=("$(echo "$out" | sed -n 2p)")
		met=$(python3 -c "import sys; l, m, lp, mp = map(float, sys.argv[1:]); print(int(l >= m and lp <= mp))" \
			"$(field "${BL[-1]}" ops_per_s)" "$(field "${BM[-1]}" ops_per_s)" \
			"$(field "${BL[-1]}" p99_us)" "$(field "${BM[-1]}" p99_us)")
		MET=$((MET + met))
		printf "%-6s %-11s %-13s %s/%s%s\n" "$r" \
			"$(python3 -c "print('%.2fx' % ($(field "${IL[-1]}" ops_per_s) / $(field "${IM[-1]}" ops_per_s)))")" \
			"$(python3 -c "print('%.2fx' % ($(field "${BL[-1]}" ops_per_s) / $(field "${BM[-1]}" ops_per_s)))")" \
			"$(field "${BL[-1]}" p99_us)" "$(field "${BM[-1]}" p99_us)" "$([ "$met" = 1 ] && echo "  both goals")"
	done
	printf "%-8s %7s | %-24s %-24s %6s | %-16s | %-16s\n" mode "" "larderd op/s (min-max)" \
		"memcd op/s (min-max)" ratio "larderd p50/99/999" "memcd p50/99/999"
	L=("${IL[@]}"); M=("${IM[@]}"); row idle set+get
	L=("${BL[@]}"); M=("${BM[@]}"); row loaded set+get
	echo "loaded rounds meeting both goals: $MET of $ROUNDS"
	echo "larderd's loaded cells, all rounds: maintainer_waits $WAITS, events_spilled $SPILLED"
	exit 0
fi

echo "# larderd vs memcached $("$MEMCACHED" -V | cut -d' ' -f2)$([ ${#LG[@]} -gt 0 ] && echo ", binary protocol"): -m $MEM -t $THREADS, $CONNS conns, 24000 keys, 64 B values, $ROUNDS x ${SECS}s per cell, $(nproc) cores"
printf "%-8s %7s | %-24s %-24s %6s | %-16s | %-16s\n" mix depth "larderd op/s (min-max)" \
	"memcd op/s (min-max)" ratio "larderd p50/99/999" "memcd p50/99/999"
for mix in 0.9 0.1; do
	for depth in 1 16; do
		L=(); M=()
		mx() { nice -n 10 "$LOADGEN" "${LG[@]}" -p "$1" -c $CONNS -T 1 -d $depth -r $mix -s "$SECS"; }
		for r in $(seq "$ROUNDS"); do
			if [ $((r % 2)) = 1 ]; then
				L+=("$(mx "$LP")"); M+=("$(mx "$MP")")
			else
				M+=("$(mx "$MP")"); L+=("$(mx "$LP")")
			fi
		done
		row "$([ "$mix" = 0.9 ] && echo get-90% || echo set-90%)" "$depth"
	done
done
