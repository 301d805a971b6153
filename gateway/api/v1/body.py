"""Request bodies, parsed by us rather than by FastAPI so every mistake is a 400 naming its param.

The size limit is enforced before this runs (RequestContextMiddleware). FastAPI cannot see these
bodies, so each route declares its model's schema itself (`documented`) for /openapi.json."""
from __future__ import annotations

from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request
from pydantic import BaseModel, ValidationError

from gateway.domain.errors import APIError, invalid_request
from gateway.schemas.openai import (ChatCompletionRequest, CompletionRequest, EmbeddingRequest,
                                    ParamError, UnsupportedParam)

M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], raw: bytes) -> M:
    if not raw.strip():
        raise invalid_request("The request body is empty; send a JSON object.")
    try:
        return model.model_validate_json(raw)
    except ValidationError as e:
        raise _to_api_error(e) from None


def _to_api_error(e: ValidationError) -> APIError:
    first = e.errors(include_url=False)[0]
    cause = (first.get("ctx") or {}).get("error")
    if isinstance(cause, UnsupportedParam):
        return invalid_request(str(cause), param=cause.param, code="unsupported_parameter")
    if isinstance(cause, ParamError):
        return invalid_request(f"{cause.param}: {cause}", param=cause.param)
    if first["type"] == "json_invalid":
        return invalid_request(f"We could not parse the JSON body of your request: {first['msg']}")
    param = ".".join(str(p) for p in first["loc"] if _is_field(p)) or None
    if first["type"] == "model_type" and param is None:
        return invalid_request("The request body must be a JSON object.")
    msg = first["msg"].removeprefix("Value error, ")
    return invalid_request(f"{param}: {msg}" if param else msg, param=param)


_TYPE_TAGS = {"str", "int", "float", "bool", "dict", "list", "none"}


def _is_field(part: str | int) -> bool:
    """A location part that names a field or an index, not the union member pydantic tried ("str",
    "NamedToolChoice", "literal['none','auto']")."""
    if isinstance(part, int):
        return True
    return part.isidentifier() and part not in _TYPE_TAGS and not part[0].isupper()


def documented(model: type[BaseModel]) -> dict[str, Any]:
    """`openapi_extra` for a route whose body `parse` reads: the model's JSON schema as its request body."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": _inline(schema, defs)}}}}


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    # The document has no components for these models, so a "#/$defs/..." reference could not resolve.
    if isinstance(node, dict):
        ref = node.get("$ref", "")
        rest = {k: _inline(v, defs) for k, v in node.items() if k != "$ref" or not ref.startswith("#/$defs/")}
        if ref.startswith("#/$defs/"):
            return {**_inline(defs[ref.removeprefix("#/$defs/")], defs), **rest}
        return rest
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


def _body(model: type[M]):
    async def dependency(request: Request) -> M:
        return parse(model, await request.body())
    return dependency


ChatBody = Annotated[ChatCompletionRequest, Depends(_body(ChatCompletionRequest))]
CompletionBody = Annotated[CompletionRequest, Depends(_body(CompletionRequest))]
EmbeddingBody = Annotated[EmbeddingRequest, Depends(_body(EmbeddingRequest))]
