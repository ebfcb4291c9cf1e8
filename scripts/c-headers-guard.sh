#!/bin/sh
# Run before a build: when a C header or module map of Sources/C* changed since the last build, remove
# the Swift modules built against it in .build (scripts/build-deb.sh runs it in its copy), so that they
# are compiled again. `swift build`'s incremental build does not see such a change: a `#error` added to
# Sources/CSystemd/shim.h built clean until a Swift file importing it was touched, and a daemon built
# that way used the old declarations. A clean checkout is unaffected (nothing built yet).
set -eu
cd "$(dirname "$0")/.."
sum=$(find Sources -path 'Sources/C*' -type f \( -name '*.h' -o -name '*.modulemap' \) \
      | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)
mkdir -p .build  # a first build: the stamp says which headers it is built against
stamp=.build/c-sources.sha256
if [ -f "$stamp" ] && [ "$(cat "$stamp")" != "$sum" ]; then
    echo "c-headers-guard: Sources/C* changed since the last build: the Swift modules are built again"
    rm -rf .build/*/debug/*.build .build/*/release/*.build .build/*/debug/Modules .build/*/release/Modules \
           .build/*/debug/ModuleCache .build/*/release/ModuleCache
fi
echo "$sum" > "$stamp"
