"""POST /v1/chat/completions."""
from __future__ import annotations

import time

from fastapi import APIRouter, Request
from pydantic_core import to_json

from gateway.api.deps import TenantDep
from gateway.api.v1.body import ChatBody, documented
from gateway.api.v1.cached import CacheStep, consult, keeper, replay
from gateway.api.v1.logprobs import chat_logprobs
from gateway.api.v1.tool_calls import StreamedCalls, offered_names, whole
from gateway.api.v1.headers import PinHeader, SessionHeader
from gateway.api.v1.pipeline.admit import admit
from gateway.api.v1.pipeline.job import Job, client_body
from gateway.api.v1.pipeline.choices import Choice
from gateway.api.v1.pipeline.guard import admitted, screen_input
from gateway.api.v1.pipeline.respond import respond, response_id, status_of
from gateway.api.v1.pipeline.run import Run
from gateway.api.v1.prompted import with_prompt
from gateway.cache import CacheLookup
from gateway.serving.base import CompletionDelta
from gateway.services import Services
from gateway.services.deps import ServicesDep
from gateway.schemas.openai import (AssistantMessage, ChatChoice, ChatCompletion, ChatCompletionChunk,
                                    ChatCompletionRequest, ChunkChoice, Delta, ToolCall, ToolCallDelta, Usage)

router = APIRouter()


class ChatFormat:
    def __init__(self, run: Run) -> None:
        self.run, self.id, self.created = run, response_id(run, "chatcmpl"), int(time.time())
        # An upstream version calls tools natively (its calls come as they are); a pool version's text is parsed.
        info = run.svc.loaded_versions().get(run.version) if run.version else None
        self.native = info is not None and info.upstream is not None
        self.names = () if self.native else offered_names(run.job.tools)  # functions the answer is parsed for
        self.streamed = StreamedCalls(self.names)
        self._text_template: tuple[str, str, str, str] | None = None

    def _chunk(self, choices: list[ChunkChoice], usage=None) -> ChatCompletionChunk:
        return ChatCompletionChunk(id=self.id, created=self.created, model=self.run.served_as, choices=choices,
                                   usage=usage)

    def _texts(self, token_ids: list[int]) -> list[str]:
        return self.run.svc.backend.token_texts(self.run.version, token_ids)

    def opening(self) -> ChatCompletionChunk:
        return self._chunk([ChunkChoice(index=i, delta=Delta(role="assistant", content=""))
                            for i in range(self.run.job.n)])

    def delta(self, deltas: list[CompletionDelta], usage: Usage | None) -> ChatCompletionChunk | str:
        if len(deltas) == 1 and not self.names:
            d = deltas[0]
            if d.text and d.finish_reason is None and d.logprobs is None and not d.tool_calls:
                return self._text_json(d.index, d.text, usage)
        return self._chunk([self._choice_delta(d) for d in deltas], usage)

    def _text_json(self, index: int, text: str, usage: Usage | None) -> str:
        """Most of a stream's events: one choice gaining text (with usage so far, when continuous usage stats were
        asked for). The same JSON the model would write (a test holds them equal), from a template made once per
        stream: a few times cheaper than building and dumping the model for every token."""
        if self._text_template is None:
            head, _, tail = self._chunk([ChunkChoice(index=0, delta=Delta(content="\x00"))]).model_dump_json(
            ).partition('{"index":0,"delta":{"role":null,"content":"\\u0000"}')
            before_usage, _, after_usage = tail.partition('"usage":null')
            assert after_usage, "the chunk's JSON changed shape: update the template"
            self._text_template = (head + '{"index":', ',"delta":{"role":null,"content":',
                                   "}" + before_usage + '"usage":', after_usage)
        head, middle, tail, end = self._text_template
        used = "null" if usage is None else usage.model_dump_json()
        return f"{head}{index}{middle}{to_json(text).decode()}{tail}{used}{end}"

    def _choice_delta(self, d: CompletionDelta) -> ChunkChoice:
        text, calls, finish_reason = self.streamed.step(d.index, d.text, d.finish_reason)
        if d.tool_calls:
            calls = [ToolCallDelta.model_validate(c) for c in d.tool_calls]
        return ChunkChoice(index=d.index, delta=Delta(content=text or None, tool_calls=calls),
                           finish_reason=finish_reason, logprobs=chat_logprobs(d.logprobs, self._texts))

    def usage_chunk(self) -> ChatCompletionChunk:
        return self._chunk([], usage=self.run.usage())

    def complete(self, choices: list[Choice]) -> ChatCompletion:
        return ChatCompletion(id=self.id, created=self.created, model=self.run.served_as, usage=self.run.usage(),
                              choices=[self._choice(c) for c in choices])

    def _choice(self, c: Choice) -> ChatChoice:
        content, calls, finish_reason = whole(c.text, c.finish_reason, self.names)
        if c.tool_calls:
            content = c.text or None
            calls = [ToolCall.model_validate({k: v for k, v in call.items() if k != "index"}) for call in c.tool_calls]
        return ChatChoice(index=c.index, message=AssistantMessage(content=content, tool_calls=calls),
                          finish_reason=finish_reason, logprobs=chat_logprobs(c.logprobs, self._texts))


@router.post("/chat/completions", openapi_extra=documented(ChatCompletionRequest))
async def chat_completions(principal: TenantDep, body: ChatBody, services: ServicesDep, request: Request,
                           pin: PinHeader = None, session: SessionHeader = None):
    """Create a chat completion, whole or streamed as SSE; replayed from the semantic cache on a hit."""
    request_id, prompt_version = request.state.request_id, None
    if body.prompt is not None:
        body, prompt_version = await with_prompt(services, await request.body(), body.prompt,
                                                 key=body.user or session or request_id,
                                                 tenant_id=principal.tenant_id)
    return await answer_chat(services, principal, Job.from_chat(body), body, request_id,
                             request=request, pin=pin, session=session, prompt_version=prompt_version)


async def answer_chat(services: Services, principal, job: Job, body: ChatCompletionRequest, request_id: str, *,
                      request: Request | None = None, pin: str | None = None, session: str | None = None,
                      prompt_version: str | None = None):
    """The whole chat pipeline for one request, HTTP or a Batch API line (`request` None: no client to
    watch for a disconnect). `prompt_version` ("name:N"): the stored prompt it was built from."""
    job, body, guardrails = await screen_input(services, principal, job, body)  # redacted before all else
    job.body = client_body(body)  # what an upstream version is sent (tools and all, natively)
    run = await admit(services, principal, request_id, job, pin=pin, session=session)
    run.prompt_version = prompt_version
    admitted(run, guardrails)
    try:  # after admission: limits first, embedding second; only a plain single answer can be cached
        step = await consult(services, principal, body, run) if job.cacheable else CacheStep(
            CacheLookup("bypass", reason="parameters"))
    except BaseException as e:  # the client left during the lookup: release what the run holds
        run.finish(status_of(e))
        raise
    if step.hit:
        return await replay(run, ChatFormat, step.lookup)
    run.cache_status = step.lookup.status
    return await respond(run, ChatFormat, keep=keeper(services, step), request=request)
