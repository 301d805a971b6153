"""The semantic-cache evaluation corpus stays well-formed: schema, counts, no duplicates, no dev/test leak,
and the sealed test split still matches its recorded sha256."""
from __future__ import annotations

import gzip
import hashlib
import shutil
from collections import Counter

import pytest

from benchmarks import semantic_cache_corpus as corpus

PARA = {"para_lexical", "para_syntactic", "para_register", "para_word_order", "para_typos",
        "para_contractions", "para_multiturn"}
NEG = {"neg_entity_animals", "neg_entity_cities", "neg_entity_languages", "neg_entity_products",
       "neg_entity_people", "neg_attribute", "neg_time", "neg_number_unit", "neg_negation",
       "neg_comparative", "neg_role_reversal", "neg_scope", "neg_multiturn"}
KEYS = {"id", "a", "b", "label", "kind", "domain"}


@pytest.fixture(scope="module")
def splits() -> dict[str, list[dict]]:
    return {"dev": corpus.load("dev"), "test": corpus.load("test")}


def _side_key(pair: dict, side: str) -> tuple:
    turns = tuple((t["role"], t["content"]) for t in pair.get(f"{side}_context", []))
    return turns, pair[side]


def _pair_key(pair: dict) -> tuple:
    return tuple(sorted([_side_key(pair, "a"), _side_key(pair, "b")]))


def _check_turns(turns: list) -> None:
    assert turns and turns[-1]["role"] == "assistant"
    for t in turns:
        assert set(t) == {"role", "content"} and t["role"] in {"user", "assistant"} and t["content"].strip()


def test_every_pair_has_the_schema(splits):
    for pairs in splits.values():
        for p in pairs:
            multi = p["kind"].endswith("multiturn")
            assert set(p) == KEYS | ({"a_context", "b_context"} if multi else set()), p["id"]
            assert p["kind"] in PARA | NEG, p["id"]
            assert p["label"] == (1 if p["kind"] in PARA else 0), p["id"]
            assert p["a"].strip() and p["b"].strip() and p["domain"].strip(), p["id"]
            assert len(p["a"].split()) <= 40 and len(p["b"].split()) <= 40, p["id"]
            if multi:
                _check_turns(p["a_context"])
                _check_turns(p["b_context"])


def test_counts_cover_every_kind_in_both_splits(splits):
    dev, test = splits["dev"], splits["test"]
    assert len(dev) + len(test) >= 1200
    for pairs in (dev, test):
        assert set(Counter(p["kind"] for p in pairs)) == PARA | NEG
    labels = Counter(p["label"] for p in dev + test)
    assert 0.4 <= labels[1] / (labels[0] + labels[1]) <= 0.6


def test_no_duplicate_ids_or_pairs_and_no_cross_split_overlap(splits):
    everything = splits["dev"] + splits["test"]
    assert len({p["id"] for p in everything}) == len(everything)
    keys = [_pair_key(p) for p in everything]
    assert len(set(keys)) == len(keys)
    dev_keys = {_pair_key(p) for p in splits["dev"]}
    assert not dev_keys & {_pair_key(p) for p in splits["test"]}


def test_test_split_matches_its_seal():
    raw = (corpus.CORPUS_DIR / "test.jsonl.gz").read_bytes()
    assert hashlib.sha256(raw).hexdigest() == corpus.sealed_sha256()


def test_a_tampered_test_split_is_refused(tmp_path):
    for name in ("SEALED.md", "dev.jsonl"):
        shutil.copy(corpus.CORPUS_DIR / name, tmp_path / name)
    (tmp_path / "test.jsonl.gz").write_bytes(gzip.compress(b'{"id": "x"}\n'))
    with pytest.raises(corpus.SealBroken):
        corpus.load("test", corpus_dir=tmp_path)


def test_an_unknown_split_is_refused():
    with pytest.raises(ValueError):
        corpus.load("train")
