"""The max_tokens rule: an answer serves equal or smaller limits, cut at a token boundary; never larger ones
once it was itself cut."""
import pytest

from gateway.cache.truncation import cut, fit, token_ends
from gateway.cache.types import CachedAnswer
from tests.gateway.cache.conftest import ask

# "Paris is the capital." as 5 tokens.
TEXT, ENDS = "Paris is the capital.", (5, 8, 12, 20, 21)


def answer(finish: str, max_tokens: int | None, text=TEXT, ends=ENDS) -> CachedAnswer:
    return CachedAnswer(text, 7, len(ends), finish, max_tokens, ends)


def test_a_stopped_answer_serves_any_limit_it_fits_and_is_cut_below():
    stopped = answer("stop", 64)
    assert fit(stopped, None) is stopped and fit(stopped, 5) is stopped and fit(stopped, 1000) is stopped
    short = fit(stopped, 3)
    assert (short.text, short.completion_tokens, short.finish_reason) == ("Paris is the", 3, "length")
    assert short.token_ends == ENDS[:3] and short.max_tokens == 3


def test_a_cut_answer_serves_equal_or_smaller_limits_only():
    cut_at_5 = answer("length", 5)
    assert fit(cut_at_5, 5) is cut_at_5
    assert fit(cut_at_5, 2).text == "Paris is" and fit(cut_at_5, 2).finish_reason == "length"
    assert fit(cut_at_5, 6) is None and fit(cut_at_5, None) is None


def test_without_token_ends_only_limits_that_need_no_cut_are_served():
    unknown = CachedAnswer(TEXT, 7, 5, "stop")  # no token ends
    assert fit(unknown, 5) is unknown and fit(unknown, 4) is None
    assert cut(unknown, 2) is None and fit(CachedAnswer(TEXT, 7, 5, "error"), 9) is None


def test_token_ends_from_decoded_prefixes():
    pieces = ["Par", "is", " is", " ok"]
    detok = lambda ids: "".join(pieces[i] for i in ids)  # noqa: E731
    assert token_ends(detok, [0, 1, 2, 3], "Paris is ok") == (3, 5, 8, 11)
    assert token_ends(detok, [0, 1, 2, 3], "Paris is") == ()  # the ids spell more than the text (a stop string)
    # A token ending inside a multi-byte character ends where the previous one did.
    partial = {0: "caf", 1: "caf\ufffd", 2: "café"}
    assert token_ends(lambda ids: partial[len(ids) - 1], [0, 1, 2], "café") == (3, 3, 4)


async def test_a_length_cut_answer_is_stored_and_served_to_equal_or_smaller_limits(cache, policy):
    question = "What is the history of Paris?"
    assert await cache.store(ask(question, max_tokens=5), policy, TEXT, 7, 5, "length", ENDS)
    same = await cache.lookup(ask(question, max_tokens=5), policy)
    assert same.status == "hit" and same.entry.text == TEXT and same.entry.finish_reason == "length"
    smaller = await cache.lookup(ask(question, max_tokens=2), policy)
    assert (smaller.status, smaller.entry.text, smaller.entry.completion_tokens) == ("hit", "Paris is", 2)
    assert smaller.entry.finish_reason == "length"
    for larger in (6, None):
        assert (await cache.lookup(ask(question, max_tokens=larger), policy)).status == "miss"
    # A paraphrase under a smaller limit is cut the same way.
    para = await cache.lookup(ask("What's the history of Paris?", max_tokens=3), policy)
    assert para.status == "hit" and para.entry.text == "Paris is the"


async def test_a_stopped_answer_serves_smaller_limits_by_cutting(cache, policy):
    assert await cache.store(ask("What is the capital of France?", max_tokens=64), policy, TEXT, 7, 5, "stop", ENDS)
    whole = await cache.lookup(ask("What is the capital of France?"), policy)
    assert whole.entry.finish_reason == "stop" and whole.entry.text == TEXT
    assert (await cache.lookup(ask("What is the capital of France?", max_tokens=500), policy)).entry is whole.entry
    cut4 = await cache.lookup(ask("What is the capital of France?", max_tokens=4), policy)
    assert (cut4.entry.text, cut4.entry.finish_reason) == ("Paris is the capital", "length")


@pytest.mark.parametrize("max_tokens,completion", [(None, 5), (8, 5)])
async def test_a_length_answer_not_cut_at_its_own_limit_is_refused(cache, policy, max_tokens, completion):
    # Cut by the context window, not by max_tokens: what it would say next depends on the prompt's length.
    assert await cache.store(ask("Tell me everything.", max_tokens=max_tokens), policy, TEXT, 7, completion,
                             "length", ENDS) is None
