"""What a guardrail says when it stops a request; the API layer turns these into OpenAI-shaped errors."""
from __future__ import annotations


class RuleError(ValueError):
    """A rule that cannot be used; `param` names the offending field ("rules[2].pattern")."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.param = param


class ContentBlocked(Exception):
    """A `block` rule matched; `rule` is its name (safe to show: the tenant chose it, it holds no content)."""

    def __init__(self, rule: str, stage: str) -> None:
        super().__init__(f"The {stage} was blocked by guardrail `{rule}`.")
        self.rule, self.stage = rule, stage


class GuardrailFailed(Exception):
    """A rule raised while checking a text and does not fail open: the request is refused (fail closed)."""

    def __init__(self, rule: str) -> None:
        super().__init__(f"Guardrail `{rule}` could not check this request, so it was refused.")
        self.rule = rule
