#!/usr/bin/env bash
# bindings/java/test/load_test.sh - the JNI library is found the ways the
# README and docs/java.md say, and a missing one is reported clearly
# (ctest: java_load).
#
#   load_test.sh CMAKE BUILD_DIR JAVA CLASSPATH JNI_LIBRARY
#
# CLASSPATH is the build tree's larder.jar:larder-tests.jar; JNI_LIBRARY
# the build tree's liblarder_jni.so. Checks, each with org.larder.LoadCheck:
#   1. from the build tree, by -Dlarder.library.path;
#   2. from an install prefix (cmake --install into a temporary directory):
#      larder.jar under share/java, liblarder_jni.so beside liblarder.so and
#      resolving it through its RPATH ($ORIGIN), by -Djava.library.path and
#      by -Dlarder.library.path;
#   3. with no library where it looks: exit 3, and a message that names both
#      system properties;
#   4. the Java example (example/Example.java), compiled against the
#      installed jar alone and run.
set -euo pipefail

cmake=$1 build=$2 java=$3 classpath=$4 jni=$5
tests_jar=${classpath#*:}
prefix=$(mktemp -d /tmp/larder-java-install.XXXXXX)
trap 'rm -rf "$prefix"' EXIT

expect_ok() {
	local what=$1 out
	shift
	out=$("$java" "$@" org.larder.LoadCheck)
	if [[ $out != "LoadCheck OK world" ]]; then
		echo "FAIL: $what: got '$out'" >&2
		exit 1
	fi
	echo "ok: $what"
}

expect_error() {
	local what=$1 err rc=0
	shift
	err=$("$java" "$@" org.larder.LoadCheck 2>&1 >/dev/null) || rc=$?
	if ((rc != 3)) || [[ $err != *"-Dlarder.library.path="* ]] ||
		[[ $err != *"java.library.path"* ]]; then
		echo "FAIL: $what: exit $rc, message: $err" >&2
		exit 1
	fi
	echo "ok: $what: $err"
}

expect_ok "build tree, -Dlarder.library.path" -cp "$classpath" "-Dlarder.library.path=$jni"

"$cmake" --install "$build" --prefix "$prefix" >/dev/null
jar=$prefix/share/java/larder.jar
lib=$(find "$prefix" -name liblarder_jni.so -print -quit)
libdir=$(dirname "$lib")
test -f "$jar" || { echo "FAIL: no $jar" >&2; exit 1; }
test -e "$libdir/liblarder.so.0" || { echo "FAIL: liblarder_jni.so is not beside liblarder" >&2; exit 1; }
deps=$(ldd "$lib") # not piped into grep -q: pipefail would see ldd's SIGPIPE
if [[ $deps != *"liblarder.so.0 => $libdir/liblarder.so.0"* ]]; then
	echo "FAIL: $lib does not resolve liblarder.so.0 beside it:" >&2
	echo "$deps" >&2
	exit 1
fi
expect_ok "install prefix, -Djava.library.path" -cp "$jar:$tests_jar" "-Djava.library.path=$libdir"
expect_ok "install prefix, -Dlarder.library.path" -cp "$jar:$tests_jar" "-Dlarder.library.path=$lib"

expect_error "no library on java.library.path" -cp "$jar:$tests_jar" "-Djava.library.path=$prefix/none"
expect_error "a larder.library.path that does not exist" -cp "$jar:$tests_jar" \
	"-Dlarder.library.path=$prefix/none/liblarder_jni.so"
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../example" && pwd)
javac=$(dirname "$(readlink -f "$java")")/javac
"$javac" --release 11 -Xlint:all -Werror -cp "$jar" -d "$prefix/example" "$src/Example.java"
out=$("$java" -cp "$jar:$prefix/example" "-Djava.library.path=$libdir" Example)
if [[ $out != *"first byte 1"* || $out != *"3 true true 3 hits"* ]]; then
	echo "FAIL: the Java example printed: $out" >&2
	exit 1
fi
echo "ok: the Java example: $out"
echo "PASS"
