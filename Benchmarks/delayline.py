#!/usr/bin/env python3
"""A WAN link for Benchmarks/wan.sh, for kernels without netem (CONFIG_NET_SCH_NETEM unset, as on this machine):
one TUN device in each of two network namespaces, and this process between them holding every packet DELAY_MS
before passing it on (each way, so the round trip is twice that) and dropping a fraction LOSS of them.

The TUN devices take GSO packets (IFF_VNET_HDR with TSO offload), as a veth hands netem its packets: TCP still works
in MSS-sized segments (MTU 1500) with its real congestion window, but this process moves up to 64 KiB per packet,
so Python keeps up. A dropped packet is a whole GSO packet, as with netem on a veth.

Start (root):  delayline.py --ns-a NS --dev-a NAME --ns-b NS --dev-b NAME --delay-ms 20 --loss-file FILE
               --ready-file FILE
The loss (a fraction, 0.01 for 1 %) is read from --loss-file at start and again on SIGHUP. The devices go when the
process ends (SIGTERM). On SIGHUP and SIGTERM it prints how many packets it passed and dropped since the last. Addresses and routes are the caller's to set (ip -n NS addr add … peer … dev NAME).
"""
import argparse
import collections
import ctypes
import fcntl
import os
import random
import select
import signal
import struct
import time

TUNSETIFF = 0x400454CA
TUNSETOFFLOAD = 0x400454D0
IFF_TUN, IFF_NO_PI, IFF_VNET_HDR = 0x0001, 0x1000, 0x4000
TUN_F_CSUM, TUN_F_TSO4, TUN_F_TSO6 = 0x01, 0x02, 0x04
CLONE_NEWNET = 0x40000000
LIBC = ctypes.CDLL(None, use_errno=True)


def open_tun(namespace, name):
    """A TUN device created inside `namespace`; the descriptor stays tied to it after this process moves on."""
    handle = os.open("/var/run/netns/" + namespace, os.O_RDONLY)
    if LIBC.setns(handle, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns into %s" % namespace)
    os.close(handle)
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI | IFF_VNET_HDR))
    fcntl.ioctl(fd, TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6)
    return fd


def main():
    parser = argparse.ArgumentParser()
    for flag in ("--ns-a", "--dev-a", "--ns-b", "--dev-b", "--loss-file", "--ready-file"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--delay-ms", type=float, required=True)
    arguments = parser.parse_args()
    delay = arguments.delay_ms / 1000
    loss = [0.0]
    counts = {"passed": 0, "dropped": 0}

    def report():
        total = counts["passed"] + counts["dropped"]
        if total:
            print("  delay line at %.2f %% loss: %d packets passed, %d dropped (%.2f %%)"
                  % (100 * loss[0], counts["passed"], counts["dropped"], 100 * counts["dropped"] / total), flush=True)
        counts.update(passed=0, dropped=0)

    def read_loss(*_):
        report()
        with open(arguments.loss_file) as handle:
            loss[0] = float(handle.read().strip() or 0)

    def stop(*_):
        report()
        os._exit(0)

    read_loss()
    signal.signal(signal.SIGHUP, read_loss)
    signal.signal(signal.SIGTERM, stop)
    a = open_tun(arguments.ns_a, arguments.dev_a)
    b = open_tun(arguments.ns_b, arguments.dev_b)
    with open(arguments.ready_file, "w") as handle:
        handle.write("ready\n")
    peer = {a: b, b: a}
    queues = {a: collections.deque(), b: collections.deque()}  # packets due out of that descriptor
    while True:
        heads = [queue[0][0] for queue in queues.values() if queue]
        timeout = max(0.0, min(heads) - time.monotonic()) if heads else None
        try:
            readable, _, _ = select.select([a, b], [], [], timeout)
        except InterruptedError:
            continue
        now = time.monotonic()
        for fd in readable:
            out = queues[peer[fd]]
            for _ in range(256):
                try:
                    packet = os.read(fd, 65536 + 64)
                except BlockingIOError:
                    break
                if loss[0] and random.random() < loss[0]:
                    counts["dropped"] += 1
                    continue
                counts["passed"] += 1
                out.append((now + delay, packet))
        now = time.monotonic()
        for fd, queue in queues.items():
            while queue and queue[0][0] <= now:
                try:
                    os.write(fd, queue.popleft()[1])
                except (BlockingIOError, OSError):
                    pass  # the receiving stack refused it: a drop, as a full queue would


if __name__ == "__main__":
    main()
