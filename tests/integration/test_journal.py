"""bgtaskd writes to the real journal (SPEC §11), read back with journalctl."""

import json
import os
import signal
import subprocess
import time


def journal_entries(*matches: str, timeout: float = 5.0, want=lambda entries: bool(entries)) -> list[dict]:
    """`journalctl -o json` entries for `matches`, polled until `want(entries)` or the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        run = subprocess.run(["journalctl", "--no-pager", "-o", "json", "--all", *matches],
                             capture_output=True, text=True, timeout=10)
        entries = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
        if want(entries) or time.monotonic() > deadline:
            assert run.returncode in (0, 1), run.stderr
            return entries
        time.sleep(0.05)  # poll interval of the journal read-back


def test_journald_is_running(journald):
    run = subprocess.run(["journalctl", "--no-pager", "-n", "1", "-o", "json"], capture_output=True, text=True,
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


def _journald_pid() -> int:
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if open(f"/proc/{p}/comm").read().strip() == "systemd-journal":
                    return int(p)
            except OSError:
                pass
    return 0


def test_a_stalled_journald_does_not_stop_the_daemon(daemon, journald):
    """Flow control has a limit: with journald stopped (SIGSTOP) its socket fills, the daemon's journal
    queue congests and clients wait — for one second at most; then the daemon serves again and drops
    (and counts) what does not fit. A stalled journald must not stall every app's calls."""
    from support import RawClient

    app = "org.test.Stalled"
    d = daemon(conf=BURST_CONF, apps={app: f"[App]\nID={app}\nExec=/bin/sleep 1000\nLifecycleAware=no\n"})
    jpid = _journald_pid()
    assert jpid, "no systemd-journald process found"
    n = 12000
    with RawClient(d.socket, timeout=60) as c:
        assert "error" not in c.call("io.bgtaskd.Manager.Launch", {"appId": app}), d.output()
        os.kill(jpid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            c.send(b"".join(RawClient.encode("io.bgtaskd.App.BeginBackgroundTask", {"appId": app}) for _ in range(n)))
            ids = [c.recv_message(timeout=30)["parameters"]["taskId"] for _ in range(n)]
            took = time.monotonic() - t0
            # A second client is served too while journald is still stopped.
            with RawClient(d.socket, timeout=10) as other:
                stats = other.call("io.bgtaskd.Manager.Stats")["parameters"]["stats"]
        finally:
            os.kill(jpid, signal.SIGCONT)
    assert len(set(ids)) == n and ids == sorted(ids)
    assert stats["journalDropped"] > 0, stats
    assert took < 15, f"{n} calls took {took:.1f} s with journald stopped"
