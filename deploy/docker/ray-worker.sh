#!/usr/bin/env bash
# An extra Ray worker node: joins the head; Serve places replicas on it. CPUs and object store as on the head
# (RAY_NUM_CPUS, else what Ray detects; RAY_OBJECT_STORE_BYTES, default 512 MB within shm_size 1 GB).
set -euo pipefail
cpus=()
if [ -n "${RAY_NUM_CPUS:-}" ]; then cpus=(--num-cpus="$RAY_NUM_CPUS"); fi
exec ray start --address="${RAY_HEAD_ADDRESS:-ray-head:6379}" "${cpus[@]}" \
  --object-store-memory="${RAY_OBJECT_STORE_BYTES:-536870912}" --disable-usage-stats --block
