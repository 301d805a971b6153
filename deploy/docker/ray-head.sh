#!/usr/bin/env bash
# Ray head: start the node, deploy one Serve application per catalogue version, then stay up.
# The marker file tells the compose health check that the pool is deployed (replicas warm).
# CPUs: RAY_NUM_CPUS if set, else what Ray detects for this container (the host's cores, or its CPU limit).
# Object store: RAY_OBJECT_STORE_BYTES (default 512 MB), inside the compose file's shm_size of 1 GB.
# The catalogue: TOLLGATE_CATALOGUE if set, else the one shipped with the gateway package (the gateway reads the same).
set -euo pipefail
rm -f /tmp/tollgate-serve-ready
cpus=()
if [ -n "${RAY_NUM_CPUS:-}" ]; then cpus=(--num-cpus="$RAY_NUM_CPUS"); fi
ray start --head --port=6379 --dashboard-host=0.0.0.0 --ray-client-server-port=10001 "${cpus[@]}" \
  --object-store-memory="${RAY_OBJECT_STORE_BYTES:-536870912}" --disable-usage-stats
prefix=()
if [ "${TOLLGATE_RAY_PREFIX_ROUTING:-false}" = "true" ]; then prefix=(--prefix-routing); fi
catalogue=$(python -c "from gateway.settings import Settings; print(Settings().catalogue)")
python -m gateway.serving.pool --catalogue "$catalogue" --address auto "${prefix[@]}"
touch /tmp/tollgate-serve-ready
# Stay in the foreground for as long as the Ray node lives.
while ray status >/dev/null 2>&1; do sleep 10; done
echo "ray head stopped" >&2
exit 1
