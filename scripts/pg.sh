#!/usr/bin/env bash
# Throwaway PostgreSQL cluster on loopback for tests.
#   pg.sh start DIR PORT   install Debian's postgresql if needed, initdb, start
#   pg.sh stop DIR         fast stop and delete DIR
# PG_EXTRA_OPTIONS adds server options (`-c name=value ...`).
# As root the cluster runs as the `postgres` user (PostgreSQL refuses root).
set -euo pipefail
cmd=${1:?start|stop}; dir=${2:?DIR}

find_bin() {
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$cmd" in
start)
  port=${3:?PORT}
  bin=$(find_bin)
  if [ -z "$bin" ]; then
    if [ "$(id -u)" != 0 ]; then
      echo "pg.sh: PostgreSQL is not installed; run 'apt-get install -y postgresql' as root" >&2; exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq postgresql >/dev/null
    # The package's own cluster is not used; only the binaries.
    pg_ctlcluster --force "$(ls /etc/postgresql)" main stop >/dev/null 2>&1 || true
    bin=$(find_bin)
  fi
  rm -rf "$dir"; mkdir -p "$dir"
  [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir"
  as_owner "$bin/initdb" -D "$dir/data" -A trust -U postgres >/dev/null
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off ${PG_EXTRA_OPTIONS:-}" start >/dev/null
  echo "postgresql+asyncpg://postgres@127.0.0.1:$port/postgres"
  ;;
stop)
  bin=$(find_bin)
  if [ -n "$bin" ] && [ -d "$dir/data" ]; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
  ;;
*) echo "usage: pg.sh start DIR PORT | stop DIR" >&2; exit 2 ;;
esac
