"""The task classifier: nearest centroid over the sentence embedder's unit vectors.

Trained once at start-up from a small labelled JSON-lines file (`{"text": ..., "label": ...}` per line) that
the catalogue names (routing.classifier.file). A request's class is the label whose centroid is most similar
(cosine) to its text; below `threshold` it is None ("unknown"), and rules on task do not match it."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np


class TextEmbedder(Protocol):
    def embed(self, texts: list[str]) -> np.ndarray: ...  # [len(texts), dim], unit rows

    def embed_one(self, text: str) -> np.ndarray: ...  # [dim]


@dataclass(frozen=True, slots=True)
class Example:
    text: str
    label: str


@dataclass(slots=True)
class ClassifierConfig:
    file: Path
    threshold: float = 0.3  # cosine to the nearest centroid below which the class is unknown

    def __post_init__(self) -> None:
        self.file = Path(self.file)
        if not -1.0 <= self.threshold <= 1.0:
            raise ValueError(f"threshold must be in [-1, 1], got {self.threshold}")


def load_examples(path: Path) -> list[Example]:
    """The labelled lines; ValueError naming the line for anything else (blank lines are skipped)."""
    out = []
    for n, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{n}: not JSON ({e.msg})") from None
        if not isinstance(row, dict) or not isinstance(row.get("text"), str) or not row["text"].strip() \
                or not isinstance(row.get("label"), str) or not row["label"]:
            raise ValueError(f"{path}:{n}: want {{\"text\": <non-empty string>, \"label\": <name>}}")
        out.append(Example(row["text"], row["label"]))
    if len({e.label for e in out}) < 2:
        raise ValueError(f"{path}: a classifier needs examples of at least two labels")
    return out


def labels_of(examples: list[Example]) -> list[str]:
    return sorted({e.label for e in examples})


class TaskClassifier:
    def __init__(self, labels: list[str], centroids: np.ndarray, embedder: TextEmbedder, threshold: float) -> None:
        self.labels = labels
        self._centroids = centroids  # [len(labels), dim], unit rows
        self._embedder = embedder
        self.threshold = threshold

    @classmethod
    def train(cls, embedder: TextEmbedder, examples: list[Example], threshold: float) -> TaskClassifier:
        labels = labels_of(examples)
        vectors = np.asarray(embedder.embed([e.text for e in examples]), dtype=np.float32)  # [n, dim]
        index = {label: i for i, label in enumerate(labels)}
        rows = np.array([index[e.label] for e in examples])
        centroids = np.stack([vectors[rows == i].mean(axis=0) for i in range(len(labels))])  # [labels, dim]
        # Renormalised: the mean of unit vectors is shorter than one, and a dot product must stay a cosine.
        centroids /= np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-9)
        return cls(labels, centroids, embedder, threshold)

    def scores(self, vector: np.ndarray) -> dict[str, float]:
        sims = self._centroids @ np.asarray(vector, dtype=np.float32)  # [labels]
        return {label: float(s) for label, s in zip(self.labels, sims)}

    def classify_vector(self, vector: np.ndarray) -> str | None:
        sims = self._centroids @ np.asarray(vector, dtype=np.float32)  # [labels]
        best = int(np.argmax(sims))
        return self.labels[best] if sims[best] >= self.threshold else None

    def classify(self, text: str) -> str | None:
        """Embeds `text` (the slow part: call it off the event loop)."""
        return self.classify_vector(self._embedder.embed_one(text))
