"""Helpers for the freezer tests (issue 5): a throw-away cgroup v2 directory for `CgroupRoot=`, app
manifests, a Manager client, the lifecycle-aware test app, real memory pressure, the journal."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from support import TEST_DAEMON_PIDS, RawClient, journal_scope, own_daemon_matches

_counter = itertools.count()


# MARK: cgroup v2

def v2_mount() -> str:
    """The cgroup2 mount point, from /proc/self/mounts (never hard-coded)."""
    with open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 3 and fields[2] == "cgroup2":
                return fields[1].replace("\\040", " ")
    raise RuntimeError("no cgroup2 file system mounted")


def read_events(path: str) -> dict:
    """cgroup.events as {"populated": 0|1, "frozen": 0|1}; {} when the cgroup is gone."""
    try:
        with open(os.path.join(path, "cgroup.events")) as f:
            return {k: int(v) for k, v in (line.split() for line in f if line.strip())}
    except (FileNotFoundError, ProcessLookupError):
        return {}


def procs(path: str) -> list[int]:
    """Pids in the cgroup and every cgroup below it."""
    out: list[int] = []
    try:
        with open(os.path.join(path, "cgroup.procs")) as f:
            out += [int(x) for x in f.read().split()]
        for name in sorted(os.listdir(path)):
            sub = os.path.join(path, name)
            if os.path.isdir(sub):
                out += procs(sub)
    except FileNotFoundError:
        pass
    return out


def _remove_tree(path: str):
    # The daemon may remove an app's cgroup at the same moment (its app exited): gone is fine.
    try:
        for name in os.listdir(path):
            sub = os.path.join(path, name)
            if os.path.isdir(sub):
                _remove_tree(sub)
        os.rmdir(path)
    except FileNotFoundError:
        pass


class ScratchCgroup:
    """<v2 mount>/bgtaskd-test-<pid>-<n>, for `CgroupRoot=`; everything in it is killed and it is
    removed on exit."""

    def __init__(self, suffix: str = ""):
        self.path = os.path.join(v2_mount(), f"bgtaskd-test-{os.getpid()}-{next(_counter)}{suffix}")

    def __enter__(self) -> "ScratchCgroup":
        os.mkdir(self.path)
        return self

    @property
    def apps(self) -> str:
        return os.path.join(self.path, "apps")

    def app(self, app_id: str) -> str:
        return os.path.join(self.apps, app_id)

    def app_dirs(self) -> list[str]:
        try:
            return sorted(n for n in os.listdir(self.apps) if os.path.isdir(os.path.join(self.apps, n)))
        except FileNotFoundError:
            return []

    def __exit__(self, *exc):
        if not os.path.isdir(self.path):
            return
        try:
            with open(os.path.join(self.path, "cgroup.kill"), "w") as f:
                f.write("1")
        except OSError:
            for pid in procs(self.path):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        wait_for(lambda: read_events(self.path).get("populated") == 0, 5, "test cgroup to empty")
        _remove_tree(self.path)


# MARK: waiting

def wait_for(predicate, timeout: float, what: str, interval: float = 0.002):
    """Polls `predicate` until it returns something truthy (returned) or `timeout` passes (raises)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)  # poll interval of a bounded wait on a condition that has no notification (cgroup files, /proc)


# MARK: processes

def proc_stat(pid: int) -> tuple[str, int] | None:
    """(state letter, utime+stime in ticks) from /proc/<pid>/stat; None when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[11]) + int(fields[12])


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    st = proc_stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_answers(port: int, timeout: float) -> bool:
    """Whether a GET / on 127.0.0.1:port gets a status line within `timeout`. A frozen server still
    completes the TCP handshake (the kernel does it) but never answers."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
            return s.recv(16).startswith(b"HTTP/")
    except OSError:
        return False


# MARK: configuration

def conf(cgroup_root: str | None = None, backend: str = "cgroup", *, grace: str = "300ms", kill: str = "1s",
         will_terminate: str = "1s", memory: str = "") -> str:
    lines = ["[Daemon]", f"FreezerBackend={backend}"]
    if cgroup_root:
        lines.append(f"CgroupRoot={cgroup_root}")
    lines += ["[Lifecycle]", f"DidEnterBackgroundTimeoutSec={grace}", f"KillTimeoutSec={kill}",
              f"WillTerminateTimeoutSec={will_terminate}", "LaunchTimeoutSec=10s"]
    if memory:
        lines += ["[Memory]", memory.strip()]
    return "\n".join(lines) + "\n"


def manifest(app_id: str, exec_line: str, *, aware: bool = False, env: dict | None = None,
             workdir: str = "/tmp") -> str:
    lines = ["[App]", f"ID={app_id}", f"Name={app_id}", f"Exec={exec_line}",
             f"LifecycleAware={'yes' if aware else 'no'}", f"WorkingDirectory={workdir}"]
    for k, v in (env or {}).items():
        lines.append(f"Environment={k}={v}")
    return "\n".join(lines) + "\n"


def http_server_manifest(app_id: str, port: int) -> str:
    return manifest(app_id, f"{sys.executable} -m http.server {port} --bind 127.0.0.1")


# A non-aware app whose main process and a child forked `delay` seconds after start each write a
# tick count to their own file every 10 ms: a frozen process stops counting.
TICKER = textwrap.dedent("""\
    import os, sys, time
    out, delay = sys.argv[1], float(sys.argv[2])
    def tick(name):
        n = 0
        while True:
            n += 1
            with open(f"{out}/{name}.tmp", "w") as f:
                f.write(str(n))
            os.replace(f"{out}/{name}.tmp", f"{out}/{name}")
            time.sleep(0.01)  # the app's own work (it ticks), not a wait
    time.sleep(delay)  # the app's own start-up delay (the scenario), not a wait
    pid = os.fork()
    if pid == 0:
        with open(f"{out}/child.pid", "w") as f:
            f.write(str(os.getpid()))
        tick("child")
    with open(f"{out}/main.pid", "w") as f:
        f.write(str(os.getpid()))
    tick("main")
""")

# A lifecycle-aware app on the independent Python `varlink` client: checks in with more, logs every
# event kind to a file, acknowledges what needs it (on a second connection), exits on will-terminate
# when told to.
AWARE_APP = textwrap.dedent("""\
    import json, os, sys, varlink
    log, exit_on_terminate = sys.argv[1], sys.argv[2] == "1"
    app_id, address = os.environ["BGTASKD_APP_ID"], "unix:" + os.environ["BGTASKD_SOCKET"]
    def note(text):
        with open(log, "a") as f:
            f.write(text + "\\n")
            f.flush()
    with varlink.Client(address=address) as client, \\
            client.open("io.bgtaskd.App", namespaced=False) as stream, \\
            client.open("io.bgtaskd.App", namespaced=False) as calls:
        note("pid " + str(os.getpid()))
        for reply in stream.CheckIn(app_id, _more=True):
            event = reply.get("event")
            if not event:
                note("checked-in " + reply["state"])
                continue
            note(event["kind"])
            if event.get("needsAck"):
                calls.Acknowledge(event["id"])
            if event["kind"] == "will-terminate" and exit_on_terminate:
                note("exiting")
                sys.exit(0)
""")


def write_script(directory: Path, name: str, text: str) -> str:
    path = directory / name
    path.write_text(text)
    return str(path)


# MARK: the daemon

class Manager:
    """io.bgtaskd.Manager calls on a daemon's socket (a fresh connection per call)."""

    def __init__(self, socket_path: str):
        self.socket = socket_path

    def call(self, method: str, **params) -> dict:
        with RawClient(self.socket, timeout=5.0) as c:
            reply = c.call(f"io.bgtaskd.Manager.{method}", params)
        if "error" in reply:
            raise AssertionError(f"{method}({params}) failed: {reply}")
        return reply.get("parameters", {})

    def app(self, app_id: str) -> dict:
        return self.call("GetApp", appId=app_id)["app"]

    def state(self, app_id: str) -> str:
        return self.app(app_id)["state"]

    def pid(self, app_id: str) -> int | None:
        return self.app(app_id)["pid"]

    def wait_state(self, app_id: str, state: str, timeout: float = 5.0) -> dict:
        return wait_for(lambda: (a := self.app(app_id))["state"] == state and a, timeout,
                        f"{app_id} to be {state}")

    def launch(self, app_id: str, background: bool = False) -> int:
        self.call("Launch", appId=app_id, background=background)
        return wait_for(lambda: self.pid(app_id), 5, f"{app_id} to get a pid")


class Monitor:
    """A Manager.Monitor stream: every decision as it happens."""

    def __init__(self, socket_path: str):
        self.client = RawClient(socket_path, timeout=5.0)
        self.client.send_call("io.bgtaskd.Manager.Monitor", {}, more=True)
        self.decisions: list[dict] = []

    def poll(self, timeout: float = 0.05) -> list[dict]:
        try:
            while True:
                reply = self.client.recv_message(timeout=timeout)
                if "error" in reply:
                    raise AssertionError(f"Monitor failed: {reply}")
                self.decisions.append(reply["parameters"]["decision"])
                timeout = 0.001
        except TimeoutError:
            pass
        return self.decisions

    def close(self):
        self.client.close()


# MARK: the journal

def journal(since_realtime: float, *matches: str) -> list[dict]:
    """Entries of this test's bgtaskd processes (`_PID`, support.own_daemon_matches) since a wall-clock
    time, filtered by FIELD=value matches."""
    out = subprocess.run(
        ["journalctl", "-t", "bgtaskd", "-o", "json", "--no-pager", f"--since=@{since_realtime:.6f}",
         *journal_scope()[1:], *own_daemon_matches(matches)],  # the files written since the test began
        capture_output=True, text=True, timeout=30)
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def wait_journal(since: float, *matches: str, count: int = 1, timeout: float = 5.0) -> list[dict]:
    def enough():
        entries = journal(since, *matches)
        return entries if len(entries) >= count else None
    return wait_for(enough, timeout, f"{count} journal entries matching {matches}", interval=0.1)


# MARK: memory pressure

def _v1_memory_cgroup() -> str | None:
    """This process's cgroup v1 memory controller directory, if that controller is on v1."""
    mount = None
    with open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 4 and fields[2] == "cgroup" and "memory" in fields[3].split(","):
                mount = fields[1]
    if mount is None:
        return None
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if "memory" in controllers.split(","):
                return mount + path.rstrip("/") if path != "/" else mount
    return None


@contextlib.contextmanager
def memory_pressure(limit_mib: int = 32, file_mib: int = 256):
    """Real, cheap, local memory pressure: one process re-reading a file larger than its memory limit
    inside a memory cgroup of its own. Page-cache reclaim and refaults stall it, which PSI counts in
    /proc/pressure/memory ("some"), while nothing else on the machine is short of memory.
    Uses the memory controller on cgroup v2 when it is available there, else on cgroup v1."""
    scratch = Path(tempfile.mkdtemp(prefix="bgtaskd-psi-", dir="/var/tmp"))
    data = scratch / "data.bin"
    with open(data, "wb") as f:
        chunk = os.urandom(1 << 20)
        for _ in range(file_mib):
            f.write(chunk)
        # Written back and dropped from the page cache now: cached pages stay charged to the cgroup of
        # this (writing) process, and the reader below would read them from there without ever
        # stalling (seen: 0 ms of stall, 0 MiB cached in its cgroup; the trigger fired on other load
        # of the machine, or not at all). DONTNEED drops clean pages only, hence the fsync first.
        f.flush()
        os.fsync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    v2 = v2_mount()
    cg = None
    try:
        with open(os.path.join(v2, "cgroup.controllers")) as f:
            v2_memory = "memory" in f.read().split()
    except OSError:
        v2_memory = False
    if v2_memory:
        cg = os.path.join(v2, f"bgtaskd-psi-{os.getpid()}-{next(_counter)}")
        os.mkdir(cg)
        with open(os.path.join(cg, "memory.max"), "w") as f:
            f.write(str(limit_mib << 20))
    else:
        parent = _v1_memory_cgroup()
        if parent is None:
            raise RuntimeError("no memory controller (cgroup v1 or v2) to create memory pressure with")
        cg = os.path.join(parent, f"bgtaskd-psi-{os.getpid()}-{next(_counter)}")
        os.mkdir(cg)
        with open(os.path.join(cg, "memory.limit_in_bytes"), "w") as f:
            f.write(str(limit_mib << 20))
    code = textwrap.dedent(f"""\
        import os
        fd = os.open({str(data)!r}, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
        while True:
            with open({str(data)!r}, "rb", buffering=0) as f:
                while f.read(1 << 20):
                    pass
        """)
    proc = subprocess.Popen(
        ["sh", "-c", f'echo $$ > {cg}/cgroup.procs && exec {sys.executable} -c "$0"', code],
        stdin=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()
        for _ in range(200):
            try:
                os.rmdir(cg)
                break
            except OSError:
                time.sleep(0.01)  # retry interval: a cgroup can be removed only once the kernel has released its last process
        data.unlink(missing_ok=True)
        scratch.rmdir()


class DaemonInCgroup:
    """A bgtaskd started inside a given cgroup (as systemd starts a service in its own cgroup), with
    its own throw-away directories. Stopped (SIGTERM, then SIGKILL) by `stop()`."""

    def __init__(self, bin_dir: Path, cgroup: str, conf_text: str, apps: dict | None = None):
        self.root = Path(tempfile.mkdtemp(prefix="bgtaskd-it-", dir="/tmp"))
        config = self.root / "config"
        (config / "bgtaskd.conf.d").mkdir(parents=True)
        (config / "apps.d").mkdir()
        (self.root / "state").mkdir()
        (self.root / "runtime").mkdir()
        (config / "bgtaskd.conf.d" / "50-test.conf").write_text(conf_text)
        for app_id, text in (apps or {}).items():
            (config / "apps.d" / f"{app_id}.app").write_text(text)
        self.socket = str(self.root / "runtime" / "io.bgtaskd")
        self.log_path = self.root / "output.log"
        args = [str(bin_dir / "bgtaskd"), "--config-dir", str(config), "--state-dir", str(self.root / "state"),
                "--runtime-dir", str(self.root / "runtime"), "--socket", self.socket]
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                ["sh", "-c", f'echo $$ > "$0/cgroup.procs" && exec "$@"', cgroup, *args],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        TEST_DAEMON_PIDS.append(self.proc.pid)  # `sh` execs bgtaskd: the same process
        deadline = time.monotonic() + 10
        while True:
            try:
                with RawClient(self.socket, timeout=1.0) as c:
                    if "error" not in c.call("org.varlink.service.GetInfo"):
                        break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"bgtaskd did not start:\n{self.log_path.read_text(errors='replace')}")
            time.sleep(0.01)  # poll interval of the readiness probe (GetInfo)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        import shutil
        shutil.rmtree(self.root, ignore_errors=True)
