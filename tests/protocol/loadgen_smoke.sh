#!/bin/bash
# loadgen_smoke.sh LARDERD LOADGEN - the load generator of server/bench/run.sh
# against a fresh larderd for one second per mode: text and binary (-B), one
# request at a time and pipelined, gets and sets; then the paired mode of
# run.sh --loaded (-P, set-then-get round trips, -n: no keys written first),
# with larderd on both sides. Passes when every run reports a rate and no
# error (a miss or refusal counts as one: the keys are written before
# timing), the paired one a line per side. Prints the figures; asserts no speed.
set -u
LARDERD=$1
LOADGEN=$2
. "$(dirname "$0")/lib.sh"

serve "$TMPD/larderd.log" "$LARDERD" -l 127.0.0.1 -t 2 -m 64 ||
	{ echo "larderd did not start"; cat "$TMPD/larderd.log"; exit 1; }
rc=0
for mode in "" -B; do
	for depth in 1 8; do
		out=$(timeout 120 "$LOADGEN" $mode -p "$PORT" -c 2 -d "$depth" -r 0.5 -s 1 -k 2000)
		echo "loadgen ${mode:-text} depth $depth: $out"
		case "$out" in
		ops_per_s=*errors=0) ;;
		*) echo "FAILED"; rc=1 ;;
		esac
	done
done
out=$(timeout 120 "$LOADGEN" -p "$PORT" -P "$PORT" -c 1 -d 1 -A -n -i 50 -s 2)
echo "loadgen paired: $out"
if [ "$(echo "$out" | grep -c '^ops_per_s=[1-9][0-9]* .*errors=0$')" != 2 ]; then
	echo "FAILED"
	rc=1
fi
exit $rc
