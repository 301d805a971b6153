"""The line protocol between benchmarks/baselines.py and a baseline's runner in its own virtual environment.

The parent writes one JSON object a line to the runner's stdin and reads one JSON object a line back:

    {"op": "load", "model": PATH, "threads": N}                    -> {"ok": true, "load_s": ...}
    {"op": "run", "mode": "batch" | "single", "requests": [[prompt_ids, max_tokens], ...]}
                                                                    -> {"tokens": N, "seconds": S, ...}
    {"op": "quit"}

A runner prints nothing else on stdout (its library's chatter goes to stderr), so the parent can trust every
line it reads. Each runner imports only its own engine and the standard library: this file is the only code it
shares with the project, and it needs nothing but json.
"""
from __future__ import annotations

import json
import sys
from collections.abc import Callable


def serve(handlers: dict[str, Callable[[dict], dict]]) -> None:
    """Answer requests from stdin until quit or end of input; stdout carries only the answers."""
    out = sys.stdout
    sys.stdout = sys.stderr  # a library that prints must not corrupt the protocol
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["op"] == "quit":
            break
        try:
            reply = handlers[msg["op"]](msg)
        except Exception as exc:  # reported to the parent, which stops the benchmark with it
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(reply) + "\n")
        out.flush()
