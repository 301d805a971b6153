"""Typos mended for the vector search only (spelling.py)."""
import pytest

from gateway.cache.spelling import Speller

VOCABULARY = ["exceptions", "research", "python", "mushrooms", "string", "integer", "bumpy", "lumpy", "handle",
              "dogs", "card"]


@pytest.fixture
def speller() -> Speller:
    return Speller(VOCABULARY, known=lambda w: w in {"hedgehogs"})


@pytest.mark.parametrize("typed,meant", [
    ("how do i handle exeptions", "how do i handle exceptions"),  # a letter missing
    ("a reserach paper", "a research paper"),  # two letters swapped
    ("fresh mushroomms", "fresh mushrooms"),  # a letter too many
    ("convert a strimg", "convert a string"),  # a letter changed
    ("why do dgos bark", "why do dogs bark"),  # a swap, from four letters
    ("Pyhton and Exeptions", "python and exceptions"),  # case ignored, as the uncased embedder does
])
def test_one_edit_from_one_word_is_mended(speller, typed, meant):
    assert speller.correct(typed) == meant


@pytest.mark.parametrize("text", [
    "install numpy",  # "bumpy" and "lumpy" are both one edit away: ambiguous, left alone
    "my crda",  # four letters and no swap gives a word: left alone ("crad" would be "card")
    "my hedgehogs",  # a real word the vocabulary lacks
    "abcd",  # shorter than five letters
    "pythonic zzzzzzzz",  # nothing within one edit
])
def test_other_words_are_left_as_written(speller, text):
    assert speller.correct(text) == text


def test_min_length_is_validated():
    with pytest.raises(ValueError, match="min_length"):
        Speller([], min_length=1)
