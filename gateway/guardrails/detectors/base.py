"""What every PII detector is: a name, the longest text it can match (the streaming hold-back window is built
from it), and the spans of its entity in a text, validated (a checksum, an address parser) where the entity has
a validity rule, so that near misses are not reported."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

Span = tuple[int, int]  # [start, end) in str indices


class Detector(Protocol):
    name: str  # the entity, as rules name it ("email")
    mask: str  # what a redacted match becomes ("[EMAIL]")
    max_len: int  # no match is longer: a stream holds back this many characters

    def spans(self, text: str) -> Iterator[Span]:
        ...


def digits(s: str) -> str:
    return "".join(c for c in s if c.isdigit())
