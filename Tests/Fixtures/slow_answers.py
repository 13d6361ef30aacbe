"""Faults of backend.py about answers that never end or never come (see backend.py's fault list):

  {"action": "stream", "status": 200, "parts": [["x", 1000000000]], "bytes_per_second": 4}
      reads the whole body, then answers with Content-Length the parts' total (or "length") and sends the parts
      (each text repeated that many times) at that rate, or as fast as the client reads without one: an answer that
      drips (a few bytes a second for ever), that is huge (a 200 MB "ticket"), or deeply nested JSON
      ([["[", 100000], ["]", 100000]])
  {"action": "never_answer", "seconds": 60}
      reads the whole body, then says nothing for that long before closing: a server that took the upload and
      hangs
"""
import time

ACTIONS = ("stream", "never_answer")


def apply(handler, fault, record):
    """Answers `handler`'s request as `fault` says, then `record(what)`; the connection is closed afterwards."""
    handler.drain()
    handler.close_connection = True
    try:
        if fault["action"] == "never_answer":
            time.sleep(fault.get("seconds", 60))
            record("never answered")
            return
        stream(handler, fault)
        record(fault.get("status", 200))
    except (BrokenPipeError, ConnectionResetError, OSError):
        record("client left")


def stream(handler, fault):
    parts = [(text.encode(), count) for text, count in fault.get("parts", [["x", 1000]])]
    length = fault.get("length", sum(len(text) * count for text, count in parts))
    handler.send_response(fault.get("status", 200))
    handler.send_header("Content-Type", fault.get("content_type", "application/json"))
    handler.send_header("Content-Length", str(length))
    handler.end_headers()
    handler.wfile.flush()
    rate = fault.get("bytes_per_second")
    for text, count in parts:
        if rate:
            # A few bytes at a time, a tenth of a second apart: a trickle, never quite a stall.
            step = max(1, rate // 10)
            for _ in range(0, len(text) * count, step):
                handler.wfile.write((text * step)[:step])
                handler.wfile.flush()
                time.sleep(0.1)
            continue
        block = text * max(1, 65536 // len(text))
        whole, rest = divmod(count * len(text), len(block))
        for _ in range(whole):
            handler.wfile.write(block)
        handler.wfile.write(block[:rest])
    handler.wfile.flush()
