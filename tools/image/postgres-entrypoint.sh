#!/bin/sh
# First start: a cluster whose superuser is POSTGRES_USER (password POSTGRES_PASSWORD, required from other
# hosts) with the database POSTGRES_DB; then PostgreSQL in the foreground.
set -eu
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}" "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  if [ "$POSTGRES_DB" != postgres ]; then createdb --username="$POSTGRES_USER" "$POSTGRES_DB"; fi
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec postgres -c listen_addresses='*'
