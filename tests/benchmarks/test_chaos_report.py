"""benchmarks/chaos_report.py on hand-made outcomes and ledger rows: what counts as explained, lost,
double-billed or an orphan (the chaos run itself needs real Redis, PostgreSQL and a model)."""
from __future__ import annotations

from benchmarks.chaos_load import Outcome
from benchmarks.chaos_report import Phase, Row, classify, figures, reconcile

PG_DOWN = Phase("postgres", "down", start=10.0, end=20.0, explains=frozenset({(503, "database_unavailable")}))
KILLED = Phase("gateway", "killed", start=30.0, end=40.0, explains=frozenset({("transport", "cut")}))


def outcome(start: float, **fields) -> Outcome:
    return Outcome(client=0, tenant="main", stream=fields.pop("stream", False), start=start,
                   end=fields.pop("end", start + 1), **fields)


def ok(rid: str, usage=(10, 5), start: float = 0.0) -> Outcome:
    return outcome(start, status=200, request_id=rid, completed=True, usage=usage)


def test_errors_are_explained_only_by_their_fault_inside_its_window():
    during = outcome(12, status=503, code="database_unavailable", retry_after="5", request_id="a")
    after = outcome(25, status=503, code="database_unavailable", retry_after="5", request_id="b")
    other_code = outcome(12, status=503, code="no_capacity", retry_after="1", request_id="c")
    no_retry_after = outcome(12, status=503, code="database_unavailable", request_id="d")
    cut = outcome(35, status=200, transport="cut", request_id="e", stream=True)
    cut_elsewhere = outcome(5, status=200, transport="cut", request_id="f", stream=True)
    phases = [PG_DOWN, KILLED]
    assert [classify(o, phases) for o in (during, after, other_code, no_retry_after, cut, cut_elsewhere)] == [
        "explained", "unexplained", "unexplained", "unexplained", "explained", "unexplained"]


def test_refusals_hangs_and_stream_errors():
    assert classify(outcome(0, status=429, code="insufficient_quota"), []) == "refused"
    assert classify(outcome(0, status=429), []) == "refused_unclear"
    assert classify(outcome(0, end=31.0, status=200, completed=True), []) == "hung"
    failed = outcome(0, status=200, sse_error=True, code="generation_failed", stream=True, usage=(10, 3))
    assert failed.effective_status == 502
    assert classify(failed, []) == "unexplained"
    assert classify(outcome(0, status=200, stream=True), []) == "incomplete"


def test_reconcile_finds_lost_mismatched_doubled_orphaned_and_untold_rows():
    outcomes = [ok("r1"), ok("r2"), ok("r3", usage=(10, 7)), ok("r4"),
                outcome(0, status=502, code="generation_failed", request_id="r5")]
    rows = [Row("r1", "t", 10, 5, "ok"),
            Row("r3", "t", 10, 6, "ok"),  # billed one token short
            Row("r4", "t", 10, 5, "ok"), Row("r4", "t", 10, 5, "ok"),  # twice
            Row("r5", "t", 10, 2, "error"),  # the client saw a 502 and no usage
            Row("zz", "t", 1, 1, "ok")]  # no client saw zz
    rec = reconcile(outcomes, rows)
    assert rec.lost == ["r2"] and rec.lost_completed == 1
    assert rec.mismatched == [("r3", (10, 7), (10, 6))]
    assert rec.doubled == ["r4"]
    assert [r.request_id for r in rec.orphans] == ["zz"]
    assert rec.billed_untold_tokens == 12 and sum(rec.billed_untold.values()) == 1
    assert (rec.told, rec.told_tokens, rec.billed_tokens_of_told) == (4, 62, 46)


def test_figures_meet_their_targets_when_nothing_is_lost():
    outcomes = [ok("r1"), ok("r2", start=32.0), outcome(33, status=200, transport="cut", request_id="r3")]
    rows = [Row("r1", "t", 10, 5, "ok"), Row("r2", "t", 10, 5, "ok")]
    table = figures(outcomes, [KILLED], reconcile(outcomes, rows), budget=100, budget_billed=30, spool_left=0,
                    rejected=0)
    assert all(f.ok is not False for f in table), [(f.what, f.measured) for f in table if f.ok is False]
    rows.pop()
    table = figures(outcomes, [KILLED], reconcile(outcomes, rows), budget=20, budget_billed=30, spool_left=1,
                    rejected=0)
    missed = {f.what.split(" (")[0] for f in table if f.ok is False}
    assert missed == {"tokens told vs billed", "ledger rows lost", "spool after recovery",
                      "budget tenant: tokens billed vs its monthly budget"}
