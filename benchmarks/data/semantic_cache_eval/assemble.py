"""Assemble the hand-written semantic-cache corpus into its dev and sealed test splits.

The pairs are written by hand, one kind per file under `_parts/` (kept out of git so the test pairs are
never readable in plain text); this script only parses, validates and splits them. It generates nothing.

Part line formats (fields separated by " | ", `#` starts a comment line):
  single turn:  domain | a | b
  multi-turn:   domain | a_user | a_assistant | a | b_user | b_assistant | b
Split rule: within a kind, the i-th written pair goes to dev when i % 5 is 0 or 2 (40%), else to test.
Appending pairs to a part never moves an earlier pair between splits, and ids are stable
(kind's slot * 200 + i + 1), so the dev split the verifier is tuned on only ever grows.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PARTS = HERE / "_parts"

# Order fixes the id slots: never reorder, only append.
KINDS = [
    "para_lexical", "para_syntactic", "para_register", "para_word_order", "para_typos",
    "para_contractions", "para_multiturn",
    "neg_entity_animals", "neg_entity_cities", "neg_entity_languages", "neg_entity_products",
    "neg_entity_people", "neg_attribute", "neg_time", "neg_number_unit", "neg_negation",
    "neg_comparative", "neg_role_reversal", "neg_scope", "neg_multiturn",
]
MAX_WORDS = 40


def _turns(user: str, assistant: str) -> list[dict]:
    return [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]


def parse_kind(kind: str) -> list[dict]:
    path = PARTS / f"{kind}.txt"
    if not path.exists():
        return []
    pairs = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = [f.strip() for f in line.split(" | ")]
        multi = kind.endswith("multiturn")
        if len(fields) != (7 if multi else 3) or not all(fields):
            raise ValueError(f"{path.name}:{n}: expected {7 if multi else 3} non-empty fields, got {fields}")
        pair = {"a": fields[3] if multi else fields[1], "b": fields[6] if multi else fields[2],
                "label": 1 if kind.startswith("para_") else 0, "kind": kind, "domain": fields[0]}
        if multi:
            pair["a_context"] = _turns(fields[1], fields[2])
            pair["b_context"] = _turns(fields[4], fields[5])
        pairs.append(pair)
    return pairs


def _key(p: dict) -> tuple:
    sides = [(json.dumps(p.get("a_context", [])), p["a"]), (json.dumps(p.get("b_context", [])), p["b"])]
    return tuple(sorted(sides))


def validate(pairs: list[dict]) -> None:
    seen: dict[tuple, str] = {}
    for p in pairs:
        if p["a"] == p["b"] and p.get("a_context") == p.get("b_context"):
            raise ValueError(f"{p['id']}: both sides identical")
        for side in ("a", "b"):
            if len(p[side].split()) > MAX_WORDS:
                raise ValueError(f"{p['id']}: side {side} over {MAX_WORDS} words")
        if not p["domain"].isidentifier() or p["domain"] != p["domain"].lower():
            raise ValueError(f"{p['id']}: bad domain {p['domain']!r}")
        k = _key(p)
        if k in seen:
            raise ValueError(f"{p['id']} duplicates {seen[k]}")
        seen[k] = p["id"]


def build() -> tuple[list[dict], list[dict]]:
    dev, test = [], []
    for slot, kind in enumerate(KINDS):
        for i, p in enumerate(parse_kind(kind)):
            p = {"id": f"sc-{slot * 200 + i + 1:04d}", **p}
            (dev if i % 5 in (0, 2) else test).append(p)
    validate(dev + test)
    return dev, test


def _jsonl(pairs: list[dict]) -> bytes:
    return "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs).encode()


def _gzip(data: bytes) -> bytes:
    buf = io.BytesIO()
    # mtime=0 and no file name: the same pairs always give the same bytes, so the sha256 is reproducible.
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="") as gz:
        gz.write(data)
    return buf.getvalue()


def counts_table(dev: list[dict], test: list[dict]) -> str:
    rows = ["| kind | label | dev | test | total |", "| --- | --- | --- | --- | --- |"]
    for kind in KINDS:
        d = sum(p["kind"] == kind for p in dev)
        t = sum(p["kind"] == kind for p in test)
        rows.append(f"| `{kind}` | {1 if kind.startswith('para_') else 0} | {d} | {t} | {d + t} |")
    rows.append(f"| **all** | | {len(dev)} | {len(test)} | {len(dev) + len(test)} |")
    return "\n".join(rows)


SEALED = """# Sealed test split

`test.jsonl.gz` is the sealed test split of the semantic-cache evaluation corpus.

sha256: {sha}

Authored pair by pair (no slot-filling templates) by an AI assistant (Claude) working as the Tollgate developer
on branch `cachecorpus` (issue 11, item 1), independently of the cache's code, its tuning pairs, its pair-making
script and its tests, none of which were opened while writing.

## Rule

- Score the test split **once per change**, to report its figures. Never score it while tuning thresholds,
  models or guards: tune on `dev.jsonl` only.
- Do not decompress it to read, quote, or copy its pairs anywhere (issues, prompts, fixtures).
- `benchmarks/semantic_cache_corpus.load("test")` refuses to load a file whose sha256 differs from the line above.

## Counts per kind

{table}
"""


def main() -> int:
    if not PARTS.is_dir():
        # The parts live only on the author's machine; without them this would overwrite the corpus with nothing.
        print(f"no {PARTS}: the hand-written parts are not in git; the committed splits are the corpus",
              file=sys.stderr)
        return 1
    dev, test = build()
    (HERE / "dev.jsonl").write_bytes(_jsonl(dev))
    gz = _gzip(_jsonl(test))
    (HERE / "test.jsonl.gz").write_bytes(gz)
    table = counts_table(dev, test)
    (HERE / "SEALED.md").write_text(SEALED.format(sha=hashlib.sha256(gz).hexdigest(), table=table))
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
