"""SPEC §16, beyond one device: machines of a fleet and their collector, each confined.

`FleetMachine`: a systemd-journald of its own in private mount and UTS namespaces (`unshare -m -u`), with a
machine ID of its own bind-mounted over /etc/machine-id and a hostname of its own, so that the entries it
writes carry that `_MACHINE_ID` and `_HOSTNAME`; `Storage=volatile` (its files are under
/proc/PID/root/run/log/journal). A bgtaskd started with `daemon_prefix()` logs to it.

`Collector`: a real systemd-journal-remote listening on 127.0.0.1 in a private network namespace
(`unshare -n`, loopback up), writing one journal file per host (`--split-mode=host`); `upload(directory)`
runs a real systemd-journal-upload in that namespace that ships a journal directory to it and exits.

Nothing is visible outside the namespaces; `close()` ends every process started and removes the directories.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import journald_guard
from private_journald import journald_up, namespace_script
from private_journald import wait_up as _wait

JOURNAL_REMOTE = "/lib/systemd/systemd-journal-remote"
JOURNAL_UPLOAD = "/lib/systemd/systemd-journal-upload"
PORT = 19532


class FleetMachine:
    def __init__(self, hostname: str):
        self.hostname = hostname
        self.machine_id = uuid.uuid4().hex
        self.dir = Path(tempfile.mkdtemp(prefix="bgtaskd-fleet-", dir="/tmp"))
        (self.dir / "machine-id").write_text(self.machine_id + "\n")
        (self.dir / "journald.conf").write_text("[Journal]\nStorage=volatile\n")
        script = namespace_script(self.dir / "journald.conf", "64M", (
            f"mount --bind {self.dir / 'machine-id'} /etc/machine-id",
            f"echo {hostname} > /proc/sys/kernel/hostname",
        ))
        self.log_path = self.dir / "journald.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(["unshare", "-m", "-u", "--propagation", "private", "sh", "-c", script],
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
                                     start_new_session=True)
        self.pid = self.proc.pid  # sh and unshare exec: this is journald
        journald_guard.own(self.pid)
        self.root = f"/proc/{self.pid}/root"
        self.socket = f"{self.root}/run/systemd/journal/socket"
        _wait(lambda: journald_up(self.pid), 10, f"the journald of {hostname}", self.proc, self.log_path)

    @property
    def journal_directory(self) -> str:
        """Its journal files (volatile storage): what systemd-journal-upload ships."""
        return f"{self.root}/run/log/journal/{self.machine_id}"

    def daemon_prefix(self) -> tuple:
        """Execs the rest of its arguments in this machine's mount namespace (its journald's socket)."""
        return ("nsenter", f"--mount=/proc/{self.pid}/ns/mnt", "--")

    def sync(self):
        subprocess.run(["nsenter", f"--mount=/proc/{self.pid}/ns/mnt", "--", "journalctl", "--sync"],
                       capture_output=True, timeout=30)

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        journald_guard.disown(self.pid)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Collector:
    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="bgtaskd-collector-", dir="/tmp"))
        self.output = self.dir / "remote"
        self.output.mkdir()
        self.log_path = self.dir / "journal-remote.log"
        self.log = open(self.log_path, "wb")
        script = (f"ip link set lo up && exec {JOURNAL_REMOTE} --listen-http=127.0.0.1:{PORT} "
                  f"--output={self.output}/ --split-mode=host")
        self.proc = subprocess.Popen(["unshare", "-n", "sh", "-c", script], stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=self.log, start_new_session=True)
        self.pid = self.proc.pid
        journald_guard.own(self.pid)  # named systemd-journal too: the tests' own (journald_guard.py)
        _wait(self._listening, 10, "systemd-journal-remote", self.proc, self.log_path)

    def _listening(self) -> bool:
        # Its network namespace's TCP sockets: 127.0.0.1:PORT in state 0A (LISTEN).
        try:
            if open(f"/proc/{self.pid}/comm").read().strip() != "systemd-journal":
                return False
            lines = open(f"/proc/{self.pid}/net/tcp").read().splitlines()[1:]
        except OSError:
            return False
        return any(l.split()[1] == f"0100007F:{PORT:04X}" and l.split()[3] == "0A" for l in lines)

    def upload(self, directory: str) -> subprocess.Popen:
        """A real systemd-journal-upload in the collector's network namespace, shipping `directory` and exiting."""
        return subprocess.Popen(
            ["nsenter", f"--net=/proc/{self.pid}/ns/net", "--", JOURNAL_UPLOAD, f"--url=http://127.0.0.1:{PORT}",
             f"--directory={directory}", "--follow=no"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def stop(self):
        """Stops the collector (its files are closed: complete for readers)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def close(self):
        self.stop()
        journald_guard.disown(self.pid)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
