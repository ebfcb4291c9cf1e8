#ifndef BGTASKD_EPOLL_H
#define BGTASKD_EPOLL_H

/* epoll(7) for the Varlink server: Swift's Glibc module does not import sys/epoll.h, and x86-64's
   struct epoll_event is packed, which Swift cannot lay out. These wrappers take and return plain
   values: a 64-bit token per registered descriptor and the event mask. */
#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline int bgtaskd_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

/* op: EPOLL_CTL_ADD / MOD / DEL. Returns 0 or -errno. */
static inline int bgtaskd_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t token) {
    struct epoll_event ev;
    ev.events = events;
    ev.data.u64 = token;
    return epoll_ctl(epfd, op, fd, &ev) == 0 ? 0 : -errno;
}

/* Waits up to timeout_ms (0: poll) for at most max events; fills tokens[i] and masks[i].
   Returns the count or -errno. */
static inline int bgtaskd_epoll_wait(int epfd, uint64_t *tokens, uint32_t *masks, int max, int timeout_ms) {
    struct epoll_event evs[256];
    if (max > 256) max = 256;
    int n = epoll_wait(epfd, evs, max, timeout_ms);
    if (n < 0) return -errno;
    for (int i = 0; i < n; i++) {
        tokens[i] = evs[i].data.u64;
        masks[i] = evs[i].events;
    }
    return n;
}

static const uint32_t BGTASKD_EPOLLIN = EPOLLIN;
static const uint32_t BGTASKD_EPOLLOUT = EPOLLOUT;
static const uint32_t BGTASKD_EPOLLERR = EPOLLERR;
static const uint32_t BGTASKD_EPOLLHUP = EPOLLHUP;
static const uint32_t BGTASKD_EPOLLET = EPOLLET;
static const int BGTASKD_EPOLL_CTL_ADD = EPOLL_CTL_ADD;
static const int BGTASKD_EPOLL_CTL_MOD = EPOLL_CTL_MOD;
static const int BGTASKD_EPOLL_CTL_DEL = EPOLL_CTL_DEL;

/* An eventfd (non-blocking, close-on-exec) that wakes the Varlink server's socket thread out of
   epoll_wait at shutdown; -errno on failure. */
static inline int bgtaskd_eventfd(void) {
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    return fd < 0 ? -errno : fd;
}

/* Adds one to an eventfd's counter (makes it readable). */
static inline void bgtaskd_eventfd_signal(int fd) {
    uint64_t one = 1;
    (void)!write(fd, &one, sizeof one);
}

/* The calling thread's id (gettid(2)). */
static inline int bgtaskd_gettid(void) { return (int)syscall(SYS_gettid); }

/* Names the calling thread (comm, 15 bytes at most): shown by top -H, perf and /proc/PID/task. */
static inline void bgtaskd_set_thread_name(const char *name) { prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0); }

/* accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK): glibc declares accept4 only under _GNU_SOURCE. */
static inline int bgtaskd_accept_nonblocking(int fd) {
    return (int)syscall(SYS_accept4, fd, (void *)0, (void *)0, SOCK_CLOEXEC | SOCK_NONBLOCK);
}

#endif
