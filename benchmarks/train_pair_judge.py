"""Fine-tune the semantic cache's pair judge: the packaged MiniLM, cut to its first layers, as a cross-encoder
over the corpus' labelled pairs (benchmarks/data/semantic_cache_eval). Writes the changed tensors (float16)
and what they came from to one safetensors file that gateway/embedding/cross_encoder.py loads.

Trained on every split but the held-out ones: `dev5` picks the verifier's judge thresholds, heldout36 and
heldout37 were scored once each with the shipped weights and `test` is sealed. Both orders of each pair are shown,
so the judge reads a pair either way round. The shipped weights (stop 43) are seed 1 over 6,357 pairs, train34's
360 action swaps and the scored held-out sets heldout32-35 included: 4 layers, 3 epochs, batch 32, about 15
minutes of two cores. Seed 0 of the same data did as well on dev5 and was not shipped: see the corpus README,
"heldout36".

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/train_pair_judge.py --seed 1         # -> the shipped weights
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/train_pair_judge.py --out /tmp/j.safetensors --layers 6
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.semantic_cache_corpus import HELD_OUT, load
from gateway.cache.judge import judged_text
from gateway.embedding.cross_encoder import DEFAULT_WEIGHTS, build_model
from gateway.embedding.embedder import EmbedderConfig

TRAIN_SPLITS = ("dev", "dev2", "dev3", "dev4", "train", "tune33", "heldout32", "heldout33", "heldout34", "heldout35",
                "train34")


def earlier(row: dict, side: str) -> str:
    return "\n".join(m["content"] for m in row.get(f"{side}_context") or [] if m["role"] == "user")


def examples(rows: list[dict]) -> list[tuple[str, str, float]]:
    """(first, second, label) in both orders."""
    out = []
    for r in rows:
        a, b = judged_text(r["a"], earlier(r, "a")), judged_text(r["b"], earlier(r, "b"))
        out += [(a, b, float(r["label"])), (b, a, float(r["label"]))]
    return out


def train(rows: list[dict], *, layers: int, epochs: int, lr: float, batch: int, max_length: int, seed: int,
          threads: int, base: Path):
    from transformers import AutoTokenizer

    torch.manual_seed(seed)
    rng = random.Random(seed)
    torch.set_num_threads(threads)
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    model = build_model(base, layers)
    for p in model.bert.embeddings.parameters():  # the word table stays the packaged model's (not shipped)
        p.requires_grad = False
    data = examples(rows)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(trainable, lr=lr, weight_decay=0.01)
    steps = epochs * math.ceil(len(data) / batch)
    warmup = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min(1.0, (s + 1) / warmup) * max(0.0, (steps - s) / max(1, steps - warmup)))
    loss_fn = torch.nn.BCEWithLogitsLoss()
    started, step = time.perf_counter(), 0
    model.train()
    for _ in range(epochs):
        rng.shuffle(data)
        for i in range(0, len(data), batch):
            chunk = data[i:i + batch]
            enc = tokenizer([c[0] for c in chunk], [c[1] for c in chunk], padding=True, truncation=True,
                            max_length=max_length, return_tensors="pt")
            loss = loss_fn(model(**enc).logits[:, 0], torch.tensor([c[2] for c in chunk]))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trainable, 1.0)
            optimiser.step()
            schedule.step()
            optimiser.zero_grad()
            step += 1
            if step % 50 == 0 or step == steps:
                print(f"step {step}/{steps}  loss {loss.item():.3f}  {time.perf_counter() - started:.0f} s",
                      flush=True)
    return model.eval()


def save(model, out: Path, metadata: dict[str, str]) -> None:
    from safetensors.torch import save_file

    state = {name: p.detach().to(torch.float16).contiguous() for name, p in model.named_parameters()
             if p.requires_grad}
    out.parent.mkdir(parents=True, exist_ok=True)
    save_file(state, str(out), metadata=metadata)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_WEIGHTS)
    parser.add_argument("--splits", nargs="+", default=list(TRAIN_SPLITS))
    parser.add_argument("--files", nargs="*", type=Path, default=[], help="more JSON Lines pair files")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=4e-5)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    if HELD_OUT & set(args.splits):
        parser.error(f"{', '.join(sorted(HELD_OUT))} are held out: never train on them")
    rows = [r for split in args.splits for r in load(split)]
    rows += [json.loads(line) for f in args.files for line in f.read_text().splitlines() if line.strip()]
    digest = hashlib.sha256(json.dumps([[r["a"], r["b"], r["label"]] for r in rows]).encode()).hexdigest()[:16]
    base = EmbedderConfig().model_path
    model = train(rows, layers=args.layers, epochs=args.epochs, lr=args.lr, batch=args.batch,
                  max_length=args.max_length, seed=args.seed, threads=args.threads, base=base)
    save(model, args.out, {
        "layers": str(args.layers), "max_length": str(args.max_length), "base": base.parent.name,
        "splits": ",".join([*args.splits, *(f.name for f in args.files)]), "pairs": str(len(rows)),
        "data_sha256": digest,
        "epochs": str(args.epochs), "lr": str(args.lr), "batch": str(args.batch), "seed": str(args.seed)})
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB): {len(rows)} pairs from {args.splits}")


if __name__ == "__main__":
    main()
