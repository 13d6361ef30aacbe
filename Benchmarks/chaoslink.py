#!/usr/bin/env python3
"""A bad link for Benchmarks/torture.sh (Python 3 standard library only): an HTTP proxy in front of an S3 server
that holds every request and every answer DELAY_MS before passing it on, cuts a fraction of the requests off in
flight (reads a random part of the body, then resets the connection: RST), and loses the answer of another fraction
(the request is passed on whole, the server acts on it, and the connection is reset instead of the answer). It also
is the callback backend the torture pipeline calls after each upload, behind the same faults:
  POST /callback/<key>   records one delivery for <key> (a backend that acts on every call: a repeat counts twice)
  GET  /callback/<key>   200 once <key> was delivered, 404 before (the pipeline's `verify:` read)
Figures (not behind faults): GET /_stats -> {"requests", "body_bytes" (request body bytes received from the client,
cut-off ones included), "stored_part_bytes" (bytes of UploadPart and PutObject requests S3 answered 200),
"resent_stored_parts" (an UploadPart sent again for a part whose 200 had reached the client),
"resets", "dropped_answers" (of which "dropped_create_answers": CreateMultipartUpload's), "callbacks": {key:
deliveries}}.

Start: chaoslink.py --upstream http://HOST:PORT --port-file FILE [--delay-ms 20] [--reset 0.02] [--drop 0.02]
                   [--drop-create 0.5] [--seed N]
--drop-create: the fraction of CreateMultipartUpload answers lost besides --drop (S3 made the upload; the client
never learns its id), the case that once left incomplete uploads behind.
"""
import argparse
import http.client
import json
import random
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

LOCK = threading.Lock()
STATS = {"requests": 0, "body_bytes": 0, "stored_part_bytes": 0, "resent_stored_parts": 0, "resets": 0,
         "dropped_answers": 0, "dropped_create_answers": 0, "callbacks": {}}
STORED_PARTS = set()       # (uploadId, partNumber) S3 answered 200 for
CONFIG = {"upstream": None, "delay": 0.02, "reset": 0.0, "drop": 0.0, "drop_create": 0.0, "random": random.Random()}


def add(name, amount=1):
    with LOCK:
        STATS[name] += amount


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def length(self):
        return int(self.headers.get("Content-Length") or 0)

    def reset(self):
        self.request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        try:
            self.rfile.close()
            self.wfile.close()
        finally:
            self.request.close()

    def answer(self, status, body, headers=()):
        time.sleep(CONFIG["delay"])
        self.send_response(status)
        for name, value in headers:
            if name.lower() not in ("connection", "keep-alive", "transfer-encoding", "content-length"):
                self.send_header(name, value)
        length = str(len(body))
        if self.command == "HEAD":  # no body, but the object's length, which a client may compare
            length = next((value for name, value in headers if name.lower() == "content-length"), "0")
        self.send_header("Content-Length", length)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def handle_any(self):
        time.sleep(CONFIG["delay"])
        path = urlsplit(self.path).path
        if path == "/_stats":
            with LOCK:
                return self.answer(200, json.dumps(STATS).encode(), [("Content-Type", "application/json")])
        add("requests")
        roll = CONFIG["random"].random()
        if roll < CONFIG["reset"]:              # cut off in flight: part of the body, then RST
            remaining = CONFIG["random"].randint(0, self.length())
            while remaining > 0:
                chunk = self.rfile.read(min(1 << 20, remaining))
                if not chunk:
                    break
                add("body_bytes", len(chunk))
                remaining -= len(chunk)
            add("resets")
            return self.reset()
        lose_answer = roll < CONFIG["reset"] + CONFIG["drop"]
        if self.command == "POST" and "uploads" in parse_qs(urlsplit(self.path).query, keep_blank_values=True):
            lose_answer = lose_answer or CONFIG["random"].random() < CONFIG["drop_create"]
            if lose_answer:
                add("dropped_create_answers")
        status, body, headers = (self.callback(path) if path.startswith("/callback/") else self.forward(path))
        if status is None:
            return self.reset()
        if lose_answer:
            add("dropped_answers")
            return self.reset()
        self.note_stored_part(status)
        self.answer(status, body, headers)

    def callback(self, path):
        body = self.rfile.read(self.length())
        add("body_bytes", len(body))
        key = unquote(path[len("/callback/"):])
        with LOCK:
            if self.command == "POST":
                STATS["callbacks"][key] = STATS["callbacks"].get(key, 0) + 1
                return 200, b'{"ok": true}', [("Content-Type", "application/json")]
            known = key in STATS["callbacks"]
        return (200, b'{"delivered": true}', [("Content-Type", "application/json")]) if known else \
            (404, b'{"detail": "not delivered"}', [("Content-Type", "application/json")])

    def forward(self, path):
        connection = http.client.HTTPConnection(CONFIG["upstream"], timeout=300)
        connection.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for name, value in self.headers.items():
            if name.lower() not in ("connection", "expect", "keep-alive", "proxy-connection"):
                connection.putheader(name, value)
        connection.endheaders()
        remaining = self.length()
        while remaining > 0:
            chunk = self.rfile.read(min(1 << 20, remaining))
            if not chunk:
                connection.close()
                return None, None, None
            add("body_bytes", len(chunk))
            connection.send(chunk)
            remaining -= len(chunk)
        answer = connection.getresponse()
        body = answer.read()
        connection.close()
        if self.command == "PUT" and answer.status == 200:
            add("stored_part_bytes", self.length())
        return answer.status, body, answer.getheaders()

    def note_stored_part(self, status):
        """A part S3 stored and whose 200 reached the client: sending it again would be a waste ingest could
        have avoided (a part whose answer was lost is retried: the client cannot know S3 has it)."""
        query = parse_qs(urlsplit(self.path).query)
        if self.command != "PUT" or status != 200 or "uploadId" not in query or "partNumber" not in query:
            return
        part = (query["uploadId"][0], query["partNumber"][0])
        with LOCK:
            if part in STORED_PARTS:
                STATS["resent_stored_parts"] += 1
            STORED_PARTS.add(part)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_any


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--delay-ms", type=float, default=20)
    parser.add_argument("--reset", type=float, default=0.0)
    parser.add_argument("--drop", type=float, default=0.0)
    parser.add_argument("--drop-create", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    CONFIG.update(upstream=urlsplit(args.upstream).netloc, delay=args.delay_ms / 1000, reset=args.reset,
                  drop=args.drop, drop_create=args.drop_create,
                  random=random.Random(args.seed))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.replace(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
