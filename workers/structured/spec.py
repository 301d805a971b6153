"""What a request asks its output to match: plain data, its shape checked when it is built. Compiling it
against a tokenizer (and refusing a schema or grammar that does not compile) is GrammarCompiler's job.

kind          value                                   the output is
json_object   None                                    one JSON object (OpenAI response_format json_object)
json_schema   a JSON Schema, as a dict                one JSON value valid under it (json_schema, tool arguments)
regex         a regular expression (Rust regex syntax) a string the whole regex matches
grammar       a Lark grammar (llguidance's dialect)   a string of the grammar's language
              or a GBNF grammar (llama.cpp's)

On the replica wire it is the dict {"kind": ..., "value": ...} (to_wire / from_wire).
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

# A spec's value, as canonical text, may not be longer than this: compiling runs on the submission path.
MAX_VALUE_CHARS = 100_000


def _none(value: object) -> str:
    if value is not None:
        raise ValueError("structured.value must be null (absent) for kind 'json_object'")
    return ""


def _schema(value: object) -> str:
    if not isinstance(value, dict):
        raise ValueError(f"structured.value must be a JSON Schema object for kind 'json_schema', "
                         f"got {type(value).__name__}")
    try:
        # Key order kept: properties are generated in the schema's order.
        return json.dumps(value, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"structured.value is not JSON: {exc}") from exc


def _text(kind: str) -> Callable[[object], str]:
    def check(value: object) -> str:
        if not isinstance(value, str) or not value:
            raise ValueError(f"structured.value must be a non-empty string for kind {kind!r}")
        return value
    return check


# kind -> its value's check, which returns the value's canonical text (the compile cache's key).
_CANONICAL: dict[str, Callable[[object], str]] = {
    "json_object": _none,
    "json_schema": _schema,
    "regex": _text("regex"),
    "grammar": _text("grammar"),
}
KINDS = tuple(_CANONICAL)


@dataclass(frozen=True, slots=True)
class StructuredOutput:
    kind: str
    value: dict | str | None = None
    # (kind, canonical value text): equal specs share one compiled grammar.
    key: tuple[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in _CANONICAL:
            raise ValueError(f"structured.kind must be one of {list(KINDS)}, got {self.kind!r}")
        text = _CANONICAL[self.kind](self.value)
        if len(text) > MAX_VALUE_CHARS:
            raise ValueError(f"structured.value is {len(text)} characters, more than {MAX_VALUE_CHARS}")
        if self.kind == "json_schema":
            object.__setattr__(self, "value", json.loads(text))  # our own copy: a caller's later edits cannot reach it
        object.__setattr__(self, "key", (self.kind, text))

    @classmethod
    def from_wire(cls, wire: object) -> StructuredOutput:
        if not isinstance(wire, dict) or not isinstance(wire.get("kind"), str) or set(wire) - {"kind", "value"}:
            raise ValueError('structured must be {"kind": ..., "value": ...}')
        return cls(wire["kind"], wire.get("value"))

    def to_wire(self) -> dict:
        return {"kind": self.kind, "value": self.value}

    @classmethod
    def from_response_format(cls, response_format: dict | None) -> StructuredOutput | None:
        """OpenAI's `response_format`: {"type": "text"} (or None) -> None; {"type": "json_object"};
        {"type": "json_schema", "json_schema": {"name", "schema", "strict"}} -> the schema, always enforced."""
        rf = response_format
        kind = rf.get("type") if isinstance(rf, dict) else None
        if rf is None or kind == "text":
            return None
        if kind == "json_object":
            return cls("json_object")
        if kind == "json_schema":
            spec = rf.get("json_schema")
            if not isinstance(spec, dict) or not isinstance(spec.get("schema"), dict):
                raise ValueError("response_format.json_schema.schema must be a JSON Schema object")
            return cls("json_schema", spec["schema"])
        raise ValueError(f"response_format.type must be 'text', 'json_object' or 'json_schema', got {kind!r}")
