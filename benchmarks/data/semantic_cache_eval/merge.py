"""Merge helper-written JSON Lines files into one split, dropping what would leak between splits.

A pair is dropped when it repeats a pair of the corpus (either orientation), or when one of its questions
(case and spacing folded) is also a question of a split it must stay apart from: the sealed test split
always, and every split named with --apart (a held-out split must share no question with training data).
Only counts are printed, never a pair, so the sealed split stays unread.

    .venv/bin/python benchmarks/data/semantic_cache_eval/merge.py --out train.jsonl --apart dev5 -- t1.jsonl t2.jsonl
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from benchmarks.semantic_cache_corpus import SPLITS, load  # noqa: E402

FIELDS = ("id", "a", "b", "label", "kind", "domain")


def fold(text: str) -> str:
    return " ".join(text.split()).casefold()


def pair_key(p: dict) -> tuple:
    sides = [(json.dumps(p.get("a_context", [])), fold(p["a"])), (json.dumps(p.get("b_context", [])), fold(p["b"]))]
    return tuple(sorted(sides))


def valid(p: dict) -> bool:
    """Fields present, the label the kind implies, contexts on multi-turn kinds, two different sides."""
    if not all(f in p for f in FIELDS) or p["label"] != (1 if str(p["kind"]).startswith("para_") else 0):
        return False
    if str(p["kind"]).endswith("multiturn") and not ("a_context" in p and "b_context" in p):
        return False
    return not (fold(p["a"]) == fold(p["b"]) and p.get("a_context") == p.get("b_context"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, type=Path,
                        help="the split's file (under the corpus folder if relative)")
    parser.add_argument("--apart", nargs="*", default=[], help="splits that must share no question with it")
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args()
    known = {pair_key(p) for split in SPLITS if (HERE / SPLITS[split]).exists() for p in load(split)}
    banned = {fold(p[s]) for split in ["test", *args.apart] for p in load(split) for s in ("a", "b")}
    kept, dropped = [], {"invalid": 0, "repeated pair": 0, "question shared with a held-out split": 0}
    for path in args.files:
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            p = json.loads(line)
            if not valid(p):
                dropped["invalid"] += 1
            elif pair_key(p) in known:
                dropped["repeated pair"] += 1
            elif fold(p["a"]) in banned or fold(p["b"]) in banned:
                dropped["question shared with a held-out split"] += 1
            else:
                known.add(pair_key(p))
                kept.append({**{f: p[f] for f in FIELDS}, **{k: p[k] for k in ("a_context", "b_context") if k in p}})
    out = HERE / args.out if not args.out.is_absolute() else args.out
    out.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in kept))
    print(f"{args.out}: kept {len(kept)}; dropped {dropped}")


if __name__ == "__main__":
    main()
