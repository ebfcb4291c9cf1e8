#!/usr/bin/env python3
"""The daemon's CPU time per journaled decision with N apps started by others (SPEC §13) present.

N apps, each one adopted unit (a scope under `user@1000.service/app.slice` in a scratch cgroup, with a
`sleep` in it), known to the daemon by a manifest; `AdoptFrom=` names the scratch hierarchy,
`FreezerBackend=none` (adoption reports, nothing is frozen). Then CYCLES times Background and
Foreground of the first app on one connection; the figure is the daemon's CPU time (every thread,
/proc/PID/stat) over the decisions it counted (`Stats`). Run it with a small and a large N: a decision
whose cost grows with N scans every adopted unit. Needs root and cgroup v2 (the scratch cgroup is
removed afterwards, its processes killed).

Usage: sudo python3 bench/adoption_cost.py [--apps N] [--cycles C] [--bin DIR]
"""
import argparse
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--apps", type=int, default=2000)
    ap.add_argument("--cycles", type=int, default=1000)
    ap.add_argument("--bin", help="directory of the bgtaskd to measure (default: BGTASKD_BIN_DIR or .build/release)")
    a = ap.parse_args()
    if a.bin:
        os.environ["BGTASKD_BIN_DIR"] = a.bin
    os.environ.setdefault("BGTASKD_BIN_DIR", str(HERE.parent / ".build" / "release"))
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(HERE.parent / "IntegrationTests" / "integration"))
    import bench
    from freezer_support import ScratchCgroup, read_events, wait_for

    apps = [f"org.bench.A{k:04d}" for k in range(a.apps)]
    procs = []
    with ScratchCgroup("-adoption-cost") as scratch:
        slice_dir = os.path.join(scratch.path, "user.slice/user-1000.slice/user@1000.service/app.slice")
        os.makedirs(slice_dir)
        scopes = [os.path.join(slice_dir, f"app-bench-{app}-{k}.scope") for k, app in enumerate(apps)]
        try:
            for path in scopes:
                os.mkdir(path)
                procs.append(subprocess.Popen(["sh", "-c", f'echo $$ > "{path}/cgroup.procs" && exec sleep 1000'],
                                              stdin=subprocess.DEVNULL))
            for path in scopes:
                wait_for(lambda path=path: read_events(path).get("populated") == 1, 30, f"a process in {path}")
            conf = bench.BASE_CONF.format(max=16) + f"[Apps]\nAdoptFrom={scratch.path}/user.slice\n"
            with bench.Daemon("adoption-cost", conf, apps) as d:
                def adopted() -> int:
                    listed = d.call("io.bgtaskd.Manager.ListApps")["apps"]
                    return sum(1 for x in listed if x["state"] == "active")
                wait_for(lambda: adopted() == len(apps), 60, "every app adopted")
                before, cpu0 = d.call("io.bgtaskd.Manager.Stats")["stats"], bench.cpu_ns(d.pid)
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(d.socket)
                    calls = [("Background", {"appId": apps[0]}), ("Foreground", {"appId": apps[0], "exclusive": False})]
                    for _ in range(a.cycles):
                        for method, params in calls:
                            s.sendall(json.dumps({"method": f"io.bgtaskd.Manager.{method}", "parameters": params}).encode() + b"\0")
                            reply = b""
                            while b"\0" not in reply:
                                chunk = s.recv(65536)
                                if not chunk:
                                    raise SystemExit(f"{method}: connection closed")
                                reply += chunk
                            if b'"error"' in reply:
                                raise SystemExit(f"{method}: {reply[:300]!r}")
                cpu1, after = bench.cpu_ns(d.pid), d.call("io.bgtaskd.Manager.Stats")["stats"]
        finally:
            for p in procs:
                p.kill()
                p.wait()
    decisions = after["decisions"] - before["decisions"]
    print(f"{len(apps)} adopted apps: {decisions} decisions, the daemon's CPU {(cpu1 - cpu0) / 1e3 / decisions:.1f} µs a decision")
    return 0


if __name__ == "__main__":
    sys.exit(main())
