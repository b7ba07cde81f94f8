#!/usr/bin/env bash
# bindings/java/bench/run.sh - the Java binding's benchmark, in one command.
#
#   bash bindings/java/bench/run.sh           everything, about 10 minutes
#   bash bindings/java/bench/run.sh --quick   the standard matrix and the get
#                                             breakdowns only, about 3 minutes
#
# Builds the release preset (nice, -j2), then runs, each in its own JVM:
#   1. the standard matrix (16/64 B, 24,000 entries, 1 GiB; read, write and
#      9:1 at 1..cores threads): larder copy-out and view, Caffeine 2.6
#      (Debian) and ConcurrentHashMap in one JVM, rounds interleaved, medians
#      of 5 with min-max, heap bytes per operation and GC counts; then where
#      a get's nanoseconds go (crossing, C get, guard, hash, and the layers
#      between the C get and the binding's), in thread CPU time;     -Xmx2g
#   1b. the same breakdown at 1,000 entries (all in cache: the code's own
#      cost, without the cache misses);                              -Xmx1g
#   2. 10^7 entries: gets at 1..cores threads, getAllInto(16) against 16
#      Caffeine gets, Caffeine's heap and GC cost, the same breakdown; -Xmx4g
#   3. the GC-pause scenario: one JVM for Caffeine, one for larder, the same
#      -Xmx, LARDER_GC_ENTRIES entries (default 10^7) of 16 B keys and 200 B
#      values, then a 9:1 mix for LARDER_GC_SECONDS (60) on every core.
# The tables (markdown) go to stdout and to build/release/bindings/java/
# bench-results.md. Memory: at most about 8 GiB at a time (step 3).
#
# Environment: LARDER_JOBS (build parallelism, 2), LARDER_GC_ENTRIES,
# LARDER_GC_XMX (6g: what Caffeine needs for 10^7 entries of 200 B),
# LARDER_GC_SECONDS.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$ROOT"
quick=0
[[ ${1:-} == --quick ]] && quick=1

cmake --preset release >/dev/null
nice -n 10 cmake --build --preset release --parallel "${LARDER_JOBS:-2}" >/dev/null

B=$ROOT/build/release/bindings/java
for f in "$B/larder.jar" "$B/larder-bench.jar" "$B/liblarder_jni.so" "$B/liblarder_bench_jni.so"; do
	if [[ ! -f $f ]]; then
		echo "run.sh: $f was not built (JDK and libcaffeine-java installed? see scripts/lib/deps.sh)" >&2
		exit 1
	fi
done
OUT=$B/bench-results.md
JAVA=(java "-Dlarder.library.path=$B/liblarder_jni.so"
	"-Dlarder.bench.library=$B/liblarder_bench_jni.so"
	-cp "$B/larder.jar:$B/larder-bench.jar:/usr/share/java/caffeine.jar")
GC_ENTRIES=${LARDER_GC_ENTRIES:-10000000}
GC_XMX=${LARDER_GC_XMX:-6g}
GC_SECONDS=${LARDER_GC_SECONDS:-60}
threads=$(nproc)

{
	echo "## larder Java binding benchmark"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)),"
	echo "load average $(cut -d' ' -f1-3 /proc/loadavg), $(java -version 2>&1 | head -n1), release build."
} | tee "$OUT"

"${JAVA[@]}" -Xms2g -Xmx2g -XX:+AlwaysPreTouch org.larder.bench.Main matrix 5 200 "$threads" | tee -a "$OUT"
"${JAVA[@]}" -Xms1g -Xmx1g org.larder.bench.Main breakdown 1000 5 | tee -a "$OUT"
if ((quick)); then
	exit 0
fi
"${JAVA[@]}" -Xms4g -Xmx4g org.larder.bench.Main bigset 10000000 5 500 "$threads" | tee -a "$OUT"

{
	echo
	echo "### GC pauses: $GC_ENTRIES entries of 16 B keys and 200 B values, -Xms$GC_XMX -Xmx$GC_XMX (G1), 9:1 mix for $GC_SECONDS s on $threads threads"
	echo
	echo "Each write stores a newly allocated value. Pauses from -Xlog:gc (every stop-the-world pause"
	echo "during the run); GC counts from GarbageCollectorMXBean; reads timed one by one."
	echo
	"${JAVA[@]}" org.larder.bench.Main gc-header
} | tee -a "$OUT"
for engine in caffeine larder; do
	log=$(mktemp /tmp/larder-gc.XXXXXX.log)
	"${JAVA[@]}" "-Xms$GC_XMX" "-Xmx$GC_XMX" "-Xlog:gc:file=$log:uptime" \
		org.larder.bench.Main gc "$engine" "$GC_ENTRIES" 200 "$GC_SECONDS" "$threads" "$log" |
		tee -a "$OUT"
	rm -f "$log"
done
echo "(tables also in $OUT)"
