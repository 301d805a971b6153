"""A Responses API request as the pipeline's Job."""
from __future__ import annotations

from gateway.api.v1.pipeline.job import Job
from gateway.domain.errors import APIError
from gateway.schemas.responses import ResponseCreateRequest

ENDPOINT = "/v1/responses"


class ResponsesJob(Job):
    """A Job whose prompt mistakes name `input`, the Responses API's param, not chat's `messages`."""
    __slots__ = ()

    @classmethod
    def of(cls, body: ResponseCreateRequest, messages: list[dict[str, str]]) -> ResponsesJob:
        return cls(ENDPOINT, body.model, None, messages, body.max_output_tokens,
                   1.0 if body.temperature is None else body.temperature, 1.0 if body.top_p is None else body.top_p,
                   None, [], bool(body.stream), False, body.user, ignored=body.ignored_fields)

    @property
    def prompt_param(self) -> str:
        return "input"


def in_responses_terms(e: APIError) -> APIError:
    """Admission speaks chat's `max_tokens`; this API's name for it is `max_output_tokens`."""
    if e.param == "max_tokens":
        e.param, e.message = "max_output_tokens", e.message.replace("max_tokens", "max_output_tokens")
    return e
