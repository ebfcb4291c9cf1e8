#!/usr/bin/env python3
"""Row 6's first answer, alone: exec → the first ListApps answered with 10,000 manifests, the daemon's CPU
time (all threads, bench.py's method), minor faults and wall time, median of N starts; `--perf FILE` records one more
start with `perf record -e cpu-clock -g`. `--bin DIR` picks the bgtaskd to measure (default: bench.py's).
The timed starts follow an untimed one and find the manifest cache it left in the state directory, as
any start after an earlier one; `--cold` removes the cache before each start (the first start after
installing).

    python3 bench/first_answer.py [--bin DIR] [--runs 5] [--cold] [--perf /tmp/first.data]

FIRST_PERF_EVENT replaces `--perf`'s event options (default `-e cpu-clock -F 10000`), e.g.
`FIRST_PERF_EVENT="-e page-faults -c 1"` records where the start's page faults happen.
"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench as B  # noqa: E402  (read only: its Daemon, NotifySocket, first_call and cpu_ns)


def stat_cpu_ns(pid: int) -> int:
    """utime + stime of /proc/PID/stat: every thread, ended ones included (clock ticks)."""
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def minor_faults(pid: int) -> int:
    """minflt of /proc/PID/stat: the minor page faults of every thread, ended ones included."""
    return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[7])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", help="directory holding bgtaskd")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--apps", type=int, default=10000)
    ap.add_argument("--perf", help="also record one start with perf into this file")
    ap.add_argument("--cold", action="store_true", help="remove the manifest cache before each start")
    a = ap.parse_args()
    if a.bin:
        B.DAEMON = Path(a.bin).resolve() / "bgtaskd"
    apps = [f"org.bench.S{i:05d}" for i in range(a.apps)]
    d = B.Daemon("first-answer", B.BASE_CONF.format(max=16), apps)
    msg = b'{"method":"io.bgtaskd.Manager.ListApps"}\0'
    cpu, cpu_stat, wall, faults = [], [], [], []
    made = time.monotonic()
    try:
        # Unless --cold: an untimed start first, once the manifests are older than the manifest cache's
        # settling time (2 s), so that every timed start finds the cache an earlier start left.
        time.sleep(max(0.0, made + 2.5 - time.monotonic()))
        for i in range(a.runs + (0 if a.cold else 1)):
            B.settle_journald(3)
            if a.cold:
                (d.root / "state" / "manifest-cache").unlink(missing_ok=True)
            notify = B.NotifySocket(str(d.root / "notify"))
            t0 = time.monotonic()
            d.proc = subprocess.Popen(d.argv(), env=dict(os.environ, NOTIFY_SOCKET=notify.path),
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            notify.wait_ready(60)
            notify.close()
            t2, size = B.first_call(d.socket, msg, t0)
            if a.cold or i > 0:
                cpu.append(B.cpu_ns(d.proc.pid) / 1e6)
                cpu_stat.append(stat_cpu_ns(d.proc.pid) / 1e6)
                faults.append(minor_faults(d.proc.pid))
                wall.append((t2 - t0) * 1e3)
            d.proc.send_signal(signal.SIGTERM)
            d.proc.wait(30)
        if a.perf:
            notify = B.NotifySocket(str(d.root / "notify"))
            t0 = time.monotonic()
            p = subprocess.Popen(["perf", "record", "-q", *os.environ.get("FIRST_PERF_EVENT", "-e cpu-clock -F 10000").split(), "-g", "-o", a.perf, "--"]
                                 + d.argv(), env=dict(os.environ, NOTIFY_SOCKET=notify.path),
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            notify.wait_ready(60)
            notify.close()
            B.first_call(d.socket, msg, t0)
            for child in open(f"/proc/{p.pid}/task/{p.pid}/children").read().split():
                os.kill(int(child), signal.SIGTERM)  # the daemon perf started
            p.wait(60)
    finally:
        d.stop()
    print(f"bgtaskd {B.DAEMON}: reply {size:,} B; load {os.getloadavg()[0]:.1f}")
    print(f"  CPU (process clock, all threads) ms: median {statistics.median(cpu):.1f}  " + " ".join(f"{v:.0f}" for v in cpu))
    print(f"  CPU (/proc/PID/stat)            ms: median {statistics.median(cpu_stat):.1f}  " + " ".join(f"{v:.0f}" for v in cpu_stat))
    print(f"  minor faults                      : median {statistics.median(faults):,.0f}  " + " ".join(f"{v}" for v in faults))
    print(f"  wall                            ms: median {statistics.median(wall):.1f}  " + " ".join(f"{v:.0f}" for v in wall))


if __name__ == "__main__":
    main()
