"""Offline inference, shaped like vLLM's `LLM`: a batch in, finished outputs back in input order."""
from __future__ import annotations

import itertools

from workers.config import EngineConfig
from workers.engine.llm_engine import LLMEngine
from workers.outputs import RequestOutput
from workers.sampling_params import SamplingParams

Prompt = str | list[int]


class LLM:
    def __init__(self, model: str = "smollm2-135m-instruct", *, runner=None, **engine_config) -> None:
        self.engine = LLMEngine(EngineConfig(model=model, **engine_config), runner=runner)
        self._ids = itertools.count()

    @property
    def tokenizer(self):
        return self.engine.tokenizer

    def generate(self, prompts: Prompt | list[Prompt],
                 params: SamplingParams | list[SamplingParams] | None = None) -> list[RequestOutput]:
        """Complete each prompt (text or token ids); outputs are cumulative and final."""
        items = _prompt_list(prompts)
        return self._run([{"prompt": p} for p in items], _params_list(params, len(items)))

    def chat(self, conversations: list[dict] | list[list[dict]],
             params: SamplingParams | list[SamplingParams] | None = None) -> list[RequestOutput]:
        """Answer each conversation (a list of {"role", "content"} messages) through the chat template."""
        convs = _conversation_list(conversations)
        return self._run([{"messages": c} for c in convs], _params_list(params, len(convs)))

    def _run(self, inputs: list[dict], params: list[SamplingParams]) -> list[RequestOutput]:
        ids = [f"llm-{next(self._ids)}" for _ in inputs]
        try:
            for rid, inp, sp in zip(ids, inputs, params):
                self.engine.add_request(rid, **inp, params=sp)
        except ValueError:
            for rid in ids:  # all or nothing: no half-submitted batch keeps running
                self.engine.abort(rid)
            raise
        finals: dict[str, RequestOutput] = {}
        while self.engine.has_unfinished_requests():
            finals.update((o.request_id, o) for o in self.engine.step() if o.finished)
        return [finals[rid] for rid in ids]


def _prompt_list(prompts: object) -> list[Prompt]:
    if isinstance(prompts, str):
        return [prompts]
    if not isinstance(prompts, list) or not prompts:
        raise ValueError("prompts must be a string, a list of token ids, or a non-empty list of those")
    if all(isinstance(t, int) for t in prompts):
        return [prompts]
    return prompts


def _conversation_list(conversations: object) -> list[list[dict]]:
    if not isinstance(conversations, list) or not conversations:
        raise ValueError("conversations must be a non-empty list of messages or of conversations")
    if all(isinstance(m, dict) for m in conversations):
        return [conversations]
    return conversations


def _params_list(params: SamplingParams | list[SamplingParams] | None, n: int) -> list[SamplingParams]:
    if params is None:
        return [SamplingParams() for _ in range(n)]
    if isinstance(params, SamplingParams):
        return [params] * n
    if not isinstance(params, list) or len(params) != n:
        raise ValueError(f"params must be one SamplingParams or a list of {n}")
    return params
