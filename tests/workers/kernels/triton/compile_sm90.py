"""Compile every Triton kernel of workers.kernels.triton for sm_90 (the H200) on a machine without a GPU.

CI runs the kernels only under Triton's interpreter, which is not the compiler: it accepts code the GPU
compiler rejects (dot operand dtypes and layouts, language features an older triton lacks) and knows nothing
of registers or shared memory. This compiles them ahead of time as triton's JIT would on the GPU.

Each launcher is called with meta tensors (not on the CPU, so it picks its GPU tiles, warps, stages and
splits) on the shapes a serving engine hands it, with every kernel swapped for a recorder of its launches.
Each distinct launch is bound by triton's own JIT binder (argument types, alignment and divisibility
specializations, constexprs, options) and compiled for GPUTarget("cuda", 90, 32), a process per core.

Shapes are SmolLM2-135M's, the served model (hidden 576, 9 heads over 3 KV heads of 64, MLP 1536, vocabulary
49152, block size 16), in float32, float16 and bfloat16:
- attention: decode with one split and with the most (16, and their merge), prefill with its largest query
  tile; also with heads of 128 (32 over 8), the other branch of paged.gpu_tiles.
- matmuls (each GGUF format, int8, int4 in the runtime's groups) at the three tiles a launcher picks: a
  batch-1 decode step (BLOCK_M 16, M specialized to 1), the largest decode tile (64 rows through the
  vocabulary head, BLOCK_N 64) and a prefill chunk with its residual add. float32 only at batch 1 unless
  --all: its FMA dots at the larger tiles take 20-40 s a kernel to compile (and spill kilobytes a thread).
- RMSNorm with and without the residual, SiLU-mul and rotary at the model's widths.
Tiles a launcher picks in between (BLOCK_M 32, BLOCK_Q 4 and 8, 2 to 15 splits) are the same code at sizes
these bound.

Prints a line per kernel (constexprs, warps, stages; registers, stack and shared memory from the cubin) and
exits 1 when any kernel fails to compile, needs more shared memory than an sm_90 block may have, or is never
launched by the shapes above. Sets TRITON_INTERPRET=0 before triton is imported."""
from __future__ import annotations

import importlib
import os
import pkgutil
import re
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

# triton.jit reads this once, when triton is imported: it must give JITFunctions, not interpreter stand-ins.
os.environ["TRITON_INTERPRET"] = "0"
sys.path.insert(0, str(Path(__file__).resolve().parents[4]))  # the repository root, for `workers`

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, make_backend
from triton.runtime.jit import JITFunction, create_function_from_signature

import workers.kernels.triton as package
from workers.kernels.triton.decode_attention import paged_decode_attention
from workers.kernels.triton.gguf_matmul import FORMATS, GROUP, gguf_matmul
from workers.kernels.triton.int4_matmul import int4_matmul
from workers.kernels.triton.int8_matmul import int8_matmul
from workers.kernels.triton.prefill_attention import paged_prefill_attention
from workers.kernels.triton.rms_norm import rms_norm
from workers.kernels.triton.rotary_kv import rotary_store_kv
from workers.kernels.triton.silu_mul import silu_mul

TARGET = GPUTarget("cuda", 90, 32)
MAX_SHARED = 227 * 1024  # bytes of shared memory an sm_90 block may opt in to; a kernel needing more cannot launch

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, INTER, VOCAB, BLOCK_SIZE = 576, 9, 3, 64, 1536, 49152, 16  # SmolLM2-135M
SMOLLM2, WIDE_HEADS = (HEADS, KV_HEADS, HEAD_DIM), (32, 8, 128)
# (m, n, k, residual)
DECODE_1 = (1, HIDDEN + 2 * KV_HEADS * HEAD_DIM, HIDDEN, False)  # one sequence's fused q|k|v projection
DECODE_64 = (64, VOCAB, HIDDEN, False)  # 64 sequences through the vocabulary head
PREFILL = (512, HIDDEN, INTER, True)  # a 512-token chunk's down projection, adding the residual
# dtype -> (attention models, matmul shapes)
DEFAULT = {torch.bfloat16: ((SMOLLM2, WIDE_HEADS), (DECODE_1, DECODE_64, PREFILL)),
           torch.float16: ((SMOLLM2, WIDE_HEADS), (DECODE_1, DECODE_64, PREFILL)),
           torch.float32: ((SMOLLM2, WIDE_HEADS), (DECODE_1,))}
EVERYTHING = dict.fromkeys(DEFAULT, ((SMOLLM2, WIDE_HEADS), (DECODE_1, DECODE_64, PREFILL)))


def meta(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.empty(shape, dtype=dtype, device="meta")


def drive(dtype: torch.dtype, models: tuple, matmuls: tuple) -> None:
    """Every launcher in one activation dtype; index-range checks off (they would read the meta tensors)."""
    for heads, kv_heads, head_dim in models:
        caches = [meta(kv_heads, 4096, BLOCK_SIZE, head_dim, dtype=dtype) for _ in range(2)]
        # One sequence over 256 blocks takes 16 splits; 256 sequences of up to 8 blocks take one.
        for n, max_blocks in ((1, 256), (256, 8)):
            paged_decode_attention(meta(n, heads, head_dim, dtype=dtype), *caches,
                                   meta(n, max_blocks, dtype=torch.int32), meta(n, dtype=torch.int32),
                                   head_dim ** -0.5, validate=False)
        seqs = 8
        paged_prefill_attention(meta(2048, heads, head_dim, dtype=dtype), *caches, meta(seqs, 128, dtype=torch.int32),
                                meta(seqs + 1, dtype=torch.int32), meta(seqs, dtype=torch.int32), head_dim ** -0.5,
                                max_query_len=512, validate=False)

    for m, n, k, residual in matmuls:
        x, res = meta(m, k, dtype=dtype), meta(m, n, dtype=dtype) if residual else None
        for qtype, fmt in FORMATS.items():
            gguf_matmul(x, meta(n, k // GROUP * fmt.block_bytes, dtype=torch.uint8), qtype, res)
        int8_matmul(x, meta(n, k, dtype=torch.int8), meta(n), res)
        group = next(g for g in (128, 64, 32) if k % g == 0)  # as workers.model.runtime picks: 576 takes 64
        int4_matmul(x, meta(n, k // 2, dtype=torch.uint8), meta(n, k // group), meta(n, k // group), group, res)

    tokens, width = 512, (HEADS + 2 * KV_HEADS) * HEAD_DIM
    rms_norm(meta(tokens, HIDDEN, dtype=dtype), meta(HIDDEN, dtype=dtype), 1e-5)
    rms_norm(meta(tokens, HIDDEN, dtype=dtype), meta(HIDDEN, dtype=dtype), 1e-5, meta(tokens, HIDDEN, dtype=dtype))
    silu_mul(meta(tokens, 2 * INTER, dtype=dtype))
    cache = meta(KV_HEADS, 4096, BLOCK_SIZE, HEAD_DIM, dtype=dtype)
    rotary_store_kv(meta(tokens, width, dtype=dtype), meta(tokens, HEAD_DIM, dtype=dtype),
                    meta(tokens, HEAD_DIM, dtype=dtype), meta(tokens, dtype=torch.int64), cache,
                    torch.empty_like(cache), HEADS, KV_HEADS, HEAD_DIM, validate=False)


class Recorder:
    """Stands in for a kernel in its launcher's module: kernel[grid](*args, **kwargs) records the launch."""

    def __init__(self, key: tuple[str, str], launches: list):
        self.key, self.launches = key, launches

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.launches.append((self.key, args, kwargs))


def kernels() -> dict[tuple[str, str], JITFunction]:
    """Every `*_kernel` JITFunction the package defines, by (module, name); the jit helpers they inline are
    compiled inside them."""
    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for name, value in vars(module).items():
            if isinstance(value, JITFunction) and name.endswith("_kernel") and value.__module__ == module.__name__:
                found[module.__name__, name] = value
    return found


def specialize(fn: JITFunction, args: tuple, kwargs: dict) -> tuple[dict, dict, dict, dict]:
    """(signature, constexprs, attrs, options) as triton's JIT derives them from a launch's arguments, through the
    JIT's own helpers (internal, the same in triton 3.6 and 3.9: a release that changes them fails here)."""
    backend = make_backend(TARGET)
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    bound, specialization, options = binder(*args, **kwargs)
    options, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound, specialization, options)
    return signature, constexprs, attrs, options.__dict__


def compile_one(job: tuple) -> tuple[bool, str]:
    """Compile one specialization, in a worker process: (ok, its report line)."""
    (module, name), dtype, signature, constexprs, attrs, options = job
    fn = getattr(importlib.import_module(module), name)
    consts = " ".join(f"{fn.arg_names[path[0]]}={value}" for path, value in sorted(constexprs.items()))
    what = f"{name} {dtype}: {consts} warps={options['num_warps']} stages={options['num_stages']}"
    start = time.perf_counter()
    try:
        kernel = triton.compile(ASTSource(fn, signature, constexprs, attrs), target=TARGET, options=options)
    except Exception:
        return False, f"FAIL {what}\n{traceback.format_exc(limit=-4)}"
    shared = kernel.metadata.shared
    fits = shared <= MAX_SHARED
    return fits, (f"{'ok  ' if fits else 'FAIL'} {what} | {resources(kernel.asm['cubin'])} shared={shared}"
                  f"{'' if fits else f' > {MAX_SHARED}'} | {time.perf_counter() - start:.1f}s")


def resources(cubin: bytes) -> str:
    """Registers and stack (local memory: spills) a thread, from cuobjdump's resource usage of the cubin."""
    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        usage = subprocess.run([str(tool), "-res-usage", f.name], capture_output=True, text=True).stdout
    found = dict(re.findall(r"(REG|STACK):(\d+)", usage))
    return f"regs={found.get('REG', '?')} stack={found.get('STACK', '?')}"


def main(plan: dict) -> int:
    started = time.perf_counter()
    every_kernel = kernels()
    launches: list = []
    for module, name in every_kernel:
        setattr(sys.modules[module], name, Recorder((module, name), launches))
    jobs, seen = [], set()
    for dtype, (models, matmuls) in plan.items():
        first = len(launches)
        drive(dtype, models, matmuls)
        for key, args, kwargs in launches[first:]:
            job = (key, str(dtype).removeprefix("torch."), *specialize(every_kernel[key], args, kwargs))
            if repr(job) not in seen:  # launches the JIT would serve from one compiled kernel
                seen.add(repr(job))
                jobs.append(job)
    missed = sorted(set(every_kernel) - {job[0] for job in jobs})
    print(f"triton {triton.__version__}, sm_90: {len(jobs)} distinct kernels from {len(launches)} launches of "
          f"{len(every_kernel)} kernel functions", flush=True)

    failed = 0
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1, mp_context=get_context("spawn")) as pool:
        for ok, line in pool.map(compile_one, jobs):
            failed += not ok
            print(line, flush=True)
    for module, name in missed:
        print(f"FAIL {module}.{name}: no launch above reaches it", flush=True)
    print(f"{len(jobs) - failed} of {len(jobs)} ok, {len(missed)} never launched; "
          f"{time.perf_counter() - started:.0f}s", flush=True)
    return 1 if failed or missed else 0


if __name__ == "__main__":
    sys.exit(main(EVERYTHING if "--all" in sys.argv[1:] else DEFAULT))
