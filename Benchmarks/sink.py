#!/usr/bin/env python3
"""A loopback HTTP sink for Benchmarks/upload.sh: takes request bodies as cheaply as Python can (readinto one
1 MiB buffer, nothing hashed or stored) so the client, not the server, is what the benchmark measures.

  PUT  /<anything>          body read and dropped; answers 200 and records the path's size
  POST /<anything>          a multipart/form-data upload (an S3 presigned POST form): the fields are read, the part
                            named "file" is streamed and dropped; answers 204 and records the size under the form's
                            "key" field (as S3 would store it)
  GET  /_sizes              {"path or key": size of the last body, …} as JSON
  DELETE /_sizes            forgets them

Start: sink.py --port-file FILE   (listens on 127.0.0.1, port 0: the kernel picks a free one)
"""
import argparse
import json
import os
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SIZES = {}
LOCK = threading.Lock()
BUFFER_SIZE = 1 << 20


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, and `Expect: 100-continue` answered by the base class

    def log_message(self, *args):
        pass

    def answer(self, status, body=b"", content_type="text/plain"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def discard(self, length):
        """Reads and drops `length` bytes; returns how many arrived."""
        buffer = memoryview(bytearray(BUFFER_SIZE))
        got = 0
        while got < length:
            n = self.rfile.readinto(buffer[: min(BUFFER_SIZE, length - got)])
            if not n:
                break
            got += n
        return got

    def discard_chunked(self):
        got = 0
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return got
            got += self.discard(size)
            self.rfile.readline()

    def do_GET(self):
        if self.path != "/_sizes":
            return self.answer(404, b"not found")
        with LOCK:
            body = json.dumps(SIZES).encode()
        self.answer(200, body, "application/json")

    def do_DELETE(self):
        with LOCK:
            SIZES.clear()
        self.answer(204)

    def do_PUT(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            size = self.discard_chunked()
        else:
            length = int(self.headers.get("Content-Length", "0"))
            size = self.discard(length)
            if size != length:
                self.close_connection = True
                return
        with LOCK:
            SIZES[self.path.split("?")[0]] = size
        self.answer(200, b"", "text/plain")

    def do_POST(self):
        """Fields first (line by line), then the file part streamed: its size is the body's length less the head
        read so far and the closing boundary."""
        match = re.match(r'multipart/form-data;\s*boundary="?([^";]+)"?$', self.headers.get("Content-Type", ""))
        length = int(self.headers.get("Content-Length", "-1"))
        if not match or length < 0:
            self.close_connection = True
            return self.answer(400, b"expected multipart/form-data with a Content-Length")
        delimiter = b"--" + match.group(1).encode()
        consumed, fields, name, value = 0, {}, None, b""
        while True:
            line = self.rfile.readline(1 << 16)
            consumed += len(line)
            if not line:
                return
            if line.startswith(delimiter):
                if name is not None:
                    fields[name] = value[:-2].decode()
                name, value = None, b""
                headers = {}
                while True:
                    header = self.rfile.readline(1 << 16)
                    consumed += len(header)
                    if header in (b"\r\n", b""):
                        break
                    key, _, text = header.decode().partition(":")
                    headers[key.strip().lower()] = text.strip()
                found = re.search(r'\bname="([^"]*)"', headers.get("content-disposition", ""))
                name = found.group(1) if found else ""
                if name == "file":
                    break
            else:
                value += line
        tail = len(b"\r\n" + delimiter + b"--\r\n")
        size = self.discard(length - consumed - tail)
        self.discard(tail)
        with LOCK:
            SIZES[fields.get("key", self.path)] = size
        self.answer(204)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    arguments = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    server.daemon_threads = True
    with open(arguments.port_file + ".tmp", "w") as handle:
        handle.write(str(server.server_address[1]))
    os.rename(arguments.port_file + ".tmp", arguments.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
