"""HTML form fields into the admin API's own bodies, so a form is checked exactly as a JSON request is."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from gateway.domain.errors import APIError


class FormError(Exception):
    """A form the API's schema refuses, in words for the page."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def blank_is_none(form: dict[str, str], fields: tuple[str, ...]) -> dict[str, Any]:
    """The named fields, stripped; an empty box means no value (no limit)."""
    return {f: (form.get(f, "").strip() or None) for f in fields if f in form}


def parse(schema: type[BaseModel], values: dict[str, Any]) -> BaseModel:
    try:
        return schema.model_validate(values)
    except ValidationError as e:
        raise FormError("; ".join(f"{'.'.join(str(p) for p in err['loc']) or 'form'}: {err['msg']}"
                                  for err in e.errors())) from e


def in_words(error: APIError | FormError) -> str:
    """An API error as the page shows it: its message, and the field it names."""
    if isinstance(error, FormError):
        return error.message
    return f"{error.message} (field: {error.param})" if error.param else error.message


def page_of(rows: list, page: int, size: int) -> tuple[list, int, int]:
    """(rows of page `page`, that page clamped to 1..pages, number of pages)."""
    pages = max(1, -(-len(rows) // size))
    page = min(max(1, page), pages)
    return rows[(page - 1) * size: page * size], page, pages
