"""SPEC §15 across a crash of the daemon: snapshots live until the app terminates. A daemon killed with
SIGKILL leaves its apps' snapshot files; the next run removes those of apps not running (its own launches
are terminated at start-up) and keeps those of an app adopted again (still running in its own unit)."""
from __future__ import annotations

import os
import signal
import sys

from freezer_support import Manager
from support import AppLog, wait_for
from test_device import hierarchy, start_in  # noqa: F401
from test_scenes import FAST, PNG, SCENE_APP, ctl, ok, wait_log  # noqa: F401

SCENES = "org.test.Scenes"
ADOPTED = "org.test.Adopted"


def test_a_restart_after_kill9_removes_the_snapshots_of_apps_not_running(daemon, ctl, tmp_path, hierarchy):
    scratch, slice_dir = hierarchy
    scope = os.path.join(slice_dir, f"app-test-{ADOPTED}-1.scope")
    os.mkdir(scope)
    adopted = start_in(scope, "sleep", "1000")
    try:
        log = tmp_path / "scenes.log"
        conf = FAST + f"[Apps]\nAdoptFrom={scratch}/user.slice\n"
        apps = {SCENES: f"[App]\nID={SCENES}\nExec={sys.executable} {SCENE_APP} --log {log}\n",
                ADOPTED: f"[App]\nID={ADOPTED}\nExec=sleep 1000\n"}
        d = daemon(conf=conf, apps=apps)
        m = Manager(d.socket)
        m.wait_state(ADOPTED, "active", timeout=10)
        # The daemon's own app writes a real snapshot and is frozen.
        app = AppLog(d, SCENES, log)
        ok(ctl, d, "launch", SCENES)
        wait_log(app, ["did-finish-launching", "did-become-active"])
        ok(ctl, d, "foreground", SCENES, "--scene", "main")
        ok(ctl, d, "background", SCENES, "--scene", "main")
        app.wait_state("suspended", timeout=10)
        snapshots = d.root / "runtime" / "snapshots"
        own = snapshots / SCENES / "main.png"
        assert own.read_bytes().startswith(PNG)
        # The adopted app's snapshot, where it writes one, and one of an app gone since.
        kept = snapshots / ADOPTED / "main.png"
        gone = snapshots / "org.test.Gone" / "main.png"
        for path in (kept, gone):
            path.parent.mkdir(mode=0o750)
            path.write_bytes(PNG + b"\0" * 16)

        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait(10)
        assert own.exists() and kept.exists() and gone.exists(), "SIGKILL leaves every snapshot behind"

        d2 = daemon(conf=conf, root=d.root)
        m2 = Manager(d2.socket)
        m2.wait_state(ADOPTED, "active", timeout=10)
        wait_for(lambda: not own.parent.exists() and not gone.parent.exists(), 5,
                 lambda: f"left in {snapshots}: {sorted(str(p) for p in snapshots.rglob('*'))}")
        assert kept.read_bytes() == PNG + b"\0" * 16, "the adopted app is running: its snapshot stays"
        # Reported again under the same scene ID, its snapshot is shown again.
        m2.call("SetSceneState", appId=ADOPTED, sceneId="main", state="foreground-active")
        scenes = m2.app(ADOPTED)["scenes"]
        assert [(s["sceneId"], s.get("snapshotPath")) for s in scenes] == [("main", str(kept))], scenes
        # It terminates (its last unit empties): its snapshots go with it.
        ok(ctl, d2, "terminate", ADOPTED)
        m2.wait_state(ADOPTED, "not-running", timeout=10)
        wait_for(lambda: not kept.parent.exists(), 5, lambda: f"{kept} still there after {ADOPTED} terminated")
    finally:
        if adopted.poll() is None:
            adopted.kill()
        adopted.wait()
