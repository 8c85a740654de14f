"""How platpay opens a PostgreSQL connection: the same hosts, options and bounds on every path.

Three paths open connections: SQLAlchemy's engine (ORM sessions), and the two lean pools of
`platpay.db.database.Database` (lean reads, lean transactions). All three take their connection arguments
from SQLAlchemy's own reading of the URL (`dialect.create_connect_args`), so a multi-host URL
(`postgresql+asyncpg://user@/db?host=h1:5432&host=h2:5433&target_session_attrs=read-write`) means the same
everywhere: asyncpg tries the hosts in order and keeps the first that matches `target_session_attrs`. After a
failover, a new connection finds the promoted standby by itself.

No wait without a bound (`ConnectionPolicy`):

- connecting and waiting for a pooled connection: `timeout` (PLATPAY_DB_TIMEOUT_SECONDS);
- a statement: the server's `statement_timeout`, and on the client asyncpg's `command_timeout` a little
  longer, which also ends a wait for an answer that will never come (a half-open connection whose packets
  are dropped): the connection is then discarded (`faults.connection_lost` counts a TimeoutError) and the
  request answers 503;
- a transaction left idle by a client that vanished: the server's `idle_in_transaction_session_timeout`
  ends its session and releases its locks;
- TCP keepalives on both ends, and `TCP_USER_TIMEOUT` on ours: a peer that stopped answering is found dead
  after `keepalive_idle + keepalive_interval × keepalive_count` seconds, whether the connection was idle or
  had data in flight.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import URL, Dialect

STATEMENT_TIMEOUT_MARGIN_SECONDS = 2.0  # the client waits this much longer than the server's own limit


@dataclass(frozen=True)
class ConnectionPolicy:
    """Bounds on every wait on a PostgreSQL connection; None leaves one to the server's defaults."""

    timeout: float = 5.0
    statement_timeout: float | None = None
    idle_in_transaction_timeout: float | None = None
    keepalive_idle: int = 10
    keepalive_interval: int = 3
    keepalive_count: int = 3
    # How much longer than the server's statement_timeout the client waits for an answer: the server's own
    # limit (a clean error, the connection kept) should come first; past it the connection is presumed dead.
    client_grace: float = STATEMENT_TIMEOUT_MARGIN_SECONDS

    @classmethod
    def from_settings(cls, settings: Any) -> ConnectionPolicy:
        return cls(
            timeout=settings.db_timeout_seconds,
            statement_timeout=settings.db_statement_timeout_seconds or None,
            idle_in_transaction_timeout=settings.db_idle_in_transaction_timeout_seconds or None,
            keepalive_idle=settings.db_keepalive_idle_seconds,
            keepalive_interval=settings.db_keepalive_interval_seconds,
            keepalive_count=settings.db_keepalive_count,
        )

    @property
    def dead_after_seconds(self) -> int:
        """How long a peer may stay silent before the kernel gives the connection up."""
        return self.keepalive_idle + self.keepalive_interval * self.keepalive_count

    def server_settings(self) -> dict[str, str]:
        """Session settings sent at connect (the server enforces them)."""
        found = {
            "tcp_keepalives_idle": str(self.keepalive_idle),
            "tcp_keepalives_interval": str(self.keepalive_interval),
            "tcp_keepalives_count": str(self.keepalive_count),
        }
        if self.statement_timeout is not None:
            found["statement_timeout"] = str(int(self.statement_timeout * 1000))
        if self.idle_in_transaction_timeout is not None:
            found["idle_in_transaction_session_timeout"] = str(int(self.idle_in_transaction_timeout * 1000))
        return found

    def command_timeout(self) -> float | None:
        if self.statement_timeout is None:
            return None
        return self.statement_timeout + self.client_grace

    def asyncpg_arguments(self) -> dict[str, Any]:
        """What asyncpg.connect takes besides the URL's own arguments (SQLAlchemy's connect_args)."""
        arguments: dict[str, Any] = {"timeout": self.timeout, "server_settings": self.server_settings()}
        command_timeout = self.command_timeout()
        if command_timeout is not None:
            arguments["command_timeout"] = command_timeout
        return arguments


def connect_arguments(dialect: Dialect, url: URL, policy: ConnectionPolicy) -> dict[str, Any]:
    """asyncpg.connect's keyword arguments for `url`, read as SQLAlchemy reads it (hosts, ports,
    target_session_attrs, ssl…), with the policy's bounds; server settings in the URL win over ours."""
    _args, from_url = dialect.create_connect_args(url)
    arguments = {**from_url, **policy.asyncpg_arguments()}
    if "server_settings" in from_url:
        arguments["server_settings"] = {**policy.server_settings(), **from_url["server_settings"]}
    return arguments


def tune_socket(driver_connection: Any, policy: ConnectionPolicy) -> None:
    """Keepalives and a user timeout on an asyncpg connection's socket (a Unix socket needs neither)."""
    transport = getattr(driver_connection, "_transport", None)
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (
        ("TCP_KEEPIDLE", policy.keepalive_idle),
        ("TCP_KEEPINTVL", policy.keepalive_interval),
        ("TCP_KEEPCNT", policy.keepalive_count),
        ("TCP_USER_TIMEOUT", policy.dead_after_seconds * 1000),
    ):
        option = getattr(socket, name, None)
        if option is not None:  # Linux has them all; other systems some
            sock.setsockopt(socket.IPPROTO_TCP, option, value)
