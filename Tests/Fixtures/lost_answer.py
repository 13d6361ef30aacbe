"""An HTTP proxy that loses answers: every request goes to --upstream as received and its answer comes back as sent,
except the first --times requests whose "METHOD /path" starts with --lose: those reach the upstream, which acts on
them, and then the client's connection is reset instead of answered (an answer lost after the server acted, as on a
flaky link). For a real server (the Firestore emulator) whose answer to the client's repeat is the point of a test.

  python3 lost_answer.py --upstream 127.0.0.1:8080 --lose "POST /v1/" --times 1 --port-file FILE
GET /_lost answers {"lost": N, "forwarded": N} (not forwarded). Standard library only; it exits with its parent.
"""
import argparse
import http.client
import json
import os
import signal
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATE = {"lost": 0, "forwarded": 0}
CONFIG = {"upstream": "", "lose": "", "times": 0}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet
        pass

    def handle_any(self):
        if self.path == "/_lost":
            with LOCK:
                body = json.dumps(STATE).encode()
            return self.answer(200, [("Content-Type", "application/json")], body)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        upstream = http.client.HTTPConnection(CONFIG["upstream"], timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "keep-alive")}
        upstream.request(self.command, self.path, body=body, headers=headers)
        answer = upstream.getresponse()
        answered = answer.read()
        upstream.close()
        with LOCK:
            STATE["forwarded"] += 1
            lose = ("%s %s" % (self.command, self.path)).startswith(CONFIG["lose"]) and CONFIG["times"] > 0
            if lose:
                CONFIG["times"] -= 1
                STATE["lost"] += 1
        if lose:  # the upstream acted; the client never learns it
            self.request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.request.close()
            return
        kept = [(k, v) for k, v in answer.getheaders()
                if k.lower() not in ("connection", "keep-alive", "transfer-encoding", "content-length")]
        self.answer(answer.status, kept, answered)

    def answer(self, status, headers, body):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = handle_any


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream", required=True, help="host:port")
    parser.add_argument("--lose", required=True, help='"METHOD /path-prefix" of the requests whose answer is lost')
    parser.add_argument("--times", type=int, default=1)
    parser.add_argument("--port-file", required=True)
    args = parser.parse_args()
    CONFIG.update(upstream=args.upstream, lose=args.lose, times=args.times)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM, signal.SIGINT])
    parent = os.getppid()

    def watch_parent():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch_parent, daemon=True).start()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(args.port_file + ".tmp", "w") as out:
        out.write(str(server.server_address[1]))
    os.replace(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
