#!/bin/bash
# memccapable.sh LARDERD [MEMCCAPABLE] [-a|-b] - runs Debian's
# libmemcached-tools compliance checker against a fresh larderd on loopback:
# its ASCII tests (-a, the default) or its binary protocol tests (-b).
# Passes only if memccapable says every test passed and exits 0.
set -u
LARDERD=$1
MEMCCAPABLE=${2:-memccapable}
MODE=${3:--a}
. "$(dirname "$0")/lib.sh"

case "$MODE" in
-a) NAME=ASCII ;;
-b) NAME=binary ;;
*) echo "memccapable.sh: the mode is -a or -b, not $MODE"; exit 2 ;;
esac
serve "$TMPD/larderd.log" "$LARDERD" -l 127.0.0.1 -t 2 -m 64 ||
	{ echo "larderd did not start"; cat "$TMPD/larderd.log"; exit 1; }
# Generous limits (an I/O wait of 60 s, 4 minutes in all; a run takes a few
# seconds): a loaded machine must not turn a slow reply into a failure.
timeout 240 "$MEMCCAPABLE" -h 127.0.0.1 -p "$PORT" "$MODE" -t 60 >"$TMPD/out" 2>&1
rc=$?
cat "$TMPD/out"
if [ $rc -ne 0 ] || ! grep -q "All tests passed" "$TMPD/out" || grep -q "\[fail\]" "$TMPD/out"; then
	echo "memccapable $NAME FAILED (rc=$rc)"
	exit 1
fi
echo "memccapable: every $NAME test passed"
