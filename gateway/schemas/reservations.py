"""Reserved throughput shapes: POST/GET/DELETE /admin/tenants/{id}/reservations."""
from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from gateway.schemas.billing import Money

# 8 integer digits, as prices: exact money is stored as 1e-10 units in a 64-bit integer on SQLite.
Fee = Annotated[Decimal, Field(ge=0, max_digits=18, decimal_places=10, allow_inf_nan=False)]


class ReservationCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: Annotated[str, Field(min_length=1, max_length=200)]  # a priced model of the catalogue
    output_tokens_per_s: Annotated[float, Field(gt=0, le=1e9, allow_inf_nan=False)]
    monthly_fee: Fee


class ReservationOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    object: str = "reservation"
    id: str
    tenant_id: str
    model: str
    output_tokens_per_s: float
    monthly_fee: Money
    created_at: datetime
    ended_at: datetime | None  # None: active


class ReservationList(BaseModel):
    object: str = "list"
    data: list[ReservationOut]
