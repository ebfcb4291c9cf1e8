"""issue 12: every answer a user gets is true.

Each test drives the real daemon and the real bgtaskctl: Reload and Launch that fail say so, the manager
hold, budgets and tasks as SPEC §3/§6 say, SIGTERM ending the daemon's apps, the freezer backend and a dry
run shown where a user looks, explain after a restart, and systemctl's conventions in the CLI.
"""

from __future__ import annotations

import re
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from freezer_support import Manager, ScratchCgroup, proc_stat, v2_mount, wait_for  # noqa: E402
from refresh_support import EventLog, call, manifest as aware_manifest, wait_state  # noqa: E402
from support import journal_entries  # noqa: E402

MANAGER = "io.bgtaskd.Manager"

SHORT = """\
[Daemon]
FreezerBackend=signal
[Lifecycle]
DidEnterBackgroundTimeoutSec=300ms
BackgroundTimeBudgetSec=1500ms
ExpirationWarningSec=300ms
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


def unaware(app_id: str, exec_line: str = "/bin/sleep infinity") -> str:
    return f"[App]\nID={app_id}\nName={app_id}\nExec={exec_line}\nLifecycleAware=no\nWorkingDirectory=/tmp\n"


@pytest.fixture
def ctl(bin_dir) -> str:
    return str(bin_dir / "bgtaskctl")


def run(ctl: str, d, *args: str, env: dict | None = None, timeout: float = 30) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k not in ("BGTASKD_SOCKET", "COLUMNS")}
    e.update(env or {})
    # Before the verb (bgtaskctl moves it after): `hold … -- COMMAND` takes everything after `--`.
    argv = [ctl, *(["--socket", d.socket] if d is not None else []), *args]
    return subprocess.run(argv, capture_output=True, text=True, env=e, timeout=timeout, stdin=subprocess.DEVNULL)


def state(d, app_id: str) -> str:
    return Manager(d.socket).state(app_id)


def gone(pid: int) -> bool:
    s = proc_stat(pid)
    return s is None or s[0] in ("Z", "X")


# MARK: Reload

def test_reload_of_a_bad_file_fails_naming_file_line_and_key(daemon, ctl):
    d = daemon(conf=SHORT)
    before = call(d.socket, f"{MANAGER}.GetSettings")["settings"]
    bad = d.config_dir / "bgtaskd.conf.d" / "60-bad.conf"
    bad.write_text("[Lifecycle]\n# a comment\nBackgroundTimeBudgetSec=banana\n")
    r = run(ctl, d, "reload")
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert f"{bad}:3" in r.stderr and "BackgroundTimeBudgetSec" in r.stderr, r.stderr
    assert r.stderr.startswith("bgtaskctl: Configuration not reloaded, the previous one stays in force:"), r.stderr
    assert r.stderr.rstrip().endswith("(io.bgtaskd.Manager.InvalidConfiguration)."), r.stderr
    # The same, as any Varlink client sees it: the parameters name file, line and key.
    with pytest.raises(Exception) as e:
        call(d.socket, f"{MANAGER}.Reload")
    assert e.value.name == f"{MANAGER}.InvalidConfiguration"
    assert (e.value.parameters["file"], e.value.parameters["line"], e.value.parameters["key"]) == (
        str(bad), 3, "BackgroundTimeBudgetSec")
    # The old configuration stays.
    assert call(d.socket, f"{MANAGER}.GetSettings")["settings"] == before
    bad.write_text("[Lifecycle]\nBackgroundTimeBudgetSec=2s\n")
    assert run(ctl, d, "reload").returncode == 0
    assert call(d.socket, f"{MANAGER}.GetSettings")["settings"]["backgroundTimeBudgetUSec"] == 2_000_000
    # A manifest broken on reload: refused too, and its running app lives on (rather than being ended as
    # if its manifest had been removed).
    app = unique("Manifest")
    (d.config_dir / "apps.d" / f"{app}.app").write_text(unaware(app))
    assert run(ctl, d, "reload").returncode == 0
    pid = Manager(d.socket).launch(app)
    broken = d.config_dir / "apps.d" / f"{app}.app"
    broken.write_text(unaware(app) + "LifecycleAware=perhaps\n")
    r = run(ctl, d, "reload")
    assert r.returncode == 1 and f"{broken}:7" in r.stderr and "LifecycleAware" in r.stderr, r.stderr
    info = Manager(d.socket).app(app)
    assert (info["state"], info["pid"]) == ("active", pid), info


def test_reload_says_which_start_only_key_needs_a_restart(daemon, ctl):
    """SPEC §9: a reload applies what it can; a start-only key (FreezerBackend=, CgroupRoot=, Socket=,
    LauncherSocket=) changed in a file is said, with its file, line and value in force, and `bgtaskctl
    reload` exits 1; the Reload reply carries both lists."""
    d = daemon(conf=SHORT)
    drop_in = d.config_dir / "bgtaskd.conf.d" / "60-restart.conf"
    drop_in.write_text("[Daemon]\nFreezerBackend=none\n")
    r = run(ctl, d, "reload")
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert f"{drop_in}:2: FreezerBackend" in r.stderr and "restart" in r.stderr and "signal" in r.stderr, r.stderr
    assert "Nothing" in r.stderr, r.stderr
    assert call(d.socket, f"{MANAGER}.Stats")["stats"]["freezerBackend"] == "signal"
    # With a key that does apply: applied, and said; the start-only one still said.
    drop_in.write_text("[Daemon]\nFreezerBackend=none\n[Lifecycle]\nKillTimeoutSec=2s\n")
    r = run(ctl, d, "reload")
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert "KillTimeoutSec" in r.stderr and f"{drop_in}:2: FreezerBackend" in r.stderr, r.stderr
    assert call(d.socket, f"{MANAGER}.GetSettings")["settings"]["killTimeoutUSec"] == 2_000_000
    reply = call(d.socket, f"{MANAGER}.Reload")
    assert any("FreezerBackend" in n for n in reply["notApplied"]), reply
    # The file back to what is in force: a clean reload.
    drop_in.write_text("[Lifecycle]\nKillTimeoutSec=3s\n")
    r = run(ctl, d, "reload")
    assert (r.returncode, r.stderr) == (0, ""), r.stderr
    assert call(d.socket, f"{MANAGER}.Reload").get("notApplied") in (None, [])


def test_a_misspelled_manifest_key_is_an_error_at_start_and_on_reload(daemon, ctl):
    """A manifest with a key bgtaskd does not know: at start the app is left out (the journal names file,
    line and key); on reload the reload fails naming them and the old configuration stays."""
    typo, good = unique("Typo"), unique("Good")
    d = daemon(conf=SHORT, apps={typo: unaware(typo) + "BackgroundModez=fetch\n", good: unaware(good)})
    path = d.config_dir / "apps.d" / f"{typo}.app"
    with pytest.raises(Exception) as e:
        call(d.socket, f"{MANAGER}.GetApp", appId=typo)
    assert e.value.name == f"{MANAGER}.NoSuchApp"
    left_out = journal_entries(want=lambda es: any(f"{path}:7: BackgroundModez" in e.get("MESSAGE", "") for e in es),
                               _PID=d.pid)
    assert any("left out" in e["MESSAGE"] for e in left_out if "BackgroundModez" in e.get("MESSAGE", "")), left_out
    # Fixed: reloaded; then misspelled on reload: refused, the app kept as it was.
    path.write_text(unaware(typo))
    assert run(ctl, d, "reload").returncode == 0
    assert call(d.socket, f"{MANAGER}.GetApp", appId=typo)["app"]["appId"] == typo
    (d.config_dir / "apps.d" / f"{good}.app").write_text(unaware(good) + "LifecycleAwre=yes\n")
    r = run(ctl, d, "reload")
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert f"{good}.app:7" in r.stderr and "LifecycleAwre" in r.stderr, r.stderr
    assert r.stderr.startswith("bgtaskctl: Configuration not reloaded, the previous one stays in force:"), r.stderr


# MARK: Launch

def test_launch_of_a_program_that_cannot_start_fails(daemon, ctl):
    app = unique("Missing")
    d = daemon(conf=SHORT, apps={app: unaware(app, "/nonexistent/bgtaskd-test-program --flag")})
    r = run(ctl, d, "launch", app)
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"bgtaskctl: Failed to launch {app}:") and "/nonexistent/bgtaskd-test-program" in r.stderr
    assert r.stderr.rstrip().endswith("(io.bgtaskd.Manager.LaunchFailed)."), r.stderr
    assert state(d, app) == "not-running"
    # A foreground request that launches fails the same way; a good launch still answers 0.
    assert run(ctl, d, "foreground", app).returncode == 1
    good = unique("Good")
    (d.config_dir / "apps.d" / f"{good}.app").write_text(unaware(good))
    assert run(ctl, d, "reload").returncode == 0
    r = run(ctl, d, "launch", good)
    assert r.returncode == 0, r.stderr
    assert Manager(d.socket).pid(good)


# MARK: the manager hold (SPEC §12)

def test_hold_keeps_an_unaware_app_running_past_its_budget(daemon, ctl, tmp_path):
    held, control = unique("Held"), unique("Control")
    d = daemon(conf=SHORT, apps={held: unaware(held), control: unaware(control)})
    m = Manager(d.socket)
    held_pid, control_pid = m.launch(held), m.launch(control)
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    m.call("Background", appId=held)
    hold = subprocess.Popen([ctl, "hold", "--socket", d.socket, "--app", held, "--name", "test hold", "--",
                             "sh", "-c", f"read x < {fifo}; exit 7"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: any(a.get("managerHold") for a in m.app(held)["assertions"]), 5, "the manager hold")
    assert m.app(held)["state"] == "background"
    # The control app, backgrounded after it with an app assertion (the old hold), is terminated when its
    # budget ends: by then the held app's budget has ended too.
    m.call("Background", appId=control)
    with __import__("support").RawClient(d.socket) as c:
        r = c.call("io.bgtaskd.App.BeginBackgroundTask", {"appId": control, "name": "app assertion"})
        assert r["parameters"]["taskId"] > 0
        wait_for(lambda: m.state(control) == "not-running", 10, "the control app to be terminated at its budget's end")
    assert gone(control_pid)
    info = m.app(held)
    assert info["state"] == "background" and info["pid"] == held_pid, info
    assert proc_stat(held_pid)[0] in ("S", "R"), proc_stat(held_pid)
    assert hold.poll() is None
    with open(fifo, "w") as f:
        f.write("done\n")
    assert hold.wait(10) == 7, hold.stderr.read()
    # The hold ends with the command: the app is frozen at once (its grace window is long over).
    m.wait_state(held, "suspended")
    entries = journal_entries(want=lambda es: len(es) >= 2, BGTASKD_APP=held, BGTASKD_REASON="manager-hold")
    assert [e["BGTASKD_DECISION"] for e in entries] == ["grant", "end"], entries
    assert not journal_entries(BGTASKD_APP=held, BGTASKD_DECISION="terminate")


def test_hold_lost_or_refused_exits_non_zero_with_a_sentence(daemon, ctl, tmp_path):
    app = unique("Lost")
    d = daemon(conf=SHORT, apps={app: unaware(app)})
    r = run(ctl, d, "hold", "--app", app, "--", "true")
    assert r.returncode == 1 and r.stderr.startswith(f"bgtaskctl: Cannot hold {app}: {app} is not running; start it with 'bgtaskctl launch {app}'"), r.stderr
    m = Manager(d.socket)
    m.launch(app)
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    hold = subprocess.Popen([ctl, "hold", "--socket", d.socket, "--app", app, "--", "sh", "-c", f"read x < {fifo}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: m.app(app)["assertions"], 5, "the hold")
    m.call("Terminate", appId=app)
    line = hold.stderr.readline()  # said at once, while the command still runs
    assert line.startswith(f"bgtaskctl: The hold on {app} was lost: terminating {app}"), line
    assert "(io.bgtaskd.Manager.HoldLost)." in line
    assert hold.poll() is None
    with open(fifo, "w") as f:
        f.write("x\n")
    assert hold.wait(10) == 1


def test_hold_needs_manager_permission(daemon, ctl):
    app = unique("Perm")
    d = daemon(conf=SHORT, apps={app: unaware(app)})
    Manager(d.socket).launch(app)
    for p in (d.root, d.runtime_dir):
        os.chmod(p, 0o755)
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", ctl, "hold", "--socket", d.socket,
                        "--app", app, "--", "true"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "Permission denied" in r.stderr and "(io.bgtaskd.Manager.PermissionDenied)" in r.stderr, r.stderr


# MARK: SPEC §3 budget, SPEC §6 tasks

def test_a_resume_for_an_assertion_keeps_the_budget(daemon, tmp_path):
    app = unique("Budget")
    events = tmp_path / "events.jsonl"
    conf = SHORT.replace("BackgroundTimeBudgetSec=1500ms", "BackgroundTimeBudgetSec=4s")
    d = daemon(conf=conf, apps={app: aware_manifest(app, events)})
    log = EventLog(events)
    call(d.socket, f"{MANAGER}.Launch", appId=app)
    log.wait_kind("did-become-active")
    call(d.socket, f"{MANAGER}.Background", appId=app)
    wait_state(d.socket, app, "suspended")
    # The budget keeps counting while it is suspended: wait until the daemon says a second of it is gone.
    wait_for(lambda: call(d.socket, f"{MANAGER}.GetApp", appId=app)["app"]["backgroundTimeRemainingUSec"] <= 3_000_000,
             10, "a second of the budget to pass")
    with __import__("support").RawClient(d.socket) as c:
        r = c.call("io.bgtaskd.App.BeginBackgroundTask", {"appId": app, "name": "late"})
        assert r["parameters"]["taskId"] > 0, r
        info = call(d.socket, f"{MANAGER}.GetApp", appId=app)["app"]
    # Resumed with what was left, not a fresh 4 s.
    assert info["state"] == "background" and info["backgroundTimeRemainingUSec"] <= 3_000_000, info


def test_a_task_due_in_the_foreground_waits_for_the_background(daemon, tmp_path):
    app = unique("Fetch")
    events = tmp_path / "events.jsonl"
    d = daemon(conf=SHORT, apps={app: aware_manifest(app, events)})
    log = EventLog(events)
    call(d.socket, f"{MANAGER}.Launch", appId=app)
    log.wait_kind("did-become-active")
    call(d.socket, "io.bgtaskd.App.SubmitTaskRequest", appId=app, identifier=f"{app}.refresh", kind="refresh")
    waiting = journal_entries(BGTASKD_APP=app, BGTASKD_REASON="waiting-for-background")
    wait_for(lambda: journal_entries(BGTASKD_APP=app, BGTASKD_REASON="waiting-for-background"), 5,
             "the task to wait for the background")
    assert "perform-task" not in log.kinds()
    call(d.socket, f"{MANAGER}.Background", appId=app)
    log.wait_kind("perform-task")
    kinds = log.kinds()
    assert kinds.index("did-enter-background") < kinds.index("perform-task"), kinds
    task = [e for e in log.events() if e["kind"] == "perform-task"][0]
    assert task["state"] == "background", task
    del waiting


# MARK: SPEC §5 unmetered on a metered network

def test_unmetered_on_a_metered_network_is_not_available_anywhere(daemon, ctl, tmp_path):
    app = unique("Metered")
    d = daemon(conf=SHORT, apps={app: aware_manifest(app, tmp_path / "e.jsonl")})
    call(d.socket, f"{MANAGER}.SetGlobalRefresh", mode="unmetered")
    call(d.socket, f"{MANAGER}.SetConditions", network="metered")
    info = call(d.socket, f"{MANAGER}.GetApp", appId=app)["app"]
    assert (info["refreshStatus"], info["refreshStatusReason"]) == ("denied", "network-metered"), info
    row = [line for line in run(ctl, d, "list").stdout.splitlines() if line.startswith(app)][0]
    assert "denied" in row.split() and "available" not in row, row
    refresh = run(ctl, d, "refresh")
    assert refresh.returncode == 0, refresh.stderr
    assert "network: metered" in refresh.stdout
    assert [line.split() for line in refresh.stdout.splitlines() if line.startswith(app)] == [
        [app, "on", "denied", "network-metered"]]
    status = run(ctl, d, "status", app, "-n", "0")
    assert "Refresh: on (status: denied, network-metered)" in status.stdout, status.stdout
    explain = run(ctl, d, "explain", app)
    assert "network-metered" in explain.stdout, explain.stdout
    call(d.socket, f"{MANAGER}.SetConditions", network="unmetered")
    assert call(d.socket, f"{MANAGER}.GetApp", appId=app)["app"]["refreshStatus"] == "available"


# MARK: SIGTERM (SPEC §9) and what the terminal says

def test_sigterm_terminates_the_apps_the_daemon_launched(daemon, tmp_path):
    running, frozen, aware = unique("Running"), unique("Frozen"), unique("Aware")
    events = tmp_path / "events.jsonl"
    d = daemon(conf=SHORT, apps={running: unaware(running), frozen: unaware(frozen),
                                 aware: aware_manifest(aware, events)})
    # Said once the daemon is ready (after it answers: READY=1 waits for the signal handlers).
    wait_for(lambda: "bgtaskd: freezer backend" in d.output(), 5, "the ready lines")
    out = d.output()
    assert f"bgtaskd: ready, listening on {d.socket}" in out, out
    assert "bgtaskd: freezer backend signal: FreezerBackend=signal" in out, out
    m = Manager(d.socket)
    pids = [m.launch(running), m.launch(frozen)]
    m.call("Background", appId=frozen)
    m.wait_state(frozen, "suspended")
    assert proc_stat(pids[1])[0] == "T"
    m.call("Launch", appId=aware)
    EventLog(events).wait_kind("did-become-active")
    pids.append(m.pid(aware))
    assert d.stop(signal.SIGTERM, timeout=10) == 0, d.output()
    assert "bgtaskd: stopping on signal 15: terminating the 3 apps it launched" in d.output(), d.output()
    assert d.output().rstrip().endswith("bgtaskd: stopped"), d.output()
    for pid in pids:
        assert gone(pid), (pid, proc_stat(pid))
    assert "will-terminate" in EventLog(events).kinds()
    reasons = {e["BGTASKD_APP"]: e["BGTASKD_REASON"] for e in journal_entries(
                   want=lambda es: sum(e.get("BGTASKD_REASON") == "daemon-stopping" for e in es) >= 3,
                   _PID=d.pid, BGTASKD_DECISION="terminate")
               if e.get("BGTASKD_REASON") == "daemon-stopping"}
    assert set(reasons) == {running, frozen, aware}, reasons


# MARK: explain after a restart

def test_explain_after_a_restart_and_its_causes(daemon, ctl):
    app = unique("Explained")
    d = daemon(conf=SHORT, apps={app: unaware(app) + "RefreshRestricted=yes\n"})
    m = Manager(d.socket)
    m.launch(app)
    m.call("Background", appId=app)
    m.wait_state(app, "suspended")
    # In the journal before the crash: the daemon hands entries to journald from a queue of its own
    # (batched, 500 µs), and a kill -9 in between loses what it had not sent yet.
    wait_for(lambda: journal_entries(BGTASKD_APP=app, BGTASKD_DECISION="suspend"), 30, "the suspension in the journal")
    d.stop(signal.SIGKILL)
    d2 = daemon(root=d.root)
    r = run(ctl, d2, "explain", app)
    assert r.returncode == 0, r.stderr
    assert "No recorded decisions explain it" not in r.stdout, r.stdout
    assert "suspend" in r.stdout and "no-assertions" in r.stdout, r.stdout
    assert "restricted" in r.stdout, r.stdout
    # Any Varlink client learns where the earlier decisions are.
    causes = call(d2.socket, f"{MANAGER}.Explain", appId=app)["causes"]
    assert any(f"journalctl -t bgtaskd BGTASKD_APP={app}" in c for c in causes), causes
    call(d2.socket, f"{MANAGER}.SetLowPowerMode", enabled=True)
    assert "restricted" in run(ctl, d2, "explain", app).stdout  # the most lasting cause
    other = unique("LowPower")
    (d2.config_dir / "apps.d" / f"{other}.app").write_text(unaware(other))
    assert run(ctl, d2, "reload").returncode == 0
    assert "low-power-mode" in run(ctl, d2, "explain", other).stdout


# MARK: the freezer backend in force, and a dry run

def test_cgroup_root_is_created_and_the_backend_is_said(daemon, ctl):
    parent = ScratchCgroup("-parent")
    with parent:
        root = os.path.join(parent.path, "bgtaskd")
        assert not os.path.exists(root)
        d = daemon(conf=SHORT.replace("FreezerBackend=signal", f"FreezerBackend=auto\nCgroupRoot={root}"))
        try:
            assert os.path.isdir(os.path.join(root, "apps"))
            stats = call(d.socket, f"{MANAGER}.Stats")["stats"]
            assert stats["freezerBackend"] == "cgroup" and root in stats["freezerBackendReason"], stats
            text = run(ctl, d, "stats").stdout
            assert "Freezer: cgroup" in text and root in text, text
            wait_for(lambda: "bgtaskd: freezer backend" in d.output(), 5, "the ready lines")
            assert f"bgtaskd: freezer backend cgroup: FreezerBackend=auto: apps run under {root}/apps" in d.output()
            started = journal_entries(_PID=d.pid)
            assert any("bgtaskd started" in e.get("MESSAGE", "") and "freezer backend cgroup" in e["MESSAGE"]
                       for e in started), started
        finally:
            d.stop()


class _MountRootCgroup:
    """A cgroup directly under the cgroup2 mount that the test does NOT create (the daemon does); on exit
    everything in it is killed and it is removed, whatever happened."""

    def __init__(self):
        self.name = f"bgtaskd-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.path = os.path.join(v2_mount(), self.name)

    def __enter__(self):
        assert not os.path.exists(self.path)
        return self

    def __exit__(self, *exc):
        if os.path.isdir(self.path):
            ScratchCgroup.__exit__(self)  # kills what is left, waits for it to empty, removes the tree


@pytest.mark.parametrize("spelling", ["filesystem", "hierarchy", "relative"])
def test_cgroup_root_directly_under_the_mount_is_created(daemon, spelling):
    """SPEC §9: a CgroupRoot= that does not exist yet, directly under the cgroup2 mount (whose root has no
    cgroup.events), is created; the three spellings name the same directory: the file-system path, the
    path in the hierarchy (as in /proc/PID/cgroup and systemd), relative to the mount."""
    with _MountRootCgroup() as cg:
        value = {"filesystem": cg.path, "hierarchy": "/" + cg.name, "relative": cg.name}[spelling]
        d = daemon(conf=SHORT.replace("FreezerBackend=signal", f"FreezerBackend=auto\nCgroupRoot={value}"))
        try:
            stats = call(d.socket, f"{MANAGER}.Stats")["stats"]
            assert stats["freezerBackend"] == "cgroup", stats
            assert cg.path + "/apps" in stats["freezerBackendReason"], stats
            assert os.path.isdir(os.path.join(cg.path, "apps"))
        finally:
            d.stop()


def test_adopt_from_reads_paths_as_cgroup_root_does(daemon):
    """AdoptFrom= and CgroupRoot= read a path the same way: `/NAME` is NAME in the cgroup2 hierarchy."""
    with ScratchCgroup() as scratch:
        name = os.path.basename(scratch.path)
        os.mkdir(os.path.join(scratch.path, "user.slice"))
        d = daemon(conf=SHORT + f"[Apps]\nAdopt=yes\nAdoptFrom=/{name}/user.slice\n")
        try:
            want = f"adoption: watching {scratch.path}/user.slice for apps started by others"
            entries = journal_entries(want=lambda es: any(e.get("MESSAGE") == want for e in es), _PID=d.pid)
            assert any(e.get("MESSAGE") == want for e in entries), [e.get("MESSAGE") for e in entries]
        finally:
            d.stop()


def test_dry_run_is_visible(daemon, ctl):
    app = unique("Dry")
    d = daemon(conf=SHORT.replace("FreezerBackend=signal", "FreezerBackend=none"), apps={app: unaware(app)})
    m = Manager(d.socket)
    pid = m.launch(app)
    m.call("Background", appId=app)
    m.wait_state(app, "suspended")
    assert proc_stat(pid)[0] != "T", "a dry run froze it"
    assert "Dry run" in run(ctl, d, "list").stdout
    assert "Dry run" in run(ctl, d, "stats").stdout
    assert "DRY RUN" in run(ctl, d, "status", app, "-n", "0").stdout
    wait_for(lambda: "bgtaskd: dry run" in d.output(), 5, "the dry-run line on the terminal")
    suspend = journal_entries(want=bool, BGTASKD_APP=app, BGTASKD_DECISION="suspend")
    assert suspend and "dry run" in suspend[-1]["MESSAGE"], suspend
    assert any("dry run" in e.get("MESSAGE", "") for e in journal_entries(
        want=lambda es: any("dry run" in e.get("MESSAGE", "") for e in es), _PID=d.pid, PRIORITY=4))


def test_a_dry_run_terminates_nothing_and_says_so(daemon, ctl):
    """FreezerBackend=none: `bgtaskctl terminate`, and the daemon's own SIGTERM, are decided and journaled
    but no process is signalled; the app is still listed with its process, which still runs."""
    app = unique("DryTerminate")
    d = daemon(conf=SHORT.replace("FreezerBackend=signal", "FreezerBackend=none"), apps={app: unaware(app)})
    m = Manager(d.socket)
    pid = m.launch(app)
    r = run(ctl, d, "terminate", app)
    assert r.returncode == 0, r.stderr
    entries = journal_entries(want=bool, BGTASKD_APP=app, BGTASKD_DECISION="terminate")
    assert entries[-1]["BGTASKD_REASON"] == "user-request" and "dry run" in entries[-1]["MESSAGE"], entries
    info = m.app(app)
    assert info["state"] == "active" and info["pid"] == pid, info
    # The daemon's SIGTERM ends it promptly without ending the app: the decision is journaled, the app left.
    assert d.stop() == 0
    stopping = journal_entries(want=lambda es: any(e.get("BGTASKD_REASON") == "daemon-stopping" for e in es),
                               BGTASKD_APP=app, BGTASKD_DECISION="terminate")
    assert "dry run" in stopping[-1]["MESSAGE"], stopping
    try:
        st = proc_stat(pid)
        assert st is not None and st[0] not in "ZXT", f"the app's process {pid} was signalled in a dry run: {st}"
    finally:
        os.kill(pid, signal.SIGKILL)


# MARK: CLI conventions (SPEC §12)

def test_cli_conventions(daemon, ctl, tmp_path):
    long_id = unique("AVeryLongApplicationIdentifierThatIsWide")
    d = daemon(conf=SHORT, apps={long_id: unaware(long_id)})
    r = run(ctl, d, "terminate", "org.example.Nope")
    assert (r.returncode, r.stderr) == (1, "bgtaskctl: App org.example.Nope not found; 'bgtaskctl list' shows the apps bgtaskd knows "
                                   "(io.bgtaskd.Manager.NoSuchApp).\n")
    r = run(ctl, d, "explain", "bad id!")
    assert r.returncode == 2 and r.stderr.startswith("bgtaskctl: Invalid app ID 'bad id!'"), r.stderr
    none = run(ctl, None, "list", "--socket", str(tmp_path / "none.sock"))
    assert none.returncode == 1 and none.stderr.count("\n") == 1, none.stderr
    assert str(tmp_path / "none.sock") in none.stderr and "Start it with" in none.stderr, none.stderr
    narrow = run(ctl, d, "list", env={"COLUMNS": "50"})
    assert long_id in narrow.stdout, narrow.stdout
    assert run(ctl, d, "list", "--no-pager").returncode == 0
    assert run(ctl, d, "--no-pager", "status", long_id).returncode == 3  # not running
    Manager(d.socket).launch(long_id)
    full = run(ctl, d, "status", long_id, "-n", "1")
    assert full.returncode == 0, full.stderr
    assert full.stdout.count("\n") >= 3 and len(full.stdout.split("Recent decisions (journal):\n")[1].splitlines()) == 1
    assert run(ctl, d, "status", long_id, "--lines", "0").returncode == 0
    assert run(ctl, d, "status", long_id, "-l", "0").returncode == 0
    assert run(ctl, d, "no-such-verb").returncode == 2


def test_list_running_and_refresh_overview(daemon, ctl):
    a, b, idle = unique("First"), unique("Second"), unique("Idle")
    d = daemon(conf=SHORT, apps={a: unaware(a), b: unaware(b), idle: unaware(idle)})
    m = Manager(d.socket)
    m.launch(a)
    m.launch(b)                      # exclusive: a goes to the background
    m.wait_state(a, "suspended")
    r = run(ctl, d, "list", "--running")
    assert r.returncode == 0, r.stderr
    rows = [line.split() for line in r.stdout.splitlines() if line.startswith("org.")]
    assert [row[0] for row in rows] == [b, a], r.stdout   # most recently used first; idle is not running
    assert rows[0][3] == "now" and rows[1][4] == "ago", rows
    assert r.stdout.splitlines()[0].split()[:4] == ["APP", "STATE", "PID", "LAST"]
    apps = json.loads(run(ctl, d, "list", "--running", "--json").stdout)["apps"]
    assert [x["appId"] for x in apps] == [b, a]
    m.call("Foreground", appId=a)
    rows = [line.split()[0] for line in run(ctl, d, "list", "--running").stdout.splitlines() if line.startswith("org.")]
    assert rows == [a, b]
    call(d.socket, f"{MANAGER}.SetRefreshPolicy", appId=b, enabled=False)
    table = run(ctl, d, "refresh")
    rows = {line.split()[0]: line.split()[1:] for line in table.stdout.splitlines() if line.startswith("org.")}
    assert rows[a] == ["on", "available", "-"] and rows[b] == ["off", "denied", "refresh-disabled"], table.stdout


def test_catalog_substitutes_fields_and_points_to_pages_that_exist():
    root = Path(__file__).resolve().parents[2]
    text = (root / "systemd" / "bgtaskd.catalog").read_text()
    # Every man: link names a page the repo ships (man/NAME.SECTION.scd; IntegrationTests/check-package.sh checks
    # that each resolves once the package is installed).
    links = set(re.findall(r"^Documentation: man:([A-Za-z0-9._-]+)\((\d)\)$", text, re.M))
    assert links, "the catalog names no man page"
    for name, section in links:
        assert (root / "man" / f"{name}.{section}.scd").exists(), f"man:{name}({section}) is not in man/"
    # journalctl -x replaces @FIELD@ with the entry's value, and with the field's NAME when the entry lacks
    # it (systemd's lookup_field): fields that some entries of a kind lack must not be written as @FIELD@.
    for optional in ("BGTASKD_REMAINING_USEC", "BGTASKD_PID", "BGTASKD_UID", "BGTASKD_TASK_ID"):
        assert f"@{optional}@" not in text, optional
    assert "µs" not in text
