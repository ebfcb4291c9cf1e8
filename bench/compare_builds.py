#!/usr/bin/env python3
"""Row 1 for two builds of bgtaskd side by side: is a change "not worse than before beyond noise"?

Both daemons run at once with the same configuration (bench.py's row 1: FreezerBackend=none, one foreground
app), both pinned to CPU 0, and the same client (`bgtaskd-bench rtt` of the NEW build) takes turns between
them in short rounds (the old build first in even rounds, the new one first in odd ones), pinned to CPU 0
(one CPU: each round trip two switches there) and to CPU 1 (two CPUs). The result is the median of the
per-round ratios new/old with their spread, for the round trip and for the daemon's CPU time per call: a
ratio two runs on a loaded machine agree on, where medians taken at different moments are not.

Usage: python3 bench/compare_builds.py OLD_BIN_DIR NEW_BIN_DIR [--rounds 12] [--pairs 500]
"""
import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402


class BuildDaemon(bench.Daemon):
    """bench.py's Daemon, started from a given build's bgtaskd."""

    def __init__(self, binary: Path, name: str, conf: str, apps: list[str]):
        super().__init__(name, conf, apps)
        self.binary = binary

    def argv(self):
        return [str(self.binary)] + super().argv()[1:]


def two_builds_args(rounds: int, pairs: int) -> argparse.Namespace:
    """The command line of a comparison of two builds: OLD_BIN_DIR NEW_BIN_DIR [--rounds] [--pairs]."""
    ap = argparse.ArgumentParser()
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--rounds", type=int, default=rounds)
    ap.add_argument("--pairs", type=int, default=pairs)
    return ap.parse_args()


def main():
    a = two_builds_args(rounds=12, pairs=500)
    for d in (a.old, a.new):
        if not (d / "bgtaskd").exists():
            raise SystemExit(f"{d}/bgtaskd is missing")
    if len(os.sched_getaffinity(0)) < 2:
        raise SystemExit("needs two CPUs")
    apps = ["org.bench.C00"]
    conf = bench.BASE_CONF.format(max=1000)
    everything = os.sched_getaffinity(0)
    per_round = {(m, k): [] for m in ("one", "two") for k in ("old", "new")}
    cpu = {(m, k): [] for m in ("one", "two") for k in ("old", "new")}
    with BuildDaemon(a.old / "bgtaskd", "old", conf, apps) as old, BuildDaemon(a.new / "bgtaskd", "new", conf, apps) as new:
        bench.launch_all(old, apps)
        bench.launch_all(new, apps)
        servers = [("old", old), ("new", new)]
        try:
            for d in (old, new):
                bench.pin_process(d.pid, {0})
            for i in range(a.rounds):
                for mode, client_cpu in (("one", 0), ("two", 1)):
                    for k, d in servers if i % 2 == 0 else reversed(servers):
                        bench.settle_journald(3)
                        c0 = bench.cpu_ns(d.pid)
                        r = bench.tool("rtt", "--socket", d.socket, "--app", apps[0], "--pairs", str(a.pairs),
                                       "--warmup", "200", cpu=client_cpu)
                        cpu[(mode, k)].append((bench.cpu_ns(d.pid) - c0) / (2 * (a.pairs + 200)) / 1000)
                        per_round[(mode, k)].append(statistics.median(bench.us(r["begin_ns"] + r["end_ns"])))
                        if r["errors"] or r["denied"]:
                            print(f"round {i} {k}: {r['errors']} errors, {r['denied']} denials")
        finally:
            for d in (old, new):
                bench.pin_process(d.pid, everything)
    print(f"new {a.new} against old {a.old}, {a.rounds} rounds of {a.pairs} Begin/End pairs, load {os.getloadavg()[0]:.1f}")
    for mode, label in (("one", "pinned to one CPU"), ("two", "pinned to two CPUs")):
        o, n = statistics.median(per_round[(mode, "old")]), statistics.median(per_round[(mode, "new")])
        rt = bench.round_ratios(per_round[(mode, "new")], per_round[(mode, "old")])
        rc = bench.round_ratios(cpu[(mode, "new")], cpu[(mode, "old")])
        print(f"  round trip, {label}: new {n:.1f} µs, old {o:.1f} µs, new/old {bench.ratio_of_rounds(rt)}")
        print(f"  daemon CPU per call, {label}: new {statistics.median(cpu[(mode, 'new')]):.1f} µs, "
              f"old {statistics.median(cpu[(mode, 'old')]):.1f} µs, new/old {bench.ratio_of_rounds(rc)}")


if __name__ == "__main__":
    main()
