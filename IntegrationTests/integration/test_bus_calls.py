"""SPEC §14, bus calls to a frozen app: a real session bus (dbus-daemon --session on a socket in a
temporary directory) of an unprivileged session user (nobody), a real app of that user managed by bgtaskd
that owns a name on it (apps/bus_app.py, python3-dbus), frozen by the cgroup freezer; the real
bgtaskd-focus, run as that user (--no-wayland: the session-bus watch alone; Manager control rights
through ControlGroup=nogroup), sees a method call to it from another process of the user (busctl) and
calls WakeForBusCall: the call is answered within 1 s, the daemon journals `resume` with reason
`bus-call`, and the app is suspended again once BusCallBudgetSec has passed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from freezer_support import Manager, ScratchCgroup, conf, manifest, read_events, wait_for, wait_journal  # noqa: E402

APP = "org.example.BusApp"
HERE = Path(__file__).resolve().parent
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's, with python3-dbus and python3-gi (scripts/install-deps.sh)
BUDGET = 1.5
USER = 65534  # nobody, group nogroup
AS_USER = ["setpriv", f"--reuid={USER}", f"--regid={USER}", "--clear-groups", "--"]


@pytest.fixture
def session_bus():
    """dbus-daemon --session on a socket of its own; stopped and removed at the end."""
    if not shutil.which("dbus-daemon"):
        pytest.fail("dbus-daemon is missing: scripts/install-deps.sh installs it")
    work = Path(tempfile.mkdtemp(prefix="bgtaskd-sessionbus-", dir="/tmp"))
    os.chown(work, USER, USER)
    address = f"unix:path={work}/bus"
    read, write = os.pipe()
    bus = subprocess.Popen([*AS_USER, "dbus-daemon", "--session", f"--address={address}", "--nofork", "--nopidfile",
                            f"--print-address={write}"], pass_fds=(write,), stdout=subprocess.DEVNULL,
                           stderr=subprocess.STDOUT)
    os.close(write)
    with os.fdopen(read) as r:
        printed = r.readline().strip()
    try:
        assert printed.startswith(address), f"dbus-daemon said {printed!r}"
        yield address
    finally:
        bus.terminate()
        bus.wait(10)
        shutil.rmtree(work, ignore_errors=True)


def busctl(address: str, *args: str, timeout: float = 15) -> subprocess.CompletedProcess:
    return subprocess.run([*AS_USER, "busctl", f"--address={address}", *args], capture_output=True, text=True, timeout=timeout)


def test_a_method_call_to_a_suspended_app_wakes_it_for_the_bus_call_budget(daemon, bin_dir, session_bus):
    with ScratchCgroup("-buscall") as cg:
        app_text = manifest(APP, f"{SYSTEM_PYTHON} {HERE / 'apps' / 'bus_app.py'}",
                            env={"DBUS_SESSION_BUS_ADDRESS": session_bus}) + "User=nobody\n"
        d = daemon(conf=conf(cg.path) + f"BusCallBudgetSec={int(BUDGET * 1000)}ms\n[Daemon]\nControlGroup=nogroup\n",
                   apps={APP: app_text})
        for p in (d.root, d.runtime_dir):  # the session user reaches the daemon's socket
            os.chmod(p, 0o755)
        m = Manager(d.socket)
        m.launch(APP)
        wait_for(lambda: APP in busctl(session_bus, "list", "--no-pager").stdout, 15, f"{APP} to own its name")
        ping = ["call", APP, "/org/example/BusApp", "org.example.BusApp", "Ping"]
        assert busctl(session_bus, *ping).stdout.strip() == 's "pong"'

        # Frozen in the background: a call to it would wait for its timeout (2 s here) unanswered.
        m.call("Background", appId=APP)
        m.wait_state(APP, "suspended", timeout=10)
        assert read_events(cg.app(APP)).get("frozen") == 1
        unanswered = busctl(session_bus, "--timeout=2", *ping)
        assert unanswered.returncode != 0 and "timed out" in unanswered.stderr.lower(), unanswered
        m.wait_state(APP, "suspended")

        # bgtaskd-focus watches the session bus (no compositor here).
        log_path = Path(d.root) / "focus.log"
        with open(log_path, "wb") as log:
            focus = subprocess.Popen([*AS_USER, str(bin_dir / "bgtaskd-focus"), "--no-wayland", "--socket", d.socket,
                                      "--session-bus", session_bus], stdout=log, stderr=log)
        try:
            wait_for(lambda: "watching the session bus" in log_path.read_text(), 10, "bgtaskd-focus to watch the bus")
            since = time.time()
            t0 = time.monotonic()
            answered = busctl(session_bus, "--timeout=10", *ping)
            elapsed = time.monotonic() - t0
            assert answered.stdout.strip() == 's "pong"', answered
            print(f"the call was answered after {elapsed * 1000:.1f} ms")
            assert elapsed < 1.0, f"answered after {elapsed:.3f} s"
            resumed = wait_journal(since, f"BGTASKD_APP={APP}", "BGTASKD_DECISION=resume", timeout=10)
            assert resumed[0]["BGTASKD_REASON"] == "bus-call", resumed
            assert "Ping" in resumed[0]["MESSAGE"], resumed
            # Suspended again when the budget ends (not before).
            again = wait_journal(since, f"BGTASKD_APP={APP}", "BGTASKD_DECISION=suspend", timeout=15)
            ran = (int(again[0]["__MONOTONIC_TIMESTAMP"]) - int(resumed[0]["__MONOTONIC_TIMESTAMP"])) / 1e6
            assert ran >= BUDGET - 0.01, f"suspended again after {ran:.3f} s, before BusCallBudgetSec"
            assert again[0]["BGTASKD_REASON"] == "no-assertions"
            assert read_events(cg.app(APP)).get("frozen") == 1 and m.state(APP) == "suspended"
            assert f"{APP} is suspended" in log_path.read_text()
        finally:
            focus.kill()
            focus.wait()
            print(log_path.read_text())
