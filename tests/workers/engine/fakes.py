"""Fakes for the engine's pure layers: a byte tokenizer and a runner that simulates the KV cache.

FakeRunner honours ModelRunner's contract and checks the memory layer while it runs: it keeps
the token each KV slot was computed for (copy-on-write copies included), and refuses to "attend"
over a slot whose token is not the sequence's own, which is how a prefix-cache, fork or block-table
bug would corrupt real outputs.
"""
from __future__ import annotations

import functools
import random
import time
from typing import ClassVar

from jinja2 import TemplateError
from tokenizers import AddedToken, decoders, models, pre_tokenizers
from tokenizers import Tokenizer as BackendTokenizer

from workers.config import EngineConfig
from workers.engine.scheduler_output import ModelRunnerOutput, SchedulerOutput
from workers.outputs import TokenLogprob

EOS = 256
ROLES = ("system", "user", "assistant")


@functools.cache
def byte_backend() -> BackendTokenizer:
    """FakeTokenizer's vocabulary as a `tokenizers` byte-level BPE without merges (token i is byte i, 256 is
    <eos>): what llguidance reads to compile grammars for it."""
    # GPT-2's byte -> printable character table: printable Latin-1 bytes stand for themselves, the rest
    # take the characters from U+0100 on, in byte order.
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    chars = {b: chr(b) for b in printable} | {b: chr(256 + i) for i, b in enumerate(others)}
    backend = BackendTokenizer(models.BPE(vocab={chars[b]: b for b in range(256)}, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    backend.add_special_tokens([AddedToken("<eos>", special=True, normalized=False)])
    return backend


class FakeTokenizer:
    """Token i < 256 is byte i; 256 is <eos>. Multi-byte characters span several tokens."""

    vocab_size = 257
    eos_token_ids: ClassVar[set[int]] = {EOS}

    @property
    def backend(self) -> BackendTokenizer:
        return byte_backend()

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        out = bytearray()
        for i in ids:
            if i == EOS:
                if not skip_special_tokens:
                    out += b"<eos>"
            else:
                out.append(i)
        return out.decode("utf-8", errors="replace")

    def apply_chat_template(self, messages: list[dict], add_generation_prompt: bool = True) -> list[int]:
        text = ""
        for m in messages:
            if m["role"] not in ROLES:
                raise TemplateError(f"unknown role {m['role']!r}")
            text += f"<{m['role']}>{m['content']}\n"
        return self.encode(text + ("<assistant>" if add_generation_prompt else ""))


def next_printable(last: int) -> int:
    """The default deterministic 'model': a printable ASCII byte that depends on the last token."""
    return 32 + (last * 7 + 1) % 95


class FakeRunner:
    def __init__(self, config: EngineConfig, *, reply: bytes | None = None, max_model_len: int = 512,
                 step_delay: float = 0.0, fail_at_step: int | None = None) -> None:
        self.tokenizer = FakeTokenizer()
        self.block_size = config.block_size
        self.max_model_len = config.max_model_len or max_model_len
        self.num_kv_blocks = config.num_kv_blocks or 64
        self.reply = reply  # when set: output i is reply[i], then <eos>
        self.step_delay = step_delay
        self.fail_at_step = fail_at_step
        self.seed = config.seed
        self.kv: list[list[int | None]] = [[None] * self.block_size for _ in range(self.num_kv_blocks)]
        self.rngs: dict[tuple[str, int], random.Random] = {}  # per completion
        self.copies: list[tuple[int, int]] = []
        self.released: list[str] = []
        self.steps: list[SchedulerOutput] = []
        self.batch_tokens: list[int] = []
        self.batch_seqs: list[int] = []

    def execute(self, out: SchedulerOutput) -> ModelRunnerOutput:
        if self.fail_at_step is not None and len(self.steps) == self.fail_at_step:
            raise RuntimeError("simulated runner failure")
        self.steps.append(out)
        self.batch_tokens.append(out.num_batched_tokens)
        self.batch_seqs.append(len(out.scheduled))
        if self.step_delay:
            time.sleep(self.step_delay)
        snapshot = {src: list(self.kv[src]) for src, _ in out.blocks_to_copy}  # all reads before any write
        for src, dst in out.blocks_to_copy:
            self.kv[dst] = list(snapshot[src])
        self.copies += out.blocks_to_copy
        sampled = [self._compute(s) for s in out.scheduled]
        logprobs = [[_fake_logprob(s.seq, t) for t in tokens] for s, tokens in zip(out.scheduled, sampled)]
        wanted = any(s.seq.params.wants_logprob for s in out.scheduled)
        return ModelRunnerOutput(sampled, logprobs if wanted else None)

    def release(self, request_id: str) -> None:
        for key in [k for k in self.rngs if k[0] == request_id]:
            del self.rngs[key]
        self.released.append(request_id)

    def _compute(self, s) -> list[int]:
        seq, bs = s.seq, self.block_size
        end = s.start + s.num_new_tokens
        if len(seq.block_table) * bs < end or end > seq.num_tokens:
            raise RuntimeError(f"{seq.request_id}: blocks {seq.block_table} do not cover {end} tokens")
        for pos in range(s.start):  # attention reads every earlier slot: it must be ours
            slot = self.kv[seq.block_table[pos // bs]][pos % bs]
            if slot != seq.token_ids[pos]:
                raise RuntimeError(f"{seq.request_id}: KV slot {pos} holds {slot}, expected {seq.token_ids[pos]}")
        for pos in range(s.start, end):
            self.kv[seq.block_table[pos // bs]][pos % bs] = seq.token_ids[pos]
        if s.num_samples > 1:  # a parent's first sample: completion j draws from the same "logits"
            return [self._sample(seq, j) for j in range(s.num_samples)]
        return [self._sample(seq, seq.index)] if s.samples else []

    def _sample(self, seq, index: int) -> int:
        token = self._draw(seq, index)
        params = seq.params
        stops = set(params.stop_token_ids) | (set() if params.ignore_eos else {EOS})
        if seq.num_output_tokens < params.min_tokens and token in stops:  # the sampler's min_tokens mask
            token = next_printable(seq.token_ids[-1])
        return token

    def _draw(self, seq, index: int) -> int:
        if self.reply is not None:
            n = seq.num_output_tokens
            return self.reply[n] if n < len(self.reply) else EOS
        if seq.params.temperature > 0:
            seed = seq.params.seed if seq.params.seed is not None else self.seed
            key = (seq.request_id, index)
            rng = self.rngs.setdefault(key, random.Random(seed if index == 0 else f"{seed}/{index}"))
            return rng.randrange(32, 127)
        return next_printable(seq.token_ids[-1])


def _fake_logprob(seq, token: int) -> TokenLogprob | None:
    """A deterministic stand-in: -(token % 5 + 1) / 4, alternatives below it."""
    if not seq.params.wants_logprob:
        return None
    lp = -((token % 5) + 1) / 4
    return TokenLogprob(token, lp, tuple(((token + k) % 256, lp - k / 2) for k in range(seq.params.logprobs or 0)))


def fake_config(**overrides) -> EngineConfig:
    base = dict(model="fake", block_size=4, num_kv_blocks=64, max_num_seqs=8, max_num_batched_tokens=64)
    return EngineConfig(**{**base, **overrides})
