"""The signal freezer tells the truth (FreezerBackend=signal, SPEC §9): an app is reported `suspended`
(Monitor's `suspend` decision, GetApp/ListApps, the journal) only once every one of its processes is
stopped, and reported resumed only when none of them is stopped any more.

The app is a shell with six busy children: on two CPUs a SIGSTOP does not stop them all at once (each
must be scheduled to take the stop), so a daemon that answered right after kill(2) is caught in the act.
The first test runs unprivileged as well as root (no cgroup is involved); the second, the same for an
app started by others and adopted (SPEC §13: its cgroup frozen with cgroup.freeze, reported once
cgroup.events says frozen 1), needs root for its cgroups."""

from __future__ import annotations

import os
import time

from freezer_support import Manager, Monitor, conf, manifest, read_events, wait_for, write_script
from test_device import data_dirs, entry, hierarchy, start_in  # noqa: F401 (fixtures)

APP = "org.test.Busy"
CYCLES = 50
BUSY = """\
for i in 1 2 3 4 5 6; do
  ( while :; do :; done ) &
done
wait
"""


def app_processes(root: int) -> dict[int, str]:
    """pid → state letter of `root`, every process in the session it leads and its descendants
    (what the signal freezer stops)."""
    parent, state, session = {}, {}, {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                text = f.read()
        except (FileNotFoundError, ProcessLookupError):
            continue
        fields = text[text.rindex(")") + 2:].split()
        pid = int(name)
        state[pid], parent[pid], session[pid] = fields[0], int(fields[1]), int(fields[3])
    members = {root} | {p for p, s in session.items() if s == root}
    grew = True
    while grew:
        grew = False
        for p, pp in parent.items():
            if p not in members and pp in members:
                members.add(p)
                grew = True
    return {p: state[p] for p in members if p in state}


def not_stopped(root: int) -> dict[int, str]:
    """The processes of the app that are neither stopped (T, t) nor gone (Z, X, vanished)."""
    return {p: s for p, s in app_processes(root).items() if s not in ("T", "t", "Z", "X")}


def stopped(root: int) -> dict[int, str]:
    return {p: s for p, s in app_processes(root).items() if s in ("T", "t")}


def next_decision(monitor: Monitor, kind: str, timeout: float = 10.0, app: str = APP) -> dict:
    """Reads the Monitor stream until the app's next `kind` decision (returned at once when it arrives)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        reply = monitor.client.recv_message(timeout=max(0.0, deadline - time.monotonic()))
        if "error" in reply:
            raise AssertionError(f"Monitor failed: {reply}")
        d = reply["parameters"]["decision"]
        monitor.decisions.append(d)
        if d.get("appId") == app and d["decision"] == kind:
            return d
    raise AssertionError(f"no {kind} decision for {app} within {timeout} s: {monitor.decisions[-5:]}")


def test_signal_backend_reports_suspended_only_when_every_process_is_stopped(daemon, tmp_path):
    script = write_script(tmp_path, "busy.sh", BUSY)
    d = daemon(conf=conf(None, "signal", grace="50ms"), apps={APP: manifest(APP, f"/bin/sh {script}")})
    m = Manager(d.socket)
    assert m.call("GetSettings")["settings"]["freezerBackend"] == "signal"
    monitor = Monitor(d.socket)
    m.call("Stats")  # the Monitor call was read before this one: the stream is registered
    pid = m.launch(APP)
    wait_for(lambda: len(app_processes(pid)) == 7, 5, "the shell and its six busy children")
    early_suspends, early_resumes = [], []
    try:
        for cycle in range(CYCLES):
            m.call("Background", appId=APP)
            if cycle % 2 == 0:
                # The moment Monitor says so.
                next_decision(monitor, "suspend")
                running = not_stopped(pid)
            else:
                # The moment GetApp says so (polled without a pause: each call is the next look).
                deadline = time.monotonic() + 10
                while m.state(APP) != "suspended":
                    assert time.monotonic() < deadline, f"cycle {cycle}: {APP} never reported suspended"
                running = not_stopped(pid)
                next_decision(monitor, "suspend")
            if running:
                early_suspends.append((cycle, running))
            assert m.state(APP) == "suspended"
            m.call("Foreground", appId=APP)
            next_decision(monitor, "resume")
            still = stopped(pid)
            if still:
                early_resumes.append((cycle, still))
            m.wait_state(APP, "active")
        assert not early_suspends, (
            f"{len(early_suspends)} of {CYCLES} suspensions were reported while processes still ran "
            f"(cycle, pid → state): {early_suspends[:5]}")
        assert not early_resumes, (
            f"{len(early_resumes)} of {CYCLES} resumptions were reported while processes were still stopped: "
            f"{early_resumes[:5]}")
        # Every suspension was journaled too, once each.
        from support import journal_entries
        suspends = journal_entries(want=lambda e: len(e) >= CYCLES, BGTASKD_APP=APP, BGTASKD_DECISION="suspend")
        assert len(suspends) == CYCLES, f"{len(suspends)} suspend entries in the journal, expected {CYCLES}"
    finally:
        monitor.close()
        m.call("Terminate", appId=APP)


def test_adopted_instance_is_reported_suspended_only_when_its_cgroup_is_frozen(daemon, data_dirs, hierarchy, tmp_path):
    scratch, slice_dir = hierarchy
    one, _ = data_dirs
    app = "org.example.Busy"
    script = write_script(tmp_path, "busy.sh", BUSY)
    (one / "applications" / f"{app}.desktop").write_text(entry("Busy", f"/bin/sh {script}"))
    d = daemon(conf=f"[Apps]\nDataDirs={one}\nAdoptFrom={scratch}/user.slice\n"
                    "[Daemon]\nFreezerBackend=signal\n[Lifecycle]\nDidEnterBackgroundTimeoutSec=50ms\n")
    scope = os.path.join(slice_dir, f"app-test-{app}-1.scope")
    os.mkdir(scope)
    m = Manager(d.socket)
    monitor = Monitor(d.socket)
    m.call("Stats")
    start_in(scope, "/bin/sh", script)
    m.wait_state(app, "active", timeout=10)
    wait_for(lambda: len(open(f"{scope}/cgroup.procs").read().split()) == 7, 5, "the shell and its six children")
    cycles, early = 30, []
    try:
        for cycle in range(cycles):
            m.call("Background", appId=app)
            next_decision(monitor, "suspend", app=app)
            events = read_events(scope)
            if events.get("frozen") != 1:
                early.append((cycle, events))
            m.call("Foreground", appId=app)
            next_decision(monitor, "resume", app=app)
            m.wait_state(app, "active")
            assert read_events(scope).get("frozen") == 0, f"cycle {cycle}: resumed but still frozen"
        assert not early, f"{len(early)} of {cycles} suspensions reported before cgroup.events said frozen 1: {early[:5]}"
    finally:
        monitor.close()
