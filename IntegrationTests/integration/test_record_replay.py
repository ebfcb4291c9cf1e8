"""SPEC §17 end to end: the real daemon records every input its core takes; `bgtaskctl record -o`
saves the recording (mode 0600), `bgtaskctl replay` runs it through the same core offline (no daemon,
no clock) and exits 0 when the decisions are equal, 1 naming the first difference."""
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import varlink

from support import AppLog, RawClient, as_user, open_to_others

HERE = Path(__file__).resolve().parent
PYAPP = HERE / "apps" / "pyapp.py"

CONF = """
[Daemon]
FreezerBackend=signal
RecordInputs=yes
[Lifecycle]
DidEnterBackgroundTimeoutSec=400ms
BackgroundTimeBudgetSec=3s
ExpirationWarningSec=500ms
LaunchTimeoutSec=5s
WillTerminateTimeoutSec=1s
KillTimeoutSec=1s
"""


def manifest(app_id, log, *flags):
    args = " ".join([sys.executable, str(PYAPP), "--log", str(log), *flags])
    return f"[App]\nID={app_id}\nName={app_id}\nExec={args}\nLifecycleAware=yes\n"


def unaware(app_id):
    return f"[App]\nID={app_id}\nName={app_id}\nExec=/bin/sleep 600\nLifecycleAware=no\n"


def ctl(bin_dir, *args, socket=None):
    cmd = [str(bin_dir / "bgtaskctl"), *args]
    if socket:
        cmd[1:1] = ["--socket", socket]
    env = {k: v for k, v in os.environ.items() if k not in ("BGTASKD_SOCKET", "NO_COLOR", "TERM")}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)


def replay(bin_dir, path):
    return ctl(bin_dir, "replay", "--quiet", str(path))


def test_a_lifecycle_recorded_on_the_daemon_replays_equal_and_a_tampered_one_differs(daemon, bin_dir, tmp_path):
    mail_log, notes_log = tmp_path / "mail.log", tmp_path / "notes.log"
    mail_log.write_text("")
    d = daemon(conf=CONF, apps={
        # Lifecycle-unaware: it runs until its grace window expires, then it is suspended.
        "org.test.Mail": unaware("org.test.Mail"),
        # Begins a background task on entering the background and ends it a moment later.
        "org.test.Notes": manifest("org.test.Notes", notes_log, "--task-on-background", "sync", "--end-task-after", "0.3"),
    })
    mail, notes = AppLog(d, "org.test.Mail", mail_log), AppLog(d, "org.test.Notes", notes_log)
    c = varlink.Client(address="unix:" + d.socket)
    with c, c.open("io.bgtaskd.Manager") as m:
        m.Launch(mail.id)
        mail.wait_state("active")
        m.Background(mail.id)                       # grace expiry, then suspend
        mail.wait_state("suspended")
        m.Launch(notes.id)
        notes.wait_state("active")
        m.Background(notes.id)                      # a background task begins and ends, then suspend
        notes.wait_state("suspended")
        assert any("ended" in line for line in notes.lines())
        # Decisions of the refresh machine (policy), and a call refused to another uid (deny, counted
        # for its connection by the denial budget): inputs of the same core.
        m.SetLowPowerMode(True)
        m.SetLowPowerMode(False)
        open_to_others(d)

        def intrude():
            with RawClient(d.socket) as ic:
                return ic.call("io.bgtaskd.App.BeginBackgroundTask", {"appId": notes.id, "name": "intruder"})
        assert as_user(65534, 65534, [], intrude).get("error") == "io.bgtaskd.App.PermissionDenied"
        m.Terminate(mail.id)
        m.Terminate(notes.id)
        mail.wait_state("not-running")
        notes.wait_state("not-running")

    record = tmp_path / "bug.json"
    r = ctl(bin_dir, "record", "-o", str(record), socket=d.socket)
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(os.stat(record).st_mode) == 0o600
    doc = json.loads(record.read_text())
    assert doc["format"] == "bgtaskd-recording" and doc["version"] == 2
    assert doc["inputsBefore"] == 0, "RecordMaxBytes=16MiB: nothing let go yet"
    inputs = doc["inputs"]
    assert all(isinstance(i["monotonicUSec"], int) and isinstance(i["realtimeUSec"], int) for i in inputs)
    decisions = "\n".join(x for i in inputs for x in i["decisions"])
    assert "suspend" in decisions and "terminate" in decisions and "grant" in decisions
    assert "Low Power Mode on" in decisions and "Low Power Mode off" in decisions
    assert "permissionDenied" in decisions and "pauseConnection" not in decisions

    r = replay(bin_dir, record)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{len(inputs)} inputs replayed: the decisions are equal" in r.stdout

    # One recorded decision changed: the replay names that input.
    k = next(n for n, i in enumerate(inputs) if any("suspend" in x for x in i["decisions"]))
    tampered = json.loads(json.dumps(doc))
    j = next(n for n, x in enumerate(tampered["inputs"][k]["decisions"]) if "suspend" in x)
    tampered["inputs"][k]["decisions"][j] = tampered["inputs"][k]["decisions"][j].replace("suspend", "resume", 1)
    bad = tmp_path / "tampered-decision.json"
    bad.write_text(json.dumps(tampered))
    r = replay(bin_dir, bad)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"decisions differ at input {k} of {len(inputs)}" in r.stderr, r.stderr
    assert "expected:" in r.stderr and "got:" in r.stderr

    # One input's time changed: the deadline that expired Mail's grace window, fed a second earlier,
    # decides nothing (no deadline is due then); the replay names that input.
    k = next(n for n, i in enumerate(inputs) if i["input"] == {"deadlineReached": {}} and i["decisions"])
    tampered = json.loads(json.dumps(doc))
    tampered["inputs"][k]["monotonicUSec"] -= 1_000_000
    bad = tmp_path / "tampered-time.json"
    bad.write_text(json.dumps(tampered))
    r = replay(bin_dir, bad)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"decisions differ at input {k} of {len(inputs)}" in r.stderr, r.stderr


RING_CONF = """
[Daemon]
FreezerBackend=signal
RecordInputs=yes
RecordMaxBytes=64KiB
[Lifecycle]
DidEnterBackgroundTimeoutSec=200ms
LaunchTimeoutSec=5s
WillTerminateTimeoutSec=1s
KillTimeoutSec=1s
"""


def test_a_ring_past_record_max_bytes_keeps_the_most_recent_inputs_and_replays_from_its_checkpoint(daemon, bin_dir, tmp_path):
    """RecordMaxBytes= at its smallest (64KiB) and many apps, round after round, well past it: the file
    holds the most recent inputs (not the daemon's start) and a checkpoint of the core, replays equal from
    it, and a tampered decision still differs, named."""
    ids = [f"org.test.Ring{n:02d}" for n in range(16)]
    d = daemon(conf=RING_CONF, apps={i: unaware(i) for i in ids})
    apps = [AppLog(d, i, tmp_path / f"{i}.log") for i in ids]
    c = varlink.Client(address="unix:" + d.socket)
    rounds = 24
    with c, c.open("io.bgtaskd.Manager") as m:
        for r in range(rounds):
            if r == 4:
                # The last 20 rounds (some 3,200 inputs, where 64KiB keeps 1,000 to 2,100 of these, packed)
                # begin now: the recording must begin after this instant.
                recent_usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
            # Each launch into the foreground sends the one before to the background.
            for a in apps:
                m.Launch(a.id)
                a.wait_state("active")
            m.Background(apps[-1].id)
            for a in apps:
                a.wait_state("suspended")
            for a in apps:
                m.Terminate(a.id)
            for a in apps:
                a.wait_state("not-running")

    record = tmp_path / "ring.json"
    r = ctl(bin_dir, "record", "-o", str(record), socket=d.socket)
    assert r.returncode == 0, r.stderr
    doc = json.loads(record.read_text())
    inputs = doc["inputs"]
    # The ring let the daemon's start go: the first input kept is of the last rounds, not a registration.
    assert inputs[0]["monotonicUSec"] > recent_usec, (inputs[0], recent_usec)
    assert "appRegistered" not in inputs[0]["input"].get("lifecycle", {}).get("_0", {}), inputs[0]
    assert doc["format"] == "bgtaskd-recording" and doc["version"] == 2
    assert doc["inputsBefore"] > 0, doc["inputsBefore"]
    assert "checkpoint" in doc and doc["checkpoint"]["lifecycle"]["records"], "a checkpoint with the apps"
    decisions = "\n".join(x for i in inputs for x in i["decisions"])
    assert "suspend" in decisions and "terminate" in decisions

    r = replay(bin_dir, record)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{len(inputs)} inputs replayed: the decisions are equal (from the checkpoint after the daemon's first {doc['inputsBefore']} inputs" in r.stdout, r.stdout

    k = next(n for n, i in enumerate(inputs) if any("suspend" in x for x in i["decisions"]))
    tampered = json.loads(json.dumps(doc))
    j = next(n for n, x in enumerate(tampered["inputs"][k]["decisions"]) if "suspend" in x)
    tampered["inputs"][k]["decisions"][j] = tampered["inputs"][k]["decisions"][j].replace("suspend", "resume", 1)
    bad = tmp_path / "tampered.json"
    bad.write_text(json.dumps(tampered))
    r = replay(bin_dir, bad)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"decisions differ at input {k} of {len(inputs)}" in r.stderr, r.stderr

    # A checkpoint edited so that the apps' slots name no record: refused in words, not a crash.
    broken = json.loads(json.dumps(doc))
    broken["checkpoint"]["lifecycle"]["records"] = []
    bad = tmp_path / "broken-checkpoint.json"
    bad.write_text(json.dumps(broken))
    r = replay(bin_dir, bad)
    assert r.returncode == 1 and "is not a recording: its checkpoint has app" in r.stderr, r.stdout + r.stderr


def test_record_needs_root_or_the_control_group(daemon, bin_dir, tmp_path):
    d = daemon()
    open_to_others(d)
    out = tmp_path / "nobody.json"
    tmp_path.chmod(0o777)
    r = as_user(65534, 65534, [], lambda: ctl(bin_dir, "record", "-o", str(out), socket=d.socket).__dict__ | {"args": []})
    assert r["returncode"] == 1, r
    assert "PermissionDenied" in r["stderr"], r
    assert not out.exists()


def test_record_off_says_so(daemon, bin_dir, tmp_path):
    d = daemon(conf="[Daemon]\nRecordInputs=no\n")
    r = ctl(bin_dir, "record", "-o", str(tmp_path / "x.json"), socket=d.socket)
    assert r.returncode == 1
    assert "recording-off" in r.stderr, r.stderr
    assert not (tmp_path / "x.json").exists()


def test_replay_refuses_a_file_that_is_not_a_recording(bin_dir, tmp_path):
    f = tmp_path / "x.json"
    f.write_text('{"format": "something-else", "version": 1}')
    r = replay(bin_dir, f)
    assert r.returncode == 1 and "is not a recording" in r.stderr, r.stderr
    f.write_text('{"format": "bgtaskd-recording", "version": 99}')
    r = replay(bin_dir, f)
    assert r.returncode == 1 and "version 99" in r.stderr, r.stderr
    # Version 1 (no checkpoint: it began at the daemon's start) is refused, and says why.
    f.write_text('{"format": "bgtaskd-recording", "version": 1, "start": {}, "inputs": [], "dropped": 0}')
    r = replay(bin_dir, f)
    assert r.returncode == 1 and "version 1 is not 2" in r.stderr and "record it again" in r.stderr, r.stderr
