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

/* Starts an app: fork, then in the child (async-signal-safe calls only): default signal dispositions
 * and an empty mask (the daemon ignores SIGTERM/SIGHUP/SIGPIPE and ignored dispositions survive exec),
 * a new session, the app's cgroup (writes "0" to cgroup_procs_fd when >= 0), no ambient capabilities,
 * gid/groups/uid when set_ids, the working directory, exec. Returns the pid, or -errno when the
 * child could not exec (reported through a close-on-exec pipe). */
static inline pid_t bgtaskd_spawn(const char *path, char *const argv[], char *const envp[], const char *cwd,
                                  uid_t uid, gid_t gid, int set_ids, int cgroup_procs_fd) {
    int pfd[2];
    if (pipe(pfd) != 0) return -errno;
    fcntl(pfd[0], F_SETFD, FD_CLOEXEC);
    fcntl(pfd[1], F_SETFD, FD_CLOEXEC);
    pid_t pid = fork();
    if (pid < 0) { int e = errno; close(pfd[0]); close(pfd[1]); return -e; }
    if (pid == 0) {
        int err = 0;
        sigset_t none;
        sigemptyset(&none);
        for (int s = 1; s < 32; s++) if (s != SIGKILL && s != SIGSTOP) signal(s, SIG_DFL);
        sigprocmask(SIG_SETMASK, &none, 0);
        close(pfd[0]);
        setsid();
        if (cgroup_procs_fd >= 0) {
            if (write(cgroup_procs_fd, "0", 1) != 1) { err = errno; goto fail; }
            close(cgroup_procs_fd);
        }
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
        if (set_ids) {
            if (setgroups(1, &gid) != 0 && errno != EPERM) { err = errno; goto fail; }
            if (setgid(gid) != 0) { err = errno; goto fail; }
            if (setuid(uid) != 0) { err = errno; goto fail; }
        }
        if (cwd && chdir(cwd) != 0) { err = errno; goto fail; }
        execve(path, argv, envp);
        err = errno;
    fail:
        (void)!write(pfd[1], &err, sizeof err);
        _exit(127);
    }
    close(pfd[1]);
    int child_err = 0;
    ssize_t n;
    do { n = read(pfd[0], &child_err, sizeof child_err); } while (n < 0 && errno == EINTR);
    close(pfd[0]);
    if (n == (ssize_t)sizeof child_err) {
        int status;
        waitpid(pid, &status, 0);
        return -child_err;
    }
    return pid;
}

/* pidfd_open(2): a descriptor that becomes readable when the process exits (any process, not only
 * children). -errno on failure. */
static inline int bgtaskd_pidfd_open(pid_t pid) {
    long r = syscall(SYS_pidfd_open, pid, 0);
    return r < 0 ? -errno : (int)r;
}

#endif
