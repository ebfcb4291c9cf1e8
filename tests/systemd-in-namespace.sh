#!/usr/bin/env bash
# Runs bgtaskd's real units under a real systemd: systemd as PID 1 of a new PID and mount namespace
# (with a tmpfs /run of its own), booting only a minimal target. Then it checks socket activation of
# bgtaskd.socket and bgtaskd-launcher.socket, the daemon in its delegated cgroup, an app started by
# the launcher as nobody, freeze and thaw, terminate, reload and stop, and no repeated libdispatch
# priority warnings in the journal.
#
# NOT part of `make test`: the second systemd shares this machine's file system, kernel and cgroup
# hierarchy. So the namespace gets private /run, /tmp and /var/tmp, and every unit that sysinit.target
# would start is masked (systemd-tmpfiles-setup would empty the shared /tmp, systemd-sysctl and
# systemd-timesyncd would change the kernel's settings and clock, udev would replay uevents); only
# journald, the two sockets and what they activate run. It creates the system user `bgtaskd`
# (systemd-sysusers) and cgroups at the root of the hierarchies, and removes what it created (the
# user only if it did not exist before). Use it on a throw-away machine without systemd as PID 1, as
# root, after `swift build -c release`.
# Usage: tests/systemd-in-namespace.sh [BIN_DIR]   (default .build/release)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${1:-$here/.build/release}" && pwd)
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 2; }
[ -d /run/systemd/system ] && { echo "systemd is PID 1 here: use the units directly" >&2; exit 2; }
for b in bgtaskd bgtaskd-launcher bgtaskctl; do [ -x "$bin/$b" ] || { echo "no $bin/$b" >&2; exit 2; }; done

# Not under /tmp: the namespace has its own.
work=$(mktemp -d -p "$here" .build-sdcheck-XXXXXX)
chmod 755 "$work"
mkdir -p "$work/config/apps.d" "$work/units"
port=$((20000 + RANDOM % 20000))
cat > "$work/config/apps.d/org.example.Web.app" <<EOF
[App]
ID=org.example.Web
Exec=/usr/bin/python3 -m http.server $port --bind 127.0.0.1
User=nobody
WorkingDirectory=/tmp
LifecycleAware=no
EOF
printf '[Lifecycle]\nDidEnterBackgroundTimeoutSec=1s\n' > "$work/config/bgtaskd.conf"
chmod -R a+rX "$work"

# The shipped units, pointed at this build and this configuration with drop-ins (the units themselves
# are copied unchanged apart from the binaries' paths).
for u in bgtaskd.service bgtaskd.socket bgtaskd-launcher.service bgtaskd-launcher.socket; do
    sed -e "s|/usr/bin/bgtaskd-launcher|$bin/bgtaskd-launcher|g; s|/usr/bin/bgtaskd|$bin/bgtaskd|g" \
        "$here/systemd/$u" > "$work/units/$u"
done
mkdir -p "$work/units/bgtaskd.service.d" "$work/units/bgtaskd-launcher.service.d"
printf '[Service]\nExecStart=\nExecStart=%s/bgtaskd --config-dir %s/config --launcher-socket=/run/bgtaskd-launcher/io.bgtaskd.Launcher\n' \
    "$bin" "$work" > "$work/units/bgtaskd.service.d/check.conf"
printf '[Service]\nExecStart=\nExecStart=%s/bgtaskd-launcher --allow-uid=bgtaskd --config-dir %s/config\n' \
    "$bin" "$work" > "$work/units/bgtaskd-launcher.service.d/check.conf"
cat > "$work/units/bgtaskd-check.target" <<'EOF'
[Unit]
Description=bgtaskd check: only what the check needs
Wants=systemd-journald.socket bgtaskd.socket bgtaskd-launcher.socket
EOF

created_user=no
if ! getent passwd bgtaskd >/dev/null; then
    systemd-sysusers "$here/systemd/bgtaskd.sysusers"
    created_user=yes
fi
cgroups_before=$(find /sys/fs/cgroup -mindepth 2 -type d 2>/dev/null | sort)

cat > "$work/boot.sh" <<EOF
#!/bin/bash
set -e
mount --make-rprivate /
for d in /run /tmp /var/tmp; do mount -t tmpfs tmpfs \$d; done
chmod 1777 /tmp /var/tmp
mkdir -p /run/systemd/system
cp -r "$work/units/." /run/systemd/system/
# Mask everything sysinit.target (which every service requires) would start, except journald.
for u in \$(ls /lib/systemd/system/sysinit.target.wants /etc/systemd/system/sysinit.target.wants 2>/dev/null) \
         local-fs.target swap.target systemd-udevd.service systemd-udev-trigger.service systemd-tmpfiles-clean.timer \
         systemd-timesyncd.service systemd-networkd.service; do
    case "\$u" in systemd-journald.service|*:) continue ;; esac
    ln -sf /dev/null "/run/systemd/system/\$u"
done
exec /lib/systemd/systemd --system --unit=bgtaskd-check.target --log-target=console --log-level=notice
EOF
chmod +x "$work/boot.sh"
setsid unshare --pid --fork --mount --mount-proc "$work/boot.sh" > "$work/systemd.log" 2>&1 < /dev/null &
unshare_pid=$!

pid1=""
cleanup() {
    [ -n "$pid1" ] && kill -9 "$pid1" 2>/dev/null || true
    kill -9 "$unshare_pid" 2>/dev/null || true
    sleep 0.5
    # Cgroups the second systemd created, deepest first.
    comm -13 <(printf '%s\n' "$cgroups_before") <(find /sys/fs/cgroup -mindepth 2 -type d 2>/dev/null | sort) \
        | sort -r | while read -r d; do rmdir "$d" 2>/dev/null || true; done
    [ "$created_user" = yes ] && { userdel bgtaskd 2>/dev/null || true; groupdel bgtaskd 2>/dev/null || true; }
    rm -rf "$work"
}
trap cleanup EXIT

for _ in $(seq 1 100); do
    pid1=$(pgrep -f "systemd --system --unit=bgtaskd-check.target" | head -1 || true)
    [ -n "$pid1" ] && break
    sleep 0.1
done
[ -n "$pid1" ] || { echo "systemd did not start:"; cat "$work/systemd.log"; exit 1; }
ns() { nsenter -t "$pid1" -m -p "$@"; }
for _ in $(seq 1 100); do
    state=$(ns systemctl is-system-running 2>/dev/null || true)
    case "$state" in running|degraded) break ;; esac
    sleep 0.1
done
echo "systemd in the namespace: $state"

failed=0
check() { if eval "$2"; then echo "ok:   $1"; else echo "FAIL: $1"; failed=1; fi; }
ctl() { ns "$bin/bgtaskctl" --socket /run/bgtaskd/io.bgtaskd "$@"; }
app_cg=/sys/fs/cgroup/unified/system.slice/bgtaskd.service/apps/org.example.Web
[ -d /sys/fs/cgroup/unified ] || app_cg=/sys/fs/cgroup/system.slice/bgtaskd.service/apps/org.example.Web

check "socket activation: bgtaskctl list starts bgtaskd.service" "ctl list >/dev/null && [ \"\$(ns systemctl is-active bgtaskd.service)\" = active ]"
# (PIDs and /proc as the namespace sees them.)
check "the daemon runs as bgtaskd in the 'daemon' leaf" \
    "ns sh -c 'p=\$(systemctl show bgtaskd.service -p MainPID --value); grep -q /daemon\$ /proc/\$p/cgroup && [ \$(stat -c %U /proc/\$p) = bgtaskd ]'"
ctl launch org.example.Web >/dev/null
sleep 1
check "launch through bgtaskd-launcher: the app is in apps/<id>, as nobody" \
    "pid=\$(head -1 $app_cg/cgroup.procs) && [ \$(stat -c %U /proc/\$pid) = nobody ]"
check "the app answers on loopback" "curl -sf -m 2 http://127.0.0.1:$port/ >/dev/null"
ctl background org.example.Web >/dev/null
sleep 1.6
check "suspended after the grace window: cgroup.events frozen 1, no answer" \
    "grep -q 'frozen 1' $app_cg/cgroup.events && ! curl -sf -m 1 http://127.0.0.1:$port/ >/dev/null"
ctl foreground org.example.Web >/dev/null
check "thawed by foreground: answers again" "curl -sf -m 2 http://127.0.0.1:$port/ >/dev/null"
check "systemctl reload (RELOADING=1 … READY=1)" "ns systemctl reload bgtaskd.service && ns systemctl show bgtaskd.service -p StatusText --value | grep -q reloaded"
ctl terminate org.example.Web >/dev/null
sleep 1
check "terminate: the app and its cgroup are gone" "[ ! -d $app_cg ] && ! curl -sf -m 1 http://127.0.0.1:$port/ >/dev/null"
ctl launch org.example.Web >/dev/null
sleep 1
daemon_pid=$(ns systemctl show bgtaskd.service -p MainPID --value)
ns systemctl stop bgtaskd.service
check "systemctl stop: clean result, no app left" \
    "[ \"\$(ns systemctl show bgtaskd.service -p Result --value)\" = success ] && ! pgrep -f 'http.server $port' >/dev/null"
warnings=$(ns journalctl --no-pager "_PID=$daemon_pid" -o cat | grep -c "thread priority" || true)
check "at most one libdispatch priority warning ($warnings)" "[ $warnings -le 1 ]"
echo "exposure under systemd: $(ns systemd-analyze security bgtaskd.service 2>/dev/null | tail -1)"
[ "$failed" = 0 ] && echo "all checks passed" || { echo "daemon journal:"; ns journalctl --no-pager -u bgtaskd.service -u bgtaskd-launcher.service -o cat | tail -30; }
exit "$failed"
