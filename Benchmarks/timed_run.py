#!/usr/bin/env python3
"""Runs a command and prints "wall-seconds cpu-seconds peak-bytes": its wall time, its CPU time (user + sys, from
wait4) and the largest size the file WATCHED reached meanwhile (sampled every 20 ms; 0 when it never existed).
Exits 1 (printing the command's standard error) when the command exits with a status above MAX_STATUS.
Usage: timed_run.py WATCHED MAX_STATUS COMMAND [ARGS...]  (the command's standard output is discarded)."""
import os
import resource
import subprocess
import sys
import time

watched, max_status, command = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
start = time.monotonic()
with open("timed_run.err", "wb") as errors:
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors)
    peak = 0
    while child.poll() is None:
        try:
            peak = max(peak, os.stat(watched).st_size)
        except FileNotFoundError:
            pass
        time.sleep(0.02)
wall = time.monotonic() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
if child.returncode > max_status:
    sys.stderr.write("%s failed (%d): %s" % (command[0], child.returncode, open("timed_run.err").read()))
    sys.exit(1)
print("%.3f %.3f %d" % (wall, usage.ru_utime + usage.ru_stime, peak))
