"""SPEC §3 and §6 rules against the real daemon (issue 12, task "budget").

- A wake for an event runs on that event's own budget: a suspended app whose background time is spent, resumed
  for a scheduled task, has no fresh app budget (BackgroundTimeRemaining 0, BeginBackgroundTask denied with
  `budget-exhausted`).
- A task waiting for the background is not lost when the app ends first: the request stays pending (and in
  refresh.json) until the task really starts, across a termination and a daemon restart.
- A manager hold that ends after the app's budget did hands the app's live assertions to the budget's rule.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from freezer_support import Manager, wait_for  # noqa: E402
from refresh_support import EventLog, call, manifest, realtime_usec, wait_state  # noqa: E402
from support import RawClient, journal_entries  # noqa: E402

APP = "io.bgtaskd.App"
MANAGER = "io.bgtaskd.Manager"

CONF = """\
[Daemon]
FreezerBackend=signal
[Lifecycle]
DidEnterBackgroundTimeoutSec=3s
BackgroundTimeBudgetSec=1500ms
ExpirationWarningSec=300ms
RefreshTaskBudgetSec=20s
ProcessingTaskBudgetSec=20s
WillTerminateTimeoutSec=1s
KillTimeoutSec=1s
LaunchTimeoutSec=10s
[Refresh]
MinimumRefreshIntervalSec=0
ProcessingIdleSec=0
"""


def unique(name: str) -> str:
    """An app ID no other test run used, so that journal look-ups see this run only."""
    return f"org.example.{name}.t{uuid.uuid4().hex[:10]}"


def app_info(d, app: str) -> dict:
    return call(d.socket, f"{MANAGER}.GetApp", appId=app)["app"]


def pending(d, app: str) -> list[str]:
    return [r["identifier"] for r in call(d.socket, f"{APP}.PendingTaskRequests", appId=app)["requests"]]


def saved_pending(d, app: str) -> list[str]:
    """The identifiers refresh.json holds for `app` (what survives a crash)."""
    path = d.root / "state" / "refresh.json"
    text = path.read_text() if path.exists() else "{}"
    found = []

    def walk(node):
        if isinstance(node, dict):
            if node.get("identifier", "").startswith(app):
                found.append(node["identifier"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(text))
    return found


# MARK: SPEC §3: a wake for an event runs on the event's own budget

def active_app(daemon, tmp_path, name: str):
    """A lifecycle-aware app launched into the foreground: (daemon, app ID, its refresh identifier, its events)."""
    app = unique(name)
    events = tmp_path / "events.jsonl"
    d = daemon(conf=CONF, apps={app: manifest(app, events)})
    log = EventLog(events)
    call(d.socket, f"{MANAGER}.Launch", appId=app)
    log.wait_kind("did-become-active")
    return d, app, f"{app}.refresh", log


def assert_task_waits(app: str):
    """The daemon journaled that the app's due task waits for the background (SPEC §6)."""
    assert journal_entries(want=bool, timeout=10, BGTASKD_APP=app, BGTASKD_REASON="waiting-for-background"), \
        "the task did not wait for the background"


def test_a_task_wake_gives_a_suspended_app_no_fresh_budget(daemon, tmp_path):
    app = unique("Spent")
    identifier = f"{app}.refresh"
    events = tmp_path / "events.jsonl"
    d = daemon(conf=CONF, apps={app: manifest(app, events, complete=False)})
    log = EventLog(events)
    call(d.socket, f"{MANAGER}.Launch", appId=app)
    log.wait_kind("did-become-active")
    # Not due by itself: only RunTaskNow runs it.
    call(d.socket, f"{APP}.SubmitTaskRequest", appId=app, identifier=identifier, kind="refresh",
         earliestBeginUSec=realtime_usec(3600))
    call(d.socket, f"{MANAGER}.Background", appId=app)
    wait_state(d.socket, app, "suspended")
    # The 1.5 s budget runs out while the app is suspended (the daemon's own figure is the event awaited).
    wait_for(lambda: app_info(d, app)["backgroundTimeRemainingUSec"] == 0, 10, "the app budget to be spent", interval=0.02)

    call(d.socket, f"{MANAGER}.RunTaskNow", appId=app, identifier=identifier)
    log.wait_kind("perform-task")
    info = app_info(d, app)
    assert info["state"] == "background", info
    # No fresh 1.5 s: the wake runs on the task's 20 s, the app's budget stays spent.
    assert info["backgroundTimeRemainingUSec"] == 0, info
    assert call(d.socket, f"{APP}.BackgroundTimeRemaining", appId=app)["remainingUSec"] == 0
    with RawClient(d.socket) as c:
        r = c.call(f"{APP}.BeginBackgroundTask", {"appId": app, "name": "after the wake"})
        assert r["parameters"]["taskId"] == 0, r
    denials = journal_entries(want=bool, timeout=10, BGTASKD_APP=app, BGTASKD_DECISION="deny")
    assert [e["BGTASKD_REASON"] for e in denials] == ["budget-exhausted"], denials
    # The task itself still has its own time: completed, the app is suspended again.
    call(d.socket, f"{APP}.CompleteTask", appId=app, identifier=identifier, success=True)
    wait_state(d.socket, app, "suspended")


# MARK: SPEC §6: a task waiting for the background is not lost when the app ends first

def test_a_due_task_waiting_for_the_background_runs_after_the_app_is_terminated(daemon, tmp_path):
    d, app, identifier, log = active_app(daemon, tmp_path, "Waiting")
    # Due at once, but the app is active: the task waits for the background.
    call(d.socket, f"{APP}.SubmitTaskRequest", appId=app, identifier=identifier, kind="refresh")
    assert_task_waits(app)
    assert "perform-task" not in log.kinds()
    assert pending(d, app) == [identifier]
    assert saved_pending(d, app) == [identifier]
    # The user ends the app before it ever enters the background.
    call(d.socket, f"{MANAGER}.Terminate", appId=app)
    # The request was kept: the daemon launches the app into the background for it (SPEC §2 sequence 4).
    entries = log.wait_for(lambda es: any(e.get("kind") == "perform-task" for e in es), 15,
                           "the task to run in a new process")
    launches = [e for e in entries if e.get("kind") == "did-finish-launching"]
    assert [e["launchReason"] for e in launches] == ["user", "background-task"], launches
    task = [e for e in entries if e.get("kind") == "perform-task"][0]
    assert task["identifier"] == identifier and task["state"] == "background", task
    wait_for(lambda: pending(d, app) == [] and saved_pending(d, app) == [], 10,
             "the request to leave the pending list once run", interval=0.02)


def test_a_waiting_task_survives_a_termination_and_a_daemon_restart(daemon, tmp_path):
    d, app, identifier, log = active_app(daemon, tmp_path, "Survives")
    # Not due by itself for an hour; RunTaskNow runs it now, but the app is active: it waits.
    call(d.socket, f"{APP}.SubmitTaskRequest", appId=app, identifier=identifier, kind="refresh",
         earliestBeginUSec=realtime_usec(3600))
    call(d.socket, f"{MANAGER}.RunTaskNow", appId=app, identifier=identifier)
    assert_task_waits(app)
    call(d.socket, f"{MANAGER}.Terminate", appId=app)
    wait_state(d.socket, app, "not-running")
    # Still pending, in memory and in the state file.
    assert pending(d, app) == [identifier]
    assert app_info(d, app)["pendingTaskRequests"] == 1
    assert saved_pending(d, app) == [identifier]
    assert "perform-task" not in log.kinds()

    # A restart (same configuration and state) keeps it.
    d.stop()
    d = daemon(root=d.root)
    assert pending(d, app) == [identifier]
    # Later it runs: the app is launched into the background for it.
    call(d.socket, f"{MANAGER}.RunTaskNow", appId=app, identifier=identifier)
    entries = log.wait_kind("perform-task", timeout=15)
    task = [e for e in entries if e.get("kind") == "perform-task"][0]
    assert task["identifier"] == identifier and task["state"] == "background", task
    assert pending(d, app) == [] and saved_pending(d, app) == []


# MARK: SPEC §3 with §12: an assertion that outlived its budget under a manager hold

def test_an_assertion_past_its_budget_ends_the_app_when_the_manager_hold_ends(daemon, bin_dir, tmp_path):
    app = unique("HeldTooLong")
    d = daemon(conf=CONF, apps={app: f"[App]\nID={app}\nExec=/bin/sleep infinity\nLifecycleAware=no\n"})
    m = Manager(d.socket)
    pid = m.launch(app)
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    with RawClient(d.socket) as c:
        # The app's own assertion, begun in the foreground (no budget there), on a connection kept open.
        r = c.call(f"{APP}.BeginBackgroundTask", {"appId": app, "name": "upload"})
        assert r["parameters"]["taskId"] > 0, r
        m.call("Background", appId=app)
        hold = subprocess.Popen([str(bin_dir / "bgtaskctl"), "hold", "--socket", d.socket, "--app", app, "--",
                                 "sh", "-c", f"read x < {fifo}"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: any(a.get("managerHold") for a in m.app(app)["assertions"]), 5, "the manager hold")
        # The 1.5 s budget ends while held: the app is told (the warning) and keeps running (SPEC §12).
        assert journal_entries(want=bool, timeout=10, BGTASKD_APP=app, BGTASKD_DECISION="expire")
        wait_for(lambda: m.app(app)["backgroundTimeRemainingUSec"] == 0, 10, "the budget to end", interval=0.02)
        # A control call feeds the core, which first takes every deadline due (the budget's end) at its instant.
        m.call("PostNotification", name="after-the-budget", appId=app)
        info = m.app(app)
        assert info["state"] == "background" and info["pid"] == pid, info
        assert not journal_entries(BGTASKD_APP=app, BGTASKD_DECISION="terminate")
        # The command ends, and with it the hold: the app's assertion is past its budget, so the app ends.
        with open(fifo, "w") as f:
            f.write("done\n")
        assert hold.wait(10) == 0, hold.stderr.read()
        terminated = journal_entries(want=bool, timeout=10, BGTASKD_APP=app, BGTASKD_DECISION="terminate")
        assert terminated[0]["BGTASKD_REASON"] == "expiration-not-handled", terminated
        ended = journal_entries(want=bool, timeout=10, BGTASKD_APP=app, BGTASKD_DECISION="end",
                                BGTASKD_REASON="manager-hold")
        assert int(ended[0]["__MONOTONIC_TIMESTAMP"]) <= int(terminated[0]["__MONOTONIC_TIMESTAMP"])
        m.wait_state(app, "not-running")


def test_a_waiting_task_whose_request_is_cancelled_does_not_run(daemon, tmp_path):
    d, app, identifier, log = active_app(daemon, tmp_path, "Cancelled")
    call(d.socket, f"{APP}.SubmitTaskRequest", appId=app, identifier=identifier, kind="refresh")
    assert_task_waits(app)
    # The app cancels it while it waits: it is no longer pending, and it must not run either.
    call(d.socket, f"{APP}.CancelTaskRequest", appId=app, identifier=identifier)
    assert pending(d, app) == [] and saved_pending(d, app) == []
    call(d.socket, f"{MANAGER}.Background", appId=app)
    # Suspended once did-enter-background is acknowledged: a task that ran would have kept it in the background.
    wait_state(d.socket, app, "suspended")
    kinds = log.kinds()
    assert "did-enter-background" in kinds and "perform-task" not in kinds, kinds
