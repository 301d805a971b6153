"""POST /v1/completions (the legacy text-completion API)."""
from __future__ import annotations

import time

from fastapi import APIRouter, Request

from gateway.api.deps import TenantDep
from gateway.api.v1.body import CompletionBody
from gateway.api.v1.headers import PinHeader, SessionHeader
from gateway.api.v1.pipeline.admit import admit
from gateway.api.v1.pipeline.job import Job
from gateway.api.v1.pipeline.respond import respond, response_id
from gateway.api.v1.pipeline.run import Run
from gateway.services import AppServices
from gateway.schemas.openai import Completion, CompletionChoice

router = APIRouter()


class CompletionFormat:
    def __init__(self, run: Run) -> None:
        self.run, self.id, self.created = run, response_id(run, "cmpl"), int(time.time())

    def _make(self, text: str, finish_reason: str | None, *, usage=None, choices: bool = True) -> Completion:
        return Completion(id=self.id, created=self.created, model=self.run.served_as, usage=usage,
                          choices=[CompletionChoice(text=text, finish_reason=finish_reason)] if choices else [])

    def opening(self) -> None:
        return None  # text completions have no role chunk

    def delta(self, text: str, finish_reason: str | None) -> Completion:
        return self._make(text, finish_reason)

    def usage_chunk(self) -> Completion:
        return self._make("", None, usage=self.run.usage(), choices=False)

    def complete(self, text: str, finish_reason: str | None) -> Completion:
        return self._make(text, finish_reason, usage=self.run.usage())


@router.post("/completions")
async def completions(principal: TenantDep, body: CompletionBody, services: AppServices, request: Request,
                      pin: PinHeader = None, session: SessionHeader = None):
    """Create a text completion, whole or streamed as server-sent events."""
    job = Job.from_completion(body)
    run = await admit(services, principal, request.state.request_id, job, pin=pin, session=session)
    return await respond(run, CompletionFormat, request=request)
