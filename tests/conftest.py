"""Suite-wide set-up that must happen before any test module imports its code."""
from __future__ import annotations

import os

# Triton kernels run on CPU tensors only under its interpreter, and triton.jit picks the interpreter when
# the kernel's module is imported: set it before anything imports workers.kernels.triton. On a machine
# with a GPU, set TRITON_INTERPRET=0 to test the compiled kernels instead.
os.environ.setdefault("TRITON_INTERPRET", "1")
