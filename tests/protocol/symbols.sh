#!/usr/bin/env bash
# tests/protocol/symbols.sh - larderd stays a client of the public API.
#
#   bash tests/protocol/symbols.sh NM REPO_ROOT OBJECT...   (ctest: protocol_symbols)
#
# The engine's internal names (larder__*, LARDER__*) and headers (src/) are
# the engine's to change at will; larderd, like any user of the library, may
# rely only on include/larder.h, and names its own symbols larderd_*. Fails,
# listing each offence, when
#   - a file under server/ includes a header other than a system header,
#     larder.h, or one of server/'s own (so nothing from src/),
#   - a file under server/ mentions an identifier starting with larder__ or
#     LARDER__,
#   - one of larderd's object files (OBJECT..., archives too) defines an
#     external symbol not named larderd_* (main excepted), or needs a larder
#     symbol that include/larder.h does not declare.
# The patterns are first tried on lines they must and must not match, so a
# broken pattern fails here instead of passing everything.
set -euo pipefail

nm=$1
root=$2
shift 2
fail=0

ident='(^|[^A-Za-z0-9_])(larder__|LARDER__)[A-Za-z0-9_]'
for s in 'larder__exec(x)' 'x = LARDER__KEY_MAX;' '#define LARDER__A 1'; do
	grep -qE "$ident" <<<"$s" || { echo "pattern misses: $s"; exit 1; }
done
for s in 'larderd_exec(x)' 'LARDERD_KEY_MAX' 'larder_get(c)' 'xlarder__y'; do
	if grep -qE "$ident" <<<"$s"; then echo "pattern wrongly matches: $s"; exit 1; fi
done

cd "$root"
srv=$(realpath server)
mapfile -t sources < <(find server -name '*.[ch]' | sort)
[ ${#sources[@]} -gt 0 ] || { echo "no sources under server/"; exit 1; }

hits=$(grep -nE "$ident" "${sources[@]}" || true)
if [ -n "$hits" ]; then
	echo "engine-internal names in server/ (use larder.h; name server symbols larderd_*):"
	echo "$hits"
	fail=1
fi

# A quoted include must be larder.h or resolve inside server/ (relative to
# the including file, or to the include directories server/ and server/proto).
for f in "${sources[@]}"; do
	while IFS= read -r inc; do
		[ "$inc" = larder.h ] && continue
		ok=0
		for cand in "$(dirname "$f")/$inc" "server/$inc" "server/proto/$inc"; do
			if [ -f "$cand" ]; then
				case "$(realpath "$cand")" in "$srv"/*) ok=1 ;; esac
			fi
		done
		[ $ok = 1 ] || { echo "$f includes \"$inc\": not larder.h nor a header of server/"; fail=1; }
	done < <(sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1/p' "$f")
done

api=$(grep -oE 'larder_[a-z0-9_]+' include/larder.h | sort -u)
[ -n "$api" ] || { echo "no larder_ names in include/larder.h"; exit 1; }
[ $# -gt 0 ] || { echo "no object files given"; exit 1; }
for obj in "$@"; do
	while read -r type sym; do
		case "$type" in
		U)
			case "$sym" in
			larderd_*) ;;
			larder*) grep -qxF "$sym" <<<"$api" ||
				{ echo "$obj: needs $sym, not in include/larder.h"; fail=1; } ;;
			esac ;;
		*)
			case "$sym" in
			larderd_* | main | _*) ;;
			*) echo "$obj: defines $sym (not larderd_*; make it static or rename it)"
				fail=1 ;;
			esac ;;
		esac
	done < <("$nm" -g "$obj" | awk 'NF >= 2 && $(NF-1) ~ /^[A-Za-z]$/ { print $(NF-1), $NF }')
done
exit $fail
