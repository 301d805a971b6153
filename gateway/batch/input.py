"""A batch's input file: JSONL, one request a line. Pure: bytes in, requests or errors out.

Checked twice, as OpenAI does: the upload must be JSONL (`check_jsonl`, a 400 at POST /v1/files), and a
batch must find every line a request for its endpoint (`check_jsonl` with the endpoint, else the batch fails
with `errors.data`, each naming its 1-based line). Both read the file a line at a time and keep nothing they
parse; the runner parses a line when it runs it (`request_lines`)."""
from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from dataclasses import dataclass

MAX_ERRORS = 100  # errors a failed batch reports (the first ones)


@dataclass(frozen=True, slots=True)
class LineError:
    code: str
    message: str
    line: int | None = None  # 1-based line of the file
    param: str | None = None

    def as_dict(self) -> dict:
        return {"code": self.code, "message": self.message, "param": self.param, "line": self.line}


class InvalidInput(ValueError):
    def __init__(self, errors: list[LineError]) -> None:
        super().__init__(errors[0].message)
        self.errors = errors


@dataclass(frozen=True, slots=True)
class Request:
    index: int  # 0-based among the file's requests: the line's place in the batch (and its request id)
    line: int  # 1-based line of the file
    custom_id: str
    body: dict


@dataclass(slots=True)
class Line:
    """A request line not parsed yet: the runner parses it when it runs it (once: kept while it waits)."""
    index: int
    line: int
    raw: bytes
    _parsed: Request | None = None

    def request(self) -> Request:
        if self._parsed is None:
            value = json.loads(self.raw)
            self._parsed = Request(self.index, self.line, value["custom_id"], value["body"])
        return self._parsed


def lines_of(content: bytes) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, the line) for each non-blank line, found in place: no list of every line."""
    start, n, size = 0, 0, len(content)
    while start < size:
        end = content.find(b"\n", start)
        end = size if end < 0 else end
        n += 1
        if content[start:end].strip():
            yield n, content[start:end]
        start = end + 1


def _json_object(n: int, raw: bytes) -> tuple[dict | None, LineError | None]:
    try:
        value = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InvalidInput([LineError("invalid_file_format", "The file is not UTF-8 text.")]) from None
    except ValueError as e:
        return None, LineError("invalid_json_line", f"Line {n} is not valid JSON: {e}", n)
    if not isinstance(value, dict):
        return None, LineError("invalid_json_line", f"Line {n} is not a JSON object.", n)
    return value, None


def check_jsonl(content: bytes, *, max_lines: int, endpoint: str | None = None) -> int:
    """How many requests the file holds; InvalidInput for a file that is not UTF-8 JSONL of objects, is empty
    or holds more than `max_lines` requests, and, with `endpoint`, listing (the first MAX_ERRORS of) every
    line that is not a request for it: method POST, url the endpoint, a unique string custom_id, a JSON object
    body naming the same model as every other line, not streamed. One pass, a line at a time: no parsed line
    is kept, only the custom_ids seen."""
    errors: list[LineError] = []
    seen: set[str] = set()
    model, count = None, 0
    for n, raw in lines_of(content):
        count += 1
        if count > max_lines or len(errors) >= MAX_ERRORS:
            continue  # counted, not parsed: the answer is an error either way
        value, problem = _json_object(n, raw)
        if problem is None and endpoint is not None:
            problem = _problem(n, value, endpoint, seen)
            if problem is None:
                model = value["body"]["model"] if model is None else model
                if value["body"]["model"] != model:
                    problem = LineError("mismatched_model", f"Line {n}: every request of a batch must use the "
                                        f"same model ({model!r} on an earlier line).", n, "body.model")
            if problem is None:
                seen.add(value["custom_id"])
        if problem is not None:
            errors.append(problem)
    if errors:
        raise InvalidInput(errors)
    if count > max_lines:
        raise InvalidInput([LineError("too_many_requests",
                                      f"The file has {count} requests; a batch takes at most {max_lines}.")])
    if not count:
        raise InvalidInput([LineError("empty_file", "The file has no requests.")])
    return count


def request_lines(content: bytes, *, skip: Collection[int] = ()) -> Iterator[Line]:
    """The (validated) file's requests, unparsed, but for the indexes in `skip` (lines already done)."""
    for index, (n, raw) in enumerate(lines_of(content)):
        if index not in skip:
            yield Line(index, n, raw)


def _problem(n: int, v: dict, endpoint: str, seen: set[str]) -> LineError | None:
    custom_id = v.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id:
        return LineError("missing_required_parameter", f"Line {n}: custom_id must be a non-empty string.", n,
                         "custom_id")
    if len(custom_id) > 512:
        return LineError("invalid_value", f"Line {n}: custom_id is longer than 512 characters.", n, "custom_id")
    if custom_id in seen:
        return LineError("duplicate_custom_id", f"Line {n}: custom_id {custom_id[:64]!r} is used on an earlier "
                         "line; each must be unique within the batch.", n, "custom_id")
    if v.get("method") != "POST":
        return LineError("invalid_value", f"Line {n}: method must be \"POST\".", n, "method")
    if v.get("url") != endpoint:
        return LineError("invalid_url", f"Line {n}: url must be the batch's endpoint, {endpoint!r}.", n, "url")
    body = v.get("body")
    if not isinstance(body, dict):
        return LineError("invalid_value", f"Line {n}: body must be a JSON object.", n, "body")
    if not isinstance(body.get("model"), str) or not body["model"]:
        return LineError("missing_required_parameter", f"Line {n}: body.model must be a model name.", n,
                         "body.model")
    if body.get("stream"):
        return LineError("invalid_value", f"Line {n}: a batch request cannot be streamed (body.stream).", n,
                         "body.stream")
    return None
