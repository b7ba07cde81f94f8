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
# operation from one process to the next; with it, the binding's, the
# engine's and the JIT code's counts repeat within ~1 per operation and
# the total within ~6 per get (~20 per mget key: the scavenges in the window
# vary). The engine's maintainer does no work for reads. Then the TOP
# functions (by self cost) whose count per operation differs most, the same
# difference per function, and those differences summed by part (the
# binding, the engine, the Node-API call, V8 reading and making strings,
# copies, scavenges, JIT code). ADDON is a built larder.node
# (build/release/... for the figures in docs/node.md; `npm install` makes
# build/larder.node, also Release). LARDER_INSTR_KEYS=100000 in the
# environment counts over 10^5 keys instead of 10^4 (instr.js).
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
	sort -rn >"$out/diff"
head -n "$top" "$out/diff"
# The same differences summed by part (docs/node.md, "Every instruction of
# an L2 get ...", gives each part's functions).
awk '{ n = $1; $1 = ""; f = $0
	if (f ~ /larder\.node/ && f ~ /(lnode_|batch_|utf16_|ascii|walk_one)/) p = "the binding'"'"'s own C"
	else if (f ~ /larder\.node/) p = "the engine"
	else if (f ~ /CallApiCallback|FunctionCallbackWrapper|napi_get_cb_info|External::Value/) p = "the Node-API call"
	else if (f ~ /napi_get_value_string|String::Write|WriteToFlat|CopyChars|SlowFlatten/) p = "V8: reading strings"
	else if (f ~ /napi_create_string|NewFromOneByte|NewStringFromOneByte|NewRawOneByteString|AllocateRaw|RefineAllocationType|StringSubstring|StringAdd/) p = "V8: making strings"
	else if (f ~ /mem(cpy|move|set)/) p = "memcpy, memset"
	else if (f ~ /Scaveng|IterateObjectCache|SemiSpace|Heap::|Evacuat|RootVisitor|ScavengeVisitor/) p = "scavenges"
	else if (f ~ /\?\?\?:0x/) p = "JIT code (the driver and index.js)"
	else p = "other"
	sum[p] += n }
	END { for (p in sum) printf "%8.1f  %s\n", sum[p], p }' "$out/diff" | sort -rn | sed '1i by part:'
echo "(callgrind outputs kept in $out)"
