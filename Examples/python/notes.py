#!/usr/bin/env python3
"""A two-window notes app on bgtaskd with scenes (SPEC §15), with the Python varlink package.

It checks in with scenes: true; each window is a scene (bgtaskd-focus reports one per toplevel; by hand:
`bgtaskctl foreground org.example.Notes --scene left`). Before the app is frozen, each scene gets
scene-snapshot with a path: it writes a PNG of that window there and acknowledges, like Examples/Notes.

    BGTASKD_APP_ID=org.example.Notes python3 notes.py
    bgtaskctl foreground org.example.Notes --scene left --title Shopping
    bgtaskctl foreground org.example.Notes --scene right --inactive
    bgtaskctl background org.example.Notes --scene left
    bgtaskctl background org.example.Notes --scene right     # snapshots, then frozen
    bgtaskctl snapshot org.example.Notes --scene left -o left.png
"""
import os
import struct
import zlib

import varlink

APP = os.environ.get("BGTASKD_APP_ID", "org.example.Notes")
SOCKET = os.environ.get("BGTASKD_SOCKET", "/run/bgtaskd/io.bgtaskd")
notes = {}


def png(width, height, rgb):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


client = varlink.Client(address="unix:" + SOCKET)
stream = client.open("io.bgtaskd.App")  # the CheckIn stream
calls = client.open("io.bgtaskd.App")   # Acknowledge
for reply in stream.CheckIn(APP, True, _more=True):
    event = reply.get("event")
    if not event:
        continue
    kind, scene = event["kind"], event.get("sceneId")
    print(kind, scene or "")
    if kind == "scene-will-connect":
        notes[scene] = event.get("title") or f"Note {scene}"
    elif kind == "scene-did-disconnect":
        notes.pop(scene, None)
    elif kind == "scene-snapshot":
        # Render the window (here: a colour from its note) and hide nothing private.
        seed = zlib.crc32(notes.get(scene, scene).encode())
        with open(event["path"], "wb") as f:
            f.write(png(64, 48, (seed & 255, (seed >> 8) & 255, (seed >> 16) & 255)))
    elif kind == "will-terminate":
        break
    if event.get("needsAck"):
        calls.Acknowledge(event["id"])
