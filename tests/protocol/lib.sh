# lib.sh - helpers for the larderd protocol tests (sourced, not run).
# Every process a test starts is recorded in PIDS and killed by the EXIT trap,
# also when the test fails half-way.

PIDS=()
TMPD=$(mktemp -d /tmp/larderd-test.XXXXXX)

cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do
		kill "$pid" 2>/dev/null
	done
	for pid in "${PIDS[@]}"; do
		wait "$pid" 2>/dev/null
	done
	rm -rf "$TMPD"
}
trap cleanup EXIT INT TERM

# serve LOG CMD...: starts a server (larderd or memcached) in the
# background with -p -1, a port the kernel picks, records its pid, and sets
# PORT to the port it listens on, from the ports file both write when
# MEMCACHED_PORT_FILENAME names one (loopback.py's serve). Fails if the server
# exits first or writes none within 60 s.
serve() {
	local log=$1 ports="$TMPD/ports.$RANDOM$RANDOM" i
	shift
	MEMCACHED_PORT_FILENAME=$ports start "$log" "$@" -p -1
	for ((i = 0; i < 6000; i++)); do
		if [ -e "$ports" ]; then
			PORT=$(sed -n 's/^TCP INET: //p' "$ports" | head -1)
			rm -f "$ports"
			[ -n "$PORT" ]
			return
		fi
		kill -0 "${PIDS[-1]}" 2>/dev/null || return 1
		sleep 0.01 # a poll interval
	done
	return 1
}

# free_ports N: N distinct free loopback TCP ports, one per line, for a
# program that cannot take a port the kernel picks (loopback.py's
# free_ports); another program may take one first: see listening.
free_ports() {
	PYTHONPATH="$(dirname "${BASH_SOURCE[0]}")" python3 -c \
		'import sys, loopback; print(*loopback.free_ports(int(sys.argv[1])), sep="\n")' "$1"
}

# listening PID PORT...: waits until process PID listens on every PORT
# (status 0), or has exited without (1), as a program that found a picked
# port taken does (loopback.py's wait_listening).
listening() {
	PYTHONPATH="$(dirname "${BASH_SOURCE[0]}")" python3 -c \
		'import sys, loopback; sys.exit(0 if loopback.wait_listening(int(sys.argv[1]), {int(p) for p in sys.argv[2:]}) else 1)' "$@"
}

# start LOG CMD...: starts a background process, records its pid.
start() {
	local log=$1
	shift
	"$@" >"$log" 2>&1 &
	PIDS+=($!)
}
