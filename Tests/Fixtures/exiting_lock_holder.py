"""A journal lock held by a run on its way out, for issue 29 §7 (JournalLockExitTests).

    python3 exiting_lock_holder.py killed|gone LOCKFILE --port-file FILE

Takes an exclusive `flock` on LOCKFILE (writing `<pid> <run id>` into it, as `ingest run` does) in a process that then
is, until this script gets SIGTERM:

- `killed`: killed (SIGKILL) and still exiting. The process is traced with PTRACE_O_TRACEEXIT, so the kernel stops it
  at the start of its exit, before it closes its files: the lock is held, `SIGKILL` shows in its pending signals, as
  while a killed process with much memory or a thread in uninterruptible I/O takes its time to go.
- `gone`: exited, while a child it forked keeps a copy of the locked descriptor (the lock outlives the process).

The holder's pid (the one /proc/locks names) is written to the port file once the lock is held so. On SIGTERM the
script lets go: the traced process finishes exiting, the child ends.
"""

import ctypes
import fcntl
import os
import signal
import sys
import time

PTRACE_TRACEME, PTRACE_CONT, PTRACE_SETOPTIONS = 0, 7, 0x4200
PTRACE_O_TRACEEXIT = 0x40
PTRACE_EVENT_EXIT = 6


def take_lock(path):
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(descriptor, fcntl.LOCK_EX)
    os.ftruncate(descriptor, 0)
    os.write(descriptor, f"{os.getpid()} fixture-run\n".encode())
    return descriptor


def killed(path):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        libc.ptrace(PTRACE_TRACEME, 0, None, None)
        os.kill(os.getpid(), signal.SIGSTOP)
        take_lock(path)
        os.write(ready_write, b"x")
        time.sleep(3600)
        os._exit(0)
    os.waitpid(pid, 0)
    if libc.ptrace(PTRACE_SETOPTIONS, pid, None, ctypes.c_void_p(PTRACE_O_TRACEEXIT)) != 0:
        sys.exit(f"ptrace(PTRACE_SETOPTIONS) failed: errno {ctypes.get_errno()}")
    libc.ptrace(PTRACE_CONT, pid, None, None)
    os.read(ready_read, 1)
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if not os.WIFSTOPPED(status) or status >> 16 != PTRACE_EVENT_EXIT:
        sys.exit(f"the killed process did not stop at its exit (status {status:#x})")
    # SIGTERM ends this script; the kernel then detaches the tracee, which finishes exiting.
    return pid


def gone(path):
    ready_read, ready_write = os.pipe()
    # Only this script's main process keeps the write end: the child reads end of file once it is gone.
    alive_read, alive_write = os.pipe()
    holder = os.fork()
    if holder == 0:
        take_lock(path)
        if os.fork() == 0:
            os.close(alive_write)
            # The child keeps the locked descriptor until this script's main process ends.
            os.write(ready_write, b"x")
            os.read(alive_read, 1)
            os._exit(0)
        os._exit(0)
    os.waitpid(holder, 0)
    os.read(ready_read, 1)
    return holder


def main():
    # A test process blocks SIGTERM in its threads (the runner's signal handling), and children inherit the mask.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM, signal.SIGINT])
    mode, path = sys.argv[1], sys.argv[2]
    port_file = sys.argv[sys.argv.index("--port-file") + 1]
    pid = killed(path) if mode == "killed" else gone(path)

    def let_go(*_):
        if mode == "killed":
            # The traced process finishes its exit, closing its files; then this script ends.
            libc = ctypes.CDLL(None, use_errno=True)
            libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
            libc.ptrace(PTRACE_CONT, pid, None, None)
            os.waitpid(pid, 0)
        os._exit(0)

    signal.signal(signal.SIGTERM, let_go)
    signal.signal(signal.SIGINT, let_go)
    with open(port_file + ".tmp", "w") as out:
        out.write(str(pid))
    os.rename(port_file + ".tmp", port_file)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
