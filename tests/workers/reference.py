"""Greedy reference generations from HF transformers on the same GGUF-dequantized weights, and the
comparison rule the equivalence tests share: tokens must match, except after a near-tie in the reference."""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

REFERENCE_NEW_TOKENS = 64  # tokens generated per reference prompt
NEAR_TIE = 1e-3  # top-2 logit gap under which float32 summation order may legitimately pick either token

PROMPTS = [
    "Explain what a hash table is.",
    "Write a short poem about autumn leaves.",
    "Why is the sky blue?",
    "Give three tips for learning to cook.",
    "What does a CPU cache do?",
    "Describe the water cycle in simple words.",
    "How do vaccines train the immune system?",
    "Tell me a fun fact about octopuses.",
    "What is the difference between a list and a tuple in Python?",
    "Summarize the plot of Cinderella.",
    "How does compound interest work?",
    "Suggest a name for a friendly robot and explain why.",
    "What are the benefits of regular exercise?",
    "Explain recursion to a ten year old.",
    "Write a haiku about the ocean.",
    "How do airplanes stay in the air?",
]


@dataclass(slots=True)
class Reference:
    prompt_ids: list[int]
    tokens: list[int]   # generated, up to and including the first EOS
    gaps: list[float]   # top-1 minus top-2 logit at each generated position


def hf_greedy(hf_model, prompts: list[list[int]], max_new_tokens: int, eos_token_id: int,
              pad_token_id: int) -> list[Reference]:
    """One left-padded batch through `generate` (greedy, stops at EOS), keeping each step's logits."""
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[pad_token_id] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    with torch.inference_mode():
        out = hf_model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_new_tokens, do_sample=False,
                                eos_token_id=eos_token_id, pad_token_id=pad_token_id,
                                output_logits=True, return_dict_in_generate=True)
    logits = torch.stack(out.logits, dim=1).float()  # [B, steps, V]
    top2 = logits.topk(2, dim=-1).values
    gaps = (top2[..., 0] - top2[..., 1]).tolist()
    refs = []
    for b, prompt in enumerate(prompts):
        generated = out.sequences[b, width:].tolist()
        if eos_token_id in generated:
            generated = generated[:generated.index(eos_token_id) + 1]
        refs.append(Reference(prompt, generated, gaps[b][:len(generated)]))
    return refs


def greedy_references(hf_model, tokenizer, prompts: list[list[int]],
                      max_new_tokens: int = REFERENCE_NEW_TOKENS) -> list[Reference]:
    """hf_greedy stopping at (and padding with) `tokenizer`'s first EOS id."""
    eos = min(tokenizer.eos_token_ids)
    return hf_greedy(hf_model, prompts, max_new_tokens, eos_token_id=eos, pad_token_id=eos)


def divergence(ref: Reference, tokens: list[int]) -> str | None:
    """None when `tokens` equals the reference, or first departs from it at a near-tie; else why not."""
    for i, (want, got) in enumerate(zip(ref.tokens, tokens)):
        if want != got:
            if ref.gaps[i] < NEAR_TIE:
                return None
            return f"token {i}: engine {got}, reference {want} (reference top-2 gap {ref.gaps[i]:.4g})"
    if len(tokens) != len(ref.tokens):
        return f"length: engine {len(tokens)} tokens, reference {len(ref.tokens)}"
    return None


def near_tie_note(ref: Reference, tokens: list[int]) -> str | None:
    """Where a tolerated near-tie divergence happened, for the test log."""
    for i, (want, got) in enumerate(zip(ref.tokens, tokens)):
        if want != got:
            return f"near-tie divergence at token {i} (gap {ref.gaps[i]:.2e})"
    return None


# transformers' greedy generations for PROMPTS, stored: generating them took the suite ~45 s on the 2-core box
# (16 prompts x 64 tokens, keeping every step's logits). Stored for the GGUF file they came from (its sha256),
# the prompts as our tokenizer templates them and the length; anything else and the session generates them
# again. test_reference_equivalence regenerates two of them live each session, so the file cannot drift from
# transformers unnoticed. Write it again with `python -m tests.workers.reference`.
STORED = Path(__file__).with_name("hf_references.json")


def fingerprint(gguf_path: Path, prompts: list[list[int]], new_tokens: int) -> dict:
    digest = hashlib.sha256()
    with open(gguf_path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return {"gguf_sha256": digest.hexdigest(), "new_tokens": new_tokens, "prompt_ids": prompts}


def load_stored(expected: dict, path: Path = STORED) -> list[Reference] | None:
    """The stored references when they were made for `expected` (a fingerprint), else None."""
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    if data["fingerprint"] != expected:
        return None
    return [Reference(**r) for r in data["references"]]


def store(refs: list[Reference], made_for: dict, path: Path = STORED) -> None:
    import transformers

    data = {"fingerprint": made_for, "made_with": {"transformers": transformers.__version__,
                                                   "torch": torch.__version__},
            "references": [asdict(r) for r in refs]}
    path.write_text(json.dumps(data, separators=(",", ":")) + "\n")


def templated_prompts(tokenizer) -> list[list[int]]:
    return [tokenizer.apply_chat_template([{"role": "user", "content": p}]) for p in PROMPTS]


def _main() -> None:
    from tests.workers.conftest import load_hf_model
    from workers.model.registry import CATALOGUE
    from workers.serve.tokenizer import load_tokenizer

    weights = "smollm2-135m-instruct"
    gguf_path = CATALOGUE[weights].path()
    tokenizer = load_tokenizer(weights)
    prompts = templated_prompts(tokenizer)
    refs = greedy_references(load_hf_model(gguf_path), tokenizer, prompts)
    store(refs, fingerprint(gguf_path, prompts, REFERENCE_NEW_TOKENS))
    print(f"wrote {STORED}: {len(refs)} references")


if __name__ == "__main__":
    _main()
