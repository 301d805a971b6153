"""ModelRunner driven directly with hand-built sequences and block tables: chunked prefill and mixed
prefill/decode batches give the same logits and tokens as computing each sequence in one shot."""
import itertools
import os

import pytest
import torch

from workers.engine.scheduler_output import ScheduledSequence
from workers.engine.sequence import Sequence
from workers.sampling_params import SamplingParams

pytestmark = pytest.mark.model

BLOCK = 16
_free_blocks = itertools.count(100)  # block ids no other test in this module touches
GREEDY = SamplingParams(max_tokens=8, temperature=0)


def _seq(runner, question: str, params: SamplingParams = GREEDY, name: str | None = None) -> Sequence:
    ids = runner.tokenizer.apply_chat_template([{"role": "user", "content": question}])
    seq = Sequence(name or question, list(ids), len(ids), params, BLOCK)
    seq.block_table = [next(_free_blocks) for _ in range((len(ids) + 8 + BLOCK - 1) // BLOCK)]
    return seq


def _step(runner, chunks: list[tuple[Sequence, int]]) -> tuple[list, torch.Tensor, list[int]]:
    """Run one step of (sequence, num_new_tokens); advance the sequences like the scheduler would."""
    scheduled = [ScheduledSequence(seq, n) for seq, n in chunks]
    batch, logits = runner.forward(scheduled)
    tokens = [t[0] if t else None for t in runner.sample(scheduled, batch, logits).sampled]
    for s, token in zip(scheduled, tokens):
        s.seq.num_computed_tokens += s.num_new_tokens
        if token is not None:
            s.seq.token_ids.append(token)
    return tokens, logits, batch.sample_rows


def _one_shot(runner, question: str) -> tuple[int, torch.Tensor]:
    seq = _seq(runner, question, name=f"oneshot-{question}")
    tokens, logits, _ = _step(runner, [(seq, seq.num_tokens)])
    return tokens[0], logits[0]


QUESTIONS = ["What is a prime number?", "Write one sentence about rain.", "How far is the moon?"]


def test_chunked_prefill_equals_one_shot(model_runner):
    token, logits = _one_shot(model_runner, QUESTIONS[0])
    seq = _seq(model_runner, QUESTIONS[0], name="chunked")
    n = seq.num_tokens
    for size in (16, 7, 1):  # chunk boundaries on, off and inside a block; one single-token chunk
        tokens, _, _ = _step(model_runner, [(seq, size)])
        assert tokens == [None]
    tokens, chunked_logits, _ = _step(model_runner, [(seq, n - 24)])
    assert tokens == [token]
    assert torch.allclose(chunked_logits[0], logits, atol=1e-4, rtol=0)


def test_mixed_prefill_and_decode_batch_equals_one_shot(model_runner):
    alone = {q: _one_shot(model_runner, q) for q in QUESTIONS}
    a, b, c = (_seq(model_runner, q, name=f"mixed-{i}") for i, q in enumerate(QUESTIONS))
    _step(model_runner, [(a, a.num_tokens - 1)])  # a: all but its last prompt token
    _step(model_runner, [(b, 10)])                 # b: a first chunk
    # One step: a decodes (one token, the end of its prompt), b finishes its prefill, c prefills whole.
    tokens, logits, rows = _step(model_runner, [(a, 1), (b, b.num_tokens - 10), (c, c.num_tokens)])
    assert tokens == [alone[q][0] for q in QUESTIONS]
    for row, q in zip(rows, QUESTIONS):
        assert torch.allclose(logits[rows.index(row)], alone[q][1], atol=1e-4, rtol=0)


def test_batched_decode_equals_sequential_decode(model_runner):
    def generate(batched: bool) -> list[list[int]]:
        seqs = [_seq(model_runner, q, name=f"dec-{batched}-{i}") for i, q in enumerate(QUESTIONS)]
        for s in seqs:
            _step(model_runner, [(s, s.num_tokens)])
        for _ in range(6):
            if batched:
                _step(model_runner, [(s, 1) for s in seqs])
            else:
                for s in seqs:
                    _step(model_runner, [(s, 1)])
        return [s.output_token_ids for s in seqs]

    assert generate(batched=True) == generate(batched=False)


def test_seeded_sampling_is_reproducible_across_requests(model_runner):
    params = SamplingParams(max_tokens=8, temperature=1.0, top_p=0.9, seed=11)

    def run(name: str) -> list[int]:
        seq = _seq(model_runner, QUESTIONS[1], params=params, name=name)
        _step(model_runner, [(seq, seq.num_tokens)])
        for _ in range(5):
            _step(model_runner, [(seq, 1)])
        model_runner.release(name)
        return seq.output_token_ids

    assert run("seeded-a") == run("seeded-b")


def test_block_table_too_short_is_refused(model_runner):
    seq = _seq(model_runner, QUESTIONS[2], name="short-table")
    seq.block_table = seq.block_table[:1]
    with pytest.raises(ValueError, match="block table"):
        model_runner.forward([ScheduledSequence(seq, seq.num_tokens)])


def test_kv_pool_geometry(model_runner):
    # K and V, 30 layers, 16 tokens, 3 KV heads of 64 floats.
    assert model_runner.kv_bytes_per_block == 2 * 30 * 16 * 3 * 64 * 4
    assert model_runner.num_kv_blocks == 512
    assert model_runner.max_model_len == 8192


@pytest.mark.parametrize("copies", [1, 3])  # 3 and 9 sequences: the matmuls' few-rows and many-rows kernels
def test_decoder_stack_equals_layer_by_layer_decode(model_runner, copies):
    """Decode-only steps run all layers in one kernel call; the layer-by-layer path must give the same logits."""
    model = model_runner.model
    if model.decoder_stack is None and not os.environ.get("CI"):  # CI has gcc: there it must exist
        pytest.skip("no compiled kernels: there is no decoder stack")
    seqs = [_seq(model_runner, q, name=f"stack-{copies}-{i}") for i, q in enumerate(QUESTIONS * copies)]
    for s in seqs:
        _step(model_runner, [(s, s.num_tokens)])  # prompt computed, first token sampled: next is a decode
    scheduled = [ScheduledSequence(s, 1) for s in seqs]
    _, with_stack = model_runner.forward(scheduled)
    stack, model.decoder_stack = model.decoder_stack, None
    try:
        _, layer_by_layer = model_runner.forward(scheduled)  # rewrites the same KV slots with the same values
    finally:
        model.decoder_stack = stack
    assert torch.allclose(with_stack, layer_by_layer, atol=1e-5, rtol=0)
    assert torch.equal(with_stack.argmax(dim=1), layer_by_layer.argmax(dim=1))


def test_copy_blocks_copies_k_and_v_of_every_layer(model_runner):
    src, dst, other = next(_free_blocks), next(_free_blocks), next(_free_blocks)
    for cache in (model_runner.k_cache, model_runner.v_cache):
        cache[:, :, src] = torch.randn(cache[:, :, src].shape)
        cache[:, :, other] = torch.randn(cache[:, :, other].shape)
    keep = model_runner.k_cache[:, :, other].clone()
    # Chained: dst takes src's old KV even though src is overwritten in the same call.
    want_dst = model_runner.k_cache[:, :, src].clone(), model_runner.v_cache[:, :, src].clone()
    model_runner.copy_blocks([(src, dst), (other, src)])
    assert torch.equal(model_runner.k_cache[:, :, dst], want_dst[0])
    assert torch.equal(model_runner.v_cache[:, :, dst], want_dst[1])
    assert torch.equal(model_runner.k_cache[:, :, src], keep)
    with pytest.raises(ValueError, match="out of range"):
        model_runner.copy_blocks([(0, model_runner.num_kv_blocks)])


def test_short_prompts_run_as_decode_tokens_with_the_chunked_paths_logits(model_runner, monkeypatch):
    """A prompt chunk of up to prompt_rows_as_decode tokens runs as decode tokens, one query each over the paged
    context (on the CPU set the whole step is one decoder-stack call); its logits are the chunked causal path's.
    A longer chunk keeps the chunked path."""
    kernels = model_runner.kernels
    if not kernels.prompt_rows_as_decode:
        pytest.skip(f"the {kernels.name} kernel set runs every prompt chunk as a chunk")

    def run(label: str, cached: int) -> tuple:
        seqs = [_seq(model_runner, q, name=f"rows-{label}-{i}") for i, q in enumerate(QUESTIONS)]
        # The first prompt's head computed earlier: its chunk attends over cached keys as well as its own.
        _step(model_runner, [(seqs[0], cached)])
        batch, logits = model_runner.forward([ScheduledSequence(s, s.num_tokens - s.num_computed_tokens)
                                              for s in seqs])
        return batch.meta, logits

    rows_meta, as_rows = run("decode", 11)
    assert rows_meta.num_decode == rows_meta.slot_mapping.numel() and not rows_meta.prefills
    model = model_runner.model
    if model.decoder_stack is not None:  # the stack (every token's K and V written before any attends) = layers
        stack, model.decoder_stack = model.decoder_stack, None
        try:
            _, layer_by_layer = run("layers", 11)
        finally:
            model.decoder_stack = stack
        assert torch.allclose(as_rows, layer_by_layer, atol=1e-5, rtol=0)
    monkeypatch.setattr(kernels, "prompt_rows_as_decode", 0)
    chunk_meta, as_chunks = run("chunked", 11)
    assert chunk_meta.num_decode == 0 and len(chunk_meta.prefills) == len(QUESTIONS)
    assert torch.allclose(as_rows, as_chunks, atol=1e-4, rtol=0)
    assert torch.equal(as_rows.argmax(dim=1), as_chunks.argmax(dim=1))
    monkeypatch.setattr(kernels, "prompt_rows_as_decode", 8)  # only the first prompt's rest is that short
    mixed_meta, mixed = run("mixed", _prompt_len(model_runner, QUESTIONS[0]) - 8)
    assert len(mixed_meta.prefills) == len(QUESTIONS) - 1 and mixed_meta.num_decode == 8
    assert torch.allclose(mixed, as_chunks, atol=1e-4, rtol=0)


def _prompt_len(runner, question: str) -> int:
    return len(runner.tokenizer.apply_chat_template([{"role": "user", "content": question}]))


def test_int8_activations_run_the_same_in_the_stack_and_layer_by_layer(model_runner):
    """EngineConfig.int8_activations marks every block-quantized linear; the decoder stack reads the mark from their
    bits, so prompt rows run as decode tokens give the layer-by-layer path's logits exactly, near float32's."""
    model, kernels = model_runner.model, model_runner.kernels
    ops = getattr(kernels, "_kernels", None)
    if model.decoder_stack is None or ops is None or not ops.int8_activations:
        pytest.skip("needs the decoder stack and AVX-512 VNNI")
    linears = [m for m in model.modules() if hasattr(m, "int8_activations")]
    seqs = [_seq(model_runner, q, name=f"int8-{i}") for i, q in enumerate(QUESTIONS)]
    scheduled = [ScheduledSequence(s, s.num_tokens) for s in seqs]
    _, exact = model_runner.forward(scheduled)
    stack = model.decoder_stack
    try:
        for m in linears:
            m.int8_activations = True
        model.enable_decoder_stack(ops)
        _, with_stack = model_runner.forward(scheduled)  # rewrites the same KV slots
        model.decoder_stack = None
        _, layer_by_layer = model_runner.forward(scheduled)
    finally:
        for m in linears:
            m.int8_activations = False
        model.decoder_stack = stack
    assert torch.equal(with_stack, layer_by_layer)
    # Measured here: at most 2.1 against logits up to 33 (mean 0.4); perplexity 1.006x (benchmarks/quant_quality.py).
    assert 0 < (with_stack - exact).abs().max() < 0.1 * exact.abs().max()
