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
    currency: str = "USD"

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'tollgate.db'}"


@lru_cache
def get_settings() -> Settings:
    return Settings()
