#!/usr/bin/env bash
# Runs bgtaskd's real units under a real systemd: systemd as PID 1 of a new PID and mount namespace
# (with a tmpfs /run of its own), booting only a minimal target. Then it checks socket activation of
# bgtaskd.socket and bgtaskd-launcher.socket, the daemon in its delegated cgroup, an app started by
# the launcher as nobody, freeze and thaw, terminate, reload and stop, and no repeated libdispatch
# priority warnings in the journal.
#
# Part of `make test` (with the debug build it has just made). The second systemd shares this machine's
# kernel and cgroup hierarchy, so it is confined: the namespace gets a private /run and /tmp, /var/tmp
# and /var as an overlay whose writes go to that private /run (journald, StateDirectory=, systemd's
# own files), and every unit that sysinit.target would start is masked (systemd-tmpfiles-setup would
# empty /tmp, systemd-sysctl and systemd-timesyncd would change the kernel's settings and clock, udev
# would replay uevents); only journald, the two sockets and what they activate run. /proc/sys is
# read-only inside and the hostname private (UTS namespace): systemd as PID 1 sets both at boot. The
# binaries and the check's files are bind-mounted at /run/bgtaskd-check inside the namespace, so the clone may be
# anywhere (under /tmp too, which the namespace and the units' PrivateTmp= hide). It creates the system
# user `bgtaskd` (systemd-sysusers) if it does not exist and cgroups below the hierarchies' roots, and
# on exit, failed or not, kills the namespace's processes and removes those cgroups and that user.
# Needs root on a machine without systemd as PID 1.
# Usage: IntegrationTests/systemd-in-namespace.sh [BIN_DIR]   (default .build/release)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${1:-$here/.build/release}" && pwd)
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 2; }
[ -d /run/systemd/system ] && { echo "systemd is PID 1 here: use the units directly" >&2; exit 2; }
for b in bgtaskd bgtaskd-launcher bgtaskctl; do [ -x "$bin/$b" ] || { echo "no $bin/$b" >&2; exit 2; }; done

# Inside the namespace both are bind-mounted here (outside /tmp, /var/tmp and homes, which the namespace
# or the units' PrivateTmp=/ProtectHome= hide).
inside=/run/bgtaskd-check
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
    sed -e "s|/usr/bin/bgtaskd-launcher|$inside/bin/bgtaskd-launcher|g; s|/usr/bin/bgtaskd|$inside/bin/bgtaskd|g" \
        "$here/systemd/$u" > "$work/units/$u"
done
mkdir -p "$work/units/bgtaskd.service.d" "$work/units/bgtaskd-launcher.service.d"
printf '[Service]\nExecStart=\nExecStart=%s/bin/bgtaskd --config-dir %s/work/config --launcher-socket=/run/bgtaskd-launcher/io.bgtaskd.Launcher\n' \
    "$inside" "$inside" > "$work/units/bgtaskd.service.d/check.conf"
printf '[Service]\nExecStart=\nExecStart=%s/bin/bgtaskd-launcher --allow-uid=bgtaskd --config-dir %s/work/config\n' \
    "$inside" "$inside" > "$work/units/bgtaskd-launcher.service.d/check.conf"
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
# The cgroup hierarchies (v1 and v2), and the cgroups the second systemd may create in them: those named
# as units (system.slice, init.scope…) below a hierarchy's root. Others' cgroups are never touched.
hierarchies=$(awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/self/mounts)
unit_cgroups() {
    for h in $hierarchies; do
        find "$h" -mindepth 1 -maxdepth 1 -type d \( -name '*.slice' -o -name '*.scope' -o -name '*.service' \
            -o -name '*.socket' -o -name '*.mount' -o -name '*.swap' \) -print0 2>/dev/null | xargs -0 -r -I{} find {} -type d
    done | sort
}
cgroups_before=$(unit_cgroups)

cat > "$work/boot.sh" <<EOF
#!/bin/bash
set -e
mount --make-rprivate /
mount -t tmpfs tmpfs /run
# The binaries and the check's files, before /tmp (where the clone may be) is covered.
mkdir -p $inside/bin $inside/work $inside/var-upper $inside/var-work
mount --bind "$bin" $inside/bin
mount --bind "$work" $inside/work
# /var: the machine's, read through an overlay whose writes stay in this /run (a tmpfs if the kernel
# cannot overlay it).
mount -t overlay overlay -o lowerdir=/var,upperdir=$inside/var-upper,workdir=$inside/var-work /var \
    || mount -t tmpfs tmpfs /var
for d in /tmp /var/tmp; do mount -t tmpfs tmpfs \$d; done
chmod 1777 /tmp /var/tmp
# The kernel's settings stay the machine's: systemd as PID 1 writes some at boot (net.unix.max_dgram_qlen
# 512, fs.file-max, fs.nr_open), and most are not namespaced. Read-only here, as a container has them.
mount --bind /proc/sys /proc/sys
mount -o remount,bind,ro /proc/sys
mkdir -p /run/systemd/system
cp -r $inside/work/units/. /run/systemd/system/
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
setsid unshare --pid --fork --mount --mount-proc --uts "$work/boot.sh" > "$work/systemd.log" 2>&1 < /dev/null &
unshare_pid=$!

pid1=""
cleanup() {
    # PID 1 of the namespace gone, the kernel kills every process left in it.
    [ -n "$pid1" ] && kill -9 "$pid1" 2>/dev/null || true
    kill -9 "$unshare_pid" 2>/dev/null || true
    wait "$unshare_pid" 2>/dev/null || true
    # Cgroups the second systemd created, deepest first; a cgroup empties as its processes are reaped.
    for _ in $(seq 1 50); do
        left=$(comm -13 <(printf '%s\n' "$cgroups_before") <(unit_cgroups) | sort -r)
        [ -z "$left" ] && break
        printf '%s\n' "$left" | while read -r d; do rmdir "$d" 2>/dev/null || true; done
        sleep 0.1
    done
    [ -n "$left" ] && echo "cgroups not removed: $left" >&2
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
checks=0
check() { checks=$((checks + 1)); if eval "$2"; then echo "ok:   $1"; else echo "FAIL: $1"; failed=1; fi; }
# Waits (up to 5 s, looking every 0.05 s) for a condition that gives no notice; returns its status.
until_true() { for _ in $(seq 1 100); do eval "$1" && return 0; sleep 0.05; done; eval "$1"; }
ctl() { ns $inside/bin/bgtaskctl --socket /run/bgtaskd/io.bgtaskd "$@"; }
app_cg=/sys/fs/cgroup/unified/system.slice/bgtaskd.service/apps/org.example.Web
[ -d /sys/fs/cgroup/unified ] || app_cg=/sys/fs/cgroup/system.slice/bgtaskd.service/apps/org.example.Web

check "socket activation: bgtaskctl list starts bgtaskd.service" "ctl list >/dev/null && [ \"\$(ns systemctl is-active bgtaskd.service)\" = active ]"
# (PIDs and /proc as the namespace sees them.)
check "the daemon runs as bgtaskd in the 'daemon' leaf" \
    "ns sh -c 'p=\$(systemctl show bgtaskd.service -p MainPID --value); grep -q /daemon\$ /proc/\$p/cgroup && [ \$(stat -c %U /proc/\$p) = bgtaskd ]'"
ctl launch org.example.Web >/dev/null
check "launch through bgtaskd-launcher: the app is in apps/<id>, as nobody" \
    "until_true 'grep -q . $app_cg/cgroup.procs 2>/dev/null' && pid=\$(head -1 $app_cg/cgroup.procs) && [ \$(stat -c %U /proc/\$pid) = nobody ]"
check "the app answers on loopback" "until_true 'curl -sf -m 2 http://127.0.0.1:$port/ >/dev/null'"
ctl background org.example.Web >/dev/null
check "suspended after the grace window: state suspended, cgroup.events frozen 1, no answer" \
    "until_true 'ctl status org.example.Web -n 0 | grep -q suspended' && grep -q 'frozen 1' $app_cg/cgroup.events && ! curl -sf -m 1 http://127.0.0.1:$port/ >/dev/null"
ctl foreground org.example.Web >/dev/null
check "thawed by foreground: answers again" "curl -sf -m 2 http://127.0.0.1:$port/ >/dev/null"
check "systemctl reload (RELOADING=1 … READY=1)" "ns systemctl reload bgtaskd.service && ns systemctl show bgtaskd.service -p StatusText --value | grep -q reloaded"
ctl terminate org.example.Web >/dev/null
check "terminate: the app and its cgroup are gone" "until_true '[ ! -d $app_cg ]' && ! curl -sf -m 1 http://127.0.0.1:$port/ >/dev/null"
ctl launch org.example.Web >/dev/null
until_true "curl -sf -m 2 http://127.0.0.1:$port/ >/dev/null" || true
daemon_pid=$(ns systemctl show bgtaskd.service -p MainPID --value)
ns systemctl stop bgtaskd.service
check "systemctl stop: clean result, no app left" \
    "[ \"\$(ns systemctl show bgtaskd.service -p Result --value)\" = success ] && ! pgrep -f 'http.server $port' >/dev/null"
warnings=$(ns journalctl --no-pager "_PID=$daemon_pid" -o cat | grep -c "thread priority" || true)
check "at most one libdispatch priority warning ($warnings)" "[ $warnings -le 1 ]"
echo "exposure under systemd: $(ns systemd-analyze security bgtaskd.service 2>/dev/null | tail -1)"
[ "$failed" = 0 ] && echo "all $checks checks passed" || { echo "daemon journal:"; ns journalctl --no-pager -u bgtaskd.service -u bgtaskd-launcher.service -o cat | tail -30; }
exit "$failed"
