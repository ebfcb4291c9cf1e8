#!/usr/bin/env bash
# Builds the Debian package (debian/, debhelper compat 13) from the tracked files of this work tree.
# dpkg-buildpackage writes its results into the parent of the source directory, so it runs in a copy,
# .build-deb/src (kept between runs, so the Swift release build there is incremental); the .deb, the
# .buildinfo and .changes land in .build-deb/. Then lintian checks the package: errors fail the build,
# the warnings we accept are overridden in debian/bgtaskd.lintian-overrides with the reason.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/.build-deb
src=$out/src
mkdir -p "$src"

# Sync the tracked (and new, not ignored) files into the copy; files deleted here are deleted there.
listing=$(mktemp)
trap 'rm -f "$listing"' EXIT
git ls-files -co --exclude-standard -z >"$listing"
( cd "$src" && find . -path ./.build -prune -o \( -type f -o -type l \) -print0 ) | while IFS= read -r -d '' f; do
  f=${f#./}
  grep -qzxF -- "$f" "$listing" || rm -f "$src/$f"
done
tar -C "$root" --null -T "$listing" -cf - | tar -C "$src" -xf -

"$src/scripts/c-headers-guard.sh"
rm -f "$out"/*.deb "$out"/*.buildinfo "$out"/*.changes
( cd "$src" && SWIFT="${SWIFT:-swift}" dpkg-buildpackage -b -us -uc --no-sign )
deb=$(ls "$out"/bgtaskd_*.deb)
echo "build-deb: $deb ($(du -k "$deb" | cut -f1) KiB)"
dpkg-deb --contents "$deb" | awk '{print $6}' | sed 's|^\./|/|' | grep -v '/$'

echo "build-deb: lintian"
lintian --fail-on error --suppress-tags-from-file /dev/null "$deb" | tee "$out/lintian.txt"
echo "build-deb: lintian: $(grep -c '^E:' "$out/lintian.txt" || true) errors, $(grep -c '^W:' "$out/lintian.txt" || true) warnings"
