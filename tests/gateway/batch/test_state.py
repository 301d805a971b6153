"""The batch's states: the moves allowed, and where finalizing leads."""
from __future__ import annotations

from gateway.batch.ids import BATCH_ID, FILE_ID, line_output_id, line_request_id, new_batch_id, new_file_id
from gateway.batch.output import LineResult, answered, not_run
from gateway.domain import batch_state as state


def test_moves():
    assert state.can_move(state.VALIDATING, state.IN_PROGRESS)
    assert state.can_move(state.VALIDATING, state.FAILED)
    assert state.can_move(state.IN_PROGRESS, state.CANCELLING)
    assert state.can_move(state.CANCELLING, state.FINALIZING)
    assert not state.can_move(state.COMPLETED, state.CANCELLING)
    assert not state.can_move(state.CANCELLING, state.IN_PROGRESS)
    assert not state.can_move(state.IN_PROGRESS, state.COMPLETED)  # always through finalizing
    for terminal in state.TERMINAL:
        assert not any(state.can_move(terminal, to) for to in state.STAMP)


def test_outcome_cancel_wins():
    assert state.outcome(cancelled=True, expired=True) == state.CANCELLED
    assert state.outcome(cancelled=False, expired=True) == state.EXPIRED
    assert state.outcome(cancelled=False, expired=False) == state.COMPLETED


def test_ids_have_openai_shapes_and_line_ids_are_stable():
    assert FILE_ID.fullmatch(new_file_id()) and BATCH_ID.fullmatch(new_batch_id())
    assert line_request_id("batch_x", 3) == line_request_id("batch_x", 3) != line_request_id("batch_x", 4)
    assert line_request_id("batch_x", 3).startswith("req_") and len(line_request_id("batch_x", 3)) <= 64
    assert line_output_id("batch_x", 3).startswith("batch_req_")


def test_output_lines():
    import json
    ok = json.loads(answered("batch_x", 0, "c0", "req_1", LineResult(200, {"k": "é"})))
    assert ok == {"id": line_output_id("batch_x", 0), "custom_id": "c0", "error": None,
                  "response": {"status_code": 200, "request_id": "req_1", "body": {"k": "é"}}}
    late = json.loads(not_run("batch_x", 1, "c1", "batch_expired", "too late"))
    assert late["response"] is None and late["error"] == {"code": "batch_expired", "message": "too late"}
    assert not LineResult(429, {}).ok and LineResult(200, {}).ok
