"""Every process of an app goes with it under the signal freezer (FreezerBackend=signal, what `make run`
gets without a delegated cgroup): a descendant that daemonized itself (a new session, its parent gone,
so re-parented) is stopped when the app is suspended and killed when it is terminated, and a child an
app leaves behind when it exits on `will-terminate` is killed — after `Terminate` and after the daemon's
own SIGTERM alike. The daemon is a child subreaper: orphans of app processes become its children, and
it tells whose they are by what it saw of them and by the `BGTASKD_APP_ID` in their environment."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path

import pytest

from freezer_support import AWARE_APP, Manager, Monitor, alive, conf, manifest, proc_stat, wait_for, write_script
from test_signal_freezer import next_decision

APP = "org.test.Daemonizer"
AWARE = "org.test.Parent"

# The subshell `( … &)` exits at once: the grandchild, in a session of its own, is re-parented. Three
# of them, each with a child of its own (which stays its child), and each written down once it is there.
DAEMONIZER = """\
for n in 1 2 3; do
  (setsid sh -c 'sleep 100000 & echo $! > "$0/child-$1.pid"; echo $$ > "$0/grandchild-$1.pid"; wait' "$1" "$n" &)
done
exec sleep 100000
"""

# A lifecycle-aware app that starts a child first, then checks in and exits on will-terminate.
FORKER = """\
import subprocess, sys
child = subprocess.Popen(["sleep", "100000"])
with open(sys.argv[3], "w") as f:
    f.write(str(child.pid))
"""


def read_pid(path: Path) -> int:
    return wait_for(lambda: path.exists() and path.read_text().strip().isdigit() and int(path.read_text()), 5,
                    f"{path.name}")


def ppid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return int(text[text.rindex(")") + 2:].split()[1])


def ancestors(pid: int) -> list[int]:
    out = []
    while (pid := ppid(pid) or 0) > 1:
        out.append(pid)
    return out


def kill_quietly(pid: int | None):
    if pid:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_daemonized_grandchildren_are_stopped_with_their_app_and_killed_with_it(daemon, tmp_path):
    script = write_script(tmp_path, "daemonizer.sh", DAEMONIZER)
    d = daemon(conf=conf(None, "signal", grace="50ms"), apps={APP: manifest(APP, f"/bin/sh {script} {tmp_path}")})
    m = Manager(d.socket)
    monitor = Monitor(d.socket)
    m.call("Stats")  # the Monitor call was read before this one: the stream is registered
    daemonized: list[int] = []
    try:
        main = m.launch(APP)
        for n in (1, 2, 3):
            daemonized += [read_pid(tmp_path / f"grandchild-{n}.pid"), read_pid(tmp_path / f"child-{n}.pid")]
        wait_for(lambda: all(main not in ancestors(p) for p in daemonized), 5, "the grandchildren to be re-parented")
        for cycle in range(3):
            m.call("Background", appId=APP)
            next_decision(monitor, "suspend", app=APP)
            assert m.state(APP) == "suspended"
            running = {p: st for p in daemonized if (st := proc_stat(p)) is None or st[0] not in ("T", "t")}
            assert not running, (
                f"cycle {cycle}: {APP} is reported suspended while its daemonized processes run: {running}")
            m.call("Foreground", appId=APP)
            next_decision(monitor, "resume", app=APP)
            assert not [p for p in daemonized if proc_stat(p)[0] in ("T", "t")], "resumed: none stays stopped"
        # An orphan's exit is no exit of the app: the first daemonized shell is killed (the daemon reaps
        # it); its child, orphaned in turn, is still the app's and is stopped with it.
        grandchild, child = daemonized[0], daemonized[1]
        os.kill(grandchild, signal.SIGKILL)
        wait_for(lambda: proc_stat(grandchild) is None, 5, f"the killed grandchild {grandchild} to be reaped")
        assert ppid(child) == d.pid, f"{child} re-parented to the daemon, not to {ppid(child)}"
        assert m.state(APP) == "active" and m.pid(APP) == main
        m.call("Background", appId=APP)
        next_decision(monitor, "suspend", app=APP)
        assert proc_stat(child)[0] in ("T", "t"), f"the orphan of an orphan {child} runs while {APP} is suspended"
        m.call("Terminate", appId=APP)
        m.wait_state(APP, "not-running")
        for p in daemonized:
            wait_for(lambda: not alive(p), 5, f"the daemonized process {p} to be killed")
        # Reaped by the daemon (its subreaper), and none of their exits was taken for the app's.
        wait_for(lambda: all(proc_stat(p) is None for p in daemonized), 5, "the daemonized processes to be reaped")
        assert m.state(APP) == "not-running"
    finally:
        monitor.close()
        for p in daemonized:
            kill_quietly(p)


def _aware(daemon, tmp_path):
    pytest.importorskip("varlink")
    script = write_script(tmp_path, "parent.py", FORKER + AWARE_APP)
    exec_line = f"{sys.executable} {script} {tmp_path}/app.log 1 {tmp_path}/child.pid"
    d = daemon(conf=conf(None, "signal"), apps={AWARE: manifest(AWARE, exec_line, aware=True)})
    return d, Manager(d.socket)


def test_a_child_left_by_an_app_that_exits_on_will_terminate_is_killed(daemon, tmp_path):
    d, m = _aware(daemon, tmp_path)
    child = None
    try:
        m.launch(AWARE)
        m.wait_state(AWARE, "active", timeout=10)
        child = read_pid(tmp_path / "child.pid")
        m.call("Terminate", appId=AWARE)
        m.wait_state(AWARE, "not-running")
        assert "exiting" in (tmp_path / "app.log").read_text(), "the app exited on will-terminate"
        wait_for(lambda: not alive(child), 5, f"the child {child} the app left behind to be killed")
    finally:
        kill_quietly(child)


def test_a_child_left_by_an_app_that_exits_on_the_daemons_sigterm_is_killed(daemon, tmp_path):
    d, m = _aware(daemon, tmp_path)
    child = None
    try:
        m.launch(AWARE)
        m.wait_state(AWARE, "active", timeout=10)
        child = read_pid(tmp_path / "child.pid")
        assert d.stop() == 0
        assert "exiting" in (tmp_path / "app.log").read_text(), "the app exited on will-terminate"
        wait_for(lambda: not alive(child), 5, f"the child {child} the app left behind to be killed")
    finally:
        kill_quietly(child)
