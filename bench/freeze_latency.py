#!/usr/bin/env python3
"""Freeze latency of the cgroup freezer, beside a raw cgroup.freeze measured in the same run.

- bgtaskd: decision → frozen confirmed, as the daemon logs it (`BGTASKD_FREEZE_LATENCY_USEC`: from the
  moment it performs the core's `freeze` action — microseconds after the grace-window decision, in the
  same turn of its queue — until `cgroup.events` says `frozen 1`).
- raw (same method): `bgtaskd-bench freeze-baseline` writes `1` to cgroup.freeze, re-reads cgroup.events
  at once, and if it is not frozen yet waits for inotify IN_MODIFY — what the daemon does, without the
  daemon.
- raw (busy re-read): write, then re-read cgroup.events in a busy loop: when the kernel finished, the
  floor under both figures (a notification can only come later).

Each app is an idle `python3 -m http.server` (sleeping in select, as most suspended apps are).

A freeze wakes the app so that it enters the frozen state, so its time depends on where the app runs:
on the writer's CPU it runs as soon as the writer sleeps (~30–40 µs here); on another, idle CPU it waits
for that CPU to wake (~120–140 µs on this VM). Unpinned, the scheduler keeps each process where it last
ran, and which CPU that is changes from run to run (the raw median read 64 µs in one run, 110 µs in the
next, while the daemon's did not move). So every process is pinned (`--placement`):
- `one`: the writer (this script, or the daemon and this script), and both apps, on CPU 0;
- `two`: the writers on CPU 0, both apps on CPU 1 (the daemon's app is moved there after its launch);
- `free`: nothing pinned (what a device does; not comparable between runs).
Most of each figure here is the hypervisor's, not the freeze's: an idle vCPU halts (the guest's `haltpoll`
idle driver stops polling after a while), and waking it is a trip through the host that took ~40–60 µs,
once for the app's CPU and once more for the writer's, and moved between runs with the host. With
`--no-idle-halt` the script holds a PM QoS request (`/dev/cpu_dma_latency` = 0, released when it exits) so
that idle CPUs poll instead of halting, and the figures are the software's and the kernel's: the daemon
26–30 µs against 112–128 µs with halts, the raw freeze confirmed by inotify 30–40 µs against 100–133.
Needs root, a cgroup2 mount, journald, and the binaries bgtaskd and bgtaskd-bench (BGTASKD_BIN_DIR, default
.build/release: `BGTASKD_EXTRAS=1 swift build -c release`).
Usage: sudo python3 bench/freeze_latency.py [--count 200] [--placement one|two|free] [--no-idle-halt] [--samples FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "IntegrationTests" / "integration"))

from freezer_support import (  # noqa: E402
    Manager, ScratchCgroup, conf, free_port, http_answers, http_server_manifest, read_events, wait_for,
)
from support import RawClient  # noqa: E402

# The kernel sends at most one cgroup.events notification per 10 ms rounded up to whole ticks (12 ms at
# HZ=250) and delays the next one to the end of that interval. Real freezes come a grace window (seconds)
# after the thaw's notification; keep every freeze here at least this far from the previous notification
# so that the figures show the freeze, not the rate limit (the daemon's grace window is set to it too).
SPACING_MS = 30


def percentile(values: list[float], p: float) -> float:
    s = sorted(values)
    k = (len(s) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def describe(name: str, usec: list[float]) -> str:
    return (f"{name:<50} n={len(usec):<4} median {statistics.median(usec):8.0f} µs   "
            f"p99 {percentile(usec, 99):8.0f} µs   max {max(usec):8.0f} µs")


def start_daemon(bin_dir: Path, root: Path, cgroup: str, app_id: str, port: int) -> subprocess.Popen:
    return start_daemon_with(bin_dir, root, conf(cgroup, grace=f"{SPACING_MS}ms"),
                             {app_id: http_server_manifest(app_id, port)})


def start_daemon_with(bin_dir: Path, root: Path, config_text: str, manifests: dict[str, str]) -> subprocess.Popen:
    """A bgtaskd on `root` with this bgtaskd.conf drop-in and these manifests, once it answers GetInfo."""
    config = root / "config"
    (config / "bgtaskd.conf.d").mkdir(parents=True)
    (config / "apps.d").mkdir()
    (root / "state").mkdir()
    (root / "runtime").mkdir()
    (config / "bgtaskd.conf.d" / "50-bench.conf").write_text(config_text)
    for app_id, text in manifests.items():
        (config / "apps.d" / f"{app_id}.app").write_text(text)
    sock = str(root / "runtime" / "io.bgtaskd")
    log = open(root / "daemon.log", "wb")
    proc = subprocess.Popen(
        [str(bin_dir / "bgtaskd"), "--config-dir", str(config), "--state-dir", str(root / "state"),
         "--runtime-dir", str(root / "runtime"), "--socket", sock],
        stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    deadline = time.monotonic() + 10
    while True:
        try:
            with RawClient(sock, timeout=1) as c:
                if "error" not in c.call("org.varlink.service.GetInfo"):
                    return proc
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"bgtaskd did not start:\n{(root / 'daemon.log').read_text()}")
        time.sleep(0.01)


PLACEMENTS = {"one": ({0}, {0}), "two": ({0}, {1}), "free": (None, None)}


def pin(pids, cpus: set[int] | None):
    """Every thread of these processes on these CPUs (None: leave them where they are)."""
    if cpus is None:
        return
    for pid in pids:
        for tid in os.listdir(f"/proc/{pid}/task"):
            os.sched_setaffinity(int(tid), cpus)


def cgroup_pids(cgroup: str) -> list[int]:
    with open(os.path.join(cgroup, "cgroup.procs")) as f:
        return [int(line) for line in f if line.strip()]


def daemon_step(manager: Manager, app_id: str, app_cgroup: str):
    """One foreground/background cycle; the daemon freezes the app a grace window after Background."""
    manager.call("Foreground", appId=app_id)
    manager.call("Background", appId=app_id)
    # Asleep while the daemon freezes the app a grace window from now: a poll of ours during its freeze
    # would share its CPU.
    time.sleep((SPACING_MS + 10) / 1000)
    wait_for(lambda: read_events(app_cgroup).get("frozen") == 1, 5, "frozen", interval=0.0005)
    wait_for(lambda: manager.state(app_id) == "suspended", 5, "suspended", interval=0.0005)
    time.sleep(SPACING_MS / 1000)


class RawFreezer:
    """cgroup.freeze written by hand on a cgroup of its own, by `bgtaskd-bench freeze-baseline` (compiled
    like the daemon, so that the baseline is the kernel's time and not this interpreter's): one freeze
    per request, its time back, the cgroup thawed, then the same spacing as the daemon's freezes."""

    def __init__(self, bin_dir: Path, cgroup: str):
        self.proc = subprocess.Popen([str(bin_dir / "bgtaskd-bench"), "freeze-baseline", "--cgroup", cgroup],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.notified: list[float] = []
        self.busy: list[float] = []

    def step(self, method: str):
        self.proc.stdin.write(method + "\n")
        answer = self.proc.stdout.readline()
        if not answer:
            raise SystemExit(f"bgtaskd-bench freeze-baseline ended (status {self.proc.wait()})")
        (self.busy if method == "busy" else self.notified).append(int(answer) / 1000)
        time.sleep(SPACING_MS / 1000)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(5)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--placement", choices=sorted(PLACEMENTS), default="free")
    parser.add_argument("--samples", help="also write the three lists of samples (µs, in the order taken) as JSON here")
    parser.add_argument("--no-idle-halt", action="store_true",
                        help="idle CPUs poll instead of halting while this runs (a PM QoS request on /dev/cpu_dma_latency)")
    args = parser.parse_args()
    qos = None
    if args.no_idle_halt:
        # A latency of 0 leaves the idle driver only its polling state; the request lasts while the file is
        # open (the kernel drops it when this process exits, however it exits).
        qos = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
        os.write(qos, struct.pack("i", 0))
    writers, apps = PLACEMENTS[args.placement]
    if writers is not None and not (writers | apps) <= os.sched_getaffinity(0):
        raise SystemExit(f"--placement {args.placement} needs CPUs {sorted(writers | apps)}")
    if os.geteuid() != 0:
        raise SystemExit("needs root (cgroups)")
    bin_dir = Path(os.environ.get("BGTASKD_BIN_DIR", REPO / ".build" / "release"))
    app_id = "org.bench.Web"
    root = Path(tempfile.mkdtemp(prefix="bgtaskd-bench-", dir="/tmp"))
    with ScratchCgroup() as cg:
        # The raw subject: the same kind of process, in a cgroup of its own next to the daemon's.
        raw_cg = os.path.join(cg.path, "raw")
        os.mkdir(raw_cg)
        raw_port = free_port()
        raw = subprocess.Popen(
            ["sh", "-c", f"echo $$ > {raw_cg}/cgroup.procs && exec {sys.executable} -m http.server {raw_port} "
                         f"--bind 127.0.0.1", ],
            cwd="/tmp", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port = free_port()
        daemon = start_daemon(bin_dir, root, cg.path, app_id, port)
        try:
            manager = Manager(str(root / "runtime" / "io.bgtaskd"))
            manager.launch(app_id)
            wait_for(lambda: http_answers(port, 0.5) and http_answers(raw_port, 0.5), 10, "both servers")
            pin([os.getpid(), daemon.pid], writers)
            pin([raw.pid] + cgroup_pids(cg.app(app_id)), apps)
            since = time.time()
            raw_freezer = RawFreezer(bin_dir, raw_cg)
            pin([raw_freezer.proc.pid], writers)
            # Interleaved, so that all three see the same machine.
            for _ in range(args.count):
                daemon_step(manager, app_id, cg.app(app_id))
                raw_freezer.step("notify")
                raw_freezer.step("busy")
            raw_freezer.close()
            notified, busy = raw_freezer.notified, raw_freezer.busy
            time.sleep(1)
            out = subprocess.run(
                ["journalctl", "-t", "bgtaskd", "-o", "json", "--no-pager", f"--since=@{since:.6f}",
                 f"_PID={daemon.pid}", "BGTASKD_APP=" + app_id],
                capture_output=True, text=True, check=True).stdout
            latencies = [float(e["BGTASKD_FREEZE_LATENCY_USEC"]) for e in map(json.loads, out.splitlines())
                         if "BGTASKD_FREEZE_LATENCY_USEC" in e]
            if len(latencies) < args.count:
                print(f"warning: {len(latencies)} of {args.count} freeze confirmations found in the journal",
                      file=sys.stderr)
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(5)
            raw.kill()
            raw.wait()
        shutil.rmtree(root, ignore_errors=True)
    where = {"one": "writers and apps on CPU 0", "two": "writers on CPU 0, apps on CPU 1",
             "free": "unpinned"}[args.placement]
    if qos is not None:
        os.close(qos)
        where += ", idle CPUs polling (no halt)"
    print(f"freeze latency, idle python3 -m http.server, {os.cpu_count()} CPUs, {where}, kernel {os.uname().release}")
    print(describe("bgtaskd: decision → frozen confirmed", latencies))
    print(describe("raw cgroup.freeze: write → confirmed (inotify)", notified))
    print(describe("raw cgroup.freeze: write → frozen (busy re-read)", busy))
    if args.samples:
        Path(args.samples).write_text(json.dumps({"bgtaskd": latencies, "notify": notified, "busy": busy}))


if __name__ == "__main__":
    main()
