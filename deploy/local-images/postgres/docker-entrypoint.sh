#!/bin/bash
# What the official postgres image's entrypoint does for `postgres` with an empty data directory:
# initdb with POSTGRES_USER as superuser and POSTGRES_PASSWORD (scram-sha-256 from other hosts,
# trust on the socket), POSTGRES_DB created, then the server as the user postgres on every address.
set -euo pipefail
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }

if [ "${1:-}" != postgres ]; then exec "$@"; fi
mkdir -p "$PGDATA" /var/run/postgresql
chown postgres:postgres "$PGDATA" /var/run/postgresql
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  user="${POSTGRES_USER:-postgres}"
  db="${POSTGRES_DB:-$user}"
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo 'POSTGRES_PASSWORD is not set: the superuser would have no password' >&2
    exit 1
  fi
  pwfile="$(mktemp)"
  printf '%s' "$POSTGRES_PASSWORD" >"$pwfile"
  chown postgres "$pwfile"
  as_postgres initdb --username="$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 -D "$PGDATA" >/dev/null
  rm -f "$pwfile"
  printf 'host all all all scram-sha-256\n' >>"$PGDATA/pg_hba.conf"
  printf "listen_addresses = '*'\n" >>"$PGDATA/postgresql.conf"
  # The database is made on a server reachable only through a socket of its own, so that a
  # healthcheck (pg_isready on /var/run/postgresql) sees nothing before the real start.
  sock="$(mktemp -d)"
  chown postgres "$sock"
  as_postgres pg_ctl -D "$PGDATA" -w -o "-c listen_addresses='' -c unix_socket_directories=$sock" start >/dev/null
  if [ "$db" != postgres ]; then
    as_postgres psql -q -h "$sock" -U "$user" -d postgres -v ON_ERROR_STOP=1 -c "create database \"$db\""
  fi
  as_postgres pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  rmdir "$sock"
  echo "PostgreSQL init: superuser $user, database $db" >&2
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups "$@"
