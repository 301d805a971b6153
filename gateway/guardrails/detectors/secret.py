"""API-key-shaped secrets: well-known prefixes (OpenAI/Stripe `sk-`, AWS access key ids, GitHub, Slack, Google,
Tollgate's own `tg-` keys) and any other long token whose characters look random (Shannon entropy >= 4.2 bits
per character, letters and digits mixed: English words, hex digests and UUIDs stay below)."""
from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator

from gateway.guardrails.detectors.base import Span, open_from

_KNOWN = re.compile(
    r"(?<![\w-])(?:"
    r"sk-(?:proj-|live-|test-|ant-)?[A-Za-z0-9_-]{20,200}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|gh[pousr]_[A-Za-z0-9]{36,200}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,200}"
    r"|AIza[0-9A-Za-z_-]{35}"
    r"|tg-[A-Za-z0-9_-]{20,200}"
    r")(?![\w-])")
_TOKEN = re.compile(r"(?<![\w+/=-])[A-Za-z0-9+/_-]{32,256}={0,2}(?![\w+/=-])")
MIN_ENTROPY_BITS = 4.2


def entropy(s: str) -> float:
    """Shannon entropy of the token's characters, in bits per character."""
    counts, n = Counter(s), len(s)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _random_looking(token: str) -> bool:
    return (any(c.isdigit() for c in token) and any(c.isalpha() for c in token)
            and entropy(token) >= MIN_ENTROPY_BITS)


# A text's end that could still become a key: every shape above is made of these characters.
_OPEN = re.compile(r"[A-Za-z0-9+/_=-]+$")


class SecretDetector:
    name, mask, max_len = "secret", "[SECRET]", 256

    def open_from(self, text: str) -> int:
        return open_from(_OPEN, text, self.max_len)

    def spans(self, text: str) -> Iterator[Span]:
        known = [m.span() for m in _KNOWN.finditer(text)]
        generic = [m.span() for m in _TOKEN.finditer(text) if _random_looking(m.group())
                   and not any(m.start() < e and s < m.end() for s, e in known)]
        yield from sorted(known + generic)
