"""The fixture backend's clock (hooked into backend.py): the time its tickets, signed URLs and S3 POST policies are
issued with and checked against, and the day of seed 003's one-recording-per-pet-per-day rule. It runs with the real
time, and a test moves it forward instead of sleeping until a ticket expires:

  POST /_clock {"advance": SECONDS}   moves the clock forward; answers {"offset": total seconds moved so far}

Presigned URLs of a real S3 server (--s3, --s3-post) are checked by that server against its own clock, and are
not moved.
"""
import datetime
import json
import threading
import time

PATH = "/_clock"
_LOCK = threading.Lock()
_OFFSET = [0.0]


def now():
    """Seconds since 1970, moved forward by what the tests advanced."""
    with _LOCK:
        return time.time() + _OFFSET[0]


def utcnow():
    """now() as a naive UTC datetime (as datetime.utcnow())."""
    return datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=now())


def today():
    """The local date at now() (as datetime.date.today())."""
    return datetime.date.fromtimestamp(now())


def handle(handler):
    """Answers POST /_clock and returns True; False for any other path (the caller goes on)."""
    if handler.path != PATH:
        return False
    length = int(handler.headers.get("Content-Length", "0") or "0")
    try:
        seconds = float(json.loads(handler.rfile.read(length) or b"{}").get("advance", 0))
    except (ValueError, AttributeError):
        handler.send(400, {"error": "expected {\"advance\": SECONDS}"})
        return True
    if seconds < 0:
        handler.send(400, {"error": "the clock only moves forward"})
        return True
    with _LOCK:
        _OFFSET[0] += seconds
        offset = _OFFSET[0]
    handler.send(200, {"offset": offset})
    return True
