"""The scene tests' session on a real compositor (test_focus_scenes.py on sway and phoc, test_focus_minimize.py on
wayfire): one app, `org.example.Notes`, from a desktop entry, run as the compositor's session user in one
adopted scope: its lifecycle-aware process (apps/scene_app.py, checked in with scenes: true), then whatever
windows the test opens in the same scope. The app's own log is the record of its scene and app-level events."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from freezer_support import ScratchCgroup, wait_for
from support import json_lines
from test_device import entry

APP = "org.example.Notes"
SCENE_APP = Path(__file__).resolve().parent / "apps" / "scene_app.py"


def lines(log: Path) -> list[dict]:
    return json_lines(log)


def events(log: Path) -> list[str]:
    return [l["event"] + (f" {l['sceneId']}" if l.get("sceneId") else "") for l in lines(log) if "event" in l]


@contextlib.contextmanager
def notes_session(comp, daemon, runtime: Path, tag: str):
    """A daemon (signal freezer, 2 s grace and snapshot timeout) that adopts the session user's app.slice in a
    scratch cgroup and that the session user reaches, and APP's lifecycle-aware process checked in, in its
    scope: yields (daemon, scope, the app's log). The scratch cgroup and the desktop entry's directory are
    removed at the end."""
    with ScratchCgroup(tag) as scratch:
        uid = comp.uid
        slice_dir = os.path.join(scratch.path, f"user.slice/user-{uid}.slice/user@{uid}.service/app.slice")
        os.makedirs(slice_dir)
        data = Path(tempfile.mkdtemp(prefix="bgtaskd-xdg-", dir="/tmp"))
        try:
            (data / "applications").mkdir()
            (data / "applications" / f"{APP}.desktop").write_text(
                entry("Notes", f"foot --app-id={APP}", "X-Bgtaskd-LifecycleAware=true\n"))
            d = daemon(conf=f"[Apps]\nDataDirs={data}\nAdoptFrom={scratch.path}/user.slice\n"
                            "[Daemon]\nFreezerBackend=signal\nControlGroup=nogroup\n"
                            "[Lifecycle]\nDidEnterBackgroundTimeoutSec=2s\nSnapshotTimeoutSec=2s\n")
            for p in (d.root, d.runtime_dir):
                os.chmod(p, 0o755)
            scope = os.path.join(slice_dir, f"app-test-{APP}-1.scope")
            os.mkdir(scope)
            log = runtime / "notes.log"
            # The app's lifecycle-aware process first (it checks in with scenes), then its windows. Run by the
            # session user with Debian's python3: the app and the `varlink` package copied where that user can
            # read them.
            import varlink
            shutil.copytree(Path(varlink.__file__).parent, runtime / "py" / "varlink")
            shutil.copy(SCENE_APP, runtime / "py" / "scene_app.py")
            comp.spawn(["/usr/bin/python3", str(runtime / "py" / "scene_app.py"), "--log", str(log)], "notes-app.log",
                       cgroup=scope, BGTASKD_APP_ID=APP, BGTASKD_SOCKET=d.socket, PYTHONPATH=str(runtime / "py"))
            wait_for(lambda: any("checkedIn" in l for l in lines(log)), 10, "the app checked in")
            yield d, scope, log
        finally:
            shutil.rmtree(data, ignore_errors=True)
