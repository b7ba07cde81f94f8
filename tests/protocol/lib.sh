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

# free_ports N: N distinct free loopback TCP ports, one per line
# (loopback.py's free_ports: all N held bound until each is known, so no port
# comes twice; another program taking one before the server binds it is a
# small race this does not close).
free_ports() {
	PYTHONPATH="$(dirname "${BASH_SOURCE[0]}")" python3 -c \
		'import sys, loopback; print(*loopback.free_ports(int(sys.argv[1])), sep="\n")' "$1"
}

# wait_port PORT: polls until something listens on 127.0.0.1:PORT, for up
# to 60 s (generous: a loaded machine can start a server slowly).
wait_port() {
	python3 - "$1" <<'PY'
import socket, sys, time
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1.0).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.05)  # a poll interval
sys.exit(1)
PY
}

# start LOG CMD...: starts a background process, records its pid.
start() {
	local log=$1
	shift
	"$@" >"$log" 2>&1 &
	PIDS+=($!)
}
