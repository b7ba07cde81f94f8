#!/usr/bin/env bash
# tools/larder-bench/profile.sh - instructions per get, larder vs bare, counted
# by callgrind (repeatable: the count does not depend on machine load).
#
#   bash tools/larder-bench/profile.sh [path/to/larder-bench] [N]
#   cmake --build build/release --target larder-bench-profile      (same thing)
#
# Method
#   The cell is the matrix's 1-thread read cell: 24,000 keys of 16 B with
#   64 B values, uniform keys from a fixed seed, larder_get / bare_get with
#   copy-out. `larder-bench --ops N` runs exactly N gets on the main thread
#   (no timing loop, no worker threads), and the caches use a fixed hash seed,
#   so a run executes the same instructions every time.
#   For each engine E (larder, bare, and null: the loop, RNG and key
#   generation without any table) callgrind runs twice, with N gets and with 0
#   gets; everything else (process start, preload of the 24,000 keys, cache
#   setup and teardown) is identical in both runs, so
#       Ir_per_op(E) = (Ir(E, N) - Ir(E, 0)) / N
#   is the cost of one loop iteration including the get, setup excluded, and
#       Ir_per_get(E) = Ir_per_op(E) - Ir_per_op(null)
#   removes the harness's own share. Only the main thread is counted
#   (--separate-threads=yes, file -01): larder's maintainer thread and
#   liburcu's helper threads do work whose amount depends on scheduling, not
#   on the gets. The script prints both figures and the larder/bare ratios
#   (the issue's bar: instructions per get at most 1.6x bare's).
#   For where the instructions go, open the kept larder output with
#   callgrind_annotate (the command is printed at the end).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench=${1:-$here/../../build/release/tools/larder-bench/larder-bench}
n=${2:-500000}
work=${LB_PROFILE_DIR:-$(mktemp -d /tmp/larder-profile.XXXXXX)}

command -v valgrind >/dev/null || { echo "profile.sh: valgrind is not installed" >&2; exit 2; }
[[ -x $bench ]] || { echo "profile.sh: no larder-bench at $bench (build it first)" >&2; exit 2; }

# Ir of the main thread of one callgrind run: $1 engine, $2 op count.
main_ir() {
	local out="$work/cg.$1.$2"
	nice -n 10 valgrind --tool=callgrind --separate-threads=yes \
		--callgrind-out-file="$out" "$bench" --ops "$2" --engines "$1" \
		--scenarios read --seed 42 >"$work/log.$1.$2" 2>&1 ||
		{ echo "profile.sh: run failed; see $work/log.$1.$2" >&2; exit 1; }
	grep -q "ops=$2 " "$work/log.$1.$2" ||
		{ echo "profile.sh: $1 did not report $2 ops; see $work/log.$1.$2" >&2; exit 1; }
	awk '/^totals:/ { print $2; exit }' "$out-01"
}

declare -A per_op
for e in null bare larder; do
	ir0=$(main_ir "$e" 0)
	irn=$(main_ir "$e" "$n")
	per_op[$e]=$(awk -v a="$irn" -v b="$ir0" -v n="$n" 'BEGIN { printf "%.2f", (a - b) / n }')
	printf '%-7s Ir(0 ops) %12s  Ir(%s ops) %12s  -> %8s Ir/op\n' "$e" "$ir0" "$n" "$irn" \
		"${per_op[$e]}"
done

awk -v l="${per_op[larder]}" -v b="${per_op[bare]}" -v z="${per_op[null]}" 'BEGIN {
	printf "\ninstructions per get (1-thread read cell, 16 B keys, 64 B values, copy-out):\n"
	printf "  %-8s %10s %14s\n", "engine", "per op", "per get (-null)"
	printf "  %-8s %10.2f %14.2f\n", "larder", l, l - z
	printf "  %-8s %10.2f %14.2f\n", "bare", b, b - z
	printf "  %-8s %10.2f %14s\n", "null", z, "-"
	printf "larder/bare: %.2fx per op, %.2fx per get (bar: per get <= 1.60x) %s\n",
		l / b, (l - z) / (b - z), ((l - z) / (b - z) <= 1.6) ? "PASS" : "FAIL"
}'
echo "where larder's instructions go: callgrind_annotate --inclusive=yes $work/cg.larder.$n-01 | head -40"
