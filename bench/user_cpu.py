#!/usr/bin/env python3
"""Row 1's user-space CPU per call for two builds: both daemons (compare_builds.py's, one foreground app,
FreezerBackend=none) pinned to CPU 0, the client (`bgtaskd-bench rtt`, --pairs sequential Begin/End pairs
without warm-up) pinned there too, taking turns (old first in even rounds); per round and daemon the user
and system CPU time it spent (`/proc/PID/stat` utime and stime, in clock ticks: use ≥ 20,000 pairs) over
2 × pairs calls. User time is the part of the daemon's per-call work its code decides; the system part is
the three system calls per call (docs/performance.md, "Row 1").

Usage: python3 bench/user_cpu.py OLD_BIN_DIR NEW_BIN_DIR [--rounds 6] [--pairs 20000]
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
import compare_builds  # noqa: E402


def user_system_ticks(pid: int) -> tuple[int, int]:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])


def main():
    a = compare_builds.two_builds_args(rounds=6, pairs=20000)
    apps = ["org.bench.C00"]
    conf = bench.BASE_CONF.format(max=1000)
    tick = os.sysconf("SC_CLK_TCK")
    user = {"old": [], "new": []}
    system = {"old": [], "new": []}
    with compare_builds.BuildDaemon(a.old / "bgtaskd", "old", conf, apps) as old, \
            compare_builds.BuildDaemon(a.new / "bgtaskd", "new", conf, apps) as new:
        bench.launch_all(old, apps)
        bench.launch_all(new, apps)
        for d in (old, new):
            bench.pin_process(d.pid, {0})
        servers = [("old", old), ("new", new)]
        for i in range(a.rounds):
            for k, d in servers if i % 2 == 0 else reversed(servers):
                u0, s0 = user_system_ticks(d.pid)
                r = bench.tool("rtt", "--socket", d.socket, "--app", apps[0], "--pairs", str(a.pairs), "--warmup", "0",
                               cpu=0)
                u1, s1 = user_system_ticks(d.pid)
                user[k].append((u1 - u0) / tick / (2 * a.pairs) * 1e6)
                system[k].append((s1 - s0) / tick / (2 * a.pairs) * 1e6)
                if r["errors"] or r["denied"]:
                    print(f"round {i} {k}: {r['errors']} errors, {r['denied']} denials")
    print(f"{a.rounds} rounds of {a.pairs} pairs, pinned to CPU 0, load {os.getloadavg()[0]:.1f}")
    for k in ("old", "new"):
        print(f"  {k}: user CPU per call {statistics.median(user[k]):.2f} µs median "
              f"({', '.join(f'{x:.2f}' for x in user[k])}), system {statistics.median(system[k]):.2f} µs")


if __name__ == "__main__":
    main()
