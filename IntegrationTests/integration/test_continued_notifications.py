"""SPEC §16, continued tasks as desktop notifications: a real notification server (mako, on a headless
sway, as the unprivileged session user nobody) on a real private session bus (dbus-daemon --session), the
real bgtaskd-focus run as that user (--no-wayland --no-session-bus: the notifications alone; Manager
control rights through ControlGroup=nogroup), a real lifecycle-aware app (test_energy.py's) that begins a
continued task in the foreground and reports progress every 0.1 s. The notification appears with its
progress (read back from mako: `makoctl list`), is updated in place, and its Cancel action (`makoctl
invoke`) cancels the task: the app gets background-task-will-expire (reason user-cancelled) and the
notification goes. Without a server, bgtaskd-focus says so once and carries on (the Notify calls seen with
dbus-monitor)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from freezer_support import wait_for, write_script  # noqa: E402
from support import json_lines  # noqa: E402
from refresh_support import CONF, MANAGER, call, decisions  # noqa: E402
from test_energy import APP, CONTINUED_APP  # noqa: E402
from test_focus import sway  # noqa: E402,F401

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the session user's processes")


# A session bus that starts no service (no servicedir): no server unless one is started.
BARE_BUS = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:tmpdir=/tmp</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


def start_bus(sway, bare: bool):  # noqa: F811
    if not shutil.which("dbus-daemon"):
        pytest.fail("dbus-daemon is missing: scripts/install-deps.sh installs it")
    address = f"unix:path={sway.runtime}/bus"
    config = ["--session"]
    if bare:
        (sway.runtime / "bus.conf").write_text(BARE_BUS)
        config = [f"--config-file={sway.runtime}/bus.conf"]
    read, write = os.pipe()
    bus = subprocess.Popen([*sway.as_user(), "dbus-daemon", *config, f"--address={address}", "--nofork",
                            "--nopidfile", f"--print-address={write}"], pass_fds=(write,),
                           stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    os.close(write)
    with os.fdopen(read) as r:
        printed = r.readline().strip()
    assert printed.startswith(address), f"dbus-daemon said {printed!r}"
    sway.procs.append(bus)  # stopped with sway's processes, before its runtime directory goes
    return address


@pytest.fixture
def session_bus(sway):  # noqa: F811
    """dbus-daemon --session (the distribution's session.conf: services are activated) of the sway user,
    on a socket in its runtime directory; stopped at the end."""
    return start_bus(sway, bare=False)


def notifications_daemon(daemon, tmp_path):
    """test_energy.py's continued-task app under a daemon the session user may reach and control."""
    script = write_script(tmp_path, "continued.py", CONTINUED_APP)
    log = tmp_path / "continued.log"
    text = (f"[App]\nID={APP}\nName=Exporter\nExec={sys.executable} {script}\nEnvironment=CT_LOG={log}\n"
            f"Environment=CT_SUPPORT={Path(__file__).resolve().parent}\n")
    conf = CONF.replace("[Daemon]\n", "[Daemon]\nControlGroup=nogroup\n", 1)
    d = daemon(conf=conf, apps={APP: text})
    for p in (d.root, d.runtime_dir):  # the session user reaches the daemon's socket
        os.chmod(p, 0o755)

    def lines():
        return json_lines(log)
    return d, lines


def start_focus(sway, bin_dir, d, bus: str):  # noqa: F811
    return sway.spawn([str(bin_dir / "bgtaskd-focus"), "--socket", d.socket, "--no-wayland", "--no-session-bus",
                       "--session-bus", bus], "focus.log", DBUS_SESSION_BUS_ADDRESS=bus)


def mako_list(sway, bus: str) -> list[dict]:  # noqa: F811
    """makoctl list, flattened: [{id, app-name, summary, body, actions, …}]."""
    r = subprocess.run([*sway.as_user(), "makoctl", "list"], env=sway.env(DBUS_SESSION_BUS_ADDRESS=bus),
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r.stderr
    [shown] = json.loads(r.stdout)["data"]
    return [{k: v["data"] for k, v in n.items()} for n in shown]


def start_mako(sway, session_bus: str):  # noqa: F811
    """mako, the notification server, on the headless sway and the private session bus."""
    if not shutil.which("mako"):
        pytest.fail("mako is missing: scripts/install-deps.sh installs mako-notifier")
    # Once in a whole suite's run mako exited at start (the test was skipped); it started at once when
    # run again, so a start that exits is tried again, twice, before the machine is taken not to run it.
    exits = []
    for attempt in range(3):
        server = sway.spawn(["mako"], f"mako-{attempt}.log", DBUS_SESSION_BUS_ADDRESS=session_bus)
        log = sway.runtime / f"mako-{attempt}.log"

        def up():
            if server.poll() is not None:
                return "exited"
            r = subprocess.run([*sway.as_user(), "makoctl", "list"], env=sway.env(DBUS_SESSION_BUS_ADDRESS=session_bus),
                               capture_output=True, text=True, timeout=10)
            return r.returncode == 0
        if wait_for(up, 15, "mako to own org.freedesktop.Notifications") is True:
            return server
        exits.append(f"exit status {server.returncode}: {log.read_text(errors='replace')[-1000:]}")
        time.sleep(0.2)
    pytest.skip("mako could not start here, three times:\n" + "\n".join(exits))


@pytest.fixture
def mako(sway, session_bus):  # noqa: F811
    return start_mako(sway, session_bus)


def exporting(sway, bus: str) -> dict | None:  # noqa: F811
    return next((n for n in mako_list(sway, bus) if n.get("summary") == "Exporting"), None)


def test_a_continued_task_is_a_notification_with_its_progress_and_its_cancel_cancels_it(
        daemon, bin_dir, sway, session_bus, mako, tmp_path):  # noqa: F811
    d, lines = notifications_daemon(daemon, tmp_path)
    start_focus(sway, bin_dir, d, session_bus)
    focus_log = sway.runtime / "focus.log"
    wait_for(lambda: "showing continued tasks as desktop notifications" in focus_log.read_text(), 10,
             "bgtaskd-focus to connect to the session bus")
    call(d.socket, f"{MANAGER}.Launch", appId=APP)
    task = wait_for(lambda: next((l["task"] for l in lines() if "task" in l), None), 10, "the continued task")

    def ours():
        return exporting(sway, session_bus)
    first = wait_for(ours, 15, "the task's notification")
    assert first["app-name"] == "Exporter" and first["body"].endswith("%"), first
    assert first["actions"] == {"cancel": "Cancel"}, first
    # Progress: the same notification (replaces_id), its percentage growing.
    percent = int(first["body"].rstrip("%").split()[-1])
    later = wait_for(lambda: (n := ours()) and int(n["body"].rstrip("%").split()[-1]) > percent and n, 20,
                     "the notification's progress to grow")
    assert later["id"] == first["id"]
    assert len([n for n in mako_list(sway, session_bus) if n.get("summary") == "Exporting"]) == 1

    # Its Cancel action: the user cancels the task.
    r = subprocess.run([*sway.as_user(), "makoctl", "invoke", "-n", str(first["id"]), "cancel"],
                       env=sway.env(DBUS_SESSION_BUS_ADDRESS=session_bus), capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r.stderr
    wait_for(lambda: any(l.get("expired") == task for l in lines()), 10, "the app's expiration handler")
    assert decisions(d.pid, APP, "expire", "user-cancelled")
    wait_for(lambda: call(d.socket, f"{MANAGER}.ListContinuedTasks")["tasks"] == [], 10, "the task to end")
    wait_for(lambda: ours() is None, 10, "the notification to close")
    assert f"the user cancelled {APP} task {task}" in focus_log.read_text()


def test_a_task_that_ends_has_its_notification_closed(daemon, bin_dir, sway, session_bus, mako, tmp_path):  # noqa: F811
    """The app is terminated: its task ends, and bgtaskd-focus closes the notification (CloseNotification;
    mako keeps a notification until it is closed: no expiry)."""
    d, lines = notifications_daemon(daemon, tmp_path)
    start_focus(sway, bin_dir, d, session_bus)
    call(d.socket, f"{MANAGER}.Launch", appId=APP)
    wait_for(lambda: exporting(sway, session_bus), 15, "the task's notification")
    call(d.socket, f"{MANAGER}.Terminate", appId=APP)
    wait_for(lambda: call(d.socket, f"{MANAGER}.ListContinuedTasks")["tasks"] == [], 10, "the task to end")
    wait_for(lambda: exporting(sway, session_bus) is None, 10, "the notification to close")


@pytest.mark.parametrize("bus", ["bare", "activating"])
def test_without_a_notification_server_focus_says_so_once_and_carries_on(
        daemon, bin_dir, sway, tmp_path, bus):  # noqa: F811
    """No server owns org.freedesktop.Notifications: the Notify call (seen with dbus-monitor) fails, and
    bgtaskd-focus says so once and does not call again at each progress, until a server comes
    (NameOwnerChanged): then the task is shown. `bare`: a bus that starts no service (ServiceUnknown);
    `activating`: the distribution's session.conf, whose D-Bus activation starts mako (its service file)
    without a compositor: it takes the name and dies at each call, and bgtaskd-focus calls again no
    sooner than 5 s after a failure."""
    session_bus = start_bus(sway, bare=bus == "bare")
    started = time.monotonic()
    watch = sway.spawn(["dbus-monitor", "--address", session_bus,
                        "type='method_call',interface='org.freedesktop.Notifications'"], "monitor.log")
    monitor_log = sway.runtime / "monitor.log"
    wait_for(lambda: "NameAcquired" in monitor_log.read_text(errors="replace")
             or "member=NameAcquired" in monitor_log.read_text(errors="replace"), 10, "dbus-monitor to watch")
    d, lines = notifications_daemon(daemon, tmp_path)
    start_focus(sway, bin_dir, d, session_bus)
    call(d.socket, f"{MANAGER}.Launch", appId=APP)
    wait_for(lambda: "member=Notify" in monitor_log.read_text(errors="replace"), 20, "a Notify call")
    done = sum(1 for l in lines() if l.get("progress"))
    wait_for(lambda: sum(1 for l in lines() if l.get("progress")) >= done + 20, 20, "20 more progress reports")
    text = monitor_log.read_text(errors="replace")
    assert 'string "Exporting"' in text and 'string "cancel"' in text and 'string "value"' in text, text[-3000:]
    assert 'string "resident"' in text and "variant             int32 " in text, text[-3000:]
    # 20 progress reports (two more percent) later: the one call (a bare bus: retried after a minute), or
    # one per 5 s (a server activated and gone), said once.
    calls = text.count("member=Notify")
    bound = 1 if bus == "bare" else 1 + int((time.monotonic() - started) / 5)
    assert calls <= bound, (calls, (sway.runtime / "focus.log").read_text()[-3000:])
    focus_log = sway.runtime / "focus.log"
    assert focus_log.read_text().count("no notification server owns org.freedesktop.Notifications") == 1
    assert watch.poll() is None
    # A server comes: the task is shown.
    start_mako(sway, session_bus)
    wait_for(lambda: exporting(sway, session_bus), 15, "the task's notification once mako runs")
