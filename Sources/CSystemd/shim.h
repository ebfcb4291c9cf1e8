#ifndef BGTASKD_CSYSTEMD_SHIM_H
#define BGTASKD_CSYSTEMD_SHIM_H

/* We pass CODE_FILE/CODE_LINE/CODE_FUNC ourselves; the location macros do not import into Swift. */
#define SD_JOURNAL_SUPPRESS_LOCATION 1
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
/* mallopt(M_ARENA_MAX) and malloc_trim: the daemon's memory at rest (Daemon.swift). */
#include <malloc.h>

/* Glibc only declares struct ucred under _GNU_SOURCE, which Swift's Glibc module does not set. */
struct bgtaskd_ucred {
    pid_t pid;
    uid_t uid;
    gid_t gid;
};


#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>


/* pidfd_open(2): a descriptor that becomes readable when the process exits (any process, not only
 * children). -errno on failure. */
static inline int bgtaskd_pidfd_open(pid_t pid) {
    long r = syscall(SYS_pidfd_open, pid, 0);
    return r < 0 ? -errno : (int)r;
}

/* prctl(PR_SET_CHILD_SUBREAPER): orphans of this process's descendants re-parent to it instead of init
 * (prctl is variadic, which Swift cannot call). -errno on failure. */
static inline int bgtaskd_set_child_subreaper(void) {
    return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0 ? -errno : 0;
}

/* pidfd_open(2) of one thread (PIDFD_THREAD, which is O_EXCL; Linux 6.9): readable when that thread
 * exits. The tests wait on it for the socket thread's end. -errno on failure. */
static inline int bgtaskd_thread_pidfd_open(pid_t tid) {
    long r = syscall(SYS_pidfd_open, tid, O_EXCL);
    return r < 0 ? -errno : (int)r;
}

/* --- Privilege separation (bgtaskd-launcher) ------------------------------------------------------- */

#include <sys/stat.h>

#ifndef MSG_CMSG_CLOEXEC
#define MSG_CMSG_CLOEXEC 0x40000000
#endif

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* Closes every descriptor from `from` to `to` (inclusive): close_range(2), or one by one where the
 * kernel lacks it (before 5.9). */
static inline void bgtaskd_close_range(unsigned int from, unsigned int to) {
    if (from > to) return;
    if (syscall(SYS_close_range, from, to, 0) == 0) return;
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536) max = 65536;
    for (long fd = from; fd <= (long)to && fd < max; fd++) close((int)fd);
}

/* Closes every descriptor above 2 except `keep_a` and `keep_b` (-1: none). For a freshly forked child. */
static inline void bgtaskd_close_all_but(int keep_a, int keep_b) {
    int lo = keep_a < keep_b ? keep_a : keep_b, hi = keep_a < keep_b ? keep_b : keep_a;
    unsigned int next = 3;
    int keep[2] = { lo, hi };
    for (int i = 0; i < 2; i++) {
        if (keep[i] < (int)next) continue;
        bgtaskd_close_range(next, (unsigned int)keep[i] - 1);
        next = (unsigned int)keep[i] + 1;
    }
    bgtaskd_close_range(next, ~0U);
}

/* Which step of bgtaskd_spawn_app failed (reported in *stage). */
enum {
    BGTASKD_SPAWN_SETUP = 0,  /* the clone in the parent */
    BGTASKD_SPAWN_CGROUP = 1, /* joining the app's cgroup */
    BGTASKD_SPAWN_USER = 2,   /* setgroups, setgid, setuid */
    BGTASKD_SPAWN_CWD = 3,    /* chdir to the working directory */
    BGTASKD_SPAWN_EXEC = 4,   /* execve */
};

/* --- Launching an app without forking the spawner (issue 15) ----------------------------------------
 *
 * bgtaskd_spawn_app starts the child with clone3(CLONE_VM | CLONE_VFORK | CLONE_INTO_CGROUP) on a stack
 * of its own, as posix_spawn does: nothing of the spawner's memory is copied (no page tables, no
 * copy-on-write faults afterwards), and the child is born in the app's cgroup — no migration through
 * cgroup.procs, which takes the cgroup threadgroup lock for writing. The spawner's thread sleeps until
 * the child has exec'd or exited (CLONE_VFORK). Where clone3 is missing (ENOSYS, E2BIG: kernels before
 * 5.7, a seccomp filter) or on another architecture than x86-64, vfork(2) with the same child; then the
 * child joins the cgroup by writing "0" into cgroup_procs_fd, as before.
 *
 * The child shares the spawner's memory, so it only makes system calls (async-signal-safe): no malloc,
 * no locks, no glibc set*id wrappers (in a multi-threaded spawner those signal every thread of the
 * spawner to change its credentials too — raw syscalls change the child's alone). Every signal is
 * blocked in the spawning thread around the clone, and the child resets every handler to SIG_DFL before
 * unblocking, so that no handler of the spawner ever runs in the child. It reports a failed step
 * through the shared memory of `struct bgtaskd_spawn_context`. */

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>

struct bgtaskd_clone_args {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size, cgroup;
};
#define BGTASKD_CLONE_VM 0x00000100ULL
#define BGTASKD_CLONE_VFORK 0x00004000ULL
#define BGTASKD_CLONE_INTO_CGROUP 0x200000000ULL
#define BGTASKD_SPAWN_STACK (64 * 1024)
#ifndef SYS_clone3
#define SYS_clone3 435
#endif

struct bgtaskd_spawn_context {
    const char *path;
    char *const *argv;
    char *const *envp;
    const char *cwd;
    uid_t uid;
    gid_t gid;
    int set_ids;
    /* >= 0: the child writes "0" into it (vfork path); -1: born in the cgroup already, or none. */
    int cgroup_procs_fd;
    volatile int stage;
    volatile int error;
    /* Set by the child's first instruction: a child that never ran was killed at birth. */
    volatile int started;
};

/* The child: system calls only; never returns (exec or _exit). */
static int bgtaskd_spawn_child(void *arg) {
    struct bgtaskd_spawn_context *c = (struct bgtaskd_spawn_context *)arg;
    c->started = 1;
    /* issue 11: first of all, nothing of the spawner's survives into the app: every descriptor above 2
     * but the one the child still needs is closed now, not at exec (close-on-exec alone left the
     * spawner's listening socket open in the child until then). The child has its own descriptor
     * table (no CLONE_FILES). */
    bgtaskd_close_all_but(c->cgroup_procs_fd, -1);
    /* Default dispositions (an ignored SIGPIPE is not passed on), then an empty mask. */
    for (int s = 1; s < 65; s++) if (s != SIGKILL && s != SIGSTOP) signal(s, SIG_DFL);
    uint64_t none = 0;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, (void *)0, sizeof none);
    syscall(SYS_setsid);
    syscall(SYS_umask, 022);
    c->stage = BGTASKD_SPAWN_CGROUP;
    if (c->cgroup_procs_fd >= 0) {
        if (write(c->cgroup_procs_fd, "0", 1) != 1) { c->error = errno; _exit(127); }
        close(c->cgroup_procs_fd);
    }
    syscall(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    c->stage = BGTASKD_SPAWN_USER;
    if (c->set_ids) {
        gid_t groups[1] = { c->gid };
        if (syscall(SYS_setgroups, 1, groups) != 0 && errno != EPERM) { c->error = errno; _exit(127); }
        if (syscall(SYS_setgid, c->gid) != 0) { c->error = errno; _exit(127); }
        if (syscall(SYS_setuid, c->uid) != 0) { c->error = errno; _exit(127); }
    }
    c->stage = BGTASKD_SPAWN_CWD;
    if (c->cwd && chdir(c->cwd) != 0) { c->error = errno; _exit(127); }
    c->stage = BGTASKD_SPAWN_EXEC;
    execve(c->path, c->argv, c->envp);
    c->error = errno ? errno : EIO;
    _exit(127);
}

#if defined(__x86_64__)
/* clone3(args) whose child runs fn(arg) on args->stack and exits with its result; the parent gets the
 * pid or -errno. In assembly because the child starts on a fresh stack right after the syscall
 * instruction (as glibc's clone does): r12 and r13 carry fn and arg across it. */
static inline long bgtaskd_clone3_run(struct bgtaskd_clone_args *args, int (*fn)(void *), void *arg) {
    register long rax __asm__("rax") = SYS_clone3;
    register struct bgtaskd_clone_args *rdi __asm__("rdi") = args;
    register unsigned long rsi __asm__("rsi") = sizeof *args;
    register int (*r12)(void *) __asm__("r12") = fn;
    register void *r13 __asm__("r13") = arg;
    __asm__ volatile(
        "syscall\n\t"
        "testq %%rax, %%rax\n\t"
        "jnz 1f\n\t"
        "xorl %%ebp, %%ebp\n\t"
        "movq %%r13, %%rdi\n\t"
        "callq *%%r12\n\t"
        "movl %%eax, %%edi\n\t"
        "movl $60, %%eax\n\t"
        "syscall\n\t"
        "hlt\n"
        "1:\n\t"
        : "+r"(rax)
        : "r"(rdi), "r"(rsi), "r"(r12), "r"(r13)
        : "rcx", "r11", "memory", "cc");
    return rax;
}
#endif

/* The directory of the cgroup.procs file open as fd (for CLONE_INTO_CGROUP), or -1. */
static inline int bgtaskd_cgroup_dir_of_procs_fd(int fd) {
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    const char *suffix = "/cgroup.procs";
    size_t ls = strlen(suffix);
    if (n <= (ssize_t)ls) return -1;
    path[n] = 0;
    if (strcmp(path + n - ls, suffix) != 0) return -1;
    path[n - ls] = 0;
    return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}


/* The stack a spawn's child runs on until it execs. One is kept and reused: the spawning thread sleeps until
 * its child has exec'd or exited (CLONE_VFORK), so the stack is free again when the spawn returns. No mmap and
 * munmap per launch (the munmap's TLB flush interrupts every CPU the spawner's threads ran on) and no fresh
 * pages for the child to fault in. A spawn on another thread while the kept one is in use maps its own. */
struct bgtaskd_spawn_stack_store {
    pthread_mutex_t lock;
    void *stack;
};

static inline struct bgtaskd_spawn_stack_store *bgtaskd_spawn_stack_store(void) {
    static struct bgtaskd_spawn_stack_store store = { PTHREAD_MUTEX_INITIALIZER, (void *)0 };
    return &store;
}

/* A stack for one spawn (NULL if none can be mapped); *kept says it is the kept one. */
static inline void *bgtaskd_spawn_stack_take(int *kept) {
    struct bgtaskd_spawn_stack_store *k = bgtaskd_spawn_stack_store();
    *kept = 0;
    if (pthread_mutex_trylock(&k->lock) == 0) {
        if (!k->stack) {
            void *s = mmap((void *)0, BGTASKD_SPAWN_STACK, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
            if (s != MAP_FAILED) k->stack = s;
        }
        if (k->stack) {
            *kept = 1;
            return k->stack;
        }
        pthread_mutex_unlock(&k->lock);
    }
    void *s = mmap((void *)0, BGTASKD_SPAWN_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    return s == MAP_FAILED ? (void *)0 : s;
}

/* Gives back what bgtaskd_spawn_stack_take returned: the kept stack stays mapped for the next spawn. */
static inline void bgtaskd_spawn_stack_give(void *stack, int kept) {
    if (kept) pthread_mutex_unlock(&bgtaskd_spawn_stack_store()->lock);
    else munmap(stack, BGTASKD_SPAWN_STACK);
}

/* Starts path with the app's umask (0022, whatever the spawner's own UMask=), the failing step reported
 * in *stage so that a cgroup failure can be told from an exec failure. In the child: no descriptor but
 * 0-2, default signals and an empty mask, a new session, the app's cgroup (cgroup_procs_fd >= 0: born
 * in the directory holding it), no ambient capabilities, gid/groups/uid when set_ids, the working
 * directory, exec. Returns the pid, or -errno. */
static inline pid_t bgtaskd_spawn_app(const char *path, char *const argv[], char *const envp[], const char *cwd,
                                      uid_t uid, gid_t gid, int set_ids, int cgroup_procs_fd, int *stage) {
    struct bgtaskd_spawn_context c;
    memset(&c, 0, sizeof c);
    c.path = path; c.argv = argv; c.envp = envp; c.cwd = cwd;
    c.uid = uid; c.gid = gid; c.set_ids = set_ids;
    c.cgroup_procs_fd = cgroup_procs_fd;
    c.stage = BGTASKD_SPAWN_SETUP;
    *stage = BGTASKD_SPAWN_SETUP;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    long pid = -ENOSYS;
#if defined(__x86_64__)
    int kept;
    void *stack = bgtaskd_spawn_stack_take(&kept);
    if (stack) {
        struct bgtaskd_clone_args a;
        int dir = cgroup_procs_fd >= 0 ? bgtaskd_cgroup_dir_of_procs_fd(cgroup_procs_fd) : -1;
        memset(&a, 0, sizeof a);
        a.exit_signal = SIGCHLD;
        a.stack = (uint64_t)(uintptr_t)stack;
        a.stack_size = BGTASKD_SPAWN_STACK;
        if (dir >= 0) {
            a.flags = BGTASKD_CLONE_VM | BGTASKD_CLONE_VFORK | BGTASKD_CLONE_INTO_CGROUP;
            a.cgroup = (uint64_t)dir;
            c.cgroup_procs_fd = -1;
            pid = bgtaskd_clone3_run(&a, bgtaskd_spawn_child, &c);
            close(dir);
            if (pid > 0 && !c.started) {
                /* Killed before its first instruction. Kernels with cgroup kill_seq (6.14 on) compare the
                 * sequence of the spawner's cgroup at the start of the clone with the one of the
                 * child's new cgroup at its end, so a child cloned into a cgroup that was ever
                 * killed (cgroup.kill: the app's previous run) gets SIGKILL at birth (seen on 6.18).
                 * Joining by cgroup.procs has no such check: do that instead. */
                int status;
                while (waitpid((pid_t)pid, &status, 0) < 0 && errno == EINTR) {}
                pid = -EAGAIN;
            }
        }
        if (dir < 0 || (pid < 0 && pid != -ENOSYS && pid != -E2BIG)) {
            /* No directory, or the kernel refused the cgroup (EBUSY, EOPNOTSUPP, EACCES...): the child
             * writes cgroup.procs itself, which reports the failure at the cgroup step as before. */
            a.flags = BGTASKD_CLONE_VM | BGTASKD_CLONE_VFORK;
            a.cgroup = 0;
            c.cgroup_procs_fd = cgroup_procs_fd;
            c.stage = BGTASKD_SPAWN_SETUP;
            c.error = 0;
            c.started = 0;
            pid = bgtaskd_clone3_run(&a, bgtaskd_spawn_child, &c);
        }
        bgtaskd_spawn_stack_give(stack, kept);
    }
#endif
    if (pid == -ENOSYS || pid == -E2BIG) {
        c.cgroup_procs_fd = cgroup_procs_fd;
        c.stage = BGTASKD_SPAWN_SETUP;
        c.error = 0;
        pid = vfork();
        if (pid == 0) bgtaskd_spawn_child(&c);
        if (pid < 0) pid = -errno;
    }
    pthread_sigmask(SIG_SETMASK, &old, (sigset_t *)0);
    if (pid < 0) return (pid_t)pid;
    if (c.error != 0) {
        int status;
        while (waitpid((pid_t)pid, &status, 0) < 0 && errno == EINTR) {}
        *stage = c.stage;
        return -c.error;
    }
    return (pid_t)pid;
}

/* sendmsg(2) of buf with fd (when >= 0) attached as SCM_RIGHTS; MSG_NOSIGNAL. Bytes sent, or -errno. */
static inline ssize_t bgtaskd_send_with_fd(int sock, const void *buf, size_t len, int fd) {
    struct iovec iov = { (void *)buf, len };
    union { char bytes[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } control;
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (fd >= 0) {
        memset(&control, 0, sizeof control);
        msg.msg_control = control.bytes;
        msg.msg_controllen = sizeof control.bytes;
        struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
        cmsg->cmsg_level = SOL_SOCKET;
        cmsg->cmsg_type = SCM_RIGHTS;
        cmsg->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cmsg), &fd, sizeof fd);
    }
    ssize_t n;
    do { n = sendmsg(sock, &msg, MSG_NOSIGNAL); } while (n < 0 && errno == EINTR);
    return n < 0 ? -errno : n;
}

/* recvmsg(2) without blocking: up to len bytes into buf, and the SCM_RIGHTS descriptors that came with
 * them (close-on-exec) into fds, at most max_fds (the rest are closed); *nfds says how many. Bytes
 * received (0 at EOF), or -errno. */
static inline ssize_t bgtaskd_recv_with_fds(int sock, void *buf, size_t len, int *fds, int max_fds, int *nfds) {
    struct iovec iov = { buf, len };
    union { char bytes[CMSG_SPACE(sizeof(int) * 8)]; struct cmsghdr align; } control;
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    memset(&control, 0, sizeof control);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.bytes;
    msg.msg_controllen = sizeof control.bytes;
    *nfds = 0;
    ssize_t n;
    do { n = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC); } while (n < 0 && errno == EINTR);
    if (n < 0) return -errno;
    for (struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg); cmsg; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
        if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) continue;
        size_t count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int), sizeof fd);
            if (*nfds < max_fds) fds[(*nfds)++] = fd; else close(fd);
        }
    }
    return n;
}

/* 1 when fd is a directory of the cgroup2 file system (fstatfs: CGROUP2_SUPER_MAGIC), 0 when not, -errno. */
#include <sys/vfs.h>
static inline int bgtaskd_is_cgroup2_fd(int fd) {
    struct statfs fs;
    if (fstatfs(fd, &fs) != 0) return -errno;
    return fs.f_type == 0x63677270 ? 1 : 0;
}

#endif
