"""What an upstream is sent: the client's body with the gateway's own fields (model, stream, limits) set."""
from __future__ import annotations

from gateway.serving.base import GenerationRequest
from gateway.upstreams.protocols.openai import OpenAIProtocol
from gateway.upstreams.request import endpoint_of, upstream_body
from gateway.upstreams.upstream import shown_url


def test_the_clients_body_passes_through_with_the_admitted_limit():
    client = {"model": "chat", "messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function"}],
              "stream": False, "stream_options": {"include_usage": False}, "prompt": {"id": "stored"},
              "max_completion_tokens": 900, "seed": 7, "user": None}
    request = GenerationRequest("r1", "m@v", messages=[{"role": "user", "content": "hi (redacted)"}], max_tokens=64,
                                upstream_body=client)
    body = upstream_body(request)
    assert body == {"messages": client["messages"], "tools": client["tools"], "seed": 7, "max_completion_tokens": 64}
    path, sent = OpenAIProtocol().request(endpoint_of(request), body, model="upstream-id")
    assert path == "/chat/completions" and sent["model"] == "upstream-id"
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}


def test_a_completion_sends_the_admitted_prompt_and_a_request_without_a_body_is_built():
    request = GenerationRequest("r2", "m@v", prompt="redacted text", max_tokens=5, temperature=0.0, stop=["\n"],
                                upstream_body={"model": "m", "prompt": "secret text", "echo": True})
    assert upstream_body(request) == {"echo": True, "prompt": "redacted text", "max_tokens": 5}
    built = upstream_body(GenerationRequest("r3", "m@v", messages=[{"role": "user", "content": "x"}], max_tokens=3))
    assert built == {"messages": [{"role": "user", "content": "x"}], "temperature": 1.0, "top_p": 1.0, "n": 1,
                     "max_tokens": 3}


def test_credentials_in_a_base_url_are_never_shown():
    assert shown_url("https://user:s3cret@api.example.com:8443/v1") == "https://api.example.com:8443/v1"
    assert shown_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"
