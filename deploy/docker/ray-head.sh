#!/usr/bin/env bash
# Ray head: start the node, deploy one Serve application per catalogue version, then stay up.
# The marker file tells the compose health check that the pool is deployed (replicas warm).
set -euo pipefail
rm -f /tmp/tollgate-serve-ready
ray start --head --port=6379 --dashboard-host=0.0.0.0 --ray-client-server-port=10001 \
  --num-cpus="${RAY_NUM_CPUS:-4}" --disable-usage-stats
prefix=()
if [ "${TOLLGATE_RAY_PREFIX_ROUTING:-false}" = "true" ]; then prefix=(--prefix-routing); fi
python -m gateway.serving.pool --catalogue "${TOLLGATE_CATALOGUE:-/app/deploy/catalogue.yaml}" --address auto "${prefix[@]}"
touch /tmp/tollgate-serve-ready
# Stay in the foreground for as long as the Ray node lives.
while ray status >/dev/null 2>&1; do sleep 10; done
echo "ray head stopped" >&2
exit 1
