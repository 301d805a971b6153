"""Triton kernels for the GPU path, one kernel per file, each with its launcher (grid, block sizes, dtype and
shape checks) beside it; the PyTorch reference each is held to lives in its test. What several share lives
once: common (every launcher), paged (the attention kernels' tile step), matmul (the weight-only matmuls').

On a CUDA device they compile for the GPU. On CPU tensors they run only under Triton's interpreter
(TRITON_INTERPRET=1, set before triton is imported), which is how CI tests every kernel: slow, so the
launchers pick larger tiles there (`common.interpreted`).

KV cache layout, shared with the CPU kernels and the PyTorch path, one layer:
    # [num_kv_heads, num_blocks, block_size, head_dim]
a token's K/V at flat slot block_id * block_size + offset, addressed through block tables."""
