#!/usr/bin/env bash
# make test-package: installs the Debian package built by `make deb` with dpkg and checks what landed.
#
# Confinement: everything happens in a private mount namespace in which /usr, /etc and /var are
# overlays (the machine's files below, a tmpfs above). dpkg, its maintainer scripts and triggers
# (systemd-sysusers, deb-systemd-helper, journalctl --update-catalog) run for real, but what they
# write lands in the tmpfs and is gone when the namespace ends: the machine's users, units, dpkg
# database and catalog are never changed. /opt/swift is hidden by an empty tmpfs for the run-time
# checks, so the installed programs prove that they need no Swift toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."
deb=$(ls .build-deb/bgtaskd_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || { echo "check-package: no .build-deb/bgtaskd_*.deb; run make deb" >&2; exit 1; }
deb=$(readlink -f "$deb")
[ "$(id -u)" = 0 ] || { echo "check-package: needs root (dpkg -i in a private mount namespace)" >&2; exit 1; }

work=$(mktemp -d /tmp/bgtaskd-pkg-XXXXXX)
trap 'rm -rf "$work"' EXIT
unshare --mount --propagation private bash -s "$deb" "$work" <<'INNER'
set -euo pipefail
deb=$1 work=$2
pass=0 fail=0
ok()   { echo "ok: $*"; pass=$((pass + 1)); }
bad()  { echo "FAIL: $*"; fail=$((fail + 1)); }
check() { local what=$1; shift; if "$@" >/tmp/check.out 2>&1; then ok "$what"; else bad "$what"; sed 's/^/    /' /tmp/check.out | tail -20; fi; }

scratch=$work/overlay
mkdir -p "$scratch"
mount -t tmpfs tmpfs "$scratch"
for d in usr etc var; do
  mkdir -p "$scratch/$d.up" "$scratch/$d.work"
  mount -t overlay overlay -o "lowerdir=/$d,upperdir=$scratch/$d.up,workdir=$scratch/$d.work" "/$d"
done
# No systemd runs as PID 1 here; make sure the maintainer scripts see none (they only enable units).
[ -d /run/systemd/system ] && mount -t tmpfs tmpfs /run/systemd/system && rmdir /run/systemd/system 2>/dev/null || true

echo "check-package: dpkg -i $(basename "$deb")"
DEBIAN_FRONTEND=noninteractive dpkg -i "$deb"

# Files where the units, man and the shells expect them.
for f in /usr/bin/bgtaskd /usr/bin/bgtaskd-launcher /usr/bin/bgtaskctl /usr/bin/bgtaskd-focus; do
  check "$f is an executable" test -x "$f"
done
for u in bgtaskd.service bgtaskd.socket bgtaskd-launcher.service bgtaskd-launcher.socket; do
  check "unit $u installed" test -f "/lib/systemd/system/$u"
done
check "ExecStart= programs exist" bash -c '
  for u in /lib/systemd/system/bgtaskd.service /lib/systemd/system/bgtaskd-launcher.service; do
    p=$(sed -n "s/^ExecStart=\([^ ]*\).*/\1/p" "$u"); test -x "$p" || { echo "$u: $p missing"; exit 1; }; done'
check "systemd-analyze verify on the installed units" systemd-analyze verify \
  /lib/systemd/system/bgtaskd.service /lib/systemd/system/bgtaskd.socket \
  /lib/systemd/system/bgtaskd-launcher.service /lib/systemd/system/bgtaskd-launcher.socket
# A user manager's verify needs a runtime directory of its own.
mkdir -p -m 700 "$work/xdg"
check "user unit bgtaskd-focus.service installed and valid" env XDG_RUNTIME_DIR="$work/xdg" \
  systemd-analyze verify --user /usr/lib/systemd/user/bgtaskd-focus.service
check "sockets enabled (dh_installsystemd)" test -L /etc/systemd/system/sockets.target.wants/bgtaskd.socket
check "launcher socket enabled" test -L /etc/systemd/system/sockets.target.wants/bgtaskd-launcher.socket
check "user bgtaskd created by systemd-sysusers" getent passwd bgtaskd
check "config is a conffile" bash -c "dpkg-query -W -f='\${Conffiles}' bgtaskd | grep -q /etc/bgtaskd/bgtaskd.conf"
check "apps.d exists" test -d /etc/bgtaskd/apps.d
check "bash completion" test -f /usr/share/bash-completion/completions/bgtaskctl
check "zsh completion" test -f /usr/share/zsh/vendor-completions/_bgtaskctl
check "fish completion" test -f /usr/share/fish/vendor_completions.d/bgtaskctl.fish

# Every man page renders, and every man: link of the catalog resolves to an installed page.
for page in 1/bgtaskctl.1 1/bgtaskd-focus.1 5/bgtaskd.conf.5 5/bgtaskd.app.5 8/bgtaskd.8 8/bgtaskd-launcher.8; do
  f=$(ls /usr/share/man/man${page%%/*}/${page#*/}* 2>/dev/null | head -1)
  check "man -l ${page#*/} renders" bash -c "test -n '$f' && MANWIDTH=80 man -l '$f' 2>&1 >/tmp/man.txt | grep -v '^$' | (! grep .) && grep -q NAME /tmp/man.txt"
done
links=$(grep -ho 'man:[A-Za-z0-9._-]*([0-9])' /usr/lib/systemd/catalog/bgtaskd.catalog | sort -u)
check "catalog has man: links" test -n "$links"
for l in $links; do
  n=${l#man:}; name=${n%(*}; sec=${n#*(}; sec=${sec%)}
  check "catalog link $l resolves" man -w "$sec" "$name"
done

# journalctl -x shows the installed catalog's text for a bgtaskd entry (the trigger ran --update-catalog).
check "catalog compiled into the journal's database" bash -c 'journalctl --list-catalog | grep -qi bgtaskd'
id=$(sed -n 's/^-- \([0-9a-f]\{32\}\)$/\1/p' /usr/lib/systemd/catalog/bgtaskd.catalog | head -1)
tag=bgtaskd-pkgtest-$$
# Reads start a second before the entry and open only the journal files written since (two minutes'
# margin: a file's mtime can lag its last write) and those being written: a shared journal may be
# gigabytes, and journalctl over all of it, cold, took 24-42 s here even with --since (support.py's
# journal_scope, alike).
now=$(date +%s)
since="--since=@$(( now - 1 ))"
for f in /run/log/journal/*/*.journal /var/log/journal/*/*.journal; do
  [ -e "$f" ] || continue
  case "${f##*/}" in *@*) [ "$(stat -c %Y "$f")" -ge $(( now - 121 )) ] || continue ;; esac
  since="$since --file=$f"
done
python3 - "$id" "$tag" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.sendto(f"MESSAGE_ID={sys.argv[1]}\nSYSLOG_IDENTIFIER={sys.argv[2]}\nMESSAGE=package test entry\nBGTASKD_APP=org.example.Pkg\nBGTASKD_REASON=user-request\nBGTASKD_DECISION=launch\n".encode(), "/run/systemd/journal/socket")
PY
# The catalog's subject with this entry's fields substituted, as journalctl -x must print it.
subject=$(awk -v id="-- $id" '$0==id{getline; sub(/^Subject: /,""); print; exit}' /usr/lib/systemd/catalog/bgtaskd.catalog \
  | sed -e 's/@BGTASKD_APP@/org.example.Pkg/g' -e 's/@BGTASKD_REASON@/user-request/g' -e 's/@BGTASKD_DECISION@/launch/g')
check "journalctl -x shows the catalog text: $subject" bash -c "
  for i in \$(seq 50); do journalctl -x -t $tag $since --no-pager 2>/dev/null | grep -qF -- 'Subject: $subject' && exit 0; sleep 0.1; done
  journalctl -x -t $tag $since --no-pager; exit 1"
check "the catalog's Support: file exists" bash -c "
  for f in \$(sed -n 's|^Support: file://||p' /usr/lib/systemd/catalog/bgtaskd.catalog | sort -u); do test -f \$f || { echo \$f; exit 1; }; done"

# The installed programs run with the Swift toolchain hidden.
mount -t tmpfs tmpfs /opt/swift
check "no Swift toolchain visible" bash -c '! command -v swift && test -z "$(ls /opt/swift)"'
# The four programs share the package's one copy of the Swift runtime in /usr/lib/bgtaskd.
check "the Swift runtime is in /usr/lib/bgtaskd" test -f /usr/lib/bgtaskd/libswiftCore.so
for p in bgtaskd bgtaskd-launcher bgtaskctl bgtaskd-focus; do
  check "$p finds every library, its Swift ones only in /usr/lib/bgtaskd" bash -c "
    ldd /usr/bin/$p | tee /dev/stderr | (! grep -q 'not found') &&
    ldd /usr/bin/$p | grep -Eq '=> /usr/(bin/\.\./)?lib/bgtaskd/libswiftCore.so ' &&
    ! ldd /usr/bin/$p | grep -i 'swift\|dispatch\|BlocksRuntime' | grep -Ev '=> /usr/(bin/\.\./)?lib/bgtaskd/'"
done
for p in bgtaskd bgtaskd-launcher bgtaskctl bgtaskd-focus; do
  check "$p --version without the toolchain" /usr/bin/$p --version
done
run=$work/run
mkdir -p "$run/state" "$run/config/apps.d"
cp /etc/bgtaskd/bgtaskd.conf "$run/config/"
printf '[App]\nID=org.example.Pkg\nExec=/bin/sleep infinity\nLifecycleAware=no\n' >"$run/config/apps.d/org.example.Pkg.app"
/usr/bin/bgtaskd --config-dir "$run/config" --runtime-dir "$run" --state-dir "$run/state" --socket "$run/s" \
  >"$run/log" 2>&1 &
daemon=$!
for i in $(seq 100); do [ -S "$run/s" ] && break; sleep 0.05; done
check "installed bgtaskd serves bgtaskctl" bash -c "/usr/bin/bgtaskctl --socket '$run/s' list | grep -q org.example.Pkg"
check "installed bgtaskctl launches an app" /usr/bin/bgtaskctl --socket "$run/s" launch org.example.Pkg
app=$(/usr/bin/bgtaskctl --socket "$run/s" list --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(next(a.get("pid") or "" for a in d["apps"] if a["appId"]=="org.example.Pkg"))')
check "the app runs (pid ${app:-none})" test -n "$app" -a -d "/proc/${app:-none}"
kill -TERM $daemon; wait $daemon || true
check "SIGTERM: the daemon ended the app it started" bash -c "for i in \$(seq 100); do grep -qs '^State:.*[^Z] ' /proc/$app/status || exit 0; sleep 0.1; done; exit 1"
umount /opt/swift

check "dpkg --purge removes the package" dpkg --purge bgtaskd
check "binaries gone after purge" bash -c '! test -e /usr/bin/bgtaskd'

echo "check-package: $pass passed, $fail failed"
[ "$fail" = 0 ]
INNER
