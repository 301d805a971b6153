"""multipart/form-data, parsed from a body already read whole (its size was bounded before): the fields and
files of an upload. Strict and small, so uploads need no extra dependency."""
from __future__ import annotations

from dataclasses import dataclass
from email.message import Message

from gateway.api.errors import invalid_request


@dataclass(frozen=True, slots=True)
class Part:
    name: str
    filename: str | None  # None: a plain field
    data: bytes

    def text(self) -> str:
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            raise invalid_request(f"{self.name}: not UTF-8 text.", param=self.name) from None


def _header(name: str, value: str) -> Message:
    msg = Message()
    msg[name] = value
    return msg


def parse_form(content_type: str, body: bytes) -> dict[str, Part]:
    """Each part by name (the first of a repeated name); a 400 for anything that is not multipart/form-data."""
    ct = _header("content-type", content_type or "")
    boundary = ct.get_param("boundary") if ct.get_content_type() == "multipart/form-data" else None
    if not isinstance(boundary, str) or not boundary:
        raise invalid_request("The request must be multipart/form-data (with a boundary), as the SDK sends files.")
    delimiter = b"--" + boundary.encode("latin-1")
    chunks = body.split(delimiter)
    if len(chunks) < 3 or not chunks[-1].startswith(b"--"):
        raise invalid_request("The multipart body is malformed (no closing boundary).")
    parts: dict[str, Part] = {}
    for chunk in chunks[1:-1]:
        if not chunk.startswith(b"\r\n"):
            raise invalid_request("The multipart body is malformed.")
        head, sep, data = chunk[2:].partition(b"\r\n\r\n")
        if not sep or not data.endswith(b"\r\n"):
            raise invalid_request("The multipart body is malformed (a part without headers or end).")
        part = _part(_text(head), data[:-2])
        parts.setdefault(part.name, part)
    return parts


def _text(head: bytes) -> str:
    """Part headers: UTF-8 as browsers and httpx send file names (RFC 7578), else Latin-1."""
    try:
        return head.decode("utf-8")
    except UnicodeDecodeError:
        return head.decode("latin-1")


def _part(head: str, data: bytes) -> Part:
    for line in head.split("\r\n"):
        key, _, value = line.partition(":")
        if key.strip().lower() == "content-disposition":
            disposition = _header("content-disposition", value.strip())
            name = disposition.get_param("name", header="content-disposition")
            if isinstance(name, str) and name:
                return Part(name, disposition.get_filename(), data)
    raise invalid_request("A multipart part has no Content-Disposition name.")
