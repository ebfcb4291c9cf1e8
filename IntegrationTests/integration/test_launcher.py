"""Privilege separation (issue 2): bgtaskd runs as an unprivileged user with no capability at all and
starts apps through bgtaskd-launcher (root), which runs them as their manifest's User= in apps/<app-id>
of the daemon's cgroup and hands back a pidfd. The daemon names only the app: the launcher reads the
manifest itself (--config-dir, on every request), so no request can choose a command or a user.

As systemd sets it up: the daemon's CgroupRoot= is a cgroup2 directory chowned to its uid the way
Delegate=yes does it, its directories are its own, and it runs in a network namespace of its own, with
PR_SET_MDWE (the kernel's MemoryDenyWriteExecute) and no_new_privs. Needs root and a cgroup2 mount.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from freezer_support import Manager, ScratchCgroup, alive, conf, procs, read_events, v2_mount, wait_for, wait_journal

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the launcher runs as root, the daemon is dropped")

PY = sys.executable
# The app runs as nobody, which must be able to execute the interpreter (not one under /root).
APP_PY = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else shutil.which("python3")
APP = "org.test.Separated"
DAEMON_USER = "daemon"  # uid 1 on Debian: stands in for the bgtaskd user
APP_USER = "nobody"

# Writes what it sees (uid, gid, environment, cgroup) as JSON, then waits to be frozen, thawed, killed.
REPORTER = textwrap.dedent("""\
    import json, os, sys, time
    out = sys.argv[1]
    with open("/proc/self/cgroup") as f:
        cgroup = f.read().strip()
    info = {"uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(), "groups": os.getgroups(),
            "env": dict(os.environ), "cgroup": cgroup, "cwd": os.getcwd(), "umask": os.umask(0o22)}
    with open(out + ".tmp", "w") as f:
        json.dump(info, f)
    os.replace(out + ".tmp", out)
    while True:
        time.sleep(0.01)  # the app idles (a script), not a wait
""")

# PR_SET_MDWE(PR_MDWE_REFUSE_EXEC_GAIN): inherited across fork and exec, like systemd's MemoryDenyWriteExecute=.
MDWE_EXEC = ("import ctypes, os, sys\n"
             "if ctypes.CDLL(None).prctl(65, 1, 0, 0, 0) != 0: sys.exit('PR_SET_MDWE failed')\n"
             "os.execvp(sys.argv[1], sys.argv[1:])\n")


def status_field(pid: int, name: str) -> str:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split(":", 1)[1].strip()
    raise AssertionError(f"no {name} in /proc/{pid}/status")


class Launcher:
    """bgtaskd-launcher as root on its own socket, serving `allow_uid`."""

    def __init__(self, bin_dir: Path, directory: Path, allow_uid: int, config_dir: Path):
        self.bin = str(bin_dir / "bgtaskd-launcher")
        self.config_dir = config_dir
        self.socket = str(directory / "io.bgtaskd.Launcher")
        self.allow_uid = allow_uid
        self.log_path = directory / "launcher.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> "Launcher":
        seen = len(self.output())
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([self.bin, "--socket", self.socket, "--allow-uid", str(self.allow_uid),
                                      "--config-dir", str(self.config_dir)],
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        wait_for(lambda: "listening" in self.output()[seen:] or self.proc.poll() is not None, 10, "the launcher to listen")
        assert self.proc.poll() is None, self.output()
        return self

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)

    def children(self) -> list[int]:
        """The pids whose parent is the launcher (the apps it started and has not reaped)."""
        out = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    if int(status_field(int(entry), "PPid")) == self.proc.pid:
                        out.append(int(entry))
                except (OSError, AssertionError, ValueError):
                    pass
        return sorted(out)

    def call(self, parameters: dict, expect_error: bool = True) -> dict:
        """One Spawn from this (root) process on a connection of its own; the reply as a dict."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
            c.settimeout(5)
            c.connect(self.socket)
            c.sendall(json.dumps({"method": "io.bgtaskd.Launcher.Spawn", "parameters": parameters}).encode() + b"\0")
            data = b""
            while not data.endswith(b"\0"):
                chunk = c.recv(4096)
                assert chunk, f"the launcher closed the connection after {data!r}"
                data += chunk
        reply = json.loads(data[:-1])
        # A test that expects a refusal must not leave an app running if it got a pid instead.
        if "error" not in reply and expect_error:
            os.kill(reply["parameters"]["pid"], signal.SIGKILL)
        return reply


@pytest.fixture
def separated(daemon, bin_dir):
    """A root launcher and an unprivileged, capability-less daemon using it, on a delegated cgroup.
    Yields a namespace with `d` (the daemon), `launcher`, `cg`, `m` (Manager), `out` (the app's report)."""
    pw = pwd.getpwnam(DAEMON_USER)
    uid, gid = pw.pw_uid, pw.pw_gid
    root = Path(tempfile.mkdtemp(prefix="bgtaskd-it-", dir="/tmp"))
    shutil.copytree(Path(__file__).resolve().parents[2] / "config", root / "config")
    for sub in ("state", "runtime"):
        (root / sub).mkdir()
        os.chown(root / sub, uid, gid)
    os.chmod(root, 0o755)
    launcher_dir = root / "launcher"
    launcher_dir.mkdir(mode=0o755)
    # Under /tmp, readable by the app's user (pytest's tmp_path is private to root).
    work = root / "work"
    work.mkdir(mode=0o755)
    reports = work / "reports"
    reports.mkdir()
    os.chmod(reports, 0o777)
    script = work / "reporter.py"
    script.write_text(REPORTER)
    os.chmod(script, 0o644)

    # The daemon's config directory (written by the daemon fixture below) holds the manifests the launcher reads.
    launcher = Launcher(bin_dir, launcher_dir, uid, root / "config").start()
    with ScratchCgroup() as cg:
        # What systemd's Delegate=yes does: the directory and these three files belong to the service's user.
        for name in ("", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"):
            os.chown(os.path.join(cg.path, name), uid, gid)
        manifests = {
            APP: "\n".join(["[App]", f"ID={APP}", f"Exec={APP_PY} {script} {reports}/{APP}.json", f"User={APP_USER}",
                            f"WorkingDirectory={work}", "LifecycleAware=no", "Environment=EXTRA=from-manifest", ""]),
            "org.test.Missing": "\n".join(["[App]", "ID=org.test.Missing", "Exec=/nonexistent/bgtaskd-no-such-app",
                                           f"User={APP_USER}", "LifecycleAware=no", ""]),
        }
        text = conf(cg.path, grace="300ms", kill="1s") + "[Daemon]\nLauncherSocket=" + launcher.socket + "\n"
        prefix = (PY, "-c", MDWE_EXEC, "unshare", "--net", "--",
                  "setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--inh-caps=-all",
                  "--bounding-set=-all", "--no-new-privs", "--")
        d = daemon(conf=text, apps=manifests, root=root, prefix=prefix)

        class NS:
            pass
        ns = NS()
        ns.d, ns.launcher, ns.cg, ns.m, ns.uid = d, launcher, cg, Manager(d.socket), uid
        ns.report = lambda app=APP: reports / f"{app}.json"
        ns.manifest = lambda app=APP: root / "config" / "apps.d" / f"{app}.app"
        ns.work, ns.reports, ns.script = work, reports, script
        try:
            yield ns
        finally:
            d.stop()
            launcher.kill()
    shutil.rmtree(root, ignore_errors=True)


def read_report(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return None


def test_daemon_without_privileges_launches_freezes_thaws_and_terminates_through_the_launcher(separated, bin_dir):
    s = separated
    # The daemon: the dropped uid, no capability in any set, a network namespace of its own.
    assert os.stat(f"/proc/{s.d.pid}").st_uid == s.uid
    assert status_field(s.d.pid, "CapEff") == "0000000000000000"
    assert status_field(s.d.pid, "CapBnd") == "0000000000000000"
    assert status_field(s.d.pid, "NoNewPrivs") == "1"
    assert os.readlink(f"/proc/{s.d.pid}/ns/net") != os.readlink("/proc/self/ns/net")

    pid = s.m.launch(APP)
    report = wait_for(lambda: read_report(s.report()), 5, "the app's report")
    nobody = pwd.getpwnam(APP_USER)
    # Its manifest's User=, not the daemon's nor the launcher's, with no supplementary group but its own.
    assert (report["uid"], report["euid"], report["gid"]) == (nobody.pw_uid, nobody.pw_uid, nobody.pw_gid)
    assert set(report["groups"]) <= {nobody.pw_gid}
    assert report["env"]["BGTASKD_APP_ID"] == APP
    assert report["env"]["BGTASKD_SOCKET"] == s.d.socket
    assert report["env"]["EXTRA"] == "from-manifest"
    assert report["env"]["USER"] == APP_USER and report["env"]["HOME"] == nobody.pw_dir
    assert report["umask"] == 0o22
    # In apps/<app-id> under the daemon's delegated root, a child of the launcher (which reaps it).
    app_cg = s.cg.app(APP)
    assert procs(app_cg) == [pid]
    unified = [line for line in report["cgroup"].splitlines() if line.startswith("0::")]
    assert unified == ["0::" + app_cg[len(v2_mount()):]], "it joined its cgroup before exec"
    assert int(status_field(pid, "PPid")) == s.launcher.proc.pid
    assert status_field(pid, "CapEff") == "0000000000000000"
    assert os.stat(app_cg).st_uid == s.uid, "the daemon made apps/<app-id> itself"

    # Frozen when its grace window ends (the daemon writes cgroup.freeze of a cgroup it owns) ...
    s.m.call("Background", appId=APP)
    wait_for(lambda: read_events(app_cg).get("frozen") == 1, 3, "cgroup.events frozen 1")
    assert s.m.state(APP) == "suspended"
    # ... thawed by bgtaskctl foreground (root is allowed the control methods).
    ctl = [str(bin_dir / "bgtaskctl"), "--socket", s.d.socket]
    r = subprocess.run([*ctl, "foreground", APP], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r.stderr
    assert read_events(app_cg).get("frozen") == 0
    assert s.m.state(APP) == "active"

    # bgtaskctl terminate ends it: the daemon cannot signal another user without CAP_KILL, so the
    # kill comes from cgroup.kill after KillTimeoutSec=; the exit reaches the daemon through the pidfd.
    r = subprocess.run([*ctl, "terminate", APP], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r.stderr
    wait_for(lambda: not alive(pid), 5, "the app to exit")
    s.m.wait_state(APP, "not-running", timeout=3)
    assert s.m.pid(APP) is None
    # The launcher reaped it: no zombie is left behind.
    wait_for(lambda: not os.path.exists(f"/proc/{pid}"), 2, "the launcher to reap the app")


def launch_reply(s, app_id: str) -> dict:
    """The daemon's reply to Launch (it comes when the launcher has answered)."""
    from support import RawClient
    with RawClient(s.d.socket, timeout=10.0) as c:
        return c.call("io.bgtaskd.Manager.Launch", {"appId": app_id, "background": False}, timeout=10.0)


def test_missing_executable_fails_with_the_launchers_message(separated):
    s = separated
    since = time.time()
    # issue 12: Launch answers once the launcher has: with its error.
    reply = launch_reply(s, "org.test.Missing")
    assert reply.get("error") == "io.bgtaskd.Manager.LaunchFailed", reply
    assert "/nonexistent/bgtaskd-no-such-app: executable not found" in reply["parameters"]["message"], reply
    entries = wait_journal(since, "BGTASKD_APP=org.test.Missing", "BGTASKD_REASON=launch-failed")
    assert "/nonexistent/bgtaskd-no-such-app: executable not found" in entries[0]["MESSAGE"], entries[0]["MESSAGE"]
    assert s.m.state("org.test.Missing") == "not-running"
    assert "io.bgtaskd.Launcher.ExecutableNotFound" in s.launcher.output()


def test_launcher_refuses_a_connection_from_another_uid(separated):
    s = separated
    # Loosen the file's mode so that the connection gets through to the launcher's own SO_PEERCRED check.
    os.chmod(s.launcher.socket, 0o666)
    client = textwrap.dedent(f"""\
        import json, socket
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect({s.launcher.socket!r})
        req = {{"method": "io.bgtaskd.Launcher.Spawn",
               "parameters": {{"appId": {APP!r}, "socket": "/run/x", "environment": {{}}}}}}
        try:
            s.sendall(json.dumps(req).encode() + b"\\0")
        except OSError:
            pass
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        print(data.rstrip(b"\\0").decode())
        """)
    r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", PY, "-c", client],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r.stderr
    reply = json.loads(r.stdout)
    assert reply["error"] == "io.bgtaskd.Launcher.PermissionDenied"
    assert f"uid {pwd.getpwnam('nobody').pw_uid} may not use bgtaskd-launcher" in reply["parameters"]["message"]
    assert "refused a connection" in s.launcher.output()
    # The daemon's own connection still works.
    pid = s.m.launch(APP)
    assert pid in procs(s.cg.app(APP))


def test_next_launch_after_a_launcher_restart_reconnects(separated):
    s = separated
    first = s.m.launch(APP)
    wait_for(lambda: read_report(s.report()), 5, "the app's report")
    s.launcher.kill()
    # The app outlives its launcher (it belongs to the daemon's cgroup, not to the launcher).
    assert alive(first) and first in procs(s.cg.app(APP))
    s.launcher.start()
    # Its exit still reaches the daemon: the pidfd is the daemon's, whoever reaps the process.
    os.kill(first, signal.SIGKILL)
    s.m.wait_state(APP, "not-running", timeout=3)
    s.report().unlink()
    second = s.m.launch(APP)
    assert second != first
    wait_for(lambda: read_report(s.report()), 5, "the relaunched app's report")
    assert procs(s.cg.app(APP)) == [second]
    assert int(status_field(second, "PPid")) == s.launcher.proc.pid


def test_a_spawn_for_an_app_without_a_manifest_is_refused_by_name(separated):
    s = separated
    # Root may use the launcher: a raw client naming an app that has no manifest.
    reply = s.launcher.call({"appId": "org.test.NoManifest", "socket": s.d.socket, "environment": {"PATH": "/usr/bin"}})
    assert reply.get("error") == "io.bgtaskd.Launcher.NoSuchApp", reply
    assert str(s.launcher.config_dir / "apps.d" / "org.test.NoManifest.app") in reply["parameters"]["message"]
    # An ID that would step out of apps.d names no file at all.
    reply = s.launcher.call({"appId": "../bgtaskd.conf.d/50-test", "socket": s.d.socket, "environment": {}})
    assert reply.get("error") == "io.bgtaskd.Launcher.InvalidRequest", reply
    assert "invalid app ID" in reply["parameters"]["message"]
    # The old request shape (a command) is refused, not half-understood.
    reply = s.launcher.call({"argv": ["/bin/sh", "-c", "id"], "user": "root", "appId": APP, "socket": s.d.socket,
                             "environment": {}})
    assert reply.get("error") == "io.bgtaskd.Launcher.InvalidRequest", reply
    assert "unknown parameter argv" in reply["parameters"]["message"]
    assert s.launcher.children() == []
    assert "started " not in s.launcher.output()

    # The daemon knows the app (loaded at start), but its manifest is gone from disk: the launcher's
    # named error is the daemon's launch-failed entry, and nothing runs.
    s.manifest("org.test.Missing").unlink()
    since = time.time()
    reply = launch_reply(s, "org.test.Missing")
    assert reply.get("error") == "io.bgtaskd.Manager.LaunchFailed", reply
    entries = wait_journal(since, "BGTASKD_APP=org.test.Missing", "BGTASKD_REASON=launch-failed")
    assert "org.test.Missing: no app manifest" in entries[0]["MESSAGE"], entries[0]["MESSAGE"]
    assert s.m.state("org.test.Missing") == "not-running"
    assert "io.bgtaskd.Launcher.NoSuchApp" in s.launcher.output()
    assert s.launcher.children() == []


def test_a_spawn_passing_a_variable_outside_the_allowlist_is_refused(separated):
    s = separated
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LD_PRELOAD": "/tmp/evil.so"}
    reply = s.launcher.call({"appId": APP, "socket": s.d.socket, "environment": env})
    assert reply.get("error") == "io.bgtaskd.Launcher.InvalidRequest", reply
    assert "LD_PRELOAD may not be passed on" in reply["parameters"]["message"]
    # The reserved variables are the launcher's to set, not the caller's.
    reply = s.launcher.call({"appId": APP, "socket": s.d.socket, "environment": {"BGTASKD_APP_ID": "org.other"}})
    assert reply.get("error") == "io.bgtaskd.Launcher.InvalidRequest", reply
    assert s.launcher.children() == []
    assert read_report(s.report()) is None, "the app must not have started"
    # The same request without the extra key starts the app (the launcher's own cgroup: none given).
    del env["LD_PRELOAD"]
    reply = s.launcher.call({"appId": APP, "socket": s.d.socket, "environment": env}, expect_error=False)
    pid = reply["parameters"]["pid"]
    try:
        report = wait_for(lambda: read_report(s.report()), 5, "the app's report")
        assert report["env"]["LANG"] == "C.UTF-8" and "LD_PRELOAD" not in report["env"]
        assert report["uid"] == pwd.getpwnam(APP_USER).pw_uid
    finally:
        os.kill(pid, signal.SIGKILL)


def test_a_manifest_changed_on_disk_is_honoured_at_the_next_launch_without_a_reload(separated):
    s = separated
    first = s.m.launch(APP)
    report = wait_for(lambda: read_report(s.report()), 5, "the app's report")
    assert report["env"]["EXTRA"] == "from-manifest" and report["cwd"] == str(s.work)
    assert "SECOND" not in report["env"]
    os.kill(first, signal.SIGKILL)
    s.m.wait_state(APP, "not-running", timeout=3)
    s.report().unlink()

    # Another Exec= (other arguments), WorkingDirectory=, Environment= and User=; no Reload, no SIGHUP.
    other = pwd.getpwnam("bin")
    s.manifest().write_text("\n".join([
        "[App]", f"ID={APP}", f"Exec={APP_PY} {s.script} {s.reports}/{APP}.second.json", f"User={other.pw_name}",
        f"WorkingDirectory={s.reports}", "LifecycleAware=no", "Environment=EXTRA=changed SECOND=yes", ""]))
    second = s.m.launch(APP)
    report = wait_for(lambda: read_report(s.reports / f"{APP}.second.json"), 5, "the relaunched app's report")
    assert report["env"]["EXTRA"] == "changed" and report["env"]["SECOND"] == "yes"
    assert report["cwd"] == str(s.reports)
    assert (report["uid"], report["gid"]) == (other.pw_uid, other.pw_gid)
    assert report["env"]["USER"] == "bin"
    assert read_report(s.report()) is None, "the old Exec= did not run"
    assert procs(s.cg.app(APP)) == [second]


def test_a_stalled_launcher_does_not_stall_the_daemon(separated):
    """The daemon waits for the launcher's answer without blocking its queue: with the launcher stopped
    (SIGSTOP), other calls are served at once while Launch waits; after 2 s the launch fails with a
    timeout, and Launch's reply says so (issue 12). Resumed, the launcher cannot deliver its late reply
    and ends the app it started."""
    from support import RawClient, get_info

    s = separated
    since = time.time()
    os.kill(s.launcher.proc.pid, signal.SIGSTOP)
    try:
        with RawClient(s.d.socket, timeout=10.0) as launching:
            launching.send_call("io.bgtaskd.Manager.Launch", {"appId": APP, "background": False})
            t1 = time.monotonic()
            info = get_info(s.d.socket)
            info_s = time.monotonic() - t1
            assert s.m.state(APP) == "not-running"   # still waiting: nothing started
            reply = launching.recv_message(timeout=10.0)
        assert reply.get("error") == "io.bgtaskd.Manager.LaunchFailed", reply
        assert "no reply from the launcher" in reply["parameters"]["message"], reply
        entries = wait_journal(since, f"BGTASKD_APP={APP}", "BGTASKD_REASON=launch-failed")
        assert "no reply from the launcher" in entries[0]["MESSAGE"], entries[0]["MESSAGE"]
    finally:
        os.kill(s.launcher.proc.pid, signal.SIGCONT)
    assert info_s < 1.0, f"GetInfo took {info_s:.2f} s while a launch waited"
    assert info["product"] == "bgtaskd"
    assert s.m.state(APP) == "not-running"
    # The launcher, resumed, started the app, could not reply on the connection the daemon gave up, and
    # ended it: nothing runs unmanaged.
    wait_for(lambda: s.launcher.children() == [] and procs(s.cg.app(APP)) == [], 5,
             "the launcher to end the app whose launch timed out")
    # And the next launch works on a new connection.
    s.m.call("Launch", appId=APP, background=False)
    wait_for(lambda: s.m.state(APP) == "active", 5, "the app to run")


def test_apps_from_desktop_entries_are_launched_through_the_launcher_as_the_config_allows(separated):
    """Issue 14: an app that has only a desktop entry (no apps.d manifest) is started by the launcher too,
    as the daemon's user (an entry has no User=). The launcher reads the entry itself from what the
    administrator's bgtaskd.conf names ([Apps] DesktopEntries=, DataDirs=), and starts it only if the
    entry is root's and writable by no one else; the request names nothing but the app ID."""
    s = separated
    app, stray = "org.test.Desktop", "org.test.Stray"
    data = s.work / "share"
    (data / "applications").mkdir(parents=True)
    elsewhere = s.work / "elsewhere"
    (elsewhere / "applications").mkdir(parents=True)
    desktop = data / "applications" / f"{app}.desktop"
    desktop.write_text(f"[Desktop Entry]\nType=Application\nName=Desktop\n"
                       f"Exec={APP_PY} {s.script} {s.reports}/{app}.json %U\nX-Bgtaskd-LifecycleAware=false\n")
    os.chmod(desktop, 0o644)
    (elsewhere / "applications" / f"{stray}.desktop").write_text(
        f"[Desktop Entry]\nType=Application\nName=Stray\nExec={APP_PY} {s.script} {s.reports}/{stray}.json\n")
    dropin = s.d.config_dir / "bgtaskd.conf.d" / "60-desktop.conf"
    dropin.write_text(f"[Apps]\nDataDirs={data}\nAdopt=no\n")
    r = subprocess.run([str(Path(s.launcher.bin).parent / "bgtaskctl"), "reload", "--socket", s.d.socket],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r.stderr

    # Through the daemon: Launch → the launcher → the app, as the daemon's user, field codes stripped.
    pid = s.m.launch(app)
    try:
        report = wait_for(lambda: read_report(s.reports / f"{app}.json"), 5, "the desktop app's report")
        assert report["uid"] == s.uid
        assert f"started {app} ({desktop})" in s.launcher.output()
    finally:
        os.kill(pid, signal.SIGKILL)
    s.m.wait_state(app, "not-running", timeout=5)

    def spawn(app_id):
        return s.launcher.call({"appId": app_id, "socket": s.d.socket, "environment": {"PATH": "/usr/bin"}})

    # An entry outside the configured data directories is no app of the launcher's.
    reply = spawn(stray)
    assert reply.get("error") == "io.bgtaskd.Launcher.NoSuchApp", reply
    assert str(data) in reply["parameters"]["message"]
    # An entry someone else could have written is refused by name.
    os.chmod(desktop, 0o666)
    reply = spawn(app)
    assert reply.get("error") == "io.bgtaskd.Launcher.PermissionDenied", reply
    os.chmod(desktop, 0o644)
    os.chown(desktop, 65534, 65534)
    reply = spawn(app)
    assert reply.get("error") == "io.bgtaskd.Launcher.PermissionDenied", reply
    assert "owned by root" in reply["parameters"]["message"]
    os.chown(desktop, 0, 0)
    # Desktop entries turned off in the administrator's configuration: none is started.
    dropin.write_text(f"[Apps]\nDataDirs={data}\nAdopt=no\nDesktopEntries=no\n")
    reply = spawn(app)
    assert reply.get("error") == "io.bgtaskd.Launcher.NoSuchApp", reply
    assert "DesktopEntries=no" in reply["parameters"]["message"]
    assert s.launcher.children() == []
    assert not (s.reports / f"{stray}.json").exists()
