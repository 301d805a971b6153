"""The streaming side of output guardrails: text goes out only once no match can still grow over it.

A match still to come includes text not yet produced, so it starts no earlier than `Screen.open_from`: no
more than a rule's longest match behind the end (a deny pattern's window, an entity's max_len), and, for PII,
no earlier than the text end that could still become one (prose is released at once; "jo" is held, since it
could be an address's start). A match already found that reaches past that point holds the cut back to its
start. What is released is redacted; a block rule's match raises ContentBlocked before any of it is released.
`finish` releases the rest at the end of the answer. Matching looks back over the last CONTEXT released
characters too, so a boundary check (a digit before a card number) sees the text as the model wrote it."""
from __future__ import annotations

from gateway.guardrails.engine import Screen, redact
from gateway.guardrails.errors import ContentBlocked
from gateway.guardrails.tally import Tally

CONTEXT = 64


class HoldbackFilter:
    """One completion's text through a stage's Screen; `feed` and `finish` return what may be sent."""

    def __init__(self, screen: Screen, tally: Tally) -> None:
        self.screen, self.tally = screen, tally
        # The model's text from CONTEXT characters before the release point on (older text is dropped, so a long
        # answer costs the same per delta as a short one); _buf[:_sent] is released.
        self._buf = ""
        self._sent = 0
        self.released: list[str] = []  # what the client got: a cache keeps this, never the raw text

    @property
    def held(self) -> int:
        return len(self._buf) - self._sent

    def feed(self, delta: str) -> str:
        self._buf += delta
        return self._release(final=False)

    def finish(self) -> str:
        return self._release(final=True)

    @property
    def text(self) -> str:
        return "".join(self.released)

    def _release(self, *, final: bool) -> str:
        buf, sent, end = self._buf, self._sent, len(self._buf)
        hits = [h for h in self.screen.scan(buf) if h.end > sent]  # those wholly released were counted already
        # A match touching the end may still grow or vanish (a boundary not yet seen): settled only at the end.
        blocking = next((h for h in hits if h.rule.mode == "block" and (final or h.end < end)), None)
        if blocking is not None:
            self.tally.add(blocking.rule)
            raise ContentBlocked(blocking.rule.name, "output")
        cut = end if final else self.screen.open_from(buf)
        for h in hits:
            if h.start < cut < h.end or (not final and h.end == end):
                cut = min(cut, h.start)
        cut = max(cut, sent)
        for h in hits:
            if h.end <= cut:
                self.tally.add(h.rule)
        out = redact(buf, hits, sent, cut)
        if out:
            self.released.append(out)
        drop = max(0, cut - CONTEXT)
        self._buf, self._sent = buf[drop:], cut - drop
        return out
