"""The output side of guardrails in the pipeline: each completion's text through a hold-back filter, streamed
(`deltas`) or whole (`choices`). A rule's block or failure, and the filter's own fault, raise ContentBlocked or
GuardrailFailed: the caller ends the answer with the matching error (pipeline.guard.as_api_error)."""
from __future__ import annotations

import dataclasses
import logging
from contextlib import contextmanager

from gateway.api.v1.pipeline.choices import Choice
from gateway.api.v1.pipeline.guard import counter
from gateway.api.v1.pipeline.run import Run
from gateway.guardrails.errors import ContentBlocked, GuardrailFailed
from gateway.guardrails.holdback import HoldbackFilter
from gateway.guardrails.policy import Policy
from gateway.serving.base import CompletionDelta

log = logging.getLogger("tollgate.guardrails")


class OutputGuard:
    """A run's output rules over its completions' text. `deltas` and `choices` raise ContentBlocked or
    GuardrailFailed (the caller ends the answer with the matching error)."""

    def __init__(self, run: Run, policy: Policy) -> None:
        self.run, self.policy = run, policy
        self._filters: dict[int, HoldbackFilter] = {}

    @classmethod
    def of(cls, run: Run) -> OutputGuard | None:
        policy = getattr(run, "guardrails", None)
        return cls(run, policy) if policy is not None and policy.output else None

    def _filter(self, index: int) -> HoldbackFilter:
        if index not in self._filters:
            self._filters[index] = self.policy.output_filter()
        return self._filters[index]

    def deltas(self, deltas: list[CompletionDelta]) -> list[CompletionDelta]:
        with _closed_on_failure():
            return self._deltas(deltas)

    def _deltas(self, deltas: list[CompletionDelta]) -> list[CompletionDelta]:
        out = []
        for d in deltas:
            f = self._filter(d.index)
            text = f.feed(d.text)
            if d.finish_reason is not None:
                text += f.finish()
            out.append(dataclasses.replace(d, text=text))
        return out

    def text(self, index: int) -> str:
        """What completion `index`'s client was sent (what a cache may keep)."""
        return self._filter(index).text

    def choices(self, choices: list[Choice]) -> list[Choice]:
        with _closed_on_failure():
            for c in choices:
                f = self._filter(c.index)
                c.parts = [f.feed(c.text) + f.finish()]
        return choices

    def report(self) -> None:
        self.policy.output_tally.report("output", self.run.principal.tenant_id, counter(self.run.svc))


@contextmanager
def _closed_on_failure():
    """The filter's own faults refuse the answer as a failing rule's do (never a raw answer, never a 500 that
    leaves the run unfinished); the exception's message may quote the text, so only its type is logged."""
    try:
        yield
    except (ContentBlocked, GuardrailFailed):
        raise
    except Exception as e:
        log.error("output guardrail filter failed; answer refused (fail closed)", extra={"error": type(e).__name__})
        raise GuardrailFailed("output filter") from None
