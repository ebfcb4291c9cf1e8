#ifndef BGTASKD_TIMERFD_H
#define BGTASKD_TIMERFD_H

/* timerfd(2) for the daemon's QuietTimer: arming a timerfd is one system call on the arming thread and
   wakes nobody until it expires, where a Dispatch timer armed each time first wakes libdispatch's event
   thread (an eventfd write) to register it. Through syscall(2) with the kernel's 64-bit layout of
   struct itimerspec: including sys/timerfd.h here would declare struct timespec a second time, in this
   module, beside Glibc's. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

struct bgtaskd_itimerspec {
    int64_t interval_sec, interval_nsec, value_sec, value_nsec;
};

/* A one-shot CLOCK_MONOTONIC (1) timerfd, non-blocking and close-on-exec; -errno on failure. */
static inline int bgtaskd_timerfd_create(void) {
    int fd = (int)syscall(SYS_timerfd_create, 1, O_NONBLOCK | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* Arms `fd` to expire once, `ns` nanoseconds from now (ns > 0). Returns 0 or -errno. */
static inline int bgtaskd_timerfd_arm(int fd, int64_t ns) {
    struct bgtaskd_itimerspec spec = {0, 0, ns / 1000000000, ns % 1000000000};
    return syscall(SYS_timerfd_settime, fd, 0, &spec, (void *)0) == 0 ? 0 : -errno;
}

/* Reads (and so clears) the expirations of `fd`: their count, or 0 when none (EAGAIN). */
static inline uint64_t bgtaskd_timerfd_take(int fd) {
    uint64_t n = 0;
    return read(fd, &n, sizeof n) == (ssize_t)sizeof n ? n : 0;
}

#endif
