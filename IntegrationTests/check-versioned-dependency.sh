#!/usr/bin/env bash
# An app package depends on BGTaskClient the way Swift packages are used: by version.
#   1. The working tree as it is (tracked files, uncommitted edits included) becomes a git repository in a
#      temporary directory, tagged 1.0.0.
#   2. A small app package names it `.package(url: "file://…", from: "1.0.0")`, uses BGTaskClient's API
#      (a background task identifier, BGTaskScheduler, a request's earliestBeginDate) and is built. SwiftPM refuses a versioned dependency whose
#      products carry unsafe flags, so this fails if any target of ours gains one.
# Usage: IntegrationTests/check-versioned-dependency.sh [SWIFT]   (from anywhere; no root; about a minute)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
swift=${1:-swift}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 1. The tree as a tagged repository.
mkdir -p "$work/bgtaskd"
(cd "$here" && git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} sh -c '[ -e "{}" ] && printf "%s\0" "{}"' | tar --null -T - -cf -) \
  | tar -C "$work/bgtaskd" -xf -
git -C "$work/bgtaskd" init -q
git -C "$work/bgtaskd" add -A
git -C "$work/bgtaskd" -c user.name=check -c user.email=check@localhost commit -qm "bgtaskd as checked"
git -C "$work/bgtaskd" tag 1.0.0

# 2. An app package that depends on it by version.
mkdir -p "$work/app/Sources/VersionedApp"
cat > "$work/app/Package.swift" <<EOF
// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "versioned-app",
    dependencies: [.package(url: "file://$work/bgtaskd", from: "1.0.0")],
    targets: [
        .executableTarget(name: "VersionedApp", dependencies: [.product(name: "BGTaskClient", package: "bgtaskd")]),
    ]
)
EOF
cat > "$work/app/Sources/VersionedApp/main.swift" <<'EOF'
import BGTaskClient

// Compiles against the public API an app uses; running it would need a daemon. The scheduler's request
// with its Foundation date: BGTaskClient re-exports BGTaskClientCore and adds earliestBeginDate.
let id: BackgroundTaskIdentifier = .invalid
let request = BGAppRefreshTaskRequest(identifier: "org.example.App.refresh")
request.earliestBeginDate = .init(timeIntervalSince1970: 2)
let scheduler: BGTaskScheduler.Type = BGTaskScheduler.self
print("BGTaskClient by version: \(id == .invalid), \(request), \(scheduler)")
EOF
log="$work/build.log"
if ! (cd "$work/app" && "$swift" build --product VersionedApp >"$log" 2>&1); then
  echo "check-versioned-dependency: an app package cannot depend on BGTaskClient by version:" >&2
  tail -20 "$log" >&2
  exit 1
fi
"$work/app/.build/debug/VersionedApp"
echo "check-versioned-dependency: an app package built against BGTaskClient from: \"1.0.0\""
