#!/usr/bin/env bash
# The compose stack, run for real on this kind of machine (no Docker, no container registry; podman behind a
# Docker-compatible socket and stand-in base images from ../shared/compose-here), as a user runs it:
#   1. ../shared/compose-here/setup.sh (podman, docker-compose 1.29, base images; safe to run again);
#   2. deploy/scripts/make-env.sh into a scratch folder, the gateway published on a free port;
#   3. `docker-compose build`, the image sizes against their limits (gateway 1.5 GB, worker 2.5 GB), `up -d`
#      with the extra worker, then the README's flow against the published port: admin key from the env file,
#      tenant, key, chat plain and streamed, the bill, /metrics with its token;
#   4. the extra Ray worker killed while 40 chats are in flight: every request must still succeed;
#   5. `migrate` run again (the upgrade path: idempotent), users, no secret in `inspect`;
#   6. `down -v`, whatever happened (also at the start, for a run that was killed); on success, the hash of the
#      deployment files into deploy/compose-checked.sha (.ci/run runs this check when they differ from it).
# Bounded: each wait has its deadline, and the whole run COMPOSE_CHECK_TIMEOUT_S (default 2400 s).
#   deploy/scripts/compose-check.sh            (make compose-check)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
budget=${COMPOSE_CHECK_TIMEOUT_S:-2400}
if [ -z "${COMPOSE_CHECK_BOUNDED:-}" ]; then  # re-run under `timeout`, so nothing outlives the budget
  COMPOSE_CHECK_BOUNDED=1 exec timeout --kill-after=60 "$budget" "$0" "$@"
fi

log() { printf '[compose-check %4ds] %s\n' "$SECONDS" "$*"; }
fail() { log "FAIL: $*"; exit 1; }

here=${COMPOSE_HERE:-}
if [ -z "$here" ]; then
  for d in "$root/../shared/compose-here" "$root/../../shared/compose-here" /work/shared/compose-here; do
    if [ -x "$d/setup.sh" ]; then here=$d; break; fi
  done
fi
[ -n "$here" ] || fail "no compose-here/setup.sh beside the checkout (set COMPOSE_HERE)"

log "setup: $here/setup.sh"
nice -n 10 "$here/setup.sh" | sed 's/^/  /'
export DOCKER_HOST=unix:///run/podman/podman.sock

project=tollgate-check
work=$(mktemp -d /tmp/tollgate-compose-check.XXXXXX)
env_file=$work/.env
dc=(docker-compose -p "$project" --env-file "$env_file" -f docker-compose.yml --profile extra-worker)
compose() { "${dc[@]}" "$@"; }
teardown() {
  local rc=$?
  if [ -s "$env_file" ]; then
    if ((rc != 0)); then compose ps || true; compose logs --tail=40 || true; fi
    log "down -v"
    compose down -v --remove-orphans --timeout 10 >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
  left=$(podman ps -a --filter "label=com.docker.compose.project=$project" -q | wc -l)
  log "containers of $project left: $left"
  exit "$rc"
}
trap teardown EXIT
trap 'exit 143' TERM INT  # killed (or timed out): still tear down

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
bash deploy/scripts/make-env.sh "$env_file" | sed 's/^/  /'
# The shell's values win over the env file's: free ports, so nothing else on the machine is in the way.
TOLLGATE_PORT=$(free_port) RAY_DASHBOARD_PORT=$(free_port)
export TOLLGATE_PORT RAY_DASHBOARD_PORT
compose down -v --remove-orphans --timeout 10 >/dev/null 2>&1 || true  # a run killed before its teardown

log "build (nice 10; the layer cache carries over between runs)"
nice -n 10 "${dc[@]}" build 2>&1 | grep -E '^(Building|Successfully|Error|ERROR)|STEP [0-9]+/[0-9]+: (FROM|RUN)|Using cache' \
  | cut -c1-120 | sed 's/^/  /' || fail "the images did not build"
for image in tollgate-gateway:latest tollgate-worker:latest; do
  podman image exists "$image" || fail "$image was not built"
done
log "image sizes (limits: gateway 1.5 GB, worker 2.5 GB, on the raw size; the base here is the stand-in"
log "  python:3.11-slim, larger than Docker Hub's (it carries a torch wheel for offline builds): the size over it"
log "  is what the project adds)"
base_bytes=$(podman image inspect -f '{{.Size}}' python:3.11-slim)
for entry in tollgate-gateway:latest=1.5 tollgate-worker:latest=2.5; do
  image=${entry%=*} limit=${entry#*=}
  bytes=$(podman image inspect -f '{{.Size}}' "$image")
  log "  $image: $(python3 -c "print(f'{$bytes / 1e9:.2f} GB, {($bytes - $base_bytes) / 1e9:.2f} GB over the base image ({$base_bytes / 1e9:.2f} GB); limit $limit GB')")"
  python3 -c "import sys; sys.exit($bytes > $limit * 1e9)" || fail "$image is over its $limit GB"
done
log "up -d"
compose up -d 2>&1 | sed 's/^/  /'

base=http://127.0.0.1:$TOLLGATE_PORT
wait_for() {  # SECONDS WHAT COMMAND...: run COMMAND until it succeeds or SECONDS pass
  local limit=$1 what=$2 t0=$SECONDS; shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS - t0 < limit)) || fail "$what: not within ${limit}s"
    sleep 3
  done
  log "$what (${SECONDS}s)"
}
healthy() { [ "$(podman inspect -f '{{.State.Health.Status}}' "$(compose ps -q "$1")")" = healthy ]; }
wait_for 900 "gateway answers /readyz on port $TOLLGATE_PORT" curl -fsS "$base/readyz"
for service in postgres redis ray-head ray-worker gateway; do wait_for 300 "$service healthy" healthy "$service"; done
compose ps | sed 's/^/  /'

env_value() { grep "^$1=" "$env_file" | tail -n 1 | cut -d= -f2-; }
json() { python3 -c "import json, sys; d = json.load(sys.stdin); print($1)"; }
ADMIN=$(env_value TOLLGATE_ADMIN_KEY)
admin() { curl -fsS -H "Authorization: Bearer $ADMIN" -H 'content-type: application/json' "$@"; }

log "flow: tenant, key"
tenant=$(admin -X POST "$base/admin/tenants" \
  -d '{"name": "compose-check", "rpm": 600, "tpm": 200000, "monthly_token_budget": 1000000}' | json 'd["id"]')
KEY=$(admin -X POST "$base/admin/tenants/$tenant/keys" -d '{}' | json 'd["key"]')
log "  tenant $tenant, key ${KEY:0:8}..."
chat_body='{"model": "smollm2-135m-instruct", "messages": [{"role": "user", "content": "What is the capital of France?"}], "max_tokens": 16, "temperature": 0'
chat() { curl -fsS --max-time 120 "$base/v1/chat/completions" -H "Authorization: Bearer $KEY" \
           -H 'content-type: application/json' "$@"; }
t0=$(date +%s.%N)
answer=$(chat -d "$chat_body}" | json '(d["choices"][0]["message"]["content"], d["usage"])')
log "  chat: $answer ($(python3 -c "print(round($(date +%s.%N) - $t0, 2))") s)"
stream=$(chat -N -d "$chat_body, \"stream\": true}")
grep -q '^data: \[DONE\]' <<<"$stream" || fail "the streamed chat did not end with [DONE]"
log "  chat streamed: $(grep -c '^data: {' <<<"$stream") chunks, then [DONE]"
bill=$(admin "$base/admin/tenants/$tenant/bill?month=$(date -u +%Y-%m)")
log "  bill: $bill"
python3 -c "import json, sys; d = json.loads(sys.argv[1]); assert json.dumps(d).count('smollm2'), d" "$bill" \
  || fail "the bill does not show the chats"
metrics_status=$(curl -s -o /dev/null -w '%{http_code}' "$base/metrics")
[ "$metrics_status" = 401 ] || [ "$metrics_status" = 403 ] || fail "/metrics without its token answered $metrics_status"
series=$(curl -fsS "$base/metrics" -H "Authorization: Bearer $(env_value TOLLGATE_METRICS_TOKEN)" | grep -c '^tollgate')
((series > 0)) || fail "/metrics has no tollgate series"
log "  /metrics: $metrics_status without the token, $series tollgate series with it"

log "worker loss: 4 clients x 10 chats (sampled, so the semantic cache stays out of it); the extra Ray worker"
log "  killed as soon as the first answer is in"
results=$work/results; : >"$results"
load_body='{"model": "smollm2-135m-instruct", "messages": [{"role": "user", "content": "Tell me about Paris."}], "max_tokens": 48, "temperature": 0.8}'
client() { for _ in $(seq 10); do
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 120 "$base/v1/chat/completions" \
      -H "Authorization: Bearer $KEY" -H 'content-type: application/json' -d "$load_body") || code=000
    echo "$code" >>"$results"
  done; }
worker=$(compose ps -q ray-worker)
pids=()
for _ in 1 2 3 4; do client & pids+=($!); done
for _ in $(seq 600); do [ -s "$results" ] && break; sleep 0.2; done
podman kill "$worker" >/dev/null
at_kill=$(wc -l <"$results")
log "  ray-worker killed with $at_kill of 40 answered"
for pid in "${pids[@]}"; do wait "$pid"; done
ok=$(grep -c '^200$' "$results" || true)
log "  after the loss: $ok of $(wc -l <"$results") succeeded ($(sort "$results" | uniq -c | tr -s ' \n' ' '))"
((at_kill < 40)) || fail "the load ended before the worker was killed"
((ok == 40)) || fail "requests failed when the worker died"
chat -d "$chat_body}" >/dev/null || fail "a chat after the worker loss failed"
podman exec "$(compose ps -q ray-head)" ray status 2>/dev/null | sed -n '/^Active:/,/^Pending:/p;/^Total Usage/,/object_store/p' \
  | sed 's/^/  /' || true
compose start ray-worker 2>&1 | sed 's/^/  /'

log "upgrade path: migrate again on the migrated database"
compose run --rm migrate 2>&1 | tail -n 2 | sed 's/^/  /'

log "containers: users, and no secret in inspect"
for id in $(compose ps -q); do
  name=$(podman inspect -f '{{.Name}}' "$id")
  inspect=$(podman inspect "$id")
  for secret in POSTGRES_PASSWORD TOLLGATE_ADMIN_KEY TOLLGATE_METRICS_TOKEN; do
    if grep -qF "$(env_value "$secret")" <<<"$inspect"; then fail "$name: inspect shows $secret"; fi
  done
  if [ "$(podman inspect -f '{{.State.Running}}' "$id")" != true ]; then
    log "  $name: not running ($(podman inspect -f '{{.State.Status}} {{.State.ExitCode}}' "$id")), runs as $(podman inspect -f '{{.Config.User}}' "$id")"
    continue
  fi
  users=$(podman top "$id" user | tail -n +2 | sort -u | tr '\n' ' ')
  log "  $name runs as: $users"
  if grep -qw root <<<"$users"; then fail "$name has a process running as root"; fi
done
log "  inspect shows none of POSTGRES_PASSWORD, TOLLGATE_ADMIN_KEY, TOLLGATE_METRICS_TOKEN"

bash deploy/scripts/compose-hash.sh >deploy/compose-checked.sha  # .ci/run: these files have passed
log "ok in ${SECONDS}s; recorded deploy/compose-checked.sha (commit it)"
