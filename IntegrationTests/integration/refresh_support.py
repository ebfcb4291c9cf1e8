"""Helpers for test_refresh.py, and a small lifecycle-aware app the daemon launches.

As a program (`python3 refresh_support.py app`, run by bgtaskd from a manifest's Exec=), it checks in on
BGTASKD_SOCKET with `more`, appends every reply to the JSON-lines file RT_EVENTS, acknowledges what needs
acknowledging, and answers `perform-task` with `CompleteTask` (RT_COMPLETE=no: never). It exits on
`will-terminate` and when the daemon closes its stream. It speaks Varlink on a bare socket (support.RawClient)
so that nothing between the test and the daemon interprets the messages.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from support import Closed, RawClient, journal_scope  # noqa: E402

HERE = Path(__file__).resolve()
APP = "io.bgtaskd.App"
MANAGER = "io.bgtaskd.Manager"

# Short timings: the tests wait for real timers.
CONF = """\
[Daemon]
FreezerBackend=signal
[Lifecycle]
DidEnterBackgroundTimeoutSec=3s
RefreshTaskBudgetSec=2s
ProcessingTaskBudgetSec=2s
ExpirationWarningSec=500ms
LaunchTimeoutSec=10s
WillTerminateTimeoutSec=1s
KillTimeoutSec=1s
[Refresh]
MinimumRefreshIntervalSec=0
ProcessingIdleSec=0
# Dated tasks run at their date, not on the next 5 min slot (SPEC §16's aligned wakes: test_energy.py).
WakeAlignmentSec=0
"""


# MARK: the app

def app_main() -> int:
    app_id = os.environ["BGTASKD_APP_ID"]
    path = os.environ["BGTASKD_SOCKET"]
    log_path = os.environ["RT_EVENTS"]
    complete = os.environ.get("RT_COMPLETE", "yes") == "yes"
    log = open(log_path, "a", buffering=1)

    def note(entry: dict):
        entry["t"] = time.monotonic()
        log.write(json.dumps(entry) + "\n")

    stream = RawClient(path, timeout=None)
    calls = RawClient(path, timeout=10.0)
    stream.send_call(f"{APP}.CheckIn", {"appId": app_id}, more=True)
    note({"checkin": True, "pid": os.getpid()})
    while True:
        try:
            reply = stream.recv_message(timeout=3600)
        except (Closed, TimeoutError, OSError):
            note({"closed": True})
            return 0
        if "error" in reply:
            note({"error": reply["error"], "parameters": reply.get("parameters")})
            return 1
        params = reply.get("parameters", {})
        event = params.get("event")
        if event is None:
            note({"first": True, "state": params.get("state"), "refreshStatus": params.get("refreshStatus")})
            continue
        note({k: event.get(k) for k in ("id", "kind", "state", "identifier", "name", "payload", "launchReason",
                                         "needsAck", "taskId")})
        kind = event["kind"]
        if event.get("needsAck"):
            calls.call(f"{APP}.Acknowledge", {"eventId": event["id"]})
            # Answered: the daemon has decided what the acknowledgement leads to (tests wait for this).
            note({"acked": event["id"]})
        if kind == "perform-task" and complete:
            r = calls.call(f"{APP}.CompleteTask", {"appId": app_id, "identifier": event["identifier"], "success": True})
            note({"completed": event["identifier"], "reply": r})
        if kind == "will-terminate":
            note({"exiting": True})
            return 0


# MARK: test helpers

class VarlinkCallError(Exception):
    def __init__(self, reply: dict):
        super().__init__(f"{reply['error']} {reply.get('parameters')}")
        self.name = reply["error"]
        self.parameters = reply.get("parameters", {})


def call(socket_path: str, method: str, **parameters) -> dict:
    """One call on a fresh connection; the reply's parameters, or VarlinkCallError."""
    with RawClient(socket_path, timeout=10.0) as c:
        reply = c.call(method, parameters, timeout=10.0)
    if "error" in reply:
        raise VarlinkCallError(reply)
    return reply.get("parameters", {})


def error_of(socket_path: str, method: str, **parameters) -> VarlinkCallError:
    """The error a call must fail with."""
    try:
        reply = call(socket_path, method, **parameters)
    except VarlinkCallError as e:
        return e
    raise AssertionError(f"{method}({parameters}) succeeded: {reply}")


def realtime_usec(offset_seconds: float = 0.0) -> int:
    return int((time.time() + offset_seconds) * 1_000_000)


def manifest(app_id: str, events: Path, *, modes: str = "fetch processing", permitted: list[str] | None = None,
             complete: bool = True, extra: str = "") -> str:
    permitted = permitted if permitted is not None else [f"{app_id}.refresh"]
    return (
        "[App]\n"
        f"ID={app_id}\n"
        f"Exec={sys.executable} {HERE} app\n"
        f"BackgroundModes={modes}\n"
        f"PermittedTaskIdentifiers={' '.join(permitted)}\n"
        f"Environment=RT_EVENTS={events}\n"
        f"Environment=RT_COMPLETE={'yes' if complete else 'no'}\n"
        "Environment=PYTHONUNBUFFERED=1\n"
        f"{extra}"
    )


class EventLog:
    """The JSON lines an app wrote."""

    def __init__(self, path: Path):
        self.path = path

    def entries(self) -> list[dict]:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def events(self) -> list[dict]:
        return [e for e in self.entries() if "kind" in e]

    def kinds(self) -> list[str]:
        return [e["kind"] for e in self.events()]

    def wait_for(self, predicate, timeout: float = 10.0, what: str = "") -> list[dict]:
        deadline = time.monotonic() + timeout
        while True:
            entries = self.entries()
            if predicate(entries):
                return entries
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what or predicate}; app log:\n"
                                     + "\n".join(json.dumps(e) for e in entries))
            time.sleep(0.02)  # poll interval of the app's own event log (written by another process)

    def wait_kind(self, kind: str, count: int = 1, timeout: float = 10.0) -> list[dict]:
        return self.wait_for(lambda es: sum(1 for e in es if e.get("kind") == kind) >= count, timeout,
                             f"{count} × {kind}")


def wait_state(socket_path: str, app_id: str, state: str, timeout: float = 10.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        info = call(socket_path, f"{MANAGER}.GetApp", appId=app_id)["app"]
        if info["state"] == state:
            return info
        if time.monotonic() > deadline:
            raise AssertionError(f"{app_id} is {info['state']}, not {state}, after {timeout} s: {info}")
        time.sleep(0.02)  # poll interval of GetApp: the state itself is the event awaited


def _process_start_usec(pid: int) -> int:
    """When process `pid` started, in CLOCK_REALTIME µs (0 when it is gone): from /proc, so that entries of
    an earlier process that had the same pid (pids are reused over a long test run) are not taken."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat") as f:
            btime = next(int(line.split()[1]) for line in f if line.startswith("btime "))
    except (OSError, ValueError, StopIteration):
        return 0
    return (btime * 1_000_000 + ticks * 1_000_000 // os.sysconf("SC_CLK_TCK")) - 2_000_000  # btime is whole seconds


def journal(pid: int, *matches: str, want=lambda entries: bool(entries), timeout: float = 10.0) -> list[dict]:
    """The daemon's journal entries (`_PID=pid`, written since that process started) matching `matches`,
    polled until `want(entries)`."""
    deadline = time.monotonic() + timeout
    since = _process_start_usec(pid)
    while True:
        run = subprocess.run(["journalctl", "--no-pager", "-o", "json", "--all", "-t", "bgtaskd", f"_PID={pid}",
                              *journal_scope(), *matches], capture_output=True, text=True, timeout=10)
        entries = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
        entries = [e for e in entries if int(e.get("__REALTIME_TIMESTAMP", "0")) >= since]
        if want(entries) or time.monotonic() > deadline:
            return entries
        time.sleep(0.05)  # poll interval of the journal read-back


def decisions(pid: int, app_id: str | None = None, decision: str | None = None, reason: str | None = None,
              want=lambda entries: bool(entries), timeout: float = 10.0) -> list[dict]:
    matches = []
    if app_id:
        matches.append(f"BGTASKD_APP={app_id}")
    if decision:
        matches.append(f"BGTASKD_DECISION={decision}")
    if reason:
        matches.append(f"BGTASKD_REASON={reason}")
    return journal(pid, *matches, want=want, timeout=timeout)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "app":
        sys.exit(app_main())
    print(__doc__)
