#!/usr/bin/env bash
# bench/instr.sh - instructions per L2 get or per mget key, counted by
# callgrind (repeatable where timings on a shared machine are not).
#
#   bash bench/instr.sh ADDON [get|mget|getbuf|getutf8|null|mnull] [N1 N2] [TOP]
#
# Runs bench/instr.js under callgrind with N1 and with N2 operations (after
# the same warm-up) and prints (Ir(N2) - Ir(N1)) / (N2 - N1): the marginal
# cost of one get (or one mget key), the driver's loop and V8's collections
# included. Only the JavaScript thread is counted (--separate-threads, the
# file of thread 1), and node runs with --single-threaded: with V8's
# background compilation, when the loops tier up depends on the helper
# threads' timing, which moved the count by hundreds of instructions per
# operation from one process to the next; with it, the same build counts
# the same within ~2 per operation. The engine's maintainer does no work
# for reads. Then the TOP functions (by
# self cost) whose count per operation differs most, the same difference
# per function. ADDON is a built larder.node (build/release/... for the
# figures in docs/node.md).
set -euo pipefail
addon=$(realpath "$1")
mode=${2:-get}
n1=${3:-200000}
n2=${4:-1000000}
top=${5:-25}
here=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
for n in "$n1" "$n2"; do
	LARDER_NODE_ADDON=$addon valgrind --tool=callgrind --separate-threads=yes \
		--callgrind-out-file="$out/cg.$n" node --single-threaded "$here/bench/instr.js" "$mode" "$n" \
		2>"$out/log.$n" || { cat "$out/log.$n" >&2; exit 1; }
done
per() { # function -> self Ir, thread 1
	callgrind_annotate --threshold=100 --inclusive=no "$out/cg.$1-01" 2>/dev/null |
		awk '/^ *[0-9,]+ .*[^ ]:/ { n = $1; gsub(",", "", n); $1 = ""; sub(/^ *(\([ 0-9.]+%\) )?/, ""); print n "\t" $0 }'
}
total() { callgrind_annotate "$out/cg.$1-01" 2>/dev/null | awk '/PROGRAM TOTALS/ { n = $1; gsub(",", "", n); print n }'; }
t1=$(total "$n1")
t2=$(total "$n2")
awk -v a="$t1" -v b="$t2" -v n1="$n1" -v n2="$n2" -v m="$mode" \
	'BEGIN { printf "%s: %.1f instructions per op (thread 1, N %d -> %d)\n", m, (b - a) / (n2 - n1), n1, n2 }'
per "$n1" >"$out/f1"
per "$n2" >"$out/f2"
awk -F'\t' -v n1="$n1" -v n2="$n2" 'NR == FNR { a[$2] = $1; next } { d[$2] = $1 - a[$2] }
	END { for (f in d) printf "%8.1f  %s\n", d[f] / (n2 - n1), f }' "$out/f1" "$out/f2" |
	sort -rn | head -n "$top"
echo "(callgrind outputs kept in $out)"
