"""No test sends a signal to a journald it did not start (the house rule; issue 11's stall test once
SIGSTOPped whatever journald ran on the machine).

`install()` (conftest.py calls it when pytest loads the tests) wraps every way Python sends a signal to
another process — `os.kill` (which `subprocess.Popen.send_signal`, `.terminate` and `.kill` use),
`os.killpg` and `signal.pidfd_send_signal` — and refuses, with `JournaldSignalRefused`, any signal (0
included) to a systemd-journald that the tests did not start themselves: a journald is the tests' own only
once `own(pid)` registered it (private_journald.PrivateJournald does; so does conftest's `journald`
fixture for one it starts where none ran). `os.kill(-1, …)` (every process) is refused too.
Signals sent by other programs (`kill`, `pkill` in a shell) are not seen here:
test_journal.py::test_no_test_signals_a_journald_it_did_not_start greps the tests, benchmarks and
scripts for those.
"""

from __future__ import annotations

import os
import signal

JOURNALD_COMM = "systemd-journal"  # /proc/PID/comm of systemd-journald (15 characters)

_own: set[int] = set()
_real_kill = os.kill
_real_killpg = os.killpg
_real_pidfd_send_signal = getattr(signal, "pidfd_send_signal", None)


class JournaldSignalRefused(AssertionError):
    """A test tried to signal a journald it did not start."""


def own(pid: int):
    """Registers a journald the tests started (they may stop, continue and end it)."""
    _own.add(pid)


def disown(pid: int):
    _own.discard(pid)


def is_own(pid: int) -> bool:
    return pid in _own


def journald_pids() -> list[int]:
    """Every systemd-journald process on the machine (any mount namespace)."""
    pids = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/comm") as f:
                    if f.read().strip() == JOURNALD_COMM:
                        pids.append(int(p))
            except OSError:
                pass
    return pids


def _foreign_journald(pid: int) -> bool:
    if pid in _own:
        return False
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip() == JOURNALD_COMM
    except OSError:
        return False


def _foreign_journalds_in_group(pgid: int) -> list[int]:
    found = []
    for pid in journald_pids():
        try:
            if os.getpgid(pid) == pgid and pid not in _own:
                found.append(pid)
        except OSError:
            pass
    return found


def _refuse(what: str, sig):
    raise JournaldSignalRefused(f"a test sent signal {sig} to {what}, a journald it did not start; start a "
                                "private one (private_journald.PrivateJournald) instead")


def _kill(pid: int, sig):
    if pid == -1:
        _refuse("every process (kill -1)", sig)
    if pid > 0 and _foreign_journald(pid):
        _refuse(f"pid {pid}", sig)
    if pid < -1 and _foreign_journalds_in_group(-pid):
        _refuse(f"process group {-pid}", sig)
    return _real_kill(pid, sig)


def _killpg(pgid: int, sig):
    group = pgid or os.getpgrp()
    if journalds := _foreign_journalds_in_group(group):
        _refuse(f"process group {group} (journald {journalds})", sig)
    return _real_killpg(pgid, sig)


def _pidfd_pid(pidfd: int) -> int:
    with open(f"/proc/self/fdinfo/{pidfd}") as f:
        for line in f:
            if line.startswith("Pid:"):
                return int(line.split()[1])
    return -1


def _pidfd_send_signal(pidfd: int, sig, *args, **kwargs):
    pid = _pidfd_pid(pidfd)
    if pid > 0 and _foreign_journald(pid):
        _refuse(f"pid {pid} (through a pidfd)", sig)
    assert _real_pidfd_send_signal is not None
    return _real_pidfd_send_signal(pidfd, sig, *args, **kwargs)


def install():
    """Wraps os.kill, os.killpg and signal.pidfd_send_signal (idempotent)."""
    os.kill = _kill
    os.killpg = _killpg
    if _real_pidfd_send_signal is not None:
        signal.pidfd_send_signal = _pidfd_send_signal


def installed() -> bool:
    return os.kill is _kill and os.killpg is _killpg and (
        _real_pidfd_send_signal is None or signal.pidfd_send_signal is _pidfd_send_signal)
