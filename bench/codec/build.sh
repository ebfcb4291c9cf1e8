#!/bin/sh
# Builds the codec driver (driver.swift) against BGTaskModel + BGTaskProtocol of a source tree, optimized
# as in a release build (-O, whole module), and runs it under callgrind: instructions per Begin/End pair.
#   bench/codec/build.sh [SOURCE_TREE] [OUT_DIR] [N]
# SOURCE_TREE defaults to this checkout; pass a `git worktree` of another commit to compare.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "${1:-$here/../..}" && pwd)
out=${2:-/tmp/bgtaskd-codec}
n=${3:-20000}
mkdir -p "$out"
cd "$out"
swiftc -O -wmo -parse-as-library -module-name BGTaskModel -emit-module -emit-library -static \
    -enable-upcoming-feature InternalImportsByDefault "$src"/Sources/BGTaskModel/*.swift -o libBGTaskModel.a
swiftc -O -wmo -parse-as-library -module-name BGTaskProtocol -emit-module -emit-library -static -I . \
    -enable-upcoming-feature InternalImportsByDefault $(find "$src"/Sources/BGTaskProtocol -name '*.swift') -o libBGTaskProtocol.a
flags=""
if grep -q 'enum AppWire' -r "$src"/Sources/BGTaskProtocol; then flags="-D CONTRACT"; fi
# The contract carries the model's identifiers (TaskID…) rather than Int64.
if grep -q 'protocol WireIdentifier' -r "$src"/Sources/BGTaskProtocol; then flags="$flags -D TYPED_IDS"; fi
swiftc -O -wmo -parse-as-library -I . -L . -lBGTaskProtocol -lBGTaskModel -lm $flags "$here/driver.swift" -o codec-driver
# Two runs: N pairs and 2N pairs; the difference is the cost of N pairs without start-up.
for k in 1 2; do
    valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.$k" ./codec-driver $((n * k)) >/dev/null 2>"$out/valgrind.$k"
done
i1=$(grep -m1 '^summary:' "$out/callgrind.1" | awk '{print $2}')
i2=$(grep -m1 '^summary:' "$out/callgrind.2" | awk '{print $2}')
echo "instructions per Begin/End pair (decode + check + parameters + reply, both calls): $(( (i2 - i1) / n ))"
