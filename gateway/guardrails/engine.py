"""A stage's rules applied to text: `Screen` finds every content rule's matches (deny patterns and PII) and
redacts them; `check_model` and `check_prompt_tokens` judge the request itself. A rule that raises refuses the
request (fail closed) unless it was saved with fail_open."""
from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gateway.guardrails.detectors.registry import DETECTORS
from gateway.guardrails.errors import ContentBlocked, GuardrailFailed
from gateway.guardrails.rules import Rule
from gateway.guardrails.tally import Tally

log = logging.getLogger("tollgate.guardrails")

CONTENT_KINDS = ("deny_pattern", "pii")


@dataclass(frozen=True, slots=True)
class Hit:
    rule: Rule
    start: int
    end: int
    mask: str


class Screen:
    """The content rules of one stage. `window` is the longest match any of them can make."""

    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules: tuple[Rule, ...] = tuple(r for r in rules if r.kind in CONTENT_KINDS)
        self.window = max((r.max_match for r in self.rules), default=0)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def open_from(self, text: str) -> int:
        """The earliest index at which a match that more text could complete may start: what a stream must
        still hold back. A deny pattern (any RE2) can only be bounded by its window; each PII entity knows
        which text ends could still grow into one (a word could be an address's local part, a digit a card's
        first), so prose that cannot is released at once."""
        end = len(text)
        return min((_open_from(r, text) for r in self.rules), default=end)

    def scan(self, text: str) -> list[Hit]:
        """Every rule's matches in `text`, by start; GuardrailFailed when a fail-closed rule raises."""
        hits: list[Hit] = []
        for rule in self.rules:
            try:
                hits.extend(_hits(rule, text))
            except Exception as e:
                # The exception's message may quote the text: log its type only.
                if rule.fail_open:
                    log.warning("guardrail failed; text let through (fail_open)",
                                extra={"rule": rule.name, "error": type(e).__name__})
                    continue
                log.error("guardrail failed; request refused (fail closed)",
                          extra={"rule": rule.name, "error": type(e).__name__})
                raise GuardrailFailed(rule.name) from None
        return sorted(hits, key=lambda h: (h.start, -h.end))

    def apply(self, text: str, tally: Tally, stage: str) -> str:
        """The whole text judged at once: ContentBlocked on a block rule, else redacted, every hit tallied."""
        hits = self.scan(text)
        blocking = next((h for h in hits if h.rule.mode == "block"), None)
        for h in hits:
            tally.add(h.rule)
        if blocking is not None:
            raise ContentBlocked(blocking.rule.name, stage)
        return redact(text, hits)


def _open_from(rule: Rule, text: str) -> int:
    if rule.kind == "deny_pattern":
        return max(0, len(text) - rule.max_match + 1)
    return min(DETECTORS[name].open_from(text) for name in rule.entities)


def _hits(rule: Rule, text: str) -> Iterable[Hit]:
    if rule.kind == "deny_pattern":
        mask = "[REDACTED]"
        return [Hit(rule, s, e, mask) for s, e in rule.compiled.spans(text)]
    return [Hit(rule, s, e, DETECTORS[name].mask) for name in rule.entities for s, e in DETECTORS[name].spans(text)]


def redact(text: str, hits: Sequence[Hit], start: int = 0, end: int | None = None) -> str:
    """text[start:end] with every redact-mode hit inside it masked (overlapping hits merge into the first's
    mask; a hit that began before `start` is masked from `start`)."""
    end = len(text) if end is None else end
    out, pos = [], start
    for h in hits:
        if h.rule.mode != "redact" or h.end <= pos or h.start >= end:
            continue
        out.append(text[pos:max(pos, h.start)])
        out.append(h.mask)
        pos = min(end, h.end)
    out.append(text[pos:end])
    return "".join(out)


def check_model(rules: Iterable[Rule], names: Iterable[str], tally: Tally) -> None:
    """model_access rules against the names the request's model goes by (as called, and the priced model)."""
    names = {n for n in names if n}
    for rule in rules:
        if rule.kind != "model_access":
            continue
        allowed = rule.allow_models is None or bool(names & set(rule.allow_models))
        if not allowed or names & set(rule.deny_models):
            tally.add(rule)
            if rule.mode == "block":
                raise ContentBlocked(rule.name, "input")


def check_prompt_tokens(rules: Iterable[Rule], prompt_tokens: int, tally: Tally) -> None:
    for rule in rules:
        if rule.kind == "max_prompt_tokens" and prompt_tokens > rule.limit:
            tally.add(rule)
            if rule.mode == "block":
                raise ContentBlocked(rule.name, "input")
