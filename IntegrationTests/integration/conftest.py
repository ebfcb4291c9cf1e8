"""Fixtures for the integration tests: the built binaries, a running journald, and bgtaskd instances
in throw-away directories.

Run with `python3 -m pytest -q IntegrationTests/integration` from the repository root after `swift build`
(or set BGTASKD_BIN_DIR to the directory holding `bgtaskd` and `varlink-certification`).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import journald_guard  # noqa: E402
import support  # noqa: E402
from private_journald import PrivateJournald  # noqa: E402
from support import TEST_DAEMON_PIDS, Closed, RawClient  # noqa: E402

# No test may signal a journald it did not start (journald_guard.py).
journald_guard.install()

REPO_ROOT = Path(__file__).resolve().parents[2]
JOURNAL_SOCKET = "/run/systemd/journal/socket"
JOURNALD = "/lib/systemd/systemd-journald"
START_TIMEOUT = 10.0
STOP_TIMEOUT = 5.0


# MARK: binaries

@pytest.fixture(scope="session")
def bin_dir() -> Path:
    """Where `swift build` put the binaries (BGTASKD_BIN_DIR overrides)."""
    env = os.environ.get("BGTASKD_BIN_DIR")
    if env:
        d = Path(env)
    else:
        try:
            out = subprocess.run(
                ["swift", "build", "--show-bin-path"], cwd=REPO_ROOT, capture_output=True, text=True,
                timeout=120, check=True,
            )
        except (OSError, subprocess.SubprocessError) as e:
            pytest.fail(f"cannot find the build directory (`swift build --show-bin-path` failed: {e}); "
                        "set BGTASKD_BIN_DIR")
        d = Path(out.stdout.strip().splitlines()[-1])
    for name in ("bgtaskd", "varlink-certification"):
        if not os.access(d / name, os.X_OK):
            pytest.fail(f"{d / name} is missing: run `swift build` first (or set BGTASKD_BIN_DIR)")
    return d


# MARK: journald

def _journal_socket_alive() -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        s.connect(JOURNAL_SOCKET)
        return True
    except OSError:
        return False
    finally:
        s.close()


@pytest.fixture(scope="session")
def journald():
    """A journald answering on /run/systemd/journal/socket: the running one, or one started here.

    Started without systemd as PID 1, journald still takes entries and writes /run/log/journal, which
    `journalctl` reads. One started here is left running on purpose: stopping it would leave its socket
    files behind, and a later bgtaskd would then send its log into a dead socket instead of stderr
    (as `make test` does, the next run simply reuses it).
    Any failure here fails the tests that need it, with the reason; nothing is skipped.
    """
    if _journal_socket_alive():
        return {"started": False}
    if not os.access(JOURNALD, os.X_OK):
        pytest.fail(f"no journal socket at {JOURNAL_SOCKET} and no {JOURNALD} to start (apt install systemd)")
    if os.geteuid() != 0:
        pytest.fail(f"no journal socket at {JOURNAL_SOCKET}, and starting {JOURNALD} needs root")
    machine_id = Path("/etc/machine-id")
    if not machine_id.exists() or not machine_id.read_text().strip():
        subprocess.run(["systemd-machine-id-setup"], capture_output=True, timeout=10)
    os.makedirs("/run/systemd/journal", exist_ok=True)
    # As scripts/ensure-journald.sh: no per-unit rate limit for a journald started for the tests (every
    # test process counts as one unit without systemd as PID 1; burst tests would see its suppression).
    os.makedirs("/run/systemd/journald.conf.d", exist_ok=True)
    Path("/run/systemd/journald.conf.d/50-bgtaskd-tests.conf").write_text(
        "# Written by bgtaskd IntegrationTests/integration/conftest.py\n[Journal]\nRateLimitIntervalSec=0\n")
    log_path = Path("/tmp/bgtaskd-it-journald.log")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([JOURNALD], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True)
    deadline = time.monotonic() + START_TIMEOUT
    while not _journal_socket_alive():
        if proc.poll() is not None or time.monotonic() > deadline:
            text = log_path.read_text(errors="replace")
            pytest.fail(f"{JOURNALD} did not come up (exit status {proc.poll()}); its output:\n{text}")
        time.sleep(0.01)  # poll interval: journald gives no notice of its socket coming up
    journald_guard.own(proc.pid)
    return {"started": True, "pid": proc.pid}


@pytest.fixture
def private_journald():
    """A journald of the test's own at journald's default rate limit, in a private mount namespace
    (private_journald.py); a daemon started with `prefix=private_journald.daemon_prefix()` writes to it.
    Tests that stop journald (SIGSTOP) use this one, never the machine's."""
    pj = PrivateJournald()
    try:
        yield pj
    finally:
        pj.close()


# MARK: bgtaskd

class Daemon:
    """One bgtaskd process in its own config, state and runtime directories."""

    def __init__(self, proc: subprocess.Popen, root: Path, socket_path: str, log_path: Path):
        self.proc = proc
        self.root = root
        self.config_dir = root / "config"
        self.state_dir = root / "state"
        self.runtime_dir = root / "runtime"
        self.socket = socket_path
        self.log_path = log_path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def output(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def wait_ready(self, timeout: float = START_TIMEOUT):
        """Polls until a GetInfo call on the socket is answered (a bare connect is not enough: under
        socket activation the listening socket exists before the daemon does)."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if not self.alive():
                raise AssertionError(
                    f"bgtaskd exited with status {self.proc.returncode} before answering:\n{self.output()}")
            try:
                with RawClient(self.socket, timeout=1.0) as c:
                    reply = c.call("org.varlink.service.GetInfo", timeout=max(0.05, deadline - time.monotonic()))
                if "error" not in reply:
                    return
                last = reply
            except (OSError, Closed, TimeoutError) as e:
                last = e
            time.sleep(0.005)  # poll interval of the readiness probe (GetInfo); tests that start bgtaskd under systemd use READY=1
        raise AssertionError(f"bgtaskd did not answer on {self.socket} within {timeout} s ({last!r}):\n{self.output()}")

    def send_signal(self, sig: int):
        self.proc.send_signal(sig)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM, then SIGKILL if it is still there after `timeout`; returns the exit status."""
        if self.alive():
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        return self.proc.returncode


def kill_apps_of(socket_path: str):
    """SIGKILLs every process started for the daemon on `socket_path` (their environment names it):
    a stopped daemon leaves its apps running (under systemd, KillMode=mixed ends them), a test must not."""
    needle = f"BGTASKD_SOCKET={socket_path}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    os.kill(int(entry), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            pass


@pytest.fixture(autouse=True)
def _own_daemons_only():
    """Journal read-backs of a test match the daemons it starts (support.own_daemon_matches)."""
    TEST_DAEMON_PIDS.clear()
    support.TEST_STARTED_USEC = time.time_ns() // 1000
    yield
    TEST_DAEMON_PIDS.clear()


@pytest.fixture
def daemon(bin_dir, journald):
    """Factory: `daemon()` starts a bgtaskd and returns once its socket answers.

    Keywords: `socket_activate=True` starts it under `systemd-socket-activate -l PATH --fdname=varlink`
    (no --socket); `env` adds environment variables (e.g. NOTIFY_SOCKET); `wait=False` returns at once;
    `prefix` is a command that execs the daemon (e.g. setpriv to run it as another user; it must exec,
    so that the process started is the daemon).
    Every daemon started is stopped (SIGTERM, then SIGKILL) and its directories removed at teardown.
    """
    started: list[Daemon] = []

    def start(*, socket_activate: bool = False, env: dict | None = None, wait: bool = True,
              extra_args: tuple = (), conf: str | None = None, apps: dict | None = None,
              root: Path | None = None, prefix: tuple = ()) -> Daemon:
        """`conf`: text of a drop-in (bgtaskd.conf.d/50-test.conf), e.g. short timings; `apps`: app id →
        manifest text, written to apps.d/<id>.app; `root`: reuse the directories of an earlier daemon
        (a restart: same config, state and socket)."""
        # Under /tmp rather than pytest's tmp_path: a Unix socket path must stay under 108 bytes.
        fresh = root is None
        if root is None:
            root = Path(tempfile.mkdtemp(prefix="bgtaskd-it-", dir="/tmp"))
        config_dir, state_dir, runtime_dir = root / "config", root / "state", root / "runtime"
        if fresh:
            if (REPO_ROOT / "config").is_dir():
                shutil.copytree(REPO_ROOT / "config", config_dir)
            else:
                config_dir.mkdir()
            state_dir.mkdir()
            runtime_dir.mkdir()
        if conf is not None:
            (config_dir / "bgtaskd.conf.d").mkdir(exist_ok=True)
            (config_dir / "bgtaskd.conf.d" / "50-test.conf").write_text(conf)
        if apps:
            (config_dir / "apps.d").mkdir(exist_ok=True)
            for app_id, text in apps.items():
                (config_dir / "apps.d" / f"{app_id}.app").write_text(text)
        args = [str(bin_dir / "bgtaskd"), "--config-dir", str(config_dir), "--state-dir", str(state_dir),
                "--runtime-dir", str(runtime_dir), *extra_args]
        proc_env = {k: v for k, v in os.environ.items()
                    if k not in ("NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "WATCHDOG_USEC")}
        # Desktop entries (SPEC §13) come only from the test's own data directories, not the machine's.
        proc_env["XDG_DATA_DIRS"] = str(root / "share")
        proc_env.update(env or {})
        if socket_activate:
            sock = str(root / "activated.sock")
            wrapper = [shutil.which("systemd-socket-activate") or "/usr/bin/systemd-socket-activate",
                       "-l", sock, "--fdname=varlink"]
            for k in (env or {}):
                wrapper += ["-E", k]  # it passes only what it is told to
            args = wrapper + args
        else:
            sock = str(runtime_dir / "io.bgtaskd")
            args += ["--socket", sock]
        args = [*prefix, *args]
        log_path = root / "output.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=proc_env)
        d = Daemon(proc, root, sock, log_path)
        started.append(d)
        TEST_DAEMON_PIDS.append(proc.pid)  # the wrapper and `prefix` exec the daemon: the same process
        if socket_activate:
            # The wrapper binds the path first; wait for it before anyone connects.
            deadline = time.monotonic() + START_TIMEOUT
            while not os.path.exists(sock):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"systemd-socket-activate did not bind {sock}:\n{d.output()}")
                time.sleep(0.005)  # poll interval: the wrapper gives no notice of binding the path
        if wait:
            d.wait_ready()
        return d

    yield start
    for d in started:
        d.stop()
        kill_apps_of(d.socket)
    for d in started:
        shutil.rmtree(d.root, ignore_errors=True)


@pytest.fixture
def bgtaskd(daemon) -> Daemon:
    """One daemon on its own socket, ready."""
    return daemon()


# MARK: certification server

@pytest.fixture
def cert_server(bin_dir):
    """The Varlink certification server (Tests/Support/varlink-certification) on a fresh socket."""
    root = Path(tempfile.mkdtemp(prefix="bgtaskd-cert-", dir="/tmp"))
    path = str(root / "cert.sock")
    log_path = root / "output.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([str(bin_dir / "varlink-certification"), f"--varlink=unix:{path}"],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if proc.poll() is not None:
            pytest.fail(f"varlink-certification exited ({proc.returncode}):\n{log_path.read_text()}")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(path)
            break
        except OSError:
            if time.monotonic() > deadline:
                pytest.fail(f"varlink-certification did not listen on {path}:\n{log_path.read_text()}")
            time.sleep(0.005)  # poll interval: the certification server gives no notice of listening
    yield path
    proc.terminate()
    try:
        status = proc.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        status = None
    shutil.rmtree(root, ignore_errors=True)
    assert status == 0, f"varlink-certification did not stop cleanly on SIGTERM (status {status})"
