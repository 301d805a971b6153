"""One request's guardrails, split by stage, for the key that sent it: what the pipeline holds."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from gateway.guardrails.engine import Screen
from gateway.guardrails.holdback import HoldbackFilter
from gateway.guardrails.rules import Rule
from gateway.guardrails.tally import Tally


@dataclass(slots=True)
class Policy:
    input_rules: tuple[Rule, ...]
    input: Screen
    output: Screen
    tally: Tally = field(default_factory=Tally)  # input firings; the header is built from it
    output_tally: Tally = field(default_factory=Tally)

    @classmethod
    def of(cls, rules: Iterable[Rule], key_id: str | None) -> Policy:
        mine = [r for r in rules if r.applies_to(key_id)]
        inputs = tuple(r for r in mine if r.stage == "input")
        return cls(inputs, Screen(inputs), Screen(r for r in mine if r.stage == "output"))

    def output_filter(self) -> HoldbackFilter | None:
        """A fresh filter for one completion's text, or None when no output rule applies."""
        return HoldbackFilter(self.output, self.output_tally) if self.output else None
