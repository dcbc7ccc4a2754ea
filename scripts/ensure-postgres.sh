#!/usr/bin/env bash
# Makes sure a PostgreSQL server answers on 127.0.0.1:5432 with trust auth for
# user postgres and a database named test, as the tests expect. Starts the
# machine's cluster when it is down; installs PostgreSQL from Debian's packages
# when it is missing.
set -euo pipefail

ready() { pg_isready -q -h 127.0.0.1 -p 5432 >/dev/null 2>&1; }

cluster_version() { ls /etc/postgresql 2>/dev/null | sort -V | tail -n1; }

if ! command -v pg_isready >/dev/null 2>&1 || [ -z "$(cluster_version)" ]; then
  echo "ensure-postgres: installing PostgreSQL"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql >/dev/null
fi

# The machine's package may come preinstalled with password or peer auth:
# the tests connect as postgres over loopback without a password, so every
# local and loopback rule is set to trust (idempotent; reloaded when changed).
hba="/etc/postgresql/$(cluster_version)/main/pg_hba.conf"
if grep -Eq '^(local|host)\s.*\s(peer|scram-sha-256|md5)$' "$hba"; then
  echo "ensure-postgres: trust auth for local and loopback connections"
  sed -i -E 's/^((local|host)\s.*\s)(peer|scram-sha-256|md5)$/\1trust/' "$hba"
  if ready; then
    pg_ctlcluster --skip-systemctl-redirect "$(cluster_version)" main reload
  fi
fi

if ! ready; then
  echo "ensure-postgres: starting the cluster"
  pg_ctlcluster --skip-systemctl-redirect "$(cluster_version)" main start
  for _ in $(seq 1 50); do ready && break; sleep 0.2; done
fi
ready || { echo "ensure-postgres: PostgreSQL does not answer on 127.0.0.1:5432" >&2; exit 1; }

if ! psql -h 127.0.0.1 -U postgres -d test -c 'select 1' >/dev/null 2>&1; then
  psql -h 127.0.0.1 -U postgres -d postgres -c 'create database test' >/dev/null
fi
echo "ensure-postgres: ready"
