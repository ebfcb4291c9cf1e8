#!/usr/bin/env bash
# Starts systemd-journald when no journal socket exists (a container or CI machine without systemd
# as PID 1): the tests read back what the daemon logged with `journalctl -o json`.
set -euo pipefail
sock=/run/systemd/journal/socket
if [ -S "$sock" ]; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
  echo "ensure-journald: no journal socket and not root; journal tests will fail" >&2
  exit 1
fi
mkdir -p /run/systemd/journal /var/log/journal
setsid /lib/systemd/systemd-journald </dev/null >/tmp/bgtaskd-journald.log 2>&1 &
for _ in $(seq 1 100); do
  [ -S "$sock" ] && exit 0
  sleep 0.05
done
echo "ensure-journald: journald did not create $sock (see /tmp/bgtaskd-journald.log)" >&2
exit 1
