#!/usr/bin/env python3
"""A lifecycle-aware app with scenes (SPEC §15), written with the Python `varlink` package only.

    scene_app.py --log FILE [--no-scenes] [--silent] [--bad-snapshot] [--oversize BYTES]

Checks in as $BGTASKD_APP_ID on $BGTASKD_SOCKET with `scenes: true` (unless --no-scenes) and appends one
JSON line per event to FILE: {"event": kind, "sceneId": …, "state": …, "id": …}. It acknowledges
did-enter-background. On scene-snapshot it writes a PNG of the scene (a 2×2 image, its pixels from the
scene id) to the event's `path`, logs {"wrote": path, "sceneId": …} and acknowledges; --silent: it does
neither; --bad-snapshot: it writes text instead of a PNG; --oversize N: a PNG padded to N bytes.
will-terminate: exits 0.
"""
import argparse
import json
import os
import struct
import sys
import zlib

import varlink


def png(seed: str, pad: int = 0) -> bytes:
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
    r, g, b = (sum(seed.encode()) * k % 256 for k in (3, 5, 7))
    rows = b"".join(b"\x00" + bytes([r, g, b]) * 2 for _ in range(2))
    data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)))
    if pad > len(data):
        data += chunk(b"tEXt", b"pad\x00" + b"x" * (pad - len(data) - 16))
    return data + chunk(b"IEND", b"")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--no-scenes", action="store_true")
    ap.add_argument("--silent", action="store_true")
    ap.add_argument("--bad-snapshot", action="store_true")
    ap.add_argument("--oversize", type=int, default=0)
    args = ap.parse_args()

    app_id = os.environ["BGTASKD_APP_ID"]
    client = varlink.Client(address="unix:" + os.environ["BGTASKD_SOCKET"])
    calls = client.open("io.bgtaskd.App")
    stream = client.open("io.bgtaskd.App")
    log = open(args.log, "a", buffering=1)

    def note(obj):
        log.write(json.dumps(obj, sort_keys=True) + "\n")
        log.flush()

    checkin = stream.CheckIn(app_id, _more=True) if args.no_scenes else stream.CheckIn(app_id, True, _more=True)
    first = True
    for reply in checkin:
        if first:
            note({"checkedIn": reply["state"]})
            first = False
            continue
        ev = reply.get("event") or {}
        kind = ev.get("kind")
        note({"event": kind, "sceneId": ev.get("sceneId"), "title": ev.get("title"), "output": ev.get("output"),
              "state": ev.get("state"), "id": ev.get("id"), "needsAck": ev.get("needsAck"), "path": ev.get("path")})
        if kind == "did-enter-background":
            calls.Acknowledge(ev["id"])
        elif kind == "scene-snapshot" and not args.silent:
            path = ev["path"]
            with open(path, "wb") as f:
                f.write(b"this is not a PNG\n" if args.bad_snapshot else png(ev["sceneId"], args.oversize))
            note({"wrote": path, "sceneId": ev["sceneId"]})
            calls.Acknowledge(ev["id"])
        elif kind == "will-terminate":
            sys.exit(0)


if __name__ == "__main__":
    main()
