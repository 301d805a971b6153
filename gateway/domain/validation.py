"""The gateway's component configs validate declaratively: `@config(slots=True)` in place of
`@dataclass(slots=True)` makes a pydantic dataclass that checks each field's type (strictly: no string for a
number, no bool for a count) and its range, declared on the field, at construction; only rules between fields stay
in `__post_init__`. A bad value is a ValueError (pydantic's ValidationError) naming the field and its bound."""
from __future__ import annotations

import functools
from typing import Annotated

from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass

config = functools.partial(dataclass, config=ConfigDict(strict=True))

Count = Annotated[int, Field(ge=1)]  # at least one
Seconds = Annotated[float, Field(gt=0)]  # a positive duration
NonNegativeSeconds = Annotated[float, Field(ge=0)]
