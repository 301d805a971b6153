"""Guardrails in the chat pipeline, over a scripted backend whose answer arrives in chosen pieces (an e-mail
split across deltas): output rules hold streamed text back so nothing forbidden is sent, a block ends a stream
with a clean error event, input rules redact before the model and the semantic cache see the prompt or refuse
it unbilled, no mode ever writes PII to the logs, and a guardrail that raises refuses the request."""
from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import SimpleNamespace

import httpx
import numpy as np
import pytest
from openai import AsyncOpenAI

from gateway.guardrails.detectors.registry import DETECTORS
from gateway.guardrails.holdback import HoldbackFilter
from gateway.main import create_app
from gateway.serving.base import GenerationChunk, GenerationRequest
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import ADMIN_KEY, CannedBackend, make_tenant, migrate_and_seed, usage_rows, wait_usage_rows

MODEL = "smollm2-135m-instruct"
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
EMAIL, CARD = "john.doe@example.com", "4111 1111 1111 1111"
SPLIT_EMAIL = ["Contact ", "jo", "hn.doe@exa", "mple.com", " for help."]


class ScriptedBackend(CannedBackend):
    """Answers with `pieces`, one chunk (one token) each; remembers what each request's prompt was."""

    def __init__(self, pieces: list[str]) -> None:
        super().__init__()
        self.pieces, self.received = pieces, []

    async def stream(self, request: GenerationRequest) -> AsyncIterator[GenerationChunk]:
        self.served.append(request.version)
        self.received.append(request.messages if request.messages is not None else request.prompt)
        prompt = self._count(request.prompt, request.messages)
        for i, piece in enumerate(self.pieces, 1):
            yield GenerationChunk(text=piece, token_ids=[1], prompt_tokens=prompt, completion_tokens=i,
                                  cached_tokens=0, finish_reason="stop" if i == len(self.pieces) else None)


class HashEmbedder:
    """A stand-in for MiniLM: a fixed unit vector per text, and a record of what it was asked to embed."""
    dim = 384

    def __init__(self) -> None:
        self.seen: list[str] = []

    def embed_one(self, text: str):
        self.seen.append(text)
        v = np.random.default_rng(abs(hash(text)) % 2**32).standard_normal(self.dim).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed(self, texts: list[str]):
        return np.stack([self.embed_one(t) for t in texts])

    def count_tokens(self, texts: list[str]) -> int:
        return sum(len(t.split()) for t in texts)


@pytest.fixture(scope="module")
def db(tmp_path_factory, gw_catalogue):
    tmp = tmp_path_factory.mktemp("guardrails")
    url = f"sqlite:///{tmp / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    return tmp, url


@asynccontextmanager
async def gateway(db, pieces: list[str], *, cache: bool = False):
    tmp, url = db
    backend, embedder = ScriptedBackend(pieces), HashEmbedder() if cache else None
    app = create_app(gateway_settings(tmp, url, embeddings_enabled=cache, cache_enabled=cache), backend=backend,
                     embedder=embedder)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://gateway", timeout=30) as http:
        yield SimpleNamespace(http=http, backend=backend, embedder=embedder, services=app.state.services, url=url)


async def guarded_tenant(gw, *rules: dict) -> tuple[str, str]:
    tenant_id, key = make_tenant(gw.url)
    r = await gw.http.put(f"/admin/tenants/{tenant_id}/guardrails", headers=ADMIN, json=list(rules))
    assert r.status_code == 200, r.text
    return tenant_id, key


async def chat(gw, key: str, text: str, **extra) -> httpx.Response:
    body = {"model": MODEL, "messages": [{"role": "user", "content": text}], "temperature": 0, **extra}
    return await gw.http.post("/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"})


def events(r: httpx.Response) -> list:
    """The SSE stream's data payloads, parsed ([DONE] kept as the string)."""
    out = []
    for line in r.text.splitlines():
        if line.startswith("data: "):
            data = line.removeprefix("data: ")
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


def streamed_text(evs: list) -> str:
    return "".join((c["delta"].get("content") or "") for e in evs if isinstance(e, dict) for c in e.get("choices", []))


def rule(name: str, stage: str, mode: str, kind: str = "pii", **extra) -> dict:
    if kind == "pii":
        extra.setdefault("entities", ["email", "card"])
    return {"name": name, "stage": stage, "kind": kind, "mode": mode, **extra}


async def test_output_redact_never_sends_an_email_split_across_deltas(db):
    async with gateway(db, SPLIT_EMAIL) as gw:
        _, key = await guarded_tenant(gw, rule("emails-out", "output", "redact"))
        r = await chat(gw, key, "How do I get help?", stream=True)
        assert r.status_code == 200
        evs = events(r)
        assert evs[-1] == "[DONE]" and streamed_text(evs) == "Contact [EMAIL] for help."
        contents = [c["delta"].get("content") or "" for e in evs[:-1] for c in e["choices"]]
        for fragment in ("jo", "hn", "doe", "exa", "mple", "@"):  # no piece of it, in any chunk
            assert not any(fragment in c.replace("[EMAIL]", "") for c in contents)
        assert "john" not in r.text and "example.com" not in r.text
        # Output firings come after the headers: a comment line before [DONE] names them (SDKs skip comments).
        assert ": x-tollgate-guardrails: emails-out:redact:1\n\ndata: [DONE]" in r.text
        sdk = AsyncOpenAI(base_url="http://gateway/v1", api_key=key, http_client=gw.http)
        stream = await sdk.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Help?"}],
                                                   stream=True)
        assert "".join([c.choices[0].delta.content or "" async for c in stream if c.choices]) == \
            "Contact [EMAIL] for help."
        whole = await chat(gw, key, "How do I get help?")
        assert whole.json()["choices"][0]["message"]["content"] == "Contact [EMAIL] for help."
        assert whole.headers["x-tollgate-guardrails"] == "emails-out:redact:1"
        scraped = gw.services.metrics.render().decode()
        assert 'tollgate_guardrail_matches_total{mode="redact",stage="output"} 3.0' in scraped


async def test_output_block_ends_the_stream_with_an_error_event_then_done_and_bills_the_tokens(db):
    pieces = ["The ", "launch", " co", "des are 1234", ". Bye."]
    async with gateway(db, pieces) as gw:
        tenant_id, key = await guarded_tenant(gw, rule("no-codes", "output", "block", kind="deny_pattern",
                                                       pattern="(?i)launch codes"))
        r = await chat(gw, key, "Tell me", stream=True, stream_options={"include_usage": True})
        evs = events(r)
        assert evs[-1] == "[DONE]"
        error = evs[-2]["error"]
        assert error["code"] == "content_blocked" and "no-codes" in error["message"]
        assert set(error) == {"message", "type", "param", "code"}
        assert "launch" not in r.text.replace("no-codes", "") and "1234" not in r.text
        assert evs[-3]["usage"]["completion_tokens"] == 4  # the model's work up to the block is billed
        whole = await chat(gw, key, "Tell me")
        assert whole.status_code == 400 and whole.json()["error"]["code"] == "content_blocked"
        assert "launch" not in whole.text
        rows = wait_usage_rows(gw.url, tenant_id, 2)
        assert [(row.status, row.completion_tokens) for row in rows] == [("blocked", 4), ("blocked", 5)]


async def test_an_input_block_is_a_400_naming_the_rule_and_nothing_is_billed(db):
    async with gateway(db, ["fine"]) as gw:
        tenant_id, key = await guarded_tenant(gw, rule("no-passwords", "input", "block", kind="deny_pattern",
                                                       pattern="(?i)password"))
        r = await chat(gw, key, "my Password is hunter2")
        assert r.status_code == 400
        assert r.json()["error"]["code"] == "content_blocked" and "no-passwords" in r.json()["error"]["message"]
        assert r.headers["x-tollgate-guardrails"] == "no-passwords:block:1" and r.json()["error"]["param"] == "messages"
        assert gw.backend.received == []
        assert (await chat(gw, key, "hello")).status_code == 200  # the tenant's next request is fine
        assert [row.status for row in wait_usage_rows(gw.url, tenant_id, 1)] == ["ok"]
        await asyncio.sleep(0.3)
        assert len(usage_rows(gw.url, tenant_id)) == 1


async def test_an_input_redact_masks_pii_before_the_model_and_the_semantic_cache(db):
    async with gateway(db, ["Noted", "."], cache=True) as gw:
        cache, seen = gw.services.cache, {"lookup": [], "store": []}
        lookup, store = cache.lookup_sync, cache.store_sync
        cache.lookup_sync = lambda req, *a: (seen["lookup"].append(req.messages), lookup(req, *a))[1]
        cache.store_sync = lambda req, *a: (seen["store"].append(req.messages), store(req, *a))[1]
        _, key = await guarded_tenant(gw, rule("pii-in", "input", "redact"))
        r = await chat(gw, key, f"I am {EMAIL}, card {CARD}.", stream=True)
        assert r.headers["x-tollgate-guardrails"] == "pii-in:redact:2"  # known when the headers go out
        assert gw.backend.received[0][-1]["content"] == "I am [EMAIL], card [CARD]."
        deadline = time.monotonic() + 10
        while not seen["store"] and time.monotonic() < deadline:
            await gw.http.get("/health")
        assert seen["lookup"] and seen["store"]
        for messages in seen["lookup"] + seen["store"]:
            assert messages[-1]["content"] == "I am [EMAIL], card [CARD]."
        assert not any(EMAIL in t or "4111" in t for t in gw.embedder.seen)


class Everything(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        exc = logging.Formatter().formatException(record.exc_info) if record.exc_info else ""
        self.records.append(f"{record.getMessage()} {record.__dict__!r} {exc}")


@pytest.mark.parametrize("mode", ["block", "redact", "log_only"])
async def test_no_pii_reaches_the_logs_in_any_mode(db, mode):
    async with gateway(db, ["Reach me at ", EMAIL[:6], EMAIL[6:], " or ", CARD, "."]) as gw:
        _, key = await guarded_tenant(gw, rule("pii-in", "input", mode), rule("pii-out", "output", mode))
        handler, loggers = Everything(), [logging.getLogger(), logging.getLogger("tollgate")]
        levels = [lg.level for lg in loggers]
        for lg in loggers:
            lg.addHandler(handler)
            lg.setLevel(logging.DEBUG)
        try:
            for text in (f"Mail {EMAIL} or charge {CARD}", "hello"):  # "hello": the output rule decides
                await chat(gw, key, text)
                await chat(gw, key, text, stream=True)
        finally:
            for lg, level in zip(loggers, levels):
                lg.removeHandler(handler)
                lg.setLevel(level)
        logged = "\n".join(handler.records)
        # The card's digits as a run (not "4111" alone: a record's float timestamp may hold those four digits).
        assert handler.records and EMAIL not in logged and "john" not in logged
        assert CARD not in logged and CARD.replace(" ", "") not in logged and "4111 1111" not in logged
        assert "guardrail fired" in logged and "'rule': 'pii-in'" in logged and "'rule': 'pii-out'" in logged


async def test_a_guardrail_that_raises_refuses_the_request_unless_it_fails_open(db, monkeypatch):
    def broken(text):
        raise RuntimeError(f"detector bug on {text}")
    async with gateway(db, SPLIT_EMAIL) as gw:
        _, key = await guarded_tenant(gw, rule("pii-in", "input", "redact", entities=["email"]))
        monkeypatch.setattr(DETECTORS["email"], "spans", broken)
        r = await chat(gw, key, "hello")
        assert r.status_code == 503 and r.json()["error"]["code"] == "guardrail_error"
        assert "pii-in" in r.json()["error"]["message"] and gw.backend.received == []

        _, key = await guarded_tenant(gw, rule("pii-out", "output", "redact", entities=["email"]))
        evs = events(await chat(gw, key, "hello", stream=True))
        assert evs[-2]["error"]["code"] == "guardrail_error" and evs[-1] == "[DONE]"
        assert "john" not in streamed_text(evs)

        _, key = await guarded_tenant(gw, rule("pii-open", "input", "redact", entities=["email"], fail_open=True))
        assert (await chat(gw, key, "hello")).status_code == 200

        # The filter's own fault (not a rule's) refuses the answer too, whole or streamed.
        monkeypatch.setattr(HoldbackFilter, "_release", lambda self, final: 1 / 0)
        _, key = await guarded_tenant(gw, rule("pii-out2", "output", "log_only", entities=["card"]))
        r = await chat(gw, key, "hello")
        assert r.status_code == 503 and r.json()["error"]["code"] == "guardrail_error" and "john" not in r.text
        evs = events(await chat(gw, key, "hello", stream=True))
        assert evs[-2]["error"]["code"] == "guardrail_error" and streamed_text(evs) == ""


async def test_prompt_size_model_access_and_key_scope(db):
    async with gateway(db, ["ok"]) as gw:
        tenant_id, key = await guarded_tenant(gw, rule("short", "input", "block", kind="max_prompt_tokens", limit=3))
        r = await chat(gw, key, "one two three four")
        assert r.status_code == 400 and "short" in r.json()["error"]["message"]
        assert (await chat(gw, key, "one two")).status_code == 200

        _, other = await guarded_tenant(gw, rule("no-smol", "input", "block", kind="model_access",
                                                 deny_models=[MODEL]))
        assert (await chat(gw, other, "hi")).json()["error"]["code"] == "content_blocked"
        _, only = await guarded_tenant(gw, rule("only-smol", "input", "block", kind="model_access",
                                                allow_models=[MODEL]))
        alias = next(a for a in gw.services.catalogue.aliases if a != MODEL)
        assert (await chat(gw, only, "hi", model=alias)).status_code == 200  # the alias routes to MODEL

        second = (await gw.http.post(f"/admin/tenants/{tenant_id}/keys", headers=ADMIN, json={})).json()
        r = await gw.http.put(f"/admin/tenants/{tenant_id}/guardrails", headers=ADMIN, json=[
            rule("scoped", "input", "block", kind="deny_pattern", pattern="hi", key_id=second["id"])])
        assert r.status_code == 200
        assert (await chat(gw, key, "hi")).status_code == 200  # the first key: no rule now
        assert (await chat(gw, second["key"], "hi")).status_code == 400


async def test_completions_and_the_responses_api_are_guarded_too(db):
    async with gateway(db, SPLIT_EMAIL) as gw:
        _, key = await guarded_tenant(gw, rule("pii-in", "input", "redact"), rule("pii-out", "output", "redact"))
        auth = {"Authorization": f"Bearer {key}"}
        r = await gw.http.post("/v1/completions", headers=auth, json={"model": MODEL, "prompt": f"to {CARD}"})
        assert r.json()["choices"][0]["text"] == "Contact [EMAIL] for help."
        assert gw.backend.received[-1] == "to [CARD]"
        # Counted and billed as the model saw it: the canned tokenizer counts words, 2 here, 5 in the raw prompt.
        assert r.json()["usage"]["prompt_tokens"] == 2

        r = await gw.http.post("/v1/responses", headers=auth, json={"model": MODEL, "input": f"I am {EMAIL}",
                                                                    "stream": True})
        assert "john" not in r.text and "exa" not in r.text.replace("example", "")
        done = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")][-1]
        assert done["type"] == "response.completed"
        assert done["response"]["output"][0]["content"][0]["text"] == "Contact [EMAIL] for help."
        assert gw.backend.received[-1][-1]["content"] == "I am [EMAIL]"

        r = await gw.http.post("/v1/responses", headers=auth, json={"model": MODEL, "input": f"I am {EMAIL}"})
        assert r.json()["output"][0]["content"][0]["text"] == "Contact [EMAIL] for help."
        # The stored conversation (previous_response_id) is the redacted one.
        r = await gw.http.post("/v1/responses", headers=auth, json={"model": MODEL, "input": "and?",
                                                                    "previous_response_id": r.json()["id"]})
        assert EMAIL not in json.dumps(gw.backend.received[-1])


async def test_a_cached_answer_is_replayed_through_the_output_rules_in_force_now(db):
    async with gateway(db, SPLIT_EMAIL, cache=True) as gw:
        tenant_id, key = make_tenant(gw.url)
        assert (await chat(gw, key, "Who helps?")).json()["choices"][0]["message"]["content"] == \
            "Contact john.doe@example.com for help."
        deadline = time.monotonic() + 10
        while not gw.services.cache.stats(tenant_id).entries and time.monotonic() < deadline:
            await gw.http.get("/health")
        r = await gw.http.put(f"/admin/tenants/{tenant_id}/guardrails", headers=ADMIN,
                              json=[rule("pii-out", "output", "redact")])
        assert r.status_code == 200
        r = await chat(gw, key, "Who helps?", stream=True)
        assert r.headers["x-tollgate-cache"] == "hit" and EMAIL not in r.text
        assert streamed_text(events(r)) == "Contact [EMAIL] for help."


async def test_a_change_saved_on_one_replica_is_in_force_on_another_within_the_store_ttl(db):
    async with gateway(db, ["ok"]) as a, gateway(db, ["ok"]) as b:
        tenant_id, key = make_tenant(a.url)
        assert (await chat(b, key, "say hi")).status_code == 200  # b now holds "no rules" for the tenant
        r = await a.http.put(f"/admin/tenants/{tenant_id}/guardrails", headers=ADMIN,
                             json=[rule("no-hi", "input", "block", kind="deny_pattern", pattern="hi")])
        assert r.status_code == 200
        assert (await chat(a, key, "say hi")).status_code == 400  # where it was saved: at once
        saved, ttl = time.monotonic(), b.services.guardrails.config.ttl_s
        while (await chat(b, key, "say hi")).status_code != 400:
            assert time.monotonic() - saved < ttl + 1, "the other replica never applied the rule"
            await asyncio.sleep(0.1)


async def test_a_large_prompt_is_redacted_too(db):
    async with gateway(db, ["ok"]) as gw:
        _, key = await guarded_tenant(gw, rule("pii-in", "input", "redact"))
        r = await chat(gw, key, "x" * 17_000 + " " + EMAIL)  # past OFFLOAD_PROMPT_BYTES: redacted in a thread
        assert r.status_code == 200 and gw.backend.received[-1][-1]["content"].endswith(" [EMAIL]")


async def test_embeddings_inputs_are_screened(db):
    async with gateway(db, ["ok"], cache=True) as gw:
        _, key = await guarded_tenant(gw, rule("pii-in", "input", "redact", entities=["email"]),
                                      rule("no-x", "input", "block", kind="deny_pattern", pattern="forbidden"))
        auth = {"Authorization": f"Bearer {key}"}
        r = await gw.http.post("/v1/embeddings", headers=auth, json={"model": "all-minilm-l6-v2",
                                                                     "input": ["hi", f"mail {EMAIL}"]})
        assert r.status_code == 200 and r.headers["x-tollgate-guardrails"] == "pii-in:redact:1"
        assert gw.embedder.seen[-2:] == ["hi", "mail [EMAIL]"]
        r = await gw.http.post("/v1/embeddings", headers=auth, json={"model": "all-minilm-l6-v2",
                                                                     "input": "a forbidden text"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "content_blocked"
        assert r.json()["error"]["param"] == "input"


async def test_a_responses_stream_blocked_by_an_output_rule_fails_with_its_code(db):
    async with gateway(db, ["The ", "launch", " co", "des are 1234", "."]) as gw:
        _, key = await guarded_tenant(gw, rule("no-codes", "output", "block", kind="deny_pattern",
                                               pattern="(?i)launch codes"))
        r = await gw.http.post("/v1/responses", headers={"Authorization": f"Bearer {key}"},
                               json={"model": MODEL, "input": "tell me", "stream": True})
        last = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")][-1]
        assert last["type"] == "response.failed"
        error = last["response"]["error"]
        assert error["code"] == "content_blocked" and "no-codes" in error["message"]
        assert "launch" not in r.text.replace("no-codes", "") and "1234" not in r.text
