"""E-mail addresses: local part, @, a dotted domain ending in a letters-only top-level label."""
from __future__ import annotations

import re
from collections.abc import Iterator

from gateway.guardrails.detectors.base import Span, open_from

# Bounded repeats everywhere: the longest possible match is 64 + 1 + 189 = 254 (RFC 5321's limit).
_EMAIL = re.compile(r"(?<![\w.%+-])[A-Za-z0-9._%+-]{1,64}@(?:[A-Za-z0-9-]{1,63}\.){1,8}[A-Za-z]{2,24}(?![\w-]|\.\w)")


# A text's end that could still become an address: local part, then maybe "@" and part of a domain.
_OPEN = re.compile(r"[A-Za-z0-9._%+-]+(?:@[A-Za-z0-9.-]*)?$")


class EmailDetector:
    name, mask, max_len = "email", "[EMAIL]", 254

    def open_from(self, text: str) -> int:
        return open_from(_OPEN, text, self.max_len)

    def spans(self, text: str) -> Iterator[Span]:
        for m in _EMAIL.finditer(text):
            local = m.group().partition("@")[0]
            if not (local.startswith(".") or local.endswith(".") or ".." in local):
                yield m.span()
