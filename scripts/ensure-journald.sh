#!/usr/bin/env bash
# Makes sure a systemd-journald answers on /run/systemd/journal/socket, starting one when none does
# (a container or CI machine without systemd as PID 1): the tests read back what the daemon logged
# with `journalctl -o json`.
#
# "Answers" means a datagram connect succeeds. A socket *file* is not enough: a journald that was
# killed (say, when the session that started it ended) leaves its socket files behind, and sending to
# them fails with ECONNREFUSED — every journal test would then fail although the file exists.
set -euo pipefail
sock=/run/systemd/journal/socket

alive() {
  python3 - "$sock" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
try:
    s.connect(sys.argv[1])
except OSError:
    sys.exit(1)
PY
}

# journald rate-limits per unit (RateLimitBurst=10000 per 30 s by default); without systemd as PID 1
# every test process counts as one unit, so a test that checks that a burst of decisions all reached
# the journal would see journald's own suppression. A journald started here (never one managed by a
# systemd PID 1) takes this runtime drop-in, which turns the rate limit off.
dropin_dir=/run/systemd/journald.conf.d
dropin="$dropin_dir/50-bgtaskd-tests.conf"
write_dropin() {
  mkdir -p "$dropin_dir"
  printf '# Written by bgtaskd scripts/ensure-journald.sh for its tests\n[Journal]\nRateLimitIntervalSec=0\n' > "$dropin"
}

# A journald that already answers is used as it is: never restarted, signalled or reconfigured, whoever
# started it (it may be the machine's own). Without systemd as PID 1 the test processes' cgroups name no
# unit, and journald rate-limits only entries whose sender's cgroup names one, so its configuration does
# not matter to the tests; the tests that need journald's default limits run a private journald
# (IntegrationTests/integration/private_journald.py).
if alive; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "ensure-journald: no journald answers on $sock and not root; journal tests will fail" >&2
  exit 1
fi
if [ -e "$sock" ]; then
  echo "ensure-journald: $sock is stale (no journald behind it): starting a new one" >&2
fi
# journald names its files after the machine ID; a bare container may have none.
if [ ! -s /etc/machine-id ]; then systemd-machine-id-setup >/dev/null 2>&1 || true; fi
mkdir -p /run/systemd/journal
[ -d /run/systemd/system ] || write_dropin
# journald binds its own sockets, replacing stale files.
setsid /lib/systemd/systemd-journald </dev/null >/tmp/bgtaskd-journald.log 2>&1 &
pid=$!
for _ in $(seq 1 200); do
  if alive; then exit 0; fi
  if ! kill -0 "$pid" 2>/dev/null; then break; fi
  sleep 0.05
done
echo "ensure-journald: journald did not come up on $sock; its output:" >&2
cat /tmp/bgtaskd-journald.log >&2 || true
exit 1
