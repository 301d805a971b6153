"""Sentence embeddings: one loaded model shared by /v1/embeddings and the semantic cache."""
from gateway.embedding.embedder import Embedder, EmbedderConfig

__all__ = ["Embedder", "EmbedderConfig"]
