"""Admin API bodies. Unknown fields are refused (extra="forbid"): a typo must not be ignored."""
from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from gateway.domain.tiers import Tier, check_tiers, flat
from gateway.schemas.billing import Money

INT32_MAX, INT64_MAX = 2**31 - 1, 2**63 - 1
Limit = Annotated[int, Field(ge=1, le=INT32_MAX)]
Budget = Annotated[int, Field(ge=0, le=INT64_MAX)]
Count = Annotated[int, Field(ge=0, le=INT32_MAX)]
# 8 integer digits: exact money is stored as 1e-10 units in a 64-bit integer on SQLite.
PerMillion = Annotated[Decimal, Field(ge=0, max_digits=18, decimal_places=10, allow_inf_nan=False)]
# No control characters (PostgreSQL refuses NUL in text), no whitespace at either end.
Name = Annotated[str, Field(min_length=1, max_length=200,
                            pattern=r"^[^\s\x00-\x1f\x7f]([^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f])?$")]


def _in_utc(when: datetime) -> datetime:
    """Naive means UTC. An offset can carry a valid local time past year 9999 (or before year 1) in UTC,
    where Python's datetime cannot follow: refused here, not as an OverflowError at the database."""
    if when.tzinfo is None:
        return when.replace(tzinfo=UTC)
    try:
        return when.astimezone(UTC)
    except OverflowError:
        raise ValueError("must fall between 0001-01-01 and 9999-12-31 in UTC") from None


Instant = Annotated[datetime, AfterValidator(_in_utc)]  # always timezone-aware UTC


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CacheSettings(_Body):
    cache_enabled: bool | None = None
    cache_allow_sampling: bool | None = None
    cache_threshold: Annotated[float, Field(gt=0, le=1)] | None = None
    cache_ttl_s: Count | None = None
    cache_max_entries: Count | None = None


class SchedulingPlan(_Body):
    # Lower runs earlier in the engines' queues; a request may ask for a higher number, never a lower one.
    priority: Annotated[int, Field(ge=-1000, le=1000)] | None = None
    share_weight: Annotated[float, Field(gt=0, le=1000)] | None = None  # fair share relative to other tenants
    # The commercial plan ("free", "pro"...), which routing rules may match on; null: none.
    plan: Annotated[str, Field(min_length=1, max_length=64)] | None = None


def check_default_within_cap(cap: int | None, default: int | None) -> None:
    """ValueError when a default would ask for more than the cap allows."""
    if cap is not None and default is not None and default > cap:
        raise ValueError(f"default_max_tokens ({default}) exceeds max_output_tokens ({cap})")


class OutputCaps(_Body):
    """The most tokens a request may ask for (`max_output_tokens`) and what one naming none gets
    (`default_max_tokens`); `output_cap_mode`: `reject` a request over the cap (400) or `clamp` it to the cap."""
    max_output_tokens: Limit | None = None
    default_max_tokens: Limit | None = None
    output_cap_mode: Literal["reject", "clamp"] | None = None

    @model_validator(mode="after")
    def _default_within_cap(self):
        check_default_within_cap(self.max_output_tokens, self.default_max_tokens)
        return self


class TenantCreate(CacheSettings, SchedulingPlan, OutputCaps):
    name: Name
    rpm: Limit | None = None
    tpm: Limit | None = None
    monthly_token_budget: Budget | None = None
    files_max_bytes: Budget | None = None  # Batch API file storage; null: the gateway's default


_NOT_NULL = ("name", "status", "cache_enabled", "cache_allow_sampling", "priority", "share_weight",
             "output_cap_mode")


class TenantUpdate(CacheSettings, SchedulingPlan, OutputCaps):
    """Only the fields sent change; null clears a limit or cache override."""
    name: Name | None = None
    status: Literal["active", "disabled"] | None = None
    rpm: Limit | None = None
    tpm: Limit | None = None
    monthly_token_budget: Budget | None = None
    files_max_bytes: Budget | None = None  # null: back to the gateway's files_max_bytes_per_tenant

    @field_validator(*_NOT_NULL)
    @classmethod
    def _required_not_null(cls, value, info):
        # Runs only for fields the body sent: absent means unchanged, null is refused, naming the field.
        if value is None:
            raise ValueError(f"{info.field_name} cannot be null")
        return value


class TenantOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    object: str = "tenant"
    id: str
    name: str
    status: str
    rpm: int | None
    tpm: int | None
    monthly_token_budget: int | None
    cache_enabled: bool
    cache_allow_sampling: bool
    cache_threshold: float | None
    cache_ttl_s: int | None
    cache_max_entries: int | None
    priority: int
    share_weight: float
    plan: str | None = None
    files_max_bytes: int | None = None
    max_output_tokens: int | None = None
    default_max_tokens: int | None = None
    output_cap_mode: str = "reject"
    created_at: datetime


class TenantList(BaseModel):
    object: str = "list"
    data: list[TenantOut]


class KeyCreate(_Body):
    models: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)] | None = None
    expires_at: Instant | None = None
    rpm: Limit | None = None
    tpm: Limit | None = None
    # The key's own output caps, within its tenant's (the stricter cap applies; the tenant's mode).
    max_output_tokens: Limit | None = None
    default_max_tokens: Limit | None = None

    @model_validator(mode="after")
    def _default_within_cap(self):
        check_default_within_cap(self.max_output_tokens, self.default_max_tokens)
        return self


class KeyOut(BaseModel):
    """A key as listed: never the secret."""
    model_config = ConfigDict(from_attributes=True)

    object: str = "api_key"
    id: str
    tenant_id: str
    prefix: str
    models: list[str] | None
    rpm: int | None
    tpm: int | None
    max_output_tokens: int | None = None
    default_max_tokens: int | None = None
    expires_at: datetime | None
    revoked_at: datetime | None
    created_at: datetime
    last_used_at: datetime | None


class KeyCreated(KeyOut):
    key: str  # shown once, here only


class KeyList(BaseModel):
    object: str = "list"
    data: list[KeyOut]


class PriceTierIn(_Body):
    up_to: Annotated[int, Field(ge=1, le=INT64_MAX)] | None  # monthly tokens of the model (input + output)
    input_per_million: PerMillion
    output_per_million: PerMillion


class PriceSet(_Body):
    input_per_million: PerMillion
    output_per_million: PerMillion
    cached_input_per_million: PerMillion = Decimal(0)
    cached_output_per_million: PerMillion = Decimal(0)
    effective_from: Instant | None = None  # default: now
    # Monthly volume tiers: ascending up_to, the last null; the first tier's prices are the flat fields'.
    tiers: Annotated[list[PriceTierIn], Field(min_length=1, max_length=32)] | None = None

    @model_validator(mode="after")
    def _tiers_fit(self):
        if self.tiers is not None:
            check_tiers(self.tier_list(), input_per_million=self.input_per_million,
                        output_per_million=self.output_per_million)  # TierError is a ValueError: a 400
        return self

    def tier_list(self) -> tuple[Tier, ...]:
        if self.tiers is None:
            return flat(self.input_per_million, self.output_per_million)
        return tuple(Tier(t.up_to, t.input_per_million, t.output_per_million) for t in self.tiers)


class PriceTierOut(BaseModel):
    up_to: int | None
    input_per_million: Money
    output_per_million: Money


class PriceOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    object: str = "price"
    model: str
    input_per_million: Money
    output_per_million: Money
    cached_input_per_million: Money
    cached_output_per_million: Money
    effective_from: datetime
    current: bool = False  # the price in effect now
    tiers: list[PriceTierOut] | None = None  # None: flat


class PriceList(BaseModel):
    object: str = "list"
    data: list[PriceOut]
