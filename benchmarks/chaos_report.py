"""What benchmarks/chaos.py concludes: each client outcome classified against the fault windows, the ledger
reconciled with what clients were told, and the figures printed beside their targets.

LOST means: the client was told a usage (a complete answer, or a stream's usage chunk before its error event)
and, once every fault had recovered and the spool had been replayed, the ledger holds no row for that
request id. A request cut by the gateway's SIGKILL before its usage reached the client was told nothing: it
is counted as cut, not lost, whether or not the dead process had made its row durable."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from benchmarks.chaos_load import HUNG_S, Outcome


@dataclass(slots=True)
class Phase:
    """One fault and the window in which it explains errors: from injection until it had recovered, plus a grace
    (requests admitted during the fault may finish a little later)."""
    name: str
    what: str
    start: float
    end: float = 0.0
    explains: frozenset = frozenset()  # (status, code) pairs, or ("transport", kind)
    notes: dict = field(default_factory=dict)

    def covers(self, o: Outcome) -> bool:
        return o.start <= self.end and o.end >= self.start


@dataclass(slots=True)
class Row:
    request_id: str
    tenant_id: str
    prompt_tokens: int
    completion_tokens: int
    status: str


def _key(o: Outcome) -> tuple:
    return ("transport", o.transport) if o.transport and o.transport != "timeout" else (o.effective_status, o.code)


def label(o: Outcome) -> str:
    if o.transport and o.transport != "timeout":
        return {"connect": "connection refused", "reset": "connection reset before a response",
                "cut": "cut mid-answer", "garbled": "garbled body"}[o.transport]
    where = " (in stream)" if o.sse_error else ""
    return f"{o.effective_status} {o.code}{where}"


def classify(o: Outcome, phases: list[Phase]) -> str:
    """ok | refused | refused_unclear | explained | unexplained | hung | incomplete"""
    if o.hung:
        return "hung"
    if o.completed:
        return "ok"
    status = o.effective_status
    if o.transport is None and status is not None and 400 <= status < 500:
        return "refused" if o.code else "refused_unclear"
    if o.transport is None and status == 200:
        return "incomplete"  # a 200 that ended without its finish (no error event, no transport error)
    if status == 503 and not o.sse_error and not o.retry_after:
        return "unexplained"  # a 503 must say when to come back
    key = _key(o)
    if any(p.covers(o) and key in p.explains for p in phases):
        return "explained"
    return "unexplained"


@dataclass(slots=True)
class Reconciliation:
    told: int  # requests whose client was told a usage
    told_tokens: int
    billed_tokens_of_told: int
    lost: list[str]  # told, no row
    lost_completed: int  # of which the client saw complete
    mismatched: list[tuple[str, tuple[int, int], tuple[int, int]]]
    doubled: list[str]  # request ids with more than one row
    orphans: list[Row]  # rows for no request id a client saw
    billed_untold: Counter  # rows for requests whose client was told no usage, by what the client saw
    billed_untold_tokens: int
    rows: int
    billed_tokens: int


def reconcile(outcomes: list[Outcome], rows: list[Row]) -> Reconciliation:
    by_id: dict[str, list[Row]] = {}
    for r in rows:
        by_id.setdefault(r.request_id, []).append(r)
    seen = {o.request_id: o for o in outcomes if o.request_id}
    told = [o for o in outcomes if o.usage is not None]
    lost = [o for o in told if o.request_id not in by_id]
    mismatched = []
    billed_of_told = 0
    for o in told:
        found = by_id.get(o.request_id)
        if not found:
            continue
        billed = (found[0].prompt_tokens, found[0].completion_tokens)
        billed_of_told += sum(billed)
        if billed != o.usage:
            mismatched.append((o.request_id, o.usage, billed))
    untold = [(seen[rid], rs[0]) for rid, rs in by_id.items() if rid in seen and seen[rid].usage is None]
    return Reconciliation(
        told=len(told), told_tokens=sum(sum(o.usage) for o in told), billed_tokens_of_told=billed_of_told,
        lost=[o.request_id for o in lost], lost_completed=sum(o.completed for o in lost), mismatched=mismatched,
        doubled=[rid for rid, rs in by_id.items() if len(rs) > 1],
        orphans=[r for r in rows if r.request_id not in seen],
        billed_untold=Counter(f"{label(o)}, row status {r.status}" for o, r in untold),
        billed_untold_tokens=sum(r.prompt_tokens + r.completion_tokens for _, r in untold),
        rows=len(rows), billed_tokens=sum(r.prompt_tokens + r.completion_tokens for r in rows))


@dataclass(slots=True)
class Figure:
    what: str
    measured: str
    target: str = "—"
    ok: bool | None = None  # None: reported, no target


def _counts(outcomes: list[Outcome]) -> str:
    c = Counter(label(o) for o in outcomes)
    return ", ".join(f"{k}: {v}" for k, v in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))) or "none"


def figures(outcomes: list[Outcome], phases: list[Phase], rec: Reconciliation, *, budget: int | None,
            budget_billed: int | None, spool_left: int, rejected: int) -> list[Figure]:
    kinds: dict[str, list[Outcome]] = {}
    for o in outcomes:
        kinds.setdefault(classify(o, phases), []).append(o)
    get = lambda k: kinds.get(k, [])  # noqa: E731
    out = [
        Figure("requests sent", f"{len(outcomes)} ({sum(o.transport == 'connect' for o in outcomes)} of them "
                                "refused at connect: no gateway listening)"),
        Figure("succeeded (complete answer)", str(len(get("ok")))),
        Figure("refused with a clear error (4xx with a code)", f"{len(get('refused'))} ({_counts(get('refused'))})"),
        Figure("refused without an error code", str(len(get("refused_unclear"))), "0", not get("refused_unclear")),
        Figure("failures explained by a fault (in its window)",
               f"{len(get('explained'))} ({_counts(get('explained'))})"),
        Figure("unexplained 5xx / cut / incomplete", f"{len(get('unexplained')) + len(get('incomplete'))}"
               f" ({_counts(get('unexplained') + get('incomplete'))})", "0",
               not get("unexplained") and not get("incomplete")),
        Figure(f"hung (> {HUNG_S:g} s open)", str(len(get("hung"))), "0", not get("hung")),
        Figure("tokens told vs billed (requests told a usage)",
               f"{rec.told_tokens} vs {rec.billed_tokens_of_told} over {rec.told} requests", "equal",
               rec.told_tokens == rec.billed_tokens_of_told),
        Figure("ledger rows lost (told a usage, no row)",
               f"{len(rec.lost)} ({rec.lost_completed} of them complete answers)", "0", not rec.lost),
        Figure("rows double-billed (one request id, several rows)", str(len(rec.doubled)), "0", not rec.doubled),
        Figure("rows whose tokens differ from what the client was told", str(len(rec.mismatched)), "0",
               not rec.mismatched),
        Figure("rows for no request a client saw", str(len(rec.orphans)), "0", not rec.orphans),
        Figure("rows billed where the client was told no usage",
               f"{sum(rec.billed_untold.values())}, {rec.billed_untold_tokens} tokens"
               + (f" ({', '.join(f'{k}: {v}' for k, v in rec.billed_untold.items())})" if rec.billed_untold else "")),
        Figure("ledger total", f"{rec.rows} rows, {rec.billed_tokens} tokens"),
        Figure("spool after recovery (rows left, rows rejected)", f"{spool_left}, {rejected}", "0, 0",
               spool_left == 0 and rejected == 0),
    ]
    if budget is not None:
        out.append(Figure("budget tenant: tokens billed vs its monthly budget", f"{budget_billed} of {budget}",
                          "≤ budget", budget_billed <= budget))
    return out


def phase_lines(outcomes: list[Outcome], phases: list[Phase]) -> list[str]:
    lines = []
    for p in phases:
        inside = [o for o in outcomes if p.covers(o)]
        ok = sum(o.completed for o in inside)
        failed = [o for o in inside if not o.completed and classify(o, phases) != "refused"]
        notes = ", ".join(f"{k} {v}" for k, v in p.notes.items())
        lines.append(f"  {p.name:<9} {p.what}; window {p.end - p.start:5.1f} s: {len(inside)} requests, {ok} ok, "
                     f"failed: {_counts(failed)}" + (f" [{notes}]" if notes else ""))
    return lines


def print_table(rows: list[Figure]) -> None:
    w = max(len(f.what) for f in rows)
    m = max(len(f.measured) for f in rows)
    print(f"| {'figure':<{w}} | {'measured':<{m}} | target | met |")
    print(f"| {'-' * w} | {'-' * m} | --- | --- |")
    for f in rows:
        met = "" if f.ok is None else ("yes" if f.ok else "**NO**")
        print(f"| {f.what:<{w}} | {f.measured:<{m}} | {f.target} | {met} |")
