#!/usr/bin/env bash
# Installs what the build and the tests need on Debian 12 and is quiet when all is there.
# Debian packages: libsystemd-dev (sd_journal_sendv, sd_notify), pkg-config (the CSystemd module),
# systemd (journald, systemd-socket-activate, systemd-analyze, journalctl), util-linux (setpriv, prlimit;
# unshare, nsenter and mount for the FUSE and read-only-cgroup tests of test_shared_device.py, whose FUSE
# server speaks /dev/fuse itself: no libfuse),
# procps, iproute2 (ss: the daemon's sockets in IntegrationTests/integration/test_descriptors.py). Packaging and
# documentation (make deb, test-package, IntegrationTests/check-docs.sh): scdoc (man pages), debhelper, lintian,
# dpkg-dev, man-db, bash-completion, zsh and fish (completion syntax checks). libwayland-dev and
# libwayland-bin (bgtaskd-focus: libwayland-client, wayland-scanner), sway and foot (the headless
# compositor and Wayland clients of IntegrationTests/integration/test_focus.py), phoc (Phosh's compositor, the
# phone's own, headless in test_focus_scenes.py), wtype (user activity, same test), wayfire (a compositor that
# honours minimize requests: test_focus_minimize.py) and gcc (that test builds its task-bar tool with cc),
# dbus-daemon (a private system bus for a real systemd-logind in the session-lock test, logind_support.py;
# a session bus in test_bus_calls.py), python3-dbus and python3-gi (the session-bus app of
# test_bus_calls.py and the stand-in for systemd's manager of test_system_sleep.py, run by /usr/bin/python3),
# systemd-journal-remote (systemd-journal-remote and systemd-journal-upload: the fleet test of test_energy.py),
# mako-notifier (a real notification server, on the headless sway, for test_continued_notifications.py),
# strace (the order of the daemon's system calls on the resume path: test_thaw_order.py).
# Python: varlink (the independent client, the certification suite), pytest.
set -euo pipefail

SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
fi

need=()
for pkg in libsystemd-dev pkg-config systemd util-linux procps iproute2 python3-pip \
    scdoc debhelper lintian dpkg-dev man-db bash-completion zsh fish \
    libwayland-dev libwayland-bin sway foot phoc wayfire gcc wtype dbus-daemon python3-dbus python3-gi systemd-journal-remote \
    mako-notifier strace; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
# python3-pip is only needed when there is no pip at all.
if command -v pip3 >/dev/null 2>&1 || python3 -m pip --version >/dev/null 2>&1; then
  need=("${need[@]/python3-pip}")
fi
need=($(printf '%s\n' "${need[@]}" | grep -v '^$' || true))
if [ "${#need[@]}" -gt 0 ]; then
  echo "install-deps: apt-get install ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

# Asked from / in isolated mode (-I): run in the repo, `import varlink` finds its varlink/ directory of IDL
# files as a namespace package and succeeds without the client.
pymissing=()
(cd / && python3 -I -c 'import varlink.scanner, varlink.client') 2>/dev/null || pymissing+=(varlink)
(cd / && python3 -I -c 'import pytest') 2>/dev/null || pymissing+=(pytest)
if [ "${#pymissing[@]}" -gt 0 ]; then
  echo "install-deps: pip install ${pymissing[*]}"
  python3 -m pip install -q "${pymissing[@]}" 2>/dev/null \
    || python3 -m pip install -q --break-system-packages "${pymissing[@]}"
fi
