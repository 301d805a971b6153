"""The chat stream's text events come from a per-stream template (gateway/api/v1/chat.py): byte for byte the JSON
the pydantic model writes, whatever the text holds."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from gateway.api.v1.chat import ChatFormat
from gateway.api.v1.pipeline.respond import sse_event
from gateway.schemas.openai import Usage
from gateway.serving.base import CompletionDelta

TEXTS = ["Hi", " there", "\n", '"quoted"', "back\\slash", "tab\t", "\x00\x1f\x7f", "é", "日本語", "🙂", "\u2028",
         "</script>", "\ufffd", "a" * 300]


def fmt() -> ChatFormat:
    run = SimpleNamespace(request_id="req_abc123", version=None, served_as="smollm2-135m-instruct",
                          job=SimpleNamespace(tools=None, n=1), svc=SimpleNamespace(loaded_versions=dict))
    return ChatFormat(run)


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("index", [0, 3])
def test_a_text_event_is_the_models_json(text, index):
    f = fmt()
    fast = f.delta([CompletionDelta(index, text, [1])], None)
    assert isinstance(fast, str)
    slow = f._chunk([f._choice_delta(CompletionDelta(index, text, [1]))]).model_dump_json()
    assert fast == slow
    assert sse_event(fast) == f"data: {slow}\n\n"


def test_a_text_event_with_usage_so_far_is_the_models_json():
    f = fmt()
    usage = Usage(prompt_tokens=7, completion_tokens=3, total_tokens=10, prompt_tokens_details={"cached_tokens": 2})
    fast = f.delta([CompletionDelta(0, "hi", [1])], usage)
    assert isinstance(fast, str)
    assert fast == f._chunk([f._choice_delta(CompletionDelta(0, "hi", [1]))], usage).model_dump_json()


def test_other_events_still_go_through_the_model():
    f = fmt()
    assert not isinstance(f.delta([CompletionDelta(0, "x", [1], "stop")], None), str)  # the finish
    assert not isinstance(f.delta([CompletionDelta(0, "", [])], None), str)
    assert not isinstance(f.delta([CompletionDelta(0, "a", [1]), CompletionDelta(1, "b", [2])], None), str)
