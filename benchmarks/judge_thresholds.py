"""The pair judge's bar: on splits the judge was not trained on (dev5 picked it; since stop 42 every split
scored before it: dev4, dev5, tune33, heldout32-34), what each bar serves and how many of those are wrong, after
the guards, with the cosine threshold of the cache in front and the judge's cosine floor (min_cosine).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/judge_thresholds.py --split dev5 --split heldout34
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/judge_thresholds.py --split dev5 --min-cosine 0  # no floor
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/judge_thresholds.py --weights /tmp/j.safetensors  # a candidate
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.semantic_cache_corpus import load
from gateway.cache import DEFAULT_THRESHOLD, CacheConfig
from gateway.cache.guards import misspelt_only, same_words
from gateway.cache.judge import DEFAULT_MIN_COSINE, PairJudge
from gateway.embedding.cross_encoder import DEFAULT_WEIGHTS, shared
from gateway.cache.verify import Verifier
from gateway.embedding import Embedder, EmbedderConfig

BARS = (0.5, 0.8, 0.9, 0.95, 0.97, 0.98, 0.99)


def earlier(turns: list[dict] | None) -> str:
    return "\n".join(t["content"] for t in turns or [] if t["role"] == "user")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", action="append", choices=["dev", "dev2", "dev3", "dev4", "dev5", "tune33",
                                                             "heldout32", "heldout33", "heldout34", "heldout35",
                                                             "heldout36"])
    parser.add_argument("--min-cosine", type=float, default=DEFAULT_MIN_COSINE,
                        help="the judge's cosine floor (pairs under it pass only when misspelt only)")
    parser.add_argument("--weights", type=Path, default=DEFAULT_WEIGHTS,
                        help="the judge's weights (train_pair_judge.py --out); the shipped ones by default")
    args = parser.parse_args()
    splits = args.split or ["dev5"]
    rows, embedder = [r for split in splits for r in load(split)], Embedder(EmbedderConfig())
    verifier = Verifier(PairJudge(lambda: shared(args.weights), CacheConfig().judge))
    scored = []  # (label, probability): 1.0 for the same words reordered, None when refused before the judge
    for r in rows:
        a, b = (r["a"], earlier(r.get("a_context"))), (r["b"], earlier(r.get("b_context")))
        x, y = embedder.embed([r["a"], r["b"]])
        cosine = float(x @ y)
        if cosine < DEFAULT_THRESHOLD or verifier.guard_refusal(b[0], a[0], b[1], a[1]):
            scored.append((r["label"], None))
        elif same_words(a[0], b[0]) and same_words(a[1], b[1]):
            scored.append((r["label"], 1.0))
        elif cosine < args.min_cosine and not misspelt_only(b[0], a[0]):
            scored.append((r["label"], None))
        else:
            scored.append((r["label"], verifier.judge.probability(b[0], a[0], b[1], a[1])))
    positives = sum(label for label, _ in scored)
    print(f"{'+'.join(splits)}: {len(rows)} pairs, {positives} paraphrases, cosine floor {args.min_cosine}")
    for bar in BARS:
        served = [label for label, p in scored if p is not None and p >= bar]
        right = sum(served)
        print(f"  bar {bar:.2f}: served {len(served):4d}, wrong {len(served) - right:3d}, precision "
              f"{100 * right / max(1, len(served)):6.2f}%, paraphrases served {100 * right / positives:6.2f}%")


if __name__ == "__main__":
    main()
