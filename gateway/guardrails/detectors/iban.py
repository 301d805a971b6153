"""IBANs: country code, two check digits, up to 30 letters and digits (contiguous or in groups of four), valid
by ISO 13616's mod-97 check. A run that fails is retried without its last group, so a word after the number
does not hide it."""
from __future__ import annotations

import re
from collections.abc import Iterator

from gateway.guardrails.detectors.base import Span, open_from

_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{1,4}){3,8}(?![A-Za-z0-9])")


def mod97_ok(iban: str) -> bool:
    """Move the first four characters to the end, letters to numbers (A=10 ... Z=35): the number mod 97 is 1."""
    moved = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


# A text's end that could still become an IBAN: a capital, a country code, its check digits, then groups.
_OPEN = re.compile(r"[A-Z](?:[A-Z](?:\d(?:\d[A-Z0-9 ]*)?)?)?$")


class IbanDetector:
    name, mask, max_len = "iban", "[IBAN]", 42

    def open_from(self, text: str) -> int:
        return open_from(_OPEN, text, self.max_len)

    def spans(self, text: str) -> Iterator[Span]:
        for m in _IBAN.finditer(text):
            start, candidate = m.start(), m.group()
            while True:
                compact = candidate.replace(" ", "")
                if len(compact) < 15:
                    break
                if mod97_ok(compact):
                    yield start, start + len(candidate)
                    break
                if " " not in candidate:
                    break
                candidate = candidate.rsplit(" ", 1)[0]
