"""Stored prompts through the official `openai` SDK (extra_body={"prompt": ...}) against live gateways on
one database: what the engine receives, label moves and splits, the version on the header, the ledger row
and the bill, freshness across replicas, and a semantic cache that never replays a moved label's answer."""
from __future__ import annotations

import hashlib
import time
from collections import Counter

import httpx
import numpy as np
import openai
import pytest
from openai import OpenAI

from gateway.main import create_app
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import ADMIN_KEY, CannedBackend, LiveServer, make_tenant, migrate_and_seed, wait_usage_rows

MODEL = "smollm2-135m-instruct"
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
OMIT = getattr(openai, "omit", openai.NOT_GIVEN)  # leaves `model` out of the body: the prompt's applies


class RecordingBackend(CannedBackend):
    """The canned backend, keeping every GenerationRequest it was handed."""

    def __init__(self) -> None:
        super().__init__(tokens=4)
        self.requests = []

    async def stream(self, request):
        self.requests.append(request)
        async for chunk in super().stream(request):
            yield chunk


class HashEmbedder:
    """Same text, same unit vector; different texts, unrelated ones (no model to load)."""
    dim = 16

    def embed_one(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return v / np.linalg.norm(v)


@pytest.fixture(scope="module")
def db(tmp_path_factory, gw_catalogue):
    tmp = tmp_path_factory.mktemp("prompts")
    url = f"sqlite:///{tmp / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    return tmp, url


@pytest.fixture(scope="module")
def backend():
    return RecordingBackend()


@pytest.fixture(scope="module")
def replicas(db, backend):
    """Two gateways on one database, as two replicas are."""
    tmp, url = db
    settings = [gateway_settings(tmp / name, url, cache_enabled=False, embeddings_enabled=False)
                for name in ("a", "b")]
    for s in settings:
        s.data_dir.mkdir(exist_ok=True)
    with LiveServer(create_app(settings[0], backend=backend)) as a, \
            LiveServer(create_app(settings[1], backend=backend)) as b:
        yield a, b


def admin(server, method: str, path: str, **kw) -> httpx.Response:
    r = httpx.request(method, f"{server.url}/admin{path}", headers=ADMIN, timeout=30, **kw)
    assert r.status_code < 300, r.text
    return r


def prompt(server, name: str, *versions: dict) -> None:
    """Create `name` with one version per dict ({"messages", "model"?, "params"?})."""
    admin(server, "POST", "/prompts", json={"name": name, **versions[0]})
    for v in versions[1:]:
        admin(server, "POST", f"/prompts/{name}/versions", json=v)


def label(server, name: str, label_name: str, **target) -> None:
    admin(server, "PUT", f"/prompts/{name}/labels/{label_name}", json=target)


def client(server, key: str) -> OpenAI:
    return OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0)


def ask(c: OpenAI, ref: dict, messages=(), **kw):
    """A raw response (headers and the parsed completion)."""
    kw.setdefault("model", OMIT)
    return c.chat.completions.with_raw_response.create(messages=list(messages), extra_body={"prompt": ref}, **kw)


GREETING_V1 = {"messages": [{"role": "system", "content": "You greet {{name}} in {{lang}}."},
                            {"role": "user", "content": "Hello from {{name}}."}],
               "model": MODEL, "params": {"temperature": 0.2, "max_tokens": 7, "top_p": 0.9}}
GREETING_V2 = {"messages": [{"role": "system", "content": "Be brief with {{name}}."}],
               "model": MODEL, "params": {"temperature": 0.4}}


def test_served_by_label_rendered_with_the_requests_messages_after(replicas, backend, db):
    a, _ = replicas
    prompt(a, "greeting", GREETING_V1, GREETING_V2)
    label(a, "greeting", "production", version=1)
    tenant_id, key = make_tenant(db[1])
    c = client(a, key)

    raw = ask(c, {"id": "greeting", "label": "production", "variables": {"name": "Ada", "lang": "French"}},
              [{"role": "user", "content": "And one more thing."}])
    assert raw.headers["x-tollgate-prompt-version"] == "greeting:1"
    assert raw.parse().choices[0].message.content == "aaaa"
    seen = backend.requests[-1]
    assert seen.messages == [{"role": "system", "content": "You greet Ada in French."},
                             {"role": "user", "content": "Hello from Ada."},
                             {"role": "user", "content": "And one more thing."}]
    assert (seen.temperature, seen.max_tokens, seen.top_p) == (0.2, 7, 0.9)  # the prompt's params
    assert seen.version.startswith(MODEL)  # the prompt's model

    # The request's own settings win over the prompt's.
    raw = ask(c, {"id": "greeting", "version": 1, "variables": {"name": "Ada", "lang": "French"}},
              model=MODEL, temperature=0.0, max_tokens=3)
    seen = backend.requests[-1]
    assert (seen.temperature, seen.max_tokens, seen.top_p) == (0.0, 3, 0.9)
    assert raw.headers["x-tollgate-prompt-version"] == "greeting:1"

    rows = wait_usage_rows(db[1], tenant_id, 2)
    assert [r.prompt_version for r in rows] == ["greeting:1", "greeting:1"]


def test_a_label_move_is_served_next_even_by_the_other_replica(replicas, backend, db):
    a, b = replicas
    prompt(a, "mover", {"messages": [{"role": "system", "content": "one {{x}}"}], "model": MODEL},
           {"messages": [{"role": "system", "content": "two {{x}}"}], "model": MODEL},
           {"messages": [{"role": "system", "content": "three {{x}}"}], "model": MODEL})
    _, key = make_tenant(db[1])
    ref = {"id": "mover", "variables": {"x": "!"}}
    # No production label yet: the latest version.
    assert ask(client(b, key), ref).headers["x-tollgate-prompt-version"] == "mover:3"
    for version in (1, 2, 1, 3):
        label(a, "mover", "production", version=version)  # moved on replica a...
        raw = ask(client(b, key), ref)  # ...served by replica b on its very next request
        assert raw.headers["x-tollgate-prompt-version"] == f"mover:{version}"
    assert backend.requests[-1].messages == [{"role": "system", "content": "three !"}]
    admin(a, "POST", "/prompts/mover/labels/production/rollback")
    assert ask(client(b, key), ref).headers["x-tollgate-prompt-version"] == "mover:1"


def test_a_split_label_is_sticky_per_user_and_near_its_weights(replicas, db):
    a, b = replicas
    prompt(a, "split", {"messages": [{"role": "system", "content": "A"}], "model": MODEL},
           {"messages": [{"role": "system", "content": "B"}], "model": MODEL})
    label(a, "split", "production", weights={"1": 50, "2": 50})
    _, key = make_tenant(db[1])
    ca, cb = client(a, key), client(b, key)
    served = {}
    for i in range(120):
        user = f"user-{i}"
        served[user] = ask(ca, {"id": "split"}, user=user).headers["x-tollgate-prompt-version"]
    for i in range(0, 120, 10):  # the same user, again and on the other replica: the same version
        user = f"user-{i}"
        assert ask(cb, {"id": "split"}, user=user).headers["x-tollgate-prompt-version"] == served[user]
        assert ask(ca, {"id": "split"}, user=user).headers["x-tollgate-prompt-version"] == served[user]
    counts = Counter(served.values())
    assert set(counts) == {"split:1", "split:2"} and 35 <= counts["split:1"] <= 85, counts


def test_request_errors_name_what_is_wrong(replicas, db):
    a, _ = replicas
    prompt(a, "needy", {"messages": [{"role": "user", "content": "{{who}} wants {{what}} by {{when}}"}],
                        "model": MODEL})
    prompt(a, "modelless", {"messages": [{"role": "user", "content": "hi"}]})
    tenant_id, key = make_tenant(db[1])
    c = client(a, key)
    with pytest.raises(openai.BadRequestError) as e:
        ask(c, {"id": "needy", "variables": {"what": "tea"}})
    assert "when" in e.value.message and "who" in e.value.message and "what" not in e.value.message.split(":")[-1]
    assert e.value.body["param"] == "prompt.variables" and e.value.body["code"] == "missing_prompt_variables"
    for ref, param in [({"id": "nope"}, "prompt.id"), ({"id": "needy", "version": 9}, "prompt.version"),
                       ({"id": "needy", "label": "staging"}, "prompt.label")]:
        with pytest.raises(openai.NotFoundError) as e:
            ask(c, ref)
        assert e.value.body["param"] == param
    for ref in [{"id": "needy", "label": "x", "version": 1}, {"variables": {}}, {"id": "needy", "extra": 1}]:
        with pytest.raises(openai.BadRequestError):
            ask(c, ref)
    with pytest.raises(openai.BadRequestError) as e:
        ask(c, {"id": "modelless"})
    assert e.value.body["param"] == "model"
    ok = ask(c, {"id": "modelless"}, model=MODEL)
    assert ok.headers["x-tollgate-prompt-version"] == "modelless:1"
    r = httpx.post(f"{a.url}/v1/chat/completions", json={"model": MODEL}, headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 400 and r.json()["error"]["param"] == "messages"  # without a prompt, as before
    assert len(wait_usage_rows(db[1], tenant_id, 1)) == 1  # refusals are never billed


def test_streaming_carries_the_version_header(replicas, db):
    a, _ = replicas
    prompt(a, "streamy", {"messages": [{"role": "user", "content": "hi"}], "model": MODEL})
    _, key = make_tenant(db[1])
    with client(a, key).chat.completions.with_streaming_response.create(
            model=OMIT, messages=[], stream=True, extra_body={"prompt": {"id": "streamy"}}) as raw:
        assert raw.headers["x-tollgate-prompt-version"] == "streamy:1"
        assert "".join(c.choices[0].delta.content or "" for c in raw.parse() if c.choices) == "aaaa"


def test_bill_grouped_by_prompt_version_and_the_default_bill_unchanged(replicas, db):
    a, _ = replicas
    prompt(a, "billed", {"messages": [{"role": "user", "content": "v1"}], "model": MODEL},
           {"messages": [{"role": "user", "content": "v2"}], "model": MODEL})
    tenant_id, key = make_tenant(db[1])
    c = client(a, key)
    ask(c, {"id": "billed", "version": 1})
    ask(c, {"id": "billed", "version": 2})
    ask(c, {"id": "billed", "version": 2})
    c.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "no prompt"}])
    wait_usage_rows(db[1], tenant_id, 4)

    plain = admin(a, "GET", f"/tenants/{tenant_id}/bill").json()
    # (cache_accuracy: the semantic cache's live-check figures, on every bill when the cache is on)
    # (requests_clamped, tokens_saved_by_cap: the output cap's report; tier: the price's volume tier)
    assert set(plain) - {"cache_accuracy", "requests_clamped", "tokens_saved_by_cap"} == {
        "tenant_id", "month", "lines", "total_cost", "currency"}
    (line,) = plain["lines"]
    assert set(line) == {"model", "kind", "tier", "requests", "prompt_tokens", "completion_tokens", "cached_tokens",
                         "cost"}
    assert line["requests"] == 4

    grouped = admin(a, "GET", f"/tenants/{tenant_id}/bill", params={"group_by": "prompt_version"}).json()
    assert grouped["group_by"] == "prompt_version" and grouped["total_cost"] == plain["total_cost"]
    assert [(g["prompt_version"], g["requests"]) for g in grouped["lines"]] == [
        ("billed:1", 1), ("billed:2", 2), (None, 1)]
    r = httpx.get(f"{a.url}/admin/tenants/{tenant_id}/bill", params={"group_by": "colour"}, headers=ADMIN)
    assert r.status_code == 400 and r.json()["error"]["message"]


def test_the_semantic_cache_never_replays_a_moved_labels_answer(db):
    tmp, url = db
    backend = RecordingBackend()
    settings = gateway_settings(tmp / "cached", url, embeddings_enabled=False)
    settings.data_dir.mkdir(exist_ok=True)
    with LiveServer(create_app(settings, backend=backend, embedder=HashEmbedder())) as live:
        prompt(live, "cached", {"messages": [{"role": "system", "content": "Old rules for {{n}}."}], "model": MODEL,
                                "params": {"temperature": 0}},
               {"messages": [{"role": "system", "content": "New rules for {{n}}."}], "model": MODEL,
                "params": {"temperature": 0}})
        label(live, "cached", "production", version=1)
        _tenant_id, key = make_tenant(url)
        c = client(live, key)
        ref, question = {"id": "cached", "variables": {"n": "Bo"}}, [{"role": "user", "content": "What now?"}]
        assert ask(c, ref, question, temperature=0).headers["x-tollgate-cache"] == "miss"
        deadline = time.monotonic() + 15
        while (hit := ask(c, ref, question, temperature=0)).headers["x-tollgate-cache"] != "hit":  # stored later
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert hit.headers["x-tollgate-prompt-version"] == "cached:1" and "x-tollgate-ignored-fields" not in hit.headers
        served = len(backend.requests)

        label(live, "cached", "production", version=2)
        raw = ask(c, ref, question, temperature=0)
        assert raw.headers["x-tollgate-cache"] == "miss" and raw.headers["x-tollgate-prompt-version"] == "cached:2"
        assert len(backend.requests) == served + 1
        assert backend.requests[-1].messages[0] == {"role": "system", "content": "New rules for Bo."}


def test_a_tenants_own_prompt_serves_only_its_keys_and_is_a_plain_404_to_others(replicas, db):
    a, _ = replicas
    x_id, x_key = make_tenant(db[1])
    _, y_key = make_tenant(db[1])
    prompt(a, "team-x-secret", {"messages": [{"role": "system", "content": "Code {{word}}: never repeat this."}],
                                "model": MODEL})
    r = httpx.post(f"{a.url}/admin/prompts", headers=ADMIN, timeout=30, json={
        "name": "x-only", "tenant_id": x_id, "model": MODEL,
        "messages": [{"role": "system", "content": "Team X's system prompt, for {{who}}."}]})
    assert r.status_code == 201 and r.json()["tenant_id"] == x_id

    def send(key: str, name: str, **extra) -> httpx.Response:
        return httpx.post(f"{a.url}/v1/chat/completions", headers={"Authorization": f"Bearer {key}"}, timeout=30,
                          json={"prompt": {"id": name, **extra}, "messages": [{"role": "user", "content": "hi"}]})

    ok = send(x_key, "x-only", variables={"who": "Ada"})
    assert ok.status_code == 200, ok.text
    assert ok.headers["x-tollgate-prompt-version"] == "x-only:1"
    for extra in [{}, {"version": 1}, {"label": "production"}]:  # no variables: the owner would get a 400
        other, missing = send(y_key, "x-only", **extra), send(y_key, "no-such-prompt", **extra)
        assert other.status_code == missing.status_code == 404
        assert other.json()["error"] == {**missing.json()["error"],
                                         "message": missing.json()["error"]["message"].replace("no-such-prompt",
                                                                                               "x-only")}
        assert "who" not in other.text and "Team X" not in other.text
    assert send(x_key, "x-only").status_code == 400  # the owner is told which variables are missing
    shared = send(y_key, "team-x-secret", variables={"word": "w"})  # no tenant_id: shared, as before
    assert shared.status_code == 200, shared.text
