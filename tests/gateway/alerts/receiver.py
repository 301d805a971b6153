"""A webhook receiver for tests: a real HTTP server on a free port, in a thread, that records every POST and
answers with scripted status codes (then 200)."""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: bytes
    answered: int

    @property
    def event(self) -> dict:
        return json.loads(self.body)


class Receiver:
    def __init__(self, statuses: list[int] | None = None, delay_s: float = 0.0) -> None:
        self.statuses = list(statuses or [])  # answered in order; 200 once used up
        self.delay_s = delay_s  # before answering
        self.received: list[Received] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's name
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                time.sleep(receiver.delay_s)
                with receiver._lock:
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                    receiver.received.append(Received({k.lower(): v for k, v in self.headers.items()}, body, status))
                self.send_response(status)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok" if status < 300 else b"no")

            def log_message(self, *args) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hook"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def events(self) -> list[dict]:
        with self._lock:
            return [r.event for r in self.received]

    def wait_for(self, n: int, timeout_s: float = 10.0) -> list[Received]:
        deadline = time.monotonic() + timeout_s
        while len(self.received) < n:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(self.received)} of {n} requests arrived")
            time.sleep(0.02)
        return list(self.received)


async def arrived(receiver: Receiver, n: int, timeout_s: float = 10.0) -> list[Received]:
    """`wait_for` from a test's event loop, which must keep running (the worker sends from it)."""
    import asyncio
    async with asyncio.timeout(timeout_s):
        while len(receiver.received) < n:
            await asyncio.sleep(0.02)
    return list(receiver.received)
