#!/usr/bin/env bash
# tools/larder-bench/pin.sh - what a core of its own costs larder's
# maintainer: the 1-thread write cell with the writer and larder's
# maintainer on the same CPU, and on different CPUs (docs/results/bench-history.md, "The
# writer's and the maintainer's lines").
#
#   bash tools/larder-bench/pin.sh [path/to/larder-bench] [rounds] [shards] [more benches]
#   (defaults: build/release/tools/larder-bench/larder-bench, 7 rounds, 1 shard)
#
# With more benches (builds of two versions: copy each larder-bench, which
# links larder statically), every round runs each of them in both modes,
# in an order that rotates from round to round, and the table has a block
# per bench and their ratios to the first's, round by round: a same-run
# comparison of the versions.
#
# Each round runs the matrix's write cell (overwrites of 24,000 keys, 16 B
# keys, 64 B values; 1 warm-up round, 300 ms) twice, one process each:
# LB_PIN=same (writer and maintainer on CPU 0: they take turns, and every
# line one writes is in the cache the other reads from) and LB_PIN=split
# (writer on CPU 0, maintainer on another: every line one writes and the
# other touches crosses between cores), in an order that alternates from
# round to round, so that the machine's load moves both alike. From each
# cell's line it takes the workers' CPU rate and the helper share (the
# process's other threads' CPU time, here the maintainer's, over the
# writer's), and derives
#   writer ns/put      = 1000 / cpu rate (M/s)
#   maintainer ns/put  = helper share x writer ns/put
# Prints per mode the medians over the rounds (min..max), and the medians
# of each round's split/same ratios. split - same in maintainer ns/put is
# what a core of its own costs the maintainer (the lines it takes from the
# writer's core, and kernel work that crosses cores), give or take what the
# batch sizes change: in same the maintainer runs only when the writer
# yields the CPU (its wake-up, a full ring), so its passes differ in
# length (the cache's writes per pass are printed for both). "maint system %" is
# the kernel's share of the maintainer's CPU time (sleeps, wake-ups,
# membarrier) over the whole process, preload and warm-up included, in
# clock ticks (coarse: 10 ms each): time that no line transfer explains.
# LB_PIN_SCENARIO=mix runs the 9:1 mix cell instead (docs/results/bench-history.md, "The
# 9:1 mix against ck_ht"): "put" in the table then reads "op" (the
# worker's ns per op of the mix, the maintainer's per op), and split - same
# in the worker's ns/op is what the lines the maintainer writes on its own
# core (policy links, frequencies) cost the reads and writes that meet them.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
benches=("${1:-$here/../../build/release/tools/larder-bench/larder-bench}" "${@:4}")
rounds=${2:-7}
shards=${3:-1}
case ${LB_PIN_SCENARIO:-write} in
write) scenario=write cell=write ;;
mix) scenario=mix cell=mix9:1 ;;
*) echo "pin.sh: LB_PIN_SCENARIO must be write or mix" >&2; exit 2 ;;
esac
for b in "${benches[@]}"; do
	[[ -x $b ]] || { echo "pin.sh: no larder-bench at $b (build it first)" >&2; exit 2; }
done
# 77: skipped (ctest's bench-pin-smoke), not failed, on one CPU.
(($(nproc) >= 2)) || { echo "pin.sh: needs 2 CPUs online" >&2; exit 77; }

out=$(mktemp /tmp/larder-pin.XXXXXX)
trap 'rm -f "$out" "$out.err" "$out.cell"' EXIT
nb=${#benches[@]}
for ((r = 1; r <= rounds; r++)); do
	# The runs of a round, (bench, mode) pairs, rotated by the round.
	runs=()
	for ((i = 0; i < nb; i++)); do runs+=("$i same" "$i split"); done
	for ((j = 0; j < ${#runs[@]}; j++)); do
		read -r i mode <<<"${runs[(j + r - 1) % ${#runs[@]}]}"
		LB_PIN=$mode LB_LARDER_STATS=1 "${benches[i]}" --engines larder --scenarios "$scenario" \
			--threads 1 --rounds 1 --shards "$shards" 2>"$out.err" >"$out.cell" ||
			{ cat "$out.err" >&2; exit 1; }
		read -r writes passes < <(awk '/larder stats:/ { print $5, $7 }' "$out.err") || true
		read -r ut st < <(awk '/maintainer ticks:/ { print $5, $7 }' "$out.err") || true
		# The cell's row: scenario threads engine median range ratio | cpu
		# cratio on-cpu helper | hit
		awk -v r="$r" -v b="$i" -v m="$mode" -v w="${writes:-0}" -v p="${passes:-0}" \
			-v ut="${ut:-0}" -v st="${st:-0}" -v cell="$cell" '
			$1 == cell && $3 == "larder" && $7 == "|" {
				h = $11; sub(/%/, "", h)
				printf "%s %s %s %s %s %s %s %s\n", r, b, m, $4, $8, h / 100, p ? w / p : 0,
					ut + st ? 100 * st / (ut + st) : 0
			}' "$out.cell" >>"$out"
	done
done

printf '%s cell, 1 worker thread, %s shard(s), %s rounds, same and split alternating (load average now: %s)\n' \
	"$cell" "$shards" "$rounds" "$(cut -d' ' -f1-3 /proc/loadavg)"
awk -v nb="$nb" -v names="${benches[*]}" '
	function median(a, n,    i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	function stat(bm, key,    i, a, lo, hi) {
		for (i = 1; i <= n[bm]; i++) {
			a[i] = v[bm, key, i]
			if (i == 1 || a[i] < lo) lo = a[i]
			if (i == 1 || a[i] > hi) hi = a[i]
		}
		return sprintf("%7.1f (%5.1f..%5.1f)", median(a, n[bm]), lo, hi)
	}
	# The median over the rounds of x(b, m, key) / y(b0, m0, key0).
	function ratio(b, m, key, b0, m0, key0, diff,    rr, k, a, x, y) {
		k = 0
		for (rr = 1; rr <= nr; rr++) {
			if (!((rr, b, m) in seen) || !((rr, b0, m0) in seen)) continue
			x = byround[rr, b, m, key]; y = byround[rr, b0, m0, key0]
			a[++k] = diff ? x - y : x / y
		}
		return k ? median(a, k) : 0
	}
	{
		r = $1; b = $2; m = $3; i = ++n[b, m]
		w = 1000 / $5
		v[b, m, "wall", i] = $4; v[b, m, "wns", i] = w; v[b, m, "mns", i] = $6 * w
		v[b, m, "share", i] = 100 * $6; v[b, m, "wpp", i] = $7; v[b, m, "sys", i] = $8
		v[b, m, "uns", i] = $6 * w * (1 - $8 / 100)
		byround[r, b, m, "uns"] = v[b, m, "uns", i]; byround[r, b, m, "kns"] = $6 * w * $8 / 100
		byround[r, b, m, "wns"] = w; byround[r, b, m, "mns"] = $6 * w
		seen[r, b, m] = 1
		if (r > nr) nr = r
	}
	END {
		split(names, name, " ")
		for (b = 0; b < nb; b++) {
			if (nb > 1) printf "%s\n", name[b + 1]
			printf "%-6s %22s %22s %22s %22s %22s %22s %22s\n", "", "wall M/s", "writer ns/put",
				"maintainer ns/put", "  of which user", "maint/writer CPU %", "writes per pass",
				"maint system %"
			for (x = 1; x <= 2; x++) {
				m = x == 1 ? "same" : "split"
				printf "%-6s %22s %22s %22s %22s %22s %22s %22s\n", m, stat(b SUBSEP m, "wall"),
					stat(b SUBSEP m, "wns"), stat(b SUBSEP m, "mns"), stat(b SUBSEP m, "uns"),
					stat(b SUBSEP m, "share"), stat(b SUBSEP m, "wpp"), stat(b SUBSEP m, "sys")
			}
			printf "split/same, median of the rounds'"'"' ratios: maintainer ns/put %.2fx, writer ns/put %.2fx\n",
				ratio(b, "split", "mns", b, "same", "mns", 0), ratio(b, "split", "wns", b, "same", "wns", 0)
			printf "split - same, maintainer ns/put (a core of its own, lines and kernel, median of the rounds): %.1f\n",
				ratio(b, "split", "mns", b, "same", "mns", 1)
			printf "  of which user %.1f, system %.1f (medians of the rounds'"'"' differences)\n",
				ratio(b, "split", "uns", b, "same", "uns", 1), ratio(b, "split", "kns", b, "same", "kns", 1)
		}
		for (b = 1; b < nb; b++)
			printf "%s / %s, median of the rounds'"'"' ratios: maintainer ns/put same %.3fx, split %.3fx; writer ns/put same %.3fx, split %.3fx\n",
				name[b + 1], name[1], ratio(b, "same", "mns", 0, "same", "mns", 0),
				ratio(b, "split", "mns", 0, "split", "mns", 0),
				ratio(b, "same", "wns", 0, "same", "wns", 0),
				ratio(b, "split", "wns", 0, "split", "wns", 0)
	}' "$out"
