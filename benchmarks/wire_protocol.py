"""Gateway<->replica wire format, per streamed chunk: the typed msgspec structs sent as msgpack
(workers/serve/protocol.py) against the dicts they replaced, measured in the same run.

    .venv/bin/python benchmarks/wire_protocol.py [--number 20000]

Each path is what one chunk costs from the replica's engine output to the gateway's GenerationChunk:
- dicts (before): build the chunk dict, pickle it (what Ray does to a yielded dict), unpickle, read it into a
  GenerationChunk;
- msgspec (now): build the Chunk struct, msgpack-encode it, pickle the bytes (Ray still wraps what is yielded),
  unpickle, msgpack-decode, read it into a GenerationChunk.
Printed per chunk kind: encode+decode alone (the serialization) and the whole path, in microseconds, the
bytes on the wire, and each ratio new/old (below 1: faster or smaller)."""
from __future__ import annotations

import argparse
import pickle
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway.serving.base import CompletionDelta, GenerationChunk, TokenLogprob
from workers.outputs import CompletionOutput, RequestOutput
from workers.outputs import TokenLogprob as EngineLogprob
from workers.serve.protocol import ChunkWriter, decode_chunk, encode


# --- the dict format as it was before the structs (the baseline), kept here only to measure against

def _old_chunk(out: RequestOutput) -> dict:
    completions = [{"index": c.index, "text": c.text, "token_ids": list(c.token_ids), "finish_reason": c.finish_reason,
                    "logprobs": None if c.logprobs is None else [
                        {"token_id": lp.token_id, "logprob": lp.logprob, "top": [[t, v] for t, v in lp.top]}
                        for lp in c.logprobs],
                    "cumulative_logprob": c.cumulative_logprob} for c in out.outputs]
    first = next((c for c in completions if c["index"] == 0), None)
    return {"text": first["text"] if first else "", "token_ids": first["token_ids"] if first else [],
            "prompt_tokens": out.num_prompt_tokens, "completion_tokens": out.num_output_tokens,
            "cached_tokens": out.num_cached_tokens, "reserved_tokens": out.num_reserved_tokens, "finish_reason": None,
            "logprobs": first["logprobs"] if first else None,
            "cumulative_logprob": first["cumulative_logprob"] if first else None,
            "completions": completions, "engine_ms": out.engine_ms}


def _old_from_wire(raw: dict) -> GenerationChunk:
    completions = [CompletionDelta(
        c["index"], c["text"], list(c["token_ids"]), c["finish_reason"],
        None if c.get("logprobs") is None else [
            TokenLogprob(lp["token_id"], lp["logprob"], tuple((t, v) for t, v in lp["top"])) for lp in c["logprobs"]],
        c.get("cumulative_logprob")) for c in raw.get("completions") or ()]
    return GenerationChunk(raw["text"], list(raw["token_ids"]), raw["prompt_tokens"], raw["completion_tokens"],
                           raw["cached_tokens"], raw["finish_reason"], completions, raw.get("engine_ms"),
                           reserved_tokens=int(raw.get("reserved_tokens") or 0))


def _outputs() -> dict[str, RequestOutput]:
    lps = [EngineLogprob(1234 + k, -0.31 * k, tuple((1234 + 7 * k + i, -0.31 * k - 0.17 * i) for i in range(5)))
           for k in range(4)]  # distinct values: pickle's memo must not dedupe repeats the real stream never has
    return {
        "n=1, one token": RequestOutput("r", None, list(range(40)), [CompletionOutput(0, " the", [279])], False,
                                        7, 32, engine_ms=12.5),
        "n=1, 4 tokens, top-5 logprobs": RequestOutput(
            "r", None, list(range(40)), [CompletionOutput(0, " the cat sat", [279, 8415, 7731, 389], None, lps,
                                                          -1.24)], False, 12, 32, engine_ms=12.5),
        "n=4, one token each": RequestOutput("r", None, list(range(40)), [
            CompletionOutput(i, " the", [279], None, None, -0.3 * i) for i in range(4)], False, 28, 32, engine_ms=40.0),
    }


def _pair_us(old, new, number: int, repeats: int) -> tuple[float, float]:
    """Best per-call microseconds of each, timed interleaved: a busy spell of the machine slows both alike."""
    best_old = best_new = float("inf")
    for _ in range(repeats):
        best_old = min(best_old, timeit.timeit(old, number=number) / number * 1e6)
        best_new = min(best_new, timeit.timeit(new, number=number) / number * 1e6)
    return best_old, best_new


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--number", type=int, default=1000, help="chunks per timing")
    p.add_argument("--repeats", type=int, default=100, help="timings; the best counts")
    args = p.parse_args()
    dumps, loads = pickle.dumps, pickle.loads
    print(f"{'chunk':32} {'what':16} {'dicts':>9} {'msgspec':>9} {'ratio':>6}")
    for name, out in _outputs().items():
        old, new = _old_chunk(out), ChunkWriter()(out)
        old_wire, new_wire = dumps(old, protocol=5), dumps(encode(new), protocol=5)
        assert _old_from_wire(loads(old_wire)) == GenerationChunk.from_wire(decode_chunk(loads(new_wire)))
        rows = {
            "encode+decode µs": _pair_us(lambda old=old: loads(dumps(old, protocol=5)),
                                         lambda new=new: decode_chunk(encode(new)),
                                         args.number, args.repeats),
            "whole path µs": _pair_us(
                lambda out=out: _old_from_wire(loads(dumps(_old_chunk(out), protocol=5))),
                lambda out=out: GenerationChunk.from_wire(
                    decode_chunk(loads(dumps(encode(ChunkWriter()(out)), protocol=5)))),
                args.number, args.repeats),
            "bytes on wire": (len(old_wire), len(new_wire)),
        }
        for what, (before, after) in rows.items():
            print(f"{name:32} {what:16} {before:9.2f} {after:9.2f} {after / before:6.2f}")


if __name__ == "__main__":
    main()
