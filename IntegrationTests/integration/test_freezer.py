"""Real suspension (issue 5): apps in their own cgroup v2 leaves, the cgroup freezer and the signal
freezer on real processes, termination, recovery after a daemon crash, memory pressure.

Needs root and a cgroup2 mount. The machine need not run systemd: every test points `CgroupRoot=` at a
cgroup it creates under the cgroup2 mount (found in /proc/self/mounts) and removes afterwards.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

import pytest

from freezer_support import (
    AWARE_APP, DaemonInCgroup, TICKER, Manager, Monitor, ScratchCgroup, alive, conf, free_port, http_answers,
    http_server_manifest, journal, manifest, memory_pressure, proc_stat, procs, read_events, wait_for,
    wait_journal, write_script,
)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to create cgroups")

PY = sys.executable
WEB = "org.test.Web"


def cpu_ticks(pids: list[int]) -> dict[int, int]:
    return {p: st[1] for p in pids if (st := proc_stat(p))}


def read_int(path) -> int:
    try:
        return int(open(path).read() or 0)
    except (FileNotFoundError, ValueError):
        return 0


# MARK: the cgroup freezer on python3 -m http.server

def test_http_server_stops_answering_after_the_grace_window_and_answers_after_foreground(daemon):
    # Generous bounds only (tests never fail on speed): the grace window is long enough for an answer
    # under load, and the freeze must come after it ends and within a second of its end.
    grace = 1.0
    with ScratchCgroup() as cg:
        port = free_port()
        d = daemon(conf=conf(cg.path, grace="1s"), apps={WEB: http_server_manifest(WEB, port)})
        m = Manager(d.socket)
        pid = m.launch(WEB)
        app_cg = cg.app(WEB)
        assert pid in procs(app_cg), "the app runs in apps/<app-id> under CgroupRoot="
        assert m.call("GetSettings")["settings"]["freezerBackend"] == "cgroup"
        wait_for(lambda: http_answers(port, 0.5), 10, "http.server to answer while active")

        t0 = time.monotonic()
        m.call("Background", appId=WEB)
        # Inside the grace window it still runs.
        assert http_answers(port, 0.5) and time.monotonic() - t0 < grace, \
            "the app must keep running during its grace window"
        frozen_at = wait_for(lambda: read_events(app_cg).get("frozen") == 1 and time.monotonic(),
                             grace + 5, "cgroup.events frozen 1")
        assert grace <= frozen_at - t0 <= grace + 1.0, f"frozen {frozen_at - t0:.3f} s after Background"
        # Not answering once frozen (a frozen server still accepts the TCP handshake, which the kernel
        # does, but never replies).
        assert not http_answers(port, 0.5)
        # Reported suspended once the daemon has seen the freeze done (its own cgroup.events watch).
        wait_for(lambda: m.state(WEB) == "suspended", 5, "the daemon to report it suspended")
        # Every process of the app: not running, and using no CPU.
        pids = procs(app_cg)
        assert pids and pid in pids
        before = cpu_ticks(pids)
        assert all(proc_stat(p)[0] in ("S", "D", "T") for p in pids), [proc_stat(p) for p in pids]
        time.sleep(0.3)  # the interval is the measurement: no CPU ticks gained while frozen (not running has no event)
        assert cpu_ticks(pids) == before

        m.call("Foreground", appId=WEB)
        assert read_events(app_cg).get("frozen") == 0, "a thaw is complete when the write returns"
        assert http_answers(port, 1.0), "answers again after Foreground"
        assert m.state(WEB) == "active"


# MARK: children started later

@pytest.mark.parametrize("backend", ["cgroup", "signal"])
def test_forked_child_of_a_frozen_app_is_frozen_too(daemon, tmp_path, backend):
    ticks = tmp_path / "ticks"
    ticks.mkdir()
    script = write_script(tmp_path, "ticker.py", TICKER)
    app = "org.test.Ticker"
    with ScratchCgroup() as cg:
        # The child is forked 0.2 s after launch: started later than the app, before the freeze.
        d = daemon(conf=conf(cg.path if backend == "cgroup" else None, backend, grace="300ms"),
                   apps={app: manifest(app, f"{PY} {script} {ticks} 0.2")})
        m = Manager(d.socket)
        assert m.call("GetSettings")["settings"]["freezerBackend"] == backend
        main = m.launch(app)
        child = wait_for(lambda: read_int(ticks / "child.pid"), 5, "the child to be forked")
        assert child != main
        files = [ticks / "main", ticks / "child"]
        first = [read_int(f) for f in files]
        wait_for(lambda: all(read_int(f) > n for f, n in zip(files, first)), 5, "both processes to tick")
        if backend == "cgroup":
            assert set(procs(cg.app(app))) == {main, child}

        m.call("Background", appId=app)
        m.wait_state(app, "suspended", timeout=3)
        if backend == "cgroup":
            wait_for(lambda: read_events(cg.app(app)).get("frozen") == 1, 1, "cgroup.events frozen 1")
        else:
            # SIGSTOP: both stopped ('T'), the child too.
            wait_for(lambda: all(proc_stat(p)[0] == "T" for p in (main, child)), 1, "both processes stopped")
        stopped = [read_int(f) for f in files]
        time.sleep(0.3)  # the interval is the measurement: no tick written while frozen (not running has no event)
        assert [read_int(f) for f in files] == stopped, "no process of a frozen app runs, the child included"

        m.call("Foreground", appId=app)
        try:
            wait_for(lambda: all(read_int(f) > n for f, n in zip(files, stopped)), 2, "both to tick again after Foreground")
            assert alive(main) and alive(child)
        finally:
            # Outside a test cgroup (signal backend) nothing else would stop them.
            for p in (main, child):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, signal.SIGKILL)


# MARK: recovery after a crash

def test_sigkill_daemon_with_two_frozen_apps_then_restart_leaves_nothing_frozen(daemon):
    a, b = "org.test.WebA", "org.test.WebB"
    with ScratchCgroup() as cg:
        apps = {a: http_server_manifest(a, free_port()), b: http_server_manifest(b, free_port())}
        d = daemon(conf=conf(cg.path, grace="100ms", kill="1s"), apps=apps)
        m = Manager(d.socket)
        m.launch(a)
        m.launch(b)  # exclusive: a goes to the background
        m.call("Background", appId=b)
        for app in (a, b):
            m.wait_state(app, "suspended", timeout=3)
            wait_for(lambda: read_events(cg.app(app)).get("frozen") == 1, 1, f"{app} frozen")
        pids = {app: procs(cg.app(app)) for app in (a, b)}
        assert all(pids.values())

        d.proc.kill()
        d.proc.wait()
        # Nobody thawed them: a SIGKILL runs no handler.
        assert all(read_events(cg.app(app)).get("frozen") == 1 for app in (a, b))

        since = time.time()
        d2 = daemon(root=d.root)
        for app in (a, b):
            # Frozen apps are killed without events: gone quickly, cgroup removed.
            wait_for(lambda: not any(alive(p) for p in pids[app]), 3, f"{app}'s processes to be gone")
            wait_for(lambda: not os.path.isdir(cg.app(app)), 3, f"{app}'s cgroup to be removed")
        entries = wait_journal(since, "BGTASKD_REASON=daemon-restarted", count=2)
        mine = [e for e in entries if e.get("_PID") == str(d2.pid)]
        assert {e["BGTASKD_APP"] for e in mine} == {a, b}, mine
        for e in mine:
            assert e["BGTASKD_DECISION"] == "terminate"
            assert e.get("BGTASKD_PREVIOUS_STATE") == "suspended"
            assert "frozen" in e["MESSAGE"] and "cgroup.kill" in e["MESSAGE"], e["MESSAGE"]
        # The new run manages the apps afresh.
        assert Manager(d2.socket).state(a) == "not-running"


def test_restart_terminates_running_leftovers_with_sigterm(daemon):
    app = "org.test.Sleeper"
    with ScratchCgroup() as cg:
        d = daemon(conf=conf(cg.path, kill="1s"), apps={app: manifest(app, "/bin/sleep 1000")})
        m = Manager(d.socket)
        pid = m.launch(app)
        d.proc.kill()
        d.proc.wait()
        since = time.time()
        d2 = daemon(root=d.root)
        wait_for(lambda: not alive(pid), 3, "the leftover to exit on SIGTERM")
        wait_for(lambda: not os.path.isdir(cg.app(app)), 3, "its cgroup to be removed")
        [entry] = [e for e in wait_journal(since, "BGTASKD_REASON=daemon-restarted") if e.get("_PID") == str(d2.pid)]
        assert entry["BGTASKD_APP"] == app and "SIGTERM" in entry["MESSAGE"]


def test_signal_backend_restart_kills_what_the_previous_run_left_stopped(daemon):
    app = "org.test.Stopped"
    d = daemon(conf=conf(None, "signal", grace="100ms"), apps={app: manifest(app, "/bin/sleep 1000")})
    m = Manager(d.socket)
    pid = m.launch(app)
    try:
        m.call("Background", appId=app)
        m.wait_state(app, "suspended")  # answered after the freeze was performed (one serial queue)
        wait_for(lambda: proc_stat(pid)[0] == "T", 2, "SIGSTOP")
        d.proc.kill()
        d.proc.wait()
        assert proc_stat(pid)[0] == "T", "nobody continued it"
        since = time.time()
        d2 = daemon(root=d.root)
        wait_for(lambda: not alive(pid), 2, "the stopped leftover to be killed")
        [entry] = [e for e in wait_journal(since, "BGTASKD_REASON=daemon-restarted") if e.get("_PID") == str(d2.pid)]
        assert entry["BGTASKD_APP"] == app and entry["BGTASKD_PID"] == str(pid)
        assert "SIGSTOP" in entry["MESSAGE"]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_sigterm_ends_every_app_it_started_frozen_or_not(daemon):
    """SPEC §9 as amended (issue 12): SIGTERM terminates the apps this daemon started; none is left
    running or frozen (the web server of "Try it" no longer keeps its port)."""
    with ScratchCgroup() as cg:
        port = free_port()
        d = daemon(conf=conf(cg.path, grace="100ms"), apps={WEB: http_server_manifest(WEB, port)})
        m = Manager(d.socket)
        pid = m.launch(WEB)
        m.call("Background", appId=WEB)
        wait_for(lambda: read_events(cg.app(WEB)).get("frozen") == 1, 3, "frozen")
        assert d.stop(signal.SIGTERM) == 0
        assert not alive(pid)
        assert not procs(cg.app(WEB)) if os.path.isdir(cg.app(WEB)) else True
        assert not http_answers(port, 0.5)


# MARK: termination

def test_terminate_suspended_app_delivers_no_event_running_app_gets_will_terminate(daemon, tmp_path):
    pytest.importorskip("varlink")
    script = write_script(tmp_path, "aware.py", AWARE_APP)
    s, r = "org.test.AwareS", "org.test.AwareR"
    log_s, log_r = tmp_path / "s.log", tmp_path / "r.log"
    with ScratchCgroup() as cg:
        apps = {s: manifest(s, f"{PY} {script} {log_s} 0", aware=True),
                r: manifest(r, f"{PY} {script} {log_r} 1", aware=True)}
        d = daemon(conf=conf(cg.path, will_terminate="2s"), apps=apps)
        m = Manager(d.socket)

        def kinds(log):
            return [line.strip() for line in log.read_text().splitlines()] if log.exists() else []

        pid = m.launch(s)
        m.wait_state(s, "active")
        wait_for(lambda: "did-become-active" in kinds(log_s), 3, "did-become-active")
        m.call("Background", appId=s)
        m.wait_state(s, "suspended")
        wait_for(lambda: read_events(cg.app(s)).get("frozen") == 1, 1, "frozen")
        seen = kinds(log_s)
        assert seen[-1] == "did-enter-background", seen
        m.call("Terminate", appId=s)
        m.wait_state(s, "not-running")
        wait_for(lambda: not alive(pid), 2, "the suspended app to be killed")
        assert kinds(log_s) == seen, "a suspended app is terminated without any event"
        wait_for(lambda: not os.path.isdir(cg.app(s)), 2, "its cgroup to be removed")

        pid = m.launch(r)
        m.wait_state(r, "active")
        wait_for(lambda: "did-become-active" in kinds(log_r), 3, "did-become-active")
        m.call("Terminate", appId=r)
        m.wait_state(r, "not-running", timeout=5)
        assert kinds(log_r)[-2:] == ["will-terminate", "exiting"], kinds(log_r)
        assert not alive(pid)


def test_hundred_launch_terminate_cycles_leave_no_cgroup_and_no_process(daemon):
    app = "org.test.Cycle"
    # The main process leaves a child that ignores SIGTERM: terminating the app must not leave it.
    exec_line = "/bin/sh -c \"trap '' TERM; /bin/sleep 1000 & exec /bin/sleep 1000\""
    with ScratchCgroup() as cg:
        d = daemon(conf=conf(cg.path, grace="20ms", kill="500ms"), apps={app: manifest(app, exec_line)})
        m = Manager(d.socket)
        seen: set[int] = set()
        for i in range(100):
            m.launch(app)
            wait_for(lambda: len(procs(cg.app(app))) == 2, 3, "the app and its child")
            seen.update(procs(cg.app(app)))
            if i % 2:
                # Half of them frozen first: terminated with cgroup.kill.
                m.call("Background", appId=app)
                m.wait_state(app, "suspended", timeout=3)
            m.call("Terminate", appId=app)
            m.wait_state(app, "not-running", timeout=3)
        assert len(seen) == 200
        wait_for(lambda: cg.app_dirs() == [], 3, "no app cgroup left")
        wait_for(lambda: not any(alive(p) for p in seen), 3, "no process left")
        assert d.alive()


# MARK: memory pressure (SPEC §8)

def test_memory_pressure_kills_suspended_apps_oldest_first(daemon):
    """Real pressure: a process thrashing its page cache in a small memory cgroup of its own stalls on
    memory, which PSI counts; the daemon's trigger is PressureThreshold=1% of a 2 s window (the
    kernel only takes multiples of 2 s without CAP_SYS_RESOURCE, which this machine's root lacks)."""
    old, new, active = "org.test.Old", "org.test.New", "org.test.Active"
    memory = "PressureKill=yes\nPressureThreshold=1%\nPressureWindowSec=2s"
    with ScratchCgroup() as cg:
        apps = {x: manifest(x, "/bin/sleep 1000") for x in (old, new, active)}
        d = daemon(conf=conf(cg.path, grace="100ms", memory=memory), apps=apps)
        m = Manager(d.socket)
        since = time.time()
        m.launch(old)
        m.launch(new)      # old goes to the background, then suspended
        m.launch(active)   # new goes to the background, then suspended
        m.wait_state(old, "suspended")
        m.wait_state(new, "suspended")
        active_pid = m.pid(active)
        monitor = Monitor(d.socket)
        try:
            with memory_pressure():
                wait_for(lambda: m.state(new) == "not-running", 90, "both suspended apps to be terminated",
                         interval=0.05)
            terminated = [x for x in monitor.poll() if x["decision"] == "terminate"]
        finally:
            monitor.close()
        # Each termination is decided (the kill) and then reported (the exit): keep the first of each app.
        order = list(dict.fromkeys((x["appId"], x["reason"]) for x in terminated))
        assert order == [(old, "memory-pressure"), (new, "memory-pressure")], terminated
        assert m.state(old) == "not-running"
        assert m.state(active) == "active" and alive(active_pid), "an active app is never terminated"
        warning = [e for e in journal(since) if "memory-warning" in e.get("MESSAGE", "")]
        kills = journal(since, "BGTASKD_REASON=memory-pressure", "BGTASKD_DECISION=terminate")
        assert warning and kills
        assert int(warning[0]["__MONOTONIC_TIMESTAMP"]) < int(kills[0]["__MONOTONIC_TIMESTAMP"]), \
            "memory-warning comes first"


# MARK: apps that check in from a process the daemon did not start

def _start_by_hand(d, script: str, app_id: str, log, exit_on_terminate: bool = True):
    import subprocess
    env = dict(os.environ, BGTASKD_APP_ID=app_id, BGTASKD_SOCKET=d.socket)
    return subprocess.Popen([PY, script, str(log), "1" if exit_on_terminate else "0"], env=env,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def test_app_started_by_hand_is_moved_into_its_cgroup_and_frozen_there(daemon, tmp_path):
    pytest.importorskip("varlink")
    script = write_script(tmp_path, "aware.py", AWARE_APP)
    app = "org.test.ByHand"
    with ScratchCgroup() as cg:
        d = daemon(conf=conf(cg.path), apps={app: manifest(app, "/bin/false", aware=True)})
        m = Manager(d.socket)
        proc = _start_by_hand(d, script, app, tmp_path / "app.log")
        try:
            m.wait_state(app, "active", timeout=10)
            assert m.pid(app) == proc.pid
            assert procs(cg.app(app)) == [proc.pid], "checked in from outside: moved into apps/<app-id>"
            m.call("Background", appId=app)
            m.wait_state(app, "suspended")
            wait_for(lambda: read_events(cg.app(app)).get("frozen") == 1, 1, "frozen by the cgroup freezer")
            m.call("Foreground", appId=app)
            assert read_events(cg.app(app)).get("frozen") == 0
            m.call("Terminate", appId=app)
            m.wait_state(app, "not-running")
            assert proc.wait(5) == 0
            wait_for(lambda: not os.path.isdir(cg.app(app)), 2, "its cgroup to be removed")
        finally:
            proc.kill()
            proc.wait()


def test_app_that_cannot_be_moved_into_a_cgroup_is_managed_with_signals(daemon, tmp_path):
    pytest.importorskip("varlink")
    script = write_script(tmp_path, "aware.py", AWARE_APP)
    app = "org.test.Unmovable"
    since = time.time()
    with ScratchCgroup() as cg:
        d = daemon(conf=conf(cg.path), apps={app: manifest(app, "/bin/false", aware=True)})
        m = Manager(d.socket)
        # No cgroup can be created below apps/ any more: the daemon cannot move the app.
        with open(os.path.join(cg.apps, "cgroup.max.descendants"), "w") as f:
            f.write("0")
        proc = _start_by_hand(d, script, app, tmp_path / "app.log")
        try:
            m.wait_state(app, "active", timeout=10)
            assert not os.path.isdir(cg.app(app))
            m.call("Background", appId=app)
            m.wait_state(app, "suspended")
            wait_for(lambda: proc_stat(proc.pid)[0] == "T", 1, "SIGSTOP")
            m.call("Foreground", appId=app)
            wait_for(lambda: proc_stat(proc.pid)[0] != "T", 1, "SIGCONT")
            entries = wait_journal(since, f"BGTASKD_APP={app}", "BGTASKD_PID=" + str(proc.pid))
            assert any("managing it with signals" in e["MESSAGE"] for e in entries), entries
        finally:
            proc.kill()
            proc.wait()


# MARK: choosing the backend and the subtree

def test_auto_in_a_delegated_cgroup_moves_the_daemon_into_a_leaf_and_apps_under_apps(bin_dir, journald):
    """What systemd's Delegate=yes gives: the daemon starts in a cgroup of its own (here one made for
    the test, no CgroupRoot=); FreezerBackend=auto takes it, moves the daemon into `daemon/` (the
    no-internal-processes rule) and runs apps in `apps/<app-id>`."""
    app = "org.test.Sleeper"
    with ScratchCgroup() as cg:
        d = DaemonInCgroup(bin_dir, cg.path, conf(None, "auto"), {app: manifest(app, "/bin/sleep 1000")})
        try:
            m = Manager(d.socket)
            assert m.call("GetSettings")["settings"]["freezerBackend"] == "cgroup"
            assert procs(os.path.join(cg.path, "daemon")) == [d.pid]
            with open(os.path.join(cg.path, "cgroup.procs")) as f:
                assert f.read().split() == []
            pid = m.launch(app)
            assert procs(cg.app(app)) == [pid]
            m.call("Background", appId=app)
            wait_for(lambda: read_events(cg.app(app)).get("frozen") == 1, 2, "frozen")
        finally:
            d.stop()
        # SIGTERM ended it (SPEC §9, issue 12): nothing is left in its cgroup, frozen or not.
        assert not alive(pid)
        assert read_events(cg.app(app)).get("frozen") in (None, 0) and not procs(cg.app(app)) if \
            os.path.isdir(cg.app(app)) else True


def test_auto_in_the_root_cgroup_without_cgroup_root_uses_signals(daemon):
    with open("/proc/self/cgroup") as f:
        if "0::/\n" not in f.read():
            pytest.skip("the tests do not run in the root cgroup here")
    d = daemon(conf=conf(None, "auto"))
    assert Manager(d.socket).call("GetSettings")["settings"]["freezerBackend"] == "signal"


@pytest.mark.parametrize("delegated", [False, True])
def test_a_systemd_unit_cgroup_is_taken_only_when_delegated(bin_dir, journald, delegated):
    """A cgroup named like a systemd unit is used only if systemd marked it delegated (the
    `trusted.delegate` attribute that Delegate=yes sets); otherwise auto falls back to signals."""
    with ScratchCgroup(suffix=".service") as cg:
        if delegated:
            os.setxattr(cg.path, "trusted.delegate", b"1")
        d = DaemonInCgroup(bin_dir, cg.path, conf(None, "auto"))
        try:
            backend = Manager(d.socket).call("GetSettings")["settings"]["freezerBackend"]
            assert backend == ("cgroup" if delegated else "signal")
            assert os.path.isdir(os.path.join(cg.path, "daemon")) == delegated
        finally:
            d.stop()
