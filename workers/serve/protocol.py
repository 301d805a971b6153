"""A replica's wire format: a request dict in (the gateway's GenerationRequest as a dict), chunk dicts out.

A request's sampling fields are SAMPLING_FIELDS, each as SamplingParams names it. `structured` (absent or None:
free text) is {"kind": ..., "value": ...}, what the output must match, enforced at decode time
(workers/structured/spec.py):

- {"kind": "json_object"}: one JSON object (OpenAI's response_format {"type": "json_object"});
- {"kind": "json_schema", "value": <schema dict>}: a JSON value valid under the schema (response_format
  {"type": "json_schema", "json_schema": {"schema": ...}}, or a forced tool call's `parameters`);
- {"kind": "regex", "value": <pattern>}, {"kind": "grammar", "value": <Lark or GBNF text>}.

StructuredOutput.from_response_format maps OpenAI's response_format to it. A bad spec (unknown kind, a
schema or grammar that does not compile) is a ValueError naming `structured`, raised by sampling_params for
its shape and by the engine, at submission, for the rest. The output ends (finish_reason "stop") when the
value is complete, or is cut at max_tokens ("length") as any other.

A request's `priority` (lower runs earlier), `tenant` (an opaque fair-share key) and `tenant_weight` order it
against others in the engine's queue (ScheduleParams, schedule_params); `reserved_tokens_per_s` is the rate the
tenant's reservation on the model guarantees (its work runs ahead of best-effort work up to that rate).

A chunk keeps the keys the gateway has always read, with their meaning for n == 1 unchanged:
`text`, `token_ids`, `prompt_tokens`, `completion_tokens`, `cached_tokens`, `finish_reason`. It adds:

- `reserved_tokens`: of `completion_tokens` (cumulative too), those the tenant's reservation covered.

- `completions`: one entry per completion with news in this chunk, each
  {"index", "text", "token_ids", "finish_reason", "logprobs", "cumulative_logprob"}, deltas like the
  top-level fields; an entry's finish_reason is set once, on that completion's last entry.
- `logprobs`: completion 0's new tokens' logprobs, aligned with `token_ids` (None unless asked for),
  each {"token_id", "logprob", "top": [[token_id, logprob], ...]} (raw model logprobs, most likely first).
- `cumulative_logprob`: completion 0's running sum (None unless logprobs were asked for or n > 1).

The top-level `text` / `token_ids` / `logprobs` are always completion 0's delta (empty when this chunk
brings it nothing). The top-level `finish_reason` is None until the request's last chunk, when all n
completions have finished, and then it is completion 0's reason: a reader that stops at the first
finish_reason reads the whole stream whatever n is. `completion_tokens` is cumulative, summed over the
n completions; `prompt_tokens` counts the prompt once.
"""
from __future__ import annotations

from typing import Any

from workers.outputs import CompletionOutput, RequestOutput, TokenLogprob
from workers.sampling_params import SamplingParams
from workers.schedule_params import ScheduleParams

# Request fields a replica turns into SamplingParams (absent ones keep SamplingParams' defaults).
SAMPLING_FIELDS = ("n", "max_tokens", "min_tokens", "temperature", "top_p", "top_k", "min_p", "repetition_penalty",
                   "presence_penalty", "frequency_penalty", "seed", "stop", "stop_token_ids", "ignore_eos",
                   "include_stop_str_in_output", "skip_special_tokens", "logprobs", "structured",
                   "speculative")


def sampling_params(request: dict[str, Any]) -> SamplingParams:
    """The request's sampling fields; ValueError, naming the field, for a bad value."""
    return SamplingParams(**{k: request[k] for k in SAMPLING_FIELDS if k in request})


# Request fields -> ScheduleParams' (absent or None: the default).
SCHEDULE_FIELDS = {"priority": "priority", "tenant": "tenant", "tenant_weight": "weight",
                   "reserved_tokens_per_s": "reserved_tokens_per_s"}


def schedule_params(request: dict[str, Any]) -> ScheduleParams:
    """The request's priority and fair-share tenant; ValueError, naming the field, for a bad value."""
    return ScheduleParams(**{ours: request[k] for k, ours in SCHEDULE_FIELDS.items() if request.get(k) is not None})


class ChunkWriter:
    """One request's delta outputs -> chunks. Remembers completion 0's finish reason, which the last chunk
    repeats at the top level even when completion 0 finished in an earlier chunk."""

    def __init__(self) -> None:
        self._first_finish: str | None = None

    def __call__(self, out: RequestOutput) -> dict[str, Any]:
        completions = [_completion(c) for c in out.outputs]
        first = next((c for c in completions if c["index"] == 0), None)
        if first is not None and first["finish_reason"] is not None:
            self._first_finish = first["finish_reason"]
        return {"text": first["text"] if first else "",
                "token_ids": first["token_ids"] if first else [],
                "prompt_tokens": out.num_prompt_tokens, "completion_tokens": out.num_output_tokens,
                "cached_tokens": out.num_cached_tokens, "reserved_tokens": out.num_reserved_tokens,
                "finish_reason": self._first_finish if out.finished else None,
                "logprobs": first["logprobs"] if first else None,
                "cumulative_logprob": first["cumulative_logprob"] if first else None,
                "completions": completions, "engine_ms": out.engine_ms}


def _completion(c: CompletionOutput) -> dict[str, Any]:
    return {"index": c.index, "text": c.text, "token_ids": list(c.token_ids), "finish_reason": c.finish_reason,
            "logprobs": None if c.logprobs is None else [logprob_dict(lp) for lp in c.logprobs],
            "cumulative_logprob": c.cumulative_logprob}


def logprob_dict(lp: TokenLogprob) -> dict[str, Any]:
    return {"token_id": lp.token_id, "logprob": lp.logprob, "top": [[t, v] for t, v in lp.top]}
