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
    return {"dev": corpus.load("dev"), "dev2": corpus.load("dev2"), "dev3": corpus.load("dev3"),
            "dev4": corpus.load("dev4"), "dev5": corpus.load("dev5"), "train": corpus.load("train"),
            "test": corpus.load("test")}


def _side_key(pair: dict, side: str) -> tuple:
    turns = tuple((t["role"], t["content"]) for t in pair.get(f"{side}_context", []))
    return turns, pair[side]


def _pair_key(pair: dict) -> tuple:
    return tuple(sorted([_side_key(pair, "a"), _side_key(pair, "b")]))


def _turns_ok(turns: list) -> bool:
    return bool(turns) and turns[-1]["role"] == "assistant" and all(
        set(t) == {"role", "content"} and t["role"] in {"user", "assistant"} and bool(t["content"].strip())
        for t in turns)


def _schema_ok(p: dict) -> bool:
    multi = p["kind"].endswith("multiturn")
    return (set(p) == KEYS | ({"a_context", "b_context"} if multi else set()) and p["kind"] in PARA | NEG
            and p["label"] == (1 if p["kind"] in PARA else 0)
            and bool(p["a"].strip() and p["b"].strip() and p["domain"].strip())
            and len(p["a"].split()) <= 40 and len(p["b"].split()) <= 40
            and (not multi or (_turns_ok(p["a_context"]) and _turns_ok(p["b_context"]))))


def test_every_pair_has_the_schema(splits):
    # Each check is a plain bool and the message the pair's id: a failure never prints the sealed pairs.
    for pairs in splits.values():
        for p in pairs:
            ok = _schema_ok(p)
            assert ok, p["id"]


def test_counts_cover_every_kind_in_both_splits(splits):
    # Sizes as plain ints: a failing assert must never print the sealed split's pairs.
    dev, test = splits["dev"], splits["test"]
    n_dev, n_dev2, n_test = len(dev), len(splits["dev2"]), len(test)
    assert n_dev + n_test >= 1200 and n_dev2 >= 390 and len(splits["dev3"]) >= 390
    assert len(splits["dev4"]) >= 250 and len(splits["dev5"]) >= 400 and len(splits["train"]) >= 3500
    for pairs in (dev, splits["dev2"], splits["dev3"], splits["dev4"], splits["dev5"], splits["train"], test):
        assert set(Counter(p["kind"] for p in pairs)) == PARA | NEG
    labels = Counter(p["label"] for p in dev + test)
    assert 0.4 <= labels[1] / (labels[0] + labels[1]) <= 0.6


def test_no_duplicate_ids_or_pairs_and_no_cross_split_overlap(splits):
    everything = [p for pairs in splits.values() for p in pairs]
    n_ids, n_pairs = len({p["id"] for p in everything}), len(everything)
    assert n_ids == n_pairs
    keys = [_pair_key(p) for p in everything]
    n_keys = len(set(keys))
    assert n_keys == n_pairs
    dev_keys = {_pair_key(p) for name, pairs in splits.items() if name != "test" for p in pairs}
    shared = len(dev_keys & {_pair_key(p) for p in splits["test"]})  # a count: never the pairs themselves
    assert shared == 0


def _questions(pairs: list[dict]) -> set[str]:
    return {" ".join(q.split()).casefold() for p in pairs for q in (p["a"], p["b"])}


@pytest.mark.parametrize("split,apart", [("dev3", "test"), ("dev4", "test"), ("dev5", "test"), ("train", "test"),
                                         ("train", "dev5"), ("dev5", "dev"), ("dev5", "dev2"),
                                         ("dev5", "dev3"), ("dev5", "dev4")])
def test_held_out_splits_share_no_question(splits, split, apart):
    """dev5 (the judge's thresholds) and test (sealed) stay apart from what is trained and tuned on."""
    shared = len(_questions(splits[split]) & _questions(splits[apart]))
    assert shared == 0  # a count: never the questions themselves


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
        corpus.load("dev9")
