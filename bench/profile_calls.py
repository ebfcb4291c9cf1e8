#!/usr/bin/env python3
"""Row 1's call path under a profiler: a release bgtaskd (as bench.py starts it, FreezerBackend=none,
4 foreground apps), `bgtaskd-bench rtt` for --pairs sequential Begin/End pairs, and the daemon's CPU time
per call over them (every thread: the process's CPU-time clock). With --perf FILE, `perf record -e cpu-clock
-g` runs on the daemon meanwhile (report: `perf report -i FILE --no-children --sort sym`).

With --one-cpu the daemon and the client run on CPU 0 only (row 1 pinned to one CPU); --no-record runs the
daemon with RecordInputs=no; --strace FILE counts the daemon's system calls (`strace -f -c`) over the rounds.
PERF_FREQ sets perf's sampling rate (default 4999 Hz) and PERF_FLAT=1 records without call graphs: on this VM
sampling alone doubles the cost of a call pinned to one CPU, mostly in the context switches.

Usage: BGTASKD_BIN_DIR=.build/release python3 bench/profile_calls.py [--pairs 20000] [--rounds 3] [--perf out.data]
       [--one-cpu] [--no-record] [--strace FILE]
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
    ap.add_argument("--strace")
    ap.add_argument("--one-cpu", action="store_true")
    ap.add_argument("--no-record", action="store_true")
    a = ap.parse_args()
    apps = [f"org.bench.P{i}" for i in range(4)]
    conf = bench.BASE_CONF.format(max=1000) + ("[Daemon]\nRecordInputs=no\n" if a.no_record else "")
    cpu = 0 if a.one_cpu else None
    with bench.Daemon("profile", conf, apps) as d:
        bench.launch_all(d, apps)
        if a.one_cpu:
            bench.pin_process(d.pid, {0})
        bench.tool("rtt", "--socket", d.socket, "--app", apps[0], "--pairs", "500", "--warmup", "0", cpu=cpu)
        perf = None
        if a.strace:
            perf = subprocess.Popen(["strace", "-f", "-c", "-o", a.strace, "-p", str(d.pid)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        if a.perf:
            perf = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", os.environ.get("PERF_FREQ", "4999")] + (["-g"] if not os.environ.get("PERF_FLAT") else []) + ["-o", a.perf,
                                     "-p", str(d.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        for _ in range(a.rounds):
            bench.settle_journald(3)
            c0 = bench.cpu_ns(d.pid)
            r = bench.tool("rtt", "--socket", d.socket, "--app", apps[0], "--pairs", str(a.pairs), "--warmup", "0",
                           cpu=cpu)
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
