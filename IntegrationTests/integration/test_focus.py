"""SPEC §13 (issue 14): focus from a real compositor. Sway runs headless (WLR_BACKENDS=headless, pixman)
as an unprivileged user with an XDG_RUNTIME_DIR of its own; real Wayland clients (foot with app IDs) run
as that user in adopted cgroups; bgtaskd-focus follows sway's toplevels (wlr-foreign-toplevel-management)
and calls SetFocus; focus is driven through sway itself (`swaymsg '[app_id=…] focus'`)."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from freezer_support import ScratchCgroup, journal, read_events, wait_for, wait_journal  # noqa: E402
from test_device import apps, ctl, entry, state  # noqa: E402,F401

USER = "nobody"
A, B = "org.example.A", "org.example.B"


class Sway:
    def __init__(self, runtime: Path, uid: int, gid: int):
        self.runtime, self.uid, self.gid = runtime, uid, gid
        self.procs: list[subprocess.Popen] = []

    def env(self, **extra) -> dict:
        env = {"HOME": str(self.runtime), "XDG_RUNTIME_DIR": str(self.runtime), "PATH": "/usr/bin:/bin",
               "WLR_BACKENDS": "headless", "WLR_LIBINPUT_NO_DEVICES": "1", "WLR_RENDERER": "pixman",
               "WAYLAND_DISPLAY": "wayland-1"}
        socks = list(self.runtime.glob("sway-ipc.*.sock"))
        if socks:
            env["SWAYSOCK"] = str(socks[0])
        env.update(extra)
        return env

    def as_user(self) -> list[str]:
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--"]

    def spawn(self, argv: list[str], log: str, cgroup: str | None = None, **env) -> subprocess.Popen:
        cmd = [*self.as_user(), *argv]
        if cgroup:
            cmd = ["sh", "-c", f'echo $$ > "{cgroup}/cgroup.procs" && exec "$@"', "sh", *cmd]
        with open(self.runtime / log, "wb") as out:
            p = subprocess.Popen(cmd, env=self.env(**env), stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        self.procs.append(p)
        return p

    def msg(self, *args: str) -> str:
        r = subprocess.run([*self.as_user(), "swaymsg", *args], env=self.env(), capture_output=True, text=True, timeout=10)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.kill()
            p.wait()


@pytest.fixture
def sway():
    for tool in ("sway", "swaymsg", "foot"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} is missing: scripts/install-deps.sh installs sway and foot")
    pw = pwd.getpwnam(USER)
    runtime = Path(tempfile.mkdtemp(prefix="bgtaskd-sway-", dir="/tmp"))
    os.chown(runtime, pw.pw_uid, pw.pw_gid)
    (runtime / "config").write_text("output HEADLESS-1 resolution 800x600\n")
    s = Sway(runtime, pw.pw_uid, pw.pw_gid)
    compositor = s.spawn(["sway", "-c", str(runtime / "config")], "sway.log")
    deadline = time.monotonic() + 15
    while not ((runtime / "wayland-1").exists() and list(runtime.glob("sway-ipc.*.sock"))):
        if compositor.poll() is not None or time.monotonic() > deadline:
            log = (runtime / "sway.log").read_text(errors="replace")
            s.stop()
            shutil.rmtree(runtime, ignore_errors=True)
            pytest.skip(f"sway (headless) could not start here, exit status {compositor.poll()}:\n{log[-2000:]}")
        time.sleep(0.02)  # poll interval: sway gives no notice of its sockets
    yield s
    s.stop()
    shutil.rmtree(runtime, ignore_errors=True)


def focused(sway: Sway) -> str | None:
    import json
    def walk(n):
        if n.get("focused") and n.get("app_id"):
            return n["app_id"]
        for c in n.get("nodes", []) + n.get("floating_nodes", []):
            got = walk(c)
            if got:
                return got
        return None
    return walk(json.loads(sway.msg("-t", "get_tree")))


@contextlib.contextmanager
def adopted_apps(daemon, ctl, sway, tag, ids):
    """Apps `ids` from desktop entries, each started by sway (foot) into an `app-test-ID-N.scope` of the
    sway user's app.slice and adopted, in that order, by a daemon (signal freezer, 300 ms grace) that
    the session user reaches: yields (daemon, {id: scope}). Prints bgtaskd-focus's log at the end."""
    with ScratchCgroup(tag) as scratch:
        uid = sway.uid
        slice_dir = os.path.join(scratch.path, f"user.slice/user-{uid}.slice/user@{uid}.service/app.slice")
        os.makedirs(slice_dir)
        data = Path(tempfile.mkdtemp(prefix="bgtaskd-xdg-", dir="/tmp"))
        try:
            (data / "applications").mkdir()
            for app in ids:
                (data / "applications" / f"{app}.desktop").write_text(entry(app, f"foot --app-id={app}"))
            d = daemon(conf=f"[Apps]\nDataDirs={data}\nAdoptFrom={scratch.path}/user.slice\n"
                            "[Daemon]\nFreezerBackend=signal\nControlGroup=nogroup\n"
                            "[Lifecycle]\nDidEnterBackgroundTimeoutSec=300ms\n")
            # The unprivileged session user reaches the daemon's socket.
            for p in (d.root, d.runtime_dir):
                os.chmod(p, 0o755)
            scopes = {}
            for n, app in enumerate(ids):
                scopes[app] = os.path.join(slice_dir, f"app-test-{app}-{n + 1}.scope")
                os.mkdir(scopes[app])
                sway.spawn(["foot", f"--app-id={app}", "sleep", "1000"], f"{app}.log", cgroup=scopes[app])
                wait_for(lambda: state(ctl, d, app) == "active", 10, f"{app} adopted")
            yield d, scopes
        finally:
            shutil.rmtree(data, ignore_errors=True)
            print((sway.runtime / "focus.log").read_text(errors="replace") if (sway.runtime / "focus.log").exists() else "")


def test_focus_follows_the_compositor(daemon, ctl, bin_dir, sway):
    with adopted_apps(daemon, ctl, sway, "-focus", (A, B)) as (d, scopes):
        # Both windows mapped (foot maps asynchronously: under load A may map after B and take the
        # focus), then B in front through the compositor.
        wait_for(lambda: all(f'"app_id": "{app}"' in sway.msg("-t", "get_tree") for app in (A, B)), 10,
                 "both windows mapped")
        sway.msg(f"[app_id={B}] focus")
        wait_for(lambda: focused(sway) == B, 10, "sway to focus B")
        since = time.time()
        sway.spawn([str(bin_dir / "bgtaskd-focus"), "--socket", d.socket, "--debounce", "200"], "focus.log")
        # B is in front: A goes to the background, reason compositor-focus, and is suspended.
        first = wait_journal(since, f"_PID={d.pid}", f"BGTASKD_APP={A}", "BGTASKD_DECISION=background", timeout=10)
        assert first[0]["BGTASKD_REASON"] == "compositor-focus"
        wait_journal(since, f"_PID={d.pid}", f"BGTASKD_APP={A}", "BGTASKD_DECISION=suspend", timeout=10)
        assert read_events(scopes[A]).get("frozen") == 1

        # Focus A through the compositor: A active (thawed), B background, then suspended.
        t1 = time.time()
        sway.msg(f"[app_id={A}] focus")
        fg = wait_journal(t1, f"_PID={d.pid}", f"BGTASKD_APP={A}", "BGTASKD_DECISION=foreground", timeout=10)
        assert fg[-1]["BGTASKD_REASON"] == "compositor-focus"
        bg = wait_journal(t1, f"_PID={d.pid}", f"BGTASKD_APP={B}", "BGTASKD_DECISION=background", timeout=10)
        assert bg[0]["BGTASKD_REASON"] == "compositor-focus"
        wait_journal(t1, f"_PID={d.pid}", f"BGTASKD_APP={B}", "BGTASKD_DECISION=suspend", timeout=10)
        assert read_events(scopes[B]).get("frozen") == 1 and read_events(scopes[A]).get("frozen") == 0
        assert state(ctl, d, A) == "active" and state(ctl, d, B) == "suspended"

        # Back to B: thawed, active again; its terminal answers (sway still talks to it).
        t2 = time.time()
        sway.msg(f"[app_id={B}] focus")
        back = wait_journal(t2, f"_PID={d.pid}", f"BGTASKD_APP={B}", "BGTASKD_DECISION=foreground", timeout=10)
        assert back[-1]["BGTASKD_REASON"] == "compositor-focus"
        wait_for(lambda: read_events(scopes[B]).get("frozen") == 0, 5, "B thawed")
        assert state(ctl, d, B) == "active"
        assert focused(sway) == B

        # The home screen (an empty workspace, no toplevel activated): B goes to the background.
        t3 = time.time()
        sway.msg("workspace", "2")
        home = wait_journal(t3, f"_PID={d.pid}", f"BGTASKD_APP={B}", "BGTASKD_DECISION=background", timeout=10)
        assert home[0]["BGTASKD_REASON"] == "compositor-focus"
        sway.msg("workspace", "1")
        wait_journal(t3, f"_PID={d.pid}", f"BGTASKD_APP={B}", "BGTASKD_DECISION=foreground", timeout=10)


def test_blank_screen_backgrounds_the_front_app_and_the_user_brings_it_back(daemon, ctl, bin_dir, sway):
    """bgtaskd-focus --idle-timeout: the compositor's idle notification (org_kde_kwin_idle, what swayidle
    blanks the screen with) sends the front app to the background with reason screen-locked; user
    activity (a key typed through a virtual keyboard, wtype) brings it back (compositor-focus)."""
    if not shutil.which("wtype"):
        pytest.fail("wtype is missing: scripts/install-deps.sh installs it")
    with adopted_apps(daemon, ctl, sway, "-idle", (A,)) as (d, scopes):
        scope = scopes[A]
        wait_for(lambda: focused(sway) == A, 10, "sway to focus A")
        since = time.time()
        sway.spawn([str(bin_dir / "bgtaskd-focus"), "--socket", d.socket, "--debounce", "100",
                    "--idle-timeout", "1500"], "focus.log")
        # No input at all on a headless seat: idle after 1.5 s.
        locked = wait_journal(since, f"_PID={d.pid}", f"BGTASKD_APP={A}", "BGTASKD_DECISION=background", timeout=15)
        assert locked[0]["BGTASKD_REASON"] == "screen-locked", locked[0]
        wait_journal(since, f"_PID={d.pid}", f"BGTASKD_APP={A}", "BGTASKD_DECISION=suspend", timeout=10)
        assert read_events(scope).get("frozen") == 1
        # The user is back: a key on a virtual keyboard.
        t1 = time.time()
        r = subprocess.run([*sway.as_user(), "wtype", "x"], env=sway.env(), capture_output=True, text=True, timeout=10)
        assert r.returncode == 0, r.stderr
        back = wait_journal(t1, f"_PID={d.pid}", f"BGTASKD_APP={A}", "BGTASKD_DECISION=foreground", timeout=10)
        assert back[-1]["BGTASKD_REASON"] == "compositor-focus"
        assert read_events(scope).get("frozen") == 0 and state(ctl, d, A) == "active"


@pytest.fixture
def logind(sway):
    """A real systemd-logind (private mount namespace, a bus of its own) with a graphical session of the
    sway user (logind_support.py)."""
    from logind_support import Logind
    ld = Logind(sway.uid, USER)
    try:
        ld.start()
    except RuntimeError as e:
        pytest.skip(f"systemd-logind cannot run here: {e}")
    yield ld
    print(ld.log()[-3000:])
    ld.stop()


def test_locking_the_session_backgrounds_the_front_app_and_unlocking_brings_it_back(daemon, ctl, bin_dir, sway, logind):
    """SPEC §13 / issue 14: logind's LockedHint (what a screen locker sets through SetLockedHint) and
    IdleHint (swayidle's `idlehint`, gnome-session) on the session: the front app resigns active and goes
    to the background with reason screen-locked (then suspended, its cgroup frozen); cleared, it comes
    back. bgtaskd-focus is given only the bus address, like a user unit outside any session: it finds
    the user's display session itself."""
    with adopted_apps(daemon, ctl, sway, "-lock", (A,)) as (d, scopes):
        scope = scopes[A]
        wait_for(lambda: focused(sway) == A, 10, "sway to focus A")
        sway.spawn([str(bin_dir / "bgtaskd-focus"), "--socket", d.socket, "--debounce", "100"], "focus.log",
                   DBUS_SYSTEM_BUS_ADDRESS=logind.address)
        focus_log = sway.runtime / "focus.log"
        wait_for(lambda: focus_log.exists() and "following logind's session" in focus_log.read_text(), 10,
                 "bgtaskd-focus to follow the logind session")
        assert f"session {logind.path}" in focus_log.read_text()

        # The session user's screen locker locks: SetLockedHint(true), called as that user.
        for method, hint in (("SetLockedHint", "LockedHint"), ("SetIdleHint", "IdleHint")):
            t0 = time.time()
            logind.session_call(method, True, user=sway.as_user())
            assert logind.hint(hint)
            locked = wait_journal(t0, f"_PID={d.pid}", f"BGTASKD_APP={A}", "BGTASKD_DECISION=background", timeout=10)
            assert locked[0]["BGTASKD_REASON"] == "screen-locked", locked[0]
            wait_journal(t0, f"_PID={d.pid}", f"BGTASKD_APP={A}", "BGTASKD_DECISION=suspend", timeout=10)
            assert read_events(scope).get("frozen") == 1
            assert state(ctl, d, A) == "suspended"
            # Unlocked: back in front, thawed.
            t1 = time.time()
            logind.session_call(method, False, user=sway.as_user())
            back = wait_journal(t1, f"_PID={d.pid}", f"BGTASKD_APP={A}", "BGTASKD_DECISION=foreground", timeout=10)
            assert back[-1]["BGTASKD_REASON"] == "compositor-focus"
            assert read_events(scope).get("frozen") == 0 and state(ctl, d, A) == "active"
