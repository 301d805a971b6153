"""One Serve deployment's settings: which engine a replica builds and how the pool scales."""
from __future__ import annotations

from dataclasses import field
from typing import Annotated, Any

from pydantic import Field

from workers.validation import validated

NonNegative = Annotated[float, Field(ge=0)]

# Serve runs a replica's methods on an event loop of their own in a second thread by default, so every chunk a
# stream yields crosses threads before it is sent. Ours do little on the loop (decoding the request, tokenizing
# its prompt; the engine steps in a thread of its own), so they run on Serve's loop: one of the flags of Ray's
# RAY_SERVE_THROUGHPUT_OPTIMIZED bundle (docs/serving.md has the measurements). A catalogue's `env` may set it back.
REPLICA_ENV = {"RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": "0"}


@validated(slots=True)
class VersionServeConfig:
    version: Annotated[str, Field(pattern="@")]  # "smollm2-135m-instruct@fp32"
    engine: dict[str, Any]  # workers.EngineConfig keyword arguments (model included)
    min_replicas: Annotated[int, Field(ge=0)] = 1  # the warm floor the autoscaler keeps
    max_replicas: Annotated[int, Field(ge=1)] = 1
    # Loaded replicas kept on top of the warm floor: the autoscaler never goes below
    # min_replicas + standby, so a burst lands on replicas that are already warm
    # while any further ones load. They count against max_replicas + standby too.
    standby: Annotated[int, Field(ge=0)] = 0
    target_ongoing_requests: Annotated[float, Field(gt=0)] = 16
    upscale_delay_s: NonNegative = 5.0
    downscale_delay_s: NonNegative = 60.0
    num_cpus: NonNegative = 1.0  # Ray CPUs per replica (fractions let several share a core)
    # Ray GPUs per replica. Ray then shows the replica its GPU (CUDA_VISIBLE_DEVICES), so the engine's default
    # device is CUDA and its kernel set Triton; its KV cache takes gpu_memory_utilization of that GPU.
    num_gpus: NonNegative = 0.0
    max_ongoing_requests: Annotated[int, Field(ge=1)] = 64  # per replica; the engine batches these together
    max_queued_requests: int = 256  # per caller; beyond it the handle refuses (overloaded)
    prefix_routing: bool = False  # prefer the replica that last served the same prompt prefix
    health_check_period_s: Annotated[float, Field(gt=0)] = 2.0
    health_check_timeout_s: Annotated[float, Field(gt=0)] = 30.0
    warmup_prompt: str = "Hello"
    # Chats the warm-up runs at once (capped by the engine's max_num_seqs): a wave as a loaded server meets it.
    warmup_streams: Annotated[int, Field(ge=1)] = 16
    env: dict[str, str] = field(default_factory=dict)  # replica environment (e.g. OMP_NUM_THREADS)

    def __post_init__(self) -> None:
        if "model" not in self.engine:
            raise ValueError("engine must be a dict of EngineConfig fields including 'model'")
        if self.max_replicas < self.min_replicas:
            raise ValueError(f"max_replicas must be >= min_replicas={self.min_replicas}, got {self.max_replicas}")
        if self.max_queued_requests < 1 and self.max_queued_requests != -1:
            raise ValueError(f"max_queued_requests must be >= 1 or -1 (unbounded), got {self.max_queued_requests}")

    @property
    def floor(self) -> int:
        """Replicas kept loaded at all times: the warm floor plus the standby pool."""
        return self.min_replicas + self.standby

    def actor_options(self) -> dict:
        """Ray resources and environment of each replica."""
        options = {"num_cpus": self.num_cpus, "runtime_env": {"env_vars": {**REPLICA_ENV, **self.env}}}
        if self.num_gpus:
            options["num_gpus"] = self.num_gpus
        return options

    def autoscaling_config(self) -> dict:
        return {
            "min_replicas": self.floor,
            "initial_replicas": self.floor,
            "max_replicas": self.max_replicas + self.standby,
            "target_ongoing_requests": self.target_ongoing_requests,
            "upscale_delay_s": self.upscale_delay_s,
            "downscale_delay_s": self.downscale_delay_s,
        }
