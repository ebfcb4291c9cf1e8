"""The README's "Try it" section, run as written, top to bottom (issue 12).

The commands come from README.md itself (the first ```sh block under "## Try it"), so the tour and this test
cannot drift apart: a line added to the README runs here, and a line this test does not know fails it.
Each line runs in bash in the repository's root with the environment the lines before it exported; `&`
lines run as background jobs in their own process group (`kill %1` signals the first one's group, as an
interactive shell does). After each line the test checks what it printed and its exit status; where a
line starts something that takes time (the grace window), the test waits for the daemon to report the
state the next line expects.

The tour's web server listens on the README's port 8765. Two tours on one machine (parallel CI runs,
several worktrees) would race for it, so as root the whole tour runs in a private network namespace
(`unshare -n`, loopback up): each line through `nsenter --net`, the port checks too. The daemon's socket
and journald's are files, reached from any network namespace, so the daemon and the journal read-back
work as they do outside. Unprivileged, the tour runs in the machine's network namespace.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from support import journal_scope

REPO = Path(__file__).resolve().parents[2]
APP = "org.example.WebServer"
PORT = 8765


def tour_lines() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Try it\n", 1)[1]
    block = section.split("```sh\n", 1)[1].split("\n```", 1)[0]
    return [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


class NetNS:
    """A private network namespace with loopback up, held by a process of its own (root only)."""

    def __init__(self):
        self.holder = subprocess.Popen(
            ["unshare", "--net", "sh", "-c", "ip link set lo up && echo up && exec sleep infinity"],
            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)
        line = self.holder.stdout.readline()  # blocks until the namespace is ready (or the holder died)
        if line.strip() != b"up":
            self.holder.wait(10)
            raise AssertionError(f"cannot make a private network namespace (unshare -n): exit {self.holder.returncode}")

    def prefix(self) -> list[str]:
        return ["nsenter", f"--net=/proc/{self.holder.pid}/ns/net", "--"]

    def close(self):
        self.holder.kill()
        self.holder.wait(10)


def port_open(port: int, prefix: list[str]) -> bool:
    """Whether something listens on 127.0.0.1:`port`, in the tour's network namespace."""
    probe = ("import socket, sys; s = socket.socket(); s.settimeout(0.5); "
             f"sys.exit(0 if s.connect_ex(('127.0.0.1', {port})) == 0 else 1)")
    return subprocess.run([*prefix, "python3", "-c", probe], stdin=subprocess.DEVNULL).returncode == 0


def wait_until(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)  # poll interval of a bounded wait on a condition that has no notification


class Tour:
    def __init__(self, prefix: list[str], logs: Path):
        # The command prefix that puts a process into the tour's network namespace (empty: none).
        self.prefix = prefix
        self.env = {k: v for k, v in os.environ.items() if k not in ("BGTASKD_SOCKET", "COLUMNS", "B")}
        self.jobs: list[tuple[str, subprocess.Popen, Path]] = []
        # The background jobs' output: pytest's own temporary directory, of which it keeps the last few runs.
        self.logs = logs

    def assign(self, line: str):
        """`export X=…` / `X=…`: the shell's value of X becomes part of the tour's environment."""
        name = re.match(r"(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=", line).group(1)
        out = subprocess.run(["bash", "-c", f"{line}\nprintf %s \"${name}\""], cwd=REPO, env=self.env,
                             capture_output=True, text=True, check=True)
        self.env[name] = out.stdout

    def background(self, line: str) -> tuple[subprocess.Popen, Path]:
        log = self.logs / f"job{len(self.jobs) + 1}.log"
        f = open(log, "wb")
        proc = subprocess.Popen([*self.prefix, "bash", "-c", line.rstrip().rstrip("&")], cwd=REPO, env=self.env, stdout=f,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        self.jobs.append((line, proc, log))
        return proc, log

    def run(self, line: str) -> subprocess.CompletedProcess:
        return subprocess.run([*self.prefix, "bash", "-c", line], cwd=REPO, env=self.env, capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)

    def manager(self, method: str, **params) -> dict:
        import varlink
        with varlink.Client(address="unix:" + self.env["BGTASKD_SOCKET"]) as c, c.open("io.bgtaskd.Manager") as m:
            return getattr(m, method)(**params)

    def state(self) -> str:
        return self.manager("GetApp", appId=APP)["app"]["state"]

    def cleanup(self):
        for _, proc, _ in self.jobs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        # A tour that failed half-way may leave the apps of a killed daemon (they run in sessions of
        # their own): they must not keep the port for the next run.
        from conftest import kill_apps_of
        kill_apps_of(str(REPO / ".run" / "io.bgtaskd"))


@pytest.fixture
def tour(journald, tmp_path):
    netns = NetNS() if os.geteuid() == 0 else None
    t = Tour(netns.prefix() if netns else [], tmp_path)
    try:
        yield t
    finally:
        t.cleanup()
        if netns:
            netns.close()


def test_readme_try_it_runs_as_written(tour, bin_dir):
    if port_open(PORT, tour.prefix):
        pytest.fail(f"port {PORT} is taken before the tour starts (the tour's web server needs it)")
    lines = tour_lines()
    assert lines and lines[0].startswith("make run &"), lines
    seen: list[str] = []
    for line in lines:
        command = line.split("  #")[0].strip()
        seen.append(command)
        if command.endswith("&"):
            proc, log = tour.background(command)
            if command.startswith("make run"):
                # `make run` builds (nothing to do after the test build) and says when it is ready.
                wait_until(lambda: "bgtaskd: ready, listening on" in log.read_text(errors="replace")
                           or proc.poll() is not None, 300, "make run to say ready")
                out = log.read_text(errors="replace")
                assert proc.poll() is None, out
                assert f"bgtaskd: ready, listening on {REPO}/.run/io.bgtaskd" in out, out
                assert re.search(r"bgtaskd: freezer backend (cgroup|signal): .+", out), out
            continue
        if re.match(r"(export\s+)?[A-Za-z_][A-Za-z0-9_]*=", command):
            tour.assign(command)
            continue
        if command == "kill %1":
            line0, make, log = tour.jobs[0]
            web_pid = tour.manager("GetApp", appId=APP)["app"]["pid"]
            os.killpg(make.pid, signal.SIGTERM)
            assert make.wait(30) in (0, 2, -15), log.read_text(errors="replace")
            # SPEC §9: nothing the daemon launched is left running (or frozen), so the port is free.
            assert not port_open(PORT, tour.prefix), "the web server outlived the daemon"
            assert web_pid and not Path(f"/proc/{web_pid}").exists() or \
                Path(f"/proc/{web_pid}/stat").read_text().split()[2] == "Z", web_pid
            assert "daemon-stopping" in subprocess.run(
                ["journalctl", "-t", "bgtaskd", f"BGTASKD_APP={APP}", "BGTASKD_DECISION=terminate", "-n", "3",
                 "-o", "json", "--no-pager", *journal_scope()], capture_output=True, text=True).stdout
            continue
        r = tour.run(command)
        out = r.stdout
        where = f"{command!r} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
        if "launch org.example.Nope" in command:
            assert r.returncode == 1 and r.stderr.startswith("bgtaskctl: App org.example.Nope not found"), where
            continue
        assert r.returncode == 0, where
        if command.endswith("bgtaskctl list"):
            assert APP in out and "org.example.Mail" in out, where
        elif "launch " + APP in command:
            assert tour.state() == "active", where
        elif command.startswith("curl"):
            assert out.strip() == "answers", where
        elif "background " + APP in command:
            # The grace window (DidEnterBackgroundTimeoutSec=5s in config/), then frozen.
            wait_until(lambda: tour.state() == "suspended", 15, f"{APP} to be suspended")
        elif "status " + APP in command:
            assert "State: suspended" in out and "Recent decisions (journal):" in out, where
        elif "explain " + APP in command:
            assert f"{APP} is suspended because of" in out and "no-assertions" in out, where
        elif "hold --app " + APP in command:
            assert out.strip() == "200", where
            wait_until(lambda: tour.state() == "suspended", 5, f"{APP} to be frozen again when the hold ends")
        elif "foreground " + APP in command:
            assert tour.state() == "active", where
        elif command.endswith("list --running"):
            rows = [l.split() for l in out.splitlines() if l.startswith("org.")]
            assert rows and rows[0][:2] == [APP, "active"] and rows[0][3] == "now", where
        elif command.endswith("bgtaskctl refresh"):
            assert "Background App Refresh:" in out and "org.example.Mail" in out, where
        elif "bgtaskctl log " + APP in command:
            assert APP in out, where
        elif "varlink.cli info" in command:
            assert "io.bgtaskd.Manager" in out, where
        elif "ListApps" in command:
            assert APP in [a["appId"] for a in json.loads(out)["apps"]], where
        else:
            pytest.fail(f"the README's tour has a line this test does not check: {command!r}")
    # The monitor started early printed the decisions the tour caused.
    monitor = [log for line, _, log in tour.jobs if "monitor" in line]
    assert monitor, "the tour starts a monitor"
    text = monitor[0].read_text(errors="replace")
    for decision in ("launch", "background", "suspend", "resume", "grant", "end", "foreground"):
        assert re.search(rf"{re.escape(APP)}\s+{decision}\b", text), (decision, text)
    assert seen[-1] == "kill %1"
