#!/usr/bin/env bash
# tools/larder-bench/scale_vs_memcached.sh - memory per item, larder beside
# Debian's memcached, holding the same items (docs/scale.md).
#
#   1. starts memcached on loopback (-m large enough that nothing is
#      evicted, 2 worker threads, its hash table sized for N up front with
#      -o hashpower, as larder-bench sizes larder's index with the expected
#      entry count; left to grow, memcached expands its table in the
#      background and is measured mid-way), reads its RSS, loads N items of a 16-byte
#      key and a 64-byte value with mc_load.py (pipelined "set ... noreply"
#      over 2 connections, then a round trip on each), checks with "stats"
#      that it holds all N and evicted none, reads its RSS again and prints
#      its own view: item chunk size (stats slabs) and hash table bytes;
#   2. runs larder-bench --scale with the same N (2 writer threads, then a
#      short read phase) and takes its RSS figures;
#   3. prints RSS growth per item for both and what is left after the 80
#      bytes of key and value.
#
# Usage: scale_vs_memcached.sh [N (10000000)] [path/to/larder-bench]
# Env:   PORT (22122). Needs memcached and python3. Run memory-heavy sizes
#        under `flock /work/notes/bigmem.lock` on shared machines.
set -euo pipefail

n=${1:-10000000}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench=${2:-$here/../../build/release/tools/larder-bench/larder-bench}
port=${PORT:-22122}
mb=$((n * 400 / 1048576 + 64))
# memcached grows its table past 1.5 items per bucket: the least power that holds n.
hashpower=16
while ((n * 2 > 3 << hashpower)); do hashpower=$((hashpower + 1)); done

die() {
	echo "scale_vs_memcached: $1" >&2
	exit "${2:-1}"
}
command -v memcached >/dev/null || die "memcached is not installed" 2
[[ -x $bench ]] || die "no larder-bench at $bench (build it first)" 2

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# One memcached text command; prints the reply up to END (or VERSION's line).
mc() {
	python3 - "$port" "$1" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(sys.argv[2].encode() + b"\r\n")
buf = b""
while not (buf.endswith(b"END\r\n") or (buf.startswith(b"VERSION") and buf.endswith(b"\n"))):
	chunk = s.recv(65536)
	if not chunk:
		break
	buf += chunk
sys.stdout.write(buf.decode())
EOF
}

stat_of() { awk -v k="$1" '$1 == "STAT" && $2 == k { gsub("\r", "", $3); print $3 }'; }

memcached -u nobody -l 127.0.0.1 -p "$port" -U 0 -t 2 -m "$mb" -o hashpower="$hashpower" &
mc_pid=$!
trap 'kill "$mc_pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	if mc "version" >/dev/null 2>&1; then
		break
	fi
	sleep 0.1
done
mc_rss0=$(rss_kb "$mc_pid")
echo "memcached $(memcached -V | awk '{print $2}'): -m $mb -t 2 -o hashpower=$hashpower," \
	"RSS before load $((mc_rss0 / 1024)) MiB"
python3 "$here/mc_load.py" "$port" "$n" 2 | sed 's/^/memcached load: /'
stats=$(mc "stats")
slabs=$(mc "stats slabs")
mc_rss1=$(rss_kb "$mc_pid")
items=$(stat_of curr_items <<<"$stats")
evicted=$(stat_of evictions <<<"$stats")
hash_bytes=$(stat_of hash_bytes <<<"$stats")
expanding=$(stat_of hash_is_expanding <<<"$stats")
item_bytes=$(stat_of bytes <<<"$stats")
# The class holding the items: the one with the most used chunks.
chunk=$(awk '$1 == "STAT" && $2 ~ /:used_chunks$/ { gsub("\r", "", $3);
	split($2, a, ":"); if ($3 + 0 > best) { best = $3 + 0; cls = a[1] } }
	END { print cls }' <<<"$slabs")
chunk_size=$(stat_of "$chunk:chunk_size" <<<"$slabs")
kill "$mc_pid"
wait "$mc_pid" 2>/dev/null || true
trap - EXIT
if [[ $items != "$n" || $evicted != 0 || $expanding != 0 ]]; then
	die "memcached holds $items of $n items, $evicted evicted, hash table expanding: $expanding"
fi
per_item() { awk -v b="$1" -v n="$n" 'BEGIN { printf "%.1f", b / n }'; }
echo "memcached: $items items, item bytes $(per_item "$item_bytes") B/item," \
	"slab chunk $chunk_size B (class $chunk), hash table $(per_item "$hash_bytes") B/item"

out=$(nice -n 10 "$bench" --scale --entries "$n" --threads 1 --rounds 1 --warmup 0 2>/dev/null)
# shellcheck disable=SC2001 # a prefix on every line of the output
sed 's/^/larder: /' <<<"$out"
read -r l_base l_after < <(awk '/^RSS: baseline/ { print $3, $7 }' <<<"$out")
[[ -n ${l_after:-} ]] || die "larder-bench printed no RSS line"

echo
fmt='%-10s %10s %14s %14s %16s %18s\n'
# shellcheck disable=SC2059 # fmt is the one table format
printf "$fmt" engine items "RSS before" "RSS after" "RSS/item" "beyond 80 B/item"
# row NAME BEFORE_MIB AFTER_MIB
row() {
	awk -v name="$1" -v n="$n" -v a="$2" -v b="$3" 'BEGIN { d = (b - a) * 1048576 / n
		printf "%-10s %10d %11.1f MiB %11.1f MiB %14.1f B %16.1f B\n",
			name, n, a, b, d, d - 80 }'
}
row memcached "$(awk -v k="$mc_rss0" 'BEGIN { print k / 1024 }')" \
	"$(awk -v k="$mc_rss1" 'BEGIN { print k / 1024 }')"
row larder "$l_base" "$l_after"
