#!/usr/bin/env bash
# tools/larder-bench/pin.sh - what the maintainer pays for the lines the
# writer passes it: the 1-thread write cell with the writer and larder's
# maintainer on the same CPU, and on different CPUs (docs/bench.md, "The
# writer's and the maintainer's lines").
#
#   bash tools/larder-bench/pin.sh [path/to/larder-bench] [rounds] [shards]
#   (defaults: build/release/tools/larder-bench/larder-bench, 7 rounds, 1 shard)
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
# the coherence cost of the maintainer's work, give or take what the
# batch sizes change: in same the maintainer runs only when the writer
# yields the CPU (its wake-up, a full ring), so it applies longer batches
# (the cache's writes per pass are printed for both).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench=${1:-$here/../../build/release/tools/larder-bench/larder-bench}
rounds=${2:-7}
shards=${3:-1}
[[ -x $bench ]] || { echo "pin.sh: no larder-bench at $bench (build it first)" >&2; exit 2; }
(($(nproc) >= 2)) || { echo "pin.sh: needs 2 CPUs online" >&2; exit 2; }

out=$(mktemp /tmp/larder-pin.XXXXXX)
trap 'rm -f "$out" "$out.err" "$out.cell"' EXIT
for ((r = 1; r <= rounds; r++)); do
	order="same split"
	((r % 2)) || order="split same"
	for mode in $order; do
		LB_PIN=$mode LB_LARDER_STATS=1 "$bench" --engines larder --scenarios write \
			--threads 1 --rounds 1 --shards "$shards" 2>"$out.err" >"$out.cell" ||
			{ cat "$out.err" >&2; exit 1; }
		read -r writes passes < <(awk '/larder stats:/ { print $5, $7 }' "$out.err") || true
		# The cell's row: scenario threads engine median range ratio | cpu
		# cratio on-cpu helper | hit
		awk -v r="$r" -v m="$mode" -v w="${writes:-0}" -v p="${passes:-0}" '
			$1 == "write" && $3 == "larder" && $7 == "|" {
				h = $11; sub(/%/, "", h)
				printf "%s %s %s %s %s %s\n", r, m, $4, $8, h / 100, p ? w / p : 0
			}' "$out.cell" >>"$out"
	done
done

printf 'write cell, 1 writer thread, %s shard(s), %s rounds, same and split alternating (load average now: %s)\n' \
	"$shards" "$rounds" "$(cut -d' ' -f1-3 /proc/loadavg)"
awk '
	function median(a, n,    i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	function stat(mode, key,    i, a, lo, hi) {
		for (i = 1; i <= n[mode]; i++) {
			a[i] = v[mode, key, i]
			if (i == 1 || a[i] < lo) lo = a[i]
			if (i == 1 || a[i] > hi) hi = a[i]
		}
		return sprintf("%7.1f (%5.1f..%5.1f)", median(a, n[mode]), lo, hi)
	}
	{
		r = $1; m = $2; i = ++n[m]
		w = 1000 / $4
		v[m, "wall", i] = $3; v[m, "wns", i] = w; v[m, "mns", i] = $5 * w
		v[m, "share", i] = 100 * $5; v[m, "wpp", i] = $6
		byround[r, m, "wns"] = w; byround[r, m, "mns"] = $5 * w
	}
	END {
		printf "%-6s %22s %22s %22s %22s %22s\n", "", "wall M/s", "writer ns/put",
			"maintainer ns/put", "maint/writer CPU %", "writes per pass"
		for (x = 1; x <= 2; x++) {
			m = x == 1 ? "same" : "split"
			printf "%-6s %22s %22s %22s %22s %22s\n", m, stat(m, "wall"), stat(m, "wns"),
				stat(m, "mns"), stat(m, "share"), stat(m, "wpp")
		}
		k = 0
		for (rr = 1; (rr, "same", "mns") in byround; rr++) {
			if (!((rr, "split", "mns") in byround)) break
			k++
			rm[k] = byround[rr, "split", "mns"] / byround[rr, "same", "mns"]
			rw[k] = byround[rr, "split", "wns"] / byround[rr, "same", "wns"]
			dm[k] = byround[rr, "split", "mns"] - byround[rr, "same", "mns"]
		}
		printf "split/same, median of the rounds'"'"' ratios: maintainer ns/put %.2fx, writer ns/put %.2fx;\n", median(rm, k), median(rw, k)
		printf "split - same, maintainer ns/put (the coherence cost, median of the rounds): %.1f\n", median(dm, k)
	}' "$out"
