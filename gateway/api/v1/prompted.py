"""A chat request that names a stored prompt (`"prompt": {"id", "label"?, "version"?, "variables"}`): the
served version's rendered messages go first, the request's own after them; the version's model and params
apply unless the request sets its own. The result is parsed as any chat body, so every later step (limits,
the semantic cache keyed on the rendered text, routing, billing) sees an ordinary request."""
from __future__ import annotations

import json

from gateway.api.v1.body import parse
from gateway.domain.errors import APIError, invalid_request
from gateway.prompts import MissingVariables, PromptNotFound, PromptRef, PromptVersion
from gateway.prompts.render import render
from gateway.schemas.openai import ChatCompletionRequest
from gateway.schemas.prompts import PromptField
from gateway.services import Services


async def with_prompt(services: Services, raw: bytes, field: PromptField, *,
                      key: str, tenant_id: str) -> tuple[ChatCompletionRequest, str]:
    """(the request with the prompt applied, the served version as "name:N"). `key` keeps a caller on one
    version of a split label (the request's user or session, else its request id); `tenant_id` is the
    caller's tenant: another tenant's prompt is a 404, as one that does not exist."""
    ref = PromptRef(field.id, field.label, field.version, field.texts())
    try:
        version = await services.prompts.resolve(ref, key=key, tenant_id=tenant_id)
        messages = render(version.messages, ref.variables)
    except PromptNotFound as e:
        raise APIError(404, e.message, code="prompt_not_found", param=e.param) from None
    except MissingVariables as e:
        raise invalid_request(e.message, param=e.param, code="missing_prompt_variables") from None
    return parse(ChatCompletionRequest, json.dumps(merged(version, messages, json.loads(raw))).encode()), version.label


def merged(version: PromptVersion, rendered: list[dict], sent: dict) -> dict:
    """The request body to serve: the request's own fields win over the version's model and params (a null
    counts as not sent); its messages follow the prompt's."""
    own = {k: v for k, v in sent.items() if k != "prompt" and v is not None}
    body = {**version.params, **({"model": version.model} if version.model else {}), **own}
    body["messages"] = rendered + list(own.get("messages") or [])
    if "model" not in body:
        raise invalid_request(f"model: Field required (prompt {version.name!r} names no model).", param="model")
    return body
