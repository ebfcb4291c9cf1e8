"""Crash loop (issue 11, point 4): kill -9 at random moments under load, restart, check.

Several clients at once change settings and task requests (SetLowPowerMode, SetGlobalRefresh,
SetRefreshPolicy, SubmitTaskRequest, CancelTaskRequest), each on its own connection and each owning its
own keys (so that, per key, the order of acknowledgements is the order of changes), while apps are launched
and sent to the background (frozen by the cgroup freezer). The daemon is killed with SIGKILL at a random
moment, BGTASKD_KILLS times (30 in `make test`, 200 in `make soak`). After each restart:
- every acknowledged change is in effect, in the daemon's answers and in refresh.json (a key may instead
  hold the value of its client's one call in flight at the kill: it may or may not have been applied);
- refresh.json parses, and no temporary file is left once the daemon runs;
- no app of the killed daemon is left frozen (recovery thaws and kills them), and none is left at all.
"""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time

from freezer_support import ScratchCgroup, conf, manifest, procs, read_events as _read_events, wait_for
from support import Closed, RawClient

APP = "io.bgtaskd.App"
MANAGER = "io.bgtaskd.Manager"
A = "org.test.CrashA"
B = "org.test.CrashB"
FROZEN = [f"org.test.Frozen{i}" for i in range(3)]
IDS = {A: [f"{A}.p{i}" for i in range(5)], B: [f"{B}.p{i}" for i in range(5)]}
FAR = 10 * 24 * 3600 * 1_000_000  # µs: nothing becomes due, no app is launched for a task


def read_events(path: str) -> dict:
    """cgroup.events; {} when the cgroup is gone or going (ENODEV while it is removed)."""
    try:
        return _read_events(path)
    except OSError:
        return {}


def task_app(app_id: str) -> str:
    return (f"[App]\nID={app_id}\nExec=/bin/sleep 1000\nLifecycleAware=no\nBackgroundModes=processing\n"
            f"PermittedTaskIdentifiers={' '.join(IDS[app_id])}\n")


class Writer(threading.Thread):
    """One client: sends one change at a time, remembers what was acknowledged and what was in flight."""

    def __init__(self, path: str, change, seed: int):
        super().__init__(daemon=True)
        self.path, self.change, self.rng = path, change, random.Random(seed)
        self.acked: list[tuple] = []  # (key, value), in order
        self.in_flight: tuple | None = None
        self.refused = 0
        self.error: str | None = None

    def run(self):
        try:
            c = RawClient(self.path, timeout=30)
        except OSError:
            return
        try:
            while True:
                method, params, key, value = self.change(self.rng)
                self.in_flight = (key, value)
                c.send_call(method, params)
                reply = c.recv_message(timeout=30)
                if "error" in reply:
                    # Refusals change nothing (refresh denied refuses submissions).
                    if reply["error"] != f"{APP}.Unavailable":
                        self.error = f"{method} {params}: {reply}"
                        return
                    self.refused += 1
                else:
                    self.acked.append((key, value))
                self.in_flight = None
        except (Closed, OSError, TimeoutError):
            return  # the daemon was killed
        finally:
            c.close()


def lpm(rng):
    on = rng.random() < 0.3
    return f"{MANAGER}.SetLowPowerMode", {"enabled": on}, ("lowPower",), on


def global_mode(rng):
    mode = rng.choice(["on", "on", "on", "unmetered", "off"])
    return f"{MANAGER}.SetGlobalRefresh", {"mode": mode}, ("global",), mode


def policy(app_id):
    def change(rng):
        on = rng.random() < 0.7
        return f"{MANAGER}.SetRefreshPolicy", {"appId": app_id, "enabled": on}, ("app", app_id), on
    return change


def tasks(app_id):
    def change(rng):
        identifier = rng.choice(IDS[app_id])
        if rng.random() < 0.75:
            begin = int(time.time() * 1e6) + FAR + rng.randrange(1_000_000_000)
            params = {"appId": app_id, "identifier": identifier, "kind": "processing", "earliestBeginUSec": begin}
            return f"{APP}.SubmitTaskRequest", params, ("pending", app_id, identifier), begin
        return (f"{APP}.CancelTaskRequest", {"appId": app_id, "identifier": identifier},
                ("pending", app_id, identifier), None)
    return change


def call(path: str, method: str, **params) -> dict:
    with RawClient(path, timeout=10) as c:
        reply = c.call(method, params, timeout=10)
    assert "error" not in reply, (method, params, reply)
    return reply.get("parameters", {})


def observed(path: str) -> dict:
    s = call(path, f"{MANAGER}.GetSettings")["settings"]
    got = {("lowPower",): s["lowPowerMode"], ("global",): s["backgroundAppRefresh"]}
    for app_id in (A, B):
        got[("app", app_id)] = call(path, f"{MANAGER}.GetApp", appId=app_id)["app"]["refreshSetting"] == "on"
        pending = {r["identifier"]: r["earliestBeginUSec"] for r in call(path, f"{APP}.PendingTaskRequests", appId=app_id)["requests"]}
        for identifier in IDS[app_id]:
            got[("pending", app_id, identifier)] = pending.get(identifier)
    return got


def in_file(state_dir) -> dict:
    data = json.loads((state_dir / "refresh.json").read_text())
    got = {("lowPower",): data.get("lowPowerMode", False), ("global",): data.get("backgroundAppRefresh", "on")}
    apps = data.get("apps", {})
    for app_id in (A, B):
        entry = apps.get(app_id, {})
        got[("app", app_id)] = entry.get("refresh", True)
        pending = {r["identifier"]: r.get("earliestBeginUSec") for r in entry.get("requests", [])}
        for identifier in IDS[app_id]:
            got[("pending", app_id, identifier)] = pending.get(identifier)
    return got


def test_kill9_under_load_loses_no_acknowledged_change_and_leaves_no_app_frozen(daemon):
    kills = int(os.environ.get("BGTASKD_KILLS", "30"))
    window = float(os.environ.get("BGTASKD_KILL_WINDOW", "0.15"))  # s: the kill comes within it
    rng = random.Random(int(os.environ.get("BGTASKD_SEED", "11")))
    with ScratchCgroup() as cg:
        apps = {A: task_app(A), B: task_app(B), **{f: manifest(f, "/bin/sleep 1000") for f in FROZEN}}
        text = conf(cg.path, grace="20ms", kill="300ms") + "[Refresh]\nMinimumRefreshIntervalSec=0\n"
        d = daemon(conf=text, apps=apps)
        root = d.root
        model: dict = {("lowPower",): False, ("global",): "on", ("app", A): True, ("app", B): True}
        for app_id in (A, B):
            for identifier in IDS[app_id]:
                model[("pending", app_id, identifier)] = None
        acknowledged = refused = in_flight_kept = frozen_at_kill = apps_at_kill = 0
        t_start = time.monotonic()
        for round_no in range(kills):
            changes = [lpm, global_mode, policy(A), policy(B), tasks(A), tasks(B)]
            writers = [Writer(d.socket, ch, rng.randrange(1 << 30)) for ch in changes]
            for w in writers:
                w.start()
            # Apps to be frozen at the kill: launched, then sent to the background (frozen after 20 ms).
            for app_id in rng.sample(FROZEN, rng.randrange(len(FROZEN) + 1)):
                try:
                    call(d.socket, f"{MANAGER}.Launch", appId=app_id)
                    call(d.socket, f"{MANAGER}.Background", appId=app_id)
                except (AssertionError, OSError, Closed, TimeoutError):
                    pass  # e.g. still terminating from the previous round's recovery
            time.sleep(rng.uniform(0.0, window))  # the random moment of the kill is the scenario
            d.proc.send_signal(signal.SIGKILL)
            d.proc.wait()
            for w in writers:
                w.join(30)
                assert not w.is_alive() and w.error is None, w.error
            for app_dir in cg.app_dirs():
                if procs(cg.app(app_dir)):
                    apps_at_kill += 1
                    frozen_at_kill += read_events(cg.app(app_dir)).get("frozen", 0)
            left = procs(cg.apps)
            for w in writers:
                for key, value in w.acked:
                    model[key] = value
                acknowledged += len(w.acked)
                refused += w.refused
            flight = {w.in_flight[0]: w.in_flight[1] for w in writers if w.in_flight is not None}

            d = daemon(conf=text, root=root)
            # Recovery ran before the daemon answered: nothing of the killed run is frozen any more.
            for app_dir in cg.app_dirs():
                assert read_events(cg.app(app_dir)).get("frozen", 0) == 0, f"round {round_no}: {app_dir} left frozen"
            got = observed(d.socket)
            from_file = in_file(root / "state")
            for key, want in model.items():
                if got[key] != want:
                    assert key in flight and got[key] == flight[key], \
                        f"round {round_no}: {key} is {got[key]!r}, acknowledged {want!r} (in flight: {flight.get(key)!r})"
                    model[key] = got[key]
                    in_flight_kept += 1
                assert from_file[key] == got[key], f"round {round_no}: refresh.json has {key} = {from_file[key]!r}, the daemon {got[key]!r}"
            assert not (root / "state" / ".refresh.json.tmp").exists()
            # The killed run's apps go away (a frozen one at once, a running one after SIGTERM).
            wait_for(lambda: not (set(left) & set(procs(cg.apps))), 10, f"round {round_no}: apps of the killed daemon are gone")
            for pid in left:
                try:
                    with open(f"/proc/{pid}/stat") as f:
                        assert f.read().split(") ")[1][0] not in "tT", f"round {round_no}: {pid} left stopped"
                except FileNotFoundError:
                    pass
        took = time.monotonic() - t_start
        d.stop()
    assert acknowledged >= kills, acknowledged
    print(f"{kills} kills in {took:.0f} s: {acknowledged} acknowledged changes, 0 lost, {in_flight_kept} in-flight "
          f"changes applied, {refused} refused; {apps_at_kill} apps running at the kills ({frozen_at_kill} frozen), "
          "none left frozen or running")
