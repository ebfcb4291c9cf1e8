// bgtaskd-focus's session-bus side (SPEC §14): watches the session bus as a monitor
// (org.freedesktop.DBus.Monitoring.BecomeMonitor, a match for method calls) and reports each method call
// that expects a reply with the pid of the process owning its destination.
#ifndef BGTASKD_BUSWATCH_H
#define BGTASKD_BUSWATCH_H

#include <stddef.h>
#include <stdint.h>

typedef struct bgtaskd_buswatch bgtaskd_buswatch;

/// A method call `member` from `sender` to `destination` (as addressed: a unique or a well-known name)
/// that expects a reply. Strings are valid only during the call.
typedef void (*bgtaskd_buswatch_callback)(void *context, const char *destination, const char *sender,
                                          const char *member);

/// Connects twice to the bus at `address` (NULL or empty: $DBUS_SESSION_BUS_ADDRESS, else the user bus):
/// one connection becomes a monitor of method calls, the other asks the bus for owners' pids. NULL on
/// failure, with the reason in `error` (the bus refused BecomeMonitor: not the bus's user).
bgtaskd_buswatch *bgtaskd_buswatch_open(const char *address, bgtaskd_buswatch_callback callback, void *context,
                                        char *error, size_t error_size);

/// Waits up to `timeout_ms` (-1: forever) and reports what came (the callback runs inside). 0 on success
/// (also on a timeout), -1 when the bus connection is gone.
int bgtaskd_buswatch_wait(bgtaskd_buswatch *watch, int timeout_ms);

/// The pid of the process owning bus name `name` (GetConnectionUnixProcessID), 0 when it has none.
uint32_t bgtaskd_buswatch_owner_pid(bgtaskd_buswatch *watch, const char *name);

void bgtaskd_buswatch_destroy(bgtaskd_buswatch *watch);

#endif
