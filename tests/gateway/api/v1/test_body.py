"""The bodies gateway.api.v1.body parses itself are still in /openapi.json, whole (no dangling $ref)."""
from __future__ import annotations

import json

import pytest

from gateway.api.v1.body import documented
from gateway.main import create_app
from gateway.schemas.openai import ChatCompletionRequest, CompletionRequest, EmbeddingRequest
from gateway.settings import Settings


def test_documented_inlines_nested_models():
    body = documented(ChatCompletionRequest)["requestBody"]
    schema = body["content"]["application/json"]["schema"]
    assert body["required"] and "$ref" not in json.dumps(schema) and "$defs" not in schema
    message = schema["properties"]["messages"]["items"]
    assert message["required"] == ["role"] and message["additionalProperties"] is False
    assert {"content", "tool_calls", "tool_call_id"} <= set(message["properties"])


@pytest.mark.parametrize("path,model", [("/v1/chat/completions", ChatCompletionRequest),
                                        ("/v1/completions", CompletionRequest),
                                        ("/v1/embeddings", EmbeddingRequest)])
def test_the_app_documents_each_request_body(path, model):
    document = create_app(Settings(docs_enabled=True, log_level="WARNING")).openapi()
    schema = document["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert set(schema["properties"]) == set(model.model_fields)
    # A chat body requires nothing outright: `model` and `messages`, or a stored `prompt` (its anyOf).
    assert set(schema.get("required", ())) == {n for n, f in model.model_fields.items() if f.is_required()}
