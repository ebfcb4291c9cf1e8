"""The manifest cache of the state directory (man bgtaskd(8), `ManifestCache`): a restart takes unchanged
manifests from it, never one whose file changed, and a damaged cache is only ignored.

Its manifest is the repository's own `config/apps.d/org.example.Mail.app`, reached by a link: a file
checked out long before the test, so older than the cache's 2 s settling time and kept at the first
start (a file the test writes itself is read again until it has settled, whatever the cache holds)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import REPO_ROOT  # noqa: E402
from refresh_support import call  # noqa: E402

APP = "org.example.Mail"


def names(d) -> dict[str, str]:
    return {a["appId"]: a["name"] for a in call(d.socket, "io.bgtaskd.Manager.ListApps")["apps"]}


def relink(link: Path, target: Path):
    """Points `link` at `target` in one rename (as a package manager replaces a file)."""
    tmp = link.with_name(link.name + ".new")
    os.symlink(target, tmp)
    os.replace(tmp, link)


def test_a_restart_takes_unchanged_manifests_from_the_cache_and_never_a_changed_one(daemon, tmp_path):
    d = daemon()
    d.stop()
    apps = d.root / "config" / "apps.d"
    cache = d.root / "state" / "manifest-cache"
    relink(apps / f"{APP}.app", REPO_ROOT / "config" / "apps.d" / f"{APP}.app")

    d = daemon(root=d.root)
    assert names(d)[APP] == "Mail"
    d.stop()  # waits for the cache's write
    assert APP.encode() in cache.read_bytes(), "the settled manifest was not kept"

    # A changed manifest (here: the link pointed at a new file) is read again, not served from the cache.
    edited = tmp_path / f"{APP}.app"
    edited.write_text((REPO_ROOT / "config" / "apps.d" / f"{APP}.app").read_text().replace("Name=Mail", "Name=Post"))
    relink(apps / f"{APP}.app", edited)
    d = daemon(root=d.root)
    assert names(d)[APP] == "Post"
    d.stop()

    # Back to the settled file: kept again; then a damaged cache is ignored and written anew.
    relink(apps / f"{APP}.app", REPO_ROOT / "config" / "apps.d" / f"{APP}.app")
    d = daemon(root=d.root)
    assert names(d)[APP] == "Mail"
    d.stop()
    good = cache.read_bytes()
    assert APP.encode() in good
    for damaged in (good[: len(good) // 2], good[:-1] + bytes([good[-1] ^ 1]), b"[App]\n"):
        cache.write_bytes(damaged)
        d = daemon(root=d.root)
        assert names(d)[APP] == "Mail", d.output()
        d.stop()
        assert APP.encode() in cache.read_bytes(), "the cache was not written anew"
