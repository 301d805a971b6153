"""The nearest-centroid task classifier: a fake embedder for the rule, the real MiniLM on the shipped file."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.routing.classifier import ClassifierConfig, Example, TaskClassifier, load_examples

from .fakes import TopicEmbedder

SHIPPED = Path(__file__).resolve().parents[3] / "deploy" / "routing" / "tasks.jsonl"

EXAMPLES = [Example("python function bug", "code"), Example("compile sql code", "code"),
            Example("hello thanks", "chat"), Example("weather dinner trip", "chat"),
            Example("solve equation", "math"), Example("integral derivative sum", "math")]


def test_nearest_centroid_with_a_threshold():
    clf = TaskClassifier.train(TopicEmbedder(), EXAMPLES, threshold=0.5)
    assert clf.labels == ["chat", "code", "math"]
    assert clf.classify("fix this python bug") == "code"  # 2 of 4 words on the code axis: cosine 0.71
    assert clf.classify("weather for my trip") == "chat"
    assert clf.classify("solve it") == "math"
    assert clf.classify("the quarterly revenue report looks fine") is None  # near no centroid: unknown
    scores = clf.scores(TopicEmbedder().embed_one("python"))
    assert scores["code"] == pytest.approx(1.0) and scores["chat"] == pytest.approx(0.0)


def test_labelled_file_errors_name_the_line(tmp_path):
    good = tmp_path / "ok.jsonl"
    good.write_text('{"text": "a", "label": "x"}\n\n{"text": "b", "label": "y"}\n')
    assert load_examples(good) == [Example("a", "x"), Example("b", "y")]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "a", "label": "x"}\n{"text": "", "label": "y"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2"):
        load_examples(bad)
    bad.write_text('{"text": "a", "label": "x"}\nnot json\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: not JSON"):
        load_examples(bad)
    bad.write_text('{"text": "a", "label": "x"}\n')
    with pytest.raises(ValueError, match="at least two labels"):
        load_examples(bad)
    with pytest.raises(ValueError, match="threshold"):
        ClassifierConfig(file=good, threshold=1.5)


def test_the_shipped_file_has_three_classes_of_30_to_60_examples():
    rows = [json.loads(line) for line in SHIPPED.read_text().splitlines() if line.strip()]
    counts = {label: sum(r["label"] == label for r in rows) for label in {r["label"] for r in rows}}
    assert set(counts) == {"code", "chat", "math"} and all(30 <= n <= 60 for n in counts.values())


def test_the_real_embedder_on_the_shipped_file(embedder):
    # Every 4th example trains it (30 embeddings, not 120: what 2 shared cores afford); texts it never saw.
    clf = TaskClassifier.train(embedder, load_examples(SHIPPED)[::4], threshold=0.0)
    assert clf.classify("Write a Rust function that parses a TOML config file.") == "code"
    assert clf.classify("What is a nice place for a picnic this weekend?") == "chat"
    assert clf.classify("Integrate sin(x)^2 from 0 to pi.") == "math"


def test_the_catalogue_names_the_file_beside_itself(tmp_path):
    from gateway.catalogue import CatalogueError, parse_catalogue
    from gateway.routing.factory import classifier_config
    from gateway.settings import Settings

    from .conftest import raw_catalogue

    raw = {**raw_catalogue(), "routing": {"classifier": {"file": "routing/tasks.jsonl", "threshold": 0.4}}}
    settings = Settings(catalogue=tmp_path / "catalogue.yaml")
    config = classifier_config(settings, parse_catalogue(raw))
    assert (config.file, config.threshold) == (tmp_path / "routing" / "tasks.jsonl", 0.4)
    assert classifier_config(settings, parse_catalogue(raw_catalogue())) is None
    with pytest.raises(CatalogueError, match=r"routing.classifier.threshold"):
        parse_catalogue({**raw, "routing": {"classifier": {"file": "x", "threshold": 2}}})
