"""Our Llama against transformers' on the same GGUF weights: prefill logits and paged decode logits."""
import os

import pytest
import torch

from workers.model.attention import AttentionMetadata, PrefillChunk

pytestmark = pytest.mark.model

BLOCK = 16
# float32 logits of magnitude ~40; GEMM blocking differs from transformers, so allow a few ulps of drift.


def _prompt(tokenizer) -> list[int]:
    return tokenizer.apply_chat_template([{"role": "user", "content": "Name the planets of the solar system."}])


def _slots(table: list[int], start: int, end: int) -> torch.Tensor:
    return torch.tensor([table[p // BLOCK] * BLOCK + p % BLOCK for p in range(start, end)])


def _run(runner, ids: list[int], table: list[int], start: int) -> torch.Tensor:
    """Compute ids (tokens start..start+len) into the runner's cache at `table`; logits for every new token."""
    end = start + len(ids)
    blocks = torch.tensor(table[:(end + BLOCK - 1) // BLOCK])
    meta = AttentionMetadata(slot_mapping=_slots(table, start, end),
                             prefills=[PrefillChunk(0, len(ids), end, blocks)],
                             prefill_query_start=torch.tensor([0, len(ids)]),
                             prefill_block_tables=blocks.unsqueeze(0), prefill_context_lens=torch.tensor([end]),
                             max_prefill_len=len(ids))
    if len(ids) == 1:
        meta = AttentionMetadata(slot_mapping=_slots(table, start, end), num_decode=1,
                                 decode_block_tables=blocks.unsqueeze(0), decode_context_lens=torch.tensor([end]))
    with torch.inference_mode():
        return runner.model(torch.tensor(ids), torch.arange(start, end), runner.k_cache, runner.v_cache, meta,
                            torch.arange(len(ids)))


@pytest.fixture(params=["kernels", "torch"])
def runner(request, model_runner, dense_runner):
    """The default runner (compiled kernels, GGUF-blocked weights) and the plain PyTorch one: both must match."""
    if request.param == "kernels" and model_runner.kernels.name != "cpu" and not os.environ.get("CI"):
        pytest.skip("no compiled CPU kernels on this machine")  # CI has gcc: there this path always runs
    return model_runner if request.param == "kernels" else dense_runner


@pytest.fixture(scope="module")
def reference(hf_model, model_runner):
    ids = _prompt(model_runner.tokenizer)
    with torch.inference_mode():
        return ids, hf_model(torch.tensor([ids])).logits[0].float()


def test_prefill_logits_match_transformers(runner, reference):
    ids, want = reference
    got = _run(runner, ids, [3, 9, 4, 11], 0)
    assert torch.allclose(got, want, atol=5e-4, rtol=0), float((got - want).abs().max())


def test_paged_decode_logits_match_transformers(runner, reference):
    """Prefill a prefix, then feed the rest one token at a time through scattered, non-contiguous blocks."""
    ids, want = reference
    table = [40, 17, 33, 5]
    split = len(ids) - 12
    got = [_run(runner, ids[:split], table, 0)]
    for pos in range(split, len(ids)):
        got.append(_run(runner, [ids[pos]], table, pos))
    got = torch.cat(got)
    assert torch.allclose(got, want, atol=5e-4, rtol=0), float((got - want).abs().max())


def test_chunk_attending_to_cached_prefix_matches_transformers(runner, reference):
    ids, want = reference
    table = [60, 61, 2, 70]
    _run(runner, ids[:13], table, 0)  # a split inside a block
    got = _run(runner, ids[13:], table, 13)
    assert torch.allclose(got, want[13:], atol=5e-4, rtol=0), float((got - want[13:]).abs().max())
