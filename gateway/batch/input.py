"""A batch's input file: JSONL, one request a line. Pure: bytes in, requests or errors out.

Checked twice, as OpenAI does: the upload must be JSONL (`parse_jsonl`, a 400 at POST /v1/files), and a
batch must find every line a request for its endpoint (`requests_of`, else the batch fails with
`errors.data`, each naming its 1-based line)."""
from __future__ import annotations

import json
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
class Record:
    line: int  # 1-based line of the file
    value: object  # the line's JSON


@dataclass(frozen=True, slots=True)
class Request:
    index: int  # 0-based among the file's requests: the line's place in the batch (and its request id)
    line: int  # 1-based line of the file
    custom_id: str
    body: dict


def parse_jsonl(content: bytes, *, max_lines: int) -> list[Record]:
    """Each non-blank line's JSON; InvalidInput for a file that is not UTF-8 JSONL of objects, is empty,
    or holds more than `max_lines` requests."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput([LineError("invalid_file_format", "The file is not UTF-8 text.")]) from None
    records, errors = [], []
    for n, raw in enumerate(text.split("\n"), 1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except ValueError as e:
            errors.append(LineError("invalid_json_line", f"Line {n} is not valid JSON: {e}", n))
            continue
        if not isinstance(value, dict):
            errors.append(LineError("invalid_json_line", f"Line {n} is not a JSON object.", n))
            continue
        records.append(Record(n, value))
    if errors:
        raise InvalidInput(errors[:MAX_ERRORS])
    if not records:
        raise InvalidInput([LineError("empty_file", "The file has no requests.")])
    if len(records) > max_lines:
        raise InvalidInput([LineError("too_many_requests",
                                      f"The file has {len(records)} requests; a batch takes at most {max_lines}.")])
    return records


def requests_of(records: list[Record], endpoint: str) -> list[Request]:
    """The batch's requests; InvalidInput listing (the first MAX_ERRORS of) every line that is not a
    request for `endpoint`: method POST, url the endpoint, a unique string custom_id, a JSON object body
    naming the same model as every other line, not streamed."""
    out, errors, seen, model = [], [], set(), None
    for i, rec in enumerate(records):
        problem = _problem(rec, endpoint, seen)
        if problem is None:
            body = rec.value["body"]
            model = body["model"] if model is None else model
            if body["model"] != model:
                problem = LineError("mismatched_model", f"Line {rec.line}: every request of a batch must use the "
                                    f"same model ({model!r} on an earlier line).", rec.line, "body.model")
        if problem is not None:
            errors.append(problem)
            continue
        seen.add(rec.value["custom_id"])
        out.append(Request(i, rec.line, rec.value["custom_id"], rec.value["body"]))
    if errors:
        raise InvalidInput(errors[:MAX_ERRORS])
    return out


def _problem(rec: Record, endpoint: str, seen: set[str]) -> LineError | None:
    v, n = rec.value, rec.line
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
