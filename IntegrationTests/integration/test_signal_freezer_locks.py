"""SPEC §14's lock check before a freeze with the signal freezer (FreezerBackend=signal): the app's
processes are its process tree, and the daemon reads /proc/locks first and then asks, for each pid it
names, whether that process is the app's (walking up its parents) instead of reading every process on
the machine. Real daemon, real journald, real processes holding a real flock: the holder is a child of
the app's shell in a session of its own, so only its parent links it to the app."""

from __future__ import annotations

import os
import sys
import textwrap
import time

from freezer_support import Manager, conf, journal, manifest, wait_for, wait_journal, write_script
from test_shared_device import waiter

APP = "org.test.TreeLocker"

# The app: a shell whose child leaves the shell's session, takes the lock and says so with its pid.
LOCKER = textwrap.dedent("""\
    import fcntl, os, sys, time
    path, ready = sys.argv[1], sys.argv[2]
    os.setsid()
    f = open(path, "r+")
    fcntl.flock(f, fcntl.LOCK_EX)
    with open(ready, "w") as r:
        r.write(str(os.getpid()))
    while True:
        time.sleep(3600)  # holds the lock while it runs
""")


def state_of(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        text = f.read()
    return text[text.rindex(")") + 2:].split()[0]


def start(daemon, tmp_path, **lifecycle):
    lock = tmp_path / "shared.lock"
    lock.write_text("x")
    ready = tmp_path / "ready"
    locker = write_script(tmp_path, "locker.py", LOCKER)
    shell = write_script(tmp_path, "app.sh", f"{sys.executable} {locker} {lock} {ready} &\nwait\n")
    text = conf(None, "signal", grace="200ms") + "".join(f"{k}={v}\n" for k, v in lifecycle.items())
    d = daemon(conf=text, apps={APP: manifest(APP, f"/bin/sh {shell}")})
    m = Manager(d.socket)
    m.launch(APP)
    wait_for(lambda: ready.exists() and ready.read_text().strip().isdigit(), 10, "the app's child to hold its lock")
    return m, str(lock), int(ready.read_text())


def test_a_lock_held_in_the_apps_tree_that_someone_waits_for_defers_the_signal_freeze(daemon, tmp_path):
    since = time.time()
    m, lock, holder = start(daemon, tmp_path, LockRecheckSec="200ms", LockDeferralSec="30s")
    try:
        with waiter(tmp_path, lock, "flock") as w:
            m.call("Background", appId=APP)
            deferred = wait_journal(since, f"BGTASKD_APP={APP}", "BGTASKD_DECISION=policy",
                                    "BGTASKD_REASON=holds-contended-lock", timeout=10)
            assert f"pid {w.pid}" in deferred[0]["MESSAGE"], deferred[0]["MESSAGE"]
            assert m.state(APP) == "background"
            assert state_of(holder) not in ("T", "t"), "the holder of a contended lock is not stopped"
            assert journal(since, f"BGTASKD_APP={APP}", "BGTASKD_DECISION=suspend") == []
    finally:
        m.call("Terminate", appId=APP)


def test_a_lock_nobody_waits_for_does_not_keep_the_app_from_its_signal_freeze(daemon, tmp_path):
    m, _, holder = start(daemon, tmp_path)
    try:
        m.call("Background", appId=APP)
        m.wait_state(APP, "suspended", timeout=10)
        assert state_of(holder) in ("T", "t"), "the app's lock holder was stopped with it"
    finally:
        m.call("Terminate", appId=APP)
