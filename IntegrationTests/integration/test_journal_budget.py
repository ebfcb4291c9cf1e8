"""SPEC §11's journal budget under journald's DEFAULT rate limit (issue 11, points 2 and 6).

Both tests run the daemon against a private journald (private_journald.py: its own mount namespace, no
rate-limit drop-in, the daemon in a throw-away `*.service` cgroup so that journald rate-limits it as a unit).
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import threading
import time
from collections import Counter

from support import PROMPT, Closed, RawClient, as_user, open_to_others

APP = "io.bgtaskd.App"
MANAGER = "io.bgtaskd.Manager"
FLOODER = "org.test.Flooder"
ALWAYS = {"launch", "foreground", "background", "suspend", "resume", "terminate", "expire", "deny", "run-task",
          "complete-task", "policy"}


def sleeper(app_id: str) -> str:
    return f"[App]\nID={app_id}\nExec=/bin/sleep 1000\nLifecycleAware=no\n"


def call(c: RawClient, method: str, timeout: float = 30, **params) -> dict:
    reply = c.call(method, params, timeout=timeout)
    assert "error" not in reply, (method, params, reply)
    return reply.get("parameters", {})


def state(c: RawClient, app: str) -> str:
    return call(c, f"{MANAGER}.GetApp", appId=app)["app"]["state"]


def wait_state(c: RawClient, app: str, want: str, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while (s := state(c, app)) != want:
        assert time.monotonic() < deadline, f"{app} is {s}, not {want}"
        time.sleep(0.01)  # poll interval of GetApp: the state itself is the event awaited


def flood(c: RawClient, pairs: int, batch: int = 1000) -> int:
    """`pairs` BeginBackgroundTask/EndBackgroundTask of FLOODER, pipelined `batch` at a time."""
    done = 0
    while done < pairs:
        n = min(batch, pairs - done)
        c.send(b"".join(RawClient.encode(f"{APP}.BeginBackgroundTask", {"appId": FLOODER}) for _ in range(n)))
        ids = [c.recv_message(timeout=60)["parameters"]["taskId"] for _ in range(n)]
        assert all(i > 0 for i in ids), "a Begin was denied"
        c.send(b"".join(RawClient.encode(f"{APP}.EndBackgroundTask", {"appId": FLOODER, "taskId": i}) for i in ids))
        for _ in range(n):
            assert "error" not in c.recv_message(timeout=60)
        done += n
    return done


FLOOD_CONF = """
[Daemon]
FreezerBackend=signal
[Lifecycle]
DidEnterBackgroundTimeoutSec=200ms
MaxBackgroundTasksPerApp=1000
"""


def test_a_flooding_app_does_not_hide_another_apps_decisions(private_journald, daemon):
    """Point 2: an app loops Begin/End 20,000 times (40,000 decisions, four times journald's default burst and
    above the 22,500–25,000 it allows here, see private_journald.py);
    another app's launch, background, suspend and terminate entries must still all be in the journal, with
    the journal budget's defaults. The flooder's grants and ends beyond its burst are counted in one
    `coalesced` entry (journaled at the latest when the daemon stops)."""
    pj = private_journald
    other = "org.test.Other"
    d = daemon(conf=FLOOD_CONF, apps={FLOODER: sleeper(FLOODER), other: sleeper(other)}, prefix=pj.daemon_prefix())
    pairs = 20000
    with RawClient(d.socket, timeout=60) as c:
        call(c, f"{MANAGER}.Launch", appId=FLOODER)
        t0 = time.monotonic()
        flood(c, pairs)
        flood_took = time.monotonic() - t0
        call(c, f"{MANAGER}.Launch", appId=other, background=False)
        call(c, f"{MANAGER}.Background", appId=other)
        wait_state(c, other, "suspended")
        call(c, f"{MANAGER}.Terminate", appId=other)
        wait_state(c, other, "not-running")
        stats = call(c, f"{MANAGER}.Stats")["stats"]
    wanted = {"launch", "background", "suspend", "terminate"}
    pid = f"_PID={d.pid}"
    got = pj.wait_entries(f"BGTASKD_APP={other}", pid,
                          want=lambda es: wanted <= {e.get("BGTASKD_DECISION") for e in es})
    kinds = Counter(e.get("BGTASKD_DECISION") for e in got)
    print(f"flood of {pairs} Begin/End pairs took {flood_took:.2f} s; {other}'s entries kept: {dict(kinds)}")
    assert wanted <= set(kinds), f"{other}'s entries in the journal: {dict(kinds)} (stats {stats})"
    assert stats["journalDropped"] == 0, stats
    # Stats says what the budget did: every grant and end beyond the flooder's burst of 100 counted, no
    # summary yet (the 30 s interval has not ended; it is journaled at stop).
    assert stats.get("journalCoalesced") == 2 * pairs - 100, stats
    assert stats.get("journalSummaries") == 0, stats

    # The flooder: at most its burst one by one, the rest counted once the interval ends (here: at stop).
    assert d.stop() == 0, d.output()
    flooder = pj.wait_entries(f"BGTASKD_APP={FLOODER}", pid,
                              want=lambda es: any(e.get("BGTASKD_DECISION") == "coalesced" for e in es))
    by_kind = Counter(e.get("BGTASKD_DECISION") for e in flooder)
    summaries = [e for e in flooder if e.get("BGTASKD_DECISION") == "coalesced"]
    assert len(summaries) == 1, by_kind
    s = summaries[0]
    assert s["BGTASKD_REASON"] == "journal-budget" and s.get("MESSAGE_ID") == "6003c06c701d4aaeaff590025241a3a8", s
    assert by_kind["grant"] + by_kind["end"] <= 100, by_kind
    assert by_kind["grant"] + int(s["BGTASKD_GRANTED"]) == pairs, (by_kind, s)
    assert by_kind["end"] + int(s["BGTASKD_ENDED"]) == pairs, (by_kind, s)
    # journald suppressed nothing of the unit.
    suppressed = [e["MESSAGE"] for e in pj.entries(f"_PID={pj.pid}") if "Suppressed" in str(e.get("MESSAGE", ""))]
    assert suppressed == [], suppressed
    print(f"flooder: {by_kind['grant']} grant and {by_kind['end']} end entries, summary granted "
          f"{s['BGTASKD_GRANTED']} ended {s['BGTASKD_ENDED']}")


STALL_CONF = """
[Daemon]
FreezerBackend=signal
[Lifecycle]
DidEnterBackgroundTimeoutSec=50ms
MaxBackgroundTasksPerApp=1000
WillTerminateTimeoutSec=200ms
KillTimeoutSec=200ms
"""


class Monitor(threading.Thread):
    """Counts every decision the daemon reports on Monitor, by kind."""

    def __init__(self, path: str):
        super().__init__(daemon=True)
        self.c = RawClient(path, timeout=None)
        self.c.send_call(f"{MANAGER}.Monitor", {}, more=True)
        self.kinds: Counter = Counter()
        self.error = None

    def run(self):
        try:
            while True:
                reply = self.c.recv_message(timeout=3600)
                if "error" in reply:
                    self.error = reply
                    return
                self.kinds[reply["parameters"]["decision"]["decision"]] += 1
        except (Closed, OSError):
            return


def test_a_stalled_journald_loses_no_state_change_or_denial(private_journald, daemon):
    """Point 6: journald is stopped (SIGSTOP) for BGTASKD_STALL_SEC (5 s in `make test`, 20 s in `make soak`)
    while one app floods Begin/End and a manager drives four other apps through launch, background,
    suspend, foreground and terminate. Every decision that changes an app's state or denies something must
    reach the journal once journald continues; only grant/end detail may be lost."""
    pj = private_journald
    stall = float(os.environ.get("BGTASKD_STALL_SEC", "5"))
    others = [f"org.test.Cycled{i}" for i in range(4)]
    apps = {FLOODER: sleeper(FLOODER), **{o: sleeper(o) for o in others}}
    d = daemon(conf=STALL_CONF, apps=apps, prefix=pj.daemon_prefix())
    monitor = Monitor(d.socket)
    monitor.start()
    stop = threading.Event()
    results: dict = {"pairs": 0, "cycles": 0, "errors": []}
    max_call = [0.0]

    def flooder():
        try:
            with RawClient(d.socket, timeout=120) as c:
                while not stop.is_set():
                    results["pairs"] += flood(c, 200, batch=200)
        except Exception as e:  # reported below
            results["errors"].append(f"flooder: {e!r}")

    def cycler():
        try:
            with RawClient(d.socket, timeout=120) as c:
                i = 0
                while not stop.is_set():
                    app = others[i % len(others)]
                    i += 1
                    for method, params in (("Launch", {}), ("Background", {})):
                        t = time.monotonic()
                        call(c, f"{MANAGER}.{method}", timeout=120, appId=app, **params)
                        max_call[0] = max(max_call[0], time.monotonic() - t)
                    wait_state(c, app, "suspended", timeout=120)
                    call(c, f"{MANAGER}.Foreground", timeout=120, appId=app)
                    call(c, f"{MANAGER}.Terminate", timeout=120, appId=app)
                    wait_state(c, app, "not-running", timeout=120)
                    results["cycles"] += 1
        except Exception as e:
            results["errors"].append(f"cycler: {e!r}")

    with RawClient(d.socket, timeout=60) as c:
        call(c, f"{MANAGER}.Launch", appId=FLOODER)
    pj.stop()
    try:
        threads = [threading.Thread(target=flooder), threading.Thread(target=cycler)]
        for t in threads:
            t.start()
        time.sleep(stall)  # the length of the stall is the scenario, not a wait for an event
        stop.set()
        for t in threads:
            t.join(180)
    finally:
        pj.cont()
    assert not results["errors"], results["errors"]
    with RawClient(d.socket, timeout=60) as c:
        stats = call(c, f"{MANAGER}.Stats")["stats"]
    assert d.stop() == 0, d.output()  # flushes the journal queue
    monitor.join(30)
    assert monitor.error is None, monitor.error
    made = {k: n for k, n in monitor.kinds.items() if k in ALWAYS}
    total_made = sum(made.values())
    pid = f"_PID={d.pid}"
    entries = pj.wait_entries(pid, want=lambda es: sum(1 for e in es if e.get("BGTASKD_DECISION") in ALWAYS) >= total_made,
                              timeout=60)
    kept = Counter(e["BGTASKD_DECISION"] for e in entries if e.get("BGTASKD_DECISION") in ALWAYS)
    print(f"stall {stall:.0f} s: {results['pairs']} Begin/End pairs, {results['cycles']} app cycles, "
          f"{sum(monitor.kinds.values())} decisions; state changes and denials made {total_made}, kept {sum(kept.values())}; "
          f"grant/end detail dropped {stats['journalDropped']}; longest manager call {max_call[0]:.2f} s")
    assert results["cycles"] >= 1, results
    assert dict(kept) == made, f"made {made}, journaled {dict(kept)}"


COUNTERS = ("journalCoalesced", "journalSummaries", "connectionsRefused", "connectionsTimedOut",
            "connectionsOversized", "connectionsPaused")


def test_stats_counts_what_the_journal_budget_did(private_journald, daemon):
    """Stats' journalCoalesced and journalSummaries follow the budget: with JournalAssertionBurst=5 per
    second, 20 Begin/End pairs are 5 entries and 35 counted, and one `coalesced` summary when the interval
    ends; the next round adds as much again. Before: neither field existed."""
    pj = private_journald
    conf = FLOOD_CONF + "[Journal]\nJournalAssertionBurst=5\nJournalAssertionIntervalSec=1s\n"
    d = daemon(conf=conf, apps={FLOODER: sleeper(FLOODER)}, prefix=pj.daemon_prefix())
    with RawClient(d.socket, timeout=60) as c:
        before = call(c, f"{MANAGER}.Stats")["stats"]
        assert {k: before.get(k) for k in ("journalCoalesced", "journalSummaries")} == \
            {"journalCoalesced": 0, "journalSummaries": 0}, before
        call(c, f"{MANAGER}.Launch", appId=FLOODER)
        for round_ in (1, 2):
            flood(c, 20, batch=20)
            # The summary is journaled by the daemon's timer at the interval's end: Stats is the event.
            deadline = time.monotonic() + 20
            while (st := call(c, f"{MANAGER}.Stats")["stats"])["journalSummaries"] < round_:
                assert time.monotonic() < deadline, st
                time.sleep(0.02)  # poll interval of Stats: the counter itself is the event awaited
            assert st["journalSummaries"] == round_ and st["journalCoalesced"] == 35 * round_, st
    summaries = pj.wait_entries(f"_PID={d.pid}", "BGTASKD_DECISION=coalesced", want=lambda es: len(es) >= 2)
    assert [int(e["BGTASKD_GRANTED"]) + int(e["BGTASKD_ENDED"]) for e in summaries] == [35, 35], summaries
    print(f"\nStats after two rounds: journalCoalesced {st['journalCoalesced']}, journalSummaries {st['journalSummaries']}")


def test_stats_counters_stay_zero_when_nothing_happened(daemon):
    """A daemon used as usual (an app launched, Begin/End under the burst, calls on several connections,
    a connection closed after a whole call): the budget coalesced nothing and no limit was hit; the
    counters are there, as integers, and 0."""
    d = daemon(conf=FLOOD_CONF, apps={FLOODER: sleeper(FLOODER)})
    with RawClient(d.socket, timeout=60) as c:
        call(c, f"{MANAGER}.Launch", appId=FLOODER)
        flood(c, 40, batch=10)                      # 80 grant/end entries: under JournalAssertionBurst=100
        for _ in range(5):
            with RawClient(d.socket) as other:
                call(other, "org.varlink.service.GetInfo")
        st = call(c, f"{MANAGER}.Stats")["stats"]
    assert {k: st.get(k) for k in COUNTERS} == {k: 0 for k in COUNTERS}, st
    assert st["journalDropped"] == 0 and st["calls"] > 80, st


DENY_CONF = """
[Daemon]
FreezerBackend=signal
[Lifecycle]
DidEnterBackgroundTimeoutSec=50ms
BackgroundTimeBudgetSec=400ms
ExpirationWarningSec=100ms
WillTerminateTimeoutSec=200ms
KillTimeoutSec=200ms
"""


class DenyLooper(threading.Thread):
    """One connection calling BeginBackgroundTask for `app` (whose background time is spent) `batch` calls
    pipelined at a time, checking every reply is a refusal (taskId 0), until `stop()` closes it or it has been
    answered `limit` times. Counts what it sent and what was answered, and when each reply came."""

    def __init__(self, path: str, app: str, batch: int, limit: int):
        super().__init__(daemon=True)
        self.c = RawClient(path, timeout=None)
        self.app, self.batch, self.limit = app, batch, limit
        self.sent = self.answered = 0
        self.times: list[float] = []
        self.error = None
        self.stopping = threading.Event()

    def run(self):
        msg = RawClient.encode(f"{APP}.BeginBackgroundTask", {"appId": self.app})
        try:
            while self.answered < self.limit and not self.stopping.is_set():
                k = min(self.batch, self.limit - self.answered)
                self.c.send(msg * k)
                self.sent += k
                for _ in range(k):
                    reply = self.c.recv_message(timeout=3600)
                    if reply.get("parameters", {}).get("taskId") != 0:
                        self.error = reply
                        return
                    self.answered += 1
                    self.times.append(time.monotonic())
        except (Closed, OSError) as e:
            if not self.stopping.is_set():
                self.error = repr(e)

    def stop(self):
        self.stopping.set()
        try:
            self.c.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.join(30)
        self.c.close()


def served_as_nobody(socket_path: str) -> bool:
    """Whether another uid (nobody, in a forked child) gets GetInfo answered at once."""
    def get_info():
        with RawClient(socket_path, timeout=PROMPT) as nobody:
            return "vendor" in nobody.call("org.varlink.service.GetInfo", timeout=PROMPT)["parameters"]
    return as_user(65534, 65534, [], get_info)


def spend_background_time(c: RawClient, app: str):
    """Launches `app`, sends it to the background and waits until its background time is spent (it runs from
    entering the background, SPEC §3): every BeginBackgroundTask of it is refused from then on."""
    call(c, f"{MANAGER}.Launch", appId=app)
    call(c, f"{MANAGER}.Background", appId=app)
    wait_state(c, app, "suspended")
    deadline = time.monotonic() + 20
    while call(c, f"{MANAGER}.GetApp", appId=app)["app"].get("backgroundTimeRemainingUSec") != 0:
        assert time.monotonic() < deadline, f"{app}'s background time did not run out"
        time.sleep(0.02)  # poll interval of GetApp: the remaining time itself is the event awaited


def wait_stats(c: RawClient, want, timeout: float, describe: str) -> dict:
    deadline = time.monotonic() + timeout
    while not want(st := call(c, f"{MANAGER}.Stats")["stats"]):
        assert time.monotonic() < deadline, f"{describe}: {st}"
        time.sleep(0.02)  # poll interval of Stats: the counter itself is the event awaited
    return st


def test_an_app_looping_a_denied_call_does_not_hide_another_apps_decisions(private_journald, daemon):
    """Issue 11's point 2 for denials, which SPEC §11 journals one by one: an app whose background time is
    spent calls BeginBackgroundTask in a loop on one connection (pipelined, BGTASKD_DENY_BATCH at a time),
    each call refused with `budget-exhausted` and journaled as a `deny` entry, under the denial budget's
    defaults (JournalDenialBurst=100 per 30 s). Before the denial budget it got ~10,000–22,000 refusals per
    second, journald (default limits) kept the first ~25,000 and then dropped every entry of the unit for the
    rest of its 30 s window: 0 of another app's 4 kinds kept. Now the looper is paused after its burst (Stats
    `connectionsPaused`), and the other app, driven meanwhile on another connection of the same uid, has its
    launch, background, suspend and terminate entries in the journal; journald suppresses nothing.
    The loop ends when the looper is paused, or (before the fix) after BGTASKD_DENY_FLOOD refusals."""
    pj = private_journald
    looper, other = "org.test.Looper", "org.test.Other"
    n = int(os.environ.get("BGTASKD_DENY_FLOOD", "30000"))
    batch = int(os.environ.get("BGTASKD_DENY_BATCH", "1000"))  # calls pipelined at a time (1: call, reply, call…)
    d = daemon(conf=DENY_CONF, apps={looper: sleeper(looper), other: sleeper(other)}, prefix=pj.daemon_prefix())
    with RawClient(d.socket, timeout=60) as c:
        spend_background_time(c, looper)
        assert call(c, f"{APP}.BeginBackgroundTask", appId=looper)["taskId"] == 0
        loop = DenyLooper(d.socket, looper, batch, n)
        t0 = time.monotonic()
        loop.start()
        # The looper is paused (the event), or it got all its refusals (before the fix: never paused).
        deadline = time.monotonic() + 120
        while (st := call(c, f"{MANAGER}.Stats")["stats"]).get("connectionsPaused", 0) < 1 and loop.is_alive():
            assert time.monotonic() < deadline, (st, loop.answered)
            time.sleep(0.02)  # poll interval of Stats: the counter itself is the event awaited
        paused_after = time.monotonic() - t0
        # The answers sent before the pause are in the looper's socket; its reader may not have taken them
        # yet on a loaded machine: wait (bounded) until it has read what it will read, then count.
        settle = time.monotonic() + 10
        while loop.answered < 100 and loop.is_alive() and time.monotonic() < settle:
            time.sleep(0.01)  # poll interval of the looper's own count (its reader thread)
        answered_at_pause = loop.answered
        # Meanwhile another app's whole lifecycle, on this connection (same uid, refused nothing): served.
        call(c, f"{MANAGER}.Launch", appId=other, background=False)
        call(c, f"{MANAGER}.Background", appId=other)
        wait_state(c, other, "suspended")
        call(c, f"{MANAGER}.Terminate", appId=other)
        wait_state(c, other, "not-running")
        stats = call(c, f"{MANAGER}.Stats")["stats"]
        explained = {r["decision"] for r in call(c, f"{MANAGER}.Explain", appId=other)["reasons"]}
        # The looper got no further answer while the other app was driven: it is still paused.
        answered_before_stop = loop.answered
        loop.stop()
    assert loop.error is None, loop.error
    wanted = {"launch", "background", "suspend", "terminate"}
    assert wanted <= explained, explained                       # the daemon took them
    pid = f"_PID={d.pid}"
    # Stopped, the daemon has sent all it will; a marker sent after it (from a process journald does not
    # rate-limit) shows once it is in the journal that journald has taken everything before it.
    assert d.stop() == 0, d.output()
    pj.wait_marker(pj.mark())
    entries = pj.entries(pid)
    denies = [e for e in entries if e.get("BGTASKD_APP") == looper and e.get("BGTASKD_DECISION") == "deny"]
    notes = [e for e in entries if e.get("BGTASKD_REASON") == "journal-budget" and "BGTASKD_DENIED" in e]
    kept_other = Counter(e.get("BGTASKD_DECISION") for e in entries if e.get("BGTASKD_APP") == other)
    span = ((int(denies[-1]["__MONOTONIC_TIMESTAMP"]) - int(denies[0]["__MONOTONIC_TIMESTAMP"])) / 1e6
            if len(denies) > 1 else 0.0)
    suppressed = [e["MESSAGE"] for e in pj.entries(f"_PID={pj.pid}") if "Suppressed" in str(e.get("MESSAGE", ""))]
    print(f"\nlooper: {loop.sent} refused BeginBackgroundTask calls sent, {answered_at_pause} answered in "
          f"{paused_after:.2f} s until paused ({answered_before_stop} when stopped); {len(denies)} deny entries "
          f"journaled over {span:.2f} s; {stats['journalDropped']} dropped by the daemon; Stats connectionsPaused "
          f"{stats.get('connectionsPaused')}; {other}'s entries kept: {dict(kept_other)} of {sorted(wanted)}; "
          f"notes {[e['MESSAGE'] for e in notes]}; journald: {suppressed}")
    assert wanted <= set(kept_other), f"{other}'s entries in the journal: {dict(kept_other)}"
    assert suppressed == [], suppressed
    # Burst 100 per uid (the one refusal before the loop counts, the same uid) and the one that paused it.
    assert len(denies) == 101 and answered_at_pause == 100 == answered_before_stop, (len(denies), answered_at_pause)
    assert stats.get("connectionsPaused") == 1, stats
    assert len(notes) == 1 and notes[0]["BGTASKD_UID"] == str(os.getuid()) and notes[0]["BGTASKD_DENIED"] == "101", notes
    # Explained by the catalog (systemd/bgtaskd.catalog, `connections-paused` in message-ids.txt).
    assert notes[0].get("MESSAGE_ID") == "c7bb95a8e52e429796b92b7aca6eed32", notes


def test_a_paused_connection_is_answered_in_order_after_the_interval_and_others_are_served(daemon, bin_dir):
    """The looper past JournalDenialBurst=5 per 2 s: its connection is paused, not closed. The calls it
    pipelined are answered, in order, once the interval ends (a GetInfo sent behind 11 refused calls is the
    12th reply), and within a bounded wait; meanwhile another uid's client and bgtaskctl (another connection
    of the looper's uid) are served, and the looper's app keeps its state. Stats counts the pause. Before the
    denial budget: no pause, no connectionsPaused."""
    looper = "org.test.Looper"
    conf = DENY_CONF + "[Journal]\nJournalDenialBurst=5\nJournalAssertionIntervalSec=2s\n"
    d = daemon(conf=conf, apps={looper: sleeper(looper)})
    open_to_others(d)
    with RawClient(d.socket, timeout=60) as c:
        spend_background_time(c, looper)
        assert call(c, f"{MANAGER}.Stats")["stats"].get("connectionsPaused") == 0
        with RawClient(d.socket, timeout=60) as flooder:
            begin = RawClient.encode(f"{APP}.BeginBackgroundTask", {"appId": looper})
            flooder.send(begin * 11 + RawClient.encode("org.varlink.service.GetInfo"))
            t0 = time.monotonic()
            first = [flooder.recv_message(timeout=10) for _ in range(6)]    # 5 within the burst, 1 that pauses
            assert all(r["parameters"]["taskId"] == 0 for r in first), first
            st = wait_stats(c, lambda s: s.get("connectionsPaused", 0) >= 1, 10, "the looper was not paused")
            assert st["connectionsPaused"] == 1, st
            # Paused: another uid is served at once.
            assert served_as_nobody(d.socket), "another uid was not served while the looper was paused"
            # bgtaskctl (a new connection of the looper's uid, refused nothing) is served too.
            ctl = subprocess.run([str(bin_dir / "bgtaskctl"), "--socket", d.socket, "list"], capture_output=True,
                                 text=True, timeout=PROMPT * 5)
            assert ctl.returncode == 0 and looper in ctl.stdout, ctl.stderr
            # Another process of the looper's uid (on a phone: a sibling app) refused a call is not paused
            # for the looper's refusals: its refusal and a GetInfo behind it are answered while the looper
            # still waits (with the budget counted per uid, it was paused until the interval ended too).
            def sibling_app():
                with RawClient(d.socket, timeout=30) as sibling:
                    sibling.send(begin + RawClient.encode("org.varlink.service.GetInfo"))
                    refused, info = sibling.recv_message(timeout=30), sibling.recv_message(timeout=30)
                    return refused["parameters"]["taskId"] == 0 and "vendor" in info["parameters"]
            assert as_user(None, None, None, sibling_app), "the sibling process was not answered"
            assert select.select([flooder.sock], [], [], 0)[0] == [], \
                "the looper was answered before the sibling: the sibling was paused with it"
            assert state(c, looper) == "suspended"
            # The rest: in order, the GetInfo last, after the interval (2 s) ended, and none lost.
            rest = [flooder.recv_message(timeout=30) for _ in range(6)]
            waited = time.monotonic() - t0
            assert all(r["parameters"]["taskId"] == 0 for r in rest[:5]), rest
            assert "vendor" in rest[5]["parameters"], rest[5]
            st = call(c, f"{MANAGER}.Stats")["stats"]
            assert st["connectionsPaused"] == 1, st   # 5 refusals in the new interval: within its burst
            # The connection was not closed: it still answers.
            assert "vendor" in flooder.call("org.varlink.service.GetInfo", timeout=PROMPT)["parameters"]
    assert waited >= 1.0, f"the paused calls were answered after {waited:.2f} s, before the interval ended"
    print(f"\npaused connection: 6 refusals at once, the other 5 and the GetInfo after {waited:.2f} s "
          f"(JournalAssertionIntervalSec=2s); Stats connectionsPaused {st['connectionsPaused']}")


def test_a_process_reconnecting_to_get_round_its_pause_has_its_new_connections_held(daemon):
    """A client that opens a new connection each time one is paused (JournalDenialBurst=2,
    MaxConnectionsPerUser=2, JournalAssertionIntervalSec=3s): 2 refusals, then 3 connections each refused
    once and paused; paused more often than it may hold connections, its process's next new connection is
    held from the start: its call is answered only when the interval ends, while another uid is served
    meanwhile. Without the hold, every reconnection would add one journaled refusal."""
    looper = "org.test.Looper"
    conf = (DENY_CONF.replace("[Daemon]\n", "[Daemon]\nMaxConnectionsPerUser=2\n", 1)
            + "[Journal]\nJournalDenialBurst=2\nJournalAssertionIntervalSec=3s\n")
    d = daemon(conf=conf, apps={looper: sleeper(looper)})
    open_to_others(d)
    begin = (f"{APP}.BeginBackgroundTask", {"appId": looper})
    with RawClient(d.socket, timeout=60) as c:
        spend_background_time(c, looper)
        t0 = time.monotonic()
        kept = []
        for _ in range(5):                       # 2 within the burst, then 3 connections paused once each
            r = RawClient(d.socket, timeout=10)
            kept.append(r)
            assert r.call(*begin, timeout=10)["parameters"]["taskId"] == 0
        assert call(c, f"{MANAGER}.Stats")["stats"]["connectionsPaused"] == 3
        held = RawClient(d.socket, timeout=30)
        held.send_call(*begin)
        # Another uid is served while the new connection waits (the event that comes after it).
        assert served_as_nobody(d.socket), "another uid was not served"
        # Its call was sent before the other uid's: unanswered still.
        assert select.select([held.sock], [], [], 0)[0] == [], "the held connection was answered at once"
        reply = held.recv_message(timeout=30)
        waited = time.monotonic() - t0
        assert reply["parameters"]["taskId"] == 0, reply
        # Answered once the interval ended; the paused ones are read again too.
        assert waited >= 1.5, f"the held connection was answered after {waited:.2f} s"
        assert kept[-1].call("org.varlink.service.GetInfo", timeout=PROMPT)["parameters"]["vendor"]
        for r in kept + [held]:
            r.close()
    print(f"\nreconnecting process: 5 refusals, its 6th connection answered after {waited:.2f} s (interval 3 s)")
