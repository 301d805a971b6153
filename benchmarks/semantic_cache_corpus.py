"""The hand-written semantic-cache evaluation corpus: labelled question pairs in a dev and a sealed test split.

`load("dev")`, `load("dev2")`, `load("dev3")` and `load("dev4")` are for tuning; `load("test")` is for reporting,
once per change, and refuses a test file whose sha256 is not the one recorded in SEALED.md (so a silently edited
test split cannot produce figures).
"""
from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parent / "data" / "semantic_cache_eval"
SPLITS = {"dev": "dev.jsonl", "dev2": "dev2.jsonl", "dev3": "dev3.jsonl", "dev4": "dev4.jsonl", "dev5": "dev5.jsonl",
          "train": "train.jsonl", "test": "test.jsonl.gz", "heldout32": "heldout32.jsonl",
          "tune33": "tune33.jsonl", "heldout33": "heldout33.jsonl", "heldout34": "heldout34.jsonl",
          "heldout35": "heldout35.jsonl", "heldout36": "heldout36.jsonl",
          "heldout37": "heldout37.jsonl",
          "train34": "train34.jsonl"}
# Never trained or tuned on: dev5 picks the judge's bar, the newest held-out sets check the shipped judge once,
# test is sealed. An older held-out set joins the training data once it has been scored.
HELD_OUT = frozenset({"dev5", "heldout36", "heldout37", "test"})
_SHA_LINE = re.compile(r"^sha256:\s*([0-9a-f]{64})\s*$", re.MULTILINE)


class SealBroken(RuntimeError):
    """The test split's bytes differ from the sha256 recorded in SEALED.md."""


def sealed_sha256(corpus_dir: Path = CORPUS_DIR) -> str:
    match = _SHA_LINE.search((corpus_dir / "SEALED.md").read_text())
    if match is None:
        raise SealBroken(f"no 'sha256: <hex>' line in {corpus_dir / 'SEALED.md'}")
    return match.group(1)


def _test_bytes(corpus_dir: Path) -> bytes:
    raw = (corpus_dir / SPLITS["test"]).read_bytes()
    actual, expected = hashlib.sha256(raw).hexdigest(), sealed_sha256(corpus_dir)
    if actual != expected:
        raise SealBroken(f"test split sha256 {actual} != sealed {expected}; refusing to score it")
    return gzip.decompress(raw)


def load(split: str, corpus_dir: Path = CORPUS_DIR) -> list[dict]:
    """Pairs of one split: dicts with id, a, b, label, kind, domain (and a_context/b_context if multi-turn)."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {sorted(SPLITS)}")
    data = _test_bytes(corpus_dir) if split == "test" else (corpus_dir / SPLITS[split]).read_bytes()
    return [json.loads(line) for line in data.decode().splitlines() if line.strip()]
