"""The gateway's component configs validate declaratively: `@config(slots=True)` in place of
`@dataclass(slots=True)` makes a pydantic dataclass that checks each field's type (strictly: no string for a
number, no bool for a count) and its range, declared on the field, at construction; only rules between fields stay
in `__post_init__`. A bad value is a ValueError (pydantic's ValidationError) naming the field and its bound."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Annotated, Any, TypeVar, dataclass_transform

from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass

T = TypeVar("T")


@dataclass_transform(field_specifiers=(dataclasses.field, Field))
def config(**dataclass_kw: Any) -> Callable[[type[T]], type[T]]:
    """`@config(slots=True)`: a strict pydantic dataclass (typed as one, so the type checker reads its fields)."""
    return dataclass(config=ConfigDict(strict=True), **dataclass_kw)  # type: ignore[no-any-return]

Count = Annotated[int, Field(ge=1)]  # at least one
Seconds = Annotated[float, Field(gt=0)]  # a positive duration
NonNegativeSeconds = Annotated[float, Field(ge=0)]
