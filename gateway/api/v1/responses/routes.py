"""POST /v1/responses, GET and DELETE /v1/responses/{response_id}."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from gateway.api.deps import TenantDep
from gateway.api.v1.body import documented, parse
from gateway.api.v1.headers import PinHeader, SessionHeader
from gateway.api.v1.pipeline.admit import admit
from gateway.api.v1.pipeline.guard import admitted, redacted_messages, screen_input
from gateway.api.v1.pipeline.respond import respond
from gateway.api.v1.responses.conversation import Conversation, bounded, conversation
from gateway.api.v1.responses.format import ResponsesFormat
from gateway.api.v1.responses.job import ResponsesJob, in_responses_terms
from gateway.api.v1.responses.store import ResponseStore
from gateway.api.v1.responses.stream import responses_sse
from gateway.crud.responses import Stored
from gateway.domain.errors import APIError, invalid_request
from gateway.schemas.responses import DeletedResponse, ResponseCreateRequest, ResponseObject, echo
from gateway.security.principal import Principal
from gateway.services import Services
from gateway.services.deps import ServicesDep

router = APIRouter()


async def _create_body(request: Request) -> ResponseCreateRequest:
    return parse(ResponseCreateRequest, await request.body())


CreateBody = Annotated[ResponseCreateRequest, Depends(_create_body)]


def _store(services: Services, principal: Principal) -> ResponseStore:
    return ResponseStore(services.database, principal.tenant_id, cap=services.settings.responses_max_stored_per_tenant)


def _not_found(response_id: str, *, param: str | None = None) -> APIError:
    what = "Previous response" if param else "Response"
    return APIError(404, f"{what} with id '{response_id[:128]}' not found.", param=param,
                    code="previous_response_not_found" if param else "not_found")


async def _previous(store: ResponseStore, response_id: str | None) -> Stored | None:
    if response_id is None:
        return None
    previous = await store.get(response_id)
    if previous is None:
        raise _not_found(response_id, param="previous_response_id")
    return previous


@router.post("/responses", openapi_extra=documented(ResponseCreateRequest))
async def create_response(principal: TenantDep, body: CreateBody, services: ServicesDep, request: Request,
                          pin: PinHeader = None, session: SessionHeader = None):
    """Create a model response, whole or streamed as the Responses API's events; kept unless store is false."""
    store = _store(services, principal)
    conv = bounded(conversation(body, await _previous(store, body.previous_response_id)),
                   services.settings.responses_max_input_bytes)
    job = ResponsesJob.of(body, conv.engine_messages())
    try:
        job, _, guardrails = await screen_input(services, principal, job)  # redacted before it is counted
        run = await admit(services, principal, request.state.request_id, job, pin=pin, session=session)
        admitted(run, guardrails)
    except APIError as e:
        raise in_responses_terms(e) from None
    # A stored response keeps the conversation as the model saw it: redacted, never the raw input.
    conv = Conversation(conv.instructions, redacted_messages(guardrails, conv.context))
    fmt = ResponsesFormat(run, echo(body), save=(lambda final: store.save(final, conv.context))
                          if body.store is not False else None)
    answer = await respond(run, lambda _: fmt, request=request, stream_body=responses_sse)
    if not job.stream and fmt.final is not None and fmt.save is not None:
        await fmt.save(fmt.final)  # the stream saves its own, before its last event
    return answer


@router.get("/responses/{response_id}", responses={200: {"model": ResponseObject}})
async def retrieve_response(response_id: str, principal: TenantDep, services: ServicesDep,
                            stream: bool = False) -> JSONResponse:
    """A stored response of yours, as it was returned."""
    if stream:
        raise invalid_request("Streaming a stored response again is not supported.", param="stream",
                              code="unsupported_parameter")
    stored = await _store(services, principal).get(response_id)
    if stored is None:
        raise _not_found(response_id)
    return JSONResponse(stored.response)


@router.delete("/responses/{response_id}", response_model=DeletedResponse)
async def delete_stored_response(response_id: str, principal: TenantDep, services: ServicesDep) -> DeletedResponse:
    """Delete a stored response of yours."""
    if not await _store(services, principal).delete(response_id):
        raise _not_found(response_id)
    return DeletedResponse(id=response_id)
