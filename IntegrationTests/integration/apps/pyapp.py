#!/usr/bin/env python3
"""A lifecycle-aware app written with the Python `varlink` package only (no bgtaskd code): the
independent client of the integration tests.

    pyapp.py --log FILE [--no-ack] [--task-on-background NAME] [--end-task-after SEC]
             [--ignore-expiration] [--hold-connection]

Checks in as $BGTASKD_APP_ID on $BGTASKD_SOCKET and appends one JSON line per event to FILE:
{"event": kind, "state": ..., "id": ..., ...}, plus {"taskId": n} lines for tasks it begins.
- did-enter-background: begins a task named NAME first when --task-on-background is given, then
  acknowledges (unless --no-ack).
- background-task-will-expire: ends the task (unless --ignore-expiration).
- will-terminate: exits 0.
"""
import argparse
import json
import os
import sys
import threading
import time

import varlink


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--no-ack", action="store_true")
    ap.add_argument("--task-on-background")
    ap.add_argument("--end-task-after", type=float)
    ap.add_argument("--ignore-expiration", action="store_true")
    args = ap.parse_args()

    app_id = os.environ["BGTASKD_APP_ID"]
    address = "unix:" + os.environ["BGTASKD_SOCKET"]
    log = open(args.log, "a", buffering=1)

    def note(obj):
        log.write(json.dumps(obj, sort_keys=True) + "\n")
        log.flush()

    client = varlink.Client(address=address)
    calls = client.open("io.bgtaskd.App")      # Acknowledge, Begin/EndBackgroundTask
    stream = client.open("io.bgtaskd.App")     # the CheckIn event stream
    lock = threading.Lock()
    tasks = []

    def end_later(task_id, delay):
        time.sleep(delay)
        with lock:
            calls.EndBackgroundTask(app_id, task_id)
        note({"ended": task_id})

    first = True
    for reply in stream.CheckIn(app_id, _more=True):
        if first:
            note({"checkedIn": reply["state"], "refreshStatus": reply.get("refreshStatus")})
            first = False
            continue
        ev = reply.get("event") or {}
        note({"event": ev.get("kind"), "state": ev.get("state"), "id": ev.get("id"),
              "launchReason": ev.get("launchReason"), "taskId": ev.get("taskId"), "name": ev.get("name"),
              "needsAck": ev.get("needsAck")})
        kind = ev.get("kind")
        if kind == "did-enter-background":
            if args.task_on_background:
                with lock:
                    tid = calls.BeginBackgroundTask(app_id, args.task_on_background)["taskId"]
                tasks.append(tid)
                note({"taskId": tid})
                if args.end_task_after is not None:
                    threading.Thread(target=end_later, args=(tid, args.end_task_after), daemon=True).start()
            if not args.no_ack:
                with lock:
                    calls.Acknowledge(ev["id"])
        elif kind == "background-task-will-expire" and not args.ignore_expiration:
            with lock:
                calls.EndBackgroundTask(app_id, ev["taskId"])
            note({"ended": ev["taskId"]})
        elif kind == "will-terminate":
            sys.exit(0)


if __name__ == "__main__":
    main()
