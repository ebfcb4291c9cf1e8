#include "bgtaskd_notify.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#define SERVER "org.freedesktop.Notifications"
#define PATH "/org/freedesktop/Notifications"

struct bgtaskd_notify {
    sd_bus *bus;
    bgtaskd_notify_callback callback;
    bgtaskd_notify_server_callback server_callback;
    void *context;
};

static int on_action(sd_bus_message *m, void *userdata, sd_bus_error *e) {
    (void)e;
    struct bgtaskd_notify *n = userdata;
    uint32_t id = 0;
    const char *key = NULL;
    if (sd_bus_message_read(m, "us", &id, &key) >= 0 && key) n->callback(n->context, id, key, 0);
    return 0;
}

static int on_closed(sd_bus_message *m, void *userdata, sd_bus_error *e) {
    (void)e;
    struct bgtaskd_notify *n = userdata;
    uint32_t id = 0, reason = 0;
    if (sd_bus_message_read(m, "uu", &id, &reason) >= 0) n->callback(n->context, id, NULL, reason);
    return 0;
}

static int on_owner(sd_bus_message *m, void *userdata, sd_bus_error *e) {
    (void)e;
    struct bgtaskd_notify *n = userdata;
    const char *name = NULL, *old_owner = NULL, *new_owner = NULL;
    if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) >= 0 && name && strcmp(name, SERVER) == 0)
        n->server_callback(n->context, new_owner && *new_owner);
    return 0;
}

bgtaskd_notify *bgtaskd_notify_open(const char *address, bgtaskd_notify_callback callback,
                                    bgtaskd_notify_server_callback server_callback, void *context, char *error,
                                    size_t error_size) {
    struct bgtaskd_notify *n = calloc(1, sizeof *n);
    if (!n) {
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    n->callback = callback;
    n->server_callback = server_callback;
    n->context = context;
    const char *env = getenv("DBUS_SESSION_BUS_ADDRESS");
    const char *use = address && *address ? address : (env && *env ? env : NULL);
    int r;
    if (use) {
        r = sd_bus_new(&n->bus);
        if (r >= 0) r = sd_bus_set_address(n->bus, use);
        if (r >= 0) r = sd_bus_set_bus_client(n->bus, 1);
        if (r >= 0) r = sd_bus_start(n->bus);
    } else {
        r = sd_bus_open_user(&n->bus);
    }
    if (r >= 0) r = sd_bus_match_signal(n->bus, NULL, NULL, PATH, SERVER, "ActionInvoked", on_action, n);
    if (r >= 0) r = sd_bus_match_signal(n->bus, NULL, NULL, PATH, SERVER, "NotificationClosed", on_closed, n);
    if (r >= 0)
        r = sd_bus_add_match(n->bus, NULL,
                             "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"
                             "member='NameOwnerChanged',arg0='" SERVER "'",
                             on_owner, n);
    if (r < 0) {
        snprintf(error, error_size, "cannot connect to the session bus%s%s: %s", use ? " " : "", use ? use : "",
                 strerror(-r));
        bgtaskd_notify_destroy(n);
        return NULL;
    }
    return n;
}

uint32_t bgtaskd_notify_show(bgtaskd_notify *n, const char *app_name, uint32_t replaces_id, const char *summary,
                             const char *body, int32_t percent, const char *cancel_label, char *error,
                             size_t error_size) {
    sd_bus_message *m = NULL, *reply = NULL;
    sd_bus_error e = SD_BUS_ERROR_NULL;
    uint32_t id = 0;
    int r = sd_bus_message_new_method_call(n->bus, &m, SERVER, PATH, SERVER, "Notify");
    if (r >= 0) r = sd_bus_message_append(m, "susss", app_name, replaces_id, "", summary, body);
    if (r >= 0) r = sd_bus_message_append(m, "as", 2, "cancel", cancel_label);
    if (r >= 0) r = sd_bus_message_open_container(m, 'a', "{sv}");
    if (r >= 0 && percent >= 0) r = sd_bus_message_append(m, "{sv}", "value", "i", percent);
    if (r >= 0) r = sd_bus_message_append(m, "{sv}", "resident", "b", 1);
    if (r >= 0) r = sd_bus_message_append(m, "{sv}", "urgency", "y", (uint8_t)0);
    if (r >= 0) r = sd_bus_message_close_container(m);
    if (r >= 0) r = sd_bus_message_append(m, "i", (int32_t)0);
    if (r >= 0) r = sd_bus_call(n->bus, m, 5 * 1000 * 1000, &e, &reply);
    if (r >= 0) r = sd_bus_message_read(reply, "u", &id);
    if (r < 0) {
        snprintf(error, error_size, "%s", e.name ? e.name : strerror(-r));
        id = 0;
    }
    sd_bus_error_free(&e);
    sd_bus_message_unref(reply);
    sd_bus_message_unref(m);
    return id;
}

int bgtaskd_notify_close(bgtaskd_notify *n, uint32_t id, char *error, size_t error_size) {
    sd_bus_error e = SD_BUS_ERROR_NULL;
    int r = sd_bus_call_method(n->bus, SERVER, PATH, SERVER, "CloseNotification", &e, NULL, "u", id);
    if (r < 0) snprintf(error, error_size, "%s", e.name ? e.name : strerror(-r));
    sd_bus_error_free(&e);
    return r < 0 ? -1 : 0;
}

int bgtaskd_notify_wait(bgtaskd_notify *n, int wake_fd, int timeout_ms) {
    for (;;) {
        int r = sd_bus_process(n->bus, NULL);
        if (r < 0) return -1;
        if (r == 0) break;
    }
    struct pollfd p[2] = { { .fd = sd_bus_get_fd(n->bus), .events = POLLIN }, { .fd = wake_fd, .events = POLLIN } };
    int count = wake_fd >= 0 ? 2 : 1;
    int r = poll(p, (nfds_t)count, timeout_ms);
    if (r < 0 && errno != EINTR) return -1;
    if (r > 0 && (p[0].revents & (POLLERR | POLLHUP)) && !(p[0].revents & POLLIN)) return -1;
    return (count == 2 && r > 0 && (p[1].revents & POLLIN)) ? 1 : 0;
}

void bgtaskd_notify_destroy(bgtaskd_notify *n) {
    if (!n) return;
    if (n->bus) sd_bus_flush_close_unref(n->bus);
    free(n);
}
