"""issue 11: who may call what. `Acknowledge` only from the app's user or root (point 3), and the
authorization matrix: every method the running daemon describes (org.varlink.service.GetInfo and
GetInterfaceDescription, parsed by the Python `varlink` package) × {the app's owner uid, another uid,
another app's uid, root, a ControlGroup member}, each expected outcome from a table keyed by method
name. A method the table does not list fails the test, so a new method cannot be forgotten."""

import os
import sys
import threading
import time

import varlink

from support import PROMPT, RawClient, as_user, json_lines, open_to_others, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
PYAPP = os.path.join(HERE, "apps", "pyapp.py")
APP_IFACE = "io.bgtaskd.App"
MANAGER = "io.bgtaskd.Manager"
SERVICE = "org.varlink.service"

# Throw-away numeric ids (no passwd or group entry is needed or made: manifests and ControlGroup=
# take numbers, and the callers are forked children that setuid to them).
OWNER_UID, OTHER_APP_UID, OTHER_UID, CONTROL_UID = 64001, 64002, 64003, 64004
CONTROL_GID = 64100
A, B = "org.test.Owned", "org.test.Other"


# MARK: point 3

FAST = """
[Daemon]
FreezerBackend=signal
[Lifecycle]
DidEnterBackgroundTimeoutSec=30s
LaunchTimeoutSec=5s
WillTerminateTimeoutSec=1s
KillTimeoutSec=1s
"""


def test_acknowledge_of_another_apps_event_by_another_uid_is_refused(daemon, tmp_path):
    log = tmp_path / "slow.log"
    app = "org.test.Slow"
    d = daemon(conf=FAST, apps={app: f"[App]\nID={app}\nExec={sys.executable} {PYAPP} --log {log} --no-ack\n"})
    open_to_others(d)

    def lines():
        return json_lines(log)

    def wait_line(pred, what):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for l in lines():
                if pred(l):
                    return l
            time.sleep(0.01)  # poll interval of the app's own output (another process)
        raise AssertionError(f"no {what} in {lines()}")

    with RawClient(d.socket) as root:
        assert "error" not in root.call(f"{MANAGER}.Launch", {"appId": app})
        wait_line(lambda l: l.get("event") == "did-become-active", "did-become-active")
        assert "error" not in root.call(f"{MANAGER}.Background", {"appId": app})
        event = wait_line(lambda l: l.get("event") == "did-enter-background", "did-enter-background")
        assert event["needsAck"] is True

        def attack():
            with RawClient(d.socket) as c:
                return c.call(f"{APP_IFACE}.Acknowledge", {"eventId": event["id"]})

        reply = as_user(65534, 65534, [], attack)
        assert reply.get("error") == f"{APP_IFACE}.PermissionDenied", reply
        # Answered after the refused acknowledgement: still waiting for its own.
        state = root.call(f"{MANAGER}.GetApp", {"appId": app})["parameters"]["app"]["state"]
        assert state == "background", state
        # The refusal is recorded (the app's last decision) but is no cause of its state: not in Explain.
        last = root.call(f"{MANAGER}.GetApp", {"appId": app})["parameters"]["app"]["lastDecision"]
        assert (last["decision"], last["reason"]) == ("deny", "permission-denied"), last
        reasons = root.call(f"{MANAGER}.Explain", {"appId": app})["parameters"]["reasons"]
        assert ("deny", "permission-denied") not in [(r["decision"], r["reason"]) for r in reasons]
        # The app's own user (root here) acknowledges it: suspended, once the freezer has confirmed the freeze
        # (asynchronous by design: an app is listed suspended only when its processes are; under load that
        # can come after the Acknowledge's reply).
        assert "error" not in root.call(f"{APP_IFACE}.Acknowledge", {"eventId": event["id"]})
        state = lambda: root.call(f"{MANAGER}.GetApp", {"appId": app})["parameters"]["app"]["state"]
        wait_for(lambda: state() == "suspended", 10, lambda: f"state {state()!r} after the owner's Acknowledge")


# MARK: the matrix

EVERYONE = frozenset({"owner", "other-uid", "other-app", "root", "control"})
APP_OWNER = frozenset({"owner", "root"})
CONTROL = frozenset({"root", "control"})

# Who may call each method. The callers call as for app A (owned by OWNER_UID); "other-app" owns B.
EXPECTED = {
    f"{SERVICE}.GetInfo": EVERYONE,
    f"{SERVICE}.GetInterfaceDescription": EVERYONE,
    f"{APP_IFACE}.CheckIn": APP_OWNER,
    # With no event of A waiting: nothing to refuse, it acknowledges nothing. An event that waits is
    # test_acknowledge_of_another_apps_event_by_another_uid_is_refused.
    f"{APP_IFACE}.Acknowledge": EVERYONE,
    f"{APP_IFACE}.BeginBackgroundTask": APP_OWNER,
    f"{APP_IFACE}.EndBackgroundTask": APP_OWNER,
    f"{APP_IFACE}.BackgroundTimeRemaining": APP_OWNER,
    f"{APP_IFACE}.BeginActivity": APP_OWNER,
    f"{APP_IFACE}.EndActivity": APP_OWNER,
    f"{APP_IFACE}.SubmitTaskRequest": APP_OWNER,
    f"{APP_IFACE}.CancelTaskRequest": APP_OWNER,
    f"{APP_IFACE}.CancelAllTaskRequests": APP_OWNER,
    f"{APP_IFACE}.PendingTaskRequests": APP_OWNER,
    f"{APP_IFACE}.CompleteTask": APP_OWNER,
    f"{APP_IFACE}.RefreshStatus": APP_OWNER,
    f"{APP_IFACE}.BeginContinuedTask": APP_OWNER,
    f"{APP_IFACE}.UpdateTaskProgress": APP_OWNER,
    f"{MANAGER}.ListApps": EVERYONE,
    f"{MANAGER}.GetApp": EVERYONE,
    f"{MANAGER}.ListAssertions": EVERYONE,
    f"{MANAGER}.GetSettings": EVERYONE,
    f"{MANAGER}.Explain": EVERYONE,
    f"{MANAGER}.Monitor": EVERYONE,
    f"{MANAGER}.Stats": EVERYONE,
    f"{MANAGER}.Launch": CONTROL,
    f"{MANAGER}.Foreground": CONTROL,
    f"{MANAGER}.Background": CONTROL,
    f"{MANAGER}.Interrupt": CONTROL,
    f"{MANAGER}.EndInterruption": CONTROL,
    f"{MANAGER}.Terminate": CONTROL,
    f"{MANAGER}.SetRefreshPolicy": CONTROL,
    f"{MANAGER}.SetGlobalRefresh": CONTROL,
    f"{MANAGER}.SetLowPowerMode": CONTROL,
    f"{MANAGER}.SetConditions": CONTROL,
    f"{MANAGER}.PostNotification": CONTROL,
    f"{MANAGER}.WakeForRemoteNotification": CONTROL,
    f"{MANAGER}.RunTaskNow": CONTROL,
    f"{MANAGER}.Reload": CONTROL,
    f"{MANAGER}.SetFocus": CONTROL,
    f"{MANAGER}.SetSceneState": CONTROL,
    f"{MANAGER}.Hold": CONTROL,
    f"{MANAGER}.GetRecording": CONTROL,
    f"{MANAGER}.WakeForBusCall": CONTROL,
    f"{MANAGER}.ListContinuedTasks": EVERYONE,
    f"{MANAGER}.CancelContinuedTask": CONTROL,
}

# Streams: called with more; the first reply decides.
MORE = {f"{APP_IFACE}.CheckIn", f"{MANAGER}.Monitor", f"{MANAGER}.Hold", f"{MANAGER}.GetRecording"}

# Valid values by parameter name (required parameters only; optional ones are left out).
VALUES = {
    "appId": A, "interface": APP_IFACE, "eventId": 999_999, "name": "org.test.note", "taskId": 1,
    "activityId": 1, "mode": "audio", "identifier": f"{A}.refresh", "kind": "refresh", "success": True,
    "enabled": True, "network": "unmetered", "reason": "compositor-focus", "sender": ":1.42", "member": "Activate",
    "sceneId": "s", "state": "background", "title": "t", "completedUnits": 1,
}

IDENTITIES = {
    "owner": (OWNER_UID, OWNER_UID, []),
    "other-uid": (OTHER_UID, OTHER_UID, []),
    "other-app": (OTHER_APP_UID, OTHER_APP_UID, []),
    "root": (0, 0, []),
    "control": (CONTROL_UID, CONTROL_UID, [CONTROL_GID]),
}


def described_methods(socket_path: str) -> dict:
    """Fully qualified method name → its required input parameters, from the running daemon."""
    methods = {}
    with RawClient(socket_path) as c:
        interfaces = c.call(f"{SERVICE}.GetInfo")["parameters"]["interfaces"]
        for name in interfaces:
            text = c.call(f"{SERVICE}.GetInterfaceDescription", {"interface": name})["parameters"]["description"]
            iface = varlink.Interface(text)
            for m in iface.members.values():
                if type(m).__name__ != "_Method":
                    continue
                required = [f for f, t in m.in_type.fields.items() if type(t).__name__ != "_Maybe"]
                methods[f"{iface.name}.{m.name}"] = required
    return methods


def call_all(socket_path: str, methods: dict) -> dict:
    """Calls every method once (each on its own connection); method → the first reply."""
    out = {}
    for method, required in sorted(methods.items()):
        params = {p: VALUES[p] for p in required}
        with RawClient(socket_path) as c:
            c.send_call(method, params, more=method in MORE)
            out[method] = c.recv_message(10)
    return out


def test_authorization_matrix_covers_every_described_method(daemon):
    sleeper = "Exec=/bin/sleep 600\nLifecycleAware=no\n"
    d = daemon(conf=f"[Daemon]\nControlGroup={CONTROL_GID}\nFreezerBackend=signal\n"
                    "[Lifecycle]\nKillTimeoutSec=1s\nWillTerminateTimeoutSec=1s\n",
               apps={A: f"[App]\nID={A}\nUser={OWNER_UID}\nBackgroundModes=audio\n{sleeper}",
                     B: f"[App]\nID={B}\nUser={OTHER_APP_UID}\n{sleeper}"})
    open_to_others(d)
    methods = described_methods(d.socket)
    assert len(methods) >= 30, methods
    unlisted = sorted(set(methods) - set(EXPECTED))
    assert not unlisted, f"methods the authorization table does not list (add them to EXPECTED): {unlisted}"
    stale = sorted(set(EXPECTED) - set(methods))
    assert not stale, f"the table lists methods the daemon does not describe: {stale}"
    missing_values = sorted({p for r in methods.values() for p in r} - set(VALUES))
    assert not missing_values, f"no test value for parameters {missing_values}"

    # Monitor answers only with a decision: root makes one every 20 ms while the callers run.
    done = threading.Event()

    def decisions():
        with RawClient(d.socket) as c:
            on = False
            while not done.is_set():
                on = not on
                c.call(f"{MANAGER}.SetLowPowerMode", {"enabled": on})
                done.wait(0.02)

    ticker = threading.Thread(target=decisions, daemon=True)
    ticker.start()
    try:
        results = {who: as_user(*IDENTITIES[who], lambda: call_all(d.socket, methods)) for who in IDENTITIES}
    finally:
        done.set()
        ticker.join()

    wrong = []
    for method in sorted(methods):
        denied_name = method.rsplit(".", 1)[0] + ".PermissionDenied"
        for who in IDENTITIES:
            reply = results[who][method]
            denied = reply.get("error") == denied_name
            allowed = who in EXPECTED[method]
            if denied == allowed:
                wrong.append(f"{method} as {who}: expected {'allowed' if allowed else 'denied'}, got {reply}")
    print(f"\nauthorization matrix: {len(methods)} methods x {len(IDENTITIES)} callers = "
          f"{len(methods) * len(IDENTITIES)} calls, {len(wrong)} wrong")
    assert not wrong, "\n".join(wrong)


# MARK: issue 13: the app's uid follows a reload

def test_a_changed_user_takes_effect_on_reload(daemon):
    """`User=` changed and reloaded: the new uid may call for the app, the old one is refused (the
    daemon once kept the uid it had resolved first, for good)."""
    sleeper = "Exec=/bin/sleep 600\nLifecycleAware=no\n"
    d = daemon(conf="[Daemon]\nFreezerBackend=signal\n",
               apps={A: f"[App]\nID={A}\nUser={OWNER_UID}\n{sleeper}"})
    open_to_others(d)

    def remaining():
        with RawClient(d.socket) as c:
            return c.call(f"{APP_IFACE}.BackgroundTimeRemaining", {"appId": A})

    denied = f"{APP_IFACE}.PermissionDenied"
    assert "error" not in as_user(OWNER_UID, OWNER_UID, [], remaining)
    assert as_user(OTHER_UID, OTHER_UID, [], remaining).get("error") == denied

    (d.config_dir / "apps.d" / f"{A}.app").write_text(f"[App]\nID={A}\nUser={OTHER_UID}\n{sleeper}")
    with RawClient(d.socket) as root:
        assert "error" not in root.call(f"{MANAGER}.Reload")
    assert "error" not in as_user(OTHER_UID, OTHER_UID, [], remaining)
    assert as_user(OWNER_UID, OWNER_UID, [], remaining).get("error") == denied
