"""bgtaskd writes to the real journal (SPEC §11), read back with journalctl."""

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from support import journal_scope


def journal_entries(*matches: str, timeout: float = 5.0, want=lambda entries: bool(entries)) -> list[dict]:
    """`journalctl -o json` entries for `matches`, polled until `want(entries)` or the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        run = subprocess.run(["journalctl", "--no-pager", "-o", "json", "--all", *journal_scope(), *matches],
                             capture_output=True, text=True, timeout=10)
        entries = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
        if want(entries) or time.monotonic() > deadline:
            assert run.returncode in (0, 1), run.stderr
            return entries
        time.sleep(0.05)  # poll interval of the journal read-back


def test_journald_is_running(journald):
    run = subprocess.run(["journalctl", "--no-pager", "-n", "1", "-o", "json", *journal_scope()], capture_output=True, text=True,
                         timeout=10)
    assert run.returncode == 0, f"journalctl cannot read the journal: {run.stderr}"


def test_daemon_logs_go_to_the_journal(daemon, journald):
    d = daemon()
    d.send_signal(signal.SIGHUP)
    pid_match = f"_PID={d.pid}"

    def started_and_reloaded(entries):
        text = " ".join(e.get("MESSAGE", "") for e in entries)
        return d.socket in text and "reload" in text

    entries = journal_entries("SYSLOG_IDENTIFIER=bgtaskd", pid_match, want=started_and_reloaded)
    messages = [e.get("MESSAGE", "") for e in entries]
    assert started_and_reloaded(entries), \
        f"no start and reload lines from pid {d.pid} in the journal (journald {journald}); got {messages}\n" \
        f"daemon output:\n{d.output()}"
    start = next(e for e in entries if d.socket in e.get("MESSAGE", ""))
    assert start["SYSLOG_IDENTIFIER"] == "bgtaskd"
    assert start["_PID"] == str(d.pid)
    assert start["PRIORITY"] == "6", start
    assert start.get("CODE_FILE") and start.get("CODE_LINE", "").isdigit(), start
    # Nothing went to stderr instead (issue 12: only the short ready lines for a terminal).
    assert "bgtaskd started" not in d.output(), d.output()
    assert d.stop() == 0


# The journal budget (SPEC §11) would coalesce these grants: lifted here, so that these tests still see the
# journal queue's flow control for entries that are journaled one by one (test_journal_budget.py tests the budget).
BURST_CONF = """
[Daemon]
FreezerBackend=none
[Lifecycle]
MaxBackgroundTasksPerApp=20000
[Journal]
JournalAssertionBurst=1000000
JournalAssertionGlobalBurst=1000000
"""


def test_a_pipelined_burst_loses_no_journal_entry(daemon, journald):
    """SPEC §11: every decision is one entry. 12,000 calls arrive in one write, three times what the
    daemon's journal queue holds (4,096): the daemon must stop reading until journald has caught up,
    not drop entries, and still answer every call in order."""
    from support import RawClient, journal_entries as bgtaskd_entries

    app = "org.test.Burst"
    d = daemon(conf=BURST_CONF, apps={app: f"[App]\nID={app}\nExec=/bin/sleep 1000\nLifecycleAware=no\n"})
    n = 12000
    with RawClient(d.socket, timeout=60) as c:
        assert "error" not in c.call("io.bgtaskd.Manager.Launch", {"appId": app}), d.output()
        c.send(b"".join(RawClient.encode("io.bgtaskd.App.BeginBackgroundTask", {"appId": app, "name": f"t{i}"})
                        for i in range(n)))
        ids = [c.recv_message(timeout=60)["parameters"]["taskId"] for _ in range(n)]
        assert ids == sorted(ids) and len(set(ids)) == n and ids[0] > 0, "replies out of order or denied"
        stats = c.call("io.bgtaskd.Manager.Stats")["parameters"]["stats"]
    assert stats["journalDropped"] == 0, stats
    grants = bgtaskd_entries(want=lambda es: len(es) >= n, BGTASKD_APP=app, BGTASKD_DECISION="grant", _PID=d.pid)
    assert len(grants) == n, f"{len(grants)} grant entries in the journal for {n} grants"
    assert sorted(int(e["BGTASKD_TASK_ID"]) for e in grants) == ids


def test_a_stalled_journald_does_not_stop_the_daemon(private_journald, daemon):
    """Flow control has a limit: with journald stopped (SIGSTOP) its socket fills, the daemon's journal
    queue congests and clients wait — for one second at most; then the daemon serves again and drops
    (and counts) what does not fit. A stalled journald must not stall every app's calls. Once journald
    continues, every grant that was not counted as dropped is in the journal, once.

    The journald stopped is the test's own (a private one in its own mount namespace, private_journald.py),
    never the machine's: the daemon runs inside that namespace and writes to it."""
    from support import RawClient

    pj = private_journald
    app = "org.test.Stalled"
    d = daemon(conf=BURST_CONF, apps={app: f"[App]\nID={app}\nExec=/bin/sleep 1000\nLifecycleAware=no\n"},
               prefix=pj.daemon_prefix())
    n = 12000  # under the private journald's rate limit (22,500–25,000 per 30 s, see private_journald.py)
    with RawClient(d.socket, timeout=60) as c:
        assert "error" not in c.call("io.bgtaskd.Manager.Launch", {"appId": app}), d.output()
        pj.stop()
        try:
            t0 = time.monotonic()
            c.send(b"".join(RawClient.encode("io.bgtaskd.App.BeginBackgroundTask", {"appId": app}) for _ in range(n)))
            ids = [c.recv_message(timeout=30)["parameters"]["taskId"] for _ in range(n)]
            took = time.monotonic() - t0
            # A second client is served too while journald is still stopped.
            with RawClient(d.socket, timeout=10) as other:
                stats = other.call("io.bgtaskd.Manager.Stats")["parameters"]["stats"]
            # Still stopped: the private journald's process is in state T.
            assert open(f"/proc/{pj.pid}/stat").read().rsplit(")", 1)[1].split()[0] == "T"
        finally:
            pj.cont()
    assert len(set(ids)) == n and ids == sorted(ids) and ids[0] > 0
    dropped = stats["journalDropped"]
    assert dropped > 0, stats
    assert took < 15, f"{n} calls took {took:.1f} s with journald stopped"
    # Every grant decided while journald was stopped was either dropped (and counted) or journaled once
    # it continued: kept + dropped covers all n (the dropped count may include a log line or two).
    pid = f"_PID={d.pid}"

    def grant_ids(entries):
        return [int(e["BGTASKD_TASK_ID"]) for e in entries if e.get("BGTASKD_DECISION") == "grant"]

    entries = pj.wait_entries(pid, "BGTASKD_DECISION=grant", want=lambda es: len(grant_ids(es)) >= n - dropped,
                              timeout=60)
    kept = grant_ids(entries)
    print(f"\njournald stopped: {n} calls answered in {took:.2f} s, {dropped} entries dropped, "
          f"{len(kept)} grants journaled after it continued")
    assert len(kept) == len(set(kept)), "a grant journaled twice"
    assert set(kept) <= set(ids), "a grant journaled that no reply carried"
    assert 0 < len(kept) <= n and len(kept) + dropped >= n, (len(kept), dropped, n)
    # The send that found journald's queue full waited for it (Stats counts such sends).
    with RawClient(d.socket, timeout=10) as c:
        after = c.call("io.bgtaskd.Manager.Stats")["parameters"]["stats"]
    assert after["journalWaits"] >= 1, after


# sendmsg's system call number, by machine (what /proc/PID/task/TID/syscall shows while a thread waits in it).
SENDMSG = {"x86_64": 46, "aarch64": 211}


def blocked_in_sendmsg(pid: int) -> bool:
    """True when a thread of `pid` waits in sendmsg (the journal writer, on a journald that takes nothing)."""
    want = SENDMSG[os.uname().machine]
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            line = Path(f"/proc/{pid}/task/{tid}/syscall").read_text().split()
        except OSError:
            continue
        if line and line[0] == str(want):
            return True
    return False


def test_a_writer_that_waited_for_journald_keeps_order(private_journald, daemon):
    """SPEC §11: journald behind the daemon. With journald stopped, the journal writer fills journald's
    socket and waits in a send; when journald continues, that send ends having waited (Stats journalWaits),
    and the writer sends the rest as journald takes them, before what came meanwhile. Every
    grant — the 2,000 decided while journald was stopped (fewer than the daemon's journal queue holds, so
    none is dropped) and the 1,000 decided as it continued — is in the journal once, in the order decided.
    Deterministic where the unit test (JournalRoundTripTests) depends on journald's pace: here journald
    surely takes nothing until the test lets it."""
    from support import RawClient

    pj = private_journald
    app = "org.test.Paused"
    d = daemon(conf=BURST_CONF, apps={app: f"[App]\nID={app}\nExec=/bin/sleep 1000\nLifecycleAware=no\n"},
               prefix=pj.daemon_prefix())
    held, after = 2000, 1000
    begin = RawClient.encode("io.bgtaskd.App.BeginBackgroundTask", {"appId": app})
    with RawClient(d.socket, timeout=60) as c:
        assert "error" not in c.call("io.bgtaskd.Manager.Launch", {"appId": app}), d.output()
        before = c.call("io.bgtaskd.Manager.Stats")["parameters"]["stats"]
        pj.stop()
        try:
            c.send(begin * held)
            ids = [c.recv_message(timeout=30)["parameters"]["taskId"] for _ in range(held)]
            deadline = time.monotonic() + 30
            while not blocked_in_sendmsg(d.pid):
                assert time.monotonic() < deadline, "the journal writer never waited for the stopped journald"
                time.sleep(0.01)  # poll interval: the writer reaches journald's full queue within milliseconds
        finally:
            pj.cont()
        c.send(begin * after)
        ids += [c.recv_message(timeout=30)["parameters"]["taskId"] for _ in range(after)]
        n = held + after
        assert len(set(ids)) == n and ids == sorted(ids), "replies out of order"

        def grant_ids(entries):
            return [int(e["BGTASKD_TASK_ID"]) for e in entries if e.get("BGTASKD_DECISION") == "grant"]

        entries = pj.wait_entries(f"_PID={d.pid}", "BGTASKD_DECISION=grant", want=lambda es: len(grant_ids(es)) >= n,
                                  timeout=60)
        stats = c.call("io.bgtaskd.Manager.Stats")["parameters"]["stats"]
    assert stats["journalDropped"] == before["journalDropped"], stats
    assert stats["journalWaits"] > before.get("journalWaits", 0), stats
    assert stats["journalWaits"] - before.get("journalWaits", 0) <= n, stats
    assert grant_ids(entries) == ids, "grants journaled out of order, twice, or missing"


# MARK: no test signals a journald it did not start

REPO = Path(__file__).resolve().parents[2]
# Shell-level ways to signal, restart or reconfigure a journald (the Python ways go through journald_guard).
SHELL_SIGNAL = re.compile(r"""\b(pkill|killall)\b|\bkill\s+-|[\[,]\s*["']kill["']|"""
                          r"""\bsystemctl\s+(kill|restart|stop|reload|try-restart|reload-or-restart)\b""")
# journald's process name (/proc/PID/comm), not followed by "d" (the binary's path) or ".service"; written
# so that this file does not match itself.
COMM = re.compile("systemd-" + r"journal(?![a-z.\-])")
# Where a journald is looked up by its process name, and why that is allowed there.
COMM_LOOKUPS_ALLOWED = {
    "IntegrationTests/integration/journald_guard.py",      # the guard itself
    "IntegrationTests/integration/private_journald.py",    # waits for its own journald's comm
    "IntegrationTests/integration/fleet_support.py",       # waits for its own journald's and journal-remote's comm
    "bench/bench.py",                           # reads journald's CPU time (/proc/PID/stat), sends nothing
}


def test_no_test_signals_a_journald_it_did_not_start(journald, private_journald):
    """The house rule: a test may start a journald where none runs, but never signal, restart or
    reconfigure one that was already running. (1) Every Python way of sending a signal is guarded
    (journald_guard.py, installed by conftest.py): each of them, aimed at a journald the tests did not
    start, raises instead of sending — signal 0 here, so that even a broken guard would change nothing;
    the tests' own private journald is still theirs to stop and continue. (2) No file of the tests, the
    benchmarks, the scripts or the Makefile signals or restarts a journald from a shell, or looks one up by
    its process name outside the allowed places."""
    import journald_guard
    from journald_guard import JournaldSignalRefused

    assert journald_guard.installed()
    machine = [p for p in journald_guard.journald_pids() if p != private_journald.pid]
    assert machine, "no journald besides the private one (the journald fixture guarantees one)"
    target = machine[0]
    was_own = journald_guard.is_own(target)
    journald_guard.disown(target)  # one this session started is treated as the machine's for the check
    try:
        with pytest.raises(JournaldSignalRefused):
            os.kill(target, 0)
        with pytest.raises(JournaldSignalRefused):
            os.killpg(os.getpgid(target), 0)
        with pytest.raises(JournaldSignalRefused):
            os.kill(-os.getpgid(target), 0)
        with pytest.raises(JournaldSignalRefused):
            os.kill(-1, 0)
        with pytest.raises(JournaldSignalRefused):
            subprocess.Popen.send_signal(_PopenOf(target), 0)
        pidfd = os.pidfd_open(target)
        try:
            with pytest.raises(JournaldSignalRefused):
                signal.pidfd_send_signal(pidfd, 0)
        finally:
            os.close(pidfd)
    finally:
        if was_own:
            journald_guard.own(target)
    # The tests' own journald: stopped and continued through the same guarded calls.
    private_journald.stop()
    private_journald.cont()
    os.kill(private_journald.pid, 0)

    offending = []
    files = [p for d in ("IntegrationTests", "bench", "scripts") for p in (REPO / d).rglob("*") if p.is_file()]
    for path in [*files, REPO / "Makefile"]:
        rel = str(path.relative_to(REPO))
        if "__pycache__" in rel or path.suffix in (".pyc", ".json", ".md"):
            continue
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        for no, line in enumerate(text.splitlines(), 1):
            comment = line.lstrip().startswith("#")
            if not comment and "journal" in line and SHELL_SIGNAL.search(line):
                offending.append(f"{rel}:{no}: {line.strip()}")
            if COMM.search(line) and rel not in COMM_LOOKUPS_ALLOWED:
                offending.append(f"{rel}:{no}: {line.strip()}")
    assert offending == [], "\n".join(offending)


class _PopenOf(subprocess.Popen):
    """A Popen for an existing pid, not started by us (only for send_signal's path through os.kill)."""

    def __init__(self, pid: int):  # noqa: super().__init__ not called: nothing is started
        self.pid = pid
        self.returncode = None

    def poll(self, *args, **kwargs):
        return None

    def __del__(self):
        pass
