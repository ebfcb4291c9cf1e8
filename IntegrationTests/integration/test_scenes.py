"""SPEC §15 end to end: scenes and snapshots with the real daemon and a real lifecycle-aware app written
with the Python `varlink` package (apps/scene_app.py). The app's own log is the record of what it got."""
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import varlink

from support import AppLog, journal_entries, wait_for

HERE = Path(__file__).resolve().parent
SCENE_APP = HERE / "apps" / "scene_app.py"
PYAPP = HERE / "apps" / "pyapp.py"
GOLDEN = HERE / "golden" / "no-scenes-events.jsonl"

FAST = """
[Daemon]
FreezerBackend=signal
[Lifecycle]
DidEnterBackgroundTimeoutSec=2s
LaunchTimeoutSec=5s
WillTerminateTimeoutSec=1s
KillTimeoutSec=1s
SnapshotTimeoutSec=3s
"""

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def ctl(bin_dir) -> str:
    return str(bin_dir / "bgtaskctl")


def run(ctl, d, *args):
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS", "BGTASKD_SOCKET", "TERM")}
    return subprocess.run([ctl, *args, "--socket", d.socket], capture_output=True, text=True, env=env, timeout=30)


def ok(ctl, d, *args):
    r = run(ctl, d, *args)
    assert r.returncode == 0, f"bgtaskctl {' '.join(args)}: {r.stderr}"
    return r.stdout


def scene_app(daemon, tmp_path, *flags, conf=FAST, app_id="org.test.Scenes"):
    log = tmp_path / f"{app_id}.log"
    exec_line = " ".join([sys.executable, str(SCENE_APP), "--log", str(log), *flags])
    d = daemon(conf=conf, apps={app_id: f"[App]\nID={app_id}\nName=Scenes\nExec={exec_line}\n"})
    return AppLog(d, app_id, log)


def scene_events(app):
    """The app's log as "kind" / "kind sceneId", in order."""
    return [l["event"] + (f" {l['sceneId']}" if l.get("sceneId") else "") for l in app.lines() if "event" in l]


def wait_log(app, expected, timeout=10.0):
    wait_for(lambda: scene_events(app) == expected, timeout, lambda: f"{scene_events(app)} (expected {expected})")


def is_stopped(pid) -> bool:
    return open(f"/proc/{pid}/stat").read().rsplit(") ", 1)[1][0] == "T"


def test_two_scenes_over_the_wire_and_their_snapshots(daemon, ctl, tmp_path):
    app = scene_app(daemon, tmp_path)
    d = app.d
    ok(ctl, d, "launch", app.id)
    wait_log(app, ["did-finish-launching", "did-become-active"])
    ok(ctl, d, "foreground", app.id, "--scene", "inbox", "--title", "Inbox", "--output", "DSI-1")
    ok(ctl, d, "foreground", app.id, "--scene", "draft", "--inactive", "--title", "Draft")
    start = ["did-finish-launching", "did-become-active",
             "scene-will-connect inbox", "scene-will-enter-foreground inbox", "scene-did-become-active inbox",
             "scene-will-connect draft", "scene-will-enter-foreground draft"]
    wait_log(app, start)
    first = [l for l in app.lines() if l.get("event") == "scene-will-connect"][0]
    assert (first["title"], first["output"]) == ("Inbox", "DSI-1")
    status = ok(ctl, d, "status", app.id)
    assert "Scenes: 2" in status and 'inbox "Inbox" foreground-active on DSI-1' in status, status
    # inbox minimized, draft still visible: the app resigns active after the scene, stays in the foreground.
    ok(ctl, d, "background", app.id, "--scene", "inbox")
    step2 = start + ["scene-will-resign-active inbox", "scene-did-enter-background inbox", "will-resign-active"]
    wait_log(app, step2)
    app.wait_state("inactive")
    # draft closed: the last foreground scene leaves; the app enters the background, writes its snapshot
    # (one scene is left: inbox), and is suspended only after that.
    ok(ctl, d, "background", app.id, "--scene", "draft", "--closed")
    app.wait_state("suspended")
    wait_log(app, step2 + ["scene-did-enter-background draft", "scene-did-disconnect draft", "did-enter-background",
                           "scene-snapshot inbox"])
    snap = [l for l in app.lines() if l.get("event") == "scene-snapshot"][0]
    path = Path(snap["path"])
    assert path == d.root / "runtime" / "snapshots" / app.id / "inbox.png"
    assert snap["needsAck"] is True
    assert [l for l in app.lines() if "wrote" in l] == [{"wrote": str(path), "sceneId": "inbox"}]
    assert path.read_bytes().startswith(PNG)
    pid = app.info()["pid"]
    assert is_stopped(pid)
    # The directory: the app's user and the daemon write, ControlGroup= (root's group here) reads.
    mode = stat.S_IMODE(path.parent.stat().st_mode)
    assert mode == 0o750, oct(mode)
    scenes = app.info()["scenes"]
    assert [(s["sceneId"], s["state"], s["snapshotPath"]) for s in scenes] == [("inbox", "background", str(path))]
    assert scenes[0]["snapshotRealtimeUSec"] > 0
    # The App Switcher's view and the copy out.
    running = ok(ctl, d, "list", "--running")
    assert "SNAPSHOT" in running and "yes" in running, running
    out = tmp_path / "copy.png"
    ok(ctl, d, "snapshot", app.id, "--scene", "inbox", "-o", str(out))
    assert out.read_bytes() == path.read_bytes()
    assert run(ctl, d, "snapshot", app.id, "--scene", "draft", "-o", str(out)).returncode == 1
    # Back by its scene: thawed, then scene-will-enter-foreground, will-enter-foreground, both active.
    ok(ctl, d, "foreground", app.id, "--scene", "inbox")
    app.wait_state("active")
    back = ["scene-will-enter-foreground inbox", "scene-did-become-active inbox", "will-enter-foreground",
            "did-become-active"]
    wait_for(lambda: scene_events(app)[-4:] == back, 10, lambda: f"{scene_events(app)} (expected to end in {back})")
    # Every decision a scene caused carries BGTASKD_SCENE.
    entries = journal_entries(lambda es: len(es) >= 5, BGTASKD_APP=app.id)
    by_scene = [(e.get("BGTASKD_DECISION"), e.get("BGTASKD_SCENE")) for e in entries if e.get("BGTASKD_SCENE")]
    assert ("background", "draft") in by_scene and ("resume", "inbox") in by_scene and ("foreground", "inbox") in by_scene
    # Terminated: the snapshots go with it.
    ok(ctl, d, "terminate", app.id)
    app.wait_state("not-running")
    wait_for(lambda: not path.exists(), 5, lambda: f"{path} still there after the app terminated")
    assert app.info().get("scenes", []) == []


def test_a_silent_app_is_frozen_within_snapshot_timeout(daemon, ctl, tmp_path):
    app = scene_app(daemon, tmp_path, "--silent", conf=FAST.replace("SnapshotTimeoutSec=3s", "SnapshotTimeoutSec=300ms"))
    d = app.d
    ok(ctl, d, "launch", app.id)
    wait_log(app, ["did-finish-launching", "did-become-active"])
    ok(ctl, d, "foreground", app.id, "--scene", "main")
    ok(ctl, d, "background", app.id, "--scene", "main")
    app.wait_state("suspended", timeout=10)
    assert scene_events(app)[-2:] == ["did-enter-background", "scene-snapshot main"]
    timeout = journal_entries(lambda es: len(es) >= 1, BGTASKD_APP=app.id, BGTASKD_REASON="snapshot-timeout")
    assert len(timeout) == 1 and timeout[0]["PRIORITY"] == "4", timeout
    # The suspension came after the timeout decision, and no snapshot was kept.
    suspend = journal_entries(lambda es: len(es) >= 1, BGTASKD_APP=app.id, BGTASKD_DECISION="suspend")
    assert int(suspend[0]["__MONOTONIC_TIMESTAMP"]) >= int(timeout[0]["__MONOTONIC_TIMESTAMP"])
    assert app.info()["scenes"][0].get("snapshotPath") is None


@pytest.mark.parametrize("flags,why", [(("--bad-snapshot",), "not a PNG"), (("--oversize", "4096"), "more than SnapshotMaxBytes")])
def test_a_non_png_or_oversize_snapshot_is_refused(daemon, ctl, tmp_path, flags, why):
    app = scene_app(daemon, tmp_path, *flags, conf=FAST + "SnapshotMaxBytes=1K\n")
    d = app.d
    ok(ctl, d, "launch", app.id)
    wait_log(app, ["did-finish-launching", "did-become-active"])
    ok(ctl, d, "foreground", app.id, "--scene", "main")
    ok(ctl, d, "background", app.id, "--scene", "main")
    app.wait_state("suspended", timeout=10)
    wrote = [l["wrote"] for l in app.lines() if "wrote" in l]
    assert len(wrote) == 1
    assert not Path(wrote[0]).exists()
    refused = journal_entries(lambda es: len(es) >= 1, BGTASKD_APP=app.id, BGTASKD_REASON="snapshot-refused")
    assert len(refused) == 1 and why in refused[0]["MESSAGE"] and refused[0]["BGTASKD_SCENE"] == "main", refused
    assert app.info()["scenes"][0].get("snapshotPath") is None


def test_an_app_without_scenes_sees_no_difference(daemon, tmp_path):
    """The same Manager calls as before scenes existed; the app's event log is byte-equal to the one recorded
    with the daemon built before them (golden/no-scenes-events.jsonl; BGTASKD_WRITE_GOLDEN=1 rewrites it)."""
    log = tmp_path / "plain.log"
    app_id = "org.test.Plain"
    exec_line = " ".join([sys.executable, str(PYAPP), "--log", str(log)])
    d = daemon(conf=FAST, apps={app_id: f"[App]\nID={app_id}\nExec={exec_line}\n"})
    app = AppLog(d, app_id, log)
    with varlink.Client(address="unix:" + d.socket) as c, c.open("io.bgtaskd.Manager") as m:
        m.Launch(app_id)
        app.wait_state("active")
        m.Background(app_id)
        app.wait_state("suspended")
        m.Foreground(app_id)
        app.wait_state("active")
        m.SetFocus(None, "compositor-focus")
        app.wait_state("suspended")
        m.SetFocus(app_id, "compositor-focus")
        app.wait_state("active")
        m.Interrupt(app_id)
        m.EndInterruption(app_id)
        m.Terminate(app_id)
        app.wait_state("not-running")
    if os.environ.get("BGTASKD_WRITE_GOLDEN") == "1":
        GOLDEN.write_bytes(log.read_bytes())
    assert log.read_bytes() == GOLDEN.read_bytes()


def test_monitor_decisions_carry_their_scene(daemon, ctl, tmp_path):
    """A decision a scene caused carries the scene on Manager.Monitor (as BGTASKD_SCENE in the journal), and
    `bgtaskctl monitor` prints it; a decision no scene caused has none. The scenes come from SetSceneState,
    as a focus source without a compositor would send them."""
    import select
    import time

    from freezer_support import Manager, Monitor

    app = scene_app(daemon, tmp_path)
    d = app.d
    m = Manager(d.socket)
    ok(ctl, d, "launch", app.id)
    wait_log(app, ["did-finish-launching", "did-become-active"])
    wire = Monitor(d.socket)
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS", "BGTASKD_SOCKET", "TERM")}
    text = subprocess.Popen([ctl, "monitor", "--socket", d.socket], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    lines: list[str] = []

    def read_text(until, timeout=10.0):
        deadline = time.monotonic() + timeout
        while not until():
            assert time.monotonic() < deadline, f"bgtaskctl monitor printed {lines}"
            ready, _, _ = select.select([text.stdout], [], [], 0.1)
            if ready:
                lines.append(text.stdout.readline().rstrip("\n"))
        return lines

    try:
        # Both monitors are registered once each reports a decision: post a notification until they do.
        deadline = time.monotonic() + 10
        while not (lines and [x for x in wire.decisions if x["decision"] == "notify"]):
            assert time.monotonic() < deadline, f"the monitors reported no decision: {lines} {wire.decisions}"
            ok(ctl, d, "notify", "probe", app.id)
            ready, _, _ = select.select([text.stdout], [], [], 0.1)
            if ready:
                lines.append(text.stdout.readline().rstrip("\n"))
            wire.poll()
        probe = [x for x in wire.decisions if x["decision"] == "notify"][0]
        assert "scene" not in probe, probe
        m.call("SetSceneState", appId=app.id, sceneId="inbox", state="foreground-active", title="Inbox")
        m.call("SetSceneState", appId=app.id, sceneId="inbox", state="background")
        wait_for(lambda: [x for x in wire.poll() if x["decision"] == "background" and x.get("appId") == app.id], 10,
                 lambda: f"no background decision on Monitor: {wire.decisions}")
        background = [x for x in wire.decisions if x["decision"] == "background" and x.get("appId") == app.id][0]
        assert background.get("scene") == "inbox", background
        read_text(lambda: any(" background " in l for l in lines))
        printed = [l for l in lines if " background " in l]
        assert printed[0].endswith("  [scene inbox]"), printed
        assert not any("[scene" in l for l in lines if " notify " in l), lines
    finally:
        text.terminate()
        text.wait(10)
        wire.close()
