"""SPEC §15 on a real compositor: bgtaskd-focus reports every toplevel as a scene (SetSceneState) and the
daemon's core derives the app's state. Two foot windows with one app ID, plus the app's lifecycle-aware
process (apps/scene_app.py, checked in with scenes: true), run in one adopted scope as an unprivileged
user, on sway and on phoc (Phosh's compositor, the phone's own), both headless. The app's own log is the
record of the scene and app-level events it got."""

from __future__ import annotations

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


class Phoc(Sway):
    """phoc, headless, without a shell: the newest window is in front; no IPC of its own."""

    def env(self, **extra) -> dict:
        env = super().env(**extra)
        env.pop("SWAYSOCK", None)
        env["WAYLAND_DISPLAY"] = "wayland-0"
        return env


def start_compositor(kind: str):
    if not shutil.which(kind) or not shutil.which("foot"):
        pytest.fail(f"{kind} or foot is missing: scripts/install-deps.sh installs them")
    pw = pwd.getpwnam(USER)
    runtime = Path(tempfile.mkdtemp(prefix=f"bgtaskd-{kind}-", dir="/tmp"))
    os.chown(runtime, pw.pw_uid, pw.pw_gid)
    if kind == "sway":
        (runtime / "config").write_text("output HEADLESS-1 resolution 800x600\n")
        c, argv, ready = Sway(runtime, pw.pw_uid, pw.pw_gid), ["sway", "-c", str(runtime / "config")], "wayland-1"
    else:
        c, argv, ready = Phoc(runtime, pw.pw_uid, pw.pw_gid), ["phoc"], "wayland-0"
    proc = c.spawn(argv, f"{kind}.log")
    deadline = time.monotonic() + 15
    while not ((runtime / ready).exists() and (kind != "sway" or list(runtime.glob("sway-ipc.*.sock")))):
        if proc.poll() is not None or time.monotonic() > deadline:
            log = (runtime / f"{kind}.log").read_text(errors="replace")
            c.stop()
            shutil.rmtree(runtime, ignore_errors=True)
            pytest.skip(f"{kind} (headless) could not start here, exit status {proc.poll()}:\n{log[-2000:]}")
        time.sleep(0.02)  # poll interval: the compositor gives no notice of its socket
    return c, runtime


@pytest.mark.parametrize("kind", ["sway", "phoc"])
def test_two_windows_of_one_app_are_its_scenes(daemon, ctl, bin_dir, kind):
    comp, runtime = start_compositor(kind)
    try:
        with notes_session(comp, daemon, runtime, f"-scenes-{kind}") as (d, scope, log):
            comp.spawn(["foot", f"--app-id={APP}", "--title=one", "sleep", "1000"], "one.log", cgroup=scope)
            if kind == "sway":
                wait_for(lambda: '"name": "one"' in comp.msg("-t", "get_tree"), 10, "window one mapped")
            comp.spawn(["foot", f"--app-id={APP}", "--title=two", "sleep", "1000"], "two.log", cgroup=scope)
            since = time.time()
            comp.spawn([str(bin_dir / "bgtaskd-focus"), "--socket", d.socket, "--debounce", "150",
                        "--no-logind", "--no-session-bus"], "focus.log")
            # Both windows are scenes: the front one (on sway: two, mapped last) active, the other in the
            # background (a phone: only the front window shows); the app is active.
            wait_for(lambda: events(log).count("scene-will-connect") == 0 and
                     sum(e.startswith("scene-will-connect") for e in events(log)) == 2, 15,
                     "two scenes connected")
            wait_for(lambda: any(e.startswith("scene-did-become-active") for e in events(log)), 10,
                     "a scene active")
            assert state(ctl, d, APP) == "active"
            scenes = {l["sceneId"]: l for l in lines(log) if l.get("event") == "scene-will-connect"}
            titled = {l["title"]: sid for sid, l in scenes.items()}
            assert set(titled) == {"one", "two"}, scenes
            one, two = titled["one"], titled["two"]
            if kind == "sway":
                assert f"scene-did-become-active {two}" in events(log)
            if kind == "sway":
                # Activate window one: scene one comes to the front, two leaves it; the app stays active.
                comp.msg(f'[title="^one$"] focus')
                wait_for(lambda: f"scene-did-become-active {one}" in events(log), 10, f"events")
                wait_for(lambda: events(log)[-2:] == [f"scene-will-resign-active {two}",
                                                      f"scene-did-enter-background {two}"] or
                         f"scene-did-enter-background {two}" in events(log), 10, f"events")
                assert state(ctl, d, APP) == "active"
                assert "will-resign-active" not in events(log)
                # The home screen (an empty workspace): no scene in front. Only now does the app leave the
                # foreground: its scene events first, then the app's, then a snapshot of each scene, then
                # the freeze.
                t0 = time.time()
                mark = len(events(log))
                comp.msg("workspace", "2")
                wait_for(lambda: state(ctl, d, APP) == "suspended", 15, "the app suspended (home screen)")
                got = events(log)[mark:]
                assert got[:4] == [
                    f"scene-will-resign-active {one}", f"scene-did-enter-background {one}", "will-resign-active",
                    "did-enter-background"], got
                assert sorted(got[4:]) == sorted([f"scene-snapshot {one}", f"scene-snapshot {two}"]), got
                snaps = {l["sceneId"]: l["wrote"] for l in lines(log) if "wrote" in l}
                assert all(Path(p).read_bytes().startswith(b"\x89PNG\r\n\x1a\n") for p in snaps.values())
                bg = wait_journal(t0, f"_PID={d.pid}", f"BGTASKD_APP={APP}", "BGTASKD_DECISION=background", timeout=10)
                assert bg[-1]["BGTASKD_REASON"] == "compositor-focus" and bg[-1]["BGTASKD_SCENE"] == one, bg[-1]
                # Back: thawed, scene one active again, then the app.
                mark = len(events(log))
                comp.msg("workspace", "1")
                wait_for(lambda: state(ctl, d, APP) == "active", 10, "the app active again")
                wait_for(lambda: "did-become-active" in events(log)[mark:], 10, "did-become-active")
                assert events(log)[mark:] == [
                    f"scene-will-enter-foreground {one}", f"scene-did-become-active {one}", "will-enter-foreground",
                    "did-become-active"], events(log)[mark:]
            # Close both windows: each scene disconnects; after the last, the app enters the background and
            # is suspended.
            t1 = time.time()
            mark = len(events(log))
            if kind == "sway":
                comp.msg(f'[app_id="{APP}"] kill')
            else:
                subprocess.run(["pkill", "-f", "--", f"--app-id={APP}"], check=False)
            wait_for(lambda: state(ctl, d, APP) == "suspended", 15, "the app suspended (windows closed)")
            after = events(log)[mark:]
            assert sorted(e for e in after if e.startswith("scene-did-disconnect")) == \
                sorted([f"scene-did-disconnect {one}", f"scene-did-disconnect {two}"]), after
            # The app leaves the foreground once, right after the front scene's own events (the scene left
            # in the background may disconnect before or after; its snapshot may come first).
            i = after.index("will-resign-active")
            assert after[i + 1] == "did-enter-background" and after.count("will-resign-active") == 1, after
            assert after[i - 3].startswith("scene-will-resign-active") and \
                after[i - 1] == "scene-did-disconnect " + after[i - 3].split()[1], after
            bg = wait_journal(t1, f"_PID={d.pid}", f"BGTASKD_APP={APP}", "BGTASKD_DECISION=background", timeout=10)
            assert bg[-1]["BGTASKD_REASON"] == "compositor-focus" and bg[-1]["BGTASKD_SCENE"] in (one, two), bg[-1]
            decided = wait_journal(since, f"_PID={d.pid}", f"BGTASKD_APP={APP}", count=3, timeout=10)
            assert {e.get("BGTASKD_SCENE") for e in decided if e.get("BGTASKD_REASON") == "compositor-focus"} \
                <= {one, two}
            print((runtime / "focus.log").read_text(errors="replace"))
    finally:
        comp.stop()
        shutil.rmtree(runtime, ignore_errors=True)
