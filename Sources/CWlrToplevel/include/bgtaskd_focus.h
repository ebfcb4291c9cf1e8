// bgtaskd-focus's Wayland side: follows the compositor's toplevels through
// wlr-foreign-toplevel-management-unstable-v1 and reports each one's app_id and activated state.
#ifndef BGTASKD_FOCUS_H
#define BGTASKD_FOCUS_H

#include <stddef.h>
#include <stdint.h>

typedef struct bgtaskd_focus bgtaskd_focus;

/// A toplevel as of its last `done`: app_id (may be empty), title, the output it is on (its wl_output name;
/// NULL: not known), activated and minimized; `closed` 1 once when it is closed. Strings are valid only
/// during the callback.
struct bgtaskd_focus_toplevel {
    const char *app_id;
    const char *title;
    const char *output;
    int activated;
    int minimized;
    int closed;
};

/// Called after each `done` of a toplevel and once when it is closed.
typedef void (*bgtaskd_focus_callback)(void *context, uint32_t toplevel, const struct bgtaskd_focus_toplevel *info);

/// Called with 1 when the seat has been idle for the requested time (org_kde_kwin_idle), 0 when the
/// user is active again.
typedef void (*bgtaskd_focus_idle_callback)(void *context, int idle);

/// Connects to the Wayland display (`name` NULL: $WAYLAND_DISPLAY) and binds the toplevel manager, and,
/// with `idle_timeout_ms` > 0, an idle timeout on the first seat. NULL on failure, with the reason in
/// `error`; a compositor without the idle protocol is not a failure (`*idle_available` says 0).
bgtaskd_focus *bgtaskd_focus_connect(const char *name, bgtaskd_focus_callback callback,
                                     bgtaskd_focus_idle_callback idle_callback, uint32_t idle_timeout_ms,
                                     int *idle_available, void *context, char *error, size_t error_size);

/// Called with the session's LockedHint and IdleHint (logind) when either changes, and once at the start;
/// `gone` 1 when the system bus connection was lost (the watch ends; both are then reported 0).
typedef void (*bgtaskd_focus_session_callback)(void *context, int locked, int idle, int gone);

/// Follows logind's session (org.freedesktop.login1.Session's LockedHint and IdleHint, over sd-bus on
/// the system bus, $DBUS_SYSTEM_BUS_ADDRESS honoured): `session` if not NULL or empty, else
/// $XDG_SESSION_ID, else the caller's own session, else the display session of the caller's user (a
/// user unit runs outside any session). Its events are dispatched by bgtaskd_focus_wait. 0 on success
/// (the session's object path in `path_out`, the callback already called once), -1 with the reason in
/// `error`.
int bgtaskd_focus_follow_session(bgtaskd_focus *focus, const char *session, bgtaskd_focus_session_callback callback,
                                 char *path_out, size_t path_size, char *error, size_t error_size);

/// Waits up to `timeout_ms` (-1: forever) for events and dispatches them (the callback runs inside).
/// 0 on success (also on a timeout), -1 when the display connection is gone or the manager finished.
int bgtaskd_focus_wait(bgtaskd_focus *focus, int timeout_ms);

void bgtaskd_focus_destroy(bgtaskd_focus *focus);

#endif
