#include "bgtaskd_focus.h"
#include "idle-client-protocol.h"
#include "wlr-foreign-toplevel-management-unstable-v1-client-protocol.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-login.h>
#include <unistd.h>
#include <wayland-client.h>

/* A display (wl_output), for the output a toplevel is on (its name: wl_output v4). */
struct output {
    struct wl_output *output;
    uint32_t global;
    char *name;
    struct output *next;
};

struct toplevel {
    struct bgtaskd_focus *focus;
    struct zwlr_foreign_toplevel_handle_v1 *handle;
    uint32_t id;
    char *app_id;      /* as of the last done */
    char *pending_app_id;
    int activated;
    int pending_activated;
    char *title;       /* as of the last done */
    char *pending_title;
    int minimized;
    int pending_minimized;
    struct wl_output *on; /* the output it entered last (NULL: none known) */
};

struct bgtaskd_focus {
    struct wl_display *display;
    struct wl_registry *registry;
    struct zwlr_foreign_toplevel_manager_v1 *manager;
    bgtaskd_focus_callback callback;
    bgtaskd_focus_idle_callback idle_callback;
    void *context;
    struct wl_seat *seat;
    struct org_kde_kwin_idle *idle;
    struct org_kde_kwin_idle_timeout *idle_timeout;
    uint32_t next_id;
    int finished;
    /* logind's session (LockedHint, IdleHint), when followed. */
    sd_bus *bus;
    sd_bus_slot *session_match;
    char *session_path;
    bgtaskd_focus_session_callback session_callback;
    int locked_hint;
    int idle_hint;
    struct output *outputs;
};

static const char *output_name(struct bgtaskd_focus *f, struct wl_output *o) {
    for (struct output *out = f->outputs; out; out = out->next)
        if (out->output == o) return out->name;
    return NULL;
}

static char *dup_or_empty(const char *s) { return strdup(s ? s : ""); }

static void handle_title(void *data, struct zwlr_foreign_toplevel_handle_v1 *h, const char *title) {
    struct toplevel *t = data;
    (void)h;
    free(t->pending_title);
    t->pending_title = dup_or_empty(title);
}

static void handle_app_id(void *data, struct zwlr_foreign_toplevel_handle_v1 *h, const char *app_id) {
    struct toplevel *t = data;
    (void)h;
    free(t->pending_app_id);
    t->pending_app_id = dup_or_empty(app_id);
}

static void handle_output_enter(void *data, struct zwlr_foreign_toplevel_handle_v1 *h, struct wl_output *o) {
    struct toplevel *t = data;
    (void)h;
    t->on = o;
}

static void handle_output_leave(void *data, struct zwlr_foreign_toplevel_handle_v1 *h, struct wl_output *o) {
    struct toplevel *t = data;
    (void)h;
    if (t->on == o) t->on = NULL;
}

static void handle_state(void *data, struct zwlr_foreign_toplevel_handle_v1 *h, struct wl_array *state) {
    struct toplevel *t = data;
    (void)h;
    int activated = 0, minimized = 0;
    uint32_t *s;
    wl_array_for_each(s, state) {
        if (*s == ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_ACTIVATED) activated = 1;
        if (*s == ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_MINIMIZED) minimized = 1;
    }
    t->pending_activated = activated;
    t->pending_minimized = minimized;
}

static void handle_done(void *data, struct zwlr_foreign_toplevel_handle_v1 *h) {
    struct toplevel *t = data;
    (void)h;
    if (t->pending_app_id) {
        free(t->app_id);
        t->app_id = t->pending_app_id;
        t->pending_app_id = NULL;
    }
    if (t->pending_title) {
        free(t->title);
        t->title = t->pending_title;
        t->pending_title = NULL;
    }
    t->activated = t->pending_activated;
    t->minimized = t->pending_minimized;
    struct bgtaskd_focus_toplevel info = {
        .app_id = t->app_id ? t->app_id : "", .title = t->title ? t->title : "",
        .output = t->on ? output_name(t->focus, t->on) : NULL, .activated = t->activated,
        .minimized = t->minimized, .closed = 0,
    };
    t->focus->callback(t->focus->context, t->id, &info);
}

static void handle_closed(void *data, struct zwlr_foreign_toplevel_handle_v1 *h) {
    struct toplevel *t = data;
    struct bgtaskd_focus_toplevel info = {
        .app_id = t->app_id ? t->app_id : "", .title = t->title ? t->title : "", .output = NULL, .closed = 1,
    };
    t->focus->callback(t->focus->context, t->id, &info);
    zwlr_foreign_toplevel_handle_v1_destroy(h);
    free(t->app_id);
    free(t->pending_app_id);
    free(t->title);
    free(t->pending_title);
    free(t);
}

static void handle_parent(void *data, struct zwlr_foreign_toplevel_handle_v1 *h,
                          struct zwlr_foreign_toplevel_handle_v1 *parent) {
    (void)data; (void)h; (void)parent;
}

static const struct zwlr_foreign_toplevel_handle_v1_listener toplevel_listener = {
    .title = handle_title,
    .app_id = handle_app_id,
    .output_enter = handle_output_enter,
    .output_leave = handle_output_leave,
    .state = handle_state,
    .done = handle_done,
    .closed = handle_closed,
    .parent = handle_parent,
};

static void manager_toplevel(void *data, struct zwlr_foreign_toplevel_manager_v1 *m,
                             struct zwlr_foreign_toplevel_handle_v1 *handle) {
    struct bgtaskd_focus *f = data;
    (void)m;
    struct toplevel *t = calloc(1, sizeof *t);
    if (!t) {
        zwlr_foreign_toplevel_handle_v1_destroy(handle);
        return;
    }
    t->focus = f;
    t->handle = handle;
    t->id = ++f->next_id;
    zwlr_foreign_toplevel_handle_v1_add_listener(handle, &toplevel_listener, t);
}

static void manager_finished(void *data, struct zwlr_foreign_toplevel_manager_v1 *m) {
    struct bgtaskd_focus *f = data;
    (void)m;
    f->finished = 1;
}

static const struct zwlr_foreign_toplevel_manager_v1_listener manager_listener = {
    .toplevel = manager_toplevel,
    .finished = manager_finished,
};

static void idle_idle(void *data, struct org_kde_kwin_idle_timeout *t) {
    struct bgtaskd_focus *f = data;
    (void)t;
    if (f->idle_callback) f->idle_callback(f->context, 1);
}

static void idle_resumed(void *data, struct org_kde_kwin_idle_timeout *t) {
    struct bgtaskd_focus *f = data;
    (void)t;
    if (f->idle_callback) f->idle_callback(f->context, 0);
}

static const struct org_kde_kwin_idle_timeout_listener idle_listener = {
    .idle = idle_idle,
    .resumed = idle_resumed,
};

static void output_geometry(void *data, struct wl_output *o, int32_t x, int32_t y, int32_t pw, int32_t ph,
                            int32_t subpixel, const char *make, const char *model, int32_t transform) {
    (void)data; (void)o; (void)x; (void)y; (void)pw; (void)ph; (void)subpixel; (void)make; (void)model; (void)transform;
}
static void output_mode(void *data, struct wl_output *o, uint32_t flags, int32_t w, int32_t h, int32_t refresh) {
    (void)data; (void)o; (void)flags; (void)w; (void)h; (void)refresh;
}
static void output_done(void *data, struct wl_output *o) { (void)data; (void)o; }
static void output_scale(void *data, struct wl_output *o, int32_t factor) { (void)data; (void)o; (void)factor; }
static void output_name_event(void *data, struct wl_output *o, const char *name) {
    struct output *out = data;
    (void)o;
    free(out->name);
    out->name = strdup(name ? name : "");
}
static void output_description(void *data, struct wl_output *o, const char *d) { (void)data; (void)o; (void)d; }

static const struct wl_output_listener output_listener = {
    .geometry = output_geometry, .mode = output_mode, .done = output_done, .scale = output_scale,
    .name = output_name_event, .description = output_description,
};

static void registry_global(void *data, struct wl_registry *r, uint32_t name, const char *interface, uint32_t version) {
    struct bgtaskd_focus *f = data;
    if (strcmp(interface, wl_output_interface.name) == 0) {
        struct output *out = calloc(1, sizeof *out);
        if (out) {
            out->global = name;
            out->output = wl_registry_bind(r, name, &wl_output_interface, version < 4 ? version : 4);
            wl_output_add_listener(out->output, &output_listener, out);
            out->next = f->outputs;
            f->outputs = out;
        }
    }
    if (strcmp(interface, wl_seat_interface.name) == 0 && !f->seat) {
        f->seat = wl_registry_bind(r, name, &wl_seat_interface, 1);
    } else if (strcmp(interface, org_kde_kwin_idle_interface.name) == 0 && !f->idle) {
        f->idle = wl_registry_bind(r, name, &org_kde_kwin_idle_interface, 1);
    }
    if (strcmp(interface, zwlr_foreign_toplevel_manager_v1_interface.name) == 0 && !f->manager) {
        uint32_t v = version < 3 ? version : 3;
        f->manager = wl_registry_bind(r, name, &zwlr_foreign_toplevel_manager_v1_interface, v);
        zwlr_foreign_toplevel_manager_v1_add_listener(f->manager, &manager_listener, f);
    }
}

static void registry_global_remove(void *data, struct wl_registry *r, uint32_t name) {
    struct bgtaskd_focus *f = data;
    (void)r;
    for (struct output **p = &f->outputs; *p; p = &(*p)->next) {
        if ((*p)->global != name) continue;
        struct output *gone = *p;
        *p = gone->next;
        wl_output_destroy(gone->output);
        free(gone->name);
        free(gone);
        return;
    }
}

static const struct wl_registry_listener registry_listener = {
    .global = registry_global,
    .global_remove = registry_global_remove,
};


/* --- logind: the session's LockedHint and IdleHint (org.freedesktop.login1.Session over sd-bus) --- */

static void session_close(struct bgtaskd_focus *f) {
    f->session_match = sd_bus_slot_unref(f->session_match);
    f->bus = sd_bus_flush_close_unref(f->bus);
    free(f->session_path);
    f->session_path = NULL;
}

static void session_report(struct bgtaskd_focus *f, int locked, int idle) {
    if (locked == f->locked_hint && idle == f->idle_hint) return;
    f->locked_hint = locked;
    f->idle_hint = idle;
    if (f->session_callback) f->session_callback(f->context, locked, idle, 0);
}

/* PropertiesChanged(s interface, a{sv} changed, as invalidated) on the session's object. */
static int session_properties_changed(sd_bus_message *m, void *data, sd_bus_error *ret_error) {
    struct bgtaskd_focus *f = data;
    (void)ret_error;
    const char *interface = NULL;
    int locked = f->locked_hint, idle = f->idle_hint, refetch = 0;
    if (sd_bus_message_read(m, "s", &interface) < 0 || strcmp(interface, "org.freedesktop.login1.Session") != 0)
        return 0;
    if (sd_bus_message_enter_container(m, 'a', "{sv}") < 0) return 0;
    while (sd_bus_message_enter_container(m, 'e', "sv") > 0) {
        const char *name = NULL;
        if (sd_bus_message_read(m, "s", &name) < 0) return 0;
        int *target = strcmp(name, "LockedHint") == 0 ? &locked : strcmp(name, "IdleHint") == 0 ? &idle : NULL;
        if (target) {
            int b = 0;
            if (sd_bus_message_read(m, "v", "b", &b) < 0) return 0;
            *target = b != 0;
        } else if (sd_bus_message_skip(m, "v") < 0) {
            return 0;
        }
        if (sd_bus_message_exit_container(m) < 0) return 0;
    }
    if (sd_bus_message_exit_container(m) < 0) return 0;
    const char *invalidated = NULL;
    if (sd_bus_message_enter_container(m, 'a', "s") >= 0) {
        while (sd_bus_message_read(m, "s", &invalidated) > 0) {
            if (strcmp(invalidated, "LockedHint") == 0 || strcmp(invalidated, "IdleHint") == 0) refetch = 1;
        }
    }
    if (refetch) {
        (void)sd_bus_get_property_trivial(f->bus, "org.freedesktop.login1", f->session_path,
                                          "org.freedesktop.login1.Session", "LockedHint", NULL, 'b', &locked);
        (void)sd_bus_get_property_trivial(f->bus, "org.freedesktop.login1", f->session_path,
                                          "org.freedesktop.login1.Session", "IdleHint", NULL, 'b', &idle);
    }
    session_report(f, locked != 0, idle != 0);
    return 0;
}

/* Dispatches what the bus has; a lost bus ends the watch (told as unlocked, with gone 1). */
static void session_process(struct bgtaskd_focus *f) {
    int r;
    while ((r = sd_bus_process(f->bus, NULL)) > 0) {
        if (!f->bus) return;
    }
    if (r < 0) {
        session_close(f);
        f->locked_hint = 0;
        f->idle_hint = 0;
        if (f->session_callback) f->session_callback(f->context, 0, 0, 1);
    }
}

/* The session to follow: `session` if given, else $XDG_SESSION_ID, else the caller's own session (its
   cgroup), else the user's display session (a user unit runs outside any session). */
static int session_resolve(struct bgtaskd_focus *f, const char *session, char *error, size_t error_size) {
    sd_bus_error e = SD_BUS_ERROR_NULL;
    sd_bus_message *reply = NULL;
    const char *path = NULL;
    char *own = NULL;
    int r;
    if (!session || !*session) session = getenv("XDG_SESSION_ID");
    if ((!session || !*session) && sd_pid_get_session(0, &own) >= 0) session = own;
    if (session && *session) {
        r = sd_bus_call_method(f->bus, "org.freedesktop.login1", "/org/freedesktop/login1",
                               "org.freedesktop.login1.Manager", "GetSession", &e, &reply, "s", session);
        if (r >= 0) r = sd_bus_message_read(reply, "o", &path);
        if (r < 0) snprintf(error, error_size, "logind has no session %s: %s", session, e.message ? e.message : strerror(-r));
    } else {
        r = sd_bus_call_method(f->bus, "org.freedesktop.login1", "/org/freedesktop/login1",
                               "org.freedesktop.login1.Manager", "GetUser", &e, &reply, "u", (uint32_t)getuid());
        const char *user_path = NULL;
        if (r >= 0) r = sd_bus_message_read(reply, "o", &user_path);
        if (r >= 0) {
            char *user = strdup(user_path);
            reply = sd_bus_message_unref(reply);
            sd_bus_error_free(&e);
            r = user ? sd_bus_get_property(f->bus, "org.freedesktop.login1", user, "org.freedesktop.login1.User",
                                           "Display", &e, &reply, "(so)") : -ENOMEM;
            free(user);
            const char *id = NULL;
            if (r >= 0) r = sd_bus_message_read(reply, "(so)", &id, &path);
            if (r >= 0 && (!id || !*id)) r = -ENOENT;
        }
        if (r < 0)
            snprintf(error, error_size, "logind knows no display session of uid %u: %s", (unsigned)getuid(),
                     e.message ? e.message : strerror(-r));
    }
    if (r >= 0) {
        f->session_path = strdup(path);
        if (!f->session_path) r = -ENOMEM;
    }
    sd_bus_message_unref(reply);
    sd_bus_error_free(&e);
    free(own);
    return r;
}

int bgtaskd_focus_follow_session(bgtaskd_focus *f, const char *session, bgtaskd_focus_session_callback callback,
                                 char *path_out, size_t path_size, char *error, size_t error_size) {
    int r = sd_bus_open_system(&f->bus);
    if (r < 0) {
        snprintf(error, error_size, "cannot connect to the system bus: %s", strerror(-r));
        f->bus = NULL;
        return -1;
    }
    if (session_resolve(f, session, error, error_size) < 0) {
        session_close(f);
        return -1;
    }
    r = sd_bus_match_signal(f->bus, &f->session_match, "org.freedesktop.login1", f->session_path,
                            "org.freedesktop.DBus.Properties", "PropertiesChanged", session_properties_changed, f);
    int locked = 0, idle = 0;
    sd_bus_error e = SD_BUS_ERROR_NULL;
    if (r >= 0)
        r = sd_bus_get_property_trivial(f->bus, "org.freedesktop.login1", f->session_path,
                                        "org.freedesktop.login1.Session", "LockedHint", &e, 'b', &locked);
    if (r >= 0)
        r = sd_bus_get_property_trivial(f->bus, "org.freedesktop.login1", f->session_path,
                                        "org.freedesktop.login1.Session", "IdleHint", &e, 'b', &idle);
    if (r < 0) {
        snprintf(error, error_size, "cannot follow %s: %s", f->session_path, e.message ? e.message : strerror(-r));
        sd_bus_error_free(&e);
        session_close(f);
        return -1;
    }
    snprintf(path_out, path_size, "%s", f->session_path);
    f->session_callback = callback;
    f->locked_hint = -1;  /* the first report always goes out */
    session_report(f, locked != 0, idle != 0);
    return 0;
}

bgtaskd_focus *bgtaskd_focus_connect(const char *name, bgtaskd_focus_callback callback,
                                     bgtaskd_focus_idle_callback idle_callback, uint32_t idle_timeout_ms,
                                     int *idle_available, void *context, char *error, size_t error_size) {
    struct bgtaskd_focus *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    f->callback = callback;
    f->idle_callback = idle_callback;
    f->context = context;
    if (idle_available) *idle_available = 0;
    f->display = wl_display_connect(name);
    if (!f->display) {
        snprintf(error, error_size, "cannot connect to the Wayland display %s: %s",
                 name ? name : "($WAYLAND_DISPLAY)", strerror(errno));
        free(f);
        return NULL;
    }
    f->registry = wl_display_get_registry(f->display);
    wl_registry_add_listener(f->registry, &registry_listener, f);
    /* Twice: the outputs' names come in answer to their binding. */
    if (wl_display_roundtrip(f->display) < 0 || wl_display_roundtrip(f->display) < 0 || !f->manager) {
        snprintf(error, error_size, "the compositor does not offer %s",
                 zwlr_foreign_toplevel_manager_v1_interface.name);
        bgtaskd_focus_destroy(f);
        return NULL;
    }
    if (idle_timeout_ms > 0 && f->idle && f->seat) {
        f->idle_timeout = org_kde_kwin_idle_get_idle_timeout(f->idle, f->seat, idle_timeout_ms);
        org_kde_kwin_idle_timeout_add_listener(f->idle_timeout, &idle_listener, f);
        if (idle_available) *idle_available = 1;
    }
    return f;
}

int bgtaskd_focus_wait(bgtaskd_focus *f, int timeout_ms) {
    struct wl_display *d = f->display;
    while (wl_display_prepare_read(d) != 0) {
        if (wl_display_dispatch_pending(d) < 0) return -1;
    }
    if (wl_display_flush(d) < 0 && errno != EAGAIN) {
        wl_display_cancel_read(d);
        return -1;
    }
    struct pollfd p[2] = { { .fd = wl_display_get_fd(d), .events = POLLIN }, { .fd = -1 } };
    if (f->bus) {
        p[1].fd = sd_bus_get_fd(f->bus);
        int ev = sd_bus_get_events(f->bus);
        p[1].events = (short)(ev > 0 ? ev : POLLIN);
        uint64_t usec = UINT64_MAX;
        /* sd-bus may have queued messages or a timeout of its own (a pending call). */
        if (sd_bus_get_timeout(f->bus, &usec) >= 0 && usec == 0) timeout_ms = 0;
    }
    int n = poll(p, f->bus ? 2 : 1, timeout_ms);
    if (n > 0 && (p[0].revents & (POLLIN | POLLERR | POLLHUP))) {
        if (wl_display_read_events(d) < 0) return -1;
    } else {
        wl_display_cancel_read(d);
        if (n < 0 && errno != EINTR) return -1;
    }
    if (wl_display_dispatch_pending(d) < 0) return -1;
    if (f->bus) session_process(f);
    return f->finished ? -1 : 0;
}

void bgtaskd_focus_destroy(bgtaskd_focus *f) {
    if (!f) return;
    session_close(f);
    while (f->outputs) {
        struct output *out = f->outputs;
        f->outputs = out->next;
        wl_output_destroy(out->output);
        free(out->name);
        free(out);
    }
    if (f->idle_timeout) org_kde_kwin_idle_timeout_release(f->idle_timeout);
    if (f->idle) org_kde_kwin_idle_destroy(f->idle);
    if (f->seat) wl_seat_destroy(f->seat);
    if (f->manager) zwlr_foreign_toplevel_manager_v1_destroy(f->manager);
    if (f->registry) wl_registry_destroy(f->registry);
    if (f->display) wl_display_disconnect(f->display);
    free(f);
}
