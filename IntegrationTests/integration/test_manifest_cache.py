"""The manifest cache of the state directory (man bgtaskd(8), `ManifestCache`): a restart takes unchanged
manifests from it, never one whose file changed, and a damaged cache is only ignored.

Its manifest is the repository's own `config/apps.d/org.example.Mail.app`, reached by a link: a file
checked out long before the test, so older than the cache's 2 s settling time and kept at the first
start (a file the test writes itself is read again until it has settled, whatever the cache holds)."""
from __future__ import annotations

import os
import sys
import time
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


def wait_settled(path: Path, seconds: float = 2.2):
    """Returns once `path` last changed more than `seconds` ago: the cache keeps a directory's listing
    only then (its 2 s settling time)."""
    left = os.stat(path).st_ctime + seconds - time.time()
    if left > 0:
        time.sleep(left)


def test_a_manifest_added_or_removed_while_stopped_is_seen_when_the_listing_was_kept(daemon):
    """The cache keeps apps.d's listing with the directory's stamp, and a start whose directory is unchanged
    does not list it again: a manifest renamed in (as a package manager installs one) or removed changes the
    directory, and the next start sees it."""
    d = daemon()
    d.stop()
    apps = d.root / "config" / "apps.d"
    wait_settled(apps)
    d = daemon(root=d.root)
    listed = names(d)
    d.stop()  # the cache now holds the settled directory's listing
    d = daemon(root=d.root)
    assert names(d) == listed  # from the kept listing
    d.stop()

    staged = d.root / "config" / "staged"
    staged.write_text("[App]\nID=org.example.Added\nName=Added\nExec=/bin/sleep 600\n")
    os.rename(staged, apps / "org.example.Added.app")
    d = daemon(root=d.root)
    assert names(d) == {**listed, "org.example.Added": "Added"}, d.output()
    d.stop()

    wait_settled(apps)
    d = daemon(root=d.root)
    assert names(d) == {**listed, "org.example.Added": "Added"}
    d.stop()  # the listing with the added manifest kept
    os.unlink(apps / "org.example.Added.app")
    d = daemon(root=d.root)
    assert names(d) == listed, d.output()
    d.stop()
