"""SPEC §15 on a compositor that minimizes: a minimized window is a scene in the background, and the app leaves
the foreground only when none of its scenes is in front. sway and phoc (test_focus_scenes.py) do not minimize;
wayfire does. Its windows are minimized, activated and closed as a task bar would, with
wlr-foreign-toplevel-management requests sent by tools/toplevel_request.c (built here with cc and
wayland-scanner from the protocol XML bgtaskd-focus is built from). Same app as test_focus_scenes.py: two foot
windows with one app ID and its lifecycle-aware process, in one adopted scope, as an unprivileged user."""

from __future__ import annotations

import glob
import json
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

from freezer_support import wait_for, wait_journal  # noqa: E402
from scene_session_support import APP, events, lines, notes_session  # noqa: E402
from test_device import ctl, state  # noqa: E402,F401
from test_focus import USER, Sway  # noqa: E402

HERE = Path(__file__).resolve().parent
PROTOCOL = HERE.parents[1] / "protocols" / "wlr-foreign-toplevel-management-unstable-v1.xml"
TOOL = HERE / "tools" / "toplevel_request.c"
HONOURED, NO_SUCH_TOPLEVEL, NOT_HONOURED = 0, 2, 3


class Wayfire(Sway):
    """wayfire, headless, with no plugins: windows map in its core, which also keeps the foreign toplevels
    and carries out minimize requests itself when no plugin does."""

    def env(self, **extra) -> dict:
        env = super().env(**extra)
        env.pop("SWAYSOCK", None)
        socks = sorted(p for p in glob.glob(str(self.runtime / "wayland-*")) if not p.endswith(".lock"))
        if socks:
            env["WAYLAND_DISPLAY"] = os.path.basename(socks[0])
        env.update(extra)
        return env


def build_tool(into: Path) -> Path:
    """tools/toplevel_request.c with its protocol glue, built into `into` (the compositor's runtime dir)."""
    for tool in ("cc", "wayland-scanner"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} is missing: scripts/install-deps.sh installs gcc and libwayland-bin")
    header = into / "wlr-foreign-toplevel-management-unstable-v1-client-protocol.h"
    subprocess.run(["wayland-scanner", "client-header", str(PROTOCOL), str(header)], check=True)
    subprocess.run(["wayland-scanner", "private-code", str(PROTOCOL), str(into / "protocol.c")], check=True)
    out = into / "toplevel_request"
    subprocess.run(["cc", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter", "-O1", f"-I{into}", "-o", str(out),
                    str(TOOL), str(into / "protocol.c"), "-lwayland-client"], check=True)
    return out


def request(comp: Sway, tool: Path, what: str, title: str) -> subprocess.CompletedProcess:
    """toplevel_request WHAT APP TITLE as the session user, on the compositor's display."""
    return subprocess.run([*comp.as_user(), str(tool), what, APP, title], env=comp.env(), capture_output=True,
                          text=True, timeout=20)


def honoured(comp: Sway, tool: Path, what: str, title: str):
    r = request(comp, tool, what, title)
    assert r.returncode == HONOURED, f"{what} {title}: exit status {r.returncode}: {r.stdout}{r.stderr}"


def focused_title(sway: Sway) -> str | None:
    def walk(n):
        if n.get("focused") and n.get("app_id"):
            return n.get("name")
        return next((t for c in n.get("nodes", []) + n.get("floating_nodes", []) if (t := walk(c))), None)
    return walk(json.loads(sway.msg("-t", "get_tree")))


def start_wayfire():
    """wayfire headless (pixman) as the session user in a private runtime dir; skips, with wayfire's own
    words, where it cannot start."""
    if not shutil.which("wayfire") or not shutil.which("foot"):
        pytest.fail("wayfire or foot is missing: scripts/install-deps.sh installs them")
    pw = pwd.getpwnam(USER)
    runtime = Path(tempfile.mkdtemp(prefix="bgtaskd-wayfire-", dir="/tmp"))
    os.chown(runtime, pw.pw_uid, pw.pw_gid)
    (runtime / "wayfire.ini").write_text("[core]\nplugins =\nxwayland = false\nvwidth = 1\nvheight = 1\n")
    comp = Wayfire(runtime, pw.pw_uid, pw.pw_gid)
    proc = comp.spawn(["wayfire", "-c", str(runtime / "wayfire.ini")], "wayfire.log")
    deadline = time.monotonic() + 15
    while not [p for p in glob.glob(str(runtime / "wayland-*")) if not p.endswith(".lock")]:
        if proc.poll() is not None or time.monotonic() > deadline:
            log = (runtime / "wayfire.log").read_text(errors="replace")
            status = proc.poll()
            comp.stop()
            shutil.rmtree(runtime, ignore_errors=True)
            why = ""
            if "Failed to get DRM file descriptor" in log and not glob.glob("/dev/dri/renderD*"):
                why = ("wayfire needs a DRM render node even with WLR_RENDERER=pixman (it exits when "
                       "wlr_backend_get_drm_fd fails, before it chooses a renderer) and this machine has no "
                       "/dev/dri/renderD*. ")
            pytest.skip(f"{why}wayfire (headless) could not start here, exit status {status}:\n{log[-1500:]}")
        time.sleep(0.02)  # poll interval: the compositor gives no notice of its socket
    return comp, runtime


def test_minimized_windows_are_background_scenes(daemon, ctl, bin_dir):
    comp, runtime = start_wayfire()
    try:
        tool = build_tool(runtime)
        with notes_session(comp, daemon, runtime, "-scenes-wayfire") as (d, scope, log):
            comp.spawn(["foot", f"--app-id={APP}", "--title=one", "sleep", "1000"], "one.log", cgroup=scope)
            comp.spawn(["foot", f"--app-id={APP}", "--title=two", "sleep", "1000"], "two.log", cgroup=scope)
            # A desktop: a window that is neither activated nor minimized stays visible (foreground-inactive).
            comp.spawn([str(bin_dir / "bgtaskd-focus"), "--socket", d.socket, "--debounce", "150",
                        "--unfocused", "inactive", "--no-logind", "--no-session-bus"], "focus.log")
            wait_for(lambda: sum(e.startswith("scene-will-connect") for e in events(log)) == 2, 15,
                     "two scenes connected")
            scenes = {l["sceneId"]: l for l in lines(log) if l.get("event") == "scene-will-connect"}
            titled = {l["title"]: sid for sid, l in scenes.items()}
            assert set(titled) == {"one", "two"}, scenes
            one, two = titled["one"], titled["two"]
            # Window one in front, two visible behind it: the app is active.
            honoured(comp, tool, "activate", "one")
            wait_for(lambda: f"scene-did-become-active {one}" in events(log), 10, "scene one active")
            wait_for(lambda: state(ctl, d, APP) == "active", 10, "the app active")
            # Minimize window two: its scene goes to the background (one decision about the scene); one is
            # still in front, so the app stays active and gets no app-level event.
            t0 = time.time()
            mark = len(events(log))
            r = request(comp, tool, "minimize", "two")
            if r.returncode == NOT_HONOURED:
                pytest.skip(f"wayfire did not honour set_minimized: {r.stderr.strip()}")
            assert r.returncode == HONOURED, r.stdout + r.stderr
            wait_for(lambda: f"scene-did-enter-background {two}" in events(log), 10, "scene two in the background")
            bg = wait_journal(t0, f"_PID={d.pid}", f"BGTASKD_APP={APP}", f"BGTASKD_SCENE={two}",
                              "BGTASKD_DECISION=background", timeout=10)
            assert bg[-1]["BGTASKD_REASON"] == "compositor-focus", bg[-1]
            assert state(ctl, d, APP) == "active"
            assert not any(e in ("will-resign-active", "did-enter-background") for e in events(log)[mark:]), \
                events(log)[mark:]
            # Minimize window one too: no scene in front. Now the app leaves the foreground, after its scene
            # events, and is suspended after its grace (snapshots first).
            t1 = time.time()
            mark = len(events(log))
            honoured(comp, tool, "minimize", "one")
            wait_for(lambda: state(ctl, d, APP) == "suspended", 15, "the app suspended (both minimized)")
            got = events(log)[mark:]
            assert got[:4] == [
                f"scene-will-resign-active {one}", f"scene-did-enter-background {one}", "will-resign-active",
                "did-enter-background"], got
            assert sorted(got[4:]) == sorted([f"scene-snapshot {one}", f"scene-snapshot {two}"]), got
            bg = wait_journal(t1, f"_PID={d.pid}", f"BGTASKD_APP={APP}", "BGTASKD_DECISION=background", timeout=10)
            assert bg[-1]["BGTASKD_REASON"] == "compositor-focus" and bg[-1]["BGTASKD_SCENE"] == one, bg[-1]
            # Restore window one (the app is thawed and active again), then close both windows: each scene
            # disconnects; after the last, the app is suspended again.
            mark = len(events(log))
            honoured(comp, tool, "unminimize", "one")
            wait_for(lambda: state(ctl, d, APP) == "active", 10, "the app active again (one restored)")
            wait_for(lambda: "did-become-active" in events(log)[mark:], 10, "did-become-active")
            assert f"scene-did-become-active {one}" in events(log)[mark:], events(log)[mark:]
            mark = len(events(log))
            honoured(comp, tool, "close", "two")
            honoured(comp, tool, "close", "one")
            wait_for(lambda: state(ctl, d, APP) == "suspended", 15, "the app suspended (windows closed)")
            after = events(log)[mark:]
            assert sorted(e for e in after if e.startswith("scene-did-disconnect")) == \
                sorted([f"scene-did-disconnect {one}", f"scene-did-disconnect {two}"]), after
            assert after.count("will-resign-active") == 1, after
            print((runtime / "focus.log").read_text(errors="replace"))
    finally:
        comp.stop()
        shutil.rmtree(runtime, ignore_errors=True)


def test_toplevel_request_tells_an_unhonoured_minimize(bin_dir):
    """The tool itself, on sway (which keeps foreign toplevels but does not minimize): it activates a window,
    and says so (exit status 3) when a minimize request is not carried out, which is what makes the wayfire
    test above skip rather than pass on a compositor that ignores it."""
    if not shutil.which("sway") or not shutil.which("foot"):
        pytest.fail("sway or foot is missing: scripts/install-deps.sh installs them")
    pw = pwd.getpwnam(USER)
    runtime = Path(tempfile.mkdtemp(prefix="bgtaskd-sway-", dir="/tmp"))
    os.chown(runtime, pw.pw_uid, pw.pw_gid)
    (runtime / "config").write_text("output HEADLESS-1 resolution 800x600\n")
    comp = Sway(runtime, pw.pw_uid, pw.pw_gid)
    try:
        proc = comp.spawn(["sway", "-c", str(runtime / "config")], "sway.log")
        deadline = time.monotonic() + 15
        while not ((runtime / "wayland-1").exists() and list(runtime.glob("sway-ipc.*.sock"))):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.skip(f"sway (headless) could not start here, exit status {proc.poll()}")
            time.sleep(0.02)  # poll interval: sway gives no notice of its sockets
        tool = build_tool(runtime)
        assert request(comp, tool, "activate", "one").returncode == NO_SUCH_TOPLEVEL
        comp.spawn(["foot", f"--app-id={APP}", "--title=one", "sleep", "1000"], "one.log")
        wait_for(lambda: '"name": "one"' in comp.msg("-t", "get_tree"), 10, "window one mapped")
        comp.spawn(["foot", f"--app-id={APP}", "--title=two", "sleep", "1000"], "two.log")
        wait_for(lambda: '"name": "two"' in comp.msg("-t", "get_tree"), 10, "window two mapped")
        honoured(comp, tool, "activate", "one")
        assert focused_title(comp) == "one"
        r = request(comp, tool, "minimize", "two")
        assert r.returncode == NOT_HONOURED and "did not honour minimize" in r.stderr, r.stdout + r.stderr
        honoured(comp, tool, "close", "two")
        wait_for(lambda: '"name": "two"' not in comp.msg("-t", "get_tree"), 10, "window two closed")
    finally:
        comp.stop()
        shutil.rmtree(runtime, ignore_errors=True)
