#!/usr/bin/env bash
# tools/flush-latency/compare.sh - larder_flush's latency beside two writers,
# two trees in the same run (docs/bench.md, "Flush beside writers").
#
#   bash tools/flush-latency/compare.sh OLD_TREE NEW_TREE [rounds] [flushes] [K list]
#   (defaults: 5 rounds, 100 flushes, "1 2 4"; each tree needs its
#    build/release/liblarder.a: cmake --preset release && cmake --build --preset release)
#
# Builds this directory's flush_latency.c against each tree's larder.h and
# liblarder.a (the public API only), then runs them in turn, one run of every
# K per tree per round, the order alternating from round to round so that
# the machine's load moves both alike. Prints each run's line, then per K
# the median over the rounds of each tree's per-run median, 90th percentile
# and maximum flush latency (us) and the ratios NEW / OLD, and the load
# average before and after.
set -euo pipefail
old=${1:?OLD_TREE}; new=${2:?NEW_TREE}; rounds=${3:-5}; flushes=${4:-100}; ks=${5:-1 2 4}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for t in old new; do
	tree=${!t}
	cc -O2 -std=gnu11 -I"$tree/include" "$here/flush_latency.c" "$tree/build/release/liblarder.a" \
		$(pkg-config --libs libxxhash liblz4 libzstd) -lpthread -lm -o "$tmp/$t"
done
echo "load before: $(uptime)"
for ((r = 0; r < rounds; r++)); do
	if ((r % 2)); then order="new old"; else order="old new"; fi
	for t in $order; do
		# shellcheck disable=SC2086
		"$tmp/$t" 1 "$flushes" 256 $ks | grep '^run=' | sed "s/^run=0/tree=$t round=$r/" | tee -a "$tmp/lines"
	done
done
echo "load after: $(uptime)"
# The median over the rounds of field $2 (median_us, p90_us, max_us) of tree $1 at K = $3.
med() {
	awk -v t="tree=$1" -v f="$2=" -v k="K=$3" '$1==t && $3==k {for (i = 4; i <= NF; i++) if (index($i, f) == 1) print substr($i, length(f) + 1)}' "$tmp/lines" |
		sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
for k in $ks; do
	for f in median_us p90_us max_us; do
		o=$(med old $f "$k"); n=$(med new $f "$k")
		awk -v k="$k" -v f="$f" -v o="$o" -v n="$n" -v r="$rounds" 'BEGIN {printf "K=%s %s, median over %s rounds: old %.1f, new %.1f, new/old %.3fx\n", k, f, r, o, n, n / o}'
	done
done
