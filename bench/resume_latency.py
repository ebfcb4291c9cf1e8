#!/usr/bin/env python3
"""Resume latency (make bench row 5b): how fast a suspended app answers when it is tapped.

- bgtaskd: a lifecycle-aware app, suspended (frozen by the cgroup freezer), is brought back with
  Manager.Foreground; measured from just before the call is sent until the app has read did-become-active
  from its CheckIn stream (CLOCK_MONOTONIC on both sides: the app reports the instant it read the event).
- raw: the same kind of process, blocked reading a Unix socket in a frozen cgroup of its own; this
  script writes 0 to its cgroup.freeze and sends one message; measured until the process has read it.
  What any resume costs without the daemon: the thaw and one socket hop.
- relay: the same raw process frozen the same way; the tap goes to a bare native server of one
  connection (`bgtaskd-bench resume-relay`) that writes one message to the process's socket, then 0 to its
  cgroup.freeze (kept open), then answers: the floor of a resume through any service — the daemon's two
  socket hops (the tap in, the event out) and the thaw, with none of its work. Skipped when the
  binaries have no bgtaskd-bench (a build without BGTASKD_EXTRAS=1).

Both subjects are the same small Python program (the same interpreter's cost on both sides).
Needs root, a cgroup2 mount, journald, and the binaries (BGTASKD_BIN_DIR, default .build/release).
Usage: sudo python3 bench/resume_latency.py [--count 100] [--warmup 5] [--samples FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "IntegrationTests" / "integration"))
sys.path.insert(0, str(REPO / "bench"))

from freezer_support import Manager, ScratchCgroup, conf, manifest, read_events, wait_for  # noqa: E402
from freeze_latency import SPACING_MS, describe, start_daemon_with  # noqa: E402

# The app: checks in, acknowledges what needs it, and reports the monotonic instant it read each
# did-become-active to the datagram socket argv[1]. Raw socket and JSON: no client library in the way.
APP = r"""
import json, os, socket, sys, time
report = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.environ["BGTASKD_SOCKET"])
    return s
stream, calls = connect(), connect()
app_id = os.environ["BGTASKD_APP_ID"]
stream.sendall(json.dumps({"method": "io.bgtaskd.App.CheckIn", "parameters": {"appId": app_id}, "more": True}).encode() + b"\0")
buf = b""
while True:
    chunk = stream.recv(65536)
    now = time.monotonic_ns()
    if not chunk:
        sys.exit(0)
    buf += chunk
    while b"\0" in buf:
        msg, buf = buf.split(b"\0", 1)
        event = json.loads(msg).get("parameters", {}).get("event")
        if not event:
            continue
        if event["kind"] == "did-become-active":
            report.sendto(str(now).encode(), sys.argv[1])
        if event.get("needsAck"):
            calls.sendall(json.dumps({"method": "io.bgtaskd.App.Acknowledge", "parameters": {"eventId": event["id"]}}).encode() + b"\0")
            r = b""
            while not r.endswith(b"\0"):
                r += calls.recv(65536)
"""

# The raw subject: reads one message at a time from the socket passed as fd argv[2] and reports when.
RAW = r"""
import socket, sys, time
s = socket.socket(fileno=int(sys.argv[2]))
report = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
while True:
    data = s.recv(64)
    now = time.monotonic_ns()
    if not data:
        sys.exit(0)
    report.sendto(str(now).encode(), sys.argv[1])
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=5, help="resumes of each kind first, not counted")
    parser.add_argument("--samples", help="also write both lists of samples (µs, in the order taken) as JSON here")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root (cgroups)")
    bin_dir = Path(os.environ.get("BGTASKD_BIN_DIR", REPO / ".build" / "release"))
    app_id = "org.bench.Resume"
    root = Path(tempfile.mkdtemp(prefix="bgtaskd-bench-resume-", dir="/tmp"))
    (root / "app.py").write_text(APP)
    (root / "raw.py").write_text(RAW)
    reports = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    reports.bind(str(root / "reports"))
    reports.settimeout(5)
    with ScratchCgroup() as cg:
        raw_cg = os.path.join(cg.path, "raw")
        os.mkdir(raw_cg)
        ours, theirs = socket.socketpair()
        raw = subprocess.Popen(
            ["sh", "-c", f"echo $$ > {raw_cg}/cgroup.procs && exec {sys.executable} {root / 'raw.py'} {root / 'reports'} {theirs.fileno()}"],
            pass_fds=[theirs.fileno()], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        theirs.close()
        app = manifest(app_id, f"{sys.executable} {root / 'app.py'} {root / 'reports'}", aware=True)
        daemon = start_daemon_with(bin_dir, root, conf(cg.path, grace="2s"), {app_id: app})
        measured, baseline, relayed = [], [], []
        relay, relay_tap = None, None
        bench_tool = bin_dir / "bgtaskd-bench"
        if bench_tool.exists():
            relay_fd = os.dup(ours.fileno())
            relay = subprocess.Popen(
                [str(bench_tool), "resume-relay", "--socket", str(root / "relay"),
                 "--freeze", os.path.join(raw_cg, "cgroup.freeze"), "--app-fd", str(relay_fd)],
                pass_fds=[relay_fd], stdout=subprocess.DEVNULL)
            os.close(relay_fd)
            wait_for(lambda: (root / "relay").exists(), 5, "the relay's socket")
            relay_tap = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            relay_tap.connect(str(root / "relay"))
        try:
            m = Manager(str(root / "runtime" / "io.bgtaskd"))
            m.launch(app_id)
            reports.recv(64)  # its first did-become-active: checked in
            # The tap: one connection kept open, the call's bytes made beforehand (as a shell would).
            tap = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            tap.connect(str(root / "runtime" / "io.bgtaskd"))
            foreground = (b'{"method":"io.bgtaskd.Manager.Foreground","parameters":{"appId":"' + app_id.encode()
                          + b'"}}\0')
            freeze = os.path.join(raw_cg, "cgroup.freeze")

            def freeze_raw():
                with open(freeze, "w") as f:
                    f.write("1")
                wait_for(lambda: read_events(raw_cg).get("frozen") == 1, 5, "raw frozen", interval=0.0005)
                time.sleep(SPACING_MS / 1000)

            def tap_timed(sock: socket.socket, into: list) -> bytes:
                """Sends the tap on `sock`, notes when the app read its message, returns the answer."""
                t0 = time.monotonic_ns()
                sock.sendall(foreground)
                into.append((int(reports.recv(64)) - t0) / 1000)
                reply = b""
                while not reply.endswith(b"\0"):
                    reply += sock.recv(4096)
                return reply
            for _ in range(args.warmup + args.count):
                # bgtaskd: background, acknowledged, suspended and frozen; then the tap.
                m.call("Background", appId=app_id)
                try:
                    wait_for(lambda: m.state(app_id) == "suspended", 5, "suspended", interval=0.0005)
                except AssertionError:
                    # Say why: the app and the daemon's last journal lines.
                    print(m.app(app_id), file=sys.stderr)
                    subprocess.run(["journalctl", "-o", "cat", f"_PID={daemon.pid}", "-n", "15", "--no-pager"])
                    raise
                wait_for(lambda: read_events(cg.app(app_id)).get("frozen") == 1, 5, "frozen", interval=0.0005)
                time.sleep(SPACING_MS / 1000)
                reply = tap_timed(tap, measured)
                if b'"error"' in reply:
                    raise SystemExit(f"Foreground failed: {reply!r}")
                # raw: frozen the same way, then thawed by hand and sent one message.
                freeze_raw()
                t0 = time.monotonic_ns()
                with open(freeze, "w") as f:
                    f.write("0")
                ours.send(b"x")
                baseline.append((int(reports.recv(64)) - t0) / 1000)
                time.sleep(SPACING_MS / 1000)
                if relay_tap is not None:
                    # relay: frozen the same way; the tap to the relay, which sends, then thaws.
                    freeze_raw()
                    tap_timed(relay_tap, relayed)
                    time.sleep(SPACING_MS / 1000)
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(10)
            raw.kill()
            raw.wait()
            if relay is not None:
                relay.kill()
                relay.wait()
                relay_tap.close()
            ours.close()
    reports.close()
    # The warm-up resumes (first page faults, the first journal entries) are not counted.
    measured, baseline, relayed = measured[args.warmup:], baseline[args.warmup:], relayed[args.warmup:]
    if args.samples:
        Path(args.samples).write_text(json.dumps({"bgtaskd": measured, "raw": baseline, "relay": relayed}))
    print(f"resume latency, a lifecycle-aware Python app, {os.cpu_count()} CPUs, kernel {os.uname().release}")
    print(describe("bgtaskd: Foreground → app read did-become-active", measured))
    print(describe("raw: cgroup.freeze 0 + one socket message → read", baseline))
    if relayed:
        print(describe("relay: one hop to a bare server that sends and thaws → read", relayed))
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
