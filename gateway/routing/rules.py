"""Routing rules: plain data and the pure first-match evaluation.

An alias may carry an ordered list of rules. Each has a condition on what is known of a request before it
is tokenized (`Facts`) and a target split (a `Route` of its own, so a target is weighted and sticky like an
alias). The first rule whose every set field matches decides; none matching leaves the alias' own split."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from gateway.routing.route import Route


@dataclass(frozen=True, slots=True)
class Facts:
    """What admission knows of a request before routing it."""

    prompt_tokens: int  # an upper bound: the prompt's UTF-8 bytes (no tokenizer has run yet)
    max_tokens: int  # the request's max_tokens, or the gateway's default
    plan: str | None = None  # the tenant's plan
    task: str | None = None  # the classifier's class; None: not computed, or below its threshold


@dataclass(frozen=True, slots=True)
class Span:
    """An inclusive range; None leaves that side open."""

    min: int | None = None
    max: int | None = None

    def holds(self, value: int) -> bool:
        return (self.min is None or value >= self.min) and (self.max is None or value <= self.max)

    def to_dict(self) -> dict:
        return {k: v for k, v in (("min", self.min), ("max", self.max)) if v is not None}


@dataclass(frozen=True, slots=True)
class Condition:
    """Every field set must match (AND); a condition with none set matches every request."""

    prompt_tokens: Span | None = None
    max_tokens: Span | None = None
    plans: frozenset[str] | None = None
    tasks: frozenset[str] | None = None

    def matches(self, facts: Facts) -> bool:
        return ((self.prompt_tokens is None or self.prompt_tokens.holds(facts.prompt_tokens))
                and (self.max_tokens is None or self.max_tokens.holds(facts.max_tokens))
                and (self.plans is None or facts.plan in self.plans)
                and (self.tasks is None or facts.task in self.tasks))

    def to_dict(self) -> dict:
        out: dict = {}
        if self.prompt_tokens is not None:
            out["prompt_tokens"] = self.prompt_tokens.to_dict()
        if self.max_tokens is not None:
            out["max_tokens"] = self.max_tokens.to_dict()
        if self.plans is not None:
            out["plan"] = sorted(self.plans)
        if self.tasks is not None:
            out["task"] = sorted(self.tasks)
        return out


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    when: Condition
    target: Route  # the split matching requests go to (its alias is the rule's alias)

    def to_dict(self) -> dict:
        return {"name": self.name, "when": self.when.to_dict(), "target": dict(self.target.weights)}


def first_match(rules: Sequence[Rule], facts: Facts) -> Rule | None:
    return next((r for r in rules if r.when.matches(facts)), None)


def needs_task(rules: Sequence[Rule], facts: Facts) -> bool:
    """Whether deciding needs the request's task class (an embedding): only when evaluation reaches a task
    rule whose other fields match, i.e. no earlier rule without a task condition decides first."""
    for rule in rules:
        if rule.when.tasks is None:
            if rule.when.matches(facts):
                return False
        elif replace(rule.when, tasks=None).matches(facts):
            return True
    return False
