#!/usr/bin/env bash
# tools/larder-bench/mix_vs_ck.sh - the 9:1 mix on one thread, larder against
# ck_ht, as a median of per-round ratios, for one or more builds alternating.
#
#   bash tools/larder-bench/mix_vs_ck.sh BENCH [BENCH2 ...]
#   LB_MIX_PASSES=3 LB_MIX_ROUNDS=9 LB_MIX_MS=100 (the defaults)
#
# Method
#   Each pass runs every BENCH once, in the order given (so two builds
#   alternate), as `BENCH --engines larder,ck --scenarios mix --threads 1
#   --rounds R --duration-ms MS` (one warm-up round). Within a run the
#   matrix runs the two engines back to back in each round, the first of
#   them rotating from round to round (MATRIX-M1 in matrix.c), so a round's
#   two rates saw nearly the same machine. The figure is, for each build,
#   the median over all its rounds (passes x R) of larder's rate over
#   ck_ht's in that round, with the range: a ratio per round cancels the
#   machine's drift between rounds, which on a shared machine moves each
#   engine by more than the difference between them (ck_ht alone moved 1.6x
#   between runs, docs/bench.md). "wall" is operations over wall-clock time
#   (what a user sees), "cpu" over the worker thread's own CPU time (which
#   leaves out larder's maintainer, whose CPU is the "helper" column of the
#   matrix, and the time the scheduler gave other processes). on-cpu is
#   the median of larder's worker CPU time over wall time. The load average
#   (/proc/loadavg) is printed before and after. The runs are not niced:
#   at nice 10 beside other work the worker gets a fraction of a core (an
#   on-cpu of 10% was seen), and the rounds measure the scheduler.
set -euo pipefail

(($# >= 1)) || { echo "usage: mix_vs_ck.sh BENCH [BENCH2 ...]" >&2; exit 2; }
for b in "$@"; do
	[[ -x $b ]] || { echo "mix_vs_ck.sh: no larder-bench at $b" >&2; exit 2; }
done
passes=${LB_MIX_PASSES:-3} rounds=${LB_MIX_ROUNDS:-9} ms=${LB_MIX_MS:-100}
work=$(mktemp -d /tmp/larder-mix.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((p = 1; p <= passes; p++)); do
	for ((i = 1; i <= $#; i++)); do
		"${!i}" --engines larder,ck --scenarios mix --threads 1 --rounds "$rounds" \
			--duration-ms "$ms" --warmup 1 --out "$work/b$i.p$p.csv" >/dev/null 2>&1 ||
			{ echo "mix_vs_ck.sh: ${!i} failed" >&2; exit 1; }
	done
done
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"

printf '\n9:1 mix, 1 thread, larder / ck_ht per round (%d passes x %d rounds x %d ms):\n' \
	"$passes" "$rounds" "$ms"
for ((i = 1; i <= $#; i++)); do echo "  build $i: ${!i}"; done
printf '  %-7s %6s %18s %18s %14s %8s\n' build rounds "wall median" "cpu median" \
	"larder M/s" on-cpu
for ((i = 1; i <= $#; i++)); do
	# CSV columns (matrix.c): 3 engine, 12 round_mops, 15 median_on_cpu,
	# 17 round_cpu_mops; rounds separated by ';'.
	cat "$work/b$i".p*.csv | awk -F, -v name="$i" '
		function median(a, n,   i, j, t) {
			for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		$1 == "scenario" { run++; next }
		$3 == "larder" { nl = split($12, lw, ";"); split($17, lc, ";"); on[run] = $15 }
		$3 == "ck" {
			split($12, kw, ";"); split($17, kc, ";")
			for (r = 1; r <= nl; r++) {
				n++; w[n] = lw[r] / kw[r]; c[n] = lc[r] / kc[r]; l[n] = lw[r]
				wmin = (n == 1 || w[n] < wmin) ? w[n] : wmin; wmax = (n == 1 || w[n] > wmax) ? w[n] : wmax
				cmin = (n == 1 || c[n] < cmin) ? c[n] : cmin; cmax = (n == 1 || c[n] > cmax) ? c[n] : cmax
			}
		}
		END {
			for (r = 1; r <= run; r++) o[r] = on[r]
			printf "  %-7s %6d %5.3fx %s %5.3fx %s %14.2f %7.0f%%\n", name, n, median(w, n),
				sprintf("(%.2f-%.2f)", wmin, wmax), median(c, n), sprintf("(%.2f-%.2f)", cmin, cmax),
				median(l, n), 100 * median(o, run)
		}'
done
