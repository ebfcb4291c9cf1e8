"""SPEC §16, energy accounting: a busy app's background CPU in GetApp, on its suspend entry and first in
`bgtaskctl energy`, kept across a daemon restart; wakes by cause.

Real daemon, real cgroups (a scratch `CgroupRoot=`) or real signals, real busy child processes, real journald.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from freezer_support import Manager, ScratchCgroup, conf, manifest, wait_journal, write_script

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to create cgroups")

BUSY = "org.test.Busy"
IDLE = "org.test.Idle"

# Two busy processes (the main one and a forked child): the app uses CPU for as long as it runs.
BUSY_APP = textwrap.dedent("""\
    import os
    os.fork()
    n = 0
    while True:
        n += 1
""")


@pytest.fixture
def ctl(bin_dir) -> str:
    return str(bin_dir / "bgtaskctl")


def energy_rows(ctl: str, socket: str) -> list[dict]:
    out = subprocess.run([ctl, "--socket", socket, "energy", "--json"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["apps"]


@pytest.mark.parametrize("backend", ["cgroup", "signal"])
def test_a_busy_app_held_in_the_background_is_charged_its_cpu_and_the_charge_survives_a_restart(
        daemon, ctl, tmp_path, backend):
    script = write_script(tmp_path, "busy.py", BUSY_APP)
    apps = {BUSY: manifest(BUSY, f"{sys.executable} {script}"), IDLE: manifest(IDLE, "/bin/sleep 1000")}
    with ScratchCgroup() as cg:
        # The grace window (2 s) is the time the busy app is held running in the background.
        text = conf(cg.path if backend == "cgroup" else None, backend, grace="2s")
        d = daemon(conf=text, apps=apps)
        m = Manager(d.socket)
        since = time.time()
        m.launch(BUSY)
        m.launch(IDLE, background=True)  # a wake (user) for the idle app
        m.call("Background", appId=BUSY)
        m.wait_state(BUSY, "suspended", timeout=15)
        m.wait_state(IDLE, "suspended", timeout=15)

        busy = m.app(BUSY)["energy"]
        assert busy["backgroundCPUUSec"] >= 500_000, busy
        assert busy["backgroundCPU24hUSec"] == busy["backgroundCPUUSec"]
        assert busy["wakes"] == {}, "a foreground launch is no background wake"
        idle = m.app(IDLE)["energy"]
        assert idle["wakes"] == {"user": 1} and idle["wakes24h"] == {"user": 1}, idle
        assert idle["backgroundCPUUSec"] < busy["backgroundCPUUSec"]

        # The suspend entry carries the background period that just ended.
        [entry] = wait_journal(since, "BGTASKD_DECISION=suspend", f"BGTASKD_APP={BUSY}")
        assert int(entry["BGTASKD_BACKGROUND_CPU_USEC"]) == busy["backgroundCPUUSec"]

        rows = energy_rows(ctl, d.socket)
        assert [r["appId"] for r in rows][:2] == [BUSY, IDLE], rows
        assert rows[0]["backgroundCPUUSec"] == busy["backgroundCPUUSec"]
        table = subprocess.run([ctl, "--socket", d.socket, "energy"], capture_output=True, text=True, timeout=30)
        assert table.returncode == 0 and table.stdout.splitlines()[1].startswith(BUSY), table.stdout

        # A restart (SIGTERM: the apps are killed; a frozen app's kill charges nothing more).
        assert d.stop() == 0
        d2 = daemon(conf=text, root=d.root)
        m2 = Manager(d2.socket)
        assert m2.app(BUSY)["energy"] == busy
        assert m2.app(IDLE)["energy"] == idle
        assert energy_rows(ctl, d2.socket)[0]["appId"] == BUSY


# MARK: beyond one device

def test_a_fleet_shipped_by_journal_upload_to_journal_remote_is_listed_per_machine_and_app(daemon, ctl, tmp_path):
    from fleet_support import Collector, FleetMachine
    import contextlib
    script = write_script(tmp_path, "busy.py", BUSY_APP)
    with contextlib.ExitStack() as stack:
        machines = []
        charged = {}
        for host, app in (("fleet-car-1", BUSY), ("fleet-car-2", IDLE)):
            machine = FleetMachine(host)
            stack.callback(machine.close)
            cg = stack.enter_context(ScratchCgroup())
            exec_line = f"{sys.executable} {script}" if app == BUSY else "/bin/sleep 1000"
            d = daemon(conf=conf(cg.path, grace="1s"), apps={app: manifest(app, exec_line)},
                       prefix=machine.daemon_prefix())
            m = Manager(d.socket)
            m.launch(app)
            m.call("Background", appId=app)
            m.wait_state(app, "suspended", timeout=15)
            charged[host] = m.app(app)["energy"]["backgroundCPUUSec"]
            assert d.stop() == 0  # its entries are all handed to its journald
            machine.sync()
            machines.append((machine, app))

        collector = Collector()
        stack.callback(collector.close)
        uploads = [collector.upload(machine.journal_directory) for machine, _ in machines]
        for u in uploads:
            out, err = u.communicate(timeout=60)
            assert u.returncode == 0, err
        collector.stop()
        # --split-mode=host names files by the sender's address (both are 127.0.0.1 here): the machines
        # are told apart by the entries' own _MACHINE_ID and _HOSTNAME.
        files = sorted(p.name for p in collector.output.iterdir())
        assert files == ["remote-127.0.0.1.journal"], files

        run = subprocess.run([ctl, "energy", "--directory", str(collector.output), "--json"],
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        rows = json.loads(run.stdout)["apps"]
        got = {(r["hostname"], r["machineId"], r["appId"]): (r["backgroundCPUUSec"], r["suspends"]) for r in rows}
        assert got == {
            ("fleet-car-1", machines[0][0].machine_id, BUSY): (charged["fleet-car-1"], 1),
            ("fleet-car-2", machines[1][0].machine_id, IDLE): (charged["fleet-car-2"], 1),
        }, rows
        assert rows[0]["appId"] == BUSY and charged["fleet-car-1"] >= 500_000
        table = subprocess.run([ctl, "energy", "--directory", str(collector.output)], capture_output=True,
                               text=True, timeout=60)
        assert table.returncode == 0 and table.stdout.splitlines()[1].split()[:2] == ["fleet-car-1", BUSY], table.stdout
        assert "2 apps listed on 2 machines." in table.stdout


def test_energy_directory_that_is_not_one_is_an_error(ctl, tmp_path):
    run = subprocess.run([ctl, "energy", "--directory", str(tmp_path / "missing")], capture_output=True, text=True,
                         timeout=30)
    assert run.returncode == 1 and "not a directory" in run.stderr, run
