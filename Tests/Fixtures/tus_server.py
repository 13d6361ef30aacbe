#!/usr/bin/env python3
"""A real tus 1.0 server for the `method: tus` tests: fastapi-tusd (PyPI) served by uvicorn, at /files.

fastapi-tusd was chosen because it keeps the bytes of a cut PATCH (the offset a later HEAD reports counts them),
which is what resuming after `kill -9` needs; docs/large-files.md says why the others were not. Its faults are
worked around here, never in the client:
  - its OPTIONS answer has no status, and uvicorn closes the connection without answering: given 204 here;
  - it announces Tus-Checksum-Algorithm but not the `checksum` extension, and never checks Upload-Checksum: with
    --checksum this module adds the extension and checks the header itself (460 on a mismatch, the bytes dropped);
  - HEAD echoes Upload-Metadata values as Python bytes reprs (b'...'): nothing here reads them back;
  - a cut PATCH is answered 460 (to nobody) instead of being left alone: harmless, the client is gone.
Test-only additions: GET /_stats (bytes of PATCH bodies received, requests by method, answers by method and status,
terminated uploads, checksums checked, PATCHes carrying Upload-Checksum, requests carrying Authorization),
POST /_faults (a PATCH cut half way, a corrupted PATCH, an upload that expires, an extension left out of OPTIONS:
see tus_faults.py), POST /_forget/<id> (the upload expires: later requests get 404), and --max-patch-bytes N (a
PATCH body over N is refused with 413, as proxies and some servers do), and --other-origin (the server listens on a
second port too and its creation answers' Location names that one: an upload URL on another origin; the port file
then holds both ports, and /_stats counts requests carrying Authorization by "METHOD port").

Usage: tus_server.py --store DIR --port-file FILE [--checksum] [--max-patch-bytes N] [--other-origin]
"""
import argparse
import base64
import hashlib
import json
import os
import socket
import sys

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from fastapi_tusd import TusRouter

import tus_faults

STATS = {"patch_bytes": 0, "requests": {}, "deleted": [], "checksums": 0, "checksum_failures": 0}
# PATCHes carrying Upload-Checksum; "METHOD status" -> count; requests carrying Authorization, by method
STATS.update(checksum_headers=0, answers={}, authorized={}, authorized_at={}, requests_at={})


def make_app(store, port, checksum, max_patch_bytes):
    app = FastAPI()
    if checksum:
        TusRouter.tus_extension += ",checksum"
        TusRouter.tus_checksum_algorithm = "sha1,md5"
    router = TusRouter(store_dir=store, location=f"http://127.0.0.1:{port}/files", prefix="/files")
    app.include_router(router)
    tus_faults.install(app, router.datastore)

    @app.get("/_stats")
    async def stats():
        return JSONResponse(STATS)

    @app.post("/_forget/{uuid}")
    async def forget(uuid: str):
        router.datastore.delete_file_info(uuid=uuid)
        return Response(status_code=204)

    return CountingMiddleware(app, checksum, max_patch_bytes)


def counting_answers(method, send):
    """Counts the answers the client gets, by method and status (`PATCH 409` …)."""

    async def sending(message):
        if message["type"] == "http.response.start":
            name = "%s %s" % (method, message.get("status") or 204)
            STATS["answers"][name] = STATS["answers"].get(name, 0) + 1
        await send(message)

    return sending


def with_status(send):
    """fastapi-tusd's OPTIONS answer has no status (uvicorn then drops the connection): give it 204."""

    async def sending(message):
        if message["type"] == "http.response.start" and message.get("status") is None:
            message = dict(message, status=204)
        await send(message)

    return sending


class CountingMiddleware:
    """Counts requests and PATCH body bytes as they arrive; checks Upload-Checksum; refuses oversized PATCHes."""

    def __init__(self, app, checksum, max_patch_bytes):
        self.app, self.checksum, self.max_patch_bytes = app, checksum, max_patch_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"].startswith("/_"):
            return await self.app(scope, receive, send)
        method = scope["method"]
        STATS["requests"][method] = STATS["requests"].get(method, 0) + 1
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        STATS["checksum_headers"] += "upload-checksum" in headers
        STATS["authorized"][method] = STATS["authorized"].get(method, 0) + ("authorization" in headers)
        at = "%s %d" % (method, scope["server"][1])
        STATS["requests_at"][at] = STATS["requests_at"].get(at, 0) + 1
        STATS["authorized_at"][at] = STATS["authorized_at"].get(at, 0) + ("authorization" in headers)
        send = counting_answers(method, send)
        if await tus_faults.answer_expired(scope, receive, send):
            return
        receive, send = tus_faults.wrap(scope, headers, receive, send)
        if method == "DELETE":
            STATS["deleted"].append(scope["path"].rsplit("/", 1)[-1])
        if method == "OPTIONS":
            return await self.app(scope, receive, with_status(send))
        if method != "PATCH":
            return await self.app(scope, receive, send)
        if self.max_patch_bytes and int(headers.get("content-length", "0")) > self.max_patch_bytes:
            return await Response(status_code=413, content=b"PATCH body too large")(scope, receive, send)

        async def counted():
            message = await receive()
            STATS["patch_bytes"] += len(message.get("body", b""))
            return message

        if self.checksum and "upload-checksum" in headers:
            return await self.checked(scope, counted, send, headers["upload-checksum"])
        return await self.app(scope, counted, send)

    async def checked(self, scope, receive, send, header):
        """Reads the whole piece, checks it, and only then hands it on (a mismatch or a cut piece keeps nothing)."""
        algorithm, _, expected = header.partition(" ")
        if algorithm not in ("sha1", "md5"):
            return await Response(status_code=400, content=b"unsupported checksum algorithm")(scope, receive, send)
        digest, body, more = hashlib.new(algorithm), [], True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body.append(message.get("body", b""))
            digest.update(body[-1])
            more = message.get("more_body", False)
        STATS["checksums"] += 1
        if base64.b64encode(digest.digest()).decode() != expected.strip():
            STATS["checksum_failures"] += 1
            return await Response(status_code=460, content=b"checksum mismatch")(scope, receive, send)
        messages = iter([{"type": "http.request", "body": b"".join(body), "more_body": False}])

        async def replay():
            message = next(messages, None)
            # After the body: wait for the disconnect, as the server's own receive would.
            return message if message is not None else await receive()

        return await self.app(scope, replay, send)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--checksum", action="store_true")
    parser.add_argument("--max-patch-bytes", type=int, default=0)
    parser.add_argument("--other-origin", action="store_true")
    args = parser.parse_args()
    sockets = [listening() for _ in range(2 if args.other_origin else 1)]
    ports = [sock.getsockname()[1] for sock in sockets]
    app = make_app(args.store, ports[-1], args.checksum, args.max_patch_bytes)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1))
    with open(args.port_file + ".tmp", "w") as f:
        f.write(" ".join(map(str, ports)))
    os.rename(args.port_file + ".tmp", args.port_file)
    sys.stdout.flush()
    server.run(sockets=sockets)


def listening():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


if __name__ == "__main__":
    main()
