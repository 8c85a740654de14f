#!/usr/bin/env bash
# Run the platpay benchmarks one after the other (see bench/README.md). They print figures; none fails on
# them. Every run of a script waits for a quiet machine first where the script can (--wait-quiet).
#
#   bench/run_all.sh              # the speed suite: every row of the money path's targets, then the rest
#   bench/run_all.sh speed        # only the speed suite (issue 33's table)
#   bench/run_all.sh rest         # only the others (imports, lists, pages, faults, growth, ...)
#
# Arguments for each script come from the environment, e.g.
#   HTTP_ARGS="--rounds 3 --nice -10" TRANSFER_ARGS="--rounds 3" bench/run_all.sh speed
# To measure a given commit: git archive <commit> | tar -x -C /tmp/pp-<commit>, then
#   PYTHONPATH=/tmp/pp-<commit> bench/run_all.sh speed   (the scripts of this tree measure that commit's code)
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
WHAT="${1:-all}"

run() {  # run <title> <script> <args...>
  local title="$1"; shift
  echo "== $title"
  echo "   $PY $*"
  "$PY" "$@"
  echo
}

if [ "$WHAT" = all ] || [ "$WHAT" = speed ]; then
  # shellcheck disable=SC2086
  run "POST /transfer-out vs pgbench / sqlite3 running the same SQL" bench/transfer_out.py \
    ${TRANSFER_ARGS:---rounds 3 --duration 8 --warmup 2 --customers 300 --wait-quiet 10 --quiet-threshold 0.3}
  # shellcheck disable=SC2086
  run "card authorizations vs pgbench running the same SQL" bench/card_auth.py \
    ${CARD_ARGS:---rounds 3 --wait-quiet 20 --quiet-threshold 0.3}
  # shellcheck disable=SC2086
  run "an agent's transfer-out next to the platform's" bench/agent_transfer.py ${AGENT_ARGS:---rounds 3}
  # shellcheck disable=SC2086
  run "GET /config under load: platpay on SQLite and PostgreSQL vs a bare Starlette app" bench/http_config.py \
    ${HTTP_ARGS:---rounds 3 --wait-quiet 30}
  # shellcheck disable=SC2086
  run "GET /config under uvicorn and under granian: platpay (SQLite) and the bare app" bench/http_servers.py \
    ${SERVERS_ARGS:---rounds 3 --wait-quiet 30}
  # shellcheck disable=SC2086
  run "embedded wallets: EMAIL_OTP logins/s, CPU per signed retry" bench/wallet_auth.py ${WALLET_ARGS:-}
  # shellcheck disable=SC2086
  run "serve --workers: requests per process, uvicorn's supervisor vs platpay's" bench/serve_balance.py \
    ${BALANCE_ARGS:---rounds 3}
  # shellcheck disable=SC2086
  run "job runner: no-op jobs/s and webhook deliveries/s" bench/jobs_throughput.py ${JOBS_ARGS:-}
  # shellcheck disable=SC2086
  run "webhook deliveries/s while transfers run (a backlog waiting), next to the events produced" \
    bench/webhook_throughput.py ${HOOK_ARGS:---rounds 3 --wait-quiet 20}
fi

if [ "$WHAT" = all ] || [ "$WHAT" = rest ]; then
  # shellcheck disable=SC2086
  run "bulk customer import and POST /customers" bench/bulk_import.py ${BULK_ARGS:-}
  # shellcheck disable=SC2086
  run "GET /transactions with card transactions" bench/transactions_list.py ${LIST_ARGS:---rounds 3 --wait-quiet 30}
  # shellcheck disable=SC2086
  run "a tenant's webhooks beside a hanging neighbor" bench/webhook_isolation.py ${ISOLATION_ARGS:-}
  # shellcheck disable=SC2086
  run "request body parsing vs json.loads" bench/json_body.py ${JSON_ARGS:-}
  # shellcheck disable=SC2086
  run "the connection policy's CPU per statement" bench/connection_policy.py ${POLICY_ARGS:-}
  # shellcheck disable=SC2086
  run "database growth per transfer, before and after retention" bench/retention_growth.py ${GROWTH_ARGS:-}
  # shellcheck disable=SC2086
  run "advancing a sandbox tenant's clock" bench/sandbox_clock.py ${CLOCK_ARGS:-}
  # shellcheck disable=SC2086
  run "platpay mcp tool calls next to direct HTTP calls" bench/mcp_agent.py ${MCP_ARGS:-}
  # shellcheck disable=SC2086
  run "documents and verifications" bench/documents.py ${DOCUMENT_ARGS:-}
  # shellcheck disable=SC2086
  run "console pages over large tenants" bench/console_pages.py ${CONSOLE_ARGS:---rounds 1 --wait-quiet 30}
  # shellcheck disable=SC2086
  run "money movement through database faults" bench/db_faults.py ${FAULT_ARGS:-}
  # shellcheck disable=SC2086
  run "reads on a streaming standby" bench/read_replica.py ${REPLICA_ARGS:-}
  # shellcheck disable=SC2086
  run "the capacity model's inputs: CPU, round trips, WAL and storage per operation" bench/capacity.py ${CAPACITY_ARGS:-}
  # shellcheck disable=SC2086
  run "cold start of the installed wheel" bench/cold_start.py ${COLD_ARGS:-}
fi
