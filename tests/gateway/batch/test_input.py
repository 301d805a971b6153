"""Input files: JSONL checks (what an upload must be), per-line request checks (what a batch must find), both in
one pass keeping nothing parsed, and the runner's unparsed lines."""
from __future__ import annotations

import json

import pytest

from gateway.batch.input import MAX_ERRORS, InvalidInput, check_jsonl, lines_of, request_lines

EP = "/v1/chat/completions"


def line(custom_id="a", **over) -> dict:
    return {"custom_id": custom_id, "method": "POST", "url": EP, "body": {"model": "m", "messages": []}, **over}


def raw(*lines) -> bytes:
    return "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines).encode()


def codes(e: InvalidInput) -> list[tuple[int | None, str]]:
    return [(x.line, x.code) for x in e.errors]


def test_lines_keep_their_file_line_numbers_and_blank_lines_are_skipped():
    content = raw(line("a"), "", "  ", line("b")) + b"\n"
    assert [n for n, _ in lines_of(content)] == [1, 4]
    assert check_jsonl(content, max_lines=10) == check_jsonl(content, max_lines=10, endpoint=EP) == 2
    reqs = [x.request() for x in request_lines(content)]
    assert [(r.index, r.line, r.custom_id) for r in reqs] == [(0, 1, "a"), (1, 4, "b")]
    (rest,) = request_lines(content, skip={0})  # a resumed batch: the lines done are skipped, unparsed
    assert (rest.index, rest.line, rest.request().body) == (1, 4, line("b")["body"])


@pytest.mark.parametrize("content, expected", [
    (b"", [(None, "empty_file")]),
    (b"{]\n{}\n7\n", [(1, "invalid_json_line"), (3, "invalid_json_line")]),
    (b"\xc3\x28", [(None, "invalid_file_format")]),
])
def test_what_is_not_jsonl_of_objects(content, expected):
    with pytest.raises(InvalidInput) as e:
        check_jsonl(content, max_lines=10)
    assert codes(e.value) == expected


def test_too_many_requests():
    with pytest.raises(InvalidInput) as e:
        check_jsonl(raw(*[line(str(i)) for i in range(4)]), max_lines=3)
    assert codes(e.value) == [(None, "too_many_requests")]


def test_every_bad_line_is_named():
    lines = [line("a"), line("a"), line(""), line("b", method="PUT"), line("c", url="/v1/embeddings"),
             line("d", body=[1]), line("e", body={"messages": []}), line("f", body={"model": "m", "stream": True}),
             line("g", body={"model": "other"}), line("h", body={"model": "m", "stream": False})]
    with pytest.raises(InvalidInput) as e:
        check_jsonl(raw(*lines), max_lines=100, endpoint=EP)
    assert codes(e.value) == [(2, "duplicate_custom_id"), (3, "missing_required_parameter"), (4, "invalid_value"),
                              (5, "invalid_url"), (6, "invalid_value"), (7, "missing_required_parameter"),
                              (8, "invalid_value"), (9, "mismatched_model")]
    assert [x.param for x in e.value.errors][:2] == ["custom_id", "custom_id"]


def test_errors_are_capped():
    with pytest.raises(InvalidInput) as e:
        check_jsonl(raw(*[line("x")] * (MAX_ERRORS + 50)), max_lines=10_000, endpoint=EP)
    assert len(e.value.errors) == MAX_ERRORS


def test_validation_keeps_no_parsed_line():
    """Small nested objects: checking them holds one at a time (and the custom_ids), not the whole file parsed."""
    import tracemalloc
    nested = {"custom_id": "x", "method": "POST", "url": EP,
              "body": {"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "t"}] * 20}]}}
    content = b"\n".join(json.dumps({**nested, "custom_id": f"c{i}"}).encode() for i in range(3_000))
    tracemalloc.start()
    try:
        assert check_jsonl(content, max_lines=50_000, endpoint=EP) == 3_000
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < len(content) // 2, (peak, len(content))  # the custom_id set and one line, not every object
