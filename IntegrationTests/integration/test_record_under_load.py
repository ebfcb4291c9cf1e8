"""SPEC §17 under load: the input ring, wrapping many times while clients flood the daemon, still gives
recordings that replay equal — each taken while the calls go on, from a checkpoint taken mid-flood."""
import json
import threading
import time

import varlink

from support import AppLog, RawClient
from test_record_replay import ctl, replay, unaware

APP = "io.bgtaskd.App"

LOAD_CONF = """
[Daemon]
FreezerBackend=signal
RecordInputs=yes
RecordMaxBytes=256KiB
[Lifecycle]
MaxBackgroundTasksPerApp=1000
DidEnterBackgroundTimeoutSec=200ms
BackgroundTimeBudgetSec=2s
ExpirationWarningSec=300ms
LaunchTimeoutSec=5s
WillTerminateTimeoutSec=1s
KillTimeoutSec=1s
"""


class Flooder(threading.Thread):
    """One connection pipelining BeginBackgroundTask for `app`, `batch` at a time, and ending every task
    granted, until stopped. Counts the replies; any reply that is not an answer to the call is an error."""

    def __init__(self, path: str, app: str, batch: int = 50):
        super().__init__(daemon=True)
        self.c = RawClient(path, timeout=None)
        self.app, self.batch = app, batch
        self.answered = 0
        self.error = None
        self.stopping = threading.Event()

    def run(self):
        begin = RawClient.encode(f"{APP}.BeginBackgroundTask", {"appId": self.app})
        try:
            while not self.stopping.is_set():
                self.c.send(begin * self.batch)
                ids = []
                for _ in range(self.batch):
                    reply = self.c.recv_message(timeout=60)
                    if "error" in reply:
                        # A Begin may be refused by error (the app is gone or not running): that is an answer.
                        self.answered += 1
                        continue
                    ids.append(reply["parameters"]["taskId"])
                    self.answered += 1
                granted = [i for i in ids if i > 0]
                if granted:
                    self.c.send(b"".join(RawClient.encode(f"{APP}.EndBackgroundTask", {"appId": self.app, "taskId": i})
                                         for i in granted))
                    for _ in granted:
                        self.c.recv_message(timeout=60)
                        self.answered += 1
        except Exception as e:  # noqa: BLE001 — reported by the test
            self.error = e
        finally:
            self.c.close()


def test_recordings_taken_during_a_flood_replay_equal_from_their_checkpoints(daemon, bin_dir, tmp_path):
    """Eight clients flood Begin/End for the foreground app while eight more apps are cycled through a
    launch into the background, suspension and termination; RecordMaxBytes=256KiB makes the ring wrap many
    times. Three recordings taken while the flood goes on each begin after the daemon's start (a
    checkpoint), hold the flood's inputs, and replay with exit 0; a tampered copy of the last exits 1."""
    flooded = "org.test.Flood"
    cycled = [f"org.test.Cycle{n}" for n in range(8)]
    d = daemon(conf=LOAD_CONF, apps={i: unaware(i) for i in [flooded] + cycled})
    cycle_apps = [AppLog(d, i, tmp_path / f"{i}.log") for i in cycled]
    c = varlink.Client(address="unix:" + d.socket)
    with c, c.open("io.bgtaskd.Manager") as m:
        m.Launch(appId=flooded)
        floods = [Flooder(d.socket, flooded) for _ in range(8)]
        for f in floods:
            f.start()
        records = []
        try:
            for r in range(3):
                for a in cycle_apps:
                    m.Launch(appId=a.id, background=True)
                for a in cycle_apps:
                    a.wait_state("suspended", timeout=30)
                for a in cycle_apps:
                    m.Terminate(appId=a.id)
                for a in cycle_apps:
                    a.wait_state("not-running", timeout=30)
                answered = sum(f.answered for f in floods)
                path = tmp_path / f"load{r}.json"
                out = ctl(bin_dir, "record", "-o", str(path), socket=d.socket)
                assert out.returncode == 0, out.stderr
                records.append(path)
                # The flood went on while the recording was taken and after: the daemon kept answering.
                deadline = time.monotonic() + 30
                while sum(f.answered for f in floods) < answered + 3000:
                    assert time.monotonic() < deadline, f"the flood stopped being answered: {[f.answered for f in floods]}"
                    assert not any(f.error for f in floods), [f.error for f in floods]
                    time.sleep(0.01)  # poll interval of a counter the flood threads advance
        finally:
            for f in floods:
                f.stopping.set()
            for f in floods:
                f.join(60)
        assert not any(f.error for f in floods), [f.error for f in floods]
        assert all(f.answered > 0 for f in floods), [f.answered for f in floods]
        assert m.GetApp(appId=flooded)["app"]["state"] == "active"

    for path in records:
        doc = json.loads(path.read_text())
        assert doc["inputsBefore"] > 0, f"{path.name}: the ring did not wrap"
        text = json.dumps(doc["inputs"])
        for kind in ("assertionRequested", "assertionEndRequested"):
            assert kind in text, f"{path.name} holds no {kind}"
        out = replay(bin_dir, path)
        assert out.returncode == 0, f"{path.name}: {out.stdout}{out.stderr}"

    doc = json.loads(records[-1].read_text())
    k = next(n for n, i in enumerate(doc["inputs"]) if i["decisions"])
    doc["inputs"][k]["decisions"][0] = doc["inputs"][k]["decisions"][0] + " "
    bad = tmp_path / "tampered.json"
    bad.write_text(json.dumps(doc))
    out = replay(bin_dir, bad)
    assert out.returncode == 1 and f"decisions differ at input {k} of {len(doc['inputs'])}" in out.stderr, out.stdout + out.stderr
