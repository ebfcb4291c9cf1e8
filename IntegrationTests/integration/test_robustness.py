"""Malformed, oversized, cut-off, pipelined, unread and flooding clients on a raw socket: each gets an
error reply or a closed connection, and never holds up another client (SPEC §10)."""

import json
import socket
import threading
import time

import pytest

from support import PROMPT, Closed, RawClient, assert_answers, is_error_reply

MAX_MESSAGE = 64 * 1024
GET_INFO = "org.varlink.service.GetInfo"
DESCRIBE = "org.varlink.service.GetInterfaceDescription"


def _send_quietly(client: RawClient, data: bytes):
    """Sends what the server may refuse half-way (it closes the connection)."""
    try:
        client.send(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


MALFORMED = {
    "invalid-json": b'{"method": nope}\0',
    "empty": b"\0",
    "not-an-object": b"[1, 2, 3]\0",
    "no-method": b'{"parameters": {}}\0',
    "method-not-a-string": b'{"method": 42}\0',
    "parameters-not-an-object": b'{"method": "org.varlink.service.GetInfo", "parameters": [1]}\0',
    "more-not-a-bool": b'{"method": "org.varlink.service.GetInfo", "more": "yes"}\0',
    "invalid-utf8": b'{"method": "\xff\xfe.\xc0"}\0',
    "control-char-in-string": b'{"method": "a\x01b"}\0',
    "lone-surrogate": b'{"method": "\\ud800"}\0',
    "deep-nesting": b"[" * 60000 + b"\0",
    "trailing-garbage": b'{"method": "org.varlink.service.GetInfo"} x\0',
    "huge-number": b'{"method": "org.varlink.service.GetInfo", "parameters": {"x": 1e999}}\0',
}


def oversized_count(c: RawClient) -> int:
    """Manager.Stats' connectionsOversized (issue 11: what the limits did)."""
    s = c.call("io.bgtaskd.Manager.Stats")["parameters"]["stats"]
    assert "connectionsOversized" in s, s
    return s["connectionsOversized"]


@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_message(bgtaskd, name):
    with RawClient(bgtaskd.socket) as bad, RawClient(bgtaskd.socket) as good:
        assert_answers(good)
        _send_quietly(bad, MALFORMED[name])
        try:
            reply = bad.recv_message(timeout=PROMPT)
        except Closed:
            reply = None
        if reply is not None:
            assert is_error_reply(reply), f"{name}: not an error reply: {reply}"
            assert reply["error"].startswith("org.varlink.service."), reply
            # Still usable after an error reply (or closed afterwards: either is acceptable).
            try:
                assert_answers(bad)
            except Closed:
                pass
        assert_answers(good)
        assert oversized_count(good) == 0               # malformed, not too large: not counted as such
    assert bgtaskd.alive(), bgtaskd.output()


def test_message_at_the_size_limit_is_served(bgtaskd):
    """Exactly MaxMessageSize bytes (without the NUL) is allowed; one byte more closes."""
    head = b'{"method":"' + DESCRIBE.encode() + b'","parameters":{"interface":"'
    tail = b'"}}'
    pad = MAX_MESSAGE - len(head) - len(tail)
    with RawClient(bgtaskd.socket) as c:
        message = head + b"x" * pad + tail
        assert len(message) == MAX_MESSAGE
        c.send(message + b"\0")
        r = c.recv_message(PROMPT)
        assert r["error"] == "org.varlink.service.InterfaceNotFound", r
        assert oversized_count(c) == 0                  # at the limit: not counted
    with RawClient(bgtaskd.socket) as c:
        _send_quietly(c, head + b"x" * (pad + 1) + tail + b"\0")
        c.wait_closed(PROMPT)
    with RawClient(bgtaskd.socket) as c:
        assert oversized_count(c) == 1                  # one byte more: counted once


@pytest.mark.parametrize("terminated", [False, True], ids=["without-nul", "with-nul"])
def test_oversized_message_closes_the_connection(bgtaskd, terminated):
    with RawClient(bgtaskd.socket) as bad, RawClient(bgtaskd.socket) as good:
        assert_answers(good)
        body = json.dumps({"method": GET_INFO, "parameters": {"pad": "x" * (MAX_MESSAGE + 4096)}}).encode()
        _send_quietly(bad, body + (b"\0" if terminated else b""))
        if not terminated:
            # Keep going without a NUL: the server must not buffer it without bound.
            for _ in range(16):
                _send_quietly(bad, b"x" * 65536)
        replies = bad.wait_closed(PROMPT)
        assert all(is_error_reply(r) for r in replies), replies
        assert_answers(good)
        assert oversized_count(good) == 1               # Stats counts the connection closed for it, once
    assert bgtaskd.alive(), bgtaskd.output()


def test_message_cut_off_then_closed(bgtaskd):
    with RawClient(bgtaskd.socket) as good:
        for _ in range(3):
            with RawClient(bgtaskd.socket) as bad:
                bad.send(b'{"method": "org.varlink.service.GetIn')
            assert_answers(good)
        # A whole call followed by half of the next, then gone: the first still gets its answer written.
        with RawClient(bgtaskd.socket) as bad:
            bad.send(RawClient.encode(GET_INFO) + b'{"method": "org.var')
            assert "error" not in bad.recv_message(PROMPT)
        assert_answers(good)
    assert bgtaskd.alive(), bgtaskd.output()


def test_message_cut_off_then_silence(bgtaskd):
    with RawClient(bgtaskd.socket) as bad, RawClient(bgtaskd.socket) as good:
        bad.send(b'{"method": "org.varlink.service.GetInfo", "param')
        # The half message sits there; others are served meanwhile, repeatedly.
        for _ in range(20):
            assert_answers(good)
        with RawClient(bgtaskd.socket) as third:
            assert_answers(third)
        # The silent client can still finish its message and be answered.
        bad.send(b'eters": {}}\0')
        assert "error" not in bad.recv_message(PROMPT)
    assert bgtaskd.alive(), bgtaskd.output()


def test_pipelined_calls_answered_in_order(bgtaskd):
    names = ["io.bgtaskd.Manager", "org.example.NoSuchInterface", "io.bgtaskd.App", "org.varlink.service"]
    batch = b"".join(RawClient.encode(DESCRIBE, {"interface": n}) for n in names[:2])
    batch += RawClient.encode(GET_INFO, oneway=True)  # no reply, and it must not upset the order
    batch += b"".join(RawClient.encode(DESCRIBE, {"interface": n}) for n in names[2:])
    with RawClient(bgtaskd.socket) as c:
        c.send(batch)
        replies = [c.recv_message(PROMPT) for _ in names]
        for name, r in zip(names, replies):
            if name.startswith("org.example"):
                assert r["error"] == "org.varlink.service.InterfaceNotFound", r
            else:
                assert f"interface {name}" in r["parameters"]["description"], (name, r)
        # Three in one write, as the brief puts it, and nothing more arrives.
        c.send(b"".join(RawClient.encode(DESCRIBE, {"interface": n}) for n in names[2:] + names[:1]))
        got = [c.recv_message(PROMPT)["parameters"]["description"] for _ in range(3)]
        assert [f"interface {n}" in d for n, d in zip(names[2:] + names[:1], got)] == [True] * 3
        with pytest.raises(TimeoutError):
            c.recv_message(timeout=0.2)


def test_pipelined_calls_dripped_byte_by_byte(bgtaskd):
    data = RawClient.encode(GET_INFO) + RawClient.encode(DESCRIBE, {"interface": "io.bgtaskd.App"})
    with RawClient(bgtaskd.socket) as c:
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        for i in range(len(data)):
            c.send(data[i:i + 1])
        assert "interfaces" in c.recv_message(PROMPT)["parameters"]
        assert "interface io.bgtaskd.App" in c.recv_message(PROMPT)["parameters"]["description"]


def test_client_that_never_reads_does_not_block_others(bgtaskd):
    """One client sends calls with big replies and never reads; another is still answered."""
    call = RawClient.encode(DESCRIBE, {"interface": "io.bgtaskd.Manager"})
    with RawClient(bgtaskd.socket) as hog, RawClient(bgtaskd.socket) as good:
        hog.sock.setblocking(False)
        sent = 0
        outcome = None
        blocked_since = None
        deadline = time.monotonic() + 10.0
        pending = call * 64
        while time.monotonic() < deadline:
            try:
                n = hog.sock.send(pending)
            except BlockingIOError:
                # The server stopped reading us, as our replies pile up: the state under test.
                blocked_since = blocked_since or time.monotonic()
                if time.monotonic() - blocked_since > 0.5:
                    outcome = "blocked"
                    break
                assert_answers(good)
                time.sleep(0.01)  # pacing of the hog's writes (the scenario), not a wait
                continue
            except (BrokenPipeError, ConnectionResetError):
                outcome = "dropped"  # disconnected for not reading: also fine
                break
            blocked_since = None
            sent += n
            pending = pending[n:] or call * 64
        assert outcome, f"the server kept reading {sent} bytes of calls whose replies nobody reads"
        assert sent > 10 * len(call), "the hog could not even send"
        # During: the hog is stuck with its replies unread; others are served promptly, repeatedly.
        for _ in range(20):
            assert_answers(good)
        with RawClient(bgtaskd.socket) as fresh:
            assert_answers(fresh)
    # After the hog is gone.
    with RawClient(bgtaskd.socket) as after:
        assert_answers(after)
    assert bgtaskd.alive(), bgtaskd.output()


def test_flood_of_small_calls_does_not_stop_another_client(bgtaskd):
    count = 10_000
    flood = RawClient.encode(GET_INFO) * count
    result = {}

    def flooder():
        try:
            with RawClient(bgtaskd.socket, timeout=20.0) as f:
                sender = threading.Thread(target=lambda: f.sock.sendall(flood), daemon=True)
                sender.start()
                got = 0
                while got < count:
                    r = f.recv_message(timeout=20.0)
                    assert "error" not in r, r
                    got += 1
                sender.join(5.0)
                result["replies"] = got
        except Exception as e:  # reported below
            result["error"] = e

    t = threading.Thread(target=flooder, daemon=True)
    start = time.monotonic()
    t.start()
    worst = 0.0
    with RawClient(bgtaskd.socket) as good:
        while t.is_alive() and time.monotonic() - start < 25.0:
            s = time.monotonic()
            assert_answers(good)
            worst = max(worst, time.monotonic() - s)
            time.sleep(0.002)  # pacing of the probes that measure the answer time (the scenario)
        t.join(1.0)
        assert_answers(good)
    assert "error" not in result, result.get("error")
    assert result.get("replies") == count, result
    assert worst < PROMPT
    assert bgtaskd.alive(), bgtaskd.output()


def test_many_idle_connections_do_not_matter(bgtaskd):
    idle = [RawClient(bgtaskd.socket) for _ in range(200)]
    try:
        with RawClient(bgtaskd.socket) as good:
            assert_answers(good)
        for c in idle[::10]:
            assert_answers(c)
    finally:
        for c in idle:
            c.close()
    with RawClient(bgtaskd.socket) as good:
        assert_answers(good)


def test_long_pipeline_in_one_write_is_answered_in_order(bgtaskd):
    """More calls in one write than the server queues per connection (it pauses reading, then must
    come back to what it already read)."""
    n = 1000
    names = [f"org.example.Pipelined{i}" for i in range(n)]
    with RawClient(bgtaskd.socket) as c:
        c.send(b"".join(RawClient.encode(DESCRIBE, {"interface": name}) for name in names))
        for name in names:
            r = c.recv_message(PROMPT)
            assert r == {"error": "org.varlink.service.InterfaceNotFound", "parameters": {"interface": name}}, r


def _replies_after_half_close(path: str, n: int) -> int:
    """Sends n calls, shuts down its writing side (as `socat` or a shell pipe does) and counts replies."""
    with RawClient(path) as c:
        def send():
            try:
                c.send(RawClient.encode(GET_INFO) * n)
                c.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        t = threading.Thread(target=send, daemon=True)
        t.start()
        got = 0
        try:
            while got < n:
                c.recv_message(PROMPT)
                got += 1
        except Closed:
            pass
        t.join(PROMPT)
        return got


def test_few_calls_before_a_half_close_are_answered(bgtaskd):
    assert _replies_after_half_close(bgtaskd.socket, 5) == 5


def test_many_calls_before_a_half_close_are_answered(bgtaskd):
    assert _replies_after_half_close(bgtaskd.socket, 2000) == 2000
