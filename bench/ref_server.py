#!/usr/bin/env python3
"""The Python reference of row 1: the `varlink` package's ThreadingServer serving io.bgtaskd.App's
BeginBackgroundTask / EndBackgroundTask with the same shapes and the equivalent bookkeeping (a table of
live tasks, a per-app limit, ending an unknown task is harmless). No journal, no state machine.

Usage: python3 bench/ref_server.py unix:/path/to/socket
"""

import os
import shutil
import sys
import tempfile
import threading

import varlink

INTERFACE = """\
interface io.bgtaskd.App

method BeginBackgroundTask(appId: string, name: ?string) -> (taskId: int)
method EndBackgroundTask(appId: string, taskId: int) -> ()

error NoSuchApp (appId: string)
"""

interface_dir = tempfile.mkdtemp(prefix="bgtaskd-bench-ref-")
with open(os.path.join(interface_dir, "io.bgtaskd.App.varlink"), "w") as f:
    f.write(INTERFACE)

service = varlink.Service(vendor="bgtaskd bench", product="reference", version="1", url="-",
                          interface_dir=interface_dir)


@service.interface("io.bgtaskd.App")
class App:
    def __init__(self):
        self.lock = threading.Lock()
        self.next_id = 1
        self.tasks = {}      # taskId -> (appId, name)
        self.per_app = {}    # appId -> live count
        self.limit = 64

    def BeginBackgroundTask(self, appId, name=None):
        with self.lock:
            if self.per_app.get(appId, 0) >= self.limit:
                return {"taskId": 0}
            task = self.next_id
            self.next_id += 1
            self.tasks[task] = (appId, name)
            self.per_app[appId] = self.per_app.get(appId, 0) + 1
            return {"taskId": task}

    def EndBackgroundTask(self, appId, taskId):
        with self.lock:
            owner = self.tasks.get(taskId)
            if owner is not None and owner[0] == appId:
                del self.tasks[taskId]
                self.per_app[appId] -= 1
        return {}


# The interface was read when the class above was declared; the file is no longer needed.
shutil.rmtree(interface_dir, ignore_errors=True)


class Handler(varlink.RequestHandler):
    service = service


def main():
    server = varlink.ThreadingServer(sys.argv[1], Handler)
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
