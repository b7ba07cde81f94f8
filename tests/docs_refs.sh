#!/usr/bin/env bash
# tests/docs_refs.sh - every reference in the tree points inside it.
#
#   bash tests/docs_refs.sh [repository root]      (ctest: docs_refs, label unit)
#
# A clone holds only what git tracks, so no tracked file may send its reader
# elsewhere: fails, listing file:line of each hit, when a tracked text file
# (git ls-files, this script excepted) mentions
#   - ARCHITECTURE.md, STYLE.md or BENCHMARKS.md (design notes kept outside
#     the repository; the repository's own are docs/architecture.md,
#     docs/style.md and docs/benchmarking.md),
#   - a file in the traces folder beside the checkout (shared/traces/NAME);
#     the folder itself may be named as the default of LARDER_TRACES_DIR,
#     a data location rather than something to read,
#   - an issue number ("issue 4", "issue #5", "issues 4"): a tracker is not
#     part of a clone, so the reason goes in the text instead;
# and, by tests/docs_cites.py, when a citation of a docs section (docs/X.md,
# "Title", or a Markdown link X.md#anchor) names a section that its file
# does not have (the rule is in docs_cites.py's header).
# The pattern is first tried on lines it must and must not match, so a broken
# pattern fails here instead of passing everything.
# Exit status: 0 clean, 1 hits (or a broken pattern), 77 (ctest: skipped) when
# the root is not a git checkout, so the tracked files are unknown.
set -euo pipefail

root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
self=tests/docs_refs.sh
pattern='ARCHITECTURE\.md|STYLE\.md|BENCHMARKS\.md|shared/traces/[A-Za-z]|[Ii]ssues? #?[0-9]+'

must_match=(
	'see ARCHITECTURE.md, invariant 2'
	'(STYLE.md)'
	'the matrix of BENCHMARKS.md'
	'T=../shared/traces/REFERENCE.tsv'
	'the format of shared/traces/README.md'
	'(issue 4)'
	'after tuning (issue #5)'
	'Issue 12 says'
	'issues 4 and 5'
)
must_not_match=(
	'docs/architecture.md, invariant 2'
	'docs/style.md and docs/benchmarking.md'
	'no "issue N" in comments'
	'the issue tracker'
	'a shared library'
	'set(LARDER_TRACES_DIR "${PROJECT_SOURCE_DIR}/../shared/traces" CACHE PATH'
)
bad=0
for line in "${must_match[@]}"; do
	grep -qE "$pattern" <<<"$line" || { echo "docs_refs: pattern misses: $line" >&2; bad=1; }
done
for line in "${must_not_match[@]}"; do
	if grep -qE "$pattern" <<<"$line"; then
		echo "docs_refs: pattern wrongly matches: $line" >&2
		bad=1
	fi
done
((bad == 0)) || exit 1

if ! git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	echo "docs_refs: SKIPPED: $root is not a git checkout (tracked files unknown)"
	exit 77
fi

# git grep: tracked files only, binary files skipped; status 1 means no hit.
status=0
hits=$(git -C "$root" grep -n -I -E "$pattern" -- . ":(exclude)$self") || status=$?
if ((status > 1)); then
	echo "docs_refs: FAIL: git grep failed (status $status)" >&2
	exit 1
fi
if [[ -n $hits ]]; then
	count=$(wc -l <<<"$hits")
	echo "docs_refs: FAIL: $count reference(s) to files outside the repository or to issue numbers:"
	echo "$hits"
	exit 1
fi
# Both scripts' own examples are citations of no file.
mapfile -t tracked < <(git -C "$root" ls-files -- . ":(exclude)$self" ":(exclude)tests/docs_cites.py")
python3 "$root/tests/docs_cites.py" "$root" "${tracked[@]}"
echo "docs_refs: PASS ($(git -C "$root" ls-files | wc -l) tracked files checked)"
