"""The pair judge: what it reads, both orders, its bar, and its config."""
import pytest

from gateway.cache.judge import JudgeConfig, PairJudge, judged_text
from tests.gateway.cache.conftest import FixedScorer


def test_the_judge_reads_earlier_turns_then_the_question_both_ways_round():
    assert judged_text("And in winter?", "I'm going to Oslo.") == "I'm going to Oslo.\nAnd in winter?"
    assert judged_text("And in winter?", "  ") == "And in winter?"
    scorer = FixedScorer(0.9)
    PairJudge(lambda: scorer).probability("q", "s", earlier="e", stored_earlier="")
    assert scorer.read == [("e\nq", "s"), ("s", "e\nq")]


def test_the_lower_reading_counts_against_the_bar():
    class Ordered:
        def probabilities(self, pairs):
            return [0.99, 0.9]

    judge = PairJudge(Ordered, JudgeConfig(bar=0.95))
    assert judge.probability("a", "b") == pytest.approx(0.9) and not judge.accepts(0.9) and judge.accepts(0.95)


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


@pytest.mark.parametrize("kw", [{"bar": -0.1}, {"bar": 1.5}, {"max_pairs": -1}])
def test_bad_config_is_refused(kw):
    with pytest.raises(ValueError):
        JudgeConfig(**kw)
