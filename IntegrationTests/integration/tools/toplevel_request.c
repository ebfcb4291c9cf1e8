/* toplevel_request: asks the compositor, through wlr-foreign-toplevel-management, to minimize, unminimize,
 * activate or close the toplevel whose app_id and title are given, as a task bar does:
 *     toplevel_request minimize|unminimize|activate|close APP_ID TITLE
 * Exit status 0 once the compositor reports the requested state (minimized set or cleared, activated, closed),
 * 2 when no such toplevel exists, 3 when the compositor does not honour the request within 5 s, 1 on other errors.
 * Built by IntegrationTests/integration/test_focus_minimize.py with cc and wayland-scanner from
 * protocols/wlr-foreign-toplevel-management-unstable-v1.xml. */
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wayland-client.h>
#include "wlr-foreign-toplevel-management-unstable-v1-client-protocol.h"

struct toplevel {
    struct zwlr_foreign_toplevel_handle_v1 *handle;
    char *app_id, *title;
    int minimized, activated, done;
    struct toplevel *next;
};

static struct zwlr_foreign_toplevel_manager_v1 *manager;
static struct wl_seat *seat;
static struct toplevel *toplevels;

static void on_title(void *data, struct zwlr_foreign_toplevel_handle_v1 *h, const char *title) {
    struct toplevel *t = data;
    free(t->title);
    t->title = strdup(title);
}

static void on_app_id(void *data, struct zwlr_foreign_toplevel_handle_v1 *h, const char *app_id) {
    struct toplevel *t = data;
    free(t->app_id);
    t->app_id = strdup(app_id);
}

static void on_output(void *data, struct zwlr_foreign_toplevel_handle_v1 *h, struct wl_output *o) {}

static void on_state(void *data, struct zwlr_foreign_toplevel_handle_v1 *h, struct wl_array *states) {
    struct toplevel *t = data;
    uint32_t *s;
    t->minimized = t->activated = 0;
    wl_array_for_each(s, states) {
        if (*s == ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_MINIMIZED) t->minimized = 1;
        if (*s == ZWLR_FOREIGN_TOPLEVEL_HANDLE_V1_STATE_ACTIVATED) t->activated = 1;
    }
}

static void on_done(void *data, struct zwlr_foreign_toplevel_handle_v1 *h) { ((struct toplevel *)data)->done++; }
static void on_closed(void *data, struct zwlr_foreign_toplevel_handle_v1 *h) { ((struct toplevel *)data)->handle = NULL; }
static void on_parent(void *data, struct zwlr_foreign_toplevel_handle_v1 *h, struct zwlr_foreign_toplevel_handle_v1 *p) {}

static const struct zwlr_foreign_toplevel_handle_v1_listener handle_listener = {
    .title = on_title, .app_id = on_app_id, .output_enter = on_output, .output_leave = on_output,
    .state = on_state, .done = on_done, .closed = on_closed, .parent = on_parent,
};

static void on_toplevel(void *data, struct zwlr_foreign_toplevel_manager_v1 *m, struct zwlr_foreign_toplevel_handle_v1 *h) {
    struct toplevel *t = calloc(1, sizeof *t);
    if (!t) return;
    t->handle = h;
    t->next = toplevels;
    toplevels = t;
    zwlr_foreign_toplevel_handle_v1_add_listener(h, &handle_listener, t);
}

static void on_finished(void *data, struct zwlr_foreign_toplevel_manager_v1 *m) {}

static const struct zwlr_foreign_toplevel_manager_v1_listener manager_listener = {
    .toplevel = on_toplevel, .finished = on_finished,
};

static void on_global(void *data, struct wl_registry *r, uint32_t name, const char *iface, uint32_t version) {
    if (strcmp(iface, zwlr_foreign_toplevel_manager_v1_interface.name) == 0) {
        manager = wl_registry_bind(r, name, &zwlr_foreign_toplevel_manager_v1_interface, version < 3 ? version : 3);
        zwlr_foreign_toplevel_manager_v1_add_listener(manager, &manager_listener, NULL);
    } else if (strcmp(iface, wl_seat_interface.name) == 0 && !seat) {
        seat = wl_registry_bind(r, name, &wl_seat_interface, 1);
    }
}

static void on_global_remove(void *data, struct wl_registry *r, uint32_t name) {}

static const struct wl_registry_listener registry_listener = { .global = on_global, .global_remove = on_global_remove };

static int reached(const struct toplevel *t, const char *what) {
    if (strcmp(what, "close") == 0) return t->handle == NULL;
    if (strcmp(what, "minimize") == 0) return t->minimized;
    if (strcmp(what, "unminimize") == 0) return !t->minimized;
    return t->activated;
}

int main(int argc, char **argv) {
    if (argc != 4 || (strcmp(argv[1], "minimize") && strcmp(argv[1], "unminimize") && strcmp(argv[1], "activate") &&
                      strcmp(argv[1], "close"))) {
        fprintf(stderr, "usage: %s minimize|unminimize|activate|close APP_ID TITLE\n", argv[0]);
        return 1;
    }
    struct wl_display *display = wl_display_connect(NULL);
    if (!display) {
        fprintf(stderr, "toplevel_request: cannot connect to the Wayland display\n");
        return 1;
    }
    struct wl_registry *registry = wl_display_get_registry(display);
    wl_registry_add_listener(registry, &registry_listener, NULL);
    wl_display_roundtrip(display);
    if (!manager) {
        fprintf(stderr, "toplevel_request: the compositor has no zwlr_foreign_toplevel_manager_v1\n");
        return 1;
    }
    wl_display_roundtrip(display);  /* the toplevels and their first state */
    wl_display_roundtrip(display);
    struct toplevel *target = NULL;
    for (struct toplevel *t = toplevels; t; t = t->next)
        if (t->handle && t->app_id && t->title && !strcmp(t->app_id, argv[2]) && !strcmp(t->title, argv[3])) target = t;
    if (!target) {
        fprintf(stderr, "toplevel_request: no toplevel with app_id %s and title %s\n", argv[2], argv[3]);
        return 2;
    }
    if (!strcmp(argv[1], "minimize")) zwlr_foreign_toplevel_handle_v1_set_minimized(target->handle);
    else if (!strcmp(argv[1], "unminimize")) zwlr_foreign_toplevel_handle_v1_unset_minimized(target->handle);
    else if (!strcmp(argv[1], "close")) zwlr_foreign_toplevel_handle_v1_close(target->handle);
    else if (seat) zwlr_foreign_toplevel_handle_v1_activate(target->handle, seat);
    else {
        fprintf(stderr, "toplevel_request: the compositor has no wl_seat to activate with\n");
        return 1;
    }
    /* The compositor answers with a state event and done: wait for them at most 5 s. */
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    struct pollfd pfd = { .fd = wl_display_get_fd(display), .events = POLLIN };
    while (!reached(target, argv[1]) && (target->handle || !strcmp(argv[1], "close"))) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        long left = 5000 - ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000);
        if (left <= 0) break;
        while (wl_display_prepare_read(display) != 0) wl_display_dispatch_pending(display);
        wl_display_flush(display);
        if (poll(&pfd, 1, (int)left) <= 0) {
            wl_display_cancel_read(display);
            break;
        }
        if (wl_display_read_events(display) < 0 || wl_display_dispatch_pending(display) < 0) return 1;
    }
    if (!reached(target, argv[1]) || (!target->handle && strcmp(argv[1], "close"))) {
        fprintf(stderr, "toplevel_request: the compositor did not honour %s (minimized=%d activated=%d)\n",
                argv[1], target->minimized, target->activated);
        return 3;
    }
    printf("%s %s %s: minimized=%d activated=%d\n", argv[1], argv[2], argv[3], target->minimized, target->activated);
    wl_display_disconnect(display);
    return 0;
}
