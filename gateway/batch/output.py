"""A finished line as the output or error file holds it (OpenAI's shape), and the files assembled."""
from __future__ import annotations

import json
from dataclasses import dataclass

from gateway.batch.ids import line_output_id


@dataclass(frozen=True, slots=True)
class LineResult:
    """What one line's request answered: an HTTP status and its JSON body."""
    status_code: int
    body: dict

    @property
    def ok(self) -> bool:
        return 200 <= self.status_code < 300


def answered(batch_id: str, index: int, custom_id: str, request_id: str, result: LineResult) -> bytes:
    """A line the endpoint answered; an error answer (4xx, 5xx) goes to the error file, in the same shape."""
    return _line(batch_id, index, custom_id, {"status_code": result.status_code, "request_id": request_id,
                                              "body": result.body}, None)


def not_run(batch_id: str, index: int, custom_id: str, code: str, message: str) -> bytes:
    """A line that never ran (the window ran out: code "batch_expired")."""
    return _line(batch_id, index, custom_id, None, {"code": code, "message": message})


def _line(batch_id: str, index: int, custom_id: str, response: dict | None, error: dict | None) -> bytes:
    # ASCII with escapes: any text the model or the client produced round-trips through any store.
    return json.dumps({"id": line_output_id(batch_id, index), "custom_id": custom_id, "response": response,
                       "error": error}, separators=(",", ":")).encode("ascii")
