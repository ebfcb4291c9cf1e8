"""SPEC §13 (issue 14): apps from desktop entries, and apps started by others adopted from their
systemd cgroups. Real daemon, real journal, real cgroup v2 hierarchy and processes."""

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

from freezer_support import journal, read_events, wait_for, wait_journal  # noqa: E402


@pytest.fixture
def ctl(bin_dir) -> str:
    return str(bin_dir / "bgtaskctl")


def run(ctl, d, *args):
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS", "BGTASKD_SOCKET", "TERM")}
    return subprocess.run([ctl, *args, "--socket", d.socket], capture_output=True, text=True, env=env, timeout=30)


def apps(ctl, d) -> dict:
    r = run(ctl, d, "list", "--json")
    assert r.returncode == 0, r.stderr
    return {a["appId"]: a for a in json.loads(r.stdout)["apps"]}


def entry(name: str, exec_line: str, extra: str = "") -> str:
    return f"[Desktop Entry]\nType=Application\nName={name}\nExec={exec_line}\n{extra}"


@pytest.fixture
def data_dirs():
    root = Path(tempfile.mkdtemp(prefix="bgtaskd-xdg-", dir="/tmp"))
    one, two = root / "one", root / "two"
    (one / "applications").mkdir(parents=True)
    (two / "applications").mkdir(parents=True)
    yield one, two
    shutil.rmtree(root, ignore_errors=True)


def test_desktop_entries_are_apps(daemon, ctl, data_dirs):
    one, two = data_dirs
    apps_one = one / "applications"
    (apps_one / "org.example.Maps.desktop").write_text(entry(
        "Maps", "/bin/sleep 1000 %U", "Name[de]=Karten\nX-Bgtaskd-BackgroundModes=audio;fetch;\n"))
    (apps_one / "vendor").mkdir()
    (apps_one / "vendor" / "org.example.Sub.desktop").write_text(entry("Sub", "sleep 5"))
    (apps_one / "org.example.Hidden.desktop").write_text(entry("Hidden", "sleep 5", "Hidden=true\n"))
    (apps_one / "org.example.Aware.desktop").write_text(entry("Aware", "sleep 5", "X-Bgtaskd-LifecycleAware=true\n"))
    bad = apps_one / "org.example.Bad.desktop"
    bad.write_text(entry("Bad", "sleep 5", "X-Bgtaskd-LifecycleAware=maybe\n"))
    # The second directory: Maps is already defined by the first (first wins); Mail by its manifest.
    (two / "applications" / "org.example.Maps.desktop").write_text(entry("Second Maps", "sleep 5"))
    (two / "applications" / "org.example.Mail.desktop").write_text(entry("Desktop Mail", "sleep 5"))
    (two / "applications" / "org.example.Hidden.desktop").write_text(entry("Hidden", "sleep 5"))
    since = time.time()
    d = daemon(conf=f"[Apps]\nDataDirs={one} {two}\nAdopt=no\n")
    got = apps(ctl, d)
    assert got["org.example.Maps"]["name"] == "Maps"
    assert got["org.example.Maps"]["lifecycleAware"] is False
    assert got["vendor-org.example.Sub"]["name"] == "Sub"
    assert got["org.example.Aware"]["lifecycleAware"] is True
    assert got["org.example.Mail"]["name"] != "Desktop Mail", "the manifest in apps.d wins"
    assert "org.example.Hidden" not in got, "Hidden=true in the first directory hides the entry of the second"
    assert "org.example.Bad" not in got
    # The bad entry is reported with its file, line and key.
    text = f"{bad}:5: X-Bgtaskd-LifecycleAware"
    found = wait_for(lambda: [e for e in journal(since, f"_PID={d.pid}") if text in e.get("MESSAGE", "")], 10, "the bad entry's warning",
                     interval=0.1)
    assert "(app left out)" in found[0]["MESSAGE"]

    # X-Bgtaskd-BackgroundModes= are the app's modes: the core checks the mode before the state, so an
    # undeclared mode is ModeNotDeclared, a declared non-continuous one ModeNotContinuous, and a declared
    # continuous one gets as far as InvalidState (the app is not running).
    import varlink
    with varlink.Client(address=f"unix:{d.socket}") as client, client.open("io.bgtaskd.App") as app:
        for mode, error in (("voip", "ModeNotDeclared"), ("fetch", "ModeNotContinuous"), ("audio", "InvalidState")):
            with pytest.raises(varlink.VarlinkError) as e:
                app.BeginActivity(appId="org.example.Maps", mode=mode)
            assert e.value.error() == f"io.bgtaskd.App.{error}", (mode, e.value.error())

    # Reload re-reads the entries: a new one appears, the fixed one loads, a removed one goes.
    (apps_one / "org.example.New.desktop").write_text(entry("New", "sleep 5"))
    bad.write_text(entry("Fixed", "sleep 5"))
    (apps_one / "vendor" / "org.example.Sub.desktop").unlink()
    r = run(ctl, d, "reload")
    assert r.returncode == 0, r.stderr
    got = apps(ctl, d)
    assert got["org.example.New"]["name"] == "New"
    assert got["org.example.Bad"]["name"] == "Fixed"
    assert "vendor-org.example.Sub" not in got


def test_desktop_entry_launches_with_field_codes_stripped(daemon, ctl, data_dirs):
    one, _ = data_dirs
    out = one / "argv.json"
    script = one / "argv.py"
    script.write_text(f"import json, sys, time\njson.dump(sys.argv[1:], open({str(out)!r}, 'w'))\ntime.sleep(1000)\n")  # the app idles (a script), not a wait
    (one / "applications" / "org.example.Args.desktop").write_text(
        entry("Args", f'{sys.executable} {script} %U "two words" 100%% %i --file=%f'))
    d = daemon(conf=f"[Apps]\nDataDirs={one}\nAdopt=no\n[Daemon]\nFreezerBackend=signal\n")
    r = run(ctl, d, "launch", "org.example.Args")
    assert r.returncode == 0, r.stderr
    argv = wait_for(lambda: out.exists() and out.read_text() and json.loads(out.read_text()), 10, "the app's argv")
    assert argv == ["two words", "100%", "--file="]
    assert run(ctl, d, "terminate", "org.example.Args").returncode == 0


def test_desktop_entries_off(daemon, ctl, data_dirs):
    one, _ = data_dirs
    (one / "applications" / "org.example.Maps.desktop").write_text(entry("Maps", "sleep 5"))
    d = daemon(conf=f"[Apps]\nDataDirs={one}\nDesktopEntries=no\nAdopt=no\n")
    assert "org.example.Maps" not in apps(ctl, d)


@pytest.mark.parametrize("how", ["entry", "config"])
def test_exempt_app_is_never_frozen(daemon, ctl, data_dirs, how):
    """X-Bgtaskd-Exempt=true or [Apps] Exempt=: at the end of the grace window the app stays in the
    background, unfrozen, with one `policy` decision, reason `exempt`; a plain app beside it is frozen."""
    one, _ = data_dirs
    extra = "X-Bgtaskd-Exempt=true\n" if how == "entry" else ""
    (one / "applications" / "sm.puri.Squeekboard.desktop").write_text(entry("Keyboard", "sleep 1000", extra))
    (one / "applications" / "org.example.Plain.desktop").write_text(entry("Plain", "sleep 1000"))
    exempt = "Exempt=sm.puri.Squeekboard\n" if how == "config" else ""
    d = daemon(conf=f"[Apps]\nDataDirs={one}\nAdopt=no\n{exempt}[Daemon]\nFreezerBackend=signal\n"
                    "[Lifecycle]\nDidEnterBackgroundTimeoutSec=300ms\n")
    since = time.time()
    for app in ("sm.puri.Squeekboard", "org.example.Plain"):
        assert run(ctl, d, "launch", app).returncode == 0
        assert run(ctl, d, "background", app).returncode == 0
    policy = wait_journal(since, f"_PID={d.pid}", "BGTASKD_APP=sm.puri.Squeekboard", "BGTASKD_DECISION=policy", timeout=10)
    assert policy[0]["BGTASKD_REASON"] == "exempt"
    # The plain app's suspension comes at the same grace end: once it is there, the exempt one was
    # not frozen with it.
    wait_journal(since, f"_PID={d.pid}", "BGTASKD_APP=org.example.Plain", "BGTASKD_DECISION=suspend", timeout=10)
    got = apps(ctl, d)
    assert got["sm.puri.Squeekboard"]["state"] == "background"
    assert got["org.example.Plain"]["state"] == "suspended"
    pid = got["sm.puri.Squeekboard"]["pid"]
    with open(f"/proc/{pid}/stat") as f:
        assert f.read().rsplit(")", 1)[1].split()[0] != "T", "the exempt app is not stopped"
    assert not journal(since, f"_PID={d.pid}", "BGTASKD_APP=sm.puri.Squeekboard", "BGTASKD_DECISION=suspend")
    for app in ("sm.puri.Squeekboard", "org.example.Plain"):
        run(ctl, d, "terminate", app)


# MARK: adoption of apps started by others

from freezer_support import ScratchCgroup  # noqa: E402

UNIT_DIR = "user.slice/user-1000.slice/user@1000.service/app.slice"


def start_in(cgroup: str, *argv: str) -> subprocess.Popen:
    """A real process that moves itself into `cgroup` before it execs `argv` (as systemd-run --scope does)."""
    return subprocess.Popen(["sh", "-c", f'echo $$ > "{cgroup}/cgroup.procs" && exec "$@"', "sh", *argv],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def state(ctl, d, app):
    return apps(ctl, d).get(app, {}).get("state")


@pytest.fixture
def hierarchy():
    """A fake user-manager hierarchy in a scratch cgroup v2 directory (real cgroups), removed afterwards."""
    if os.geteuid() != 0:
        pytest.fail("the adoption test makes cgroups and writes their cgroup.freeze: run it as root")
    with ScratchCgroup("-adopt") as scratch:
        slice_dir = os.path.join(scratch.path, UNIT_DIR)
        os.makedirs(slice_dir)
        yield scratch.path, slice_dir


def test_apps_started_by_others_are_adopted(daemon, ctl, data_dirs, hierarchy):
    scratch, slice_dir = hierarchy
    one, _ = data_dirs
    (one / "applications" / "org.example.A.desktop").write_text(entry("A", "sleep 1000"))
    (one / "applications" / "org.example.My-App.desktop").write_text(entry("My App", "sleep 1000"))
    since = time.time()
    # A unit that exists before the daemon starts is found by the first scan.
    early = os.path.join(slice_dir, r"app-gnome-org.example.My\x2dApp-77.scope")
    os.mkdir(early)
    early_proc = start_in(early, "sleep", "1000")
    d = daemon(conf=f"[Apps]\nDataDirs={one}\nAdoptFrom={scratch}/user.slice\n"
                    "[Daemon]\nFreezerBackend=signal\n[Lifecycle]\nDidEnterBackgroundTimeoutSec=300ms\n")
    procs = [early_proc]
    try:
        wait_for(lambda: state(ctl, d, "org.example.My-App") == "active", 10, "the early unit (\\x2d unescaped)")

        # A new scope, named as the desktop convention says, with a real process in it: adopted.
        scope = os.path.join(slice_dir, "app-test-org.example.A-1234.scope")
        os.mkdir(scope)
        assert state(ctl, d, "org.example.A") == "not-running", "an empty cgroup is no instance yet"
        procs.append(start_in(scope, "sleep", "1000"))
        wait_for(lambda: state(ctl, d, "org.example.A") == "active", 10, "adoption of org.example.A")
        info = apps(ctl, d)["org.example.A"]
        assert info["pid"] == procs[-1].pid
        adopted = wait_journal(since, f"_PID={d.pid}", "BGTASKD_APP=org.example.A", "BGTASKD_DECISION=launch", timeout=10)
        assert adopted[0]["BGTASKD_REASON"] == "adopted"

        # A second instance of the same app (a service with a random instance): one app, two cgroups.
        service = os.path.join(slice_dir, "app-test-org.example.A@5678.service")
        os.mkdir(service)
        procs.append(start_in(service, "sleep", "1000"))
        wait_journal(since, f"_PID={d.pid}", "BGTASKD_APP=org.example.A", "BGTASKD_DECISION=launch", count=2, timeout=10)

        # background → frozen 1 in both cgroups after the grace window.
        assert run(ctl, d, "background", "org.example.A").returncode == 0
        wait_journal(since, f"_PID={d.pid}", "BGTASKD_APP=org.example.A", "BGTASKD_DECISION=suspend", timeout=10)
        wait_for(lambda: read_events(scope).get("frozen") == 1 and read_events(service).get("frozen") == 1, 5,
                 "frozen 1 in both adopted cgroups")
        assert state(ctl, d, "org.example.A") == "suspended"
        assert read_events(early).get("frozen") == 0, "another app's cgroup is not touched"

        # foreground → thawed when the command returns.
        assert run(ctl, d, "foreground", "org.example.A", "--keep-others").returncode == 0
        assert read_events(scope).get("frozen") == 0 and read_events(service).get("frozen") == 0
        assert state(ctl, d, "org.example.A") == "active"

        # The first instance's process exits: one instance is left, still the same running app.
        procs[1].kill()
        procs[1].wait()
        wait_for(lambda: read_events(scope).get("populated") == 0, 5, "the scope to empty")
        os.rmdir(scope)  # as systemd removes an empty scope
        # The second exits too: the app is released (not-running, terminate / app-exited).
        procs[2].kill()
        procs[2].wait()
        gone = wait_journal(since, f"_PID={d.pid}", "BGTASKD_APP=org.example.A", "BGTASKD_DECISION=terminate", timeout=10)
        assert gone[0]["BGTASKD_REASON"] == "app-exited"
        assert "last instance" in gone[0]["MESSAGE"]
        assert state(ctl, d, "org.example.A") == "not-running"

        # An app bgtaskd does not know is left alone and logged once.
        unknown = os.path.join(slice_dir, "app-test-org.example.Unknown-1.scope")
        unknown2 = os.path.join(slice_dir, "app-test-org.example.Unknown-2.scope")
        for path in (unknown, unknown2):
            os.mkdir(path)
            procs.append(start_in(path, "sleep", "1000"))
        # Each process joins its scope itself (a shell's echo): wait until it has, so the check below
        # sees what the daemon did, not how far a shell had got.
        for path in (unknown, unknown2):
            wait_for(lambda path=path: read_events(path).get("populated") == 1, 10, f"a process in {path}")
        # Terminate the early app: its cgroup is killed through cgroup.kill (SIGTERM first).
        assert run(ctl, d, "terminate", "org.example.My-App").returncode == 0
        wait_journal(since, f"_PID={d.pid}", "BGTASKD_APP=org.example.My-App", "BGTASKD_DECISION=terminate", count=2, timeout=10)
        wait_for(lambda: read_events(early).get("populated") == 0, 5, "the terminated app's cgroup to empty")
        notes = [e for e in journal(since, f"_PID={d.pid}") if "org.example.Unknown" in e.get("MESSAGE", "")]
        assert len(notes) == 1 and "left alone" in notes[0]["MESSAGE"], notes
        assert read_events(unknown).get("frozen") == 0 and read_events(unknown).get("populated") == 1
        assert "org.example.Unknown" not in apps(ctl, d)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()


def test_unprivileged_daemon_freezes_adopted_units_through_the_launcher(daemon, ctl, bin_dir, data_dirs, hierarchy):
    """bgtaskd as an unprivileged uid with no capabilities cannot write a user's cgroup.freeze; it asks
    bgtaskd-launcher (root) with ControlAppUnit, which acts only on app units of a user manager owned
    by that user."""
    import pwd
    import socket as socketlib
    from test_launcher import DAEMON_USER, MDWE_EXEC, Launcher, status_field
    scratch, slice_dir = hierarchy
    one, _ = data_dirs
    os.chmod(one.parent, 0o755)
    (one / "applications" / "org.example.A.desktop").write_text(entry("A", "sleep 1000"))
    pw = pwd.getpwnam(DAEMON_USER)
    uid, gid = pw.pw_uid, pw.pw_gid
    root = Path(tempfile.mkdtemp(prefix="bgtaskd-it-", dir="/tmp"))
    os.chmod(root, 0o755)
    shutil.copytree(Path(__file__).resolve().parents[2] / "config", root / "config")
    for sub in ("state", "runtime"):
        (root / sub).mkdir()
        os.chown(root / sub, uid, gid)
    (root / "launcher").mkdir(mode=0o755)
    launcher = Launcher(bin_dir, root / "launcher", uid, root / "config")
    launcher.start = lambda: None  # started below with --adopt-from
    log = open(launcher.log_path, "ab")
    launcher.proc = subprocess.Popen([launcher.bin, "--socket", launcher.socket, "--allow-uid", str(uid),
                                      "--config-dir", str(root / "config"), "--adopt-from", f"{scratch}/user.slice"],
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    log.close()
    wait_for(lambda: "listening" in launcher.output(), 10, "the launcher to listen")
    # The unit as a user manager makes it: the user's own directory and files.
    scope = os.path.join(slice_dir, "app-test-org.example.A-1234.scope")
    os.mkdir(scope)
    for name in ["", *os.listdir(scope)]:
        os.chown(os.path.join(scope, name), 1000, 1000)
    proc = start_in(scope, "sleep", "1000")
    prefix = (sys.executable, "-c", MDWE_EXEC, "setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
              "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--")
    since = time.time()
    try:
        d = daemon(conf=f"[Apps]\nDataDirs={one}\nAdoptFrom={scratch}/user.slice\n[Daemon]\nFreezerBackend=signal\n"
                        f"LauncherSocket={launcher.socket}\n[Lifecycle]\nDidEnterBackgroundTimeoutSec=300ms\n",
                   root=root, prefix=prefix)
        assert os.stat(f"/proc/{d.pid}").st_uid == uid and status_field(d.pid, "CapEff") == "0000000000000000"
        wait_for(lambda: state(ctl, d, "org.example.A") == "active", 10, "adoption by the unprivileged daemon")
        assert run(ctl, d, "background", "org.example.A").returncode == 0
        wait_for(lambda: read_events(scope).get("frozen") == 1, 10, "frozen 1 through the launcher")
        assert state(ctl, d, "org.example.A") == "suspended"
        assert run(ctl, d, "foreground", "org.example.A").returncode == 0
        wait_for(lambda: read_events(scope).get("frozen") == 0, 10, "thawed through the launcher")
        assert f"freeze {scope} for uid {uid}" in launcher.output()

        # What the launcher refuses, asked directly (root may connect): paths that are not a user's app
        # unit, and a unit whose owner is not the uid its name gives.
        other = os.path.join(scratch, "user.slice", "user-1000.slice", "user@1000.service", "app.slice", "app-x-1.scope")
        os.mkdir(other)  # owned by root, named for uid 1000
        def control(path, action="freeze"):
            with socketlib.socket(socketlib.AF_UNIX, socketlib.SOCK_STREAM) as c:
                c.settimeout(5)
                c.connect(launcher.socket)
                c.sendall(json.dumps({"method": "io.bgtaskd.Launcher.ControlAppUnit",
                                      "parameters": {"cgroup": path, "action": action}}).encode() + b"\0")
                data = b""
                while not data.endswith(b"\0"):
                    chunk = c.recv(4096)
                    assert chunk
                    data += chunk
            return json.loads(data[:-1])
        for path in (scratch, slice_dir, os.path.join(slice_dir, "..", "app.slice", "app-test-org.example.A-1234.scope"),
                     os.path.join(slice_dir, "not-an-app.scope"), other, "/etc"):
            reply = control(path)
            assert reply.get("error") == "io.bgtaskd.Launcher.PermissionDenied", (path, reply)
        assert read_events(other).get("frozen") == 0
        assert control(scope, "explode").get("error") == "io.bgtaskd.Launcher.InvalidRequest"
        assert control(scope, "thaw") == {"parameters": {}} or "error" not in control(scope, "thaw")
    finally:
        proc.kill()
        proc.wait()
        launcher.kill()
        shutil.rmtree(root / "launcher", ignore_errors=True)


def test_adopted_instance_has_its_unit_owners_uid(daemon, ctl, data_dirs, hierarchy):
    """Issue 14: an instance adopted from `user@1000.service` is uid 1000's (the owner of the user manager
    its unit runs under, from the cgroup path), in list, status and GetApp, and the app's calls are
    allowed from that uid and refused from another; before it showed the daemon's own uid."""
    from support import RawClient
    from test_authorization import as_user, open_to_others
    scratch, slice_dir = hierarchy
    one, _ = data_dirs
    app = "org.example.A"
    (one / "applications" / f"{app}.desktop").write_text(entry("A", "sleep 1000"))
    d = daemon(conf=f"[Apps]\nDataDirs={one}\nAdoptFrom={scratch}/user.slice\n[Daemon]\nFreezerBackend=signal\n")
    open_to_others(d)
    scope = os.path.join(slice_dir, f"app-test-{app}-1234.scope")
    os.mkdir(scope)
    proc = start_in(scope, "sleep", "1000")
    try:
        wait_for(lambda: state(ctl, d, app) == "active", 10, "adoption")
        assert apps(ctl, d)[app]["uid"] == 1000
        with RawClient(d.socket) as c:
            got = c.call("io.bgtaskd.Manager.GetApp", {"appId": app})
        assert got["parameters"]["app"]["uid"] == 1000, got
        status = run(ctl, d, "status", app)
        assert status.returncode == 0 and any(l.split(":", 1)[0].strip() == "UID" and l.split(":", 1)[1].split()[0] == "1000"
                                              for l in status.stdout.splitlines()), status.stdout

        def begin():
            with RawClient(d.socket) as c:
                return c.call("io.bgtaskd.App.BeginBackgroundTask", {"appId": app, "name": "sync"})

        # The unit's owner may; another uid may not.
        owner = as_user(1000, 1000, [], begin)
        assert "error" not in owner and owner["parameters"]["taskId"] > 0, owner
        other = as_user(64003, 64003, [], begin)
        assert other.get("error") == "io.bgtaskd.App.PermissionDenied", other
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("backend", ["signal", "cgroup"])
def test_many_adopted_units_each_app_answers_for_its_own(daemon, ctl, data_dirs, hierarchy, backend):
    """120 adopted units of 60 apps under two user managers: each app's uid is the owner of its first
    instance, and follows when that instance goes; a freeze and a thaw touch the app's own cgroups and no
    other's; an app whose instances all went is not running while the rest stay. On both freezer backends
    that freeze (adopted cgroups are frozen through their own `cgroup.freeze` with either)."""
    scratch, slice_dir = hierarchy
    one, _ = data_dirs
    other_dir = os.path.join(scratch, "user.slice/user-1001.slice/user@1001.service/app.slice")
    os.makedirs(other_dir)
    n = 60
    names = [f"org.example.Many{k:02d}" for k in range(n)]
    for name in names:
        (one / "applications" / f"{name}.desktop").write_text(entry(name, "sleep 1000"))
    # App k: one instance under user 1001; a second under user 1000 for odd k (then it is the first of
    # the two in instance order: "user-1000…" sorts before "user-1001…"), else a second under 1001.
    scopes: dict[str, list[str]] = {}
    procs: dict[str, subprocess.Popen] = {}
    for k, name in enumerate(names):
        scopes[name] = [os.path.join(other_dir, f"app-test-{name}-{k}.scope"),
                        os.path.join(slice_dir if k % 2 else other_dir, f"app-test-{name}-{1000 + k}.scope")]
    own = f"CgroupRoot={scratch}/bgtaskd-apps\n" if backend == "cgroup" else ""
    d = daemon(conf=f"[Apps]\nDataDirs={one}\nAdoptFrom={scratch}/user.slice\n[Daemon]\nFreezerBackend={backend}\n"
                    f"{own}[Lifecycle]\nDidEnterBackgroundTimeoutSec=300ms\n")
    if backend == "cgroup":
        assert os.path.isdir(f"{scratch}/bgtaskd-apps"), "the cgroup backend took its root (no fallback)"
    since = time.time()
    try:
        for name in names:
            for path in scopes[name]:
                os.mkdir(path)
                procs[path] = start_in(path, "sleep", "1000")
        wait_for(lambda: all(a.get("state") == "active" for name, a in apps(ctl, d).items() if name in scopes)
                 and sum(1 for name in apps(ctl, d) if name in scopes) == n, 20, "every app adopted")
        launches = wait_journal(since, f"_PID={d.pid}", "BGTASKD_DECISION=launch", count=2 * n, timeout=20)
        assert len(launches) >= 2 * n
        listed = apps(ctl, d)
        wrong = {name: listed[name]["uid"] for k, name in enumerate(names) if listed[name]["uid"] != (1000 if k % 2 else 1001)}
        assert not wrong, f"uids not their first instance's owner: {wrong}"

        # The first instance (user 1000's) of an odd app goes: the app is user 1001's now, still running.
        moved = names[7]
        procs[scopes[moved][1]].kill()
        procs[scopes[moved][1]].wait()
        wait_for(lambda: read_events(scopes[moved][1]).get("populated") == 0, 5, "the scope to empty")
        wait_for(lambda: apps(ctl, d)[moved]["uid"] == 1001, 10, "the uid of the instance left")
        assert apps(ctl, d)[moved]["state"] == "active"

        # A freeze of one app: its two cgroups, none of the other 118.
        target = names[12]
        assert run(ctl, d, "background", target).returncode == 0
        wait_journal(since, f"_PID={d.pid}", f"BGTASKD_APP={target}", "BGTASKD_DECISION=suspend", timeout=10)
        wait_for(lambda: all(read_events(p).get("frozen") == 1 for p in scopes[target]), 5, "both cgroups frozen")
        others = [p for name in names if name != target for p in scopes[name] if os.path.isdir(p)]
        assert len(others) == 2 * n - 2
        frozen_others = [p for p in others if read_events(p).get("frozen") != 0]
        assert not frozen_others, frozen_others
        assert run(ctl, d, "foreground", target, "--keep-others").returncode == 0
        assert all(read_events(p).get("frozen") == 0 for p in scopes[target])
        assert apps(ctl, d)[target]["state"] == "active"

        # Every instance of one app goes: it is not running; every other app still is.
        gone = names[30]
        for path in scopes[gone]:
            procs[path].kill()
            procs[path].wait()
        ended = wait_journal(since, f"_PID={d.pid}", f"BGTASKD_APP={gone}", "BGTASKD_DECISION=terminate", timeout=10)
        assert ended[0]["BGTASKD_REASON"] == "app-exited"
        listed = apps(ctl, d)
        assert listed[gone]["state"] == "not-running"
        assert sorted(name for name in names if listed[name]["state"] != "active") == [gone]
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
            p.wait()


def test_removing_a_desktop_entry_releases_adopted_instances(daemon, ctl, data_dirs, hierarchy):
    """Issue 14: an app that runs only as instances started by others is not ended when its desktop entry
    goes away (reload): it is released from management — thawed, journaled (terminate, manifest-removed,
    "released"), no longer listed — and its process keeps running. The entry back: adopted again."""
    scratch, slice_dir = hierarchy
    one, _ = data_dirs
    app = "org.example.A"
    desktop = one / "applications" / f"{app}.desktop"
    desktop.write_text(entry("A", "sleep 1000"))
    d = daemon(conf=f"[Apps]\nDataDirs={one}\nAdoptFrom={scratch}/user.slice\n[Daemon]\nFreezerBackend=signal\n"
                    "[Lifecycle]\nDidEnterBackgroundTimeoutSec=300ms\n")
    scope = os.path.join(slice_dir, f"app-test-{app}-1234.scope")
    os.mkdir(scope)
    proc = start_in(scope, "sleep", "1000")
    since = time.time()
    try:
        wait_for(lambda: state(ctl, d, app) == "active", 10, "adoption")
        assert run(ctl, d, "background", app).returncode == 0
        wait_journal(since, f"_PID={d.pid}", f"BGTASKD_APP={app}", "BGTASKD_DECISION=suspend", timeout=10)
        assert read_events(scope).get("frozen") == 1

        t1 = time.time()
        desktop.unlink()
        r = run(ctl, d, "reload")
        assert r.returncode == 0, r.stderr
        released = wait_journal(t1, f"_PID={d.pid}", f"BGTASKD_APP={app}", "BGTASKD_DECISION=terminate", timeout=10)
        assert released[0]["BGTASKD_REASON"] == "manifest-removed"
        assert "released" in released[0]["MESSAGE"], released[0]
        assert read_events(scope).get("frozen") == 0
        assert proc.poll() is None, "the instance started by others keeps running"
        assert read_events(scope).get("populated") == 1
        assert app not in apps(ctl, d)
        # Nothing else was done to it: the release is the last word on the app.
        assert [e["BGTASKD_DECISION"] for e in journal(t1, f"_PID={d.pid}", f"BGTASKD_APP={app}") if "BGTASKD_DECISION" in e] == ["resume", "terminate"]

        # The entry is back: the running instance is adopted again.
        t2 = time.time()
        desktop.write_text(entry("A", "sleep 1000"))
        assert run(ctl, d, "reload").returncode == 0
        again = wait_journal(t2, f"_PID={d.pid}", f"BGTASKD_APP={app}", "BGTASKD_DECISION=launch", timeout=10)
        assert again[0]["BGTASKD_REASON"] == "adopted"
        assert state(ctl, d, app) == "active" and proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


def test_adopt_and_adopt_from_take_effect_on_reload(daemon, ctl, data_dirs, hierarchy):
    """Issue 14: `[Apps] Adopt=` and `AdoptFrom=` change on reload, no restart: turned on, the running
    instance is adopted; pointed elsewhere or turned off, the instances no longer watched are released
    (thawed, journaled terminate/adoption-changed) and keep running."""
    scratch, slice_dir = hierarchy
    one, _ = data_dirs
    app = "org.example.A"
    (one / "applications" / f"{app}.desktop").write_text(entry("A", "sleep 1000"))
    base = f"[Apps]\nDataDirs={one}\n[Daemon]\nFreezerBackend=signal\n[Lifecycle]\nDidEnterBackgroundTimeoutSec=300ms\n"
    d = daemon(conf=base + "[Apps]\nAdopt=no\n")
    conf = d.config_dir / "bgtaskd.conf.d" / "50-test.conf"
    scope = os.path.join(slice_dir, f"app-test-{app}-1234.scope")
    os.mkdir(scope)
    proc = start_in(scope, "sleep", "1000")
    try:
        assert state(ctl, d, app) == "not-running"
        # On, watching a tree without the unit: still nothing.
        elsewhere = os.path.join(scratch, "elsewhere")
        os.mkdir(elsewhere)
        conf.write_text(base + f"[Apps]\nAdopt=yes\nAdoptFrom={elsewhere}\n")
        assert run(ctl, d, "reload").returncode == 0
        assert state(ctl, d, app) == "not-running"
        # AdoptFrom= pointed at the user managers: adopted without a restart.
        t0 = time.time()
        conf.write_text(base + f"[Apps]\nAdopt=yes\nAdoptFrom={scratch}/user.slice\n")
        assert run(ctl, d, "reload").returncode == 0
        adopted = wait_journal(t0, f"_PID={d.pid}", f"BGTASKD_APP={app}", "BGTASKD_DECISION=launch", timeout=10)
        assert adopted[0]["BGTASKD_REASON"] == "adopted"
        assert state(ctl, d, app) == "active"
        assert run(ctl, d, "background", app).returncode == 0
        wait_journal(t0, f"_PID={d.pid}", f"BGTASKD_APP={app}", "BGTASKD_DECISION=suspend", timeout=10)
        assert read_events(scope).get("frozen") == 1
        # Off: released, thawed, still running, not-running for bgtaskd.
        t1 = time.time()
        conf.write_text(base + "[Apps]\nAdopt=no\n")
        assert run(ctl, d, "reload").returncode == 0
        released = wait_journal(t1, f"_PID={d.pid}", f"BGTASKD_APP={app}", "BGTASKD_DECISION=terminate", timeout=10)
        assert released[0]["BGTASKD_REASON"] == "adoption-changed" and "released" in released[0]["MESSAGE"]
        assert read_events(scope).get("frozen") == 0 and proc.poll() is None
        assert state(ctl, d, app) == "not-running"
        # And nothing comes of the unit any more: a new instance beside it is not adopted. The reload
        # after it is the later event that must come after any adoption of it.
        other = os.path.join(slice_dir, f"app-test-{app}-99.scope")
        os.mkdir(other)
        proc2 = start_in(other, "sleep", "1000")
        try:
            wait_for(lambda: read_events(other).get("populated") == 1, 5, "the second scope to fill")
            assert run(ctl, d, "reload").returncode == 0
            assert state(ctl, d, app) == "not-running"
            assert not journal(t1, f"_PID={d.pid}", f"BGTASKD_APP={app}", "BGTASKD_DECISION=launch")
        finally:
            proc2.kill()
            proc2.wait()
    finally:
        proc.kill()
        proc.wait()
