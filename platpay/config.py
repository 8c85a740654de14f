"""Settings, read from the environment with the PLATPAY_ prefix."""

from __future__ import annotations

import base64
import binascii
import importlib.util
from functools import lru_cache
from pathlib import Path
from typing import Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

DEFAULT_SQLITE_PATH = Path("var") / "platpay.db"
MASTER_KEY_BYTES = 32
# The database URL's drivers platpay runs on, each with the form of its URL.
SUPPORTED_DRIVERS = {
    "sqlite+aiosqlite": "sqlite+aiosqlite:///path/to/platpay.db",
    "postgresql+asyncpg": "postgresql+asyncpg://user@host/db",
}


def decode_master_key(text: str) -> bytes:
    """A master key's 32 bytes from its base64url text (padding optional; the standard alphabet's + and /
    are accepted too); ValueError saying what is wrong, never echoing the key."""
    value = text.strip()
    if not value:
        raise ValueError("is empty")
    try:
        key = base64.b64decode(
            value.replace("-", "+").replace("_", "/") + "=" * (-len(value) % 4), validate=True
        )
    except binascii.Error:
        raise ValueError(f"is not base64url (of {MASTER_KEY_BYTES} bytes)") from None
    if len(key) != MASTER_KEY_BYTES:
        raise ValueError(f"must be base64url of exactly {MASTER_KEY_BYTES} bytes, not {len(key)}")
    return key


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PLATPAY_", extra="ignore")

    def chosen_event_loop(self) -> Literal["asyncio", "uvloop"]:
        """`event_loop` resolved: uvloop only if installed (uvicorn[standard] brings it)."""
        choice = self.event_loop
        if choice == "auto":
            choice = "asyncio" if self.database_url.startswith("sqlite") else "uvloop"
        if choice == "uvloop" and importlib.util.find_spec("uvloop") is None:
            return "asyncio"
        return choice

    database_url: str = Field(
        default=f"sqlite+aiosqlite:///{DEFAULT_SQLITE_PATH}",
        description="SQLAlchemy URL: sqlite+aiosqlite:///path or postgresql+asyncpg://user@host/db",
    )
    database_read_url: str | None = Field(
        default=None,
        description="PostgreSQL only, optional: a streaming standby of the primary (postgresql+asyncpg://...) "
        "serving the GET lists and gets that need no read-your-writes guarantee; a tenant that just wrote, "
        "every write, money transaction, idempotent replay, authentication and job stays on the primary, and "
        "a lagging or unreachable standby sends reads back to the primary (docs/operations.md, read replicas)",
    )
    database_read_max_lag_seconds: float = Field(
        default=2.0,
        gt=0,
        description="the most a read on PLATPAY_DATABASE_READ_URL may miss: it is used only while it has "
        "replayed the primary's WAL as of at most this many seconds ago (sampled every 0.5 s); beyond, the "
        "primary serves",
    )
    credential_cache_seconds: float = Field(
        default=2.0,
        ge=0,
        description="the longest a process keeps a credential it read (an API token with its tenant). "
        "PostgreSQL: kept while PostgreSQL notifies the process of every change to them; a change made "
        "through the process applies at once, one made elsewhere when its notification arrives "
        "(milliseconds); this bound holds if the listening connection is silently lost. SQLite (a file): "
        "kept while no connection of any process has committed anything since (the file's change "
        "counter, read on every request). 0: read on every request",
    )
    host: str = Field(default="127.0.0.1", description="where `serve` listens (also `--host`)")
    port: int = Field(default=8000, description="the port `serve` listens on (also `--port`)")
    public_base_url: str | None = Field(
        default=None,
        description="the base URL printed at start and used in links platpay hands out (an invitation's `url`); "
        "defaults to http://HOST:PORT",
    )
    var_dir: Path = Field(
        default=Path("var"),
        description="local state: the default SQLite file, the generated master key, metrics, local documents",
    )
    master_key: str | None = Field(
        default=None,
        description="base64url of 32 bytes sealing secrets at rest (webhook signing keys, stored idempotent "
        "responses); generated in <var_dir>/master.key when unset, which suits a single machine only: set it "
        "explicitly when processes run on several machines",
    )
    master_key_file: Path | None = Field(
        default=None,
        description="a file holding the master key (a container secret such as /run/secrets/master_key), "
        "read once at start instead of master_key. Set one of the two, not both; an empty, malformed or "
        "unreadable key stops every command with one line (exit 2)",
    )
    log_level: str = Field(default="INFO", description="the lowest level logged (DEBUG, INFO, WARNING, ...)")
    log_json: bool = Field(default=True, description="log JSON lines on stdout; `false` for plain lines")
    metrics_dir: Path | None = Field(
        default=None,
        description="where every `serve` and `worker` process on this machine records its metrics, for "
        "/metrics to add them up; defaults to <var_dir>/metrics",
    )

    # HTTP
    event_loop: Literal["auto", "asyncio", "uvloop"] = Field(
        default="auto",
        description="event loop of `serve` and `worker`: auto picks uvloop on PostgreSQL (asyncpg costs about "
        "a third of the CPU there) and asyncio's own on SQLite (uvloop serves its inline reads unevenly: "
        "a p99 of ~8x the median under load); see bench/README.md",
    )
    max_body_bytes: int = Field(
        default=1_048_576, description="request body limit in bytes (413 above it); uploads have their own"
    )
    db_pool_size: int = Field(
        default=20,
        description="connections per process; keep it above job_concurrency, so jobs never wait for a "
        "connection (up to twice as many more under bursts, plus a quarter of it for authentication reads and "
        "one listening for credential changes on PostgreSQL: size PostgreSQL's max_connections for every "
        "process)",
    )
    db_timeout_seconds: float = Field(
        default=5.0,
        gt=0,
        description="longest wait for the database: connecting, a free pooled connection, SQLite's busy "
        "lock and write queue; past it the request answers 503 SERVICE_UNAVAILABLE with Retry-After",
    )
    db_statement_timeout_seconds: float = Field(
        default=20.0,
        ge=0,
        description="PostgreSQL: longest a statement of the server or a worker may run (the server's "
        "statement_timeout; the client gives up 2 s later, which also ends a wait on a connection whose "
        "packets are dropped); the request answers 503, the job is retried. 0 leaves it to the server",
    )
    db_idle_in_transaction_timeout_seconds: float = Field(
        default=30.0,
        ge=0,
        description="PostgreSQL: the server ends a session left idle inside a transaction this long (a "
        "client that vanished mid-transaction), releasing its locks. 0 leaves it to the server",
    )
    db_keepalive_idle_seconds: int = Field(
        default=10, ge=1, description="PostgreSQL: TCP keepalive probes start after this much silence"
    )
    db_keepalive_interval_seconds: int = Field(
        default=3, ge=1, description="PostgreSQL: seconds between TCP keepalive probes"
    )
    db_keepalive_count: int = Field(
        default=3,
        ge=1,
        description="PostgreSQL: unanswered keepalive probes before the connection is given up; with the "
        "two above, a connection whose peer went silent (even with data in flight: TCP_USER_TIMEOUT) is "
        "discarded after idle + interval x count seconds (19 by default)",
    )
    db_startup_timeout_seconds: float = Field(
        default=60.0,
        ge=0,
        description="how long a starting command (serve, worker, migrate, ...) waits for a database that "
        "is down or restarting, retrying with backoff; past it the command exits 1 with one line "
        "(docs/operations.md, When the database goes away)",
    )

    # The console (/console)
    console_session_seconds: int = Field(
        default=28_800,
        ge=60,
        le=2_592_000,
        description="how long a console sign-in lasts (wall-clock seconds) before the console asks again",
    )
    console_signin_per_client: int = Field(
        default=10,
        ge=1,
        description="console sign-in attempts allowed per client id per window (429 past it)",
    )
    console_signin_per_address: int = Field(
        default=30, ge=1, description="console sign-in attempts allowed per client address per window"
    )
    console_signin_window_seconds: int = Field(
        default=300, ge=1, description="the window the console's sign-in limits count over"
    )

    # Jobs
    run_embedded_worker: bool = Field(
        default=True, description="run the job runner inside `serve` (`serve --no-worker` turns it off)"
    )
    job_poll_seconds: float = Field(default=0.25, description="how often a job runner looks for due jobs")
    job_lease_seconds: float = Field(
        default=30.0, description="a claimed job's lease: a job whose worker died is retried when it expires"
    )
    job_batch_size: int = Field(default=32, description="jobs a runner claims at once, at most")
    job_concurrency: int = Field(
        default=16,
        description="jobs running at once per process: settlement steps, expiries, imports and every other "
        "state-changing job (webhook deliveries and messages never take it: they have lanes of their own)",
    )
    job_max_attempts: int = Field(default=25, description="attempts of a failing job before it is given up")
    job_plugins: str = Field(default="", description="comma-separated modules registering extra job handlers")

    # Providers (kit/providers.py): a registered name, or an import path `package.module:factory`
    fx_rate_provider: str = Field(
        default="sandbox",
        description="where FX rates come from: a registered provider name, or package.module:factory for an "
        "adapter of your own (docs/architecture.md, providers)",
    )
    payout_rail: str = Field(
        default="simulated",
        description="production tenants' payout rail: `simulated` settles every payment after "
        "sandbox_settlement_seconds, or package.module:factory",
    )
    sandbox_payout_rail: str = Field(
        default="sandbox",
        description="sandbox tenants' payout rail: `sandbox` follows the magic account suffixes (docs/sandbox.md)",
    )
    uma_network: str = Field(
        default="offline",
        description="production tenants' UMA counterparties on other domains: `offline` knows none",
    )
    sandbox_uma_network: str = Field(
        default="sandbox",
        description="sandbox tenants' UMA counterparties on other domains: `sandbox`, the scripted "
        "sandbox.uma.money ones",
    )
    card_issuer: str = Field(
        default="simulated",
        description="production tenants' card issuer: `simulated` activates every card at once and leaves every "
        "authorization to platpay's decisioning, or package.module:factory",
    )
    sandbox_card_issuer: str = Field(
        default="sandbox",
        description="sandbox tenants' card issuer: `sandbox` follows the magic values (docs/cards.md)",
    )
    account_provider: str = Field(
        default="immediate",
        description="production tenants' account institution: `immediate` opens every internal account ACTIVE "
        "with its deposit details and every external account ACTIVE at registration, or package.module:factory "
        "(platpay/accounts/providers.py)",
    )
    sandbox_account_provider: str = Field(
        default="sandbox",
        description="sandbox tenants' account institution: `sandbox` follows the magic values "
        "(docs/customers-and-accounts.md)",
    )

    # Outbound messages (messages/providers.py): email and SMS, sent by jobs after the business commit
    email_sender: str | None = Field(
        default=None,
        description="how emails (wallet OTPs, contact verification codes) leave: `smtp`, `none` (recorded as "
        "sent, goes nowhere) or package.module:factory; unset: `smtp` when smtp_host is set, else `none`",
    )
    sms_sender: str = Field(
        default="none",
        description="how SMS leave: `none` (recorded as sent, goes nowhere) or an SMS gateway adapter "
        "package.module:factory",
    )

    # Onboarding
    kyc_provider: str = Field(
        default="manual",
        description="KYC/KYB reviews of production tenants: `manual` (every review waits for a person) or "
        "package.module:factory",
    )
    sandbox_kyc_provider: str = Field(
        default="sandbox", description="KYC/KYB reviews of sandbox tenants: `sandbox` (the magic suffixes)"
    )
    document_store: str = Field(
        default="local",
        description="where documents' files live: `local` (<var_dir>/documents) or package.module:factory",
    )
    document_max_bytes: int = Field(
        default=10 * 1024 * 1024, description="largest document file (413 above, cut off while streaming)"
    )
    kyc_link_ttl_seconds: int = Field(
        default=86_400, ge=60, description="how long a KYC link (the hosted verification page) can be used"
    )
    end_user_terms_version: str = Field(
        default="V1",
        min_length=1,
        max_length=64,
        description="the current version of the End User Terms (GET /customers/end-user-terms): the only one "
        "an endUserTermsConsent may name",
    )
    end_user_terms_url: str | None = Field(
        default=None,
        description="where the current End User Terms are read; defaults to platpay's placeholder page "
        "<base URL>/end-user-terms/<version>",
    )
    smtp_host: str | None = Field(default=None, description="SMTP server the `smtp` email sender uses")
    smtp_port: int = Field(
        default=587, ge=1, le=65535, description="the SMTP server's port; 465 speaks TLS from the start"
    )
    smtp_username: str | None = Field(default=None, description="SMTP AUTH user; no AUTH when unset")
    smtp_password: SecretStr | None = Field(default=None, description="SMTP AUTH password; never logged")
    smtp_starttls: bool = Field(
        default=True, description="require STARTTLS before sending (`false` for a local relay without TLS)"
    )
    smtp_from: str = Field(
        default="platpay <no-reply@localhost>", description="From of emails whose sender names none"
    )
    smtp_timeout_seconds: float = Field(default=10.0, gt=0, description="longest wait for each SMTP step")
    message_concurrency: int = Field(
        default=8, ge=1, description="messages being sent at once per runner; a lane of their own"
    )
    message_max_attempts: int = Field(
        default=12,
        ge=1,
        description="send attempts before a message is FAILED (a 5xx refusal fails it at once)",
    )
    message_retry_base_seconds: float = Field(
        default=5.0, gt=0, description="first retry delay of a message; doubles each try, at most 30 minutes"
    )

    # Webhooks
    webhook_retry_base_seconds: float = Field(
        default=5.0, description="first retry delay of a delivery; doubles each try, with jitter"
    )
    webhook_retry_max_interval_seconds: float = Field(
        default=1800.0, description="longest wait between two tries of a delivery"
    )
    webhook_retry_max_age_seconds: float = Field(
        default=7 * 24 * 3600.0,
        description="a delivery still failing this long after its first attempt is given up",
    )
    webhook_timeout_seconds: float = Field(
        default=10.0, gt=0, description="longest one delivery attempt may take, connecting included"
    )
    webhook_connect_timeout_seconds: float = Field(
        default=3.0, gt=0, description="longest wait to connect to a webhook endpoint"
    )
    webhook_concurrency: int = Field(
        default=32,
        ge=1,
        description="deliveries in flight per runner; a lane of their own, apart from job_concurrency",
    )
    webhook_endpoint_max_in_flight: int = Field(
        default=8, ge=1, description="deliveries in flight to one endpoint at once, across every worker"
    )
    webhook_batch_size: int = Field(
        default=256,
        ge=1,
        description="deliveries to one endpoint a worker takes at once per in-flight slot: sent one after "
        "the other over a kept-alive connection, each signed on its own, recorded together at the end and "
        "at least once a second before it (a worker that dies meanwhile leaves those sent since the last "
        "recording to be sent again: at least once)",
    )
    webhook_failing_after: int = Field(
        default=5,
        ge=1,
        description="failed attempts in a row after which an endpoint is FAILING: its queue waits and one "
        "probe delivery is tried at its backoff interval",
    )
    webhook_response_max_chars: int = Field(
        default=2048, description="how much of an endpoint's answer each delivery attempt records"
    )
    production_webhooks_require_public_https: bool = Field(
        default=False,
        description="SSRF protection: production tenants may only use https endpoints resolving to public "
        "addresses (checked on PATCH /config and at every delivery)",
    )

    # Sandbox rails
    sandbox_settlement_seconds: float = Field(
        default=1.0,
        description="how long a sandbox rail takes to settle a transfer after it starts processing",
    )
    sandbox_slow_settlement_seconds: float = Field(
        default=600.0,
        description="how long the sandbox's slow transfers (suffix 006) stay unsettled, and cancellable",
    )
    sandbox_slow_failure_seconds: float = Field(
        default=30.0,
        description="how long the sandbox's 'pending then fails' cases (suffix 005) stay pending",
    )
    sandbox_card_delay_seconds: float = Field(
        default=30.0,
        description="the sandbox card issuer's slow cases (suffix 005): activation of a card, confirmation of "
        "an authorization's pull",
    )
    sandbox_account_delay_seconds: float = Field(
        default=1.0,
        ge=0,
        description="the sandbox account provider's slow cases: a provisioning attempt of a pending internal "
        "account, the review of an external account (ownership verification, UNDER_REVIEW)",
    )
    card_reveal_seconds: float = Field(
        default=300.0,
        gt=0,
        le=3600,
        description="how long the URL POST /cards/{id}/reveal mints shows the card page (once)",
    )

    # Incoming payments
    incoming_approval_timeout_seconds: float = Field(
        default=5.0,
        gt=0,
        description="how long after answering 202 to INCOMING_PAYMENT.PENDING (or, with no webhook endpoint, "
        "after the payment arrived) the platform has to approve or reject it before it is auto-rejected",
    )

    # Agents
    agent_device_code_ttl_seconds: float = Field(
        default=86_400.0, gt=0, description="how long an agent's device code can be redeemed"
    )
    agent_approval_ttl_seconds: float = Field(
        default=86_400.0,
        gt=0,
        description="how long an agent action waits for approval before it fails and releases its reservation",
    )

    # FX, quotes and their sandbox lifecycle (every delay a setting, so tests can compress it)
    fx_rate_cache_seconds: float = Field(
        default=300.0,
        ge=0,
        description="how long GET /exchange-rates and lookups reuse a fetched rate (its updatedAt)",
    )
    quote_ttl_seconds: float = Field(default=300.0, gt=0, description="how long a quote can be executed")
    lookup_ttl_seconds: float = Field(
        default=900.0, gt=0, description="how long a receiver lookup's lookupId can be used in a quote"
    )
    sandbox_quote_slow_seconds: float = Field(
        default=360.0, description="how long a quote payout to a ...003 account takes to complete"
    )
    sandbox_bank_return_seconds: float = Field(
        default=30.0, description="how long after COMPLETED a ...005 account's bank return turns it FAILED"
    )
    sandbox_refund_seconds: float = Field(
        default=1.0, description="how long an automatic refund of a failed quote payout takes to settle"
    )
    sandbox_uma_long_pending_seconds: float = Field(
        default=3600.0,
        description="how long a $pending.long.* UMA counterparty takes: outgoing payments to it stay "
        "PROCESSING, incoming ones from it arrive, this long",
    )

    # Idempotency
    idempotency_retention_hours: int = Field(
        default=48, description="how long an Idempotency-Key replays its first response"
    )

    # Retention (docs/operations.md, Retention): what the job runners' maintenance prunes, in small batches.
    # 0 keeps the rows forever. The ledger, transactions, events, webhook deliveries and audit trails are
    # never pruned.
    webhook_attempt_retention_days: int = Field(
        default=30,
        ge=0,
        description="days a webhook delivery attempt's record (its answer, error, latency) is kept; the "
        "delivery (envelope id, event, status, attempt count, last answer's status) and its event stay. "
        "0: forever",
    )
    message_body_retention_days: int = Field(
        default=30,
        ge=0,
        description="days a sent or failed message keeps its body (a sandbox mailbox's text), counted from "
        "when it was queued; then the body is erased and the message leaves the mailbox, its record "
        "(recipient, category, status, times) stays. 0: forever",
    )
    job_retention_days: int = Field(
        default=7, ge=0, description="days a finished (DONE) job is kept after it finished. 0: forever"
    )
    dead_job_retention_days: int = Field(
        default=30,
        ge=0,
        description="days a job given up (DEAD, with its last error) is kept after it was given up. 0: forever",
    )
    retention_batch_size: int = Field(
        default=500,
        ge=1,
        le=10_000,
        description="rows one pruning statement deletes or clears, at most: each batch is its own short "
        "transaction",
    )
    retention_batches_per_pass: int = Field(
        default=20,
        ge=1,
        description="batches of each kind one maintenance pass (every 5 minutes, in every worker) runs, at "
        "most; what is left waits for the next pass",
    )

    # Embedded wallets (wallets/): custody, signed retries, sessions, OIDC, WebAuthn, abuse limits
    wallet_custody: str = Field(
        default="sandbox",
        description="custody of wallet secrets: `sandbox` (envelope encryption under the master key) or an "
        "import path `package.module:factory` (a KMS/HSM adapter; platpay/wallets/providers.py)",
    )
    wallet_challenge_ttl_seconds: int = Field(
        default=300,
        ge=1,
        le=3600,
        description="how long a signed retry's 202 challenge (requestId), and a passkey challenge, is valid",
    )
    wallet_session_ttl_seconds: int = Field(
        default=900, ge=60, le=86400, description="how long an authentication session lasts"
    )
    oidc_issuers: dict[str, str] = Field(
        default={
            "https://accounts.google.com": "https://www.googleapis.com/oauth2/v3/certs",
            "accounts.google.com": "https://www.googleapis.com/oauth2/v3/certs",
            "https://appleid.apple.com": "https://appleid.apple.com/auth/keys",
        },
        description="OIDC issuers accepted for OAUTH credentials (JSON object issuer -> JWKS URL); production "
        "tenants verify ID token signatures against the issuer's JWKS, fetched over HTTP and cached",
    )
    oidc_jwks_cache_seconds: int = Field(
        default=3600,
        ge=0,
        description="how long a fetched JWKS is reused (an unknown kid refetches, at most once a minute)",
    )
    oidc_jwks_timeout_seconds: float = Field(
        default=5.0, gt=0, description="longest wait for a JWKS fetch (then 503)"
    )
    oidc_max_token_age_seconds: int = Field(
        default=60, ge=1, description="an ID token's iat must be less than this many seconds old"
    )
    oidc_clock_skew_seconds: int = Field(default=5, ge=0, description="tolerated clock skew on iat and exp")
    webauthn_rp_id: str = Field(default="localhost", description="the passkey relying party id (a domain)")
    webauthn_rp_name: str = Field(default="platpay", description="the relying party name shown by browsers")
    webauthn_origins: list[str] = Field(
        default=["http://localhost", "https://localhost"],
        description="origins a passkey ceremony may come from (JSON list; the app's own web origins)",
    )
    wallet_verify_limit: int = Field(
        default=10,
        ge=1,
        description="verify attempts per credential per window (429 RATE_LIMITED with Retry-After past it; "
        "counted in the database, so across processes)",
    )
    wallet_verify_account_limit: int = Field(
        default=30, ge=1, description="verify attempts per wallet (all its credentials) per window"
    )
    wallet_challenge_limit: int = Field(
        default=5,
        ge=1,
        description="challenge re-issues (OTP emails, passkey challenges) per credential per window",
    )
    wallet_challenge_account_limit: int = Field(
        default=15, ge=1, description="challenge re-issues per wallet per window"
    )
    wallet_limit_window_seconds: int = Field(default=60, ge=1, description="the window of those limits")

    # Bulk customer import
    bulk_import_max_bytes: int = Field(
        default=52_428_800,
        ge=1,
        description="largest CSV file POST /customers/bulk/csv accepts (bytes); a larger one is refused with 400",
    )
    bulk_import_chunk_rows: int = Field(
        default=1000,
        ge=1,
        le=5000,
        description="CSV rows an import job validates and creates per transaction",
    )

    @field_validator("database_url")
    @classmethod
    def _database_url_names_a_supported_driver(cls, value: str) -> str:
        try:
            driver = make_url(value).drivername
        except ArgumentError:
            raise ValueError(
                "not a database URL: sqlite+aiosqlite:///path/to/platpay.db or postgresql+asyncpg://user@host/db"
            ) from None
        if driver not in SUPPORTED_DRIVERS:
            backend = driver.split("+")[0]
            hint = SUPPORTED_DRIVERS.get(next((d for d in SUPPORTED_DRIVERS if d.startswith(backend)), ""))
            raise ValueError(
                f"the driver {driver!r} is not supported: "
                + (
                    f"use {hint}"
                    if hint
                    else "platpay runs on SQLite (sqlite+aiosqlite) or PostgreSQL (postgresql+asyncpg)"
                )
            )
        return value

    @field_validator("database_read_url")
    @classmethod
    def _database_read_url_is_postgresql(cls, value: str | None) -> str | None:
        if not value:
            return None
        try:
            driver = make_url(value).drivername
        except ArgumentError:
            raise ValueError("not a database URL: postgresql+asyncpg://user@standby-host/db") from None
        if driver != "postgresql+asyncpg":
            raise ValueError(
                f"a read replica is a PostgreSQL standby (postgresql+asyncpg://...), not {driver!r}"
            )
        return value

    @model_validator(mode="after")
    def _read_replica_of_postgresql(self) -> Self:
        if self.database_read_url and self.is_sqlite:
            raise ValueError("PLATPAY_DATABASE_READ_URL needs a PostgreSQL PLATPAY_DATABASE_URL")
        return self

    @field_validator("master_key")
    @classmethod
    def _master_key_is_32_bytes(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            decode_master_key(value)
        except ValueError as error:
            # Set but empty is a mistake (an unset variable interpolated), not "generate one under var/".
            raise ValueError(f"PLATPAY_MASTER_KEY {error}") from None
        return value.strip()

    @model_validator(mode="after")
    def _master_key_from_its_file(self) -> Self:
        if self.master_key_file is None:
            return self
        if self.master_key is not None:
            raise ValueError("set PLATPAY_MASTER_KEY or PLATPAY_MASTER_KEY_FILE, not both")
        path = self.master_key_file
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or type(error).__name__
            raise ValueError(f"PLATPAY_MASTER_KEY_FILE: cannot read {path}: {reason}") from None
        try:
            decode_master_key(text)
        except ValueError as error:
            raise ValueError(f"PLATPAY_MASTER_KEY_FILE: the key in {path} {error}") from None
        self.master_key = text.strip()
        return self

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    def base_url(self) -> str:
        return self.public_base_url or f"http://{self.host}:{self.port}"


@lru_cache
def get_settings() -> Settings:
    return Settings()
