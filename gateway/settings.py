"""The gateway's one settings object: the only place that reads the environment."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TOLLGATE_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = 8000
    data_dir: Path = Path("data")
    # Unprefixed names, as operators and docker images expect them.
    database_url: str = Field("", validation_alias="DATABASE_URL")  # "" -> sqlite:///<data_dir>/tollgate.db
    redis_url: str = Field("", validation_alias="REDIS_URL")  # "" -> in-process limits
    ray_address: str = Field("", validation_alias="RAY_ADDRESS")
    admin_key: str = ""  # "" -> generated on first start into <data_dir>/admin_key (0600)
    catalogue: Path = Path(__file__).resolve().parent.parent / "deploy" / "catalogue.yaml"
    backend: str = "ray"  # "ray" | "inprocess"
    max_body_bytes: int = 1_000_000
    request_timeout_s: float = 120.0
    log_level: str = "INFO"
    # Automatic canary rollback (gateway.routing.canary.RollbackPolicy).
    route_rollback_enabled: bool = True
    route_rollback_window_s: float = 60.0
    route_rollback_min_samples: int = 20
    route_rollback_error_margin: float = 0.05  # absolute error-rate excess over stable
    route_rollback_ttft_margin: float = 0.5  # relative p99 TTFT excess over stable
    # Ray Serve pool (gateway.serving.ray_backend); ray_address "" starts a local Ray.
    ray_num_cpus: float | None = None  # local Ray only; None: all cores
    ray_namespace: str = "tollgate"
    ray_prefix_routing: bool = False  # send requests sharing a prompt prefix to the same replica
    ray_deploy: bool = True  # False: attach to applications someone else deployed
    currency: str = "USD"
    # The engine's prefix cache is salted per tenant (gateway.security.cache_salt): a tenant never
    # reuses, nor learns of, another tenant's cached prompt blocks. Off only for single-tenant use.
    prefix_cache_isolation: bool = True
    cache_salt_secret: str = ""  # "" -> derived from the admin key (the same on every replica)
    # Tenant API (gateway.api.v1, gateway.limits).
    default_max_tokens: int = 512  # when a chat request sets no max_tokens (bounds its reservation)
    limit_strategy: str = "sliding"  # "fixed" | "sliding": how RPM/TPM windows are counted
    limit_window_s: float = 60.0  # the "minute" in RPM/TPM
    drain_timeout_s: float = 30.0  # on shutdown, how long in-flight generations may finish
    embeddings_enabled: bool = True  # serve POST /v1/embeddings
    # One sentence embedder serves /v1/embeddings and the semantic cache; loaded when either is on.
    # bfloat16 halves a cache lookup's latency on CPUs with AVX512-BF16 (cosine >= 0.999 to float32).
    embedder_dtype: str = "bfloat16"  # "float32" | "bfloat16"
    # The semantic cache for chat completions. Its defaults live in gateway.cache.CacheConfig;
    # a tenant's cache_* columns (admin API) override them.
    cache_enabled: bool = True

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'tollgate.db'}"


@lru_cache
def get_settings() -> Settings:
    return Settings()
