#!/bin/sh
# Regenerates the C glue of the Wayland protocols in protocols/ with wayland-scanner (libwayland-bin).
# With --check: exits 1 when the committed files differ from what wayland-scanner makes now.
set -eu
cd "$(dirname "$0")/.."
xml=protocols/wlr-foreign-toplevel-management-unstable-v1.xml
header=Sources/CWlrToplevel/include/wlr-foreign-toplevel-management-unstable-v1-client-protocol.h
code=Sources/CWlrToplevel/wlr-foreign-toplevel-management-unstable-v1-protocol.c
if [ "${1:-}" = "--check" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    wayland-scanner client-header "$xml" "$tmp/h"
    wayland-scanner private-code "$xml" "$tmp/c"
    cmp -s "$tmp/h" "$header" && cmp -s "$tmp/c" "$code" || { echo "gen-wayland-glue: $header or $code is stale: run scripts/gen-wayland-glue.sh" >&2; exit 1; }
    echo "gen-wayland-glue: ok"
    exit 0
fi
wayland-scanner client-header "$xml" "$header"
wayland-scanner private-code "$xml" "$code"
