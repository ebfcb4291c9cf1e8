#!/usr/bin/env bash
# `swift build --build-tests`, failing when the compiler warns: the build is kept warning-free (issue 13).
# Only what is compiled in this run can warn, so a fresh clone (CI) checks every file. The static
# Foundation library's own linker note about mktemp (release builds) is not ours and is not counted.
set -uo pipefail
swift=${1:-swift}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$swift" build --build-tests 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
[ "$status" = 0 ] || exit "$status"
warnings=$(grep -E ': warning: ' "$log" | grep -v "the use of \`mktemp'" | sort -u || true)
if [ -n "$warnings" ]; then
  echo "build: $(printf '%s\n' "$warnings" | wc -l) compiler warning(s); the build must be warning-free:" >&2
  printf '%s\n' "$warnings" >&2
  exit 1
fi
echo "build: no compiler warnings"
