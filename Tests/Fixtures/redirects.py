#!/usr/bin/env python3
"""Two origins for ingest's redirect tests (Python 3 standard library only): one server on two ports of
127.0.0.1, "a" and "b", so a redirect from one to the other crosses origins.

On either port, any method:
  /hop/<status>?to=<url>   drains the body and answers <status> with `Location: <url>` (the `to` value,
                           percent-decoded; a relative one stays relative); with `&sign=1` the Location also gets
                           a query `X-Amz-Signature=<SIGNATURE>` (a secret the client must not print)
  /sink/<anything>         reads the whole body and answers 200 {"ok": true, "bytes": N}
  GET /_state              {"requests": [{"origin": "a"|"b", "method", "path", "headers": {name: value},
                           "bytes": N}, ...]} — every request to /hop/ and /sink/, in order of arrival
Start: redirects.py --port-file FILE; writes "PORT_A PORT_B" there once both listen.
"""
import argparse
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

SIGNATURE = "fixture-sig-5e1f0c2a9b7d"
LOCK = threading.Lock()
REQUESTS = []


def handler_for(origin):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # quiet
            pass

        def read_body(self):
            length = int(self.headers.get("Content-Length") or 0)
            total = 0
            while total < length:
                chunk = self.rfile.read(min(1 << 20, length - total))
                if not chunk:
                    break
                total += len(chunk)
            return total

        def answer(self, status, body, headers=None):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def route(self):
            parts = urlsplit(self.path)
            if parts.path == "/_state":
                with LOCK:
                    return self.answer(200, {"requests": REQUESTS})
            size = self.read_body()
            with LOCK:
                REQUESTS.append({"origin": origin, "method": self.command, "path": parts.path,
                                 "headers": {k: v for k, v in self.headers.items()}, "bytes": size})
            if parts.path.startswith("/hop/"):
                status = int(parts.path.split("/")[2])
                query = parse_qs(parts.query)
                target = query.get("to", [""])[0]
                if query.get("sign") == ["1"]:
                    target += ("&" if "?" in target else "?") + "X-Amz-Signature=" + SIGNATURE
                return self.answer(status, {"detail": "moved"}, {"Location": target})
            if parts.path.startswith("/sink/"):
                return self.answer(200, {"ok": True, "bytes": size})
            return self.answer(404, {"detail": "Not Found"})

        do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = do_PATCH = route

    return Handler


class Server(ThreadingHTTPServer):
    daemon_threads = True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    args = parser.parse_args()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM, signal.SIGINT])
    parent = os.getppid()

    def watch_parent():  # leave when the test process is gone
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch_parent, daemon=True).start()
    servers = [Server(("127.0.0.1", 0), handler_for(name)) for name in ("a", "b")]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    temporary = args.port_file + ".tmp"
    with open(temporary, "w") as handle:
        handle.write(" ".join(str(server.server_address[1]) for server in servers))
    os.rename(temporary, args.port_file)
    signal.sigwait([signal.SIGTERM, signal.SIGINT])


if __name__ == "__main__":
    sys.exit(main())
