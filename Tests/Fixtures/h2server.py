#!/usr/bin/env python3
"""An HTTP/2 server over TLS for ingest's tests: a small ASGI app served by hypercorn (PyPI), a real HTTP/2 stack.

Routes (any method with a body; the path's first segment chooses):
  /early/<status>?after=N   reads at least N bytes of the body (default 0), then answers <status> with the text
                            "too large, go away" and ends the stream without reading the rest: what a server does
                            with a body it will not take (413), a refusal (403), or an upload it cuts short (200)
  /store/<key>              reads the whole body and answers 200 {"size", "sha256"}
  GET /_state               {"requests": {path: count}}: how many requests arrived on each path (retries counted)
Start: h2server.py --port-file FILE --tls CERT KEY; listens on 127.0.0.1, a port the kernel picks, HTTP/2 by ALPN
(HTTP/1.1 for a client that does not offer h2).
"""
import argparse
import asyncio
import hashlib
import json
import os
import signal
import socket
import sys
import threading
import time
from collections import Counter
from urllib.parse import parse_qs

REQUESTS = Counter()


async def send(send_event, status, body, content_type):
    await send_event({"type": "http.response.start", "status": status,
                      "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]})
    await send_event({"type": "http.response.body", "body": body})


async def app(scope, receive, send_event):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send_event({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send_event({"type": "lifespan.shutdown.complete"})
                return
    path = scope["path"]
    if path == "/_state":
        return await send(send_event, 200, json.dumps({"requests": REQUESTS}).encode(), b"application/json")
    REQUESTS[path] += 1
    parts = path.strip("/").split("/")
    if parts[0] == "early" and len(parts) > 1 and parts[1].isdigit():
        query = parse_qs(scope.get("query_string", b"").decode())
        wanted = int(query.get("after", ["0"])[0])
        received = 0
        while received < wanted:
            message = await receive()
            received += len(message.get("body", b""))
            if not message.get("more_body"):
                break
        return await send(send_event, int(parts[1]), b"too large, go away", b"text/plain")
    if parts[0] == "store":
        digest, size = hashlib.sha256(), 0
        while True:
            message = await receive()
            chunk = message.get("body", b"")
            digest.update(chunk)
            size += len(chunk)
            if not message.get("more_body"):
                break
        body = json.dumps({"size": size, "sha256": digest.hexdigest()}).encode()
        return await send(send_event, 200, body, b"application/json")
    return await send(send_event, 404, b"no such route", b"text/plain")


def main():
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), required=True)
    args = parser.parse_args()
    # As backend.py: unblock SIGTERM (a test may start us from a thread that blocks it), and leave with the parent.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM, signal.SIGINT])
    parent = os.getppid()

    def watch_parent():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch_parent, daemon=True).start()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    listener.set_inheritable(True)
    config = Config()
    config.bind = ["fd://%d" % listener.fileno()]
    config.certfile, config.keyfile = args.tls
    config.alpn_protocols = ["h2", "http/1.1"]
    config.accesslog = None
    config.errorlog = None
    temporary = args.port_file + ".tmp"
    with open(temporary, "w") as handle:
        handle.write(str(listener.getsockname()[1]))
    os.rename(temporary, args.port_file)
    asyncio.run(serve(app, config))


if __name__ == "__main__":
    sys.exit(main())
