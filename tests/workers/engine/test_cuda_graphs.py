"""The decode-graph path's logic on the CPU: buckets, static buffers, padding rows that write no KV and attend to
nothing. A real capture needs CUDA; here each bucket's "graph" replays the same forward eagerly over the same
static buffers (the Triton kernels under the interpreter, on a tiny Llama), which is what a replay computes."""
from __future__ import annotations

import json

import pytest
import torch

from workers.config import EngineConfig
from workers.engine.cuda_graphs import DecodeGraphs, buckets
from workers.engine.model_runner import ModelRunner
from workers.engine.scheduler_output import ScheduledSequence
from workers.engine.sequence import Sequence
from workers.sampling_params import SamplingParams

BLOCK = 4


class EagerGraphs(DecodeGraphs):
    def _capture_one(self, b: int, pool):
        logits = self._forward(b)
        return (lambda: logits.copy_(self._forward(b))), logits, None


@pytest.fixture(scope="module")
def tiny_runner(tmp_path_factory):
    from tokenizers import Tokenizer, models
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-5,
                      initializer_range=0.1, tie_word_embeddings=True)
    folder = tmp_path_factory.mktemp("tiny-graphs")
    LlamaForCausalLM(cfg).save_pretrained(folder, safe_serialization=True)
    Tokenizer(models.WordLevel(vocab={f"<t{i}>": i for i in range(128)}, unk_token="<t0>")).save(
        str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<t0>"}))
    return ModelRunner(EngineConfig(model=str(folder), device="cpu", kernels="triton", block_size=BLOCK,
                                    num_kv_blocks=64, max_num_seqs=8))


def test_buckets_cover_every_batch_size_up_to_the_largest():
    assert buckets(1) == [1]
    assert buckets(6) == [1, 2, 4, 6]
    assert buckets(40) == [1, 2, 4, 8, 16, 32, 40]
    assert all(any(b >= n for b in buckets(40)) for n in range(1, 41))


def _decode_batch(runner, lengths: list[int], first_block: int):
    """Sequences of the given lengths whose prompts are in the cache; one decode token each."""
    scheduled, block = [], first_block
    for i, n in enumerate(lengths):
        ids = [(7 * i + j) % 120 + 1 for j in range(n)]
        seq = Sequence(f"s{first_block}-{i}", ids, n - 1, SamplingParams(), BLOCK)
        blocks = -(-n // BLOCK)
        seq.block_table = list(range(block, block + blocks))
        block += blocks
        prefill = ScheduledSequence(seq, n - 1)
        runner.forward([prefill])  # the prompt's KV
        seq.num_computed_tokens = n - 1
        scheduled.append(ScheduledSequence(seq, 1))
    return scheduled


def test_a_padded_replay_gives_the_eager_steps_logits_and_writes_only_real_slots(tiny_runner):
    runner = tiny_runner
    graphs = EagerGraphs(runner, max_batch=6)
    assert sorted(graphs.replays) == [1, 2, 4, 6]
    scheduled = _decode_batch(runner, [5, 9, 3], first_block=0)  # 3 sequences: bucket 4, one padding row
    batch = runner.prepare(scheduled)
    untouched = runner.k_cache[:, :, 40:].clone()  # blocks no sequence uses
    with torch.inference_mode():
        replayed = graphs.run(batch)
        eager = runner.model(batch.input_ids, batch.positions, runner.k_cache, runner.v_cache, batch.meta,
                             batch.logits_indices)
    assert replayed.shape == eager.shape == (3, 128)
    assert torch.allclose(replayed, eager, atol=1e-5, rtol=0)
    assert torch.equal(runner.k_cache[:, :, 40:], untouched)  # the padding row (slot -1) wrote nothing


def test_steps_a_graph_does_not_cover_run_eagerly(tiny_runner):
    graphs = EagerGraphs(tiny_runner, max_batch=2)
    too_many = tiny_runner.prepare(_decode_batch(tiny_runner, [4, 4, 4], first_block=20))
    assert graphs.run(too_many) is None
    seq = Sequence("p", list(range(1, 9)), 8, SamplingParams(), BLOCK)
    seq.block_table = [30, 31]
    assert graphs.run(tiny_runner.prepare([ScheduledSequence(seq, 8)])) is None  # a prefill step
