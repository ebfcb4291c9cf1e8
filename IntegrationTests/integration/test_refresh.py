"""Background App Refresh (SPEC §5, §6, §7): policy, scheduled tasks, notifications, crash-safe state.

The real daemon launches real app processes (refresh_support.py's app, a Python Varlink client that
records every event it gets); the journal is read back with journalctl.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from conftest import REPO_ROOT
from refresh_support import (APP, CONF, MANAGER, EventLog, call, decisions, error_of,
                             manifest, realtime_usec, wait_state)
from support import RawClient

A = "org.example.RefreshA"
B = "org.example.RefreshB"


def two_apps(daemon, tmp_conf: str = CONF, a_extra: dict | None = None, b_extra: dict | None = None, **kw):
    """A daemon with apps A and B whose event logs live in the daemon's directory (removed with it)."""
    root = Path(tempfile.mkdtemp(prefix="bgtaskd-it-", dir="/tmp"))
    for sub in ("state", "runtime"):
        (root / sub).mkdir()
    shutil.copytree(REPO_ROOT / "config", root / "config")
    apps = {
        A: manifest(A, root / f"{A}.events", **(a_extra or {})),
        B: manifest(B, root / f"{B}.events", **(b_extra or {})),
    }
    d = daemon(conf=tmp_conf, apps=apps, root=root, **kw)
    return d, EventLog(root / f"{A}.events"), EventLog(root / f"{B}.events")


def submit(d, app_id: str, identifier: str, kind: str = "refresh", after: float | None = 0.0, **extra) -> dict:
    params = {"appId": app_id, "identifier": identifier, "kind": kind, **extra}
    if after is not None:
        params["earliestBeginUSec"] = realtime_usec(after)
    return call(d.socket, f"{APP}.SubmitTaskRequest", **params)


def pending(d, app_id: str) -> list[dict]:
    return call(d.socket, f"{APP}.PendingTaskRequests", appId=app_id)["requests"]


def status(d, app_id: str) -> str:
    return call(d.socket, f"{APP}.RefreshStatus", appId=app_id)["status"]


def settings(d) -> dict:
    return call(d.socket, f"{MANAGER}.GetSettings")["settings"]


def decided(d, app_id: str) -> list[str]:
    """The decisions the daemon made about the app, oldest first (Explain: its in-memory history). The queue
    is serial: whatever a call led to is in it once the call is answered."""
    return [r["decision"] for r in call(d.socket, f"{MANAGER}.Explain", appId=app_id)["reasons"]]


def kinds_after(log: EventLog, start_index: int) -> list[str]:
    return [e["kind"] for e in log.events()[start_index:]]


# MARK: §5 policy

def test_refresh_off_denies_the_due_task_yet_assertions_are_granted(daemon):
    d, a, _ = two_apps(daemon)
    assert status(d, A) == "available"
    submit(d, A, f"{A}.refresh", after=0.4)
    call(d.socket, f"{MANAGER}.SetRefreshPolicy", appId=A, enabled=False)
    assert status(d, A) == "denied"
    denied = decisions(d.pid, A, "deny", "refresh-disabled", timeout=5)
    assert denied, "no deny/refresh-disabled in the journal"
    assert denied[0]["BGTASKD_TASK_NAME"] == f"{A}.refresh"
    assert denied[0]["PRIORITY"] == "5"
    # The deny comes from the look at the due task that would have launched the app instead; nothing
    # else can launch it while refresh is off.
    assert call(d.socket, f"{MANAGER}.GetApp", appId=A)["app"]["state"] == "not-running"
    assert "launch" not in decided(d, A)
    assert a.entries() == [], "the app was launched"
    assert not decisions(d.pid, A, "launch", timeout=0)
    # Still pending: it runs once refresh is back on.
    assert [r["identifier"] for r in pending(d, A)] == [f"{A}.refresh"]
    # A new submission is refused while refresh is off.
    e = error_of(d.socket, f"{APP}.SubmitTaskRequest", appId=A, identifier=f"{A}.refresh", kind="refresh")
    assert e.name == f"{APP}.Unavailable" and e.parameters == {"reason": "refresh-disabled"}

    # Background-task assertions are not affected: launched by hand, the app gets one and keeps running
    # in the background while it holds it.
    call(d.socket, f"{MANAGER}.Launch", appId=A)
    a.wait_kind("did-become-active")
    with RawClient(d.socket) as holder:
        r = holder.call(f"{APP}.BeginBackgroundTask", {"appId": A, "name": "finish-upload"})
        assert "error" not in r, r
        task_id = r["parameters"]["taskId"]
        assert task_id > 0
        call(d.socket, f"{MANAGER}.Background", appId=A)
        entered = a.wait_kind("did-enter-background")
        entered_id = next(e["id"] for e in reversed(entered) if e.get("kind") == "did-enter-background")
        # Once its acknowledgement is answered, the daemon has decided: it stays in the background.
        a.wait_for(lambda es: any(e.get("acked") == entered_id for e in es), what="the acknowledgement answered")
        assert call(d.socket, f"{MANAGER}.GetApp", appId=A)["app"]["state"] == "background"
        holder.call(f"{APP}.EndBackgroundTask", {"appId": A, "taskId": task_id})
        wait_state(d.socket, A, "suspended")
    assert decisions(d.pid, A, "grant")

    # Back on: the app hears of it (queued while suspended, delivered at the thaw) and the task runs.
    before = len(a.events())
    call(d.socket, f"{MANAGER}.SetRefreshPolicy", appId=A, enabled=True)
    a.wait_kind("perform-task")
    new = a.events()[before:]
    assert [e["kind"] for e in new][:3] == ["notification", "did-enter-background", "perform-task"], new
    assert new[0]["name"] == "refresh-status-changed"
    assert new[0]["payload"] == {"status": "available", "previousStatus": "denied"}
    assert pending(d, A) == []


def test_restricted_app_cannot_be_turned_on(daemon):
    d, _, _ = two_apps(daemon, a_extra={"extra": "RefreshRestricted=yes\n"})
    assert status(d, A) == "restricted"
    e = error_of(d.socket, f"{MANAGER}.SetRefreshPolicy", appId=A, enabled=True)
    assert e.name == f"{MANAGER}.Unavailable" and e.parameters == {"reason": "restricted"}
    assert status(d, A) == "restricted"
    assert decisions(d.pid, A, "deny", "restricted")
    info = call(d.socket, f"{MANAGER}.GetApp", appId=A)["app"]
    assert info["refreshStatus"] == "restricted"
    e = error_of(d.socket, f"{APP}.SubmitTaskRequest", appId=A, identifier=f"{A}.refresh", kind="refresh")
    assert e.name == f"{APP}.Unavailable" and e.parameters == {"reason": "restricted"}
    # Turning it off is allowed (and changes nothing visible).
    call(d.socket, f"{MANAGER}.SetRefreshPolicy", appId=A, enabled=False)
    assert status(d, A) == "restricted"
    # Low power mode and the global setting do not unrestrict it either.
    call(d.socket, f"{MANAGER}.SetGlobalRefresh", mode="on")
    assert status(d, A) == "restricted"
    assert status(d, B) == "available"


def test_low_power_mode_denies_every_app_and_lifting_it_restores(daemon):
    d, a, b = two_apps(daemon)
    # A runs in the foreground and hears the changes at once; B has a task due soon.
    call(d.socket, f"{MANAGER}.Launch", appId=A)
    a.wait_kind("did-become-active")
    submit(d, B, f"{B}.refresh", after=0.5)
    call(d.socket, f"{MANAGER}.SetLowPowerMode", enabled=True)
    assert settings(d)["lowPowerMode"] is True
    assert (status(d, A), status(d, B)) == ("denied", "denied")
    a.wait_kind("notification")
    note = [e for e in a.events() if e["kind"] == "notification"][-1]
    assert note["name"] == "refresh-status-changed" and note["payload"]["status"] == "denied"
    assert decisions(d.pid, None, "policy", "user-request")
    # B's due task is denied, and B is not launched.
    assert decisions(d.pid, B, "deny", "low-power-mode", timeout=5)
    assert b.entries() == []
    e = error_of(d.socket, f"{APP}.SubmitTaskRequest", appId=A, identifier=f"{A}.refresh", kind="refresh")
    assert e.parameters == {"reason": "low-power-mode"}
    e = error_of(d.socket, f"{MANAGER}.RunTaskNow", appId=B, identifier=f"{B}.refresh")
    assert e.name == f"{MANAGER}.Unavailable" and e.parameters == {"reason": "low-power-mode"}

    call(d.socket, f"{MANAGER}.SetLowPowerMode", enabled=False)
    assert settings(d)["lowPowerMode"] is False
    assert (status(d, A), status(d, B)) == ("available", "available")
    a.wait_kind("notification", count=2)
    assert [e for e in a.events() if e["kind"] == "notification"][-1]["payload"]["status"] == "available"
    b.wait_kind("perform-task")
    assert b.events()[0]["launchReason"] == "background-task"


# MARK: §6 scheduled tasks

def test_a_due_refresh_task_launches_the_app_into_the_background_then_suspends_it(daemon):
    d, a, _ = two_apps(daemon)
    submitted = time.monotonic()
    submit(d, A, f"{A}.refresh", after=0.3)
    a.wait_kind("perform-task")
    # The app is frozen as soon as the daemon has its CompleteTask, maybe before it reads the reply.
    assert decisions(d.pid, A, "complete-task", "task-completed")
    info = wait_state(d.socket, A, "suspended")
    entries = a.entries()
    first = next(e for e in entries if e.get("first"))
    assert first["state"] == "not-running" and first["refreshStatus"] == "available"
    # SPEC §2 sequence 4, and not before the earliest begin date.
    assert [e["kind"] for e in a.events()] == ["did-finish-launching", "did-enter-background", "perform-task"]
    launch, dib, perform = a.events()
    assert launch["launchReason"] == "background-task"
    assert dib["state"] == "background" and perform["state"] == "background"
    assert perform["identifier"] == f"{A}.refresh"
    assert launch["t"] - submitted >= 0.25
    assert info["pendingTaskRequests"] == 0
    run = decisions(d.pid, A, "run-task")
    assert run[0]["BGTASKD_REASON"] == "task-scheduled" and run[0]["BGTASKD_TASK_NAME"] == f"{A}.refresh"
    assert decisions(d.pid, A, "suspend", "no-assertions")


def test_a_suspended_app_is_resumed_for_its_task(daemon):
    d, a, _ = two_apps(daemon)
    call(d.socket, f"{MANAGER}.Launch", appId=A, background=True)
    wait_state(d.socket, A, "suspended")
    before = len(a.events())
    pid = call(d.socket, f"{MANAGER}.GetApp", appId=A)["app"]["pid"]
    submit(d, A, f"{A}.refresh", after=None)
    a.wait_kind("perform-task")
    assert decisions(d.pid, A, "complete-task", "task-completed")
    wait_state(d.socket, A, "suspended")
    # SPEC §2 sequence 5: the same process, thawed, did-enter-background, the task, suspended again.
    assert kinds_after(a, before) == ["did-enter-background", "perform-task"]
    assert call(d.socket, f"{MANAGER}.GetApp", appId=A)["app"]["pid"] == pid
    resume = decisions(d.pid, A, "resume", "task-scheduled")
    assert resume and resume[0]["BGTASKD_PREVIOUS_STATE"] == "suspended"
    assert len(decisions(d.pid, A, "suspend", want=lambda es: len(es) >= 2)) >= 2


def test_a_task_not_completed_in_time_terminates_the_app(daemon):
    d, a, _ = two_apps(daemon, a_extra={"complete": False})
    submit(d, A, f"{A}.refresh", after=None)
    a.wait_kind("perform-task")
    started = time.monotonic()
    a.wait_kind("background-task-will-expire", timeout=5)
    expire = [e for e in a.events() if e["kind"] == "background-task-will-expire"][0]
    assert expire["identifier"] == f"{A}.refresh"
    a.wait_kind("will-terminate", timeout=5)
    # RefreshTaskBudgetSec=2s from perform-task.
    assert time.monotonic() - started >= 1.4
    terminated = decisions(d.pid, A, "terminate", "task-not-completed")
    assert terminated, "no terminate/task-not-completed"
    wait_state(d.socket, A, "not-running")


def test_submit_task_request_errors(daemon):
    processing = [f"{A}.p{i}" for i in range(11)]
    d, _, _ = two_apps(daemon, a_extra={"permitted": [f"{A}.refresh", f"{A}.refresh2", *processing]},
                       b_extra={"modes": "fetch"})
    later = 3600.0
    # Not in PermittedTaskIdentifiers=.
    e = error_of(d.socket, f"{APP}.SubmitTaskRequest", appId=A, identifier="org.example.Other", kind="refresh")
    assert e.name == f"{APP}.NotPermitted" and e.parameters == {"identifier": "org.example.Other"}
    # A second request for the same identifier replaces the first.
    submit(d, A, f"{A}.refresh", after=later)
    second_begin = realtime_usec(later * 2)
    call(d.socket, f"{APP}.SubmitTaskRequest", appId=A, identifier=f"{A}.refresh", kind="refresh",
         earliestBeginUSec=second_begin, requiresNetwork=True)
    assert pending(d, A) == [{"identifier": f"{A}.refresh", "kind": "refresh", "earliestBeginUSec": second_begin,
                              "requiresNetwork": True, "requiresExternalPower": False}]
    # Another refresh identifier: one pending refresh request per app.
    e = error_of(d.socket, f"{APP}.SubmitTaskRequest", appId=A, identifier=f"{A}.refresh2", kind="refresh")
    assert e.name == f"{APP}.TooManyPendingTaskRequests" and e.parameters == {"kind": "refresh"}
    # Ten processing requests, and the eleventh is refused.
    for identifier in processing[:10]:
        submit(d, A, identifier, kind="processing", after=later, requiresExternalPower=True)
    e = error_of(d.socket, f"{APP}.SubmitTaskRequest", appId=A, identifier=processing[10], kind="processing")
    assert e.name == f"{APP}.TooManyPendingTaskRequests" and e.parameters == {"kind": "processing"}
    assert len(pending(d, A)) == 11
    assert call(d.socket, f"{MANAGER}.GetApp", appId=A)["app"]["pendingTaskRequests"] == 11
    # Processing needs BackgroundModes=processing.
    e = error_of(d.socket, f"{APP}.SubmitTaskRequest", appId=B, identifier=f"{B}.refresh", kind="processing")
    assert e.name == f"{APP}.ModeNotDeclared" and e.parameters == {"mode": "processing"}
    # Malformed requests.
    for bad in ({"kind": "nightly"}, {"earliestBeginUSec": -5}, {"earliestBeginUSec": "soon"}, {"requiresNetwork": 1}):
        params = {"appId": A, "identifier": f"{A}.refresh", "kind": "refresh", **bad}
        e = error_of(d.socket, f"{APP}.SubmitTaskRequest", **params)
        assert e.name == "org.varlink.service.InvalidParameter", e
    # Cancel one, cancel an unknown one (harmless), then all.
    call(d.socket, f"{APP}.CancelTaskRequest", appId=A, identifier=processing[0])
    call(d.socket, f"{APP}.CancelTaskRequest", appId=A, identifier="never-submitted")
    assert len(pending(d, A)) == 10
    # Pending requests survive a restart.
    before = pending(d, A)
    d.stop()
    d2 = daemon(root=d.root)
    assert pending(d2, A) == before
    call(d2.socket, f"{APP}.CancelAllTaskRequests", appId=A)
    assert pending(d2, A) == []


def test_conditions_and_run_task_now(daemon):
    d, a, _ = two_apps(daemon)
    call(d.socket, f"{MANAGER}.SetConditions", network="none", onExternalPower=False)
    s = settings(d)
    assert (s["network"], s["onExternalPower"]) == ("none", False)
    submit(d, A, f"{A}.refresh", after=None, requiresNetwork=True)
    # Answered once saved, after the look that would have run it: it did not.
    assert "run-task" not in decided(d, A) and "launch" not in decided(d, A), "ran without a network"
    assert [r["identifier"] for r in pending(d, A)] == [f"{A}.refresh"]
    call(d.socket, f"{MANAGER}.SetConditions", network="metered")
    a.wait_kind("perform-task")
    wait_state(d.socket, A, "suspended")

    # Global "unmetered" on a metered network: a due task is denied (network-metered) until it is unmetered.
    call(d.socket, f"{MANAGER}.SetGlobalRefresh", mode="unmetered")
    # issue 12: the status says so (denied), and a submission is still accepted: it waits for the network.
    assert status(d, A) == "denied"
    before = len(a.events())
    submit(d, A, f"{A}.refresh", after=None)
    assert decisions(d.pid, A, "deny", "network-metered")
    # The deny was the look at the due task: it did not run (one run-task so far, the first one).
    assert decided(d, A).count("run-task") == 1
    assert "perform-task" not in kinds_after(a, before)
    call(d.socket, f"{MANAGER}.SetConditions", network="unmetered")
    a.wait_kind("perform-task", count=2)

    # RunTaskNow bypasses the date and the conditions, not the policy.
    wait_state(d.socket, A, "suspended")
    submit(d, A, f"{A}.refresh", after=3600, requiresExternalPower=True)
    e = error_of(d.socket, f"{MANAGER}.RunTaskNow", appId=A, identifier="org.example.Other")
    assert e.name == f"{MANAGER}.NotPermitted"
    call(d.socket, f"{MANAGER}.SetRefreshPolicy", appId=A, enabled=False)
    e = error_of(d.socket, f"{MANAGER}.RunTaskNow", appId=A, identifier=f"{A}.refresh")
    assert e.parameters == {"reason": "refresh-disabled"}
    call(d.socket, f"{MANAGER}.SetRefreshPolicy", appId=A, enabled=True)
    call(d.socket, f"{MANAGER}.RunTaskNow", appId=A, identifier=f"{A}.refresh")
    a.wait_kind("perform-task", count=3)
    assert decisions(d.pid, A, "run-task", "user-request")
    e = error_of(d.socket, f"{MANAGER}.RunTaskNow", appId=A, identifier=f"{A}.refresh")
    assert e.parameters == {"reason": "no-pending-request"}


def test_processing_waits_until_no_app_has_been_in_the_foreground_for_the_idle_time(daemon):
    conf = CONF.replace("ProcessingIdleSec=0", "ProcessingIdleSec=1s")
    d, a, b = two_apps(daemon, conf, a_extra={"permitted": [f"{A}.clean"]})
    call(d.socket, f"{MANAGER}.Launch", appId=B)
    b.wait_kind("did-become-active")
    submit(d, A, f"{A}.clean", kind="processing", after=None)
    time.sleep(1.5)  # no event exists: a wrong run would come from a timer that must not be armed (> ProcessingIdleSec)
    assert a.entries() == [], "a processing task ran while an app was in the foreground"
    call(d.socket, f"{MANAGER}.Background", appId=B)
    left = time.monotonic()
    a.wait_kind("perform-task", timeout=5)
    launched = next(e for e in a.events() if e["kind"] == "did-finish-launching")
    assert launched["t"] - left >= 0.9


def test_wake_for_remote_notification(daemon):
    d, a, b = two_apps(daemon, a_extra={"modes": "fetch remote-notification"})
    e = error_of(d.socket, f"{MANAGER}.WakeForRemoteNotification", appId=B)
    assert e.name == f"{MANAGER}.ModeNotDeclared" and e.parameters == {"mode": "remote-notification"}
    call(d.socket, f"{MANAGER}.WakeForRemoteNotification", appId=A, payload={"badge": 3})
    a.wait_kind("notification")
    launch, dib, note = a.events()[:3]
    assert launch["launchReason"] == "remote-notification"
    assert dib["kind"] == "did-enter-background"
    assert note["name"] == "remote-notification" and note["payload"] == {"badge": 3}
    wait_state(d.socket, A, "suspended")
    call(d.socket, f"{MANAGER}.SetGlobalRefresh", mode="off")
    e = error_of(d.socket, f"{MANAGER}.WakeForRemoteNotification", appId=A)
    assert e.name == f"{MANAGER}.Unavailable" and e.parameters == {"reason": "refresh-disabled"}
    assert decisions(d.pid, A, "deny", "refresh-disabled")


def test_control_methods_need_permission(daemon):
    d, _, _ = two_apps(daemon)
    # Let another user reach the socket (the test directories are private by default).
    d.root.chmod(0o711)
    (d.root / "runtime").chmod(0o711)
    pid = os.fork()
    if pid == 0:  # an unprivileged caller
        code = 1
        try:
            os.setgid(65534)
            os.setuid(65534)
            results = []
            for method, params in ((f"{MANAGER}.SetLowPowerMode", {"enabled": True}),
                                   (f"{MANAGER}.SetRefreshPolicy", {"appId": A, "enabled": False}),
                                   (f"{MANAGER}.SetConditions", {"network": "none"}),
                                   (f"{MANAGER}.RunTaskNow", {"appId": A, "identifier": f"{A}.refresh"})):
                with RawClient(d.socket) as c:
                    results.append(c.call(method, params).get("error"))
            with RawClient(d.socket) as c:
                results.append(c.call(f"{APP}.SubmitTaskRequest",
                                      {"appId": A, "identifier": f"{A}.refresh", "kind": "refresh"}).get("error"))
            code = 0 if results == [f"{MANAGER}.PermissionDenied"] * 4 + [f"{APP}.PermissionDenied"] else 2
            if code:
                print(results, file=sys.stderr)
        except BaseException as e:  # noqa: BLE001 - reported through the exit status
            print(repr(e), file=sys.stderr)
        finally:
            os._exit(code)
    _, status_code = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status_code) == 0
    assert settings(d)["lowPowerMode"] is False
    assert pending(d, A) == []


# MARK: §7 queued notifications

def test_notifications_posted_while_suspended_arrive_coalesced_right_after_the_thaw(daemon):
    d, a, _ = two_apps(daemon)
    call(d.socket, f"{MANAGER}.Launch", appId=A, background=True)
    wait_state(d.socket, A, "suspended")
    before = len(a.events())
    call(d.socket, f"{MANAGER}.PostNotification", name="sync", appId=A, payload={"n": 1})
    call(d.socket, f"{MANAGER}.PostNotification", name="theme", appId=A, payload={"n": 2})
    call(d.socket, f"{MANAGER}.PostNotification", name="sync", appId=A, payload={"n": 3})
    # Nothing reached it while suspended: the stream is ordered, so the events after the thaw below are
    # all it got since (a notification delivered while suspended would come before them).
    call(d.socket, f"{MANAGER}.Foreground", appId=A)
    a.wait_kind("did-become-active")
    new = a.events()[before:]
    assert [e["kind"] for e in new] == ["notification", "notification", "will-enter-foreground", "did-become-active"]
    assert [(e["name"], e["payload"]) for e in new[:2]] == [("theme", {"n": 2}), ("sync", {"n": 3})]
    assert len(decisions(d.pid, A, "notify", "notification-queued", want=lambda es: len(es) >= 3)) == 3


# MARK: persistence and crash safety

def test_settings_persist_across_restarts_and_kill9(daemon):
    d, _, _ = two_apps(daemon)
    call(d.socket, f"{MANAGER}.SetGlobalRefresh", mode="unmetered")
    call(d.socket, f"{MANAGER}.SetLowPowerMode", enabled=True)
    call(d.socket, f"{MANAGER}.SetRefreshPolicy", appId=B, enabled=False)
    call(d.socket, f"{MANAGER}.SetConditions", network="metered")
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait()
    d2 = daemon(root=d.root)
    s = settings(d2)
    assert (s["backgroundAppRefresh"], s["lowPowerMode"], s["network"]) == ("unmetered", True, "metered")
    assert call(d2.socket, f"{MANAGER}.GetApp", appId=B)["app"]["refreshSetting"] == "off"
    assert call(d2.socket, f"{MANAGER}.GetApp", appId=A)["app"]["refreshSetting"] == "on"
    assert (status(d2, A), status(d2, B)) == ("denied", "denied")
    state_file = d.root / "state" / "refresh.json"
    assert json.loads(state_file.read_text())["lowPowerMode"] is True


def test_a_state_file_that_cannot_be_read_is_set_aside(daemon):
    d, _, _ = two_apps(daemon)
    call(d.socket, f"{MANAGER}.SetLowPowerMode", enabled=True)
    d.stop()
    (d.root / "state" / "refresh.json").write_text('{"lowPowerMode": tru')
    (d.root / "state" / ".refresh.json.tmp").write_text("half a write")
    d2 = daemon(root=d.root)
    assert settings(d2)["lowPowerMode"] is False
    assert (d.root / "state" / "refresh.json.corrupt").exists()
    assert not (d.root / "state" / ".refresh.json.tmp").exists()
    call(d2.socket, f"{MANAGER}.SetLowPowerMode", enabled=True)
    assert json.loads((d.root / "state" / "refresh.json").read_text())["lowPowerMode"] is True


KILLS = 60


def test_kill9_at_random_moments_loses_no_acknowledged_change(daemon):
    """A stream of setting changes and submissions; kill -9 at a random moment; restart; everything that
    was acknowledged is there, and the state loads. The one call in flight at the kill may or may not be."""
    processing = [f"{A}.p{i}" for i in range(10)]
    d, _, _ = two_apps(daemon, a_extra={"permitted": [f"{A}.refresh", *processing]})
    root = d.root
    rng = random.Random(int(os.environ.get("RT_SEED", "6")))
    far = realtime_usec(10 * 24 * 3600)  # nothing becomes due: no app is launched

    # The model: what the daemon must show. Keys: ("global",), ("lowPower",), ("app", id), ("pending", id).
    model = {("global",): "on", ("lowPower",): False, ("app", A): True, ("app", B): True, ("pending", A): {}}

    def random_change():
        r = rng.random()
        if r < 0.2:
            mode = rng.choice(["on", "unmetered", "off"])
            return f"{MANAGER}.SetGlobalRefresh", {"mode": mode}, ("global",), mode
        if r < 0.35:
            on = rng.random() < 0.5
            return f"{MANAGER}.SetLowPowerMode", {"enabled": on}, ("lowPower",), on
        if r < 0.55:
            app_id = rng.choice([A, B])
            on = rng.random() < 0.5
            return f"{MANAGER}.SetRefreshPolicy", {"appId": app_id, "enabled": on}, ("app", app_id), on
        if r < 0.9:
            identifier = rng.choice(processing)
            begin = far + rng.randrange(1_000_000_000)
            params = {"appId": A, "identifier": identifier, "kind": "processing", "earliestBeginUSec": begin}
            new = dict(model[("pending", A)])
            new[identifier] = begin
            return f"{APP}.SubmitTaskRequest", params, ("pending", A), new
        identifier = rng.choice(processing)
        new = dict(model[("pending", A)])
        new.pop(identifier, None)
        return f"{APP}.CancelTaskRequest", {"appId": A, "identifier": identifier}, ("pending", A), new

    def observed(dm) -> dict:
        s = settings(dm)
        return {
            ("global",): s["backgroundAppRefresh"],
            ("lowPower",): s["lowPowerMode"],
            ("app", A): call(dm.socket, f"{MANAGER}.GetApp", appId=A)["app"]["refreshSetting"] == "on",
            ("app", B): call(dm.socket, f"{MANAGER}.GetApp", appId=B)["app"]["refreshSetting"] == "on",
            ("pending", A): {r["identifier"]: r["earliestBeginUSec"] for r in pending(dm, A)},
        }

    acknowledged_total = 0
    in_flight_applied = 0
    mid_write = 0  # kills that left a temporary file: the daemon died between creating it and the rename
    for round_no in range(KILLS):
        with RawClient(d.socket) as c:
            deadline = time.monotonic() + rng.uniform(0.0, 0.12)
            in_flight = None
            while True:
                method, params, key, value = random_change()
                c.send_call(method, params)
                in_flight = (key, value)
                if time.monotonic() >= deadline:
                    break  # kill with this call in flight
                reply = c.recv_message(timeout=10)
                if "error" in reply:
                    # Refusals change nothing (refresh off or low power refuse submissions).
                    assert reply["error"] in (f"{APP}.Unavailable",), reply
                else:
                    model[key] = value
                    acknowledged_total += 1
                in_flight = None
            # Sometimes let the in-flight call reach the daemon, sometimes not.
            time.sleep(rng.choice([0.0, 0.0, 0.0005, 0.002]))  # the random moment of the kill is the scenario, not a wait
            d.proc.send_signal(signal.SIGKILL)
            d.proc.wait()
        if (root / "state" / ".refresh.json.tmp").exists():
            mid_write += 1
        d = daemon(root=root)
        got = observed(d)
        for key, want in model.items():
            if got[key] == want:
                continue
            assert in_flight is not None and in_flight[0] == key and got[key] == in_flight[1], \
                f"round {round_no}: {key} is {got[key]!r}, acknowledged {want!r} (in flight: {in_flight})"
            model[key] = got[key]
            in_flight_applied += 1
        text = (root / "state" / "refresh.json").read_text() if (root / "state" / "refresh.json").exists() else "{}"
        json.loads(text)  # the file always parses
        assert not (root / "state" / "refresh.json.corrupt").exists()
    assert acknowledged_total >= KILLS, acknowledged_total
    print(f"{KILLS} kills, {acknowledged_total} acknowledged changes, {in_flight_applied} in-flight changes kept, "
          f"{mid_write} kills in the middle of a write")
