"""SPEC §17 end to end: the real daemon records every input its core takes; `bgtaskctl record -o`
saves the recording (mode 0600), `bgtaskctl replay` runs it through the same core offline (no daemon,
no clock) and exits 0 when the decisions are equal, 1 naming the first difference."""
import json
import os
import stat
import subprocess
import sys
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
    assert doc["format"] == "bgtaskd-recording" and doc["version"] == 1
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
