"""SPEC §16, energy accounting: a busy app's background CPU in GetApp, on its suspend entry and first in
`bgtaskctl energy`, kept across a daemon restart; wakes by cause.

Real daemon, real cgroups (a scratch `CgroupRoot=`) or real signals, real busy child processes, real journald.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from freezer_support import Manager, ScratchCgroup, conf, manifest, wait_journal, write_script
from support import json_lines

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to create cgroups")

BUSY = "org.test.Busy"
IDLE = "org.test.Idle"

# Two busy processes (the main one and a forked child): the app uses CPU for as long as it runs.
BUSY_APP = textwrap.dedent("""\
    import os
    os.fork()
    n = 0
    while True:
        n += 1
""")


@pytest.fixture
def ctl(bin_dir) -> str:
    return str(bin_dir / "bgtaskctl")


def energy_rows(ctl: str, socket: str) -> list[dict]:
    out = subprocess.run([ctl, "--socket", socket, "energy", "--json"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["apps"]


@pytest.mark.parametrize("backend", ["cgroup", "signal"])
def test_a_busy_app_held_in_the_background_is_charged_its_cpu_and_the_charge_survives_a_restart(
        daemon, ctl, tmp_path, backend):
    script = write_script(tmp_path, "busy.py", BUSY_APP)
    apps = {BUSY: manifest(BUSY, f"{sys.executable} {script}"), IDLE: manifest(IDLE, "/bin/sleep 1000")}
    with ScratchCgroup() as cg:
        # The grace window (3 s: margin for a loaded machine) is the time the busy app is held running in
        # the background.
        text = conf(cg.path if backend == "cgroup" else None, backend, grace="3s")
        d = daemon(conf=text, apps=apps)
        m = Manager(d.socket)
        since = time.time()
        m.launch(BUSY)
        m.launch(IDLE, background=True)  # a wake (user) for the idle app
        m.call("Background", appId=BUSY)
        m.wait_state(BUSY, "suspended", timeout=15)
        m.wait_state(IDLE, "suspended", timeout=15)

        busy = m.app(BUSY)["energy"]
        assert busy["backgroundCPUUSec"] >= 500_000, busy
        assert busy["backgroundCPU24hUSec"] == busy["backgroundCPUUSec"]
        assert busy["wakes"] == {}, "a foreground launch is no background wake"
        idle = m.app(IDLE)["energy"]
        assert idle["wakes"] == {"user": 1} and idle["wakes24h"] == {"user": 1}, idle
        assert idle["backgroundCPUUSec"] < busy["backgroundCPUUSec"]

        # The suspend entry carries the background period that just ended.
        [entry] = wait_journal(since, "BGTASKD_DECISION=suspend", f"BGTASKD_APP={BUSY}")
        assert int(entry["BGTASKD_BACKGROUND_CPU_USEC"]) == busy["backgroundCPUUSec"]

        rows = energy_rows(ctl, d.socket)
        assert [r["appId"] for r in rows][:2] == [BUSY, IDLE], rows
        assert rows[0]["backgroundCPUUSec"] == busy["backgroundCPUUSec"]
        table = subprocess.run([ctl, "--socket", d.socket, "energy"], capture_output=True, text=True, timeout=30)
        assert table.returncode == 0 and table.stdout.splitlines()[1].startswith(BUSY), table.stdout
        status = subprocess.run([ctl, "--socket", d.socket, "status", BUSY, "-n", "0"], capture_output=True, text=True,
                                timeout=30)
        assert "Background CPU:" in status.stdout and "Standby bucket: active" in status.stdout, status.stdout

        # A restart (SIGTERM: the apps are killed; a frozen app's kill charges nothing more).
        assert d.stop() == 0
        d2 = daemon(conf=text, root=d.root)
        m2 = Manager(d2.socket)
        assert m2.app(BUSY)["energy"] == busy
        assert m2.app(IDLE)["energy"] == idle
        assert energy_rows(ctl, d2.socket)[0]["appId"] == BUSY


# MARK: beyond one device

def test_a_fleet_shipped_by_journal_upload_to_journal_remote_is_listed_per_machine_and_app(daemon, ctl, tmp_path):
    from fleet_support import Collector, FleetMachine
    import contextlib
    script = write_script(tmp_path, "busy.py", BUSY_APP)
    with contextlib.ExitStack() as stack:
        machines = []
        charged = {}
        for host, app in (("fleet-car-1", BUSY), ("fleet-car-2", IDLE)):
            machine = FleetMachine(host)
            stack.callback(machine.close)
            cg = stack.enter_context(ScratchCgroup())
            exec_line = f"{sys.executable} {script}" if app == BUSY else "/bin/sleep 1000"
            d = daemon(conf=conf(cg.path, grace="2s"), apps={app: manifest(app, exec_line)},
                       prefix=machine.daemon_prefix())
            m = Manager(d.socket)
            m.launch(app)
            m.call("Background", appId=app)
            m.wait_state(app, "suspended", timeout=15)
            charged[host] = m.app(app)["energy"]["backgroundCPUUSec"]
            assert d.stop() == 0  # its entries are all handed to its journald
            machine.sync()
            machines.append((machine, app))

        collector = Collector()
        stack.callback(collector.close)
        uploads = [collector.upload(machine.journal_directory) for machine, _ in machines]
        for u in uploads:
            out, err = u.communicate(timeout=60)
            assert u.returncode == 0, err
        collector.stop()
        # --split-mode=host names files by the sender's address (both are 127.0.0.1 here): the machines
        # are told apart by the entries' own _MACHINE_ID and _HOSTNAME.
        files = sorted(p.name for p in collector.output.iterdir())
        assert files == ["remote-127.0.0.1.journal"], files

        run = subprocess.run([ctl, "energy", "--directory", str(collector.output), "--json"],
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        rows = json.loads(run.stdout)["apps"]
        got = {(r["hostname"], r["machineId"], r["appId"]): (r["backgroundCPUUSec"], r["suspends"]) for r in rows}
        assert got == {
            ("fleet-car-1", machines[0][0].machine_id, BUSY): (charged["fleet-car-1"], 1),
            ("fleet-car-2", machines[1][0].machine_id, IDLE): (charged["fleet-car-2"], 1),
        }, rows
        assert rows[0]["appId"] == BUSY and charged["fleet-car-1"] > charged["fleet-car-2"]
        table = subprocess.run([ctl, "energy", "--directory", str(collector.output)], capture_output=True,
                               text=True, timeout=60)
        assert table.returncode == 0 and table.stdout.splitlines()[1].split()[:2] == ["fleet-car-1", BUSY], table.stdout
        assert "2 apps listed on 2 machines." in table.stdout


def test_energy_directory_that_is_not_one_is_an_error(ctl, tmp_path):
    run = subprocess.run([ctl, "energy", "--directory", str(tmp_path / "missing")], capture_output=True, text=True,
                         timeout=30)
    assert run.returncode == 1 and "not a directory" in run.stderr, run


# MARK: who may wake (SPEC §16): closed by the user, the remote-notification rate, standby buckets

def energy_daemon(daemon, extra_conf: str = "", modes: str = "fetch remote-notification"):
    """A daemon with one lifecycle-aware app (refresh_support.py's) whose event log lives in its directory."""
    import shutil
    import tempfile
    from pathlib import Path
    from conftest import REPO_ROOT
    from refresh_support import CONF, EventLog
    from refresh_support import manifest as app_manifest
    root = Path(tempfile.mkdtemp(prefix="bgtaskd-it-", dir="/tmp"))
    for sub in ("state", "runtime"):
        (root / sub).mkdir()
    shutil.copytree(REPO_ROOT / "config", root / "config")
    d = daemon(conf=CONF + extra_conf, apps={APP: app_manifest(APP, root / "app.events", modes=modes)}, root=root)
    return d, EventLog(root / "app.events")


APP = "org.test.Energy"


def test_an_app_the_user_closed_is_not_woken_until_the_user_launches_it(daemon, ctl):
    from refresh_support import MANAGER, call, decisions, error_of, wait_state
    d, log = energy_daemon(daemon)
    call(d.socket, f"{MANAGER}.Launch", appId=APP)
    wait_state(d.socket, APP, "active")
    # bgtaskctl terminate is the user (Terminate, userInitiated: true).
    out = subprocess.run([ctl, "--socket", d.socket, "terminate", APP], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    wait_state(d.socket, APP, "not-running")
    e = error_of(d.socket, f"{MANAGER}.WakeForRemoteNotification", appId=APP)
    assert e.name == f"{MANAGER}.Unavailable" and e.parameters == {"reason": "closed-by-user"}
    assert decisions(d.pid, APP, "deny", "closed-by-user")
    assert log.kinds().count("did-finish-launching") == 1, "not launched for the notification"
    # The user launches it again: it may be woken.
    call(d.socket, f"{MANAGER}.Launch", appId=APP)
    wait_state(d.socket, APP, "active")
    call(d.socket, f"{MANAGER}.Background", appId=APP)
    wait_state(d.socket, APP, "suspended")
    call(d.socket, f"{MANAGER}.WakeForRemoteNotification", appId=APP)
    log.wait_kind("notification")


def test_remote_wakes_past_the_hourly_rate_are_refused(daemon):
    from refresh_support import MANAGER, call, decisions, error_of
    d, log = energy_daemon(daemon, "RemoteWakesPerHour=1\n")
    call(d.socket, f"{MANAGER}.WakeForRemoteNotification", appId=APP)
    log.wait_kind("notification")
    e = error_of(d.socket, f"{MANAGER}.WakeForRemoteNotification", appId=APP)
    assert e.name == f"{MANAGER}.Unavailable" and e.parameters == {"reason": "wake-rate"}
    assert decisions(d.pid, APP, "deny", "wake-rate")
    assert log.kinds().count("notification") == 1


def test_in_the_rare_bucket_the_third_due_task_of_a_day_waits_and_runs_on_external_power(daemon):
    from refresh_support import APP as APP_IFACE, MANAGER, call, decisions, wait_state
    d, log = energy_daemon(daemon)
    call(d.socket, f"{MANAGER}.SetConditions", onExternalPower=False)
    assert call(d.socket, f"{MANAGER}.GetApp", appId=APP)["app"]["bucket"] == "rare"  # never used

    def run_once(n: int):
        call(d.socket, f"{APP_IFACE}.SubmitTaskRequest", appId=APP, identifier=f"{APP}.refresh", kind="refresh")
        log.wait_kind("perform-task", count=n)
        wait_state(d.socket, APP, "suspended")

    run_once(1)  # a launch
    run_once(2)  # a resume
    call(d.socket, f"{APP_IFACE}.SubmitTaskRequest", appId=APP, identifier=f"{APP}.refresh", kind="refresh")
    assert decisions(d.pid, APP, "deny", "bucket-quota")
    assert [r["identifier"] for r in call(d.socket, f"{APP_IFACE}.PendingTaskRequests", appId=APP)["requests"]] \
        == [f"{APP}.refresh"], "the third waits, its request pending"
    assert log.kinds().count("perform-task") == 2
    from refresh_support import error_of  # a remote notification is refused too
    e = error_of(d.socket, f"{MANAGER}.WakeForRemoteNotification", appId=APP)
    assert e.parameters == {"reason": "bucket-quota"}
    # On external power the quotas do not apply: it runs.
    call(d.socket, f"{MANAGER}.SetConditions", onExternalPower=True)
    log.wait_kind("perform-task", count=3)
    assert call(d.socket, f"{APP_IFACE}.PendingTaskRequests", appId=APP)["requests"] == []


# MARK: processing tasks yield to the user

def test_a_running_processing_task_yields_when_another_app_becomes_active_and_a_refresh_task_does_not(daemon):
    import shutil
    import tempfile
    from pathlib import Path
    from conftest import REPO_ROOT
    from refresh_support import APP as APP_IFACE, CONF, MANAGER, EventLog, call, decisions, wait_state
    from refresh_support import manifest as app_manifest
    proc, refresh, user = "org.test.Processing", "org.test.Refresh", "org.test.User"
    root = Path(tempfile.mkdtemp(prefix="bgtaskd-it-", dir="/tmp"))
    for sub in ("state", "runtime"):
        (root / sub).mkdir()
    shutil.copytree(REPO_ROOT / "config", root / "config")
    apps = {
        proc: app_manifest(proc, root / "p.events", modes="processing", permitted=[f"{proc}.work"], complete=False),
        refresh: app_manifest(refresh, root / "r.events", modes="fetch", permitted=[f"{refresh}.refresh"], complete=False),
        user: app_manifest(user, root / "u.events"),
    }
    # Budgets long enough that neither task's own warning comes during the test.
    conf = CONF.replace("RefreshTaskBudgetSec=2s", "RefreshTaskBudgetSec=60s").replace(
        "ProcessingTaskBudgetSec=2s", "ProcessingTaskBudgetSec=60s")
    d = daemon(conf=conf, apps=apps, root=root)
    p, r = EventLog(root / "p.events"), EventLog(root / "r.events")
    call(d.socket, f"{APP_IFACE}.SubmitTaskRequest", appId=proc, identifier=f"{proc}.work", kind="processing")
    call(d.socket, f"{APP_IFACE}.SubmitTaskRequest", appId=refresh, identifier=f"{refresh}.refresh", kind="refresh")
    p.wait_kind("perform-task")
    r.wait_kind("perform-task")
    assert "background-task-will-expire" not in p.kinds() + r.kinds()

    call(d.socket, f"{MANAGER}.Launch", appId=user)  # the user starts using the device
    wait_state(d.socket, user, "active")
    p.wait_kind("background-task-will-expire")
    [expire] = decisions(d.pid, None, "expire")
    assert expire["BGTASKD_APP"] == proc and expire["BGTASKD_REASON"] == "another-app-foreground"
    assert expire["BGTASKD_TASK_NAME"] == f"{proc}.work"
    # Decided together: the refresh task got nothing (its expire entry would be beside the processing one).
    assert "background-task-will-expire" not in r.kinds()
    # Not completed within ExpirationWarningSec: terminated (task-not-completed), the refresh app still runs.
    assert decisions(d.pid, proc, "terminate", "task-not-completed")
    assert call(d.socket, f"{MANAGER}.GetApp", appId=refresh)["app"]["state"] == "background"


# MARK: continued tasks

# A lifecycle-aware app (a bare Varlink socket): on did-become-active it begins a continued task and then
# reports progress every 0.1 s (CT_PROGRESS=no: never) until it gets background-task-will-expire for it.
# Every event and every call's answer is a JSON line in CT_LOG.
CONTINUED_APP = textwrap.dedent("""\
    import json, os, sys, threading, time
    sys.path.insert(0, os.environ["CT_SUPPORT"])
    from support import RawClient
    app, path, log_path = os.environ["BGTASKD_APP_ID"], os.environ["BGTASKD_SOCKET"], os.environ["CT_LOG"]
    progress = os.environ.get("CT_PROGRESS", "yes") == "yes"
    log = open(log_path, "a", buffering=1)
    def note(o):
        log.write(json.dumps(o) + "\\n")
    stream, calls = RawClient(path, timeout=None), RawClient(path, timeout=10.0)
    lock, state = threading.Lock(), {"task": None, "expired": False}
    def report():
        n = 0
        while True:
            time.sleep(0.1)  # the app's own pace of work, not a wait
            with lock:
                if state["expired"]:
                    return
                n += 1
                r = calls.call("io.bgtaskd.App.UpdateTaskProgress",
                               {"appId": app, "taskId": state["task"], "completedUnits": n, "totalUnits": 1000})
                note({"progress": n, "error": r.get("error")})
    stream.send_call("io.bgtaskd.App.CheckIn", {"appId": app}, more=True)
    while True:
        reply = stream.recv_message(timeout=3600)
        event = reply.get("parameters", {}).get("event")
        if not event:
            continue
        note({"kind": event["kind"], "taskId": event.get("taskId")})
        if event.get("needsAck"):
            calls.call("io.bgtaskd.App.Acknowledge", {"eventId": event["id"]})
        if event["kind"] == "did-become-active" and state["task"] is None:
            with lock:
                r = calls.call("io.bgtaskd.App.BeginContinuedTask",
                               {"appId": app, "identifier": "export", "title": "Exporting", "totalUnits": 1000})
                state["task"] = r["parameters"]["taskId"]
            note({"task": state["task"]})
            if progress:
                threading.Thread(target=report, daemon=True).start()
        if event["kind"] == "background-task-will-expire" and event.get("taskId") == state["task"]:
            with lock:
                state["expired"] = True
            note({"expired": state["task"]})
        if event["kind"] == "will-terminate":
            sys.exit(0)
""")


def continued_daemon(daemon, tmp_path, progress: bool):
    from pathlib import Path
    from refresh_support import CONF
    script = write_script(tmp_path, "continued.py", CONTINUED_APP)
    log = tmp_path / "continued.log"
    here = Path(__file__).resolve().parent
    text = (f"[App]\nID={APP}\nExec={sys.executable} {script}\nEnvironment=CT_LOG={log}\n"
            f"Environment=CT_SUPPORT={here}\nEnvironment=CT_PROGRESS={'yes' if progress else 'no'}\n")
    conf = CONF.replace("[Lifecycle]\n", "[Lifecycle]\nBackgroundTimeBudgetSec=1s\nContinuedTaskStallSec=1s\n")
    d = daemon(conf=conf, apps={APP: text})

    def lines():
        return json_lines(log)
    return d, lines


def test_a_continued_task_keeps_its_app_running_while_it_reports_progress_until_the_user_cancels_it(daemon, ctl, tmp_path):
    from refresh_support import APP as APP_IFACE, MANAGER, call, decisions, error_of, wait_state
    from freezer_support import wait_for
    from freezer_support import Monitor
    d, lines = continued_daemon(daemon, tmp_path, progress=True)
    monitor = Monitor(d.socket)
    call(d.socket, f"{MANAGER}.Launch", appId=APP)
    task = wait_for(lambda: next((l["task"] for l in lines() if "task" in l), None), 10, "the continued task")
    assert task > 0
    call(d.socket, f"{MANAGER}.Background", appId=APP)
    # Only while active: begun in the background it is refused.
    e = error_of(d.socket, f"{APP_IFACE}.BeginContinuedTask", appId=APP, identifier="x", title="x")
    assert e.name == f"{APP_IFACE}.InvalidState" and e.parameters == {"state": "background"}
    # Progress every 0.1 s: 30 reports later (3 s) its 1 s budget and 1 s stall limit are long past, and it runs.
    wait_for(lambda: sum(1 for l in lines() if l.get("progress") and not l.get("error")) >= 30, 20, "30 progress reports")
    assert call(d.socket, f"{MANAGER}.GetApp", appId=APP)["app"]["state"] == "background"
    assert not any(l.get("kind") == "background-task-will-expire" for l in lines())
    [listed] = call(d.socket, f"{MANAGER}.ListContinuedTasks")["tasks"]
    assert listed["taskId"] == task and listed["appId"] == APP and listed["title"] == "Exporting"
    assert listed["completedUnits"] >= 30 and listed["totalUnits"] == 1000
    # Progress on Monitor (not journaled).
    progress = [x for x in monitor.poll() if x["decision"] == "progress"]
    assert progress and progress[0]["appId"] == APP and "Exporting" in progress[0]["message"], monitor.decisions[-5:]
    monitor.close()
    out = subprocess.run([ctl, "--socket", d.socket, "cancel"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and f"{task}  {APP}  Exporting" in out.stdout, out.stdout

    # The user cancels it: its expiration handler runs, and the app is suspended once nothing holds it.
    out = subprocess.run([ctl, "--socket", d.socket, "cancel", APP, str(task)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    wait_for(lambda: any(l.get("expired") == task for l in lines()), 10, "the app's expiration handler")
    assert decisions(d.pid, APP, "expire", "user-cancelled")
    wait_state(d.socket, APP, "suspended")
    assert call(d.socket, f"{MANAGER}.ListContinuedTasks")["tasks"] == []


def test_a_continued_task_that_reports_no_progress_stalls(daemon, tmp_path):
    from refresh_support import MANAGER, call, decisions, wait_state
    from freezer_support import wait_for
    d, lines = continued_daemon(daemon, tmp_path, progress=False)
    call(d.socket, f"{MANAGER}.Launch", appId=APP)
    task = wait_for(lambda: next((l["task"] for l in lines() if "task" in l), None), 10, "the continued task")
    call(d.socket, f"{MANAGER}.Background", appId=APP)
    wait_for(lambda: any(l.get("expired") == task for l in lines()), 10, "background-task-will-expire for the stall")
    assert decisions(d.pid, APP, "expire", "task-stalled")
    assert decisions(d.pid, APP, "end", "task-stalled")
    wait_state(d.socket, APP, "suspended")
