"""What every PII detector is: a name, the longest text it can match (the streaming hold-back window is built
from it), and the spans of its entity in a text, validated (a checksum, an address parser) where the entity has
a validity rule, so that near misses are not reported."""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Protocol

Span = tuple[int, int]  # [start, end) in str indices


class Detector(Protocol):
    name: str  # the entity, as rules name it ("email")
    mask: str  # what a redacted match becomes ("[EMAIL]")
    max_len: int  # no match is longer: a stream holds back this many characters

    def spans(self, text: str) -> Iterator[Span]:
        ...

    def open_from(self, text: str) -> int:
        """The earliest index at which a match that more text could complete may start (len(text): none)."""
        ...


def open_from(open_tail: re.Pattern, text: str, max_len: int) -> int:
    """Where a match still to come could start, given `open_tail`: a pattern for every text end that is a prefix
    of a match (anchored at $). A future match also spans at most max_len characters, more text included."""
    end = len(text)
    earliest = max(0, end - max_len + 1)
    m = open_tail.search(text, earliest)
    return m.start() if m else end


def digits(s: str) -> str:
    return "".join(c for c in s if c.isdigit())
