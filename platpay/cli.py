"""`platpay` command line: serve | worker | migrate | platform create | backup | restore | ….

Every mistake an operator can make in the settings or at start ends in one line on stderr and a non-zero
exit, never a traceback: a setting that does not parse (exit 2, naming PLATPAY_<SETTING>), a master key
that is not one (exit 2), a database that cannot be reached or was migrated by a newer platpay (exit 1,
platpay.db.startup)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError
from pydantic_settings import SettingsError

from platpay import BASE_PATH, package_version
from platpay.config import Settings, get_settings

if TYPE_CHECKING:
    from platpay.db.faults import OutageLog
    from platpay.db.startup import StartupWait

# Locals are never shown in tracebacks: they can hold secrets.
app = typer.Typer(
    help="platpay: Platform Payments Service",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)
platform_app = typer.Typer(help="Manage platforms", no_args_is_help=True)
app.add_typer(platform_app, name="platform")
ledger_app = typer.Typer(help="Inspect the ledger", no_args_is_help=True)
app.add_typer(ledger_app, name="ledger")
agents_app = typer.Typer(help="Agents", no_args_is_help=True)
app.add_typer(agents_app, name="agents")
agents_audit_app = typer.Typer(help="The agents' audit trail", no_args_is_help=True)
agents_app.add_typer(agents_audit_app, name="audit")
sandbox_app = typer.Typer(help="Sandbox tenants", no_args_is_help=True)
app.add_typer(sandbox_app, name="sandbox")


# TCP ports a server can listen on (0 would mean "any free port").
MIN_PORT, MAX_PORT = 1, 65535


# Settings whose values an error line never repeats.
_SECRET_SETTINGS = frozenset({"master_key", "smtp_password", "smtp_username", "database_url"})


def _setting_problems(error: ValidationError | SettingsError) -> str:
    """What is wrong with the environment's settings, in one line naming each PLATPAY_ variable."""
    if isinstance(error, SettingsError):  # a JSON-valued setting (a list, an object) that is not JSON
        named = re.search(r'field "([^"]+)"', str(error))
        name = f"PLATPAY_{named[1].upper()}" if named else "a PLATPAY_ setting"
        return f"{name} is not valid JSON (this setting takes a JSON list or object)"
    problems = []
    for item in error.errors():
        message = str(item.get("msg", "invalid")).removeprefix("Value error, ")
        loc = item.get("loc") or ()
        if not loc or message.startswith("PLATPAY_"):
            problems.append(message)
            continue
        field = str(loc[0])
        given = item.get("input")
        shown = "" if field in _SECRET_SETTINGS or not isinstance(given, str) else f" (got {given[:60]!r})"
        problems.append(f"PLATPAY_{field.upper()}: {message}{shown}")
    return "; ".join(problems)


def _settings(**overrides: object) -> Settings:
    """The environment's settings with `overrides`; a setting that does not parse ends the command with one
    line naming it (exit 2)."""
    try:
        base = get_settings()
    except (ValidationError, SettingsError) as error:
        typer.echo(f"platpay: invalid settings: {_setting_problems(error)}", err=True)
        raise typer.Exit(code=2) from None
    settings = base.model_copy(update={k: v for k, v in overrides.items() if v is not None})
    from platpay import domains

    domains.wire(settings)  # the provider slots, the jobs' defaults and the master key its commands use
    return settings


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"platpay {package_version()}")
        raise typer.Exit()


@app.callback()
def _options(
    context: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="print platpay's version and exit", callback=_print_version, is_eager=True
        ),
    ] = False,
) -> None:
    """platpay: Platform Payments Service"""
    if context.invoked_subcommand != "mcp":  # `mcp` is a client of the API: it reads no PLATPAY_ setting
        _settings()  # a setting that does not parse stops every command here, in one line


def _require_master_key(settings: Settings, command: str) -> None:
    """The master key loads (generated under var/ when none is configured): a long-running process must not
    find out at its first sealed value that it has none."""
    from platpay.kit.crypto.sealing import load_master_key

    try:
        load_master_key(settings.master_key, settings.var_dir)
    except (ValueError, OSError) as error:
        typer.echo(f"platpay {command}: {error}", err=True)
        raise typer.Exit(code=2) from None


def _startup_wait(settings: Settings) -> StartupWait:
    """The command's wait for a database that is down or restarting (platpay.db.startup)."""
    from platpay.db.startup import StartupWait

    return StartupWait(
        settings.database_url,
        timeout_seconds=settings.db_startup_timeout_seconds,
        connect_timeout_seconds=settings.db_timeout_seconds,
    )


@contextlib.contextmanager
def _starting(command: str, settings: Settings, *, stdout_is_output: bool = False) -> Iterator[None]:
    """Around a command's first database steps: logs configured (the wait's `database.unavailable`
    and `database.recovered` events), and a start that failed ends in one line on stderr and exit 1,
    without a traceback. `stdout_is_output`: the command prints its result on stdout (--json), so the
    log lines of its start go to stderr."""
    from platpay.db.startup import StartupFailed
    from platpay.logging import configure

    configure(settings.log_level, json_output=settings.log_json)
    try:
        with contextlib.redirect_stdout(sys.stderr) if stdout_is_output else contextlib.nullcontext():
            yield
    except StartupFailed as failure:
        typer.echo(f"platpay {command}: {failure}", err=True)
        raise typer.Exit(code=1) from None


async def _bootstrap_if_empty(settings: Settings, *, outage: OutageLog) -> dict[str, object] | None:
    """On a fresh database create one sandbox platform and return its sandbox credentials."""
    from platpay.db.database import Database
    from platpay.platforms import service as platforms_service
    from platpay.tenants import service as tenants_service

    db = Database(settings.database_url, null_pool=True, outage=outage)
    try:
        async with db.transaction() as session:
            if await tenants_service.any_platform_exists(session):
                return None
            created = await platforms_service.create_platform(
                session,
                name="Sandbox Platform",
                is_regulated=False,
                currency_codes=None,
                uma_domain=None,
                settings=settings,
            )
    finally:
        await db.dispose()
    client_id, secret = created.credentials["sandbox"]
    return {"platformId": created.platform_id, "clientId": client_id, "clientSecret": secret}


def _print_banner(settings: Settings, credentials: dict[str, object] | None) -> None:
    base = settings.base_url() + BASE_PATH
    out = sys.stdout
    if credentials is None:
        out.write(
            f"platpay serving {base}\n"
            "  (platform already bootstrapped; new credentials: `platpay platform create --name NAME --json`)\n"
        )
    else:
        out.write(
            "\nplatpay: sandbox platform bootstrapped. These credentials are shown once.\n"
            f"  base URL      {base}\n"
            f"  platformId    {credentials['platformId']}\n"
            f"  clientId      {credentials['clientId']}\n"
            f"  clientSecret  {credentials['clientSecret']}\n"
            f"  try: curl -u {credentials['clientId']}:{credentials['clientSecret']} {base}/config\n\n"
        )
    out.flush()


@app.command()
def migrate() -> None:
    """Upgrade the database schema to the latest migration (waiting for a database that is restarting)."""
    from platpay.db import migrate as migrations

    settings = _settings()
    wait = _startup_wait(settings)
    with _starting("migrate", settings):
        wait.run("migrating the database", lambda: migrations.upgrade(settings.database_url))
    typer.echo(f"database at {migrations.head_revision()}")


WORKER_HEALTHCHECK_SECONDS = 60


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="interface to bind")] = None,
    port: Annotated[int | None, typer.Option(help="TCP port (1-65535)", min=MIN_PORT, max=MAX_PORT)] = None,
    workers: Annotated[int, typer.Option(help="HTTP server processes (at least 1)", min=1)] = 1,
    no_worker: Annotated[
        bool, typer.Option("--no-worker", help="do not run the job runner in-process")
    ] = False,
) -> None:
    """Migrate, bootstrap a sandbox platform on an empty database, and serve the API (waiting for a database
    that is restarting)."""
    import uvicorn

    from platpay import metrics
    from platpay.db import migrate as migrations
    from platpay.logging import configure, level_number, uvicorn_log_config

    settings = _settings(host=host, port=port)
    if not MIN_PORT <= settings.port <= MAX_PORT:  # PLATPAY_PORT, which the option's range cannot check
        raise typer.BadParameter(
            f"{settings.port} is not a TCP port (1-65535)", param_hint="'--port' / PLATPAY_PORT"
        )
    if no_worker:
        settings = settings.model_copy(update={"run_embedded_worker": False})
    configure(settings.log_level, json_output=settings.log_json)
    _require_master_key(settings, "serve")
    # Before any server process exists: it and every worker then add up into one /metrics.
    metrics.enable_multiprocess(metrics.directory_for(settings), clear_dead=True)
    wait = _startup_wait(settings)
    with _starting("serve", settings):
        wait.run("migrating the database", lambda: migrations.upgrade(settings.database_url))
        credentials = wait.run(
            "bootstrapping the sandbox platform",
            lambda: asyncio.run(_bootstrap_if_empty(settings, outage=wait.outage)),
        )
    _print_banner(settings, credentials)
    from platpay import serving

    # Our access log is the middleware's; uvicorn's own lines (startup, errors) render as JSON too.
    common: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "access_log": False,
        "log_config": uvicorn_log_config(settings.log_level, json_output=settings.log_json),
        "log_level": level_number(settings.log_level),
        "loop": settings.chosen_event_loop(),
        "http": serving.OneSendPerTurnProtocol,  # a response's head and body in one send
    }
    if workers > 1:
        # Children rebuild settings from the environment; carry the CLI overrides there.
        os.environ["PLATPAY_HOST"] = settings.host
        os.environ["PLATPAY_PORT"] = str(settings.port)
        # --no-worker or PLATPAY_RUN_EMBEDDED_WORKER=false: neither may be lost on the way to the children.
        os.environ["PLATPAY_RUN_EMBEDDED_WORKER"] = "true" if settings.run_embedded_worker else "false"
        # Not uvicorn's own supervisor: its processes share one listening socket and split keep-alive
        # connections unevenly; ours hands each connection to the process with the fewest (docs/operations.md).
        # A process gets this long to answer the supervisor's health check before it is replaced: starting
        # one (imports, the app's startup) can take tens of seconds on a loaded machine, and uvicorn's 5 s
        # default then kills and restarts processes in a loop that never serves.
        serving.run(
            "platpay.app:factory",
            factory=True,
            workers=workers,
            timeout_worker_healthcheck=WORKER_HEALTHCHECK_SECONDS,
            **common,
        )
    else:
        from platpay.app import create_app, freeze_startup_objects

        application = create_app(settings)
        freeze_startup_objects()
        uvicorn.run(application, **common)


@app.command()
def mcp(
    http: Annotated[bool, typer.Option("--http", help="serve Streamable HTTP instead of stdio")] = False,
    host: Annotated[str, typer.Option(help="interface to bind with --http")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port with --http", min=MIN_PORT, max=MAX_PORT)] = 8765,
    poll_seconds: Annotated[
        float, typer.Option(help="how often to re-read the agent's permissions", min=0.1)
    ] = 5.0,
) -> None:
    """An MCP server for one agent: PLATPAY_AGENT_TOKEN (required) against PLATPAY_API_URL (default
    http://127.0.0.1:8000/2025-10-13). Logs go to stderr; stdio is the default transport."""
    import logging
    import sys

    import anyio

    from platpay.mcp.server import DEFAULT_API_URL, PlatpayMCP

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    token = os.environ.get("PLATPAY_AGENT_TOKEN", "").strip()
    if not token:
        typer.echo("PLATPAY_AGENT_TOKEN is not set: the agent access token the server acts with", err=True)
        raise typer.Exit(code=2)
    api_url = os.environ.get("PLATPAY_API_URL", "").strip() or DEFAULT_API_URL
    server = PlatpayMCP(api_url=api_url, token=token, poll_seconds=poll_seconds)
    anyio.run(lambda: server.serve(http=http, host=host, port=port))


async def _refuse_newer_schema(settings: Settings, wait: StartupWait) -> None:
    """A worker never runs jobs on a database a newer platpay migrated (SchemaFromNewerVersion, one line);
    one not yet migrated is fine: `migrate` may still be running beside it."""
    from platpay.db import migrate as migrations
    from platpay.db.database import Database

    db = Database(settings.database_url, null_pool=True, outage=wait.outage)
    try:
        async with db.read() as session:
            current = await migrations.current_revision(session)
    finally:
        await db.dispose()
    if current is not None:
        migrations.check_known((current,))


def _run_on_chosen_loop(settings: Settings, coroutine: Coroutine[Any, Any, None]) -> None:
    """Run a long-lived process's loop on the event loop `serve` would use (PLATPAY_EVENT_LOOP)."""
    if settings.chosen_event_loop() == "uvloop":
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(coroutine)
    else:
        asyncio.run(coroutine)


@app.command()
def worker(
    concurrency: Annotated[
        int | None, typer.Option(help="default-lane jobs run at once (at least 1)", min=1)
    ] = None,
    lanes: Annotated[
        str | None,
        typer.Option(
            help="comma-separated lanes this worker claims, of: default (settlement steps, expiries, "
            "imports and every other state-changing job), webhooks, messages. All of them if not given. "
            "E.g. `--lanes webhooks` beside workers with `--lanes default,messages`: deliveries get "
            "processes (CPU) of their own. Every lane needs a worker that claims it."
        ),
    ] = None,
) -> None:
    """Run the job runner (webhook delivery, settlement steps, imports, expiries) as its own process
    (once the database answers: it waits for one that is restarting)."""
    from platpay import domains, metrics
    from platpay.db.database import Database
    from platpay.jobs import registry
    from platpay.jobs.runner import JobRunner

    settings = _settings(job_concurrency=concurrency)
    lane_names: list[str] | None = None
    if lanes is not None:  # checked before waiting for the database: a typo fails at once
        domains.load_jobs(settings.job_plugins)
        try:
            lane_names = [lane.name for lane in registry.chosen_lanes(lanes.split(","))]
        except registry.UnknownLane as error:
            raise typer.BadParameter(str(error), param_hint="'--lanes'") from None
    _require_master_key(settings, "worker")
    wait = _startup_wait(settings)
    with _starting("worker", settings):
        wait.until_reachable()
        wait.run("reading the schema's revision", lambda: asyncio.run(_refuse_newer_schema(settings, wait)))
    # What this process counts (webhook attempts, job runs) shows in the servers' /metrics.
    metrics.enable_multiprocess(metrics.directory_for(settings), clear_dead=False)
    domains.start(settings)

    async def main() -> None:
        db = Database.from_settings(settings)
        runner = JobRunner(db, settings, name=f"worker-{os.getpid()}", lanes=lane_names)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, runner.stop)
        process_gauge = metrics.process_metrics().processes.labels("worker")
        process_gauge.set(1)
        try:
            await runner.run_forever()
        finally:
            from platpay.events.delivery import close_clients

            await close_clients()
            await db.dispose()
            process_gauge.set(0)
            metrics.process_exiting()

    _run_on_chosen_loop(settings, main())


@platform_app.command("create")
def platform_create(
    name: Annotated[str, typer.Option(help="platform name")],
    regulated: Annotated[
        bool, typer.Option("--regulated", help="a regulated platform, which runs its own KYC")
    ] = False,
    unregulated: Annotated[
        bool, typer.Option("--unregulated", help="an unregulated platform (the default): we run KYC")
    ] = False,
    currencies: Annotated[
        str | None, typer.Option(help="comma-separated currency codes, e.g. USD,EUR")
    ] = None,
    uma_domain: Annotated[str | None, typer.Option(help="UMA domain, e.g. pay.example.com")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Create a platform directly in the database and print its sandbox and production credentials."""
    from platpay.db import migrate as migrations
    from platpay.db.database import Database
    from platpay.errors import ApiError
    from platpay.platforms import service as platforms_service

    if regulated and unregulated:
        raise typer.BadParameter(
            "give --regulated or --unregulated, not both", param_hint="'--regulated' / '--unregulated'"
        )
    settings = _settings()
    wait = _startup_wait(settings)
    with _starting("platform create", settings, stdout_is_output=True):
        wait.run("migrating the database", lambda: migrations.upgrade(settings.database_url))
    codes = [c.strip().upper() for c in currencies.split(",") if c.strip()] if currencies else None

    async def create() -> platforms_service.CreatedPlatform:
        # Once, not retried: a creation whose commit was cut off may have happened.
        db = Database(settings.database_url, null_pool=True, outage=wait.outage)
        try:
            async with db.transaction() as session:
                return await platforms_service.create_platform(
                    session,
                    name=name,
                    is_regulated=regulated,
                    currency_codes=codes,
                    uma_domain=uma_domain,
                    settings=settings,
                )
        finally:
            await db.dispose()

    try:
        created = asyncio.run(create())
    except ApiError as error:
        typer.echo(json.dumps(error.body()), err=True)
        raise typer.Exit(code=2) from None
    result: dict[str, Any] = {
        "platformId": created.platform_id,
        **{
            env: {"clientId": cid, "clientSecret": secret}
            for env, (cid, secret) in created.credentials.items()
        },
    }
    if as_json:
        typer.echo(json.dumps(result))
    else:
        for env in ("sandbox", "production"):
            typer.echo(
                f"{env}: clientId={result[env]['clientId']} clientSecret={result[env]['clientSecret']}"
            )
        typer.echo(f"platformId={created.platform_id}")


@ledger_app.command("verify")
def ledger_verify(
    as_json: Annotated[bool, typer.Option("--json", help="print the report as one JSON object")] = False,
) -> None:
    """Recompute every balance from postings and check every trial balance is zero (exit 1 if not)."""
    from platpay.db.database import Database
    from platpay.ledger import service as ledger_service

    settings = _settings()
    wait = _startup_wait(settings)

    async def run() -> ledger_service.VerifyReport:
        db = Database(settings.database_url, null_pool=True, outage=wait.outage)
        try:
            async with db.read() as session:
                return await ledger_service.verify(session)
        finally:
            await db.dispose()

    with _starting("ledger verify", settings, stdout_is_output=True):
        report = wait.run("reading the ledger", lambda: asyncio.run(run()))  # reads only: safe to retry
    if as_json:
        import dataclasses

        typer.echo(json.dumps({"ok": report.ok, **dataclasses.asdict(report)}))
    else:
        for line in report.lines():
            typer.echo(line)
    raise typer.Exit(code=0 if report.ok else 1)


@agents_audit_app.command("export")
def agents_audit_export(
    agent: Annotated[
        str | None, typer.Option("--agent", help="one agent's trail (default: every agent's)")
    ] = None,
) -> None:
    """Print the audit trail as JSON Lines, one record a line, chain by chain in sequence order: each record
    with its hash and hashAlgorithm, everything a holder of the master key needs to verify it offline
    (`platpay agents audit verify --file`)."""
    from platpay.agents.audit import service as audit
    from platpay.db.database import Database

    settings = _settings()
    wait = _startup_wait(settings)

    async def run() -> list[dict[str, Any]]:
        db = Database(settings.database_url, null_pool=True, outage=wait.outage)
        try:
            async with db.read() as session:
                return await audit.export(session, agent_id=agent)
        finally:
            await db.dispose()

    with _starting("agents audit export", settings, stdout_is_output=True):
        records = wait.run("reading the audit trail", lambda: asyncio.run(run()))  # reads only
    for record in records:
        typer.echo(json.dumps(record, sort_keys=True))


@agents_audit_app.command("verify")
def agents_audit_verify(
    agent: Annotated[
        str | None, typer.Option("--agent", help="one agent's trail (default: every agent's)")
    ] = None,
    file: Annotated[
        str | None,
        typer.Option(
            "--file",
            help="verify an export (JSON Lines; '-' for stdin) offline, with the master key, not the database",
        ),
    ] = None,
) -> None:
    """Check every agent's keyed hash chain; exit 1 naming the first bad record of each broken chain."""
    from platpay.agents.audit import service as audit
    from platpay.db.database import Database

    settings = _settings()
    ends: dict[str, tuple[int, str]] = {}
    if file is not None:
        if file == "-":
            text = sys.stdin.read()
        else:
            with open(file, encoding="utf-8") as exported:
                text = exported.read()
        try:
            problems, ends = audit.verify_export(text.splitlines(), key=audit.chain_key(), agent_id=agent)
        except ValueError as error:
            typer.echo(f"not an audit export: {error}", err=True)
            raise typer.Exit(code=2) from None
    else:
        wait = _startup_wait(settings)

        async def run() -> list[audit.Problem]:
            db = Database(settings.database_url, null_pool=True, outage=wait.outage)
            try:
                async with db.read() as session:
                    return await audit.verify(session, agent_id=agent)
            finally:
                await db.dispose()

        with _starting("agents audit verify", settings, stdout_is_output=True):
            problems = wait.run("reading the audit trail", lambda: asyncio.run(run()))  # reads only
    for problem in problems:
        typer.echo(
            f"BROKEN agent {problem.agent_id} at sequence {problem.sequence} (record {problem.record_id}): "
            f"{problem.message}"
        )
    broken = {problem.agent_id for problem in problems}
    for agent_id, (sequence, last_hash) in sorted(ends.items()):
        if agent_id not in broken:  # an export cannot show a removed tail: its end is to compare with a copy
            typer.echo(f"agent {agent_id} ends at sequence {sequence} with hash {last_hash}")
    if not problems:
        typer.echo("OK: every agent's audit chain verifies")
    raise typer.Exit(code=1 if problems else 0)


@sandbox_app.command("reset")
def sandbox_reset(
    platform: Annotated[str, typer.Option("--platform", help="the platform id (Platform:...)")],
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Delete everything of the platform's sandbox tenant but its credentials and configuration (as
    POST /sandbox/reset does), directly in the database."""
    from platpay import domains
    from platpay.db.database import Database
    from platpay.errors import ApiError
    from platpay.sandbox import service as sandbox_service
    from platpay.tenants import service as tenants_service
    from platpay.tenants.context import SANDBOX

    settings = _settings()
    domains.start(settings)
    wait = _startup_wait(settings)
    with _starting("sandbox reset", settings, stdout_is_output=True):
        wait.until_reachable()

    async def run() -> dict[str, int]:
        # Once, not retried: a reset whose commit was cut off may have happened.
        db = Database(settings.database_url, null_pool=True, outage=wait.outage)
        try:
            async with db.transaction() as session:
                tenant = await tenants_service.load_of_platform(
                    session, platform_id=platform, environment=SANDBOX
                )
                return await sandbox_service.reset(session, tenant=tenant)
        finally:
            await db.dispose()

    try:
        deleted = asyncio.run(run())
    except ApiError as error:
        typer.echo(json.dumps(error.body()), err=True)
        raise typer.Exit(code=2) from None
    if as_json:
        typer.echo(json.dumps({"platformId": platform, "deleted": deleted}))
    else:
        typer.echo(f"sandbox of {platform} reset: {sum(deleted.values())} rows deleted")


@app.command()
def backup(
    path: Annotated[Path, typer.Argument(help="the new file to write the copy to", show_default=False)],
) -> None:
    """A consistent copy of the SQLite database (PLATPAY_DATABASE_URL) in a new file, taken while platpay
    runs (SQLite's online backup, as of one commit). It holds no master key: keep that apart. PostgreSQL:
    pg_dump (docs/operations.md, Backups)."""
    from platpay.db import backup as backups

    settings = _settings()
    try:
        copied = backups.backup(settings.database_url, path, timeout=settings.db_timeout_seconds)
    except backups.BackupFailed as error:
        typer.echo(f"platpay backup: {error}", err=True)
        raise typer.Exit(code=1) from None
    typer.echo(
        f"backed up {copied.source} (schema {copied.revision}) to {copied.target}: {copied.bytes} bytes "
        f"in {copied.seconds:.2f}s"
    )
    typer.echo(
        "  the master key is not in it: keep PLATPAY_MASTER_KEY (or the var directory's master.key) apart, "
        "and the var directory's documents/ if the local document store holds files"
    )


@app.command()
def restore(
    path: Annotated[Path, typer.Argument(help="a file `platpay backup` wrote", show_default=False)],
    replace: Annotated[
        bool,
        typer.Option("--replace", help="overwrite an existing database (stop every platpay process first)"),
    ] = False,
) -> None:
    """Bring a backup back as the SQLite database PLATPAY_DATABASE_URL names (a new file, or an existing
    one with --replace). Then `platpay ledger verify`; `serve` or `migrate` bring an older schema forward."""
    from platpay.db import backup as backups

    settings = _settings()
    try:
        copied = backups.restore(
            path, settings.database_url, replace=replace, timeout=settings.db_timeout_seconds
        )
    except backups.BackupFailed as error:
        typer.echo(f"platpay restore: {error}", err=True)
        raise typer.Exit(code=1) from None
    typer.echo(
        f"restored {copied.source} (schema {copied.revision}) to {copied.target}: {copied.bytes} bytes "
        f"in {copied.seconds:.2f}s; check it with `platpay ledger verify`, with the master key it was made with"
    )


def main() -> None:
    app(prog_name="platpay")


if __name__ == "__main__":
    main()
