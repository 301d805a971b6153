import numpy as np
import pytest

from gateway.embedding.vector_index import IndexConfig, NamespaceIndex


def unit(rng, n, dim=16):
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_search_returns_live_entries_best_first():
    index = NamespaceIndex(4)
    eye = np.eye(4, dtype=np.float32)
    for i in range(4):
        index.add(f"e{i}", eye[i])
    assert index.search(eye[1], 1) == [("e1", pytest.approx(1.0))]
    assert index.remove("e1") and not index.remove("e1")
    assert sorted(e for e, _ in index.search(eye[1], 4)) == ["e0", "e2", "e3"]
    assert len(index) == 3 and index.dead == 1


def test_dead_rows_are_compacted():
    rng = np.random.default_rng(0)
    index = NamespaceIndex(16, IndexConfig(rebuild_dead_fraction=0.25))
    vectors = unit(rng, 400)
    index.add_many([f"e{i}" for i in range(400)], vectors)
    for i in range(300):
        index.remove(f"e{i}")
    assert len(index) == 100
    assert index.dead <= max(64, 0.25 * (len(index) + index.dead))
    assert index.search(vectors[350], 1)[0][0] == "e350"


def test_re_adding_an_id_replaces_its_vector():
    index = NamespaceIndex(4)
    eye = np.eye(4, dtype=np.float32)
    index.add("e", eye[0])
    index.add("e", eye[2])
    assert len(index) == 1
    assert index.search(eye[2], 2) == [("e", pytest.approx(1.0))]


def test_large_namespaces_switch_to_hnsw_with_exact_scores():
    rng = np.random.default_rng(1)
    config = IndexConfig(hnsw_above=500)
    index = NamespaceIndex(16, config)
    vectors = unit(rng, 800)
    index.add_many([f"e{i}" for i in range(400)], vectors[:400])
    assert index.kind == "flat"
    for i in range(400, 800):
        index.add(f"e{i}", vectors[i])
    assert index.kind == "hnsw" and len(index) == 800
    found = sum(index.search(vectors[i], 1)[0][0] == f"e{i}" for i in range(0, 800, 10))
    assert found >= 76  # recall of the exact vector itself
    entry, score = index.search(vectors[123], 1)[0]
    assert entry == "e123" and score == pytest.approx(1.0, abs=1e-5)  # true inner product
    for i in range(500):
        index.remove(f"e{i}")
    assert index.kind == "flat" and len(index) == 300


def test_background_rebuild_replays_changes_made_while_it_ran():
    rng = np.random.default_rng(2)
    index = NamespaceIndex(16, IndexConfig(hnsw_above=300, sync_rebuild_below=0))
    vectors = unit(rng, 600)
    for i in range(400):
        index.add(f"e{i}", vectors[i])
    assert index.rebuilding or index.kind == "hnsw"
    for i in range(400, 600):  # while (or after) the HNSW build runs
        index.add(f"e{i}", vectors[i])
    for i in range(100):
        index.remove(f"e{i}")
    index.add("e150", vectors[599])  # re-added with another vector
    index.wait()
    assert index.kind == "hnsw" and len(index) == 500 and not index.rebuilding
    live = {e for i in range(0, 600, 7) for e, _ in index.search(vectors[i], 1)}
    assert not any(int(e[1:]) < 100 for e in live)
    assert index.search(vectors[450], 1) == [("e450", pytest.approx(1.0, abs=1e-5))]
    assert {e for e, _ in index.search(vectors[599], 2)} == {"e150", "e599"}


@pytest.mark.parametrize("field", ["sync_rebuild_below", "hnsw_above", "hnsw_m", "hnsw_ef_construction",
                                   "hnsw_ef_search", "max_dead_probe", "rebuild_dead_fraction"])
def test_bad_index_config_is_refused(field):
    with pytest.raises(ValueError, match=field):
        IndexConfig(**{field: -1})
