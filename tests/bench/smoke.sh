#!/usr/bin/env bash
# tests/bench/smoke.sh - bench-smoke: larder-bench runs a tiny matrix (about
# a second: 2,000 keys, 5 rounds x 10 ms) and this script checks that
#   1. it exits 0 and prints the table header;
#   2. the table has one row, with a median above zero, for every cell the
#      engines' rules allow (bare: 1 thread; ck: writes from 1 thread) and none
#      for the cells they forbid;
#   3. the CSV from --out has the same cells, every read cell found every key
#      (2,000 keys in 1 GiB: nothing may be evicted or lost) and no write failed;
#   4. the ratio checks were printed, with the per-round ratios against
#      ck_ht of the write and mix cells (matrix.c's round_check).
# Usage: smoke.sh path/to/larder-bench [scratch-dir]
set -euo pipefail

bench=${1:?usage: smoke.sh larder-bench [dir]}
dir=${2:-$(mktemp -d)}
mkdir -p "$dir"
out="$dir/smoke.out"
csv="$dir/smoke.csv"
fail=0

err() {
	echo "bench-smoke: FAIL: $*" >&2
	fail=1
}

if ! "$bench" --engines larder,bare,urcu,ck --entries 2000 --threads 1,2 \
	--duration-ms 10 --rounds 5 --warmup 1 --out "$csv" >"$out"; then
	err "larder-bench exited non-zero"
fi
cat "$out"

grep -Eq '^scenario +threads +engine +median Mops/s' "$out" || err "no table header"

expected=0
for scen in read write mix9:1; do
	for thr in 1 2; do
		for eng in larder bare urcu ck; do
			allowed=1
			[[ $eng == bare && $thr != 1 ]] && allowed=0
			[[ $eng == ck && $scen != read && $thr != 1 ]] && allowed=0
			row=$(awk -v s="$scen" -v t="$thr" -v e="$eng" \
				'$1 == s && $2 == t && $3 == e { print $4 }' "$out")
			if ((allowed)); then
				expected=$((expected + 1))
				if [[ -z $row ]]; then
					err "no row for $scen $thr $eng"
				elif ! awk -v m="$row" 'BEGIN { exit !(m > 0) }'; then
					err "median $row for $scen $thr $eng is not positive"
				fi
			elif [[ -n $row ]]; then
				err "row for a forbidden cell: $scen $thr $eng"
			fi
		done
	done
done

if [[ ! -s $csv ]]; then
	err "no CSV written"
else
	head -1 "$csv" | grep -q '^scenario,threads,engine,rounds,median_mops' || err "bad CSV header"
	rows=$(($(wc -l <"$csv") - 1))
	((rows == expected)) || err "CSV has $rows cells, expected $expected"
	# columns: 5 median, 9 hits, 10 misses, 11 write_errors
	awk -F, 'NR > 1 && !($5 > 0) { print "bench-smoke: FAIL: CSV median not positive: " $0; bad = 1 }
		NR > 1 && $10 != 0 { print "bench-smoke: FAIL: misses with every key present: " $0; bad = 1 }
		NR > 1 && $11 != 0 { print "bench-smoke: FAIL: write errors: " $0; bad = 1 }
		END { exit bad }' "$csv" >&2 || fail=1
fi

grep -q '^checks' "$out" || err "no ratio checks printed"
for scen in write mix9:1; do
	printed=$(awk -v s="$scen" '$1 == s && $4 == "larder/ck," && $6 == "round" && $7 == "wall" { print $8 }' "$out")
	if [[ -z $printed ]]; then
		err "no per-round check against ck_ht for $scen"
		continue
	fi
	# The same median from the CSV's rounds (column 12, ';'-separated).
	want=$(awk -F, -v s="$scen" '
		$1 == s && $2 == 1 && $3 == "larder" { nl = split($12, l, ";") }
		$1 == s && $2 == 1 && $3 == "ck" { split($12, k, ";") }
		END {
			for (i = 1; i <= nl; i++) r[i] = l[i] / k[i]
			for (i = 2; i <= nl; i++) for (j = i; j > 1 && r[j - 1] > r[j]; j--) { t = r[j]; r[j] = r[j - 1]; r[j - 1] = t }
			printf "%.2f", nl % 2 ? r[(nl + 1) / 2] : (r[nl / 2] + r[nl / 2 + 1]) / 2
		}' "$csv")
	awk -v a="$printed" -v b="$want" 'BEGIN { d = a - b; exit !(d < 0.015 && d > -0.015) }' ||
		err "$scen per-round larder/ck median $printed, the CSV's rounds give $want"
done

if ((fail)); then
	exit 1
fi
echo "bench-smoke: PASS ($expected cells)"
