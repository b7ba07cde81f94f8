#!/usr/bin/env bash
# tools/larder-bench/shards.sh - the write cell with K = 1, 2, 4 shards
# (larder_config_set_shards, docs/shards.md): does the maintainers' CPU per
# put stay flat as K grows?
#
#   bash tools/larder-bench/shards.sh [path/to/larder-bench] [rounds] [threads] [K list] [more benches]
#   (defaults: build/release/tools/larder-bench/larder-bench, 5 rounds,
#    2 writer threads, "1 2 4")
#
# Each round runs the matrix's write cell (overwrites of 24,000 keys, 16 B
# keys, 64 B values) once per K, in turn, so that the machine's load moves
# the K alike; a cell is larder-bench's own (1 warm-up round, 300 ms). With
# more benches (builds of two versions, as for pin.sh), each K's cell runs
# once per bench, in an order that rotates from round to round, and the
# table has a block per bench and, per K, the median of the rounds' ratios
# of its maintainers' ns/put to the first bench's: a same-run comparison. From
# each cell's line it takes the wall rate, the workers' CPU rate (puts per
# CPU-second of the writer threads) and the helper share (CPU time of the
# process's other threads, here the K maintainers, over the writers' CPU
# time), and derives
#   writer ns/put      = 1000 / cpu rate (M/s)
#   maintainers ns/put = helper share x writer ns/put
# Prints per K the medians over the rounds (min..max of the maintainers'
# figure) and each K's median over K = 1's from the same run, and from the
# cache's own counters (LB_LARDER_STATS=1, over the whole process: preload,
# warm-up and the cell) the writes per maintainer pass and the share of
# events that overflowed a full ring into its spill: a keeping-up
# maintainer runs a pass per writer wake-up (a ring half full, 256
# events), one that falls behind runs longer passes, mostly from the spill
# (docs/shards.md, "What grows with K").
#
# With LB_SHARDS_PERF=1 each cell runs under `perf record` of the futex and
# membarrier system calls (perf must be allowed the syscalls tracepoints:
# root, or kernel.perf_event_paranoid <= -1), and a second table gives per
# 1,000 puts (medians of the rounds) the maintainers' passes, their sleeps
# (futex waits by the larder-maint/K threads), the writers' wake-ups of
# them (futex wakes by the other threads), the maintainers' futex wakes
# (of waiting writers, or of each other), the membarrier calls (one
# per grace period started on x86, GP-M1 in sync/reclaim.c) and the
# writers' futex waits (for room, a ring or the index: what the
# maintainers' wakes are for, one per arming since WAKE-W3's flag). Recording
# costs the process a little CPU: read the CPU figures from a run without it.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
benches=("${1:-$here/../../build/release/tools/larder-bench/larder-bench}" "${@:5}")
rounds=${2:-5}
threads=${3:-2}
ks=${4:-1 2 4}
for b in "${benches[@]}"; do
	[[ -x $b ]] || { echo "shards.sh: no larder-bench at $b (build it first)" >&2; exit 2; }
done
nb=${#benches[@]}
perf=${LB_SHARDS_PERF:-0}

out=$(mktemp /tmp/larder-shards.XXXXXX)
trap 'rm -f "$out" "$out.log" "$out.err" "$out.cell" "$out.perf"' EXIT
for ((r = 1; r <= rounds; r++)); do
	for k in $ks; do
		for ((j = 0; j < nb; j++)); do
			i=$(((j + r - 1) % nb))
			# The cell's row: scenario threads engine median range ratio |
			# cpu cratio on-cpu helper | hit
			rec=()
			[[ $perf == 1 ]] && rec=(perf record -q -o "$out.perf" -e syscalls:sys_enter_futex
				-e syscalls:sys_enter_membarrier --)
			LB_LARDER_STATS=1 "${rec[@]}" "${benches[i]}" --engines larder --scenarios write \
				--threads "$threads" --rounds 1 --shards "$k" 2>"$out.err" >"$out.cell" ||
				{ cat "$out.err" >&2; exit 1; }
			cat "$out.err" >>"$out.log"
			read -r writes passes spilled < <(awk '/larder stats:/ { print $5, $7, $9 }' \
				"$out.err") || true
			# Futex waits and wakes (op FUTEX_WAIT_PRIVATE 0x80, FUTEX_WAKE_PRIVATE
			# 0x81) by the maintainers' threads and by the others, and membarriers.
			sys="0 0 0 0 0"
			[[ $perf == 1 ]] && sys=$(perf script -i "$out.perf" -F comm,event,trace 2>/dev/null |
				awk '{ m = $1 ~ /^larder-maint/ }
					/sys_enter_futex/ && /op: 0x00000080,/ { if (m) ms++; else ws++ }
					/sys_enter_futex/ && /op: 0x00000081,/ { if (m) mk++; else wk++ }
					/sys_enter_membarrier/ { mb++ }
					END { print ms + 0, wk + 0, mk + 0, mb + 0, ws + 0 }')
			awk -v r="$r" -v b="$i" -v k="$k" -v w="${writes:-0}" -v p="${passes:-0}" \
				-v sp="${spilled:-0}" -v sys="$sys" '
				$1 == "write" && $3 == "larder" && $7 == "|" {
					h = $11; sub(/%/, "", h); on = $10; sub(/%/, "", on)
					split(sys, y, " "); f = w ? 1000 / w : 0
					printf "%s %s %s %s %s %s %s %s %s %s %s %s %s %s %s\n", r, b, k, $4, $8,
						h / 100, on / 100, p ? w / p : 0, w ? sp / w : 0, p * f,
						y[1] * f, y[2] * f, y[3] * f, y[4] * f, y[5] * f
				}' "$out.cell" >>"$out"
		done
	done
done

printf 'write cell, %s writer threads, %s rounds (load average now: %s)\n' "$threads" "$rounds" \
	"$(cut -d' ' -f1-3 /proc/loadavg)"
awk -v nb="$nb" -v names="${benches[*]}" -v perf="$perf" '
	function median(a, n,    i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	function med(bk, key,    a, i) {
		for (i = 1; i <= n[bk]; i++) a[i] = v[bk, key, i]
		return median(a, n[bk])
	}
	{
		r = $1; b = $2; k = $3; bk = b SUBSEP k; i = ++n[bk]
		w = 1000 / $5; m = $6 * w
		v[bk, "wall", i] = $4; v[bk, "cpu", i] = $5; v[bk, "wns", i] = w; v[bk, "mns", i] = m
		v[bk, "on", i] = $7; v[bk, "wpp", i] = $8; v[bk, "spl", i] = $9
		v[bk, "pas", i] = $10; v[bk, "msl", i] = $11; v[bk, "wwk", i] = $12
		v[bk, "mwk", i] = $13; v[bk, "mb", i] = $14; v[bk, "wwt", i] = $15
		if (!(bk in lo) || m < lo[bk]) lo[bk] = m
		if (!(bk in hi) || m > hi[bk]) hi[bk] = m
		if (!(k in seen)) { order[++nk] = k; seen[k] = 1 }
		mr[r, b, k] = m
		if (r > nr) nr = r
	}
	END {
		split(names, name, " ")
		for (b = 0; b < nb; b++) {
			if (nb > 1) printf "%s\n", name[b + 1]
			printf "%3s %10s %10s %14s %20s %8s %9s %15s %8s\n", "K", "wall M/s", "cpu M/s",
				"writer ns/put", "maintainers ns/put", "on-cpu", "vs K=1", "writes per pass",
				"spilled"
			for (x = 1; x <= nk; x++) {
				k = order[x]; bk = b SUBSEP k
				mm = med(bk, "mns")
				if (x == 1) base = mm
				printf "%3s %10.2f %10.2f %14.1f %9.1f (%.1f..%.1f) %7.0f%% %8.2fx %15.0f %7.0f%%\n",
					k, med(bk, "wall"), med(bk, "cpu"), med(bk, "wns"), mm, lo[bk], hi[bk],
					100 * med(bk, "on"), mm / base, med(bk, "wpp"), 100 * med(bk, "spl")
			}
		}
		for (b = 0; b < nb && perf == 1; b++) {
			printf "per 1,000 puts (perf)%s\n", (nb > 1 ? ", " name[b + 1] : "")
			printf "%3s %8s %17s %15s %17s %11s %14s\n", "K", "passes", "maintainer sleeps",
				"writers wakes", "maintainer wakes", "membarrier", "writers waits"
			for (x = 1; x <= nk; x++) {
				k = order[x]; bk = b SUBSEP k
				printf "%3s %8.3f %17.3f %15.3f %17.3f %11.3f %14.3f\n", k, med(bk, "pas"),
					med(bk, "msl"), med(bk, "wwk"), med(bk, "mwk"), med(bk, "mb"),
					med(bk, "wwt")
			}
		}
		for (b = 1; b < nb; b++) {
			printf "%s / %s, maintainers ns/put, median of the rounds'"'"' ratios:", name[b + 1], name[1]
			for (x = 1; x <= nk; x++) {
				k = order[x]; delete a; c = 0
				for (rr = 1; rr <= nr; rr++)
					if ((rr, b, k) in mr && (rr, 0, k) in mr) a[++c] = mr[rr, b, k] / mr[rr, 0, k]
				printf " K=%s %.3fx", k, c ? median(a, c) : 0
			}
			printf "\n"
		}
	}' "$out"
