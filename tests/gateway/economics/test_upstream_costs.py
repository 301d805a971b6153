"""Upstream versions in the economics report: their tokens at the provider's prices (no replicas, no idle cost,
carried by the tenants who used them), and the self-host vs API what-if beside the pool's figures."""
from datetime import UTC, datetime
from decimal import Decimal

from gateway.domain.period import Month
from gateway.economics.costs import CostPoint, ProviderPrice
from gateway.economics.report import ReplicaSlice, ReportOptions, UsageSlice, build_report

D = Decimal
NOV = Month(2026, 11)


def test_provider_prices_cost_the_upstream_version_and_the_what_if_compares_both():
    usage = [
        # the pool: 1000 output tokens in 10 busy seconds (throughput 100/s), a replica-hour at 0.36
        UsageSlice("t1", "m", "m@pool", 2, 4000, 1000, D("0.5"), 10_000.0, D("0.36")),
        # the API: 1M prompt and 0.5M output tokens at 0.15 / 0.60 per million -> 0.15 + 0.30 = 0.45
        UsageSlice("t2", "m", "m@api", 10, 1_000_000, 500_000, D("1.0"), 0.0, None),
    ]
    replicas = [ReplicaSlice("m@pool", 60, D("0.36"))]
    current = {"m@pool": CostPoint("m@pool", D("0.36"), "2 vCPU", datetime(1970, 1, 1, tzinfo=UTC))}
    report = build_report(usage, replicas, current, period=NOV.period, month=str(NOV),
                          options=ReportOptions(utilisation=D("0.5")),
                          providers={"m@api": ProviderPrice(D("0.15"), D("0.60"))})
    [model] = report.models
    api = next(v for v in model.versions if v.version == "m@api")
    assert api.cost_basis == "provider_prices" and api.provider_cost == D("0.45") == api.cost
    assert (api.attributed_cost, api.idle_cost, api.replica_hours) == (D("0.45"), D(0), D(0))
    assert model.provider_cost == D("0.45")
    t2 = next(t for t in report.tenants if t.tenant_id == "t2")
    assert t2.cost == D("0.45") and t2.margin == D("0.55")  # the provider's bill, carried by who used it
    assert report.totals.cost == D("0.81")  # 0.36 for the pool's replica-hour + 0.45

    # All 1,004,000 prompt and 501,000 output tokens of the model on each version:
    # pool: break-even 0.36 / (100 tok/s x 3600 x 0.5) = 2.0 per 1M output -> 1.002
    # API: 0.15 x 1.004 + 0.60 x 0.501 = 0.1506 + 0.3006 = 0.4512
    what_if = {a.version: a.cost for a in model.what_if}
    assert what_if == {"m@pool": D("1.002"), "m@api": D("0.4512")}
    # The pool costs 2.0 per 1M output tokens at 50% busy, the API about 0.90: the pool never wins here.
    [crossover] = model.crossovers
    assert (crossover.pool_version, crossover.upstream_version) == ("m@pool", "m@api")
    assert crossover.output_tokens_per_month is None

    cheap = build_report(usage, replicas, current, period=NOV.period, month=str(NOV),
                         options=ReportOptions(utilisation=D("0.5"), throughput=D("1000")),
                         providers={"m@api": ProviderPrice(D("0.15"), D("0.60"))})
    # at 1000 tok/s the pool costs 0.2 per 1M output: one replica-month (0.36 x 730 = 262.8) pays off above
    # 262.8 / (0.4512 / 501000) output tokens a month
    [crossover] = cheap.models[0].crossovers
    expected = (D("262.8") / (D("0.4512") / D(501_000))).quantize(D(1))
    assert crossover.output_tokens_per_month == expected
