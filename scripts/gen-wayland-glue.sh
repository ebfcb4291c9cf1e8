#!/bin/sh
# Regenerates the C glue of the Wayland protocols in protocols/ with wayland-scanner (libwayland-bin).
# With --check: exits 1 when the committed files differ from what wayland-scanner makes now.
set -eu
cd "$(dirname "$0")/.."
dir=Sources/CWlrToplevel
status=0
for name in wlr-foreign-toplevel-management-unstable-v1 idle; do
    xml=protocols/$name.xml
    header=$dir/include/$name-client-protocol.h
    code=$dir/$name-protocol.c
    if [ "${1:-}" = "--check" ]; then
        tmp=$(mktemp -d)
        wayland-scanner client-header "$xml" "$tmp/h"
        wayland-scanner private-code "$xml" "$tmp/c"
        if ! cmp -s "$tmp/h" "$header" || ! cmp -s "$tmp/c" "$code"; then
            echo "gen-wayland-glue: $header or $code is stale: run scripts/gen-wayland-glue.sh" >&2
            status=1
        fi
        rm -rf "$tmp"
    else
        wayland-scanner client-header "$xml" "$header"
        wayland-scanner private-code "$xml" "$code"
    fi
done
if [ "${1:-}" = "--check" ] && [ "$status" = 0 ]; then echo "gen-wayland-glue: ok"; fi
exit "$status"
