"""SPEC §2 observed by a real app process linked against BGTaskClient (bgtask-testapp), launched by
the real daemon from its manifest."""
import json
from pathlib import Path

import pytest
import varlink

from support import AppLog, journal_entries, wait_for

FAST = """
[Daemon]
FreezerBackend=signal
[Lifecycle]
DidEnterBackgroundTimeoutSec=500ms
BackgroundTimeBudgetSec=2s
ExpirationWarningSec=800ms
LaunchTimeoutSec=5s
WillTerminateTimeoutSec=1s
KillTimeoutSec=1s
"""


@pytest.fixture
def testapp(daemon, bin_dir, tmp_path):
    def start(app_id, *options):
        out = tmp_path / f"{app_id}.jsonl"
        exe = bin_dir / "bgtask-testapp"
        assert exe.exists(), f"{exe} missing: build it (swift build)"
        exec_line = " ".join([str(exe), "--output", str(out), *options])
        d = daemon(conf=FAST, apps={app_id: f"[App]\nID={app_id}\nExec={exec_line}\n"})
        return AppLog(d, app_id, out)
    return start


def manager(d):
    c = varlink.Client(address="unix:" + d.socket)
    return c, c.open("io.bgtaskd.Manager")


def test_bgtaskclient_app_sees_sequences_in_order(testapp):
    app = testapp("org.test.Client")
    c, m = manager(app.d)
    with c, m:
        m.Launch(app.id)
        app.wait_events(["did-finish-launching", "did-become-active"])
        launched = [l for l in app.lines() if l.get("event") == "did-finish-launching"][0]
        assert launched["launchReason"] == "user"
        assert [l for l in app.lines() if l.get("event") == "did-become-active"][0]["applicationState"] == "active"
        m.Background(app.id)
        app.wait_state("suspended")                            # only after the library's acknowledgement
        m.Foreground(app.id)
        app.wait_state("active")
        m.Interrupt(app.id)
        app.wait_state("inactive")
        m.EndInterruption(app.id)
        app.wait_state("active")
        m.Terminate(app.id)
        app.wait_state("not-running")
    assert app.events() == [
        "did-finish-launching", "did-become-active",               # 1
        "will-resign-active", "did-enter-background",             # 2
        "will-enter-foreground", "did-become-active",             # 3
        "will-resign-active", "did-become-active",                # 6
        "will-terminate",                                         # 7
    ]


def test_expiration_handler_ends_the_task_then_suspended(testapp):
    app = testapp("org.test.Expiring", "--begin-task-on-background", "sync")
    c, m = manager(app.d)
    with c, m:
        m.Launch(app.id)
        app.wait_state("active")
        m.Background(app.id)
        wait_for(lambda: any(l.get("action") == "begin" for l in app.lines()), 3, lambda: str(app.lines()))
        begin = [l for l in app.lines() if l.get("action") == "begin"][0]
        assert begin["taskId"] > 0
        wait_for(lambda: "background-task-will-expire" in app.events(), 4, lambda: str(app.events()))
        app.wait_state("suspended", timeout=3)
    # Decisions only (the freezer's "froze …" log line names the app too).
    kinds = [(e["BGTASKD_DECISION"], e["BGTASKD_REASON"]) for e in journal_entries(
        want=lambda es: any(e.get("BGTASKD_DECISION") == "suspend" for e in es), BGTASKD_APP=app.id, _PID=app.d.pid)
        if "BGTASKD_DECISION" in e]
    assert ("expire", "budget-ending") in kinds or any(k == "expire" for k, _ in kinds), kinds
    assert not any(k == "terminate" for k, _ in kinds), kinds
    assert [k for k, _ in kinds].count("suspend") == 1


def test_expiration_not_handled_terminates(testapp):
    app = testapp("org.test.Stubborn", "--begin-task-on-background", "sync", "--ignore-expiration")
    c, m = manager(app.d)
    with c, m:
        m.Launch(app.id)
        app.wait_state("active")
        m.Background(app.id)
        app.wait_state("not-running", timeout=6)
    assert "background-task-will-expire" in app.events()
    reasons = {e["BGTASKD_REASON"] for e in journal_entries(
        want=bool, BGTASKD_APP=app.id, BGTASKD_DECISION="terminate", _PID=app.d.pid)}
    assert reasons == {"expiration-not-handled"}
