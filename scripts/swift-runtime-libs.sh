#!/usr/bin/env bash
# Prints the Swift runtime libraries (full paths in RUNTIME_DIR) that the given programs need, with
# what those libraries need in turn: `make install` copies them into the programs' private library
# directory, so the four programs share one copy and a device needs no Swift toolchain.
# Usage: scripts/swift-runtime-libs.sh RUNTIME_DIR PROGRAM...
set -euo pipefail
dir=$1
shift
declare -A seen=()
queue=("$@")
while [ ${#queue[@]} -gt 0 ]; do
  f=${queue[0]}
  queue=("${queue[@]:1}")
  for lib in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    [ -e "$dir/$lib" ] || continue  # a system library (libc, libstdc++, libsystemd …)
    [ -n "${seen[$lib]:-}" ] && continue
    seen[$lib]=1
    queue+=("$dir/$lib")
    echo "$dir/$lib"
  done
done
