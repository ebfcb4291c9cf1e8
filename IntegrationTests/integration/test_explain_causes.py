"""Explain lists what caused the app's state, and a refused CheckIn changes nothing.

`Explain(appId)` answers "why the app is in its state, from the recorded decisions" (SPEC §10): the
suspension and what led to it, not another user's refused call nor a notification queued for it
(`StateCause` in BGTaskCore says which decisions are causes). A CheckIn that is refused (another uid,
an app already checked in) moves no process into the app's cgroup (cgroup freezer)."""

from __future__ import annotations

import os

import pytest

from freezer_support import AWARE_APP, Manager, Monitor, ScratchCgroup, conf, manifest, wait_for, write_script
from support import RawClient, as_user, open_to_others
from test_signal_freezer import next_decision

APP = "org.test.Explained"
NOBODY = 65534


def aware_daemon(daemon, tmp_path, cgroup_root=None):
    pytest.importorskip("varlink")
    script = write_script(tmp_path, "aware.py", AWARE_APP)
    exec_line = f"/usr/bin/env python3 {script} {tmp_path}/app.log 0"
    backend = "cgroup" if cgroup_root else "signal"
    d = daemon(conf=conf(cgroup_root, backend, grace="300ms"), apps={APP: manifest(APP, exec_line, aware=True)})
    open_to_others(d)
    return d


def check_in_from_another_process(socket_path: str, uid: int | None) -> dict:
    """CheckIn for APP from a forked process (as `uid`): the reply, and /proc/self/cgroup before and after."""
    def work():
        with open("/proc/self/cgroup") as f:
            before = f.read()
        with RawClient(socket_path) as c:
            c.send_call("io.bgtaskd.App.CheckIn", {"appId": APP}, more=True)
            reply = c.recv_message()
            # A second call on the connection is answered after the CheckIn was handled in full.
            c.call("io.bgtaskd.App.RefreshStatus", {"appId": APP})
        with open("/proc/self/cgroup") as f:
            after = f.read()
        return {"reply": reply, "before": before, "after": after}
    return as_user(uid, uid, [] if uid is not None else None, work)


def test_explain_lists_the_suspension_and_its_cause_not_refusals_or_queued_notifications(daemon, tmp_path):
    d = aware_daemon(daemon, tmp_path)
    m = Manager(d.socket)
    monitor = Monitor(d.socket)
    m.call("Stats")  # the Monitor call was read before this one: the stream is registered
    try:
        m.launch(APP)
        m.wait_state(APP, "active", timeout=10)
        m.call("Background", appId=APP)
        suspend = next_decision(monitor, "suspend", app=APP)
        refused = check_in_from_another_process(d.socket, NOBODY)
        assert refused["reply"].get("error") == "io.bgtaskd.App.PermissionDenied", refused
        deny = next_decision(monitor, "deny", app=APP)
        m.call("PostNotification", name="sync-now", appId=APP)
        queued = next_decision(monitor, "notify", app=APP)
        assert queued["reason"] == "notification-queued", queued

        explained = m.call("Explain", appId=APP)
        assert explained["state"] == "suspended"
        listed = [(r["decision"], r["reason"]) for r in explained["reasons"]]
        assert (suspend["decision"], suspend["reason"]) in listed, listed
        assert ("background", "user-request") in listed, listed
        assert ("deny", deny["reason"]) not in listed, f"another uid's refused CheckIn is listed as a cause: {listed}"
        assert not [r for r in listed if r[0] == "notify"], f"a queued notification is listed as a cause: {listed}"
        # GetApp's lastDecision still says what was decided last.
        assert m.app(APP)["lastDecision"]["decision"] == "notify"
    finally:
        monitor.close()
        m.call("Terminate", appId=APP)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to create cgroups")
def test_a_refused_check_in_moves_no_process(daemon, tmp_path):
    with ScratchCgroup() as cg:
        d = aware_daemon(daemon, tmp_path, cg.path)
        m = Manager(d.socket)
        try:
            m.launch(APP)
            m.wait_state(APP, "active", timeout=10)
            # Another uid: PermissionDenied. The same uid as the app (root) while the app is checked in:
            # AlreadyCheckedIn. Neither process may end up in the app's cgroup.
            for uid, error in ((NOBODY, "io.bgtaskd.App.PermissionDenied"), (None, "io.bgtaskd.App.AlreadyCheckedIn")):
                out = check_in_from_another_process(d.socket, uid)
                assert out["reply"].get("error") == error, out
                assert out["after"] == out["before"], (
                    f"a CheckIn refused with {error} moved the caller from {out['before'].strip()} to {out['after'].strip()}")
            assert m.state(APP) == "active"
        finally:
            m.call("Terminate", appId=APP)
            m.wait_state(APP, "not-running")
