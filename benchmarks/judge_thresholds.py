"""Choose the pair judge's thresholds (gateway/cache/judge.py): for labelled pairs, the rules' verdict
through the real cache path (judge off) and the judge's probability; then what each veto bar costs and
saves, what each rescue bar serves per refusal kind, and the shipped JudgeConfig's totals. Pairs must be held
out from the judge that scores them: dev5, or a fold of `train` scored by a judge trained without it
(out-of-fold), pooled with `--run` given several times.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/judge_thresholds.py --run dev5
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/judge_thresholds.py --run dev5 \\
        --run fold2.jsonl=judge_a.safetensors --run fold1.jsonl=judge_b.safetensors
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.semantic_cache_eval import load_pairs, run_pairs, wilson_lower  # noqa: E402
from benchmarks.train_pair_judge import earlier  # noqa: E402
from gateway.cache import DEFAULT_THRESHOLD, CacheConfig, SemanticCache, TenantCachePolicy  # noqa: E402
from gateway.cache.judge import JudgeConfig, judged_text, refusal_kind  # noqa: E402
from gateway.embedding import Embedder, EmbedderConfig  # noqa: E402
from gateway.embedding.cross_encoder import DEFAULT_WEIGHTS, CrossEncoder, CrossEncoderConfig  # noqa: E402

VETOES = (0.05, 0.2, 0.5, 0.8)
RESCUES = (0.9, 0.95, 0.98, 0.99, 0.995)


def kind(reason: str | None) -> str:
    """The refusal's kind as RESCUE keys it (the cache reports refusals as "guard:<reason>"); "" if served."""
    return refusal_kind(reason.removeprefix("guard:")) if reason else ""


def score(cache: SemanticCache, rows: list[dict], weights: Path) -> dict[str, np.ndarray]:
    """Per pair: label, served by the rules, the rules' refusal kind, the judge's probability."""
    policy = TenantCachePolicy(threshold=DEFAULT_THRESHOLD, max_entries=10, ttl_s=0)
    verdicts = run_pairs(cache, rows, policy)
    judge = CrossEncoder(CrossEncoderConfig(weights=weights))
    p = judge.probabilities([(judged_text(r["b"], earlier(r, "b")), judged_text(r["a"], earlier(r, "a")))
                             for r in rows])
    return {"label": np.array([r["label"] for r in rows], dtype=bool),
            "served": np.array([v["served"] for v in verdicts]),
            "kind": np.array([kind(v["reason"]) for v in verdicts]), "p": p}


def accepted(d: dict[str, np.ndarray], config: JudgeConfig) -> np.ndarray:
    """What the cache serves under `config` (the budget aside: one candidate per pair here)."""
    bars = np.array([config.rescue.get(k, np.inf) for k in d["kind"]])
    return (d["served"] & (d["p"] >= config.veto)) | (~d["served"] & (d["p"] >= bars))


def report(name: str, d: dict[str, np.ndarray], config: JudgeConfig) -> None:
    y, ok = d["label"], accepted(d, config)
    right, wrong = int((ok & y).sum()), int((ok & ~y).sum())
    rules_right, rules_wrong = int((d["served"] & y).sum()), int((d["served"] & ~y).sum())
    print(f"  {name:<28} rules alone: {rules_right:5d} served ({rules_right / y.sum():6.1%}), {rules_wrong:3d} wrong"
          f"  | with the judge: {right:5d} ({right / y.sum():6.1%}), {wrong:3d} wrong, precision "
          f"{right / max(1, right + wrong):.2%} (lower {wilson_lower(right, right + wrong):.2%})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", action="append", required=True,
                        help="SPLIT or FILE.jsonl, optionally =WEIGHTS (default: the shipped judge)")
    parser.add_argument("--save", type=Path, help="write each pair's verdicts to this .npz")
    args = parser.parse_args()
    embedder = Embedder(EmbedderConfig())
    cache = SemanticCache(embedder, CacheConfig(judge=JudgeConfig(enabled=False)))
    cache.warm()
    config = JudgeConfig()
    runs = []
    for run in args.run:
        source, _, weights = run.partition("=")
        rows = load_pairs(None, source) if source.endswith(".jsonl") else load_pairs(source, None)
        runs.append((source, score(cache, rows, Path(weights) if weights else DEFAULT_WEIGHTS)))
        print(f"{source}: {len(rows)} pairs, judged by {weights or DEFAULT_WEIGHTS.name}")
    d = {key: np.concatenate([r[key] for _, r in runs]) for key in runs[0][1]}
    if args.save:
        np.savez(args.save, **d)
    y, served, p = d["label"], d["served"], d["p"]
    print(f"{len(y)} pairs ({int(y.sum())} paraphrases)")
    print("VETO: pairs the rules serve, refused below the bar")
    for veto in VETOES:
        print(f"  < {veto:4.2f}: paraphrases lost {int((served & y & (p < veto)).sum()):4d}, wrong hits removed "
              f"{int((served & ~y & (p < veto)).sum()):3d} of {int((served & ~y).sum())}")
    print("RESCUE: pairs the rules refuse, per refusal kind: paraphrases / negatives at or above each bar")
    for k in sorted(set(d["kind"][~served]) - {""}, key=lambda k: -int((d["kind"] == k).sum())):
        m = ~served & (d["kind"] == k)
        cells = "  ".join(f">={t}: {int((m & y & (p >= t)).sum()):3d}/{int((m & ~y & (p >= t)).sum()):<3d}"
                          for t in RESCUES)
        shipped = config.rescue.get(k)
        print(f"  {k:<22} {int((m & y).sum()):4d}/{int((m & ~y).sum()):<4d} {cells}"
              f"   shipped bar: {shipped if shipped is not None else 'never'}")
    print(f"SHIPPED (veto {config.veto}, rescue {config.rescue}):")
    for source, r in runs:
        report(source, r, config)
    if len(runs) > 1:
        report("all", d, config)


if __name__ == "__main__":
    main()
