#ifndef BGTASKD_CSYSTEMD_SHIM_H
#define BGTASKD_CSYSTEMD_SHIM_H

/* We pass CODE_FILE/CODE_LINE/CODE_FUNC ourselves; the location macros do not import into Swift. */
#define SD_JOURNAL_SUPPRESS_LOCATION 1
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

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
    BGTASKD_SPAWN_SETUP = 0,  /* pipe or fork in the parent */
    BGTASKD_SPAWN_CGROUP = 1, /* writing the child's pid into cgroup.procs */
    BGTASKD_SPAWN_USER = 2,   /* setgroups, setgid, setuid */
    BGTASKD_SPAWN_CWD = 3,    /* chdir to the working directory */
    BGTASKD_SPAWN_EXEC = 4,   /* execve */
};

/* bgtaskd_spawn with the app's umask (0022, whatever the spawner's own UMask=) and the failing step
 * reported in *stage, so that a cgroup failure can be told from an exec failure. Same order in the
 * child: default signals and an empty mask, a new session, the cgroup (the child writes "0" into
 * cgroup_procs_fd when >= 0, before dropping privileges), no ambient capabilities, gid/groups/uid when
 * set_ids, the working directory, exec. Returns the pid, or -errno. */
static inline pid_t bgtaskd_spawn_app(const char *path, char *const argv[], char *const envp[], const char *cwd,
                                      uid_t uid, gid_t gid, int set_ids, int cgroup_procs_fd, int *stage) {
    int pfd[2];
    *stage = BGTASKD_SPAWN_SETUP;
    /* Close-on-exec from the start (pipe2; glibc declares it only under _GNU_SOURCE): another thread may fork meanwhile. */
    if (syscall(SYS_pipe2, pfd, O_CLOEXEC) != 0) return -errno;
    pid_t pid = fork();
    if (pid < 0) { int e = errno; close(pfd[0]); close(pfd[1]); return -e; }
    if (pid == 0) {
        int report[2] = { BGTASKD_SPAWN_CGROUP, 0 };
        /* issue 11: first of all, nothing of the spawner's survives into the app: every descriptor
         * above 2 but the two the child still needs is closed now, not at exec (close-on-exec alone
         * leaves the spawner's listening socket open in the child until then: a daemon restarted
         * meanwhile found it "still listening", its first client got ECONNRESET). */
        bgtaskd_close_all_but(pfd[1], cgroup_procs_fd);
        sigset_t none;
        sigemptyset(&none);
        for (int s = 1; s < 32; s++) if (s != SIGKILL && s != SIGSTOP) signal(s, SIG_DFL);
        sigprocmask(SIG_SETMASK, &none, 0);
        close(pfd[0]);
        setsid();
        umask(022);
        if (cgroup_procs_fd >= 0) {
            if (write(cgroup_procs_fd, "0", 1) != 1) { report[1] = errno; goto fail; }
            close(cgroup_procs_fd);
        }
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
        report[0] = BGTASKD_SPAWN_USER;
        if (set_ids) {
            if (setgroups(1, &gid) != 0 && errno != EPERM) { report[1] = errno; goto fail; }
            if (setgid(gid) != 0) { report[1] = errno; goto fail; }
            if (setuid(uid) != 0) { report[1] = errno; goto fail; }
        }
        report[0] = BGTASKD_SPAWN_CWD;
        if (cwd && chdir(cwd) != 0) { report[1] = errno; goto fail; }
        report[0] = BGTASKD_SPAWN_EXEC;
        execve(path, argv, envp);
        report[1] = errno;
    fail:
        (void)!write(pfd[1], report, sizeof report);
        _exit(127);
    }
    close(pfd[1]);
    int report[2] = { 0, 0 };
    ssize_t n;
    do { n = read(pfd[0], report, sizeof report); } while (n < 0 && errno == EINTR);
    close(pfd[0]);
    if (n == (ssize_t)sizeof report) {
        int status;
        waitpid(pid, &status, 0);
        *stage = report[0];
        return report[1] > 0 ? -report[1] : -EIO;
    }
    return pid;
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
