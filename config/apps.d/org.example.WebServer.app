# A program that knows nothing of bgtaskd: it runs unchanged. In the background
# it keeps running for DidEnterBackgroundTimeoutSec= and is then frozen, unless
# something holds it, e.g. a manager hold (no time budget) while a command runs:
#   bgtaskctl hold --app org.example.WebServer -- curl http://127.0.0.1:8765/
[App]
ID=org.example.WebServer
Name=Web Server
Exec=/usr/bin/env python3 -m http.server 8765 --bind 127.0.0.1
LifecycleAware=no
# http.server serves its working directory.
WorkingDirectory=/usr/share/doc
Environment=PYTHONUNBUFFERED=1
