"""bgtaskd writes to the real journal (SPEC §11), read back with journalctl."""

import json
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
        time.sleep(0.05)


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
    # Nothing went to stderr instead.
    assert d.socket not in d.output(), d.output()
    assert d.stop() == 0
