"""Faults the tus fixture (tus_server.py) injects on request, so the client's answers to a real server's 409, 460 and
410 are tested: the server's own code answers 409 and 460, the fixture only arranges what leads to them.

POST /_faults replaces the list (JSON), each fault used `times` times (1 unless given):
  {"action": "cut"}        the next PATCH is cut half way on its way to the server, as a gateway in front of it
                           would: the server gets the first half of the body, then sees the client gone (fastapi-tusd
                           keeps those bytes and moves its offset); the client, whose whole body was read, gets
                           502 from the gateway. Its retry at the offset it knows is stale: the server answers 409.
  {"action": "corrupt"}    one byte of the next PATCH's body is flipped on the way: the server's checksum check
                           (--checksum) answers 460 Checksum Mismatch and keeps nothing.
  {"action": "expire", "after": N, "status": 410}
                           once N more PATCHes were answered 204, the upload they went to expires: it is removed,
                           and every later request for it is answered `status` (410 Gone, 404, or 403 as some
                           servers do).
  {"action": "without", "extension": "termination"}
                           OPTIONS does not list that extension (a server without termination: no DELETE expected).
"""
import json

FAULTS = []
EXPIRED = {}  # upload id -> the status its requests are answered with


def install(app, datastore):
    """Adds POST /_faults to the FastAPI app; `datastore` is the router's (an expired upload is removed from it)."""
    from fastapi import Request
    from fastapi.responses import Response

    @app.post("/_faults")
    async def set_faults(request: Request):
        FAULTS[:] = [dict(fault, datastore=datastore) for fault in json.loads(await request.body())]
        return Response(status_code=204)


def upload_id(scope):
    return scope["path"].rstrip("/").rsplit("/", 1)[-1]


def take(action):
    for fault in FAULTS:
        if fault["action"] == action and fault.get("times", 1) > 0:
            fault["times"] = fault.get("times", 1) - 1
            return fault
    return None


async def answer_expired(scope, receive, send):
    """True when the request went to an expired upload, and was answered its status (the body drained)."""
    status = EXPIRED.get(upload_id(scope))
    if status is None or scope["path"] == "/files":
        return False
    more = scope["method"] == "PATCH"
    while more:
        message = await receive()
        more = message.get("more_body", False) and message["type"] != "http.disconnect"
    await send({"type": "http.response.start", "status": status, "headers": [(b"tus-resumable", b"1.0.0")]})
    await send({"type": "http.response.body", "body": b""})
    return True


def wrap(scope, headers, receive, send):
    """The (receive, send) a request goes on with, through the faults that apply to it."""
    if scope["method"] == "OPTIONS":
        return receive, without_extensions(send, [f["extension"] for f in FAULTS if f["action"] == "without"])
    if scope["method"] != "PATCH":
        return receive, send
    if take("corrupt"):
        receive = corrupted(receive)
    if take("cut"):
        receive, send = cut(receive, int(headers.get("content-length", "0")) // 2), gateway_error(send)
    for fault in FAULTS:
        if fault["action"] == "expire" and fault.get("times", 1) > 0:
            send = expiring(send, fault, upload_id(scope))
    return receive, send


def without_extensions(send, names):
    """The OPTIONS answer's Tus-Extension without `names`: a server that does not offer them."""

    async def sending(message):
        if message["type"] == "http.response.start" and names:
            listed = lambda value: ",".join(e for e in value.decode().split(",") if e.strip() not in names).encode()
            headers = [(k, listed(v) if k.lower() == b"tus-extension" else v) for k, v in message.get("headers", [])]
            message = dict(message, headers=headers)
        await send(message)

    return sending


def corrupted(receive):
    flipped = [False]

    async def receiving():
        message = await receive()
        body = message.get("body", b"")
        if not flipped[0] and body:
            flipped[0] = True
            message = dict(message, body=bytes([body[0] ^ 0xFF]) + body[1:])
        return message

    return receiving


def cut(receive, keep):
    """The first `keep` bytes reach the server; the rest is read from the client and dropped, then the server is
    told the client is gone."""
    passed, ended = [0], [False]

    async def receiving():
        if passed[0] >= keep or ended[0]:
            while not ended[0]:
                message = await receive()
                ended[0] = not message.get("more_body", False) or message["type"] == "http.disconnect"
            return {"type": "http.disconnect"}
        message = await receive()
        ended[0] = not message.get("more_body", False)
        body = message.get("body", b"")[: keep - passed[0]]
        passed[0] += len(body)
        return dict(message, body=body, more_body=True)

    return receiving


def gateway_error(send):
    """The server's answer (to a client it thinks gone) is replaced by the gateway's 502."""

    async def sending(message):
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            await send({"type": "http.response.start", "status": 502, "headers": [(b"content-length", b"11")]})
            await send({"type": "http.response.body", "body": b"Bad Gateway"})

    return sending


def expiring(send, fault, uuid):
    async def sending(message):
        if message["type"] == "http.response.start" and message.get("status") == 204:
            fault["after"] = fault.get("after", 1) - 1
            if fault["after"] <= 0:
                fault["times"] = 0
                EXPIRED[uuid] = fault.get("status", 410)
                fault["datastore"].delete_file_info(uuid=uuid)
        await send(message)

    return sending
