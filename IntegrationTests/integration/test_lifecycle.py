"""SPEC §2/§3 end to end: the real daemon launches real app processes written with the Python
`varlink` package (apps/pyapp.py), the Manager interface drives them, and the journal is read back."""
import json
import os
import shutil
import tempfile
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import varlink

from support import AppLog, RawClient, journal_entries, journal_scope, wait_for

HERE = Path(__file__).resolve().parent
PYAPP = HERE / "apps" / "pyapp.py"

FAST = """
[Daemon]
FreezerBackend=signal
[Lifecycle]
DidEnterBackgroundTimeoutSec=400ms
BackgroundTimeBudgetSec=1500ms
ExpirationWarningSec=500ms
LaunchTimeoutSec=3s
WillTerminateTimeoutSec=1s
KillTimeoutSec=1s
"""


def manifest(app_id, log, *flags, aware=True, extra=""):
    args = " ".join([sys.executable, str(PYAPP), "--log", str(log), *flags])
    return (f"[App]\nID={app_id}\nName={app_id}\nExec={args}\n"
            f"LifecycleAware={'yes' if aware else 'no'}\n{extra}")


def manager(d):
    c = varlink.Client(address="unix:" + d.socket)
    return c, c.open("io.bgtaskd.Manager")


@pytest.fixture
def lifecycle(daemon, tmp_path):
    """Starts a daemon with one app manifest per (id, flags) and returns (daemon, {id: App})."""
    def start(specs, conf=FAST):
        apps, handles = {}, {}
        for app_id, flags, kw in specs:
            log = tmp_path / f"{app_id}.log"
            apps[app_id] = manifest(app_id, log, *flags, **kw)
        d = daemon(conf=conf, apps=apps)
        for app_id, _, _ in specs:
            handles[app_id] = AppLog(d, app_id, tmp_path / f"{app_id}.log")
        return d, handles
    return start


def test_sequences_1_2_3_6_7_in_order(lifecycle):
    d, apps = lifecycle([("org.test.Mail", (), {})])
    app = apps["org.test.Mail"]
    c, m = manager(d)
    with c, m:
        m.Launch(app.id)                                       # seq. 1
        app.wait_events(["did-finish-launching", "did-become-active"])
        assert app.lines()[1]["launchReason"] == "user"
        app.wait_state("active")
        m.Background(app.id)                                   # seq. 2: acknowledged at once → suspended
        app.wait_state("suspended")
        app.wait_events(["did-finish-launching", "did-become-active", "will-resign-active", "did-enter-background"])
        pid = app.info()["pid"]
        wait_for(lambda: open(f"/proc/{pid}/stat").read().split(") ")[1][0] == "T", 2, lambda: "app not stopped")
        m.Foreground(app.id)                                   # seq. 3
        app.wait_events(["did-finish-launching", "did-become-active", "will-resign-active", "did-enter-background",
                         "will-enter-foreground", "did-become-active"])
        app.wait_state("active")
        m.Interrupt(app.id)                                    # seq. 6
        app.wait_state("inactive")
        m.EndInterruption(app.id)
        app.wait_state("active")
        m.Terminate(app.id)                                    # seq. 7: running → will-terminate, then exits
        app.wait_state("not-running")
        assert app.events()[-3:] == ["will-resign-active", "did-become-active", "will-terminate"]
        reasons = [(r["decision"], r["reason"]) for r in m.Explain(app.id)["reasons"]]
    assert ("suspend", "no-assertions") in reasons
    assert ("terminate", "user-request") in reasons


def test_unacknowledged_did_enter_background_is_terminated(lifecycle):
    d, apps = lifecycle([("org.test.Slow", ("--no-ack",), {})])
    app = apps["org.test.Slow"]
    c, m = manager(d)
    with c, m:
        m.Launch(app.id)
        app.wait_state("active")
        t0 = time.monotonic()
        m.Background(app.id)
        app.wait_state("not-running", timeout=5)
        elapsed = time.monotonic() - t0
    assert 0.35 <= elapsed < 4, elapsed  # DidEnterBackgroundTimeoutSec=400ms (+ SIGTERM/KILL escalation)
    entries = journal_entries(want=bool, BGTASKD_APP=app.id, BGTASKD_DECISION="terminate", _PID=d.pid)
    # The decision, then the exit it caused; both carry the reason.
    assert entries and {e["BGTASKD_REASON"] for e in entries} == {"did-enter-background-timeout"}


def test_task_not_ended_after_warning_is_terminated_at_budget_end(lifecycle):
    d, apps = lifecycle([("org.test.Sync", ("--task-on-background", "sync", "--ignore-expiration"), {})])
    app = apps["org.test.Sync"]
    c, m = manager(d)
    with c, m:
        m.Launch(app.id)
        app.wait_state("active")
        m.Background(app.id)
        wait_for(lambda: "background-task-will-expire" in app.events(), 3, lambda: str(app.events()))
        assert app.info()["state"] == "background"            # held by its task until the budget ends
        app.wait_state("not-running", timeout=5)
    kinds = [(e["BGTASKD_DECISION"], e["BGTASKD_REASON"]) for e in journal_entries(
        want=lambda es: any(e.get("BGTASKD_DECISION") == "terminate" for e in es), BGTASKD_APP=app.id, _PID=d.pid)
        if "BGTASKD_DECISION" in e]
    assert ("grant", "app-request") in kinds or any(k == "grant" for k, _ in kinds)
    assert ("terminate", "expiration-not-handled") in kinds


def test_task_ended_in_time_then_suspended(lifecycle):
    d, apps = lifecycle([("org.test.Good", ("--task-on-background", "sync", "--end-task-after", "0.3"), {})])
    app = apps["org.test.Good"]
    c, m = manager(d)
    with c, m:
        m.Launch(app.id)
        app.wait_state("active")
        m.Background(app.id)
        wait_for(lambda: any("taskId" in l and l.get("event") is None for l in app.lines()), 3, lambda: str(app.lines()))
        assert app.info()["state"] == "background"
        app.wait_state("suspended", timeout=3)
    suspends = journal_entries(want=bool, BGTASKD_APP=app.id, BGTASKD_DECISION="suspend", _PID=d.pid)
    assert len(suspends) == 1


SLEEPER = "[App]\nID={id}\nExec=/bin/sleep 1000\nLifecycleAware=no\n"


def launched(daemon, app_id):
    d = daemon(conf=FAST, apps={app_id: SLEEPER.format(id=app_id)})
    c, m = manager(d)
    with c, m:
        m.Launch(app_id)
    return d


def test_killed_client_releases_its_assertions_at_once(daemon):
    d = launched(daemon, "org.test.Holder")
    # The holder idles (time.sleep(60) below) while it holds its tasks: the scenario, not a wait.
    holder = subprocess.Popen([sys.executable, "-c", f"""
import varlink, sys, time
c = varlink.Client(address="unix:{d.socket}")
a = c.open("io.bgtaskd.App")
ids = [a.BeginBackgroundTask("org.test.Holder", "t%d" % i)["taskId"] for i in range(3)]
print(" ".join(map(str, ids)), flush=True)
time.sleep(60)
"""], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    ids = holder.stdout.readline().split()
    assert len(ids) == 3 and all(int(i) > 0 for i in ids)
    c, m = manager(d)
    with c, m:
        assert len(m.ListAssertions()["assertions"]) == 3
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        wait_for(lambda: m.ListAssertions()["assertions"] == [], 2, lambda: "assertions not released")
    ends = journal_entries(want=lambda es: len(es) >= 3, BGTASKD_APP="org.test.Holder", BGTASKD_DECISION="end", _PID=d.pid)
    assert sorted(e["BGTASKD_TASK_ID"] for e in ends if e["BGTASKD_REASON"] == "client-disconnected") == sorted(ids)


def test_other_uid_cannot_act_for_an_app_but_can_read(daemon):
    d = launched(daemon, "org.test.Mine")
    for p in (d.root, d.runtime_dir):           # mkdtemp made them 0700; the socket itself is 0666
        os.chmod(p, 0o755)
    c, a = varlink.Client(address="unix:" + d.socket), None
    with c, c.open("io.bgtaskd.App") as a:
        task = a.BeginBackgroundTask("org.test.Mine", "mine")["taskId"]
        assert task > 0
        script = f"""
import varlink, json
out = {{}}
c = varlink.Client(address="unix:{d.socket}")
def attempt(name, f):
    try:
        f(); out[name] = "ok"
    except varlink.VarlinkError as e:
        out[name] = e.error()
app = c.open("io.bgtaskd.App"); mgr = c.open("io.bgtaskd.Manager")
attempt("end", lambda: app.EndBackgroundTask("org.test.Mine", {task}))
attempt("begin", lambda: app.BeginBackgroundTask("org.test.Mine", "x"))
attempt("checkin", lambda: next(iter(app.CheckIn("org.test.Mine", _more=True))))
attempt("terminate", lambda: mgr.Terminate("org.test.Mine"))
attempt("launch", lambda: mgr.Launch("org.test.Mine"))
attempt("reload", lambda: mgr.Reload())
attempt("list", lambda: mgr.ListApps())
attempt("get", lambda: mgr.GetApp("org.test.Mine"))
attempt("assertions", lambda: mgr.ListAssertions())
attempt("stats", lambda: mgr.Stats())
print(json.dumps(out))
"""
        # The other user may not read root's site-packages: give it a copy of the varlink package.
        pkgdir = Path(tempfile.mkdtemp(prefix="bgtaskd-pylib-"))
        shutil.copytree(Path(varlink.__file__).parent, pkgdir / "varlink")
        subprocess.run(["chmod", "-R", "a+rX", str(pkgdir)], check=True)
        env = dict(os.environ, PYTHONPATH=str(pkgdir))
        out = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", script],
                             capture_output=True, text=True, timeout=30, env=env)
        shutil.rmtree(pkgdir, ignore_errors=True)
        assert out.returncode == 0, out.stderr
        res = json.loads(out.stdout)
        assert res["end"] == res["begin"] == res["checkin"] == "io.bgtaskd.App.PermissionDenied", res
        assert res["terminate"] == res["launch"] == res["reload"] == "io.bgtaskd.Manager.PermissionDenied", res
        assert res["list"] == res["get"] == res["assertions"] == res["stats"] == "ok", res
        with c.open("io.bgtaskd.Manager") as m:
            live = m.ListAssertions()["assertions"]
        assert [x["taskId"] for x in live] == [task]          # the other user ended nothing


def test_journal_lists_exactly_the_suspensions(lifecycle):
    d, apps = lifecycle([("org.test.Cycle", (), {})])
    app = apps["org.test.Cycle"]
    c, m = manager(d)
    with c, m:
        m.Launch(app.id)
        app.wait_state("active")
        for _ in range(3):
            m.Background(app.id)
            app.wait_state("suspended")
            m.Foreground(app.id)
            app.wait_state("active")
    out = subprocess.run(["journalctl", "--sync"], check=False)
    res = subprocess.run(["journalctl", "-t", "bgtaskd", f"BGTASKD_APP={app.id}", "BGTASKD_DECISION=suspend",
                          "-o", "json", "--no-pager", *journal_scope()], capture_output=True, text=True, check=True)
    entries = [json.loads(l) for l in res.stdout.splitlines() if l.strip()]
    entries = [e for e in entries if int(e.get("_PID", 0)) == d.pid]
    assert len(entries) == 3
    for e in entries:
        assert e["BGTASKD_REASON"] == "no-assertions"
        assert e["BGTASKD_STATE"] == "suspended" and e["BGTASKD_PREVIOUS_STATE"] == "background"
        assert e["MESSAGE_ID"] == "7ec5448d981a451e96ce3ee61130da8a"
        assert e["OBJECT_PID"] == str(app.info()["pid"]) or e["BGTASKD_PID"]


def test_lifecycle_unaware_app_is_frozen_after_grace_window(daemon):
    app_id = "org.test.Plain"
    # The background time outlasts the waits below, however late a loaded machine lets the suspension come:
    # the Begin after it must find time left (the test is of the thaw, not of the budget).
    conf = FAST.replace("BackgroundTimeBudgetSec=1500ms", "BackgroundTimeBudgetSec=30s")
    d = daemon(conf=conf, apps={app_id: f"[App]\nID={app_id}\nExec=/bin/sleep 1000\nLifecycleAware=no\n"})
    c, m = manager(d)
    with c, m:
        m.Launch(app_id)
        info = m.GetApp(app_id)["app"]
        assert info["state"] == "active" and info["lifecycleAware"] is False
        pid = info["pid"]
        t0 = time.monotonic()
        m.Background(app_id)
        assert m.GetApp(app_id)["app"]["state"] == "background"   # the grace window, no ack possible
        wait_for(lambda: m.GetApp(app_id)["app"]["state"] == "suspended", 10, lambda: "not suspended")
        assert time.monotonic() - t0 >= 0.35                        # DidEnterBackgroundTimeoutSec=400ms
        assert open(f"/proc/{pid}/stat").read().split(") ")[1][0] == "T"
        # An assertion held for it (like `bgtaskctl hold --app`) thaws it and keeps it running.
        with c.open("io.bgtaskd.App") as a:
            task = a.BeginBackgroundTask(app_id, "held")["taskId"]
            assert task > 0
            assert m.GetApp(app_id)["app"]["state"] == "background"
            assert open(f"/proc/{pid}/stat").read().split(") ")[1][0] != "T"
            a.EndBackgroundTask(app_id, task)
        wait_for(lambda: m.GetApp(app_id)["app"]["state"] == "suspended", 10, lambda: "not suspended again")


def test_monitor_streams_decisions(lifecycle):
    d, apps = lifecycle([("org.test.Mon", (), {})])
    app = apps["org.test.Mon"]
    with RawClient(d.socket) as mon:
        mon.send_call("io.bgtaskd.Manager.Monitor", {}, more=True)
        # The stream is registered once the daemon has read the call; a Stats round trip on the same
        # socket is not possible (the stream owns it), so ask on another connection until it counts us.
        c, m = manager(d)
        with c, m:
            wait_for(lambda: m.Stats()["stats"]["calls"] >= 2, 2)
            m.Launch(app.id)
        seen = []
        while ("launch", app.id) not in seen:
            reply = mon.recv_message(timeout=5)
            assert reply.get("continues") is True, reply
            dec = reply["parameters"]["decision"]
            seen.append((dec["decision"], dec["appId"]))
            assert dec["reason"] and dec["message"] and dec["realtimeUSec"] > 0
    assert seen[0] == ("launch", app.id)
