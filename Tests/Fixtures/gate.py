"""The fixture backend's "gate" fault: a request held until the test opens the gate, so a test can act at a known
point of a run (change an input file while a ticket request waits) without sleeping.

  {"action": "gate", "file": PATH, "seconds": 30}   hold the request until PATH exists (the test creates it), at
                                                     most `seconds`, then handle it as usual; /_state "gated"
                                                     counts the requests that reached the gate
"""
import os
import time


def hold(fault, state, lock):
    """Counts the request as gated, then waits (polling every 10 ms) until the fault's file exists or time is up."""
    with lock:
        state["gated"] = state.get("gated", 0) + 1
    deadline = time.monotonic() + fault.get("seconds", 30)
    while not os.path.exists(fault["file"]) and time.monotonic() < deadline:
        time.sleep(0.01)
