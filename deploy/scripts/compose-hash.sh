#!/usr/bin/env bash
# One hash over the files the compose stack is built from (deploy/, Dockerfiles, docker-compose*.yml,
# pyproject.toml, .dockerignore; tracked or new, as they are in the working tree). compose-check.sh records it in
# deploy/compose-checked.sha after a passing run; .ci/run runs the check again when the hash differs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
git ls-files -z --cached --others --exclude-standard -- deploy '*Dockerfile*' 'docker-compose*.yml' pyproject.toml \
    .dockerignore \
  | grep -zv '^deploy/compose-checked.sha$' | sort -zu \
  | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
  | xargs -0 sha256sum | sha256sum | cut -d' ' -f1
