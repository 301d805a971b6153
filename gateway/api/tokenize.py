"""POST /tokenize and /detokenize, as vLLM's server has them (tools count tokens with them): tenant-authenticated,
limited like any request (one of the key's requests, no tokens), never billed."""
from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from gateway.api.deps import TenantDep
from gateway.api.v1.body import documented, parse
from gateway.api.v1.pipeline.admit import reserve_tokens, route
from gateway.api.v1.pipeline.job import Job
from gateway.domain.errors import invalid_request
from gateway.schemas.openai import ChatMessage
from gateway.services.deps import ServicesDep

router = APIRouter(tags=["v1"])


class TokenizeRequest(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    model: str = Field(min_length=1)
    prompt: str | None = None
    messages: list[ChatMessage] | None = Field(None, min_length=1)
    add_generation_prompt: bool = True  # vLLM's default for messages


class DetokenizeRequest(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    model: str = Field(min_length=1)
    tokens: list[int] = Field(max_length=1_000_000)


def _job(model: str, prompt: str | None, messages: list[dict] | None) -> Job:
    return Job("/tokenize", model, prompt, messages, 1, 1.0, 1.0, None, [], False, False, None)


async def _admitted(request: Request, services, principal, job: Job):
    """The version whose tokenizer answers, after the key's model check and one request against its RPM."""
    chosen = route(services, principal, request.state.request_id, job, pin=None, session=None)
    reservation = await reserve_tokens(services, principal, 0)
    await services.limiter.settle(reservation, 0)
    return chosen


@router.post("/tokenize", openapi_extra=documented(TokenizeRequest))
async def tokenize(request: Request, principal: TenantDep, services: ServicesDep) -> dict:
    """Token ids of a prompt, or of chat messages through the model's template."""
    body = parse(TokenizeRequest, await request.body())
    if (body.prompt is None) == (body.messages is None):
        raise invalid_request("Give exactly one of prompt or messages.", param="prompt")
    messages = None if body.messages is None else [m.engine_message() for m in body.messages]
    chosen = await _admitted(request, services, principal, _job(body.model, body.prompt, messages))
    try:
        tokens = services.backend.tokenize(chosen.counting, prompt=body.prompt, messages=messages,
                                           add_generation_prompt=body.add_generation_prompt)
    except ValueError as e:
        raise invalid_request(str(e), param="messages" if messages is not None else "prompt") from None
    return {"count": len(tokens), "max_model_len": chosen.max_model_len, "tokens": tokens}


@router.post("/detokenize", openapi_extra=documented(DetokenizeRequest))
async def detokenize(request: Request, principal: TenantDep, services: ServicesDep) -> dict:
    """The text of token ids."""
    body = parse(DetokenizeRequest, await request.body())
    chosen = await _admitted(request, services, principal, _job(body.model, "", None))
    try:
        return {"prompt": services.backend.detokenize(chosen.counting, body.tokens)}
    except ValueError as e:
        raise invalid_request(str(e), param="tokens") from None
