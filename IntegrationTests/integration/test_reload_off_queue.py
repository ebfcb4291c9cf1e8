"""A reload reads its files off the state queue (SPEC §9: "re-reads config and manifests without dropping
clients"; docs/design.md, "Reload"). With 5,000 manifests, reading them takes the daemon tens of
milliseconds or more; calls from other clients are answered meanwhile, and the reload's own answer still
says what changed. A daemon that read the files on its queue answers no call between a Reload and its
reply (the queue is serial): the first assertion fails there.
"""

from __future__ import annotations

import time

from support import RawClient

MANAGER = "io.bgtaskd.Manager"
APPS = 5000


def manifest(app_id: str, name: str | None = None) -> str:
    return f"[App]\nID={app_id}\nName={name or app_id}\nExec=/bin/true\n"


def test_calls_are_answered_while_a_reload_reads_the_manifests(daemon):
    apps = {f"org.test.R{i:05d}": manifest(f"org.test.R{i:05d}") for i in range(APPS)}
    d = daemon(apps=apps)
    apps_d = d.root / "config" / "apps.d"
    (apps_d / "org.test.Added.app").write_text(manifest("org.test.Added"))
    (apps_d / "org.test.R00007.app").write_text(manifest("org.test.R00007", "Renamed"))
    (apps_d / "org.test.R00009.app").unlink()

    answered_meanwhile = 0
    with RawClient(d.socket, timeout=60) as reloader, RawClient(d.socket) as other:
        reloader.send_call(f"{MANAGER}.Reload")
        deadline = time.monotonic() + 60
        reply = None
        while reply is None:
            assert time.monotonic() < deadline, "no answer to Reload within 60 s"
            assert "error" not in other.call(f"{MANAGER}.Stats")
            try:
                reply = reloader.recv_message(0.001)
            except TimeoutError:
                answered_meanwhile += 1
    print(f"\n{answered_meanwhile} Stats calls answered while the reload read {APPS} manifests")
    assert answered_meanwhile >= 3, f"only {answered_meanwhile} calls answered while the reload ran"
    assert "error" not in reply, reply
    applied = reply["parameters"]["applied"]
    assert "apps.d: org.test.Added added" in applied, applied
    assert "apps.d: org.test.R00007 changed" in applied, applied
    assert "apps.d: org.test.R00009 removed" in applied, applied

    # In force once answered, and a second reload finds nothing changed (the manifest cache it read
    # agrees with the files).
    with RawClient(d.socket) as c:
        assert c.call(f"{MANAGER}.GetApp", {"appId": "org.test.Added"})["parameters"]["app"]["appId"] == "org.test.Added"
        assert c.call(f"{MANAGER}.GetApp", {"appId": "org.test.R00007"})["parameters"]["app"]["name"] == "Renamed"
        assert "error" in c.call(f"{MANAGER}.GetApp", {"appId": "org.test.R00009"})
        again = c.call(f"{MANAGER}.Reload")
        assert again["parameters"] == {"applied": [], "notApplied": []}, again


def test_reloads_asked_for_while_one_reads_are_all_answered_with_what_the_files_say(daemon):
    apps = {f"org.test.R{i:05d}": manifest(f"org.test.R{i:05d}") for i in range(APPS)}
    d = daemon(apps=apps)
    apps_d = d.root / "config" / "apps.d"
    clients = [RawClient(d.socket, timeout=60) for _ in range(4)]
    try:
        clients[0].send_call(f"{MANAGER}.Reload")
        # Changed while the first reload may already read: the reloads asked for after it see the change.
        (apps_d / "org.test.Late.app").write_text(manifest("org.test.Late"))
        for c in clients[1:]:
            c.send_call(f"{MANAGER}.Reload")
        replies = [c.recv_message(60) for c in clients]
    finally:
        for c in clients:
            c.close()
    assert all("error" not in r for r in replies), replies
    seen = [r["parameters"]["applied"] for r in replies]
    # The last one asked for was answered after a read that began after the change: the app is in force.
    with RawClient(d.socket) as c:
        assert "error" not in c.call(f"{MANAGER}.GetApp", {"appId": "org.test.Late"})
    assert sum("apps.d: org.test.Late added" in a for a in seen) >= 1, seen


def test_an_exemption_a_reload_adds_applies_to_an_app_whose_manifest_did_not_change(daemon):
    """A reload registers again only the apps whose registration differs: here none of the manifests
    changed, only bgtaskd.conf's `[Apps] Exempt=`, and the exempt app is still not frozen after it."""
    keep, plain = "org.test.Keep", "org.test.Plain"
    conf = "[Daemon]\nFreezerBackend=signal\n[Apps]\nAdopt=no\n[Lifecycle]\nDidEnterBackgroundTimeoutSec=300ms\n"
    sleeper = "[App]\nID={}\nExec=/bin/sleep 600\nLifecycleAware=no\n"
    d = daemon(conf=conf, apps={keep: sleeper.format(keep), plain: sleeper.format(plain)})
    (d.root / "config" / "bgtaskd.conf.d" / "50-test.conf").write_text(conf + f"[Apps]\nExempt={keep}\n")
    with RawClient(d.socket) as c:
        reply = c.call(f"{MANAGER}.Reload")
        assert f"[Apps] Exempt={keep}" in reply["parameters"]["applied"], reply
        for app in (keep, plain):
            assert "error" not in c.call(f"{MANAGER}.Launch", {"appId": app})
            assert "error" not in c.call(f"{MANAGER}.Background", {"appId": app})

        def state(app):
            return c.call(f"{MANAGER}.GetApp", {"appId": app})["parameters"]["app"]["state"]
        deadline = time.monotonic() + 10
        while state(plain) != "suspended":
            assert time.monotonic() < deadline, f"{plain} was never suspended"
            time.sleep(0.05)  # poll interval of GetApp (the grace window is 300 ms)
        # Both grace windows ended together: the exempt app was not frozen with the plain one.
        assert state(keep) == "background"
        for app in (keep, plain):
            c.call(f"{MANAGER}.Terminate", {"appId": app})
