"""How many rows an UPDATE or DELETE matched."""
from __future__ import annotations

from typing import Any, cast

from sqlalchemy import CursorResult


def rowcount(result: object) -> int:
    """Session.execute types every result as a plain Result; a DML statement's is a CursorResult, which
    counts the rows the statement matched."""
    return cast(CursorResult[Any], result).rowcount
