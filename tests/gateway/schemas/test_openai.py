"""Bounds on what one request may ask of the engine, refused in OpenAI's error shape naming the param."""
from __future__ import annotations

import json

import pytest

from gateway.api.v1.body import parse
from gateway.domain.errors import APIError
from gateway.schemas.openai import MAX_STOP_CHARS, ChatCompletionRequest, CompletionRequest

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
COMPLETION = {"model": "m", "prompt": "hi"}


@pytest.mark.parametrize("model,body", [(ChatCompletionRequest, CHAT), (CompletionRequest, COMPLETION)])
def test_stop_strings_longer_than_the_bound_are_a_400_naming_stop(model, body):
    ok = parse(model, json.dumps({**body, "stop": ["x" * MAX_STOP_CHARS, "y"]}).encode())
    assert ok.stop_list() == ["x" * MAX_STOP_CHARS, "y"]
    for stop in ("x" * (MAX_STOP_CHARS + 1), ["y", "x" * 200_000]):
        with pytest.raises(APIError) as e:
            parse(model, json.dumps({**body, "stop": stop}).encode())
        error = e.value.body()["error"]
        assert e.value.status == 400 and error["param"] == "stop" and error["type"] == "invalid_request_error"
        assert f"at most {MAX_STOP_CHARS} characters" in error["message"]


def test_more_than_four_stop_strings_are_still_refused():
    with pytest.raises(APIError) as e:
        parse(ChatCompletionRequest, json.dumps({**CHAT, "stop": list("abcde")}).encode())
    assert e.value.body()["error"]["param"] == "stop"
