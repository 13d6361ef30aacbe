#!/usr/bin/env python3
"""Slow HTTP clients against a server, and a health check asked while they hold their connections.

Opens --clients connections to HOST:PORT; each sends a request line and then one header line every --interval
seconds, never the blank line that ends the head (slowloris), for --seconds. Meanwhile, on another thread, a fresh
connection asks GET --probe every second (the next once the one before is answered or has given up) and waits up to
--probe-timeout seconds for the status line. Prints one JSON object:

  {"closed": [seconds after its start that the server closed client i, or null if it never did], ...
   "unconnected": clients that could not connect within 2 s,
   "probes": [{"status": 200 (0: no answer in time), "seconds": time to the answer}, ...]}
"""

import argparse
import json
import select
import socket
import threading
import time


def probe(host, port, path, timeout):
    started = time.monotonic()
    try:
        with socket.create_connection((host, port), timeout=timeout) as connection:
            connection.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
            answer = b""
            while b"\r\n" not in answer:
                remaining = timeout - (time.monotonic() - started)
                if remaining <= 0:
                    raise TimeoutError
                connection.settimeout(remaining)
                chunk = connection.recv(4096)
                if not chunk:
                    break
                answer += chunk
        status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else 0
    except (OSError, TimeoutError, ValueError, IndexError):
        status = 0
    return {"status": status, "seconds": round(time.monotonic() - started, 3)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--seconds", type=float, default=6)
    parser.add_argument("--probe", default="/healthz")
    parser.add_argument("--probe-timeout", type=float, default=5)
    options = parser.parse_args()

    clients = []
    unconnected = 0
    for index in range(options.clients):
        try:
            connection = socket.create_connection((options.host, options.port), timeout=2)
        except OSError:
            unconnected += 1
            continue
        connection.setblocking(False)
        connection.send(f"GET /metrics HTTP/1.1\r\nHost: {options.host}\r\n".encode())
        clients.append(connection)
    started = time.monotonic()
    closed = [None] * len(clients)
    probes = []

    def ask():
        # On a thread of its own: a check that waits does not pause the slow clients' trickle.
        time.sleep(0.2)
        while time.monotonic() - started < options.seconds - 1:
            probes.append(probe(options.host, options.port, options.probe, options.probe_timeout))
            time.sleep(1)

    asking = threading.Thread(target=ask)
    asking.start()
    next_line = started + options.interval
    line = 0
    while time.monotonic() - started < options.seconds:
        open_ones = [c for i, c in enumerate(clients) if closed[i] is None]
        readable, _, _ = select.select(open_ones, [], [], 0.05) if open_ones else ([], [], [])
        for connection in readable:
            index = clients.index(connection)
            try:
                if connection.recv(4096) == b"":
                    closed[index] = round(time.monotonic() - started, 3)
            except OSError:
                closed[index] = round(time.monotonic() - started, 3)
        if time.monotonic() >= next_line:
            line += 1
            for index, connection in enumerate(clients):
                if closed[index] is None:
                    try:
                        connection.send(f"X-Slow-{line}: {'a' * 10}\r\n".encode())
                    except OSError:
                        closed[index] = round(time.monotonic() - started, 3)
            next_line += options.interval
    asking.join()
    for connection in clients:
        connection.close()
    print(json.dumps({"closed": closed, "unconnected": unconnected, "probes": probes}))


if __name__ == "__main__":
    main()
