"""The gateway's one settings object: the only place that reads the environment."""
from __future__ import annotations

from functools import lru_cache
from importlib.resources import files
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

# Secrets that may come from a file instead: NAME_FILE names a file holding NAME's value (compose `secrets:`,
# Kubernetes secret volumes), so the value never sits in a container's environment. NAME itself wins.
SECRET_FILE_VARS = ("TOLLGATE_ADMIN_KEY", "TOLLGATE_METRICS_TOKEN", "TOLLGATE_CACHE_SALT_SECRET", "DATABASE_URL",
                    "REDIS_URL")


def packaged_catalogue() -> Path:
    """The catalogue shipped with the gateway (package data; in a checkout, deploy/catalogue.yaml)."""
    return Path(str(files("gateway") / "deploy" / "catalogue.yaml")).resolve()


class _EnvAndSecretFiles(EnvSettingsSource):
    def _load_env_vars(self):
        env = dict(super()._load_env_vars())
        for name in SECRET_FILE_VARS:
            key = name if self.case_sensitive else name.lower()
            path = env.get(key + ("_FILE" if self.case_sensitive else "_file"))
            if path and not env.get(key):
                try:
                    env[key] = Path(path).read_text().strip()
                except OSError as exc:
                    raise ValueError(f"{name}_FILE={path}: cannot read it ({exc.strerror})") from None
        return env


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TOLLGATE_", extra="ignore")

    host: str = "127.0.0.1"
    # Not TOLLGATE_PORT: that is the host port docker-compose publishes the gateway on (.env).
    port: int = Field(8000, validation_alias="TOLLGATE_LISTEN_PORT")
    # Proxies whose X-Forwarded-For / X-Forwarded-Proto uvicorn believes (comma-separated addresses or CIDRs,
    # "*" for any): the client address they name is the one the failed-key throttle counts. "" trusts none.
    forwarded_allow_ips: str = "127.0.0.1"
    data_dir: Path = Path("data")
    # Unprefixed names, as operators and docker images expect them.
    database_url: str = Field("", validation_alias="DATABASE_URL")  # "" -> sqlite:///<data_dir>/tollgate.db
    redis_url: str = Field("", validation_alias="REDIS_URL")  # "" -> in-process limits
    ray_address: str = Field("", validation_alias="RAY_ADDRESS")
    admin_key: str = ""  # "" -> generated on first start into <data_dir>/admin_key (0600)
    # Operator surfaces are closed by default (gateway.api.ops, gateway.main).
    metrics_token: str = ""  # "" -> generated on first start into <data_dir>/metrics_token (0600)
    metrics_per_tenant: bool = False  # True: Prometheus series carry tenant ids (identity; one series per tenant)
    docs_enabled: bool = False  # serve /docs, /redoc and /openapi.json
    catalogue: Path = Field(default_factory=packaged_catalogue)
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
    # Replicas (gateway.events): route changes, cache invalidations, tenant changes and key revocations
    # reach every replica sharing REDIS_URL (pub/sub + a version counter); without it, one replica.
    # Redis keys and channel: alike on every replica of one gateway, distinct between gateways that share
    # a Redis server (pub/sub channels ignore the database number).
    events_prefix: str = "tollgate:events"
    events_tick_s: float = Field(0.5, gt=0)  # how often a replica checks the counter for missed events
    events_redis_timeout_s: float = Field(0.25, gt=0, le=0.25)  # every Redis call of the bus
    # Ray Serve pool (gateway.serving.ray_backend); ray_address "" starts a local Ray.
    ray_num_cpus: float | None = None  # local Ray only; None: all cores
    ray_namespace: str = "tollgate"
    ray_prefix_routing: bool = False  # send requests sharing a prompt prefix to the same replica
    # Fit a local Ray's CPU replicas to this host (workers/serve/placement.py): engine threads, OpenMP's wait
    # policy, no more replicas of a version than its threads fit in the cores. False: the catalogue as written.
    ray_placement: bool = True
    ray_deploy: bool = True  # False: attach to applications someone else deployed
    # Token streams from replicas over Ray Serve's gRPC data plane (each replica's inter-deployment server) instead
    # of one Ray object per chunk: the gateway's CPU per streamed token ~400 -> ~190 us (docs/serving.md).
    ray_grpc_streams: bool = True
    currency: str = "USD"
    console_session_ttl_s: int = Field(8 * 3600, ge=60)  # how long a /console sign-in lasts
    # MaaS economics (gateway.economics.recorder): how often each gateway samples its pool's replicas per version
    # into replica-minutes (at most 60 s, or minutes go unseen); 0 turns the recording off.
    economics_sample_s: float = Field(15.0, ge=0, le=60)
    # The waste report's own prompt hashing (gateway.billing.prefix_recorder): distinct prefixes (system prompts,
    # whole prompts) kept per tenant and month, the most repeated (0 turns the hashing off), and how often a
    # gateway writes what it hashed.
    waste_prefix_cap: int = Field(1000, ge=0)
    waste_flush_s: float = Field(1.0, gt=0)
    # Surviving a database outage (gateway.security.authenticator, gateway.billing.spool).
    auth_grace_s: float = Field(300.0, ge=0)  # a cached key keeps working this long past its TTL while the DB is down
    spool_dir: Path | None = None  # ledger rows the DB cannot take; None -> <data_dir>/spool
    spool_max_bytes: int = Field(256 * 2**20, ge=1)  # past this (DB still down), new generations get 503
    spool_segment_bytes: int = Field(8 * 2**20, ge=1)
    spool_replay_interval_s: float = Field(2.0, gt=0)  # how often a spool is retried while the DB is down
    # The engine's prefix cache is salted per tenant (gateway.security.cache_salt): a tenant never
    # reuses, nor learns of, another tenant's cached prompt blocks. Off only for single-tenant use.
    prefix_cache_isolation: bool = True
    cache_salt_secret: str = ""  # "" -> derived from the admin key (the same on every replica)
    # Encrypts secrets stored in the database (upstream keys; gateway.security.secret_box), TOLLGATE_SECRET_KEY.
    # "" -> derived from the admin key (the same on every replica).
    secret_key: str = ""
    # Tenant API (gateway.api.v1, gateway.limits).
    default_max_tokens: int = 512  # when a chat request sets no max_tokens (bounds its reservation)
    limit_strategy: str = "sliding"  # "fixed" | "sliding": how RPM/TPM windows are counted
    limit_window_s: float = 60.0  # the "minute" in RPM/TPM
    # Surviving Redis faults (gateway.limits.failover): every limiter call to Redis is bounded, and a
    # circuit breaker stops asking a failing Redis until a background probe finds it well again.
    # One limiter call to Redis (pool wait, connect, write, read) may take this long, time the event loop
    # spends running late excepted, and never more than 10x it.
    redis_timeout_s: float = Field(0.25, gt=0)
    limits_breaker_failures: int = Field(3, ge=1)  # errors in a row that open the breaker (a timeout: one)
    limits_breaker_cooldown_s: float = Field(2.0, gt=0)  # open this long before a probe
    # While Redis is unavailable: "local" counts in process (each replica 1/gateway_replicas of every
    # limit, budgets from the ledger); "closed" answers 503 with Retry-After.
    limits_on_redis_down: str = Field("local", pattern="^(local|closed)$")
    gateway_replicas: int = Field(1, ge=1)  # gateway processes sharing one Redis
    limits_local_max_keys: int = Field(100_000, ge=1)  # in-process counters kept at most (soonest expiring go)
    drain_timeout_s: float = 30.0  # on shutdown, how long in-flight generations may finish
    embeddings_enabled: bool = True  # serve POST /v1/embeddings
    # One sentence embedder serves /v1/embeddings and the semantic cache; loaded when either is on.
    # bfloat16 halves a cache lookup's latency on CPUs with AVX512-BF16 (cosine >= 0.999 to float32).
    embedder_dtype: str = "bfloat16"  # "float32" | "bfloat16" (the torch runtime's)
    # "onnx" (ONNX Runtime, float32, 2-3x faster for one question) | "torch" (PyTorch eager)
    embedder_runtime: str = "onnx"
    # The semantic cache for chat completions. Its defaults live in gateway.cache.CacheConfig;
    # a tenant's cache_* columns (admin API) override them.
    cache_enabled: bool = True
    # Entries a tenant may keep when its cache_max_entries column is unset (LRU beyond it).
    cache_max_entries_per_tenant: int = Field(10_000, ge=1)
    # Share of cache hits also answered by the model in the background to estimate the wrong-hit rate
    # (gateway.cache.live_check); billed to nobody. 0 turns the check off.
    cache_audit_fraction: float = Field(0.01, ge=0, le=1)
    # At start-up, in the background: WordNet's tables and the embedder vocabulary's word vectors, so a
    # lookup's verification never embeds a common word (about 15 s of one core, once).
    cache_warm_verifier: bool = True
    # The pair judge (gateway.cache.judge): a cross-encoder that reads a query and a cached question together,
    # after the rule-based verifier; off, the rules decide alone (fewer hits, more wrong ones: docs/cache.md).
    cache_judge: bool = True
    # The Responses API (gateway.api.v1.responses): stored responses a tenant keeps (its oldest go first),
    # and the UTF-8 bytes one response's conversation may reach (instructions + the previous response's
    # context and output + the new input).
    responses_max_stored_per_tenant: int = Field(1_000, ge=1)
    responses_max_input_bytes: int = Field(256 * 1024, ge=1)
    # The Batch API (gateway.api.v1.batches, gateway.batch.runner). Uploads to POST /v1/files may be this large
    # (the request body limit above does not apply to them); a batch holds at most batch_max_requests lines.
    files_max_bytes: int = Field(50 * 2**20, ge=1)
    batch_max_requests: int = Field(50_000, ge=1)
    # Bytes of unexpired files one tenant may hold (uploads and batch outputs together); a tenant's own
    # files_max_bytes overrides it. Batch outputs are always written, but count against later uploads.
    files_max_bytes_per_tenant: int = Field(2**30, ge=1)
    batch_output_expires_s: int = Field(30 * 24 * 3600, ge=1)  # a batch's output and error files last this long
    # A batch's output and error files together, and one line's output: past them lines fail with
    # output_limit_exceeded (the tenant's remaining file quota lowers the batch's limit when it is smaller).
    batch_max_output_bytes: int = Field(200_000_000, ge=1)
    # Uploads one tenant may have in progress at once, per gateway process (each also counts against its RPM).
    files_max_concurrent_uploads: int = Field(2, ge=1)
    batch_max_line_output_bytes: int = Field(20 * 2**20, ge=1)
    files_sweep_s: float = Field(60.0, gt=0)  # how often the runner deletes expired files' rows
    batch_runner_enabled: bool = True  # run batches in this process (every replica may; a lease keeps them apart)
    batch_concurrency: int = Field(4, ge=1)  # batch lines in flight in this process, all batches together
    batch_max_active: int = Field(4, ge=1)  # batches this process works on at once
    batch_poll_s: float = Field(1.0, gt=0)  # how often the runner looks for batches, cancels and expiries
    batch_lease_s: float = Field(30.0, gt=0)  # a replica that stops renewing loses its batches after this
    # Batch lines queue behind everything else in the engines (lower runs earlier; the engines' range ends at
    # 1e6). At the engines' background_priority (default 1e6) they run only in steps with nothing else to run,
    # and a waiting interactive request displaces a running batch line when the engine's batch is full.
    batch_priority: int = Field(1_000_000, ge=-1_000_000, le=1_000_000)
    batch_line_timeout_s: float = Field(3600.0, gt=0)  # one batch line, admitted to answered (request_timeout_s's)
    # Alerts as signed webhooks (gateway.alerts): every replica writes events to the outbox; those with the worker
    # enabled send them (a lease keeps two off one delivery). Backoff doubles from alerts_backoff_s, with jitter.
    alerts_worker_enabled: bool = True
    alerts_poll_s: float = Field(1.0, gt=0)
    alerts_lease_s: float = Field(30.0, gt=0)
    alerts_timeout_s: float = Field(10.0, gt=0)
    alerts_max_attempts: int = Field(8, ge=1)
    alerts_backoff_s: float = Field(2.0, gt=0)
    alerts_backoff_max_s: float = Field(3600.0, gt=0)
    alerts_check_s: float = Field(15.0, gt=0)  # version health and SLO thresholds, checked this often
    alerts_slo_window_s: float = Field(300.0, gt=0)  # the SLOs' sliding window over the usage ledger
    alerts_slo_min_requests: int = Field(20, ge=1)  # fewer rows in the window: no verdict
    alerts_retention_days: float = Field(30.0, gt=0)  # delivered and failed deliveries are kept this long
    # Webhooks may reach loopback, private, link-local and metadata addresses: for on-premises receivers only.
    webhooks_allow_private: bool = False

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource):
        return init_settings, _EnvAndSecretFiles(settings_cls), dotenv_settings, file_secret_settings

    @property
    def resolved_spool_dir(self) -> Path:
        return self.spool_dir or self.data_dir / "spool"

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'tollgate.db'}"


@lru_cache
def get_settings() -> Settings:
    return Settings()
