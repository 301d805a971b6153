"""Request headers the tenant API reads (never for limits: those key on the API key)."""
from __future__ import annotations

from typing import Annotated

from fastapi import Header

PinHeader = Annotated[str | None, Header(alias="x-tollgate-version", max_length=200)]  # serve this version
SessionHeader = Annotated[str | None, Header(alias="x-session-id", max_length=200)]  # stick to one version
