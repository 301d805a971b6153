"""Greedy reference generations from HF transformers on the same GGUF-dequantized weights, and the
comparison rule the equivalence tests share: tokens must match, except after a near-tie in the reference."""
from __future__ import annotations

from dataclasses import dataclass

import torch

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
