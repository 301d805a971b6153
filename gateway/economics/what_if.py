"""Self-host or call an API: per model, what its month of tokens would have cost on each of its versions, and
the monthly volume above which a pool version beats an upstream one.

A pool version's cost per output token is its break-even price (replica-hour price over the output tokens a
replica makes in an hour at the measured or given throughput, busy `utilisation` of the time); an upstream
version's is the provider's price for the model's measured mix (input tokens per output token). Crossover: one
pool replica kept up all month costs per_replica_hour x 730 h whatever it serves; the API costs per token. So
the pool is cheaper above (replica-month cost / the API's cost per output token) output tokens a month, when
its own cost per token at that utilisation is below the API's (else never: more volume needs more replicas at
the same per-token cost)."""
from __future__ import annotations

from decimal import Decimal

from gateway.economics.costs import ProviderPrice
from gateway.schemas.economics import AlternativeCost, Crossover, VersionEconomics

HOURS_PER_MONTH = Decimal(730)
MILLION = Decimal(1_000_000)


def _per_output_token(line: VersionEconomics, prompt: int, completion: int) -> Decimal | None:
    if line.cost_basis == "provider_prices":
        if line.provider_input_per_million is None or line.provider_output_per_million is None:
            return None
        provider = ProviderPrice(line.provider_input_per_million, line.provider_output_per_million)
        return provider.cost(prompt, completion) / completion if completion else \
            line.provider_output_per_million / MILLION
    if line.break_even_per_million_output_tokens is None:
        return None
    return line.break_even_per_million_output_tokens / MILLION


def alternatives(lines: list[VersionEconomics], money) -> tuple[list[AlternativeCost], list[Crossover]]:
    """(each version's cost for all the model's tokens, each pool/upstream pair's crossover volume)."""
    served = [line for line in lines if line.version is not None]
    prompt = sum(line.prompt_tokens for line in served)
    completion = sum(line.completion_tokens for line in served)
    rates = {line.version: _per_output_token(line, prompt, completion) for line in served}
    costs = [AlternativeCost(version=line.version, cost_basis=line.cost_basis,
                             cost=money(rates[line.version] * completion) if rates[line.version] is not None else None)
             for line in served]
    crossovers = []
    for pool in (line for line in served if line.cost_basis == "replica_hours"):
        for api in (line for line in served if line.cost_basis == "provider_prices"):
            pool_rate, api_rate = rates[pool.version], rates[api.version]
            volume = None
            if pool_rate is not None and api_rate and pool.per_replica_hour is not None and pool_rate < api_rate:
                volume = (pool.per_replica_hour * HOURS_PER_MONTH / api_rate).quantize(Decimal(1))
            crossovers.append(Crossover(pool_version=pool.version, upstream_version=api.version,
                                        output_tokens_per_month=volume))
    return costs, crossovers
