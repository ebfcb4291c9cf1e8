// SPEC §14: logind over the system bus (sd-bus). sd-bus's variadic calls, wrapped with fixed arguments
// for Swift; everything else (sd_bus_process, sd_bus_get_fd, the match) Swift calls directly.
#ifndef BGTASKD_LOGIND_H
#define BGTASKD_LOGIND_H

#include <errno.h>
#include <fcntl.h>
#include <systemd/sd-bus.h>

/* org.freedesktop.login1.Manager.Inhibit(what, who, why, mode), asynchronously: `callback` gets the reply
 * (an error, or the inhibitor's fd: bgtaskd_bus_reply_fd). */
static inline int bgtaskd_logind_inhibit_async(sd_bus *bus, sd_bus_slot **slot, const char *what, const char *who,
                                               const char *why, const char *mode, sd_bus_message_handler_t callback,
                                               void *userdata) {
    return sd_bus_call_method_async(bus, slot, "org.freedesktop.login1", "/org/freedesktop/login1",
                                    "org.freedesktop.login1.Manager", "Inhibit", callback, userdata, "ssss", what,
                                    who, why, mode);
}

/* The fd a reply carries (type h), duplicated with O_CLOEXEC: the caller owns it. -errno on failure. */
static inline int bgtaskd_bus_reply_fd(sd_bus_message *m) {
    int fd = -1;
    int r = sd_bus_message_read(m, "h", &fd);
    if (r < 0) return r;
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    return copy < 0 ? -errno : copy;
}

/* A signal's one boolean argument (PrepareForSleep). */
static inline int bgtaskd_bus_read_bool(sd_bus_message *m, int *value) {
    return sd_bus_message_read(m, "b", value);
}

#endif
