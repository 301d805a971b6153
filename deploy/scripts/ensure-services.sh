#!/usr/bin/env bash
# Start PostgreSQL and Redis for the test suite when they are not already running.
# On this project's machines both are started before a session; a fresh machine may lack them.
set -uo pipefail

pg_up() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

if ! pg_up; then
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    (apt-get update -qq && apt-get install -y -qq postgresql) >/dev/null 2>&1 || true
  fi
  ver=$(ls /etc/postgresql 2>/dev/null | head -n1)
  if [ -n "$ver" ]; then
    pg_ctlcluster --skip-systemctl-redirect "$ver" main start || true
  fi
  for _ in $(seq 1 30); do pg_up && break; sleep 1; done
fi

if ! redis_up; then
  if ! command -v redis-server >/dev/null 2>&1; then
    (apt-get update -qq && apt-get install -y -qq redis-server) >/dev/null 2>&1 || true
  fi
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
  for _ in $(seq 1 30); do redis_up && break; sleep 1; done
fi

# docker-compose (Debian's) checks docker-compose.yml offline in tests/deploy.
command -v docker-compose >/dev/null 2>&1 \
  || (apt-get update -qq && apt-get install -y -qq docker-compose) >/dev/null 2>&1 || true

# Debian's Chromium for the console's browser tests (tests/console, Playwright); quiet when present.
command -v chromium >/dev/null 2>&1 \
  || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1 || true

pg_up && echo "postgres: up" || echo "postgres: NOT available (postgres tests will fail)"
redis_up && echo "redis: up" || echo "redis: NOT available (redis tests will fail)"
# A database the tests own, so they never touch anything else on the server.
psql -h 127.0.0.1 -U postgres -tc "SELECT 1 FROM pg_database WHERE datname='tollgate_test'" 2>/dev/null | grep -q 1 \
  || psql -h 127.0.0.1 -U postgres -c "CREATE DATABASE tollgate_test" >/dev/null 2>&1 || true
exit 0
