"""bgtaskd under systemd's protocols: socket activation and sd_notify (SPEC §9)."""

import os
import signal
import time

import pytest

from support import NotifySocket, RawClient, assert_answers, get_info, journal_entries


def test_socket_activation_adopts_the_passed_fd(daemon):
    d = daemon(socket_activate=True)
    info = get_info(d.socket)
    assert {"io.bgtaskd.App", "io.bgtaskd.Manager"} <= set(info["interfaces"])
    # It served the passed fd instead of binding its default path in the runtime directory.
    assert not os.path.exists(d.runtime_dir / "io.bgtaskd"), os.listdir(d.runtime_dir)
    # Several clients on the adopted socket.
    with RawClient(d.socket) as a, RawClient(d.socket) as b:
        assert_answers(a)
        assert_answers(b)
    assert d.stop() == 0, d.output()


@pytest.fixture
def notify_socket():
    path = f"/tmp/bgtaskd-notify-{os.getpid()}-{time.monotonic_ns()}"
    n = NotifySocket(path)
    yield n
    n.close()


def test_sd_notify_ready_reload_stopping(daemon, notify_socket):
    d = daemon(env={"NOTIFY_SOCKET": notify_socket.path}, wait=False)

    ready, before = notify_socket.wait_for("READY")
    assert ready["READY"] == "1"
    assert not before, f"notifications before READY=1: {before}"
    # READY=1 means the socket is up: a call is answered at once, without retrying.
    with RawClient(d.socket, timeout=2.0) as held:
        assert_answers(held)

        d.send_signal(signal.SIGHUP)
        sent_after = time.monotonic_ns() // 1000
        reloading, before = notify_socket.wait_for("RELOADING")
        assert reloading["RELOADING"] == "1"
        assert not any("READY" in n for n in before), before
        # MONOTONIC_USEC is CLOCK_MONOTONIC when reloading started (Python's monotonic clock is the same).
        usec = int(reloading["MONOTONIC_USEC"])
        assert sent_after - 5_000_000 < usec < time.monotonic_ns() // 1000 + 1, (usec, sent_after)
        ready, _ = notify_socket.wait_for("READY")
        assert ready["READY"] == "1"
        # The reload dropped no client.
        assert_answers(held)

    d.send_signal(signal.SIGTERM)
    stopping, _ = notify_socket.wait_for("STOPPING")
    assert stopping["STOPPING"] == "1"
    assert d.proc.wait(5) == 0, d.output()
    # It removed the socket it had bound.
    assert not os.path.exists(d.socket)


def test_sigterm_while_clients_are_connected(daemon):
    d = daemon()
    with RawClient(d.socket) as c:
        assert_answers(c)
        c.send(b'{"method": "org.varlink.ser')  # a half message in flight
        assert d.stop() == 0, d.output()


def test_sigterm_right_after_ready_stops_the_daemon(daemon, notify_socket):
    """READY=1 is sent only once the signal sources are registered: a SIGTERM sent the moment READY
    arrives must stop the daemon (it was once lost to the SIG_IGN set before registration)."""
    for _ in range(10):
        d = daemon(env={"NOTIFY_SOCKET": notify_socket.path}, wait=False)
        notify_socket.wait_for("READY")
        d.send_signal(signal.SIGTERM)
        try:
            assert d.proc.wait(5) == 0, d.output()
        except Exception:
            d.proc.kill()
            raise
        stopping, _ = notify_socket.wait_for("STOPPING")
        assert stopping["STOPPING"] == "1"


def test_a_call_right_after_ready_sees_every_app(daemon, notify_socket):
    """issue 15: READY=1 no longer waits for the manifests; they are registered afterwards, and calls made
    meanwhile wait for them: the first call after READY=1 sees every app, never a part of them."""
    n = 2000
    apps = {f"org.test.Start{i:04d}": f"[App]\nID=org.test.Start{i:04d}\nExec=/bin/sleep 600\nLifecycleAware=no\n"
            for i in range(n)}
    d = daemon(env={"NOTIFY_SOCKET": notify_socket.path}, wait=False, apps=apps)
    ready, _ = notify_socket.wait_for("READY")
    assert ready["READY"] == "1"
    with RawClient(d.socket, timeout=30.0) as c:
        c.send_call("io.bgtaskd.Manager.ListApps")
        reply = c.recv_message(timeout=30.0)
    assert "error" not in reply, reply
    listed = {a["appId"] for a in reply["parameters"]["apps"]}
    missing = set(apps) - listed
    assert not missing, f"{len(missing)} of {n} apps missing from the first ListApps after READY=1"


def test_a_reload_during_the_stop_is_ignored(daemon, notify_socket):
    """Once the stop has begun nothing new starts: a SIGHUP while the daemon waits for an app that ignores
    SIGTERM sends no RELOADING=1 (nor a READY=1 after STOPPING=1), the journal says the reload was
    ignored, and the stop ends as before (the app is killed after KillTimeoutSec, exit 0)."""
    app = "org.test.IgnoresTerm"
    d = daemon(env={"NOTIFY_SOCKET": notify_socket.path}, wait=False,
               conf="[Lifecycle]\nKillTimeoutSec=3s\n",
               apps={app: f"[App]\nID={app}\nExec=/bin/sh -c 'trap \"\" TERM; while :; do sleep 1; done'\n"
                          "LifecycleAware=no\n"})
    notify_socket.wait_for("READY")
    with RawClient(d.socket) as c:
        assert "error" not in c.call("io.bgtaskd.Manager.Launch", {"appId": app}), d.output()
    d.send_signal(signal.SIGTERM)
    notify_socket.wait_for("STOPPING")
    d.send_signal(signal.SIGHUP)
    # The stop lasts KillTimeoutSec (3 s) with this app: the SIGHUP is taken during it.
    ignored = journal_entries(want=lambda es: any(e["MESSAGE"].startswith("reload ignored") for e in es),
                              timeout=10.0)
    try:
        assert d.proc.wait(15) == 0, d.output()
    except Exception:
        d.proc.kill()
        raise
    # Every notification it sent is queued by now: read them without waiting.
    after = []
    notify_socket.sock.setblocking(False)
    while True:
        try:
            data = notify_socket.sock.recv(65536).decode()
        except BlockingIOError:
            break
        after.append(dict(line.split("=", 1) for line in data.split("\n") if "=" in line))
    assert not any("RELOADING" in n or "READY" in n for n in after), after
    assert any(e["MESSAGE"].startswith("reload ignored") for e in ignored), \
        [e["MESSAGE"] for e in ignored][-20:]
