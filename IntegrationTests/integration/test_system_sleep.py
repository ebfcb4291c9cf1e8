"""SPEC §14, system sleep: a real systemd-logind (logind_support.py: a private mount namespace and a
system bus of its own) and the real daemon on that bus. Live background work holds logind's `idle`
inhibitor (`systemd-inhibit --list` shows it, with its why); ending it releases it. A real Suspend
request to that logind (it reads "freeze mem" from a /sys/power/state bound in its own namespace; a
stand-in for systemd's manager refuses the StartUnit, so nothing sleeps) makes logind send
PrepareForSleep(true) and, after the refused StartUnit, PrepareForSleep(false): the daemon records one
`policy` decision `system-sleep`, re-takes its delay inhibitor and freezes again an app that was thawed
behind its back. Without a system bus the watch is off, said once in the journal and in Stats."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from freezer_support import Manager, ScratchCgroup, conf, manifest, read_events, wait_for, wait_journal  # noqa: E402
from support import RawClient  # noqa: E402

APP = "org.example.Sleeper"
HERE = Path(__file__).resolve().parent
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's, with python3-dbus (scripts/install-deps.sh)


@pytest.fixture
def logind():
    from logind_support import Logind
    ld = Logind(65534, "nobody", sleep_states="freeze mem")
    try:
        ld.start()
    except RuntimeError as e:
        pytest.skip(f"systemd-logind cannot run here: {e}")
    manager = None
    try:
        manager = subprocess.Popen([SYSTEM_PYTHON, str(HERE / "apps" / "fake_systemd_manager.py"), ld.address],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert manager.stdout.readline().strip() == "ready", "the stand-in for systemd's manager did not start"
        ld.systemd_manager = manager
        yield ld
    finally:
        if manager:
            manager.kill()
            manager.wait()
        print(ld.log()[-3000:])
        ld.stop()


def inhibitors(ld) -> list[str]:
    """`systemd-inhibit --list` on the private bus: one line per inhibitor."""
    r = subprocess.run(["systemd-inhibit", "--list", "--no-pager", "--no-legend"], capture_output=True, text=True,
                       timeout=10, env=dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=ld.address))
    assert r.returncode == 0, r.stderr
    return [line for line in r.stdout.splitlines() if line.strip()]


def idle_lines(ld) -> list[str]:
    return [line for line in inhibitors(ld) if " idle " in f" {line} " and "bgtaskd" in line]


def stats(m: Manager) -> dict:
    return m.call("Stats")["stats"]


def test_live_work_holds_logind_idle_inhibitor_and_sleep_is_seen(daemon, logind):
    with ScratchCgroup("-sleep") as cg:
        d = daemon(conf=conf(cg.path), apps={APP: manifest(APP, "/bin/sleep 1000")},
                   env={"DBUS_SYSTEM_BUS_ADDRESS": logind.address})
        m = Manager(d.socket)
        wait_for(lambda: stats(m)["systemSleep"] == "logind", 10, "the daemon to reach logind")
        # The sleep delay inhibitor is there from the start; no idle inhibitor without live work.
        wait_for(lambda: any("bgtaskd" in l and " sleep " in f" {l} " and "delay" in l for l in inhibitors(logind)),
                 10, "the sleep delay inhibitor")
        assert idle_lines(logind) == []
        assert stats(m)["idleInhibited"] is False

        m.launch(APP)
        # Every Inhibit call on the private bus, as logind receives it (root may monitor the system bus).
        calls_log = Path(d.root) / "inhibit-calls.log"
        with open(calls_log, "wb") as out:
            monitor = subprocess.Popen(["stdbuf", "-oL", "dbus-monitor", "--address", logind.address,
                                        "type='method_call',interface='org.freedesktop.login1.Manager',member='Inhibit'"],
                                       stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: "NameAcquired" in calls_log.read_text() or "NameLost" in calls_log.read_text(), 10,
                     "dbus-monitor to start")
            with RawClient(d.socket) as c:
                task = c.call("io.bgtaskd.App.BeginBackgroundTask", {"appId": APP, "name": "upload"})["parameters"]["taskId"]
                assert task > 0
                held = wait_for(lambda: idle_lines(logind), 10, "logind to list bgtaskd's idle inhibitor")
                assert "block" in held[0] and f"1 background task of {APP}" in held[0], held
                assert stats(m)["idleInhibited"] is True
                c.call("io.bgtaskd.App.EndBackgroundTask", {"appId": APP, "taskId": task})
                # An app that begins and ends tasks in a loop: the inhibitor stays, no new Inhibit call.
                for _ in range(200):
                    t = c.call("io.bgtaskd.App.BeginBackgroundTask", {"appId": APP})["parameters"]["taskId"]
                    c.call("io.bgtaskd.App.EndBackgroundTask", {"appId": APP, "taskId": t})
                wait_for(lambda: idle_lines(logind) == [], 10, "the idle inhibitor to be released")
        finally:
            monitor.terminate()
            monitor.wait(10)
        idle_calls = calls_log.read_text().count('string "idle"')
        assert idle_calls == 1, calls_log.read_text()[-3000:]

        # The app goes to the background and is frozen; then someone thaws it behind the daemon's back.
        app_cg = cg.app(APP)
        m.call("Background", appId=APP)
        m.wait_state(APP, "suspended")
        with open(os.path.join(app_cg, "cgroup.freeze"), "w") as f:
            f.write("0")
        assert read_events(app_cg).get("frozen") == 0

        # A real Suspend request to logind: PrepareForSleep(true), then (StartUnit refused) (false).
        since = time.time()
        r = logind.busctl("call", "org.freedesktop.login1", "/org/freedesktop/login1",
                          "org.freedesktop.login1.Manager", "Suspend", "b", "false", check=False)
        assert r.returncode == 0, r.stderr
        sleep = wait_journal(since, "BGTASKD_DECISION=policy", "BGTASKD_REASON=system-sleep", timeout=15)
        assert len(sleep) == 1 and "going to sleep" in sleep[0]["MESSAGE"], sleep
        # After the resume: the thawed app is frozen again, the delay inhibitor is taken again.
        wait_for(lambda: read_events(app_cg).get("frozen") == 1, 15, "the app to be frozen again after the resume")
        # Reported suspended once the daemon has seen the freeze confirmed (asynchronous, as every freeze).
        wait_for(lambda: m.state(APP) == "suspended", 5, f"{APP} to be reported suspended again after the resume")
        wait_for(lambda: any("bgtaskd" in l and "delay" in l for l in inhibitors(logind)), 10,
                 "the sleep delay inhibitor to be taken again")
        assert stats(m)["sleepsSeen"] == 1
        assert "StartUnit suspend.target" in logind.systemd_manager.stdout.readline()


def test_without_a_system_bus_system_sleep_is_off_and_said_once(daemon):
    since = time.time()
    d = daemon(env={"DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bgtaskd-test-bus"})
    m = Manager(d.socket)
    s = wait_for(lambda: (s := stats(m))["systemSleepReason"].startswith("no system bus") and s, 10,
                 "Stats to say why system sleep is off")
    assert s["systemSleep"] == "off" and s["idleInhibited"] is False, s
    said = wait_journal(since, "MESSAGE_ID=dc5d18c0548c4737ada8a87a5735f68d", timeout=10)
    assert len(said) == 1 and "system sleep is off" in said[0]["MESSAGE"], said


def test_a_system_bus_without_logind_turns_system_sleep_off(daemon, tmp_path):
    """A bus with no org.freedesktop.login1 on it (a dbus-daemon of the test's own, given as the system
    bus): the first Inhibit is refused by the bus, and the watch says so once."""
    address = f"unix:path={tmp_path}/bus"
    read, write = os.pipe()
    bus = subprocess.Popen(["dbus-daemon", "--session", f"--address={address}", "--nofork", "--nopidfile",
                            f"--print-address={write}"], pass_fds=(write,), stdout=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read) as r:
        assert r.readline().startswith(address)
    try:
        since = time.time()
        d = daemon(env={"DBUS_SYSTEM_BUS_ADDRESS": address})
        m = Manager(d.socket)
        s = wait_for(lambda: (s := stats(m))["systemSleepReason"].startswith("no logind on the system bus") and s, 10,
                     "Stats to say that there is no logind")
        assert s["systemSleep"] == "off" and "ServiceUnknown" in s["systemSleepReason"], s
        said = wait_journal(since, "MESSAGE_ID=dc5d18c0548c4737ada8a87a5735f68d", timeout=10)
        assert len(said) == 1, said
    finally:
        bus.terminate()
        bus.wait(10)
