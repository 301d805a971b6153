"""Declarative validation for the workers' request and config types: fields carry their own types and ranges
(`Annotated[int, Field(ge=1)]`, `Literal[...]`), checked by pydantic in strict mode at construction (no bool for
an int, no string for a number, no NaN); only rules between fields are code. A bad value is a ValueError of one
line per field, naming it: these messages reach API clients as 400s, so they carry no pydantic boilerplate.

Two forms: `@validated(slots=True)` for configs (a pydantic dataclass: still the one `@dataclass` per component),
and `Checked` for the per-request types (SamplingParams, ScheduleParams): a pydantic model, which constructs as
fast as the hand-written checks did, where a pydantic dataclass takes about twice as long
(benchmarks/sampling_params_construction.py)."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.dataclasses import dataclass as _pydantic_dataclass

T = TypeVar("T")
_STRICT = ConfigDict(strict=True, arbitrary_types_allowed=True)


@dataclass_transform()
def validated(**dataclass_kw: Any) -> Callable[[type[T]], type[T]]:
    """`@validated(slots=True)` in place of `@dataclass(slots=True)`: the same class, validated on construction."""
    def wrap(cls: type[T]) -> type[T]:
        cls = _pydantic_dataclass(cls, config=_STRICT, **dataclass_kw)  # type: ignore[assignment]
        init = cls.__init__

        @functools.wraps(init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            try:
                init(self, *args, **kwargs)
            except ValidationError as e:
                raise ValueError(one_line(e)) from e

        cls.__init__ = __init__  # type: ignore[method-assign]
        return cls
    return wrap


class Checked(BaseModel):
    """A per-request value type: keyword construction, validated; equal when its fields are."""

    model_config = ConfigDict(strict=True, arbitrary_types_allowed=True)

    def __init__(self, **data: Any) -> None:
        try:
            self.__pydantic_validator__.validate_python(data, self_instance=self)  # BaseModel.__init__'s one step
        except ValidationError as e:
            raise ValueError(one_line(e)) from e


def one_line(error: ValidationError) -> str:
    """'top_p: Input should be less than or equal to 1 (got 2); n: ...', or a cross-field rule's own message."""
    parts = []
    for e in error.errors(include_url=False):
        where = ".".join(str(part) for part in e["loc"])
        message = e["msg"].removeprefix("Value error, ")
        if e["type"] == "value_error":  # a validator's own message: it says what it got
            parts.append(message if not where or message.startswith(where) else f"{where}: {message}")
        else:
            parts.append(f"{where}: {message} (got {_short(e['input'])})")
    return "; ".join(parts)


def _short(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
