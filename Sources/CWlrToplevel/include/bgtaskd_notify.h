// bgtaskd-focus's desktop notifications of continued tasks (SPEC §16): org.freedesktop.Notifications on
// the session bus (Notify, CloseNotification; the ActionInvoked and NotificationClosed signals).
#ifndef BGTASKD_NOTIFY_H
#define BGTASKD_NOTIFY_H

#include <stddef.h>
#include <stdint.h>

typedef struct bgtaskd_notify bgtaskd_notify;

/// The server's signals: ActionInvoked(id, action_key) (`closed_reason` 0) or NotificationClosed(id,
/// reason) (`action_key` NULL). Strings are valid only during the call.
typedef void (*bgtaskd_notify_callback)(void *context, uint32_t id, const char *action_key, uint32_t closed_reason);

/// A notification server came (`present` 1) or went (0): the bus's NameOwnerChanged for
/// org.freedesktop.Notifications.
typedef void (*bgtaskd_notify_server_callback)(void *context, int present);

/// Connects to the bus at `address` (NULL or empty: $DBUS_SESSION_BUS_ADDRESS, else the user bus) and
/// subscribes to the notification server's signals and to its coming and going. NULL on failure, with
/// the reason in `error`.
bgtaskd_notify *bgtaskd_notify_open(const char *address, bgtaskd_notify_callback callback,
                                    bgtaskd_notify_server_callback server_callback, void *context, char *error,
                                    size_t error_size);

/// Notify(app_name, replaces_id, "", summary, body, actions ["cancel", cancel_label], hints {value (when
/// percent >= 0), resident, urgency low}, expire_timeout 0). The server's id, or 0 with the reason in `error`.
uint32_t bgtaskd_notify_show(bgtaskd_notify *n, const char *app_name, uint32_t replaces_id, const char *summary,
                             const char *body, int32_t percent, const char *cancel_label, char *error,
                             size_t error_size);

/// CloseNotification(id). 0, or -1 with the reason in `error`.
int bgtaskd_notify_close(bgtaskd_notify *n, uint32_t id, char *error, size_t error_size);

/// Waits up to `timeout_ms` (-1: forever) for the bus or for `wake_fd` (-1: none) to be readable and
/// reports the signals that came (the callback runs inside). 1 when `wake_fd` is readable, 0 otherwise,
/// -1 when the bus connection is gone.
int bgtaskd_notify_wait(bgtaskd_notify *n, int wake_fd, int timeout_ms);

void bgtaskd_notify_destroy(bgtaskd_notify *n);

#endif
