"""IP addresses, v4 and v6, each candidate parsed by `ipaddress` (so 999.1.1.1 and 12:30:45 are not addresses)."""
from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator

from gateway.guardrails.detectors.base import Span, open_from

_V4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)")
_V6 = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9A-Fa-f]{0,4})(?![\w:]|\.\d)")


# A text's end that could still become an address: hex digits, colons and dots.
_OPEN = re.compile(r"[0-9A-Fa-f:][0-9A-Fa-f:.]*$")


class IpDetector:
    name, mask, max_len = "ip", "[IP]", 45

    def open_from(self, text: str) -> int:
        return open_from(_OPEN, text, self.max_len)

    def spans(self, text: str) -> Iterator[Span]:
        v6 = [m.span() for m in _V6.finditer(text)
              if any(c not in ":." for c in m.group()) and _valid(ipaddress.IPv6Address, m.group())]
        # An IPv4 tail of an IPv6 address (::ffff:10.0.0.1) is part of that address, not one of its own.
        v4 = [m.span() for m in _V4.finditer(text) if _valid(ipaddress.IPv4Address, m.group())
              and not any(s <= m.start() < e for s, e in v6)]
        yield from sorted(v4 + v6)


def _valid(kind, s: str) -> bool:
    try:
        kind(s)
    except ValueError:
        return False
    return True
