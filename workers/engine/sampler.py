"""Next-token sampling: greedy, temperature, top-k, top-p, with a seeded generator per request."""
from __future__ import annotations

import torch

from workers.sampling_params import SamplingParams


def filtered_probs(logits: torch.Tensor, temperature: torch.Tensor, top_k: torch.Tensor,
                   top_p: torch.Tensor) -> torch.Tensor:
    """logits [N, V] float32; per-row temperature (> 0), top_k (0: off), top_p (1: off) -> probs [N, V]."""
    logits = logits / temperature.unsqueeze(1)
    vocab = logits.shape[1]
    k = top_k.clamp(max=vocab)
    if bool((k > 0).any()):
        kth = logits.topk(int(k.max()), dim=1).values  # [N, k_max], sorted descending
        threshold = kth.gather(1, (k - 1).clamp(min=0).unsqueeze(1))
        threshold = torch.where(k.unsqueeze(1) > 0, threshold, torch.full_like(threshold, float("-inf")))
        logits = logits.masked_fill(logits < threshold, float("-inf"))
    probs = torch.softmax(logits, dim=1)
    if bool((top_p < 1).any()):
        sorted_probs, order = probs.sort(dim=1, descending=True)
        # Keep the smallest prefix whose mass reaches top_p: drop a token when the mass before it already does.
        drop = (sorted_probs.cumsum(dim=1) - sorted_probs) >= top_p.unsqueeze(1)
        probs = torch.zeros_like(probs).scatter_(1, order, sorted_probs.masked_fill(drop, 0.0))
    return probs


class Sampler:
    def __init__(self, seed: int, device: torch.device | str = "cpu") -> None:
        # Requests without a seed of their own draw one from this stream: a run is reproducible end to end.
        self._seeds = torch.Generator().manual_seed(seed)
        self._generators: dict[str, torch.Generator] = {}  # on the logits' device, so sampling stays there
        self.device = torch.device(device)

    def _generator(self, request_id: str, params: SamplingParams) -> torch.Generator:
        gen = self._generators.get(request_id)
        if gen is None:
            seed = params.seed if params.seed is not None else int(torch.randint(2**62, (1,), generator=self._seeds))
            gen = self._generators[request_id] = torch.Generator(device=self.device).manual_seed(seed)
        return gen

    def release(self, request_id: str) -> None:
        self._generators.pop(request_id, None)

    def sample(self, logits: torch.Tensor, params: list[SamplingParams], request_ids: list[str]) -> list[int]:
        """logits [N, V] float32, one row per request. Greedy rows are the exact argmax."""
        tokens = logits.argmax(dim=1).tolist()
        rows = [i for i, p in enumerate(params) if not p.greedy]
        if not rows:
            return tokens
        picked = [params[i] for i in rows]
        probs = filtered_probs(
            logits[rows],
            torch.tensor([p.temperature for p in picked], dtype=logits.dtype, device=logits.device),
            torch.tensor([max(p.top_k, 0) for p in picked], dtype=torch.long, device=logits.device),
            torch.tensor([p.top_p for p in picked], dtype=logits.dtype, device=logits.device),
        )
        for j, i in enumerate(rows):
            gen = self._generator(request_ids[i], params[i])
            tokens[i] = int(torch.multinomial(probs[j], 1, generator=gen))
        return tokens
