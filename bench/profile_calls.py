#!/usr/bin/env python3
"""Row 1's call path under a profiler: a release bgtaskd (as bench.py starts it, FreezerBackend=none,
4 foreground apps), `bgtaskd-bench rtt` for --pairs sequential Begin/End pairs, and the daemon's CPU time
per call over them (every thread, /proc/PID/task/*/schedstat). With --perf FILE, `perf record -e cpu-clock
-g` runs on the daemon meanwhile (report: `perf report -i FILE --no-children --sort sym`).

Usage: BGTASKD_BIN_DIR=.build/release python3 bench/profile_calls.py [--pairs 20000] [--rounds 3] [--perf out.data]
"""
import argparse
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--perf")
    a = ap.parse_args()
    apps = [f"org.bench.P{i}" for i in range(4)]
    with bench.Daemon("profile", bench.BASE_CONF.format(max=1000), apps) as d:
        bench.launch_all(d, apps)
        bench.tool("rtt", "--socket", d.socket, "--app", apps[0], "--pairs", "500", "--warmup", "0")
        perf = None
        if a.perf:
            perf = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", "4999", "-g", "-o", a.perf,
                                     "-p", str(d.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        for _ in range(a.rounds):
            bench.settle_journald(3)
            c0 = bench.cpu_ns(d.pid)
            r = bench.tool("rtt", "--socket", d.socket, "--app", apps[0], "--pairs", str(a.pairs), "--warmup", "0")
            c1 = bench.cpu_ns(d.pid)
            calls = 2 * a.pairs
            wall = sorted(r["begin_ns"] + r["end_ns"])
            print(f"daemon CPU per call {(c1 - c0) / calls / 1000:.1f} µs, median round trip "
                  f"{wall[len(wall) // 2] / 1000:.1f} µs, errors {r['errors']} denied {r['denied']}", flush=True)
        if perf:
            perf.send_signal(signal.SIGINT)
            perf.wait()
    print(os.popen("uptime").read().strip())


if __name__ == "__main__":
    main()
