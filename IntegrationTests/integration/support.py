"""Helpers for the integration tests: a raw Varlink client, timing bounds, notify sockets."""

from __future__ import annotations

import glob
import json
import os
import select
import socket
import time

# How long a healthy daemon may take to answer one call while another client misbehaves. Generous:
# a call takes well under a millisecond; this bounds a stall, it does not measure speed.
PROMPT = 2.0


class Closed(Exception):
    """The peer closed the connection."""


class RawClient:
    """A Varlink client on a bare Unix socket: sends any bytes, reads NUL-terminated replies."""

    def __init__(self, path: str, timeout: float = 5.0):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, data: bytes):
        self.sock.sendall(data)

    @staticmethod
    def encode(method: str, parameters: dict | None = None, more=False, oneway=False) -> bytes:
        m: dict = {"method": method}
        if parameters is not None:
            m["parameters"] = parameters
        if more:
            m["more"] = True
        if oneway:
            m["oneway"] = True
        return json.dumps(m).encode() + b"\0"

    def send_call(self, method: str, parameters: dict | None = None, more=False, oneway=False):
        self.send(self.encode(method, parameters, more, oneway))

    def recv_message(self, timeout: float = 5.0) -> dict:
        """The next reply; raises Closed at EOF (or reset) and TimeoutError when none comes in time."""
        deadline = time.monotonic() + timeout
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no reply within {timeout} s")
            r, _, _ = select.select([self.sock], [], [], left)
            if not r:
                continue
            try:
                data = self.sock.recv(65536)
            except (ConnectionResetError, BrokenPipeError) as e:
                raise Closed(str(e)) from e
            if not data:
                raise Closed("EOF")
            self.buf += data
        raw, self.buf = self.buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, parameters: dict | None = None, timeout: float = 5.0) -> dict:
        self.send_call(method, parameters)
        return self.recv_message(timeout)

    def wait_closed(self, timeout: float = 5.0) -> list[dict]:
        """Reads until the server closes; returns the replies received before. Raises TimeoutError."""
        got = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                got.append(self.recv_message(max(0.0, deadline - time.monotonic())))
            except Closed:
                return got


def get_info(path: str, timeout: float = PROMPT) -> dict:
    with RawClient(path, timeout=timeout) as c:
        reply = c.call("org.varlink.service.GetInfo", timeout=timeout)
    assert "error" not in reply, reply
    return reply["parameters"]


def timed_call(client: RawClient, method: str, parameters: dict | None = None, bound: float = PROMPT) -> dict:
    """One call on `client` that must be answered within `bound` seconds."""
    start = time.monotonic()
    reply = client.call(method, parameters, timeout=bound)
    elapsed = time.monotonic() - start
    assert elapsed < bound, f"{method} took {elapsed:.3f} s"
    return reply


def assert_answers(client: RawClient, bound: float = PROMPT):
    """The daemon answers `client` promptly and correctly."""
    reply = timed_call(client, "org.varlink.service.GetInfo", bound=bound)
    assert "error" not in reply, reply
    assert "io.bgtaskd.Manager" in reply["parameters"]["interfaces"]


def is_error_reply(message: dict) -> bool:
    return isinstance(message.get("error"), str) and "." in message["error"]


class NotifySocket:
    """A NOTIFY_SOCKET for sd_notify(3): an AF_UNIX datagram socket bound at `path`."""

    def __init__(self, path: str):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.received: list[dict] = []

    def close(self):
        self.sock.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def next(self, timeout: float = 5.0) -> dict:
        r, _, _ = select.select([self.sock], [], [], timeout)
        if not r:
            raise TimeoutError(f"no notification within {timeout} s (got so far: {self.received})")
        data = self.sock.recv(65536).decode()
        fields = dict(line.split("=", 1) for line in data.split("\n") if "=" in line)
        self.received.append(fields)
        return fields

    def wait_for(self, key: str, timeout: float = 5.0) -> tuple[dict, list[dict]]:
        """The first notification carrying `key`, and those before it."""
        before = []
        deadline = time.monotonic() + timeout
        while True:
            n = self.next(max(0.0, deadline - time.monotonic()))
            if key in n:
                return n, before
            before.append(n)


def wait_for(predicate, timeout: float, describe=lambda: "condition"):
    """Polls `predicate` every 5 ms until it is true; fails with `describe()` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if predicate():
                return
        except (OSError, ValueError, KeyError):
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s: {describe()}")
        time.sleep(0.005)  # poll interval of a bounded wait on a condition that has no notification


# The bgtaskd processes the running test started (the `daemon` fixture, DaemonInCgroup): journal read-backs
# match only their entries (`_PID`), never those of other daemons journaling at the same time (other
# worktrees' tests, CI runs on the same machine). conftest.py empties it before each test.
TEST_DAEMON_PIDS: list[int] = []
# When the running test began (CLOCK_REALTIME µs; conftest.py sets it): pids are reused over a long run
# (pid_max is 32768 here and one test alone starts a thousand apps), so an entry of the same `_PID` from
# before the test began is an earlier process's.
TEST_STARTED_USEC = 0


def journal_scope() -> list[str]:
    """journalctl arguments that read only what the running test can have written: `--since` its start
    (less a second), and `--file` of the journal files written since then (less two minutes: a file's
    mtime can lag its last write by the kernel's writeback) and of the files being written (`*.journal`
    without an `@`). The machine's shared journal may be gigabytes (journald keeps up to 4 GiB of /run, and
    the benches and tests fill it), and journalctl over all of it, read cold from disk, took 24–42 s here
    even with `--since` (it opens every file); over the recent files it takes a fraction of a second. When
    no journal directory is found, `--since` alone."""
    since = (TEST_STARTED_USEC - 1_000_000) / 1e6
    files = []
    for f in sorted(glob.glob("/run/log/journal/*/*.journal") + glob.glob("/var/log/journal/*/*.journal")):
        try:
            if "@" not in os.path.basename(f) or os.stat(f).st_mtime >= since - 120:
                files.append(f)
        except OSError:
            pass  # vacuumed meanwhile
    return [f"--since=@{since:.6f}"] + [f"--file={f}" for f in files]


def own_daemon_matches(matches) -> list[str]:
    """`matches` (FIELD=value) plus `_PID=` of each daemon the test started (journalctl ORs matches of
    one field, ANDs different fields), unless the test names a `_PID` itself."""
    matches = list(matches)
    if any(m.startswith("_PID=") for m in matches):
        return matches
    if not TEST_DAEMON_PIDS:
        raise AssertionError("this test started no bgtaskd: whose journal entries are these? (pass _PID=…)")
    return matches + [f"_PID={pid}" for pid in TEST_DAEMON_PIDS]


def journal_entries(want=None, timeout: float = 30.0, **match) -> list:
    """The journal entries of this test's bgtaskd processes (`own_daemon_matches`) matching FIELD=value
    pairs, oldest first, after `journalctl --sync`. With `want`, read again until `want(entries)` holds
    or `timeout` s have passed: the daemon hands entries to journald from its own queue, and journald
    252's `--sync` does not wait for datagrams still in its socket, so a count read at once can be short."""
    import json as _json
    import subprocess as _sp
    deadline = time.monotonic() + timeout
    while True:
        _sp.run(["journalctl", "--sync"], check=False)
        args = ["journalctl", "-t", "bgtaskd", "-o", "json", "--no-pager", *journal_scope()] + own_daemon_matches(
            f"{k}={v}" for k, v in match.items())
        out = _sp.run(args, capture_output=True, text=True, check=True).stdout
        entries = [_json.loads(l) for l in out.splitlines() if l.strip()]
        entries = [e for e in entries if int(e.get("__REALTIME_TIMESTAMP", "0")) >= TEST_STARTED_USEC]
        if want is None or want(entries) or time.monotonic() > deadline:
            return entries
        time.sleep(0.05)  # poll interval of a bounded wait: journald has no "caught up" notification


def json_lines(path) -> list[dict]:
    """The whole JSON lines an app under test has written to `path` so far ([] before it exists). A line
    the app is still writing (no newline yet: a write crossing a page boundary lands in two steps) is
    left for the next read instead of failing to parse."""
    from pathlib import Path as _Path
    try:
        text = _Path(path).read_text()
    except FileNotFoundError:
        return []
    return [json.loads(l) for l in text[:text.rfind("\n") + 1].splitlines() if l.strip()]


class AppLog:
    """An app under test: the JSON lines it writes to `log` ({"event": kind, …} per event) and its
    state as the daemon `d` reports it."""

    def __init__(self, d, app_id, log):
        from pathlib import Path as _Path
        self.d, self.id, self.log = d, app_id, _Path(log)

    def lines(self):
        return json_lines(self.log)

    def events(self):
        return [l["event"] for l in self.lines() if "event" in l]

    def wait_events(self, expected, timeout=5.0):
        wait_for(lambda: self.events() == expected, timeout,
                 lambda: f"events of {self.id}: {self.events()} (expected {expected})")

    def info(self):
        import varlink
        with varlink.Client(address="unix:" + self.d.socket) as c, c.open("io.bgtaskd.Manager") as m:
            return m.GetApp(self.id)["app"]

    def state(self):
        return self.info()["state"]

    def wait_state(self, state, timeout=5.0):
        wait_for(lambda: self.state() == state, timeout, lambda: f"{self.id} is {self.state()}, expected {state}")


def open_to_others(d):
    """Lets other uids reach the daemon's socket (the test directories are private by default)."""
    d.root.chmod(0o711)
    (d.root / "runtime").chmod(0o711)


def as_user(uid: int | None, gid: int | None, groups: list[int] | None, work) -> object:
    """Runs `work()` in a forked child (another process: another peer pid for the daemon), with these
    credentials where given (None: the test's own); returns what it returned (JSON), and fails the test
    with the child's exception if it raised."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            if groups is not None:
                os.setgroups(groups)
            if gid is not None:
                os.setgid(gid)
            if uid is not None:
                os.setuid(uid)
            result = work()
            os.write(w, json.dumps({"ok": result}).encode())
            code = 0
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            os.write(w, json.dumps({"exception": repr(e)}).encode())
        finally:
            os._exit(code)
    os.close(w)
    chunks = []
    while chunk := os.read(r, 65536):
        chunks.append(chunk)
    os.close(r)
    os.waitpid(pid, 0)
    out = json.loads(b"".join(chunks) or b'{"exception": "no output"}')
    assert "ok" in out, out
    return out["ok"]
