# shellcheck shell=bash
# scripts/lib/deps.sh - the Debian packages larder's scripts need, installed
# when missing. Sourced by scripts/test.sh and scripts/run.sh; not run alone.
#
# larder_deps_install
#   Installs, with apt-get, whichever of LARDER_DEPS is not installed yet.
#   When everything is present it runs no apt command at all, so re-running a
#   script is fast and works offline.
#   Needs root (or sudo) only when something is missing.
#
# Why each package is there (docs/build.md, "Dependencies and why each is there"):
#   cmake ninja-build gcc libc6-dev pkg-config
#                                      the build (CMake >= 3.25, presets)
#   clang-14 libclang-rt-14-dev        the clang -Werror build and ThreadSanitizer
#   libxxhash-dev                      seeded XXH3, the engine's key hash
#   liblz4-dev                         LZ4 value compression (larder_config_set_compression)
#   libzstd-dev                        zstd with a trained dictionary for short values
#                                      (larder_config_set_compression_dictionary):
#                                      2-3x smaller JSON than LZ4's 1.1x (docs/compression.md)
#   zlib1g-dev                         larder-sim and the sim tests read .gz traces
#   liburcu-dev libck-dev              baselines in larder-bench only
#   memcached nutcracker libmemcached-tools
#                                      larderd's protocol tests (reference server,
#                                      proxy, memccapable and client tools)
#   python3                            the protocol tests' drivers (stdlib only)
#   valgrind                           callgrind profiles (tools/larder-bench/profile.sh)
#   openjdk-17-jdk-headless junit5 libcaffeine-java
#                                      the Java binding (bindings/java): javac and
#                                      jni.h, JUnit 5 for its tests, Caffeine 2.6
#                                      as the benchmark's on-heap baseline
#
# larder_node_modules
#   The Node binding's two devDependencies from the npm registry (`npm ci`:
#   the exact versions and hashes of bindings/node/package-lock.json, no
#   install scripts): lru-cache, which the contract tests run side by side
#   with the binding (they are skipped without it, and say so), and
#   node-api-headers. Best effort: when npm is missing or the registry cannot
#   be reached it says so and returns 0, and the binding builds against the
#   headers Node installed beside itself. Skipped when already installed.
#   nodejs npm libnode-dev             the Node.js binding (bindings/node): node runs its
#                                      tests, npm packs it, libnode-dev holds the Node-API
#                                      headers. Only when no `node` is on PATH: a Node
#                                      installed otherwise (nodesource's 20 here, headers
#                                      included) is kept, since Debian's nodejs (v18 in
#                                      Debian 12) would replace it; the addon pins
#                                      NAPI_VERSION 8, so either runs it.

LARDER_DEPS=(
	cmake ninja-build gcc libc6-dev pkg-config
	clang-14 libclang-rt-14-dev
	libxxhash-dev
	liblz4-dev
	libzstd-dev
	zlib1g-dev
	liburcu-dev libck-dev
	memcached nutcracker libmemcached-tools python3
	valgrind
	openjdk-17-jdk-headless junit5 libcaffeine-java
)
if ! command -v node >/dev/null 2>&1; then
	LARDER_DEPS+=(nodejs npm libnode-dev)
fi

# Prints the packages among "$@" that dpkg does not list as installed.
larder_deps_missing() {
	local pkg status
	for pkg in "$@"; do
		status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
		if [[ "$status" != "install ok installed" ]]; then
			printf '%s\n' "$pkg"
		fi
	done
}

larder_deps_install() {
	local -a want=("${LARDER_DEPS[@]}") missing=() sudo=()

	if ! command -v dpkg-query >/dev/null 2>&1; then
		echo "deps: not a Debian system; install by hand: ${want[*]}" >&2
		return 1
	fi
	mapfile -t missing < <(larder_deps_missing "${want[@]}")
	if ((${#missing[@]} == 0)); then
		echo "deps: all ${#want[@]} packages present"
		return 0
	fi
	if ((EUID != 0)); then
		if command -v sudo >/dev/null 2>&1; then
			sudo=(sudo)
		else
			echo "deps: missing ${missing[*]}; run as root or install them" >&2
			return 1
		fi
	fi
	echo "deps: installing ${missing[*]}"
	# The package lists of a fresh machine are empty; refresh them first.
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends "${missing[@]}"
	mapfile -t missing < <(larder_deps_missing "${want[@]}")
	if ((${#missing[@]} != 0)); then
		echo "deps: still missing after apt-get: ${missing[*]}" >&2
		return 1
	fi
}

larder_node_modules() {
	local dir="${ROOT:-.}/bindings/node"
	if [[ -d "$dir/node_modules/lru-cache" && -d "$dir/node_modules/node-api-headers" ]]; then
		echo "deps: bindings/node/node_modules present"
		return 0
	fi
	if ! command -v npm >/dev/null 2>&1; then
		echo "deps: no npm; the Node contract tests beside lru-cache will be skipped"
		return 0
	fi
	if timeout 300 npm ci --prefix "$dir" --ignore-scripts --no-audit --no-fund; then
		echo "deps: bindings/node/node_modules installed (npm ci)"
	else
		echo "deps: npm ci failed; the Node contract tests beside lru-cache will be skipped"
	fi
	return 0
}
