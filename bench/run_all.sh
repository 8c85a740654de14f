#!/usr/bin/env bash
# Run the platpay benchmarks one after the other (see bench/README.md). They print figures; none fails on
# them. Arguments for each script come from the environment, e.g.
#   HTTP_ARGS="--rounds 3 --nice -10" JOBS_ARGS="--jobs 20000" BULK_ARGS="--nice -10" bench/run_all.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"

echo "== GET /config under load: platpay on SQLite and PostgreSQL vs a bare Starlette app"
# shellcheck disable=SC2086
"$PY" bench/http_config.py ${HTTP_ARGS:-}
echo
echo "== job runner: no-op jobs/s and webhook deliveries/s, SQLite and PostgreSQL"
# shellcheck disable=SC2086
"$PY" bench/jobs_throughput.py ${JOBS_ARGS:-}
echo
echo "== webhook deliveries/s while transfers run (a backlog waiting), next to the events produced"
# shellcheck disable=SC2086
"$PY" bench/webhook_throughput.py ${HOOK_ARGS:-}
echo
echo "== bulk customer import (10k and 100k rows) and POST /customers, SQLite and PostgreSQL"
# shellcheck disable=SC2086
"$PY" bench/bulk_import.py ${BULK_ARGS:-}
