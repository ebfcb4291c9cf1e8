#!/usr/bin/env python3
"""Writes the seed corpus of FuzzVarlinkDecoding (Corpus/FuzzVarlinkDecoding/): one file per seed, its
first byte the read size minus one (how the target cuts the stream), the rest a client's byte stream:
valid calls of every kind, pipelines, and the malformed messages IntegrationTests/integration/test_robustness.py
sends. Run it again after adding seeds; the files are committed."""
import hashlib
import json
from pathlib import Path

OUT = Path(__file__).resolve().parent / "Corpus" / "FuzzVarlinkDecoding"


def call(method, parameters=None, **flags):
    m = {"method": method}
    if parameters is not None:
        m["parameters"] = parameters
    m.update(flags)
    return json.dumps(m, separators=(",", ":")).encode() + b"\0"


A = "org.example.Mail"
CALLS = [
    call("org.varlink.service.GetInfo"),
    call("org.varlink.service.GetInterfaceDescription", {"interface": "io.bgtaskd.App"}),
    call("io.bgtaskd.App.CheckIn", {"appId": A}, more=True),
    call("io.bgtaskd.App.Acknowledge", {"eventId": 4}),
    call("io.bgtaskd.App.BeginBackgroundTask", {"appId": A, "name": "sync"}),
    call("io.bgtaskd.App.EndBackgroundTask", {"appId": A, "taskId": 1}),
    call("io.bgtaskd.App.BackgroundTimeRemaining", {"appId": A}),
    call("io.bgtaskd.App.BeginActivity", {"appId": A, "mode": "audio"}),
    call("io.bgtaskd.App.EndActivity", {"appId": A, "activityId": 2}),
    call("io.bgtaskd.App.SubmitTaskRequest", {"appId": A, "identifier": A + ".refresh", "kind": "refresh",
                                              "earliestBeginUSec": 1795540000000000, "requiresNetwork": True,
                                              "requiresExternalPower": False}),
    call("io.bgtaskd.App.CompleteTask", {"appId": A, "identifier": A + ".refresh", "success": True}),
    call("io.bgtaskd.Manager.Launch", {"appId": A, "background": True}),
    call("io.bgtaskd.Manager.Foreground", {"appId": A, "exclusive": False}),
    call("io.bgtaskd.Manager.Background", {"appId": A}),
    call("io.bgtaskd.Manager.Monitor", more=True),
    call("io.bgtaskd.Manager.SetConditions", {"onExternalPower": False, "network": "metered"}),
    call("io.bgtaskd.Manager.PostNotification", {"name": "n", "appId": A, "payload": {"n": [1, 2.5, None, "x"]}}),
    call("io.bgtaskd.Manager.Stats", oneway=True),
    call("io.bgtaskd.Manager.Stats", upgrade=True),
    call("io.bgtaskd.Manager.Launch", {"appId": A, "background": "true"}),
    call("io.bgtaskd.Nope.X"),
]
MALFORMED = [
    b'{"method": nope}\0', b"\0", b"[1, 2, 3]\0", b'{"parameters": {}}\0', b'{"method": 42}\0',
    b'{"method": "org.varlink.service.GetInfo", "parameters": [1]}\0',
    b'{"method": "org.varlink.service.GetInfo", "more": "yes"}\0', b'{"method": "\xff\xfe.\xc0"}\0',
    b'{"method": "a\x01b"}\0', b'{"method": "\\ud800"}\0', b"[" * 300 + b"\0",
    b'{"method": "org.varlink.service.GetInfo"} x\0',
    b'{"method": "org.varlink.service.GetInfo", "parameters": {"x": 1e999}}\0',
    b'{"method":"io.bgtaskd.App.Acknowledge","parameters":{"eventId":-0.0e+5}}\0',
    b'{"method":"a.B","parameters":{"s":"\\u00e9\\n\\"\\\\"}}\0', b'{"method":"org.varlink.service.GetInfo"',
    # The fast path's edges (issue 15): compact, reordered, escaped, out of range, repeated keys.
    b'{"parameters":{"taskId":7,"appId":"a"},"method":"io.bgtaskd.App.EndBackgroundTask","oneway":true}\0',
    b'{"method":"io.bgtaskd.App.BeginBackgroundTask","parameters":{"name":null,"appId":"org.example.Mail"}}\0',
    b'{"method":"io.bgtaskd.App.BeginBackgroundTask","parameters":{"appId":"a\\u0062","name":"x"}}\0',
    b'{"method":"io.bgtaskd.App.EndBackgroundTask","parameters":{"appId":"a","taskId":999999999999999999999}}\0',
    b'{"method":"io.bgtaskd.App.Acknowledge","parameters":{"eventId":1,"eventId":2}}\0',
    b'{"parameters":{"exclusive":null,"appId":"a"},"method":"io.bgtaskd.Manager.Foreground"}\0',
    b'{"method":"io.bgtaskd.Manager.Foreground","parameters":{"appId":"a","exclusive":1}}\0',
    b'{"method":"io.bgtaskd.Manager.Background","parameters":{"appId":"a","appId":"b"}}\0',
]


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    seeds = []
    for data in CALLS + MALFORMED:
        seeds += [b"\x3f" + data, b"\x00" + data]
    seeds.append(b"\x07" + b"".join(CALLS))          # a pipeline in 8-byte reads
    seeds.append(b"\x3f" + b"".join(CALLS[:5]) + MALFORMED[0] + CALLS[0])
    for s in seeds:
        (OUT / hashlib.sha1(s).hexdigest()).write_bytes(s)
    print(f"{len(seeds)} seeds in {OUT}")


if __name__ == "__main__":
    main()
