"""The pair judge's policy: when its probability overrides the rules, and its config."""
import pytest

from gateway.cache.judge import JudgeConfig, PairJudge, judged_text, refusal_kind
from tests.gateway.cache.conftest import FixedScorer


def test_the_judge_reads_earlier_turns_then_the_question():
    assert judged_text("And in winter?", "I'm going to Oslo.") == "I'm going to Oslo.\nAnd in winter?"
    assert judged_text("And in winter?", "  ") == "And in winter?"
    scorer = FixedScorer(0.9)
    PairJudge(lambda: scorer).probability("q", "s", earlier="e", stored_earlier="")
    assert scorer.read == [("e\nq", "s")]


@pytest.mark.parametrize("reason,p,expected", [
    (None, 0.9, None),  # the rules accept, the judge agrees
    (None, 0.2, "judge"),  # the rules accept, the judge vetoes
    ("align:substitution:tap", 0.995, None),  # a word the rules could not match, the judge is sure
    ("align:substitution:tap", 0.98, "align:substitution:tap"),  # not sure enough for a substitution
    ("align:addition:quickly", 0.96, None),  # an added word needs less
    ("numbers", 0.96, None),  # "2" / "two"
    ("entities", 0.98, "entities"),
])
def test_decide(reason, p, expected):
    judge = PairJudge(lambda: FixedScorer(p))
    assert judge.overrules(reason)
    assert judge.decide(reason, p) == expected


@pytest.mark.parametrize("reason", ["negation", "polarity", "align:negation", "align:order", "align:degree",
                                    "context:similarity", "context:entities"])
def test_the_judge_never_overturns_negation_order_or_earlier_turns(reason):
    judge = PairJudge(lambda: FixedScorer(1.0))
    assert not judge.overrules(reason) and judge.decide(reason, 1.0) == reason


def test_refusal_kinds():
    assert refusal_kind("align:substitution:tap") == "align:substitution"
    assert refusal_kind("numbers") == "numbers" and refusal_kind("context:time") == "context"


def test_the_model_is_built_at_first_use_once():
    built = []

    def factory():
        built.append(1)
        return FixedScorer(0.7)

    judge = PairJudge(factory)
    assert built == []
    assert judge.probability("a", "b") == pytest.approx(0.7)
    judge.probability("a", "b")
    assert built == [1]


@pytest.mark.parametrize("kw", [{"veto": -0.1}, {"rescue": {"numbers": 1.5}}, {"veto": 0.9, "rescue": {"units": 0.8}},
                                {"max_pairs": -1}])
def test_bad_config_is_refused(kw):
    with pytest.raises(ValueError):
        JudgeConfig(**kw)
