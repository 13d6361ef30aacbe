#!/usr/bin/env python3
"""Runs a command in a pseudo-terminal (its stdout and stderr both a terminal, as for a person at a shell) and
writes everything it printed, escape sequences included, to our standard output; exits with the command's status.

Usage: pty_run.py COMMAND [ARGS...]   (the environment is passed on as it is)
"""
import os
import pty
import sys


def main():
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(sys.argv[1], sys.argv[1:])
    captured = bytearray()
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO once the child has closed its end
            break
        if not data:
            break
        captured += data
    _, status = os.waitpid(pid, 0)
    sys.stdout.buffer.write(bytes(captured))
    sys.stdout.flush()
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
