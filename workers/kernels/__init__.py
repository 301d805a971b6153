"""Kernels the model layers call instead of chains of small PyTorch ops.

cpu_ops.c holds the CPU kernels (fused RMSNorm, SiLU-and-multiply, rotary + KV-cache write, paged decode
attention), cpu_qlinear.c the block-quantized matmul, cpu_stack.c a decode step through every layer in one
parallel region; cpu_build compiles them for this machine on first use; cpu wraps them with typed, checked
calls. A machine without a C compiler runs the PyTorch path instead."""
