"""Phone numbers: an optional +country code, digit groups split by spaces, dots, dashes or a (area) code.
Without a leading + it takes 10-15 digits (so dates, years and short counts are not phones); with one, 8-15
(E.164's maximum)."""
from __future__ import annotations

import re
from collections.abc import Iterator

from gateway.guardrails.detectors.base import Span, digits, open_from

_PHONE = re.compile(r"(?<![\w+.-])(\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]?\d{2,4}){1,5}(?![\w-]|\.\d)")


# A text's end that could still become a number: from a "+", "(" or digit, only number characters.
_OPEN = re.compile(r"[+(\d][\d() .+-]*$")


class PhoneDetector:
    name, mask, max_len = "phone", "[PHONE]", 40

    def open_from(self, text: str) -> int:
        return open_from(_OPEN, text, self.max_len)

    def spans(self, text: str) -> Iterator[Span]:
        for m in _PHONE.finditer(text):
            n = len(digits(m.group()))
            low = 8 if m.group(1) else 10
            if low <= n <= 15 and _mixed_separators_ok(m.group()):
                yield m.span()


def _mixed_separators_ok(s: str) -> bool:
    """An IPv4 address or a version string uses only dots between short groups: not a phone number."""
    return not (s.count(".") >= 3 and " " not in s and "-" not in s)
