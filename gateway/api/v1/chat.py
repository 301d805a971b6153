"""POST /v1/chat/completions."""
from __future__ import annotations

import time

from fastapi import APIRouter, Request

from gateway.api.deps import TenantDep
from gateway.api.v1.body import ChatBody
from gateway.api.v1.cached import consult, keeper, replay
from gateway.api.v1.headers import PinHeader, SessionHeader
from gateway.api.v1.pipeline.admit import admit
from gateway.api.v1.pipeline.job import Job
from gateway.api.v1.pipeline.respond import respond, response_id, status_of
from gateway.api.v1.pipeline.run import Run
from gateway.services import AppServices
from gateway.schemas.openai import (AssistantMessage, ChatChoice, ChatCompletion, ChatCompletionChunk,
                                    ChunkChoice, Delta)

router = APIRouter()


class ChatFormat:
    def __init__(self, run: Run) -> None:
        self.run, self.id, self.created = run, response_id(run, "chatcmpl"), int(time.time())

    def _chunk(self, choices: list[ChunkChoice], usage=None) -> ChatCompletionChunk:
        return ChatCompletionChunk(id=self.id, created=self.created, model=self.run.served_as, choices=choices,
                                   usage=usage)

    def opening(self) -> ChatCompletionChunk:
        return self._chunk([ChunkChoice(delta=Delta(role="assistant", content=""))])

    def delta(self, text: str, finish_reason: str | None) -> ChatCompletionChunk:
        return self._chunk([ChunkChoice(delta=Delta(content=text or None), finish_reason=finish_reason)])

    def usage_chunk(self) -> ChatCompletionChunk:
        return self._chunk([], usage=self.run.usage())

    def complete(self, text: str, finish_reason: str | None) -> ChatCompletion:
        return ChatCompletion(id=self.id, created=self.created, model=self.run.served_as, usage=self.run.usage(),
                              choices=[ChatChoice(message=AssistantMessage(content=text), finish_reason=finish_reason)])


@router.post("/chat/completions")
async def chat_completions(principal: TenantDep, body: ChatBody, services: AppServices, request: Request,
                           pin: PinHeader = None, session: SessionHeader = None):
    """Create a chat completion, whole or streamed as SSE; replayed from the semantic cache on a hit."""
    run = await admit(services, principal, request.state.request_id, Job.from_chat(body), pin=pin, session=session)
    try:
        step = await consult(services, principal, body, run)  # after admission: limits first, embedding second
    except BaseException as e:  # the client left during the lookup: release what the run holds
        run.finish(status_of(e))
        raise
    if step.hit:
        return replay(run, ChatFormat, step.lookup)
    run.cache_status = step.lookup.status
    return await respond(run, ChatFormat, keep=keeper(services, step), request=request)
