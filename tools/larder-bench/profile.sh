#!/usr/bin/env bash
# tools/larder-bench/profile.sh - instructions per get or per put, larder vs
# bare, counted by callgrind (repeatable: the count does not depend on
# machine load).
#
#   bash tools/larder-bench/profile.sh [path/to/larder-bench] [N] [get|put]
#   cmake --build build/release --target larder-bench-profile      (get)
#   cmake --build build/release --target larder-bench-profile-put  (put)
#
# Method
#   The cell is the matrix's 1-thread read cell (get) or write cell (put:
#   overwrites of keys that are present): 24,000 keys of 16 B with 64 B
#   values, uniform keys from a fixed seed, copy-out on reads.
#   `larder-bench --ops N` runs exactly N operations on the main thread (no
#   timing loop, no worker threads), and the caches use a fixed hash seed, so
#   a run executes the same instructions every time.
#   For each engine E (larder, bare, and null: the loop, RNG and key
#   generation without any table) callgrind runs twice, with N operations and
#   with 0; everything else (process start, preload of the 24,000 keys, cache
#   setup and teardown) is identical in both runs, so
#       Ir_per_op(E) = (Ir(E, N) - Ir(E, 0)) / N
#   is the cost of one loop iteration including the operation, setup
#   excluded, and
#       Ir_per_get(E) = Ir_per_op(E) - Ir_per_op(null)
#   removes the harness's own share.
#   get: only the main thread is counted (--separate-threads=yes, file -01):
#   larder's maintainer does no work for gets (hit samples alone do not keep
#   it awake) and liburcu's helper threads do work that depends on
#   scheduling, not on the gets.
#   put: the writer (main thread) and larder's maintainer thread (every
#   other thread of the process: the maintainer, and a returner thread if a
#   page went back to the OS) are counted apart, each as (Ir(N) - Ir(0)) / N.
#   The maintainer's share includes its idle passes (a few per ms), which is
#   why N must be large (the default) for a steady figure. The issue's bar:
#   writer + maintainer at most half of the figure before (docs/bench.md).
#   LB_PROFILE_CACHESIM=1 adds callgrind's cache simulation: simulated
#   first-level and last-level data misses per operation, per thread. It
#   models each thread's caches alone (no coherence traffic between cores),
#   so it counts capacity and cold misses, not the lines a writer and the
#   maintainer pass to each other; `perf stat` reports "not supported" for
#   every hardware counter on the build machine (a KVM guest without a PMU).
#   For where the instructions go, open the kept outputs with
#   callgrind_annotate (the commands are printed at the end).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench=${1:-$here/../../build/release/tools/larder-bench/larder-bench}
mode=${3:-get}
case $mode in
get) n=${2:-500000} scenario=read ;;
put) n=${2:-1000000} scenario=write ;;
*) echo "profile.sh: mode must be get or put, not $mode" >&2; exit 2 ;;
esac
work=${LB_PROFILE_DIR:-$(mktemp -d /tmp/larder-profile.XXXXXX)}
mkdir -p "$work"
cachesim=no
[[ ${LB_PROFILE_CACHESIM:-0} == 1 ]] && cachesim=yes

command -v valgrind >/dev/null || { echo "profile.sh: valgrind is not installed" >&2; exit 2; }
[[ -x $bench ]] || { echo "profile.sh: no larder-bench at $bench (build it first)" >&2; exit 2; }

# One callgrind run: $1 engine, $2 op count (once per invocation: every
# event is read from the same output). Prints "main others" (the totals of
# event $3 of the main thread and of all other threads together).
run_ir() {
	local out="$work/cg.$1.$2"
	if [[ ! -e $out.$$ ]]; then
		rm -f "$out"-* "$out".*
		nice -n 10 valgrind --tool=callgrind --separate-threads=yes --cache-sim=$cachesim \
			--callgrind-out-file="$out" "$bench" --ops "$2" --engines "$1" \
			--scenarios $scenario --seed 42 >"$work/log.$1.$2" 2>&1 ||
			{ echo "profile.sh: run failed; see $work/log.$1.$2" >&2; exit 1; }
		grep -q "ops=$2 " "$work/log.$1.$2" ||
			{ echo "profile.sh: $1 did not report $2 ops; see $work/log.$1.$2" >&2; exit 1; }
		touch "$out.$$"
	fi
	awk -v ev="$3" '
		FNR == 1 { main = (FILENAME ~ /-01$/) }
		/^events:/ { for (i = 2; i <= NF; i++) col[$i] = i - 1 }
		/^totals:/ { v = $(col[ev] + 1); if (main) m += v; else o += v }
		END { printf "%d %d\n", m, o }' "$out"-*
}

# Per-op figure of event $2 for engine $1: sets main_<ev> and other_<ev>.
per_op() {
	local a b
	read -r a0 b0 < <(run_ir "$1" 0 "$2")
	read -r a b < <(run_ir "$1" "$n" "$2")
	printf '%s %s\n' "$(awk -v x="$a" -v y="$a0" -v n="$n" 'BEGIN { printf "%.2f", (x - y) / n }')" \
		"$(awk -v x="$b" -v y="$b0" -v n="$n" 'BEGIN { printf "%.2f", (x - y) / n }')"
}

declare -A mainop otherop
for e in null bare larder; do
	read -r mainop[$e] otherop[$e] < <(per_op "$e" Ir)
	printf '%-7s Ir per op: main thread %8s, other threads %8s\n' "$e" "${mainop[$e]}" "${otherop[$e]}"
done

if [[ $mode == get ]]; then
	awk -v l="${mainop[larder]}" -v b="${mainop[bare]}" -v z="${mainop[null]}" 'BEGIN {
		printf "\ninstructions per get (1-thread read cell, 16 B keys, 64 B values, copy-out):\n"
		printf "  %-8s %10s %14s\n", "engine", "per op", "per get (-null)"
		printf "  %-8s %10.2f %14.2f\n", "larder", l, l - z
		printf "  %-8s %10.2f %14.2f\n", "bare", b, b - z
		printf "  %-8s %10.2f %14s\n", "null", z, "-"
		printf "larder/bare: %.2fx per op, %.2fx per get (bar: per get <= 1.60x) %s\n",
			l / b, (l - z) / (b - z), ((l - z) / (b - z) <= 1.6) ? "PASS" : "FAIL"
	}'
else
	awk -v l="${mainop[larder]}" -v m="${otherop[larder]}" -v b="${mainop[bare]}" \
		-v z="${mainop[null]}" 'BEGIN {
		printf "\ninstructions per put (1-thread write cell, overwrites, 16 B keys, 64 B values):\n"
		printf "  %-22s %10s\n", "", "Ir per put"
		printf "  %-22s %10.2f\n", "larder, writer (-null)", l - z
		printf "  %-22s %10.2f\n", "larder, maintainer", m
		printf "  %-22s %10.2f\n", "larder, both", l - z + m
		printf "  %-22s %10.2f\n", "bare (-null)", b - z
		printf "  %-22s %10.2f\n", "null (the loop)", z
		printf "maintainer/writer: %.2f; larder (both)/bare: %.2fx\n", m / (l - z), (l - z + m) / (b - z)
	}'
fi
if [[ $cachesim == yes ]]; then
	echo
	echo "simulated data misses per op (callgrind cache model, each thread alone):"
	for ev in D1mr D1mw DLmr DLmw; do
		read -r a b < <(per_op larder $ev)
		read -r za zb < <(per_op null $ev)
		printf '  %-5s main thread %7.3f (null %7.3f)  other threads %7.3f\n' "$ev" "$a" "$za" "$b"
	done
fi
echo "where larder's instructions go: callgrind_annotate --inclusive=yes $work/cg.larder.$n-01 | head -40"
[[ $mode == put ]] &&
	echo "  the maintainer's: callgrind_annotate --inclusive=yes $work/cg.larder.$n-02 | head -40"
exit 0
