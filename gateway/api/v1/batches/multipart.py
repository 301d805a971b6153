"""multipart/form-data, parsed from a body already read whole (its size was bounded before) with python-multipart
(the parser Starlette's own forms use): the fields and files of an upload, each part's bytes kept in memory."""
from __future__ import annotations

from dataclasses import dataclass, field

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from gateway.domain.errors import invalid_request


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


@dataclass(slots=True)
class _Collector:
    """python-multipart's callbacks, gathering parts by name (the first of a repeated name)."""

    parts: dict[str, Part] = field(default_factory=dict)
    ended: bool = False
    _headers: dict[bytes, bytes] = field(default_factory=dict)
    _field: bytes = b""
    _value: bytes = b""
    _data: list[bytes] = field(default_factory=list)

    def callbacks(self) -> dict:
        return {"on_part_begin": self._begin, "on_header_field": self._on_field, "on_header_value": self._on_value,
                "on_header_end": self._header_end, "on_part_data": self._on_data, "on_part_end": self._end,
                "on_end": self._on_end}

    def _begin(self) -> None:
        self._headers, self._data = {}, []

    def _on_field(self, data: bytes, start: int, end: int) -> None:
        self._field += data[start:end]

    def _on_value(self, data: bytes, start: int, end: int) -> None:
        self._value += data[start:end]

    def _header_end(self) -> None:
        self._headers[self._field.lower()] = self._value
        self._field = self._value = b""

    def _on_data(self, data: bytes, start: int, end: int) -> None:
        self._data.append(data[start:end])

    def _end(self) -> None:
        _, options = parse_options_header(self._headers.get(b"content-disposition", b""))
        name = options.get(b"name")
        if not name:
            raise invalid_request("A multipart part has no Content-Disposition name.")
        filename = options.get(b"filename")
        self.parts.setdefault(_text(name), Part(_text(name), None if filename is None else _text(filename),
                                                b"".join(self._data)))

    def _on_end(self) -> None:
        self.ended = True


def _text(raw: bytes) -> str:
    """Part headers: UTF-8 as browsers and httpx send file names (RFC 7578), else Latin-1."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def parse_form(content_type: str, body: bytes) -> dict[str, Part]:
    """Each part by name (the first of a repeated name); a 400 for anything that is not multipart/form-data."""
    kind, options = parse_options_header(content_type or "")
    boundary = options.get(b"boundary") if kind == b"multipart/form-data" else None
    if not boundary:
        raise invalid_request("The request must be multipart/form-data (with a boundary), as the SDK sends files.")
    collector = _Collector()
    try:
        parser = MultipartParser(boundary, collector.callbacks())
        parser.write(body)
        parser.finalize()
    except MultipartParseError as e:
        raise invalid_request(f"The multipart body is malformed: {e}") from None
    if not collector.ended:
        raise invalid_request("The multipart body is malformed (no closing boundary).")
    return collector.parts
