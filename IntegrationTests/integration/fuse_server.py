"""A tiny FUSE file system server speaking the kernel's protocol on /dev/fuse directly (no libfuse): one
read-only file, `file`, whose reads bypass the page cache (FOPEN_DIRECT_IO), so that every read waits for
this server. Stopped with SIGSTOP, it leaves a reader blocked in the kernel's `request_wait_answer`, where the
cgroup v2 freezer cannot stop it (the freeze that does not complete of SPEC §14).

Usage: fuse_server.py MOUNTPOINT READY_FILE. Meant to run in a mount namespace of its own
(`unshare -m --propagation private`): the mount goes away with the namespace. Writes READY_FILE once mounted.
"""

import ctypes
import errno
import os
import stat
import struct
import sys

CONTENT = b"hello from a FUSE server\n"
MS_NOSUID, MS_NODEV = 2, 4
FOPEN_DIRECT_IO = 1
LOOKUP, FORGET, GETATTR, OPEN, READ, STATFS, RELEASE, FLUSH, INIT, OPENDIR, READDIR, RELEASEDIR, INTERRUPT, \
    DESTROY, BATCH_FORGET = 1, 2, 3, 14, 15, 17, 18, 25, 26, 27, 28, 29, 36, 38, 42


def attr(ino: int, mode: int, size: int) -> bytes:
    # struct fuse_attr: ino size blocks atime mtime ctime (u64), atimensec mtimensec ctimensec mode nlink uid
    # gid rdev blksize flags (u32): 88 bytes.
    return struct.pack("<QQQQQQIIIIIIIIII", ino, size, 0, 0, 0, 0, 0, 0, 0, mode, 1, 0, 0, 0, 4096, 0)


def node_attr(ino: int) -> bytes:
    if ino == 1:
        return attr(1, stat.S_IFDIR | 0o755, 0)
    return attr(2, stat.S_IFREG | 0o444, len(CONTENT))


def main():
    mountpoint, ready = sys.argv[1], sys.argv[2]
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open("/dev/fuse", os.O_RDWR)
    options = f"fd={fd},rootmode=40000,user_id=0,group_id=0,allow_other".encode()
    if libc.mount(b"bgtaskd-test", mountpoint.encode(), b"fuse", MS_NOSUID | MS_NODEV, options) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mount fuse on {mountpoint}: {os.strerror(e)}")
    with open(ready, "w") as f:
        f.write(str(os.getpid()))

    def reply(unique: int, data: bytes = b"", error: int = 0):
        os.write(fd, struct.pack("<IiQ", 16 + len(data), -error, unique) + data)

    while True:
        try:
            buf = os.read(fd, (1 << 20) + 4096)
        except OSError as e:
            if e.errno in (errno.EINTR, errno.EAGAIN, errno.ENOENT):
                continue
            if e.errno == errno.ENODEV:  # unmounted
                return
            raise
        length, opcode, unique, nodeid = struct.unpack_from("<IIQQ", buf)
        body = buf[40:length]
        if opcode == INIT:
            _major, _minor, max_readahead, _flags = struct.unpack_from("<IIII", body)
            # struct fuse_init_out (7.31): 64 bytes.
            reply(unique, struct.pack("<IIIIHHIIHHII", 7, 31, max_readahead, 0, 16, 12, 65536, 1, 0, 0, 0, 0)
                  + b"\0" * 24)
        elif opcode == LOOKUP:
            name = body.split(b"\0", 1)[0]
            if nodeid == 1 and name == b"file":
                reply(unique, struct.pack("<QQQQII", 2, 0, 1, 1, 0, 0) + node_attr(2))
            else:
                reply(unique, error=errno.ENOENT)
        elif opcode == GETATTR:
            reply(unique, struct.pack("<QII", 1, 0, 0) + node_attr(nodeid))
        elif opcode in (OPEN, OPENDIR):
            reply(unique, struct.pack("<QII", 0, FOPEN_DIRECT_IO if opcode == OPEN else 0, 0))
        elif opcode == READ:
            _fh, offset, size = struct.unpack_from("<QQI", body)
            reply(unique, CONTENT[offset:offset + size])
        elif opcode == READDIR:
            reply(unique)
        elif opcode in (RELEASE, RELEASEDIR, FLUSH):
            reply(unique)
        elif opcode == STATFS:
            reply(unique, b"\0" * 80)
        elif opcode in (FORGET, BATCH_FORGET, INTERRUPT):
            pass  # no reply expected
        elif opcode == DESTROY:
            reply(unique)
            return
        else:
            reply(unique, error=errno.ENOSYS)


if __name__ == "__main__":
    main()
