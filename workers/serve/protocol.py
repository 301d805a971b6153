"""A replica's wire format: typed msgspec structs sent as msgpack bytes, one `Request` in (the gateway's
GenerationRequest), `Chunk`s out (as vLLM v1 sends EngineCoreRequest / EngineCoreOutputs). The structs check their
own field types on decode; values are checked where they are used (SamplingParams, ScheduleParams).

A request's sampling fields are SamplingParams' own, under its names. `structured` (None: free text) is
{"kind": ..., "value": ...}, what the output must match, enforced at decode time (workers/structured/spec.py):

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

A chunk's `text`, `token_ids` and `logprobs` are completion 0's delta (empty when this chunk brings it nothing);
`completions` holds one entry per completion with news in this chunk, deltas too, each with its finish_reason
set once, on its last entry. The top-level `finish_reason` is None until the request's last chunk, when all n
completions have finished, and then it is completion 0's reason: a reader that stops at the first
finish_reason reads the whole stream whatever n is. `completion_tokens` is cumulative, summed over the n
completions; `prompt_tokens` counts the prompt once. `logprobs` are raw model logprobs, each with its
`top` alternatives, most likely first; `cumulative_logprob` is completion 0's running sum (None unless logprobs
were asked for or n > 1). The first chunk names the `version` and `replica` that answered. `reserved_tokens`
(cumulative too) are those of `completion_tokens` the tenant's reservation covered.

Chunks are arrays on the wire (array_like: no key names per chunk); a field is only ever added at the end, with a
default, so an older reader still decodes a newer chunk.
"""
from __future__ import annotations

from typing import Any

import msgspec

from workers.outputs import CompletionOutput, RequestOutput, TokenLogprob
from workers.sampling_params import SamplingParams
from workers.schedule_params import ScheduleParams


class Request(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What a replica is asked to generate: the defaults are SamplingParams' and ScheduleParams' own."""

    request_id: str
    version: str = ""
    prompt: str | None = None  # exactly one of prompt / messages
    messages: list[dict[str, Any]] | None = None
    n: int = 1
    max_tokens: int = 16
    min_tokens: int = 0
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    seed: int | None = None
    stop: list[str] = []
    stop_token_ids: list[int] = []
    ignore_eos: bool = False
    include_stop_str_in_output: bool = False
    skip_special_tokens: bool = True
    logprobs: int | None = None
    structured: dict[str, Any] | None = None
    speculative: bool = True
    priority: int = 0
    tenant: str | None = None
    tenant_weight: float = 1.0
    reserved_tokens_per_s: float = 0.0  # 0: best-effort only
    cache_salt: str | None = None  # opaque, per tenant: prefix-cache reuse only under the same salt


# Request fields a replica turns into SamplingParams (absent ones keep SamplingParams' defaults).
SAMPLING_FIELDS = ("n", "max_tokens", "min_tokens", "temperature", "top_p", "top_k", "min_p", "repetition_penalty",
                   "presence_penalty", "frequency_penalty", "seed", "stop", "stop_token_ids", "ignore_eos",
                   "include_stop_str_in_output", "skip_special_tokens", "logprobs", "structured",
                   "speculative")


def sampling_params(request: Request) -> SamplingParams:
    """The request's sampling fields; ValueError, naming the field, for a bad value."""
    return SamplingParams(**{k: getattr(request, k) for k in SAMPLING_FIELDS})


def schedule_params(request: Request) -> ScheduleParams:
    """The request's priority and fair-share tenant; ValueError, naming the field, for a bad value."""
    return ScheduleParams(priority=request.priority, tenant=request.tenant, weight=request.tenant_weight,
                          reserved_tokens_per_s=request.reserved_tokens_per_s)


class Logprob(msgspec.Struct, array_like=True, gc=False):
    token_id: int
    logprob: float
    top: list[tuple[int, float]] = []  # (token_id, logprob), most likely first


class Completion(msgspec.Struct, array_like=True, gc=False):
    index: int
    text: str
    token_ids: list[int]
    finish_reason: str | None = None
    logprobs: list[Logprob] | None = None  # aligned with token_ids, when asked for
    cumulative_logprob: float | None = None  # a running sum, not a delta


class Chunk(msgspec.Struct, array_like=True, gc=False):
    text: str
    token_ids: list[int]
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    finish_reason: str | None = None
    logprobs: list[Logprob] | None = None
    cumulative_logprob: float | None = None
    completions: list[Completion] = []
    engine_ms: float | None = None  # the request's metered engine time so far (workers/engine/step_meter.py)
    version: str | None = None  # the first chunk's: who answered
    replica: str | None = None
    reserved_tokens: int = 0


_encoder = msgspec.msgpack.Encoder()
_request_decoder = msgspec.msgpack.Decoder(Request)
_chunk_decoder = msgspec.msgpack.Decoder(Chunk)


def encode(message: Request | Chunk) -> bytes:
    return _encoder.encode(message)


def decode_request(data: bytes) -> Request:
    """msgspec.ValidationError (a ValueError) naming the field when one has the wrong type."""
    return _request_decoder.decode(data)


def decode_chunk(data: bytes) -> Chunk:
    return _chunk_decoder.decode(data)


class ChunkWriter:
    """One request's delta outputs -> chunks. Remembers completion 0's finish reason, which the last chunk
    repeats at the top level even when completion 0 finished in an earlier chunk."""

    def __init__(self) -> None:
        self._first_finish: str | None = None

    def __call__(self, out: RequestOutput) -> Chunk:
        completions = [_completion(c) for c in out.outputs]
        first = next((c for c in completions if c.index == 0), None)
        if first is not None and first.finish_reason is not None:
            self._first_finish = first.finish_reason
        return Chunk(first.text if first else "", first.token_ids if first else [], out.num_prompt_tokens,
                     out.num_output_tokens, out.num_cached_tokens, self._first_finish if out.finished else None,
                     first.logprobs if first else None, first.cumulative_logprob if first else None,
                     completions, out.engine_ms, reserved_tokens=out.num_reserved_tokens)


def _completion(c: CompletionOutput) -> Completion:
    return Completion(c.index, c.text, list(c.token_ids), c.finish_reason,
                      None if c.logprobs is None else [_logprob(lp) for lp in c.logprobs], c.cumulative_logprob)


def _logprob(lp: TokenLogprob) -> Logprob:
    return Logprob(lp.token_id, lp.logprob, [(t, v) for t, v in lp.top])
