"""The resume path's order on a real freezer: a suspended lifecycle-aware app brought to the foreground has
its `did-become-active` in its socket before it is thawed (the `cgroup.freeze` "0" write, or SIGCONT on the
signal backend), so the app wakes with the event waiting (docs/performance.md, row 5b).

Seen from outside the daemon: strace attached to every thread of the running daemon records the system
calls that write the event and the one that thaws, in the order the daemon made them. A daemon that thawed
first (and wrote the event on a later turn) fails here: the thaw comes first in the trace.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from freezer_support import AWARE_APP, Manager, ScratchCgroup, conf, manifest, read_events, wait_for, write_script

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root to create cgroups and to trace the daemon"),
    pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (scripts/install-deps.sh installs it)"),
]

APP = "org.test.ThawOrder"
TRACED = "write,writev,sendmsg,sendto,pwrite64,kill,tgkill,pidfd_send_signal"


class Trace:
    """strace attached to all threads of `pid` (-f with -p takes every thread), writing to `path`."""

    def __init__(self, pid: int, path, ping):
        self.path = path
        self.proc = subprocess.Popen(
            ["strace", "-f", "-qq", "-y", "-s", "4096", "-e", f"trace={TRACED}", "-o", str(path), "-p", str(pid)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # Attached once the answer to a call shows up in the trace (strace seizes every thread before it
        # traces any, and says so only on its stderr, which -qq silences).
        def answered():
            ping()
            return self.text() != ""
        wait_for(answered, 10, "strace to attach to the daemon")

    def text(self) -> str:
        try:
            return self.path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGINT)  # strace detaches and leaves the daemon running
        self.proc.wait(10)
        return self.text()


@pytest.mark.parametrize("backend", ["cgroup", "signal"])
def test_did_become_active_is_in_the_apps_socket_before_the_thaw(daemon, tmp_path, backend):
    pytest.importorskip("varlink")
    script = write_script(tmp_path, "aware.py", AWARE_APP)
    log = tmp_path / "app.log"

    def kinds():
        return [line.strip() for line in log.read_text().splitlines()] if log.exists() else []

    with ScratchCgroup() as cg:
        d = daemon(conf=conf(cg.path if backend == "cgroup" else None, backend, grace="100ms"),
                   apps={APP: manifest(APP, f"{sys.executable} {script} {log} 1", aware=True)})
        m = Manager(d.socket)
        assert m.call("GetSettings")["settings"]["freezerBackend"] == backend
        pid = m.launch(APP)
        wait_for(lambda: "did-become-active" in kinds(), 5, "did-become-active after the launch")
        m.call("Background", appId=APP)
        m.wait_state(APP, "suspended")
        if backend == "cgroup":
            wait_for(lambda: read_events(cg.app(APP)).get("frozen") == 1, 2, "its cgroup to be frozen")
        trace = Trace(d.pid, tmp_path / "strace.txt", lambda: m.call("Stats"))
        try:
            m.call("Foreground", appId=APP)
            wait_for(lambda: kinds()[-1:] == ["did-become-active"], 5, "did-become-active after Foreground")
        finally:
            text = trace.stop()
        m.call("Terminate", appId=APP)

    lines = text.splitlines()
    event = next((i for i, l in enumerate(lines) if "did-become-active" in l), None)
    if backend == "cgroup":
        thaw_pattern = re.compile(r"cgroup\.freeze>, \"0\"")
    else:
        thaw_pattern = re.compile(rf"kill\((-?{pid}|\d+), SIGCONT\)|pidfd_send_signal\(.*SIGCONT")
    thaw = next((i for i, l in enumerate(lines) if thaw_pattern.search(l)), None)
    shown = "\n".join(l[:200] for l in lines if "did-become-active" in l or thaw_pattern.search(l))
    assert event is not None, f"no write of did-become-active in the daemon's trace:\n{text[-3000:]}"
    assert thaw is not None, f"no thaw ({backend}) in the daemon's trace:\n{text[-3000:]}"
    assert event < thaw, f"the thaw came before the event was written:\n{shown}"
