"""Kernel sets: the ops a model's layers call (norms, SiLU-and-multiply, rotary + KV writes, paged attention)
and the module each linear weight runs as, one implementation per backend:

    torch   plain PyTorch, any device: the reference the others are held to
    cpu     the compiled C kernels (workers/kernels/cpu_*.c), float32 on the CPU
    triton  the Triton kernels (workers/kernels/triton), on CUDA (or CPU tensors under TRITON_INTERPRET=1)

The engine picks one set once, by device and EngineConfig.kernels (registry.select); layers never ask which
device they are on."""
