#!/bin/sh
# Checks the systemd files of bgtaskd:
#   1. systemd-analyze verify of bgtaskd.service, bgtaskd.socket,
#      bgtaskd-launcher.service and bgtaskd-launcher.socket. verify refuses an
#      ExecStart= binary that does not exist, so it runs against a temporary
#      root holding the units, stubs of /usr/bin/bgtaskd and
#      /usr/bin/bgtaskd-launcher, /bin/kill (ExecReload=) and a copy of the
#      system's own units (sysinit.target, ...).
#      Any message at all (unknown key, bad value) counts as a failure.
#   2. systemd-analyze security --offline=true: prints the overall exposure of
#      bgtaskd.service and fails when it is above MAX_EXPOSURE (default 2.0).
#      The exposure of bgtaskd-launcher.service is printed for information
#      only: it is the apps' sandbox (see docs/installing.md, "Security").
#   3. bgtaskd.catalog: journalctl --update-catalog into the temporary root must
#      accept it, and it must hold exactly the MESSAGE_IDs of message-ids.txt.
#   4. bgtaskd.sysusers: systemd-sysusers creates the bgtaskd user in the root.
# Usage: IntegrationTests/check-units.sh   (from anywhere; needs systemd >= 250, no root)
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
units="$here/systemd"
max="${MAX_EXPOSURE:-2.0}"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT INT TERM
failed=0
fail() { echo "FAIL: $*" >&2; failed=1; }

# --- 1. verify ---------------------------------------------------------------
systemd_units=/usr/lib/systemd/system
[ -d "$systemd_units/sysinit.target.wants" ] || [ -e "$systemd_units/sysinit.target" ] || systemd_units=/lib/systemd/system
mkdir -p "$root/usr/lib/systemd" "$root/etc/systemd/system" "$root/usr/bin" "$root/bin"
cp -a "$systemd_units" "$root/usr/lib/systemd/system"
unit_names="bgtaskd.service bgtaskd.socket bgtaskd-launcher.service bgtaskd-launcher.socket"
for u in $unit_names; do cp "$units/$u" "$root/etc/systemd/system/"; done
for stub in "$root/usr/bin/bgtaskd" "$root/usr/bin/bgtaskd-launcher" "$root/bin/kill"; do
    printf '#!/bin/sh\nexit 0\n' > "$stub"
    chmod 755 "$stub"
done
# Documentation=man:… links are checked by verify against the repo's own pages, built here.
for src in "$units"/../man/*.scd; do
    base=$(basename "$src" .scd); sec=${base##*.}
    mkdir -p "$root/man/man$sec"
    scdoc <"$src" >"$root/man/man$sec/$base" || fail "scdoc $src"
done
# shellcheck disable=SC2086 # a list of unit names
if out=$(MANPATH="$root/man" systemd-analyze verify --root="$root" $unit_names 2>&1) && [ -z "$out" ]; then
    echo "verify: ok ($unit_names)"
else
    fail "systemd-analyze verify --root=$root $unit_names"
    printf '%s\n' "$out" >&2
fi

# --- 2. security ---------------------------------------------------------------
line=$(systemd-analyze security --offline=true "$units/bgtaskd.service" 2>&1 | grep 'Overall exposure level' || true)
exposure=$(printf '%s\n' "$line" | sed -n 's/.*bgtaskd.service: \([0-9][0-9]*\.[0-9]\).*/\1/p')
if [ -z "$exposure" ]; then
    fail "systemd-analyze security --offline=true gave no exposure: $line"
else
    echo "exposure: $exposure (limit $max)"
    if awk -v e="$exposure" -v m="$max" 'BEGIN { exit !(e > m) }'; then
        fail "exposure $exposure is above $max"
    fi
fi
# The launcher's sandbox is the apps' sandbox: network, homes, JITs, setuid. For information, not a gate.
launcher=$(systemd-analyze security --offline=true "$units/bgtaskd-launcher.service" 2>&1 \
    | sed -n 's/.*bgtaskd-launcher.service: \([0-9][0-9]*\.[0-9]\).*/\1/p')
echo "launcher exposure: ${launcher:-?} (information only: apps inherit this sandbox)"

# --- 3. catalog ------------------------------------------------------------------
mkdir -p "$root/usr/lib/systemd/catalog"
cp "$units/bgtaskd.catalog" "$root/usr/lib/systemd/catalog/"
if out=$(journalctl --root="$root" --update-catalog 2>&1) && [ -z "$out" ]; then
    listed=$(journalctl --root="$root" --list-catalog | awk '{ print $1 }' | sort)
    wanted=$(grep -v '^#' "$units/message-ids.txt" | awk 'NF == 2 { print $2 }' | sort)
    if [ "$listed" = "$wanted" ]; then
        echo "catalog: ok ($(printf '%s\n' "$wanted" | wc -l) entries)"
    else
        fail "bgtaskd.catalog and message-ids.txt disagree"
        printf 'catalog: %s\nmessage-ids: %s\n' "$listed" "$wanted" >&2
    fi
else
    fail "journalctl --root=$root --update-catalog"
    printf '%s\n' "$out" >&2
fi

# --- 4. sysusers -----------------------------------------------------------------
mkdir -p "$root/etc"
: > "$root/etc/passwd"; : > "$root/etc/group"; : > "$root/etc/shadow"; : > "$root/etc/gshadow"
if systemd-sysusers --root="$root" "$units/bgtaskd.sysusers" >/dev/null 2>&1 \
    && grep -q '^bgtaskd:' "$root/etc/passwd"; then
    echo "sysusers: ok"
else
    fail "systemd-sysusers --root=$root $units/bgtaskd.sysusers"
fi

exit "$failed"
