"""The GPU path, checked and measured in one run on a GPU machine (about 5 minutes on one H200).

    python3 benchmarks/gpu_check.py                 # on a CUDA machine: compiled Triton kernels
    python3 benchmarks/gpu_check.py --cpu           # here: the same checks, tiny shapes, Triton's interpreter

Needs only PyTorch, Triton and transformers beside this checkout (GPU hosts often reach no package index):
nothing is installed and nothing is downloaded.

1. kernels: every Triton kernel against a plain PyTorch reference on the device (float32 and bfloat16);
2. model: greedy tokens of our engine (kernels="triton") equal transformers' on the same device in float32.
   The real SmolLM2 GGUF is used where it and the gguf package are installed; otherwise (GPU hosts) a Llama
   with SmolLM2-135M's exact configuration and seeded random weights, saved as a Hugging Face folder that both
   our engine and transformers' LlamaForCausalLM load;
3. throughput: the 32-request workload of benchmarks/engine_throughput.py (outputs uniform 16..256 tokens,
   greedy, EOS ignored) through the engine, against transformers' static batches of 8, same GPU, same dtype;
4. bandwidth: paged decode attention and the quantized matmuls as a fraction of the device's memory bandwidth,
   measured by a device-to-device copy in the same run (and of the datasheet peak for known GPUs).

Prints one line per figure and exits non-zero when a check fails."""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# Datasheet memory bandwidth (bytes/s) by device name fragment.
PEAK_BANDWIDTH = {"H200": 4.8e12, "H100 SXM": 3.35e12, "H100 NVL": 3.9e12, "H100 PCIe": 2.0e12,
                  "A100-SXM4-80GB": 2.039e12, "A100-SXM4-40GB": 1.555e12, "L40S": 0.864e12}
SMOLLM2_135M = dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                    num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=8192,
                    rope_theta=100000.0, rms_norm_eps=1e-5, tie_word_embeddings=True)
TINY = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=256, rope_theta=10000.0, rms_norm_eps=1e-5,
            tie_word_embeddings=True)


class Report:
    def __init__(self) -> None:
        self.rows: list[dict] = []
        self.failed: list[str] = []

    def check(self, name: str, ok: bool, detail: str) -> None:
        self.rows.append({"check": name, "ok": ok, "detail": detail})
        if not ok:
            self.failed.append(name)
        print(f"{'PASS' if ok else 'FAIL'}  {name:44s} {detail}", flush=True)

    def figure(self, name: str, value: str, **extra) -> None:
        self.rows.append({"figure": name, "value": value, **extra})
        print(f"      {name:44s} {value}", flush=True)


# ---- 1. kernels ------------------------------------------------------------------------------

def _close(got, want, dtype) -> tuple[bool, float]:
    import torch

    err = float((got.float() - want.float()).abs().max()) / max(1e-6, float(want.float().abs().max()))
    return err <= (2e-4 if dtype == torch.float32 else 3e-2), err


def _q4_raw(rows: int, cols: int, with_min: bool, gen):
    """Random GGUF Q4_0 / Q4_1 bytes (fp16 d [, fp16 m], 16 bytes of nibbles per 32 weights), built here so the
    check needs no gguf package; their values come from our block decoder, which the tests hold to gguf's."""
    import numpy as np

    groups = cols // 32
    d = (gen.standard_normal((rows, groups)) * 0.02).astype(np.float16).view(np.uint8).reshape(rows, groups, 2)
    parts = [d]
    if with_min:
        m = (gen.standard_normal((rows, groups)) * 0.05).astype(np.float16).view(np.uint8).reshape(rows, groups, 2)
        parts.append(m)
    parts.append(gen.integers(0, 256, (rows, groups, 16), dtype=np.uint8))
    return np.ascontiguousarray(np.concatenate(parts, axis=2).reshape(rows, -1))


def check_kernels(report: Report, device: str, tiny: bool) -> None:
    import numpy as np
    import torch
    import torch.nn.functional as F

    from workers.kernels.triton.decode_attention import paged_decode_attention
    from workers.kernels.triton.gguf_matmul import gguf_matmul
    from workers.kernels.triton.int4_matmul import int4_matmul
    from workers.kernels.triton.int8_matmul import int8_matmul
    from workers.kernels.triton.prefill_attention import paged_prefill_attention
    from workers.kernels.triton.rms_norm import rms_norm
    from workers.kernels.triton.rotary_kv import rotary_store_kv
    from workers.kernels.triton.silu_mul import silu_mul
    from workers.model import block_quant
    from workers.model.layers import apply_rotary
    from workers.model.quantize import quantize_gguf_q8_0, quantize_int4, quantize_int8

    g = torch.Generator().manual_seed(0)
    dtypes = [torch.float32] if tiny else [torch.float32, torch.bfloat16]
    rows, hidden, inter = (3, 96, 64) if tiny else (37, 576, 1536)
    heads, kv_heads, dim, bs = (4, 2, 32, 4) if tiny else (9, 3, 64, 16)
    for dt in dtypes:
        tag = str(dt).removeprefix("torch.")
        x = torch.randn(rows, hidden, generator=g).to(device, dt)
        w = torch.randn(hidden, generator=g).to(device, dt)
        ok, err = _close(rms_norm(x, w, 1e-5), F.rms_norm(x.float(), (hidden,), w.float(), 1e-5), dt)
        report.check(f"rms_norm {tag}", ok, f"rel err {err:.1e}")
        res = torch.randn(rows, hidden, generator=g).to(device, dt)
        out, _h = rms_norm(x, w, 1e-5, residual=res)
        ok, err = _close(out, F.rms_norm((x.float() + res.float()).to(dt).float(), (hidden,), w.float(), 1e-5), dt)
        report.check(f"rms_norm + residual {tag}", ok, f"rel err {err:.1e}")
        gu = torch.randn(rows, 2 * inter, generator=g).to(device, dt)
        gate, up = gu.float().chunk(2, dim=1)
        ok, err = _close(silu_mul(gu), F.silu(gate) * up, dt)
        report.check(f"silu_mul {tag}", ok, f"rel err {err:.1e}")

        # rotary + KV write into scattered slots
        blocks = 8 if tiny else 64
        qkv = torch.randn(rows, (heads + 2 * kv_heads) * dim, generator=g).to(device, dt)
        pos = torch.randint(0, 200, (rows,), generator=g)
        inv = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
        ang = torch.outer(pos.float(), inv)
        cos, sin = torch.cat([ang, ang], 1).cos().to(device, dt), torch.cat([ang, ang], 1).sin().to(device, dt)
        slots = torch.randperm(blocks * bs, generator=g)[:rows].to(device)
        kc = torch.zeros(kv_heads, blocks, bs, dim, device=device, dtype=dt)
        vc = torch.zeros_like(kc)
        want = qkv.float().clone()
        qk = want[:, :(heads + kv_heads) * dim].view(rows, heads + kv_heads, dim)
        want[:, :(heads + kv_heads) * dim] = apply_rotary(qk, cos.float()[:, None],
                                                          sin.float()[:, None]).reshape(rows, -1)
        rotary_store_kv(qkv, cos, sin, slots, kc, vc, heads, kv_heads, dim)
        k_want = want[:, heads * dim:(heads + kv_heads) * dim].view(rows, kv_heads, dim).transpose(0, 1)
        ok1, err1 = _close(qkv, want, dt)
        ok2, err2 = _close(kc.view(kv_heads, -1, dim)[:, slots], k_want, dt)
        report.check(f"rotary_store_kv {tag}", ok1 and ok2, f"rel err {max(err1, err2):.1e}")

        # paged attention: scattered blocks, GQA, contexts crossing blocks
        n, ctx = (2, 11) if tiny else (8, 1000)
        lens = torch.tensor([ctx - 3 * i for i in range(n)])
        per = -(-ctx // bs)
        kc = torch.randn(kv_heads, n * per + 3, bs, dim, generator=g).to(device, dt)
        vc = torch.randn_like(kc)
        tables = torch.randperm(n * per + 3, generator=g)[:n * per].view(n, per).to(device)
        q = torch.randn(n, heads, dim, generator=g).to(device, dt)
        scale = dim ** -0.5

        def context(i: int, length: int):
            idx = tables[i]
            k = kc[:, idx].reshape(kv_heads, -1, dim)[:, :length].float()
            v = vc[:, idx].reshape(kv_heads, -1, dim)[:, :length].float()
            return k.repeat_interleave(heads // kv_heads, 0), v.repeat_interleave(heads // kv_heads, 0)

        want = torch.stack([
            torch.softmax(torch.einsum("hd,hkd->hk", q[i].float(), context(i, int(lens[i]))[0]) * scale, -1)
            .unsqueeze(1).bmm(context(i, int(lens[i]))[1]).squeeze(1) for i in range(n)])
        got = paged_decode_attention(q, kc, vc, tables, lens.to(device), scale)
        ok, err = _close(got, want, dt)
        report.check(f"paged decode attention {tag}", ok, f"rel err {err:.1e} (n={n}, context {ctx})")

        new = (5, 3) if tiny else (77, 16)
        qs = torch.tensor([0, new[0], new[0] + new[1]])
        q = torch.randn(sum(new), heads, dim, generator=g).to(device, dt)
        plens = lens[:2]
        outs = []
        for i, m in enumerate(new):
            k, v = context(i, int(plens[i]))
            qi = q[int(qs[i]):int(qs[i + 1])].float().transpose(0, 1)  # [H, m, D]
            start = int(plens[i]) - m
            mask = torch.arange(int(plens[i]))[None, :] <= torch.arange(start, int(plens[i]))[:, None]
            outs.append(F.scaled_dot_product_attention(qi, k, v, attn_mask=mask.to(device), scale=scale)
                        .transpose(0, 1))
        got = paged_prefill_attention(q, kc, vc, tables[:2], qs.to(device), plens.to(device), scale,
                                      max_query_len=max(new))
        ok, err = _close(got, torch.cat(outs), dt)
        report.check(f"paged prefill attention {tag}", ok, f"rel err {err:.1e} (chunks {new} after cached prefixes)")

        # quantized matmuls
        m_rows = (2, 5) if tiny else (1, 16, 300)
        n_out, k_in = (96, 128) if tiny else (1536, 576)
        npg = np.random.default_rng(0)
        weights = {
            "gguf Q8_0": quantize_gguf_q8_0(torch.randn(n_out, k_in, generator=g) * 0.02).parts[0],
            "gguf Q4_0": type("P", (), {"data": _q4_raw(n_out, k_in, False, npg), "qtype": "Q4_0"}),
            "gguf Q4_1": type("P", (), {"data": _q4_raw(n_out, k_in, True, npg), "qtype": "Q4_1"}),
        }
        for name, part in weights.items():
            dense = block_quant.dequantize(block_quant.decode(part.data, part.qtype, (n_out, k_in))).to(device)
            raw = torch.from_numpy(part.data).to(device)
            errs = []
            for m in m_rows:
                xm = torch.randn(m, k_in, generator=g).to(device, dt)
                errs.append(_close(gguf_matmul(xm, raw, part.qtype), xm.float() @ dense.to(dt).float().T, dt))
            report.check(f"{name} matmul {tag}", all(o for o, _ in errs), f"rel err {max(e for _, e in errs):.1e}")
        # SmolLM2's hidden size (576) splits into groups of 64, not 128: take the largest group that divides it.
        group = 128 if k_in % 128 == 0 else 64
        w8 = quantize_int8(torch.randn(n_out, k_in, generator=g))
        w4 = quantize_int4(torch.randn(n_out, k_in, generator=g), group_size=group)
        for name, fn, wq in (("int8 W8A16", lambda xm: int8_matmul(xm, w8.q.to(device), w8.scale.to(device)), w8),
                             (f"int4 W4A16 g={group}", lambda xm: int4_matmul(xm, w4.q.to(device), w4.scale.to(device),
                                                                         w4.mins.to(device), w4.group_size), w4)):
            errs = []
            for m in m_rows:
                xm = torch.randn(m, k_in, generator=g).to(device, dt)
                errs.append(_close(fn(xm), xm.float() @ wq.dequantize().to(device, dt).float().T, dt))
            report.check(f"{name} matmul {tag}", all(o for o, _ in errs), f"rel err {max(e for _, e in errs):.1e}")


# ---- 2. model: greedy tokens against transformers --------------------------------------------

def synthetic_folder(config: dict, seed: int, dtype) -> tuple[Path, object]:
    """A Llama of `config` with seeded random weights as a Hugging Face folder, plus a tokenizer whose tokens are
    just ids (prompts are given as token ids); returns (folder, transformers model)."""
    import torch
    from tokenizers import Tokenizer, models
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    hf = LlamaForCausalLM(LlamaConfig(**config, initializer_range=0.05)).eval().to(dtype)
    folder = Path(tempfile.mkdtemp(prefix="tollgate-gpu-check-"))
    hf.save_pretrained(folder, safe_serialization=True)
    vocab = {f"<t{i}>": i for i in range(config["vocab_size"])}
    Tokenizer(models.WordLevel(vocab=vocab, unk_token="<t0>")).save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<t0>"}))
    return folder, hf


def real_model_available() -> bool:
    try:
        import gguf  # noqa: F401

        from workers.model.registry import CATALOGUE
        CATALOGUE["smollm2-135m-instruct"].path()
        return True
    except (ImportError, FileNotFoundError):
        return False


def check_model(report: Report, device: str, tiny: bool, seed: int) -> tuple[object, list]:
    import torch

    from workers import LLM, SamplingParams

    gen = random.Random(seed)
    if real_model_available() and not tiny:
        from transformers import AutoModelForCausalLM

        from workers.model.registry import CATALOGUE

        path = CATALOGUE["smollm2-135m-instruct"].path()
        hf = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
        model, source, vocab = "smollm2-135m-instruct", "the real SmolLM2 GGUF", 49152
    else:
        config = TINY if tiny else SMOLLM2_135M
        folder, hf = synthetic_folder(config, seed, torch.float32)
        model, vocab = str(folder), config["vocab_size"]
        source = ("a tiny" if tiny else "SmolLM2-135M's") + " Llama, seeded random weights"
    hf = hf.to(device).eval()
    lengths = [5, 9] if tiny else [7, 19, 40, 64, 100, 150]
    prompts = [[gen.randrange(1, vocab) for _ in range(n)] for n in lengths]
    new = 4 if tiny else 24
    llm = LLM(model, device=device, kernels="triton", dtype="float32", num_kv_blocks=64 if tiny else 2048,
              enable_prefix_caching=False, max_num_seqs=8)
    ours = [o.outputs[0].token_ids for o in
            llm.generate(prompts, SamplingParams(max_tokens=new, temperature=0, ignore_eos=True))]
    theirs = []
    with torch.inference_mode():
        for p in prompts:
            ids = torch.tensor([p], device=device)
            out = hf.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                              min_new_tokens=new, do_sample=False, pad_token_id=0)
            theirs.append(out[0, len(p):].tolist())
    same = sum(a == b for a, b in zip(ours, theirs))
    detail = (f"{same}/{len(prompts)} prompts x {new} tokens identical "
              f"({source}, float32, {llm.engine.runner.kernels.describe()})")
    if same != len(prompts):
        i = next(i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b)
        detail += f"; first differs at prompt {i}: ours {ours[i][:8]} vs {theirs[i][:8]}"
    report.check("greedy tokens == transformers", same == len(prompts), detail)
    del llm, hf
    _release(device)
    return model, prompts


def _release(device: str) -> None:
    """Give a dropped engine's KV cache back to the device before the next one sizes its own."""
    import gc

    import torch

    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()


# ---- 3. throughput ---------------------------------------------------------------------------

def bench_throughput(report: Report, device: str, tiny: bool, seed: int) -> None:
    import torch

    from engine_throughput import bench_engine, bench_hf_static
    from workers import LLM

    config = TINY if tiny else SMOLLM2_135M
    dtype = torch.float32 if tiny else torch.bfloat16
    folder, hf = synthetic_folder(config, seed + 1, dtype)
    hf = hf.to(device)
    rng = random.Random(seed)
    n, lo, hi = (4, 2, 6) if tiny else (32, 16, 256)
    # Prompts the size of the workload's chat-templated questions (25-45 tokens), outputs uniform lo..hi.
    requests = [([rng.randrange(1, config["vocab_size"]) for _ in range(rng.randint(25, 45))], rng.randint(lo, hi))
                for _ in range(n)]
    tokens = sum(t for _, t in requests)
    name = str(dtype).removeprefix("torch.")
    # 0.4 of the device each: the KV cache is sized from what is free, and two engines load one after the other.
    sizes = {"num_kv_blocks": 256} if tiny else {"gpu_memory_utilization": 0.4}
    llm = LLM(str(folder), device=device, kernels="triton", dtype=name, max_num_seqs=64,
              max_num_batched_tokens=4096, **sizes)
    bench_engine(llm, requests[:2])  # warm-up
    engine = [bench_engine(llm, requests) for _ in range(1 if tiny else 3)]
    graphs = llm.engine.runner.graphs is not None
    del llm
    _release(device)
    eager = None
    if not tiny:
        eager_llm = LLM(str(folder), device=device, kernels="triton", dtype=name, max_num_seqs=64,
                        max_num_batched_tokens=4096, cuda_graphs=False, **sizes)
        bench_engine(eager_llm, requests[:2])
        eager = bench_engine(eager_llm, requests)
        del eager_llm
        _release(device)
    with torch.inference_mode():
        bench_hf_static(hf, requests[:8], 0, 8)  # warm-up
        hf_tps = bench_hf_static(hf, requests, 0, 8)
    med = statistics.median(engine)
    report.figure("engine throughput", f"{med:9.1f} tok/s (median of {len(engine)}; {n} requests, {tokens} tokens, "
                  f"{name}, CUDA graphs {'on' if graphs else 'off'})", tok_s=med)
    if eager is not None:
        report.figure("engine throughput, CUDA graphs off", f"{eager:9.1f} tok/s ({med / eager:.2f}x with graphs)",
                      tok_s=eager)
    report.figure("transformers static batches of 8", f"{hf_tps:9.1f} tok/s   engine / transformers = "
                  f"{med / hf_tps:.2f}x", tok_s=hf_tps, ratio=med / hf_tps)


# ---- 4. bandwidth ----------------------------------------------------------------------------

def _time_cuda(fn, reps: int = 20) -> float:
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    return statistics.median(times)


def bench_bandwidth(report: Report, device: str) -> None:
    import torch

    from workers.kernels.triton.decode_attention import paged_decode_attention
    from workers.kernels.triton.gguf_matmul import gguf_matmul
    from workers.kernels.triton.int4_matmul import int4_matmul
    from workers.kernels.triton.int8_matmul import int8_matmul
    from workers.model.quantize import quantize_gguf_q8_0, quantize_int4, quantize_int8

    name = torch.cuda.get_device_name()
    src = torch.empty(2**30, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    copy_bw = 2 * src.numel() / _time_cuda(lambda: dst.copy_(src))  # noqa: F821 (timed before the del below)
    peak = next((v for k, v in PEAK_BANDWIDTH.items() if k in name), None)
    del src, dst
    report.figure("device", f"{name}; copy {copy_bw / 1e12:.2f} TB/s (read + write)"
                  + (f", datasheet {peak / 1e12:.2f} TB/s" if peak else ""), copy_bytes_s=copy_bw, peak=peak)

    def share(bytes_moved: float, seconds: float) -> str:
        bw = bytes_moved / seconds
        return (f"{bw / 1e12:.2f} TB/s = {bw / copy_bw:.0%} of copy"
                + (f", {bw / peak:.0%} of datasheet" if peak else ""))

    g = torch.Generator(device=device).manual_seed(0)
    for n, ctx in ((64, 4096), (8, 32768)):
        kv_heads, heads, dim, bs = 8, 32, 128, 16
        per = ctx // bs
        kc = torch.randn(kv_heads, n * per, bs, dim, device=device, dtype=torch.bfloat16, generator=g)
        vc = torch.randn_like(kc)
        tables = torch.randperm(n * per, device=device, generator=g).view(n, per)
        lens = torch.full((n,), ctx, device=device)
        q = torch.randn(n, heads, dim, device=device, dtype=torch.bfloat16, generator=g)
        out = torch.empty_like(q)
        t = _time_cuda(lambda: paged_decode_attention(q, kc, vc, tables, lens, dim ** -0.5, out,  # noqa: F821
                                                      validate=False))  # (timed before the del below)
        report.figure(f"decode attention bf16 n={n} ctx={ctx}", f"{t * 1e6:8.1f} us  " + share(2 * kc.numel() * 2, t))
        del kc, vc
    k_in = n_out = 8192
    w = torch.randn(n_out, k_in) * 0.02
    q8 = quantize_gguf_q8_0(w).parts[0]
    i8, i4 = quantize_int8(w), quantize_int4(w)
    raw = torch.from_numpy(q8.data).to(device)
    q8i, s8 = i8.q.to(device), i8.scale.to(device)
    q4, s4, m4 = i4.q.to(device), i4.scale.to(device), i4.mins.to(device)
    for m in (1, 16):
        x = torch.randn(m, k_in, device=device, dtype=torch.bfloat16)
        for label, fn, nbytes in (
                ("gguf Q8_0", lambda: gguf_matmul(x, raw, "Q8_0"), raw.numel()),
                ("int8 W8A16", lambda: int8_matmul(x, q8i, s8), q8i.numel() + 4 * s8.numel()),
                ("int4 W4A16", lambda: int4_matmul(x, q4, s4, m4, 128), q4.numel() + 8 * s4.numel())):
            t = _time_cuda(fn)
            report.figure(f"{label} matmul M={m} {n_out}x{k_in}", f"{t * 1e6:8.1f} us  " + share(nbytes, t))
        dense = w.to(device, torch.bfloat16)
        t = _time_cuda(lambda: x @ dense.T)
        report.figure(f"bf16 cuBLAS M={m} (baseline)", f"{t * 1e6:8.1f} us  " + share(dense.numel() * 2, t))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cpu", action="store_true", help="tiny shapes on CPU tensors under Triton's interpreter")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip", nargs="*", default=[], choices=["kernels", "model", "throughput", "bandwidth"])
    ap.add_argument("--json", type=Path, help="also write every row here")
    args = ap.parse_args()
    if args.cpu:
        os.environ["TRITON_INTERPRET"] = "1"  # before anything imports triton
    import torch

    device = "cpu" if args.cpu else "cuda"
    if not args.cpu and not torch.cuda.is_available():
        print("no CUDA device: run with --cpu for the interpreter check", file=sys.stderr)
        return 2
    report = Report()
    started = time.perf_counter()
    import triton

    print(f"torch {torch.__version__}, triton {triton.__version__}, device {device}"
          + (f" ({torch.cuda.get_device_name()})" if device == "cuda" else " (Triton interpreter)"), flush=True)
    sections = [("kernels", lambda: check_kernels(report, device, args.cpu)),
                ("model", lambda: check_model(report, device, args.cpu, args.seed)),
                ("throughput", lambda: bench_throughput(report, device, args.cpu, args.seed))]
    if not args.cpu:
        sections.append(("bandwidth", lambda: bench_bandwidth(report, device)))
    for name, run in sections:
        if name in args.skip:
            continue
        print(f"-- {name} ({time.perf_counter() - started:.0f} s)", flush=True)
        try:
            run()
        except Exception as exc:  # one broken section must not hide the others' figures
            import traceback

            traceback.print_exc()
            report.check(f"{name} section ran", False, f"{type(exc).__name__}: {exc}")
    print(f"-- done in {time.perf_counter() - started:.0f} s: "
          f"{'all checks passed' if not report.failed else 'FAILED: ' + ', '.join(report.failed)}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(report.rows, indent=1))
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
