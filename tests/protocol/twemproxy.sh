#!/bin/bash
# twemproxy.sh LARDERD [NUTCRACKER] - sharding test on loopback: three larderd
# behind one nutcracker (ketama, auto_eject_hosts, the config of
# server/nutcracker.yml with loopback ports). The client (twemproxy_check.py)
# writes and reads 10,000 keys through the proxy, checks each key lives on
# exactly one instance, stops one instance and checks ejection behaviour.
# Every process started here is killed by the EXIT trap, pass or fail.
set -u
LARDERD=$1
NUTCRACKER=${2:-nutcracker}
HERE=$(dirname "$0")
. "$HERE/lib.sh"

P=()
for i in 1 2 3; do
	serve "$TMPD/larderd-$i.log" "$LARDERD" -l 127.0.0.1 -t 1 -m 64 ||
		{ echo "larderd $i did not start"; cat "$TMPD/larderd-$i.log"; exit 1; }
	P+=("$PORT")
done
P1=${P[0]} P2=${P[1]} P3=${P[2]}
VICTIM_PID=${PIDS[2]}
# The sample config with picked ports (nutcracker cannot report a port the
# kernel picks: another program may take one first, and then nutcracker
# exits and is started again on new ones), and with timings no slow machine can
# trip: the sample's 400 ms request timeout, on a loaded 2-core machine,
# once counted late replies as failures and ejected every server (each fails
# once), so that all sets failed; and the 30 s retry could bring the stopped
# server back into the ring in the middle of the checks. The checks stay the
# same: a stopped server still fails at once (connection refused).
for try in 1 2 3 4 5; do
	{ read -r PX; read -r PS; } < <(free_ports 2)
	sed -e "s/127.0.0.1:22121/127.0.0.1:$PX/" -e "s/127.0.0.1:11211:/127.0.0.1:$P1:/" \
		-e "s/127.0.0.1:11212:/127.0.0.1:$P2:/" -e "s/127.0.0.1:11213:/127.0.0.1:$P3:/" \
		-e "s/^  timeout: .*/  timeout: 60000/" -e "s/^  server_retry_timeout: .*/  server_retry_timeout: 3600000/" \
		"$HERE/../../server/nutcracker.yml" >"$TMPD/nutcracker.yml"
	grep -q "timeout: 60000" "$TMPD/nutcracker.yml" && grep -q "server_retry_timeout: 3600000" "$TMPD/nutcracker.yml" ||
		{ echo "could not set the proxy timings"; exit 1; }
	"$NUTCRACKER" -t -c "$TMPD/nutcracker.yml" >/dev/null 2>&1 || { echo "bad nutcracker config"; exit 1; }
	start "$TMPD/nutcracker.log" "$NUTCRACKER" -c "$TMPD/nutcracker.yml" -s "$PS" -a 127.0.0.1 -v 4
	listening "${PIDS[-1]}" "$PX" "$PS" && break
	echo "nutcracker did not listen on $PX and $PS (try $try):"
	cat "$TMPD/nutcracker.log"
	[ "$try" = 5 ] && exit 1
done

python3 "$HERE/twemproxy_check.py" "$PX" "$P1,$P2,$P3" "$VICTIM_PID" "$PS"
rc=$?
[ $rc -ne 0 ] && tail -20 "$TMPD/nutcracker.log"
exit $rc
