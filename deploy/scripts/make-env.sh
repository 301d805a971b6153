#!/usr/bin/env bash
# Write the secrets docker-compose.yml reads into an env file (default: .env beside it), mode 0600.
# Values already in the file are kept, so running it again never changes a password.
#   deploy/scripts/make-env.sh [path]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
env_file=${1:-"$root/.env"}

random() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }  # 64 hex digits

umask 077
touch "$env_file"
chmod 600 "$env_file"
[ -s "$env_file" ] && [ -n "$(tail -c1 "$env_file")" ] && echo >>"$env_file"  # end the last line

added=()
add_if_missing() {  # NAME VALUE
  if ! grep -q "^$1=" "$env_file"; then
    printf '%s=%s\n' "$1" "$2" >>"$env_file"
    added+=("$1")
  fi
}

add_if_missing POSTGRES_PASSWORD "$(random)"
add_if_missing TOLLGATE_ADMIN_KEY "tga-$(random)"
add_if_missing TOLLGATE_METRICS_TOKEN "tgm-$(random)"

if ((${#added[@]})); then
  echo "make-env: wrote ${added[*]} to $env_file (mode 0600)"
else
  echo "make-env: $env_file already has every secret; nothing changed"
fi
