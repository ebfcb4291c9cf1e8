"""The fallback to SIGSTOP is the core's decision (DaemonCore+Freezes.swift): an app whose own cgroup the
daemon cannot freeze (its cgroup.freeze write refused) is stopped with signals instead, one decision
policy / freeze-fallback, and reported suspended only once every process is stopped.

Needs root and a cgroup2 mount; the daemon runs in a mount namespace of its own, where the app's cgroup is
made read-only (a bind mount onto itself) after the launch; nothing outside that namespace sees it.
"""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from freezer_support import Manager, ScratchCgroup, conf, journal, manifest, proc_stat, read_events, wait_for, wait_journal

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to create cgroups")

APP = "org.test.Fallback"


def test_an_app_whose_cgroup_cannot_be_frozen_is_stopped_with_signals_as_a_decision(daemon):
    with ScratchCgroup() as cg:
        prefix = ("unshare", "-m", "--propagation", "private", "--")
        d = daemon(conf=conf(cg.path, grace="300ms"), apps={APP: manifest(APP, "sleep 1000")}, prefix=prefix)
        m = Manager(d.socket)
        pid = m.launch(APP)
        app_cg = cg.app(APP)
        # Read-only in the daemon's namespace only (the same process: unshare execs the daemon).
        subprocess.run(["nsenter", "-m", "-t", str(d.pid), "sh", "-c",
                        f'mount --bind "{app_cg}" "{app_cg}" && mount -o remount,bind,ro "{app_cg}"'], check=True)
        since = time.time()
        m.call("Background", appId=APP)
        first = wait_journal(since, f"BGTASKD_APP={APP}", "BGTASKD_DECISION=policy", "BGTASKD_DECISION=suspend",
                             timeout=10)[0]
        assert (first["BGTASKD_DECISION"], first["BGTASKD_REASON"]) == ("policy", "freeze-fallback"), first["MESSAGE"]
        assert "Read-only file system" in first["MESSAGE"] and "stopping it with signals" in first["MESSAGE"], first["MESSAGE"]
        suspend = wait_journal(since, f"BGTASKD_APP={APP}", "BGTASKD_DECISION=suspend", timeout=10)
        assert [e["BGTASKD_REASON"] for e in suspend] == ["no-assertions"]
        # Stopped with SIGSTOP, not frozen by the cgroup.
        assert m.state(APP) == "suspended"
        assert (proc_stat(pid) or ("?",))[0] == "T"
        assert read_events(app_cg).get("frozen") == 0
        # The way back is SIGCONT: it runs again.
        m.call("Foreground", appId=APP)
        wait_for(lambda: (proc_stat(pid) or ("T",))[0] != "T", 5, "the app to run again after SIGCONT")
        assert journal(since, f"BGTASKD_APP={APP}", "BGTASKD_DECISION=policy")[0]["BGTASKD_REASON"] == "freeze-fallback"
