"""The economics page's crossover sentence in each case: above, below, never, and not worked out."""
from decimal import Decimal

from gateway.console.economics import crossover_words
from gateway.schemas.economics import AlternativeCost, Crossover, ModelEconomics


def _model(completion_tokens: int, pool_cost: str | None = "1") -> ModelEconomics:
    return ModelEconomics.model_construct(completion_tokens=completion_tokens, what_if=[
        AlternativeCost(version="m@pool", cost_basis="replica_hours", cost=pool_cost),
        AlternativeCost(version="m@api", cost_basis="provider_prices", cost="2")])


def test_each_crossover_reads_as_a_sentence():
    at = Decimal("0.6")
    crossing = Crossover(pool_version="m@pool", upstream_version="m@api", output_tokens_per_month=Decimal(1_000_000))
    assert crossover_words(_model(2_000_000), crossing, at) == (
        "The pool (m@pool) becomes cheaper than the API (m@api) above 1,000,000 output tokens a month at 60 % "
        "utilisation; this month's 2,000,000 output tokens are above it: the pool is the cheaper way to serve them.")
    assert "are below it: at this volume the API costs less" in crossover_words(_model(10), crossing, at)
    never = Crossover(pool_version="m@pool", upstream_version="m@api", output_tokens_per_month=None)
    assert crossover_words(_model(10), never, Decimal("0.25")).startswith(
        "The pool (m@pool) is never cheaper than the API (m@api) at 25 % utilisation")
    assert crossover_words(_model(10, pool_cost=None), never, at) == (
        "No crossover between the pool (m@pool) and the API (m@api) can be worked out: m@pool has no price or "
        "measured throughput to go by.")
