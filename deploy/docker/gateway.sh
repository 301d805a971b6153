#!/usr/bin/env bash
# Gateway: join the Ray cluster as a zero-CPU node (so Serve handles work locally), then serve.
# Its object store holds only what handles pass through: RAY_OBJECT_STORE_BYTES (default 128 MB) fits the
# compose file's shm_size of 256 MB, so Ray keeps it in /dev/shm.
set -euo pipefail
ray start --address="${RAY_HEAD_ADDRESS:?set RAY_HEAD_ADDRESS=host:6379}" --num-cpus=0 \
  --object-store-memory="${RAY_OBJECT_STORE_BYTES:-134217728}" --disable-usage-stats
exec tollgate serve
