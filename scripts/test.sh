#!/usr/bin/env bash
# scripts/test.sh - the whole test suite of larder, as CI and the README run it.
#
#   bash scripts/test.sh        (as root on Debian 12, or with sudo)
#
# Stages, in order; each runs even when an earlier one failed, so one run
# reports everything, and the script exits non-zero when any stage failed:
#   deps        apt-get install what is missing, and npm ci the Node binding's
#               devDependencies when absent (scripts/lib/deps.sh)
#   default     gcc RelWithDebInfo, asserts on: build, ctest (every label but
#               protocol: unit, unit-shards4, reliability, stress, soak, sim,
#               bench-smoke, java, node); the build where the tests run at
#               full speed and size
#   install     cmake --install of that build into a temporary prefix, then
#               compile and run examples/quickstart.c through pkg-config,
#               against the shared and the static library
#   release     the Release build that scripts/run.sh uses (-O3, NDEBUG:
#               warnings that only optimisation reveals fail here, not in
#               run.sh); its unit tests
#   clang       clang-14 -Werror build, with the libFuzzer targets; its unit
#               tests and the short fuzz runs (protocol_fuzz_*, fuzz_*, ~20 s
#               each, two at a time)
#   tsan        clang-14 ThreadSanitizer build; the unit, reliability
#               (model tester, allocation failures) and stress tests
#   asan-ubsan  gcc AddressSanitizer + UBSan build; the same, LeakSanitizer on,
#               and the protocol tests against larderd built with both: the
#               protocol tests run only here, as this build is the default
#               one (gcc, RelWithDebInfo, asserts on) plus the sanitizers,
#               and the Python checks drive larderd the same way in both
#
# Builds are incremental (build/<preset>), niced, -j2 (LARDER_JOBS to
# change). ctest runs 3 tests at a time (LARDER_TEST_JOBS): on 2 cores, as
# the tests spend part of their time waiting (on their maintainers, on
# larderd, in sleeps: CPU over wall time 0.02-0.9 each), and no verdict
# depends on timing (tests/README.md); the longest start first (their COST,
# tests/CMakeLists.txt). A label with no tests does not fail a stage. Each
# stage's output is also kept in build/logs/<stage>.log. Budget: CI allows
# 30 minutes; the figures are in tests/README.md, "CI stages".
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=SCRIPTDIR/lib/deps.sh
source scripts/lib/deps.sh

JOBS=${LARDER_JOBS:-2}
TEST_JOBS=${LARDER_TEST_JOBS:-3}
LOGS="$ROOT/build/logs"
NICE=(nice -n 10)
CTEST_ARGS=(--no-tests=ignore --output-on-failure --parallel "$TEST_JOBS")

stage_names=()
stage_results=()
stage_secs=()
stage_notes=()

# run_stage NAME FUNCTION: runs FUNCTION in a subshell with errexit on (its
# first failing command ends the stage), logs it, and records the outcome.
run_stage() {
	local name=$1 fn=$2 t0=$SECONDS rc note
	echo
	echo "==================== [$name] ===================="
	mkdir -p "$LOGS"
	set +e
	(
		set -eo pipefail
		"$fn" 2>&1 | tee "$LOGS/$name.log"
	)
	rc=$?
	set -e
	# One "F of N tests failed" per ctest run of the stage.
	note=$(grep -oE '^[0-9]+% tests passed, [0-9]+ tests failed out of [0-9]+' "$LOGS/$name.log" |
		sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+)/\1 of \2 tests failed/' |
		paste -sd ';' - | sed 's/;/; /g' || true)
	if ((rc != 0)) && grep -q '^FAILED: ' "$LOGS/$name.log"; then
		note="build: $(grep -c '^FAILED: ' "$LOGS/$name.log") target(s) failed; ${note:-no tests run}"
	fi
	stage_names+=("$name")
	stage_results+=("$([[ $rc -eq 0 ]] && echo PASS || echo "FAIL($rc)")")
	stage_secs+=("$((SECONDS - t0))")
	stage_notes+=("${note:-}")
	return 0
}

# configure_build PRESET: configures and builds, keeping going past a failed
# target (ninja -k 0) so the tests that did build still run; returns the
# build's status, which the caller reports after its tests.
configure_build() {
	local preset=$1
	cmake --preset "$preset"
	"${NICE[@]}" cmake --build --preset "$preset" --parallel "$JOBS" -- -k 0 || {
		echo "test.sh: the $preset build failed; running the tests that built" >&2
		return 1
	}
}

# ctest_after_build PRESET BUILD_RC CTEST_ARGS...: runs the tests, then fails
# when either the tests or the build did. CTEST_ARGS come last: a --parallel
# there overrides the default one.
ctest_after_build() {
	local preset=$1 build_rc=$2
	shift 2
	"${NICE[@]}" ctest --preset "$preset" "${CTEST_ARGS[@]}" "$@"
	return "$build_rc"
}

stage_deps() {
	larder_deps_install
	larder_node_modules
	# sed, unlike head, reads to the end: no SIGPIPE for pipefail to report.
	cmake --version | sed -n 1p
	gcc --version | sed -n 1p
	clang-14 --version | sed -n 1p
}

stage_default() {
	local rc=0
	configure_build default || rc=$?
	ctest_after_build default "$rc" -LE '^protocol$'
}

# The installed library is usable the way docs/build.md says: pkg-config gives
# the flags, the shared library runs, the static one links with --static.
stage_install() {
	local prefix pcdir flags
	prefix=$(mktemp -d /tmp/larder-install.XXXXXX)
	trap 'rm -rf "$prefix"' EXIT
	cmake --install build/default --prefix "$prefix"
	pcdir=$(dirname "$(find "$prefix" -name larder.pc -print -quit)")
	test -f "$prefix/include/larder.h"
	export PKG_CONFIG_PATH="$pcdir"
	echo "pkg-config --cflags --libs larder: $(pkg-config --cflags --libs larder)"
	flags=$(pkg-config --cflags --libs larder)
	# shellcheck disable=SC2086 # flags is a word list
	gcc -std=c11 -Wall -Wextra -Werror examples/quickstart.c $flags -o "$prefix/qs-shared"
	# Only liblarder itself is forced static; libc and libxxhash stay shared.
	flags=$(pkg-config --static --cflags --libs larder)
	flags=${flags/-llarder/-Wl,-Bstatic -llarder -Wl,-Bdynamic}
	# shellcheck disable=SC2086
	gcc -std=c11 -Wall -Wextra -Werror examples/quickstart.c $flags -o "$prefix/qs-static"
	LD_LIBRARY_PATH="$(dirname "$pcdir")" "$prefix/qs-shared" >/dev/null
	"$prefix/qs-static" >/dev/null
	if ldd "$prefix/qs-static" | grep -q liblarder; then
		echo "qs-static loads liblarder.so: --static link did not pick liblarder.a" >&2
		return 1
	fi
	echo "installed library: shared and static quickstart builds run"
}

stage_release() {
	local rc=0
	configure_build release || rc=$?
	ctest_after_build release "$rc" -L '^unit$'
}

stage_clang() {
	local rc=0
	configure_build clang || rc=$?
	"${NICE[@]}" ctest --preset clang -L '^unit$' "${CTEST_ARGS[@]}" || rc=1
	# Each fuzz run has a fixed time (20 s), not a fixed count: two at a
	# time, so each keeps a core and runs as many inputs as when they ran
	# one at a time.
	ctest_after_build clang "$rc" -R '^(protocol_)?fuzz_' --parallel 2
}

# clang 14's TSan runtime cannot map its shadow under the 32-bit mmap
# randomisation of newer kernels ("unexpected memory mapping"); run without
# ASLR there, when the sandbox allows it (Docker's default seccomp may not).
tsan_launcher() {
	local bits
	bits=$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 0)
	if ((bits > 28)); then
		if setarch "$(uname -m)" -R true 2>/dev/null; then
			echo setarch "$(uname -m)" -R
		else
			echo "test.sh: vm.mmap_rnd_bits=$bits and ASLR cannot be turned off here;" \
				"TSan may fail to start (lower the sysctl to 28)" >&2
		fi
	fi
}

stage_tsan() {
	local opts="halt_on_error=1" launcher
	if [[ -f tests/tsan.supp ]]; then
		opts+=":suppressions=$ROOT/tests/tsan.supp"
	fi
	local rc=0
	configure_build tsan || rc=$?
	launcher=$(tsan_launcher)
	# shellcheck disable=SC2086 # launcher is empty or a word list
	TSAN_OPTIONS="$opts" "${NICE[@]}" $launcher ctest --preset tsan -L '^(unit|reliability|stress)$' "${CTEST_ARGS[@]}"
	return "$rc"
}

stage_asan_ubsan() {
	local rc=0
	configure_build asan-ubsan || rc=$?
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest_after_build asan-ubsan "$rc" -L '^(stress|unit|reliability|protocol)$'
}

main() {
	local t0=$SECONDS i failed=0

	run_stage deps stage_deps
	if [[ ${stage_results[0]} != PASS ]]; then
		echo "test.sh: could not install the dependencies; stopping" >&2
		exit 1
	fi
	run_stage default stage_default
	run_stage install stage_install
	run_stage release stage_release
	run_stage clang stage_clang
	run_stage tsan stage_tsan
	run_stage asan-ubsan stage_asan_ubsan

	echo
	echo "==================== summary ===================="
	printf '%-12s %-9s %6s  %s\n' stage result seconds notes
	for i in "${!stage_names[@]}"; do
		printf '%-12s %-9s %6s  %s\n' "${stage_names[$i]}" "${stage_results[$i]}" \
			"${stage_secs[$i]}" "${stage_notes[$i]}"
		[[ ${stage_results[$i]} == PASS ]] || failed=$((failed + 1))
	done
	echo "total: $((SECONDS - t0)) s; logs in build/logs/"
	if ((failed)); then
		echo "RESULT: FAIL ($failed stage(s) failed)"
		exit 1
	fi
	echo "RESULT: PASS"
}

main "$@"
