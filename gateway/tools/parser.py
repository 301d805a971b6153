"""The model's text back into OpenAI tool calls: whole (parse_calls) or as it streams (CallStream).

A call block is <tool_call>[{"name": ..., "arguments": {...}}, ...]</tool_call> (one object instead of a list is
taken too). A block that does not parse, or names a function that was not offered, stays text: the client sees
what the model wrote rather than a call it could not make.
"""
from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field

from gateway.tools.grammar import CLOSE, OPEN


@dataclass(frozen=True, slots=True)
class ParsedCall:
    id: str
    name: str
    arguments: str  # a JSON object, as OpenAI sends it: a string


def new_call_id() -> str:
    return f"call_{secrets.token_hex(12)}"


def parse_block(body: str, names: tuple[str, ...]) -> list[ParsedCall] | None:
    """The calls between one block's tags, or None when they are not calls of offered functions."""
    try:
        value = json.loads(body)
    except ValueError:
        return None
    items = value if isinstance(value, list) else [value]
    calls = []
    for item in items:
        if not isinstance(item, dict) or item.get("name") not in names:
            return None
        args = item.get("arguments", {})
        if isinstance(args, str):  # some models write the arguments as a JSON string already
            try:
                args = json.loads(args)
            except ValueError:
                return None
        if not isinstance(args, dict):
            return None
        calls.append(ParsedCall(new_call_id(), item["name"], json.dumps(args, ensure_ascii=False)))
    return calls or None


def parse_calls(text: str, names: tuple[str, ...]) -> tuple[str, list[ParsedCall]]:
    """(the text outside call blocks, the calls) of a whole answer."""
    stream = CallStream(names)
    parts = [stream.feed(text), stream.finish()]
    return "".join(p.text for p in parts).strip(), [c for p in parts for c in p.calls]


@dataclass(slots=True)
class Piece:
    text: str = ""
    calls: list[ParsedCall] = field(default_factory=list)


class CallStream:
    """One completion's text as it arrives -> the text to show and the calls complete so far. Text that might
    be the start of a call tag is held back until the next piece tells."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self._held = ""  # text not yet released: a possible tag start, or an open block
        self._in_block = False
        self.calls_made = 0

    def feed(self, text: str) -> Piece:
        self._held += text
        out = Piece()
        while True:
            if self._in_block:
                end = self._held.find(CLOSE)
                if end < 0:
                    return out
                body, self._held = self._held[:end], self._held[end + len(CLOSE):]
                self._in_block = False
                calls = parse_block(body, self.names)
                if calls is None:
                    out.text += OPEN + body + CLOSE
                else:
                    out.calls.extend(calls)
                    self.calls_made += len(calls)
                continue
            start = self._held.find(OPEN)
            if start >= 0:
                out.text += self._held[:start]
                self._held = self._held[start + len(OPEN):]
                self._in_block = True
                continue
            keep = _partial_tag(self._held)
            out.text += self._held[:len(self._held) - keep]
            self._held = self._held[len(self._held) - keep:]
            return out

    def finish(self) -> Piece:
        """What is still held at the end: an unclosed block is text (a cut-off call is not a call)."""
        held = (OPEN + self._held) if self._in_block else self._held
        self._held, self._in_block = "", False
        return Piece(text=held)


def _partial_tag(text: str) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of the opening tag."""
    for k in range(min(len(text), len(OPEN) - 1), 0, -1):
        if OPEN.startswith(text[-k:]):
            return k
    return 0
