#!/usr/bin/env bash
# tools/larder-bench/profile.sh - instructions per get, per put, per
# insert or per op of the 9:1 mix, larder vs bare (and ck_ht in the mix),
# counted by callgrind (repeatable: the count does not depend on machine
# load).
#
#   bash tools/larder-bench/profile.sh [path/to/larder-bench] [N] [get|put|insert|mix]
#   cmake --build build/release --target larder-bench-profile         (get)
#   cmake --build build/release --target larder-bench-profile-put     (put)
#   cmake --build build/release --target larder-bench-profile-insert  (insert)
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
#   insert: puts of keys never put before (larder-bench --scenarios insert,
#   BENCH-W4 in bench.h) into a cache of 2 MiB (LB_PROFILE_CAPACITY), which
#   the preload of the 24,000 keys already fills (it holds about 21,800 of
#   them), so that each insert makes the maintainer evict one entry: a
#   cache in a service putting what it missed. Counted as put is, writer
#   and maintainer apart; the eviction is the maintainer's. The run prints
#   the evictions per insert (LB_LARDER_STATS, N run less 0 run; just under
#   1: events still queued at close are not yet applied). bare inserts into
#   an empty slot of a table sized for every key (eng_bare.c): no eviction.
#   LB_PROFILE_KEY_BYTES, LB_PROFILE_VALUE_BYTES (16, 64): other sizes, such
#   as those outside larder_put's fast path (8-16 B keys, 16-64 B values).
#   LB_PROFILE_SHARDS=K (put, insert; 1 by default) opens larder's cache with K
#   shards (--shards K, docs/shards.md): the same puts spread over K
#   maintainers, whose threads are summed as "maintainer".
#   LB_PROFILE_FUNCS=N (put, insert) adds the maintainers' N costliest functions,
#   self cost per put, 0-op run subtracted (docs/shards.md compares K = 1
#   with K = 4 this way).
#   LB_PROFILE_TTL_MS=MS (get) writes the 24,000 keys with a TTL of MS ms
#   (--ttl-ms), so that each get checks a deadline: with the default clock,
#   against the TSC's bound on the time (core/clockbound.h), which the
#   maintainer calibrates during a 1 s pause the bench makes after the
#   preload (lb_ops_run), or the clock near the deadline.
#   mix: the matrix's 1-thread 9:1 cell (the same keys and values; one op
#   in ten, by the RNG, a put overwriting a present key). Engines null,
#   bare, ck (ck_ht) and larder; the main thread (-null) and the other
#   threads (larder's maintainer) apart, as for put. Also larder's own
#   entry points: larder_get's and larder_put's inclusive cost per call
#   (callgrind_annotate, 0-op run subtracted; the 0-op run's calls are the
#   preload's puts), which splits the main thread's figure into its gets
#   and its puts; the counts of each come from the run's hits, misses and
#   ops. LB_PROFILE_ENGINES="null bare ck larder" (any mode) picks the
#   engines, so that get and put can count ck_ht's get and put too (null
#   and larder must be among them, and bare too outside mix: its ratios
#   are the figures those modes print; refused with a message otherwise).
#   LB_PROFILE_CACHESIM=1 adds callgrind's cache simulation: simulated
#   first-level and last-level data misses per operation, per thread. It
#   models each thread's caches alone (no coherence traffic between cores),
#   so it counts capacity and cold misses, not the lines a writer and the
#   maintainer pass to each other; `perf stat` reports "not supported" for
#   every hardware counter on the build machine (a KVM guest without a PMU).
#   put and insert also print where a put goes by part (allocation, copy, index, hash,
#   event post, wake, policy, free, ...): each function's self cost summed
#   by the rules in groups() below, per put, 0-op run subtracted. Inlined
#   code counts in its caller unless the build has debug information (-g,
#   which does not change gcc's code), when callgrind names its own file.
#   For more, open the kept outputs with callgrind_annotate (the commands
#   are printed at the end).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench=${1:-$here/../../build/release/tools/larder-bench/larder-bench}
mode=${3:-get}
extra=() # the mode's own options
case $mode in
mix) n=${2:-1000000} scenario=mix ;;
get) n=${2:-500000} scenario=read ;;
put) n=${2:-1000000} scenario=write ;;
insert) n=${2:-1000000} scenario=insert
	extra=(--capacity "${LB_PROFILE_CAPACITY:-16M}" --entries "${LB_PROFILE_ENTRIES:-200000}") ;;
*) echo "profile.sh: mode must be get, put, insert or mix, not $mode" >&2; exit 2 ;;
esac
key_bytes=${LB_PROFILE_KEY_BYTES:-16}
value_bytes=${LB_PROFILE_VALUE_BYTES:-64}
work=${LB_PROFILE_DIR:-$(mktemp -d /tmp/larder-profile.XXXXXX)}
mkdir -p "$work"
cachesim=no
shards=${LB_PROFILE_SHARDS:-1}
ttl_ms=${LB_PROFILE_TTL_MS:-0}
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
		LB_LARDER_STATS=$([[ $mode == insert ]] && echo 1) nice -n 10 valgrind --tool=callgrind \
			--separate-threads=yes --cache-sim=$cachesim \
			--callgrind-out-file="$out" "$bench" --ops "$2" --engines "$1" \
			--scenarios $scenario --seed 42 --shards "$shards" --ttl-ms "$ttl_ms" \
			--key-size "$key_bytes" --value-size "$value_bytes" "${extra[@]}" \
			>"$work/log.$1.$2" 2>&1 ||
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

engines=${LB_PROFILE_ENGINES:-null bare larder}
[[ $mode == mix ]] && engines=${LB_PROFILE_ENGINES:-null bare ck larder}
needed="null larder"
[[ $mode == mix ]] || needed+=" bare"
for e in $needed; do
	[[ " $engines " == *" $e "* ]] ||
		{ echo "profile.sh: LB_PROFILE_ENGINES must include $e in $mode mode" >&2; exit 2; }
done
declare -A mainop otherop
for e in $engines; do
	read -r mainop[$e] otherop[$e] < <(per_op "$e" Ir)
	printf '%-7s Ir per op: main thread %8s, other threads %8s\n' "$e" "${mainop[$e]}" "${otherop[$e]}"
done

if [[ $mode == mix ]]; then
	# The run's gets and puts (the same for every engine: the RNG alone
	# decides), from larder's "ops=N hits=H misses=M" line.
	read -r gets puts < <(awk '/^ops engine=larder/ {
		for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		printf "%d %d\n", v["hits"] + v["misses"], v["ops"] - v["hits"] - v["misses"] }' "$work/log.larder.$n")
	# Inclusive Ir of larder's function $1 in the main thread's file of the
	# N-op and the 0-op runs, subtracted.
	incl() {
		local a b
		a=$(callgrind_annotate --inclusive=yes --show-percs=no --show=Ir --threshold=100 "$work/cg.larder.$n-01" 2>/dev/null |
			awk -v f="$1" '$2 ~ ":"f"$" { gsub(/,/, "", $1); print $1; exit }')
		b=$(callgrind_annotate --inclusive=yes --show-percs=no --show=Ir --threshold=100 "$work/cg.larder.0-01" 2>/dev/null |
			awk -v f="$1" '$2 ~ ":"f"$" { gsub(/,/, "", $1); print $1; exit }')
		echo $((${a:-0} - ${b:-0}))
	}
	getir=$(incl larder_get)
	putir=$(incl larder_put)
	printf '\ninstructions per op of the 9:1 mix (1-thread cell, %s B keys, %s B values, %d gets and %d puts in %d ops):\n' \
		"$key_bytes" "$value_bytes" "$gets" "$puts" "$n"
	printf '  %-8s %14s %14s %10s\n' engine "main (-null)" "other threads" both
	for e in $engines; do
		[[ $e == null ]] && continue
		awk -v e="$e" -v m="${mainop[$e]}" -v o="${otherop[$e]}" -v z="${mainop[null]}" \
			'BEGIN { printf "  %-8s %14.2f %14.2f %10.2f\n", e, m - z, o, m - z + o }'
	done
	printf '  %-8s %14.2f\n' "null" "${mainop[null]}"
	awk -v l="${mainop[larder]}" -v m="${otherop[larder]}" -v z="${mainop[null]}" \
		-v k="${mainop[ck]:-0}" -v b="${mainop[bare]:-0}" -v g="$getir" -v p="$putir" \
		-v gets="$gets" -v puts="$puts" -v n="$n" 'BEGIN {
		if (k > z)
			printf "larder/ck_ht per op (-null): main thread %.2fx, with the maintainer %.2fx\n",
				(l - z) / (k - z), (l - z + m) / (k - z)
		if (b > z)
			printf "larder/bare per op (-null): main thread %.2fx, with the maintainer %.2fx\n",
				(l - z) / (b - z), (l - z + m) / (b - z)
		printf "larder in the mix, inclusive per call: larder_get %.2f Ir per get, larder_put %.2f Ir per put\n",
			g / gets, p / puts
		printf "  (gets %.2f + puts %.2f = %.2f Ir per op; the rest of the main thread (-null): %.2f)\n",
			g / n, p / n, (g + p) / n, l - z - (g + p) / n
	}'
elif [[ $mode == get ]]; then
	awk -v l="${mainop[larder]}" -v b="${mainop[bare]}" -v z="${mainop[null]}" \
		-v kb="$key_bytes" -v vb="$value_bytes" 'BEGIN {
		printf "\ninstructions per get (1-thread read cell, %s B keys, %s B values, copy-out):\n", kb, vb
		printf "  %-8s %10s %14s\n", "engine", "per op", "per get (-null)"
		printf "  %-8s %10.2f %14.2f\n", "larder", l, l - z
		printf "  %-8s %10.2f %14.2f\n", "bare", b, b - z
		printf "  %-8s %10.2f %14s\n", "null", z, "-"
		printf "larder/bare: %.2fx per op, %.2fx per get (bar: per get <= 1.60x) %s\n",
			l / b, (l - z) / (b - z), ((l - z) / (b - z) <= 1.6) ? "PASS" : "FAIL"
	}'
else
	if [[ $mode == put ]]; then
		what="put (1-thread write cell, overwrites"
	else
		what="insert (new keys into a full cache of ${extra[1]}, ${extra[3]} keys preloaded"
	fi
	awk -v l="${mainop[larder]}" -v m="${otherop[larder]}" -v b="${mainop[bare]}" \
		-v z="${mainop[null]}" -v what="$what" -v op="$mode" -v kb="$key_bytes" \
		-v vb="$value_bytes" 'BEGIN {
		printf "\ninstructions per %s, %s B keys, %s B values):\n", what, kb, vb
		printf "  %-22s %10s\n", "", "Ir per " op
		printf "  %-22s %10.2f\n", "larder, writer (-null)", l - z
		printf "  %-22s %10.2f\n", "larder, maintainer", m
		printf "  %-22s %10.2f\n", "larder, both", l - z + m
		printf "  %-22s %10.2f\n", "bare (-null)", b - z
		printf "  %-22s %10.2f\n", "null (the loop)", z
		printf "maintainer/writer: %.2f; larder (both)/bare: %.2fx\n", m / (l - z), (l - z + m) / (b - z)
	}'
fi
if [[ $mode == insert ]]; then
	evictions() { awk '/larder stats:/ { for (i = 1; i < NF; i++) if ($i == "evictions") print $(i + 1) }' "$1"; }
	awk -v a="$(evictions "$work/log.larder.$n")" -v b="$(evictions "$work/log.larder.0")" -v n="$n" \
		'BEGIN { printf "evictions per insert: %.3f (applied by close)\n", (a - b) / n }'
fi
if [[ $cachesim == yes ]]; then
	echo
	echo "simulated data misses per op (callgrind cache model, each thread alone):"
	# mix: every engine's (ck_ht's and bare's misses beside larder's).
	simengines=larder
	[[ $mode == mix ]] && simengines=${engines/null/}
	for ev in D1mr D1mw DLmr DLmw; do
		read -r za zb < <(per_op null $ev)
		for e in $simengines; do
			read -r a b < <(per_op "$e" $ev)
			printf '  %-5s %-7s main thread %7.3f (null %7.3f)  other threads %7.3f\n' "$ev" "$e" "$a" "$za" "$b"
		done
	done
fi
if [[ $mode != get ]]; then
	# Where a put goes, by part. Each function's self cost (inlined code
	# counts where it was inlined; with a -g build, callgrind_annotate names
	# the source file of inlined code, and the rules below use it), summed
	# by group, 0-op run subtracted, per put. Rules: first match wins.
	groups() { # $1 thread (writer|maintainer), $2.. callgrind files
		local thread=$1
		shift
		for f in "$@"; do callgrind_annotate --inclusive=no --show-percs=no --show=Ir --threshold=100 "$f" 2>/dev/null; done |
			awk -v thread="$thread" '
			/^ *[0-9][0-9,]* +[^ ]+:[^ ]/ {
				ir = $1; gsub(/,/, "", ir)
				file = fn = $2; sub(/:[^:]*$/, "", file); sub(/.*:/, "", fn); sub(/[^A-Za-z0-9_][0-9]+$/, "", fn) # a recursion level suffix
				w = thread == "writer"
				if (file ~ /tools\/larder-bench\// || fn ~ /^(lgr_run|lgr_put|lb_preload)$/) g = "harness (loop, keys)"
				else if (file ~ /xxhash\.h|core\/hash\.h/) g = "hash"
				else if (file ~ /memmove|memcpy/) g = "copy (entry header, key, value)"
				else if (fn ~ /^(reserve_room|take_credit|want_bytes)$/) g = "room (byte credit, ring space)"
				else if (fn ~ /^larder__(maint_wake|maint_wake_writers|futex_)/ || file ~ /futex/) g = "wake"
				else if (file ~ /maint\/events\.h/) g = w ? "event post" : "event drain, dispatch"
				else if (file ~ /sync\/reclaim/ || fn ~ /^larder__gp_/) g = w ? "read section" : "grace period"
				else if (file ~ /src\/index\// || fn ~ /^larder__table_/) g = "index"
				else if (fn ~ /^(account|larder__slab_note_live)$/) g = "accounting (live totals)"
				else if (fn ~ /^(larder__slab_free|page_slots_freed|free_list|larder__maint_(free_entries|count_freed))$/) g = "free"
				else if (file ~ /src\/evict\// || fn ~ /^((s3|lru|fifo|arc|wtlfu)_|larder__(tuner|ghost|sketch)_)/) g = "policy"
				else if (file ~ /maint\/evict\.c/ || fn ~ /^larder__maint_evict/) g = "eviction"
				else if (fn ~ /^(retire_sized|larder__maint_retire.*)$/) g = "retire"
				else if (fn ~ /^(apply|sized_of|drain_events|drain_hits|spill_next|spill_at|larder__maint_drain_all)$/) g = "event drain, dispatch"
				else if (fn == "entry_build" && file !~ /src\/mem\//) g = "copy (entry header, key, value)"
				else if (file ~ /src\/mem\// || fn ~ /^(larder__slab|page_|steal_maint|take_owner|pthread_mutex)/) g = w ? "allocation (slab, page ids)" : "free"
				else if (file ~ /maint\/maintainer\.c/ || fn ~ /^(maint_main|maint_pass|maint_sleep|lazy_sleep|larder__maint_rings_empty)$/) g = "pass loop, sleep"
				else if (file ~ /core\/(cache|thread|entry)|maint\/handle\.h/ || fn ~ /^(write_common|larder_put|put_(general|indexed|refill))$/) g = "front (checks, thread state, slot update, stats)"
				else g = "other"
				sum[g] += ir
			}
			END { for (g in sum) printf "%s\t%d\n", g, sum[g] }'
	}
	# $1 thread (writer: the main thread's file -01; maintainer: every other
	# thread's): prints the table of groups, per put.
	group_table() {
		local f files_n=() files_0=()
		for f in "$work/cg.larder.$n"-[0-9]* "$work/cg.larder.0"-[0-9]*; do
			if [[ $f == *-01 ]]; then [[ $1 == writer ]] || continue; else [[ $1 != writer ]] || continue; fi
			if [[ $f == "$work/cg.larder.0-"* ]]; then files_0+=("$f"); else files_n+=("$f"); fi
		done
		join -t $'\t' -a 1 -a 2 -e 0 -o 0,1.2,2.2 <(groups "$1" "${files_n[@]}" | sort) \
			<(groups "$1" "${files_0[@]}" | sort) |
			awk -F'\t' -v n="$n" '{ printf "%.2f\t%s\n", ($2 - $3) / n, $1 }' | sort -rn |
			awk -F'\t' '$1 != "0.00" && $1 != "-0.00" { printf "  %-50s %8.2f\n", $2, $1 } { t += $1 } END { printf "  %-50s %8.2f\n", "total", t }'
	}
	if command -v callgrind_annotate >/dev/null; then
		echo
		echo "where a put goes, Ir per put by part (self cost of each function as compiled; a -g build"
		echo "attributes inlined code to its own source file, without -g it counts in its caller):"
		echo " writer (the harness's share is the null engine's loop):"
		group_table writer
		echo " maintainer:"
		group_table maintainer
	fi
	if [[ ${LB_PROFILE_FUNCS:-0} -gt 0 ]] && command -v callgrind_annotate >/dev/null; then
		# Self cost per function of every maintainer thread, summed.
		funcs() {
			for f in "$@"; do callgrind_annotate --inclusive=no --show-percs=no --show=Ir --threshold=100 "$f" 2>/dev/null; done |
				awk '/^ *[0-9][0-9,]* +[^ ]+:[^ ]/ { ir = $1; gsub(/,/, "", ir); fn = $2; sub(/.*:/, "", fn); s[fn] += ir }
					END { for (f in s) printf "%s\t%d\n", f, s[f] }' | sort
		}
		mfiles() { local f; for f in "$work/cg.larder.$1"-[0-9]*; do [[ $f == *-01 ]] || echo "$f"; done; }
		echo
		echo "the maintainers' ${LB_PROFILE_FUNCS} costliest functions, self Ir per put (K = $shards):"
		mapfile -t fn_n < <(mfiles "$n")
		mapfile -t fn_0 < <(mfiles 0)
		join -t $'\t' -a 1 -a 2 -e 0 -o 0,1.2,2.2 <(funcs "${fn_n[@]}") <(funcs "${fn_0[@]}") |
			awk -F'\t' -v n="$n" '{ printf "%.2f\t%s\n", ($2 - $3) / n, $1 }' | sort -rn |
			head -n "$LB_PROFILE_FUNCS" | awk -F'\t' '{ printf "  %-50s %8.2f\n", $2, $1 }'
	fi
fi
echo "where larder's instructions go: callgrind_annotate --inclusive=yes $work/cg.larder.$n-01 | head -40"
[[ $mode != get ]] &&
	echo "  the maintainer's: callgrind_annotate --inclusive=yes $work/cg.larder.$n-02 | head -40"
exit 0
