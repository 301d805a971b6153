"""A batch's usage: each recorded line adds what the ledger billed for its request id (or, before its row
lands, what its answer reported), once, however often the line is recorded."""
from __future__ import annotations

from gateway.batch.ids import line_request_id
from gateway.crud import batches
from gateway.db.models.usage import Usage
from gateway.db.types import utcnow
from gateway.domain.batch_usage import LineUsage
from tests.gateway.batch.test_runner import get, make_batch

CHAT = {"usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16,
                  "prompt_tokens_details": {"cached_tokens": 4}}}


def test_of_body_reads_openai_usage_and_zero_without_it():
    assert LineUsage.of_body(CHAT) == LineUsage(11, 4, 5)
    assert LineUsage.of_body({"usage": {"prompt_tokens": 7, "total_tokens": 7}}) == LineUsage(7, 0, 0)  # embeddings
    assert LineUsage.of_body({"error": {"message": "no"}}) == LineUsage()
    assert LineUsage.of_body({"usage": {"prompt_tokens": -3, "completion_tokens": "9"}}) == LineUsage()


def _record(database, batch_id: str, line: int, answered: LineUsage) -> bool:
    with database.session() as s:
        return batches.record_line(s, batch_id=batch_id, line=line, ok=True, output=b"{}", now=utcnow(),
                                   request_id=line_request_id(batch_id, line), answered=answered)


def test_usage_is_the_ledgers_and_a_line_counts_once(database):
    batch_id, key_id = make_batch(database, 3)
    b = get(database, batch_id)
    with database.session() as s:  # line 0 was billed by an earlier attempt, whose answer differed
        s.add(Usage(request_id=line_request_id(batch_id, 0), tenant_id=b.tenant_id, key_id=key_id,
                    endpoint="/v1/chat/completions", model="m", prompt_tokens=20, completion_tokens=9,
                    cached_tokens=2, currency="USD", status="ok", kind="batch"))
        s.commit()
    assert _record(database, batch_id, 0, LineUsage(11, 4, 5))
    assert _record(database, batch_id, 1, LineUsage(11, 4, 5))  # its ledger row not landed yet: the answer's
    assert not _record(database, batch_id, 1, LineUsage(11, 4, 5))  # recorded again (a resume): not added
    b = get(database, batch_id)
    assert (b.input_tokens, b.cached_tokens, b.output_tokens, b.completed) == (31, 6, 14, 2)
