"""SPEC §16's wake discipline, for the daemon itself: with apps running and no deadline pending, an idle
daemon does not wake — no timer, no poll, no thread of its own or of libdispatch's ticking."""
import os
import time

import varlink

IDLE_CONF = """
[Daemon]
FreezerBackend=none
"""


def switches(pid: int) -> dict[str, int]:
    """Context switches of each of the process's threads (voluntary and not)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            status = open(f"/proc/{pid}/task/{tid}/status").read()
        except OSError:
            continue  # a thread that just ended
        out[tid] = sum(int(line.split()[1]) for line in status.splitlines() if "ctxt_switches" in line)
    return out


def woken(pid: int, before: dict[str, int]) -> int:
    after = switches(pid)
    return sum(n - before.get(tid, 0) for tid, n in after.items())


def test_an_idle_daemon_with_running_apps_does_not_wake(daemon):
    """Sixteen apps launched, one in the foreground, none with a deadline (FreezerBackend=none, the
    foreground app's background time not running): once libdispatch has retired the workers start-up and
    the launches used (about 5 s after their last work; waited for up to 15 s: a second with no switch),
    the daemon's threads switch at most once in 4 s. A timer ticking each second — or a libdispatch worker
    pool left watched — makes 4."""
    ids = [f"org.test.Idle{n:02d}" for n in range(16)]
    d = daemon(conf=IDLE_CONF, apps={i: f"[App]\nID={i}\nExec=/bin/sleep 600\nLifecycleAware=no\n" for i in ids})
    c = varlink.Client(address="unix:" + d.socket)
    with c, c.open("io.bgtaskd.Manager") as m:
        for i in ids:
            m.Launch(appId=i, background=True)
        m.Launch(appId=ids[0])
        # The background apps are suspended at their grace end (a decision, no freezer): wait for all.
        deadline = time.monotonic() + 15
        while sum(a["state"] == "suspended" for a in m.ListApps()["apps"]) < len(ids) - 1:
            assert time.monotonic() < deadline, [a["state"] for a in m.ListApps()["apps"]]
            time.sleep(0.05)  # poll interval of the states awaited
    settle_until = time.monotonic() + 15
    while time.monotonic() < settle_until:
        before = switches(d.pid)
        time.sleep(1)  # a whole second without a switch: the daemon has settled
        if woken(d.pid, before) == 0:
            break
    before = switches(d.pid)
    time.sleep(4)  # the window the idle daemon must sleep through
    n = woken(d.pid, before)
    assert n <= 1, f"the idle daemon's threads switched {n} times in 4 s"
