#ifndef BGTASKD_TIMERFD_H
#define BGTASKD_TIMERFD_H

/* timerfd(2) for the journal sink's batch window: arming a timerfd is one system call on the arming
   thread and wakes nobody until it expires, where a Dispatch timer armed per batch first wakes
   libdispatch's event thread (an eventfd write) to register it. Swift's Glibc module does not import
   sys/timerfd.h. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

/* A one-shot CLOCK_MONOTONIC timerfd, non-blocking and close-on-exec; -errno on failure. */
static inline int bgtaskd_timerfd_create(void) {
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* Arms `fd` to expire once, `ns` nanoseconds from now (ns > 0). Returns 0 or -errno. */
static inline int bgtaskd_timerfd_arm(int fd, int64_t ns) {
    struct itimerspec spec;
    memset(&spec, 0, sizeof spec);
    spec.it_value.tv_sec = ns / 1000000000;
    spec.it_value.tv_nsec = ns % 1000000000;
    return timerfd_settime(fd, 0, &spec, NULL) == 0 ? 0 : -errno;
}

/* Reads (and so clears) the expirations of `fd`: their count, or 0 when none (EAGAIN). */
static inline uint64_t bgtaskd_timerfd_take(int fd) {
    uint64_t n = 0;
    return read(fd, &n, sizeof n) == (ssize_t)sizeof n ? n : 0;
}

#endif
