"""A systemd-journald of the tests' own, with journald's DEFAULT rate limit, and a `*.service` cgroup.

The machine's journald (and the one scripts/ensure-journald.sh starts) runs with the rate limit switched off,
which would hide what SPEC §11's journal budget is for. This one runs in a private mount namespace
(`unshare -m`): private tmpfs on /run/systemd (so the tests' rate-limit drop-in in
/run/systemd/journald.conf.d is not seen, and its sockets are its own), /run/log (its volatile journal) and
/var/log/journal, and a journald.conf of its own bind-mounted over /etc/systemd/journald.conf that sets only
`Storage=volatile` (RateLimitIntervalSec=30s, RateLimitBurst=10000: journald's defaults). Nothing of it is
visible outside the namespace; the machine's journald is never touched.

journald scales the burst with the free space of its journal (`burst_modulate()` in journald-rate-limit.c:
10,000 × (log2(available bytes) − 16) / 4 above 1 MiB). /run/log is a 1 GiB tmpfs here, so journald keeps
10% of it (~107 MB) and the effective burst is 22,500–25,000 entries per 30 s: the flood tests send more
than that.

journald rate-limits per unit, and takes the unit from the sender's cgroup: a daemon started with
`daemon_prefix()` runs in a throw-away cgroup `bgtaskd-test-XXXX.service` under the cgroup2 mount (found in
/proc/self/mounts) and in the journald's mount namespace (so its `sd_journal_sendv` reaches this journald).
`close()` stops journald (SIGCONT first, in case a test stopped it), moves what is left in the cgroup to the
root cgroup and removes it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import journald_guard

JOURNALD = "/lib/systemd/systemd-journald"


def cgroup2_mount() -> str:
    with open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[2] == "cgroup2":
                return parts[1]
    raise AssertionError("no cgroup2 mount in /proc/self/mounts")


def namespace_script(conf: Path, run_log_size: str, extra: tuple = ()) -> str:
    """The shell script, run by `unshare -m …`, that gives a journald private tmpfs on /run/systemd, /run/log
    (`run_log_size`) and /var/log/journal, `conf` over /etc/systemd/journald.conf, no journald.conf.d, and
    `extra` lines (more mounts) before it execs journald."""
    return "\n".join([
        "set -e",
        "mount -t tmpfs -o mode=0755 tmpfs /run/systemd",
        f"mkdir -p /run/log && mount -t tmpfs -o mode=0755,size={run_log_size} tmpfs /run/log",
        "if [ -d /var/log/journal ]; then mount -t tmpfs -o mode=0755 tmpfs /var/log/journal; fi",
        f"mount --bind {conf} /etc/systemd/journald.conf",
        "if [ -d /etc/systemd/journald.conf.d ]; then mount -t tmpfs tmpfs /etc/systemd/journald.conf.d; fi",
        *extra,
        "mkdir -p /run/systemd/journal",
        f"exec {JOURNALD}",
    ])


def journald_up(pid: int) -> bool:
    """Whether the journald started by `namespace_script` as `pid` takes entries on a socket of its own."""
    # Until the namespace's mounts are made, /proc/PID/root/run/systemd is the machine's: wait for
    # journald itself (the shell has exec'd it) on a socket of its own tmpfs.
    root = f"/proc/{pid}/root"
    try:
        if open(f"/proc/{pid}/comm").read().strip() != "systemd-journal":
            return False
        if os.stat(f"{root}/run/systemd").st_dev == os.stat("/run/systemd").st_dev:
            return False
    except OSError:
        return False
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        s.connect(f"{root}/run/systemd/journal/socket")
        return True
    except OSError:
        return False
    finally:
        s.close()


def wait_up(predicate, timeout: float, what: str, proc: subprocess.Popen, log: Path):
    """Waits for `predicate()`; fails with `log` if `proc` exits first or `timeout` s pass."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{what} did not come up ({proc.poll()}): {log.read_text(errors='replace')}")
        time.sleep(0.02)  # poll interval: these services give no notice of being ready


class PrivateJournald:
    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="bgtaskd-pj-", dir="/tmp"))
        conf = self.dir / "journald.conf"
        conf.write_text("# bgtaskd tests: journald's default rate limit (10000 per 30s per unit)\n"
                        "[Journal]\nStorage=volatile\n")
        script = namespace_script(conf, "1G")
        self.log = open(self.dir / "journald.log", "wb")
        # unshare(1) makes the new namespace's mounts private (--propagation private is its default).
        self.proc = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
                                     start_new_session=True)
        self.pid = self.proc.pid  # sh and unshare exec: this is journald
        journald_guard.own(self.pid)  # the tests' own: they may stop and continue it (journald_guard.py)
        self.root = f"/proc/{self.pid}/root"
        self.socket = f"{self.root}/run/systemd/journal/socket"
        wait_up(lambda: journald_up(self.pid), 10, "private journald", self.proc, self.dir / "journald.log")
        self.cgroup = Path(cgroup2_mount()) / f"bgtaskd-test-{uuid.uuid4().hex[:8]}.service"
        self.cgroup.mkdir()

    def daemon_prefix(self) -> tuple:
        """A command that puts itself into the `.service` cgroup and the journald's mount namespace, then
        execs the rest of its arguments (the daemon keeps the pid)."""
        return ("sh", "-c", f'echo $$ > {self.cgroup}/cgroup.procs && exec nsenter --mount=/proc/{self.pid}/ns/mnt -- "$@"',
                "sh")

    def entries(self, *matches: str) -> list[dict]:
        """`journalctl -o json` of this journald's files."""
        subprocess.run(["nsenter", f"--mount=/proc/{self.pid}/ns/mnt", "--", "journalctl", "--sync"],
                       capture_output=True, timeout=30)
        run = subprocess.run(["journalctl", f"--directory={self.root}/run/log/journal", "--no-pager", "-o", "json",
                              "--all", *matches], capture_output=True, text=True, timeout=60)
        assert run.returncode in (0, 1), run.stderr
        return [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]

    def mark(self) -> str:
        """Sends a marker entry from this (test) process to the journald's socket and returns its text.
        The test process's cgroup names no unit, so journald never rate-limits it; datagrams on one socket
        are taken in order: once the marker is in the journal, every entry sent to the socket before it
        was taken (journaled or dropped)."""
        text = f"bgtaskd-test-marker-{uuid.uuid4().hex}"
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            s.sendto(f"MESSAGE={text}\nSYSLOG_IDENTIFIER=bgtaskd-test-marker\n".encode(), self.socket)
        finally:
            s.close()
        return text

    def wait_marker(self, text: str, timeout: float = 30.0):
        """Waits for the marker `text` (see `mark`) to be in the journal."""
        found = self.wait_entries(f"MESSAGE={text}", want=bool, timeout=timeout)
        assert found, f"the marker {text} did not reach the private journald in {timeout} s"

    def wait_entries(self, *matches: str, want, timeout: float = 20.0) -> list[dict]:
        """Polls `entries(*matches)` until `want(entries)` (journald writes what it received in order: an
        entry sent after the ones awaited shows they are all there) or the timeout."""
        deadline = time.monotonic() + timeout
        while True:
            es = self.entries(*matches)
            if want(es) or time.monotonic() > deadline:
                return es
            time.sleep(0.1)  # poll interval of the journal read-back (journald notifies no reader here)

    def stop(self):
        os.kill(self.pid, signal.SIGSTOP)

    def cont(self):
        os.kill(self.pid, signal.SIGCONT)

    def close(self):
        if self.proc.poll() is None:
            try:
                os.kill(self.pid, signal.SIGCONT)
                self.proc.terminate()
                self.proc.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(10)
        journald_guard.disown(self.pid)
        self.log.close()
        if self.cgroup.exists():
            root_procs = Path(cgroup2_mount()) / "cgroup.procs"
            for _ in range(100):
                try:
                    pids = (self.cgroup / "cgroup.procs").read_text().split()
                except OSError:
                    break
                for pid in pids:
                    try:
                        root_procs.write_text(pid)
                    except OSError:
                        pass
                try:
                    self.cgroup.rmdir()
                    break
                except OSError:
                    time.sleep(0.05)  # retry interval: the cgroup goes once the kernel has released its last process
        shutil.rmtree(self.dir, ignore_errors=True)
