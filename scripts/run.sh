#!/usr/bin/env bash
# scripts/run.sh - build larder for speed and show what it does.
#
#   bash scripts/run.sh [larder-bench arguments]   (as root on Debian 12, or with sudo)
#
# Installs missing packages (scripts/lib/deps.sh), builds the release preset
# (build/release), then runs the benchmark matrix of docs/benchmarking.md with
# `larder-bench --quick` (or the arguments given). Where larder-bench is not
# built, runs the quickstart example instead. The benchmark runs niced
# (LARDER_NICE, default 10) because the build machines are shared.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=SCRIPTDIR/lib/deps.sh
source scripts/lib/deps.sh

larder_deps_install
cmake --preset release
nice -n 10 cmake --build --preset release --parallel "${LARDER_JOBS:-2}"

bench=build/release/tools/larder-bench/larder-bench
example=build/release/examples/larder-example
if [[ -x $bench ]]; then
	if (($# == 0)); then
		set -- --quick
	fi
	echo "run.sh: $bench $*"
	exec nice -n "${LARDER_NICE:-10}" "$bench" "$@"
fi
echo "run.sh: $bench is not built; running the quickstart example instead"
exec "$example"
