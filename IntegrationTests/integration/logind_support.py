"""A real systemd-logind for the session-lock tests (SPEC §13), confined: it runs with a dbus-daemon of its
own in a private mount namespace (`unshare -m`, a tmpfs /run), so neither the machine's /run/systemd nor
its system bus (if any) is touched. The bus listens on an abstract Unix socket, which the mount namespace
does not hide: bgtaskd-focus outside reaches it through $DBUS_SYSTEM_BUS_ADDRESS, as any sd-bus client.

logind loads the session it is given from /run/systemd/sessions (as after a restart of logind: no
systemd here to create a session scope), elects it as its user's display session and serves
org.freedesktop.login1 for real: SetLockedHint / SetIdleHint (what a screen locker and swayidle call),
the properties and their PropertiesChanged signals, and its own access checks."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

LOGIND = "/lib/systemd/systemd-logind"
SYSTEM_CONF = "/usr/share/dbus-1/system.conf"


class Logind:
    """logind with one graphical session `session_id` of `uid`."""

    def __init__(self, uid: int, user: str, session_id: str = "t1", sleep_states: str | None = None):
        """`sleep_states`: what logind reads in /sys/power/state (a file bound over it in logind's own
        mount namespace only), e.g. "freeze mem" so that it accepts Suspend on a machine that cannot sleep."""
        self.uid, self.user, self.session_id = uid, user, session_id
        self.sleep_states = sleep_states
        self.work = Path(tempfile.mkdtemp(prefix="bgtaskd-logind-", dir="/tmp"))
        self.address = f"unix:abstract=bgtaskd-test-logind-{uuid.uuid4().hex}"
        self.proc: subprocess.Popen | None = None

    @property
    def path(self) -> str:
        return f"/org/freedesktop/login1/session/{self.session_id}"

    def start(self):
        for tool in (LOGIND, "dbus-daemon", "busctl", "unshare"):
            if not shutil.which(tool) and not os.access(tool, os.X_OK):
                raise RuntimeError(f"{tool} is missing: scripts/install-deps.sh installs systemd and dbus")
        # The distribution's system bus policy (with logind's own rules from system.d), on our socket;
        # no activation (nothing else is started), no user switch, no pid file.
        conf = Path(SYSTEM_CONF).read_text()
        conf = conf.replace("<listen>unix:path=/run/dbus/system_bus_socket</listen>", f"<listen>{self.address}</listen>")
        conf = conf.replace("<includedir>system.d</includedir>", "<includedir>/usr/share/dbus-1/system.d</includedir>")
        lines = [l for l in conf.splitlines()
                 if not any(k in l for k in ("<user>", "<servicehelper>", "<pidfile>", "<standard_system_servicedirs"))]
        (self.work / "bus.conf").write_text("\n".join(lines) + "\n")
        (self.work / "boot.sh").write_text(f"""#!/bin/bash
set -e
mount --make-rprivate /
mount -t tmpfs -o mode=755 tmpfs /run
{self._sleep_states_mount()}
mkdir -p /run/systemd/users /run/systemd/sessions /run/systemd/logind.conf.d
# Nothing of the machine's: no VTs, no keys, no idle action, no process killing.
cat > /run/systemd/logind.conf.d/test.conf <<'EOF'
[Login]
NAutoVTs=0
ReserveVT=0
KillUserProcesses=no
HandlePowerKey=ignore
HandleSuspendKey=ignore
HandleHibernateKey=ignore
HandleRebootKey=ignore
HandleLidSwitch=ignore
HandleLidSwitchExternalPower=ignore
HandleLidSwitchDocked=ignore
IdleAction=ignore
EOF
cat > /run/systemd/users/{self.uid} <<'EOF'
NAME={self.user}
STATE=active
STOPPING=no
SESSIONS={self.session_id}
EOF
cat > /run/systemd/sessions/{self.session_id} <<'EOF'
UID={self.uid}
USER={self.user}
ACTIVE=1
IS_DISPLAY=1
STATE=active
REMOTE=0
TYPE=wayland
ORIGINAL_TYPE=wayland
CLASS=user
SCOPE=session-{self.session_id}.scope
EOF
dbus-daemon --config-file={self.work}/bus.conf --nofork --nopidfile --print-address=3 3>{self.work}/bus.address &
bus=$!
trap 'kill $bus 2>/dev/null' EXIT
while [ ! -s {self.work}/bus.address ]; do kill -0 $bus; sleep 0.01; done
DBUS_SYSTEM_BUS_ADDRESS={self.address} {LOGIND} &
logind=$!
trap 'kill $logind $bus 2>/dev/null; wait' EXIT TERM
wait $logind
""")
        with open(self.work / "logind.log", "wb") as log:
            self.proc = subprocess.Popen(["unshare", "-m", "bash", str(self.work / "boot.sh")],
                                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 15
        while self.busctl("call", "org.freedesktop.login1", "/org/freedesktop/login1",
                          "org.freedesktop.login1.Manager", "GetSession", "s", self.session_id, check=False).returncode:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                log = self.log()
                self.stop()
                raise RuntimeError(f"systemd-logind did not come up:\n{log[-3000:]}")
            time.sleep(0.05)

    def _sleep_states_mount(self) -> str:
        if self.sleep_states is None:
            return ""
        (self.work / "power-state").write_text(self.sleep_states + "\n")
        return f"mount --bind {self.work}/power-state /sys/power/state"

    def busctl(self, *args: str, user: list[str] | None = None, check: bool = True) -> subprocess.CompletedProcess:
        r = subprocess.run([*(user or []), "busctl", f"--address={self.address}", *args],
                           capture_output=True, text=True, timeout=10)
        if check:
            assert r.returncode == 0, r.stdout + r.stderr
        return r

    def session_call(self, method: str, value: bool, user: list[str] | None = None):
        """What a screen locker (SetLockedHint) or an idle daemon (SetIdleHint) calls, as `user`."""
        self.busctl("call", "org.freedesktop.login1", self.path, "org.freedesktop.login1.Session", method, "b",
                    "true" if value else "false", user=user)

    def hint(self, name: str) -> bool:
        out = self.busctl("get-property", "org.freedesktop.login1", self.path, "org.freedesktop.login1.Session", name).stdout
        return out.strip() == "b true"

    def log(self) -> str:
        p = self.work / "logind.log"
        return p.read_text(errors="replace") if p.exists() else ""

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        shutil.rmtree(self.work, ignore_errors=True)
