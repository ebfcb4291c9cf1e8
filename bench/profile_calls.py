#!/usr/bin/env python3
"""Row 1's call path under a profiler: a release bgtaskd (as bench.py starts it, FreezerBackend=none,
4 foreground apps), `bgtaskd-bench rtt` for --pairs sequential Begin/End pairs, and the daemon's CPU time
per call over them (every thread: the process's CPU-time clock). With --perf FILE, `perf record -e cpu-clock
-g` runs on the daemon meanwhile (report: `perf report -i FILE --no-children --sort sym`).

With --one-cpu the daemon and the client run on CPU 0 only (row 1 pinned to one CPU); --no-record runs the
daemon with RecordInputs=no; --strace FILE counts the daemon's system calls (`strace -f -c`) over the rounds.
--callgrind FILE runs the daemon under `valgrind --tool=callgrind` with its instrumentation on for the rounds
only, and prints the instructions per call (every thread; exact, so two builds compare without noise):
`callgrind_annotate --inclusive=yes FILE` for the functions, `callgrind_annotate --auto=yes FILE SOURCE` for a
file's lines. libdispatch's main thread waits in `sigsuspend` on a mask kept in read-only memory, which
valgrind 3.19 writes to (an internal SIGSEGV at the first signal); a preloaded shim built here with `cc`
passes the kernel a copy.
PERF_FREQ sets perf's sampling rate (default 4999 Hz) and PERF_FLAT=1 records without call graphs: on this VM
sampling alone doubles the cost of a call pinned to one CPU, mostly in the context switches.

Usage: BGTASKD_BIN_DIR=.build/release python3 bench/profile_calls.py [--pairs 20000] [--rounds 3] [--perf out.data]
       [--one-cpu] [--no-record] [--strace FILE | --callgrind FILE]
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402


SIGSUSPEND_SHIM = r"""
#define _GNU_SOURCE
#include <signal.h>
#include <unistd.h>
#include <sys/syscall.h>
int sigsuspend(const sigset_t *mask) { sigset_t copy = *mask; return syscall(SYS_rt_sigsuspend, &copy, 8); }
"""


class CallgrindDaemon(bench.Daemon):
    """bench.py's Daemon under callgrind, instrumentation off until `callgrind_control -i on`."""

    def __init__(self, out: str, shim: str, *args):
        super().__init__(*args)
        self.out, self.shim = out, shim

    def argv(self):
        return ["env", f"LD_PRELOAD={self.shim}", "valgrind", "--tool=callgrind", "--instr-atstart=no",
                f"--callgrind-out-file={self.out}"] + super().argv()


def build_shim(directory: str) -> str:
    cc = shutil.which("cc") or shutil.which("clang") or shutil.which("gcc")
    if cc is None or shutil.which("valgrind") is None:
        raise SystemExit("--callgrind needs valgrind and a C compiler (apt-get install valgrind)")
    src, lib = os.path.join(directory, "shim.c"), os.path.join(directory, "sigsuspend-shim.so")
    open(src, "w").write(SIGSUSPEND_SHIM)
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", lib, src], check=True)
    return lib


def setup(a) -> tuple[list[str], str]:
    """The apps and bgtaskd.conf of every mode: row 1's, with the recording off (--no-record) or every grant
    and end journaled (--every-entry) when asked."""
    apps = [f"org.bench.P{i}" for i in range(4)]
    conf = bench.BASE_CONF.format(max=1000) + ("[Daemon]\nRecordInputs=no\n" if a.no_record else "")
    if a.every_entry:
        conf += bench.EVERY_ENTRY
    return apps, conf


def read_dumps(out: str) -> tuple[int, bool]:
    """The Ir total of the dumps callgrind wrote for `out` (one per `callgrind_control -d`), and whether
    start-up's clean-up (StartupPages) ran in them."""
    total, startup = 0, False
    base = os.path.dirname(out) or "."
    for name in os.listdir(base):
        if name.startswith(os.path.basename(out) + "."):
            for line in open(os.path.join(base, name), errors="replace"):
                if line.startswith("summary:"):  # the dump's total (its "totals:" line repeats it)
                    total += int(line.split()[1])
                startup = startup or "StartupPages" in line
    return total, startup


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--perf")
    ap.add_argument("--strace")
    ap.add_argument("--one-cpu", action="store_true")
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--callgrind")
    ap.add_argument("--every-entry", action="store_true",
                    help="the journal budget raised as in row 2b: every grant and end is a journal entry")
    a = ap.parse_args()
    if a.callgrind:
        return callgrind(a)
    apps, conf = setup(a)
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


def callgrind(a):
    apps, conf = setup(a)
    out = os.path.abspath(a.callgrind)
    for name in os.listdir(os.path.dirname(out)):
        if name.startswith(os.path.basename(out) + "."):
            os.unlink(os.path.join(os.path.dirname(out), name))
    with tempfile.TemporaryDirectory() as tmp:
        shim = build_shim(tmp)
        with CallgrindDaemon(out, shim, "callgrind", conf, apps) as d:
            bench.launch_all(d, apps)
            bench.tool("rtt", "--socket", d.socket, "--app", apps[0], "--pairs", "200", "--warmup", "0")
            # Start-up's clean-up (StartupCleanup: malloc_trim and the start-up pages, once, on a thread of
            # its own after the first answer) runs for seconds under valgrind: not in the window.
            time.sleep(8)
            subprocess.run(["callgrind_control", "-i", "on", str(d.pid)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            calls = 0
            for _ in range(a.rounds):
                r = bench.tool("rtt", "--socket", d.socket, "--app", apps[0], "--pairs", str(a.pairs), "--warmup", "0")
                calls += len(r["begin_ns"]) + len(r["end_ns"])
            # The journal's writer trails the calls under valgrind (one run had written 8,001 of 10,000
            # entries when the rounds ended): the window ends once it has written what they queued.
            time.sleep(3)
            subprocess.run(["callgrind_control", "-d", str(d.pid)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            subprocess.run(["callgrind_control", "-i", "off", str(d.pid)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    instructions, startup = read_dumps(out)
    if startup:
        print("warning: start-up's clean-up ran in the window; its instructions are in the figure")
    print(f"{instructions:,} instructions over {calls:,} calls: {instructions / calls:,.0f} per call "
          f"(every thread of the daemon; {out}.*)")


if __name__ == "__main__":
    main()
