"""The upload form parser: what httpx (as the SDK) sends, and what it refuses with a 400."""
from __future__ import annotations

import httpx
import pytest

from gateway.api.v1.batches.multipart import parse_form
from gateway.domain.errors import APIError


def encoded(data: dict, files: dict) -> tuple[str, bytes]:
    request = httpx.Request("POST", "http://x/v1/files", data=data, files=files)
    return request.headers["content-type"], request.read()


def test_fields_and_files_as_the_sdk_sends_them():
    payload = b'{"a": 1}\r\n--not-the-boundary\r\n\x00\xff'
    ct, body = encoded({"purpose": "batch"}, {"file": ("r\u00e9quests.jsonl", payload, "application/jsonl")})
    form = parse_form(ct, body)
    assert form["purpose"].text() == "batch" and form["purpose"].filename is None
    assert form["file"].data == payload and form["file"].filename == "r\u00e9quests.jsonl"


@pytest.mark.parametrize("ct, body", [
    ("application/json", b"{}"),
    ("multipart/form-data", b"--x\r\n"),
    ("multipart/form-data; boundary=x", b"--x\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n"),
    ("multipart/form-data; boundary=x", b"--x\r\nContent-Type: text/plain\r\n\r\nv\r\n--x--\r\n"),
    ("multipart/form-data; boundary=x", b"--xjunk\r\n--x--"),
])
def test_malformed_forms_are_400(ct, body):
    with pytest.raises(APIError) as e:
        parse_form(ct, body)
    assert e.value.status == 400
