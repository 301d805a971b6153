"""POST /v1/chat/completions."""
from __future__ import annotations

import time

from fastapi import APIRouter, Request

from gateway.api.deps import TenantDep
from gateway.services import AppServices
from gateway.api.v1.body import ChatBody
from gateway.api.v1.generation import Job, Run, admit, respond, response_id
from gateway.api.v1.headers import PinHeader, SessionHeader
from gateway.schemas.openai import (AssistantMessage, ChatChoice, ChatCompletion, ChatCompletionChunk,
                                    ChunkChoice, Delta)

router = APIRouter()


class ChatFormat:
    def __init__(self, run: Run) -> None:
        self.run, self.id, self.created = run, response_id(run, "chatcmpl"), int(time.time())

    def _chunk(self, choices: list[ChunkChoice], usage=None) -> ChatCompletionChunk:
        return ChatCompletionChunk(id=self.id, created=self.created, model=self.run.version, choices=choices,
                                   usage=usage)

    def opening(self) -> ChatCompletionChunk:
        return self._chunk([ChunkChoice(delta=Delta(role="assistant", content=""))])

    def delta(self, text: str, finish_reason: str | None) -> ChatCompletionChunk:
        return self._chunk([ChunkChoice(delta=Delta(content=text or None), finish_reason=finish_reason)])

    def usage_chunk(self) -> ChatCompletionChunk:
        return self._chunk([], usage=self.run.usage())

    def complete(self, text: str, finish_reason: str | None) -> ChatCompletion:
        return ChatCompletion(id=self.id, created=self.created, model=self.run.version, usage=self.run.usage(),
                              choices=[ChatChoice(message=AssistantMessage(content=text), finish_reason=finish_reason)])


@router.post("/chat/completions")
async def chat_completions(principal: TenantDep, body: ChatBody, services: AppServices, request: Request,
                           pin: PinHeader = None, session: SessionHeader = None):
    """Create a chat completion, whole or streamed as server-sent events."""
    run = await admit(services, principal, request.state.request_id, Job.from_chat(body), pin=pin, session=session)
    return await respond(run, ChatFormat)
