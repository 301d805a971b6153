"""The whole model through the Triton kernel set: on this machine the kernels run on CPU tensors under
Triton's interpreter (slow: each step costs ~25 s on two cores, so one prompt and two tokens: a prefill step
and a decode step, each kernel of the set run in both), and the greedy tokens equal the CPU kernels' path.
Batches of several sequences are the kernels' own tests' business (tests/workers/kernels/triton/)."""
from __future__ import annotations

import pytest

from workers import LLM, SamplingParams
from workers.model.triton_linear import GGUFLinear

pytestmark = pytest.mark.model

CHATS = [[{"role": "user", "content": "What is 2+2?"}]]


def test_smollm2_through_triton_gives_the_cpu_paths_greedy_tokens(model_runner):
    params = SamplingParams(max_tokens=2, temperature=0)
    # The CPU path on the session's runner; no prefix cache, so no block another test wrote is ever read.
    cpu = LLM("smollm2-135m-instruct", runner=model_runner, num_kv_blocks=model_runner.num_kv_blocks,
              enable_prefix_caching=False)
    want = [o.outputs[0].token_ids for o in cpu.chat(CHATS, params)]
    triton = LLM("smollm2-135m-instruct", device="cpu", kernels="triton", num_kv_blocks=16,
                 enable_prefix_caching=False)
    runner = triton.engine.runner
    assert runner.kernels.name == "triton" and runner.k_cache.device.type == "cpu"
    linears = [m for m in runner.model.modules() if isinstance(m, GGUFLinear)]
    assert len(linears) == 4 * 30 + 1  # every layer's q|k|v, o, gate|up, down, and the head, in their blocks
    got = [o.outputs[0].token_ids for o in triton.chat(CHATS, params)]
    assert got == want
    bm = triton.engine.block_manager
    assert bm.num_free_blocks == bm.num_blocks  # nothing leaked
