"""Stop strings matched incrementally: the same answers as searching the whole text, in linear time."""
from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from workers.engine.detokenizer import IncrementalDetokenizer
from workers.engine.stop_matcher import StopMatcher
from tests.workers.engine.fakes import FakeTokenizer

TOK = FakeTokenizer()


def _naive(text: str, fed_before: int, stops: list[str]) -> tuple[int, int] | None:
    """The earliest-starting stop string ending after `fed_before` (at a tie the shortest)."""
    hits = []
    for s in stops:
        i = text.find(s, max(0, fed_before - len(s) + 1))
        if i >= 0:
            hits.append((i, len(s)))
    return min(hits) if hits else None


def _naive_partial(text: str, stops: list[str]) -> int:
    return max((k for s in stops for k in range(min(len(s) - 1, len(text)) + 1) if text.endswith(s[:k])),
               default=0)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text("ab", min_size=1, max_size=6), min_size=1, max_size=4),
       st.lists(st.text("abc", max_size=5), max_size=12))
def test_matches_a_search_of_the_whole_text(stops, pieces):
    matcher, text = StopMatcher(stops), ""
    for piece in pieces:
        hit = matcher.feed(piece)
        assert hit == _naive(text + piece, len(text), stops)
        text += piece
        if hit is not None:
            break
        assert matcher.partial_len() == _naive_partial(text, stops)


def test_a_long_stop_string_costs_each_step_its_new_text_only():
    """Four 200,001-character stop strings whose first characters the output keeps ending with: 512 steps take
    milliseconds (looking for every prefix of each at the tail of the text took 1.7 s here, growing with the
    square of the text)."""
    stops = [c + "ab" * 100_000 for c in "abcd"]
    started = time.perf_counter()
    d = IncrementalDetokenizer(TOK, stops)
    for i in range(512):
        d.update(TOK.encode("abab" if i % 2 else "xyab"))
        d.visible_text(finished=False)
    elapsed = time.perf_counter() - started
    assert not d.stopped and len(d.text) == 2048
    assert d.visible_text(finished=False) == d.text[:-5]  # "babab" could still become "b" + "abab..."
    assert elapsed < 0.5, elapsed
