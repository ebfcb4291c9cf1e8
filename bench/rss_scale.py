#!/usr/bin/env python3
"""Row 4's RSS alone: 10,000 apps launched into the foreground and 100,000 assertions held (bench.py's
`bgtaskd-bench scale`, one level), then the daemon's VmRSS, its anonymous part and /proc/PID/smaps_rollup.
`--wrap CMD` starts the daemon under a tool (e.g. `heaptrack -o /tmp/x`); with `--kill` the daemon is
SIGKILLed right after the measurement, so that what heaptrack reports as leaked is the heap live then.

    python3 bench/rss_scale.py [--bin DIR] [--tool PATH] [--apps 10000] [--assertions 100000] [--settle S]
                               [--smaps FILE]
"""
import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench as B  # noqa: E402  (read only: its Daemon, rss_kib, rss_parts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", help="directory holding bgtaskd")
    ap.add_argument("--tool", help="bgtaskd-bench to use")
    ap.add_argument("--apps", type=int, default=10000)
    ap.add_argument("--assertions", type=int, default=100000)
    ap.add_argument("--wrap", default="", help="command line to start the daemon under")
    ap.add_argument("--kill", action="store_true", help="SIGKILL the daemon after the measurement")
    ap.add_argument("--settle", type=float, default=0,
                    help="seconds to wait after the measurement, then measure again (what was transient)")
    ap.add_argument("--smaps", default="", help="write the daemon's /proc/PID/smaps to this file at the last measurement")
    ap.add_argument("--conf", default="", help="more bgtaskd.conf lines, e.g. '[Daemon]\\nRecordInputs=no'")
    a = ap.parse_args()
    if a.bin:
        B.DAEMON = Path(a.bin).resolve() / "bgtaskd"
    tool = a.tool or str(B.TOOL)
    apps = [f"org.bench.S{i:05d}" for i in range(a.apps)]
    d = B.Daemon("rss", B.BASE_CONF.format(max=16) + a.conf.replace("\\n", "\n") + "\n", apps)
    if a.wrap:
        argv = d.argv
        d.argv = lambda: shlex.split(a.wrap) + argv()
    with d:
        apps_file = d.root / "apps.txt"
        apps_file.write_text("\n".join(apps) + "\n")
        daemon_pid = d.pid
        if a.wrap:  # the daemon is the wrapper's descendant: the newest process running bgtaskd
            daemon_pid = int(subprocess.run(["pgrep", "-n", "-f", f"^{B.DAEMON}"], capture_output=True,
                                            text=True).stdout.split()[0])
        p = subprocess.Popen([tool, "scale", "--socket", d.socket, "--apps-file", str(apps_file),
                              "--levels", str(a.assertions), "--per-app", "10", "--pairs", "200",
                              "--daemon-pid", str(daemon_pid), "--launch", "yes", "--hold", "yes"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            line = p.stdout.readline()
            if not line:
                raise SystemExit("bgtaskd-bench scale failed")
            result = json.loads(line)
            if result.get("launch_s"):
                print(f"  launch into the foreground: {result['launch_s'] * 1e6 / len(apps):.0f} µs per app"
                      + (f", daemon CPU {result['launch_daemon_cpu_ns'] / 1000 / len(apps):.0f} µs per app"
                         if "launch_daemon_cpu_ns" in result else ""))
            rss = B.rss_kib(daemon_pid)
            anon = B.rss_parts(daemon_pid)[0]
            stats = d.call("io.bgtaskd.Manager.Stats")["stats"]
            rollup = open(f"/proc/{daemon_pid}/smaps_rollup").read()
            print(f"bgtaskd {B.DAEMON}: {stats['apps']:,} apps, {stats['liveAssertions']:,} assertions")
            print(f"  VmRSS {rss / 1024:.1f} MiB, anonymous {anon / 1024:.1f} MiB")
            print("  " + "  ".join(l.strip() for l in rollup.splitlines()[1:] if l.split()[0] in
                                   ("Rss:", "Anonymous:", "Private_Dirty:", "Shared_Clean:", "Private_Clean:")))
            if a.settle:
                time.sleep(a.settle)
                print(f"  {a.settle:g} s later: VmRSS {B.rss_kib(daemon_pid) / 1024:.1f} MiB, "
                      f"anonymous {B.rss_parts(daemon_pid)[0] / 1024:.1f} MiB")
            if a.smaps:
                Path(a.smaps).write_text(open(f"/proc/{daemon_pid}/smaps").read())
        finally:
            apps_started = [int(c) for t in os.listdir(f"/proc/{daemon_pid}/task")
                            for c in open(f"/proc/{daemon_pid}/task/{t}/children").read().split()]
            if a.kill:
                os.kill(daemon_pid, signal.SIGKILL)
            p.stdin.close()
            p.wait(120)
            for pid in apps_started:  # the daemon's `sleep`s (under a wrapper they are not d.pid's children)
                try:
                    if open(f"/proc/{pid}/comm").read().strip() == "sleep":
                        os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            d.kill_apps()


if __name__ == "__main__":
    main()
