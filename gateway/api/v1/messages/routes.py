"""POST /v1/messages and /v1/messages/count_tokens: Anthropic's Messages API over the chat pipeline.

A message request is translated into the chat request that asks the same of the model (translate.py) and runs
the chat pipeline's steps in chat's order (input guardrails, admission: limits and budget, the semantic cache,
routing and generation, output guardrails, billing); only the answer's spelling differs (format.py, stream.py).
The `anthropic-version` header is accepted whatever it says, `anthropic-beta` ignored."""
from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import JSONResponse, StreamingResponse

from gateway.api.deps import AnyKeyTenantDep
from gateway.api.v1.body import documented, parse
from gateway.api.v1.cached import CacheStep, _guarded, consult, keeper, replay
from gateway.api.v1.headers import PinHeader, SessionHeader
from gateway.api.v1.messages.errors import AnthropicRoute
from gateway.api.v1.messages.format import MessagesFormat
from gateway.api.v1.messages.stream import messages_sse, replay_sse
from gateway.api.v1.messages.translate import chat_request, counting_request
from gateway.api.v1.pipeline.admit import OFFLOAD_PROMPT_BYTES, admit, reserve_tokens, route
from gateway.api.v1.pipeline.guard import admitted, screen_input
from gateway.api.v1.pipeline.job import Job, client_body
from gateway.api.v1.pipeline.respond import headers, respond, status_of
from gateway.api.v1.pipeline.run import Run
from gateway.cache import CacheLookup
from gateway.domain.errors import invalid_request
from gateway.schemas.anthropic import CountTokensRequest, Message, MessagesRequest, TokenCount
from gateway.services.deps import ServicesDep

ENDPOINT = "/v1/messages"

router = APIRouter(route_class=AnthropicRoute)

VersionHeader = Annotated[str | None, Header(alias="anthropic-version", max_length=64)]


async def _message_body(request: Request) -> MessagesRequest:
    return parse(MessagesRequest, await request.body())


async def _count_body(request: Request) -> CountTokensRequest:
    return parse(CountTokensRequest, await request.body())


@router.post("/messages", openapi_extra=documented(MessagesRequest),
             responses={200: {"model": Message, "description": "The message, or its events as SSE"}})
async def create_message(principal: AnyKeyTenantDep, services: ServicesDep, request: Request,
                         body: Annotated[MessagesRequest, Depends(_message_body)],
                         version: VersionHeader = None, pin: PinHeader = None, session: SessionHeader = None):
    """Create a message (Anthropic's Messages API), whole or streamed as its events."""
    chat = chat_request(body)
    job = Job.from_chat(chat)
    job.endpoint, job.ignored = ENDPOINT, body.ignored_fields
    job, chat, guardrails = await screen_input(services, principal, job, chat)  # redacted before all else
    job.body = client_body(chat)  # what an upstream version is sent (tools and all, natively)
    run = await admit(services, principal, request.state.request_id, job, pin=pin, session=session)
    admitted(run, guardrails)
    try:  # only a plain answer can be cached (no tools), as for chat
        step = await consult(services, principal, chat, run) if job.cacheable else CacheStep(
            CacheLookup("bypass", reason="parameters"))
    except BaseException as e:  # the client left during the lookup: release what the run holds
        run.finish(status_of(e))
        raise
    if step.hit:
        return await _replay(run, step.lookup)
    run.cache_status = step.lookup.status
    return await respond(run, MessagesFormat, keep=keeper(services, step), request=request,
                         stream_body=messages_sse)


async def _replay(run: Run, lookup: CacheLookup):
    """A semantic-cache hit as a Message, or as the events that stream one; billed as a hit."""
    if not run.job.stream:
        return await replay(run, MessagesFormat, lookup)
    answer = lookup.entry
    run.replayed(answer.completion_tokens, lookup.score)
    text = await _guarded(run, answer.text)
    return StreamingResponse(replay_sse(run, MessagesFormat(run), text, answer.finish_reason),
                             media_type="text/event-stream", headers={**headers(run), "cache-control": "no-cache"})


@router.post("/messages/count_tokens", openapi_extra=documented(CountTokensRequest),
             responses={200: {"model": TokenCount}})
async def count_message_tokens(principal: AnyKeyTenantDep, services: ServicesDep, request: Request,
                               body: Annotated[CountTokensRequest, Depends(_count_body)],
                               version: VersionHeader = None) -> JSONResponse:
    """The prompt's tokens as the model reads it: its chat template, the system prompt and the tools included.
    One of the key's requests against its rate limit; never billed."""
    chat = counting_request(body)
    messages = chat.engine_messages(chat.tool_set)
    job = Job(f"{ENDPOINT}/count_tokens", body.model, None, messages, 1, 1.0, 1.0, None, [], False, False, None)
    chosen = route(services, principal, request.state.request_id, job, pin=None, session=None)
    reservation = await reserve_tokens(services, principal, 0)
    await services.limiter.settle(reservation, 0)
    count = services.backend.count_prompt_tokens
    try:
        if job.prompt_bytes() > OFFLOAD_PROMPT_BYTES:
            tokens = await asyncio.to_thread(count, chosen.counting, messages=messages)
        else:
            tokens = count(chosen.counting, messages=messages)
    except ValueError as e:
        raise invalid_request(str(e), param="messages") from None
    return JSONResponse(TokenCount(input_tokens=tokens).model_dump())
