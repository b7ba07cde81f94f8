#!/bin/bash
# twemproxy.sh LARDERD [NUTCRACKER] - sharding test on loopback: three larderd
# behind one nutcracker (ketama, auto_eject_hosts, the config of
# server/nutcracker.yml with free ports). The client (twemproxy_check.py)
# writes and reads 10,000 keys through the proxy, checks each key lives on
# exactly one instance, stops one instance and checks ejection behaviour.
# Every process started here is killed by the EXIT trap, pass or fail.
set -u
LARDERD=$1
NUTCRACKER=${2:-nutcracker}
HERE=$(dirname "$0")
. "$HERE/lib.sh"

{ read -r P1; read -r P2; read -r P3; read -r PX; read -r PS; } < <(free_ports 5)
for p in $P1 $P2 $P3; do
	start "$TMPD/larderd-$p.log" "$LARDERD" -p "$p" -l 127.0.0.1 -t 1 -m 64
done
VICTIM_PID=${PIDS[2]}
for p in $P1 $P2 $P3; do
	wait_port "$p" || { echo "larderd on $p did not start"; exit 1; }
done
# The sample config with free ports, and with timings no slow machine can
# trip: the sample's 400 ms request timeout, on a loaded 2-core machine,
# once counted late replies as failures and ejected every server (each fails
# once), so that all sets failed; and the 30 s retry could bring the stopped
# server back into the ring in the middle of the checks. The checks stay the
# same: a stopped server still fails at once (connection refused).
sed -e "s/127.0.0.1:22121/127.0.0.1:$PX/" -e "s/127.0.0.1:11211:/127.0.0.1:$P1:/" \
	-e "s/127.0.0.1:11212:/127.0.0.1:$P2:/" -e "s/127.0.0.1:11213:/127.0.0.1:$P3:/" \
	-e "s/^  timeout: .*/  timeout: 60000/" -e "s/^  server_retry_timeout: .*/  server_retry_timeout: 3600000/" \
	"$HERE/../../server/nutcracker.yml" >"$TMPD/nutcracker.yml"
grep -q "timeout: 60000" "$TMPD/nutcracker.yml" && grep -q "server_retry_timeout: 3600000" "$TMPD/nutcracker.yml" ||
	{ echo "could not set the proxy timings"; exit 1; }
"$NUTCRACKER" -t -c "$TMPD/nutcracker.yml" >/dev/null 2>&1 || { echo "bad nutcracker config"; exit 1; }
start "$TMPD/nutcracker.log" "$NUTCRACKER" -c "$TMPD/nutcracker.yml" -s "$PS" -a 127.0.0.1 -v 4
wait_port "$PX" || { echo "nutcracker did not start"; cat "$TMPD/nutcracker.log"; exit 1; }

python3 "$HERE/twemproxy_check.py" "$PX" "$P1,$P2,$P3" "$VICTIM_PID" "$PS"
rc=$?
[ $rc -ne 0 ] && tail -20 "$TMPD/nutcracker.log"
exit $rc
