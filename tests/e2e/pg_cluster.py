"""A private PostgreSQL cluster for tests that stop and start the database itself (a restart is what they
test, so they cannot use the shared server): made with `initdb`, run with `pg_ctl` as the `postgres` user
when the tests run as root (PostgreSQL refuses to run as root), in a directory of its own, on a free port.

Host connections need the password (scram-sha-256), so that a wrong one is refused as in production.

`PrivateCluster.standby_of(primary)` makes a streaming standby of a running cluster (`pg_basebackup -R`:
a copy of its data directory that starts in recovery, following the primary's WAL), on its own port and
directory; `promote()` makes it a primary (a failover), `stop(mode="immediate")` is a crash.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.pg import PgProbe
from tests.support.processes import free_port

USER = "postgres"
PASSWORD = "startup-test-password"


def find_binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


class PrivateCluster:
    def __init__(self, *, standby_of: PrivateCluster | None = None) -> None:
        initdb, pg_ctl = find_binary("initdb"), find_binary("pg_ctl")
        if initdb is None or pg_ctl is None:
            raise FileNotFoundError("initdb and pg_ctl are needed for a private PostgreSQL cluster")
        self.pg_ctl = pg_ctl
        # Outside the test's tmp_path: the postgres user must reach it, and tmp_path's parents are private.
        self.root = Path(tempfile.mkdtemp(prefix="platpay-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = free_port()
        self.as_postgres = os.geteuid() == 0
        if self.as_postgres:
            account = pwd.getpwnam(USER)
            os.chown(self.root, account.pw_uid, account.pw_gid)
        password_file = self.root / "password"
        password_file.write_text(PASSWORD + "\n")
        if self.as_postgres:
            os.chown(password_file, account.pw_uid, account.pw_gid)
        if standby_of is not None:
            self._base_backup(standby_of)
            return
        self._run(
            initdb,
            "-D",
            str(self.data),
            "-U",
            USER,
            f"--pwfile={password_file}",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "-E",
            "UTF8",
            "--no-sync",
            "--no-instructions",
        )

    @classmethod
    def standby_of(cls, primary: PrivateCluster) -> PrivateCluster:
        """A streaming standby of the running `primary`, not started yet (`start()` it)."""
        return cls(standby_of=primary)

    def _base_backup(self, primary: PrivateCluster) -> None:
        pg_basebackup = find_binary("pg_basebackup")
        if pg_basebackup is None:
            raise FileNotFoundError("pg_basebackup is needed for a standby")
        # -R writes standby.signal and primary_conninfo (with the password: the connection string has it).
        source = f"host=127.0.0.1 port={primary.port} user={USER} password={PASSWORD}"
        self._run(
            pg_basebackup,
            "-D",
            str(self.data),
            "-d",
            source,
            "-R",
            "-X",
            "stream",
            "--checkpoint=fast",
            "--no-sync",
        )

    def promote(self) -> None:
        """End recovery: the standby becomes a primary on a new timeline (waits until it accepts writes)."""
        self._run(self.pg_ctl, "-D", str(self.data), "-w", "promote")

    def _run(self, *args: str) -> None:
        command = ["runuser", "-u", USER, "--", *args] if self.as_postgres else list(args)
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if result.returncode != 0:
            raise RuntimeError(
                f"{' '.join(args)} failed: {result.stdout}\n{result.stderr}\n{self.server_log()}"
            )

    def server_log(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""

    def in_recovery(self) -> bool:
        probe = PgProbe(self.dsn())
        try:
            return bool(probe.fetchval("SELECT pg_is_in_recovery()"))
        finally:
            probe.close()

    def url(self, database: str, *, password: str = PASSWORD) -> str:
        return f"postgresql+asyncpg://{USER}:{password}@127.0.0.1:{self.port}/{database}"

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{self.port}/{database}"

    def start(self, **settings: str) -> None:
        """Start the server; `settings` are server settings for this run only (`-c name=value` on its command
        line: they win over postgresql.conf and ALTER SYSTEM; the value is passed through a shell, so quote
        it as PostgreSQL's own configuration does: `synchronous_standby_names="''"`)."""
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        options += "".join(f" -c {name}={value}" for name, value in settings.items())
        self._run(self.pg_ctl, "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        """`mode` "immediate" is a crash: no shutdown checkpoint, clients' connections cut."""
        self._run(self.pg_ctl, "-D", str(self.data), "-m", mode, "-w", "stop")

    def crash(self) -> None:
        """`-m immediate`: every server process quits at once, no checkpoint, every connection cut (as in a
        crash); `start` then recovers from the WAL."""
        self._run(self.pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def create_database(self, name: str) -> None:
        probe = PgProbe(self.dsn())
        try:
            probe.execute(f'CREATE DATABASE "{name}"')
        finally:
            probe.close()

    def destroy(self) -> None:
        with contextlib.suppress(Exception):
            if self.running():
                self._run(self.pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


def new_cluster() -> PrivateCluster:
    """A new private cluster (not started), or the test skipped when PostgreSQL's programs are missing
    (failed instead where PostgreSQL is required: PLATPAY_TEST_REQUIRE_POSTGRES, as in CI)."""
    try:
        return PrivateCluster()
    except FileNotFoundError as missing:
        if os.environ.get("PLATPAY_TEST_REQUIRE_POSTGRES"):
            pytest.fail(str(missing))
        pytest.skip(str(missing))


@contextlib.contextmanager
def running_cluster() -> Iterator[PrivateCluster]:
    """A new private cluster, started, destroyed at the end."""
    private = new_cluster()
    try:
        private.start()
        yield private
    finally:
        private.destroy()
