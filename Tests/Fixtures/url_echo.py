"""The fixture backend's /echo/ route (hooked into backend.py): records each request's target exactly as it arrived,
so tests see which path and query a server received for a URL ingest built from a file name.

  ANY /echo/<status>/<rest>[?query]   answers <status> (a number; 200 when the first segment is not one) with
                                      {"ok": true} (no body for 204), after reading the body (a PUT's file, an s3-post form, a JSON
                                      call). Recorded in the state's "echo" list as
                                      {"method", "target": the request target as sent (bytes as text, latin-1),
                                       "path": the path percent-decoded as UTF-8, "query": [[name, value], ...]
                                       decoded by parse_qsl, blanks kept}.
"""
from urllib.parse import parse_qsl, unquote_to_bytes, urlsplit

PREFIX = "/echo/"


def handle(handler, state, lock):
    """Answers an /echo/ request and returns True; False for any other path (the caller goes on)."""
    target = handler.path
    if not urlsplit(target).path.startswith(PREFIX):
        return False
    # http.server decodes the request line as latin-1: back to the bytes that came, then UTF-8.
    raw = target.encode("latin-1")
    parts = urlsplit(raw)
    path = unquote_to_bytes(parts.path).decode("utf-8", "replace")
    query = [[name, value] for name, value in
             parse_qsl(parts.query.decode("utf-8", "replace"), keep_blank_values=True, encoding="utf-8")]
    length = int(handler.headers.get("Content-Length", "0") or "0")
    while length > 0:
        chunk = handler.rfile.read(min(65536, length))
        if not chunk:
            break
        length -= len(chunk)
    first = path[len(PREFIX):].split("/", 1)[0]
    status = int(first) if first.isdigit() and 100 <= int(first) <= 599 else 200
    with lock:
        state.setdefault("echo", []).append(
            {"method": handler.command, "target": target, "path": path, "query": query})
    handler.send(status, b"" if status in (204, 304) or status < 200 else {"ok": True})
    return True
