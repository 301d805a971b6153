"""The report's arithmetic on a hand-computed month (exact decimals, tenants adding up to the totals)."""
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from gateway.domain.period import Month
from gateway.economics.costs import CostPoint
from gateway.economics.report import ReplicaSlice, ReportOptions, UsageSlice, build_report

D = Decimal
NOV = Month(2026, 11)


def usage(tenant, version, requests, completion, revenue, engine_ms, price, model="m"):
    return UsageSlice(tenant, model, version, requests, 10 * requests, completion, D(revenue), engine_ms,
                      None if price is None else D(price))


def point(version, price, hardware="2 vCPU"):
    return CostPoint(version, D(price), hardware, datetime(2026, 11, 16, tzinfo=UTC))


@pytest.fixture
def report():
    usage_slices = [
        usage("t1", "m@a", 3, 1000, "1.0", 3_600_000.0, "0.6"),  # 1 engine-hour at 0.6 -> 0.6
        usage("t2", "m@a", 1, 500, "0.5", 1_800_000.0, "0.6"),  # half an hour at 0.6 -> 0.3
        usage("t2", "m@a", 1, 500, "0.25", 900_000.0, "1.2"),  # after the price change: 0.25 h at 1.2 -> 0.3
        usage("t1", None, 1, 100, "0.01", 0.0, None),  # a semantic-cache hit: revenue, no engine
    ]
    replicas = [ReplicaSlice("m@a", 120, D("0.6")), ReplicaSlice("m@a", 60, D("1.2")),  # 1.2 + 1.2
                ReplicaSlice("m@b", 30, D("0.2"))]  # up, never used: 0.1, nobody's
    current = {"m@a": point("m@a", "1.2"), "m@b": point("m@b", "0.2")}
    return build_report(usage_slices, replicas, current, period=NOV.period, month=str(NOV),
                        options=ReportOptions(utilisation=D("0.6")))


def test_version_line(report):
    [model] = report.models
    a, b, none = model.versions
    assert (a.version, b.version, none.version) == ("m@a", "m@b", None)
    assert (a.requests, a.completion_tokens, a.revenue) == (5, 2000, D("1.75"))
    assert (a.replica_hours, a.engine_hours, a.utilisation) == (D(3), D("1.75"), D("0.583333"))
    assert (a.serving_cost, a.attributed_cost, a.idle_cost, a.cost) == (D("2.4"), D("1.2"), D("1.2"), D("2.4"))
    assert a.cost_per_million_output_tokens == D(1200)  # 2.4 / 2000 tokens * 1e6
    assert (a.margin, a.margin_ratio) == (D("-0.65"), D("-0.371429"))
    # 2000 tokens in 6300 busy seconds; at 60% busy a replica-hour yields 685.71... tokens; 1.2 / that * 1e6
    assert a.throughput == D("0.32") and a.break_even_per_million_output_tokens == D(1750)
    assert (a.per_replica_hour, a.hardware) == (D("1.2"), "2 vCPU")
    assert (b.cost, b.attributed_cost, b.utilisation, b.cost_per_million_output_tokens) == (D("0.1"), 0, 0, None)
    assert (none.revenue, none.cost, none.replica_hours, none.per_replica_hour) == (D("0.01"), 0, 0, None)


def test_model_tenants_and_totals_add_up(report):
    [model] = report.models
    assert (model.revenue, model.cost, model.attributed_cost, model.idle_cost) == (D("1.76"), D("2.5"), D("1.2"),
                                                                                   D("1.3"))
    assert model.cost_per_million_output_tokens == D(1250)  # 2.5 over the 2000 tokens engines generated
    t1, t2 = report.tenants
    # m@a's idle 1.2 by attributed cost there (0.6 each); unused m@b's 0.1 by attributed cost overall (equal too)
    assert (t1.tenant_id, t1.revenue, t1.attributed_cost, t1.idle_cost, t1.cost) == ("t1", D("1.01"), D("0.6"),
                                                                                      D("0.65"), D("1.25"))
    assert (t2.tenant_id, t2.revenue, t2.attributed_cost, t2.idle_cost, t2.cost, t2.margin) == (
        "t2", D("0.75"), D("0.6"), D("0.65"), D("1.25"), D("-0.5"))
    tot = report.totals
    assert (tot.revenue, tot.cost, tot.unallocated_cost, tot.margin) == (D("1.76"), D("2.5"), D(0), D("-0.74"))
    assert sum(t.revenue for t in report.tenants) == tot.revenue == sum(m.revenue for m in report.models)
    assert sum(t.cost for t in report.tenants) == tot.cost == sum(m.cost for m in report.models)
    assert sum(t.margin for t in report.tenants) == tot.margin
    body = report.model_dump(mode="json")
    assert body["totals"]["margin"] == "-0.74" and body["models"][0]["versions"][0]["utilisation"] == "0.583333"


def test_rounding_never_loses_a_quantum():
    """A third of a replica-minute's price per tenant: every share rounds, the sums stay exact."""
    slices = [usage(t, "m@a", 1, 7, "0.0000001", 1000.0, "1") for t in ("x", "y", "z")]
    report = build_report(slices, [ReplicaSlice("m@a", 1, D(1))], {}, period=NOV.period, month="2026-11",
                          options=ReportOptions())
    [line] = report.models[0].versions
    assert line.cost == D("0.0166666667") and line.attributed_cost == D("0.0008333333")
    assert sum(t.cost for t in report.tenants) == report.totals.cost == line.cost
    assert sum(t.attributed_cost for t in report.tenants) == line.attributed_cost
    assert line.break_even_per_million_output_tokens is None  # no price known at the end


def test_missed_replica_minutes_never_make_a_negative_idle_cost():
    report = build_report([usage("t", "m@a", 1, 10, "0.01", 7_200_000.0, "1")], [ReplicaSlice("m@a", 60, D(1))],
                          {}, period=NOV.period, month="2026-11", options=ReportOptions())
    [line] = report.models[0].versions
    assert (line.serving_cost, line.attributed_cost, line.idle_cost, line.cost) == (D(1), D(2), D(0), D(2))
    assert line.utilisation == D(2)  # shown as measured: more engine time than sampled replica time


def test_a_throughput_parameter_replaces_the_measured_one():
    report = build_report([usage("t", "m@a", 1, 10, "0.01", 1000.0, "3.6")], [], {"m@a": point("m@a", "3.6")},
                          period=NOV.period, month="2026-11",
                          options=ReportOptions(utilisation=D("0.5"), throughput=D(1000)))
    line = report.models[0].versions[0]
    assert line.throughput == D(1000)
    assert line.break_even_per_million_output_tokens == D(2)  # 3.6 / (1000 * 3600 * 0.5) * 1e6


@pytest.mark.parametrize("kw", [{"utilisation": D(0)}, {"utilisation": D("1.5")}, {"throughput": D(0)}])
def test_bad_options(kw):
    with pytest.raises(ValueError):
        ReportOptions(**kw)


def test_replicas_without_any_usage_stay_unallocated():
    report = build_report([], [ReplicaSlice("m@a", 60, D("0.5"))], {}, period=NOV.period, month="2026-11",
                          options=ReportOptions())
    assert report.tenants == [] and report.totals.cost == report.totals.unallocated_cost == D("0.5")
    assert report.totals.margin == D("-0.5")
