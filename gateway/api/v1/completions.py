"""POST /v1/completions (the legacy text-completion API)."""
from __future__ import annotations

import time

from fastapi import APIRouter, Request

from gateway.api.deps import TenantDep
from gateway.api.v1.body import CompletionBody, documented
from gateway.api.v1.headers import PinHeader, SessionHeader
from gateway.api.v1.pipeline.admit import admit
from gateway.api.v1.pipeline.guard import admitted, screen_input
from gateway.api.v1.pipeline.job import Job
from gateway.api.v1.logprobs import completion_logprobs
from gateway.api.v1.pipeline.choices import Choice
from gateway.api.v1.pipeline.respond import respond, response_id
from gateway.api.v1.pipeline.run import Run
from gateway.services import Services
from gateway.services.deps import ServicesDep
from gateway.schemas.openai import Completion, CompletionChoice, CompletionRequest, Usage
from gateway.serving.base import CompletionDelta

router = APIRouter()


class CompletionFormat:
    def __init__(self, run: Run) -> None:
        self.run, self.id, self.created = run, response_id(run, "cmpl"), int(time.time())
        self._offsets: dict[int, int] = {}  # per completion: text streamed so far (text_offset's origin)

    def _make(self, choices: list[CompletionChoice], *, usage=None) -> Completion:
        return Completion(id=self.id, created=self.created, model=self.run.served_as, usage=usage, choices=choices)

    def _texts(self, token_ids: list[int]) -> list[str]:
        return self.run.svc.backend.token_texts(self.run.version, token_ids)

    def opening(self) -> None:
        return None  # text completions have no role chunk

    def delta(self, deltas: list[CompletionDelta], usage: Usage | None) -> Completion:
        choices = []
        for d in deltas:
            offset = self._offsets.get(d.index, 0)
            self._offsets[d.index] = offset + len(d.text)
            choices.append(CompletionChoice(index=d.index, text=d.text, finish_reason=d.finish_reason,
                                            logprobs=completion_logprobs(d.logprobs, self._texts, offset)))
        return self._make(choices, usage=usage)

    def usage_chunk(self) -> Completion:
        return self._make([], usage=self.run.usage())

    def complete(self, choices: list[Choice]) -> Completion:
        return self._make([CompletionChoice(index=c.index, text=c.text, finish_reason=c.finish_reason,
                                            logprobs=completion_logprobs(c.logprobs, self._texts))
                           for c in choices], usage=self.run.usage())


@router.post("/completions", openapi_extra=documented(CompletionRequest))
async def completions(principal: TenantDep, body: CompletionBody, services: ServicesDep, request: Request,
                      pin: PinHeader = None, session: SessionHeader = None):
    """Create a text completion, whole or streamed as server-sent events."""
    return await answer_completion(services, principal, Job.from_completion(body), request.state.request_id,
                                   request=request, pin=pin, session=session)


async def answer_completion(services: Services, principal, job: Job, request_id: str, *,
                            request: Request | None = None, pin: str | None = None, session: str | None = None):
    """The whole completions pipeline for one request, HTTP or a Batch API line (`request` None)."""
    job, _, guardrails = await screen_input(services, principal, job)  # redacted before it is counted
    run = await admit(services, principal, request_id, job, pin=pin, session=session)
    admitted(run, guardrails)
    return await respond(run, CompletionFormat, request=request)
