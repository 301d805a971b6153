"""The verifier with the shipped judge: hard negatives are refused, paraphrases pass. Cases written for these
tests (not taken from the evaluation corpus)."""
import pytest

from gateway.cache.config import CacheConfig
from gateway.cache.judge import JudgeConfig, PairJudge
from gateway.cache.semantic_cache import default_judge
from gateway.cache.verify import Verifier


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier(default_judge(CacheConfig()))


@pytest.mark.parametrize("stored,asked", [
    ("Is it safe for my hamster to eat carrots?", "Is it safe for my ferret to eat carrots?"),
    ("What is the boiling point of ethanol?", "What is the density of ethanol?"),
    ("Which trains run on Sunday mornings?", "Which trains run on Sunday evenings?"),
    ("How many grams of sugar are in 3 cups of flour?", "How many grams of sugar are in 4 cups of flour?"),
    ("Is this array mutable?", "Is this array immutable?"),
    ("Which planet has the strongest gravity?", "Which planet has the weakest gravity?"),
    ("Does the tenant pay the landlord a deposit?", "Does the landlord pay the tenant a deposit?"),
    ("How do I read a file line by line in rust?", "How do I read a file line by line in golang?"),
    ("What vaccines does a puppy need?", "What vaccines does an adult dog need?"),
    ("Should I stretch before a run?", "Should I stretch after a run?"),
    # An action traded for another (the kind heldout35's wrong hits were; the judge retrained on them in stop 43)
    ("How do I install node on ubuntu?", "How do I uninstall node on ubuntu?"),
    ("How long should I boil frozen dumplings?", "How long should I steam frozen dumplings?"),
    ("How do I start intermittent fasting?", "How do I stop intermittent fasting?"),
])
def test_hard_negatives_are_refused(verifier, stored, asked):
    assert verifier.refusal(asked, stored) is not None


@pytest.mark.parametrize("stored,asked", [
    ("How do I delete a branch in git?", "How can I remove a git branch?"),
    ("Why doesn't my laptop charge?", "why doesnt my laptop charge"),
    ("Could you please tell me how to boil an egg?", "how to boil an egg"),
    ("What led to the French Revolution?", "What caused the French Revolution?"),
    ("Why is my laptop so hot?", "Why does my laptop get so hot?"),
])
def test_paraphrases_pass(verifier, stored, asked):
    assert verifier.refusal(asked, stored) is None


# Paraphrases through a synonymous verb that the judge retrained on action swaps (stop 43) doubts: p 0.80-0.90
# against the 0.95 bar, where the judge before gave 0.99. A miss costs a generation, never a wrong answer; the
# guards let them through, so only the model decides (heldout36: 85 % of paraphrases served, 3 wrong of 118).
@pytest.mark.parametrize("stored,asked", [
    ("How do I turn on dark mode?", "How do I enable dark mode?"),
    ("How do I change the name of a column in pandas?", "How do I rename a column in pandas?"),
])
def test_verb_synonyms_are_left_to_the_judge(verifier, stored, asked):
    assert verifier.guard_refusal(asked, stored) is None
    assert verifier.refusal(asked, stored) in (None, "judge")


def test_the_same_words_differently_cased_or_punctuated_need_no_judge(verifier):
    assert verifier.refusal("what is the capital of france ?", "What is the capital of France?") is None


def test_earlier_turns_are_guarded_too(verifier):
    assert verifier.guard_refusal("What should I pack?", "What should I pack?", "I'm off to Oslo.",
                                  "I'm off to Bergen.") == "context:entities"
    assert verifier.guard_refusal("How old is it?", "How old is it?", "I have a 3-month-old son.",
                                  "I have a 3-year-old son.") == "context:units"


def test_without_a_judge_the_cosine_decides():
    bare = Verifier(None)
    assert bare.refusal("Can dogs eat grapes?", "Can cats eat grapes?", score=0.9) == "cosine"
    assert bare.refusal("Can dogs eat grapes?", "Can dogs eat grapes ?", score=0.99) is None
    assert bare.refusal("What is 2+3?", "What is 2+4?", score=0.99) == "numbers"
    assert Verifier(None, guards={}).refusal("What is 2+3?", "What is 2+4?", score=0.1) is None  # the baseline


class _Accepting:
    """A judge's scorer that takes every pair for a paraphrase: what the cosine floor is for."""

    def probabilities(self, pairs):
        return [0.999] * len(pairs)


def test_under_the_judges_cosine_floor_only_misspellings_pass():
    verifier = Verifier(PairJudge(_Accepting, JudgeConfig(min_cosine=0.85)))
    stored = "How do I add a column in a dataframe?"
    assert verifier.refusal("How do I drop a column in a dataframe?", stored, score=0.8) == "cosine"
    assert verifier.refusal("how do i add a colum in a dataframe", stored, score=0.7) is None
    assert verifier.refusal("How do I drop a column in a dataframe?", stored, score=0.9) is None  # the judge's call
