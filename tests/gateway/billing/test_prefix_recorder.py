"""The waste report's prompt hashing: a known sequence of requests gives an exact repeated share, across flushes
and months; the cap keeps the most repeated prefixes; tenants never see each other's prompts; the buffer and the
retries are bounded. On SQLite and PostgreSQL."""
from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy import select

from gateway.billing.prefix_recorder import Observed, PrefixConfig, PrefixRecorder
from gateway.crud.prompt_prefixes import most_repeated, prefix_totals
from gateway.crud.tenants import create_tenant
from gateway.db.database import Database
from gateway.db.models.prompt_prefix import PromptPrefix

SYSTEM = {"role": "system", "content": "You are the support bot of Acme. Be brief."}
SYSTEM_TOKENS = 20  # what the counter below says of any system prompt


def count(version: str, messages: list[dict]) -> int:
    assert version == "v1" and messages == [SYSTEM]
    return SYSTEM_TOKENS


def tenant(database, name: str) -> str:
    with database.session() as session:
        return create_tenant(session, name=name).id


def chat(tenant_id: str, question: str, tokens: int, *, system: bool = True, month: int = 11, day: int = 3,
         version: str | None = "v1") -> Observed:
    messages = ([SYSTEM] if system else []) + [{"role": "user", "content": question}]
    return Observed(tenant_id=tenant_id, at=datetime(2026, month, day, tzinfo=UTC), prompt_tokens=tokens,
                    version=version, prompt=None, messages=messages)


def completion(tenant_id: str, prompt: str, tokens: int) -> Observed:
    return Observed(tenant_id=tenant_id, at=datetime(2026, 11, 3, tzinfo=UTC), prompt_tokens=tokens, version="v1",
                    prompt=prompt, messages=None)


def rows(database, tenant_id: str, month: str = "2026-11") -> dict[str, PromptPrefix]:
    with database.session() as session:
        found = session.scalars(select(PromptPrefix).where(PromptPrefix.tenant_id == tenant_id,
                                                           PromptPrefix.month == month)).all()
        return {r.preview: r for r in found}


def totals(database, tenant_id: str, month: str = "2026-11"):
    with database.session() as session:
        return prefix_totals(session, tenant_id=tenant_id, month=month)


# (request, tokens of its longest prefix already seen this month)
def sequence(a: str) -> list[tuple[Observed, int]]:
    return [(chat(a, "Where is my order 1?", 30), 0),  # all new
            (chat(a, "Can I return shoes?", 35), SYSTEM_TOKENS),  # the system prompt again
            (chat(a, "Where is my order 1?", 30), 30),  # the whole prompt again
            (chat(a, "hello", 12, system=False), 0),
            (chat(a, "hello", 12, system=False), 12),
            (chat(a, "Can I return shoes?", 35), 35),
            (completion(a, "Once upon a time", 5), 0),
            (chat(a, "Where is my order 1?", 30, month=12), 0)]  # a new month starts from nothing


@pytest.mark.parametrize("flushes", [1, 3])
async def test_the_repeated_tokens_of_a_known_sequence_are_exact(database, flushes):
    a = tenant(database, "acme")
    recorder = PrefixRecorder(database, count=count)
    seq = sequence(a)
    step = -(-len(seq) // flushes)
    for i in range(0, len(seq), step):  # what was seen before survives a flush
        for seen, _ in seq[i:i + step]:
            recorder.observe(seen)
        await recorder.flush()
    assert recorder.pending == 0 and recorder.recorded == len(seq)
    november = sum(expected for seen, expected in seq if seen.at.month == 11)
    assert november == 97
    assert totals(database, a).reused_tokens == 97
    assert totals(database, a, "2026-12").reused_tokens == 0
    kept = rows(database, a)
    system = kept[SYSTEM["content"]]
    assert (system.kind, system.tokens, system.times_seen, system.times_reused) == ("system", 20, 4, 1)
    order = kept["Where is my order 1?"]
    assert (order.kind, order.tokens, order.times_seen, order.times_reused) == ("prompt", 30, 2, 1)
    assert (order.first_seen, order.last_seen) == (datetime(2026, 11, 3, tzinfo=UTC),) * 2
    with database.session() as session:
        top = most_repeated(session, tenant_id=a, month="2026-11")
    # By tokens x repeats: the system prompt 20 x 3, the shoes 35 x 1, the order 30 x 1, hello 12 x 1.
    assert [(r.preview, r.tokens * (r.times_seen - 1)) for r in top] == [
        (SYSTEM["content"], 60), ("Can I return shoes?", 35), ("Where is my order 1?", 30), ("hello", 12)]


async def test_the_cap_keeps_the_most_repeated(database):
    a = tenant(database, "capped")
    recorder = PrefixRecorder(database, PrefixConfig(cap=3), count=count)
    for question, times in (("often", 3), ("twice", 2)):
        for day in range(1, times + 1):
            recorder.observe(chat(a, question, 10, system=False, day=day))
    await recorder.flush()
    for day, question in enumerate(("once a", "once b", "once c"), start=5):
        recorder.observe(chat(a, question, 10, system=False, day=day))
    await recorder.flush()
    kept = rows(database, a)
    assert set(kept) == {"often", "twice", "once c"}  # the newest of the unrepeated stays
    assert (kept["often"].times_seen, kept["twice"].times_seen) == (3, 2)
    assert totals(database, a).distinct == 3 and totals(database, a).reused_tokens == 30  # 2 + 1 repeats x 10
    recorder.observe(chat(a, "with a system prompt", 30, day=9))  # two prefixes at once: still 3 kept
    await recorder.flush()
    assert len(rows(database, a)) == 3 and {"often", "twice"} <= set(rows(database, a))


async def test_tenants_never_see_each_others_prompts(database):
    a, b = tenant(database, "a"), tenant(database, "b")
    recorder = PrefixRecorder(database, count=count)
    for _ in range(3):
        recorder.observe(chat(a, "A's secret plan", 40))
    recorder.observe(chat(b, "A's secret plan", 40))  # the same text: new to b
    recorder.observe(chat(b, "B's question", 15, system=False))
    await recorder.flush()
    assert totals(database, a).reused_tokens == 80 and totals(database, b).reused_tokens == 0
    with database.session() as session:
        assert most_repeated(session, tenant_id=b, month="2026-11") == []
    assert set(rows(database, b)) == {"A's secret plan", SYSTEM["content"], "B's question"}
    assert all(r.tenant_id == b and r.times_seen == 1 for r in rows(database, b).values())
    assert "B's question" not in rows(database, a)


async def test_a_system_prompt_no_version_can_count_is_estimated_from_its_characters(database):
    a = tenant(database, "estimated")
    recorder = PrefixRecorder(database, count=count)
    seen = chat(a, "x" * len(SYSTEM["content"]), 50, version=None)  # half the characters are the system prompt
    recorder.observe(seen)
    await recorder.flush()
    assert rows(database, a)[SYSTEM["content"]].tokens == 25


async def test_the_buffer_is_bounded_and_off_means_off(database):
    a = tenant(database, "busy")
    recorder = PrefixRecorder(database, PrefixConfig(max_pending=2), count=count)
    for i in range(3):
        recorder.observe(chat(a, f"q{i}", 5))
    assert (recorder.pending, recorder.dropped) == (2, 1)
    off = PrefixRecorder(database, PrefixConfig(cap=0), count=count)
    off.observe(chat(a, "q", 5))
    assert off.pending == 0


async def test_a_failed_flush_is_tried_once_more_then_given_up(tmp_path, database):
    empty = Database(f"sqlite:///{tmp_path / 'no-tables.db'}")  # no prompt_prefixes table: every write fails
    try:
        recorder = PrefixRecorder(empty, count=count)
        recorder.observe(chat("t", "q", 5))
        assert await recorder.flush() == 0 and recorder.pending == 1  # kept for the next flush
        assert await recorder.flush() == 0 and recorder.pending == 0  # then given up
    finally:
        empty.dispose()


async def test_two_gateways_flushing_at_once_agree_on_what_was_seen(database):
    a = tenant(database, "shared")
    first, second = PrefixRecorder(database, count=count), PrefixRecorder(database, count=count)
    first.observe(chat(a, "same", 30, system=False))
    second.observe(chat(a, "same", 30, system=False))
    await asyncio.gather(first.flush(), second.flush())
    while first.pending or second.pending:  # SQLite may refuse one writer; it goes again on its next flush
        await asyncio.gather(first.flush(), second.flush())
    same = rows(database, a)["same"]
    assert (same.times_seen, same.times_reused) == (2, 1)
