import pytest

from workers.engine.spec_decode.ngram import NgramProposer


def test_the_tokens_after_the_latest_earlier_occurrence_of_the_suffix():
    p = NgramProposer(2, 4)
    #            0  1  2  3  4  5  6  7  8  9
    tokens = [1, 2, 3, 4, 5, 9, 2, 3, 7, 8, 2, 3]
    assert p.propose(tokens, 2) == [7, 8]  # (2, 3) last occurred at 6, before the one at 1
    assert p.propose(tokens, 10) == [7, 8, 2, 3]  # never past the end


def test_the_longest_suffix_wins():
    p = NgramProposer(1, 3)
    tokens = [5, 6, 7, 1, 9, 9, 6, 7, 2, 5, 6, 7]
    # (5, 6, 7) occurred at 0 -> 1; the shorter (6, 7) occurred later (at 6) -> 2, but the longer match wins.
    assert p.propose(tokens, 1) == [1]


def test_no_match_no_drafts_and_the_suffix_itself_does_not_count():
    p = NgramProposer(2, 3)
    assert p.propose([1, 2, 3, 4], 3) == []
    assert p.propose([1, 2], 3) == []
    assert p.propose([7, 7, 7], 2) == [7]  # (7, 7) at 0 is followed by 7
    assert p.propose([1, 2, 1, 2], 0) == []


def test_large_token_ids_match_only_on_token_boundaries():
    # Byte patterns of int32 ids that straddle two tokens must not count as a match.
    a, b = 0x01020304, 0x05060708
    straddle = [0x07080102, 0x03040506]  # bytes of (a, b) shifted by two bytes, in little endian
    p = NgramProposer(2, 2)
    assert p.propose([0x0304_0000, 0x0708_0102, 0x0000_0506, 99, a, b], 1) == []
    assert p.propose([a, b, 42, a, b], 2) == [42, a]
    assert p.propose([*straddle, a, b], 1) == []


@pytest.mark.parametrize("lo, hi", [(0, 2), (3, 2)])
def test_bad_bounds(lo, hi):
    with pytest.raises(ValueError):
        NgramProposer(lo, hi)
