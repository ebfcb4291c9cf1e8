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

The second test keeps the same promise where it is hardest to keep: a hundred apps launched (most of them
frozen, eight lifecycle-aware ones running tasks by RunTaskNow, whose answer waits for the file) and one
client alternating SetGlobalRefresh, SetLowPowerMode and SetConditions as fast as the answers come.
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


# MARK: a hundred apps, most frozen, and policy calls as fast as the replies come

HERD = [f"org.test.Herd{i:03d}" for i in range(100)]
RUNNERS = HERD[:8]  # launched and kept in the background, their task requests run by RunTaskNow


def herd_app(app_id: str, testapp: str) -> str:
    """A sleeper, or for a runner the test app (lifecycle-aware: it checks in, acknowledges, completes its
    task at once)."""
    aware_apps = int(os.environ.get("BGTASKD_HERD_AWARE", str(len(RUNNERS))))
    is_aware = app_id in RUNNERS or HERD.index(app_id) < aware_apps
    exec_line = f"{testapp} --output /dev/null --register-task {app_id}.t" if is_aware else "/bin/sleep 1000"
    aware = "yes" if is_aware else "no"
    return (f"[App]\nID={app_id}\nExec={exec_line}\nLifecycleAware={aware}\nBackgroundModes=processing\n"
            f"PermittedTaskIdentifiers={app_id}.t\n")


class PolicyWriter(threading.Thread):
    """One client alternating SetGlobalRefresh, SetLowPowerMode and SetConditions as fast as the replies
    come; remembers each acknowledged value and the one call in flight."""

    def __init__(self, path: str, seed: int):
        super().__init__(daemon=True)
        self.path, self.rng = path, random.Random(seed)
        self.acked: list[tuple] = []
        self.in_flight: tuple | None = None
        self.error: str | None = None

    def change(self, n: int):
        if n % 3 == 0:
            mode = "off" if (n // 3) % 2 == 0 else self.rng.choice(["on", "unmetered"])
            return f"{MANAGER}.SetGlobalRefresh", {"mode": mode}, [(("global",), mode)]
        if n % 3 == 1:
            on = (n // 3) % 2 == 0
            return f"{MANAGER}.SetLowPowerMode", {"enabled": on}, [(("lowPower",), on)]
        power, network = self.rng.random() < 0.5, self.rng.choice(["none", "metered", "unmetered"])
        return (f"{MANAGER}.SetConditions", {"onExternalPower": power, "network": network},
                [(("power",), power), (("network",), network)])

    def run(self):
        try:
            c = RawClient(self.path, timeout=30)
        except OSError:
            return
        n = self.rng.randrange(3)
        try:
            while True:
                method, params, values = self.change(n)
                n += 1
                self.in_flight = values
                c.send_call(method, params)
                reply = c.recv_message(timeout=30)
                if "error" in reply:
                    self.error = f"{method} {params}: {reply}"
                    return
                self.acked += values
                self.in_flight = None
        except (Closed, OSError, TimeoutError):
            return
        finally:
            c.close()


class TaskRunner(threading.Thread):
    """Submits a request for each runner app and runs it at once (RunTaskNow), over and over. A RunTaskNow
    answered without error is answered once the file has the request gone: `ran` holds the runner apps
    whose last answered call was such a RunTaskNow, `in_flight` the app of the call not answered."""

    def __init__(self, path: str):
        super().__init__(daemon=True)
        self.path = path
        self.runs = 0
        self.ran: set[str] = set()
        self.in_flight: str | None = None

    def run(self):
        try:
            c = RawClient(self.path, timeout=30)
        except OSError:
            return
        try:
            while True:
                for app_id in RUNNERS:
                    self.in_flight = app_id
                    c.call(f"{APP}.SubmitTaskRequest", {"appId": app_id, "identifier": f"{app_id}.t", "kind": "processing"},
                           timeout=30)
                    self.ran.discard(app_id)
                    r = c.call(f"{MANAGER}.RunTaskNow", {"appId": app_id, "identifier": f"{app_id}.t"}, timeout=30)
                    if "error" not in r:
                        self.runs += 1
                        self.ran.add(app_id)
                    self.in_flight = None
        except (Closed, OSError, TimeoutError):
            return
        finally:
            c.close()


def policy_in_file(state_dir) -> dict:
    """The policy refresh.json holds; the defaults when there is none yet (a kill before the first change
    was saved: then nothing was acknowledged either, which the caller's comparison checks)."""
    path = state_dir / "refresh.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    conditions = data.get("conditions", {})
    apps = data.get("apps", {})
    return {"pending": {a for a in RUNNERS if apps.get(a, {}).get("requests")},
            ("lowPower",): data.get("lowPowerMode", False), ("global",): data.get("backgroundAppRefresh", "on"),
            ("power",): conditions.get("onExternalPower"), ("network",): conditions.get("network")}


def launch_herd(path: str, rng: random.Random) -> int:
    """Launches every app of the herd (four clients at once) and sends all but a few to the background,
    where they are frozen; returns how many were launched."""
    launched = []
    lock = threading.Lock()

    def work(ids):
        try:
            with RawClient(path, timeout=30) as c:
                for app_id in ids:
                    if "error" not in c.call(f"{MANAGER}.Launch", {"appId": app_id}, timeout=30):
                        if app_id in RUNNERS or rng.random() < 0.9:
                            c.call(f"{MANAGER}.Background", {"appId": app_id}, timeout=30)
                        with lock:
                            launched.append(app_id)
        except (Closed, OSError, TimeoutError):
            pass

    threads = [threading.Thread(target=work, args=(HERD[i::4],), daemon=True) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return len(launched)


def test_kill9_with_a_hundred_apps_loses_no_acknowledged_policy_change(daemon, bin_dir):
    """SPEC §9: a kill -9 at any moment loses no acknowledged change — where it is hardest to keep: a
    hundred apps launched, most of them frozen, task requests run at once (RunTaskNow answers once the file
    has the request gone), and one client changing the global policy as fast as it is answered. After each
    kill, refresh.json holds every value acknowledged before it (or the one call in flight).
    BGTASKD_HERD_BACKEND=signal runs it with the signal freezer."""
    kills = int(os.environ.get("BGTASKD_KILLS", "30"))
    window = float(os.environ.get("BGTASKD_KILL_WINDOW", "0.15"))
    rng = random.Random(int(os.environ.get("BGTASKD_SEED", "12")))
    with ScratchCgroup() as cg:
        text = conf(cg.path, backend=os.environ.get("BGTASKD_HERD_BACKEND", "cgroup"), grace="20ms", kill="300ms") + "[Refresh]\nMinimumRefreshIntervalSec=0\n"
        d = daemon(conf=text, apps={a: herd_app(a, str(bin_dir / "bgtask-testapp")) for a in HERD})
        root = d.root
        model: dict = {("lowPower",): False, ("global",): "on", ("power",): None, ("network",): None}
        acknowledged = runs = launched = in_flight_kept = 0
        t_start = time.monotonic()
        for round_no in range(kills):
            launched += launch_herd(d.socket, rng)
            writer, runner = PolicyWriter(d.socket, rng.randrange(1 << 30)), TaskRunner(d.socket)
            writer.start()
            runner.start()
            time.sleep(rng.uniform(0.0, window))  # the random moment of the kill is the scenario
            d.proc.send_signal(signal.SIGKILL)
            d.proc.wait()
            for t in (writer, runner):
                t.join(30)
                assert not t.is_alive(), "a client still waits for the killed daemon"
            assert writer.error is None, writer.error
            for key, value in writer.acked:
                model[key] = value
            acknowledged += len(writer.acked)
            runs += runner.runs
            flight = dict(writer.in_flight or [])
            from_file = policy_in_file(root / "state")
            back = (runner.ran - {runner.in_flight}) & from_file["pending"]
            assert not back, f"round {round_no}: refresh.json lists {sorted(back)} pending after RunTaskNow was answered"
            for key, want in model.items():
                got = from_file[key]
                if got != want:
                    assert key in flight and got == flight[key], \
                        f"round {round_no}: refresh.json has {key} = {got!r}, acknowledged {want!r} (in flight: {flight.get(key)!r})"
                    model[key] = got
                    in_flight_kept += 1
            d = daemon(conf=text, root=root)
        took = time.monotonic() - t_start
        d.stop()
    assert acknowledged >= kills and runs > 0, (acknowledged, runs)
    print(f"{kills} kills in {took:.0f} s with {launched} launches: {acknowledged} acknowledged policy changes, "
          f"0 lost, {in_flight_kept} in-flight changes applied, {runs} tasks run by RunTaskNow")
