#!/usr/bin/env bash
# Runs the libFuzzer target FuzzTesting/FuzzVarlinkDecoding (the daemon's framing, call decoding and call
# checks) for SECONDS (default 600), from the committed seed corpus plus what earlier runs found in
# FuzzTesting/.build/corpus. Prints the number of runs and crashes; exits non-zero on a crash (its input
# is kept in FuzzTesting/.build/crashes/). Builds first with -sanitize=fuzzer,address (leak
# detection off: the target keeps its parsed interface descriptions in a global for the whole run).
set -euo pipefail
cd "$(dirname "$0")/../FuzzTesting"
seconds="${1:-600}"
swift="${SWIFT:-swift}"
# One -sanitize= list: SwiftPM passes `--sanitize=` values as separate flags in no fixed order, and the
# driver keeps only one of them (a build with ASan but without libFuzzer's coverage was the result).
# --sanitize=fuzzer still tells SwiftPM to link libFuzzer's main.
"$swift" build -c debug --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address 2>&1 | grep -v "Cannot export local symbol '__asan" || true
bin=.build/debug/FuzzVarlinkDecoding
[ -x "$bin" ] || { echo "fuzz: $bin was not built" >&2; exit 1; }
mkdir -p .build/corpus .build/crashes
log=.build/fuzz.log
set +e
ASAN_OPTIONS=detect_leaks=0 SWIFT_BACKTRACE=enable=no "$bin" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 -detect_leaks=0 -print_final_stats=1 \
  -dict=varlink.dict -artifact_prefix=.build/crashes/ .build/corpus Corpus/FuzzVarlinkDecoding >"$log" 2>&1
status=$?
set -e
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
crashes=$(grep -c -E '^==[0-9]+==ERROR|deadly signal|Fatal error|ALARM: working on the last Unit|out-of-memory' "$log" || true)
echo "fuzz: FuzzVarlinkDecoding ran ${runs:-0} inputs in ${seconds} s: ${crashes} crashes (exit status ${status}; log ${PWD}/${log})"
if ! grep -q "inline 8-bit counters" "$log" || grep -q "Is the code instrumented for coverage" "$log"; then
  echo "fuzz: the target was built without coverage instrumentation: the run proves nothing" >&2
  exit 1
fi
if [ "$status" != 0 ] || [ "${crashes}" != 0 ]; then
  tail -40 "$log" >&2
  exit 1
fi
