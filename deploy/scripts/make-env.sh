#!/usr/bin/env bash
# The one preparation step before `docker compose up`: writes the secrets into an env file (default: .env
# beside docker-compose.yml, mode 0600) and, from it, the secret files compose mounts under /run/secrets
# (secrets/ beside the env file: the folder 0700, the files 0644 so the containers' unprivileged users can
# read their bind-mounted copies). Values already in the env file are kept, so running it again never changes a
# password; edit .env and run it again to change one (PostgreSQL keeps the password of its first start).
#   deploy/scripts/make-env.sh [path]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
env_file=${1:-"$root/.env"}
mkdir -p "$(dirname "$env_file")"
env_dir=$(cd "$(dirname "$env_file")" && pwd)
secrets_dir=$env_dir/secrets

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
value() { grep "^$1=" "$env_file" | tail -n 1 | cut -d= -f2-; }

add_if_missing POSTGRES_PASSWORD "$(random)"
add_if_missing TOLLGATE_ADMIN_KEY "tga-$(random)"
add_if_missing TOLLGATE_METRICS_TOKEN "tgm-$(random)"
add_if_missing TOLLGATE_PORT 8000  # the host port the gateway is published on
# Where compose finds the secret files: relative to docker-compose.yml when the env file is the default one.
if [ "$env_dir" = "$root" ]; then add_if_missing TOLLGATE_SECRETS_DIR ./secrets
else add_if_missing TOLLGATE_SECRETS_DIR "$secrets_dir"; fi

mkdir -p "$secrets_dir"
chmod 700 "$secrets_dir"
write_secret() {  # NAME VALUE: written whole, then renamed into place
  printf '%s\n' "$2" >"$secrets_dir/.$1.new"
  chmod 644 "$secrets_dir/.$1.new"
  mv -f "$secrets_dir/.$1.new" "$secrets_dir/$1"
}
write_secret postgres_password "$(value POSTGRES_PASSWORD)"
write_secret admin_key "$(value TOLLGATE_ADMIN_KEY)"
write_secret metrics_token "$(value TOLLGATE_METRICS_TOKEN)"
write_secret database_url "postgresql://tollgate:$(value POSTGRES_PASSWORD)@postgres:5432/tollgate"

if ((${#added[@]})); then
  echo "make-env: wrote ${added[*]} to $env_file (mode 0600)"
else
  echo "make-env: $env_file already has every setting; nothing changed"
fi
echo "make-env: secret files in $secrets_dir (admin key: $secrets_dir/admin_key)"
