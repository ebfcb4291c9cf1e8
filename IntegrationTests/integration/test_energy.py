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
