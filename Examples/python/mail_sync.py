#!/usr/bin/env python3
"""A mail app on bgtaskd with the Python varlink package (pip install varlink).

When it leaves the foreground it asks for background time, finishes its sync and ends the task;
it asks to be woken now and then to refresh the mailbox, like Examples/MailSync in Swift.

    BGTASKD_APP_ID=org.example.Mail python3 mail_sync.py
    bgtaskctl background org.example.Mail
"""
import os
import threading
import time

import varlink

APP = os.environ.get("BGTASKD_APP_ID", "org.example.Mail")
SOCKET = os.environ.get("BGTASKD_SOCKET", "/run/bgtaskd/io.bgtaskd")
REFRESH = "org.example.Mail.refresh"

client = varlink.Client(address="unix:" + SOCKET)
stream = client.open("io.bgtaskd.App")  # the CheckIn stream needs a connection of its own
calls = client.open("io.bgtaskd.App")   # everything else; keep it open: a task lives as long as it
calls_lock = threading.Lock()           # one call at a time on a connection


def call(method, **parameters):
    with calls_lock:
        return getattr(calls, method)(**parameters)


def sync(seconds):
    for step in range(1, seconds + 1):
        time.sleep(1)
        print(f"synced {step * 100 // seconds}%", flush=True)


def finish_sync(task_id):
    sync(3)
    call("EndBackgroundTask", appId=APP, taskId=task_id)
    print("sync done, background task ended", flush=True)


def refresh(identifier):
    sync(2)
    call("CompleteTask", appId=APP, identifier=identifier, success=True)
    schedule_refresh()


def schedule_refresh():
    try:
        call("SubmitTaskRequest", appId=APP, identifier=REFRESH, kind="refresh",
             earliestBeginUSec=int((time.time() + 15 * 60) * 1_000_000))
    except varlink.VarlinkError as e:
        print("could not schedule a refresh:", e.error(), flush=True)


schedule_refresh()
for reply in stream.CheckIn(appId=APP, _more=True):
    event = reply.get("event")
    if not event:
        print("checked in:", reply["state"], "refresh", reply["refreshStatus"], flush=True)
        continue
    kind = event["kind"]
    print(f"{kind} -> {event['state']}", flush=True)
    if kind == "did-enter-background":
        # Begin before acknowledging: after the acknowledgement an app without a task is frozen.
        task_id = call("BeginBackgroundTask", appId=APP, name="finish-sync")["taskId"]
        if task_id:  # 0: denied
            threading.Thread(target=finish_sync, args=(task_id,), daemon=True).start()
    elif kind == "background-task-will-expire" and event.get("taskId"):
        call("EndBackgroundTask", appId=APP, taskId=event["taskId"])  # out of time: stop there
    elif kind == "perform-task":
        threading.Thread(target=refresh, args=(event["identifier"],), daemon=True).start()
    elif kind == "will-terminate":
        break
    if event["needsAck"]:
        call("Acknowledge", eventId=event["id"])
