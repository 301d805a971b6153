"""Payment card numbers: 13-19 digits, optionally grouped by spaces or dashes, that pass the Luhn check (a
random 16-digit number fails it nine times in ten, so order numbers and ids are not cards)."""
from __future__ import annotations

import re
from collections.abc import Iterator

from gateway.guardrails.detectors.base import Span, digits, open_from

_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d]|-\d)")


def luhn_ok(number: str) -> bool:
    """The Luhn checksum: double every second digit from the right (minus 9 past 9); the sum is a multiple of 10."""
    total = 0
    for i, ch in enumerate(reversed(number)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


# A text's end that could still become a card number: digits, spaces and dashes from a digit.
_OPEN = re.compile(r"\d[\d -]*$")


class CardDetector:
    name, mask, max_len = "card", "[CARD]", 37

    def open_from(self, text: str) -> int:
        return open_from(_OPEN, text, self.max_len)

    def spans(self, text: str) -> Iterator[Span]:
        for m in _CARD.finditer(text):
            number = digits(m.group())
            if 13 <= len(number) <= 19 and luhn_ok(number) and len(set(number)) > 1:
                yield m.span()
