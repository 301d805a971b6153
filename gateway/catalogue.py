"""The model catalogue (one YAML file): models, versions, prices, replicas, aliases."""
from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
import itertools


class CatalogueError(ValueError):
    """The catalogue is invalid; the message names the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PriceTier(_Strict):
    up_to: int | None = Field(ge=1)  # the tenant's monthly tokens of the model this tier ends at; null: no end
    input_per_million: float = Field(ge=0)
    output_per_million: float = Field(0.0, ge=0)


class Price(_Strict):
    input_per_million: float = Field(ge=0)
    output_per_million: float = Field(0.0, ge=0)
    cached_input_per_million: float = Field(0.0, ge=0)
    # Batch API lines cost the interactive price times (1 - batch_discount).
    batch_discount: float = Field(0.5, ge=0, le=1)
    # Monthly volume tiers (gateway.domain.tiers): ascending up_to, the last null, the first at the flat prices.
    tiers: list[PriceTier] | None = None

    @model_validator(mode="after")
    def _tiers(self) -> Price:
        if not self.tiers:
            return self
        first = self.tiers[0]
        if (first.input_per_million, first.output_per_million) != (self.input_per_million, self.output_per_million):
            raise ValueError("tiers[0] must carry the flat input_per_million and output_per_million")
        ends = [t.up_to for t in self.tiers]
        if ends[-1] is not None or None in ends[:-1] or any(a >= b for a, b in itertools.pairwise(ends[:-1])):
            raise ValueError("tiers: up_to must ascend, and only the last tier's is null")
        return self


class Replicas(_Strict):
    min: int = Field(1, ge=0)
    max: int = Field(1, ge=1)
    standby: int = Field(0, ge=0)
    target_ongoing_requests: float = Field(16, gt=0)
    upscale_delay_s: float = Field(5.0, ge=0)
    downscale_delay_s: float = Field(60.0, ge=0)
    num_cpus: float = Field(1.0, ge=0)  # Ray CPUs reserved per replica
    num_gpus: float = Field(0.0, ge=0)  # Ray GPUs per replica; the engine then runs on CUDA (kernels: Triton)
    max_queued_requests: int = Field(256, ge=-1)  # per gateway; beyond it a version is "overloaded"

    @model_validator(mode="after")
    def _bounds(self) -> Replicas:
        if self.min > self.max:
            raise ValueError(f"replicas.min ({self.min}) exceeds replicas.max ({self.max})")
        if self.max_queued_requests == 0:
            raise ValueError("replicas.max_queued_requests must be >= 1, or -1 for unbounded")
        return self


class HardwareCost(_Strict):
    """What one replica of a version costs to keep up (MaaS economics). The baseline of the version's cost
    history: later prices go through PUT /admin/versions/{version}/cost."""

    per_replica_hour: float = Field(ge=0)  # in the gateway's currency
    hardware: str = ""  # for people: "2 vCPU", "1×H100"


class TokenCost(_Strict):
    """What an external upstream charges the operator for a version's tokens (provider prices)."""

    input_per_million: float = Field(ge=0)
    output_per_million: float = Field(0.0, ge=0)


class UpstreamSpec(_Strict):
    """An external server the gateway calls for some versions (gateway/upstreams). An OpenAI-protocol
    base_url includes /v1 (as clients write it); an Anthropic-protocol one is the host root."""

    protocol: Literal["openai", "anthropic"]
    base_url: str
    api_key_env: str | None = None  # the environment variable holding its key (read by Settings' owner only)
    timeout_s: float = Field(60.0, gt=0)  # the whole request, first byte to last
    connect_timeout_s: float = Field(5.0, gt=0)  # a down upstream fails within this (no hang)
    first_token_timeout_s: float | None = Field(None, gt=0)  # None: timeout_s
    idle_timeout_s: float | None = Field(None, gt=0)  # between two streamed events; None: timeout_s
    max_concurrency: int | None = Field(None, ge=1)  # beyond it a version is "overloaded" (fallbacks)
    connect_retries: int = Field(1, ge=0)  # retried only when the connection failed (nothing was sent)

    @field_validator("base_url")
    @classmethod
    def _http(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError("base_url must start with http:// or https://")
        return v.rstrip("/")


class VersionSpec(_Strict):
    engine: dict = Field(default_factory=dict)  # EngineConfig overrides
    replicas: Replicas = Replicas()
    # Pool versions: replica-hours; upstream versions: the provider's token prices. None: unknown (unpriced).
    cost: HardwareCost | TokenCost | None = None
    upstream: str | None = None  # an `upstreams:` name: this version is served there, not by the pool
    model: str | None = None  # the upstream's own model id (never shown to clients)
    max_model_len: int = Field(32_768, ge=1)  # upstream versions: the context the gateway admits against
    tokenizer: str | None = None  # upstream versions: a local model whose tokenizer estimates tokens
    # Pool versions: output tokens/s one replica delivers at a full batch (the engine benchmark's figure for this
    # version on its hardware): the capacity reservations are checked against before any traffic is measured
    # (gateway/economics/capacity.py). None: unknown (no reservation can count on it until measured).
    benchmark_output_tokens_per_s: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _gpu_needs_gpus(self) -> VersionSpec:
        device = str(self.engine.get("device") or "")
        if device.startswith("cuda") and self.replicas.num_gpus == 0:
            raise ValueError("engine.device is cuda: replicas.num_gpus must ask Ray for a GPU")
        return self

    @model_validator(mode="after")
    def _upstream_or_pool(self) -> VersionSpec:
        if self.upstream is None:
            if self.model is not None:
                raise ValueError("model names an upstream's model id: set upstream too")
            if isinstance(self.cost, TokenCost):
                raise ValueError("cost: a pool version costs per_replica_hour")
            return self
        if not self.model:
            raise ValueError(f"an upstream version needs model: the id {self.upstream!r} knows it by")
        if self.engine or "replicas" in self.model_fields_set:
            raise ValueError("an upstream version takes no engine: or replicas:")
        if isinstance(self.cost, HardwareCost):
            raise ValueError("cost: an upstream version costs input_per_million/output_per_million")
        return self

    @property
    def is_upstream(self) -> bool:
        return self.upstream is not None


class ModelSpec(_Strict):
    weights: str | None = None  # None only when every version is an upstream's
    price: Price
    versions: dict[str, VersionSpec]

    @field_validator("versions")
    @classmethod
    def _some_versions(cls, v: dict[str, VersionSpec]) -> dict[str, VersionSpec]:
        if not v:
            raise ValueError("a model needs at least one version")
        if any("@" in name for name in v):
            raise ValueError("version names must not contain '@'")
        return v

    @model_validator(mode="after")
    def _weights_for_pool(self) -> ModelSpec:
        if self.weights is None and any(not v.is_upstream for v in self.versions.values()):
            raise ValueError("weights: required when a version runs in the pool")
        return self


class EmbeddingSpec(_Strict):
    price: Price
    upstream: str | None = None  # an OpenAI-protocol upstream serves it (POST {base_url}/embeddings); None: local
    model: str | None = None  # the upstream's model id
    cost: TokenCost | None = None  # the provider's price (input_per_million)

    @model_validator(mode="after")
    def _upstream_model(self) -> EmbeddingSpec:
        if (self.upstream is None) != (self.model is None):
            raise ValueError("an upstream embedding model needs both upstream and model")
        return self


class AliasSpec(_Strict):
    weights: dict[str, int]  # version -> share of traffic (percent)
    fallbacks: list[str] = Field(default_factory=list)  # versions, models or aliases, tried in order
    stable: str | None = None  # where a rollback sends traffic; None: the heaviest version

    @model_validator(mode="after")
    def _stable_in_weights(self) -> AliasSpec:
        if self.stable is not None and self.stable not in self.weights:
            raise ValueError(f"stable {self.stable!r} is not one of the weighted versions")
        return self

    @property
    def stable_version(self) -> str:
        # Ties go to the first listed, so the choice is stable across reloads.
        return self.stable or max(self.weights, key=lambda v: (self.weights[v], -list(self.weights).index(v)))

    @field_validator("weights")
    @classmethod
    def _sum_100(cls, v: dict[str, int]) -> dict[str, int]:
        if any(w < 0 for w in v.values()):
            raise ValueError("weights must be >= 0")
        if sum(v.values()) != 100:
            raise ValueError(f"weights must sum to 100, got {sum(v.values())}")
        return v


class ClassifierSpec(_Strict):
    """The task classifier routing rules may use (gateway.routing.classifier)."""

    file: str  # labelled JSON lines ({"text", "label"}); a relative path is read beside the catalogue
    threshold: float = Field(0.3, ge=-1, le=1)  # below this cosine to the nearest centroid: class unknown


class RoutingSpec(_Strict):
    classifier: ClassifierSpec | None = None


class Catalogue(_Strict):
    models: dict[str, ModelSpec]
    upstreams: dict[str, UpstreamSpec] = Field(default_factory=dict)
    embeddings: dict[str, EmbeddingSpec] = Field(default_factory=dict)
    aliases: dict[str, AliasSpec] = Field(default_factory=dict)
    routing: RoutingSpec = RoutingSpec()

    @model_validator(mode="after")
    def _references(self) -> Catalogue:
        for name, _, spec in self._versions():
            if spec.upstream is not None and spec.upstream not in self.upstreams:
                raise ValueError(f"models.{name.replace('@', '.versions.')}.upstream: unknown upstream "
                                 f"{spec.upstream!r}")
        for name, spec in self.embeddings.items():
            if spec.upstream is not None:
                up = self.upstreams.get(spec.upstream)
                if up is None:
                    raise ValueError(f"embeddings.{name}.upstream: unknown upstream {spec.upstream!r}")
                if up.protocol != "openai":
                    raise ValueError(f"embeddings.{name}.upstream: only an openai-protocol upstream serves embeddings")
        known = set(self.version_names())
        names = known | set(self.models) | set(self.aliases)
        for alias, spec in self.aliases.items():
            for v in spec.weights:
                if v not in known:
                    raise ValueError(f"aliases.{alias}.weights: unknown version {v!r}")
            for v in spec.fallbacks:
                if v not in names:
                    raise ValueError(f"aliases.{alias}.fallbacks: unknown version, model or alias {v!r}")
        return self

    def alias_specs(self) -> dict[str, AliasSpec]:
        """Every callable name: the declared aliases, plus each model's own name (onto its
        first version) unless the catalogue aliases it explicitly."""
        out = {m: AliasSpec(weights={f"{m}@{next(iter(spec.versions))}": 100})
               for m, spec in self.models.items() if m not in self.aliases}
        return {**out, **self.aliases}

    def version_names(self) -> list[str]:
        return [f"{m}@{v}" for m, spec in self.models.items() for v in spec.versions]

    def _versions(self):
        for m, spec in self.models.items():
            for v, version in spec.versions.items():
                yield f"{m}@{v}", spec, version

    def pool_version_names(self) -> list[str]:
        """The versions the pool serves (Ray apps, in-process engines): upstream versions left out."""
        return [name for name, _, v in self._versions() if not v.is_upstream]

    def upstream_version_names(self) -> list[str]:
        return [name for name, _, v in self._versions() if v.is_upstream]

    def version(self, name: str) -> tuple[str, ModelSpec, VersionSpec]:
        model, _, ver = name.partition("@")
        spec = self.models.get(model)
        if spec is None or ver not in spec.versions:
            raise KeyError(name)
        return model, spec, spec.versions[ver]


def load_catalogue(path: str | Path) -> Catalogue:
    try:
        raw = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as e:
        raise CatalogueError(f"catalogue {path}: {e}") from e
    return parse_catalogue(raw, source=str(path))


def parse_catalogue(raw: object, *, source: str = "catalogue") -> Catalogue:
    try:
        return Catalogue.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise CatalogueError(f"{source}: {loc}: {first['msg']}") from e
