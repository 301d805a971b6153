#!/usr/bin/env bash
# Gateway: join the Ray cluster as a zero-CPU node (so Serve handles work locally), then serve.
set -euo pipefail
ray start --address="${RAY_HEAD_ADDRESS:?set RAY_HEAD_ADDRESS=host:6379}" --num-cpus=0 --disable-usage-stats
exec tollgate serve
