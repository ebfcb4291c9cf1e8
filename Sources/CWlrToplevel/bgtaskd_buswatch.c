#include "bgtaskd_buswatch.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

struct bgtaskd_buswatch {
    sd_bus *monitor; /* BecomeMonitor: sees the calls */
    sd_bus *query;   /* an ordinary connection: GetConnectionUnixProcessID */
    bgtaskd_buswatch_callback callback;
    void *context;
};

static int connect_to(sd_bus **out, const char *address, int monitor) {
    sd_bus *b = NULL;
    int r = sd_bus_new(&b);
    if (r < 0) return r;
    if (address && *address) {
        r = sd_bus_set_address(b, address);
    } else {
        const char *env = getenv("DBUS_SESSION_BUS_ADDRESS");
        if (env && *env) {
            r = sd_bus_set_address(b, env);
        } else {
            sd_bus_unref(b);
            return monitor ? -ENOENT : sd_bus_open_user(out);
        }
    }
    if (r >= 0) r = sd_bus_set_bus_client(b, 1);
    if (r >= 0 && monitor) r = sd_bus_set_monitor(b, 1);
    if (r >= 0) r = sd_bus_start(b);
    if (r < 0) {
        sd_bus_unref(b);
        return r;
    }
    *out = b;
    return 0;
}

bgtaskd_buswatch *bgtaskd_buswatch_open(const char *address, bgtaskd_buswatch_callback callback, void *context,
                                        char *error, size_t error_size) {
    struct bgtaskd_buswatch *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    w->callback = callback;
    w->context = context;
    int r = connect_to(&w->query, address, 0);
    if (r >= 0) r = connect_to(&w->monitor, address, 1);
    if (r < 0) {
        snprintf(error, error_size, "cannot connect to the session bus%s%s: %s", address && *address ? " " : "",
                 address && *address ? address : "", strerror(-r));
        bgtaskd_buswatch_destroy(w);
        return NULL;
    }
    sd_bus_message *m = NULL;
    sd_bus_error e = SD_BUS_ERROR_NULL;
    r = sd_bus_message_new_method_call(w->monitor, &m, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                       "org.freedesktop.DBus.Monitoring", "BecomeMonitor");
    if (r >= 0) r = sd_bus_message_append(m, "as", 1, "type='method_call'");
    if (r >= 0) r = sd_bus_message_append(m, "u", (uint32_t)0);
    if (r >= 0) r = sd_bus_call(w->monitor, m, 0, &e, NULL);
    sd_bus_message_unref(m);
    if (r < 0) {
        snprintf(error, error_size, "the session bus refused BecomeMonitor: %s", e.message ? e.message : strerror(-r));
        sd_bus_error_free(&e);
        bgtaskd_buswatch_destroy(w);
        return NULL;
    }
    return w;
}

uint32_t bgtaskd_buswatch_owner_pid(struct bgtaskd_buswatch *w, const char *name) {
    sd_bus_message *reply = NULL;
    uint32_t pid = 0;
    if (sd_bus_call_method(w->query, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                           "GetConnectionUnixProcessID", NULL, &reply, "s", name) >= 0)
        (void)sd_bus_message_read(reply, "u", &pid);
    sd_bus_message_unref(reply);
    return pid;
}

static void seen(struct bgtaskd_buswatch *w, sd_bus_message *m) {
    uint8_t type = 0;
    if (sd_bus_message_get_type(m, &type) < 0 || type != SD_BUS_MESSAGE_METHOD_CALL) return;
    /* A call that expects no reply leaves no caller waiting. */
    if (!sd_bus_message_get_expect_reply(m)) return;
    const char *destination = sd_bus_message_get_destination(m);
    const char *sender = sd_bus_message_get_sender(m);
    const char *member = sd_bus_message_get_member(m);
    if (!destination || !member || strcmp(destination, "org.freedesktop.DBus") == 0) return;
    w->callback(w->context, destination, sender ? sender : "", member);
}

int bgtaskd_buswatch_wait(bgtaskd_buswatch *w, int timeout_ms) {
    for (;;) {
        sd_bus_message *m = NULL;
        int r = sd_bus_process(w->monitor, &m);
        if (r < 0) return -1;
        if (m) {
            seen(w, m);
            sd_bus_message_unref(m);
            continue;
        }
        if (r == 0) break;
    }
    struct pollfd p = { .fd = sd_bus_get_fd(w->monitor), .events = POLLIN };
    int n = poll(&p, 1, timeout_ms);
    if (n < 0 && errno != EINTR) return -1;
    if (n > 0 && (p.revents & (POLLERR | POLLHUP)) && !(p.revents & POLLIN)) return -1;
    return 0;
}

void bgtaskd_buswatch_destroy(bgtaskd_buswatch *w) {
    if (!w) return;
    if (w->monitor) sd_bus_close_unref(w->monitor);
    if (w->query) sd_bus_flush_close_unref(w->query);
    free(w);
}
